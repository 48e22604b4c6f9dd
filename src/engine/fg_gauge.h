/* fg_gauge.h - the foreground readers of an array being served, and the
 * controller that lets background work on the same array (the scrub, through
 * scrub_opts.fg) take what they leave.
 *
 * The front end (the mount) owns a gauge (fg_gauge_init) and brackets each
 * of its reads with fg_gauge_enter/fg_gauge_leave: reads in progress (the
 * queue depth), when the last one started, and each one's latency (its time
 * in the daemon) in a log-scale histogram per request-size class.  What the
 * daemon cannot see of a reader's latency is the wait for a CPU (its own
 * thread's, the reader's): a canary thread of the front end's priority
 * (fg_canary_start) measures it while background work runs and readers are
 * about, as how late it wakes from FG_CANARY_NS sleeps - one more class.
 * Latencies measured while no background work runs are the idle baseline,
 * learned all the time (the last FG_EPOCH or so of each class).
 *
 * Background work yields in one of two ways, by the gauge's latency target:
 *  - none (0): md's rule - back off whenever reads are in progress or one
 *    started less than idle_ns ago (fg_gauge_busy), down to its floor;
 *  - a target (default 1.5x the idle p99, or an absolute p99): a controller
 *    (struct fg_ctl, run by the background work) measures the readers' p99
 *    per size class over windows of FG_WINDOW_NS (longer while reads are
 *    few) and sets the work's rate: times FG_DECREASE when a class is over
 *    its target two windows in a row (or twice over it once: a p99 is noisy),
 *    plus a FG_INCREASE_DIV-th of the work's solo speed when all are under
 *    it, doubling (up to unlimited) while nobody reads.  While readers are
 *    about (the last window judged had reads in it, or the work is held to
 *    a rate or probing) the work also keeps to one CPU at a time
 *    (fg_ctl_one_cpu): on this 2-CPU machine two niced CPU-bound threads
 *    raise a 4 KiB reader's p99 2.1x (p99.9 12x), one 1.36x - no rate
 *    alone brings the first under 1.5x.  Where a class being
 *    read has no recent baseline (none yet, or its last idle read is
 *    FG_PROBE_EVERY_NS old) the work pauses for FG_PROBE_NS (a probe; at
 *    most once per FG_PROBE_EVERY_NS) so the readers' idle latency can be
 *    measured; the idle latencies of the probes add up in the epochs.  The work's own limits (md's speed_min and
 *    speed_max) still bound it.
 * The controller publishes its state in the gauge (fg_gauge_ctl_state) for
 * the mount's status.  Thread-safe: the front end's threads, the background
 * work and status readers use a gauge at once (atomics).
 */
#ifndef RAIDIMG_FG_GAUGE_H
#define RAIDIMG_FG_GAUGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FG_CLASSES 5                 /* request sizes: < 8K, < 64K, < 512K, larger; the canary */
#define FG_CANARY FG_CLASSES - 1
#define FG_CANARY_NS 1000000ull      /* the canary's sleep */
#define FG_BUCKETS 80                /* latencies: 4 per octave from 1.024 us, 20 octaves */
#define FG_EPOCH 8192                /* idle reads per baseline epoch */
#define FG_DEFAULT_TARGET_MILLI 1500 /* default target: p99 <= 1.5 x idle */
#define FG_WINDOW_NS 100000000ull    /* controller window: 100 ms ... */
#define FG_WINDOW_MAX_NS 1000000000ull /* ... up to 1 s while reads are few */
#define FG_WINDOW_READS 500          /* ... enough latencies to end a window early */
#define FG_PROBE_NS 250000000ull     /* a probe pauses the work this long */
#define FG_PROBE_SETTLE_NS 30000000ull /* of which the first part is not counted (work in flight) */
#define FG_PROBE_EVERY_NS 20000000000ull
#define FG_DECREASE 0.7
#define FG_INCREASE_DIV 32

struct fg_hist {
	_Atomic uint64_t n[FG_CLASSES][FG_BUCKETS];
};

struct fg_gauge {
	_Atomic int active;          /* reads in progress */
	_Atomic uint64_t last_ns;    /* now_ns() when the last one started; 0: none yet */
	_Atomic uint64_t reads;      /* reads counted */
	_Atomic uint64_t depth_sum;  /* sum over reads of the reads in progress when each started */
	_Atomic int bg;              /* background work running (its reads are not idle ones) */
	_Atomic int bg_run;          /* ... or paused by its controller for a probe */
	struct fg_hist busy;         /* latencies of reads while background work ran */
	struct fg_hist idle[2];      /* ... while none did: two epochs, idle[cur] filling */
	_Atomic uint64_t idle_n[2];
	_Atomic int cur;
	_Atomic uint64_t idle_last_ns[FG_CLASSES];   /* when the last idle read of a class ended */
	/* the latency target: a factor of the idle p99 (x1000), or an absolute
	 * p99 when target_ns is set; both 0: none (md's rule) */
	_Atomic uint32_t target_milli;
	_Atomic uint64_t target_ns;
	/* what one run of the controller leaves the next (the work may be
	 * restarted): the rate, the solo speed, the last probe */
	_Atomic uint64_t keep_rate, keep_solo, last_probe_ns;
	/* the controller's state (fg_gauge_ctl_state) */
	_Atomic int st_phase, st_class;
	_Atomic uint64_t st_rate, st_p99_ns, st_idle_p99_ns, st_target_ns, st_probes, st_decreases;
	_Atomic int st_one_cpu;
	/* the canary thread (fg_canary_start) */
	_Atomic int canary_stop;
	int canary_started;
	unsigned long canary_tid;    /* pthread_t */
};

/* What a controller is doing. */
enum fg_phase {
	FG_PHASE_OFF = 0,            /* no controller runs (or md's rule) */
	FG_PHASE_FREE,               /* nobody reads: the work runs unlimited (or ramps up to it) */
	FG_PHASE_LIMITED,            /* readers: the work is held to a rate */
	FG_PHASE_PROBING,            /* paused to measure the readers' idle latency */
};

/* A fresh gauge, the target the default (1.5 x idle). */
void fg_gauge_init(struct fg_gauge *g);

/* A foreground read starts (now: now_ns()) / ends (now: now_ns(), bytes:
 * its size, start: what fg_gauge_enter was given). */
void fg_gauge_enter(struct fg_gauge *g, uint64_t now);
void fg_gauge_leave(struct fg_gauge *g, uint64_t start, uint64_t now, uint64_t bytes);

/* Readers are in, or the last one started less than idle_ns before now
 * (md's is_mddev_idle, turned around).  A read that started after `now`
 * was taken counts as recent. */
static inline bool fg_gauge_busy(const struct fg_gauge *g, uint64_t now, uint64_t idle_ns)
{
	uint64_t last = atomic_load(&g->last_ns);

	return atomic_load(&g->active) > 0 || (last && (last >= now || now - last < idle_ns));
}

/* The latency target: "1.5" or "1.5x" (times the idle p99), "500us", "2ms",
 * "0.01s" (an absolute p99), "0" or "off" (none: md's rule).  0, or -EINVAL
 * for anything else (factors 1.01-100, times 1 us-10 s). */
int fg_target_parse(const char *word, uint32_t *milli, uint64_t *ns);
/* The target as parsed back: "1.50x", "500us", "0". */
void fg_target_format(uint32_t milli, uint64_t ns, char *buf, size_t len);
void fg_gauge_set_target(struct fg_gauge *g, uint32_t milli, uint64_t ns);
bool fg_gauge_has_target(const struct fg_gauge *g);

/* The idle p99 of a class (0: no idle latencies of it yet). */
uint64_t fg_gauge_idle_p99(struct fg_gauge *g, int cls);

/* The canary thread: start it from a thread of the readers' priority (not
 * the background work's, whose niceness it would inherit); stop it before
 * the gauge goes.  0 or -errno (then there is no canary). */
int fg_canary_start(struct fg_gauge *g);
void fg_canary_stop(struct fg_gauge *g);

/* The controller's state, for status: phase, the rate it holds the work to
 * (bytes/s per member, 0: unlimited), the p99 in the last window judged,
 * the idle p99 and the target it was held against (of the class nearest to
 * or furthest over its target: cls, named by fg_class_name), probes made
 * and rate decreases; readers' reads and their mean queue depth (reads in
 * progress as each started, itself included). */
struct fg_ctl_state {
	enum fg_phase phase;
	int cls;
	uint64_t rate, p99_ns, idle_p99_ns, target_ns, probes, decreases;
	uint64_t reads;
	double queue_depth;
	bool one_cpu;                /* the work keeps to one CPU (fg_ctl_one_cpu) */
};
void fg_gauge_ctl_state(struct fg_gauge *g, struct fg_ctl_state *st);
const char *fg_class_name(int cls);   /* "4K", "64K", "512K", "large", "wakeup" */

/* The controller, run by the background work on its own thread. */
struct fg_ctl {
	struct fg_gauge *g;          /* not owned */
	bool started;
	uint64_t win_start;          /* when the window started */
	uint64_t snap[FG_CLASSES][FG_BUCKETS];  /* g->busy at the window's start */
	double rate;                 /* bytes/s per member; 0: unlimited */
	double solo;                 /* the fastest the work went with nobody reading */
	uint64_t probe_start;        /* 0: not probing */
	bool readers;                /* the last window judged had reads in it */
	bool was_over;               /* the last window judged was over its target */
	double tokens;               /* bytes per member the work may still issue */
	uint64_t tok_ns;             /* when tokens were last topped up */
};

/* Background work starts (the gauge's reads stop being idle ones; the
 * controller picks up where the last run left it) / ends. */
void fg_ctl_begin(struct fg_ctl *c, struct fg_gauge *g, uint64_t now);
void fg_ctl_end(struct fg_ctl *c);

/* How long to wait before issuing more (ns, 0: go), given the work's
 * recent speed (bytes/s per member).  Runs the controller at each window's
 * end.  *limited: the wait is the readers' doing. */
uint64_t fg_ctl_delay(struct fg_ctl *c, uint64_t now, double speed, bool *limited);

/* Readers are about: the work should keep to one CPU at a time (its
 * threads take turns) - see the controller above.  The work's thread. */
bool fg_ctl_one_cpu(const struct fg_ctl *c);

/* The work issued `bytes` per member. */
void fg_ctl_issued(struct fg_ctl *c, uint64_t bytes);

#endif
