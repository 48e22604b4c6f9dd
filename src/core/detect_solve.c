/* detect_solve.c - hypotheses, role assignment, scoring and the verdict.
 *
 * A hypothesis is (level, raid_disks n, layout L, chunk C, data offset D,
 * role order pi).  Evidence, all in bits (log2 likelihood ratios, roughly):
 *  anchors  each anchor (detect_fs.c) found at image offset o on image j
 *           claims an offset in its file system; under (C, D) it sits in
 *           stripe s = (o-D)/C at chunk offset (o-D)%C, so it is array chunk
 *           (s, d) for one data index d, and the layout puts (s, d) on role
 *           r: pi(r) must be j.  Explained anchors count +w, anchors that
 *           contradict -w/2, anchors on a P/Q chunk (parity copies) 0.
 *  parity   RAID6: every analysed row's relations (detect_parity.c) must
 *           be the ones the geometry predicts (P and Q over the roles with
 *           md's Q slot order, missing roles eliminated): +1 per row, -1 if not.
 *  offset   rows that contradict parity at or past D, parity-consistent
 *           nonzero rows before D: each costs.
 *  seams    content continuity across every chunk boundary the geometry
 *           puts in the sample (detect_seam.c), as excess over the average
 *           junction.
 *  chunk    member-internal discontinuity at multiples of C.
 * Search: for every (level, n, C, D) the anchors and RAID6 rows give votes
 * "role r is image j" per layout; the assignment (Hungarian) gives pi.  The
 * best hypotheses, and all layouts of the most promising (C, D), are then
 * refined with the seams by a beam search over pi, and every hypothesis is
 * scored in full.  The verdict compares the best with the best alternative
 * that would read different array content.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect_int.h"
#include "parity.h"

#define NCHUNK 10
static const uint32_t chunk_sizes[NCHUNK] = {
	4u << 10, 8u << 10, 16u << 10, 32u << 10, 64u << 10, 128u << 10, 256u << 10, 512u << 10,
	1u << 20, 2u << 20,
};

#define MAXDC 24            /* data offset candidates */
/* verdict thresholds: margin (bits) of the best over the best alternative
 * that reads different content; see FACTS.md for how they were set */
#define T_CERTAIN 40.0
#define T_LIKELY 12.0
#define SEAM_ROWS 512       /* stripe rows used for seams */
#define BEAM 384
#define KEEP 256            /* hypotheses kept */
#define MISS_COL (-1)
#define X0_MAX 1024         /* XOR-zero rows checked per RAID6 hypothesis missing two */

/* ---------------- RAID6 row interpretations ---------------- */

enum { IK_FULL, IK_ONES, IK_MISS_P, IK_MISS_DATA };

struct interp {
	int8_t kind;
	int8_t p, q;               /* images, -1 none / unknown */
	int8_t miss_slot;          /* IK_MISS_DATA */
	int8_t slot[MAXI];         /* per image: data slot, -1 not data / unknown */
};

struct rowint {
	int n;                     /* interpretations, 0 = none usable */
	struct interp in[3];
};

/* ---------------- hypotheses ---------------- */

struct hyp {
	int level, layout, n, k;
	uint32_t C;
	uint64_t D;
	int nmiss;                 /* missing roles */
	bool use_virtual;          /* the missing column is the virtual member */
	int col_of_role[MAXD];     /* role -> image (>= 0), VIRT (nimg) or MISS_COL */
	double e_anchor, e_parity, e_doff, e_seam, e_chunk, prior, ev, score;
	int anc_ok, anc_bad, anc_par, par_ok, par_bad, seams;
	float anc_okw;
	int pinned;                /* roles with a vote */
	bool refined;
};

/* Seams for one chunk size C and data offset residue (D mod C).
 * Every hypothesis is scored on the same cut points: each 4 KiB step x
 * (relative to D) inside the region [RS, RS + SEAM_REGION) of every member.
 * Where the hypothesis puts a chunk boundary at x, the array continues on
 * another member: the score of that junction (t0: successor in the same
 * row, t1: in the next row); elsewhere the member continues itself (in: the
 * sum over a chunk's interior cut points).  Scores are gram hits minus the
 * mean inside members, 0 where nothing can be said (zeros, fill).  Rows are
 * numbered from O (<= RS, O = D mod C); a hypothesis numbers row r as
 * stripe (O-D)/C + r, possibly negative: layouts are periodic. */
struct smat {
	uint32_t C;
	uint64_t res;
	int64_t O;                  /* may be negative */
	int nrows;                 /* rows 0..nrows-1 */
	int ncol;                  /* image columns incl. the virtual one */
	float *t0, *t1;            /* [r][a][b] */
	float *in;                 /* [r][a] */
	float *avg_in, *avg_t;     /* [r]: means over present columns, what a missing
	                              column is credited (so that leaving a chunk out
	                              neither gains nor loses) */
	bool any;
};

struct solver {
	struct dctx *c;
	struct rowint *ri;         /* per par.rows */
	int ncolimg;               /* member images */
	int colimg[MAXI];
	uint64_t dc[MAXDC];
	int ndc;
	struct hyp *keep;          /* stage 1 (votes only) */
	int nkeep;
	struct hyp *keepR;         /* refined with seams: these compete for the answer */
	int nkeepR;
	struct smat sm[64];
	int nsm;
	bool have_tar;
	/* chunk contrast per (C index, D index) */
	double chunk_e[NCHUNK][MAXDC];
	/* continuity grid over the seam region: cut point i is image offset
	 * RS + i*512; ps[a][i] = sum of (cont - mu) over cut points < i */
	uint64_t RS, RE;
	int ncut;
	double *ps[MAXC];
	bool debug_bad;
	int *gidx;                 /* anchor indices grouped: gidx[gstart[g] .. gstart[g+1]) */
	uint8_t *copies;           /* per anchor: images holding the same structure at the same offset */
	uint64_t *x0;              /* offsets of nonzero rows whose member XOR is zero (<= X0_MAX) */
	int nx0;
	struct prop_row *pr;       /* rows where two members hold data, one a GF multiple (not 1) of the other */
	int npr;
	int gstart[MAXGRP + 1];
};

/* A row with exactly two nonzero member sectors, b = g^e * a with e != 0:
 * in RAID6 a data chunk (slot e) and its Q copy, the row's other data zero;
 * in RAID4/5 a coincidence no content makes. */
struct prop_row {
	uint64_t off;
	int8_t a, b;               /* images: data, Q */
	uint8_t e;                 /* log of the factor */
};

/* ---------------- small helpers ---------------- */




static void geom_of(const struct hyp *h, struct layout_geom *g)
{
	g->level = h->level;
	g->layout = h->layout;
	g->raid_disks = h->n;
	g->chunk_bytes = h->C;
}

/* ---------------- interpretations of RAID6 rows ---------------- */

static bool slots_ok(const int8_t *slot, int nimg, int n, int extra)
{
	uint64_t seen[4] = { 0 };
	if (extra >= 0)
		seen[extra >> 6] |= 1ull << (extra & 63);
	for (int j = 0; j < nimg; j++) {
		if (slot[j] < 0)
			continue;
		if (slot[j] >= n)
			return false;
		if (seen[slot[j] >> 6] >> (slot[j] & 63) & 1)
			return false;
		seen[slot[j] >> 6] |= 1ull << (slot[j] & 63);
	}
	return true;
}

/* Do the coefficients w[j] of the images in mem (but skip) all equal one
 * nonzero value?  *first gets it (0 when mem holds no other image). */
static bool all_same_nonzero(const uint8_t *w, uint32_t mem, int nimg, int skip, uint8_t *first)
{
	*first = 0;
	for (int j = 0; j < nimg; j++) {
		if (!(mem >> j & 1) || j == skip)
			continue;
		if (!w[j] || (*first && w[j] != *first))
			return false;
		*first = w[j];
	}
	return true;
}

/* An interpretation of kind with P at p, Q at q (-1: none) and the data
 * slot of every other image in mem: log2(nq * v[j] ^ gm).  False when an
 * image's coefficient is zero or the slots collide (miss_slot counts as
 * taken). */
static bool interp_fill(struct interp *in, const struct gf *g, int kind, int p, int q, int miss_slot,
			const uint8_t *v, uint8_t nq, uint8_t gm, uint32_t mem, int nimg, int n)
{
	memset(in, 0, sizeof(*in));
	in->kind = kind;
	in->p = (int8_t)p;
	in->q = (int8_t)q;
	in->miss_slot = (int8_t)miss_slot;
	for (int j = 0; j < nimg; j++) {
		in->slot[j] = -1;
		if (!(mem >> j & 1) || j == p || j == q)
			continue;
		uint8_t x = g->mul[nq][v[j]] ^ gm;
		if (!x)
			return false;
		in->slot[j] = (int8_t)(g->log[x] < 127 ? g->log[x] : 127);
	}
	return slots_ok(in->slot, nimg, n, miss_slot);
}

static void interpret_row(const struct dctx *c, const struct prow *r, int n, struct rowint *out)
{
	const struct gf *g = c->gf;
	uint32_t mem = c->par.members & r->nz;
	int nimg = c->nimg;

	out->n = 0;
	if (r->dim == 2) {
		for (int q = 0; q < nimg && out->n < 3; q++) {
			if (!(mem >> q & 1))
				continue;
			uint8_t a = r->v[0][q], b = r->v[1][q];
			if (!a && !b)
				continue;
			uint8_t w[MAXI], first;
			for (int j = 0; j < nimg; j++)
				w[j] = g->mul[b][r->v[0][j]] ^ g->mul[a][r->v[1][j]];
			if (!all_same_nonzero(w, mem, nimg, q, &first) || !first)
				continue;
			/* q is Q; find P */
			for (int p = 0; p < nimg && out->n < 3; p++) {
				if (p == q || !(mem >> p & 1))
					continue;
				uint8_t pa = r->v[0][p], pb = r->v[1][p];
				uint8_t u[MAXI];
				for (int j = 0; j < nimg; j++)
					u[j] = g->mul[pb][r->v[0][j]] ^ g->mul[pa][r->v[1][j]];
				if (!u[q])
					continue;
				uint8_t nq = g->inv[u[q]];
				struct interp in;
				if (interp_fill(&in, g, IK_FULL, p, q, -1, u, nq, 0, mem, nimg, n))
					out->in[out->n++] = in;
			}
		}
		return;
	}
	if (r->dim != 1)
		return;
	const uint8_t *v = r->v[0];
	uint8_t first;
	if (all_same_nonzero(v, mem, nimg, -1, &first)) {
		struct interp in;
		memset(&in, 0xff, sizeof(in));
		in.kind = IK_ONES;
		out->in[out->n++] = in;
		return;
	}
	for (int q = 0; q < nimg && out->n < 3; q++) {
		if (!(mem >> q & 1) || !v[q])
			continue;
		uint8_t nq = g->inv[v[q]];
		/* missing P: v is the Q relation */
		struct interp in;
		if (interp_fill(&in, g, IK_MISS_P, -1, q, -1, v, nq, 0, mem, nimg, n))
			out->in[out->n++] = in;
		/* missing data slot sm: P coefficient 2^sm, data 2^s + 2^sm */
		for (int p = 0; p < nimg && out->n < 3; p++) {
			if (p == q || !(mem >> p & 1) || !v[p])
				continue;
			uint8_t gm = g->mul[nq][v[p]];
			int sm = g->log[gm];
			if (sm >= n)
				continue;
			if (interp_fill(&in, g, IK_MISS_DATA, p, q, sm, v, nq, gm, mem, nimg, n))
				out->in[out->n++] = in;
		}
	}
}

/* For tests: the unique interpretation of a row as RAID6 (P, Q and the
 * slot of every other image), or -1 when there is none or several. */
int detect_row_interpret(const struct dctx *c, const struct prow *r, int n, int *p, int *q, int *slot)
{
	struct rowint ri;
	interpret_row(c, r, n, &ri);
	if (ri.n != 1)
		return -1;
	*p = ri.in[0].p;
	*q = ri.in[0].q;
	for (int j = 0; j < c->nimg; j++)
		slot[j] = ri.in[0].slot[j];
	return ri.in[0].kind;
}

/* Predicted relations of row r under h hold?  Returns 1 yes, 0 no, -1 row unusable. */
static int row_check(const struct solver *S, const struct hyp *h, const struct prow *r)
{
	const struct dctx *c = S->c;
	const struct gf *g = c->gf;
	struct layout_geom geo;
	struct stripe_map m;
	uint32_t mem = c->par.members & r->nz;

	if (r->dim < 0 || r->dim > 2)
		return -1;
	uint64_t s = (r->off - h->D) / h->C;
	geom_of(h, &geo);
	layout_map_stripe(&geo, s, &m);
	/* predicted P and Q relation vectors over images; the coefficient of a
	 * missing role is tracked apart */
	uint8_t P[MAXI] = { 0 }, Q[MAXI] = { 0 };
	int mp = 0;   /* coefficient of the missing role(s): (pcoef, qcoef) */
	uint8_t mpc[2] = { 0 }, mqc[2] = { 0 };
	for (int role = 0; role < h->n; role++) {
		int col = h->col_of_role[role];
		uint8_t pc, qc;
		if (role == m.p_disk) {
			pc = 1;
			qc = 0;
		} else if (role == m.q_disk) {
			pc = 0;
			qc = 1;
		} else {
			pc = 1;
			qc = g->exp[m.disk_slot[role] % 255];
		}
		if (col < 0 || col >= c->nimg) {
			if (mp < 2) {
				mpc[mp] = pc;
				mqc[mp] = qc;
			}
			mp++;
			continue;
		}
		P[col] = pc;
		Q[col] = qc;
	}
	/* surviving relations: combinations a*P + b*Q vanishing on missing roles */
	uint8_t rel[2][MAXI];
	int nrel = 0;
	if (mp == 0) {
		memcpy(rel[0], P, sizeof(P));
		memcpy(rel[1], Q, sizeof(Q));
		nrel = 2;
	} else if (mp == 1) {
		/* qc*P + pc*Q has zero at the missing role (char 2) */
		for (int j = 0; j < c->nimg; j++)
			rel[0][j] = g->mul[mqc[0]][P[j]] ^ g->mul[mpc[0]][Q[j]];
		nrel = 1;
	} else {
		return -1;
	}
	/* each predicted relation, restricted to nonzero member columns, must lie
	 * in the observed span */
	for (int t = 0; t < nrel; t++) {
		uint8_t x[MAXI];
		bool anyx = false;
		for (int j = 0; j < c->nimg; j++) {
			x[j] = (mem >> j & 1) ? rel[t][j] : 0;
			anyx = anyx || x[j];
		}
		if (!anyx)
			continue;
		if (r->dim == 0)
			return 0;
		/* solve x = a*v0 + b*v1 using the first pivot-like coordinates */
		if (r->dim == 1) {
			int j0 = -1;
			for (int j = 0; j < c->nimg; j++)
				if (r->v[0][j]) {
					j0 = j;
					break;
				}
			if (j0 < 0)
				return 0;
			uint8_t a = g->mul[x[j0]][g->inv[r->v[0][j0]]];
			for (int j = 0; j < c->nimg; j++)
				if ((g->mul[a][r->v[0][j]]) != x[j])
					return 0;
		} else {
			/* two coordinates where (v0, v1) is invertible */
			int j0 = -1, j1 = -1;
			uint8_t det = 0;
			for (int a = 0; a < c->nimg && j1 < 0; a++)
				for (int b = a + 1; b < c->nimg; b++) {
					uint8_t d = g->mul[r->v[0][a]][r->v[1][b]] ^ g->mul[r->v[0][b]][r->v[1][a]];
					if (d) {
						j0 = a;
						j1 = b;
						det = d;
						break;
					}
				}
			if (j0 < 0)
				return -1;
			uint8_t di = g->inv[det];
			/* [v0 v1] [a b]^T = x at j0, j1 */
			uint8_t aa = g->mul[di][g->mul[x[j0]][r->v[1][j1]] ^ g->mul[x[j1]][r->v[1][j0]]];
			uint8_t bb = g->mul[di][g->mul[r->v[0][j0]][x[j1]] ^ g->mul[r->v[0][j1]][x[j0]]];
			for (int j = 0; j < c->nimg; j++)
				if ((g->mul[aa][r->v[0][j]] ^ g->mul[bb][r->v[1][j]]) != x[j])
					return 0;
		}
	}
	return 1;
}

/* ---------------- data offset candidates ---------------- */

static void dc_add(struct solver *S, uint64_t d)
{
	const struct dctx *c = S->c;
	if (d % SECT || d >= c->minsize)
		return;
	if (c->h.data_offset >= 0 && d != (uint64_t)c->h.data_offset)
		return;
	for (int i = 0; i < S->ndc; i++)
		if (S->dc[i] == d)
			return;
	if (S->ndc < MAXDC)
		S->dc[S->ndc++] = d;
}

static int notion_for(int level, int nmiss)
{
	if (level != 6)
		return nmiss ? PN_R5M : PN_R5;
	return nmiss == 0 ? PN_R6 : nmiss == 1 ? PN_R6M1 : PN_NONE;
}

static int class_notion(int cls)
{
	switch (cls) {
	case PC_XOR: return PN_R5;
	case PC_R6: return PN_R6;
	case PC_R6M1: return PN_R6M1;
	}
	return PN_NONE;
}

/* D-evidence: contradicting rows at/after D, consistent nonzero rows before D */
static double doff_evidence(const struct dctx *c, int notion, uint64_t D, int *inc, int *cons)
{
	*inc = *cons = 0;
	if (notion == PN_NONE || c->par.nsr == 0)
		return 0;
	parity_rows_around(&c->par, notion, D, inc, cons);
	double a = *inc > 256 ? 256 : *inc, b = *cons > 2048 ? 2048 : *cons;
	return -2.0 * a - 2.0 * b;
}

/* An array seldom starts with a long run of zeros (file systems, labels
 * and archives put something in their first sectors): up to 12 bits
 * against a data offset followed by 1 MiB or more of zeros on every image. */
static double lead_evidence(const struct dctx *c, uint64_t D)
{
	const struct parity_info *p = &c->par;
	int lo = 0, hi = p->nsr;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (p->sr_off[mid] < D)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t lead = 0;
	for (int i = lo; i < p->nsr; i++) {
		if (p->sr_fl[i] & SF_NZ)
			break;
		lead = p->sr_off[i] + SECT - D;
		if (lead >= (1u << 20))
			break;
	}
	return -12.0 * (double)lead / (double)(1u << 20);
}

static void gen_dcands(struct solver *S)
{
	struct dctx *c = S->c;
	const struct parity_info *p = &c->par;

	if (c->h.data_offset >= 0) {
		dc_add(S, (uint64_t)c->h.data_offset);
		return;
	}
	/* from anchors that say "I am at array offset < 4 KiB" (base 0) */
	for (int i = 0; i < c->nanc; i++) {
		const struct anchor *a = &c->anc[i];
		if (a->img >= c->nimg)
			continue;
		if (a->rel[0] >= 0 && a->rel[0] < 4096 && a->off >= (uint64_t)a->rel[0])
			dc_add(S, a->off - (uint64_t)a->rel[0]);
	}
	/* first tar header of each image */
	if (S->have_tar) {
		for (int img = 0; img < c->nimg; img++) {
			int found = 0;
			for (int w = 0; w < c->nwin && !found; w++)
				for (uint64_t o = c->win[w].off; o + SECT <= c->win[w].off + c->win[w].len; o += SECT) {
					uint64_t dl;
					const uint8_t *h = c->win[w].buf[img] + (o - c->win[w].off);
					if (h[257] == 'u' && tar_header_valid(h, &dl)) {
						dc_add(S, o);
						found = 1;
						break;
					}
				}
		}
	}
	dc_add(S, 0);
	for (int t = 0; t < PN_COUNT; t++)
		if (p->d_lo[t])
			dc_add(S, p->d_lo[t]);
	if (p->first_nz != UINT64_MAX) {
		uint64_t z = p->first_nz;
		dc_add(S, z);
		if (z >= 1024)
			dc_add(S, z - 1024);
		dc_add(S, z & ~4095ull);
		dc_add(S, z & ~65535ull);
		dc_add(S, z & ~((1ull << 20) - 1));
	}
	for (int i = 0; i < c->npart; i++) {
		dc_add(S, c->part[i]);
		dc_add(S, c->part[i] + (1u << 20));
	}
	static const uint64_t std[] = {
		63 * 512, 2048 * 512, 2u << 20, 272 * 512, 8 * 512, 3u << 20, 4u << 20, 5u << 20,
		9u << 20, 17u << 20, 33u << 20, 65u << 20, 128u << 20, 129u << 20, 8u << 20, 16u << 20,
	};
	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++)
		dc_add(S, std[i]);
	/* drop offsets the sample cannot see */
	int keep = 0;
	for (int i = 0; i < S->ndc; i++)
		if (sp(c, 0, S->dc[i], SECT))
			S->dc[keep++] = S->dc[i];
	S->ndc = keep;
}

/* ---------------- anchors under (C, D, k) ---------------- */

struct triple {
	uint64_t s;
	int d;
	int col;        /* image or VIRT */
	float w;
	int anc;        /* anchor index, -1 for chase results */
	uint32_t woff;  /* offset in chunk */
	int16_t grp;    /* anchor group, -1 for chase results */
	int8_t bi;      /* which of the group's candidate bases */
};

#define MAXBASE 4
struct tlist {
	struct triple *t;
	int n, cap;
	int nbase[MAXGRP];              /* candidate bases kept per group */
	int64_t base[MAXGRP][MAXBASE];
	double dof[MAXGRP][MAXBASE];    /* bits spent on a fitted base */
};

static int tl_add(struct tlist *L, const struct triple *t)
{
	if (L->n == L->cap) {
		int nc = L->cap ? L->cap * 2 : 256;
		struct triple *x = realloc(L->t, (size_t)nc * sizeof(*x));
		if (!x)
			return -ENOMEM;
		L->t = x;
		L->cap = nc;
	}
	L->t[L->n++] = *t;
	return 0;
}

static bool col_allowed(const struct dctx *c, int img, bool use_virtual)
{
	if (img == c->nimg)
		return use_virtual;
	return img >= 0 && img < c->nimg && (c->par.members >> img & 1);
}

/* For anchor a at base b: the data index d if it fits (C, D, k), else -1. */
static int anchor_fit(const struct anchor *a, int64_t b, uint32_t C, uint64_t D, int k)
{
	uint64_t m = a->off - D;
	uint64_t s = m / C, w = m % C;
	for (int i = 0; i < a->nrel; i++) {
		int64_t arr = b + a->rel[i];
		if (arr < 0)
			continue;
		uint64_t ci = (uint64_t)arr / C;
		if ((uint64_t)arr % C == w && ci / (uint64_t)k == s)
			return (int)(ci % (uint64_t)k);
	}
	return -1;
}

static int anchors_map(struct solver *S, uint32_t C, uint64_t D, int k, bool use_virtual,
		       struct tlist *L)
{
	struct dctx *c = S->c;
	L->n = 0;
	for (int g = 0; g < c->ngrp; g++) {
		const struct agroup *G = &c->grp[g];
		const int *ga = S->gidx + S->gstart[g];
		int gn = S->gstart[g + 1] - S->gstart[g];
		L->nbase[g] = 0;
		/* candidate bases: 0, partition starts, and those implied by the
		 * group's first anchors */
		int64_t bases[64];
		bool prior[64];
		int nb = 0;
		bases[nb] = 0;
		prior[nb++] = true;
		if (!G->base_fixed) {
			for (int i = 0; i < c->npart && nb < 24; i++) {
				bases[nb] = (int64_t)c->part[i];
				prior[nb++] = true;
			}
			int used = 0;
			for (int ii = 0; ii < gn && used < 4 && nb < 60; ii++) {
				const struct anchor *a = &c->anc[ga[ii]];
				if (a->off < D || !col_allowed(c, a->img, use_virtual))
					continue;
				used++;
				uint64_t m = a->off - D;
				uint64_t s = m / C, w = m % C;
				for (int d = 0; d < k && nb < 60; d++) {
					int64_t arr = (int64_t)((s * (uint64_t)k + (uint64_t)d) * C + w);
					int64_t b = arr - a->rel[0];
					if (b > 0 && b % SECT == 0) {
						bases[nb] = b;
						prior[nb++] = false;
					}
				}
			}
		}
		/* score each distinct base by the anchors it places */
		double eff[64], mxw[64];
		int cnt[64];
		double best = 0;
		for (int bi = 0; bi < nb; bi++) {
			eff[bi] = -1;
			cnt[bi] = 0;
			bool dup = false;
			for (int bj = 0; bj < bi; bj++)
				if (bases[bj] == bases[bi]) {
					dup = true;
					prior[bj] = prior[bj] || prior[bi];
				}
			if (dup)
				continue;
			double sw = 0, mx = 0;
			for (int ii = 0; ii < gn; ii++) {
				const struct anchor *a = &c->anc[ga[ii]];
				if (a->off < D || !col_allowed(c, a->img, use_virtual))
					continue;
				if (anchor_fit(a, bases[bi], C, D, k) >= 0) {
					sw += a->w;
					cnt[bi]++;
					if (a->w > mx)
						mx = a->w;
				}
			}
			mxw[bi] = mx;
			eff[bi] = sw;
		}
		for (int bi = 0; bi < nb; bi++)
			if (cnt[bi] && eff[bi] - (prior[bi] ? 0 : mxw[bi]) > best)
				best = eff[bi] - (prior[bi] ? 0 : mxw[bi]);
		if (best <= 0)
			continue;
		/* keep the bases within half of the best: the role order decides */
		for (int pass = 0; pass < 2 && L->nbase[g] < MAXBASE; pass++)
			for (int bi = 0; bi < nb && L->nbase[g] < MAXBASE; bi++) {
				if (!cnt[bi])
					continue;
				double e = eff[bi] - (prior[bi] ? 0 : mxw[bi]);
				bool top = e >= best - 1e-9;
				if ((pass == 0) != top || e < best * 0.5)
					continue;
				int slot = L->nbase[g]++;
				L->base[g][slot] = bases[bi];
				L->dof[g][slot] = prior[bi] ? 0 : mxw[bi];
				for (int ii = 0; ii < gn; ii++) {
					const struct anchor *a = &c->anc[ga[ii]];
					if (a->off < D || !col_allowed(c, a->img, use_virtual))
						continue;
					int d = anchor_fit(a, bases[bi], C, D, k);
					if (d < 0)
						continue;
					struct triple t = { (a->off - D) / C, d, a->img, a->w, ga[ii],
							    (uint32_t)((a->off - D) % C), (int16_t)g, (int8_t)slot };
					if (tl_add(L, &t))
						return -ENOMEM;
				}
			}
	}
	return 0;
}

/* Image offset of array offset a under (C, D, k) for the tar chase; the
 * data index d is put in *d. */
static uint64_t tar_pos(uint64_t a, uint32_t C, uint64_t D, int k, uint64_t *s, int *d)
{
	uint64_t ci = a / C;
	*s = ci / (uint64_t)k;
	*d = (int)(ci % (uint64_t)k);
	return D + *s * C + a % C;
}

/* Columns holding a valid tar header at image offset o: bit mask (bit
 * ncols-1 at most); *dl gets the data length of the last one found. */
static uint64_t tar_cols_at(const struct dctx *c, uint64_t o, bool use_virtual, uint64_t *dls, bool *seen)
{
	uint64_t mask = 0;
	int ncols = c->nimg + (use_virtual ? 1 : 0);
	*seen = false;
	for (int col = 0; col < ncols; col++) {
		if (!col_allowed(c, col, use_virtual))
			continue;
		const uint8_t *h = sp(c, col, o, SECT);
		if (!h)
			continue;
		*seen = true;
		uint64_t dl;
		if (h[257] == 'u' && tar_header_valid(h, &dl)) {
			mask |= 1ull << col;
			dls[col] = dl;
		}
	}
	return mask;
}

/* Of the columns in mask (headers at image offset o), the one whose name
 * follows prev's (the previous header's) most closely: the smallest name
 * greater than prev's (archives made from sorted lists), else the one
 * sharing the longest prefix with it.  -1 if that does not decide. */
static int tar_pick_by_name(const struct dctx *c, uint64_t mask, uint64_t o, const uint8_t *prev)
{
	int bestl = -1, nbest = 0, found = -1, succ = -1;
	const uint8_t *succ_h = NULL;
	for (int col = 0; col <= c->nimg; col++) {
		if (!(mask >> col & 1))
			continue;
		const uint8_t *h = sp(c, col, o, SECT);
		if (!h || !prev)
			continue;
		if (strncmp((const char *)h, (const char *)prev, 100) > 0 &&
		    (!succ_h || strncmp((const char *)h, (const char *)succ_h, 100) < 0)) {
			succ = col;
			succ_h = h;
		}
		int l = 0;
		while (l < 100 && h[l] && h[l] == prev[l])
			l++;
		if (l > bestl) {
			bestl = l;
			nbest = 1;
			found = col;
		} else if (l == bestl) {
			nbest++;
		}
	}
	if (succ >= 0)
		return succ;
	return nbest == 1 ? found : -1;
}

/* How many headers follow the one at array offset a in column col (at
 * most max), choosing among several headers at one place by name. */
static int tar_follow(const struct dctx *c, uint32_t C, uint64_t D, int k, bool use_virtual, uint64_t a, int col,
		      int max)
{
	uint64_t s, dls[MAXC + 1];
	int d, n = 0;
	bool seen;
	uint64_t o = tar_pos(a, C, D, k, &s, &d);
	const uint8_t *prev = sp(c, col, o, SECT);
	uint64_t dl = 0;
	if (!prev || !tar_header_valid(prev, &dl))
		return 0;
	while (n < max) {
		a += SECT + dl;
		o = tar_pos(a, C, D, k, &s, &d);
		uint64_t mask = tar_cols_at(c, o, use_virtual, dls, &seen);
		if (!seen)
			return max;   /* past the sample: no evidence against */
		if (!mask)
			break;
		col = (mask & (mask - 1)) ? tar_pick_by_name(c, mask, o, prev) : __builtin_ctzll(mask);
		if (col < 0)
			break;
		prev = sp(c, col, o, SECT);
		dl = dls[col];
		n++;
	}
	return n;
}

/* Follow a tar archive from array offset 0: every header found names the
 * image holding its chunk.  Where several images hold a header at the
 * same place, of those whose successor (where the size says) is a header:
 * the one whose name follows the previous header's
 * (tar_pick_by_name); at the first header, the one whose
 * own chain of successors runs longest (the smallest name of equals).
 * The chase stops where that does not decide.  Not chased where parity
 * shows array data before D. */
static int tar_chase(struct solver *S, uint32_t C, uint64_t D, int k, bool use_virtual, struct tlist *L)
{
	struct dctx *c = S->c;
	uint64_t a = 0;
	const uint8_t *prev = NULL;   /* the previous header */
	int inc, cons;

	/* the chase assumes the archive starts at D: where parity shows array
	 * data before D (consistent nonzero rows), it does not, and a chain
	 * from there would only read the archive from its middle */
	parity_rows_around(&c->par, class_notion(c->par.cls), D, &inc, &cons);
	if (class_notion(c->par.cls) != PN_NONE && cons > 16)
		return 0;

	for (int step = 0; step < 20000; step++) {
		uint64_t s, dls[MAXC + 1];
		int d;
		bool seen;
		uint64_t o = tar_pos(a, C, D, k, &s, &d);
		uint64_t mask = tar_cols_at(c, o, use_virtual, dls, &seen);
		if (!seen || !mask)
			break;
		int found = -1;
		if (mask & (mask - 1)) {
			/* only headers whose successor is a header (or past the sample) */
			uint64_t keep = 0;
			for (int col = 0; col <= c->nimg; col++) {
				if (!(mask >> col & 1))
					continue;
				uint64_t s2, dls2[MAXC + 1];
				int d2;
				bool seen2;
				uint64_t o2 = tar_pos(a + SECT + dls[col], C, D, k, &s2, &d2);
				if (tar_cols_at(c, o2, use_virtual, dls2, &seen2) || !seen2)
					keep |= 1ull << col;
			}
			if (!keep)
				break;
			mask = keep;
		}
		if (!(mask & (mask - 1))) {
			found = __builtin_ctzll(mask);
		} else if (prev) {
			found = tar_pick_by_name(c, mask, o, prev);
			if (found < 0)
				break;
		} else {
			/* the first header: no name to go by */
			int bestn = -1, nbest = 0;
			for (int col = 0; col <= c->nimg; col++) {
				if (!(mask >> col & 1))
					continue;
				int fl = tar_follow(c, C, D, k, use_virtual, a, col, 24);
				const uint8_t *h = sp(c, col, o, SECT);
				const uint8_t *fh = found >= 0 ? sp(c, found, o, SECT) : NULL;
				/* equal chains: the smaller name (sorted archives start there) */
				if (fl > bestn || (fl == bestn && h && fh && strncmp((const char *)h, (const char *)fh, 100) < 0)) {
					bestn = fl;
					nbest = 1;
					found = col;
				} else if (fl == bestn) {
					nbest++;
				}
			}
			if (nbest != 1)
				break;
		}
		/* the first header is where the chase started: any header of the
		 * archive would do, so it proves nothing about the offset */
		struct triple t = { s, d, found, step == 0 ? 0.5f : 10, -1, (uint32_t)(a % C), -1, 0 };
		if (tl_add(L, &t))
			return -ENOMEM;
		prev = sp(c, found, o, SECT);
		a += SECT + dls[found];
	}
	return 0;
}

/* ---------------- assignment (Hungarian, maximise) ---------------- */

static void hungarian(int n, const double *w, int *assign)
{
	/* minimise cost = -w; classic O(n^3) with potentials; 1-based */
	double u[MAXD + 1], v[MAXD + 1], minv[MAXD + 1];
	int p[MAXD + 1], way[MAXD + 1];
	bool used[MAXD + 1];

	for (int i = 0; i <= n; i++) {
		u[i] = v[i] = 0;
		p[i] = way[i] = 0;
	}
	for (int i = 1; i <= n; i++) {
		p[0] = i;
		int j0 = 0;
		for (int j = 0; j <= n; j++) {
			minv[j] = 1e300;
			used[j] = false;
		}
		do {
			used[j0] = true;
			int i0 = p[j0], j1 = 0;
			double delta = 1e300;
			for (int j = 1; j <= n; j++) {
				if (used[j])
					continue;
				double cur = -w[(i0 - 1) * n + (j - 1)] - u[i0] - v[j];
				if (cur < minv[j]) {
					minv[j] = cur;
					way[j] = j0;
				}
				if (minv[j] < delta) {
					delta = minv[j];
					j1 = j;
				}
			}
			for (int j = 0; j <= n; j++) {
				if (used[j]) {
					u[p[j]] += delta;
					v[j] -= delta;
				} else {
					minv[j] -= delta;
				}
			}
			j0 = j1;
		} while (p[j0] != 0);
		do {
			int j1 = way[j0];
			p[j0] = p[j1];
			j0 = j1;
		} while (j0);
	}
	for (int j = 1; j <= n; j++)
		assign[p[j] - 1] = j - 1;
}

/* columns of a hypothesis: member images then missing slots (the first of
 * which is the virtual member when use_virtual) */
static int hyp_cols(const struct solver *S, const struct hyp *h, int *cols)
{
	int nc = 0;
	for (int i = 0; i < S->ncolimg; i++)
		cols[nc++] = S->colimg[i];
	for (int i = 0; i < h->nmiss; i++)
		cols[nc++] = (i == 0 && h->use_virtual) ? S->c->nimg : MISS_COL;
	return nc;
}

static int col_index(const int *cols, int nc, int img)
{
	for (int i = 0; i < nc; i++)
		if (cols[i] == img)
			return i;
	return -1;
}

/* votes role x column from the triples and the RAID6 rows */
static void build_votes(const struct solver *S, const struct hyp *h, const struct tlist *L,
			const int *cols, int nc, double *U)
{
	const struct dctx *c = S->c;
	struct layout_geom geo;
	struct layout_pos pos;
	int n = h->n;

	memset(U, 0, sizeof(double) * (size_t)n * (size_t)n);
	geom_of(h, &geo);
	for (int i = 0; i < L->n; i++) {
		const struct triple *t = &L->t[i];
		uint64_t arr = (t->s * (uint64_t)h->k + (uint64_t)t->d) * h->C;
		layout_locate(&geo, arr, &pos);
		int ci = col_index(cols, nc, t->col);
		if (ci < 0)
			continue;
		double w = t->grp >= 0 && L->nbase[t->grp] > 1 ? t->w / L->nbase[t->grp] : t->w;
		if (t->anc >= 0 && S->copies && S->copies[t->anc] > 1) {
			/* one of the copies is the data chunk, the others P (and Q):
			 * the vote holds for the data role or the parity roles */
			struct stripe_map sm;
			w /= S->copies[t->anc];
			layout_map_stripe(&geo, t->s, &sm);
			U[sm.p_disk * n + ci] += w;
			if (sm.q_disk >= 0)
				U[sm.q_disk * n + ci] += w;
		} else if (t->anc >= 0 && h->nmiss > 0 && !h->use_virtual) {
			/* a lone copy may be the P chunk of a row whose data chunk
			 * is on a missing member (eval_full credits that case) */
			struct stripe_map sm;
			w *= 0.5;
			layout_map_stripe(&geo, t->s, &sm);
			U[sm.p_disk * n + ci] += w;
		}
		U[pos.disk * n + ci] += w;
	}
	if (h->level != 6 || !S->ri)
		return;
	struct stripe_map m;
	uint64_t last_s = UINT64_MAX;
	for (int i = 0; i < c->par.nrows; i++) {
		const struct prow *r = &c->par.rows[i];
		const struct rowint *ri = &S->ri[i];
		/* two interpretations (a row with one nonzero data chunk: it and
		 * its P copy are equal) split the vote */
		if (r->off < h->D || ri->n < 1 || ri->n > 2)
			continue;
		uint64_t s = (r->off - h->D) / h->C;
		if (s != last_s) {
			layout_map_stripe(&geo, s, &m);
			last_s = s;
		}
		for (int ii = 0; ii < ri->n; ii++) {
		const struct interp *in = &ri->in[ii];
		const double w = 0.25 / ri->n;
		int miss = col_index(cols, nc, MISS_COL);
		if (miss < 0 && h->use_virtual)
			miss = col_index(cols, nc, c->nimg);
		switch (in->kind) {
		case IK_FULL:
		case IK_MISS_DATA:
		case IK_MISS_P: {
			if (in->p >= 0) {
				int ci = col_index(cols, nc, in->p);
				if (ci >= 0)
					U[m.p_disk * n + ci] += w;
			} else if (miss >= 0) {
				U[m.p_disk * n + miss] += w;
			}
			int cq = col_index(cols, nc, in->q);
			if (cq >= 0)
				U[m.q_disk * n + cq] += w;
			for (int role = 0; role < n; role++) {
				int sl = m.disk_slot[role];
				if (sl < 0)
					continue;
				if (in->kind == IK_MISS_DATA && sl == in->miss_slot && miss >= 0) {
					U[role * n + miss] += w;
					continue;
				}
				for (int j = 0; j < c->nimg; j++)
					if (in->slot[j] == sl) {
						int ci = col_index(cols, nc, j);
						if (ci >= 0)
							U[role * n + ci] += w;
					}
			}
			break;
		}
		case IK_ONES:
			if (h->nmiss == 1 && miss >= 0)
				U[m.q_disk * n + miss] += w;
			break;
		}
		}
	}
}

/* ---------------- seams ---------------- */

static float seam_cols(const struct dctx *c, int a, uint64_t tail_end, int b, uint64_t head)
{
	const uint8_t *t = sp(c, a, tail_end - 8, 8);
	const uint8_t *h = sp(c, b, head, 8);
	if (!t || !h)
		return -1;
	return seam_at(c, t + 8, h);
}

static uint64_t seam_region_start(const struct dctx *c)
{
	uint64_t r0 = c->par.first_nz == UINT64_MAX ? 0 : c->par.first_nz;
	int t = class_notion(c->par.cls);
	if (c->par.d_lo[t] > r0)
		r0 = c->par.d_lo[t];
	return r0 / SECT * SECT;
}

#define SEAM_REGION (4u << 20)

/* the continuity grid, once */
static int grid_build(struct solver *S, uint64_t RS)
{
	struct dctx *c = S->c;
	if (!c->seam_ok)
		return 0;
	uint64_t RE = RS + SEAM_REGION;
	for (uint64_t x = RS; x < RE; x += 4096)
		if (!sp(c, 0, x, 4096)) {
			RE = x;
			break;
		}
	if (RE <= RS + 8192)
		return 0;
	S->RS = RS;
	S->RE = RE;
	S->ncut = (int)((RE - RS) / SECT);
	int nc = c->nimg + (c->have_virtual ? 1 : 0);
	for (int a = 0; a < nc; a++) {
		if (a < c->nimg && !(c->par.members >> a & 1))
			continue;
		S->ps[a] = malloc(((size_t)S->ncut + 1) * sizeof(double));
		if (!S->ps[a])
			return -ENOMEM;
		S->ps[a][0] = 0;
		for (int i = 0; i < S->ncut; i++) {
			float v = cont_at(c, a, RS + (uint64_t)i * SECT);
			S->ps[a][i + 1] = S->ps[a][i] + (v >= 0 ? v - c->seam_mu : 0);
		}
	}
	return 0;
}

/* sum over cut points x with lo < x < hi (image offsets) */
static double grid_sum(const struct solver *S, int a, int64_t lo, int64_t hi)
{
	if (!S->ps[a])
		return 0;
	int64_t i0 = lo < (int64_t)S->RS ? 0 : (lo - (int64_t)S->RS) / SECT + 1;
	int64_t i1 = hi <= (int64_t)S->RS ? 0 : (hi - (int64_t)S->RS + SECT - 1) / SECT;
	if (i1 > S->ncut)
		i1 = S->ncut;
	if (i0 >= i1)
		return 0;
	return S->ps[a][i1] - S->ps[a][i0];
}

/* Weight of one cut point (junction or interior).  Cut points are not
 * independent evidence (a chunk is one piece of content; 4 KiB blocks of
 * one file are alike), so counted one bit each the seams of every row
 * outvote the file-system structures with what they mostly say, which
 * chunk of a row is parity.  One weight for junctions and interiors keeps
 * the comparison of chunk sizes and orders among themselves as it was. */
#define SEAM_WEIGHT 0.125
static double seam_weight(void)
{
	return SEAM_WEIGHT;
}

static struct smat *smat_get(struct solver *S, uint32_t C, uint64_t D)
{
	struct dctx *c = S->c;
	uint64_t res = D % C;
	for (int i = 0; i < S->nsm; i++)
		if (S->sm[i].C == C && S->sm[i].res == res)
			return &S->sm[i];
	if (S->nsm >= 64)
		return NULL;
	struct smat *M = &S->sm[S->nsm++];
	memset(M, 0, sizeof(*M));
	M->C = C;
	M->res = res;
	if (!c->seam_ok || !S->ncut)
		return M;
	int64_t RS = (int64_t)S->RS, RE = (int64_t)S->RE;
	/* first row head <= RS with head = res (mod C); may be negative */
	int64_t O = RS - (((RS - (int64_t)res) % (int64_t)C) + (int64_t)C) % (int64_t)C;
	M->O = O;
	M->nrows = (int)((RE - O + C - 1) / C);
	M->ncol = c->nimg + (c->have_virtual ? 1 : 0);
	int nc = M->ncol;
	size_t per = (size_t)nc * nc;
	M->t0 = calloc((size_t)M->nrows * per, sizeof(float));
	M->t1 = calloc((size_t)M->nrows * per, sizeof(float));
	M->in = calloc((size_t)M->nrows * nc, sizeof(float));
	if (!M->t0 || !M->t1 || !M->in) {
		free(M->t0);
		free(M->t1);
		free(M->in);
		M->t0 = M->t1 = M->in = NULL;
		M->nrows = 0;
		return M;
	}
	float mu = c->seam_mu;
	double sw = seam_weight();
	M->avg_in = calloc((size_t)M->nrows, sizeof(float));
	M->avg_t = calloc((size_t)M->nrows, sizeof(float));
	if (!M->avg_in || !M->avg_t) {
		M->nrows = 0;
		return M;
	}
	for (int r = 0; r < M->nrows; r++) {
		int64_t head = O + (int64_t)r * C, tail_end = head + C;
		for (int a = 0; a < nc; a++) {
			if (!S->ps[a])
				continue;
			float in = (float)(grid_sum(S, a, head, tail_end) * sw);
			M->in[(size_t)r * nc + a] = in;
			if (in != 0)
				M->any = true;
			/* the boundary at tail_end */
			if (tail_end < RS || tail_end >= RE || head < 0)
				continue;
			for (int b = 0; b < nc; b++) {
				if (b == a || !S->ps[b])
					continue;
				float v0 = seam_cols(c, a, (uint64_t)tail_end, b, (uint64_t)head);
				float v1 = seam_cols(c, a, (uint64_t)tail_end, b, (uint64_t)tail_end);
				if (v0 >= 0)
					M->t0[(size_t)r * per + (size_t)a * nc + b] = (float)((v0 - mu) * sw);
				if (v1 >= 0)
					M->t1[(size_t)r * per + (size_t)a * nc + b] = (float)((v1 - mu) * sw);
				if (v0 >= 0 || v1 >= 0)
					M->any = true;
			}
		}
		double si = 0, st = 0;
		int ni = 0, nt = 0;
		for (int a = 0; a < nc; a++) {
			if (!S->ps[a])
				continue;
			si += M->in[(size_t)r * nc + a];
			ni++;
			for (int b = 0; b < nc; b++)
				if (b != a && S->ps[b]) {
					st += M->t0[(size_t)r * per + (size_t)a * nc + b];
					nt++;
				}
		}
		M->avg_in[r] = ni ? (float)(si / ni) : 0;
		M->avg_t[r] = nt ? (float)(st / nt) : 0;
	}
	return M;
}

/* Pair tables for the beam: A[(x*n+y)] -> nc x nc block over column
 * indices (junction of role x's chunk into role y's); Ui[role][ci]: interior
 * continuity of the data chunks role r holds. */
struct pairs {
	int n, nc;
	float *A;        /* n*n*nc*nc */
	bool *has;       /* n*n */
	double *Ui;      /* n*nc */
};

static int pairs_build(const struct solver *S, const struct hyp *h, const struct smat *M,
		       const int *cols, int nc, struct pairs *P)
{
	int n = h->n;
	struct layout_geom geo;
	struct stripe_map m0, m1;

	(void)S;
	P->n = n;
	P->nc = nc;
	P->A = calloc((size_t)n * n * nc * nc, sizeof(float));
	P->has = calloc((size_t)n * n, sizeof(bool));
	P->Ui = calloc((size_t)n * nc, sizeof(double));
	if (!P->A || !P->has || !P->Ui)
		return -ENOMEM;
	if (!M || !M->t0 || !M->any)
		return 0;
	geom_of(h, &geo);
	int mc = M->ncol;
	size_t per = (size_t)mc * mc;
	int64_t per_n = (int64_t)h->n * (h->n - 1);
	int64_t base = ((int64_t)M->O - (int64_t)h->D) / (int64_t)h->C;
	base %= per_n;
	if (base < 0)
		base += per_n;
	for (int r = 0; r < M->nrows; r++) {
		uint64_t st = (uint64_t)base + (uint64_t)r;
		layout_map_stripe(&geo, st, &m0);
		bool m1ok = false;
		for (int d = 0; d < h->k; d++) {
			int x = m0.data_disk[d];
			for (int ci = 0; ci < nc; ci++)
				if (cols[ci] != MISS_COL && cols[ci] < mc)
					P->Ui[x * nc + ci] += M->in[(size_t)r * mc + cols[ci]];
				else
					P->Ui[x * nc + ci] += M->avg_in[r];
			int y;
			const float *T;
			if (d + 1 < h->k) {
				y = m0.data_disk[d + 1];
				T = M->t0 + (size_t)r * per;
			} else {
				if (!m1ok) {
					layout_map_stripe(&geo, st + 1, &m1);
					m1ok = true;
				}
				y = m1.data_disk[0];
				T = M->t1 + (size_t)r * per;
			}
			float *B = P->A + ((size_t)x * n + y) * nc * nc;
			P->has[x * n + y] = true;
			for (int ai = 0; ai < nc; ai++) {
				bool ma = cols[ai] == MISS_COL || cols[ai] >= mc;
				for (int bi = 0; bi < nc; bi++) {
					bool mb = cols[bi] == MISS_COL || cols[bi] >= mc;
					if (ma || mb)
						B[ai * nc + bi] += M->avg_t[r];
					else
						B[ai * nc + bi] += T[(size_t)cols[ai] * mc + cols[bi]];
				}
			}
		}
	}
	return 0;
}

static void pairs_free(struct pairs *P)
{
	free(P->A);
	free(P->has);
	free(P->Ui);
}

static double seam_score(const struct pairs *P, const int *pi)
{
	double s = 0;
	int n = P->n, nc = P->nc;
	if (P->Ui)
		for (int x = 0; x < n; x++)
			s += P->Ui[x * nc + pi[x]];
	for (int x = 0; x < n; x++)
		for (int y = 0; y < n; y++)
			if (P->has[x * n + y])
				s += P->A[((size_t)x * n + y) * nc * nc + (size_t)pi[x] * nc + pi[y]];
	return s;
}

/* beam search over pi maximising U + seams.  pi: role -> column index. */
struct bstate {
	double sc;
	uint64_t used;
	int8_t pi[MAXD];
};


/* partial quickselect: the k best states first (unordered) */
static void select_top(struct bstate *a, int n, int k)
{
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		double pivot = a[(lo + hi) / 2].sc;
		int i = lo, j = hi;
		while (i <= j) {
			while (a[i].sc > pivot)
				i++;
			while (a[j].sc < pivot)
				j--;
			if (i <= j) {
				struct bstate t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				j--;
			}
		}
		if (k - 1 <= j)
			hi = j;
		else if (k - 1 >= i)
			lo = i;
		else
			break;
	}
}

static int beam(const double *U, const struct pairs *P, int n, const int *cols, int *best_pi)
{
	struct bstate *cur = malloc(sizeof(*cur) * BEAM), *nxt = malloc(sizeof(*nxt) * BEAM * (MAXD + 1));
	int ncur = 1;

	if (!cur || !nxt) {
		free(cur);
		free(nxt);
		return -ENOMEM;
	}
	memset(&cur[0], 0, sizeof(cur[0]));
	int nc = n;
	for (int t = 0; t < n; t++) {
		int nn = 0;
		for (int b = 0; b < ncur; b++) {
			bool miss_tried = false;
			for (int ci = 0; ci < nc; ci++) {
				if (cur[b].used >> ci & 1)
					continue;
				/* interchangeable missing columns: try only the first free one */
				if (cols[ci] == MISS_COL) {
					if (miss_tried)
						continue;
					miss_tried = true;
				}
				struct bstate s = cur[b];
				s.pi[t] = (int8_t)ci;
				s.used |= 1ull << ci;
				double add = U[t * n + ci];
				if (P && P->Ui)
					add += P->Ui[t * nc + ci];
				if (P && P->A) {
					for (int x = 0; x < t; x++) {
						if (P->has[x * n + t])
							add += P->A[((size_t)x * n + t) * nc * nc + (size_t)s.pi[x] * nc + ci];
						if (P->has[t * n + x])
							add += P->A[((size_t)t * n + x) * nc * nc + (size_t)ci * nc + s.pi[x]];
					}
					if (P->has[t * n + t])
						add += P->A[((size_t)t * n + t) * nc * nc + (size_t)ci * nc + ci];
				}
				s.sc += add;
				nxt[nn++] = s;
			}
		}
		if (nn > BEAM)
			select_top(nxt, nn, BEAM);
		ncur = nn < BEAM ? nn : BEAM;
		memcpy(cur, nxt, sizeof(*cur) * (size_t)ncur);
	}
	int bi = 0;
	for (int b = 1; b < ncur; b++)
		if (cur[b].sc > cur[bi].sc)
			bi = b;
	for (int t = 0; t < n; t++)
		best_pi[t] = cur[bi].pi[t];
	free(cur);
	free(nxt);
	return 0;
}

/* U + seams of a full order */
static double order_score(const double *U, const struct pairs *P, int n, const int *pi)
{
	double s = 0;
	for (int r = 0; r < n; r++)
		s += U[r * n + pi[r]];
	return s + (P && P->A ? seam_score(P, pi) : 0);
}

/* Hill climbing from the beam's order: swaps and moves of one role to
 * another position (the array order is a cycle of roles, and the beam builds
 * it from role 0 without seeing the rest), until nothing improves. */
static void local_search(const double *U, const struct pairs *P, int n, const int *cols, int *pi)
{
	double cur = order_score(U, P, n, pi);
	int t[MAXD];
	(void)cols;
	for (int round = 0; round < 50; round++) {
		bool better = false;
		for (int a = 0; a < n; a++)
			for (int b = 0; b < n; b++) {
				if (a == b)
					continue;
				/* swap */
				if (a < b) {
					memcpy(t, pi, sizeof(int) * (size_t)n);
					int x = t[a];
					t[a] = t[b];
					t[b] = x;
					double v = order_score(U, P, n, t);
					if (v > cur + 1e-9) {
						memcpy(pi, t, sizeof(int) * (size_t)n);
						cur = v;
						better = true;
					}
				}
				/* move the role at a to position b */
				int k = 0, x = pi[a];
				for (int i = 0; i < n; i++) {
					if (i == a)
						continue;
					if (k == b)
						t[k++] = x;
					t[k++] = pi[i];
				}
				if (k == b)
					t[k++] = x;
				double v = order_score(U, P, n, t);
				if (v > cur + 1e-9) {
					memcpy(pi, t, sizeof(int) * (size_t)n);
					cur = v;
					better = true;
				}
			}
		/* rotations of the whole order, and moves of a run of 2 or 3 roles */
		for (int r = 1; r < n; r++) {
			for (int i = 0; i < n; i++)
				t[i] = pi[(i + r) % n];
			double v = order_score(U, P, n, t);
			if (v > cur + 1e-9) {
				memcpy(pi, t, sizeof(int) * (size_t)n);
				cur = v;
				better = true;
			}
		}
		for (int len = 2; len <= 3 && len < n; len++)
			for (int a = 0; a + len <= n; a++)
				for (int b = 0; b + len <= n; b++) {
					if (a == b)
						continue;
					int rest[MAXD], nr = 0;
					for (int i = 0; i < n; i++)
						if (i < a || i >= a + len)
							rest[nr++] = pi[i];
					int k = 0;
					for (int i = 0; i < b; i++)
						t[k++] = rest[i];
					for (int i = 0; i < len; i++)
						t[k++] = pi[a + i];
					for (int i = b; i < nr; i++)
						t[k++] = rest[i];
					double v = order_score(U, P, n, t);
					if (v > cur + 1e-9) {
						memcpy(pi, t, sizeof(int) * (size_t)n);
						cur = v;
						better = true;
					}
				}
		if (!better)
			break;
	}
}

/* Every order (interchangeable missing columns counted once), for small n:
 * depth-first with the partial score, no pruning. */
#define EXHAUSTIVE_MAX 8
#define TOPK 32
struct exh {
	const double *U;
	const struct pairs *P;
	int n;
	const int *cols;
	int pi[MAXD];
	int top[TOPK][MAXD];       /* the best orders by U + seams, unordered */
	double topsc[TOPK];
	int ntop, topk;            /* kept, wanted (<= TOPK) */
	uint64_t used;
};

static void exh_rec(struct exh *e, int t, double sc)
{
	int n = e->n, nc = n;
	if (t == n) {
		int w = 0;
		if (e->ntop < e->topk) {
			w = e->ntop++;
		} else {
			for (int i = 1; i < e->topk; i++)
				if (e->topsc[i] < e->topsc[w])
					w = i;
			if (sc <= e->topsc[w])
				return;
		}
		e->topsc[w] = sc;
		memcpy(e->top[w], e->pi, sizeof(int) * (size_t)n);
		return;
	}
	bool miss_tried = false;
	for (int ci = 0; ci < nc; ci++) {
		if (e->used >> ci & 1)
			continue;
		if (e->cols[ci] == MISS_COL) {
			if (miss_tried)
				continue;
			miss_tried = true;
		}
		double add = e->U[t * n + ci];
		const struct pairs *P = e->P;
		if (P && P->Ui)
			add += P->Ui[t * nc + ci];
		if (P && P->A) {
			for (int x = 0; x < t; x++) {
				if (P->has[x * n + t])
					add += P->A[((size_t)x * n + t) * nc * nc + (size_t)e->pi[x] * nc + ci];
				if (P->has[t * n + x])
					add += P->A[((size_t)t * n + x) * nc * nc + (size_t)ci * nc + e->pi[x]];
			}
			if (P->has[t * n + t])
				add += P->A[((size_t)t * n + t) * nc * nc + (size_t)ci * nc + ci];
		}
		e->pi[t] = ci;
		e->used |= 1ull << ci;
		exh_rec(e, t + 1, sc + add);
		e->used &= ~(1ull << ci);
	}
}

/* The TOPK best orders by the search objective (they are all scored in
 * full afterwards: the objective only approximates the anchors).  Returns
 * how many. */
static int exhaustive(const double *U, const struct pairs *P, int n, const int *cols, int topk, int out[][MAXD])
{
	struct exh *e = calloc(1, sizeof(*e));
	if (!e)
		return 0;
	e->U = U;
	e->P = P;
	e->n = n;
	e->cols = cols;
	e->topk = topk < 1 ? 1 : topk > TOPK ? TOPK : topk;
	exh_rec(e, 0, 0);
	int k = e->ntop;
	for (int i = 0; i < k; i++)
		memcpy(out[i], e->top[i], sizeof(int) * (size_t)n);
	free(e);
	return k;
}

/* ---------------- full evaluation ---------------- */

static uint64_t seam_region_start(const struct dctx *c);

/* Member-internal discontinuity at chunk boundaries: mean continuity at odd
 * multiples of C/2 (inside chunks if C is right) minus at multiples of C
 * (boundaries), counted from the same origin for every offset of one
 * residue. */
static double chunk_evidence(const struct solver *S, uint32_t C, uint64_t D)
{
	const struct dctx *c = S->c;
	if (!c->seam_ok)
		return 0;
	uint64_t res = D % C, r0 = seam_region_start(c);
	uint64_t O = r0 <= res ? res : r0 + (C - (r0 - res) % C) % C;
	double s_in = 0, s_b = 0;
	int n_in = 0, n_b = 0;
	uint64_t x = O + C / 2;
	for (uint64_t j = 1; j < 2 * 4096; x += C / 2, j++) {
		bool boundary = (j % 2) == 0;
		bool any = false;
		for (int img = 0; img < c->nimg; img++) {
			if (!(c->par.members >> img & 1))
				continue;
			if (!sp(c, img, x - 8, 16))
				continue;
			any = true;
			float v = cont_at(c, img, x);
			if (v < 0)
				continue;
			if (boundary) {
				s_b += v;
				n_b++;
			} else {
				s_in += v;
				n_in++;
			}
		}
		if (!any)
			break;
	}
	if (n_in < 8 || n_b < 8)
		return 0;
	double contrast = s_in / n_in - s_b / n_b;
	int n = n_b < n_in ? n_b : n_in;
	return contrast * (n > 256 ? 256 : n) * 0.5;
}

/* small open-addressing set of (group, offset) keys */
struct kset {
	uint64_t *k;
	size_t cap;
};

static uint64_t key_of(int grp, int64_t rel)
{
	return ((uint64_t)(unsigned)grp << 52) ^ (uint64_t)rel ^ 0x9e3779b97f4a7c15ull;
}

static void kset_add(struct kset *s, uint64_t key)
{
	if (!s->k)
		return;
	size_t i = (key * 0x9E3779B97F4A7C15ull) >> 40 & (s->cap - 1);
	while (s->k[i] && s->k[i] != key)
		i = (i + 1) & (s->cap - 1);
	s->k[i] = key;
}

static bool kset_has(const struct kset *s, uint64_t key)
{
	if (!s->k)
		return false;
	size_t i = (key * 0x9E3779B97F4A7C15ull) >> 40 & (s->cap - 1);
	while (s->k[i]) {
		if (s->k[i] == key)
			return true;
		i = (i + 1) & (s->cap - 1);
	}
	return false;
}

static void eval_full(struct solver *S, struct hyp *h, const struct tlist *L, const struct pairs *P,
		      const int *cols, int nc, const int *pi)
{
	struct dctx *c = S->c;
	struct layout_geom geo;
	struct stripe_map m;

	for (int r = 0; r < h->n; r++)
		h->col_of_role[r] = cols[pi[r]];
	geom_of(h, &geo);
	int role_of_col[MAXC + 1];
	for (int i = 0; i <= MAXC; i++)
		role_of_col[i] = -1;
	for (int r = 0; r < h->n; r++)
		if (h->col_of_role[r] >= 0 && h->col_of_role[r] <= MAXC)
			role_of_col[h->col_of_role[r]] = r;
	/* anchors.  Per group, each candidate base is scored under this order
	 * and the best one counts. */
	double ea = 0;
	int ok = 0, bad = 0, onpar = 0;
	float okw = 0;
	static const int NB = MAXBASE;
	double gw[MAXGRP][MAXBASE];
	memset(gw, 0, sizeof(gw));
	struct kset ks = { 0 };
	ks.cap = 1024;
	while (ks.cap < (size_t)L->n * 4 + 16)
		ks.cap <<= 1;
	ks.k = calloc(ks.cap, sizeof(uint64_t));
	bool *intl = calloc((size_t)c->nanc + 1, sizeof(bool));
	uint8_t *tres = calloc((size_t)L->n + 1, 1);   /* 1 explained */
	for (int i = 0; i < L->n && intl; i++)
		if (L->t[i].anc >= 0)
			intl[L->t[i].anc] = true;
	for (int i = 0; i < L->n && tres; i++) {
		const struct triple *t = &L->t[i];
		struct layout_pos pos;
		layout_locate(&geo, (t->s * (uint64_t)h->k + (uint64_t)t->d) * h->C, &pos);
		if (h->col_of_role[pos.disk] == t->col) {
			tres[i] = 1;
			if (t->grp >= 0)
				gw[t->grp][t->bi] += t->w;
		}
	}
	int chosen[MAXGRP];
	for (int g = 0; g < c->ngrp; g++) {
		chosen[g] = -1;
		double bw = 0;
		for (int b = 0; b < L->nbase[g] && b < NB; b++) {
			double v = gw[g][b] - L->dof[g][b];
			if (chosen[g] < 0 || v > bw) {
				bw = v;
				chosen[g] = b;
			}
		}
		if (chosen[g] >= 0)
			ea -= L->dof[g][chosen[g]];
	}
	/* explained triples of the chosen bases: their (group, offset) keys make
	 * copies in parity chunks harmless */
	for (int i = 0; i < L->n && tres; i++) {
		const struct triple *t = &L->t[i];
		if (t->grp >= 0 && t->bi != chosen[t->grp])
			continue;
		if (tres[i] != 1)
			continue;
		ea += t->w;
		ok++;
		okw += t->w;
		if (t->anc >= 0) {
			const struct anchor *a = &c->anc[t->anc];
			for (int r = 0; r < a->nrel; r++)
				kset_add(&ks, key_of(a->grp, a->rel[r]));
		}
	}
	/* an anchor in a P/Q chunk is a copy (a row with one nonzero data
	 * chunk) when the same structure is explained elsewhere; else it
	 * contradicts */
	for (int i = 0; i < L->n && tres; i++) {
		const struct triple *t = &L->t[i];
		if (tres[i] == 1 || (t->grp >= 0 && t->bi != chosen[t->grp]))
			continue;
		int role = t->col >= 0 && t->col <= MAXC ? role_of_col[t->col] : -1;
		bool copy = false;
		if (role >= 0 && t->anc >= 0) {
			layout_map_stripe(&geo, t->s, &m);
			/* the P chunk (or the Q chunk, when the chunk's Q slot is 0)
			 * of a row whose other data chunks are zero there is a copy
			 * of the one that is not: when the hypothesis says that
			 * chunk is missing, the copy is the only place it shows */
			int drole = t->d >= 0 && t->d < h->k ? m.data_disk[t->d] : -1;
			bool alone = drole >= 0 && h->col_of_role[drole] == MISS_COL &&
				     (role == m.p_disk || (role == m.q_disk && m.disk_slot[drole] == 0));
			/* a copy only where every present data chunk of the row is
			 * zero at that sector */
			uint64_t aoff = c->anc[t->anc].off / SECT * SECT;
			for (int r = 0; r < h->n && alone; r++) {
				int col = h->col_of_role[r];
				if (r == m.p_disk || r == m.q_disk || col < 0 || col >= c->nimg)
					continue;
				alone = sp_zero(c, col, aoff, SECT) == 1;
			}
			if (alone) {
				/* once per structure: its P and Q copies are one */
				const struct anchor *a = &c->anc[t->anc];
				bool seen = false;
				for (int r = 0; r < a->nrel && !seen; r++)
					seen = kset_has(&ks, key_of(a->grp, a->rel[r]));
				if (seen) {
					onpar++;
					continue;
				}
				for (int r = 0; r < a->nrel; r++)
					kset_add(&ks, key_of(a->grp, a->rel[r]));
				ea += t->w;
				ok++;
				okw += t->w;
				continue;
			}
			if (role == m.p_disk || role == m.q_disk) {
				const struct anchor *a = &c->anc[t->anc];
				for (int r = 0; r < a->nrel && !copy; r++)
					copy = kset_has(&ks, key_of(a->grp, a->rel[r]));
			}
		}
		if (copy) {
			onpar++;
			continue;
		}
		ea -= t->w * 0.5;
		bad++;
		if (S->debug_bad && t->anc >= 0)
			fprintf(stderr, "    bad triple: %s img %d off %llu rel %lld grp %d (s %llu d %d)\n",
				anchor_kind_name(c->anc[t->anc].kind), t->col, (unsigned long long)c->anc[t->anc].off,
				(long long)c->anc[t->anc].rel[0], c->anc[t->anc].grp, (unsigned long long)t->s, t->d);
	}
	/* anchors whose position fits no data chunk under (C, D) */
	for (int i = 0; i < c->nanc && intl; i++) {
		const struct anchor *a = &c->anc[i];
		if (intl[i] || a->off < h->D || !col_allowed(c, a->img, h->use_virtual))
			continue;
		int role = role_of_col[a->img];
		if (role < 0)
			continue;
		uint64_t s = (a->off - h->D) / h->C;
		layout_map_stripe(&geo, s, &m);
		bool copy = false;
		if (role == m.p_disk || role == m.q_disk)
			for (int r = 0; r < a->nrel && !copy; r++)
				copy = kset_has(&ks, key_of(a->grp, a->rel[r]));
		if (copy) {
			onpar++;
			continue;
		}
		ea -= a->w * 0.5;
		bad++;
		if (S->debug_bad)
			fprintf(stderr, "    bad anchor: %s img %d off %llu rel %lld (n %d) grp %d\n", anchor_kind_name(a->kind),
				a->img, (unsigned long long)a->off, (long long)a->rel[0], a->nrel, a->grp);
	}
	free(ks.k);
	free(intl);
	free(tres);
	/* a file system placed by its anchors must fit in the array the
	 * geometry reads: k data chunks per stripe of the members' data area */
	{
		uint64_t area = c->minsize > h->D ? (c->minsize - h->D) / h->C * h->C : 0;
		uint64_t cap = area * (uint64_t)h->k;
		for (int g = 0; g < c->ngrp; g++) {
			const struct agroup *G = &c->grp[g];
			if (!G->size || chosen[g] < 0 || L->base[g][chosen[g]] < 0)
				continue;
			uint64_t end = (uint64_t)L->base[g][chosen[g]] + G->size;
			if (end > cap + cap / 64 + (1u << 20)) {   /* slack: images may be cut short */
				ea -= 24;
				bad++;
			}
		}
	}
	h->e_anchor = ea;
	h->anc_ok = ok;
	h->anc_bad = bad;
	h->anc_okw = okw;
	h->anc_par = onpar;
	/* RAID6 rows */
	h->e_parity = 0;
	h->par_ok = h->par_bad = 0;
	if (h->level == 6 && S->ri) {
		for (int i = 0; i < c->par.nrows; i++) {
			const struct prow *r = &c->par.rows[i];
			if (r->off < h->D)
				continue;
			int v = row_check(S, h, r);
			if (v == 1)
				h->par_ok++;
			else if (v == 0)
				h->par_bad++;
		}
		h->e_parity = (double)h->par_ok * 0.25 - (double)h->par_bad * 2.0;   /* a failed relation is exact evidence */
	}
	if (h->level == 6 && h->nmiss == 2 && S->nx0) {
		/* RAID6 missing two has no row relation, but a nonzero row whose
		 * present members XOR to zero needs Q missing in that stripe (or
		 * the slot-0 data chunk missing with only it nonzero, then P = Q);
		 * elsewhere Q spoils the XOR */
		uint64_t last_s = UINT64_MAX;
		bool okst = false;
		for (int i = 0; i < S->nx0; i++) {
			if (S->x0[i] < h->D)
				continue;
			uint64_t s = (S->x0[i] - h->D) / h->C;
			if (s != last_s) {
				layout_map_stripe(&geo, s, &m);
				last_s = s;
				okst = h->col_of_role[m.q_disk] == MISS_COL;
			}
			bool ok1 = okst;
			if (!ok1) {
				/* Q present: only a slot-0 chunk X with Q = X and one of
				 * X, P present: the row's nonzero present columns are Q
				 * and P or the slot-0 chunk */
				int nzr = 0, other = -1;
				for (int r = 0; r < h->n; r++) {
					int col = h->col_of_role[r];
					if (col < 0 || col >= c->nimg || sp_zero(c, col, S->x0[i], SECT) == 1)
						continue;
					nzr++;
					if (r != m.q_disk)
						other = r;
				}
				ok1 = nzr == 2 && other >= 0 && (other == m.p_disk || m.disk_slot[other] == 0);
			}
			if (ok1)
				h->par_ok++;
			else
				h->par_bad++;
		}
		h->e_parity = -(double)h->par_bad * 0.5;
	}
	if (S->npr && (h->level != 6 || h->nmiss == 2)) {
		/* rows of a data chunk and its Q copy: RAID4/5 cannot make them;
		 * RAID6 missing two must put Q and the chunk of that slot there
		 * (RAID6 with fewer missing judges these rows by its relations) */
		uint64_t last_s = UINT64_MAX;
		int okp = 0, badp = 0;
		for (int i = 0; i < S->npr; i++) {
			const struct prop_row *pr = &S->pr[i];
			if (pr->off < h->D)
				continue;
			if (h->level != 6) {
				badp++;
				continue;
			}
			uint64_t s = (pr->off - h->D) / h->C;
			if (s != last_s) {
				layout_map_stripe(&geo, s, &m);
				last_s = s;
			}
			/* b = g^e a: b is Q and a the chunk of slot e, or a is P of a
			 * row whose only data (slot e) is missing; or the other way
			 * round with g^-e */
			int rb = role_of_col[(int)pr->b], ra = role_of_col[(int)pr->a];
			int e2 = (255 - pr->e) % 255;
			bool ok1 = false;
			for (int dir = 0; dir < 2 && !ok1; dir++) {
				int rq = dir ? ra : rb, rx = dir ? rb : ra, ee = dir ? e2 : pr->e;
				if (rq != m.q_disk || rx < 0)
					continue;
				if (rx != m.p_disk) {
					ok1 = m.disk_slot[rx] >= 0 && m.disk_slot[rx] % 255 == ee;
					continue;
				}
				for (int r = 0; r < h->n && !ok1; r++)
					ok1 = h->col_of_role[r] == MISS_COL && m.disk_slot[r] >= 0 && m.disk_slot[r] % 255 == ee;
			}
			if (ok1)
				okp++;
			else
				badp++;
		}
		h->par_ok += okp;
		h->par_bad += badp;
		h->e_parity += 0.25 * okp - 1.0 * badp;
	}
	int inc, cons;
	h->e_doff = doff_evidence(c, notion_for(h->level, h->nmiss), h->D, &inc, &cons);
	h->e_doff += lead_evidence(c, h->D);
	h->e_seam = P ? seam_score(P, pi) : 0;
	h->ev = h->e_anchor + h->e_parity + h->e_doff + h->e_seam + h->e_chunk;
	/* tiny priors, for ties only */
	double pr = 0;
	if (h->D == 0 || h->D % (1u << 20) == 0)
		pr += 0.2;
	if (h->layout == LAYOUT_LEFT_SYMMETRIC)
		pr += 0.1;
	pr -= 0.3 * h->nmiss;   /* of equals, the array with fewer members missing */
	if (h->C == 65536 || h->C == 524288)
		pr += 0.05;
	/* mdadm rounds the member data area down to whole chunks: a chunk
	 * size that does not divide what follows the data offset reads a
	 * shorter array (ties only: images may hold more than the area) */
	if (c->minsize > h->D && (c->minsize - h->D) % h->C == 0)
		pr += 0.15;
	h->prior = pr;
	h->score = h->ev + pr;
	(void)nc;
}

static void keep_hyp(struct solver *S, const struct hyp *h)
{
	struct hyp *arr = h->refined ? S->keepR : S->keep;
	int *n = h->refined ? &S->nkeepR : &S->nkeep;
	/* replace an identical geometry, else insert, else replace the worst */
	for (int i = 0; i < *n; i++) {
		struct hyp *o = &arr[i];
		if (o->level == h->level && o->layout == h->layout && o->n == h->n && o->C == h->C &&
		    o->D == h->D && memcmp(o->col_of_role, h->col_of_role, sizeof(int) * (size_t)h->n) == 0) {
			if (h->score > o->score)
				*o = *h;
			return;
		}
	}
	if (*n < KEEP) {
		arr[(*n)++] = *h;
		return;
	}
	int worst = 0;
	for (int i = 1; i < *n; i++)
		if (arr[i].score < arr[worst].score)
			worst = i;
	if (h->score > arr[worst].score)
		arr[worst] = *h;
}

static int cmp_hyp(const void *a, const void *b)
{
	const struct hyp *x = a, *y = b;
	return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

/* ---------------- level options ---------------- */

struct lvopt {
	int level, n, nmiss;
	bool use_virtual;
	int layouts[16];
	int nlayouts;
};

static int level_options(struct solver *S, struct lvopt *o)
{
	struct dctx *c = S->c;
	int nm = c->par.nmembers, no = 0;
	static const int r5[] = { LAYOUT_LEFT_ASYMMETRIC, LAYOUT_RIGHT_ASYMMETRIC, LAYOUT_LEFT_SYMMETRIC,
				  LAYOUT_RIGHT_SYMMETRIC };
	static const int r6[] = { LAYOUT_LEFT_ASYMMETRIC, LAYOUT_RIGHT_ASYMMETRIC, LAYOUT_LEFT_SYMMETRIC,
				  LAYOUT_RIGHT_SYMMETRIC, LAYOUT_PARITY_N, LAYOUT_ROTATING_ZERO_RESTART,
				  LAYOUT_ROTATING_N_RESTART, LAYOUT_ROTATING_N_CONTINUE,
				  LAYOUT_LEFT_ASYMMETRIC_6, LAYOUT_RIGHT_ASYMMETRIC_6,
				  LAYOUT_LEFT_SYMMETRIC_6, LAYOUT_RIGHT_SYMMETRIC_6 };
	int hl = c->h.level, hn = c->h.devices;

	struct { int level, n, nmiss; bool virt; } want[6];
	const struct parity_info *p = &c->par;
	int nw = 0;
	int withrel = p->n_d1_ones + p->n_d1_other + p->n_d2;
	int inf = withrel + p->n_d0;
	int cons = p->cons_before[PN_R5][p->nsr], incn = p->inc_total[PN_R5];
	bool weak_xor = incn * 10 > cons + incn;   /* more than 10 % of data rows break XOR */
	bool zx = p->zero_excluded != 0;
	switch (p->cls) {
	case PC_XOR:
		if (nm >= 3)
			want[nw++] = (typeof(want[0])){ 5, nm, 0, false };
		/* a member missing shows as rows without the relation (not all: in
		 * rows where the missing chunk is zero XOR still holds) */
		if (zx || weak_xor || incn * 100 >= cons + 1 || p->n_d0 * 100 >= inf * 2)
			want[nw++] = (typeof(want[0])){ 5, nm + 1, 1, c->have_virtual };
		if (zx || weak_xor)
			want[nw++] = (typeof(want[0])){ 6, nm + 2, 2, false };
		break;
	case PC_R6:
		want[nw++] = (typeof(want[0])){ 6, nm, 0, false };
		/* a member missing shows as rows with one relation, unless the
		 * sample's data lies where the missing member holds P or Q or
		 * zeros (sparse content): always a candidate */
		want[nw++] = (typeof(want[0])){ 6, nm + 1, 1, false };
		if (zx || (p->n_d0 >= 2 && p->n_d0 * 33 >= inf))
			want[nw++] = (typeof(want[0])){ 6, nm + 2, 2, false };
		break;
	case PC_R6M1:
		/* missing two reads like missing one where the sample's rows
		 * have a zero chunk on one of them: rows without relation, or
		 * sparse content (rows of a chunk and its Q copy) */
		want[nw++] = (typeof(want[0])){ 6, nm + 1, 1, false };
		if (zx || (p->n_d0 >= 2 && p->n_d0 * 33 >= inf) || S->npr >= 4)
			want[nw++] = (typeof(want[0])){ 6, nm + 2, 2, false };
		break;
	default:
		want[nw++] = (typeof(want[0])){ 5, nm + 1, 1, c->have_virtual };
		want[nw++] = (typeof(want[0])){ 6, nm + 2, 2, false };
		break;
	}
	for (int i = 0; i < nw; i++) {
		int lv = want[i].level, n = want[i].n;
		if (hn && hn != n)
			continue;
		if (lv == 6 && n < 4)
			continue;
		if (lv == 5 && n < 3)
			continue;
		if (n > MAXD)
			continue;
		if (lv == 5 && (hl == 0 || hl == 5)) {
			struct lvopt x = { 5, n, want[i].nmiss, want[i].virt, { 0 }, 0 };
			for (size_t j = 0; j < 4; j++)
				x.layouts[x.nlayouts++] = r5[j];
			if (hl == 5)
				x.layouts[x.nlayouts++] = LAYOUT_PARITY_N;
			o[no++] = x;
		}
		if (lv == 5 && (hl == 0 || hl == 4)) {
			struct lvopt x = { 4, n, want[i].nmiss, want[i].virt, { LAYOUT_PARITY_N }, 1 };
			o[no++] = x;
		}
		if (lv == 6 && (hl == 0 || hl == 6)) {
			struct lvopt x = { 6, n, want[i].nmiss, false, { 0 }, 0 };
			for (size_t j = 0; j < sizeof(r6) / sizeof(r6[0]); j++)
				x.layouts[x.nlayouts++] = r6[j];
			o[no++] = x;
		}
	}
	return no;
}

static void print_hyp(const char *tag, const struct hyp *h);

/* ---------------- one (level, n, C, D, L) ---------------- */

static int try_geometry(struct solver *S, const struct lvopt *lo, int layout, uint32_t C, uint64_t D,
			const struct tlist *L, bool with_seams, double e_chunk, bool swaps)
{
	struct hyp h;
	int cols[MAXD], pi[MAXD], nc;
	double *U = NULL;
	struct pairs P = { 0 };
	int rc = 0;

	memset(&h, 0, sizeof(h));
	h.level = lo->level;
	h.layout = layout;
	h.n = lo->n;
	h.k = lo->n - (lo->level == 6 ? 2 : 1);
	h.C = C;
	h.D = D;
	h.nmiss = lo->nmiss;
	h.use_virtual = lo->use_virtual;
	(void)e_chunk;   /* member-internal continuity is part of the seams now */
	nc = hyp_cols(S, &h, cols);
	if (nc != h.n)
		return 0;
	U = malloc(sizeof(double) * (size_t)h.n * (size_t)h.n);
	if (!U)
		return -ENOMEM;
	build_votes(S, &h, L, cols, nc, U);
	for (int r = 0; r < h.n; r++)
		for (int j = 0; j < nc; j++)
			if (U[r * h.n + j] != 0) {
				h.pinned++;
				break;
			}
	if (with_seams) {
		struct smat *M = smat_get(S, C, D);
		rc = pairs_build(S, &h, M, cols, nc, &P);
		if (rc)
			goto out;
		if (h.n <= EXHAUSTIVE_MAX) {
			int tops[TOPK][MAXD];
			/* few RAID6 rows (sparse content): the votes say little
			 * and full evaluations are cheap, so keep more orders */
			int nt = exhaustive(U, &P, h.n, cols, S->c->par.nrows <= 1024 ? 32 : 8, tops);
			double bs = -1e300;
			for (int i = 0; i < nt; i++) {
				struct hyp h2 = h;
				h2.refined = true;
				eval_full(S, &h2, L, &P, cols, nc, tops[i]);
				keep_hyp(S, &h2);
				if (h2.score > bs) {
					bs = h2.score;
					memcpy(pi, tops[i], sizeof(int) * (size_t)h.n);
				}
			}
		} else {
			rc = beam(U, &P, h.n, cols, pi);
			if (rc)
				goto out;
			local_search(U, &P, h.n, cols, pi);
			/* a second start: the assignment the votes alone prefer; both
			 * are scored in full (the votes only approximate the anchors) */
			int pi2[MAXD];
			hungarian(h.n, U, pi2);
			local_search(U, &P, h.n, cols, pi2);
			struct hyp h2 = h;
			h2.refined = true;
			eval_full(S, &h2, L, &P, cols, nc, pi2);
			keep_hyp(S, &h2);
			struct hyp h1 = h;
			h1.refined = true;
			eval_full(S, &h1, L, &P, cols, nc, pi);
			if (h2.score > h1.score)
				memcpy(pi, pi2, sizeof(int) * (size_t)h.n);
		}
		h.refined = true;
		eval_full(S, &h, L, &P, cols, nc, pi);
		keep_hyp(S, &h);
		/* every rotation of the best order, as alternatives */
		for (int r = 1; r < h.n && swaps; r++) {
			int t2[MAXD];
			for (int i = 0; i < h.n; i++)
				t2[i] = pi[(i + r) % h.n];
			struct hyp h2 = h;
			eval_full(S, &h2, L, &P, cols, nc, t2);
			keep_hyp(S, &h2);
		}
		/* every transposition of the best order, as alternatives */
		for (int a = 0; a < h.n && swaps; a++)
			for (int b = a + 1; b < h.n; b++) {
				if (cols[pi[a]] == MISS_COL && cols[pi[b]] == MISS_COL)
					continue;
				int t = pi[a];
				pi[a] = pi[b];
				pi[b] = t;
				struct hyp h2 = h;
				eval_full(S, &h2, L, &P, cols, nc, pi);
				if (detect_getenv("DETECT_SWAPDBG"))
					print_hyp("swap", &h2);
				keep_hyp(S, &h2);
				t = pi[a];
				pi[a] = pi[b];
				pi[b] = t;
			}
	} else {
		hungarian(h.n, U, pi);
		eval_full(S, &h, L, NULL, cols, nc, pi);
		keep_hyp(S, &h);
	}
out:
	pairs_free(&P);
	free(U);
	return rc;
}

/* Hill climbing by transpositions from the best kept order of h's
 * geometry (two rounds), every order tried kept as an alternative.
 * Returns 0 or -ENOMEM. */
static int swaps_around(struct solver *S, const struct hyp *geo_h, const struct tlist *L)
{
	struct hyp base;
	bool have = false;
	for (int i = 0; i < S->nkeepR; i++) {
		const struct hyp *o = &S->keepR[i];
		if (o->level == geo_h->level && o->n == geo_h->n && o->layout == geo_h->layout && o->C == geo_h->C &&
		    o->D == geo_h->D && (!have || o->score > base.score)) {
			base = *o;
			have = true;
		}
	}
	if (!have)
		return 0;
	int cols[MAXD], nc = hyp_cols(S, &base, cols);
	if (nc != base.n)
		return 0;
	struct pairs P = { 0 };
	int rc = pairs_build(S, &base, smat_get(S, base.C, base.D), cols, nc, &P);
	for (int round = 0; round < 2 && !rc; round++) {
		int pi[MAXD];
		uint64_t used = 0;
		bool ok = true;
		for (int r = 0; r < base.n && ok; r++) {
			pi[r] = -1;
			for (int ci = 0; ci < nc; ci++)
				if (!(used >> ci & 1) && (cols[ci] == base.col_of_role[r] ||
							  (cols[ci] == S->c->nimg && base.col_of_role[r] == S->c->nimg))) {
					pi[r] = ci;
					used |= 1ull << ci;
					break;
				}
			ok = pi[r] >= 0;
		}
		if (!ok)
			break;
		struct hyp best = base;
		for (int a = 0; a < base.n; a++)
			for (int b = a + 1; b < base.n; b++) {
				if (cols[pi[a]] == MISS_COL && cols[pi[b]] == MISS_COL)
					continue;
				int t = pi[a];
				pi[a] = pi[b];
				pi[b] = t;
				struct hyp h2 = base;
				eval_full(S, &h2, L, &P, cols, nc, pi);
				keep_hyp(S, &h2);
				if (h2.score > best.score)
					best = h2;
				t = pi[a];
				pi[a] = pi[b];
				pi[b] = t;
			}
		if (best.score <= base.score)
			break;
		base = best;
	}
	pairs_free(&P);
	return rc;
}

/* ---------------- output ---------------- */

static void ev_add(struct detect_candidate *dc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void ev_add(struct detect_candidate *dc, const char *fmt, ...)
{
	if (dc->nevidence >= DETECT_MAX_EVIDENCE)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dc->evidence[dc->nevidence++], DETECT_TEXT, fmt, ap);
	va_end(ap);
}

static const char *class_name(int cls)
{
	switch (cls) {
	case PC_XOR: return "XOR of the members is zero in every row (RAID4/5, no member missing)";
	case PC_R6: return "two independent relations per row (RAID6, no member missing)";
	case PC_R6M1: return "one relation per row, plain XOR only in some (RAID6, one member missing)";
	case PC_NONE: return "no parity relation between the images (RAID5 missing one, or RAID6 missing two)";
	}
	return "?";
}

static void fill_candidate(struct solver *S, const struct hyp *h, struct detect_candidate *dc)
{
	struct dctx *c = S->c;
	char sz[32];

	memset(dc, 0, sizeof(*dc));
	dc->level = h->level;
	dc->layout = h->layout;
	dc->raid_disks = h->n;
	dc->chunk_bytes = h->C;
	dc->data_offset = h->D;
	for (int r = 0; r < h->n; r++)
		dc->order[r] = (h->col_of_role[r] >= 0 && h->col_of_role[r] < c->nimg) ? h->col_of_role[r] : -1;
	dc->score = h->score;
	ev_add(dc, "parity: %s", class_name(c->par.cls));
	if (h->level == 6 && (h->par_ok || h->par_bad))
		ev_add(dc, "RAID6 rows: P/Q and Q slot order as predicted in %d of %d analysed rows",
		       h->par_ok, h->par_ok + h->par_bad);
	if (h->anc_ok || h->anc_bad) {
		char kinds[160] = "";
		int cnt[AK_NKINDS] = { 0 };
		(void)cnt;
		ev_add(dc, "anchors: %d explained (%.0f bits), %d contradicted, %d on parity chunks",
		       h->anc_ok, h->anc_okw, h->anc_bad, h->anc_par);
		(void)kinds;
	}
	for (int g = 0; g < c->ngrp && dc->nevidence < DETECT_MAX_EVIDENCE - 2; g++) {
		int n = 0;
		for (int i = 0; i < c->nanc; i++)
			n += c->anc[i].grp == g;
		if (n)
			ev_add(dc, "found %s: %d structures", c->grp[g].desc[0] ? c->grp[g].desc : "?", n);
	}
	if (h->e_seam != 0)
		ev_add(dc, "content continuity across chunk boundaries: %+.1f", h->e_seam);
	detect_fmt_size(sz, sizeof(sz), h->D);
	int inc, cons;
	doff_evidence(c, notion_for(h->level, h->nmiss), h->D, &inc, &cons);
	if (notion_for(h->level, h->nmiss) != PN_NONE)
		ev_add(dc, "data offset %s: %d rows contradict parity after it, %d parity rows with data before it",
		       sz, inc, cons);
	ev_add(dc, "score %.1f = anchors %.1f + parity %.1f + offset %.1f + seams %.1f + chunk %.1f",
	       h->score, h->e_anchor, h->e_parity, h->e_doff, h->e_seam, h->e_chunk);
}

/* Data chunk (stripe s, index d) under h, from the sample: *out points to
 * its bytes (sample or scratch, C bytes), *zero says all zero.  Missing
 * roles are rebuilt from parity (RAID5: XOR of the row; RAID6: P/Q with md's
 * slot order).  Returns 0, or -1 when the sample cannot give it.
 * scratch: caller's, aligned, >= (n + 2) * C bytes. */
static int chunk_get(const struct solver *S, const struct hyp *h, uint64_t s, int d, uint8_t *scratch,
		     const uint8_t **out, bool *zero)
{
	const struct dctx *c = S->c;
	struct layout_geom geo;
	struct stripe_map m;

	geom_of(h, &geo);
	layout_map_stripe(&geo, s, &m);
	uint64_t mo = h->D + s * h->C;
	int role = m.data_disk[d];
	int col = h->col_of_role[role];
	if (col != MISS_COL) {
		const uint8_t *p = sp(c, col, mo, h->C);
		int z = sp_zero(c, col, mo, h->C);
		if (!p || z < 0)
			return -1;
		*out = p;
		*zero = z == 1;
		return 0;
	}
	/* rebuild: every other role of the row */
	uint8_t *slots[MAXD], *pbuf = NULL, *qbuf = NULL;
	int lost[2] = { PARITY_NONE, PARITY_NONE }, nlost = 0, nslots = m.q_slots;
	uint8_t *dst = scratch, *work = scratch + h->C;
	bool allz = true;
	for (int i = 0; i < nslots; i++)
		slots[i] = NULL;
	for (int r = 0; r < h->n; r++) {
		int cc = h->col_of_role[r];
		const uint8_t *p = cc == MISS_COL ? NULL : sp(c, cc, mo, h->C);
		if (cc != MISS_COL && !p)
			return -1;
		if (p && sp_zero(c, cc, mo, h->C) == 0)
			allz = false;
		uint8_t *b = (uint8_t *)p;
		if (!p) {
			b = work;
			work += h->C;
		}
		if (r == m.p_disk) {
			pbuf = b;
			if (!p)
				lost[nlost++] = PARITY_P;
		} else if (r == m.q_disk) {
			qbuf = b;
			if (!p)
				lost[nlost++] = PARITY_Q;
		} else {
			int sl = m.disk_slot[r];
			if (sl < 0 || sl >= MAXD)
				return -1;
			slots[sl] = b;
			if (!p)
				lost[nlost++] = sl;
		}
		if (r == role)
			dst = b;
	}
	if (allz) {   /* every present block zero: the row is zero */
		memset(dst, 0, h->C);
		*out = dst;
		*zero = true;
		return 0;
	}
	if (nlost == 0 || nlost > 2 || (h->level != 6 && nlost > 1))
		return -1;
	/* ddf layouts: NULL slots are zero blocks already */
	if (parity_recover(nslots, h->C, slots, pbuf, h->level == 6 ? qbuf : NULL, lost[0],
			   nlost > 1 ? lost[1] : PARITY_NONE, work) != 0)
		return -1;
	*out = dst;
	*zero = all_zero(dst, h->C);
	return 0;
}

/* Chunks a hypothesis says are missing were credited the row's average
 * continuity; rebuild them from parity (with this geometry's P/Q and Q slot
 * order) and score what comes out instead: a wrong geometry rebuilds
 * noise.  Returns the correction, in the units of the seams. */
static double recon_evidence(const struct solver *S, const struct hyp *h)
{
	const struct dctx *c = S->c;
	if (!h->nmiss || h->use_virtual || !c->seam_ok || !S->ncut)
		return 0;
	struct smat *M = smat_get((struct solver *)S, h->C, h->D);
	if (!M || !M->avg_in || !M->nrows)
		return 0;
	struct layout_geom geo;
	struct stripe_map m;
	geom_of(h, &geo);
	size_t scr = (size_t)(h->n + 4) * h->C;
	uint8_t *scratch = aligned_alloc(64, scr);
	if (!scratch)
		return 0;
	double e = 0;
	for (int r = 0; r < M->nrows; r++) {
		int64_t head = M->O + (int64_t)r * (int64_t)h->C;
		if (head < (int64_t)h->D)
			continue;
		uint64_t st = ((uint64_t)head - h->D) / h->C;
		layout_map_stripe(&geo, st, &m);
		for (int d = 0; d < h->k; d++) {
			if (h->col_of_role[m.data_disk[d]] != MISS_COL)
				continue;
			const uint8_t *p;
			bool z;
			if (chunk_get(S, h, st, d, scratch, &p, &z))
				continue;
			double in = 0;
			if (!z)
				for (uint32_t x = SECT; x < h->C; x += SECT) {
					int64_t ax = head + x;
					if (ax < (int64_t)S->RS || ax >= (int64_t)S->RE)
						continue;
					float v = seam_at(c, p + x, p + x);
					if (v >= 0)
						in += v - c->seam_mu;
				}
			e += in * seam_weight() - M->avg_in[r];
		}
	}
	free(scratch);
	return e;
}

/* Do h and o read the same array content on what was sampled?  Compares
 * every array chunk the two place differently (rebuilding missing ones). */
static bool same_content(const struct solver *S, const struct hyp *h, const struct hyp *o)
{
	const struct dctx *c = S->c;
	if (h->D != o->D || h->level != o->level || h->n != o->n)
		return false;
	uint32_t C = h->C < o->C ? h->C : o->C;   /* compare at the smaller chunk */
	uint64_t end = 0;
	for (int w = 0; w < c->nwin; w++)
		if (h->D >= c->win[w].off && h->D < c->win[w].off + c->win[w].len)
			end = c->win[w].off + c->win[w].len;
	if (!end)
		return false;
	/* whole stripes of the larger chunk */
	uint32_t Cb = h->C > o->C ? h->C : o->C;
	uint64_t member_bytes = (end - h->D) / Cb * Cb;
	uint64_t array_bytes = member_bytes * (uint64_t)h->k;
	size_t scr = (size_t)(h->n + 4) * Cb;
	uint8_t *s1 = aligned_alloc(64, scr), *s2 = aligned_alloc(64, scr);
	bool same = s1 && s2;
	for (uint64_t a = 0; same && a < array_bytes; a += C) {
		uint64_t c1 = a / h->C, c2 = a / o->C;
		uint64_t st1 = c1 / (uint64_t)h->k, st2 = c2 / (uint64_t)o->k;
		int d1 = (int)(c1 % (uint64_t)h->k), d2 = (int)(c2 % (uint64_t)o->k);
		const uint8_t *p1, *p2;
		bool z1, z2;
		if (chunk_get(S, h, st1, d1, s1, &p1, &z1) || chunk_get(S, o, st2, d2, s2, &p2, &z2)) {
			same = false;
			break;
		}
		p1 += a % h->C;
		p2 += a % o->C;
		if (z1 && z2)
			continue;
		if (p1 != p2 && memcmp(p1, p2, C) != 0)
			same = false;
	}
	free(s1);
	free(s2);
	return same;
}

/* Same chunk placement, P/Q placement and Q slot order for every image
 * (then the two read the same array, whatever is missing). */
static bool same_mapping(const struct hyp *h, const struct hyp *o)
{
	if (h->C != o->C || h->D != o->D || h->level != o->level || h->n != o->n)
		return false;
	struct layout_geom g1, g2;
	struct stripe_map m1, m2;
	geom_of(h, &g1);
	geom_of(o, &g2);
	int per = h->n * (h->n - 1) * 2;
	for (int s = 0; s < per; s++) {
		layout_map_stripe(&g1, (uint64_t)s, &m1);
		layout_map_stripe(&g2, (uint64_t)s, &m2);
		for (int d = 0; d < h->k; d++)
			if (h->col_of_role[m1.data_disk[d]] != o->col_of_role[m2.data_disk[d]])
				return false;
		if (h->col_of_role[m1.p_disk] != o->col_of_role[m2.p_disk])
			return false;
		if (h->level == 6) {
			if (h->col_of_role[m1.q_disk] != o->col_of_role[m2.q_disk])
				return false;
			/* slot of the chunk each role carries must match, and the
			 * number of slots (ddf layouts weigh every disk) */
			if (m1.q_slots != m2.q_slots)
				return false;
			for (int d = 0; d < h->k; d++)
				if (m1.disk_slot[m1.data_disk[d]] != m2.disk_slot[m2.data_disk[d]])
					return false;
		}
	}
	return true;
}

/* ---------------- debugging (prototype only) ----------------
 * DETECT_DEBUG=1: print the kept hypotheses; DETECT_EVAL="level,layout,
 * chunk,offset,o0:o1:..." (order with m for missing): score that geometry
 * with every evidence source and print the breakdown. */
static void print_hyp(const char *tag, const struct hyp *h)
{
	fprintf(stderr, "%s L%d %-18s n%d C%-7u D%-9llu ord", tag, h->level, layout_name(h->level, h->layout), h->n,
		h->C, (unsigned long long)h->D);
	for (int r = 0; r < h->n; r++)
		fprintf(stderr, "%c%d", r ? ',' : ' ', h->col_of_role[r]);
	fprintf(stderr, "  sc %.1f ev %.1f = anc %.1f (%d ok %.0fb, %d bad, %d par) par %.1f (%d/%d) doff %.1f seam %.1f chunk %.1f%s\n",
		h->score, h->ev, h->e_anchor, h->anc_ok, h->anc_okw, h->anc_bad, h->anc_par, h->e_parity, h->par_ok,
		h->par_bad, h->e_doff, h->e_seam, h->e_chunk, h->refined ? " R" : "");
}

static void debug_hook(struct solver *S, const struct lvopt *opts, int nopt, struct tlist *L)
{
	const char *dbg = detect_getenv("DETECT_DEBUG"), *ev = detect_getenv("DETECT_EVAL");
	struct dctx *c = S->c;

	if (dbg) {
		fprintf(stderr, "class %d members %#x ndc %d:", c->par.cls, c->par.members, S->ndc);
		for (int i = 0; i < S->ndc; i++)
			fprintf(stderr, " %llu", (unsigned long long)S->dc[i]);
		fprintf(stderr, "\nanchors %d groups %d seam_ok %d d_lo %llu/%llu/%llu/%llu first_nz %llu pilot d0 %d d1 %d+%d d2 %d degen %d\n",
			c->nanc, c->ngrp, c->seam_ok, (unsigned long long)c->par.d_lo[0], (unsigned long long)c->par.d_lo[1],
			(unsigned long long)c->par.d_lo[2], (unsigned long long)c->par.d_lo[3],
			(unsigned long long)c->par.first_nz, c->par.n_d0, c->par.n_d1_ones, c->par.n_d1_other,
			c->par.n_d2, c->par.n_degen);
		for (int g = 0; g < c->ngrp; g++) {
			int n = 0;
			for (int i = 0; i < c->nanc; i++)
				n += c->anc[i].grp == g;
			fprintf(stderr, "  group %d %s: %d anchors\n", g, c->grp[g].desc, n);
		}
		fprintf(stderr, "seam region %llu..%llu cuts %d mu %.2f\n", (unsigned long long)S->RS,
			(unsigned long long)S->RE, S->ncut, c->seam_mu);
		int lim = atoi(dbg) > 1 ? atoi(dbg) : 20;
		for (int i = 0; i < S->nkeepR && i < lim; i++)
			print_hyp("  ", &S->keepR[i]);
		for (int i = 0; i < S->nkeep && i < (detect_getenv("DETECT_S1") ? atoi(detect_getenv("DETECT_S1")) : 3); i++)
			print_hyp("  stage1", &S->keep[i]);
	}
	if (!ev)
		return;
	int level, layout;
	unsigned long long C, D;
	char ord[256];
	if (sscanf(ev, "%d,%d,%llu,%llu,%255s", &level, &layout, &C, &D, ord) != 5)
		return;
	for (int oi = 0; oi < nopt; oi++) {
		const struct lvopt *lo = &opts[oi];
		if (lo->level != level && !(level == 5 && lo->level == 4 && layout == 5))
			continue;
		struct hyp h;
		memset(&h, 0, sizeof(h));
		h.level = level;
		h.layout = layout;
		h.n = lo->n;
		h.k = h.n - (level == 6 ? 2 : 1);
		h.C = (uint32_t)C;
		h.D = D;
		h.nmiss = lo->nmiss;
		h.use_virtual = lo->use_virtual;
		int cols[MAXD], nc = hyp_cols(S, &h, cols), pi[MAXD];
		char ordc[256];
		memcpy(ordc, ord, sizeof(ordc));
		char *tok = strtok(ordc, ":");
		int r = 0;
		uint64_t used = 0;
		while (tok && r < h.n) {
			int want = tok[0] == 'm' ? MISS_COL : atoi(tok);
			pi[r] = -1;
			for (int ci = 0; ci < nc; ci++) {
				int cc = cols[ci];
				if (cc == c->nimg)
					cc = MISS_COL;
				if (cc == want && !(used >> ci & 1)) {
					pi[r] = ci;
					used |= 1ull << ci;
					break;
				}
			}
			tok = strtok(NULL, ":");
			r++;
		}
		if (r != h.n) {
			fprintf(stderr, "DETECT_EVAL: order has %d roles, option n=%d\n", r, h.n);
			continue;
		}
		bool bad = false;
		for (int x = 0; x < h.n; x++)
			bad = bad || pi[x] < 0;
		if (bad) {
			fprintf(stderr, "DETECT_EVAL: order does not fit the columns\n");
			continue;
		}
		anchors_map(S, h.C, h.D, h.k, h.use_virtual, L);
		if (S->have_tar)
			tar_chase(S, h.C, h.D, h.k, h.use_virtual, L);
		struct smat *M = smat_get(S, h.C, h.D);
		struct pairs P = { 0 };
		pairs_build(S, &h, M, cols, nc, &P);
		int ci = 0, di = -1;
		for (int x = 0; x < NCHUNK; x++)
			if (chunk_sizes[x] == h.C)
				ci = x;
		for (int x = 0; x < S->ndc; x++)
			if (S->dc[x] == h.D)
				di = x;
		(void)ci;
		h.refined = true;
		S->debug_bad = true;
		eval_full(S, &h, L, &P, cols, nc, pi);
		S->debug_bad = false;
		print_hyp("EVAL", &h);
		fprintf(stderr, "  (D candidate: %s)\n", di >= 0 ? "yes" : "NO");
		pairs_free(&P);
	}
}

/* Rows for struct prop_row, up to X0_MAX spread over the sample.
 * Returns 0 or -ENOMEM. */
static int collect_prop_rows(struct solver *S)
{
	const struct dctx *c = S->c;
	const struct gf *g = c->gf;
	int cap = X0_MAX;

	S->pr = malloc(sizeof(*S->pr) * (size_t)cap);
	if (!S->pr)
		return -ENOMEM;
	for (int i = 0; i < c->par.nsr && S->npr < cap; i++) {
		if (!(c->par.sr_fl[i] & SF_NZ) || (c->par.sr_fl[i] & SF_X0))
			continue;
		uint64_t o = c->par.sr_off[i];
		int cols[2], nzc = 0;
		for (int j = 0; j < c->nimg && nzc <= 2; j++) {
			if (!(c->par.members >> j & 1))
				continue;
			int z = sp_zero(c, j, o, SECT);
			if (z == 0) {
				if (nzc < 2)
					cols[nzc] = j;
				nzc++;
			}
		}
		if (nzc != 2)
			continue;
		const uint8_t *pa = sp(c, cols[0], o, SECT), *pb = sp(c, cols[1], o, SECT);
		if (!pa || !pb)
			continue;
		int k0 = 0;
		while (k0 < (int)SECT && !pa[k0])
			k0++;
		if (k0 == (int)SECT || !pb[k0])
			continue;
		uint8_t f = g->mul[pb[k0]][g->inv[pa[k0]]];
		if (f == 1)
			continue;
		bool prop = true, fill = true;
		for (unsigned x = 0; x < SECT && prop; x++) {
			prop = g->mul[f][pa[x]] == pb[x];
			fill = fill && pa[x] == pa[0];
		}
		if (!prop || fill)
			continue;
		struct prop_row *r = &S->pr[S->npr++];
		r->off = o;
		r->a = (int8_t)cols[0];
		r->b = (int8_t)cols[1];
		r->e = g->log[f];
	}
	return 0;
}

/* ---------------- main ---------------- */

int solve(struct dctx *c)
{
	struct solver S;
	struct lvopt opts[8];
	struct tlist L = { 0 };
	int rc = 0;
	struct detect_result *res = c->res;

	memset(&S, 0, sizeof(S));
	S.c = c;
	for (int i = 0; i < c->nimg; i++)
		if (c->par.members >> i & 1)
			S.colimg[S.ncolimg++] = i;
	S.keep = calloc(KEEP, sizeof(*S.keep));
	S.keepR = calloc(KEEP, sizeof(*S.keepR));
	if (!S.keep || !S.keepR)
		return -ENOMEM;
	/* tar present? */
	for (int w = 0; w < c->nwin && !S.have_tar; w++)
		for (int img = 0; img < c->nimg && !S.have_tar; img++)
			for (uint64_t o = 0; o + SECT <= c->win[w].len; o += SECT) {
				uint64_t dl;
				const uint8_t *h = c->win[w].buf[img] + o;
				if (h[257] == 'u' && tar_header_valid(h, &dl)) {
					S.have_tar = true;
					break;
				}
			}
	/* anchors by group */
	S.gidx = malloc(sizeof(int) * ((size_t)c->nanc + 1));
	if (!S.gidx) {
		rc = -ENOMEM;
		goto done;
	}
	{
		int k = 0;
		for (int g = 0; g < c->ngrp; g++) {
			S.gstart[g] = k;
			for (int i = 0; i < c->nanc; i++)
				if (c->anc[i].grp == g)
					S.gidx[k++] = i;
		}
		for (int g = c->ngrp; g <= MAXGRP; g++)
			S.gstart[g] = k;
	}
	/* copies: the same structure (group, offset) at the same image offset
	 * on several images is a data chunk and its P (or Q) copy in a row
	 * with one nonzero data chunk: such votes are split */
	S.copies = calloc((size_t)c->nanc + 1, 1);
	if (!S.copies) {
		rc = -ENOMEM;
		goto done;
	}
	for (int g = 0; g < c->ngrp; g++) {
		const int *ga = S.gidx + S.gstart[g];
		int gn = S.gstart[g + 1] - S.gstart[g];
		for (int x = 0; x < gn; x++) {
			const struct anchor *a = &c->anc[ga[x]];
			int n = 1;
			for (int y = 0; y < gn && n < 255; y++) {
				const struct anchor *b = &c->anc[ga[y]];
				if (y != x && b->off == a->off && b->img != a->img && b->rel[0] == a->rel[0])
					n++;
			}
			S.copies[ga[x]] = (uint8_t)n;
		}
	}
	/* rows whose member XOR is zero, for RAID6 hypotheses missing two */
	{
		int cnt = 0;
		for (int i = 0; i < c->par.nsr; i++)
			cnt += (c->par.sr_fl[i] & (SF_NZ | SF_X0)) == (SF_NZ | SF_X0);
		if (cnt) {
			int step = cnt / X0_MAX + 1, k = 0;
			S.x0 = malloc(sizeof(uint64_t) * (size_t)(cnt / step + 1));
			if (!S.x0) {
				rc = -ENOMEM;
				goto done;
			}
			for (int i = 0; i < c->par.nsr; i++)
				if ((c->par.sr_fl[i] & (SF_NZ | SF_X0)) == (SF_NZ | SF_X0) && k++ % step == 0)
					S.x0[S.nx0++] = c->par.sr_off[i];
		}
	}
	rc = collect_prop_rows(&S);
	if (rc)
		goto done;
	gen_dcands(&S);
	int nopt = level_options(&S, opts);
	if (S.ndc == 0 || nopt == 0) {
		res->verdict = DETECT_AMBIGUOUS;
		fmt_err(res->reason, sizeof(res->reason), "%s",
		     nopt == 0 ? "no RAID level fits the images and the hints"
			       : "no data offset fits the sample and the hints");
		goto done;
	}
	/* RAID6 interpretations */
	if (c->par.nrows && (c->par.cls == PC_R6 || c->par.cls == PC_R6M1)) {
		S.ri = calloc((size_t)c->par.nrows, sizeof(*S.ri));
		if (!S.ri) {
			rc = -ENOMEM;
			goto done;
		}
		int n = opts[0].n;
		for (int i = 0; i < c->par.nrows; i++)
			interpret_row(c, &c->par.rows[i], n, &S.ri[i]);
	}
	/* chunk evidence */
	for (int ci = 0; ci < NCHUNK; ci++)
		for (int di = 0; di < S.ndc; di++)
			S.chunk_e[ci][di] = chunk_evidence(&S, chunk_sizes[ci], S.dc[di]);
	/* stage 1: votes + assignment for every geometry */
	for (int oi = 0; oi < nopt; oi++) {
		const struct lvopt *lo = &opts[oi];
		int k = lo->n - (lo->level == 6 ? 2 : 1);
		for (int ci = 0; ci < NCHUNK; ci++) {
			uint32_t C = chunk_sizes[ci];
			if (c->h.chunk_bytes && C != c->h.chunk_bytes)
				continue;
			for (int di = 0; di < S.ndc; di++) {
				uint64_t D = S.dc[di];
				rc = anchors_map(&S, C, D, k, lo->use_virtual, &L);
				if (!rc && S.have_tar)
					rc = tar_chase(&S, C, D, k, lo->use_virtual, &L);
				if (rc)
					goto done;
				for (int li = 0; li < lo->nlayouts; li++) {
					rc = try_geometry(&S, lo, lo->layouts[li], C, D, &L, false, S.chunk_e[ci][di], false);
					if (rc)
						goto done;
				}
			}
		}
	}
	qsort(S.keep, (size_t)S.nkeep, sizeof(*S.keep), cmp_hyp);
	/* stage 2: seams.  Refine the top (C, D) pairs with every layout. */
	if (c->seam_ok || true) {
		struct { uint32_t C; uint64_t D; int oi; } sel[32];
		int nsel = 0;
		/* the three best data offsets (by their best stage-1 hypothesis),
		 * for each its three best chunk sizes */
		/* the best data offsets by their best stage-1 hypothesis: three,
		 * and up to six while they are within 64 bits of the best */
		uint64_t bestd[6];
		int nbd = 0;
		for (int i = 0; i < S.nkeep && nbd < 6; i++) {
			bool seen = false;
			for (int j = 0; j < nbd; j++)
				seen = seen || bestd[j] == S.keep[i].D;
			if (seen)
				continue;
			if (nbd >= 3 && S.keep[i].score < S.keep[0].score - 64)
				break;
			bestd[nbd++] = S.keep[i].D;
		}
		/* and the offsets the rows themselves favour (parity, leading
		 * zeros) */
		{
			double dev[MAXDC], best = -1e300;
			int nt = class_notion(c->par.cls);
			for (int x = 0; x < S.ndc; x++) {
				int inc, cons;
				dev[x] = doff_evidence(c, nt, S.dc[x], &inc, &cons) + lead_evidence(c, S.dc[x]);
				if (dev[x] > best)
					best = dev[x];
			}
			for (int x = 0; x < S.ndc && nbd < 6; x++) {
				bool seen = false;
				for (int j = 0; j < nbd; j++)
					seen = seen || bestd[j] == S.dc[x];
				if (!seen && dev[x] >= best - 1e-9)
					bestd[nbd++] = S.dc[x];
			}
		}
		for (int b = 0; b < nbd; b++) {
			int got = 0;
			for (int i = 0; i < S.nkeep && got < 3 && nsel < 26; i++) {
				const struct hyp *h = &S.keep[i];
				if (h->D != bestd[b])
					continue;
				bool dup = false;
				for (int j = 0; j < nsel; j++)
					dup = dup || (sel[j].C == h->C && sel[j].D == h->D);
				if (dup)
					continue;
				sel[nsel].C = h->C;
				sel[nsel].D = h->D;
				sel[nsel].oi = -1;
				nsel++;
				got++;
			}
		}
		/* for the two best data offsets, the chunk sizes with the most
		 * member-internal discontinuity at their boundaries */
		for (int b = 0; b < nbd && b < 2; b++) {
			int di = 0;
			for (int x = 0; x < S.ndc; x++)
				if (S.dc[x] == bestd[b])
					di = x;
			for (int t = 0; t < 2; t++) {
				int bc = -1;
				for (int ci = 0; ci < NCHUNK; ci++) {
					if (c->h.chunk_bytes && chunk_sizes[ci] != c->h.chunk_bytes)
						continue;
					bool taken = false;
					for (int j = 0; j < nsel; j++)
						taken = taken || (sel[j].C == chunk_sizes[ci] && sel[j].D == bestd[b]);
					if (taken)
						continue;
					if (bc < 0 || S.chunk_e[ci][di] > S.chunk_e[bc][di])
						bc = ci;
				}
				if (bc < 0 || S.chunk_e[bc][di] <= 0 || nsel >= 29)
					break;
				sel[nsel].C = chunk_sizes[bc];
				sel[nsel].D = bestd[b];
				sel[nsel].oi = -1;
				nsel++;
			}
		}
		/* neighbours of the best: half and double chunk */
		if (S.nkeep && nsel < 30) {
			const struct hyp *b = &S.keep[0];
			uint32_t alt[2] = { b->C / 2, b->C * 2 };
			for (int a = 0; a < 2 && nsel < 32; a++) {
				if (alt[a] < chunk_sizes[0] || alt[a] > chunk_sizes[NCHUNK - 1])
					continue;
				if (c->h.chunk_bytes && alt[a] != c->h.chunk_bytes)
					continue;
				sel[nsel].C = alt[a];
				sel[nsel].D = b->D;
				sel[nsel].oi = -1;
				nsel++;
			}
		}
		/* the seam region: every refined hypothesis is judged on the same
		 * cut points, past the largest data offset among them (so that
		 * they are array data for all of them) */
		uint64_t RS0 = seam_region_start(c);
		/* start where the leading hypothesis puts the array, when enough
		 * of the sample follows; hypotheses with a larger offset skip the
		 * rows before theirs */
		for (int b = 0; b < nbd; b++) {
			uint64_t d = bestd[b], have = 0;
			for (uint64_t x = d; x < d + SEAM_REGION && sp(c, 0, x, 4096); x += 4096)
				have += 4096;
			if (have >= (1u << 20)) {
				RS0 = d > RS0 || b == 0 ? d : RS0;
				break;
			}
		}
		if (detect_getenv("DETECT_DEBUG")) {
			fprintf(stderr, "refine:");
			for (int si = 0; si < nsel; si++)
				fprintf(stderr, " %uK@%llu", sel[si].C >> 10, (unsigned long long)sel[si].D);
			fprintf(stderr, "\n");
		}
		rc = grid_build(&S, RS0 / SECT * SECT);
		if (rc)
			goto done;
		for (int si = 0; si < nsel; si++) {
			for (int oi = 0; oi < nopt; oi++) {
				const struct lvopt *lo = &opts[oi];
				int k = lo->n - (lo->level == 6 ? 2 : 1);
				int ci = 0, di = 0;
				for (int x = 0; x < NCHUNK; x++)
					if (chunk_sizes[x] == sel[si].C)
						ci = x;
				for (int x = 0; x < S.ndc; x++)
					if (S.dc[x] == sel[si].D)
						di = x;
				rc = anchors_map(&S, sel[si].C, sel[si].D, k, lo->use_virtual, &L);
				if (!rc && S.have_tar)
					rc = tar_chase(&S, sel[si].C, sel[si].D, k, lo->use_virtual, &L);
				if (rc)
					goto done;
				for (int li = 0; li < lo->nlayouts; li++) {
					rc = try_geometry(&S, lo, lo->layouts[li], sel[si].C, sel[si].D, &L, true,
							  S.chunk_e[ci][di], false);
					if (rc)
						goto done;
				}
			}
		}
	}
	qsort(S.keepR, (size_t)S.nkeepR, sizeof(*S.keepR), cmp_hyp);
	/* stage 3: the best geometries again, with every transposition of
	 * their order as an alternative (for an honest margin) */
	{
		struct hyp top[3];
		int ntop = 0;
		for (int i = 0; i < S.nkeepR && ntop < 3; i++) {
			const struct hyp *h = &S.keepR[i];
			if (!h->refined)
				continue;
			bool dup = false;
			for (int j = 0; j < ntop; j++)
				dup = dup || (top[j].level == h->level && top[j].n == h->n && top[j].layout == h->layout &&
					      top[j].C == h->C && top[j].D == h->D);
			if (!dup)
				top[ntop++] = *h;
		}
		for (int i = 0; i < ntop; i++) {
			const struct lvopt *lo = NULL;
			for (int o = 0; o < nopt; o++)
				if (opts[o].level == top[i].level && opts[o].n == top[i].n)
					lo = &opts[o];
			if (!lo)
				continue;
			rc = anchors_map(&S, top[i].C, top[i].D, top[i].k, lo->use_virtual, &L);
			if (!rc && S.have_tar)
				rc = tar_chase(&S, top[i].C, top[i].D, top[i].k, lo->use_virtual, &L);
			if (!rc)
				rc = try_geometry(&S, lo, top[i].layout, top[i].C, top[i].D, &L, true, 0, true);
			/* and the transpositions of the order that geometry kept best
			 * (the search's own start may lie a swap or two away) */
			if (!rc)
				rc = swaps_around(&S, &top[i], &L);
			if (rc)
				goto done;
		}
	}
	qsort(S.keepR, (size_t)S.nkeepR, sizeof(*S.keepR), cmp_hyp);
	/* stage 4: the best hypotheses with missing chunks are judged on what
	 * their rebuilt chunks look like */
	{
		int done_n = 0;
		for (int i = 0; i < S.nkeepR && done_n < 24; i++) {
			struct hyp *h = &S.keepR[i];
			if (!h->nmiss || h->use_virtual)
				continue;
			double e = recon_evidence(&S, h);
			h->e_seam += e;
			h->ev += e;
			h->score += e;
			done_n++;
		}
		/* the rest keep the average credit; only the judged ones compete at
		 * the top */
		qsort(S.keepR, (size_t)S.nkeepR, sizeof(*S.keepR), cmp_hyp);
	}
	debug_hook(&S, opts, nopt, &L);

	/* ---------------- candidates and verdict ---------------- */
	{
		if (S.nkeepR == 0) {
			res->verdict = DETECT_AMBIGUOUS;
			fmt_err(res->reason, sizeof(res->reason), "no geometry could be scored");
			goto done;
		}
		const struct hyp *best = &S.keepR[0];
		const struct hyp *alt = NULL;
		int nout = 0;
		fill_candidate(&S, best, &res->cand[nout++]);
		int checks = 0;
		for (int i = 1; i < S.nkeepR; i++) {
			const struct hyp *h = &S.keepR[i];
			if (same_mapping(best, h))
				continue;
			/* a geometry that reads the same bytes everywhere (the sample
			 * is the whole image) is the same answer */
			if (!alt && c->whole && checks++ < 48 && same_content(&S, best, h))
				continue;
			if (!alt)
				alt = h;
			bool dup = false;
			for (int j = 1; j < nout; j++) {
				const struct detect_candidate *o = &res->cand[j];
				dup = dup || (o->level == h->level && o->layout == h->layout && o->chunk_bytes == h->C &&
					      o->data_offset == h->D);
			}
			if (!dup && nout < DETECT_MAX_CANDIDATES)
				fill_candidate(&S, h, &res->cand[nout++]);
		}
		res->ncand = nout;
		double margin = alt ? best->ev - alt->ev : 1e9;
		double support = best->anc_okw + best->par_ok * 0.25 + (best->e_seam > 0 ? best->e_seam : 0);
		char why[400] = "";
		if (alt) {
			char a1[32], a2[32];
			detect_fmt_size(a1, sizeof(a1), alt->C);
			detect_fmt_size(a2, sizeof(a2), alt->D);
			fmt_err(why, sizeof(why), "next best (%s, chunk %s, data offset %s) is %.1f bits behind",
			     layout_name(alt->level, alt->layout), a1, a2, margin);
		}
		/* RAID6 with two members missing leans on rebuilt chunks, which
		 * only the leading hypotheses are judged on: demand more */
		double tc = T_CERTAIN, tl = T_LIKELY;
		if (best->level == 6 && best->nmiss >= 2) {
			tc *= 4;
			tl *= 4;
		}
		if (margin >= tc && support >= 40) {
			res->verdict = DETECT_CERTAIN;
			fmt_err(res->reason, sizeof(res->reason), "one geometry explains the evidence; %s",
			     alt ? why : "no alternative fits");
		} else if (margin >= tl && support >= 16) {
			res->verdict = DETECT_LIKELY;
			fmt_err(res->reason, sizeof(res->reason), "best geometry clearly ahead; %s", why);
		} else {
			res->verdict = DETECT_AMBIGUOUS;
			const char *what;
			if (support < 16)
				what = c->par.cls == PC_NONE
					       ? "no file-system structure or content continuity ties chunks to array positions"
					       : "the content gives no evidence of rotation or order (random or empty data?)";
			else
				what = "other geometries explain the evidence almost as well";
			fmt_err(res->reason, sizeof(res->reason), "%s; %s", what, why);
		}
	}
done:
	free(L.t);
	free(S.ri);
	for (int i = 0; i < S.nsm; i++) {
		free(S.sm[i].t0);
		free(S.sm[i].t1);
		free(S.sm[i].in);
		free(S.sm[i].avg_in);
		free(S.sm[i].avg_t);
	}
	for (int a = 0; a < MAXC; a++)
		free(S.ps[a]);
	free(S.keep);
	free(S.keepR);
	free(S.gidx);
	free(S.copies);
	free(S.x0);
	free(S.pr);
	return rc;
}
