/* cmd_rebuild.c - raidimg rebuild: write a complete replacement member.
 *
 * The data area of role K is recomputed stripe by stripe from the other
 * members (the scrub engine in SCRUB_REBUILD mode: data chunks from P and
 * the rest, P and Q regenerated), never read from a role-K image even if
 * one is given.  Then the superblock: the freshest member's, with role K at
 * a free device slot (dev_number), a new device uuid and the same event
 * count, so that raidimg and Linux md assemble the array complete with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"
#include "probe.h"
#include "engine_args.h"
#include "sysio.h"
#include "util.h"

struct rebuild_args {
	struct scrub_opts so;
	int role;
	const char *output;
	bool overwrite, json, progress;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg rebuild [OPTIONS] [ARRAY OPTIONS] MEMBER... --role K -o NEW.img\n\n"
		   "Write a complete replacement image for role K: its chunks (data, P or Q) are\n"
		   "recomputed from the other members, and it gets the freshest member's md\n"
		   "superblock with role K, a free device slot, a new device uuid and the same event\n"
		   "count, so that the array assembles complete with it (raidimg, Linux md).  An\n"
		   "image of role K among the MEMBERs is never read.  The members are opened\n"
		   "read-only; only NEW.img is written.  A volume of an IMSM or DDF container\n"
		   "gets the container's metadata with the new disk in sync in role K (IMSM: its\n"
		   "drive serial is NEW.img's name without extensions, or --serial NEW.img=SERIAL).\n"
		   "Without metadata (manual geometry) NEW.img holds the data area only, at\n"
		   "--data-offset.\n\n"
		   "  --role K               the role to rebuild (0 .. members-1)\n"
		   "  -o, --output FILE      the new image (refused if it exists, unless --overwrite;\n"
		   "                         never one of the members)\n"
		   "  --overwrite            replace FILE if it exists\n"
		   "  --json                 print the summary as a JSON object\n"
		   "  --request-size SIZE    bytes read from each member per request (default 1M)\n"
		   "  --threads N            reader threads (default: members, at most 4)\n"
		   "  --speed-limit-max RATE ceiling, KiB/s per member or e.g. 50M (default unlimited)\n"
		   "  --progress, --no-progress  progress bar on stderr (default: if it is a terminal)\n"
		   "  -h, --help             this text\n\n" ARRAY_OPTIONS_HELP
		   "\nExit status: 0 written, 2 error (the partial output is removed).\n");
}

static int parse_args(int argc, char **argv, struct array_args *aa, struct rebuild_args *ra)
{
	enum { O_ROLE = 0x2201, O_OVER, O_JSON };
	static const struct option longopts[] = {
		{ "role", required_argument, NULL, O_ROLE },
		{ "output", required_argument, NULL, 'o' },
		{ "overwrite", no_argument, NULL, O_OVER },
		{ "json", no_argument, NULL, O_JSON },
		SCRUB_ENGINE_LONG_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		ARRAY_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	long long v;
	int opt;

	while ((opt = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
		int r = array_args_opt(aa, opt, optarg);
		if (!r)
			r = scrub_engine_opt(&ra->so, &ra->progress, opt, optarg);
		if (r < 0)
			return -1;
		if (r)
			continue;
		switch (opt) {
		case O_ROLE:
			if (parse_int(optarg, 0, LAYOUT_MAX_DISKS - 1, &v)) {
				msg("--role %s: give a role number (0 .. members-1)", optarg);
				return -1;
			}
			ra->role = (int)v;
			break;
		case 'o': ra->output = optarg; break;
		case O_OVER: ra->overwrite = true; break;
		case O_JSON: ra->json = true; break;
		case 'h': usage(stdout); return 1;
		default: return -1;
		}
	}
	if (optind >= argc || ra->role < 0 || !ra->output)
		return cli_usage_error("give the members, --role K and -o NEW.img");
	return 0;
}

/* ---- the new member's superblock ---- */

/* The member whose superblock the new one copies: the freshest (events
 * equal to the array's, then the newest volume configuration), preferably
 * not role K itself.  NULL without metadata. */
static const struct array_member *pick_template(const struct array *a, int role)
{
	const struct array_member *best = NULL;

	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		if (!m->has_meta || !m->src || m->state != MEMBER_OK || m->meta.events != a->events)
			continue;
		/* the freshest view (DDF: the newest volume configuration) */
		if (!best || meta_fresher(&m->meta, &best->meta) ||
		    (!meta_fresher(&best->meta, &m->meta) && best->role == role && r != role))
			best = m;
	}
	return best;
}

static bool slot_used(const struct array *a, int dev)
{
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		if (m->has_meta && m->src && m->meta.dev_number == dev)
			return true;
	}
	return false;
}

static bool slot_free(const struct array *a, const struct member_meta *t, int dev)
{
	int v = dev < t->max_dev ? t->dev_roles[dev] : META_ROLE_MISSING;

	return (v == META_ROLE_SPARE || v == META_ROLE_MISSING) && !slot_used(a, dev);
}

/* The device slot for role K: the replaced image's, else the one the
 * others still give role K, else slot K or the lowest free one (md writes
 * a removed member's slot as 0xffff, "spare", in the others' dev_roles). */
static int pick_dev_number(const struct array *a, int role, const struct member_meta *t, int limit)
{
	const struct array_member *old = &a->members[role];

	if (old->has_meta && old->src && old->meta.role == role)
		return old->meta.dev_number;
	for (int d = 0; d < t->max_dev && d < META_MAX_DEVS; d++)
		if (t->dev_roles[d] == role && !slot_used(a, d))
			return d;
	if (role < limit && slot_free(a, t, role))
		return role;
	for (int d = 0; d < limit; d++)
		if (slot_free(a, t, d))
			return d;
	return -1;
}

/* Container formats: the freshest member's view of the volume with role K
 * and a new random device uuid (DDF makes the new disk's GUID and reference
 * number of it; the container's metadata is written by the format's
 * replace()). */
static int build_container_meta(const struct array *a, int role, const struct array_member *t,
				struct member_meta *m)
{
	*m = t->meta;
	m->role = role;
	if (random_bytes(m->device_uuid, sizeof(m->device_uuid))) {
		msg("cannot read /dev/urandom");
		return -1;
	}
	if (a->container_volumes > 1)
		msg("note: the new member is a disk of a container with %d volumes: only volume %d ('%s') is "
		    "written; in the others it is out of sync (IMSM: md rebuilds it there) or left out (DDF)",
		    a->container_volumes, a->volume_index, a->name);
	return 0;
}

static int build_meta(const struct array *a, int role, const struct array_member *t, struct member_meta *m)
{
	const struct format_ops *fmt = t->meta.fmt;
	bool fixed = fmt->flags & FORMAT_FIXED_SLOTS;
	int limit = fmt->max_dev_slots, dev;

	if (fmt->replace)
		return build_container_meta(a, role, t, m);
	if (!fmt->build) {
		msg("%s: md %s metadata cannot be written", t->path, fmt->name);
		return -1;
	}
	if (t->meta.feature_map & 1) {
		msg("%s: the array has a write-intent bitmap; rebuild cannot write one yet (add the new member "
		    "with mdadm instead)", t->path);
		return -1;
	}
	*m = t->meta;
	dev = pick_dev_number(a, role, &t->meta, limit);
	if (dev < 0) {
		msg("no free device slot for role %d in the superblocks (%d slots, all in use)", role, limit);
		return -1;
	}
	for (int d = m->max_dev; d <= dev && d < META_MAX_DEVS; d++)
		m->dev_roles[d] = fixed ? META_ROLE_MISSING : META_ROLE_SPARE;
	if (!fixed && dev >= m->max_dev)
		m->max_dev = dev + 1;
	m->dev_number = dev;
	m->role = role;
	m->dev_roles[dev] = (int16_t)role;
	m->feature_map &= ~(uint32_t)(2 | 8 | 16);    /* in sync, no bad blocks, not a replacement */
	m->recovery_offset = 0;
	if (random_bytes(m->device_uuid, sizeof(m->device_uuid))) {
		msg("cannot read /dev/urandom");
		return -1;
	}
	return 0;
}

/* ---- the output image ---- */

/* The new image: an outfile (never evidence, named when complete) and a
 * writable source over it for the rebuild engine. */
static int open_output(const struct rebuild_args *ra, uint64_t bytes, struct outfile *of, struct source **out)
{
	struct outfile_opts oo = { .replace = ra->overwrite, .exists_hint = "refusing to overwrite it (--overwrite to replace)" };
	char err[ERR_MAX];
	int r;

	if (outfile_open(of, ra->output, &oo, err, sizeof(err)) ||
	    source_wrap_fd(of->fd, ra->output, out, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	r = (*out)->ops->truncate(*out, bytes);
	if (r) {
		msg("%s: cannot set the size to %" PRIu64 " bytes: %s", ra->output, bytes, strerror(-r));
		return -1;
	}
	return 0;
}

/* Size of the new image: the largest member image (the superblock of 1.0
 * and 0.90 sits at a place that depends on it). */
static uint64_t output_bytes(const struct array *a, const struct array_member *t, uint64_t data_offset)
{
	uint64_t bytes = data_offset + a->member_bytes;

	if (!t)
		return bytes;
	if (t->meta.fmt->replace)
		return t->image_bytes;  /* the container's metadata is placed from the end */
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		if (m->src && m->has_meta && m->meta.fmt == t->meta.fmt && m->image_bytes > bytes)
			bytes = m->image_bytes;
	}
	return bytes;
}

static void print_result(const struct rebuild_args *ra, const struct array *a, const struct member_meta *m,
			 bool has_meta, const char *serial, const struct scrub_progress *p, uint64_t bytes)
{
	char sz[32], sp[40];

	if (ra->json) {
		printf("{\"type\":\"rebuild\",\"role\":%d,\"output\":", ra->role);
		json_path(stdout, ra->output, "output");
		printf(",\"image_bytes\":%" PRIu64 ",\"data_offset_bytes\":%" PRIu64 ",\"stripes\":%" PRIu64
		       ",\"bytes_written\":%" PRIu64 ",\"member_requests\":%" PRIu64 ",\"member_request_bytes\":%" PRIu64
		       ",\"seconds\":%.6f", bytes, ra->so.rebuild_data_offset, a->stripes, p->bytes_written,
		       p->member_requests, p->member_request_bytes, p->seconds);
		if (has_meta && m->in_container) {
			printf(",\"metadata\":\"%s\",\"volume_index\":%d,\"serial\":", m->format, m->volume_index);
			json_str_or_null(stdout, m->fmt->place == NULL || m->dev_id[0] ? NULL : serial);
			printf(",\"events\":%" PRIu64 "}\n", m->events + 1);
		} else if (has_meta) {
			printf(",\"metadata\":\"%s\",\"dev_number\":%d,\"events\":%" PRIu64 "}\n", m->format,
			       m->dev_number, m->events);
		} else {
			printf(",\"metadata\":null}\n");
		}
		return;
	}
	printf("rebuilt role %d of the RAID%d into %s (%s, data at offset %" PRIu64 ", %" PRIu64 " stripes, %"
	       PRIu64 " bytes written, %.2f s, %s per member)\n", ra->role, a->geom.level, ra->output,
	       fmt_size(bytes, sz, sizeof(sz)), ra->so.rebuild_data_offset, a->stripes, p->bytes_written, p->seconds,
	       fmt_speed(p->seconds > 0 ? (double)p->done_bytes / p->seconds : 0, sp, sizeof(sp)));
	if (has_meta && m->in_container && !m->dev_id[0])
		printf("%s container metadata: role %d of volume %d, drive serial '%s', generation %" PRIu64 "\n",
		       m->format, m->role, m->volume_index, serial, m->events + 1);
	else if (has_meta && m->in_container)
		printf("%s container metadata: role %d of virtual disk %d, a new disk, sequence number %" PRIu64 "\n",
		       m->format, m->role, m->volume_index, m->events + 1);
	else if (has_meta)
		printf("md %s superblock: role %d, device slot %d, events %" PRIu64 "\n", m->format, m->role,
		       m->dev_number, m->events);
	else
		printf("no md metadata: the image holds the data area only\n");
}

/* Run the engine; *p gets its final progress (counters for the summary). */
static int run_rebuild(struct array *a, struct rebuild_args *ra, struct source *out, struct scrub_progress *p)
{
	struct scrub_ui ui;
	struct scrub *s = NULL;
	char err[ERR_MAX] = "";
	int r;

	ra->so.mode = SCRUB_REBUILD;
	ra->so.rebuild_role = ra->role;
	ra->so.rebuild_out = out;
	ra->so.rebuild_sparse = true;
	scrub_ui_init(&ui, &ra->so, ra->progress, ra->json, "rebuild");
	r = scrub_create(a, &ra->so, &s, err, sizeof(err));
	if (r) {
		msg("%s", err);
		goto out;
	}
	r = scrub_ui_run(&ui, s);
	scrub_get_progress(s, p);
	if (r)
		msg("rebuild %s at stripe %" PRIu64 ": %s", r == -EINTR ? "interrupted" : "failed", p->next_stripe,
		    p->message[0] ? p->message : strerror(-r));
out:
	scrub_free(s);
	scrub_ui_free(&ui);
	return r;
}

int cmd_rebuild(int argc, char **argv)
{
	struct array_args aa;
	struct rebuild_args ra;
	struct array *a = NULL;
	struct source *out = NULL;
	const struct array_member *t;
	struct member_meta m;
	struct scrub_progress p;
	uint64_t bytes;
	int ret = EXIT_ERR, r;
	struct outfile of = { .fd = -1 };
	char err[ERR_MAX], serial[64] = "";

	memset(&ra, 0, sizeof(ra));
	memset(&m, 0, sizeof(m));
	ra.role = -1;
	ra.progress = isatty(STDERR_FILENO);
	array_args_init(&aa);
	r = parse_args(argc, argv, &aa, &ra);
	if (r) {
		ret = r > 0 ? EXIT_OK : EXIT_ERR;
		goto out_args;
	}
	if (array_args_open(&aa, argc - optind, argv + optind, &a))
		goto out_args;
	if (ra.role >= a->geom.raid_disks) {
		msg("--role %d: the array has roles 0-%d", ra.role, a->geom.raid_disks - 1);
		goto out;
	}
	t = pick_template(a, ra.role);
	if (a->has_meta && !t) {
		msg("no member with a current superblock to copy the metadata from");
		goto out;
	}
	if (t && build_meta(a, ra.role, t, &m))
		goto out;
	ra.so.rebuild_data_offset = t ? t->meta.data_offset * 512 : aa.ao.g.data_offset;
	if (a->resync_offset != UINT64_MAX)
		msg("warning: the array was not clean: parity past %" PRIu64 " bytes may be stale, and so may the "
		    "chunks rebuilt from it", a->resync_offset);
	bytes = output_bytes(a, t, ra.so.rebuild_data_offset);
	if (open_output(&ra, bytes, &of, &out))
		goto out;
	if (run_rebuild(a, &ra, out, &p))
		goto out;
	if (t && t->meta.fmt->replace) {
		array_serial_for(&aa.ao, ra.output, serial, sizeof(serial));
		if (write_replacement_metadata(out, t->src, &m, serial, bytes / 512, err, sizeof(err))) {
			msg("%s", err);
			goto out;
		}
	} else if (t && write_superblock(out, &m, bytes / 512, err, sizeof(err))) {
		msg("%s", err);
		goto out;
	}
	source_close(out);
	out = NULL;
	if (outfile_commit(&of, err, sizeof(err))) {     /* synced, then named */
		msg("%s", err);
		goto out;
	}
	print_result(&ra, a, &m, t != NULL, serial, &p, bytes);
	ret = EXIT_OK;
out:
	source_close(out);
	outfile_abort(&of);         /* a failed rebuild leaves nothing */
	array_free(a);
out_args:
	array_args_free(&aa);
	return ret;
}
