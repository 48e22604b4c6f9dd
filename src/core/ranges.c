/* ranges.c - see ranges.h */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ranges.h"

/* Index of the first range whose end is past off (n if none). */
static size_t first_ending_after(const struct range_list *l, uint64_t off)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->v[mid].off + l->v[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int range_list_add(struct range_list *l, uint64_t off, uint64_t len)
{
	uint64_t end;
	size_t i, j;

	if (!len)
		return 0;
	end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	/* ranges i..j-1 touch or overlap [off, end): they merge with it */
	i = off ? first_ending_after(l, off - 1) : 0;
	for (j = i; j < l->n && l->v[j].off <= end; j++) {
		uint64_t e = l->v[j].off + l->v[j].len;

		if (l->v[j].off < off)
			off = l->v[j].off;
		if (e > end)
			end = e;
	}
	if (j == i) {
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			struct byte_range *v = realloc(l->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			l->v = v;
			l->cap = cap;
		}
		memmove(l->v + i + 1, l->v + i, (l->n - i) * sizeof(*l->v));
		l->n++;
	} else {
		for (size_t k = i; k < j; k++)
			l->bytes -= l->v[k].len;
		memmove(l->v + i + 1, l->v + j, (l->n - j) * sizeof(*l->v));
		l->n -= j - i - 1;
	}
	l->v[i].off = off;
	l->v[i].len = end - off;
	l->bytes += end - off;
	return 0;
}

int range_list_add_window(struct range_list *l, const struct range_list *src, uint64_t base, uint64_t len)
{
	uint64_t wend = len > UINT64_MAX - base ? UINT64_MAX : base + len;

	for (size_t i = len ? first_ending_after(src, base) : src->n; i < src->n && src->v[i].off < wend; i++) {
		uint64_t a = src->v[i].off > base ? src->v[i].off : base;
		uint64_t e = src->v[i].off + src->v[i].len;
		int ret;

		if (e > wend)
			e = wend;
		ret = range_list_add(l, a - base, e - a);
		if (ret)
			return ret;
	}
	return 0;
}

const struct byte_range *range_list_first(const struct range_list *l, uint64_t off, uint64_t len)
{
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	size_t i;

	if (!len || !l->n)
		return NULL;
	i = first_ending_after(l, off);
	return i < l->n && l->v[i].off < end ? &l->v[i] : NULL;
}

uint64_t range_list_bytes_in(const struct range_list *l, uint64_t off, uint64_t len, size_t *n)
{
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len, bytes = 0;
	size_t cnt = 0;

	for (size_t i = len ? first_ending_after(l, off) : l->n; i < l->n && l->v[i].off < end; i++) {
		uint64_t a = l->v[i].off > off ? l->v[i].off : off;
		uint64_t e = l->v[i].off + l->v[i].len < end ? l->v[i].off + l->v[i].len : end;

		bytes += e - a;
		cnt++;
	}
	if (n)
		*n = cnt;
	return bytes;
}

void range_list_free(struct range_list *l)
{
	if (!l)
		return;
	free(l->v);
	memset(l, 0, sizeof(*l));
}
