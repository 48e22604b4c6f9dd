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

/* One image's source, opened again for what the source itself says (the
 * EWF case data; --hash: its stored hashes checked). */
struct probed {
	const char *path;
	struct source *src;      /* NULL when it cannot be opened (the finding says why); owned */
	int verify;              /* --hash of an EWF image: 1 stored hashes match, -1 not, 0 not checked */
	char md5[33], sha1[41];  /* computed (--hash) */
	char verify_err[512];
};

static void probe_one(const char *path, struct probed *p)
{
	char err[ERR_MAX];

	memset(p, 0, sizeof(*p));
	p->path = path;
	if (source_open(path, SOURCE_READ, &p->src, err, sizeof(err)))
		p->src = NULL;
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
	printf("  acquiry errors : %zu range(s) (untrusted: rebuilt from parity)\n", in->acq_errors.n);
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
		",\"segments\":%u,\"acquiry_errors\":%zu,\"stored_hashes_verified\":%s", in->media_size,
		in->bytes_per_sector, in->chunk_size, in->compressed ? "true" : "false", in->nsegments, in->acq_errors.n,
		p->verify > 0 ? "true" : p->verify < 0 ? "false" : "null");
	if (p->verify) {
		fputs(",\"md5\":", f);
		json_str_or_null(f, p->md5);
		fputs(",\"sha1\":", f);
		json_str_or_null(f, p->sha1);
	}
	fputc('}', f);
}

/* A partition number as JSON: null for the whole image (0). */
static void print_partition(FILE *f, int partition)
{
	if (partition)
		fprintf(f, "%d", partition);
	else
		fputs("null", f);
}

static void print_meta_text(const struct member_meta *m, const char *ident, uint64_t size)
{
	char uuid[40], rb[16], sz[32], tb[64], state[LAYOUT_MAX_DISKS + 2];

	meta_uuid_format(m->set_uuid, uuid);
	if (size)
		printf("  image size     : %" PRIu64 " bytes (%s)\n", size, fmt_size(size, sz, sizeof(sz)));
	if (m->in_container) {
		char cu[40];

		meta_uuid_format(m->container_uuid, cu);
		printf("  metadata       : %s container %s, volume %d of %d\n", m->format, cu, m->volume_index,
		       m->container_volumes);
	} else {
		printf("  metadata       : md %s\n", m->format);
	}
	printf("  array uuid     : %s\n", uuid);
	if (m->set_name[0])
		printf("  name           : %s\n", m->set_name);
	printf("  level          : raid%d\n", m->level);
	printf("  layout         : %s (%d)\n", layout_name(m->level, m->layout), m->layout);
	printf("  chunk          : %u bytes (%s)\n", m->chunk_bytes, fmt_size(m->chunk_bytes, sz, sizeof(sz)));
	printf("  raid disks     : %d\n", m->raid_disks);
	if (m->role == META_ROLE_UNPLACED)
		printf("  role           : not placed: no drive of the disk table has its %s\n", ident);
	else
		printf("  role           : %s%s%s%s\n", meta_role_name(m->role, rb, sizeof(rb)), ident[0] ? " (" : "",
		       ident, ident[0] ? ")" : "");
	printf("  data offset    : %" PRIu64 " sectors (%" PRIu64 " bytes)\n", m->data_offset, m->data_offset * 512);
	printf("  component size : %" PRIu64 " sectors\n", m->component_sectors);
	printf("  events         : %" PRIu64 "%s\n", m->events, m->in_container ? " (generation of the metadata)" : "");
	printf("  state          : %s\n", m->resync_offset == UINT64_MAX ? "clean" : "not clean (resync pending)");
	if (!m->in_container) {
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
	}
	if (m->unsupported[0])
		printf("  not readable   : %s\n", m->unsupported);
	if (m->reshape_active) {
		printf("  reshape        : at %" PRIu64 " sectors of the array, %d -> %d members%s\n",
		       m->reshape_position, m->raid_disks - m->delta_disks, m->raid_disks,
		       (m->feature_map & 32) || m->delta_disks < 0 ? ", backwards" : "");
		printf("  new layout     : %s (%d), chunk %u bytes, data offset %+" PRId64 " sectors\n",
		       layout_name(m->new_level, m->new_layout), m->new_layout, m->new_chunk_bytes, m->new_offset);
	}
}

/* Every image: what was found in it and where. */
static void print_image_text(const struct found_set *fs, int img, const char *path, const struct probed *p)
{
	const struct found_image *fi = &fs->images[img];
	int shown = 0;
	char sz[32];

	printf("%s:\n", path);
	print_source_text(p);
	for (int i = 0; i < fs->nmembers; i++) {
		const struct found_member *f = &fs->members[i];

		if (f->image != img)
			continue;
		if (f->partition) {
			if (!shown)
				printf("  image size     : %" PRIu64 " bytes (%s), %s partition table\n", fi->bytes,
				       fmt_size(fi->bytes, sz, sizeof(sz)), fi->table);
			printf("  found in       : %s\n", f->where);
			print_meta_text(&f->meta, f->ident, 0);
		} else {
			print_meta_text(&f->meta, f->ident, shown ? 0 : fi->bytes);
		}
		shown++;
	}
	if (!shown && fi->err) {
		/* the image is named above: its name is not said again */
		size_t pl = strlen(path);
		const char *e = !strncmp(fi->err, path, pl) && !strncmp(fi->err + pl, ": ", 2) ? fi->err + pl + 2 : fi->err;

		if (fi->err_code == -ENOENT)
			printf("  no RAID metadata (%s)\n", e);
		else
			printf("  error: %s\n", e);
	}
	if (fi->note)
		printf("  partition table: %s\n", fi->note);
}

static void print_meta_json(FILE *f, const struct member_meta *m, const char *ident)
{
	char uuid[40], tb[64], state[LAYOUT_MAX_DISKS + 2];

	meta_uuid_format(m->set_uuid, uuid);
	fprintf(f, "\"metadata\":\"%s\",\"array_uuid\":\"%s\",\"name\":", m->format, uuid);
	json_str(f, m->set_name);
	fprintf(f, ",\"level\":%d,\"layout\":%d,\"layout_name\":", m->level, m->layout);
	json_str(f, layout_name(m->level, m->layout));
	fprintf(f, ",\"chunk_bytes\":%u,\"raid_disks\":%d,\"role\":", m->chunk_bytes, m->raid_disks);
	if (m->role >= 0) {
		fprintf(f, "%d", m->role);
	} else {
		char rb[16];
		json_str(f, m->role == META_ROLE_UNPLACED ? "unplaced" : meta_role_name(m->role, rb, sizeof(rb)));
	}
	fprintf(f, ",\"dev_number\":%d,\"data_offset_sectors\":%" PRIu64 ",\"data_offset_bytes\":%" PRIu64
		",\"component_sectors\":%" PRIu64 ",\"events\":%" PRIu64 ",\"clean\":%s,\"reshape\":%s",
		m->dev_number, m->data_offset, m->data_offset * 512, m->component_sectors, m->events,
		m->resync_offset == UINT64_MAX ? "true" : "false", m->reshape_active ? "true" : "false");
	if (!m->in_container) {
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
		fprintf(f, ",\"array_state\":\"%s\"", state);
	}
	if (m->in_container) {
		meta_uuid_format(m->container_uuid, uuid);
		fprintf(f, ",\"container_uuid\":\"%s\",\"volume_index\":%d,\"container_volumes\":%d", uuid,
			m->volume_index, m->container_volumes);
	}
	fputs(",\"placed_by\":", f);
	json_str_or_null(f, ident);
	fputs(",\"unsupported\":", f);
	json_str_or_null(f, m->unsupported);
}

/* {"path", "image_bytes", "partition_table", the first finding's fields
 * (md's examine kept them at the top), "found": [every finding]} */
static void print_image_json(FILE *f, const struct found_set *fs, int img, const char *path,
			     const struct probed *p)
{
	const struct found_image *fi = &fs->images[img];
	int first = -1, n = 0;

	fprintf(f, "{\"path\":");
	json_path(f, path, "path");
	fprintf(f, ",\"image_bytes\":%" PRIu64 ",\"partition_table\":", fi->bytes);
	json_str_or_null(f, fi->table);
	fputs(",\"partition_table_note\":", f);
	json_str_or_null(f, fi->note);
	print_source_json(f, p);
	for (int i = 0; i < fs->nmembers && first < 0; i++)
		if (fs->members[i].image == img)
			first = i;
	if (first < 0) {
		fprintf(f, ",\"metadata\":null,\"error\":");
		json_str(f, fi->err ? fi->err : "no RAID metadata");
		if (fi->err_code == -EBADMSG)
			fputs(",\"checksum_ok\":false", f);
		fputs(",\"found\":[]}", f);
		return;
	}
	fputc(',', f);
	print_meta_json(f, &fs->members[first].meta, fs->members[first].ident);
	fputs(",\"found\":[", f);
	for (int i = 0; i < fs->nmembers; i++) {
		const struct found_member *m = &fs->members[i];

		if (m->image != img)
			continue;
		fprintf(f, "%s{\"partition\":", n++ ? "," : "");
		print_partition(f, m->partition);
		fputs(",\"where\":", f);
		json_str_or_null(f, m->where);
		fputc(',', f);
		print_meta_json(f, &m->meta, m->ident);
		fprintf(f, ",\"array_index\":%d}", m->group);
	}
	fputs("]}", f);
}

/* The arrays found, when there are several. */
static void print_arrays_text(const struct found_set *fs, const char *const *paths)
{
	printf("\nArrays on these images:\n");
	for (int g = 0; g < fs->narrays; g++) {
		const struct found_array *fa = &fs->arrays[g];
		char desc[200], uuid[40];

		found_array_desc(&fa->meta, desc, sizeof(desc));
		meta_uuid_format(fa->meta.set_uuid, uuid);
		printf("  %s, %d members%s\n", desc, fa->meta.raid_disks, g == fs->chosen ? " (read)" : "");
		if (!fa->supported)
			printf("    not read: %s\n", fa->why);
		for (int i = 0; i < fs->nmembers; i++) {
			const struct found_member *m = &fs->members[i];
			char rb[16];

			if (m->group != g)
				continue;
			printf("    %-8s %s%s%s\n", m->meta.role == META_ROLE_UNPLACED ? "unplaced" :
			       meta_role_name(m->meta.role, rb, sizeof(rb)), paths[m->image], m->partition ? " " : "",
			       m->where);
		}
	}
	if (fs->chosen < 0)
		printf("  choose one with --array UUID|NAME\n");
}

static void print_arrays_json(FILE *f, const struct found_set *fs, const char *const *paths)
{
	fputs("\"arrays\":[", f);
	for (int g = 0; g < fs->narrays; g++) {
		const struct found_array *fa = &fs->arrays[g];
		const struct member_meta *m = &fa->meta;
		char uuid[40];
		int n = 0;

		meta_uuid_format(m->set_uuid, uuid);
		fprintf(f, "%s{\"metadata\":\"%s\",\"array_uuid\":\"%s\",\"name\":", g ? "," : "", m->format, uuid);
		json_str(f, m->set_name);
		fprintf(f, ",\"level\":%d,\"raid_disks\":%d,\"supported\":%s,\"reason\":", m->level, m->raid_disks,
			fa->supported ? "true" : "false");
		json_str_or_null(f, fa->why);
		if (m->in_container) {
			meta_uuid_format(m->container_uuid, uuid);
			fprintf(f, ",\"container_uuid\":\"%s\",\"volume_index\":%d", uuid, m->volume_index);
		}
		fputs(",\"members\":[", f);
		for (int i = 0; i < fs->nmembers; i++) {
			const struct found_member *fm = &fs->members[i];

			if (fm->group != g)
				continue;
			fprintf(f, "%s{\"path\":", n++ ? "," : "");
			json_path(f, paths[fm->image], "path");
			fputs(",\"partition\":", f);
			print_partition(f, fm->partition);
			fputs(",\"where\":", f);
			json_str_or_null(f, fm->where);
			fputs(",\"role\":", f);
			if (fm->meta.role >= 0)
				fprintf(f, "%d", fm->meta.role);
			else
				fputs("null", f);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("],\"chosen\":", f);
	if (fs->chosen >= 0)
		fprintf(f, "%d", fs->chosen);
	else
		fputs("null", f);
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
	if (a->has_meta && a->in_container) {
		char cu[40];

		meta_uuid_format(a->uuid, uuid);
		meta_uuid_format(a->container_uuid, cu);
		printf("  metadata       : %s container %s, volume %d of %d\n  uuid           : %s\n", a->meta_format, cu,
		       a->volume_index, a->container_volumes, uuid);
		if (a->name[0])
			printf("  name           : %s\n", a->name);
		printf("  events         : %" PRIu64 " (generation of the freshest metadata)\n", a->events);
	} else if (a->has_meta) {
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
		printf("  role %-3d       : %-10s %s%s%s%s%s%s%s%s%s\n", r, member_state_name(m->state),
		       m->path ? m->path : "-", m->partition ? " " : "", m->where, m->ident[0] ? " [" : "", m->ident,
		       m->ident[0] ? "]" : "", m->note[0] ? " (" : "", m->note, m->note[0] ? ")" : "");
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
		if (a->in_container) {
			meta_uuid_format(a->container_uuid, uuid);
			fprintf(f, ",\"container_uuid\":\"%s\",\"volume_index\":%d,\"container_volumes\":%d", uuid,
				a->volume_index, a->container_volumes);
		}
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
		fprintf(f, ",\"partition\":");
		print_partition(f, m->partition);
		fputs(",\"where\":", f);
		json_str_or_null(f, m->where);
		fputs(",\"placed_by\":", f);
		json_str_or_null(f, m->ident);
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
		fprintf(f, ",\"partition\":");
		print_partition(f, a->extra[i].partition);
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
		   "Show the RAID metadata of every member image (md superblocks, IMSM and DDF\n"
		   "containers), found in the image or in the partitions of its MBR or GPT\n"
		   "partition table, every array the images hold when there are several, and the\n"
		   "array read: its geometry and a verdict: complete, degraded (served by\n"
		   "rebuilding from parity) or not assemblable, with the reason.\n\n"
		   "Each finding: metadata version, array uuid and name, level, layout, chunk,\n"
		   "role, data offset, events, state; for md superblocks also creation and\n"
		   "update times (UTC), device uuid, checksum, bitmap, bad block log and mdadm's\n"
		   "array state line (AAA.A: one character per role as this member saw the\n"
		   "array).\n\n"
		   "  --json      one JSON object: {\"members\":[...],\"arrays\":[...],\"chosen\":N,\n"
		   "              \"array\":{...}}\n"
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
		   "media (--hash), 2 it cannot be assembled (or the images hold several arrays\n"
		   "and --array does not say which, or bad usage).\n");
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

/* The report: every image, the arrays when there are several, then the
 * array (a, or why not: err), then the hashes when asked for. */
static void print_report(bool json, const struct found_set *fs, const struct probed *pr, const char *const *paths,
			 const struct array *a, const char *err, const struct custody_run *cr, bool hash)
{
	if (json) {
		printf("{\"members\":[");
		for (int i = 0; i < fs->nimages; i++) {
			if (i)
				putchar(',');
			print_image_json(stdout, fs, i, paths[i], &pr[i]);
		}
		printf("],");
		print_arrays_json(stdout, fs, paths);
		printf(",\"array\":");
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
	for (int i = 0; i < fs->nimages; i++)
		print_image_text(fs, i, paths[i], &pr[i]);
	if (fs->narrays > 1)
		print_arrays_text(fs, paths);
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
	struct found_set fs;
	struct probed *pr = NULL;
	bool json = false, bad_hash = false, test = false;
	char err[ERR_MAX] = "";
	int ret = EXIT_ERR, r;

	memset(&fs, 0, sizeof(fs));
	array_args_init(&aa);
	r = parse_args(argc, argv, &aa, &co, &json, &test);
	if (r) {
		ret = r > 0 ? EXIT_OK : EXIT_ERR;
		goto out;
	}
	if (array_args_prepare(&aa, argc - optind, argv + optind))
		goto out;
	if (array_discover(&aa.ao, &fs)) {
		msg("out of memory");
		goto out;
	}
	/* each image's source on its own: the EWF case data, --hash's check of
	 * the hashes an EWF image stores */
	pr = calloc((size_t)(aa.ao.g.npaths > 0 ? aa.ao.g.npaths : 1), sizeof(*pr));
	if (!pr) {
		msg("out of memory");
		goto out;
	}
	for (int i = 0; i < aa.ao.g.npaths; i++)
		probe_one(aa.ao.g.paths[i], &pr[i]);
	for (int i = 0; co.hash && i < aa.ao.g.npaths; i++) {
		verify_ewf(&pr[i]);
		if (pr[i].verify < 0) {
			msg("%s: stored hash check failed: %s", pr[i].path, pr[i].verify_err);
			bad_hash = true;
		}
	}
	/* the verdict carries the reason when it fails */
	if (!aa.ao.g.manual && fs.narrays > 1 && fs.chosen < 0 && !aa.ao.g.array)
		snprintf(err, sizeof(err), "the images hold %d different arrays (listed above): choose one with "
			 "--array UUID|NAME", fs.narrays);
	else if (array_args_assemble(&aa, &a, err, sizeof(err)))
		a = NULL;
	/* --hash/--record: the image files and the whole array (custody.c) */
	if (a && co.hash && examine_custody(&cr, &co, a, &aa, argc, argv))
		goto out;
	print_report(json, &fs, pr, aa.ao.g.paths, a, err, &cr, co.hash);
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
	for (int i = 0; pr && i < aa.ao.g.npaths; i++)
		source_close(pr[i].src);
	free(pr);
	found_set_free(&fs);
	array_args_free(&aa);
	return ret;
}
