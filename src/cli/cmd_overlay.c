/* cmd_overlay.c - raidimg overlay: look at or empty a copy-on-write overlay
 * (the file `raidimg mount --overlay FILE` writes to; overlay.[ch]).
 *
 *   raidimg overlay info [--json] FILE
 *   raidimg overlay discard FILE
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "overlay.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg overlay info [--json] FILE\n"
		   "       raidimg overlay discard FILE\n\n"
		   "A copy-on-write overlay is the file `raidimg mount --overlay FILE` sends the\n"
		   "image's writes to (the member images are never written); `raidimg cat` and\n"
		   "`raidimg export` read the array with it applied when given --overlay FILE.\n"
		   "It is made by the first mount with it, belongs to that array (its md uuid,\n"
		   "or a manual geometry's data offset, with the geometry and size) and is refused\n"
		   "for any other.  It is sparse: it holds a header, a bitmap of the granules\n"
		   "written (64 KiB each) and those granules at their array offset.\n\n"
		   "  info       what array it belongs to, the granule, how many granules and bytes\n"
		   "             are written, when it was created and last modified\n"
		   "  --json     info as one JSON object\n"
		   "  discard    forget every write: the overlay stays attached to its array,\n"
		   "             empty (deleting FILE does the same: the next mount makes a new one)\n"
		   "  -h, --help this text\n\n"
		   "An overlay in use by a mount cannot be discarded (unmount first); info on it\n"
		   "shows the counts as of the mount's last flush.\n"
		   "Exit status: 0 done, 2 error (not an overlay, corrupt, in use, ...).\n");
}

static void put_identity_json(FILE *f, const struct overlay_identity *id)
{
	char uuid[40];

	fprintf(f, "\"array\":{\"kind\":\"%s\",\"array_uuid\":", id->kind == OVERLAY_ID_MD ? "md" : "manual");
	if (id->kind == OVERLAY_ID_MD) {
		meta_uuid_format(id->uuid, uuid);
		fprintf(f, "\"%s\",\"name\":", uuid);
		json_str(f, id->name);
		fputs(",\"metadata\":", f);
		json_str(f, id->meta_format);
	} else {
		fputs("null,\"name\":null,\"metadata\":null", f);
	}
	fprintf(f, ",\"level\":%d,\"layout\":%d,\"layout_name\":", id->level, id->layout);
	json_str(f, layout_name(id->level, id->layout));
	fprintf(f, ",\"raid_disks\":%d,\"chunk_bytes\":%" PRIu32 ",\"member_bytes\":%" PRIu64
		",\"array_bytes\":%" PRIu64 ",\"data_offset_bytes\":%" PRIu64 "}",
		id->raid_disks, id->chunk_bytes, id->member_bytes, id->array_bytes, id->data_offset);
}

static void info_json(FILE *f, const struct overlay *ov, const struct stat *st)
{
	const struct overlay_header *h = overlay_header(ov);
	struct overlay_stats s;
	char t[40];

	overlay_get_stats(ov, &s);
	fputs("{\"path\":", f);
	json_path(f, overlay_path(ov), "path");
	fprintf(f, ",\"format_version\":%" PRIu32 ",", h->version);
	put_identity_json(f, &h->id);
	fprintf(f, ",\"array_id\":\"%016" PRIx64 "\",\"granule_bytes\":%" PRIu32 ",\"granules\":%" PRIu64
		",\"granules_written\":%" PRIu64 ",\"bytes_written\":%" PRIu64, h->array_id, h->granule_bytes,
		h->granules, s.granules_written, s.bytes_covered);
	fprintf(f, ",\"created\":\"%s\"", overlay_fmt_time(h->created_ns, t, sizeof(t)));
	fprintf(f, ",\"modified\":\"%s\"", overlay_fmt_time(h->modified_ns, t, sizeof(t)));
	fprintf(f, ",\"file_bytes\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64 ",\"in_use\":%s}\n",
		(uint64_t)st->st_size, (uint64_t)st->st_blocks * 512, overlay_in_use(ov) ? "true" : "false");
}

static void info_text(FILE *f, const struct overlay *ov, const struct stat *st)
{
	const struct overlay_header *h = overlay_header(ov);
	const struct overlay_identity *id = &h->id;
	struct overlay_stats s;
	char desc[200], a[32], b[32], c[32], t[40];

	overlay_get_stats(ov, &s);
	overlay_identity_describe(id, desc, sizeof(desc));
	fprintf(f, "%s: raidimg overlay (format %" PRIu32 ")\n", overlay_path(ov), h->version);
	fprintf(f, "  array:     %s%s%s\n", desc, id->meta_format[0] ? ", metadata " : "", id->meta_format);
	fprintf(f, "  geometry:  RAID%d %s, %d members, chunk %s\n", id->level, layout_name(id->level, id->layout),
		id->raid_disks, fmt_size(id->chunk_bytes, a, sizeof(a)));
	fprintf(f, "  size:      %" PRIu64 " bytes (%s), %" PRIu64 " per member\n", id->array_bytes,
		fmt_size(id->array_bytes, b, sizeof(b)), id->member_bytes);
	fprintf(f, "  array id:  %016" PRIx64 "\n", h->array_id);
	fprintf(f, "  granule:   %" PRIu32 " bytes (%s)\n", h->granule_bytes, fmt_size(h->granule_bytes, c, sizeof(c)));
	fprintf(f, "  written:   %" PRIu64 " of %" PRIu64 " granules, %" PRIu64 " bytes (%.2f%% of the array)\n",
		s.granules_written, h->granules, s.bytes_covered,
		100.0 * (double)s.bytes_covered / (double)id->array_bytes);
	fprintf(f, "  created:   %s\n", overlay_fmt_time(h->created_ns, t, sizeof(t)));
	fprintf(f, "  modified:  %s\n", overlay_fmt_time(h->modified_ns, t, sizeof(t)));
	fprintf(f, "  file:      %s, %s allocated\n", fmt_size((uint64_t)st->st_size, a, sizeof(a)),
		fmt_size((uint64_t)st->st_blocks * 512, b, sizeof(b)));
	if (overlay_in_use(ov))
		fprintf(f, "  in use:    by a mount (counts as of its last flush)\n");
}

static int overlay_info(const char *path, bool json)
{
	struct overlay_open_opts oo = { .allow_in_use = true };
	struct overlay *ov = NULL;
	char err[ERR_MAX];
	struct stat st;
	int ret;

	ret = overlay_open(path, &oo, &ov, NULL, err, sizeof(err));
	if (ret) {
		msg("%s", err);
		return EXIT_ERR;
	}
	if (stat(path, &st)) {
		msg("%s: %s", path, strerror(errno));
		overlay_close(ov);
		return EXIT_ERR;
	}
	if (json)
		info_json(stdout, ov, &st);
	else
		info_text(stdout, ov, &st);
	overlay_close(ov);
	return EXIT_OK;
}

static int overlay_discard_cmd(const char *path)
{
	struct overlay_open_opts oo = { .writable = true };
	struct overlay *ov = NULL;
	struct overlay_stats s;
	char err[ERR_MAX];
	int ret;

	ret = overlay_open(path, &oo, &ov, NULL, err, sizeof(err));
	if (ret) {
		msg("%s", err);
		return EXIT_ERR;
	}
	overlay_get_stats(ov, &s);
	ret = overlay_discard(ov);
	if (ret) {
		msg("%s: cannot discard: %s", overlay_path(ov), strerror(-ret));
		overlay_close(ov);
		return EXIT_ERR;
	}
	printf("%s: discarded %" PRIu64 " granules (%" PRIu64 " bytes); the overlay is empty\n", overlay_path(ov),
	       s.granules_written, s.bytes_covered);
	overlay_close(ov);
	return EXIT_OK;
}

int cmd_overlay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *action;
	bool json = false;
	int opt;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argc < 2) {
		cli_usage_error("give an action: info or discard");
		return EXIT_ERR;
	}
	action = argv[1];
	if (strcmp(action, "info") && strcmp(action, "discard")) {
		cli_usage_error("unknown action '%s' (info or discard)", action);
		return EXIT_ERR;
	}
	optind = 1;
	while ((opt = cli_getopt(argc - 1, argv + 1, "h", longopts)) != -1) {
		switch (opt) {
		case 'j': json = true; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: return EXIT_ERR;
		}
	}
	if (argc - 1 - optind != 1) {
		cli_usage_error("%s: give one overlay file", action);
		return EXIT_ERR;
	}
	if (!strcmp(action, "discard")) {
		if (json) {
			msg("overlay discard: --json is for info");
			return EXIT_ERR;
		}
		return overlay_discard_cmd(argv[1 + optind]);
	}
	return overlay_info(argv[1 + optind], json);
}
