/* fuse_fs.c - the assembled array as a file, through the FUSE low-level API.
 *
 * Inodes are fixed: in a directory mount 1 is the directory, 2 the image
 * and 3.. the files of the table (status, control files); in a file mount
 * (the mountpoint is a regular file) 1 is the image.  Nothing is ever
 * looked up twice differently, so forget needs no bookkeeping.
 *
 * Reading the image: each request is served by one array_read() into a
 * per-thread buffer and answered with fuse_reply_buf; an error redundancy
 * cannot cover is EIO, never a short reply (the kernel would fill zeros).
 * The image does not change under the mount, so the kernel page cache is
 * kept across opens (keep_cache) and attributes are cached for long.
 * With an overlay (mount --overlay) the image changes only through this
 * mount: FUSE without writeback caching writes through the page cache
 * (cached pages take the new bytes, the write reaches op_write before
 * write(2) returns) and the overlay file is locked by this process, so
 * keep_cache stays right.
 *
 * Speed (docs perf-facts.md): FUSE_USE_VERSION 312 with the fuse_loop_cfg
 * API binds the fast multi-threaded loop (34/35 bind a loop that creates a
 * thread per request); libfuse's default max_write gives max_pages = 256,
 * i.e. 1 MiB requests; the bdi read-ahead is raised to 1 MiB after mounting
 * so page-cache reads arrive as 1 MiB requests too.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fuse_fs.h"
#include "status.h"
#include "thread_buf.h"
#include "util.h"

enum {
	INO_ROOT = FUSE_ROOT_ID,     /* the directory, or the image in a file mount */
	INO_IMAGE = 2,               /* directory mounts */
	INO_FIRST_FILE = 3,          /* files[0] */
	MAX_FILES = 16,
};

/* The image and the directory never change while mounted. */
#define STATIC_TIMEOUT 86400.0
#define READ_AHEAD_KB 1024

struct fs_file {
	char *name;                  /* owned */
	mode_t perm;
	const struct fuse_fs_file_ops *ops;
	void *priv;
	bool priv_owned;             /* free(priv) at the end (generated files) */
};

struct fuse_fs {
	struct array *a;             /* borrowed */
	char *mountpoint;            /* owned */
	char *image_name;            /* owned; NULL in a file mount */
	bool file_mount;
	unsigned max_threads;
	unsigned threads_asked;      /* --threads when the memory limit lowered it, else 0 */
	bool allow_other, debug;
	uid_t uid;
	gid_t gid;
	struct timespec mtime;       /* when the fuse_fs was made */
	uint64_t started_ns;
	int nfiles;
	struct fs_file files[MAX_FILES];
	struct fuse_fs_workers workers;
	atomic_bool workers_running;
	struct fuse_session *se;
	bool mounted, handlers_set;
	_Atomic int read_ahead_kb;   /* of the mount's bdi after mounting; -1 unknown */
	/* FUSE read requests on the image */
	_Atomic uint64_t read_requests, read_bytes, read_errors;
	struct overlay *ov;          /* borrowed; NULL: the image is read-only */
	struct {                     /* objects added to the status JSON */
		const char *name;
		fuse_fs_gen_fn gen;
		void *priv;
	} sections[FUSE_FS_MAX_SECTIONS];
	int nsections;
	struct fg_gauge fg;          /* the image's readers, for the scrub to yield to */
	/* Handles of the other files still open: the kernel sends RELEASE
	 * after close(2) returns, so a daemon told to stop (Ctrl-C,
	 * fusermount3 -u) can end with some never released - fuse_fs_free
	 * releases them. */
	pthread_mutex_t open_lock;
	struct open_handle {
		int file;                /* index into files[] */
		uint64_t fh;
	} *open;                     /* [nopen], owned */
	size_t nopen, capopen;
};

/* ------------------------------------------------------------------ */
/* per-thread read buffer                                               */
/* ------------------------------------------------------------------ */

/* A buffer of at least size bytes owned by the calling thread (freed when
 * the thread ends), in huge pages when the kernel gives them (filling it
 * and replying from it then costs one TLB entry and one page pinned for
 * the copy instead of 512); NULL when out of memory. */
static struct thread_buf read_buf = THREAD_BUF_INIT(4096, true);

static char *read_buf_get(size_t size)
{
	return thread_buf_get(&read_buf, size);
}

/* ------------------------------------------------------------------ */
/* the table of files                                                   */
/* ------------------------------------------------------------------ */

static struct fuse_fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static bool ino_is_image(const struct fuse_fs *fs, fuse_ino_t ino)
{
	return fs->file_mount ? ino == INO_ROOT : ino == INO_IMAGE;
}

static bool ino_is_dir(const struct fuse_fs *fs, fuse_ino_t ino)
{
	return !fs->file_mount && ino == INO_ROOT;
}

/* The table file of inode ino, or NULL. */
static struct fs_file *ino_file(struct fuse_fs *fs, fuse_ino_t ino)
{
	if (fs->file_mount || ino < INO_FIRST_FILE || ino >= INO_FIRST_FILE + (fuse_ino_t)fs->nfiles)
		return NULL;
	return &fs->files[ino - INO_FIRST_FILE];
}

static void fill_common(const struct fuse_fs *fs, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atim = fs->mtime;
	st->st_mtim = fs->mtime;
	st->st_ctim = fs->mtime;
	st->st_nlink = 1;
}

/* Attributes of inode ino; returns 0 or -ENOENT.  *timeout: how long the
 * kernel may cache them. */
static int ino_stat(struct fuse_fs *fs, fuse_ino_t ino, struct stat *st, double *timeout)
{
	struct fs_file *f;

	fill_common(fs, ino, st);
	*timeout = STATIC_TIMEOUT;
	if (ino_is_dir(fs, ino)) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	if (ino_is_image(fs, ino)) {
		st->st_mode = S_IFREG | (fs->ov ? 0644 : 0444);
		st->st_size = (off_t)fs->a->array_bytes;
		st->st_blocks = (blkcnt_t)((fs->a->array_bytes + 511) / 512);
		st->st_blksize = 1 << 20;
		return 0;
	}
	f = ino_file(fs, ino);
	if (!f)
		return -ENOENT;
	st->st_mode = S_IFREG | f->perm;
	st->st_size = f->ops->size ? (off_t)f->ops->size(f->priv) : 0;
	*timeout = 0;                /* its size changes */
	return 0;
}

static int check_name(const char *name)
{
	if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strlen(name) > NAME_MAX)
		return -EINVAL;
	return 0;
}

int fuse_fs_add_file(struct fuse_fs *fs, const char *name, mode_t perm,
		     const struct fuse_fs_file_ops *ops, void *priv)
{
	struct fs_file *f;

	if (fs->se)
		return -EBUSY;           /* the table is fixed once mounted */
	if (fs->file_mount || check_name(name) || !ops || !ops->open || !ops->read)
		return -EINVAL;
	if (fs->image_name && !strcmp(name, fs->image_name))
		return -EEXIST;
	for (int i = 0; i < fs->nfiles; i++)
		if (!strcmp(fs->files[i].name, name))
			return -EEXIST;
	if (fs->nfiles >= MAX_FILES)
		return -ENOSPC;
	f = &fs->files[fs->nfiles];
	f->name = strdup(name);
	if (!f->name)
		return -ENOMEM;
	f->perm = perm & 0777;
	if (!ops->write)
		f->perm &= (mode_t)~0222;
	f->ops = ops;
	f->priv = priv;
	f->priv_owned = false;
	fs->nfiles++;
	return 0;
}

/* ---- files generated at open (status) ---- */

struct gen_file {
	fuse_fs_gen_fn gen;
	void *priv;
};

struct gen_handle {                  /* one open: the text, owned */
	char *text;
	size_t len;
};

static uint64_t gen_size(void *priv)
{
	struct gen_file *g = priv;
	char *text = NULL;
	size_t len = 0;

	if (g->gen(g->priv, &text, &len))
		return 0;
	free(text);
	return len;
}

static int gen_open(void *priv, int flags, uint64_t *fh)
{
	struct gen_file *g = priv;
	struct gen_handle *h;
	int ret;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	ret = g->gen(g->priv, &h->text, &h->len);
	if (ret) {
		free(h);
		return ret;
	}
	*fh = (uint64_t)(uintptr_t)h;
	return 0;
}

ssize_t fuse_fs_read_text(const char *text, size_t len, char *buf, size_t size, off_t off)
{
	if (off < 0)
		return -EINVAL;
	if ((uint64_t)off >= len)
		return 0;
	if (size > len - (size_t)off)
		size = len - (size_t)off;
	memcpy(buf, text + off, size);
	return (ssize_t)size;
}

static ssize_t gen_read(void *priv, uint64_t fh, char *buf, size_t size, off_t off)
{
	struct gen_handle *h = (struct gen_handle *)(uintptr_t)fh;

	(void)priv;
	return fuse_fs_read_text(h->text, h->len, buf, size, off);
}

static void gen_release(void *priv, uint64_t fh)
{
	struct gen_handle *h = (struct gen_handle *)(uintptr_t)fh;

	free(h->text);
	free(h);
}

static const struct fuse_fs_file_ops gen_ops = {
	.size = gen_size,
	.open = gen_open,
	.read = gen_read,
	.release = gen_release,
};

int fuse_fs_add_generated(struct fuse_fs *fs, const char *name, fuse_fs_gen_fn gen, void *priv)
{
	struct gen_file *g;
	int ret;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->gen = gen;
	g->priv = priv;
	ret = fuse_fs_add_file(fs, name, 0444, &gen_ops, g);
	if (ret) {
		free(g);
		return ret;
	}
	fs->files[fs->nfiles - 1].priv_owned = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* status                                                               */
/* ------------------------------------------------------------------ */

int fuse_fs_status(struct fuse_fs *fs, char **out, size_t *len)
{
	struct status_mount m = {
		.mountpoint = fs->mountpoint,
		.image_name = fs->image_name,
		.pid = getpid(),
		.started_ns = fs->started_ns,
		.max_threads = fs->max_threads,
		.threads_asked = fs->threads_asked,
		.read_only = !fs->ov,
		.overlay = fs->ov,
		.allow_other = fs->allow_other,
		.read_ahead_kb = fs->read_ahead_kb,
		.read_requests = atomic_load(&fs->read_requests),
		.read_bytes = atomic_load(&fs->read_bytes),
		.read_errors = atomic_load(&fs->read_errors),
	};
	struct status_section sec[FUSE_FS_MAX_SECTIONS];
	int ret;

	m.fg_active = atomic_load(&fs->fg.active);
	for (int i = 0; i < fs->nsections; i++) {
		size_t l;

		sec[m.nsections].name = fs->sections[i].name;
		if (!fs->sections[i].gen(fs->sections[i].priv, &sec[m.nsections].json, &l))
			m.nsections++;
	}
	m.sections = sec;
	ret = status_json(fs->a, &m, out, len);
	for (int i = 0; i < m.nsections; i++)
		free(sec[i].json);
	return ret;
}

static int status_gen(void *priv, char **out, size_t *len)
{
	return fuse_fs_status(priv, out, len);
}

/* ------------------------------------------------------------------ */
/* FUSE operations                                                      */
/* ------------------------------------------------------------------ */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* Keep libfuse's defaults: max_write stays at its maximum so that
	 * max_pages = 256 (1 MiB requests); no max_read; async reads on. */
	(void)userdata;
	(void)conn;
}

static void workers_stop(struct fuse_fs *fs)
{
	if (atomic_exchange(&fs->workers_running, false) && fs->workers.stop)
		fs->workers.stop(fs->workers.arg);
}

static void op_destroy(void *userdata)
{
	workers_stop(userdata);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_fs *fs = req_fs(req);
	struct fuse_entry_param e;
	fuse_ino_t ino = 0;
	double timeout;

	if (!ino_is_dir(fs, parent)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (!strcmp(name, fs->image_name))
		ino = INO_IMAGE;
	for (int i = 0; !ino && i < fs->nfiles; i++)
		if (!strcmp(name, fs->files[i].name))
			ino = INO_FIRST_FILE + (fuse_ino_t)i;
	if (!ino) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.generation = 1;
	ino_stat(fs, ino, &e.attr, &timeout);
	e.attr_timeout = timeout;
	e.entry_timeout = STATIC_TIMEOUT;
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	double timeout;
	int ret;

	(void)fi;
	ret = ino_stat(req_fs(req), ino, &st, &timeout);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, timeout);
}

/* With an overlay the image's size is still the array's: a truncate to
 * that very size (O_TRUNC is refused) is the only change answered. */
static bool same_size_truncate(struct fuse_fs *fs, fuse_ino_t ino, const struct stat *attr, int to_set)
{
	return fs->ov && ino_is_image(fs, ino) && (to_set & FUSE_SET_ATTR_SIZE) &&
	       !(to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) &&
	       (uint64_t)attr->st_size == fs->a->array_bytes;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct fuse_fs *fs = req_fs(req);
	struct stat st;
	double timeout;

	/* Nothing's size, mode, owner or times can be changed. */
	(void)fi;
	if (same_size_truncate(fs, ino, attr, to_set) && !ino_stat(fs, ino, &st, &timeout)) {
		fuse_reply_attr(req, &st, timeout);
		return;
	}
	fuse_reply_err(req, fs->ov && ino_is_image(fs, ino) ? EPERM : EROFS);
}

/* One directory entry at index i (0 ".", 1 "..", 2 the image, 3.. files). */
static const char *dir_entry(struct fuse_fs *fs, off_t i, fuse_ino_t *ino, mode_t *type)
{
	*type = S_IFREG;
	switch (i) {
	case 0: *ino = INO_ROOT; *type = S_IFDIR; return ".";
	case 1: *ino = INO_ROOT; *type = S_IFDIR; return "..";
	case 2: *ino = INO_IMAGE; return fs->image_name;
	}
	if (i - 3 >= fs->nfiles)
		return NULL;
	*ino = INO_FIRST_FILE + (fuse_ino_t)(i - 3);
	return fs->files[i - 3].name;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct fuse_fs *fs = req_fs(req);
	char *buf;
	size_t used = 0;

	(void)fi;
	if (!ino_is_dir(fs, ino)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (off_t i = off;; i++) {
		struct stat st;
		fuse_ino_t eino;
		mode_t type;
		const char *name = dir_entry(fs, i, &eino, &type);
		size_t need;

		if (!name)
			break;
		memset(&st, 0, sizeof(st));
		st.st_ino = eino;
		st.st_mode = type;
		need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);
		if (used + need > size)
			break;
		fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static bool wants_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* Note handle fh of file index `file` as open.  0 or -ENOMEM. */
static int handle_add(struct fuse_fs *fs, int file, uint64_t fh)
{
	int ret = 0;

	pthread_mutex_lock(&fs->open_lock);
	if (fs->nopen == fs->capopen) {
		size_t ncap = fs->capopen ? fs->capopen * 2 : 16;
		struct open_handle *n = realloc(fs->open, ncap * sizeof(*n));

		if (n) {
			fs->open = n;
			fs->capopen = ncap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret)
		fs->open[fs->nopen++] = (struct open_handle){ file, fh };
	pthread_mutex_unlock(&fs->open_lock);
	return ret;
}

/* Forget handle fh of file index `file` (it is being released). */
static void handle_drop(struct fuse_fs *fs, int file, uint64_t fh)
{
	pthread_mutex_lock(&fs->open_lock);
	for (size_t i = 0; i < fs->nopen; i++) {
		if (fs->open[i].file == file && fs->open[i].fh == fh) {
			fs->open[i] = fs->open[--fs->nopen];
			break;
		}
	}
	pthread_mutex_unlock(&fs->open_lock);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_fs *fs = req_fs(req);
	struct fs_file *f;
	int ret;

	if (ino_is_image(fs, ino)) {
		if (wants_write(fi->flags) && !fs->ov) {
			fuse_reply_err(req, EROFS);
			return;
		}
		fi->keep_cache = 1;      /* changes only through this mount (see the top) */
		fi->noflush = !wants_write(fi->flags);   /* a writer's close syncs the overlay */
		fuse_reply_open(req, fi);
		return;
	}
	if (ino_is_dir(fs, ino)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	f = ino_file(fs, ino);
	if (!f) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (wants_write(fi->flags) && !f->ops->write) {
		fuse_reply_err(req, EROFS);
		return;
	}
	ret = f->ops->open(f->priv, fi->flags, &fi->fh);
	if (!ret && f->ops->release) {
		ret = handle_add(fs, (int)(f - fs->files), fi->fh);
		if (ret)
			f->ops->release(f->priv, fi->fh);
	}
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	fi->direct_io = 1;           /* generated: its size may differ from stat's */
	fi->noflush = 1;
	if (fuse_reply_open(req, fi) == -ENOENT && f->ops->release) {
		handle_drop(fs, (int)(f - fs->files), fi->fh);
		f->ops->release(f->priv, fi->fh);   /* the opener was interrupted */
	}
}

/* The hot path: one array_read into this thread's buffer, one reply. */
static void read_image(fuse_req_t req, struct fuse_fs *fs, size_t size, off_t off)
{
	struct array *a = fs->a;
	uint64_t bad = 0, t0;
	char *buf;
	int ret;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((uint64_t)off >= a->array_bytes) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > a->array_bytes - (uint64_t)off)
		size = (size_t)(a->array_bytes - (uint64_t)off);
	buf = read_buf_get(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	t0 = now_ns();
	fg_gauge_enter(&fs->fg, t0);
	if (fs->ov)
		ret = overlay_read(fs->ov, buf, size, (uint64_t)off, &bad);
	else
		ret = array_read(a, buf, size, (uint64_t)off, &bad);
	fg_gauge_leave(&fs->fg, t0, now_ns(), size);
	atomic_fetch_add(&fs->read_requests, 1);
	if (ret) {
		/* never a short or zero-filled reply: the reader gets the error */
		atomic_fetch_add(&fs->read_errors, 1);
		fuse_reply_err(req, -ret);
		return;
	}
	atomic_fetch_add(&fs->read_bytes, size);
	fuse_reply_buf(req, buf, size);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fuse_fs *fs = req_fs(req);
	struct fs_file *f;
	ssize_t n;
	char *buf;

	if (ino_is_image(fs, ino)) {
		read_image(req, fs, size, off);
		return;
	}
	f = ino_file(fs, ino);
	if (!f) {
		fuse_reply_err(req, ino_is_dir(fs, ino) ? EISDIR : ENOENT);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = f->ops->read(f->priv, fi->fh, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* A write to the image: into the overlay (which reads the array around a
 * granule's first partial write). */
static void write_image(fuse_req_t req, struct fuse_fs *fs, const char *buf, size_t size, off_t off)
{
	uint64_t t0;
	ssize_t n;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	t0 = now_ns();
	fg_gauge_enter(&fs->fg, t0);
	n = overlay_write(fs->ov, buf, size, (uint64_t)off);
	fg_gauge_leave(&fs->fg, t0, now_ns(), size);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fs_file *f = ino_file(req_fs(req), ino);
	ssize_t n;

	if (ino_is_image(req_fs(req), ino) && req_fs(req)->ov) {
		write_image(req, req_fs(req), buf, size, off);
		return;
	}
	if (!f || !f->ops->write) {
		fuse_reply_err(req, EROFS);
		return;
	}
	n = f->ops->write(f->priv, fi->fh, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* flush (close), fsync and the release of a writer: the overlay's writes
 * made durable (overlay_sync is cheap when nothing changed). */
static int sync_image(struct fuse_fs *fs, fuse_ino_t ino)
{
	return ino_is_image(fs, ino) && fs->ov ? overlay_sync(fs->ov) : 0;
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_err(req, -sync_image(req_fs(req), ino));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, -sync_image(req_fs(req), ino));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_fs *fs = req_fs(req);
	struct fs_file *f = ino_file(fs, ino);

	if (wants_write(fi->flags))
		sync_image(fs, ino);   /* writes after the last flush (mmap) */
	if (f && f->ops->release) {
		handle_drop(fs, (int)(f - fs->files), fi->fh);
		f->ops->release(f->priv, fi->fh);
	}
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_fs *fs = req_fs(req);
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = (fsblkcnt_t)((fs->a->array_bytes + 4095) / 4096);
	sv.f_files = (fsfilcnt_t)(fs->file_mount ? 1 : 2 + fs->nfiles);
	sv.f_namemax = NAME_MAX;
	sv.f_flag = fs->ov ? 0 : ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readdir = op_readdir,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.statfs = op_statfs,
};

/* ------------------------------------------------------------------ */
/* lifecycle                                                            */
/* ------------------------------------------------------------------ */

int fuse_fs_new(struct array *a, const struct fuse_fs_opts *o, struct fuse_fs **out,
		char *err, size_t errlen)
{
	struct fuse_fs *fs;
	struct stat st;
	int ret;

	if (stat(o->mountpoint, &st)) {
		ret = -errno;
		fmt_err(err, errlen, "%s: %s", o->mountpoint,
			ret == -ENOENT ? "the mountpoint does not exist (create an empty directory, or a file "
					 "to mount the image onto)" : strerror(-ret));
		return ret;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		fmt_err(err, errlen, "%s: the mountpoint must be a directory or a regular file", o->mountpoint);
		return -ENOTDIR;
	}
	if (!S_ISREG(st.st_mode) && check_name(o->image_name)) {
		fmt_err(err, errlen, "'%s': not usable as a file name", o->image_name ? o->image_name : "");
		return -EINVAL;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		goto nomem;
	fs->a = a;
	pthread_mutex_init(&fs->open_lock, NULL);
	fg_gauge_init(&fs->fg);
	fs->file_mount = S_ISREG(st.st_mode);
	fs->mountpoint = strdup(o->mountpoint);
	if (!fs->mountpoint)
		goto nomem;
	if (!fs->file_mount) {
		fs->image_name = strdup(o->image_name);
		if (!fs->image_name)
			goto nomem;
	}
	fs->max_threads = o->max_threads < 2 ? 2 : o->max_threads;
	fs->allow_other = o->allow_other;
	fs->debug = o->debug;
	fs->ov = o->overlay;
	fs->uid = getuid();
	fs->gid = getgid();
	clock_gettime(CLOCK_REALTIME, &fs->mtime);
	fs->started_ns = now_ns();
	fs->read_ahead_kb = -1;
	if (!fs->file_mount) {
		ret = fuse_fs_add_generated(fs, "status", status_gen, fs);
		if (ret) {
			fuse_fs_free(fs);
			fmt_err(err, errlen, "'%s' cannot be the image's name (it is the status file)",
				o->image_name);
			return ret;
		}
	}
	*out = fs;
	return 0;
nomem:
	fuse_fs_free(fs);
	fmt_err(err, errlen, "out of memory");
	return -ENOMEM;
}

void fuse_fs_free(struct fuse_fs *fs)
{
	if (!fs)
		return;
	if (fs->se) {
		if (fs->mounted)
			fuse_session_unmount(fs->se);
		if (fs->handlers_set)
			fuse_remove_signal_handlers(fs->se);
		fuse_session_destroy(fs->se);
	}
	/* no request comes any more: what the kernel never released goes */
	for (size_t i = 0; i < fs->nopen; i++)
		fs->files[fs->open[i].file].ops->release(fs->files[fs->open[i].file].priv, fs->open[i].fh);
	free(fs->open);
	pthread_mutex_destroy(&fs->open_lock);
	for (int i = 0; i < fs->nfiles; i++) {
		free(fs->files[i].name);
		if (fs->files[i].priv_owned)
			free(fs->files[i].priv);
	}
	free(fs->image_name);
	free(fs->mountpoint);
	free(fs);
}

bool fuse_fs_is_file_mount(const struct fuse_fs *fs)
{
	return fs->file_mount;
}

void fuse_fs_set_workers(struct fuse_fs *fs, const struct fuse_fs_workers *w)
{
	fs->workers = *w;
}

int fuse_fs_add_status_section(struct fuse_fs *fs, const char *name, fuse_fs_gen_fn gen, void *priv)
{
	if (fs->nsections == FUSE_FS_MAX_SECTIONS)
		return -ENOSPC;
	fs->sections[fs->nsections].name = name;
	fs->sections[fs->nsections].gen = gen;
	fs->sections[fs->nsections].priv = priv;
	fs->nsections++;
	return 0;
}

struct fg_gauge *fuse_fs_fg_gauge(struct fuse_fs *fs)
{
	return &fs->fg;
}

int fuse_fs_invalidate_image(struct fuse_fs *fs, uint64_t off, uint64_t len)
{
	int ret;

	if (!fs->se)
		return -ENOTCONN;
	ret = fuse_lowlevel_notify_inval_inode(fs->se, fs->file_mount ? INO_ROOT : INO_IMAGE, (off_t)off,
					       (off_t)len);
	return ret == -ENOENT ? 0 : ret;   /* ENOENT: the kernel holds nothing of it */
}

void fuse_fs_block_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

int fuse_fs_mount(struct fuse_fs *fs, char *err, size_t errlen)
{
	char opts[256];
	char *argv[4];
	struct fuse_args args;
	int argc = 0;

	snprintf(opts, sizeof(opts), "fsname=raidimg,subtype=raidimg,default_permissions%s",
		 fs->allow_other ? ",allow_other" : "");
	argv[argc++] = (char *)"raidimg";
	argv[argc++] = (char *)"-o";
	argv[argc++] = opts;
	if (fs->debug)
		argv[argc++] = (char *)"-d";
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	fs->se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), fs);
	fuse_opt_free_args(&args);
	if (!fs->se) {
		fmt_err(err, errlen, "cannot set up the FUSE session (libfuse's message above)");
		return -EINVAL;
	}
	/* A command started in the background by a non-interactive shell
	 * inherits SIGINT ignored, and libfuse only hooks signals left at
	 * their default: SIGINT and SIGTERM must end the mount cleanly. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(fs->se)) {
		fmt_err(err, errlen, "cannot install signal handlers");
		return -EINVAL;
	}
	fs->handlers_set = true;
	if (fuse_session_mount(fs->se, fs->mountpoint)) {
		fmt_err(err, errlen, "%s: cannot mount (libfuse's or fusermount3's message above; as an "
			"ordinary user mounting goes through fusermount3 from the fuse3 package, installed "
			"setuid root, and needs write access to the mountpoint)", fs->mountpoint);
		return -EPERM;
	}
	fs->mounted = true;
	return 0;
}

/* Raise the read-ahead of the mount's bdi (root only; other failures are
 * ignored too) and remember what it is. */
static void set_read_ahead(struct fuse_fs *fs, dev_t dev)
{
	char path[128];
	FILE *f;
	int kb = -1;

	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(dev), minor(dev));
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%d\n", READ_AHEAD_KB);
		fclose(f);
	}
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &kb) != 1)
			kb = -1;
		fclose(f);
	}
	fs->read_ahead_kb = kb;
}

struct ready_job {
	struct fuse_fs *fs;
	fuse_fs_ready_fn ready;
	void *arg;
	pthread_t loop_thread;
	int ret;
};

/* Helper thread: wait until the mount answers (the kernel sends our
 * GETATTR only after INIT was answered, so changing the read-ahead now
 * is not undone by INIT), then tell the caller.  If the mount does not
 * answer, end the loop. */
static void *ready_main(void *p)
{
	struct ready_job *j = p;
	struct fuse_fs *fs = j->fs;
	struct stat st;
	char msg[ERR_MAX];

	j->ret = 0;
	msg[0] = '\0';
	if (stat(fs->mountpoint, &st)) {
		j->ret = -errno;
		snprintf(msg, sizeof(msg), "%s: the new mount does not answer: %s", fs->mountpoint,
			 strerror(errno));
	} else if (fs->file_mount ? !S_ISREG(st.st_mode) || (uint64_t)st.st_size != fs->a->array_bytes
				  : !S_ISDIR(st.st_mode)) {
		j->ret = -EIO;
		snprintf(msg, sizeof(msg), "%s: the new mount does not show the array", fs->mountpoint);
	} else {
		set_read_ahead(fs, st.st_dev);
	}
	if (j->ready)
		j->ready(j->arg, j->ret, msg);
	if (j->ret)
		pthread_kill(j->loop_thread, SIGTERM);   /* libfuse's handler ends the loop */
	return NULL;
}

/* Room for the threads libfuse starts: each takes a stack, libfuse's
 * request buffer (max_write + a page, malloc'd), our reply buffer
 * (thread_buf, 2 MiB) and the read path's per-thread buffers
 * (array_read_thread_bytes).  Under an address-space limit (ulimit -v)
 * libfuse ends the whole session when it cannot allocate a request
 * buffer, so the threads are capped to what fits, their stacks made small
 * (the handlers need little) and malloc kept to two arenas (each thread's
 * own arena reserves 64 MiB of address space); said on stderr (the
 * daemon's --log).  A request that still finds no memory is answered
 * ENOMEM and the mount keeps serving. */
#define THREAD_STACK (512u << 10)
#define FUSE_REQ_BUF ((1u << 20) + 2 * 4096u)
#define REPLY_BUF (2u << 20)
#define AS_RESERVE (64u << 20)       /* for the process's own growth */

static void fit_threads(struct fuse_fs *fs)
{
	pthread_attr_t attr;
	struct rlimit rl;
	unsigned long pages = 0;
	uint64_t used, cost, fit;
	FILE *f;

	if (!pthread_attr_init(&attr)) {
		if (!pthread_attr_setstacksize(&attr, THREAD_STACK))
			pthread_setattr_default_np(&attr);
		pthread_attr_destroy(&attr);
	}
	if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return;
	mallopt(M_ARENA_MAX, 2);
	f = fopen("/proc/self/statm", "r");
	if (!f)
		return;
	if (fscanf(f, "%lu", &pages) != 1)
		pages = 0;
	fclose(f);
	used = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
	cost = THREAD_STACK + FUSE_REQ_BUF + REPLY_BUF + array_read_thread_bytes(fs->a);
	fit = rl.rlim_cur > used + AS_RESERVE ? (rl.rlim_cur - used - AS_RESERVE) / cost : 0;
	if (fit < 2)
		fit = 2;
	if (fit < fs->max_threads) {
		msg("--threads %u: %" PRIu64 " fit in the address-space limit (ulimit -v %llu KiB): serving with %"
		    PRIu64, fs->max_threads, fit, (unsigned long long)rl.rlim_cur / 1024, fit);
		fs->threads_asked = fs->max_threads;
		fs->max_threads = (unsigned)fit;
	}
}

int fuse_fs_run(struct fuse_fs *fs, fuse_fs_ready_fn ready, void *arg)
{
	struct fuse_loop_config *cfg;
	struct ready_job job = { .fs = fs, .ready = ready, .arg = arg, .loop_thread = pthread_self() };
	sigset_t old, all;
	pthread_t helper;
	bool helper_started = false;
	int ret;

	if (!fs->mounted)
		return -EINVAL;
	fit_threads(fs);
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		ret = -ENOMEM;
		goto out;
	}
	fuse_loop_cfg_set_max_threads(cfg, fs->max_threads);
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	if (fs->workers.start) {
		ret = fs->workers.start(fs->workers.arg);
		if (ret)
			goto out_cfg;
		atomic_store(&fs->workers_running, true);
	}
	/* The helper blocks every signal: SIGINT/SIGTERM must reach this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	helper_started = !pthread_create(&helper, NULL, ready_main, &job);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!helper_started) {
		ret = -EAGAIN;
		if (ready)
			ready(arg, ret, "cannot start a thread");
		goto out_cfg;
	}
	/* 0 when unmounted (fusermount3 -u), the number of the signal that
	 * ended it (a clean end too), or -errno */
	ret = fuse_session_loop_mt(fs->se, cfg);
	if (ret > 0)
		ret = 0;
out_cfg:
	fuse_loop_cfg_destroy(cfg);
out:
	/* Unmount, then destroy the session: its destroy callback stops the
	 * workers; closing /dev/fuse ends any request the helper still waits
	 * for, so it can be joined. */
	fuse_session_unmount(fs->se);
	fs->mounted = false;
	fuse_remove_signal_handlers(fs->se);
	fs->handlers_set = false;
	fuse_session_destroy(fs->se);
	fs->se = NULL;
	if (helper_started) {
		pthread_join(helper, NULL);
		if (!ret && job.ret)
			ret = job.ret;
	}
	workers_stop(fs);
	if (fs->ov) {
		int r = overlay_sync(fs->ov);   /* writes since the last flush */

		if (r && !ret)
			ret = r;
	}
	return ret;
}
