/* cmd_cat.c - raidimg cat: stream the assembled array out.
 *
 * Worker threads assemble consecutive segments of the array in parallel
 * (pipeline.c: each a whole number of stripes, so every member sees large
 * reads) and the main thread writes them out in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "custody.h"
#include "outfile.h"
#include "overlay.h"
#include "splice_cat.h"
#include "pipeline.h"
#include "sysio.h"
#include "util.h"

/* What the in-order consumer needs. */
struct cat_out {
	int fd;
	const char *name;           /* for messages */
	struct custody_run *cr;
	uint64_t written;
	bool write_failed;          /* the output, not the array, failed */
};

/* pipeline consume(): write one segment.  On a read error, the bytes
 * before the first unreadable offset are right (array_read serves them):
 * write them out, then stop. */
static int cat_consume(void *ctx, int slot, const uint8_t *buf, size_t len, uint64_t off, int ret,
		       uint64_t bad_off)
{
	struct cat_out *o = ctx;
	size_t n = len;
	int wr;

	if (ret)
		n = ret == -EIO && bad_off > off && bad_off - off <= len ? (size_t)(bad_off - off) : 0;
	wr = write_all(o->fd, buf, n);
	if (wr) {
		msg("%s: write failed: %s", o->name, strerror(-wr));
		o->write_failed = true;
		return -EIO;
	}
	o->written += n;
	if (custody_segment(o->cr, slot, buf, n, ret))
		return -EIO;
	if (ret)
		pipeline_read_error(ret, off, bad_off);
	return ret ? -EIO : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg cat [OPTIONS] [ARRAY OPTIONS] MEMBER...\n\n"
		   "Write the assembled array's bytes to standard output or a file.  Missing or\n"
		   "unreadable members are rebuilt from parity; if that is impossible the command\n"
		   "stops with the array offset that could not be read.\n\n"
		   "  -o, --output FILE   write to FILE (created or truncated) instead of stdout\n"
		   "                      (standard output must not be a terminal)\n"
		   "  --offset SIZE       start at this array byte offset (default 0)\n"
		   "  --length SIZE       copy this many bytes (default: to the end)\n"
		   "  --threads N         threads reading (or rebuilding) ahead (default 2; 1 into\n"
		   "                      a pipe when raidimg may use only 1 or 2 CPUs)\n"
		   "  --no-zero-copy      always copy through the pipeline.  By default, when the\n"
		   "                      members are plain files and no --hash, --record,\n"
		   "                      --provenance or --overlay needs the bytes, chunks the\n"
		   "                      members hold as they are go to the output with splice(2)\n"
		   "                      (no copy) and only rebuilt pieces pass through raidimg\n"
		   "  --stats             print read statistics as JSON on stderr at the end\n"
		   "  --overlay FILE      read the array with this copy-on-write overlay applied\n"
		   "                      (the writes made through mount --overlay FILE)\n"
		   "  -h, --help          this text\n\n" CUSTODY_OPTIONS_HELP CUSTODY_PROVENANCE_HELP
		   "\n" ARRAY_OPTIONS_HELP
		   "\nExit status: 0 all bytes written, 2 error.\n");
}

/* zc: what the zero-copy path did, NULL when the pipeline ran */
static void print_stats(const struct array *a, double secs, int nthreads, const struct splice_cat_stats *zc)
{
	uint64_t req = atomic_load(&a->io.requests), rb = atomic_load(&a->io.bytes);

	fprintf(stderr, "{\"bytes_served\":%" PRIu64 ",\"seconds\":%.6f,\"method\":\"%s\",\"threads\":%d"
		",\"member_requests\":%" PRIu64
		",\"member_request_bytes\":%" PRIu64 ",\"avg_member_request_bytes\":%.0f"
		",\"stripes_rebuilt\":%" PRIu64 ",\"read_errors_recovered\":%" PRIu64,
		atomic_load(&a->bytes_served), secs, zc ? "zero-copy" : "pipeline", nthreads, req, rb,
		req ? (double)rb / (double)req : 0.0,
		atomic_load(&a->stripes_rebuilt), atomic_load(&a->read_errors_recovered));
	if (zc)
		fprintf(stderr, ",\"zero_copy\":{\"splices\":%" PRIu64 ",\"spliced_bytes\":%" PRIu64
			",\"copied_bytes\":%" PRIu64 ",\"prefetches\":%" PRIu64 "}",
			zc->splices, zc->spliced_bytes, zc->copied_bytes, zc->prefetches);
	fputs("}\n", stderr);
}

/* --threads' default for output to fd: two threads reading ahead, but one
 * when fd is a pipe and raidimg may run on two CPUs or fewer - whoever reads
 * the pipe needs a CPU too, and a second reader only takes turns with it.
 * Measured (scripts/bench_all's arrays, 4 GiB, 2 CPUs, best of 6): RAID6
 * 6x64K without two members into `| cat`: 0.91 s with one reader, 1.04
 * with two; --no-zero-copy 1.05 against 1.56; into /dev/null two stay
 * faster (0.44 against 0.61 s). */
static long long default_threads(int fd)
{
	return cpus_usable() <= 2 && fd_is_pipe(fd) ? 1 : 2;
}

/* What the command line says. */
struct cat_args {
	struct array_args aa;
	struct custody_opts co;
	const char *outpath;         /* -o, NULL: standard output */
	const char *overlay;         /* --overlay FILE */
	uint64_t offset, length;
	long long nthreads;          /* 0: default_threads() */
	bool stats, zero_copy;
	int nimages;
	char **images;               /* argv's */
};

/* Parse the options.  0 to go on, 1 when done (--help), -1 on a bad one
 * (said). */
static int parse_args(int argc, char **argv, struct cat_args *ca)
{
	enum { OPT_OFFSET = 0x2001, OPT_LENGTH, OPT_THREADS, OPT_STATS, OPT_OVERLAY, OPT_NO_ZERO_COPY };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "length", required_argument, NULL, OPT_LENGTH },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "overlay", required_argument, NULL, OPT_OVERLAY },
		{ "no-zero-copy", no_argument, NULL, OPT_NO_ZERO_COPY },
		{ "help", no_argument, NULL, 'h' },
		ARRAY_LONG_OPTIONS,
		CUSTODY_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int opt, r;

	while ((opt = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
		r = array_args_opt(&ca->aa, opt, optarg);
		if (r < 0)
			return -1;
		if (r || custody_opt(&ca->co, opt, optarg))
			continue;
		switch (opt) {
		case 'o': ca->outpath = optarg; break;
		case OPT_OFFSET:
			if (parse_size(optarg, &ca->offset)) {
				msg("--offset %s: not a size", optarg);
				return -1;
			}
			break;
		case OPT_LENGTH:
			if (parse_size(optarg, &ca->length)) {
				msg("--length %s: not a size", optarg);
				return -1;
			}
			break;
		case OPT_THREADS:
			if (parse_int(optarg, 1, 64, &ca->nthreads)) {
				msg("--threads %s: give a number from 1 to 64", optarg);
				return -1;
			}
			break;
		case OPT_STATS: ca->stats = true; break;
		case OPT_OVERLAY: ca->overlay = optarg; break;
		case OPT_NO_ZERO_COPY: ca->zero_copy = false; break;
		case 'h': usage(stdout); return 1;
		default: return -1;
		}
	}
	if (optind >= argc)
		return cli_usage_error("give the member images");
	if (ca->overlay && (ca->co.hash || ca->co.record || ca->co.provenance)) {
		msg("--overlay: with it the bytes are no longer the array's; --hash, --record and "
		    "--provenance describe the evidence alone");
		return -1;
	}
	if (!ca->outpath && isatty(STDOUT_FILENO)) {
		/* as zstd does: binary bytes would garble the terminal */
		msg("standard output is a terminal: refusing to write the array's bytes there (give -o FILE, "
		    "or a pipe: raidimg cat ... | ...)");
		return -1;
	}
	ca->images = argv + optind;
	ca->nimages = argc - optind;
	return 0;
}

/* Assemble and copy the range out.  An exit status. */
static int run_cat(struct cat_args *ca, int argc, char **argv)
{
	struct array *a = NULL;
	struct custody_run cr = { 0 };
	struct cat_out o = { .fd = -1 };
	struct pipeline pl = { 0 };
	struct overlay *ov = NULL;
	struct outfile out = { .fd = -1 };
	char err[ERR_MAX];
	uint64_t offset = ca->offset, length = ca->length;
	bool used_zc = false;
	struct splice_cat_stats zcs;
	int ret = EXIT_ERR, fd = -1;
	uint64_t t0;

	if (custody_begin(&cr, &ca->co, "cat", argc, argv))
		goto out;
	if (array_args_open(&ca->aa, ca->nimages, ca->images, &a))
		goto out;
	if (ca->overlay && array_overlay_open(ca->overlay, a, NULL, &ov, NULL, err, sizeof(err))) {
		msg("%s", err);
		goto out;
	}
	if (offset > a->array_bytes) {
		msg("--offset %" PRIu64 " is past the end of the array (%" PRIu64 " bytes)", offset, a->array_bytes);
		goto out;
	}
	if (length > a->array_bytes - offset)
		length = a->array_bytes - offset;
	if (ca->outpath) {
		/* never evidence (outfile.h); what could be read is kept even when
		 * the array ends in an unreadable range, as on stdout */
		struct outfile_opts oo = { .replace = true };

		if (outfile_open(&out, ca->outpath, &oo, err, sizeof(err))) {
			msg("%s", err);
			goto out;
		}
		fd = out.fd;
	} else {
		fd = STDOUT_FILENO;
		pipe_grow(fd, 1u << 20);
	}
	if (!ca->nthreads)
		ca->nthreads = default_threads(fd);
	if (custody_array(&cr, a, &ca->aa.ao, ca->aa.ao.g.paths, ca->aa.ao.g.npaths,
			  pipeline_nslots((int)ca->nthreads)))
		goto out;
	o.fd = fd;
	o.name = ca->outpath ? ca->outpath : "standard output";
	o.cr = &cr;
	pl.vol = ov ? overlay_volume(ov) : array_volume(a);
	pl.start = offset;
	pl.length = length;
	pl.nthreads = (int)ca->nthreads;
	pl.consume = cat_consume;
	pl.ctx = &o;
	pl.stream_of = a;       /* leave the members' page cache as found */
	custody_pipeline(&cr, &pl);
	t0 = now_ns();
	ret = -1;
	if (ca->zero_copy && !ov && !ca->co.hash && !ca->co.record && !ca->co.provenance) {
		/* zero-copy where the members are plain files (splice_cat.h) */
		uint64_t bad = 0;
		int sr = splice_cat(a, fd, offset, length, (int)ca->nthreads, &o.written, &bad, &zcs);

		used_zc = sr != -EOPNOTSUPP;
		if (sr == -EIO) {
			pipeline_read_error(sr, offset, bad);
		} else if (sr && sr != -EOPNOTSUPP && sr != -ECANCELED) {
			msg("%s: write failed: %s", o.name, strerror(-sr));
			o.write_failed = true;
		}
		if (sr != -EOPNOTSUPP)
			ret = sr ? EXIT_ERR : EXIT_OK;
	}
	if (ret < 0)
		ret = pipeline_run(&pl) ? EXIT_ERR : EXIT_OK;
	if (ca->outpath) {
		fd = -1;
		if (o.write_failed) {
			outfile_abort(&out);
		} else if (outfile_commit(&out, err, sizeof(err))) {
			msg("%s", err);
			ret = EXIT_ERR;
		}
	}
	if (ca->stats)
		print_stats(a, (double)(now_ns() - t0) / 1e9, (int)ca->nthreads, used_zc ? &zcs : NULL);
	if (ret == EXIT_OK && atomic_load(&a->stripes_rebuilt))
		fprintf(stderr, "%s: %" PRIu64 " stripes were rebuilt from parity\n", prog_name,
			atomic_load(&a->stripes_rebuilt));
	if (atomic_load(&a->read_errors_recovered))
		fprintf(stderr, "%s: %" PRIu64 " member read errors were recovered from parity\n", prog_name,
			atomic_load(&a->read_errors_recovered));
	if (cr.rec)
		record_add_output(cr.rec, ca->outpath, "raw", NULL);
	/* the hashes go where the data does not */
	ret = custody_end(&cr, ca->outpath ? stdout : stderr, offset, length, ret == EXIT_OK && o.written == length,
			  ret);
out:
	outfile_abort(&out);
	custody_free(&cr);
	overlay_close(ov);
	array_free(a);
	return ret;
}

int cmd_cat(int argc, char **argv)
{
	struct cat_args ca = { .length = UINT64_MAX, .zero_copy = true };
	int ret, r;

	array_args_init(&ca.aa);
	r = parse_args(argc, argv, &ca);
	ret = r ? (r > 0 ? EXIT_OK : EXIT_ERR) : run_cat(&ca, argc, argv);
	array_args_free(&ca.aa);
	return ret;
}
