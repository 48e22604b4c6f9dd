/* metadata.c - find which md superblock a member image carries.
 *
 * Each format reads the 4 KiB where it would live and hands it to its pure
 * parser.  Order follows mdadm's preference: 1.2, 1.1, 1.0, then 0.90, so
 * a 1.x superblock wins over a stale 0.90 left at the end of the device.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "metadata.h"

#define SB_READ     4096
#define MIN_SECTORS 24          /* mdadm: smaller devices cannot hold a 1.x member */

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int read_sb(struct source *src, uint64_t sector, uint8_t *buf, const char *fmt,
                   char *err, size_t errlen)
{
	int rc;

	if (src->size < SB_READ || sector > (src->size - SB_READ) / 512)
		return fail(err, errlen, -ENOENT, "image too small for an md %s superblock", fmt);
	rc = source_pread(src, buf, SB_READ, sector * 512);
	if (rc)
		return fail(err, errlen, rc, "cannot read the md %s superblock at sector %" PRIu64 ": %s",
		            fmt, sector, strerror(-rc));
	return 0;
}

static int probe_md1(struct source *src, int minor, struct member_meta *out, char *err, size_t errlen)
{
	uint64_t dev_sectors = src->size / 512;
	uint64_t sector = md1_super_offset(minor, dev_sectors);
	uint8_t buf[SB_READ];
	char fmt[8];
	int rc;

	snprintf(fmt, sizeof(fmt), "1.%d", minor);
	if (sector == UINT64_MAX)
		return fail(err, errlen, -ENOENT, "image too small for an md %s superblock", fmt);
	rc = read_sb(src, sector, buf, fmt, err, errlen);
	if (rc)
		return rc;
	rc = md1_parse(buf, sizeof(buf), dev_sectors, out, err, errlen);
	if (rc)
		return rc;
	/* A superblock that is not where it says it is was copied or the image
	 * was resized; the kernel refuses it too. */
	if (out->super_offset != sector)
		return fail(err, errlen, -EINVAL,
		            "md %s superblock at sector %" PRIu64 " records super_offset %" PRIu64,
		            fmt, sector, out->super_offset);
	/* the location we read decides the version (on tiny images 1.0 may
	 * sit at sector 8, where the parser alone would say 1.2) */
	snprintf(out->format, sizeof(out->format), "%s", fmt);
	return 0;
}

static int probe_md12(struct source *src, struct member_meta *out, char *err, size_t errlen)
{
	return probe_md1(src, 2, out, err, errlen);
}

static int probe_md11(struct source *src, struct member_meta *out, char *err, size_t errlen)
{
	return probe_md1(src, 1, out, err, errlen);
}

static int probe_md10(struct source *src, struct member_meta *out, char *err, size_t errlen)
{
	return probe_md1(src, 0, out, err, errlen);
}

static int probe_md090(struct source *src, struct member_meta *out, char *err, size_t errlen)
{
	uint64_t dev_sectors = src->size / 512;
	uint64_t sector = md0_super_offset(dev_sectors);
	uint8_t buf[SB_READ];
	int rc;

	if (sector == UINT64_MAX)
		return fail(err, errlen, -ENOENT, "image too small for an md 0.90 superblock");
	rc = read_sb(src, sector, buf, "0.90", err, errlen);
	if (rc)
		return rc;
	return md0_parse(buf, sizeof(buf), dev_sectors, out, err, errlen);
}

static const struct metadata_ops formats[] = {
	{ "md-1.2", probe_md12 },
	{ "md-1.1", probe_md11 },
	{ "md-1.0", probe_md10 },
	{ "md-0.90", probe_md090 },
};

int metadata_probe(struct source *src, struct member_meta *out, char *err, size_t errlen)
{
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	if (src->size < MIN_SECTORS * 512)
		return fail(err, errlen, -ENOENT, "image is too small (%" PRIu64 " bytes) to hold an md superblock",
		            src->size);
	/* The first format present decides; a present but broken one is an
	 * error rather than a reason to look further, or we would silently
	 * assemble from a stale leftover. */
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		rc = formats[i].probe(src, out, err, errlen);
		if (rc != -ENOENT)
			return rc;
	}
	memset(out, 0, sizeof(*out));
	return fail(err, errlen, -ENOENT, "no md superblock");
}

void meta_uuid_format(const uint8_t uuid[16], char out[36])
{
	int i;
	char *p = out;

	for (i = 0; i < 16; i++) {
		if (i && i % 4 == 0)
			*p++ = ':';
		p += sprintf(p, "%02x", uuid[i]);
	}
}
