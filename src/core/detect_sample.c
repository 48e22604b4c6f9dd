/* detect_sample.c - the bounded read plan.
 *
 * Every window is read at the same image offsets on every image (rows of an
 * array sit at the same offset on every member, since md uses one
 * data_offset), so any analysis can compare images byte for byte.
 *
 * Plan, with B = the per-image budget:
 *  - images no larger than B: read whole (one window);
 *  - else a head window [0, min(B/4, 8 MiB)), small probes (64 KiB) at the
 *    data offsets mdadm picks for large devices (they lie past the head), and
 *    the rest of the budget as one main window where the content starts:
 *    right after the head when it holds data, else at the first probe that
 *    found any.
 * Windows grow in place (win_extend) instead of being read again, so an
 * image gives at most B bytes in all, each counted (bytes_read) when read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect_int.h"

#define PROBE_LEN (64u << 10)

/* Read [from, w->len) of window w (relative to w->off) from every image,
 * zeros past an image's end; counts what it reads. */
static int win_read(struct dctx *c, struct dwin *w, uint64_t from)
{
	for (int i = 0; i < c->nimg; i++) {
		uint64_t have = c->size[i] > w->off ? c->size[i] - w->off : 0;
		if (have > w->len)
			have = w->len;
		if (have < w->len)   /* past the image's end */
			memset(w->buf[i] + (have > from ? have : from), 0, w->len - (have > from ? have : from));
		/* read in pieces of at most 8 MiB so a reader never sees a huge len */
		for (uint64_t done = from; done < have;) {
			size_t n = have - done > (8u << 20) ? (8u << 20) : (size_t)(have - done);
			int rc = c->dev[i].read(c->dev[i].ctx, w->buf[i] + done, n, w->off + done);
			if (rc < 0) {
				fmt_err(c->err, c->errlen, "image %d: read of %zu bytes at offset %llu failed (%d)",
				     i, n, (unsigned long long)(w->off + done), rc);
				return rc;
			}
			done += n;
			c->bytes_read[i] += n;
		}
	}
	return 0;
}

/* The length of a window at off asked to be len: clamped to the largest
 * image, whole sectors. */
static uint64_t win_len(const struct dctx *c, uint64_t off, uint64_t len)
{
	if (len > c->maxsize - off)
		len = c->maxsize - off;
	return (len + SECT - 1) / SECT * SECT;
}

static int win_add(struct dctx *c, uint64_t off, uint64_t len)
{
	struct dwin *w;

	if (c->nwin >= DW_MAX || len == 0)
		return 0;
	if (off >= c->maxsize)
		return 0;
	w = &c->win[c->nwin];
	memset(w, 0, sizeof(*w));
	w->off = off;
	w->len = win_len(c, off, len);
	c->nwin++;   /* from here on the window's buffers are the context's to free */
	for (int i = 0; i < c->nimg; i++) {
		w->buf[i] = aligned_alloc(64, w->len);
		if (!w->buf[i])
			return -ENOMEM;
	}
	return win_read(c, w, 0);
}

/* Grow window w to len bytes, reading only what it did not hold. */
static int win_extend(struct dctx *c, struct dwin *w, uint64_t len)
{
	uint8_t *nb[MAXI];
	uint64_t old = w->len;

	len = win_len(c, w->off, len);
	if (len <= old)
		return 0;
	for (int i = 0; i < c->nimg; i++) {
		nb[i] = aligned_alloc(64, len);
		if (!nb[i]) {
			while (i-- > 0)
				free(nb[i]);
			return -ENOMEM;
		}
	}
	for (int i = 0; i < c->nimg; i++) {
		memcpy(nb[i], w->buf[i], old);
		free(w->buf[i]);
		w->buf[i] = nb[i];
	}
	w->len = len;
	return win_read(c, w, old);
}

/* Does window w hold anything nonzero at or past image offset from? */
static bool win_nonzero_from(const struct dctx *c, const struct dwin *w, uint64_t from)
{
	if (from < w->off)
		from = w->off;
	for (int i = 0; i < c->nimg; i++)
		for (uint64_t o = from; o < w->off + w->len; o += SECT)
			if (!all_zero(w->buf[i] + (o - w->off), SECT))
				return true;
	return false;
}

/* Data offsets mdadm 1.1/1.2 chooses (see FACTS.md), plus other common
 * starts; ascending. */
static const uint64_t probe_offsets[] = {
	9ull << 20, 16ull << 20, 17ull << 20, 32ull << 20, 33ull << 20, 64ull << 20,
	65ull << 20, 128ull << 20, 129ull << 20, 256ull << 20,
};

int sample_read(struct dctx *c)
{
	uint64_t B = c->h.max_read ? c->h.max_read : (32ull << 20);
	int rc;

	if (B < (1u << 20))
		B = 1u << 20;
	B = B / SECT * SECT;
	if (c->maxsize <= B) {
		c->whole = true;
		return win_add(c, 0, c->maxsize);
	}
	uint64_t head = B / 4 < (8u << 20) ? B / 4 : (8u << 20);
	head = head / SECT * SECT;
	rc = win_add(c, 0, head);
	if (rc)
		return rc;
	uint64_t used = head;
	uint64_t start = head;
	bool head_has_data = win_nonzero_from(c, &c->win[0], 256u << 10);
	if (!head_has_data) {
		for (size_t i = 0; i < sizeof(probe_offsets) / sizeof(probe_offsets[0]); i++) {
			uint64_t o = probe_offsets[i];
			if (o < head || o + PROBE_LEN > c->maxsize || used + PROBE_LEN > B / 2)
				continue;
			rc = win_add(c, o, PROBE_LEN);
			if (rc)
				return rc;
			used += PROBE_LEN;
			if (win_nonzero_from(c, &c->win[c->nwin - 1], o)) {
				start = o;
				break;
			}
		}
	}
	if (start == head)   /* the content starts in the head: extend it */
		return win_extend(c, &c->win[0], B - (used - head));
	/* the probe at start grows into the main window */
	return win_extend(c, &c->win[c->nwin - 1], PROBE_LEN + (B - used));
}

const uint8_t *sp(const struct dctx *c, int img, uint64_t off, size_t len)
{
	for (int w = 0; w < c->nwin; w++) {
		const struct dwin *win = &c->win[w];
		if (off >= win->off && off + len <= win->off + win->len && off + len >= off) {
			if (!win->buf[img])
				return NULL;
			return win->buf[img] + (off - win->off);
		}
	}
	return NULL;
}

/* The virtual member: XOR of all parity members (RAID4/5 with one member
 * missing: it is exactly the missing member). */
int sample_build_virtual(struct dctx *c)
{
	if (c->have_virtual)
		return 0;
	for (int w = 0; w < c->nwin; w++) {
		struct dwin *win = &c->win[w];
		uint8_t *v = aligned_alloc(64, win->len);
		if (!v)
			return -ENOMEM;
		memset(v, 0, win->len);
		for (int i = 0; i < c->nimg; i++) {
			if (!(c->par.members >> i & 1))
				continue;
			const uint64_t *s = (const uint64_t *)win->buf[i];
			uint64_t *d = (uint64_t *)v;
			for (uint64_t k = 0; k < win->len / 8; k++)
				d[k] ^= s[k];
		}
		win->buf[c->nimg] = v;
	}
	c->have_virtual = true;
	return 0;
}

/* nonzero-sector bitmaps of one image column, for every window */
int sample_nzmap(struct dctx *c, int img)
{
	for (int w = 0; w < c->nwin; w++) {
		struct dwin *win = &c->win[w];
		if (!win->buf[img] || win->nzb[img])
			continue;
		uint64_t ns = win->len / SECT;
		win->nzb[img] = calloc((ns + 63) / 64, sizeof(uint64_t));
		if (!win->nzb[img])
			return -ENOMEM;
		for (uint64_t i = 0; i < ns; i++)
			if (!all_zero(win->buf[img] + i * SECT, SECT))
				win->nzb[img][i / 64] |= 1ull << (i % 64);
	}
	return 0;
}

int sp_zero(const struct dctx *c, int img, uint64_t off, uint64_t len)
{
	for (int w = 0; w < c->nwin; w++) {
		const struct dwin *win = &c->win[w];
		if (off < win->off || off + len > win->off + win->len)
			continue;
		if (!win->nzb[img])
			return -1;
		uint64_t a = (off - win->off) / SECT, b = (off - win->off + len + SECT - 1) / SECT;
		while (a < b && (a % 64)) {
			if (win->nzb[img][a / 64] >> (a % 64) & 1)
				return 0;
			a++;
		}
		while (a + 64 <= b) {
			if (win->nzb[img][a / 64])
				return 0;
			a += 64;
		}
		while (a < b) {
			if (win->nzb[img][a / 64] >> (a % 64) & 1)
				return 0;
			a++;
		}
		return 1;
	}
	return -1;
}

void sample_free(struct dctx *c)
{
	for (int w = 0; w < c->nwin; w++)
		for (int i = 0; i < MAXC; i++) {
			free(c->win[w].buf[i]);
			free(c->win[w].nzb[i]);
			c->win[w].buf[i] = NULL;
			c->win[w].nzb[i] = NULL;
		}
	c->nwin = 0;
}
