/* imsm.h - Intel IMSM (Rapid Storage Technology / "Matrix Storage") metadata.
 *
 * A pure parser: it reads the member device only through a struct dev_reader
 * (so it can be fuzzed from memory) and fills a caller-owned struct imsm_info
 * made of fixed-size arrays (no pointers, nothing to free).
 *
 * IMSM keeps one set of metadata (the MPB, "metadata parameter block") for a
 * container of disks, byte-identical on every member, with up to a few RAID
 * volumes inside.  A member does not record which disk it is: the disk table
 * lists drive serial numbers, and the caller places images by matching serials
 * (imsm_find_disk, imsm_serial_normalize).  Facts and sources:
 * docs/imsm-facts.md.
 *
 * Units: every *_sectors / blocks value here is in 512-byte sectors, also on
 * 4096-byte-sector drives (the parser converts like mdadm's convert_from_4k).
 */
#ifndef RAIDIMG_IMSM_H
#define RAIDIMG_IMSM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev_reader.h"


enum {
	IMSM_MAX_DISKS = 255,        /* num_disks is a u8: every value fits */
	IMSM_MAX_VOLUMES = 16,       /* num_raid_devs above this: -E2BIG (mdadm: the option
	                                ROM's volumes per array, usually 2) */
	IMSM_MAX_MEMBERS = 255,      /* num_members is a u8: every value fits */
	IMSM_MAX_BBM_ENTRIES = 254,  /* mdadm's BBM_LOG_MAX_ENTRIES */
	IMSM_MAX_MPB_BYTES = 1 << 20, /* larger mpb_size is refused (real ones: < 64 KiB) */
	IMSM_SERIAL_LEN = 16,
	IMSM_SERIAL_STR = 16 * 4 + 1, /* printable serial: \xNN escapes + NUL */
	IMSM_UUID_STR = 36,          /* "xxxxxxxx:xxxxxxxx:xxxxxxxx:xxxxxxxx" + NUL */
};

/* imsm_parse_ex flags */
enum {
	/* Go on when the MPB checksum is wrong (checksum_ok = false); every
	 * structural check still applies.  For forensic use, never by default. */
	IMSM_PARSE_IGNORE_CHECKSUM = 1,
};

/* imsm_disk.status bits (raw, as on disk) */
enum {
	IMSM_DISK_SPARE = 0x01,
	IMSM_DISK_CONFIGURED = 0x02,
	IMSM_DISK_FAILED = 0x04,
	IMSM_DISK_JOURNAL = 0x2000000,
};

/* imsm_map.map_state */
enum {
	IMSM_MAP_NORMAL = 0,
	IMSM_MAP_UNINITIALIZED = 1,
	IMSM_MAP_DEGRADED = 2,
	IMSM_MAP_FAILED = 3,
};

/* imsm_vol.migr_type (IMSM_MIGR_REPAIR is VERIFY + the volume status bit
 * DEV_VERIFY_AND_FIX, as mdadm's migr_type() reports it) */
enum {
	IMSM_MIGR_INIT = 0,
	IMSM_MIGR_REBUILD = 1,
	IMSM_MIGR_VERIFY = 2,
	IMSM_MIGR_GEN_MIGR = 3,
	IMSM_MIGR_STATE_CHANGE = 4,
	IMSM_MIGR_REPAIR = 5,
};

/* One slot of a map: disk_ord_tbl[slot]. */
struct imsm_slot {
	uint8_t disk;          /* index into imsm_info.disks[] (low 24 bits of the entry) */
	uint8_t ord_flags;     /* top byte of the entry, raw */
	bool out_of_sync;      /* IMSM_ORD_REBUILD (bit 24): failed or being rebuilt; "_" in Slots */
	bool disk_failed;      /* the disk table marks that disk failed */
	bool usable;           /* in sync and disk not failed: its data can be read */
};

/* One imsm_map (a volume has one, or two while migrating). */
struct imsm_map_info {
	uint64_t pba_of_lba0;        /* sectors: where the volume starts on each member */
	uint64_t blocks_per_member;  /* sectors: mdadm's "Per Dev Size" (data + 2048) */
	uint64_t num_data_stripes;   /* "Num Stripes" (per parity domain for RAID1/10) */
	uint32_t blocks_per_strip;   /* chunk in sectors (u16 on disk; x8 on 4K drives) */
	uint8_t map_state;           /* IMSM_MAP_* (raw) */
	uint8_t raid_level_raw;      /* 0, 1 (RAID1 with 2 members, else RAID10), 5, 10 */
	int level;                   /* mdadm's level: 0, 1, 5, 10, or -1 when unknown */
	uint8_t num_members;
	uint8_t num_domains;
	uint8_t failed_disk_num;     /* slot, 0xff = none */
	uint8_t ddf;
	struct imsm_slot slots[IMSM_MAX_MEMBERS];  /* [0, num_members) valid */
};

struct imsm_volume_info {
	uint8_t name_raw[16];        /* imsm_dev.volume, raw */
	char name[17];               /* the same up to the first NUL (mdadm prints %.16s) */
	uint8_t uuid[16];            /* mdadm's volume UUID bytes (SHA-1, see docs/imsm-facts.md) */
	char uuid_str[IMSM_UUID_STR]; /* as mdadm --examine prints it */
	uint64_t array_sectors;      /* imsm_dev.size: what md exposes (sysfs array_size) */
	uint32_t status;             /* imsm_dev.status flags, raw */
	uint32_t reserved_blocks;
	uint16_t volume_id;          /* my_vol_raid_dev_num ("Volume ID") */
	uint8_t rwh_policy;          /* 0 off, 1 PPL, ... 5 off (multiple), 6 bitmap */
	/* migration */
	uint8_t migr_state;          /* 0 idle, nonzero: migrating (second map present) */
	uint8_t migr_type;           /* IMSM_MIGR_*, with VERIFY+fix reported as REPAIR */
	uint8_t migr_type_raw;
	uint64_t curr_migr_unit;
	uint8_t dirty;               /* imsm_vol.dirty raw; bit 0 = dirty */
	/* geometry as mdadm hands it to md (getinfo_super_imsm_volume): while
	 * migrating level/chunk/data offset come from the old map (maps[1]) */
	int level;                   /* 0, 1, 5, 10; -1 unknown */
	int md_layout;               /* md's layout number: RAID5 0 (left-asymmetric), RAID10 0x102 */
	uint32_t chunk_bytes;
	int num_members;             /* maps[0].num_members */
	uint64_t data_offset_sectors;      /* pba_of_lba0 */
	uint64_t blocks_per_member;        /* maps[0] ("Per Dev Size") */
	uint64_t num_data_stripes;         /* maps[0] ("Num Stripes") */
	uint64_t member_data_sectors;      /* md component_size: data per member */
	bool num_data_stripes_mismatch;    /* mdadm fell back to array size / data members */
	uint8_t map_state;                 /* maps[0].map_state */
	uint8_t failed_disk_num;           /* maps[0].failed_disk_num, 0xff none */
	int failed_slots;                  /* slots of maps[0] not usable */
	int num_maps;                      /* 1, or 2 when migr_state != 0 */
	struct imsm_map_info maps[2];      /* [0] current/destination, [1] source when migrating */
};

struct imsm_disk_info {
	uint8_t serial[IMSM_SERIAL_LEN];   /* raw, NUL-padded (not NUL-terminated if 16 chars) */
	char serial_str[IMSM_SERIAL_STR];  /* bytes up to the first NUL; others as \xNN */
	uint64_t total_blocks;             /* sectors */
	uint32_t scsi_id;                  /* "Id"; 0xffffffff once mdadm marked it missing */
	uint32_t status;                   /* IMSM_DISK_* raw */
	uint32_t owner_cfg_num;
	bool spare, configured, failed, journal;
};

struct imsm_bbm_entry {
	uint8_t disk;                      /* disk table index (disk_ordinal, not checked) */
	uint32_t count;                    /* sectors (marked_count + 1) */
	uint64_t sector;                   /* on the member, absolute */
};

/* Migration record: last sector of the member, only meaningful while a volume
 * is in general migration (and read by mdadm from slot 0 or 1 only). */
struct imsm_migr_record {
	bool present;                      /* read and not all zero */
	uint32_t rec_status;               /* 0 normal, 1 data in checkpoint area */
	uint64_t curr_migr_unit;
	uint32_t family_num;
	uint32_t ascending_migr;
	uint32_t blocks_per_unit;
	uint32_t dest_depth_per_unit;
	uint64_t ckpt_area_pba;
	uint64_t dest_1st_member_lba;
	uint64_t num_migr_units;
	uint64_t post_migr_vol_cap;
};

/* The whole container as one member's MPB describes it.  Plain data, no
 * pointers: copy, memcmp (parse zeroes it first, padding included) or free
 * as the caller likes.  About 100 KiB: allocate it, don't put it on a small
 * stack. */
struct imsm_info {
	char version[9];             /* after the signature, e.g. "1.2.02" (NUL-terminated) */
	uint32_t sector_size;        /* 512, or 4096 if the anchor was found 8 KiB from the end */
	uint64_t device_bytes;       /* size of the device parsed */
	uint64_t anchor_offset;      /* byte offset of the anchor sector */
	uint64_t mpb_offset;         /* byte offset of the first continuation sector (= anchor if none) */
	uint32_t mpb_size;           /* bytes */
	uint32_t mpb_sectors;        /* sectors of sector_size ("MPB Sectors") */
	uint32_t checksum_stored;
	uint32_t checksum_computed;
	bool checksum_ok;
	uint32_t family_num;
	uint32_t orig_family_num;
	uint32_t generation_num;     /* the freshest copy among members wins */
	uint32_t attributes;
	bool attributes_supported;   /* mdadm 4.2 "All supported" (else it blocks activation) */
	uint64_t creation_time;      /* seconds since the epoch, 0 unknown */
	uint16_t num_raid_devs_created;
	uint8_t uuid[16];            /* container UUID bytes */
	char uuid_str[IMSM_UUID_STR]; /* as mdadm prints it ("UUID :" of the container) */
	int num_disks;
	int num_volumes;
	int num_bbm_entries;
	struct imsm_disk_info disks[IMSM_MAX_DISKS];
	struct imsm_volume_info volumes[IMSM_MAX_VOLUMES];
	struct imsm_bbm_entry bbm[IMSM_MAX_BBM_ENTRIES];
	struct imsm_migr_record migr_rec;
};

/* Parse the IMSM metadata at the end of dev into *out (caller-owned, zeroed
 * and filled here).  Returns 0 when everything is filled; -ENOENT when there
 * is no IMSM anchor (err says so); another -errno with a message naming the
 * field when the anchor is there but the metadata is broken: -EBADMSG bad
 * checksum, -EINVAL impossible sizes/counts/offsets, -E2BIG beyond this
 * parser's limits, or the reader's error (-EIO...).  On error *out holds
 * whatever was parsed so far (at least the container header when the anchor
 * was found). */
int imsm_parse(const struct dev_reader *dev, struct imsm_info *out, char *err, size_t errlen);
int imsm_parse_ex(const struct dev_reader *dev, unsigned flags, struct imsm_info *out,
                  char *err, size_t errlen);

/* Name of md's layout for an IMSM volume: "left-asymmetric" (RAID5, md 0),
 * "n2" (RAID10, 0x102), "-" (RAID0/1), "unknown".  Static string. */
const char *imsm_layout_name(int level, int md_layout);

/* Names for migr_type (mdadm's "Migrate State" words: "initialize", "rebuild",
 * "check", "general migration", "state change", "repair") and map_state
 * ("normal", "uninitialized", "degraded", "failed").  Static strings. */
const char *imsm_migr_type_name(unsigned migr_type);
const char *imsm_map_state_name(unsigned map_state);

/* Why a RAID4/5/6 engine cannot read volume vol of info with md's geometry:
 * returns NULL when it can, else buf (filled with the reason, e.g. "RAID1
 * volume", "migration in progress: general migration (reshape) from RAID5 3
 * members 64 KiB to ...", "2 of 3 members failed").  Degraded by one member
 * is readable (the caller rebuilds from parity). */
const char *imsm_volume_unreadable(const struct imsm_info *info, int vol, char *buf, size_t len);

/* The serial mdadm would store for a drive whose serial (as the drive reports
 * it, or an image's file stem) is name: only the first 50 bytes (mdadm's
 * buffer) up to a NUL are looked at; bytes <= 0x20 and >= 0x80
 * (mdadm's signed-char test) dropped; ':' turned into ';'; only the last 16
 * bytes kept; NUL-padded to 16.  Returns the length (0..16). */
int imsm_serial_normalize(const char *name, uint8_t out[IMSM_SERIAL_LEN]);

/* Find the disk table entry for a serial (16 bytes, compared like mdadm's
 * serialcmp: strncmp over 16 bytes).  Returns the index, or -ENOENT.  With
 * allow_failed, a failed entry whose serial mdadm rewrote (serial + ":0",
 * shifted left once more when the disk went missing: "member1" ->
 * "ember1:0") also matches; *matched_failed (may be NULL) says so. */
int imsm_find_disk(const struct imsm_info *info, const uint8_t serial[IMSM_SERIAL_LEN],
                   bool allow_failed, bool *matched_failed);

/* The container family mdadm groups members by: orig_family_num, or
 * family_num when that is 0. */
uint32_t imsm_family(const struct imsm_info *info);

#endif
