/* test_ddf.c - unit tests for src/core/ddf.c: DDF metadata built in memory
 * (tests/common/ddf_synth.h: both byte orders, both CRC variants, Adaptec
 * and LSI quirks, damaged and hostile copies, every header field and table
 * the parser checks), and the format behind format.h (probe, place,
 * replace).  The real fixtures as arrays are tests/integration/
 * containers.sh's.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddf.h"
#include "ddf_synth.h"
#include "format.h"

static int n_pass, n_fail;

/* a failed check is counted and said; each test ends asserting none failed */
static void __attribute__((format(printf, 2, 3))) check(int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		n_pass++;
		return;
	}
	n_fail++;
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ------------------------------------------------------------------ synthetic */

#define SZ (8u * 1024 * 1024)

struct timg {
	struct synth s;
	uint8_t *b;
	struct ddf_mem m;
};

static void timg_make(struct timg *t, const struct synth *s)
{
	t->s = *s;
	t->b = calloc(1, s->size);
	if (!t->b)
		abort();
	synth_write(s, t->b);
	ddf_mem_init(&t->m, s->size, t->b, s->size, 0);
}

static void timg_free(struct timg *t)
{
	free(t->b);
	t->b = NULL;
}

static struct ddf_info *info;
static char err[600];

static int tparse(struct timg *t, unsigned flags)
{
	err[0] = 0;
	return ddf_parse_ex(&t->m.dev, flags, info, err, sizeof(err));
}

/* parse must fail with rc and a message containing every needle */
static void expect_fail(struct timg *t, unsigned flags, int rc_want, const char *what,
			const char *n1, const char *n2)
{
	int rc = tparse(t, flags);

	check(rc == rc_want, "%s: rc %d, expected %d (%s)", what, rc, rc_want, err);
	check(n1 == NULL || strstr(err, n1) != NULL, "%s: message '%s' lacks '%s'", what, err, n1);
	check(n2 == NULL || strstr(err, n2) != NULL, "%s: message '%s' lacks '%s'", what, err, n2);
}

static uint8_t *sect_of(struct timg *t, uint64_t base, int off)
{
	return t->b + (base + (uint64_t)off) * 512;
}

/* apply a change to all three headers (anchor, primary, secondary), fixing CRCs */
typedef void (*hdr_mut)(const struct synth *s, uint8_t *h);

static void mut_headers(struct timg *t, hdr_mut f)
{
	uint64_t l[3] = { t->s.anchor_lba, t->s.plba, t->s.slba };
	int i;

	for (i = 0; i < 3; i++) {
		if (l[i] == UINT64_MAX)
			continue;
		f(&t->s, t->b + l[i] * 512);
		sy_fix(&t->s, t->b + l[i] * 512, 512);
	}
}

static void m_plba_far(const struct synth *s, uint8_t *h) { sy_p64(s, h + 96, 1ull << 40); }
static void m_phys_off_far(const struct synth *s, uint8_t *h) { sy_p32(s, h + 200, 0x7fffffff); }
static void m_phys_len_big(const struct synth *s, uint8_t *h) { sy_p32(s, h + 204, 100000); }
static void m_virt_absent(const struct synth *s, uint8_t *h) { sy_p32(s, h + 208, 0xffffffff); }
static void m_crl_small(const struct synth *s, uint8_t *h) { sy_p16(s, h + 134, 1); }
static void m_mppe_zero(const struct synth *s, uint8_t *h) { sy_p16(s, h + 136, 0); }
static void m_maxpd_zero(const struct synth *s, uint8_t *h) { sy_p16(s, h + 128, 0); }
static void m_conf_len_short(const struct synth *s, uint8_t *h) { sy_p32(s, h + 220, 1); }

/* change a section in both copies, fixing its CRC */
static void mut_section(struct timg *t, int off, int len, void (*f)(const struct synth *, uint8_t *))
{
	uint64_t l[2] = { t->s.plba, t->s.slba };
	int i;

	for (i = 0; i < 2; i++) {
		uint8_t *p;

		if (l[i] == UINT64_MAX)
			continue;
		p = sect_of(t, l[i], off);
		f(&t->s, p);
		sy_fix(&t->s, p, (size_t)len * 512);
	}
}

static void m_maxpdes_huge(const struct synth *s, uint8_t *p) { sy_p16(s, p + 10, 0xffff); }
static void m_maxvdes_huge(const struct synth *s, uint8_t *p) { sy_p16(s, p + 10, 0x7fff); }
static void m_pec_zero(const struct synth *s, uint8_t *p) { sy_p16(s, p + 64, 0); }
static void m_pec_big(const struct synth *s, uint8_t *p) { sy_p16(s, p + 64, 999); }
static void m_extra_ref(const struct synth *s, uint8_t *p)
{
	sy_p32(s, p + 512 + 4 * 10, 0x12345678);   /* an 11th disk with prim_elmnt_count 4 */
}
static void m_my_offset_far(const struct synth *s, uint8_t *p)
{
	sy_p64(s, p + 512 + 4 * SY_MPPE + 8 * s->me, (s->size / 512) - 100);
}
static void m_hole(const struct synth *s, uint8_t *p)
{
	/* member 1's refnum moved from slot 1 to slot 5: mdadm still counts it as role 1 */
	sy_p32(s, p + 512 + 4 * 5, sy_refnum(1));
	sy_p64(s, p + 512 + 4 * SY_MPPE + 8 * 5, s->offs[1]);
	sy_p32(s, p + 512 + 4 * 1, 0xffffffffu);
}
static void m_badsig_ctrl(const struct synth *s, uint8_t *p) { sy_p32(s, p, 0xAD111112u); }
static void m_rec_twolevel(const struct synth *s, uint8_t *p) { (void)s; p[69] = 2; }
static void m_rec_raid0(const struct synth *s, uint8_t *p) { (void)s; p[67] = 0; p[68] = 0; }
static void m_rec_rlq9(const struct synth *s, uint8_t *p) { (void)s; p[68] = 9; }

static void test_synthetic(void)
{
	struct synth s;
	struct timg t;
	int rc, i;

	printf("synthetic metadata\n");

	/* --- a good RAID5 set, every member */
	for (i = 0; i < 4; i++) {
		synth_defaults(&s, SZ, 4, i);
		timg_make(&t, &s);
		rc = tparse(&t, 0);
		check(rc == 0, "good r5 member %d: rc %d %s", i, rc, err);
		if (rc == 0) {
			const struct ddf_vd *v = &info->vds[0];

			check(info->n_pds == 4 && info->n_vds == 1, "good r5: %d pds %d vds", info->n_pds, info->n_vds);
			check(info->this_refnum == sy_refnum(i) && info->this_pd == i, "good r5: this disk");
			check(v->md_level == 5 && v->md_layout == 2 && v->chunk_bytes == 65536,
			      "good r5: level %d layout %d chunk %llu", v->md_level, v->md_layout,
			      (unsigned long long)v->chunk_bytes);
			check(v->this_role == i, "good r5: role %d, expected %d", v->this_role, i);
			check(info->header_used == 1 && info->anchor_at_end && info->crc_kind == DDF_CRC_MDADM,
			      "good r5: header %d at_end %d crc %d", info->header_used,
			      info->anchor_at_end, info->crc_kind);
			check(!strcmp(v->name, "Volume0"), "good r5: name '%s'", v->name);
			check(ddf_vd_check_raid456(v, err, sizeof(err)) == 0, "good r5 readable: %s", err);
			check(info->warnings[0] == 0, "good r5: warnings '%s'", info->warnings);
		}
		timg_free(&t);
	}

	/* --- RAID6 rlq -> md layouts 8/9/10; RAID5 rlq 0/2/3 -> 1/0/2 */
	{
		static const struct { uint8_t prl, rlq; int level, layout; } map[] = {
			{ 5, 0, 5, 1 }, { 5, 2, 5, 0 }, { 5, 3, 5, 2 },
			{ 6, 1, 6, 8 }, { 6, 2, 6, 9 }, { 6, 3, 6, 10 }, { 4, 1, 4, 0 },
		};
		for (i = 0; i < (int)(sizeof(map) / sizeof(map[0])); i++) {
			synth_defaults(&s, SZ, 5, 2);
			s.prl = map[i].prl;
			s.rlq = map[i].rlq;
			timg_make(&t, &s);
			rc = tparse(&t, 0);
			check(rc == 0 && info->vds[0].md_level == map[i].level &&
			      info->vds[0].md_layout == map[i].layout,
			      "prl %u rlq %u -> level %d layout %d (rc %d)", map[i].prl, map[i].rlq,
			      info->vds[0].md_level, info->vds[0].md_layout, rc);
			timg_free(&t);
		}
	}

	/* --- little-endian (Adaptec style), zlib CRC, max_primary_element_entries 0xffff */
	synth_defaults(&s, SZ, 3, 1);
	s.be = 0;
	s.crc_std = 1;
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	check(rc == 0 && !info->big_endian && info->crc_kind == DDF_CRC_STANDARD &&
	      info->vds[0].this_role == 1 && info->vds[0].md_layout == 2,
	      "little-endian: rc %d be %d crc %d %s", rc, info->big_endian, info->crc_kind, err);
	timg_free(&t);
	synth_defaults(&s, SZ, 3, 1);
	s.be = 0;
	s.mppe_field = 0xffff;   /* min(15, (2*512-512)/12 = 42) = 15: refs/offsets move */
	timg_make(&t, &s);
	/* rewrite record 0 with 15-entry arrays */
	{
		uint8_t *p = sect_of(&t, s.plba, sy_conf_off(&s));
		uint8_t *q = sect_of(&t, s.slba, sy_conf_off(&s));

		memset(p + 512, 0xff, 512);
		for (i = 0; i < 15; i++) {
			sy_p32(&s, p + 512 + 4 * i, i < 3 ? sy_refnum(i) : 0xffffffffu);
			sy_p64(&s, p + 512 + 4 * 15 + 8 * i, i < 3 ? 100u * (unsigned)i : 0);
		}
		sy_fix(&s, p, SY_CRL * 512);
		memcpy(q, p, SY_CRL * 512);
	}
	rc = tparse(&t, 0);
	check(rc == 0 && info->max_primary_elements == 15 && info->vds[0].member[2].data_offset == 200,
	      "adaptec mppe 0xffff: rc %d mppe %u off %llu %s", rc, info->max_primary_elements,
	      (unsigned long long)info->vds[0].member[2].data_offset, err);
	timg_free(&t);

	/* --- anchor 1 MiB before the end (as LSI/PERC may write it) */
	synth_defaults(&s, SZ, 4, 3);
	s.anchor_lba = SZ / 512 - 1 - 2048;
	s.plba = s.anchor_lba - 64;
	s.slba = s.anchor_lba - 128;
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	check(rc == 0 && !info->anchor_at_end && info->anchor_lba == s.anchor_lba && info->anchor_type == 0,
	      "anchor 1 MiB early: rc %d at %llu %s", rc, (unsigned long long)info->anchor_lba, err);
	check(strstr(info->warnings, "anchor found at lba") != NULL, "anchor early: warning '%s'", info->warnings);
	expect_fail(&t, DDF_PARSE_NO_SEARCH, -ENOENT, "anchor early, no search", "last sector", NULL);
	/* no anchor at all, only the headers: a header stands in */
	memset(t.b + s.anchor_lba * 512, 0, 512);
	rc = tparse(&t, 0);
	check(rc == 0 && info->anchor_type == 1 && info->anchor_lba == s.plba,
	      "no anchor, primary stands in: rc %d type %d %s", rc, info->anchor_type, err);
	timg_free(&t);

	/* --- nothing there */
	{
		uint8_t *z = calloc(1, SZ);
		struct ddf_mem m;

		ddf_mem_init(&m, SZ, z, SZ, 0);
		rc = ddf_parse(&m.dev, info, err, sizeof(err));
		check(rc == -ENOENT && strstr(err, "no DDF anchor"), "empty: rc %d %s", rc, err);
		ddf_mem_init(&m, 100, z, 100, 0);
		rc = ddf_parse(&m.dev, info, err, sizeof(err));
		check(rc == -ENOENT, "tiny device: rc %d %s", rc, err);
		free(z);
	}

	/* --- damaged primary header, good secondary */
	synth_defaults(&s, SZ, 4, 0);
	timg_make(&t, &s);
	t.b[s.plba * 512 + 40] ^= 1;      /* seq changed, CRC not fixed */
	rc = tparse(&t, 0);
	check(rc == 0 && info->header_used == 2 && !info->primary_ok && info->secondary_ok,
	      "damaged primary header: rc %d used %d %s", rc, info->header_used, err);
	check(strstr(info->header_why, "primary unusable") && strstr(info->header_why, "CRC"),
	      "damaged primary header: why '%s'", info->header_why);
	/* and the secondary damaged too: refused naming both */
	t.b[s.slba * 512 + 40] ^= 1;
	expect_fail(&t, 0, -EBADMSG, "both headers damaged", "primary header", "secondary header");
	timg_free(&t);

	/* --- primary tables damaged (phys CRC), secondary good */
	synth_defaults(&s, SZ, 4, 1);
	timg_make(&t, &s);
	sect_of(&t, s.plba, SY_PHYS_OFF)[100] ^= 0x40;
	rc = tparse(&t, 0);
	check(rc == 0 && info->header_used == 2 && strstr(info->header_why, "damaged"),
	      "damaged primary tables: rc %d used %d why '%s' %s", rc, info->header_used,
	      info->header_why, err);
	check(strstr(info->warnings, "physical disk records") && strstr(info->warnings, "CRC"),
	      "damaged primary tables: warnings '%s'", info->warnings);
	/* both copies damaged */
	sect_of(&t, s.slba, SY_PHYS_OFF)[100] ^= 0x40;
	expect_fail(&t, 0, -EBADMSG, "phys CRC both copies", "physical disk records", "CRC");
	rc = tparse(&t, DDF_PARSE_IGNORE_CRC);
	check(rc == 0 && strstr(info->warnings, "ignored"), "IGNORE_CRC: rc %d '%s'", rc, info->warnings);
	timg_free(&t);

	/* --- header selection by seq / open flag (mdadm's rule) */
	synth_defaults(&s, SZ, 4, 0);
	s.seq_s = 9;
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	check(rc == 0 && info->header_used == 2 && info->seq == 9, "newer secondary: used %d seq %u",
	      info->header_used, info->seq);
	timg_free(&t);
	synth_defaults(&s, SZ, 4, 0);
	s.seq_s = 9;
	s.open_s = 1;
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	check(rc == 0 && info->header_used == 1, "newer but open secondary: used %d", info->header_used);
	timg_free(&t);
	synth_defaults(&s, SZ, 4, 0);
	s.open_p = 1;
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	check(rc == 0 && info->header_used == 2, "same seq, primary open: used %d", info->header_used);
	timg_free(&t);
	synth_defaults(&s, SZ, 4, 0);
	s.slba = UINT64_MAX;
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	check(rc == 0 && info->header_used == 1 && strstr(info->header_why, "no secondary"),
	      "no secondary: rc %d why '%s'", rc, info->header_why);
	timg_free(&t);

	/* --- primary header that disagrees with the anchor */
	synth_defaults(&s, SZ, 4, 0);
	timg_make(&t, &s);
	sy_p16(&s, t.b + s.plba * 512 + 128, 63);
	sy_fix(&s, t.b + s.plba * 512, 512);
	rc = tparse(&t, 0);
	check(rc == 0 && info->header_used == 2 && strstr(info->header_why, "max_pd_entries"),
	      "primary != anchor: used %d why '%s'", info->header_used, info->header_why);
	timg_free(&t);

	/* --- degraded: member 1 failed, member 3 not in the table */
	synth_defaults(&s, SZ, 5, 0);
	s.prl = 6;
	s.pd_state[1] = 0x43;   /* Online|Failed|Missing as mdadm leaves it */
	s.unlisted[3] = 1;
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	check(rc == 0, "degraded r6: rc %d %s", rc, err);
	if (rc == 0) {
		const struct ddf_vd *v = &info->vds[0];

		check(v->member[1].status == DDF_MEMBER_FAILED && v->member[3].status == DDF_MEMBER_MISSING &&
		      v->member[3].refnum == sy_refnum(3) && v->n_online == 3,
		      "degraded r6: status %d %d online %d", v->member[1].status, v->member[3].status,
		      v->n_online);
		check(ddf_vd_check_raid456(v, err, sizeof(err)) == 0, "degraded r6 readable: %s", err);
	}
	timg_free(&t);
	synth_defaults(&s, SZ, 4, 0);
	s.pd_state[1] = 0x03;
	s.pd_state[2] = 0x05;   /* rebuilding */
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	check(rc == 0 && info->vds[0].member[2].status == DDF_MEMBER_REBUILDING, "rebuilding member: rc %d", rc);
	check(ddf_vd_check_raid456(&info->vds[0], err, sizeof(err)) == -ENOTSUP &&
	      strstr(err, "failed or missing"), "r5 with 2 bad members: '%s'", err);
	timg_free(&t);

	/* --- role numbering skips unused phys_refnum slots (mdadm) */
	synth_defaults(&s, SZ, 4, 1);
	s.offs[1] = 8;
	timg_make(&t, &s);
	mut_section(&t, sy_conf_off(&s), SY_CRL, m_hole);
	rc = tparse(&t, 0);
	check(rc == 0 && info->vds[0].member[1].refnum == sy_refnum(2) &&
	      info->vds[0].member[3].refnum == sy_refnum(1) && info->vds[0].this_role == 3 &&
	      info->vds[0].member[3].data_offset == 8 && strstr(info->warnings, "unused phys_refnum"),
	      "refnum hole: rc %d role %d '%s'", rc, info->vds[0].this_role, info->warnings);
	timg_free(&t);

	/* --- LSI controller: volume UUID from header GUID + name + index */
	synth_defaults(&s, SZ, 3, 0);
	memcpy(s.ctrl8, "LSI     ", 9);
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	/* sha1(header guid 24 | "Volume0" + 9 NULs | 00 00), words byte-reversed */
	check(rc == 0 && !strcmp(info->vds[0].uuid, "ea0fd3f0:2dfddffd:af19e1c9:3899a853"),
	      "LSI uuid: %s", info->vds[0].uuid);
	timg_free(&t);
	synth_defaults(&s, SZ, 3, 0);
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	/* sha1(VD guid) */
	check(rc == 0 && !strcmp(info->vds[0].uuid, "a9f2d576:16f08b84:5c4f9656:ba8dc7e9"),
	      "VD uuid: %s", info->vds[0].uuid);
	check(rc == 0 && !strcmp(info->container_uuid, "4d7def33:a2fd1f55:26d42417:5a7feb02"),
	      "container uuid: %s", info->container_uuid);
	timg_free(&t);

	/* --- unsupported geometries, told by ddf_vd_check_raid456 */
	{
		static const struct { void (*f)(const struct synth *, uint8_t *); const char *needle; } u[] = {
			{ m_rec_twolevel, "two-level" }, { m_rec_raid0, "RAID0" }, { m_rec_rlq9, "qualifier" },
		};
		for (i = 0; i < 3; i++) {
			synth_defaults(&s, SZ, 4, 0);
			timg_make(&t, &s);
			mut_section(&t, sy_conf_off(&s), SY_CRL, u[i].f);
			rc = tparse(&t, 0);
			check(rc == 0 && ddf_vd_check_raid456(&info->vds[0], err, sizeof(err)) == -ENOTSUP &&
			      strstr(err, u[i].needle), "unsupported %s: rc %d '%s'", u[i].needle, rc, err);
			timg_free(&t);
		}
		synth_defaults(&s, SZ, 4, 0);
		s.chunk_shift = 2;
		timg_make(&t, &s);
		rc = tparse(&t, 0);
		check(rc == 0 && ddf_vd_check_raid456(&info->vds[0], err, sizeof(err)) == -ENOTSUP &&
		      strstr(err, "chunk"), "4 KiB-less chunk: '%s'", err);
		timg_free(&t);
	}

	/* --- hostile: each broken field refused with a message naming it */
	synth_defaults(&s, SZ, 4, 0);
	timg_make(&t, &s);
	t.b[s.anchor_lba * 512 + 300] ^= 1;
	rc = tparse(&t, 0);
	check(rc == 0 && strstr(info->warnings, "anchor at lba") && strstr(info->warnings, "CRC") &&
	      info->anchor_type == 1,
	      "anchor CRC broken, primary stands in: rc %d type %d", rc, info->anchor_type);
	t.b[s.plba * 512 + 300] ^= 1;
	t.b[s.slba * 512 + 300] ^= 1;
	expect_fail(&t, 0, -EBADMSG, "anchor+headers CRC", "CRC", "computed");
	expect_fail(&t, DDF_PARSE_NO_SEARCH, -EBADMSG, "anchor CRC, no search", "anchor", "CRC");
	timg_free(&t);

	{
		static const struct { hdr_mut f; int rc; const char *n1, *n2; } hm[] = {
			{ m_plba_far, -EINVAL, "primary_lba", "outside" },
			{ m_phys_off_far, -EINVAL, "physical disk records", "past the end" },
			{ m_phys_len_big, -EINVAL, "physical disk records", "exceeds" },
			{ m_virt_absent, -EINVAL, "virtual disk records", "absent" },
			{ m_crl_small, -EINVAL, "config_record_len", "max_primary_element_entries" },
			{ m_mppe_zero, -EINVAL, "max_primary_element_entries", NULL },
			{ m_maxpd_zero, -EINVAL, "max_pd_entries", NULL },
			{ m_conf_len_short, -EINVAL, "configuration records", "shorter" },
		};
		for (i = 0; i < (int)(sizeof(hm) / sizeof(hm[0])); i++) {
			char what[64];

			synth_defaults(&s, SZ, 4, 0);
			timg_make(&t, &s);
			mut_headers(&t, hm[i].f);
			snprintf(what, sizeof(what), "header mutation %d", i);
			expect_fail(&t, 0, hm[i].rc, what, hm[i].n1, hm[i].n2);
			timg_free(&t);
		}
	}
	{
		static const struct { int which; void (*f)(const struct synth *, uint8_t *); int rc;
				      const char *n1, *n2; } sm[] = {
			{ 0, m_maxpdes_huge, -EINVAL, "max_pdes", "do not fit" },
			{ 1, m_maxvdes_huge, -EINVAL, "max_vdes", "do not fit" },
			{ 2, m_pec_zero, -EINVAL, "prim_elmnt_count", NULL },
			{ 2, m_pec_big, -EINVAL, "prim_elmnt_count", NULL },
			{ 2, m_extra_ref, -EINVAL, "phys_refnum", "more than prim_elmnt_count" },
			{ 2, m_my_offset_far, -EINVAL, "this disk", "past the end" },
			{ 3, m_badsig_ctrl, -EBADMSG, "controller data", "magic" },
		};
		for (i = 0; i < (int)(sizeof(sm) / sizeof(sm[0])); i++) {
			char what[64];
			int off, len;

			synth_defaults(&s, SZ, 4, 0);
			timg_make(&t, &s);
			switch (sm[i].which) {
			case 0: off = SY_PHYS_OFF; len = SY_PHYS_LEN; break;
			case 1: off = SY_VIRT_OFF; len = sy_virt_len(&s); break;
			case 2: off = sy_conf_off(&s); len = SY_CRL; break;
			default: off = SY_CTRL_OFF; len = 1; break;
			}
			mut_section(&t, off, len, sm[i].f);
			snprintf(what, sizeof(what), "section mutation %d", i);
			expect_fail(&t, 0, sm[i].rc, what, sm[i].n1, sm[i].n2);
			timg_free(&t);
		}
	}
	/* CRC of each section, in both copies */
	{
		int offs[5], lens[5];
		static const char *const names[5] = {
			"controller data", "physical disk records", "virtual disk records",
			"configuration record 0", "physical disk data"
		};

		synth_defaults(&s, SZ, 4, 0);
		offs[0] = SY_CTRL_OFF; lens[0] = 1;
		offs[1] = SY_PHYS_OFF; lens[1] = SY_PHYS_LEN;
		offs[2] = SY_VIRT_OFF; lens[2] = sy_virt_len(&s);
		offs[3] = sy_conf_off(&s); lens[3] = SY_CRL;
		offs[4] = sy_pdd_off(&s); lens[4] = 1;
		for (i = 0; i < 5; i++) {
			timg_make(&t, &s);
			sect_of(&t, s.plba, offs[i])[lens[i] * 512 - 7] ^= 0x10;
			sect_of(&t, s.slba, offs[i])[lens[i] * 512 - 7] ^= 0x10;
			expect_fail(&t, 0, -EBADMSG, names[i], names[i], "CRC");
			timg_free(&t);
		}
	}
	/* too many virtual disks for DDF_MAX_VDS */
	synth_defaults(&s, SZ, 4, 0);
	s.max_vd = 63;
	s.n_vds = DDF_MAX_VDS + 1;
	timg_make(&t, &s);
	expect_fail(&t, 0, -E2BIG, "too many VDs", "virtual disks", NULL);
	timg_free(&t);
	synth_defaults(&s, SZ, 4, 0);
	s.max_vd = 63;
	s.n_vds = 20;
	timg_make(&t, &s);
	rc = tparse(&t, 0);
	check(rc == 0 && info->n_vds == 20 && info->vds[0].has_config && !info->vds[1].has_config,
	      "20 VDs, one with a config: rc %d n %d", rc, info->n_vds);
	check(ddf_vd_check_raid456(&info->vds[5], err, sizeof(err)) == -ENOTSUP && strstr(err, "not a member"),
	      "VD without config: '%s'", err);
	timg_free(&t);
	/* device truncated: the primary tables lie past the end -> secondary */
	synth_defaults(&s, SZ, 4, 0);
	timg_make(&t, &s);
	{
		uint64_t cut = (s.plba + 5) * 512;

		/* keep the anchor as the last sector of the shorter device */
		memcpy(t.b + cut - 512, t.b + s.anchor_lba * 512, 512);
		ddf_mem_init(&t.m, cut, t.b, cut, 0);
		rc = tparse(&t, 0);
		check(rc == 0 && info->header_used == 2 && strstr(info->warnings, "past the end"),
		      "primary tables cut off: rc %d used %d '%s'", rc, info->header_used, info->warnings);
		/* cut before the primary header: the anchor points outside */
		cut = (s.slba + 20) * 512;
		memcpy(t.b + cut - 512, t.b + s.anchor_lba * 512, 512);
		ddf_mem_init(&t.m, cut, t.b, cut, 0);
		expect_fail(&t, 0, -EINVAL, "truncated device", "primary_lba", "outside the device");
	}
	timg_free(&t);
	/* reader errors are passed up */
	{
		struct dev_reader bad = { 1 << 20, NULL, NULL, 0 };

		rc = ddf_parse(&bad, info, err, sizeof(err));
		check(rc == -EINVAL, "NULL read callback: %d", rc);
	}
}


START_TEST(t_synthetic)
{
	info = malloc(sizeof(*info));
	ck_assert_ptr_nonnull(info);
	test_synthetic();
	free(info);
	ck_assert_msg(n_fail == 0, "%d of %d checks failed", n_fail, n_fail + n_pass);
}
END_TEST

/* ---- the format ---- */

struct out_img {
	uint8_t *b;
	uint64_t size;
};

static int put_mem(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct out_img *o = ctx;

	if (off > o->size || len > o->size - off)
		return -EIO;
	memcpy(o->b + off, buf, len);
	return 0;
}

START_TEST(t_format)
{
	struct format_found *f = malloc(sizeof(*f));
	struct synth s;
	struct timg t, nt;
	struct out_img o;
	struct member_meta m;
	char e[600];
	int dev, role;

	info = malloc(sizeof(*info));
	ck_assert(f && info);
	/* RAID6 of 5, this disk role 2, role 3's disk gone (not in the table) */
	synth_defaults(&s, SZ, 5, 2);
	s.prl = 6;
	s.unlisted[3] = 1;
	timg_make(&t, &s);
	ck_assert_int_eq(format_ddf.probe(&t.m.dev, f, e, sizeof(e)), 0);
	ck_assert_int_eq(f->nvol, 1);
	m = f->vol[0];
	ck_assert_str_eq(m.format, "ddf");
	ck_assert_int_eq(m.role, 2);
	ck_assert_int_eq(m.level, 6);
	ck_assert_int_eq(m.layout, 10);
	ck_assert_int_eq(m.raid_disks, 5);
	ck_assert(m.in_container && !m.unsupported[0]);
	ck_assert_str_eq(m.dev_id, "60020202");
	/* place: by reference number, in this disk's view */
	ck_assert_int_eq(format_ddf.place(&m, "5e000000", &dev, &role), 0);
	ck_assert_int_eq(role, 0);
	ck_assert_int_eq(format_ddf.place(&m, m.dev_id, &dev, &role), 0);
	ck_assert_int_eq(role, 2);
	ck_assert_int_eq(format_ddf.place(&m, "deadbeef", &dev, &role), -ENOENT);
	/* replace: a new disk in role 3, online, the sequence numbers one on */
	o.size = SZ;
	o.b = calloc(1, SZ);
	ck_assert_ptr_nonnull(o.b);
	m.role = 3;
	memcpy(m.device_uuid, "\x12\x34\x56\x78new-disk-guid!!", 16);
	ck_assert_int_eq(format_ddf.replace(&t.m.dev, &m, NULL, SZ / 512, put_mem, &o, e, sizeof(e)), 0);
	nt = t;
	nt.b = o.b;
	ddf_mem_init(&nt.m, SZ, o.b, SZ, 0);
	ck_assert_int_eq(ddf_parse_ex(&nt.m.dev, 0, info, e, sizeof(e)), 0);
	ck_assert_uint_eq(info->this_refnum, 0x12345678);
	ck_assert_int_eq(info->vds[0].this_role, 3);
	ck_assert_int_eq(info->vds[0].member[3].status, DDF_MEMBER_ONLINE);
	ck_assert_int_eq(info->vds[0].n_online, 5);
	ck_assert_uint_eq(info->seq, s.seq_p);
	ck_assert_uint_eq(info->vds[0].conf_seqnum, 6);     /* the synthetic one has 5 */
	ck_assert_int_eq(info->vds[0].state & DDF_VDS_MASK, DDF_VDS_OPTIMAL);
	ck_assert(!memcmp(info->this_guid, "raidimg ", 8));
	/* in a free entry (no failed one to take the place of); the others keep theirs */
	ck_assert_int_eq(info->n_pds, 5);
	ck_assert_int_eq(info->pds[info->this_pd].slot, 4);
	ck_assert_int_eq(info->pds[2].slot, 2);
	/* ... and in the new disk's own format view */
	ck_assert_int_eq(format_ddf.probe(&nt.m.dev, f, e, sizeof(e)), 0);
	ck_assert_int_eq(f->vol[0].role, 3);
	ck_assert_uint_eq(f->vol[0].events, s.seq_p);
	ck_assert(meta_fresher(&f->vol[0], &m));
	/* a role whose data starts elsewhere than the template's: refused */
	m.data_offset += 8;
	ck_assert_int_eq(format_ddf.replace(&t.m.dev, &m, NULL, SZ / 512, put_mem, &o, e, sizeof(e)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(e, "role 3's data starts at sector"));
	m.data_offset -= 8;
	/* a new image of another size: refused */
	ck_assert_int_eq(format_ddf.replace(&t.m.dev, &m, NULL, SZ / 512 + 8, put_mem, &o, e, sizeof(e)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(e, "must have the template's size"));
	free(o.b);
	timg_free(&t);
	/* a virtual disk being migrated ('morphing') cannot be read: said */
	synth_defaults(&s, SZ, 4, 0);
	timg_make(&t, &s);
	t.b[(t.s.plba + SY_VIRT_OFF) * 512 + 64 + 32] |= DDF_VDS_MORPHING;
	sy_fix(&t.s, t.b + (t.s.plba + SY_VIRT_OFF) * 512, sy_virt_len(&t.s) * 512);
	ck_assert_int_eq(format_ddf.probe(&t.m.dev, f, e, sizeof(e)), 0);
	ck_assert_ptr_nonnull(strstr(f->vol[0].unsupported, "morphing"));
	timg_free(&t);
	free(info);
	free(f);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("ddf");
	TCase *tc = tcase_create("ddf");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, t_synthetic);
	tcase_add_test(tc, t_format);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
