/* test_detect.c - unit tests of the detect prototype's evidence sources and
 * of the whole pipeline on arrays built in memory (with the snapshot's
 * layout.c for placement and parity.c for P/Q), plus hostile inputs.
 * Plain asserts with counters; prints "N passed, N failed".
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect_int.h"
#include "layout.h"
#include "parity.h"

static int passed, failed;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (cond) {                                                   \
			passed++;                                             \
		} else {                                                      \
			failed++;                                             \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
		}                                                             \
	} while (0)

/* ---------------- helpers ---------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd32();
}

/* text from a small vocabulary: continuous content the seam model can judge */
static void fill_text(uint8_t *p, size_t n)
{
	static const char *const words[] = {
		"the", "array", "member", "parity", "chunk", "stripe", "recovery", "of", "and", "disk",
		"image", "offset", "layout", "symmetric", "block", "file", "system", "data", "read", "write",
		"superblock", "metadata", "rotation", "order", "missing", "evidence", "which", "is", "to", "a",
	};
	size_t i = 0;
	int col = 0;
	while (i < n) {
		const char *w = words[rnd32() % (sizeof(words) / sizeof(words[0]))];
		for (const char *q = w; *q && i < n; q++, col++)
			p[i++] = (uint8_t)*q;
		if (i < n) {
			p[i++] = (uint8_t)(col > 70 ? '\n' : ' ');
			col = col > 70 ? 0 : col + 1;
		}
	}
}

struct mem {
	uint8_t *buf;
	uint64_t size;
	int fail_at;   /* -1 never; else fail reads touching this MiB */
	uint64_t given;   /* bytes the reader handed out */
};

/* what each image's reader handed out in the last run_detect */
static uint64_t last_given[DETECT_MAX_IMAGES];

static int mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct mem *m = ctx;
	if (off + len > m->size || off + len < off)
		return -EIO;
	if (m->fail_at >= 0 && off <= ((uint64_t)m->fail_at << 20) && off + len > ((uint64_t)m->fail_at << 20))
		return -EIO;
	memcpy(buf, m->buf + off, len);
	m->given += len;
	return 0;
}

/* Build member images (role order) of an array holding content (zeros past
 * it), each D + stripes*C bytes.  Returns the members (caller frees each). */
static uint8_t **build_array(int level, int layout, int n, uint32_t C, uint64_t D, const uint8_t *content,
			     uint64_t clen, uint64_t *member_bytes)
{
	struct layout_geom g = { level, layout, n, C };
	struct stripe_map m;
	int k = layout_data_disks(&g);
	uint64_t stripes = (clen + (uint64_t)k * C - 1) / ((uint64_t)k * C);
	uint64_t mb = D + stripes * C;
	uint8_t **mem = calloc((size_t)n, sizeof(*mem));
	for (int r = 0; r < n; r++) {
		mem[r] = aligned_alloc(64, mb);
		memset(mem[r], 0, mb);
	}
	uint8_t *zero = aligned_alloc(64, C);
	memset(zero, 0, C);
	for (uint64_t s = 0; s < stripes; s++) {
		layout_map_stripe(&g, s, &m);
		uint64_t mo = D + s * C;
		for (int d = 0; d < k; d++) {
			uint64_t a = (s * (uint64_t)k + (uint64_t)d) * C;
			if (a < clen)
				memcpy(mem[m.data_disk[d]] + mo, content + a, clen - a < C ? clen - a : C);
		}
		uint8_t *slots[LAYOUT_MAX_DISKS];
		for (int i = 0; i < m.q_slots; i++)
			slots[i] = NULL;
		for (int r = 0; r < n; r++)
			if (m.disk_slot[r] >= 0)
				slots[m.disk_slot[r]] = mem[r] + mo;
		if (level == 6)
			parity_gen_pq(m.q_slots, C, slots, mem[m.p_disk] + mo, mem[m.q_disk] + mo);
		else
			parity_gen_p(m.q_slots, C, slots, mem[m.p_disk] + mo);
	}
	free(zero);
	*member_bytes = mb;
	return mem;
}

/* a context over in-memory images, sampled and parity-analysed, for the
 * module-level tests */
static struct dctx *ctx_over(uint8_t **imgs, int nimg, uint64_t size, struct mem *mm, struct dev_reader *dv)
{
	struct dctx *c = calloc(1, sizeof(*c));
	c->gf = malloc(sizeof(*c->gf));
	gf_init_tables(c->gf);
	c->nimg = nimg;
	detect_hints_init(&c->h);
	c->minsize = UINT64_MAX;
	for (int i = 0; i < nimg; i++) {
		mm[i] = (struct mem){ imgs[i], size, -1, 0 };
		dv[i] = (struct dev_reader){ size, mem_read, &mm[i], 0 };
		c->size[i] = size;
		if (size > c->maxsize)
			c->maxsize = size;
		if (size < c->minsize)
			c->minsize = size;
	}
	c->dev = dv;
	static char err[256];
	c->err = err;
	c->errlen = sizeof(err);
	sample_read(c);
	parity_analyse(c);
	for (int i = 0; i < nimg; i++)
		sample_nzmap(c, i);
	return c;
}

static void ctx_done(struct dctx *c)
{
	sample_free(c);
	parity_free(&c->par);
	seam_free(c);
	free(c->anc);
	free(c->gf);
	free(c);
}

static struct detect_result *run_detect(uint8_t **imgs, int nimg, uint64_t size, const struct detect_hints *h,
					int *rc_out, char *err, size_t errlen)
{
	if (getenv("TEST_DUMP")) {   /* debugging: the images as files TEST_DUMP.N.img */
		static int seq;
		seq++;
		for (int i = 0; i < nimg; i++) {
			char fn[256];
			snprintf(fn, sizeof(fn), "%s.%d.%d.img", getenv("TEST_DUMP"), seq, i);
			FILE *f = fopen(fn, "wb");
			if (f) {
				fwrite(imgs[i], 1, size, f);
				fclose(f);
			}
		}
	}
	struct mem mm[DETECT_MAX_IMAGES];
	struct dev_reader dv[DETECT_MAX_IMAGES];
	for (int i = 0; i < nimg; i++) {
		mm[i] = (struct mem){ imgs[i], size, -1, 0 };
		dv[i] = (struct dev_reader){ size, mem_read, &mm[i], 0 };
	}
	struct detect_result *res = malloc(sizeof(*res));
	*rc_out = detect_run(dv, nimg, h, res, err, errlen);
	for (int i = 0; i < nimg; i++)
		last_given[i] = mm[i].given;
	return res;
}

static void put_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put_be32(uint8_t *p, uint32_t v) { put_be16(p, (uint16_t)(v >> 16)); put_be16(p + 2, (uint16_t)v); }
static void put_be64(uint8_t *p, uint64_t v) { put_be32(p, (uint32_t)(v >> 32)); put_be32(p + 4, (uint32_t)v); }

/* an ext4 superblock (1 KiB blocks, metadata_csum) for group grp */
static void make_ext4_sb(uint8_t *sb, uint32_t blocks, uint16_t grp, const uint8_t *uuid)
{
	memset(sb, 0, 1024);
	put_le32(sb + 0, 2048);          /* inodes */
	put_le32(sb + 4, blocks);
	put_le32(sb + 20, 1);            /* first data block */
	put_le32(sb + 24, 0);            /* 1 KiB blocks */
	put_le32(sb + 32, 8192);         /* blocks per group */
	put_le32(sb + 40, 512);          /* inodes per group */
	put_le16(sb + 56, 0xEF53);
	put_le32(sb + 76, 1);
	put_le16(sb + 88, 256);
	put_le16(sb + 90, grp);
	put_le32(sb + 96, 0x2c2);        /* extents, flex_bg ... */
	put_le32(sb + 100, 0x400);       /* metadata_csum */
	memcpy(sb + 104, uuid, 16);
	put_le32(sb + 1020, crc32c_sw(~0u, sb, 1020));
}

/* ---------------- tests ---------------- */

static void t_gf_nullspace(void)
{
	struct gf *g = malloc(sizeof(*g));
	gf_init_tables(g);
	uint8_t c[5][512];
	for (int j = 0; j < 4; j++)
		fill_random(c[j], 512);
	for (int i = 0; i < 512; i++)
		c[4][i] = (uint8_t)(c[0][i] ^ g->mul[2][c[1][i]] ^ g->mul[7][c[3][i]]);
	const uint8_t *cols[5] = { c[0], c[1], c[2], c[3], c[4] };
	uint8_t v[4 * MAXC];
	int d = gf_nullspace(g, cols, 5, 512, 4, v, 4);
	CHECK(d == 1, "dim %d", d);
	if (d == 1) {
		/* normalise so that column 4 has coefficient 1 */
		uint8_t inv = g->inv[v[4]];
		uint8_t w[5];
		for (int j = 0; j < 5; j++)
			w[j] = g->mul[inv][v[j]];
		CHECK(w[0] == 1 && w[1] == 2 && w[2] == 0 && w[3] == 7 && w[4] == 1, "vector %u %u %u %u %u", w[0],
		      w[1], w[2], w[3], w[4]);
	}
	/* independent columns: no relation */
	fill_random(c[4], 512);
	d = gf_nullspace(g, cols, 5, 512, 4, v, 4);
	CHECK(d == 0, "random columns dim %d", d);
	free(g);
}

/* RAID6 stripe built with parity_gen_pq: the row's null space names P, Q
 * and every data slot (complete, and with one member missing). */
static void t_raid6_slots(void)
{
	int layouts[] = { LAYOUT_LEFT_SYMMETRIC, LAYOUT_LEFT_ASYMMETRIC, LAYOUT_ROTATING_N_CONTINUE,
			  LAYOUT_RIGHT_ASYMMETRIC_6, LAYOUT_ROTATING_ZERO_RESTART };
	for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
		int n = 7;
		uint32_t C = 4096;
		uint64_t mb;
		uint8_t *content = malloc(40 * C);
		fill_random(content, 40 * C);
		uint8_t **m = build_array(6, layouts[li], n, C, 0, content, 40 * C, &mb);
		struct mem mm[8];
		struct dev_reader dv[8];
		struct dctx *c = ctx_over(m, n, mb, mm, dv);
		CHECK(c->par.cls == PC_R6, "layout %d: class %d", layouts[li], c->par.cls);
		struct layout_geom g = { 6, layouts[li], n, C };
		int good = 0, rows = 0;
		for (int i = 0; i < c->par.nrows; i++) {
			const struct prow *r = &c->par.rows[i];
			struct stripe_map sm;
			layout_map_stripe(&g, r->off / C, &sm);
			int p, q, slot[MAXI];
			if (detect_row_interpret(c, r, n, &p, &q, slot) < 0)
				continue;
			rows++;
			bool ok = p == sm.p_disk && q == sm.q_disk;
			for (int j = 0; j < n; j++)
				if (j != p && j != q)
					ok = ok && slot[j] == sm.disk_slot[j];
			good += ok;
		}
		CHECK(rows > 0 && good == rows, "layout %d: %d of %d rows name P, Q and the slots", layouts[li], good,
		      rows);
		ctx_done(c);
		/* one member missing: drop role 2 */
		uint8_t *m5[8];
		int k = 0;
		for (int r = 0; r < n; r++)
			if (r != 2)
				m5[k++] = m[r];
		c = ctx_over(m5, n - 1, mb, mm, dv);
		CHECK(c->par.cls == PC_R6M1, "layout %d missing: class %d", layouts[li], c->par.cls);
		good = rows = 0;
		for (int i = 0; i < c->par.nrows; i++) {
			const struct prow *r = &c->par.rows[i];
			struct stripe_map sm;
			layout_map_stripe(&g, r->off / C, &sm);
			int p, q, slot[MAXI];
			int kind = detect_row_interpret(c, r, n, &p, &q, slot);
			if (kind < 0 || sm.q_disk == 2)
				continue;
			rows++;
			/* image index j is role j + (j >= 2) */
			int qr = q >= 2 ? q + 1 : q;
			int pr = p < 0 ? -1 : p >= 2 ? p + 1 : p;
			bool ok = qr == sm.q_disk && (sm.p_disk == 2 ? pr == -1 : pr == sm.p_disk);
			for (int j = 0; j < n - 1; j++) {
				int rr = j >= 2 ? j + 1 : j;
				if (rr != sm.p_disk && rr != sm.q_disk)
					ok = ok && slot[j] == sm.disk_slot[rr];
			}
			good += ok;
		}
		CHECK(rows > 0 && good * 10 >= rows * 9, "layout %d missing: %d of %d rows", layouts[li], good, rows);
		ctx_done(c);
		for (int r = 0; r < n; r++)
			free(m[r]);
		free(m);
		free(content);
	}
}

/* ext4 superblocks at array offsets 1024 and group 1 under RAID5 LS 64K,
 * order shuffled: anchors on the right images at the right offsets */
static void t_ext4_anchor(void)
{
	uint32_t C = 65536;
	int n = 4;
	uint64_t alen = 12u << 20;
	uint8_t *content = calloc(1, alen);
	uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	make_ext4_sb(content + 1024, 12288, 0, uuid);
	make_ext4_sb(content + (8192 + 1) * 1024, 12288, 1, uuid);
	uint64_t mb;
	uint8_t **m = build_array(5, LAYOUT_LEFT_SYMMETRIC, n, C, 0, content, alen, &mb);
	int perm[4] = { 2, 0, 3, 1 };   /* image i = role perm[i] */
	uint8_t *img[4];
	for (int i = 0; i < n; i++)
		img[i] = m[perm[i]];
	struct mem mm[4];
	struct dev_reader dv[4];
	struct dctx *c = ctx_over(img, n, mb, mm, dv);
	anchors_scan(c);
	struct layout_geom g = { 5, LAYOUT_LEFT_SYMMETRIC, n, C };
	int found = 0;
	uint64_t rels[2] = { 1024, (8192 + 1) * 1024 };
	for (int t = 0; t < 2; t++) {
		struct layout_pos pos;
		layout_locate(&g, rels[t], &pos);
		for (int i = 0; i < c->nanc; i++) {
			const struct anchor *a = &c->anc[i];
			if (a->kind == AK_EXT_SB && a->rel[0] == (int64_t)rels[t] && perm[a->img] == pos.disk &&
			    a->off == pos.member_off)
				found++;
		}
	}
	CHECK(found >= 2, "ext4 superblocks found %d of 2 (anchors %d)", found, c->nanc);
	ctx_done(c);
	/* a damaged checksum is refused */
	content[1024 + 100] ^= 1;
	uint8_t **m2 = build_array(5, LAYOUT_LEFT_SYMMETRIC, n, C, 0, content, alen, &mb);
	c = ctx_over(m2, n, mb, mm, dv);
	anchors_scan(c);
	int bad = 0;
	for (int i = 0; i < c->nanc; i++)
		bad += c->anc[i].kind == AK_EXT_SB && c->anc[i].rel[0] == 1024;
	CHECK(bad == 0, "superblock with a bad checksum accepted");
	ctx_done(c);
	for (int r = 0; r < n; r++) {
		free(m[r]);
		free(m2[r]);
	}
	free(m);
	free(m2);
	free(content);
}

/* labels and other file systems, each at a known array offset on a plain
 * 2-image "array" (one image is the volume itself) */
static struct dctx *scan_single(uint8_t *vol, uint64_t size, struct mem *mm, struct dev_reader *dv)
{
	uint8_t *z = calloc(1, size);
	uint8_t *imgs[2] = { vol, z };
	struct dctx *c = ctx_over(imgs, 2, size, mm, dv);
	anchors_scan(c);
	free(z);   /* sample holds copies */
	return c;
}

static int count_anchor(const struct dctx *c, int kind, int64_t rel, uint64_t off)
{
	int n = 0;
	for (int i = 0; i < c->nanc; i++) {
		const struct anchor *a = &c->anc[i];
		if (a->kind != kind || a->off != off)
			continue;
		for (int r = 0; r < a->nrel; r++)
			n += a->rel[r] == rel;
	}
	return n;
}

static void t_labels(void)
{
	uint64_t size = 4u << 20;
	uint8_t *v = calloc(1, size);
	struct mem mm[2];
	struct dev_reader dv[2];
	/* GPT: protective MBR, header at LBA 1 with crc, entries at LBA 2 */
	v[446 + 4] = 0xEE;
	put_le32(v + 446 + 8, 1);
	put_le32(v + 446 + 12, 8191);
	v[510] = 0x55;
	v[511] = 0xAA;
	uint8_t *h = v + 512, *e = v + 1024;
	memcpy(h, "EFI PART", 8);
	put_le32(h + 8, 0x10000);
	put_le32(h + 12, 92);
	put_le64(h + 24, 1);
	put_le64(h + 32, 8191);
	put_le64(h + 40, 34);
	put_le64(h + 48, 8158);
	fill_random(h + 56, 16);
	put_le64(h + 72, 2);
	put_le32(h + 80, 128);
	put_le32(h + 84, 128);
	fill_random(e, 16);
	put_le64(e + 32, 2048);
	put_le64(e + 40, 4095);
	put_le32(h + 16, crc32_zlib(0, h, 92));
	/* LVM2 label in sector 1 at 1 MiB, metadata header at 1 MiB + 4 KiB */
	uint8_t *l = v + (1u << 20) + 512;
	memcpy(l, "LABELONE", 8);
	put_le64(l + 8, 1);
	put_le32(l + 20, 32);
	memcpy(l + 24, "LVM2 001", 8);
	memcpy(l + 32, "0123456789abcdef0123456789abcdef", 32);
	uint8_t *mda = v + (1u << 20) + 4096;
	memcpy(mda + 4, " LVM2 x[5A%r0N*>", 16);
	put_le32(mda + 20, 1);
	put_le64(mda + 24, 4096);
	/* LUKS2 header at 2 MiB (hdr_offset 0) and its secondary at 2 MiB + 16 KiB */
	uint8_t *lk = v + (2u << 20);
	memcpy(lk, "LUKS\xba\xbe", 6);
	put_be16(lk + 6, 2);
	memcpy(lk + 168, "11111111-2222-3333-4444-555555555555", 36);
	uint8_t *lk2 = lk + 16384;
	memcpy(lk2, "SKUL\xba\xbe", 6);
	put_be16(lk2 + 6, 2);
	memcpy(lk2 + 168, "11111111-2222-3333-4444-555555555555", 36);
	put_be64(lk2 + 256, 16384);
	struct dctx *c = scan_single(v, size, mm, dv);
	CHECK(count_anchor(c, AK_GPT, 512, 512) == 1, "GPT header");
	bool part = false;
	for (int i = 0; i < c->npart; i++)
		part = part || c->part[i] == 2048 * 512;
	CHECK(part, "GPT partition start");
	CHECK(count_anchor(c, AK_LVM_LABEL, 512, (1u << 20) + 512) == 1, "LVM label");
	CHECK(count_anchor(c, AK_LVM_MDA, 4096, (1u << 20) + 4096) == 1, "LVM metadata header");
	CHECK(count_anchor(c, AK_LUKS, 0, 2u << 20) == 1, "LUKS2 header");
	CHECK(count_anchor(c, AK_LUKS, 16384, (2u << 20) + 16384) == 1, "LUKS2 secondary header");
	ctx_done(c);
	/* a GPT header with a wrong crc is not an anchor */
	h[100] ^= 0xff;
	put_le32(h + 16, 0x12345678);
	c = scan_single(v, size, mm, dv);
	CHECK(count_anchor(c, AK_GPT, 512, 512) == 0, "GPT header with a bad crc accepted");
	ctx_done(c);
	free(v);
}

/* A 1024-byte NTFS 3.1 FILE record: $STANDARD_INFORMATION and a
 * $FILE_NAME of namelen characters, end marker, fixups (usn 7). */
static void make_file_rec(uint8_t *r, uint32_t recno, uint16_t flags, int namelen)
{
	memset(r, 0, 1024);
	memcpy(r, "FILE", 4);
	put_le16(r + 4, 48);
	put_le16(r + 6, 3);
	put_le16(r + 16, 1);
	put_le16(r + 20, 56);
	put_le16(r + 22, flags);
	put_le32(r + 28, 1024);
	put_le32(r + 44, recno);
	uint32_t ao = 56;
	put_le32(r + ao, 0x10);
	put_le32(r + ao + 4, 0x60);
	put_le32(r + ao + 16, 0x48);
	put_le16(r + ao + 20, 0x18);
	ao += 0x60;
	uint32_t fl = (uint32_t)(0x18 + 0x42 + 2 * namelen + 7) / 8 * 8;
	put_le32(r + ao, 0x30);
	put_le32(r + ao + 4, fl);
	put_le32(r + ao + 16, (uint32_t)(0x42 + 2 * namelen));
	put_le16(r + ao + 20, 0x18);
	r[ao + 0x18 + 0x40] = (uint8_t)namelen;
	for (int i = 0; i < namelen; i++)
		r[ao + 0x18 + 0x42 + 2 * i] = (uint8_t)('a' + i % 26);
	ao += fl;
	put_le32(r + ao, 0xffffffffu);
	put_le32(r + 24, ao + 8);
	/* fixups: the last two bytes of each sector saved in the array */
	put_le16(r + 48, 0x0007);
	memcpy(r + 50, r + 510, 2);
	memcpy(r + 52, r + 1022, 2);
	put_le16(r + 510, 0x0007);
	put_le16(r + 1022, 0x0007);
}

static void t_ntfs_fat_xfs(void)
{
	uint64_t size = 4u << 20;
	uint8_t *v = calloc(1, size);
	struct mem mm[2];
	struct dev_reader dv[2];
	/* NTFS: boot sector, MFT at cluster 4 (4 KiB clusters), record 5 */
	memcpy(v + 3, "NTFS    ", 8);
	put_le16(v + 11, 512);
	v[13] = 8;
	put_le64(v + 40, 8191);
	put_le64(v + 48, 4);
	put_le64(v + 56, 2);
	v[64] = (uint8_t)(int8_t)-10;   /* 1024-byte records */
	put_le64(v + 72, 0x1122334455667788ull);
	v[510] = 0x55;
	v[511] = 0xAA;
	uint8_t *r = v + 4 * 4096 + 5 * 1024;
	make_file_rec(r, 5, 1, 7);
	struct dctx *c = scan_single(v, size, mm, dv);
	CHECK(count_anchor(c, AK_NTFS_BOOT, 0, 0) == 1, "NTFS boot sector");
	CHECK(count_anchor(c, AK_NTFS_FILE, 4 * 4096 + 5 * 1024, 4 * 4096 + 5 * 1024) == 1, "NTFS record 5");
	ctx_done(c);
	/* a FILE record with broken fixups is refused */
	put_le16(r + 1022, 0x0008);
	c = scan_single(v, size, mm, dv);
	CHECK(count_anchor(c, AK_NTFS_FILE, 4 * 4096 + 5 * 1024, 4 * 4096 + 5 * 1024) == 0,
	      "FILE record with a bad fixup accepted");
	ctx_done(c);

	/* FAT16: boot sector, FAT1 at sector 4 with contiguous chains */
	memset(v, 0, size);
	v[0] = 0xEB;
	v[1] = 0x3C;
	v[2] = 0x90;
	put_le16(v + 11, 512);
	v[13] = 4;
	put_le16(v + 14, 4);
	v[16] = 2;
	put_le16(v + 17, 512);
	put_le16(v + 19, 0);
	v[21] = 0xF8;
	put_le16(v + 22, 64);
	put_le32(v + 32, 40000);
	put_le32(v + 39, 0xCAFEBABE);
	memcpy(v + 43, "TESTVOL    ", 11);
	v[510] = 0x55;
	v[511] = 0xAA;
	uint8_t *fat = v + 4 * 512;
	for (int s = 0; s < 3; s++)   /* FAT sectors 0..2: chain x -> x+1 */
		for (int x = 0; x < 256; x++) {
			int idx = s * 256 + x;
			uint16_t val = idx < 2 ? (idx ? 0xFFFF : 0xFFF8) : (uint16_t)(idx + 1);
			put_le16(fat + s * 512 + 2 * x, val);
		}
	memcpy(v + (4 + 64) * 512, fat, 3 * 512);   /* FAT2 */
	uint8_t *root = v + (4 + 128) * 512;
	memcpy(root, "TESTVOL    ", 11);
	root[11] = 0x08;
	c = scan_single(v, size, mm, dv);
	CHECK(count_anchor(c, AK_FAT_BOOT, 0, 0) == 1, "FAT boot sector");
	CHECK(count_anchor(c, AK_FAT_TABLE, 4 * 512 + 512, 4 * 512 + 512) == 1, "FAT1 sector 1 (chains)");
	CHECK(count_anchor(c, AK_FAT_TABLE, (4 + 64) * 512 + 1024, (4 + 64) * 512 + 1024) == 1, "FAT2 sector 2");
	CHECK(count_anchor(c, AK_FAT_DIR, (4 + 128) * 512, (4 + 128) * 512) == 1, "FAT root directory label");
	ctx_done(c);

	/* XFS v5: superblock, AGF of AG 1, a btree block with its own address */
	memset(v, 0, size);
	uint8_t fsuuid[16] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 4 };
	memcpy(v, "XFSB", 4);
	put_be32(v + 4, 4096);
	put_be64(v + 8, 1024);
	memcpy(v + 32, fsuuid, 16);
	put_be32(v + 84, 256);   /* agblocks: 1 MiB AGs */
	put_be32(v + 88, 4);
	put_be16(v + 100, 0xB4A5);
	put_be16(v + 102, 512);
	put_be16(v + 104, 512);
	put_be16(v + 106, 8);
	v[120] = 12;
	v[121] = 9;
	v[122] = 9;
	v[123] = 3;
	v[124] = 8;
	uint8_t *agf = v + (1u << 20) + 512;
	memcpy(agf, "XAGF", 4);
	put_be32(agf + 4, 1);
	put_be32(agf + 8, 1);
	memcpy(agf + 64, fsuuid, 16);
	uint8_t *bt = v + 3 * 4096;
	memcpy(bt, "AB3B", 4);
	put_be64(bt + 16, 3 * 8);
	memcpy(bt + 32, fsuuid, 16);
	c = scan_single(v, size, mm, dv);
	CHECK(count_anchor(c, AK_XFS_SB, 0, 0) == 1, "XFS superblock");
	CHECK(count_anchor(c, AK_XFS_AGHDR, (1u << 20) + 512, (1u << 20) + 512) == 1, "XFS AGF of AG 1");
	CHECK(count_anchor(c, AK_XFS_BLK, 3 * 4096, 3 * 4096) == 1, "XFS v5 btree block");
	ctx_done(c);
	free(v);
}

static void t_tar(void)
{
	uint8_t h[512];
	memset(h, 0, sizeof(h));
	strcpy((char *)h, "dir/file.txt");
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 124, "00000001750", 11);   /* 1000 bytes */
	memcpy(h + 136, "14573162000", 11);
	h[156] = '0';
	memcpy(h + 257, "ustar", 5);
	memcpy(h + 263, "00", 2);
	unsigned sum = 0;
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	uint64_t dl = 0;
	CHECK(tar_header_valid(h, &dl) && dl == 1024, "tar header: data %llu", (unsigned long long)dl);
	h[0] ^= 1;
	CHECK(!tar_header_valid(h, &dl), "tar header with a bad checksum accepted");
}

static void t_seam(void)
{
	/* seams within text score higher than junctions of unrelated text */
	uint64_t size = 2u << 20;
	uint8_t *a = malloc(size), *b = malloc(size);
	fill_text(a, size);
	fill_text(b, size);
	uint8_t *imgs[2] = { a, b };
	struct mem mm[2];
	struct dev_reader dv[2];
	struct dctx *c = ctx_over(imgs, 2, size, mm, dv);
	seam_build(c);
	double s_true = 0, s_false = 0;
	int n = 0;
	for (uint64_t x = 4096; x + 4096 < size; x += 4099 * 3) {
		float t = seam_at(c, a + x, a + x), f = seam_at(c, a + x, b + x + 777);
		if (t < 0 || f < 0)
			continue;
		s_true += t;
		s_false += f;
		n++;
	}
	CHECK(n > 50 && s_true / n > s_false / n + 0.5, "true %.2f false %.2f (n %d)", n ? s_true / n : 0,
	      n ? s_false / n : 0, n);
	ctx_done(c);
	free(a);
	free(b);
}

/* the whole pipeline on in-memory arrays */
static void t_pipeline(void)
{
	char err[256];
	int rc;
	/* RAID5 LS, text content, one member missing, order shuffled, 1 MiB offset */
	{
		uint32_t C = 16384;
		int n = 5;
		uint64_t alen = 6u << 20, mb;
		uint8_t *content = malloc(alen);
		fill_text(content, alen);
		/* text alone fixes the offset only up to whole stripes: a
		 * superblock at array offset 1024 pins it */
		uint8_t uuid[16] = { 7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
		make_ext4_sb(content + 1024, 6144, 0, uuid);
		uint8_t **m = build_array(5, LAYOUT_LEFT_SYMMETRIC, n, C, 1u << 20, content, alen, &mb);
		int perm[4] = { 3, 0, 4, 1 };   /* role 2 missing */
		uint8_t *img[4];
		for (int i = 0; i < 4; i++)
			img[i] = m[perm[i]];
		struct detect_result *res = run_detect(img, 4, mb, NULL, &rc, err, sizeof(err));
		CHECK(rc == 0 && res->ncand > 0, "rc %d %s", rc, err);
		if (rc == 0 && res->ncand > 0) {
			const struct detect_candidate *cd = &res->cand[0];
			int want[5] = { 1, 3, -1, 0, 2 };
			bool ok = cd->level == 5 && cd->layout == LAYOUT_LEFT_SYMMETRIC && cd->chunk_bytes == C &&
				  cd->data_offset == (1u << 20) && cd->raid_disks == 5;
			for (int r = 0; r < 5 && ok; r++)
				ok = cd->order[r] == want[r];
			CHECK(ok, "RAID5 text: level %d layout %d chunk %u offset %llu order %d,%d,%d,%d,%d", cd->level,
			      cd->layout, cd->chunk_bytes, (unsigned long long)cd->data_offset, cd->order[0], cd->order[1],
			      cd->order[2], cd->order[3], cd->order[4]);
			CHECK(res->verdict != DETECT_AMBIGUOUS, "verdict %s: %s", detect_verdict_name(res->verdict),
			      res->reason);
			CHECK(res->bytes_read_max <= mb, "read %llu", (unsigned long long)res->bytes_read_max);
		}
		free(res);
		for (int r = 0; r < n; r++)
			free(m[r]);
		free(m);
		free(content);
	}
	/* RAID6 ddf-N-continue of random data: parity alone names everything */
	{
		uint32_t C = 32768;
		int n = 6;
		uint64_t alen = 4u << 20, mb;
		uint8_t *content = malloc(alen);
		fill_random(content, alen);
		uint8_t **m = build_array(6, LAYOUT_ROTATING_N_CONTINUE, n, C, 0, content, alen, &mb);
		int perm[6] = { 4, 2, 0, 5, 1, 3 };
		uint8_t *img[6];
		for (int i = 0; i < 6; i++)
			img[i] = m[perm[i]];
		struct detect_result *res = run_detect(img, 6, mb, NULL, &rc, err, sizeof(err));
		CHECK(rc == 0 && res->ncand > 0, "rc %d %s", rc, err);
		if (rc == 0 && res->ncand > 0) {
			const struct detect_candidate *cd = &res->cand[0];
			bool ok = cd->level == 6 && cd->layout == LAYOUT_ROTATING_N_CONTINUE && cd->chunk_bytes == C &&
				  cd->data_offset == 0;
			for (int r = 0; r < 6 && ok; r++)
				ok = perm[cd->order[r]] == r;
			CHECK(ok, "RAID6 random: layout %d chunk %u order %d,%d,%d,%d,%d,%d", cd->layout, cd->chunk_bytes,
			      cd->order[0], cd->order[1], cd->order[2], cd->order[3], cd->order[4], cd->order[5]);
		}
		free(res);
		for (int r = 0; r < n; r++)
			free(m[r]);
		free(m);
		free(content);
	}
	/* RAID5 of random data: member set and offset right, verdict ambiguous;
	 * a foreign image is left out */
	{
		uint32_t C = 65536;
		int n = 4;
		uint64_t alen = 6u << 20, mb;
		uint8_t *content = malloc(alen);
		fill_random(content, alen);
		uint8_t **m = build_array(5, LAYOUT_LEFT_SYMMETRIC, n, C, 0, content, alen, &mb);
		uint8_t *foreign = malloc(mb);
		fill_random(foreign, mb);
		uint8_t *img[5] = { m[2], foreign, m[0], m[3], m[1] };
		struct detect_result *res = run_detect(img, 5, mb, NULL, &rc, err, sizeof(err));
		CHECK(rc == 0 && res->ncand > 0, "rc %d %s", rc, err);
		if (rc == 0 && res->ncand > 0) {
			CHECK(res->verdict == DETECT_AMBIGUOUS, "random RAID5: verdict %s", detect_verdict_name(res->verdict));
			CHECK(res->nexcluded == 1 && res->excluded[0].image == 1, "foreign image not excluded (%d)",
			      res->nexcluded);
			CHECK(res->cand[0].data_offset == 0 && res->cand[0].raid_disks == 4, "offset %llu disks %d",
			      (unsigned long long)res->cand[0].data_offset, res->cand[0].raid_disks);
		}
		free(res);
		for (int r = 0; r < n; r++)
			free(m[r]);
		free(m);
		free(foreign);
		free(content);
	}
}


/* ---------------- evidence added in the second round ---------------- */

/* NTFS records: the record number of unused reserved records (0) is not
 * trusted; the XOR of records (a parity chunk) and broken attribute chains
 * are refused. */
static void t_ntfs_records(void)
{
	uint64_t size = 1u << 20;
	uint8_t *v = calloc(1, size);
	struct mem mm[2];
	struct dev_reader dv[2];
	uint8_t r1[1024], r2[1024], r3[1024];

	make_file_rec(v + 8192, 40, 1, 7);                 /* good */
	make_file_rec(v + 16384, 0, 0, 4);                 /* unused, number 0 */
	make_file_rec(r1, 5, 1, 3);
	make_file_rec(r2, 6, 1, 10);
	make_file_rec(r3, 7, 1, 21);
	for (int i = 0; i < 1024; i++)                     /* parity of three */
		v[32768 + i] = r1[i] ^ r2[i] ^ r3[i];
	make_file_rec(v + 40960, 41, 1, 5);                /* broken chain */
	put_le32(v + 40960 + 56, 0x15);
	struct dctx *c = scan_single(v, size, mm, dv);
	CHECK(count_anchor(c, AK_NTFS_FILE, 40 * 1024, 8192) == 1, "NTFS record 40 (no boot sector)");
	CHECK(count_anchor(c, AK_NTFS_FILE, 0, 16384) == 0, "unused record numbered 0 accepted");
	int phantom = 0;
	for (int i = 0; i < c->nanc; i++)
		phantom += c->anc[i].off == 32768 || c->anc[i].off == 40960;
	CHECK(phantom == 0, "XOR of three FILE records or a broken attribute chain accepted (%d)", phantom);
	ctx_done(c);
	/* each of the three alone is a record */
	memcpy(v + 32768, r2, 1024);
	c = scan_single(v, size, mm, dv);
	CHECK(count_anchor(c, AK_NTFS_FILE, 6 * 1024, 32768) == 1, "NTFS record 6");
	ctx_done(c);
	free(v);
}

/* Pilot on sparse content (an empty file system): a RAID6 with data in a
 * few sectors only is still classed RAID6; rows of 0xff fill are no
 * evidence. */
static void t_pilot_sparse(void)
{
	uint64_t alen = 4u << 20, mb;
	uint8_t *content = calloc(1, alen);
	uint32_t C = 65536;
	for (int i = 0; i < 5; i++)
		fill_random(content + (uint64_t)i * 3 * C + 1024 * (uint64_t)i, 512);
	uint8_t **m = build_array(6, LAYOUT_ROTATING_N_RESTART, 6, C, 0, content, alen, &mb);
	struct mem mm[6];
	struct dev_reader dv[6];
	struct dctx *c = ctx_over(m, 6, mb, mm, dv);
	CHECK(c->par.cls == PC_R6 && c->par.nmembers == 6, "sparse RAID6: class %d members %d", c->par.cls,
	      c->par.nmembers);
	int gf = 0;
	for (int i = 0; i < c->par.nrows; i++)
		gf += c->par.rows[i].dim == 2;
	CHECK(gf >= 5, "sparse RAID6: %d rows analysed with two relations", gf);
	ctx_done(c);
	for (int r = 0; r < 6; r++)
		free(m[r]);
	free(m);
	/* RAID5 of 4, one missing, mostly 0xff fill: not RAID6 */
	memset(content, 0xff, alen);
	fill_text(content + (1u << 20), 1u << 20);
	m = build_array(5, LAYOUT_LEFT_SYMMETRIC, 4, C, 0, content, alen, &mb);
	c = ctx_over(m, 3, mb, mm, dv);
	CHECK(c->par.cls != PC_R6 && c->par.cls != PC_R6M1, "0xff fill read as RAID6 (class %d)", c->par.cls);
	ctx_done(c);
	for (int r = 0; r < 4; r++)
		free(m[r]);
	free(m);
	free(content);
}

/* a ustar header of a file of len bytes */
static void make_tar_header(uint8_t *h, const char *name, unsigned len)
{
	memset(h, 0, 512);
	snprintf((char *)h, 100, "%s", name);
	memcpy(h + 100, "0000644", 7);
	snprintf((char *)h + 124, 12, "%011o", len);
	memcpy(h + 136, "14573162000", 11);
	h[156] = '0';
	memcpy(h + 257, "ustar", 5);
	memcpy(h + 263, "00", 2);
	unsigned sum = 0;
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/* The tar chase through headers that other chunks of the row hold at the
 * same place (small files: a 16 KiB chunk holds about ten headers, so most
 * steps meet another chunk's header at the same offset).  Random file data:
 * the chase alone orders. */
static void t_tar_chase(void)
{
	uint64_t alen = 3u << 20, mb;
	uint8_t *content = calloc(1, alen);
	uint32_t C = 16384;
	int n = 5;
	uint64_t a = 0;
	for (int f = 0;; f++) {
		unsigned len = 100 + rnd32() % 3000;
		uint64_t next = a + 512 + (len + 511) / 512 * 512;
		if (next + 1024 > alen)
			break;
		char name[64];
		snprintf(name, sizeof(name), "dir/f%05d", f);
		make_tar_header(content + a, name, len);
		fill_random(content + a + 512, len);
		a = next;
	}
	uint8_t **m = build_array(5, LAYOUT_RIGHT_ASYMMETRIC, n, C, 0, content, alen, &mb);
	int perm[5] = { 2, 4, 0, 3, 1 };   /* image i holds role perm[i] */
	uint8_t *img[5];
	for (int i = 0; i < 5; i++)
		img[i] = m[perm[i]];
	char err[256];
	int rc;
	struct detect_result *res = run_detect(img, 5, mb, NULL, &rc, err, sizeof(err));
	CHECK(rc == 0 && res->ncand > 0, "rc %d %s", rc, err);
	if (rc == 0 && res->ncand > 0) {
		const struct detect_candidate *cd = &res->cand[0];
		bool ok = cd->level == 5 && cd->layout == LAYOUT_RIGHT_ASYMMETRIC && cd->chunk_bytes == C &&
			  cd->data_offset == 0 && cd->raid_disks == 5;
		for (int r = 0; r < 5 && ok; r++)
			ok = perm[cd->order[r]] == r;
		CHECK(ok, "tar chase: level %d layout %d chunk %u order %d,%d,%d,%d,%d", cd->level, cd->layout,
		      cd->chunk_bytes, cd->order[0], cd->order[1], cd->order[2], cd->order[3], cd->order[4]);
		CHECK(res->verdict != DETECT_AMBIGUOUS, "tar chase: verdict %s: %s", detect_verdict_name(res->verdict),
		      res->reason);
	}
	free(res);
	for (int r = 0; r < n; r++)
		free(m[r]);
	free(m);
	free(content);
}

/* XFS v5 directory blocks (self-describing: their own sector address) in a
 * mostly empty array: one sector per data chunk, at a different chunk
 * offset in each chunk of a row.  RAID6 missing one member: the chunks of
 * the missing member show only as P copies (their row's other chunks are
 * zero there), which the geometry must count as explained; RAID5 missing
 * one: a RAID6 missing two (which would explain copies too) is refuted by
 * the rows whose XOR is zero. */
static void fill_xfs_blocks(uint8_t *content, uint64_t alen, uint32_t C)
{
	static const uint8_t uuid[16] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6 };
	for (uint64_t ci = 0; (ci + 1) * C <= alen; ci++) {
		uint64_t x = ci * C + 512 * (ci % 7) + 4096 * (ci % 3);
		uint8_t *p = content + x;
		memcpy(p, "XDB3", 4);
		put_be64(p + 8, x / 512);
		memcpy(p + 24, uuid, 16);
		fill_random(p + 64, 448);
	}
}

static void t_copies_of_missing(void)
{
	char err[256];
	int rc;
	for (int pass = 0; pass < 2; pass++) {
		int level = pass ? 5 : 6, n = pass ? 4 : 6;
		uint32_t C = 32768;
		uint64_t alen = 8u << 20, mb;
		uint8_t *content = calloc(1, alen);
		fill_xfs_blocks(content, alen, C);
		int layout = pass ? LAYOUT_LEFT_ASYMMETRIC : LAYOUT_RIGHT_ASYMMETRIC_6;
		uint8_t **m = build_array(level, layout, n, C, 0, content, alen, &mb);
		/* images: roles shuffled, role 1 missing */
		int perm6[5] = { 3, 0, 5, 2, 4 }, perm5[3] = { 2, 0, 3 };
		int *perm = pass ? perm5 : perm6;
		int ni = n - 1;
		uint8_t *img[6];
		for (int i = 0; i < ni; i++)
			img[i] = m[perm[i]];
		struct detect_result *res = run_detect(img, ni, mb, NULL, &rc, err, sizeof(err));
		CHECK(rc == 0 && res->ncand > 0, "rc %d %s", rc, err);
		if (rc == 0 && res->ncand > 0) {
			const struct detect_candidate *cd = &res->cand[0];
			bool ok = cd->level == level && cd->chunk_bytes == C && cd->data_offset == 0 &&
				  cd->raid_disks == n && cd->layout == layout;
			for (int r = 0; r < n && ok; r++)
				ok = r == 1 ? cd->order[r] < 0 : (cd->order[r] >= 0 && perm[cd->order[r]] == r);
			CHECK(ok, "sparse XFS RAID%d missing role 1: level %d layout %d disks %d chunk %u order %d,%d,%d,%d",
			      level, cd->level, cd->layout, cd->raid_disks, cd->chunk_bytes, cd->order[0], cd->order[1],
			      cd->order[2], cd->order[3]);
		}
		free(res);
		for (int r = 0; r < n; r++)
			free(m[r]);
		free(m);
		free(content);
	}
}

/* RAID6 missing two, sparse content: the rows holding a data chunk and its
 * Q copy (a GF multiple) name Q and the chunk's slot, which no RAID5 reading
 * explains. */
static void t_q_copies(void)
{
	char err[256];
	int rc;
	uint32_t C = 32768;
	int n = 5;
	uint64_t alen = 8u << 20, mb;
	uint8_t *content = calloc(1, alen);
	fill_xfs_blocks(content, alen, C);
	uint8_t **m = build_array(6, LAYOUT_LEFT_SYMMETRIC, n, C, 0, content, alen, &mb);
	int perm[3] = { 4, 0, 2 };   /* roles 1 and 3 missing */
	uint8_t *img[3];
	for (int i = 0; i < 3; i++)
		img[i] = m[perm[i]];
	struct detect_result *res = run_detect(img, 3, mb, NULL, &rc, err, sizeof(err));
	CHECK(rc == 0 && res->ncand > 0, "rc %d %s", rc, err);
	if (rc == 0 && res->ncand > 0) {
		const struct detect_candidate *cd = &res->cand[0];
		bool ok = cd->level == 6 && cd->layout == LAYOUT_LEFT_SYMMETRIC && cd->chunk_bytes == C &&
			  cd->data_offset == 0 && cd->raid_disks == n;
		for (int r = 0; r < n && ok; r++)
			ok = (r == 1 || r == 3) ? cd->order[r] < 0 : (cd->order[r] >= 0 && perm[cd->order[r]] == r);
		CHECK(ok, "sparse RAID6 missing two: level %d layout %d disks %d chunk %u order %d,%d,%d,%d,%d", cd->level,
		      cd->layout, cd->raid_disks, cd->chunk_bytes, cd->order[0], cd->order[1], cd->order[2], cd->order[3],
		      cd->order[4]);
	}
	free(res);
	for (int r = 0; r < n; r++)
		free(m[r]);
	free(m);
	free(content);
}

/* hostile input: never a crash, errors named */
/* --max-read bounds what each image gives, whichever way the read plan
 * goes (content in the head, content first found by a probe, nothing
 * found), and the count reported is what the reader really handed out. */
static void t_read_budget(void)
{
	const uint32_t C = 65536;
	const int n = 4;
	struct {
		const char *what;
		uint64_t data_offset;   /* where the array's content starts */
		uint64_t max_read;
		bool blank;             /* content all zeros */
	} cases[] = {
		{ "content in the head", 512u << 10, 4u << 20, false },
		{ "content found by the 16 MiB probe", 16u << 20, 4u << 20, false },
		{ "nothing anywhere", 16u << 20, 4u << 20, true },
		{ "an odd budget", 512u << 10, (3u << 20) + 1000, false },
	};
	for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
		uint64_t alen = 60u << 20, mb;   /* 20 MiB of it per member */
		uint8_t *content = calloc(1, alen);
		if (!cases[t].blank)
			fill_text(content, alen);
		uint8_t **m = build_array(5, LAYOUT_LEFT_SYMMETRIC, n, C, cases[t].data_offset, content, alen, &mb);
		struct detect_hints h;
		detect_hints_init(&h);
		h.max_read = cases[t].max_read;
		char err[256] = "";
		int rc;
		struct detect_result *res = run_detect(m, n, mb, &h, &rc, err, sizeof(err));
		CHECK(mb > 2 * h.max_read, "%s: images of %llu bytes are larger than the budget", cases[t].what,
		      (unsigned long long)mb);
		for (int i = 0; i < n; i++) {
			CHECK(last_given[i] <= h.max_read, "%s: image %d gave %llu bytes, budget %llu", cases[t].what, i,
			      (unsigned long long)last_given[i], (unsigned long long)h.max_read);
			CHECK(last_given[i] + (1u << 20) > h.max_read, "%s: image %d gave only %llu bytes of %llu",
			      cases[t].what, i, (unsigned long long)last_given[i], (unsigned long long)h.max_read);
			CHECK(rc != 0 || res->bytes_read[i] == last_given[i],
			      "%s: image %d: reported %llu bytes read, the reader gave %llu", cases[t].what, i,
			      (unsigned long long)res->bytes_read[i], (unsigned long long)last_given[i]);
		}
		free(res);
		for (int r = 0; r < n; r++)
			free(m[r]);
		free(m);
		free(content);
	}
}

static void t_hostile(void)
{
	char err[256];
	int rc;
	struct detect_result *res = malloc(sizeof(*res));
	struct detect_hints h;

	detect_hints_init(&h);
	/* too few images */
	uint8_t small[8192] = { 0 };
	struct mem mm[3] = { { small, sizeof(small), -1 }, { small, sizeof(small), -1 }, { small, 100, -1 } };
	struct dev_reader dv[3] = { { sizeof(small), mem_read, &mm[0], 0 }, { sizeof(small), mem_read, &mm[1], 0 },
				    { 100, mem_read, &mm[2], 0 } };
	rc = detect_run(dv, 1, &h, res, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "images"), "one image: rc %d '%s'", rc, err);
	/* bad hints */
	h.level = 7;
	rc = detect_run(dv, 2, &h, res, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "level"), "level 7: rc %d '%s'", rc, err);
	detect_hints_init(&h);
	h.chunk_bytes = 3000;
	rc = detect_run(dv, 2, &h, res, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "chunk"), "chunk 3000: rc %d '%s'", rc, err);
	detect_hints_init(&h);
	h.data_offset = 100;
	rc = detect_run(dv, 2, &h, res, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "data-offset"), "offset 100: rc %d '%s'", rc, err);
	/* all-zero images: an answer, ambiguous */
	detect_hints_init(&h);
	rc = detect_run(dv, 2, &h, res, err, sizeof(err));
	CHECK(rc == 0 && res->verdict == DETECT_AMBIGUOUS, "zeros: rc %d verdict %d", rc, res->verdict);
	/* an image shorter than 4 KiB among others, tiny images */
	rc = detect_run(dv, 3, &h, res, err, sizeof(err));
	CHECK(rc == 0 || rc == -EINVAL, "tiny image: rc %d", rc);
	/* a reader that fails: the error names the image */
	uint64_t sz = 3u << 20;
	uint8_t *b1 = calloc(1, sz), *b2 = calloc(1, sz), *b3 = calloc(1, sz);
	fill_random(b1, sz);
	fill_random(b2, sz);
	for (uint64_t i = 0; i < sz; i++)
		b3[i] = b1[i] ^ b2[i];
	struct mem m3[3] = { { b1, sz, -1 }, { b2, sz, 2 }, { b3, sz, -1 } };
	struct dev_reader d3[3] = { { sz, mem_read, &m3[0], 0 }, { sz, mem_read, &m3[1], 0 }, { sz, mem_read, &m3[2], 0 } };
	rc = detect_run(d3, 3, &h, res, err, sizeof(err));
	CHECK(rc == -EIO && strstr(err, "image 1"), "read error: rc %d '%s'", rc, err);
	/* sizes that lie: a reader whose size is larger than its data */
	m3[1].fail_at = -1;
	d3[2].size = sz * 4;
	rc = detect_run(d3, 3, &h, res, err, sizeof(err));
	CHECK(rc == -EIO || rc == 0, "lying size: rc %d", rc);
	/* garbage with signatures everywhere: no crash */
	d3[2].size = sz;
	for (uint64_t o = 0; o + 512 <= sz; o += 512) {
		memcpy(b1 + o, (o / 512) % 3 ? "FILE" : "XFSB", 4);
		b1[o + 56] = 0x53;
		b1[o + 57] = 0xEF;
		b1[o + 510] = 0x55;
		b1[o + 511] = 0xAA;
		memcpy(b1 + o + 257, "ustar", 5);
	}
	for (uint64_t i = 0; i < sz; i++)
		b3[i] = b1[i] ^ b2[i];
	rc = detect_run(d3, 3, &h, res, err, sizeof(err));
	CHECK(rc == 0, "signature soup: rc %d '%s'", rc, err);
	free(b1);
	free(b2);
	free(b3);
	free(res);
}

START_TEST(t_gf_nullspace_test)
{
	int f0 = failed;

	t_gf_nullspace();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_raid6_slots_test)
{
	int f0 = failed;

	t_raid6_slots();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_ext4_anchor_test)
{
	int f0 = failed;

	t_ext4_anchor();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_labels_test)
{
	int f0 = failed;

	t_labels();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_ntfs_fat_xfs_test)
{
	int f0 = failed;

	t_ntfs_fat_xfs();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_ntfs_records_test)
{
	int f0 = failed;

	t_ntfs_records();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_pilot_sparse_test)
{
	int f0 = failed;

	t_pilot_sparse();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_tar_chase_test)
{
	int f0 = failed;

	t_tar_chase();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_copies_of_missing_test)
{
	int f0 = failed;

	t_copies_of_missing();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_q_copies_test)
{
	int f0 = failed;

	t_q_copies();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_tar_test)
{
	int f0 = failed;

	t_tar();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_seam_test)
{
	int f0 = failed;

	t_seam();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_pipeline_test)
{
	int f0 = failed;

	t_pipeline();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_hostile_test)
{
	int f0 = failed;

	t_hostile();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

START_TEST(t_read_budget_test)
{
	int f0 = failed;

	t_read_budget();
	ck_assert_msg(failed == f0, "%d checks failed (see above)", failed - f0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("detect");
	TCase *tc = tcase_create("detect");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, t_gf_nullspace_test);
	tcase_add_test(tc, t_raid6_slots_test);
	tcase_add_test(tc, t_ext4_anchor_test);
	tcase_add_test(tc, t_labels_test);
	tcase_add_test(tc, t_ntfs_fat_xfs_test);
	tcase_add_test(tc, t_ntfs_records_test);
	tcase_add_test(tc, t_pilot_sparse_test);
	tcase_add_test(tc, t_tar_chase_test);
	tcase_add_test(tc, t_copies_of_missing_test);
	tcase_add_test(tc, t_q_copies_test);
	tcase_add_test(tc, t_tar_test);
	tcase_add_test(tc, t_seam_test);
	tcase_add_test(tc, t_pipeline_test);
	tcase_add_test(tc, t_hostile_test);
	tcase_add_test(tc, t_read_budget_test);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
