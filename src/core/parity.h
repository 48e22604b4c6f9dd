/* parity.h - P/Q generation, checking and erasure recovery over buffers
 * (pure: no I/O).  Built on isa-l.
 *
 * Blocks are given as arrays of pointers in Q-syndrome slot order
 * (see layout.h: stripe_map.disk_slot); a NULL slot pointer means an
 * all-zero block (ddf layouts' P/Q positions, or a short stripe).
 * Every buffer must be 32-byte aligned (isa-l's requirement) unless said
 * otherwise; callers allocate with PARITY_ALIGN (64: a cache line, which
 * is also 32-aligned).  len may be any value (a tail that is not a
 * multiple of 32 is handled by portable code).  Nothing here allocates
 * except where documented.
 */
#ifndef RAIDIMG_PARITY_H
#define RAIDIMG_PARITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PARITY_ALIGN 64

/* P = XOR of nslots blocks.  nslots >= 1 (1 = copy: 2-disk RAID5). */
void parity_gen_p(int nslots, size_t len, uint8_t *const *slots, uint8_t *p);

/* P and Q of nslots blocks (nslots >= 1). */
void parity_gen_pq(int nslots, size_t len, uint8_t *const *slots, uint8_t *p, uint8_t *q);

/* Compare with the stored parity.  Return 0 if it matches, 1 if not.
 * scratch: caller-owned, aligned, >= len bytes for P, >= 2*len for PQ.
 * (pq: *bad_p / *bad_q tell which of P and Q differ; may be NULL.) */
int parity_check_p(int nslots, size_t len, uint8_t *const *slots, const uint8_t *p, uint8_t *scratch);
int parity_check_pq(int nslots, size_t len, uint8_t *const *slots, const uint8_t *p,
                    const uint8_t *q, uint8_t *scratch, int *bad_p, int *bad_q);

/* How parity_consistent asks: AUTO picks the faster way for this CPU and
 * shape; ISAL and GEN force one (benchmarks, tests). */
enum parity_check_method { PARITY_CHECK_AUTO, PARITY_CHECK_ISAL, PARITY_CHECK_GEN };

/* Do P (and Q, when q is not NULL) agree with the data?  1 yes, 0 no.
 * isa-l's xor_check/pq_check only read, but they exist only in SSE
 * versions; generating P' (Q') into scratch and comparing pays a write of
 * every byte and a second read of P (Q).  Measured (scripts/bench_parity,
 * perf-facts.md): without AVX-512 the isa-l checks win by about 2x (isa-l's
 * AVX2/SSE generators store non-temporally); with AVX-512 and the stripe hot
 * in cache generate + compare wins by 1.3-3.5x - but not in a scrub, whose
 * stripes were just copied out of the page cache: there, with at most
 * PARITY_CHECK_ISAL_SLOTS data slots and chunks of at least
 * PARITY_CHECK_ISAL_MIN_LEN, reading each byte once wins (scrub / cat
 * member*, scripts/bench_all, best of 7, isa-l vs generating: RAID6 4x64K
 * 1.09 vs 0.93, 4x512K 1.11 vs 1.02, with less CPU time; at 3 data slots
 * it is a tie within the noise - RAID5 4x64K 1.10 vs 1.10, RAID6 5x64K
 * 1.17 vs 1.24 - and from 4 on, or at 4K chunks, generating wins or ties:
 * 6x64K 0.89 vs 0.87, 8x16K 0.86 vs 0.79, 4x4K 1.08 vs 1.02).  AUTO
 * follows that (parity_check_auto).  When it generated, *generated is set
 * and scratch holds P' (and Q' at scratch + len) for the caller to locate
 * the mismatch.  scratch >= len (P) or 2 * len (PQ); nslots, len and the
 * buffers as for parity_gen_pq. */
int parity_consistent(int nslots, size_t len, uint8_t *const *slots, const uint8_t *p, const uint8_t *q,
		      enum parity_check_method m, uint8_t *scratch, bool *generated);

#define PARITY_CHECK_ISAL_SLOTS 2
#define PARITY_CHECK_ISAL_MIN_LEN ((size_t)64 << 10)

/* The method AUTO uses for nslots data slots of len bytes on a CPU with
 * (avx512) or without AVX-512: PARITY_CHECK_ISAL or PARITY_CHECK_GEN. */
enum parity_check_method parity_check_auto(int nslots, size_t len, bool avx512);

/* Erasure identifiers for recovery: 0..nslots-1 = a data slot,
 * PARITY_P, PARITY_Q = the parity blocks. */
enum { PARITY_P = -1, PARITY_Q = -2, PARITY_NONE = -3 };

/* Rebuild up to two lost blocks in place.  slots[], p, q: the stripe; the
 * lost ones' buffers are outputs (must be non-NULL, aligned, len bytes).
 * lost_b may be PARITY_NONE for a single loss.  q may be NULL for RAID5
 * (then only one loss is allowed).  scratch: caller-owned, aligned,
 * >= 2*len bytes.  Returns 0, or -EINVAL for an impossible request
 * (e.g. two losses without Q, same block twice, NULL slot lost). */
int parity_recover(int nslots, size_t len, uint8_t *const *slots, uint8_t *p, uint8_t *q,
                   int lost_a, int lost_b, uint8_t *scratch);

/* RAID6 single-error localisation (as mdadm's raid6check): given a stripe
 * whose P and/or Q disagree, find the one block that explains both.
 * Returns a slot 0..nslots-1, PARITY_P, PARITY_Q, or PARITY_NONE when the
 * syndromes do not name one block consistently over every byte of len
 * (or when there is no mismatch at all).  scratch >= 2*len. */
int parity_locate_culprit(int nslots, size_t len, uint8_t *const *slots, const uint8_t *p,
                          const uint8_t *q, uint8_t *scratch);

/* A shared, read-only, aligned block of zeros of at least len bytes, for
 * NULL-free callers; len <= PARITY_ZERO_MAX. */
#define PARITY_ZERO_MAX (16u << 20)
const uint8_t *parity_zero_block(void);

#endif
