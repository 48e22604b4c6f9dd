/* bench_parity.c - throughput of parity.c's hot calls (not a test).
 *
 *   gcc -std=gnu11 -O2 -I src/core src/core/parity.c scripts/bench_parity.c \
 *       $(pkg-config --cflags --libs libisal) -pthread -o /tmp/bench_parity
 *   /tmp/bench_parity [chunk_kib] [members...]
 *
 * Build again with -DPARITY_ONEPASS_MAX_SRC=0 (always pq_gen + combine) or
 * =1000 (always one ec_encode_data pass) to re-tune the two-erasure
 * threshold, or with -DPARITY_WIN_MAX=... for the scratch window size.
 * Where the buffers land matters as much as the code: isa-l's AVX2 pq_gen
 * is 2-3x slower when P and Q share their offset within a page.  Buffer j
 * starts j * BENCH_STAGGER bytes (default 256) past a page boundary;
 * BENCH_STAGGER=0 shows the same-offset case.
 *
 * Figures are GB/s of data-block bytes (k * chunk per stripe), median of 7
 * runs, buffers hot in cache; the machine is shared, so compare with the
 * memcpy column of the same row rather than across runs.  "consistent gen"
 * and "consistent isal" are parity_consistent's two ways: hot in cache,
 * generating wins everywhere on AVX-512, but a scrub's stripes are not hot
 * (parity.h gives the scrub's own figures, which AUTO follows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parity.h"

#define RUNS 7

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct bench {
	int k;              /* data slots */
	size_t len;
	uint8_t *d[256], *p, *q, *scratch;
};

enum op { OP_MEMCPY, OP_GEN_PQ, OP_CHECK_PQ, OP_CONS_GEN, OP_CONS_ISAL, OP_REC_2DATA, OP_REC_DATA_P, NOPS };
static const char *op_name[NOPS] = { "memcpy", "gen_pq", "check_pq", "consistent gen", "consistent isal",
                                     "recover 2 data", "recover data+P" };

static void run_op(struct bench *b, enum op op)
{
	switch (op) {
	case OP_MEMCPY:   /* a yardstick for this machine at this moment */
		for (int j = 0; j < b->k; j++)
			memcpy(b->scratch, b->d[j], b->len);
		break;
	case OP_GEN_PQ:
		parity_gen_pq(b->k, b->len, b->d, b->p, b->q);
		break;
	case OP_CHECK_PQ:
		parity_check_pq(b->k, b->len, b->d, b->p, b->q, b->scratch, NULL, NULL);
		break;
	case OP_CONS_GEN:    /* parity_consistent as the scrub asks it, each way */
	case OP_CONS_ISAL: {
		bool gen;
		parity_consistent(b->k, b->len, b->d, b->p, b->q,
				  op == OP_CONS_GEN ? PARITY_CHECK_GEN : PARITY_CHECK_ISAL, b->scratch, &gen);
		break;
	}
	case OP_REC_2DATA:
		parity_recover(b->k, b->len, b->d, b->p, b->q, 0, b->k - 1, b->scratch);
		break;
	case OP_REC_DATA_P:
		parity_recover(b->k, b->len, b->d, b->p, b->q, b->k / 2, PARITY_P, b->scratch);
		break;
	default:
		break;
	}
}

/* median GB/s of data bytes */
static double measure(struct bench *b, enum op op)
{
	double rate[RUNS];
	int iters = 1;

	/* calibrate to ~50 ms per run */
	for (;;) {
		double t0 = now();
		for (int i = 0; i < iters; i++)
			run_op(b, op);
		if (now() - t0 > 0.05)
			break;
		iters *= 2;
	}
	for (int r = 0; r < RUNS; r++) {
		double t0 = now();
		for (int i = 0; i < iters; i++)
			run_op(b, op);
		double dt = now() - t0;
		rate[r] = (double)iters * b->k * b->len / dt / 1e9;
	}
	qsort(rate, RUNS, sizeof(rate[0]), cmp_double);
	return rate[RUNS / 2];
}

static size_t stagger = 256;
static void *raw[260];
static int nraw;

/* buffer number nraw, page-aligned plus nraw * stagger (mod 4 KiB) */
static uint8_t *xalloc(size_t n)
{
	void *ptr;
	size_t skew = (nraw * stagger) % 4096;
	if (posix_memalign(&ptr, 4096, n + skew)) {
		perror("posix_memalign");
		exit(1);
	}
	raw[nraw++] = ptr;
	memset(ptr, 0x5a, n + skew);
	return (uint8_t *)ptr + skew;
}

static void xfree_all(void)
{
	while (nraw > 0)
		free(raw[--nraw]);
}

static void bench_members(int members, size_t len)
{
	struct bench b = { .k = members - 2, .len = len };

	for (int j = 0; j < b.k; j++) {
		b.d[j] = xalloc(len);
		for (size_t i = 0; i < len; i++)
			b.d[j][i] = (uint8_t)(rand() >> 7);
	}
	b.p = xalloc(len);
	b.q = xalloc(len);
	b.scratch = xalloc(2 * len);
	parity_gen_pq(b.k, len, b.d, b.p, b.q);
	printf("%3d members (%3d data) x %zu KiB:", members, b.k, len >> 10);
	for (int op = 0; op < NOPS; op++)
		printf("  %s %6.1f", op_name[op], measure(&b, op));
	printf("  GB/s\n");
	xfree_all();
}

int main(int argc, char **argv)
{
	size_t kib = argc > 1 ? strtoul(argv[1], NULL, 10) : 512;
	static const int dflt[] = { 4, 6, 8, 10, 12, 16, 20 };
	const char *env = getenv("BENCH_STAGGER");

	if (env)
		stagger = strtoul(env, NULL, 10) & ~(size_t)(PARITY_ALIGN - 1);

	if (argc > 2) {
		for (int i = 2; i < argc; i++)
			bench_members(atoi(argv[i]), kib << 10);
	} else {
		for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++)
			bench_members(dflt[i], kib << 10);
	}
	return 0;
}
