/* format.h - the metadata formats behind one vtable (mdadm's superswitch,
 * lighter), and what a member's metadata says.
 *
 * A format finds and parses its metadata on a device seen through a
 * struct dev_reader: a size and a read callback, so parsing stays pure (the
 * fuzz targets feed it from memory; io/probe.c feeds it from a member
 * source).  What a format finds is a list of the volumes (arrays) the device
 * is a member of: one for md's own metadata; container formats (IMSM, DDF:
 * several volumes over one set of disks, metadata at the end of each disk)
 * list each volume the disk belongs to, each as a struct member_meta of its
 * own (set_uuid = the volume's).  Formats that can be written (create,
 * rebuild) have build(); container formats write a replacement member's
 * metadata with replace().  A member that is a slice of an image (a
 * partition) is a source matter (io/), not a format one.
 *
 * IMSM members do not say which device they are: the metadata, the same
 * on every member, lists drive serials, and only the drive's own serial
 * (which an image does not hold) tells which slot it is.  Such a member is
 * found with role META_ROLE_UNPLACED, and assembly asks the format's
 * place() where a device of a given identity goes.
 */
#ifndef RAIDIMG_FORMAT_H
#define RAIDIMG_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev_reader.h"

enum {
	META_ROLE_SPARE = -1,
	META_ROLE_FAULTY = -2,
	META_ROLE_JOURNAL = -3,
	META_ROLE_MISSING = -4,     /* no device in that slot (0.90 "removed") */
	META_ROLE_UNPLACED = -5,    /* the metadata does not say which device this is
	                               (IMSM): assembly places it (format_ops.place) */
	META_MAX_DEVS = 384,         /* dev_roles entries kept */
	META_MAX_IDS = 256,          /* device identities kept (IMSM disk table, DDF disks) */
	META_ID_LEN = 16,            /* bytes of one (an IMSM drive serial) */
	FORMAT_MAX_VOLUMES = 8,      /* volumes one device can be found in */
};

struct format_ops;

/* Everything one member's metadata says about one array (volume) it is
 * in.  Plain data; fmt points to a static format. */
struct member_meta {
	const struct format_ops *fmt;   /* the format it was found in */
	char format[8];             /* fmt->name: "0.90", "1.0", "1.1", "1.2", "imsm", "ddf" */
	uint8_t set_uuid[16];       /* as meta_uuid_format prints mdadm's UUID */
	char set_name[33];          /* 1.x: host:name; IMSM, DDF: the volume's name */
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
	/* md 1.x bad-block log: bblog_size sectors at super_offset +
	 * bblog_offset, entries in units of 2^bblog_shift sectors; it holds
	 * entries when feature_map has bit 8 (md1_bblog_locate/parse). */
	int32_t bblog_offset;       /* sectors, relative to super_offset */
	uint16_t bblog_size;        /* sectors */
	uint8_t bblog_shift;
	uint32_t sb_csum;           /* the checksum as stored (probe verified it) */
	int32_t bitmap_offset;      /* sectors from the superblock to the write-intent
	                               bitmap, if feature_map & 1 (0.90: 8) */
	/* reshape (feature bit 4 / 0.90 minor 91) */
	int reshape_active;
	uint64_t reshape_position;  /* sectors of the array */
	int new_level, new_layout, delta_disks;
	uint32_t new_chunk_bytes;
	int64_t new_offset;         /* sectors, relative to data_offset */
	/* The whole array as this member saw it: role of every device slot. */
	int max_dev;
	int16_t dev_roles[META_MAX_DEVS];   /* META_ROLE_* or a role */
	/* Container formats (IMSM, DDF): the container, the volume's place in
	 * it, md's array_size when the metadata sets it (IMSM: the volume's
	 * size; 0: data members x component), this device's identity as the
	 * metadata records it (DDF: its reference number; "" when it records
	 * none: IMSM), why the volume cannot be read ("" if it can: a
	 * migration, unsupported attributes...). */
	bool in_container;
	uint8_t container_uuid[16];
	int volume_index, container_volumes;
	uint64_t array_sectors;
	char dev_id[24];
	char unsupported[200];
	/* DDF: the sequence number of the virtual disk's configuration
	 * (mdadm takes the highest); among members of equal events, the view
	 * of the one with the highest is the freshest */
	uint32_t volume_seq;
	/* Container formats: the identity of every device slot (dev_roles'
	 * index), for place(): IMSM the drive serials, raw and NUL-padded as
	 * the disk table holds them; DDF the reference numbers ("%08x") */
	int nids;
	uint8_t dev_ids[META_MAX_IDS][META_ID_LEN];
};

/* What a format found on one device: the volumes it is a member of. */
struct format_found {
	int nvol;
	struct member_meta vol[FORMAT_MAX_VOLUMES];
};

enum {
	/* the format cannot record how far a member is in sync (0.90: md
	 * takes a member added by a reshape as in sync up to its position) */
	FORMAT_NO_RECOVERY_OFFSET = 1,
	/* data starts where the user says (--data-offset); else at 0 */
	FORMAT_DATA_OFFSET = 2,
	/* the table of device slots has a fixed size (0.90's disks[]): unused
	 * slots are "removed"; else it grows (1.x's max_dev) and unused slots
	 * are spares */
	FORMAT_FIXED_SLOTS = 4,
	/* a container format: every member keeps a copy of the whole
	 * container's metadata, and the freshest copy describes every member:
	 * one it does not list in its role is not a member there */
	FORMAT_CONTAINER = 8,
};

struct format_ops {
	const char *name;            /* "1.2", "0.90": what --metadata takes and examine shows */
	const char *family;          /* "md" */
	unsigned flags;              /* FORMAT_* */
	int max_members;             /* raid_disks it can describe */
	int max_dev_slots;           /* device slots (dev_number) it can record */
	uint64_t max_component_sectors;   /* data sectors per member it can record */
	uint64_t default_data_offset;     /* bytes (FORMAT_DATA_OFFSET formats) */
	/* Find this format on dev.  0 with *out filled (one volume or more);
	 * -ENOENT when it is not there (no magic); another -errno with a
	 * message in err when it is there but broken (checksum, impossible
	 * fields, unreadable). */
	int (*probe)(const struct dev_reader *dev, struct format_found *out, char *err, size_t errlen);
	/* Where the superblock of a device of dev_sectors sits (sectors);
	 * UINT64_MAX when it cannot hold one. */
	uint64_t (*super_offset)(uint64_t dev_sectors);
	/* The first sector data may use for an array of `devices` members
	 * (past the superblock), and the sectors of a device of dev_sectors the
	 * data area can take from data_offset on.  For create. */
	uint64_t (*min_data_offset)(int devices);
	uint64_t (*usable_sectors)(uint64_t dev_sectors, uint64_t data_offset);
	/* Write a superblock for m (m->fmt == this format) into buf (>= 8 KiB):
	 * its byte offset in the image in *image_off, its length in *sb_len.
	 * 0 or -EINVAL.  NULL: the format cannot be written. */
	int (*build)(const struct member_meta *m, uint8_t *buf, size_t buflen, uint64_t dev_sectors,
		     uint64_t *image_off, size_t *sb_len);
	/* Where the device whose identity is id goes in the array m (one
	 * member's view): *dev_number gets its slot (dev_roles' index), *role
	 * its role there (or META_ROLE_*).  id: DDF a reference number as
	 * dev_id holds it; IMSM a drive serial as the drive reports it (an
	 * image's name, --serial).  0, or -ENOENT when m lists no such device.
	 * NULL: members say their own slot (dev_number). */
	int (*place)(const struct member_meta *m, const char *id, int *dev_number, int *role);
	/* Container formats: the metadata of a replacement device for role
	 * m->role of the volume m describes (m: a current member's view, its
	 * device_uuid new and random), made from the metadata of that current
	 * member (tmpl, an image of dev_sectors like the new one): the
	 * container's copy with the new device in sync in that role, newer
	 * where mdadm looks for the newest (IMSM: the generation; DDF: the
	 * virtual disk's configuration, the headers' sequence number kept).  id: the new device's
	 * identity (IMSM: its drive serial; NULL for DDF, whose new reference
	 * number and GUID come from m->device_uuid).  Every byte to write goes
	 * through put(ctx, buf, len, off) (off: bytes into the new image).  0,
	 * or -errno with a message in err naming the field. */
	int (*replace)(const struct dev_reader *tmpl, const struct member_meta *m, const char *id,
		       uint64_t dev_sectors, int (*put)(void *ctx, const void *buf, size_t len, uint64_t off),
		       void *ctx, char *err, size_t errlen);
};

/* The formats, in the order they are looked for (mdadm's: 1.2, 1.1, 1.0,
 * 0.90, so that a 1.x superblock wins over a stale 0.90 one at the end of
 * the device; then the containers, IMSM and DDF); NULL-terminated. */
extern const struct format_ops *const format_list[];
extern const struct format_ops format_md12, format_md11, format_md10, format_md090, format_imsm, format_ddf;

/* The format --metadata NAME means ("1.2", "1", "0.90", "0.9", "0"...); NULL
 * if none. */
const struct format_ops *format_by_name(const char *name);

/* Look for every format in turn on dev.  The first one present decides
 * (a broken one is an error, not a reason to look further: we would
 * assemble from a stale leftover).  -ENOENT with "no RAID metadata" in err
 * when none is there. */
int format_probe(const struct dev_reader *dev, struct format_found *out, char *err, size_t errlen);

/* md's own formats' functions behind their ops, exposed for tests and
 * fuzzing.  Parsers over a raw superblock buffer: dev_sectors is the image
 * size in sectors (0.90 derives data size from it).  Builders write the
 * format named by m->format ("1.0", "1.1", "1.2"; "0.90").  Superblock
 * offsets in sectors, UINT64_MAX when the device is too small (1.x: minor
 * 0, 1, 2). */
int md1_parse(const uint8_t *buf, size_t len, uint64_t dev_sectors, struct member_meta *out,
	      char *err, size_t errlen);
int md0_parse(const uint8_t *buf, size_t len, uint64_t dev_sectors, struct member_meta *out,
	      char *err, size_t errlen);
int md1_build(const struct member_meta *m, uint8_t *buf, size_t buflen, uint64_t dev_sectors,
	      uint64_t *image_off, size_t *sb_len);
int md0_build(const struct member_meta *m, uint8_t *buf, size_t buflen, uint64_t dev_sectors,
	      uint64_t *image_off, size_t *sb_len);
uint64_t md1_super_offset(int minor, uint64_t dev_sectors);
uint64_t md0_super_offset(uint64_t dev_sectors);

/* md 1.x bad-block log (the kernel's super_1_load): sectors md never reads
 * again on this member, which raidimg treats as untrusted.
 * md1_bblog_locate: does m's superblock say the log holds entries (feature
 * bit 8)?  0 with the log's byte offset and length on a device of
 * dev_bytes; -ENOENT when there is no log to read; -EINVAL with a message
 * when the fields are out of what md accepts (md refuses the device).
 * md1_bblog_parse: the entries of the log (len bytes at buf: u64 LE each,
 * sector << 10 | count, both in units of 2^shift sectors; all-ones ends the
 * list, a zero entry is skipped) as byte ranges of the device added to
 * *out.  0, -EINVAL (message: an entry past 2^64) or -ENOMEM. */
struct range_list;
int md1_bblog_locate(const struct member_meta *m, uint64_t dev_bytes, uint64_t *off, size_t *len, char *err,
		     size_t errlen);
int md1_bblog_parse(const uint8_t *buf, size_t len, unsigned shift, struct range_list *out, char *err,
		    size_t errlen);
/* Is x's view of the array newer than y's?  More events, or as many and a
 * newer volume configuration (DDF). */
static inline bool meta_fresher(const struct member_meta *x, const struct member_meta *y)
{
	return x->events > y->events || (x->events == y->events && x->volume_seq > y->volume_seq);
}

/* "xxxxxxxx:xxxxxxxx:xxxxxxxx:xxxxxxxx", as mdadm prints md uuids. */
void meta_uuid_format(const uint8_t uuid[16], char out[36]);
/* The reverse: 32 hex digits, ':' '-' and spaces ignored.  0 or -EINVAL. */
int meta_uuid_parse(const char *s, uint8_t uuid[16]);

#endif
