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

/* The summary: a JSON record ({"type":"summary",...,"ended_at":...}), or
 * two lines of text. */
void scrub_report_summary_json(FILE *f, const struct array *a, const struct scrub_progress *p, const char *result,
			       enum scrub_mode mode);
void scrub_report_summary_text(FILE *f, const struct array *a, const struct scrub_progress *p, const char *result,
			       enum scrub_mode mode);

#endif
