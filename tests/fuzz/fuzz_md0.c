/* fuzz_md0.c - md 0.90 superblock parser (md0_parse) and, for what it
 * accepts, the round trip through md0_build.
 *
 * Input: u8 flags (bit 0: fix the checksum first), u64 LE image size in
 * sectors, then the superblock bytes (at most 4096).
 * Properties: no crash; an accepted superblock has a sane geometry; if
 * md0_build writes it again, parsing that gives the same array.
 */
#include <string.h>

#include "fuzz.h"
#include "format.h"

static void check_sane(const struct member_meta *m)
{
	if (m->raid_disks < 1 || m->raid_disks > 27)
		fuzz_fail("raid_disks %d accepted", m->raid_disks);
	if (m->dev_number < 0 || m->dev_number >= 27)
		fuzz_fail("dev_number %d accepted", m->dev_number);
	if (m->role >= m->raid_disks && !m->reshape_active)
		fuzz_fail("role %d of %d accepted", m->role, m->raid_disks);
	if (m->data_offset != 0)
		fuzz_fail("0.90 data_offset %llu", (unsigned long long)m->data_offset);
}

/* Fields the writer must keep, one by one so a failure names the field. */
#define SAME(f) \
	do { \
		if (a->f != b->f) \
			fuzz_fail("md0_build + md0_parse changed " #f ": %lld -> %lld", \
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
	SAME(events);
	SAME(role);
	SAME(dev_number);
	if (memcmp(a->set_uuid, b->set_uuid, 16))
		fuzz_fail("md0_build + md0_parse changed the set uuid");
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
	if (md0_parse(sb, len, dev_sectors, &m, err, sizeof(err)))
		return 0;
	check_sane(&m);
	if (md0_build(&m, out_sb, sizeof(out_sb), dev_sectors, &image_off, &sb_len))
		return 0;
	if (md0_parse(out_sb, sb_len, dev_sectors, &again, err, sizeof(err)))
		fuzz_fail("md0_build wrote a superblock md0_parse refuses: %s", err);
	check_same(&m, &again);
	return 0;
}
