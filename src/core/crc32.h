/* crc32.h - CRC-32 with the IEEE 802.3 polynomial, reflected (0xEDB88320),
 * as GPT, zlib and DDF use it.  Pure, thread-safe (constant table). */
#ifndef RAIDIMG_CRC32_H
#define RAIDIMG_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The register after shifting len bytes of buf through it, without any
 * inversion (mdadm's DDF CRC is crc32_raw(0, ...)). */
uint32_t crc32_raw(uint32_t reg, const void *buf, size_t len);

/* The usual CRC-32 (initial value ~0, result inverted): crc32_update(0,
 * buf, len) is the CRC of buf; pass a previous result to go on over more
 * bytes. */
uint32_t crc32_update(uint32_t crc, const void *buf, size_t len);

#endif
