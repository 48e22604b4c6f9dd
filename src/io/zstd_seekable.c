/* zstd_seekable.c - see zstd_seekable.h.
 *
 * Written from the format's specification (zstd_seekable_compression_format.md
 * 0.1.0), the zstd frame format (RFC 8878) for the frame walk used in error
 * messages, and the xxHash specification for XXH64.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "le.h"
#include "sysio.h"
#include "util.h"
#include "xxh64.h"
#include "zstd_seekable.h"

/* ------------------------------------------------------------------ */
/* the seek table                                                       */
/* ------------------------------------------------------------------ */

static uint64_t entry_bytes(bool checksums)
{
	return checksums ? 12 : 8;
}

int zseek_footer_parse(const uint8_t footer[ZSEEK_FOOTER_BYTES], uint64_t file_size,
		       uint64_t *table_bytes, char *err, size_t errlen)
{
	uint32_t nframes = get_le32(footer);
	uint8_t desc = footer[4];
	uint64_t need;

	if (get_le32(footer + 5) != ZSEEK_FOOTER_MAGIC)
		return -ENOMSG;
	if (desc & ZSEEK_DESC_RESERVED) {
		fmt_err(err, errlen, "seek table descriptor 0x%02x has reserved bits set "
			"(a later version of the seekable format?)", desc);
		return -EINVAL;
	}
	if (nframes > ZSEEK_MAX_FRAMES) {
		fmt_err(err, errlen, "seek table claims %" PRIu32 " frames, more than the format's "
			"limit of %u", nframes, ZSEEK_MAX_FRAMES);
		return -EINVAL;
	}
	need = 8 + (uint64_t)nframes * entry_bytes(desc & ZSEEK_DESC_CHECKSUM) + ZSEEK_FOOTER_BYTES;
	if (need > file_size) {
		fmt_err(err, errlen, "seek table of %" PRIu32 " frames needs %" PRIu64 " bytes but the "
			"file has only %" PRIu64 " (truncated or corrupt)", nframes, need, file_size);
		return -EINVAL;
	}
	*table_bytes = need;
	return 0;
}

static int parse_entries(const uint8_t *p, struct zseek_table *t, char *err, size_t errlen)
{
	uint64_t esz = entry_bytes(t->has_checksums);
	uint64_t coff = 0, doff = 0;

	for (uint32_t i = 0; i < t->nframes; i++, p += esz) {
		struct zseek_frame *f = &t->frames[i];

		f->csize = get_le32(p);
		f->dsize = get_le32(p + 4);
		f->checksum = t->has_checksums ? get_le32(p + 8) : 0;
		if (f->dsize > ZSEEK_MAX_FRAME_BYTES) {
			fmt_err(err, errlen, "seek table entry %" PRIu32 ": frame of %" PRIu32 " bytes, more "
				"than the format's limit of 1 GiB", i, f->dsize);
			return -EINVAL;
		}
		if (f->csize == 0) {
			fmt_err(err, errlen, "seek table entry %" PRIu32 ": compressed size 0", i);
			return -EINVAL;
		}
		f->coff = coff;
		f->doff = doff;
		coff += f->csize;
		doff += f->dsize;
		if (f->dsize > t->max_dsize)
			t->max_dsize = f->dsize;
		if (coff > t->table_off)
			break;
	}
	if (coff != t->table_off) {
		fmt_err(err, errlen, "the seek table's compressed frame sizes add up to %s%" PRIu64 " bytes but "
			"the table starts at offset %" PRIu64 " (truncated or corrupt file)",
			coff > t->table_off ? "more than " : "", coff, t->table_off);
		return -EINVAL;
	}
	t->data_bytes = doff;
	return 0;
}

int zseek_table_parse(const uint8_t *table, uint64_t table_bytes, uint64_t file_size,
		      struct zseek_table *t, char *err, size_t errlen)
{
	const uint8_t *footer = table + table_bytes - ZSEEK_FOOTER_BYTES;
	uint64_t want;
	int ret;

	memset(t, 0, sizeof(*t));
	if (table_bytes < 8 + ZSEEK_FOOTER_BYTES || table_bytes > file_size) {
		fmt_err(err, errlen, "seek table size %" PRIu64 " impossible in a file of %" PRIu64 " bytes",
			table_bytes, file_size);
		return -EINVAL;
	}
	ret = zseek_footer_parse(footer, file_size, &want, err, errlen);
	if (ret == -ENOMSG)
		fmt_err(err, errlen, "no seekable-format footer (magic 0x%08x) at the end", ZSEEK_FOOTER_MAGIC);
	if (ret)
		return ret == -ENOMSG ? -EINVAL : ret;
	if (want != table_bytes) {
		fmt_err(err, errlen, "seek table is %" PRIu64 " bytes, its footer says %" PRIu64, table_bytes, want);
		return -EINVAL;
	}
	if (get_le32(table) != ZSEEK_SKIPPABLE_MAGIC) {
		fmt_err(err, errlen, "no seek table frame at offset %" PRIu64 " (found 0x%08" PRIx32 " where the "
			"skippable magic 0x%08x belongs): corrupt seek table", file_size - table_bytes,
			get_le32(table), ZSEEK_SKIPPABLE_MAGIC);
		return -EINVAL;
	}
	if (get_le32(table + 4) != table_bytes - 8) {
		fmt_err(err, errlen, "seek table frame size field says %" PRIu32 " bytes, the footer's frame "
			"count gives %" PRIu64 ": corrupt seek table", get_le32(table + 4), table_bytes - 8);
		return -EINVAL;
	}
	t->nframes = get_le32(footer);
	t->has_checksums = footer[4] & ZSEEK_DESC_CHECKSUM;
	t->table_off = file_size - table_bytes;
	t->table_bytes = table_bytes;
	t->frames = calloc(t->nframes ? t->nframes : 1, sizeof(*t->frames));
	if (!t->frames) {
		fmt_err(err, errlen, "out of memory for a seek table of %" PRIu32 " frames", t->nframes);
		return -ENOMEM;
	}
	ret = parse_entries(table + 8, t, err, errlen);
	if (ret)
		zseek_table_free(t);
	return ret;
}

int zseek_table_read(int fd, uint64_t file_size, struct zseek_table *t, char *err, size_t errlen)
{
	uint8_t footer[ZSEEK_FOOTER_BYTES];
	uint64_t table_bytes;
	uint8_t *table;
	int ret;

	memset(t, 0, sizeof(*t));
	if (file_size < 8 + ZSEEK_FOOTER_BYTES)
		return -ENOMSG;
	ret = pread_all(fd, footer, sizeof(footer), file_size - ZSEEK_FOOTER_BYTES);
	if (ret) {
		fmt_err(err, errlen, "cannot read the seek table footer: %s", strerror(-ret));
		return ret;
	}
	ret = zseek_footer_parse(footer, file_size, &table_bytes, err, errlen);
	if (ret)
		return ret;
	table = malloc(table_bytes);
	if (!table) {
		fmt_err(err, errlen, "out of memory for a seek table of %" PRIu64 " bytes", table_bytes);
		return -ENOMEM;
	}
	ret = pread_all(fd, table, table_bytes, file_size - table_bytes);
	if (ret)
		fmt_err(err, errlen, "cannot read the seek table: %s", strerror(-ret));
	else
		ret = zseek_table_parse(table, table_bytes, file_size, t, err, errlen);
	free(table);
	return ret;
}

void zseek_table_free(struct zseek_table *t)
{
	free(t->frames);
	t->frames = NULL;
	t->nframes = 0;
}

uint32_t zseek_find_frame(const struct zseek_table *t, uint64_t off)
{
	uint32_t lo = 0, hi = t->nframes;   /* the last frame with doff <= off */

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->frames[mid].doff <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Size of a zstd frame header from its descriptor byte (RFC 8878 3.1.1.1). */
static uint64_t frame_header_bytes(uint8_t fhd)
{
	static const uint8_t did_bytes[4] = { 0, 1, 2, 4 };
	static const uint8_t fcs_bytes[4] = { 0, 2, 4, 8 };
	bool single = fhd & 0x20;
	uint64_t n = 4 + 1 + (single ? 0 : 1) + did_bytes[fhd & 3] + fcs_bytes[fhd >> 6];

	if ((fhd >> 6) == 0 && single)
		n += 1;
	return n;
}

/* Walk the blocks of the frame at *pos; *pos moves past it. */
static int walk_frame(int fd, uint64_t size, uint64_t *pos, uint64_t *blocks, uint64_t max_blocks)
{
	uint8_t b[4];
	uint64_t p = *pos;
	bool checksum, last = false;
	int ret;

	if (size - p < 5)
		return -EPIPE;
	ret = pread_all(fd, b, 1, p + 4);
	if (ret)
		return ret;
	if (b[0] & 0x08)
		return -EBADMSG;                /* reserved bit */
	checksum = b[0] & 0x04;
	p += frame_header_bytes(b[0]);
	while (!last) {
		uint32_t bh, bsize;

		if (++*blocks > max_blocks)
			return -EAGAIN;
		if (p + 3 > size)
			return -EPIPE;
		ret = pread_all(fd, b, 3, p);
		if (ret)
			return ret;
		bh = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
		last = bh & 1;
		bsize = bh >> 3;
		switch ((bh >> 1) & 3) {
		case 1: p += 3 + 1; break;          /* RLE: one byte */
		case 3: return -EBADMSG;            /* reserved block type */
		default: p += 3 + bsize; break;     /* raw or compressed */
		}
	}
	p += checksum ? 4 : 0;
	if (p > size)
		return -EPIPE;
	*pos = p;
	return 0;
}

int zseek_walk_frames(int fd, uint64_t file_size, uint64_t max_blocks, uint64_t *nframes,
		      uint64_t *where)
{
	uint64_t pos = 0, blocks = 0;
	uint8_t b[8];
	int ret = 0;

	*nframes = 0;
	while (pos < file_size) {
		uint32_t magic;

		*where = pos;
		if (file_size - pos < 8)
			return -EPIPE;
		ret = pread_all(fd, b, 8, pos);
		if (ret)
			return ret;
		magic = get_le32(b);
		if ((magic & ZSEEK_SKIPPABLE_MASK) == (ZSEEK_SKIPPABLE_MAGIC & ZSEEK_SKIPPABLE_MASK)) {
			pos += 8 + (uint64_t)get_le32(b + 4);
			if (pos > file_size)
				return -EPIPE;
		} else if (magic == ZSEEK_FRAME_MAGIC) {
			ret = walk_frame(fd, file_size, &pos, &blocks, max_blocks);
			if (ret)
				return ret;
		} else {
			return -EBADMSG;
		}
		++*nframes;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* writing                                                              */
/* ------------------------------------------------------------------ */

enum job_state { JOB_FREE, JOB_QUEUED, JOB_DONE };

/* One frame on its way out: filled by the caller, compressed by a worker,
 * written by the caller in order. */
struct zjob {
	uint8_t *in;            /* frame_bytes, owned */
	size_t in_len;
	uint8_t *out;           /* ZSTD_compressBound(frame_bytes), owned */
	size_t out_len;
	uint32_t checksum;
	enum job_state state;
	int ret;
};

struct zseek_writer {
	int fd;
	struct zseek_wopts o;
	int nslots;
	struct zjob *jobs;          /* [nslots], owned; job seq sits in slot seq % nslots */
	uint64_t seq_fill;          /* the job being filled */
	uint64_t seq_written;       /* jobs written out so far */
	uint64_t seq_queued;        /* jobs handed to the workers so far */
	uint64_t seq_taken;         /* jobs taken by a worker so far */
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t *tids;            /* owned */
	int nstarted;
	ZSTD_CCtx *cctx;            /* inline compression (nthreads == 1), owned */
	uint8_t *table;             /* seek table entries, 12 bytes each, owned */
	uint64_t nframes, table_cap;
	uint64_t out_bytes;
	uint8_t *zero_out;          /* the compressed form of a whole zero frame, owned */
	size_t zero_len;
	uint32_t zero_sum;
	int ret;                    /* sticky error */
};

static bool all_zero(const uint8_t *p, size_t len)
{
	return len == 0 || (p[0] == 0 && !memcmp(p, p + 1, len - 1));
}

static ZSTD_CCtx *new_cctx(int level)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();

	if (!c)
		return NULL;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1))) {
		ZSTD_freeCCtx(c);
		return NULL;
	}
	return c;
}

/* Compress one frame (any thread).  A whole zero frame reuses the
 * precomputed one. */
static void compress_job(struct zseek_writer *w, ZSTD_CCtx *c, struct zjob *j)
{
	size_t n;

	if (w->zero_out && j->in_len == w->o.frame_bytes && all_zero(j->in, j->in_len)) {
		memcpy(j->out, w->zero_out, w->zero_len);
		j->out_len = w->zero_len;
		j->checksum = w->zero_sum;
		j->ret = 0;
		return;
	}
	j->checksum = (uint32_t)xxh64(j->in, j->in_len, 0);
	n = ZSTD_compress2(c, j->out, ZSTD_compressBound(w->o.frame_bytes), j->in, j->in_len);
	if (ZSTD_isError(n)) {
		j->ret = -EIO;
		return;
	}
	j->out_len = n;
	j->ret = 0;
}

static void *writer_worker(void *arg)
{
	struct zseek_writer *w = arg;
	ZSTD_CCtx *c = new_cctx(w->o.level);

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct zjob *j;

		while (!w->stop && w->seq_taken >= w->seq_queued)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->stop)
			break;
		j = &w->jobs[w->seq_taken++ % (uint64_t)w->nslots];
		pthread_mutex_unlock(&w->lock);
		if (c)
			compress_job(w, c, j);
		else
			j->ret = -ENOMEM;
		pthread_mutex_lock(&w->lock);
		j->state = JOB_DONE;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	ZSTD_freeCCtx(c);
	return NULL;
}

static int table_add(struct zseek_writer *w, const struct zjob *j)
{
	if (w->nframes >= ZSEEK_MAX_FRAMES)
		return -EFBIG;
	if (w->nframes == w->table_cap) {
		uint64_t cap = w->table_cap ? w->table_cap * 2 : 1024;
		uint8_t *t = realloc(w->table, cap * 12);
		if (!t)
			return -ENOMEM;
		w->table = t;
		w->table_cap = cap;
	}
	put_le32(w->table + w->nframes * 12, (uint32_t)j->out_len);
	put_le32(w->table + w->nframes * 12 + 4, (uint32_t)j->in_len);
	put_le32(w->table + w->nframes * 12 + 8, j->checksum);
	w->nframes++;
	return 0;
}

/* Wait for the oldest job not yet written, write it, free its slot. */
static int flush_one(struct zseek_writer *w)
{
	struct zjob *j = &w->jobs[w->seq_written % (uint64_t)w->nslots];
	int ret;

	pthread_mutex_lock(&w->lock);
	while (j->state != JOB_DONE)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	ret = j->ret;
	if (!ret)
		ret = table_add(w, j);
	if (!ret)
		ret = write_all(w->fd, j->out, j->out_len);
	w->out_bytes += j->out_len;
	j->state = JOB_FREE;
	j->in_len = 0;
	w->seq_written++;
	return ret;
}

/* Hand the job being filled to a worker (or compress it here). */
static int submit(struct zseek_writer *w)
{
	struct zjob *j = &w->jobs[w->seq_fill % (uint64_t)w->nslots];

	if (w->seq_fill >= ZSEEK_MAX_FRAMES)
		return -EFBIG;
	if (w->cctx) {
		compress_job(w, w->cctx, j);
		j->state = JOB_DONE;
	} else {
		pthread_mutex_lock(&w->lock);
		j->state = JOB_QUEUED;
		w->seq_queued = w->seq_fill + 1;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	w->seq_fill++;
	/* the next slot must be free before it is filled */
	while (!w->ret && w->seq_fill - w->seq_written >= (uint64_t)w->nslots)
		w->ret = flush_one(w);
	return w->ret;
}

static int make_zero_frame(struct zseek_writer *w)
{
	uint8_t *zeros = calloc(1, w->o.frame_bytes);
	ZSTD_CCtx *c = new_cctx(w->o.level);
	size_t cap = ZSTD_compressBound(w->o.frame_bytes), n;
	int ret = -ENOMEM;

	w->zero_out = malloc(cap);
	if (!zeros || !c || !w->zero_out)
		goto out;
	n = ZSTD_compress2(c, w->zero_out, cap, zeros, w->o.frame_bytes);
	if (ZSTD_isError(n)) {
		ret = -EIO;
		goto out;
	}
	w->zero_len = n;
	w->zero_sum = (uint32_t)xxh64(zeros, w->o.frame_bytes, 0);
	ret = 0;
out:
	ZSTD_freeCCtx(c);
	free(zeros);
	return ret;
}

int zseek_writer_new(int fd, const struct zseek_wopts *o, struct zseek_writer **out)
{
	struct zseek_writer *w = calloc(1, sizeof(*w));
	size_t cap;
	int ret = -ENOMEM;

	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->o = *o;
	if (!w->o.level)
		w->o.level = 3;
	if (w->o.nthreads < 1)
		w->o.nthreads = 1;
	if (w->o.frame_bytes == 0 || w->o.frame_bytes > ZSEEK_MAX_FRAME_BYTES) {
		free(w);
		return -EINVAL;
	}
	/* each slot holds a frame in and out: keep them to about 1 GiB */
	while (w->o.nthreads > 1 && (uint64_t)w->o.nthreads * 4 * w->o.frame_bytes > (1ull << 30))
		w->o.nthreads--;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->nslots = w->o.nthreads == 1 ? 1 : w->o.nthreads * 2;
	w->jobs = calloc((size_t)w->nslots, sizeof(*w->jobs));
	if (!w->jobs)
		goto fail;
	cap = ZSTD_compressBound(w->o.frame_bytes);
	for (int i = 0; i < w->nslots; i++) {
		w->jobs[i].in = malloc(w->o.frame_bytes);
		w->jobs[i].out = malloc(cap);
		if (!w->jobs[i].in || !w->jobs[i].out)
			goto fail;
	}
	ret = make_zero_frame(w);
	if (ret)
		goto fail;
	ret = -ENOMEM;
	if (w->o.nthreads == 1) {
		w->cctx = new_cctx(w->o.level);
		if (!w->cctx)
			goto fail;
	} else {
		w->tids = calloc((size_t)w->o.nthreads, sizeof(*w->tids));
		if (!w->tids)
			goto fail;
		for (; w->nstarted < w->o.nthreads; w->nstarted++)
			if (pthread_create(&w->tids[w->nstarted], NULL, writer_worker, w))
				break;
		if (!w->nstarted) {
			ret = -EAGAIN;
			goto fail;
		}
	}
	*out = w;
	return 0;
fail:
	zseek_writer_free(w);
	return ret;
}

int zseek_writer_write(struct zseek_writer *w, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len && !w->ret) {
		struct zjob *j = &w->jobs[w->seq_fill % (uint64_t)w->nslots];
		size_t n = w->o.frame_bytes - j->in_len;

		if (n > len)
			n = len;
		memcpy(j->in + j->in_len, p, n);
		j->in_len += n;
		p += n;
		len -= n;
		if (j->in_len == w->o.frame_bytes)
			w->ret = submit(w);
	}
	return w->ret;
}

int zseek_writer_finish(struct zseek_writer *w)
{
	uint8_t head[8], foot[ZSEEK_FOOTER_BYTES];
	uint64_t tbytes;

	if (!w->ret && w->jobs[w->seq_fill % (uint64_t)w->nslots].in_len)
		w->ret = submit(w);
	while (!w->ret && w->seq_written < w->seq_fill)
		w->ret = flush_one(w);
	if (w->ret)
		return w->ret;
	tbytes = w->nframes * 12 + ZSEEK_FOOTER_BYTES;
	put_le32(head, ZSEEK_SKIPPABLE_MAGIC);
	put_le32(head + 4, (uint32_t)tbytes);
	put_le32(foot, (uint32_t)w->nframes);
	foot[4] = ZSEEK_DESC_CHECKSUM;
	put_le32(foot + 5, ZSEEK_FOOTER_MAGIC);
	w->ret = write_all(w->fd, head, sizeof(head));
	if (!w->ret && w->nframes)
		w->ret = write_all(w->fd, w->table, w->nframes * 12);
	if (!w->ret)
		w->ret = write_all(w->fd, foot, sizeof(foot));
	if (!w->ret)
		w->out_bytes += 8 + tbytes;
	return w->ret;
}

uint64_t zseek_writer_out_bytes(const struct zseek_writer *w)
{
	return w->out_bytes;
}

void zseek_writer_free(struct zseek_writer *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (int i = 0; i < w->nstarted; i++)
		pthread_join(w->tids[i], NULL);
	for (int i = 0; w->jobs && i < w->nslots; i++) {
		free(w->jobs[i].in);
		free(w->jobs[i].out);
	}
	free(w->jobs);
	free(w->tids);
	ZSTD_freeCCtx(w->cctx);
	free(w->table);
	free(w->zero_out);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
}
