/* detect_gf.c - GF(2^8) arithmetic (md's field: polynomial 0x11d, generator
 * 2) and the null space of a byte matrix over it.
 *
 * Why: the bytes of one row of a RAID4/5/6 array (the same offset on every
 * member) satisfy fixed linear relations: P = sum of data, and for RAID6
 * Q = sum 2^slot * data.  Over a 512-byte row, 512 equations in n unknown
 * coefficients: the null space of the 512 x n matrix is exactly the span of
 * the relations (for data that is not degenerate), which names the member set,
 * P, Q and every data slot without knowing the geometry.
 */
#include <string.h>

#include "detect_int.h"

void gf_init_tables(struct gf *g)
{
	unsigned x = 1;

	for (int i = 0; i < 255; i++) {
		g->exp[i] = g->exp[i + 255] = (uint8_t)x;
		g->log[x] = (uint8_t)i;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
	g->exp[510] = g->exp[0];
	g->exp[511] = g->exp[1];
	g->log[0] = 0;
	g->inv[0] = 0;
	for (int a = 1; a < 256; a++)
		g->inv[a] = g->exp[255 - g->log[a]];
	for (int a = 0; a < 256; a++)
		for (int b = 0; b < 256; b++)
			g->mul[a][b] = (a && b) ? g->exp[g->log[a] + g->log[b]] : 0;
}

/* Check sum_j v[j]*cols[j][i] == 0 for every i < len. */
static bool vec_checks(const struct gf *g, const uint8_t *const *cols, int ncols, size_t len,
		       const uint8_t *v)
{
	uint8_t acc[512];
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < sizeof(acc) ? len - done : sizeof(acc);
		memset(acc, 0, n);
		for (int j = 0; j < ncols; j++) {
			if (!v[j])
				continue;
			const uint8_t *m = g->mul[v[j]];
			const uint8_t *s = cols[j] + done;
			for (size_t i = 0; i < n; i++)
				acc[i] ^= m[s[i]];
		}
		for (size_t i = 0; i < n; i++)
			if (acc[i])
				return false;
		done += n;
	}
	return true;
}

int gf_nullspace(const struct gf *g, const uint8_t *const *cols, int ncols, size_t len,
		 size_t stride, uint8_t *out, int maxdim)
{
	uint8_t basis[MAXC][MAXC];   /* reduced rows, pivot 1, pivot columns cleared elsewhere */
	int pivcol[MAXC];
	bool ispiv[MAXC] = { false };
	int rank = 0;
	uint8_t row[MAXC];

	if (ncols <= 0 || ncols > MAXC)
		return 0;
	if (stride == 0)
		stride = 1;
	for (size_t i = 0; i < len && rank < ncols; i += stride) {
		for (int j = 0; j < ncols; j++)
			row[j] = cols[j][i];
		for (int r = 0; r < rank; r++) {
			uint8_t f = row[pivcol[r]];
			if (!f)
				continue;
			const uint8_t *m = g->mul[f];
			for (int j = 0; j < ncols; j++)
				row[j] ^= m[basis[r][j]];
		}
		int p = -1;
		for (int j = 0; j < ncols; j++)
			if (row[j]) {
				p = j;
				break;
			}
		if (p < 0)
			continue;
		const uint8_t *m = g->mul[g->inv[row[p]]];
		for (int j = 0; j < ncols; j++)
			row[j] = m[row[j]];
		/* clear column p in the other rows */
		for (int r = 0; r < rank; r++) {
			uint8_t f = basis[r][p];
			if (!f)
				continue;
			const uint8_t *mf = g->mul[f];
			for (int j = 0; j < ncols; j++)
				basis[r][j] ^= mf[row[j]];
		}
		memcpy(basis[rank], row, (size_t)ncols);
		pivcol[rank] = p;
		ispiv[p] = true;
		rank++;
	}
	int dim = 0;
	for (int f = 0; f < ncols; f++) {
		if (ispiv[f])
			continue;
		uint8_t v[MAXC];
		memset(v, 0, sizeof(v));
		v[f] = 1;
		for (int r = 0; r < rank; r++)
			v[pivcol[r]] = basis[r][f];   /* -x = x in characteristic 2 */
		if (stride > 1 && !vec_checks(g, cols, ncols, len, v))
			return -1;
		if (dim < maxdim)
			memcpy(out + (size_t)dim * MAXC, v, (size_t)ncols);
		dim++;
	}
	return dim;
}
