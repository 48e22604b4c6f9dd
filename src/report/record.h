/* record.h - JSON records of a run (json-c) - tool version, times, every
 * parameter that shaped the assembly (enough to assemble it again), the
 * members with their roles and hashes, the range read, the output and the
 * result - and loading one back for `raidimg replay`.  Format in record.c. */
#ifndef RAIDIMG_RECORD_H
#define RAIDIMG_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array.h"
#include "hash.h"

/* ---- records ---- */

struct custody_record;

/* Start a record of command (argv as given).  0 or -ENOMEM; record_free(). */
int record_new(struct custody_record **out, const char *command, int argc, char **argv);
void record_add_string(struct custody_record *r, const char *key, const char *val);
void record_add_int(struct custody_record *r, const char *key, int64_t val);
void record_add_bool(struct custody_record *r, const char *key, bool val);
/* "assembly" (the inputs to array_assemble, paths made absolute) and
 * "array" (the geometry found, every member with role and state). */
void record_add_array(struct custody_record *r, const struct array *a, const struct assemble_opts *ao,
		      const char *const *paths, int npaths);
/* Adds each image's sha256 to its "members" entry (after record_add_array). */
void record_add_hashes(struct custody_record *r, const struct member_hashes *mh);
void record_add_range(struct custody_record *r, uint64_t offset, uint64_t length, const char *array_hex);
/* path NULL: standard output.  sha256 may be "" or NULL. */
void record_add_output(struct custody_record *r, const char *path, const char *format, const char *sha256);
/* Set the end time and result, write the record to path (created or
 * replaced).  0, or -errno with a message printed. */
int record_finish(struct custody_record *r, const char *path, int exit_status);
void record_free(struct custody_record *r);   /* NULL is fine */

/* ---- replay ---- */

struct replay_member {
	int role;               /* -1: an image left out of the array */
	char *path;             /* the image file, owned */
	int partition;          /* 0: the whole image, else that partition of it */
	char sha256[SHA256_HEX];
};

struct replay_spec {
	char *command;                  /* owned */
	struct assemble_opts ao;        /* ao.g.array is array's, ao.g.serials owned */
	char *array;                    /* the recorded array's uuid, owned, or NULL */
	char **paths;                   /* [npaths], owned */
	int npaths;
	struct replay_member *members;  /* [nmembers], owned */
	int nmembers;
	/* the array as recorded, checked against the one assembled again */
	int level, layout, raid_disks;
	uint32_t chunk_bytes;
	uint64_t array_bytes;
	uint64_t offset, length;        /* the range the command read */
	char array_sha256[SHA256_HEX];  /* "" if the record has none */
	char output_format[24];         /* "raw", "raw-sparse", "zstd-seekable", "" */
	int zstd_level;
	uint32_t zstd_frame_bytes;
};

/* Load a record written by record_finish().  0 or -EINVAL/-ENOENT/-ENOMEM
 * with a message in err naming the file and the problem. */
int replay_load(const char *path, struct replay_spec *rs, char *err, size_t errlen);
void replay_spec_free(struct replay_spec *rs);

#endif
