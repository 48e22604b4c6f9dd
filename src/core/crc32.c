/* crc32.c - CRC-32 (see crc32.h), a half-byte table: metadata sizes, not
 * bulk data. */
#include "crc32.h"

/* the register after shifting the 4-bit value n through it */
static const uint32_t crc_nibble[16] = {
	0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4, 0x4db26158, 0x5005713c,
	0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c, 0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
};

uint32_t crc32_raw(uint32_t reg, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len--) {
		reg ^= *p++;
		reg = (reg >> 4) ^ crc_nibble[reg & 0xf];
		reg = (reg >> 4) ^ crc_nibble[reg & 0xf];
	}
	return reg;
}

uint32_t crc32_update(uint32_t crc, const void *buf, size_t len)
{
	return ~crc32_raw(~crc, buf, len);
}
