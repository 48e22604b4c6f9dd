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

/* Room for a message that names up to two files (paths up to PATH_MAX)
 * and says what is wrong with them: every buffer a message is formatted
 * into is this large, so that long paths never cut the reason off. */
#define ERR_MAX (2 * 4096 + 1024)

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

/* Write s as a JSON string (with quotes) to f: valid JSON whatever the
 * bytes (control characters escaped, bytes that are not UTF-8 written as
 * U+FFFD, the replacement character). */
void json_str(FILE *f, const char *s);
/* json_str of a path that is the value of key (in an object): when the
 * path is not UTF-8, its exact bytes follow as another member,
 * "KEY_hex":"hex of the bytes", so that nothing is lost. */
void json_path(FILE *f, const char *path, const char *key);
/* Bytes of the UTF-8 sequence at p (1-4), 0 when it is not one. */
size_t utf8_seq_len(const unsigned char *p);
bool utf8_valid(const char *s);      /* NULL: true */
/* Lowercase hex of buf (out: 2 * len + 1 bytes), and back (out: the
 * bytes, NUL-terminated; -EINVAL if not hex or too long for outlen). */
void hex_encode(const void *buf, size_t len, char *out);
int hex_decode(const char *hex, char *out, size_t outlen);
/* json_str, or null for NULL and "". */
void json_str_or_null(FILE *f, const char *s);

/* Monotonic time in nanoseconds. */
uint64_t now_ns(void);

#endif
