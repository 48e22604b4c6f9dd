/* array_stream.h - a command streaming through an array (cat, export,
 * replay, examine --hash: the pipeline's runs) leaves the members' page
 * cache as it found it: a page-cache trail (pagecache.h) per member read
 * through a plain file, told of each range before it is read (noting what
 * was cached) and of the front every byte below which has been used (the
 * pages the stream brought in below it go).  An array caught mid-reshape
 * (two geometries) gets no trails: its pages stay.  Thread-safe: ranges
 * are told from many threads, the front from one.
 */
#ifndef RAIDIMG_ARRAY_STREAM_H
#define RAIDIMG_ARRAY_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "array.h"

struct array_stream;

/* Trails for a's members (a is not owned; it must outlive the stream).
 * *out is the caller's (array_stream_close).  0 or -ENOMEM. */
int array_stream_open(struct array *a, struct array_stream **out);

/* Array bytes [off, off + len) are about to be read: note the residency of
 * the member bytes the range needs (whole stripes, or the columns of one
 * chunk) and keep each member asked to read ahead, in 2 MiB windows up to
 * one past them, where its pages are not cached. */
void array_stream_ahead(struct array_stream *as, uint64_t off, uint64_t len);

/* Every array byte below off has been used. */
void array_stream_behind(struct array_stream *as, uint64_t off);

/* Drop what the stream brought in, free it.  NULL is fine. */
void array_stream_close(struct array_stream *as);

#endif
