/* cmd_export.c - raidimg export: write the assembled array to a file, raw
 * (all-zero blocks left as holes) or as a zstd seekable image.
 *
 * The array is read by the parallel segment pipeline (pipeline.c), as cat
 * does; the in-order consumer feeds the sink (sink.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "cli.h"
#include "custody.h"
#include "overlay.h"
#include "pipeline.h"
#include "progress.h"
#include "sink.h"
#include "util.h"

struct export_opts {
	const char *out;
	bool zstd, overwrite, progress;
	struct zseek_wopts z;
	uint64_t offset, length;
	int nthreads;
	struct custody_opts co;
	const char *overlay;        /* --overlay FILE or NULL */
};

struct export_out {
	struct sink *sink;
	struct custody_run *cr;
	struct progress pg;
	uint64_t start, written;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg export [OPTIONS] [ARRAY OPTIONS] MEMBER... -o OUT\n\n"
		   "Write the assembled array to OUT: a raw image whose all-zero 4 KiB blocks are\n"
		   "left as holes (a sparse file), or with --zstd a zstd seekable image, which\n"
		   "`zstd -d` decompresses to the raw image and which raidimg reads wherever it\n"
		   "reads an image.  OUT is named only when complete; an\n"
		   "export that fails leaves nothing behind.  Members are only read.\n\n"
		   "  -o, --output OUT     the image to write (a device or FIFO is written in place,\n"
		   "                       every byte); an existing file is kept unless --overwrite\n"
		   "  --zstd               write the zstd seekable format\n"
		   "  --zstd-level N       zstd level (default 3)\n"
		   "  --frame-size SIZE    decompressed bytes per zstd frame (default 1M)\n"
		   "  --offset SIZE        start at this array byte offset (default 0)\n"
		   "  --length SIZE        export this many bytes (default: to the end)\n"
		   "  --threads N          reader threads, and compressor threads with --zstd\n"
		   "                       (default 2)\n"
		   "  --overwrite          replace OUT if it exists\n"
		   "  --overlay FILE       export the array with this copy-on-write overlay applied\n"
		   "                       (the writes made through mount --overlay FILE)\n"
		   "  --progress, --no-progress  progress bar on stderr, in bytes of the array\n"
		   "                       (default: if stderr is a terminal)\n"
		   "  -h, --help           this text\n\n" CUSTODY_OPTIONS_HELP CUSTODY_PROVENANCE_HELP
		   "\n" ARRAY_OPTIONS_HELP
		   "\nA summary (bytes, format, time, speed) goes to standard output (to standard\n"
		   "error with -o -, where the image goes to standard output).\n"
		   "Exit status: 0 written, 2 error (nothing written).\n");
}

static int export_consume(void *ctx, int slot, const uint8_t *buf, size_t len, uint64_t off, int ret,
			  uint64_t bad_off)
{
	struct export_out *o = ctx;

	if (ret) {
		size_t n = ret == -EIO && bad_off > off && bad_off - off <= len ? (size_t)(bad_off - off) : 0;

		custody_segment(o->cr, slot, buf, n, ret);
		pipeline_read_error(ret, off, bad_off);
		return -EIO;
	}
	if (sink_write(o->sink, buf, len))
		return -EIO;
	o->written += len;
	progress_update(&o->pg, o->written);
	return custody_segment(o->cr, slot, buf, len, 0) ? -EIO : 0;
}

static int parse_args(int argc, char **argv, struct export_opts *o, struct array_args *aa)
{
	enum { OPT_ZSTD = 0x2001, OPT_LEVEL, OPT_FRAME, OPT_OFFSET, OPT_LENGTH, OPT_THREADS, OPT_OVERWRITE,
	       OPT_OVERLAY, OPT_PROG, OPT_NOPROG };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "zstd", no_argument, NULL, OPT_ZSTD },
		{ "zstd-level", required_argument, NULL, OPT_LEVEL },
		{ "frame-size", required_argument, NULL, OPT_FRAME },
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "length", required_argument, NULL, OPT_LENGTH },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
		{ "overlay", required_argument, NULL, OPT_OVERLAY },
		{ "progress", no_argument, NULL, OPT_PROG },
		{ "no-progress", no_argument, NULL, OPT_NOPROG },
		{ "help", no_argument, NULL, 'h' },
		ARRAY_LONG_OPTIONS,
		CUSTODY_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	long long v;
	uint64_t sz;
	int opt, r;

	/* (--level is the RAID level of a manual geometry: the zstd level is
	 * --zstd-level) */
	while ((opt = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
		if (opt == OPT_LEVEL) {
			if (parse_int(optarg, -7, ZSTD_maxCLevel(), &v) || !v) {
				msg("--zstd-level %s: give a zstd level from -7 to %d (not 0)", optarg, ZSTD_maxCLevel());
				return -1;
			}
			o->z.level = (int)v;
			continue;
		}
		r = array_args_opt(aa, opt, optarg);
		if (r < 0)
			return -1;
		if (r || custody_opt(&o->co, opt, optarg))
			continue;
		switch (opt) {
		case 'o': o->out = optarg; break;
		case OPT_ZSTD: o->zstd = true; break;
		case OPT_FRAME:
			if (parse_size(optarg, &sz) || sz < 4096 || sz > ZSEEK_MAX_FRAME_BYTES) {
				msg("--frame-size %s: give a size from 4K to 1G", optarg);
				return -1;
			}
			o->z.frame_bytes = (uint32_t)sz;
			break;
		case OPT_OFFSET:
			if (parse_size(optarg, &o->offset)) {
				msg("--offset %s: not a size", optarg);
				return -1;
			}
			break;
		case OPT_LENGTH:
			if (parse_size(optarg, &o->length)) {
				msg("--length %s: not a size", optarg);
				return -1;
			}
			break;
		case OPT_THREADS:
			if (parse_int(optarg, 1, 64, &v)) {
				msg("--threads %s: give a number from 1 to 64", optarg);
				return -1;
			}
			o->nthreads = (int)v;
			break;
		case OPT_OVERWRITE: o->overwrite = true; break;
		case OPT_OVERLAY: o->overlay = optarg; break;
		case OPT_PROG: o->progress = true; break;
		case OPT_NOPROG: o->progress = false; break;
		case 'h': usage(stdout); return 1;
		default: return -1;
		}
	}
	if (optind >= argc)
		return cli_usage_error("give the member images");
	if (!o->out)
		return cli_usage_error("give the output with -o OUT");
	if (!strcmp(o->out, "-") && isatty(STDOUT_FILENO)) {
		msg("standard output is a terminal: refusing to write the array's bytes there (give -o FILE, "
		    "or a pipe)");
		return -1;
	}
	if (o->overlay && (o->co.hash || o->co.record || o->co.provenance)) {
		msg("--overlay: with it the bytes are no longer the array's; --hash, --record and "
		    "--provenance describe the evidence alone");
		return -1;
	}
	return 0;
}

/* --overlay FILE: open it over a (it must be a's), never as the output. */
static int open_overlay(const struct export_opts *o, struct array *a, struct overlay **ov)
{
	char err[ERR_MAX];
	struct stat so, si;

	if (!stat(o->out, &so) && !stat(o->overlay, &si) && so.st_dev == si.st_dev && so.st_ino == si.st_ino) {
		msg("%s: the output is the overlay being read", o->out);
		return -1;
	}
	if (array_overlay_open(o->overlay, a, NULL, ov, NULL, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	return 0;
}

/* What was written, where, how fast: on f (stdout, or stderr with -o -). */
static void print_summary(FILE *f, const struct export_opts *o, const struct export_out *eo, const char *format)
{
	double secs = (double)(now_ns() - eo->pg.t0) / 1e9;
	char sz[32], sp[40];

	fprintf(f, "export: %" PRIu64 " bytes of the array (%s) from offset %" PRIu64 " to %s (%s) in %.2f s: %s\n",
		eo->written, fmt_size(eo->written, sz, sizeof(sz)), o->offset,
		strcmp(o->out, "-") ? o->out : "standard output", format, secs,
		fmt_speed(secs > 0 ? (double)eo->written / secs : 0, sp, sizeof(sp)));
	fflush(f);
}

/* Open the sink for the range (export's and replay's way). */
static int open_sink(const struct export_opts *o, const struct array_args *aa, struct sink **out)
{
	struct sink_opts so = {
		.path = strcmp(o->out, "-") ? o->out : NULL,
		.kind = o->zstd ? SINK_ZSTD : SINK_SPARSE,
		.overwrite = o->overwrite,
		.z = o->z,
	};

	so.z.nthreads = o->nthreads;
	return sink_open(out, &so);
}

/* With --hash: the output's own sha256 (for --zstd it differs from the
 * array's).  0 or -1. */
static int hash_output(const struct export_opts *o, struct custody_run *cr, FILE *f, char hex[SHA256_HEX])
{
	char err[ERR_MAX];

	hex[0] = '\0';
	if (!o->zstd || !cr->o.hash || !strcmp(o->out, "-"))
		return 0;
	if (custody_hash_file(o->out, hex, NULL, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	fprintf(f, "sha256 %s  output  %s\n", hex, o->out);
	return 0;
}

int cmd_export(int argc, char **argv)
{
	struct export_opts o = { .nthreads = 2, .z = { .level = 3, .frame_bytes = 1u << 20 },
				 .length = UINT64_MAX, .progress = isatty(STDERR_FILENO) };
	struct custody_run cr = { 0 };
	struct export_out eo = { 0 };
	struct pipeline pl = { 0 };
	struct array_args aa;
	struct array *a = NULL;
	struct overlay *ov = NULL;
	char out_hex[SHA256_HEX] = "";
	FILE *hf;
	int ret = EXIT_ERR, r;

	array_args_init(&aa);
	r = parse_args(argc, argv, &o, &aa);
	if (r) {
		ret = r > 0 ? EXIT_OK : EXIT_ERR;
		goto out;
	}
	hf = strcmp(o.out, "-") ? stdout : stderr;
	if (custody_begin(&cr, &o.co, "export", argc, argv))
		goto out;
	if (array_args_open(&aa, argc - optind, argv + optind, &a))
		goto out;
	if (o.offset > a->array_bytes) {
		msg("--offset %" PRIu64 " is past the end of the array (%" PRIu64 " bytes)", o.offset, a->array_bytes);
		goto out;
	}
	if (o.length > a->array_bytes - o.offset)
		o.length = a->array_bytes - o.offset;
	if (o.overlay && open_overlay(&o, a, &ov))
		goto out;
	if (open_sink(&o, &aa, &eo.sink))
		goto out;
	if (custody_array(&cr, a, &aa.ao, aa.ao.g.paths, aa.ao.g.npaths, pipeline_nslots(o.nthreads)))
		goto out;
	eo.cr = &cr;
	pl.vol = array_volume(a);
	pl.start = o.offset;
	pl.length = o.length;
	pl.nthreads = o.nthreads;
	pl.consume = export_consume;
	pl.ctx = &eo;
	pl.stream_of = a;       /* leave the members' page cache as found */
	custody_pipeline(&cr, &pl);
	if (ov)
		pl.vol = overlay_volume(ov);
	progress_start(&eo.pg, "export", o.length, o.progress);
	r = pipeline_run(&pl);
	ret = EXIT_ERR;
	if (!r && !sink_finish(eo.sink))
		ret = EXIT_OK;
	progress_end(&eo.pg, eo.written, ret == EXIT_OK);
	if (ret == EXIT_OK)
		print_summary(hf, &o, &eo, sink_format_name(sink_kind_used(eo.sink)));
	if (ret == EXIT_OK && hash_output(&o, &cr, hf, out_hex))
		ret = EXIT_ERR;
	if (ret == EXIT_OK && atomic_load(&a->stripes_rebuilt))
		fprintf(stderr, "%s: %" PRIu64 " stripes were rebuilt from parity\n", prog_name,
			atomic_load(&a->stripes_rebuilt));
	if (cr.rec) {
		record_add_output(cr.rec, strcmp(o.out, "-") ? o.out : NULL, sink_format_name(sink_kind_used(eo.sink)),
				  o.zstd ? out_hex : NULL);
		if (o.zstd) {
			record_add_int(cr.rec, "zstd_level", o.z.level);
			record_add_int(cr.rec, "frame_bytes", o.z.frame_bytes);
		}
	}
	ret = custody_end(&cr, hf, o.offset, o.length, ret == EXIT_OK, ret);
out:
	sink_free(eo.sink);
	custody_free(&cr);
	overlay_close(ov);
	array_free(a);
	array_args_free(&aa);
	return ret;
}
