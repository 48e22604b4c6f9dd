/* fuzz_detect.c - raidimg detect's core (detect_run: the sampling, the
 * parity analysis, every file-system and partition-table scanner, the seam
 * model, the solver) over member images made from the input.  Links only
 * the pure core.
 *
 * Input: u8 shape, u8 geometry, u8 hints, u8 size, then the array's
 * content (the rest; zeros after it).
 *   shape: bits 0-2 members - 3 (3..10); bit 3 RAID6 (else 5); bit 4 one
 *          member left out; bit 5 a second one left out (RAID6); bit 6 a
 *          foreign image (the content again, unstriped) added; bit 7 the
 *          images' roles reversed
 *   geometry: bits 0-2 chunk 4K << n (4K..512K); bits 3-5 layout (an index
 *          into the level's md layouts); bits 6-7 data offset 0, 63 sectors,
 *          64K, 1M
 *   hints: bits 0-1 level hint (none, 4, 5, 6); bit 2 the true chunk as a
 *          hint; bit 3 the true member count; bit 4 the true data offset;
 *          bits 5-7 --max-read 1M << n (0: the default)
 *   size: each image is D + (size % 64 + 1) * 16 KiB (at most 1 MiB of data)
 * Properties: no crash, no read outside an image (the readers check), a
 * result that makes sense: 0 or -EINVAL (bad hints only), candidates with a
 * level of 4..6, a known layout, a power-of-two chunk, an order naming
 * existing images at most once, at most two missing roles, NUL-terminated
 * texts, excluded images that exist, bytes read within the images and the
 * --max-read budget; detect_array_args works for every candidate.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "detect.h"
#include "fuzz.h"
#include "layout.h"
#include "parity.h"

#define MAXN 10

struct img {
	const uint8_t *buf;
	uint64_t size;
};

static int img_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct img *m = ctx;

	if (off > m->size || len > m->size - off)
		fuzz_fail("read of %zu bytes at %llu past the image's end (%llu)", len, (unsigned long long)off,
			  (unsigned long long)m->size);
	memcpy(buf, m->buf + off, len);
	return 0;
}

static const int r5_layouts[] = { 0, 1, 2, 3, 4, 5 };
static const int r6_layouts[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20 };

static void check_text(const char *s, size_t len, const char *what)
{
	if (!memchr(s, '\0', len))
		fuzz_fail("%s is not NUL-terminated", what);
}

static void check_result(const struct detect_result *res, int nimg, const uint64_t *sizes, uint64_t budget)
{
	if (res->verdict != DETECT_CERTAIN && res->verdict != DETECT_LIKELY && res->verdict != DETECT_AMBIGUOUS)
		fuzz_fail("verdict %d", (int)res->verdict);
	check_text(res->reason, sizeof(res->reason), "reason");
	if (res->ncand < 0 || res->ncand > DETECT_MAX_CANDIDATES)
		fuzz_fail("%d candidates", res->ncand);
	if (res->verdict != DETECT_AMBIGUOUS && res->ncand == 0)
		fuzz_fail("verdict %s without a candidate", detect_verdict_name(res->verdict));
	for (int i = 0; i < res->ncand; i++) {
		const struct detect_candidate *c = &res->cand[i];
		struct layout_geom g = { c->level, c->layout, c->raid_disks, c->chunk_bytes };
		int seen[DETECT_MAX_IMAGES] = { 0 }, missing = 0, nw = 0;
		char buf[1024];
		const char *w[32], *why = "";

		if (c->level < 4 || c->level > 6)
			fuzz_fail("candidate %d: level %d", i, c->level);
		if (c->raid_disks < 3 || c->raid_disks > DETECT_MAX_DISKS)
			fuzz_fail("candidate %d: %d members", i, c->raid_disks);
		if (!c->chunk_bytes || (c->chunk_bytes & (c->chunk_bytes - 1)) || c->chunk_bytes < 4096)
			fuzz_fail("candidate %d: chunk %u", i, c->chunk_bytes);
		if (c->data_offset % 512)
			fuzz_fail("candidate %d: data offset %llu", i, (unsigned long long)c->data_offset);
		if (layout_check(&g, &why))
			fuzz_fail("candidate %d: level %d layout %d: %s", i, c->level, c->layout, why);
		for (int r = 0; r < c->raid_disks; r++) {
			if (c->order[r] < 0) {
				missing++;
				continue;
			}
			if (c->order[r] >= nimg)
				fuzz_fail("candidate %d: role %d is image %d of %d", i, r, c->order[r], nimg);
			if (seen[c->order[r]]++)
				fuzz_fail("candidate %d: image %d in two roles", i, c->order[r]);
		}
		if (missing > (c->level == 6 ? 2 : 1))
			fuzz_fail("candidate %d: RAID%d with %d missing roles", i, c->level, missing);
		if (c->nevidence < 0 || c->nevidence > DETECT_MAX_EVIDENCE)
			fuzz_fail("candidate %d: %d evidence lines", i, c->nevidence);
		for (int e = 0; e < c->nevidence; e++)
			check_text(c->evidence[e], DETECT_TEXT, "evidence");
		if (detect_array_args(c, buf, sizeof(buf), w, 32, &nw) || nw < 8)
			fuzz_fail("candidate %d: detect_array_args failed (%d words)", i, nw);
	}
	if (res->nexcluded < 0 || res->nexcluded > nimg)
		fuzz_fail("%d excluded of %d images", res->nexcluded, nimg);
	for (int i = 0; i < res->nexcluded; i++) {
		if (res->excluded[i].image < 0 || res->excluded[i].image >= nimg)
			fuzz_fail("excluded image %d", res->excluded[i].image);
		check_text(res->excluded[i].why, DETECT_TEXT, "why");
	}
	for (int i = 0; i < nimg; i++) {
		if (res->bytes_read[i] > sizes[i])
			fuzz_fail("image %d: %llu bytes read of %llu", i, (unsigned long long)res->bytes_read[i],
				  (unsigned long long)sizes[i]);
		if (budget && res->bytes_read[i] > budget)
			fuzz_fail("image %d: %llu bytes read, --max-read %llu", i,
				  (unsigned long long)res->bytes_read[i], (unsigned long long)budget);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t shape = fuzz_u8(&in), geo = fuzz_u8(&in), hint = fuzz_u8(&in), szsel = fuzz_u8(&in);
	size_t clen;
	const uint8_t *content = fuzz_bytes(&in, 8u << 20, &clen);
	static const uint64_t doffs[] = { 0, 63 * 512, 64 << 10, 1 << 20 };
	int n = 3 + (shape & 7), level = shape & 8 ? 6 : 5;
	const int *lays = level == 6 ? r6_layouts : r5_layouts;
	int nlays = level == 6 ? (int)(sizeof(r6_layouts) / sizeof(int)) : (int)(sizeof(r5_layouts) / sizeof(int));
	struct layout_geom g;
	struct stripe_map m;
	uint64_t D = doffs[geo >> 6], data_bytes, mb;
	uint8_t *mem[MAXN + 1] = { NULL };
	struct img im[MAXN + 1];
	struct dev_reader dev[MAXN + 1];
	uint64_t sizes[MAXN + 1];
	struct detect_hints h;
	struct detect_result *res = NULL;
	int nimg = 0, drop[2] = { -1, -1 }, idx[MAXN + 1], rc;
	char err[512];

	if (level == 6 && n < 4)
		n = 4;
	g = (struct layout_geom){ level, lays[((geo >> 3) & 7) % nlays], n, 4096u << (geo & 7) };
	if (layout_check(&g, NULL))
		return 0;
	data_bytes = ((uint64_t)(szsel % 64) + 1) * (16u << 10);
	data_bytes = (data_bytes + g.chunk_bytes - 1) / g.chunk_bytes * g.chunk_bytes;
	mb = D + data_bytes;
	for (int r = 0; r <= n; r++) {
		mem[r] = aligned_alloc(64, mb);    /* parity's buffers: 32-byte aligned */
		if (!mem[r])
			goto out;
		memset(mem[r], 0, mb);
	}
	/* the content striped over the members as md would, parity computed */
	for (uint64_t s = 0; s < data_bytes / g.chunk_bytes; s++) {
		uint8_t *slots[LAYOUT_MAX_DISKS];
		uint64_t mo = D + s * g.chunk_bytes;
		int k;

		layout_map_stripe(&g, s, &m);
		k = m.k;
		for (int d = 0; d < k; d++) {
			uint64_t a = (s * (uint64_t)k + (uint64_t)d) * g.chunk_bytes;

			if (a < clen)
				memcpy(mem[m.data_disk[d]] + mo, content + a,
				       clen - a < g.chunk_bytes ? clen - a : g.chunk_bytes);
		}
		for (int i = 0; i < m.q_slots; i++)
			slots[i] = NULL;    /* ddf layouts: slots of no member count as zeros */
		for (int r = 0; r < n; r++)
			if (m.disk_slot[r] >= 0)
				slots[m.disk_slot[r]] = mem[r] + mo;
		if (level == 6)
			parity_gen_pq(m.q_slots, g.chunk_bytes, slots, mem[m.p_disk] + mo, mem[m.q_disk] + mo);
		else
			parity_gen_p(m.q_slots, g.chunk_bytes, slots, mem[m.p_disk] + mo);
	}
	/* a foreign image: the content as it is */
	if (shape & 0x40)
		memcpy(mem[n] + D, content, clen < data_bytes ? clen : data_bytes);
	if (shape & 0x10)
		drop[0] = geo % n;
	if ((shape & 0x20) && level == 6)
		drop[1] = (geo / 3 + 1 + drop[0]) % n;
	for (int r = 0; r < n; r++)
		if (r != drop[0] && r != drop[1])
			idx[nimg++] = r;
	if (shape & 0x40)
		idx[nimg++] = n;
	for (int i = 0; i < nimg; i++) {
		int r = shape & 0x80 ? idx[nimg - 1 - i] : idx[i];

		im[i] = (struct img){ mem[r], mb };
		sizes[i] = mb;
		dev[i] = (struct dev_reader){ .size = mb, .read = img_read, .ctx = &im[i] };
	}
	detect_hints_init(&h);
	h.level = (int[]){ 0, 4, 5, 6 }[hint & 3];
	if (hint & 4)
		h.chunk_bytes = g.chunk_bytes;
	if (hint & 8)
		h.devices = n;
	if (hint & 16)
		h.data_offset = (int64_t)D;
	h.max_read = (hint >> 5) ? (1ull << 20) << (hint >> 5) : 0;
	res = malloc(sizeof(*res));
	if (!res)
		goto out;
	rc = detect_run(dev, nimg, &h, res, err, sizeof(err));
	if (rc == -ENOMEM)
		goto out;
	if (rc)
		fuzz_fail("detect_run: %d (%s)", rc, err);
	check_result(res, nimg, sizes, h.max_read);
out:
	free(res);
	for (int r = 0; r <= n; r++)
		free(mem[r]);
	return 0;
}
