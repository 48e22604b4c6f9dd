/* scrub_merge.h - `raidimg scrub-merge`: the JSON reports of scrubs of
 * adjacent parts of one array (`scrub --json --shard K/N`, or --range) made
 * into the report one scrub of the whole would have written: every mismatch
 * and write record, in stripe order, then one summary with the totals.
 *
 * Each report is what `raidimg scrub --json` printed: JSON lines, records
 * ("type":"mismatch" or "write") then a "summary".  A report may hold
 * several runs of the same range, appended after interruptions (each resumed
 * from its --checkpoint): the records of a run at or past where the next one
 * resumed are superseded by the next one's.  Refused, with a message naming
 * the files: anything that is not such a report, a scrub that did not
 * finish its range, reports of different arrays, geometries or modes,
 * ranges that overlap or leave a gap (a missing shard is named), a shard
 * given twice, and a report whose records do not add up to its summary.
 */
#ifndef RAIDIMG_SCRUB_MERGE_H
#define RAIDIMG_SCRUB_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "scrub.h"
#include "scrub_report.h"

#define SCRUB_MERGE_MAX_REPORT (1ull << 30)     /* bytes of one report */

struct scrub_merged {
	struct scrub_summary_id id;  /* shards: the number of reports merged, shard -1 */
	enum scrub_mode mode;
	struct scrub_progress p;     /* the totals; stripe_begin/end the whole range */
	const char *result;          /* scrub_result_name's word (static) */
	char finished[32];           /* the latest report's */
	char **records;              /* record lines (no newline), in stripe order; owned */
	size_t nrecords;
};

/* Merge the reports paths[0..n).  0 with *out filled (scrub_merged_free),
 * or -errno (-EINVAL for a refusal) with the problem in err. */
int scrub_merge(const char *const *paths, int n, struct scrub_merged *out, char *err, size_t errlen);
void scrub_merged_free(struct scrub_merged *m);

#endif
