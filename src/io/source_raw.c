/* source_raw.c - a member image that is a plain file (or a block device). */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <limits.h>

#include "outfile.h"
#include "source.h"
#include "sysio.h"
#include "util.h"

struct raw_priv {
	int fd;
	/* A read that fails (EIO) is tried again with O_DIRECT: a block
	 * device's page cache can keep answering EIO for a whole large folio
	 * of which only a few sectors are really bad (and FUSE's takes a short
	 * read for the end of the file).  The descriptor is opened on the
	 * first failure, under lock; -1 when it cannot be had. */
	pthread_mutex_t direct_lock;
	int direct_fd;
	bool direct_tried;
	uint32_t direct_align;       /* the device's logical block size, else 4096 */
};

static int raw_fd(struct source *s)
{
	return ((struct raw_priv *)s->priv)->fd;
}

static int raw_fd_op(struct source *s, uint64_t *base)
{
	*base = 0;
	return raw_fd(s);
}

/* The O_DIRECT descriptor of s, opened on first use; -1 if none. */
static int direct_fd(struct source *s)
{
	struct raw_priv *rp = s->priv;
	int fd;

	pthread_mutex_lock(&rp->direct_lock);
	if (!rp->direct_tried) {
		rp->direct_tried = true;
		rp->direct_fd = open(s->path, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NONBLOCK);
	}
	fd = rp->direct_fd;
	pthread_mutex_unlock(&rp->direct_lock);
	return fd;
}

/* len bytes at off read again around the page cache, in aligned pieces
 * through a bounce buffer.  0 or -errno. */
static int pread_direct(struct source *s, void *buf, size_t len, uint64_t off)
{
	struct raw_priv *rp = s->priv;
	uint64_t a = rp->direct_align, lo = off / a * a, hi = (off + len + a - 1) / a * a;
	int fd = direct_fd(s);
	uint8_t *bounce = NULL;
	uint64_t at = lo;
	int ret;

	if (fd < 0)
		return -EIO;
	if (posix_memalign((void **)&bounce, a < 4096 ? 4096 : a, (size_t)(hi - lo)))
		return -ENOMEM;

	while (at < hi) {
		ssize_t n = pread(fd, bounce + (at - lo), (size_t)(hi - at), (off_t)at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto out;
		}
		if (n == 0)
			break;
		at += (uint64_t)n;
		if ((uint64_t)n % a || at >= off + len)
			break;          /* a short read: the end of a regular file */
	}
	/* what was asked for must all have come (else: the image ends early) */
	ret = at >= off + len ? 0 : -EIO;
	if (!ret)
		memcpy(buf, bounce + (off - lo), len);
out:
	free(bounce);
	return ret;
}

static int raw_pread(struct source *s, void *buf, size_t len, uint64_t off)
{
	int ret = pread_all(raw_fd(s), buf, len, off);     /* past the end: -EIO, a truncated image */

	if (ret == -EIO && off <= s->size && len <= s->size - off)
		ret = pread_direct(s, buf, len, off);
	return ret;
}

static int raw_preadv(struct source *s, const struct iovec *iov_in, int iovcnt, uint64_t off)
{
	struct iovec iov[256];   /* <= IOV_MAX (1024) */
	int fd = raw_fd(s);
	int i = 0;

	/* Work on a local copy so a short read can advance it. */
	while (i < iovcnt) {
		int cnt = iovcnt - i;
		ssize_t n;

		if (cnt > (int)ARRAY_LEN(iov))
			cnt = (int)ARRAY_LEN(iov);
		memcpy(iov, iov_in + i, (size_t)cnt * sizeof(*iov));
		for (int j = 0; j < cnt;) {
			n = preadv(fd, iov + j, cnt - j, (off_t)off);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			if (n == 0)
				return -EIO;
			off += (uint64_t)n;
			while (n > 0 && j < cnt) {
				if ((size_t)n >= iov[j].iov_len) {
					n -= (ssize_t)iov[j].iov_len;
					j++;
				} else {
					iov[j].iov_base = (uint8_t *)iov[j].iov_base + n;
					iov[j].iov_len -= (size_t)n;
					n = 0;
				}
			}
		}
		i += cnt;
	}
	return 0;
}

static int raw_pwrite(struct source *s, const void *buf, size_t len, uint64_t off)
{
	int ret;

	if (!s->writable)
		return -EROFS;
	ret = pwrite_all(raw_fd(s), buf, len, off);
	if (ret)
		return ret;
	if (off + len > s->size)
		s->size = off + len;
	return 0;
}

static int raw_sync(struct source *s)
{
	return fsync(raw_fd(s)) ? -errno : 0;
}

static int raw_truncate(struct source *s, uint64_t size)
{
	if (!s->writable)
		return -EROFS;
	if (ftruncate(raw_fd(s), (off_t)size))
		return -errno;
	s->size = size;
	return 0;
}

static void raw_close(struct source *s)
{
	struct raw_priv *rp = s->priv;

	if (rp) {
		close(rp->fd);
		if (rp->direct_fd >= 0)
			close(rp->direct_fd);
		pthread_mutex_destroy(&rp->direct_lock);
		free(rp);
	}
	free(s->path);
	free(s);
}

static const struct source_ops raw_ops = {
	.kind = "raw",
	.pread = raw_pread,
	.preadv = raw_preadv,
	.pwrite = raw_pwrite,
	.sync = raw_sync,
	.truncate = raw_truncate,
	.raw_fd = raw_fd_op,
	.close = raw_close,
};

/* Wrap fd (owned from now on) as a raw source of path. */
static int raw_wrap(int fd, const char *path, int flags, struct source **out, char *err, size_t errlen)
{
	struct source *s = NULL;
	struct raw_priv *rp = NULL;
	struct stat st;
	int ret;

	if (fstat(fd, &st)) {
		ret = -errno;
		fmt_err(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		fmt_err(err, errlen, "%s: is a directory, not a member image", path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		ret = -EINVAL;
		fmt_err(err, errlen, "%s: not a regular file or block device", path);
		goto fail;
	}
	s = calloc(1, sizeof(*s));
	rp = calloc(1, sizeof(*rp));
	if (!s || !rp) {
		ret = -ENOMEM;
		fmt_err(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	s->path = abs_path(path);
	if (!s->path) {
		ret = -ENOMEM;
		fmt_err(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t bytes = 0;
		if (ioctl(fd, BLKGETSIZE64, &bytes)) {
			ret = -errno;
			fmt_err(err, errlen, "%s: cannot get device size: %s", path, strerror(errno));
			goto fail;
		}
		s->size = bytes;
	} else {
		s->size = (uint64_t)st.st_size;
	}
	/* opened O_NONBLOCK so that a FIFO could not hang the open */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	/* Sequential hint: members are mostly streamed in large pieces. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	rp->fd = fd;
	rp->direct_fd = -1;
	pthread_mutex_init(&rp->direct_lock, NULL);
	rp->direct_align = 4096;
	if (S_ISBLK(st.st_mode)) {
		int ssz = 0;

		if (!ioctl(fd, BLKSSZGET, &ssz) && ssz >= 512 && !(ssz & (ssz - 1)))
			rp->direct_align = (uint32_t)ssz;
	}
	s->ops = &raw_ops;
	s->priv = rp;
	s->writable = !!(flags & SOURCE_WRITE);
	*out = s;
	return 0;
fail:
	if (s)
		free(s->path);
	free(rp);
	free(s);
	close(fd);
	return ret;
}

int source_open_raw(const char *path, int flags, struct source **out, char *err, size_t errlen)
{
	char what[64 + PATH_MAX];
	char *abs;
	int fd, ret;

	fd = open(path, O_CLOEXEC | O_NONBLOCK | ((flags & SOURCE_WRITE) ? O_RDWR : O_RDONLY));
	if (fd < 0) {
		ret = -errno;
		fmt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return ret;
	}
	/* no output of this run may land on it (outfile.h) */
	abs = abs_path(path);
	snprintf(what, sizeof(what), "the image %s given as input", abs ? abs : path);
	free(abs);
	ret = evidence_protect(fd, what);
	if (ret) {
		fmt_err(err, errlen, "%s: %s", path, strerror(-ret));
		close(fd);
		return ret;
	}
	return raw_wrap(fd, path, flags, out, err, errlen);
}

int source_wrap_fd(int fd, const char *path, struct source **out, char *err, size_t errlen)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (dup_fd < 0) {
		fmt_err(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	return raw_wrap(dup_fd, path, SOURCE_WRITE, out, err, errlen);
}
