/* cmd_examine.c - raidimg examine: what each image holds, what array they form. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "custody.h"
#include "probe.h"
#include "source_ewf.h"
#include "status.h"
#include "util.h"

/* mdadm's "Array State" of what m saw: for each role, 'A' when one device
 * slot holds it, 'R' when two do (a replacement), '.' when none, '?' when
 * more; roles a shrinking reshape is taking away included.  out holds
 * LAYOUT_MAX_DISKS + 1 characters or more. */
static void meta_array_state(const struct member_meta *m, char *out, size_t len)
{
	int n = m->raid_disks + (m->reshape_active && m->delta_disks < 0 ? -m->delta_disks : 0);
	size_t w = 0;

	for (int d = 0; d < n && w + 1 < len; d++) {
		int cnt = 0;

		for (int i = 0; i < m->max_dev && i < META_MAX_DEVS; i++)
			cnt += m->dev_roles[i] == d;
		out[w++] = cnt == 2 ? 'R' : cnt == 1 ? 'A' : cnt == 0 ? '.' : '?';
	}
	out[w] = '\0';
}

/* A superblock time in UTC: as mdadm prints it (ctime's form, iso false)
 * or ISO 8601 (JSON). */
static const char *meta_time(uint64_t t, bool iso, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, iso ? "%Y-%m-%dT%H:%M:%SZ" : "%a %b %e %H:%M:%S %Y UTC", &tm))
		snprintf(buf, len, "%" PRIu64, t);
	return buf;
}

static bool has_device_uuid(const struct member_meta *m)
{
	static const uint8_t zero[16];

	return memcmp(m->device_uuid, zero, 16) != 0;
}

/* One image as found on its own (before assembly). */
struct probed {
	const char *path;
	uint64_t size;
	int ret;                 /* 0: metadata found; -ENOENT: none; else broken/unreadable */
	char err[ERR_MAX];
	struct member_meta meta;
	struct source *src;      /* kept for the EWF case data and --hash; owned */
	int verify;              /* --hash of an EWF image: 1 stored hashes match, -1 not, 0 not checked */
	char md5[33], sha1[41];  /* computed (--hash) */
	char verify_err[512];
};

static void probe_one(const char *path, struct probed *p)
{
	memset(p, 0, sizeof(*p));
	p->path = path;
	p->ret = source_open(path, SOURCE_READ, &p->src, p->err, sizeof(p->err));
	if (p->ret)
		return;
	p->size = p->src->size;
	p->ret = metadata_probe(p->src, &p->meta, p->err, sizeof(p->err));
}

/* --hash: the MD5/SHA1 an EWF image stores, computed again over its media. */
static void verify_ewf(struct probed *p)
{
	const struct ewf_info *in = p->src ? source_ewf_info(p->src) : NULL;

	if (!in || (!in->md5[0] && !in->sha1[0]))
		return;
	if (custody_hash_media(p->src, p->md5, p->sha1, p->verify_err, sizeof(p->verify_err))) {
		p->verify = -1;
		return;
	}
	p->verify = (!in->md5[0] || !strcmp(in->md5, p->md5)) && (!in->sha1[0] || !strcmp(in->sha1, p->sha1)) ? 1 : -1;
	if (p->verify < 0)
		snprintf(p->verify_err, sizeof(p->verify_err), "the media's MD5 %s / SHA1 %s differ from the stored "
			 "%s / %s", p->md5, p->sha1, in->md5[0] ? in->md5 : "-", in->sha1[0] ? in->sha1 : "-");
}

static void print_source_text(const struct probed *p)
{
	const struct ewf_info *in;
	int nfiles = 0;

	if (!p->src)
		return;
	source_files(p->src, &nfiles);
	printf("  source         : %s", p->src->ops->kind);
	if (nfiles > 1)
		printf(", %d %s", nfiles, strcmp(p->src->ops->kind, "ewf") ? "pieces" : "segments");
	printf("\n");
	in = source_ewf_info(p->src);
	if (!in)
		return;
	printf("  case number    : %s\n  evidence number: %s\n  examiner       : %s\n  description    : %s\n"
	       "  notes          : %s\n  acquiry date   : %s\n  acquiry software: %s\n", in->case_number,
	       in->evidence_number, in->examiner_name, in->description, in->notes, in->acquiry_date,
	       in->acquiry_software_version);
	printf("  stored md5     : %s\n  stored sha1    : %s\n", in->md5[0] ? in->md5 : "-", in->sha1[0] ? in->sha1 : "-");
	printf("  media          : %" PRIu64 " bytes, %u-byte sectors, %u-byte chunks, %s\n", in->media_size,
	       in->bytes_per_sector, in->chunk_size, in->compressed ? "compressed" : "uncompressed");
	printf("  acquiry errors : %u range(s) (untrusted: rebuilt from parity)\n", in->nacq_errors);
	if (p->verify > 0)
		printf("  stored hashes  : verified: the media's MD5 and SHA1 match them\n");
	else if (p->verify < 0)
		printf("  stored hashes  : MISMATCH: %s\n", p->verify_err);
}

static void print_source_json(FILE *f, const struct probed *p)
{
	const struct ewf_info *in;
	int nfiles = 0;
	char *const *files;

	if (!p->src)
		return;
	files = source_files(p->src, &nfiles);
	fputs(",\"kind\":", f);
	json_str(f, p->src->ops->kind);
	fputs(",\"files\":[", f);
	for (int i = 0; i < nfiles; i++) {
		if (i)
			fputc(',', f);
		json_str(f, files[i]);
	}
	fputc(']', f);
	in = source_ewf_info(p->src);
	if (!in)
		return;
	fputs(",\"ewf\":{\"case_number\":", f);
	json_str(f, in->case_number);
	fputs(",\"evidence_number\":", f);
	json_str(f, in->evidence_number);
	fputs(",\"examiner_name\":", f);
	json_str(f, in->examiner_name);
	fputs(",\"description\":", f);
	json_str(f, in->description);
	fputs(",\"notes\":", f);
	json_str(f, in->notes);
	fputs(",\"acquiry_date\":", f);
	json_str(f, in->acquiry_date);
	fputs(",\"acquiry_software_version\":", f);
	json_str(f, in->acquiry_software_version);
	fputs(",\"stored_md5\":", f);
	json_str_or_null(f, in->md5);
	fputs(",\"stored_sha1\":", f);
	json_str_or_null(f, in->sha1);
	fprintf(f, ",\"media_bytes\":%" PRIu64 ",\"bytes_per_sector\":%u,\"chunk_bytes\":%u,\"compressed\":%s"
		",\"segments\":%u,\"acquiry_errors\":%u,\"stored_hashes_verified\":%s", in->media_size,
		in->bytes_per_sector, in->chunk_size, in->compressed ? "true" : "false", in->nsegments, in->nacq_errors,
		p->verify > 0 ? "true" : p->verify < 0 ? "false" : "null");
	if (p->verify) {
		fputs(",\"md5\":", f);
		json_str_or_null(f, p->md5);
		fputs(",\"sha1\":", f);
		json_str_or_null(f, p->sha1);
	}
	fputc('}', f);
}

static void print_member_text(const struct probed *p)
{
	char uuid[40], rb[16], sz[32], tb[64], state[LAYOUT_MAX_DISKS + 2];
	const struct member_meta *m = &p->meta;

	printf("%s:\n", p->path);
	print_source_text(p);
	if (p->ret == -ENOENT) {
		printf("  no md superblock (%s)\n", p->err);
		return;
	}
	if (p->ret) {
		printf("  error: %s\n", p->err);
		return;
	}
	meta_uuid_format(m->set_uuid, uuid);
	printf("  image size     : %" PRIu64 " bytes (%s)\n", p->size, fmt_size(p->size, sz, sizeof(sz)));
	printf("  metadata       : md %s\n", m->format);
	printf("  array uuid     : %s\n", uuid);
	if (m->set_name[0])
		printf("  name           : %s\n", m->set_name);
	printf("  level          : raid%d\n", m->level);
	printf("  layout         : %s (%d)\n", layout_name(m->level, m->layout), m->layout);
	printf("  chunk          : %u bytes (%s)\n", m->chunk_bytes, fmt_size(m->chunk_bytes, sz, sizeof(sz)));
	printf("  raid disks     : %d\n", m->raid_disks);
	printf("  role           : %s\n", meta_role_name(m->role, rb, sizeof(rb)));
	printf("  data offset    : %" PRIu64 " sectors (%" PRIu64 " bytes)\n", m->data_offset, m->data_offset * 512);
	printf("  component size : %" PRIu64 " sectors\n", m->component_sectors);
	printf("  events         : %" PRIu64 "\n", m->events);
	printf("  state          : %s\n", m->resync_offset == UINT64_MAX ? "clean" : "not clean (resync pending)");
	printf("  creation time  : %s\n", meta_time(m->ctime, false, tb, sizeof(tb)));
	printf("  update time    : %s\n", meta_time(m->utime, false, tb, sizeof(tb)));
	if (has_device_uuid(m)) {
		meta_uuid_format(m->device_uuid, uuid);
		printf("  device uuid    : %s\n", uuid);
	}
	printf("  checksum       : %08" PRIx32 " - correct\n", m->sb_csum);
	if (m->feature_map & 1)
		printf("  bitmap         : internal, %" PRId32 " sectors from the superblock\n", m->bitmap_offset);
	else
		printf("  bitmap         : none\n");
	if (m->bblog_size && m->bblog_offset)
		printf("  bad block log  : %d entries available at offset %" PRId32 " sectors%s\n",
		       m->bblog_size * 512 / 8, m->bblog_offset, (m->feature_map & 8) ? " - bad blocks present" : "");
	else
		printf("  bad block log  : none\n");
	meta_array_state(m, state, sizeof(state));
	printf("  array state    : %s ('A' == active, '.' == missing, 'R' == replacing)\n", state);
	if (m->reshape_active) {
		printf("  reshape        : at %" PRIu64 " sectors of the array, %d -> %d members%s\n",
		       m->reshape_position, m->raid_disks - m->delta_disks, m->raid_disks,
		       (m->feature_map & 32) || m->delta_disks < 0 ? ", backwards" : "");
		printf("  new layout     : %s (%d), chunk %u bytes, data offset %+" PRId64 " sectors\n",
		       layout_name(m->new_level, m->new_layout), m->new_layout, m->new_chunk_bytes, m->new_offset);
	}
}

static void print_member_json(FILE *f, const struct probed *p)
{
	const struct member_meta *m = &p->meta;
	char uuid[40], tb[64], state[LAYOUT_MAX_DISKS + 2];

	fprintf(f, "{\"path\":");
	json_path(f, p->path, "path");
	fprintf(f, ",\"image_bytes\":%" PRIu64, p->size);
	print_source_json(f, p);
	if (p->ret) {
		fprintf(f, ",\"metadata\":null,\"error\":");
		json_str(f, p->err);
		if (p->ret == -EBADMSG)
			fputs(",\"checksum_ok\":false", f);
		fputc('}', f);
		return;
	}
	meta_uuid_format(m->set_uuid, uuid);
	fprintf(f, ",\"metadata\":\"%s\",\"array_uuid\":\"%s\",\"name\":", m->format, uuid);
	json_str(f, m->set_name);
	fprintf(f, ",\"level\":%d,\"layout\":%d,\"layout_name\":", m->level, m->layout);
	json_str(f, layout_name(m->level, m->layout));
	fprintf(f, ",\"chunk_bytes\":%u,\"raid_disks\":%d,\"role\":", m->chunk_bytes, m->raid_disks);
	if (m->role >= 0)
		fprintf(f, "%d", m->role);
	else {
		char rb[16];
		json_str(f, meta_role_name(m->role, rb, sizeof(rb)));
	}
	fprintf(f, ",\"dev_number\":%d,\"data_offset_sectors\":%" PRIu64 ",\"data_offset_bytes\":%" PRIu64
		",\"component_sectors\":%" PRIu64 ",\"events\":%" PRIu64 ",\"clean\":%s,\"reshape\":%s",
		m->dev_number, m->data_offset, m->data_offset * 512, m->component_sectors, m->events,
		m->resync_offset == UINT64_MAX ? "true" : "false", m->reshape_active ? "true" : "false");
	fprintf(f, ",\"created\":\"%s\"", meta_time(m->ctime, true, tb, sizeof(tb)));
	fprintf(f, ",\"updated\":\"%s\",\"device_uuid\":", meta_time(m->utime, true, tb, sizeof(tb)));
	if (has_device_uuid(m)) {
		meta_uuid_format(m->device_uuid, uuid);
		fprintf(f, "\"%s\"", uuid);
	} else {
		fputs("null", f);
	}
	fprintf(f, ",\"checksum\":\"%08" PRIx32 "\",\"checksum_ok\":true,\"bitmap\":", m->sb_csum);
	if (m->feature_map & 1)
		fprintf(f, "{\"offset_sectors\":%" PRId32 "}", m->bitmap_offset);
	else
		fputs("null", f);
	fputs(",\"bad_block_log\":", f);
	if (m->bblog_size && m->bblog_offset)
		fprintf(f, "{\"entries\":%d,\"offset_sectors\":%" PRId32 ",\"bad_blocks\":%s}", m->bblog_size * 512 / 8,
			m->bblog_offset, (m->feature_map & 8) ? "true" : "false");
	else
		fputs("null", f);
	meta_array_state(m, state, sizeof(state));
	fprintf(f, ",\"array_state\":\"%s\"}", state);
}

static void print_array_text(const struct array *a)
{
	char uuid[40], sz[32];
	int first = 1;

	printf("\nArray:\n");
	printf("  verdict        : %s", array_verdict(a));
	if (a->nmissing) {
		printf(" (missing roles:");
		for (int r = 0; r < a->geom.raid_disks; r++)
			if (a->members[r].state != MEMBER_OK && a->members[r].state != MEMBER_REBUILDING)
				printf("%s%d", first-- > 0 ? " " : ", ", r);
		printf("; served by rebuilding from parity)");
	}
	printf("\n");
	if (a->has_meta) {
		meta_uuid_format(a->uuid, uuid);
		printf("  metadata       : md %s\n  uuid           : %s\n", a->meta_format, uuid);
		if (a->name[0])
			printf("  name           : %s\n", a->name);
		printf("  events         : %" PRIu64 "\n", a->events);
	} else {
		printf("  metadata       : none (manual geometry)\n");
	}
	printf("  level          : raid%d\n", a->geom.level);
	printf("  layout         : %s (%d)\n", layout_name(a->geom.level, a->geom.layout), a->geom.layout);
	printf("  chunk          : %u bytes (%s)\n", a->geom.chunk_bytes,
	       fmt_size(a->geom.chunk_bytes, sz, sizeof(sz)));
	printf("  members        : %d (%d data per stripe)\n", a->geom.raid_disks, a->k);
	printf("  member data    : %" PRIu64 " bytes each\n", a->member_bytes);
	printf("  array size     : %" PRIu64 " bytes (%s)\n", a->array_bytes, fmt_size(a->array_bytes, sz, sizeof(sz)));
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		printf("  role %-3d       : %-10s %s%s%s%s\n", r, member_state_name(m->state),
		       m->path ? m->path : "-", m->note[0] ? " (" : "", m->note, m->note[0] ? ")" : "");
		if (m->untrusted_ranges) {
			const struct source_untrusted *u = m->src->untrusted;

			printf("                   untrusted: %" PRIu64 " bytes in %" PRIu64 " range(s), rebuilt from "
			       "parity (from", m->untrusted_bytes, m->untrusted_ranges);
			for (int i = 0; i < u->norigins; i++)
				printf("%s %s %s", i ? "," : "", u->origins[i].kind, u->origins[i].path);
			printf(")\n");
		}
	}
	for (int i = 0; i < a->nextra; i++)
		printf("  not used       : %s (%s)\n", a->extra[i].path, a->extra[i].note);
	if (a->prev) {
		const struct array *p = a->prev;
		uint64_t x = a->reshape_bytes, old_offset = 0;

		for (int r = p->geom.raid_disks - 1; r >= 0; r--)
			if (p->members[r].has_meta)
				old_offset = p->members[r].data_offset;

		printf("  reshape        : %d -> %d members, %s\n", p->geom.raid_disks, a->geom.raid_disks,
		       a->reshape_backwards ? "backwards" : "forwards");
		printf("    array bytes [%" PRIu64 ", %" PRIu64 "): the new geometry above\n",
		       a->reshape_backwards ? x : 0, a->reshape_backwards ? a->array_bytes : x);
		printf("    array bytes [%" PRIu64 ", %" PRIu64 "): the old one: %d members (%d data), %s (%d), "
		       "chunk %u bytes, data offset %" PRIu64 " bytes\n",
		       a->reshape_backwards ? 0 : x, a->reshape_backwards ? x : a->array_bytes, p->geom.raid_disks,
		       p->k, layout_name(p->geom.level, p->geom.layout), p->geom.layout, p->geom.chunk_bytes,
		       old_offset);
		for (int r = a->geom.raid_disks; r < p->geom.raid_disks; r++) {
			const struct array_member *m = &p->members[r];
			printf("    role %-3d     : %-10s %s%s%s%s (leaving: in the old geometry only)\n", r,
			       member_state_name(m->state), m->path ? m->path : "-", m->note[0] ? " (" : "", m->note,
			       m->note[0] ? ")" : "");
		}
	}
	if (a->notes[0])
		printf("  notes          :\n    %.*s\n", (int)strlen(a->notes) - 1, a->notes);
	if (a->warnings[0])
		printf("  warnings       :\n    %.*s\n", (int)strlen(a->warnings) - 1, a->warnings);
}

static void print_array_json(FILE *f, const struct array *a)
{
	char uuid[40];
	const char *p;
	int first;

	fprintf(f, "{\"verdict\":\"%s\",\"assemblable\":true,\"level\":%d,\"layout\":%d,\"layout_name\":",
		array_verdict(a), a->geom.level, a->geom.layout);
	json_str(f, layout_name(a->geom.level, a->geom.layout));
	fprintf(f, ",\"chunk_bytes\":%u,\"raid_disks\":%d,\"data_disks\":%d,\"member_bytes\":%" PRIu64
		",\"array_bytes\":%" PRIu64, a->geom.chunk_bytes, a->geom.raid_disks, a->k, a->member_bytes,
		a->array_bytes);
	if (a->has_meta) {
		meta_uuid_format(a->uuid, uuid);
		fprintf(f, ",\"metadata\":\"%s\",\"array_uuid\":\"%s\",\"name\":", a->meta_format, uuid);
		json_str(f, a->name);
		fprintf(f, ",\"events\":%" PRIu64, a->events);
	} else {
		fprintf(f, ",\"metadata\":null");
	}
	fprintf(f, ",\"members\":[");
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		fprintf(f, "%s{\"role\":%d,\"state\":\"%s\",\"path\":", r ? "," : "", r, member_state_name(m->state));
		if (m->path)
			json_path(f, m->path, "path");
		else
			fputs("null", f);
		fprintf(f, ",\"data_offset_bytes\":%" PRIu64, m->data_offset);
		status_member_source(f, m);
		fputs(",\"note\":", f);
		json_str(f, m->note);
		fputc('}', f);
	}
	fprintf(f, "],\"missing_roles\":[");
	first = 1;
	for (int r = 0; r < a->geom.raid_disks; r++)
		if (a->members[r].state != MEMBER_OK && a->members[r].state != MEMBER_REBUILDING) {
			fprintf(f, "%s%d", first ? "" : ",", r);
			first = 0;
		}
	fprintf(f, "],\"unused\":[");
	for (int i = 0; i < a->nextra; i++) {
		fprintf(f, "%s{\"path\":", i ? "," : "");
		json_path(f, a->extra[i].path, "path");
		fprintf(f, ",\"note\":");
		json_str(f, a->extra[i].note);
		fputc('}', f);
	}
	fputc(']', f);
	if (a->prev) {
		const struct array *o = a->prev;

		fprintf(f, ",\"reshape\":{\"position_bytes\":%" PRIu64 ",\"backwards\":%s,\"new_geometry_bytes\":[%" PRIu64
			",%" PRIu64 "],\"previous\":{\"raid_disks\":%d,\"data_disks\":%d,\"layout\":%d,\"layout_name\":",
			a->reshape_bytes, a->reshape_backwards ? "true" : "false",
			a->reshape_backwards ? a->reshape_bytes : 0,
			a->reshape_backwards ? a->array_bytes : a->reshape_bytes, o->geom.raid_disks, o->k, o->geom.layout);
		json_str(f, layout_name(o->geom.level, o->geom.layout));
		fprintf(f, ",\"chunk_bytes\":%u,\"array_bytes\":%" PRIu64 ",\"data_offset_bytes\":[", o->geom.chunk_bytes,
			o->array_bytes);
		for (int r = 0; r < o->geom.raid_disks; r++)
			fprintf(f, "%s%" PRIu64, r ? "," : "", o->members[r].data_offset);
		fprintf(f, "],\"leaving\":[");
		for (int r = a->geom.raid_disks; r < o->geom.raid_disks; r++) {
			fprintf(f, "%s{\"role\":%d,\"state\":\"%s\",\"path\":", r > a->geom.raid_disks ? "," : "", r,
				member_state_name(o->members[r].state));
			if (o->members[r].path)
				json_path(f, o->members[r].path, "path");
			else
				fputs("null", f);
			fputc('}', f);
		}
		fprintf(f, "]}}");
	}
	fprintf(f, ",\"warnings\":[");
	first = 1;
	for (p = a->warnings; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[1024];
		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (!first)
			fputc(',', f);
		json_str(f, line);
		first = 0;
		p += len + (nl ? 1 : 0);
	}
	fprintf(f, "]}");
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg examine [--json] [ARRAY OPTIONS] MEMBER...\n\n"
		   "Show the md superblock of every member image and the array they form:\n"
		   "its geometry and a verdict: complete, degraded (served by rebuilding from\n"
		   "parity) or not assemblable, with the reason.\n\n"
		   "Each member: metadata version, array uuid and name, level, layout, chunk,\n"
		   "role, data offset, events, state, creation and update times (UTC), device\n"
		   "uuid, checksum, bitmap, bad block log and mdadm's array state line\n"
		   "(AAA.A: one character per role as this member saw the array).\n\n"
		   "  --json      one JSON object: {\"members\":[...],\"array\":{...}}\n"
		   "              (with --hash also \"sha256\":{\"members\":[...],\"array\":{...}})\n"
		   "  -t, --test  exit status as mdadm --detail --test: 1 when the array is\n"
		   "              degraded (0 complete, 2 not assemblable)\n"
		   "  -h, --help  this text\n\n"
		   "Chain of custody:\n"
		   "  --hash         print the sha256 of every image file and of the array (reads\n"
		   "                 the whole array); when it cannot be assembled, of the image\n"
		   "                 files alone, on stderr; EWF (E01) images: also check the\n"
		   "                 MD5/SHA1 they store against their media (exit 1 if one\n"
		   "                 differs)\n"
		   "  --record FILE  write a JSON record of the assembly (implies --hash);\n"
		   "                 `raidimg replay FILE` repeats it\n\n" ARRAY_OPTIONS_HELP
		   "\nExit status: 0 the array can be assembled (with --test: complete), 1 it can\n"
		   "but (--test) it is degraded, or an EWF image's stored hash does not match its\n"
		   "media (--hash), 2 it cannot be assembled (or bad usage).\n");
}

/* --hash/--record: hash the image files and the array, start the record
 * (finished once the verdict is printed).  0 or -1 (message printed). */
static int examine_custody(struct custody_run *cr, const struct custody_opts *co, struct array *a,
			   const struct array_args *aa, int argc, char **argv)
{
	if (custody_begin(cr, co, "examine", argc, argv) ||
	    custody_array(cr, a, &aa->ao, aa->ao.g.paths, aa->ao.g.npaths, pipeline_nslots(2)) ||
	    custody_hash_array(cr, a, 2))
		return -1;
	custody_finish_hash(cr);
	return 0;
}

/* --hash without an array: the image files alone, on stderr. */
static void hash_images(const struct array_args *aa)
{
	for (int i = 0; i < aa->ao.g.npaths; i++) {
		char hex[SHA256_HEX], err[512];

		if (custody_hash_file(aa->ao.g.paths[i], hex, NULL, err, sizeof(err)))
			msg("%s", err);
		else
			fprintf(stderr, "sha256 %s  %s\n", hex, aa->ao.g.paths[i]);
	}
}

/* The report: every image, then the array (a, or why not: err), then the
 * hashes when asked for. */
static void print_report(bool json, const struct probed *pr, int nimg, const struct array *a, const char *err,
			 const struct custody_run *cr, bool hash)
{
	if (json) {
		printf("{\"members\":[");
		for (int i = 0; i < nimg; i++) {
			if (i)
				putchar(',');
			print_member_json(stdout, &pr[i]);
		}
		printf("],\"array\":");
		if (a) {
			print_array_json(stdout, a);
		} else {
			printf("{\"verdict\":\"not assemblable\",\"assemblable\":false,\"reason\":");
			json_str(stdout, err);
			putchar('}');
		}
		if (a && hash) {
			printf(",\"sha256\":");
			custody_print_hashes_json(stdout, cr, a->array_bytes);
		}
		printf("}\n");
		return;
	}
	for (int i = 0; i < nimg; i++)
		print_member_text(&pr[i]);
	if (a)
		print_array_text(a);
	else
		printf("\nArray:\n  verdict        : not assemblable: %s\n", err);
	if (a && hash) {
		printf("\nSHA-256:\n");
		custody_print_hashes(stdout, &cr->mh, cr->array_hex, 0, a->array_bytes);
	}
}

/* Parse the options (the images from optind on).  0 to go on, 1 when done
 * (--help), -1 on a bad one (said). */
static int parse_args(int argc, char **argv, struct array_args *aa, struct custody_opts *co, bool *json,
		      bool *test)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "test", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		ARRAY_LONG_OPTIONS,
		{ "hash", no_argument, NULL, 0x1101 },
		{ "record", required_argument, NULL, 0x1102 },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = cli_getopt(argc, argv, "jth", longopts)) != -1) {
		int r = array_args_opt(aa, opt, optarg);
		if (r < 0)
			return -1;
		if (r || custody_opt(co, opt, optarg))
			continue;
		switch (opt) {
		case 'j': *json = true; break;
		case 't': *test = true; break;
		case 'h': usage(stdout); return 1;
		default: return -1;
		}
	}
	if (optind >= argc)
		return cli_usage_error("give the member images");
	return 0;
}

int cmd_examine(int argc, char **argv)
{
	struct custody_opts co = { 0 };
	struct custody_run cr = { 0 };
	struct array_args aa;
	struct array *a = NULL;
	struct probed *pr = NULL;
	bool json = false, bad_hash = false, test = false;
	char err[ERR_MAX] = "";
	char **images;
	int ret = EXIT_ERR, nimg = 0, nimages, r;

	array_args_init(&aa);
	r = parse_args(argc, argv, &aa, &co, &json, &test);
	if (r) {
		ret = r > 0 ? EXIT_OK : EXIT_ERR;
		goto out;
	}
	images = argv + optind;
	nimages = argc - optind;
	pr = calloc((size_t)nimages, sizeof(*pr));
	if (!pr)
		goto out;
	for (int i = 0; i < nimages; i++)
		if (strcmp(images[i], "missing"))
			probe_one(images[i], &pr[nimg++]);
	for (int i = 0; co.hash && i < nimg; i++) {
		verify_ewf(&pr[i]);
		if (pr[i].verify < 0) {
			msg("%s: stored hash check failed: %s", pr[i].path, pr[i].verify_err);
			bad_hash = true;
		}
	}
	if (array_args_prepare(&aa, nimages, images))
		goto out;
	/* the verdict carries the reason when it fails */
	if (array_args_assemble(&aa, &a, err, sizeof(err)))
		a = NULL;
	/* --hash/--record: the image files and the whole array (custody.c) */
	if (a && co.hash && examine_custody(&cr, &co, a, &aa, argc, argv))
		goto out;
	print_report(json, pr, nimg, a, err, &cr, co.hash);
	if (!a)
		msg("not assemblable: %s", err);
	if (!a && co.hash)
		hash_images(&aa);
	/* --test: mdadm --detail --test's meaning, 1 for a degraded array */
	ret = !a ? EXIT_ERR : bad_hash || (test && a->nmissing) ? EXIT_FOUND : EXIT_OK;
	if (a && co.hash)
		ret = custody_end(&cr, NULL, 0, a->array_bytes, true, ret);
out:
	custody_free(&cr);
	array_free(a);
	for (int i = 0; pr && i < nimg; i++)
		source_close(pr[i].src);
	free(pr);
	array_args_free(&aa);
	return ret;
}
