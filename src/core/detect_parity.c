/* detect_parity.c - what parity says without knowing the geometry.
 *
 * Every member stores stripe s at data_offset + s*chunk, so the bytes at one
 * image offset form one row of the array on every member.  Per 512-byte row:
 *  - RAID4/5, all members present: XOR of the members is zero;
 *  - RAID6, all present: two relations (P: XOR of data and P; Q: sum of
 *    2^slot * data plus Q), so XOR of all members equals the Q block;
 *  - RAID6 with one member missing: one relation survives;
 *  - RAID5 missing one, RAID6 missing two: none (except in rows where the
 *    missing chunks happen to be zero, common in empty file systems).
 * The null space of the row's bytes (detect_gf.c) gives these relations
 * directly.  From a pilot sample of rows: the member set (images that take
 * part in relations; a foreign image never does) and a class.  Then per
 * 512-byte row cheap flags (nonzero, XOR zero, XOR equals one member) and, for
 * RAID6, the null space every 4 KiB: the solver scores each hypothesis with
 * the consistency notion of its kind (complete or missing members), and rows
 * before the data offset (foreign labels, junk) contradict parity while rows
 * after it satisfy it, which bounds the data offset.
 *
 * Rows whose null space has dimension > 2 are degenerate (fill patterns,
 * mostly equal columns) and are not used.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect_int.h"

#define PILOT_ROWS 1024
#define GF_STEP 8             /* GF rows every 8 sectors (4 KiB) for RAID6 */

static void row_cols(const struct dctx *c, const struct dwin *w, uint64_t o, uint32_t mask,
		     const uint8_t **cols, int *idx, int *ncols, uint32_t *nzmask)
{
	int n = 0;
	uint32_t nz = 0;

	for (int i = 0; i < c->nimg; i++) {
		const uint8_t *p = w->buf[i] + (o - w->off);
		if (all_zero(p, SECT))
			continue;
		nz |= 1u << i;
		if (!(mask >> i & 1))
			continue;
		cols[n] = p;
		idx[n] = i;
		n++;
	}
	*ncols = n;
	*nzmask = nz;
}

/* Every column one byte value repeated (0xff fill, patterns of logs):
 * such rows relate the columns whatever the geometry, so they are not
 * evidence. */
static bool cols_all_fill(const uint8_t *const *cols, int n)
{
	for (int j = 0; j < n; j++)
		for (unsigned b = 1; b < SECT; b++)
			if (cols[j][b] != cols[j][0])
				return false;
	return true;
}

/* Null space over the columns; retries with every byte when the strided
 * elimination found a vector that does not hold everywhere. */
static int nullspace(const struct dctx *c, const uint8_t **cols, int n, uint8_t *out, int maxdim)
{
	int d = gf_nullspace(c->gf, cols, n, SECT, 4, out, maxdim);
	if (d < 0)
		d = gf_nullspace(c->gf, cols, n, SECT, 1, out, maxdim);
	return d;
}

/* Is v (length n) a multiple of the all-ones vector on its support, with
 * every coordinate in the support? */
static bool vec_is_ones(const uint8_t *v, int n)
{
	uint8_t first = 0;
	for (int j = 0; j < n; j++) {
		if (!v[j])
			return false;
		if (!first)
			first = v[j];
		else if (v[j] != first)
			return false;
	}
	return first != 0;
}

/* Rows (window, image offset) where at least two of the images in mask
 * hold data: only these can show a relation.  An empty file system has
 * data in few rows, so the pilot samples among these rather than among all
 * rows.  Windows are sorted; rows covered by an earlier window are skipped.
 * *out: malloc'd array of row offsets and window indices (caller frees both).
 * Returns the count, or -ENOMEM. */
static int informative_rows(const struct dctx *c, uint32_t mask, uint64_t **off_o, int **win_o)
{
	uint64_t total = 0, covered = 0;
	int n = 0;

	for (int w = 0; w < c->nwin; w++)
		total += c->win[w].len / SECT;
	uint64_t *off = malloc((total + 1) * sizeof(*off));
	int *wi = malloc((total + 1) * sizeof(*wi));
	if (!off || !wi) {
		free(off);
		free(wi);
		return -ENOMEM;
	}
	for (int w = 0; w < c->nwin; w++) {
		const struct dwin *win = &c->win[w];
		for (uint64_t o = win->off; o < win->off + win->len; o += SECT) {
			if (w > 0 && o < covered)
				continue;
			int nz = 0;
			for (int i = 0; i < c->nimg && nz < 2; i++)
				if ((mask >> i & 1) && !all_zero(win->buf[i] + (o - win->off), SECT))
					nz++;
			if (nz < 2)
				continue;
			off[n] = o;
			wi[n] = w;
			n++;
		}
		if (win->off + win->len > covered)
			covered = win->off + win->len;
	}
	*off_o = off;
	*win_o = wi;
	return n;
}

/* Does the union of the supports of the d basis vectors (MAXC apart in v)
 * cover all n columns?  Parity relations involve every nonzero member
 * column of their row. */
static bool full_support(const uint8_t *v, int d, int n)
{
	for (int j = 0; j < n; j++) {
		bool any = false;
		for (int b = 0; b < d && !any; b++)
			any = v[b * MAXC + j] != 0;
		if (!any)
			return false;
	}
	return true;
}

/* Pilot: member set and class, from up to PILOT_ROWS rows spread evenly
 * over the rows where two or more images hold data.  Returns 0 or -ENOMEM. */
static int pilot(struct dctx *c)
{
	struct parity_info *p = &c->par;
	int A[MAXI] = { 0 }, Bc[MAXI] = { 0 };
	uint32_t all = (c->nimg >= 32) ? 0xffffffffu : ((1u << c->nimg) - 1);
	int inf = 0, rel = 0;
	uint64_t *ro = NULL;
	int *rw = NULL;
	int nr = informative_rows(c, all, &ro, &rw);

	if (nr < 0)
		return nr;
	int step = nr / PILOT_ROWS > 1 ? nr / PILOT_ROWS : 1;
	/* pass 1: all images, to find who takes part */
	{
		for (int x = 0; x < nr; x += step) {
			const struct dwin *win = &c->win[rw[x]];
			uint64_t o = ro[x];
			const uint8_t *cols[MAXC];
			int idx[MAXC], n;
			uint32_t nz;
			uint8_t v[3 * MAXC];
			row_cols(c, win, o, all, cols, idx, &n, &nz);
			if (n < 2 || cols_all_fill(cols, n))
				continue;
			int d = nullspace(c, cols, n, v, 3);
			if (d > 2)
				continue;   /* degenerate */
			inf++;
			if (d <= 0)
				continue;
			rel++;
			uint32_t sup = 0;
			for (int b = 0; b < d; b++)
				for (int j = 0; j < n; j++)
					if (v[b * MAXC + j])
						sup |= 1u << idx[j];
			for (int j = 0; j < n; j++) {
				A[idx[j]]++;
				if (sup >> idx[j] & 1)
					Bc[idx[j]]++;
			}
		}
	}
	p->rows_inf = inf;
	p->rows_rel = rel;
	if (detect_getenv("DETECT_DEBUG"))
		for (int i = 0; i < c->nimg; i++)
			fprintf(stderr, "pilot image %d: nonzero in %d relation rows, in the relation in %d\n", i, A[i],
				Bc[i]);
	if ((rel < 8 && !(rel >= 3 && rel * 10 >= inf * 9)) || rel * 100 < inf * 12) {
		p->cls = PC_NONE;
		p->members = all;
		p->nmembers = c->nimg;
		goto out;
	}
	uint32_t mem = 0;
	for (int i = 0; i < c->nimg; i++) {
		if (A[i] == 0 && rel >= 32) {
			/* zero in every row where the others satisfy parity: not a
			 * member (or an empty one, which reads the same as missing) */
			p->zero_excluded |= 1u << i;
			continue;
		}
		if (A[i] < 4 || Bc[i] * 10 >= A[i] * 3)
			mem |= 1u << i;   /* rarely nonzero where relations hold: no evidence against */
	}
	p->members = mem;
	p->nmembers = __builtin_popcount(mem);

	/* pass 2: over the members only, the class */
	free(ro);
	free(rw);
	ro = NULL;
	rw = NULL;
	nr = informative_rows(c, mem, &ro, &rw);
	if (nr < 0)
		return nr;
	step = nr / PILOT_ROWS > 1 ? nr / PILOT_ROWS : 1;
	{
		for (int ri = 0; ri < nr; ri += step) {
			const struct dwin *win = &c->win[rw[ri]];
			uint64_t o = ro[ri];
			const uint8_t *cols[MAXC];
			int idx[MAXC], n;
			uint32_t nz;
			uint8_t v[3 * MAXC];
			row_cols(c, win, o, mem, cols, idx, &n, &nz);
			if (n < 2 || cols_all_fill(cols, n))
				continue;
			/* XOR of the members zero: a RAID4/5 row, whatever else
			 * holds (duplicate chunks add relations) */
			uint64_t x[SECT / 8];
			memset(x, 0, sizeof(x));
			for (int j = 0; j < n; j++)
				for (unsigned q = 0; q < SECT / 8; q++) {
					uint64_t word;
					memcpy(&word, cols[j] + 8 * q, 8);
					x[q] ^= word;
				}
			if (all_zero((const uint8_t *)x, SECT)) {
				p->n_d1_ones++;
				continue;
			}
			int d = nullspace(c, cols, n, v, 3);
			if (d > 2 || (d >= 1 && !full_support(v, d, n))) {
				/* fill, or duplicate sectors relating a few columns
				 * while others hold unrelated data: not parity */
				p->n_degen++;
				continue;
			}
			if (d == 0)
				p->n_d0++;
			else if (d == 2)
				p->n_d2++;
			else if (vec_is_ones(v, n))
				p->n_d1_ones++;
			else
				p->n_d1_other++;
		}
	}
	int withrel = p->n_d1_ones + p->n_d1_other + p->n_d2;
	if (withrel < 8 && !(withrel >= 3 && withrel * 10 >= (withrel + p->n_d0) * 9)) {
		p->cls = PC_NONE;
		p->members = all;
		p->nmembers = c->nimg;
		goto out;
	}
	/* RAID6 classes need a few rows of their kind, not one stray row */
	if (p->nmembers >= 4 && p->n_d2 >= 3 && p->n_d2 * 10 >= withrel * 3)
		p->cls = p->n_d1_other >= 3 && p->n_d1_other * 10 >= withrel ? PC_R6M1 : PC_R6;
	else if (p->nmembers >= 3 && p->n_d1_other >= 3 && p->n_d1_other * 10 >= withrel)
		p->cls = PC_R6M1;
	else
		p->cls = PC_XOR;
out:
	free(ro);
	free(rw);
	return 0;
}

static int add_prow(struct parity_info *p, const struct prow *r)
{
	if (p->nrows == p->crows) {
		int nc = p->crows ? p->crows * 2 : 1024;
		struct prow *n = realloc(p->rows, (size_t)nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->rows = n;
		p->crows = nc;
	}
	p->rows[p->nrows++] = *r;
	return 0;
}

/* GF analysis of one row over the member columns, stored as a prow when
 * store.  Returns 1 if a relation holds, 0 if none, 2 degenerate, -errno. */
static int gf_row(struct dctx *c, const struct dwin *win, uint64_t o, bool store)
{
	struct parity_info *p = &c->par;
	const uint8_t *cols[MAXC];
	int idx[MAXC], n;
	uint32_t nz;
	uint8_t v[3 * MAXC];
	struct prow r;

	row_cols(c, win, o, p->members, cols, &idx[0], &n, &nz);
	memset(&r, 0, sizeof(r));
	r.off = o;
	r.nz = nz;
	if (n < 2) {
		r.dim = 0;
	} else if (cols_all_fill(cols, n)) {
		r.dim = 3;   /* degenerate */
	} else {
		int d = nullspace(c, cols, n, v, 3);
		r.dim = (int8_t)(d > 2 ? 3 : d);
		for (int b = 0; b < r.dim && b < 2; b++)
			for (int j = 0; j < n; j++)
				r.v[b][idx[j]] = v[b * MAXC + j];
	}
	if (store && add_prow(p, &r) < 0)
		return -ENOMEM;
	return r.dim == 3 ? 2 : r.dim >= 1 ? 1 : 0;
}

static int cmp_prow(const void *a, const void *b)
{
	const struct prow *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* consistency of one sector row under a notion: 1 consistent, -1
 * contradicting, 0 no evidence */
static int notion_of(uint8_t f, int notion)
{
	if (!(f & SF_NZ))
		return 0;
	switch (notion) {
	case PN_R5:
		return (f & SF_X0) ? 1 : -1;
	case PN_R5M:
		return (f & SF_X0) ? 1 : 0;
	case PN_R6:
		return (f & (SF_X0 | SF_XQ)) ? 1 : -1;
	case PN_R6M1:
		if (f & SF_X0)
			return 1;
		if (!(f & SF_GF))
			return 0;
		return (f & SF_GREL) ? 1 : -1;
	}
	return 0;
}

int parity_analyse(struct dctx *c)
{
	struct parity_info *p = &c->par;
	int rc;

	rc = pilot(c);
	if (rc)
		return rc;
	uint32_t mem = p->members;
	bool r6 = p->cls == PC_R6 || p->cls == PC_R6M1;
	/* sparse content (empty file systems): analyse every row that has data
	 * on two members or more, not one in GF_STEP */
	bool gf_all = false;
	if (r6) {
		uint64_t *ro;
		int *rw;
		int ninf = informative_rows(c, mem, &ro, &rw);
		if (ninf < 0)
			return ninf;
		free(ro);
		free(rw);
		gf_all = ninf <= 8192;
	}
	uint64_t total = 0;
	for (int w = 0; w < c->nwin; w++)
		total += c->win[w].len / SECT;
	p->sr_off = malloc(total * sizeof(uint64_t));
	p->sr_fl = malloc(total);
	if (!p->sr_off || !p->sr_fl)
		return -ENOMEM;
	int n = 0;
	uint64_t covered = 0;   /* windows are sorted by offset; skip overlaps */
	for (int w = 0; w < c->nwin; w++) {
		const struct dwin *win = &c->win[w];
		uint64_t nrow = win->len / SECT;
		for (uint64_t r = 0; r < nrow; r++) {
			uint64_t o = win->off + r * SECT;
			if (n > 0 && o < covered)
				continue;
			uint64_t x[SECT / 8];
			bool any = false;
			memset(x, 0, sizeof(x));
			for (int i = 0; i < c->nimg; i++) {
				if (!(mem >> i & 1))
					continue;
				const uint64_t *s = (const uint64_t *)(win->buf[i] + (o - win->off));
				for (unsigned k = 0; k < SECT / 8; k++) {
					x[k] ^= s[k];
					any = any || s[k];
				}
			}
			uint8_t f = 0;
			if (any) {
				f |= SF_NZ;
				if (all_zero((const uint8_t *)x, SECT))
					f |= SF_X0;
				else
					for (int i = 0; i < c->nimg; i++)
						if ((mem >> i & 1) && memcmp(win->buf[i] + (o - win->off), x, SECT) == 0) {
							f |= SF_XQ;
							break;
						}
				if (r6 && (gf_all || r % GF_STEP == 0)) {
					rc = gf_row(c, win, o, true);
					if (rc < 0)
						return rc;
					if (rc != 2)
						f |= SF_GF | (rc == 1 ? SF_GREL : 0);
				}
			}
			p->sr_off[n] = o;
			p->sr_fl[n] = f;
			n++;
		}
		if (win->off + win->len > covered)
			covered = win->off + win->len;
	}
	p->nsr = n;
	/* RAID6 missing one: refine the GF flags around changes of consistency
	 * (the data offset is found to the sector) */
	if (r6) {
		int last = -1;
		for (int i = 0; i < n; i++) {
			if (!(p->sr_fl[i] & SF_GF))
				continue;
			if (last >= 0 && ((p->sr_fl[last] ^ p->sr_fl[i]) & SF_GREL) && i - last <= GF_STEP) {
				for (int q = last + 1; q < i; q++) {
					if (!(p->sr_fl[q] & SF_NZ))
						continue;
					for (int w = 0; w < c->nwin; w++) {
						const struct dwin *win = &c->win[w];
						if (p->sr_off[q] >= win->off && p->sr_off[q] < win->off + win->len) {
							rc = gf_row(c, win, p->sr_off[q], false);
							if (rc < 0)
								return rc;
							if (rc != 2)
								p->sr_fl[q] |= SF_GF | (rc == 1 ? SF_GREL : 0);
							break;
						}
					}
				}
			}
			last = i;
		}
		qsort(p->rows, (size_t)p->nrows, sizeof(*p->rows), cmp_prow);
	}
	p->first_nz = UINT64_MAX;
	for (int i = 0; i < n; i++)
		if (p->sr_fl[i] & SF_NZ) {
			p->first_nz = p->sr_off[i];
			break;
		}
	for (int t = 0; t < PN_COUNT; t++) {
		p->inc_after[t] = malloc((size_t)(n + 1) * sizeof(int));
		p->cons_before[t] = malloc((size_t)(n + 1) * sizeof(int));
		if (!p->inc_after[t] || !p->cons_before[t])
			return -ENOMEM;
		p->cons_before[t][0] = 0;
		for (int i = 0; i < n; i++)
			p->cons_before[t][i + 1] = p->cons_before[t][i] + (notion_of(p->sr_fl[i], t) > 0);
		p->inc_after[t][n] = 0;
		for (int i = n - 1; i >= 0; i--)
			p->inc_after[t][i] = p->inc_after[t][i + 1] + (notion_of(p->sr_fl[i], t) < 0);
		p->inc_total[t] = p->inc_after[t][0];
		/* d_lo: end of the last contradicting row before the first run of 64
		 * consistent nonzero rows (later contradictions are damage or
		 * missing members, not a prefix) */
		int run = 0;
		uint64_t last_inc_end = 0;
		for (int i = 0; i < n; i++) {
			int v = notion_of(p->sr_fl[i], t);
			if (v < 0) {
				run = 0;
				last_inc_end = p->sr_off[i] + SECT;
			} else if (v > 0 && ++run >= 64) {
				break;
			}
		}
		p->d_lo[t] = last_inc_end;
	}
	return 0;
}

void parity_rows_around(const struct parity_info *p, int notion, uint64_t D, int *inc_after,
			int *cons_before)
{
	int lo = 0, hi = p->nsr;

	if (notion < 0 || notion >= PN_COUNT || !p->inc_after[notion]) {
		*inc_after = *cons_before = 0;
		return;
	}
	while (lo < hi) {   /* first row with offset >= D */
		int mid = (lo + hi) / 2;
		if (p->sr_off[mid] < D)
			lo = mid + 1;
		else
			hi = mid;
	}
	*inc_after = p->inc_after[notion][lo];
	*cons_before = p->cons_before[notion][lo];
}

void parity_free(struct parity_info *p)
{
	free(p->rows);
	free(p->sr_off);
	free(p->sr_fl);
	for (int t = 0; t < PN_COUNT; t++) {
		free(p->inc_after[t]);
		free(p->cons_before[t]);
	}
	memset(p, 0, sizeof(*p));
}
