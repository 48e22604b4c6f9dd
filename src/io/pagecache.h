/* pagecache.h - streaming reads that leave the page cache as they found it.
 *
 * A trail follows one file a command streams through (scrub, rebuild, cat,
 * export, compress, hashes), offsets in the file, mostly front to back.
 * Before a range is read, pc_trail_ahead makes sure the residency of the
 * file's pages is noted from there to PC_LOOKAHEAD past the range
 * (cachestat(2), or mincore(2) over a mapping of the piece that is never
 * touched and unmapped at once; noted before the reads
 * so that the pages the kernel's own read-ahead brings in are known for
 * ours) and, when some of the range's pages are missing, asks the kernel to
 * read the range in one go (POSIX_FADV_WILLNEED: the disk sees requests of
 * the range's size however small the reads that follow).  Once every byte
 * below an offset has been used, pc_trail_behind drops (POSIX_FADV_DONTNEED)
 * the pages below it that were not cached when noted; pages that were
 * cached before stay (a page someone else brings in between the note and
 * the drop goes too).  pc_trail_close drops what is left of them.  Pages
 * below the first range noted are never noted (nor dropped).  The mount's
 * readers use no trail: they keep the cache.
 *
 * Pages go in whole 2 MiB-aligned pieces (PC_DROP_ALIGN): the kernel drops
 * only folios wholly inside the range it is given, and page-cache folios
 * (at most 2 MiB, naturally aligned) never straddle such a piece; a cut
 * inside one waits for the next call (or the close).
 *
 * What it costs: one cachestat(2) per PC_LOOKAHEAD of file, and a mincore
 * where only part of it is cached (a byte of vector per page, kept until
 * the pages are dropped), a WILLNEED per range with pages missing, a
 * DONTNEED per run of pages to drop.  A trail holds no address space.  A
 * trail over something that is not a file or block device, or whose pages
 * cannot be told, does nothing: the pages stay where the reads put them.
 * Thread-safe (one lock per trail).
 */
#ifndef RAIDIMG_PAGECACHE_H
#define RAIDIMG_PAGECACHE_H

#include <stdbool.h>
#include <stdint.h>

#define PC_DROP_ALIGN ((uint64_t)2 << 20)
#define PC_LOOKAHEAD ((uint64_t)64 << 20)   /* > any read-ahead window (read_ahead_kb x 2) */

struct pc_trail;

/* A trail over fd (not owned: it must stay open until pc_trail_close).
 * *out is owned by the caller (pc_trail_close); it is a trail that does
 * nothing when fd is not a (non-empty) file or block device.  0 or -ENOMEM. */
int pc_trail_open(int fd, struct pc_trail **out);
/* The same, noting lookahead bytes past each range, in pieces of at most
 * `piece` bytes (pc_trail_open: PC_LOOKAHEAD both; other sizes: tests). */
int pc_trail_open_sized(int fd, uint64_t lookahead, uint64_t piece, struct pc_trail **out);

/* About to read file bytes [off, off + len): note residency up to
 * PC_LOOKAHEAD past it and, if willneed and some of its pages were missing
 * when noted, ask the kernel to read the range.  Returns the bytes of the
 * range that were not cached when noted (0: all were, the range was passed
 * by pc_trail_behind, or the trail does nothing). */
uint64_t pc_trail_ahead(struct pc_trail *t, uint64_t off, uint64_t len, bool willneed);

/* Every byte below off has been used: drop the pages noted missing below
 * it (down to a PC_DROP_ALIGN boundary). */
void pc_trail_behind(struct pc_trail *t, uint64_t off);

/* Whether the trail works (fd is a non-empty file or block device). */
bool pc_trail_active(const struct pc_trail *t);

/* Drop every page still noted missing, then free the trail.  NULL is fine. */
void pc_trail_close(struct pc_trail *t);

#endif
