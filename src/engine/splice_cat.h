/* splice_cat.h - stream part of the array to a file descriptor without
 * copying the bytes through user space where members hold them as they are. */
#ifndef RAIDIMG_SPLICE_CAT_H
#define RAIDIMG_SPLICE_CAT_H

#include <stdint.h>

#include "array.h"

struct splice_cat_stats {
	uint64_t splices;         /* splice(2) calls that moved member bytes */
	uint64_t spliced_bytes;   /* member bytes moved without a copy */
	uint64_t copied_bytes;    /* array bytes written from memory (rebuilt, ...) */
	uint64_t prefetches;      /* POSIX_FADV_WILLNEED requests issued to members */
};

/* Write array bytes [off, off+len) to out_fd, in order.  Chunks that members
 * hold as they are go member file -> pipe -> out_fd with splice(2); pieces
 * that need rebuilding are rebuilt ahead by nthreads pipeline workers
 * (1..64) and written with write(2), as is the rest of a piece whose member
 * read fails (cut back to whole 4 KiB blocks; array_read rebuilds it).
 * Returns 0; -EOPNOTSUPP before writing anything when a member is not a
 * plain file (zstd, fault injection), the array is mid-reshape or no pipe
 * can be had: use the pipeline; -ECANCELED when it stopped and already said
 * why on stderr (a read error other than EIO, no memory or threads); -EIO when a range
 * cannot be rebuilt (*bad_off = its first array offset; every byte before it
 * has been written); another -errno when writing out_fd fails.
 * *written counts the bytes written in every case; st (may be NULL) gets
 * what was done. */
int splice_cat(struct array *a, int out_fd, uint64_t off, uint64_t len, int nthreads, uint64_t *written,
	       uint64_t *bad_off, struct splice_cat_stats *st);

#endif
