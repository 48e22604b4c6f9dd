/* fuzz_imsm.c - IMSM metadata (src/core/imsm.c) and the format behind it:
 * the input is the last N bytes of a 64 MiB device whose other bytes read
 * as zeros (the MPB anchor at input[N-1024..], or input[N-8192..] for 4 KiB
 * sectors).
 * Properties: no crash; every refusal says why; counts and indices within
 * their limits; a serial from the disk table finds its disk; the format's
 * probe agrees with the parser; a replacement written from the metadata
 * parses again, a generation newer, with the new serial in the slot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "fuzz.h"
#include "imsm.h"
#include "mem_dev.h"

#define DEV (64ull << 20)

static int put_tail(void *ctx, const void *buf, size_t len, uint64_t off)
{
	uint8_t *tail = ctx;

	if (off < DEV - 16384 || len > DEV - off)
		return -EIO;
	memcpy(tail + (off - (DEV - 16384)), buf, len);
	return 0;
}

static void check_replace(const struct dev_reader *r, const struct imsm_info *in, const struct format_found *f)
{
	static uint8_t tail[16384];
	static struct imsm_info after;
	struct member_meta m = f->vol[0];
	struct memdev nd = { .tail = tail, .tail_len = sizeof(tail), .size = DEV };
	struct dev_reader nr = memdev_reader(&nd);
	char err[256];
	int d;

	if (in->volumes[0].migr_state || in->sector_size != 512 || (uint64_t)(in->mpb_sectors + 1) * 512 > sizeof(tail))
		return;
	m.role = 0;
	memset(tail, 0, sizeof(tail));
	if (format_imsm.replace(r, &m, "fuzz-new-disk", DEV / 512, put_tail, tail, err, sizeof(err))) {
		if (!err[0])
			fuzz_fail("replace refused without a message");
		return;
	}
	if (imsm_parse(&nr, &after, err, sizeof(err)))
		fuzz_fail("the replacement's metadata does not parse: %s", err);
	d = in->volumes[0].maps[0].slots[0].disk;
	if (after.generation_num != in->generation_num + 1 || strcmp(after.disks[d].serial_str, "fuzz-new-disk"))
		fuzz_fail("replacement: generation %u (was %u), serial '%s'", after.generation_num, in->generation_num,
			  after.disks[d].serial_str);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct imsm_info info;
	static struct format_found f;
	struct memdev md = { .tail = data, .tail_len = size, .size = DEV };
	struct dev_reader r;
	char err[256], why[256];
	int rc;

	if (size > md.size)
		return 0;
	r = memdev_reader(&md);
	for (unsigned flags = 0; flags < 2; flags++) {
		rc = imsm_parse_ex(&r, flags, &info, err, sizeof(err));
		if (rc < 0) {
			if (!err[0] || strlen(err) >= sizeof(err))
				fuzz_fail("a refusal without a message (%d)", rc);
			continue;
		}
		if (info.num_disks < 1 || info.num_disks > IMSM_MAX_DISKS || info.num_volumes > IMSM_MAX_VOLUMES ||
		    info.num_bbm_entries > IMSM_MAX_BBM_ENTRIES)
			fuzz_fail("counts out of range");
		for (int v = 0; v < info.num_volumes; v++) {
			const struct imsm_volume_info *vol = &info.volumes[v];

			if (vol->num_maps < 1 || vol->num_maps > 2)
				fuzz_fail("num_maps %d", vol->num_maps);
			for (int m = 0; m < vol->num_maps; m++)
				for (unsigned s = 0; s < vol->maps[m].num_members; s++)
					if (vol->maps[m].slots[s].disk >= info.num_disks)
						fuzz_fail("slot names disk %u of %d", vol->maps[m].slots[s].disk,
							  info.num_disks);
			(void)imsm_volume_unreadable(&info, v, why, sizeof(why));
			(void)imsm_layout_name(vol->level, vol->md_layout);
			(void)imsm_migr_type_name(vol->migr_type);
			(void)imsm_map_state_name(vol->map_state);
		}
		for (int d = 0; d < info.num_disks; d++) {
			bool failed;
			int i = imsm_find_disk(&info, info.disks[d].serial, true, &failed);

			if (info.disks[d].serial[0] && (i < 0 || i > d))
				fuzz_fail("disk %d's serial finds disk %d", d, i);
		}
		if (flags)
			continue;
		/* the format: one member_meta per volume, as the parser says */
		rc = format_imsm.probe(&r, &f, err, sizeof(err));
		if (rc && !(rc == -ENOENT && !info.num_volumes) && !(rc == -E2BIG && info.num_volumes > FORMAT_MAX_VOLUMES))
			fuzz_fail("probe %d on metadata the parser read (%s)", rc, err);
		if (rc)
			continue;
		if (f.nvol != info.num_volumes || f.vol[0].role != META_ROLE_UNPLACED ||
		    f.vol[0].events != info.generation_num)
			fuzz_fail("probe: %d volumes", f.nvol);
		for (int d = 0; d < info.num_disks; d++) {
			char s[IMSM_SERIAL_LEN + 1];
			int dev, role;

			memcpy(s, info.disks[d].serial, IMSM_SERIAL_LEN);
			s[IMSM_SERIAL_LEN] = '\0';
			if (format_imsm.place(&f.vol[0], s, &dev, &role) == 0 && (dev < 0 || dev >= info.num_disks))
				fuzz_fail("place: disk %d", dev);
		}
		check_replace(&r, &info, &f);
	}
	return 0;
}
