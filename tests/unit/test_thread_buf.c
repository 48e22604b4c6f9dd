/* test_thread_buf.c - unit tests for src/core/thread_buf.c (libcheck):
 *  - a buffer is per thread: two threads get different memory, one thread
 *    the same memory again while it is large enough;
 *  - the alignment asked for is given, and a huge buffer is aligned to
 *    2 MiB, rounded up to 2 MiB, and costs no more address space than
 *    that (an aligned malloc kept twice as much mapped, which counts under
 *    ulimit -v);
 *  - the memory is released when the thread ends (the address space
 *    returns to what it was).
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thread_buf.h"

#define MIB (1u << 20)

static struct thread_buf plain = THREAD_BUF_INIT(64, false);
static struct thread_buf huge = THREAD_BUF_INIT(4096, true);

/* The process's address space in bytes (VmSize of /proc/self/status). */
static uint64_t vm_size(void)
{
	char line[256];
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %lu kB", (unsigned long *)&kb) == 1)
			break;
	fclose(f);
	ck_assert_uint_gt(kb, 0);
	return kb * 1024;
}

struct probe {
	struct thread_buf *tb;
	size_t size;
	void *got;
	uint64_t vm_before, vm_after;
};

/* A thread's first malloc makes an arena (64 MiB of address space) and
 * its stack stays cached after it ends: a thread that did both goes first,
 * so that the next one reuses them and only the buffer is measured. */
static void *warm_main(void *p)
{
	free(malloc(16));
	return p;
}

static void warm_up(void)
{
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, warm_main, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}

static void *probe_main(void *p)
{
	struct probe *pr = p;

	pr->vm_before = vm_size();
	pr->got = thread_buf_get(pr->tb, pr->size);
	if (pr->got)
		memset(pr->got, 0xa5, pr->size);
	pr->vm_after = vm_size();
	return NULL;
}

START_TEST(per_thread)
{
	struct probe pr = { .tb = &plain, .size = 1000 };
	pthread_t t;
	uint8_t *mine = thread_buf_get(&plain, 1000);

	ck_assert_ptr_nonnull(mine);
	ck_assert_uint_eq((uintptr_t)mine % 64, 0);
	ck_assert_ptr_eq(thread_buf_get(&plain, 10), mine);      /* large enough: the same */
	ck_assert_int_eq(pthread_create(&t, NULL, probe_main, &pr), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_ptr_nonnull(pr.got);
	ck_assert_ptr_ne(pr.got, mine);
	memset(mine, 1, 1000);
	ck_assert_ptr_nonnull(thread_buf_get(&plain, 100000));  /* grows */
}
END_TEST

START_TEST(huge_aligned_and_tight)
{
	struct probe pr = { .tb = &huge, .size = MIB + 4096 };
	pthread_t t;
	uint64_t vm_start;

	warm_up();
	vm_start = vm_size();
	ck_assert_int_eq(pthread_create(&t, NULL, probe_main, &pr), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_ptr_nonnull(pr.got);
	ck_assert_uint_eq((uintptr_t)pr.got % (2 * MIB), 0);
	/* 2 MiB mapped for 1 MiB + 4 KiB asked (allow a page for the key) */
	ck_assert_uint_ge(pr.vm_after - pr.vm_before, 2 * MIB);
	ck_assert_uint_le(pr.vm_after - pr.vm_before, 2 * MIB + 64 * 1024);
	/* the thread's end released it (and the thread's stack) */
	ck_assert_uint_le(vm_size(), vm_start + 64 * 1024);
}
END_TEST

START_TEST(huge_grows)
{
	uint8_t *a = thread_buf_get(&huge, 100), *b;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_eq(thread_buf_get(&huge, 2 * MIB), a);     /* rounded up: same */
	b = thread_buf_get(&huge, 2 * MIB + 1);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq((uintptr_t)b % (2 * MIB), 0);
	memset(b, 0x5a, 4 * MIB);                                  /* all of it usable */
}
END_TEST

static Suite *thread_buf_suite(void)
{
	Suite *s = suite_create("thread_buf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, per_thread);
	tcase_add_test(tc, huge_aligned_and_tight);
	tcase_add_test(tc, huge_grows);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(thread_buf_suite());
	int failed;

	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
