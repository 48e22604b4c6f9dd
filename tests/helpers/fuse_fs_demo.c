/* fuse_fs_demo.c - exercises the extension points of fuse_fs.h the way a
 * scrub engine will use them (tests/integration/mount_extension.sh):
 *   - a writable control file next to the image (fuse_fs_add_file with a
 *     write handler): what is written is kept; reading shows the last line
 *     and how many writes arrived;
 *   - a worker thread (fuse_fs_set_workers) that runs while mounted, sees
 *     the control word, and is stopped and joined at unmount.
 * Usage: fuse_fs_demo MEMBER... MOUNTPOINT   (foreground; ends when
 * unmounted or signalled).  Prints "worker started", "ready", and
 * "worker stopped (control=WORD)" on stderr.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "fuse_fs.h"
#include "util.h"

struct demo {
	pthread_mutex_t lock;
	char word[64];               /* the last line written to control */
	unsigned writes;
	pthread_t worker;
	atomic_bool stop;
	int starts, stops;
	unsigned long ticks;
};

static uint64_t control_size(void *priv)
{
	(void)priv;
	return 0;
}

static int control_open(void *priv, int flags, uint64_t *fh)
{
	(void)priv;
	(void)flags;
	*fh = 0;
	return 0;
}

static ssize_t control_read(void *priv, uint64_t fh, char *buf, size_t size, off_t off)
{
	struct demo *d = priv;
	char text[128];
	size_t n;

	(void)fh;
	pthread_mutex_lock(&d->lock);
	n = (size_t)snprintf(text, sizeof(text), "%s writes=%u\n", d->word[0] ? d->word : "idle", d->writes);
	pthread_mutex_unlock(&d->lock);
	if (off < 0 || (size_t)off >= n)
		return 0;
	if (size > n - (size_t)off)
		size = n - (size_t)off;
	memcpy(buf, text + off, size);
	return (ssize_t)size;
}

static ssize_t control_write(void *priv, uint64_t fh, const char *buf, size_t size, off_t off)
{
	struct demo *d = priv;
	size_t n = size < sizeof(d->word) - 1 ? size : sizeof(d->word) - 1;

	(void)fh;
	(void)off;
	pthread_mutex_lock(&d->lock);
	memcpy(d->word, buf, n);
	d->word[n] = '\0';
	d->word[strcspn(d->word, "\n")] = '\0';
	d->writes++;
	pthread_mutex_unlock(&d->lock);
	return (ssize_t)size;
}

static const struct fuse_fs_file_ops control_ops = {
	.size = control_size,
	.open = control_open,
	.read = control_read,
	.write = control_write,
};

static void *worker_main(void *arg)
{
	struct demo *d = arg;

	fuse_fs_block_signals();
	while (!atomic_load(&d->stop)) {
		d->ticks++;
		usleep(1000);
	}
	return NULL;
}

static int worker_start(void *arg)
{
	struct demo *d = arg;

	d->starts++;
	if (pthread_create(&d->worker, NULL, worker_main, d))
		return -EAGAIN;
	fprintf(stderr, "worker started\n");
	return 0;
}

static void worker_stop(void *arg)
{
	struct demo *d = arg;

	atomic_store(&d->stop, true);
	pthread_join(d->worker, NULL);
	d->stops++;
	fprintf(stderr, "worker stopped (control=%s)\n", d->word);
}

static void on_ready(void *arg, int err, const char *text)
{
	(void)arg;
	fprintf(stderr, err ? "not ready: %s\n" : "ready%s\n", text);
}

int main(int argc, char **argv)
{
	struct assemble_opts ao = { .open_flags = SOURCE_READ };
	struct fuse_fs_opts fo = { .image_name = "demo.img", .max_threads = 4 };
	struct fuse_fs_workers w = { worker_start, worker_stop, NULL };
	struct demo d = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct array *a = NULL;
	struct fuse_fs *fs = NULL;
	char err[1024];
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: fuse_fs_demo MEMBER... MOUNTPOINT\n");
		return 2;
	}
	ao.g.paths = (const char **)argv + 1;
	ao.g.npaths = argc - 2;
	if (array_assemble(&ao, &a, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	fo.mountpoint = argv[argc - 1];
	if (fuse_fs_new(a, &fo, &fs, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	ret = fuse_fs_add_file(fs, "control", 0644, &control_ops, &d);
	if (ret || fuse_fs_add_file(fs, "control", 0644, &control_ops, &d) != -EEXIST ||
	    fuse_fs_add_file(fs, "status", 0444, &control_ops, &d) != -EEXIST ||
	    fuse_fs_add_file(fs, "demo.img", 0444, &control_ops, &d) != -EEXIST ||
	    fuse_fs_add_file(fs, "a/b", 0444, &control_ops, &d) != -EINVAL) {
		fprintf(stderr, "fuse_fs_add_file does not keep names unique and valid\n");
		return 2;
	}
	w.arg = &d;
	fuse_fs_set_workers(fs, &w);
	if (fuse_fs_mount(fs, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	ret = fuse_fs_run(fs, on_ready, NULL);
	fuse_fs_free(fs);
	array_free(a);
	fprintf(stderr, "run returned %d; worker starts=%d stops=%d ticks>0=%d\n", ret, d.starts, d.stops,
		d.ticks > 0);
	return ret || d.starts != 1 || d.stops != 1 ? 1 : 0;
}
