/* fuzz_geometry.c - the command-line geometry: geom_args_opt and
 * geom_args_prepare (--level, --layout, --chunk, --order, sizes, the
 * images and 'missing'), parse_size, layout_from_name, and for every
 * geometry they accept the block mapping of layout.c.  Links only the
 * pure core.
 *
 * Input: records of u8 what, then a NUL-terminated string (the rest of the
 * input if there is no NUL).  what % 11: 0..6 = --level, --layout, --chunk,
 * --order, --data-offset, --member-size, --force with that string as the
 * value; 7 = an image path; 8 = the word "missing"; 9 = --raid-devices,
 * 10 = --reshape-position.
 * Properties: no crash; --level takes exactly 4, 5, 6 and raid4..raid6 (any
 * case), --chunk a plain number as KiB (mdadm's unit) and a size with a
 * suffix as bytes; an accepted manual geometry names every image exactly
 * once (--order), has --raid-devices members if given, passes layout_check
 * or is refused by it, and its stripe maps are permutations: every data
 * chunk, P and Q on distinct members, the inverse maps agree, Q slots
 * distinct, and layout_locate agrees with layout_map_stripe.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "geom_args.h"
#include "layout.h"
#include "util.h"

#define MAX_ARGS 700

static void check_map(const struct layout_geom *g, uint64_t stripe)
{
	static struct stripe_map m;
	bool used[LAYOUT_MAX_DISKS] = { false }, slot[LAYOUT_MAX_DISKS] = { false };
	int n = g->raid_disks, k = layout_data_disks(g);

	layout_map_stripe(g, stripe, &m);
	if (m.n != n || m.k != k)
		fuzz_fail("stripe %llu: n %d k %d, want %d %d", (unsigned long long)stripe, m.n, m.k, n, k);
	if (m.p_disk < 0 || m.p_disk >= n)
		fuzz_fail("stripe %llu: P on disk %d of %d", (unsigned long long)stripe, m.p_disk, n);
	used[m.p_disk] = true;
	if (g->level == 6) {
		if (m.q_disk < 0 || m.q_disk >= n || used[m.q_disk])
			fuzz_fail("stripe %llu: Q on disk %d (P %d)", (unsigned long long)stripe, m.q_disk, m.p_disk);
		used[m.q_disk] = true;
	} else if (m.q_disk != -1) {
		fuzz_fail("RAID%d with a Q disk %d", g->level, m.q_disk);
	}
	for (int d = 0; d < k; d++) {
		int disk = m.data_disk[d];

		if (disk < 0 || disk >= n || used[disk])
			fuzz_fail("stripe %llu (layout %d, %d disks): data %d on disk %d twice or out of range",
				  (unsigned long long)stripe, g->layout, n, d, disk);
		used[disk] = true;
		if (m.disk_data[disk] != d)
			fuzz_fail("disk_data[%d] %d, want %d", disk, m.disk_data[disk], d);
		if (g->level == 6) {
			int s = m.disk_slot[disk];

			if (s < 0 || s >= m.q_slots || slot[s])
				fuzz_fail("stripe %llu: Q slot %d of disk %d", (unsigned long long)stripe, s, disk);
			slot[s] = true;
		}
	}
	if (m.disk_data[m.p_disk] != -1 || (g->level == 6 && m.disk_data[m.q_disk] != -1))
		fuzz_fail("P/Q disk holds a data index");
	/* layout_locate of each data chunk's first and last byte */
	for (int d = 0; d < k; d++) {
		uint64_t chunk = stripe * (uint64_t)k + (uint64_t)d;
		struct layout_pos pos;

		if (chunk > (UINT64_MAX >> 1) / g->chunk_bytes)
			break;
		layout_locate(g, chunk * g->chunk_bytes + g->chunk_bytes - 1, &pos);
		if (pos.stripe != stripe || pos.data_index != d || pos.disk != m.data_disk[d] ||
		    pos.chunk_off != g->chunk_bytes - 1 ||
		    pos.member_off != stripe * g->chunk_bytes + g->chunk_bytes - 1)
			fuzz_fail("layout_locate disagrees with layout_map_stripe at stripe %llu data %d",
				  (unsigned long long)stripe, d);
	}
}

static void check_geometry(const struct layout_geom *g)
{
	static const uint64_t far[] = { 1000003, 1ull << 32, (1ull << 40) + 7, UINT64_MAX / 3 };
	const char *name;
	int back;

	if (layout_check(g, NULL))
		return;
	for (uint64_t s = 0; s < 2 * (uint64_t)g->raid_disks + 2; s++)
		check_map(g, s);
	for (size_t i = 0; i < ARRAY_LEN(far); i++)
		check_map(g, far[i]);
	name = layout_name(g->level, g->layout);
	if (g->level != 4 && strcmp(name, "unknown") &&
	    (layout_from_name(g->level, name, &back) || back != g->layout))
		fuzz_fail("layout %d is named '%s' which reads back as another", g->layout, name);
}

/* The mdadm spellings of --level and --chunk, against a reference. */
static void check_spellings(const char *s)
{
	char err[256];
	int level = 0;
	uint32_t chunk = 0;
	uint64_t v;
	const char *num = strncasecmp(s, "raid", 4) ? s : s + 4;
	size_t digits = strspn(s, "0123456789"), n = strlen(num);

	/* (parse_int's leading blanks, sign and zeros are fine) */
	if (!geom_parse_level(s, &level, err, sizeof(err))) {
		if (level < 4 || level > 6 || !n || num[n - 1] != '0' + level)
			fuzz_fail("--level \"%s\" taken as %d", s, level);
	} else if (num[0] >= '4' && num[0] <= '6' && !num[1]) {
		fuzz_fail("--level \"%s\" refused", s);
	}
	if (!geom_parse_chunk(s, &chunk, err, sizeof(err))) {
		if (chunk < 4096 || chunk > (1u << 30) || (chunk & (chunk - 1)))
			fuzz_fail("--chunk \"%s\" taken as %u", s, chunk);
		if (digits && !s[digits] && (uint64_t)chunk != strtoull(s, NULL, 10) * 1024)
			fuzz_fail("--chunk \"%s\" (KiB) taken as %u bytes", s, chunk);
		if ((!digits || s[digits]) && (parse_size(s, &v) || v != chunk))
			fuzz_fail("--chunk \"%s\" (a size) taken as %u bytes", s, chunk);
	}
}

/* Parsers that take any string: they must not crash, and what parse_size
 * accepts must be a whole number of bytes. */
static void check_string(const char *s)
{
	uint64_t v;
	long long ll;
	int layout;

	check_spellings(s);
	if (parse_size(s, &v) == 0 && strspn(s, "0123456789") == strlen(s) && strlen(s) < 19 &&
	    v != strtoull(s, NULL, 10))
		fuzz_fail("parse_size(\"%s\") = %llu", s, (unsigned long long)v);
	parse_int(s, -1000, 1000, &ll);
	for (int level = 4; level <= 6; level++) {
		struct layout_geom g = { level, 0, level + 1, 65536 };

		if (layout_from_name(level, s, &layout) == 0) {
			g.layout = layout;
			if (layout_check(&g, NULL))
				fuzz_fail("layout_from_name(%d, \"%s\") = %d which layout_check refuses",
					  level, s, layout);
		}
	}
}

/* An accepted manual geometry: every image in exactly one role, the member
 * count --raid-devices says. */
static void check_order(const struct geom_args *ga)
{
	static int seen[MAX_ARGS];

	memset(seen, 0, sizeof(seen));
	if (ga->geom.raid_disks != ga->norder || (ga->raid_devices && ga->raid_devices != ga->norder))
		fuzz_fail("%d members, %d order entries, --raid-devices %d", ga->geom.raid_disks, ga->norder,
			  ga->raid_devices);
	for (int r = 0; r < ga->norder; r++) {
		int i = ga->order[r];

		if (i < -1 || i >= ga->npaths)
			fuzz_fail("role %d: image %d of %d", r, i, ga->npaths);
		if (i >= 0 && seen[i]++)
			fuzz_fail("image %d in two roles", i);
	}
	for (int i = 0; i < ga->npaths; i++)
		if (!seen[i])
			fuzz_fail("image %d (%s) in no role", i, ga->paths[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char arena[1 << 16];
	static char *argv[MAX_ARGS];
	static struct geom_args ga;
	static const int opts[] = { GEOM_OPT_LEVEL, GEOM_OPT_LAYOUT, GEOM_OPT_CHUNK, GEOM_OPT_ORDER,
				    GEOM_OPT_DATA_OFFSET, GEOM_OPT_MEMBER_SIZE, GEOM_OPT_FORCE };
	static const int more_opts[] = { GEOM_OPT_RAID_DEVICES, GEOM_OPT_RESHAPE_POS };
	char err[512];
	struct fuzz_in in = { data, size };
	size_t used = 0;
	int argc = 0;
	bool ok = true;

	if (size > sizeof(arena) / 2)
		return 0;
	geom_args_init(&ga);
	while (in.left) {
		uint8_t what = fuzz_u8(&in) % 11;
		const uint8_t *nul = memchr(in.p, '\0', in.left);
		size_t len = nul ? (size_t)(nul - in.p) : in.left, got;
		const uint8_t *p = fuzz_bytes(&in, len, &got);
		char *s = arena + used;

		fuzz_u8(&in);                   /* the NUL */
		memcpy(s, p, got);
		s[got] = '\0';
		used += got + 1;
		check_string(s);
		if (what < 7 || what > 8) {
			int opt = what < 7 ? opts[what] : more_opts[what - 9];

			if (ok && geom_args_opt(&ga, opt, s, err, sizeof(err)) < 0)
				ok = false;
		} else if (argc < MAX_ARGS) {
			argv[argc++] = what == 7 ? s : (char *)"missing";
		}
	}
	if (ok && geom_args_prepare(&ga, argc, argv, err, sizeof(err)) == 0 && ga.manual) {
		check_order(&ga);
		check_geometry(&ga.geom);
	}
	geom_args_free(&ga);
	return 0;
}
