/* hash.h - sha256 (OpenSSL libcrypto) of files as stored and of the member
 * images of an array. */
#ifndef RAIDIMG_HASH_H
#define RAIDIMG_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "array.h"
#include "util.h"

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

/* The MD5 and SHA1 of an image's media bytes as its source reads them
 * (an EWF image: what the imager hashed), to compare with the hashes the
 * EWF file stores.  0, or -errno with a message naming the image in err
 * (a chunk that cannot be read: the file is damaged). */
int custody_hash_media(struct source *src, char md5[33], char sha1[41], char *err, size_t errlen);

/* ---- member hashes ---- */

struct member_hash {
	int role;               /* -1: given but not part of the array */
	char *path;             /* absolute, owned */
	const char *kind;       /* "raw", "zstd", ... (static) or NULL */
	/* what the file is to its member: "image" (the file named), "segment"
	 * (another EWF segment), "piece" (another split piece), "mapfile" (a
	 * ddrescue mapfile applied to it) */
	const char *what;
	uint64_t bytes;         /* of the file */
	char sha256[SHA256_HEX];
	int ret;                /* 0, or -errno with err set */
	char err[ERR_MAX];
};

struct member_hashes {
	int n;
	struct member_hash *h;  /* [n], owned: custody_hashes_free() */
};

/* Hash every file of the array (each member's image and its other
 * segments or pieces and mapfiles, and the images it left out), up to
 * nthreads files at a time.  Returns 0,
 * or the first failure's -errno (its err says which file and why); mh is
 * filled either way and must be freed. */
int custody_hash_members(const struct array *a, int nthreads, struct member_hashes *mh);
void custody_hashes_free(struct member_hashes *mh);

/* Text lines, one per image then the array (array_hex may be NULL):
 *   sha256 HEX  role 0  /abs/path/member0.img
 *   sha256 HEX  role 0 segment  /abs/path/member0.E02
 *   sha256 HEX  role 1 mapfile  /abs/path/member1.map
 *   sha256 HEX  array  bytes 0-18677759
 * For mount status and friends too. */
void custody_print_hashes(FILE *f, const struct member_hashes *mh, const char *array_hex, uint64_t offset,
			  uint64_t length);

#endif
