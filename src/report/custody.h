/* custody.h - chain of custody for one command (cat, export, examine):
 * the member and array hashes (hash.h), the record (record.h) and the
 * provenance map (provenance.h) around a run. */
#ifndef RAIDIMG_CUSTODY_H
#define RAIDIMG_CUSTODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "array.h"
#include "hash.h"
#include "pipeline.h"
#include "provenance.h"
#include "record.h"

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
"                       from: straight from a member, rebuilt from parity,\n" \
"                       rebuilt because the member's bytes are untrusted (a\n" \
"                       ddrescue map, EWF acquisition errors, md's bad-block\n" \
"                       log), or unreadable; MAP.svg: a picture of it\n"

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
/* For struct pipeline: the provenance map's observers (slot_obs), if any. */
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
