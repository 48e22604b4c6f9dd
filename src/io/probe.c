/* probe.c - find the metadata a member source carries (format.h's formats
 * reading the source through a dev_reader). */
#include <errno.h>
#include <string.h>

#include "probe.h"

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
