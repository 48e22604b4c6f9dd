/* member_io.c - see member_io.h */
#include <errno.h>
#include <string.h>

#include "member_io.h"
#include "pagecache.h"
#include "parity.h"

bool member_chunk_readable(const struct array *a, int disk, uint64_t stripe)
{
	const struct array_member *m = &a->members[disk];

	if (!m->src || (m->state != MEMBER_OK && m->state != MEMBER_REBUILDING))
		return false;
	return (stripe + 1) * a->geom.chunk_bytes <= m->readable_bytes;
}

uint64_t member_rows(const struct array *a, int disk, uint64_t s0, uint64_t rows)
{
	uint64_t r = 0;

	while (r < rows && member_chunk_readable(a, disk, s0 + r))
		r++;
	return r;
}

/* The member whose counters a read of disk goes to: for the geometry
 * before a reshape, that of the array it belongs to. */
static struct array_member *count_member(struct array *a, int disk)
{
	struct array *t = a->stats_of;

	return t && disk < t->geom.raid_disks ? &t->members[disk] : &a->members[disk];
}

static void count(struct array *a, int disk, uint64_t len, int ret, struct io_tally *t)
{
	struct array_member *cm = count_member(a, disk);

	atomic_fetch_add(&cm->reads, 1);
	if (t) {
		atomic_fetch_add(&t->requests, 1);
		atomic_fetch_add(&t->bytes, len);
	}
	if (ret)
		atomic_fetch_add(&cm->read_errors, 1);
	else
		atomic_fetch_add(&cm->read_bytes, len);
}

bool member_untrusted(const struct array *a, int disk, uint64_t moff, uint64_t len)
{
	const struct array_member *m = &a->members[disk];

	return m->src && m->src->untrusted && source_untrusted_first(m->src, m->data_offset + moff, len);
}

static void count_untrusted(struct array *a, int disk)
{
	atomic_fetch_add(&count_member(a, disk)->untrusted_reads, 1);
}

/* member_read without the untrusted check. */
static int read_raw(struct array *a, int disk, void *buf, size_t len, uint64_t moff, struct io_tally *t)
{
	const struct array_member *m = &a->members[disk];
	int ret = source_pread(m->src, buf, len, m->data_offset + moff);

	count(a, disk, len, ret, t);
	return ret;
}

int member_read(struct array *a, int disk, void *buf, size_t len, uint64_t moff, struct io_tally *t)
{
	if (member_untrusted(a, disk, moff, len)) {
		count_untrusted(a, disk);
		return -EIO;
	}
	return read_raw(a, disk, buf, len, moff, t);
}

int member_readv(struct array *a, int disk, const struct iovec *iov, int niov, uint64_t len, uint64_t moff,
		 struct io_tally *t)
{
	const struct array_member *m = &a->members[disk];
	int ret;

	if (member_untrusted(a, disk, moff, len)) {
		count_untrusted(a, disk);
		return -EIO;
	}
	ret = source_preadv(m->src, iov, niov, m->data_offset + moff);
	count(a, disk, len, ret, t);
	return ret;
}

/* Mark the units of row b (cols bytes at data-area offset off) that meet an
 * untrusted range; true if any does. */
static bool mark_untrusted(const struct array *a, int disk, uint8_t *b, uint32_t nu, uint32_t cols, uint64_t off,
			   uint32_t unit)
{
	const struct array_member *m = &a->members[disk];
	uint64_t base = m->data_offset + off, end = base + cols;
	const struct byte_range *r = source_untrusted_first(m->src, base, cols);
	const struct range_list *l = &m->src->untrusted->r;
	bool any = false;

	for (; r && r < l->v + l->n && r->off < end; r++) {
		uint64_t x0 = r->off > base ? r->off - base : 0;
		uint64_t x1 = r->off + r->len - base < cols ? r->off + r->len - base : cols;

		if (!unit) {
			b[0] = MEMBER_UNIT_UNTRUSTED;
			return true;
		}
		for (uint64_t u = x0 / unit; u < nu && u * unit < x1; u++)
			b[u] = MEMBER_UNIT_UNTRUSTED;
		any = true;
	}
	return any;
}

uint64_t member_read_rows(struct array *a, int disk, uint8_t *buf, uint64_t rows, uint32_t cols, uint64_t moff,
			  uint64_t stride, uint32_t block, uint32_t unit, uint8_t *bad, struct io_tally *t)
{
	uint32_t nu, per;
	uint64_t failed = 0;
	bool untrusted;

	if (block && !unit)
		unit = block;
	nu = unit ? (cols + unit - 1) / unit : 1;
	per = unit ? block / unit : 0;               /* units per block */

	memset(bad, 0, (size_t)(rows * nu));
	if (rows == 0)
		return 0;
	untrusted = member_untrusted(a, disk, moff, (rows - 1) * stride + cols);
	/* one request for the lot when the rows are contiguous; a single row
	 * that fails is not read again whole */
	if (!untrusted && cols == stride && read_raw(a, disk, buf, (size_t)(rows * cols), moff, t) == 0)
		return 0;
	if (untrusted)
		count_untrusted(a, disk);
	for (uint64_t r = 0; r < rows; r++) {
		uint8_t *dst = buf + r * cols, *b = bad + r * nu;
		uint64_t off = moff + r * stride;
		bool bad_row = false;

		if (untrusted && mark_untrusted(a, disk, b, nu, cols, off, unit) && !unit)
			continue;       /* the row is lost whole: nothing to read */
		if (!(cols == stride && rows == 1 && !untrusted) && read_raw(a, disk, dst, cols, off, t) == 0)
			continue;
		if (!block) {
			if (b[0] == MEMBER_UNIT_OK)
				b[0] = MEMBER_UNIT_FAILED;
			failed++;
			continue;
		}
		for (uint32_t x = 0; x < cols; x += block) {
			uint32_t l = cols - x < block ? cols - x : block;

			if (read_raw(a, disk, dst + x, l, off + x, t) == 0)
				continue;
			bad_row = true;
			for (uint32_t u = x / unit; u < nu && u < x / unit + per; u++)
				if (b[u] == MEMBER_UNIT_OK)
					b[u] = MEMBER_UNIT_FAILED;
		}
		failed += bad_row;
	}
	return failed;
}

int stripe_parity_id(const struct array *a, const struct stripe_map *map, int disk)
{
	if (disk == map->p_disk)
		return PARITY_P;
	if (disk == map->q_disk)
		return PARITY_Q;
	return a->geom.level == 6 ? map->disk_slot[disk] : map->disk_data[disk];
}

int stripe_slots(const struct array *a, const struct stripe_map *map, uint8_t *const *blk_by_disk,
		 uint8_t **slots)
{
	if (a->geom.level == 6) {
		for (int i = 0; i < map->q_slots; i++)
			slots[i] = NULL;
		for (int d = 0; d < map->n; d++)
			if (map->disk_slot[d] >= 0)
				slots[map->disk_slot[d]] = blk_by_disk[d];
		return map->q_slots;
	}
	for (int d = 0; d < map->k; d++)
		slots[d] = blk_by_disk[map->data_disk[d]];
	return map->k;
}

void member_trail_open(const struct array *a, int disk, struct pc_trail **trail, uint64_t *base)
{
	const struct array_member *m = &a->members[disk];
	uint64_t fbase;
	int fd;

	*trail = NULL;
	*base = 0;
	if (!m->src || !m->src->ops->raw_fd)
		return;
	fd = m->src->ops->raw_fd(m->src, &fbase);
	if (fd < 0 || pc_trail_open(fd, trail))
		return;
	if (!pc_trail_active(*trail)) {
		pc_trail_close(*trail);
		*trail = NULL;
		return;
	}
	*base = fbase + m->data_offset;
}
