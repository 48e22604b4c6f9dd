/* scrub_report.h - what a scrub says, in text and as JSON records: one per
 * mismatch and per write, and a summary.  The same JSON records go to
 * `raidimg scrub --json` and to the mount's scrub log. */
#ifndef RAIDIMG_SCRUB_REPORT_H
#define RAIDIMG_SCRUB_REPORT_H

#include <stdio.h>

#include "array.h"
#include "scrub.h"

/* One line each, newline-terminated. */
void scrub_report_mismatch_json(FILE *f, const struct scrub_mismatch *m);
void scrub_report_mismatch_text(FILE *f, const struct scrub_mismatch *m);
void scrub_report_write_json(FILE *f, const struct scrub_write *w);
void scrub_report_write_text(FILE *f, const struct scrub_write *w);

/* The verdict of a run (ret: scrub_run's result): "clean", "mismatches",
 * "repaired", "incomplete", "read-errors", "interrupted", "error". */
const char *scrub_result_name(int ret, const struct scrub_progress *p, enum scrub_mode mode);

/* What a summary says about the array and the part of it scrubbed (the
 * merge of reports, scrub_merge.h, has no struct array). */
struct scrub_summary_id {
	char array_uuid[40];         /* as mdadm prints it */
	int level, raid_disks;
	uint32_t chunk_bytes;
	uint64_t stripes;            /* of the whole array */
	int shard, shards;           /* --shard K/N; shards 0: none; shard -1: a merge of N shards */
};
void scrub_summary_id_of(const struct array *a, struct scrub_summary_id *id);

/* The summary: a JSON record ({"type":"summary",...,"finished":...}), or
 * two lines of text.  The _id form takes the array's identity and when the
 * run finished (ISO 8601 UTC; NULL: now). */
void scrub_report_summary_json(FILE *f, const struct array *a, const struct scrub_progress *p, const char *result,
			       enum scrub_mode mode);
void scrub_report_summary_json_id(FILE *f, const struct scrub_summary_id *id, const struct scrub_progress *p,
				  const char *result, enum scrub_mode mode, const char *finished);
void scrub_report_summary_text(FILE *f, const struct array *a, const struct scrub_progress *p, const char *result,
			       enum scrub_mode mode);

#endif
