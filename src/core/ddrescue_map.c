/* ddrescue_map.c - parse and validate GNU ddrescue mapfiles (see the header). */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddrescue_map.h"
#include "util.h"


static void warn(struct ddr_map *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct ddr_map *m, const char *fmt, ...)
{
	size_t used = strlen(m->warnings);
	va_list ap;

	if (used + 4 >= sizeof(m->warnings))
		return;
	if (used) {
		memcpy(m->warnings + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(m->warnings + used, sizeof(m->warnings) - used, fmt, ap);
	va_end(ap);
}

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* A token of the line: [p, p+n). */
struct tok {
	const char *p;
	size_t n;
};

/* Print at most 24 characters of a token, non-printable ones as '?'. */
static void tok_show(const struct tok *t, char *out, size_t outlen)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n && k + 4 < outlen && i < 24; i++) {
		unsigned char ch = (unsigned char)t->p[i];

		out[k++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
	}
	if (t->n > 24 && k + 4 < outlen) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = 0;
}

/* Parse a C++-style integer constant (decimal, 0x hex, 0 octal).  0, or
 * -EINVAL (not a number), -ERANGE (more than 64 bits). */
static int parse_u64(const struct tok *t, uint64_t *v)
{
	const char *p = t->p, *end = t->p + t->n;
	unsigned base = 10;
	uint64_t x = 0;

	if (p == end)
		return -EINVAL;
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	} else if (end - p > 1 && p[0] == '0') {
		base = 8;
		p += 1;
	}
	for (; p < end; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			return -EINVAL;
		if (d >= base)
			return -EINVAL;
		if (x > (UINT64_MAX - d) / base)
			return -ERANGE;
		x = x * base + d;
	}
	*v = x;
	return 0;
}

/* Decimal only (current_pass). */
static int parse_dec(const struct tok *t, uint64_t *v)
{
	uint64_t x = 0;

	if (!t->n)
		return -EINVAL;
	for (size_t i = 0; i < t->n; i++) {
		char ch = t->p[i];

		if (ch < '0' || ch > '9')
			return -EINVAL;
		if (x > (UINT64_MAX - (uint64_t)(ch - '0')) / 10)
			return -ERANGE;
		x = x * 10 + (uint64_t)(ch - '0');
	}
	*v = x;
	return 0;
}

static int number(const struct tok *t, const char *what, unsigned line, uint64_t *v, char *err, size_t errlen)
{
	char show[32];
	int r = parse_u64(t, v);

	if (!r)
		return 0;
	tok_show(t, show, sizeof(show));
	if (r == -ERANGE)
		fmt_err(err, errlen, "mapfile line %u: %s '%s' does not fit in 64 bits", line, what, show);
	else if (t->n && t->p[0] == '-')
		fmt_err(err, errlen, "mapfile line %u: %s '%s' is negative", line, what, show);
	else
		fmt_err(err, errlen, "mapfile line %u: %s '%s' is not a number", line, what, show);
	return -EINVAL;
}

struct bad_list {
	struct ddr_range *v;
	unsigned n, cap;
};

/* Add [pos, pos+size) to the list, merging with the last range if adjacent. */
static int bad_add(struct bad_list *b, uint64_t pos, uint64_t size)
{
	if (b->n && b->v[b->n - 1].pos + b->v[b->n - 1].size == pos) {
		b->v[b->n - 1].size += size;
		return 0;
	}
	if (b->n == b->cap) {
		unsigned ncap = b->cap ? b->cap * 2 : 16;
		struct ddr_range *nv = realloc(b->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		b->v = nv;
		b->cap = ncap;
	}
	b->v[b->n].pos = pos;
	b->v[b->n].size = size;
	b->n++;
	return 0;
}

void ddr_map_free(struct ddr_map *m)
{
	if (!m)
		return;
	free(m->bad);
	memset(m, 0, sizeof(*m));
}

int ddr_map_parse(const char *buf, size_t len, uint64_t image_size,
		  struct ddr_map *out, char *err, size_t errlen)
{
	struct bad_list bad = { NULL, 0, 0 };
	bool have_status = false;
	uint64_t end = 0;          /* end of the previous block */
	unsigned line = 0;
	size_t pos = 0;
	int ret = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (len > DDR_MAX_MAPFILE) {
		fmt_err(err, errlen, "mapfile of %zu bytes is larger than %u bytes: not a ddrescue mapfile",
		       len, (unsigned)DDR_MAX_MAPFILE);
		return -EFBIG;
	}
	while (pos < len) {
		const char *l = buf + pos, *nl = memchr(l, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - l) : len - pos, k;
		struct tok t[4];
		unsigned nt = 0;

		pos += n + (nl ? 1 : 0);
		line++;
		if (memchr(l, 0, n)) {
			fmt_err(err, errlen, "mapfile line %u: NUL byte: not a text file", line);
			goto fail;
		}
		/* comment: '#' at the start or after whitespace */
		for (k = 0; k < n; k++)
			if (l[k] == '#' && (k == 0 || is_blank(l[k - 1])))
				break;
		n = k;
		while (n && is_blank(l[n - 1]))
			n--;
		if (!n)
			continue;
		if (n > DDR_MAX_LINE) {
			fmt_err(err, errlen, "mapfile line %u: %zu characters: too long for a mapfile line", line, n);
			goto fail;
		}
		for (k = 0; k < n;) {
			while (k < n && is_blank(l[k]))
				k++;
			if (k >= n)
				break;
			if (nt == 4) {
				nt++;
				break;
			}
			t[nt].p = l + k;
			while (k < n && !is_blank(l[k]))
				k++;
			t[nt].n = (size_t)(l + k - t[nt].p);
			nt++;
		}
		if (!have_status) {
			uint64_t v;

			if (nt < 2 || nt > 3) {
				fmt_err(err, errlen, "mapfile line %u: the status line needs 'current_pos current_status [current_pass]', found %u fields",
				       line, nt);
				goto fail;
			}
			if (number(&t[0], "current_pos", line, &out->current_pos, err, errlen))
				goto fail;
			if (t[1].n != 1 || !strchr("?*/-FG+", t[1].p[0])) {
				char show[32];

				tok_show(&t[1], show, sizeof(show));
				fmt_err(err, errlen, "mapfile line %u: current_status '%s' is not one of ? * / - F G +", line, show);
				goto fail;
			}
			out->current_status = t[1].p[0];
			if (nt == 3) {
				if (parse_dec(&t[2], &v) || v == 0 || v > 1000000) {
					char show[32];

					tok_show(&t[2], show, sizeof(show));
					fmt_err(err, errlen, "mapfile line %u: current_pass '%s' is not a positive decimal number", line, show);
					goto fail;
				}
				out->current_pass = (unsigned)v;
			}
			have_status = true;
			continue;
		}
		/* a data block */
		{
			uint64_t bpos, bsize;
			char st;

			if (nt != 3) {
				fmt_err(err, errlen, "mapfile line %u: a block needs 'pos size status', found %u fields", line, nt);
				goto fail;
			}
			if (number(&t[0], "pos", line, &bpos, err, errlen) ||
			    number(&t[1], "size", line, &bsize, err, errlen))
				goto fail;
			if (t[2].n != 1 || !strchr("?*/-+", t[2].p[0])) {
				char show[32];

				tok_show(&t[2], show, sizeof(show));
				fmt_err(err, errlen, "mapfile line %u: block status '%s' is not one of ? * / - +", line, show);
				goto fail;
			}
			st = t[2].p[0];
			if (out->nblocks >= DDR_MAX_BLOCKS) {
				fmt_err(err, errlen, "mapfile line %u: more than %u blocks", line, (unsigned)DDR_MAX_BLOCKS);
				ret = -EFBIG;
				goto fail;
			}
			if (!out->nblocks && bpos != 0) {
				fmt_err(err, errlen, "mapfile line %u: the first block starts at 0x%llx, not 0",
				       line, (unsigned long long)bpos);
				goto fail;
			}
			if (bpos < end) {
				fmt_err(err, errlen, "mapfile line %u: block at 0x%llx overlaps the previous block, which ends at 0x%llx",
				       line, (unsigned long long)bpos, (unsigned long long)end);
				goto fail;
			}
			if (bpos > end) {
				fmt_err(err, errlen, "mapfile line %u: gap: block at 0x%llx, but the previous block ends at 0x%llx",
				       line, (unsigned long long)bpos, (unsigned long long)end);
				goto fail;
			}
			if (!bsize) {
				fmt_err(err, errlen, "mapfile line %u: block at 0x%llx has size 0", line, (unsigned long long)bpos);
				goto fail;
			}
			if (bsize > UINT64_MAX - bpos || bpos + bsize > (uint64_t)INT64_MAX) {
				fmt_err(err, errlen, "mapfile line %u: block at 0x%llx of size 0x%llx ends past 2^63 bytes",
				       line, (unsigned long long)bpos, (unsigned long long)bsize);
				goto fail;
			}
			end = bpos + bsize;
			out->nblocks++;
			switch (st) {
			case '+': out->bytes_finished += bsize; break;
			case '?': out->bytes_nontried += bsize; break;
			case '*': out->bytes_nontrimmed += bsize; break;
			case '/': out->bytes_nonscraped += bsize; break;
			default: out->bytes_badsector += bsize; break;
			}
			if (st != '+' && bad_add(&bad, bpos, bsize)) {
				fmt_err(err, errlen, "out of memory");
				ret = -ENOMEM;
				goto fail;
			}
		}
	}
	if (!have_status) {
		fmt_err(err, errlen, "mapfile has no status line (%u lines): empty or not a ddrescue mapfile", line);
		goto fail;
	}
	if (!out->nblocks) {
		fmt_err(err, errlen, "mapfile has no data blocks after its status line");
		goto fail;
	}
	out->map_size = end;
	if (out->current_pos > end)
		warn(out, "current_pos 0x%llx is past the end of the map (0x%llx)",
		     (unsigned long long)out->current_pos, (unsigned long long)end);

	if (image_size == UINT64_MAX) {
		out->size_relation = DDR_SIZE_UNKNOWN;
	} else if (image_size == end) {
		out->size_relation = DDR_SIZE_EQUAL;
	} else if (image_size < end) {
		/* Only acceptable if [image_size, end) is all untrusted. */
		const struct ddr_range *last = bad.n ? &bad.v[bad.n - 1] : NULL;

		if (!last || last->pos + last->size != end || last->pos > image_size) {
			uint64_t fin = last && last->pos + last->size == end ? last->pos : end;

			fmt_err(err, errlen,
			       "the image has %llu bytes but the mapfile says bytes up to 0x%llx were rescued ('+'): the image is truncated",
			       (unsigned long long)image_size, (unsigned long long)fin);
			goto fail;
		}
		out->size_relation = DDR_SIZE_IMAGE_SHORTER;
		warn(out, "the image (%llu bytes) ends before the map (%llu bytes), inside unrescued blocks",
		     (unsigned long long)image_size, (unsigned long long)end);
	} else {
		/* ddrescue never leaves output past what its map covers (a bad
		 * tail only makes the image shorter): another image's mapfile */
		fmt_err(err, errlen,
			"the image has %llu bytes but the mapfile covers only %llu: it is not this image's mapfile "
			"(or the image was extended since)", (unsigned long long)image_size, (unsigned long long)end);
		goto fail;
	}
	out->bad = bad.v;
	out->nbad = bad.n;
	for (unsigned i = 0; i < bad.n; i++)
		out->bad_bytes += bad.v[i].size;
	return 0;
fail:
	free(bad.v);
	memset(out, 0, sizeof(*out));
	return ret;
}

const struct ddr_range *ddr_map_find_bad(const struct ddr_map *m, uint64_t off, uint64_t len)
{
	unsigned lo = 0, hi = m->nbad;
	uint64_t e = len > UINT64_MAX - off ? UINT64_MAX : off + len;

	if (!len)
		return NULL;
	/* first range whose end is > off */
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (m->bad[mid].pos + m->bad[mid].size <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nbad && m->bad[lo].pos < e)
		return &m->bad[lo];
	return NULL;
}
