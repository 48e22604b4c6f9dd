/* detect.h - find the geometry of a RAID4/5/6 array whose metadata is gone,
 * from the member images alone (raidimg detect).
 *
 * Pure code: every byte is read through the caller's struct dev_reader
 * callbacks, no file I/O, no global state, no threads.  Reads are bounded by
 * detect_hints.max_read per image and counted (detect_result.bytes_read).
 *
 * Vocabulary is md's: member, role, stripe, chunk, data_offset, P, Q.
 * "image" is one of the readers given, numbered 0..nimg-1 in the order given;
 * candidate.order[role] names the image holding that role, or -1 when the
 * role is missing (absent member, rebuilt from parity).
 */
#ifndef RAIDIMG_DETECT_H
#define RAIDIMG_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "dev_reader.h"

enum {
	DETECT_MAX_IMAGES = 32,      /* readers accepted by detect_run */
	DETECT_MAX_DISKS = 34,       /* raid_disks of a candidate (images + 2 missing) */
	DETECT_MAX_CANDIDATES = 8,   /* candidates returned, best first */
	DETECT_MAX_EVIDENCE = 10,    /* evidence lines per candidate */
	DETECT_TEXT = 200,           /* bytes of one evidence / why line */
};

/* What the caller already knows; zero/negative fields mean "unknown". */
struct detect_hints {
	int level;               /* 4, 5 or 6; 0 = any */
	int devices;             /* raid_disks (present + missing); 0 = any */
	uint32_t chunk_bytes;    /* power of two; 0 = any */
	int64_t data_offset;     /* bytes, multiple of 512; -1 = any */
	uint64_t max_read;       /* bytes read per image at most; 0 = default (32 MiB) */
};

/* Fill h with "nothing known". */
void detect_hints_init(struct detect_hints *h);

enum detect_verdict {
	DETECT_CERTAIN = 0,      /* one geometry explains the evidence, all others are refuted */
	DETECT_LIKELY = 1,       /* the best one is clearly ahead, but not by a refuting margin */
	DETECT_AMBIGUOUS = 2,    /* the evidence cannot decide (reason says why) */
};

struct detect_candidate {
	int level;                       /* 4, 5 or 6 */
	int layout;                      /* md layout number (layout.h enum md_layout) */
	int raid_disks;
	uint32_t chunk_bytes;
	uint64_t data_offset;            /* bytes, the same on every member */
	int order[DETECT_MAX_DISKS];     /* role -> image index, -1 = missing */
	double score;                    /* higher is better; comparable within one result */
	int nevidence;
	char evidence[DETECT_MAX_EVIDENCE][DETECT_TEXT];
};

struct detect_excluded {
	int image;
	char why[DETECT_TEXT];
};

/* The answer.  Caller-owned (it is large: allocate it, do not put it on a
 * small stack); detect_run fills every field. */
struct detect_result {
	enum detect_verdict verdict;
	char reason[512];
	int ncand;
	struct detect_candidate cand[DETECT_MAX_CANDIDATES];
	int nexcluded;
	struct detect_excluded excluded[DETECT_MAX_IMAGES];
	int nimg;
	uint64_t bytes_read[DETECT_MAX_IMAGES];   /* per image */
	uint64_t bytes_read_max;                   /* the largest of them */
};

/* Find the geometry of the array the nimg images (2..DETECT_MAX_IMAGES) were
 * members of.  hints may be NULL.  Returns 0 with *res filled (possibly with
 * verdict ambiguous and ncand 0 when nothing fits), or -errno: -EINVAL for
 * bad arguments, -ENOMEM, or a reader's error (err names the image and the
 * offset).  err/errlen: caller's buffer for the message. */
int detect_run(const struct dev_reader *devs, int nimg, const struct detect_hints *hints,
	       struct detect_result *res, char *err, size_t errlen);

/* Names for output. */
const char *detect_verdict_name(enum detect_verdict v);

/* The raidimg array options of a candidate, e.g. "--level 5 --layout
 * left-symmetric --chunk 64K --order 2,0,missing,1 --data-offset 1M", as
 * argv-style words written into words[0..*nwords) (each points into buf).
 * buf: caller's, at least 512 bytes.  Returns 0 or -ENOSPC. */
int detect_array_args(const struct detect_candidate *c, char *buf, size_t buflen,
		      const char **words, int maxwords, int *nwords);

#endif
