/* test_overlay.c - unit tests for src/overlay.c (libcheck).
 *
 * The overlay lies over an in-memory "array" (a buffer behind an
 * overlay_base) and every result is compared with a model buffer that
 * receives the same writes with memcpy:
 *  - the header: encode/decode round trip; a flipped byte, a wrong magic,
 *    a newer version, an impossible geometry, offsets that do not follow
 *    from the sizes are each refused with their own message;
 *  - identities: same array, another uuid, another size, manual vs md;
 *  - thousands of random writes (odd offsets and lengths, across granule
 *    boundaries, a short last granule) and reads, for granules of 4 KiB and
 *    64 KiB; the base is never written; reopening gives the same bytes;
 *  - sync semantics: what was synced survives a close without sync, what
 *    was not is not visible (never half of it);
 *  - 8 threads writing interleaved byte ranges of the same granules (first
 *    writes racing for the copy of the array's bytes, the array's reads
 *    slowed down so that they overlap) while 2 threads read:
 *    every byte read is the array's or the final one, and the end result is
 *    the model's;
 *  - the array unreadable around a partial first write: -EIO and nothing
 *    marked; a whole granule needs no read; writes at/over the end;
 *  - a truncated file, a bitmap bit past the end, a second writer (-EBUSY),
 *    a member-looking file (no magic), discard.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "overlay.h"
#include "xxh64.h"

#define REQUIRE(expr)							\
	do {								\
		if (!(expr))						\
			ck_abort_msg("%s:%d: failed: %s", __FILE__,	\
				     __LINE__, #expr);			\
	} while (0)

/* RAID5, 4 members, chunk 4 KiB, 84 chunks per member: 1032192 bytes =
 * 15.75 granules of 64 KiB (a short last one), 252 of 4 KiB. */
#define MEMBER_BYTES (84u * 4096u)
#define ARRAY_BYTES (3u * MEMBER_BYTES)

static char tmpdir[64];

struct mem_base {
	struct volume vol;           /* what the overlay lies over (first: see mem_read) */
	uint8_t *bytes;              /* ARRAY_BYTES, the array */
	atomic_int fail;             /* reads fail with -EIO */
	atomic_int delay_us;         /* reads take this long: widens race windows */
	_Atomic uint64_t reads;
};

static int mem_read(struct volume *v, void *buf, size_t len, uint64_t off, uint64_t *bad_off,
		    const struct volume_observer *obs)
{
	struct mem_base *b = (struct mem_base *)v;

	REQUIRE(off + len <= ARRAY_BYTES);
	atomic_fetch_add(&b->reads, 1);
	if (atomic_load(&b->fail)) {
		if (bad_off)
			*bad_off = off;
		return -EIO;
	}
	if (atomic_load(&b->delay_us))
		usleep((useconds_t)atomic_load(&b->delay_us));
	memcpy(buf, b->bytes + off, len);
	return 0;
}

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static const struct volume_ops mem_ops = { .read = mem_read };

static void md_identity(struct overlay_identity *id)
{
	memset(id, 0, sizeof(*id));
	id->kind = OVERLAY_ID_MD;
	for (int i = 0; i < 16; i++)
		id->uuid[i] = (uint8_t)(0xa0 + i);
	snprintf(id->name, sizeof(id->name), "host:test");
	snprintf(id->meta_format, sizeof(id->meta_format), "1.2");
	id->level = 5;
	id->layout = 2;
	id->raid_disks = 4;
	id->chunk_bytes = 4096;
	id->member_bytes = MEMBER_BYTES;
	id->array_bytes = ARRAY_BYTES;
}

static struct mem_base *base_new(void)
{
	struct mem_base *b = calloc(1, sizeof(*b));

	REQUIRE(b);
	b->vol = (struct volume){ &mem_ops, ARRAY_BYTES, 4096 };
	b->bytes = malloc(ARRAY_BYTES);
	REQUIRE(b->bytes);
	fill(b->bytes, ARRAY_BYTES, 7);
	return b;
}

static void base_free(struct mem_base *b)
{
	free(b->bytes);
	free(b);
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static struct overlay *open_ov(const char *path, struct mem_base *b, const struct overlay_identity *id,
			       uint32_t granule, bool writable, int *ret, char *err, size_t errlen)
{
	struct overlay_open_opts o = {
		.writable = writable, .create = writable, .granule_bytes = granule, .id = id,
		.base = b ? &b->vol : NULL,
	};
	struct overlay *ov = NULL;

	*ret = overlay_open(path, &o, &ov, NULL, err, errlen);
	return *ret ? NULL : ov;
}

static struct overlay *must_open(const char *path, struct mem_base *b, const struct overlay_identity *id,
				 uint32_t granule)
{
	char err[1024];
	int ret;
	struct overlay *ov = open_ov(path, b, id, granule, true, &ret, err, sizeof(err));

	if (!ov)
		ck_abort_msg("open %s: %d %s", path, ret, err);
	return ov;
}

static void check_all(struct overlay *ov, const uint8_t *model)
{
	uint8_t *buf = malloc(ARRAY_BYTES);

	REQUIRE(buf);
	REQUIRE(overlay_read(ov, buf, ARRAY_BYTES, 0, NULL) == 0);
	for (size_t i = 0; i < ARRAY_BYTES; i++)
		if (buf[i] != model[i])
			ck_abort_msg("byte %zu: %02x, model %02x", i, buf[i], model[i]);
	free(buf);
}

/* ---- header ---- */

static void header_bytes(uint8_t *buf, struct overlay_header *h)
{
	struct overlay_identity id;

	md_identity(&id);
	REQUIRE(overlay_header_init(h, &id, 0, 1234567890123456789ull) == 0);
	overlay_header_encode(h, buf);
}

/* Re-checksum a header edited by a test (the layout of overlay.c: XXH64
 * of bytes [0, 248) at 248), so that the check after the checksum shows. */
static void reseal(uint8_t *buf)
{
	uint64_t sum = xxh64(buf, 248, 0);

	for (int i = 0; i < 8; i++)
		buf[248 + i] = (uint8_t)(sum >> (8 * i));
}

START_TEST(test_header_roundtrip)
{
	uint8_t buf[OVERLAY_HEADER_BYTES];
	struct overlay_header h, d;
	char err[300];

	header_bytes(buf, &h);
	REQUIRE(!memcmp(buf, "RAIDOVL1", 8));
	REQUIRE(overlay_header_decode(buf, sizeof(buf), &d, err, sizeof(err)) == 0);
	REQUIRE(d.version == 1 && d.granule_bytes == 65536);
	REQUIRE(d.granules == 16);                       /* 15.75 rounded up */
	REQUIRE(d.bitmap_offset == 4096 && d.bitmap_bytes == 4096);
	REQUIRE(d.data_start == 65536);                  /* 8 KiB rounded up to the granule */
	REQUIRE(d.created_ns == 1234567890123456789ull && d.modified_ns == d.created_ns);
	REQUIRE(!strcmp(d.id.name, "host:test") && !strcmp(d.id.meta_format, "1.2"));
	REQUIRE(overlay_identity_match(&d.id, &h.id, err, sizeof(err)) == 0);
	REQUIRE(d.array_id == overlay_identity_hash(&h.id));
}
END_TEST

START_TEST(test_header_refusals)
{
	uint8_t buf[OVERLAY_HEADER_BYTES], bad[OVERLAY_HEADER_BYTES];
	struct overlay_header h, d;
	char err[300];

	header_bytes(buf, &h);
	/* every byte of the checksummed part matters */
	for (int i = 8; i < 248; i += 7) {
		memcpy(bad, buf, sizeof(bad));
		bad[i] ^= 0x10;
		REQUIRE(overlay_header_decode(bad, sizeof(bad), &d, err, sizeof(err)) != 0);
	}
	memcpy(bad, buf, sizeof(bad));
	bad[100] ^= 1;
	REQUIRE(overlay_header_decode(bad, sizeof(bad), &d, err, sizeof(err)) == -EINVAL);
	REQUIRE(strstr(err, "checksum"));
	memcpy(bad, buf, sizeof(bad));
	bad[0] = 'X';
	REQUIRE(overlay_header_decode(bad, sizeof(bad), &d, err, sizeof(err)) == -EINVAL);
	REQUIRE(strstr(err, "not a raidimg overlay"));
	/* a newer version, correctly checksummed */
	memcpy(bad, buf, sizeof(bad));
	bad[8] = 2;
	reseal(bad);
	REQUIRE(overlay_header_decode(bad, sizeof(bad), &d, err, sizeof(err)) == -EPROTONOSUPPORT);
	REQUIRE(strstr(err, "newer"));
	/* RAID level 7 */
	memcpy(bad, buf, sizeof(bad));
	bad[40] = 7;
	reseal(bad);
	REQUIRE(overlay_header_decode(bad, sizeof(bad), &d, err, sizeof(err)) == -EINVAL);
	REQUIRE(strstr(err, "geometry"));
	/* granule count that does not follow from the size */
	memcpy(bad, buf, sizeof(bad));
	bad[88] = 17;
	reseal(bad);
	REQUIRE(overlay_header_decode(bad, sizeof(bad), &d, err, sizeof(err)) == -EINVAL);
	REQUIRE(strstr(err, "offsets"));
	/* array size not k * member size */
	memcpy(bad, buf, sizeof(bad));
	bad[64] ^= 0x20;
	reseal(bad);
	REQUIRE(overlay_header_decode(bad, sizeof(bad), &d, err, sizeof(err)) == -EINVAL);
	/* granule not a power of two */
	memcpy(bad, buf, sizeof(bad));
	bad[17] = 0x11;
	reseal(bad);
	REQUIRE(overlay_header_decode(bad, sizeof(bad), &d, err, sizeof(err)) == -EINVAL);
	REQUIRE(strstr(err, "granule"));
	/* too short */
	REQUIRE(overlay_header_decode(buf, 100, &d, err, sizeof(err)) == -EINVAL);
	/* granule out of range at creation */
	REQUIRE(overlay_header_init(&d, &h.id, 2048, 0) == -EINVAL);
	REQUIRE(overlay_header_init(&d, &h.id, 65537, 0) == -EINVAL);
}
END_TEST

START_TEST(test_identity)
{
	struct overlay_identity a, b;
	char why[600];

	md_identity(&a);
	b = a;
	snprintf(b.name, sizeof(b.name), "other:name");   /* names are only shown */
	REQUIRE(overlay_identity_match(&a, &b, why, sizeof(why)) == 0);
	b = a;
	b.uuid[3] ^= 1;
	REQUIRE(overlay_identity_match(&a, &b, why, sizeof(why)) == -EXDEV);
	REQUIRE(strstr(why, "another array"));
	b = a;
	b.member_bytes *= 2;
	b.array_bytes *= 2;
	REQUIRE(overlay_identity_match(&a, &b, why, sizeof(why)) == -EXDEV);
	REQUIRE(strstr(why, "geometry or size"));
	b = a;
	b.layout = 0;
	REQUIRE(overlay_identity_match(&a, &b, why, sizeof(why)) == -EXDEV);
	b = a;
	b.kind = OVERLAY_ID_MANUAL;
	memset(b.uuid, 0, 16);
	REQUIRE(overlay_identity_match(&a, &b, why, sizeof(why)) == -EXDEV);
	REQUIRE(strstr(why, "manual geometry"));
	a = b;
	b.data_offset = 4096;
	REQUIRE(overlay_identity_match(&a, &b, why, sizeof(why)) == -EXDEV);
	REQUIRE(overlay_identity_hash(&a) != overlay_identity_hash(&b));
}
END_TEST

/* ---- random writes against a model ---- */

static void random_writes(uint32_t granule, const char *name)
{
	struct overlay_identity id;
	struct mem_base *b = base_new();
	uint8_t *model = malloc(ARRAY_BYTES), *orig = malloc(ARRAY_BYTES);
	uint8_t *data = malloc(300000), *rd = malloc(300000);
	bool *touched = calloc(ARRAY_BYTES / 4096 + 1, sizeof(bool));
	struct overlay_stats st;
	struct overlay *ov;
	char path[128];
	uint64_t ngran = (ARRAY_BYTES + granule - 1) / granule, want_written = 0;

	REQUIRE(model && orig && data && rd && touched);
	memcpy(model, b->bytes, ARRAY_BYTES);
	memcpy(orig, b->bytes, ARRAY_BYTES);
	md_identity(&id);
	path_of(path, sizeof(path), name);
	ov = must_open(path, b, &id, granule);
	REQUIRE(overlay_header(ov)->granule_bytes == granule);
	for (int i = 0; i < 3000; i++) {
		uint64_t off = rnd() % ARRAY_BYTES;
		size_t len = (size_t)(rnd() % (i % 10 ? 9000 : 300000)) + 1;
		ssize_t n;

		if (len > ARRAY_BYTES - off)
			len = (size_t)(ARRAY_BYTES - off);
		fill(data, len, (uint64_t)i + 100);
		n = overlay_write(ov, data, len, off);
		REQUIRE(n == (ssize_t)len);
		memcpy(model + off, data, len);
		for (uint64_t g = off / granule; g <= (off + len - 1) / granule; g++)
			touched[g] = true;
		if (i % 7 == 0) {
			uint64_t roff = rnd() % ARRAY_BYTES;
			size_t rlen = (size_t)(rnd() % 300000) + 1;
			if (rlen > ARRAY_BYTES - roff)
				rlen = (size_t)(ARRAY_BYTES - roff);
			REQUIRE(overlay_read(ov, rd, rlen, roff, NULL) == 0);
			REQUIRE(!memcmp(rd, model + roff, rlen));
		}
		if (i % 500 == 0)
			REQUIRE(overlay_sync(ov) == 0);
	}
	check_all(ov, model);
	REQUIRE(!memcmp(b->bytes, orig, ARRAY_BYTES));   /* the array is never written */
	for (uint64_t g = 0; g < ngran; g++) {
		REQUIRE(overlay_granule_written(ov, g) == touched[g]);
		want_written += touched[g];
	}
	overlay_get_stats(ov, &st);
	REQUIRE(st.granules_written == want_written);
	REQUIRE(st.unsynced);
	REQUIRE(overlay_sync(ov) == 0);
	overlay_get_stats(ov, &st);
	REQUIRE(!st.unsynced && st.syncs >= 1);
	overlay_close(ov);
	/* persistent: a new open sees the same bytes */
	ov = must_open(path, b, &id, 0);
	REQUIRE(overlay_header(ov)->granule_bytes == granule);   /* the file's, not the default */
	check_all(ov, model);
	overlay_get_stats(ov, &st);
	REQUIRE(st.granules_written == want_written);
	overlay_close(ov);
	free(touched);
	free(rd);
	free(data);
	free(orig);
	free(model);
	base_free(b);
}

START_TEST(test_random_writes_64k)
{
	random_writes(65536, "rand64k.ovl");
}
END_TEST

START_TEST(test_random_writes_4k)
{
	random_writes(4096, "rand4k.ovl");
}
END_TEST

START_TEST(test_sync_semantics)
{
	struct overlay_identity id;
	struct mem_base *b = base_new();
	uint8_t *model = malloc(ARRAY_BYTES), x[5000];
	struct overlay *ov;
	char path[128];

	REQUIRE(model);
	memcpy(model, b->bytes, ARRAY_BYTES);
	md_identity(&id);
	path_of(path, sizeof(path), "sync.ovl");
	ov = must_open(path, b, &id, 0);
	memset(x, 0xAB, sizeof(x));
	REQUIRE(overlay_write(ov, x, sizeof(x), 70000) == (ssize_t)sizeof(x));
	memcpy(model + 70000, x, sizeof(x));
	REQUIRE(overlay_sync(ov) == 0);
	REQUIRE(overlay_sync(ov) == 0);              /* nothing new: no-op */
	/* a write to a new granule, then "the process dies": no sync */
	memset(x, 0xCD, sizeof(x));
	REQUIRE(overlay_write(ov, x, sizeof(x), 500000) == (ssize_t)sizeof(x));
	overlay_close(ov);
	ov = must_open(path, b, &id, 0);
	check_all(ov, model);                        /* the unsynced granule reads as the array */
	REQUIRE(!overlay_granule_written(ov, 500000 / 65536));
	REQUIRE(overlay_granule_written(ov, 70000 / 65536));
	overlay_close(ov);
	free(model);
	base_free(b);
}
END_TEST

/* ---- concurrency ---- */

enum { WRITERS = 8, READERS = 2, SLICE = 1000 };

struct conc_shared {
	struct overlay *ov;
	struct mem_base *b;
	const uint8_t *final;        /* the bytes once every writer is done */
	atomic_int writers_left;
	atomic_int bad;              /* first failure seen: 1 write, 2 read, 3 wrong byte */
};

struct conc {
	struct conc_shared *sh;
	int t;                       /* thread number */
};

/* Writer t owns bytes [g*64K + t*SLICE, +SLICE) of every granule g and
 * writes them in an order of its own. */
static void *writer_main(void *p)
{
	struct conc *c = p;
	struct conc_shared *sh = c->sh;
	uint64_t order[16];

	for (int i = 0; i < 16; i++)
		order[i] = (uint64_t)i;
	for (int i = 15; i > 0; i--) {   /* each writer its own order */
		uint64_t j = ((uint64_t)c->t * 7919 + (uint64_t)i * 104729) % (uint64_t)(i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < 16; i++) {
		uint64_t off = order[i] * 65536 + (uint64_t)c->t * SLICE;

		if (off + SLICE > ARRAY_BYTES)
			continue;
		if (overlay_write(sh->ov, sh->final + off, SLICE, off) != SLICE)
			atomic_store(&sh->bad, 1);
	}
	atomic_fetch_sub(&sh->writers_left, 1);
	return NULL;
}

static void *reader_main(void *p)
{
	struct conc_shared *sh = ((struct conc *)p)->sh;
	uint8_t *buf = malloc(ARRAY_BYTES);

	if (!buf)
		return NULL;
	do {
		if (overlay_read(sh->ov, buf, ARRAY_BYTES, 0, NULL)) {
			atomic_store(&sh->bad, 2);
			break;
		}
		for (size_t i = 0; i < ARRAY_BYTES; i++) {
			if (buf[i] != sh->b->bytes[i] && buf[i] != sh->final[i]) {
				atomic_store(&sh->bad, 3);
				break;
			}
		}
	} while (atomic_load(&sh->writers_left) > 0);
	free(buf);
	return NULL;
}

START_TEST(test_concurrent_writers)
{
	struct overlay_identity id;
	struct mem_base *b = base_new();
	uint8_t *final = malloc(ARRAY_BYTES);
	struct conc c[WRITERS + READERS];
	struct conc_shared sh;
	pthread_t th[WRITERS + READERS];
	struct overlay_stats st;
	struct overlay *ov;
	char path[128];

	REQUIRE(final);
	md_identity(&id);
	path_of(path, sizeof(path), "conc.ovl");
	atomic_store(&b->delay_us, 300);   /* first writes overlap for sure */
	for (int round = 0; round < 5; round++) {
		unlink(path);
		ov = must_open(path, b, &id, 0);
		memcpy(final, b->bytes, ARRAY_BYTES);
		for (int g = 0; g < 16; g++)
			for (int t = 0; t < WRITERS; t++) {
				uint64_t off = (uint64_t)g * 65536 + (uint64_t)t * SLICE;
				if (off + SLICE <= ARRAY_BYTES)
					fill(final + off, SLICE, (uint64_t)(round * 1000 + g * 10 + t));
			}
		sh.ov = ov;
		sh.b = b;
		sh.final = final;
		atomic_init(&sh.writers_left, WRITERS);
		atomic_init(&sh.bad, 0);
		for (int i = 0; i < WRITERS + READERS; i++) {
			c[i] = (struct conc){ .sh = &sh, .t = i };
			REQUIRE(!pthread_create(&th[i], NULL, i < WRITERS ? writer_main : reader_main, &c[i]));
		}
		for (int i = 0; i < WRITERS + READERS; i++)
			pthread_join(th[i], NULL);
		if (atomic_load(&sh.bad))
			ck_abort_msg("round %d: failure %d", round, atomic_load(&sh.bad));
		check_all(ov, final);
		overlay_get_stats(ov, &st);
		REQUIRE(st.granules_written == 16);
		REQUIRE(st.granules_copied == 16);       /* each granule copied exactly once */
		REQUIRE(overlay_sync(ov) == 0);
		overlay_close(ov);
		ov = must_open(path, b, &id, 0);
		check_all(ov, final);
		overlay_close(ov);
	}
	free(final);
	base_free(b);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_unreadable_array_and_end)
{
	struct overlay_identity id;
	struct mem_base *b = base_new();
	uint8_t *model = malloc(ARRAY_BYTES), x[70000];
	struct overlay_stats st;
	struct overlay *ov;
	uint64_t bad = 0;
	char path[128];

	REQUIRE(model);
	memcpy(model, b->bytes, ARRAY_BYTES);
	md_identity(&id);
	path_of(path, sizeof(path), "errors.ovl");
	ov = must_open(path, b, &id, 0);
	memset(x, 0x5A, sizeof(x));
	atomic_store(&b->fail, 1);
	/* partial granule: the array's bytes around it are needed */
	REQUIRE(overlay_write(ov, x, 100, 65536 + 10) == -EIO);
	REQUIRE(!overlay_granule_written(ov, 1));
	/* a whole granule is not */
	REQUIRE(overlay_write(ov, x, 65536, 3 * 65536) == 65536);
	memcpy(model + 3 * 65536, x, 65536);
	REQUIRE(overlay_granule_written(ov, 3));
	/* the overlay's granules read while the array cannot be read */
	REQUIRE(overlay_read(ov, x, 65536, 3 * 65536, NULL) == 0);
	REQUIRE(overlay_read(ov, x, 200, 3 * 65536 - 100, &bad) == -EIO && bad == 3 * 65536 - 100);
	/* whole granule then a partial one: the first is kept, short count */
	REQUIRE(overlay_write(ov, x, 65536 + 50, 5 * 65536) == 65536);
	memcpy(model + 5 * 65536, x, 65536);
	atomic_store(&b->fail, 0);
	/* past the end */
	REQUIRE(overlay_write(ov, x, 10, ARRAY_BYTES) == -ENOSPC);
	REQUIRE(overlay_write(ov, x, 100, ARRAY_BYTES - 40) == 40);   /* last, short granule */
	memcpy(model + ARRAY_BYTES - 40, x, 40);
	REQUIRE(overlay_read(ov, x, 10, ARRAY_BYTES - 5, NULL) == -EINVAL);
	check_all(ov, model);
	overlay_get_stats(ov, &st);
	REQUIRE(st.write_errors == 2);
	REQUIRE(st.granules_written == 3);
	/* the short last granule counts its real bytes */
	REQUIRE(st.bytes_covered == 2 * 65536 + (ARRAY_BYTES - 15 * 65536));
	overlay_close(ov);
	free(model);
	base_free(b);
}
END_TEST

START_TEST(test_bad_files)
{
	struct overlay_identity id, other;
	struct mem_base *b = base_new();
	struct overlay *ov, *ov2;
	char path[128], err[1024];
	uint8_t x[4096] = { 0 };
	struct stat st;
	int fd, ret;

	md_identity(&id);
	path_of(path, sizeof(path), "bad.ovl");
	ov = must_open(path, b, &id, 0);
	/* a second writer: refused (after waiting for the lock) */
	REQUIRE(!open_ov(path, b, &id, 0, true, &ret, err, sizeof(err)) && ret == -EBUSY);
	REQUIRE(strstr(err, "in use"));
	REQUIRE(overlay_write(ov, x, 10, 1000) == 10);
	REQUIRE(overlay_sync(ov) == 0);
	overlay_close(ov);
	/* another array */
	other = id;
	other.uuid[0] ^= 0xff;
	REQUIRE(!open_ov(path, b, &other, 0, true, &ret, err, sizeof(err)) && ret == -EXDEV);
	REQUIRE(strstr(err, "another array"));
	/* the file was left as it was */
	ov = must_open(path, b, &id, 0);
	REQUIRE(overlay_granule_written(ov, 0));
	overlay_close(ov);
	/* a bit past the last granule (16 granules: bit 16 of byte 2) */
	fd = open(path, O_RDWR);
	REQUIRE(fd >= 0);
	x[0] = 1;
	x[2] = 1;
	REQUIRE(pwrite(fd, x, 4096, 4096) == 4096);
	REQUIRE(!open_ov(path, b, &id, 0, true, &ret, err, sizeof(err)) && ret == -EINVAL);
	REQUIRE(strstr(err, "past the end"));
	x[2] = 0;
	REQUIRE(pwrite(fd, x, 4096, 4096) == 4096);
	/* truncated */
	REQUIRE(fstat(fd, &st) == 0);
	REQUIRE(ftruncate(fd, st.st_size - 1) == 0);
	REQUIRE(!open_ov(path, b, &id, 0, true, &ret, err, sizeof(err)) && ret == -EINVAL);
	REQUIRE(strstr(err, "truncated"));
	REQUIRE(ftruncate(fd, st.st_size) == 0);
	/* a corrupt header */
	REQUIRE(pwrite(fd, "\x77", 1, 60) == 1);
	REQUIRE(!open_ov(path, b, &id, 0, true, &ret, err, sizeof(err)) && ret == -EINVAL);
	REQUIRE(strstr(err, "corrupt overlay header"));
	close(fd);
	/* something that is not an overlay is never overwritten */
	path_of(path, sizeof(path), "member.img");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	memset(x, 0x42, sizeof(x));
	REQUIRE(write(fd, x, sizeof(x)) == (ssize_t)sizeof(x));
	close(fd);
	REQUIRE(!open_ov(path, b, &id, 0, true, &ret, err, sizeof(err)) && ret == -EINVAL);
	REQUIRE(strstr(err, "not a raidimg overlay") && strstr(err, "refusing"));
	REQUIRE(stat(path, &st) == 0 && st.st_size == 4096);
	/* read-only opens: a missing file is not created */
	path_of(path, sizeof(path), "absent.ovl");
	REQUIRE(!open_ov(path, b, &id, 0, false, &ret, err, sizeof(err)) && ret == -ENOENT);
	/* a reader alongside a writer: refused unless allow_in_use */
	path_of(path, sizeof(path), "bad2.ovl");
	ov = must_open(path, b, &id, 0);
	{
		struct overlay_open_opts o = { .allow_in_use = true };
		REQUIRE(overlay_open(path, &o, &ov2, NULL, err, sizeof(err)) == 0);
		REQUIRE(overlay_in_use(ov2));
		REQUIRE(overlay_write(ov2, x, 1, 0) == -EROFS);
		overlay_close(ov2);
	}
	overlay_close(ov);
	base_free(b);
}
END_TEST

START_TEST(test_discard)
{
	struct overlay_identity id;
	struct mem_base *b = base_new();
	uint8_t *x = malloc(ARRAY_BYTES);
	struct overlay_open_opts o = { .writable = true };
	struct overlay_stats s;
	struct overlay *ov;
	char path[128], err[1024];
	struct stat st1, st2;

	REQUIRE(x);
	md_identity(&id);
	path_of(path, sizeof(path), "discard.ovl");
	ov = must_open(path, b, &id, 0);
	fill(x, ARRAY_BYTES, 99);
	REQUIRE(overlay_write(ov, x, ARRAY_BYTES, 0) == (ssize_t)ARRAY_BYTES);
	REQUIRE(overlay_sync(ov) == 0);
	overlay_close(ov);
	REQUIRE(stat(path, &st1) == 0);
	REQUIRE((uint64_t)st1.st_blocks * 512 >= ARRAY_BYTES);
	/* discard as `raidimg overlay discard` does: no identity needed */
	REQUIRE(overlay_open(path, &o, &ov, NULL, err, sizeof(err)) == 0);
	REQUIRE(overlay_discard(ov) == 0);
	overlay_close(ov);
	REQUIRE(stat(path, &st2) == 0);
	REQUIRE(st2.st_size == st1.st_size);
	REQUIRE(st2.st_blocks * 512 < 64 * 1024);      /* the data was punched out */
	ov = must_open(path, b, &id, 0);
	check_all(ov, b->bytes);
	overlay_get_stats(ov, &s);
	REQUIRE(s.granules_written == 0);
	overlay_close(ov);
	free(x);
	base_free(b);
}
END_TEST

static Suite *overlay_suite(void)
{
	Suite *s = suite_create("overlay");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_header_roundtrip);
	tcase_add_test(tc, test_header_refusals);
	tcase_add_test(tc, test_identity);
	tcase_add_test(tc, test_random_writes_64k);
	tcase_add_test(tc, test_random_writes_4k);
	tcase_add_test(tc, test_sync_semantics);
	tcase_add_test(tc, test_concurrent_writers);
	tcase_add_test(tc, test_unreadable_array_and_end);
	tcase_add_test(tc, test_bad_files);
	tcase_add_test(tc, test_discard);
	suite_add_tcase(s, tc);
	return s;
}

static void remove_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd)) {
		/* best effort */
	}
}

int main(void)
{
	SRunner *sr;
	const char *t = getenv("TMPDIR");
	int failed;

	snprintf(tmpdir, sizeof(tmpdir), "%s/ovltest.XXXXXX", t && strlen(t) < 40 ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	sr = srunner_create(overlay_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	remove_tmpdir();
	return failed ? 1 : 0;
}
