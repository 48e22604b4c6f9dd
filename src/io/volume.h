/* volume.h - something read like a disk: an assembled array
 * (engine/array.h), or a copy-on-write overlay over one (overlay.h).  The
 * mount's image, the pipeline (cat, export, replay, hashes) and the
 * overlay's own base read through it.
 *
 * read(v, buf, len, off, bad_off, obs): len bytes at off, off + len <=
 * size, any alignment; thread-safe (many readers at once).  0, or -EIO
 * when some bytes cannot be served (*bad_off, if not NULL: the first offset
 * not served; every byte before it in buf is right), or another -errno
 * (*bad_off = off).  obs, if not NULL, is told where each byte came from
 * (provenance maps); a volume that cannot say calls it with nothing.
 */
#ifndef RAIDIMG_VOLUME_H
#define RAIDIMG_VOLUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a range of bytes came from.  role: the member (role) whose chunk it
 * is; used (one entry per member, LAYOUT_MAX_DISKS of them): the members read
 * to rebuild it (VOLUME_SRC_REBUILT, UNTRUSTED) or that could be read
 * (UNREADABLE). */
enum volume_src {
	VOLUME_SRC_MEMBER,       /* read straight from member `role` */
	VOLUME_SRC_REBUILT,      /* member `role`'s chunk rebuilt from parity out of used[] */
	VOLUME_SRC_UNREADABLE,   /* member `role`'s chunk could not be served */
	VOLUME_SRC_UNTRUSTED,    /* member `role`'s bytes are untrusted there (a ddrescue map,
				    EWF acquisition errors, md's bad-block log): rebuilt from
				    parity out of used[] */
};

/* served() is called on the reading thread for pieces of the request, in no
 * particular order, each byte once. */
struct volume_observer {
	void (*served)(void *ctx, uint64_t off, uint64_t len, enum volume_src how, int role, const bool *used);
	void *ctx;
};

struct volume;

struct volume_ops {
	int (*read)(struct volume *v, void *buf, size_t len, uint64_t off, uint64_t *bad_off,
		    const struct volume_observer *obs);
};

struct volume {
	const struct volume_ops *ops;
	uint64_t size;               /* bytes */
	uint64_t align;              /* reads of multiples of this, so aligned, are cheapest (>= 1) */
};

static inline int volume_read(struct volume *v, void *buf, size_t len, uint64_t off, uint64_t *bad_off)
{
	return v->ops->read(v, buf, len, off, bad_off, NULL);
}

static inline int volume_read_observed(struct volume *v, void *buf, size_t len, uint64_t off, uint64_t *bad_off,
				       const struct volume_observer *obs)
{
	return v->ops->read(v, buf, len, off, bad_off, obs);
}

#endif
