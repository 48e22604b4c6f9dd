/* progress.h - a one-line progress bar with speed and ETA on a terminal.
 *
 * Nothing is printed unless `on` (callers default it to isatty(stderr)).
 * Not thread-safe: callers that print other lines from other threads hold
 * their own lock around progress_* and their output, and call
 * progress_clear() before printing a line of their own.
 */
#ifndef RAIDIMG_PROGRESS_H
#define RAIDIMG_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct progress {
	FILE *f;
	bool on;
	bool shown;               /* a bar is on the line now */
	const char *label;        /* "scrub", "rebuild" */
	uint64_t total;           /* bytes */
	uint64_t last_ns;         /* last redraw */
	uint64_t t0;              /* progress_init/start time, for speeds not given */
};

void progress_init(struct progress *p, FILE *f, bool on, const char *label, uint64_t total);
/* Redraw (at most 5 times a second unless force): done of total bytes,
 * speed in bytes/s (< 0: the average since progress_init), and a short
 * extra text (may be NULL). */
void progress_show(struct progress *p, uint64_t done, double speed, const char *extra, bool force);
/* Erase the bar so that another line can be printed. */
void progress_clear(struct progress *p);

/* The simple form: a bar on stderr if it is a terminal, average speed. */
void progress_start(struct progress *p, const char *label, uint64_t total);
void progress_update(struct progress *p, uint64_t done);
void progress_end(struct progress *p);    /* erase the bar */

/* "1:02:03" or "2:03" for a number of seconds; buf >= 16 bytes. */
char *fmt_duration(double secs, char *buf, size_t len);

#endif
