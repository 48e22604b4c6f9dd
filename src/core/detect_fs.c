/* detect_fs.c - position evidence ("anchors") from file systems, partition
 * tables and volume headers.
 *
 * An anchor is a structure found in one image at one image offset that says
 * where it lies in its file system (or disk): an ext superblock carries its
 * group number, an NTFS FILE record its record number, an XFS v5 block its
 * own disk address, a FAT table sector the cluster numbers it chains, ...
 * Offsets are relative to the group's base (the file system's start in the
 * array, unknown unless the group is a disk label, whose base is array
 * offset 0); the solver finds the base per geometry.  Each anchor has a
 * weight in bits (how unlikely it is to be found by chance there).
 * Field offsets and sources: FACTS.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "detect_int.h"

#define MAX_ANCHORS 40000
#define MAX_PER_GROUP 6000

const char *anchor_kind_name(int kind)
{
	static const char *const names[AK_NKINDS] = {
		"MBR", "GPT header", "GPT entries", "ext superblock", "NTFS boot sector",
		"NTFS FILE record", "FAT boot sector", "FAT32 FSInfo", "FAT table sector",
		"FAT directory", "XFS superblock", "XFS AG header", "XFS v5 block",
		"XFS v3 inode", "LVM2 label", "LVM2 metadata header", "LUKS header", "tar header",
		"ext metadata",
	};
	return kind >= 0 && kind < AK_NKINDS ? names[kind] : "?";
}

/* ---------------- checksums ---------------- */

/* CRC32C (Castagnoli, reflected poly 0x82F63B78), raw update: no pre/post
 * inversion (callers pass ~0 and invert as their format says). */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return crc;
}

/* zlib's CRC32 (reflected 0xEDB88320, with the usual inversions): the
 * project's crc32_update. */
uint32_t crc32_zlib(uint32_t crc, const void *buf, size_t len)
{
	return crc32_update(crc, buf, len);
}

/* ---------------- groups and anchors ---------------- */

int fs_group_find_or_add(struct dctx *c, int type, const uint8_t *id, int idlen, bool *isnew)
{
	if (idlen > 16)
		idlen = 16;
	for (int g = 0; g < c->ngrp; g++)
		if (c->grp[g].type == type && c->grp[g].idlen == idlen &&
		    memcmp(c->grp[g].id, id, (size_t)idlen) == 0) {
			if (isnew)
				*isnew = false;
			return g;
		}
	if (c->ngrp >= MAXGRP)
		return -ENOSPC;
	struct agroup *g = &c->grp[c->ngrp];
	memset(g, 0, sizeof(*g));
	g->type = type;
	memcpy(g->id, id, (size_t)idlen);
	g->idlen = idlen;
	if (isnew)
		*isnew = true;
	return c->ngrp++;
}

int anchor_add(struct dctx *c, int img, uint64_t off, int grp, int kind, const int64_t *rel,
	       int nrel, float w)
{
	if (grp < 0 || nrel <= 0)
		return 0;
	if (c->nanc >= MAX_ANCHORS)
		return 0;
	if (c->grp[grp].p[7] >= MAX_PER_GROUP)   /* p[7]: anchor count */
		return 0;
	for (int i = c->nanc - 1; i >= 0 && i >= c->nanc - 64; i--)   /* dedupe recent */
		if (c->anc[i].img == img && c->anc[i].off == off && c->anc[i].grp == grp)
			return 0;
	if (c->nanc == c->canc) {
		int nc = c->canc ? c->canc * 2 : 1024;
		struct anchor *a = realloc(c->anc, (size_t)nc * sizeof(*a));
		if (!a)
			return -ENOMEM;
		c->anc = a;
		c->canc = nc;
	}
	struct anchor *a = &c->anc[c->nanc++];
	memset(a, 0, sizeof(*a));
	a->img = img;
	a->off = off;
	a->grp = grp;
	a->kind = (uint8_t)kind;
	if (nrel > ANC_MAXREL)
		nrel = ANC_MAXREL;
	a->nrel = (uint8_t)nrel;
	memcpy(a->rel, rel, (size_t)nrel * sizeof(int64_t));
	a->w = w;
	c->grp[grp].p[7]++;
	return 0;
}

static void add_part(struct dctx *c, uint64_t start)
{
	if (start == 0 || start % SECT)
		return;
	for (int i = 0; i < c->npart; i++)
		if (c->part[i] == start)
			return;
	if (c->npart < MAXPART)
		c->part[c->npart++] = start;
}

static bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* ---------------- pass 1: labels, boot sectors, superblocks ---------------- */

static bool ntfs_boot(const uint8_t *p)
{
	if (memcmp(p + 3, "NTFS    ", 8) != 0 || p[510] != 0x55 || p[511] != 0xAA)
		return false;
	uint16_t bps = get_le16(p + 11);
	return bps >= 256 && bps <= 4096 && is_pow2(bps) && p[13] != 0;
}

static uint32_t ntfs_cluster(const uint8_t *p)
{
	uint16_t bps = get_le16(p + 11);
	uint8_t spc = p[13];
	if (spc > 0x80)   /* 2^(256-spc) sectors per cluster */
		return (256 - spc) < 20 ? (uint32_t)bps << (256 - spc) : 0;
	return (uint32_t)bps * spc;
}

static int scan_ntfs_boot(struct dctx *c, int img, uint64_t o, const uint8_t *p)
{
	uint64_t total = get_le64(p + 40);
	uint16_t bps = get_le16(p + 11);
	uint32_t cs = ntfs_cluster(p);
	int8_t cpmr = (int8_t)p[64];
	uint32_t rec = cpmr < 0 ? (-cpmr < 16 ? 1u << -cpmr : 0) : (uint32_t)cpmr * cs;
	if (!cs || !is_pow2(cs) || rec < 256 || rec > 65536 || total == 0 || total > (1ull << 48))
		return 0;
	bool isnew;
	int g = fs_group_find_or_add(c, G_NTFS, p + 72, 8, &isnew);
	if (g < 0)
		return 0;
	struct agroup *G = &c->grp[g];
	if (isnew) {
		uint64_t mft = get_le64(p + 48), mirr = get_le64(p + 56);
		G->bs = cs;
		G->size = total * bps;
		G->p[0] = bps;
		G->p[1] = rec;
		G->p[2] = (uint32_t)mft;
		G->p[3] = (uint32_t)(mft >> 32);
		G->p[4] = (uint32_t)mirr;
		G->p[5] = (uint32_t)(mirr >> 32);
		fmt_err(G->desc, sizeof(G->desc), "NTFS (%u-byte clusters)", cs);
	}
	int64_t rel[2] = { 0, (int64_t)(total * bps) };
	return anchor_add(c, img, o, g, AK_NTFS_BOOT, rel, 2, 12);
}

static bool fat_boot(const uint8_t *p, uint32_t *bps_o)
{
	if (!(p[0] == 0xEB || p[0] == 0xE9) || p[510] != 0x55 || p[511] != 0xAA)
		return false;
	if (memcmp(p + 3, "NTFS", 4) == 0 || memcmp(p + 3, "EXFAT", 5) == 0)
		return false;
	uint16_t bps = get_le16(p + 11);
	uint8_t spc = p[13];
	uint16_t res = get_le16(p + 14);
	uint8_t nf = p[16];
	uint8_t media = p[21];
	uint32_t fatsz = get_le16(p + 22) ? get_le16(p + 22) : get_le32(p + 36);
	uint32_t tot = get_le16(p + 19) ? get_le16(p + 19) : get_le32(p + 32);
	if (bps < 512 || bps > 4096 || !is_pow2(bps) || !spc || !is_pow2(spc) || !res || nf < 1 ||
	    nf > 2 || (media != 0xF0 && media < 0xF8) || !fatsz || !tot)
		return false;
	if ((uint64_t)res + (uint64_t)nf * fatsz >= tot)
		return false;
	*bps_o = bps;
	return true;
}

static int scan_fat_boot(struct dctx *c, int img, uint64_t o, const uint8_t *p, uint32_t bps)
{
	uint8_t spc = p[13];
	uint16_t res = get_le16(p + 14);
	uint8_t nf = p[16];
	uint16_t rootent = get_le16(p + 17);
	bool f32 = get_le16(p + 22) == 0;
	uint32_t fatsz = f32 ? get_le32(p + 36) : get_le16(p + 22);
	uint32_t tot = get_le16(p + 19) ? get_le16(p + 19) : get_le32(p + 32);
	uint32_t rds = ((uint32_t)rootent * 32 + bps - 1) / bps;
	uint32_t data = res + nf * fatsz + rds;
	uint32_t clusters = (tot - data) / spc;
	int ftype = clusters < 4085 ? 12 : clusters < 65525 ? 16 : 32;
	const uint8_t *serial = f32 ? p + 67 : p + 39;
	bool isnew;
	int g = fs_group_find_or_add(c, G_FAT, serial, 4, &isnew);
	if (g < 0)
		return 0;
	struct agroup *G = &c->grp[g];
	if (isnew) {
		G->bs = (uint32_t)spc * bps;
		G->size = (uint64_t)tot * bps;
		G->p[0] = bps;
		G->p[1] = res;
		G->p[2] = nf;
		G->p[3] = fatsz;
		G->p[4] = data;          /* first data sector */
		G->p[5] = (uint32_t)ftype;
		G->p[6] = f32 ? get_le16(p + 48) : 0;   /* FSInfo sector */
		G->q[0] = p[21];                     /* media descriptor */
		G->q[1] = f32 ? get_le32(p + 44) : 0;    /* root directory cluster */
		memcpy(G->lbl, f32 ? p + 71 : p + 43, 11);
		fmt_err(G->desc, sizeof(G->desc), "FAT%d (%u-byte clusters)", ftype, G->bs);
	}
	int64_t rel[2] = { 0, 0 };
	int nrel = 1;
	if (f32 && get_le16(p + 50) && get_le16(p + 50) < res)
		rel[nrel++] = (int64_t)get_le16(p + 50) * bps;
	return anchor_add(c, img, o, g, AK_FAT_BOOT, rel, nrel, 10);
}

static bool mbr_valid(const uint8_t *p, uint64_t *starts, int *nstarts)
{
	int n = 0, used = 0;

	if (p[510] != 0x55 || p[511] != 0xAA)
		return false;
	for (int i = 0; i < 4; i++) {
		const uint8_t *e = p + 446 + 16 * i;
		if (e[0] != 0 && e[0] != 0x80)
			return false;
		uint32_t lba = get_le32(e + 8), cnt = get_le32(e + 12);
		if (e[4] == 0) {
			continue;
		}
		if (!lba || !cnt)
			return false;
		used++;
		if (e[4] != 0xEE)
			starts[n++] = (uint64_t)lba * SECT;
	}
	*nstarts = n;
	return used > 0;
}

static int scan_mbr(struct dctx *c, int img, uint64_t o, const uint8_t *p)
{
	uint64_t starts[4];
	int n;

	if (!mbr_valid(p, starts, &n))
		return 0;
	for (int i = 0; i < n; i++)
		add_part(c, starts[i]);
	uint8_t id[8];
	memcpy(id, p + 440, 4);
	memcpy(id + 4, p + 446 + 8, 4);   /* first entry's start, to separate zero signatures */
	int g = fs_group_find_or_add(c, G_DISK, id, 8, NULL);
	if (g < 0)
		return 0;
	c->grp[g].base_fixed = true;
	fmt_err(c->grp[g].desc, sizeof(c->grp[g].desc), "MBR partition table");
	int64_t rel = 0;
	return anchor_add(c, img, o, g, AK_MBR, &rel, 1, 6);
}

static int scan_gpt(struct dctx *c, int img, uint64_t o, const uint8_t *p)
{
	uint32_t hs = get_le32(p + 12);
	uint8_t h[512];

	if (hs < 92 || hs > 512)
		return 0;
	memcpy(h, p, hs);
	memset(h + 16, 0, 4);
	if (crc32_zlib(0, h, hs) != get_le32(p + 16))
		return 0;
	uint64_t my = get_le64(p + 24), ent = get_le64(p + 72);
	uint32_t nent = get_le32(p + 80), esz = get_le32(p + 84);
	int g = fs_group_find_or_add(c, G_DISK, p + 56, 16, NULL);
	if (g < 0)
		return 0;
	c->grp[g].base_fixed = true;
	fmt_err(c->grp[g].desc, sizeof(c->grp[g].desc), "GPT partition table");
	/* partition starts from the entries, when they follow in this sample */
	if (esz >= 128 && esz <= 4096 && nent && nent <= 1024 && ent > my && ent - my < 64) {
		uint64_t eo = o + (ent - my) * SECT;
		for (uint32_t i = 0; i < nent && i < 16; i++) {
			const uint8_t *e = sp(c, img, eo + (uint64_t)i * esz, 128);
			if (!e)
				break;
			if (all_zero(e, 16))
				continue;
			uint64_t first = get_le64(e + 32), last = get_le64(e + 40);
			if (first && first <= last)
				add_part(c, first * SECT);
		}
	}
	int64_t rel = (int64_t)(my * SECT);
	return anchor_add(c, img, o, g, AK_GPT, &rel, 1, 20);
}

static int scan_ext(struct dctx *c, int img, uint64_t o, const uint8_t *p)
{
	uint32_t logbs = get_le32(p + 24);
	if (logbs > 6)
		return 0;
	uint32_t bs = 1024u << logbs;
	uint32_t fdb = get_le32(p + 20);
	uint32_t bpg = get_le32(p + 32), ipg = get_le32(p + 40);
	uint32_t incompat = get_le32(p + 96), ro = get_le32(p + 100);
	uint64_t blocks = get_le32(p + 4);
	if (incompat & 0x80)
		blocks |= (uint64_t)get_le32(p + 336) << 32;
	if (!bpg || bpg > 8 * bs || !ipg || !blocks || fdb != (bs == 1024 ? 1u : 0u) ||
	    get_le32(p + 0) == 0 || blocks <= fdb)
		return 0;
	uint64_t groups = (blocks - fdb + bpg - 1) / bpg;
	uint16_t gnr = get_le16(p + 90);
	if (gnr >= groups)
		return 0;
	float w = 12;
	if (ro & 0x400) {   /* metadata_csum: crc32c of the first 1020 bytes */
		if (crc32c_sw(~0u, p, 1020) != get_le32(p + 1020))
			return 0;
		w = 24;
	}
	bool isnew;
	int g = fs_group_find_or_add(c, G_EXT, p + 104, 16, &isnew);
	if (g < 0)
		return 0;
	struct agroup *G = &c->grp[g];
	if (isnew) {
		G->bs = bs;
		G->size = blocks * bs;
		G->p[0] = bpg;
		G->p[1] = fdb;
		G->p[2] = ipg;
		G->p[3] = (uint32_t)groups;
		G->p[4] = get_le16(p + 88);   /* inode size */
		G->p[5] = incompat;
		G->p[6] = ro;
		G->q[0] = (incompat & 0x80) && get_le16(p + 254) >= 64 ? get_le16(p + 254) : 32;   /* desc size */
		/* checksum seed: s_checksum_seed with INCOMPAT_CSUM_SEED, else crc32c(uuid) */
		G->q[1] = (incompat & 0x2000) ? get_le32(p + 0x270) : crc32c_sw(~0u, p + 104, 16);
		G->q[2] = get_le32(p + 92);   /* compat (resize_inode etc.) */
		fmt_err(G->desc, sizeof(G->desc), "ext%d (%u-byte blocks)",
		     (incompat & 0x40) ? 4 : (get_le32(p + 92) & 4) ? 3 : 2, bs);
	}
	int64_t rel = gnr == 0 ? 1024 : (int64_t)(((uint64_t)gnr * bpg + fdb) * bs);
	return anchor_add(c, img, o, g, AK_EXT_SB, &rel, 1, w);
}

static int scan_xfs_sb(struct dctx *c, int img, uint64_t o, const uint8_t *p)
{
	uint32_t bs = get_be32(p + 4);
	uint32_t agb = get_be32(p + 84), agc = get_be32(p + 88);
	uint16_t ss = get_be16(p + 102), isz = get_be16(p + 104);
	if (!is_pow2(bs) || bs < 512 || bs > 65536 || (1u << p[120]) != bs || !agb || !agc ||
	    agc > 1u << 20 || !is_pow2(ss) || ss < 512 || (1u << p[121]) != ss || !is_pow2(isz) ||
	    (1u << p[122]) != isz || p[124] > 31 || p[123] > 8)
		return 0;
	bool v5 = (get_be16(p + 100) & 0xf) == 5;
	const uint8_t *meta = p + 32;
	if (v5 && (get_be32(p + 216) & 0x4))   /* META_UUID incompat feature */
		meta = p + 248;
	bool isnew;
	int g = fs_group_find_or_add(c, G_XFS, meta, 16, &isnew);
	if (g < 0)
		return 0;
	struct agroup *G = &c->grp[g];
	if (isnew || !G->bs) {
		G->bs = bs;
		G->size = get_be64(p + 8) * bs;
		G->p[0] = agb;
		G->p[1] = agc;
		G->p[2] = ss;
		G->p[3] = isz;
		G->p[4] = p[123];   /* inopblog */
		G->p[5] = p[124];   /* agblklog */
		G->p[6] = v5;
		fmt_err(G->desc, sizeof(G->desc), "XFS%s (%u-byte blocks, %u AGs)", v5 ? " v5" : "", bs, agc);
	}
	int64_t rel[ANC_MAXREL];
	int n = 0;
	for (uint32_t a = 0; a < agc && n < ANC_MAXREL; a++)
		rel[n++] = (int64_t)((uint64_t)a * agb * bs);
	return anchor_add(c, img, o, g, AK_XFS_SB, rel, n, agc == 1 ? 12 : 8);
}

static int scan_lvm_label(struct dctx *c, int img, uint64_t o, const uint8_t *p)
{
	uint64_t sec = get_le64(p + 8);
	uint32_t off = get_le32(p + 20);
	if (memcmp(p + 24, "LVM2 001", 8) != 0 || sec > 3 || off < 32 || off > 400)
		return 0;
	int g = fs_group_find_or_add(c, G_LVM, p + off, 16, NULL);
	if (g < 0)
		return 0;
	fmt_err(c->grp[g].desc, sizeof(c->grp[g].desc), "LVM2 physical volume");
	int64_t rel = (int64_t)(sec * SECT);
	return anchor_add(c, img, o, g, AK_LVM_LABEL, &rel, 1, 12);
}

static const uint8_t lvm_mda_magic[16] = { ' ', 'L', 'V', 'M', '2', ' ', 'x', '[', '5', 'A', '%', 'r',
					   '0', 'N', '*', '>' };

static int scan_lvm_mda(struct dctx *c, int img, uint64_t o, const uint8_t *p)
{
	uint64_t start = get_le64(p + 24);
	if (get_le32(p + 20) != 1 || start % SECT || start > (1ull << 40))
		return 0;
	int g = -1;
	for (int i = 0; i < c->ngrp; i++)
		if (c->grp[i].type == G_LVM) {
			g = i;
			break;
		}
	if (g < 0) {
		g = fs_group_find_or_add(c, G_LVM, (const uint8_t *)"mda", 3, NULL);
		if (g < 0)
			return 0;
		fmt_err(c->grp[g].desc, sizeof(c->grp[g].desc), "LVM2 metadata area");
	}
	int64_t rel = (int64_t)start;
	return anchor_add(c, img, o, g, AK_LVM_MDA, &rel, 1, 12);
}

static int scan_luks(struct dctx *c, int img, uint64_t o, const uint8_t *p, bool secondary)
{
	uint16_t ver = get_be16(p + 6);
	int64_t rel = 0;
	if (ver == 2) {
		uint64_t ho = get_be64(p + 256);
		if (ho % SECT || ho > (64ull << 20))
			return 0;
		rel = (int64_t)ho;
	} else if (ver != 1 || secondary) {
		return 0;
	}
	int g = fs_group_find_or_add(c, G_LUKS, p + 168, 16, NULL);
	if (g < 0)
		return 0;
	fmt_err(c->grp[g].desc, sizeof(c->grp[g].desc), "LUKS%u header", ver);
	return anchor_add(c, img, o, g, AK_LUKS, &rel, 1, ver == 2 ? 14 : 10);
}

static int pass1_sector(struct dctx *c, int img, uint64_t o, const uint8_t *p, size_t avail)
{
	uint32_t bps;

	if (p[510] == 0x55 && p[511] == 0xAA) {
		if (ntfs_boot(p))
			return scan_ntfs_boot(c, img, o, p);
		if (fat_boot(p, &bps))
			return scan_fat_boot(c, img, o, p, bps);
		return scan_mbr(c, img, o, p);
	}
	if (memcmp(p, "EFI PART", 8) == 0)
		return scan_gpt(c, img, o, p);
	if (memcmp(p, "XFSB", 4) == 0)
		return scan_xfs_sb(c, img, o, p);
	if (memcmp(p, "LABELONE", 8) == 0)
		return scan_lvm_label(c, img, o, p);
	if (memcmp(p + 4, lvm_mda_magic, 16) == 0)
		return scan_lvm_mda(c, img, o, p);
	if (memcmp(p, "LUKS\xba\xbe", 6) == 0)
		return scan_luks(c, img, o, p, false);
	if (memcmp(p, "SKUL\xba\xbe", 6) == 0)
		return scan_luks(c, img, o, p, true);
	if (avail >= 1024 && p[56] == 0x53 && p[57] == 0xEF)
		return scan_ext(c, img, o, p);
	return 0;
}

/* ---------------- pass 2: structures that need their file system's parameters ---------------- */

static int find_group(const struct dctx *c, int type)
{
	int g = -1;
	for (int i = 0; i < c->ngrp; i++)
		if (c->grp[i].type == type && c->grp[i].bs) {
			if (g >= 0)
				return -2;   /* more than one: ambiguous */
			g = i;
		}
	return g;
}

/* Attribute list of a FILE record (fixups applied, alloc bytes): every
 * attribute of a known type with a sane length, in bounds, ended by the
 * end marker before bytes_in_use.  The XOR of several records (a parity
 * chunk of rows holding records at the same offsets) keeps the magic and
 * the fixups but seldom this chain. */
static bool ntfs_attrs_ok(const uint8_t *r, uint32_t alloc)
{
	uint32_t used = get_le32(r + 24), ao = get_le16(r + 20);
	uint32_t prev_type = 0;

	if (used > alloc || ao % 8 || ao < 0x30 || ao >= used)
		return false;
	for (int guard = 0; guard < 64; guard++) {
		if (ao + 8 > used)
			return false;
		uint32_t type = get_le32(r + ao);
		if (type == 0xffffffffu)
			return ao + 8 <= used;
		uint32_t len = get_le32(r + ao + 4);
		if (type < 0x10 || type > 0x100 || type % 0x10 || type < prev_type)
			return false;
		if (len < 24 || len % 8 || ao + len > used || r[ao + 8] > 1)
			return false;
		uint8_t nl = r[ao + 9];
		uint16_t no = get_le16(r + ao + 10);
		if (nl && (no < 16 || no + 2u * nl > len))
			return false;
		if (r[ao + 8] == 0) {   /* resident: value inside the attribute */
			uint32_t vl = get_le32(r + ao + 16);
			uint16_t vo = get_le16(r + ao + 20);
			if (vo > len || vl > len - vo)
				return false;
		} else if (len < 64) {
			return false;
		}
		prev_type = type;
		ao += len;
	}
	return false;
}

/* NTFS FILE record (NTFS 3.1: the header holds the record number): fixups
 * and the attribute chain checked; returns the record number or -1.
 * Records not in use whose number field is 0 (mkntfs leaves it so in the
 * reserved records 16-23) are refused: the field does not name them.
 * fixed: a copy with the fixups applied (alloc bytes) when not NULL. */
static int64_t ntfs_file_record(const uint8_t *p, size_t avail, uint8_t *fixed, uint32_t *alloc_o)
{
	uint16_t uo = get_le16(p + 4), uc = get_le16(p + 6);
	uint32_t alloc = get_le32(p + 28), used = get_le32(p + 24);
	uint8_t buf[4096];
	if (alloc < 512 || alloc > 4096 || !is_pow2(alloc) || alloc > avail || used > alloc ||
	    uc != alloc / 512 + 1 || uo < 0x30 || uo + 2u * uc > 512)
		return -1;
	uint16_t usn = get_le16(p + uo);
	for (unsigned i = 1; i < uc; i++)
		if (get_le16(p + i * 512 - 2) != usn)
			return -1;
	memcpy(buf, p, alloc);
	for (unsigned i = 1; i < uc; i++)
		memcpy(buf + i * 512 - 2, p + uo + 2 * i, 2);
	uint32_t recno = get_le32(p + 44);
	bool in_use = get_le16(p + 22) & 1;
	if (recno == 0 && !in_use)
		return -1;
	if (!ntfs_attrs_ok(buf, alloc))
		return -1;
	if (fixed)
		memcpy(fixed, buf, alloc);
	*alloc_o = alloc;
	return recno;
}

/* MFT extents from record 0's unnamed $DATA runlist: vcn_start[i], lcn[i], len[i]. */
struct mft_runs {
	int n;
	uint64_t vcn[32], lcn[32], len[32];
};

static void ntfs_parse_mft_runs(const uint8_t *r, uint32_t alloc, struct mft_runs *mr)
{
	uint32_t ao = get_le16(r + 20);
	mr->n = 0;
	for (int guard = 0; guard < 64 && ao + 16 <= alloc; guard++) {
		uint32_t type = get_le32(r + ao), len = get_le32(r + ao + 4);
		if (type == 0xffffffffu || len < 16 || ao + len > alloc)
			return;
		if (type == 0x80 && r[ao + 8] == 1 && r[ao + 9] == 0 && get_le64(r + ao + 16) == 0) {
			uint32_t mp = get_le16(r + ao + 32);
			uint32_t q = ao + mp;
			uint64_t vcn = 0;
			int64_t lcn = 0;
			while (q < ao + len && r[q] && mr->n < 32) {
				int lb = r[q] & 15, ob = r[q] >> 4;
				if (!lb || lb > 8 || ob > 8 || q + 1 + lb + ob > ao + len)
					return;
				uint64_t l = 0;
				for (int i = 0; i < lb; i++)
					l |= (uint64_t)r[q + 1 + i] << (8 * i);
				int64_t d = 0;
				for (int i = 0; i < ob; i++)
					d |= (int64_t)((uint64_t)r[q + 1 + lb + i] << (8 * i));
				if (ob && ob < 8 && (r[q + lb + ob] & 0x80))
					d |= -((int64_t)1 << (8 * ob));
				q += 1 + (uint32_t)lb + (uint32_t)ob;
				if (!ob)   /* sparse run: not for the MFT */
					return;
				lcn += d;
				if (lcn < 0)
					return;
				mr->vcn[mr->n] = vcn;
				mr->lcn[mr->n] = (uint64_t)lcn;
				mr->len[mr->n] = l;
				mr->n++;
				vcn += l;
			}
			return;
		}
		ao += len;
	}
}

static bool ext_sparse_group(uint64_t g)
{
	if (g <= 1)
		return true;
	for (uint64_t b = 3; b <= 7; b += 2) {
		uint64_t x = b;
		while (x < g)
			x *= b;
		if (x == g)
			return true;
	}
	return false;
}

/* crc16 (ANSI, reflected 0xA001) as ext4's gdt_csum uses */
static uint16_t crc16_ansi(uint16_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (uint16_t)((crc >> 1) ^ (0xA001u & (0u - (crc & 1u))));
	}
	return crc;
}

static bool ext_desc_ok(const struct agroup *G, const uint8_t *d, uint32_t grp)
{
	uint32_t ds = G->q[0];
	uint8_t tmp[64];
	uint8_t le[4] = { (uint8_t)grp, (uint8_t)(grp >> 8), (uint8_t)(grp >> 16), (uint8_t)(grp >> 24) };
	memcpy(tmp, d, ds);
	tmp[0x1E] = tmp[0x1F] = 0;
	uint16_t want = get_le16(d + 0x1E);
	if (G->p[6] & 0x400) {   /* metadata_csum */
		uint32_t crc = crc32c_sw(G->q[1], le, 4);
		crc = crc32c_sw(crc, tmp, ds);
		return (uint16_t)(crc & 0xFFFF) == want;
	}
	if (G->p[6] & 0x10) {    /* gdt_csum */
		uint16_t crc = crc16_ansi(0xFFFF, G->id, 16);
		crc = crc16_ansi(crc, le, 4);
		crc = crc16_ansi(crc, d, 0x1E);
		if (ds > 0x20)
			crc = crc16_ansi(crc, d + 0x20, ds - 0x20);
		return crc == want;
	}
	return false;
}

/* A sector of an ext4 group descriptor table: every nonzero descriptor's
 * checksum holds for its group number, which gives the sector's place. */
static int pass2_ext_gdt(struct dctx *c, int img, uint64_t o, const uint8_t *p)
{
	for (int g = 0; g < c->ngrp; g++) {
		const struct agroup *G = &c->grp[g];
		if (G->type != G_EXT || !G->bs || !(G->p[6] & 0x410))
			continue;
		uint32_t ds = G->q[0], per = SECT / ds, groups = G->p[3];
		uint32_t nsec = (groups + per - 1) / per;
		if (!ds || get_le32(p) == 0)
			continue;
		for (uint32_t si = 0; si < nsec && si < 64; si++) {
			int ok = 0;
			bool bad = false;
			for (uint32_t j = 0; j < per && si * per + j < groups; j++) {
				const uint8_t *d = p + j * ds;
				if (all_zero(d, ds))
					continue;
				if (!ext_desc_ok(G, d, si * per + j)) {
					bad = true;
					break;
				}
				ok++;
			}
			if (bad || !ok)
				continue;
			uint64_t bs = G->bs, fdb = G->p[1], bpg = G->p[0];
			int64_t rel[ANC_MAXREL];
			int n = 0;
			for (uint64_t grp = 0; grp < groups && n < ANC_MAXREL; grp++)
				if (ext_sparse_group(grp))
					rel[n++] = (int64_t)((grp * bpg + fdb + 1) * bs + si * SECT);
			float w = ok >= 2 ? 24 : 14;
			return anchor_add(c, img, o, g, AK_EXT_META, rel, n, w);
		}
	}
	return 0;
}

struct scan2 {
	int ntfs_g;          /* the NTFS group, -1 none, -2 several */
	int mft_free_g;      /* group for FILE records without a boot sector */
	struct mft_runs runs;
	int fat_g[4];
	int nfat;
	int xfs_any;         /* any XFS group */
};

static int ntfs_rel(const struct dctx *c, const struct scan2 *s, int64_t recno, int64_t *rel)
{
	const struct agroup *G = &c->grp[s->ntfs_g];
	uint32_t cs = G->bs, rec = G->p[1];
	uint64_t mft = G->p[2] | (uint64_t)G->p[3] << 32;
	uint64_t mirr = G->p[4] | (uint64_t)G->p[5] << 32;
	int n = 0;
	uint64_t byte = (uint64_t)recno * rec;
	if (s->runs.n > 0) {
		for (int i = 0; i < s->runs.n; i++) {
			uint64_t v0 = s->runs.vcn[i] * cs, v1 = (s->runs.vcn[i] + s->runs.len[i]) * cs;
			if (byte >= v0 && byte < v1)
				rel[n++] = (int64_t)(s->runs.lcn[i] * cs + (byte - v0));
		}
	}
	if (!n)
		rel[n++] = (int64_t)(mft * cs + byte);
	if (recno < 4 && byte < cs * 4 + 4096)
		rel[n++] = (int64_t)(mirr * cs + byte);
	return n;
}

static int pass2_ntfs(struct dctx *c, struct scan2 *s, int img, uint64_t o, const uint8_t *p,
		      size_t avail)
{
	uint32_t alloc;
	int64_t recno = ntfs_file_record(p, avail, NULL, &alloc);
	if (recno < 0)
		return 0;
	int64_t rel[ANC_MAXREL];
	int n, g;
	if (s->ntfs_g >= 0) {
		if (alloc != c->grp[s->ntfs_g].p[1])
			return 0;
		n = ntfs_rel(c, s, recno, rel);
		g = s->ntfs_g;
	} else {
		if (s->mft_free_g < 0) {
			s->mft_free_g = fs_group_find_or_add(c, G_NTFS, (const uint8_t *)"MFT", 3, NULL);
			if (s->mft_free_g < 0)
				return 0;
			c->grp[s->mft_free_g].p[1] = alloc;
			fmt_err(c->grp[s->mft_free_g].desc, sizeof(c->grp[s->mft_free_g].desc),
			     "NTFS MFT (no boot sector seen)");
		}
		g = s->mft_free_g;
		rel[0] = recno * alloc;
		n = 1;
	}
	return anchor_add(c, img, o, g, AK_NTFS_FILE, rel, n, 10);
}

static int pass2_fat(struct dctx *c, const struct scan2 *s, int img, uint64_t o, const uint8_t *p)
{
	int rc;
	for (int k = 0; k < s->nfat; k++) {
		int g = s->fat_g[k];
		const struct agroup *G = &c->grp[g];
		uint32_t bps = G->p[0], res = G->p[1], nf = G->p[2], fatsz = G->p[3];
		uint32_t data = G->p[4];
		int ft = (int)G->p[5];
		/* directory: "." then ".." at the start of a cluster */
		if (memcmp(p, ".          ", 11) == 0 && (p[11] & 0x10) &&
		    memcmp(p + 32, "..         ", 11) == 0 && (p[43] & 0x10)) {
			uint32_t cl = get_le16(p + 26) | (ft == 32 ? (uint32_t)get_le16(p + 20) << 16 : 0);
			if (cl >= 2) {
				int64_t rel = (int64_t)data * bps + (int64_t)(cl - 2) * G->bs;
				if ((uint64_t)rel < G->size) {
					rc = anchor_add(c, img, o, g, AK_FAT_DIR, &rel, 1, 10);
					if (rc)
						return rc;
				}
			}
			continue;
		}
		if (ft == 32 && memcmp(p, "RRaA", 4) == 0 && memcmp(p + 484, "rrAa", 4) == 0 && G->p[6]) {
			int64_t rel = (int64_t)G->p[6] * bps;
			rc = anchor_add(c, img, o, g, AK_FAT_FSINFO, &rel, 1, 6);
			if (rc)
				return rc;
			continue;
		}
		/* first sector of a FAT: the media descriptor entries */
		bool fat0 = false;
		if (ft == 16)
			fat0 = get_le16(p) == (0xFF00 | G->q[0]) && (get_le16(p + 2) | 0xC000) == 0xFFFF;
		else if (ft == 32)
			fat0 = (get_le32(p) & 0x0FFFFFFF) == (0x0FFFFF00 | G->q[0]) &&
			       ((get_le32(p + 4) & 0x0FFFFFFF) | 0x0C000000) == 0x0FFFFFFF;
		else
			fat0 = p[0] == G->q[0] && p[1] == 0xFF && p[2] == 0xFF;
		if (fat0) {
			int64_t rel[2];
			int n = 0;
			for (uint32_t f = 0; f < nf && n < 2; f++)
				rel[n++] = (int64_t)((uint64_t)res * bps + (uint64_t)f * fatsz * bps);
			rc = anchor_add(c, img, o, g, AK_FAT_TABLE, rel, n, 6);
			if (rc)
				return rc;
		}
		/* root directory: starts with the volume label of the boot sector */
		if ((p[11] & 0x3f) == 0x08 && memcmp(p, G->lbl, 11) == 0 && memcmp(G->lbl, "NO NAME    ", 11) != 0) {
			int64_t rel;
			if (ft == 32)
				rel = (int64_t)data * bps + (int64_t)(G->q[1] - 2) * G->bs;
			else
				rel = (int64_t)(res + nf * fatsz) * bps;
			if (rel > 0) {
				rc = anchor_add(c, img, o, g, AK_FAT_DIR, &rel, 1, 10);
				if (rc)
					return rc;
			}
		}
		if (ft != 16 && ft != 32)
			continue;
		/* FAT table sector: entries chaining to the next cluster name
		 * their own index (contiguous files) */
		int es = ft == 16 ? 2 : 4;
		int E = (int)(SECT / (unsigned)es);
		int64_t best = -1;
		int votes = 0, agree = 0;
		int64_t cand[256];
		int nc = 0;
		for (int x = 0; x < E; x++) {
			uint32_t e = ft == 16 ? get_le16(p + 2 * x) : (get_le32(p + 4 * x) & 0x0FFFFFFF);
			uint32_t lim = ft == 16 ? 0xFFF0 : 0x0FFFFFF0;
			if (e < 2 || e >= lim || (int64_t)e < x + 1)
				continue;
			cand[nc++] = (int64_t)e - x - 1;
		}
		/* majority by Boyer-Moore */
		for (int i = 0; i < nc; i++) {
			if (votes == 0) {
				best = cand[i];
				votes = 1;
			} else if (cand[i] == best) {
				votes++;
			} else {
				votes--;
			}
		}
		for (int i = 0; i < nc; i++)
			agree += cand[i] == best;
		if (best < 0 || best % E || agree < (ft == 16 ? 16 : 8))
			continue;
		uint64_t fatoff = (uint64_t)best * es;   /* byte offset of this sector in the FAT */
		if (fatoff >= (uint64_t)fatsz * bps)
			continue;
		int64_t rel[2];
		int n = 0;
		for (uint32_t f = 0; f < nf && n < 2; f++)
			rel[n++] = (int64_t)((uint64_t)res * bps + (uint64_t)f * fatsz * bps + fatoff);
		float w = agree >= 64 ? 12 : 8;
		rc = anchor_add(c, img, o, g, AK_FAT_TABLE, rel, n, w);
		if (rc)
			return rc;
	}
	return 0;
}

/* XFS v5 self-describing blocks and v3 inodes. */
static int xfs_group_by_uuid(struct dctx *c, const uint8_t *uuid, bool create)
{
	for (int i = 0; i < c->ngrp; i++)
		if (c->grp[i].type == G_XFS && c->grp[i].idlen == 16 && memcmp(c->grp[i].id, uuid, 16) == 0)
			return i;
	if (!create)
		return -1;
	bool isnew;
	int g = fs_group_find_or_add(c, G_XFS, uuid, 16, &isnew);
	if (g >= 0 && isnew)
		fmt_err(c->grp[g].desc, sizeof(c->grp[g].desc), "XFS v5 (no superblock seen)");
	return g;
}

static int pass2_xfs(struct dctx *c, int img, uint64_t o, const uint8_t *p)
{
	static const char *const shortbt[] = { "AB3B", "AB3C", "IAB3", "FIB3", "RMB3", "R3FC" };
	uint64_t blkno = 0;
	const uint8_t *uuid = NULL;
	int kind = AK_XFS_BLK;

	for (size_t i = 0; i < sizeof(shortbt) / sizeof(shortbt[0]); i++)
		if (memcmp(p, shortbt[i], 4) == 0) {
			blkno = get_be64(p + 16);
			uuid = p + 32;
		}
	if (!uuid && memcmp(p, "BMA3", 4) == 0) {
		blkno = get_be64(p + 24);
		uuid = p + 40;
	}
	if (!uuid && (memcmp(p, "XDB3", 4) == 0 || memcmp(p, "XDD3", 4) == 0 || memcmp(p, "XDF3", 4) == 0)) {
		blkno = get_be64(p + 8);
		uuid = p + 24;
	}
	if (!uuid) {
		uint16_t m = get_be16(p + 8);
		if (m == 0x3ebe || m == 0x3df1 || m == 0x3dff || m == 0x3bee) {
			blkno = get_be64(p + 16);
			uuid = p + 32;
		}
	}
	if (uuid) {
		if (all_zero(uuid, 16) || blkno > (1ull << 48))
			return 0;
		int g = xfs_group_by_uuid(c, uuid, true);
		int64_t rel = (int64_t)(blkno * SECT);
		return anchor_add(c, img, o, g, kind, &rel, 1, 16);
	}
	/* AG headers need the superblock's geometry */
	bool agf = memcmp(p, "XAGF", 4) == 0, agi = memcmp(p, "XAGI", 4) == 0,
	     agfl = memcmp(p, "XAFL", 4) == 0;
	if (agf || agi || agfl) {
		uint32_t seq = agfl ? get_be32(p + 4) : get_be32(p + 8);
		const uint8_t *u = agfl ? p + 8 : agf ? p + 64 : p + 296;
		int g = xfs_group_by_uuid(c, u, false);
		if (g < 0) {   /* v4, or uuid not seen: the only XFS with a superblock */
			g = find_group(c, G_XFS);
			if (g < 0)
				return 0;
		}
		const struct agroup *G = &c->grp[g];
		if (!G->bs || seq >= G->p[1])
			return 0;
		int64_t rel = (int64_t)((uint64_t)seq * G->p[0] * G->bs + (uint64_t)(agf ? 1 : agi ? 2 : 3) * G->p[2]);
		return anchor_add(c, img, o, g, AK_XFS_AGHDR, &rel, 1, 14);
	}
	/* v3 inodes (256 bytes or more; two may share a sector) */
	for (unsigned io = 0; io < SECT; io += 256) {
		const uint8_t *q = p + io;
		if (get_be16(q) != 0x494e || q[4] != 3)
			continue;
		int g = xfs_group_by_uuid(c, q + 160, false);
		if (g < 0 || !c->grp[g].bs)
			continue;
		const struct agroup *G = &c->grp[g];
		uint64_t ino = get_be64(q + 152);
		unsigned inopblog = G->p[4], agblklog = G->p[5];
		uint64_t agno = ino >> (inopblog + agblklog);
		uint64_t agbno = (ino >> inopblog) & ((1ull << agblklog) - 1);
		uint64_t idx = ino & ((1ull << inopblog) - 1);
		if (agno >= G->p[1] || agbno >= G->p[0])
			continue;
		int64_t rel = (int64_t)((agno * G->p[0] + agbno) * G->bs + idx * G->p[3]);
		if ((uint64_t)rel % SECT != io)
			continue;
		int rc = anchor_add(c, img, o, g, AK_XFS_INODE, &rel, 1, 12);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---------------- driver ---------------- */

typedef int (*sector_fn)(struct dctx *c, void *arg, int img, uint64_t o, const uint8_t *p, size_t avail);

static int each_sector(struct dctx *c, sector_fn fn, void *arg)
{
	int nimg = c->nimg + (c->have_virtual ? 1 : 0);
	for (int img = 0; img < nimg; img++) {
		uint64_t covered = 0;
		for (int w = 0; w < c->nwin; w++) {
			const struct dwin *win = &c->win[w];
			if (!win->buf[img])
				continue;
			for (uint64_t o = win->off; o < win->off + win->len; o += SECT) {
				if (w > 0 && o < covered)
					continue;
				const uint8_t *p = win->buf[img] + (o - win->off);
				size_t avail = (size_t)(win->off + win->len - o);
				if (p[0] == 0 && all_zero(p, SECT))
					continue;
				int rc = fn(c, arg, img, o, p, avail);
				if (rc)
					return rc;
			}
			if (win->off + win->len > covered)
				covered = win->off + win->len;
		}
	}
	return 0;
}

static int p1(struct dctx *c, void *arg, int img, uint64_t o, const uint8_t *p, size_t avail)
{
	(void)arg;
	return pass1_sector(c, img, o, p, avail);
}

static int p2(struct dctx *c, void *arg, int img, uint64_t o, const uint8_t *p, size_t avail)
{
	struct scan2 *s = arg;
	int rc;

	if (memcmp(p, "FILE", 4) == 0)
		return pass2_ntfs(c, s, img, o, p, avail);
	rc = pass2_ext_gdt(c, img, o, p);
	if (rc)
		return rc;
	if (s->nfat) {
		rc = pass2_fat(c, s, img, o, p);
		if (rc)
			return rc;
	}
	return pass2_xfs(c, img, o, p);
}

/* Find record 0 of the MFT (for its runlist) in any image. */
static int find_mft0(struct dctx *c, void *arg, int img, uint64_t o, const uint8_t *p, size_t avail)
{
	struct scan2 *s = arg;
	uint8_t fixed[4096];
	uint32_t alloc;

	(void)img;
	(void)o;
	if (s->runs.n || memcmp(p, "FILE", 4) != 0)
		return 0;
	if (ntfs_file_record(p, avail, fixed, &alloc) != 0 || alloc != c->grp[s->ntfs_g].p[1])
		return 0;
	ntfs_parse_mft_runs(fixed, alloc, &s->runs);
	return 0;
}

int anchors_scan(struct dctx *c)
{
	int rc = each_sector(c, p1, NULL);
	if (rc)
		return rc;
	struct scan2 s;
	memset(&s, 0, sizeof(s));
	s.ntfs_g = find_group(c, G_NTFS);
	s.mft_free_g = -1;
	if (s.ntfs_g >= 0) {
		rc = each_sector(c, find_mft0, &s);
		if (rc)
			return rc;
	}
	for (int g = 0; g < c->ngrp && s.nfat < 4; g++)
		if (c->grp[g].type == G_FAT)
			s.fat_g[s.nfat++] = g;
	return each_sector(c, p2, &s);
}

/* ---------------- tar (used by the solver's chase) ---------------- */

static uint64_t octal(const uint8_t *p, int n, bool *ok)
{
	uint64_t v = 0;
	int i = 0;

	if (p[0] & 0x80) {   /* GNU base-256 */
		for (i = 1; i < n; i++)
			v = v << 8 | p[i];
		return v;
	}
	while (i < n && p[i] == ' ')
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++)
		v = v * 8 + (uint64_t)(p[i] - '0');
	if (i < n && p[i] != 0 && p[i] != ' ')
		*ok = false;
	return v;
}

bool tar_header_valid(const uint8_t *h, uint64_t *datalen)
{
	bool ok = true;

	if (memcmp(h + 257, "ustar", 5) != 0 || h[0] == 0)
		return false;
	uint64_t sum = octal(h + 148, 8, &ok);
	if (!ok)
		return false;
	uint64_t s = 0;
	for (int i = 0; i < 512; i++)
		s += (i >= 148 && i < 156) ? ' ' : h[i];
	if (s != sum)
		return false;
	uint64_t size = octal(h + 124, 12, &ok);
	if (!ok)
		return false;
	char t = (char)h[156];
	/* these carry no data blocks whatever size says */
	if (t == '1' || t == '2' || t == '3' || t == '4' || t == '5' || t == '6')
		size = 0;
	*datalen = (size + 511) / 512 * 512;
	return true;
}
