/* test_evidence.c - unit tests (libcheck) of the pure parsers behind the
 * evidence sources: range lists (core/ranges.c), GNU ddrescue mapfiles
 * (core/ddrescue_map.c: the manual's example, number forms, hostile
 * mapfiles each refused with its line, random mapfiles against a reference),
 * split piece sets (core/split_raw.c) and md's bad-block log (md1.c). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddrescue_map.h"
#include "format.h"
#include "le.h"
#include "ranges.h"
#include "split_raw.h"

#define CHECK(cond, ...) ck_assert_msg(cond, __VA_ARGS__)
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MB (1ull << 20)

static int parse_str(const char *s, uint64_t isz, struct ddr_map *m, char *err, size_t errlen)
{
	err[0] = 0;
	return ddr_map_parse(s, strlen(s), isz, m, err, errlen);
}

static const char real_map[] =
	"# Mapfile. Created by GNU ddrescue version 1.27\n"
	"# Command line: ddrescue -d -c18 /dev/fd0 fdimage mapfile\n"
	"# current_pos  current_status  current_pass\n"
	"0x00120000     ?               1\n"
	"#      pos        size  status\n"
	"0x00000000  0x00117000  +\n"
	"0x00117000  0x00000200  -\n"
	"0x00117200  0x00001000  /\n"
	"0x00118200  0x00007E00  *\n"
	"0x00120000  0x00048000  ?\n";

static void ddr_units(void)
{
	struct ddr_map m;
	char err[512];
	int r;

	/* the manual's example */
	r = parse_str(real_map, 0x168000, &m, err, sizeof(err));
	CHECK(r == 0, "%d %s", r, err);
	CHECK(m.current_pos == 0x120000 && m.current_status == '?' && m.current_pass == 1 && m.nblocks == 5, "status");
	CHECK(m.nbad == 1 && m.bad[0].pos == 0x117000 && m.bad[0].size == 0x51000 && m.bad_bytes == 0x51000,
	      "merged bad: %u %llx+%llx", m.nbad, m.nbad ? (unsigned long long)m.bad[0].pos : 0ull,
	      m.nbad ? (unsigned long long)m.bad[0].size : 0ull);
	CHECK(m.bytes_finished == 0x117000 && m.bytes_badsector == 0x200 && m.bytes_nonscraped == 0x1000 &&
	      m.bytes_nontrimmed == 0x7e00 && m.bytes_nontried == 0x48000, "bytes");
	CHECK(m.size_relation == DDR_SIZE_EQUAL && m.map_size == 0x168000, "size");
	CHECK(ddr_map_find_bad(&m, 0, 0x117000) == NULL && ddr_map_find_bad(&m, 0x116fff, 2) == &m.bad[0] &&
	      ddr_map_find_bad(&m, 0x167fff, 100) == &m.bad[0] && ddr_map_find_bad(&m, 0x168000, 100) == NULL,
	      "find_bad");
	ddr_map_free(&m);

	/* image shorter, in the unrescued tail: fine */
	r = parse_str(real_map, 0x118000, &m, err, sizeof(err));
	CHECK(r == 0 && m.size_relation == DDR_SIZE_IMAGE_SHORTER && strstr(m.warnings, "ends before the map"), "%d %s", r, err);
	ddr_map_free(&m);
	/* image shorter inside rescued data: truncated */
	r = parse_str(real_map, 0x100000, &m, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "the image has 1048576 bytes but the mapfile says bytes up to 0x117000 were rescued"), "%d %s", r, err);
	/* image longer than the map: another image's mapfile */
	r = parse_str(real_map, 0x200000, &m, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "the image has 2097152 bytes but the mapfile covers only 1474560"), "%d %s", r,
	      err);
	r = parse_str(real_map, UINT64_MAX, &m, err, sizeof(err));
	CHECK(r == 0 && m.size_relation == DDR_SIZE_UNKNOWN, "unknown");
	ddr_map_free(&m);

	/* decimal, octal, trailing comments, CRLF, no pass (old ddrescue) */
	r = parse_str("# x\r\n  100 +   # finished\r\n0 0100 +\r\n64 036 -\n94\t6\t?#x\n", 100, &m, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "line 5: block status '?#x'"), "%d %s", r, err);
	r = parse_str("# x\r\n  100 +   # finished\r\n0 0100 +\r\n64 036 -\n94\t6\t? #comment\n", 100, &m, err, sizeof(err));
	CHECK(r == 0 && m.current_pass == 0 && m.nbad == 1 && m.bad[0].pos == 64 && m.bad[0].size == 36 &&
	      m.map_size == 100, "%d %s", r, err);
	ddr_map_free(&m);
	/* a finished block between two bad ones: two ranges */
	r = parse_str("0 +\n0 10 -\n10 10 +\n20 5 *\n25 5 /\n", 30, &m, err, sizeof(err));
	CHECK(r == 0 && m.nbad == 2 && m.bad[1].pos == 20 && m.bad[1].size == 10, "%d %s", r, err);
	CHECK(ddr_map_find_bad(&m, 10, 10) == NULL && ddr_map_find_bad(&m, 5, 10) == &m.bad[0] &&
	      ddr_map_find_bad(&m, 15, 10) == &m.bad[1], "find");
	ddr_map_free(&m);

	/* hostile: each refused with the line named */
	static const struct { const char *text; const char *msg; int ret; } bad[] = {
		{ "", "no status line", -EINVAL },
		{ "# only comments\n\n#\n", "no status line (3 lines)", -EINVAL },
		{ "0 +\n", "no data blocks", -EINVAL },
		{ "garbage here\n0 10 +\n", "line 1: current_pos 'garbage' is not a number", -EINVAL },
		{ "0 X 1\n0 10 +\n", "line 1: current_status 'X' is not one of", -EINVAL },
		{ "0 + 0\n0 10 +\n", "line 1: current_pass '0' is not a positive", -EINVAL },
		{ "0 + 0x1\n0 10 +\n", "line 1: current_pass '0x1'", -EINVAL },
		{ "0 + 1 extra\n0 10 +\n", "line 1: the status line needs", -EINVAL },
		{ "0 +\n0 10\n", "line 2: a block needs 'pos size status', found 2 fields", -EINVAL },
		{ "0 +\n0 10 + x\n", "line 2: a block needs 'pos size status', found 4 fields", -EINVAL },
		{ "0 +\n0 10 + x y z w\n", "line 2: a block needs 'pos size status', found 5 fields", -EINVAL },
		{ "0 +\n0 10 F\n", "line 2: block status 'F'", -EINVAL },
		{ "0 +\n0 10 ++\n", "line 2: block status '++'", -EINVAL },
		{ "0 +\n10 10 +\n", "line 2: the first block starts at 0xa, not 0", -EINVAL },
		{ "0 +\n0 10 +\n5 10 -\n", "line 3: block at 0x5 overlaps the previous block, which ends at 0xa", -EINVAL },
		{ "0 +\n0 10 +\n11 10 -\n", "line 3: gap: block at 0xb, but the previous block ends at 0xa", -EINVAL },
		{ "0 +\n0 0 +\n", "line 2: block at 0x0 has size 0", -EINVAL },
		{ "0 +\n0 0x10000000000000000 +\n", "line 2: size '0x10000000000000000' does not fit in 64 bits", -EINVAL },
		{ "0 +\n0 18446744073709551616 +\n", "line 2: size '18446744073709551616' does not fit", -EINVAL },
		{ "0 +\n0 18446744073709551615 +\n", "line 2: block at 0x0 of size 0xffffffffffffffff ends past 2^63", -EINVAL },
		{ "0 +\n0 0x8000000000000000 +\n", "ends past 2^63", -EINVAL },
		{ "0 +\n0 -1 +\n", "line 2: size '-1' is negative", -EINVAL },
		{ "0 +\n0 0x +\n", "line 2: size '0x' is not a number", -EINVAL },
		{ "0 +\n0 09 +\n", "line 2: size '09' is not a number", -EINVAL },
		{ "0 +\n0 1e3 +\n", "line 2: size '1e3' is not a number", -EINVAL },
		{ "0 +\n0 10 +\n\x01\x02 5 +\n", "line 3: pos '?" "?' is not a number", -EINVAL },
		{ "0 +\n0 10#c +\n", "line 2: size '10#c'", -EINVAL },
		{ "0 +\n0 10 +\n10 0xffffffffffffffff -\n", "line 3: block at 0xa of size 0xffffffffffffffff ends past", -EINVAL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = parse_str(bad[i].text, UINT64_MAX, &m, err, sizeof(err));
		CHECK(r == bad[i].ret && strstr(err, bad[i].msg), "hostile %zu: %d '%s' (want '%s')", i, r, err, bad[i].msg);
		CHECK(m.bad == NULL && m.nbad == 0, "emptied");
	}
	/* NUL byte */
	{
		static const char nul[] = "0 +\n0 1\0 +\n";
		r = ddr_map_parse(nul, sizeof(nul) - 1, UINT64_MAX, &m, err, sizeof(err));
		CHECK(r == -EINVAL && strstr(err, "line 2: NUL byte"), "%d %s", r, err);
	}
	/* long line */
	{
		size_t n = 5000;
		char *s = malloc(n + 16);
		memcpy(s, "0 +\n0 ", 6);
		memset(s + 6, '1', n);
		strcpy(s + 6 + n, " +\n");
		r = parse_str(s, UINT64_MAX, &m, err, sizeof(err));
		CHECK(r == -EINVAL && strstr(err, "line 2: 5004 characters: too long"), "%d %s", r, err);
		/* but a long comment is fine */
		memcpy(s, "0 +\n# ", 6);
		strcpy(s + 6 + n, "\n0 1 +\n");
		r = parse_str(s, 1, &m, err, sizeof(err));
		CHECK(r == 0, "%d %s", r, err);
		ddr_map_free(&m);
		free(s);
	}
	/* 100 MB file: refused before parsing */
	{
		size_t n = 100u << 20;
		char *s = malloc(n);
		memset(s, '#', n);
		s[0] = '0';
		r = ddr_map_parse(s, n, UINT64_MAX, &m, err, sizeof(err));
		CHECK(r == -EFBIG && strstr(err, "larger than 67108864 bytes"), "%d %s", r, err);
		free(s);
	}
	/* many blocks: 200000 alternating blocks parse, merged ranges right */
	{
		size_t cap = 200000 * 40 + 64, o = 0;
		char *s = malloc(cap);
		o += (size_t)sprintf(s + o, "0x0 ? 1\n");
		for (unsigned i = 0; i < 200000; i++)
			o += (size_t)sprintf(s + o, "0x%08x 0x00000200 %c\n", i * 512, i % 3 == 2 ? '+' : (i % 3 ? '-' : '*'));
		r = ddr_map_parse(s, o, 200000ull * 512, &m, err, sizeof(err));
		CHECK(r == 0 && m.nblocks == 200000 && m.nbad == 66667 && m.bad[1].pos == 3 * 512 && m.bad[1].size == 1024,
		      "%d %s nbad %u", r, err, m.nbad);
		ddr_map_free(&m);
		free(s);
	}
	/* random bytes never crash */
	{
		unsigned seed = 7;
		char buf[256];
		for (int it = 0; it < 20000; it++) {
			size_t n = 0;
			memcpy(buf, "0 +\n0 0x10 +\n", 13);
			n = 13;
			for (int k = 0; k < 40; k++) {
				seed = seed * 1103515245 + 12345;
				buf[n++] = "0123456789x+-?*/# \n\tabf"[(seed >> 16) % 23];
			}
			r = ddr_map_parse(buf, n, (seed & 1) ? UINT64_MAX : 0x100, &m, err, sizeof(err));
			ddr_map_free(&m);
		}
		CHECK(1, "random");
	}
}

static int find(const char *first, const struct split_dirent *e, size_t n, struct split_set *s, char *err)
{
	err[0] = 0;
	return split_raw_find(first, e, n, s, err, 512);
}

static void split_units(void)
{
	struct split_set s;
	char err[512];
	int r;

	{	/* FTK style, listed out of order, with unrelated files */
		struct split_dirent e[] = {
			{ "disk.003", 100, 1 }, { "disk.001", 2 * MB, 1 }, { "disk.001.txt", 900, 1 },
			{ "disk.002", 2 * MB, 1 }, { "disk.E01", 5, 1 }, { "disk.00a", 1, 1 }, { "other.004", 1, 1 },
		};
		r = find("disk.001", e, N(e), &s, err);
		CHECK(r == 0 && s.npieces == 3 && s.total_size == 4 * MB + 100 && s.piece_size == 2 * MB &&
		      s.width == 3 && s.first_number == 1, "%d %s", r, err);
		CHECK(r == 0 && !strcmp(s.pieces[2].name, "disk.003") && s.pieces[2].offset == 4 * MB, "order");
		uint64_t in;
		CHECK(split_raw_locate(&s, 0, &in) == 0 && in == 0, "loc0");
		CHECK(split_raw_locate(&s, 2 * MB, &in) == 1 && in == 0, "loc1");
		CHECK(split_raw_locate(&s, 4 * MB + 99, &in) == 2 && in == 99, "loc2");
		CHECK(split_raw_locate(&s, 4 * MB + 100, &in) == -ERANGE, "loc end");
		split_set_free(&s);
	}
	{	/* dc3dd style from .000; a width-3 series growing past 999 */
		struct split_dirent e[1002];
		char names[1002][16];
		for (int i = 0; i < 1002; i++) {
			snprintf(names[i], 16, i < 1000 ? "img.%03d" : "img.%d", i);
			e[i].name = names[i];
			e[i].size = i == 1001 ? 7 : 512;
			e[i].is_regular = 1;
		}
		r = find("img.000", e, N(e), &s, err);
		CHECK(r == 0 && s.npieces == 1002 && s.first_number == 0 && s.total_size == 1001 * 512 + 7 &&
		      !strcmp(s.pieces[1000].name, "img.1000"), "%d %s", r, err);
		split_set_free(&s);
		/* the piece after 999 written zero-padded to 4 would be another series */
		snprintf(names[1000], 16, "img.01000");
		r = find("img.000", e, N(e), &s, err);
		CHECK(r == -EINVAL && strstr(err, "img.1000 is missing: img.999 and img.1001 exist (1 pieces found after the gap)"),
		      "%d %s", r, err);
	}
	{	/* a single piece */
		struct split_dirent e[] = { { "a.b.001", 10, 1 } };
		r = find("a.b.001", e, 1, &s, err);
		CHECK(r == 0 && s.npieces == 1 && strstr(s.warnings, "only piece"), "%d %s", r, err);
		split_set_free(&s);
	}
	/* refusals */
	struct { const char *first; struct split_dirent e[5]; int n; int ret; const char *msg; } bad[] = {
		{ "d.001", { { "d.001", 10, 1 }, { "d.002", 10, 1 }, { "d.004", 10, 1 }, { "d.005", 3, 1 } }, 4, -EINVAL,
		  "d.003 is missing: d.002 and d.004 exist (2 pieces found after the gap)" },
		{ "d.001", { { "d.001", 10, 1 }, { "d.002", 9, 1 }, { "d.003", 10, 1 } }, 3, -EINVAL,
		  "d.002 has 9 bytes but d.001 has 10: all pieces but the last must be the same size" },
		{ "d.001", { { "d.001", 10, 1 }, { "d.002", 11, 1 } }, 2, -EINVAL,
		  "the last piece d.002 has 11 bytes, more than the 10" },
		{ "d.001", { { "d.001", 10, 1 }, { "d.002", 0, 1 } }, 2, -EINVAL, "d.002 is empty (0 bytes)" },
		{ "d.001", { { "d.001", 0, 1 } }, 1, -EINVAL, "d.001 is empty" },
		{ "d.001", { { "d.001", 10, 1 }, { "d.002", 10, 0 } }, 2, -EINVAL, "d.002 is not a regular file" },
		{ "d.001", { { "d.002", 10, 1 } }, 1, -ENOENT, "d.001: no such file" },
		{ "d.002", { { "d.002", 10, 1 } }, 1, -EINVAL, "d.002 is not the first piece: open d.001 (or .000)" },
		{ "d.img", { { "d.img", 10, 1 } }, 1, -EINVAL, "d.img: not a split piece name" },
		{ "d", { { "d", 10, 1 } }, 1, -EINVAL, "d: not a split piece name" },
		{ ".001", { { ".001", 10, 1 } }, 1, -EINVAL, "not a split piece name" },
		{ "d.0000001", { { "d.0000001", 10, 1 } }, 1, -EINVAL, "1 to 6 digits" },
		{ "d.001", { { "d.001", 10, 1 }, { "d.001", 10, 1 } }, 2, -EINVAL, "d.001 appears twice" },
	};
	for (size_t i = 0; i < N(bad); i++) {
		r = find(bad[i].first, bad[i].e, (size_t)bad[i].n, &s, err);
		CHECK(r == bad[i].ret && strstr(err, bad[i].msg), "bad %zu: %d '%s'", i, r, err);
		CHECK(s.npieces == 0 && !s.pieces, "emptied");
	}
	{	/* .000 next to a series from .001 is ignored; .1 next to .001 too */
		struct split_dirent e[] = { { "x.000", 5, 1 }, { "x.001", 10, 1 }, { "x.1", 99, 1 }, { "x.002", 4, 1 } };
		r = find("x.001", e, N(e), &s, err);
		CHECK(r == 0 && s.npieces == 2 && s.total_size == 14, "%d %s", r, err);
		split_set_free(&s);
	}
	{	/* too many pieces */
		size_t n = SPLIT_MAX_PIECES + 5;
		struct split_dirent *e = calloc(n, sizeof(*e));
		char (*names)[16] = calloc(n, 16);
		for (size_t i = 0; i < n; i++) {
			snprintf(names[i], 16, "m.%06zu", i + 1);
			e[i].name = names[i];
			e[i].size = 1;
			e[i].is_regular = 1;
		}
		r = find("m.000001", e, n, &s, err);
		CHECK(r == -EFBIG && strstr(err, "more than 100000 pieces"), "%d %s", r, err);
		free(e);
		free(names);
	}
}


START_TEST(ddrescue_maps)
{
	ddr_units();
}
END_TEST

START_TEST(split_sets)
{
	split_units();
}
END_TEST

/* ranges against a byte map */
START_TEST(range_lists)
{
	static uint8_t ref[4096];
	struct range_list l = { 0 }, w = { 0 };

	srand(7);
	for (int i = 0; i < 2000; i++) {
		uint64_t off = (uint64_t)(rand() % 4000), len = (uint64_t)(rand() % 64);

		ck_assert_int_eq(range_list_add(&l, off, len), 0);
		memset(ref + off, 1, len);
		if (i % 100)
			continue;
		/* sorted, disjoint, not touching; bytes right; lookups right */
		uint64_t bytes = 0;
		for (size_t k = 0; k < l.n; k++) {
			ck_assert(l.v[k].len > 0);
			if (k)
				ck_assert(l.v[k].off > l.v[k - 1].off + l.v[k - 1].len);
			bytes += l.v[k].len;
		}
		ck_assert_uint_eq(bytes, l.bytes);
		for (uint64_t x = 0; x < 4096; x += 7) {
			uint64_t n = 1 + (x % 13), c = 0;
			const struct byte_range *r = range_list_first(&l, x, n);
			size_t cnt;

			for (uint64_t y = x; y < x + n && y < 4096; y++)
				c += ref[y];
			ck_assert_msg((r != NULL) == (c > 0), "lookup at %llu", (unsigned long long)x);
			ck_assert_uint_eq(range_list_bytes_in(&l, x, n, &cnt), c);
		}
	}
	/* a window: shifted and clipped */
	ck_assert_int_eq(range_list_add_window(&w, &l, 1000, 500), 0);
	for (uint64_t x = 0; x < 500; x++)
		ck_assert_msg((range_list_first(&w, x, 1) != NULL) == (ref[1000 + x] != 0), "window byte %llu",
			      (unsigned long long)x);
	ck_assert_ptr_null(range_list_first(&l, 5, 0));
	range_list_free(&w);
	range_list_free(&l);
	/* up to the end of 64-bit space */
	ck_assert_int_eq(range_list_add(&l, UINT64_MAX - 10, 100), 0);
	ck_assert_uint_eq(l.v[0].len, 10);
	range_list_free(&l);
}
END_TEST

/* md's bad-block log: entries as the kernel reads them */
START_TEST(md_bblog)
{
	uint8_t log[4096];
	struct range_list r = { 0 };
	struct member_meta m = { 0 };
	uint64_t off;
	size_t len;
	char err[256];

	memset(log, 0, sizeof(log));
	put_le64(log, (uint64_t)1000 << 10 | 8);            /* sectors 1000-1007 */
	put_le64(log + 8, 0);                               /* skipped */
	put_le64(log + 16, (uint64_t)2000 << 10 | 1);       /* sector 2000 */
	put_le64(log + 24, UINT64_MAX);                     /* the end */
	put_le64(log + 32, (uint64_t)9 << 10 | 1);          /* past the end: ignored */
	ck_assert_int_eq(md1_bblog_parse(log, sizeof(log), 0, &r, err, sizeof(err)), 0);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_uint_eq(r.v[0].off, 1000 * 512);
	ck_assert_uint_eq(r.v[0].len, 8 * 512);
	ck_assert_uint_eq(r.v[1].off, 2000 * 512);
	range_list_free(&r);
	/* shift 3: units of 8 sectors */
	ck_assert_int_eq(md1_bblog_parse(log, 8, 3, &r, err, sizeof(err)), 0);
	ck_assert_uint_eq(r.v[0].off, 8000 * 512);
	ck_assert_uint_eq(r.v[0].len, 64 * 512);
	range_list_free(&r);
	/* where it is: 1.2's superblock at 8, log 16 sectors further */
	snprintf(m.format, sizeof(m.format), "1.2");
	m.super_offset = 8;
	m.bblog_offset = 16;
	m.bblog_size = 8;
	ck_assert_int_eq(md1_bblog_locate(&m, 1 << 20, &off, &len, err, sizeof(err)), -ENOENT);
	m.feature_map = 8;
	ck_assert_int_eq(md1_bblog_locate(&m, 1 << 20, &off, &len, err, sizeof(err)), 0);
	ck_assert_uint_eq(off, 24 * 512);
	ck_assert_uint_eq(len, 4096);
	m.bblog_size = 9;
	ck_assert_int_eq(md1_bblog_locate(&m, 1 << 20, &off, &len, err, sizeof(err)), -EINVAL);
	m.bblog_size = 8;
	m.bblog_offset = -100;
	ck_assert_int_eq(md1_bblog_locate(&m, 1 << 20, &off, &len, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "outside the device"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("evidence");
	TCase *tc = tcase_create("parsers");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, range_lists);
	tcase_add_test(tc, ddrescue_maps);
	tcase_add_test(tc, split_sets);
	tcase_add_test(tc, md_bblog);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
