/* outfile.h - the one way raidimg creates the files it writes (besides
 * the member images of create/repair), and the guard that keeps every one of
 * them off the evidence.
 *
 * Evidence: every file a run reads as evidence (member images and their
 * pieces, the input of compress, the --from file of create, a record being
 * replayed) is registered with evidence_protect() when it is opened.  No
 * output may be one of them, whatever path names it (symlinks, hard links,
 * /proc/self/fd/N, dir/../): files are compared by device and inode, device
 * nodes by the device they stand for.
 *
 * Creating (outfile_open): a regular file is written under a temporary that
 * no other process can have — an unnamed O_TMPFILE in the target's directory,
 * or where the file system has none a new "NAME.partial-XXXXXX" made with
 * O_EXCL — created mode 0644 whatever the umask allows beyond it.
 * outfile_commit() syncs the data, gives the file its name (without
 * `replace`, linkat: an existing file is never replaced, atomically; with it,
 * rename) and syncs the directory.  outfile_abort() (or a failed commit)
 * removes the temporary, and never a file it did not create.  So a crash,
 * ENOSPC or a concurrent run never leaves a half-written file under the final
 * name, and two runs writing the same output cannot mix their bytes.
 * An existing device or FIFO (/dev/null, a pipe) is written in place;
 * `append` opens in place too (logs).
 *
 * Thread safety: the evidence registry may be used from any thread; one
 * outfile belongs to one thread at a time.
 */
#ifndef RAIDIMG_OUTFILE_H
#define RAIDIMG_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Register the file open on fd as evidence, described by what (e.g. "the
 * member image /x/m3.img"; copied).  0 or -errno (fstat failed, no memory). */
int evidence_protect(int fd, const char *what);
/* Is the file open on fd (or named by path, following symlinks; a path
 * that does not exist is not evidence) one of the registered ones?  0 if
 * not; -EPERM with "PATH: is WHAT; refusing to write over evidence" in err
 * if it is. */
int evidence_check_fd(int fd, const char *path, char *err, size_t errlen);
int evidence_check_path(const char *path, char *err, size_t errlen);
/* Forget every registration (tests). */
void evidence_reset(void);

struct outfile_opts {
	bool replace;            /* an existing regular file may be replaced */
	bool append;             /* append to the file (created if absent), in place */
	bool no_tmpfile;         /* named temporary even where O_TMPFILE works (tests) */
	const char *exists_hint; /* said after "PATH: exists" without replace, e.g.
				  * "give --overwrite to replace it"; NULL: a default */
};

struct outfile {
	int fd;                  /* write here; owned */
	char *path;              /* the final name, owned */
	char *tmpname;           /* the named temporary, owned; NULL if none */
	bool in_place;           /* writing the final file itself (device, FIFO, append) */
	bool regular;            /* the file written is a regular file */
	struct outfile_opts o;
	dev_t dev;               /* of the file written, to never unlink another */
	ino_t ino;
};

/* Open path for writing as described above.  0, or -errno with a message
 * naming path in err (refused as evidence: -EPERM; exists without replace:
 * -EEXIST; a directory: -EISDIR).  of needs no initialisation; after an
 * error it holds nothing. */
int outfile_open(struct outfile *of, const char *path, const struct outfile_opts *o, char *err, size_t errlen);
/* A stdio stream over a duplicate of of->fd (for text writers); fclose it
 * (checking the result) before outfile_commit.  NULL on error (errno). */
FILE *outfile_stdio(struct outfile *of);
/* Make the file complete under its name.  0 or -errno with a message in
 * err; after either, of holds nothing (on error the temporary is gone). */
int outfile_commit(struct outfile *of, char *err, size_t errlen);
/* Give up: remove the temporary (a file written in place is left as it is).
 * Fine on an outfile that holds nothing. */
void outfile_abort(struct outfile *of);

/* Read a side file (checkpoint, record, map...) whole: a regular file (a
 * symlink to one is fine) of at most max bytes, read once, NUL-terminated.
 * what names it in messages ("checkpoint"); protect: register it as
 * evidence too (an input no output may overwrite).  0 with *buf (malloc'ed, owned
 * by the caller) and *len; -ENOENT if it does not exist (message too);
 * -EINVAL for another kind of file (device, FIFO, directory), -EFBIG when
 * larger than max, or -errno, each with a message naming path. */
int side_file_read(const char *path, const char *what, size_t max, bool protect, char **buf, size_t *len,
		   char *err, size_t errlen);

#endif
