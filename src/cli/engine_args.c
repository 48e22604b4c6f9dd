/* engine_args.c - what the commands that run the scrub engine share
 * (engine_args.h): rate and engine options, the progress bar, signals and
 * the coverage trace of the tests. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine_args.h"
#include "outfile.h"
#include "sysio.h"
#include "util.h"

int parse_rate_opt(const char *opt, const char *arg, uint64_t *out)
{
	if (parse_rate(arg, out) == 0)
		return 0;
	msg("%s %s: give KiB/s (as md's speed_limit sysctls) or a size per second such as 50M", opt, arg);
	return -1;
}

int scrub_engine_opt(struct scrub_opts *so, bool *progress, int opt, const char *arg)
{
	long long v;

	switch (opt) {
	case SCRUB_OPT_REQ:
		if (parse_size(arg, &so->request_bytes) || so->request_bytes < SCRUB_UNIT ||
		    so->request_bytes > (1u << 30)) {
			msg("--request-size %s: give a size from 4K to 1G", arg);
			return -1;
		}
		return 1;
	case SCRUB_OPT_THREADS:
		if (parse_int(arg, 1, 16, &v)) {
			msg("--threads %s: give a number from 1 to 16", arg);
			return -1;
		}
		so->readers = (int)v;
		return 1;
	case SCRUB_OPT_MIN:
		return parse_rate_opt("--speed-limit-min", arg, &so->speed_min) ? -1 : 1;
	case SCRUB_OPT_MAX:
		return parse_rate_opt("--speed-limit-max", arg, &so->speed_max) ? -1 : 1;
	case SCRUB_OPT_PROG: *progress = true; return 1;
	case SCRUB_OPT_NOPROG: *progress = false; return 1;
	default: return 0;
	}
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void trace_batch(void *arg, uint64_t s0, uint64_t s1)
{
	struct scrub_ui *ui = arg;

	if (ui->trace_fd >= 0)
		dprintf(ui->trace_fd, "batch %" PRIu64 " %" PRIu64 "\n", s0, s1);
}

static void trace_checkpoint(void *arg, uint64_t next)
{
	struct scrub_ui *ui = arg;

	if (ui->trace_fd >= 0)
		dprintf(ui->trace_fd, "checkpoint %" PRIu64 "\n", next);
}

void scrub_ui_init(struct scrub_ui *ui, struct scrub_opts *o, bool progress, bool json, const char *label)
{
	const char *trace = getenv("RAIDIMG_SCRUB_TRACE");

	memset(ui, 0, sizeof(*ui));
	progress_init(&ui->bar, stderr, progress, label, 0);
	ui->bar.per = "per member";     /* as md's sync_completed and the speed limits */
	pthread_mutex_init(&ui->lock, NULL);
	ui->json = json;
	ui->trace_fd = -1;
	if (trace && *trace) {
		struct outfile_opts oo = { .append = true };
		struct outfile of;
		char err[ERR_MAX];

		/* a test facility, but a file written all the same (outfile.h) */
		if (outfile_open(&of, trace, &oo, err, sizeof(err))) {
			msg("RAIDIMG_SCRUB_TRACE: %s (no trace)", err);
		} else {
			ui->trace_fd = of.fd;
			of.fd = -1;
			outfile_abort(&of);
		}
	}
	o->on_batch = trace_batch;
	o->on_checkpoint = trace_checkpoint;
	o->arg = ui;
}

void scrub_ui_free(struct scrub_ui *ui)
{
	if (ui->trace_fd >= 0)
		close(ui->trace_fd);
	pthread_mutex_destroy(&ui->lock);
}

/* A frame of the bar; the last one (last) with the run's average speed and
 * time taken, left on its line. */
static void ui_redraw(struct scrub_ui *ui, struct scrub *s, bool last)
{
	struct scrub_progress p;
	char extra[64] = "";

	scrub_get_progress(s, &p);
	ui->bar.total = p.total_bytes;
	if (p.mode != SCRUB_REBUILD && p.mismatches)
		snprintf(extra, sizeof(extra), "%" PRIu64 " mismatch%s", p.mismatches, p.mismatches == 1 ? "" : "es");
	if (p.state == SCRUB_PAUSED)
		snprintf(extra, sizeof(extra), "paused");
	if (last && p.state == SCRUB_STOPPED)
		snprintf(extra, sizeof(extra), "interrupted");
	pthread_mutex_lock(&ui->lock);
	if (last)
		progress_finish(&ui->bar, p.done_bytes, p.seconds, extra[0] ? extra : NULL);
	else
		progress_show(&ui->bar, p.done_bytes, p.speed, extra[0] ? extra : NULL, false);
	pthread_mutex_unlock(&ui->lock);
}

int scrub_ui_run(struct scrub_ui *ui, struct scrub *s)
{
	struct sigaction sa, old_int, old_term;
	int ret;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	got_signal = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	ret = scrub_start(s);
	if (ret) {
		msg("cannot start the scrub thread: %s", strerror(-ret));
		goto out;
	}
	while (!scrub_wait(s, 100000000ull)) {
		if (got_signal)
			scrub_stop(s);
		ui_redraw(ui, s, false);
	}
	ret = scrub_join(s);
	ui_redraw(ui, s, true);
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return ret;
}
