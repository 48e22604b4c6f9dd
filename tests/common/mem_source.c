/* mem_source.c - see mem_source.h */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem_source.h"

static int mem_pread(struct source *s, void *buf, size_t len, uint64_t off)
{
	const struct mem_image *img = s->priv;
	uint8_t *out = buf;

	if (off > img->size || len > img->size - off)
		return -EIO;
	if (img->eio_len && off < img->eio_off + img->eio_len && img->eio_off < off + len)
		return -EIO;
	memset(out, 0, len);
	/* later blocks win where they overlap */
	for (int i = 0; i < img->nblocks; i++) {
		const struct mem_block *b = &img->blocks[i];
		uint64_t lo = b->off > off ? b->off : off;
		uint64_t hi = b->off + b->len < off + len ? b->off + b->len : off + len;

		if (lo < hi)
			memcpy(out + (lo - off), b->bytes + (lo - b->off), (size_t)(hi - lo));
	}
	return 0;
}

static int mem_preadv(struct source *s, const struct iovec *iov, int iovcnt, uint64_t off)
{
	for (int i = 0; i < iovcnt; i++) {
		int ret = mem_pread(s, iov[i].iov_base, iov[i].iov_len, off);

		if (ret)
			return ret;
		off += iov[i].iov_len;
	}
	return 0;
}

static int mem_pwrite(struct source *s, const void *buf, size_t len, uint64_t off)
{
	return -EROFS;
}

static int mem_sync(struct source *s)
{
	return 0;
}

static int mem_truncate(struct source *s, uint64_t size)
{
	return -EROFS;
}

static void mem_close(struct source *s)
{
}

static void mem_close_free(struct source *s)
{
	free(s);
}

static const struct source_ops mem_ops = {
	.kind = "mem",
	.pread = mem_pread,
	.preadv = mem_preadv,
	.pwrite = mem_pwrite,
	.sync = mem_sync,
	.truncate = mem_truncate,
	.close = mem_close,
};

struct source *mem_source_init(struct source *s, struct mem_image *img)
{
	memset(s, 0, sizeof(*s));
	s->ops = &mem_ops;
	s->path = (char *)"<memory>";
	s->size = img->size;
	s->priv = img;
	return s;
}

static const struct source_ops mem_owned_ops = {
	.kind = "mem",
	.pread = mem_pread,
	.preadv = mem_preadv,
	.pwrite = mem_pwrite,
	.sync = mem_sync,
	.truncate = mem_truncate,
	.close = mem_close_free,
};

struct source *mem_source_new(struct mem_image *img, const char *path)
{
	struct source *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	mem_source_init(s, img);
	s->ops = &mem_owned_ops;
	s->path = (char *)path;
	return s;
}
