/* test_outfile.c - unit tests for src/outfile.c (libcheck), both ways of
 * making a temporary (O_TMPFILE and the named fallback):
 *  - nothing under the final name until commit; then the bytes, mode 0644
 *    even under umask 000; no temporary left in the directory;
 *  - without replace an existing file is refused at open (-EEXIST, named)
 *    and one that appears meanwhile is kept at commit; with replace it is
 *    replaced whole;
 *  - abort leaves nothing, and never removes a file it did not make (the
 *    temporary's name given to another file meanwhile);
 *  - evidence: by name, symlink, hard link, dir/.., and a device node of a
 *    protected block device; refused with the message; a FIFO output with
 *    no reader is refused instead of waited on; append in place;
 *  - side_file_read: regular files only, size limit, NUL-terminated.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

static char tmpdir[64];

static char *path_of(const char *name)
{
	static char p[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", tmpdir, name);
	return p[i];
}

static int entries(void)
{
	char cmd[160];
	FILE *f;
	int n = 0, c;

	snprintf(cmd, sizeof(cmd), "ls -A '%s'", tmpdir);
	f = popen(cmd, "r");
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	pclose(f);
	return n;
}

static void clean(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/* '%s'/.[!.]*", tmpdir, tmpdir);
	ck_assert_int_eq(system(cmd), 0);
	evidence_reset();
}

static void slurp(const char *p, char *buf, size_t len)
{
	FILE *f = fopen(p, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void put(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(create_commit)
{
	struct outfile_opts oo = { .no_tmpfile = _i };
	struct outfile of;
	char err[512], buf[64];
	struct stat st;
	mode_t old = umask(0);

	clean();
	ck_assert_int_eq(outfile_open(&of, path_of("out"), &oo, err, sizeof(err)), 0);
	umask(old);
	ck_assert_int_eq(write(of.fd, "hello", 5), 5);
	ck_assert_int_ne(access(path_of("out"), F_OK), 0);    /* not there before commit */
	ck_assert_int_eq(entries(), _i ? 1 : 0);                /* the named temporary, or nothing */
	ck_assert_int_eq(outfile_commit(&of, err, sizeof(err)), 0);
	slurp(path_of("out"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "hello");
	ck_assert_int_eq(stat(path_of("out"), &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	ck_assert_int_eq(entries(), 1);
}
END_TEST

START_TEST(exists_and_replace)
{
	struct outfile_opts keep = { .no_tmpfile = _i, .exists_hint = "give --overwrite" };
	struct outfile_opts repl = { .no_tmpfile = _i, .replace = true };
	struct outfile of;
	char err[512], buf[64];

	clean();
	put(path_of("out"), "old");
	ck_assert_int_eq(outfile_open(&of, path_of("out"), &keep, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "out: exists; give --overwrite"));
	ck_assert_int_eq(of.fd, -1);
	/* appears while written: kept, and said */
	unlink(path_of("out"));
	ck_assert_int_eq(outfile_open(&of, path_of("out"), &keep, err, sizeof(err)), 0);
	ck_assert_int_eq(write(of.fd, "mine", 4), 4);
	put(path_of("out"), "theirs");
	ck_assert_int_eq(outfile_commit(&of, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "appeared while it was being written"));
	slurp(path_of("out"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "theirs");
	ck_assert_int_eq(entries(), 1);
	/* replace: whole */
	ck_assert_int_eq(outfile_open(&of, path_of("out"), &repl, err, sizeof(err)), 0);
	ck_assert_int_eq(write(of.fd, "new", 3), 3);
	slurp(path_of("out"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "theirs");                        /* untouched until commit */
	ck_assert_int_eq(outfile_commit(&of, err, sizeof(err)), 0);
	slurp(path_of("out"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "new");
	ck_assert_int_eq(entries(), 1);
}
END_TEST

START_TEST(abort_leaves_nothing)
{
	struct outfile_opts oo = { .no_tmpfile = _i };
	struct outfile of;
	char err[512], buf[64];

	clean();
	ck_assert_int_eq(outfile_open(&of, path_of("out"), &oo, err, sizeof(err)), 0);
	ck_assert_int_eq(write(of.fd, "x", 1), 1);
	outfile_abort(&of);
	ck_assert_int_eq(entries(), 0);
	outfile_abort(&of);                                     /* twice is fine */
	if (_i) {
		/* the temporary's name taken over by another file: not ours to remove */
		char name[256];

		ck_assert_int_eq(outfile_open(&of, path_of("out"), &oo, err, sizeof(err)), 0);
		ck_assert_ptr_nonnull(of.tmpname);
		snprintf(name, sizeof(name), "%s", of.tmpname);
		unlink(name);
		put(name, "someone else's");
		outfile_abort(&of);
		ck_assert_int_eq(entries(), 1);
		slurp(name, buf, sizeof(buf));
		ck_assert_str_eq(buf, "someone else's");
	}
}
END_TEST

START_TEST(evidence_paths)
{
	struct outfile_opts oo = { .no_tmpfile = _i, .replace = true };
	struct outfile of;
	char err[512], buf[64];
	int fd;

	clean();
	put(path_of("member"), "evidence");
	ck_assert_int_eq(mkdir(path_of("d"), 0755), 0);
	ck_assert_int_eq(symlink("member", path_of("link")), 0);
	ck_assert_int_eq(link(path_of("member"), path_of("hard")), 0);
	fd = open(path_of("member"), O_RDONLY);
	ck_assert_int_eq(evidence_protect(fd, "the member image m0"), 0);
	close(fd);
	const char *names[] = { "member", "link", "hard", "d/../member" };
	for (size_t i = 0; i < 4; i++) {
		ck_assert_int_eq(outfile_open(&of, path_of(names[i]), &oo, err, sizeof(err)), -EPERM);
		ck_assert_ptr_nonnull(strstr(err, "is the member image m0; refusing to write over evidence"));
		ck_assert_int_eq(evidence_check_path(path_of(names[i]), err, sizeof(err)), -EPERM);
	}
	oo.append = true;
	ck_assert_int_eq(outfile_open(&of, path_of("hard"), &oo, err, sizeof(err)), -EPERM);
	slurp(path_of("member"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "evidence");
	ck_assert_int_eq(evidence_check_path(path_of("nonexistent"), err, sizeof(err)), 0);
	/* an append log in place */
	ck_assert_int_eq(outfile_open(&of, path_of("log"), &oo, err, sizeof(err)), 0);
	ck_assert_int_eq(write(of.fd, "a", 1), 1);
	ck_assert_int_eq(outfile_commit(&of, err, sizeof(err)), 0);
	ck_assert_int_eq(outfile_open(&of, path_of("log"), &oo, err, sizeof(err)), 0);
	ck_assert_int_eq(write(of.fd, "b", 1), 1);
	ck_assert_int_eq(outfile_commit(&of, err, sizeof(err)), 0);
	slurp(path_of("log"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "ab");
	/* a FIFO nobody reads: refused at once */
	oo.append = false;
	ck_assert_int_eq(mkfifo(path_of("fifo"), 0644), 0);
	ck_assert_int_eq(outfile_open(&of, path_of("fifo"), &oo, err, sizeof(err)), -EPIPE);
	ck_assert_ptr_nonnull(strstr(err, "fifo: cannot open"));
	/* a directory */
	ck_assert_int_eq(outfile_open(&of, path_of("d"), &oo, err, sizeof(err)), -EISDIR);
	/* in a directory that does not exist */
	ck_assert_int_eq(outfile_open(&of, path_of("nodir/x"), &oo, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "nodir/x: cannot create"));
}
END_TEST

START_TEST(side_files)
{
	char err[512], *buf;
	size_t len;

	clean();
	put(path_of("cp"), "line 1\nline 2\n");
	ck_assert_int_eq(side_file_read(path_of("cp"), "checkpoint", 100, false, &buf, &len, err, sizeof(err)), 0);
	ck_assert_uint_eq(len, 14);
	ck_assert_str_eq(buf, "line 1\nline 2\n");
	free(buf);
	ck_assert_int_eq(side_file_read(path_of("cp"), "checkpoint", 10, false, &buf, &len, err, sizeof(err)),
			 -EFBIG);
	ck_assert_ptr_nonnull(strstr(err, "14 bytes, too large for a checkpoint (at most 10)"));
	ck_assert_int_eq(side_file_read("/dev/zero", "checkpoint", 100, false, &buf, &len, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "/dev/zero: not a regular file (a character device)"));
	ck_assert_int_eq(mkfifo(path_of("fifo"), 0644), 0);
	ck_assert_int_eq(side_file_read(path_of("fifo"), "record", 100, false, &buf, &len, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "(a FIFO); a record is a regular file"));
	ck_assert_int_eq(side_file_read(path_of("none"), "record", 100, false, &buf, &len, err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_null(buf);
	/* protect: the record read is evidence from then on */
	ck_assert_int_eq(side_file_read(path_of("cp"), "record", 100, true, &buf, &len, err, sizeof(err)), 0);
	free(buf);
	ck_assert_int_eq(evidence_check_path(path_of("cp"), err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "is the record "));
}
END_TEST

static Suite *outfile_suite(void)
{
	Suite *s = suite_create("outfile");
	TCase *tc = tcase_create("outfile");

	/* _i: 0 = O_TMPFILE where it works, 1 = the named temporary */
	tcase_add_loop_test(tc, create_commit, 0, 2);
	tcase_add_loop_test(tc, exists_and_replace, 0, 2);
	tcase_add_loop_test(tc, abort_leaves_nothing, 0, 2);
	tcase_add_loop_test(tc, evidence_paths, 0, 2);
	tcase_add_test(tc, side_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;
	char cmd[128];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/outfiletest.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	sr = srunner_create(outfile_suite());
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd)) {
		/* best effort */
	}
	return failed ? 1 : 0;
}
