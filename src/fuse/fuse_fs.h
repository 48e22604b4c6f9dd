/* fuse_fs.h - the assembled array as a file, through FUSE (low-level API).
 *
 * A thin front end over array_read(): the mount shows a directory holding
 * the array image and a few small files (a table: `status` now; control
 * files such as a scrub's `sync_action` can be added with fuse_fs_add_file),
 * or, when the mountpoint is a regular file, the image itself.
 *
 * Life of a mount (cmd_mount.c drives it):
 *   fuse_fs_new()        describe the mount; nothing happens yet
 *   fuse_fs_add_file()   optional: more files next to the image
 *   fuse_fs_set_workers()optional: threads to start once serving
 *   fuse_fs_mount()      create the session and mount (the mountpoint is
 *                        busy from here); signal handlers installed
 *   ...daemonise here (fork, setsid, chdir /, stdio to /dev/null)...
 *   fuse_fs_run()        start the workers, serve until unmounted (by
 *                        fusermount3 -u, SIGINT, SIGTERM or SIGHUP), then
 *                        unmount, stop and join every thread
 *   fuse_fs_free()
 * The image is read-only: opening it for writing fails with EROFS; with
 * an overlay (fuse_fs_opts.overlay) it is writable, writes go to the
 * overlay, flush/fsync/release and the end of fuse_fs_run sync it.
 */
#ifndef RAIDIMG_FUSE_FS_H
#define RAIDIMG_FUSE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "array.h"
#include "fg_gauge.h"
#include "overlay.h"

struct fuse_fs;

struct fuse_fs_opts {
	const char *mountpoint;      /* absolute path; copied */
	const char *image_name;      /* file name of the image in the directory;
	                                copied; ignored when the mountpoint is a file */
	unsigned max_threads;        /* FUSE worker threads, >= 2 */
	bool allow_other;            /* -o allow_other */
	bool debug;                  /* libfuse's request trace on stderr */
	/* Copy-on-write overlay (overlay.h), borrowed: with it the image is
	 * writable and every write goes there; NULL: a read-only image. */
	struct overlay *overlay;
};

/* A file of the mount, next to the image.  Every callback gets the
 * file's priv.  Handles (fh) are the file's own business. */
struct fuse_fs_file_ops {
	/* Size reported by stat (may change between calls). */
	uint64_t (*size)(void *priv);
	/* Open with open(2) flags; set *fh.  The file is served with
	 * direct_io (its size may vary), so reads reach read() as asked.
	 * Returns 0 or -errno. */
	int (*open)(void *priv, int flags, uint64_t *fh);
	/* Copy up to size bytes at off into buf; returns bytes (0 at the
	 * end) or -errno. */
	ssize_t (*read)(void *priv, uint64_t fh, char *buf, size_t size, off_t off);
	/* Take size bytes written at off; returns bytes taken or -errno.
	 * NULL for a read-only file (then opening it for writing is EACCES
	 * through its mode, EROFS for root). */
	ssize_t (*write)(void *priv, uint64_t fh, const char *buf, size_t size, off_t off);
	void (*release)(void *priv, uint64_t fh);
};

/* Threads that work on the array while it is mounted (a scrub).  start()
 * is called in the serving process after daemonising, before requests
 * are served; stop() must make them finish and join them: it is called
 * exactly once, from FUSE's destroy (or after the loop when destroy did
 * not run).  Threads started by start() must block all signals (use
 * fuse_fs_block_signals() first thing) so SIGINT/SIGTERM reach the loop. */
struct fuse_fs_workers {
	int (*start)(void *arg);     /* 0 or -errno (the mount is then undone) */
	void (*stop)(void *arg);
	void *arg;
};

/* On success *out is owned by the caller (fuse_fs_free).  The array is
 * borrowed: it must outlive the fuse_fs.  Returns 0 or -errno with a
 * message in err. */
int fuse_fs_new(struct array *a, const struct fuse_fs_opts *o, struct fuse_fs **out,
		char *err, size_t errlen);
void fuse_fs_free(struct fuse_fs *fs);   /* NULL is fine */

/* True when the mountpoint is a regular file: the mount is the image alone. */
bool fuse_fs_is_file_mount(const struct fuse_fs *fs);

/* Add a file next to the image (directory mounts only) before mounting.
 * name is copied; perm e.g. 0444, or 0644 with a write handler.
 * Returns 0, -EEXIST, -EINVAL (bad name, or a file mount), -ENOSPC (more
 * than 16 files), -EBUSY (already mounted), -ENOMEM. */
int fuse_fs_add_file(struct fuse_fs *fs, const char *name, mode_t perm,
		     const struct fuse_fs_file_ops *ops, void *priv);

/* A file whose whole content is generated at each open (like `status`):
 * gen() returns 0 with *out malloc'ed (freed by fuse_fs) or -errno. */
typedef int (*fuse_fs_gen_fn)(void *priv, char **out, size_t *len);
/* read() of a file whose whole content is text[0..len): what read(2) at off
 * returns (0 past the end).  For the read ops of generated files. */
ssize_t fuse_fs_read_text(const char *text, size_t len, char *buf, size_t size, off_t off);
int fuse_fs_add_generated(struct fuse_fs *fs, const char *name, fuse_fs_gen_fn gen, void *priv);

void fuse_fs_set_workers(struct fuse_fs *fs, const struct fuse_fs_workers *w);

/* Create the FUSE session, install the signal handlers and mount.  As an
 * ordinary user libfuse runs fusermount3, whose complaints go to stderr.
 * Returns 0 or -errno with a message in err. */
int fuse_fs_mount(struct fuse_fs *fs, char *err, size_t errlen);

/* Called once from a helper thread when the mount answers requests (a
 * stat() through it succeeded) or could not be checked: err 0, or -errno
 * with a message. */
typedef void (*fuse_fs_ready_fn)(void *arg, int err, const char *msg);

/* Serve until unmounted or signalled, then unmount and join every thread
 * (FUSE workers, the helper, the workers of fuse_fs_set_workers).  After
 * the mount answers, the mount's read-ahead is raised to 1 MiB when
 * permitted (root) and ready() is called.  Returns 0 or -errno. */
int fuse_fs_run(struct fuse_fs *fs, fuse_fs_ready_fn ready, void *arg);

/* The mount's status JSON (status_json with the mount's counters). */
int fuse_fs_status(struct fuse_fs *fs, char **out, size_t *len);

/* An object `name` in the status JSON (the scrub worker adds "scrub"):
 * gen() renders its value (a JSON object) at each generation of status; a
 * failure leaves it out.  0, or -ENOSPC past FUSE_FS_MAX_SECTIONS. */
#define FUSE_FS_MAX_SECTIONS 4
int fuse_fs_add_status_section(struct fuse_fs *fs, const char *name, fuse_fs_gen_fn gen, void *priv);

/* The gauge of the image's readers (fg_gauge.h), for whatever should yield
 * to them (the scrub).  Owned by fs. */
struct fg_gauge *fuse_fs_fg_gauge(struct fuse_fs *fs);

/* Drop bytes [off, off+len) of the image from the kernel's page cache
 * (fuse_lowlevel_notify_inval_inode): after the array's bytes changed
 * under the mount (a scrub repair rewrote data).  Call it from a worker
 * thread, never from a FUSE request handler.  0 (also when the kernel
 * holds nothing of the image), or -errno (-ENOTCONN when not mounted). */
int fuse_fs_invalidate_image(struct fuse_fs *fs, uint64_t off, uint64_t len);

/* Block every signal in the calling thread (for worker threads). */
void fuse_fs_block_signals(void);

#endif
