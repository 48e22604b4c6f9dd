/* sysio.h - file and system helpers: whole-buffer reads and writes,
 * absolute paths, randomness, pipes, the CPUs at hand. */
#ifndef RAIDIMG_SYSIO_H
#define RAIDIMG_SYSIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Absolute version of path (not resolving symlinks); malloc'ed or NULL. */
char *abs_path(const char *path);

/* Do paths x and y name the same file?  The same string, or the same
 * device and inode (when both can be stat'ed). */
bool same_file(const char *x, const char *y);

/* Whole-buffer I/O, retried on EINTR and short transfers.  0 or -errno;
 * a file that ends before len bytes are read (or takes no more) is -EIO. */
int write_all(int fd, const void *buf, size_t len);
int pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int pread_all(int fd, void *buf, size_t len, uint64_t off);

/* If fd is a pipe smaller than bytes, try to make it that large (up to
 * fs.pipe-max-size for ordinary users): output into a pipe then goes to its
 * reader in fewer, larger hand-overs.  Best effort, silent. */
void pipe_grow(int fd, size_t bytes);

/* Is fd a pipe (or FIFO)? */
bool fd_is_pipe(int fd);

/* The CPUs this process may run on (its affinity mask: taskset and cpusets
 * count), else the online ones; at least 1. */
int cpus_usable(void);

/* n bytes from the kernel's random source (getrandom(2)), for UUIDs.  0 or -errno. */
int random_bytes(uint8_t *p, size_t n);

#endif
