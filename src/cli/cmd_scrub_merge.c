/* cmd_scrub_merge.c - raidimg scrub-merge: the --json reports of a scrub
 * split into shards (scrub --shard K/N) merged into the report of one
 * scrub (scrub_merge.h does the work). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "outfile.h"
#include "scrub_merge.h"
#include "scrub_metrics.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg scrub-merge [OPTIONS] REPORT...\n\n"
		   "Merge the JSON reports (raidimg scrub --json) of scrubs of adjacent parts of one\n"
		   "array, typically the N shards of `raidimg scrub --shard K/N`, into the report\n"
		   "one scrub of the whole would have printed: every mismatch and write record in\n"
		   "stripe order, then a summary with the totals (\"shards\": the reports merged).\n"
		   "A report may hold several runs appended after interruptions (resumed with\n"
		   "--checkpoint).  Refused (exit 2, nothing written): anything else, a scrub\n"
		   "that did not finish its range, reports of different arrays, geometries or\n"
		   "modes, overlapping ranges, a gap (a missing shard is named), a shard given\n"
		   "twice, records that do not add up to their summary.\n\n"
		   "  -o, --output FILE    write the merged report to FILE (default: stdout)\n"
		   "  --overwrite          replace FILE if it exists\n"
		   "  --metrics FILE       the merged result for Prometheus, as scrub --metrics\n"
		   "  --metrics-label NAME=VALUE  an extra label on every metric (up to 8)\n"
		   "  -h, --help           this text\n\n"
		   "A one-line summary goes to standard error.\n"
		   "Exit status: 0 clean, 1 mismatches found (or repaired), 2 refused or error;\n"
		   "as raidimg scrub over the whole.\n");
}

struct merge_args {
	const char *out, *metrics;
	bool overwrite;
	struct scrub_metrics m;
};

static int parse_args(int argc, char **argv, struct merge_args *ma)
{
	enum { O_METRICS = 0x2201, O_LABEL, O_OVERWRITE };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "overwrite", no_argument, NULL, O_OVERWRITE },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "metrics-label", required_argument, NULL, O_LABEL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[256];
	int opt;

	while ((opt = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
		switch (opt) {
		case 'o': ma->out = optarg; break;
		case O_OVERWRITE: ma->overwrite = true; break;
		case O_METRICS: ma->metrics = optarg; break;
		case O_LABEL:
			if (scrub_metrics_label(&ma->m, optarg, err, sizeof(err))) {
				msg("%s", err);
				return -1;
			}
			break;
		case 'h': usage(stdout); return 1;
		default: return -1;
		}
	}
	if (optind >= argc)
		return cli_usage_error("give the reports (raidimg scrub --json --shard K/N ... > shard-K.json)");
	if (ma->m.nlabels && !ma->metrics)
		return cli_usage_error("--metrics-label is for --metrics FILE");
	return 0;
}

/* The merged report to f. */
static void put_report(FILE *f, const struct scrub_merged *mr)
{
	for (size_t i = 0; i < mr->nrecords; i++)
		fprintf(f, "%s\n", mr->records[i]);
	scrub_report_summary_json_id(f, &mr->id, &mr->p, mr->result, mr->mode, mr->finished);
}

/* To -o FILE (outfile.h: named when complete) or stdout.  0 or -1 (said). */
static int write_report(const struct merge_args *ma, const struct scrub_merged *mr)
{
	struct outfile_opts oo = { .replace = ma->overwrite, .exists_hint = "give --overwrite to replace it" };
	struct outfile of;
	char err[ERR_MAX];
	FILE *f;

	if (!ma->out) {
		put_report(stdout, mr);
		return 0;
	}
	if (outfile_open(&of, ma->out, &oo, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	f = outfile_stdio(&of);
	if (!f) {
		msg("%s: %s", ma->out, strerror(errno));
		outfile_abort(&of);
		return -1;
	}
	put_report(f, mr);
	if (ferror(f) | fclose(f)) {
		msg("%s: cannot write: %s", ma->out, strerror(errno ? errno : EIO));
		outfile_abort(&of);
		return -1;
	}
	if (outfile_commit(&of, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	return 0;
}

static int write_metrics(struct merge_args *ma, const struct scrub_merged *mr, int ret)
{
	struct scrub_metrics *m = &ma->m;
	struct tm tm;
	char err[ERR_MAX];

	if (!ma->metrics)
		return ret;
	memset(&tm, 0, sizeof(tm));
	m->array_uuid = mr ? mr->id.array_uuid : "";
	m->array_name = "";
	m->mode = mr && mr->mode == SCRUB_REPAIR ? "repair" : "check";
	m->result = mr ? mr->result : "error";
	m->exit_status = ret;
	if (mr && strptime(mr->finished, "%Y-%m-%dT%H:%M:%SZ", &tm))
		m->finished = (double)timegm(&tm);
	else
		m->finished = (double)time(NULL);
	if (mr)
		scrub_metrics_counts(m, &mr->p);
	if (scrub_metrics_write(ma->metrics, m, err, sizeof(err))) {
		msg("%s", err);
		return EXIT_ERR;
	}
	return ret;
}

int cmd_scrub_merge(int argc, char **argv)
{
	struct merge_args ma;
	struct scrub_merged mr;
	char err[ERR_MAX];
	int ret = EXIT_ERR, r;

	memset(&ma, 0, sizeof(ma));
	r = parse_args(argc, argv, &ma);
	if (r)
		return r > 0 ? EXIT_OK : EXIT_ERR;
	if (scrub_merge((const char *const *)argv + optind, argc - optind, &mr, err, sizeof(err))) {
		msg("%s", err);
		return write_metrics(&ma, NULL, EXIT_ERR);
	}
	if (!write_report(&ma, &mr)) {
		const struct scrub_progress *p = &mr.p;

		msg("merged %d reports: stripes %" PRIu64 "-%" PRIu64 " of %" PRIu64 ": %s, %" PRIu64 " mismatch%s (md "
		    "mismatch_cnt %" PRIu64 ")", argc - optind, p->stripe_begin, p->stripe_end, mr.id.stripes, mr.result,
		    p->mismatches, p->mismatches == 1 ? "" : "es", p->mismatch_units * 8);
		ret = p->mismatches ? EXIT_FOUND : (p->stripes_unchecked || p->read_errors) ? EXIT_ERR : EXIT_OK;
	}
	ret = write_metrics(&ma, &mr, ret);
	scrub_merged_free(&mr);
	return ret;
}
