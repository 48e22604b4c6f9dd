/* mem_dev.h - a dev_reader over memory for tests and fuzzing: a device of
 * `size` bytes whose last `tail_len` bytes are `tail` and the rest zeros.
 * Optional fault: reads touching [fail_off, fail_off + fail_len) give -EIO.
 * The struct and the tail buffer are owned by the caller. */
#ifndef RAIDIMG_MEMDEV_H
#define RAIDIMG_MEMDEV_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "dev_reader.h"

struct memdev {
	const uint8_t *tail;
	size_t tail_len;      /* <= size */
	uint64_t size;
	uint64_t fail_off, fail_len;
	unsigned reads;       /* reads served (bounded-work checks) */
};

static inline int memdev_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct memdev *m = ctx;
	uint64_t tail_start = m->size - m->tail_len;
	uint8_t *out = buf;

	m->reads++;
	if (off > m->size || len > m->size - off)
		return -EIO;
	if (m->fail_len && off < m->fail_off + m->fail_len && m->fail_off < off + len)
		return -EIO;
	for (size_t i = 0; i < len;) {
		uint64_t o = off + i;

		if (o < tail_start) {
			uint64_t n = tail_start - o;

			if (n > len - i)
				n = len - i;
			memset(out + i, 0, (size_t)n);
			i += (size_t)n;
		} else {
			size_t n = len - i;

			memcpy(out + i, m->tail + (o - tail_start), n);
			i += n;
		}
	}
	return 0;
}

static inline struct dev_reader memdev_reader(struct memdev *m)
{
	struct dev_reader r = { .size = m->size, .read = memdev_read, .ctx = m };

	return r;
}

#endif
