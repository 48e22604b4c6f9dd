/* test_imsm.c - unit tests for src/core/imsm.c: hostile MPBs (every size,
 * count, index and checksum the parser checks, built from the metadata of a
 * real member: tests/fixtures/sb/imsm-*.tail, the last 8 KiB of member0 of
 * the fixtures in tests/fixtures/ext), the serial helpers, and the format
 * behind format.h (probe, place, replace).  The real fixtures as arrays
 * are tests/integration/containers.sh's.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "imsm.h"
#include "mem_dev.h"

static int failures, checks;

/* a failed check is counted and said; each test ends asserting none failed */
#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		checks++;                                                     \
		if (!(cond)) {                                                \
			failures++;                                           \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);           \
			printf(__VA_ARGS__);                                  \
			printf("\n");                                         \
		}                                                             \
	} while (0)

/* ---- hostile buffers ------------------------------------------------------ */

/* A template: the last 8 KiB of a fixture member, taken from the first image
 * of the healthy 4-member fixture (decompressed once). */
static uint8_t tmpl_tail[8192];
static uint64_t tmpl_size;

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* An MPB held flat in memory (anchor first) and written to a device tail. */
struct mpbuf {
	uint8_t b[8192];
	uint32_t ss;
};

static uint32_t mpb_size_of(const struct mpbuf *m)
{
	return rd32(m->b + 0x24);
}

static void fix_checksum(struct mpbuf *m)
{
	uint32_t sum = 0, n = mpb_size_of(m) / 4;

	if (n > sizeof(m->b) / 4)
		n = sizeof(m->b) / 4;
	wr32(m->b + 0x20, 0);
	for (uint32_t i = 0; i < n; i++)
		sum += rd32(m->b + 4 * i);
	wr32(m->b + 0x20, sum);
}

/* what the last sector (migration record) holds; zero unless a test sets it */
static uint8_t migr_sector[512];

/* Lay the MPB out at the end of a device tail (tail = 16 KiB): anchor at
 * size - 2*ss, continuation sectors before it; last sector left as given. */
static void place(const struct mpbuf *m, uint8_t *tail, size_t tail_len)
{
	uint32_t ss = m->ss, size = mpb_size_of(m);
	uint32_t sectors = (size + ss - 1) / ss;

	memset(tail, 0, tail_len);
	if (sectors == 0)
		sectors = 1;
	if ((uint64_t)(sectors + 1) * ss > tail_len)
		sectors = (uint32_t)(tail_len / ss) - 1;
	if ((uint64_t)sectors * ss > sizeof(m->b))
		sectors = (uint32_t)(sizeof(m->b) / ss);
	memcpy(tail + tail_len - 2 * ss, m->b, ss);
	memcpy(tail + tail_len - ss, migr_sector, sizeof(migr_sector) < ss ? sizeof(migr_sector) : ss);
	if (sectors > 1)
		memcpy(tail + tail_len - (size_t)(sectors + 1) * ss, m->b + ss, (size_t)(sectors - 1) * ss);
}

static void load_template(struct mpbuf *m)
{
	/* anchor at tail + 8192 - 1024, continuation at 8192 - 1536 */
	memset(m, 0, sizeof(*m));
	m->ss = 512;
	memcpy(m->b, tmpl_tail + sizeof(tmpl_tail) - 1024, 512);
	memcpy(m->b + 512, tmpl_tail + sizeof(tmpl_tail) - 1536, 512);
}

static int parse_mpb(const struct mpbuf *m, uint64_t size, unsigned flags, struct imsm_info *in,
                     char *err, size_t errlen)
{
	static uint8_t tail[16384];
	struct memdev md = { .tail = tail, .tail_len = sizeof(tail), .size = size };
	struct dev_reader r;

	if (size < sizeof(tail)) {
		md.tail_len = (size_t)size;
		place(m, tail, sizeof(tail));
		md.tail = tail + sizeof(tail) - size;
	} else {
		place(m, tail, sizeof(tail));
	}
	r = memdev_reader(&md);
	return imsm_parse_ex(&r, flags, in, err, errlen);
}

/* offsets inside the template MPB (4 disks, one volume) */
enum {
	T_DEV = 0xd8 + 4 * 48,            /* 408 */
	T_VOL = T_DEV + 80,
	T_MAP = T_VOL + 32,               /* 520 */
	T_ORD = T_MAP + 48,               /* 568 */
	T_DEVLEN = 80 + 32 + 48 + 4 * 4,  /* 176 */
};

#define EXPECT_REFUSED(m, size, code, word)                                             \
	do {                                                                            \
		int rc_ = parse_mpb(m, size, 0, in, err, sizeof(err));                  \
		CHECK(rc_ == (code) && strstr(err, word), "expected %d naming '%s', got %d: %s", \
		      code, word, rc_, err);                                            \
		printf("  refused (%d): %s\n", rc_, err);                               \
	} while (0)

static void test_hostile(void)
{
	struct imsm_info *in = malloc(sizeof(*in)), *ref = malloc(sizeof(*ref));
	struct mpbuf *m = malloc(sizeof(*m));
	char err[512], why[256];
	uint64_t size = tmpl_size;
	int rc;

	load_template(m);
	rc = parse_mpb(m, size, 0, ref, err, sizeof(err));
	CHECK(rc == 0, "template parses: %d %s", rc, err);
	CHECK(ref->num_volumes == 1 && ref->volumes[0].member_data_sectors == 12288,
	      "template geometry");

	/* checksum */
	load_template(m);
	m->b[T_MAP + 8] ^= 1;
	EXPECT_REFUSED(m, size, -EBADMSG, "checksum");
	rc = parse_mpb(m, size, IMSM_PARSE_IGNORE_CHECKSUM, in, err, sizeof(err));
	CHECK(rc == 0 && !in->checksum_ok && in->volumes[0].num_data_stripes == 97,
	      "IGNORE_CHECKSUM: %d %s", rc, err);
	/* the checksummed region ends at mpb_size: bytes after it do not count */
	load_template(m);
	m->b[mpb_size_of(m) + 3] ^= 0x55;
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0, "byte after mpb_size changed: %d %s", rc, err);

	/* signature */
	load_template(m);
	m->b[5] = 'x';
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -ENOENT, "no anchor");
	EXPECT_REFUSED(m, 600, -ENOENT, "no anchor");     /* device < 2 sectors */
	EXPECT_REFUSED(m, 0, -ENOENT, "no anchor");

	/* mpb_size */
	load_template(m);
	wr32(m->b + 0x24, 100);
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "mpb_size");
	load_template(m);
	wr32(m->b + 0x24, 2u << 20);
	EXPECT_REFUSED(m, size, -EINVAL, "mpb_size");
	load_template(m);
	wr32(m->b + 0x24, 0xffffffff);
	EXPECT_REFUSED(m, size, -EINVAL, "mpb_size");
	load_template(m);
	wr32(m->b + 0x24, 5000);                    /* 10 sectors: device of 4 KiB has 7 */
	fix_checksum(m);
	EXPECT_REFUSED(m, 4096, -EINVAL, "mpb_size");
	load_template(m);
	wr32(m->b + 0x24, 400);                     /* disk table cut off */
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "mpb_size 400 too small");
	load_template(m);
	wr32(m->b + 0x24, 500);                     /* volume record cut off */
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "mpb_size or num_raid_devs");
	load_template(m);
	wr32(m->b + 0x24, 580);                     /* last disk_ord_tbl entry cut off */
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "disk_ord_tbl");

	/* num_disks */
	load_template(m);
	m->b[0x38] = 0;
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "num_disks 0");
	load_template(m);
	m->b[0x38] = 200;
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "num_disks");
	load_template(m);
	m->b[0x38] = 3;                             /* volume now read 48 bytes early */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc < 0, "num_disks 3 misreads the volume: %d %s", rc, err);
	printf("  refused (%d): %s\n", rc, err);

	/* num_raid_devs */
	load_template(m);
	m->b[0x39] = 2;
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "num_raid_devs");
	load_template(m);
	m->b[0x39] = 17;
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -E2BIG, "num_raid_devs");
	load_template(m);
	m->b[0x39] = 255;
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -E2BIG, "num_raid_devs");

	/* num_members */
	load_template(m);
	m->b[T_MAP + 16] = 0;
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "num_members 0");
	load_template(m);
	m->b[T_MAP + 16] = 200;
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "disk_ord_tbl");

	/* disk_ord_tbl */
	load_template(m);
	wr32(m->b + T_ORD + 8, 9);
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "disk_ord_tbl");
	load_template(m);
	wr32(m->b + T_ORD + 8, 0x01ffffff);
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "disk_ord_tbl");
	load_template(m);
	wr32(m->b + T_ORD + 8, 1);
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "slots");
	/* a rebuild flag makes the slot unusable, but parses */
	load_template(m);
	wr32(m->b + T_ORD + 8, 0x01000002);
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && !in->volumes[0].maps[0].slots[2].usable && in->volumes[0].failed_slots == 1 &&
	      in->volumes[0].maps[0].slots[2].out_of_sync, "rebuild flag: %d %s", rc, err);
	CHECK(imsm_volume_unreadable(in, 0, why, sizeof(why)) == NULL, "one out-of-sync slot: %s", why);
	wr32(m->b + T_ORD + 4, 0x01000001);
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && in->volumes[0].failed_slots == 2 &&
	      imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "2 of 4"),
	      "two failed slots: %d %s / %s", rc, err, why);

	/* bad block log */
	load_template(m);
	wr32(m->b + 0x48, 4);
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "bbm_log_size");
	load_template(m);
	wr32(m->b + 0x48, 1000);
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "bbm_log_size");
	load_template(m);
	{
		uint32_t sz = mpb_size_of(m);

		/* append a 2-entry log */
		wr32(m->b + sz, 0xabadb10c);
		wr32(m->b + sz + 4, 2);
		m->b[sz + 8] = 7;      /* 8 sectors */
		m->b[sz + 9] = 1;      /* disk 1 */
		m->b[sz + 10] = 0x34;  /* w1 = 0x1234 */
		m->b[sz + 11] = 0x12;
		wr32(m->b + sz + 12, 1); /* dw1 = 1 -> sector 0x11234 */
		m->b[sz + 16] = 0;
		m->b[sz + 17] = 3;
		wr32(m->b + 0x24, sz + 24);
		wr32(m->b + 0x48, 24);
		fix_checksum(m);
		rc = parse_mpb(m, size, 0, in, err, sizeof(err));
		CHECK(rc == 0 && in->num_bbm_entries == 2 && in->bbm[0].disk == 1 &&
		      in->bbm[0].count == 8 && in->bbm[0].sector == 0x11234 && in->bbm[1].disk == 3,
		      "bbm log: %d %s", rc, err);
		wr32(m->b + sz + 4, 3);
		fix_checksum(m);
		EXPECT_REFUSED(m, size, -EINVAL, "entry_count");
		wr32(m->b + sz + 4, 300);
		fix_checksum(m);
		EXPECT_REFUSED(m, size, -EINVAL, "entry_count");
		wr32(m->b + sz + 4, 2);
		wr32(m->b + sz, 0x12345678);
		fix_checksum(m);
		EXPECT_REFUSED(m, size, -EINVAL, "signature");
	}

	/* sizes and offsets */
	load_template(m);
	wr32(m->b + T_MAP + 0, 20000);              /* pba_of_lba0 */
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "total_blocks");
	load_template(m);
	wr32(m->b + 0xd8 + 48 * 2 + 16, 1000);      /* disk 2 total_blocks */
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "total_blocks");
	load_template(m);
	wr32(m->b + 0x34, rd32(m->b + 0x34) | 0x04000000); /* 2TB_DISK: _hi words count */
	wr32(m->b + T_MAP + 28, 0xffffffff);        /* num_data_stripes_hi */
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "overflows");
	load_template(m);
	wr32(m->b + T_MAP + 28, 0xffffffff);        /* without 2TB_DISK: ignored (mdadm clear_hi) */
	wr32(m->b + T_MAP + 20, 0xffffffff);
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && in->volumes[0].num_data_stripes == 96 && in->volumes[0].data_offset_sectors == 0,
	      "hi words ignored without MPB_ATTRIB_2TB_DISK: %d %s", rc, err);
	load_template(m);
	wr32(m->b + 0x34, rd32(m->b + 0x34) | 0x04000000);
	wr32(m->b + T_MAP + 20, 1);                 /* pba_of_lba0_hi = 1 -> 2 TiB */
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "total_blocks");

	/* migration: a second map that does not fit, then one that does */
	load_template(m);
	m->b[T_VOL + 8] = 1;
	fix_checksum(m);
	EXPECT_REFUSED(m, size, -EINVAL, "map 1");
	load_template(m);
	{
		uint32_t sz = mpb_size_of(m);

		m->b[T_VOL + 8] = 1;                /* migr_state */
		m->b[T_VOL + 9] = 3;                /* general migration */
		memcpy(m->b + sz, m->b + T_MAP, 48 + 4 * 3); /* old map: 3 members */
		m->b[sz + 16] = 3;
		wr32(m->b + sz + 8, 96 * 4 / 3);
		wr32(m->b + 0x24, sz + 48 + 12);
		fix_checksum(m);
		rc = parse_mpb(m, size, 0, in, err, sizeof(err));
		CHECK(rc == 0 && in->volumes[0].num_maps == 2 && in->volumes[0].maps[1].num_members == 3,
		      "general migration parses: %d %s", rc, err);
		CHECK(rc == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) &&
		      strstr(why, "general migration") && strstr(why, "3 members") &&
		      strstr(why, "4 members"), "migration reason: %s", why);
		printf("  unreadable: %s\n", why);
		CHECK(rc == 0 && !in->migr_rec.present, "zero migration record");
		wr32(migr_sector + 0, 1);           /* rec_status: data in checkpoint area */
		wr32(migr_sector + 4, 5);           /* curr_migr_unit */
		wr32(migr_sector + 8, rd32(m->b + 0x28));
		wr32(migr_sector + 12, 1);          /* ascending */
		wr32(migr_sector + 16, 384);        /* blocks_per_unit */
		wr32(migr_sector + 32, 32);         /* num_migr_units */
		wr32(migr_sector + 36, 36864);      /* post_migr_vol_cap */
		rc = parse_mpb(m, size, 0, in, err, sizeof(err));
		CHECK(rc == 0 && in->migr_rec.present && in->migr_rec.rec_status == 1 &&
		      in->migr_rec.curr_migr_unit == 5 && in->migr_rec.blocks_per_unit == 384 &&
		      in->migr_rec.num_migr_units == 32 && in->migr_rec.post_migr_vol_cap == 36864 &&
		      in->migr_rec.family_num == in->family_num, "migration record: %d %s", rc, err);
		CHECK(imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "checkpoint unit 5"),
		      "checkpoint from the migration record: %s", why);
		memset(migr_sector, 0, sizeof(migr_sector));
		m->b[T_VOL + 9] = 1;                /* rebuild */
		fix_checksum(m);
		rc = parse_mpb(m, size, 0, in, err, sizeof(err));
		CHECK(rc == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) &&
		      strstr(why, "rebuild"), "rebuild reason: %s", why);
		printf("  unreadable: %s\n", why);
		m->b[T_VOL + 9] = 2;                /* verify + DEV_VERIFY_AND_FIX = repair */
		m->b[T_DEV + 24] |= 0x80;
		fix_checksum(m);
		rc = parse_mpb(m, size, 0, in, err, sizeof(err));
		CHECK(rc == 0 && in->volumes[0].migr_type == IMSM_MIGR_REPAIR &&
		      imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "repair"),
		      "repair reason: %s", why);
	}

	/* levels and other non-RAID5 reasons */
	load_template(m);
	m->b[T_MAP + 15] = 1;                       /* raid_level 1 with 4 members = RAID10 */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && in->volumes[0].level == 10 && in->volumes[0].md_layout == 0x102 &&
	      imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "RAID10"),
	      "RAID10: %d %s / %s", rc, err, why);
	load_template(m);
	m->b[T_MAP + 15] = 10;                      /* raw 10 (newer mdadm): RAID10 */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && in->volumes[0].level == 10 && !strcmp(imsm_layout_name(10, in->volumes[0].md_layout), "n2"),
	      "raw level 10: %d %s", rc, err);
	load_template(m);
	m->b[T_MAP + 15] = 1;                       /* raw 1 with 2 members: RAID1 */
	m->b[T_MAP + 16] = 2;
	m->b[0x39] = 1;
	wr32(m->b + 0x24, T_ORD + 8);
	wr32(m->b + T_DEV + 16, 96 * 128);          /* RAID1: size = per member data */
	wr32(m->b + T_MAP + 8, 48);                 /* nds per domain: 96 / 2 */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && in->volumes[0].level == 1 && in->volumes[0].member_data_sectors == 12288 &&
	      imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "RAID1 "),
	      "RAID1: %d %s / %" PRIu64 " %s", rc, err, in->volumes[0].member_data_sectors, why);
	load_template(m);
	m->b[T_MAP + 15] = 0;
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && in->volumes[0].level == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) &&
	      strstr(why, "RAID0"), "RAID0: %d / %s", rc, why);
	load_template(m);
	m->b[T_MAP + 15] = 7;
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && in->volumes[0].level == -1 && imsm_volume_unreadable(in, 0, why, sizeof(why)) &&
	      strstr(why, "raw_level 7"), "unknown level: %d / %s", rc, why);
	load_template(m);
	m->b[T_MAP + 12] = 3;                       /* blocks_per_strip 3 */
	m->b[T_MAP + 13] = 0;
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "chunk"),
	      "odd chunk: %d %s / %s", rc, err, why);
	load_template(m);
	m->b[T_MAP + 12] = 0;                       /* blocks_per_strip 0 */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "chunk"),
	      "zero chunk: %d %s / %s", rc, err, why);
	load_template(m);
	wr32(m->b + T_ORD + 4, 0x01000001);
	m->b[T_VOL + 10] = 1;                       /* dirty + degraded */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "dirty"),
	      "dirty degraded: %s", why);
	load_template(m);
	wr32(m->b + T_ORD + 4, 0x01000001);
	m->b[T_MAP + 14] = 1;                       /* uninitialized + degraded */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) &&
	      strstr(why, "never initialized"), "uninitialized degraded: %s", why);
	wr32(m->b + T_ORD + 4, 1);                  /* uninitialized, not degraded: readable */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && !imsm_volume_unreadable(in, 0, why, sizeof(why)), "uninitialized: %s", why);
	m->b[T_MAP + 14] = 3;                       /* failed */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "failed"),
	      "map failed: %s", why);
	m->b[T_MAP + 14] = 9;
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "map_state"),
	      "map_state 9: %s", why);
	load_template(m);
	wr32(m->b + T_DEV + 16, 36864 + 4096);     /* dev size beyond the stripes */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && imsm_volume_unreadable(in, 0, why, sizeof(why)) && strstr(why, "array size"),
	      "array size too big: %d %s / %s", rc, err, why);
	load_template(m);
	wr32(m->b + T_MAP + 8, 50);                 /* num_data_stripes far from the size */
	fix_checksum(m);
	rc = parse_mpb(m, size, 0, in, err, sizeof(err));
	CHECK(rc == 0 && in->volumes[0].num_data_stripes_mismatch &&
	      in->volumes[0].member_data_sectors == 12288, "nds fallback: %d %s %" PRIu64, rc, err,
	      in->volumes[0].member_data_sectors);

	/* two volumes: duplicate the volume record; overlapping, then placed after */
	load_template(m);
	{
		uint32_t sz = mpb_size_of(m);
		uint8_t *v1 = m->b + T_DEV + T_DEVLEN;

		memcpy(v1, m->b + T_DEV, T_DEVLEN);
		memcpy(v1, "Volume1\0\0\0\0\0\0\0\0\0", 16);
		m->b[0x39] = 2;
		wr32(m->b + 0x24, sz + T_DEVLEN);
		fix_checksum(m);
		EXPECT_REFUSED(m, size, -EINVAL, "overlap");
		wr32(v1 + 112 + 0, 12288 + 8192);    /* after volume 0 + 4 MiB gap: past 24576 */
		fix_checksum(m);
		EXPECT_REFUSED(m, size, -EINVAL, "total_blocks");
		wr32(v1 + 112 + 8, 8);               /* 8 stripes of 128 sectors */
		wr32(v1 + 16, 8 * 128 * 3);
		fix_checksum(m);
		rc = parse_mpb(m, size, 0, in, err, sizeof(err));
		CHECK(rc == 0 && in->num_volumes == 2 && in->volumes[1].data_offset_sectors == 20480 &&
		      in->volumes[1].member_data_sectors == 1024 &&
		      strcmp(in->volumes[1].uuid_str, in->volumes[0].uuid_str) &&
		      !strcmp(in->volumes[0].uuid_str, ref->volumes[0].uuid_str),
		      "two volumes: %d %s", rc, err);
	}

	/* a 4096-byte-sector drive: the same MPB in 4 KiB units, 8 KiB from the end */
	load_template(m);
	{
		struct mpbuf *m4 = malloc(sizeof(*m4));
		uint32_t sz = mpb_size_of(m);

		memset(m4, 0, sizeof(*m4));
		m4->ss = 4096;
		memcpy(m4->b, m->b, sz);
		for (int d = 0; d < 4; d++)
			wr32(m4->b + 0xd8 + 48 * d + 16, rd32(m->b + 0xd8 + 48 * d + 16) / 8);
		wr32(m4->b + T_DEV + 16, rd32(m->b + T_DEV + 16) / 8);
		wr32(m4->b + T_MAP + 4, rd32(m->b + T_MAP + 4) / 8);
		m4->b[T_MAP + 12] = (uint8_t)(m->b[T_MAP + 12] / 8);
		fix_checksum(m4);
		rc = parse_mpb(m4, size, 0, in, err, sizeof(err));
		CHECK(rc == 0 && in->sector_size == 4096 && in->mpb_sectors == 1 &&
		      in->anchor_offset == size - 8192 && in->volumes[0].chunk_bytes == 65536 &&
		      in->volumes[0].blocks_per_member == 14336 &&
		      in->volumes[0].member_data_sectors == 12288 &&
		      in->disks[0].total_blocks == 24576 &&
		      !strcmp(in->uuid_str, ref->uuid_str) &&
		      !strcmp(in->volumes[0].uuid_str, ref->volumes[0].uuid_str),
		      "4K sectors: %d %s", rc, err);
		free(m4);
	}

	/* reader errors are passed through */
	load_template(m);
	{
		static uint8_t tail[16384];
		struct memdev md = { .tail = tail, .tail_len = sizeof(tail), .size = size,
		                     .fail_off = size - 1536, .fail_len = 512 };
		struct dev_reader r = memdev_reader(&md);

		place(m, tail, sizeof(tail));
		rc = imsm_parse(&r, in, err, sizeof(err));
		CHECK(rc == -EIO && strstr(err, "continuation"), "EIO: %d %s", rc, err);
		printf("  refused (%d): %s\n", rc, err);
		md.fail_off = size - 1024;
		rc = imsm_parse(&r, in, err, sizeof(err));
		CHECK(rc == -EIO && strstr(err, "anchor"), "EIO anchor: %d %s", rc, err);
		CHECK(md.reads < 10, "bounded reads: %u", md.reads);
	}
	CHECK(imsm_parse(NULL, in, err, sizeof(err)) == -EINVAL, "NULL reader");

	free(m);
	free(in);
	free(ref);
}

static void test_serials(void)
{
	uint8_t s[IMSM_SERIAL_LEN];
	struct imsm_info *in = calloc(1, sizeof(*in));
	bool mf;

	printf("serial helpers\n");
	CHECK(imsm_serial_normalize("member1", s) == 7 && !memcmp(s, "member1\0\0\0\0\0\0\0\0\0", 16),
	      "plain serial");
	CHECK(imsm_serial_normalize("  WD-AB:12 \n", s) == 8 && !memcmp(s, "WD-AB;12", 9), "trim/colon");
	CHECK(imsm_serial_normalize("ABCDEFGHIJKLMNOPQRST", s) == 16 && !memcmp(s, "EFGHIJKLMNOPQRST", 16),
	      "keeps the last 16");
	CHECK(imsm_serial_normalize("a\xc3\xa9z", s) == 2 && !memcmp(s, "az", 3), "drops >= 0x80");

	in->num_disks = 3;
	memcpy(in->disks[0].serial, "member0", 7);
	memcpy(in->disks[1].serial, "ember1:0", 8);
	in->disks[1].failed = true;
	memcpy(in->disks[2].serial, "ABCDEFGHIJKLMNOP", 16);  /* 16 chars, no NUL */
	imsm_serial_normalize("member0", s);
	CHECK(imsm_find_disk(in, s, false, NULL) == 0, "exact");
	imsm_serial_normalize("member1", s);
	CHECK(imsm_find_disk(in, s, false, NULL) == -ENOENT, "failed not exact");
	CHECK(imsm_find_disk(in, s, true, &mf) == 1 && mf, "failed placeholder");
	imsm_serial_normalize("ABCDEFGHIJKLMNOP", s);
	CHECK(imsm_find_disk(in, s, false, NULL) == 2, "16 chars");
	imsm_serial_normalize("ABCDEFGHIJKLMNOPQ", s); /* -> BCDEFGHIJKLMNOPQ */
	CHECK(imsm_find_disk(in, s, false, NULL) == -ENOENT, "17 chars differ");
	/* long failed serial: "ABCDEFGHIJKLMNOP:0" -> shift 3 -> "DEFGHIJKLMNOP:0" -> "EFGHIJKLMNOP:0" */
	memset(in->disks[2].serial, 0, 16);
	memcpy(in->disks[2].serial, "EFGHIJKLMNOP:0", 14);
	in->disks[2].failed = true;
	imsm_serial_normalize("ABCDEFGHIJKLMNOP", s);
	CHECK(imsm_find_disk(in, s, true, &mf) == 2 && mf, "long failed placeholder");
	memset(in->disks[2].serial, 0, 16);
	memcpy(in->disks[2].serial, "DEFGHIJKLMNOP:0", 15); /* failed, not missing */
	CHECK(imsm_find_disk(in, s, true, &mf) == 2 && mf, "long failed (not missing)");
	CHECK(!strcmp(imsm_layout_name(5, 0), "left-asymmetric"), "layout name");
	free(in);
}


/* The last 8 KiB of a fixture member (tests/fixtures/sb). */
static int load_tail(const char *name, uint8_t *buf)
{
	const char *top = getenv("SRCDIR");
	char path[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/sb/%s", top ? top : ".", name);
	f = fopen(path, "rb");
	if (!f)
		return -1;
	n = fread(buf, 1, 8192, f);
	fclose(f);
	return n == 8192 ? 0 : -1;
}

START_TEST(t_hostile)
{
	ck_assert_int_eq(load_tail("imsm-r5-la-4x12M-64K.member0.tail", tmpl_tail), 0);
	tmpl_size = 12582912;
	test_hostile();
	ck_assert_msg(failures == 0, "%d of %d checks failed", failures, checks);
}
END_TEST

START_TEST(t_serials)
{
	test_serials();
	ck_assert_msg(failures == 0, "%d of %d checks failed", failures, checks);
}
END_TEST

/* ---- the format ---- */

struct img {
	uint8_t tail[8192];
	uint64_t size;
	uint8_t *out;                /* what replace() writes: the last 8 KiB */
};

static int put_tail(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct img *im = ctx;
	uint64_t start = im->size - 8192;

	if (off < start || len > im->size - off)
		return -EIO;
	memcpy(im->out + (off - start), buf, len);
	return 0;
}

START_TEST(t_format)
{
	static struct img im;
	static uint8_t out[8192];
	struct memdev md = { .tail = im.tail, .tail_len = 8192, .size = 12582912 };
	struct dev_reader r = memdev_reader(&md);
	struct format_found *f = malloc(sizeof(*f));
	struct member_meta m;
	char err[512], uuid[40];
	int dev, role;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(load_tail("imsm-r5-la-3x12M-64K-missing1.member0.tail", im.tail), 0);
	im.size = md.size;
	/* probe: one volume, mdadm's uuids, unplaced, the disk table's serials */
	ck_assert_int_eq(format_imsm.probe(&r, f, err, sizeof(err)), 0);
	ck_assert_int_eq(f->nvol, 1);
	m = f->vol[0];
	meta_uuid_format(m.set_uuid, uuid);
	ck_assert_str_eq(uuid, "b02c639d:467bdcbf:e1234b95:e7353487");
	meta_uuid_format(m.container_uuid, uuid);
	ck_assert_str_eq(uuid, "63d27dea:575c05cc:f81ac6be:9cb04e4c");
	ck_assert_str_eq(m.format, "imsm");
	ck_assert_str_eq(m.set_name, "Volume0");
	ck_assert_int_eq(m.role, META_ROLE_UNPLACED);
	ck_assert_int_eq(m.level, 5);
	ck_assert_int_eq(m.layout, 0);
	ck_assert_int_eq(m.chunk_bytes, 65536);
	ck_assert_int_eq(m.raid_disks, 3);
	ck_assert_uint_eq(m.component_sectors, 12288);
	ck_assert_uint_eq(m.array_sectors, 24576);
	ck_assert_uint_eq(m.events, 0x1c);
	ck_assert(m.in_container && m.unsupported[0] == '\0');
	ck_assert_int_eq(m.dev_roles[0], 0);
	ck_assert_int_eq(m.dev_roles[1], META_ROLE_FAULTY);
	ck_assert_int_eq(m.dev_roles[2], 2);
	/* place: by serial; the failed disk by the forms mdadm rewrote it to */
	ck_assert_int_eq(format_imsm.place(&m, "member2", &dev, &role), 0);
	ck_assert(dev == 2 && role == 2);
	ck_assert_int_eq(format_imsm.place(&m, "member1", &dev, &role), 0);
	ck_assert(dev == 1 && role == META_ROLE_FAULTY);
	ck_assert_int_eq(format_imsm.place(&m, "member3", &dev, &role), -ENOENT);
	ck_assert_int_eq(format_imsm.place(&m, "", &dev, &role), -ENOENT);
	/* replace: the new disk in slot 1, in sync, a generation newer */
	memcpy(out, im.tail, sizeof(out));
	im.out = out;
	m.role = 1;
	ck_assert_int_eq(format_imsm.replace(&r, &m, "new-disk-1", 24576, put_tail, &im, err, sizeof(err)), 0);
	{
		struct memdev nd = { .tail = out, .tail_len = 8192, .size = 12582912 };
		struct dev_reader nr = memdev_reader(&nd);
		struct imsm_info *in = malloc(sizeof(*in));

		ck_assert_ptr_nonnull(in);
		ck_assert_int_eq(imsm_parse(&nr, in, err, sizeof(err)), 0);
		ck_assert_uint_eq(in->generation_num, 0x1d);
		ck_assert_str_eq(in->disks[1].serial_str, "new-disk-1");
		ck_assert(in->disks[1].configured && !in->disks[1].failed && in->disks[1].scsi_id == 0);
		ck_assert_int_eq(in->volumes[0].map_state, IMSM_MAP_NORMAL);
		ck_assert_int_eq(in->volumes[0].failed_disk_num, 0xff);
		ck_assert_int_eq(in->volumes[0].failed_slots, 0);
		ck_assert_str_eq(in->volumes[0].uuid_str, "b02c639d:467bdcbf:e1234b95:e7353487");
		free(in);
	}
	/* a serial another disk has is refused, naming it */
	ck_assert_int_eq(format_imsm.replace(&r, &m, "member0", 24576, put_tail, &im, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "'member0' is already disk 0's"));
	/* a migrating volume cannot be read: said, with what migration */
	ck_assert_int_eq(load_tail("imsm-r5-la-4x12M-64K.member0.tail", tmpl_tail), 0);
	{
		struct mpbuf *mb = malloc(sizeof(*mb));
		static uint8_t tail[16384];
		struct memdev d2 = { .tail = tail, .tail_len = sizeof(tail), .size = 12582912 };
		struct dev_reader r2 = memdev_reader(&d2);

		ck_assert_ptr_nonnull(mb);
		load_template(mb);
		mb->b[T_VOL + 8] = 1;                /* migr_state */
		mb->b[T_VOL + 9] = 1;                /* rebuild */
		memcpy(mb->b + mpb_size_of(mb), mb->b + T_MAP, 48 + 4 * 4);
		wr32(mb->b + 0x24, mpb_size_of(mb) + 48 + 16);
		fix_checksum(mb);
		place(mb, tail, sizeof(tail));
		ck_assert_int_eq(format_imsm.probe(&r2, f, err, sizeof(err)), 0);
		ck_assert_ptr_nonnull(strstr(f->vol[0].unsupported, "migration in progress: rebuild"));
		mb->b[T_VOL + 9] = 3;                /* general migration (reshape) */
		fix_checksum(mb);
		place(mb, tail, sizeof(tail));
		ck_assert_int_eq(format_imsm.probe(&r2, f, err, sizeof(err)), 0);
		ck_assert_ptr_nonnull(strstr(f->vol[0].unsupported, "general migration"));
		/* a container without a volume (a spare disk) holds nothing to read */
		load_template(mb);
		mb->b[0x39] = 0;
		wr32(mb->b + 0x24, T_DEV);
		fix_checksum(mb);
		place(mb, tail, sizeof(tail));
		ck_assert_int_eq(format_imsm.probe(&r2, f, err, sizeof(err)), -ENOENT);
		ck_assert_ptr_nonnull(strstr(err, "holds no volume (a spare disk)"));
		free(mb);
	}
	free(f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("imsm");
	TCase *t = tcase_create("imsm");
	SRunner *sr;
	int nf;

	tcase_add_test(t, t_serials);
	tcase_add_test(t, t_hostile);
	tcase_add_test(t, t_format);
	tcase_set_timeout(t, 60);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
