/* status.c - the live state of a served array as one JSON object. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "status.h"
#include "util.h"

/* The same words as `raidimg examine`. */
static const char *member_state_name(enum member_state s)
{
	switch (s) {
	case MEMBER_OK: return "active";
	case MEMBER_MISSING: return "missing";
	case MEMBER_FAULTY: return "faulty";
	case MEMBER_STALE: return "stale";
	case MEMBER_REBUILDING: return "rebuilding";
	}
	return "?";
}

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
		fprintf(f, ",\"metadata\":\"%s\",\"uuid\":\"%s\",\"name\":", a->meta_format, uuid);
		json_str(f, a->name);
		fprintf(f, ",\"events\":%" PRIu64 ",\"clean\":%s", a->events,
			a->resync_offset == UINT64_MAX ? "true" : "false");
	} else {
		fputs(",\"metadata\":null", f);
	}
	if (a->prev)
		fprintf(f, ",\"reshape\":{\"position_bytes\":%" PRIu64 ",\"backwards\":%s,\"previous_raid_disks\":%d"
			",\"previous_layout\":%d,\"previous_chunk_bytes\":%u}",
			a->reshape_bytes, a->reshape_backwards ? "true" : "false", a->prev->geom.raid_disks,
			a->prev->geom.layout, a->prev->geom.chunk_bytes);
	fputc('}', f);
}

static void put_member(FILE *f, const struct array_member *m)
{
	uint64_t errors = atomic_load(&m->read_errors);

	fprintf(f, "{\"role\":%d,\"state\":\"%s\",\"in_use\":%s,\"failing\":%s,\"path\":", m->role,
		member_state_name(m->state), member_usable(m) ? "true" : "false", errors ? "true" : "false");
	if (m->path)
		json_str(f, m->path);
	else
		fputs("null", f);
	fprintf(f, ",\"data_offset_bytes\":%" PRIu64, m->data_offset);
	if (member_usable(m))
		fprintf(f, ",\"image_bytes\":%" PRIu64 ",\"readable_bytes\":%" PRIu64, m->image_bytes,
			m->readable_bytes);
	fprintf(f, ",\"reads\":%" PRIu64 ",\"read_bytes\":%" PRIu64 ",\"read_errors\":%" PRIu64 ",\"note\":",
		atomic_load(&m->reads), atomic_load(&m->read_bytes), errors);
	json_str(f, m->note);
	fputc('}', f);
}

static void put_io(FILE *f, const struct array *a)
{
	uint64_t req = atomic_load(&a->member_requests);
	uint64_t rb = atomic_load(&a->member_request_bytes);

	fprintf(f, "\"io\":{\"bytes_served\":%" PRIu64 ",\"stripes_rebuilt\":%" PRIu64
		",\"read_errors_recovered\":%" PRIu64 ",\"read_errors_fatal\":%" PRIu64
		",\"member_requests\":%" PRIu64 ",\"member_request_bytes\":%" PRIu64
		",\"avg_member_request_bytes\":%" PRIu64 ",\"foreground_readers\":%d}",
		atomic_load(&a->bytes_served), atomic_load(&a->stripes_rebuilt),
		atomic_load(&a->read_errors_recovered), atomic_load(&a->read_errors_fatal), req, rb,
		req ? rb / req : 0, atomic_load(&a->fg_active));
}

static void put_mount(FILE *f, const struct status_mount *m)
{
	uint64_t up = now_ns() - m->started_ns;

	fputs("\"mount\":{\"mountpoint\":", f);
	json_str(f, m->mountpoint);
	fputs(",\"image\":", f);
	if (m->image_name)
		json_str(f, m->image_name);
	else
		fputs("null", f);
	fprintf(f, ",\"pid\":%ld,\"uptime_seconds\":%.3f,\"max_threads\":%u,\"read_only\":%s"
		",\"allow_other\":%s,\"read_ahead_kb\":%d,\"read_requests\":%" PRIu64 ",\"read_bytes\":%" PRIu64
		",\"read_errors\":%" PRIu64 "}",
		(long)m->pid, (double)up / 1e9, m->max_threads, m->read_only ? "true" : "false",
		m->allow_other ? "true" : "false", m->read_ahead_kb, m->read_requests, m->read_bytes, m->read_errors);
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
	put_io(f, a);
	if (mnt) {
		fputc(',', f);
		put_mount(f, mnt);
		if (mnt->scrub_json)
			fprintf(f, ",\"scrub\":%s", mnt->scrub_json);
		if (mnt->overlay) {
			fputc(',', f);
			overlay_put_json(f, mnt->overlay);
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
