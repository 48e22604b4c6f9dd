/* ranges.h - sorted lists of byte ranges (pure code): the untrusted ranges
 * of a member image (a ddrescue mapfile's unrescued blocks, an EWF file's
 * acquisition errors, md's bad-block log), kept sorted by offset with
 * touching or overlapping ranges merged, so that a lookup is a binary
 * search.  Not thread-safe while being built; read-only lookups from any
 * number of threads once built.
 */
#ifndef RAIDIMG_RANGES_H
#define RAIDIMG_RANGES_H

#include <stddef.h>
#include <stdint.h>

struct byte_range {
	uint64_t off, len;          /* bytes [off, off + len), len > 0 */
};

/* Owns v.  Zero-initialised: empty. */
struct range_list {
	struct byte_range *v;       /* [n], sorted by off, disjoint, not touching */
	size_t n, cap;
	uint64_t bytes;             /* sum of the lengths */
};

/* Add [off, off + len) (len 0: nothing; clipped at 2^64).  0 or -ENOMEM. */
int range_list_add(struct range_list *l, uint64_t off, uint64_t len);
/* Add every range of src shifted by -base and clipped to [0, len): the
 * part of src seen through a window [base, base + len).  0 or -ENOMEM. */
int range_list_add_window(struct range_list *l, const struct range_list *src, uint64_t base, uint64_t len);
/* The first range that meets [off, off + len), or NULL (len 0: NULL). */
const struct byte_range *range_list_first(const struct range_list *l, uint64_t off, uint64_t len);
/* Bytes of l inside [off, off + len), and (if n is not NULL) how many
 * ranges meet it. */
uint64_t range_list_bytes_in(const struct range_list *l, uint64_t off, uint64_t len, size_t *n);
void range_list_free(struct range_list *l);   /* leaves it empty; NULL is fine */

#endif
