/* progress.c - see progress.h */
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "util.h"

#define REDRAW_NS 200000000ull
#define BAR_WIDTH 24

void progress_init(struct progress *p, FILE *f, bool on, const char *label, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->f = f;
	p->on = on;
	p->label = label;
	p->total = total;
	p->t0 = now_ns();
}

void progress_start(struct progress *p, const char *label, uint64_t total, bool on)
{
	progress_init(p, stderr, on, label, total);
}

void progress_update(struct progress *p, uint64_t done)
{
	progress_show(p, done, -1, NULL, false);
}

void progress_end(struct progress *p, uint64_t done, bool ok)
{
	if (ok)
		progress_finish(p, done, -1, NULL);
	else
		progress_clear(p);
}

char *fmt_duration(double secs, char *buf, size_t len)
{
	uint64_t s = secs > 0 && secs < 1e9 ? (uint64_t)(secs + 0.5) : 0;

	if (s >= 3600)
		snprintf(buf, len, "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64, s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 ":%02" PRIu64, s / 60, s % 60);
	return buf;
}

char *fmt_speed(double bytes_per_second, char *buf, size_t len)
{
	char s[32];

	fmt_size(bytes_per_second > 0 && bytes_per_second < 1.8e19 ? (uint64_t)bytes_per_second : 0, s, sizeof(s));
	snprintf(buf, len, "%s/s", s);
	return buf;
}

/* One frame: the bar, done/total, the speed, then tail (ETA or time taken). */
static void draw(struct progress *p, uint64_t done, double speed, const char *tail, const char *extra)
{
	char bar[BAR_WIDTH + 1], sdone[32], stotal[32], sspeed[40];
	double frac = p->total ? (double)done / (double)p->total : 1.0;
	int fill;

	if (frac > 1)
		frac = 1;
	fill = (int)(frac * BAR_WIDTH);
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, '.', (size_t)(BAR_WIDTH - fill));
	bar[BAR_WIDTH] = '\0';
	fmt_size(done, sdone, sizeof(sdone));
	fmt_size(p->total, stotal, sizeof(stotal));
	fmt_speed(speed, sspeed, sizeof(sspeed));
	fprintf(p->f, "\r%s [%s] %5.1f%% %s/%s%s%s %s %s%s%s\033[K", p->label, bar, frac * 100, sdone, stotal,
		p->per ? " " : "", p->per ? p->per : "", sspeed, tail, extra ? "  " : "", extra ? extra : "");
}

void progress_show(struct progress *p, uint64_t done, double speed, const char *extra, bool force)
{
	char eta[32];
	uint64_t now = now_ns();

	if (!p->on || (!force && p->shown && now - p->last_ns < REDRAW_NS))
		return;
	p->last_ns = now;
	if (speed < 0)
		speed = now > p->t0 ? (double)done * 1e9 / (double)(now - p->t0) : 0;
	if (speed > 0 && p->total > done) {
		memcpy(eta, "ETA ", 4);
		fmt_duration((double)(p->total - done) / speed, eta + 4, sizeof(eta) - 4);
	} else {
		snprintf(eta, sizeof(eta), "ETA --:--");
	}
	draw(p, done, speed, eta, extra);
	fflush(p->f);
	p->shown = true;
}

void progress_finish(struct progress *p, uint64_t done, double seconds, const char *extra)
{
	char took[32];

	if (!p->on)
		return;
	if (seconds < 0)
		seconds = (double)(now_ns() - p->t0) / 1e9;
	memcpy(took, "in ", 3);
	fmt_duration(seconds, took + 3, sizeof(took) - 3);
	draw(p, done, seconds > 0 ? (double)done / seconds : 0, took, extra);
	fputc('\n', p->f);
	fflush(p->f);
	p->shown = false;
}

void progress_clear(struct progress *p)
{
	if (!p->on || !p->shown)
		return;
	fputs("\r\033[K", p->f);
	fflush(p->f);
	p->shown = false;
}
