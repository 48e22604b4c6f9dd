/* fuzz.h - what the fuzz targets share.
 *
 * Every tests/fuzz/fuzz_*.c defines LLVMFuzzerTestOneInput.  Built with
 * clang -fsanitize=fuzzer by scripts/fuzz; built with the normal compiler
 * and tests/fuzz/replay.c (a main() that feeds each file of the corpus to
 * it) by `make check`, so the corpus is a regression test everywhere.
 * A violated property calls fuzz_fail(), which aborts.
 */
#ifndef RAIDIMG_FUZZ_H
#define RAIDIMG_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Print what went wrong and abort (the fuzzer keeps the input). */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* A little-endian reader over the input that yields zeros when it runs
 * out, so every input is a valid (if short) recipe. */
struct fuzz_in {
	const uint8_t *p;
	size_t left;
};
uint8_t fuzz_u8(struct fuzz_in *in);
uint16_t fuzz_u16(struct fuzz_in *in);
uint32_t fuzz_u32(struct fuzz_in *in);
uint64_t fuzz_u64(struct fuzz_in *in);
/* Up to max bytes: *len gets how many there are. */
const uint8_t *fuzz_bytes(struct fuzz_in *in, size_t max, size_t *len);

/* Make an md superblock's checksum right, so the fuzzer gets past it:
 * 1.x (major 1) or 0.90 (major 0, needs 4096 bytes).  buf is writable. */
void fuzz_fix_md_csum(uint8_t *buf, size_t len);

#endif
