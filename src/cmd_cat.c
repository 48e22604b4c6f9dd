/* cmd_cat.c - raidimg cat: stream the assembled array out.
 *
 * Worker threads assemble consecutive segments of the array in parallel
 * (each a whole number of stripes, so every member sees large reads) and
 * the main thread writes them out in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

struct seg_slot {
	uint8_t *buf;
	uint64_t seg;          /* segment number held, when ready */
	bool ready;
	int ret;
	uint64_t bad_off;
};

struct cat_job {
	struct array *a;
	uint64_t start, end;   /* array range */
	uint64_t seg_bytes;
	uint64_t nseg;
	int nslots;
	struct seg_slot *slots;
	uint64_t next_seg;     /* next segment a worker takes */
	uint64_t written;      /* segments written so far */
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void seg_range(const struct cat_job *j, uint64_t seg, uint64_t *off, size_t *len)
{
	uint64_t o = j->start + seg * j->seg_bytes;
	uint64_t e = o + j->seg_bytes < j->end ? o + j->seg_bytes : j->end;

	/* the first segment ends on a stripe-multiple boundary (see cmd_cat) */
	*off = o;
	*len = (size_t)(e - o);
}

static void *cat_worker(void *arg)
{
	struct cat_job *j = arg;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		uint64_t seg;
		struct seg_slot *sl;
		uint64_t off;
		size_t len;
		int ret;

		if (j->stop || j->next_seg >= j->nseg)
			break;
		seg = j->next_seg++;
		/* wait until the slot's previous segment has been written */
		while (!j->stop && seg >= j->written + (uint64_t)j->nslots)
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->stop)
			break;
		sl = &j->slots[seg % (uint64_t)j->nslots];
		pthread_mutex_unlock(&j->lock);

		seg_range(j, seg, &off, &len);
		ret = array_read(j->a, sl->buf, len, off, &sl->bad_off);

		pthread_mutex_lock(&j->lock);
		sl->seg = seg;
		sl->ret = ret;
		sl->ready = true;
		pthread_cond_broadcast(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg cat [OPTIONS] [ARRAY OPTIONS] MEMBER...\n\n"
		   "Write the assembled array's bytes to standard output or a file.  Missing or\n"
		   "unreadable members are rebuilt from parity; if that is impossible the command\n"
		   "stops with the array offset that could not be read.\n\n"
		   "  -o, --output FILE   write to FILE (created or truncated) instead of stdout\n"
		   "  --offset SIZE       start at this array byte offset (default 0)\n"
		   "  --length SIZE       copy this many bytes (default: to the end)\n"
		   "  --threads N         reader threads (default 2)\n"
		   "  --stats             print read statistics as JSON on stderr at the end\n"
		   "  -h, --help          this text\n\n" ARRAY_OPTIONS_HELP
		   "\nExit status: 0 all bytes written, 2 error.\n");
}

static void print_stats(const struct array *a, double secs)
{
	uint64_t req = atomic_load(&a->member_requests), rb = atomic_load(&a->member_request_bytes);

	fprintf(stderr, "{\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"member_requests\":%" PRIu64
		",\"member_request_bytes\":%" PRIu64 ",\"avg_member_request_bytes\":%.0f"
		",\"stripes_rebuilt\":%" PRIu64 ",\"read_errors_recovered\":%" PRIu64 "}\n",
		atomic_load(&a->bytes_served), secs, req, rb, req ? (double)rb / (double)req : 0.0,
		atomic_load(&a->stripes_rebuilt), atomic_load(&a->read_errors_recovered));
}

int cmd_cat(int argc, char **argv)
{
	enum { OPT_OFFSET = 0x2001, OPT_LENGTH, OPT_THREADS, OPT_STATS };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "length", required_argument, NULL, OPT_LENGTH },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "help", no_argument, NULL, 'h' },
		ARRAY_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct array_args aa;
	struct array *a = NULL;
	struct cat_job j;
	pthread_t *tids = NULL;
	const char *outpath = NULL;
	uint64_t offset = 0, length = UINT64_MAX, stripe;
	long long nthreads = 2;
	bool stats = false, have_offset = false;
	int opt, ret = EXIT_ERR, fd = -1, started = 0;
	uint64_t t0;

	memset(&j, 0, sizeof(j));
	array_args_init(&aa);
	while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		int r = array_args_opt(&aa, opt, optarg);
		if (r < 0)
			goto out;
		if (r)
			continue;
		switch (opt) {
		case 'o': outpath = optarg; break;
		case OPT_OFFSET:
			if (parse_size(optarg, &offset)) {
				msg("--offset %s: not a size", optarg);
				goto out;
			}
			have_offset = true;
			break;
		case OPT_LENGTH:
			if (parse_size(optarg, &length)) {
				msg("--length %s: not a size", optarg);
				goto out;
			}
			break;
		case OPT_THREADS:
			if (parse_int(optarg, 1, 64, &nthreads)) {
				msg("--threads %s: give a number from 1 to 64", optarg);
				goto out;
			}
			break;
		case OPT_STATS: stats = true; break;
		case 'h': usage(stdout); ret = EXIT_OK; goto out;
		default: usage(stderr); goto out;
		}
	}
	(void)have_offset;
	if (optind >= argc) {
		usage(stderr);
		goto out;
	}
	if (array_args_open(&aa, argc - optind, argv + optind, &a))
		goto out;
	if (offset > a->array_bytes) {
		msg("--offset %" PRIu64 " is past the end of the array (%" PRIu64 " bytes)", offset, a->array_bytes);
		goto out;
	}
	if (length > a->array_bytes - offset)
		length = a->array_bytes - offset;
	if (outpath) {
		for (int i = 0; i < aa.npaths; i++) {
			if (same_file(outpath, aa.paths[i])) {
				msg("%s: the output is one of the member images; refusing to overwrite evidence", outpath);
				goto out;
			}
		}
		fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			msg("%s: cannot create: %s", outpath, strerror(errno));
			goto out;
		}
	} else {
		fd = STDOUT_FILENO;
	}

	/* segments: whole stripes, about 8 MiB */
	stripe = (uint64_t)a->geom.chunk_bytes * (uint64_t)a->k;
	j.seg_bytes = (8u << 20) / stripe * stripe;
	if (j.seg_bytes == 0)
		j.seg_bytes = stripe;
	j.a = a;
	j.start = offset;
	j.end = offset + length;
	j.nseg = length ? (length + j.seg_bytes - 1) / j.seg_bytes : 0;
	j.nslots = (int)nthreads * 2;
	pthread_mutex_init(&j.lock, NULL);
	pthread_cond_init(&j.cond, NULL);
	j.slots = calloc((size_t)j.nslots, sizeof(*j.slots));
	tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!j.slots || !tids)
		goto out_threads;
	for (int i = 0; i < j.nslots; i++) {
		j.slots[i].buf = xaligned_alloc(j.seg_bytes);
		if (!j.slots[i].buf) {
			msg("out of memory");
			goto out_threads;
		}
	}
	t0 = now_ns();
	for (; started < nthreads; started++)
		if (pthread_create(&tids[started], NULL, cat_worker, &j))
			break;
	if (!started) {
		msg("cannot start reader threads");
		goto out_threads;
	}
	ret = EXIT_OK;
	for (uint64_t seg = 0; seg < j.nseg; seg++) {
		struct seg_slot *sl = &j.slots[seg % (uint64_t)j.nslots];
		uint64_t off;
		size_t len;
		int wr;

		pthread_mutex_lock(&j.lock);
		while (!(sl->ready && sl->seg == seg))
			pthread_cond_wait(&j.cond, &j.lock);
		pthread_mutex_unlock(&j.lock);
		seg_range(&j, seg, &off, &len);
		if (sl->ret) {
			if (sl->ret == -EIO)
				msg("array offset %" PRIu64 ": cannot be read: too many members missing or failing "
				    "there to rebuild it from parity", sl->bad_off);
			else
				msg("reading the array at offset %" PRIu64 ": %s", off, strerror(-sl->ret));
			ret = EXIT_ERR;
			break;
		}
		wr = write_all(fd, sl->buf, len);
		if (wr) {
			msg("%s: write failed: %s", outpath ? outpath : "standard output", strerror(-wr));
			ret = EXIT_ERR;
			break;
		}
		pthread_mutex_lock(&j.lock);
		sl->ready = false;
		j.written = seg + 1;
		pthread_cond_broadcast(&j.cond);
		pthread_mutex_unlock(&j.lock);
	}
	if (ret == EXIT_OK && outpath && fd >= 0 && close(fd)) {
		msg("%s: %s", outpath, strerror(errno));
		ret = EXIT_ERR;
	}
	if (outpath)
		fd = -1;
	if (stats)
		print_stats(a, (double)(now_ns() - t0) / 1e9);
	if (ret == EXIT_OK && atomic_load(&a->stripes_rebuilt))
		fprintf(stderr, "%s: %" PRIu64 " stripes were rebuilt from parity\n", prog_name,
			atomic_load(&a->stripes_rebuilt));
out_threads:
	pthread_mutex_lock(&j.lock);
	j.stop = true;
	pthread_cond_broadcast(&j.cond);
	pthread_mutex_unlock(&j.lock);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (int i = 0; j.slots && i < j.nslots; i++)
		free(j.slots[i].buf);
	free(j.slots);
	free(tids);
	pthread_mutex_destroy(&j.lock);
	pthread_cond_destroy(&j.cond);
out:
	if (fd >= 0 && fd != STDOUT_FILENO)
		close(fd);
	array_free(a);
	array_args_free(&aa);
	return ret;
}
