/* test_fg_gauge.c - unit tests for src/engine/fg_gauge.c (libcheck): the
 * latency target's words, the p99 the histograms give against the true
 * one, the idle baseline and its epochs, and the controller's moves on a
 * made-up clock: a decrease when readers are over the target, additive
 * increases when under, doubling back to unlimited when nobody reads, a
 * probe when there is no baseline (reads made during it become the
 * baseline), the token bucket's waits, and what a run leaves the next. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fg_gauge.h"

#define MS 1000000ull
#define US 1000ull

/* n reads of bytes, each lat long, the first starting at *now; *now moves on. */
static void reads(struct fg_gauge *g, uint64_t *now, int n, uint64_t lat, uint64_t bytes)
{
	for (int i = 0; i < n; i++) {
		fg_gauge_enter(g, *now);
		fg_gauge_leave(g, *now, *now + lat, bytes);
		*now += lat + 1000;
	}
}

START_TEST(target_words)
{
	uint32_t m;
	uint64_t ns;
	char buf[32];
	static const char *const bad[] = { "1", "1.0", "0.5x", "101", "abc", "-1", "2min", "0us", "20s", "1.5y",
					   "", "nan", "inf", "1e400" };

	ck_assert_int_eq(fg_target_parse("1.5", &m, &ns), 0);
	ck_assert_uint_eq(m, 1500);
	ck_assert_uint_eq(ns, 0);
	ck_assert_int_eq(fg_target_parse("2x", &m, &ns), 0);
	ck_assert_uint_eq(m, 2000);
	ck_assert_int_eq(fg_target_parse("2ms", &m, &ns), 0);
	ck_assert_uint_eq(m, 0);
	ck_assert_uint_eq(ns, 2 * MS);
	ck_assert_int_eq(fg_target_parse("500us", &m, &ns), 0);
	ck_assert_uint_eq(ns, 500 * US);
	ck_assert_int_eq(fg_target_parse("0.01s", &m, &ns), 0);
	ck_assert_uint_eq(ns, 10 * MS);
	ck_assert_int_eq(fg_target_parse("0", &m, &ns), 0);
	ck_assert(m == 0 && ns == 0);
	ck_assert_int_eq(fg_target_parse("off", &m, &ns), 0);
	ck_assert(m == 0 && ns == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(fg_target_parse(bad[i], &m, &ns) == -EINVAL, "'%s' taken", bad[i]);
	fg_target_format(1500, 0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1.50x");
	fg_target_format(0, 2 * MS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2000us");
	fg_target_format(0, 0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0");
}
END_TEST

/* 990 reads at 10 us and 10 at 1 ms: p99 is 10 us (nearest rank: the
 * 990th), reported as its bucket's upper end (within 19 %). */
START_TEST(idle_p99)
{
	struct fg_gauge g;
	uint64_t now = 1000 * MS, p;

	fg_gauge_init(&g);
	ck_assert(fg_gauge_has_target(&g));
	ck_assert_uint_eq(fg_gauge_idle_p99(&g, 0), 0);
	reads(&g, &now, 990, 10 * US, 4096);
	reads(&g, &now, 10, 1 * MS, 4096);
	p = fg_gauge_idle_p99(&g, 0);
	ck_assert_uint_ge(p, 10 * US);
	ck_assert_uint_le(p, 12 * US);
	/* one more slow one: the 990th is now slow */
	reads(&g, &now, 1, 1 * MS, 4096);
	ck_assert_uint_ge(fg_gauge_idle_p99(&g, 0), 1 * MS);
	/* classes apart: a 1 MiB read is not a 4 KiB one */
	ck_assert_uint_eq(fg_gauge_idle_p99(&g, 3), 0);
	reads(&g, &now, 100, 300 * US, 1 << 20);
	ck_assert_uint_ge(fg_gauge_idle_p99(&g, 3), 300 * US);
	ck_assert_uint_le(fg_gauge_idle_p99(&g, 3), 360 * US);
}
END_TEST

/* The baseline follows the readers: after an epoch of faster reads the
 * old slow ones are forgotten. */
START_TEST(idle_epochs)
{
	struct fg_gauge g;
	uint64_t now = 1000 * MS;

	fg_gauge_init(&g);
	reads(&g, &now, FG_EPOCH, 1 * MS, 4096);
	ck_assert_uint_ge(fg_gauge_idle_p99(&g, 0), 1 * MS);
	reads(&g, &now, FG_EPOCH, 10 * US, 4096);
	ck_assert_uint_le(fg_gauge_idle_p99(&g, 0), 12 * US);
}
END_TEST

/* Reads while background work runs are not idle ones. */
START_TEST(busy_not_idle)
{
	struct fg_gauge g;
	struct fg_ctl c;
	uint64_t now = 1000 * MS;

	fg_gauge_init(&g);
	reads(&g, &now, 1000, 10 * US, 4096);
	fg_ctl_begin(&c, &g, now);
	reads(&g, &now, 1000, 5 * MS, 4096);
	ck_assert_uint_le(fg_gauge_idle_p99(&g, 0), 12 * US);
	fg_ctl_end(&c);
	reads(&g, &now, 1000, 5 * MS, 4096);
	ck_assert_uint_ge(fg_gauge_idle_p99(&g, 0), 5 * MS);
}
END_TEST

/* One controller window with n reads of lat: returns the delay asked at its end. */
static uint64_t window(struct fg_ctl *c, struct fg_gauge *g, uint64_t *now, int n, uint64_t lat, double speed,
		       bool *limited)
{
	uint64_t end = *now + FG_WINDOW_NS;

	reads(g, now, n, lat, 4096);
	if (*now < end)
		*now = end;
	return fg_ctl_delay(c, *now, speed, limited);
}

/* One CPU at a time while readers are about: one in now, reads in the last
 * window (until a window without any), never without a controller. */
START_TEST(one_cpu_while_readers)
{
	struct fg_gauge g;
	struct fg_ctl c;
	struct fg_ctl_state st;
	uint64_t now = 1000 * MS;
	bool limited;

	fg_gauge_init(&g);
	memset(&c, 0, sizeof(c));
	ck_assert(!fg_ctl_one_cpu(&c));                  /* not started */
	reads(&g, &now, 1000, 10 * US, 4096);            /* an idle baseline */
	fg_ctl_begin(&c, &g, now);
	ck_assert(!fg_ctl_one_cpu(&c));                  /* nobody reads */
	atomic_store(&g.active, 1);
	ck_assert(fg_ctl_one_cpu(&c));                   /* a read in progress */
	atomic_store(&g.active, 0);
	/* a window with reads under the target: no rate, but readers about */
	window(&c, &g, &now, 600, 10 * US, 100e6, &limited);
	ck_assert(fg_ctl_one_cpu(&c));
	fg_gauge_ctl_state(&g, &st);
	ck_assert(st.one_cpu);
	ck_assert_uint_eq(st.rate, 0);
	/* a window without any: the readers have gone */
	now += FG_WINDOW_NS;
	fg_ctl_delay(&c, now, 100e6, &limited);
	ck_assert(!fg_ctl_one_cpu(&c));
	fg_gauge_ctl_state(&g, &st);
	ck_assert(!st.one_cpu);
	fg_ctl_end(&c);
	ck_assert(!fg_ctl_one_cpu(&c));
}
END_TEST

START_TEST(controller_moves)
{
	struct fg_gauge g;
	struct fg_ctl c;
	struct fg_ctl_state st;
	uint64_t now = 1000 * MS, d;
	double speed = 100e6;
	bool limited;

	fg_gauge_init(&g);
	reads(&g, &now, 1000, 20 * US, 4096);              /* idle p99: 20 us */
	fg_ctl_begin(&c, &g, now);
	/* nobody reads: unlimited, and the solo speed learned */
	d = window(&c, &g, &now, 0, 0, speed, &limited);
	ck_assert_uint_eq(d, 0);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_int_eq(st.phase, FG_PHASE_FREE);
	ck_assert_uint_eq(st.rate, 0);
	/* readers at 3x idle: over 1.5x, the rate goes to 0.7 x the speed */
	window(&c, &g, &now, FG_WINDOW_READS, 60 * US, speed, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_int_eq(st.phase, FG_PHASE_LIMITED);
	ck_assert_uint_eq(st.rate, (uint64_t)(speed * FG_DECREASE));
	ck_assert_uint_eq(st.decreases, 1);
	ck_assert_int_eq(st.cls, 0);
	ck_assert_uint_ge(st.p99_ns, 60 * US);
	ck_assert_uint_ge(st.idle_p99_ns, 20 * US);
	ck_assert_uint_le(st.idle_p99_ns, 24 * US);
	ck_assert_uint_eq(st.target_ns, st.idle_p99_ns * 3 / 2);
	/* again over, twice: 0.343 x */
	window(&c, &g, &now, FG_WINDOW_READS, 60 * US, speed, &limited);
	window(&c, &g, &now, FG_WINDOW_READS, 60 * US, speed, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_uint_eq(st.rate, (uint64_t)(speed * FG_DECREASE * FG_DECREASE * FG_DECREASE));
	/* under the target: plus a 32nd of the solo speed */
	window(&c, &g, &now, FG_WINDOW_READS, 20 * US, speed * 0.343, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_uint_eq(st.rate, (uint64_t)(speed * FG_DECREASE * FG_DECREASE * FG_DECREASE + speed / FG_INCREASE_DIV));
	/* nobody reads: doubling until past the solo speed, then unlimited */
	window(&c, &g, &now, 0, 0, speed * 0.4, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_int_eq(st.phase, FG_PHASE_LIMITED);
	ck_assert_uint_eq(st.rate, (uint64_t)(2 * (speed * FG_DECREASE * FG_DECREASE * FG_DECREASE +
						   speed / FG_INCREASE_DIV)));
	window(&c, &g, &now, 0, 0, speed * 0.7, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_int_eq(st.phase, FG_PHASE_FREE);
	ck_assert_uint_eq(st.rate, 0);
	fg_ctl_end(&c);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_int_eq(st.phase, FG_PHASE_OFF);
}
END_TEST

/* Over the target but not twice over it: noise until a second window in
 * a row says so too. */
START_TEST(debounce)
{
	struct fg_gauge g;
	struct fg_ctl c;
	struct fg_ctl_state st;
	uint64_t now = 1000 * MS;
	bool limited;

	fg_gauge_init(&g);
	reads(&g, &now, 1000, 20 * US, 4096);              /* target: 30.72 us */
	fg_ctl_begin(&c, &g, now);
	window(&c, &g, &now, FG_WINDOW_READS, 40 * US, 1e8, &limited);
	window(&c, &g, &now, FG_WINDOW_READS, 20 * US, 1e8, &limited);
	window(&c, &g, &now, FG_WINDOW_READS, 40 * US, 1e8, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_uint_eq(st.decreases, 0);
	ck_assert_int_eq(st.phase, FG_PHASE_FREE);
	window(&c, &g, &now, FG_WINDOW_READS, 40 * US, 1e8, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_uint_eq(st.decreases, 1);
	ck_assert_int_eq(st.phase, FG_PHASE_LIMITED);
	fg_ctl_end(&c);
}
END_TEST

/* Too few reads for a window: it goes on up to FG_WINDOW_MAX_NS. */
START_TEST(long_window)
{
	struct fg_gauge g;
	struct fg_ctl c;
	struct fg_ctl_state st;
	uint64_t now = 1000 * MS;
	bool limited;

	fg_gauge_init(&g);
	reads(&g, &now, 1000, 20 * US, 4096);
	fg_ctl_begin(&c, &g, now);
	window(&c, &g, &now, 5, 100 * US, 1e8, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_uint_eq(st.decreases, 0);
	now += FG_WINDOW_MAX_NS;
	fg_ctl_delay(&c, now, 1e8, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_uint_eq(st.decreases, 1);
	fg_ctl_end(&c);
}
END_TEST

/* No idle reads of the class read: a probe pauses the work; reads during
 * it (after the settling time) are the baseline; none again for a while. */
START_TEST(probe)
{
	struct fg_gauge g;
	struct fg_ctl c;
	struct fg_ctl_state st;
	uint64_t now = 1000 * MS, t0, d;
	bool limited;

	fg_gauge_init(&g);
	fg_ctl_begin(&c, &g, now);
	window(&c, &g, &now, FG_WINDOW_READS, 50 * US, 1e8, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_int_eq(st.phase, FG_PHASE_PROBING);
	ck_assert_uint_eq(st.probes, 1);
	t0 = now;
	d = fg_ctl_delay(&c, now, 1e8, &limited);
	ck_assert(limited && d > 0);
	now = t0 + FG_PROBE_SETTLE_NS;
	fg_ctl_delay(&c, now, 1e8, &limited);
	ck_assert(limited);
	reads(&g, &now, 100, 10 * US, 4096);
	ck_assert_uint_le(fg_gauge_idle_p99(&g, 0), 12 * US);
	now = t0 + FG_PROBE_NS;
	d = fg_ctl_delay(&c, now, 1e8, &limited);
	ck_assert_uint_eq(d, 0);
	ck_assert(!limited);
	/* readers at 5x the probe's baseline: a decrease, no new probe */
	window(&c, &g, &now, FG_WINDOW_READS, 50 * US, 1e8, &limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_int_eq(st.phase, FG_PHASE_LIMITED);
	ck_assert_uint_eq(st.probes, 1);
	ck_assert_uint_eq(st.decreases, 1);
	fg_ctl_end(&c);
}
END_TEST

/* The rate as a token bucket: what was issued past it is waited for. */
START_TEST(tokens)
{
	struct fg_gauge g;
	struct fg_ctl c;
	uint64_t now = 1000 * MS, d;
	bool limited;

	fg_gauge_init(&g);
	reads(&g, &now, 1000, 20 * US, 4096);
	fg_ctl_begin(&c, &g, now);
	window(&c, &g, &now, FG_WINDOW_READS, 60 * US, 10e6 / FG_DECREASE, &limited);   /* rate 10 MB/s */
	d = fg_ctl_delay(&c, now, 10e6, &limited);
	ck_assert_uint_eq(d, 0);
	fg_ctl_issued(&c, 1000000);          /* 1 MB: a tenth of a second at 10 MB/s */
	d = fg_ctl_delay(&c, now, 10e6, &limited);
	ck_assert(limited);
	ck_assert_uint_ge(d, 40 * MS);       /* at most 50 ms at a time */
	d = fg_ctl_delay(&c, now + 50 * MS, 10e6, &limited);
	ck_assert_uint_ge(d, 20 * MS);
	d = fg_ctl_delay(&c, now + 101 * MS, 10e6, &limited);
	ck_assert_uint_eq(d, 0);
	/* md's rule: no target, no controller */
	fg_gauge_set_target(&g, 0, 0);
	ck_assert(!fg_gauge_has_target(&g));
	fg_ctl_end(&c);
}
END_TEST

/* A new run starts where the last left off: held to its rate. */
START_TEST(next_run)
{
	struct fg_gauge g;
	struct fg_ctl c;
	struct fg_ctl_state st;
	uint64_t now = 1000 * MS;
	bool limited;

	fg_gauge_init(&g);
	reads(&g, &now, 1000, 20 * US, 4096);
	fg_ctl_begin(&c, &g, now);
	window(&c, &g, &now, FG_WINDOW_READS, 60 * US, 1e8, &limited);
	fg_ctl_end(&c);
	fg_ctl_begin(&c, &g, now);
	fg_ctl_issued(&c, 10000000);
	ck_assert_uint_gt(fg_ctl_delay(&c, now, 1e8, &limited), 0);
	ck_assert(limited);
	fg_gauge_ctl_state(&g, &st);
	ck_assert_uint_eq(st.rate, (uint64_t)(1e8 * FG_DECREASE));
	fg_ctl_end(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fg_gauge");
	TCase *tc = tcase_create("gauge");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, target_words);
	tcase_add_test(tc, idle_p99);
	tcase_add_test(tc, idle_epochs);
	tcase_add_test(tc, busy_not_idle);
	tcase_add_test(tc, controller_moves);
	tcase_add_test(tc, one_cpu_while_readers);
	tcase_add_test(tc, debounce);
	tcase_add_test(tc, long_window);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, tokens);
	tcase_add_test(tc, next_run);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
