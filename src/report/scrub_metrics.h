/* scrub_metrics.h - the result of a scrub for Prometheus: a file in the
 * text exposition format that node_exporter's textfile collector reads
 * (*.prom in its --collector.textfile.directory), written atomically
 * (outfile.h: a temporary, renamed over the previous file when complete),
 * so the collector never sees half a file.
 *
 * Every metric is a gauge of the last run, labelled with the array
 * (array_uuid, array_name; empty when unknown), the mode (check, repair),
 * the shard ("K/N") when it was one, and the caller's extra labels:
 *   raidimg_scrub_last_run_timestamp_seconds  when it ended (Unix time)
 *   raidimg_scrub_duration_seconds            how long it ran
 *   raidimg_scrub_read_bytes                  bytes read from the members
 *   raidimg_scrub_stripes                     stripes covered
 *   raidimg_scrub_mismatches                  mismatches found
 *   raidimg_scrub_mismatch_sectors            md's mismatch_cnt
 *   raidimg_scrub_read_errors                 member read errors
 *   raidimg_scrub_stripes_unchecked           stripes too few members could check
 *   raidimg_scrub_writes                      writes made by a repair
 *   raidimg_scrub_result{result="..."}        1 for the run's result, 0 for
 *                                             the others
 *   raidimg_scrub_exit_status                 the command's exit status
 */
#ifndef RAIDIMG_SCRUB_METRICS_H
#define RAIDIMG_SCRUB_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "scrub.h"

#define SCRUB_METRICS_MAX_LABELS 8

struct scrub_metrics {
	const char *array_uuid;      /* "" or NULL: unknown */
	const char *array_name;
	const char *mode;            /* "check", "repair" */
	const char *shard;           /* "K/N" or NULL */
	const char *labels[SCRUB_METRICS_MAX_LABELS];   /* "name=value" (checked by scrub_metrics_label) */
	int nlabels;
	const char *result;          /* scrub_result_name's words */
	int exit_status;
	double finished;             /* Unix time */
	double seconds;
	uint64_t read_bytes, stripes, mismatches, mismatch_sectors, read_errors, stripes_unchecked, writes;
};

/* Add a --metrics-label NAME=VALUE (arg is kept): a Prometheus label name
 * ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" and not one of ours), any
 * value, at most SCRUB_METRICS_MAX_LABELS.  0, or -1 with the problem in
 * err. */
int scrub_metrics_label(struct scrub_metrics *m, const char *arg, char *err, size_t errlen);
/* The counts of a run (p) into m. */
void scrub_metrics_counts(struct scrub_metrics *m, const struct scrub_progress *p);
/* Write m to path (outfile.h: atomically, replacing the previous file,
 * never over evidence).  0, or -errno with a message naming path. */
int scrub_metrics_write(const char *path, const struct scrub_metrics *m, char *err, size_t errlen);

#endif
