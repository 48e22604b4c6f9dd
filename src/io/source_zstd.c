/* source_zstd.c - a member image stored in the zstd seekable format.
 *
 * Random access goes through the frame index (zstd_seekable.h): a read is
 * cut at frame boundaries and each frame is decompressed alone.  Reads come
 * from many threads at once (array_read), so decompressed frames are kept in
 * a small sharded cache:
 *   - a shard (chosen by frame number) is a mutex, a condition variable and
 *     a few entries; an entry holds one decompressed frame and a refcount;
 *   - a miss claims an entry (state LOADING, refcount 1), drops the lock,
 *     reads and decompresses into the entry's buffer, then publishes it;
 *     other readers of the same frame wait for it instead of decompressing
 *     it a second time;
 *   - readers copy out of an entry without the lock while holding a
 *     reference; only unreferenced entries are evicted (least recently
 *     used first); when every entry of a shard is in use the frame is
 *     decompressed into a private buffer instead;
 *   - a frame that failed stays in the cache as failed, so the reads that
 *     narrow a failure down (array.c retries in 4 KiB blocks) do not
 *     decompress it again and again.
 * Decompression never targets the caller's buffer: callers may pass memory
 * that other threads write at the same time (array.c's parity sink), which
 * zstd would read back as its window.
 *
 * A frame that fails to decompress or whose XXH64 does not match the seek
 * table is a read error (-EIO) of this member, so the array rebuilds those
 * bytes from parity where it can; the first few are also reported on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "outfile.h"
#include "source.h"
#include "sysio.h"
#include "util.h"
#include "zstd_seekable.h"

#define CACHE_BUDGET   (64u << 20)  /* decompressed bytes kept per image ... */
#define CACHE_ENV      "RAIDIMG_ZSTD_CACHE"   /* ... or this many (tests, benchmarks) */
#define MAX_SHARDS     64
#define SHARD_ENTRIES  32           /* at most, per shard: lookups scan a shard */
#define MAX_WARNINGS   10

enum entry_state { ENTRY_EMPTY, ENTRY_LOADING, ENTRY_READY, ENTRY_FAILED };

struct cache_entry {
	uint32_t frame;
	enum entry_state state;
	int ret;                /* ENTRY_FAILED: the error */
	int refs;
	uint64_t stamp;         /* last use, for LRU */
	uint8_t *buf;           /* owned */
	size_t cap;
};

struct cache_shard {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t clock;
	int n;
	struct cache_entry *e;  /* [n], owned */
};

struct zstd_priv {
	int fd;
	struct zseek_table t;
	int nshards;
	struct cache_shard *shards;   /* [nshards], owned */
	_Atomic int warnings;
	_Atomic uint64_t frames_decompressed;
};

/* A frame being read: from the cache (e) or a private buffer. */
struct frame_ref {
	const uint8_t *data;
	struct cache_shard *sh;
	struct cache_entry *e;
	uint8_t *priv;          /* owned when not NULL */
};

/* ---- per-thread decompression state ---- */

struct zstd_tls {
	ZSTD_DCtx *dctx;
	uint8_t *cbuf;
	size_t ccap;
};
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_free(void *arg)
{
	struct zstd_tls *t = arg;

	if (t) {
		ZSTD_freeDCtx(t->dctx);
		free(t->cbuf);
		free(t);
	}
}

static void tls_key_init(void)
{
	pthread_key_create(&tls_key, tls_free);
}

static struct zstd_tls *tls_get(size_t ccap)
{
	struct zstd_tls *t;

	pthread_once(&tls_once, tls_key_init);
	t = pthread_getspecific(tls_key);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		t->dctx = ZSTD_createDCtx();
		if (!t->dctx || pthread_setspecific(tls_key, t)) {
			tls_free(t);
			return NULL;
		}
	}
	if (t->ccap < ccap) {
		uint8_t *b = realloc(t->cbuf, ccap);
		if (!b)
			return NULL;
		t->cbuf = b;
		t->ccap = ccap;
	}
	return t;
}

/* ---- reading one frame ---- */

static void warn_frame(struct source *s, uint32_t i, const char *what)
{
	struct zstd_priv *p = s->priv;
	const struct zseek_frame *f = &p->t.frames[i];

	if (atomic_fetch_add(&p->warnings, 1) >= MAX_WARNINGS)
		return;
	msg("%s: frame %" PRIu32 " (image bytes %" PRIu64 "-%" PRIu64 ", file offset %" PRIu64 "): %s; "
	    "treated as a read error of this member", s->path, i, f->doff, f->doff + f->dsize - 1, f->coff, what);
}

/* Read and decompress frame i into dst (f->dsize bytes), checking its
 * checksum.  0 or -EIO/-ENOMEM. */
static int load_frame(struct source *s, uint32_t i, uint8_t *dst)
{
	struct zstd_priv *p = s->priv;
	const struct zseek_frame *f = &p->t.frames[i];
	struct zstd_tls *t = tls_get(f->csize);
	size_t n;
	int ret;

	if (!t)
		return -ENOMEM;
	ret = pread_all(p->fd, t->cbuf, f->csize, f->coff);
	if (ret) {
		warn_frame(s, i, strerror(-ret));
		return -EIO;
	}
	n = ZSTD_decompressDCtx(t->dctx, dst, f->dsize, t->cbuf, f->csize);
	atomic_fetch_add(&p->frames_decompressed, 1);
	if (ZSTD_isError(n) || n != f->dsize) {
		char why[128];

		snprintf(why, sizeof(why), "cannot be decompressed (%s)",
			 ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size");
		warn_frame(s, i, why);
		return -EIO;
	}
	if (p->t.has_checksums && (uint32_t)xxh64(dst, f->dsize, 0) != f->checksum) {
		warn_frame(s, i, "checksum mismatch (XXH64 differs from the seek table)");
		return -EIO;
	}
	return 0;
}

/* ---- the cache ---- */

static struct cache_entry *shard_find(struct cache_shard *sh, uint32_t frame)
{
	for (int i = 0; i < sh->n; i++)
		if (sh->e[i].state != ENTRY_EMPTY && sh->e[i].frame == frame)
			return &sh->e[i];
	return NULL;
}

/* An entry to reuse: empty, else the least recently used unreferenced one. */
static struct cache_entry *shard_victim(struct cache_shard *sh)
{
	struct cache_entry *v = NULL;

	for (int i = 0; i < sh->n; i++) {
		struct cache_entry *e = &sh->e[i];

		if (e->state == ENTRY_EMPTY)
			return e;
		if (e->refs == 0 && (!v || e->stamp < v->stamp))
			v = e;
	}
	return v;
}

static void entry_put(struct cache_shard *sh, struct cache_entry *e)
{
	e->refs--;
}

/* Wait for an entry someone else is loading; called with the lock held
 * and a reference taken. */
static int entry_wait(struct cache_shard *sh, struct cache_entry *e, struct frame_ref *r)
{
	int ret;

	while (e->state == ENTRY_LOADING)
		pthread_cond_wait(&sh->cond, &sh->lock);
	if (e->state == ENTRY_READY) {
		e->stamp = ++sh->clock;
		r->data = e->buf;
		r->sh = sh;
		r->e = e;
		return 0;
	}
	ret = e->ret;
	entry_put(sh, e);
	return ret;
}

/* Load frame i into entry e (claimed: LOADING, one reference), publish it. */
static int entry_fill(struct source *s, struct cache_shard *sh, struct cache_entry *e, uint32_t i,
		      struct frame_ref *r)
{
	struct zstd_priv *p = s->priv;
	size_t need = p->t.frames[i].dsize;
	int ret = 0;

	if (e->cap < need) {
		free(e->buf);
		e->buf = xaligned_alloc(need);
		e->cap = e->buf ? need : 0;
		if (!e->buf)
			ret = -ENOMEM;
	}
	if (!ret)
		ret = load_frame(s, i, e->buf);
	pthread_mutex_lock(&sh->lock);
	e->state = ret ? ENTRY_FAILED : ENTRY_READY;
	e->ret = ret;
	e->stamp = ++sh->clock;
	pthread_cond_broadcast(&sh->cond);
	if (ret)
		entry_put(sh, e);
	pthread_mutex_unlock(&sh->lock);
	if (!ret) {
		r->data = e->buf;
		r->sh = sh;
		r->e = e;
	}
	return ret;
}

static int frame_private(struct source *s, uint32_t i, struct frame_ref *r)
{
	struct zstd_priv *p = s->priv;
	int ret;

	r->priv = xaligned_alloc(p->t.frames[i].dsize);
	if (!r->priv)
		return -ENOMEM;
	ret = load_frame(s, i, r->priv);
	if (ret) {
		free(r->priv);
		r->priv = NULL;
		return ret;
	}
	r->data = r->priv;
	return 0;
}

/* Get frame i's decompressed bytes; frame_release() when done. */
static int frame_get(struct source *s, uint32_t i, struct frame_ref *r)
{
	struct zstd_priv *p = s->priv;
	struct cache_shard *sh = &p->shards[i % (uint32_t)p->nshards];
	struct cache_entry *e;
	int ret;

	memset(r, 0, sizeof(*r));
	pthread_mutex_lock(&sh->lock);
	e = shard_find(sh, i);
	if (e) {
		e->refs++;
		ret = entry_wait(sh, e, r);
		pthread_mutex_unlock(&sh->lock);
		return ret;
	}
	e = shard_victim(sh);
	if (!e) {
		pthread_mutex_unlock(&sh->lock);
		return frame_private(s, i, r);
	}
	e->frame = i;
	e->state = ENTRY_LOADING;
	e->refs = 1;
	pthread_mutex_unlock(&sh->lock);
	return entry_fill(s, sh, e, i, r);
}

static void frame_release(struct frame_ref *r)
{
	if (r->priv) {
		free(r->priv);
		return;
	}
	pthread_mutex_lock(&r->sh->lock);
	entry_put(r->sh, r->e);
	pthread_mutex_unlock(&r->sh->lock);
}

/* ---- the source vtable ---- */

/* Copy len bytes from src into the iovecs, starting at (*iv, *ivoff). */
static void copy_to_iov(const struct iovec *iov, int *iv, size_t *ivoff, const uint8_t *src, size_t len)
{
	while (len) {
		size_t room = iov[*iv].iov_len - *ivoff;
		size_t n = room < len ? room : len;

		memcpy((uint8_t *)iov[*iv].iov_base + *ivoff, src, n);
		src += n;
		len -= n;
		*ivoff += n;
		if (*ivoff == iov[*iv].iov_len) {
			(*iv)++;
			*ivoff = 0;
		}
	}
}

static int zstd_preadv(struct source *s, const struct iovec *iov, int iovcnt, uint64_t off)
{
	struct zstd_priv *p = s->priv;
	uint64_t total = 0, pos, end;
	size_t ivoff = 0;
	int iv = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (off > s->size || total > s->size - off)
		return -EIO;            /* past the end, as a raw image would be */
	while (iv < iovcnt && iov[iv].iov_len == 0)
		iv++;
	for (pos = off, end = off + total; pos < end;) {
		uint32_t fi = zseek_find_frame(&p->t, pos);
		const struct zseek_frame *f = &p->t.frames[fi];
		uint64_t within = pos - f->doff;
		uint64_t n = f->dsize - within;
		struct frame_ref r;
		int ret;

		if (n > end - pos)
			n = end - pos;
		ret = frame_get(s, fi, &r);
		if (ret)
			return ret;
		copy_to_iov(iov, &iv, &ivoff, r.data + within, (size_t)n);
		frame_release(&r);
		pos += n;
	}
	return 0;
}

static int zstd_pread(struct source *s, void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return zstd_preadv(s, &iov, 1, off);
}

static int zstd_pwrite(struct source *s, const void *buf, size_t len, uint64_t off)
{
	return -EROFS;
}

static int zstd_sync(struct source *s)
{
	return 0;
}

static int zstd_truncate(struct source *s, uint64_t size)
{
	return -EROFS;
}

static void zstd_priv_free(struct zstd_priv *p)
{
	if (!p)
		return;
	for (int i = 0; p->shards && i < p->nshards; i++) {
		struct cache_shard *sh = &p->shards[i];

		for (int j = 0; j < sh->n; j++)
			free(sh->e[j].buf);
		free(sh->e);
		pthread_mutex_destroy(&sh->lock);
		pthread_cond_destroy(&sh->cond);
	}
	free(p->shards);
	zseek_table_free(&p->t);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

static void zstd_close(struct source *s)
{
	zstd_priv_free(s->priv);
	free(s->path);
	free(s);
}

static const struct source_ops zstd_ops = {
	.kind = "zstd",
	.pread = zstd_pread,
	.preadv = zstd_preadv,
	.pwrite = zstd_pwrite,
	.sync = zstd_sync,
	.truncate = zstd_truncate,
	.close = zstd_close,
};

/* ---- opening ---- */

/* Size the cache: about CACHE_BUDGET bytes (or $RAIDIMG_ZSTD_CACHE), at
 * least two frames. */
static int cache_init(struct zstd_priv *p)
{
	uint64_t fb = p->t.max_dsize ? p->t.max_dsize : 1;
	uint64_t budget = CACHE_BUDGET;
	const char *env = getenv(CACHE_ENV);
	uint64_t entries;
	int per;

	if (env && parse_size(env, &budget))
		budget = CACHE_BUDGET;
	entries = budget / fb;

	if (entries < 2)
		entries = 2;
	if (entries > MAX_SHARDS * SHARD_ENTRIES)
		entries = MAX_SHARDS * SHARD_ENTRIES;
	/* 4 entries a shard when there are enough, up to MAX_SHARDS shards */
	p->nshards = entries / 4 >= MAX_SHARDS ? MAX_SHARDS : entries >= 4 ? (int)(entries / 4) : 1;
	per = (int)(entries / (uint64_t)p->nshards);
	p->shards = calloc((size_t)p->nshards, sizeof(*p->shards));
	if (!p->shards)
		return -ENOMEM;
	for (int i = 0; i < p->nshards; i++) {
		struct cache_shard *sh = &p->shards[i];

		pthread_mutex_init(&sh->lock, NULL);
		pthread_cond_init(&sh->cond, NULL);
		sh->e = calloc((size_t)per, sizeof(*sh->e));
		if (!sh->e)
			return -ENOMEM;
		sh->n = per;
	}
	return 0;
}

/* The file has no seek table: say what it is instead. */
static void explain_no_table(int fd, const char *path, uint64_t size, char *err, size_t errlen)
{
	uint64_t nframes = 0, where = 0;
	int ret = zseek_walk_frames(fd, size, 1u << 16, &nframes, &where);

	switch (ret) {
	case 0:
	case -EAGAIN:
		fmt_err(err, errlen, "%s: a plain zstd file (no seek table): raidimg reads compressed member "
			"images only in the zstd seekable format, which allows random access; convert it once "
			"with: raidimg compress %s -o OUT.zst", path, path);
		break;
	case -EPIPE:
		fmt_err(err, errlen, "%s: zstd data without a seek table that ends inside frame %" PRIu64
			" (at offset %" PRIu64 " of %" PRIu64 "): the file is truncated", path, nframes, where, size);
		break;
	case -EBADMSG:
		fmt_err(err, errlen, "%s: no seek table, and the bytes at offset %" PRIu64 " are not a zstd "
			"frame: corrupt zstd file", path, where);
		break;
	default:
		fmt_err(err, errlen, "%s: cannot read: %s", path, strerror(-ret));
		break;
	}
}

/* The first data frame must start with a zstd or skippable magic. */
static int check_first_frame(int fd, const struct zseek_table *t, const char *path, char *err, size_t errlen)
{
	uint8_t b[4];
	uint32_t magic;

	if (!t->nframes || t->frames[0].csize < 4)
		return 0;
	if (pread_all(fd, b, 4, 0)) {
		fmt_err(err, errlen, "%s: cannot read the first frame", path);
		return -EIO;
	}
	magic = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	if (magic != ZSEEK_FRAME_MAGIC &&
	    (magic & ZSEEK_SKIPPABLE_MASK) != (ZSEEK_SKIPPABLE_MAGIC & ZSEEK_SKIPPABLE_MASK)) {
		fmt_err(err, errlen, "%s: the seek table is valid but the file does not start with a zstd "
			"frame (0x%08" PRIx32 "): corrupt", path, magic);
		return -EINVAL;
	}
	return 0;
}

int source_open_zstd(const char *path, int flags, struct source **out, char *err, size_t errlen)
{
	struct zstd_priv *p = NULL;
	struct source *s = NULL;
	char why[ERR_MAX] = "";
	struct stat st;
	int ret;

	if (flags & SOURCE_WRITE) {
		fmt_err(err, errlen, "%s: a zstd-compressed image cannot be written; decompress it first "
			"(zstd -d)", path);
		return -EROFS;
	}
	p = calloc(1, sizeof(*p));
	if (p)
		p->fd = -1;
	s = calloc(1, sizeof(*s));
	if (!p || !s) {
		ret = -ENOMEM;
		fmt_err(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	p->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (p->fd < 0) {
		ret = -errno;
		fmt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(p->fd, &st) || !S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		fmt_err(err, errlen, "%s: a zstd image must be a regular file", path);
		goto fail;
	}
	s->path = abs_path(path);
	if (!s->path) {
		ret = -ENOMEM;
		fmt_err(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	{
		char what[64 + PATH_MAX];

		/* no output of this run may land on it (outfile.h) */
		snprintf(what, sizeof(what), "the image %s given as input", s->path);
		ret = evidence_protect(p->fd, what);
		if (ret) {
			fmt_err(err, errlen, "%s: %s", path, strerror(-ret));
			goto fail;
		}
	}
	ret = zseek_table_read(p->fd, (uint64_t)st.st_size, &p->t, why, sizeof(why));
	if (ret == -ENOMSG) {
		explain_no_table(p->fd, path, (uint64_t)st.st_size, err, errlen);
		ret = -EINVAL;
		goto fail;
	}
	if (ret) {
		fmt_err(err, errlen, "%s: zstd seekable image: %s", path, why);
		goto fail;
	}
	ret = check_first_frame(p->fd, &p->t, path, err, errlen);
	if (ret)
		goto fail;
	ret = cache_init(p);
	if (ret) {
		ret = -ENOMEM;
		fmt_err(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	posix_fadvise(p->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	s->ops = &zstd_ops;
	s->priv = p;
	s->size = p->t.data_bytes;
	*out = s;
	return 0;
fail:
	zstd_priv_free(p);
	if (s)
		free(s->path);
	free(s);
	return ret;
}

uint64_t source_zstd_frames_decompressed(const struct source *s)
{
	const struct zstd_priv *p = s->priv;

	return s->ops == &zstd_ops ? atomic_load(&p->frames_decompressed) : 0;
}
