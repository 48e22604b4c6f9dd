/* parity_ref.c - an independent check of member images written by
 * `raidimg create`, for tests/integration/create.sh.
 *
 * It shares no code with raidimg (no layout.c, parity.c, isa-l): the block
 * placement is written out again from the formulas of md's
 * raid5_compute_sector (docs: md-facts "Block mapping"), P is a plain XOR and
 * Q a byte-at-a-time GF(2^8) sum in md's slot order (raid6_d0 / the slot
 * walk from the disk after Q).  Only the rotating layouts 0-3 of RAID5 and
 * RAID6 are covered: those are the ones where Q order and data order differ.
 *
 *   parity_ref LEVEL LAYOUT CHUNK DATA_OFFSET STRIPES FILE MEMBER0 MEMBER1 ...
 *
 * For stripes 0..STRIPES-1: every data chunk equals FILE's bytes at its
 * array offset (zeros past FILE's end), P = XOR of the data, and (RAID6)
 * Q = sum of 2^slot * data.  Exit 0 if all hold, 1 with the first
 * difference, 2 on bad arguments or I/O errors.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MEMBERS 64

struct geo {
	int level, layout, n, k;
	size_t chunk;
};

/* Disk of P, Q (-1 for RAID5) and of each data chunk of stripe s. */
static void place(const struct geo *g, uint64_t s, int *p, int *q, int *disk)
{
	int n = g->n, r = (int)(s % (uint64_t)n);
	int left = g->layout == 0 || g->layout == 2;
	int sym = g->layout == 2 || g->layout == 3;

	*p = left ? n - 1 - r : r;
	*q = -1;
	for (int d = 0; d < g->k; d++) {
		if (g->level == 5)
			disk[d] = sym ? (*p + 1 + d) % n : d + (d >= *p);
		else if (sym)
			disk[d] = (*p + 2 + d) % n;
		else if (*p == n - 1)
			disk[d] = d + 1;
		else
			disk[d] = d + 2 * (d >= *p);
	}
	if (g->level == 6)
		*q = sym ? (*p + 1) % n : (*p == n - 1 ? 0 : *p + 1);
}

static uint8_t gf_mul2(uint8_t x)
{
	return (uint8_t)((x << 1) ^ (x & 0x80 ? 0x1d : 0));
}

static int read_at(FILE *f, const char *name, uint8_t *buf, size_t len, uint64_t off, int short_ok)
{
	size_t got;

	if (fseeko(f, (off_t)off, SEEK_SET)) {
		fprintf(stderr, "parity_ref: %s: seek: %s\n", name, strerror(errno));
		return -1;
	}
	got = fread(buf, 1, len, f);
	if (got < len && !short_ok) {
		fprintf(stderr, "parity_ref: %s: short read at %llu\n", name, (unsigned long long)off);
		return -1;
	}
	memset(buf + got, 0, len - got);
	return 0;
}

/* 0 if stripe s is right, 1 if not (message printed), -1 on I/O errors. */
static int check_stripe(const struct geo *g, uint64_t s, uint64_t doff, FILE *file, FILE **mem,
			char **names, uint8_t **blk, uint8_t *want)
{
	int p, q, disk[MAX_MEMBERS];
	size_t c = g->chunk;

	place(g, s, &p, &q, disk);
	for (int i = 0; i < g->n; i++)
		if (read_at(mem[i], names[i], blk[i], c, doff + s * c, 0))
			return -1;
	for (int d = 0; d < g->k; d++) {
		if (read_at(file, "FILE", want, c, (s * (uint64_t)g->k + (uint64_t)d) * c, 1))
			return -1;
		if (memcmp(blk[disk[d]], want, c)) {
			printf("stripe %llu: data chunk %d on member %d differs from the file\n",
			       (unsigned long long)s, d, disk[d]);
			return 1;
		}
	}
	for (size_t b = 0; b < c; b++) {
		uint8_t x = 0, y = 0;

		for (int d = 0; d < g->k; d++)
			x ^= blk[disk[d]][b];
		if (x != blk[p][b]) {
			printf("stripe %llu: P on member %d wrong at byte %zu\n", (unsigned long long)s, p, b);
			return 1;
		}
		if (q < 0)
			continue;
		/* Horner from the highest slot: slots walk from the disk after
		 * Q, skipping P and Q */
		for (int j = g->n - 1; j >= 1; j--) {
			int dk = (q + j) % g->n;

			if (dk == p)
				continue;
			y = (uint8_t)(gf_mul2(y) ^ blk[dk][b]);
		}
		if (y != blk[q][b]) {
			printf("stripe %llu: Q on member %d wrong at byte %zu\n", (unsigned long long)s, q, b);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct geo g;
	uint64_t doff, stripes;
	FILE *file, *mem[MAX_MEMBERS];
	uint8_t *blk[MAX_MEMBERS], *want;
	int rc = 0;

	if (argc < 9) {
		fprintf(stderr, "usage: parity_ref LEVEL LAYOUT CHUNK DATA_OFFSET STRIPES FILE MEMBER...\n");
		return 2;
	}
	g.level = atoi(argv[1]);
	g.layout = atoi(argv[2]);
	g.chunk = strtoul(argv[3], NULL, 0);
	doff = strtoull(argv[4], NULL, 0);
	stripes = strtoull(argv[5], NULL, 0);
	g.n = argc - 7;
	g.k = g.n - (g.level == 6 ? 2 : 1);
	if ((g.level != 5 && g.level != 6) || g.layout < 0 || g.layout > 3 || !g.chunk ||
	    g.n > MAX_MEMBERS || g.k < 1) {
		fprintf(stderr, "parity_ref: RAID5/6 layouts 0-3, up to %d members\n", MAX_MEMBERS);
		return 2;
	}
	file = fopen(argv[6], "rb");
	want = malloc(g.chunk);
	if (!file || !want) {
		fprintf(stderr, "parity_ref: %s: %s\n", argv[6], strerror(errno));
		return 2;
	}
	for (int i = 0; i < g.n; i++) {
		mem[i] = fopen(argv[7 + i], "rb");
		blk[i] = malloc(g.chunk);
		if (!mem[i] || !blk[i]) {
			fprintf(stderr, "parity_ref: %s: %s\n", argv[7 + i], strerror(errno));
			return 2;
		}
	}
	for (uint64_t s = 0; s < stripes && !rc; s++)
		rc = check_stripe(&g, s, doff, file, mem, argv + 7, blk, want);
	if (!rc)
		printf("%llu stripes: data in place, P%s consistent\n", (unsigned long long)stripes,
		       g.level == 6 ? " and Q" : "");
	for (int i = 0; i < g.n; i++) {   /* (for LeakSanitizer) */
		fclose(mem[i]);
		free(blk[i]);
	}
	fclose(file);
	free(want);
	return rc < 0 ? 2 : rc;
}
