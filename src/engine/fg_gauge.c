/* fg_gauge.c - see fg_gauge.h.
 *
 * Shape: fg_gauge_enter/leave count reads into histograms (busy or idle by
 * the gauge's bg flag; the idle ones in two epochs turned every FG_EPOCH
 * reads, so the baseline follows the readers).  The controller (fg_ctl_*)
 * keeps a snapshot of the busy histogram at its window's start; at the
 * window's end the difference gives each class's p99 (ctl_window), which
 * moves the rate (ctl_readers, ctl_nobody) or starts a probe; the rate is
 * enforced as a token bucket (fg_ctl_delay, fg_ctl_issued).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gauge.h"
#include "util.h"
#include <sys/prctl.h>
#include <time.h>

#define MIN_BASE_READS 50            /* idle reads of a class in the current epoch to use it alone */
#define MIN_STEP (1024.0 * 1024.0)   /* additive increase: at least 1 MiB/s */
#define BURST_NS 20000000.0          /* the token bucket holds 20 ms of the rate ... */
#define BURST_MIN (256.0 * 1024.0)   /* ... or 256 KiB */
#define MAX_WAIT_NS 50000000ull      /* look again at least this often */

/* ---- histograms ---- */

static int size_class(uint64_t bytes)
{
	return bytes < (8u << 10) ? 0 : bytes < (64u << 10) ? 1 : bytes < (512u << 10) ? 2 : 3;
}

/* Bucket of a latency: 4 per octave of 1.024 us units. */
static int bucket(uint64_t ns)
{
	uint64_t u = ns >> 10;
	int o, m, b;

	if (!u)
		return 0;
	o = 63 - __builtin_clzll(u);
	m = o >= 2 ? (int)((u >> (o - 2)) & 3) : (int)((u << (2 - o)) & 3);
	b = o * 4 + m;
	return b < FG_BUCKETS ? b : FG_BUCKETS - 1;
}

/* The lowest latency of bucket b (b may be FG_BUCKETS: the top's end). */
static uint64_t bucket_lo(int b)
{
	return ((uint64_t)(4 + b % 4) << (b / 4)) * 1024 / 4;
}

/* p99 of counts n[0..FG_BUCKETS) (nearest rank; the bucket's upper end);
 * 0 when there are none. */
static uint64_t p99_of(const uint64_t *n)
{
	uint64_t total = 0, rank, cum = 0;

	for (int b = 0; b < FG_BUCKETS; b++)
		total += n[b];
	if (!total)
		return 0;
	rank = (total * 99 + 99) / 100;
	for (int b = 0; b < FG_BUCKETS; b++) {
		cum += n[b];
		if (cum >= rank)
			return bucket_lo(b + 1);
	}
	return bucket_lo(FG_BUCKETS);
}

static void hist_load(const struct fg_hist *h, int cls, uint64_t *out)
{
	for (int b = 0; b < FG_BUCKETS; b++)
		out[b] = atomic_load(&h->n[cls][b]);
}

/* ---- the gauge ---- */

void fg_gauge_init(struct fg_gauge *g)
{
	memset(g, 0, sizeof(*g));
	atomic_store(&g->target_milli, FG_DEFAULT_TARGET_MILLI);
}

void fg_gauge_enter(struct fg_gauge *g, uint64_t now)
{
	int depth = atomic_fetch_add(&g->active, 1) + 1;

	atomic_store(&g->last_ns, now);
	atomic_fetch_add(&g->reads, 1);
	atomic_fetch_add(&g->depth_sum, (uint64_t)depth);
}

/* Start a fresh idle epoch (the older one is cleared and refilled). */
static void idle_turn(struct fg_gauge *g, int cur)
{
	int other = !cur;

	for (int c = 0; c < FG_CLASSES; c++)
		for (int b = 0; b < FG_BUCKETS; b++)
			atomic_store(&g->idle[other].n[c][b], 0);
	atomic_store(&g->idle_n[other], 0);
	atomic_store(&g->cur, other);
}

/* One latency of class cls, ending now. */
static void record(struct fg_gauge *g, int cls, uint64_t lat, uint64_t now)
{
	int b = bucket(lat);

	if (atomic_load(&g->bg)) {
		atomic_fetch_add(&g->busy.n[cls][b], 1);
	} else {
		int cur = atomic_load(&g->cur);

		atomic_fetch_add(&g->idle[cur].n[cls][b], 1);
		atomic_store(&g->idle_last_ns[cls], now);
		/* exactly one reader sees the epoch fill up, and turns it */
		if (atomic_fetch_add(&g->idle_n[cur], 1) + 1 == FG_EPOCH)
			idle_turn(g, cur);
	}
}

void fg_gauge_leave(struct fg_gauge *g, uint64_t start, uint64_t now, uint64_t bytes)
{
	record(g, size_class(bytes), now > start ? now - start : 0, now);
	atomic_fetch_sub(&g->active, 1);
}

const char *fg_class_name(int cls)
{
	static const char *const names[FG_CLASSES] = { "4K", "64K", "512K", "large", "wakeup" };

	return cls >= 0 && cls < FG_CLASSES ? names[cls] : "?";
}

/* ---- the canary ---- */

#define CANARY_IDLE_NS 20000000ull   /* nothing to measure: look again this often */
#define CANARY_READERS_NS 200000000ull  /* readers are about: one started this recently */

static void nap(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	nanosleep(&ts, NULL);
}

static void *canary_main(void *arg)
{
	struct fg_gauge *g = arg;

	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);   /* wake when asked, not 50 us later */
	while (!atomic_load(&g->canary_stop)) {
		uint64_t t0 = now_ns(), t1;

		if (!atomic_load(&g->bg_run) || !fg_gauge_busy(g, t0, CANARY_READERS_NS)) {
			nap(CANARY_IDLE_NS);
			continue;
		}
		nap(FG_CANARY_NS);
		t1 = now_ns();
		record(g, FG_CANARY, t1 - t0 > FG_CANARY_NS ? t1 - t0 - FG_CANARY_NS : 0, t1);
	}
	return NULL;
}

int fg_canary_start(struct fg_gauge *g)
{
	pthread_t t;
	int ret;

	if (g->canary_started)
		return 0;
	atomic_store(&g->canary_stop, 0);
	ret = pthread_create(&t, NULL, canary_main, g);
	if (ret)
		return -ret;
	g->canary_tid = (unsigned long)t;
	g->canary_started = 1;
	return 0;
}

void fg_canary_stop(struct fg_gauge *g)
{
	if (!g->canary_started)
		return;
	atomic_store(&g->canary_stop, 1);
	pthread_join((pthread_t)g->canary_tid, NULL);
	g->canary_started = 0;
}

uint64_t fg_gauge_idle_p99(struct fg_gauge *g, int cls)
{
	uint64_t a[FG_BUCKETS], b[FG_BUCKETS], na = 0;
	int cur = atomic_load(&g->cur);

	hist_load(&g->idle[cur], cls, a);
	for (int i = 0; i < FG_BUCKETS; i++)
		na += a[i];
	if (na < MIN_BASE_READS) {
		hist_load(&g->idle[!cur], cls, b);
		for (int i = 0; i < FG_BUCKETS; i++)
			a[i] += b[i];
	}
	return p99_of(a);
}

void fg_gauge_set_target(struct fg_gauge *g, uint32_t milli, uint64_t ns)
{
	atomic_store(&g->target_milli, ns ? 0 : milli);
	atomic_store(&g->target_ns, ns);
}

bool fg_gauge_has_target(const struct fg_gauge *g)
{
	return atomic_load(&g->target_milli) || atomic_load(&g->target_ns);
}

int fg_target_parse(const char *word, uint32_t *milli, uint64_t *ns)
{
	char *end;
	double v;

	*milli = 0;
	*ns = 0;
	if (!strcmp(word, "off") || !strcmp(word, "0"))
		return 0;
	errno = 0;
	v = strtod(word, &end);
	if (errno || end == word || !isfinite(v) || v <= 0)
		return -EINVAL;
	if (!*end || !strcmp(end, "x")) {
		if (v < 1.01 || v > 100)
			return -EINVAL;
		*milli = (uint32_t)(v * 1000 + 0.5);
		return 0;
	}
	if (!strcmp(end, "us"))
		v *= 1e3;
	else if (!strcmp(end, "ms"))
		v *= 1e6;
	else if (!strcmp(end, "s"))
		v *= 1e9;
	else
		return -EINVAL;
	if (v < 1e3 || v > 1e10)
		return -EINVAL;
	*ns = (uint64_t)(v + 0.5);
	return 0;
}

void fg_target_format(uint32_t milli, uint64_t ns, char *buf, size_t len)
{
	if (ns)
		snprintf(buf, len, "%lluus", (unsigned long long)((ns + 500) / 1000));
	else if (milli)
		snprintf(buf, len, "%.2fx", milli / 1000.0);
	else
		snprintf(buf, len, "0");
}

void fg_gauge_ctl_state(struct fg_gauge *g, struct fg_ctl_state *st)
{
	uint64_t reads = atomic_load(&g->reads);

	st->phase = (enum fg_phase)atomic_load(&g->st_phase);
	st->cls = atomic_load(&g->st_class);
	st->rate = atomic_load(&g->st_rate);
	st->p99_ns = atomic_load(&g->st_p99_ns);
	st->idle_p99_ns = atomic_load(&g->st_idle_p99_ns);
	st->target_ns = atomic_load(&g->st_target_ns);
	st->probes = atomic_load(&g->st_probes);
	st->decreases = atomic_load(&g->st_decreases);
	st->one_cpu = atomic_load(&g->st_one_cpu) != 0;
	st->reads = reads;
	st->queue_depth = reads ? (double)atomic_load(&g->depth_sum) / (double)reads : 0;
}

/* ---- the controller ---- */

static void ctl_snap(struct fg_ctl *c, uint64_t now)
{
	for (int cls = 0; cls < FG_CLASSES; cls++)
		hist_load(&c->g->busy, cls, c->snap[cls]);
	c->win_start = now;
}

bool fg_ctl_one_cpu(const struct fg_ctl *c)
{
	return c->started && (c->readers || c->rate || c->probe_start || atomic_load(&c->g->active) > 0);
}

static void ctl_publish(struct fg_ctl *c, enum fg_phase phase)
{
	atomic_store(&c->g->st_phase, (int)phase);
	atomic_store(&c->g->st_rate, (uint64_t)c->rate);
	atomic_store(&c->g->st_one_cpu, fg_ctl_one_cpu(c));
}

void fg_ctl_begin(struct fg_ctl *c, struct fg_gauge *g, uint64_t now)
{
	memset(c, 0, sizeof(*c));
	c->g = g;
	c->started = true;
	c->tok_ns = now;
	c->rate = (double)atomic_load(&g->keep_rate);
	c->solo = (double)atomic_load(&g->keep_solo);
	atomic_store(&g->bg, 1);
	atomic_store(&g->bg_run, 1);
	ctl_snap(c, now);
	ctl_publish(c, c->rate ? FG_PHASE_LIMITED : FG_PHASE_FREE);
}

void fg_ctl_end(struct fg_ctl *c)
{
	if (!c->started)
		return;
	c->started = false;
	atomic_store(&c->g->bg, 0);
	atomic_store(&c->g->bg_run, 0);
	atomic_store(&c->g->keep_rate, (uint64_t)c->rate);
	atomic_store(&c->g->keep_solo, (uint64_t)c->solo);
	c->rate = 0;
	c->readers = false;
	ctl_publish(c, FG_PHASE_OFF);
}

/* Nobody read in the window: ramp up to unlimited, learn the solo speed. */
static void ctl_nobody(struct fg_ctl *c, double speed)
{
	c->readers = false;
	if (!c->rate) {
		if (speed > c->solo)
			c->solo = speed;
	} else {
		c->rate *= 2;
		if ((c->solo && c->rate >= c->solo) || (speed > 0 && c->rate > 4 * speed))
			c->rate = 0;
	}
	atomic_store(&c->g->st_p99_ns, 0);
	ctl_publish(c, c->rate ? FG_PHASE_LIMITED : FG_PHASE_FREE);
}

/* Readers in the window: n[cls] their latencies there. */
static void ctl_readers(struct fg_ctl *c, uint64_t now, double speed, uint64_t n[FG_CLASSES][FG_BUCKETS],
			const uint64_t *count)
{
	struct fg_gauge *g = c->g;
	uint64_t abs_ns = atomic_load(&g->target_ns), milli = atomic_load(&g->target_milli);
	bool judged = false, over = false, far_over = false, want_probe = false;
	double worst = -1;
	uint64_t probed;

	c->readers = true;
	for (int cls = 0; cls < FG_CLASSES; cls++) {
		uint64_t p99, base, tgt, last;

		if (!count[cls])
			continue;
		p99 = p99_of(n[cls]);
		base = fg_gauge_idle_p99(g, cls);
		last = atomic_load(&g->idle_last_ns[cls]);
		if (!abs_ns && (!base || now - last > FG_PROBE_EVERY_NS))
			want_probe = true;
		if (!abs_ns && !base)
			continue;
		tgt = abs_ns ? abs_ns : base * milli / 1000;
		judged = true;
		over = over || p99 > tgt;
		far_over = far_over || p99 > 2 * tgt;
		if ((double)p99 / (double)tgt > worst) {
			worst = (double)p99 / (double)tgt;
			atomic_store(&g->st_class, cls);
			atomic_store(&g->st_p99_ns, p99);
			atomic_store(&g->st_idle_p99_ns, base);
			atomic_store(&g->st_target_ns, tgt);
		}
	}
	probed = atomic_load(&g->last_probe_ns);
	if (want_probe && (!probed || now - probed >= FG_PROBE_EVERY_NS)) {
		c->probe_start = now;
		atomic_fetch_add(&g->st_probes, 1);
		ctl_publish(c, FG_PHASE_PROBING);
		return;
	}
	if (!judged)
		return;         /* nothing to judge by yet: hold */
	/* a p99 is a noisy figure on a busy machine: one window over the
	 * target is taken for noise, two in a row (or one far over) are not */
	if (over && !far_over && !c->was_over) {
		c->was_over = true;
		ctl_publish(c, c->rate ? FG_PHASE_LIMITED : FG_PHASE_FREE);
		return;
	}
	c->was_over = over;
	if (over) {
		if (!c->rate)
			c->rate = speed > MIN_STEP ? speed : MIN_STEP;
		c->rate *= FG_DECREASE;
		if (c->rate < 1)
			c->rate = 1;
		atomic_fetch_add(&g->st_decreases, 1);
	} else if (c->rate) {
		double step = (c->solo > speed ? c->solo : speed) / FG_INCREASE_DIV;

		c->rate += step > MIN_STEP ? step : MIN_STEP;
		if (c->solo && c->rate >= c->solo)
			c->rate = 0;
	}
	ctl_publish(c, c->rate ? FG_PHASE_LIMITED : FG_PHASE_FREE);
}

/* The window may end: judge it. */
static void ctl_window(struct fg_ctl *c, uint64_t now, double speed)
{
	uint64_t n[FG_CLASSES][FG_BUCKETS], count[FG_CLASSES] = { 0 }, total = 0;

	if (now - c->win_start < FG_WINDOW_NS)
		return;
	for (int cls = 0; cls < FG_CLASSES; cls++) {
		hist_load(&c->g->busy, cls, n[cls]);
		for (int b = 0; b < FG_BUCKETS; b++) {
			n[cls][b] -= c->snap[cls][b];
			count[cls] += n[cls][b];
		}
		total += count[cls];
	}
	if (total)
		c->readers = true;      /* (judged below once there are enough) */
	if (!total && atomic_load(&c->g->active) == 0)
		ctl_nobody(c, speed);
	else if (total >= FG_WINDOW_READS || now - c->win_start >= FG_WINDOW_MAX_NS)
		ctl_readers(c, now, speed, n, count);
	else
		return;         /* too few reads to judge yet: a longer window */
	ctl_snap(c, now);
}

uint64_t fg_ctl_delay(struct fg_ctl *c, uint64_t now, double speed, bool *limited)
{
	double burst, d;

	*limited = false;
	if (!c->started)
		return 0;
	if (c->probe_start) {
		uint64_t in = now - c->probe_start;

		if (in < FG_PROBE_NS) {
			/* the work in flight has settled: the reads from now on
			 * are idle ones, in an epoch of their own */
			if (in >= FG_PROBE_SETTLE_NS && atomic_load(&c->g->bg))
				atomic_store(&c->g->bg, 0);
			*limited = true;
			return FG_PROBE_NS - in < 5000000ull ? FG_PROBE_NS - in : 5000000ull;
		}
		atomic_store(&c->g->bg, 1);
		c->probe_start = 0;
		atomic_store(&c->g->last_probe_ns, now);
		ctl_snap(c, now);
		ctl_publish(c, c->rate ? FG_PHASE_LIMITED : FG_PHASE_FREE);
	}
	ctl_window(c, now, speed);
	if (c->probe_start) {
		*limited = true;
		return 1000000ull;
	}
	if (!c->rate) {
		c->tokens = 0;
		c->tok_ns = now;
		return 0;
	}
	c->tokens += c->rate * (double)(now - c->tok_ns) / 1e9;
	c->tok_ns = now;
	burst = c->rate * BURST_NS / 1e9;
	if (burst < BURST_MIN)
		burst = BURST_MIN;
	if (c->tokens > burst)
		c->tokens = burst;
	if (c->tokens >= 0)
		return 0;
	*limited = true;
	d = -c->tokens / c->rate * 1e9;
	return d < (double)MAX_WAIT_NS ? (uint64_t)d + 1 : MAX_WAIT_NS;
}

void fg_ctl_issued(struct fg_ctl *c, uint64_t bytes)
{
	if (c->started && c->rate)
		c->tokens -= (double)bytes;
}
