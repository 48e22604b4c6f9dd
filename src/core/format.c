/* format.c - the list of metadata formats and probing them in turn (see
 * format.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "util.h"

#define MIN_SECTORS 24          /* mdadm: smaller devices cannot hold a 1.x member */

const struct format_ops *const format_list[] = {
	&format_md12, &format_md11, &format_md10, &format_md090, &format_imsm, &format_ddf, NULL,
};

const struct format_ops *format_by_name(const char *name)
{
	static const struct { const char *alias, *name; } aliases[] = {
		{ "0.9", "0.90" }, { "0", "0.90" }, { "00.90", "0.90" }, { "1", "1.2" }, { "default", "1.2" },
		{ "1.00", "1.0" }, { "1.01", "1.1" }, { "1.02", "1.2" },
	};

	for (size_t i = 0; i < ARRAY_LEN(aliases); i++)
		if (!strcmp(name, aliases[i].alias))
			name = aliases[i].name;
	for (int i = 0; format_list[i]; i++)
		if (!strcmp(name, format_list[i]->name))
			return format_list[i];
	return NULL;
}

int format_probe(const struct dev_reader *dev, struct format_found *out, char *err, size_t errlen)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (dev->size < MIN_SECTORS * 512)
		return fmt_fail(err, errlen, -ENOENT, "image is too small (%" PRIu64 " bytes) to hold an md superblock",
				dev->size);
	for (int i = 0; format_list[i]; i++) {
		rc = format_list[i]->probe(dev, out, err, errlen);
		if (rc != -ENOENT)
			return rc;
	}
	memset(out, 0, sizeof(*out));
	return fmt_fail(err, errlen, -ENOENT, "no RAID metadata (md superblock, IMSM or DDF)");
}

int meta_uuid_parse(const char *s, uint8_t uuid[16])
{
	int n = 0;

	for (; *s; s++) {
		int v;

		if (*s == ':' || *s == '-' || *s == ' ')
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
			v = (*s | 0x20) - 'a' + 10;
		else
			return -EINVAL;
		if (n >= 32)
			return -EINVAL;
		uuid[n / 2] = (uint8_t)(n % 2 ? (uuid[n / 2] | v) : v << 4);
		n++;
	}
	return n == 32 ? 0 : -EINVAL;
}

void meta_uuid_format(const uint8_t uuid[16], char out[36])
{
	char *p = out;

	for (int i = 0; i < 16; i++) {
		if (i && i % 4 == 0)
			*p++ = ':';
		p += sprintf(p, "%02x", uuid[i]);
	}
}
