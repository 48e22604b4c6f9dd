/* custody.h - chain of custody: hashes, records of a run, replays, and
 * provenance maps.
 *
 *  - sha256 of member image files (as stored, compressed or not) and of the
 *    assembled array (OpenSSL libcrypto);
 *  - a JSON record (json-c) of one command: tool version, times, every
 *    parameter that shaped the assembly (enough to assemble it again), the
 *    members with their roles and hashes, the range read, the output and
 *    the result;
 *  - loading a record for `raidimg replay`;
 *  - a provenance map: for every array range written, whether it came
 *    straight from a member (which), was rebuilt from parity (from which
 *    members), or could not be read.
 */
#ifndef RAIDIMG_CUSTODY_H
#define RAIDIMG_CUSTODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "array.h"
#include "pipeline.h"

#define SHA256_HEX 65           /* 64 hex digits and a NUL */

/* ---- sha256 ---- */

struct sha256;
int sha256_new(struct sha256 **out);          /* 0 or -ENOMEM; sha256_free() */
void sha256_update(struct sha256 *h, const void *buf, size_t len);
void sha256_final(struct sha256 *h, char hex[SHA256_HEX]);   /* once */
void sha256_free(struct sha256 *h);           /* NULL is fine */

/* sha256 of a file's bytes as stored.  *bytes (if not NULL) gets its size.
 * 0 or -errno with a message naming the file in err (if not NULL). */
int custody_hash_file(const char *path, char hex[SHA256_HEX], uint64_t *bytes, char *err, size_t errlen);

/* ---- member hashes ---- */

struct member_hash {
	int role;               /* -1: given but not part of the array */
	char *path;             /* absolute, owned */
	const char *kind;       /* "raw", "zstd", ... (static) or NULL */
	uint64_t bytes;         /* of the file */
	char sha256[SHA256_HEX];
	int ret;                /* 0, or -errno with err set */
	char err[256];
};

struct member_hashes {
	int n;
	struct member_hash *h;  /* [n], owned: custody_hashes_free() */
};

/* Hash every image file of the array (the members it has an image for,
 * and the images it left out), up to nthreads files at a time.  Returns 0,
 * or the first failure's -errno (its err says which file and why); mh is
 * filled either way and must be freed. */
int custody_hash_members(const struct array *a, int nthreads, struct member_hashes *mh);
void custody_hashes_free(struct member_hashes *mh);

/* Text lines, one per image then the array (array_hex may be NULL):
 *   sha256 HEX  role 0  /abs/path/member0.img
 *   sha256 HEX  array  bytes 0-18677759
 * For mount status and friends too. */
void custody_print_hashes(FILE *f, const struct member_hashes *mh, const char *array_hex, uint64_t offset,
			  uint64_t length);

/* ---- records ---- */

struct custody_record;
struct array_args;

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
	char *path;             /* owned */
	char sha256[SHA256_HEX];
};

struct replay_spec {
	char *command;                  /* owned */
	struct assemble_opts ao;
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

/* ---- provenance maps ---- */

struct provenance;

/* Open a map written to path (JSON lines, see custody.c) for reads of a
 * through a pipeline with nslots slots.  0 or -errno (message printed). */
int provenance_open(struct provenance **out, const char *path, const struct array *a, int nslots);
/* A pipeline read hook: array_read, noting where each byte came from into
 * the slot's list.  ctx is the struct provenance. */
int provenance_read(void *ctx, int slot, uint8_t *buf, size_t len, uint64_t off, uint64_t *bad_off);
/* In array order, once the segment in slot was consumed (written): add its
 * ranges to the map; ret/bad_off as the read returned.  0 or -errno. */
int provenance_emit(struct provenance *p, int slot, int ret);
/* Flush the map and give it its name (commit), or drop it (an unfinished
 * command: nothing is left).  0 or -errno (message printed; a map that
 * could not be written whole is removed); NULL is fine. */
int provenance_close(struct provenance *p, bool commit);

/* ---- what a command does for custody (cat, export, examine) ---- */

/* The command line options, for getopt_long tables and --help. */
#define CUSTODY_LONG_OPTIONS \
	{ "hash", no_argument, NULL, 0x1101 }, \
	{ "record", required_argument, NULL, 0x1102 }, \
	{ "provenance", required_argument, NULL, 0x1103 }

#define CUSTODY_OPTIONS_HELP \
"Chain of custody:\n" \
"  --hash               print the sha256 of every image file as opened and of the\n" \
"                       array bytes read (on stdout, or stderr when stdout\n" \
"                       carries the data)\n" \
"  --record FILE        write a JSON record of the run: parameters, members and\n" \
"                       their roles and sha256, times, result (implies --hash);\n" \
"                       `raidimg replay FILE` repeats it\n"

#define CUSTODY_PROVENANCE_HELP \
"  --provenance MAP     write a map (JSON lines) of where every array range came\n" \
"                       from: straight from a member, rebuilt from parity, or\n" \
"                       unreadable\n"

struct custody_opts {
	bool hash;
	const char *record;         /* path or NULL */
	const char *provenance;     /* path or NULL */
};

/* 1 if opt was a custody option (handled), 0 if not. */
int custody_opt(struct custody_opts *co, int opt, const char *arg);

/* One command's custody work.  Zero-initialise, then custody_begin. */
struct custody_run {
	struct custody_opts o;
	struct custody_record *rec;     /* owned */
	struct member_hashes mh;        /* owned */
	struct sha256 *array_h;         /* owned */
	struct provenance *prov;        /* owned */
	uint64_t hashed;                /* array bytes hashed so far */
	char array_hex[SHA256_HEX];
};

/* Start (the record's start time).  0 or -ENOMEM (message printed). */
int custody_begin(struct custody_run *cr, const struct custody_opts *o, const char *command, int argc,
		  char **argv);
/* The array is assembled: hash the member images, open the provenance
 * map (for a pipeline of nslots slots), start hashing the array bytes.
 * 0 or -errno (message printed). */
int custody_array(struct custody_run *cr, const struct array *a, const struct assemble_opts *ao,
		  const char *const *paths, int npaths, int nslots);
/* For struct pipeline: the read hook and its ctx (NULL: plain array_read). */
void custody_pipeline(struct custody_run *cr, struct pipeline *p);
/* A segment was written: hash len bytes of it (all of it, or the part
 * before an unreadable offset) and add it to the map (read result ret). */
int custody_segment(struct custody_run *cr, int slot, const uint8_t *buf, size_t len, int ret);
/* Finalise the array's sha256 (cr->array_hex); custody_end does it too. */
void custody_finish_hash(struct custody_run *cr);
/* The end: print the hashes to f (if --hash), finish the record with the
 * range read (complete: the whole range was read, so its sha256 counts)
 * and the exit status.  Returns exit_status, or EXIT_ERR (2) if the
 * record or map could not be written. */
int custody_end(struct custody_run *cr, FILE *f, uint64_t offset, uint64_t length, bool complete,
		int exit_status);
void custody_free(struct custody_run *cr);

/* Read the whole array only to hash it (examine --hash), nthreads readers.
 * 0 or -EIO (message printed).  Then custody_end(..., complete=true). */
int custody_hash_array(struct custody_run *cr, struct array *a, int nthreads);
/* The hashes as a JSON object (examine --json --hash):
 *   {"members":[{"role":0,"path":"...","sha256":"..."}...],
 *    "array":{"offset":0,"length":N,"sha256":"..."}}
 * Call after custody_finish_hash or custody_end. */
void custody_print_hashes_json(FILE *f, const struct custody_run *cr, uint64_t length);

#endif
