/* array_read.c - read any byte range of an assembled array (array.h).
 *
 * A request is cut into runs of stripes.  A run whose requested data
 * chunks are all readable is served straight into the caller's buffer with
 * one preadv per member for each contiguous stretch of data chunks (no
 * copy).  Other runs go through the rebuild path: every readable member is
 * read over the run into per-thread scratch, lost chunks are rebuilt from
 * P (and Q) once per stripe, and the requested bytes copied out.  A member
 * that fails to read (EIO, short image) is treated as lost for that run.
 * Member reads go through member_io.h, shared with the scrub.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "array.h"
#include "member_io.h"
#include "parity.h"
#include "thread_buf.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* reading                                                              */
/* ------------------------------------------------------------------ */

/* The part of stripe s covered by [off, end): data indices d0..d1 and the
 * byte range [lo, hi) inside the first and last chunk. */
struct stripe_span {
	int d0, d1;
	uint32_t lo, hi;        /* lo: offset in chunk d0; hi: end in chunk d1 */
};

static void stripe_span(const struct array *a, uint64_t s, uint64_t off, uint64_t end,
			struct stripe_span *sp)
{
	uint64_t cb = a->geom.chunk_bytes;
	uint64_t sbeg = s * cb * (uint64_t)a->k;
	uint64_t a0 = off > sbeg ? off - sbeg : 0;
	uint64_t a1 = end - sbeg < cb * (uint64_t)a->k ? end - sbeg : cb * (uint64_t)a->k;

	sp->d0 = (int)(a0 / cb);
	sp->lo = (uint32_t)(a0 % cb);
	sp->d1 = (int)((a1 - 1) / cb);
	sp->hi = (uint32_t)((a1 - 1) % cb + 1);
}

static bool stripe_needs_rebuild(const struct array *a, uint64_t s, const struct stripe_map *map,
				 const struct stripe_span *sp)
{
	for (int d = sp->d0; d <= sp->d1; d++)
		if (!member_chunk_readable(a, map->data_disk[d], s))
			return true;
	return false;
}

/* Per-member gather list for the direct path. */
struct member_io {
	uint64_t off;           /* data-area offset of the first byte */
	uint64_t len;
	int niov;
	struct iovec iov[256];
};

/* Parity chunks that sit between data chunks of one member are read into
 * a sink when chunks are small, so that the member sees one large request
 * instead of many small ones (nobody reads the sink).  One per thread:
 * sources that copy (zstd) must not write one buffer from several threads. */
#define SINK_BYTES (1u << 20)
#define SINK_MAX_CHUNK (256u << 10)
static struct thread_buf sink_buf = THREAD_BUF_INIT(PARITY_ALIGN, false);

/* This thread's sink (SINK_BYTES), or NULL if it cannot be had: then
 * parity chunks are simply not bridged. */
static uint8_t *sink_get(void)
{
	return thread_buf_get(&sink_buf, SINK_BYTES);
}

/* Where reads are counted: the array's own counters, or for the geometry
 * before a reshape (stats_of) those of the array it belongs to. */
static struct array *count_array(struct array *a)
{
	return a->stats_of ? a->stats_of : a;
}

static int member_io_flush(struct array *a, int disk, struct member_io *io)
{
	int ret;

	if (!io->niov)
		return 0;
	ret = member_readv(a, disk, io->iov, io->niov, io->len, io->off, &count_array(a)->io);
	io->niov = 0;
	io->len = 0;
	return ret;
}

/* Direct path for stripes [s0, s1]: every requested data chunk is readable.
 * Returns 0, or -errno with *failed_disk set to the member that failed. */
static int read_direct(struct array *a, uint8_t *buf, uint64_t off, uint64_t end,
		       uint64_t s0, uint64_t s1, int *failed_disk)
{
	int n = a->geom.raid_disks;
	uint64_t cb = a->geom.chunk_bytes;
	struct member_io *io;
	struct stripe_map map;
	uint8_t *sink = cb <= SINK_MAX_CHUNK ? sink_get() : NULL;
	int ret = 0;

	io = calloc((size_t)n, sizeof(*io));
	if (!io)
		return -ENOMEM;
	for (uint64_t s = s0; s <= s1; s++) {
		struct stripe_span sp;

		layout_map_stripe(&a->geom, s, &map);
		stripe_span(a, s, off, end, &sp);
		for (int d = sp.d0; d <= sp.d1; d++) {
			int disk = map.data_disk[d];
			struct member_io *mi = &io[disk];
			uint32_t clo = d == sp.d0 ? sp.lo : 0;
			uint32_t chi = d == sp.d1 ? sp.hi : (uint32_t)cb;
			uint64_t moff = s * cb + clo;
			uint64_t aoff = (s * (uint64_t)a->k + (uint64_t)d) * cb + clo;

			if (sink && mi->niov && mi->off + mi->len < moff &&
			    moff - (mi->off + mi->len) <= 2 * cb && mi->niov + 1 < (int)ARRAY_LEN(mi->iov)) {
				/* bridge the P/Q chunk(s) in between */
				mi->iov[mi->niov].iov_base = sink;
				mi->iov[mi->niov].iov_len = moff - (mi->off + mi->len);
				mi->len += mi->iov[mi->niov].iov_len;
				mi->niov++;
			}
			if (mi->niov && (mi->off + mi->len != moff || mi->niov == (int)ARRAY_LEN(mi->iov))) {
				ret = member_io_flush(a, disk, mi);
				if (ret) {
					*failed_disk = disk;
					goto out;
				}
			}
			if (!mi->niov)
				mi->off = moff;
			mi->iov[mi->niov].iov_base = buf + (aoff - off);
			mi->iov[mi->niov].iov_len = chi - clo;
			mi->niov++;
			mi->len += chi - clo;
		}
	}
	for (int disk = 0; disk < n; disk++) {
		ret = member_io_flush(a, disk, &io[disk]);
		if (ret) {
			*failed_disk = disk;
			goto out;
		}
	}
out:
	free(io);
	return ret;
}

/* Per-thread scratch for the rebuild path: n member windows + parity scratch. */
static struct thread_buf scratch_buf = THREAD_BUF_INIT(PARITY_ALIGN, false);

static uint8_t *scratch_get(size_t size)
{
	return thread_buf_get(&scratch_buf, size);
}

/* Bytes of one member read in one go on the rebuild path ... */
#define REBUILD_WINDOW (4u << 20)
/* ... unless members x window would exceed this (the per-thread scratch). */
#define REBUILD_SCRATCH (32u << 20)
/* One stripe is rebuilt in column pieces of at most this over all members
 * (but at least ROW_PIECE_MIN per member): each member's columns are read
 * and combined while they are still in the CPU's cache (a whole 512 KiB
 * chunk of 5 members took a quarter more CPU: scripts/bench_all). */
#define ROW_PIECE (1u << 20)
#define ROW_PIECE_MIN (64u << 10)
/* A member read that fails is retried in pieces of this size to find which
 * bytes are really lost (md's STRIPE_SIZE): two members failing in
 * different blocks of one stripe are still covered by RAID5's parity. */
#define FAIL_BLOCK 4096u
/* Lost bytes are tracked in sectors: an untrusted range (a ddrescue map's
 * bad sectors, md's bad-block log) loses exactly its sectors, so a read
 * that cannot be served stops at the first sector really lost. */
#define UNIT 512u

/* One piece of rebuild work: stripes s0..s1 (rows), and of every member's
 * chunk in them the columns [c0, c1) (512-byte aligned). */
struct piece {
	uint64_t s0, s1;
	uint32_t c0, c1;
	const struct volume_observer *obs;    /* NULL: nobody asked */
};

/* Scratch of one piece, carved from the per-thread buffer. */
struct piece_mem {
	uint32_t w;                          /* c1 - c0 */
	uint64_t ns;                         /* rows */
	uint32_t nb;                         /* UNITs per row */
	uint8_t *win[LAYOUT_MAX_DISKS];      /* ns rows of w bytes per disk */
	uint64_t rows[LAYOUT_MAX_DISKS];     /* rows read from the disk (a prefix) */
	uint8_t *bad;                        /* [disk][row][unit]: MEMBER_UNIT_* */
	uint8_t *pscratch;                   /* 2 * w, for parity_recover */
};

static uint8_t *bad_at(const struct piece_mem *pm, int disk, uint64_t row)
{
	return pm->bad + ((size_t)disk * pm->ns + row) * pm->nb;
}

/* Is unit blk of disk's chunk in this row served? */
static bool block_ok(const struct piece_mem *pm, int disk, uint64_t row, uint32_t blk)
{
	return row < pm->rows[disk] && !bad_at(pm, disk, row)[blk];
}

static bool row_has_bad(const struct piece_mem *pm, int disk, uint64_t row)
{
	const uint8_t *b = bad_at(pm, disk, row);

	if (row >= pm->rows[disk])
		return false;
	for (uint32_t i = 0; i < pm->nb; i++)
		if (b[i])
			return true;
	return false;
}

/* Read the piece's columns of every row disk has into pm->win[disk]; a
 * failure is narrowed down row by row, then FAIL_BLOCK by FAIL_BLOCK;
 * untrusted bytes are lost sector by sector. */
static void piece_read_member(struct array *a, int disk, const struct piece *pc, struct piece_mem *pm)
{
	uint64_t cb = a->geom.chunk_bytes;

	member_read_rows(a, disk, pm->win[disk], pm->rows[disk], pm->w, pc->s0 * cb + pc->c0, cb, FAIL_BLOCK, UNIT,
			 bad_at(pm, disk, 0), &count_array(a)->io);
}

/* Is disk's unit blk of this row untrusted (rather than failed or fine)? */
static bool unit_untrusted(const struct piece_mem *pm, int disk, uint64_t row, uint32_t blk)
{
	return row < pm->rows[disk] && bad_at(pm, disk, row)[blk] == MEMBER_UNIT_UNTRUSTED;
}

/* Requested columns [*lo, *hi) of data index d in a stripe, clipped to
 * [x0, x1); false if they do not meet. */
static bool data_cols(const struct array *a, const struct stripe_span *sp, int d,
		      uint32_t x0, uint32_t x1, uint32_t *lo, uint32_t *hi)
{
	uint32_t clo = d == sp->d0 ? sp->lo : 0;
	uint32_t chi = d == sp->d1 ? sp->hi : a->geom.chunk_bytes;

	if (d < sp->d0 || d > sp->d1)
		return false;
	*lo = clo > x0 ? clo : x0;
	*hi = chi < x1 ? chi : x1;
	return *lo < *hi;
}

/* Tell the observer where len bytes at array offset aoff, of disk's chunk
 * in this row, came from (served: copied out; else unreadable). */
static void observe_chunk(const struct array *a, const struct piece *pc, const struct piece_mem *pm,
			  uint64_t row, uint32_t blk, int disk, uint64_t aoff, uint32_t len, bool served)
{
	bool used[LAYOUT_MAX_DISKS];
	enum volume_src how = VOLUME_SRC_UNREADABLE;

	/* all entries: the geometry before a reshape has fewer members than
	 * the array the observer knows (the new ones are not used there) */
	for (int i = 0; i < LAYOUT_MAX_DISKS; i++)
		used[i] = i < a->geom.raid_disks && block_ok(pm, i, row, blk);
	if (served)
		how = used[disk] ? VOLUME_SRC_MEMBER
		      : unit_untrusted(pm, disk, row, blk) ? VOLUME_SRC_UNTRUSTED : VOLUME_SRC_REBUILT;
	pc->obs->served(pc->obs->ctx, aoff, len, how, disk, used);
}

/* Where parity_recover is to put (or find) member disk's columns [x0, x1)
 * of this row: its window, or - when the disk is lost and the caller asked
 * for exactly those columns of it - their place in buf, which saves copying
 * them over afterwards (in_buf[disk] is then set).  buf must be aligned as
 * the parity code wants it, or the window is used. */
static uint8_t *rebuild_target(const struct array *a, uint64_t s, uint64_t off, uint8_t *buf,
			       const struct stripe_map *map, const struct stripe_span *sp,
			       const struct piece_mem *pm, uint64_t row, uint32_t blk, int disk,
			       uint32_t x0, uint32_t x1, size_t at, bool *in_buf)
{
	int d = map->disk_data[disk];
	uint32_t lo, hi;
	uint8_t *dst;

	if (d < 0 || block_ok(pm, disk, row, blk) || !data_cols(a, sp, d, x0, x1, &lo, &hi) || lo != x0 ||
	    hi != x1)
		return pm->win[disk] + at;
	dst = buf + ((s * (uint64_t)a->k + (uint64_t)d) * a->geom.chunk_bytes + lo - off);
	if ((uintptr_t)dst % PARITY_ALIGN)
		return pm->win[disk] + at;
	in_buf[disk] = true;
	return dst;
}

/* Serve columns [x0, x1) of one row (blocks blk0.. all lost alike):
 * rebuild the lost data chunks if needed and possible, copy the requested
 * bytes out.  Returns 0, or -EIO with *bad set to the first requested
 * array offset of this segment that cannot be served (the rest is copied). */
static int serve_segment(struct array *a, uint8_t *buf, uint64_t off, uint64_t s,
			 const struct stripe_map *map, const struct stripe_span *sp,
			 struct piece_mem *pm, const struct piece *pc, uint64_t row,
			 uint32_t x0, uint32_t x1, bool *rebuilt, uint64_t *bad)
{
	uint64_t cb = a->geom.chunk_bytes;
	uint32_t blk = (x0 - pc->c0) / UNIT;
	size_t at = (size_t)row * pm->w + (x0 - pc->c0);
	uint8_t *slots[LAYOUT_MAX_DISKS];
	bool in_buf[LAYOUT_MAX_DISKS] = { false };     /* by disk: rebuilt straight into buf */
	int ids[2] = { PARITY_NONE, PARITY_NONE }, nlost = 0;
	bool need = false;
	int n = a->geom.raid_disks, ret = 0;

	for (int disk = 0; disk < n; disk++) {
		uint32_t lo, hi;

		if (block_ok(pm, disk, row, blk))
			continue;
		if (nlost < 2)
			ids[nlost] = stripe_parity_id(a, map, disk);
		nlost++;
		if (map->disk_data[disk] >= 0 && data_cols(a, sp, map->disk_data[disk], x0, x1, &lo, &hi))
			need = true;
	}
	/* a lost Q is not needed to rebuild data from P: the data alone (an
	 * XOR, not a two-erasure recovery that also regenerates Q) */
	if (nlost == 2 && ids[1] == PARITY_Q && ids[0] >= 0)
		ids[1] = PARITY_NONE;
	else if (nlost == 2 && ids[0] == PARITY_Q && ids[1] >= 0) {
		ids[0] = ids[1];
		ids[1] = PARITY_NONE;
	}
	if (need && nlost > a->redundancy) {
		ret = -EIO;
	} else if (need) {
		uint8_t *blk_of[LAYOUT_MAX_DISKS];
		int nslots;

		for (int disk = 0; disk < n; disk++)
			blk_of[disk] = map->disk_data[disk] < 0 ? NULL :
				       rebuild_target(a, s, off, buf, map, sp, pm, row, blk, disk, x0, x1, at, in_buf);
		nslots = stripe_slots(a, map, blk_of, slots);
		if (parity_recover(nslots, x1 - x0, slots, pm->win[map->p_disk] + at,
				   map->q_disk >= 0 ? pm->win[map->q_disk] + at : NULL, ids[0], ids[1], pm->pscratch))
			return -EINVAL;
		*rebuilt = true;
	}
	for (int d = sp->d0; d <= sp->d1; d++) {
		int disk = map->data_disk[d];
		uint32_t lo, hi;
		uint64_t aoff;

		if (!data_cols(a, sp, d, x0, x1, &lo, &hi))
			continue;
		aoff = (s * (uint64_t)a->k + (uint64_t)d) * cb + lo;
		if (pc->obs)
			observe_chunk(a, pc, pm, row, blk, disk, aoff, hi - lo, !(ret && !block_ok(pm, disk, row, blk)));
		if (ret && !block_ok(pm, disk, row, blk)) {
			if (aoff < *bad)
				*bad = aoff;
			continue;
		}
		if (!in_buf[disk])
			memcpy(buf + (aoff - off), pm->win[disk] + at + (lo - x0), hi - lo);
		if (unit_untrusted(pm, disk, row, blk))
			atomic_fetch_add(&count_array(a)->untrusted_bytes_rebuilt, hi - lo);
	}
	return ret;
}

/* Do units u and v of this row have the same members lost, in the same way? */
static bool same_loss(const struct piece_mem *pm, int n, uint64_t row, uint32_t u, uint32_t v)
{
	for (int disk = 0; disk < n; disk++) {
		const uint8_t *b;

		if (row >= pm->rows[disk])
			continue;
		b = bad_at(pm, disk, row);
		if (b[u] != b[v])
			return false;
	}
	return true;
}

/* Serve one row of a piece, in segments over which the same members are
 * lost (the whole row at once unless a read failed or met untrusted bytes
 * in it; then runs of units lost alike). */
static int serve_row(struct array *a, uint8_t *buf, uint64_t off, uint64_t end,
		     const struct piece *pc, struct piece_mem *pm, uint64_t row, uint64_t *bad)
{
	uint64_t s = pc->s0 + row;
	struct stripe_map map;
	struct stripe_span sp;
	bool rebuilt = false, failed = false;
	int nbad = 0, nfailed = 0, n = a->geom.raid_disks, ret = 0;

	layout_map_stripe(&a->geom, s, &map);
	stripe_span(a, s, off, end, &sp);
	for (int disk = 0; disk < n; disk++) {
		if (!row_has_bad(pm, disk, row))
			continue;
		nbad++;
		nfailed += memchr(bad_at(pm, disk, row), MEMBER_UNIT_FAILED, pm->nb) != NULL;
	}
	for (uint32_t x0 = pc->c0; x0 < pc->c1;) {
		uint32_t x1 = pc->c1;

		if (nbad) {
			uint32_t u0 = (x0 - pc->c0) / UNIT, u = u0 + 1;

			while (u < pm->nb && same_loss(pm, n, row, u0, u))
				u++;
			x1 = pc->c0 + u * UNIT;
			if (x1 > pc->c1)
				x1 = pc->c1;
		}
		ret = serve_segment(a, buf, off, s, &map, &sp, pm, pc, row, x0, x1, &rebuilt, bad);
		if (ret == -EIO)
			failed = true;
		else if (ret)
			return ret;
		x0 = x1;
	}
	if (rebuilt)
		atomic_fetch_add(&count_array(a)->stripes_rebuilt, 1);
	if (failed)
		return -EIO;
	/* failed reads whose bytes were rebuilt (or not needed) */
	if (nfailed)
		atomic_fetch_add(&count_array(a)->read_errors_recovered, (uint64_t)nfailed);
	return 0;
}

/* Rebuild path for one piece.  Every row is served even when one fails, so
 * that everything before the first unserved offset (*bad) is right. */
static int read_piece(struct array *a, uint8_t *buf, uint64_t off, uint64_t end,
		      const struct piece *pc, uint64_t *bad)
{
	int n = a->geom.raid_disks;
	struct piece_mem *pm;
	uint8_t *mem;
	size_t wins;
	int ret = 0;

	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	pm->w = pc->c1 - pc->c0;
	pm->ns = pc->s1 - pc->s0 + 1;
	pm->nb = (pm->w + UNIT - 1) / UNIT;
	wins = (size_t)pm->w * pm->ns * (size_t)n;
	mem = scratch_get(wins + 2 * (size_t)pm->w + (size_t)n * pm->ns * pm->nb);
	if (!mem) {
		free(pm);
		return -ENOMEM;
	}
	pm->pscratch = mem + wins;
	pm->bad = pm->pscratch + 2 * (size_t)pm->w;
	for (int disk = 0; disk < n; disk++) {
		pm->win[disk] = mem + (size_t)disk * pm->w * pm->ns;
		/* a truncated or rebuilding member has a prefix of the rows */
		pm->rows[disk] = member_rows(a, disk, pc->s0, pm->ns);
		piece_read_member(a, disk, pc, pm);
	}
	for (uint64_t row = 0; row < pm->ns; row++) {
		int r = serve_row(a, buf, off, end, pc, pm, row, bad);

		if (r && r != -EIO) {
			ret = r;
			break;
		}
		if (r)
			ret = r;
	}
	free(pm);
	return ret;
}

/* Add [lo, hi) of the chunk, sector-aligned, to the column list. */
static void cols_add(uint32_t cols[2][2], int *ncols, uint32_t lo, uint32_t hi, uint32_t cb)
{
	lo &= ~511u;
	hi = (uint32_t)(((uint64_t)hi + 511) & ~511ull);
	if (hi > cb)
		hi = cb;
	if (*ncols && lo <= cols[*ncols - 1][1]) {     /* overlaps the previous one */
		if (hi > cols[*ncols - 1][1])
			cols[*ncols - 1][1] = hi;
		return;
	}
	cols[*ncols][0] = lo;
	cols[*ncols][1] = hi;
	(*ncols)++;
}

/* Rebuild path for stripes [s0, s1] (at most a window of rows): cut into
 * pieces of at most colmax columns.  Several rows are read as whole chunks;
 * a single stripe only over the columns asked for.  Returns 0, or -EIO with
 * *bad the first array offset not served (all bytes before it are). */
static int read_rebuild(struct array *a, uint8_t *buf, uint64_t off, uint64_t end,
			uint64_t s0, uint64_t s1, uint32_t colmax, uint64_t *bad,
			const struct volume_observer *obs)
{
	uint32_t cb = a->geom.chunk_bytes;
	uint32_t cols[2][2];
	int ncols = 0, ret = 0;

	if (s0 < s1) {
		cols_add(cols, &ncols, 0, cb, cb);
	} else {
		struct stripe_span sp;

		stripe_span(a, s0, off, end, &sp);
		if (sp.d0 == sp.d1) {
			cols_add(cols, &ncols, sp.lo, sp.hi, cb);
		} else if (sp.d1 == sp.d0 + 1 && sp.hi <= sp.lo) {
			cols_add(cols, &ncols, 0, sp.hi, cb);
			cols_add(cols, &ncols, sp.lo, cb, cb);
		} else {
			cols_add(cols, &ncols, 0, cb, cb);
		}
		if (colmax > ROW_PIECE / (uint32_t)a->geom.raid_disks)
			colmax = ROW_PIECE / (uint32_t)a->geom.raid_disks / FAIL_BLOCK * FAIL_BLOCK;
		if (colmax < ROW_PIECE_MIN)
			colmax = ROW_PIECE_MIN;
	}
	*bad = UINT64_MAX;
	for (int i = 0; i < ncols; i++) {
		for (uint32_t c0 = cols[i][0]; c0 < cols[i][1];) {
			struct piece pc = { s0, s1, c0, cols[i][1] - c0 > colmax ? c0 + colmax : cols[i][1], obs };
			int r = read_piece(a, buf, off, end, &pc, bad);

			if (r && r != -EIO)
				return r;
			if (r)
				ret = r;
			c0 = pc.c1;
		}
	}
	return ret;
}

int array_read(struct array *a, void *vbuf, size_t len, uint64_t off, uint64_t *bad_off)
{
	return array_read_observed(a, vbuf, len, off, bad_off, NULL);
}

static int read_geometry(struct array *a, void *vbuf, size_t len, uint64_t off, uint64_t *bad_off,
			 const struct volume_observer *obs);

/* A run read straight from the members: each chunk with its member. */
static void observe_direct(const struct array *a, const struct volume_observer *obs, uint64_t off, uint64_t len)
{
	uint64_t cb = a->geom.chunk_bytes;

	for (uint64_t end = off + len; off < end;) {
		struct layout_pos pos;
		uint64_t n = cb - off % cb;

		if (n > end - off)
			n = end - off;
		layout_locate(&a->geom, off, &pos);
		obs->served(obs->ctx, off, n, VOLUME_SRC_MEMBER, pos.disk, NULL);
		off += n;
	}
}

/* An array in the middle of a reshape: each side of the reshape position
 * in its own geometry, in array order. */
static int read_reshaping(struct array *a, uint8_t *buf, size_t len, uint64_t off, uint64_t *bad_off,
			  const struct volume_observer *obs)
{
	uint64_t end = off + len, split = a->reshape_bytes;
	struct array *below = a->reshape_backwards ? a->prev : a;
	struct array *above = a->reshape_backwards ? a : a->prev;
	int ret = 0;

	if (off < split)
		ret = read_geometry(below, buf, (size_t)((end < split ? end : split) - off), off, bad_off, obs);
	if (!ret && end > split) {
		uint64_t from = off > split ? off : split;
		ret = read_geometry(above, buf + (from - off), (size_t)(end - from), from, bad_off, obs);
	}
	return ret;
}

int array_read_observed(struct array *a, void *vbuf, size_t len, uint64_t off, uint64_t *bad_off,
			const struct volume_observer *obs)
{
	if (len && a->prev) {
		if (off > a->array_bytes || len > a->array_bytes - off)
			return -EINVAL;
		return read_reshaping(a, vbuf, len, off, bad_off, obs);
	}
	return read_geometry(a, vbuf, len, off, bad_off, obs);
}

/* The rebuild path's window of one member (bytes), for n members. */
static uint64_t rebuild_window(int n)
{
	uint64_t window = REBUILD_WINDOW;

	/* keep the per-thread scratch (window x members) bounded, whatever
	 * the chunk size: big chunks are rebuilt in column pieces */
	if (window * (uint64_t)n > REBUILD_SCRATCH)
		window = REBUILD_SCRATCH / (uint64_t)n / FAIL_BLOCK * FAIL_BLOCK;
	return window;
}

static bool needs_rebuild_scratch(const struct array *a)
{
	if (a->nmissing)
		return true;
	for (int r = 0; r < a->geom.raid_disks; r++)
		if (a->members[r].untrusted_ranges || a->members[r].readable_bytes < a->member_bytes)
			return true;
	return false;
}

size_t array_read_thread_bytes(const struct array *a)
{
	size_t bytes = 0;

	for (const struct array *g = a; g; g = g->prev) {
		int n = g->geom.raid_disks;
		uint64_t w = rebuild_window(n);
		size_t b = g->geom.chunk_bytes <= SINK_MAX_CHUNK ? SINK_BYTES : 0;

		/* read_piece: windows of every member, two parity rows, and
		 * a byte per UNIT of each window (bad-block marks) */
		if (needs_rebuild_scratch(g))
			b += (size_t)(w * (uint64_t)n + 2 * w + w * (uint64_t)n / UNIT + 1);
		if (b > bytes)
			bytes = b;
	}
	return bytes;
}

/* array_read over one geometry (the only one unless a reshape is caught). */
static int read_geometry(struct array *a, void *vbuf, size_t len, uint64_t off, uint64_t *bad_off,
			 const struct volume_observer *obs)
{
	uint8_t *buf = vbuf;
	uint64_t end = off + len;
	uint64_t cb = a->geom.chunk_bytes;
	uint64_t sbytes = cb * (uint64_t)a->k;
	uint64_t window = rebuild_window(a->geom.raid_disks);
	uint64_t rows_per_window;
	uint64_t retry_end = 0;      /* stripes below this go the rebuild way */
	uint64_t bad = 0;
	uint64_t s, s_last;
	int ret = 0;

	rows_per_window = window / cb ? window / cb : 1;
	if (len == 0)
		return 0;
	if (off > a->array_bytes || len > a->array_bytes - off)
		return -EINVAL;
	s = off / sbytes;
	s_last = (end - 1) / sbytes;
	while (s <= s_last) {
		struct stripe_map map;
		struct stripe_span sp;
		bool rebuild;
		uint64_t t = s;
		uint64_t roff, rend;

		/* the longest run of stripes of one kind (direct or rebuild) */
		layout_map_stripe(&a->geom, s, &map);
		stripe_span(a, s, off, end, &sp);
		rebuild = s < retry_end || stripe_needs_rebuild(a, s, &map, &sp);
		while (t < s_last) {
			struct stripe_span sp2;
			bool r2;

			layout_map_stripe(&a->geom, t + 1, &map);
			stripe_span(a, t + 1, off, end, &sp2);
			r2 = t + 1 < retry_end || stripe_needs_rebuild(a, t + 1, &map, &sp2);
			/* a rebuild run takes in the stripes after it that could
			 * go direct: it reads them anyway, and the members then see
			 * window-sized requests instead of a few chunks at a time */
			if (!rebuild && r2)
				break;
			if (rebuild && t + 1 - s >= rows_per_window)
				break;
			t++;
		}
		roff = s * sbytes > off ? s * sbytes : off;
		rend = (t + 1) * sbytes < end ? (t + 1) * sbytes : end;
		if (!rebuild) {
			int failed = -1;

			ret = read_direct(a, buf + (roff - off), roff, rend, s, t, &failed);
			if (ret && failed >= 0) {
				/* a member failed: redo these stripes the rebuild
				 * way, which finds what exactly is lost */
				retry_end = t + 1;
				continue;
			}
			if (!ret && obs)
				observe_direct(a, obs, roff, rend - roff);
		} else {
			ret = read_rebuild(a, buf + (roff - off), roff, rend, s, t, (uint32_t)window, &bad, obs);
		}
		if (ret)
			break;
		s = t + 1;
	}
	if (ret == 0) {
		atomic_fetch_add(&count_array(a)->bytes_served, len);
	} else {
		if (ret == -EIO)
			atomic_fetch_add(&count_array(a)->read_errors_fatal, 1);
		if (bad_off)
			*bad_off = ret == -EIO ? bad : off;
	}
	return ret;
}

void array_locate(const struct array *a, uint64_t off, int *role, uint64_t *moff, const struct array **geom_of)
{
	const struct array *g = a;
	struct layout_pos pos;

	if (a->prev && (a->reshape_backwards ? off < a->reshape_bytes : off >= a->reshape_bytes))
		g = a->prev;
	layout_locate(&g->geom, off, &pos);
	*role = pos.disk;
	*moff = pos.member_off;
	if (geom_of)
		*geom_of = g;
}

/* ---- the array as a volume (volume.h) ---- */

static int array_vol_read(struct volume *v, void *buf, size_t len, uint64_t off, uint64_t *bad_off,
			  const struct volume_observer *obs)
{
	struct array *a = (struct array *)((char *)v - offsetof(struct array, vol));

	return array_read_observed(a, buf, len, off, bad_off, obs);
}

static const struct volume_ops array_volume_ops = { .read = array_vol_read };

void array_volume_init(struct array *a)
{
	a->vol.ops = &array_volume_ops;
	a->vol.size = a->array_bytes;
	a->vol.align = (uint64_t)a->geom.chunk_bytes * (uint64_t)a->k;
}
