/* array_stream.c - see array_stream.h.  Array offsets become stripes, and
 * stripes [s0, s1) every member's data-area bytes [s0 * chunk, s1 * chunk). */
#include <errno.h>
#include <stdlib.h>

#include "array_stream.h"
#include "pagecache.h"

struct array_stream {
	struct array *a;
	int n;
	struct pc_trail **trail;      /* [n]; NULL: none for that member */
	uint64_t *base;               /* [n]: file offset of the member's data area */
};

int array_stream_open(struct array *a, struct array_stream **out)
{
	struct array_stream *as = calloc(1, sizeof(*as));

	*out = NULL;
	if (!as)
		return -ENOMEM;
	as->a = a;
	as->n = a->prev ? 0 : a->geom.raid_disks;
	as->trail = calloc((size_t)as->n + 1, sizeof(*as->trail));
	as->base = calloc((size_t)as->n + 1, sizeof(*as->base));
	if (!as->trail || !as->base) {
		array_stream_close(as);
		return -ENOMEM;
	}
	for (int d = 0; d < as->n; d++) {
		struct array_member *m = &a->members[d];
		uint64_t base;
		int fd;

		if (!m->src || !m->src->ops->raw_fd)
			continue;
		fd = m->src->ops->raw_fd(m->src, &base);
		if (fd < 0 || pc_trail_open(fd, &as->trail[d]))
			continue;
		if (!pc_trail_active(as->trail[d])) {
			pc_trail_close(as->trail[d]);
			as->trail[d] = NULL;
			continue;
		}
		as->base[d] = base + m->data_offset;
	}
	*out = as;
	return 0;
}

void array_stream_ahead(struct array_stream *as, uint64_t off, uint64_t len, bool willneed)
{
	uint64_t sbytes, cb, s0, s1;

	if (!as || !len || !as->n)
		return;
	cb = as->a->geom.chunk_bytes;
	sbytes = cb * (uint64_t)as->a->k;
	s0 = off / sbytes;
	s1 = (off + len + sbytes - 1) / sbytes;
	for (int d = 0; d < as->n; d++)
		if (as->trail[d])
			pc_trail_ahead(as->trail[d], as->base[d] + s0 * cb, (s1 - s0) * cb, willneed);
}

void array_stream_behind(struct array_stream *as, uint64_t off)
{
	uint64_t cb;

	if (!as || !as->n)
		return;
	cb = as->a->geom.chunk_bytes;
	/* the stripe holding off is not done with yet */
	for (int d = 0; d < as->n; d++)
		if (as->trail[d])
			pc_trail_behind(as->trail[d], as->base[d] + off / (cb * (uint64_t)as->a->k) * cb);
}

void array_stream_close(struct array_stream *as)
{
	if (!as)
		return;
	for (int d = 0; as->trail && d < as->n; d++)
		pc_trail_close(as->trail[d]);
	free(as->trail);
	free(as->base);
	free(as);
}
