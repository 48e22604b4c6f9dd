/* mount_scrub.h - the scrub engine as a worker inside a mounted array.
 *
 * Like md's sysfs, a directory mount gets control files next to the image:
 *   sync_action     read: the current action ("idle", "check", "repair");
 *                   write "check" or "repair" to start one (EBUSY while one
 *                   runs), "idle" to stop it (the write returns once the
 *                   scrub has stopped).  "repair" is EPERM unless the mount
 *                   was made with --allow-repair (members opened for
 *                   writing); a refused word leaves the reason in status.
 *   sync_speed_min  the speed limits, per member, in KiB/s as md's
 *   sync_speed_max  (0: none); read and written live.  Writes also take
 *                   "unlimited" and a size per second such as "50M".
 *   mismatch_cnt    md's count (512-byte sectors in mismatched 4 KiB units)
 *                   of the running or last scrub.
 *   sync_completed  "DONE / TOTAL" sectors of each member while a scrub
 *                   runs, "none" otherwise (md's format).
 *   sync_speed      KiB/s per member of the running scrub, "none" when idle.
 *   degraded        the number of members missing or not in sync.
 *   array_state     "readonly" when the members are opened read-only (never
 *                   written); with --allow-repair "active" while a repair
 *                   runs, else "clean".
 *   sync_latency_target  what the scrub yields to the image's readers by
 *                   (fg_gauge.h): a factor of their idle p99 ("1.50x", the
 *                   default), an absolute p99 ("500us"), or "0" for md's
 *                   rule (back off whenever they read); read and written
 *                   live.  The scrub's threads run niced (SCRUB_NICE).
 * and a "scrub" object in status (action, state, position, counts, the
 * last mismatch records, speed, limits, foreground back-offs, member
 * requests, the latency controller's state).  Every mismatch, write and end of run also goes, as JSON
 * lines (the records of `raidimg scrub --json`), to the scrub log if one
 * was given.
 *
 * Threads: one worker thread (started once the mount serves, through
 * fuse_fs_set_workers, with every signal blocked) runs each scrub with
 * scrub_run(); its reader threads inherit the blocked signals.  The control
 * files are served by FUSE threads: they create the scrub (so a refusal is
 * the write's error) and hand it to the worker.  Stopping the mount stops
 * the scrub and joins the worker.
 *
 * Repair through the mount changes the array's bytes only where RAID6 names
 * a data block; those ranges are dropped from the kernel's page cache of the
 * image (fuse_fs_invalidate_image) after the write, so readers of the mount
 * see the repaired bytes.
 */
#ifndef RAIDIMG_MOUNT_SCRUB_H
#define RAIDIMG_MOUNT_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "array.h"
#include "fuse_fs.h"
#include "scrub.h"

struct mount_scrub_opts {
	bool allow_repair;           /* the members were opened SOURCE_WRITE */
	uint64_t speed_min;          /* bytes/s per member; 0 = no floor */
	uint64_t speed_max;          /* bytes/s per member; 0 = unlimited */
	const char *log_path;        /* --scrub-log (JSON lines, appended); NULL: none */
	/* the readers' latency target (fg_gauge.h), when latency_set: a
	 * factor of their idle p99 (x1000) or an absolute p99; both 0: md's
	 * rule.  Unset: the gauge's default (1.5 x idle). */
	bool latency_set;
	uint32_t latency_milli;
	uint64_t latency_ns;
};

struct mount_scrub;

/* Make the scrub worker of fs, a directory mount of a (both borrowed: they
 * must outlive it), and add its files, its status object and its worker
 * to fs (before fuse_fs_mount).  Opens the log (appending, created 0644).
 * Returns 0 or -errno with a message in err.  *out is owned by the caller:
 * mount_scrub_free() after fuse_fs_free(). */
int mount_scrub_attach(struct fuse_fs *fs, struct array *a, const struct mount_scrub_opts *o,
		       struct mount_scrub **out, char *err, size_t errlen);
void mount_scrub_free(struct mount_scrub *ms);   /* NULL is fine */

#endif
