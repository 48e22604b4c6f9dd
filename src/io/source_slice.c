/* source_slice.c - a member that is a slice of another source: a
 * partition of a whole-disk image (see source_slice in source.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "source.h"
#include "util.h"

struct slice_priv {
	struct source *parent;      /* a reference of ours */
	uint64_t off;               /* where the slice starts in the parent */
};

static struct slice_priv *sp_of(struct source *s)
{
	return s->priv;
}

/* [off, off + len) inside the slice, or -EIO (a truncated image). */
static int in_slice(const struct source *s, uint64_t len, uint64_t off)
{
	return off > s->size || len > s->size - off ? -EIO : 0;
}

static int slice_pread(struct source *s, void *buf, size_t len, uint64_t off)
{
	struct slice_priv *p = sp_of(s);

	return in_slice(s, len, off) ? -EIO : source_pread(p->parent, buf, len, p->off + off);
}

static int slice_preadv(struct source *s, const struct iovec *iov, int iovcnt, uint64_t off)
{
	struct slice_priv *p = sp_of(s);
	uint64_t len = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return in_slice(s, len, off) ? -EIO : source_preadv(p->parent, iov, iovcnt, p->off + off);
}

static int slice_pwrite(struct source *s, const void *buf, size_t len, uint64_t off)
{
	struct slice_priv *p = sp_of(s);

	if (!s->writable)
		return -EROFS;
	return in_slice(s, len, off) ? -ENOSPC : source_pwrite(p->parent, buf, len, p->off + off);
}

static int slice_sync(struct source *s)
{
	return sp_of(s)->parent->ops->sync(sp_of(s)->parent);
}

static int slice_truncate(struct source *s, uint64_t size)
{
	return -EINVAL;             /* a partition keeps its size */
}

static int slice_raw_fd(struct source *s, uint64_t *base)
{
	struct slice_priv *p = sp_of(s);
	int fd;

	if (!p->parent->ops->raw_fd)
		return -1;
	fd = p->parent->ops->raw_fd(p->parent, base);
	*base += p->off;
	return fd;
}

static int slice_serial(struct source *s, char *buf, size_t len)
{
	return source_serial(sp_of(s)->parent, buf, len);
}

static void slice_close(struct source *s)
{
	struct slice_priv *p = sp_of(s);

	if (p)
		source_close(p->parent);
	free(p);
	free(s->path);
	free(s);
}

static const struct source_ops slice_ops = {
	.kind = "slice",
	.pread = slice_pread,
	.preadv = slice_preadv,
	.pwrite = slice_pwrite,
	.sync = slice_sync,
	.truncate = slice_truncate,
	.raw_fd = slice_raw_fd,
	.serial = slice_serial,
	.close = slice_close,
};

int source_slice(struct source *parent, uint64_t off, uint64_t len, const char *name, struct source **out,
		 char *err, size_t errlen)
{
	struct source *s;
	struct slice_priv *p;

	if (off > parent->size || len > parent->size - off)
		return fmt_fail(err, errlen, -EINVAL, "%s: bytes %llu-%llu are past the end of the image (%llu bytes)",
				name, (unsigned long long)off, (unsigned long long)(off + len),
				(unsigned long long)parent->size);
	s = calloc(1, sizeof(*s));
	p = calloc(1, sizeof(*p));
	if (!s || !p || !(s->path = strdup(name))) {
		free(s);
		free(p);
		return fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", name);
	}
	p->parent = source_ref(parent);
	p->off = off;
	s->ops = &slice_ops;
	s->priv = p;
	s->size = len;
	s->writable = parent->writable;
	/* the parent's files hold the bytes (hashes, records); its untrusted
	 * ranges in the window are the slice's */
	s->files = (char *const *)source_files(parent, &s->nfiles);
	if (source_untrusted_window(s, parent, off, len)) {
		source_close(s);
		return fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", name);
	}
	s->parent = parent;
	s->base = off;
	*out = s;
	return 0;
}
