/* fg_gauge.h - the foreground readers of an array being served: the front
 * end (the mount) counts each of its reads in a gauge it owns; whatever
 * works in the background on the same array (the scrub, through
 * scrub_opts.fg) looks at it to yield to them.  All lock-free. */
#ifndef RAIDIMG_FG_GAUGE_H
#define RAIDIMG_FG_GAUGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct fg_gauge {
	_Atomic int active;          /* reads in progress */
	_Atomic uint64_t last_ns;    /* now_ns() when the last one started; 0: none yet */
};

/* A foreground read starts (now: now_ns()) / ends. */
static inline void fg_gauge_enter(struct fg_gauge *g, uint64_t now)
{
	atomic_fetch_add(&g->active, 1);
	atomic_store(&g->last_ns, now);
}

static inline void fg_gauge_leave(struct fg_gauge *g)
{
	atomic_fetch_sub(&g->active, 1);
}

/* Readers are in, or the last one started less than idle_ns before now
 * (md's is_mddev_idle, turned around).  A read that started after `now`
 * was taken counts as recent. */
static inline bool fg_gauge_busy(const struct fg_gauge *g, uint64_t now, uint64_t idle_ns)
{
	uint64_t last = atomic_load(&g->last_ns);

	return atomic_load(&g->active) > 0 || (last && (last >= now || now - last < idle_ns));
}

#endif
