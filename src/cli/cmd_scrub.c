/* cmd_scrub.c - raidimg scrub: check (or repair) an array's parity.
 *
 * The engine (scrub.c) does the work in a thread of its own; this file
 * parses the options, prints one line (or JSON object) per mismatch and per
 * write as the engine reports them, draws the progress bar, and turns the
 * result into the exit status.  What it shares with rebuild and mount
 * (engine options, the progress bar and signals) is engine_args.c.
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
#include "scrub_metrics.h"
#include "scrub_report.h"
#include "engine_args.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* reporting                                                            */
/* ------------------------------------------------------------------ */

struct scrub_cmd {
	struct scrub_ui ui;
	struct array *a;
	bool repair;
};

static void on_mismatch(void *arg, const struct scrub_mismatch *m)
{
	struct scrub_cmd *c = arg;

	pthread_mutex_lock(&c->ui.lock);
	progress_clear(&c->ui.bar);
	if (c->ui.json)
		scrub_report_mismatch_json(stdout, m);    /* the same records as the mount's log */
	else
		scrub_report_mismatch_text(stdout, m);
	fflush(stdout);
	pthread_mutex_unlock(&c->ui.lock);
}

static void on_write(void *arg, const struct scrub_write *w)
{
	struct scrub_cmd *c = arg;

	pthread_mutex_lock(&c->ui.lock);
	progress_clear(&c->ui.bar);
	if (c->ui.json)
		scrub_report_write_json(stdout, w);
	else
		scrub_report_write_text(stdout, w);
	fflush(stdout);
	pthread_mutex_unlock(&c->ui.lock);
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
		   "  --shard K/N            only shard K of N (K from 0 to N-1): the stripes of\n"
		   "                         the array (or of --range) cut in N parts of whole\n"
		   "                         stripes; run the N shards anywhere (GNU parallel,\n"
		   "                         a Slurm array job), then `raidimg scrub-merge` their\n"
		   "                         --json reports into the report of one scrub\n"
		   "  --metrics FILE         write the result for Prometheus (node_exporter's\n"
		   "                         textfile format: last run time, duration, bytes,\n"
		   "                         mismatches, read errors, result), atomically\n"
		   "  --metrics-label NAME=VALUE  an extra label on every metric (up to 8)\n"
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
	int shard, shards;           /* --shard K/N; shards 0: none */
	char shard_text[32];
	const char *metrics;         /* --metrics FILE */
	struct scrub_metrics m;      /* its labels */
};

/* --shard K/N.  0 or -1 (said). */
static int parse_shard(const char *arg, struct scrub_args *sa)
{
	const char *slash = strchr(arg, '/');
	char k[24];
	long long kv, nv;

	if (!slash || (size_t)(slash - arg) >= sizeof(k)) {
		msg("--shard %s: give K/N, shard K of N (K from 0 to N-1), e.g. 0/8", arg);
		return -1;
	}
	memcpy(k, arg, (size_t)(slash - arg));
	k[slash - arg] = '\0';
	if (parse_int(slash + 1, 1, 1000000, &nv) || parse_int(k, 0, nv - 1, &kv)) {
		msg("--shard %s: give K/N with 1 <= N <= 1000000 and 0 <= K < N (shards are numbered from 0, as "
		    "Slurm's SLURM_ARRAY_TASK_ID with --array=0-%lld)", arg, nv > 1 ? nv - 1 : 0);
		return -1;
	}
	sa->shard = (int)kv;
	sa->shards = (int)nv;
	snprintf(sa->shard_text, sizeof(sa->shard_text), "%lld/%lld", kv, nv);
	return 0;
}

/* The stripes of shard K of N of [*b, *e): whole stripes, the shards in
 * order, their sizes differing by one at most.  0 or -1 (said). */
static int apply_shard(const struct scrub_args *sa, const struct array *a, struct scrub_opts *so)
{
	uint64_t b = so->stripe_begin, e = so->stripe_end ? so->stripe_end : a->stripes, n = e - b;

	if ((uint64_t)sa->shards > n) {
		msg("--shard %s: the range has %" PRIu64 " stripes, fewer than %d shards", sa->shard_text, n,
		    sa->shards);
		return -1;
	}
	so->stripe_begin = b + (uint64_t)((unsigned __int128)n * (unsigned)sa->shard / (unsigned)sa->shards);
	so->stripe_end = b + (uint64_t)((unsigned __int128)n * (unsigned)(sa->shard + 1) / (unsigned)sa->shards);
	return 0;
}

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
	enum { O_REPAIR = 0x2101, O_JSON, O_RANGE, O_CP, O_CPI, O_SHARD, O_METRICS, O_LABEL };
	static const struct option longopts[] = {
		{ "repair", no_argument, NULL, O_REPAIR },
		{ "shard", required_argument, NULL, O_SHARD },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "metrics-label", required_argument, NULL, O_LABEL },
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
	char err[256];
	long long v;
	int opt;

	while ((opt = cli_getopt(argc, argv, "h", longopts)) != -1) {
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
		case O_SHARD:
			if (parse_shard(optarg, sa))
				return -1;
			break;
		case O_METRICS: sa->metrics = optarg; break;
		case O_LABEL:
			if (scrub_metrics_label(&sa->m, optarg, err, sizeof(err))) {
				msg("%s", err);
				return -1;
			}
			break;
		case O_CPI:
			if (parse_int(optarg, 1, 86400 * 365, &v)) {
				msg("--checkpoint-interval %s: give a number of seconds", optarg);
				return -1;
			}
			sa->so.checkpoint_ns = (uint64_t)v * 1000000000ull;
			break;
		case 'h': usage(stdout); return 1;
		default: return -1;
		}
	}
	if (optind >= argc)
		return cli_usage_error("give the member images");
	if (sa->m.nlabels && !sa->metrics)
		return cli_usage_error("--metrics-label is for --metrics FILE");
	return 0;
}

/* --metrics FILE: the result of this run (a, p: NULL when the array could
 * not be had).  Returns ret, or EXIT_ERR when the file cannot be written. */
static int write_metrics(struct scrub_args *sa, const struct array *a, const struct scrub_progress *p,
			 const char *result, int ret)
{
	struct scrub_metrics *m = &sa->m;
	char uuid[40] = "", err[ERR_MAX];
	struct timespec ts;

	if (!sa->metrics)
		return ret;
	if (a && a->has_meta)
		meta_uuid_format(a->uuid, uuid);
	clock_gettime(CLOCK_REALTIME, &ts);
	m->array_uuid = uuid;
	m->array_name = a ? a->name : "";
	m->mode = sa->repair ? "repair" : "check";
	m->shard = sa->shards ? sa->shard_text : NULL;
	m->result = result;
	m->exit_status = ret;
	m->finished = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (p)
		scrub_metrics_counts(m, p);
	if (scrub_metrics_write(sa->metrics, m, err, sizeof(err))) {
		msg("%s", err);
		return EXIT_ERR;
	}
	return ret;
}

/* --repair writes: refuse images marked read-only (even for root), so a
 * write-protected original is never touched by mistake. */
static int check_writable(const struct array_args *aa)
{
	for (int i = 0; i < aa->ao.g.npaths; i++) {
		struct stat st;

		if (stat(aa->ao.g.paths[i], &st))
			continue;       /* assembly reports it */
		if (S_ISREG(st.st_mode) && !(st.st_mode & 0222)) {
			msg("%s: the image is read-only (mode %04o); --repair writes to the member images: work on "
			    "writable copies", aa->ao.g.paths[i], (unsigned)(st.st_mode & 07777));
			return -1;
		}
	}
	return 0;
}

/* The summary, the message of a run that did not cover its range, the exit
 * status. */
static int report_end(struct scrub_args *sa, struct scrub_cmd *c, int r, const struct scrub_progress *p,
		      const char *result)
{
	struct scrub_summary_id id;

	scrub_summary_id_of(c->a, &id);
	id.shard = sa->shard;
	id.shards = sa->shards;
	if (c->ui.json)
		scrub_report_summary_json_id(stdout, &id, p, result, sa->so.mode, NULL);
	else
		scrub_report_summary_text(stdout, c->a, p, result, sa->so.mode);
	if (r == -EINTR)
		msg("interrupted at stripe %" PRIu64 "%s%s", p->next_stripe,
		    sa->so.checkpoint_path ? "; resume with --checkpoint " : " (no --checkpoint: not saved)",
		    sa->so.checkpoint_path ? sa->so.checkpoint_path : "");
	else if (r)
		msg("scrub stopped at stripe %" PRIu64 ": %s", p->next_stripe, p->message[0] ? p->message : strerror(-r));
	else if (!p->mismatches && (p->stripes_unchecked || p->read_errors))
		msg("%" PRIu64 " member read errors; %" PRIu64 " stripes could not be checked (too few members "
		    "readable there)", p->read_errors, p->stripes_unchecked);
	return r ? EXIT_ERR : p->mismatches ? EXIT_FOUND : (p->stripes_unchecked || p->read_errors) ? EXIT_ERR : EXIT_OK;
}

int cmd_scrub(int argc, char **argv)
{
	struct array_args aa;
	struct scrub_args sa;
	struct scrub_cmd c;
	struct scrub *s = NULL;
	struct scrub_progress p;
	char err[ERR_MAX] = "";
	const char *result = "error";
	bool have_p = false;
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
		goto out_metrics;
	if (sa.repair) {
		/* the only mode that opens members for writing */
		aa.ao.open_flags = SOURCE_WRITE;
		if (check_writable(&aa))
			goto out_metrics;
	}
	if (array_args_assemble(&aa, &c.a, err, sizeof(err))) {
		msg("%s", err);
		goto out_metrics;
	}
	print_array_warnings(c.a);
	if (sa.range && apply_range(sa.range, c.a, &sa.so))
		goto out_metrics;
	if (sa.shards && apply_shard(&sa, c.a, &sa.so))
		goto out_metrics;
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
	have_p = true;
	result = scrub_result_name(r, &p, sa.so.mode);
	ret = report_end(&sa, &c, r, &p, result);
	scrub_free(s);
out_ui:
	scrub_ui_free(&c.ui);
out_metrics:
	ret = write_metrics(&sa, c.a, have_p ? &p : NULL, result, ret);
	array_free(c.a);
out_args:
	array_args_free(&aa);
	return ret;
}
