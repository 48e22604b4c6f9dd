/* candidates.c - what the images hold, grouped into arrays, the array
 * chosen, IMSM members placed by their drive serials (candidates.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "candidates.h"
#include "probe.h"
#include "sysio.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* collecting                                                           */
/* ------------------------------------------------------------------ */

void cand_set_free(struct cand_set *cs)
{
	for (int i = 0; cs->c && i < cs->n; i++)
		source_close(cs->c[i].src);
	free(cs->c);
	for (int i = 0; cs->images && i < cs->nimages; i++) {
		free(cs->images[i].err);
		free(cs->images[i].note);
	}
	free(cs->images);
	free(cs->groups);
	memset(cs, 0, sizeof(*cs));
}

static struct candidate *cand_add(struct cand_set *cs)
{
	struct candidate *c = realloc(cs->c, (size_t)(cs->n + 1) * sizeof(*c));

	if (!c)
		return NULL;
	cs->c = c;
	c = &cs->c[cs->n++];
	memset(c, 0, sizeof(*c));
	c->group = -1;
	return c;
}

/* The candidates of one image (taken over): every volume found in it or
 * its partitions.  0, -ENOENT (nothing there: the message in err) or
 * another -errno with the message. */
static int collect_image(struct cand_set *cs, struct source *src, const char *name, int image, char *err,
			 size_t errlen)
{
	struct probe_result r;
	int ret = probe_image(src, name, &r, err, errlen);

	if (ret)
		goto out;
	snprintf(cs->images[image].table, sizeof(cs->images[image].table), "%s", r.table);
	cs->images[image].nparts = r.nparts;
	if (r.note[0] && !(cs->images[image].note = strdup(r.note))) {
		ret = -ENOMEM;
		goto out;
	}
	if (!r.nhits) {
		ret = -ENOENT;
		goto out;
	}
	for (int h = 0; h < r.nhits; h++) {
		for (int v = 0; v < r.hits[h].found.nvol; v++) {
			struct candidate *c = cand_add(cs);

			if (!c) {
				ret = -ENOMEM;
				goto out;
			}
			c->path = name;
			c->image = image;
			c->src = source_ref(r.hits[h].src);
			c->partition = r.hits[h].partition;
			snprintf(c->where, sizeof(c->where), "%s", r.hits[h].where);
			c->has_meta = true;
			c->meta = r.hits[h].found.vol[v];
		}
	}
out:
	probe_result_free(&r);
	source_close(src);
	if (ret == -ENOMEM)
		fmt_err(err, errlen, "out of memory");
	return ret;
}

static bool same_array(const struct member_meta *x, const struct member_meta *y)
{
	return x->fmt && y->fmt && !strcmp(x->fmt->family, y->fmt->family) && !memcmp(x->set_uuid, y->set_uuid, 16);
}

static void group_candidates(struct cand_set *cs)
{
	for (int i = 0; i < cs->n; i++) {
		struct candidate *c = &cs->c[i];

		if (!c->has_meta)
			continue;
		for (int j = 0; j < i && c->group < 0; j++)
			if (cs->c[j].has_meta && same_array(&cs->c[j].meta, &c->meta))
				c->group = cs->c[j].group;
		if (c->group < 0) {
			struct cand_group *g = &cs->groups[cs->ngroups];

			memset(g, 0, sizeof(*g));
			g->fresh = i;
			c->group = cs->ngroups++;
		}
		cs->groups[c->group].n++;
		if (meta_fresher(&c->meta, &cs->c[cs->groups[c->group].fresh].meta))
			cs->groups[c->group].fresh = i;
	}
	for (int g = 0; g < cs->ngroups; g++) {
		const struct member_meta *m = &cs->c[cs->groups[g].fresh].meta;
		struct cand_group *cg = &cs->groups[g];

		cg->supported = (m->level == 4 || m->level == 5 || m->level == 6) && !m->unsupported[0];
		if (m->unsupported[0])
			snprintf(cg->why, sizeof(cg->why), "%s", m->unsupported);
		else if (!cg->supported)
			snprintf(cg->why, sizeof(cg->why), "RAID%d (raidimg reads RAID4, RAID5 and RAID6)", m->level);
	}
}

int cand_collect(struct source **srcs, const char *const *names, int n, const struct assemble_opts *o, bool lenient,
		 struct cand_set *cs, char *err, size_t errlen)
{
	int ret = 0, i;

	memset(cs, 0, sizeof(*cs));
	cs->nimages = n;
	cs->images = calloc((size_t)(n > 0 ? n : 1), sizeof(*cs->images));
	if (!cs->images) {
		ret = fmt_fail(err, errlen, -ENOMEM, "out of memory");
		i = 0;
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct source *src = srcs[i];
		char perr[ARRAY_ERR_MAX];

		srcs[i] = NULL;
		if (!src)
			continue;       /* lenient: the caller could not open it */
		cs->images[i].bytes = src->size;
		if (o->g.manual) {
			/* one candidate per image; its metadata, if any, only noted */
			struct candidate *c = cand_add(cs);

			if (!c) {
				source_close(src);
				ret = fmt_fail(err, errlen, -ENOMEM, "out of memory");
				break;
			}
			c->path = names[i];
			c->image = i;
			c->src = src;
			c->has_meta = metadata_probe(src, &c->meta, perr, sizeof(perr)) == 0;
			continue;
		}
		ret = collect_image(cs, src, names[i], i, perr, sizeof(perr));
		if (ret == -ENOENT)
			fmt_err(perr + strlen(perr), sizeof(perr) - strlen(perr), " (for images without metadata give "
				"the geometry: --level, --chunk, --layout, --order)");
		if (ret && ret != -ENOMEM && lenient) {
			cs->images[i].err = strdup(perr);
			cs->images[i].err_code = ret;
			ret = 0;
			continue;
		}
		if (ret == -ENOENT)
			ret = fmt_fail(err, errlen, -EINVAL, "%s: %s", names[i], perr);
		else if (ret)
			fmt_err(err, errlen, "%s", perr);
		if (ret)
			break;
	}
out:
	for (i++; i < n; i++) {
		source_close(srcs[i]);
		srcs[i] = NULL;
	}
	if (!ret) {
		cs->groups = calloc((size_t)(cs->n > 0 ? cs->n : 1), sizeof(*cs->groups));
		if (!cs->groups)
			return fmt_fail(err, errlen, -ENOMEM, "out of memory");
		group_candidates(cs);
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* choosing                                                             */
/* ------------------------------------------------------------------ */

void cand_group_desc(const struct cand_set *cs, int g, char *buf, size_t len)
{
	found_array_desc(&cs->c[cs->groups[g].fresh].meta, buf, len);
}

/* The list of the arrays found, one per line, for messages. */
static void list_groups(const struct cand_set *cs, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int g = 0; g < cs->ngroups && used + 1 < len; g++) {
		char desc[160];
		int shown = 0;

		cand_group_desc(cs, g, desc, sizeof(desc));
		used += (size_t)snprintf(buf + used, len - used, "\n  %s: ", desc);
		for (int i = 0; i < cs->n && used + 1 < len; i++) {
			if (cs->c[i].group != g)
				continue;
			used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s", shown++ ? ", " : "", cs->c[i].path,
						 cs->c[i].partition ? " " : "", cs->c[i].where);
			if (used + 1 >= len)
				break;
		}
		if (used + 1 < len && !cs->groups[g].supported)
			used += (size_t)snprintf(buf + used, len - used, " (not read: %s)", cs->groups[g].why);
	}
}

/* Does --array sel name the array m?  Its uuid (any spelling), its name,
 * or for md's "host:name" the part after the colon. */
static bool array_matches(const struct member_meta *m, const char *sel)
{
	uint8_t u[16];
	const char *colon = strchr(m->set_name, ':');

	if (!meta_uuid_parse(sel, u) && !memcmp(u, m->set_uuid, 16))
		return true;
	return m->set_name[0] && (!strcmp(sel, m->set_name) || (colon && !strcmp(sel, colon + 1)));
}

int cand_choose(const struct cand_set *cs, const struct assemble_opts *o, int *group, char *note, size_t notelen,
		char *err, size_t errlen)
{
	char list[ARRAY_ERR_MAX - 512];
	int pick = -1, n = 0;

	note[0] = '\0';
	if (o->g.array) {
		for (int g = 0; g < cs->ngroups; g++) {
			if (array_matches(&cs->c[cs->groups[g].fresh].meta, o->g.array)) {
				pick = g;
				n++;
			}
		}
		if (n == 1) {
			*group = pick;
			return 0;
		}
		list_groups(cs, list, sizeof(list));
		return fmt_fail(err, errlen, -EINVAL, "--array %s: %s; the images hold:%s", o->g.array,
				n ? "several arrays have that name: give the uuid" : "no such array", list);
	}
	if (cs->ngroups == 1) {
		*group = 0;
		return 0;
	}
	for (int g = 0; g < cs->ngroups; g++) {
		if (cs->groups[g].supported) {
			pick = g;
			n++;
		}
	}
	list_groups(cs, list, sizeof(list));
	if (n == 1) {
		char desc[160];

		*group = pick;
		cand_group_desc(cs, pick, desc, sizeof(desc));
		snprintf(note, notelen, "the images hold %d arrays; reading the only RAID4/5/6 one (%s); "
			 "--array UUID|NAME reads another", cs->ngroups, desc);
		return 0;
	}
	return fmt_fail(err, errlen, -EINVAL, "the images hold %d different arrays%s; choose one with --array UUID|NAME:%s",
			cs->ngroups, n ? "" : ", none of them RAID4/5/6", list);
}

/* ------------------------------------------------------------------ */
/* placing                                                              */
/* ------------------------------------------------------------------ */

/* The file name without its directory and its image extensions: examiners
 * name images after the drive serial ("WD-WCC4N1234567.img.zst"). */
static void name_stem(const char *path, char *out, size_t len)
{
	static const char *const ext[] = { ".zst", ".zstd", ".img", ".raw", ".dd", ".bin", ".E01", ".e01", ".001" };
	const char *base = strrchr(path, '/');
	size_t n;

	snprintf(out, len, "%s", base ? base + 1 : path);
	for (int round = 0; round < 2; round++) {
		n = strlen(out);
		for (size_t i = 0; i < ARRAY_LEN(ext); i++) {
			size_t e = strlen(ext[i]);

			if (n > e && !strcmp(out + n - e, ext[i])) {
				out[n - e] = '\0';
				break;
			}
		}
	}
}

/* --serial IMAGE=SERIAL for path: true with the serial in id. */
static bool given_serial(const struct assemble_opts *o, const char *path, char *id, size_t len)
{
	for (int i = 0; i < o->g.nserials; i++) {
		if (same_file(o->g.serials[i].image, path)) {
			snprintf(id, len, "%s", o->g.serials[i].serial);
			return true;
		}
	}
	return false;
}

/* Hook for the serial an image's own container records (an E01 header's
 * "serial number"): source_serial, through the image's source. */
static int recorded_serial(struct source *src, char *buf, size_t len)
{
	return source_serial(src, buf, len);
}

/* The identity c is placed by, into id, and where it comes from into
 * c->ident: the metadata's own (DDF), --serial, the image's record, its
 * file name. */
static void candidate_id(struct candidate *c, const struct assemble_opts *o, char *id, size_t len)
{
	if (c->meta.dev_id[0]) {
		snprintf(id, len, "%s", c->meta.dev_id);
		c->ident[0] = '\0';
		return;
	}
	if (given_serial(o, c->path, id, len)) {
		snprintf(c->ident, sizeof(c->ident), "serial '%s' from --serial", id);
		return;
	}
	if (!recorded_serial(c->src, id, len)) {
		snprintf(c->ident, sizeof(c->ident), "serial '%s' recorded in the image", id);
		return;
	}
	name_stem(c->path, id, len);
	snprintf(c->ident, sizeof(c->ident), "serial '%s' from its file name", id);
}

int array_serial_for(const struct assemble_opts *o, const char *path, char *out, size_t len)
{
	if (given_serial(o, path, out, len))
		return 1;
	name_stem(path, out, len);
	return 0;
}

/* The serials of the slots of fresh no candidate was placed in. */
static void unfilled_slots(const struct cand_set *cs, int g, const struct member_meta *fresh, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int d = 0; d < fresh->nids && d < fresh->max_dev && used + 1 < len; d++) {
		int role = fresh->dev_roles[d], taken = 0;
		char s[META_ID_LEN + 1];

		if (role < 0 && role != META_ROLE_FAULTY)
			continue;
		for (int i = 0; i < cs->n; i++)
			if (cs->c[i].group == g && cs->c[i].meta.dev_number == d)
				taken = 1;
		if (taken)
			continue;
		memcpy(s, fresh->dev_ids[d], META_ID_LEN);
		s[META_ID_LEN] = '\0';
		if (role >= 0)
			used += (size_t)snprintf(buf + used, len - used, "%s'%s' (role %d)", used ? ", " : "", s, role);
		else
			used += (size_t)snprintf(buf + used, len - used, "%s'%s' (failed)", used ? ", " : "", s);
	}
}

/* The role slot d of fresh in use with no candidate of group g placed in
 * it, when there is exactly one; -1 otherwise. */
static int only_unfilled(const struct cand_set *cs, int g, const struct member_meta *fresh)
{
	int found = -1;

	for (int d = 0; d < fresh->nids && d < fresh->max_dev; d++) {
		int taken = 0;

		if (fresh->dev_roles[d] < 0)
			continue;
		for (int i = 0; i < cs->n && !taken; i++)
			taken = cs->c[i].group == g && cs->c[i].meta.dev_number == d;
		if (taken)
			continue;
		if (found >= 0)
			return -1;
		found = d;
	}
	return found;
}

/* The member of role r among group g's placed candidates, NULL if none. */
static struct candidate *placed_in(struct cand_set *cs, int g, const struct member_meta *fresh, int r)
{
	for (int i = 0; i < cs->n; i++) {
		struct candidate *c = &cs->c[i];

		if (c->group == g && c->meta.role == r && c->meta.dev_number >= 0 &&
		    c->meta.dev_number < fresh->max_dev && fresh->dev_roles[c->meta.dev_number] == r)
			return c;
	}
	return NULL;
}

enum { ELIM_SAMPLES = 16, ELIM_BYTES = 64 * 1024 };

/* One image u left unplaced, one drive of the disk table in use in this
 * volume without an image, every other role filled: u is that drive if,
 * and only if, it completes the parity of the others.  For RAID5 (IMSM's
 * only parity level) the XOR of every member's data at one member offset
 * is zero, whatever the order; checked on ELIM_SAMPLES windows spread over
 * the members' data, and an image whose windows are all zero proves
 * nothing.  1 placed (c->ident says how), 0 the data cannot tell (not
 * RAID5, more unknowns, a read error, zeros), -1 it says u is not that
 * drive (why in why). */
static int place_by_elimination(struct cand_set *cs, int g, const struct member_meta *fresh, struct candidate *u,
				char *why, size_t whylen)
{
	struct candidate *by_role[LAYOUT_MAX_DISKS];
	uint64_t data = fresh->component_sectors * 512;
	uint8_t *acc = NULL, *buf = NULL;
	int d = only_unfilled(cs, g, fresh), r, ret = 0, nonzero = 0;
	char s[META_ID_LEN + 1];

	if (fresh->level != 5 || d < 0 || fresh->raid_disks > LAYOUT_MAX_DISKS || data < ELIM_BYTES)
		return 0;
	r = fresh->dev_roles[d];
	for (int k = 0; k < fresh->raid_disks; k++) {
		by_role[k] = k == r ? u : placed_in(cs, g, fresh, k);
		if (!by_role[k])
			return 0;
	}
	acc = malloc(ELIM_BYTES);
	buf = malloc(ELIM_BYTES);
	if (!acc || !buf)
		goto out;
	for (int w = 0; w < ELIM_SAMPLES; w++) {
		uint64_t off = (data - ELIM_BYTES) / (ELIM_SAMPLES - 1) * (uint64_t)w / 4096 * 4096;

		memset(acc, 0, ELIM_BYTES);
		for (int k = 0; k < fresh->raid_disks; k++) {
			struct candidate *c = by_role[k];

			if (source_pread(c->src, buf, ELIM_BYTES, c->meta.data_offset * 512 + off))
				goto out;
			for (size_t b = 0; b < ELIM_BYTES; b++) {
				acc[b] ^= buf[b];
				nonzero |= c == u && buf[b];
			}
		}
		for (size_t b = 0; b < ELIM_BYTES; b++) {
			if (acc[b]) {
				memcpy(s, fresh->dev_ids[d], META_ID_LEN);
				s[META_ID_LEN] = '\0';
				snprintf(why, whylen, "%s is not drive '%s' (the only one of the disk table without an "
					 "image): with it the members' data does not add up to their parity at member "
					 "byte %" PRIu64, u->path, s, off + b);
				ret = -1;
				goto out;
			}
		}
	}
	if (!nonzero)
		goto out;
	memcpy(s, fresh->dev_ids[d], META_ID_LEN);
	s[META_ID_LEN] = '\0';
	u->meta.role = r;
	u->meta.dev_number = d;
	snprintf(u->ident, sizeof(u->ident), "serial '%s' by elimination: the only drive without an image, and "
		 "its data completes the others' parity (%d samples)", s, ELIM_SAMPLES);
	ret = 1;
out:
	free(acc);
	free(buf);
	return ret;
}

int cand_place(struct cand_set *cs, int g, const struct assemble_opts *o, bool strict, char *note, size_t notelen,
	       char *err, size_t errlen)
{
	struct member_meta *fresh = &cs->c[cs->groups[g].fresh].meta;
	struct candidate *last_bad = NULL;
	char bad[1024] = "", slots[1024], why[512] = "";
	size_t used = 0;
	int nbad = 0;

	if (note && notelen)
		note[0] = '\0';
	if (!fresh->fmt || !fresh->fmt->place)
		return 0;
	for (int i = 0; i < cs->n; i++) {
		struct candidate *c = &cs->c[i];
		char id[64];
		int dev, role;

		if (c->group != g)
			continue;
		candidate_id(c, o, id, sizeof(id));
		if (c->meta.role == META_ROLE_UNPLACED) {
			if (c->meta.fmt->place(&c->meta, id, &dev, &role)) {
				nbad++;
				used += (size_t)snprintf(bad + used, used < sizeof(bad) ? sizeof(bad) - used : 0,
							 "%s%s%s%s (%s)", used ? ", " : "", c->path, c->partition ? " " : "",
							 c->where, c->ident);
				if (used >= sizeof(bad))
					used = sizeof(bad);
				last_bad = c;
				continue;
			}
			c->meta.role = role;
		}
		/* its slot in the freshest view, where faulty or out-of-date
		 * members show; -1 when that view does not list it */
		if (fresh->fmt->place(fresh, id, &dev, &role))
			dev = -1;
		c->meta.dev_number = dev;
	}
	if (nbad == 1 && place_by_elimination(cs, g, fresh, last_bad, why, sizeof(why)) == 1) {
		if (note && notelen)
			snprintf(note, notelen, "%s: placed as %s", last_bad->path, last_bad->ident);
		return 0;
	}
	if (!nbad || !strict)
		return 0;
	unfilled_slots(cs, g, fresh, slots, sizeof(slots));
	return fmt_fail(err, errlen, -EINVAL, "%s metadata does not say which drive an image is, only the drive "
			"serials: no drive of the disk table has the serial of %s; the disk table's drives without "
			"an image: %s%s%s.  Give each image's drive serial with --serial IMAGE=SERIAL (or name the "
			"images after the serials)", fresh->format, bad, slots[0] ? slots : "none", why[0] ? "; " : "",
			why);
}
