/* md1.c - the Linux md version 1.x superblock (1.0, 1.1, 1.2).
 *
 * Layout from the kernel's include/uapi/linux/raid/md_p.h (struct
 * mdp_superblock_1); what mdadm 4.2 writes on create was checked byte by byte
 * against the superblocks in the shared real-md fixtures.  All fields are
 * little-endian; we read them byte-wise so the code is endian-neutral and
 * never makes unaligned accesses.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "le.h"
#include "format.h"
#include "layout.h"
#include "ranges.h"
#include "util.h"

#define MD_MAGIC            0xa92b4efcu
#define SB1_HDR             256         /* fixed part; dev_roles follow */
#define SB1_MAX_DEV_KERNEL  1920        /* (4096 - 256) / 2: what fits in 4 KiB */
#define MAX_SECTOR          UINT64_MAX  /* md's MaxSector: "none"/"all clean" */

/* Field offsets, named as in md_p.h. */
enum {
	O_MAGIC = 0, O_MAJOR = 4, O_FEATURE = 8, O_PAD0 = 12,
	O_SET_UUID = 16, O_SET_NAME = 32, O_CTIME = 64, O_LEVEL = 72,
	O_LAYOUT = 76, O_SIZE = 80, O_CHUNK = 88, O_RAID_DISKS = 92,
	O_BITMAP_OFF = 96, O_NEW_LEVEL = 100, O_RESHAPE_POS = 104,
	O_DELTA_DISKS = 112, O_NEW_LAYOUT = 116, O_NEW_CHUNK = 120,
	O_NEW_OFFSET = 124, O_DATA_OFFSET = 128, O_DATA_SIZE = 136,
	O_SUPER_OFFSET = 144, O_RECOVERY_OFF = 152, O_DEV_NUMBER = 160,
	O_CNT_CORRECTED = 164, O_DEVICE_UUID = 168, O_DEVFLAGS = 184,
	O_BBLOG_SHIFT = 185, O_BBLOG_SIZE = 186, O_BBLOG_OFFSET = 188,
	O_UTIME = 192, O_EVENTS = 200, O_RESYNC_OFF = 208, O_SB_CSUM = 216,
	O_MAX_DEV = 220, O_DEV_ROLES = 256,
};

/* feature_map bits (md_p.h MD_FEATURE_*) */
enum {
	F_BITMAP = 1, F_RECOVERY_OFFSET = 2, F_RESHAPE_ACTIVE = 4,
	F_BAD_BLOCKS = 8, F_REPLACEMENT = 16, F_RESHAPE_BACKWARDS = 32,
	F_NEW_OFFSET = 64,
	F_KNOWN = 0x1fff,       /* up to MD_FEATURE_RAID0_LAYOUT (4096) */
};

enum { ROLE_SPARE = 0xffff, ROLE_FAULTY = 0xfffe, ROLE_JOURNAL = 0xfffd };


/* mdadm calc_sb_1_csum / kernel calc_sb_1_csum: u32 LE words over
 * 256 + 2*max_dev bytes with sb_csum taken as 0, a trailing u16 when max_dev
 * is odd, and the 64-bit sum folded once (lo32 + hi32, carry dropped). */
static uint32_t sb1_csum(const uint8_t *buf, size_t size)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i + 4 <= size; i += 4)
		if (i != O_SB_CSUM)
			sum += get_le32(buf + i);
	if (size - i == 2)
		sum += get_le16(buf + i);
	return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

uint64_t md1_super_offset(int minor, uint64_t dev_sectors)
{
	switch (minor) {
	case 0:
		/* mdadm: at least 8K, less than 12K from the end, 4K aligned */
		if (dev_sectors < 16)
			return UINT64_MAX;
		return (dev_sectors - 16) & ~(uint64_t)7;
	case 1:
		return 0;
	case 2:
		return 8;
	default:
		return UINT64_MAX;
	}
}

/* mdadm names the version from super_offset alone (examine_super1). */
static const char *sb1_format(uint64_t super_offset)
{
	if (super_offset == 0)
		return "1.1";
	if (super_offset == 8)
		return "1.2";
	return "1.0";
}

static int16_t role_from_disk(uint16_t v)
{
	switch (v) {
	case ROLE_SPARE:
		return META_ROLE_SPARE;
	case ROLE_FAULTY:
		return META_ROLE_FAULTY;
	case ROLE_JOURNAL:
		return META_ROLE_JOURNAL;
	default:
		return (int16_t)v;
	}
}

static uint16_t role_to_disk(int role)
{
	switch (role) {
	case META_ROLE_FAULTY:
		return ROLE_FAULTY;
	case META_ROLE_JOURNAL:
		return ROLE_JOURNAL;
	case META_ROLE_SPARE:
	case META_ROLE_MISSING:     /* 1.x has no "removed": md writes 0xffff */
		return ROLE_SPARE;
	default:
		return (uint16_t)role;
	}
}

/* The header checks that need nothing but the buffer: magic, version,
 * max_dev, length, checksum. */
static int sb1_check_header(const uint8_t *buf, size_t len, const char *fmt,
                            char *err, size_t errlen)
{
	uint32_t major, max_dev, stored, computed;
	size_t need;

	if (len < 8 || get_le32(buf + O_MAGIC) != MD_MAGIC)
		return fmt_fail(err, errlen, -ENOENT, "no md 1.x superblock (magic absent)");
	major = get_le32(buf + O_MAJOR);
	/* 0.90 shares the magic: a major of 0 is "not a 1.x superblock". */
	if (major == 0)
		return fmt_fail(err, errlen, -ENOENT, "md superblock has major version 0, not 1.x");
	if (major != 1)
		return fmt_fail(err, errlen, -EINVAL, "md superblock has unknown major version %" PRIu32, major);
	if (len < SB1_HDR)
		return fmt_fail(err, errlen, -EINVAL, "md %s superblock truncated (%zu of %d bytes)",
		            fmt, len, SB1_HDR);
	max_dev = get_le32(buf + O_MAX_DEV);
	if (max_dev > SB1_MAX_DEV_KERNEL)
		return fmt_fail(err, errlen, -EINVAL,
		            "md %s superblock max_dev %" PRIu32 " is impossible (at most %d fit in 4 KiB)",
		            fmt, max_dev, SB1_MAX_DEV_KERNEL);
	if (max_dev > META_MAX_DEVS)
		return fmt_fail(err, errlen, -EOPNOTSUPP,
		            "md %s superblock max_dev %" PRIu32 " is larger than the %d devices supported",
		            fmt, max_dev, META_MAX_DEVS);
	need = SB1_HDR + 2 * (size_t)max_dev;
	if (len < need)
		return fmt_fail(err, errlen, -EINVAL, "md %s superblock truncated (%zu of %zu bytes)",
		            fmt, len, need);
	stored = get_le32(buf + O_SB_CSUM);
	computed = sb1_csum(buf, need);
	if (stored != computed)
		return fmt_fail(err, errlen, -EBADMSG,
		            "md %s superblock checksum mismatch (stored 0x%08" PRIx32
		            ", computed 0x%08" PRIx32 ")", fmt, stored, computed);
	return 0;
}

/* Copy the plain fields; no judgement yet. */
static void sb1_fill(const uint8_t *buf, struct member_meta *out)
{
	uint32_t chunk = get_le32(buf + O_CHUNK);
	int i;

	snprintf(out->format, sizeof(out->format), "%s", sb1_format(get_le64(buf + O_SUPER_OFFSET)));
	memcpy(out->set_uuid, buf + O_SET_UUID, 16);
	memcpy(out->set_name, buf + O_SET_NAME, 32);
	out->set_name[32] = '\0';
	out->level = (int32_t)get_le32(buf + O_LEVEL);
	out->layout = (int32_t)get_le32(buf + O_LAYOUT);
	out->chunk_bytes = chunk * 512u;
	out->raid_disks = (int)get_le32(buf + O_RAID_DISKS);
	out->component_sectors = get_le64(buf + O_SIZE);
	out->data_offset = get_le64(buf + O_DATA_OFFSET);
	out->data_size = get_le64(buf + O_DATA_SIZE);
	out->super_offset = get_le64(buf + O_SUPER_OFFSET);
	out->dev_number = (int)get_le32(buf + O_DEV_NUMBER);
	out->events = get_le64(buf + O_EVENTS);
	/* lo 40 bits are seconds, the top 24 microseconds (or 0) */
	out->ctime = get_le64(buf + O_CTIME) & 0xffffffffffull;
	out->utime = get_le64(buf + O_UTIME) & 0xffffffffffull;
	out->resync_offset = get_le64(buf + O_RESYNC_OFF);
	out->recovery_offset = get_le64(buf + O_RECOVERY_OFF);
	out->feature_map = get_le32(buf + O_FEATURE);
	memcpy(out->device_uuid, buf + O_DEVICE_UUID, 16);
	out->bblog_shift = buf[O_BBLOG_SHIFT];
	out->sb_csum = get_le32(buf + O_SB_CSUM);
	out->bitmap_offset = (int32_t)get_le32(buf + O_BITMAP_OFF);
	out->bblog_size = get_le16(buf + O_BBLOG_SIZE);
	out->bblog_offset = (int32_t)get_le32(buf + O_BBLOG_OFFSET);

	/* Like the kernel (super_1_validate): without an active reshape the
	 * "new" geometry is the current one, so callers need no special case. */
	out->reshape_active = !!(out->feature_map & F_RESHAPE_ACTIVE);
	if (out->reshape_active) {
		out->reshape_position = get_le64(buf + O_RESHAPE_POS);
		out->new_level = (int32_t)get_le32(buf + O_NEW_LEVEL);
		out->new_layout = (int32_t)get_le32(buf + O_NEW_LAYOUT);
		out->delta_disks = (int32_t)get_le32(buf + O_DELTA_DISKS);
		out->new_chunk_bytes = get_le32(buf + O_NEW_CHUNK) * 512u;
	} else {
		out->reshape_position = MAX_SECTOR;
		out->new_level = out->level;
		out->new_layout = out->layout;
		out->delta_disks = 0;
		out->new_chunk_bytes = out->chunk_bytes;
	}
	/* new_offset only counts during a reshape and with its feature bit
	 * (kernel super_1_load does the same) */
	if (out->reshape_active && (out->feature_map & F_NEW_OFFSET))
		out->new_offset = (int32_t)get_le32(buf + O_NEW_OFFSET);

	out->max_dev = (int)get_le32(buf + O_MAX_DEV);
	for (i = 0; i < META_MAX_DEVS; i++)
		out->dev_roles[i] = i < out->max_dev ? role_from_disk(get_le16(buf + O_DEV_ROLES + 2 * i))
		                                     : META_ROLE_MISSING;
}

/* What the kernel refuses before looking further (super_1_load): unknown
 * features, and non-zero padding, which it takes for one. */
static int sb1_check_features(const struct member_meta *m, const uint8_t *buf, char *err, size_t errlen)
{
	size_t i;

	if (m->feature_map & ~(uint32_t)F_KNOWN)
		return fmt_fail(err, errlen, -EOPNOTSUPP, "md %s superblock has unknown feature bits 0x%" PRIx32,
		            m->format, m->feature_map & ~(uint32_t)F_KNOWN);
	for (i = O_MAX_DEV + 4; i < SB1_HDR; i++)
		if (buf[i])
			break;
	if (get_le32(buf + O_PAD0) || i < SB1_HDR)
		return fmt_fail(err, errlen, -EOPNOTSUPP,
		            "md %s superblock has non-zero padding (an unknown feature?)", m->format);
	return 0;
}

/* Largest role a device may hold: while a reshape shrinks the array,
 * raid_disks is already the new (smaller) count but the leaving devices
 * still have their old roles. */
static int64_t role_limit(const struct member_meta *m)
{
	int64_t old = m->reshape_active ? (int64_t)m->raid_disks - m->delta_disks : m->raid_disks;

	return old > m->raid_disks ? old : m->raid_disks;
}

static int sb1_check_geometry(const struct member_meta *m, const uint8_t *buf, char *err, size_t errlen)
{
	const char *fmt = m->format;
	uint32_t chunk = get_le32(buf + O_CHUNK);
	int64_t limit;
	int i;

	if (m->raid_disks <= 0 || m->raid_disks > 256)
		return fmt_fail(err, errlen, -EINVAL, "md %s superblock has impossible raid_disks %" PRIu32,
		            fmt, get_le32(buf + O_RAID_DISKS));
	if (m->raid_disks > m->max_dev)
		return fmt_fail(err, errlen, -EINVAL,
		            "md %s superblock lists %d devices (max_dev) for %d raid disks",
		            fmt, m->max_dev, m->raid_disks);
	if (chunk >= (1u << 23))   /* chunk_bytes would overflow 32 bits */
		return fmt_fail(err, errlen, -EINVAL, "md %s superblock chunk size %" PRIu32 " sectors is impossible",
		            fmt, chunk);
	if (m->reshape_active) {
		int64_t old = (int64_t)m->raid_disks - m->delta_disks;

		if (old <= 0 || old > 256)
			return fmt_fail(err, errlen, -EINVAL,
			            "md %s superblock reshape from %" PRId64 " devices (delta %d) is impossible",
			            fmt, old, m->delta_disks);
		if (get_le32(buf + O_NEW_CHUNK) >= (1u << 23))
			return fmt_fail(err, errlen, -EINVAL, "md %s superblock new chunk size is impossible", fmt);
	}
	if ((uint32_t)m->dev_number >= (uint32_t)m->max_dev)
		return fmt_fail(err, errlen, -EINVAL, "md %s superblock dev_number %" PRIu32 " is out of range (max_dev %d)",
		            fmt, get_le32(buf + O_DEV_NUMBER), m->max_dev);
	/* raw values: 0xfff0..0xfffc are no known role either */
	limit = role_limit(m);
	for (i = 0; i < m->max_dev; i++) {
		uint16_t v = get_le16(buf + O_DEV_ROLES + 2 * i);

		if (v >= limit && v < ROLE_JOURNAL)
			return fmt_fail(err, errlen, -EINVAL,
			            "md %s superblock gives device %d role %u but the array has %d devices",
			            fmt, i, v, m->raid_disks);
	}
	return 0;
}

/* Where data may live.  dev_sectors 0 means "size unknown": skip the
 * checks against the device end. */
static int sb1_check_space(const struct member_meta *m, uint64_t dev_sectors, char *err, size_t errlen)
{
	const char *fmt = m->format;
	uint64_t end;       /* first sector data may not use */
	int before = m->super_offset > m->data_offset;      /* 1.0: data below the superblock */

	if (!before) {
		/* 1.1/1.2, now and after a reshape: the kernel wants the data
		 * past the superblock's sectors */
		uint64_t sb_end = m->super_offset + (SB1_HDR + 2 * (uint64_t)m->max_dev + 511) / 512;

		if (m->data_offset < sb_end ||
		    (m->new_offset < 0 && (uint64_t)-m->new_offset > m->data_offset - sb_end))
			return fmt_fail(err, errlen, -EINVAL,
			            "md %s superblock data_offset %" PRIu64 " (new offset %" PRId64
			            ") overlaps the superblock at sector %" PRIu64,
			            fmt, m->data_offset, m->new_offset, m->super_offset);
	}
	if (!dev_sectors)
		return 0;
	if (m->super_offset >= dev_sectors)
		return fmt_fail(err, errlen, -EINVAL,
		            "md %s superblock super_offset %" PRIu64 " is beyond the device (%" PRIu64 " sectors)",
		            fmt, m->super_offset, dev_sectors);
	if (m->data_offset >= dev_sectors)
		return fmt_fail(err, errlen, -EINVAL,
		            "md %s superblock data_offset %" PRIu64 " is beyond the device (%" PRIu64 " sectors)",
		            fmt, m->data_offset, dev_sectors);
	if (before) {
		/* The kernel only insists that data_size <= super_offset
		 * (super_1_load); mdadm counts 1.0's data_size from sector 0. */
		end = m->super_offset;
		if (m->data_size > end)
			return fmt_fail(err, errlen, -EINVAL,
			            "md %s superblock data_size %" PRIu64 " runs into the superblock at %" PRIu64,
			            fmt, m->data_size, end);
	} else {
		/* 1.1/1.2: the superblock is at the start, so a truncated image
		 * still has it; data past the end of the image is the
		 * assembler's business (it rebuilds it from parity). */
		return 0;
	}
	if (m->component_sectors > end - m->data_offset)
		return fmt_fail(err, errlen, -EINVAL,
		            "md %s superblock component size %" PRIu64 " at data_offset %" PRIu64
		            " is beyond the device data area (ends at %" PRIu64 ")",
		            fmt, m->component_sectors, m->data_offset, end);
	return 0;
}

int md1_parse(const uint8_t *buf, size_t len, uint64_t dev_sectors, struct member_meta *out,
              char *err, size_t errlen)
{
	const char *fmt = len >= O_SUPER_OFFSET + 8 ? sb1_format(get_le64(buf + O_SUPER_OFFSET)) : "1.x";
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sb1_check_header(buf, len, fmt, err, errlen);
	if (rc)
		return rc;
	sb1_fill(buf, out);
	rc = sb1_check_features(out, buf, err, errlen);
	if (!rc)
		rc = sb1_check_geometry(out, buf, err, errlen);
	if (rc)
		return rc;
	/* kernel: "data_size too small" */
	if (out->data_size < 10)
		return fmt_fail(err, errlen, -EINVAL, "md %s superblock data_size %" PRIu64 " is too small",
		            fmt, out->data_size);
	if (out->component_sectors > out->data_size)
		return fmt_fail(err, errlen, -EINVAL,
		            "md %s superblock component size %" PRIu64 " exceeds its data_size %" PRIu64,
		            fmt, out->component_sectors, out->data_size);
	rc = sb1_check_space(out, dev_sectors, err, errlen);
	if (rc)
		return rc;
	out->role = out->dev_roles[out->dev_number];
	out->fmt = format_by_name(out->format);
	return 0;
}

/* ---- the bad-block log ---- */

#define BBLOG_MAX_SECTORS 8     /* the kernel reads one page of it */

int md1_bblog_locate(const struct member_meta *m, uint64_t dev_bytes, uint64_t *off, size_t *len, char *err,
		     size_t errlen)
{
	int64_t at;

	if (!(m->feature_map & F_BAD_BLOCKS))
		return -ENOENT;
	if (m->bblog_size == 0 || m->bblog_size > BBLOG_MAX_SECTORS || m->bblog_offset == 0)
		return fmt_fail(err, errlen, -EINVAL, "md %s superblock: bad-block log of %u sectors at offset %" PRId32
				" (md reads 1 to %d sectors, at a non-zero offset)", m->format, m->bblog_size,
				m->bblog_offset, BBLOG_MAX_SECTORS);
	if (m->bblog_shift > 32)
		return fmt_fail(err, errlen, -EINVAL, "md %s superblock: bad-block log shift %u is impossible",
				m->format, m->bblog_shift);
	at = (int64_t)m->super_offset + m->bblog_offset;
	if (m->super_offset > INT64_MAX / 1024 || at < 0 ||
	    (uint64_t)at * 512 + (uint64_t)m->bblog_size * 512 > dev_bytes)
		return fmt_fail(err, errlen, -EINVAL, "md %s superblock: bad-block log at sector %" PRId64
				" (%u sectors) is outside the device (%" PRIu64 " bytes)", m->format, at,
				m->bblog_size, dev_bytes);
	*off = (uint64_t)at * 512;
	*len = (size_t)m->bblog_size * 512;
	return 0;
}

int md1_bblog_parse(const uint8_t *buf, size_t len, unsigned shift, struct range_list *out, char *err,
		    size_t errlen)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t bb = get_le64(buf + i), sector, count;

		if (bb == UINT64_MAX)
			break;
		if (bb == 0)
			continue;
		sector = bb >> 10;
		count = bb & 0x3ff;
		if (shift > 32 || sector > (UINT64_MAX >> 9) >> shift || count == 0)
			continue;       /* nothing md could have meant (count 0: no sectors) */
		sector <<= shift;
		count <<= shift;
		if (range_list_add(out, sector * 512, count * 512))
			return fmt_fail(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- writing ---- */

/* mdadm choose_bm_space(): room kept after the superblock for a bitmap,
 * which also decides where mdadm puts the bad block log. */
static uint64_t choose_bm_space(uint64_t size)
{
	if (size < 64 * 2)
		return 0;
	if (size - 64 * 2 >= 200ull * 1024 * 1024 * 2)
		return 128 * 2;
	if (size - 4 * 2 > 8ull * 1024 * 1024 * 2)
		return 64 * 2;
	return 4 * 2;
}

static int minor_of(const char *format)
{
	if (!strcmp(format, "1.0"))
		return 0;
	if (!strcmp(format, "1.1"))
		return 1;
	if (!strcmp(format, "1.2"))
		return 2;
	return -1;
}

/* The geometry md1_build writes: m's values, with mdadm's defaults where
 * m leaves them 0. */
struct sb1_plan {
	int minor;
	uint64_t super_offset, data_offset, data_size, size;
	int max_dev;            /* dev_roles entries written */
	size_t sb_len;
	uint16_t bblog_size;
	int32_t bblog_offset;
};

/* mdadm init_super1: max_dev fills the 512-byte sectors the roles need. */
static int max_dev_for(int devices)
{
	int bytes = (SB1_HDR + 2 * devices + 511) / 512 * 512;

	return (bytes - SB1_HDR) / 2;
}

static int plan_devices(const struct member_meta *m, struct sb1_plan *p)
{
	int n = m->max_dev > m->raid_disks ? m->max_dev : m->raid_disks;

	if (m->dev_number >= n)
		n = m->dev_number + 1;
	p->max_dev = max_dev_for(n);
	if (p->max_dev > META_MAX_DEVS)
		return -EINVAL;
	p->sb_len = (size_t)(SB1_HDR + 2 * p->max_dev + 511) / 512 * 512;
	return 0;
}

/* Sizes and where the bad block log goes, as write_init_super1 does. */
static int plan_space(const struct member_meta *m, uint64_t dev_sectors, struct sb1_plan *p)
{
	uint64_t chunk = m->chunk_bytes / 512, sb_sectors = p->sb_len / 512, bm_space, room;

	p->data_offset = m->data_offset;
	if (p->minor == 0) {
		if (p->data_offset >= p->super_offset)
			return -EINVAL;
		room = p->super_offset - p->data_offset;
		/* + 8: bad block log; with no size yet, the room is a close guess */
		bm_space = choose_bm_space(m->component_sectors ? m->component_sectors : room) + 8;
		if (m->component_sectors > room)
			return -EINVAL;
		if (m->data_size) {
			p->data_size = m->data_size;
		} else {
			/* mdadm: sb_offset - bm_space, clipped so the array fits; we count
			 * from data_offset (mdadm counts from 0; same when it is 0). */
			if (m->component_sectors && room - m->component_sectors < bm_space)
				bm_space = room - m->component_sectors;
			p->data_size = room > bm_space ? room - bm_space : 0;
		}
		if (p->data_size > room)
			return -EINVAL;
		if (room - p->data_size >= 8) {
			p->bblog_size = 8;
			p->bblog_offset = -8;
		}
	} else {
		/* 1.1/1.2: data after the superblock; mdadm 4.2 chose 1 MiB for
		 * the fixtures, so that is the default. */
		if (!p->data_offset)
			p->data_offset = 2048;
		if (p->data_offset < p->super_offset + sb_sectors || p->data_offset >= dev_sectors)
			return -EINVAL;
		p->data_size = m->data_size ? m->data_size : dev_sectors - p->data_offset;
		if (p->data_size > dev_sectors - p->data_offset)
			return -EINVAL;
	}
	p->size = m->component_sectors;
	if (!p->size && chunk)
		p->size = p->data_size / chunk * chunk;
	else if (!p->size)
		p->size = p->data_size;
	if (p->size > p->data_size)
		return -EINVAL;
	if (p->minor != 0) {
		/* bitmap space (8 + bm_space), then 8 sectors of bad block log */
		bm_space = choose_bm_space(p->size);
		if (p->data_offset >= p->super_offset + 8 + bm_space + 8) {
			p->bblog_size = 8;
			p->bblog_offset = (int32_t)(8 + bm_space);
		} else if (p->data_offset >= p->super_offset + 16) {
			p->bblog_size = 8;
			p->bblog_offset = (int32_t)(p->data_offset - 8 - p->super_offset);
		}
	}
	return 0;
}

static int role_ok(const struct member_meta *m, int role)
{
	if (role >= 0)
		return role < role_limit(m);
	return role == META_ROLE_SPARE || role == META_ROLE_FAULTY || role == META_ROLE_JOURNAL ||
	       role == META_ROLE_MISSING;
}

static int check_build_args(const struct member_meta *m)
{
	/* Feature bits whose structures we would also have to write (bitmap,
	 * journal, PPL, clustering...) are refused.  The bad-block bit is
	 * dropped: a freshly written member has an empty log. */
	const uint32_t ok = F_RECOVERY_OFFSET | F_RESHAPE_ACTIVE | F_BAD_BLOCKS | F_REPLACEMENT |
	                    F_RESHAPE_BACKWARDS | F_NEW_OFFSET;
	int i;

	if (m->feature_map & ~ok)
		return -EOPNOTSUPP;
	if (m->raid_disks <= 0 || m->raid_disks > 256 || m->chunk_bytes % 512)
		return -EINVAL;
	if (m->dev_number < 0 || m->dev_number >= META_MAX_DEVS || m->max_dev < 0 ||
	    m->max_dev > META_MAX_DEVS)
		return -EINVAL;
	if (!role_ok(m, m->role))
		return -EINVAL;
	for (i = 0; i < m->max_dev; i++)
		if (!role_ok(m, m->dev_roles[i]))
			return -EINVAL;
	/* this device's role must agree with the array's view, if given */
	if (m->dev_number < m->max_dev && m->dev_roles[m->dev_number] != m->role)
		return -EINVAL;
	return 0;
}

static void write_roles(const struct member_meta *m, const struct sb1_plan *p, uint8_t *buf)
{
	int i;

	for (i = 0; i < p->max_dev; i++) {
		uint16_t v = ROLE_SPARE;

		if (m->max_dev == 0 && i < m->raid_disks)
			v = (uint16_t)i;        /* no table given: device i has role i */
		else if (i < m->max_dev)
			v = role_to_disk(m->dev_roles[i]);
		put_le16(buf + O_DEV_ROLES + 2 * i, v);
	}
	put_le16(buf + O_DEV_ROLES + 2 * m->dev_number, role_to_disk(m->role));
}

static void write_fields(const struct member_meta *m, const struct sb1_plan *p, uint8_t *buf)
{
	uint32_t features = m->feature_map & (F_RECOVERY_OFFSET | F_REPLACEMENT | F_RESHAPE_BACKWARDS);

	put_le32(buf + O_MAGIC, MD_MAGIC);
	put_le32(buf + O_MAJOR, 1);
	memcpy(buf + O_SET_UUID, m->set_uuid, 16);
	memcpy(buf + O_SET_NAME, m->set_name, strnlen(m->set_name, 32));
	put_le64(buf + O_CTIME, m->ctime & 0xffffffffffull);
	put_le32(buf + O_LEVEL, (uint32_t)m->level);
	put_le32(buf + O_LAYOUT, (uint32_t)m->layout);
	put_le64(buf + O_SIZE, p->size);
	put_le32(buf + O_CHUNK, m->chunk_bytes / 512);
	put_le32(buf + O_RAID_DISKS, (uint32_t)m->raid_disks);
	if (m->reshape_active) {
		features |= F_RESHAPE_ACTIVE;
		put_le32(buf + O_NEW_LEVEL, (uint32_t)m->new_level);
		put_le64(buf + O_RESHAPE_POS, m->reshape_position);
		put_le32(buf + O_DELTA_DISKS, (uint32_t)m->delta_disks);
		put_le32(buf + O_NEW_LAYOUT, (uint32_t)m->new_layout);
		put_le32(buf + O_NEW_CHUNK, m->new_chunk_bytes / 512);
	}
	if (m->reshape_active && m->new_offset) {
		features |= F_NEW_OFFSET;
		put_le32(buf + O_NEW_OFFSET, (uint32_t)(int32_t)m->new_offset);
	}
	put_le64(buf + O_DATA_OFFSET, p->data_offset);
	put_le64(buf + O_DATA_SIZE, p->data_size);
	put_le64(buf + O_SUPER_OFFSET, p->super_offset);
	if (features & F_RECOVERY_OFFSET)
		put_le64(buf + O_RECOVERY_OFF, m->recovery_offset);
	put_le32(buf + O_DEV_NUMBER, (uint32_t)m->dev_number);
	memcpy(buf + O_DEVICE_UUID, m->device_uuid, 16);
	buf[O_BBLOG_SHIFT] = 0;
	put_le16(buf + O_BBLOG_SIZE, p->bblog_size);
	put_le32(buf + O_BBLOG_OFFSET, (uint32_t)p->bblog_offset);
	put_le64(buf + O_UTIME, m->utime & 0xffffffffffull);
	put_le64(buf + O_EVENTS, m->events);
	put_le64(buf + O_RESYNC_OFF, m->resync_offset);
	put_le32(buf + O_MAX_DEV, (uint32_t)p->max_dev);
	put_le32(buf + O_FEATURE, features);
}

int md1_build(const struct member_meta *m, uint8_t *buf, size_t buflen, uint64_t dev_sectors,
              uint64_t *image_off, size_t *sb_len)
{
	struct sb1_plan p = { 0 };
	struct member_meta check;
	int rc;

	p.minor = minor_of(m->format);
	if (p.minor < 0)
		return -EINVAL;
	if (dev_sectors < 24)           /* mdadm's minimum for 1.x */
		return -EINVAL;
	rc = check_build_args(m);
	if (!rc)
		rc = plan_devices(m, &p);
	if (rc)
		return rc;
	if (buflen < p.sb_len)
		return -EINVAL;
	p.super_offset = md1_super_offset(p.minor, dev_sectors);
	rc = plan_space(m, dev_sectors, &p);
	if (rc)
		return rc;

	memset(buf, 0, buflen < 4096 ? buflen : 4096);
	write_fields(m, &p, buf);
	write_roles(m, &p, buf);
	put_le32(buf + O_SB_CSUM, sb1_csum(buf, SB1_HDR + 2 * (size_t)p.max_dev));
	/* whatever m asked for, never hand out a superblock we would refuse */
	if (md1_parse(buf, p.sb_len, dev_sectors, &check, NULL, 0))
		return -EINVAL;
	*image_off = p.super_offset * 512;
	*sb_len = p.sb_len;
	return 0;
}

/* ---- the 1.x formats (format.h) ---- */

#define SB_READ 4096

static int md1_probe(const struct dev_reader *dev, int minor, const struct format_ops *fmt,
		     struct format_found *out, char *err, size_t errlen)
{
	uint64_t dev_sectors = dev->size / 512;
	uint64_t sector = md1_super_offset(minor, dev_sectors);
	struct member_meta *m = &out->vol[0];
	uint8_t buf[SB_READ];
	int rc;

	if (sector == UINT64_MAX || dev->size < SB_READ || sector > (dev->size - SB_READ) / 512)
		return fmt_fail(err, errlen, -ENOENT, "image too small for an md %s superblock", fmt->name);
	rc = dev->read(dev->ctx, buf, SB_READ, sector * 512);
	if (rc)
		return fmt_fail(err, errlen, rc, "cannot read the md %s superblock at sector %" PRIu64 ": %s",
				fmt->name, sector, strerror(-rc));
	rc = md1_parse(buf, sizeof(buf), dev_sectors, m, err, errlen);
	if (rc)
		return rc;
	/* A superblock that is not where it says it is was copied or the image
	 * was resized; the kernel refuses it too. */
	if (m->super_offset != sector)
		return fmt_fail(err, errlen, -EINVAL,
				"md %s superblock at sector %" PRIu64 " records super_offset %" PRIu64,
				fmt->name, sector, m->super_offset);
	/* the location we read decides the version (on tiny images 1.0 may
	 * sit at sector 8, where the parser alone would say 1.2) */
	m->fmt = fmt;
	snprintf(m->format, sizeof(m->format), "%s", fmt->name);
	out->nvol = 1;
	return 0;
}

static int probe_md12(const struct dev_reader *dev, struct format_found *out, char *err, size_t errlen)
{
	return md1_probe(dev, 2, &format_md12, out, err, errlen);
}

static int probe_md11(const struct dev_reader *dev, struct format_found *out, char *err, size_t errlen)
{
	return md1_probe(dev, 1, &format_md11, out, err, errlen);
}

static int probe_md10(const struct dev_reader *dev, struct format_found *out, char *err, size_t errlen)
{
	return md1_probe(dev, 0, &format_md10, out, err, errlen);
}

static uint64_t super_md12(uint64_t dev_sectors) { return md1_super_offset(2, dev_sectors); }
static uint64_t super_md11(uint64_t dev_sectors) { return md1_super_offset(1, dev_sectors); }
static uint64_t super_md10(uint64_t dev_sectors) { return md1_super_offset(0, dev_sectors); }

/* 1.1/1.2: data may start past the superblock, whose dev_roles table grows
 * with the number of devices. */
static uint64_t min_data_md11(int devices)
{
	return md1_super_offset(1, 1u << 20) + (256 + 2 * (uint64_t)devices + 511) / 512;
}

static uint64_t min_data_md12(int devices)
{
	return md1_super_offset(2, 1u << 20) + (256 + 2 * (uint64_t)devices + 511) / 512;
}

static uint64_t min_data_md10(int devices)
{
	return 0;
}

static uint64_t usable_at_start(uint64_t dev_sectors, uint64_t data_offset)
{
	return dev_sectors > data_offset ? dev_sectors - data_offset : 0;
}

/* 1.0: as mdadm, 8 sectors of bad block log below the superblock and 8
 * more kept free (its bitmap room for small devices). */
static uint64_t usable_md10(uint64_t dev_sectors, uint64_t data_offset)
{
	uint64_t sb = md1_super_offset(0, dev_sectors);

	return sb != UINT64_MAX && sb > 16 ? sb - 16 : 0;
}

#define MD1_OPS(var, nm, flg, dflt, probe_fn, super_fn, min_fn, usable_fn) \
	const struct format_ops var = { \
		.name = nm, .family = "md", .flags = flg, .max_members = LAYOUT_MAX_DISKS, .max_dev_slots = META_MAX_DEVS, \
		.max_component_sectors = UINT64_MAX, .default_data_offset = dflt, .probe = probe_fn, \
		.super_offset = super_fn, .min_data_offset = min_fn, .usable_sectors = usable_fn, \
		.build = md1_build, \
	}

MD1_OPS(format_md12, "1.2", FORMAT_DATA_OFFSET, 1u << 20, probe_md12, super_md12, min_data_md12, usable_at_start);
MD1_OPS(format_md11, "1.1", FORMAT_DATA_OFFSET, 1u << 20, probe_md11, super_md11, min_data_md11, usable_at_start);
MD1_OPS(format_md10, "1.0", 0, 0, probe_md10, super_md10, min_data_md10, usable_md10);
