/* sha1.c - SHA-1 (see sha1.h), straight from the standard's description. */
#include <string.h>

#include "sha1.h"

static uint32_t rol32(uint32_t v, int s)
{
	return v << s | v >> (32 - s);
}

static void sha1_block(struct sha1_ctx *s, const uint8_t *p)
{
	uint32_t w[80], a, b, c, d, e;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
		       p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = s->h[0];
	b = s->h[1];
	c = s->h[2];
	d = s->h[3];
	e = s->h[4];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k, t;

		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999u;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1u;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdcu;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6u;
		}
		t = rol32(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol32(b, 30);
		b = a;
		a = t;
	}
	s->h[0] += a;
	s->h[1] += b;
	s->h[2] += c;
	s->h[3] += d;
	s->h[4] += e;
}

void sha1_init(struct sha1_ctx *s)
{
	static const uint32_t iv[5] = { 0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u };

	memcpy(s->h, iv, sizeof(iv));
	s->fill = 0;
	s->total = 0;
}

void sha1_update(struct sha1_ctx *s, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	s->total += len;
	while (len) {
		size_t take = 64 - s->fill;

		if (take > len)
			take = len;
		memcpy(s->block + s->fill, p, take);
		s->fill += take;
		p += take;
		len -= take;
		if (s->fill == 64) {
			sha1_block(s, s->block);
			s->fill = 0;
		}
	}
}

void sha1_final(struct sha1_ctx *s, uint8_t digest[20])
{
	uint64_t bits = s->total * 8;
	uint8_t pad = 0x80, zero = 0, len[8];

	sha1_update(s, &pad, 1);
	while (s->fill != 56)
		sha1_update(s, &zero, 1);
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha1_update(s, len, 8);
	for (int i = 0; i < 5; i++) {
		digest[4 * i] = (uint8_t)(s->h[i] >> 24);
		digest[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		digest[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		digest[4 * i + 3] = (uint8_t)s->h[i];
	}
}

void sha1_digest(const void *buf, size_t len, uint8_t digest[20])
{
	struct sha1_ctx s;

	sha1_init(&s);
	sha1_update(&s, buf, len);
	sha1_final(&s, digest);
}
