/* split_raw.c - enumerate and check the pieces of a split raw image (pure:
 * over a directory listing; io/source_split.c lists and reads). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "split_raw.h"
#include "util.h"


bool split_suffix_number(const char *name, const char *prefix, size_t plen, unsigned *num, unsigned *width)
{
	const char *d;
	unsigned v = 0, w = 0;

	if (strncmp(name, prefix, plen))
		return false;
	for (d = name + plen; *d; d++, w++) {
		if (*d < '0' || *d > '9' || w >= 9)
			return false;
		v = v * 10 + (unsigned)(*d - '0');
	}
	if (!w)
		return false;
	*num = v;
	*width = w;
	return true;
}

/* The number of digits number n is written with in a series of width w. */
static unsigned expected_width(unsigned n, unsigned w)
{
	unsigned digits = 1;

	for (unsigned x = n; x >= 10; x /= 10)
		digits++;
	return digits > w ? digits : w;
}

static void piece_name(char *out, size_t outlen, const char *prefix, unsigned n, unsigned w)
{
	snprintf(out, outlen, "%s%0*u", prefix, (int)w, n);
}

struct cand {
	unsigned number;
	const struct split_dirent *e;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return x->number < y->number ? -1 : (x->number > y->number);
}

void split_set_free(struct split_set *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->npieces; i++)
		free(s->pieces[i].name);
	free(s->pieces);
	memset(s, 0, sizeof(*s));
}

int split_raw_find(const char *first_name, const struct split_dirent *ents, size_t n,
		   struct split_set *out, char *err, size_t errlen)
{
	const char *dot = strrchr(first_name, '.');
	struct cand *c = NULL;
	char *prefix = NULL;
	size_t plen, nc = 0;
	unsigned first, width;
	bool found_first = false;
	int ret = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (!dot || dot == first_name) {
		fmt_err(err, errlen, "%s: not a split piece name (NAME.001 or NAME.000)", first_name);
		return -EINVAL;
	}
	plen = (size_t)(dot - first_name) + 1;
	prefix = strndup(first_name, plen);
	if (!prefix) {
		fmt_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!split_suffix_number(first_name, prefix, plen, &first, &width) || width > SPLIT_MAX_WIDTH) {
		fmt_err(err, errlen, "%s: not a split piece name: the suffix after the last '.' must be 1 to %d digits",
		       first_name, SPLIT_MAX_WIDTH);
		goto out;
	}
	if (first > 1) {
		char want[64];

		piece_name(want, sizeof(want), "", 1, width);
		fmt_err(err, errlen, "%s is not the first piece: open %s%s (or .%0*u)", first_name, prefix, want,
		       (int)width, 0u);
		goto out;
	}
	c = calloc(n ? n : 1, sizeof(*c));
	if (!c) {
		fmt_err(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned num, w;

		if (!ents[i].name || !split_suffix_number(ents[i].name, prefix, plen, &num, &w))
			continue;
		if (w != expected_width(num, width))
			continue;       /* NAME.1 next to NAME.001: another series */
		if (num < first)
			continue;       /* NAME.000 next to a series from NAME.001 */
		if (num == first)
			found_first = true;
		if (nc >= SPLIT_MAX_PIECES) {
			fmt_err(err, errlen, "%s: more than %d pieces", first_name, SPLIT_MAX_PIECES);
			ret = -EFBIG;
			goto out;
		}
		c[nc].number = num;
		c[nc].e = &ents[i];
		nc++;
	}
	if (!found_first) {
		fmt_err(err, errlen, "%s: no such file", first_name);
		ret = -ENOENT;
		goto out;
	}
	qsort(c, nc, sizeof(*c), cmp_cand);
	for (size_t i = 0; i < nc; i++) {
		char name[512], prev[512];

		if (i && c[i].number == c[i - 1].number) {
			fmt_err(err, errlen, "%s appears twice in the listing", c[i].e->name);
			goto out;
		}
		if (c[i].number != first + i) {
			piece_name(name, sizeof(name), prefix, first + (unsigned)i, expected_width(first + (unsigned)i, width));
			fmt_err(err, errlen, "%s is missing: %s and %s exist (%zu pieces found after the gap)",
			       name, c[i - 1].e->name, c[i].e->name, nc - i);
			goto out;
		}
		if (!c[i].e->is_regular) {
			fmt_err(err, errlen, "%s is not a regular file", c[i].e->name);
			goto out;
		}
		if (!c[i].e->size) {
			fmt_err(err, errlen, "%s is empty (0 bytes)", c[i].e->name);
			goto out;
		}
		if (i && i + 1 < nc && c[i].e->size != c[0].e->size) {
			snprintf(prev, sizeof(prev), "%s", c[0].e->name);
			fmt_err(err, errlen, "%s has %llu bytes but %s has %llu: all pieces but the last must be the same size (truncated or foreign piece?)",
			       c[i].e->name, (unsigned long long)c[i].e->size, prev, (unsigned long long)c[0].e->size);
			goto out;
		}
		if (i && i + 1 == nc && c[i].e->size > c[0].e->size) {
			fmt_err(err, errlen, "the last piece %s has %llu bytes, more than the %llu of the pieces before it",
			       c[i].e->name, (unsigned long long)c[i].e->size, (unsigned long long)c[0].e->size);
			goto out;
		}
	}
	out->pieces = calloc(nc, sizeof(*out->pieces));
	if (!out->pieces) {
		fmt_err(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nc; i++) {
		struct split_piece *p = &out->pieces[i];

		p->name = strdup(c[i].e->name);
		if (!p->name) {
			fmt_err(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
		out->npieces++;
		p->number = c[i].number;
		p->size = c[i].e->size;
		p->offset = out->total_size;
		if (p->size > UINT64_MAX - out->total_size) {
			fmt_err(err, errlen, "%s: total size overflows 64 bits", p->name);
			goto out;
		}
		out->total_size += p->size;
	}
	out->first_number = first;
	out->width = width;
	out->piece_size = c[0].e->size;
	if (nc == 1)
		snprintf(out->warnings, sizeof(out->warnings),
			 "%s is the only piece: a lost last piece cannot be seen from names and sizes", first_name);
	ret = 0;
out:
	if (ret)
		split_set_free(out);
	free(c);
	free(prefix);
	return ret;
}

int split_raw_locate(const struct split_set *s, uint64_t off, uint64_t *in_piece)
{
	uint64_t idx;

	if (off >= s->total_size || !s->piece_size)
		return -ERANGE;
	idx = off / s->piece_size;
	if (idx >= s->npieces)      /* only possible in the last piece, never past it */
		idx = s->npieces - 1;
	*in_piece = off - s->pieces[idx].offset;
	return (int)idx;
}

