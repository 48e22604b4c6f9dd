/* fuzz_util.c - helpers for the fuzz targets (see fuzz.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

void fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz property violated: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

uint8_t fuzz_u8(struct fuzz_in *in)
{
	if (!in->left)
		return 0;
	in->left--;
	return *in->p++;
}

uint16_t fuzz_u16(struct fuzz_in *in)
{
	uint16_t lo = fuzz_u8(in);

	return (uint16_t)(lo | fuzz_u8(in) << 8);
}

uint32_t fuzz_u32(struct fuzz_in *in)
{
	uint32_t lo = fuzz_u16(in);

	return lo | (uint32_t)fuzz_u16(in) << 16;
}

uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t lo = fuzz_u32(in);

	return lo | (uint64_t)fuzz_u32(in) << 32;
}

const uint8_t *fuzz_bytes(struct fuzz_in *in, size_t max, size_t *len)
{
	const uint8_t *p = in->p;

	*len = in->left < max ? in->left : max;
	in->p += *len;
	in->left -= *len;
	return p;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* md's checksum: u32 words summed in 64 bits with the checksum word taken
 * as 0, folded once; 1.x adds a trailing u16 for an odd max_dev. */
static uint32_t md_sum(const uint8_t *buf, size_t size, size_t csum_off)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i + 4 <= size; i += 4)
		if (i != csum_off)
			sum += le32(buf + i);
	if (size - i == 2)
		sum += (uint32_t)(buf[i] | buf[i + 1] << 8);
	return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

void fuzz_fix_md_csum(uint8_t *buf, size_t len)
{
	if (len < 8)
		return;
	if (le32(buf + 4) == 1 && len >= 256) {
		size_t need = 256 + 2 * (size_t)le32(buf + 220);

		if (le32(buf + 220) <= 1920 && need <= len)
			put_le32(buf + 216, md_sum(buf, need, 216));
	} else if (le32(buf + 4) == 0 && len >= 4096) {
		put_le32(buf + 152, md_sum(buf, 4096, 152));
	}
}
