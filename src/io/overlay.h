/* overlay.h - a copy-on-write overlay over an assembled array (any
 * volume, volume.h: io does not know arrays; engine/array.h makes the
 * identity of an array and opens its overlay).
 *
 * `raidimg mount --overlay FILE` makes the presented image writable: every
 * write lands in FILE, the member images are never written (they stay
 * opened read-only).  Reads see the overlay's bytes where it has some and
 * the array's everywhere else.  `cat`/`export --overlay FILE` read the
 * array with the overlay applied.
 *
 * The unit is the granule (64 KiB by default, a power of two from 4 KiB
 * to 16 MiB, fixed when the overlay is made): a granule is either wholly
 * in the overlay or not at all.  The first write to a granule copies the
 * array's bytes for the rest of it (read-modify-write under a lock of that
 * granule), later writes go straight to the overlay.
 *
 * File format, version 1 (integers little-endian):
 *   [0, 4096)                header: magic "RAIDOVL1", version, granule,
 *                            the array's identity (md uuid, or for a manual
 *                            geometry its data offset), geometry and size,
 *                            created/modified times; XXH64 checksum
 *   [4096, data_start)       bitmap: bit g (byte g/8, bit g%8) set when
 *                            granule g is in the overlay
 *   data_start + OFF         the byte at array offset OFF, for granules in
 *                            the overlay; holes elsewhere (a sparse file
 *                            of data_start + array_bytes bytes)
 * data_start is 4096 + the bitmap rounded up to 4 KiB, then up to a
 * multiple of the granule (so granules are aligned in the file too).
 *
 * Durability: a granule's data is written before its bit is set in
 * memory; overlay_sync() (FUSE flush/fsync/release, unmount) makes the
 * data durable (fdatasync), then writes the bitmap pages that changed and
 * the header, then fdatasyncs again.  So the bitmap on disk never claims a
 * granule whose data is not on disk; writes after the last sync are lost
 * if the serving process dies or the machine crashes, as with a disk's
 * write cache.
 *
 * An overlay open for writing holds an exclusive flock(2) on the file, for
 * reading a shared one: a mounted overlay cannot be attached twice, read
 * by cat/export or discarded at the same time.  Opening waits up to 3 s
 * for the lock (a mount just unmounted may still be syncing it).
 *
 * Thread safety: overlay_read and overlay_write may be called by many
 * threads at once (the FUSE workers); overlay_sync serialises itself.
 */
#ifndef RAIDIMG_OVERLAY_H
#define RAIDIMG_OVERLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "volume.h"

enum {
	OVERLAY_VERSION = 1,
	OVERLAY_HEADER_BYTES = 4096,
	OVERLAY_GRANULE_DEFAULT = 64 << 10,
	OVERLAY_GRANULE_MIN = 4 << 10,
	OVERLAY_GRANULE_MAX = 16 << 20,
};

#define OVERLAY_MAGIC "RAIDOVL1"      /* 8 bytes, no NUL in the file */

enum overlay_id_kind {
	OVERLAY_ID_MD = 1,            /* an array with md metadata: its uuid */
	OVERLAY_ID_MANUAL = 2,        /* a manual geometry: no uuid to go by */
};

/* Which array an overlay belongs to.  Two identities match when kind,
 * uuid, geometry, data_offset, member_bytes and array_bytes are equal
 * (name and meta_format are only shown). */
struct overlay_identity {
	int kind;                     /* enum overlay_id_kind */
	uint8_t uuid[16];             /* md: the array's uuid; manual: zeros */
	char name[33];                /* md array name ("host:name"), may be "" */
	char meta_format[8];          /* "1.2", ...; "" for manual */
	int level, layout, raid_disks;
	uint32_t chunk_bytes;
	uint64_t member_bytes;        /* data bytes per member */
	uint64_t array_bytes;
	uint64_t data_offset;         /* manual: of every member; md: 0 */
};

/* Everything the header holds, decoded. */
struct overlay_header {
	uint32_t version;
	uint32_t granule_bytes;
	struct overlay_identity id;
	uint64_t array_id;            /* overlay_identity_hash(&id) */
	uint64_t granules;            /* ceil(array_bytes / granule_bytes) */
	uint64_t bitmap_offset;       /* OVERLAY_HEADER_BYTES */
	uint64_t bitmap_bytes;        /* ceil(granules / 8), rounded up to 4 KiB */
	uint64_t data_start;          /* file offset of array offset 0 */
	uint64_t created_ns;          /* CLOCK_REALTIME, ns since the epoch */
	uint64_t modified_ns;         /* time of the last write synced */
};

/* ---- pure parts (no I/O) ---- */

/* A 64-bit hash (XXH64) of the fields that are compared. */
uint64_t overlay_identity_hash(const struct overlay_identity *id);
/* 0 when `have` (the overlay's) is the array `want`; else -EXDEV and, in
 * why, what differs in words. */
int overlay_identity_match(const struct overlay_identity *have, const struct overlay_identity *want,
			   char *why, size_t whylen);
/* "md uuid 1234abcd:... (host:name)" or "manual geometry, data offset N" */
void overlay_identity_describe(const struct overlay_identity *id, char *buf, size_t len);

/* Fill h for a new overlay of array id with the given granule (0: the
 * default).  -EINVAL if the granule is not a power of two in range. */
int overlay_header_init(struct overlay_header *h, const struct overlay_identity *id, uint32_t granule_bytes,
			uint64_t now_realtime_ns);
/* Encode into buf[OVERLAY_HEADER_BYTES] (zero-padded, checksummed). */
void overlay_header_encode(const struct overlay_header *h, uint8_t *buf);
/* Decode and check everything (magic, version, checksum, geometry, the
 * file layout it implies).  0, or -EINVAL (-EPROTONOSUPPORT for a newer
 * version) with the problem in err. */
int overlay_header_decode(const uint8_t *buf, size_t len, struct overlay_header *h, char *err, size_t errlen);

/* ---- an open overlay ---- */

struct overlay;

struct overlay_open_opts {
	bool writable;                /* O_RDWR and an exclusive lock; else read-only, shared lock */
	bool create;                  /* with writable: make it when missing or empty */
	uint32_t granule_bytes;       /* for a new overlay; 0: OVERLAY_GRANULE_DEFAULT */
	/* the array it must belong to; NULL accepts any (info, discard) */
	const struct overlay_identity *id;
	struct volume *base;          /* what it lies over (not owned): needed for reads and
				       * writes; NULL for info/discard */
	bool allow_in_use;            /* read-only: open even when a mount holds it (info) */
};

/* Open (or create) the overlay at path.  On success *out is owned by the
 * caller (overlay_close); *created (if not NULL) says whether the file
 * was made by this call.  -errno with a message naming the file in err:
 * -EXDEV another array's overlay, -EINVAL not an overlay or a corrupt
 * one, -EBUSY in use by another process, ... */
int overlay_open(const char *path, const struct overlay_open_opts *o, struct overlay **out, bool *created,
		 char *err, size_t errlen);
/* Close without writing anything (call overlay_sync first to keep the
 * latest writes).  NULL is fine. */
void overlay_close(struct overlay *ov);
/* Remove the overlay's file (one just created by a mount that failed),
 * only if the path still names this very file: never one another process
 * made or holds meanwhile. */
void overlay_remove(struct overlay *ov);

const struct overlay_header *overlay_header(const struct overlay *ov);
const char *overlay_path(const struct overlay *ov);   /* absolute */
bool overlay_in_use(const struct overlay *ov);        /* allow_in_use and a mount holds it */

/* Read len bytes at array offset off: overlay granules from the file,
 * the rest from the base (one base read per run of granules not in the
 * overlay).  The volume contract (volume.h). */
int overlay_read(struct overlay *ov, void *buf, size_t len, uint64_t off, uint64_t *bad_off);
/* The overlay as a volume (reads are overlay_read); valid while it is open. */
struct volume *overlay_volume(struct overlay *ov);

/* Write len bytes at array offset off into the overlay.  Returns the bytes
 * written (fewer when the write goes past the end of the array), or
 * -ENOSPC at/after the end, -EROFS if not writable, -EIO when the array's
 * bytes around a partial granule cannot be read, -errno of the file. */
ssize_t overlay_write(struct overlay *ov, const void *buf, size_t len, uint64_t off);

/* Make every write so far durable (see Durability above); cheap when
 * nothing changed.  0 or -errno. */
int overlay_sync(struct overlay *ov);

/* Forget every write: clear the bitmap and punch out the data (the file
 * keeps its header, created time and size).  Writable overlays only. */
int overlay_discard(struct overlay *ov);

/* Counts. */
struct overlay_stats {
	uint64_t granules_written;    /* granules in the overlay */
	uint64_t bytes_covered;       /* array bytes they cover */
	uint64_t writes, write_bytes, write_errors;   /* overlay_write calls since open */
	uint64_t granules_copied;     /* partial first writes: read-modify-write */
	uint64_t syncs, sync_errors;
	bool unsynced;                /* writes not yet made durable */
	int last_sync_error;          /* -errno of the last failed sync, 0 */
	uint64_t last_write_ns;       /* realtime ns of the latest write (0: none since open) */
	uint64_t modified_ns;         /* realtime ns of the last write synced (header) */
};
void overlay_get_stats(const struct overlay *ov, struct overlay_stats *st);
/* True when granule g is in the overlay (tests, info). */
bool overlay_granule_written(const struct overlay *ov, uint64_t g);

/* "2026-01-02T03:04:05.678Z" for a realtime ns value; buf >= 32. */
char *overlay_fmt_time(uint64_t ns, char *buf, size_t len);

#endif
