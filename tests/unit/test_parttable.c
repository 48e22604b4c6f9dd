/* test_parttable.c - unit tests for src/core/parttable.c on tables built in
 * memory: GPT (numbering, ranges, UTF-16 names, damaged primary header or
 * entry array -> backup, both damaged, hostile header fields and entries,
 * 4 KiB sectors, truncated images), MBR (primary, extended and logical
 * partitions, EBR loops and long chains, overlaps, partitions past the end)
 * and random corruptions.  tests/integration/partitions.sh reads tables
 * made by sfdisk.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "parttable.h"

static int passed, failed;

/* a failed check is counted and said; each test ends asserting none failed */
#define CHECK(cond, ...) do { \
	if (cond) { passed++; } else { failed++; \
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
} while (0)

/* ---- readers */
struct mem { const uint8_t *p; size_t n; int fail_at_read; int reads; };

static int mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct mem *m = ctx;

	if (m->fail_at_read && ++m->reads >= m->fail_at_read)
		return -EIO;
	if (off > m->n || len > m->n - off)
		return -EIO;
	memcpy(buf, m->p + off, len);
	return 0;
}


/* ---- builders */
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }

/* GUID text -> on-disk bytes */
static void guid_parse(const char *s, uint8_t g[16])
{
	unsigned v[16];

	sscanf(s, "%2x%2x%2x%2x-%2x%2x-%2x%2x-%2x%2x-%2x%2x%2x%2x%2x%2x",
	       &v[3], &v[2], &v[1], &v[0], &v[5], &v[4], &v[7], &v[6],
	       &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15]);
	for (int i = 0; i < 16; i++)
		g[i] = (uint8_t)v[i];
}

#define RAID_GUID "A19D880F-05FC-4D3B-A006-743F0F84911E"
#define LINUX_GUID "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
#define SWAP_GUID "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F"

struct gspec { const char *type; uint64_t first, last; const char *name; unsigned slot; };

static void mbr_entry(uint8_t *sec, int i, uint8_t boot, uint8_t type, uint32_t start, uint32_t count)
{
	uint8_t *p = sec + 0x1be + 16 * i;

	memset(p, 0, 16);
	p[0] = boot;
	p[4] = type;
	put32(p + 8, start);
	put32(p + 12, count);
	sec[510] = 0x55;
	sec[511] = 0xaa;
}

/* Recompute the CRCs of the header at lba (entries CRC from its array). */
static void gpt_fix(uint8_t *img, unsigned ss, uint64_t lba)
{
	uint8_t *h = img + lba * ss;
	uint64_t elba = 0;
	uint32_t n, esz;

	memcpy(&elba, h + 72, 8);
	memcpy(&n, h + 80, 4);
	memcpy(&esz, h + 84, 4);
	put32(h + 88, crc32_update(0, img + elba * ss, (size_t)n * esz));
	put32(h + 16, 0);
	put32(h + 16, crc32_update(0, h, 92));
}

static void gpt_header(uint8_t *img, unsigned ss, uint64_t nsect, uint64_t lba, uint64_t alt, uint64_t elba)
{
	uint8_t *h = img + lba * ss;

	memset(h, 0, ss);
	memcpy(h, "EFI PART", 8);
	put32(h + 8, 0x00010000);
	put32(h + 12, 92);
	put64(h + 24, lba);
	put64(h + 32, alt);
	put64(h + 40, 2 + 16384 / ss);
	put64(h + 48, nsect - 2 - 16384 / ss);
	guid_parse("11111111-2222-3333-4444-555555555555", h + 56);
	put64(h + 72, elba);
	put32(h + 80, 128);
	put32(h + 84, 128);
	gpt_fix(img, ss, lba);
}

/* Build a GPT image of nsect sectors with the given partitions. */
static uint8_t *gpt_build(unsigned ss, uint64_t nsect, const struct gspec *p, int np)
{
	uint8_t *img = calloc(nsect, ss);
	uint64_t esect = 16384 / ss;

	mbr_entry(img, 0, 0, 0xee, 1, (uint32_t)(nsect - 1));
	for (int i = 0; i < np; i++) {
		uint8_t *e = img + 2 * ss + 128 * (p[i].slot ? p[i].slot - 1 : (unsigned)i);

		guid_parse(p[i].type, e);
		memset(e + 16, 0xa0 + i, 16);
		put64(e + 32, p[i].first);
		put64(e + 40, p[i].last);
		for (size_t k = 0; p[i].name && p[i].name[k] && k < 36; k++)
			put16(e + 56 + 2 * k, (uint8_t)p[i].name[k]);
	}
	memcpy(img + (nsect - 1 - esect) * ss, img + 2 * ss, 16384);
	gpt_header(img, ss, nsect, 1, nsect - 1, 2);
	gpt_header(img, ss, nsect, nsect - 1, 1, nsect - 1 - esect);
	return img;
}

static int parse_mem(const uint8_t *img, size_t n, unsigned ss, int flags, struct pt_table *t, char *err, size_t errlen)
{
	struct mem m = { img, n, 0, 0 };
	struct dev_reader d = { n, mem_read, &m, 0 };

	err[0] = 0;
	return pt_parse(&d, ss, flags, t, err, errlen);
}

static const struct gspec three[] = {
	{ LINUX_GUID, 2048, 4095, "boot", 0 },
	{ RAID_GUID, 4096, 12287, "md member", 0 },
	{ SWAP_GUID, 12288, 16383, "swap", 0 },
};

static void test_gpt(void)
{
	const uint64_t nsect = 20480;
	const size_t n = nsect * 512;
	struct pt_table t;
	char err[512];
	uint8_t *img;
	int r;

	img = gpt_build(512, nsect, three, 3);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == 0, "valid gpt: %d %s", r, err);
	CHECK(t.kind == PT_GPT && t.nparts == 3 && t.sector_size == 512, "kind %d n %u", t.kind, t.nparts);
	CHECK(t.nparts == 3 && t.parts[1].number == 2 && t.parts[1].is_linux_raid &&
	      t.parts[1].start == 4096 * 512ull && t.parts[1].length == 8192 * 512ull,
	      "raid part");
	CHECK(t.nparts == 3 && !strcmp(t.parts[1].name, "md member") && !strcmp(t.parts[1].type, RAID_GUID) &&
	      !strcmp(t.parts[1].type_name, "Linux RAID"), "name/type %s %s", t.parts[1].name, t.parts[1].type);
	CHECK(t.protective_mbr && !t.hybrid_mbr && t.gpt_header_used == PT_GPT_PRIMARY && !t.warnings[0],
	      "warnings: %s", t.warnings);
	CHECK(!strcmp(t.disk_guid_str, "11111111-2222-3333-4444-555555555555"), "%s", t.disk_guid_str);
	pt_table_free(&t);

	/* damaged primary header -> backup */
	img[512 + 40] ^= 1;
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == 0 && t.gpt_header_used == PT_GPT_BACKUP && t.nparts == 3 && t.gpt_header_lba == nsect - 1,
	      "backup: %d %s", r, err);
	CHECK(strstr(t.warnings, "primary header (LBA 1): HeaderCRC32") && strstr(t.warnings, "backup header at LBA 20479 used"),
	      "warning: %s", t.warnings);
	pt_table_free(&t);
	/* both damaged */
	img[(nsect - 1) * 512 + 40] ^= 1;
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "primary (LBA 1): HeaderCRC32") && strstr(err, "backup (LBA 20479): HeaderCRC32"),
	      "both: %d %s", r, err);
	CHECK(t.nparts == 0 && t.parts == NULL, "emptied");
	free(img);

	/* damaged entry array of the primary -> backup */
	img = gpt_build(512, nsect, three, 3);
	img[2 * 512 + 200] ^= 0x10;
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == 0 && t.gpt_header_used == PT_GPT_BACKUP && strstr(t.warnings, "PartitionEntryArrayCRC32"),
	      "array crc: %d %s / %s", r, err, t.warnings);
	pt_table_free(&t);
	/* backup damaged, primary fine -> warning */
	free(img);
	img = gpt_build(512, nsect, three, 3);
	img[(nsect - 1) * 512 + 3] = 'X';
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == 0 && t.gpt_header_used == PT_GPT_PRIMARY && strstr(t.warnings, "backup header (LBA 20479): no \"EFI PART\""),
	      "backup bad: %s", t.warnings);
	pt_table_free(&t);
	free(img);

	/* hostile header fields, same in both headers (CRCs fixed) */
	struct { int off; int size; uint64_t val; const char *msg; } hf[] = {
		{ 80, 4, 0xffffffffu, "NumberOfPartitionEntries 4294967295" },
		{ 80, 4, 40000, "partition entry array of 5120000 bytes" },
		{ 84, 4, 100, "SizeOfPartitionEntry 100" },
		{ 84, 4, 0, "SizeOfPartitionEntry 0" },
		{ 12, 4, 10000, "HeaderSize 10000" },
		{ 12, 4, 20, "HeaderSize 20" },
		{ 72, 8, 1ull << 60, "PartitionEntryLBA 1152921504606846976" },
		{ 72, 8, 20470, "PartitionEntryLBA 20470" },
		{ 48, 8, 1ull << 40, "LastUsableLBA 1099511627776 is past" },
		{ 40, 8, 20447, "FirstUsableLBA 20447 > LastUsableLBA" },
		{ 24, 8, 5, "MyLBA 5" },
	};
	for (size_t i = 0; i < sizeof(hf) / sizeof(hf[0]); i++) {
		img = gpt_build(512, nsect, three, 3);
		for (int h = 0; h < 2; h++) {
			uint64_t lba = h ? nsect - 1 : 1;
			uint8_t *p = img + lba * 512 + hf[i].off;

			if (hf[i].size == 4)
				put32(p, (uint32_t)hf[i].val);
			else
				put64(p, hf[i].val);
			/* keep the array CRC as it was: only the header CRC */
			put32(img + lba * 512 + 16, 0);
			put32(img + lba * 512 + 16, crc32_update(0, img + lba * 512,
				  hf[i].off == 12 && hf[i].val <= 512 && hf[i].val >= 92 ? hf[i].val : 92));
		}
		r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
		CHECK(r == -EINVAL && strstr(err, hf[i].msg), "field %d=%llu: %d %s", hf[i].off,
		      (unsigned long long)hf[i].val, r, err);
		pt_table_free(&t);
		free(img);
	}

	/* bad partitions (both headers valid) */
	struct { struct gspec p[2]; int np; const char *msg; } bp[] = {
		{ { { RAID_GUID, 4096, 4000, "x", 0 } }, 1, "EndingLBA 4000 < StartingLBA 4096" },
		{ { { RAID_GUID, 4096, 30000, "x", 0 } }, 1, "GPT partition 1 (LBA 4096-30000) reaches past the end of the image" },
		{ { { RAID_GUID, 4096, 20460, "x", 0 } }, 1, "outside the usable LBAs 34-20446" },
		{ { { RAID_GUID, 10, 2000, "x", 0 } }, 1, "outside the usable LBAs" },
		{ { { RAID_GUID, 4096, 8191, "x", 0 }, { LINUX_GUID, 8000, 9000, "y", 0 } }, 2,
		  "partitions 1 (LBA 4096-8191) and 2 (LBA 8000-9000) overlap" },
		{ { { RAID_GUID, 4096, UINT64_MAX, "x", 0 } }, 1, "reaches past the end" },
		{ { { RAID_GUID, UINT64_MAX - 1, UINT64_MAX, "x", 0 } }, 1, "reaches past the end" },
	};
	for (size_t i = 0; i < sizeof(bp) / sizeof(bp[0]); i++) {
		img = gpt_build(512, nsect, bp[i].p, bp[i].np);
		r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
		CHECK(r == -EINVAL && strstr(err, bp[i].msg), "bad part %zu: %d %s", i, r, err);
		pt_table_free(&t);
		free(img);
	}

	/* slots with gaps keep Linux numbers; non-ASCII names */
	{
		struct gspec g[] = { { RAID_GUID, 2048, 4095, NULL, 3 }, { LINUX_GUID, 4096, 6000, "a", 7 } };

		img = gpt_build(512, nsect, g, 2);
		/* name "é😀" in entry 3 */
		uint8_t *e = img + 2 * 512 + 2 * 128 + 56;
		put16(e, 0x00e9); put16(e + 2, 0xd83d); put16(e + 4, 0xde00); put16(e + 6, 0xd800); put16(e + 8, 'z');
		memcpy(img + (nsect - 33) * 512, img + 2 * 512, 16384);
		gpt_fix(img, 512, 1);
		gpt_fix(img, 512, nsect - 1);
		r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
		CHECK(r == 0 && t.nparts == 2 && t.parts[0].number == 3 && t.parts[1].number == 7, "gaps: %d %s", r, err);
		CHECK(r == 0 && !strcmp(t.parts[0].name, "\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdz"), "utf8 name '%s'", t.parts[0].name);
		pt_table_free(&t);
		free(img);
	}

	/* truncated image: partition past the end, backup gone */
	img = gpt_build(512, nsect, three, 3);
	r = parse_mem(img, 10000 * 512, 0, 0, &t, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "LastUsableLBA 20446 is past the last LBA of the image (9999)"), "trunc: %d %s", r, err);
	pt_table_free(&t);
	r = parse_mem(img, 10000 * 512, 0, PT_ALLOW_TRUNCATED, &t, err, sizeof(err));
	CHECK(r == 0 && t.nparts == 3 && !t.parts[0].truncated && t.parts[1].truncated && strstr(t.warnings, "truncated image"),
	      "trunc allowed: %d %s / %s", r, err, t.warnings);
	pt_table_free(&t);
	free(img);

	/* 4 KiB sectors found by themselves */
	{
		struct gspec g[] = { { RAID_GUID, 256, 1279, "m", 0 } };
		img = gpt_build(4096, 2048, g, 1);
		r = parse_mem(img, 2048 * 4096, 0, 0, &t, err, sizeof(err));
		CHECK(r == 0 && t.sector_size == 4096 && t.nparts == 1 && t.parts[0].start == 256 * 4096ull &&
		      t.parts[0].length == 1024 * 4096ull, "4k: %d %s", r, err);
		pt_table_free(&t);
		free(img);
	}

	/* protective MBR, no GPT */
	img = calloc(nsect, 512);
	mbr_entry(img, 0, 0, 0xee, 1, (uint32_t)nsect - 1);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "protective MBR (type 0xEE in entry 1) but no GPT header"), "pmbr only: %d %s", r, err);
	pt_table_free(&t);
	free(img);

	/* read errors are passed on */
	img = gpt_build(512, nsect, three, 3);
	for (int k = 1; k <= 6; k++) {
		struct mem m = { img, n, k, 0 };
		struct dev_reader d = { n, mem_read, &m, 0 };

		r = pt_parse(&d, 0, 0, &t, err, sizeof(err));
		CHECK(r != 0 || t.nparts == 3, "read fail at %d: %d", k, r);
		pt_table_free(&t);
	}
	free(img);
}

/* An MBR disk: primary 1, extended 2 with logicals 5, 6, 7, primary 3. */
static uint8_t *mbr_build(uint64_t nsect)
{
	uint8_t *img = calloc(nsect, 512);
	uint32_t ext = 4096, extn = 12288;

	mbr_entry(img, 0, 0x80, 0x83, 2048, 2048);
	mbr_entry(img, 1, 0, 0x05, ext, extn);
	mbr_entry(img, 2, 0, 0xfd, 16384, 4096);
	/* EBR chain at ext, ext+4096, ext+8192 */
	for (int i = 0; i < 3; i++) {
		uint8_t *ebr = img + (uint64_t)(ext + 4096u * i) * 512;

		mbr_entry(ebr, 0, 0, i == 1 ? 0xfd : 0x83, 2048, 2048);
		if (i < 2)
			mbr_entry(ebr, 1, 0, 0x05, 4096u * (i + 1), 4096);
	}
	return img;
}

static void test_mbr(void)
{
	const uint64_t nsect = 40960;
	const size_t n = nsect * 512;
	struct pt_table t;
	char err[512];
	uint8_t *img;
	int r;

	img = mbr_build(nsect);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == 0 && t.kind == PT_MBR && t.nparts == 6, "mbr: %d %s n=%u", r, err, t.nparts);
	if (t.nparts == 6) {
		unsigned want[] = { 1, 2, 3, 5, 6, 7 };
		for (int i = 0; i < 6; i++)
			CHECK(t.parts[i].number == want[i], "number %d: %u", i, t.parts[i].number);
		CHECK(t.parts[1].is_extended && t.parts[1].length == 12288 * 512ull, "ext");
		CHECK(t.parts[2].is_linux_raid && t.parts[4].is_linux_raid && t.parts[4].is_logical &&
		      t.parts[4].start == (4096 + 4096 + 2048) * 512ull && t.parts[4].length == 2048 * 512ull, "logical 6");
		CHECK(t.parts[0].bootable && !strcmp(t.parts[2].type, "0xfd"), "type %s", t.parts[2].type);
	}
	pt_table_free(&t);

	/* loop: the last EBR links back to the second */
	uint8_t *last = img + (uint64_t)(4096 + 8192) * 512;
	mbr_entry(last, 1, 0, 0x05, 4096, 4096);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "EBR chain loops"), "loop: %d %s", r, err);
	pt_table_free(&t);
	/* self loop on the first EBR */
	mbr_entry(img + 4096 * 512, 1, 0, 0x05, 0, 4096);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "links to LBA 4096"), "self link: %d %s", r, err);
	pt_table_free(&t);
	free(img);

	/* a long chain: 300 EBRs with no data, each linking to the next */
	{
		uint64_t ns = 4096 + 400;
		img = calloc(ns, 512);
		mbr_entry(img, 0, 0, 0x0f, 4096, 400);
		for (int i = 0; i < 300; i++)
			mbr_entry(img + (4096ull + i) * 512, 1, 0, 0x05, (uint32_t)i + 1, 1);
		r = parse_mem(img, ns * 512, 0, 0, &t, err, sizeof(err));
		CHECK(r == -EINVAL && strstr(err, "EBR chain longer than 256 links"), "long: %d %s", r, err);
		pt_table_free(&t);
		free(img);
	}
	/* too many logicals: 1100 EBRs each with 1 data partition would exceed
	 * PT_MAX_EBRS first; check the partition bound with 4 data entries per EBR */

	/* partitions past the end, overlaps, logical outside extended */
	struct { int e; uint8_t type; uint32_t start, count; const char *msg; } bad[] = {
		{ 0, 0x83, 2048, 100000, "primary partition 1 (LBA 2048-102047) reaches past the end of the image (40960 sectors of 512 bytes)" },
		{ 0, 0x83, 0, 100, "primary partition 1 starts at LBA 0" },
		{ 0, 0x83, 16000, 1000, "partitions 2 (LBA 4096-16383) and 1 (LBA 16000-16999) overlap" },
		{ 3, 0x83, 20000, 1000, "partitions 3 (LBA 16384-20479) and 4 (LBA 20000-20999) overlap" },
		{ 3, 0x05, 30000, 20000, "extended partition 4 (LBA 30000-49999) reaches past the end" },
		{ 3, 0x05, 30000, 100, "extended partition 4: EBR at LBA 30000 has no 0x55AA" }, /* warning only */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		img = mbr_build(nsect);
		mbr_entry(img, bad[i].e, 0, bad[i].type, bad[i].start, bad[i].count);
		r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
		if (i == 5)
			CHECK(r == 0 && strstr(t.warnings, bad[i].msg), "mbr bad %zu: %d %s", i, r, t.warnings);
		else
			CHECK(r == -EINVAL && strstr(err, bad[i].msg), "mbr bad %zu: %d %s", i, r, err);
		pt_table_free(&t);
		free(img);
	}
	/* logical reaching past its extended partition */
	img = mbr_build(nsect);
	mbr_entry(img + (4096 + 8192) * 512, 0, 0, 0x83, 2048, 4096);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "logical partition 7 (EBR at LBA 12288, entry 1) (LBA 14336-18431) reaches past the end of extended partition 2"),
	      "logical out: %d %s", r, err);
	pt_table_free(&t);
	/* logical on its own EBR */
	mbr_entry(img + (4096 + 8192) * 512, 0, 0, 0x83, 0, 10);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "starts on its own EBR"), "own ebr: %d %s", r, err);
	pt_table_free(&t);
	/* overlapping logicals */
	mbr_entry(img + (4096 + 8192) * 512, 0, 0, 0x83, 2048, 1024);
	mbr_entry(img + (4096 + 4096) * 512, 0, 0, 0xfd, 2048, 6000);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "overlap"), "logical overlap: %d %s", r, err);
	pt_table_free(&t);
	/* entries 3/4 of an EBR out of range are ignored (with a warning) */
	free(img);
	img = mbr_build(nsect);
	mbr_entry(img + 4096 * 512, 3, 0, 0x83, 100000, 5);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == 0 && t.nparts == 6 && strstr(t.warnings, "entry 4"), "ebr entry 4: %d %s %s", r, err, t.warnings);
	pt_table_free(&t);
	free(img);

	/* not a table */
	img = calloc(nsect, 512);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == 0 && t.kind == PT_NONE && t.nparts == 0, "zeros");
	pt_table_free(&t);
	mbr_entry(img, 0, 0x12, 0x83, 2048, 2048);
	r = parse_mem(img, n, 0, 0, &t, err, sizeof(err));
	CHECK(r == 0 && t.kind == PT_NONE && strstr(t.warnings, "boot indicators"), "boot ind: %s", t.warnings);
	pt_table_free(&t);
	free(img);
	/* tiny images */
	{
		uint8_t small[1024] = { 0 };
		size_t sizes[] = { 0, 1, 511, 512, 513, 1023, 1024 };

		small[510] = 0x55; small[511] = 0xaa;
		mbr_entry(small, 0, 0, 0xee, 1, 100);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			r = parse_mem(small, sizes[i], 0, 0, &t, err, sizeof(err));
			CHECK(r == 0 || r == -EINVAL, "tiny %zu: %d", sizes[i], r);
			pt_table_free(&t);
		}
	}
	/* a bad sector size */
	r = parse_mem(NULL, 0, 1000, 0, &t, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "sector size 1000"), "ss: %s", err);
}

/* Random damage to valid tables: must never crash (run under ASan). */
static void test_random(void)
{
	const uint64_t nsect = 40960;
	uint8_t *base[2] = { gpt_build(512, 20480, three, 3), mbr_build(nsect) };
	size_t sz[2] = { 20480 * 512, nsect * 512 };
	unsigned seed = 12345;
	int ok = 0, bad = 0;

	for (int it = 0; it < 4000; it++) {
		int w = it & 1;
		uint8_t *img = base[w];
		struct pt_table t;
		char err[512];
		size_t undo_off[10];
		uint8_t undo_val[10], hdr_crc[4];
		int nk = 1 + it % 8;

		memcpy(hdr_crc, img + 512 + 16, 4);
		for (int k = 0; k < nk; k++) {
			seed = seed * 1103515245 + 12345;
			size_t off;
			if (w == 0) {
				size_t region[] = { 0x1be, 512, 1024, (20480 - 1) * 512, (20480 - 33) * 512 };
				off = region[(seed >> 8) % 5] + (seed >> 16) % 300;
			} else {
				size_t region[] = { 0x1be, 4096 * 512 + 0x1be, 8192 * 512 + 0x1be, 12288 * 512 + 0x1be };
				off = region[(seed >> 8) % 4] + (seed >> 16) % 66;
			}
			undo_off[k] = off;
			undo_val[k] = img[off];
			img[off] = (uint8_t)(seed >> 24);
		}
		if (w == 0 && (it & 2)) {   /* header CRC made right again */
			put32(img + 512 + 16, 0);
			put32(img + 512 + 16, crc32_update(0, img + 512, 92));
		}
		int r = parse_mem(img, sz[w], 0, it & 4 ? PT_ALLOW_TRUNCATED : 0, &t, err, sizeof(err));
		if (r == 0)
			ok++;
		else
			bad++;
		pt_table_free(&t);
		for (int k = nk - 1; k >= 0; k--)
			img[undo_off[k]] = undo_val[k];
		if (w == 0)
			memcpy(img + 512 + 16, hdr_crc, 4);
	}
	CHECK(ok > 0 && bad > 0, "random: %d ok %d refused", ok, bad);
	printf("random damage: %d parsed, %d refused\n", ok, bad);
	free(base[0]);
	free(base[1]);
}


START_TEST(t_gpt)
{
	test_gpt();
	ck_assert_msg(failed == 0, "%d of %d checks failed", failed, failed + passed);
}
END_TEST

START_TEST(t_mbr)
{
	test_mbr();
	ck_assert_msg(failed == 0, "%d of %d checks failed", failed, failed + passed);
}
END_TEST

START_TEST(t_random)
{
	test_random();
	ck_assert_msg(failed == 0, "%d of %d checks failed", failed, failed + passed);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("parttable");
	TCase *t = tcase_create("parttable");
	SRunner *sr;
	int nf;

	tcase_add_test(t, t_gpt);
	tcase_add_test(t, t_mbr);
	tcase_add_test(t, t_random);
	tcase_set_timeout(t, 120);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
