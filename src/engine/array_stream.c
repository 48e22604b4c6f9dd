/* array_stream.c - see array_stream.h.  Array offsets become stripes, and
 * stripes [s0, s1) every member's data-area bytes [s0 * chunk, s1 * chunk). */

/* Read-ahead asked of each member: windows of this, kept up to one past
 * what is being read (the members' storage sees requests of this size
 * whatever the reads; nothing is asked where everything is cached). */
#define RA_WINDOW ((uint64_t)2 << 20)
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "array_stream.h"
#include "member_io.h"
#include "pagecache.h"

struct array_stream {
	struct array *a;
	int n;
	struct pc_trail **trail;      /* [n]; NULL: none for that member */
	uint64_t *base;               /* [n]: file offset of the member's data area */
	uint64_t *ra_end;             /* [n]: data-area bytes asked ahead so far (under lock) */
	pthread_mutex_t lock;
};

int array_stream_open(struct array *a, struct array_stream **out)
{
	struct array_stream *as = calloc(1, sizeof(*as));

	*out = NULL;
	if (!as)
		return -ENOMEM;
	as->a = a;
	as->n = a->prev ? 0 : a->geom.raid_disks;
	pthread_mutex_init(&as->lock, NULL);
	as->trail = calloc((size_t)as->n + 1, sizeof(*as->trail));
	as->base = calloc((size_t)as->n + 1, sizeof(*as->base));
	as->ra_end = calloc((size_t)as->n + 1, sizeof(*as->ra_end));
	if (!as->trail || !as->base || !as->ra_end) {
		array_stream_close(as);
		return -ENOMEM;
	}
	for (int d = 0; d < as->n; d++)
		member_trail_open(a, d, &as->trail[d], &as->base[d]);
	*out = as;
	return 0;
}

/* The member bytes (of the data area, every member alike) that array
 * bytes [off, off + len) need, to read them or to rebuild them from the
 * same columns of the others: [*lo, *hi).  Whole stripes, except that a
 * first or last stripe touched in one chunk only needs that chunk's
 * columns (a 1 GiB chunk is not read whole for a 1 MiB read). */
static void member_span(const struct array_stream *as, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi)
{
	uint64_t cb = as->a->geom.chunk_bytes, sbytes = cb * (uint64_t)as->a->k;
	uint64_t s0 = off / sbytes, s1 = (off + len + sbytes - 1) / sbytes;
	uint64_t d0 = off - s0 * sbytes, d1 = off + len - (s1 - 1) * sbytes;    /* d1 in (0, sbytes] */
	uint64_t k0 = d0 / cb, k1 = (d1 - 1) / cb;                              /* chunks of s0, of s1 - 1 */

	*lo = s0 * cb + (s1 - s0 > 1 ? (k0 == (uint64_t)as->a->k - 1 ? d0 % cb : 0) : (k0 == k1 ? d0 % cb : 0));
	*hi = (s1 - 1) * cb + (s1 - s0 > 1 ? (k1 == 0 ? (d1 - 1) % cb + 1 : cb) : (k0 == k1 ? (d1 - 1) % cb + 1 : cb));
}

void array_stream_ahead(struct array_stream *as, uint64_t off, uint64_t len)
{
	uint64_t lo, hi;

	if (!as || !len || !as->n)
		return;
	member_span(as, off, len, &lo, &hi);
	for (int d = 0; d < as->n; d++) {
		uint64_t lim = as->a->members[d].readable_bytes;

		if (!as->trail[d])
			continue;
		pc_trail_ahead(as->trail[d], as->base[d] + lo, hi - lo, false);
		pthread_mutex_lock(&as->lock);
		if (as->ra_end[d] < lo)
			as->ra_end[d] = lo;
		while (as->ra_end[d] < hi + RA_WINDOW && as->ra_end[d] < lim) {
			uint64_t n = lim - as->ra_end[d] < RA_WINDOW ? lim - as->ra_end[d] : RA_WINDOW;

			pc_trail_ahead(as->trail[d], as->base[d] + as->ra_end[d], n, true);
			as->ra_end[d] += n;
		}
		pthread_mutex_unlock(&as->lock);
	}
}

void array_stream_behind(struct array_stream *as, uint64_t off)
{
	uint64_t cb, sbytes, s, d, cut;

	if (!as || !as->n)
		return;
	cb = as->a->geom.chunk_bytes;
	sbytes = cb * (uint64_t)as->a->k;
	s = off / sbytes;
	d = off - s * sbytes;
	/* the stripe holding off is not done with yet, but for the columns
	 * its last data chunk has passed: every chunk of it is done there */
	cut = s * cb + (d > ((uint64_t)as->a->k - 1) * cb ? d - ((uint64_t)as->a->k - 1) * cb : 0);
	for (int m = 0; m < as->n; m++)
		if (as->trail[m])
			pc_trail_behind(as->trail[m], as->base[m] + cut);
}

void array_stream_close(struct array_stream *as)
{
	if (!as)
		return;
	for (int d = 0; as->trail && d < as->n; d++)
		pc_trail_close(as->trail[d]);
	free(as->trail);
	free(as->base);
	free(as->ra_end);
	pthread_mutex_destroy(&as->lock);
	free(as);
}
