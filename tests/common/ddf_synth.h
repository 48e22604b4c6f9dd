/* ddf_synth.h - build small DDF metadata images in memory (test helper).
 *
 * Lays out an anchor, a primary and an optional secondary copy the way mdadm
 * does (header, controller, phys records, virt records, config records, phys
 * disk data), with smaller tables: max_pd_entries 15, max_vd_entries
 * s->max_vd, max_partitions 2, max_primary_element_entries 16.
 * The caller owns the image buffer.  Used by tests/unit/test_ddf.c and
 * tests/fuzz/fuzz_ddf.c.  An independent CRC of its own.
 */
#ifndef RAIDIMG_DDF_SYNTH_H
#define RAIDIMG_DDF_SYNTH_H

#include <stdint.h>
#include <string.h>

#include "dev_reader.h"

#define SY_MAXM 16
#define SY_MPPE 16
#define SY_CRL  2       /* 1 + ceil(16 * 12 / 512) */
#define SY_PART 2
#define SY_MAXPD 15

/* section offsets / lengths (sectors from the header) */
#define SY_CTRL_OFF 1
#define SY_PHYS_OFF 2
#define SY_PHYS_LEN 2   /* 64 + 15 * 64 = 1024 bytes */
#define SY_VIRT_OFF 4

struct synth {
	uint64_t size;            /* device bytes */
	int be;                   /* 1 big-endian (standard), 0 little-endian (Adaptec) */
	int crc_std;              /* 0 mdadm's CRC, 1 zlib CRC */
	uint64_t anchor_lba, plba, slba;   /* slba UINT64_MAX: no secondary */
	int n;                    /* members */
	int me;                   /* which member this image belongs to */
	uint8_t prl, rlq, chunk_shift, sec_count, sec_seq;
	uint64_t blocks;
	uint64_t offs[SY_MAXM];
	uint16_t pd_state[SY_MAXM];
	int unlisted[SY_MAXM];    /* member not in the phys table */
	uint32_t seq_p, seq_s;
	uint8_t open_p, open_s;
	uint16_t mppe_field;      /* value written as max_primary_element_entries */
	int max_vd;               /* 15 or 63 */
	int n_vds;                /* VD entries (only the first has a config record) */
	char ctrl8[9];            /* first 8 bytes of the controller GUID */
	char name[17];
};

static inline uint32_t sy_crc(const uint8_t *b, size_t n, int std)
{
	uint32_t r = std ? 0xFFFFFFFFu : 0, v;
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		uint8_t x = (i >= 4 && i < 8) ? 0xff : b[i];

		v = (r ^ x) & 0xff;
		for (k = 0; k < 8; k++)
			v = (v & 1) ? (v >> 1) ^ 0xEDB88320u : v >> 1;
		r = v ^ (r >> 8);
	}
	return std ? ~r : r;
}

static inline void sy_p16(const struct synth *s, uint8_t *p, uint16_t v)
{
	if (s->be) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
	else { p[1] = (uint8_t)(v >> 8); p[0] = (uint8_t)v; }
}

static inline void sy_p32(const struct synth *s, uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[s->be ? i : 3 - i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline void sy_p64(const struct synth *s, uint8_t *p, uint64_t v)
{
	sy_p32(s, s->be ? p : p + 4, (uint32_t)(v >> 32));
	sy_p32(s, s->be ? p + 4 : p, (uint32_t)v);
}

/* recompute the crc of the structure at p (len bytes) */
static inline void sy_fix(const struct synth *s, uint8_t *p, size_t len)
{
	sy_p32(s, p + 4, sy_crc(p, len, s->crc_std));
}

static inline uint32_t sy_refnum(int i)
{
	return 0x5e000000u + (uint32_t)i * 0x01010101u;
}

static inline int sy_virt_len(const struct synth *s)
{
	return (64 + s->max_vd * 64 + 511) / 512;
}

static inline int sy_conf_off(const struct synth *s) { return SY_VIRT_OFF + sy_virt_len(s); }
static inline int sy_conf_len(void) { return SY_CRL * (SY_PART + 1); }
static inline int sy_pdd_off(const struct synth *s) { return sy_conf_off(s) + sy_conf_len(); }
/* sectors of one metadata copy */
static inline int sy_copy_len(const struct synth *s) { return sy_pdd_off(s) + 1; }

static inline void synth_defaults(struct synth *s, uint64_t size, int n, int me)
{
	int i;
	uint64_t ns = size / 512;

	memset(s, 0, sizeof(*s));
	s->size = size;
	s->be = 1;
	s->anchor_lba = ns - 1;
	s->plba = ns - 64;
	s->slba = ns - 128;
	s->n = n;
	s->me = me;
	s->prl = 0x05;
	s->rlq = 3;
	s->chunk_shift = 7;
	s->sec_count = 1;
	s->blocks = 2048;
	for (i = 0; i < SY_MAXM; i++)
		s->pd_state[i] = 1;
	s->seq_p = s->seq_s = 7;
	s->mppe_field = SY_MPPE;
	s->max_vd = 15;
	s->n_vds = 1;
	memcpy(s->ctrl8, "Linux-MD", 9);
	memcpy(s->name, "Volume0", 8);
}

static inline void sy_header(const struct synth *s, uint8_t *h, int type)
{
	int i;
	static const int off[5] = { SY_CTRL_OFF, SY_PHYS_OFF, SY_VIRT_OFF, 0, 0 };

	memset(h, 0xff, 512);
	sy_p32(s, h, 0xDE11DE11u);
	memcpy(h + 8, "Linux-MD\xde\xad\xbe\xef\0\0\0\0\x58\x3f\xd4\x64\x11\x22\x33\x44", 24);
	memcpy(h + 32, "01.02.00", 8);
	sy_p32(s, h + 40, type == 0 ? 0xffffffffu : type == 1 ? s->seq_p : s->seq_s);
	sy_p32(s, h + 44, 0x583fd471u);
	h[48] = type == 0 ? 0xff : type == 1 ? s->open_p : s->open_s;
	h[49] = 0;
	h[50] = 0;
	sy_p64(s, h + 96, s->plba);
	sy_p64(s, h + 104, s->slba);
	h[112] = (uint8_t)type;
	sy_p32(s, h + 116, 32768);
	sy_p64(s, h + 120, s->slba != UINT64_MAX ? s->slba : s->plba);
	sy_p16(s, h + 128, SY_MAXPD);
	sy_p16(s, h + 130, (uint16_t)s->max_vd);
	sy_p16(s, h + 132, SY_PART);
	sy_p16(s, h + 134, SY_CRL);
	sy_p16(s, h + 136, s->mppe_field);
	(void)off;
	sy_p32(s, h + 192, SY_CTRL_OFF); sy_p32(s, h + 196, 1);
	sy_p32(s, h + 200, SY_PHYS_OFF); sy_p32(s, h + 204, SY_PHYS_LEN);
	sy_p32(s, h + 208, SY_VIRT_OFF); sy_p32(s, h + 212, (uint32_t)sy_virt_len(s));
	sy_p32(s, h + 216, (uint32_t)sy_conf_off(s)); sy_p32(s, h + 220, (uint32_t)sy_conf_len());
	sy_p32(s, h + 224, (uint32_t)sy_pdd_off(s)); sy_p32(s, h + 228, 1);
	for (i = 5; i < 8; i++) {
		sy_p32(s, h + 192 + 8 * i, 0xffffffffu);
		sy_p32(s, h + 196 + 8 * i, 0);
	}
	sy_fix(s, h, 512);
}

static inline void sy_vd_guid(uint8_t *g, int v)
{
	memcpy(g, "Linux-MD\xde\xad\xbe\xef\0\0\0\0\x58\x3f\xd4\x65\xf3\x4d\x3c\x01", 24);
	g[23] = (uint8_t)(0x01 + v);
}

/* one metadata copy at lba base */
static inline void sy_copy(const struct synth *s, uint8_t *img, uint64_t base, int type)
{
	uint8_t *c = img + base * 512, *p, *e;
	int i, v;

	sy_header(s, c, type);
	/* controller */
	p = c + SY_CTRL_OFF * 512;
	memset(p, 0, 512);
	sy_p32(s, p, 0xAD111111u);
	memcpy(p + 8, s->ctrl8, 8);
	memset(p + 16, ' ', 16);
	sy_p16(s, p + 32, 0xdead);
	sy_p16(s, p + 34, 0xbeef);
	memcpy(p + 40, "What Is My PID??", 16);
	memset(p + 56, 0xff, 8);
	sy_fix(s, p, 512);
	/* physical disk records */
	p = c + SY_PHYS_OFF * 512;
	memset(p, 0xff, SY_PHYS_LEN * 512);
	sy_p32(s, p, 0x22222222u);
	sy_p16(s, p + 8, (uint16_t)s->n);
	sy_p16(s, p + 10, SY_MAXPD);
	for (i = 0, v = 0; i < s->n; i++) {
		if (s->unlisted[i])
			continue;
		e = p + 64 + 64 * v++;
		memcpy(e, "Linux-MD2026120100000000", 24);
		e[22] = (uint8_t)i;
		sy_p32(s, e + 24, sy_refnum(i));
		sy_p16(s, e + 28, 3);
		sy_p16(s, e + 30, s->pd_state[i]);
		sy_p64(s, e + 32, s->blocks + 4096);
	}
	sy_fix(s, p, SY_PHYS_LEN * 512);
	/* virtual disk records */
	p = c + SY_VIRT_OFF * 512;
	memset(p, 0xff, (size_t)sy_virt_len(s) * 512);
	sy_p32(s, p, 0xDDDDDDDDu);
	sy_p16(s, p + 8, (uint16_t)s->n_vds);
	sy_p16(s, p + 10, (uint16_t)s->max_vd);
	for (v = 0; v < s->n_vds; v++) {
		e = p + 64 + 64 * v;
		sy_vd_guid(e, v);
		sy_p16(s, e + 24, (uint16_t)v);
		e[32] = 0;
		e[33] = 2;
		memset(e + 48, 0, 16);
		memcpy(e + 48, s->name, strlen(s->name) < 16 ? strlen(s->name) : 16);
	}
	sy_fix(s, p, (size_t)sy_virt_len(s) * 512);
	/* configuration records: record 0 = VD 0 */
	p = c + (size_t)sy_conf_off(s) * 512;
	memset(p, 0xff, (size_t)sy_conf_len() * 512);
	sy_p32(s, p, 0xEEEEEEEEu);
	sy_vd_guid(p + 8, 0);
	sy_p32(s, p + 32, 0x583fd465u);
	sy_p32(s, p + 36, 5);
	sy_p16(s, p + 64, (uint16_t)s->n);
	p[66] = s->chunk_shift;
	p[67] = s->prl;
	p[68] = s->rlq;
	p[69] = s->sec_count;
	p[70] = s->sec_seq;
	p[71] = 0xff;
	sy_p64(s, p + 72, s->blocks);
	sy_p64(s, p + 80, s->blocks * (uint64_t)(s->n - (s->prl == 6 ? 2 : 1)));
	{
		/* Adaptec's 0xffff: entries = min(max_pd_entries, (record - 512) / 12) */
		int mp = s->mppe_field == 0xffff ? SY_MAXPD : s->mppe_field;

		if (mp > SY_MPPE)
			mp = SY_MPPE;
		for (i = 0; i < mp; i++) {
			sy_p32(s, p + 512 + 4 * i, i < s->n ? sy_refnum(i) : 0xffffffffu);
			sy_p64(s, p + 512 + 4 * mp + 8 * i, i < s->n ? s->offs[i] : 0);
		}
	}
	sy_fix(s, p, SY_CRL * 512);
	/* physical disk data: this disk */
	p = c + (size_t)sy_pdd_off(s) * 512;
	memset(p, 0xff, 512);
	sy_p32(s, p, 0x33333333u);
	memcpy(p + 8, "Linux-MD2026120100000000", 24);
	p[8 + 22] = (uint8_t)s->me;
	sy_p32(s, p + 32, sy_refnum(s->me));
	p[36] = 1;
	p[37] = 1;
	sy_fix(s, p, 512);
}

/* img: s->size bytes, zeroed by the caller */
static inline void synth_write(const struct synth *s, uint8_t *img)
{
	sy_copy(s, img, s->plba, 1);
	if (s->slba != UINT64_MAX)
		sy_copy(s, img, s->slba, 2);
	sy_header(s, img + s->anchor_lba * 512, 0);
}

/* ---- a memory device for the parser ---- */

/* A sparse memory device: size bytes of zeros with one blob at blob_off. */
struct ddf_mem {
	uint64_t size;
	const uint8_t *blob;
	size_t blob_len;
	uint64_t blob_off;
	struct dev_reader dev;
};

static inline int ddf_mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct ddf_mem *m = ctx;
	uint64_t end, a, b;

	if (off > m->size || len > m->size - off)
		return -EIO;
	memset(buf, 0, len);
	end = off + len;
	a = off > m->blob_off ? off : m->blob_off;
	b = end < m->blob_off + m->blob_len ? end : m->blob_off + m->blob_len;
	if (a < b)
		memcpy((char *)buf + (a - off), m->blob + (a - m->blob_off), (size_t)(b - a));
	return 0;
}

static inline void ddf_mem_init(struct ddf_mem *m, uint64_t size, const uint8_t *blob,
				size_t blob_len, uint64_t blob_off)
{
	m->size = size;
	m->blob = blob;
	m->blob_len = blob_len;
	m->blob_off = blob_off;
	m->dev.size = size;
	m->dev.read = ddf_mem_read;
	m->dev.ctx = m;
}

#endif
