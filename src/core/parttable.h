/* parttable.h - partition tables of whole-disk images (MBR with extended/logical
 * partitions, GPT with primary and backup headers), as Linux numbers them.
 *
 * A member of an md array can be a partition of a disk image: this finds the
 * partitions, their byte ranges and types, so the caller can open the member
 * as a window (start, length) of the image.  Pure: reads through a
 * dev_reader, no file I/O, no allocation but the partition array.
 *
 * Numbering (Linux, block/partitions/msdos.c and efi.c):
 *  - MBR: primary entries are 1-4 by slot (empty slots leave gaps); logical
 *    partitions found along the EBR chains get 5, 6, ... in chain order.
 *    An extended partition is listed too (is_extended = 1, full length, as
 *    sfdisk shows it; the kernel exposes only its first 1 KiB).
 *  - GPT: entry index + 1 (unused entries leave gaps).
 */
#ifndef RAIDIMG_PARTTABLE_H
#define RAIDIMG_PARTTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "dev_reader.h"

enum pt_kind {
	PT_NONE = 0,   /* no MBR signature / not a partition table: a bare member */
	PT_MBR,
	PT_GPT,
};

enum pt_gpt_header {
	PT_GPT_PRIMARY = 0,   /* header at LBA 1 */
	PT_GPT_BACKUP,        /* header at the last LBA (primary damaged) */
};

/* Bounds on hostile input. */
enum {
	PT_MAX_EBRS = 256,            /* EBRs followed along one extended chain */
	PT_MAX_GPT_ENTRIES = 65536,   /* NumberOfPartitionEntries */
	PT_MAX_GPT_ARRAY = 4u << 20,  /* bytes of one entry array */
	PT_MAX_PARTS = 1024,          /* partitions listed in all */
};

/* Flags for pt_parse(). */
enum {
	/* A partition reaching past the end of the image (a truncated image) is
	 * kept with truncated = 1 and a warning instead of refusing the table. */
	PT_ALLOW_TRUNCATED = 1,
};

struct pt_part {
	unsigned number;          /* Linux partition number (1..) */
	uint64_t start;           /* bytes from the start of the image */
	uint64_t length;          /* bytes */
	uint64_t first_lba, last_lba;   /* in sector_size units, inclusive */
	uint8_t mbr_type;         /* MBR system id byte; 0 for GPT */
	uint8_t type_guid[16];    /* GPT: on-disk (mixed-endian) bytes; zero for MBR */
	uint8_t part_guid[16];    /* GPT unique partition GUID (PARTUUID) */
	uint64_t gpt_attributes;
	char type[40];            /* "0xfd" or "A19D880F-05FC-4D3B-A006-743F0F84911E" */
	const char *type_name;    /* "Linux RAID", ...; "" if unknown; static storage */
	char name[112];           /* GPT name as UTF-8 (36 UTF-16 units), "" for MBR */
	int is_linux_raid;        /* MBR 0xfd or GPT Linux RAID GUID */
	int is_extended;          /* MBR extended container (0x05, 0x0f, 0x85) */
	int is_logical;           /* MBR logical partition (number >= 5) */
	int bootable;             /* MBR boot indicator 0x80 */
	int truncated;            /* reaches past the image end (PT_ALLOW_TRUNCATED) */
};

/* The result of pt_parse.  Owns parts (free with pt_table_free). */
struct pt_table {
	enum pt_kind kind;
	unsigned sector_size;     /* logical sector size used (512 or 4096) */
	/* MBR */
	uint32_t mbr_disk_id;     /* at 0x1b8 */
	int protective_mbr;       /* GPT: an 0xEE entry was found in the MBR */
	int hybrid_mbr;           /* GPT: the MBR also has other entries */
	/* GPT */
	enum pt_gpt_header gpt_header_used;
	uint64_t gpt_header_lba;  /* LBA of the header used */
	uint8_t disk_guid[16];    /* on-disk bytes */
	char disk_guid_str[40];
	uint64_t first_usable_lba, last_usable_lba;
	/* all */
	unsigned nparts;
	struct pt_part *parts;    /* sorted by number; owned */
	/* Non-fatal problems, "; "-separated, e.g. "GPT: primary header CRC
	 * 0x12345678, computed 0x9abcdef0: damaged; backup header at LBA 2047
	 * used".  Truncated if long. */
	char warnings[1024];
};

/* Read the partition table of dev.  sector_size: 512 or 4096, or 0 to find
 * it (GPT header at byte 512 or 4096; MBR alone: 512).  flags: PT_* above.
 * On success returns 0 and fills *out (kind PT_NONE when there is no table:
 * no 0x55AA signature, or boot indicators that are not 0/0x80); the caller
 * frees it with pt_table_free.  On error returns -errno (-EINVAL for a
 * damaged or hostile table, a read error as returned by dev->read), writes a
 * message in err naming the field and the problem, and leaves *out empty. */
int pt_parse(const struct dev_reader *dev, unsigned sector_size, int flags,
	     struct pt_table *out, char *err, size_t errlen);

/* Free what pt_parse allocated; *t is left empty.  NULL is fine. */
void pt_table_free(struct pt_table *t);

/* Text of a GUID stored on disk (first three fields little-endian), upper
 * case, 36 characters + NUL into out[37+]. */
void pt_guid_to_str(const uint8_t g[16], char *out, size_t outlen);

/* The printable name of a table kind: "none", "dos", "gpt" (sfdisk's words). */
const char *pt_kind_name(enum pt_kind k);

#endif
