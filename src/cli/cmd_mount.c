/* cmd_mount.c - raidimg mount: the assembled array as a file, through FUSE.
 *
 * The array is assembled first, so every problem with the members is
 * reported before anything is mounted.  Then, by default, the command
 * forks: the child mounts, detaches (setsid, chdir /, stdio to /dev/null)
 * and serves; the parent waits on a pipe until the child says the mount
 * answers (or why it failed) and only then returns.  With -f the same
 * process mounts and serves until unmounted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"
#include "fuse_fs.h"
#include "mount_scrub.h"
#include "engine_args.h"
#include "probe.h"
#include "sysio.h"
#include "util.h"

#define FUSE_DEVICE "/dev/fuse"

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg mount [OPTIONS] [ARRAY OPTIONS] MEMBER... MOUNTPOINT\n\n"
		   "Show the assembled array as one read-only file through FUSE, without root.\n"
		   "MOUNTPOINT is an empty directory, which then holds the image (named after the\n"
		   "md array, e.g. host_name.img, or array.img) and `status`, a JSON snapshot of\n"
		   "the array (geometry, members and their state, degraded or not, bytes served,\n"
		   "stripes rebuilt from parity, read errors, member requests); or MOUNTPOINT is\n"
		   "an empty regular file, which then shows the image itself.  A non-empty\n"
		   "directory or file (a member image given last by mistake) and a mountpoint\n"
		   "where something is already mounted are refused.  Missing or unreadable\n"
		   "members are rebuilt from parity on every read (a degraded array is said on\n"
		   "stderr); a range that cannot be rebuilt reads as an I/O error (EIO), never\n"
		   "as invented bytes.\n\n"
		   "The command returns once the mount answers, printing the image's path on\n"
		   "standard output; the array is served by a background process until\n"
		   "`fusermount3 -u MOUNTPOINT` (or umount, or SIGTERM/SIGINT to that process).\n\n"
		   "  -f, --foreground     serve in this process until unmounted (Ctrl-C unmounts)\n"
		   "  --nonempty           mount over a non-empty directory or file (hiding what is\n"
		   "                       there; never over a member of the array)\n"
		   "  --name NAME          file name of the image in the directory\n"
		   "  --allow-other        let other users read the mount (-o allow_other; as an\n"
		   "                       ordinary user needs user_allow_other in /etc/fuse.conf)\n"
		   "  --threads N          FUSE worker threads, 2 to 64 (default 8); fewer when an\n"
		   "                       address-space limit (ulimit -v) cannot hold them (said)\n"
		   "  --log FILE           append the serving process's messages to FILE (they are\n"
		   "                       lost otherwise once it is in the background)\n"
		   "  -d, --debug          libfuse's trace of every request on stderr (implies -f)\n"
		   "  --overlay FILE       make the image writable: every write goes to FILE, a\n"
		   "                       copy-on-write overlay (created when missing or empty,\n"
		   "                       sparse, kept across mounts; refused if it belongs to\n"
		   "                       another array); the members are never written.\n"
		   "                       See raidimg overlay --help\n"
		   "  -h, --help           this text\n\n"
		   "Scrub inside the mount (directory mountpoints), as md's sysfs files:\n"
		   "  sync_action          read: idle, check or repair; write check or repair to\n"
		   "                       start one (EBUSY while one runs), idle to stop it\n"
		   "  sync_speed_min       the speed limits per member in KiB/s, as md's (0: none);\n"
		   "  sync_speed_max       writes also take 'unlimited' or a size per second (50M)\n"
		   "  mismatch_cnt         md's count of the running or last scrub (sectors)\n"
		   "  sync_completed       'DONE / TOTAL' sectors per member while a scrub runs,\n"
		   "                       else 'none'\n"
		   "  sync_speed           KiB/s per member of the running scrub, else 'none'\n"
		   "  degraded             the number of members missing or not in sync\n"
		   "  array_state          readonly (members opened read-only: never written);\n"
		   "                       with --allow-repair: active while a repair runs, clean\n"
		   "  sync_latency_target  how the scrub yields to the image's readers: their p99\n"
		   "                       latency held to a factor of its idle value (1.5x), or\n"
		   "                       a time (500us), or 0: md's rule (back off while read)\n"
		   "status shows the scrub's progress, counts, last mismatches, speed and limits.\n"
		   "  --speed-limit-min RATE  floor kept while yielding to readers of the mount\n"
		   "                       (default 1000 = KiB/s, md's)\n"
		   "  --speed-limit-max RATE  ceiling (default: unlimited); RATE as in scrub: KiB/s\n"
		   "                       or a size per second such as 50M\n"
		   "  --latency-target T   sync_latency_target at the start (default 1.5: readers'\n"
		   "                       p99 <= 1.5 x idle); T as that file takes it\n"
		   "  --scrub-log FILE     append every mismatch, write and end of a scrub to FILE\n"
		   "                       as JSON lines (the records of raidimg scrub --json)\n"
		   "  --allow-repair       open the member images for writing so that `repair`\n"
		   "                       can rewrite them (refused for read-only image files);\n"
		   "                       without it writing repair fails with EPERM.  Repaired\n"
		   "                       data is dropped from the mount's page cache.\n\n"
		   ARRAY_OPTIONS_HELP
		   "\nExit status: 0 mounted (or, with -f, unmounted cleanly), 2 error.\n");
}

/* "host:name" -> "host_name.img"; "" -> "array.img".  Caller frees. */
static char *default_image_name(const struct array *a)
{
	size_t n = strlen(a->name);
	char *s;

	if (!n)
		return strdup("array.img");
	s = malloc(n + 5);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)a->name[i];
		s[i] = (c == '/' || c == ':' || c < 0x20 || c == 0x7f) ? '_' : (char)c;
	}
	memcpy(s + n, ".img", 5);
	return s;
}

/* Replace the members' paths by absolute ones: after daemonising the
 * working directory is /.  The array reads through open descriptors. */
static int absolutise_member_paths(struct array *a)
{
	for (int r = 0; r < a->geom.raid_disks; r++) {
		struct array_member *m = &a->members[r];
		char *p;

		if (!m->path || m->path[0] == '/')
			continue;
		p = abs_path(m->path);
		if (!p)
			return -ENOMEM;
		free(m->path);
		m->path = p;
	}
	return 0;
}

static int check_fuse_device(void)
{
	if (access(FUSE_DEVICE, F_OK)) {
		msg("%s: %s: FUSE is not available here (load the kernel module with 'modprobe fuse'; "
		    "a container needs --device /dev/fuse)", FUSE_DEVICE, strerror(errno));
		return -1;
	}
	return 0;
}

/* The path a reader opens: the image in the directory, or the mountpoint. */
static void print_image_path(struct fuse_fs *fs, const char *mnt, const char *name)
{
	if (fuse_fs_is_file_mount(fs))
		printf("%s\n", mnt);
	else
		printf("%s%s%s\n", mnt, mnt[strlen(mnt) - 1] == '/' ? "" : "/", name);
	fflush(stdout);
}

/* A degraded array said on stderr once mounted, as mdadm says "started
 * with 3 drives (out of 4)". */
static void say_degraded(const struct array *a, const char *mnt)
{
	char missing[200] = "", rebuilding[200] = "";
	int active = 0;

	for (int r = 0; r < a->geom.raid_disks; r++) {
		enum member_state s = a->members[r].state;
		char *list = s == MEMBER_REBUILDING ? rebuilding : missing;
		size_t used = strlen(list);

		if (s == MEMBER_OK)
			active++;
		else if (used < sizeof(missing) - 16)
			snprintf(list + used, sizeof(missing) - used, "%s%d", used ? ", " : "role ", r);
	}
	if (active == a->geom.raid_disks)
		return;
	msg("%s: started degraded, with %d of %d members (%s%s%s%s%s): the data of the members not in use is "
	    "rebuilt from parity on every read", mnt, active, a->geom.raid_disks, missing[0] ? "missing: " : "", missing,
	    missing[0] && rebuilding[0] ? "; " : "", rebuilding[0] ? "being rebuilt: " : "", rebuilding);
}

/* ---- foreground ---- */

struct fg_ready {
	struct fuse_fs *fs;
	const struct array *a;
	const char *mnt, *name;
};

static void fg_ready(void *arg, int err, const char *text)
{
	struct fg_ready *r = arg;

	if (err) {
		msg("%s", text);
		return;
	}
	print_image_path(r->fs, r->mnt, r->name);
	say_degraded(r->a, r->mnt);
	msg("serving %s until unmounted (fusermount3 -u %s, or Ctrl-C)", r->mnt, r->mnt);
}

static int run_foreground(struct fuse_fs *fs, const struct array *a, const char *mnt, const char *name)
{
	struct fg_ready r = { fs, a, mnt, name };
	char err[ERR_MAX];
	int ret;

	ret = fuse_fs_mount(fs, err, sizeof(err));
	if (ret) {
		msg("%s", err);
		return EXIT_ERR;
	}
	ret = fuse_fs_run(fs, fg_ready, &r);
	if (ret) {
		msg("%s: serving ended with an error: %s", mnt, strerror(-ret));
		return EXIT_ERR;
	}
	return EXIT_OK;
}

/* ---- daemon ---- */

/* The child's word to the parent, through the pipe: "0" ready, or "1"
 * followed by the reason. */
static void report(int fd, int err, const char *text)
{
	char buf[ERR_MAX];
	int n;

	if (fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "%c%s", err ? '1' : '0', err ? text : "");
	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	if (write(fd, buf, (size_t)n) < 0) {
		/* the parent is gone: nobody to tell */
	}
}

static void daemon_ready(void *arg, int err, const char *text)
{
	int *fd = arg;

	report(*fd, err, text);
	close(*fd);
	*fd = -1;
}

/* The daemon's messages (libfuse's too) go to /dev/null, or to --log. */
static int log_fd = -1;

static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(log_fd >= 0 ? log_fd : fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/* In the child: mount, detach, serve.  Never returns. */
static void __attribute__((noreturn)) daemon_child(struct fuse_fs *fs, struct array *a, int fd)
{
	char err[ERR_MAX];
	int ret;

	setsid();
	ret = fuse_fs_mount(fs, err, sizeof(err));
	if (ret) {
		report(fd, ret, err);
		fuse_fs_free(fs);
		_exit(EXIT_ERR);
	}
	if (chdir("/")) {
		/* only the working directory; nothing uses it */
	}
	detach_stdio();
	ret = fuse_fs_run(fs, daemon_ready, &fd);
	if (fd >= 0)
		report(fd, ret ? ret : -EIO, "the mount ended before it was ready");
	fuse_fs_free(fs);
	array_free(a);
	_exit(ret ? EXIT_ERR : EXIT_OK);
}

/* In the parent: wait for the child's word. */
static int daemon_parent(pid_t pid, int fd)
{
	char buf[ERR_MAX];
	size_t got = 0;
	int status;

	for (;;) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf) - 1)
			break;
	}
	buf[got] = '\0';
	if (got && buf[0] == '0')
		return 0;
	if (got > 1) {
		msg("%s", buf + 1);
	} else if (waitpid(pid, &status, 0) == pid && WIFSIGNALED(status)) {
		msg("the mount process died (signal %d) before the mount was ready", WTERMSIG(status));
		return -1;
	} else {
		msg("the mount process ended before the mount was ready");
	}
	waitpid(pid, &status, 0);
	return -1;
}

/* No write reached this process's overlay (in a daemon's parent: none can
 * have, the child served them). */
static bool overlay_unwritten(const struct overlay *ov)
{
	struct overlay_stats st;

	overlay_get_stats(ov, &st);
	return !st.writes && !st.granules_written;
}

/* --overlay FILE: open (or create) the array's copy-on-write overlay.
 * Prints the problem and returns -1 when it cannot be used. */
static int open_overlay(const char *path, struct array *a, const struct stat *mnt_st, struct overlay **ov,
			bool *created)
{
	struct overlay_open_opts oo = { .writable = true, .create = true };
	struct overlay_identity id;
	char err[ERR_MAX], desc[200];
	struct stat st;

	/* a member image is refused by overlay_open (outfile.h's evidence guard) */
	if (!stat(path, &st)) {
		if (st.st_dev == mnt_st->st_dev && st.st_ino == mnt_st->st_ino) {
			msg("%s: the overlay cannot be the mountpoint", path);
			return -1;
		}
	}
	if (array_overlay_open(path, a, &oo, ov, created, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	if (*created) {
		array_overlay_identity(a, &id);
		overlay_identity_describe(&id, desc, sizeof(desc));
		msg("%s: new overlay for the %s, granule %u KiB", overlay_path(*ov), desc,
		    overlay_header(*ov)->granule_bytes >> 10);
	}
	return 0;
}

static int run_daemon(struct fuse_fs *fs, struct array *a, const char *mnt, const char *name)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC)) {
		msg("pipe: %s", strerror(errno));
		return EXIT_ERR;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		msg("fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return EXIT_ERR;
	}
	if (pid == 0) {
		close(p[0]);
		daemon_child(fs, a, p[1]);
	}
	close(p[1]);
	if (daemon_parent(pid, p[0])) {
		close(p[0]);
		return EXIT_ERR;
	}
	close(p[0]);
	print_image_path(fs, mnt, name);
	say_degraded(a, mnt);
	return EXIT_OK;
}

/* What the command line says. */
struct mount_args {
	struct array_args aa;
	struct fuse_fs_opts fo;
	struct mount_scrub_opts so;
	bool scrub_opts;             /* an option of the scrub's control files was given */
	bool foreground;
	bool nonempty;               /* --nonempty: over a non-empty directory or file */
	const char *name;            /* --name, NULL: from the array */
	const char *overlay;         /* --overlay FILE */
	const char *log;             /* --log FILE: the daemon's messages */
	const char *mountpoint;      /* as given */
	int nimages;
	char **images;               /* argv's */
};

/* Parse the options.  0 to go on, 1 when done (--help), -1 on a bad one
 * (said). */
static int parse_args(int argc, char **argv, struct mount_args *ma)
{
	enum { OPT_NAME = 0x2001, OPT_ALLOW_OTHER, OPT_THREADS, OPT_ALLOW_REPAIR, OPT_SCRUB_LOG, OPT_SPEED_MIN,
	       OPT_SPEED_MAX, OPT_OVERLAY, OPT_LOG, OPT_NONEMPTY, OPT_LATENCY };
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "allow-other", no_argument, NULL, OPT_ALLOW_OTHER },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "overlay", required_argument, NULL, OPT_OVERLAY },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "allow-repair", no_argument, NULL, OPT_ALLOW_REPAIR },
		{ "scrub-log", required_argument, NULL, OPT_SCRUB_LOG },
		{ "speed-limit-min", required_argument, NULL, OPT_SPEED_MIN },
		{ "speed-limit-max", required_argument, NULL, OPT_SPEED_MAX },
		{ "nonempty", no_argument, NULL, OPT_NONEMPTY },
		{ "latency-target", required_argument, NULL, OPT_LATENCY },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		ARRAY_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	long long threads;
	int opt;

	while ((opt = cli_getopt(argc, argv, "fdh", longopts)) != -1) {
		int r = array_args_opt(&ma->aa, opt, optarg);
		if (r < 0)
			return -1;
		if (r)
			continue;
		switch (opt) {
		case 'f': ma->foreground = true; break;
		case 'd': ma->fo.debug = true; ma->foreground = true; break;
		case OPT_NAME: ma->name = optarg; break;
		case OPT_ALLOW_OTHER: ma->fo.allow_other = true; break;
		case OPT_THREADS:
			if (parse_int(optarg, 2, 64, &threads)) {
				msg("--threads %s: give a number from 2 to 64", optarg);
				return -1;
			}
			ma->fo.max_threads = (unsigned)threads;
			break;
		case OPT_ALLOW_REPAIR: ma->so.allow_repair = ma->scrub_opts = true; break;
		case OPT_OVERLAY: ma->overlay = optarg; break;
		case OPT_LOG: ma->log = optarg; break;
		case OPT_NONEMPTY: ma->nonempty = true; break;
		case OPT_SCRUB_LOG: ma->so.log_path = optarg; ma->scrub_opts = true; break;
		case OPT_SPEED_MIN:
		case OPT_SPEED_MAX:
			if (parse_rate_opt(opt == OPT_SPEED_MIN ? "--speed-limit-min" : "--speed-limit-max", optarg,
					   opt == OPT_SPEED_MIN ? &ma->so.speed_min : &ma->so.speed_max))
				return -1;
			ma->scrub_opts = true;
			break;
		case OPT_LATENCY:
			if (fg_target_parse(optarg, &ma->so.latency_milli, &ma->so.latency_ns)) {
				msg("--latency-target %s: give a factor of the readers' idle p99 (1.01-100, e.g. "
				    "1.5), a time (1us-10s, e.g. 500us or 2ms), or 0 for md's rule", optarg);
				return -1;
			}
			ma->so.latency_set = ma->scrub_opts = true;
			break;
		case 'h': usage(stdout); return 1;
		default: return -1;
		}
	}
	if (argc - optind < 2)
		return cli_usage_error("give the member images and then the mountpoint");
	if (ma->overlay && ma->so.allow_repair) {
		msg("--overlay keeps the member images untouched; it cannot be combined with --allow-repair");
		return -1;
	}
	ma->mountpoint = argv[argc - 1];
	ma->images = argv + optind;
	ma->nimages = argc - optind - 1;
	return 0;
}

/* /proc/self/mountinfo's escapes (\040 for a space...) undone in place. */
static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Is the absolute path abs a mount point?  1 (its file system type in
 * type), 0, or -1 when the mount table cannot be read. */
static int find_mount(const char *abs, char *type, size_t tlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (!f)
		return -1;
	while (!found && getline(&line, &cap, f) > 0) {
		char *save = NULL, *fld[5], *dash;
		int i;

		dash = strstr(line, " - ");
		for (i = 0; i < 5; i++) {
			fld[i] = strtok_r(i ? NULL : line, " ", &save);
			if (!fld[i])
				break;
		}
		if (i < 5)
			continue;
		unescape_mountinfo(fld[4]);
		if (strcmp(fld[4], abs))
			continue;
		found = 1;
		snprintf(type, tlen, "%s", "?");
		if (dash) {
			char *t = dash + 3, *sp = strchr(t, ' ');
			if (sp)
				*sp = '\0';
			snprintf(type, tlen, "%s", t);
		}
	}
	free(line);
	fclose(f);
	return found;
}

/* Something already mounted on the mountpoint: stacking a second mount
 * there would hide the first.  0, or -1 (said). */
static int check_not_mounted(const char *mp)
{
	char *abs = realpath(mp, NULL), type[64];
	int r;

	if (!abs)
		return 0;               /* said by the caller's stat */
	r = find_mount(abs, type, sizeof(type));
	if (r > 0) {
		if (!strcmp(type, "fuse.raidimg"))
			msg("%s: raidimg is already mounted there (status in %s/status); unmount it first: "
			    "fusermount3 -u %s", mp, mp, mp);
		else
			msg("%s: already a mount point (%s): a mount over it would hide it; unmount it first or "
			    "choose another mountpoint", mp, type);
	}
	free(abs);
	return r > 0 ? -1 : 0;
}

/* The first entry of directory path (besides . and ..) into name; the
 * number of entries (counted up to 1000), or -1 when it cannot be read. */
static int dir_entries(const char *path, char *name, size_t len)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while (n < 1000 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!n++)
			snprintf(name, len, "%s", e->d_name);
	}
	closedir(d);
	return n;
}

/* The md superblock on a regular file, if it holds one: 0 with *mm, else
 * -errno. */
static int probe_file(const char *path, struct member_meta *mm)
{
	struct source *src = NULL;
	char err[512];
	int ret = source_open(path, SOURCE_READ, &src, err, sizeof(err));

	if (ret)
		return ret;
	ret = metadata_probe(src, mm, err, sizeof(err));
	source_close(src);
	return ret;
}

/* A mount never covers anything by surprise: a directory must be empty and
 * a regular file empty (it becomes the image), unless --nonempty.  A file
 * holding an md superblock is most likely a member image given as the last
 * argument by mistake: said so.  0 or -1 (said). */
static int check_empty(const struct mount_args *ma, const struct stat *st)
{
	const char *mp = ma->mountpoint;
	char first[256] = "", uuid[40], rb[16];
	struct member_meta mm;
	int n;

	if (S_ISDIR(st->st_mode)) {
		n = dir_entries(mp, first, sizeof(first));
		if (n < 0) {
			msg("%s: cannot read the directory: %s", mp, strerror(errno));
			return -1;
		}
		if (n && !ma->nonempty) {
			msg("%s: the directory is not empty (%s%d entr%s, e.g. '%s'): the mount would hide them; give "
			    "an empty directory, or --nonempty to mount over them", mp, n >= 1000 ? "at least " : "",
			    n, n == 1 ? "y" : "ies", first);
			return -1;
		}
		return 0;
	}
	if (!st->st_size || ma->nonempty)
		return 0;
	if (!probe_file(mp, &mm)) {
		meta_uuid_format(mm.set_uuid, uuid);
		snprintf(rb, sizeof(rb), "%d", mm.role);
		msg("%s: the mountpoint holds an md %s superblock (array %s, role %s): a member image? The mount "
		    "would hide it.  Give the member images first and then the mountpoint (an empty directory "
		    "or an empty file)", mp, mm.format, uuid, mm.role >= 0 ? rb : "spare or faulty");
		return -1;
	}
	msg("%s: the mountpoint is a file of %" PRIu64 " bytes: the mount would hide its contents; give an "
	    "empty directory or an empty file, or --nonempty to mount over it", mp, (uint64_t)st->st_size);
	return -1;
}

/* The mountpoint, before anything is assembled (a typo there is cheaper to
 * report than after): what it is in *st.  0 or -1 (said). */
static int check_mountpoint(const struct mount_args *ma, struct stat *st)
{
	const char *mp = ma->mountpoint;

	if (stat(mp, st)) {
		if (errno == ENOENT)
			msg("%s: the mountpoint does not exist (create an empty directory, or a file to show "
			    "the image as)", mp);
		else if (errno == ENOTCONN)
			msg("%s: a FUSE mount whose server has ended is still there (%s); unmount it first: "
			    "fusermount3 -u %s", mp, strerror(errno), mp);
		else
			msg("%s: %s", mp, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode)) {
		msg("%s: the mountpoint must be a directory or a regular file", mp);
		return -1;
	}
	for (int i = 0; i < ma->nimages; i++) {
		struct stat ms;

		if (!stat(ma->images[i], &ms) && ms.st_dev == st->st_dev && ms.st_ino == st->st_ino) {
			msg("%s: the mountpoint is one of the member images", mp);
			return -1;
		}
	}
	if (check_not_mounted(mp) || check_empty(ma, st))
		return -1;
	if (ma->scrub_opts && !S_ISDIR(st->st_mode)) {
		msg("%s: --allow-repair, --scrub-log, --speed-limit-* and --latency-target are for the scrub's "
		    "control files, which need a directory as the mountpoint", mp);
		return -1;
	}
	return 0;
}

/* Assemble, build the file system and serve it (in a daemon unless
 * --foreground).  An exit status. */
static int run_mount(struct mount_args *ma, const struct stat *st)
{
	struct array *a = NULL;
	struct fuse_fs *fs = NULL;
	struct mount_scrub *worker = NULL;
	struct overlay *ov = NULL;
	char *default_name = NULL, *mnt = NULL;
	const char *name = ma->name;
	char err[ERR_MAX];
	bool ov_created = false;
	int ret = EXIT_ERR;

	if (ma->so.allow_repair)
		ma->aa.ao.open_flags = SOURCE_WRITE;    /* asked for in so many words */
	mnt = realpath(ma->mountpoint, NULL);
	if (!mnt) {
		msg("%s: %s", ma->mountpoint, strerror(errno));
		goto out;
	}
	if (check_fuse_device())
		goto out;
	if (array_args_open(&ma->aa, ma->nimages, ma->images, &a))
		goto out;
	if (S_ISREG(st->st_mode) && st->st_size && a->has_meta) {
		struct member_meta mm;

		/* even with --nonempty: a member of this very array left out */
		if (!probe_file(ma->mountpoint, &mm) && !memcmp(mm.set_uuid, a->uuid, sizeof(a->uuid))) {
			msg("%s: the mountpoint is a member image of this array (role %d) left out of the members "
			    "given: the mount would hide it", ma->mountpoint, mm.role);
			goto out;
		}
	}
	if (absolutise_member_paths(a)) {
		msg("out of memory");
		goto out;
	}
	if (!name) {
		default_name = default_image_name(a);
		if (!default_name) {
			msg("out of memory");
			goto out;
		}
		name = default_name;
	}
	if (ma->overlay && open_overlay(ma->overlay, a, st, &ov, &ov_created))
		goto out;
	ma->fo.overlay = ov;
	ma->fo.mountpoint = mnt;
	ma->fo.image_name = name;
	if (fuse_fs_new(a, &ma->fo, &fs, err, sizeof(err))) {
		msg("%s", err);
		goto out;
	}
	if (!fuse_fs_is_file_mount(fs) && mount_scrub_attach(fs, a, &ma->so, &worker, err, sizeof(err))) {
		msg("%s", err);
		goto out;
	}
	if (ma->log) {
		/* appended to, never evidence (outfile.h) */
		struct outfile_opts oo = { .append = true };
		struct outfile lf;

		if (outfile_open(&lf, ma->log, &oo, err, sizeof(err))) {
			msg("--log: %s", err);
			goto out;
		}
		log_fd = lf.fd;
		lf.fd = -1;
		outfile_abort(&lf);
		if (ma->foreground)
			dup2(log_fd, STDERR_FILENO);
	}
	if (ma->foreground)
		ret = run_foreground(fs, a, mnt, name);
	else
		ret = run_daemon(fs, a, mnt, name);
out:
	if (ret != EXIT_OK && ov_created && overlay_unwritten(ov))
		overlay_remove(ov);         /* a mount that failed leaves no new overlay */
	fuse_fs_free(fs);
	overlay_close(ov);
	mount_scrub_free(worker);
	array_free(a);
	free(default_name);
	free(mnt);
	if (log_fd >= 0)
		close(log_fd);
	return ret;
}

int cmd_mount(int argc, char **argv)
{
	struct mount_args ma = {
		.fo = { .max_threads = 8 },
		.so = { .speed_min = SCRUB_DEFAULT_SPEED_MIN },
	};
	struct stat st;
	int ret = EXIT_ERR, r;

	array_args_init(&ma.aa);
	r = parse_args(argc, argv, &ma);
	if (r)
		ret = r > 0 ? EXIT_OK : EXIT_ERR;
	else if (!check_mountpoint(&ma, &st))
		ret = run_mount(&ma, &st);
	array_args_free(&ma.aa);
	return ret;
}
