/* test_scrub.c - the scrub engine on small arrays built here, for every md
 * RAID5 and RAID6 layout: located corruption (kind, member, byte range,
 * array offset), repair back to the healthy images, rebuild of every role,
 * members readable only in part; and the control side the mount will use:
 * yielding to foreground readers (but never below speed_min), speed_max,
 * pause, stop, limits changed while running.
 *
 * The arrays are written with layout.c and parity.c (tested on their own);
 * the engine is checked against the images kept in memory.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "parity.h"
#include "scrub.h"
#include "util.h"
#include "xxh64.h"

#define MAXN 8
#define MAXMM 32

struct fixture {
	char dir[64];
	char path[MAXN][96];
	const char *paths[MAXN];
	struct layout_geom g;
	int n, k;
	uint64_t stripes, member_bytes;
	uint8_t *img[MAXN];          /* the healthy member images */
};

static uint64_t rng = 88172645463325252ull;

static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)rng;
}

static void write_file(const char *path, const uint8_t *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void fx_make(struct fixture *f, int level, int layout, int n, uint32_t chunk, uint64_t stripes)
{
	struct stripe_map map;
	uint8_t *slots[LAYOUT_MAX_DISKS];

	memset(f, 0, sizeof(*f));
	f->g = (struct layout_geom){ .level = level, .layout = layout, .raid_disks = n, .chunk_bytes = chunk };
	ck_assert_int_eq(layout_check(&f->g, NULL), 0);
	f->n = n;
	f->k = layout_data_disks(&f->g);
	f->stripes = stripes;
	f->member_bytes = stripes * chunk;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_scrub.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	for (int d = 0; d < n; d++) {
		f->img[d] = xaligned_alloc(f->member_bytes);
		for (uint64_t i = 0; i < f->member_bytes; i++)
			f->img[d][i] = rnd8();
	}
	for (uint64_t s = 0; s < stripes; s++) {
		size_t o = s * chunk;
		layout_map_stripe(&f->g, s, &map);
		if (level == 6) {
			for (int i = 0; i < map.q_slots; i++)
				slots[i] = NULL;
			for (int d = 0; d < n; d++)
				if (map.disk_slot[d] >= 0)
					slots[map.disk_slot[d]] = f->img[d] + o;
			parity_gen_pq(map.q_slots, chunk, slots, f->img[map.p_disk] + o, f->img[map.q_disk] + o);
		} else {
			for (int d = 0; d < map.k; d++)
				slots[d] = f->img[map.data_disk[d]] + o;
			parity_gen_p(map.k, chunk, slots, f->img[map.p_disk] + o);
		}
	}
	for (int d = 0; d < n; d++) {
		snprintf(f->path[d], sizeof(f->path[d]), "%s/m%d.img", f->dir, d);
		f->paths[d] = f->path[d];
		write_file(f->path[d], f->img[d], f->member_bytes);
	}
}

/* Assemble with manual geometry; roles listed in `absent` are left out. */
static struct array *fx_open(struct fixture *f, int flags, int absent)
{
	struct assemble_opts o = { .g.manual = true, .open_flags = flags };
	struct array *a = NULL;
	char err[512] = "";

	o.g.geom = f->g;
	o.g.member_bytes = f->member_bytes;
	o.g.norder = f->n;
	for (int d = 0; d < f->n; d++)
		o.g.order[d] = d == absent ? -1 : d;
	o.g.paths = (const char **)f->paths;
	o.g.npaths = f->n;
	ck_assert_msg(array_assemble(&o, &a, err, sizeof(err)) == 0, "%s", err);
	return a;
}

static void fx_corrupt(struct fixture *f, int disk, uint64_t off, size_t len)
{
	uint8_t buf[8192];
	int fd = open(f->path[disk], O_RDWR);

	ck_assert_uint_le(len, sizeof(buf));
	ck_assert_int_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		buf[i] ^= 0xa5;
	ck_assert_int_eq(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static bool fx_same(struct fixture *f, int disk)
{
	uint8_t *buf = malloc(f->member_bytes);
	int fd = open(f->path[disk], O_RDONLY);
	bool same;

	ck_assert_int_eq(pread(fd, buf, f->member_bytes, 0), (ssize_t)f->member_bytes);
	close(fd);
	same = !memcmp(buf, f->img[disk], f->member_bytes);
	free(buf);
	return same;
}

static void fx_free(struct fixture *f)
{
	char extra[128];

	for (int d = 0; d < f->n; d++) {
		unlink(f->path[d]);
		free(f->img[d]);
	}
	snprintf(extra, sizeof(extra), "%s/out.img", f->dir);
	unlink(extra);
	rmdir(f->dir);
}

/* ---- collecting what the engine reports ---- */

struct seen {
	int n;
	struct scrub_mismatch m[MAXMM];
	int writes;
	uint64_t covered;       /* stripes reported by on_batch, in order */
	bool in_order;
};

static void on_mm(void *arg, const struct scrub_mismatch *m)
{
	struct seen *s = arg;

	if (s->n < MAXMM)
		s->m[s->n++] = *m;
}

static void on_wr(void *arg, const struct scrub_write *w)
{
	struct seen *s = arg;

	(void)w;
	s->writes++;
}

static void on_batch(void *arg, uint64_t s0, uint64_t s1)
{
	struct seen *s = arg;

	if (s0 != s->covered)
		s->in_order = false;
	s->covered = s1;
}

/* The foreground readers the scrubs yield to (the mount's gauge, here set
 * by the tests). */
static struct fg_gauge fg;

static struct scrub_opts opts_for(enum scrub_mode mode, struct seen *seen)
{
	struct scrub_opts o = { .mode = mode, .on_mismatch = on_mm, .on_write = on_wr, .on_batch = on_batch,
				.arg = seen, .fg = &fg };

	atomic_store(&fg.active, 0);
	atomic_store(&fg.last_ns, 0);
	memset(seen, 0, sizeof(*seen));
	seen->in_order = true;
	return o;
}

static int run(struct array *a, struct scrub_opts *o)
{
	struct scrub *s = NULL;
	char err[512] = "";
	int ret;

	ck_assert_msg(scrub_create(a, o, &s, err, sizeof(err)) == 0, "%s", err);
	ret = scrub_run(s);
	scrub_free(s);
	return ret;
}

/* ---- every layout: locate, repair ---- */

static const int r6_layouts[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20 };
static const int r5_layouts[] = { 0, 1, 2, 3, 4, 5 };
#define CHUNK 8192u
#define STRIPES 24u

static void layout_case(int i, int *level, int *layout, int *n)
{
	if (i < (int)ARRAY_LEN(r6_layouts)) {
		*level = 6;
		*layout = r6_layouts[i];
		*n = 6;
	} else {
		*level = 5;
		*layout = r5_layouts[i - (int)ARRAY_LEN(r6_layouts)];
		*n = 5;
	}
}

START_TEST(test_locate_and_repair)
{
	struct fixture f;
	struct stripe_map m3, m7, m11;
	struct scrub_opts o;
	struct seen seen;
	struct array *a;
	int level, layout, n, want;

	layout_case(_i, &level, &layout, &n);
	fx_make(&f, level, layout, n, CHUNK, STRIPES);
	layout_map_stripe(&f.g, 3, &m3);
	layout_map_stripe(&f.g, 7, &m7);
	layout_map_stripe(&f.g, 11, &m11);
	fx_corrupt(&f, m3.data_disk[1], 3 * CHUNK + 100, 5);      /* data */
	fx_corrupt(&f, m7.p_disk, 7 * CHUNK + 5000, 2);           /* P */
	if (level == 6)
		fx_corrupt(&f, m11.q_disk, 11 * CHUNK + CHUNK - 1, 1);     /* Q, the last byte */

	a = fx_open(&f, SOURCE_READ, -1);
	o = opts_for(SCRUB_CHECK, &seen);
	o.request_bytes = 3 * CHUNK;      /* batches of 3 rows; 24 stripes = 8 batches */
	ck_assert_int_eq(run(a, &o), 0);
	ck_assert(seen.in_order && seen.covered == STRIPES);
	want = level == 6 ? 3 : 2;
	ck_assert_int_eq(seen.n, want);
	/* stripe 3 */
	ck_assert_uint_eq(seen.m[0].stripe, 3);
	ck_assert_uint_eq(seen.m[0].chunk_off, 100);
	ck_assert_uint_eq(seen.m[0].len, 5);
	ck_assert_uint_eq(seen.m[0].image_off, 3 * CHUNK + 100);
	if (level == 6) {
		ck_assert_int_eq(seen.m[0].kind, SCRUB_KIND_DATA);
		ck_assert_int_eq(seen.m[0].role, m3.data_disk[1]);
		ck_assert_uint_eq(seen.m[0].array_off, (3 * (uint64_t)f.k + 1) * CHUNK + 100);
	} else {
		ck_assert_int_eq(seen.m[0].kind, SCRUB_KIND_P);    /* RAID5 cannot tell: md blames P */
		ck_assert_int_eq(seen.m[0].role, m3.p_disk);
	}
	/* stripe 7: P */
	ck_assert_uint_eq(seen.m[1].stripe, 7);
	ck_assert_int_eq(seen.m[1].kind, SCRUB_KIND_P);
	ck_assert_int_eq(seen.m[1].role, m7.p_disk);
	ck_assert_uint_eq(seen.m[1].chunk_off, 5000);
	ck_assert_uint_eq(seen.m[1].len, 2);
	if (level == 6) {
		ck_assert_uint_eq(seen.m[2].stripe, 11);
		ck_assert_int_eq(seen.m[2].kind, SCRUB_KIND_Q);
		ck_assert_int_eq(seen.m[2].role, m11.q_disk);
		ck_assert_uint_eq(seen.m[2].chunk_off, CHUNK - 1);
		ck_assert_uint_eq(seen.m[2].len, 1);
	}
	array_free(a);

	/* repair: RAID6 back to the healthy images; RAID5 consistent again */
	a = fx_open(&f, SOURCE_WRITE, -1);
	o = opts_for(SCRUB_REPAIR, &seen);
	ck_assert_int_eq(run(a, &o), 0);
	ck_assert_int_eq(seen.n, want);
	ck_assert_int_eq(seen.writes, want);
	array_free(a);
	/* (RAID5: stripe 3's data stays wrong and its P now matches it) */
	for (int d = 0; d < n; d++)
		if (level == 6 || (d != m3.data_disk[1] && d != m3.p_disk))
			ck_assert_msg(fx_same(&f, d), "layout %d: member %d differs after repair", layout, d);
	a = fx_open(&f, SOURCE_READ, -1);
	o = opts_for(SCRUB_CHECK, &seen);
	ck_assert_int_eq(run(a, &o), 0);
	ck_assert_int_eq(seen.n, 0);
	array_free(a);
	fx_free(&f);
}
END_TEST

/* ---- every layout: rebuild every role, with and without another missing ---- */

START_TEST(test_rebuild_every_role)
{
	struct fixture f;
	struct scrub_opts o;
	struct seen seen;
	char out[160], err[256];
	int level, layout, n;

	layout_case(_i, &level, &layout, &n);
	fx_make(&f, level, layout, n, CHUNK, STRIPES);
	snprintf(out, sizeof(out), "%s/out.img", f.dir);
	for (int K = 0; K < n; K++) {
		/* RAID6: also with the next role missing (two erasures) */
		for (int absent = -1; absent < (level == 6 ? 1 : 0); absent++) {
			int gone = absent < 0 ? -1 : (K + 1) % n;
			struct array *a = fx_open(&f, SOURCE_READ, gone);
			struct source *dst = NULL;
			uint8_t *buf = malloc(f.member_bytes);

			int ofd = open(out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

			ck_assert_int_ge(ofd, 0);
			ck_assert_int_eq(source_wrap_fd(ofd, out, &dst, err, sizeof(err)), 0);
			close(ofd);
			ck_assert_int_eq(dst->ops->truncate(dst, f.member_bytes), 0);
			o = opts_for(SCRUB_REBUILD, &seen);
			o.rebuild_role = K;
			o.rebuild_out = dst;
			o.rebuild_sparse = true;
			o.request_bytes = 5 * CHUNK;     /* a last, shorter batch */
			ck_assert_int_eq(run(a, &o), 0);
			ck_assert_uint_eq(seen.covered, STRIPES);
			ck_assert_int_eq(source_pread(dst, buf, f.member_bytes, 0), 0);
			ck_assert_msg(!memcmp(buf, f.img[K], f.member_bytes), "RAID%d layout %d role %d (missing %d)",
				      level, layout, K, gone);
			free(buf);
			source_close(dst);
			array_free(a);
		}
	}
	fx_free(&f);
}
END_TEST

/* ---- batch sizes: a short tail is shared, never a small batch ---- */

struct sizes {
	uint64_t next, min, max, batches;
	bool in_order;
};

static void on_size(void *arg, uint64_t s0, uint64_t s1)
{
	struct sizes *z = arg;

	if (s0 != z->next)
		z->in_order = false;
	z->next = s1;
	if (s1 - s0 < z->min)
		z->min = s1 - s0;
	if (s1 - s0 > z->max)
		z->max = s1 - s0;
	z->batches++;
}

START_TEST(test_batch_sizes)
{
	struct fixture f;
	struct array *a;
	const uint64_t rows = 4;       /* request_bytes 4 chunks: batches of 4 rows */

	fx_make(&f, 6, 2, 5, CHUNK, 64);
	a = fx_open(&f, SOURCE_READ, -1);
	for (uint64_t len = 1; len <= 3 * rows + 3; len++) {
		struct sizes z = { .next = 10, .min = UINT64_MAX, .in_order = true };
		struct scrub_opts o = { .mode = SCRUB_CHECK, .on_batch = on_size, .arg = &z,
					.stripe_begin = 10, .stripe_end = 10 + len, .request_bytes = rows * CHUNK };
		struct scrub *s = NULL;
		char err[256];

		ck_assert_int_eq(scrub_create(a, &o, &s, err, sizeof(err)), 0);
		ck_assert_int_eq(scrub_run(s), 0);
		scrub_free(s);
		ck_assert_msg(z.in_order && z.next == 10 + len, "%" PRIu64 " stripes: covered to %" PRIu64,
			      len, z.next);
		ck_assert_msg(z.max <= rows, "%" PRIu64 " stripes: a batch of %" PRIu64 " rows", len, z.max);
		/* no batch under half of one, unless the range is */
		ck_assert_msg(z.min >= (len < rows / 2 ? len : rows / 2), "%" PRIu64 " stripes: a batch of %" PRIu64
			      " rows", len, z.min);
		ck_assert_uint_eq(z.batches, (len + rows - 1) / rows);
	}
	array_free(a);
	fx_free(&f);
}
END_TEST

/* ---- chunks larger than a request: column slices ---- */

START_TEST(test_column_slices)
{
	struct fixture f;
	struct stripe_map m;
	struct scrub_opts o;
	struct seen seen;
	struct array *a;

	fx_make(&f, 6, 2, 5, 64 * 1024, 6);
	layout_map_stripe(&f.g, 4, &m);
	fx_corrupt(&f, m.data_disk[2], 4 * 65536 + 40000, 3);
	a = fx_open(&f, SOURCE_READ, -1);
	o = opts_for(SCRUB_CHECK, &seen);
	o.request_bytes = 16384;      /* 4 slices per chunk */
	ck_assert_int_eq(run(a, &o), 0);
	ck_assert(seen.in_order && seen.covered == 6);
	ck_assert_int_eq(seen.n, 1);
	ck_assert_int_eq(seen.m[0].kind, SCRUB_KIND_DATA);
	ck_assert_int_eq(seen.m[0].role, m.data_disk[2]);
	ck_assert_uint_eq(seen.m[0].chunk_off, 40000);
	ck_assert_uint_eq(seen.m[0].len, 3);
	array_free(a);
	fx_free(&f);
}
END_TEST

/* ---- members readable in part: RAID6 checks degraded, RAID5 cannot ---- */

START_TEST(test_truncated_member)
{
	struct fixture f;
	struct scrub_opts o;
	struct seen seen;
	struct scrub *s;
	struct scrub_progress p;
	struct array *a;
	char err[256];
	int level = _i ? 5 : 6, n = _i ? 4 : 5;

	fx_make(&f, level, 2, n, CHUNK, 16);
	ck_assert_int_eq(truncate(f.path[1], 12 * CHUNK), 0);   /* rows 12-15 of role 1 gone */
	a = fx_open(&f, SOURCE_READ, -1);
	o = opts_for(SCRUB_CHECK, &seen);
	ck_assert_int_eq(scrub_create(a, &o, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(scrub_run(s), 0);
	scrub_get_progress(s, &p);
	ck_assert_int_eq(seen.n, 0);
	ck_assert_uint_eq(p.stripes_unchecked, level == 6 ? 0 : 4);
	ck_assert_uint_eq(p.read_errors, 0);
	scrub_free(s);
	array_free(a);
	/* repair refuses: role 1 is only partly there */
	a = fx_open(&f, SOURCE_WRITE, -1);
	o = opts_for(SCRUB_REPAIR, &seen);
	ck_assert_int_eq(scrub_create(a, &o, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "readable only below"));
	array_free(a);
	fx_free(&f);
}
END_TEST

/* ---- repair refuses a member forced in although stale ---- */

START_TEST(test_repair_refuses_stale)
{
	struct fixture f;
	struct scrub_opts o;
	struct seen seen;
	struct scrub *s = NULL;
	struct array *a;
	char err[512] = "";

	fx_make(&f, 6, 2, 5, CHUNK, 8);
	a = fx_open(&f, SOURCE_WRITE, -1);
	/* as assembly leaves it after --force: in use, two events behind */
	a->events = 10;
	for (int d = 0; d < f.n; d++) {
		a->members[d].has_meta = true;
		a->members[d].meta.events = d == 3 ? 8 : 10;
	}
	o = opts_for(SCRUB_REPAIR, &seen);
	ck_assert_int_eq(scrub_create(a, &o, &s, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "forced in although stale") != NULL, "%s", err);
	/* one event behind is current (mdadm's rule): repair goes ahead */
	a->members[3].meta.events = 9;
	ck_assert_int_eq(scrub_create(a, &o, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(scrub_run(s), 0);
	scrub_free(s);
	array_free(a);
	fx_free(&f);
}
END_TEST

/* ---- control: foreground pressure, limits, pause, stop ---- */

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* A scrub of 64 stripes of 16 KiB, one stripe a batch. */
static struct scrub *slow_scrub(struct fixture *f, struct array **a, struct seen *seen, uint64_t min, uint64_t max)
{
	struct scrub_opts o;
	struct scrub *s = NULL;
	char err[256];

	fx_make(f, 6, 2, 5, 16384, 64);
	*a = fx_open(f, SOURCE_READ, -1);
	o = opts_for(SCRUB_CHECK, seen);
	o.request_bytes = 16384;
	o.speed_min = min;
	o.speed_max = max;
	ck_assert_int_eq(scrub_create(*a, &o, &s, err, sizeof(err)), 0);
	return s;
}

static uint64_t next_stripe(struct scrub *s)
{
	struct scrub_progress p;

	scrub_get_progress(s, &p);
	return p.next_stripe;
}

START_TEST(test_yields_to_foreground)
{
	struct fixture f;
	struct seen seen;
	struct array *a;
	struct scrub_progress p;
	struct scrub *s = slow_scrub(&f, &a, &seen, 1024, 0);    /* floor 1 KiB/s */
	uint64_t at;

	atomic_store(&fg.active, 1);          /* a reader is in */
	ck_assert_int_eq(scrub_start(s), 0);
	sleep_ms(300);
	at = next_stripe(s);
	/* at a 1 KiB/s floor, 16 KiB batches: a stripe now and then, not 64 */
	ck_assert_uint_lt(at, 8);
	scrub_get_progress(s, &p);
	ck_assert_int_eq(p.state, SCRUB_RUNNING);
	ck_assert_uint_gt(p.fg_backoffs, 0);
	atomic_store(&fg.active, 0);          /* the reader is served */
	ck_assert(scrub_wait(s, 30ull * 1000000000ull));
	ck_assert_int_eq(scrub_join(s), 0);
	scrub_get_progress(s, &p);
	ck_assert_int_eq(p.state, SCRUB_DONE);
	ck_assert_uint_eq(p.next_stripe, 64);
	scrub_free(s);
	array_free(a);
	fx_free(&f);
}
END_TEST

START_TEST(test_yields_to_recent_foreground)
{
	struct fixture f;
	struct seen seen;
	struct array *a;
	struct scrub_opts o;
	struct scrub *s = NULL;
	char err[256];

	fx_make(&f, 6, 2, 5, 16384, 64);
	a = fx_open(&f, SOURCE_READ, -1);
	o = opts_for(SCRUB_CHECK, &seen);
	o.request_bytes = 16384;
	o.speed_min = 1024;
	o.fg_idle_ns = 60ull * 1000000000ull;             /* a minute of quiet needed */
	atomic_store(&fg.last_ns, now_ns());           /* a read just started and ended */
	ck_assert_int_eq(scrub_create(a, &o, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(scrub_start(s), 0);
	sleep_ms(300);
	ck_assert_uint_lt(next_stripe(s), 8);
	/* long ago: 1 ns after boot (machines running this have been up for
	 * more than a minute) */
	ck_assert_uint_gt(now_ns(), o.fg_idle_ns + 1);
	atomic_store(&fg.last_ns, 1);
	ck_assert(scrub_wait(s, 30ull * 1000000000ull));
	ck_assert_int_eq(scrub_join(s), 0);
	ck_assert_uint_eq(next_stripe(s), 64);
	scrub_free(s);
	array_free(a);
	fx_free(&f);
}
END_TEST

START_TEST(test_never_below_min)
{
	struct fixture f;
	struct seen seen;
	struct array *a;
	/* a floor far above what this machine does: never yields */
	struct scrub *s = slow_scrub(&f, &a, &seen, 1ull << 40, 0);

	atomic_store(&fg.active, 1);
	ck_assert_int_eq(scrub_start(s), 0);
	ck_assert(scrub_wait(s, 60ull * 1000000000ull));
	ck_assert_int_eq(scrub_join(s), 0);
	ck_assert_uint_eq(next_stripe(s), 64);
	scrub_free(s);
	array_free(a);
	fx_free(&f);
}
END_TEST

/* With a latency target and a reader in, the scrub's threads take turns
 * (every batch checked one thread at a time) and the check is the same;
 * with nobody reading, or by md's rule, they do not. */
START_TEST(test_one_cpu_while_readers)
{
	static const struct { bool target; int active; bool turns; } cases[] = {
		{ true, 1, true }, { true, 0, false }, { false, 1, false },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct fixture f;
		struct seen seen;
		struct array *a;
		struct scrub_progress p;
		/* a floor far above what this machine does: never waits */
		struct scrub *s = slow_scrub(&f, &a, &seen, 1ull << 40, 0);

		if (cases[i].target)
			fg_gauge_set_target(&fg, FG_DEFAULT_TARGET_MILLI, 0);
		atomic_store(&fg.active, cases[i].active);
		ck_assert_int_eq(scrub_run(s), 0);
		scrub_get_progress(s, &p);
		ck_assert_uint_eq(p.next_stripe, 64);
		ck_assert_uint_eq(p.mismatches, 0);
		if (cases[i].turns)
			ck_assert_msg(p.one_cpu_batches > 0, "case %zu: no batch worked one thread at a time", i);
		else
			ck_assert_msg(p.one_cpu_batches == 0, "case %zu: %" PRIu64 " batches one thread at a time", i,
				      p.one_cpu_batches);
		atomic_store(&fg.active, 0);
		fg_gauge_set_target(&fg, 0, 0);
		scrub_free(s);
		array_free(a);
		fx_free(&f);
	}
}
END_TEST

START_TEST(test_speed_max_and_set_limits)
{
	struct fixture f;
	struct seen seen;
	struct array *a;
	struct scrub_progress p;
	/* 16 KiB/s: one 16 KiB stripe a second */
	struct scrub *s = slow_scrub(&f, &a, &seen, 0, 16384);

	ck_assert_int_eq(scrub_start(s), 0);
	sleep_ms(300);
	ck_assert_uint_lt(next_stripe(s), 8);
	scrub_get_progress(s, &p);
	ck_assert_uint_eq(p.speed_max, 16384);
	scrub_set_limits(s, 0, 0);               /* lifted while running */
	ck_assert(scrub_wait(s, 30ull * 1000000000ull));
	ck_assert_int_eq(scrub_join(s), 0);
	ck_assert_uint_eq(next_stripe(s), 64);
	scrub_free(s);
	array_free(a);
	fx_free(&f);
}
END_TEST

/* A checkpoint whose checksum is right but whose counts cannot be (more
 * mismatches than the stripes it covers hold) is refused, saying so; the
 * same one with counts that fit is taken. */
static void write_checkpoint(const char *path, const char *body)
{
	char text[1024];
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	snprintf(text, sizeof(text), "%s", body);
	fprintf(f, "%ssum %016llx\n", text, (unsigned long long)xxh64(text, strlen(text), 0));
	fclose(f);
}

START_TEST(test_checkpoint_counts_checked)
{
	struct fixture f;
	struct seen seen;
	struct array *a;
	struct scrub_opts o;
	struct scrub *s = NULL;
	char cp[128], err[ERR_MAX], body[1024], *first = NULL;
	size_t cap = 0;
	FILE *in;

	fx_make(&f, 5, 2, 4, 16384, 64);
	a = fx_open(&f, SOURCE_READ, -1);
	snprintf(cp, sizeof(cp), "%s/out.img", f.dir);      /* fx_free removes it */
	/* a checkpoint raidimg writes: stop a slow scrub after its first batch */
	o = opts_for(SCRUB_CHECK, &seen);
	o.request_bytes = 16384;
	o.speed_max = 32768;
	o.checkpoint_path = cp;
	ck_assert_int_eq(scrub_create(a, &o, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(scrub_start(s), 0);
	sleep_ms(200);
	scrub_stop(s);
	ck_assert(scrub_wait(s, 30ull * 1000000000ull));
	scrub_free(s);
	/* its identity line, then counts no 8 stripes can hold */
	in = fopen(cp, "r");
	ck_assert_ptr_nonnull(in);
	ck_assert_int_gt(getline(&first, &cap, in), 0);     /* the magic */
	ck_assert_int_gt(getline(&first, &cap, in), 0);     /* array ... */
	fclose(in);
	snprintf(body, sizeof(body), "raidimg-scrub-checkpoint 1\n%smode check\nrange 0 64\nnext 8\n"
		 "counts mismatches=5 units=1000000 writes=0 bytes_written=0 unchecked=0 read_errors=0\n", first);
	write_checkpoint(cp, body);
	o = opts_for(SCRUB_CHECK, &seen);
	o.checkpoint_path = cp;
	o.resume = true;
	ck_assert_int_eq(scrub_create(a, &o, &s, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "do not fit the 8 stripes it covers"), "%s", err);
	snprintf(body, sizeof(body), "raidimg-scrub-checkpoint 1\n%smode check\nrange 0 64\nnext 8\n"
		 "counts mismatches=1 units=2 writes=0 bytes_written=0 unchecked=0 read_errors=0\n", first);
	write_checkpoint(cp, body);
	ck_assert_int_eq(scrub_create(a, &o, &s, err, sizeof(err)), 0);
	scrub_free(s);
	free(first);
	array_free(a);
	fx_free(&f);
}
END_TEST

START_TEST(test_pause_and_stop)
{
	struct fixture f;
	struct seen seen;
	struct array *a;
	struct scrub_progress p;
	struct scrub *s = slow_scrub(&f, &a, &seen, 0, 64 * 1024);   /* 4 stripes a second */
	uint64_t at;

	ck_assert_int_eq(scrub_start(s), 0);
	sleep_ms(100);
	scrub_pause(s, true);
	sleep_ms(600);             /* the batches in flight finish, then nothing */
	scrub_get_progress(s, &p);
	ck_assert_int_eq(p.state, SCRUB_PAUSED);
	at = p.next_stripe;
	sleep_ms(400);
	ck_assert_uint_eq(next_stripe(s), at);
	scrub_pause(s, false);
	sleep_ms(100);
	scrub_stop(s);
	ck_assert(scrub_wait(s, 30ull * 1000000000ull));
	ck_assert_int_eq(scrub_join(s), -EINTR);
	scrub_get_progress(s, &p);
	ck_assert_int_eq(p.state, SCRUB_STOPPED);
	ck_assert_uint_lt(p.next_stripe, 64);
	ck_assert(seen.in_order && seen.covered == p.next_stripe);
	scrub_free(s);
	array_free(a);
	fx_free(&f);
}
END_TEST

static Suite *scrub_suite(void)
{
	Suite *s = suite_create("scrub");
	TCase *tc = tcase_create("layouts");
	int nl = (int)(ARRAY_LEN(r6_layouts) + ARRAY_LEN(r5_layouts));

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_locate_and_repair, 0, nl);
	tcase_add_loop_test(tc, test_rebuild_every_role, 0, nl);
	tcase_add_test(tc, test_column_slices);
	tcase_add_loop_test(tc, test_truncated_member, 0, 2);
	tcase_add_test(tc, test_repair_refuses_stale);
	suite_add_tcase(s, tc);

	tc = tcase_create("control");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_yields_to_foreground);
	tcase_add_test(tc, test_yields_to_recent_foreground);
	tcase_add_test(tc, test_never_below_min);
	tcase_add_test(tc, test_batch_sizes);
	tcase_add_test(tc, test_one_cpu_while_readers);
	tcase_add_test(tc, test_speed_max_and_set_limits);
	tcase_add_test(tc, test_pause_and_stop);
	tcase_add_test(tc, test_checkpoint_counts_checked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(scrub_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
