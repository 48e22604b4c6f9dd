/* cmd_detect.c - raidimg detect: the geometry of an array whose metadata is
 * gone (level, layout, chunk, role order, missing roles, data offset), from
 * bounded samples of the member images (core/detect.h does the finding;
 * here the images are opened through the io layer, read-only and
 * registered as evidence, and the answer is printed). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "array.h"
#include "cli.h"
#include "detect.h"
#include "geom_args.h"
#include "layout.h"
#include "source.h"
#include "sysio.h"
#include "util.h"

/* One image as detect reads it: its source and the first read that failed. */
struct det_img {
	const char *path;           /* as given */
	struct source *src;         /* owned */
	int read_err;               /* 0 or the -errno of the failed read */
	uint64_t err_off;
	size_t err_len;
	uint64_t untrusted_read;    /* bytes read that a mapfile marks as not rescued */
};

static int det_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct det_img *im = ctx;
	int ret = source_pread(im->src, buf, len, off);

	if (ret && !im->read_err) {
		im->read_err = ret;
		im->err_off = off;
		im->err_len = len;
	}
	if (!ret && im->src->untrusted)
		im->untrusted_read += range_list_bytes_in(&im->src->untrusted->r, off, len, NULL);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg detect [OPTIONS] IMAGE...\n\n"
		   "Find the geometry of a RAID4/5/6 array whose md metadata is gone (overwritten\n"
		   "superblocks, a hardware controller's disks, images carved out of something\n"
		   "else): which images belong to it, the level, layout, chunk size, role order\n"
		   "and missing roles, and where data starts in the images.  It reads bounded\n"
		   "samples of each image (--max-read), never writes, and prints the candidates\n"
		   "best first, each with its score, its evidence and the array options that\n"
		   "read it (give them to cat, mount, examine... with the same images in the\n"
		   "same order), then a verdict: certain, likely or ambiguous (and why).\n"
		   "Evidence: parity (RAID4/5 rows XOR to zero; RAID6's Q names the role order),\n"
		   "file systems and partition tables at their array offsets (MBR, GPT, ext2/3/4,\n"
		   "NTFS, FAT, XFS, LVM, LUKS, tar), content running across chunk boundaries.\n\n"
		   "Hints, each optional (what you know):\n"
		   "  --level 4|5|6        the RAID level (also raid4, raid5, raid6)\n"
		   "  --devices N          the member count, missing members included\n"
		   "  --chunk SIZE         the chunk size (a plain number is KiB, as in mdadm)\n"
		   "  --data-offset SIZE   where data starts in every image (a multiple of 512)\n"
		   "Reading:\n"
		   "  --max-read SIZE      bytes read per image at most (default 32M, at least 1M)\n"
		   "  --map IMAGE=MAPFILE  IMAGE was made by GNU ddrescue and MAPFILE is its\n"
		   "                       mapfile (IMAGE.map or STEM.map beside an image is\n"
		   "                       taken by itself, and said); blocks not rescued are\n"
		   "                       read as the image holds them and counted (untrusted)\n"
		   "  --no-maps            take no mapfile but those given with --map\n"
		   "Output:\n"
		   "  --json               the answer as one JSON object\n"
		   "  -h, --help           this text\n\n"
		   "IMAGE: up to %d images, in any order (raw files, block devices, zstd\n"
		   "seekable, E01, split raw); --order in the answer counts them from 0 in the\n"
		   "order given.  SIZE takes K, M, G, T suffixes (binary) or s for sectors.\n\n"
		   "Exit status: 0 certain or likely (the first candidate is the answer),\n"
		   "1 ambiguous (the evidence cannot decide: see the reason), 2 error or bad input.\n",
		DETECT_MAX_IMAGES);
}

/* The array options of candidate c for raidimg's other commands, and the
 * images to give them (paths[0..*npaths)): the images the candidate uses,
 * in the order given, its --order renumbered to count those only (the
 * other commands want every image they are given named in --order).  When
 * it uses them all, that is the command line as given.  words point into
 * buf.  0, or -ENOSPC. */
static int cand_args(const struct detect_candidate *c, const struct det_img *im, int nimg, char *buf,
		     size_t buflen, const char **words, int maxwords, int *nwords, const char **paths, int *npaths)
{
	struct detect_candidate r = *c;
	int rank[DETECT_MAX_IMAGES], n = 0;

	for (int i = 0; i < nimg; i++) {
		rank[i] = -1;
		for (int k = 0; k < c->raid_disks; k++)
			if (c->order[k] == i)
				rank[i] = n;
		if (rank[i] >= 0)
			paths[n++] = im[i].path;
	}
	for (int k = 0; k < c->raid_disks; k++)
		r.order[k] = c->order[k] >= 0 && c->order[k] < nimg ? rank[c->order[k]] : -1;
	*npaths = n;
	return detect_array_args(&r, buf, buflen, words, maxwords, nwords);
}

/* The JSON "order": image indices, "missing" for a missing role. */
static void print_order_json(FILE *f, const struct detect_candidate *c)
{
	for (int r = 0; r < c->raid_disks; r++) {
		if (r)
			fputc(',', f);
		if (c->order[r] < 0)
			fputs("\"missing\"", f);
		else
			fprintf(f, "%d", c->order[r]);
	}
}

static void print_text(const struct detect_result *res, const struct det_img *im, int nimg, double secs)
{
	uint64_t total = 0;
	char sz[32], sz2[32];

	printf("verdict: %s: %s\n", detect_verdict_name(res->verdict), res->reason);
	for (int i = 0; i < res->ncand; i++) {
		const struct detect_candidate *c = &res->cand[i];
		char buf[1024];
		const char *w[32], *paths[DETECT_MAX_IMAGES];
		int nw = 0, np = 0;

		if (cand_args(c, im, nimg, buf, sizeof(buf), w, 32, &nw, paths, &np))
			nw = np = 0;
		printf("\ncandidate %d: score %.1f: RAID%d %s, %d members, %s chunks, data offset %s",
		       i + 1, c->score, c->level, layout_name(c->level, c->layout), c->raid_disks,
		       fmt_size(c->chunk_bytes, sz, sizeof(sz)), fmt_size(c->data_offset, sz2, sizeof(sz2)));
		if (c->data_offset % 1024)
			printf(" (%" PRIu64 " bytes)", c->data_offset);
		printf("\n  options:");
		for (int k = 0; k < nw; k++)
			printf(" %s", w[k]);
		if (np < nimg) {
			printf("\n  images:");
			for (int k = 0; k < np; k++)
				printf(" %s", paths[k]);
			printf("  (the --order above counts these)");
		}
		printf("\n");
		/* the roles spelled out for the best one */
		for (int r = 0; i == 0 && r < c->raid_disks; r++) {
			if (c->order[r] < 0)
				printf("  role %2d: missing\n", r);
			else
				printf("  role %2d: image %d, %s\n", r, c->order[r], im[c->order[r]].path);
		}
		for (int e = 0; e < c->nevidence; e++)
			printf("  evidence: %s\n", c->evidence[e]);
	}
	if (res->nexcluded)
		printf("\n");
	for (int i = 0; i < res->nexcluded; i++)
		printf("excluded: %d %s: %s\n", res->excluded[i].image, im[res->excluded[i].image].path,
		       res->excluded[i].why);
	for (int i = 0; i < nimg; i++) {
		total += res->bytes_read[i];
		if (im[i].untrusted_read)
			printf("untrusted: %s: %" PRIu64 " of the bytes read are not rescued (its mapfile): read as the "
			       "image holds them\n", im[i].path, im[i].untrusted_read);
	}
	printf("\nread: %" PRIu64 " bytes (%s) per image at most, %" PRIu64 " in all, %.2f s\n", res->bytes_read_max,
	       fmt_size(res->bytes_read_max, sz, sizeof(sz)), total, secs);
}

static void print_json(const struct detect_result *res, const struct det_img *im, int nimg, double secs)
{
	uint64_t total = 0;

	printf("{\"verdict\":\"%s\",\"reason\":", detect_verdict_name(res->verdict));
	json_str(stdout, res->reason);
	printf(",\"candidates\":[");
	for (int i = 0; i < res->ncand; i++) {
		const struct detect_candidate *c = &res->cand[i];
		char buf[1024];
		const char *w[32], *paths[DETECT_MAX_IMAGES];
		int nw = 0, np = 0;

		if (cand_args(c, im, nimg, buf, sizeof(buf), w, 32, &nw, paths, &np))
			nw = np = 0;
		printf("%s{\"level\":%d,\"layout\":", i ? "," : "", c->level);
		json_str(stdout, layout_name(c->level, c->layout));
		printf(",\"raid_disks\":%d,\"chunk_bytes\":%" PRIu32 ",\"data_offset_bytes\":%" PRIu64 ",\"order\":[",
		       c->raid_disks, c->chunk_bytes, c->data_offset);
		print_order_json(stdout, c);
		printf("],\"array_args\":[");
		for (int k = 0; k < nw; k++) {
			if (k)
				putchar(',');
			json_str(stdout, w[k]);
		}
		printf("],\"paths\":[");
		bool any_hex = false;
		for (int k = 0; k < np; k++) {
			if (k)
				putchar(',');
			json_str(stdout, paths[k]);
			any_hex = any_hex || !utf8_valid(paths[k]);
		}
		/* the exact bytes of names that are not UTF-8, where they are */
		if (any_hex) {
			printf("],\"paths_hex\":[");
			for (int k = 0; k < np; k++) {
				size_t len = strlen(paths[k]);
				char *hex = utf8_valid(paths[k]) ? NULL : malloc(2 * len + 1);

				if (hex)
					hex_encode(paths[k], len, hex);
				printf("%s", k ? "," : "");
				if (hex)
					printf("\"%s\"", hex);
				else
					printf("null");
				free(hex);
			}
		}
		printf("],\"score\":%.2f,\"evidence\":[", c->score);
		for (int e = 0; e < c->nevidence; e++) {
			if (e)
				putchar(',');
			json_str(stdout, c->evidence[e]);
		}
		printf("]}");
	}
	printf("],\"excluded\":[");
	for (int i = 0; i < res->nexcluded; i++) {
		printf("%s{\"image\":", i ? "," : "");
		json_path(stdout, im[res->excluded[i].image].path, "image");
		printf(",\"why\":");
		json_str(stdout, res->excluded[i].why);
		printf("}");
	}
	printf("],\"images\":[");
	for (int i = 0; i < nimg; i++) {
		printf("%s{\"image\":", i ? "," : "");
		json_path(stdout, im[i].path, "image");
		printf(",\"image_bytes\":%" PRIu64 ",\"read_bytes\":%" PRIu64 ",\"untrusted_bytes\":%" PRIu64 "}",
		       im[i].src->size, res->bytes_read[i], im[i].untrusted_read);
		total += res->bytes_read[i];
	}
	printf("],\"read_bytes\":%" PRIu64 ",\"seconds\":%.3f}\n", total, secs);
}

/* The images, opened read-only as every command opens members (registered
 * as evidence: nothing this run writes may land on them), with their
 * mapfiles (array_open_images).  0 or -1 (said). */
static int open_images(struct det_img *im, int nimg, char **paths, struct geom_args *ga)
{
	char err[ERR_MAX], *notes = NULL;
	struct source **srcs = NULL;

	ga->paths = calloc((size_t)nimg, sizeof(*ga->paths));
	if (!ga->paths) {
		msg("out of memory");
		return -1;
	}
	for (int i = 0; i < nimg; i++)
		ga->paths[i] = paths[i];
	ga->npaths = nimg;
	if (array_open_images(ga, SOURCE_READ, "read as the image holds them (counted as untrusted)",
			      &srcs, &notes, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	for (int i = 0; i < nimg; i++) {
		im[i].path = paths[i];
		im[i].src = srcs[i];
	}
	free(srcs);
	for (char *line = notes, *nl; line && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		*nl = '\0';
		msg("%s", line);
	}
	free(notes);
	for (int i = 0; i < nimg; i++) {
		if (im[i].src->size < 4096) {
			msg("%s: %" PRIu64 " bytes: too small to be a member image (4 KiB at least)", paths[i],
			    im[i].src->size);
			return -1;
		}
	}
	return 0;
}

/* Members of one array are normally the same size; say so when they are
 * not (detect reads past the end of the smaller ones as zeros). */
static void warn_sizes(const struct det_img *im, int nimg)
{
	int lo = 0, hi = 0;

	for (int i = 1; i < nimg; i++) {
		if (im[i].src->size < im[lo].src->size)
			lo = i;
		if (im[i].src->size > im[hi].src->size)
			hi = i;
	}
	if (im[lo].src->size != im[hi].src->size)
		msg("warning: the images differ in size (%s: %" PRIu64 " bytes, %s: %" PRIu64 " bytes): members of "
		    "one array usually are the same size; past the end of the smaller ones detect reads zeros",
		    im[lo].path, im[lo].src->size, im[hi].path, im[hi].src->size);
}

int cmd_detect(int argc, char **argv)
{
	enum { OPT_JSON = 0x2201, OPT_LEVEL, OPT_DEVICES, OPT_CHUNK, OPT_DATA_OFFSET, OPT_MAX_READ };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "level", required_argument, NULL, OPT_LEVEL },
		{ "devices", required_argument, NULL, OPT_DEVICES },
		{ "chunk", required_argument, NULL, OPT_CHUNK },
		{ "data-offset", required_argument, NULL, OPT_DATA_OFFSET },
		{ "max-read", required_argument, NULL, OPT_MAX_READ },
		{ "map", required_argument, NULL, GEOM_OPT_MAP },
		{ "no-maps", no_argument, NULL, GEOM_OPT_NO_MAPS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct detect_hints h;
	struct det_img im[DETECT_MAX_IMAGES];
	struct dev_reader dev[DETECT_MAX_IMAGES];
	struct detect_result *res = NULL;
	struct geom_args ga;
	char err[ERR_MAX];
	bool json = false;
	int opt, nimg = 0, ret = EXIT_ERR, rc;
	long long v;
	uint64_t sz;

	memset(im, 0, sizeof(im));
	detect_hints_init(&h);
	geom_args_init(&ga);     /* only its mapfiles: --map, --no-maps */
	while ((opt = cli_getopt(argc, argv, "h", longopts)) != -1) {
		switch (opt) {
		case OPT_JSON: json = true; break;
		case OPT_LEVEL:
			if (geom_parse_level(optarg, &h.level, err, sizeof(err))) {
				cli_usage_error("%s", err);
				goto out;
			}
			break;
		case OPT_DEVICES:
			if (parse_int(optarg, 3, DETECT_MAX_DISKS, &v)) {
				cli_usage_error("--devices %s: give a member count from 3 to %d", optarg,
						DETECT_MAX_DISKS);
				goto out;
			}
			h.devices = (int)v;
			break;
		case OPT_CHUNK:
			if (geom_parse_chunk(optarg, &h.chunk_bytes, err, sizeof(err))) {
				cli_usage_error("%s", err);
				goto out;
			}
			break;
		case OPT_DATA_OFFSET:
			if (parse_size(optarg, &sz) || sz % 512 || sz > INT64_MAX) {
				cli_usage_error("--data-offset %s: give a size that is a multiple of 512 bytes", optarg);
				goto out;
			}
			h.data_offset = (int64_t)sz;
			break;
		case OPT_MAX_READ:
			if (parse_size(optarg, &sz) || sz < (1u << 20)) {
				cli_usage_error("--max-read %s: give a size of 1M or more", optarg);
				goto out;
			}
			h.max_read = sz;
			break;
		case GEOM_OPT_MAP:
		case GEOM_OPT_NO_MAPS:
			if (geom_args_opt(&ga, opt, optarg, err, sizeof(err)) < 0) {
				cli_usage_error("%s", err);
				goto out;
			}
			break;
		case 'h': usage(stdout); ret = EXIT_OK; goto out;
		default: goto out;
		}
	}
	nimg = argc - optind;
	if (nimg < 2) {
		cli_usage_error(nimg ? "one image given: detect compares the images of an array, give them all (2 "
				       "at least)" : "give the member images");
		nimg = 0;
		goto out;
	}
	if (nimg > DETECT_MAX_IMAGES) {
		cli_usage_error("%d images given: detect takes %d at most", nimg, DETECT_MAX_IMAGES);
		nimg = 0;
		goto out;
	}
	if (open_images(im, nimg, argv + optind, &ga))
		goto out;
	warn_sizes(im, nimg);
	for (int i = 0; i < nimg; i++)
		dev[i] = (struct dev_reader){ .size = im[i].src->size, .read = det_read, .ctx = &im[i] };
	res = malloc(sizeof(*res));
	if (!res) {
		msg("out of memory");
		goto out;
	}
	uint64_t t0 = now_ns();
	rc = detect_run(dev, nimg, &h, res, err, sizeof(err));
	double secs = (double)(now_ns() - t0) / 1e9;
	if (rc) {
		for (int i = 0; i < nimg; i++) {
			if (im[i].read_err) {
				msg("%s: read of %zu bytes at offset %" PRIu64 " failed: %s", im[i].path, im[i].err_len,
				    im[i].err_off, strerror(-im[i].read_err));
				goto out;
			}
		}
		msg("%s", err[0] ? err : strerror(-rc));
		goto out;
	}
	if (json)
		print_json(res, im, nimg, secs);
	else
		print_text(res, im, nimg, secs);
	ret = res->verdict == DETECT_AMBIGUOUS ? EXIT_FOUND : EXIT_OK;
out:
	free(res);
	for (int i = 0; i < DETECT_MAX_IMAGES; i++)
		source_close(im[i].src);
	geom_args_free(&ga);
	return ret;
}
