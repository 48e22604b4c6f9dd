/* fuzz_parttable.c - partition tables (src/core/parttable.c): pt_parse.
 * Input: one control byte, then the image.  Control bits:
 *   0x01 recompute the primary GPT header and entry array CRCs (so mutations
 *        get past the CRC checks), 0x02 backup header likewise,
 *   0x04 sector size 4096 forced, 0x08 PT_ALLOW_TRUNCATED,
 *   0x10 the image is larger than the data: zeros follow, up to
 *        data + 512 * (next 2 bytes) bytes.
 * Properties: no crash; a table read has partitions inside the image (or
 * marked truncated), numbered, not overlapping; a refusal says why. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "fuzz.h"
#include "parttable.h"

struct fz { const uint8_t *p; size_t n; };

static int fz_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct fz *f = ctx;
	size_t have = 0;

	/* the dev_reader size was checked by the caller; beyond the data: zeros */
	if (off < f->n) {
		have = f->n - off < len ? f->n - off : len;
		memcpy(buf, f->p + off, have);
	}
	memset((uint8_t *)buf + have, 0, len - have);
	return 0;
}

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static void fix_crcs(uint8_t *img, size_t n, size_t ss, uint64_t lba)
{
	uint8_t *h;
	uint64_t elba, bytes;
	uint32_t hs, crc;

	if (lba >= n / ss || ss < 92)
		return;
	h = img + lba * ss;
	elba = rd64(h + 72);
	bytes = (uint64_t)rd32(h + 80) * rd32(h + 84);
	if (elba < n / ss && bytes <= n - elba * ss) {
		crc = crc32_update(0, img + elba * ss, (size_t)bytes);
		memcpy(h + 88, &crc, 4);
	}
	hs = rd32(h + 12);
	if (hs < 92 || hs > ss)
		hs = 92;
	memset(h + 16, 0, 4);
	crc = crc32_update(0, h, hs);
	memcpy(h + 16, &crc, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_table t;
	struct dev_reader d;
	struct fz f;
	char err[512];
	uint8_t ctl, *img;
	size_t n, ss;
	uint64_t extra = 0;

	if (size < 1 || size > (4u << 20))
		return 0;
	ctl = data[0];
	data++;
	size--;
	if ((ctl & 0x10) && size >= 2) {
		extra = 512ull * (data[0] | (data[1] << 8));
		data += 2;
		size -= 2;
	}
	n = size;
	img = malloc(n ? n : 1);
	if (!img)
		return 0;
	memcpy(img, data, n);
	ss = (ctl & 0x04) ? 4096 : 512;
	if (ctl & 0x01)
		fix_crcs(img, n, ss, 1);
	if ((ctl & 0x02) && n + extra >= ss)
		fix_crcs(img, n, ss, (n + extra) / ss - 1);
	f.p = img;
	f.n = n;
	d.size = n + extra;
	d.read = fz_read;
	d.ctx = &f;
	d.hints = 0;
	if (pt_parse(&d, (ctl & 0x04) ? 4096 : 0, (ctl & 0x08) ? PT_ALLOW_TRUNCATED : 0, &t, err, sizeof(err)) == 0) {
		for (unsigned i = 0; i < t.nparts; i++) {
			const struct pt_part *p = &t.parts[i];

			if (!p->number || (!p->truncated && (p->start > d.size || p->length > d.size - p->start)))
				fuzz_fail("partition %u at %llu+%llu of %llu bytes", p->number,
					  (unsigned long long)p->start, (unsigned long long)p->length,
					  (unsigned long long)d.size);
			for (unsigned j = 0; j < i; j++) {
				const struct pt_part *q = &t.parts[j];

				if (!p->is_extended && !q->is_extended && !(p->is_logical && q->is_extended) &&
				    p->length && q->length && p->start < q->start + q->length &&
				    q->start < p->start + p->length)
					fuzz_fail("partitions %u and %u overlap", q->number, p->number);
			}
		}
		pt_table_free(&t);
	} else if (!err[0]) {
		fuzz_fail("a refusal without a message");
	}
	free(img);
	return 0;
}
