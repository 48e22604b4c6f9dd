/* ddrescue_map.h - GNU ddrescue mapfiles: which bytes of a rescued image can
 * be trusted.
 *
 * A member image made by ddrescue holds zeros (or whatever was there
 * before) wherever the source could not be read; the mapfile says where.
 * This parses a mapfile held in memory (pure: no file I/O), validates it and
 * gives the merged list of ranges whose status is not '+' (finished): the
 * caller treats reads there as read errors (-EIO), so md parity can rebuild
 * them instead of trusting zeros.
 *
 * Format (ddrescue manual, "Mapfile structure"; see FACTS.md):
 *   # comments: '#' at the start of a line or after whitespace, to the end
 *   current_pos  current_status  [current_pass]     the first non-comment line
 *   pos  size  status                                one line per block
 * Numbers as C++ integer constants: decimal, 0x hex, 0 octal.  Status line
 * characters ? * / - F G +; block characters ? * / - +.  Blocks contiguous
 * from 0, non-overlapping.
 */
#ifndef RAIDIMG_DDRESCUE_MAP_H
#define RAIDIMG_DDRESCUE_MAP_H

#include <stddef.h>
#include <stdint.h>

enum {
	DDR_MAX_MAPFILE = 64u << 20,   /* bytes of mapfile text accepted */
	DDR_MAX_BLOCKS = 4u << 20,     /* data lines accepted */
	DDR_MAX_LINE = 1024,           /* characters of a data/status line before its comment */
};

struct ddr_range {
	uint64_t pos, size;            /* bytes */
};

/* How the mapped size (end of the last block) relates to the image size.
 * An image longer than its map, or shorter inside rescued ('+') blocks, is
 * refused: it is not the image the mapfile describes. */
enum ddr_size_relation {
	DDR_SIZE_EQUAL = 0,            /* the map covers the image exactly */
	DDR_SIZE_UNKNOWN,              /* image_size not given */
	DDR_SIZE_IMAGE_SHORTER,        /* image ends inside the map, in non-finished
					  blocks only (ddrescue does not extend the
					  output over unread tails): fine, reads there
					  are untrusted anyway */
};

/* The parsed mapfile.  Owns bad (free with ddr_map_free). */
struct ddr_map {
	uint64_t current_pos;
	char current_status;           /* ? * / - F G + */
	unsigned current_pass;         /* 0 when the line has none (ddrescue < 1.21) */
	unsigned nblocks;              /* data lines */
	uint64_t map_size;             /* end of the last block */
	uint64_t bytes_finished;       /* '+' */
	uint64_t bytes_nontried;       /* '?' */
	uint64_t bytes_nontrimmed;     /* '*' */
	uint64_t bytes_nonscraped;     /* '/' */
	uint64_t bytes_badsector;      /* '-' */
	enum ddr_size_relation size_relation;
	/* Untrusted ranges: blocks not '+', adjacent ones merged, sorted;
	 * nothing clipped: they keep the map's coordinates even past a shorter
	 * image. */
	unsigned nbad;
	struct ddr_range *bad;         /* owned */
	uint64_t bad_bytes;
	char warnings[512];            /* non-fatal remarks, "; "-separated */
};

/* Parse len bytes of mapfile text at buf (need not be NUL-terminated).
 * image_size: the rescued image's size in bytes, or UINT64_MAX if unknown.
 * Returns 0 and fills *out (free with ddr_map_free), or -EINVAL (bad
 * mapfile: err names the line and the problem, e.g. "mapfile line 9: block
 * at 0x1000 overlaps the previous block, which ends at 0x2000"), -EFBIG
 * (mapfile larger than DDR_MAX_MAPFILE or more than DDR_MAX_BLOCKS blocks),
 * -ENOMEM; *out is left empty on error. */
int ddr_map_parse(const char *buf, size_t len, uint64_t image_size,
		  struct ddr_map *out, char *err, size_t errlen);

void ddr_map_free(struct ddr_map *m);   /* NULL is fine; leaves *m empty */

/* The first untrusted range overlapping [off, off+len), or NULL if those
 * bytes are all finished.  O(log nbad). */
const struct ddr_range *ddr_map_find_bad(const struct ddr_map *m, uint64_t off, uint64_t len);

#endif
