/* eiofs.c - a FUSE file system that serves one file and fails reads of
 * chosen byte ranges with EIO: a member image on a "disk" with bad sectors,
 * for tests/integration/faults_eio.sh.  The errors are real: they come
 * from the kernel's read(2), not from raidimg's own fault injection.
 *
 * Usage: eiofs [--whole] FILE MOUNTPOINT OFF+LEN[,OFF+LEN...]
 * Serves MOUNTPOINT/<basename of FILE> read-only, in the foreground, until
 * unmounted or signalled.  OFF and LEN are bytes.  A read that touches a
 * range returns the bytes before it (a short read), or EIO if it starts in
 * it, as a disk does.  --whole: a read that touches a range fails whole
 * (EIO, no bytes), as a disk fails a request - what a loop device over the
 * file needs to pass the error on (it fills a short read with zeros).  Opened with direct_io, so the page cache neither
 * hides an error nor spreads it to neighbouring reads.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_RANGES 64

static struct {
	int fd;
	const char *name;            /* basename of the file */
	struct stat st;
	int nranges;
	uint64_t off[MAX_RANGES], len[MAX_RANGES];
	int whole;                   /* a read touching a range fails whole */
} E;

/* Bytes from off that can be read before the first bad byte (len if none). */
static size_t good_prefix(uint64_t off, size_t len)
{
	size_t good = len;

	for (int i = 0; i < E.nranges; i++) {
		if (E.off[i] >= off + len || E.off[i] + E.len[i] <= off)
			continue;
		if (E.off[i] <= off || E.whole)
			return 0;
		if (E.off[i] - off < good)
			good = (size_t)(E.off[i] - off);
	}
	return good;
}

static int e_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	if (path[0] != '/' || strcmp(path + 1, E.name))
		return -ENOENT;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = E.st.st_size;
	st->st_mtim = E.st.st_mtim;
	return 0;
}

static int e_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, E.name, NULL, 0, 0);
	return 0;
}

static int e_open(const char *path, struct fuse_file_info *fi)
{
	if (path[0] != '/' || strcmp(path + 1, E.name))
		return -ENOENT;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	fi->direct_io = 1;
	return 0;
}

static int e_read(const char *path, char *buf, size_t len, off_t off, struct fuse_file_info *fi)
{
	size_t good;
	ssize_t n;

	if (off >= E.st.st_size)
		return 0;
	if ((uint64_t)off + len > (uint64_t)E.st.st_size)
		len = (size_t)(E.st.st_size - off);
	good = good_prefix((uint64_t)off, len);
	if (good == 0)
		return -EIO;
	n = pread(E.fd, buf, good, off);
	return n < 0 ? -errno : (int)n;
}

/* The kernel takes a short read for the end of the file and shrinks the
 * size it caches; with no attribute caching every open (and stat) sees the
 * real size again, so runs do not depend on how long ago the last one was. */
static void *e_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 0;
	cfg->negative_timeout = 0;
	return NULL;
}

static const struct fuse_operations e_ops = {
	.init = e_init,
	.getattr = e_getattr,
	.readdir = e_readdir,
	.open = e_open,
	.read = e_read,
};

static int parse_ranges(char *spec)
{
	char *save = NULL;

	for (char *tok = strtok_r(spec, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *plus = strchr(tok, '+'), *end;

		if (!plus || E.nranges == MAX_RANGES)
			return -1;
		E.off[E.nranges] = strtoull(tok, &end, 10);
		if (end != plus)
			return -1;
		E.len[E.nranges] = strtoull(plus + 1, &end, 10);
		if (*end || !E.len[E.nranges])
			return -1;
		E.nranges++;
	}
	return E.nranges ? 0 : -1;
}

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], "-f", "-s", "-o", "ro,default_permissions", NULL, NULL };
	const char *slash;

	if (argc == 5 && !strcmp(argv[1], "--whole")) {
		E.whole = 1;
		argv++;
		argc--;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: eiofs [--whole] FILE MOUNTPOINT OFF+LEN[,OFF+LEN...]\n");
		return 2;
	}
	E.fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (E.fd < 0 || fstat(E.fd, &E.st)) {
		fprintf(stderr, "eiofs: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	slash = strrchr(argv[1], '/');
	E.name = slash ? slash + 1 : argv[1];
	if (parse_ranges(argv[3])) {
		fprintf(stderr, "eiofs: bad ranges '%s' (OFF+LEN in bytes, comma-separated)\n", argv[3]);
		return 2;
	}
	fargv[5] = argv[2];
	return fuse_main(6, fargv, &e_ops, NULL);
}
