/* detect.c - detect_run(): the pipeline, and output helpers.
 *
 *   sample (bounded reads) -> parity (member set, class, offset bounds)
 *   -> anchors (file systems, labels) -> seam model -> solver (hypotheses,
 *   scoring, verdict).
 * Everything lives in one struct dctx owned here, freed before returning.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect_int.h"

/* raidimg's SIZE syntax: 0, 64K, 1M, 2G, or sectors (63s) */
void detect_fmt_size(char *buf, size_t len, uint64_t b)
{
	if (b == 0)
		snprintf(buf, len, "0");
	else if (b % (1ull << 30) == 0)
		snprintf(buf, len, "%lluG", (unsigned long long)(b >> 30));
	else if (b % (1ull << 20) == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(b >> 20));
	else if (b % 1024 == 0)
		snprintf(buf, len, "%lluK", (unsigned long long)(b >> 10));
	else if (b % 512 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(b >> 9));
	else
		snprintf(buf, len, "%llu", (unsigned long long)b);
}

void detect_hints_init(struct detect_hints *h)
{
	memset(h, 0, sizeof(*h));
	h->data_offset = -1;
}

const char *detect_verdict_name(enum detect_verdict v)
{
	switch (v) {
	case DETECT_CERTAIN: return "certain";
	case DETECT_LIKELY: return "likely";
	case DETECT_AMBIGUOUS: return "ambiguous";
	}
	return "?";
}

int detect_array_args(const struct detect_candidate *c, char *buf, size_t buflen, const char **words,
		      int maxwords, int *nwords)
{
	size_t used = 0;
	int n = 0;
	char tmp[512];

#define PUT(s)                                                                  \
	do {                                                                    \
		size_t l_ = strlen(s) + 1;                                      \
		if (used + l_ > buflen || n >= maxwords)                        \
			return -ENOSPC;                                         \
		memcpy(buf + used, (s), l_);                                    \
		words[n++] = buf + used;                                        \
		used += l_;                                                     \
	} while (0)

	fmt_err(tmp, sizeof(tmp), "%d", c->level);
	PUT("--level");
	PUT(tmp);
	if (c->level != 4) {
		PUT("--layout");
		PUT(layout_name(c->level, c->layout));
	}
	detect_fmt_size(tmp, sizeof(tmp), c->chunk_bytes);
	PUT("--chunk");
	PUT(tmp);
	size_t o = 0;
	tmp[0] = '\0';
	for (int r = 0; r < c->raid_disks && o < sizeof(tmp) - 16; r++) {
		if (c->order[r] < 0)
			o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%smissing", r ? "," : "");
		else
			o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%s%d", r ? "," : "", c->order[r]);
	}
	PUT("--order");
	PUT(tmp);
	detect_fmt_size(tmp, sizeof(tmp), c->data_offset);
	PUT("--data-offset");
	PUT(tmp);
#undef PUT
	*nwords = n;
	return 0;
}

static void ctx_free(struct dctx *c)
{
	sample_free(c);
	parity_free(&c->par);
	seam_free(c);
	free(c->anc);
	free(c->gf);
	free(c);
}

int detect_run(const struct dev_reader *devs, int nimg, const struct detect_hints *hints,
	       struct detect_result *res, char *err, size_t errlen)
{
	struct dctx *c;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!devs || !res || nimg < 2 || nimg > DETECT_MAX_IMAGES) {
		fmt_err(err, errlen, "detect: %d images given (need 2..%d)", nimg, DETECT_MAX_IMAGES);
		return -EINVAL;
	}
	memset(res, 0, sizeof(*res));
	res->nimg = nimg;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->gf = malloc(sizeof(*c->gf));
	if (!c->gf) {
		free(c);
		return -ENOMEM;
	}
	gf_init_tables(c->gf);
	c->nimg = nimg;
	c->dev = devs;
	c->res = res;
	c->err = err;
	c->errlen = errlen;
	if (hints)
		c->h = *hints;
	else
		detect_hints_init(&c->h);
	if (c->h.level && c->h.level != 4 && c->h.level != 5 && c->h.level != 6) {
		fmt_err(err, errlen, "detect: --level %d: only 4, 5 or 6", c->h.level);
		rc = -EINVAL;
		goto out;
	}
	if (c->h.chunk_bytes && (c->h.chunk_bytes & (c->h.chunk_bytes - 1))) {
		fmt_err(err, errlen, "detect: --chunk %u is not a power of two", c->h.chunk_bytes);
		rc = -EINVAL;
		goto out;
	}
	if (c->h.data_offset >= 0 && c->h.data_offset % 512) {
		fmt_err(err, errlen, "detect: --data-offset %lld is not a multiple of 512",
		     (long long)c->h.data_offset);
		rc = -EINVAL;
		goto out;
	}
	c->minsize = UINT64_MAX;
	for (int i = 0; i < nimg; i++) {
		if (!devs[i].read) {
			fmt_err(err, errlen, "image %d: no read callback", i);
			rc = -EINVAL;
			goto out;
		}
		c->size[i] = devs[i].size / SECT * SECT;
		if (c->size[i] > c->maxsize)
			c->maxsize = c->size[i];
		if (c->size[i] < c->minsize)
			c->minsize = c->size[i];
	}
	if (c->maxsize < 4096) {
		fmt_err(err, errlen, "detect: images are smaller than 4 KiB");
		rc = -EINVAL;
		goto out;
	}
	rc = sample_read(c);
	if (rc)
		goto out;
	rc = parity_analyse(c);
	if (rc)
		goto out;
	if ((c->par.cls == PC_NONE || c->par.cls == PC_XOR) && c->h.level != 6) {
		rc = sample_build_virtual(c);
		if (rc)
			goto out;
	}
	for (int i = 0; i < nimg + (c->have_virtual ? 1 : 0); i++) {
		rc = sample_nzmap(c, i);
		if (rc)
			goto out;
	}
	rc = anchors_scan(c);
	if (rc)
		goto out;
	rc = seam_build(c);
	if (rc)
		goto out;
	rc = solve(c);
	if (rc)
		goto out;
	/* images left out */
	for (int i = 0; i < nimg; i++) {
		bool used = false;
		if (res->ncand > 0)
			for (int r = 0; r < res->cand[0].raid_disks; r++)
				used = used || res->cand[0].order[r] == i;
		if (used)
			continue;
		struct detect_excluded *x = &res->excluded[res->nexcluded++];
		x->image = i;
		if (c->par.zero_excluded >> i & 1)
			fmt_err(x->why, sizeof(x->why),
			     "all zero in every row where the other images hold parity-consistent data: "
			     "not a member of this array (or an empty one, read as missing)");
		else if (!(c->par.members >> i & 1))
			fmt_err(x->why, sizeof(x->why),
			     "takes part in no parity relation with the other images (%d rows analysed): "
			     "not a member of this array", c->par.rows_inf);
		else
			fmt_err(x->why, sizeof(x->why), "not placed by the best candidate");
	}
out:
	for (int i = 0; i < nimg; i++) {
		res->bytes_read[i] = c->bytes_read[i];
		if (c->bytes_read[i] > res->bytes_read_max)
			res->bytes_read_max = c->bytes_read[i];
	}
	ctx_free(c);
	return rc;
}
