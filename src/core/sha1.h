/* sha1.h - SHA-1 (FIPS 180-4), for the identifiers IMSM and DDF metadata
 * derive from it the way mdadm does (not for integrity: hash.h's sha256 is
 * that).  Pure; the context is the caller's. */
#ifndef RAIDIMG_SHA1_H
#define RAIDIMG_SHA1_H

#include <stddef.h>
#include <stdint.h>

struct sha1_ctx {
	uint32_t h[5];
	uint8_t block[64];
	size_t fill;            /* bytes in block */
	uint64_t total;         /* bytes hashed */
};

void sha1_init(struct sha1_ctx *s);
void sha1_update(struct sha1_ctx *s, const void *buf, size_t len);
void sha1_final(struct sha1_ctx *s, uint8_t digest[20]);
/* The digest of one buffer. */
void sha1_digest(const void *buf, size_t len, uint8_t digest[20]);

#endif
