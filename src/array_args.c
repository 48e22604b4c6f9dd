/* array_args.c - the options every command that reads an array shares
 * (member images, manual geometry, --force) and opening the array they
 * describe.  In the library (not main.c) so that the fuzzer can reach the
 * geometry parsing (tests/fuzz/fuzz_geometry.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

void array_args_init(struct array_args *aa)
{
	memset(aa, 0, sizeof(*aa));
	aa->ao.open_flags = SOURCE_READ;
	aa->ao.geom.layout = LAYOUT_LEFT_SYMMETRIC;
	aa->ao.geom.chunk_bytes = 512 * 1024;
}

int array_args_opt(struct array_args *aa, int opt, const char *arg)
{
	long long v;
	uint64_t sz;

	switch (opt) {
	case 0x1001:
		if (parse_int(arg, 0, 10, &v) || (v != 4 && v != 5 && v != 6)) {
			msg("--level %s: raidimg handles RAID levels 4, 5 and 6", arg);
			return -1;
		}
		aa->ao.geom.level = (int)v;
		aa->have_level = true;
		return 1;
	case 0x1002:
		aa->layout_name = arg;
		aa->have_layout = true;
		return 1;
	case 0x1003:
		if (parse_size(arg, &sz) || sz == 0 || (sz & (sz - 1)) || sz > (1u << 30) || sz < 4096) {
			msg("--chunk %s: the chunk size must be a power of two between 4K and 1G", arg);
			return -1;
		}
		aa->ao.geom.chunk_bytes = (uint32_t)sz;
		aa->have_chunk = true;
		return 1;
	case 0x1004:
		aa->order = arg;
		return 1;
	case 0x1005:
		if (parse_size(arg, &sz)) {
			msg("--data-offset %s: not a size", arg);
			return -1;
		}
		aa->ao.data_offset = sz;
		return 1;
	case 0x1006:
		if (parse_size(arg, &sz) || sz == 0) {
			msg("--member-size %s: not a size", arg);
			return -1;
		}
		aa->ao.member_bytes = sz;
		return 1;
	case 0x1007:
		aa->ao.force = true;
		return 1;
	case 0x1008:
		if (parse_size(arg, &sz) || sz % 512) {
			msg("--reshape-position %s: give array bytes (a multiple of 512) or sectors (e.g. 15360s)", arg);
			return -1;
		}
		aa->ao.reshape_bytes = sz;
		aa->ao.have_reshape_bytes = true;
		return 1;
	}
	return 0;
}

static int parse_order(struct array_args *aa, int nimages)
{
	char *copy = strdup(aa->order), *save = NULL, *tok;
	int n = 0, ret = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long long v;

		if (n >= LAYOUT_MAX_DISKS) {
			msg("--order: more than %d members", LAYOUT_MAX_DISKS);
			ret = -1;
			break;
		}
		if (!strcmp(tok, "missing") || !strcmp(tok, "x") || !strcmp(tok, "-")) {
			aa->ao.order[n++] = -1;
			continue;
		}
		if (parse_int(tok, 0, nimages - 1, &v)) {
			msg("--order: '%s' is neither 'missing' nor an image index 0..%d", tok, nimages - 1);
			ret = -1;
			break;
		}
		aa->ao.order[n++] = (int)v;
	}
	free(copy);
	aa->ao.norder = n;
	return ret;
}

int array_args_prepare(struct array_args *aa, int argc, char **argv)
{
	bool manual = aa->have_level;

	if (!manual && (aa->have_layout || aa->have_chunk || aa->order || aa->ao.data_offset ||
			aa->ao.member_bytes)) {
		msg("--layout, --chunk, --order, --data-offset and --member-size describe a manual "
		    "geometry: give --level too");
		return -1;
	}
	aa->paths = calloc((size_t)argc + 1, sizeof(*aa->paths));
	if (!aa->paths)
		return -1;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "missing")) {
			if (!manual) {
				msg("'missing' stands for an absent member only with a manual geometry (--level); "
				    "with md metadata, just leave the member out");
				return -1;
			}
			if (aa->order) {
				msg("'missing' among the images and --order together: use one or the other");
				return -1;
			}
			if (aa->ao.norder >= LAYOUT_MAX_DISKS) {
				msg("too many members");
				return -1;
			}
			aa->ao.order[aa->ao.norder++] = -1;
			continue;
		}
		if (manual && !aa->order) {
			if (aa->ao.norder >= LAYOUT_MAX_DISKS) {
				msg("too many members (at most %d)", LAYOUT_MAX_DISKS);
				return -1;
			}
			aa->ao.order[aa->ao.norder++] = aa->npaths;
		}
		aa->paths[aa->npaths++] = argv[i];
	}
	if (aa->npaths == 0) {
		msg("no member images given");
		return -1;
	}
	if (manual) {
		if (aa->order && parse_order(aa, aa->npaths))
			return -1;
		aa->ao.manual = true;
		aa->ao.geom.raid_disks = aa->ao.norder;
		if (aa->layout_name &&
		    layout_from_name(aa->ao.geom.level, aa->layout_name, &aa->ao.geom.layout)) {
			msg("--layout %s: not a RAID%d layout", aa->layout_name, aa->ao.geom.level);
			return -1;
		}
	}
	return 0;
}

int array_args_open(struct array_args *aa, int argc, char **argv, struct array **out)
{
	char err[1024] = "";
	int ret;

	if (array_args_prepare(aa, argc, argv))
		return -1;
	ret = array_assemble(aa->paths, aa->npaths, &aa->ao, out, err, sizeof(err));
	if (ret) {
		msg("%s", err);
		return -1;
	}
	print_array_warnings(*out);
	return 0;
}

void array_args_free(struct array_args *aa)
{
	free(aa->paths);
	aa->paths = NULL;
}

void print_array_warnings(const struct array *a)
{
	const char *p = a->warnings;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		fprintf(stderr, "%s: warning: %.*s\n", prog_name, len, p);
		p += len + (nl ? 1 : 0);
	}
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		if (m->state == MEMBER_STALE || m->state == MEMBER_FAULTY)
			fprintf(stderr, "%s: warning: role %d: %s: %s\n", prog_name, r,
				m->path ? m->path : "?", m->note);
	}
}
