/* ewf_make.c - test helper (tests/integration/evidence_sources.sh): write RAW as an EWF (E01) image with libewf,
 * recording acquisition (read) errors for the given sector ranges and
 * storing zeros there, as an imager does for unreadable sectors.
 *   ewf_make RAW TARGET_BASE SEGMENT_BYTES COMPRESS(0|1) [first:count ...]
 * (This is only test-data generation; raidimg reads E01s, never writes them.) */
#include <libewf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

static int die(const char *what, libewf_error_t **e)
{
	fprintf(stderr, "%s: ", what);
	if (e && *e)
		libewf_error_fprint(*e, stderr);
	fprintf(stderr, "\n");
	return 1;
}

int main(int argc, char **argv)
{
	libewf_error_t *e = NULL;
	libewf_handle_t *h = NULL;
	struct stat st;
	char *names[1];
	static uint8_t buf[32768];
	int fd;

	if (argc < 5) {
		fprintf(stderr, "usage: ewf_make RAW TARGET_BASE SEGMENT_BYTES COMPRESS [first:count ...]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 1;
	names[0] = argv[2];
	if (libewf_handle_initialize(&h, &e) != 1 || libewf_handle_open(h, names, 1, LIBEWF_OPEN_WRITE, &e) != 1)
		return die("open", &e);
	if (libewf_handle_set_format(h, LIBEWF_FORMAT_ENCASE6, &e) != 1 ||
	    libewf_handle_set_media_size(h, (size64_t)st.st_size, &e) != 1 ||
	    libewf_handle_set_maximum_segment_size(h, (size64_t)strtoull(argv[3], NULL, 0), &e) != 1 ||
	    libewf_handle_set_compression_values(h, atoi(argv[4]) ? LIBEWF_COMPRESSION_FAST : LIBEWF_COMPRESSION_NONE, 0, &e) != 1)
		return die("settings", &e);
	const char *hv[][2] = { { "case_number", "case 44" }, { "evidence_number", "evid 9" },
				{ "examiner_name", "ewf_make" }, { "description", "with acquisition errors" },
				{ "notes", "sectors zeroed where listed" } };
	for (size_t i = 0; i < sizeof(hv) / sizeof(hv[0]); i++)
		if (libewf_handle_set_utf8_header_value(h, (const uint8_t *)hv[i][0], strlen(hv[i][0]),
							(const uint8_t *)hv[i][1], strlen(hv[i][1]), &e) != 1)
			return die("header", &e);
	for (off_t off = 0; off < st.st_size; off += (off_t)sizeof(buf)) {
		size_t n = (size_t)(st.st_size - off) < sizeof(buf) ? (size_t)(st.st_size - off) : sizeof(buf);

		if (pread(fd, buf, n, off) != (ssize_t)n)
			return 1;
		for (int a = 5; a < argc; a++) {   /* zero the "unreadable" sectors */
			unsigned long long first, count;

			if (sscanf(argv[a], "%llu:%llu", &first, &count) != 2)
				continue;
			for (unsigned long long sct = first; sct < first + count; sct++) {
				long long o = (long long)sct * 512 - off;
				if (o >= 0 && o < (long long)n)
					memset(buf + o, 0, 512);
			}
		}
		if (libewf_handle_write_buffer(h, buf, n, &e) != (ssize_t)n)
			return die("write", &e);
	}
	for (int a = 5; a < argc; a++) {
		unsigned long long first, count;

		if (sscanf(argv[a], "%llu:%llu", &first, &count) == 2 &&
		    libewf_handle_append_acquiry_error(h, first, count, &e) != 1)
			return die("acquiry error", &e);
	}
	if (libewf_handle_write_finalize(h, &e) < 0)
		return die("finalize", &e);
	libewf_handle_close(h, &e);
	libewf_handle_free(&h, &e);
	close(fd);
	return 0;
}
