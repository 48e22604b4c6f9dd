/* fuzz_probe.c - metadata_probe over an image in memory: which format is
 * found where, on images of any size, with superblocks of several formats
 * at once and read errors.
 *
 * Input: u8 flags (bit 0: fix each block's md checksum; bit 1: an EIO range
 * follows as u32 sector + u16 sectors), u32 LE image size in sectors
 * (at most 2^24), then blocks: u8 where (0: sector 0 = 1.1, 1: sector 8 =
 * 1.2, 2: the 1.0 place, 3: the 0.90 place, else: the sector in a u32 that
 * follows), u16 LE length (at most 4096), the bytes.
 * Properties: no crash; a found superblock says it is where it was found.
 */
#include <string.h>

#include "fuzz.h"
#include "mem_source.h"
#include "probe.h"

static uint64_t where_sector(struct fuzz_in *in, uint64_t sectors)
{
	uint8_t w = fuzz_u8(in);

	switch (w) {
	case 0: return 0;
	case 1: return 8;
	case 2: return md1_super_offset(0, sectors);
	case 3: return md0_super_offset(sectors);
	default: return fuzz_u32(in) % (sectors + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t blocks[MEM_MAX_BLOCKS][4096];
	struct fuzz_in in = { data, size };
	struct mem_image img = { 0 };
	struct member_meta m;
	struct source src;
	uint8_t flags = fuzz_u8(&in);
	uint64_t sectors;
	char err[256];

	if (flags & 2) {
		img.eio_off = (uint64_t)fuzz_u32(&in) * 512;
		img.eio_len = (uint64_t)fuzz_u16(&in) * 512;
	}
	sectors = fuzz_u32(&in) % ((1u << 24) + 1);
	img.size = sectors * 512;
	while (in.left && img.nblocks < MEM_MAX_BLOCKS) {
		struct mem_block *b = &img.blocks[img.nblocks];
		uint64_t sector = where_sector(&in, sectors);
		size_t want = fuzz_u16(&in) % 4097, len;
		const uint8_t *p = fuzz_bytes(&in, want, &len);

		if (sector == UINT64_MAX)
			continue;
		memcpy(blocks[img.nblocks], p, len);
		if (flags & 1)
			fuzz_fix_md_csum(blocks[img.nblocks], len);
		b->off = sector * 512;
		b->len = len;
		b->bytes = blocks[img.nblocks];
		img.nblocks++;
	}
	mem_source_init(&src, &img);
	if (metadata_probe(&src, &m, err, sizeof(err)))
		return 0;
	if (!strcmp(m.format, "0.90")) {
		if (m.super_offset != md0_super_offset(sectors))
			fuzz_fail("0.90 found but super_offset %llu", (unsigned long long)m.super_offset);
	} else if (m.format[0] == '1') {
		if (m.super_offset != md1_super_offset(m.format[2] - '0', sectors))
			fuzz_fail("%s found but super_offset %llu", m.format, (unsigned long long)m.super_offset);
	} else {
		fuzz_fail("unknown format '%.8s' found", m.format);
	}
	if (m.raid_disks < 1 || m.raid_disks > 256)
		fuzz_fail("raid_disks %d accepted", m.raid_disks);
	return 0;
}
