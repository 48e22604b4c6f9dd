/* fuzz_ddf.c - DDF metadata (src/core/ddf.c) and the format behind it.
 *
 * Input: byte 0-1 = gap (sectors, little-endian) between the end of the blob
 * and the end of the device; byte 2 = control: bit 0 ignore CRCs, bit 1 no
 * anchor search, bits 2-4 choose the device size; the rest is the blob.  The
 * device reads as zeros except for the blob placed gap sectors before its
 * end, so the blob can hold an anchor in the last sector or earlier (the
 * search), and headers/tables it points at.
 * Properties: no crash; every refusal says why; counts within their
 * limits; the format's probe agrees with the parser (a volume per virtual
 * disk this disk is in, its role); place() finds each listed disk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddf.h"
#include "ddf_synth.h"
#include "format.h"
#include "fuzz.h"

/* format_ddf.probe (it searches only on whole images: hints) against the parser */
static void check_format(struct dev_reader *dev, unsigned flags, const struct ddf_info *info)
{
	static struct format_found f;
	char err[256];
	int n = 0, rc;

	if (flags & DDF_PARSE_IGNORE_CRC)
		return;
	dev->hints = flags & DDF_PARSE_NO_SEARCH ? 0 : DEV_HINT_WHOLE;
	for (int i = 0; i < info->n_vds; i++)
		n += info->vds[i].has_config && info->vds[i].this_role >= 0;
	rc = format_ddf.probe(dev, &f, err, sizeof(err));
	if (rc == 0 && f.nvol != n)
		fuzz_fail("probe: %d volumes, the parser %d", f.nvol, n);
	if (rc && rc != -ENOENT && rc != -E2BIG && !(rc == -EINVAL && info->this_pd < 0))
		fuzz_fail("probe %d on metadata the parser read: %s", rc, err);
	for (int v = 0; rc == 0 && v < f.nvol; v++) {
		int dev_number, role;

		if (format_ddf.place(&f.vol[v], f.vol[v].dev_id, &dev_number, &role) || role != f.vol[v].role)
			fuzz_fail("place: this disk not in its own role");
	}
}

static const uint64_t dev_sizes[8] = {
	64 * 1024, 1024 * 1024, 4 * 1024 * 1024, 8 * 1024 * 1024,
	3 * 1024 * 1024, 33 * 1024 * 1024 + 512, 2 * 1024 * 1024 + 100, 512,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ddf_info info;
	struct ddf_mem m;
	char err[256], why[160];
	uint64_t dev, gap, off;
	unsigned flags = 0;
	size_t len;
	int i, rc;

	if (size < 3)
		return 0;
	gap = (uint64_t)(data[0] | data[1] << 8) * 512;
	if (data[2] & 1)
		flags |= DDF_PARSE_IGNORE_CRC;
	if (data[2] & 2)
		flags |= DDF_PARSE_NO_SEARCH;
	dev = dev_sizes[(data[2] >> 2) & 7];
	data += 3;
	len = size - 3;
	if (len > dev)
		len = (size_t)dev;
	off = dev - len;
	off = off > gap ? off - gap : 0;
	ddf_mem_init(&m, dev, data, len, off);
	rc = ddf_parse_ex(&m.dev, flags, &info, err, sizeof(err));
	if (rc == 0) {
		/* touch everything a caller would */
		for (i = 0; i < info.n_vds; i++) {
			const struct ddf_vd *v = &info.vds[i];

			(void)ddf_vd_check_raid456(v, why, sizeof(why));
			(void)ddf_md_layout_name(v->md_level, v->md_layout);
			(void)ddf_vd_state_name(v->state);
			if (v->this_role >= DDF_MAX_ROLES || v->raid_disks > DDF_MAX_ROLES)
				fuzz_fail("role %d of %d", v->this_role, v->raid_disks);
		}
		if (info.n_pds > DDF_MAX_PDS || info.n_vds > DDF_MAX_VDS ||
		    strlen(info.warnings) >= sizeof(info.warnings))
			fuzz_fail("counts out of range");
		check_format(&m.dev, flags, &info);
	} else if (err[0] == 0) {
		fuzz_fail("a refusal without a message (%d)", rc);
	}
	return 0;
}

