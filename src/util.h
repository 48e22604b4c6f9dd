/* util.h - small helpers shared by every module: sizes, messages, JSON text. */
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
/* Decimal integer in [min,max]; 0 or -EINVAL/-ERANGE. */
int parse_int(const char *s, long long min, long long max, long long *out);

/* "6.0 MiB" style; buf >= 32 bytes; returns buf. */
char *fmt_size(uint64_t bytes, char *buf, size_t len);

/* snprintf that never overflows and always terminates (truncates). */
void fmt_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Program-wide message to stderr: "raidimg: ..." */
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern const char *prog_name;
extern int verbose;

/* Aligned allocation for I/O and parity buffers (64 bytes); free with free(). */
void *xaligned_alloc(size_t len);

/* Write s as a JSON string (with quotes) to f. */
void json_str(FILE *f, const char *s);

/* Absolute version of path (not resolving symlinks); malloc'ed or NULL. */
char *abs_path(const char *path);

/* Monotonic time in nanoseconds. */
uint64_t now_ns(void);

/* Whole-buffer I/O, retried on EINTR and short transfers.  0 or -errno;
 * a file that ends before len bytes are read (or takes no more) is -EIO. */
int write_all(int fd, const void *buf, size_t len);
int pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int pread_all(int fd, void *buf, size_t len, uint64_t off);

/* If fd is a pipe smaller than bytes, try to make it that large (up to
 * fs.pipe-max-size for ordinary users): output into a pipe then goes to its
 * reader in fewer, larger hand-overs.  Best effort, silent. */
void pipe_grow(int fd, size_t bytes);

/* n bytes from the kernel's random source (getrandom(2)), for UUIDs.  0 or -errno. */
int random_bytes(uint8_t *p, size_t n);

#endif
