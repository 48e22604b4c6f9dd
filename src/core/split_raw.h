/* split_raw.h - a raw image split into numbered pieces: NAME.001, NAME.002, ...
 *
 * Forensic imagers write a disk as equal pieces (FTK Imager "Raw (dd)" with a
 * fragment size: NAME.001, NAME.002, ...; dc3dd ofs=NAME.000 ofsz=...:
 * NAME.000, NAME.001, ...; `split --numeric-suffixes=1 -a 3 disk NAME.`).
 * Given the first piece, this finds its siblings in order and checks them:
 * no gap in the numbering, every piece but the last of the same size, no
 * empty piece.  It never opens a piece: names and sizes only.
 *
 * The logic is pure (split_raw_find over a list of directory entries) so it
 * can be tested without files; io/source_split.c makes that list with
 * readdir + fstatat and reads the pieces as one image.
 *
 * Naming accepted: the first piece's name ends in ".<digits>" (1 to 6
 * digits), its number 0 or 1; the others have the same prefix and the same
 * number of digits, zero-padded; past the largest number that width holds
 * (NAME.999) the number simply grows (NAME.1000), as FTK Imager does.
 * Letter suffixes (split's default NAME.aa, NAME.ab) are not handled.
 */
#ifndef RAIDIMG_SPLIT_RAW_H
#define RAIDIMG_SPLIT_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	SPLIT_MAX_PIECES = 100000,
	SPLIT_MAX_WIDTH = 6,
};

/* One directory entry, as the lister gives it. */
struct split_dirent {
	const char *name;       /* file name (no directory part) */
	uint64_t size;          /* bytes (st_size) */
	int is_regular;         /* a regular file (after following symlinks) */
};

struct split_piece {
	char *name;             /* file name, owned */
	unsigned number;        /* 1 for NAME.001 */
	uint64_t size;          /* bytes */
	uint64_t offset;        /* where it starts in the whole image */
};

/* The pieces in order.  Owns pieces[] and their names (split_set_free). */
struct split_set {
	unsigned npieces;
	struct split_piece *pieces;
	unsigned first_number;  /* 0 or 1 */
	unsigned width;         /* digits of the first piece's suffix */
	uint64_t piece_size;    /* size of every piece but the last */
	uint64_t total_size;    /* sum of the sizes */
	char warnings[256];
};

/* If name (a file name) is prefix (its first plen bytes) + 1 to 9 digits:
 * true, with their number and how many digits. */
bool split_suffix_number(const char *name, const char *prefix, size_t plen, unsigned *num, unsigned *width);

/* Find the pieces of the split image whose first piece is first_name (a
 * file name, no directory), among the n entries ents (any order; names not
 * of the form prefix + digits are ignored).  0 and *out filled, or -EINVAL
 * (a name that is no first piece, a gap, an odd size: err names the piece),
 * -ENOENT (first_name not among ents), -EFBIG (too many pieces), -ENOMEM.
 * *out is left empty on error. */
int split_raw_find(const char *first_name, const struct split_dirent *ents, size_t n,
		   struct split_set *out, char *err, size_t errlen);

void split_set_free(struct split_set *s);   /* NULL is fine */

/* The index of the piece holding byte off of the whole image (>= 0), and
 * the offset in it in *in_piece; -ERANGE if off >= total_size. */
int split_raw_locate(const struct split_set *s, uint64_t off, uint64_t *in_piece);

#endif
