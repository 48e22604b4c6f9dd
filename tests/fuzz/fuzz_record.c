/* fuzz_record.c - replay_load over any file: a record edited by hand,
 * damaged, or made to hurt (huge counts, duplicate images, integers that
 * do not fit their fields, paths that are not UTF-8).
 *
 * Input: the record's bytes (through a memfd, as replay reads a file).
 * Properties: no crash, no huge allocation; what is accepted has its
 * integers inside their fields' ranges, at most 512 images, none twice.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct replay_spec rs;
	char path[64], err[ERR_MAX];
	int fd;

	if (size > (1u << 20))
		return 0;
	fd = memfd_create("record", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err[0] = '\0';
	if (replay_load(path, &rs, err, sizeof(err)) == 0) {
		if (rs.level < 4 || rs.level > 6 || rs.raid_disks < 1 || rs.raid_disks > 256 ||
		    rs.chunk_bytes < 512 || rs.npaths > 512 || rs.nmembers > 512)
			fuzz_fail("accepted level %d, %d disks, chunk %u, %d paths, %d members", rs.level,
				  rs.raid_disks, rs.chunk_bytes, rs.npaths, rs.nmembers);
		for (int i = 0; i < rs.npaths; i++)
			for (int j = 0; j < i; j++)
				if (!strcmp(rs.paths[i], rs.paths[j]))
					fuzz_fail("accepted %s twice", rs.paths[i]);
		replay_spec_free(&rs);
	} else if (!err[0]) {
		fuzz_fail("refused without a message");
	}
	close(fd);
	return 0;
}
