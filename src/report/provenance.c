/* provenance.c - provenance maps (provenance.h).
 *
 * Provenance map (JSON lines): a header line
 *   {"map":"raidimg-provenance","format_version":1,"array_bytes":N,"chunk_bytes":N,
 *    "members":[{"role":0,"path":"..."},...]}
 * then one line per range of the array written, in array order (offsets are
 * array offsets), adjacent ranges of the same kind merged:
 *   {"offset":N,"length":N,"source":"member","role":R}
 *   {"offset":N,"length":N,"source":"rebuilt","role":R,"from_roles":[...]}
 *   {"offset":N,"length":N,"source":"untrusted","role":R,"from_roles":[...]}
 *   {"offset":N,"length":N,"source":"unreadable","role":R,"readable_roles":[...]}
 * role is the member whose chunk holds the range; "rebuilt" ranges were
 * computed from parity out of the members in from_roles because member R
 * was missing or failed to read; "untrusted" ranges likewise because
 * member R's image holds bytes there that a map says are not the
 * original's (a ddrescue mapfile, EWF acquisition errors, md's bad-block
 * log).  The header's members also give each image's kind and its
 * untrusted ranges inside the data area ("untrusted_bytes",
 * "untrusted_ranges", "untrusted_from": [{"kind","path"}]).
 *
 * A map whose name ends in .svg is a picture instead (picture.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outfile.h"
#include "picture.h"
#include "provenance.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* provenance                                                           */
/* ------------------------------------------------------------------ */

struct prov_rec {
	uint64_t off, len;
	enum volume_src how;      /* MEMBER, REBUILT or UNREADABLE */
	int role;
	size_t used;                /* index of the member set in the slot's pool */
};

struct prov_slot {
	struct provenance *p;
	struct prov_rec *r;         /* owned */
	size_t n, cap;
	bool *pool;                 /* member sets, raid_disks each, owned */
	size_t npool, poolcap;
	uint64_t bad_off;
	bool oom;
};

struct provenance {
	FILE *f;                    /* over out (outfile_stdio), owned */
	struct outfile out;         /* the map, named when complete */
	char *path;                 /* owned */
	const struct array *a;
	int nslots;
	struct prov_slot *slots;    /* owned */
	struct volume_observer *obs;   /* [nslots]: the observer of each slot, owned */
	struct prov_rec pend;       /* the range being merged, not yet written */
	bool *pend_used;            /* [raid_disks], owned */
	bool have_pend;
	struct picture *pic;        /* an SVG map: the picture drawn instead; owned */
};

static const bool *slot_used(const struct prov_slot *sl, const struct prov_rec *r)
{
	return sl->pool + r->used * (size_t)sl->p->a->geom.raid_disks;
}

static void slot_add(struct prov_slot *sl, uint64_t off, uint64_t len, enum volume_src how, int role,
		     const bool *used)
{
	int n = sl->p->a->geom.raid_disks;
	struct prov_rec *r;

	if (sl->n == sl->cap) {
		size_t cap = sl->cap ? sl->cap * 2 : 256;
		struct prov_rec *x = realloc(sl->r, cap * sizeof(*x));
		if (!x) {
			sl->oom = true;
			return;
		}
		sl->r = x;
		sl->cap = cap;
	}
	r = &sl->r[sl->n];
	r->off = off;
	r->len = len;
	r->how = how;
	r->role = role;
	r->used = 0;
	if (how != VOLUME_SRC_MEMBER) {
		if (sl->npool == sl->poolcap) {
			size_t cap = sl->poolcap ? sl->poolcap * 2 : 64;
			bool *x = realloc(sl->pool, cap * (size_t)n * sizeof(*x));
			if (!x) {
				sl->oom = true;
				return;
			}
			sl->pool = x;
			sl->poolcap = cap;
		}
		memcpy(sl->pool + sl->npool * (size_t)n, used, (size_t)n * sizeof(*used));
		r->used = sl->npool++;
	}
	sl->n++;
}

/* The observer of one slot: note a piece. */
static void prov_served(void *ctx, uint64_t off, uint64_t len, enum volume_src how, int role, const bool *used)
{
	slot_add(ctx, off, len, how, role, used);
}

const struct volume_observer *provenance_observers(struct provenance *p)
{
	return p->obs;
}

static void write_roles(FILE *f, const char *key, const bool *used, int n, int except)
{
	bool first = true;

	fprintf(f, ",\"%s\":[", key);
	for (int i = 0; i < n; i++) {
		if (!used[i] || i == except)
			continue;
		fprintf(f, "%s%d", first ? "" : ",", i);
		first = false;
	}
	fputc(']', f);
}

static void pend_write(struct provenance *p)
{
	static const char *const name[] = {
		[VOLUME_SRC_MEMBER] = "member", [VOLUME_SRC_REBUILT] = "rebuilt", [VOLUME_SRC_UNREADABLE] = "unreadable",
		[VOLUME_SRC_UNTRUSTED] = "untrusted",
	};
	const struct prov_rec *r = &p->pend;

	if (!p->have_pend)
		return;
	fprintf(p->f, "{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"source\":\"%s\",\"role\":%d", r->off,
		r->len, name[r->how], r->role);
	if (r->how == VOLUME_SRC_REBUILT || r->how == VOLUME_SRC_UNTRUSTED)
		write_roles(p->f, "from_roles", p->pend_used, p->a->geom.raid_disks, r->role);
	else if (r->how == VOLUME_SRC_UNREADABLE)
		write_roles(p->f, "readable_roles", p->pend_used, p->a->geom.raid_disks, r->role);
	fputs("}\n", p->f);
	p->have_pend = false;
}

/* Merge r (of slot sl) into the pending range or start a new one. */
static void pend_add(struct provenance *p, const struct prov_slot *sl, const struct prov_rec *r)
{
	int n = p->a->geom.raid_disks;

	if (p->pic) {
		picture_add(p->pic, r->off, r->len, r->how, r->role);
		return;
	}
	const bool *used = r->how == VOLUME_SRC_MEMBER ? NULL : slot_used(sl, r);

	if (p->have_pend && p->pend.off + p->pend.len == r->off && p->pend.how == r->how &&
	    p->pend.role == r->role && (!used || !memcmp(used, p->pend_used, (size_t)n * sizeof(*used)))) {
		p->pend.len += r->len;
		return;
	}
	pend_write(p);
	p->pend = *r;
	if (used)
		memcpy(p->pend_used, used, (size_t)n * sizeof(*used));
	p->have_pend = true;
}

static int rec_cmp(const void *x, const void *y)
{
	const struct prov_rec *a = x, *b = y;

	return a->off < b->off ? -1 : a->off > b->off;
}

int provenance_emit(struct provenance *p, int slot, int ret)
{
	struct prov_slot *sl = &p->slots[slot];
	uint64_t bad = UINT64_MAX;

	if (sl->oom) {
		msg("%s: out of memory for the provenance map", p->path);
		return -ENOMEM;
	}
	qsort(sl->r, sl->n, sizeof(*sl->r), rec_cmp);
	/* on a failed read only the bytes before the first unreadable one
	 * were written: the map stops there, with the unreadable ranges */
	for (size_t i = 0; ret && i < sl->n; i++)
		if (sl->r[i].how == VOLUME_SRC_UNREADABLE && sl->r[i].off < bad)
			bad = sl->r[i].off;
	for (size_t i = 0; i < sl->n; i++) {
		struct prov_rec r = sl->r[i];

		if (r.how != VOLUME_SRC_UNREADABLE) {
			if (r.off >= bad)
				continue;
			if (r.off + r.len > bad)
				r.len = bad - r.off;
		}
		pend_add(p, sl, &r);
	}
	/* ready for the slot's next segment */
	sl->n = 0;
	sl->npool = 0;
	return ferror(p->f) ? -EIO : 0;
}

/* ,"kind":...,"untrusted_bytes":N,"untrusted_ranges":N,"untrusted_from":[...] */
static void prov_member_sources(FILE *f, const struct array_member *m)
{
	const struct source_untrusted *u = m->src ? m->src->untrusted : NULL;

	fputs(",\"kind\":", f);
	json_str_or_null(f, m->src ? m->src->ops->kind : NULL);
	fprintf(f, ",\"untrusted_bytes\":%" PRIu64 ",\"untrusted_ranges\":%" PRIu64 ",\"untrusted_from\":[",
		m->untrusted_bytes, m->untrusted_ranges);
	for (int i = 0; u && i < u->norigins; i++) {
		fprintf(f, "%s{\"kind\":\"%s\",\"path\":", i ? "," : "", u->origins[i].kind);
		json_str(f, u->origins[i].path);
		fputc('}', f);
	}
	fputc(']', f);
}

static bool is_svg(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && !strcasecmp(path + n - 4, ".svg");
}

int provenance_open(struct provenance **out, const char *path, const struct array *a, int nslots)
{
	struct provenance *p = calloc(1, sizeof(*p));
	struct outfile_opts oo = { .replace = true };
	char err[ERR_MAX];

	if (!p)
		goto oom;
	p->out.fd = -1;
	p->a = a;
	p->nslots = nslots;
	p->path = strdup(path);
	p->slots = calloc((size_t)nslots, sizeof(*p->slots));
	p->pend_used = calloc((size_t)a->geom.raid_disks, sizeof(bool));
	if (!p->path || !p->slots || !p->pend_used)
		goto oom;
	p->obs = calloc((size_t)nslots, sizeof(*p->obs));
	if (!p->obs)
		goto oom;
	for (int i = 0; i < nslots; i++) {
		p->slots[i].p = p;
		p->obs[i] = (struct volume_observer){ prov_served, &p->slots[i] };
	}
	if (outfile_open(&p->out, path, &oo, err, sizeof(err))) {
		msg("cannot create the provenance map: %s", err);
		provenance_close(p, false);
		return -EIO;
	}
	p->f = outfile_stdio(&p->out);
	if (!p->f) {
		msg("%s: cannot create the provenance map: %s", path, strerror(errno));
		provenance_close(p, false);
		return -EIO;
	}
	if (is_svg(path)) {
		if (picture_new(&p->pic, a))
			goto oom;
		*out = p;
		return 0;
	}
	fprintf(p->f, "{\"map\":\"raidimg-provenance\",\"format_version\":1,\"array_bytes\":%" PRIu64
		",\"chunk_bytes\":%" PRIu32 ",\"members\":[", a->array_bytes, a->geom.chunk_bytes);
	for (int r = 0; r < a->geom.raid_disks; r++) {
		char *mp = array_member_path(&a->members[r]);

		fprintf(p->f, "%s{\"role\":%d,\"path\":", r ? "," : "", r);
		if (mp)
			json_path(p->f, mp, "path");
		else
			fputs("null", p->f);
		fprintf(p->f, ",\"state\":\"%s\"", member_state_name(a->members[r].state));
		prov_member_sources(p->f, &a->members[r]);
		fputc('}', p->f);
		free(mp);
	}
	fputs("]}\n", p->f);
	*out = p;
	return 0;
oom:
	msg("out of memory");
	provenance_close(p, false);
	return -ENOMEM;
}

int provenance_close(struct provenance *p, bool commit)
{
	char err[ERR_MAX];
	int ret = 0;

	if (!p)
		return 0;
	if (p->f) {
		int e = 0;

		if (commit && p->pic)
			picture_write_svg(p->pic, p->f);
		else if (commit)
			pend_write(p);
		errno = 0;
		if (fflush(p->f) || ferror(p->f))
			e = errno ? errno : EIO;
		if (fclose(p->f) && !e)
			e = errno;
		if (e) {
			ret = -e;
			msg("%s: cannot write the provenance map: %s (removed)", p->path, strerror(e));
		}
	}
	if (commit && !ret) {
		ret = outfile_commit(&p->out, err, sizeof(err));
		if (ret)
			msg("cannot write the provenance map: %s", err);
	}
	outfile_abort(&p->out);
	for (int i = 0; p->slots && i < p->nslots; i++) {
		free(p->slots[i].r);
		free(p->slots[i].pool);
	}
	free(p->slots);
	free(p->obs);
	free(p->pend_used);
	picture_free(p->pic);
	free(p->path);
	free(p);
	return ret;
}

