/* splice_cat.h - stream part of the array to a file descriptor without
 * copying the bytes through user space where members hold them as they are. */
#ifndef RAIDIMG_SPLICE_CAT_H
#define RAIDIMG_SPLICE_CAT_H

#include <stdint.h>

#include "array.h"

/* Write array bytes [off, off+len) to out_fd, in order.  Chunks that members
 * hold as they are go from the member file to out_fd with sendfile(2);
 * stripes that need rebuilding (and chunks whose transfer fails) go through
 * array_read and write(2).
 * Returns 0; -EOPNOTSUPP before writing anything when a member is not a
 * plain file (zstd, fault injection: use the pipeline); -EIO when a range
 * cannot be rebuilt (*bad_off = its first array offset; every byte before it
 * has been written); another -errno when writing out_fd fails.
 * *written counts the bytes written in every case. */
int splice_cat(struct array *a, int out_fd, uint64_t off, uint64_t len, uint64_t *written,
	       uint64_t *bad_off);

#endif
