/* test_zstd_seekable.c - unit tests for src/zstd_seekable.c and
 * src/source_zstd.c (libcheck).
 *
 *  - XXH64 against two independent references: the published value for the
 *    empty input, and the checksum libzstd itself stores at the end of a
 *    frame written with ZSTD_c_checksumFlag (the low 32 bits of XXH64 of
 *    the content), for many lengths around the algorithm's 32/8/4-byte steps;
 *  - the seek table parser on tables built by hand (valid, and each way of
 *    being invalid: reserved bits, frame limit, sizes that do not add up to
 *    the table's start, a wrong magic or size field, a frame over 1 GiB);
 *  - the writer: its output parsed back, every frame decompressed alone with
 *    plain ZSTD_decompress and compared with the input (1 and 3 threads,
 *    zero frames, a short last frame), and `zstd -d`-style whole decoding;
 *  - the source: random reads from 4 threads against the raw bytes with
 *    caches of 2 frames (private buffers), 12 frames (evictions, waits) and
 *    the default, and a corrupted frame read as -EIO.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "source.h"
#include "zstd_seekable.h"

#define REQUIRE(expr)							\
	do {								\
		if (!(expr))						\
			ck_abort_msg("%s:%d: failed: %s", __FILE__,	\
				     __LINE__, #expr);			\
	} while (0)

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* deterministic, moderately compressible bytes */
static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (i / 64) % 3 ? (uint8_t)(x >> 24) : (uint8_t)(i / 64);
	}
}

/* ---- XXH64 ---- */

START_TEST(test_xxh64_empty)
{
	REQUIRE(xxh64("", 0, 0) == 0xEF46DB3751D8E999ull);
}
END_TEST

START_TEST(test_xxh64_matches_libzstd)
{
	static const size_t lens[] = { 1, 3, 4, 5, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 65, 100, 1000, 4096, 65537 };
	uint8_t *in = malloc(65537), *out = malloc(ZSTD_compressBound(65537));
	ZSTD_CCtx *c = ZSTD_createCCtx();

	REQUIRE(in && out && c);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t n;

		fill(in, lens[i], (uint32_t)i);
		n = ZSTD_compress2(c, out, ZSTD_compressBound(65537), in, lens[i]);
		REQUIRE(!ZSTD_isError(n) && n > 4);
		ck_assert_msg(get32(out + n - 4) == (uint32_t)xxh64(in, lens[i], 0),
			      "length %zu: zstd's checksum %08x, ours %08x", lens[i], get32(out + n - 4),
			      (uint32_t)xxh64(in, lens[i], 0));
	}
	ZSTD_freeCCtx(c);
	free(in);
	free(out);
}
END_TEST

/* ---- the seek table parser ---- */

struct fake {
	uint8_t buf[4096];
	size_t table_bytes;
	uint64_t file_size;
};

/* A table for frames of the given compressed/decompressed sizes, placed
 * after sum(csize) bytes of data. */
static void fake_table(struct fake *f, int n, const uint32_t *cs, const uint32_t *ds, bool checksums)
{
	size_t esz = checksums ? 12 : 8;
	uint64_t data = 0;
	uint8_t *p = f->buf;

	put32(p, ZSEEK_SKIPPABLE_MAGIC);
	put32(p + 4, (uint32_t)(n * esz + 9));
	p += 8;
	for (int i = 0; i < n; i++, p += esz) {
		put32(p, cs[i]);
		put32(p + 4, ds[i]);
		if (checksums)
			put32(p + 8, 0x1234u + (uint32_t)i);
		data += cs[i];
	}
	put32(p, (uint32_t)n);
	p[4] = checksums ? 0x80 : 0;
	put32(p + 5, ZSEEK_FOOTER_MAGIC);
	f->table_bytes = (size_t)(p + 9 - f->buf);
	f->file_size = data + f->table_bytes;
}

static int fake_parse(const struct fake *f, struct zseek_table *t, char *err)
{
	uint64_t tb = 0;
	int ret = zseek_footer_parse(f->buf + f->table_bytes - 9, f->file_size, &tb, err, 256);

	if (ret)
		return ret;
	REQUIRE(tb == f->table_bytes);
	return zseek_table_parse(f->buf, f->table_bytes, f->file_size, t, err, 256);
}

START_TEST(test_table_valid)
{
	static const uint32_t cs[] = { 100, 50, 13, 77 }, ds[] = { 4096, 0, 4096, 1000 };
	struct zseek_table t;
	struct fake f;
	char err[256] = "";

	fake_table(&f, 4, cs, ds, true);
	ck_assert_msg(fake_parse(&f, &t, err) == 0, "%s", err);
	REQUIRE(t.nframes == 4 && t.has_checksums);
	REQUIRE(t.table_off == 240 && t.data_bytes == 9192 && t.max_dsize == 4096);
	REQUIRE(t.frames[2].coff == 150 && t.frames[2].doff == 4096 && t.frames[3].checksum == 0x1237);
	/* the frame with 0 bytes is never the one found */
	REQUIRE(zseek_find_frame(&t, 0) == 0);
	REQUIRE(zseek_find_frame(&t, 4095) == 0);
	REQUIRE(zseek_find_frame(&t, 4096) == 2);
	REQUIRE(zseek_find_frame(&t, 8191) == 2);
	REQUIRE(zseek_find_frame(&t, 8192) == 3);
	REQUIRE(zseek_find_frame(&t, 9191) == 3);
	zseek_table_free(&t);

	fake_table(&f, 4, cs, ds, false);
	ck_assert_msg(fake_parse(&f, &t, err) == 0, "%s", err);
	REQUIRE(!t.has_checksums && t.data_bytes == 9192);
	zseek_table_free(&t);

	fake_table(&f, 0, cs, ds, true);     /* an empty image */
	ck_assert_msg(fake_parse(&f, &t, err) == 0, "%s", err);
	REQUIRE(t.nframes == 0 && t.data_bytes == 0 && t.table_off == 0);
	zseek_table_free(&t);
}
END_TEST

START_TEST(test_table_invalid)
{
	static const uint32_t cs[] = { 100, 50 }, ds[] = { 4096, 4096 };
	struct zseek_table t;
	struct fake f;
	char err[256];

	/* no footer magic: not the seekable format */
	fake_table(&f, 2, cs, ds, true);
	f.buf[f.table_bytes - 1] ^= 1;
	REQUIRE(fake_parse(&f, &t, err) == -ENOMSG);

	/* reserved descriptor bits */
	fake_table(&f, 2, cs, ds, true);
	f.buf[f.table_bytes - 5] |= 0x10;
	REQUIRE(fake_parse(&f, &t, err) == -EINVAL && strstr(err, "reserved"));

	/* more frames than the format allows */
	fake_table(&f, 2, cs, ds, true);
	put32(f.buf + f.table_bytes - 9, ZSEEK_MAX_FRAMES + 1);
	REQUIRE(fake_parse(&f, &t, err) == -EINVAL && strstr(err, "limit"));

	/* a frame count whose table does not fit in the file */
	fake_table(&f, 2, cs, ds, true);
	put32(f.buf + f.table_bytes - 9, 1000);
	REQUIRE(fake_parse(&f, &t, err) == -EINVAL && strstr(err, "truncated"));

	/* compressed sizes that do not add up to the table's start */
	fake_table(&f, 2, cs, ds, true);
	f.file_size += 1;        /* one byte of data more than the frames hold */
	REQUIRE(fake_parse(&f, &t, err) == -EINVAL && strstr(err, "add up"));
	fake_table(&f, 2, cs, ds, true);
	f.file_size -= 1;
	REQUIRE(fake_parse(&f, &t, err) == -EINVAL && strstr(err, "add up"));

	/* the skippable frame's magic and size field */
	fake_table(&f, 2, cs, ds, true);
	f.buf[0] ^= 0xff;
	REQUIRE(fake_parse(&f, &t, err) == -EINVAL && strstr(err, "magic"));
	fake_table(&f, 2, cs, ds, true);
	put32(f.buf + 4, 12);
	REQUIRE(fake_parse(&f, &t, err) == -EINVAL && strstr(err, "size field"));

	/* a frame of more than 1 GiB, and one of 0 compressed bytes */
	{
		uint32_t big[] = { 4096, 0x40000001u }, zero[] = { 0, 10 };

		fake_table(&f, 2, cs, big, true);
		REQUIRE(fake_parse(&f, &t, err) == -EINVAL && strstr(err, "1 GiB"));
		fake_table(&f, 2, zero, ds, true);
		REQUIRE(fake_parse(&f, &t, err) == -EINVAL && strstr(err, "compressed size 0"));
	}
}
END_TEST

/* ---- the writer ---- */

static char tmpdir[] = "/tmp/test_zstd_seekable.XXXXXX";

static char *tmp_path(const char *name)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

/* Write len bytes of data as a seekable file at path; returns its size. */
static uint64_t write_seekable(const char *path, const uint8_t *data, size_t len, uint32_t frame, int threads,
			      size_t piece)
{
	struct zseek_wopts o = { .level = 3, .frame_bytes = frame, .nthreads = threads };
	struct zseek_writer *w;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint64_t out;

	REQUIRE(fd >= 0);
	REQUIRE(zseek_writer_new(fd, &o, &w) == 0);
	for (size_t off = 0; off < len; off += piece)
		REQUIRE(zseek_writer_write(w, data + off, len - off < piece ? len - off : piece) == 0);
	REQUIRE(zseek_writer_finish(w) == 0);
	out = zseek_writer_out_bytes(w);
	zseek_writer_free(w);
	REQUIRE((uint64_t)lseek(fd, 0, SEEK_END) == out);
	close(fd);
	return out;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	REQUIRE(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	REQUIRE(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Parse the file's table and decompress every frame alone. */
static void check_frames(const char *path, const uint8_t *data, size_t len, uint32_t frame)
{
	struct zseek_table t;
	size_t flen;
	uint8_t *file = read_file(path, &flen), *out = malloc(frame);
	char err[256] = "";
	int fd = open(path, O_RDONLY);

	ck_assert_msg(zseek_table_read(fd, flen, &t, err, sizeof(err)) == 0, "%s", err);
	REQUIRE(t.has_checksums && t.data_bytes == len);
	REQUIRE(t.nframes == (len + frame - 1) / frame);
	for (uint32_t i = 0; i < t.nframes; i++) {
		const struct zseek_frame *fr = &t.frames[i];
		size_t n = ZSTD_decompress(out, frame, file + fr->coff, fr->csize);

		REQUIRE(!ZSTD_isError(n) && n == fr->dsize);
		REQUIRE(fr->doff == (uint64_t)i * frame);
		REQUIRE(!memcmp(out, data + fr->doff, n));
		REQUIRE(fr->checksum == (uint32_t)xxh64(data + fr->doff, n, 0));
	}
	/* the file as a whole is ordinary zstd (the table is skippable) */
	{
		uint8_t *all = malloc(len + 1);
		size_t n = ZSTD_decompress(all, len + 1, file, flen);

		REQUIRE(!ZSTD_isError(n) && n == len && !memcmp(all, data, len));
		free(all);
	}
	zseek_table_free(&t);
	close(fd);
	free(out);
	free(file);
}

START_TEST(test_writer_roundtrip)
{
	size_t len = 1000000;
	uint8_t *data = malloc(len);
	uint64_t a, b;

	fill(data, len, 7);
	memset(data + 65536, 0, 3 * 65536);        /* whole zero frames */
	a = write_seekable(tmp_path("a.zst"), data, len, 65536, 1, 12345);
	check_frames(tmp_path("a.zst"), data, len, 65536);
	b = write_seekable(tmp_path("b.zst"), data, len, 65536, 3, 1 << 20);
	check_frames(tmp_path("b.zst"), data, len, 65536);
	REQUIRE(a == b);            /* threads do not change the output */
	/* exactly one frame, and an empty image */
	write_seekable(tmp_path("c.zst"), data, 4096, 4096, 2, 4096);
	check_frames(tmp_path("c.zst"), data, 4096, 4096);
	write_seekable(tmp_path("d.zst"), data, 0, 4096, 2, 4096);
	check_frames(tmp_path("d.zst"), data, 0, 4096);
	free(data);
}
END_TEST

START_TEST(test_zero_frames_small)
{
	size_t len = 8 << 20;
	uint8_t *data = calloc(1, len);
	uint64_t n = write_seekable(tmp_path("z.zst"), data, len, 1 << 20, 2, 1 << 20);

	/* 8 frames of 1 MiB of zeros: a few dozen bytes each */
	ck_assert_msg(n < 8 * 100 + 200, "8 MiB of zeros took %llu bytes", (unsigned long long)n);
	check_frames(tmp_path("z.zst"), data, len, 1 << 20);
	free(data);
}
END_TEST

/* ---- the source ---- */

struct reader {
	struct source *s;
	const uint8_t *data;
	size_t len;
	unsigned seed;
	int bad;
};

static void *reader_thread(void *arg)
{
	struct reader *r = arg;
	uint8_t *buf = malloc(200000);

	for (int i = 0; i < 400; i++) {
		size_t len = (size_t)(rand_r(&r->seed) % 200000) + 1;
		uint64_t off = (uint64_t)rand_r(&r->seed) % (r->len - len + 1);
		struct iovec iov[3];

		if (i % 2) {
			if (source_pread(r->s, buf, len, off) || memcmp(buf, r->data + off, len))
				r->bad++;
			continue;
		}
		/* vectored: three pieces */
		iov[0].iov_base = buf;
		iov[0].iov_len = len / 3;
		iov[1].iov_base = buf + len / 3;
		iov[1].iov_len = 0;
		iov[2].iov_base = buf + len / 3;
		iov[2].iov_len = len - len / 3;
		if (source_preadv(r->s, iov, 3, off) || memcmp(buf, r->data + off, len))
			r->bad++;
	}
	free(buf);
	return NULL;
}

/* cache sizes: 2 frames (readers fall back to private buffers), 12 frames
 * in 3 shards (evictions, waits), everything (64 MiB default, 48 shards) */
static const char *const cache_sizes[] = { "32K", "192K", NULL };

START_TEST(test_source_concurrent)
{
	size_t len = 3 << 20;
	uint8_t *data = malloc(len);
	struct reader r[4];
	pthread_t t[4];
	struct source *s;
	char err[512] = "";

	fill(data, len, 3);
	write_seekable(tmp_path("s.zst"), data, len, 16384, 2, 1 << 20);
	if (cache_sizes[_i])
		setenv("RAIDIMG_ZSTD_CACHE", cache_sizes[_i], 1);
	ck_assert_msg(source_open(tmp_path("s.zst"), SOURCE_READ, &s, err, sizeof(err)) == 0, "%s", err);
	unsetenv("RAIDIMG_ZSTD_CACHE");
	REQUIRE(!strcmp(s->ops->kind, "zstd") && s->size == len);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct reader){ s, data, len, (unsigned)i + 1, 0 };
		REQUIRE(pthread_create(&t[i], NULL, reader_thread, &r[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_msg(r[i].bad == 0, "thread %d: %d bad reads", i, r[i].bad);
	}
	/* past the end is an error, as for a raw image; writes are refused */
	{
		uint8_t b[2];

		REQUIRE(source_pread(s, b, 2, len - 1) == -EIO);
		REQUIRE(source_pread(s, b, 1, len - 1) == 0 && b[0] == data[len - 1]);
		REQUIRE(source_pwrite(s, b, 1, 0) == -EROFS);
	}
	source_close(s);
	free(data);
}
END_TEST

START_TEST(test_source_bad_frame)
{
	size_t len = 256 << 10, flen;
	uint8_t *data = malloc(len), *file, buf[100];
	struct zseek_table t;
	struct source *s;
	char err[512] = "";
	int fd;

	fill(data, len, 9);
	write_seekable(tmp_path("bad.zst"), data, len, 65536, 1, len);
	file = read_file(tmp_path("bad.zst"), &flen);
	fd = open(tmp_path("bad.zst"), O_RDONLY);
	REQUIRE(zseek_table_read(fd, flen, &t, err, sizeof(err)) == 0);
	close(fd);
	/* frame 2's checksum in the seek table no longer matches */
	file[t.table_off + 8 + 2 * 12 + 8] ^= 1;
	fd = open(tmp_path("bad.zst"), O_WRONLY | O_TRUNC);
	REQUIRE(write(fd, file, flen) == (ssize_t)flen);
	close(fd);
	REQUIRE(source_open(tmp_path("bad.zst"), SOURCE_READ, &s, err, sizeof(err)) == 0);
	REQUIRE(source_pread(s, buf, sizeof(buf), 65536 + 10) == 0);           /* frame 1 */
	REQUIRE(source_pread(s, buf, sizeof(buf), 2 * 65536 + 10) == -EIO);    /* frame 2 */
	REQUIRE(source_pread(s, buf, sizeof(buf), 2 * 65536 + 20) == -EIO);    /* cached failure */
	REQUIRE(source_pread(s, buf, sizeof(buf), 3 * 65536) == 0);            /* frame 3 */
	source_close(s);
	/* opening for writing is refused */
	REQUIRE(source_open_zstd(tmp_path("bad.zst"), SOURCE_WRITE, &s, err, sizeof(err)) == -EROFS);
	zseek_table_free(&t);
	free(file);
	free(data);
}
END_TEST

START_TEST(test_walk_plain)
{
	size_t len = 300000, n, flen;
	uint8_t *data = malloc(len), *z = malloc(ZSTD_compressBound(len) * 2);
	uint64_t nframes, where;
	int fd;

	fill(data, len, 5);
	n = ZSTD_compress(z, ZSTD_compressBound(len), data, len, 3);
	flen = n + ZSTD_compress(z + n, ZSTD_compressBound(len), data, 1000, 3);
	fd = open(tmp_path("plain.zst"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(write(fd, z, flen) == (ssize_t)flen);
	close(fd);
	fd = open(tmp_path("plain.zst"), O_RDONLY);
	REQUIRE(zseek_walk_frames(fd, flen, 1000, &nframes, &where) == 0 && nframes == 2);
	REQUIRE(zseek_walk_frames(fd, flen - 1, 1000, &nframes, &where) == -EPIPE && nframes == 1 && where == n);
	REQUIRE(zseek_walk_frames(fd, n - 100, 1000, &nframes, &where) == -EPIPE && nframes == 0);
	close(fd);
	free(z);
	free(data);
}
END_TEST

static Suite *zstd_suite(void)
{
	Suite *s = suite_create("zstd_seekable");
	TCase *tc;

	tc = tcase_create("xxh64");
	tcase_add_test(tc, test_xxh64_empty);
	tcase_add_test(tc, test_xxh64_matches_libzstd);
	suite_add_tcase(s, tc);

	tc = tcase_create("table");
	tcase_add_test(tc, test_table_valid);
	tcase_add_test(tc, test_table_invalid);
	suite_add_tcase(s, tc);

	tc = tcase_create("writer");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_writer_roundtrip);
	tcase_add_test(tc, test_zero_frames_small);
	tcase_add_test(tc, test_walk_plain);
	suite_add_tcase(s, tc);

	tc = tcase_create("source");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_source_concurrent, 0, 3);
	tcase_add_test(tc, test_source_bad_frame);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;
	char cmd[300];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	sr = srunner_create(zstd_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
