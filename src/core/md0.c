/* md0.c - the Linux md version 0.90 superblock.
 *
 * Layout from the kernel's include/uapi/linux/raid/md_p.h (mdp_super_t):
 * 4096 bytes of u32 words in the byte order of the host that wrote it.  We
 * read them as little-endian, which is what x86/arm hosts write (mdadm's
 * "0.90" is host-endian; a big-endian member would need its "0.9" byte
 * swap, not handled here).  Checked against the r5-la-4x6M-32K-md090
 * fixture written by Linux 6.1 + mdadm 4.2.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "le.h"
#include "format.h"
#include "util.h"

#define MD_MAGIC    0xa92b4efcu
#define SB0_BYTES   4096
#define SB0_DISKS   27          /* MD_SB_DISKS */
#define DESC_BYTES  128         /* one mdp_disk_t: 32 words */
#define MAX_SECTOR  UINT64_MAX

/* Byte offsets of the fields (md_p.h word index * 4). */
enum {
	O_MAGIC = 0, O_MAJOR = 4, O_MINOR = 8, O_PATCH = 12, O_UUID0 = 20,
	O_CTIME = 24, O_LEVEL = 28, O_SIZE = 32, O_NR_DISKS = 36,
	O_RAID_DISKS = 40, O_MD_MINOR = 44, O_UUID1 = 52, O_UUID2 = 56,
	O_UUID3 = 60, O_UTIME = 128, O_STATE = 132, O_ACTIVE = 136,
	O_WORKING = 140, O_FAILED = 144, O_SPARE = 148, O_SB_CSUM = 152,
	O_EVENTS_LO = 156, O_EVENTS_HI = 160, O_CP_EVENTS_LO = 164,
	O_CP_EVENTS_HI = 168, O_RECOVERY_CP = 172, O_RESHAPE_POS = 176,
	O_NEW_LEVEL = 184, O_DELTA_DISKS = 188, O_NEW_LAYOUT = 192,
	O_NEW_CHUNK = 196, O_LAYOUT = 256, O_CHUNK = 260, O_DISKS = 512,
	O_THIS_DISK = 3968,
};

/* mdp_disk_t words */
enum { D_NUMBER = 0, D_MAJOR = 4, D_MINOR = 8, D_RAID_DISK = 12, D_STATE = 16 };

enum {
	DISK_FAULTY = 1 << 0, DISK_ACTIVE = 1 << 1, DISK_SYNC = 1 << 2,
	DISK_REMOVED = 1 << 3,
};

enum { SB_CLEAN = 1 << 0, SB_BITMAP_PRESENT = 1 << 8 };

/* mdadm calc_sb0_csum (util.c calc_csum) and the kernel's calc_sb_csum:
 * the 1024 u32 words with sb_csum as 0, summed in 64 bits, folded once. */
static uint32_t sb0_csum(const uint8_t *buf)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < SB0_BYTES; i += 4)
		if (i != O_SB_CSUM)
			sum += get_le32(buf + i);
	return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

uint64_t md0_super_offset(uint64_t dev_sectors)
{
	/* MD_NEW_SIZE_SECTORS: the last 64 KiB-aligned 64 KiB of the device */
	if (dev_sectors < 128)
		return UINT64_MAX;
	return (dev_sectors & ~(uint64_t)127) - 128;
}

/* The set uuid as mdadm prints it: each of the four u32 words as a number,
 * so we keep each word big-endian in set_uuid and meta_uuid_format() can
 * print bytes in order, the same as for 1.x. */
static void uuid_get(const uint8_t *buf, uint8_t uuid[16])
{
	static const int off[4] = { O_UUID0, O_UUID1, O_UUID2, O_UUID3 };
	int i;

	for (i = 0; i < 4; i++) {
		uint32_t w = get_le32(buf + off[i]);

		uuid[4 * i] = (uint8_t)(w >> 24);
		uuid[4 * i + 1] = (uint8_t)(w >> 16);
		uuid[4 * i + 2] = (uint8_t)(w >> 8);
		uuid[4 * i + 3] = (uint8_t)w;
	}
}

static void uuid_put(uint8_t *buf, const uint8_t uuid[16])
{
	static const int off[4] = { O_UUID0, O_UUID1, O_UUID2, O_UUID3 };
	int i;

	for (i = 0; i < 4; i++)
		put_le32(buf + off[i], (uint32_t)uuid[4 * i] << 24 | (uint32_t)uuid[4 * i + 1] << 16 |
		                    (uint32_t)uuid[4 * i + 2] << 8 | uuid[4 * i + 3]);
}

/* Role of one disks[] descriptor, as the kernel's super_90_validate decides
 * it (plus "removed"/empty, which the kernel never turns into a device). */
static int desc_role(const uint8_t *d, int raid_disks, int reshaping)
{
	uint32_t state = get_le32(d + D_STATE);
	uint32_t raid_disk = get_le32(d + D_RAID_DISK);

	if (state & DISK_REMOVED)
		return META_ROLE_MISSING;
	if (state & DISK_FAULTY)
		return META_ROLE_FAULTY;
	if (state == 0 && get_le32(d + D_MAJOR) == 0 && get_le32(d + D_MINOR) == 0)
		return META_ROLE_MISSING;           /* never-used slot: all zero */
	if ((state & DISK_ACTIVE) && raid_disk < (uint32_t)raid_disks) {
		if (state & DISK_SYNC)
			return (int)raid_disk;
		/* active, not in sync: while reshaping (minor 91) the kernel
		 * counts it in, recovered up to the reshape position */
		if (reshaping)
			return (int)raid_disk;
	}
	return META_ROLE_SPARE;
}

static int sb0_check_header(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	uint32_t major, minor, stored, computed;

	if (len < 4 || get_le32(buf + O_MAGIC) != MD_MAGIC)
		return fmt_fail(err, errlen, -ENOENT, "no md 0.90 superblock (magic absent)");
	if (len < SB0_BYTES)
		return fmt_fail(err, errlen, -EINVAL, "md 0.90 superblock truncated (%zu of %d bytes)",
		            len, SB0_BYTES);
	major = get_le32(buf + O_MAJOR);
	minor = get_le32(buf + O_MINOR);
	if (major != 0)
		return fmt_fail(err, errlen, -EINVAL, "md 0.90 superblock has major version %" PRIu32 ", not 0", major);
	if (minor != 90 && minor != 91)
		return fmt_fail(err, errlen, -EINVAL, "md 0.90 superblock has unsupported minor version %" PRIu32,
		            minor);
	stored = get_le32(buf + O_SB_CSUM);
	computed = sb0_csum(buf);
	if (stored != computed)
		return fmt_fail(err, errlen, -EBADMSG,
		            "md 0.90 superblock checksum mismatch (stored 0x%08" PRIx32
		            ", computed 0x%08" PRIx32 ")", stored, computed);
	return 0;
}

/* kernel super_90_validate: clean -> nothing to resync; otherwise
 * recovery_cp counts only if it was saved with the current events. */
static uint64_t sb0_resync_offset(const uint8_t *buf)
{
	uint32_t cp = get_le32(buf + O_RECOVERY_CP);

	if (get_le32(buf + O_STATE) & SB_CLEAN)
		return MAX_SECTOR;
	if (get_le32(buf + O_EVENTS_LO) != get_le32(buf + O_CP_EVENTS_LO) ||
	    get_le32(buf + O_EVENTS_HI) != get_le32(buf + O_CP_EVENTS_HI))
		return 0;
	return cp == 0xffffffffu ? MAX_SECTOR : cp;
}

static void sb0_fill(const uint8_t *buf, uint64_t dev_sectors, struct member_meta *out)
{
	int i;

	snprintf(out->format, sizeof(out->format), "0.90");
	uuid_get(buf, out->set_uuid);
	out->level = (int32_t)get_le32(buf + O_LEVEL);
	out->layout = (int32_t)get_le32(buf + O_LAYOUT);
	out->chunk_bytes = get_le32(buf + O_CHUNK);
	out->raid_disks = (int)get_le32(buf + O_RAID_DISKS);
	out->component_sectors = (uint64_t)get_le32(buf + O_SIZE) * 2;    /* KiB */
	out->data_offset = 0;
	out->super_offset = dev_sectors ? md0_super_offset(dev_sectors) : 0;
	out->data_size = dev_sectors ? out->super_offset : 0;
	out->dev_number = (int)get_le32(buf + O_THIS_DISK + D_NUMBER);
	out->events = (uint64_t)get_le32(buf + O_EVENTS_HI) << 32 | get_le32(buf + O_EVENTS_LO);
	out->ctime = get_le32(buf + O_CTIME);
	out->utime = get_le32(buf + O_UTIME);
	out->resync_offset = sb0_resync_offset(buf);
	out->recovery_offset = 0;
	/* feature_map synthesized with the 1.x meanings */
	out->feature_map = 0;
	if (get_le32(buf + O_STATE) & SB_BITMAP_PRESENT)
		out->feature_map |= 1;
	out->bitmap_offset = 8;         /* the 4 KiB after the superblock */
	out->sb_csum = get_le32(buf + O_SB_CSUM);

	out->reshape_active = get_le32(buf + O_MINOR) == 91;
	if (out->reshape_active) {
		uint32_t lo = get_le32(buf + O_RESHAPE_POS), hi = get_le32(buf + O_RESHAPE_POS + 4);

		out->feature_map |= 4;
		out->reshape_position = (uint64_t)hi << 32 | lo;
		out->new_level = (int32_t)get_le32(buf + O_NEW_LEVEL);
		out->delta_disks = (int32_t)get_le32(buf + O_DELTA_DISKS);
		out->new_layout = (int32_t)get_le32(buf + O_NEW_LAYOUT);
		out->new_chunk_bytes = get_le32(buf + O_NEW_CHUNK);
		if (out->delta_disks < 0)
			out->feature_map |= 32;
	} else {
		out->reshape_position = MAX_SECTOR;
		out->new_level = out->level;
		out->new_layout = out->layout;
		out->new_chunk_bytes = out->chunk_bytes;
	}

	out->max_dev = SB0_DISKS;
	for (i = 0; i < META_MAX_DEVS; i++)
		out->dev_roles[i] = META_ROLE_MISSING;
}

static int sb0_check(const struct member_meta *m, uint64_t dev_sectors, char *err, size_t errlen)
{
	int64_t old = (int64_t)m->raid_disks - m->delta_disks;

	if (m->raid_disks <= 0 || m->raid_disks > SB0_DISKS)
		return fmt_fail(err, errlen, -EINVAL, "md 0.90 superblock has impossible raid_disks %d",
		            m->raid_disks);
	if (m->reshape_active && (old <= 0 || old > SB0_DISKS))
		return fmt_fail(err, errlen, -EINVAL,
		            "md 0.90 superblock reshape from %" PRId64 " devices (delta %d) is impossible",
		            old, m->delta_disks);
	if ((uint32_t)m->dev_number >= SB0_DISKS)
		return fmt_fail(err, errlen, -EINVAL, "md 0.90 superblock this_disk number %u is out of range (max %d)",
		            (unsigned)m->dev_number, SB0_DISKS);
	if (dev_sectors && m->component_sectors > m->data_size)
		return fmt_fail(err, errlen, -EINVAL,
		            "md 0.90 superblock component size %" PRIu64
		            " sectors is beyond the device data area (%" PRIu64 " sectors)",
		            m->component_sectors, m->data_size);
	return 0;
}

int md0_parse(const uint8_t *buf, size_t len, uint64_t dev_sectors, struct member_meta *out,
              char *err, size_t errlen)
{
	int limit, i, rc;

	memset(out, 0, sizeof(*out));
	if (dev_sectors && dev_sectors < 128)
		return fmt_fail(err, errlen, -EINVAL, "device of %" PRIu64 " sectors is too small for md 0.90",
		            dev_sectors);
	rc = sb0_check_header(buf, len, err, errlen);
	if (rc)
		return rc;
	sb0_fill(buf, dev_sectors, out);
	rc = sb0_check(out, dev_sectors, err, errlen);
	if (rc)
		return rc;
	/* shrinking reshape: leaving devices keep roles >= the new count */
	limit = out->raid_disks - (out->delta_disks < 0 ? out->delta_disks : 0);
	for (i = 0; i < SB0_DISKS; i++)
		out->dev_roles[i] = (int16_t)desc_role(buf + O_DISKS + i * DESC_BYTES, limit,
		                                       out->reshape_active);
	out->role = out->dev_roles[out->dev_number];
	out->fmt = &format_md090;
	if (out->reshape_active && out->role >= 0 &&
	    !(get_le32(buf + O_DISKS + out->dev_number * DESC_BYTES + D_STATE) & DISK_SYNC))
		out->feature_map |= 2;      /* recovered up to the reshape only */
	return 0;
}

/* ---- writing ---- */

/* One disks[] slot, the way the kernel's super_90_sync fills it.  The
 * major/minor are made up (loop devices): md ignores them when assembling,
 * but a non-zero pair tells a spare from an empty slot. */
static void put_desc(uint8_t *d, int slot, int role)
{
	put_le32(d + D_NUMBER, (uint32_t)slot);
	put_le32(d + D_MAJOR, 7);
	put_le32(d + D_MINOR, (uint32_t)slot);
	switch (role) {
	case META_ROLE_SPARE:
		put_le32(d + D_RAID_DISK, (uint32_t)slot);     /* kernel: "compatibility" */
		put_le32(d + D_STATE, 0);
		break;
	case META_ROLE_FAULTY:
		put_le32(d + D_RAID_DISK, (uint32_t)slot);
		put_le32(d + D_STATE, DISK_FAULTY);
		break;
	default:
		put_le32(d + D_RAID_DISK, (uint32_t)role);
		put_le32(d + D_STATE, DISK_ACTIVE | DISK_SYNC);
		break;
	}
}

/* Role of slot i from m: its table, or role = slot when none is given. */
static int slot_role(const struct member_meta *m, int i)
{
	if (i == m->dev_number)
		return m->role;
	if (m->max_dev == 0)
		return i < m->raid_disks ? i : META_ROLE_MISSING;
	return i < m->max_dev ? m->dev_roles[i] : META_ROLE_MISSING;
}

struct sb0_counts {
	uint32_t nr, active, working, failed, spare;
};

static int write_disks(const struct member_meta *m, uint8_t *buf, struct sb0_counts *c)
{
	uint8_t used[SB0_DISKS] = { 0 };
	int i;

	for (i = 0; i < SB0_DISKS; i++) {
		int role = slot_role(m, i);
		uint8_t *d = buf + O_DISKS + i * DESC_BYTES;

		if (role == META_ROLE_MISSING)
			continue;
		if (role == META_ROLE_JOURNAL || role < META_ROLE_MISSING || role >= m->raid_disks)
			return -EINVAL;
		put_desc(d, i, role);
		used[i] = 1;
		c->nr++;
		if (role >= 0) {
			c->active++;
			c->working++;
		} else if (role == META_ROLE_SPARE) {
			c->spare++;
			c->working++;
		} else {
			c->failed++;
		}
	}
	/* kernel: unused slots below raid_disks are written "removed, faulty" */
	for (i = 0; i < m->raid_disks; i++) {
		uint8_t *d = buf + O_DISKS + i * DESC_BYTES;

		if (used[i])
			continue;
		put_le32(d + D_NUMBER, (uint32_t)i);
		put_le32(d + D_RAID_DISK, (uint32_t)i);
		put_le32(d + D_STATE, DISK_REMOVED | DISK_FAULTY);
		c->failed++;
	}
	return 0;
}

static int check_build_args(const struct member_meta *m, uint64_t dev_sectors, uint64_t *size)
{
	uint64_t room = md0_super_offset(dev_sectors), chunk = m->chunk_bytes / 512;

	/* 0.90 data always starts at sector 0 */
	if (strcmp(m->format, "0.90") || room == UINT64_MAX || m->data_offset)
		return -EINVAL;
	if (m->raid_disks <= 0 || m->raid_disks > SB0_DISKS || m->dev_number < 0 ||
	    m->dev_number >= SB0_DISKS || m->role == META_ROLE_MISSING || m->max_dev < 0)
		return -EINVAL;
	if (m->reshape_active)
		return -EOPNOTSUPP;     /* writing a 0.91 reshape is not needed */
	*size = m->component_sectors;
	if (!*size)
		*size = chunk ? room / chunk * chunk : room;
	*size &= ~(uint64_t)1;      /* the field counts KiB */
	if (*size > room || *size / 2 > UINT32_MAX || m->component_sectors % 2)
		return -EINVAL;
	return 0;
}

static void write_state(const struct member_meta *m, uint8_t *buf)
{
	put_le32(buf + O_EVENTS_LO, (uint32_t)m->events);
	put_le32(buf + O_EVENTS_HI, (uint32_t)(m->events >> 32));
	/* as super_90_sync does for an array in sync */
	put_le32(buf + O_CP_EVENTS_LO, (uint32_t)m->events);
	put_le32(buf + O_CP_EVENTS_HI, (uint32_t)(m->events >> 32));
	if (m->resync_offset == MAX_SECTOR) {
		put_le32(buf + O_STATE, SB_CLEAN);
		put_le32(buf + O_RECOVERY_CP, 0xffffffffu);
	} else {
		put_le32(buf + O_STATE, 0);
		put_le32(buf + O_RECOVERY_CP, m->resync_offset > 0xfffffffeu ? 0xfffffffeu
		                                                          : (uint32_t)m->resync_offset);
	}
}

int md0_build(const struct member_meta *m, uint8_t *buf, size_t buflen, uint64_t dev_sectors,
              uint64_t *image_off, size_t *sb_len)
{
	struct sb0_counts c = { 0 };
	struct member_meta check;
	uint64_t size;
	int rc;

	rc = check_build_args(m, dev_sectors, &size);
	if (rc)
		return rc;
	if (buflen < SB0_BYTES)
		return -EINVAL;
	memset(buf, 0, SB0_BYTES);
	rc = write_disks(m, buf, &c);
	if (rc)
		return rc;

	put_le32(buf + O_MAGIC, MD_MAGIC);
	put_le32(buf + O_MAJOR, 0);
	put_le32(buf + O_MINOR, 90);
	uuid_put(buf, m->set_uuid);
	put_le32(buf + O_CTIME, (uint32_t)m->ctime);
	put_le32(buf + O_LEVEL, (uint32_t)m->level);
	put_le32(buf + O_SIZE, (uint32_t)(size / 2));
	put_le32(buf + O_NR_DISKS, c.nr);
	put_le32(buf + O_RAID_DISKS, (uint32_t)m->raid_disks);
	put_le32(buf + O_UTIME, (uint32_t)m->utime);
	put_le32(buf + O_ACTIVE, c.active);
	put_le32(buf + O_WORKING, c.working);
	put_le32(buf + O_FAILED, c.failed);
	put_le32(buf + O_SPARE, c.spare);
	write_state(m, buf);
	put_le32(buf + O_LAYOUT, (uint32_t)m->layout);
	put_le32(buf + O_CHUNK, m->chunk_bytes);
	memcpy(buf + O_THIS_DISK, buf + O_DISKS + m->dev_number * DESC_BYTES, DESC_BYTES);
	put_le32(buf + O_SB_CSUM, sb0_csum(buf));
	/* whatever m asked for, never hand out a superblock we would refuse */
	if (md0_parse(buf, SB0_BYTES, dev_sectors, &check, NULL, 0))
		return -EINVAL;

	*image_off = md0_super_offset(dev_sectors) * 512;
	*sb_len = SB0_BYTES;
	return 0;
}

/* ---- the 0.90 format (format.h) ---- */

static int probe_md090(const struct dev_reader *dev, struct format_found *out, char *err, size_t errlen)
{
	uint64_t dev_sectors = dev->size / 512;
	uint64_t sector = md0_super_offset(dev_sectors);
	uint8_t buf[SB0_BYTES];
	int rc;

	if (sector == UINT64_MAX || sector > (dev->size - SB0_BYTES) / 512)
		return fmt_fail(err, errlen, -ENOENT, "image too small for an md 0.90 superblock");
	rc = dev->read(dev->ctx, buf, SB0_BYTES, sector * 512);
	if (rc)
		return fmt_fail(err, errlen, rc, "cannot read the md 0.90 superblock at sector %" PRIu64 ": %s",
				sector, strerror(-rc));
	rc = md0_parse(buf, sizeof(buf), dev_sectors, &out->vol[0], err, errlen);
	if (rc)
		return rc;
	out->vol[0].fmt = &format_md090;
	out->nvol = 1;
	return 0;
}

static uint64_t min_data_md090(int devices)
{
	return 0;
}

static uint64_t usable_md090(uint64_t dev_sectors, uint64_t data_offset)
{
	uint64_t sb = md0_super_offset(dev_sectors);

	return sb == UINT64_MAX ? 0 : sb;
}

const struct format_ops format_md090 = {
	.name = "0.90",
	.family = "md",
	.flags = FORMAT_NO_RECOVERY_OFFSET | FORMAT_FIXED_SLOTS,
	.max_members = SB0_DISKS,
	.max_dev_slots = SB0_DISKS,
	.max_component_sectors = (uint64_t)UINT32_MAX * 2,    /* size is in KiB, 32 bits */
	.default_data_offset = 0,
	.probe = probe_md090,
	.super_offset = md0_super_offset,
	.min_data_offset = min_data_md090,
	.usable_sectors = usable_md090,
	.build = md0_build,
};
