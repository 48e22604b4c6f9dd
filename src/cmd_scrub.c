/* cmd_scrub.c - raidimg scrub: check (or repair) an array's parity.
 *
 * The engine (scrub.c) does the work in a thread of its own; this file
 * parses the options, prints one line (or JSON object) per mismatch and per
 * write as the engine reports them, draws the progress bar, and turns the
 * result into the exit status.  It also holds what cmd_rebuild shares
 * (scrub_cli.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"
#include "mount_scrub.h"
#include "scrub_cli.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* shared with cmd_rebuild                                              */
/* ------------------------------------------------------------------ */

int parse_rate(const char *opt, const char *arg, uint64_t *out)
{
	size_t len = strlen(arg);
	uint64_t v;

	if (!strcmp(arg, "unlimited") || !strcmp(arg, "none")) {
		*out = 0;
		return 0;
	}
	if (len && arg[len - 1] >= '0' && arg[len - 1] <= '9') {
		long long kib;
		if (parse_int(arg, 0, (long long)(UINT64_MAX >> 11), &kib))
			goto bad;
		*out = (uint64_t)kib * 1024;
		return 0;
	}
	if (parse_size(arg, &v))
		goto bad;
	*out = v;
	return 0;
bad:
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
		return parse_rate("--speed-limit-min", arg, &so->speed_min) ? -1 : 1;
	case SCRUB_OPT_MAX:
		return parse_rate("--speed-limit-max", arg, &so->speed_max) ? -1 : 1;
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
	pthread_mutex_init(&ui->lock, NULL);
	ui->json = json;
	ui->trace_fd = -1;
	if (trace && *trace) {
		struct outfile_opts oo = { .append = true };
		struct outfile of;
		char err[PATH_MAX + 256];

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

static void ui_redraw(struct scrub_ui *ui, struct scrub *s, bool force)
{
	struct scrub_progress p;
	char extra[64] = "";

	scrub_get_progress(s, &p);
	ui->bar.total = p.total_bytes;
	if (p.mode != SCRUB_REBUILD && p.mismatches)
		snprintf(extra, sizeof(extra), "%" PRIu64 " mismatch%s", p.mismatches, p.mismatches == 1 ? "" : "es");
	if (p.state == SCRUB_PAUSED)
		snprintf(extra, sizeof(extra), "paused");
	pthread_mutex_lock(&ui->lock);
	progress_show(&ui->bar, p.done_bytes, p.speed, extra[0] ? extra : NULL, force);
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
	pthread_mutex_lock(&ui->lock);
	progress_clear(&ui->bar);
	pthread_mutex_unlock(&ui->lock);
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return ret;
}

/* ------------------------------------------------------------------ */
/* reporting                                                            */
/* ------------------------------------------------------------------ */

struct scrub_cmd {
	struct scrub_ui ui;
	struct array *a;
	bool repair;
};

static const char *kind_text(enum scrub_kind k)
{
	switch (k) {
	case SCRUB_KIND_P: return "P wrong";
	case SCRUB_KIND_Q: return "Q wrong";
	case SCRUB_KIND_DATA: return "data wrong";
	case SCRUB_KIND_PQ: return "P and Q disagree with the data, the syndromes name no single member";
	case SCRUB_KIND_DEGRADED: return "parity disagrees (degraded: cannot tell which member)";
	}
	return "?";
}

static void print_mismatch_text(const struct scrub_mismatch *m)
{
	printf("mismatch: stripe %" PRIu64 ": %s", m->stripe, kind_text(m->kind));
	if (m->role >= 0)
		printf(" on role %d (%s) at image offset %" PRIu64, m->role, m->path ? m->path : "?", m->image_off);
	else if (m->q_role >= 0)
		printf(" at member data offset %" PRIu64 " (P on role %d, Q on role %d)", m->member_off, m->p_role,
		       m->q_role);
	else
		printf(" at member data offset %" PRIu64 " (P on role %d)", m->member_off, m->p_role);
	printf(", %" PRIu32 " byte%s (chunk offset %" PRIu32, m->len, m->len == 1 ? "" : "s", m->chunk_off);
	if (m->array_off != UINT64_MAX)
		printf(", array offset %" PRIu64, m->array_off);
	printf(")%s\n", m->repaired ? ", repaired" : "");
}

static void on_mismatch(void *arg, const struct scrub_mismatch *m)
{
	struct scrub_cmd *c = arg;

	pthread_mutex_lock(&c->ui.lock);
	progress_clear(&c->ui.bar);
	if (c->ui.json)
		scrub_json_mismatch(stdout, m);   /* mount_scrub.h: the same records as the mount's log */
	else
		print_mismatch_text(m);
	fflush(stdout);
	pthread_mutex_unlock(&c->ui.lock);
}

static void on_write(void *arg, const struct scrub_write *w)
{
	struct scrub_cmd *c = arg;

	pthread_mutex_lock(&c->ui.lock);
	progress_clear(&c->ui.bar);
	if (c->ui.json) {
		printf("{\"type\":\"write\",\"stripe\":%" PRIu64 ",\"role\":%d,\"image\":", w->stripe, w->role);
		json_str(stdout, w->path ? w->path : "");
		printf(",\"image_offset\":%" PRIu64 ",\"length\":%" PRIu64 "}\n", w->image_off, w->len);
	} else {
		printf("write: role %d (%s) at image offset %" PRIu64 ", %" PRIu64 " bytes\n", w->role,
		       w->path ? w->path : "?", w->image_off, w->len);
	}
	fflush(stdout);
	pthread_mutex_unlock(&c->ui.lock);
}

/* The verdict for the summary and the exit status. */
static const char *result_name(int ret, const struct scrub_progress *p, bool repair)
{
	if (ret == -EINTR)
		return "interrupted";
	if (ret)
		return "error";
	if (p->mismatches)
		return repair ? "repaired" : "mismatches";
	if (p->stripes_unchecked)
		return "incomplete";
	if (p->read_errors)
		return "read-errors";
	return "clean";
}

static void print_summary(const struct scrub_cmd *c, const struct scrub_progress *p, const char *result)
{
	const struct array *a = c->a;
	uint64_t req = p->member_requests, rb = p->member_request_bytes;
	double avg = req ? (double)rb / (double)req : 0, mbps = p->seconds > 0 ? (double)rb / p->seconds / 1e6 : 0;
	char uuid[40], s1[32], s2[32];

	meta_uuid_format(a->uuid, uuid);
	if (c->ui.json) {
		printf("{\"type\":\"summary\",\"result\":\"%s\",\"mode\":\"%s\",\"array_uuid\":\"%s\",\"level\":%d"
		       ",\"raid_disks\":%d,\"chunk_bytes\":%" PRIu32 ",\"stripes_total\":%" PRIu64
		       ",\"range\":[%" PRIu64 ",%" PRIu64 "],\"resumed_at\":%" PRIu64 ",\"next_stripe\":%" PRIu64
		       ",\"mismatches\":%" PRIu64 ",\"mismatch_units\":%" PRIu64 ",\"md_mismatch_cnt\":%" PRIu64
		       ",\"writes\":%" PRIu64 ",\"bytes_written\":%" PRIu64 ",\"stripes_unchecked\":%" PRIu64
		       ",\"read_errors\":%" PRIu64 ",\"member_requests\":%" PRIu64 ",\"member_request_bytes\":%" PRIu64
		       ",\"avg_request_bytes\":%.0f,\"seconds\":%.6f,\"read_bytes_per_second\":%.0f"
		       ",\"throttle_seconds\":%.3f,\"fg_backoffs\":%" PRIu64 "}\n",
		       result, c->repair ? "repair" : "check", uuid, a->geom.level, a->geom.raid_disks,
		       a->geom.chunk_bytes, a->stripes, p->stripe_begin, p->stripe_end, p->resumed_at, p->next_stripe,
		       p->mismatches, p->mismatch_units, p->mismatch_units * 8, p->writes, p->bytes_written,
		       p->stripes_unchecked, p->read_errors, req, rb, avg, p->seconds,
		       p->seconds > 0 ? (double)rb / p->seconds : 0, (double)p->throttle_ns / 1e9, p->fg_backoffs);
		return;
	}
	printf("scrub: %s: stripes %" PRIu64 "-%" PRIu64 " of %" PRIu64 " (this run from %" PRIu64 ", done up to %"
	       PRIu64 "): %" PRIu64 " mismatch%s (md mismatch_cnt %" PRIu64 ")", result, p->stripe_begin,
	       p->stripe_end, a->stripes, p->resumed_at, p->next_stripe, p->mismatches,
	       p->mismatches == 1 ? "" : "es", p->mismatch_units * 8);
	if (c->repair)
		printf(", %" PRIu64 " write%s (%" PRIu64 " bytes)", p->writes, p->writes == 1 ? "" : "s",
		       p->bytes_written);
	if (p->stripes_unchecked)
		printf(", %" PRIu64 " stripes not checkable", p->stripes_unchecked);
	if (p->read_errors)
		printf(", %" PRIu64 " read errors", p->read_errors);
	printf("\nscrub: read %s in %" PRIu64 " member requests (%s each on average) in %.2f s, %.0f MB/s\n",
	       fmt_size(rb, s1, sizeof(s1)), req, fmt_size((uint64_t)avg, s2, sizeof(s2)), p->seconds, mbps);
}

/* ------------------------------------------------------------------ */
/* options                                                              */
/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg scrub [OPTIONS] [ARRAY OPTIONS] MEMBER...\n\n"
		   "Check that P (and Q) agree with the data in every stripe, as md's 'check' does,\n"
		   "and report every mismatch: stripe, member (role and image), image offset and the\n"
		   "exact bytes that differ; for RAID6 the member at fault when P and Q name one.\n"
		   "Members are opened read-only unless --repair is given.\n\n"
		   "  --repair               rewrite what is wrong (opens the members for writing):\n"
		   "                         RAID5 rewrites P; RAID6 rewrites the member the syndromes\n"
		   "                         name, else P and Q.  Refused on a degraded array.\n"
		   "  --json                 JSON Lines on stdout: one object per mismatch and per\n"
		   "                         write, then a summary object\n"
		   "  --range START:END      only the stripes holding array bytes [START, END)\n"
		   "                         (array offsets; either side may be empty)\n"
		   "  --checkpoint FILE      resume from FILE if it exists; save the position there\n"
		   "                         (every --checkpoint-interval and when interrupted);\n"
		   "                         removed when the scrub finishes\n"
		   "  --checkpoint-interval SECONDS  (default 10)\n"
		   "  --request-size SIZE    bytes read from each member per request (default 1M)\n"
		   "  --threads N            reader threads (default: members, at most 4)\n"
		   "  --speed-limit-min RATE floor kept even while yielding (default 1000 = KiB/s)\n"
		   "  --speed-limit-max RATE ceiling (default: unlimited)\n"
		   "                         RATE: KiB/s per member like md's sysctls, or e.g. 50M\n"
		   "  --progress, --no-progress  progress bar on stderr (default: if it is a terminal)\n"
		   "  -h, --help             this text\n\n" ARRAY_OPTIONS_HELP
		   "\nExit status: 0 clean, 1 mismatches found (or repaired), 2 error: bad input,\n"
		   "interrupted, member read errors or stripes that could not be checked.\n");
}

struct scrub_args {
	struct scrub_opts so;
	bool repair, json, progress;
	const char *range;
};

/* --range START:END over array bytes -> whole stripes. */
static int apply_range(const char *range, const struct array *a, struct scrub_opts *so)
{
	uint64_t sb = (uint64_t)a->geom.chunk_bytes * (uint64_t)a->k, start = 0, end = a->array_bytes;
	const char *colon = strchr(range, ':');
	char first[64];

	if (!colon || (size_t)(colon - range) >= sizeof(first)) {
		msg("--range %s: give START:END (array byte offsets, e.g. 1G:2G, 0:, :512M)", range);
		return -1;
	}
	memcpy(first, range, (size_t)(colon - range));
	first[colon - range] = '\0';
	if ((first[0] && parse_size(first, &start)) || (colon[1] && parse_size(colon + 1, &end))) {
		msg("--range %s: START and END must be sizes (e.g. 1G:2G)", range);
		return -1;
	}
	if (end > a->array_bytes) {
		msg("--range %s: END %" PRIu64 " is past the end of the array (%" PRIu64 " bytes)", range, end,
		    a->array_bytes);
		return -1;
	}
	if (start >= end) {
		msg("--range %s: START %" PRIu64 " is not below END %" PRIu64, range, start, end);
		return -1;
	}
	so->stripe_begin = start / sb;
	so->stripe_end = (end + sb - 1) / sb;
	return 0;
}

static int parse_args(int argc, char **argv, struct array_args *aa, struct scrub_args *sa)
{
	enum { O_REPAIR = 0x2101, O_JSON, O_RANGE, O_CP, O_CPI };
	static const struct option longopts[] = {
		{ "repair", no_argument, NULL, O_REPAIR },
		{ "json", no_argument, NULL, O_JSON },
		{ "range", required_argument, NULL, O_RANGE },
		{ "checkpoint", required_argument, NULL, O_CP },
		{ "checkpoint-interval", required_argument, NULL, O_CPI },
		SCRUB_ENGINE_LONG_OPTIONS,
		SCRUB_OPT_MIN_LONG_OPTION,
		{ "help", no_argument, NULL, 'h' },
		ARRAY_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	long long v;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		int r = array_args_opt(aa, opt, optarg);
		if (!r)
			r = scrub_engine_opt(&sa->so, &sa->progress, opt, optarg);
		if (r < 0)
			return -1;
		if (r)
			continue;
		switch (opt) {
		case O_REPAIR: sa->repair = true; break;
		case O_JSON: sa->json = true; break;
		case O_RANGE: sa->range = optarg; break;
		case O_CP: sa->so.checkpoint_path = optarg; break;
		case O_CPI:
			if (parse_int(optarg, 1, 86400 * 365, &v)) {
				msg("--checkpoint-interval %s: give a number of seconds", optarg);
				return -1;
			}
			sa->so.checkpoint_ns = (uint64_t)v * 1000000000ull;
			break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -1;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return -1;
	}
	return 0;
}

/* --repair writes: refuse images marked read-only (even for root), so a
 * write-protected original is never touched by mistake. */
static int check_writable(const struct array_args *aa)
{
	for (int i = 0; i < aa->npaths; i++) {
		struct stat st;

		if (stat(aa->paths[i], &st))
			continue;       /* assembly reports it */
		if (S_ISREG(st.st_mode) && !(st.st_mode & 0222)) {
			msg("%s: the image is read-only (mode %04o); --repair writes to the member images: work on "
			    "writable copies", aa->paths[i], (unsigned)(st.st_mode & 07777));
			return -1;
		}
	}
	return 0;
}

int cmd_scrub(int argc, char **argv)
{
	struct array_args aa;
	struct scrub_args sa;
	struct scrub_cmd c;
	struct scrub *s = NULL;
	struct scrub_progress p;
	char err[1024] = "";
	const char *result;
	int ret = EXIT_ERR, r;

	memset(&sa, 0, sizeof(sa));
	memset(&c, 0, sizeof(c));
	sa.so.speed_min = SCRUB_DEFAULT_SPEED_MIN;
	sa.progress = isatty(STDERR_FILENO);
	array_args_init(&aa);
	r = parse_args(argc, argv, &aa, &sa);
	if (r) {
		ret = r > 0 ? EXIT_OK : EXIT_ERR;
		goto out_args;
	}
	if (array_args_prepare(&aa, argc - optind, argv + optind))
		goto out_args;
	if (sa.repair) {
		/* the only mode that opens members for writing */
		aa.ao.open_flags = SOURCE_WRITE;
		if (check_writable(&aa))
			goto out_args;
	}
	if (array_assemble(aa.paths, aa.npaths, &aa.ao, &c.a, err, sizeof(err))) {
		msg("%s", err);
		goto out_args;
	}
	print_array_warnings(c.a);
	if (sa.range && apply_range(sa.range, c.a, &sa.so))
		goto out;
	sa.so.mode = sa.repair ? SCRUB_REPAIR : SCRUB_CHECK;
	sa.so.resume = true;
	c.repair = sa.repair;
	scrub_ui_init(&c.ui, &sa.so, sa.progress, sa.json, sa.repair ? "repair" : "scrub");
	sa.so.on_mismatch = on_mismatch;
	sa.so.on_write = on_write;
	sa.so.arg = &c;
	r = scrub_create(c.a, &sa.so, &s, err, sizeof(err));
	if (r) {
		msg("%s", err);
		goto out_ui;
	}
	r = scrub_ui_run(&c.ui, s);
	scrub_get_progress(s, &p);
	result = result_name(r, &p, sa.repair);
	print_summary(&c, &p, result);
	if (r == -EINTR)
		msg("interrupted at stripe %" PRIu64 "%s%s", p.next_stripe,
		    sa.so.checkpoint_path ? "; resume with --checkpoint " : " (no --checkpoint: not saved)",
		    sa.so.checkpoint_path ? sa.so.checkpoint_path : "");
	else if (r)
		msg("scrub stopped at stripe %" PRIu64 ": %s", p.next_stripe, p.message[0] ? p.message : strerror(-r));
	else if (!p.mismatches && (p.stripes_unchecked || p.read_errors))
		msg("%" PRIu64 " member read errors; %" PRIu64 " stripes could not be checked (too few members "
		    "readable there)", p.read_errors, p.stripes_unchecked);
	ret = r ? EXIT_ERR : p.mismatches ? EXIT_FOUND : (p.stripes_unchecked || p.read_errors) ? EXIT_ERR : EXIT_OK;
	scrub_free(s);
out_ui:
	scrub_ui_free(&c.ui);
out:
	array_free(c.a);
out_args:
	array_args_free(&aa);
	return ret;
}
