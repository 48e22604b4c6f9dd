/* geom_args.c - see geom_args.h */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "geom_args.h"
#include "util.h"

void geom_args_init(struct geom_args *ga)
{
	memset(ga, 0, sizeof(*ga));
	ga->geom.layout = LAYOUT_LEFT_SYMMETRIC;
	ga->geom.chunk_bytes = 512 * 1024;
}

int geom_parse_level(const char *arg, int *level, char *err, size_t errlen)
{
	const char *num = arg;
	long long v;

	if (!strncasecmp(arg, "raid", 4))
		num = arg + 4;          /* mdadm's "raid6" */
	if (parse_int(num, 0, 10, &v) || (v != 4 && v != 5 && v != 6))
		return fmt_fail(err, errlen, -1, "--level %s: raidimg handles RAID levels 4, 5 and 6 (also written "
				"raid4, raid5, raid6)", arg);
	*level = (int)v;
	return 0;
}

int geom_parse_chunk(const char *arg, uint32_t *bytes, char *err, size_t errlen)
{
	size_t digits = strspn(arg, "0123456789");
	uint64_t sz;
	int r;

	if (digits && !arg[digits]) {
		/* a plain number: KiB, mdadm's unit for --chunk */
		r = parse_size(arg, &sz);
		if (!r && sz > (UINT64_MAX >> 10))
			r = -ERANGE;
		sz <<= 10;
	} else {
		r = parse_size(arg, &sz);
	}
	if (r || sz == 0 || (sz & (sz - 1)) || sz > (1u << 30) || sz < 4096)
		return fmt_fail(err, errlen, -1, "--chunk %s: the chunk size must be a power of two from 4K to 1G "
				"(a plain number is KiB, as in mdadm: 64 = 64K)", arg);
	*bytes = (uint32_t)sz;
	return 0;
}

int geom_args_opt(struct geom_args *ga, int opt, const char *arg, char *err, size_t errlen)
{
	long long v;
	uint64_t sz;

	switch (opt) {
	case GEOM_OPT_LEVEL:
		if (geom_parse_level(arg, &ga->geom.level, err, errlen))
			return -1;
		ga->have_level = true;
		return 1;
	case GEOM_OPT_LAYOUT:
		ga->layout_name = arg;
		ga->have_layout = true;
		return 1;
	case GEOM_OPT_CHUNK:
		if (geom_parse_chunk(arg, &ga->geom.chunk_bytes, err, errlen))
			return -1;
		ga->have_chunk = true;
		return 1;
	case GEOM_OPT_RAID_DEVICES:
		if (parse_int(arg, 2, LAYOUT_MAX_DISKS, &v))
			return fmt_fail(err, errlen, -1, "--raid-devices %s: give a number from 2 to %d", arg,
					LAYOUT_MAX_DISKS);
		ga->raid_devices = (int)v;
		return 1;
	case GEOM_OPT_ORDER:
		ga->order_arg = arg;
		return 1;
	case GEOM_OPT_DATA_OFFSET:
		if (parse_size(arg, &sz))
			return fmt_fail(err, errlen, -1, "--data-offset %s: not a size", arg);
		ga->data_offset = sz;
		return 1;
	case GEOM_OPT_MEMBER_SIZE:
		if (parse_size(arg, &sz) || sz == 0)
			return fmt_fail(err, errlen, -1, "--member-size %s: not a size", arg);
		ga->member_bytes = sz;
		return 1;
	case GEOM_OPT_FORCE:
		ga->force = true;
		return 1;
	case GEOM_OPT_MAP: {
		const char *eq = strrchr(arg, '=');

		if (!eq || eq == arg || !eq[1])
			return fmt_fail(err, errlen, -1, "--map %s: give IMAGE=MAPFILE (the image as given among the "
					"members, its GNU ddrescue mapfile)", arg);
		if (ga->nmaps >= LAYOUT_MAX_DISKS)
			return fmt_fail(err, errlen, -1, "--map: more than %d mapfiles", LAYOUT_MAX_DISKS);
		ga->maps[ga->nmaps].map = strdup(eq + 1);
		ga->maps[ga->nmaps].image = strndup(arg, (size_t)(eq - arg));
		if (!ga->maps[ga->nmaps].map || !ga->maps[ga->nmaps].image) {
			free(ga->maps[ga->nmaps].map);
			free((char *)ga->maps[ga->nmaps].image);
			return fmt_fail(err, errlen, -1, "out of memory");
		}
		ga->nmaps++;
		return 1;
	}
	case GEOM_OPT_NO_MAPS:
		ga->no_maps = true;
		return 1;
	case GEOM_OPT_ARRAY:
		if (!*arg)
			return fmt_fail(err, errlen, -1, "--array: give an array's UUID or name");
		ga->array = arg;
		return 1;
	case GEOM_OPT_SERIAL: {
		const char *eq = strrchr(arg, '=');
		struct geom_serial *s;

		if (!eq || eq == arg || !eq[1] || strlen(eq + 1) >= sizeof(s->serial))
			return fmt_fail(err, errlen, -1, "--serial %s: give IMAGE=SERIAL (a drive serial of at most "
					"%zu characters)", arg, sizeof(s->serial) - 1);
		if (ga->nserials >= LAYOUT_MAX_DISKS * 2)
			return fmt_fail(err, errlen, -1, "--serial: too many");
		s = realloc(ga->serials, (size_t)(ga->nserials + 1) * sizeof(*s));
		if (!s)
			return fmt_fail(err, errlen, -1, "out of memory");
		ga->serials = s;
		s = &s[ga->nserials++];
		snprintf(s->serial, sizeof(s->serial), "%s", eq + 1);
		/* the image is the text before '=': keep it as its own string */
		s->image = strndup(arg, (size_t)(eq - arg));
		if (!s->image) {
			ga->nserials--;
			return fmt_fail(err, errlen, -1, "out of memory");
		}
		return 1;
	}
	case GEOM_OPT_RESHAPE_POS:
		if (parse_size(arg, &sz) || sz % 512)
			return fmt_fail(err, errlen, -1, "--reshape-position %s: give array bytes (a multiple of 512) "
					"or sectors (e.g. 15360s)", arg);
		ga->reshape_bytes = sz;
		ga->have_reshape_bytes = true;
		return 1;
	}
	return 0;
}

static int count_missing(const int *order, int n)
{
	int m = 0;

	for (int r = 0; r < n; r++)
		m += order[r] < 0;
	return m;
}

static int parse_order(struct geom_args *ga, int nimages, char *err, size_t errlen)
{
	char *copy = strdup(ga->order_arg), *save = NULL, *tok;
	int n = 0, ret = 0;

	if (!copy)
		return fmt_fail(err, errlen, -1, "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long long v;

		if (n >= LAYOUT_MAX_DISKS) {
			ret = fmt_fail(err, errlen, -1, "--order: more than %d members", LAYOUT_MAX_DISKS);
			break;
		}
		if (!strcmp(tok, "missing") || !strcmp(tok, "x") || !strcmp(tok, "-")) {
			ga->order[n++] = -1;
			continue;
		}
		if (parse_int(tok, 0, nimages - 1, &v)) {
			ret = fmt_fail(err, errlen, -1, "--order: '%s' is neither 'missing' nor an image index 0..%d",
				       tok, nimages - 1);
			break;
		}
		ga->order[n++] = (int)v;
	}
	free(copy);
	ga->norder = n;
	if (ret)
		return ret;
	/* every image named exactly once: an image left out of --order would
	 * be silently unused */
	for (int i = 0; i < nimages; i++) {
		int seen = 0;

		for (int r = 0; r < n; r++)
			seen += ga->order[r] == i;
		if (seen > 1)
			return fmt_fail(err, errlen, -1, "--order %s: image %d (%s) is named %d times", ga->order_arg,
					i, ga->paths[i], seen);
		if (!seen)
			return fmt_fail(err, errlen, -1, "--order %s names %d of the %d images given: image %d (%s) "
					"is not in it (name every image once, 'missing' for absent members, or "
					"leave the image out)", ga->order_arg, n - count_missing(ga->order, n),
					nimages, i, ga->paths[i]);
	}
	return 0;
}

int geom_args_prepare(struct geom_args *ga, int argc, char **argv, char *err, size_t errlen)
{
	bool manual = ga->have_level;

	if (!manual && (ga->have_layout || ga->have_chunk || ga->order_arg || ga->data_offset || ga->member_bytes ||
			ga->raid_devices))
		return fmt_fail(err, errlen, -1, "--layout, --chunk, --order, --data-offset, --member-size and "
				"--raid-devices describe a manual geometry: give --level too");
	if (manual && (ga->array || ga->nserials))
		return fmt_fail(err, errlen, -1, "--array and --serial choose and place the members found by their "
				"metadata: not with a manual geometry (--level)");
	ga->paths = calloc((size_t)argc + 1, sizeof(*ga->paths));
	if (!ga->paths)
		return fmt_fail(err, errlen, -1, "out of memory");
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "missing")) {
			if (!manual)
				return fmt_fail(err, errlen, -1, "'missing' stands for an absent member only with a "
						"manual geometry (--level); with md metadata, just leave the member out");
			if (ga->order_arg)
				return fmt_fail(err, errlen, -1, "'missing' among the images and --order together: use "
						"one or the other");
			if (ga->norder >= LAYOUT_MAX_DISKS)
				return fmt_fail(err, errlen, -1, "too many members");
			ga->order[ga->norder++] = -1;
			continue;
		}
		if (manual && !ga->order_arg) {
			if (ga->norder >= LAYOUT_MAX_DISKS)
				return fmt_fail(err, errlen, -1, "too many members (at most %d)", LAYOUT_MAX_DISKS);
			ga->order[ga->norder++] = ga->npaths;
		}
		ga->paths[ga->npaths++] = argv[i];
	}
	if (ga->npaths == 0)
		return fmt_fail(err, errlen, -1, "no member images given");
	if (manual) {
		if (ga->order_arg && parse_order(ga, ga->npaths, err, errlen))
			return -1;
		ga->manual = true;
		ga->geom.raid_disks = ga->norder;
		if (ga->raid_devices && ga->raid_devices != ga->norder)
			return fmt_fail(err, errlen, -1, "--raid-devices %d, but %s make %d member%s (write 'missing' "
					"for an absent member)", ga->raid_devices,
					ga->order_arg ? "--order's entries" : "the images given", ga->norder,
					ga->norder == 1 ? "" : "s");
		if (ga->layout_name && layout_from_name(ga->geom.level, ga->layout_name, &ga->geom.layout))
			return fmt_fail(err, errlen, -1, "--layout %s: not a RAID%d layout", ga->layout_name,
					ga->geom.level);
	}
	return 0;
}

void geom_args_free(struct geom_args *ga)
{
	free(ga->paths);
	ga->paths = NULL;
	for (int i = 0; i < ga->nmaps; i++) {
		free(ga->maps[i].map);
		free((char *)ga->maps[i].image);
	}
	ga->nmaps = 0;
	for (int i = 0; i < ga->nserials; i++)
		free((char *)ga->serials[i].image);
	free(ga->serials);
	ga->serials = NULL;
	ga->nserials = 0;
}
