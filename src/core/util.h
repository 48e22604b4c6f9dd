/* util.h - small helpers shared by every module: sizes, messages, JSON
 * text, the clock.  No file I/O (that is io/sysio.h); msg() is the program's
 * diagnostic channel (standard error). */
#ifndef RAIDIMG_UTIL_H
#define RAIDIMG_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* "64K", "1M", "1.5G" (binary units), "512s" (sectors), "4096" (bytes).
 * 0 or -EINVAL / -ERANGE. */
int parse_size(const char *s, uint64_t *out);
/* A rate as md's speed limits take it, in bytes per second to *out: a
 * plain number is KiB/s (md's sysctl unit), a size with a suffix is per
 * second ("50M" = 50 MiB/s), "unlimited" or "none" is 0.  0 or -EINVAL. */
int parse_rate(const char *s, uint64_t *out);
/* Decimal integer in [min,max]; 0 or -EINVAL/-ERANGE. */
int parse_int(const char *s, long long min, long long max, long long *out);

/* "6.0 MiB" style; buf >= 32 bytes; returns buf. */
char *fmt_size(uint64_t bytes, char *buf, size_t len);

/* snprintf that never overflows and always terminates (truncates). */
void fmt_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* fmt_err, returning rc: `return fmt_fail(err, errlen, -EINVAL, "...")`. */
int fmt_fail(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Program-wide message to stderr: "raidimg: ..." */
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern const char *prog_name;
extern int verbose;

/* Aligned allocation for I/O and parity buffers (64 bytes); free with free(). */
void *xaligned_alloc(size_t len);

/* Write s as a JSON string (with quotes) to f. */
void json_str(FILE *f, const char *s);
/* json_str, or null for NULL and "". */
void json_str_or_null(FILE *f, const char *s);

/* Monotonic time in nanoseconds. */
uint64_t now_ns(void);

#endif
