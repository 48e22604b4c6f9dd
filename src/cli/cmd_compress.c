/* cmd_compress.c - raidimg compress: write an image in the zstd seekable
 * format, the form in which raidimg reads compressed members.
 *
 * The input is a raw image, a seekable zstd image (re-framed), or a plain
 * zstd file (decompressed as a stream).  The output is an outfile (outfile.h):
 * named OUT only once complete, so an interrupted run leaves no file that
 * looks finished.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "cli.h"
#include "custody.h"
#include "outfile.h"
#include "pagecache.h"
#include "progress.h"
#include "sysio.h"
#include "util.h"
#include "zstd_seekable.h"

#define READ_BYTES (4u << 20)

struct compress_opts {
	const char *in, *out;
	struct zseek_wopts w;
	bool force, hash, progress;
	const char *record;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg compress [OPTIONS] IMAGE\n\n"
		   "Write IMAGE in the zstd seekable format: independent frames and a seek table\n"
		   "(with an XXH64 checksum per frame), so raidimg can read any byte of it without\n"
		   "decompressing the rest.  Use it for member images: raidimg reads IMAGE.zst\n"
		   "wherever it reads IMAGE.  `zstd -d` still decompresses the result.\n"
		   "IMAGE may be a raw image, a plain .zst file (decompressed as a stream) or a\n"
		   "seekable one (re-framed).  IMAGE is only read.\n\n"
		   "  -o, --output OUT     the compressed image (default IMAGE.zst); never overwritten\n"
		   "                       unless --overwrite; named only when complete\n"
		   "  --level N            zstd level, %d..%d (default 3)\n"
		   "  --frame-size SIZE    decompressed bytes per frame, 4K..1G (default 1M): smaller\n"
		   "                       frames make small random reads cheaper, larger ones\n"
		   "                       compress better\n"
		   "  --threads N          frames compressed in parallel (default: the CPUs it may\n"
		   "                       use, at most 8)\n"
		   "  --hash               print the sha256 of IMAGE's (decompressed) bytes and of OUT\n"
		   "  --record FILE        write a JSON record of the run (implies --hash)\n"
		   "  --overwrite          replace OUT if it exists\n"
		   "  --progress, --no-progress  progress bar on stderr, in bytes of IMAGE (default:\n"
		   "                       if stderr is a terminal)\n"
		   "  -h, --help           this text\n\n"
		   "A summary (bytes in and out, ratio, time, speed) goes to standard output.\n"
		   "Exit status: 0 written, 2 error.\n", ZSTD_minCLevel() < -7 ? -7 : ZSTD_minCLevel(),
		ZSTD_maxCLevel());
}

/* Where the uncompressed bytes come from. */
struct input {
	struct source *src;     /* raw or seekable zstd, owned */
	int fd;                 /* plain zstd stream */
	uint64_t size;          /* bytes of the input file (progress) */
	uint64_t data_bytes;    /* uncompressed bytes fed to the writer */
	bool stream;
};

static bool is_zstd_magic(int fd)
{
	uint8_t b[4];

	return pread(fd, b, 4, 0) == 4 &&
	       ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24) ==
		       ZSEEK_FRAME_MAGIC;
}

static int input_open(const char *path, struct input *in)
{
	char err[ERR_MAX] = "";
	struct zseek_table t;
	struct stat st;
	int ret;

	memset(in, 0, sizeof(*in));
	in->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (in->fd < 0 || fstat(in->fd, &st)) {
		msg("%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	fcntl(in->fd, F_SETFL, fcntl(in->fd, F_GETFL) & ~O_NONBLOCK);
	ret = evidence_protect(in->fd, "the input image");   /* never the output */
	if (ret) {
		msg("%s: %s", path, strerror(-ret));
		return -1;
	}
	in->size = (uint64_t)st.st_size;
	if (S_ISREG(st.st_mode) && is_zstd_magic(in->fd)) {
		ret = zseek_table_read(in->fd, in->size, &t, err, sizeof(err));
		zseek_table_free(&t);
		if (ret == -ENOMSG) {
			in->stream = true;
			posix_fadvise(in->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
			return 0;
		}
		if (ret) {
			msg("%s: zstd seekable image: %s", path, err);
			return -1;
		}
		ret = source_open_zstd(path, SOURCE_READ, &in->src, err, sizeof(err));
	} else {
		ret = source_open_raw(path, SOURCE_READ, &in->src, err, sizeof(err));
	}
	if (ret) {
		msg("%s", err);
		return -1;
	}
	in->size = in->src->size;
	return 0;
}

static void input_close(struct input *in)
{
	source_close(in->src);
	if (in->fd >= 0)
		close(in->fd);
}

/* A page-cache trail over the file the input reads as it is (a plain file
 * or a zstd stream; none for a seekable zstd image): what compress brings
 * into the page cache goes behind it (pagecache.h).  *base: the file
 * offset of the input's byte 0.  NULL: none. */
static struct pc_trail *input_trail(struct input *in, uint64_t *base)
{
	struct pc_trail *t = NULL;
	int fd = -1;

	*base = 0;
	if (in->stream)
		fd = in->fd;
	else if (in->src->ops->raw_fd)
		fd = in->src->ops->raw_fd(in->src, base);
	if (fd >= 0 && !pc_trail_open(fd, &t) && !pc_trail_active(t)) {
		pc_trail_close(t);
		t = NULL;
	}
	return t;
}

/* Feed a raw or seekable source to the writer. */
static int copy_source(struct input *in, struct zseek_writer *w, struct sha256 *h, struct progress *pg,
		       uint8_t *buf)
{
	uint64_t base;
	struct pc_trail *t = input_trail(in, &base);
	int ret = 0;

	for (uint64_t off = 0; off < in->size;) {
		size_t n = in->size - off < READ_BYTES ? (size_t)(in->size - off) : READ_BYTES;

		pc_trail_ahead(t, base + off, n, false);
		ret = source_pread(in->src, buf, n, off);
		if (ret) {
			msg("%s: read error at offset %" PRIu64 ": %s", in->src->path, off, strerror(-ret));
			ret = -1;
			break;
		}
		if (h)
			sha256_update(h, buf, n);
		ret = zseek_writer_write(w, buf, n);
		if (ret)
			break;
		off += n;
		in->data_bytes += n;
		progress_update(pg, off);
		pc_trail_behind(t, base + off);
	}
	pc_trail_close(t);
	return ret;
}

/* Decompress a plain zstd stream into the writer. */
static int copy_stream(const char *path, struct input *in, struct zseek_writer *w, struct sha256 *h,
		       struct progress *pg, uint8_t *buf)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	size_t outcap = ZSTD_DStreamOutSize(), last = 0;
	uint8_t *out = malloc(outcap);
	uint64_t consumed = 0, base;
	struct pc_trail *t = input_trail(in, &base);
	int ret = -1;

	if (!d || !out) {
		msg("out of memory");
		goto out;
	}
	for (;;) {
		ssize_t n;

		pc_trail_ahead(t, consumed, READ_BYTES, false);
		n = read(in->fd, buf, READ_BYTES);
		ZSTD_inBuffer ib = { buf, n > 0 ? (size_t)n : 0, 0 };

		if (n < 0) {
			if (errno == EINTR)
				continue;
			msg("%s: read error: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		while (ib.pos < ib.size) {
			ZSTD_outBuffer ob = { out, outcap, 0 };

			last = ZSTD_decompressStream(d, &ob, &ib);
			if (ZSTD_isError(last)) {
				msg("%s: zstd data corrupt near compressed offset %" PRIu64 ": %s", path,
				    consumed + ib.pos, ZSTD_getErrorName(last));
				goto out;
			}
			if (h)
				sha256_update(h, out, ob.pos);
			if (zseek_writer_write(w, out, ob.pos)) {
				ret = -EIO;
				goto out;
			}
			in->data_bytes += ob.pos;
		}
		consumed += (uint64_t)n;
		progress_update(pg, consumed);
		pc_trail_behind(t, consumed);
	}
	if (last != 0) {
		msg("%s: the zstd data ends in the middle of a frame: truncated", path);
		goto out;
	}
	ret = 0;
out:
	pc_trail_close(t);
	free(out);
	ZSTD_freeDCtx(d);
	return ret;
}

static int parse_args(int argc, char **argv, struct compress_opts *o, char **outbuf)
{
	enum { OPT_LEVEL = 0x2001, OPT_FRAME, OPT_THREADS, OPT_FORCE, OPT_HASH, OPT_RECORD, OPT_PROG, OPT_NOPROG };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "level", required_argument, NULL, OPT_LEVEL },
		{ "frame-size", required_argument, NULL, OPT_FRAME },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "overwrite", no_argument, NULL, OPT_FORCE },
		{ "hash", no_argument, NULL, OPT_HASH },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "progress", no_argument, NULL, OPT_PROG },
		{ "no-progress", no_argument, NULL, OPT_NOPROG },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ncpu = cpus_usable();
	long long v;
	uint64_t sz;
	int opt;

	memset(o, 0, sizeof(*o));
	o->w.level = 3;
	o->w.frame_bytes = 1u << 20;
	o->w.nthreads = ncpu > 8 ? 8 : ncpu;
	o->progress = isatty(STDERR_FILENO);
	while ((opt = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
		switch (opt) {
		case 'o': o->out = optarg; break;
		case OPT_LEVEL:
			if (parse_int(optarg, ZSTD_minCLevel() < -7 ? -7 : ZSTD_minCLevel(), ZSTD_maxCLevel(), &v) || !v) {
				msg("--level %s: give a zstd level from %d to %d (not 0)", optarg,
				    ZSTD_minCLevel() < -7 ? -7 : ZSTD_minCLevel(), ZSTD_maxCLevel());
				return -1;
			}
			o->w.level = (int)v;
			break;
		case OPT_FRAME:
			if (parse_size(optarg, &sz) || sz < 4096 || sz > ZSEEK_MAX_FRAME_BYTES) {
				msg("--frame-size %s: give a size from 4K to 1G", optarg);
				return -1;
			}
			o->w.frame_bytes = (uint32_t)sz;
			break;
		case OPT_THREADS:
			if (parse_int(optarg, 1, 64, &v)) {
				msg("--threads %s: give a number from 1 to 64", optarg);
				return -1;
			}
			o->w.nthreads = (int)v;
			break;
		case OPT_FORCE: o->force = true; break;
		case OPT_HASH: o->hash = true; break;
		case OPT_RECORD: o->record = optarg; o->hash = true; break;
		case OPT_PROG: o->progress = true; break;
		case OPT_NOPROG: o->progress = false; break;
		case 'h': usage(stdout); return 1;
		default: return -1;
		}
	}
	if (optind != argc - 1) {
		if (optind >= argc)
			return cli_usage_error("give one IMAGE");
		return cli_usage_error("one IMAGE at a time (got %d)", argc - optind);
	}
	o->in = argv[optind];
	if (!o->out) {
		if (asprintf(outbuf, "%s.zst", o->in) < 0)
			return -1;
		o->out = *outbuf;
	}
	return 0;
}

/* Open OUT (outfile.h: a temporary named when complete; never the input). */
static int open_output(const struct compress_opts *o, struct outfile *out)
{
	struct outfile_opts oo = { .replace = o->force, .exists_hint = "give --overwrite to replace it" };
	char err[ERR_MAX];

	if (outfile_open(out, o->out, &oo, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	return 0;
}

/* The record's input: its absolute path, the sha256 of the file as stored
 * and of its (decompressed) contents.  0 or -1 (message printed). */
static int record_input(struct custody_record *rec, const char *path, const struct input *in,
			const char *contents_hex)
{
	char *abs = abs_path(path), file_hex[SHA256_HEX], err[512];

	record_add_string(rec, "input", abs ? abs : path);
	free(abs);
	record_add_string(rec, "input_contents_sha256", contents_hex);
	if (!in->stream && !strcmp(in->src->ops->kind, "raw")) {
		record_add_string(rec, "input_sha256", contents_hex);
		return 0;
	}
	if (custody_hash_file(path, file_hex, NULL, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	record_add_string(rec, "input_sha256", file_hex);
	return 0;
}

static int run(const struct compress_opts *o, struct custody_record *rec)
{
	struct zseek_writer *w = NULL;
	struct sha256 *h = NULL;
	struct progress pg;
	struct input in;
	char in_hex[SHA256_HEX] = "", out_hex[SHA256_HEX] = "", err[ERR_MAX], s1[32], s2[32], sp[40];
	double secs;
	struct outfile out = { .fd = -1 };
	uint8_t *buf = NULL;
	int ret = EXIT_ERR, r;

	if (input_open(o->in, &in))
		goto out;
	if (open_output(o, &out))
		goto out;
	buf = malloc(READ_BYTES);
	if (!buf || (o->hash && sha256_new(&h))) {
		msg("out of memory");
		goto out;
	}
	r = zseek_writer_new(out.fd, &o->w, &w);
	if (r) {
		msg("cannot start the compressor: %s", strerror(-r));
		goto out;
	}
	progress_start(&pg, "compress", in.size, o->progress);
	r = in.stream ? copy_stream(o->in, &in, w, h, &pg, buf) : copy_source(&in, w, h, &pg, buf);
	if (!r)
		r = zseek_writer_finish(w);
	progress_end(&pg, in.stream ? in.size : in.data_bytes, !r);
	if (r) {
		if (r != -1)
			msg("%s: %s", o->out, r == -EFBIG ? "more frames than the seekable format allows: "
				"give a larger --frame-size" : strerror(-r));
		goto out;
	}
	if (outfile_commit(&out, err, sizeof(err))) {
		msg("%s", err);
		goto out;
	}
	secs = (double)(now_ns() - pg.t0) / 1e9;
	printf("compress: %s -> %s: %" PRIu64 " bytes in (%s), %" PRIu64 " bytes out (%s), %.2fx, in %.2f s: %s\n",
	       o->in, o->out, in.data_bytes, fmt_size(in.data_bytes, s1, sizeof(s1)), zseek_writer_out_bytes(w),
	       fmt_size(zseek_writer_out_bytes(w), s2, sizeof(s2)),
	       (double)in.data_bytes / (double)zseek_writer_out_bytes(w), secs,
	       fmt_speed(secs > 0 ? (double)in.data_bytes / secs : 0, sp, sizeof(sp)));
	if (o->hash) {
		sha256_final(h, in_hex);
		if (custody_hash_file(o->out, out_hex, NULL, NULL, 0)) {
			msg("%s: cannot hash the output", o->out);
			goto out;
		}
		printf("sha256 %s  %s (decompressed contents)\nsha256 %s  %s\n", in_hex, o->in, out_hex, o->out);
	}
	if (rec && record_input(rec, o->in, &in, in_hex))
		goto out;
	if (rec)
		record_add_output(rec, o->out, "zstd-seekable", out_hex);
	ret = EXIT_OK;
out:
	outfile_abort(&out);        /* a failed run leaves no output */
	zseek_writer_free(w);
	sha256_free(h);
	free(buf);
	input_close(&in);
	return ret;
}

int cmd_compress(int argc, char **argv)
{
	struct custody_record *rec = NULL;
	struct compress_opts o;
	char *outbuf = NULL;
	int ret = EXIT_ERR, r;

	r = parse_args(argc, argv, &o, &outbuf);
	if (r) {
		free(outbuf);
		return r > 0 ? EXIT_OK : EXIT_ERR;
	}
	if (o.record && record_new(&rec, "compress", argc, argv)) {
		msg("out of memory");
		goto out;
	}
	if (rec) {
		record_add_int(rec, "level", o.w.level);
		record_add_int(rec, "frame_bytes", o.w.frame_bytes);
	}
	ret = run(&o, rec);
	if (rec && record_finish(rec, o.record, ret))
		ret = EXIT_ERR;
out:
	record_free(rec);
	free(outbuf);
	return ret;
}
