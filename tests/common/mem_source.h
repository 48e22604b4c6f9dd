/* mem_source.h - a member image in memory for the tests and fuzz targets: a size and
 * a few blocks of bytes placed in it (zeros elsewhere), optionally with a
 * range whose reads fail with EIO. */
#ifndef RAIDIMG_MEM_SOURCE_H
#define RAIDIMG_MEM_SOURCE_H

#include "source.h"

#define MEM_MAX_BLOCKS 32

struct mem_block {
	uint64_t off;
	size_t len;
	const uint8_t *bytes;        /* not owned: must outlive the source */
};

struct mem_image {
	uint64_t size;
	int nblocks;
	struct mem_block blocks[MEM_MAX_BLOCKS];
	uint64_t eio_off, eio_len;   /* reads touching this range fail (len 0: none) */
};

/* A source over img (not copied: img must outlive it).  The struct
 * source is the caller's (its close does nothing); returns it. */
struct source *mem_source_init(struct source *s, struct mem_image *img);
/* The same, allocated: close() frees it (for a taker such as
 * array_assemble_sources).  path is not copied.  NULL without memory. */
struct source *mem_source_new(struct mem_image *img, const char *path);

#endif
