/* sysio.c - see sysio.h */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysio.h"
#include "util.h"

bool same_file(const char *x, const char *y)
{
	struct stat a, b;

	if (!strcmp(x, y))
		return true;
	return !stat(x, &a) && !stat(y, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

char *abs_path(const char *path)
{
	char cwd[PATH_MAX];
	char *out;
	size_t n;

	if (!path)
		return NULL;
	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	n = strlen(cwd) + strlen(path) + 2;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%s/%s", cwd, path);
	return out;
}

int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;        /* the file ends early */
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int random_bytes(uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

bool fd_is_pipe(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

int cpus_usable(void)
{
	cpu_set_t set;
	long n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

void pipe_grow(int fd, size_t bytes)
{
	int now;

	if (!fd_is_pipe(fd))
		return;
	now = fcntl(fd, F_GETPIPE_SZ);
	if (now >= 0 && (size_t)now < bytes)
		(void)fcntl(fd, F_SETPIPE_SZ, (int)bytes);
}
