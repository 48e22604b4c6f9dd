/* source.c - open a member image as the right kind of source. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source.h"
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

static source_open_hook_fn open_hook;

void source_set_open_hook(source_open_hook_fn hook)
{
	open_hook = hook;
}

int source_open(const char *path, int flags, struct source **out, char *err, size_t errlen)
{
	int ret = looks_zstd(path, flags) ? source_open_zstd(path, flags, out, err, errlen)
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
	s->ops->close(s);
}
