/* mount_scrub.c - the scrub engine as a worker of a mounted array (see
 * mount_scrub.h).
 *
 * Shape: the control files (ctl_*) turn words into requests; a request to
 * start creates the scrub under the lock and queues it for the worker
 * thread (worker_main), which runs it and records how it ended (run_end).
 * The engine's callbacks (on_mismatch, on_write) run on the worker thread:
 * they write the log, keep the last records for status and drop repaired
 * data from the page cache.  status_gen renders the "scrub" object.
 *
 * Lock order: ms->lock, then the scrub's own (scrub_get_progress).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mount_scrub.h"
#include "outfile.h"
#include "scrub_report.h"
#include "sysio.h"
#include "util.h"

#define RECENT_MAX 16                /* mismatch records of a run kept for status */
#define WORD_MAX 64                  /* longest word a control file takes */
#define TEXT_MAX 64                  /* longest text a control file shows */

struct mount_scrub;

/* One control file: what it shows, what a write does (NULL: read-only). */
struct ctl_file {
	const char *name;
	int (*show)(struct mount_scrub *ms, char *buf, size_t len);
	int (*store)(struct mount_scrub *ms, const char *word);
	struct mount_scrub *ms;
};

enum { CTL_ACTION, CTL_MIN, CTL_MAX, CTL_MISMATCH, CTL_COMPLETED, CTL_SPEED, CTL_DEGRADED, CTL_STATE, CTL_LATENCY,
       NCTL };

/* The scrub's threads inside the mount are background work (scrub_opts.nice). */
#define SCRUB_NICE 19

struct mount_scrub {
	struct array *a;             /* borrowed */
	struct fuse_fs *fs;          /* borrowed */
	bool allow_repair;
	struct ctl_file ctl[NCTL];

	pthread_mutex_t lock;        /* everything below but the atomics */
	pthread_cond_t cv;           /* the worker: a run queued or quit; idle writers: a run ended */
	uint64_t speed_min, speed_max;
	struct scrub *cur;           /* the run queued or running, NULL when idle; owned */
	bool queued;                 /* cur waits for the worker */
	enum scrub_mode cur_mode;
	bool have_last;              /* a run ended: last* are valid */
	struct scrub_progress last;
	enum scrub_mode last_mode;
	const char *last_result;     /* static string */
	uint64_t runs;
	char refused[320];           /* why the last word written was refused; "" if it was not */
	char *recent[RECENT_MAX];    /* the run's last mismatch records (JSON), a ring; owned */
	uint64_t nrecent;            /* records put in the ring this run */

	pthread_t thread;
	bool thread_started;
	atomic_bool quit;

	FILE *log;                   /* owned; NULL: no log */
	char *log_path;              /* absolute; owned */
	_Atomic uint64_t log_records;
	_Atomic int log_error;       /* the first write error (-errno), 0 */
	_Atomic uint64_t invalidations, invalidation_errors;
};

/* ------------------------------------------------------------------ */
/* the log (written by the worker thread only)                          */
/* ------------------------------------------------------------------ */

static void log_text(struct mount_scrub *ms, const char *text, bool durable)
{
	int expected = 0;

	if (!ms->log)
		return;
	if (fputs(text, ms->log) == EOF || fflush(ms->log) || (durable && fdatasync(fileno(ms->log)) &&
								errno != EINVAL)) {
		atomic_compare_exchange_strong(&ms->log_error, &expected, errno ? -errno : -EIO);
		clearerr(ms->log);
		return;
	}
	atomic_fetch_add(&ms->log_records, 1);
}

/* A record rendered by put() into a malloc'ed string (NULL: no memory). */
static char *render(void (*put)(FILE *, const void *), const void *what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	put(f, what);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void put_mismatch(FILE *f, const void *m)
{
	scrub_report_mismatch_json(f, m);
}

static void put_write(FILE *f, const void *w)
{
	scrub_report_write_json(f, w);
}

/* ------------------------------------------------------------------ */
/* the engine's callbacks (worker thread)                               */
/* ------------------------------------------------------------------ */

/* Repaired data: the array's bytes changed under the kernel's page cache. */
static void invalidate(struct mount_scrub *ms, uint64_t off, uint64_t len)
{
	/* at unmount the cache goes away with the mount; and a notification
	 * could then wait on a page whose read nobody will answer */
	if (atomic_load(&ms->quit))
		return;
	if (fuse_fs_invalidate_image(ms->fs, off, len))
		atomic_fetch_add(&ms->invalidation_errors, 1);
	else
		atomic_fetch_add(&ms->invalidations, 1);
}

static void on_mismatch(void *arg, const struct scrub_mismatch *m)
{
	struct mount_scrub *ms = arg;
	char *rec = render(put_mismatch, m);
	size_t slot;

	if (rec)
		log_text(ms, rec, false);
	if (m->repaired && m->kind == SCRUB_KIND_DATA && m->array_off != UINT64_MAX)
		invalidate(ms, m->array_off, m->len);
	if (rec)
		rec[strcspn(rec, "\n")] = '\0';
	pthread_mutex_lock(&ms->lock);
	slot = (size_t)(ms->nrecent % RECENT_MAX);
	free(ms->recent[slot]);
	ms->recent[slot] = rec;      /* NULL when out of memory: left out of status */
	ms->nrecent++;
	pthread_mutex_unlock(&ms->lock);
}

static void on_write(void *arg, const struct scrub_write *w)
{
	struct mount_scrub *ms = arg;
	char *rec = render(put_write, w);

	if (rec)
		log_text(ms, rec, false);
	free(rec);
}

static void clear_recent(struct mount_scrub *ms)
{
	for (int i = 0; i < RECENT_MAX; i++) {
		free(ms->recent[i]);
		ms->recent[i] = NULL;
	}
	ms->nrecent = 0;
}

/* ------------------------------------------------------------------ */
/* the worker thread                                                    */
/* ------------------------------------------------------------------ */

/* A run ended (ret from scrub_run): log its summary, remember how it
 * ended, and let idle writers go. */
static void run_end(struct mount_scrub *ms, struct scrub *s, enum scrub_mode mode, int ret)
{
	struct scrub_progress p;
	const char *result;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	scrub_get_progress(s, &p);
	result = scrub_result_name(ret, &p, mode);
	f = ms->log ? open_memstream(&text, &len) : NULL;
	if (f) {
		scrub_report_summary_json(f, ms->a, &p, result, mode);
		if (fclose(f)) {
			free(text);
			text = NULL;
		}
	}
	if (text)
		log_text(ms, text, true);
	free(text);
	pthread_mutex_lock(&ms->lock);
	ms->last = p;
	ms->last_mode = mode;
	ms->last_result = result;
	ms->have_last = true;
	ms->runs++;
	ms->cur = NULL;
	pthread_cond_broadcast(&ms->cv);
	pthread_mutex_unlock(&ms->lock);
}

static void *worker_main(void *arg)
{
	struct mount_scrub *ms = arg;

	fuse_fs_block_signals();     /* SIGINT/SIGTERM belong to the FUSE loop */
	pthread_mutex_lock(&ms->lock);
	for (;;) {
		struct scrub *s;
		enum scrub_mode mode;
		int ret;

		while (!atomic_load(&ms->quit) && !ms->queued)
			pthread_cond_wait(&ms->cv, &ms->lock);
		if (!ms->queued)
			break;
		s = ms->cur;
		mode = ms->cur_mode;
		ms->queued = false;
		if (atomic_load(&ms->quit)) {
			/* unmounting before it began: nothing to report */
			ms->cur = NULL;
			pthread_cond_broadcast(&ms->cv);
			pthread_mutex_unlock(&ms->lock);
			scrub_free(s);
			pthread_mutex_lock(&ms->lock);
			continue;
		}
		pthread_mutex_unlock(&ms->lock);
		ret = scrub_run(s);
		run_end(ms, s, mode, ret);
		scrub_free(s);
		pthread_mutex_lock(&ms->lock);
	}
	pthread_mutex_unlock(&ms->lock);
	return NULL;
}

static int workers_start(void *arg)
{
	struct mount_scrub *ms = arg;
	sigset_t all, old;
	int ret;

	/* no signal may reach the worker even before it blocks them itself */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&ms->thread, NULL, worker_main, ms);
	/* the readers' wake-up latency, from a thread of their priority (the
	 * worker's scrubs run niced); without it, the reads' own latency only */
	if (!ret)
		(void)fg_canary_start(fuse_fs_fg_gauge(ms->fs));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	pthread_mutex_lock(&ms->lock);
	ms->thread_started = true;
	pthread_mutex_unlock(&ms->lock);
	return 0;
}

/* Once, from the mount's destroy: stop the run in hand and join. */
static void workers_stop(void *arg)
{
	struct mount_scrub *ms = arg;
	bool started;

	pthread_mutex_lock(&ms->lock);
	atomic_store(&ms->quit, true);
	if (ms->cur)
		scrub_stop(ms->cur);
	pthread_cond_broadcast(&ms->cv);
	started = ms->thread_started;
	ms->thread_started = false;
	pthread_mutex_unlock(&ms->lock);
	if (started) {
		pthread_join(ms->thread, NULL);
		fg_canary_stop(fuse_fs_fg_gauge(ms->fs));   /* started with the worker; fs is alive here */
	}
}

/* ------------------------------------------------------------------ */
/* requests                                                             */
/* ------------------------------------------------------------------ */

/* Say why a word was refused (status "refused"); returns err.  Under lock. */
static int refuse(struct mount_scrub *ms, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(struct mount_scrub *ms, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ms->refused, sizeof(ms->refused), fmt, ap);
	va_end(ap);
	return err;
}

static int start_run(struct mount_scrub *ms, enum scrub_mode mode)
{
	struct scrub_opts o;
	struct scrub *s = NULL;
	char err[ERR_MAX] = "";
	int ret = 0;

	pthread_mutex_lock(&ms->lock);
	if (ms->cur) {
		ret = refuse(ms, -EBUSY, "%s refused: a %s is running (write idle to stop it)", scrub_mode_name(mode),
			     scrub_mode_name(ms->cur_mode));
		goto out;
	}
	if (!ms->thread_started || atomic_load(&ms->quit)) {
		ret = refuse(ms, -EAGAIN, "%s refused: the scrub worker is not running", scrub_mode_name(mode));
		goto out;
	}
	if (mode == SCRUB_REPAIR && !ms->allow_repair) {
		ret = refuse(ms, -EPERM, "repair refused: the mount was made without --allow-repair, so the "
			     "member images are open read-only (mount copies you may change with --allow-repair)");
		goto out;
	}
	memset(&o, 0, sizeof(o));
	o.mode = mode;
	o.fg = fuse_fs_fg_gauge(ms->fs);     /* yield to the mount's readers */
	o.speed_min = ms->speed_min;
	o.speed_max = ms->speed_max;
	o.nice = SCRUB_NICE;
	o.on_mismatch = on_mismatch;
	o.on_write = on_write;
	o.arg = ms;
	ret = scrub_create(ms->a, &o, &s, err, sizeof(err));
	if (ret) {
		ret = refuse(ms, ret, "%s refused: %s", scrub_mode_name(mode), err);
		goto out;
	}
	clear_recent(ms);
	ms->refused[0] = '\0';
	ms->cur = s;
	ms->cur_mode = mode;
	ms->queued = true;
	pthread_cond_broadcast(&ms->cv);
out:
	pthread_mutex_unlock(&ms->lock);
	return ret;
}

/* "idle": stop the run in hand and wait until it has ended. */
static int stop_run(struct mount_scrub *ms)
{
	pthread_mutex_lock(&ms->lock);
	ms->refused[0] = '\0';
	if (ms->cur)
		scrub_stop(ms->cur);
	while (ms->cur)
		pthread_cond_wait(&ms->cv, &ms->lock);
	pthread_mutex_unlock(&ms->lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* the control files                                                    */
/* ------------------------------------------------------------------ */

static int show_action(struct mount_scrub *ms, char *buf, size_t len)
{
	pthread_mutex_lock(&ms->lock);
	snprintf(buf, len, "%s\n", ms->cur ? scrub_mode_name(ms->cur_mode) : "idle");
	pthread_mutex_unlock(&ms->lock);
	return 0;
}

static int store_action(struct mount_scrub *ms, const char *word)
{
	int ret;

	if (!strcmp(word, "idle"))
		return stop_run(ms);
	if (!strcmp(word, "check"))
		return start_run(ms, SCRUB_CHECK);
	if (!strcmp(word, "repair"))
		return start_run(ms, SCRUB_REPAIR);
	pthread_mutex_lock(&ms->lock);
	ret = refuse(ms, -EINVAL, "'%s' written to sync_action: the words are check, repair and idle", word);
	pthread_mutex_unlock(&ms->lock);
	return ret;
}

/* KiB/s as md shows them (0: no limit). */
static uint64_t kib(uint64_t bytes)
{
	return (bytes + 512) / 1024;
}

static int show_min(struct mount_scrub *ms, char *buf, size_t len)
{
	pthread_mutex_lock(&ms->lock);
	snprintf(buf, len, "%" PRIu64 "\n", kib(ms->speed_min));
	pthread_mutex_unlock(&ms->lock);
	return 0;
}

static int show_max(struct mount_scrub *ms, char *buf, size_t len)
{
	pthread_mutex_lock(&ms->lock);
	snprintf(buf, len, "%" PRIu64 "\n", kib(ms->speed_max));
	pthread_mutex_unlock(&ms->lock);
	return 0;
}


static int store_limit(struct mount_scrub *ms, const char *word, bool max)
{
	uint64_t v;

	pthread_mutex_lock(&ms->lock);
	if (parse_rate(word, &v)) {
		refuse(ms, -EINVAL, "'%s' written to %s: give KiB/s (as md), 'unlimited', or a size per second "
		       "such as 50M", word, max ? "sync_speed_max" : "sync_speed_min");
		pthread_mutex_unlock(&ms->lock);
		return -EINVAL;
	}
	if (max)
		ms->speed_max = v;
	else
		ms->speed_min = v;
	if (ms->cur)
		scrub_set_limits(ms->cur, ms->speed_min, ms->speed_max);
	ms->refused[0] = '\0';
	pthread_mutex_unlock(&ms->lock);
	return 0;
}

static int store_min(struct mount_scrub *ms, const char *word)
{
	return store_limit(ms, word, false);
}

static int store_max(struct mount_scrub *ms, const char *word)
{
	return store_limit(ms, word, true);
}

/* The readers' latency target (fg_gauge.h): "1.50x", "500us" or "0". */
static int show_latency(struct mount_scrub *ms, char *buf, size_t len)
{
	struct fg_gauge *g = fuse_fs_fg_gauge(ms->fs);

	fg_target_format(atomic_load(&g->target_milli), atomic_load(&g->target_ns), buf, len - 1);
	strcat(buf, "\n");
	return 0;
}

static int store_latency(struct mount_scrub *ms, const char *word)
{
	uint32_t milli;
	uint64_t ns;

	pthread_mutex_lock(&ms->lock);
	if (fg_target_parse(word, &milli, &ns)) {
		refuse(ms, -EINVAL, "'%s' written to sync_latency_target: give a factor of the readers' idle p99 "
		       "(1.01-100, e.g. 1.5), a time (1us-10s, e.g. 500us or 2ms), or 0 for md's rule", word);
		pthread_mutex_unlock(&ms->lock);
		return -EINVAL;
	}
	fg_gauge_set_target(fuse_fs_fg_gauge(ms->fs), milli, ns);
	ms->refused[0] = '\0';
	pthread_mutex_unlock(&ms->lock);
	return 0;
}

/* Under lock: the progress of the run in hand, else of the last one. */
static bool progress_locked(struct mount_scrub *ms, struct scrub_progress *p)
{
	if (ms->cur) {
		scrub_get_progress(ms->cur, p);
		return true;
	}
	if (ms->have_last) {
		*p = ms->last;
		return true;
	}
	memset(p, 0, sizeof(*p));
	return false;
}

static int show_mismatch_cnt(struct mount_scrub *ms, char *buf, size_t len)
{
	struct scrub_progress p;

	pthread_mutex_lock(&ms->lock);
	progress_locked(ms, &p);
	pthread_mutex_unlock(&ms->lock);
	snprintf(buf, len, "%" PRIu64 "\n", p.mismatch_units * 8);
	return 0;
}

/* md's sync_completed: sectors of each member done / of the whole member
 * while a scrub runs, "none" otherwise. */
static int show_completed(struct mount_scrub *ms, char *buf, size_t len)
{
	struct scrub_progress p;

	pthread_mutex_lock(&ms->lock);
	if (ms->cur) {
		scrub_get_progress(ms->cur, &p);
		snprintf(buf, len, "%" PRIu64 " / %" PRIu64 "\n", p.next_stripe * ms->a->geom.chunk_bytes / 512,
			 ms->a->stripes * ms->a->geom.chunk_bytes / 512);
	} else {
		snprintf(buf, len, "none\n");
	}
	pthread_mutex_unlock(&ms->lock);
	return 0;
}

/* md's sync_speed: KiB/s per member of the running scrub, "none" when idle. */
static int show_speed(struct mount_scrub *ms, char *buf, size_t len)
{
	struct scrub_progress p;

	pthread_mutex_lock(&ms->lock);
	if (ms->cur) {
		scrub_get_progress(ms->cur, &p);
		snprintf(buf, len, "%" PRIu64 "\n", (uint64_t)(p.speed / 1024));
	} else {
		snprintf(buf, len, "none\n");
	}
	pthread_mutex_unlock(&ms->lock);
	return 0;
}

/* md's degraded: members missing or not in sync. */
static int show_degraded(struct mount_scrub *ms, char *buf, size_t len)
{
	snprintf(buf, len, "%d\n", ms->a->nmissing);
	return 0;
}

/* md's array_state, in md's words: "readonly" when the members were opened
 * read-only (they are never written: the default, and --overlay), else
 * (--allow-repair) "active" while a repair may write and "clean" when
 * nothing writes. */
static int show_state(struct mount_scrub *ms, char *buf, size_t len)
{
	const char *w;

	pthread_mutex_lock(&ms->lock);
	w = !ms->allow_repair ? "readonly" : ms->cur && ms->cur_mode == SCRUB_REPAIR ? "active" : "clean";
	pthread_mutex_unlock(&ms->lock);
	snprintf(buf, len, "%s\n", w);
	return 0;
}

/* What an open of a control file holds: the text at the open. */
struct ctl_handle {
	size_t len;
	char text[TEXT_MAX];
};

static uint64_t ctl_size(void *priv)
{
	struct ctl_file *c = priv;
	char text[TEXT_MAX];

	if (c->show(c->ms, text, sizeof(text)))
		return 0;
	return strlen(text);
}

static int ctl_open(void *priv, int flags, uint64_t *fh)
{
	struct ctl_file *c = priv;
	struct ctl_handle *h;
	int ret;

	(void)flags;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	ret = c->show(c->ms, h->text, sizeof(h->text));
	if (ret) {
		free(h);
		return ret;
	}
	h->len = strlen(h->text);
	*fh = (uint64_t)(uintptr_t)h;
	return 0;
}

static ssize_t ctl_read(void *priv, uint64_t fh, char *buf, size_t size, off_t off)
{
	struct ctl_handle *h = (struct ctl_handle *)(uintptr_t)fh;

	(void)priv;
	return fuse_fs_read_text(h->text, h->len, buf, size, off);
}

/* The word written: surrounding blanks (echo's newline) dropped; one word
 * of printable characters.  0 or -EINVAL. */
static int take_word(const char *buf, size_t size, char *word)
{
	size_t b = 0, e = size;

	while (b < e && isspace((unsigned char)buf[b]))
		b++;
	while (e > b && isspace((unsigned char)buf[e - 1]))
		e--;
	if (e == b || e - b >= WORD_MAX)
		return -EINVAL;
	for (size_t i = b; i < e; i++)
		if (!isgraph((unsigned char)buf[i]))
			return -EINVAL;
	memcpy(word, buf + b, e - b);
	word[e - b] = '\0';
	return 0;
}

/* Each write is one word, wherever it lands (as in sysfs). */
static ssize_t ctl_write(void *priv, uint64_t fh, const char *buf, size_t size, off_t off)
{
	struct ctl_file *c = priv;
	char word[WORD_MAX];
	int ret;

	(void)fh;
	(void)off;
	if (take_word(buf, size, word)) {
		pthread_mutex_lock(&c->ms->lock);
		refuse(c->ms, -EINVAL, "%s takes one word (got %zu bytes that are not)", c->name, size);
		pthread_mutex_unlock(&c->ms->lock);
		return -EINVAL;
	}
	ret = c->store(c->ms, word);
	return ret ? ret : (ssize_t)size;
}

static void ctl_release(void *priv, uint64_t fh)
{
	(void)priv;
	free((struct ctl_handle *)(uintptr_t)fh);
}

static const struct fuse_fs_file_ops ctl_rw_ops = {
	.size = ctl_size,
	.open = ctl_open,
	.read = ctl_read,
	.write = ctl_write,
	.release = ctl_release,
};

static const struct fuse_fs_file_ops ctl_ro_ops = {
	.size = ctl_size,
	.open = ctl_open,
	.read = ctl_read,
	.release = ctl_release,
};

/* ------------------------------------------------------------------ */
/* status                                                               */
/* ------------------------------------------------------------------ */

static void put_recent(FILE *f, struct mount_scrub *ms)
{
	uint64_t first = ms->nrecent > RECENT_MAX ? ms->nrecent - RECENT_MAX : 0;
	bool comma = false;

	fputs(",\"recent_mismatches\":[", f);
	for (uint64_t i = first; i < ms->nrecent; i++) {
		const char *rec = ms->recent[i % RECENT_MAX];
		if (!rec)
			continue;
		if (comma)
			fputc(',', f);
		fputs(rec, f);
		comma = true;
	}
	fprintf(f, "],\"recent_max\":%d", RECENT_MAX);
}

static void put_counts(FILE *f, const struct array *a, const struct scrub_progress *p, bool have)
{
	uint64_t total = have ? p->stripe_end - p->stripe_begin : a->stripes;
	uint64_t done = have && p->next_stripe > p->stripe_begin ? p->next_stripe - p->stripe_begin : 0;
	uint64_t req = p->member_requests, rb = p->member_request_bytes;

	fprintf(f, ",\"next_stripe\":%" PRIu64 ",\"position_member_bytes\":%" PRIu64 ",\"stripes_done\":%" PRIu64
		",\"stripes_total\":%" PRIu64 ",\"percent\":%.2f",
		have ? p->next_stripe : 0, (have ? p->next_stripe : 0) * a->geom.chunk_bytes, done, total,
		total ? 100.0 * (double)done / (double)total : 0.0);
	fprintf(f, ",\"mismatches\":%" PRIu64 ",\"mismatch_units\":%" PRIu64 ",\"md_mismatch_cnt\":%" PRIu64
		",\"writes\":%" PRIu64 ",\"bytes_written\":%" PRIu64 ",\"stripes_unchecked\":%" PRIu64
		",\"read_errors\":%" PRIu64, p->mismatches, p->mismatch_units, p->mismatch_units * 8, p->writes,
		p->bytes_written, p->stripes_unchecked, p->read_errors);
	fprintf(f, ",\"seconds\":%.3f,\"speed_bytes_per_second\":%.0f"
		",\"throttle_seconds\":%.3f,\"foreground_backoffs\":%" PRIu64 ",\"member_requests\":%" PRIu64
		",\"member_request_bytes\":%" PRIu64 ",\"avg_member_request_bytes\":%" PRIu64
		",\"one_cpu_batches\":%" PRIu64,
		p->seconds, p->speed, (double)p->throttle_ns / 1e9, p->fg_backoffs, req, rb,
		req ? rb / req : 0, p->one_cpu_batches);
}

/* The readers' latency controller (fg_gauge.h). */
static void put_controller(FILE *f, struct mount_scrub *ms)
{
	static const char *const phase[] = { "off", "free", "limited", "probing" };
	struct fg_gauge *g = fuse_fs_fg_gauge(ms->fs);
	struct fg_ctl_state st;
	char tgt[32];

	fg_gauge_ctl_state(g, &st);
	fg_target_format(atomic_load(&g->target_milli), atomic_load(&g->target_ns), tgt, sizeof(tgt));
	fputs(",\"latency_target\":", f);
	json_str(f, tgt);
	fputs(",\"latency_controller\":", f);
	json_str(f, fg_gauge_has_target(g) ? phase[st.phase] : "md");
	fputs(",\"latency_class\":", f);
	json_str(f, fg_class_name(st.cls));
	fprintf(f, ",\"rate_limit_bytes_per_second\":%" PRIu64 ",\"reader_p99_seconds\":%.6f"
		",\"reader_idle_p99_seconds\":%.6f,\"reader_p99_target_seconds\":%.6f,\"latency_probes\":%" PRIu64
		",\"rate_decreases\":%" PRIu64 ",\"reader_requests\":%" PRIu64 ",\"reader_queue_depth\":%.2f"
		",\"one_cpu\":%s",
		st.rate, (double)st.p99_ns / 1e9, (double)st.idle_p99_ns / 1e9, (double)st.target_ns / 1e9, st.probes,
		st.decreases, st.reads, st.queue_depth, st.one_cpu ? "true" : "false");
}

static void put_log(FILE *f, struct mount_scrub *ms)
{
	int err = atomic_load(&ms->log_error);

	fputs(",\"log\":", f);
	if (ms->log_path)
		json_path(f, ms->log_path, "log");
	else
		fputs("null", f);
	fprintf(f, ",\"log_records\":%" PRIu64 ",\"log_error\":", atomic_load(&ms->log_records));
	json_str_or_null(f, err ? strerror(-err) : NULL);
}

/* The "scrub" object of status (a status section). */
static void put_status(FILE *f, struct mount_scrub *ms)
{
	struct scrub_progress p;
	bool have;
	const char *state, *result = NULL;
	enum scrub_mode mode;

	pthread_mutex_lock(&ms->lock);
	have = progress_locked(ms, &p);
	mode = ms->cur ? ms->cur_mode : ms->last_mode;
	state = ms->queued ? "starting" : have ? scrub_state_name(p.state) : "idle";
	if (!ms->cur && ms->have_last)
		result = ms->last_result;
	fputs("{\"action\":", f);
	json_str(f, ms->cur ? scrub_mode_name(ms->cur_mode) : "idle");
	fputs(",\"state\":", f);
	json_str(f, state);
	fputs(",\"mode\":", f);
	json_str_or_null(f, have ? scrub_mode_name(mode) : NULL);
	fputs(",\"result\":", f);
	json_str_or_null(f, result);
	fputs(",\"error\":", f);
	json_str_or_null(f, have && p.error ? p.message : NULL);
	fprintf(f, ",\"runs\":%" PRIu64 ",\"repair_allowed\":%s,\"refused\":", ms->runs,
		ms->allow_repair ? "true" : "false");
	json_str_or_null(f, ms->refused);
	fprintf(f, ",\"speed_limit_min_bytes_per_second\":%" PRIu64 ",\"speed_limit_max_bytes_per_second\":%" PRIu64,
		ms->speed_min, ms->speed_max);
	put_counts(f, ms->a, &p, have);
	put_controller(f, ms);
	put_recent(f, ms);
	pthread_mutex_unlock(&ms->lock);
	put_log(f, ms);
	fprintf(f, ",\"page_cache_invalidations\":%" PRIu64 ",\"page_cache_invalidation_errors\":%" PRIu64 "}",
		atomic_load(&ms->invalidations), atomic_load(&ms->invalidation_errors));
}

static int status_gen(void *priv, char **out, size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return -ENOMEM;
	put_status(f, priv);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	*len = size;
	return 0;
}

/* ------------------------------------------------------------------ */
/* set-up                                                               */
/* ------------------------------------------------------------------ */

/* Open the log for appending (outfile.h: never evidence, in place). */
static int open_log(struct mount_scrub *ms, const char *path, char *err, size_t errlen)
{
	struct outfile_opts oo = { .append = true };
	struct outfile of;
	char e[ERR_MAX];
	int ret;

	ret = outfile_open(&of, path, &oo, e, sizeof(e));
	if (ret) {
		fmt_err(err, errlen, "%s (the scrub log)", e);
		return ret;
	}
	ms->log_path = abs_path(path);
	ms->log = outfile_stdio(&of);
	outfile_abort(&of);         /* the stream holds its own descriptor; nothing to remove */
	if (!ms->log_path || !ms->log) {
		fmt_err(err, errlen, "out of memory");
		if (ms->log)
			fclose(ms->log);
		ms->log = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* --allow-repair: images marked read-only are refused even for root (whose
 * open for writing succeeds), so a write-protected original is never
 * touched by mistake (as `raidimg scrub --repair`). */
static int check_writable(const struct array *a, char *err, size_t errlen)
{
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		struct stat st;

		if (!m->src)
			continue;
		if (!m->src->writable) {
			fmt_err(err, errlen, "%s: opened read-only; --allow-repair needs the members opened for "
				"writing", m->path ? m->path : "?");
			return -EROFS;
		}
		if (m->path && !stat(m->path, &st) && S_ISREG(st.st_mode) && !(st.st_mode & 0222)) {
			fmt_err(err, errlen, "%s: the image is read-only (mode %04o); --allow-repair lets repair "
				"write to the member images: mount writable copies", m->path,
				(unsigned)(st.st_mode & 07777));
			return -EROFS;
		}
	}
	return 0;
}

static int add_files(struct mount_scrub *ms, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		int (*show)(struct mount_scrub *, char *, size_t);
		int (*store)(struct mount_scrub *, const char *);
	} files[NCTL] = {
		[CTL_ACTION] = { "sync_action", show_action, store_action },
		[CTL_MIN] = { "sync_speed_min", show_min, store_min },
		[CTL_MAX] = { "sync_speed_max", show_max, store_max },
		[CTL_MISMATCH] = { "mismatch_cnt", show_mismatch_cnt, NULL },
		[CTL_COMPLETED] = { "sync_completed", show_completed, NULL },
		[CTL_SPEED] = { "sync_speed", show_speed, NULL },
		[CTL_DEGRADED] = { "degraded", show_degraded, NULL },
		[CTL_STATE] = { "array_state", show_state, NULL },
		[CTL_LATENCY] = { "sync_latency_target", show_latency, store_latency },
	};

	for (int i = 0; i < NCTL; i++) {
		struct ctl_file *c = &ms->ctl[i];
		int ret;

		c->name = files[i].name;
		c->show = files[i].show;
		c->store = files[i].store;
		c->ms = ms;
		ret = fuse_fs_add_file(ms->fs, c->name, c->store ? 0644 : 0444, c->store ? &ctl_rw_ops : &ctl_ro_ops,
				       c);
		if (ret == -EEXIST) {
			fmt_err(err, errlen, "'%s' cannot be the image's name (it is one of the scrub's control files)",
				c->name);
			return ret;
		}
		if (ret) {
			fmt_err(err, errlen, "cannot add %s to the mount: %s", c->name, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int mount_scrub_attach(struct fuse_fs *fs, struct array *a, const struct mount_scrub_opts *o,
		       struct mount_scrub **out, char *err, size_t errlen)
{
	struct fuse_fs_workers w;
	struct mount_scrub *ms;
	int ret;

	ms = calloc(1, sizeof(*ms));
	if (!ms) {
		fmt_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ms->a = a;
	ms->fs = fs;
	ms->allow_repair = o->allow_repair;
	ms->speed_min = o->speed_min;
	ms->speed_max = o->speed_max;
	if (o->latency_milli || o->latency_ns || o->latency_set)
		fg_gauge_set_target(fuse_fs_fg_gauge(fs), o->latency_milli, o->latency_ns);
	pthread_mutex_init(&ms->lock, NULL);
	pthread_cond_init(&ms->cv, NULL);
	if (o->allow_repair) {
		ret = check_writable(a, err, errlen);
		if (ret)
			goto fail;
	}
	if (o->log_path) {
		ret = open_log(ms, o->log_path, err, errlen);
		if (ret)
			goto fail;
	}
	ret = add_files(ms, err, errlen);
	if (ret)
		goto fail;
	ret = fuse_fs_add_status_section(fs, "scrub", status_gen, ms);
	if (ret) {
		fmt_err(err, errlen, "cannot add the scrub to the status: %s", strerror(-ret));
		goto fail;
	}
	w.start = workers_start;
	w.stop = workers_stop;
	w.arg = ms;
	fuse_fs_set_workers(fs, &w);
	*out = ms;
	return 0;
fail:
	mount_scrub_free(ms);
	return ret;
}

void mount_scrub_free(struct mount_scrub *ms)
{
	if (!ms)
		return;
	workers_stop(ms);            /* nothing when the mount already did */
	scrub_free(ms->cur);         /* queued, never run */
	clear_recent(ms);
	if (ms->log)
		fclose(ms->log);
	free(ms->log_path);
	pthread_cond_destroy(&ms->cv);
	pthread_mutex_destroy(&ms->lock);
	free(ms);
}
