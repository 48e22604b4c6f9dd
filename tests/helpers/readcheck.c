/* readcheck.c - read a file at given places and compare with a reference.
 *
 * For the mount tests: reads through the FUSE mount must give exactly the
 * bytes of the reference (the array as `raidimg cat` writes it), with the
 * length a normal file gives (short at the end, nothing past it), and an
 * error must be an error, never other bytes.
 *
 *   readcheck [--direct] FILE REF OFF LEN
 *       one read loop (pread until LEN bytes or end of file) at OFF
 *   readcheck [--direct] --random N --procs P [--max-len L] [--seed S] FILE REF
 *       P processes at once, each N reads at random offsets and lengths
 *       (1..L bytes, default 256K), a few of them past the end
 *   readcheck [--direct] --scan BS FILE REF
 *       read the whole file in BS pieces; stop at the first error
 *
 * --direct opens FILE with O_DIRECT (the request reaches the FUSE daemon
 * with exactly this offset and length instead of going through the page
 * cache).  Exit status: 0 identical, 1 different (what and where on
 * stdout), 3 a read of FILE failed ("error at OFFSET: MESSAGE" on stdout;
 * for --scan, after the bytes before it compared equal), 2 usage or
 * reference problems.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static bool direct;

/* Read up to len bytes at off, looping over short reads until len or the
 * end of the file.  Returns bytes read, or -errno (with *err_off). */
static int64_t read_full(int fd, char *buf, size_t len, uint64_t off, uint64_t *err_off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			*err_off = off + got;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (int64_t)got;
}

static int open_file(const char *path, bool dio)
{
	int fd = open(path, O_RDONLY | (dio ? O_DIRECT : 0));

	if (fd < 0) {
		printf("%s: %s\n", path, strerror(errno));
		exit(2);
	}
	return fd;
}

static char *alloc_buf(size_t len)
{
	void *p = NULL;

	/* page-aligned: O_DIRECT on some file systems wants it */
	if (posix_memalign(&p, 4096, len ? len : 1)) {
		printf("out of memory\n");
		exit(2);
	}
	return p;
}

/* Compare one read of FILE with REF.  Returns an exit status. */
static int check_one(int fd, int rfd, char *buf, char *rbuf, uint64_t off, size_t len, bool quiet)
{
	uint64_t eoff = 0;
	int64_t n = read_full(fd, buf, len, off, &eoff), rn;

	if (n < 0) {
		printf("error at %" PRIu64 " (read of %zu at %" PRIu64 "): %s\n", eoff, len, off,
		       strerror((int)-n));
		return 3;
	}
	rn = read_full(rfd, rbuf, len, off, &eoff);
	if (rn < 0) {
		printf("reference: error at %" PRIu64 ": %s\n", eoff, strerror((int)-rn));
		return 2;
	}
	if (n != rn) {
		printf("read of %zu at %" PRIu64 ": got %" PRId64 " bytes, the reference has %" PRId64 "\n",
		       len, off, n, rn);
		return 1;
	}
	for (int64_t i = 0; i < n; i++) {
		if (buf[i] != rbuf[i]) {
			printf("read of %zu at %" PRIu64 ": differs at offset %" PRIu64 "\n", len, off,
			       off + (uint64_t)i);
			return 1;
		}
	}
	if (!quiet)
		printf("ok: %" PRId64 " bytes at %" PRIu64 "\n", n, off);
	return 0;
}

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static int random_reader(const char *file, const char *ref, int n, size_t max_len, uint64_t seed)
{
	int fd = open_file(file, direct), rfd = open_file(ref, false);
	struct stat st;
	char *buf = alloc_buf(max_len), *rbuf = alloc_buf(max_len);
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	if (fstat(rfd, &st))
		return 2;
	for (int i = 0; i < n; i++) {
		uint64_t size = (uint64_t)st.st_size;
		/* one read in 16 starts within max_len of the end or past it */
		uint64_t off = rnd(&s) % 16 == 0 && size > max_len ? size - max_len / 2 + rnd(&s) % max_len
								    : rnd(&s) % size;
		size_t len = 1 + (size_t)(rnd(&s) % max_len);
		int ret = check_one(fd, rfd, buf, rbuf, off, len, true);

		if (ret) {
			free(buf);
			free(rbuf);
			return ret;
		}
	}
	free(buf);
	free(rbuf);
	close(fd);
	close(rfd);
	return 0;
}

static int run_random(const char *file, const char *ref, int n, int procs, size_t max_len, uint64_t seed)
{
	int worst = 0;

	fflush(stdout);
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid < 0) {
			printf("fork: %s\n", strerror(errno));
			return 2;
		}
		if (pid == 0) {
			int ret = random_reader(file, ref, n, max_len, seed + (uint64_t)p);

			fflush(stdout);      /* _exit drops what stdio still holds */
			_exit(ret);
		}
	}
	for (int p = 0; p < procs; p++) {
		int status;
		if (wait(&status) < 0)
			return 2;
		if (!WIFEXITED(status))
			worst = 2;
		else if (WEXITSTATUS(status) > worst)
			worst = WEXITSTATUS(status);
	}
	if (!worst)
		printf("ok: %d processes x %d random reads\n", procs, n);
	return worst;
}

static int run_scan(const char *file, const char *ref, size_t bs)
{
	int fd = open_file(file, direct), rfd = open_file(ref, false);
	char *buf = alloc_buf(bs), *rbuf = alloc_buf(bs);
	uint64_t off = 0;
	int ret = 0;

	for (;;) {
		uint64_t eoff = 0;
		int64_t n = read_full(fd, buf, bs, off, &eoff), rn;

		if (n < 0) {
			printf("error at %" PRIu64 ": %s\n", eoff, strerror((int)-n));
			ret = 3;
			break;
		}
		rn = read_full(rfd, rbuf, bs, off, &eoff);
		if (rn != n || memcmp(buf, rbuf, (size_t)n)) {
			printf("differs in the %zu bytes at %" PRIu64 " (got %" PRId64 ", reference %" PRId64 ")\n",
			       bs, off, n, rn);
			ret = 1;
			break;
		}
		if (n == 0) {
			printf("ok: %" PRIu64 " bytes, no error\n", off);
			break;
		}
		off += (uint64_t)n;
	}
	free(buf);
	free(rbuf);
	close(fd);
	close(rfd);
	return ret;
}

static int usage(void)
{
	fprintf(stderr, "usage: readcheck [--direct] FILE REF OFF LEN\n"
			"       readcheck [--direct] --random N --procs P [--max-len L] [--seed S] FILE REF\n"
			"       readcheck [--direct] --scan BS FILE REF\n");
	return 2;
}

int main(int argc, char **argv)
{
	int nrand = 0, procs = 1, i = 1;
	size_t max_len = 256 * 1024, scan_bs = 0;
	uint64_t seed = 1;

	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--direct"))
			direct = true;
		else if (!strcmp(argv[i], "--random") && i + 1 < argc)
			nrand = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--procs") && i + 1 < argc)
			procs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--max-len") && i + 1 < argc)
			max_len = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--scan") && i + 1 < argc)
			scan_bs = strtoull(argv[++i], NULL, 0);
		else
			return usage();
	}
	if (scan_bs) {
		if (argc - i != 2)
			return usage();
		return run_scan(argv[i], argv[i + 1], scan_bs);
	}
	if (nrand > 0) {
		if (argc - i != 2 || procs < 1 || max_len < 1)
			return usage();
		return run_random(argv[i], argv[i + 1], nrand, procs, max_len, seed);
	}
	if (argc - i != 4)
		return usage();
	{
		uint64_t off = strtoull(argv[i + 2], NULL, 0);
		size_t len = strtoull(argv[i + 3], NULL, 0);
		int fd = open_file(argv[i], direct), rfd = open_file(argv[i + 1], false);
		char *buf = alloc_buf(len), *rbuf = alloc_buf(len);
		int ret = check_one(fd, rfd, buf, rbuf, off, len, false);

		free(buf);
		free(rbuf);
		close(fd);
		close(rfd);
		return ret;
	}
}
