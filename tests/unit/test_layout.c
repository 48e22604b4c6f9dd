/* test_layout.c - unit tests for src/layout.c (libcheck).
 *
 * layout.c transcribes the kernel's raid5_compute_sector() formulas.  To
 * catch a slip in that transcription, these tests build every stripe a
 * second way: a small simulation that follows the *definition* of each
 * layout (md(4), mdadm(8) and the comments in raid5.c) - where P starts in
 * stripe 0, which way it moves, where Q sits relative to it, and in which
 * order the data chunks fill the remaining disks - placing P and Q first
 * and then walking the disks.  No formula is shared with layout.c.
 *
 * Self-contained: no fixture files are read.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* libcheck's ck_assert_* log their location on every *passing* call (a
 * write to the runner's pipe), which makes the exhaustive loops below take
 * tens of seconds.  These only call into libcheck when a check fails. */
#define REQUIRE(expr)							\
	do {								\
		if (!(expr))						\
			ck_abort_msg("%s:%d: failed: %s", __FILE__,	\
				     __LINE__, #expr);			\
	} while (0)
#define REQUIRE_MSG(expr, ...)						\
	do {								\
		if (!(expr))						\
			ck_abort_msg(__VA_ARGS__);			\
	} while (0)
#define REQUIRE_EQ(a, b)						\
	do {								\
		long long a_ = (long long)(a), b_ = (long long)(b);	\
		if (a_ != b_)						\
			ck_abort_msg("%s:%d: %s == %s: %lld != %lld",	\
				     __FILE__, __LINE__, #a, #b, a_, b_);	\
	} while (0)

/* ---- the reference model ---- */

enum ref_motion {
	MOVE_LEFT,	/* P moves one disk towards disk 0 each stripe */
	MOVE_RIGHT,	/* P moves one disk towards the last disk */
	FIXED,		/* P never moves (parity-first/-last, RAID4) */
};

enum ref_q {
	Q_NONE,		/* RAID4/5 */
	Q_AFTER_P,	/* Q on the disk after P, wrapping (md RAID6) */
	Q_BEFORE_P,	/* Q on the disk before P, wrapping (ddf-N-continue) */
	Q_LAST,		/* Q fixed on the last disk; P rotates over the rest */
};

enum ref_fill {
	FILL_ASCENDING,		/* data takes the free disks from disk 0 up */
	FILL_AFTER_PARITY,	/* data starts after the parity, wrapping */
};

struct ref_layout {
	int level;
	int layout;
	const char *name;	/* mdadm's canonical name */
	enum ref_motion motion;
	int p0;			/* P's disk in stripe 0; < 0 counts from the
				 * end of the rotation width (-1 = last) */
	enum ref_q q;
	enum ref_fill fill;
	int ddf;		/* Q covers every disk in device order */
};

static const struct ref_layout ref_layouts[] = {
	/* RAID5 */
	{ 5, 0, "left-asymmetric", MOVE_LEFT, -1, Q_NONE, FILL_ASCENDING, 0 },
	{ 5, 1, "right-asymmetric", MOVE_RIGHT, 0, Q_NONE, FILL_ASCENDING, 0 },
	{ 5, 2, "left-symmetric", MOVE_LEFT, -1, Q_NONE, FILL_AFTER_PARITY, 0 },
	{ 5, 3, "right-symmetric", MOVE_RIGHT, 0, Q_NONE, FILL_AFTER_PARITY, 0 },
	{ 5, 4, "parity-first", FIXED, 0, Q_NONE, FILL_ASCENDING, 0 },
	{ 5, 5, "parity-last", FIXED, -1, Q_NONE, FILL_ASCENDING, 0 },
	/* RAID4: one layout, whatever number the superblock carries */
	{ 4, 0, "parity-last", FIXED, -1, Q_NONE, FILL_ASCENDING, 0 },
	{ 4, 5, "parity-last", FIXED, -1, Q_NONE, FILL_ASCENDING, 0 },
	/* RAID6, md layouts */
	{ 6, 0, "left-asymmetric", MOVE_LEFT, -1, Q_AFTER_P, FILL_ASCENDING, 0 },
	{ 6, 1, "right-asymmetric", MOVE_RIGHT, 0, Q_AFTER_P, FILL_ASCENDING, 0 },
	{ 6, 2, "left-symmetric", MOVE_LEFT, -1, Q_AFTER_P, FILL_AFTER_PARITY, 0 },
	{ 6, 3, "right-symmetric", MOVE_RIGHT, 0, Q_AFTER_P, FILL_AFTER_PARITY, 0 },
	{ 6, 4, "parity-first", FIXED, 0, Q_AFTER_P, FILL_ASCENDING, 0 },
	{ 6, 5, "parity-last", FIXED, -2, Q_AFTER_P, FILL_ASCENDING, 0 },
	/* RAID6, ddf layouts: zero-restart starts "P Q D D D" and moves
	 * right; N-restart starts "D D D P Q" and moves left; N-continue
	 * starts "D D D Q P", moves left, data continues after P. */
	{ 6, 8, "ddf-zero-restart", MOVE_RIGHT, 0, Q_AFTER_P, FILL_ASCENDING, 1 },
	{ 6, 9, "ddf-N-restart", MOVE_LEFT, -2, Q_AFTER_P, FILL_ASCENDING, 1 },
	{ 6, 10, "ddf-N-continue", MOVE_LEFT, -1, Q_BEFORE_P, FILL_AFTER_PARITY, 1 },
	/* RAID6 "-6" layouts: the RAID5 layout on all but the last disk */
	{ 6, 16, "left-asymmetric-6", MOVE_LEFT, -1, Q_LAST, FILL_ASCENDING, 0 },
	{ 6, 17, "right-asymmetric-6", MOVE_RIGHT, 0, Q_LAST, FILL_ASCENDING, 0 },
	{ 6, 18, "left-symmetric-6", MOVE_LEFT, -1, Q_LAST, FILL_AFTER_PARITY, 0 },
	{ 6, 19, "right-symmetric-6", MOVE_RIGHT, 0, Q_LAST, FILL_AFTER_PARITY, 0 },
	{ 6, 20, "parity-first-6", FIXED, 0, Q_LAST, FILL_ASCENDING, 0 },
};

enum { ROLE_P = -1, ROLE_Q = -2, ROLE_FREE = -3 };

struct ref_row {
	int p, q;			/* q = -1 without Q */
	int role[LAYOUT_MAX_DISKS];	/* data index, ROLE_P or ROLE_Q */
	int slot[LAYOUT_MAX_DISKS];	/* Q slot or -1 */
	int q_slots;
};

static int next_disk(int disk, int width)
{
	return disk + 1 == width ? 0 : disk + 1;
}

static int prev_disk(int disk, int width)
{
	return disk == 0 ? width - 1 : disk - 1;
}

/* P's disk in `stripe`: start at p0 and walk one step per stripe.  The
 * pattern repeats every `width` stripes, so only stripe mod width steps
 * are walked (that keeps stripes near 2^64 cheap). */
static int ref_parity_disk(const struct ref_layout *L, int width, uint64_t stripe)
{
	int p = L->p0 < 0 ? width + L->p0 : L->p0;
	uint64_t steps = L->motion == FIXED ? 0 : stripe % (uint64_t)width;

	for (uint64_t i = 0; i < steps; i++)
		p = L->motion == MOVE_LEFT ? prev_disk(p, width) : next_disk(p, width);
	return p;
}

static void ref_fill_data(const struct ref_layout *L, int n, int width,
			  int after, struct ref_row *r)
{
	int d = 0, disk;

	if (L->fill == FILL_ASCENDING) {
		for (disk = 0; disk < n; disk++)
			if (r->role[disk] == ROLE_FREE)
				r->role[disk] = d++;
		return;
	}
	disk = next_disk(after, width);
	for (int i = 0; i < width; i++, disk = next_disk(disk, width))
		if (r->role[disk] == ROLE_FREE)
			r->role[disk] = d++;
}

/* Q slots, counted rather than walked: for md layouts a data disk's slot
 * is the number of data disks met strictly between Q and it going forward
 * (raid6_d0 starts right after Q); ddf numbers every disk in order. */
static void ref_slots(const struct ref_layout *L, int n, struct ref_row *r)
{
	int k = n - (L->level == 6 ? 2 : 1);

	for (int x = 0; x < n; x++) {
		int dist_x = (x - r->q - 1 + 2 * n) % n;
		int s = 0;

		r->slot[x] = -1;
		if (r->role[x] < 0)
			continue;
		if (L->level != 6) {
			r->slot[x] = r->role[x];
			continue;
		}
		if (L->ddf) {
			r->slot[x] = x;
			continue;
		}
		for (int y = 0; y < n; y++)
			if (r->role[y] >= 0 && (y - r->q - 1 + 2 * n) % n < dist_x)
				s++;
		r->slot[x] = s;
	}
	r->q_slots = L->ddf ? n : k;
}

static void ref_build(const struct ref_layout *L, int n, uint64_t stripe, struct ref_row *r)
{
	int width = L->q == Q_LAST ? n - 1 : n;
	int after;

	for (int disk = 0; disk < n; disk++)
		r->role[disk] = ROLE_FREE;
	r->q = -1;
	r->p = ref_parity_disk(L, width, stripe);
	r->role[r->p] = ROLE_P;
	after = r->p;
	switch (L->q) {
	case Q_NONE:
		r->q = -1;
		break;
	case Q_AFTER_P:
		r->q = next_disk(r->p, n);
		after = r->q;
		break;
	case Q_BEFORE_P:
		r->q = prev_disk(r->p, n);
		break;
	case Q_LAST:
		r->q = n - 1;
		break;
	}
	if (r->q >= 0)
		r->role[r->q] = ROLE_Q;
	ref_fill_data(L, n, width, after, r);
	ref_slots(L, n, r);
}

static struct layout_geom geom(int level, int layout, int n, uint32_t chunk)
{
	struct layout_geom g = {
		.level = level, .layout = layout, .raid_disks = n, .chunk_bytes = chunk,
	};
	return g;
}

static int min_disks(int level)
{
	return level == 6 ? 4 : 2;
}

/* Every disk holds exactly one of P, Q, data; the tables are inverse. */
static void check_permutation(const struct layout_geom *g, const struct stripe_map *m,
			      uint64_t stripe)
{
	int seen[LAYOUT_MAX_DISKS] = { 0 };
	int slot_seen[LAYOUT_MAX_DISKS] = { 0 };
	int n = g->raid_disks;

	REQUIRE_EQ(m->n, n);
	REQUIRE_EQ(m->k, n - (g->level == 6 ? 2 : 1));
	REQUIRE(m->p_disk >= 0 && m->p_disk < n);
	seen[m->p_disk]++;
	if (g->level == 6) {
		REQUIRE(m->q_disk >= 0 && m->q_disk < n);
		seen[m->q_disk]++;
		REQUIRE_EQ(m->disk_data[m->q_disk], -1);
		REQUIRE_EQ(m->disk_slot[m->q_disk], -1);
	} else {
		REQUIRE_EQ(m->q_disk, -1);
	}
	REQUIRE_EQ(m->disk_data[m->p_disk], -1);
	REQUIRE_EQ(m->disk_slot[m->p_disk], -1);
	for (int d = 0; d < m->k; d++) {
		int disk = m->data_disk[d];

		REQUIRE_MSG(disk >= 0 && disk < n, "stripe %llu d %d -> disk %d",
			      (unsigned long long)stripe, d, disk);
		seen[disk]++;
		REQUIRE_EQ(m->disk_data[disk], d);
		REQUIRE(m->disk_slot[disk] >= 0 && m->disk_slot[disk] < m->q_slots);
		slot_seen[m->disk_slot[disk]]++;
	}
	for (int d = m->k; d < n; d++)
		REQUIRE_EQ(m->data_disk[d], -1);
	for (int disk = 0; disk < n; disk++)
		REQUIRE_MSG(seen[disk] == 1, "stripe %llu disk %d used %d times",
			      (unsigned long long)stripe, disk, seen[disk]);
	for (int s = 0; s < m->q_slots; s++)
		REQUIRE(slot_seen[s] <= 1);
}

static void compare_with_ref(const struct ref_layout *L, int n, uint64_t stripe)
{
	struct layout_geom g = geom(L->level, L->layout, n, 65536);
	struct stripe_map m;
	struct ref_row r;

	REQUIRE_EQ(layout_check(&g, NULL), 0);
	memset(&m, 0x5a, sizeof(m));
	layout_map_stripe(&g, stripe, &m);
	ref_build(L, n, stripe, &r);
	check_permutation(&g, &m, stripe);
	REQUIRE_MSG(m.p_disk == r.p && m.q_disk == r.q,
		      "%s n=%d stripe %llu: P/Q %d/%d, reference %d/%d", L->name, n,
		      (unsigned long long)stripe, m.p_disk, m.q_disk, r.p, r.q);
	REQUIRE_EQ(m.q_slots, r.q_slots);
	for (int disk = 0; disk < n; disk++) {
		int want = r.role[disk] >= 0 ? r.role[disk] : -1;

		REQUIRE_MSG(m.disk_data[disk] == want,
			      "%s n=%d stripe %llu disk %d: data %d, reference %d", L->name,
			      n, (unsigned long long)stripe, disk, m.disk_data[disk], want);
		REQUIRE_MSG(m.disk_slot[disk] == r.slot[disk],
			      "%s n=%d stripe %llu disk %d: slot %d, reference %d", L->name,
			      n, (unsigned long long)stripe, disk, m.disk_slot[disk], r.slot[disk]);
	}
}

/* Stripes far from 0: around 2^40 and at the very top of uint64_t (where
 * a careless "stripe + 1" would wrap). */
static const uint64_t far_stripes[] = {
	(1ull << 40) - 1, 1ull << 40, (1ull << 40) + 1, (1ull << 40) + 2,
	(1ull << 40) + 3, (1ull << 40) + 5, (1ull << 40) + 7, (1ull << 40) + 11,
	(1ull << 40) + 13, 1ull << 41, (1ull << 41) + 17, 1099511627791ull,
	UINT64_MAX - 16, UINT64_MAX - 2, UINT64_MAX - 1, UINT64_MAX,
};

static const int wide_disks[] = { 31, 64, 127, 255, LAYOUT_MAX_DISKS };

START_TEST(test_map_matches_reference)
{
	const struct ref_layout *L = &ref_layouts[_i];

	for (int n = min_disks(L->level); n <= 17; n++) {
		for (uint64_t s = 0; s <= 3 * (uint64_t)n + 1; s++)
			compare_with_ref(L, n, s);
		for (size_t i = 0; i < ARRAY_SIZE(far_stripes); i++)
			compare_with_ref(L, n, far_stripes[i]);
	}
	/* a few wide arrays, up to the limit */
	for (size_t i = 0; i < ARRAY_SIZE(wide_disks); i++) {
		int n = wide_disks[i];

		for (uint64_t s = 0; s < 2 * (uint64_t)n + 1; s += 3)
			compare_with_ref(L, n, s);
		compare_with_ref(L, n, UINT64_MAX);
	}
}
END_TEST

/* ---- hard-coded rows, worked out by hand from the md docs ---- */

struct known_row {
	int level, layout, n;
	uint64_t stripe;
	const char *row;	/* per disk: data index digit, 'P' or 'Q' */
	const char *slots;	/* per disk: Q slot digit or '-'; NULL = skip */
};

static const struct known_row known_rows[] = {
	/* RAID5 left-symmetric n=4: P walks left, data follows P */
	{ 5, 2, 4, 0, "012P", NULL },
	{ 5, 2, 4, 1, "12P0", NULL },
	{ 5, 2, 4, 2, "2P01", NULL },
	{ 5, 2, 4, 3, "P012", NULL },
	{ 5, 2, 4, 4, "012P", NULL },
	/* RAID5 left-asymmetric n=4: data always ascending */
	{ 5, 0, 4, 0, "012P", NULL },
	{ 5, 0, 4, 1, "01P2", NULL },
	{ 5, 0, 4, 3, "P012", NULL },
	/* RAID5 right-asymmetric / right-symmetric n=4 */
	{ 5, 1, 4, 1, "0P12", NULL },
	{ 5, 3, 4, 0, "P012", NULL },
	{ 5, 3, 4, 1, "2P01", NULL },
	{ 5, 4, 4, 7, "P012", NULL },
	{ 5, 5, 4, 7, "012P", NULL },
	{ 4, 0, 4, 9, "012P", NULL },
	/* 2-disk RAID5 is a mirror with the copy alternating */
	{ 5, 2, 2, 0, "0P", NULL },
	{ 5, 2, 2, 1, "P0", NULL },
	/* RAID6 n=5 left-asymmetric, p=2 (md-facts): data on 0,1,4; Q
	 * weighs them in slot order disk4, disk0, disk1. */
	{ 6, 0, 5, 2, "01PQ2", "12--0" },
	/* left-asymmetric with P on the last disk: "Q D D D P" */
	{ 6, 0, 5, 0, "Q012P", "-012-" },
	{ 6, 1, 6, 5, "Q0123P", "-0123-" },
	{ 6, 1, 6, 2, "01PQ23", "23--01" },
	/* RAID6 left-symmetric n=5: slot = data index */
	{ 6, 2, 5, 0, "Q012P", "-012-" },
	{ 6, 2, 5, 1, "012PQ", "012--" },
	{ 6, 2, 5, 2, "12PQ0", "12--0" },
	{ 6, 3, 5, 1, "2PQ01", "2--01" },
	{ 6, 4, 5, 3, "PQ012", "--012" },
	{ 6, 5, 5, 3, "012PQ", "012--" },
	/* ddf: Q covers all n disks in device order */
	{ 6, 8, 5, 0, "PQ012", "--234" },
	{ 6, 8, 5, 4, "Q012P", "-123-" },
	{ 6, 9, 5, 0, "012PQ", "012--" },
	{ 6, 9, 5, 1, "01PQ2", "01--4" },
	{ 6, 9, 5, 4, "Q012P", "-123-" },
	{ 6, 10, 5, 0, "012QP", "012--" },
	{ 6, 10, 5, 1, "12QP0", "01--4" },
	{ 6, 10, 5, 4, "P012Q", "-123-" },
	/* "-6": RAID5 on disks 0..n-2, Q last; slots follow disk order */
	{ 6, 16, 5, 1, "01P2Q", "01-2-" },
	{ 6, 17, 5, 1, "0P12Q", "0-12-" },
	{ 6, 18, 5, 1, "12P0Q", "01-2-" },
	{ 6, 19, 5, 1, "2P01Q", "0-12-" },
	{ 6, 20, 5, 6, "P012Q", "-012-" },
};

START_TEST(test_known_rows)
{
	const struct known_row *kr = &known_rows[_i];
	struct layout_geom g = geom(kr->level, kr->layout, kr->n, 4096);
	struct stripe_map m;

	ck_assert_int_eq(layout_check(&g, NULL), 0);
	layout_map_stripe(&g, kr->stripe, &m);
	for (int disk = 0; disk < kr->n; disk++) {
		char c = kr->row[disk];

		if (c == 'P')
			ck_assert_int_eq(m.p_disk, disk);
		else if (c == 'Q')
			ck_assert_int_eq(m.q_disk, disk);
		else
			ck_assert_msg(m.disk_data[disk] == c - '0',
				      "level %d layout %d stripe %llu disk %d: %d, want %c",
				      kr->level, kr->layout, (unsigned long long)kr->stripe,
				      disk, m.disk_data[disk], c);
		if (kr->slots != NULL) {
			int want = kr->slots[disk] == '-' ? -1 : kr->slots[disk] - '0';

			ck_assert_msg(m.disk_slot[disk] == want,
				      "level %d layout %d stripe %llu disk %d: slot %d, want %d",
				      kr->level, kr->layout, (unsigned long long)kr->stripe,
				      disk, m.disk_slot[disk], want);
		}
	}
	ck_assert_int_eq(m.q_slots, kr->layout >= 8 && kr->layout <= 10 ? kr->n : m.k);
}
END_TEST

/* ---- layout_locate ---- */

static void check_locate_one(const struct layout_geom *g, uint64_t off)
{
	struct layout_pos pos;
	struct stripe_map m;
	uint64_t k = (uint64_t)layout_data_disks(g);
	uint64_t chunk = g->chunk_bytes;

	memset(&pos, 0x5a, sizeof(pos));
	layout_locate(g, off, &pos);
	REQUIRE(pos.chunk_off < chunk);
	REQUIRE(pos.data_index >= 0 && (uint64_t)pos.data_index < k);
	/* round trip: array chunk number = stripe * k + d */
	REQUIRE_MSG((pos.stripe * k + (uint64_t)pos.data_index) * chunk + pos.chunk_off == off,
		      "offset %llu does not round-trip", (unsigned long long)off);
	REQUIRE(pos.member_off == pos.stripe * chunk + pos.chunk_off);
	layout_map_stripe(g, pos.stripe, &m);
	REQUIRE_EQ(pos.disk, m.data_disk[pos.data_index]);
}

static const uint32_t locate_chunks[] = { 4096, 65536, 524288 };

START_TEST(test_locate_roundtrip)
{
	const struct ref_layout *L = &ref_layouts[_i];

	for (size_t c = 0; c < ARRAY_SIZE(locate_chunks); c++) {
		uint32_t chunk = locate_chunks[c];
		const uint64_t in_chunk[] = { 0, 1, 511, 512, 513, chunk / 2 + 7,
					      chunk - 512, chunk - 1 };

		for (int n = min_disks(L->level); n <= 9; n++) {
			struct layout_geom g = geom(L->level, L->layout, n, chunk);
			uint64_t k = (uint64_t)layout_data_disks(&g);
			/* keep offsets below 2^64 for the biggest chunk */
			uint64_t far = chunk > 65536 ? 1ull << 36 : 1ull << 40;

			for (uint64_t a = 0; a < 3 * n * k + 2; a++)
				for (size_t i = 0; i < ARRAY_SIZE(in_chunk); i++)
					check_locate_one(&g, a * chunk + in_chunk[i]);
			for (uint64_t a = far * k - 3; a < far * k + 2 * n * k; a++)
				for (size_t i = 0; i < ARRAY_SIZE(in_chunk); i++)
					check_locate_one(&g, a * chunk + in_chunk[i]);
		}
	}
}
END_TEST

/* Walking every byte chunk-wise must visit each (disk, member chunk) of
 * the data area exactly once: no two array chunks share a place. */
START_TEST(test_locate_injective)
{
	const struct ref_layout *L = &ref_layouts[_i];
	enum { STRIPES = 40 };

	for (int n = min_disks(L->level); n <= 12; n++) {
		struct layout_geom g = geom(L->level, L->layout, n, 4096);
		int k = layout_data_disks(&g);
		static unsigned char used[STRIPES][LAYOUT_MAX_DISKS];

		memset(used, 0, sizeof(used));
		for (uint64_t a = 0; a < (uint64_t)STRIPES * k; a++) {
			struct layout_pos pos;

			layout_locate(&g, a * 4096 + 100, &pos);
			REQUIRE(pos.stripe < STRIPES);
			REQUIRE_EQ(pos.member_off, pos.stripe * 4096 + 100);
			REQUIRE_EQ(used[pos.stripe][pos.disk], 0);
			used[pos.stripe][pos.disk] = 1;
		}
		for (int s = 0; s < STRIPES; s++) {
			int count = 0;

			for (int d = 0; d < n; d++)
				count += used[s][d];
			REQUIRE_EQ(count, k);
		}
	}
}
END_TEST

/* ---- layout_check ---- */

START_TEST(test_check_accepts_valid)
{
	const struct ref_layout *L = &ref_layouts[_i];
	const uint32_t chunks[] = { 512, 4096, 65536, 524288, 1u << 30 };
	const char *why = "untouched";

	for (int n = min_disks(L->level); n <= LAYOUT_MAX_DISKS; n++) {
		for (size_t c = 0; c < ARRAY_SIZE(chunks); c++) {
			struct layout_geom g = geom(L->level, L->layout, n, chunks[c]);

			REQUIRE_EQ(layout_check(&g, &why), 0);
			REQUIRE_EQ(layout_data_disks(&g), n - (L->level == 6 ? 2 : 1));
		}
	}
}
END_TEST

static void expect_reject(int level, int layout, int n, uint32_t chunk, const char *why_part)
{
	struct layout_geom g = geom(level, layout, n, chunk);
	const char *why = NULL;

	ck_assert_int_eq(layout_check(&g, &why), -EINVAL);
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(why_part == NULL || strstr(why, why_part) != NULL,
		      "level %d layout %d n %d chunk %u: \"%s\" lacks \"%s\"",
		      level, layout, n, chunk, why, why_part);
	ck_assert_int_eq(layout_check(&g, NULL), -EINVAL);
}

START_TEST(test_check_rejects_bad)
{
	/* levels */
	expect_reject(0, 0, 4, 65536, "level");
	expect_reject(1, 0, 4, 65536, "level");
	expect_reject(10, 2, 4, 65536, "level");
	expect_reject(-5, 2, 4, 65536, "level");
	/* layouts per level */
	for (int l = -3; l < 40; l++) {
		int ok5 = l >= 0 && l <= 5;
		int ok6 = ok5 || (l >= 8 && l <= 10) || (l >= 16 && l <= 20);

		if (!ok5)
			expect_reject(5, l, 4, 65536, "layout");
		if (!ok6)
			expect_reject(6, l, 5, 65536, "layout");
	}
	expect_reject(5, 0x7fffffff, 4, 65536, "layout");
	/* disks */
	expect_reject(5, 2, 1, 65536, "disks");
	expect_reject(5, 2, 0, 65536, "disks");
	expect_reject(5, 2, -1, 65536, "disks");
	expect_reject(4, 0, 1, 65536, "disks");
	expect_reject(6, 2, 3, 65536, "disks");
	expect_reject(6, 16, 2, 65536, "disks");
	expect_reject(5, 2, LAYOUT_MAX_DISKS + 1, 65536, "disks");
	expect_reject(6, 2, LAYOUT_MAX_DISKS + 1, 65536, "disks");
	/* chunk sizes */
	expect_reject(5, 2, 4, 0, "chunk");
	expect_reject(5, 2, 4, 3, "power of two");
	expect_reject(5, 2, 4, 4097, "power of two");
	expect_reject(5, 2, 4, 3 * 4096, "power of two");
	expect_reject(6, 2, 5, 65536 + 512, "power of two");
	expect_reject(5, 2, 4, 0xffffffffu, "power of two");
	expect_reject(5, 2, 4, 256, "chunk");
	expect_reject(5, 2, 4, 1, "chunk");
	expect_reject(5, 2, 4, 1u << 31, "chunk");
	/* NULL geometry */
	ck_assert_int_eq(layout_check(NULL, NULL), -EINVAL);
}
END_TEST

START_TEST(test_check_raid4_any_layout)
{
	/* md writes 0 for RAID4; takeover from RAID5 leaves 5.  Whatever it
	 * is, RAID4 maps parity-last. */
	const int layouts[] = { 0, 1, 2, 5, 17, 99 };

	for (size_t i = 0; i < ARRAY_SIZE(layouts); i++) {
		struct layout_geom g = geom(4, layouts[i], 5, 65536);
		struct stripe_map m;

		ck_assert_int_eq(layout_check(&g, NULL), 0);
		for (uint64_t s = 0; s < 12; s++) {
			layout_map_stripe(&g, s, &m);
			ck_assert_int_eq(m.p_disk, 4);
			ck_assert_int_eq(m.q_disk, -1);
			for (int d = 0; d < 4; d++)
				ck_assert_int_eq(m.data_disk[d], d);
		}
	}
}
END_TEST

/* ---- names ---- */

START_TEST(test_name_roundtrip)
{
	const struct ref_layout *L = &ref_layouts[_i];
	int layout = -1;
	char num[16];

	ck_assert_str_eq(layout_name(L->level, L->layout), L->name);
	ck_assert_int_eq(layout_from_name(L->level, L->name, &layout), 0);
	if (L->level == 4)
		ck_assert_int_eq(layout, LAYOUT_PARITY_N);
	else
		ck_assert_int_eq(layout, L->layout);
	snprintf(num, sizeof(num), "%d", L->layout);
	layout = -1;
	ck_assert_int_eq(layout_from_name(L->level, num, &layout), 0);
	ck_assert_int_eq(layout, L->layout);
}
END_TEST

static int from_name(int level, const char *name)
{
	int layout = -12345;
	int err = layout_from_name(level, name, &layout);

	if (err != 0) {
		ck_assert_int_eq(err, -EINVAL);
		ck_assert_int_eq(layout, -12345);	/* untouched on failure */
		return err;
	}
	return layout;
}

START_TEST(test_name_aliases)
{
	ck_assert_int_eq(from_name(5, "la"), 0);
	ck_assert_int_eq(from_name(5, "ra"), 1);
	ck_assert_int_eq(from_name(5, "ls"), 2);
	ck_assert_int_eq(from_name(5, "rs"), 3);
	ck_assert_int_eq(from_name(5, "default"), 2);
	ck_assert_int_eq(from_name(6, "la"), 0);
	ck_assert_int_eq(from_name(6, "rs"), 3);
	ck_assert_int_eq(from_name(6, "default"), 2);
	ck_assert_int_eq(from_name(6, "ddf-zero-restart"), 8);
	ck_assert_int_eq(from_name(6, "ddf-N-restart"), 9);
	ck_assert_int_eq(from_name(6, "ddf-N-continue"), 10);
	ck_assert_int_eq(from_name(6, "DDF-n-Continue"), 10);
	ck_assert_int_eq(from_name(6, "Left-Symmetric"), 2);
	/* mdadm's r5layout maps the ddf names to their RAID5 equivalents */
	ck_assert_int_eq(from_name(5, "ddf-zero-restart"), 1);
	ck_assert_int_eq(from_name(5, "ddf-N-restart"), 0);
	ck_assert_int_eq(from_name(5, "ddf-N-continue"), 2);
	/* RAID4 */
	ck_assert_int_eq(from_name(4, "parity-last"), 5);
	ck_assert_int_eq(from_name(4, "default"), 5);
	ck_assert_int_eq(from_name(4, "5"), 5);
	ck_assert_int_eq(from_name(4, "0"), 0);
	ck_assert_str_eq(layout_name(4, 0), "parity-last");
	ck_assert_str_eq(layout_name(4, 5), "parity-last");
	/* numbers */
	ck_assert_int_eq(from_name(5, "0"), 0);
	ck_assert_int_eq(from_name(5, "05"), 5);
	ck_assert_int_eq(from_name(6, "20"), 20);
	ck_assert_int_eq(from_name(6, "9"), 9);
}
END_TEST

START_TEST(test_name_rejects)
{
	int layout;
	static const char *const bad5[] = {
		"", " ", "left", "left-symmetric-6", "parity-first-6", "6", "8", "16",
		"-1", "+2", " 2", "2 ", "2x", "0x2", "99999999999999999999", "ls ",
		"left_symmetric",
	};
	static const char *const bad6[] = {
		"", "6", "7", "11", "15", "21", "-0", "left-symmetric-7", "ddf",
	};
	static const char *const bad4[] = {
		"left-symmetric", "parity-first", "ls", "2", "1", "4", "6",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad5); i++)
		ck_assert_msg(from_name(5, bad5[i]) == -EINVAL, "\"%s\" accepted", bad5[i]);
	for (size_t i = 0; i < ARRAY_SIZE(bad6); i++)
		ck_assert_msg(from_name(6, bad6[i]) == -EINVAL, "\"%s\" accepted", bad6[i]);
	for (size_t i = 0; i < ARRAY_SIZE(bad4); i++)
		ck_assert_msg(from_name(4, bad4[i]) == -EINVAL, "\"%s\" accepted", bad4[i]);
	ck_assert_int_eq(from_name(1, "left-symmetric"), -EINVAL);
	ck_assert_int_eq(from_name(10, "2"), -EINVAL);
	ck_assert_int_eq(layout_from_name(5, NULL, &layout), -EINVAL);
	ck_assert_int_eq(layout_from_name(5, "ls", NULL), -EINVAL);
	ck_assert_str_eq(layout_name(5, 8), "unknown");
	ck_assert_str_eq(layout_name(5, 16), "unknown");
	ck_assert_str_eq(layout_name(6, 6), "unknown");
	ck_assert_str_eq(layout_name(6, -1), "unknown");
	ck_assert_str_eq(layout_name(0, 2), "unknown");
	ck_assert_str_eq(layout_name(7, 2), "unknown");
}
END_TEST

/* Every valid number of a level has a name, and that name parses back. */
START_TEST(test_name_every_number)
{
	for (int level = 5; level <= 6; level++) {
		for (int l = -2; l < 64; l++) {
			struct layout_geom g = geom(level, l, 6, 65536);
			const char *name = layout_name(level, l);
			int valid = layout_check(&g, NULL) == 0;

			ck_assert_ptr_nonnull(name);
			ck_assert_int_eq(strcmp(name, "unknown") != 0, valid);
			if (valid)
				ck_assert_int_eq(from_name(level, name), l);
		}
	}
}
END_TEST

static Suite *layout_suite(void)
{
	Suite *s = suite_create("layout");
	TCase *map = tcase_create("map");
	TCase *locate = tcase_create("locate");
	TCase *check = tcase_create("check");
	TCase *names = tcase_create("names");
	int nref = (int)ARRAY_SIZE(ref_layouts);

	tcase_set_timeout(map, 60);
	tcase_add_loop_test(map, test_map_matches_reference, 0, nref);
	tcase_add_loop_test(map, test_known_rows, 0, (int)ARRAY_SIZE(known_rows));
	suite_add_tcase(s, map);

	tcase_set_timeout(locate, 60);
	tcase_add_loop_test(locate, test_locate_roundtrip, 0, nref);
	tcase_add_loop_test(locate, test_locate_injective, 0, nref);
	suite_add_tcase(s, locate);

	tcase_add_loop_test(check, test_check_accepts_valid, 0, nref);
	tcase_add_test(check, test_check_rejects_bad);
	tcase_add_test(check, test_check_raid4_any_layout);
	suite_add_tcase(s, check);

	tcase_add_loop_test(names, test_name_roundtrip, 0, nref);
	tcase_add_test(names, test_name_aliases);
	tcase_add_test(names, test_name_rejects);
	tcase_add_test(names, test_name_every_number);
	suite_add_tcase(s, names);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(layout_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
