/* probe.c - find the metadata a member source carries (format.h's formats
 * reading the source through a dev_reader). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "probe.h"
#include "util.h"

static int source_read_cb(void *ctx, void *buf, size_t len, uint64_t off)
{
	return source_pread(ctx, buf, len, off);
}

void source_dev_reader(struct source *src, struct dev_reader *dev)
{
	dev->size = src->size;
	dev->read = source_read_cb;
	dev->ctx = src;
}

int probe_source(struct source *src, struct format_found *out, char *err, size_t errlen)
{
	struct dev_reader dev;

	source_dev_reader(src, &dev);
	return format_probe(&dev, out, err, errlen);
}

int metadata_probe(struct source *src, struct member_meta *out, char *err, size_t errlen)
{
	struct format_found f;
	int rc = probe_source(src, &f, err, errlen);

	memset(out, 0, sizeof(*out));
	if (!rc)
		*out = f.vol[0];
	return rc;
}

int probe_bblog(struct source *src, const struct member_meta *m, size_t *added, char *err, size_t errlen)
{
	struct range_list r = { 0 };
	uint8_t buf[8 * 512];
	char perr[256];
	uint64_t off;
	size_t len;
	int ret;

	*added = 0;
	if (strcmp(m->format, "1.0") && strcmp(m->format, "1.1") && strcmp(m->format, "1.2"))
		return 0;
	ret = md1_bblog_locate(m, src->size, &off, &len, perr, sizeof(perr));
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return fmt_fail(err, errlen, ret, "%s: %s", src->path, perr);
	if (len > sizeof(buf))
		return fmt_fail(err, errlen, -EINVAL, "%s: bad-block log of %zu bytes", src->path, len);
	ret = source_pread(src, buf, len, off);
	if (ret)
		return fmt_fail(err, errlen, ret, "%s: cannot read md's bad-block log at byte %" PRIu64 ": %s",
				src->path, off, strerror(-ret));
	ret = md1_bblog_parse(buf, len, m->bblog_shift, &r, perr, sizeof(perr));
	if (!ret && r.n)
		ret = source_untrusted_add(src, &r, UNTRUSTED_MD_BBLOG, src->path);
	*added = r.n;
	range_list_free(&r);
	if (ret)
		return fmt_fail(err, errlen, ret, "%s: md bad-block log: %s", src->path,
				ret == -ENOMEM ? "out of memory" : perr);
	return 0;
}

int write_superblock(struct source *dst, const struct member_meta *m, uint64_t dev_sectors, char *err,
		     size_t errlen)
{
	uint8_t sb[8192];
	uint64_t off;
	size_t len;
	int r;

	if (!m->fmt || !m->fmt->build)
		return fmt_fail(err, errlen, -EOPNOTSUPP, "%s: md %s metadata cannot be written", dst->path,
				m->format);
	memset(sb, 0, sizeof(sb));
	r = m->fmt->build(m, sb, sizeof(sb), dev_sectors, &off, &len);
	if (r)
		return fmt_fail(err, errlen, r, "%s: cannot build the md %s superblock: %s", dst->path, m->format,
				strerror(-r));
	r = source_pwrite(dst, sb, len, off);
	if (!r)
		r = dst->ops->sync(dst);
	if (r)
		return fmt_fail(err, errlen, r, "%s: write error: %s", dst->path, strerror(-r));
	return 0;
}
