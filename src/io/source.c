/* source.c - open a member image as the right kind of source. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source.h"
#include "split_raw.h"
#include "zstd_seekable.h"

/* A zstd image: zstd (or skippable) frame magic at offset 0, and either the
 * seekable footer's magic at the end or a name ending in .zst/.zstd (so that
 * a plain .zst is refused with advice rather than read as raw bytes; a raw
 * member whose data happens to start with the magic stays raw). */
static bool looks_zstd(const char *path, int flags)
{
	uint8_t b[4];
	uint32_t m;
	size_t n = strlen(path);
	struct stat st;
	bool ret = false;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);     /* a FIFO must not hang us */
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 4 || pread(fd, b, 4, 0) != 4)
		goto out;
	m = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	if (m != ZSEEK_FRAME_MAGIC && (m & ZSEEK_SKIPPABLE_MASK) != (ZSEEK_SKIPPABLE_MAGIC & ZSEEK_SKIPPABLE_MASK))
		goto out;
	ret = (n > 4 && !strcmp(path + n - 4, ".zst")) || (n > 5 && !strcmp(path + n - 5, ".zstd"));
	if (!ret && st.st_size >= 8 + ZSEEK_FOOTER_BYTES && pread(fd, b, 4, st.st_size - 4) == 4)
		ret = ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24) ==
		      ZSEEK_FOOTER_MAGIC;
out:
	close(fd);
	return ret;
}

/* An EWF segment file: "EVF" 09 0D 0A FF 00 (EnCase 1-6, ewfacquire). */
static bool looks_ewf(const char *path)
{
	static const uint8_t sig[8] = { 'E', 'V', 'F', 0x09, 0x0d, 0x0a, 0xff, 0x00 };
	uint8_t b[8];
	struct stat st;
	bool ret = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return false;
	ret = !fstat(fd, &st) && S_ISREG(st.st_mode) && pread(fd, b, 8, 0) == 8 && !memcmp(b, sig, 8);
	close(fd);
	return ret;
}

/* The first piece of a split image: a name ending in .000 or .001 (three
 * digits or more: .0/.1 and .00/.01 are too often names of whole images)
 * with a later piece of the same width beside it (the pieces are then
 * checked by source_open_split: a gap is an error naming the piece).  A
 * lone NAME.001 is a plain image. */
static bool looks_split(const char *path)
{
	const char *base = strrchr(path, '/'), *dot;
	unsigned num, w, v, k;
	struct dirent *de;
	struct stat st;
	size_t plen;
	char *dir;
	bool ret = false;
	DIR *d;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		return false;
	plen = (size_t)(dot + 1 - base);
	if (!split_suffix_number(base, base, plen, &num, &w) || w < 3 || w > SPLIT_MAX_WIDTH || num > 1 ||
	    stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	dir = base == path ? strdup(".") : base == path + 1 ? strdup("/") : strndup(path, (size_t)(base - path - 1));
	d = dir ? opendir(dir) : NULL;
	while (d && !ret && (de = readdir(d)))
		ret = split_suffix_number(de->d_name, base, plen, &v, &k) && k >= w && v > num;
	if (d)
		closedir(d);
	free(dir);
	return ret;
}

const char *source_kind_of(const char *path)
{
	if (looks_ewf(path))
		return "ewf";
	if (looks_zstd(path, SOURCE_READ))
		return "zstd";
	if (looks_split(path))
		return "split";
	return "raw";
}

static source_open_hook_fn open_hook;

void source_set_open_hook(source_open_hook_fn hook)
{
	open_hook = hook;
}

int source_open(const char *path, int flags, struct source **out, char *err, size_t errlen)
{
	const char *kind = source_kind_of(path);
	int ret = !strcmp(kind, "ewf")	 ? source_open_ewf(path, flags, out, err, errlen)
		  : !strcmp(kind, "zstd")  ? source_open_zstd(path, flags, out, err, errlen)
		  : !strcmp(kind, "split") ? source_open_split(path, flags, out, err, errlen)
					   : source_open_raw(path, flags, out, err, errlen);

	if (ret)
		return ret;
	if (!open_hook)
		return 0;
	ret = open_hook(out, err, errlen);
	if (ret) {
		source_close(*out);
		*out = NULL;
	}
	return ret;
}

int source_serial(struct source *s, char *buf, size_t len)
{
	return s->ops->serial ? s->ops->serial(s, buf, len) : -ENOENT;
}

struct source *source_image(struct source *s)
{
	while (s->parent)
		s = s->parent;
	return s;
}

struct source *source_ref(struct source *s)
{
	atomic_fetch_add(&s->refs, 1);
	return s;
}

void source_close(struct source *s)
{
	if (!s)
		return;
	if (atomic_load(&s->refs) > 0 && atomic_fetch_sub(&s->refs, 1) > 0)
		return;
	source_untrusted_free(s);
	s->ops->close(s);
}

char *const *source_files(const struct source *s, int *n)
{
	if (s->files) {
		*n = s->nfiles;
		return s->files;
	}
	*n = 1;
	return &s->path;
}
