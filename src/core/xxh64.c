/* xxh64.c - see xxh64.h */
#include "le.h"
#include "xxh64.h"

#define XXH_P1 0x9E3779B185EBCA87ull
#define XXH_P2 0xC2B2AE3D27D4EB4Full
#define XXH_P3 0x165667B19E3779F9ull
#define XXH_P4 0x85EBCA77C2B2AE63ull
#define XXH_P5 0x27D4EB2F165667C5ull

static uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t xxh_round(uint64_t acc, uint64_t input)
{
	acc += input * XXH_P2;
	acc = rotl64(acc, 31);
	return acc * XXH_P1;
}

static uint64_t xxh_merge(uint64_t acc, uint64_t val)
{
	acc ^= xxh_round(0, val);
	return acc * XXH_P1 + XXH_P4;
}

uint64_t xxh64(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf, *end = p + len;
	uint64_t h;

	if (len >= 32) {
		uint64_t v1 = seed + XXH_P1 + XXH_P2, v2 = seed + XXH_P2, v3 = seed, v4 = seed - XXH_P1;

		do {
			v1 = xxh_round(v1, get_le64(p));
			v2 = xxh_round(v2, get_le64(p + 8));
			v3 = xxh_round(v3, get_le64(p + 16));
			v4 = xxh_round(v4, get_le64(p + 24));
			p += 32;
		} while (end - p >= 32);
		h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
		h = xxh_merge(h, v1);
		h = xxh_merge(h, v2);
		h = xxh_merge(h, v3);
		h = xxh_merge(h, v4);
	} else {
		h = seed + XXH_P5;
	}
	h += (uint64_t)len;
	while (end - p >= 8) {
		h ^= xxh_round(0, get_le64(p));
		h = rotl64(h, 27) * XXH_P1 + XXH_P4;
		p += 8;
	}
	if (end - p >= 4) {
		h ^= (uint64_t)get_le32(p) * XXH_P1;
		h = rotl64(h, 23) * XXH_P2 + XXH_P3;
		p += 4;
	}
	while (p < end) {
		h ^= (uint64_t)*p * XXH_P5;
		h = rotl64(h, 11) * XXH_P1;
		p++;
	}
	h ^= h >> 33;
	h *= XXH_P2;
	h ^= h >> 29;
	h *= XXH_P3;
	h ^= h >> 32;
	return h;
}

