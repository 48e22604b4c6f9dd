/* sink.h - where export and replay write the array: a raw file (holes for
 * all-zero blocks when it is a regular file), standard output, or a zstd
 * seekable image.  Bytes arrive in order. */
#ifndef RAIDIMG_SINK_H
#define RAIDIMG_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zstd_seekable.h"

enum sink_kind {
	SINK_RAW,       /* every byte written (stdout, devices) */
	SINK_SPARSE,    /* raw; all-zero blocks of a regular file left as holes */
	SINK_ZSTD,      /* zstd seekable format */
};

struct sink_opts {
	const char *path;           /* NULL: standard output (SINK_RAW only) */
	enum sink_kind kind;
	bool overwrite;             /* replace an existing regular file */
	struct zseek_wopts z;       /* SINK_ZSTD */
};

struct sink;

/* Open the output (outfile.h: never evidence; a regular file is written
 * under a temporary and named on sink_finish; an existing PATH is refused
 * unless overwrite).  0 or -1 (message printed).  *out owned by the caller:
 * sink_free(). */
int sink_open(struct sink **out, const struct sink_opts *o);
/* Append len bytes.  0 or -1 (message printed). */
int sink_write(struct sink *s, const uint8_t *buf, size_t len);
/* Complete the output (size, seek table, fsync, rename).  0 or -1. */
int sink_finish(struct sink *s);
/* Kind actually used (SINK_SPARSE falls back to SINK_RAW for non-files). */
enum sink_kind sink_kind_used(const struct sink *s);
const char *sink_format_name(enum sink_kind k);   /* "raw", "raw-sparse", "zstd-seekable" */
/* Close; an unfinished output leaves nothing.  NULL is fine. */
void sink_free(struct sink *s);

#endif
