/* pagecache.c - see pagecache.h.
 *
 * Shape: a trail notes the file front to back, PC_LOOKAHEAD ahead of the
 * ranges it is told about, and keeps the pieces noted with pages missing,
 * in order, each with its mincore vector (one byte per page, bit 0 set:
 * cached when noted; none when cachestat says no page was: one count per
 * piece settles the usual all-or-nothing cases; where cachestat(2) is
 * missing (ENOSYS before Linux 6.5) or fails, every piece is told by
 * mincore over a mapping of that piece alone, made and unmapped in note()).  pc_trail_behind walks them from the front, dropping
 * runs of missing pages below the cut and trimming or freeing the pieces.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pagecache.h"

struct noted {
	uint64_t off, len;       /* page-aligned file range */
	uint8_t *vec;            /* len / page bytes; owned; NULL: no page was cached */
};

struct pc_trail {
	pthread_mutex_t lock;
	int fd;                  /* not owned */
	uint64_t end;            /* the file's size, rounded up to a page; 0: inactive */
	uint64_t page;
	uint64_t floor;          /* everything below was used: never noted again */
	bool started;
	uint64_t noted_hi;       /* [first range noted, noted_hi) is noted */
	uint64_t lookahead;      /* noted this far past a range (PC_LOOKAHEAD) ... */
	uint64_t piece;          /* ... in pieces of at most this (PC_LOOKAHEAD) */
	struct noted *v;         /* [n]: the ranges noted with pages missing, in order; owned */
	size_t n, cap;
};

static uint64_t file_size(int fd)
{
	struct stat st;
	off_t end;

	if (fstat(fd, &st))
		return 0;
	if (S_ISREG(st.st_mode))
		return (uint64_t)st.st_size;
	if (!S_ISBLK(st.st_mode))
		return 0;
	end = lseek(fd, 0, SEEK_END);
	return end > 0 ? (uint64_t)end : 0;
}

int pc_trail_open(int fd, struct pc_trail **out)
{
	return pc_trail_open_sized(fd, PC_LOOKAHEAD, PC_LOOKAHEAD, out);
}

int pc_trail_open_sized(int fd, uint64_t lookahead, uint64_t piece, struct pc_trail **out)
{
	struct pc_trail *t = calloc(1, sizeof(*t));
	uint64_t size = fd >= 0 ? file_size(fd) : 0;
	long ps = sysconf(_SC_PAGESIZE);

	*out = NULL;
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	t->fd = fd;
	t->page = ps > 0 ? (uint64_t)ps : 4096;
	t->lookahead = lookahead > t->page ? lookahead : t->page;
	t->piece = piece > t->page ? piece / t->page * t->page : t->page;
	t->end = (size + t->page - 1) / t->page * t->page;
	*out = t;
	return 0;
}

bool pc_trail_active(const struct pc_trail *t)
{
	return t && t->end;
}

#ifndef __NR_cachestat
#define __NR_cachestat 451      /* the same on every architecture but alpha */
#endif

/* Pages of file bytes [off, off + len) in the page cache (cachestat(2),
 * Linux 6.5: one walk of the cache per range, where mincore looks each page
 * up on its own); -1 where the kernel cannot say. */
static int64_t cached_pages(int fd, uint64_t off, uint64_t len)
{
	struct { uint64_t off, len; } range = { off, len };
	struct { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; } cs;

	if (syscall(__NR_cachestat, fd, &range, &cs, 0))
		return -1;
	return (int64_t)cs.nr_cache;
}

/* Note [g0, g1), past every range noted so far.  Under lock. */
static void note(struct pc_trail *t, uint64_t g0, uint64_t g1)
{
	size_t pages = (size_t)((g1 - g0) / t->page), missing = 0;
	int64_t cached = cached_pages(t->fd, g0, g1 - g0);
	struct noted x = { g0, g1 - g0, NULL };

	if (cached == (int64_t)pages)
		return;         /* all cached: nothing to drop later */
	if (cached == 0) {
		missing = pages;        /* none cached: no vector needed */
	} else {
		/* page by page: mincore over a mapping of the piece alone (never
		 * touched; mapped only for this, so that a trail holds no
		 * address space) */
		void *m = mmap(NULL, (size_t)(g1 - g0), PROT_READ, MAP_SHARED, t->fd, (off_t)g0);
		int r;

		if (m == MAP_FAILED)
			return;         /* cannot tell: taken as cached, never dropped */
		x.vec = malloc(pages);
		r = x.vec ? mincore(m, (size_t)(g1 - g0), x.vec) : -1;
		munmap(m, (size_t)(g1 - g0));
		if (r) {
			free(x.vec);    /* no memory to remember, or no answer: never dropped */
			return;
		}
		for (size_t p = 0; p < pages; p++)
			missing += !(x.vec[p] & 1);
	}
	if (missing && t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct noted *v = realloc(t->v, cap * sizeof(*v));

		if (!v) {
			free(x.vec);
			return;
		}
		t->v = v;
		t->cap = cap;
	}
	if (!missing) {
		free(x.vec);    /* all cached: nothing to drop later */
		return;
	}
	t->v[t->n++] = x;
}

uint64_t pc_trail_ahead(struct pc_trail *t, uint64_t off, uint64_t len, bool willneed)
{
	uint64_t lo, hi, want, missing = 0;

	if (!pc_trail_active(t) || !len || off >= t->end)
		return 0;
	pthread_mutex_lock(&t->lock);
	lo = off / t->page * t->page;
	hi = len > t->end - off ? t->end : (off + len + t->page - 1) / t->page * t->page;
	if (lo < t->floor)
		lo = t->floor;
	if (!t->started) {
		t->started = true;
		t->noted_hi = lo;
	}
	/* note well ahead of the range: the kernel's own read-ahead, set off
	 * by the reads, brings in pages past it that we must not take for
	 * pages cached before us */
	want = t->end - hi > t->lookahead ? hi + t->lookahead : t->end;
	while (t->noted_hi < want) {
		uint64_t g1 = want - t->noted_hi > t->piece ? t->noted_hi + t->piece : want;

		note(t, t->noted_hi, g1);
		t->noted_hi = g1;
	}
	for (size_t i = 0; i < t->n; i++) {
		const struct noted *x = &t->v[i];
		uint64_t a = x->off > lo ? x->off : lo, b = x->off + x->len < hi ? x->off + x->len : hi;

		for (uint64_t p = a; p < b; p += t->page)
			missing += !x->vec || !(x->vec[(p - x->off) / t->page] & 1);
	}
	pthread_mutex_unlock(&t->lock);
	if (missing && willneed)
		(void)posix_fadvise(t->fd, (off_t)lo, (off_t)(hi - lo), POSIX_FADV_WILLNEED);
	return missing * t->page;
}

/* Drop [*lo, *hi), a run of pages missing when noted (nothing when empty). */
static void drop_run(struct pc_trail *t, uint64_t *lo, uint64_t *hi)
{
	if (*hi > *lo)
		(void)posix_fadvise(t->fd, (off_t)*lo, (off_t)(*hi - *lo), POSIX_FADV_DONTNEED);
	*lo = *hi = 0;
}

/* Drop the pages missing when noted below cut, in runs as long as they go
 * (across the pieces noted: a run cut at a piece's end would leave the
 * folio straddling it), and forget them. */
static void behind_locked(struct pc_trail *t, uint64_t off, uint64_t cut)
{
	uint64_t lo = 0, hi = 0;
	size_t done = 0;

	if (off / t->page * t->page > t->floor)
		t->floor = off / t->page * t->page;
	for (; done < t->n && t->v[done].off < cut; done++) {
		struct noted *x = &t->v[done];
		uint64_t end = x->off + x->len < cut ? x->off + x->len : cut;
		size_t pages = (size_t)((end - x->off) / t->page);

		for (size_t p = 0; p < pages; p++) {
			uint64_t at = x->off + p * t->page;

			if (x->vec && (x->vec[p] & 1))
				continue;
			if (at != hi)
				drop_run(t, &lo, &hi);
			if (hi == 0)
				lo = at;
			hi = at + t->page;
		}
		if (x->off + x->len > cut) {
			/* trim the front: the rest waits for a later cut */
			size_t gone = (size_t)((cut - x->off) / t->page);

			if (x->vec)
				memmove(x->vec, x->vec + gone, (size_t)(x->len / t->page) - gone);
			x->len -= cut - x->off;
			x->off = cut;
			break;
		}
		free(x->vec);
	}
	drop_run(t, &lo, &hi);
	if (done && done < t->n)        /* (t->v is NULL while nothing was noted) */
		memmove(t->v, t->v + done, (t->n - done) * sizeof(*t->v));
	t->n -= done;
}

void pc_trail_behind(struct pc_trail *t, uint64_t off)
{
	if (!pc_trail_active(t))
		return;
	pthread_mutex_lock(&t->lock);
	behind_locked(t, off, off / PC_DROP_ALIGN * PC_DROP_ALIGN);
	pthread_mutex_unlock(&t->lock);
}

void pc_trail_close(struct pc_trail *t)
{
	if (!t)
		return;
	if (t->end)
		behind_locked(t, UINT64_MAX, UINT64_MAX);
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].vec);
	free(t->v);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
