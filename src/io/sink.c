/* sink.c - see sink.h */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "sink.h"
#include "sysio.h"
#include "util.h"

#define HOLE_BLOCK 4096u

struct sink {
	struct sink_opts o;
	enum sink_kind kind;
	int fd;                     /* out.fd, or standard output */
	struct outfile out;         /* a named output (outfile.h); out.fd < 0 for stdout */
	uint64_t pos;               /* bytes received */
	struct zseek_writer *z;     /* SINK_ZSTD, owned */
};

const char *sink_format_name(enum sink_kind k)
{
	switch (k) {
	case SINK_RAW: return "raw";
	case SINK_SPARSE: return "raw-sparse";
	case SINK_ZSTD: return "zstd-seekable";
	}
	return "?";
}

enum sink_kind sink_kind_used(const struct sink *s)
{
	return s->kind;
}

/* Open the named output (outfile.h: a temporary made complete at the end,
 * or a device/FIFO in place). */
static int open_path(struct sink *s)
{
	struct outfile_opts oo = { .replace = s->o.overwrite, .exists_hint = "give --overwrite to replace it" };
	char err[ERR_MAX];

	if (outfile_open(&s->out, s->o.path, &oo, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	if (!s->out.regular && s->kind == SINK_SPARSE)
		s->kind = SINK_RAW;     /* holes would keep a device's old bytes */
	s->fd = s->out.fd;
	return 0;
}

int sink_open(struct sink **out, const struct sink_opts *o)
{
	struct sink *s = calloc(1, sizeof(*s));
	int ret;

	if (!s) {
		msg("out of memory");
		return -1;
	}
	s->o = *o;
	s->kind = o->kind;
	s->fd = -1;
	s->out.fd = -1;
	if (o->path) {
		if (open_path(s))
			goto fail;
	} else if (o->kind == SINK_ZSTD && isatty(STDOUT_FILENO)) {
		msg("refusing to write compressed data to a terminal");
		goto fail;
	} else {
		s->fd = STDOUT_FILENO;
		if (s->kind == SINK_SPARSE)
			s->kind = SINK_RAW;
	}
	if (s->kind == SINK_ZSTD) {
		ret = zseek_writer_new(s->fd, &o->z, &s->z);
		if (ret) {
			msg("cannot start the compressor: %s", strerror(-ret));
			goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	sink_free(s);
	return -1;
}

static const char *sink_name(const struct sink *s)
{
	return s->o.path ? s->o.path : "standard output";
}

static bool zero_block(const uint8_t *p, size_t len)
{
	return len == 0 || (p[0] == 0 && !memcmp(p, p + 1, len - 1));
}

/* Write the non-zero runs of HOLE_BLOCK-aligned blocks at s->pos. */
static int write_sparse(struct sink *s, const uint8_t *buf, size_t len)
{
	size_t i = 0, run = 0;     /* run: start of the pending non-zero run */
	bool in_run = false;
	int ret;

	while (i < len) {
		uint64_t at = s->pos + i;
		size_t n = HOLE_BLOCK - (size_t)(at % HOLE_BLOCK);
		bool zero;

		if (n > len - i)
			n = len - i;
		zero = zero_block(buf + i, n);
		if (!zero && !in_run) {
			run = i;
			in_run = true;
		} else if (zero && in_run) {
			ret = pwrite_all(s->fd, buf + run, i - run, s->pos + run);
			if (ret)
				return ret;
			in_run = false;
		}
		i += n;
	}
	if (in_run)
		return pwrite_all(s->fd, buf + run, len - run, s->pos + run);
	return 0;
}

int sink_write(struct sink *s, const uint8_t *buf, size_t len)
{
	int ret;

	switch (s->kind) {
	case SINK_SPARSE: ret = write_sparse(s, buf, len); break;
	case SINK_ZSTD: ret = zseek_writer_write(s->z, buf, len); break;
	default: ret = write_all(s->fd, buf, len); break;
	}
	if (ret) {
		msg("%s: write failed: %s", sink_name(s), ret == -EFBIG ? "more frames than the seekable "
		    "format allows (give a larger --frame-size)" : strerror(-ret));
		return -1;
	}
	s->pos += len;
	return 0;
}

int sink_finish(struct sink *s)
{
	char err[ERR_MAX];
	int ret = 0;

	if (s->kind == SINK_ZSTD)
		ret = zseek_writer_finish(s->z);
	else if (s->kind == SINK_SPARSE && ftruncate(s->fd, (off_t)s->pos))
		ret = -errno;
	if (ret) {
		msg("%s: %s", sink_name(s), strerror(-ret));
		return -1;
	}
	if (s->out.fd >= 0) {
		s->fd = -1;
		if (outfile_commit(&s->out, err, sizeof(err))) {
			msg("%s", err);
			return -1;
		}
	}
	return 0;
}

void sink_free(struct sink *s)
{
	if (!s)
		return;
	zseek_writer_free(s->z);
	outfile_abort(&s->out);     /* an unfinished output leaves nothing */
	free(s);
}
