/* progress.h - a one-line progress bar with speed and ETA on a terminal.
 *
 * Units: sizes and speeds in binary units (KiB, MiB, GiB: fmt_size), as
 * every summary raidimg prints.  A bar counts what its command counts (the
 * array's bytes for export, the input's for compress, each member's data
 * area for scrub and rebuild: `per`, e.g. "per member", says so after the
 * totals).  While running it shows the speed and an ETA; the last frame
 * (progress_finish) shows the average speed and the time taken, and stays
 * on the line.
 *
 * Nothing is printed unless `on` (callers default it to isatty(stderr);
 * --progress / --no-progress force it).  Not thread-safe: callers that
 * print other lines from other threads hold their own lock around
 * progress_* and their output, and call progress_clear() before printing a
 * line of their own.
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
	const char *per;          /* what the bytes count, e.g. "per member"; NULL */
	uint64_t total;           /* bytes */
	uint64_t last_ns;         /* last redraw */
	uint64_t t0;              /* progress_init/start time, for speeds not given */
};

void progress_init(struct progress *p, FILE *f, bool on, const char *label, uint64_t total);
/* Redraw (at most 5 times a second unless force): done of total bytes,
 * speed in bytes/s (< 0: the average since progress_init), and a short
 * extra text (may be NULL). */
void progress_show(struct progress *p, uint64_t done, double speed, const char *extra, bool force);
/* The last frame: done of total, the average speed over seconds (< 0:
 * since progress_init) and the time taken instead of an ETA; it stays on
 * its line (a newline follows). */
void progress_finish(struct progress *p, uint64_t done, double seconds, const char *extra);
/* Erase the bar so that another line can be printed. */
void progress_clear(struct progress *p);

/* The simple form: a bar on stderr when on, average speed. */
void progress_start(struct progress *p, const char *label, uint64_t total, bool on);
void progress_update(struct progress *p, uint64_t done);
/* The end of the simple form: the last frame when ok, else the bar erased. */
void progress_end(struct progress *p, uint64_t done, bool ok);

/* "1:02:03" or "2:03" for a number of seconds; buf >= 16 bytes. */
char *fmt_duration(double secs, char *buf, size_t len);
/* A speed as the bars and summaries print it: "12.5 MiB/s"; buf >= 40 bytes. */
char *fmt_speed(double bytes_per_second, char *buf, size_t len);

#endif
