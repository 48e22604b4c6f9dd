/* zstd_seekable.h - the zstd seekable format: seek table, XXH64, writer.
 *
 * The format (facebook/zstd contrib/seekable_format, version 0.1.0): ordinary
 * zstd frames, each decompressible alone, then one skippable frame (magic
 * 0x184D2A5E) holding the seek table: per frame its compressed size, its
 * decompressed size and, when the descriptor's bit 7 is set, the low 32 bits
 * of the XXH64 (seed 0) of its decompressed bytes; the file ends with a
 * 9-byte footer: frame count (u32), descriptor (u8), magic 0x8F92EAB1.
 * All fields are little-endian.  `zstd -d` decompresses such a file whole
 * (it skips the skippable frame).
 */
#ifndef RAIDIMG_ZSTD_SEEKABLE_H
#define RAIDIMG_ZSTD_SEEKABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xxh64.h"

#define ZSEEK_FRAME_MAGIC       0xFD2FB528u   /* an ordinary zstd frame */
#define ZSEEK_SKIPPABLE_MAGIC   0x184D2A5Eu   /* the seek table's skippable frame */
#define ZSEEK_SKIPPABLE_MASK    0xFFFFFFF0u   /* 0x184D2A50..5F are all skippable */
#define ZSEEK_FOOTER_MAGIC      0x8F92EAB1u
#define ZSEEK_FOOTER_BYTES      9
#define ZSEEK_MAX_FRAMES        0x8000000u
#define ZSEEK_MAX_FRAME_BYTES   0x40000000u   /* 1 GiB decompressed per frame */
#define ZSEEK_DESC_CHECKSUM     0x80u
#define ZSEEK_DESC_RESERVED     0x7Cu         /* bits 6-2: must be zero */

/* One frame of the index. */
struct zseek_frame {
	uint64_t coff;          /* offset of the frame in the file */
	uint64_t doff;          /* offset of its bytes in the decompressed image */
	uint32_t csize;         /* compressed bytes */
	uint32_t dsize;         /* decompressed bytes (0: skippable or empty frame) */
	uint32_t checksum;      /* low 32 bits of XXH64, valid if has_checksums */
};

struct zseek_table {
	uint32_t nframes;
	bool has_checksums;
	uint64_t table_off;     /* where the seek table frame starts = sum of csize */
	uint64_t table_bytes;   /* its size, magic and size fields included */
	uint64_t data_bytes;    /* the decompressed image: sum of dsize */
	uint32_t max_dsize;     /* the largest frame */
	struct zseek_frame *frames;   /* [nframes], owned: zseek_table_free() */
};

/* Footer check: the last ZSEEK_FOOTER_BYTES of a file of file_size bytes.
 * Returns 0 and the size of the whole seek table frame in *table_bytes,
 * -ENOMSG when there is no seekable footer (not the seekable format), or
 * -EINVAL with a message in err (no file name: the caller adds it). */
int zseek_footer_parse(const uint8_t footer[ZSEEK_FOOTER_BYTES], uint64_t file_size,
		       uint64_t *table_bytes, char *err, size_t errlen);

/* Parse and validate the seek table frame (the last table_bytes bytes of a
 * file of file_size bytes, footer included): magic and size fields, reserved
 * bits, limits, and compressed sizes summing exactly to where the table
 * starts.  Returns 0, -EINVAL (message in err) or -ENOMEM; on success t is
 * filled and owned by the caller. */
int zseek_table_parse(const uint8_t *table, uint64_t table_bytes, uint64_t file_size,
		      struct zseek_table *t, char *err, size_t errlen);

/* Read the seek table of an open file (fd, file_size bytes) with pread.
 * Same returns as the two functions above (-ENOMSG: no seekable footer;
 * -EIO for a read error). */
int zseek_table_read(int fd, uint64_t file_size, struct zseek_table *t, char *err, size_t errlen);

void zseek_table_free(struct zseek_table *t);

/* Index of the frame holding decompressed offset off (< data_bytes). */
uint32_t zseek_find_frame(const struct zseek_table *t, uint64_t off);

/* For messages about a zstd file without a seek table: walk its frames from
 * the start (headers only, at most max_blocks blocks).  Returns 0 when the
 * frames end exactly at the end of the file (a complete plain zstd file),
 * -EPIPE when the file ends inside frame *nframes, -EBADMSG when the bytes
 * at *where are not a zstd frame, -EAGAIN when max_blocks was reached, or a
 * read error.  *nframes counts the whole frames seen. */
int zseek_walk_frames(int fd, uint64_t file_size, uint64_t max_blocks, uint64_t *nframes,
		      uint64_t *where);


/* Frames a zstd source (source_open_zstd) has decompressed so far; 0 for
 * any other kind of source. */
struct source;
uint64_t source_zstd_frames_decompressed(const struct source *s);

/* ---- writing ---- */

struct zseek_writer;

struct zseek_wopts {
	int level;              /* zstd level (default 3 when 0) */
	uint32_t frame_bytes;   /* decompressed bytes per frame (<= 1 GiB) */
	int nthreads;           /* frames compressed in parallel (1: inline) */
};

/* Start a seekable stream written to fd (at its current position, with
 * write()).  *out is owned by the caller: zseek_writer_free(). */
int zseek_writer_new(int fd, const struct zseek_wopts *o, struct zseek_writer **out);
/* Append len bytes.  Returns 0 or -errno (write failure, -EFBIG past the
 * format's frame limit). */
int zseek_writer_write(struct zseek_writer *w, const void *buf, size_t len);
/* Flush the last frame and write the seek table.  0 or -errno. */
int zseek_writer_finish(struct zseek_writer *w);
/* Compressed bytes written so far. */
uint64_t zseek_writer_out_bytes(const struct zseek_writer *w);
void zseek_writer_free(struct zseek_writer *w);   /* NULL is fine */

#endif
