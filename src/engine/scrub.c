/* scrub.c - the scrub/resync engine (see scrub.h).
 *
 * Shape: scrub_run() is the coordinator.  It cuts the range into batches of
 * whole chunk rows (or, for chunks larger than a request, into column
 * slices of one row), hands each batch to the reader pool as one job per
 * member, and keeps two batches in flight: while the readers fill one
 * buffer, the coordinator checks (or repairs, or rebuilds from) the other.
 *
 *   batch_submit -> readers: reader_main/read_member -> batch_process ->
 *   check_stripe / rebuild_stripe -> report (mismatch, write) -> checkpoint
 *
 * Checking: parity_consistent (parity.h: isa-l's read-only check or
 * generate + compare, whichever is faster here) says yes for almost every
 * stripe; only a stripe that disagrees is regenerated and analysed unit by
 * unit (analyze -> unit_verdict -> run_add/run_flush).
 *
 * A member read that fails is retried row by row so that one bad chunk only
 * costs that chunk; stripes with a member missing or unreadable are checked
 * with the redundancy left (RAID6) or counted as unchecked.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


#include "member_io.h"
#include "pagecache.h"
#include "parity.h"
#include "outfile.h"
#include "scrub.h"
#include "sysio.h"
#include "util.h"
#include "xxh64.h"

#define NBATCH 2                         /* double buffering */
#define MAX_READERS 16
#define DEFAULT_READERS 4
#define MEM_MAX ((uint64_t)256 << 20)    /* all batch buffers together */
/* A batch's bytes of all members together stay within this, so that the
 * check finds them in the CPU's caches just after the readers copied them
 * in (at 36 members, 1 MiB per member in DRAM-sized buffers cost half the
 * speed); each member's piece stays between SLICE_MIN (fewer, larger
 * copies) and SLICE_MAX (arrays of up to 32 members, where the budget
 * shared out is larger than 256 KiB: fewer batches and hand-offs to the
 * readers; 1 MiB against 256 KiB, members cached, best of 9 on a busy
 * machine: 1.20x-1.39x faster at 5-16 members, 20-30 % less CPU).  The
 * members' storage still sees request_bytes requests: the read-ahead
 * windows (trails_ahead). */
#define CACHE_BUDGET ((uint64_t)8 << 20)
#define SLICE_MIN ((uint64_t)64 << 10)
#define SLICE_MAX ((uint64_t)1 << 20)
/* Read-ahead asked of each member past the batch being submitted, in
 * request_bytes windows (at least one): a disk with a long latency per
 * request needs several in flight.  Cold 4 GiB arrays, best of 3, busy
 * machine and disk: 8 MiB against one window, RAID5 5x512K 8.29 -> 5.71 s
 * (parallel dd of the members: 2.64-10.75 s), RAID6 16x64K 5.56 -> 4.79 s.
 * At most this much more of each member is in the page cache at a time. */
#define RA_DEPTH ((uint64_t)8 << 20)
#define SPEED_WINDOW_NS 1000000000ull    /* the speed is measured over 1-2 s */
#define DEFAULT_CHECKPOINT_NS (10ull * 1000000000ull)
#define DEFAULT_CHECKPOINT_BYTES ((uint64_t)256 << 20)
#define CHECKPOINT_MAGIC "raidimg-scrub-checkpoint 1"
#define CHECKPOINT_MAX_BYTES 4096    /* a checkpoint is ~300 bytes */

/* One batch: stripes [s0, s0 + rows), bytes [c0, c0 + cols) of each chunk
 * (cols = the chunk when rows > 1).  Member m's buffer holds its rows back
 * to back: row r at buf[m] + r * cols. */
struct batch {
	uint64_t s0, rows;
	uint32_t c0, cols;
	uint64_t seq;             /* submission order */
	uint8_t **buf;            /* [n], into scrub.mem */
	uint8_t *row_ok;          /* [n * rows]: that member's row was read */
	bool *want;               /* [n]: read this member */
	int next;                 /* next member to hand out */
	int pending;              /* member reads not finished */
	bool queued;              /* in flight (submitted, not yet processed) */
};

struct speed_mark {
	uint64_t ns, bytes;
};

struct scrub {
	struct array *a;          /* not owned */
	struct scrub_opts o;
	int n, k;
	uint64_t cb;              /* chunk bytes */
	uint64_t rows;            /* rows per batch (at most; what a batch buffer holds) */
	uint32_t cols;            /* bytes of each chunk per batch */
	uint64_t window;          /* read-ahead window per member (request_bytes) */
	struct batch batch[NBATCH];
	uint8_t *mem;             /* batch buffers; owned */
	uint8_t *scratch;         /* P', Q', lost blocks, recovery/locate scratch; owned */
	uint8_t *out;             /* rebuild: the recomputed role's rows; owned */
	uint8_t *fix;             /* repair: corrected bytes of one range; owned */
	uint64_t seq;
	enum parity_check_method check;   /* how check_full asks parity.h */

	/* reader pool */
	pthread_t tid[MAX_READERS];
	int nreaders;
	pthread_mutex_t lock;     /* batches, quit, error */
	pthread_cond_t work_cv;   /* readers: a job may be there */
	pthread_cond_t done_cv;   /* coordinator: a batch may be complete */
	bool quit;

	/* control */
	atomic_bool stop_req, pause_req;
	_Atomic uint64_t speed_min, speed_max;
	_Atomic int state;
	uint64_t fg_idle_ns;
	struct fg_ctl ctl;        /* the readers' latency controller (o.fg with a target); the coordinator's */
	/* readers about (fg_ctl_one_cpu, set by the coordinator): a thread
	 * holds cpu_lock while it reads or checks, so one works at a time */
	atomic_bool one_cpu;
	pthread_mutex_t cpu_lock;
	_Atomic uint64_t one_cpu_batches;

	/* position and counters (read by scrub_get_progress) */
	_Atomic uint64_t next_stripe;
	uint64_t resumed_at;
	_Atomic uint64_t done_bytes, issued_bytes;
	_Atomic uint64_t mismatches, units, writes, bytes_written, unchecked, read_errors;
	struct io_tally io;       /* member requests */
	_Atomic uint64_t throttle_ns, fg_backoffs;
	_Atomic uint64_t t0;
	pthread_mutex_t mark_lock;
	struct speed_mark mark[2];

	/* checkpoint */
	uint64_t cp_ns, cp_done;

	/* the members' page cache (pagecache.h), the coordinator's: a trail
	 * per member read through a plain file (NULL: none), the file offset
	 * of its data area, and the data-area bytes asked ahead so far */
	struct pc_trail **trail;
	uint64_t *trail_base;
	uint64_t *ra_end;

	/* outcome */
	_Atomic uint64_t t_end;   /* when scrub_run ended, 0 before */
	pthread_cond_t end_cv;    /* signalled (under lock) when scrub_run ends */
	bool ended;
	int error;
	char message[ERR_MAX];
	pthread_t thread;
	bool thread_started;
	int result;
};

static const uint64_t NO_OFFSET = UINT64_MAX;

const char *scrub_kind_name(enum scrub_kind k)
{
	switch (k) {
	case SCRUB_KIND_P: return "P";
	case SCRUB_KIND_Q: return "Q";
	case SCRUB_KIND_DATA: return "data";
	case SCRUB_KIND_PQ: return "P+Q";
	case SCRUB_KIND_DEGRADED: return "degraded";
	}
	return "?";
}

const char *scrub_state_name(enum scrub_state st)
{
	switch (st) {
	case SCRUB_IDLE: return "idle";
	case SCRUB_RUNNING: return "running";
	case SCRUB_PAUSED: return "paused";
	case SCRUB_DONE: return "done";
	case SCRUB_STOPPED: return "stopped";
	case SCRUB_FAILED: return "failed";
	}
	return "?";
}

/* Record the first error (the coordinator or a reader). */
static void set_error(struct scrub *s, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_error(struct scrub *s, int err, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->lock);
	if (!s->error) {
		s->error = err;
		va_start(ap, fmt);
		vsnprintf(s->message, sizeof(s->message), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&s->lock);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ------------------------------------------------------------------ */
/* speed and yielding                                                   */
/* ------------------------------------------------------------------ */

/* Bytes/s per member issued over the last one to two seconds. */
static uint64_t speed_now(struct scrub *s, uint64_t now, uint64_t *since_ns, uint64_t *since_bytes)
{
	uint64_t issued = atomic_load(&s->issued_bytes), dt, db;

	pthread_mutex_lock(&s->mark_lock);
	if (now - s->mark[1].ns >= SPEED_WINDOW_NS) {
		s->mark[0] = s->mark[1];
		s->mark[1].ns = now;
		s->mark[1].bytes = issued;
	}
	dt = now - s->mark[0].ns;
	db = issued - s->mark[0].bytes;
	pthread_mutex_unlock(&s->mark_lock);
	if (since_ns)
		*since_ns = dt;
	if (since_bytes)
		*since_bytes = db;
	return dt ? (uint64_t)((double)db * 1e9 / (double)dt) : 0;
}

/* Foreground readers of the array (the mount's gauge) are active. */
static bool fg_busy(const struct scrub *s, uint64_t now)
{
	return s->o.fg && fg_gauge_busy(s->o.fg, now, s->fg_idle_ns);
}

/* Nanoseconds to wait before issuing more, 0 to go on.  Like md_do_sync:
 * above speed_min, respect speed_max and yield to foreground reads - by
 * md's rule, or, when the gauge has a latency target, as its controller
 * says (fg_gauge.h; the coordinator's alone: readers then never wait). */
static uint64_t throttle_delay(struct scrub *s, bool reader, bool *fg)
{
	uint64_t now = now_ns(), dt, db, max = atomic_load(&s->speed_max), min = atomic_load(&s->speed_min);
	uint64_t speed = speed_now(s, now, &dt, &db);

	*fg = false;
	if (max && min > max)
		min = max;      /* as in md, a floor above the ceiling is the ceiling */
	if (speed <= min)
		return 0;
	if (max) {
		uint64_t need = (uint64_t)((double)db * 1e9 / (double)max);
		if (need > dt)
			return need - dt < 50000000ull ? need - dt : 50000000ull;
	}
	if (s->o.fg && fg_gauge_has_target(s->o.fg))
		return reader ? 0 : fg_ctl_delay(&s->ctl, now, (double)speed, fg);
	if (fg_busy(s, now)) {
		*fg = true;
		return 1000000ull;       /* look again in 1 ms */
	}
	return 0;
}

/* Wait until the throttle lets us go (or a stop).  `reader`: called by a
 * reader before a member request of a batch already submitted: only the
 * foreground matters then (speed_max was honoured at submission). */
static void throttle(struct scrub *s, bool reader)
{
	bool counted = false;

	while (!atomic_load(&s->stop_req)) {
		bool fg;
		uint64_t d = throttle_delay(s, reader, &fg);

		if (!d || (reader && !fg))
			return;
		if (fg && !counted) {
			atomic_fetch_add(&s->fg_backoffs, 1);
			counted = true;
		}
		sleep_ns(d);
		atomic_fetch_add(&s->throttle_ns, d);
	}
}

/* Before a thread reads a member's part or checks a batch: with readers
 * about, it takes its turn (cpu_turn_end after).  Returns whether it took
 * one. */
static bool cpu_turn(struct scrub *s)
{
	if (!atomic_load(&s->one_cpu))
		return false;
	pthread_mutex_lock(&s->cpu_lock);
	return true;
}

static void cpu_turn_end(struct scrub *s, bool took)
{
	if (took)
		pthread_mutex_unlock(&s->cpu_lock);
}

/* The coordinator, after each throttle: readers about?  (By the latency
 * controller only: md's rule stays md's.) */
static void one_cpu_update(struct scrub *s)
{
	atomic_store(&s->one_cpu, s->o.fg && fg_gauge_has_target(s->o.fg) && fg_ctl_one_cpu(&s->ctl));
}

/* Background work (scrub_opts.nice): the calling thread yields the CPU and
 * the disks to others (a higher niceness, the lowest best-effort I/O
 * priority).  Best effort: refused or not, the scrub goes on. */
static void be_background(const struct scrub *s)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	if (s->o.nice <= 0)
		return;
	if (getpriority(PRIO_PROCESS, (id_t)tid) < s->o.nice)
		(void)setpriority(PRIO_PROCESS, (id_t)tid, s->o.nice);
	/* IOPRIO_WHO_PROCESS, IOPRIO_CLASS_BE level 7 */
	(void)syscall(SYS_ioprio_set, 1, (int)tid, (2 << 13) | 7);
}

/* ------------------------------------------------------------------ */
/* reading                                                              */
/* ------------------------------------------------------------------ */

/* Rows of the batch [s0, s0 + rows) member m can serve, counted from s0
 * (member_io.h); none of the role a rebuild recomputes. */
static uint64_t batch_rows(const struct scrub *s, int m, uint64_t s0, uint64_t rows)
{
	if (s->o.mode == SCRUB_REBUILD && m == s->o.rebuild_role)
		return 0;
	return member_rows(s->a, m, s0, rows);
}

/* Read member m's part of batch b: one request for all its rows; if that
 * fails, row by row so that only the failing chunks are lost. */
static void read_member(struct scrub *s, struct batch *b, int m)
{
	uint64_t rows = batch_rows(s, m, b->s0, b->rows);
	uint8_t *ok = b->row_ok + (size_t)m * b->rows;
	uint64_t failed;

	if (!rows)
		return;
	/* row_ok is the inverse of member_read_rows' bad map; a member with
	 * a trail counts its read-ahead windows as its requests instead.
	 * Untrusted bytes (a ddrescue map, EWF acquisition errors, md's
	 * bad-block log) lose their chunk like a failed read: the stripe is
	 * checked with the redundancy left, never reported as a mismatch */
	failed = member_read_rows(s->a, m, b->buf[m], rows, b->cols, b->s0 * s->cb + b->c0, s->cb, 0, 0, ok,
				  s->trail[m] ? NULL : &s->io);
	for (uint64_t r = 0; r < rows; r++)
		ok[r] = !ok[r];
	if (failed)
		atomic_fetch_add(&s->read_errors, failed);
}

/* ------------------------------------------------------------------ */
/* the members' page cache                                              */
/* ------------------------------------------------------------------ */

/* A trail for every member read through a plain file (not the role a
 * rebuild recomputes).  Without memory for one, the member has none. */
static void trails_open(struct scrub *s)
{
	for (int m = 0; m < s->n; m++) {
		s->ra_end[m] = 0;
		s->trail[m] = NULL;
		if (!(s->o.mode == SCRUB_REBUILD && m == s->o.rebuild_role))
			member_trail_open(s->a, m, &s->trail[m], &s->trail_base[m]);
	}
}

/* Before batch [s0, s0 + rows) x [c0, c0 + cols) is read: keep every
 * member that serves it asked to read RA_DEPTH (or one window, if larger)
 * ahead of it, in windows of request_bytes, each counted as a member
 * request (the kernel is asked to read only where pages are missing). */
static void trails_ahead(struct scrub *s, uint64_t s0, uint64_t rows, uint32_t c0, uint32_t cols)
{
	uint64_t end = rows > 1 || c0 + cols >= s->cb ? (s0 + rows) * s->cb : s0 * s->cb + c0 + cols;

	for (int m = 0; m < s->n; m++) {
		uint64_t lim;

		if (!s->trail[m] || !batch_rows(s, m, s0, rows))
			continue;
		/* never past the stripes this scrub covers (a shard or --range
		 * reads, and counts, its own member bytes only) */
		lim = s->a->members[m].readable_bytes;
		if (lim > s->o.stripe_end * s->cb)
			lim = s->o.stripe_end * s->cb;
		if (s->ra_end[m] < s0 * s->cb + c0)
			s->ra_end[m] = s0 * s->cb + c0;
		while (s->ra_end[m] < end + (s->window > RA_DEPTH ? s->window : RA_DEPTH) && s->ra_end[m] < lim) {
			uint64_t len = lim - s->ra_end[m] < s->window ? lim - s->ra_end[m] : s->window;

			pc_trail_ahead(s->trail[m], s->trail_base[m] + s->ra_end[m], len, true);
			atomic_fetch_add(&s->io.requests, 1);
			atomic_fetch_add(&s->io.bytes, len);
			s->ra_end[m] += len;
		}
	}
}

/* Every member's data area below moff has been used. */
static void trails_behind(struct scrub *s, uint64_t moff)
{
	for (int m = 0; m < s->n; m++)
		if (s->trail[m])
			pc_trail_behind(s->trail[m], s->trail_base[m] + moff);
}

/* The run ended: what the trails brought in goes. */
static void trails_close(struct scrub *s)
{
	for (int m = 0; s->trail && m < s->n; m++) {
		pc_trail_close(s->trail[m]);
		s->trail[m] = NULL;
	}
}

/* The next member job, oldest batch first; NULL if none.  Under lock. */
static struct batch *job_take(struct scrub *s, int *member)
{
	struct batch *best = NULL;

	for (int i = 0; i < NBATCH; i++) {
		struct batch *b = &s->batch[i];
		if (b->queued && b->next < s->n && (!best || b->seq < best->seq))
			best = b;
	}
	if (!best)
		return NULL;
	*member = best->next++;
	while (best->next < s->n && !best->want[best->next])
		best->next++;
	return best;
}

static void *reader_main(void *arg)
{
	struct scrub *s = arg;

	be_background(s);
	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct batch *b = NULL;
		int m = -1;

		while (!s->quit && !(b = job_take(s, &m)))
			pthread_cond_wait(&s->work_cv, &s->lock);
		if (s->quit)
			break;
		pthread_mutex_unlock(&s->lock);
		throttle(s, true);
		bool turn = cpu_turn(s);
		read_member(s, b, m);
		cpu_turn_end(s, turn);
		pthread_mutex_lock(&s->lock);
		if (--b->pending == 0)
			pthread_cond_broadcast(&s->done_cv);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void batch_submit(struct scrub *s, struct batch *b, uint64_t s0, uint64_t rows, uint32_t c0,
			 uint32_t cols)
{
	int first = -1;

	trails_ahead(s, s0, rows, c0, cols);
	pthread_mutex_lock(&s->lock);
	b->s0 = s0;
	b->rows = rows;
	b->c0 = c0;
	b->cols = cols;
	b->seq = s->seq++;
	b->pending = 0;
	memset(b->row_ok, 0, (size_t)s->n * (size_t)s->rows);
	for (int m = 0; m < s->n; m++) {
		b->want[m] = batch_rows(s, m, s0, rows) > 0;
		if (b->want[m]) {
			b->pending++;
			if (first < 0)
				first = m;
		}
	}
	b->next = first < 0 ? s->n : first;
	b->queued = true;
	atomic_fetch_add(&s->issued_bytes, rows * cols);
	fg_ctl_issued(&s->ctl, rows * cols);
	pthread_cond_broadcast(&s->work_cv);
	pthread_mutex_unlock(&s->lock);
}

/* The coordinator is done with b: readers no longer look at it. */
static void batch_release(struct scrub *s, struct batch *b)
{
	pthread_mutex_lock(&s->lock);
	b->queued = false;
	pthread_mutex_unlock(&s->lock);
}

static void batch_wait(struct scrub *s, struct batch *b)
{
	pthread_mutex_lock(&s->lock);
	while (b->pending)
		pthread_cond_wait(&s->done_cv, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

/* ------------------------------------------------------------------ */
/* one stripe's blocks                                                  */
/* ------------------------------------------------------------------ */

/* A stripe of a batch, laid out for parity.c. */
struct stripe_view {
	uint64_t stripe;
	uint32_t c0, cols;         /* the part of each chunk in the buffers */
	struct stripe_map map;
	uint8_t *blk[LAYOUT_MAX_DISKS];     /* by disk (role) */
	bool ok[LAYOUT_MAX_DISKS];          /* read */
	uint8_t *slots[LAYOUT_MAX_DISKS];   /* data in parity order (RAID6: Q slots) */
	int nslots;
	int lost[LAYOUT_MAX_DISKS];         /* disks not read */
	int nlost;
};

static void view_slots(const struct scrub *s, struct stripe_view *v)
{
	v->nslots = stripe_slots(s->a, &v->map, v->blk, v->slots);
}

static void view_init(const struct scrub *s, const struct batch *b, uint64_t r, struct stripe_view *v)
{
	v->stripe = b->s0 + r;
	v->c0 = b->c0;
	v->cols = b->cols;
	layout_map_stripe(&s->a->geom, v->stripe, &v->map);
	v->nlost = 0;
	for (int d = 0; d < s->n; d++) {
		v->blk[d] = b->buf[d] + r * b->cols;
		v->ok[d] = b->want[d] && b->row_ok[(size_t)d * b->rows + r];
		if (!v->ok[d])
			v->lost[v->nlost++] = d;
	}
	view_slots(s, v);
}

/* The disk holding Q slot `slot`. */
static int disk_of_slot(const struct scrub *s, const struct stripe_map *map, int slot)
{
	for (int d = 0; d < s->n; d++)
		if (map->disk_slot[d] == slot)
			return d;
	return -1;
}

/* ------------------------------------------------------------------ */
/* reporting a mismatch, repairing it                                   */
/* ------------------------------------------------------------------ */

/* First and last differing byte of x and y over len; false if equal. */
static bool diff_range(const uint8_t *x, const uint8_t *y, uint32_t len, uint32_t *first, uint32_t *last)
{
	uint32_t i = 0, j = len;

	if (!memcmp(x, y, len))
		return false;
	while (x[i] == y[i])
		i++;
	while (x[j - 1] == y[j - 1])
		j--;
	*first = i;
	*last = j - 1;
	return true;
}

/* A mismatch being assembled from adjacent 4 KiB units: [lo, hi) relative
 * to the buffers (add c0 for the chunk offset). */
struct mm_run {
	bool open;
	enum scrub_kind kind;
	int role;
	uint32_t lo, hi, next_unit;
	bool pd, qd;
	uint32_t units;
};

static int write_counted(struct scrub *s, uint64_t stripe, int role, const uint8_t *buf, uint64_t len,
			 uint64_t member_off, struct scrub_write *w)
{
	struct array_member *am = &s->a->members[role];
	int ret;

	w->stripe = stripe;
	w->role = role;
	w->path = am->path;
	w->image_off = am->data_offset + member_off;
	w->len = len;
	ret = source_pwrite(am->src, buf, (size_t)len, w->image_off);
	if (ret) {
		set_error(s, ret, "%s (role %d): write of %" PRIu64 " bytes at offset %" PRIu64 " failed: %s",
			  am->path ? am->path : "?", role, len, w->image_off, strerror(-ret));
		return ret;
	}
	atomic_fetch_add(&s->writes, 1);
	atomic_fetch_add(&s->bytes_written, len);
	return 0;
}

/* Rewrite what the run says is wrong; up to two writes go to w[]. */
static int repair_run(struct scrub *s, const struct stripe_view *v, const struct mm_run *run,
		      const uint8_t *pp, const uint8_t *qq, struct scrub_write *w, int *nw)
{
	uint32_t lo = run->lo, len = run->hi - run->lo;
	uint64_t moff = v->stripe * s->cb + v->c0 + lo;
	int p = v->map.p_disk, q = v->map.q_disk, ret = 0;

	*nw = 0;
	switch (run->kind) {
	case SCRUB_KIND_P:
		ret = write_counted(s, v->stripe, p, pp + lo, len, moff, &w[(*nw)++]);
		break;
	case SCRUB_KIND_Q:
		ret = write_counted(s, v->stripe, q, qq + lo, len, moff, &w[(*nw)++]);
		break;
	case SCRUB_KIND_DATA:
		/* D = D' ^ (P ^ P'): P' was computed with the wrong D */
		for (uint32_t i = 0; i < len; i++)
			s->fix[i] = v->blk[run->role][lo + i] ^ v->blk[p][lo + i] ^ pp[lo + i];
		ret = write_counted(s, v->stripe, run->role, s->fix, len, moff, &w[(*nw)++]);
		break;
	case SCRUB_KIND_PQ:
		/* no single culprit: md's answer, P and Q from the data */
		ret = write_counted(s, v->stripe, p, pp + lo, len, moff, &w[(*nw)++]);
		if (!ret)
			ret = write_counted(s, v->stripe, q, qq + lo, len, moff, &w[(*nw)++]);
		break;
	case SCRUB_KIND_DEGRADED:
		/* a member unreadable here (read error): nothing can be pinned */
		break;
	}
	return ret;
}

static int run_flush(struct scrub *s, const struct stripe_view *v, struct mm_run *run,
		     const uint8_t *pp, const uint8_t *qq)
{
	struct scrub_mismatch mm;
	struct scrub_write w[2];
	int nw = 0, ret = 0;

	if (!run->open)
		return 0;
	run->open = false;
	memset(&mm, 0, sizeof(mm));
	mm.stripe = v->stripe;
	mm.kind = run->kind;
	mm.role = run->role;
	mm.chunk_off = v->c0 + run->lo;
	mm.len = run->hi - run->lo;
	mm.member_off = v->stripe * s->cb + mm.chunk_off;
	mm.image_off = run->role >= 0 ? s->a->members[run->role].data_offset + mm.member_off : NO_OFFSET;
	mm.path = run->role >= 0 ? s->a->members[run->role].path : NULL;
	mm.array_off = NO_OFFSET;
	if (run->kind == SCRUB_KIND_DATA)
		mm.array_off = (v->stripe * (uint64_t)s->k + (uint64_t)v->map.disk_data[run->role]) * s->cb +
			       mm.chunk_off;
	mm.p_role = v->map.p_disk;
	mm.q_role = v->map.q_disk;
	mm.p_differs = run->pd;
	mm.q_differs = run->qd;
	mm.units = run->units;
	if (s->o.mode == SCRUB_REPAIR) {
		ret = repair_run(s, v, run, pp, qq, w, &nw);
		mm.repaired = ret == 0 && nw > 0;
	}
	atomic_fetch_add(&s->mismatches, 1);
	atomic_fetch_add(&s->units, run->units);
	if (s->o.on_mismatch)
		s->o.on_mismatch(s->o.arg, &mm);
	/* a failed write is the last one counted in nw: report the others */
	if (ret)
		nw--;
	for (int i = 0; i < nw; i++)
		if (s->o.on_write)
			s->o.on_write(s->o.arg, &w[i]);
	return ret;
}

/* Add one unit's verdict [lo, hi) to the run, flushing a different one. */
static int run_add(struct scrub *s, const struct stripe_view *v, struct mm_run *run, enum scrub_kind kind,
		   int role, uint32_t unit, uint32_t lo, uint32_t hi, bool pd, bool qd,
		   const uint8_t *pp, const uint8_t *qq)
{
	int ret = 0;

	if (run->open && (run->kind != kind || run->role != role || run->next_unit != unit))
		ret = run_flush(s, v, run, pp, qq);
	if (!run->open) {
		run->open = true;
		run->kind = kind;
		run->role = role;
		run->lo = lo;
		run->pd = run->qd = false;
		run->units = 0;
	}
	run->hi = hi;
	run->pd |= pd;
	run->qd |= qd;
	run->units++;
	run->next_unit = unit + SCRUB_UNIT;
	return ret;
}

/* The verdict on one unit where P and/or Q differ, with full redundancy. */
static void unit_verdict(const struct scrub *s, const struct stripe_view *v, uint32_t u, uint32_t ulen,
			 bool pd, bool qd, enum scrub_kind *kind, int *role)
{
	uint8_t *slots[LAYOUT_MAX_DISKS];
	int c;

	if (s->a->geom.level != 6 || !qd) {
		*kind = SCRUB_KIND_P;
		*role = v->map.p_disk;
		return;
	}
	if (!pd) {
		*kind = SCRUB_KIND_Q;
		*role = v->map.q_disk;
		return;
	}
	for (int i = 0; i < v->nslots; i++)
		slots[i] = v->slots[i] ? v->slots[i] + u : NULL;
	c = parity_locate_culprit(v->nslots, ulen, slots, v->blk[v->map.p_disk] + u, v->blk[v->map.q_disk] + u,
				  s->scratch + 4 * (size_t)s->cols);
	*role = -1;
	*kind = SCRUB_KIND_PQ;
	if (c >= 0) {
		*kind = SCRUB_KIND_DATA;
		*role = disk_of_slot(s, &v->map, c);
	} else if (c == PARITY_P) {
		*kind = SCRUB_KIND_P;
		*role = v->map.p_disk;
	} else if (c == PARITY_Q) {
		*kind = SCRUB_KIND_Q;
		*role = v->map.q_disk;
	}
}

/* Walk the stripe unit by unit and report every differing run.  cmp_p /
 * cmp_q: which stored parities to compare with pp / qq; `full`: every
 * member was read (else the verdict is SCRUB_KIND_DEGRADED). */
static int analyze(struct scrub *s, const struct stripe_view *v, const uint8_t *pp, const uint8_t *qq,
		   bool cmp_p, bool cmp_q, bool full)
{
	struct mm_run run = { .open = false };
	const uint8_t *P = v->blk[v->map.p_disk];
	const uint8_t *Q = v->map.q_disk >= 0 ? v->blk[v->map.q_disk] : NULL;
	int ret = 0;

	for (uint32_t u = 0; u < v->cols && !ret; u += SCRUB_UNIT) {
		uint32_t ulen = v->cols - u < SCRUB_UNIT ? v->cols - u : SCRUB_UNIT;
		uint32_t pf = 0, pl = 0, qf = 0, ql = 0, lo, hi;
		bool pd = cmp_p && diff_range(P + u, pp + u, ulen, &pf, &pl);
		bool qd = cmp_q && diff_range(Q + u, qq + u, ulen, &qf, &ql);
		enum scrub_kind kind = SCRUB_KIND_DEGRADED;
		int role = -1;

		if (!pd && !qd) {
			ret = run_flush(s, v, &run, pp, qq);
			continue;
		}
		lo = u + (pd && qd ? (pf < qf ? pf : qf) : pd ? pf : qf);
		hi = u + 1 + (pd && qd ? (pl > ql ? pl : ql) : pd ? pl : ql);
		if (full)
			unit_verdict(s, v, u, ulen, pd, qd, &kind, &role);
		ret = run_add(s, v, &run, kind, role, u, lo, hi, pd, qd, pp, qq);
	}
	if (!ret)
		ret = run_flush(s, v, &run, pp, qq);
	return ret;
}

/* ------------------------------------------------------------------ */
/* checking and rebuilding one stripe                                   */
/* ------------------------------------------------------------------ */

static int check_full(struct scrub *s, struct stripe_view *v)
{
	uint8_t *pp = s->scratch, *qq = s->scratch + s->cols;
	const uint8_t *P = v->blk[v->map.p_disk];
	const uint8_t *Q = s->a->geom.level == 6 ? v->blk[v->map.q_disk] : NULL;
	bool generated = false;

	if (parity_consistent(v->nslots, v->cols, v->slots, P, Q, s->check, s->scratch, &generated))
		return 0;
	if (!Q) {
		if (!generated)
			parity_gen_p(v->nslots, v->cols, v->slots, pp);
		return analyze(s, v, pp, NULL, true, false, true);
	}
	if (!generated)
		parity_gen_pq(v->nslots, v->cols, v->slots, pp, qq);
	return analyze(s, v, pp, qq, true, true, true);
}

/* RAID6 with one block unread: check with the parity that is left. */
static int check_one_lost(struct scrub *s, struct stripe_view *v)
{
	uint8_t *pp = s->scratch, *qq = s->scratch + s->cols;
	uint8_t *lostbuf = s->scratch + 2 * (size_t)s->cols, *rs = s->scratch + 4 * (size_t)s->cols;
	int lost = v->lost[0], id = stripe_parity_id(s->a, &v->map, lost);

	if (id == PARITY_P || id == PARITY_Q) {
		parity_gen_pq(v->nslots, v->cols, v->slots, pp, qq);
		return analyze(s, v, pp, qq, id == PARITY_Q, id == PARITY_P, false);
	}
	/* a data block: rebuild it from P, then only Q can disagree */
	v->blk[lost] = lostbuf;
	view_slots(s, v);
	if (parity_recover(v->nslots, v->cols, v->slots, v->blk[v->map.p_disk], v->blk[v->map.q_disk], id,
			   PARITY_NONE, rs))
		return -EINVAL;
	parity_gen_pq(v->nslots, v->cols, v->slots, pp, qq);
	return analyze(s, v, pp, qq, false, true, false);
}

static int check_stripe(struct scrub *s, struct stripe_view *v)
{
	if (v->nlost == 0)
		return check_full(s, v);
	if (v->nlost == 1 && s->a->geom.level == 6)
		return check_one_lost(s, v);
	atomic_fetch_add(&s->unchecked, 1);
	return 0;
}

/* Recompute the rebuild role's block of this stripe into out. */
static int rebuild_stripe(struct scrub *s, struct stripe_view *v, uint8_t *out)
{
	int K = s->o.rebuild_role, other = -1, ids[2];
	uint8_t *rs = s->scratch + 4 * (size_t)s->cols;

	for (int i = 0; i < v->nlost; i++)
		if (v->lost[i] != K)
			other = v->lost[i];
	if (v->nlost > s->a->redundancy) {
		char roles[128] = "";
		size_t used = 0;
		for (int i = 0; i < v->nlost; i++)
			if (v->lost[i] != K && used < sizeof(roles))
				used += (size_t)snprintf(roles + used, sizeof(roles) - used, "%s%d", used ? ", " : "",
							 v->lost[i]);
		set_error(s, -EIO, "stripe %" PRIu64 ": role %d cannot be rebuilt: roles %s cannot be read there "
			  "either (RAID%d survives %d)", v->stripe, K, roles, s->a->geom.level, s->a->redundancy);
		return -EIO;
	}
	v->blk[K] = out;
	if (other >= 0)
		v->blk[other] = s->scratch + 2 * (size_t)s->cols;
	view_slots(s, v);
	ids[0] = stripe_parity_id(s->a, &v->map, K);
	ids[1] = other >= 0 ? stripe_parity_id(s->a, &v->map, other) : PARITY_NONE;
	if (parity_recover(v->nslots, v->cols, v->slots, v->blk[v->map.p_disk],
			   v->map.q_disk >= 0 ? v->blk[v->map.q_disk] : NULL, ids[0], ids[1], rs)) {
		set_error(s, -EINVAL, "stripe %" PRIu64 ": recovery of role %d failed", v->stripe, K);
		return -EINVAL;
	}
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	const uint8_t *z = parity_zero_block();

	while (n) {
		size_t c = n < PARITY_ZERO_MAX ? n : PARITY_ZERO_MAX;
		if (memcmp(p, z, c))
			return false;
		p += c;
		n -= c;
	}
	return true;
}

static int rebuild_write(struct scrub *s, const struct batch *b)
{
	size_t len = (size_t)(b->rows * b->cols);
	uint64_t off = s->o.rebuild_data_offset + b->s0 * s->cb + b->c0;
	int ret;

	if (s->o.rebuild_sparse && all_zero(s->out, len))
		return 0;
	ret = source_pwrite(s->o.rebuild_out, s->out, len, off);
	if (ret) {
		set_error(s, ret, "%s: write of %zu bytes at offset %" PRIu64 " failed: %s", s->o.rebuild_out->path,
			  len, off, strerror(-ret));
		return ret;
	}
	atomic_fetch_add(&s->writes, 1);
	atomic_fetch_add(&s->bytes_written, len);
	return 0;
}

static int batch_process(struct scrub *s, struct batch *b)
{
	struct stripe_view *v = malloc(sizeof(*v));
	int ret = 0;

	if (!v)
		return -ENOMEM;
	for (uint64_t r = 0; r < b->rows && !ret; r++) {
		view_init(s, b, r, v);
		if (s->o.mode == SCRUB_REBUILD)
			ret = rebuild_stripe(s, v, s->out + r * b->cols);
		else
			ret = check_stripe(s, v);
	}
	if (!ret && s->o.mode == SCRUB_REBUILD)
		ret = rebuild_write(s, b);
	free(v);
	return ret;
}

/* ------------------------------------------------------------------ */
/* checkpoint                                                           */
/* ------------------------------------------------------------------ */

const char *scrub_mode_name(enum scrub_mode m)
{
	return m == SCRUB_REPAIR ? "repair" : m == SCRUB_REBUILD ? "rebuild" : "check";
}

/* What identifies the array: uuid and geometry. */
static void identity(const struct array *a, char *buf, size_t len)
{
	char uuid[40];

	meta_uuid_format(a->uuid, uuid);
	snprintf(buf, len, "uuid=%s level=%d layout=%d raid_disks=%d chunk=%" PRIu32 " member_bytes=%" PRIu64,
		 uuid, a->geom.level, a->geom.layout, a->geom.raid_disks, a->geom.chunk_bytes, a->member_bytes);
}

static int checkpoint_write(struct scrub *s)
{
	struct outfile_opts oo = { .replace = true };
	struct outfile out;
	char id[512], err[ERR_MAX], text[1024];
	uint64_t next = atomic_load(&s->next_stripe);
	size_t len;
	int ret;

	/* a temporary of its own, renamed over the last checkpoint (outfile.h) */
	ret = outfile_open(&out, s->o.checkpoint_path, &oo, err, sizeof(err));
	if (ret) {
		set_error(s, ret, "cannot write the checkpoint: %s", err);
		return ret;
	}
	identity(s->a, id, sizeof(id));
	len = (size_t)snprintf(text, sizeof(text), "%s\narray %s\nmode %s\nrange %" PRIu64 " %" PRIu64 "\nnext %"
			       PRIu64 "\ncounts mismatches=%" PRIu64 " units=%" PRIu64 " writes=%" PRIu64
			       " bytes_written=%" PRIu64 " unchecked=%" PRIu64 " read_errors=%" PRIu64 "\n",
			       CHECKPOINT_MAGIC, id, scrub_mode_name(s->o.mode), s->o.stripe_begin, s->o.stripe_end,
			       next, atomic_load(&s->mismatches), atomic_load(&s->units), atomic_load(&s->writes),
			       atomic_load(&s->bytes_written), atomic_load(&s->unchecked),
			       atomic_load(&s->read_errors));
	/* a checksum of the rest: a checkpoint edited by hand is refused */
	if (len < sizeof(text))
		len += (size_t)snprintf(text + len, sizeof(text) - len, "sum %016" PRIx64 "\n", xxh64(text, len, 0));
	ret = len < sizeof(text) ? write_all(out.fd, text, len) : -ENAMETOOLONG;
	if (ret) {
		outfile_abort(&out);
		set_error(s, ret, "%s: cannot write the checkpoint: %s", s->o.checkpoint_path, strerror(-ret));
		return ret;
	}
	ret = outfile_commit(&out, err, sizeof(err));
	if (ret) {
		set_error(s, ret, "cannot write the checkpoint: %s", err);
		return ret;
	}
	s->cp_ns = now_ns();
	s->cp_done = atomic_load(&s->done_bytes);
	if (s->o.on_checkpoint)
		s->o.on_checkpoint(s->o.arg, next);
	return 0;
}

static int checkpoint_maybe(struct scrub *s)
{
	uint64_t every_ns = s->o.checkpoint_ns ? s->o.checkpoint_ns : DEFAULT_CHECKPOINT_NS;
	uint64_t every_b = s->o.checkpoint_bytes ? s->o.checkpoint_bytes : DEFAULT_CHECKPOINT_BYTES;

	if (!s->o.checkpoint_path)
		return 0;
	if (now_ns() - s->cp_ns < every_ns && atomic_load(&s->done_bytes) - s->cp_done < every_b)
		return 0;
	return checkpoint_write(s);
}

/* Parse a checkpoint into s (position and counters); 0 if there is none. */
int scrub_checkpoint_parse(char *text, size_t len, const char *path, struct scrub_checkpoint *cp, char *err,
			   size_t errlen)
{
	char line[512], nl = 0, *save = NULL;
	bool have_range = false, have_next = false, magic = false, have_counts = false;
	uint64_t sum = 0;
	size_t sum_at;

	memset(cp, 0, sizeof(*cp));
	if (len < strlen(CHECKPOINT_MAGIC) + 1 || strncmp(text, CHECKPOINT_MAGIC "\n", strlen(CHECKPOINT_MAGIC) + 1))
		return fmt_fail(err, errlen, -EINVAL, "%s: not a raidimg scrub checkpoint; remove it to start afresh",
				path);
	/* the last line is the checksum of everything before it */
	sum_at = text[len - 1] == '\n' ? len - 1 : len;
	while (sum_at && text[sum_at - 1] != '\n')
		sum_at--;
	if (sscanf(text + sum_at, "sum %16" SCNx64 "%c", &sum, &nl) != 2 || nl != '\n' ||
	    sum != xxh64(text, sum_at, 0))
		return fmt_fail(err, errlen, -EINVAL, "%s: the checkpoint does not match its checksum (damaged or "
				"edited); remove it to start afresh", path);
	text[sum_at] = '\0';
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		uint64_t *c = cp->counts;

		snprintf(line, sizeof(line), "%s", l);
		if ((!strncmp(line, "range ", 6) || !strncmp(line, "next ", 5) || !strncmp(line, "counts ", 7)) &&
		    strchr(line, '-'))
			return fmt_fail(err, errlen, -EINVAL, "%s: a negative number in the checkpoint ('%s'); remove "
					"it to start afresh", path, line);
		if (!strcmp(line, CHECKPOINT_MAGIC))
			magic = true;
		else if (!strncmp(line, "array ", 6))
			snprintf(cp->array_id, sizeof(cp->array_id), "%s", line + 6);
		else if (sscanf(line, "mode %15s", cp->mode) == 1)
			;
		else if (sscanf(line, "range %" SCNu64 " %" SCNu64, &cp->begin, &cp->end) == 2)
			have_range = true;
		else if (sscanf(line, "next %" SCNu64, &cp->next) == 1)
			have_next = true;
		else if (sscanf(line, "counts mismatches=%" SCNu64 " units=%" SCNu64 " writes=%" SCNu64
				" bytes_written=%" SCNu64 " unchecked=%" SCNu64 " read_errors=%" SCNu64,
				&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]) == 6)
			have_counts = true;
	}
	if (!magic || !have_range || !have_next || !have_counts || !cp->array_id[0] || !cp->mode[0])
		return fmt_fail(err, errlen, -EINVAL, "%s: not a raidimg scrub checkpoint (or a damaged one); remove "
				"it to start afresh", path);
	if (cp->begin > cp->end || cp->next < cp->begin || cp->next > cp->end)
		return fmt_fail(err, errlen, -EINVAL, "%s: checkpoint position %" PRIu64 " is outside its range %"
				PRIu64 "-%" PRIu64, path, cp->next, cp->begin, cp->end);
	return 0;
}

static int checkpoint_load(struct scrub *s, char *err, size_t errlen)
{
	const char *path = s->o.checkpoint_path;
	struct scrub_checkpoint cp;
	char id[512], *text;
	uint64_t units_max, *c = cp.counts, b, e, next;
	size_t len;
	int ret;

	/* it is written over at the next save: never a member, whatever its name */
	ret = evidence_check_path(path, err, errlen);
	if (ret)
		return ret;
	ret = side_file_read(path, "scrub checkpoint", CHECKPOINT_MAX_BYTES, false, &text, &len, err, errlen);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	ret = scrub_checkpoint_parse(text, len, path, &cp, err, errlen);
	free(text);
	if (ret)
		return ret;
	b = cp.begin;
	e = cp.end;
	next = cp.next;
	identity(s->a, id, sizeof(id));
	if (strcmp(id, cp.array_id)) {
		fmt_err(err, errlen, "%s: checkpoint of another array (%s; this array: %s); remove it or give the "
			"right members", path, cp.array_id, id);
		return -EINVAL;
	}
	if (strcmp(cp.mode, scrub_mode_name(s->o.mode))) {
		fmt_err(err, errlen, "%s: checkpoint of a %s, not a %s; remove it to start afresh", path, cp.mode,
			scrub_mode_name(s->o.mode));
		return -EINVAL;
	}
	if (b != s->o.stripe_begin || e != s->o.stripe_end) {
		fmt_err(err, errlen, "%s: checkpoint covers stripes %" PRIu64 "-%" PRIu64 ", this scrub %" PRIu64
			"-%" PRIu64 "; give the same --range or remove it", path, b, e, s->o.stripe_begin,
			s->o.stripe_end);
		return -EINVAL;
	}
	/* no count can exceed what the stripes done can hold: every 4 KiB unit
	 * of every member of every stripe at most once */
	units_max = (next - b) * (uint64_t)s->n * (s->cb / SCRUB_UNIT + 1);
	if (c[0] > c[1] || c[1] > units_max || c[2] > units_max || c[3] > units_max * SCRUB_UNIT ||
	    c[4] > next - b || c[5] > units_max) {
		fmt_err(err, errlen, "%s: the checkpoint's counts (mismatches=%" PRIu64 " units=%" PRIu64 " writes=%"
			PRIu64 " bytes_written=%" PRIu64 " unchecked=%" PRIu64 " read_errors=%" PRIu64 ") do not fit "
			"the %" PRIu64 " stripes it covers; remove it to start afresh", path, c[0], c[1], c[2], c[3],
			c[4], c[5], next - b);
		return -EINVAL;
	}
	atomic_store(&s->next_stripe, next);
	s->resumed_at = next;
	atomic_store(&s->mismatches, c[0]);
	atomic_store(&s->units, c[1]);
	atomic_store(&s->writes, c[2]);
	atomic_store(&s->bytes_written, c[3]);
	atomic_store(&s->unchecked, c[4]);
	atomic_store(&s->read_errors, c[5]);
	return 0;
}

/* ------------------------------------------------------------------ */
/* set-up                                                               */
/* ------------------------------------------------------------------ */

static void role_list(const struct array *a, int skip, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int r = 0; r < a->geom.raid_disks && used < len; r++) {
		const struct array_member *m = &a->members[r];
		if (r == skip || (m->state == MEMBER_OK && m->src))
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%d (%s)", used ? ", " : "", r, m->note);
	}
}

/* Whether the array allows what the mode needs; message in err. */
static int check_mode(struct array *a, const struct scrub_opts *o, char *err, size_t errlen)
{
	char roles[512];
	int lost = 0;

	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		bool usable = m->src && (m->state == MEMBER_OK || m->state == MEMBER_REBUILDING);
		if (o->mode == SCRUB_REBUILD && r == o->rebuild_role)
			continue;
		lost += !usable;
	}
	switch (o->mode) {
	case SCRUB_CHECK:
		if (lost >= a->redundancy) {
			role_list(a, -1, roles, sizeof(roles));
			fmt_err(err, errlen, "the array has no redundancy left to check (missing: %s); rebuild the "
				"missing member first (raidimg rebuild)", roles);
			return -EINVAL;
		}
		return 0;
	case SCRUB_REPAIR:
		if (lost) {
			role_list(a, -1, roles, sizeof(roles));
			fmt_err(err, errlen, "refusing to repair a degraded array (missing: %s): with a member gone "
				"a mismatch cannot be pinned on the data or the parity, so a repair could write wrong "
				"bytes; rebuild the missing member first", roles);
			return -EINVAL;
		}
		for (int r = 0; r < a->geom.raid_disks; r++) {
			const struct array_member *m = &a->members[r];
			if (m->readable_bytes < a->member_bytes) {
				fmt_err(err, errlen, "refusing to repair: %s (role %d) is readable only below %" PRIu64
					" bytes of its %" PRIu64 " (%s)", m->path, r, m->readable_bytes,
					a->member_bytes, m->note[0] ? m->note : "truncated");
				return -EINVAL;
			}
			if (m->has_meta && m->meta.events + 1 < a->events) {
				fmt_err(err, errlen, "refusing to repair: %s (role %d) was forced in although stale "
					"(events %" PRIu64 " of %" PRIu64 "): its data may be out of date, and a repair "
					"would write parity from it", m->path, r, m->meta.events, a->events);
				return -EINVAL;
			}
			if (!m->src->writable) {
				fmt_err(err, errlen, "%s: opened read-only; repair needs the members opened for writing",
					m->path);
				return -EROFS;
			}
		}
		return 0;
	case SCRUB_REBUILD:
		if (o->rebuild_role < 0 || o->rebuild_role >= a->geom.raid_disks) {
			fmt_err(err, errlen, "role %d does not exist: the array has roles 0-%d", o->rebuild_role,
				a->geom.raid_disks - 1);
			return -EINVAL;
		}
		if (!o->rebuild_out || !o->rebuild_out->writable) {
			fmt_err(err, errlen, "no writable output image for the rebuild");
			return -EINVAL;
		}
		if (lost + 1 > a->redundancy) {
			role_list(a, o->rebuild_role, roles, sizeof(roles));
			fmt_err(err, errlen, "role %d cannot be rebuilt: roles %s are missing too and RAID%d survives "
				"only %d", o->rebuild_role, roles, a->geom.level, a->redundancy);
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

/* Batch shape: rows of whole chunks up to a slice per member (the cache
 * budget shared out, within SLICE_MIN..SLICE_MAX and request_bytes), or
 * power-of-two column slices of one chunk when a chunk is larger; the
 * read-ahead window is request_bytes. */
static void plan_batches(struct scrub *s)
{
	uint64_t req = s->o.request_bytes ? s->o.request_bytes : SCRUB_DEFAULT_REQUEST;
	uint64_t cap = MEM_MAX / (NBATCH * (uint64_t)s->n);
	uint64_t slice = CACHE_BUDGET / (uint64_t)s->n;

	s->window = req;
	if (slice < SLICE_MIN)
		slice = SLICE_MIN;
	if (slice > SLICE_MAX)
		slice = SLICE_MAX;
	if (slice > req)
		slice = req;
	if (slice > cap)
		slice = cap;
	if (slice < SCRUB_UNIT)
		slice = SCRUB_UNIT;
	if (s->cb <= slice) {
		s->rows = slice / s->cb;
		s->cols = (uint32_t)s->cb;
	} else {
		uint64_t c = SCRUB_UNIT;
		while (c * 2 <= slice)
			c *= 2;
		s->rows = 1;
		s->cols = (uint32_t)c;
	}
}

/* The batch buffers: 2 MiB aligned and asking for transparent huge pages,
 * so that copying member data in (pread) takes a TLB miss per 2 MiB rather
 * than per 4 KiB.  Freed with free(). */
static uint8_t *batch_alloc(size_t len)
{
	const size_t huge = 2u << 20;
	void *p = NULL;

	len = (len + huge - 1) / huge * huge;
	if (posix_memalign(&p, huge, len))
		return NULL;
	if (getenv("RAIDIMG_SCRUB_NOHUGE") == NULL)
		madvise(p, len, MADV_HUGEPAGE);     /* a hint: fine if refused */
	return p;
}

static int alloc_buffers(struct scrub *s)
{
	size_t slot = (size_t)(s->rows * s->cols);

	s->mem = batch_alloc(slot * (size_t)s->n * NBATCH);
	/* P', Q', two lost blocks, then 2 blocks of recovery/locate scratch */
	s->scratch = xaligned_alloc((size_t)s->cols * 6);
	s->fix = malloc(s->cols);
	s->trail = calloc((size_t)s->n, sizeof(*s->trail));
	s->trail_base = calloc((size_t)s->n, sizeof(*s->trail_base));
	s->ra_end = calloc((size_t)s->n, sizeof(*s->ra_end));
	if (!s->trail || !s->trail_base || !s->ra_end)
		return -ENOMEM;
	if (s->o.mode == SCRUB_REBUILD)
		s->out = xaligned_alloc(slot);
	if (!s->mem || !s->scratch || !s->fix || (s->o.mode == SCRUB_REBUILD && !s->out))
		return -ENOMEM;
	for (int i = 0; i < NBATCH; i++) {
		struct batch *b = &s->batch[i];
		b->buf = calloc((size_t)s->n, sizeof(*b->buf));
		b->want = calloc((size_t)s->n, sizeof(*b->want));
		b->row_ok = calloc((size_t)s->n, (size_t)s->rows);
		if (!b->buf || !b->want || !b->row_ok)
			return -ENOMEM;
		for (int m = 0; m < s->n; m++)
			b->buf[m] = s->mem + ((size_t)i * (size_t)s->n + (size_t)m) * slot;
	}
	return 0;
}

int scrub_create(struct array *a, const struct scrub_opts *o, struct scrub **out, char *err, size_t errlen)
{
	struct scrub *s;
	int ret;

	if (a->prev) {
		fmt_err(err, errlen, "the array is in the middle of a reshape (%d -> %d members): its parity "
			"is checked, repaired and rebuilt in one geometry only, so scrub and rebuild refuse it; "
			"cat, export and mount read it", a->prev->geom.raid_disks, a->geom.raid_disks);
		return -ENOTSUP;
	}
	ret = check_mode(a, o, err, errlen);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->a = a;
	s->o = *o;
	s->n = a->geom.raid_disks;
	s->k = a->k;
	s->cb = a->geom.chunk_bytes;
	if (!s->o.stripe_end)
		s->o.stripe_end = a->stripes;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->mark_lock, NULL);
	pthread_mutex_init(&s->cpu_lock, NULL);
	pthread_cond_init(&s->work_cv, NULL);
	pthread_cond_init(&s->done_cv, NULL);
	pthread_cond_init(&s->end_cv, NULL);
	if (s->o.stripe_begin >= s->o.stripe_end || s->o.stripe_end > a->stripes) {
		fmt_err(err, errlen, "stripes %" PRIu64 "-%" PRIu64 " are not inside the array's 0-%" PRIu64,
			s->o.stripe_begin, s->o.stripe_end, a->stripes);
		ret = -EINVAL;
		goto fail;
	}
	atomic_store(&s->speed_min, o->speed_min);
	atomic_store(&s->speed_max, o->speed_max);
	s->fg_idle_ns = o->fg_idle_ns ? o->fg_idle_ns : SCRUB_DEFAULT_FG_IDLE_NS;
	atomic_store(&s->next_stripe, s->o.stripe_begin);
	s->resumed_at = s->o.stripe_begin;
	if (s->o.checkpoint_path && s->o.resume) {
		ret = checkpoint_load(s, err, errlen);
		if (ret)
			goto fail;
	}
	plan_batches(s);
	{
		/* a knob for benchmarks and tests: RAIDIMG_SCRUB_CHECK=gen|isal */
		const char *env = getenv("RAIDIMG_SCRUB_CHECK");

		s->check = env && !strcmp(env, "gen") ? PARITY_CHECK_GEN :
			   env && !strcmp(env, "isal") ? PARITY_CHECK_ISAL : PARITY_CHECK_AUTO;
	}
	ret = alloc_buffers(s);
	if (ret) {
		fmt_err(err, errlen, "out of memory for the scrub buffers");
		goto fail;
	}
	s->nreaders = o->readers > 0 ? o->readers : (s->n < DEFAULT_READERS ? s->n : DEFAULT_READERS);
	if (s->nreaders > MAX_READERS)
		s->nreaders = MAX_READERS;
	atomic_store(&s->state, SCRUB_IDLE);
	*out = s;
	return 0;
fail:
	scrub_free(s);
	return ret;
}

/* ------------------------------------------------------------------ */
/* the run                                                              */
/* ------------------------------------------------------------------ */

/* The cursor: the next batch starts at stripe cur_s, column cur_c. */
struct cursor {
	uint64_t s;
	uint32_t c;
};

static bool cursor_next(struct scrub *s, struct cursor *cur, uint64_t *s0, uint64_t *rows, uint32_t *c0)
{
	uint64_t end = s->o.stripe_end;

	if (cur->s >= end)
		return false;
	*s0 = cur->s;
	*c0 = cur->c;
	if (s->rows > 1 || s->cols == s->cb) {
		uint64_t left = end - cur->s;

		*rows = left < s->rows ? left : s->rows;
		/* a tail shorter than half a batch: the last two batches share
		 * the rows, so that no member request is small - and no buffer
		 * is larger than a batch (fresh memory costs the kernel a
		 * clear_page per 4 KiB: 11 % of a 36-member scrub of 2 GiB
		 * with buffers for 1.5 batches) */
		if (left > s->rows && left - s->rows < (s->rows + 1) / 2)
			*rows = (left + 1) / 2;
		cur->s += *rows;
		return true;
	}
	*rows = 1;
	cur->c += s->cols;
	if (cur->c >= s->cb) {
		cur->c = 0;
		cur->s++;
	}
	return true;
}

static int start_readers(struct scrub *s)
{
	int started = 0;

	s->quit = false;
	for (; started < s->nreaders; started++)
		if (pthread_create(&s->tid[started], NULL, reader_main, s))
			break;
	s->nreaders = started;
	return started ? 0 : -EAGAIN;
}

static void stop_readers(struct scrub *s)
{
	pthread_mutex_lock(&s->lock);
	s->quit = true;
	pthread_cond_broadcast(&s->work_cv);
	pthread_mutex_unlock(&s->lock);
	for (int i = 0; i < s->nreaders; i++)
		pthread_join(s->tid[i], NULL);
}

static void wait_while_paused(struct scrub *s)
{
	while (atomic_load(&s->pause_req) && !atomic_load(&s->stop_req)) {
		atomic_store(&s->state, SCRUB_PAUSED);
		sleep_ns(10000000ull);
	}
	atomic_store(&s->state, SCRUB_RUNNING);
}

/* Finish batch b: process it, move the position, tell the callbacks. */
static int batch_finish(struct scrub *s, struct batch *b)
{
	bool turn = cpu_turn(s);
	int ret = batch_process(s, b);
	uint64_t end;

	cpu_turn_end(s, turn);
	if (turn)
		atomic_fetch_add(&s->one_cpu_batches, 1);
	batch_release(s, b);
	if (ret)
		return ret;
	atomic_fetch_add(&s->done_bytes, b->rows * b->cols);
	trails_behind(s, b->s0 * s->cb + b->c0 + (b->rows > 1 ? b->rows * s->cb : b->cols));
	if (b->c0 + b->cols < s->cb)
		return 0;       /* a column slice that does not end its stripe */
	end = b->s0 + b->rows;
	atomic_store(&s->next_stripe, end);
	if (s->o.on_batch)
		s->o.on_batch(s->o.arg, b->s0, end);
	return checkpoint_maybe(s);
}

static int run_loop(struct scrub *s)
{
	struct cursor cur = { atomic_load(&s->next_stripe), 0 };
	int inflight = 0, head = 0, ret = 0;
	uint64_t s0, rows;
	uint32_t c0;

	for (int i = 0; i < NBATCH; i++) {
		throttle(s, false);
		one_cpu_update(s);
		if (atomic_load(&s->stop_req) || !cursor_next(s, &cur, &s0, &rows, &c0))
			break;
		batch_submit(s, &s->batch[i], s0, rows, c0, s->cols);
		inflight++;
	}
	while (inflight) {
		struct batch *b = &s->batch[head];

		batch_wait(s, b);
		inflight--;
		if (!ret)
			ret = batch_finish(s, b);
		else
			batch_release(s, b);
		if (!ret && !atomic_load(&s->stop_req)) {
			wait_while_paused(s);
			throttle(s, false);
			one_cpu_update(s);
			if (!atomic_load(&s->stop_req) && cursor_next(s, &cur, &s0, &rows, &c0)) {
				batch_submit(s, b, s0, rows, c0, s->cols);
				inflight++;
			}
		}
		head = (head + 1) % NBATCH;
	}
	return ret;
}

/* Repair: make the writes durable before saying so. */
static int sync_members(struct scrub *s)
{
	for (int r = 0; r < s->n; r++) {
		struct array_member *am = &s->a->members[r];
		int ret;

		if (!am->src || !am->src->writable)
			continue;
		ret = am->src->ops->sync(am->src);
		if (ret) {
			set_error(s, ret, "%s: sync failed: %s", am->path ? am->path : "?", strerror(-ret));
			return ret;
		}
	}
	return 0;
}

static int scrub_run_inner(struct scrub *s);

int scrub_run(struct scrub *s)
{
	int ret = scrub_run_inner(s);

	atomic_store(&s->t_end, now_ns());
	return ret;
}

static int scrub_run_inner(struct scrub *s)
{
	uint64_t now = now_ns();
	int ret;

	atomic_store(&s->t0, now);
	s->mark[0].ns = s->mark[1].ns = now;
	s->mark[0].bytes = s->mark[1].bytes = 0;
	s->cp_ns = now;
	s->cp_done = 0;
	atomic_store(&s->state, SCRUB_RUNNING);
	be_background(s);
	if (s->o.fg)
		fg_ctl_begin(&s->ctl, s->o.fg, now);
	ret = start_readers(s);
	if (ret) {
		fg_ctl_end(&s->ctl);
		set_error(s, ret, "cannot start reader threads");
		atomic_store(&s->state, SCRUB_FAILED);
		return ret;
	}
	trails_open(s);
	ret = run_loop(s);
	stop_readers(s);
	trails_close(s);
	fg_ctl_end(&s->ctl);
	if (s->o.mode == SCRUB_REPAIR && atomic_load(&s->writes)) {
		int r2 = sync_members(s);
		if (!ret)
			ret = r2;
	}
	if (ret) {
		if (!s->error)
			set_error(s, ret, "%s", strerror(-ret));
		atomic_store(&s->state, SCRUB_FAILED);
		if (s->o.checkpoint_path)
			checkpoint_write(s);
		return ret;
	}
	if (atomic_load(&s->next_stripe) < s->o.stripe_end) {
		ret = s->o.checkpoint_path ? checkpoint_write(s) : 0;
		atomic_store(&s->state, ret ? SCRUB_FAILED : SCRUB_STOPPED);
		if (ret)
			return ret;
		return -EINTR;
	}
	if (s->o.checkpoint_path && !evidence_check_path(s->o.checkpoint_path, NULL, 0) &&
	    unlink(s->o.checkpoint_path) && errno != ENOENT) {
		set_error(s, -errno, "%s: cannot remove the finished checkpoint: %s", s->o.checkpoint_path,
			  strerror(errno));
		atomic_store(&s->state, SCRUB_FAILED);
		return -EIO;
	}
	atomic_store(&s->state, SCRUB_DONE);
	return 0;
}

static void *scrub_thread(void *arg)
{
	struct scrub *s = arg;
	int ret = scrub_run(s);

	pthread_mutex_lock(&s->lock);
	s->result = ret;
	s->ended = true;
	pthread_cond_broadcast(&s->end_cv);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

bool scrub_wait(struct scrub *s, uint64_t timeout_ns)
{
	struct timespec ts;
	bool ended;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(timeout_ns / 1000000000ull);
	ts.tv_nsec += (long)(timeout_ns % 1000000000ull);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (!s->ended && s->thread_started)
		if (pthread_cond_timedwait(&s->end_cv, &s->lock, &ts))
			break;
	ended = s->ended;
	pthread_mutex_unlock(&s->lock);
	return ended;
}

int scrub_start(struct scrub *s)
{
	if (s->thread_started)
		return -EBUSY;
	atomic_store(&s->state, SCRUB_RUNNING);
	/* Mark it started before the thread exists: a short scrub can end
	 * (ended = true) before pthread_create returns, and clearing `ended`
	 * after that made scrub_wait wait forever. */
	pthread_mutex_lock(&s->lock);
	s->thread_started = true;
	s->ended = false;
	pthread_mutex_unlock(&s->lock);
	if (pthread_create(&s->thread, NULL, scrub_thread, s)) {
		pthread_mutex_lock(&s->lock);
		s->thread_started = false;
		pthread_mutex_unlock(&s->lock);
		atomic_store(&s->state, SCRUB_IDLE);
		return -EAGAIN;
	}
	return 0;
}

int scrub_join(struct scrub *s)
{
	if (!s->thread_started)
		return -EINVAL;
	pthread_join(s->thread, NULL);
	s->thread_started = false;
	return s->result;
}

void scrub_stop(struct scrub *s)
{
	atomic_store(&s->stop_req, true);
}

void scrub_pause(struct scrub *s, bool pause)
{
	atomic_store(&s->pause_req, pause);
}

void scrub_set_limits(struct scrub *s, uint64_t speed_min, uint64_t speed_max)
{
	atomic_store(&s->speed_min, speed_min);
	atomic_store(&s->speed_max, speed_max);
}

void scrub_get_progress(struct scrub *s, struct scrub_progress *p)
{
	uint64_t t0 = atomic_load(&s->t0), t_end = atomic_load(&s->t_end), now = t_end ? t_end : now_ns();

	memset(p, 0, sizeof(*p));
	p->state = (enum scrub_state)atomic_load(&s->state);
	p->mode = s->o.mode;
	p->stripe_begin = s->o.stripe_begin;
	p->stripe_end = s->o.stripe_end;
	p->next_stripe = atomic_load(&s->next_stripe);
	p->resumed_at = s->resumed_at;
	p->chunk_bytes = s->cb;
	p->done_bytes = atomic_load(&s->done_bytes);
	p->total_bytes = (s->o.stripe_end - s->resumed_at) * s->cb;
	p->seconds = t0 ? (double)(now - t0) / 1e9 : 0;
	p->speed = t0 && p->state == SCRUB_RUNNING ? (double)speed_now(s, now, NULL, NULL) : 0;
	p->speed_min = atomic_load(&s->speed_min);
	p->speed_max = atomic_load(&s->speed_max);
	p->mismatches = atomic_load(&s->mismatches);
	p->mismatch_units = atomic_load(&s->units);
	p->writes = atomic_load(&s->writes);
	p->bytes_written = atomic_load(&s->bytes_written);
	p->stripes_unchecked = atomic_load(&s->unchecked);
	p->read_errors = atomic_load(&s->read_errors);
	p->member_requests = atomic_load(&s->io.requests);
	p->member_request_bytes = atomic_load(&s->io.bytes);
	p->throttle_ns = atomic_load(&s->throttle_ns);
	p->fg_backoffs = atomic_load(&s->fg_backoffs);
	p->one_cpu_batches = atomic_load(&s->one_cpu_batches);
	pthread_mutex_lock(&s->lock);
	p->error = s->error;
	snprintf(p->message, sizeof(p->message), "%s", s->message);
	pthread_mutex_unlock(&s->lock);
}

void scrub_free(struct scrub *s)
{
	if (!s)
		return;
	if (s->thread_started) {
		scrub_stop(s);
		scrub_join(s);
	}
	for (int i = 0; i < NBATCH; i++) {
		free(s->batch[i].buf);
		free(s->batch[i].want);
		free(s->batch[i].row_ok);
	}
	free(s->mem);
	free(s->scratch);
	free(s->fix);
	free(s->out);
	trails_close(s);
	free(s->trail);
	free(s->trail_base);
	free(s->ra_end);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->mark_lock);
	pthread_mutex_destroy(&s->cpu_lock);
	pthread_cond_destroy(&s->work_cv);
	pthread_cond_destroy(&s->done_cv);
	pthread_cond_destroy(&s->end_cv);
	free(s);
}
