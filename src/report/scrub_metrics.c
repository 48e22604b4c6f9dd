/* scrub_metrics.c - see scrub_metrics.h */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "outfile.h"
#include "scrub_metrics.h"
#include "util.h"

/* The results a run can end with (scrub_result_name). */
static const char *const results[] = { "clean", "mismatches", "repaired", "incomplete", "read-errors",
				       "interrupted", "error" };
static const char *const ours[] = { "array_uuid", "array_name", "mode", "shard", "result" };

int scrub_metrics_label(struct scrub_metrics *m, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : 0;

	if (!eq || !n || !(isalpha((unsigned char)arg[0]) || arg[0] == '_') ||
	    strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n ||
	    !strncmp(arg, "__", 2))
		return fmt_fail(err, errlen, -1, "--metrics-label %s: give NAME=VALUE with a Prometheus label name "
				"(letters, digits and _, not starting with a digit or __)", arg);
	for (size_t i = 0; i < ARRAY_LEN(ours); i++)
		if (strlen(ours[i]) == n && !strncmp(arg, ours[i], n))
			return fmt_fail(err, errlen, -1, "--metrics-label %s: %s is a label of raidimg's own", arg,
					ours[i]);
	if (m->nlabels == SCRUB_METRICS_MAX_LABELS)
		return fmt_fail(err, errlen, -1, "--metrics-label: at most %d", SCRUB_METRICS_MAX_LABELS);
	m->labels[m->nlabels++] = arg;
	return 0;
}

void scrub_metrics_counts(struct scrub_metrics *m, const struct scrub_progress *p)
{
	m->seconds = p->seconds;
	m->read_bytes = p->member_request_bytes;
	m->stripes = p->next_stripe > p->stripe_begin ? p->next_stripe - p->stripe_begin : 0;
	m->mismatches = p->mismatches;
	m->mismatch_sectors = p->mismatch_units * 8;
	m->read_errors = p->read_errors;
	m->stripes_unchecked = p->stripes_unchecked;
	m->writes = p->writes;
}

/* A label value, escaped as the text format wants (\\, \", \n). */
static void put_value(FILE *f, const char *v)
{
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void put_labels(FILE *f, const struct scrub_metrics *m, const char *result)
{
	fputs("{array_uuid=\"", f);
	put_value(f, m->array_uuid);
	fputs("\",array_name=\"", f);
	put_value(f, m->array_name);
	fputs("\",mode=\"", f);
	put_value(f, m->mode);
	fputc('"', f);
	if (m->shard) {
		fputs(",shard=\"", f);
		put_value(f, m->shard);
		fputc('"', f);
	}
	for (int i = 0; i < m->nlabels; i++) {
		const char *eq = strchr(m->labels[i], '=');

		fprintf(f, ",%.*s=\"", (int)(eq - m->labels[i]), m->labels[i]);
		put_value(f, eq + 1);
		fputc('"', f);
	}
	if (result) {
		fputs(",result=\"", f);
		put_value(f, result);
		fputc('"', f);
	}
	fputc('}', f);
}

static void gauge(FILE *f, const struct scrub_metrics *m, const char *name, const char *help, double v)
{
	fprintf(f, "# HELP raidimg_scrub_%s %s\n# TYPE raidimg_scrub_%s gauge\nraidimg_scrub_%s", name, help, name,
		name);
	put_labels(f, m, NULL);
	if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(int64_t)v)
		fprintf(f, " %.0f\n", v);
	else
		fprintf(f, " %.6f\n", v);
}

static void put_all(FILE *f, const struct scrub_metrics *m)
{
	gauge(f, m, "last_run_timestamp_seconds", "When the last scrub of the array ended (Unix time).",
	      m->finished);
	gauge(f, m, "duration_seconds", "How long the last scrub ran.", m->seconds);
	gauge(f, m, "read_bytes", "Bytes the last scrub read from the member images.", (double)m->read_bytes);
	gauge(f, m, "stripes", "Stripes the last scrub covered.", (double)m->stripes);
	gauge(f, m, "mismatches", "Parity mismatches the last scrub found.", (double)m->mismatches);
	gauge(f, m, "mismatch_sectors", "md's mismatch_cnt of the last scrub (512-byte sectors).",
	      (double)m->mismatch_sectors);
	gauge(f, m, "read_errors", "Member read errors during the last scrub.", (double)m->read_errors);
	gauge(f, m, "stripes_unchecked", "Stripes the last scrub could not check (too few members readable).",
	      (double)m->stripes_unchecked);
	gauge(f, m, "writes", "Writes made by the last scrub (repair).", (double)m->writes);
	fputs("# HELP raidimg_scrub_result The last scrub's result: 1 for it, 0 for the others.\n"
	      "# TYPE raidimg_scrub_result gauge\n", f);
	for (size_t i = 0; i < ARRAY_LEN(results); i++) {
		fputs("raidimg_scrub_result", f);
		put_labels(f, m, results[i]);
		fprintf(f, " %d\n", m->result && !strcmp(m->result, results[i]));
	}
	gauge(f, m, "exit_status", "Exit status of the last scrub (0 clean, 1 mismatches, 2 error).",
	      m->exit_status);
}

int scrub_metrics_write(const char *path, const struct scrub_metrics *m, char *err, size_t errlen)
{
	struct outfile_opts oo = { .replace = true };
	struct outfile of;
	char e[ERR_MAX];
	FILE *f;
	int ret;

	ret = outfile_open(&of, path, &oo, e, sizeof(e));
	if (ret)
		return fmt_fail(err, errlen, ret, "cannot write the metrics: %s", e);
	f = outfile_stdio(&of);
	if (!f) {
		ret = -errno;
		outfile_abort(&of);
		return fmt_fail(err, errlen, ret, "%s: %s", path, strerror(-ret));
	}
	put_all(f, m);
	if (ferror(f) | fclose(f)) {
		ret = errno ? -errno : -EIO;
		outfile_abort(&of);
		return fmt_fail(err, errlen, ret, "%s: cannot write the metrics: %s", path, strerror(-ret));
	}
	ret = outfile_commit(&of, e, sizeof(e));
	if (ret)
		return fmt_fail(err, errlen, ret, "cannot write the metrics: %s", e);
	return 0;
}
