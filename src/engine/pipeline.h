/* pipeline.h - read a range of a volume (an array, or an overlay over one)
 * with several threads, in order.
 *
 * Worker threads read consecutive segments of the array (whole stripes of
 * about 2 MiB - at least 128 KiB of each member, up to 8 MiB -, or 2 MiB
 * pieces of larger stripes, aligned to array offset 0) into a ring of
 * 2 x nthreads buffers; the calling thread hands each
 * segment, in array order, to a consume callback (write it out, hash it,
 * ...).  A segment's buffer is reused only after it was consumed.
 * Used by cat, export, replay and examine --hash.
 */
#ifndef RAIDIMG_PIPELINE_H
#define RAIDIMG_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "array.h"
#include "volume.h"

struct pipeline {
	struct volume *vol;         /* what is read (volume.h) */
	uint64_t start, length;     /* range; start + length <= vol->size */
	int nthreads;               /* 1..64 */
	/* Optional: the observer of the reads of each slot (provenance maps),
	 * pipeline_nslots(nthreads) of them. */
	const struct volume_observer *slot_obs;
	/* Optional: read one segment another way (zero-copy cat reads only
	 * what must be rebuilt); worker threads, concurrently for different
	 * slots.  slot is in [0, pipeline_nslots(nthreads)) and is not reused
	 * for another segment before consume() returned for this one.  0 or
	 * -errno, *bad_off as volume_read. */
	int (*read)(void *read_ctx, int slot, uint8_t *buf, size_t len, uint64_t off, uint64_t *bad_off);
	void *read_ctx;
	/* Called on the calling thread for each segment in array order with
	 * the result of the read (ret 0: buf holds [off, off+len)).  Return 0
	 * to go on, anything else to stop: pipeline_run() returns it. */
	int (*consume)(void *ctx, int slot, const uint8_t *buf, size_t len, uint64_t off, int ret,
		       uint64_t bad_off);
	void *ctx;
	/* Optional: the array whose members' page cache the run leaves as it
	 * found it (array_stream.h: each segment noted before it is read, the
	 * pages brought in dropped once consumed), vol being it or over it. */
	struct array *stream_of;
};

/* Number of segment slots for nthreads workers. */
int pipeline_nslots(int nthreads);

/* Bytes per segment of the run p would make (whole multiples of its
 * volume's alignment - an array's stripes - when they fit in 8 MiB). */
uint64_t pipeline_segment_bytes(const struct pipeline *p);

/* Tell the user why reading the array at off failed: ret -EIO names the
 * first offset that cannot be rebuilt (bad_off), another -errno its cause. */
void pipeline_read_error(int ret, uint64_t off, uint64_t bad_off);

/* Run it.  Returns 0 when every segment was consumed, what consume()
 * returned when it stopped the run, or -ENOMEM/-EAGAIN (message printed)
 * when the buffers or threads cannot be had. */
int pipeline_run(const struct pipeline *p);

#endif
