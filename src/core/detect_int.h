/* detect_int.h - internals shared by the detect_*.c modules (not installed).
 *
 * One struct dctx holds everything a detect_run() call owns; it is created
 * and freed by detect_run (detect.c).  Modules:
 *   detect_gf.c      GF(2^8) tables and the null space of a byte matrix
 *   detect_sample.c  the bounded read plan: windows read at the same offsets
 *                    on every image
 *   detect_parity.c  parity evidence: member set, level class, per-row P/Q
 *   detect_fs.c      position evidence ("anchors") from file systems,
 *                    partition tables, volume headers
 *   detect_seam.c    content continuity across chunk boundaries
 *   detect_solve.c   hypotheses, role assignment, scoring, verdict
 */
#ifndef RAIDIMG_DETECT_INT_H
#define RAIDIMG_DETECT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detect.h"
#include "layout.h"
#include "le.h"
#include "util.h"

#define MAXI DETECT_MAX_IMAGES
#define MAXC (DETECT_MAX_IMAGES + 1)   /* image columns incl. the virtual one */
#define MAXD DETECT_MAX_DISKS
#define DW_MAX 12                       /* sample windows */
#define SECT 512u

/* ---------------- GF(2^8), md's field (poly 0x11d, generator 2) ---------------- */
struct gf {
	uint8_t exp[512];
	uint8_t log[256];
	uint8_t inv[256];
	uint8_t mul[256][256];
};
void gf_init_tables(struct gf *g);

/* Null space of the len x ncols byte matrix whose column j is cols[j][0..len)
 * (only bytes i with i % stride == 0 are used for the elimination; every
 * vector found is then checked over all len bytes).  Writes up to maxdim
 * basis vectors (ncols bytes each, in out[v*MAXC + j]).  Returns the
 * dimension (0..ncols), or -1 if a vector failed the full check (the caller
 * retries with stride 1). */
int gf_nullspace(const struct gf *g, const uint8_t *const *cols, int ncols, size_t len,
		 size_t stride, uint8_t *out, int maxdim);

/* ---------------- samples ---------------- */
struct dwin {
	uint64_t off, len;          /* image offsets [off, off+len) */
	uint8_t *buf[MAXC];         /* len bytes each (zeros past an image's end);
	                               buf[nimg] is the virtual member when built */
	uint64_t *nzb[MAXC];        /* bit per 512-byte sector: nonzero */
};

/* ---------------- anchors (position evidence) ---------------- */
enum anchor_kind {
	AK_MBR, AK_GPT, AK_GPT_ENT, AK_EXT_SB, AK_NTFS_BOOT, AK_NTFS_FILE, AK_FAT_BOOT,
	AK_FAT_FSINFO, AK_FAT_TABLE, AK_FAT_DIR, AK_XFS_SB, AK_XFS_AGHDR, AK_XFS_BLK,
	AK_XFS_INODE, AK_LVM_LABEL, AK_LVM_MDA, AK_LUKS, AK_TAR, AK_EXT_META, AK_NKINDS
};
const char *anchor_kind_name(int kind);

#define ANC_MAXREL 8
struct anchor {
	int img;                    /* image (or nimg: the virtual member) */
	uint64_t off;               /* image offset where it was found */
	int grp;                    /* group: one file system / disk label instance */
	uint8_t kind;               /* enum anchor_kind */
	uint8_t nrel;
	int64_t rel[ANC_MAXREL];    /* possible offsets from the group's base */
	float w;                    /* weight in bits */
};

enum group_type { G_DISK, G_EXT, G_NTFS, G_FAT, G_XFS, G_LVM, G_LUKS, G_TAR, G_NTYPES };

struct agroup {
	int type;                   /* enum group_type */
	uint8_t id[16];             /* uuid / serial identifying the instance */
	int idlen;
	bool base_fixed;            /* base is array offset 0 (a disk label) */
	char desc[64];              /* "ext4 (4K blocks)" ... */
	/* file-system parameters, for the chase and for descriptions */
	uint32_t bs;                /* block / cluster size */
	uint64_t size;              /* FS size in bytes when known */
	uint32_t p[8];              /* type specific; p[7]: anchors so far */
	uint32_t q[8];              /* more type specific */
	uint8_t lbl[16];            /* FAT volume label */
};

#define MAXGRP 64
#define MAXPART 16

/* ---------------- parity ---------------- */
enum parity_class {
	PC_UNKNOWN = 0,
	PC_NONE,        /* no row relation: RAID5 missing one, RAID6 missing two */
	PC_XOR,         /* XOR of the member set is zero: RAID4/5 complete */
	PC_R6,          /* two relations: RAID6 complete */
	PC_R6M1,        /* one relation, not always plain XOR: RAID6 missing one */
};

/* One GF-analysed 512-byte row (same image offset on every image). */
struct prow {
	uint64_t off;
	uint32_t nz;                /* bit j: image j nonzero here */
	int8_t dim;                 /* null space dimension over nonzero member columns;
	                               3 = degenerate (more than 2) */
	uint8_t v[2][MAXI];         /* basis (first two vectors) */
};

/* per 512-byte sector row flags */
enum { SF_NZ = 1, SF_X0 = 2, SF_XQ = 4, SF_GF = 8, SF_GREL = 16 };

/* consistency notions, one per kind of hypothesis */
enum parity_notion {
	PN_R5 = 0,      /* RAID4/5 complete: XOR of members is zero */
	PN_R5M,         /* RAID4/5 missing one: only "consistent" counts (XOR zero) */
	PN_R6,          /* RAID6 complete: XOR of members is zero or equals one member */
	PN_R6M1,        /* RAID6 missing one: a GF relation (GF rows only) */
	PN_NONE,        /* RAID6 missing two: no evidence */
	PN_COUNT
};

struct parity_info {
	int cls;                    /* enum parity_class */
	uint32_t members;           /* bit j: image j takes part in the relations */
	uint32_t zero_excluded;     /* images left out for being zero where the others hold data */
	int nmembers;
	int rows_inf, rows_rel;     /* informative rows analysed, rows with a relation */
	int n_d0, n_d1_ones, n_d1_other, n_d2, n_degen;   /* pilot counts (members only) */
	uint64_t first_nz;          /* first row (image offset) nonzero on some member */
	uint64_t d_lo[PN_COUNT];    /* per notion: data offset >= this */
	struct prow *rows;          /* GF rows, sorted by offset */
	int nrows, crows;
	/* sector rows in offset order (windows deduplicated), prefix counts per notion */
	int nsr;
	uint64_t *sr_off;
	uint8_t *sr_fl;
	int *inc_after[PN_COUNT];   /* contradicting nonzero rows at index >= i */
	int *cons_before[PN_COUNT]; /* consistent nonzero rows at index < i */
	int inc_total[PN_COUNT];
};

/* ---------------- seams ---------------- */
struct bloom {
	uint64_t *bits;
	uint64_t nbits;             /* power of two */
};

/* ---------------- the context ---------------- */
struct dctx {
	int nimg;
	const struct dev_reader *dev;
	struct detect_hints h;
	uint64_t size[MAXI];
	uint64_t maxsize, minsize;
	uint64_t bytes_read[MAXI];
	bool whole;                 /* the windows cover every image completely */

	int nwin;
	struct dwin win[DW_MAX];
	bool have_virtual;          /* win[].buf[nimg] holds the XOR of all members */

	struct gf *gf;
	struct parity_info par;

	struct anchor *anc;
	int nanc, canc;
	struct agroup grp[MAXGRP];
	int ngrp;
	uint64_t part[MAXPART];     /* partition starts (bytes), from any label found */
	int npart;

	struct bloom bl;
	bool seam_ok;               /* the model has enough content to judge seams */
	float seam_mu;              /* mean continuity inside members (the baseline) */

	/* results of the solver */
	struct detect_result *res;
	char *err;
	size_t errlen;
};

/* detect_sample.c */
int sample_read(struct dctx *c);
/* Pointer to image bytes [off, off+len) if one window holds them, else NULL. */
const uint8_t *sp(const struct dctx *c, int img, uint64_t off, size_t len);
/* 1 if image bytes [off, off+len) (512-aligned) are all zero, 0 if not, -1 not sampled */
int sp_zero(const struct dctx *c, int img, uint64_t off, uint64_t len);
int sample_nzmap(struct dctx *c, int img);
void sample_free(struct dctx *c);
int sample_build_virtual(struct dctx *c);

/* detect_parity.c */
int parity_analyse(struct dctx *c);
void parity_free(struct parity_info *p);
/* D-score helpers: rows contradicting parity at >= D; consistent nonzero rows < D */
void parity_rows_around(const struct parity_info *p, int notion, uint64_t D, int *inc_after,
			int *cons_before);

/* detect_fs.c */
int anchors_scan(struct dctx *c);
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t crc32_zlib(uint32_t crc, const void *buf, size_t len);
bool tar_header_valid(const uint8_t *h, uint64_t *datalen);
int fs_group_find_or_add(struct dctx *c, int type, const uint8_t *id, int idlen, bool *isnew);
int anchor_add(struct dctx *c, int img, uint64_t off, int grp, int kind, const int64_t *rel,
	       int nrel, float w);

/* detect_seam.c */
int seam_build(struct dctx *c);
void seam_free(struct dctx *c);
/* continuity of the 16 bytes around image offset x on image img: -1 unknown, else
   hits of the seam-spanning grams (0..7) */
float seam_at(const struct dctx *c, const uint8_t *tail_end, const uint8_t *head);
float cont_at(const struct dctx *c, int img, uint64_t off);

/* detect_solve.c */
int solve(struct dctx *c);
int detect_row_interpret(const struct dctx *c, const struct prow *r, int n, int *p, int *q, int *slot);

/* misc */
void detect_fmt_size(char *buf, size_t len, uint64_t bytes);
static inline bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* (sync-detect.sh) the prototype's debug switches read the environment and
 * print to stderr; raidimg's core is pure: they are off unless built with
 * -DDETECT_DEBUG_HOOKS */
#ifdef DETECT_DEBUG_HOOKS
#include <stdlib.h>
static inline const char *detect_getenv(const char *name) { return getenv(name); }
#else
static inline const char *detect_getenv(const char *name) { (void)name; return NULL; }
#endif

#endif
