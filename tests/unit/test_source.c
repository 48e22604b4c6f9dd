/* test_source.c - unit tests for the generic parts of src/io/source.c and
 * source_slice.c (libcheck): a slice reads the right bytes of its parent,
 * refuses reads past its end, maps raw_fd's base, writes through only to a
 * writable parent; references keep the parent until the last close. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source.h"

static char path[64];

static void make_image(void)
{
	uint8_t buf[65536];
	int fd;

	snprintf(path, sizeof(path), "/tmp/srctest.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + i / 251);
	ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
}

START_TEST(slice_reads)
{
	struct source *img, *sl;
	uint8_t want[4096], got[4096];
	char err[256];
	uint64_t base = 0;
	struct iovec iov[2] = { { got, 100 }, { got + 100, 200 } };

	make_image();
	ck_assert_int_eq(source_open(path, SOURCE_READ, &img, err, sizeof(err)), 0);
	ck_assert_int_eq(source_slice(img, 8192, 16384, "img partition 2", &sl, err, sizeof(err)), 0);
	ck_assert_str_eq(sl->path, "img partition 2");
	ck_assert_uint_eq(sl->size, 16384);
	ck_assert_int_eq(source_pread(img, want, sizeof(want), 8192 + 1000), 0);
	ck_assert_int_eq(source_pread(sl, got, sizeof(got), 1000), 0);
	ck_assert_mem_eq(want, got, sizeof(got));
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(source_preadv(sl, iov, 2, 1000), 0);
	ck_assert_mem_eq(want, got, 300);
	/* past its end: a truncated image, whatever the parent holds there */
	ck_assert_int_eq(source_pread(sl, got, 2, 16383), -EIO);
	ck_assert_int_eq(source_pread(sl, got, 1, 16384), -EIO);
	ck_assert_int_ge(sl->ops->raw_fd(sl, &base), 0);
	ck_assert_uint_eq(base, 8192);
	/* read-only parent: no writes */
	ck_assert_int_eq(source_pwrite(sl, got, 1, 0), -EROFS);
	/* the parent lives on until the slice lets go */
	source_close(img);
	ck_assert_int_eq(source_pread(sl, got, sizeof(got), 1000), 0);
	ck_assert_mem_eq(want, got, sizeof(got));
	source_close(sl);
	/* out of range */
	ck_assert_int_eq(source_open(path, SOURCE_READ, &img, err, sizeof(err)), 0);
	ck_assert_int_eq(source_slice(img, 60000, 8192, "img partition 9", &sl, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "img partition 9: bytes 60000-68192 are past the end of the image"));
	source_close(img);
	unlink(path);
}
END_TEST

START_TEST(refs)
{
	struct source *img;
	char err[256];
	uint8_t b;

	make_image();
	ck_assert_int_eq(source_open(path, SOURCE_READ, &img, err, sizeof(err)), 0);
	ck_assert_ptr_eq(source_ref(img), img);
	source_close(img);                          /* one reference left */
	ck_assert_int_eq(source_pread(img, &b, 1, 0), 0);
	source_close(img);                          /* gone (ASan would see a use after this) */
	source_close(NULL);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("source");
	TCase *tc = tcase_create("source");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, slice_reads);
	tcase_add_test(tc, refs);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
