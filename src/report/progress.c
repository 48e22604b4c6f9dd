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

void progress_start(struct progress *p, const char *label, uint64_t total)
{
	progress_init(p, stderr, isatty(STDERR_FILENO), label, total);
}

void progress_update(struct progress *p, uint64_t done)
{
	progress_show(p, done, -1, NULL, false);
}

void progress_end(struct progress *p)
{
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

void progress_show(struct progress *p, uint64_t done, double speed, const char *extra, bool force)
{
	char bar[BAR_WIDTH + 1], sdone[32], stotal[32], sspeed[32], eta[16];
	uint64_t now = now_ns();
	double frac = p->total ? (double)done / (double)p->total : 1.0;
	int fill;

	if (!p->on || (!force && p->shown && now - p->last_ns < REDRAW_NS))
		return;
	p->last_ns = now;
	if (speed < 0)
		speed = now > p->t0 ? (double)done * 1e9 / (double)(now - p->t0) : 0;
	if (frac > 1)
		frac = 1;
	fill = (int)(frac * BAR_WIDTH);
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, '.', (size_t)(BAR_WIDTH - fill));
	bar[BAR_WIDTH] = '\0';
	fmt_size(done, sdone, sizeof(sdone));
	fmt_size(p->total, stotal, sizeof(stotal));
	fmt_size(speed > 0 ? (uint64_t)speed : 0, sspeed, sizeof(sspeed));
	if (speed > 0 && p->total > done)
		fmt_duration((double)(p->total - done) / speed, eta, sizeof(eta));
	else
		snprintf(eta, sizeof(eta), "--:--");
	fprintf(p->f, "\r%s [%s] %5.1f%% %s/%s %s/s ETA %s%s%s\033[K", p->label, bar, frac * 100, sdone,
		stotal, sspeed, eta, extra ? "  " : "", extra ? extra : "");
	fflush(p->f);
	p->shown = true;
}

void progress_clear(struct progress *p)
{
	if (!p->on || !p->shown)
		return;
	fputs("\r\033[K", p->f);
	fflush(p->f);
	p->shown = false;
}
