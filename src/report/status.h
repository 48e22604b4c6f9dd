/* status.h - the live state of an array being served, as JSON.
 *
 * The mount shows this text in its `status` file (generated at each open);
 * other front ends (a scrub report) may reuse it.  Kept apart from the FUSE
 * code so that more objects (a "scrub" object from the scrub engine) can be
 * added here without touching fuse_fs.c.
 */
#ifndef RAIDIMG_STATUS_H
#define RAIDIMG_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "array.h"
#include "overlay.h"

/* A named object of the status ("scrub": {...}): json is its text,
 * malloc'ed by whoever made it. */
struct status_section {
	const char *name;
	char *json;
};

/* What the front end serving the array knows (the "mount" object).
 * Plain values: the caller takes a snapshot of its counters. */
struct status_mount {
	const char *mountpoint;      /* absolute */
	const char *image_name;      /* name of the image file; NULL when the
	                                mountpoint itself is the image */
	pid_t pid;                   /* of the process serving the mount */
	uint64_t started_ns;         /* now_ns() when the mount was made */
	unsigned max_threads;
	unsigned threads_asked;      /* --threads when the memory limit lowered it, else 0 */
	bool read_only;
	bool allow_other;
	int read_ahead_kb;           /* of the mount (kernel read-ahead); -1 unknown */
	/* FUSE read requests for the image, their bytes, and the ones answered
	 * with an error (EIO: redundancy could not cover a failure). */
	uint64_t read_requests, read_bytes, read_errors;
	int fg_active;               /* foreground reads in progress */
	/* Objects added by the front end's workers (the scrub's "scrub"), as
	 * JSON text, printed as they are after "mount". */
	const struct status_section *sections;
	int nsections;
	/* The copy-on-write overlay taking the image's writes (overlay.h):
	 * an "overlay" object after "mount"; NULL: none (read-only image). */
	const struct overlay *overlay;
};

/* One JSON object, followed by a newline:
 *   {"array":{geometry, verdict, "degraded":bool, ...},
 *    "members":[{role, state, path, counters...}, ...],
 *    "io":{bytes_served, stripes_rebuilt, read errors, member requests,
 *          average member request size, foreground readers},
 *    "mount":{...},                      (only when mnt is not NULL)
 *    "NAME":{...},                       (each of mnt->sections)
 *    "overlay":{...}}                    (only when mnt->overlay is set)
 * Counters are read with atomic loads: safe while readers are active.
 * On success *out is malloc'ed (owned by the caller: free()) and *len is
 * its length without the terminating NUL.  Returns 0 or -ENOMEM. */
int status_json(const struct array *a, const struct status_mount *mnt, char **out, size_t *len);

/* The member's source as status and examine --json say it:
 * ,"kind":...,"files":N,"untrusted_bytes":N,"untrusted_ranges":N,
 * "untrusted_reads":N,"untrusted_from":[{"kind","path","ranges","bytes"}] */
void status_member_source(FILE *f, const struct array_member *m);

#endif
