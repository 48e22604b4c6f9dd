/* detect_seam.c - continuity of content across a cut.
 *
 * Model: the set of 6-byte grams that occur in the sampled content (a
 * blocked Bloom filter built from up to SEAM_TRAIN bytes spread over every
 * image).  At a cut between "tail" (bytes before) and "head" (bytes after),
 * the five grams that straddle the cut (1..5 bytes from the tail) are looked
 * up: text, tables and records continue with grams seen elsewhere, a wrong
 * junction mostly does not.  seam_at() returns the number of straddling
 * grams found (0..5), or -1 when every straddling gram is a run of one byte
 * value (zeros, 0xff fill: no evidence either way).
 *
 * Inside a member, content is continuous except at chunk boundaries (where
 * the next array chunk lives on another member): cont_at() at every
 * 512-aligned image offset gives the chunk-size evidence; between members,
 * seam_at(tail of one chunk, head of another) scores a role order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "detect_int.h"

#define GRAM 6
#define SEAM_TRAIN (5u << 20)

static inline uint64_t gram_key(const uint8_t *p)
{
	uint64_t v = 0;
	memcpy(&v, p, GRAM);
	return v;
}

static inline bool gram_constant(const uint8_t *p)
{
	for (int i = 1; i < GRAM; i++)
		if (p[i] != p[0])
			return false;
	return true;
}

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* blocked Bloom filter: 512-bit block from the high bits, 3 bits inside */
static inline void bloom_add(struct bloom *b, uint64_t key)
{
	uint64_t h = mix64(key);
	uint64_t blk = (h >> 28) & ((b->nbits >> 9) - 1);
	uint64_t *w = b->bits + blk * 8;
	for (int k = 0; k < 3; k++) {
		unsigned bit = (unsigned)(h >> (9 * k)) & 511;
		w[bit >> 6] |= 1ull << (bit & 63);
	}
}

static inline bool bloom_has(const struct bloom *b, uint64_t key)
{
	uint64_t h = mix64(key);
	uint64_t blk = (h >> 28) & ((b->nbits >> 9) - 1);
	const uint64_t *w = b->bits + blk * 8;
	for (int k = 0; k < 3; k++) {
		unsigned bit = (unsigned)(h >> (9 * k)) & 511;
		if (!(w[bit >> 6] >> (bit & 63) & 1))
			return false;
	}
	return true;
}

float seam_at(const struct dctx *c, const uint8_t *tail_end, const uint8_t *head)
{
	uint64_t T, H;
	int hits = 0, inf = 0;

	memcpy(&T, tail_end - 8, 8);   /* little-endian: the last tail byte is the top byte */
	memcpy(&H, head, 8);
	for (int t = 1; t < GRAM; t++) {
		uint64_t g = ((T >> (8 * (8 - t))) | (H << (8 * t))) & 0xFFFFFFFFFFFFull;
		if (g == (g & 0xFF) * 0x010101010101ull)
			continue;   /* one byte value repeated: no evidence */
		inf++;
		hits += bloom_has(&c->bl, g);
	}
	return inf ? (float)hits * (float)(GRAM - 1) / (float)inf : -1.0f;
}

float cont_at(const struct dctx *c, int img, uint64_t off)
{
	if (off < 8)
		return -1.0f;
	const uint8_t *p = sp(c, img, off - 8, 16);
	if (!p)
		return -1.0f;
	return seam_at(c, p + 8, p + 8);
}

int seam_build(struct dctx *c)
{
	int nimg = c->nimg + (c->have_virtual ? 1 : 0);
	uint64_t total = 0;

	for (int w = 0; w < c->nwin; w++)
		total += c->win[w].len * (uint64_t)nimg;
	/* train on every k-th 4 KiB block so that at most SEAM_TRAIN bytes are used */
	uint64_t every = total / SEAM_TRAIN + 1;
	uint64_t items = total / every + 1;
	uint64_t nbits = 1u << 16;
	while (nbits < items * 12 && nbits < (1ull << 31))
		nbits <<= 1;
	c->bl.nbits = nbits;
	c->bl.bits = calloc(nbits / 64, sizeof(uint64_t));
	if (!c->bl.bits)
		return -ENOMEM;
	uint64_t blk = 0, used = 0;
	for (int w = 0; w < c->nwin; w++) {
		const struct dwin *win = &c->win[w];
		for (int img = 0; img < nimg; img++) {
			if (!win->buf[img])
				continue;
			for (uint64_t o = 0; o + 4096 <= win->len; o += 4096, blk++) {
				if (blk % every)
					continue;
				const uint8_t *p = win->buf[img] + o;
				if (p[0] == 0 && all_zero(p, 4096))
					continue;
				/* never a gram that crosses a 512-byte boundary: every cut
				 * we judge lies on one, so a cut never finds itself */
				for (unsigned sct = 0; sct < 4096; sct += SECT) {
					const uint8_t *q = p + sct;
					for (unsigned i = 0; i + 8 <= SECT; i++) {
						uint64_t g;
						memcpy(&g, q + i, 8);
						g &= 0xFFFFFFFFFFFFull;
						if (g != (g & 0xFF) * 0x010101010101ull)
							bloom_add(&c->bl, g);
					}
					/* the last two grams of the sector */
					for (unsigned i = SECT - 7; i <= SECT - GRAM; i++)
						if (!gram_constant(q + i))
							bloom_add(&c->bl, gram_key(q + i));
				}
				used += 4096;
			}
		}
	}
	c->seam_ok = used >= 64 * 1024;
	/* baseline: mean continuity at 4 KiB steps inside the members */
	double sum = 0;
	long cnt = 0;
	for (int w = 0; w < c->nwin && cnt < 200000; w++) {
		const struct dwin *win = &c->win[w];
		for (int img = 0; img < c->nimg; img++)
			for (uint64_t o = win->off + 4096 + 512 * (uint64_t)(img % 8); o + 16 < win->off + win->len;
			     o += 4096 * 3) {
				float v = cont_at(c, img, o);
				if (v >= 0) {
					sum += v;
					cnt++;
				}
			}
	}
	c->seam_mu = cnt ? (float)(sum / (double)cnt) : 0;
	return 0;
}

void seam_free(struct dctx *c)
{
	free(c->bl.bits);
	c->bl.bits = NULL;
}
