/* layout.c - md RAID4/5/6 block mapping (pure math, no I/O, no allocation).
 *
 * The placement of P, Q and data follows the kernel's raid5_compute_sector()
 * (drivers/md/raid5.c) case by case, so that a reader can hold the two side
 * by side.  The Q syndrome slot numbering follows set_syndrome_sources(),
 * raid6_d0() and raid6_idx_to_slot() in the same file.
 */
#include "layout.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* md's limits on the chunk size.  The kernel itself wants a multiple of
 * PAGE_SIZE (4 KiB on x86), but the mapping is exact at sector granularity
 * and layout.h promises ">= 512", so we accept any power of two from one
 * sector upwards; mdadm never creates anything below 4 KiB anyway. */
#define CHUNK_MIN_BYTES 512u
#define CHUNK_MAX_BYTES (1u << 30)

static bool is_ddf_layout(int layout)
{
	return layout == LAYOUT_ROTATING_ZERO_RESTART ||
	       layout == LAYOUT_ROTATING_N_RESTART ||
	       layout == LAYOUT_ROTATING_N_CONTINUE;
}

static bool raid5_layout_valid(int layout)
{
	return layout >= LAYOUT_LEFT_ASYMMETRIC && layout <= LAYOUT_PARITY_N;
}

static bool raid6_layout_valid(int layout)
{
	return raid5_layout_valid(layout) || is_ddf_layout(layout) ||
	       (layout >= LAYOUT_LEFT_ASYMMETRIC_6 && layout <= LAYOUT_PARITY_0_6);
}

static bool is_power_of_2(uint32_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static int check_disks(const struct layout_geom *g, const char **why)
{
	/* 2-disk RAID4/5 is a mirror (P = the single data chunk); md accepts
	 * a RAID6 down to 4 disks (2 data + P + Q). */
	int min = g->level == 6 ? 4 : 2;

	if (g->raid_disks < min) {
		*why = g->level == 6 ? "RAID6 needs at least 4 raid disks"
				     : "RAID4/5 needs at least 2 raid disks";
		return -EINVAL;
	}
	if (g->raid_disks > LAYOUT_MAX_DISKS) {
		*why = "too many raid disks (more than 256)";
		return -EINVAL;
	}
	return 0;
}

static int check_layout(const struct layout_geom *g, const char **why)
{
	switch (g->level) {
	case 4:
		/* RAID4 is always parity-last whatever the superblock's
		 * layout field says (md writes 0 or 5 there). */
		return 0;
	case 5:
		if (raid5_layout_valid(g->layout))
			return 0;
		*why = "invalid layout for RAID5 (valid: 0-5)";
		return -EINVAL;
	case 6:
		if (raid6_layout_valid(g->layout))
			return 0;
		*why = "invalid layout for RAID6 (valid: 0-5, 8-10, 16-20)";
		return -EINVAL;
	}
	*why = "unsupported RAID level (only 4, 5 and 6)";
	return -EINVAL;
}

static int check_chunk(const struct layout_geom *g, const char **why)
{
	if (g->chunk_bytes == 0) {
		*why = "chunk size is zero";
		return -EINVAL;
	}
	if (!is_power_of_2(g->chunk_bytes)) {
		*why = "chunk size is not a power of two";
		return -EINVAL;
	}
	if (g->chunk_bytes < CHUNK_MIN_BYTES) {
		*why = "chunk size is smaller than 512 bytes";
		return -EINVAL;
	}
	if (g->chunk_bytes > CHUNK_MAX_BYTES) {
		*why = "chunk size is larger than 1 GiB";
		return -EINVAL;
	}
	return 0;
}

int layout_check(const struct layout_geom *g, const char **why)
{
	const char *dummy;
	int err;

	if (why == NULL)
		why = &dummy;
	*why = NULL;
	if (g == NULL) {
		*why = "no geometry given";
		return -EINVAL;
	}
	if (g->level != 4 && g->level != 5 && g->level != 6) {
		*why = "unsupported RAID level (only 4, 5 and 6)";
		return -EINVAL;
	}
	err = check_disks(g, why);
	if (err == 0)
		err = check_layout(g, why);
	if (err == 0)
		err = check_chunk(g, why);
	return err;
}

int layout_data_disks(const struct layout_geom *g)
{
	return g->raid_disks - (g->level == 6 ? 2 : 1);
}

/* stripe mod m: the "sector_div(stripe2, m)" of raid5_compute_sector. */
static int rot(uint64_t stripe, int m)
{
	return (int)(stripe % (uint64_t)m);
}

/* Where raid5_compute_sector() puts P and data chunk dd_idx of a RAID4/5
 * stripe.  Returns the disk of the data chunk. */
static int raid5_compute(const struct layout_geom *g, uint64_t stripe,
			 int dd_idx, int *pd_idx)
{
	int raid_disks = g->raid_disks;
	int data_disks = raid_disks - 1;
	int pd;

	if (g->level == 4) {
		*pd_idx = data_disks;
		return dd_idx;
	}
	switch (g->layout) {
	case LAYOUT_LEFT_ASYMMETRIC:
		pd = data_disks - rot(stripe, raid_disks);
		if (dd_idx >= pd)
			dd_idx++;
		break;
	case LAYOUT_RIGHT_ASYMMETRIC:
		pd = rot(stripe, raid_disks);
		if (dd_idx >= pd)
			dd_idx++;
		break;
	case LAYOUT_LEFT_SYMMETRIC:
		pd = data_disks - rot(stripe, raid_disks);
		dd_idx = (pd + 1 + dd_idx) % raid_disks;
		break;
	case LAYOUT_RIGHT_SYMMETRIC:
		pd = rot(stripe, raid_disks);
		dd_idx = (pd + 1 + dd_idx) % raid_disks;
		break;
	case LAYOUT_PARITY_0:
		pd = 0;
		dd_idx++;
		break;
	case LAYOUT_PARITY_N:
	default:	/* unreachable for a checked geometry */
		pd = data_disks;
		break;
	}
	*pd_idx = pd;
	return dd_idx;
}

/* The asymmetric RAID6 placement shared by layouts 0, 1, 8 and 9: Q follows
 * P, and data fills the remaining disks in ascending order ("Q D D D P" when
 * P is on the last disk, "D D P Q D" otherwise). */
static int raid6_asym(int raid_disks, int pd, int dd_idx, int *qd_idx)
{
	if (pd == raid_disks - 1) {
		*qd_idx = 0;
		return dd_idx + 1;
	}
	*qd_idx = pd + 1;
	return dd_idx >= pd ? dd_idx + 2 : dd_idx;
}

/* Layouts 16-20: a RAID5 layout over the first n-1 disks, Q on the last. */
static int raid6_on_raid5(const struct layout_geom *g, uint64_t stripe,
			  int dd_idx, int *pd_idx, int *qd_idx)
{
	struct layout_geom g5 = *g;

	g5.level = 5;
	g5.raid_disks = g->raid_disks - 1;
	/* 16..20 are RAID5 layouts 0..4 (parity-first-6 = parity-first) */
	g5.layout = g->layout - LAYOUT_LEFT_ASYMMETRIC_6;
	*qd_idx = g->raid_disks - 1;
	return raid5_compute(&g5, stripe, dd_idx, pd_idx);
}

/* Where raid5_compute_sector() puts P, Q and data chunk dd_idx of a RAID6
 * stripe.  Returns the disk of the data chunk. */
static int raid6_compute(const struct layout_geom *g, uint64_t stripe,
			 int dd_idx, int *pd_idx, int *qd_idx)
{
	int raid_disks = g->raid_disks;
	int data_disks = raid_disks - 2;
	int pd, dd;

	switch (g->layout) {
	case LAYOUT_LEFT_ASYMMETRIC:
		pd = raid_disks - 1 - rot(stripe, raid_disks);
		dd = raid6_asym(raid_disks, pd, dd_idx, qd_idx);
		break;
	case LAYOUT_RIGHT_ASYMMETRIC:
	case LAYOUT_ROTATING_ZERO_RESTART:	/* same placement, ddf Q order */
		pd = rot(stripe, raid_disks);
		dd = raid6_asym(raid_disks, pd, dd_idx, qd_idx);
		break;
	case LAYOUT_ROTATING_N_RESTART:
		/* left-asymmetric shifted by one stripe, so that stripe 0
		 * reads "D D D P Q" rather than "Q D D D P".  Reduce first:
		 * stripe + 1 must not wrap at 2^64. */
		pd = raid_disks - 1 - (rot(stripe, raid_disks) + 1) % raid_disks;
		dd = raid6_asym(raid_disks, pd, dd_idx, qd_idx);
		break;
	case LAYOUT_LEFT_SYMMETRIC:
		pd = raid_disks - 1 - rot(stripe, raid_disks);
		*qd_idx = (pd + 1) % raid_disks;
		dd = (pd + 2 + dd_idx) % raid_disks;
		break;
	case LAYOUT_RIGHT_SYMMETRIC:
		pd = rot(stripe, raid_disks);
		*qd_idx = (pd + 1) % raid_disks;
		dd = (pd + 2 + dd_idx) % raid_disks;
		break;
	case LAYOUT_ROTATING_N_CONTINUE:
		/* left-symmetric with Q just before P */
		pd = raid_disks - 1 - rot(stripe, raid_disks);
		*qd_idx = (pd + raid_disks - 1) % raid_disks;
		dd = (pd + 1 + dd_idx) % raid_disks;
		break;
	case LAYOUT_PARITY_0:
		pd = 0;
		*qd_idx = 1;
		dd = dd_idx + 2;
		break;
	case LAYOUT_PARITY_N:
		pd = data_disks;
		*qd_idx = data_disks + 1;
		dd = dd_idx;
		break;
	default:	/* 16-20 */
		return raid6_on_raid5(g, stripe, dd_idx, pd_idx, qd_idx);
	}
	*pd_idx = pd;
	return dd;
}

/* Disk of data chunk dd_idx of `stripe`; also P and Q (-1 for RAID4/5). */
static int compute_disks(const struct layout_geom *g, uint64_t stripe,
			 int dd_idx, int *pd_idx, int *qd_idx)
{
	if (g->level == 6)
		return raid6_compute(g, stripe, dd_idx, pd_idx, qd_idx);
	*qd_idx = -1;
	return raid5_compute(g, stripe, dd_idx, pd_idx);
}

/* Q syndrome slots (set_syndrome_sources).  md layouts number only the data
 * blocks, walking the disks cyclically from raid6_d0() = the disk after Q;
 * ddf layouts number every disk in device order and feed zero blocks for P
 * and Q, so slot = disk. */
static void fill_q_slots(const struct layout_geom *g, struct stripe_map *m)
{
	int n = m->n;
	int disk, d0, i, slot;

	if (g->level != 6) {
		/* No Q: the slot is just the data index (P is order-free). */
		for (disk = 0; disk < n; disk++)
			m->disk_slot[disk] = m->disk_data[disk];
		m->q_slots = m->k;
		return;
	}
	if (is_ddf_layout(g->layout)) {
		for (disk = 0; disk < n; disk++)
			m->disk_slot[disk] = m->disk_data[disk] < 0 ? -1 : disk;
		m->q_slots = n;
		return;
	}
	d0 = m->q_disk == n - 1 ? 0 : m->q_disk + 1;
	slot = 0;
	for (i = 0; i < n; i++) {
		disk = (d0 + i) % n;
		m->disk_slot[disk] = m->disk_data[disk] < 0 ? -1 : slot++;
	}
	m->q_slots = m->k;
}

void layout_map_stripe(const struct layout_geom *g, uint64_t stripe, struct stripe_map *m)
{
	int n = g->raid_disks;
	int k = layout_data_disks(g);
	int d, disk;

	m->n = n;
	m->k = k;
	for (disk = 0; disk < n; disk++) {
		m->data_disk[disk] = -1;	/* entries k..n-1 stay -1 */
		m->disk_data[disk] = -1;	/* P and Q stay -1 */
	}
	for (d = 0; d < k; d++) {
		disk = compute_disks(g, stripe, d, &m->p_disk, &m->q_disk);
		m->data_disk[d] = disk;
		m->disk_data[disk] = d;
	}
	fill_q_slots(g, m);
}

void layout_locate(const struct layout_geom *g, uint64_t array_off, struct layout_pos *pos)
{
	uint64_t chunk_bytes = g->chunk_bytes;
	uint64_t chunk = array_off / chunk_bytes;
	int k = layout_data_disks(g);
	int pd, qd;

	pos->chunk_off = (uint32_t)(array_off % chunk_bytes);
	pos->stripe = chunk / (uint64_t)k;
	pos->data_index = (int)(chunk % (uint64_t)k);
	pos->disk = compute_disks(g, pos->stripe, pos->data_index, &pd, &qd);
	pos->member_off = pos->stripe * chunk_bytes + pos->chunk_off;
}

/* ---- names ---- */

struct layout_name_map {
	const char *name;
	int layout;
};

/* mdadm's r5layout[] (maps.c).  The first entry for a number is its
 * canonical name.  The ddf-* names are mdadm's aliases for the RAID5
 * layouts a DDF container's RAID5 PRL/RLQ maps to. */
static const struct layout_name_map raid5_names[] = {
	{ "left-asymmetric", LAYOUT_LEFT_ASYMMETRIC },
	{ "right-asymmetric", LAYOUT_RIGHT_ASYMMETRIC },
	{ "left-symmetric", LAYOUT_LEFT_SYMMETRIC },
	{ "right-symmetric", LAYOUT_RIGHT_SYMMETRIC },
	{ "parity-first", LAYOUT_PARITY_0 },
	{ "parity-last", LAYOUT_PARITY_N },
	{ "default", LAYOUT_LEFT_SYMMETRIC },
	{ "la", LAYOUT_LEFT_ASYMMETRIC },
	{ "ra", LAYOUT_RIGHT_ASYMMETRIC },
	{ "ls", LAYOUT_LEFT_SYMMETRIC },
	{ "rs", LAYOUT_RIGHT_SYMMETRIC },
	{ "ddf-zero-restart", LAYOUT_RIGHT_ASYMMETRIC },
	{ "ddf-N-restart", LAYOUT_LEFT_ASYMMETRIC },
	{ "ddf-N-continue", LAYOUT_LEFT_SYMMETRIC },
	{ NULL, -1 }
};

/* mdadm's r6layout[]. */
static const struct layout_name_map raid6_names[] = {
	{ "left-asymmetric", LAYOUT_LEFT_ASYMMETRIC },
	{ "right-asymmetric", LAYOUT_RIGHT_ASYMMETRIC },
	{ "left-symmetric", LAYOUT_LEFT_SYMMETRIC },
	{ "right-symmetric", LAYOUT_RIGHT_SYMMETRIC },
	{ "parity-first", LAYOUT_PARITY_0 },
	{ "parity-last", LAYOUT_PARITY_N },
	{ "ddf-zero-restart", LAYOUT_ROTATING_ZERO_RESTART },
	{ "ddf-N-restart", LAYOUT_ROTATING_N_RESTART },
	{ "ddf-N-continue", LAYOUT_ROTATING_N_CONTINUE },
	{ "left-asymmetric-6", LAYOUT_LEFT_ASYMMETRIC_6 },
	{ "right-asymmetric-6", LAYOUT_RIGHT_ASYMMETRIC_6 },
	{ "left-symmetric-6", LAYOUT_LEFT_SYMMETRIC_6 },
	{ "right-symmetric-6", LAYOUT_RIGHT_SYMMETRIC_6 },
	{ "parity-first-6", LAYOUT_PARITY_0_6 },
	{ "default", LAYOUT_LEFT_SYMMETRIC },
	{ "la", LAYOUT_LEFT_ASYMMETRIC },
	{ "ra", LAYOUT_RIGHT_ASYMMETRIC },
	{ "ls", LAYOUT_LEFT_SYMMETRIC },
	{ "rs", LAYOUT_RIGHT_SYMMETRIC },
	{ NULL, -1 }
};

/* RAID4 has exactly one layout. */
static const struct layout_name_map raid4_names[] = {
	{ "parity-last", LAYOUT_PARITY_N },
	{ "default", LAYOUT_PARITY_N },
	{ NULL, -1 }
};

static const struct layout_name_map *names_for_level(int level)
{
	switch (level) {
	case 4:
		return raid4_names;
	case 5:
		return raid5_names;
	case 6:
		return raid6_names;
	}
	return NULL;
}

/* A plain decimal number: digits only (no sign, no blanks), < 10^6. */
static int parse_decimal(const char *s, int *out)
{
	int v = 0;

	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v >= 100000)
			return -EINVAL;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return 0;
}

static bool number_valid_for_level(int level, int layout)
{
	switch (level) {
	case 4:
		/* md writes 0 (or 5 after a RAID5 takeover) for RAID4. */
		return layout == 0 || layout == LAYOUT_PARITY_N;
	case 5:
		return raid5_layout_valid(layout);
	case 6:
		return raid6_layout_valid(layout);
	}
	return false;
}

/* ASCII-only case folding: strcasecmp() follows the locale, and a Turkish
 * locale would not fold "LEFT-SYMMETRIC" onto "left-symmetric". */
static int ascii_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static bool name_eq(const char *a, const char *b)
{
	for (; *a != '\0' && *b != '\0'; a++, b++)
		if (ascii_lower((unsigned char)*a) != ascii_lower((unsigned char)*b))
			return false;
	return *a == *b;
}

int layout_from_name(int level, const char *name, int *layout)
{
	const struct layout_name_map *map = names_for_level(level);
	int v;

	if (map == NULL || name == NULL || layout == NULL)
		return -EINVAL;
	if (parse_decimal(name, &v) == 0) {
		if (!number_valid_for_level(level, v))
			return -EINVAL;
		*layout = v;
		return 0;
	}
	/* mdadm compares case-sensitively; "ddf-N-restart" is easy to
	 * mistype, and no two names differ only in case, so we do not. */
	for (; map->name != NULL; map++) {
		if (name_eq(map->name, name)) {
			*layout = map->layout;
			return 0;
		}
	}
	return -EINVAL;
}

const char *layout_name(int level, int layout)
{
	const struct layout_name_map *map = names_for_level(level);

	/* Any RAID4 layout number is mapped as parity-last (layout_check). */
	if (level == 4)
		return "parity-last";
	if (map == NULL)
		return "unknown";
	for (; map->name != NULL; map++)
		if (map->layout == layout)
			return map->name;
	return "unknown";
}
