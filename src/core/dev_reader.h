/* dev_reader.h - how the pure parsers of src/core read a device (a member
 * image, a whole disk image, a partition): a size and a read callback with
 * absolute byte offsets, so they can be fed from memory (tests, fuzzing) or
 * from any member source (io/probe.c). */
#ifndef RAIDIMG_DEV_READER_H
#define RAIDIMG_DEV_READER_H

#include <stddef.h>
#include <stdint.h>

enum {
	/* the device is a whole image (not a partition of one): formats whose
	 * metadata controllers may write away from where it belongs (DDF on
	 * LSI/PERC: the anchor somewhere in the last 32 MiB) may search for
	 * it */
	DEV_HINT_WHOLE = 1,
};

/* read: exactly len bytes at off, 0 or -errno (-EIO past the end).  The
 * reader and ctx belong to the caller. */
struct dev_reader {
	uint64_t size;               /* bytes */
	int (*read)(void *ctx, void *buf, size_t len, uint64_t off);
	void *ctx;
	unsigned hints;              /* DEV_HINT_* */
};

#endif
