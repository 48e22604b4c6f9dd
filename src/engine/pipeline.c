/* pipeline.c - see pipeline.h.  (Factored out of cmd_cat.c.) */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array_stream.h"
#include "pipeline.h"
#include "util.h"

/* Segments are whole stripes, about SEGMENT_TARGET of them: small enough
 * that a segment is still in the CPU's caches when it is consumed (8 MiB
 * ones cost up to twice the copying: scripts/bench_all), but each member's
 * part at least MEMBER_MIN (one request per member and segment) as long as
 * that stays within SEGMENT_MAX; stripes larger than SEGMENT_MAX are read
 * in SEGMENT_TARGET pieces. */
#define SEGMENT_TARGET (2u << 20)
#define SEGMENT_MAX (8u << 20)
#define MEMBER_MIN (128u << 10)

struct seg_slot {
	uint8_t *buf;           /* segment_bytes, owned */
	uint64_t seg;           /* segment number held, when ready */
	bool ready;
	int ret;
	uint64_t bad_off;
};

struct run {
	const struct pipeline *p;
	uint64_t end;           /* p->start + p->length */
	uint64_t seg_bytes;
	uint64_t first;         /* absolute number of the first segment */
	uint64_t nseg;
	int nslots;
	struct seg_slot *slots; /* [nslots], owned */
	uint64_t next_seg;      /* next segment (relative) a worker takes */
	uint64_t consumed;      /* segments consumed so far */
	struct array_stream *stream;   /* p->stream_of's trails; owned; NULL: none */
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

int pipeline_nslots(int nthreads)
{
	return nthreads * 2;
}

uint64_t pipeline_segment_bytes(const struct pipeline *p)
{
	uint64_t stripe = p->vol->align ? p->vol->align : 1, n;

	if (stripe > SEGMENT_MAX)
		return SEGMENT_TARGET;  /* huge stripes: pieces of them (never GiBs per slot) */
	n = SEGMENT_TARGET / stripe ? SEGMENT_TARGET / stripe : 1;
	if (p->stream_of && !p->stream_of->prev)
		while (n * p->stream_of->geom.chunk_bytes < MEMBER_MIN && (n + 1) * stripe <= SEGMENT_MAX)
			n++;
	return n * stripe;
}

/* Segment i (relative) covers [off, off+len): segments are aligned to
 * multiples of seg_bytes in the array, clipped to the range. */
static void seg_range(const struct run *r, uint64_t i, uint64_t *off, size_t *len)
{
	uint64_t o = (r->first + i) * r->seg_bytes;
	uint64_t e = o + r->seg_bytes;

	if (o < r->p->start)
		o = r->p->start;
	if (e > r->end)
		e = r->end;
	*off = o;
	*len = (size_t)(e - o);
}

static int seg_read(const struct run *r, int slot, uint8_t *buf, size_t len, uint64_t off, uint64_t *bad)
{
	const struct pipeline *p = r->p;

	if (p->read)
		return p->read(p->read_ctx, slot, buf, len, off, bad);
	return volume_read_observed(p->vol, buf, len, off, bad, p->slot_obs ? &p->slot_obs[slot] : NULL);
}

static void *worker(void *arg)
{
	struct run *r = arg;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct seg_slot *sl;
		uint64_t seg, off;
		size_t len;
		int ret, slot;

		if (r->stop || r->next_seg >= r->nseg)
			break;
		seg = r->next_seg++;
		/* wait until the slot's previous segment has been consumed */
		while (!r->stop && seg >= r->consumed + (uint64_t)r->nslots)
			pthread_cond_wait(&r->cond, &r->lock);
		if (r->stop)
			break;
		slot = (int)(seg % (uint64_t)r->nslots);
		sl = &r->slots[slot];
		pthread_mutex_unlock(&r->lock);

		seg_range(r, seg, &off, &len);
		sl->bad_off = 0;
		array_stream_ahead(r->stream, off, len);
		ret = seg_read(r, slot, sl->buf, len, off, &sl->bad_off);

		pthread_mutex_lock(&r->lock);
		sl->seg = seg;
		sl->ret = ret;
		sl->ready = true;
		pthread_cond_broadcast(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* Hand the segments to consume() in order. */
static int consume_all(struct run *r)
{
	const struct pipeline *p = r->p;

	for (uint64_t seg = 0; seg < r->nseg; seg++) {
		int slot = (int)(seg % (uint64_t)r->nslots);
		struct seg_slot *sl = &r->slots[slot];
		uint64_t off;
		size_t len;
		int ret;

		pthread_mutex_lock(&r->lock);
		while (!(sl->ready && sl->seg == seg))
			pthread_cond_wait(&r->cond, &r->lock);
		pthread_mutex_unlock(&r->lock);
		seg_range(r, seg, &off, &len);
		ret = p->consume(p->ctx, slot, sl->buf, len, off, sl->ret, sl->bad_off);
		if (ret)
			return ret;
		array_stream_behind(r->stream, off + len);
		pthread_mutex_lock(&r->lock);
		sl->ready = false;
		r->consumed = seg + 1;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
	}
	return 0;
}

int pipeline_run(const struct pipeline *p)
{
	struct run r;
	pthread_t tids[64];
	int started = 0, ret = -ENOMEM;

	memset(&r, 0, sizeof(r));
	r.p = p;
	r.end = p->start + p->length;
	r.seg_bytes = pipeline_segment_bytes(p);
	r.first = p->start / r.seg_bytes;
	r.nseg = p->length ? (r.end - 1) / r.seg_bytes - r.first + 1 : 0;
	r.nslots = pipeline_nslots(p->nthreads);
	if (r.nseg == 0)
		return 0;
	if (p->nthreads < 1 || p->nthreads > (int)ARRAY_LEN(tids))
		return -EINVAL;
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cond, NULL);
	r.slots = calloc((size_t)r.nslots, sizeof(*r.slots));
	for (int i = 0; r.slots && i < r.nslots; i++) {
		r.slots[i].buf = xaligned_alloc(r.seg_bytes);
		if (!r.slots[i].buf)
			break;
	}
	if (!r.slots || !r.slots[r.nslots - 1].buf) {
		msg("out of memory for the read buffers");
		goto out;
	}
	if (p->stream_of)
		(void)array_stream_open(p->stream_of, &r.stream);   /* without memory: pages stay */
	for (; started < p->nthreads; started++)
		if (pthread_create(&tids[started], NULL, worker, &r))
			break;
	if (!started) {
		ret = -EAGAIN;
		msg("cannot start reader threads");
		goto out;
	}
	ret = consume_all(&r);
out:
	pthread_mutex_lock(&r.lock);
	r.stop = true;
	pthread_cond_broadcast(&r.cond);
	pthread_mutex_unlock(&r.lock);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	array_stream_close(r.stream);
	for (int i = 0; r.slots && i < r.nslots; i++)
		free(r.slots[i].buf);
	free(r.slots);
	pthread_mutex_destroy(&r.lock);
	pthread_cond_destroy(&r.cond);
	return ret;
}

void pipeline_read_error(int ret, uint64_t off, uint64_t bad_off)
{
	if (ret == -EIO)
		msg("array offset %" PRIu64 ": cannot be read: too many members missing or failing "
		    "there to rebuild it from parity", bad_off);
	else
		msg("reading the array at offset %" PRIu64 ": %s", off, strerror(-ret));
}
