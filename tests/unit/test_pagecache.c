/* test_pagecache.c - unit tests for src/io/pagecache.c (libcheck): a trail
 * drops the pages a stream brought into the page cache, behind its cursor
 * and at the close, and keeps those that were cached before; a range is
 * noted once; cuts wait for 2 MiB boundaries; a file that cannot be mapped
 * gives a trail that does nothing.  Every test runs twice: on this kernel,
 * and with cachestat(2) failing ENOSYS (a seccomp filter in the test's
 * child, as on kernels before 6.5: the trail tells residency by mincore
 * alone).  Residency is read back with mincore(2) on a mapping of the
 * test's own; a check that cached pages stayed is tried again when the
 * kernel reclaimed page cache meanwhile (memory pressure from the rest of
 * the suite), never when it did not.  The file lives in the current directory;
 * the program skips (77) when the file system there keeps pages the kernel
 * is asked to drop (tmpfs) or the kernel does not report residency. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pagecache.h"

#define MIB (1ull << 20)
#define FILE_BYTES (64 * MIB)     /* sequential reads that far get the kernel to 2 MiB folios */

static char path[64];
static int fd = -1;

/* Bytes of [off, off + len) in the page cache, by a mapping of our own;
 * UINT64_MAX if that cannot be told. */
static uint64_t resident(uint64_t off, uint64_t len)
{
	long ps = sysconf(_SC_PAGESIZE);
	unsigned char *vec = malloc(FILE_BYTES / (uint64_t)ps);
	void *m = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	uint64_t got = UINT64_MAX;

	if (vec && m != MAP_FAILED && !mincore((uint8_t *)m + off, len, vec)) {
		got = 0;
		for (uint64_t p = 0; p < len / (uint64_t)ps; p++)
			got += (vec[p] & 1) ? (uint64_t)ps : 0;
	}
	if (m != MAP_FAILED)
		munmap(m, FILE_BYTES);
	free(vec);
	return got;
}

/* Pages the kernel has reclaimed so far, system-wide (/proc/vmstat's
 * pgsteal_* counters); 0 if that cannot be read. */
static uint64_t reclaimed(void)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char name[64];
	unsigned long long v;
	uint64_t sum = 0;

	while (f && fscanf(f, "%63s %llu", name, &v) == 2)
		if (!strncmp(name, "pgsteal_", 8))
			sum += v;
	if (f)
		fclose(f);
	return sum;
}

/* A check that pages stayed cached: body() runs a case and returns the
 * bytes that stayed, *want those that should have; the case is tried again
 * (up to KEPT_TRIES times) when the kernel reclaimed page cache meanwhile -
 * memory pressure from elsewhere (the rest of the suite) takes cached pages
 * that no trail dropped; without reclaim a missing page fails the case. */
#define KEPT_TRIES 5
static void kept_case(uint64_t (*body)(uint64_t *want))
{
	uint64_t want = 0, got = 0;
	int try;

	for (try = 0; try < KEPT_TRIES; try++) {
		uint64_t before = reclaimed();

		got = body(&want);
		if (got == want)
			break;
		ck_assert_msg(reclaimed() != before,
			      "%llu of %llu bytes cached before stayed, and the kernel reclaimed nothing",
			      (unsigned long long)got, (unsigned long long)want);
	}
	ck_assert_msg(try < KEPT_TRIES,
		      "the kernel reclaimed page cache during each of %d tries (%llu of %llu bytes stayed)",
		      KEPT_TRIES, (unsigned long long)got, (unsigned long long)want);
}

static void drop_all(void)
{
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
}

/* Read [off, off + len) in 1 MiB reads; false on a failure. */
static bool read_ok(uint64_t off, uint64_t len)
{
	uint8_t *buf = malloc(MIB);
	bool ok = buf != NULL;

	for (uint64_t o = off; ok && o < off + len; o += MIB)
		ok = pread(fd, buf, MIB, (off_t)o) == (ssize_t)MIB;
	free(buf);
	return ok;
}

static void read_range(uint64_t off, uint64_t len)
{
	ck_assert(read_ok(off, len));
}

/* The file, written and synced (clean pages can be dropped); false when
 * this file system or kernel cannot show a drop. */
static bool make_file(void)
{
	uint8_t *buf = malloc(MIB);

	snprintf(path, sizeof(path), "pagecache-test.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || !buf)
		return false;
	unlink(path);
	for (uint64_t o = 0; o < FILE_BYTES; o += MIB) {
		memset(buf, (int)(o / MIB) + 1, MIB);
		if (pwrite(fd, buf, MIB, (off_t)o) != (ssize_t)MIB)
			return false;
	}
	free(buf);
	if (fdatasync(fd) || !read_ok(0, FILE_BYTES))
		return false;
	if (resident(0, FILE_BYTES) != FILE_BYTES)
		return false;   /* the kernel does not report residency */
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		return false;
	return resident(0, FILE_BYTES) == 0;
}

/* A stream over a file nobody had cached leaves nothing behind, even
 * with the kernel reading ahead of it (sequential advice: twice the
 * device's read_ahead_kb past each read). */
START_TEST(stream_drops_behind)
{
	struct pc_trail *t;

	drop_all();
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL), 0);
	ck_assert_int_eq(pc_trail_open(fd, &t), 0);
	ck_assert(pc_trail_active(t));
	for (uint64_t o = 0; o < FILE_BYTES; o += MIB) {
		uint64_t cut = (o + MIB) / PC_DROP_ALIGN * PC_DROP_ALIGN;

		ck_assert_uint_eq(pc_trail_ahead(t, o, MIB, true), MIB);
		read_range(o, MIB);
		pc_trail_behind(t, o + MIB);
		/* behind the cursor, down to a 2 MiB boundary: nothing */
		ck_assert_uint_eq(resident(0, cut), 0);
	}
	pc_trail_close(t);
	ck_assert_uint_eq(resident(0, FILE_BYTES), 0);
}
END_TEST

/* Pages cached before the stream stay cached; the others go.  Returns
 * the bytes of [4, 8) MiB still cached, *want what should be. */
static uint64_t keeps_cached(uint64_t *want)
{
	struct pc_trail *t;
	uint64_t kept;

	drop_all();
	/* no read-ahead of the kernel's: what is cached is what was read */
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	read_range(4 * MIB, 4 * MIB);   /* someone else's: [4, 8) MiB, */
	read_range(4 * MIB, 4 * MIB);   /* used twice (the kernel's active list) */
	ck_assert_int_eq(pc_trail_open(fd, &t), 0);
	for (uint64_t o = 0; o < FILE_BYTES; o += 4 * MIB) {
		ck_assert_uint_eq(pc_trail_ahead(t, o, 4 * MIB, true), o == 4 * MIB ? 0 : 4 * MIB);
		read_range(o, 4 * MIB);
		pc_trail_behind(t, o + 4 * MIB);
	}
	pc_trail_close(t);
	kept = resident(4 * MIB, 4 * MIB);
	ck_assert_uint_eq(resident(0, 4 * MIB), 0);
	ck_assert_uint_eq(resident(8 * MIB, 8 * MIB), 0);
	*want = 4 * MIB;
	return kept;
}

START_TEST(stream_keeps_cached)
{
	kept_case(keeps_cached);
}
END_TEST

/* A range noted again (or overlapping) is not taken as cached by us: the
 * pages the trail brought in still go.  (The first call notes the whole
 * file: it is shorter than PC_LOOKAHEAD.) */
START_TEST(noted_once)
{
	struct pc_trail *t;

	drop_all();
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL), 0);
	ck_assert_int_eq(pc_trail_open(fd, &t), 0);
	ck_assert_uint_eq(pc_trail_ahead(t, 0, 4 * MIB, true), 4 * MIB);
	read_range(0, 4 * MIB);
	/* cached now, by us: still missing as noted */
	ck_assert_uint_eq(pc_trail_ahead(t, 0, 4 * MIB, true), 4 * MIB);
	ck_assert_uint_eq(pc_trail_ahead(t, 2 * MIB, 4 * MIB, true), 4 * MIB);
	read_range(0, 6 * MIB);
	pc_trail_close(t);
	ck_assert_uint_eq(resident(0, FILE_BYTES), 0);
}
END_TEST

/* A cut inside a 2 MiB piece waits for the piece's end; what was used is
 * never noted again.  Returns the bytes of [2, 6) MiB cached after the
 * first cut, *want what should be. */
static uint64_t cut_waits(uint64_t *want)
{
	struct pc_trail *t;
	uint64_t kept;

	drop_all();
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	ck_assert_int_eq(pc_trail_open(fd, &t), 0);
	ck_assert_uint_eq(pc_trail_ahead(t, 0, 6 * MIB, true), 6 * MIB);
	read_range(0, 6 * MIB);
	pc_trail_behind(t, 3 * MIB);
	ck_assert_uint_eq(resident(0, 2 * MIB), 0);
	kept = resident(2 * MIB, 4 * MIB);
	/* below the cursor: not noted again (it would be taken as cached) */
	ck_assert_uint_eq(pc_trail_ahead(t, 0, 3 * MIB, true), 0);
	pc_trail_behind(t, 6 * MIB);
	ck_assert_uint_eq(resident(0, 6 * MIB), 0);
	pc_trail_close(t);
	*want = 4 * MIB;
	return kept;
}

START_TEST(cut_aligned)
{
	kept_case(cut_waits);
}
END_TEST

/* Pieces noted at every MiB from 1 MiB (a data area 1 MiB into the file):
 * what is dropped goes in runs across the pieces, so the kernel's large
 * folios (up to 2 MiB, aligned; sequential reads get them) that straddle
 * a piece's end at an odd MiB go too - nothing stays behind the cursor or
 * once the stream is over. */
START_TEST(runs_across_pieces)
{
	struct pc_trail *t;

	drop_all();
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL), 0);
	ck_assert_int_eq(pc_trail_open_sized(fd, PC_LOOKAHEAD, MIB, &t), 0);
	for (uint64_t o = MIB; o < FILE_BYTES; o += MIB) {
		ck_assert_uint_eq(pc_trail_ahead(t, o, MIB, false), MIB);
		read_range(o, MIB);
		pc_trail_behind(t, o + MIB);
		ck_assert_uint_eq(resident(MIB, (o + MIB) / PC_DROP_ALIGN * PC_DROP_ALIGN - MIB), 0);
	}
	pc_trail_close(t);
	ck_assert_uint_eq(resident(MIB, FILE_BYTES - MIB), 0);
}
END_TEST

/* No file to map: a trail that does nothing (and does no harm). */
START_TEST(inactive)
{
	struct pc_trail *t;
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(pc_trail_open(p[0], &t), 0);
	ck_assert(!pc_trail_active(t));
	ck_assert_uint_eq(pc_trail_ahead(t, 0, MIB, true), 0);
	pc_trail_behind(t, MIB);
	pc_trail_close(t);
	pc_trail_close(NULL);
	close(p[0]);
	close(p[1]);
}
END_TEST

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

/* From here on (this test's child), cachestat(2) fails ENOSYS as on a
 * kernel without it; checked that it does. */
static void no_cachestat(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_cachestat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct { uint64_t off, len; } range = { 0, MIB };
	uint64_t cs[5];

	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
	errno = 0;
	ck_assert_int_eq(syscall(__NR_cachestat, fd, &range, cs, 0), -1);
	ck_assert_int_eq(errno, ENOSYS);
}

static void add_tests(TCase *tc)
{
	tcase_add_test(tc, stream_drops_behind);
	tcase_add_test(tc, stream_keeps_cached);
	tcase_add_test(tc, noted_once);
	tcase_add_test(tc, cut_aligned);
	tcase_add_test(tc, runs_across_pieces);
	tcase_add_test(tc, inactive);
}

int main(void)
{
	Suite *s = suite_create("pagecache");
	TCase *tc = tcase_create("trail");
	TCase *tn = tcase_create("trail_without_cachestat");
	SRunner *sr;
	int failed;

	if (!make_file()) {
		fprintf(stderr, "test_pagecache: this file system or kernel shows no page-cache drop (tmpfs?): skipped\n");
		return 77;
	}
	add_tests(tc);
	suite_add_tcase(s, tc);
	/* the filter stays with the process: in fork mode a child's, without
	 * fork every test after it (these come last) */
	tcase_add_checked_fixture(tn, no_cachestat, NULL);
	add_tests(tn);
	suite_add_tcase(s, tn);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	close(fd);
	return failed ? 1 : 0;
}
