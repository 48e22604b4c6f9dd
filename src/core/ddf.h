/* ddf.h - SNIA DDF (Common RAID Disk Data Format) metadata parser, pure C.
 *
 * Reads the DDF metadata at the end of one member image through a dev_reader
 * callback (no file I/O here) and describes the container and its virtual
 * disks in md's terms (level, layout number, chunk, role, data_offset, size),
 * the way mdadm 4.2 (super-ddf.c) hands a DDF volume to the md driver.
 *
 * Facts and their sources: docs/ddf-facts.md.
 *
 * Limits (fixed-size arrays, see the DDF_MAX_* constants): a container with
 * more physical disks, virtual disks or members per virtual disk than these is
 * refused with -E2BIG and a message naming the count.  512-byte logical
 * sectors only (DDF 2.0 4Kn disks are not handled).
 */
#ifndef RAIDIMG_DDF_H
#define RAIDIMG_DDF_H

#include <stddef.h>
#include <stdint.h>

#include "dev_reader.h"

#define DDF_GUID_LEN      24
#define DDF_MAX_PDS       256   /* physical disk entries in use, per container */
#define DDF_MAX_VDS       32    /* virtual disks per container */
#define DDF_MAX_ROLES     64    /* primary elements (members) per virtual disk */
#define DDF_SEARCH_BYTES  (32u * 1024 * 1024)  /* anchor search window at the end */

/* ddf_parse_ex() flags */
#define DDF_PARSE_NO_SEARCH  0x1  /* only the last sector may hold the anchor */
#define DDF_PARSE_IGNORE_CRC 0x2  /* accept sections whose CRC does not match
                                     (recovery; every mismatch goes to warnings) */

/* Physical disk entry type bits (phys disk records, "PD_Type") */
#define DDF_PDT_FORCED_GUID   0x0001
#define DDF_PDT_ACTIVE_IN_VD  0x0002
#define DDF_PDT_GLOBAL_SPARE  0x0004
#define DDF_PDT_SPARE         0x0008
#define DDF_PDT_FOREIGN       0x0010
#define DDF_PDT_LEGACY        0x0020
/* Physical disk entry state bits ("PD_State") */
#define DDF_PDS_ONLINE        0x0001
#define DDF_PDS_FAILED        0x0002
#define DDF_PDS_REBUILDING    0x0004
#define DDF_PDS_TRANSITION    0x0008
#define DDF_PDS_SMART         0x0010
#define DDF_PDS_READ_ERRORS   0x0020
#define DDF_PDS_MISSING       0x0040

/* Virtual disk state (low 3 bits of "VD_State") and flags */
#define DDF_VDS_OPTIMAL       0
#define DDF_VDS_DEGRADED      1
#define DDF_VDS_DELETED       2
#define DDF_VDS_MISSING       3
#define DDF_VDS_FAILED        4
#define DDF_VDS_PART_OPTIMAL  5
#define DDF_VDS_MASK          0x07
#define DDF_VDS_MORPHING      0x08
#define DDF_VDS_INCONSISTENT  0x10
/* "Init_State": low 2 bits */
#define DDF_INIT_NOT          0
#define DDF_INIT_QUICK        1
#define DDF_INIT_FULL         2
#define DDF_INIT_MASK         0x03

/* Primary RAID level codes ("PRL") */
#define DDF_PRL_RAID0   0x00
#define DDF_PRL_RAID1   0x01
#define DDF_PRL_RAID3   0x03
#define DDF_PRL_RAID4   0x04
#define DDF_PRL_RAID5   0x05
#define DDF_PRL_RAID6   0x06
#define DDF_PRL_JBOD    0x0f
#define DDF_PRL_RAID1E  0x11
#define DDF_PRL_RAID5E  0x15
#define DDF_PRL_CONCAT  0x1f
#define DDF_PRL_RAID5EE 0x25

/* Which CRC-32 variant the metadata uses (both are CRC-32/0x04C11DB7 reflected,
 * computed with the crc field set to 0xffffffff) */
#define DDF_CRC_MDADM    1   /* register starts at 0, no final inversion (mdadm) */
#define DDF_CRC_STANDARD 2   /* zlib/IEEE: starts at ~0, final inversion */

/* Member (role) status in a virtual disk, from this disk's metadata */
enum ddf_member_status {
	DDF_MEMBER_ONLINE = 0,   /* listed, Online, not Failed/Rebuilding: md uses it */
	DDF_MEMBER_FAILED,       /* phys entry has Failed (or Missing) set */
	DDF_MEMBER_REBUILDING,   /* Rebuilding/not Online: md does not read from it */
	DDF_MEMBER_MISSING,      /* refnum not in the phys disk table ("--" in mdadm) */
};

struct ddf_pd {
	uint8_t  guid[DDF_GUID_LEN];
	uint32_t refnum;
	uint16_t type;          /* DDF_PDT_* bits */
	uint16_t state;         /* DDF_PDS_* bits */
	uint64_t config_size;   /* sectors the disk offers for data ("Size" in --examine, /2 K) */
	int      slot;          /* index in the on-disk phys disk table */
};

struct ddf_member {
	uint32_t refnum;        /* phys disk refnum holding this role */
	int      pd;            /* index into ddf_info.pds[], -1 if not listed */
	uint64_t data_offset;   /* sectors: "LBA_Offset" of the member = md's dev offset */
	uint64_t size;          /* sectors of data md uses on this member ("Block_Count") */
	int      status;        /* enum ddf_member_status */
};

struct ddf_vd {
	uint8_t  guid[DDF_GUID_LEN];
	char     name[17];      /* NUL/space padding removed */
	char     uuid[36];      /* mdadm's UUID of the volume, "xxxxxxxx:xxxxxxxx:xxxxxxxx:xxxxxxxx" */
	int      index;         /* index in the virtual disk record table = mdadm "member=" */
	uint16_t vd_number;     /* "unit" */
	uint8_t  state;         /* raw VD_State (DDF_VDS_*) */
	uint8_t  init_state;    /* raw Init_State (DDF_INIT_* | access bits 0xc0) */
	int      consistent;    /* 1: not Inconsistent and fully initialised (md: resync_start=none) */

	/* From this disk's configuration record for the VD.  has_config == 0: the
	 * disk is not a member; everything below is zero / -1. */
	int      has_config;
	uint32_t conf_seqnum, conf_timestamp;
	uint8_t  prl, rlq, srl;
	uint8_t  sec_count;     /* secondary element count (1 = single-level) */
	uint8_t  sec_seq;       /* which basic VD this record describes */
	uint8_t  chunk_shift;   /* chunk = 512 << shift bytes */
	uint64_t chunk_bytes;   /* 0 if chunk_shift is out of range */
	uint64_t blocks;        /* sectors per member */
	uint64_t array_blocks;  /* sectors of the whole VD */
	int      md_level;      /* as mdadm maps it: 0,1,4,5,6,10, -1 linear, -2 unsupported */
	int      md_layout;     /* md ALGORITHM_* number (RAID5 0/1/2, RAID6 8/9/10), -1 unknown */
	int      raid_disks;    /* primary element count = md raid_disks */
	struct ddf_member member[DDF_MAX_ROLES];   /* index = md role */
	int      this_role;     /* role of the disk this metadata was read from, or -1
	                           (two-level VDs: index within its basic VD) */
	int      n_online, n_failed, n_missing;    /* member status counts */
};

struct ddf_info {
	/* container */
	int      big_endian;          /* 1: standard DDF; 0: little-endian (Adaptec) */
	int      crc_kind;            /* DDF_CRC_MDADM or DDF_CRC_STANDARD (of the anchor) */
	char     revision[9];         /* "01.02.00" */
	uint8_t  guid[DDF_GUID_LEN];  /* DDF header GUID = mdadm's "Container GUID" */
	char     container_uuid[36];  /* mdadm's UUID of the container */
	uint8_t  controller_guid[DDF_GUID_LEN];
	uint16_t ctrl_vendor, ctrl_device, ctrl_subvendor, ctrl_subdevice;
	char     product_id[17];

	/* where things are (sectors) */
	uint64_t anchor_lba;          /* where the anchor (or substitute) was found */
	int      anchor_at_end;       /* 1: in the last sector as the spec says */
	int      anchor_type;         /* header type of that sector: 0 anchor, 1/2 = a
	                                 primary/secondary header used in its place */
	uint64_t primary_lba;
	uint64_t secondary_lba;       /* UINT64_MAX: none */
	uint64_t workspace_lba;
	uint32_t workspace_len;
	int      primary_ok, secondary_ok;   /* header valid (magic, CRC, matches anchor) */
	int      header_used;         /* 1 primary, 2 secondary */
	char     header_why[160];     /* why that header (seq numbers, open flags, damage) */

	/* the header used */
	uint32_t seq;                 /* "Seq" in mdadm --examine */
	uint32_t timestamp;           /* seconds since 1980-01-01 (ddf_time_to_unix) */
	uint8_t  open_flag, foreign_flag;
	uint16_t max_pd_entries, max_vd_entries, max_partitions;
	uint16_t config_record_len;   /* sectors per configuration record */
	uint16_t max_primary_elements;

	/* this disk (physical disk data section) */
	uint32_t this_refnum;
	uint8_t  this_guid[DDF_GUID_LEN];
	int      this_pd;             /* index into pds[], -1 if not in the table */

	int      n_pds;
	struct ddf_pd pds[DDF_MAX_PDS];
	int      n_vds;
	struct ddf_vd vds[DDF_MAX_VDS];

	char     warnings[512];       /* non-fatal findings, "; "-separated, "" if none */
};

/* Parse the DDF metadata of one member.  The caller owns *out (about 82 KiB:
 * better on the heap); it is fully overwritten (after a failure its content
 * is partial and must not be used).  No memory stays allocated.  err gets a message on failure
 * (and may be NULL / errlen 0).
 * Returns 0, -ENOENT (no DDF header in the last sector nor, when searching, in
 * the last 32 MiB), -EBADMSG (CRC, magic, inconsistent headers),
 * -EINVAL (lengths, counts, offsets out of range), -E2BIG (more PDs/VDs/members
 * than the DDF_MAX_* limits), -ENOMEM, or the reader's -errno. */
int ddf_parse(const struct dev_reader *dev, struct ddf_info *out, char *err, size_t errlen);
int ddf_parse_ex(const struct dev_reader *dev, unsigned flags, struct ddf_info *out,
		 char *err, size_t errlen);

/* 0 if a RAID4/5/6 engine can read vd with md's level/layout/chunk/roles,
 * else -ENOTSUP with the reason in why (RAID0/1/10/1E/JBOD/concat level,
 * RAID5E/5EE, unknown RLQ, two-level VD (secondary elements: RAID50/60),
 * bad chunk, too few members, members of different sizes, more members
 * failed or missing than the parity can replace, ...). */
int ddf_vd_check_raid456(const struct ddf_vd *vd, char *why, size_t whylen);

/* md's layout for a DDF (prl, rlq, primary element count, secondary count, srl)
 * as mdadm 4.2's layout_ddf2md() does it.  Sets *level (md level, -1 linear)
 * and *layout; returns 0, or -ENOTSUP with a reason (a static string). */
int ddf_md_geometry(uint8_t prl, uint8_t rlq, unsigned prim_count, unsigned sec_count,
		    uint8_t srl, int *level, int *layout, const char **why);

/* Names: "RAID5", "left-symmetric", "Optimal", ... (static strings, never NULL) */
const char *ddf_prl_name(uint8_t prl);
const char *ddf_md_layout_name(int level, int layout);
const char *ddf_vd_state_name(uint8_t state);
const char *ddf_member_status_name(int status);

/* DDF timestamps count seconds from 1980-01-01 00:00 UTC. */
int64_t ddf_time_to_unix(uint32_t t);

/* Format 16 bytes the way mdadm prints a UUID (each 32-bit word byte-reversed,
 * as on a little-endian host; out needs 36 bytes). */
void ddf_format_uuid(const uint8_t bytes[16], char out[36]);

#endif
