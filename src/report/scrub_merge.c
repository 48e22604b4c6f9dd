/* scrub_merge.c - see scrub_merge.h */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "outfile.h"
#include "scrub_merge.h"
#include "util.h"

/* One mismatch or write record. */
struct record {
	uint64_t stripe;
	int file;                    /* index of its report in the order given */
	size_t seq;                  /* its place in the merge before sorting */
	int run;                     /* which run of its file */
	bool mismatch;
	char *line;                  /* owned */
};

/* The summary of one run. */
struct summary {
	char mode[16], result[24], uuid[40], finished[32];
	int level, raid_disks, shard, shards;
	uint64_t chunk_bytes, stripes_total, begin, end, resumed_at, next_stripe;
	uint64_t mismatches, mismatch_units, writes, bytes_written, unchecked, read_errors;
	uint64_t requests, request_bytes, fg_backoffs;
	double seconds, throttle_seconds;
};

/* One report: its last run's summary, with this file's runs summed where
 * a run counts its own (requests, time). */
struct report {
	const char *path;
	struct summary s;
	size_t nmismatch, nwrite;    /* records kept */
};

struct merge {
	char *err;
	size_t errlen;
	struct record *rec;
	size_t nrec, caprec;
};

static int add_record(struct merge *mg, uint64_t stripe, int file, int run, bool mismatch, const char *line)
{
	struct record *r;

	if (mg->nrec == mg->caprec) {
		size_t cap = mg->caprec ? 2 * mg->caprec : 256;
		struct record *n = realloc(mg->rec, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		mg->rec = n;
		mg->caprec = cap;
	}
	r = &mg->rec[mg->nrec];
	r->line = strdup(line);
	if (!r->line)
		return -ENOMEM;
	r->stripe = stripe;
	r->file = file;
	r->run = run;
	r->mismatch = mismatch;
	r->seq = mg->nrec++;
	return 0;
}

/* ---- the fields of a summary ---- */

struct getter {
	const char *path;
	size_t line;
	char *err;
	size_t errlen;
	bool bad;
};

static json_object *field(struct getter *g, json_object *o, const char *key, json_type t)
{
	json_object *v;

	if (g->bad)
		return NULL;
	if (!json_object_object_get_ex(o, key, &v) ||
	    (!json_object_is_type(v, t) && !(t == json_type_double && json_object_is_type(v, json_type_int)))) {
		fmt_err(g->err, g->errlen, "%s: line %zu: the summary has no \"%s\" of the right type: not a report of "
			"raidimg scrub --json", g->path, g->line, key);
		g->bad = true;
		return NULL;
	}
	return v;
}

static uint64_t u64(struct getter *g, json_object *o, const char *key)
{
	json_object *v = field(g, o, key, json_type_int);
	int64_t x = v ? json_object_get_int64(v) : 0;

	if (x < 0 && !g->bad) {
		fmt_err(g->err, g->errlen, "%s: line %zu: \"%s\" is negative", g->path, g->line, key);
		g->bad = true;
	}
	return x < 0 ? 0 : (uint64_t)x;
}

static double dbl(struct getter *g, json_object *o, const char *key)
{
	json_object *v = field(g, o, key, json_type_double);

	return v ? json_object_get_double(v) : 0;
}

static void str(struct getter *g, json_object *o, const char *key, char *out, size_t len)
{
	json_object *v = field(g, o, key, json_type_string);

	snprintf(out, len, "%s", v ? json_object_get_string(v) : "");
}

static int parse_summary(struct getter *g, json_object *o, struct summary *s)
{
	json_object *range = field(g, o, "range", json_type_array), *v;

	memset(s, 0, sizeof(*s));
	str(g, o, "mode", s->mode, sizeof(s->mode));
	str(g, o, "result", s->result, sizeof(s->result));
	str(g, o, "array_uuid", s->uuid, sizeof(s->uuid));
	str(g, o, "finished", s->finished, sizeof(s->finished));
	s->level = (int)u64(g, o, "level");
	s->raid_disks = (int)u64(g, o, "raid_disks");
	s->chunk_bytes = u64(g, o, "chunk_bytes");
	s->stripes_total = u64(g, o, "stripes_total");
	s->resumed_at = u64(g, o, "resumed_at");
	s->next_stripe = u64(g, o, "next_stripe");
	s->mismatches = u64(g, o, "mismatches");
	s->mismatch_units = u64(g, o, "mismatch_units");
	s->writes = u64(g, o, "writes");
	s->bytes_written = u64(g, o, "bytes_written");
	s->unchecked = u64(g, o, "stripes_unchecked");
	s->read_errors = u64(g, o, "read_errors");
	s->requests = u64(g, o, "member_requests");
	s->request_bytes = u64(g, o, "member_request_bytes");
	s->fg_backoffs = u64(g, o, "foreground_backoffs");
	s->seconds = dbl(g, o, "seconds");
	s->throttle_seconds = dbl(g, o, "throttle_seconds");
	if (g->bad)
		return -EINVAL;
	if (json_object_array_length(range) != 2 || !json_object_is_type(json_object_array_get_idx(range, 0), json_type_int) ||
	    !json_object_is_type(json_object_array_get_idx(range, 1), json_type_int))
		return fmt_fail(g->err, g->errlen, -EINVAL, "%s: line %zu: \"range\" is not [begin, end]", g->path,
				g->line);
	s->begin = (uint64_t)json_object_get_int64(json_object_array_get_idx(range, 0));
	s->end = (uint64_t)json_object_get_int64(json_object_array_get_idx(range, 1));
	s->shard = -1;
	if (json_object_object_get_ex(o, "shard", &v)) {
		s->shard = (int)u64(g, o, "shard");
		s->shards = (int)u64(g, o, "shards");
	} else if (json_object_object_get_ex(o, "shards", &v)) {
		return fmt_fail(g->err, g->errlen, -EINVAL, "%s: already a merge of %d reports: merge the shards' own "
				"reports", g->path, json_object_get_int(v));
	}
	if (g->bad)
		return -EINVAL;
	if (s->begin > s->end || s->end > s->stripes_total || (s->shards && (s->shard >= s->shards || s->shards < 1)))
		return fmt_fail(g->err, g->errlen, -EINVAL, "%s: line %zu: impossible range or shard in the summary",
				g->path, g->line);
	return 0;
}

/* ---- one report ---- */

/* The runs of one file: their summaries, and from which run each
 * record came.  Records of run i at stripes >= the resume point of a later
 * run were done again by it: dropped. */
static int finish_file(struct merge *mg, struct report *r, struct summary *runs, int nruns, size_t first_rec)
{
	const struct summary *last = &runs[nruns - 1];
	uint64_t *cut = calloc((size_t)nruns, sizeof(*cut));
	size_t w = first_rec;

	if (!cut)
		return -ENOMEM;
	for (int i = nruns - 1; i >= 0; i--)
		cut[i] = i == nruns - 1 ? UINT64_MAX : (runs[i + 1].resumed_at < cut[i + 1] ? runs[i + 1].resumed_at
											  : cut[i + 1]);
	for (size_t i = first_rec; i < mg->nrec; i++) {
		struct record *rc = &mg->rec[i];

		if (rc->stripe >= cut[rc->run]) {
			free(rc->line);
			continue;
		}
		if (rc->mismatch)
			r->nmismatch++;
		else
			r->nwrite++;
		mg->rec[w] = *rc;
		mg->rec[w].seq = w;
		w++;
	}
	mg->nrec = w;
	free(cut);
	r->s = *last;
	r->s.requests = r->s.request_bytes = r->s.fg_backoffs = 0;
	r->s.seconds = r->s.throttle_seconds = 0;
	for (int i = 0; i < nruns; i++) {
		const struct summary *s = &runs[i];

		if (i < nruns - 1 && (strcmp(s->result, "interrupted") || s->begin != last->begin || s->end != last->end))
			return fmt_fail(mg->err, mg->errlen, -EINVAL, "%s: holds runs of different ranges, or a run "
					"that ended (%s) before another: not the runs of one resumed scrub",
					r->path, s->result);
		r->s.requests += s->requests;
		r->s.request_bytes += s->request_bytes;
		r->s.fg_backoffs += s->fg_backoffs;
		r->s.seconds += s->seconds;
		r->s.throttle_seconds += s->throttle_seconds;
	}
	if (!strcmp(last->result, "interrupted") || !strcmp(last->result, "error") || last->next_stripe != last->end)
		return fmt_fail(mg->err, mg->errlen, -EINVAL, "%s: the scrub did not finish its range (%s at stripe "
				"%" PRIu64 " of [%" PRIu64 ", %" PRIu64 ")): resume it (--checkpoint) before merging",
				r->path, last->result, last->next_stripe, last->begin, last->end);
	if (r->nmismatch != last->mismatches || r->nwrite != last->writes)
		return fmt_fail(mg->err, mg->errlen, -EINVAL, "%s: %zu mismatch and %zu write records, but the summary "
				"counts %" PRIu64 " and %" PRIu64 " (records of an earlier run missing?)", r->path,
				r->nmismatch, r->nwrite, last->mismatches, last->writes);
	return 0;
}

static int read_report(struct merge *mg, const char *path, int file, struct report *r)
{
	struct getter g = { .path = path, .err = mg->err, .errlen = mg->errlen };
	struct summary *runs = NULL;
	size_t len, first_rec = mg->nrec, pending = 0;
	char *buf = NULL, *line, *next;
	int nruns = 0, ret;

	memset(r, 0, sizeof(*r));
	r->path = path;
	ret = side_file_read(path, "scrub report", SCRUB_MERGE_MAX_REPORT, true, &buf, &len, mg->err, mg->errlen);
	if (ret)
		return ret;
	for (line = buf; line && *line; line = next) {
		enum json_tokener_error jerr;
		json_object *o, *t, *st;
		const char *type;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		g.line++;
		if (!line[strspn(line, " \t\r")])
			continue;
		o = json_tokener_parse_verbose(line, &jerr);
		if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "type", &t) ||
		    !json_object_is_type(t, json_type_string)) {
			json_object_put(o);
			ret = fmt_fail(mg->err, mg->errlen, -EINVAL, "%s: line %zu: not a record of raidimg scrub "
				       "--json", path, g.line);
			goto out;
		}
		type = json_object_get_string(t);
		if (!strcmp(type, "summary")) {
			struct summary *n = realloc(runs, (size_t)(nruns + 1) * sizeof(*n));

			if (!n) {
				json_object_put(o);
				ret = -ENOMEM;
				goto out;
			}
			runs = n;
			ret = parse_summary(&g, o, &runs[nruns]);
			json_object_put(o);
			if (ret)
				goto out;
			nruns++;
			pending = 0;
			continue;
		}
		if ((strcmp(type, "mismatch") && strcmp(type, "write")) || !json_object_object_get_ex(o, "stripe", &st) ||
		    !json_object_is_type(st, json_type_int) || json_object_get_int64(st) < 0) {
			json_object_put(o);
			ret = fmt_fail(mg->err, mg->errlen, -EINVAL, "%s: line %zu: not a record of raidimg scrub "
				       "--json (type \"%s\")", path, g.line, type);
			goto out;
		}
		ret = add_record(mg, (uint64_t)json_object_get_int64(st), file, nruns, !strcmp(type, "mismatch"), line);
		json_object_put(o);
		if (ret)
			goto out;
		pending++;
	}
	if (!nruns) {
		ret = fmt_fail(mg->err, mg->errlen, -EINVAL, "%s: no summary: not a report of raidimg scrub --json "
			       "(or the scrub was killed before it ended)", path);
		goto out;
	}
	if (pending) {
		ret = fmt_fail(mg->err, mg->errlen, -EINVAL, "%s: %zu records after the last summary: a run that did "
			       "not end (killed?)", path, pending);
		goto out;
	}
	for (size_t i = first_rec; i < mg->nrec; i++) {
		const struct summary *s = &runs[mg->rec[i].run];

		if (mg->rec[i].stripe < s->begin || mg->rec[i].stripe >= s->end) {
			ret = fmt_fail(mg->err, mg->errlen, -EINVAL, "%s: a record of stripe %" PRIu64 " outside the "
				       "range [%" PRIu64 ", %" PRIu64 ") of its run", path, mg->rec[i].stripe, s->begin,
				       s->end);
			goto out;
		}
	}
	ret = finish_file(mg, r, runs, nruns, first_rec);
out:
	free(runs);
	free(buf);
	return ret;
}

/* ---- the merge ---- */

static int by_begin(const void *a, const void *b)
{
	const struct report *x = a, *y = b;

	return x->s.begin < y->s.begin ? -1 : x->s.begin > y->s.begin ? 1 : (x->s.end > y->s.end) - (x->s.end < y->s.end);
}

static int by_stripe(const void *a, const void *b)
{
	const struct record *x = a, *y = b;

	if (x->stripe != y->stripe)
		return x->stripe < y->stripe ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The reports agree on what was scrubbed. */
static int check_same(struct merge *mg, const struct report *a, const struct report *b)
{
	const struct summary *x = &a->s, *y = &b->s;

	if (strcmp(x->uuid, y->uuid))
		return fmt_fail(mg->err, mg->errlen, -EINVAL, "%s is a report of array %s, %s of array %s", b->path,
				y->uuid, a->path, x->uuid);
	if (x->level != y->level || x->raid_disks != y->raid_disks || x->chunk_bytes != y->chunk_bytes ||
	    x->stripes_total != y->stripes_total)
		return fmt_fail(mg->err, mg->errlen, -EINVAL, "%s and %s describe different geometries (RAID%d, %d "
				"members, chunk %" PRIu64 ", %" PRIu64 " stripes / RAID%d, %d, %" PRIu64 ", %" PRIu64 ")",
				a->path, b->path, x->level, x->raid_disks, x->chunk_bytes, x->stripes_total, y->level,
				y->raid_disks, y->chunk_bytes, y->stripes_total);
	if (strcmp(x->mode, y->mode))
		return fmt_fail(mg->err, mg->errlen, -EINVAL, "%s is a %s, %s a %s: merge reports of one mode", a->path,
				x->mode, b->path, y->mode);
	if ((x->shards != 0) != (y->shards != 0) || x->shards != y->shards)
		return fmt_fail(mg->err, mg->errlen, -EINVAL, "%s (%s) and %s (%s) are not shards of one split",
				a->path, x->shards ? "a shard" : "no shard", b->path, y->shards ? "a shard" : "no shard");
	return 0;
}

/* The shards of an N-way split: each exactly once.  r is sorted. */
static int check_shards(struct merge *mg, const struct report *r, int n)
{
	int shards = r[0].s.shards;
	char missing[256] = "", gap[128] = "";
	int nmissing = 0;

	if (!shards)
		return 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (r[i].s.shard == r[j].s.shard)
				return fmt_fail(mg->err, mg->errlen, -EINVAL, "shard %d of %d given twice: %s and %s",
						r[i].s.shard, shards, r[j].path, r[i].path);
	for (int k = 0; k < shards; k++) {
		bool have = false;

		for (int i = 0; i < n && !have; i++)
			have = r[i].s.shard == k;
		if (!have) {
			size_t used = strlen(missing);

			if (nmissing++ < 20)
				snprintf(missing + used, sizeof(missing) - used, "%s%d", used ? ", " : "", k);
		}
	}
	for (int i = 1; i < n && !gap[0]; i++)
		if (r[i].s.begin > r[i - 1].s.end)
			snprintf(gap, sizeof(gap), "; stripes [%" PRIu64 ", %" PRIu64 ") are in no report",
				 r[i - 1].s.end, r[i].s.begin);
	if (nmissing)
		return fmt_fail(mg->err, mg->errlen, -EINVAL, "%d of the %d shards %s missing: %s%s (shards are "
				"numbered 0 to %d)%s", nmissing, shards, nmissing == 1 ? "is" : "are", missing,
				nmissing > 20 ? "..." : "", shards - 1, gap);
	return 0;
}

static int merge_reports(struct merge *mg, struct report *r, int n, struct scrub_merged *out)
{
	struct scrub_progress *p = &out->p;
	int ret;

	qsort(r, (size_t)n, sizeof(*r), by_begin);
	for (int i = 1; i < n; i++) {
		ret = check_same(mg, &r[0], &r[i]);
		if (ret)
			return ret;
	}
	ret = check_shards(mg, r, n);
	if (ret)
		return ret;
	for (int i = 1; i < n; i++) {
		if (r[i].s.begin < r[i - 1].s.end)
			return fmt_fail(mg->err, mg->errlen, -EINVAL, "%s and %s overlap: stripes [%" PRIu64 ", %" PRIu64
					") are in both", r[i - 1].path, r[i].path, r[i].s.begin,
					r[i].s.end < r[i - 1].s.end ? r[i].s.end : r[i - 1].s.end);
	}
	for (int i = 1; i < n; i++)
		if (r[i].s.begin > r[i - 1].s.end)
			return fmt_fail(mg->err, mg->errlen, -EINVAL, "stripes [%" PRIu64 ", %" PRIu64 ") are in no "
					"report (between %s and %s): a report is missing", r[i - 1].s.end, r[i].s.begin,
					r[i - 1].path, r[i].path);
	memset(out, 0, sizeof(*out));
	snprintf(out->id.array_uuid, sizeof(out->id.array_uuid), "%s", r[0].s.uuid);
	out->id.level = r[0].s.level;
	out->id.raid_disks = r[0].s.raid_disks;
	out->id.chunk_bytes = (uint32_t)r[0].s.chunk_bytes;
	out->id.stripes = r[0].s.stripes_total;
	out->id.shard = -1;
	out->id.shards = n;
	out->mode = !strcmp(r[0].s.mode, "repair") ? SCRUB_REPAIR : SCRUB_CHECK;
	p->mode = out->mode;
	p->stripe_begin = p->resumed_at = r[0].s.begin;
	p->stripe_end = p->next_stripe = r[n - 1].s.end;
	p->chunk_bytes = r[0].s.chunk_bytes;
	for (int i = 0; i < n; i++) {
		const struct summary *s = &r[i].s;

		p->mismatches += s->mismatches;
		p->mismatch_units += s->mismatch_units;
		p->writes += s->writes;
		p->bytes_written += s->bytes_written;
		p->stripes_unchecked += s->unchecked;
		p->read_errors += s->read_errors;
		p->member_requests += s->requests;
		p->member_request_bytes += s->request_bytes;
		p->fg_backoffs += s->fg_backoffs;
		p->seconds += s->seconds;
		p->throttle_ns += (uint64_t)(s->throttle_seconds * 1e9);
		if (strcmp(s->finished, out->finished) > 0)
			snprintf(out->finished, sizeof(out->finished), "%s", s->finished);
	}
	p->done_bytes = p->total_bytes = (p->stripe_end - p->stripe_begin) * p->chunk_bytes;
	p->state = SCRUB_DONE;
	out->result = scrub_result_name(0, p, out->mode);
	return 0;
}

int scrub_merge(const char *const *paths, int n, struct scrub_merged *out, char *err, size_t errlen)
{
	struct merge mg = { .err = err, .errlen = errlen };
	struct report *r = NULL;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (n < 1)
		return fmt_fail(err, errlen, -EINVAL, "no reports given");
	r = calloc((size_t)n, sizeof(*r));
	if (!r)
		return fmt_fail(err, errlen, -ENOMEM, "out of memory");
	for (int i = 0; i < n && !ret; i++)
		ret = read_report(&mg, paths[i], i, &r[i]);
	if (!ret)
		ret = merge_reports(&mg, r, n, out);
	if (!ret) {
		qsort(mg.rec, mg.nrec, sizeof(*mg.rec), by_stripe);
		out->records = calloc(mg.nrec ? mg.nrec : 1, sizeof(*out->records));
		if (!out->records)
			ret = -ENOMEM;
		for (size_t i = 0; !ret && i < mg.nrec; i++) {
			out->records[i] = mg.rec[i].line;
			mg.rec[i].line = NULL;
		}
		out->nrecords = ret ? 0 : mg.nrec;
	}
	if (ret == -ENOMEM && err && !*err)
		fmt_err(err, errlen, "out of memory");
	for (size_t i = 0; i < mg.nrec; i++)
		free(mg.rec[i].line);
	free(mg.rec);
	free(r);
	if (ret)
		scrub_merged_free(out);
	return ret;
}

void scrub_merged_free(struct scrub_merged *m)
{
	for (size_t i = 0; m->records && i < m->nrecords; i++)
		free(m->records[i]);
	free(m->records);
	m->records = NULL;
	m->nrecords = 0;
}
