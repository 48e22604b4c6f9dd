/* fuzz_md1.c - md 1.x superblock parser (md1_parse) and, for what it
 * accepts, the round trip through md1_build.
 *
 * Input: u8 flags (bit 0: fix the checksum first), u64 LE image size in
 * sectors, then the superblock bytes (at most 4096).
 * Properties: no crash; an accepted superblock has a sane geometry and a
 * role that matches its dev_roles entry; if md1_build writes it again,
 * parsing that gives the same array.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "format.h"

static void check_sane(const struct member_meta *m)
{
	if (m->raid_disks < 1 || m->raid_disks > 256)
		fuzz_fail("raid_disks %d accepted", m->raid_disks);
	if (m->max_dev < m->raid_disks || m->max_dev > META_MAX_DEVS)
		fuzz_fail("max_dev %d accepted for %d raid disks", m->max_dev, m->raid_disks);
	if (m->dev_number < 0 || m->dev_number >= m->max_dev)
		fuzz_fail("dev_number %d accepted", m->dev_number);
	if (m->role != m->dev_roles[m->dev_number])
		fuzz_fail("role %d but dev_roles says %d", m->role, m->dev_roles[m->dev_number]);
	if (m->chunk_bytes % 512)
		fuzz_fail("chunk_bytes %u not whole sectors", m->chunk_bytes);
	if (m->component_sectors > m->data_size)
		fuzz_fail("component size beyond data_size accepted");
}

/* Fields the writer must keep, one by one so a failure names the field. */
#define SAME(f) \
	do { \
		if (a->f != b->f) \
			fuzz_fail("md1_build + md1_parse changed " #f ": %lld -> %lld", \
				  (long long)a->f, (long long)b->f); \
	} while (0)
/* the same, for fields where 0 asks the writer for its default */
#define SAME_NZ(f) \
	do { \
		if (a->f) \
			SAME(f); \
	} while (0)

static void check_same(const struct member_meta *a, const struct member_meta *b)
{
	SAME(level);
	SAME(layout);
	SAME(chunk_bytes);
	SAME(raid_disks);
	SAME_NZ(component_sectors);
	SAME_NZ(data_offset);
	SAME(events);
	SAME(role);
	SAME(dev_number);
	SAME(resync_offset);
	SAME(reshape_active);
	if (memcmp(a->set_uuid, b->set_uuid, 16))
		fuzz_fail("md1_build + md1_parse changed the set uuid");
	for (int i = 0; i < a->raid_disks && i < a->max_dev; i++)
		SAME(dev_roles[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	static uint8_t sb[4096], out_sb[4096];
	static struct member_meta m, again;
	uint8_t flags = fuzz_u8(&in);
	uint64_t dev_sectors = fuzz_u64(&in);
	const uint8_t *p;
	char err[256];
	uint64_t image_off;
	size_t len, sb_len;

	p = fuzz_bytes(&in, sizeof(sb), &len);
	memcpy(sb, p, len);
	if (flags & 1)
		fuzz_fix_md_csum(sb, len);
	if (md1_parse(sb, len, dev_sectors, &m, err, sizeof(err)))
		return 0;
	check_sane(&m);
	if (md1_build(&m, out_sb, sizeof(out_sb), dev_sectors, &image_off, &sb_len))
		return 0;
	if (sb_len > sizeof(out_sb) || image_off / 512 >= dev_sectors)
		fuzz_fail("md1_build put %zu bytes at %llu of a %llu-sector image", sb_len,
			  (unsigned long long)image_off, (unsigned long long)dev_sectors);
	if (md1_parse(out_sb, sb_len, dev_sectors, &again, err, sizeof(err)))
		fuzz_fail("md1_build wrote a superblock md1_parse refuses: %s", err);
	check_same(&m, &again);
	return 0;
}
