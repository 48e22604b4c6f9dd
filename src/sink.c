/* sink.c - see sink.h */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sink.h"
#include "util.h"

#define HOLE_BLOCK 4096u

struct sink {
	struct sink_opts o;
	enum sink_kind kind;
	int fd;
	char *partial;              /* PATH.partial while unfinished, owned; NULL: written in place */
	uint64_t pos;               /* bytes received */
	struct zseek_writer *z;     /* SINK_ZSTD, owned */
	bool finished;
};

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

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

/* Decide how to write path: regular files (new or existing) through
 * PATH.partial; anything else (a device, a FIFO) in place. */
static int open_path(struct sink *s)
{
	const struct sink_opts *o = &s->o;
	struct stat st;

	for (int i = 0; i < o->nprotect; i++) {
		if (same_file(o->path, o->protect[i])) {
			msg("%s: the output is one of the member images; refusing to overwrite evidence", o->path);
			return -1;
		}
	}
	if (!stat(o->path, &st) && !S_ISREG(st.st_mode)) {
		if (s->kind == SINK_SPARSE)
			s->kind = SINK_RAW;     /* holes would keep the old bytes */
		s->fd = open(o->path, O_WRONLY | O_CLOEXEC);
		if (s->fd < 0)
			msg("%s: cannot open: %s", o->path, strerror(errno));
		return s->fd < 0 ? -1 : 0;
	}
	if (!o->overwrite && !access(o->path, F_OK)) {
		msg("%s: exists; give --overwrite to replace it", o->path);
		return -1;
	}
	if (asprintf(&s->partial, "%s.partial", o->path) < 0) {
		s->partial = NULL;
		msg("out of memory");
		return -1;
	}
	s->fd = open(s->partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (s->fd < 0) {
		msg("%s: cannot create: %s", s->partial, strerror(errno));
		free(s->partial);
		s->partial = NULL;
		return -1;
	}
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
	return s->partial ? s->partial : s->o.path ? s->o.path : "standard output";
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
	int ret = 0;

	if (s->kind == SINK_ZSTD)
		ret = zseek_writer_finish(s->z);
	else if (s->kind == SINK_SPARSE && ftruncate(s->fd, (off_t)s->pos))
		ret = -errno;
	if (!ret && s->fd != STDOUT_FILENO && s->partial && fsync(s->fd))
		ret = -errno;
	if (ret) {
		msg("%s: %s", sink_name(s), strerror(-ret));
		return -1;
	}
	if (s->fd != STDOUT_FILENO) {
		ret = close(s->fd);
		s->fd = -1;
		if (ret) {
			msg("%s: %s", sink_name(s), strerror(errno));
			return -1;
		}
	}
	if (s->partial && rename(s->partial, s->o.path)) {
		msg("%s: cannot rename to %s: %s", s->partial, s->o.path, strerror(errno));
		return -1;
	}
	s->finished = true;
	return 0;
}

void sink_free(struct sink *s)
{
	if (!s)
		return;
	zseek_writer_free(s->z);
	if (s->fd >= 0 && s->fd != STDOUT_FILENO)
		close(s->fd);
	if (s->partial && !s->finished)
		unlink(s->partial);
	free(s->partial);
	free(s);
}
