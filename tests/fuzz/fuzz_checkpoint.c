/* fuzz_checkpoint.c - scrub_checkpoint_parse over any text: a checkpoint
 * edited by hand or damaged.
 *
 * Input: u8 flags (bit 0: append a correct checksum line, so the fuzzer
 * gets past it), then the text.
 * Properties: no crash; what is accepted has every field, its position
 * inside its range, and a mode that is a word.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "scrub.h"
#include "xxh64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scrub_checkpoint cp;
	char err[512], *text;
	size_t len;
	uint8_t flags;

	if (size < 1 || size > 8192)
		return 0;
	flags = data[0];
	data++;
	size--;
	text = malloc(size + 64);
	if (!text)
		return 0;
	memcpy(text, data, size);
	len = size;
	if (flags & 1)
		len += (size_t)snprintf(text + len, 64, "sum %016llx\n", (unsigned long long)xxh64(text, size, 0));
	text[len] = '\0';
	if (scrub_checkpoint_parse(text, len, "fuzz.cp", &cp, err, sizeof(err)) == 0) {
		if (!cp.array_id[0] || !cp.mode[0] || strchr(cp.mode, ' '))
			fuzz_fail("accepted a checkpoint without an array or mode");
		if (cp.next < cp.begin || cp.next > cp.end)
			fuzz_fail("accepted position %llu outside %llu-%llu", (unsigned long long)cp.next,
				  (unsigned long long)cp.begin, (unsigned long long)cp.end);
	} else if (!err[0]) {
		fuzz_fail("refused without a message");
	}
	free(text);
	return 0;
}
