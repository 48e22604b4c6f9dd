/* splice_cat.c - see splice_cat.h.
 *
 * Why: copying page-cache bytes into a large user buffer and then writing
 * them out costs two copies and, with buffers bigger than the CPU caches,
 * memory bandwidth; splice(2) moves page references instead (nothing at all
 * is copied into /dev/null or a pipe, one copy into a file).
 *
 * How: each chunk piece a member holds as it is goes member -> our pipe ->
 * out_fd; pieces wait in the pipe until it is full, the segment ends or
 * bytes are about to reach out_fd another way (held): one splice out per
 * pipeful rather than per piece (64 KiB chunks: 2 syscalls per chunk ->
 * about 1).  The pipe is ours so that a failing member read can be cut back to
 * whole 4 KiB blocks (md's stripe unit) before anything reaches out_fd: a
 * member that returns a short read (bytes before a bad sector) or EIO only
 * gets its good whole blocks released; the rest of the piece is served by
 * array_read, which rebuilds it from parity or names the first array offset
 * it cannot serve - the same offset the copying pipeline names.
 * Pieces members cannot serve as they are (missing, faulty, truncated
 * members, bytes an image's map marks untrusted) are rebuilt ahead by the pipeline's worker threads (pipeline.h),
 * with array_read in small slices so the surviving members' bytes stay in
 * the CPU cache while they are combined, into the segment's buffer; the
 * calling thread then sends each segment in order: spliced pieces and
 * rebuilt ones as they come.
 * Ahead of the pieces, every member is told (POSIX_FADV_WILLNEED) to read
 * the next PREFETCH_BYTES of its data area (no more than the read can need):
 * members see large requests, all in flight at once, however small the
 * chunks are.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "member_io.h"
#include "pipeline.h"
#include "splice_cat.h"
#include "sysio.h"
#include "util.h"

#define BLOCK 4096u                 /* a failed read is kept to whole blocks */
#define SLICE_BYTES (2048u << 10)   /* rebuilt runs go through array_read in these */
#define PIPE_WANT (1u << 20)        /* pipe size asked for (fs.pipe-max-size allowing) */
#define PREFETCH_BYTES (2u << 20)   /* per member, ahead of the stripes being sent */

struct splice_run {
	struct array *a;
	int out_fd;
	int pipe_r, pipe_w;
	size_t pipe_cap;        /* bytes the pipe holds (F_GETPIPE_SZ) */
	size_t held;            /* bytes in the pipe not yet passed on: the array bytes
				 * just before the next ones to send, all good */
	bool out_copy;          /* out_fd refused splice: read the pipe and write() */
	bool *in_copy;          /* [raid_disks] member refused splice: array_read it; owned */
	uint64_t *ra_end;       /* [raid_disks] data-area bytes told WILLNEED so far; owned */
	uint64_t end;           /* array bytes below this are read (the whole run's end) */
	uint8_t *bounce;        /* SLICE_BYTES; owned */
	struct splice_cat_stats *st;
	uint64_t *written;
	uint64_t *bad_off;
};

static uint64_t min_u64(uint64_t x, uint64_t y)
{
	return x < y ? x : y;
}

/* Move len bytes from the front of our pipe to out_fd. */
static int pipe_release(struct splice_run *r, size_t len)
{
	while (len) {
		ssize_t n;

		if (!r->out_copy) {
			n = splice(r->pipe_r, NULL, r->out_fd, NULL, len, SPLICE_F_MOVE);
			if (n > 0) {
				len -= (size_t)n;
				*r->written += (uint64_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno != EINVAL)
				return -errno;
			if (n == 0)
				return -EIO;
			r->out_copy = true;     /* EINVAL: out_fd takes no splice (O_APPEND, ...) */
		}
		n = read(r->pipe_r, r->bounce, min_u64(len, SLICE_BYTES));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		int ret = write_all(r->out_fd, r->bounce, (size_t)n);
		if (ret)
			return ret;
		len -= (size_t)n;
		*r->written += (uint64_t)n;
	}
	return 0;
}

/* Pass on what the pipe holds: before anything else reaches out_fd, and at
 * the end of each segment (the pipeline lets a segment's pages go from the
 * page cache once it is sent; pages still in our pipe would stay). */
static int pipe_flush(struct splice_run *r)
{
	size_t n = r->held;

	r->held = 0;
	return n ? pipe_release(r, n) : 0;
}

/* Throw away len bytes from the front of our pipe. */
static int pipe_drop(struct splice_run *r, size_t len)
{
	while (len) {
		ssize_t n = read(r->pipe_r, r->bounce, min_u64(len, SLICE_BYTES));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		len -= (size_t)n;
	}
	return 0;
}

/* Array bytes [off, off+len) through array_read (rebuilding as needed), a
 * slice at a time, and write(2). */
static int copy_via_read(struct splice_run *r, uint64_t off, uint64_t len)
{
	int fl = pipe_flush(r);

	if (fl)
		return fl;
	while (len) {
		size_t n = (size_t)min_u64(len, SLICE_BYTES);
		uint64_t bad = off;
		int ret = array_read(r->a, r->bounce, n, off, &bad);

		if (ret == -EIO && bad >= off && bad - off < n) {
			/* write what could be read, then report the hole */
			int wr = write_all(r->out_fd, r->bounce, (size_t)(bad - off));
			if (wr)
				return wr;
			*r->written += bad - off;
			*r->bad_off = bad;
			return -EIO;
		}
		if (ret) {
			*r->bad_off = off;
			return ret;
		}
		ret = write_all(r->out_fd, r->bounce, n);
		if (ret)
			return ret;
		*r->written += n;
		r->st->copied_bytes += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* One chunk piece: len bytes at image offset moff of member `disk`, which
 * are array bytes [aoff, aoff+len). */
static int splice_piece(struct splice_run *r, int disk, uint64_t moff, uint64_t aoff, uint64_t len)
{
	struct array_member *m = &r->a->members[disk];
	uint64_t base;
	int in_fd = m->src->ops->raw_fd(m->src, &base);
	uint64_t end = aoff + len;
	uint64_t got = aoff;    /* array bytes below this are at out_fd or in the pipe
				 * (r->held of them in the pipe) */
	int ret;

	if (r->in_copy[disk])
		return copy_via_read(r, aoff, len);
	while (got < end) {
		size_t want = (size_t)min_u64(end - got, r->pipe_cap - r->held);
		loff_t o = (loff_t)(base + moff + (got - aoff));
		ssize_t n = want ? splice(in_fd, &o, r->pipe_w, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
				 : -1;

		if (n > 0) {
			atomic_fetch_add(&m->reads, 1);
			atomic_fetch_add(&m->read_bytes, (uint64_t)n);
			r->st->splices++;
			r->st->spliced_bytes += (uint64_t)n;
			got += (uint64_t)n;
			r->held += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if ((n < 0 && errno == EAGAIN && r->held) || (!want && r->held)) {
			/* the pipe is full: pass it on */
			ret = pipe_flush(r);
			if (ret)
				return ret;
			continue;
		}
		if (n < 0 && got == aoff && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
			r->in_copy[disk] = true;        /* this member takes no splice */
			return copy_via_read(r, aoff, len);
		}
		/* EIO, a short image (n == 0), ...: keep the whole blocks read
		 * before it, let array_read rebuild (or name) the rest */
		uint64_t cb = r->a->geom.chunk_bytes, blk = cb < BLOCK ? cb : BLOCK;
		uint64_t chunk0 = aoff - aoff % cb;     /* blocks count from the chunk's start */
		uint64_t keep = chunk0 + (got - chunk0) / blk * blk;
		if (keep < aoff)                /* (a piece starting mid-block) */
			keep = aoff;
		if (keep < got - r->held)       /* (already passed on) */
			keep = got - r->held;
		r->held -= (size_t)(got - keep);
		ret = pipe_flush(r);
		if (!ret)
			ret = pipe_drop(r, (size_t)(got - keep));
		if (ret)
			return ret;
		atomic_fetch_add(&m->read_errors, 1);
		return copy_via_read(r, keep, end - keep);
	}
	return 0;               /* (what it put in the pipe goes on later: held) */
}

/* Stripe s of the run is next: keep every member told to read ahead up to
 * 2 x PREFETCH_BYTES past its row s (topped up once half of that is used),
 * never past what the read can need of it - a member gives at most as many
 * bytes from row s on as the read has array bytes from stripe s on (a 1 MiB
 * read of 1 GiB chunks asks no member for a whole chunk) - nor past its
 * data. */
static void prefetch(struct splice_run *r, uint64_t s)
{
	uint64_t end = r->end;
	struct array *a = r->a;
	uint64_t cb = a->geom.chunk_bytes, sbytes = cb * (uint64_t)a->k;
	uint64_t at = s * cb;
	uint64_t lim = min_u64(at + 2 * (uint64_t)PREFETCH_BYTES,
			       min_u64(at + (end - s * sbytes), a->stripes * cb));

	for (int i = 0; i < a->geom.raid_disks; i++) {
		struct array_member *m = &a->members[i];
		uint64_t from = r->ra_end[i] > at ? r->ra_end[i] : at, to = min_u64(lim, m->readable_bytes);

		if (!m->src || r->in_copy[i] || r->ra_end[i] >= at + PREFETCH_BYTES || from >= to)
			continue;
		if (m->state != MEMBER_OK && m->state != MEMBER_REBUILDING)
			continue;
		uint64_t base;
		int fd = m->src->ops->raw_fd(m->src, &base);

		(void)posix_fadvise(fd, (off_t)(base + m->data_offset + from), (off_t)(to - from), POSIX_FADV_WILLNEED);
		atomic_fetch_add(&a->io.requests, 1);
		atomic_fetch_add(&a->io.bytes, to - from);
		r->st->prefetches++;
		r->ra_end[i] = to;
	}
}

/* What walk_pieces calls for each piece of a segment, in array order:
 * disk >= 0: array bytes [aoff, aoff+len) are member disk's bytes at image
 * offset moff, as they are; disk < 0: a run of pieces to rebuild. */
typedef int (*piece_fn)(struct splice_run *r, void *arg, uint64_t aoff, uint64_t len, int disk,
			uint64_t moff);

/* Walk [off, end) piece by piece (chunk pieces, runs of pieces to rebuild
 * merged); stops at the first non-zero return of fn and returns it.  With
 * sending, tells the members to read ahead as it goes. */
static int walk_pieces(struct splice_run *r, uint64_t off, uint64_t end, bool sending, piece_fn fn,
		       void *arg)
{
	struct array *a = r->a;
	uint64_t cb = a->geom.chunk_bytes, sbytes = cb * (uint64_t)a->k;
	uint64_t run = end;         /* start of a run of pieces to rebuild */
	struct stripe_map map;
	int ret = 0;

	for (uint64_t s = off / sbytes; !ret && off < end && s <= (end - 1) / sbytes; s++) {
		uint64_t sbeg = s * sbytes;
		uint64_t a1 = min_u64(end, sbeg + sbytes);

		if (sending)
			prefetch(r, s);
		layout_map_stripe(&a->geom, s, &map);
		for (uint64_t x = off > sbeg ? off : sbeg; x < a1 && !ret;) {
			uint64_t in = (x - sbeg) % cb, n = min_u64(cb - in, a1 - x);
			int disk = map.data_disk[(x - sbeg) / cb];

			if (!member_chunk_readable(a, disk, s) ||
			    member_untrusted(a, disk, s * cb + in, n)) {
				if (run == end)
					run = x;        /* rebuilt together with its neighbours */
			} else {
				if (run < x)
					ret = fn(r, arg, run, x - run, -1, 0);
				run = end;
				if (!ret)
					ret = fn(r, arg, x, n, disk, a->members[disk].data_offset + s * cb + in);
			}
			x += n;
		}
	}
	if (!ret && run < end)
		ret = fn(r, arg, run, end - run, -1, 0);
	return ret;
}

struct segment {
	uint8_t *buf;           /* the segment's buffer: array bytes [off, ...) */
	uint64_t off;
	uint64_t bad;           /* first array offset the read could not serve */
};

/* Worker threads: rebuild the run into the segment's buffer. */
static int rebuild_piece(struct splice_run *r, void *arg, uint64_t aoff, uint64_t len, int disk,
			 uint64_t moff)
{
	struct segment *sg = arg;

	(void)moff;
	for (uint64_t x = aoff; disk < 0 && x < aoff + len;) {
		size_t n = (size_t)min_u64(aoff + len - x, SLICE_BYTES);
		int ret = array_read(r->a, sg->buf + (x - sg->off), n, x, &sg->bad);

		if (ret)
			return ret;
		x += n;
	}
	return 0;
}

static int seg_read(void *ctx, int slot, uint8_t *buf, size_t len, uint64_t off, uint64_t *bad_off)
{
	struct segment sg = { buf, off, off };
	int ret;

	(void)slot;
	ret = walk_pieces(ctx, off, off + len, false, rebuild_piece, &sg);
	*bad_off = sg.bad;
	return ret;
}

/* The calling thread: send the piece, spliced or rebuilt (up to sg->bad). */
static int send_piece(struct splice_run *r, void *arg, uint64_t aoff, uint64_t len, int disk, uint64_t moff)
{
	struct segment *sg = arg;
	uint64_t n = len;
	int ret;

	if (disk >= 0)
		return splice_piece(r, disk, moff, aoff, len);
	if (sg->bad < aoff + len)
		n = sg->bad > aoff ? sg->bad - aoff : 0;
	ret = pipe_flush(r);
	if (!ret)
		ret = write_all(r->out_fd, sg->buf + (aoff - sg->off), (size_t)n);
	if (ret)
		return ret;
	*r->written += n;
	r->st->copied_bytes += n;
	if (n < len) {
		*r->bad_off = sg->bad;
		return -EIO;
	}
	return 0;
}

static int seg_send(void *ctx, int slot, const uint8_t *buf, size_t len, uint64_t off, int ret,
		    uint64_t bad_off)
{
	struct splice_run *r = ctx;
	struct segment sg = { (uint8_t *)buf, off, ret == -EIO ? bad_off : UINT64_MAX };

	(void)slot;
	if (ret && ret != -EIO) {
		pipeline_read_error(ret, off, bad_off);
		*r->bad_off = off;
		return -ECANCELED;      /* said here */
	}
	ret = walk_pieces(r, off, off + len, true, send_piece, &sg);
	if (!ret)
		ret = pipe_flush(r);
	return ret;
}

static bool all_members_plain(const struct array *a)
{
	for (int i = 0; i < a->geom.raid_disks; i++) {
		const struct array_member *m = &a->members[i];
		if (!m->src || (m->state != MEMBER_OK && m->state != MEMBER_REBUILDING))
			continue;
		uint64_t base;

		if (!m->src->ops->raw_fd || m->src->ops->raw_fd(m->src, &base) < 0)
			return false;
	}
	return true;
}

static int run_init(struct splice_run *r)
{
	int p[2], n = r->a->geom.raid_disks;

	r->pipe_r = r->pipe_w = -1;
	r->in_copy = calloc((size_t)n, sizeof(*r->in_copy));
	r->ra_end = calloc((size_t)n, sizeof(*r->ra_end));
	r->bounce = xaligned_alloc(SLICE_BYTES);
	if (!r->in_copy || !r->ra_end || !r->bounce)
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	r->pipe_r = p[0];
	r->pipe_w = p[1];
	pipe_grow(r->pipe_w, PIPE_WANT);   /* a smaller pipe works too */
	n = fcntl(r->pipe_w, F_GETPIPE_SZ);
	if (n <= 0)
		return -errno;
	r->pipe_cap = (size_t)n;
	return 0;
}

static void run_free(struct splice_run *r)
{
	if (r->pipe_w >= 0)
		close(r->pipe_w);
	if (r->pipe_r >= 0)
		close(r->pipe_r);
	free(r->bounce);
	free(r->ra_end);
	free(r->in_copy);
}

int splice_cat(struct array *a, int out_fd, uint64_t off, uint64_t len, int nthreads, uint64_t *written,
	       uint64_t *bad_off, struct splice_cat_stats *st)
{
	struct splice_cat_stats st_local;
	struct splice_run r = { .a = a, .out_fd = out_fd, .written = written, .bad_off = bad_off, .end = off + len };
	struct pipeline pl = {
		.vol = array_volume(a), .start = off, .length = len, .nthreads = nthreads,
		.read = seg_read, .read_ctx = &r, .consume = seg_send, .ctx = &r,
		.stream_of = a,         /* the pages spliced or read go once sent, unless cached before */
	};
	int ret;

	*written = 0;
	r.st = st ? st : &st_local;
	memset(r.st, 0, sizeof(*r.st));
	if (!all_members_plain(a) || a->prev)   /* a reshape: two geometries, array_read knows them */
		return -EOPNOTSUPP;
	ret = run_init(&r);
	if (ret) {
		/* no pipe or memory for it: nothing written, the pipeline may do */
		run_free(&r);
		return -EOPNOTSUPP;
	}
	ret = pipeline_run(&pl);
	if (ret == -ENOMEM || ret == -EAGAIN)
		ret = -ECANCELED;       /* pipeline_run said why */
	/* array_read counted the bytes it served; the rest were spliced */
	atomic_fetch_add(&a->bytes_served, *written - r.st->copied_bytes);
	run_free(&r);
	return ret;
}
