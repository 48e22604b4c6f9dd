/* array.h - an assembled md RAID4/5/6 array over member sources.
 *
 * Assembly (array_assemble) turns a list of member images (or a manual
 * geometry) into a struct array: members ordered by role, missing/stale/
 * faulty ones known.  array_read() serves any byte range of the array,
 * rebuilding from parity when members are missing or fail to read.
 * array_read is thread-safe: many threads may read at once.
 */
#ifndef RAIDIMG_ARRAY_H
#define RAIDIMG_ARRAY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "metadata.h"
#include "source.h"

enum member_state {
	MEMBER_OK = 0,         /* in use */
	MEMBER_MISSING,        /* no image for this role (absent or "missing") */
	MEMBER_FAULTY,         /* metadata of the freshest member says faulty/removed */
	MEMBER_STALE,          /* events too old; left out (used only with --force) */
	MEMBER_REBUILDING,     /* recovery_offset < size: valid only below it */
};

struct array_member {
	int role;
	enum member_state state;
	struct source *src;          /* NULL unless the array reads it; owned */
	char *path;                  /* image path given by the user, owned, may be NULL */
	uint64_t data_offset;        /* bytes */
	uint64_t image_bytes;        /* size of the image */
	/* Bytes of the data area that can be read: less than member_bytes when
	 * the image is truncated or the member was being rebuilt
	 * (recovery_offset).  Chunks beyond it are rebuilt from parity. */
	uint64_t readable_bytes;
	bool has_meta;
	struct member_meta meta;     /* valid if has_meta */
	char note[160];              /* why it is not used, for the user */
	/* counters (atomic: updated by readers) */
	_Atomic uint64_t reads, read_bytes, read_errors;
};

/* Images that were given but are not part of the array (spares, other arrays
 * refused with --force, ...): reported by examine. */
struct array_extra {
	char *path;
	char note[200];
};

struct array {
	struct layout_geom geom;
	int k;                       /* data chunks per stripe */
	uint64_t member_bytes;       /* data bytes per member used by the array */
	uint64_t array_bytes;        /* k * member_bytes */
	uint64_t stripes;            /* member_bytes / chunk_bytes */
	int nmissing;                /* roles not readable (any state but OK) */
	int redundancy;              /* 1 (RAID4/5) or 2 (RAID6) */
	bool has_meta;
	char meta_format[8];
	uint8_t uuid[16];
	char name[33];
	uint64_t events;             /* the freshest member's */
	uint64_t resync_offset;      /* bytes of member data area; UINT64_MAX clean */
	struct array_member *members;   /* [raid_disks], indexed by role; owned */
	int nextra;
	struct array_extra *extra;   /* owned */
	char warnings[2048];         /* things the user must be told (forced stale members...) */
	/* Foreground readers (the mount) inside array_read right now, and when
	 * the last one started (now_ns()): the scrub worker backs off while
	 * they are there.  Maintained by the caller (fuse_fs), not array_read. */
	_Atomic int fg_active;
	_Atomic uint64_t fg_last_ns;
	/* counters */
	_Atomic uint64_t bytes_served, stripes_rebuilt, read_errors_recovered, read_errors_fatal;
	_Atomic uint64_t member_requests, member_request_bytes;
	/* An array caught in the middle of a reshape (md's "Reshape pos'n"):
	 * this struct describes the geometry after it (the superblock's
	 * raid_disks, new layout and chunk, data_offset + new_offset), prev the
	 * geometry before it.  Array bytes below reshape_bytes are laid out the
	 * new way, the rest the old way (the other way round when
	 * reshape_backwards).  array_bytes is the smaller of the two sizes, as
	 * md serves until the reshape ends.  prev shares the member sources and
	 * paths of the roles both have (it owns only those of members leaving
	 * in a shrinking reshape, roles >= this raid_disks) and counts reads
	 * into this array's counters (stats_of).  NULL when no reshape is in
	 * progress. */
	struct array *prev;
	uint64_t reshape_bytes;
	bool reshape_backwards;
	struct array *stats_of;      /* prev only: the array it belongs to */
};

struct assemble_opts {
	bool force;                  /* use stale / faulty-marked members, loudly */
	/* an array mid-reshape: read it as if md had recorded this position
	 * (array bytes) instead of the superblocks' one */
	bool have_reshape_bytes;
	uint64_t reshape_bytes;
	int open_flags;              /* SOURCE_READ normally */
	/* manual geometry (images without metadata): used when manual is true */
	bool manual;
	struct layout_geom geom;
	uint64_t data_offset;        /* bytes, for every member */
	uint64_t member_bytes;       /* 0 = smallest image minus data_offset, rounded to chunk */
	/* manual: order[i] = index into paths of role i, -1 for missing */
	int order[LAYOUT_MAX_DISKS];
	int norder;
};

/* Assemble.  paths[0..npaths) are image paths ("missing" is not a path:
 * manual geometry expresses missing roles through order).  On failure
 * returns -errno and a message in err naming the file and the problem.
 * On success *out is owned by the caller: array_free(). */
int array_assemble(const char *const *paths, int npaths, const struct assemble_opts *opts,
                   struct array **out, char *err, size_t errlen);
void array_free(struct array *a);    /* NULL is fine */

/* Read len bytes at array offset off into buf (any alignment).  Reads past
 * array_bytes are clamped by the caller: off+len must be <= array_bytes.
 * Returns 0, or -EIO when redundancy cannot cover the failed/missing members
 * (*bad_off, if not NULL, then gets the first array offset not served). */
int array_read(struct array *a, void *buf, size_t len, uint64_t off, uint64_t *bad_off);

/* Where the bytes of an array_read came from, for provenance maps
 * (custody.c).  served() is called on the reading thread for pieces of the
 * request, in no particular order, each piece once:
 *   ARRAY_SRC_MEMBERS     a run read straight from the members: each data
 *                         chunk from the member holding it (layout_locate)
 *   ARRAY_SRC_MEMBER      straight from member `role`
 *   ARRAY_SRC_REBUILT     the chunk of member `role` rebuilt from parity out
 *                         of the members marked in used[] (raid_disks entries)
 *   ARRAY_SRC_UNREADABLE  the chunk of member `role` could not be served
 * role is -1 and used NULL for ARRAY_SRC_MEMBERS. */
enum array_source { ARRAY_SRC_MEMBERS, ARRAY_SRC_MEMBER, ARRAY_SRC_REBUILT, ARRAY_SRC_UNREADABLE };
struct array_observer {
	void (*served)(void *ctx, uint64_t off, uint64_t len, enum array_source how, int role,
		       const bool *used);
	void *ctx;
};
/* array_read telling obs (may be NULL) where each byte came from. */
int array_read_observed(struct array *a, void *buf, size_t len, uint64_t off, uint64_t *bad_off,
			const struct array_observer *obs);

/* Can member `disk` serve its chunk of `stripe` as it is on disk (present,
 * in use, within its readable part)?  For zero-copy readers (splice_cat). */
bool array_chunk_direct(const struct array *a, uint64_t stripe, int disk);

/* Human-readable verdict: "complete", "degraded", "not assemblable" */
const char *array_verdict(const struct array *a);

#endif
