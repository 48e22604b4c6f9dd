/* source_split.c - a raw image split into numbered pieces (NAME.001,
 * NAME.002, ... or NAME.000, ...) read as one image (source.h).  The pieces
 * are found and checked by core/split_raw.c over a listing of the
 * directory made here (readdir + fstatat: names and sizes only); each is
 * then opened read-only, registered as evidence, and checked again against
 * the size it was listed with. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "source.h"
#include "split_raw.h"
#include "sysio.h"
#include "util.h"

struct split_priv {
	struct split_set set;
	int *fds;               /* [npieces], owned */
	char **paths;           /* [npieces] absolute, owned (the source's files) */
};

static void dirents_free(struct split_dirent *ents, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)ents[i].name);
	free(ents);
}

/* The entries of dir whose names start with prefix (fstatat, following
 * symlinks).  0 or -errno with a message. */
static int list_dir(const char *dir, const char *prefix, struct split_dirent **ents, size_t *n, char *err,
		    size_t errlen)
{
	struct split_dirent *v = NULL;
	size_t cnt = 0, cap = 0, plen = strlen(prefix);
	struct dirent *de;
	DIR *d;
	int ret = 0;

	*ents = NULL;
	*n = 0;
	d = opendir(dir);
	if (!d)
		return fmt_fail(err, errlen, -errno, "%s: %s", dir, strerror(errno));
	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (strncmp(de->d_name, prefix, plen))
			continue;
		if (cnt >= SPLIT_MAX_PIECES * 2u) {
			ret = fmt_fail(err, errlen, -EFBIG, "%s: more than %d entries named %s*", dir,
				       SPLIT_MAX_PIECES * 2, prefix);
			goto fail;
		}
		if (fstatat(dirfd(d), de->d_name, &st, 0)) {
			if (errno == ENOENT)    /* dangling symlink, or removed meanwhile */
				continue;
			ret = fmt_fail(err, errlen, -errno, "%s/%s: %s", dir, de->d_name, strerror(errno));
			goto fail;
		}
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			struct split_dirent *nv = realloc(v, ncap * sizeof(*nv));

			if (!nv) {
				ret = fmt_fail(err, errlen, -ENOMEM, "out of memory");
				goto fail;
			}
			v = nv;
			cap = ncap;
		}
		v[cnt].name = strdup(de->d_name);
		if (!v[cnt].name) {
			ret = fmt_fail(err, errlen, -ENOMEM, "out of memory");
			goto fail;
		}
		v[cnt].size = (uint64_t)st.st_size;
		v[cnt].is_regular = S_ISREG(st.st_mode);
		cnt++;
	}
	if (errno) {
		ret = fmt_fail(err, errlen, -errno, "%s: reading the directory: %s", dir, strerror(errno));
		goto fail;
	}
	closedir(d);
	*ents = v;
	*n = cnt;
	return 0;
fail:
	closedir(d);
	dirents_free(v, cnt);
	return ret;
}

static struct split_priv *spp(struct source *s)
{
	return s->priv;
}

static int split_preadv(struct source *s, const struct iovec *iov, int iovcnt, uint64_t off)
{
	struct split_priv *p = spp(s);
	uint64_t total = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (off > s->size || total > s->size - off)
		return -EIO;            /* past the end, as a raw image would be */
	for (int i = 0; i < iovcnt; i++) {
		uint8_t *b = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left) {
			uint64_t in;
			int k = split_raw_locate(&p->set, off, &in);
			uint64_t n = p->set.pieces[k].size - in;
			int ret;

			if (n > left)
				n = left;
			ret = pread_all(p->fds[k], b, (size_t)n, in);
			if (ret)
				return ret;     /* a piece cut short meanwhile: -EIO */
			b += n;
			off += n;
			left -= (size_t)n;
		}
	}
	return 0;
}

static int split_pread(struct source *s, void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { buf, len };

	return split_preadv(s, &iov, 1, off);
}

static int split_pwrite(struct source *s, const void *buf, size_t len, uint64_t off)
{
	return -EROFS;
}

static int split_sync(struct source *s)
{
	return 0;
}

static int split_truncate(struct source *s, uint64_t size)
{
	return -EROFS;
}

static void priv_free(struct split_priv *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->set.npieces; i++) {
		if (p->fds && p->fds[i] >= 0)
			close(p->fds[i]);
		if (p->paths)
			free(p->paths[i]);
	}
	free(p->fds);
	free(p->paths);
	split_set_free(&p->set);
	free(p);
}

static void split_close(struct source *s)
{
	priv_free(s->priv);
	free(s->path);
	free(s);
}

static const struct source_ops split_ops = {
	.kind = "split",
	.pread = split_pread,
	.preadv = split_preadv,
	.pwrite = split_pwrite,
	.sync = split_sync,
	.truncate = split_truncate,
	.close = split_close,
};

/* Open every piece: regular, read-only, the size it was listed with. */
static int open_pieces(struct split_priv *p, const char *dir, char *err, size_t errlen)
{
	for (unsigned i = 0; i < p->set.npieces; i++) {
		const struct split_piece *pc = &p->set.pieces[i];
		char what[PATH_MAX + 64];
		struct stat st;
		char *path = malloc(strlen(dir) + strlen(pc->name) + 2);
		int ret;

		if (!path)
			return fmt_fail(err, errlen, -ENOMEM, "out of memory");
		sprintf(path, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", pc->name);
		p->paths[i] = path;
		p->fds[i] = open(p->paths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (p->fds[i] < 0)
			return fmt_fail(err, errlen, -errno, "%s: cannot open: %s", p->paths[i], strerror(errno));
		if (fstat(p->fds[i], &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != pc->size)
			return fmt_fail(err, errlen, -EINVAL, "%s: changed while the pieces were listed", p->paths[i]);
		snprintf(what, sizeof(what), "the piece %s of a split image given as input", p->paths[i]);
		ret = evidence_protect(p->fds[i], what);
		if (ret)
			return fmt_fail(err, errlen, ret, "%s: %s", p->paths[i], strerror(-ret));
		fcntl(p->fds[i], F_SETFL, fcntl(p->fds[i], F_GETFL) & ~O_NONBLOCK);
		posix_fadvise(p->fds[i], 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	return 0;
}

int source_open_split(const char *given, int flags, struct source **out, char *err, size_t errlen)
{
	char *path = abs_path(given);       /* the pieces get absolute names */
	const char *slash = path ? strrchr(path, '/') : NULL;
	const char *base = slash ? slash + 1 : path;
	const char *dot = strrchr(base, '.');
	struct split_priv *p = NULL;
	struct source *s = NULL;
	struct split_dirent *ents = NULL;
	char *dir = NULL, *prefix = NULL, why[512];
	size_t n = 0;
	int ret;

	if (!path)
		return fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", given);
	if (flags & SOURCE_WRITE) {
		free(path);
		return fmt_fail(err, errlen, -EROFS, "%s: a split image (numbered pieces) cannot be written; join "
				"the pieces first (cat)", given);
	}
	dir = slash ? (slash == path ? strdup("/") : strndup(path, (size_t)(slash - path))) : strdup(".");
	prefix = strndup(base, dot ? (size_t)(dot - base) + 1 : strlen(base));
	p = calloc(1, sizeof(*p));
	s = calloc(1, sizeof(*s));
	if (!dir || !prefix || !p || !s) {
		ret = fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	ret = list_dir(dir, prefix, &ents, &n, err, errlen);
	if (ret)
		goto fail;
	ret = split_raw_find(base, ents, n, &p->set, why, sizeof(why));
	if (ret) {
		fmt_err(err, errlen, "split image %s (in %s): %s", given, dir, why);
		goto fail;
	}
	p->fds = malloc(p->set.npieces * sizeof(*p->fds));
	p->paths = calloc(p->set.npieces, sizeof(*p->paths));
	if (!p->fds || !p->paths) {
		ret = fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	for (unsigned i = 0; i < p->set.npieces; i++)
		p->fds[i] = -1;
	ret = open_pieces(p, dir, err, errlen);
	if (ret)
		goto fail;
	s->path = path;
	path = NULL;
	s->ops = &split_ops;
	s->priv = p;
	s->size = p->set.total_size;
	s->files = p->paths;
	s->nfiles = (int)p->set.npieces;
	*out = s;
	dirents_free(ents, n);
	free(dir);
	free(prefix);
	return 0;
fail:
	free(path);
	priv_free(p);
	free(s);
	dirents_free(ents, n);
	free(dir);
	free(prefix);
	return ret;
}
