/* member_io.h - reading the members of an array: the primitives shared by
 * the array read path (array_read.c) and the scrub (scrub.c).
 *
 * Every request is counted on the member (reads, read_bytes, read_errors;
 * for the geometry before a reshape on the member of the array it belongs
 * to) and in an io_tally the caller chooses (the array's, the scrub's).
 * Offsets are into the member's data area (data_offset is added here).
 * Thread-safe: many threads may read at once.
 */
#ifndef RAIDIMG_MEMBER_IO_H
#define RAIDIMG_MEMBER_IO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "array.h"
#include "layout.h"

/* Can member `disk` serve its chunk of stripe `stripe` as it is on disk
 * (present, in use, within its readable part)? */
bool member_chunk_readable(const struct array *a, int disk, uint64_t stripe);

/* How many of the stripes [s0, s0 + rows) member disk can serve, counted
 * from s0 (a truncated or rebuilding member serves a prefix); 0 if none. */
uint64_t member_rows(const struct array *a, int disk, uint64_t s0, uint64_t rows);

/* Does [moff, moff + len) of member disk's data area meet one of its
 * image's untrusted ranges (source.h: a ddrescue map's unrescued blocks,
 * EWF acquisition errors, md's bad-block log)?  Such bytes are lost like a
 * failed read: rebuilt from parity, never served as they are. */
bool member_untrusted(const struct array *a, int disk, uint64_t moff, uint64_t len);

/* One counted read of len bytes at data-area offset moff.  0 or -errno;
 * -EIO without reading when the bytes meet an untrusted range (counted as
 * such, not as a read error). */
int member_read(struct array *a, int disk, void *buf, size_t len, uint64_t moff, struct io_tally *t);
/* The same, gathering into iov[0..niov) (len = their total). */
int member_readv(struct array *a, int disk, const struct iovec *iov, int niov, uint64_t len, uint64_t moff,
		 struct io_tally *t);

/* What member_read_rows says of each unit of a row. */
enum { MEMBER_UNIT_OK = 0, MEMBER_UNIT_FAILED = 1, MEMBER_UNIT_UNTRUSTED = 2 };

/* Read `rows` rows of `cols` bytes of member disk: row r from data-area
 * offset moff + r * stride into buf + r * cols.  One request when the rows
 * are contiguous (cols == stride), else, or when that fails, one per row;
 * a row that fails is then read in `block`-byte pieces (block 0: not
 * narrowed) so that only the bytes really lost are lost.  bad (rows x
 * nunits bytes, nunits = ceil(cols / unit), 1 when unit is 0; unit divides
 * block) gets for each unit MEMBER_UNIT_OK, MEMBER_UNIT_FAILED (its read
 * failed) or MEMBER_UNIT_UNTRUSTED (it meets an untrusted range: not
 * read).  Returns the number of rows with a failed read. */
uint64_t member_read_rows(struct array *a, int disk, uint8_t *buf, uint64_t rows, uint32_t cols, uint64_t moff,
			  uint64_t stride, uint32_t block, uint32_t unit, uint8_t *bad, struct io_tally *t);

/* Where a stripe's blocks go for parity.h: the erasure id of member disk
 * (PARITY_P, PARITY_Q, or its data slot: the Q slot for RAID6, the data
 * index for RAID4/5), and the slot table (nslots entries; RAID6: q_slots,
 * with NULL where a ddf layout puts zero blocks) from per-disk blocks. */
int stripe_parity_id(const struct array *a, const struct stripe_map *map, int disk);
int stripe_slots(const struct array *a, const struct stripe_map *map, uint8_t *const *blk_by_disk,
		 uint8_t **slots);

struct pc_trail;
/* A page-cache trail (pagecache.h) over member `disk`'s file, for a command
 * that streams through it: *trail (owned by the caller: pc_trail_close) and
 * *base, the file offset of the member's data area.  *trail is NULL when
 * the member has none: not read through a plain file (zstd, EWF, missing),
 * not a file the kernel caches, or no memory for one. */
void member_trail_open(const struct array *a, int disk, struct pc_trail **trail, uint64_t *base);

#endif
