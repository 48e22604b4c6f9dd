/* outfile.c - see outfile.h */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "sysio.h"
#include "util.h"

/* ---- the evidence registry ---- */

struct evidence {
	dev_t dev;
	ino_t ino;
	dev_t rdev;                 /* device nodes: the device itself */
	bool is_dev;
	char *what;
};

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct evidence *ev;     /* owned by the registry */
static size_t nev, ev_cap;

static bool ev_match(const struct evidence *e, const struct stat *st)
{
	if (e->is_dev && (S_ISBLK(st->st_mode) || S_ISCHR(st->st_mode)))
		return e->rdev == st->st_rdev;
	return e->dev == st->st_dev && e->ino == st->st_ino;
}

int evidence_protect(int fd, const char *what)
{
	struct stat st;
	char *w;
	int ret = 0;

	if (fstat(fd, &st))
		return -errno;
	/* /dev/null, /dev/zero... as an input are not anyone's evidence to keep */
	if (S_ISCHR(st.st_mode))
		return 0;
	w = strdup(what);
	if (!w)
		return -ENOMEM;
	pthread_mutex_lock(&ev_lock);
	for (size_t i = 0; i < nev; i++) {
		if (ev_match(&ev[i], &st)) {
			free(w);            /* the same file opened twice: keep the first name */
			goto out;
		}
	}
	if (nev == ev_cap) {
		size_t cap = ev_cap ? 2 * ev_cap : 16;
		struct evidence *n = realloc(ev, cap * sizeof(*n));

		if (!n) {
			free(w);
			ret = -ENOMEM;
			goto out;
		}
		ev = n;
		ev_cap = cap;
	}
	ev[nev++] = (struct evidence){ .dev = st.st_dev, .ino = st.st_ino, .rdev = st.st_rdev,
				       .is_dev = S_ISBLK(st.st_mode), .what = w };
out:
	pthread_mutex_unlock(&ev_lock);
	return ret;
}

void evidence_reset(void)
{
	pthread_mutex_lock(&ev_lock);
	for (size_t i = 0; i < nev; i++)
		free(ev[i].what);
	free(ev);
	ev = NULL;
	nev = ev_cap = 0;
	pthread_mutex_unlock(&ev_lock);
}

static int check_stat(const struct stat *st, const char *path, char *err, size_t errlen)
{
	int ret = 0;

	pthread_mutex_lock(&ev_lock);
	for (size_t i = 0; i < nev; i++) {
		if (ev_match(&ev[i], st)) {
			fmt_err(err, errlen, "%s: is %s; refusing to write over evidence", path, ev[i].what);
			ret = -EPERM;
			break;
		}
	}
	pthread_mutex_unlock(&ev_lock);
	return ret;
}

int evidence_check_fd(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st)) {
		fmt_err(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
		return -errno;
	}
	return check_stat(&st, path, err, errlen);
}

int evidence_check_path(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st))
		return 0;               /* nothing there (or a dangling link): not evidence */
	return check_stat(&st, path, err, errlen);
}

/* ---- output files ---- */

static void outfile_clear(struct outfile *of)
{
	free(of->path);
	free(of->tmpname);
	memset(of, 0, sizeof(*of));
	of->fd = -1;
}

/* The directory part of path ("." when none); malloc'ed or NULL. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* A fresh name beside path: "PATH.partial-XXXXXX" (letters and digits). */
static char *temp_name(const char *path)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	uint8_t r[6];
	char *n;

	if (random_bytes(r, sizeof(r)))
		return NULL;
	if (asprintf(&n, "%s.partial-%c%c%c%c%c%c", path, set[r[0] % 62], set[r[1] % 62], set[r[2] % 62],
		     set[r[3] % 62], set[r[4] % 62], set[r[5] % 62]) < 0)
		return NULL;
	return n;
}

/* Create an exclusive named temporary beside of->path. */
static int open_named_temp(struct outfile *of, char *err, size_t errlen)
{
	for (int tries = 0; tries < 100; tries++) {
		free(of->tmpname);
		of->tmpname = temp_name(of->path);
		if (!of->tmpname) {
			fmt_err(err, errlen, "%s: out of memory", of->path);
			return -ENOMEM;
		}
		of->fd = open(of->tmpname, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (of->fd >= 0)
			return 0;
		if (errno != EEXIST) {
			int e = errno;

			fmt_err(err, errlen, "%s: cannot create: %s", of->path, strerror(e));
			return -e;
		}
	}
	fmt_err(err, errlen, "%s: cannot find a free temporary name beside it", of->path);
	return -EEXIST;
}

int outfile_open(struct outfile *of, const char *path, const struct outfile_opts *o, char *err, size_t errlen)
{
	static const struct outfile_opts defaults;
	struct stat st;
	char *dir = NULL;
	int ret;

	memset(of, 0, sizeof(*of));
	of->fd = -1;
	of->o = o ? *o : defaults;
	of->path = strdup(path);
	if (!of->path) {
		fmt_err(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	ret = evidence_check_path(path, err, errlen);
	if (ret)
		goto fail;
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode)) {
			fmt_err(err, errlen, "%s: is a directory", path);
			ret = -EISDIR;
			goto fail;
		}
		if (!S_ISREG(st.st_mode) || of->o.append) {
			/* a device or a FIFO, or a log: written as it is */
			/* O_NONBLOCK: a FIFO nobody reads is refused (ENXIO), not waited on */
			of->fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK | (of->o.append ? O_APPEND : 0));
			if (of->fd >= 0)
				fcntl(of->fd, F_SETFL, fcntl(of->fd, F_GETFL) & ~O_NONBLOCK);
			else if (errno == ENXIO)
				errno = EPIPE;      /* "No such device or address" would mislead */
			of->in_place = true;
			goto opened;
		}
		if (!of->o.replace) {
			fmt_err(err, errlen, "%s: exists; %s", path,
				of->o.exists_hint ? of->o.exists_hint : "refusing to replace it");
			ret = -EEXIST;
			goto fail;
		}
	} else if (errno != ENOENT) {
		ret = -errno;
		fmt_err(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	} else if (of->o.append) {
		of->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
		of->in_place = true;
		goto opened;
	}
	dir = dir_of(path);
	if (!dir) {
		ret = -ENOMEM;
		fmt_err(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	/* the unnamed temporary needs /proc to be linked in later */
	errno = EOPNOTSUPP;
	if (!of->o.no_tmpfile && !access("/proc/self/fd", X_OK))
		of->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (of->fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == EROFS || errno == ENOSPC ||
		    errno == EDQUOT) {
			ret = -errno;
			fmt_err(err, errlen, "%s: cannot create: %s", path, strerror(errno));
			goto fail;
		}
		ret = open_named_temp(of, err, errlen);   /* no O_TMPFILE on this file system */
		if (ret)
			goto fail;
	}
opened:
	if (of->fd < 0) {
		ret = -errno;
		fmt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		goto fail;
	}
	/* the file opened may not be what was checked a moment ago */
	ret = evidence_check_fd(of->fd, path, err, errlen);
	if (ret)
		goto fail;
	if (fstat(of->fd, &st)) {
		ret = -errno;
		fmt_err(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
		goto fail;
	}
	of->dev = st.st_dev;
	of->ino = st.st_ino;
	of->regular = S_ISREG(st.st_mode);
	free(dir);
	return 0;
fail:
	free(dir);
	outfile_abort(of);
	return ret;
}

FILE *outfile_stdio(struct outfile *of)
{
	int fd = fcntl(of->fd, F_DUPFD_CLOEXEC, 3);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, of->o.append ? "a" : "w");
	if (!f)
		close(fd);
	return f;
}

/* Is the file named n still the one this outfile wrote? */
static bool is_ours(const struct outfile *of, const char *n)
{
	struct stat st;

	return !lstat(n, &st) && st.st_dev == of->dev && st.st_ino == of->ino;
}

static void sync_dir(const char *path)
{
	char *dir = dir_of(path);
	int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

	if (fd >= 0) {
		fsync(fd);              /* best effort: some file systems refuse */
		close(fd);
	}
	free(dir);
}

/* Give the unnamed temporary of->fd the name n (linkat through /proc). */
static int link_tmpfile(struct outfile *of, const char *n)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", of->fd);
	return linkat(AT_FDCWD, proc, AT_FDCWD, n, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

int outfile_commit(struct outfile *of, char *err, size_t errlen)
{
	int ret = 0;

	if (of->fd < 0) {
		fmt_err(err, errlen, "%s: not open", of->path ? of->path : "output");
		return -EBADF;
	}
	if (of->regular && fsync(of->fd)) {
		ret = -errno;
		fmt_err(err, errlen, "%s: %s", of->path, strerror(errno));
		goto fail;
	}
	if (of->in_place)
		goto close;
	/* the name may have been given to a member since the open */
	ret = evidence_check_path(of->path, err, errlen);
	if (ret)
		goto fail;
	if (!of->tmpname) {
		/* unnamed: link it in under its name, or beside it, then rename */
		ret = of->o.replace ? -EEXIST : link_tmpfile(of, of->path);
		if (ret == -EEXIST && of->o.replace) {
			for (int tries = 0; tries < 100 && ret == -EEXIST; tries++) {
				free(of->tmpname);
				of->tmpname = temp_name(of->path);
				ret = of->tmpname ? link_tmpfile(of, of->tmpname) : -ENOMEM;
			}
			if (!ret && rename(of->tmpname, of->path))
				ret = -errno;
		}
	} else if (of->o.replace) {
		ret = rename(of->tmpname, of->path) ? -errno : 0;
	} else {
		/* link(2) never replaces: an output that appeared meanwhile is kept */
		ret = link(of->tmpname, of->path) ? -errno : 0;
		if (ret == -EPERM || ret == -EOPNOTSUPP) {
			/* no hard links here (vfat...): as close as rename gets */
			ret = access(of->path, F_OK) ? (rename(of->tmpname, of->path) ? -errno : 0) : -EEXIST;
		} else if (!ret) {
			unlink(of->tmpname);
		}
		if (!ret) {
			free(of->tmpname);
			of->tmpname = NULL;
		}
	}
	if (ret) {
		if (ret == -EEXIST)
			fmt_err(err, errlen, "%s: appeared while it was being written; %s", of->path,
				of->o.exists_hint ? of->o.exists_hint : "it is kept");
		else
			fmt_err(err, errlen, "%s: cannot give the output its name: %s", of->path, strerror(-ret));
		goto fail;
	}
	if (of->tmpname && !is_ours(of, of->tmpname)) {
		free(of->tmpname);         /* renamed away: nothing left to remove */
		of->tmpname = NULL;
	}
	sync_dir(of->path);
close:
	if (close(of->fd) && !ret) {
		ret = -errno;
		fmt_err(err, errlen, "%s: %s", of->path, strerror(errno));
	}
	of->fd = -1;
	if (ret && !of->in_place) {
		outfile_abort(of);
		return ret;
	}
	outfile_clear(of);
	return ret;
fail:
	outfile_abort(of);
	return ret;
}

void outfile_abort(struct outfile *of)
{
	if (of->tmpname && is_ours(of, of->tmpname))
		unlink(of->tmpname);
	if (of->fd >= 0)
		close(of->fd);
	outfile_clear(of);
}

/* ---- side files ---- */

int side_file_read(const char *path, const char *what, size_t max, bool protect, char **buf, size_t *len,
		   char *err, size_t errlen)
{
	struct stat st;
	char *b = NULL;
	int fd, ret;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);    /* a FIFO must not hang the open */
	if (fd < 0) {
		ret = -errno;
		fmt_err(err, errlen, "%s: cannot read the %s: %s", path, what, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		fmt_err(err, errlen, "%s: cannot read the %s: %s", path, what, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		fmt_err(err, errlen, "%s: not a regular file (%s); a %s is a regular file", path,
			S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) ? "a character device" :
			S_ISBLK(st.st_mode) ? "a block device" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a special file",
			what);
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		ret = -EFBIG;
		fmt_err(err, errlen, "%s: %lld bytes, too large for a %s (at most %zu)", path, (long long)st.st_size,
			what, max);
		goto out;
	}
	if (protect) {
		char desc[ERR_MAX];

		snprintf(desc, sizeof(desc), "the %s %s", what, path);
		ret = evidence_protect(fd, desc);
		if (ret) {
			fmt_err(err, errlen, "%s: %s", path, strerror(-ret));
			goto out;
		}
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		ret = -ENOMEM;
		fmt_err(err, errlen, "%s: out of memory", path);
		goto out;
	}
	ret = pread_all(fd, b, (size_t)st.st_size, 0);
	if (ret) {
		fmt_err(err, errlen, "%s: cannot read the %s: %s", path, what,
			ret == -EIO ? "it ended early (changed while read?)" : strerror(-ret));
		free(b);
		goto out;
	}
	b[st.st_size] = '\0';
	*buf = b;
	*len = (size_t)st.st_size;
out:
	close(fd);
	return ret;
}
