/* engine_args.h - what the commands that run the scrub engine (scrub,
 * rebuild, mount) share (engine_args.c): rate options, running the engine
 * in its thread under a progress bar and the signals, and the coverage
 * trace used by the tests. */
#ifndef RAIDIMG_ENGINE_ARGS_H
#define RAIDIMG_ENGINE_ARGS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "progress.h"
#include "scrub.h"

/* --speed-limit-min/max: a plain number is KiB/s (md's sysctl unit), or a
 * size with a suffix per second ("50M" = 50 MiB/s); "0" or "unlimited"
 * mean none.  Bytes/s to *out; prints the problem and returns -1 if bad. */
int parse_rate_opt(const char *opt, const char *arg, uint64_t *out);

/* The engine options scrub and rebuild share: getopt codes, table entries
 * (--speed-limit-min is scrub's alone: add SCRUB_OPT_MIN_LONG_OPTION), and
 * their handler: 1 handled, 0 not one of them, -1 bad value (printed). */
enum { SCRUB_OPT_REQ = 0x2301, SCRUB_OPT_THREADS, SCRUB_OPT_MIN, SCRUB_OPT_MAX, SCRUB_OPT_PROG,
       SCRUB_OPT_NOPROG };
#define SCRUB_ENGINE_LONG_OPTIONS \
	{ "request-size", required_argument, NULL, SCRUB_OPT_REQ }, \
	{ "threads", required_argument, NULL, SCRUB_OPT_THREADS }, \
	{ "speed-limit-max", required_argument, NULL, SCRUB_OPT_MAX }, \
	{ "progress", no_argument, NULL, SCRUB_OPT_PROG }, \
	{ "no-progress", no_argument, NULL, SCRUB_OPT_NOPROG }
#define SCRUB_OPT_MIN_LONG_OPTION { "speed-limit-min", required_argument, NULL, SCRUB_OPT_MIN }
int scrub_engine_opt(struct scrub_opts *so, bool *progress, int opt, const char *arg);

/* Progress bar, output lock, signals: the command's side of a run. */
struct scrub_ui {
	struct progress bar;
	pthread_mutex_t lock;     /* around every line printed while running */
	int trace_fd;             /* RAIDIMG_SCRUB_TRACE, -1 if unset */
	bool json;
};

/* Set up ui (bar off unless progress), open the trace if the environment
 * asks, and hook its callbacks (on_batch, on_checkpoint) into o. */
void scrub_ui_init(struct scrub_ui *ui, struct scrub_opts *o, bool progress, bool json, const char *label);
void scrub_ui_free(struct scrub_ui *ui);
/* Run s in its thread, redraw the bar, turn SIGINT/SIGTERM into
 * scrub_stop(); returns scrub_run's result. */
int scrub_ui_run(struct scrub_ui *ui, struct scrub *s);

#endif
