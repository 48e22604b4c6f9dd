/* imsm.c - Intel IMSM metadata parser (see imsm.h; facts and sources: docs/imsm-facts.md).
 *
 * Reads the MPB (anchor in the second-to-last sector, continuation sectors
 * before it), checks its checksum and every size, count and index, and
 * describes the container, its disks and its volumes the way mdadm 4.2
 * presents them to md.  No file I/O: everything goes through a dev_reader.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "imsm.h"
#include "le.h"
#include "sha1.h"
#include "util.h"

/* ---- on-disk layout (little-endian, offsets in bytes) ------------------ */

static const char imsm_signature[] = "Intel Raid ISM Cfg Sig. ";
enum { SIG_LEN = 24, SIG_FIELD = 32 };

/* struct imsm_super */
enum {
	SB_CHECK_SUM = 0x20,
	SB_MPB_SIZE = 0x24,
	SB_FAMILY_NUM = 0x28,
	SB_GENERATION_NUM = 0x2c,
	SB_ATTRIBUTES = 0x34,
	SB_NUM_DISKS = 0x38,
	SB_NUM_RAID_DEVS = 0x39,
	SB_ORIG_FAMILY_NUM = 0x40,
	SB_BBM_LOG_SIZE = 0x48,
	SB_NUM_RAID_DEVS_CREATED = 0x4c,
	SB_CREATION_TIME = 0x50,
	SB_DISK_TABLE = 0xd8,
};

/* struct imsm_disk, 48 bytes */
enum {
	DISK_SIZE = 48,
	DISK_SERIAL = 0,
	DISK_TOTAL_BLOCKS_LO = 16,
	DISK_SCSI_ID = 20,
	DISK_STATUS = 24,
	DISK_OWNER_CFG_NUM = 28,
	DISK_TOTAL_BLOCKS_HI = 32,
};

/* struct imsm_dev: 80 bytes, then struct imsm_vol: 32 bytes, then map[0] */
enum {
	DEV_VOLUME = 0,
	DEV_SIZE_LOW = 16,
	DEV_SIZE_HIGH = 20,
	DEV_STATUS = 24,
	DEV_RESERVED_BLOCKS = 28,
	DEV_MY_VOL_RAID_DEV_NUM = 40,
	DEV_RWH_POLICY = 50,
	DEV_VOL = 80,
	VOL_CURR_MIGR_UNIT_LO = DEV_VOL + 0,
	VOL_MIGR_STATE = DEV_VOL + 8,
	VOL_MIGR_TYPE = DEV_VOL + 9,
	VOL_DIRTY = DEV_VOL + 10,
	VOL_CURR_MIGR_UNIT_HI = DEV_VOL + 16,
	DEV_MAP0 = DEV_VOL + 32,
	DEV_STATUS_VERIFY_AND_FIX = 0x80,
};

/* struct imsm_map: 48 bytes + 4 per member */
enum {
	MAP_HDR = 48,
	MAP_PBA_LO = 0,
	MAP_BPM_LO = 4,
	MAP_NDS_LO = 8,
	MAP_BLOCKS_PER_STRIP = 12,
	MAP_MAP_STATE = 14,
	MAP_RAID_LEVEL = 15,
	MAP_NUM_MEMBERS = 16,
	MAP_NUM_DOMAINS = 17,
	MAP_FAILED_DISK_NUM = 18,
	MAP_DDF = 19,
	MAP_PBA_HI = 20,
	MAP_BPM_HI = 24,
	MAP_NDS_HI = 28,
	MAP_ORD_TBL = 48,
	ORD_REBUILD = 1 << 24,
};

/* bad block log at the end of the MPB */
enum {
	BBM_SIGNATURE = 0xabadb10c,
	BBM_HDR = 8,
	BBM_ENTRY = 8,
};

/* struct migr_record (last sector) */
enum {
	MR_REC_STATUS = 0,
	MR_CURR_MIGR_UNIT_LO = 4,
	MR_FAMILY_NUM = 8,
	MR_ASCENDING_MIGR = 12,
	MR_BLOCKS_PER_UNIT = 16,
	MR_DEST_DEPTH_PER_UNIT = 20,
	MR_CKPT_AREA_PBA_LO = 24,
	MR_DEST_1ST_MEMBER_LBA_LO = 28,
	MR_NUM_MIGR_UNITS_LO = 32,
	MR_POST_MIGR_VOL_CAP = 36,
	MR_POST_MIGR_VOL_CAP_HI = 40,
	MR_CURR_MIGR_UNIT_HI = 48,
	MR_CKPT_AREA_PBA_HI = 52,
	MR_DEST_1ST_MEMBER_LBA_HI = 56,
	MR_NUM_MIGR_UNITS_HI = 60,
	MR_SIZE = 128,
};

/* attributes (mdadm 4.2 MPB_ATTRIB_SUPPORTED / MPB_ATTRIB_IGNORED) */
#define ATTR_2TB_DISK 0x04000000u
#define ATTR_SUPPORTED_42 (0x80000000u | 0x20000000u | 0x04000000u | 0x01u | 0x02u | 0x04u | \
                           0x10u | 0x40u | 0x08000000u)
#define ATTR_IGNORED_42 0x40000000u

enum { SECTORS_4K = 8 };     /* 4096-byte sector in 512-byte sectors */
enum { MB_SECTORS = 2048 };  /* mdadm: sizes rounded to 1 MiB per member */

static uint64_t join32(const uint8_t *lo, const uint8_t *hi)
{
	return (uint64_t)get_le32(lo) | (uint64_t)get_le32(hi) << 32;
}

/* ---- small helpers ----------------------------------------------------- */

/* mdadm's __gen_imsm_checksum: u32 sum of the first mpb_size/4 words, the
 * stored checksum's own value subtracted (= the field counted as zero). */
static uint32_t mpb_checksum(const uint8_t *mpb, uint32_t mpb_size)
{
	uint32_t sum = 0;
	uint32_t words = mpb_size / 4;

	for (uint32_t i = 0; i < words; i++)
		sum += get_le32(mpb + 4 * i);
	return sum - get_le32(mpb + SB_CHECK_SUM);
}

/* mdadm's uuid printing (__fname_from_uuid, swapuuid 0 on x86): each 4-byte
 * group printed as a little-endian 32-bit word. */
static void uuid_to_str(const uint8_t uuid[16], char out[IMSM_UUID_STR])
{
	static const char hex[] = "0123456789abcdef";
	char *c = out;

	for (int i = 0; i < 4; i++) {
		if (i)
			*c++ = ':';
		for (int j = 3; j >= 0; j--) {
			*c++ = hex[uuid[4 * i + j] >> 4];
			*c++ = hex[uuid[4 * i + j] & 15];
		}
	}
	*c = '\0';
}

/* SHA-1 of the concatenation; first 16 bytes of the digest. */
static void sha1_uuid(const uint8_t *data, size_t len, uint8_t uuid[16])
{
	uint8_t md[20];

	sha1_digest(data, len, md);
	memcpy(uuid, md, 16);
}

static void printable(const uint8_t *raw, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n && raw[i]; i++) {
		uint8_t b = raw[i];

		if (b >= 0x20 && b < 0x7f && b != '\\') {
			if (o + 1 >= outlen)
				break;
			out[o++] = (char)b;
		} else {
			if (o + 4 >= outlen)
				break;
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", b);
		}
	}
	out[o] = '\0';
}

/* mdadm's get_imsm_raid_level */
static int imsm_level(uint8_t raw, uint8_t num_members)
{
	switch (raw) {
	case 0:
		return 0;
	case 1:
		return num_members == 2 ? 1 : 10;
	case 5:
		return 5;
	case 10:
		return 10;
	default:
		return -1;
	}
}

/* mdadm's imsm_level_to_layout */
static int imsm_md_layout(int level)
{
	switch (level) {
	case 0:
	case 1:
		return 0;
	case 5:
		return 0;   /* ALGORITHM_LEFT_ASYMMETRIC */
	case 10:
		return 0x102; /* near 2 */
	default:
		return -1;
	}
}

/* mdadm's imsm_num_data_members */
static unsigned data_members(int level, unsigned num_members)
{
	switch (level) {
	case 0:
		return num_members;
	case 1:
	case 10:
		return num_members / 2;
	case 5:
		return num_members ? num_members - 1 : 0;
	default:
		return 0;
	}
}

/* mdadm's per_dev_array_size: sectors each member gives the volume.
 * -EOVERFLOW if it does not fit 64 bits. */
static int per_dev_sectors(const struct imsm_map_info *m, uint64_t *out)
{
	uint64_t v;

	if (__builtin_mul_overflow(m->num_data_stripes, (uint64_t)m->blocks_per_strip, &v))
		return -EOVERFLOW;
	if ((m->level == 1 || m->level == 10) && __builtin_mul_overflow(v, (uint64_t)2, &v))
		return -EOVERFLOW;
	*out = v;
	return 0;
}

/* ---- reading ----------------------------------------------------------- */

static int dev_read(const struct dev_reader *dev, void *buf, size_t len, uint64_t off,
                    const char *what, char *err, size_t errlen)
{
	int rc;

	if (off > dev->size || len > dev->size - off) {
		fmt_err(err, errlen, "IMSM: %s at byte %" PRIu64 " (+%zu) lies past the end of the "
		       "device (%" PRIu64 " bytes)", what, off, len, dev->size);
		return -EIO;
	}
	rc = dev->read(dev->ctx, buf, len, off);
	if (rc < 0) {
		fmt_err(err, errlen, "IMSM: reading %s at byte %" PRIu64 ": %s", what, off,
		       strerror(-rc));
		return rc;
	}
	return 0;
}

/* Look for the anchor with sector size ss.  1 found (anchor in buf), 0 not
 * there, -errno read error. */
static int find_anchor(const struct dev_reader *dev, uint32_t ss, uint8_t *buf,
                       char *err, size_t errlen)
{
	int rc;

	if (dev->size < 2ull * ss)
		return 0;
	rc = dev_read(dev, buf, ss, dev->size - 2ull * ss, "the MPB anchor sector", err, errlen);
	if (rc < 0)
		return rc;
	return memcmp(buf, imsm_signature, SIG_LEN) == 0;
}

/* ---- parsing ----------------------------------------------------------- */

struct cursor {
	const uint8_t *mpb;
	uint32_t end;       /* bytes of volume records available (mpb_size - bbm_log_size) */
};

static int parse_map(const struct cursor *c, uint32_t off, int vol, int mapn,
                     struct imsm_map_info *m, uint32_t *map_len, int num_disks,
                     char *err, size_t errlen)
{
	const uint8_t *p;
	uint32_t len;

	if (off > c->end || c->end - off < MAP_HDR) {
		fmt_err(err, errlen, "IMSM: volume %d map %d header at MPB byte %u runs past the "
		       "volume records (%u bytes): mpb_size or num_raid_devs is wrong",
		       vol, mapn, off, c->end);
		return -EINVAL;
	}
	p = c->mpb + off;
	m->num_members = p[MAP_NUM_MEMBERS];
	if (m->num_members == 0) {
		fmt_err(err, errlen, "IMSM: volume %d map %d: num_members 0", vol, mapn);
		return -EINVAL;
	}
	len = MAP_HDR + 4u * m->num_members;
	if (c->end - off < len) {
		fmt_err(err, errlen, "IMSM: volume %d map %d: disk_ord_tbl of num_members %u runs "
		       "past the volume records (MPB byte %u + %u > %u)", vol, mapn,
		       m->num_members, off, len, c->end);
		return -EINVAL;
	}
	m->pba_of_lba0 = join32(p + MAP_PBA_LO, p + MAP_PBA_HI);
	m->blocks_per_member = join32(p + MAP_BPM_LO, p + MAP_BPM_HI);
	m->num_data_stripes = join32(p + MAP_NDS_LO, p + MAP_NDS_HI);
	m->blocks_per_strip = get_le16(p + MAP_BLOCKS_PER_STRIP);
	m->map_state = p[MAP_MAP_STATE];
	m->raid_level_raw = p[MAP_RAID_LEVEL];
	m->level = imsm_level(m->raid_level_raw, m->num_members);
	m->num_domains = p[MAP_NUM_DOMAINS];
	m->failed_disk_num = p[MAP_FAILED_DISK_NUM];
	m->ddf = p[MAP_DDF];
	for (unsigned s = 0; s < m->num_members; s++) {
		uint32_t ord = get_le32(p + MAP_ORD_TBL + 4 * s);
		uint32_t idx = ord & 0xffffff;

		if (idx >= (uint32_t)num_disks) {
			fmt_err(err, errlen, "IMSM: volume %d map %d slot %u: disk_ord_tbl entry "
			       "0x%08x names disk %u, but num_disks is %d", vol, mapn, s, ord,
			       idx, num_disks);
			return -EINVAL;
		}
		for (unsigned t = 0; t < s; t++) {
			if (m->slots[t].disk == idx) {
				fmt_err(err, errlen, "IMSM: volume %d map %d: disk_ord_tbl puts disk "
				       "%u in slots %u and %u", vol, mapn, idx, t, s);
				return -EINVAL;
			}
		}
		m->slots[s].disk = (uint8_t)idx;
		m->slots[s].ord_flags = (uint8_t)(ord >> 24);
		m->slots[s].out_of_sync = (ord & ORD_REBUILD) != 0;
	}
	*map_len = len;
	return 0;
}

/* 4096-byte-sector drives store sizes in 4 KiB units (mdadm convert_from_4k) */
static int map_from_4k(struct imsm_map_info *m)
{
	if (__builtin_mul_overflow(m->pba_of_lba0, (uint64_t)SECTORS_4K, &m->pba_of_lba0) ||
	    __builtin_mul_overflow(m->blocks_per_member, (uint64_t)SECTORS_4K,
	                           &m->blocks_per_member))
		return -EOVERFLOW;
	m->blocks_per_strip *= SECTORS_4K;
	return 0;
}

/* mdadm's clear_hi: without MPB_ATTRIB_2TB_DISK the _hi words are ignored */
static void map_clear_hi(struct imsm_map_info *m)
{
	m->pba_of_lba0 &= 0xffffffffu;
	m->blocks_per_member &= 0xffffffffu;
	m->num_data_stripes &= 0xffffffffu;
}

static void parse_header(struct imsm_info *out, const uint8_t *mpb)
{
	memcpy(out->version, mpb + SIG_LEN, SIG_FIELD - SIG_LEN);
	out->version[SIG_FIELD - SIG_LEN] = '\0';
	for (size_t i = 0; out->version[i]; i++)
		if ((unsigned char)out->version[i] < 0x20 || (unsigned char)out->version[i] >= 0x7f)
			out->version[i] = '?';
	out->checksum_stored = get_le32(mpb + SB_CHECK_SUM);
	out->mpb_size = get_le32(mpb + SB_MPB_SIZE);
	out->family_num = get_le32(mpb + SB_FAMILY_NUM);
	out->generation_num = get_le32(mpb + SB_GENERATION_NUM);
	out->attributes = get_le32(mpb + SB_ATTRIBUTES);
	out->attributes_supported =
		(out->attributes & ~ATTR_SUPPORTED_42 & ~ATTR_IGNORED_42) == 0;
	out->num_disks = mpb[SB_NUM_DISKS];
	out->num_volumes = mpb[SB_NUM_RAID_DEVS];
	out->orig_family_num = get_le32(mpb + SB_ORIG_FAMILY_NUM);
	out->num_raid_devs_created = get_le16(mpb + SB_NUM_RAID_DEVS_CREATED);
	out->creation_time = get_le64(mpb + SB_CREATION_TIME);
}

static void parse_disks(struct imsm_info *out, const uint8_t *mpb)
{
	bool clear_hi = !(out->attributes & ATTR_2TB_DISK);

	for (int i = 0; i < out->num_disks; i++) {
		const uint8_t *p = mpb + SB_DISK_TABLE + DISK_SIZE * i;
		struct imsm_disk_info *d = &out->disks[i];

		memcpy(d->serial, p + DISK_SERIAL, IMSM_SERIAL_LEN);
		printable(d->serial, IMSM_SERIAL_LEN, d->serial_str, sizeof(d->serial_str));
		d->total_blocks = join32(p + DISK_TOTAL_BLOCKS_LO, p + DISK_TOTAL_BLOCKS_HI);
		if (out->sector_size == 4096) {
			/* 64-bit first, then clear_hi, as mdadm does */
			if (d->total_blocks > UINT64_MAX / SECTORS_4K)
				d->total_blocks = UINT64_MAX / SECTORS_4K; /* saturate */
			d->total_blocks *= SECTORS_4K;
		}
		if (clear_hi)
			d->total_blocks &= 0xffffffffu;
		d->scsi_id = get_le32(p + DISK_SCSI_ID);
		d->status = get_le32(p + DISK_STATUS);
		d->owner_cfg_num = get_le32(p + DISK_OWNER_CFG_NUM);
		d->spare = (d->status & IMSM_DISK_SPARE) != 0;
		d->configured = (d->status & IMSM_DISK_CONFIGURED) != 0;
		d->failed = (d->status & IMSM_DISK_FAILED) != 0;
		d->journal = (d->status & IMSM_DISK_JOURNAL) != 0;
	}
}

static int parse_bbm(struct imsm_info *out, const uint8_t *mpb, uint32_t bbm_size,
                     char *err, size_t errlen)
{
	const uint8_t *log = mpb + out->mpb_size - bbm_size;
	uint32_t sig, count;

	if (bbm_size < BBM_HDR) {
		fmt_err(err, errlen, "IMSM: bbm_log_size %u is smaller than the log header (8)",
		       bbm_size);
		return -EINVAL;
	}
	sig = get_le32(log);
	count = get_le32(log + 4);
	if (sig != BBM_SIGNATURE) {
		fmt_err(err, errlen, "IMSM: bad block log signature 0x%08x, expected 0x%08x",
		       sig, (unsigned)BBM_SIGNATURE);
		return -EINVAL;
	}
	if (count > IMSM_MAX_BBM_ENTRIES) {
		fmt_err(err, errlen, "IMSM: bad block log entry_count %u exceeds %d", count,
		       IMSM_MAX_BBM_ENTRIES);
		return -EINVAL;
	}
	if (bbm_size != BBM_HDR + BBM_ENTRY * count) {
		fmt_err(err, errlen, "IMSM: bbm_log_size %u does not match entry_count %u "
		       "(expected %u)", bbm_size, count, BBM_HDR + BBM_ENTRY * count);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *e = log + BBM_HDR + BBM_ENTRY * i;
		struct imsm_bbm_entry *b = &out->bbm[i];

		b->count = (uint32_t)e[0] + 1;
		b->disk = e[1];
		b->sector = (uint64_t)get_le32(e + 4) << 16 | get_le16(e + 2);
		if (out->sector_size == 4096) {
			b->count *= SECTORS_4K;
			b->sector *= SECTORS_4K;
		}
	}
	out->num_bbm_entries = (int)count;
	return 0;
}

/* mdadm's calc_component_size + imsm_component_size_alignment_check */
static void volume_geometry(struct imsm_info *out, struct imsm_volume_info *v)
{
	const struct imsm_map_info *m0 = &v->maps[0];
	const struct imsm_map_info *ma = v->num_maps == 2 ? &v->maps[1] : &v->maps[0];
	unsigned dm = data_members(m0->level, m0->num_members);
	uint64_t per_dev = 0, calc = 0, comp = 0, diff;
	uint32_t align;

	v->level = ma->level;
	v->md_layout = imsm_md_layout(v->level);
	v->chunk_bytes = ma->blocks_per_strip * 512u;
	v->num_members = m0->num_members;
	v->data_offset_sectors = ma->pba_of_lba0;
	v->blocks_per_member = m0->blocks_per_member;
	v->num_data_stripes = m0->num_data_stripes;
	v->map_state = m0->map_state;
	v->failed_disk_num = m0->failed_disk_num;

	if (dm && per_dev_sectors(m0, &per_dev) == 0 &&
	    !__builtin_mul_overflow(per_dev, (uint64_t)dm, &calc)) {
		comp = per_dev;
		diff = calc > v->array_sectors ? calc - v->array_sectors : v->array_sectors - calc;
		if (diff > (uint64_t)MB_SECTORS * dm) {
			comp = v->array_sectors / dm;
			v->num_data_stripes_mismatch = true;
		}
	} else if (dm) {
		comp = v->array_sectors / dm;
		v->num_data_stripes_mismatch = true;
	}
	/* mdadm aligns to chunk_bytes / sector_size (so to chunk/8 on 4K drives) */
	align = v->chunk_bytes / out->sector_size;
	if (v->level != 1 && align)
		comp -= comp % align;
	v->member_data_sectors = comp;
}

static int parse_volumes(struct imsm_info *out, const uint8_t *mpb, uint32_t bbm_size,
                         char *err, size_t errlen)
{
	struct cursor c = { .mpb = mpb, .end = out->mpb_size - bbm_size };
	uint32_t off = SB_DISK_TABLE + (uint32_t)DISK_SIZE * (uint32_t)out->num_disks;
	bool clear_hi = !(out->attributes & ATTR_2TB_DISK);
	uint8_t hashbuf[SIG_LEN + 4 + 4 + 16];
	uint32_t family = out->orig_family_num ? out->orig_family_num : out->family_num;
	int rc;

	memcpy(hashbuf, imsm_signature, SIG_LEN);
	put_le32(hashbuf + SIG_LEN, family);

	for (int i = 0; i < out->num_volumes; i++) {
		struct imsm_volume_info *v = &out->volumes[i];
		const uint8_t *p;
		uint32_t len0 = 0, len1 = 0;

		if (off > c.end || c.end - off < DEV_MAP0) {
			fmt_err(err, errlen, "IMSM: volume %d record at MPB byte %u runs past the "
			       "volume records (%u bytes): mpb_size or num_raid_devs is wrong",
			       i, off, c.end);
			return -EINVAL;
		}
		p = mpb + off;
		memcpy(v->name_raw, p + DEV_VOLUME, 16);
		memcpy(v->name, p + DEV_VOLUME, 16);
		v->name[16] = '\0';
		v->array_sectors = join32(p + DEV_SIZE_LOW, p + DEV_SIZE_HIGH);
		v->status = get_le32(p + DEV_STATUS);
		v->reserved_blocks = get_le32(p + DEV_RESERVED_BLOCKS);
		v->volume_id = get_le16(p + DEV_MY_VOL_RAID_DEV_NUM);
		v->rwh_policy = p[DEV_RWH_POLICY];
		v->curr_migr_unit = join32(p + VOL_CURR_MIGR_UNIT_LO, p + VOL_CURR_MIGR_UNIT_HI);
		v->migr_state = p[VOL_MIGR_STATE];
		v->migr_type_raw = p[VOL_MIGR_TYPE];
		v->migr_type = v->migr_type_raw;
		if (v->migr_type == IMSM_MIGR_VERIFY && (v->status & DEV_STATUS_VERIFY_AND_FIX))
			v->migr_type = IMSM_MIGR_REPAIR;
		v->dirty = p[VOL_DIRTY];

		rc = parse_map(&c, off + DEV_MAP0, i, 0, &v->maps[0], &len0, out->num_disks,
		               err, errlen);
		if (rc < 0)
			return rc;
		v->num_maps = 1;
		if (v->migr_state) {
			rc = parse_map(&c, off + DEV_MAP0 + len0, i, 1, &v->maps[1], &len1,
			               out->num_disks, err, errlen);
			if (rc < 0)
				return rc;
			v->num_maps = 2;
		}
		off += DEV_MAP0 + len0 + len1;

		if (out->sector_size == 4096) {
			if (v->array_sectors > UINT64_MAX / SECTORS_4K ||
			    v->curr_migr_unit > UINT64_MAX / SECTORS_4K ||
			    map_from_4k(&v->maps[0]) < 0 ||
			    (v->num_maps == 2 && map_from_4k(&v->maps[1]) < 0)) {
				fmt_err(err, errlen, "IMSM: volume %d: sizes overflow 64 bits in "
				       "512-byte sectors", i);
				return -EINVAL;
			}
			v->array_sectors *= SECTORS_4K;
			v->curr_migr_unit *= SECTORS_4K;
		}
		if (clear_hi) {
			map_clear_hi(&v->maps[0]);
			if (v->num_maps == 2)
				map_clear_hi(&v->maps[1]);
		}

		for (int m = 0; m < v->num_maps; m++) {
			for (unsigned s = 0; s < v->maps[m].num_members; s++) {
				struct imsm_slot *sl = &v->maps[m].slots[s];

				sl->disk_failed = out->disks[sl->disk].failed;
				sl->usable = !sl->out_of_sync && !sl->disk_failed;
			}
		}
		for (unsigned s = 0; s < v->maps[0].num_members; s++)
			if (!v->maps[0].slots[s].usable)
				v->failed_slots++;

		volume_geometry(out, v);

		put_le32(hashbuf + SIG_LEN + 4, (uint32_t)i);
		memcpy(hashbuf + SIG_LEN + 8, v->name_raw, 16);
		sha1_uuid(hashbuf, sizeof(hashbuf), v->uuid);
		uuid_to_str(v->uuid, v->uuid_str);
	}
	return 0;
}

/* Every member disk must hold each volume's data; volumes sharing a disk
 * must not overlap (mdadm places them one after another with a gap). */
static int check_extents(const struct imsm_info *out, char *err, size_t errlen)
{
	uint64_t start[IMSM_MAX_VOLUMES], len[IMSM_MAX_VOLUMES];

	for (int i = 0; i < out->num_volumes; i++) {
		const struct imsm_volume_info *v = &out->volumes[i];
		const struct imsm_map_info *m = &v->maps[0];
		uint64_t n, end;

		if (per_dev_sectors(m, &n) < 0) {
			fmt_err(err, errlen, "IMSM: volume %d (%s): num_data_stripes %" PRIu64
			       " x blocks_per_strip %u overflows", i, v->name,
			       m->num_data_stripes, m->blocks_per_strip);
			return -EINVAL;
		}
		if (v->member_data_sectors > n)
			n = v->member_data_sectors;
		if (__builtin_add_overflow(m->pba_of_lba0, n, &end)) {
			fmt_err(err, errlen, "IMSM: volume %d (%s): pba_of_lba0 %" PRIu64
			       " + %" PRIu64 " data sectors overflows", i, v->name,
			       m->pba_of_lba0, n);
			return -EINVAL;
		}
		for (unsigned s = 0; s < m->num_members; s++) {
			const struct imsm_disk_info *d = &out->disks[m->slots[s].disk];

			if (end > d->total_blocks) {
				fmt_err(err, errlen, "IMSM: volume %d (%s) slot %u: pba_of_lba0 %"
				       PRIu64 " + %" PRIu64 " data sectors ends past disk %u's "
				       "total_blocks %" PRIu64, i, v->name, s, m->pba_of_lba0, n,
				       m->slots[s].disk, d->total_blocks);
				return -EINVAL;
			}
		}
		start[i] = m->pba_of_lba0;
		len[i] = n;
		for (int j = 0; j < i; j++) {
			const struct imsm_map_info *mj = &out->volumes[j].maps[0];
			bool shared = false;

			if (!len[i] || !len[j])
				continue;
			for (unsigned s = 0; s < m->num_members && !shared; s++)
				for (unsigned t = 0; t < mj->num_members && !shared; t++)
					shared = m->slots[s].disk == mj->slots[t].disk;
			if (shared && start[i] < start[j] + len[j] && start[j] < start[i] + len[i]) {
				fmt_err(err, errlen, "IMSM: volumes %d and %d overlap on a shared disk "
				       "(sectors %" PRIu64 "+%" PRIu64 " and %" PRIu64 "+%" PRIu64 ")",
				       j, i, start[j], len[j], start[i], len[i]);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int read_migr_record(const struct dev_reader *dev, struct imsm_info *out,
                            char *err, size_t errlen)
{
	uint8_t buf[4096];
	struct imsm_migr_record *r = &out->migr_rec;
	bool nonzero = false;
	int rc;

	rc = dev_read(dev, buf, out->sector_size, dev->size - out->sector_size,
	              "the migration record", err, errlen);
	if (rc < 0)
		return rc;
	for (int i = 0; i < MR_SIZE; i++)
		nonzero |= buf[i] != 0;
	r->present = nonzero;
	r->rec_status = get_le32(buf + MR_REC_STATUS);
	r->curr_migr_unit = join32(buf + MR_CURR_MIGR_UNIT_LO, buf + MR_CURR_MIGR_UNIT_HI);
	r->family_num = get_le32(buf + MR_FAMILY_NUM);
	r->ascending_migr = get_le32(buf + MR_ASCENDING_MIGR);
	r->blocks_per_unit = get_le32(buf + MR_BLOCKS_PER_UNIT);
	r->dest_depth_per_unit = get_le32(buf + MR_DEST_DEPTH_PER_UNIT);
	r->ckpt_area_pba = join32(buf + MR_CKPT_AREA_PBA_LO, buf + MR_CKPT_AREA_PBA_HI);
	r->dest_1st_member_lba = join32(buf + MR_DEST_1ST_MEMBER_LBA_LO,
	                                buf + MR_DEST_1ST_MEMBER_LBA_HI);
	r->num_migr_units = join32(buf + MR_NUM_MIGR_UNITS_LO, buf + MR_NUM_MIGR_UNITS_HI);
	r->post_migr_vol_cap = join32(buf + MR_POST_MIGR_VOL_CAP, buf + MR_POST_MIGR_VOL_CAP_HI);
	if (out->sector_size == 4096) {
		/* mdadm convert_from_4k_imsm_migr_rec (u32 fields wrap as in mdadm) */
		r->blocks_per_unit *= SECTORS_4K;
		r->dest_depth_per_unit *= SECTORS_4K;
		r->post_migr_vol_cap *= SECTORS_4K;
		r->ckpt_area_pba *= SECTORS_4K;
		r->dest_1st_member_lba *= SECTORS_4K;
	}
	return 0;
}

/* imsm_parse_ex, keeping the MPB as read (anchor sector first, then the
 * continuation sectors): on success *mpbp is malloc'ed, mpb_sectors *
 * sector_size bytes, the caller's to free. */
static int load_mpb(const struct dev_reader *dev, unsigned flags, struct imsm_info *out, uint8_t **mpbp,
		    char *err, size_t errlen)
{
	uint8_t *mpb = NULL;
	uint8_t anchor[4096];
	uint32_t ss = 0, sectors, bbm_size, min_size;
	uint64_t cont_off;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!dev || !dev->read) {
		fmt_err(err, errlen, "IMSM: no device reader");
		return -EINVAL;
	}
	out->device_bytes = dev->size;

	/* the anchor: second-to-last 512-byte sector, else second-to-last 4 KiB one */
	rc = find_anchor(dev, 512, anchor, err, errlen);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		ss = 512;
	} else {
		rc = find_anchor(dev, 4096, anchor, err, errlen);
		if (rc < 0)
			return rc;
		if (rc == 1)
			ss = 4096;
	}
	if (!ss) {
		fmt_err(err, errlen, "IMSM: no anchor (\"%s\") in the second-to-last sector",
		       imsm_signature);
		return -ENOENT;
	}
	out->sector_size = ss;
	out->anchor_offset = dev->size - 2ull * ss;
	parse_header(out, anchor);

	/* the MPB: mpb_size bytes; sectors beyond the first sit before the anchor */
	min_size = SB_DISK_TABLE + (uint32_t)DISK_SIZE * (uint32_t)out->num_disks;
	if (out->mpb_size < SB_DISK_TABLE + DISK_SIZE || out->mpb_size > IMSM_MAX_MPB_BYTES) {
		fmt_err(err, errlen, "IMSM: mpb_size %u out of range (%d..%d)", out->mpb_size,
		       SB_DISK_TABLE + DISK_SIZE, IMSM_MAX_MPB_BYTES);
		return -EINVAL;
	}
	sectors = (out->mpb_size + ss - 1) / ss;
	out->mpb_sectors = sectors;
	if ((uint64_t)(sectors + 1) * ss > dev->size) {
		fmt_err(err, errlen, "IMSM: mpb_size %u needs %u sectors before the last one, more "
		       "than the device has (%" PRIu64 " bytes)", out->mpb_size, sectors,
		       dev->size);
		return -EINVAL;
	}
	cont_off = dev->size - (uint64_t)(sectors + 1) * ss;
	out->mpb_offset = sectors > 1 ? cont_off : out->anchor_offset;
	mpb = calloc(1, (size_t)sectors * ss);
	if (!mpb) {
		fmt_err(err, errlen, "IMSM: out of memory for a %u-byte MPB", out->mpb_size);
		return -ENOMEM;
	}
	memcpy(mpb, anchor, ss);
	if (sectors > 1) {
		rc = dev_read(dev, mpb + ss, (size_t)(sectors - 1) * ss, cont_off,
		              "the MPB continuation sectors", err, errlen);
		if (rc < 0)
			goto out_free;
	}

	out->checksum_computed = mpb_checksum(mpb, out->mpb_size);
	out->checksum_ok = out->checksum_computed == out->checksum_stored;
	if (!out->checksum_ok && !(flags & IMSM_PARSE_IGNORE_CHECKSUM)) {
		fmt_err(err, errlen, "IMSM: MPB checksum 0x%08x, computed 0x%08x: damaged metadata",
		       out->checksum_stored, out->checksum_computed);
		rc = -EBADMSG;
		goto out_free;
	}

	/* container UUID: SHA-1 over the signature and the family number */
	{
		uint8_t h[SIG_LEN + 4];

		memcpy(h, imsm_signature, SIG_LEN);
		put_le32(h + SIG_LEN, imsm_family(out));
		sha1_uuid(h, sizeof(h), out->uuid);
		uuid_to_str(out->uuid, out->uuid_str);
	}

	if (out->num_disks == 0) {
		fmt_err(err, errlen, "IMSM: num_disks 0 (a container lists at least its own disk)");
		rc = -EINVAL;
		goto out_free;
	}
	if (min_size > out->mpb_size) {
		fmt_err(err, errlen, "IMSM: mpb_size %u too small for num_disks %d (disk table ends "
		       "at %u)", out->mpb_size, out->num_disks, min_size);
		rc = -EINVAL;
		goto out_free;
	}
	if (out->num_volumes > IMSM_MAX_VOLUMES) {
		fmt_err(err, errlen, "IMSM: num_raid_devs %d exceeds this parser's limit %d",
		       out->num_volumes, IMSM_MAX_VOLUMES);
		rc = -E2BIG;
		goto out_free;
	}
	parse_disks(out, mpb);

	bbm_size = get_le32(mpb + SB_BBM_LOG_SIZE);
	if (bbm_size > out->mpb_size - min_size) {
		fmt_err(err, errlen, "IMSM: bbm_log_size %u does not fit in mpb_size %u after the "
		       "disk table (%u bytes)", bbm_size, out->mpb_size, min_size);
		rc = -EINVAL;
		goto out_free;
	}
	if (bbm_size) {
		rc = parse_bbm(out, mpb, bbm_size, err, errlen);
		if (rc < 0)
			goto out_free;
	}

	rc = parse_volumes(out, mpb, bbm_size, err, errlen);
	if (rc < 0)
		goto out_free;
	rc = check_extents(out, err, errlen);
	if (rc < 0)
		goto out_free;

	for (int i = 0; i < out->num_volumes; i++) {
		if (out->volumes[i].migr_state &&
		    out->volumes[i].migr_type == IMSM_MIGR_GEN_MIGR) {
			rc = read_migr_record(dev, out, err, errlen);
			if (rc < 0)
				goto out_free;
			break;
		}
	}
	*mpbp = mpb;
	return 0;
out_free:
	free(mpb);
	return rc;
}

int imsm_parse_ex(const struct dev_reader *dev, unsigned flags, struct imsm_info *out,
                  char *err, size_t errlen)
{
	uint8_t *mpb = NULL;
	int rc = load_mpb(dev, flags, out, &mpb, err, errlen);

	free(mpb);
	return rc;
}

int imsm_parse(const struct dev_reader *dev, struct imsm_info *out, char *err, size_t errlen)
{
	return imsm_parse_ex(dev, 0, out, err, errlen);
}

/* ---- helpers ----------------------------------------------------------- */

uint32_t imsm_family(const struct imsm_info *info)
{
	return info->orig_family_num ? info->orig_family_num : info->family_num;
}

const char *imsm_layout_name(int level, int md_layout)
{
	if (level == 5 && md_layout == 0)
		return "left-asymmetric";
	if (level == 10 && md_layout == 0x102)
		return "n2";
	if ((level == 0 || level == 1) && md_layout == 0)
		return "-";
	return "unknown";
}

const char *imsm_migr_type_name(unsigned migr_type)
{
	static const char *const names[] = {
		"initialize", "rebuild", "check", "general migration", "state change", "repair",
	};

	return migr_type < sizeof(names) / sizeof(names[0]) ? names[migr_type] : "unknown";
}

const char *imsm_map_state_name(unsigned map_state)
{
	static const char *const names[] = { "normal", "uninitialized", "degraded", "failed" };

	return map_state < 4 ? names[map_state] : "unknown";
}

static const char *level_word(int level, uint8_t raw, char *tmp, size_t len)
{
	if (level < 0)
		snprintf(tmp, len, "unknown RAID level (raw_level %u)", raw);
	else
		snprintf(tmp, len, "RAID%d", level);
	return tmp;
}

const char *imsm_volume_unreadable(const struct imsm_info *info, int vol, char *buf, size_t len)
{
	const struct imsm_volume_info *v;
	const struct imsm_map_info *m0;
	char l0[48], l1[48];
	uint64_t natural;

	if (!buf || !len)
		return "no buffer";
	if (!info || vol < 0 || vol >= info->num_volumes) {
		snprintf(buf, len, "no volume %d", vol);
		return buf;
	}
	v = &info->volumes[vol];
	m0 = &v->maps[0];
	if (v->migr_state) {
		if (v->num_maps == 2 && v->migr_type == IMSM_MIGR_GEN_MIGR) {
			const struct imsm_map_info *m1 = &v->maps[1];

			snprintf(buf, len, "migration in progress: general migration (reshape) from "
			         "%s, %u members, %u KiB chunk to %s, %u members, %u KiB chunk "
			         "(checkpoint unit %" PRIu64 ")",
			         level_word(m1->level, m1->raid_level_raw, l1, sizeof(l1)),
			         m1->num_members, m1->blocks_per_strip / 2,
			         level_word(m0->level, m0->raid_level_raw, l0, sizeof(l0)),
			         m0->num_members, m0->blocks_per_strip / 2,
			         info->migr_rec.present ? info->migr_rec.curr_migr_unit
			                                : v->curr_migr_unit);
		} else {
			snprintf(buf, len, "migration in progress: %s (map %s <-- %s, checkpoint "
			         "%" PRIu64 ")", imsm_migr_type_name(v->migr_type),
			         imsm_map_state_name(m0->map_state),
			         imsm_map_state_name(v->maps[1].map_state), v->curr_migr_unit);
		}
		return buf;
	}
	if (v->level != 5) {
		snprintf(buf, len, "%s volume (only RAID5 is read)",
		         level_word(v->level, m0->raid_level_raw, l0, sizeof(l0)));
		return buf;
	}
	if (v->num_members < 2) {
		snprintf(buf, len, "RAID5 with %d member", v->num_members);
		return buf;
	}
	if (v->chunk_bytes < 4096 || (v->chunk_bytes & (v->chunk_bytes - 1))) {
		snprintf(buf, len, "chunk %u bytes (blocks_per_strip %u): md needs a power of two "
		         ">= 4 KiB", v->chunk_bytes, m0->blocks_per_strip);
		return buf;
	}
	if (v->map_state > IMSM_MAP_FAILED) {
		snprintf(buf, len, "unknown map_state %u", v->map_state);
		return buf;
	}
	if (v->failed_slots > 1 || v->map_state == IMSM_MAP_FAILED) {
		snprintf(buf, len, "%d of %d members failed (map state %s)", v->failed_slots,
		         v->num_members, imsm_map_state_name(v->map_state));
		return buf;
	}
	if (v->failed_slots == 1 && (v->dirty & 1)) {
		snprintf(buf, len, "degraded and dirty: parity may not match the data (md refuses "
		         "to start it without start_dirty_degraded)");
		return buf;
	}
	if (v->failed_slots == 1 && v->map_state == IMSM_MAP_UNINITIALIZED) {
		snprintf(buf, len, "degraded and never initialized: its parity was never built, so "
		         "the missing member cannot be rebuilt (mdadm starts it anyway)");
		return buf;
	}
	if (v->member_data_sectors == 0) {
		snprintf(buf, len, "no data (member data size 0)");
		return buf;
	}
	if (__builtin_mul_overflow(v->member_data_sectors, (uint64_t)(v->num_members - 1),
	                           &natural) || v->array_sectors > natural) {
		snprintf(buf, len, "array size %" PRIu64 " sectors exceeds %d data members x %"
		         PRIu64 " sectors (md refuses such an array_size)", v->array_sectors,
		         v->num_members - 1, v->member_data_sectors);
		return buf;
	}
	return NULL;
}

int imsm_serial_normalize(const char *name, uint8_t out[IMSM_SERIAL_LEN])
{
	char buf[50];
	size_t n = 0, start = 0;

	memset(out, 0, IMSM_SERIAL_LEN);
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof(buf) && name[i]; i++) {
		unsigned char b = (unsigned char)name[i];

		if (b <= 0x20 || b >= 0x80)
			continue;
		buf[n++] = b == ':' ? ';' : (char)b;
	}
	if (n > IMSM_SERIAL_LEN)
		start = n - IMSM_SERIAL_LEN;
	memcpy(out, buf + start, n - start);
	return (int)(n - start);
}

static size_t serial_len(const uint8_t s[IMSM_SERIAL_LEN])
{
	size_t n = 0;

	while (n < IMSM_SERIAL_LEN && s[n])
		n++;
	return n;
}

/* strncmp(a, b, 16) == 0 */
static bool serial_eq(const uint8_t a[IMSM_SERIAL_LEN], const uint8_t b[IMSM_SERIAL_LEN])
{
	for (int i = 0; i < IMSM_SERIAL_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

/* mdadm mark_failure (+ mark_missing): serial + ":0", shifted so it fits in
 * 15 characters + NUL; then (missing) one more character dropped in front. */
static void failed_forms(const uint8_t serial[IMSM_SERIAL_LEN], uint8_t failed[IMSM_SERIAL_LEN],
                         uint8_t missing[IMSM_SERIAL_LEN])
{
	char buf[IMSM_SERIAL_LEN + 3];
	size_t len, shift = 0;

	memcpy(buf, serial, IMSM_SERIAL_LEN);
	buf[IMSM_SERIAL_LEN] = '\0';
	len = strlen(buf);
	memcpy(buf + len, ":0", 3);
	len += 2;
	if (len >= IMSM_SERIAL_LEN)
		shift = len - IMSM_SERIAL_LEN + 1;
	memset(failed, 0, IMSM_SERIAL_LEN);
	memcpy(failed, buf + shift, len - shift);   /* <= 15 bytes, NUL after */
	memset(missing, 0, IMSM_SERIAL_LEN);
	memcpy(missing, failed + 1, IMSM_SERIAL_LEN - 1);
}

int imsm_find_disk(const struct imsm_info *info, const uint8_t serial[IMSM_SERIAL_LEN],
                   bool allow_failed, bool *matched_failed)
{
	uint8_t failed[IMSM_SERIAL_LEN], missing[IMSM_SERIAL_LEN];

	if (matched_failed)
		*matched_failed = false;
	if (!info || !serial || serial_len(serial) == 0)
		return -ENOENT;
	for (int i = 0; i < info->num_disks; i++)
		if (serial_eq(info->disks[i].serial, serial))
			return i;
	if (!allow_failed)
		return -ENOENT;
	failed_forms(serial, failed, missing);
	for (int i = 0; i < info->num_disks; i++) {
		const struct imsm_disk_info *d = &info->disks[i];

		if (!d->failed)
			continue;
		if (serial_eq(d->serial, failed) || serial_eq(d->serial, missing)) {
			if (matched_failed)
				*matched_failed = true;
			return i;
		}
	}
	return -ENOENT;
}

/* ---- the format behind format.h ------------------------------------------- */

/* mdadm prints an IMSM UUID as four little-endian words: member_meta keeps
 * the bytes in that order, so that meta_uuid_format prints what mdadm does. */
static void uuid_display(const uint8_t raw[16], uint8_t out[16])
{
	for (int i = 0; i < 16; i++)
		out[i] = raw[(i & ~3) + 3 - (i & 3)];
}

static void printable_name(const char *in, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; in[i] && o + 1 < outlen; i++)
		out[o++] = (unsigned char)in[i] >= 0x20 && (unsigned char)in[i] < 0x7f ? in[i] : '?';
	out[o] = '\0';
}

/* Why raidimg cannot read volume vi ("" if it can): what md or mdadm would
 * refuse, and states raidimg does not read (migrations).  Failed members,
 * a dirty state and the level are the assembly's to judge. */
static void volume_unsupported(const struct imsm_info *in, int vi, char *buf, size_t len)
{
	const struct imsm_volume_info *v = &in->volumes[vi];
	uint64_t natural;

	buf[0] = '\0';
	if (v->migr_state)
		imsm_volume_unreadable(in, vi, buf, len);
	else if (v->level < 0)
		snprintf(buf, len, "unknown RAID level (raid_level %u)", v->maps[0].raid_level_raw);
	else if (!in->attributes_supported)
		snprintf(buf, len, "attributes 0x%08x include features mdadm does not support (it refuses to "
			 "start the volume)", in->attributes);
	else if (v->map_state > IMSM_MAP_FAILED)
		snprintf(buf, len, "unknown map_state %u", v->map_state);
	else if (v->level == 5 && v->num_members > 1 &&
		 (__builtin_mul_overflow(v->member_data_sectors, (uint64_t)(v->num_members - 1), &natural) ||
		  v->array_sectors > natural))
		snprintf(buf, len, "volume size %" PRIu64 " sectors exceeds %d data members x %" PRIu64
			 " sectors (md refuses such an array size)", v->array_sectors, v->num_members - 1,
			 v->member_data_sectors);
}

static void fill_volume(const struct imsm_info *in, int vi, struct member_meta *m)
{
	const struct imsm_volume_info *v = &in->volumes[vi];
	const struct imsm_map_info *m0 = &v->maps[0];

	memset(m, 0, sizeof(*m));
	m->fmt = &format_imsm;
	snprintf(m->format, sizeof(m->format), "imsm");
	uuid_display(v->uuid, m->set_uuid);
	printable_name(v->name, m->set_name, sizeof(m->set_name));
	m->level = m->new_level = v->level;
	m->layout = m->new_layout = v->md_layout;
	m->chunk_bytes = m->new_chunk_bytes = v->chunk_bytes;
	m->raid_disks = v->num_members;
	m->component_sectors = v->member_data_sectors;
	m->data_offset = v->data_offset_sectors;
	m->data_size = v->member_data_sectors;
	m->super_offset = in->mpb_offset / 512;
	m->dev_number = -1;
	m->role = META_ROLE_UNPLACED;
	m->events = in->generation_num;
	m->ctime = in->creation_time;
	/* md resyncs a dirty or never initialized volume: its parity is not to
	 * be trusted (mdadm's resync_start 0) */
	m->resync_offset = (v->dirty & 1) || v->map_state == IMSM_MAP_UNINITIALIZED ? 0 : UINT64_MAX;
	m->recovery_offset = UINT64_MAX;
	m->max_dev = in->num_disks;
	for (int d = 0; d < in->num_disks && d < META_MAX_DEVS; d++)
		m->dev_roles[d] = META_ROLE_SPARE;
	/* disk indices are u8: every one fits in dev_roles */
	for (int s = 0; s < m0->num_members; s++)
		m->dev_roles[m0->slots[s].disk] = m0->slots[s].usable ? (int16_t)s : META_ROLE_FAULTY;
	m->in_container = true;
	uuid_display(in->uuid, m->container_uuid);
	m->volume_index = vi;
	m->container_volumes = in->num_volumes;
	m->array_sectors = v->array_sectors;
	m->nids = in->num_disks;
	for (int d = 0; d < m->nids; d++)
		memcpy(m->dev_ids[d], in->disks[d].serial, META_ID_LEN);
	volume_unsupported(in, vi, m->unsupported, sizeof(m->unsupported));
}

static int probe_imsm(const struct dev_reader *dev, struct format_found *out, char *err, size_t errlen)
{
	struct imsm_info *in = malloc(sizeof(*in));
	int rc;

	memset(out, 0, sizeof(*out));
	if (!in) {
		fmt_err(err, errlen, "IMSM: out of memory");
		return -ENOMEM;
	}
	rc = imsm_parse(dev, in, err, errlen);
	if (rc)
		goto out;
	if (in->num_volumes == 0) {
		fmt_err(err, errlen, "IMSM container %s holds no volume (a spare disk)", in->uuid_str);
		rc = -ENOENT;
		goto out;
	}
	if (in->num_volumes > FORMAT_MAX_VOLUMES) {
		fmt_err(err, errlen, "IMSM: num_raid_devs %d: more volumes than the %d raidimg reads", in->num_volumes,
		       FORMAT_MAX_VOLUMES);
		rc = -E2BIG;
		goto out;
	}
	for (int i = 0; i < in->num_volumes; i++)
		fill_volume(in, i, &out->vol[i]);
	out->nvol = in->num_volumes;
out:
	free(in);
	return rc;
}

/* serial_eq over a serial as member_meta keeps it */
static int find_serial(const struct member_meta *m, const uint8_t s[IMSM_SERIAL_LEN])
{
	for (int d = 0; d < m->nids; d++)
		if (serial_eq(m->dev_ids[d], s))
			return d;
	return -1;
}

static int place_imsm(const struct member_meta *m, const char *id, int *dev_number, int *role)
{
	uint8_t want[IMSM_SERIAL_LEN], failed[IMSM_SERIAL_LEN], missing[IMSM_SERIAL_LEN];
	int d;

	if (imsm_serial_normalize(id, want) == 0)
		return -ENOENT;
	d = find_serial(m, want);
	if (d < 0) {
		/* a disk mdadm marked failed (serial + ":0") or missing (and one
		 * character shifted out): it was that slot, now faulty */
		failed_forms(want, failed, missing);
		d = find_serial(m, failed);
		if (d < 0)
			d = find_serial(m, missing);
		if (d < 0 || m->dev_roles[d] != META_ROLE_FAULTY)
			return -ENOENT;
	}
	*dev_number = d;
	*role = m->dev_roles[d];
	return 0;
}

/* Byte offset in the MPB of volume vi's first map (the MPB parsed before:
 * every record is known to fit). */
static uint32_t map0_offset(const uint8_t *mpb, const struct imsm_info *in, int vi)
{
	uint32_t off = SB_DISK_TABLE + (uint32_t)DISK_SIZE * (uint32_t)in->num_disks;

	for (int i = 0; i < vi; i++) {
		const uint8_t *p = mpb + off;
		uint32_t len0 = MAP_HDR + 4u * p[DEV_MAP0 + MAP_NUM_MEMBERS], len1 = 0;

		if (p[VOL_MIGR_STATE])
			len1 = MAP_HDR + 4u * p[DEV_MAP0 + len0 + MAP_NUM_MEMBERS];
		off += DEV_MAP0 + len0 + len1;
	}
	return off + DEV_MAP0;
}

/* A map's state once the slots' rebuild bits and the disks' failed bits
 * are what they now are: normal, or degraded naming the first bad slot. */
static void map_restate(uint8_t *map, const uint8_t *mpb)
{
	int n = map[MAP_NUM_MEMBERS], bad = -1;

	for (int s = 0; s < n && bad < 0; s++) {
		uint32_t ord = get_le32(map + MAP_ORD_TBL + 4 * s);
		uint32_t status = get_le32(mpb + SB_DISK_TABLE + DISK_SIZE * (ord & 0xffffff) + DISK_STATUS);

		if ((ord & ORD_REBUILD) || (status & IMSM_DISK_FAILED))
			bad = s;
	}
	if (map[MAP_MAP_STATE] == IMSM_MAP_NORMAL || map[MAP_MAP_STATE] == IMSM_MAP_DEGRADED) {
		map[MAP_MAP_STATE] = bad < 0 ? IMSM_MAP_NORMAL : IMSM_MAP_DEGRADED;
		map[MAP_FAILED_DISK_NUM] = bad < 0 ? 0xff : (uint8_t)bad;
	}
}

static int replace_imsm(const struct dev_reader *tmpl, const struct member_meta *m, const char *id,
			uint64_t dev_sectors, int (*put)(void *ctx, const void *buf, size_t len, uint64_t off),
			void *ctx, char *err, size_t errlen)
{
	struct imsm_info *in = malloc(sizeof(*in));
	uint8_t serial[IMSM_SERIAL_LEN], *mpb = NULL, *disk;
	uint64_t size = dev_sectors * 512;
	int vi = m->volume_index, rc, d;
	uint32_t ss, status;

	if (!in) {
		fmt_err(err, errlen, "IMSM: out of memory");
		return -ENOMEM;
	}
	rc = load_mpb(tmpl, 0, in, &mpb, err, errlen);
	if (rc)
		goto out;
	ss = in->sector_size;
	rc = -EINVAL;
	if (vi < 0 || vi >= in->num_volumes || m->role < 0 || m->role >= in->volumes[vi].num_members) {
		fmt_err(err, errlen, "IMSM: no slot %d in volume %d", m->role, vi);
		goto out;
	}
	if (in->volumes[vi].migr_state) {
		fmt_err(err, errlen, "IMSM: volume %d is migrating: a replacement cannot be written", vi);
		goto out;
	}
	if (imsm_serial_normalize(id, serial) == 0) {
		fmt_err(err, errlen, "IMSM: the new member needs a drive serial (none could be made of '%s')",
		       id ? id : "");
		goto out;
	}
	d = in->volumes[vi].maps[0].slots[m->role].disk;
	for (int e = 0; e < in->num_disks; e++) {
		if (e != d && serial_eq(in->disks[e].serial, serial)) {
			fmt_err(err, errlen, "IMSM: serial '%.16s' is already disk %d's in the disk table: the new "
			       "member needs a serial of its own", (const char *)serial, e);
			goto out;
		}
	}
	if ((uint64_t)(in->mpb_sectors + 1) * ss > size) {
		fmt_err(err, errlen, "IMSM: an image of %" PRIu64 " bytes cannot hold the metadata", size);
		goto out;
	}
	/* the disk: the new serial, configured and in use */
	disk = mpb + SB_DISK_TABLE + DISK_SIZE * d;
	memcpy(disk + DISK_SERIAL, serial, IMSM_SERIAL_LEN);
	if (get_le32(disk + DISK_SCSI_ID) == 0xffffffffu)
		put_le32(disk + DISK_SCSI_ID, 0);
	status = get_le32(disk + DISK_STATUS);
	put_le32(disk + DISK_STATUS, (status & ~(uint32_t)(IMSM_DISK_FAILED | IMSM_DISK_SPARE)) | IMSM_DISK_CONFIGURED);
	/* in sync in this volume; its data in the others is not written:
	 * out of sync there (md rebuilds it) */
	for (int i = 0; i < in->num_volumes; i++) {
		uint8_t *map = mpb + map0_offset(mpb, in, i);

		for (int s = 0; s < map[MAP_NUM_MEMBERS]; s++) {
			uint32_t ord = get_le32(map + MAP_ORD_TBL + 4 * s);

			if ((ord & 0xffffff) != (uint32_t)d)
				continue;
			ord = i == vi ? ord & ~(uint32_t)ORD_REBUILD : ord | ORD_REBUILD;
			put_le32(map + MAP_ORD_TBL + 4 * s, ord);
		}
		map_restate(map, mpb);
	}
	put_le32(mpb + SB_GENERATION_NUM, in->generation_num + 1);
	put_le32(mpb + SB_CHECK_SUM, mpb_checksum(mpb, in->mpb_size));
	rc = put(ctx, mpb, ss, size - 2ull * ss);
	if (!rc && in->mpb_sectors > 1)
		rc = put(ctx, mpb + ss, (size_t)(in->mpb_sectors - 1) * ss, size - (uint64_t)(in->mpb_sectors + 1) * ss);
	if (rc)
		fmt_err(err, errlen, "IMSM: writing the metadata: %s", strerror(-rc));
out:
	free(mpb);
	free(in);
	return rc;
}

const struct format_ops format_imsm = {
	.name = "imsm",
	.family = "imsm",
	.flags = FORMAT_CONTAINER,
	.max_members = IMSM_MAX_MEMBERS,
	.probe = probe_imsm,
	.place = place_imsm,
	.replace = replace_imsm,
};
