/* cmd_map.c - raidimg map: read the whole array and say (or draw, --svg)
 * where every byte came from: straight from its member, rebuilt from
 * parity, rebuilt because a map says the member's bytes are untrusted, or
 * lost.  Unlike cat, it reads past lost bytes to the end, so the picture
 * shows every problem on every member. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "outfile.h"
#include "picture.h"
#include "pipeline.h"
#include "util.h"

#define FALLBACK_STEP (64u << 10)   /* a failed segment is read again in these */

struct map_ev {
	uint64_t off, len;
	enum volume_src how;
	int role;
};

/* One slot's observations of a segment, kept until the read is known to
 * have observed every byte. */
struct map_slot {
	struct map_ev *v;
	size_t n, cap;
	bool oom;
};

struct map_run {
	struct array *a;
	struct picture *pic;
	struct map_slot *slots;    /* [pipeline_nslots], owned */
	struct volume_observer *obs;
};

static void slot_served(void *ctx, uint64_t off, uint64_t len, enum volume_src how, int role, const bool *used)
{
	struct map_slot *sl = ctx;

	if (sl->n == sl->cap) {
		size_t cap = sl->cap ? 2 * sl->cap : 256;
		struct map_ev *v = realloc(sl->v, cap * sizeof(*v));

		if (!v) {
			sl->oom = true;
			return;
		}
		sl->v = v;
		sl->cap = cap;
	}
	sl->v[sl->n++] = (struct map_ev){ off, len, how, role };
}

static void slot_commit(struct map_run *r, struct map_slot *sl)
{
	for (size_t i = 0; i < sl->n; i++)
		picture_add(r->pic, sl->v[i].off, sl->v[i].len, sl->v[i].how, sl->v[i].role);
	sl->n = 0;
}

/* pipeline read(): the segment observed; a read that fails stops early,
 * so then it is read again in steps that each observe all their bytes
 * (one stripe's pieces, never across a reshape's position). */
static int map_read(void *ctx, int slot, uint8_t *buf, size_t len, uint64_t off, uint64_t *bad_off)
{
	struct map_run *r = ctx;
	struct map_slot *sl = &r->slots[slot];
	uint64_t bad;
	int ret;

	sl->n = 0;
	ret = array_read_observed(r->a, buf, len, off, &bad, &r->obs[slot]);
	if (ret && ret != -EIO)
		goto out;
	if (!ret) {
		slot_commit(r, sl);
		goto out;
	}
	for (uint64_t x = off, end = off + len; x < end;) {
		uint64_t n = FALLBACK_STEP - x % FALLBACK_STEP;

		if (n > end - x)
			n = end - x;
		if (r->a->prev && x < r->a->reshape_bytes && x + n > r->a->reshape_bytes)
			n = r->a->reshape_bytes - x;
		sl->n = 0;
		ret = array_read_observed(r->a, buf + (x - off), (size_t)n, x, &bad, &r->obs[slot]);
		if (ret && ret != -EIO)
			goto out;
		slot_commit(r, sl);
		x += n;
	}
	ret = 0;
out:
	*bad_off = off;
	if (!ret && sl->oom)
		ret = -ENOMEM;
	return ret;
}

static int map_consume(void *ctx, int slot, const uint8_t *buf, size_t len, uint64_t off, int ret,
		       uint64_t bad_off)
{
	if (ret) {
		pipeline_read_error(ret, off, bad_off);
		return -EIO;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg map [OPTIONS] [ARRAY OPTIONS] MEMBER...\n\n"
		   "Read the whole array and say where its bytes came from: read straight from\n"
		   "their member (direct), rebuilt from parity because a member is missing or\n"
		   "failed to read (rebuilt), rebuilt because the member's image holds untrusted\n"
		   "bytes there (untrusted: a ddrescue mapfile, EWF acquisition errors, md's\n"
		   "bad-block log) or not servable at all (lost).  Lost bytes do not stop it.\n\n"
		   "  --svg FILE     draw it: a self-contained SVG, members across, offsets in\n"
		   "                 their data area down, each region coloured by where its\n"
		   "                 bytes came from, with a legend and the totals\n"
		   "  --json         the totals as one JSON object\n"
		   "  --threads N    reader threads (default 2)\n"
		   "  -h, --help     this text\n\n" ARRAY_OPTIONS_HELP
		   "\nExit status: 0 every byte could be served, 1 some are lost, 2 error.\n");
}

static void print_totals(bool json, const struct array *a, const uint64_t *t, const char *svg)
{
	char sz[32];

	if (json) {
		printf("{\"array_bytes\":%" PRIu64, a->array_bytes);
		for (int c = 0; c < PIC_NCLASSES; c++)
			printf(",\"%s_bytes\":%" PRIu64, picture_class_name(c), t[c]);
		printf(",\"members\":[");
		for (int r = 0; r < a->geom.raid_disks; r++) {
			const struct array_member *m = &a->members[r];

			printf("%s{\"role\":%d,\"path\":", r ? "," : "", r);
			json_str_or_null(stdout, m->path);
			printf(",\"state\":\"%s\",\"untrusted_bytes\":%" PRIu64 ",\"untrusted_ranges\":%" PRIu64 "}",
			       member_state_name(m->state), m->untrusted_bytes, m->untrusted_ranges);
		}
		printf("],\"svg\":");
		json_str_or_null(stdout, svg);
		printf("}\n");
		return;
	}
	printf("array: %" PRIu64 " bytes (%s)\n", a->array_bytes, fmt_size(a->array_bytes, sz, sizeof(sz)));
	for (int c = 0; c < PIC_NCLASSES; c++)
		printf("  %-10s %15" PRIu64 " bytes (%.4f%%)\n", picture_class_name(c), t[c],
		       a->array_bytes ? 100.0 * (double)t[c] / (double)a->array_bytes : 0.0);
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];

		printf("role %d: %s %s", r, member_state_name(m->state), m->path ? m->path : "-");
		if (m->untrusted_ranges)
			printf(", %" PRIu64 " untrusted bytes in %" PRIu64 " range(s)", m->untrusted_bytes,
			       m->untrusted_ranges);
		printf("\n");
	}
	if (svg)
		printf("picture: %s\n", svg);
}

int cmd_map(int argc, char **argv)
{
	enum { OPT_SVG = 0x2101, OPT_JSON, OPT_THREADS };
	static const struct option longopts[] = {
		{ "svg", required_argument, NULL, OPT_SVG },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "help", no_argument, NULL, 'h' },
		ARRAY_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct array_args aa;
	struct array *a = NULL;
	struct map_run run = { 0 };
	struct outfile out = { .fd = -1 };
	struct outfile_opts oo = { .replace = true };
	uint64_t tot[PIC_NCLASSES];
	const char *svg = NULL;
	bool json = false;
	long long nthreads = 2;
	char err[PATH_MAX + 256];
	int opt, ret = EXIT_ERR, nslots;

	array_args_init(&aa);
	while ((opt = cli_getopt(argc, argv, "h", longopts)) != -1) {
		int r = array_args_opt(&aa, opt, optarg);

		if (r < 0)
			goto out;
		if (r)
			continue;
		switch (opt) {
		case OPT_SVG: svg = optarg; break;
		case OPT_JSON: json = true; break;
		case OPT_THREADS:
			if (parse_int(optarg, 1, 64, &nthreads)) {
				msg("--threads %s: give a number from 1 to 64", optarg);
				goto out;
			}
			break;
		case 'h': usage(stdout); ret = EXIT_OK; goto out;
		default: goto out;
		}
	}
	if (optind >= argc) {
		cli_usage_error("give the member images");
		goto out;
	}
	if (array_args_open(&aa, argc - optind, argv + optind, &a))
		goto out;
	/* the picture's file, refused now if it would land on evidence */
	if (svg && outfile_open(&out, svg, &oo, err, sizeof(err))) {
		msg("cannot write the picture: %s", err);
		goto out;
	}
	nslots = pipeline_nslots((int)nthreads);
	run.a = a;
	run.slots = calloc((size_t)nslots, sizeof(*run.slots));
	run.obs = calloc((size_t)nslots, sizeof(*run.obs));
	if (!run.slots || !run.obs || picture_new(&run.pic, a)) {
		msg("out of memory");
		goto out;
	}
	for (int i = 0; i < nslots; i++)
		run.obs[i] = (struct volume_observer){ slot_served, &run.slots[i] };
	{
		struct pipeline pl = {
			.vol = array_volume(a), .start = 0, .length = a->array_bytes, .nthreads = (int)nthreads,
			.read = map_read, .read_ctx = &run, .consume = map_consume, .ctx = &run,
		};

		if (pipeline_run(&pl))
			goto out;
	}
	if (svg) {
		FILE *f = outfile_stdio(&out);

		if (!f || picture_write_svg(run.pic, f) | fclose(f) || outfile_commit(&out, err, sizeof(err))) {
			msg("%s: cannot write the picture%s%s", svg, f ? ": " : "", f ? err : "");
			goto out;
		}
	}
	picture_totals(run.pic, tot);
	print_totals(json, a, tot, svg);
	ret = tot[PIC_LOST] ? EXIT_FOUND : EXIT_OK;
	if (tot[PIC_LOST])
		msg("%" PRIu64 " array bytes cannot be served (lost)", tot[PIC_LOST]);
out:
	outfile_abort(&out);
	for (int i = 0; run.slots && i < pipeline_nslots((int)nthreads); i++)
		free(run.slots[i].v);
	free(run.slots);
	free(run.obs);
	picture_free(run.pic);
	array_free(a);
	array_args_free(&aa);
	return ret;
}
