/* metafix.c - make a member's container metadata consistent again after a
 * test edited a field, so that the test reaches the check it means:
 *   metafix imsm IMAGE           the IMSM MPB checksum (anchor 1 KiB before the
 *                                end, continuation sectors before it)
 *   metafix ddf IMAGE LBA [N]    the CRC of the DDF structure at LBA, N sectors
 *                                (default 1), the way the header there does it
 *                                (mdadm's: register from 0, no inversion)
 * Exit 0, or 1 with a message.  A test helper, not installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int fix_imsm(int fd, uint64_t size)
{
	uint8_t mpb[8192];
	uint32_t mpb_size, sectors, sum = 0;

	if (size < 8192 || pread(fd, mpb, 512, (off_t)(size - 1024)) != 512)
		return -1;
	mpb_size = le32(mpb + 0x24);
	sectors = (mpb_size + 511) / 512;
	if (sectors < 1 || sectors > 15)
		return -1;
	if (sectors > 1 && pread(fd, mpb + 512, (sectors - 1) * 512, (off_t)(size - (sectors + 1) * 512)) !=
	    (ssize_t)((sectors - 1) * 512))
		return -1;
	memset(mpb + 0x20, 0, 4);
	for (uint32_t i = 0; i < mpb_size / 4; i++)
		sum += le32(mpb + 4 * i);
	for (int i = 0; i < 4; i++)
		mpb[0x20 + i] = (uint8_t)(sum >> (8 * i));
	return pwrite(fd, mpb + 0x20, 4, (off_t)(size - 1024 + 0x20)) == 4 ? 0 : -1;
}

static int fix_ddf(int fd, uint64_t lba, unsigned n)
{
	size_t len = (size_t)n * 512;
	uint8_t *b = malloc(len);
	uint32_t crc;
	int ret = -1;

	if (!b || pread(fd, b, len, (off_t)(lba * 512)) != (ssize_t)len)
		goto out;
	memset(b + 4, 0xff, 4);
	crc = crc32_raw(0, b, len);
	for (int i = 0; i < 4; i++)
		b[4 + i] = (uint8_t)(crc >> (24 - 8 * i));      /* big-endian metadata */
	ret = pwrite(fd, b + 4, 4, (off_t)(lba * 512 + 4)) == 4 ? 0 : -1;
out:
	free(b);
	return ret;
}

int main(int argc, char **argv)
{
	struct stat st;
	int fd, ret;

	if (argc < 3 || (strcmp(argv[1], "imsm") && strcmp(argv[1], "ddf")) || (!strcmp(argv[1], "ddf") && argc < 4)) {
		fprintf(stderr, "usage: metafix imsm IMAGE | metafix ddf IMAGE LBA [SECTORS]\n");
		return 1;
	}
	fd = open(argv[2], O_RDWR);
	if (fd < 0 || fstat(fd, &st)) {
		perror(argv[2]);
		return 1;
	}
	if (!strcmp(argv[1], "imsm"))
		ret = fix_imsm(fd, (uint64_t)st.st_size);
	else
		ret = fix_ddf(fd, strtoull(argv[3], NULL, 0), argc > 4 ? (unsigned)atoi(argv[4]) : 1);
	close(fd);
	if (ret)
		fprintf(stderr, "metafix: %s: cannot fix\n", argv[2]);
	return ret ? 1 : 0;
}
