/* test_parity.c - parity.c against an independent byte-wise GF(2^8) model.
 *
 * The reference below knows nothing of isa-l or of parity.c's tables: it
 * multiplies by 2 with shift-and-xor (poly 0x11d) and builds Q by Horner's
 * rule, one byte at a time.  Every optimised path is compared with it.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parity.h"

#define MAXS 32   /* widest stripe these tests build */

/* ---- reference model ---- */

static uint8_t ref_mul2(uint8_t x)
{
	uint8_t hi = x & 0x80;
	x = (uint8_t)(x << 1);
	if (hi)
		x ^= 0x1d;   /* 0x11d without the bit shifted out */
	return x;
}

/* general multiply by shift-and-add, only to cross-check ref_mul2 */
static uint8_t ref_mul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;
	while (b) {
		if (b & 1)
			r ^= a;
		a = ref_mul2(a);
		b >>= 1;
	}
	return r;
}

static uint8_t ref_pow2(int e)
{
	uint8_t r = 1;
	while (e-- > 0)
		r = ref_mul2(r);
	return r;
}

/* P = XOR, Q = sum 2^j D_j by Horner, NULL = zero block */
static void ref_pq(int n, uint8_t *const *d, size_t len, uint8_t *p, uint8_t *q)
{
	for (size_t i = 0; i < len; i++) {
		uint8_t pp = 0, qq = 0;
		for (int j = n - 1; j >= 0; j--) {
			uint8_t v = d[j] ? d[j][i] : 0;
			pp ^= v;
			qq = ref_mul2(qq) ^ v;
		}
		p[i] = pp;
		if (q)
			q[i] = qq;
	}
}

/* ---- buffers and random data ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void fill_random(uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

/* exact size (so sanitizers see overruns), PARITY_ALIGN-aligned */
static uint8_t *abuf(size_t n)
{
	void *ptr = NULL;
	ck_assert_int_eq(posix_memalign(&ptr, PARITY_ALIGN, n ? n : 1), 0);
	return ptr;
}

struct stripe {
	int n;
	size_t len;
	uint8_t *d[MAXS];      /* NULL for zero-block slots */
	uint8_t *p, *q;
	uint8_t *orig[MAXS + 2];   /* copies: d..., P, Q */
	uint8_t *scratch;      /* exactly 2*len */
};

/* null_mask bit j set: slot j is a zero block (NULL) */
static void stripe_init(struct stripe *s, int n, size_t len, uint32_t null_mask)
{
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->len = len;
	for (int j = 0; j < n; j++) {
		if (null_mask & (1u << j))
			continue;
		s->d[j] = abuf(len);
		fill_random(s->d[j], len);
	}
	s->p = abuf(len);
	s->q = abuf(len);
	ref_pq(n, s->d, len, s->p, s->q);
	for (int j = 0; j < n + 2; j++)
		s->orig[j] = abuf(len);
	s->scratch = abuf(2 * len);
}

static uint8_t *block(struct stripe *s, int id)
{
	return id == PARITY_P ? s->p : id == PARITY_Q ? s->q : s->d[id];
}

static void stripe_save(struct stripe *s)
{
	for (int j = 0; j < s->n; j++)
		if (s->d[j])
			memcpy(s->orig[j], s->d[j], s->len);
	memcpy(s->orig[s->n], s->p, s->len);
	memcpy(s->orig[s->n + 1], s->q, s->len);
}

/* every real block equals its saved copy */
static bool stripe_intact(struct stripe *s)
{
	for (int j = 0; j < s->n; j++)
		if (s->d[j] && memcmp(s->orig[j], s->d[j], s->len) != 0)
			return false;
	return memcmp(s->orig[s->n], s->p, s->len) == 0 &&
	       memcmp(s->orig[s->n + 1], s->q, s->len) == 0;
}

static void stripe_free(struct stripe *s)
{
	for (int j = 0; j < s->n; j++)
		free(s->d[j]);
	for (int j = 0; j < s->n + 2; j++)
		free(s->orig[j]);
	free(s->p);
	free(s->q);
	free(s->scratch);
}

static const size_t odd_and_even_lens[] = { 1, 31, 32, 33, 4096, 4097, 65536 };
#define NLENS (sizeof(odd_and_even_lens) / sizeof(odd_and_even_lens[0]))

/* ---- the reference itself ---- */

START_TEST(test_reference_model)
{
	/* 2^8 = x^8 = x^4+x^3+x^2+1 = 0x1d under 0x11d; 2 generates all 255 */
	ck_assert_uint_eq(ref_pow2(8), 0x1d);
	ck_assert_uint_eq(ref_pow2(255), 1);
	for (int e = 1; e < 255; e++)
		ck_assert_uint_ne(ref_pow2(e), 1);
	/* Horner agrees with the explicit sum of 2^j * D_j */
	uint8_t *d[5], p, q, want = 0;
	uint8_t v[5] = { 0x01, 0x80, 0xff, 0x53, 0xca };
	for (int j = 0; j < 5; j++) {
		d[j] = &v[j];
		want ^= ref_mul(ref_pow2(j), v[j]);
	}
	ref_pq(5, d, 1, &p, &q);
	ck_assert_uint_eq(q, want);
	ck_assert_uint_eq(p, 0x01 ^ 0x80 ^ 0xff ^ 0x53 ^ 0xca);
}
END_TEST

START_TEST(test_zero_block)
{
	const uint8_t *z = parity_zero_block();
	ck_assert_ptr_nonnull(z);
	ck_assert_uint_eq((uintptr_t)z % PARITY_ALIGN, 0);
	for (size_t i = 0; i < PARITY_ZERO_MAX; i += 4093)
		ck_assert_uint_eq(z[i], 0);
	ck_assert_uint_eq(z[PARITY_ZERO_MAX - 1], 0);
	ck_assert_ptr_eq(parity_zero_block(), z);
}
END_TEST

/* ---- generation ---- */

static void check_gen(int n, size_t len, uint32_t null_mask)
{
	struct stripe s;
	stripe_init(&s, n, len, null_mask);
	uint8_t *p = abuf(len), *q = abuf(len), *p2 = abuf(len);
	memset(p, 0xa5, len);
	memset(q, 0x5a, len);
	memset(p2, 0x3c, len);
	parity_gen_pq(n, len, s.d, p, q);
	parity_gen_p(n, len, s.d, p2);
	ck_assert_msg(memcmp(p, s.p, len) == 0, "P (pq) n=%d len=%zu mask=%#x", n, len, null_mask);
	ck_assert_msg(memcmp(q, s.q, len) == 0, "Q n=%d len=%zu mask=%#x", n, len, null_mask);
	ck_assert_msg(memcmp(p2, s.p, len) == 0, "P (p) n=%d len=%zu mask=%#x", n, len, null_mask);
	free(p);
	free(q);
	free(p2);
	stripe_free(&s);
}

/* _i = nslots 1..20 */
START_TEST(test_gen_lengths)
{
	for (size_t l = 0; l < NLENS; l++)
		check_gen(_i, odd_and_even_lens[l], 0);
}
END_TEST

/* _i = nslots 1..12; NULL blocks must count as zeros in their own slot */
START_TEST(test_gen_null_slots)
{
	int n = _i;
	uint32_t all = (n >= 32) ? ~0u : (1u << n) - 1;
	uint32_t masks[] = { all, 0x55555555u & all, 0xaaaaaaaau & all, 1u | (1u << (n - 1)),
	                     all & ~1u, all & ~(1u << (n - 1)) };
	static const size_t lens[] = { 33, 4096, 4097 };

	for (size_t l = 0; l < 3; l++) {
		for (int j = 0; j < n; j++)
			check_gen(n, lens[l], 1u << j);
		for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++)
			check_gen(n, lens[l], masks[m]);
	}
}
END_TEST

/* longer than one isa-l piece (and the zero block), with leading and
 * middle NULL slots, and an odd tail */
START_TEST(test_gen_beyond_piece)
{
	check_gen(5, (size_t)PARITY_ZERO_MAX + 4096 + 7, 0x5);
	check_gen(2, (size_t)PARITY_ZERO_MAX + 64, 0);
}
END_TEST

/* misaligned buffers break the header's contract, but must not break P/Q */
START_TEST(test_gen_unaligned)
{
	enum { N = 5 };
	size_t len = 4097;
	uint8_t *raw[N], *d[N], *rp = abuf(len + 1), *rq = abuf(len + 1);
	uint8_t *wp = abuf(len), *wq = abuf(len);
	for (int j = 0; j < N; j++) {
		raw[j] = abuf(len + 1);
		d[j] = raw[j] + 1;
		fill_random(d[j], len);
	}
	ref_pq(N, d, len, wp, wq);
	parity_gen_pq(N, len, d, rp + 1, rq + 1);
	ck_assert(memcmp(rp + 1, wp, len) == 0);
	ck_assert(memcmp(rq + 1, wq, len) == 0);
	parity_gen_p(N, len, d, rp + 1);
	ck_assert(memcmp(rp + 1, wp, len) == 0);
	for (int j = 0; j < N; j++)
		free(raw[j]);
	free(rp);
	free(rq);
	free(wp);
	free(wq);
}
END_TEST

/* ---- checking ---- */

static void check_checks(int n, size_t len, uint32_t null_mask)
{
	struct stripe s;
	stripe_init(&s, n, len, null_mask);
	/* ends, middle, and both sides of parity.c's 64 KiB windows */
	size_t where[] = { 0, len / 2, len - 1, 65535 % len, 65536 % len, (len - 129) % len };
	int bp = -1, bq = -1;

	ck_assert_int_eq(parity_check_p(n, len, s.d, s.p, s.scratch), 0);
	ck_assert_int_eq(parity_check_pq(n, len, s.d, s.p, s.q, s.scratch, &bp, &bq), 0);
	ck_assert_int_eq(bp, 0);
	ck_assert_int_eq(bq, 0);
	ck_assert_int_eq(parity_check_pq(n, len, s.d, s.p, s.q, s.scratch, NULL, NULL), 0);

	for (int id = PARITY_Q; id < n; id++) {
		uint8_t *b = block(&s, id);
		if (!b)
			continue;
		for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
			size_t at = where[w];
			uint8_t flip = (uint8_t)(1u << (rnd() % 8));
			b[at] ^= flip;
			int rc = parity_check_pq(n, len, s.d, s.p, s.q, s.scratch, &bp, &bq);
			ck_assert_msg(rc == 1, "n=%d len=%zu id=%d at=%zu", n, len, id, at);
			/* a data error shows in both syndromes (2^j != 0) */
			ck_assert_int_eq(bp, id != PARITY_Q);
			ck_assert_int_eq(bq, id != PARITY_P);
			ck_assert_int_eq(parity_check_p(n, len, s.d, s.p, s.scratch), id != PARITY_Q);
			b[at] ^= flip;
		}
	}
	/* P bad early and Q bad late (different windows): both reported */
	s.p[0] ^= 1;
	s.q[len - 1] ^= 1;
	ck_assert_int_eq(parity_check_pq(n, len, s.d, s.p, s.q, s.scratch, &bp, &bq), 1);
	ck_assert_int_eq(bp, 1);
	ck_assert_int_eq(bq, 1);
	s.p[0] ^= 1;
	s.q[len - 1] ^= 1;
	ck_assert_int_eq(parity_check_pq(n, len, s.d, s.p, s.q, s.scratch, &bp, &bq), 0);
	stripe_free(&s);
}

/* _i = nslots 1..10 */
START_TEST(test_check_detects_flips)
{
	check_checks(_i, 4096, 0);
	check_checks(_i, 4097, 0);
	check_checks(_i, 31, 0);
	if (_i > 2)
		check_checks(_i, 4097, 0x2);   /* a zero block in slot 1 */
	if (_i % 4 == 1)
		check_checks(_i, 200003, 0);   /* several windows */
}
END_TEST

/* parity_consistent, each way of asking: 1 for an intact stripe, 0 for
 * one flipped bit in any block; when it generated, scratch holds the
 * reference's P' (and Q' at scratch + len) */
static void check_consistent(int n, size_t len, uint32_t null_mask, bool raid6,
			     enum parity_check_method m)
{
	struct stripe s;
	uint8_t *q;
	bool gen;

	stripe_init(&s, n, len, null_mask);
	q = raid6 ? s.q : NULL;
	ck_assert_msg(parity_consistent(n, len, s.d, s.p, q, m, s.scratch, &gen) == 1,
		      "n=%d len=%zu method %d: intact stripe called inconsistent", n, len, (int)m);
	if (gen) {
		ck_assert(memcmp(s.scratch, s.p, len) == 0);
		ck_assert(!raid6 || memcmp(s.scratch + len, s.q, len) == 0);
	}
	for (int id = raid6 ? PARITY_Q : PARITY_P; id < n; id++) {
		uint8_t *b = block(&s, id);
		size_t at = (len - 1) * (size_t)(id + 2) / (size_t)(n + 2);
		uint8_t flip = (uint8_t)(1u << (rnd() % 8));

		if (!b)
			continue;
		b[at] ^= flip;
		ck_assert_msg(parity_consistent(n, len, s.d, s.p, q, m, s.scratch, &gen) == 0,
			      "n=%d len=%zu method %d: block %d flipped at %zu not noticed", n, len, (int)m,
			      id, at);
		b[at] ^= flip;
	}
	stripe_free(&s);
}

/* _i = nslots 1..8, every method, RAID5 and RAID6, lengths isa-l takes
 * (multiples of 32, up to the windows' size and past it) and ones it does
 * not (then generating answers), with and without a zero block */
START_TEST(test_consistent_methods)
{
	static const enum parity_check_method ms[] = { PARITY_CHECK_AUTO, PARITY_CHECK_ISAL,
						       PARITY_CHECK_GEN };
	static const size_t lens[] = { 31, 32, 4096, 4097, 65536, 131072 + 64 };

	for (size_t k = 0; k < sizeof(ms) / sizeof(ms[0]); k++)
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			check_consistent(_i, lens[l], 0, true, ms[k]);
			check_consistent(_i, lens[l], 0, false, ms[k]);
			if (_i > 2)
				check_consistent(_i, lens[l], 0x2, true, ms[k]);
		}
}
END_TEST

/* AUTO's rule as parity.h gives it */
START_TEST(test_consistent_auto_rule)
{
	size_t big = PARITY_CHECK_ISAL_MIN_LEN;

	for (int n = 1; n <= 36; n++) {
		ck_assert_int_eq(parity_check_auto(n, 4096, false), PARITY_CHECK_ISAL);
		ck_assert_int_eq(parity_check_auto(n, big, false), PARITY_CHECK_ISAL);
		ck_assert_int_eq(parity_check_auto(n, big - 4096, true), PARITY_CHECK_GEN);
		ck_assert_int_eq(parity_check_auto(n, big, true),
				 n <= PARITY_CHECK_ISAL_SLOTS ? PARITY_CHECK_ISAL : PARITY_CHECK_GEN);
		ck_assert_int_eq(parity_check_auto(n, 512 << 10, true),
				 n <= PARITY_CHECK_ISAL_SLOTS ? PARITY_CHECK_ISAL : PARITY_CHECK_GEN);
	}
	/* RAID6 4x64K (a measured win); RAID6 5x64K and RAID5 4x64K (ties) */
	ck_assert_int_eq(parity_check_auto(2, 64 << 10, true), PARITY_CHECK_ISAL);
	ck_assert_int_eq(parity_check_auto(3, 64 << 10, true), PARITY_CHECK_GEN);
	ck_assert_int_eq(parity_check_auto(4, 64 << 10, true), PARITY_CHECK_GEN);
}
END_TEST

/* ---- recovery ---- */

static void garble(struct stripe *s, int id)
{
	if (id != PARITY_NONE)
		memset(block(s, id), 0xa5, s->len);
}

static void expect_recovered(struct stripe *s, uint8_t *q, int a, int b)
{
	garble(s, a);
	garble(s, b);
	int rc = parity_recover(s->n, s->len, s->d, s->p, q, a, b, s->scratch);
	ck_assert_msg(rc == 0, "n=%d len=%zu lost %d,%d rc=%d", s->n, s->len, a, b, rc);
	ck_assert_msg(stripe_intact(s), "n=%d len=%zu lost %d,%d: wrong contents", s->n, s->len,
	              a, b);
}

/* every single loss and every pair (both argument orders) of real blocks */
static void check_all_erasures(int n, size_t len, uint32_t null_mask)
{
	struct stripe s;
	stripe_init(&s, n, len, null_mask);
	stripe_save(&s);
	for (int a = PARITY_Q; a < n; a++) {
		if (!block(&s, a))
			continue;
		expect_recovered(&s, s.q, a, PARITY_NONE);
		for (int b = PARITY_Q; b < n; b++)
			if (b != a && block(&s, b))
				expect_recovered(&s, s.q, a, b);
	}
	stripe_free(&s);
}

static const int recover_widths[] = { 1, 2, 3, 4, 5, 8, 16, 20 };

/* _i indexes recover_widths: narrow stripes take the one-pass ec path, wide
 * ones the pq_gen-into-scratch path */
START_TEST(test_recover_all_erasures)
{
	int n = recover_widths[_i];
	static const size_t lens[] = { 4096, 4133, 32, 5 };
	for (size_t l = 0; l < 4; l++)
		check_all_erasures(n, lens[l], 0);
}
END_TEST

/* ddf-style stripes: zero blocks at fixed slots keep the others' weights */
START_TEST(test_recover_with_null_slots)
{
	check_all_erasures(7, 4096, 0x09);          /* slots 0 and 3 */
	check_all_erasures(6, 4099, 0x20);          /* last slot */
	check_all_erasures(20, 4096, 0x0403);       /* wide (pq_gen path), leading */
	check_all_erasures(3, 64, 0x1);             /* one real data slot left... */
	check_all_erasures(3, 64, 0x3);             /* ...and only the top one */
}
END_TEST

/* several isa-l pieces, both strategies (one ec pass up to 7 sources) */
START_TEST(test_recover_beyond_piece)
{
	size_t len = (size_t)PARITY_ZERO_MAX + 96 + 3;
	static const int widths[] = { 4, 10 };
	for (int w = 0; w < 2; w++) {
		struct stripe s;
		int n = widths[w];
		stripe_init(&s, n, len, 0);
		stripe_save(&s);
		expect_recovered(&s, s.q, 1, n - 1);
		expect_recovered(&s, s.q, 0, PARITY_P);
		expect_recovered(&s, s.q, 2, PARITY_Q);
		stripe_free(&s);
	}
}
END_TEST

/* _i = nslots 1..7, q == NULL */
START_TEST(test_recover_raid5)
{
	int n = _i;
	struct stripe s;
	stripe_init(&s, n, 4097, 0);
	stripe_save(&s);
	for (int a = PARITY_P; a < n; a++)
		expect_recovered(&s, NULL, a, PARITY_NONE);
	/* Q does not exist, and one loss is all XOR can take */
	ck_assert_int_eq(parity_recover(n, s.len, s.d, s.p, NULL, PARITY_Q, PARITY_NONE, s.scratch),
	                 -EINVAL);
	ck_assert_int_eq(parity_recover(n, s.len, s.d, s.p, NULL, 0, PARITY_P, s.scratch), -EINVAL);
	if (n > 1)
		ck_assert_int_eq(parity_recover(n, s.len, s.d, s.p, NULL, 0, 1, s.scratch), -EINVAL);
	ck_assert(stripe_intact(&s));
	stripe_free(&s);
}
END_TEST

START_TEST(test_recover_invalid)
{
	struct stripe s;
	int n = 5;
	stripe_init(&s, n, 4096, 0x4);   /* slot 2 is a zero block */
	stripe_save(&s);
	size_t L = s.len;
	uint8_t *sc = s.scratch;

	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, 1, 1, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, PARITY_P, PARITY_P, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, PARITY_Q, PARITY_Q, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, 2, PARITY_NONE, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, 0, 2, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, n, PARITY_NONE, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, 0, n, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, -4, PARITY_NONE, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, PARITY_NONE, PARITY_NONE, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, PARITY_NONE, 0, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(0, L, s.d, s.p, s.q, PARITY_P, PARITY_NONE, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(257, L, s.d, s.p, s.q, PARITY_P, PARITY_NONE, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, NULL, s.q, 0, PARITY_NONE, sc), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, NULL, s.p, s.q, 0, PARITY_NONE, sc), -EINVAL);
	/* the scratch is part of the contract, whatever the strategy */
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, PARITY_Q, PARITY_NONE, NULL), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, s.q, 0, 1, NULL), -EINVAL);
	ck_assert_int_eq(parity_recover(n, L, s.d, s.p, NULL, 0, PARITY_NONE, NULL), -EINVAL);
	/* nothing was touched by a refused request */
	ck_assert(stripe_intact(&s));
	stripe_free(&s);
}
END_TEST

/* Stripes wider than md allows (portable paths) and at md's limit of 256
 * slots, where 2^0 = 2^255 makes slots 0 and 255 indistinguishable. */
START_TEST(test_wide_stripes)
{
	enum { W = 300 };
	size_t len = 97;
	uint8_t *d[W], *p = abuf(len), *q = abuf(len), *wp = abuf(len), *wq = abuf(len);
	uint8_t *sc = abuf(2 * len);
	for (int j = 0; j < W; j++) {
		d[j] = j % 11 == 4 ? NULL : abuf(len);
		if (d[j])
			fill_random(d[j], len);
	}
	ref_pq(W, d, len, wp, wq);
	parity_gen_pq(W, len, d, p, q);
	ck_assert(memcmp(p, wp, len) == 0 && memcmp(q, wq, len) == 0);
	parity_gen_p(W, len, d, p);
	ck_assert(memcmp(p, wp, len) == 0);
	ck_assert_int_eq(parity_check_pq(W, len, d, wp, wq, sc, NULL, NULL), 0);

	/* 256 slots, all real */
	int n = 256;
	ref_pq(n, d, len, wp, wq);
	uint8_t *d0 = d[0], *d255 = d[255], saved[4];
	ck_assert_ptr_nonnull(d0);
	ck_assert_ptr_nonnull(d255);
	ck_assert_int_eq(parity_recover(n, len, d, wp, wq, 0, 255, sc), -EINVAL);
	memcpy(saved, d[200], 4);
	memset(d[200], 0, len);
	memset(d[5], 0, len);
	ck_assert_int_eq(parity_recover(n, len, d, wp, wq, 200, 5, sc), 0);
	ck_assert(memcmp(d[200], saved, 4) == 0);
	ck_assert_int_eq(parity_check_pq(n, len, d, wp, wq, sc, NULL, NULL), 0);
	d0[7] ^= 0x42;
	ck_assert_int_eq(parity_locate_culprit(n, len, d, wp, wq, sc), PARITY_NONE);
	d[255] = NULL;   /* now only slot 0 has weight 1 */
	ref_pq(n, d, len, wp, wq);
	d0[7] ^= 0x42;
	ck_assert_int_eq(parity_locate_culprit(n, len, d, wp, wq, sc), 0);
	d[255] = d255;
	for (int j = 0; j < W; j++)
		free(d[j]);
	free(p);
	free(q);
	free(wp);
	free(wq);
	free(sc);
}
END_TEST

/* ---- culprit localisation ---- */

/* XOR a non-zero pattern into [at, at+n) of a block; returns it for undo */
static void corrupt(uint8_t *b, size_t at, size_t n, uint8_t *saved)
{
	memcpy(saved, b + at, n);
	for (size_t i = 0; i < n; i++)
		b[at + i] ^= (uint8_t)(1 + rnd() % 255);
}

static void restore(uint8_t *b, size_t at, size_t n, const uint8_t *saved)
{
	memcpy(b + at, saved, n);
}

static int culprit(struct stripe *s)
{
	return parity_locate_culprit(s->n, s->len, s->d, s->p, s->q, s->scratch);
}

static void check_culprit_single(int n, size_t len, uint32_t null_mask)
{
	struct stripe s;
	uint8_t saved[64];
	stripe_init(&s, n, len, null_mask);
	ck_assert_int_eq(culprit(&s), PARITY_NONE);   /* clean stripe */

	/* a range at the start, one straddling the isa-l head/tail boundary,
	 * one straddling parity.c's first window (len - 128 for short len),
	 * and single bytes at the end */
	size_t ranges[][2] = { { 0, 17 },       { len - 40, 40 }, { len - 1, 1 },
	                       { len / 3, 64 }, { len - 136, 16 }, { 65530 % (len - 12), 12 } };
	for (int id = PARITY_Q; id < n; id++) {
		uint8_t *b = block(&s, id);
		if (!b)
			continue;
		for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
			corrupt(b, ranges[r][0], ranges[r][1], saved);
			ck_assert_msg(culprit(&s) == id, "n=%d len=%zu id=%d range %zu: got %d", n, len,
			              id, r, culprit(&s));
			restore(b, ranges[r][0], ranges[r][1], saved);
		}
	}
	ck_assert_int_eq(culprit(&s), PARITY_NONE);
	stripe_free(&s);
}

static const int culprit_widths[] = { 1, 2, 3, 8, 20 };

START_TEST(test_culprit_single_block)
{
	int n = culprit_widths[_i];
	check_culprit_single(n, 4096, 0);
	check_culprit_single(n, 4097, 0);
	if (n >= 3)
		check_culprit_single(n, 4096, 0x5);   /* slots 0 and 2 are zero blocks */
	if (n == 8)
		check_culprit_single(n, 200003, 0);   /* several windows */
}
END_TEST

/* Two blocks damaged at disjoint bytes: each byte names its own block, so
 * the names disagree whatever the values. */
START_TEST(test_culprit_two_blocks)
{
	int n = 6;
	struct stripe s;
	uint8_t s1[16], s2[16];
	stripe_init(&s, n, 4097, 0);
	int ids[] = { 0, 3, n - 1, PARITY_P, PARITY_Q };
	for (int x = 0; x < 5; x++) {
		for (int y = 0; y < 5; y++) {
			if (x == y)
				continue;
			uint8_t *bx = block(&s, ids[x]), *by = block(&s, ids[y]);
			corrupt(bx, 100, 16, s1);
			corrupt(by, 4090, 7, s2);
			ck_assert_msg(culprit(&s) == PARITY_NONE, "%d+%d", ids[x], ids[y]);
			restore(by, 4090, 7, s2);
			restore(bx, 100, 16, s1);
		}
	}
	/* the same block twice is still one culprit */
	corrupt(s.d[2], 10, 8, s1);
	corrupt(s.d[2], 3000, 8, s2);
	ck_assert_int_eq(culprit(&s), 2);
	stripe_free(&s);
}
END_TEST

/* Syndromes that point at a slot that holds no real block. */
START_TEST(test_culprit_phantom_slot)
{
	int n = 6;
	struct stripe s;
	stripe_init(&s, n, 4096, 0x10);   /* slot 4 is a zero block */
	uint8_t e = 0x37;
	/* as if slot 4 had changed by e: Px = e, Qx = 2^4 e */
	s.p[50] ^= e;
	s.q[50] ^= ref_mul(ref_pow2(4), e);
	ck_assert_int_eq(culprit(&s), PARITY_NONE);
	s.p[50] ^= e;
	s.q[50] ^= ref_mul(ref_pow2(4), e);
	/* slot n does not exist */
	s.p[60] ^= e;
	s.q[60] ^= ref_mul(ref_pow2(n), e);
	ck_assert_int_eq(culprit(&s), PARITY_NONE);
	s.p[60] ^= e;
	s.q[60] ^= ref_mul(ref_pow2(n), e);
	/* slot 3 does: injecting its signature names it */
	s.p[70] ^= e;
	s.q[70] ^= ref_mul(ref_pow2(3), e);
	ck_assert_int_eq(culprit(&s), 3);
	stripe_free(&s);
}
END_TEST

static Suite *parity_suite(void)
{
	Suite *s = suite_create("parity");
	TCase *tc;

	tc = tcase_create("model");
	tcase_add_test(tc, test_reference_model);
	tcase_add_test(tc, test_zero_block);
	suite_add_tcase(s, tc);

	tc = tcase_create("gen");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_gen_lengths, 1, 21);
	tcase_add_loop_test(tc, test_gen_null_slots, 1, 13);
	tcase_add_test(tc, test_gen_beyond_piece);
	tcase_add_test(tc, test_gen_unaligned);
	suite_add_tcase(s, tc);

	tc = tcase_create("check");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_check_detects_flips, 1, 11);
	tcase_add_loop_test(tc, test_consistent_methods, 1, 9);
	tcase_add_test(tc, test_consistent_auto_rule);
	suite_add_tcase(s, tc);

	tc = tcase_create("recover");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_recover_all_erasures, 0,
	                    (int)(sizeof(recover_widths) / sizeof(recover_widths[0])));
	tcase_add_test(tc, test_recover_with_null_slots);
	tcase_add_test(tc, test_recover_beyond_piece);
	tcase_add_loop_test(tc, test_recover_raid5, 1, 8);
	tcase_add_test(tc, test_recover_invalid);
	tcase_add_test(tc, test_wide_stripes);
	suite_add_tcase(s, tc);

	tc = tcase_create("culprit");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_culprit_single_block, 0,
	                    (int)(sizeof(culprit_widths) / sizeof(culprit_widths[0])));
	tcase_add_test(tc, test_culprit_two_blocks);
	tcase_add_test(tc, test_culprit_phantom_slot);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(parity_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
