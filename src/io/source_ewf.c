/* source_ewf.c - EWF (EnCase E01) member images through libewf 20140813
 * (source.h: source_open_ewf; source_ewf.h: what the file says).
 *
 * Reads: 0, or -EIO for a chunk whose stored checksum does not match its
 * data, that does not decompress or lies in a missing segment (said once
 * on stderr): the array rebuilds it from parity like any read error.  The
 * sectors the imager recorded as acquisition errors read as the zeros it
 * stored; they are the source's untrusted ranges (UNTRUSTED_EWF_ACQUIRY).
 *
 * Threads: the source keeps a pool of handles (each opened on every
 * segment, with its own chunk cache and its own mutex); a read takes the
 * next one round-robin.  One for an uncompressed set (reading is a copy and
 * a checksum), EWF_COMPRESSED_HANDLES for a compressed one so that several
 * readers inflate in parallel.
 *
 * What libewf 20140813 does that this file works around (measured, see
 * FACTS.md):
 *  - libewf_glob stops at the first missing segment, and libewf_handle_open
 *    accepts a set with a missing or truncated segment (it only sets
 *    libewf_handle_segment_files_corrupted): we check the set ourselves
 *    (directory listing + the section chain of every segment) and name the
 *    missing or truncated file.
 *  - A chunk whose checksum fails (or that cannot be decompressed, or lies in
 *    a missing segment) reads as zeros with success, whatever
 *    libewf_handle_set_read_zero_chunk_on_error says; the only trace is a
 *    "checksum error" range, which grows in place for adjacent chunks and is
 *    not added again when the chunk is read again.  So after each read that
 *    may have met one we re-read the handle's checksum error list, and keep
 *    the union over all handles in the source.
 *  - The handle has no lock and keeps a current offset and a chunk cache:
 *    one thread at a time per handle.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>

#include <libewf.h>

#include "le.h"
#include "outfile.h"
#include "source.h"
#include "source_ewf.h"
#include "sysio.h"
#include "util.h"

#define EWF_SECTION_DESC 76
#define EWF_FILE_HEADER 13
#define EWF_MAX_SECTIONS 200000
#define EWF_MAX_SEGMENTS (99 + 26 * 26 * 22)   /* .E01-.E99, .EAA-.ZZZ */
#define EWF_MAX_HANDLES 16
#define EWF_COMPRESSED_HANDLES 4
#define EWF_OPEN_FILES 16           /* segment files a handle keeps open at most */
#define EWF_MAX_WARNINGS 10

struct ewf_handle_slot {
	pthread_mutex_t lock;
	libewf_handle_t *h;
	uint32_t known_checksum_errors;
};

struct ewf_source {
	struct ewf_info info;
	const char *name;                /* the source's path, for messages */
	atomic_int warnings;
	unsigned nhandles;
	struct ewf_handle_slot slot[EWF_MAX_HANDLES];
	atomic_uint next_slot;
	pthread_mutex_t bad_lock;        /* guards bad, warned_bytes */
	struct range_list bad;           /* checksum error ranges met so far */
	uint64_t warned_bytes;           /* bad.bytes when last warned */
};


/* libewf's error text (first line, trimmed), then free it. */
static const char *ewf_errtext(libewf_error_t **e, char *buf, size_t len)
{
	buf[0] = 0;
	if (e && *e) {
		if (libewf_error_sprint(*e, buf, len) < 0)
			snprintf(buf, len, "libewf error");
		libewf_error_free(e);
		for (char *p = buf; *p; p++)
			if (*p == '\n')
				*p = ' ';
	}
	return buf[0] ? buf : "libewf error";
}

/* ---------------------------------------------------------------- naming */

int ewf_segment_ext(const char *first_ext, unsigned n, char out[4])
{
	bool lower;
	char base;

	if (!first_ext || strlen(first_ext) != 3 || n < 1 || n > EWF_MAX_SEGMENTS)
		return -ERANGE;
	lower = first_ext[0] >= 'a' && first_ext[0] <= 'z';
	base = (char)(first_ext[0] & ~0x20);          /* 'E', 'S', 'L' */
	if (n <= 99) {
		out[0] = first_ext[0];
		out[1] = (char)('0' + n / 10);
		out[2] = (char)('0' + n % 10);
	} else {
		unsigned k = n - 100;                 /* 0 = "EAA" */
		unsigned first = (unsigned)(base - 'A') + k / 676;

		if (first >= 26)
			return -ERANGE;
		out[0] = (char)('A' + first);
		out[1] = (char)('A' + (k / 26) % 26);
		out[2] = (char)('A' + k % 26);
		if (lower)
			for (int i = 0; i < 3; i++)
				out[i] = (char)(out[i] | 0x20);
	}
	out[3] = 0;
	return 0;
}

/* Segment number of ext in the series of first_ext, or 0. */
static unsigned ewf_segment_index(const char *first_ext, const char *ext)
{
	bool lower = first_ext[0] >= 'a' && first_ext[0] <= 'z';
	char a = ext[0], b = ext[1], c = ext[2];

	if (strlen(ext) != 3)
		return 0;
	if (a == first_ext[0] && b >= '0' && b <= '9' && c >= '0' && c <= '9') {
		unsigned n = (unsigned)(b - '0') * 10 + (unsigned)(c - '0');
		return n >= 1 ? n : 0;
	}
	if (lower) {
		if (a < 'a' || a > 'z' || b < 'a' || b > 'z' || c < 'a' || c > 'z')
			return 0;
		a = (char)(a & ~0x20); b = (char)(b & ~0x20); c = (char)(c & ~0x20);
	} else if (a < 'A' || a > 'Z' || b < 'A' || b > 'Z' || c < 'A' || c > 'Z') {
		return 0;
	}
	if (a < (char)(first_ext[0] & ~0x20))
		return 0;
	return 100 + (unsigned)(a - (char)(first_ext[0] & ~0x20)) * 676 + (unsigned)(b - 'A') * 26 + (unsigned)(c - 'A');
}

/* ---------------------------------------------------------------- set check */

static uint32_t adler32(const uint8_t *p, size_t n)
{
	uint32_t a = 1, b = 0;

	for (size_t i = 0; i < n; i++) {
		a = (a + p[i]) % 65521;
		b = (b + a) % 65521;
	}
	return (b << 16) | a;
}

/* Walk the section chain of one segment file: the header's segment number
 * must be want_no, every descriptor must be intact and inside the file, the
 * chain must end in "next" (not the last segment) or "done" (the last). */
static int check_segment(const char *path, unsigned want_no, bool last, char *err, size_t errlen)
{
	uint8_t hdr[EWF_FILE_HEADER], d[EWF_SECTION_DESC];
	uint64_t off = EWF_FILE_HEADER, fsize;
	struct stat st;
	unsigned nsec;
	int fd, ret = -EINVAL;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		ret = -errno;
		fmt_err(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	fsize = (uint64_t)st.st_size;
	if (!S_ISREG(st.st_mode)) {
		fmt_err(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	{
		char what[PATH_MAX + 64];

		/* no output of this run may land on it (outfile.h) */
		snprintf(what, sizeof(what), "the EWF segment %s given as input", path);
		ret = evidence_protect(fd, what);
		if (ret) {
			fmt_err(err, errlen, "%s: %s", path, strerror(-ret));
			goto out;
		}
		ret = -EINVAL;
	}
	if (pread(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    (memcmp(hdr, "EVF\x09\x0d\x0a\xff\x00", 8) && memcmp(hdr, "LVF\x09\x0d\x0a\xff\x00", 8))) {
		fmt_err(err, errlen, "%s: no EWF signature: not an EWF segment file", path);
		goto out;
	}
	if (get_le16(hdr + 9) != want_no) {
		fmt_err(err, errlen, "%s: segment number %u in its header, expected %u (renamed or from another set?)",
		       path, (unsigned)get_le16(hdr + 9), want_no);
		goto out;
	}
	for (nsec = 0; nsec < EWF_MAX_SECTIONS; nsec++) {
		char type[17];
		uint64_t next, size;
		uint32_t sum;

		if (off > fsize || fsize - off < EWF_SECTION_DESC) {
			fmt_err(err, errlen, "%s: section %u at offset %llu is past the end of the file (%llu bytes): truncated segment",
			       path, nsec + 1, (unsigned long long)off, (unsigned long long)fsize);
			goto out;
		}
		if (pread(fd, d, sizeof(d), (off_t)off) != (ssize_t)sizeof(d)) {
			ret = -EIO;
			fmt_err(err, errlen, "%s: reading the section at offset %llu failed", path, (unsigned long long)off);
			goto out;
		}
		memcpy(type, d, 16);
		type[16] = 0;
		for (int i = 0; type[i]; i++)
			if (type[i] < 0x20 || type[i] > 0x7e)
				type[i] = '?';
		next = get_le64(d + 16);
		size = get_le64(d + 24);
		sum = get_le32(d + 72);
		if (adler32(d, 72) != sum) {
			fmt_err(err, errlen, "%s: section descriptor at offset %llu ('%s'): checksum 0x%08x, computed 0x%08x: damaged segment",
			       path, (unsigned long long)off, type, sum, adler32(d, 72));
			goto out;
		}
		if (!strcmp(type, "next") || !strcmp(type, "done")) {
			if (!strcmp(type, "done") && !last) {
				fmt_err(err, errlen, "%s ends the set ('done' section) but more segments follow it", path);
				goto out;
			}
			if (!strcmp(type, "next") && last) {
				fmt_err(err, errlen, "%s ends with a 'next' section: the segment after it is missing", path);
				ret = -ENOENT;
				goto out;
			}
			ret = 0;
			goto out;
		}
		if (size > fsize - off) {
			fmt_err(err, errlen, "%s: section '%s' at offset %llu has %llu bytes, past the end of the file (%llu bytes): truncated segment",
			       path, type, (unsigned long long)off, (unsigned long long)size, (unsigned long long)fsize);
			goto out;
		}
		if (next <= off) {
			fmt_err(err, errlen, "%s: section '%s' at offset %llu points back to offset %llu: damaged segment",
			       path, type, (unsigned long long)off, (unsigned long long)next);
			goto out;
		}
		off = next;
	}
	fmt_err(err, errlen, "%s: more than %d sections", path, EWF_MAX_SECTIONS);
out:
	close(fd);
	return ret;
}

/* The segments present in dir with base name prefix (path without its
 * extension): the largest segment number seen, or 0.  *missing = the first
 * number below it that is absent (0: none). */
static unsigned scan_segments(const char *dir, const char *base, const char *first_ext, unsigned *missing,
			      char *err, size_t errlen)
{
	size_t blen = strlen(base);
	unsigned max = 0;
	uint8_t *seen;
	struct dirent *de;
	DIR *d;

	*missing = 0;
	seen = calloc(EWF_MAX_SEGMENTS + 1, 1);
	if (!seen)
		return 0;
	d = opendir(dir);
	if (!d) {
		fmt_err(err, errlen, "%s: %s", dir, strerror(errno));
		free(seen);
		return 0;
	}
	while ((de = readdir(d))) {
		unsigned n;

		if (strncmp(de->d_name, base, blen) || de->d_name[blen] != '.')
			continue;
		n = ewf_segment_index(first_ext, de->d_name + blen + 1);
		if (!n || n > EWF_MAX_SEGMENTS)
			continue;
		seen[n] = 1;
		if (n > max)
			max = n;
	}
	closedir(d);
	for (unsigned n = 1; n <= max; n++)
		if (!seen[n]) {
			*missing = n;
			break;
		}
	free(seen);
	return max;
}

/* ---------------------------------------------------------------- metadata */

static char *utf8_header(libewf_handle_t *h, const char *id, libewf_error_t **e)
{
	size_t sz = 0;
	char *v;

	if (libewf_handle_get_utf8_header_value_size(h, (const uint8_t *)id, strlen(id), &sz, e) != 1 || !sz) {
		if (e && *e)
			libewf_error_free(e);
		return NULL;
	}
	if (sz > 1 << 20)
		return NULL;
	v = malloc(sz + 1);
	if (!v)
		return NULL;
	if (libewf_handle_get_utf8_header_value(h, (const uint8_t *)id, strlen(id), (uint8_t *)v, sz, e) != 1) {
		if (e && *e)
			libewf_error_free(e);
		free(v);
		return NULL;
	}
	v[sz] = 0;
	return v;
}

static void get_hash(libewf_handle_t *h, const char *id, char *out, size_t outlen)
{
	libewf_error_t *e = NULL;
	uint8_t buf[128];

	out[0] = 0;
	if (libewf_handle_get_utf8_hash_value(h, (const uint8_t *)id, strlen(id), buf, sizeof(buf), &e) == 1) {
		size_t k;

		for (k = 0; k + 1 < outlen && k < sizeof(buf) && buf[k]; k++)
			out[k] = (char)((buf[k] >= 'A' && buf[k] <= 'F') ? (buf[k] | 0x20) : buf[k]);
		out[k] = 0;
	}
	if (e)
		libewf_error_free(&e);
}

static const char *header_or_empty(const struct ewf_info *in, const char *key)
{
	for (unsigned i = 0; i < in->nheaders; i++)
		if (!strcmp(in->headers[i].key, key))
			return in->headers[i].value;
	return "";
}

static int read_metadata(struct ewf_source *s, char *err, size_t errlen)
{
	libewf_handle_t *h = s->slot[0].h;
	struct ewf_info *in = &s->info;
	libewf_error_t *e = NULL;
	char eb[256];
	size64_t ms;
	uint32_t n = 0, spc = 0, bps = 0;
	int8_t level = 0;
	uint8_t cflags = 0;

	if (libewf_handle_get_media_size(h, &ms, &e) != 1 ||
	    libewf_handle_get_bytes_per_sector(h, &bps, &e) != 1 ||
	    libewf_handle_get_sectors_per_chunk(h, &spc, &e) != 1) {
		fmt_err(err, errlen, "%s: media values: %s", in->segments[0].path, ewf_errtext(&e, eb, sizeof(eb)));
		return -EINVAL;
	}
	in->media_size = ms;
	in->bytes_per_sector = bps;
	in->sectors_per_chunk = spc;
	in->chunk_size = bps * spc;
	if (!bps || !spc || (uint64_t)bps * spc > (64u << 20)) {
		fmt_err(err, errlen, "%s: %u bytes per sector, %u sectors per chunk: not plausible",
		       in->segments[0].path, bps, spc);
		return -EINVAL;
	}
	if (libewf_handle_get_format(h, &in->format, &e) != 1 && e)
		libewf_error_free(&e);
	if (libewf_handle_get_compression_values(h, &level, &cflags, &e) == 1)
		in->compressed = level != LIBEWF_COMPRESSION_NONE;
	else if (e)
		libewf_error_free(&e);

	if (libewf_handle_get_number_of_header_values(h, &n, &e) != 1) {
		if (e)
			libewf_error_free(&e);
		n = 0;
	}
	if (n > 256)
		n = 256;
	in->headers = calloc(n ? n : 1, sizeof(*in->headers));
	if (!in->headers)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		size_t isz = 0;
		char id[128], *v;

		if (libewf_handle_get_header_value_identifier_size(h, i, &isz, &e) != 1 || !isz || isz > sizeof(id) ||
		    libewf_handle_get_header_value_identifier(h, i, (uint8_t *)id, sizeof(id), &e) != 1) {
			if (e)
				libewf_error_free(&e);
			continue;
		}
		id[sizeof(id) - 1] = 0;
		v = utf8_header(h, id, &e);
		if (!v)
			continue;            /* identifier known, no value set */
		in->headers[in->nheaders].key = strdup(id);
		in->headers[in->nheaders].value = v;
		if (!in->headers[in->nheaders].key) {
			free(v);
			return -ENOMEM;
		}
		in->nheaders++;
	}
	in->case_number = header_or_empty(in, "case_number");
	in->evidence_number = header_or_empty(in, "evidence_number");
	in->examiner_name = header_or_empty(in, "examiner_name");
	in->description = header_or_empty(in, "description");
	in->notes = header_or_empty(in, "notes");
	in->acquiry_date = header_or_empty(in, "acquiry_date");
	in->system_date = header_or_empty(in, "system_date");
	in->acquiry_software_version = header_or_empty(in, "acquiry_software_version");
	get_hash(h, "MD5", in->md5, sizeof(in->md5));
	get_hash(h, "SHA1", in->sha1, sizeof(in->sha1));

	if (libewf_handle_get_number_of_acquiry_errors(h, &n, &e) != 1) {
		if (e)
			libewf_error_free(&e);
		n = 0;
	}
	if (n > 1000000) {
		fmt_err(err, errlen, "%s: %u acquisition errors listed: not plausible", in->segments[0].path, n);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t first, count;

		if (libewf_handle_get_acquiry_error(h, i, &first, &count, &e) != 1) {
			fmt_err(err, errlen, "%s: acquisition error %u: %s", in->segments[0].path, i,
			       ewf_errtext(&e, eb, sizeof(eb)));
			return -EINVAL;
		}
		if (!count || first > UINT64_MAX / bps || count > UINT64_MAX / bps)
			continue;
		if (range_list_add(&in->acq_errors, first * bps, count * bps))
			return fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", in->segments[0].path);
	}
	return 0;
}

/* ---------------------------------------------------------------- open/close */

static void info_free(struct ewf_info *in)
{
	for (unsigned i = 0; i < in->nsegments; i++)
		free(in->segments[i].path);
	free(in->segments);
	for (unsigned i = 0; i < in->nheaders; i++) {
		free(in->headers[i].key);
		free(in->headers[i].value);
	}
	free(in->headers);
	range_list_free(&in->acq_errors);
	memset(in, 0, sizeof(*in));
}

static void ewf_source_close(struct ewf_source *s)
{
	libewf_error_t *e = NULL;

	if (!s)
		return;
	for (unsigned i = 0; i < EWF_MAX_HANDLES; i++) {
		if (s->slot[i].h) {
			libewf_handle_close(s->slot[i].h, &e);
			if (e)
				libewf_error_free(&e);
			libewf_handle_free(&s->slot[i].h, &e);
			if (e)
				libewf_error_free(&e);
		}
		pthread_mutex_destroy(&s->slot[i].lock);
	}
	pthread_mutex_destroy(&s->bad_lock);
	info_free(&s->info);
	range_list_free(&s->bad);
	free(s);
}

static int ewf_source_open(const char *path, struct ewf_source **out, char *err, size_t errlen)
{
	struct ewf_source *s = NULL;
	libewf_error_t *e = NULL;
	char **names = NULL, eb[512], *dir = NULL, *base = NULL, first_ext[4];
	const char *slash, *dot;
	int nnames = 0, ret;
	unsigned max, missing;

	*out = NULL;
	slash = strrchr(path, '/');
	dot = strrchr(slash ? slash + 1 : path, '.');
	if (!dot || strlen(dot + 1) != 3 || ewf_segment_index(dot + 1, dot + 1) != 1) {
		fmt_err(err, errlen, "%s: not a first EWF segment (NAME.E01, .e01, .s01 or .L01)", path);
		return -EINVAL;
	}
	memcpy(first_ext, dot + 1, 4);
	dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
	base = strndup(slash ? slash + 1 : path, (size_t)(dot - (slash ? slash + 1 : path)));
	s = calloc(1, sizeof(*s));
	if (!dir || !base || !s) {
		ret = -ENOMEM;
		fmt_err(err, errlen, "out of memory");
		goto fail;
	}
	pthread_mutex_init(&s->bad_lock, NULL);

	if (libewf_glob(path, strlen(path), LIBEWF_FORMAT_UNKNOWN, &names, &nnames, &e) != 1 || nnames < 1) {
		ret = access(path, R_OK) ? -errno : -EINVAL;
		fmt_err(err, errlen, "%s: %s", path, ret == -EINVAL ? ewf_errtext(&e, eb, sizeof(eb)) : strerror(-ret));
		goto fail;
	}
	/* libewf_glob stops at the first gap: look at the whole directory. */
	max = scan_segments(dir, base, first_ext, &missing, err, errlen);
	if (missing) {
		char ext[4], last_ext[4];

		ewf_segment_ext(first_ext, missing, ext);
		ewf_segment_ext(first_ext, max, last_ext);
		fmt_err(err, errlen, "segment %s%s%s.%s is missing (segments up to %s.%s are there otherwise)",
		       slash ? dir : "", slash && strcmp(dir, "/") ? "/" : "", base, ext, base, last_ext);
		ret = -ENOENT;
		goto fail;
	}
	s->info.segments = calloc((size_t)nnames, sizeof(*s->info.segments));
	if (!s->info.segments) {
		ret = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < nnames; i++) {
		struct stat st;

		s->info.segments[i].path = abs_path(names[i]);
		if (!s->info.segments[i].path) {
			ret = -ENOMEM;
			goto fail;
		}
		s->info.nsegments++;
		if (stat(names[i], &st)) {
			ret = -errno;
			fmt_err(err, errlen, "%s: %s", names[i], strerror(errno));
			goto fail;
		}
		s->info.segments[i].size = (uint64_t)st.st_size;
		ret = check_segment(names[i], (unsigned)i + 1, i == nnames - 1, err, errlen);
		if (ret) {
			if (ret == -ENOENT && i == nnames - 1) {
				char ext[4];

				if (!ewf_segment_ext(first_ext, (unsigned)i + 2, ext)) {
					size_t l = strlen(err);
					snprintf(err + l, errlen > l ? errlen - l : 0, " (%s%s%s.%s)", slash ? dir : "",
						 slash && strcmp(dir, "/") ? "/" : "", base, ext);
				}
			}
			goto fail;
		}
	}
	/* one handle, the metadata, then more handles for a compressed set */
	for (unsigned i = 0; i < EWF_MAX_HANDLES; i++)
		pthread_mutex_init(&s->slot[i].lock, NULL);
	s->nhandles = 1;
	for (unsigned i = 0; i < s->nhandles; i++) {
		/* libewf keeps every segment file open per handle unless told:
		 * bound the descriptors (it reopens files as needed) */
		if (libewf_handle_initialize(&s->slot[i].h, &e) != 1 ||
		    (nnames > EWF_OPEN_FILES &&
		     libewf_handle_set_maximum_number_of_open_handles(s->slot[i].h, EWF_OPEN_FILES, &e) != 1) ||
		    libewf_handle_open(s->slot[i].h, names, nnames, LIBEWF_OPEN_READ, &e) != 1) {
			fmt_err(err, errlen, "%s: %s", path, ewf_errtext(&e, eb, sizeof(eb)));
			ret = -EINVAL;
			goto fail;
		}
		if (i > 0)
			continue;
		if (libewf_handle_segment_files_corrupted(s->slot[0].h, &e) == 1) {
			fmt_err(err, errlen, "%s: libewf reports the segment files corrupted", path);
			ret = -EINVAL;
			goto fail;
		}
		if (e)
			libewf_error_free(&e);
		ret = read_metadata(s, err, errlen);
		if (ret) {
			if (ret == -ENOMEM)
				fmt_err(err, errlen, "%s: out of memory", path);
			goto fail;
		}
		s->nhandles = s->info.compressed ? EWF_COMPRESSED_HANDLES : 1;
	}
	s->info.nhandles = s->nhandles;
	libewf_glob_free(names, nnames, &e);
	if (e)
		libewf_error_free(&e);
	free(dir);
	free(base);
	*out = s;
	return 0;
fail:
	if (e)
		libewf_error_free(&e);
	if (names)
		libewf_glob_free(names, nnames, &e);
	if (e)
		libewf_error_free(&e);
	ewf_source_close(s);
	free(dir);
	free(base);
	return ret;
}

/* ---------------------------------------------------------------- reads */

/* Does buf (len bytes at media offset off) hold an all-zero piece of a
 * chunk?  Only then can libewf have replaced a bad chunk. */
static bool has_zero_chunk_piece(const uint8_t *buf, size_t len, uint64_t off, uint32_t chunk)
{
	size_t i = 0;

	while (i < len) {
		size_t n = chunk - (size_t)((off + i) % chunk), k;

		if (n > len - i)
			n = len - i;
		for (k = 0; k < n && !buf[i + k]; k++)
			;
		if (k == n)
			return true;
		i += n;
	}
	return false;
}

/* Copy the handle's checksum error list into the source's.  Slot lock held. */
static int refresh_checksum_errors(struct ewf_source *s, struct ewf_handle_slot *sl)
{
	libewf_error_t *e = NULL;
	uint32_t n = 0;
	int ret = 0;

	if (libewf_handle_get_number_of_checksum_errors(sl->h, &n, &e) != 1) {
		if (e)
			libewf_error_free(&e);
		return -EIO;
	}
	sl->known_checksum_errors = n;
	if (!n)
		return 0;
	pthread_mutex_lock(&s->bad_lock);
	for (uint32_t i = 0; i < n && !ret; i++) {
		uint64_t first, count, bps = s->info.bytes_per_sector;

		if (libewf_handle_get_checksum_error(sl->h, i, &first, &count, &e) != 1) {
			if (e)
				libewf_error_free(&e);
			ret = -EIO;
			break;
		}
		if (count && first < UINT64_MAX / bps && count < UINT64_MAX / bps)
			ret = range_list_add(&s->bad, first * bps, count * bps);
	}
	pthread_mutex_unlock(&s->bad_lock);
	return ret;
}

static int ewf_read(struct ewf_source *s, void *buf, size_t len, uint64_t off)
{
	struct ewf_handle_slot *sl;
	const struct byte_range *r;
	libewf_error_t *e = NULL;
	uint8_t *p = buf;
	size_t done = 0;
	int ret = 0;

	if (off > s->info.media_size || len > s->info.media_size - off)
		return -EIO;            /* past the end, as a raw image would be */
	if (!len)
		return 0;
	sl = &s->slot[atomic_fetch_add(&s->next_slot, 1) % s->nhandles];
	pthread_mutex_lock(&sl->lock);
	while (done < len) {
		ssize_t n = libewf_handle_read_random(sl->h, p + done, len - done, (off64_t)(off + done), &e);

		if (n <= 0) {
			char eb[400];

			ewf_errtext(&e, eb, sizeof(eb));
			if (atomic_fetch_add(&s->warnings, 1) < EWF_MAX_WARNINGS)
				msg("%s: reading %zu bytes at media offset %llu failed: %s; treated as a read error of "
				    "this member", s->name, len - done, (unsigned long long)(off + done), eb);
			ret = -EIO;
			break;
		}
		done += (size_t)n;
	}
	if (!ret) {
		uint32_t n = 0;

		if (libewf_handle_get_number_of_checksum_errors(sl->h, &n, &e) != 1) {
			if (e)
				libewf_error_free(&e);
			n = sl->known_checksum_errors + 1;   /* force a refresh */
		}
		/* libewf hands out a bad chunk as zeros: look again when its
		 * list grew, or when a chunk piece read is all zeros */
		if (n != sl->known_checksum_errors ||
		    (n && has_zero_chunk_piece(p, len, off, s->info.chunk_size)))
			ret = refresh_checksum_errors(s, sl);
	}
	pthread_mutex_unlock(&sl->lock);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->bad_lock);
	r = range_list_first(&s->bad, off, len);
	if (r) {
		ret = -EIO;
		if (s->bad.bytes > s->warned_bytes) {
			s->warned_bytes = s->bad.bytes;
			if (atomic_fetch_add(&s->warnings, 1) < EWF_MAX_WARNINGS)
				msg("%s: media bytes %llu-%llu: chunk checksum error (the evidence file is damaged "
				    "there); treated as a read error of this member, rebuilt from parity where "
				    "the array allows", s->name, (unsigned long long)r->off,
				    (unsigned long long)(r->off + r->len - 1));
		}
	}
	pthread_mutex_unlock(&s->bad_lock);
	return ret;
}

/* ---------------------------------------------------------------- the source */

static struct ewf_source *es_of(struct source *s)
{
	return s->priv;
}

static int ewf_pread(struct source *s, void *buf, size_t len, uint64_t off)
{
	return ewf_read(es_of(s), buf, len, off);
}

static int ewf_preadv(struct source *s, const struct iovec *iov, int iovcnt, uint64_t off)
{
	uint64_t total = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (off > s->size || total > s->size - off)
		return -EIO;
	for (int i = 0; i < iovcnt; i++) {
		int ret = ewf_read(es_of(s), iov[i].iov_base, iov[i].iov_len, off);

		if (ret)
			return ret;
		off += iov[i].iov_len;
	}
	return 0;
}

static int ewf_pwrite(struct source *s, const void *buf, size_t len, uint64_t off)
{
	return -EROFS;
}

static int ewf_sync(struct source *s)
{
	return 0;
}

static int ewf_truncate(struct source *s, uint64_t size)
{
	return -EROFS;
}

static void ewf_close(struct source *s)
{
	ewf_source_close(s->priv);
	free((char **)s->files);
	free(s->path);
	free(s);
}

static const struct source_ops ewf_ops = {
	.kind = "ewf",
	.pread = ewf_pread,
	.preadv = ewf_preadv,
	.pwrite = ewf_pwrite,
	.sync = ewf_sync,
	.truncate = ewf_truncate,
	.close = ewf_close,
};

int source_open_ewf(const char *path, int flags, struct source **out, char *err, size_t errlen)
{
	struct ewf_source *es = NULL;
	struct source *s;
	char **files;
	int ret;

	if (flags & SOURCE_WRITE)
		return fmt_fail(err, errlen, -EROFS, "%s: an EWF image cannot be written (raidimg reads E01 files "
				"only)", path);
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = abs_path(path))) {
		free(s);
		return fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
	}
	ret = ewf_source_open(path, &es, err, errlen);
	if (ret) {
		free(s->path);
		free(s);
		return ret;
	}
	es->name = s->path;
	files = calloc(es->info.nsegments, sizeof(*files));
	if (!files) {
		ewf_source_close(es);
		free(s->path);
		free(s);
		return fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
	}
	for (unsigned i = 0; i < es->info.nsegments; i++)
		files[i] = es->info.segments[i].path;
	s->ops = &ewf_ops;
	s->priv = es;
	s->size = es->info.media_size;
	s->files = files;
	s->nfiles = (int)es->info.nsegments;
	/* the sectors the imager could not read: it stored zeros there */
	if (es->info.acq_errors.n && source_untrusted_add(s, &es->info.acq_errors, UNTRUSTED_EWF_ACQUIRY, s->path)) {
		source_close(s);
		return fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
	}
	*out = s;
	return 0;
}

const struct ewf_info *source_ewf_info(const struct source *s)
{
	return s->ops == &ewf_ops ? &((const struct ewf_source *)s->priv)->info : NULL;
}
