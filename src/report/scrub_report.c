/* scrub_report.c - see scrub_report.h */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "progress.h"
#include "scrub_report.h"
#include "util.h"

static void json_u64_or_null(FILE *f, const char *key, uint64_t v, bool valid)
{
	if (valid)
		fprintf(f, ",\"%s\":%" PRIu64, key, v);
	else
		fprintf(f, ",\"%s\":null", key);
}

static void json_role(FILE *f, const char *key, int role)
{
	if (role >= 0)
		fprintf(f, ",\"%s\":%d", key, role);
	else
		fprintf(f, ",\"%s\":null", key);
}

void scrub_report_mismatch_json(FILE *f, const struct scrub_mismatch *m)
{
	fprintf(f, "{\"type\":\"mismatch\",\"stripe\":%" PRIu64 ",\"kind\":\"%s\"", m->stripe,
		scrub_kind_name(m->kind));
	json_role(f, "role", m->role);
	fputs(",\"image\":", f);
	if (m->path && *m->path)
		json_path(f, m->path, "image");
	else
		fputs("null", f);
	json_u64_or_null(f, "image_offset", m->image_off, m->role >= 0);
	fprintf(f, ",\"member_offset\":%" PRIu64 ",\"chunk_offset\":%" PRIu32 ",\"length\":%" PRIu32,
		m->member_off, m->chunk_off, m->len);
	json_u64_or_null(f, "array_offset", m->array_off, m->array_off != UINT64_MAX);
	json_role(f, "p_role", m->p_role);
	json_role(f, "q_role", m->q_role);
	fprintf(f, ",\"p_differs\":%s,\"q_differs\":%s,\"units\":%" PRIu32 ",\"repaired\":%s}\n",
		m->p_differs ? "true" : "false", m->q_differs ? "true" : "false", m->units,
		m->repaired ? "true" : "false");
}

void scrub_report_write_json(FILE *f, const struct scrub_write *w)
{
	fprintf(f, "{\"type\":\"write\",\"stripe\":%" PRIu64 ",\"role\":%d,\"image\":", w->stripe, w->role);
	json_path(f, w->path ? w->path : "", "image");
	fprintf(f, ",\"image_offset\":%" PRIu64 ",\"length\":%" PRIu64 "}\n", w->image_off, w->len);
}

static const char *kind_text(enum scrub_kind k)
{
	switch (k) {
	case SCRUB_KIND_P: return "P wrong";
	case SCRUB_KIND_Q: return "Q wrong";
	case SCRUB_KIND_DATA: return "data wrong";
	case SCRUB_KIND_PQ: return "P and Q disagree with the data, the syndromes name no single member";
	case SCRUB_KIND_DEGRADED: return "parity disagrees (degraded: cannot tell which member)";
	}
	return "?";
}

void scrub_report_mismatch_text(FILE *f, const struct scrub_mismatch *m)
{
	fprintf(f, "mismatch: stripe %" PRIu64 ": %s", m->stripe, kind_text(m->kind));
	if (m->role >= 0)
		fprintf(f, " on role %d (%s) at image offset %" PRIu64, m->role, m->path ? m->path : "?", m->image_off);
	else if (m->q_role >= 0)
		fprintf(f, " at member data offset %" PRIu64 " (P on role %d, Q on role %d)", m->member_off, m->p_role,
		       m->q_role);
	else
		fprintf(f, " at member data offset %" PRIu64 " (P on role %d)", m->member_off, m->p_role);
	fprintf(f, ", %" PRIu32 " byte%s (chunk offset %" PRIu32, m->len, m->len == 1 ? "" : "s", m->chunk_off);
	if (m->array_off != UINT64_MAX)
		fprintf(f, ", array offset %" PRIu64, m->array_off);
	fprintf(f, ")%s\n", m->repaired ? ", repaired" : "");
}

/* The verdict of a run, in the words of `raidimg scrub --json`. */
const char *scrub_result_name(int ret, const struct scrub_progress *p, enum scrub_mode mode)
{
	if (ret == -EINTR)
		return "interrupted";
	if (ret)
		return "error";
	if (p->mismatches)
		return mode == SCRUB_REPAIR ? "repaired" : "mismatches";
	if (p->stripes_unchecked)
		return "incomplete";
	if (p->read_errors)
		return "read-errors";
	return "clean";
}

static void utc_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void scrub_summary_id_of(const struct array *a, struct scrub_summary_id *id)
{
	memset(id, 0, sizeof(*id));
	meta_uuid_format(a->uuid, id->array_uuid);
	id->level = a->geom.level;
	id->raid_disks = a->geom.raid_disks;
	id->chunk_bytes = a->geom.chunk_bytes;
	id->stripes = a->stripes;
}

/* The summary record of `raidimg scrub --json`, and when the run ended. */
void scrub_report_summary_json(FILE *f, const struct array *a, const struct scrub_progress *p, const char *result,
			       enum scrub_mode mode)
{
	struct scrub_summary_id id;

	scrub_summary_id_of(a, &id);
	scrub_report_summary_json_id(f, &id, p, result, mode, NULL);
}

void scrub_report_summary_json_id(FILE *f, const struct scrub_summary_id *id, const struct scrub_progress *p,
				  const char *result, enum scrub_mode mode, const char *finished)
{
	uint64_t req = p->member_requests, rb = p->member_request_bytes;
	char when[32];

	if (!finished) {
		utc_now(when, sizeof(when));
		finished = when;
	}
	fprintf(f, "{\"type\":\"summary\",\"result\":\"%s\",\"mode\":\"%s\",\"array_uuid\":\"%s\",\"level\":%d"
		",\"raid_disks\":%d,\"chunk_bytes\":%" PRIu32 ",\"stripes_total\":%" PRIu64
		",\"range\":[%" PRIu64 ",%" PRIu64 "]", result, scrub_mode_name(mode), id->array_uuid, id->level,
		id->raid_disks, id->chunk_bytes, id->stripes, p->stripe_begin, p->stripe_end);
	if (id->shards && id->shard >= 0)
		fprintf(f, ",\"shard\":%d,\"shards\":%d", id->shard, id->shards);
	else if (id->shards)
		fprintf(f, ",\"shards\":%d", id->shards);
	fprintf(f, ",\"resumed_at\":%" PRIu64 ",\"next_stripe\":%" PRIu64
		",\"mismatches\":%" PRIu64 ",\"mismatch_units\":%" PRIu64 ",\"md_mismatch_cnt\":%" PRIu64
		",\"writes\":%" PRIu64 ",\"bytes_written\":%" PRIu64 ",\"stripes_unchecked\":%" PRIu64
		",\"read_errors\":%" PRIu64 ",\"member_requests\":%" PRIu64 ",\"member_request_bytes\":%" PRIu64
		",\"avg_member_request_bytes\":%.0f,\"seconds\":%.6f,\"read_bytes_per_second\":%.0f"
		",\"throttle_seconds\":%.3f,\"foreground_backoffs\":%" PRIu64 ",\"finished\":\"%s\"}\n",
		p->resumed_at, p->next_stripe, p->mismatches, p->mismatch_units,
		p->mismatch_units * 8, p->writes, p->bytes_written, p->stripes_unchecked, p->read_errors, req, rb,
		req ? (double)rb / (double)req : 0, p->seconds, p->seconds > 0 ? (double)rb / p->seconds : 0,
		(double)p->throttle_ns / 1e9, p->fg_backoffs, finished);
}

void scrub_report_summary_text(FILE *f, const struct array *a, const struct scrub_progress *p, const char *result,
			       enum scrub_mode mode)
{
	uint64_t req = p->member_requests, rb = p->member_request_bytes;
	double avg = req ? (double)rb / (double)req : 0, secs = p->seconds;
	char s1[32], s2[32], s3[32], r1[40], r2[40];

	fprintf(f, "scrub: %s: stripes %" PRIu64 "-%" PRIu64 " of %" PRIu64 " (this run from %" PRIu64 ", done up to %"
	       PRIu64 "): %" PRIu64 " mismatch%s (md mismatch_cnt %" PRIu64 ")", result, p->stripe_begin,
	       p->stripe_end, a->stripes, p->resumed_at, p->next_stripe, p->mismatches,
	       p->mismatches == 1 ? "" : "es", p->mismatch_units * 8);
	if (mode == SCRUB_REPAIR)
		fprintf(f, ", %" PRIu64 " write%s (%" PRIu64 " bytes)", p->writes, p->writes == 1 ? "" : "s",
		       p->bytes_written);
	if (p->stripes_unchecked)
		fprintf(f, ", %" PRIu64 " stripes not checkable", p->stripes_unchecked);
	if (p->read_errors)
		fprintf(f, ", %" PRIu64 " read errors", p->read_errors);
	/* the bar's units: binary, and per member as the bar and md's speeds */
	fprintf(f, "\nscrub: read %s (%s per member) in %" PRIu64 " member requests (%s each on average) in %.2f s: "
		"%s, %s per member\n", fmt_size(rb, s1, sizeof(s1)), fmt_size(p->done_bytes, s3, sizeof(s3)), req,
		fmt_size((uint64_t)avg, s2, sizeof(s2)), secs, fmt_speed(secs > 0 ? (double)rb / secs : 0, r1, sizeof(r1)),
		fmt_speed(secs > 0 ? (double)p->done_bytes / secs : 0, r2, sizeof(r2)));
}

void scrub_report_write_text(FILE *f, const struct scrub_write *w)
{
	fprintf(f, "write: role %d (%s) at image offset %" PRIu64 ", %" PRIu64 " bytes\n", w->role,
		w->path ? w->path : "?", w->image_off, w->len);
}
