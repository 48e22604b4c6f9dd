/* xxh64.h - XXH64 (the xxHash specification), used by the zstd seekable
 * format's frame checksums and the overlay header. */
#ifndef RAIDIMG_XXH64_H
#define RAIDIMG_XXH64_H

#include <stddef.h>
#include <stdint.h>

/* XXH64 of buf[0..len) with seed. */
uint64_t xxh64(const void *buf, size_t len, uint64_t seed);

#endif
