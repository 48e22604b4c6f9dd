/* bench_zstd_read.c - read throughput of an assembled array (for
 * scripts/bench_zstd): the members may be raw or zstd seekable images.
 *
 *   bench_zstd_read rand SIZE SECONDS THREADS MEMBER...
 *       THREADS threads read SIZE bytes at random SIZE-aligned offsets of
 *       the array (array_read) for SECONDS; prints reads/s and MB/s.  With
 *       WARM=1 in the environment the array is read once first (untimed),
 *       so that the frames that fit are in the zstd sources' caches.
 *   bench_zstd_read seq 0 0 THREADS MEMBER...
 *       the whole array once through the segment pipeline (as cat);
 *       prints MB/s.
 * Output: one line "MODE SIZE ops/s MB/s frames_decompressed MB_per_cpu_second"
 * (bytes read per second of user + system time of the process, a figure
 * that depends less on how busy the machine is than MB/s).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "array.h"
#include "pipeline.h"
#include "util.h"
#include "zstd_seekable.h"

struct job {
	struct array *a;
	uint64_t size, deadline;
	_Atomic uint64_t ops;
	_Atomic int errors;
	unsigned seed;
};

static void *rand_worker(void *arg)
{
	struct job *j = arg;
	uint8_t *buf = xaligned_alloc(j->size);
	unsigned seed = (unsigned)atomic_fetch_add(&j->ops, 0) + (unsigned)(uintptr_t)&seed;
	uint64_t slots = j->a->array_bytes / j->size;

	while (buf && now_ns() < j->deadline) {
		for (int i = 0; i < 16; i++) {
			uint64_t r = ((uint64_t)rand_r(&seed) << 31) ^ (uint64_t)rand_r(&seed);

			if (array_read(j->a, buf, j->size, (r % slots) * j->size, NULL))
				atomic_fetch_add(&j->errors, 1);
			atomic_fetch_add(&j->ops, 1);
		}
	}
	free(buf);
	return NULL;
}

/* user + system CPU seconds used so far */
static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static int seq_consume(void *ctx, int slot, const uint8_t *buf, size_t len, uint64_t off, int ret,
		       uint64_t bad_off)
{
	return ret;
}

static uint64_t frames(const struct array *a)
{
	uint64_t n = 0;

	for (int r = 0; r < a->geom.raid_disks; r++)
		if (a->members[r].src)
			n += source_zstd_frames_decompressed(a->members[r].src);
	return n;
}

int main(int argc, char **argv)
{
	struct assemble_opts ao = { .open_flags = SOURCE_READ };
	struct array *a = NULL;
	char err[1024] = "";
	uint64_t size, secs, t0, t1;
	double c0;
	int nthreads;

	if (argc < 6) {
		fprintf(stderr, "usage: %s rand|seq SIZE SECONDS THREADS MEMBER...\n", argv[0]);
		return 2;
	}
	if (parse_size(argv[2], &size) || parse_size(argv[3], &secs)) {
		fprintf(stderr, "bad SIZE or SECONDS\n");
		return 2;
	}
	nthreads = atoi(argv[4]);
	if (nthreads < 1 || nthreads > 64 ||
	    (ao.g.paths = (const char **)argv + 5, ao.g.npaths = argc - 5, array_assemble(&ao, &a, err, sizeof(err)))) {
		fprintf(stderr, "%s\n", err[0] ? err : "bad THREADS");
		return 2;
	}
	if (!strcmp(argv[1], "rand")) {
		struct job j = { .a = a, .size = size };
		struct pipeline warm = { .vol = array_volume(a), .start = 0, .length = a->array_bytes, .nthreads = nthreads,
					 .consume = seq_consume };
		uint64_t f0;
		pthread_t t[64];

		if (getenv("WARM") && pipeline_run(&warm))
			fprintf(stderr, "warm-up pass failed\n");
		f0 = frames(a);
		c0 = cpu_now();
		t0 = now_ns();
		j.deadline = t0 + secs * 1000000000ull;
		for (int i = 0; i < nthreads; i++)
			pthread_create(&t[i], NULL, rand_worker, &j);
		for (int i = 0; i < nthreads; i++)
			pthread_join(t[i], NULL);
		t1 = now_ns();
		printf("rand %" PRIu64 " %.0f %.1f %" PRIu64 " %.0f%s\n", size, (double)j.ops * 1e9 / (double)(t1 - t0),
		       (double)j.ops * (double)size * 1e3 / (double)(t1 - t0), frames(a) - f0,
		       (double)j.ops * (double)size / 1e6 / (cpu_now() - c0),
		       j.errors ? " ERRORS" : "");
	} else {
		struct pipeline pl = { .vol = array_volume(a), .start = 0, .length = a->array_bytes, .nthreads = nthreads,
				       .consume = seq_consume };
		int r;

		c0 = cpu_now();
		t0 = now_ns();
		r = pipeline_run(&pl);
		t1 = now_ns();
		printf("seq %" PRIu64 " %.2f %.1f %" PRIu64 " %.0f%s\n", a->array_bytes, 1e9 / (double)(t1 - t0),
		       (double)a->array_bytes * 1e3 / (double)(t1 - t0), frames(a),
		       (double)a->array_bytes / 1e6 / (cpu_now() - c0),
		       r ? " ERRORS" : "");
	}
	array_free(a);
	return 0;
}
