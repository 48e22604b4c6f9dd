/* status.c - the live state of a served array as one JSON object. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "util.h"

/* The "overlay" object ("overlay":{...}). */
static void status_put_overlay(FILE *f, const struct overlay *ov)
{
	const struct overlay_header *h = overlay_header(ov);
	struct overlay_stats st;
	char t[40];
	uint64_t modified;

	overlay_get_stats(ov, &st);
	modified = st.modified_ns;
	if (st.last_write_ns > modified)
		modified = st.last_write_ns;
	fputs("\"overlay\":{\"path\":", f);
	json_path(f, overlay_path(ov), "path");
	fprintf(f, ",\"granule_bytes\":%" PRIu32 ",\"granules\":%" PRIu64 ",\"granules_written\":%" PRIu64
		",\"bytes_written\":%" PRIu64 ",\"write_requests\":%" PRIu64 ",\"write_request_bytes\":%" PRIu64
		",\"write_errors\":%" PRIu64 ",\"granules_copied\":%" PRIu64 ",\"syncs\":%" PRIu64
		",\"sync_errors\":%" PRIu64 ",\"unsynced\":%s,\"last_sync_error\":",
		h->granule_bytes, h->granules, st.granules_written, st.bytes_covered, st.writes, st.write_bytes,
		st.write_errors, st.granules_copied, st.syncs, st.sync_errors, st.unsynced ? "true" : "false");
	if (st.last_sync_error)
		json_str(f, strerror(-st.last_sync_error));
	else
		fputs("null", f);
	fprintf(f, ",\"created\":\"%s\"", overlay_fmt_time(h->created_ns, t, sizeof(t)));
	fprintf(f, ",\"modified\":\"%s\"}", overlay_fmt_time(modified, t, sizeof(t)));
}

/* The same words as `raidimg examine`. */
static bool member_usable(const struct array_member *m)
{
	return m->state == MEMBER_OK || m->state == MEMBER_REBUILDING;
}

static void put_array(FILE *f, const struct array *a)
{
	char uuid[40];

	fprintf(f, "\"array\":{\"verdict\":\"%s\",\"degraded\":%s,\"level\":%d,\"layout\":%d,\"layout_name\":",
		array_verdict(a), a->nmissing ? "true" : "false", a->geom.level, a->geom.layout);
	json_str(f, layout_name(a->geom.level, a->geom.layout));
	fprintf(f, ",\"chunk_bytes\":%u,\"raid_disks\":%d,\"data_disks\":%d,\"redundancy\":%d"
		",\"missing\":%d,\"member_bytes\":%" PRIu64 ",\"array_bytes\":%" PRIu64 ",\"stripes\":%" PRIu64,
		a->geom.chunk_bytes, a->geom.raid_disks, a->k, a->redundancy, a->nmissing, a->member_bytes,
		a->array_bytes, a->stripes);
	if (a->has_meta) {
		meta_uuid_format(a->uuid, uuid);
		fprintf(f, ",\"metadata\":\"%s\",\"array_uuid\":\"%s\",\"name\":", a->meta_format, uuid);
		json_str(f, a->name);
		fprintf(f, ",\"events\":%" PRIu64 ",\"clean\":%s", a->events,
			a->resync_offset == UINT64_MAX ? "true" : "false");
	} else {
		fputs(",\"metadata\":null", f);
	}
	if (a->prev) {
		/* as examine --json says it */
		fprintf(f, ",\"reshape\":{\"position_bytes\":%" PRIu64 ",\"backwards\":%s,\"previous\":{\"raid_disks\":%d"
			",\"data_disks\":%d,\"layout\":%d,\"layout_name\":", a->reshape_bytes,
			a->reshape_backwards ? "true" : "false", a->prev->geom.raid_disks, a->prev->k, a->prev->geom.layout);
		json_str(f, layout_name(a->prev->geom.level, a->prev->geom.layout));
		fprintf(f, ",\"chunk_bytes\":%u}}", a->prev->geom.chunk_bytes);
	}
	fputc('}', f);
}

void status_member_source(FILE *f, const struct array_member *m)
{
	const struct source_untrusted *u = m->src ? m->src->untrusted : NULL;
	int nfiles = 0;

	fputs(",\"kind\":", f);
	json_str_or_null(f, m->src ? m->src->ops->kind : NULL);
	if (m->src)
		source_files(m->src, &nfiles);
	fprintf(f, ",\"files\":%d,\"untrusted_bytes\":%" PRIu64 ",\"untrusted_ranges\":%" PRIu64
		",\"untrusted_reads\":%" PRIu64 ",\"untrusted_from\":[", nfiles, m->untrusted_bytes,
		m->untrusted_ranges, atomic_load(&m->untrusted_reads));
	for (int i = 0; u && i < u->norigins; i++) {
		fprintf(f, "%s{\"kind\":\"%s\",\"path\":", i ? "," : "", u->origins[i].kind);
		json_str(f, u->origins[i].path);
		fprintf(f, ",\"ranges\":%zu,\"bytes\":%" PRIu64 "}", u->origins[i].r.n, u->origins[i].r.bytes);
	}
	fputc(']', f);
}

static void put_member(FILE *f, const struct array_member *m)
{
	uint64_t errors = atomic_load(&m->read_errors);

	fprintf(f, "{\"role\":%d,\"state\":\"%s\",\"in_use\":%s,\"failing\":%s,\"path\":", m->role,
		member_state_name(m->state), member_usable(m) ? "true" : "false", errors ? "true" : "false");
	if (m->path)
		json_path(f, m->path, "path");
	else
		fputs("null", f);
	fprintf(f, ",\"data_offset_bytes\":%" PRIu64, m->data_offset);
	if (member_usable(m))
		fprintf(f, ",\"image_bytes\":%" PRIu64 ",\"readable_bytes\":%" PRIu64, m->image_bytes,
			m->readable_bytes);
	fprintf(f, ",\"reads\":%" PRIu64 ",\"read_bytes\":%" PRIu64 ",\"read_errors\":%" PRIu64,
		atomic_load(&m->reads), atomic_load(&m->read_bytes), errors);
	status_member_source(f, m);
	fputs(",\"note\":", f);
	json_str(f, m->note);
	fputc('}', f);
}

static void put_io(FILE *f, const struct array *a, int fg_active)
{
	uint64_t req = atomic_load(&a->io.requests);
	uint64_t rb = atomic_load(&a->io.bytes);

	fprintf(f, "\"io\":{\"bytes_served\":%" PRIu64 ",\"stripes_rebuilt\":%" PRIu64
		",\"read_errors_recovered\":%" PRIu64 ",\"read_errors_fatal\":%" PRIu64
		",\"member_requests\":%" PRIu64 ",\"member_request_bytes\":%" PRIu64
		",\"avg_member_request_bytes\":%" PRIu64 ",\"foreground_readers\":%d,\"untrusted_bytes_rebuilt\":%"
		PRIu64 "}", atomic_load(&a->bytes_served), atomic_load(&a->stripes_rebuilt),
		atomic_load(&a->read_errors_recovered), atomic_load(&a->read_errors_fatal), req, rb,
		req ? rb / req : 0, fg_active, atomic_load(&a->untrusted_bytes_rebuilt));
}

static void put_mount(FILE *f, const struct status_mount *m)
{
	uint64_t up = now_ns() - m->started_ns;

	fputs("\"mount\":{\"mountpoint\":", f);
	json_path(f, m->mountpoint, "mountpoint");
	fputs(",\"image\":", f);
	if (m->image_name)
		json_path(f, m->image_name, "image");
	else
		fputs("null", f);
	fprintf(f, ",\"pid\":%ld,\"uptime_seconds\":%.3f,\"max_threads\":%u,\"read_only\":%s"
		",\"allow_other\":%s,\"read_ahead_bytes\":%lld,\"read_requests\":%" PRIu64 ",\"read_bytes\":%" PRIu64
		",\"read_errors\":%" PRIu64,
		(long)m->pid, (double)up / 1e9, m->max_threads, m->read_only ? "true" : "false",
		m->allow_other ? "true" : "false", m->read_ahead_kb < 0 ? -1LL : (long long)m->read_ahead_kb * 1024,
		m->read_requests, m->read_bytes, m->read_errors);
	if (m->threads_asked)
		fprintf(f, ",\"threads_asked\":%u", m->threads_asked);
	fputc('}', f);
}

int status_json(const struct array *a, const struct status_mount *mnt, char **out, size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f;

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fputc('{', f);
	put_array(f, a);
	fputs(",\"members\":[", f);
	for (int r = 0; r < a->geom.raid_disks; r++) {
		if (r)
			fputc(',', f);
		put_member(f, &a->members[r]);
	}
	fputs("],", f);
	put_io(f, a, mnt ? mnt->fg_active : 0);
	if (mnt) {
		fputc(',', f);
		put_mount(f, mnt);
		for (int i = 0; i < mnt->nsections; i++) {
			fputs(",", f);
			json_str(f, mnt->sections[i].name);
			fprintf(f, ":%s", mnt->sections[i].json);
		}
		if (mnt->overlay) {
			fputc(',', f);
			status_put_overlay(f, mnt->overlay);
		}
	}
	fputs("}\n", f);
	if (ferror(f)) {
		fclose(f);
		free(buf);
		return -ENOMEM;
	}
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	*len = size;
	return 0;
}
