/* parity.c - P/Q parity over stripe buffers, built on isa-l.
 *
 * Shape: the public functions validate their request and pick a strategy;
 * three workers do the byte crunching:
 *   xor_n  dst = XOR of blocks                 (isa-l xor_gen)
 *   pq_n   P and Q of blocks in slot order     (isa-l pq_gen)
 *   ec_n   up to two GF(2^8) linear combos     (isa-l ec_encode_data)
 * Each worker cuts its length into pieces isa-l accepts (a multiple of 32
 * bytes, an int, and at most PARITY_ZERO_MAX so the shared zero block can
 * stand in for a NULL block in every piece) and finishes the < 32-byte tail,
 * or everything when a pointer is not 32-byte aligned, in portable C.
 *
 * Arithmetic is Linux md's: GF(2^8) with polynomial 0x11d, generator 2,
 * Q = sum over slots j of 2^j * D_j.
 */
#include "parity.h"

#include <assert.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

/* isa-l wants lengths that are multiples of this, and pointers aligned to it */
#define ISAL_GRAIN ((size_t)32)
/* largest length handed to isa-l in one call (its lengths are int) */
#define PIECE ((size_t)PARITY_ZERO_MAX)
/* most slots we keep pointer arrays for on the stack: md never has more
 * than 256 members (layout.h LAYOUT_MAX_DISKS), so no more Q slots either */
#define MAX_SLOTS 256
#define MAX_VECTS (MAX_SLOTS + 2)

/* Two-erasure recovery strategy (recover_two_data, recover_data_p): one
 * ec_encode_data pass over all survivors (~k*rows table look-ups per byte)
 * wins for narrow stripes; beyond this many sources, pq_gen into staggered
 * scratch windows plus a 3-4 source combine is quicker.  Measured on the
 * AVX2 development VM (512 KiB chunks, both strategies interleaved): one
 * pass ahead up to 6 data slots, even at 7, behind from 8 on (1.3-2.5x at
 * 10-14), as perf-facts.md saw near 10 members.  -D to re-measure. */
#ifndef PARITY_ONEPASS_MAX_SRC
#define PARITY_ONEPASS_MAX_SRC 7
#endif

/* Internal marker for a byte with no mismatch in parity_locate_culprit. */
#define CULPRIT_CLEAN (PARITY_NONE - 1)

/* A read-only anonymous mapping made before main: it costs no memory (every
 * page read is the kernel's zero page), like .bss - but it is not a
 * writable global, which LeakSanitizer would scan for pointers at every
 * exit (16 MiB: 0.09 s of each sanitizer-build run).  Failing to map it is
 * what failing to map a 16 MiB .bss is: the program cannot start. */
static const uint8_t *zero_block;

__attribute__((constructor)) static void zero_block_map(void)
{
	void *p = mmap(NULL, PARITY_ZERO_MAX, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "raidimg: cannot map %u MiB of zeros: %s\n", PARITY_ZERO_MAX >> 20, strerror(errno));
		_exit(2);
	}
	zero_block = p;
}

const uint8_t *parity_zero_block(void)
{
	return zero_block;
}

/* ---- GF(2^8), for the portable paths and for building coefficients ---- */

static uint8_t gf_exp[2 * 255];   /* doubled so exp[log a + log b] needs no mod */
static uint8_t gf_log[256];       /* gf_log[0] unused */
static pthread_once_t gf_once = PTHREAD_ONCE_INIT;

static inline uint8_t gf_mul2(uint8_t x)
{
	return (uint8_t)((x << 1) ^ ((x & 0x80) ? 0x1d : 0));
}

static void gf_build(void)
{
	uint8_t x = 1;

	for (int i = 0; i < 255; i++) {
		gf_exp[i] = gf_exp[i + 255] = x;
		gf_log[x] = (uint8_t)i;
		x = gf_mul2(x);
	}
}

static void gf_init(void)
{
	pthread_once(&gf_once, gf_build);
}

static uint8_t gf_mul8(uint8_t a, uint8_t b)
{
	if (a == 0 || b == 0)
		return 0;
	return gf_exp[gf_log[a] + gf_log[b]];
}

/* a must be non-zero */
static uint8_t gf_inv8(uint8_t a)
{
	return gf_exp[255 - gf_log[a]];
}

static uint8_t gf_pow2(int e)
{
	return gf_exp[e % 255];
}

/* ---- helpers ---- */

static bool is_aligned(const void *ptr)
{
	return ((uintptr_t)ptr & (ISAL_GRAIN - 1)) == 0;
}

/* The part of n that goes to isa-l: all whole grains, if alignment allows. */
static size_t isal_head(size_t n, bool aligned)
{
	return aligned ? n & ~(ISAL_GRAIN - 1) : 0;
}

static size_t piece_len(size_t head, size_t off)
{
	return head - off < PIECE ? head - off : PIECE;
}

/* Pointers for the piece at off.  The zero block is not advanced: it is only
 * PIECE bytes long, and any window of it is zeros anyway. */
static void piece_ptrs(int nv, void *const *v, void **out, size_t off)
{
	for (int i = 0; i < nv; i++)
		out[i] = v[i] == (const void *)zero_block ? v[i] : (uint8_t *)v[i] + off;
}

typedef int (*isal_gen_fn)(int vects, int len, void **array);

/* Run xor_gen or pq_gen over [0, head) piece by piece. */
static void run_gen(isal_gen_fn fn, int nv, void *const *v, size_t head)
{
	void *pv[MAX_VECTS + 1];

	for (size_t off = 0; off < head; off += PIECE) {
		piece_ptrs(nv, v, pv, off);
		int rc = fn(nv, (int)piece_len(head, off), pv);
		/* only fails on vects/len/alignment, which we arranged */
		assert(rc == 0);
		(void)rc;
	}
}

/* ---- XOR ---- */

static void xor_portable(int m, uint8_t *const *src, uint8_t *dst, size_t from, size_t to)
{
	memset(dst + from, 0, to - from);
	for (int j = 0; j < m; j++) {
		const uint8_t *s = src[j];
		if (!s)
			continue;
		for (size_t i = from; i < to; i++)
			dst[i] ^= s[i];
	}
}

/* dst = XOR of src[0..m) over n bytes; NULL sources are zero and skipped. */
static void xor_n(int m, uint8_t *const *src, uint8_t *dst, size_t n)
{
	void *v[MAX_VECTS + 1];
	int k = 0;
	bool aligned = is_aligned(dst);

	for (int j = 0; j < m; j++) {
		if (!src[j])
			continue;
		if (k == MAX_VECTS) {   /* more than md can have: slow but right */
			xor_portable(m, src, dst, 0, n);
			return;
		}
		aligned = aligned && is_aligned(src[j]);
		v[k++] = src[j];
	}
	if (k == 0) {
		memset(dst, 0, n);
		return;
	}
	if (k == 1) {   /* xor_gen needs two sources: a 2-disk RAID5 is a mirror */
		memmove(dst, v[0], n);
		return;
	}
	size_t head = isal_head(n, aligned);
	v[k] = dst;
	run_gen(xor_gen, k + 1, v, head);
	xor_portable(m, src, dst, head, n);
}

/* ---- P and Q ---- */

/* Horner from the highest slot down: q = q*2 ^ D_j ends as sum 2^j * D_j. */
static void pq_portable(int m, uint8_t *const *src, uint8_t *p, uint8_t *q, size_t from,
                        size_t to)
{
	memset(p + from, 0, to - from);
	memset(q + from, 0, to - from);
	for (int j = m - 1; j >= 0; j--) {
		const uint8_t *s = src[j];
		for (size_t i = from; i < to; i++) {
			uint8_t d = s ? s[i] : 0;
			q[i] = gf_mul2(q[i]) ^ d;
			p[i] ^= d;
		}
	}
}

/* p, q = P and Q of src[0..m) over n bytes.  A NULL source is a zero block
 * that keeps its slot (its weight 2^j), so it cannot just be dropped. */
static void pq_n(int m, uint8_t *const *src, uint8_t *p, uint8_t *q, size_t n)
{
	void *v[MAX_VECTS];

	/* zero blocks at the top add nothing and shift no other weight */
	while (m > 0 && !src[m - 1])
		m--;
	if (m == 0) {
		memset(p, 0, n);
		memset(q, 0, n);
		return;
	}
	if (m == 1) {   /* pq_gen needs two sources; weight 2^0 = 1 */
		memmove(p, src[0], n);
		memmove(q, src[0], n);
		return;
	}
	if (m > MAX_SLOTS) {
		pq_portable(m, src, p, q, 0, n);
		return;
	}
	bool aligned = is_aligned(p) && is_aligned(q);
	for (int j = 0; j < m; j++) {
		v[j] = src[j] ? src[j] : (void *)zero_block;
		aligned = aligned && is_aligned(v[j]);
	}
	v[m] = p;
	v[m + 1] = q;
	size_t head = isal_head(n, aligned);
	run_gen(pq_gen, m + 2, v, head);
	pq_portable(m, src, p, q, head, n);
}

/* P' and Q' of a stripe are computed into the caller's 2*len scratch one
 * window at a time, each consumed (compared, scanned, combined) before the
 * next.  Windows leave room to start Q' WIN_STAGGER bytes past the end of
 * P': isa-l's AVX2 pq_gen ran 2-3x slower with P and Q at the same offset
 * within a page, which a plain scratch / scratch+len split gives for the
 * usual power-of-two len (measured on the development VM).  Small windows
 * also keep P' and Q' cache-hot for the consumer where stores are cached. */
#define WIN_STAGGER ((size_t)256)
#ifndef PARITY_WIN_MAX
#define PARITY_WIN_MAX ((size_t)64 << 10)
#endif

struct pq_win {
	int nslots;
	uint8_t *const *slots;
	size_t len;
	uint8_t *scratch;
	size_t size, qoff;   /* window length, offset of Q' in scratch */
	size_t off, n;       /* current window: stripe bytes [off, off+n) */
	uint8_t *p, *q;      /* its P' and Q' */
};

static void pq_win_init(struct pq_win *w, int nslots, uint8_t *const *slots, size_t len,
                        uint8_t *scratch)
{
	*w = (struct pq_win){ .nslots = nslots, .slots = slots, .len = len, .scratch = scratch };
	if (nslots > MAX_SLOTS || len < 2 * WIN_STAGGER) {
		/* one window: no room to stagger, or too many slots to
		 * offset on the stack (then it is all portable anyway) */
		w->size = len;
		w->qoff = len;
		return;
	}
	/* 2*size + WIN_STAGGER <= 2*len; multiple of 32 keeps windows aligned */
	size_t size = (len - WIN_STAGGER / 2) & ~(ISAL_GRAIN - 1);
	w->size = size < PARITY_WIN_MAX ? size : PARITY_WIN_MAX;
	w->qoff = w->size + WIN_STAGGER;
}

/* Advance to the next window and compute its P' and Q'; false at the end. */
static bool pq_win_next(struct pq_win *w)
{
	uint8_t *shifted[MAX_SLOTS];
	uint8_t *const *src = w->slots;

	w->off += w->n;
	if (w->off >= w->len)
		return false;
	w->n = w->len - w->off < w->size ? w->len - w->off : w->size;
	w->p = w->scratch;
	w->q = w->scratch + w->qoff;
	if (w->off) {   /* only with nslots <= MAX_SLOTS (see pq_win_init) */
		for (int j = 0; j < w->nslots; j++)
			shifted[j] = w->slots[j] ? w->slots[j] + w->off : NULL;
		src = shifted;
	}
	pq_n(w->nslots, src, w->p, w->q, w->n);
	return true;
}

/* ---- GF(2^8) linear combinations (ec_encode_data) ---- */

struct ec_job {
	int k, rows;                     /* sources, outputs (1 or 2) */
	uint8_t coef[2][MAX_VECTS];      /* coef[r][j]: weight of src j in dst r */
	uint8_t *src[MAX_VECTS];
	uint8_t *dst[2];
};

static void ec_add_src(struct ec_job *job, uint8_t *src, uint8_t c0, uint8_t c1)
{
	job->src[job->k] = src;
	job->coef[0][job->k] = c0;
	job->coef[1][job->k] = c1;
	job->k++;
}

static void ec_portable(const struct ec_job *job, size_t from, size_t to)
{
	for (int r = 0; r < job->rows; r++) {
		uint8_t *d = job->dst[r];
		memset(d + from, 0, to - from);
		for (int j = 0; j < job->k; j++) {
			uint8_t c = job->coef[r][j];
			const uint8_t *s = job->src[j];
			for (size_t i = from; i < to; i++)
				d[i] ^= gf_mul8(c, s[i]);
		}
	}
}

/* dst[r] = sum_j coef[r][j] * src[j] over n bytes.  Sources and outputs
 * must not overlap (the lost blocks are outputs, never sources). */
static void ec_n(const struct ec_job *job, size_t n)
{
	unsigned char a[2 * MAX_VECTS];
	unsigned char tbls[2 * MAX_VECTS * 32];
	unsigned char *s[MAX_VECTS], *d[2];
	int k = job->k, rows = job->rows;
	bool aligned = true;

	for (int j = 0; j < k; j++)
		aligned = aligned && is_aligned(job->src[j]);
	for (int r = 0; r < rows; r++)
		aligned = aligned && is_aligned(job->dst[r]);
	size_t head = isal_head(n, aligned);
	if (head) {
		/* isa-l's matrix is rows x k, row-major */
		for (int r = 0; r < rows; r++)
			memcpy(a + (size_t)r * k, job->coef[r], (size_t)k);
		ec_init_tables(k, rows, a, tbls);
	}
	for (size_t off = 0; off < head; off += PIECE) {
		for (int j = 0; j < k; j++)
			s[j] = job->src[j] + off;
		for (int r = 0; r < rows; r++)
			d[r] = job->dst[r] + off;
		ec_encode_data((int)piece_len(head, off), k, rows, tbls, s, d);
	}
	ec_portable(job, head, n);
}

/* ---- generation and checking ---- */

void parity_gen_p(int nslots, size_t len, uint8_t *const *slots, uint8_t *p)
{
	xor_n(nslots, slots, p, len);
}

void parity_gen_pq(int nslots, size_t len, uint8_t *const *slots, uint8_t *p, uint8_t *q)
{
	pq_n(nslots, slots, p, q, len);
}

/* isa-l's read-only checks: worth it where its generators are not the
 * AVX-512 ones, or for narrow stripes (parity_check_auto; the figures are
 * at parity_consistent in parity.h), and usable only for
 * lengths in multiples of 32 with enough vectors (xor >= 3, pq >= 4). */
static bool isal_check_fits(int nvects, bool pq, size_t len)
{
	return len <= PARITY_ZERO_MAX && len % 32 == 0 && nvects >= (pq ? 4 : 3) && len <= INT32_MAX;
}

static bool cpu_has_avx512(void)
{
	static int have = -1;

	if (have < 0) {
		__builtin_cpu_init();
		have = __builtin_cpu_supports("avx512bw") ? 1 : 0;
	}
	return have;
}

enum parity_check_method parity_check_auto(int nslots, size_t len, bool avx512)
{
	if (!avx512 || (nslots <= PARITY_CHECK_ISAL_SLOTS && len >= PARITY_CHECK_ISAL_MIN_LEN))
		return PARITY_CHECK_ISAL;
	return PARITY_CHECK_GEN;
}

int parity_consistent(int nslots, size_t len, uint8_t *const *slots, const uint8_t *p, const uint8_t *q,
		      enum parity_check_method m, uint8_t *scratch, bool *generated)
{
	int nv = nslots + (q ? 2 : 1);
	bool isal;

	if (m == PARITY_CHECK_AUTO)
		m = parity_check_auto(nslots, len, cpu_has_avx512());
	isal = m == PARITY_CHECK_ISAL;

	*generated = false;
	if (isal && isal_check_fits(nv, q != NULL, len) && nslots <= 256) {
		void *vec[256 + 2];
		int i;

		for (i = 0; i < nslots; i++)
			vec[i] = slots[i] ? slots[i] : (void *)parity_zero_block();
		vec[i++] = (void *)p;
		if (!q)
			return xor_check(i, (int)len, vec) == 0;
		vec[i++] = (void *)q;
		return pq_check(i, (int)len, vec) == 0;
	}
	*generated = true;
	if (!q) {
		xor_n(nslots, slots, scratch, len);
		return !memcmp(scratch, p, len);
	}
	pq_n(nslots, slots, scratch, scratch + len, len);
	return !memcmp(scratch, p, len) && !memcmp(scratch + len, q, len);
}

/* Generating into scratch and comparing beats isa-l's xor_check/pq_check,
 * which only have SSE versions (perf-facts.md). */
int parity_check_p(int nslots, size_t len, uint8_t *const *slots, const uint8_t *p,
                   uint8_t *scratch)
{
	xor_n(nslots, slots, scratch, len);
	return memcmp(scratch, p, len) != 0;
}

int parity_check_pq(int nslots, size_t len, uint8_t *const *slots, const uint8_t *p,
                    const uint8_t *q, uint8_t *scratch, int *bad_p, int *bad_q)
{
	struct pq_win w;
	bool bp = false, bq = false;

	pq_win_init(&w, nslots, slots, len, scratch);
	while (!(bp && bq) && pq_win_next(&w)) {
		bp = bp || memcmp(p + w.off, w.p, w.n) != 0;
		bq = bq || memcmp(q + w.off, w.q, w.n) != 0;
	}
	if (bad_p)
		*bad_p = bp;
	if (bad_q)
		*bad_q = bq;
	return bp || bq;
}

/* ---- recovery ---- */

/* Order of lost blocks: data slots ascending, then P, then Q. */
static int loss_rank(int id)
{
	if (id >= 0)
		return id;
	return id == PARITY_P ? MAX_SLOTS + 1 : MAX_SLOTS + 2;
}

static bool loss_valid(int id, int nslots, uint8_t *const *slots, const uint8_t *q)
{
	if (id == PARITY_P)
		return true;
	if (id == PARITY_Q)
		return q != NULL;
	/* a NULL slot is a fixed zero block: nothing to rebuild */
	return id >= 0 && id < nslots && slots[id] != NULL;
}

/* Copy of the slot pointers with the lost ones turned into zero blocks, so
 * partial syndromes never read the (output) buffers being rebuilt. */
static void slots_without(int nslots, uint8_t *const *slots, int a, int b, uint8_t **out)
{
	for (int j = 0; j < nslots; j++)
		out[j] = (j == a || j == b) ? NULL : slots[j];
}

/* One data block from P and the other data. */
static void recover_data_from_p(int nslots, size_t len, uint8_t *const *slots, uint8_t *p, int a)
{
	uint8_t *src[MAX_VECTS];

	slots_without(nslots, slots, a, PARITY_NONE, src);
	src[nslots] = p;
	xor_n(nslots + 1, src, slots[a], len);
}

/* Coefficients for two lost data slots a < b (mdadm restripe.c):
 * D_b = c1*px ^ c2*qx, D_a = D_b ^ px, with px = P^P', qx = Q^Q'. */
static void two_data_coefs(int a, int b, uint8_t *c1, uint8_t *c2)
{
	*c1 = gf_inv8(1 ^ gf_pow2(b - a));
	*c2 = gf_inv8(gf_pow2(a) ^ gf_pow2(b));
}

/* Expanding px and qx over the survivors gives one pass of ec_encode_data:
 * D_b = c1*P ^ c2*Q ^ sum_j (c1 ^ c2*2^j) D_j, D_a = D_b ^ P ^ sum_j D_j. */
static void job_two_data_onepass(struct ec_job *job, int nslots, uint8_t *const *slots,
                                 uint8_t *p, uint8_t *q, int a, int b)
{
	uint8_t c1, c2;

	two_data_coefs(a, b, &c1, &c2);
	job->k = 0;
	job->rows = 2;
	job->dst[0] = slots[b];
	job->dst[1] = slots[a];
	for (int j = 0; j < nslots; j++) {
		if (j == a || j == b || !slots[j])
			continue;   /* a zero block contributes nothing */
		uint8_t w = gf_mul8(c2, gf_pow2(j));
		ec_add_src(job, slots[j], c1 ^ w, c1 ^ w ^ 1);
	}
	ec_add_src(job, p, c1, c1 ^ 1);
	ec_add_src(job, q, c2, c2);
}

/* Data slot a and P lost, g = 1/2^a:
 * D_a = g*Q ^ sum_j g*2^j D_j, P = D_a ^ sum_j D_j. */
static void job_data_p_onepass(struct ec_job *job, int nslots, uint8_t *const *slots,
                               uint8_t *p, uint8_t *q, int a)
{
	uint8_t g = gf_inv8(gf_pow2(a));

	job->k = 0;
	job->rows = 2;
	job->dst[0] = slots[a];
	job->dst[1] = p;
	for (int j = 0; j < nslots; j++) {
		if (j == a || !slots[j])
			continue;
		uint8_t w = gf_mul8(g, gf_pow2(j));
		ec_add_src(job, slots[j], w, w ^ 1);
	}
	ec_add_src(job, q, g, g);
}

/* The Linux-style way for wide stripes: P', Q' of the survivors with
 * pq_gen, then a small combine over (P, P', Q, Q'), window by window. */
static void two_data_via_scratch(int nslots, size_t len, uint8_t *const *slots, uint8_t *p,
                                 uint8_t *q, int a, int b, uint8_t *scratch)
{
	uint8_t *surv[MAX_SLOTS];
	struct pq_win w;
	struct ec_job job = { .rows = 2 };
	uint8_t c1, c2;

	slots_without(nslots, slots, a, b, surv);
	two_data_coefs(a, b, &c1, &c2);
	pq_win_init(&w, nslots, surv, len, scratch);
	while (pq_win_next(&w)) {
		job.k = 0;
		ec_add_src(&job, p + w.off, c1, c1 ^ 1);
		ec_add_src(&job, w.p, c1, c1 ^ 1);
		ec_add_src(&job, q + w.off, c2, c2);
		ec_add_src(&job, w.q, c2, c2);
		job.dst[0] = slots[b] + w.off;
		job.dst[1] = slots[a] + w.off;
		ec_n(&job, w.n);
	}
}

/* Same for data + P: D_a = g*(Q ^ Q'), P = P' ^ D_a. */
static void data_p_via_scratch(int nslots, size_t len, uint8_t *const *slots, uint8_t *p,
                               uint8_t *q, int a, uint8_t *scratch)
{
	uint8_t *surv[MAX_SLOTS];
	struct pq_win w;
	struct ec_job job = { .rows = 2 };
	uint8_t g = gf_inv8(gf_pow2(a));

	slots_without(nslots, slots, a, PARITY_NONE, surv);
	pq_win_init(&w, nslots, surv, len, scratch);
	while (pq_win_next(&w)) {
		job.k = 0;
		ec_add_src(&job, q + w.off, g, g);
		ec_add_src(&job, w.q, g, g);
		ec_add_src(&job, w.p, 0, 1);
		job.dst[0] = slots[a] + w.off;
		job.dst[1] = p + w.off;
		ec_n(&job, w.n);
	}
}

/* Sources a one-pass job would have: non-NULL survivors plus one parity
 * (data+P) or two (two data). */
static int onepass_sources(int nslots, uint8_t *const *slots, int nlost_data, int parities)
{
	int k = parities - nlost_data;

	for (int j = 0; j < nslots; j++)
		k += slots[j] != NULL;
	return k;
}

static void recover_two_data(int nslots, size_t len, uint8_t *const *slots, uint8_t *p,
                             uint8_t *q, int a, int b, uint8_t *scratch)
{
	if (onepass_sources(nslots, slots, 2, 2) <= PARITY_ONEPASS_MAX_SRC) {
		struct ec_job job;
		job_two_data_onepass(&job, nslots, slots, p, q, a, b);
		ec_n(&job, len);
	} else {
		two_data_via_scratch(nslots, len, slots, p, q, a, b, scratch);
	}
}

static void recover_data_p(int nslots, size_t len, uint8_t *const *slots, uint8_t *p,
                           uint8_t *q, int a, uint8_t *scratch)
{
	if (onepass_sources(nslots, slots, 1, 1) <= PARITY_ONEPASS_MAX_SRC) {
		struct ec_job job;
		job_data_p_onepass(&job, nslots, slots, p, q, a);
		ec_n(&job, len);
	} else {
		data_p_via_scratch(nslots, len, slots, p, q, a, scratch);
	}
}

/* Q from the (complete) data; P' goes to scratch, as P is an input here. */
static void regen_q(int nslots, size_t len, uint8_t *const *slots, uint8_t *q, uint8_t *scratch)
{
	pq_n(nslots, slots, scratch, q, len);
}

/* a, b are valid and ordered by loss_rank; b may be PARITY_NONE. */
static void recover_ordered(int nslots, size_t len, uint8_t *const *slots, uint8_t *p,
                            uint8_t *q, int a, int b, uint8_t *scratch)
{
	if (b == PARITY_NONE && a >= 0)
		recover_data_from_p(nslots, len, slots, p, a);
	else if (b == PARITY_NONE && a == PARITY_P)
		xor_n(nslots, slots, p, len);
	else if (b == PARITY_NONE)
		regen_q(nslots, len, slots, q, scratch);
	else if (b >= 0)
		recover_two_data(nslots, len, slots, p, q, a, b, scratch);
	else if (a >= 0 && b == PARITY_P)
		recover_data_p(nslots, len, slots, p, q, a, scratch);
	else if (a >= 0) {   /* data + Q: D from P, then Q from all data */
		recover_data_from_p(nslots, len, slots, p, a);
		regen_q(nslots, len, slots, q, scratch);
	} else {   /* P + Q */
		pq_n(nslots, slots, p, q, len);
	}
}

int parity_recover(int nslots, size_t len, uint8_t *const *slots, uint8_t *p, uint8_t *q,
                   int lost_a, int lost_b, uint8_t *scratch)
{
	/* scratch is required even where a strategy happens not to use it, so a
	 * caller's mistake shows on narrow stripes too */
	if (nslots < 1 || nslots > MAX_SLOTS || !slots || !p || !scratch)
		return -EINVAL;
	if (!loss_valid(lost_a, nslots, slots, q))
		return -EINVAL;
	gf_init();
	if (lost_b != PARITY_NONE) {
		if (!q || lost_b == lost_a || !loss_valid(lost_b, nslots, slots, q))
			return -EINVAL;
		/* two data slots whose weights coincide (b - a a multiple of 255,
		 * only in a 256-slot stripe) cannot be told apart */
		if (lost_a >= 0 && lost_b >= 0 && gf_pow2(lost_a) == gf_pow2(lost_b))
			return -EINVAL;
		if (loss_rank(lost_b) < loss_rank(lost_a)) {
			int t = lost_a;
			lost_a = lost_b;
			lost_b = t;
		}
	}
	recover_ordered(nslots, len, slots, p, q, lost_a, lost_b, scratch);
	return 0;
}

/* ---- single-error localisation (mdadm raid6check) ---- */

/* The data slot whose weight is 2^s: s, or s + 255, s + 510 ... when a stripe
 * is that wide.  Only a real (non-NULL) block can be the culprit, and only
 * one may fit. */
static int slot_for_weight(int s, int nslots, uint8_t *const *slots)
{
	int found = PARITY_NONE;

	for (int j = s; j < nslots; j += 255) {
		if (!slots[j])
			continue;
		if (found != PARITY_NONE)
			return PARITY_NONE;
		found = j;
	}
	return found;
}

/* What one byte's syndromes px = P^P', qx = Q^Q' say.  A data error e in
 * slot j gives px = e, qx = 2^j * e, so j = log(qx) - log(px). */
static int byte_culprit(uint8_t px, uint8_t qx, int nslots, uint8_t *const *slots)
{
	if (!px && !qx)
		return CULPRIT_CLEAN;
	if (!qx)
		return PARITY_P;
	if (!px)
		return PARITY_Q;
	int s = (gf_log[qx] - gf_log[px] + 255) % 255;
	return slot_for_weight(s, nslots, slots);
}

/* Fold n bytes into *culprit; false once they name no block or disagree. */
static bool scan_culprit(const uint8_t *p, const uint8_t *pp, const uint8_t *q,
                         const uint8_t *qq, size_t n, int nslots, uint8_t *const *slots,
                         int *culprit)
{
	size_t i = 0;

	while (i < n) {
		/* skip clean 8-byte words fast: most of a stripe usually is */
		if (n - i >= 8) {
			uint64_t w_p, w_pp, w_q, w_qq;
			memcpy(&w_p, p + i, 8);
			memcpy(&w_pp, pp + i, 8);
			memcpy(&w_q, q + i, 8);
			memcpy(&w_qq, qq + i, 8);
			if (((w_p ^ w_pp) | (w_q ^ w_qq)) == 0) {
				i += 8;
				continue;
			}
		}
		size_t end = n - i >= 8 ? i + 8 : n;
		for (; i < end; i++) {
			int c = byte_culprit(p[i] ^ pp[i], q[i] ^ qq[i], nslots, slots);
			if (c == CULPRIT_CLEAN)
				continue;
			if (c == PARITY_NONE || (*culprit != CULPRIT_CLEAN && *culprit != c))
				return false;
			*culprit = c;
		}
	}
	return true;
}

int parity_locate_culprit(int nslots, size_t len, uint8_t *const *slots, const uint8_t *p,
                          const uint8_t *q, uint8_t *scratch)
{
	struct pq_win w;
	int culprit = CULPRIT_CLEAN;

	if (nslots < 1 || !slots || !p || !q || !scratch)
		return PARITY_NONE;
	gf_init();
	pq_win_init(&w, nslots, slots, len, scratch);
	while (pq_win_next(&w))
		if (!scan_culprit(p + w.off, w.p, q + w.off, w.q, w.n, nslots, slots, &culprit))
			return PARITY_NONE;
	return culprit == CULPRIT_CLEAN ? PARITY_NONE : culprit;
}
