/* metadata.h - md superblock formats behind one vtable.
 *
 * Each format (md 0.90, md 1.x; DDF etc. later) "bids" on a member image:
 * probe() parses what it finds into a struct member_meta.  Parsing is done on
 * a buffer (pure, fuzzable); the probe reads the right bytes from the source.
 */
#ifndef RAIDIMG_METADATA_H
#define RAIDIMG_METADATA_H

#include <stddef.h>
#include <stdint.h>

#include "source.h"

enum {
	META_ROLE_SPARE = -1,
	META_ROLE_FAULTY = -2,
	META_ROLE_JOURNAL = -3,
	META_ROLE_MISSING = -4,     /* no device in that slot (0.90 "removed") */
	META_MAX_DEVS = 384,         /* dev_roles entries kept */
};

/* Everything one member's superblock says.  Plain data, no pointers. */
struct member_meta {
	char format[8];             /* "0.90", "1.0", "1.1", "1.2" */
	uint8_t set_uuid[16];
	char set_name[33];          /* 1.x only, NUL-terminated */
	int level;                  /* 4, 5, 6 (others parsed, refused later) */
	int layout;
	uint32_t chunk_bytes;
	int raid_disks;
	uint64_t component_sectors; /* sectors of each member used by the array */
	uint64_t data_offset;       /* sectors from image start to data */
	uint64_t data_size;         /* sectors available (1.x), 0 if unknown */
	uint64_t super_offset;      /* sectors: where the superblock is */
	int dev_number;             /* this device's index in dev_roles/disks[] */
	int role;                   /* 0..raid_disks-1 or META_ROLE_* */
	uint64_t events;
	uint64_t ctime, utime;      /* seconds since the epoch */
	uint64_t resync_offset;     /* sectors; UINT64_MAX when clean */
	uint64_t recovery_offset;   /* sectors; valid if feature_map & 2 */
	uint32_t feature_map;       /* 1.x feature bits (0.90: synthesized) */
	uint8_t device_uuid[16];    /* 1.x */
	/* reshape (feature bit 4 / 0.90 minor 91) */
	int reshape_active;
	uint64_t reshape_position;  /* sectors of the array */
	int new_level, new_layout, delta_disks;
	uint32_t new_chunk_bytes;
	int64_t new_offset;         /* sectors, relative to data_offset */
	/* The whole array as this member saw it: role of every device slot. */
	int max_dev;
	int16_t dev_roles[META_MAX_DEVS];   /* META_ROLE_* or a role */
};

struct metadata_ops {
	const char *name;           /* "md-1.2", ... */
	/* Look for this format on src.  0 and *out filled if found; -ENOENT if
	 * the format is not there (no magic); other -errno with a message in
	 * err (bad checksum, impossible fields...) if it is there but broken. */
	int (*probe)(struct source *src, struct member_meta *out, char *err, size_t errlen);
};

/* Try every known format in turn (1.2, 1.1, 1.0, 0.90).  -ENOENT with
 * "no md superblock" in err when none is found. */
int metadata_probe(struct source *src, struct member_meta *out, char *err, size_t errlen);

/* Pure parsers over a raw superblock buffer, exposed for tests and fuzzing.
 * dev_sectors is the image size in sectors (0.90 derives data size from it). */
int md1_parse(const uint8_t *buf, size_t len, uint64_t dev_sectors, struct member_meta *out,
              char *err, size_t errlen);
int md0_parse(const uint8_t *buf, size_t len, uint64_t dev_sectors, struct member_meta *out,
              char *err, size_t errlen);

/* Writing superblocks, for create and rebuild.  Fills buf with a valid
 * superblock for `m` (format from m->format) and returns its byte offset in
 * the image via *image_off and its length via *sb_len.  buf >= 4096 bytes. */
int md1_build(const struct member_meta *m, uint8_t *buf, size_t buflen, uint64_t dev_sectors,
              uint64_t *image_off, size_t *sb_len);
int md0_build(const struct member_meta *m, uint8_t *buf, size_t buflen, uint64_t dev_sectors,
              uint64_t *image_off, size_t *sb_len);

/* Where each 1.x minor / 0.90 puts its superblock, in sectors. */
uint64_t md1_super_offset(int minor, uint64_t dev_sectors);
uint64_t md0_super_offset(uint64_t dev_sectors);

void meta_uuid_format(const uint8_t uuid[16], char out[36]);   /* "xxxxxxxx:xxxxxxxx:..." */

#endif
