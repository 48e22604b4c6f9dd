/* cmd_replay.c - raidimg replay: assemble an array again from a record
 * (--record of cat, export or examine) and check that the same bytes come
 * out.
 *
 * 1. every member image's sha256 must equal the recorded one (else refuse:
 *    the evidence is not what was used);
 * 2. the array is assembled with the recorded parameters and must have the
 *    recorded geometry, with every image in its recorded role;
 * 3. the recorded range is read (and written with -o, in the recorded
 *    output format) and its sha256 compared with the recorded one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "custody.h"
#include "pipeline.h"
#include "progress.h"
#include "sink.h"
#include "util.h"

struct replay_out {
	struct sink *sink;          /* NULL: hash only */
	struct sha256 *h;
	struct progress pg;
	uint64_t done;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg replay [OPTIONS] RECORD\n\n"
		   "Repeat the assembly described by RECORD (written by cat, export or examine\n"
		   "with --record): check that every member image still has the recorded sha256\n"
		   "(refusing otherwise), assemble the array with the recorded parameters, check\n"
		   "its geometry and member roles, read the recorded range and compare its sha256\n"
		   "with the recorded one.\n\n"
		   "  -o, --output OUT     also write the bytes to OUT, in the recorded format (raw,\n"
		   "                       sparse raw or zstd seekable; '-' for standard output)\n"
		   "  --overwrite          replace OUT if it exists\n"
		   "  --threads N          reader threads (default 2)\n"
		   "  -h, --help           this text\n\n"
		   "Exit status: 0 the same bytes (or, for a record without an array sha256, the\n"
		   "assembly was repeated), 1 the array bytes differ from the record, 2 refused\n"
		   "(a member changed or is missing, another geometry) or error.\n");
}

/* Step 1: the images must be the recorded ones. */
static int verify_members(const struct replay_spec *rs, const char *record)
{
	int checked = 0, bad = 0;

	for (int i = 0; i < rs->nmembers; i++) {
		const struct replay_member *m = &rs->members[i];
		char hex[SHA256_HEX], err[512];

		if (!m->sha256[0]) {
			msg("%s: no sha256 recorded for %s: cannot check it", record, m->path);
			bad++;
			continue;
		}
		if (custody_hash_file(m->path, hex, NULL, err, sizeof(err))) {
			msg("%s", err);
			bad++;
			continue;
		}
		if (strcmp(hex, m->sha256)) {
			msg("%s: sha256 is now %s, the record says %s: the image changed; refusing to replay",
			    m->path, hex, m->sha256);
			bad++;
			continue;
		}
		checked++;
	}
	if (!bad && !checked) {
		msg("%s: the record lists no member images", record);
		bad++;
	}
	if (!bad)
		fprintf(stderr, "%s: replay: %d image(s) have their recorded sha256\n", prog_name, checked);
	return bad ? -1 : 0;
}

/* Step 2: same geometry, every image in its recorded role. */
static int verify_geometry(const struct replay_spec *rs, const struct array *a, const char *record)
{
	if (a->geom.level != rs->level || a->geom.layout != rs->layout || a->geom.raid_disks != rs->raid_disks ||
	    a->geom.chunk_bytes != rs->chunk_bytes || a->array_bytes != rs->array_bytes) {
		msg("%s: the array assembled now (RAID%d %s, %d members, chunk %" PRIu32 ", %" PRIu64 " bytes) is "
		    "not the recorded one (RAID%d %s, %d members, chunk %" PRIu32 ", %" PRIu64 " bytes)", record,
		    a->geom.level, layout_name(a->geom.level, a->geom.layout), a->geom.raid_disks,
		    a->geom.chunk_bytes, a->array_bytes, rs->level, layout_name(rs->level, rs->layout),
		    rs->raid_disks, rs->chunk_bytes, rs->array_bytes);
		return -1;
	}
	for (int i = 0; i < rs->nmembers; i++) {
		const struct replay_member *m = &rs->members[i];
		const struct array_member *am;

		if (m->role < 0)
			continue;
		am = m->role < a->geom.raid_disks ? &a->members[m->role] : NULL;
		if (!am || !am->src || !source_image(am->src)->path || strcmp(source_image(am->src)->path, m->path) ||
		    am->partition != m->partition) {
			msg("%s: %s%s was role %d in the record but is not now", record, m->path,
			    m->partition ? " (a partition of it)" : "", m->role);
			return -1;
		}
	}
	return 0;
}

static int replay_consume(void *ctx, int slot, const uint8_t *buf, size_t len, uint64_t off, int ret,
			  uint64_t bad_off)
{
	struct replay_out *o = ctx;

	if (ret) {
		pipeline_read_error(ret, off, bad_off);
		return -EIO;
	}
	sha256_update(o->h, buf, len);
	if (o->sink && sink_write(o->sink, buf, len))
		return -EIO;
	o->done += len;
	progress_update(&o->pg, o->done);
	return 0;
}

static enum sink_kind recorded_kind(const struct replay_spec *rs, const char *out)
{
	if (!strcmp(rs->output_format, "zstd-seekable"))
		return SINK_ZSTD;
	return out ? SINK_SPARSE : SINK_RAW;
}

/* Step 3: read the range, write it if asked, compare. */
static int replay_read(const struct replay_spec *rs, struct array *a, const char *out, bool overwrite,
		       int nthreads)
{
	struct replay_out ro = { 0 };
	struct pipeline pl = { 0 };
	struct sink_opts so = {
		.path = out && strcmp(out, "-") ? out : NULL,
		.kind = recorded_kind(rs, out && strcmp(out, "-") ? out : NULL),
		.overwrite = overwrite,
		.z = { .level = rs->zstd_level ? rs->zstd_level : 3,
		       .frame_bytes = rs->zstd_frame_bytes ? rs->zstd_frame_bytes : 1u << 20,
		       .nthreads = nthreads },
	};
	char hex[SHA256_HEX] = "";
	int ret = EXIT_ERR;

	if (rs->offset > a->array_bytes || rs->length > a->array_bytes - rs->offset) {
		msg("the recorded range %" PRIu64 "+%" PRIu64 " is outside the array", rs->offset, rs->length);
		return EXIT_ERR;
	}
	if (sha256_new(&ro.h) || (out && sink_open(&ro.sink, &so)))
		goto out;
	pl.vol = array_volume(a);
	pl.start = rs->offset;
	pl.length = rs->length;
	pl.nthreads = nthreads;
	pl.consume = replay_consume;
	pl.ctx = &ro;
	pl.stream_of = a;       /* leave the members' page cache as found */
	progress_start(&ro.pg, "replay", rs->length, isatty(STDERR_FILENO));
	ret = pipeline_run(&pl);
	progress_end(&ro.pg, ro.done, !ret);
	if (ret || (ro.sink && sink_finish(ro.sink))) {
		ret = EXIT_ERR;
		goto out;
	}
	sha256_final(ro.h, hex);
	if (!rs->array_sha256[0]) {
		fprintf(stderr, "%s: replay: the record has no array sha256 to compare with; bytes %" PRIu64
			"-%" PRIu64 " have sha256 %s\n", prog_name, rs->offset, rs->offset + rs->length - 1, hex);
		ret = EXIT_OK;
	} else if (strcmp(hex, rs->array_sha256)) {
		msg("replay: the array bytes differ from the record: sha256 %s, recorded %s", hex, rs->array_sha256);
		ret = EXIT_FOUND;
	} else {
		fprintf(stderr, "%s: replay: the array bytes match the record (sha256 %s)\n", prog_name, hex);
		ret = EXIT_OK;
	}
out:
	sink_free(ro.sink);
	sha256_free(ro.h);
	return ret;
}

int cmd_replay(int argc, char **argv)
{
	enum { OPT_OVERWRITE = 0x2001, OPT_THREADS };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct replay_spec rs = { 0 };
	struct array *a = NULL;
	const char *out = NULL, *record;
	char err[ERR_MAX] = "";
	bool overwrite = false;
	long long nthreads = 2;
	int opt, ret = EXIT_ERR;

	while ((opt = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case OPT_OVERWRITE: overwrite = true; break;
		case OPT_THREADS:
			if (parse_int(optarg, 1, 64, &nthreads)) {
				msg("--threads %s: give a number from 1 to 64", optarg);
				return EXIT_ERR;
			}
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: return EXIT_ERR;
		}
	}
	if (optind != argc - 1) {
		cli_usage_error(optind >= argc ? "give the record" : "one record at a time");
		return EXIT_ERR;
	}
	record = argv[optind];
	if (replay_load(record, &rs, err, sizeof(err))) {
		msg("%s", err);
		return EXIT_ERR;
	}
	if (verify_members(&rs, record))
		goto out;
	/* the recorded images (rs owns them; the assembly only looks) */
	rs.ao.g.paths = (const char **)rs.paths;
	rs.ao.g.npaths = rs.npaths;
	if (array_assemble(&rs.ao, &a, err, sizeof(err))) {
		msg("%s", err);
		goto out;
	}
	print_array_warnings(a);
	if (verify_geometry(&rs, a, record))
		goto out;
	ret = replay_read(&rs, a, out, overwrite, (int)nthreads);
out:
	array_free(a);
	replay_spec_free(&rs);
	return ret;
}
