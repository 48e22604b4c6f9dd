/* ddf.c - SNIA DDF metadata parser (see ddf.h; facts and sources in FACTS.md).
 *
 * Everything is read through struct dev_reader; every offset, length and
 * count taken from the metadata is range-checked before use, all loops are
 * bounded by section sizes or fixed limits.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "ddf.h"
#include "format.h"
#include "sha1.h"

#define SECT 512u

#define MAGIC_HEADER   0xDE11DE11u
#define MAGIC_CTRL     0xAD111111u
#define MAGIC_PHYS     0x22222222u
#define MAGIC_PDD      0x33333333u
#define MAGIC_VIRT     0xDDDDDDDDu
#define MAGIC_VDCONF   0xEEEEEEEEu
#define MAGIC_SPARE    0x55555555u
#define MAGIC_VENDOR   0x88888888u

#define HDR_ANCHOR     0
#define HDR_PRIMARY    1
#define HDR_SECONDARY  2

#define NONE32         0xFFFFFFFFu
#define NONE64         UINT64_MAX

/* Section indices in the header (offset/length pairs from byte 192) */
enum { S_CTRL, S_PHYS, S_VIRT, S_CONF, S_PDD, S_BBM, S_DIAG, S_VENDOR, S_COUNT };
static const char *const sect_name[S_COUNT] = {
	"controller data", "physical disk records", "virtual disk records",
	"configuration records", "physical disk data", "bad block log",
	"diagnostic space", "vendor logs"
};
/* largest section we load, in sectors (bounds memory on hostile input) */
static const uint32_t sect_cap[S_COUNT] = { 16, 4096, 4096, 16384, 16, 0, 0, 0 };

/* Bytes scanned per read while searching for the anchor */
#define SEARCH_CHUNK (64u * 1024u)

struct hdr {
	uint32_t crc;
	uint8_t  guid[DDF_GUID_LEN];
	char     rev[8];
	uint32_t seq, timestamp;
	uint8_t  open_flag, foreign_flag;
	uint64_t plba, slba;
	uint8_t  type;
	uint32_t ws_len;
	uint64_t ws_lba;
	uint16_t max_pd, max_vd, max_part, crl, mppe;
	uint32_t off[S_COUNT], len[S_COUNT];
	int      crc_kind;
};

struct ctx {
	const struct dev_reader *dev;
	unsigned flags;
	int be;                 /* byte order of the metadata */
	uint64_t nsect;         /* device size in whole sectors */
	char *err;
	size_t errlen;
	struct ddf_info *out;
};

/* ------------------------------------------------------------------ utils */

static void __attribute__((format(printf, 2, 3)))
seterr(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!c->err || c->errlen == 0)
		return;
	n = snprintf(c->err, c->errlen, "DDF: ");
	if (n < 0 || (size_t)n >= c->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 2, 3)))
warn(struct ctx *c, const char *fmt, ...)
{
	char *w = c->out->warnings;
	size_t used = strlen(w), cap = sizeof(c->out->warnings);
	va_list ap;

	if (used + 4 >= cap)
		return;
	if (used) {
		memcpy(w + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(w + used, cap - used, fmt, ap);
	va_end(ap);
}

static uint16_t g16(const struct ctx *c, const uint8_t *p)
{
	return c->be ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t g32(const struct ctx *c, const uint8_t *p)
{
	if (c->be)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint64_t g64(const struct ctx *c, const uint8_t *p)
{
	uint64_t hi = g32(c, c->be ? p : p + 4), lo = g32(c, c->be ? p + 4 : p);
	return hi << 32 | lo;
}

static int all_ff(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0xff)
			return 0;
	return 1;
}

static void guid_hex(const uint8_t *g, char out[DDF_GUID_LEN * 2 + 1])
{
	static const char hx[] = "0123456789abcdef";
	int i;

	for (i = 0; i < DDF_GUID_LEN; i++) {
		out[2 * i] = hx[g[i] >> 4];
		out[2 * i + 1] = hx[g[i] & 15];
	}
	out[2 * DDF_GUID_LEN] = 0;
}

/* Read len bytes at byte offset off; -EIO with a message when outside. */
static int dread(struct ctx *c, void *buf, size_t len, uint64_t off, const char *what)
{
	int rc;

	if (off > c->dev->size || len > c->dev->size - off) {
		seterr(c, "%s: %zu bytes at offset %llu lie past the end of the device (%llu bytes)",
		       what, len, (unsigned long long)off, (unsigned long long)c->dev->size);
		return -EIO;
	}
	rc = c->dev->read(c->dev->ctx, buf, len, off);
	if (rc < 0) {
		seterr(c, "%s: read of %zu bytes at offset %llu failed: %s", what, len,
		       (unsigned long long)off, strerror(-rc));
		return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ CRC-32 */

/* CRC of buf[0..len) with bytes 4..7 (the crc field) taken as 0xffffffff,
 * register started at init (no inversions: crc32_raw). */
static uint32_t crc_section(uint32_t init, const uint8_t *buf, size_t len)
{
	static const uint8_t ff[4] = { 0xff, 0xff, 0xff, 0xff };
	uint32_t r = crc32_raw(init, buf, 4);

	r = crc32_raw(r, ff, 4);
	return crc32_raw(r, buf + 8, len - 8);
}

/* 0 and *kind set if the stored crc (at bytes 4..7, metadata byte order)
 * matches either variant; else -EBADMSG with a message naming what. */
static int crc_check(struct ctx *c, const uint8_t *buf, size_t len, const char *what, int *kind)
{
	uint32_t stored = g32(c, buf + 4);
	uint32_t md = crc_section(0, buf, len), std;

	if (stored == md) {
		if (kind)
			*kind = DDF_CRC_MDADM;
		return 0;
	}
	std = ~crc_section(0xFFFFFFFFu, buf, len);
	if (stored == std) {
		if (kind)
			*kind = DDF_CRC_STANDARD;
		return 0;
	}
	if (c->flags & DDF_PARSE_IGNORE_CRC) {
		warn(c, "%s: CRC 0x%08x, computed 0x%08x (ignored)", what, stored, md);
		if (kind)
			*kind = 0;
		return 0;
	}
	seterr(c, "%s: CRC 0x%08x, computed 0x%08x (zlib-style 0x%08x): damaged metadata",
	       what, stored, md, std);
	return -EBADMSG;
}

/* ------------------------------------------------------------------ UUIDs */

void ddf_format_uuid(const uint8_t b[16], char out[36])
{
	/* mdadm keeps the 16 bytes in an int[4] and prints every int with its
	 * bytes from the most significant down: on a little-endian host each
	 * 4-byte group comes out reversed. */
	snprintf(out, 36, "%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x",
		 b[3], b[2], b[1], b[0], b[7], b[6], b[5], b[4],
		 b[11], b[10], b[9], b[8], b[15], b[14], b[13], b[12]);
}

static void uuid_of(const uint8_t *data, size_t n, char out[36])
{
	uint8_t d[20];

	sha1_digest(data, n, d);
	ddf_format_uuid(d, out);
}

/* ------------------------------------------------------------------ names */

const char *ddf_prl_name(uint8_t prl)
{
	switch (prl) {
	case DDF_PRL_RAID0: return "RAID0";
	case DDF_PRL_RAID1: return "RAID1";
	case DDF_PRL_RAID3: return "RAID3";
	case DDF_PRL_RAID4: return "RAID4";
	case DDF_PRL_RAID5: return "RAID5";
	case DDF_PRL_RAID6: return "RAID6";
	case DDF_PRL_JBOD: return "JBOD";
	case DDF_PRL_RAID1E: return "RAID1E";
	case DDF_PRL_RAID5E: return "RAID5E";
	case DDF_PRL_CONCAT: return "CONCAT";
	case DDF_PRL_RAID5EE: return "RAID5EE";
	default: return "unknown";
	}
}

const char *ddf_md_layout_name(int level, int layout)
{
	if (level == 4)
		return "parity-last";
	if (level == 5) {
		switch (layout) {
		case 0: return "left-asymmetric";
		case 1: return "right-asymmetric";
		case 2: return "left-symmetric";
		case 3: return "right-symmetric";
		default: break;
		}
	}
	if (level == 6) {
		switch (layout) {
		case 8: return "ddf-zero-restart";
		case 9: return "ddf-N-restart";
		case 10: return "ddf-N-continue";
		default: break;
		}
	}
	return "unknown";
}

const char *ddf_vd_state_name(uint8_t state)
{
	static const char *const n[8] = {
		"Optimal", "Degraded", "Deleted", "Missing", "Failed",
		"Partially Optimal", "Offline", "reserved"
	};
	return n[state & DDF_VDS_MASK];
}

const char *ddf_member_status_name(int status)
{
	switch (status) {
	case DDF_MEMBER_ONLINE: return "online";
	case DDF_MEMBER_FAILED: return "failed";
	case DDF_MEMBER_REBUILDING: return "rebuilding";
	case DDF_MEMBER_MISSING: return "missing";
	default: return "unknown";
	}
}

int64_t ddf_time_to_unix(uint32_t t)
{
	return (int64_t)t + 315532800;   /* 1970-01-01 .. 1980-01-01 */
}

/* ------------------------------------------------------------------ geometry */

int ddf_md_geometry(uint8_t prl, uint8_t rlq, unsigned prim, unsigned sec,
		    uint8_t srl, int *level, int *layout, const char **why)
{
	*level = -2;
	*layout = -1;
	if (sec > 1) {
		/* mdadm accepts two levels only as RAID10 (RAID1 pairs/triples
		 * striped or spanned) */
		if (prl == DDF_PRL_RAID1 && (srl == 0x00 || srl == 0x03) &&
		    ((prim == 2 && rlq == 0) || (prim == 3 && rlq == 1))) {
			*level = 10;
			*layout = prim == 2 ? 0x102 : 0x103;
			return 0;
		}
		*why = "two-level virtual disk (secondary RAID level over several basic VDs, e.g. RAID50/60) is not supported";
		return -ENOTSUP;
	}
	switch (prl) {
	case DDF_PRL_CONCAT:
		*level = -1;
		*layout = 0;
		return 0;
	case DDF_PRL_RAID0:
		if (rlq != 0)
			break;
		*level = 0;
		*layout = 0;
		return 0;
	case DDF_PRL_RAID1:
		if (!((rlq == 0 && prim == 2) || (rlq == 1 && prim == 3)))
			break;
		*level = 1;
		*layout = 0;
		return 0;
	case DDF_PRL_RAID1E:
		if (rlq == 0)
			*layout = 0x102;
		else if (rlq == 1)
			*layout = 0x201;
		else
			break;
		*level = 10;
		return 0;
	case DDF_PRL_RAID4:
		if (rlq != 1)     /* only "parity in the last extent" */
			break;
		*level = 4;
		*layout = 0;
		return 0;
	case DDF_PRL_RAID5:
		switch (rlq) {
		case 0: *layout = 1; break;   /* parity 0, data restart: right-asymmetric */
		case 2: *layout = 0; break;   /* parity N, data restart: left-asymmetric */
		case 3: *layout = 2; break;   /* parity N, data continue: left-symmetric */
		default: *why = "RAID5 RAID level qualifier not known to mdadm"; return -ENOTSUP;
		}
		*level = 5;
		return 0;
	case DDF_PRL_RAID6:
		switch (rlq) {
		case 1: *layout = 8; break;   /* ALGORITHM_ROTATING_ZERO_RESTART */
		case 2: *layout = 9; break;   /* ALGORITHM_ROTATING_N_RESTART */
		case 3: *layout = 10; break;  /* ALGORITHM_ROTATING_N_CONTINUE */
		default: *why = "RAID6 RAID level qualifier not known to mdadm"; return -ENOTSUP;
		}
		*level = 6;
		return 0;
	default:
		*why = "primary RAID level not supported by md (RAID3, RAID5E, RAID5EE, JBOD or unknown)";
		return -ENOTSUP;
	}
	*why = "RAID level qualifier not supported for this level and member count";
	return -ENOTSUP;
}

int ddf_vd_check_raid456(const struct ddf_vd *vd, char *why, size_t whylen)
{
	const char *r = NULL;
	int level, layout, r_ok, bad = 0, i;
	char tmp[160];

	tmp[0] = 0;
	if (!vd->has_config) {
		r = "this disk has no configuration record for the virtual disk (not a member)";
		goto fail;
	}
	r_ok = ddf_md_geometry(vd->prl, vd->rlq, (unsigned)vd->raid_disks, vd->sec_count,
			       vd->srl, &level, &layout, &r);
	if (r_ok)
		goto fail;
	if (level != 4 && level != 5 && level != 6) {
		snprintf(tmp, sizeof(tmp), "%s%s (md level %d) is not RAID4/5/6",
			 vd->sec_count > 1 ? "two-level " : "", ddf_prl_name(vd->prl), level);
		r = tmp;
		goto fail;
	}
	if (vd->chunk_bytes < 4096 || vd->chunk_bytes > (1u << 30)) {
		snprintf(tmp, sizeof(tmp), "chunk of %llu bytes (chunk_shift %u) is outside 4 KiB..1 GiB",
			 (unsigned long long)vd->chunk_bytes, vd->chunk_shift);
		r = tmp;
		goto fail;
	}
	if (vd->raid_disks < (level == 6 ? 4 : (level == 5 ? 2 : 3))) {
		snprintf(tmp, sizeof(tmp), "%d members are too few for RAID%d", vd->raid_disks, level);
		r = tmp;
		goto fail;
	}
	if (vd->blocks == 0 || vd->blocks < vd->chunk_bytes / SECT) {
		snprintf(tmp, sizeof(tmp), "member size of %llu sectors is less than one chunk",
			 (unsigned long long)vd->blocks);
		r = tmp;
		goto fail;
	}
	for (i = 0; i < vd->raid_disks && i < DDF_MAX_ROLES; i++)
		if (vd->member[i].status != DDF_MEMBER_ONLINE)
			bad++;
	if (bad > (level == 6 ? 2 : 1)) {
		snprintf(tmp, sizeof(tmp), "%d of %d members failed or missing, RAID%d can replace %d",
			 bad, vd->raid_disks, level, level == 6 ? 2 : 1);
		r = tmp;
		goto fail;
	}
	if (why && whylen)
		why[0] = 0;
	return 0;
fail:
	if (why && whylen)
		snprintf(why, whylen, "%s", r);
	return -ENOTSUP;
}

/* ------------------------------------------------------------------ headers */

static int detect_order(const uint8_t *p)
{
	if (p[0] == 0xDE && p[1] == 0x11 && p[2] == 0xDE && p[3] == 0x11)
		return 1;
	if (p[0] == 0x11 && p[1] == 0xDE && p[2] == 0x11 && p[3] == 0xDE)
		return 0;
	return -1;
}

static void hdr_decode(const struct ctx *c, const uint8_t *b, struct hdr *h)
{
	int i;

	h->crc = g32(c, b + 4);
	memcpy(h->guid, b + 8, DDF_GUID_LEN);
	memcpy(h->rev, b + 32, 8);
	h->seq = g32(c, b + 40);
	h->timestamp = g32(c, b + 44);
	h->open_flag = b[48];
	h->foreign_flag = b[49];
	h->plba = g64(c, b + 96);
	h->slba = g64(c, b + 104);
	h->type = b[112];
	h->ws_len = g32(c, b + 116);
	h->ws_lba = g64(c, b + 120);
	h->max_pd = g16(c, b + 128);
	h->max_vd = g16(c, b + 130);
	h->max_part = g16(c, b + 132);
	h->crl = g16(c, b + 134);
	h->mppe = g16(c, b + 136);
	for (i = 0; i < S_COUNT; i++) {
		h->off[i] = g32(c, b + 192 + 8 * i);
		h->len[i] = g32(c, b + 196 + 8 * i);
	}
	h->crc_kind = 0;
}

/* Header fields that must be sane before anything is loaded through them.
 * what names the header in messages. */
static int hdr_check(struct ctx *c, const struct hdr *h, const char *what)
{
	int i;

	if (h->plba == NONE64 || h->plba >= c->nsect) {
		seterr(c, "%s: primary_lba %llu is outside the device (%llu sectors)", what,
		       (unsigned long long)h->plba, (unsigned long long)c->nsect);
		return -EINVAL;
	}
	if (h->slba != NONE64 && h->slba >= c->nsect) {
		seterr(c, "%s: secondary_lba %llu is outside the device (%llu sectors)", what,
		       (unsigned long long)h->slba, (unsigned long long)c->nsect);
		return -EINVAL;
	}
	if (h->max_pd == 0 || h->max_vd == 0 || h->max_part == 0) {
		seterr(c, "%s: max_pd_entries %u / max_vd_entries %u / max_partitions %u: zero count",
		       what, h->max_pd, h->max_vd, h->max_part);
		return -EINVAL;
	}
	if (h->crl == 0) {
		seterr(c, "%s: config_record_len 0", what);
		return -EINVAL;
	}
	if (h->mppe == 0) {
		seterr(c, "%s: max_primary_element_entries 0", what);
		return -EINVAL;
	}
	for (i = 0; i <= S_PDD; i++) {
		if (h->off[i] == NONE32 || h->len[i] == 0) {
			seterr(c, "%s: %s section absent (offset 0x%08x, length %u)", what,
			       sect_name[i], h->off[i], h->len[i]);
			return -EINVAL;
		}
		if (h->len[i] > sect_cap[i]) {
			seterr(c, "%s: %s section length %u sectors exceeds %u", what,
			       sect_name[i], h->len[i], sect_cap[i]);
			return -EINVAL;
		}
	}
	return 0;
}

/* Effective max primary elements (Adaptec writes 0xffff; FreeBSD md_ddf.c
 * then uses min(max_pd_entries, (record bytes - 512) / 12)). */
static unsigned eff_mppe(const struct hdr *h)
{
	unsigned m = h->mppe;

	if (m == 0xffff) {
		unsigned fit = ((unsigned)h->crl * SECT - SECT) / 12;

		m = h->max_pd < fit ? h->max_pd : fit;
	}
	return m;
}

static int same_geometry(const struct hdr *a, const struct hdr *b, const char **field)
{
	int i;

	if (memcmp(a->guid, b->guid, DDF_GUID_LEN)) { *field = "guid"; return 0; }
	if (memcmp(a->rev, b->rev, 8)) { *field = "revision"; return 0; }
	if (a->plba != b->plba) { *field = "primary_lba"; return 0; }
	if (a->slba != b->slba) { *field = "secondary_lba"; return 0; }
	if (a->max_pd != b->max_pd) { *field = "max_pd_entries"; return 0; }
	if (a->max_vd != b->max_vd) { *field = "max_vd_entries"; return 0; }
	if (a->max_part != b->max_part) { *field = "max_partitions"; return 0; }
	if (a->crl != b->crl) { *field = "config_record_len"; return 0; }
	if (a->mppe != b->mppe) { *field = "max_primary_element_entries"; return 0; }
	for (i = 0; i < S_COUNT; i++)
		if (a->off[i] != b->off[i] || a->len[i] != b->len[i]) {
			*field = sect_name[i];
			return 0;
		}
	return 1;
}

/* Read and validate the primary (type 1) or secondary (type 2) header.
 * 0 if good; else -errno and why[] says what is wrong (no seterr: the
 * caller decides whether the other copy can be used). */
static int load_hdr(struct ctx *c, const struct hdr *anchor, int type, struct hdr *h,
		    char *why, size_t whylen)
{
	uint8_t b[SECT];
	uint64_t lba = type == HDR_PRIMARY ? anchor->plba : anchor->slba;
	const char *name = type == HDR_PRIMARY ? "primary header" : "secondary header";
	const char *field = NULL;
	char e[200];
	int rc, o;

	if (lba == NONE64) {
		snprintf(why, whylen, "%s: none (lba 0xffffffffffffffff)", name);
		return -ENOENT;
	}
	if (lba >= c->nsect) {
		snprintf(why, whylen, "%s: lba %llu past the end of the device", name,
			 (unsigned long long)lba);
		return -EINVAL;
	}
	e[0] = 0;
	{
		char *save = c->err;
		size_t savelen = c->errlen;

		c->err = e;
		c->errlen = sizeof(e);
		rc = dread(c, b, SECT, lba * SECT, name);
		if (!rc) {
			o = detect_order(b);
			if (o != c->be) {
				snprintf(e, sizeof(e), "DDF: %s at lba %llu: bad magic %02x%02x%02x%02x",
					 name, (unsigned long long)lba, b[0], b[1], b[2], b[3]);
				rc = -EBADMSG;
			} else {
				char w[64];

				snprintf(w, sizeof(w), "%s at lba %llu", name, (unsigned long long)lba);
				hdr_decode(c, b, h);
				rc = crc_check(c, b, SECT, w, &h->crc_kind);
			}
		}
		c->err = save;
		c->errlen = savelen;
	}
	if (rc) {
		snprintf(why, whylen, "%s", e + (strncmp(e, "DDF: ", 5) ? 0 : 5));
		return rc;
	}
	if (h->type != type) {
		snprintf(why, whylen, "%s at lba %llu: header type %u, expected %d", name,
			 (unsigned long long)lba, h->type, type);
		return -EBADMSG;
	}
	if (!same_geometry(anchor, h, &field)) {
		snprintf(why, whylen, "%s at lba %llu: %s differs from the anchor", name,
			 (unsigned long long)lba, field);
		return -EBADMSG;
	}
	return 0;
}

/* Examine one 512-byte sector as a possible anchor.  Returns 1 and fills h
 * if it is a DDF header with a good CRC and sane fields; 0 if not a header;
 * -errno if it has the magic but is damaged (message in bad[] if empty). */
static int try_anchor(struct ctx *c, const uint8_t *b, uint64_t lba, struct hdr *h,
		      char *bad, size_t badlen)
{
	int o = detect_order(b), rc, save_be = c->be;
	char w[64], e[240];
	char *save = c->err;
	size_t savelen = c->errlen;

	if (o < 0)
		return 0;
	c->be = o;
	hdr_decode(c, b, h);
	snprintf(w, sizeof(w), "%s at lba %llu", lba == c->nsect - 1 ? "anchor" : "header",
		 (unsigned long long)lba);
	e[0] = 0;
	c->err = e;
	c->errlen = sizeof(e);
	rc = crc_check(c, b, SECT, w, &h->crc_kind);
	if (!rc)
		rc = hdr_check(c, h, w);
	if (!rc && h->type != HDR_ANCHOR) {
		uint64_t self = h->type == HDR_PRIMARY ? h->plba :
				h->type == HDR_SECONDARY ? h->slba : NONE64;
		if (self != lba) {
			snprintf(e, sizeof(e), "DDF: %s: header type %u does not describe itself "
				 "(primary_lba %llu, secondary_lba %llu)", w, h->type,
				 (unsigned long long)h->plba, (unsigned long long)h->slba);
			rc = -EBADMSG;
		}
	}
	c->err = save;
	c->errlen = savelen;
	if (rc) {
		c->be = save_be;
		if (bad && badlen && !bad[0])
			snprintf(bad, badlen, "%s", e + (strncmp(e, "DDF: ", 5) ? 0 : 5));
		return rc;
	}
	return 1;
}

/* Find the anchor: the last sector, else (unless NO_SEARCH) a sector-aligned
 * DDF header in the last 32 MiB, an anchor (type 0) closest to the end first,
 * else a primary/secondary header used in its place.  An anchor in the last
 * sector whose CRC is right but whose fields are impossible is an error (no
 * search).  Sets c->be. */
static int find_anchor(struct ctx *c, struct hdr *a, uint64_t *where)
{
	uint8_t last[SECT];
	uint8_t *buf = NULL;
	char bad[240];
	struct hdr cand, sub;
	uint64_t lo, pos, sub_lba = NONE64;
	int rc, have_sub = 0, sub_be = 1, bad_rc = 0;

	bad[0] = 0;
	if (c->nsect == 0) {
		seterr(c, "device of %llu bytes is too small for an anchor",
		       (unsigned long long)c->dev->size);
		return -ENOENT;
	}
	rc = dread(c, last, SECT, (c->nsect - 1) * SECT, "anchor");
	if (rc)
		return rc;
	rc = try_anchor(c, last, c->nsect - 1, a, bad, sizeof(bad));
	if (rc == 1 && a->type != HDR_ANCHOR)
		warn(c, "last sector holds a type %u header, not an anchor", a->type);
	if (rc == 1) {
		*where = c->nsect - 1;
		return 0;
	}
	if (rc == -EINVAL) {
		/* a good CRC over impossible fields: broken metadata, not a
		 * controller that put its anchor elsewhere */
		seterr(c, "%s", bad);
		return rc;
	}
	if (rc < 0) {
		bad_rc = rc;
		warn(c, "%s", bad);
	}
	if (c->flags & DDF_PARSE_NO_SEARCH) {
		if (bad_rc) {
			seterr(c, "%s", bad);
			return bad_rc;
		}
		seterr(c, "no DDF anchor in the last sector");
		return -ENOENT;
	}

	buf = malloc(SEARCH_CHUNK);
	if (!buf) {
		seterr(c, "out of memory for the anchor search");
		return -ENOMEM;
	}
	lo = c->nsect > DDF_SEARCH_BYTES / SECT ? c->nsect - DDF_SEARCH_BYTES / SECT : 0;
	pos = c->nsect - 1;           /* sectors [lo, pos) remain to be scanned */
	while (pos > lo) {
		uint64_t n = pos - lo, i;

		if (n > SEARCH_CHUNK / SECT)
			n = SEARCH_CHUNK / SECT;
		rc = dread(c, buf, (size_t)(n * SECT), (pos - n) * SECT, "anchor search");
		if (rc)
			goto out;
		for (i = n; i-- > 0;) {
			uint64_t lba = pos - n + i;

			rc = try_anchor(c, buf + i * SECT, lba, &cand, bad, sizeof(bad));
			if (rc < 0) {
				if (!bad_rc)
					bad_rc = rc;
				continue;
			}
			if (rc == 0)
				continue;
			if (cand.type == HDR_ANCHOR) {
				*a = cand;
				*where = lba;
				warn(c, "anchor found at lba %llu, %llu sectors before the end",
				     (unsigned long long)lba,
				     (unsigned long long)(c->nsect - lba));
				rc = 0;
				goto out;
			}
			if (!have_sub) {
				sub = cand;
				sub_lba = lba;
				sub_be = c->be;
				have_sub = 1;
			}
		}
		pos -= n;
	}
	if (have_sub) {
		*a = sub;
		*where = sub_lba;
		c->be = sub_be;
		warn(c, "no anchor; the type %u header at lba %llu stands in for it",
		     sub.type, (unsigned long long)sub_lba);
		rc = 0;
		goto out;
	}
	if (bad_rc) {
		seterr(c, "%s", bad);
		rc = bad_rc;
	} else {
		seterr(c, "no DDF anchor in the last sector nor in the last %u MiB",
		       DDF_SEARCH_BYTES >> 20);
		rc = -ENOENT;
	}
out:
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ sections */

struct sections {
	uint8_t *s[S_PDD + 1];
	size_t   bytes[S_PDD + 1];
};

static void sections_free(struct sections *s)
{
	int i;

	for (i = 0; i <= S_PDD; i++) {
		free(s->s[i]);
		s->s[i] = NULL;
	}
}

static int load_sections(struct ctx *c, const struct hdr *h, uint64_t base, const char *hname,
			 struct sections *s)
{
	static const uint32_t magic[S_PDD + 1] = {
		MAGIC_CTRL, MAGIC_PHYS, MAGIC_VIRT, 0, MAGIC_PDD
	};
	char what[96];
	int i, rc;

	memset(s, 0, sizeof(*s));
	for (i = 0; i <= S_PDD; i++) {
		uint64_t lba = base + h->off[i];
		size_t bytes = (size_t)h->len[i] * SECT;

		snprintf(what, sizeof(what), "%s %s section", hname, sect_name[i]);
		if (h->off[i] >= c->nsect || lba + h->len[i] > c->nsect) {
			seterr(c, "%s: offset %u + length %u sectors from lba %llu runs past the end of the device (%llu sectors)",
			       what, h->off[i], h->len[i], (unsigned long long)base,
			       (unsigned long long)c->nsect);
			rc = -EINVAL;
			goto fail;
		}
		s->s[i] = malloc(bytes);
		if (!s->s[i]) {
			seterr(c, "%s: out of memory (%zu bytes)", what, bytes);
			rc = -ENOMEM;
			goto fail;
		}
		s->bytes[i] = bytes;
		rc = dread(c, s->s[i], bytes, lba * SECT, what);
		if (rc)
			goto fail;
		if (magic[i]) {
			uint32_t m = g32(c, s->s[i]);

			if (m != magic[i]) {
				seterr(c, "%s at lba %llu: magic 0x%08x, expected 0x%08x", what,
				       (unsigned long long)lba, m, magic[i]);
				rc = -EBADMSG;
				goto fail;
			}
			rc = crc_check(c, s->s[i], bytes, what, NULL);
			if (rc)
				goto fail;
		}
	}
	return 0;
fail:
	sections_free(s);
	return rc;
}

static int find_pd(const struct ddf_info *o, uint32_t refnum)
{
	int i;

	for (i = 0; i < o->n_pds; i++)
		if (o->pds[i].refnum == refnum)
			return i;
	return -1;
}

static int parse_phys(struct ctx *c, const struct sections *s)
{
	const uint8_t *p = s->s[S_PHYS];
	struct ddf_info *o = c->out;
	unsigned max = g16(c, p + 10), i;
	size_t room = (s->bytes[S_PHYS] - 64) / 64;

	if (max > room) {
		seterr(c, "physical disk records: max_pdes %u entries do not fit in %zu bytes",
		       max, s->bytes[S_PHYS]);
		return -EINVAL;
	}
	for (i = 0; i < max; i++) {
		const uint8_t *e = p + 64 + 64 * (size_t)i;
		uint32_t ref = g32(c, e + 24);
		struct ddf_pd *pd;

		if (ref == NONE32 || all_ff(e, DDF_GUID_LEN))
			continue;
		if (find_pd(o, ref) >= 0) {
			warn(c, "physical disk refnum %08x listed twice (slot %u ignored)", ref, i);
			continue;
		}
		if (o->n_pds >= DDF_MAX_PDS) {
			seterr(c, "physical disk records: more than %d disks in use", DDF_MAX_PDS);
			return -E2BIG;
		}
		pd = &o->pds[o->n_pds++];
		memcpy(pd->guid, e, DDF_GUID_LEN);
		pd->refnum = ref;
		pd->type = g16(c, e + 28);
		pd->state = g16(c, e + 30);
		pd->config_size = g64(c, e + 32);
		pd->slot = (int)i;
	}
	return 0;
}

static void trim_name(const uint8_t *src, char out[17])
{
	int i, n = 16;

	memcpy(out, src, 16);
	out[16] = 0;
	for (i = 0; i < 16; i++)
		if (out[i] == 0) {
			n = i;
			break;
		}
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e)
			out[i] = '?';
}

static int parse_virt(struct ctx *c, const struct sections *s, const uint8_t *anchor_guid)
{
	static const uint8_t lsi[8] = { 'L', 'S', 'I', ' ', ' ', ' ', ' ', ' ' };
	const uint8_t *p = s->s[S_VIRT];
	struct ddf_info *o = c->out;
	unsigned max = g16(c, p + 10), i;
	size_t room = (s->bytes[S_VIRT] - 64) / 64;
	int lsi_uuid = memcmp(o->controller_guid, lsi, 8) == 0;

	if (max > room) {
		seterr(c, "virtual disk records: max_vdes %u entries do not fit in %zu bytes",
		       max, s->bytes[S_VIRT]);
		return -EINVAL;
	}
	for (i = 0; i < max; i++) {
		const uint8_t *e = p + 64 + 64 * (size_t)i;
		struct ddf_vd *vd;

		if (all_ff(e, DDF_GUID_LEN))
			continue;
		if (o->n_vds >= DDF_MAX_VDS) {
			seterr(c, "virtual disk records: more than %d virtual disks", DDF_MAX_VDS);
			return -E2BIG;
		}
		vd = &o->vds[o->n_vds++];
		memset(vd, 0, sizeof(*vd));
		memcpy(vd->guid, e, DDF_GUID_LEN);
		vd->index = (int)i;
		vd->vd_number = g16(c, e + 24);
		vd->state = e[32];
		vd->init_state = e[33];
		vd->consistent = !(vd->state & DDF_VDS_INCONSISTENT) &&
				 (vd->init_state & DDF_INIT_MASK) == DDF_INIT_FULL;
		trim_name(e + 48, vd->name);
		if (lsi_uuid) {
			/* LSI BIOSes change the VD GUID at boot: mdadm hashes the
			 * header GUID, the raw name and the table index instead */
			uint8_t buf[DDF_GUID_LEN + 18];

			memset(buf, 0, sizeof(buf));
			memcpy(buf, anchor_guid, DDF_GUID_LEN);
			memcpy(buf + DDF_GUID_LEN, e + 48, 16);
			buf[DDF_GUID_LEN + 16] = (uint8_t)(i & 0xff);
			buf[DDF_GUID_LEN + 17] = (uint8_t)(i >> 8);
			uuid_of(buf, sizeof(buf), vd->uuid);
		} else {
			uuid_of(e, DDF_GUID_LEN, vd->uuid);
		}
		vd->md_level = -2;
		vd->md_layout = -1;
		vd->this_role = -1;
	}
	return 0;
}

static struct ddf_vd *find_vd(struct ddf_info *o, const uint8_t *guid)
{
	int i;

	for (i = 0; i < o->n_vds; i++)
		if (!memcmp(o->vds[i].guid, guid, DDF_GUID_LEN))
			return &o->vds[i];
	return NULL;
}

/* Fill vd from configuration record rec (crl sectors, CRC already checked). */
static int decode_vdconf(struct ctx *c, struct ddf_vd *vd, const uint8_t *rec, unsigned mppe,
			 unsigned recno)
{
	struct ddf_info *o = c->out;
	unsigned pec = g16(c, rec + 64), i, j = 0;
	const uint8_t *refs = rec + 512, *offs = rec + 512 + 4 * (size_t)mppe;
	const char *why = NULL;
	int holes = 0, k;

	if (pec == 0 || pec > mppe) {
		seterr(c, "configuration record %u (VD %s): prim_elmnt_count %u outside 1..%u",
		       recno, vd->name, pec, mppe);
		return -EINVAL;
	}
	if (pec > DDF_MAX_ROLES) {
		seterr(c, "configuration record %u (VD %s): %u members, more than %d supported",
		       recno, vd->name, pec, DDF_MAX_ROLES);
		return -E2BIG;
	}
	vd->has_config = 1;
	vd->conf_timestamp = g32(c, rec + 32);
	vd->conf_seqnum = g32(c, rec + 36);
	vd->chunk_shift = rec[66];
	vd->prl = rec[67];
	vd->rlq = rec[68];
	vd->sec_count = rec[69];
	vd->sec_seq = rec[70];
	vd->srl = rec[71];
	vd->blocks = g64(c, rec + 72);
	vd->array_blocks = g64(c, rec + 80);
	vd->chunk_bytes = vd->chunk_shift <= 22 ? (uint64_t)SECT << vd->chunk_shift : 0;
	vd->raid_disks = (int)pec;
	if (vd->sec_count == 0)
		vd->sec_count = 1;     /* some writers leave it 0 for a single level */

	for (k = 0; k < DDF_MAX_ROLES; k++) {
		vd->member[k].refnum = NONE32;
		vd->member[k].pd = -1;
		vd->member[k].status = DDF_MEMBER_MISSING;
	}
	/* md role = position among the used (not 0xffffffff) phys_refnum
	 * entries, as mdadm's get_pd_index_from_refnum() counts */
	for (i = 0; i < mppe; i++) {
		uint32_t ref = g32(c, refs + 4 * (size_t)i);

		if (ref == NONE32) {
			if (i < pec)
				holes = 1;
			continue;
		}
		if (j >= pec) {
			seterr(c, "configuration record %u (VD %s): phys_refnum lists more than prim_elmnt_count (%u) disks",
			       recno, vd->name, pec);
			return -EINVAL;
		}
		vd->member[j].refnum = ref;
		vd->member[j].data_offset = g64(c, offs + 8 * (size_t)i);
		vd->member[j].size = vd->blocks;
		j++;
	}
	if (holes)
		warn(c, "VD %s: unused phys_refnum entries among the first %u; roles counted past them as mdadm does",
		     vd->name, pec);
	for (k = 0; k < (int)pec; k++) {
		struct ddf_member *m = &vd->member[k];
		int pd = m->refnum == NONE32 ? -1 : find_pd(o, m->refnum);
		uint16_t st;

		m->pd = pd;
		if (pd < 0) {
			m->status = DDF_MEMBER_MISSING;
			vd->n_missing++;
			continue;
		}
		st = o->pds[pd].state;
		if (st & (DDF_PDS_FAILED | DDF_PDS_MISSING)) {
			m->status = DDF_MEMBER_FAILED;
			vd->n_failed++;
		} else if ((st & (DDF_PDS_ONLINE | DDF_PDS_REBUILDING)) != DDF_PDS_ONLINE) {
			m->status = DDF_MEMBER_REBUILDING;
			vd->n_failed++;
		} else {
			m->status = DDF_MEMBER_ONLINE;
			vd->n_online++;
		}
		if (m->refnum == o->this_refnum) {
			vd->this_role = k;
			if (m->data_offset > c->nsect || vd->blocks > c->nsect - m->data_offset) {
				seterr(c, "VD %s role %d (this disk): data at sector %llu + %llu runs past the end of the device (%llu sectors)",
				       vd->name, k, (unsigned long long)m->data_offset,
				       (unsigned long long)vd->blocks, (unsigned long long)c->nsect);
				return -EINVAL;
			}
		}
		if (o->pds[pd].config_size && (m->data_offset > o->pds[pd].config_size ||
		    vd->blocks > o->pds[pd].config_size - m->data_offset))
			warn(c, "VD %s role %d: data at sector %llu + %llu beyond the disk's config_size %llu",
			     vd->name, k, (unsigned long long)m->data_offset,
			     (unsigned long long)vd->blocks,
			     (unsigned long long)o->pds[pd].config_size);
	}
	if (ddf_md_geometry(vd->prl, vd->rlq, pec, vd->sec_count, vd->srl, &vd->md_level,
			    &vd->md_layout, &why) == 0 && vd->md_level == 10 && vd->sec_count > 1)
		vd->raid_disks = (int)(pec * vd->sec_count);
	return 0;
}

static int parse_conf(struct ctx *c, const struct hdr *h, const struct sections *s)
{
	struct ddf_info *o = c->out;
	size_t recbytes = (size_t)h->crl * SECT;
	unsigned mppe = eff_mppe(h), nrec, r;
	const uint8_t *best[DDF_MAX_VDS];
	unsigned bestno[DDF_MAX_VDS];
	int i, rc;

	if (mppe == 0 || (size_t)SECT + 12 * (size_t)mppe > recbytes) {
		seterr(c, "config_record_len %u sectors cannot hold max_primary_element_entries %u",
		       h->crl, mppe);
		return -EINVAL;
	}
	if (h->len[S_CONF] < h->crl) {
		seterr(c, "configuration records section (%u sectors) is shorter than one record (%u)",
		       h->len[S_CONF], h->crl);
		return -EINVAL;
	}
	nrec = h->len[S_CONF] / h->crl;
	if (h->len[S_CONF] % h->crl)
		warn(c, "configuration records section of %u sectors is not a multiple of %u",
		     h->len[S_CONF], h->crl);
	for (i = 0; i < DDF_MAX_VDS; i++)
		best[i] = NULL;

	for (r = 0; r < nrec; r++) {
		const uint8_t *rec = s->s[S_CONF] + (size_t)r * recbytes;
		uint32_t sig = g32(c, rec);
		struct ddf_vd *vd;
		char what[64];
		int v;

		if (sig == NONE32 || sig == 0 || sig == MAGIC_SPARE || sig == MAGIC_VENDOR)
			continue;
		if (sig != MAGIC_VDCONF) {
			warn(c, "configuration record %u: unknown signature 0x%08x", r, sig);
			continue;
		}
		snprintf(what, sizeof(what), "configuration record %u", r);
		rc = crc_check(c, rec, recbytes, what, NULL);
		if (rc)
			return rc;
		vd = find_vd(o, rec + 8);
		if (!vd) {
			char gh[DDF_GUID_LEN * 2 + 1];

			guid_hex(rec + 8, gh);
			warn(c, "configuration record %u is for VD guid %s, not in the virtual disk records", r, gh);
			continue;
		}
		v = (int)(vd - o->vds);
		if (best[v]) {
			const uint8_t *b = best[v];

			if (b[70] != rec[70]) {
				/* another basic VD of a two-level VD: keep the one
				 * holding this disk */
				unsigned k;

				for (k = 0; k < mppe; k++)
					if (g32(c, rec + 512 + 4 * (size_t)k) == o->this_refnum)
						break;
				if (k == mppe)
					continue;
			} else if (g32(c, rec + 36) <= g32(c, b + 36)) {
				continue;   /* older sequence number */
			}
		}
		best[v] = rec;
		bestno[v] = r;
	}
	for (i = 0; i < o->n_vds; i++) {
		if (!best[i])
			continue;
		rc = decode_vdconf(c, &o->vds[i], best[i], mppe, bestno[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/* Everything after the header choice, from header h at base lba. */
static int parse_from(struct ctx *c, const struct hdr *h, uint64_t base, const char *hname,
		      const uint8_t *anchor_guid)
{
	struct ddf_info *o = c->out;
	struct sections s;
	const uint8_t *p;
	int rc, i;

	rc = load_sections(c, h, base, hname, &s);
	if (rc)
		return rc;
	o->n_pds = 0;
	o->n_vds = 0;

	p = s.s[S_CTRL];
	memcpy(o->controller_guid, p + 8, DDF_GUID_LEN);
	o->ctrl_vendor = g16(c, p + 32);
	o->ctrl_device = g16(c, p + 34);
	o->ctrl_subvendor = g16(c, p + 36);
	o->ctrl_subdevice = g16(c, p + 38);
	trim_name(p + 40, o->product_id);

	p = s.s[S_PDD];
	memcpy(o->this_guid, p + 8, DDF_GUID_LEN);
	o->this_refnum = g32(c, p + 32);

	rc = parse_phys(c, &s);
	if (rc)
		goto out;
	o->this_pd = find_pd(o, o->this_refnum);
	if (o->this_pd < 0)
		warn(c, "this disk (refnum %08x) is not in the physical disk records", o->this_refnum);
	else if (memcmp(o->pds[o->this_pd].guid, o->this_guid, DDF_GUID_LEN))
		warn(c, "this disk's GUID differs from its physical disk record");
	rc = parse_virt(c, &s, anchor_guid);
	if (rc)
		goto out;
	rc = parse_conf(c, h, &s);
	if (rc)
		goto out;
	for (i = 0; i < o->n_vds; i++)
		if (o->vds[i].has_config && o->vds[i].this_role < 0)
			warn(c, "VD %s: configuration record does not list this disk", o->vds[i].name);
out:
	sections_free(&s);
	return rc;
}

/* ------------------------------------------------------------------ main */

int ddf_parse_ex(const struct dev_reader *dev, unsigned flags, struct ddf_info *out,
		 char *err, size_t errlen)
{
	struct ctx *c;
	struct hdr a, ph, sh, *use, *other = NULL;
	char pwhy[200], swhy[200], first_err[300];
	uint64_t where = 0;
	int rc, prc, src, crc_kind_a;

	if (err && errlen)
		err[0] = 0;
	if (!dev || !out || !dev->read) {
		if (err && errlen)
			snprintf(err, errlen, "DDF: no device");
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	out->this_pd = -1;
	c = calloc(1, sizeof(*c));
	if (!c) {
		if (err && errlen)
			snprintf(err, errlen, "DDF: out of memory");
		return -ENOMEM;
	}
	c->dev = dev;
	c->flags = flags;
	c->be = 1;
	c->nsect = dev->size / SECT;
	c->err = err;
	c->errlen = errlen;
	c->out = out;

	rc = find_anchor(c, &a, &where);
	if (rc)
		goto out;
	crc_kind_a = a.crc_kind;

	out->big_endian = c->be;
	out->crc_kind = crc_kind_a;
	memcpy(out->revision, a.rev, 8);
	out->revision[8] = 0;
	for (rc = 0; rc < 8; rc++)
		if ((unsigned char)out->revision[rc] < 0x20 || (unsigned char)out->revision[rc] > 0x7e)
			out->revision[rc] = '?';
	rc = 0;
	memcpy(out->guid, a.guid, DDF_GUID_LEN);
	uuid_of(a.guid, DDF_GUID_LEN, out->container_uuid);
	out->anchor_lba = where;
	out->anchor_at_end = where == c->nsect - 1;
	out->anchor_type = a.type;
	out->primary_lba = a.plba;
	out->secondary_lba = a.slba;
	out->workspace_lba = a.ws_lba;
	out->workspace_len = a.ws_len;
	if (memcmp(a.rev, "01.00.00", 8) && memcmp(a.rev, "01.02.00", 8))
		warn(c, "revision %s (mdadm 4.2 reads 01.00.00 and 01.02.00 only)", out->revision);

	pwhy[0] = swhy[0] = 0;
	prc = load_hdr(c, &a, HDR_PRIMARY, &ph, pwhy, sizeof(pwhy));
	src = load_hdr(c, &a, HDR_SECONDARY, &sh, swhy, sizeof(swhy));
	out->primary_ok = prc == 0;
	out->secondary_ok = src == 0;
	if (prc && src) {
		seterr(c, "no usable header: %s; %s", pwhy, swhy);
		rc = prc == -ENOENT ? src : prc;
		if (rc == -ENOENT)
			rc = -EBADMSG;
		goto out;
	}
	/* mdadm's choice (load_ddf_headers): the primary, unless the secondary
	 * is newer and closed, or as new and closed while the primary is open */
	if (prc) {
		use = &sh;
		snprintf(out->header_why, sizeof(out->header_why), "secondary: primary unusable (%.120s)", pwhy);
		warn(c, "%s", pwhy);
	} else if (src) {
		use = &ph;
		snprintf(out->header_why, sizeof(out->header_why), "primary%s%.120s%s",
			 src == -ENOENT ? " (no secondary)" : " (secondary unusable: ",
			 src == -ENOENT ? "" : swhy, src == -ENOENT ? "" : ")");
		if (src != -ENOENT)
			warn(c, "%s", swhy);
	} else if ((ph.seq < sh.seq && !sh.open_flag) ||
		   (ph.seq == sh.seq && ph.open_flag && !sh.open_flag)) {
		use = &sh;
		other = &ph;
		snprintf(out->header_why, sizeof(out->header_why),
			 "secondary: seq %u%s vs primary seq %u%s", sh.seq, sh.open_flag ? " open" : "",
			 ph.seq, ph.open_flag ? " open" : "");
	} else {
		use = &ph;
		other = &sh;
		snprintf(out->header_why, sizeof(out->header_why),
			 "primary: seq %u%s, secondary seq %u%s", ph.seq, ph.open_flag ? " open" : "",
			 sh.seq, sh.open_flag ? " open" : "");
	}

	rc = parse_from(c, use, use == &ph ? a.plba : a.slba,
			use == &ph ? "primary" : "secondary", a.guid);
	if (rc && other && rc != -E2BIG && rc != -ENOMEM) {
		/* the chosen copy's tables are damaged: try the other copy */
		snprintf(first_err, sizeof(first_err), "%s", err && errlen ? err : "");
		memset(out->pds, 0, sizeof(out->pds));
		memset(out->vds, 0, sizeof(out->vds));
		rc = parse_from(c, other, other == &ph ? a.plba : a.slba,
				other == &ph ? "primary" : "secondary", a.guid);
		if (rc == 0) {
			use = other;
			snprintf(out->header_why, sizeof(out->header_why), "%s: the %s copy's tables are damaged",
				 use == &ph ? "primary" : "secondary", use == &ph ? "secondary" : "primary");
			warn(c, "%s", first_err + (strncmp(first_err, "DDF: ", 5) ? 0 : 5));
			if (err && errlen)
				err[0] = 0;
		} else if (err && errlen) {
			snprintf(err, errlen, "%s", first_err);
		}
	}
	if (rc)
		goto out;
	out->header_used = use == &ph ? 1 : 2;
	out->seq = use->seq;
	out->timestamp = use->timestamp;
	out->open_flag = use->open_flag;
	out->foreign_flag = use->foreign_flag;
	out->max_pd_entries = use->max_pd;
	out->max_vd_entries = use->max_vd;
	out->max_partitions = use->max_part;
	out->config_record_len = use->crl;
	out->max_primary_elements = (uint16_t)eff_mppe(use);
out:
	free(c);
	return rc;
}

int ddf_parse(const struct dev_reader *dev, struct ddf_info *out, char *err, size_t errlen)
{
	return ddf_parse_ex(dev, 0, out, err, errlen);
}

/* ------------------------------------------------------------------ the format behind format.h */

static void put32(const struct ctx *c, uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[c->be ? i : 3 - i] = (uint8_t)(v >> (24 - 8 * i));
}

static void put16(const struct ctx *c, uint8_t *p, uint16_t v)
{
	p[c->be ? 0 : 1] = (uint8_t)(v >> 8);
	p[c->be ? 1 : 0] = (uint8_t)v;
}

/* Store the CRC of a structure (bytes 4..7) the way the template's anchor
 * had it (kind: DDF_CRC_MDADM or DDF_CRC_STANDARD). */
static void crc_store(const struct ctx *c, int kind, uint8_t *buf, size_t len)
{
	uint32_t v = kind == DDF_CRC_STANDARD ? ~crc_section(0xffffffffu, buf, len) : crc_section(0, buf, len);

	put32(c, buf + 4, v);
}

static int uuid_from_text(const char *s, uint8_t out[16])
{
	return meta_uuid_parse(s, out);
}

/* Why raidimg cannot read vd ("" if it can); the level is the assembly's. */
static void vd_unsupported(const struct ddf_vd *vd, char *buf, size_t len)
{
	int level, layout;
	const char *why = NULL;

	buf[0] = '\0';
	if (ddf_md_geometry(vd->prl, vd->rlq, (unsigned)vd->raid_disks, vd->sec_count, vd->srl, &level, &layout,
			    &why))
		snprintf(buf, len, "%s %s, RAID level qualifier %u: %s", ddf_prl_name(vd->prl),
			 vd->sec_count > 1 ? "(two-level)" : "", vd->rlq, why);
	else if (vd->state & DDF_VDS_MORPHING)
		snprintf(buf, len, "the virtual disk is being migrated (VD state 'morphing'): raidimg does not "
			 "read a migration in progress");
	else if (vd->chunk_bytes < 4096 || vd->chunk_bytes > (1u << 30))
		snprintf(buf, len, "chunk of %" PRIu64 " bytes (chunk_shift %u) is outside 4 KiB..1 GiB",
			 vd->chunk_bytes, vd->chunk_shift);
}

static void fill_vd(const struct ddf_info *in, const struct ddf_vd *vd, int nvds, struct member_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->fmt = &format_ddf;
	snprintf(m->format, sizeof(m->format), "ddf");
	uuid_from_text(vd->uuid, m->set_uuid);
	snprintf(m->set_name, sizeof(m->set_name), "%s", vd->name);
	m->level = m->new_level = vd->md_level;
	m->layout = m->new_layout = vd->md_layout;
	m->chunk_bytes = m->new_chunk_bytes = (uint32_t)(vd->chunk_bytes <= UINT32_MAX ? vd->chunk_bytes : 0);
	m->raid_disks = vd->raid_disks;
	m->component_sectors = vd->blocks;
	m->data_offset = vd->member[vd->this_role].data_offset;
	m->data_size = vd->blocks;
	m->super_offset = in->anchor_lba;
	m->role = vd->this_role;
	m->dev_number = in->this_pd;
	m->events = in->seq;
	m->volume_seq = vd->conf_seqnum;
	m->ctime = (uint64_t)ddf_time_to_unix(in->timestamp);
	/* md resyncs a virtual disk that is not consistent or not fully
	 * initialised (mdadm's resync_start 0) */
	m->resync_offset = vd->consistent ? UINT64_MAX : 0;
	m->recovery_offset = UINT64_MAX;
	m->max_dev = in->n_pds;
	for (int i = 0; i < in->n_pds; i++)
		m->dev_roles[i] = META_ROLE_SPARE;
	for (int k = 0; k < vd->raid_disks && k < DDF_MAX_ROLES; k++)
		if (vd->member[k].pd >= 0)
			m->dev_roles[vd->member[k].pd] =
				vd->member[k].status == DDF_MEMBER_ONLINE ? (int16_t)k : META_ROLE_FAULTY;
	m->in_container = true;
	uuid_from_text(in->container_uuid, m->container_uuid);
	m->volume_index = vd->index;
	m->container_volumes = nvds;
	snprintf(m->dev_id, sizeof(m->dev_id), "%08x", in->this_refnum);
	m->nids = in->n_pds;
	for (int i = 0; i < in->n_pds; i++)
		snprintf((char *)m->dev_ids[i], META_ID_LEN, "%08x", in->pds[i].refnum);
	vd_unsupported(vd, m->unsupported, sizeof(m->unsupported));
}

static int probe_ddf(const struct dev_reader *dev, struct format_found *out, char *err, size_t errlen)
{
	struct ddf_info *in = malloc(sizeof(*in));
	int rc, n = 0;

	memset(out, 0, sizeof(*out));
	if (!in) {
		if (err && errlen)
			snprintf(err, errlen, "DDF: out of memory");
		return -ENOMEM;
	}
	rc = ddf_parse_ex(dev, dev->hints & DEV_HINT_WHOLE ? 0 : DDF_PARSE_NO_SEARCH, in, err, errlen);
	if (rc)
		goto out;
	if (in->this_pd < 0) {
		snprintf(err, errlen, "DDF: this disk (reference number %08x) is not in the container's physical "
			 "disk records", in->this_refnum);
		rc = -EINVAL;
		goto out;
	}
	for (int i = 0; i < in->n_vds; i++) {
		const struct ddf_vd *vd = &in->vds[i];

		if (!vd->has_config || vd->this_role < 0)
			continue;
		if (n >= FORMAT_MAX_VOLUMES) {
			snprintf(err, errlen, "DDF: this disk is in more than the %d virtual disks raidimg reads",
				 FORMAT_MAX_VOLUMES);
			rc = -E2BIG;
			goto out;
		}
		fill_vd(in, vd, in->n_vds, &out->vol[n++]);
	}
	out->nvol = n;
	if (!n) {
		snprintf(err, errlen, "DDF container %s: this disk (%08x) is in no virtual disk (a spare)",
			 in->container_uuid, in->this_refnum);
		rc = -ENOENT;
	}
out:
	free(in);
	return rc;
}

static int place_ddf(const struct member_meta *m, const char *id, int *dev_number, int *role)
{
	for (int i = 0; i < m->nids && i < META_MAX_DEVS; i++) {
		if (!strncmp((const char *)m->dev_ids[i], id, META_ID_LEN)) {
			*dev_number = i;
			*role = m->dev_roles[i];
			return 0;
		}
	}
	return -ENOENT;
}

/* The copy of the metadata at header h (lba hlba) of the template, patched
 * for the replacement (see replace_ddf) and written through put. */
struct ddf_new {
	const struct ddf_info *in;
	const struct ddf_vd *vd;
	int role, kind;
	uint32_t refnum;
	uint8_t guid[DDF_GUID_LEN];
	int (*put)(void *ctx, const void *buf, size_t len, uint64_t off);
	void *ctx;
};

/* Is refnum in any configuration record of the container (as a member)? */
static int refnum_in_vds(const struct ddf_new *r, uint32_t refnum)
{
	for (int v = 0; v < r->in->n_vds; v++)
		for (int k = 0; k < r->in->vds[v].raid_disks && k < DDF_MAX_ROLES; k++)
			if (r->in->vds[v].member[k].refnum == refnum)
				return 1;
	return 0;
}

/* The physical disk records with the new disk, online, in the place of a
 * failed disk no virtual disk names any more, or in a free entry.  The
 * other entries keep their places: mdadm's assembly pairs each member with
 * its own entry's index (two members at one index: the older one is
 * dropped). */
static int patch_phys(struct ctx *c, const struct ddf_new *r, uint8_t *p, size_t bytes)
{
	unsigned max = g16(c, p + 10), used = 0, spot = max, unused = max;
	const uint8_t *self = NULL;

	for (unsigned i = 0; i < max && 64 + 64 * (size_t)(i + 1) <= bytes; i++) {
		const uint8_t *e = p + 64 + 64 * (size_t)i;
		uint32_t ref = g32(c, e + 24);
		uint16_t st = g16(c, e + 30);

		if (ref == NONE32 || all_ff(e, DDF_GUID_LEN)) {
			if (unused == max)
				unused = i;
			continue;
		}
		used++;
		if (ref == r->in->this_refnum)
			self = e;
		else if (spot == max && (st & (DDF_PDS_FAILED | DDF_PDS_MISSING)) && !refnum_in_vds(r, ref))
			spot = i;
	}
	if (spot == max) {
		spot = unused;
		used++;
	}
	if (!self || spot == max) {
		seterr(c, "physical disk records: %s", !self ? "the template disk is not listed" :
		       "no room for the new disk");
		return -ENOSPC;
	}
	/* the template disk's entry (type, size, path), the new identity, online */
	memcpy(p + 64 + 64 * (size_t)spot, self, 64);
	memcpy(p + 64 + 64 * (size_t)spot, r->guid, DDF_GUID_LEN);
	put32(c, p + 64 + 64 * (size_t)spot + 24, r->refnum);
	put16(c, p + 64 + 64 * (size_t)spot + 30, DDF_PDS_ONLINE);
	put16(c, p + 8, (uint16_t)used);
	crc_store(c, r->kind, p, bytes);
	return 0;
}

/* The VD's state once the new disk is in it: optimal, or still degraded. */
static void patch_virt(struct ctx *c, const struct ddf_new *r, uint8_t *p, size_t bytes)
{
	int left = 0;
	uint8_t *e;

	for (int k = 0; k < r->vd->raid_disks; k++)
		if (k != r->role && r->vd->member[k].status != DDF_MEMBER_ONLINE)
			left++;
	if (64 + 64 * (size_t)(r->vd->index + 1) <= bytes) {
		e = p + 64 + 64 * (size_t)r->vd->index;
		e[32] = (uint8_t)((e[32] & ~DDF_VDS_MASK) | (left ? DDF_VDS_DEGRADED : DDF_VDS_OPTIMAL));
	}
	crc_store(c, r->kind, p, bytes);
}

/* The configuration records the new disk keeps: this VD's, with the new
 * disk in its role and a newer sequence number; the other VDs' records are
 * dropped (its data there is not written: it is in none of them). */
static int patch_conf(struct ctx *c, const struct hdr *h, const struct ddf_new *r, uint8_t *conf, size_t bytes)
{
	size_t recbytes = (size_t)h->crl * SECT;
	unsigned mppe = eff_mppe(h), nrec = (unsigned)(bytes / recbytes);
	int found = 0;

	for (unsigned k = 0; k < nrec; k++) {
		uint8_t *rec = conf + (size_t)k * recbytes;
		unsigned n = 0, slot = mppe;

		if (g32(c, rec) != MAGIC_VDCONF)
			continue;
		if (memcmp(rec + 8, r->vd->guid, DDF_GUID_LEN)) {
			memset(rec, 0xff, recbytes);
			continue;
		}
		for (unsigned i = 0; i < mppe && slot == mppe; i++) {
			if (g32(c, rec + 512 + 4 * (size_t)i) == NONE32)
				continue;
			if (n++ == (unsigned)r->role)
				slot = i;
		}
		if (slot == mppe) {
			seterr(c, "configuration record %u: no entry for role %d", k, r->role);
			return -EINVAL;
		}
		put32(c, rec + 512 + 4 * (size_t)slot, r->refnum);
		put32(c, rec + 36, g32(c, rec + 36) + 1);
		crc_store(c, r->kind, rec, recbytes);
		found = 1;
	}
	if (!found) {
		seterr(c, "no configuration record for virtual disk %s", r->vd->name);
		return -EINVAL;
	}
	return 0;
}

static int write_copy(struct ctx *c, const struct hdr *anchor, int type, const struct ddf_new *r)
{
	uint64_t lba = type == HDR_PRIMARY ? anchor->plba : anchor->slba;
	const char *name = type == HDR_PRIMARY ? "primary" : "secondary";
	struct sections s;
	struct hdr h;
	uint8_t hb[SECT];
	char why[200];
	int rc;

	rc = load_hdr(c, anchor, type, &h, why, sizeof(why));
	if (rc == -ENOENT)
		return 0;      /* no secondary copy */
	if (rc) {
		seterr(c, "%s: the template's copy is damaged: a replacement cannot be made from it", why);
		return rc;
	}
	rc = dread(c, hb, SECT, lba * SECT, name);
	if (rc)
		return rc;
	rc = load_sections(c, &h, lba, name, &s);
	if (rc)
		return rc;
	rc = patch_phys(c, r, s.s[S_PHYS], s.bytes[S_PHYS]);
	if (!rc)
		rc = patch_conf(c, &h, r, s.s[S_CONF], s.bytes[S_CONF]);
	if (rc)
		goto out;
	patch_virt(c, r, s.s[S_VIRT], s.bytes[S_VIRT]);
	memcpy(s.s[S_PDD] + 8, r->guid, DDF_GUID_LEN);
	put32(c, s.s[S_PDD] + 32, r->refnum);
	crc_store(c, r->kind, s.s[S_PDD], s.bytes[S_PDD]);
	crc_store(c, r->kind, hb, SECT);
	rc = r->put(r->ctx, hb, SECT, lba * SECT);
	for (int i = 0; !rc && i <= S_PDD; i++)
		rc = r->put(r->ctx, s.s[i], s.bytes[i], (lba + h.off[i]) * SECT);
	if (rc)
		seterr(c, "writing the %s copy: %s", name, strerror(-rc));
out:
	sections_free(&s);
	return rc;
}

static int replace_ddf(const struct dev_reader *tmpl, const struct member_meta *m, const char *id,
		       uint64_t dev_sectors, int (*put)(void *ctx, const void *buf, size_t len, uint64_t off),
		       void *put_ctx, char *err, size_t errlen)
{
	struct ddf_info *in = malloc(sizeof(*in));
	struct ctx *c = calloc(1, sizeof(*c));
	struct ddf_new r = { .role = m->role, .put = put, .ctx = put_ctx };
	uint8_t last[SECT];
	struct hdr a;
	uint64_t where;
	int rc = -ENOMEM;

	if (!in || !c) {
		if (err && errlen)
			snprintf(err, errlen, "DDF: out of memory");
		goto out;
	}
	rc = ddf_parse_ex(tmpl, DDF_PARSE_NO_SEARCH, in, err, errlen);
	if (rc)
		goto out;
	c->dev = tmpl;
	c->flags = DDF_PARSE_NO_SEARCH;
	c->be = 1;
	c->nsect = tmpl->size / SECT;
	c->err = err;
	c->errlen = errlen;
	c->out = in;
	rc = -EINVAL;
	if (dev_sectors != c->nsect) {
		seterr(c, "the new member (%" PRIu64 " sectors) must have the template's size (%" PRIu64 ")",
		       dev_sectors, c->nsect);
		goto out;
	}
	for (int i = 0; i < in->n_vds && !r.vd; i++)
		if (in->vds[i].index == m->volume_index && in->vds[i].has_config)
			r.vd = &in->vds[i];
	if (!r.vd || m->role < 0 || m->role >= r.vd->raid_disks) {
		seterr(c, "no role %d in virtual disk %d", m->role, m->volume_index);
		goto out;
	}
	if (r.vd->member[m->role].data_offset != m->data_offset) {
		seterr(c, "role %d's data starts at sector %" PRIu64 ", not at %" PRIu64 " as the template's: "
		       "not supported", m->role, r.vd->member[m->role].data_offset, m->data_offset);
		goto out;
	}
	/* a new disk: GUID "raidimg " and the random device_uuid, a reference
	 * number from it that no disk has */
	memcpy(r.guid, "raidimg ", 8);
	memcpy(r.guid + 8, m->device_uuid, 16);
	r.refnum = (uint32_t)m->device_uuid[0] << 24 | (uint32_t)m->device_uuid[1] << 16 |
		   (uint32_t)m->device_uuid[2] << 8 | m->device_uuid[3];
	while (r.refnum == 0 || r.refnum == NONE32 || find_pd(in, r.refnum) >= 0)
		r.refnum++;
	r.in = in;
	rc = find_anchor(c, &a, &where);
	if (rc)
		goto out;
	r.kind = a.crc_kind == DDF_CRC_STANDARD ? DDF_CRC_STANDARD : DDF_CRC_MDADM;
	rc = write_copy(c, &a, HDR_PRIMARY, &r);
	if (!rc)
		rc = write_copy(c, &a, HDR_SECONDARY, &r);
	if (!rc)
		rc = dread(c, last, SECT, where * SECT, "anchor");
	if (!rc) {
		rc = put(put_ctx, last, SECT, where * SECT);
		if (rc)
			seterr(c, "writing the anchor: %s", strerror(-rc));
	}
out:
	free(c);
	free(in);
	return rc;
}

const struct format_ops format_ddf = {
	.name = "ddf",
	.family = "ddf",
	.flags = FORMAT_CONTAINER,
	.max_members = DDF_MAX_ROLES,
	.probe = probe_ddf,
	.place = place_ddf,
	.replace = replace_ddf,
};
