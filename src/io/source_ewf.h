/* source_ewf.h - what an EWF (EnCase E01) member image says about itself
 * (source_ewf.c reads it through libewf 20140813): the case data the imager
 * wrote, the stored hashes, the segments and the acquisition errors.
 * source_ewf_info() (source.h) gives it for an EWF source. */
#ifndef RAIDIMG_SOURCE_EWF_H
#define RAIDIMG_SOURCE_EWF_H

#include <stddef.h>
#include <stdint.h>

#include "ranges.h"

struct ewf_kv {
	char *key;                  /* libewf identifier: "case_number", ... owned */
	char *value;                /* UTF-8, owned */
};

struct ewf_segment {
	char *path;                 /* absolute, owned */
	uint64_t size;              /* bytes (st_size) */
};

/* Owned by the source. */
struct ewf_info {
	uint64_t media_size;        /* bytes */
	uint32_t bytes_per_sector;
	uint32_t sectors_per_chunk;
	uint32_t chunk_size;        /* bytes */
	uint8_t format;             /* LIBEWF_FORMAT_* */
	int compressed;             /* compression level != none */
	unsigned nhandles;          /* libewf handles kept for concurrent reads */
	unsigned nsegments;
	struct ewf_segment *segments;
	unsigned nheaders;
	struct ewf_kv *headers;     /* every header value present */
	/* Shortcuts into headers ("" when absent). */
	const char *case_number, *evidence_number, *examiner_name, *description,
		   *notes, *acquiry_date, *system_date, *acquiry_software_version;
	char md5[33];               /* stored hash of the media, lower-case hex, "" if none */
	char sha1[41];
	struct range_list acq_errors;   /* media bytes the imager could not read */
};

/* The extension of segment number n (1-based) in the series whose first
 * segment has extension first_ext ("E01", "e01", "s01", "L01"): "E02",
 * ..., "E99", "EAA", ..., "ZZZ" as libewf names them.  0 or -ERANGE. */
int ewf_segment_ext(const char *first_ext, unsigned n, char out[4]);

#endif
