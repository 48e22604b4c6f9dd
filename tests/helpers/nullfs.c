/* nullfs.c - the FUSE ceiling: one read-only file served from memory.
 *
 * For scripts/bench_mount: the same FUSE set-up as `raidimg mount`
 * (FUSE_USE_VERSION 312, fuse_loop_cfg multi-threaded loop, 1 MiB
 * requests, keep_cache, bdi read-ahead raised to 1 MiB) but every read is
 * answered straight from a buffer in memory, without a copy in the daemon.
 * What raidimg mount reaches relative to this is what its own work costs.
 *
 * Usage: nullfs [--threads N] [--direct-io] SIZE MOUNTPOINT
 * Serves MOUNTPOINT/null.img (SIZE bytes, a repeating pattern) in the
 * foreground until unmounted or signalled.  MOUNTPOINT must be a directory.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define NAME "null.img"
#define PATTERN_BYTES (1u << 20)
#define INO_FILE 2

static uint64_t file_size;
static bool direct_io;
static const char *mountpoint;
/* 2 x PATTERN_BYTES: any request of up to 1 MiB is one contiguous slice */
static char *pattern;

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)file_size;
	}
}

static void null_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, NAME)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = INO_FILE;
	e.attr_timeout = 86400;
	e.entry_timeout = 86400;
	fill_attr(INO_FILE, &e.attr);
	fuse_reply_entry(req, &e);
}

static void null_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != INO_FILE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 86400);
}

static void null_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			 struct fuse_file_info *fi)
{
	static const char *names[] = { ".", "..", NAME };
	char buf[512];
	size_t used = 0;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	for (off_t i = off; i < 3; i++) {
		struct stat st;
		size_t need = fuse_add_direntry(req, NULL, 0, names[i], NULL, 0);

		if (used + need > size)
			break;
		memset(&st, 0, sizeof(st));
		st.st_ino = i == 2 ? INO_FILE : FUSE_ROOT_ID;
		st.st_mode = i == 2 ? S_IFREG : S_IFDIR;
		fuse_add_direntry(req, buf + used, size - used, names[i], &st, i + 1);
		used += need;
	}
	fuse_reply_buf(req, buf, used);
}

static void null_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != INO_FILE) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 1;
	fi->direct_io = direct_io;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void null_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if ((uint64_t)off >= file_size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > file_size - (uint64_t)off)
		size = (size_t)(file_size - (uint64_t)off);
	if (size > PATTERN_BYTES)
		size = PATTERN_BYTES;    /* never happens with 1 MiB requests */
	fuse_reply_buf(req, pattern + (uint64_t)off % PATTERN_BYTES, size);
}

static const struct fuse_lowlevel_ops null_ops = {
	.lookup = null_lookup,
	.getattr = null_getattr,
	.readdir = null_readdir,
	.open = null_open,
	.read = null_read,
};

/* Once the mount answers (after INIT), raise its read-ahead like raidimg. */
static void *read_ahead_main(void *arg)
{
	struct stat st;
	char path[128];
	FILE *f;

	(void)arg;
	if (stat(mountpoint, &st))
		return NULL;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev),
		 minor(st.st_dev));
	f = fopen(path, "w");
	if (f) {
		fputs("1024\n", f);
		fclose(f);
	}
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: nullfs [--threads N] [--direct-io] SIZE MOUNTPOINT\n");
	return 2;
}

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], (char *)"-o", (char *)"fsname=nullfs,subtype=nullfs,default_permissions" };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	unsigned threads = 8;
	pthread_t helper;
	sigset_t all, old;
	int i = 1, ret = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--direct-io"))
			direct_io = true;
		else
			return usage();
	}
	if (argc - i != 2 || threads < 1)
		return usage();
	file_size = strtoull(argv[i], NULL, 0);
	mountpoint = argv[i + 1];
	pattern = aligned_alloc(4096, 2 * PATTERN_BYTES);
	if (!pattern)
		return 1;
	for (size_t j = 0; j < PATTERN_BYTES; j++)
		pattern[j] = (char)(j * 131 + (j >> 12));
	memcpy(pattern + PATTERN_BYTES, pattern, PATTERN_BYTES);

	se = fuse_session_new(&args, &null_ops, sizeof(null_ops), NULL);
	if (!se)
		return 1;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(se))
		goto out_destroy;
	if (fuse_session_mount(se, mountpoint))
		goto out_handlers;
	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(cfg, threads);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&helper, NULL, read_ahead_main, NULL)) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		goto out_unmount;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	ret = fuse_session_loop_mt(se, cfg) < 0;
	fuse_loop_cfg_destroy(cfg);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	pthread_join(helper, NULL);
	free(pattern);
	return ret;
out_unmount:
	fuse_loop_cfg_destroy(cfg);
	fuse_session_unmount(se);
out_handlers:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
	free(pattern);
	return 1;
}
