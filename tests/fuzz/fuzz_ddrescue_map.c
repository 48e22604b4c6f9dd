/* fuzz_ddrescue_map.c - GNU ddrescue mapfile parser (ddr_map_parse) and, on
 * the same bytes, md's bad-block log parser (md1_bblog_parse).
 *
 * Input: one control byte (bits 0-1: image size unknown / the mapped size
 * (parsed again with it) / a u32 LE follows / 0), then the mapfile text.
 * Properties: no crash; an accepted map's untrusted ranges are sorted,
 * disjoint, inside the map and sum to bad_bytes; the lookup finds each of
 * them; the bad-block log's ranges are sorted and disjoint.
 */
#include <stdint.h>
#include <string.h>

#include "ddrescue_map.h"
#include "format.h"
#include "fuzz.h"
#include "ranges.h"

static void check_map(const struct ddr_map *m)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < m->nbad; i++) {
		const struct ddr_range *r = &m->bad[i];

		if (!r->size || r->pos + r->size > m->map_size)
			fuzz_fail("untrusted range %u outside the map", i);
		if (i && r->pos <= m->bad[i - 1].pos + m->bad[i - 1].size)
			fuzz_fail("untrusted ranges %u and %u not sorted and apart", i - 1, i);
		if (ddr_map_find_bad(m, r->pos, 1) != r || ddr_map_find_bad(m, r->pos + r->size - 1, 1) != r)
			fuzz_fail("lookup misses range %u", i);
		sum += r->size;
	}
	if (sum != m->bad_bytes)
		fuzz_fail("bad_bytes %llu, ranges sum to %llu", (unsigned long long)m->bad_bytes,
			  (unsigned long long)sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct range_list bb = { 0 };
	struct ddr_map m;
	char err[256];
	uint64_t isz = UINT64_MAX;
	uint8_t ctl;

	if (size < 1)
		return 0;
	ctl = data[0] & 3;
	data++;
	size--;
	if (ctl == 2 && size >= 4) {
		uint32_t v;

		memcpy(&v, data, 4);
		isz = v;
		data += 4;
		size -= 4;
	} else if (ctl == 3) {
		isz = 0;
	}
	if (ddr_map_parse((const char *)data, size, isz, &m, err, sizeof(err)) == 0) {
		check_map(&m);
		if (ctl == 1) {
			struct ddr_map m2;

			if (ddr_map_parse((const char *)data, size, m.map_size, &m2, err, sizeof(err)))
				fuzz_fail("refused with its own size: %s", err);
			ddr_map_free(&m2);
		}
		ddr_map_free(&m);
	}
	if (md1_bblog_parse(data, size < 4096 ? size : 4096, ctl * 3, &bb, err, sizeof(err)) == 0)
		for (size_t i = 1; i < bb.n; i++)
			if (bb.v[i].off <= bb.v[i - 1].off + bb.v[i - 1].len)
				fuzz_fail("bad-block ranges %zu and %zu overlap", i - 1, i);
	range_list_free(&bb);
	return 0;
}
