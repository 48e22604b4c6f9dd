/* fuzz_overlay.c - overlay_header_decode over any 4 KiB header: a
 * damaged or hostile overlay file.
 *
 * Input: the header bytes (fewer than OVERLAY_HEADER_BYTES: zeros after
 * them); u8 flags first (bit 0: fix the checksum, so the fuzzer gets past
 * it).
 * Properties: no crash; what is accepted encodes again to the same bytes'
 * meaning (decode(encode(h)) == h) and describes a file layout that
 * follows from its array size and granule.
 */
#include <string.h>

#include "fuzz.h"
#include "le.h"
#include "overlay.h"
#include "xxh64.h"

#define H_CHECKSUM 248

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[OVERLAY_HEADER_BYTES], again[OVERLAY_HEADER_BYTES];
	struct overlay_header h, h2;
	char err[512];
	uint8_t flags;

	if (size < 1)
		return 0;
	flags = data[0];
	data++;
	size--;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
	if (flags & 1)
		put_le64(buf + H_CHECKSUM, xxh64(buf, H_CHECKSUM, 0));
	if (overlay_header_decode(buf, sizeof(buf), &h, err, sizeof(err))) {
		if (!err[0])
			fuzz_fail("refused without a message");
		return 0;
	}
	if (h.granule_bytes == 0 || (h.granule_bytes & (h.granule_bytes - 1)))
		fuzz_fail("accepted granule %u", h.granule_bytes);
	if (h.data_start < OVERLAY_HEADER_BYTES || h.data_start % h.granule_bytes)
		fuzz_fail("accepted data_start %llu", (unsigned long long)h.data_start);
	overlay_header_encode(&h, again);
	if (overlay_header_decode(again, sizeof(again), &h2, err, sizeof(err)))
		fuzz_fail("an accepted header encodes to one that is refused: %s", err);
	if (h2.granules != h.granules || h2.data_start != h.data_start || h2.id.array_bytes != h.id.array_bytes ||
	    h2.granule_bytes != h.granule_bytes)
		fuzz_fail("decode(encode(h)) differs from h");
	return 0;
}
