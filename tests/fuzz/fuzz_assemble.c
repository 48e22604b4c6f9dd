/* fuzz_assemble.c - hostile superblocks all the way through: assembly from
 * several member images (in memory, tests/common/mem_source, through
 * array_assemble_sources) and reads of the array they form.
 *
 * Input: u8 flags (bit 0: fix each block's md checksum, bit 1: --force),
 * u8 members (1 + n % 6), u32 LE sectors per image (24 .. 65536), then
 * blocks: u8 member, u8 where (0: sector 0, 1: sector 8, 2: the 1.0 place,
 * 3: the 0.90 place, else: a u16 sector follows), u16 LE length (<= 4096),
 * the bytes (at most MEM_MAX_BLOCKS blocks per member are kept).
 * Properties: no crash, no huge allocation (run with -malloc_limit_mb),
 * assembly refuses or gives a geometry that layout_check accepts and sizes
 * that fit the images' claims (both geometries of a reshape); array_read of the start, middle and end
 * returns 0 or -EIO with the first bad offset inside the request.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "fuzz.h"
#include "mem_source.h"
#include "probe.h"

#define MAX_MEMBERS 6
#define READ_MAX (256u << 10)

static uint64_t where_sector(struct fuzz_in *in, uint64_t sectors)
{
	switch (fuzz_u8(in)) {
	case 0: return 0;
	case 1: return 8;
	case 2: return md1_super_offset(0, sectors);
	case 3: return md0_super_offset(sectors);
	default: return fuzz_u16(in) % sectors;
	}
}

static void check_read(struct array *a, uint64_t off, uint64_t len)
{
	uint64_t bad = 0;
	uint8_t *buf;
	int ret;

	if (off >= a->array_bytes)
		return;
	if (len > a->array_bytes - off)
		len = a->array_bytes - off;
	buf = malloc(len);
	if (!buf)
		return;
	ret = array_read(a, buf, len, off, &bad);
	if (ret == -EIO && (bad < off || bad >= off + len))
		fuzz_fail("array_read EIO names offset %llu outside [%llu, +%llu)", (unsigned long long)bad,
			  (unsigned long long)off, (unsigned long long)len);
	if (ret && ret != -EIO && ret != -ENOMEM)
		fuzz_fail("array_read returned %d", ret);
	free(buf);
}

/* One geometry: sound, and sizes that agree.  array_bytes_ok: the size
 * the array serves (less than the geometry holds during a reshape). */
static void check_geometry(const struct array *a, uint64_t array_bytes)
{
	if (layout_check(&a->geom, NULL))
		fuzz_fail("assembled a geometry layout_check refuses");
	if (a->member_bytes == 0 || a->member_bytes % a->geom.chunk_bytes ||
	    array_bytes != a->member_bytes * (uint64_t)a->k || array_bytes / (uint64_t)a->k != a->member_bytes)
		fuzz_fail("inconsistent sizes: member %llu array %llu k %d", (unsigned long long)a->member_bytes,
			  (unsigned long long)array_bytes, a->k);
	if (a->nmissing > a->redundancy)
		fuzz_fail("assembled with %d members missing", a->nmissing);
}

static void check_array(struct array *a)
{
	if (a->prev) {
		/* a reshape: both geometries sound, the array no larger than
		 * either, the position inside it */
		uint64_t whole = a->member_bytes * (uint64_t)a->k;

		check_geometry(a, whole);
		check_geometry(a->prev, a->prev->array_bytes);
		if (a->array_bytes > whole || a->array_bytes > a->prev->array_bytes ||
		    (a->array_bytes != whole && a->array_bytes != a->prev->array_bytes) ||
		    a->reshape_bytes > a->array_bytes || a->prev->prev || a->prev->stats_of != a)
			fuzz_fail("inconsistent reshape: array %llu, new %llu, old %llu, position %llu",
				  (unsigned long long)a->array_bytes, (unsigned long long)whole,
				  (unsigned long long)a->prev->array_bytes, (unsigned long long)a->reshape_bytes);
	} else {
		check_geometry(a, a->array_bytes);
	}
	check_read(a, 0, READ_MAX);
	if (a->prev && a->reshape_bytes > 100)
		check_read(a, a->reshape_bytes - 100, 200);     /* across the position */
	check_read(a, a->array_bytes / 2 - a->array_bytes / 2 % 512, 12345);
	if (a->array_bytes > 4096)
		check_read(a, a->array_bytes - 4096, 4096);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t arena[MAX_MEMBERS][MEM_MAX_BLOCKS][4096];
	static struct mem_image img[MAX_MEMBERS];
	struct fuzz_in in = { data, size };
	struct assemble_opts o = { .open_flags = SOURCE_READ };
	struct source *srcs[MAX_MEMBERS];
	const char *names[MAX_MEMBERS] = { "m0", "m1", "m2", "m3", "m4", "m5" };
	char err[1024];
	uint8_t flags = fuzz_u8(&in);
	uint64_t sectors;
	struct array *a = NULL;
	int n;

	err[0] = '\0';
	n = 1 + fuzz_u8(&in) % MAX_MEMBERS;
	sectors = 24 + fuzz_u32(&in) % (65536 - 24 + 1);
	o.g.force = flags & 2;
	for (int m = 0; m < n; m++)
		img[m] = (struct mem_image){ .size = sectors * 512 };
	while (in.left) {
		int m = fuzz_u8(&in) % n;
		uint64_t sector = where_sector(&in, sectors);
		size_t want = fuzz_u16(&in) % 4097, len;
		const uint8_t *p = fuzz_bytes(&in, want, &len);
		struct mem_image *im = &img[m];

		if (sector == UINT64_MAX || im->nblocks == MEM_MAX_BLOCKS)
			continue;
		memcpy(arena[m][im->nblocks], p, len);
		if (flags & 1)
			fuzz_fix_md_csum(arena[m][im->nblocks], len);
		if (sector * 512 + len > sectors * 512)
			len = (size_t)(sectors * 512 - sector * 512);
		im->blocks[im->nblocks++] = (struct mem_block){ sector * 512, len, arena[m][im->nblocks] };
	}
	for (int m = 0; m < n; m++) {
		srcs[m] = mem_source_new(&img[m], names[m]);
		if (!srcs[m]) {
			while (m--)
				source_close(srcs[m]);
			return 0;
		}
	}
	if (array_assemble_sources(srcs, names, n, &o, &a, err, sizeof(err)) == 0) {
		check_array(a);
		array_free(a);
	} else if (!err[0]) {
		fuzz_fail("array_assemble_sources failed without a message");
	}
	return 0;
}
