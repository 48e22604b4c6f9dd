/* assemble.c - turn member images into a struct array (array.h).
 *
 * Assembly follows mdadm's rules (Assemble.c) and the kernel's
 * (super_1_validate): members are placed by the role in their own
 * metadata, the freshest member (highest events) is trusted for the
 * geometry and for who is faulty, and a member more than one event behind
 * it is stale.  A manual geometry places the images by --order instead.
 * An array caught in the middle of a reshape gets the geometry before it
 * as a second struct array (prev).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "array.h"
#include "candidates.h"
#include "probe.h"
#include "sysio.h"
#include "parity.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* assembly                                                             */
/* ------------------------------------------------------------------ */

/* Append a line to buf (notes or warnings: newline-separated, cut at
 * size). */
static void lines_vadd(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t used = strlen(buf);

	if (used + 2 >= size)
		return;
	vsnprintf(buf + used, size - used - 1, fmt, ap);
	used = strlen(buf);
	buf[used] = '\n';
	buf[used + 1] = '\0';
}

static void note_add(struct array *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_add(struct array *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lines_vadd(a->notes, sizeof(a->notes), fmt, ap);
	va_end(ap);
}

static void warn_add(struct array *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_add(struct array *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lines_vadd(a->warnings, sizeof(a->warnings), fmt, ap);
	va_end(ap);
}

static int add_extra(struct array *a, const struct candidate *c, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int add_extra(struct array *a, const struct candidate *c, const char *fmt, ...)
{
	struct array_extra *x;
	size_t used = 0;
	va_list ap;

	x = realloc(a->extra, (size_t)(a->nextra + 1) * sizeof(*x));
	if (!x)
		return -ENOMEM;
	a->extra = x;
	x = &a->extra[a->nextra++];
	x->path = strdup(c->path);
	x->partition = c->partition;
	x->note[0] = '\0';
	if (c->partition)
		used = (size_t)snprintf(x->note, sizeof(x->note), "%s: ", c->where);
	va_start(ap, fmt);
	vsnprintf(x->note + used, sizeof(x->note) - used, fmt, ap);
	va_end(ap);
	return x->path ? 0 : -ENOMEM;
}

/* Where c was found, into a member. */
static void member_from(struct array_member *m, const struct candidate *c)
{
	m->partition = c->partition;
	snprintf(m->where, sizeof(m->where), "%s", c->where);
	snprintf(m->ident, sizeof(m->ident), "%s", c->ident);
}

static int alloc_members(struct array *a, int n)
{
	a->members = calloc((size_t)n, sizeof(*a->members));
	if (!a->members)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		a->members[i].role = i;
		a->members[i].state = MEMBER_MISSING;
		snprintf(a->members[i].note, sizeof(a->members[i].note), "no image for this role");
	}
	return 0;
}

/* Refuse sizes no image can back: the array's end must lie within at least
 * one image (else every image is truncated - or the size is absurd); --force
 * reads what there is.  who: the image whose superblock gave the geometry,
 * NULL for a manual one. */
static int check_sizes_backed(struct array *a, bool force, const char *who, char *err, size_t errlen)
{
	uint64_t longest = 0;
	char b1[32], b2[32];

	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		uint64_t have;

		if (!m->src || (m->state != MEMBER_OK && m->state != MEMBER_REBUILDING))
			continue;
		have = m->image_bytes > m->data_offset ? m->image_bytes - m->data_offset : 0;
		if (have >= a->member_bytes || force)
			return 0;
		if (have > longest)
			longest = have;
	}
	if (a->nmissing == a->geom.raid_disks)
		return 0;       /* nothing to read: "too many missing" says it */
	if (who)
		fmt_err(err, errlen, "%s: the superblock gives each member %s of data, but no image holds "
			"that much (the longest data area is %s): truncated images, or a damaged superblock? "
			"(--force reads what there is)", who, fmt_size(a->member_bytes, b1, sizeof(b1)),
			fmt_size(longest, b2, sizeof(b2)));
	else
		fmt_err(err, errlen, "--member-size %s is more than any image holds past the data offset "
			"(the longest holds %s; --force reads what there is)",
			fmt_size(a->member_bytes, b1, sizeof(b1)), fmt_size(longest, b2, sizeof(b2)));
	return -EINVAL;
}

/* Set the derived sizes and check every used member against them.
 * who: the image whose superblock gave the geometry, NULL for a manual one. */
static int finish_geometry(struct array *a, bool force, const char *who, char *err, size_t errlen)
{
	const char *why = NULL;
	int ret;

	if (layout_check(&a->geom, &why)) {
		fmt_err(err, errlen, "%s%sunsupported geometry: %s", who ? who : "", who ? ": " : "",
			why ? why : "invalid");
		return -EINVAL;
	}
	a->k = layout_data_disks(&a->geom);
	a->redundancy = a->geom.level == 6 ? 2 : 1;
	a->member_bytes -= a->member_bytes % a->geom.chunk_bytes;
	if (a->member_bytes == 0) {
		fmt_err(err, errlen, "%s%sthe members hold less than one chunk (%u bytes) of data",
			who ? who : "", who ? ": " : "", a->geom.chunk_bytes);
		return -EINVAL;
	}
	/* offsets must fit in an off_t (FUSE, lseek): at most 8 EiB */
	if (a->member_bytes > (uint64_t)INT64_MAX / (uint64_t)a->k) {
		fmt_err(err, errlen, "%s%san array of %d data members of %" PRIu64 " bytes each is impossibly large",
			who ? who : "", who ? ": " : "", a->k, a->member_bytes);
		return -EINVAL;
	}
	a->stripes = a->member_bytes / a->geom.chunk_bytes;
	a->array_bytes = a->member_bytes * (uint64_t)a->k;
	/* md serves array_size bytes when the metadata sets it (IMSM) */
	if (a->array_cap_bytes && a->array_cap_bytes < a->array_bytes)
		a->array_bytes = a->array_cap_bytes;
	a->nmissing = 0;
	for (int r = 0; r < a->geom.raid_disks; r++) {
		struct array_member *m = &a->members[r];
		if (m->state != MEMBER_OK && m->state != MEMBER_REBUILDING) {
			a->nmissing++;
			continue;
		}
		if (m->image_bytes < m->data_offset + a->member_bytes) {
			uint64_t have = m->image_bytes > m->data_offset ? m->image_bytes - m->data_offset : 0;
			if (have < m->readable_bytes)
				m->readable_bytes = have;
			warn_add(a, "%s: image is truncated: its data area ends %" PRIu64
				 " bytes short of the %" PRIu64 " the array needs; those chunks are rebuilt from parity",
				 m->path, a->member_bytes - have, a->member_bytes);
		}
		if (m->readable_bytes > a->member_bytes)
			m->readable_bytes = a->member_bytes;
		if (m->src && m->src->untrusted) {
			size_t n = 0;

			m->untrusted_bytes = range_list_bytes_in(&m->src->untrusted->r, m->data_offset, a->member_bytes,
								 &n);
			m->untrusted_ranges = n;
		}
	}
	if (a->nmissing > a->redundancy) {
		char roles[256] = "";
		size_t used = 0;
		for (int r = 0; r < a->geom.raid_disks; r++) {
			if (a->members[r].state == MEMBER_OK || a->members[r].state == MEMBER_REBUILDING)
				continue;
			used += (size_t)snprintf(roles + used, used < sizeof(roles) ? sizeof(roles) - used : 0,
						 "%s%d (%s)", used ? ", " : "", r, a->members[r].note);
			if (used >= sizeof(roles))
				break;
		}
		fmt_err(err, errlen, "too many members missing: %d of %d roles unusable (RAID%d survives %d): roles %s",
			a->nmissing, a->geom.raid_disks, a->geom.level, a->redundancy, roles);
		return -ENODEV;
	}
	ret = check_sizes_backed(a, force, who, err, errlen);
	if (ret)
		return ret;
	return 0;
}

static int assemble_manual(struct array *a, struct candidate *c, int nc,
			   const struct assemble_opts *o, char *err, size_t errlen)
{
	int n = o->g.geom.raid_disks;
	uint64_t smallest = UINT64_MAX;
	int ret;

	a->geom = o->g.geom;
	if (o->g.norder && o->g.norder != n) {
		fmt_err(err, errlen, "--order names %d members but the geometry has %d", o->g.norder, n);
		return -EINVAL;
	}
	if (!o->g.norder && nc != n) {
		fmt_err(err, errlen, "%d images given for %d members (use --order with 'missing' for absent ones)",
			nc, n);
		return -EINVAL;
	}
	ret = alloc_members(a, n);
	if (ret)
		return ret;
	for (int r = 0; r < n; r++) {
		int idx = o->g.norder ? o->g.order[r] : r;
		struct array_member *m = &a->members[r];

		if (idx < 0)
			continue;
		if (idx >= nc) {
			fmt_err(err, errlen, "--order refers to image %d but only %d were given", idx, nc);
			return -EINVAL;
		}
		if (c[idx].used) {
			fmt_err(err, errlen, "%s: given twice in --order", c[idx].path);
			return -EINVAL;
		}
		member_from(m, &c[idx]);
		c[idx].used = true;
		m->state = MEMBER_OK;
		m->note[0] = '\0';
		m->src = c[idx].src;
		c[idx].src = NULL;
		m->path = strdup(c[idx].path);
		m->image_bytes = m->src->size;
		m->data_offset = o->g.data_offset;
		m->readable_bytes = UINT64_MAX;
		m->has_meta = c[idx].has_meta;
		if (m->has_meta)
			m->meta = c[idx].meta;
		if (!m->path)
			return -ENOMEM;
		if (m->image_bytes <= o->g.data_offset) {
			fmt_err(err, errlen, "%s: image (%" PRIu64 " bytes) ends before the data offset %" PRIu64,
				m->path, m->image_bytes, o->g.data_offset);
			return -EINVAL;
		}
		if (m->image_bytes - o->g.data_offset < smallest)
			smallest = m->image_bytes - o->g.data_offset;
	}
	for (int i = 0; i < nc; i++)
		if (!c[i].used)
			add_extra(a, &c[i], "not named in --order; not used");
	if (o->g.member_bytes)
		a->member_bytes = o->g.member_bytes;
	else if (smallest != UINT64_MAX)
		a->member_bytes = smallest;
	else {
		fmt_err(err, errlen, "no member images given");
		return -EINVAL;
	}
	return finish_geometry(a, o->g.force, NULL, err, errlen);
}

static const char *role_desc(int role, char *buf, size_t len)
{
	switch (role) {
	case META_ROLE_SPARE: return "spare";
	case META_ROLE_FAULTY: return "faulty";
	case META_ROLE_JOURNAL: return "journal";
	case META_ROLE_MISSING: return "removed";
	default: snprintf(buf, len, "role %d", role); return buf;
	}
}

static bool same_geometry(const struct member_meta *x, const struct member_meta *y)
{
	return x->level == y->level && x->layout == y->layout && x->chunk_bytes == y->chunk_bytes &&
	       x->raid_disks == y->raid_disks && x->component_sectors == y->component_sectors;
}

/* The geometry before a (growing) reshape, over the members a already
 * holds: a->prev.  who: the freshest image, for messages. */
/* Bytes of a member's data area its superblock vouches for: all, or up to
 * its recovery offset while it is being rebuilt. */
static uint64_t meta_readable_bytes(const struct member_meta *mm)
{
	if ((mm->feature_map & 2) && mm->recovery_offset != UINT64_MAX)
		return mm->recovery_offset * 512;
	return UINT64_MAX;
}

/* A member that leaves in a shrinking reshape (role >= the new count):
 * the freshest image claiming the role, NULL if none.  Its source moves to
 * the caller. */
static struct candidate *leaving_member(struct candidate *c, int nc, const struct member_meta *fresh, int role)
{
	struct candidate *best = NULL;

	for (int i = 0; i < nc; i++)
		if (c[i].src && c[i].has_meta && c[i].meta.role == role && same_geometry(&c[i].meta, fresh) &&
		    (!best || c[i].meta.events > best->meta.events))
			best = &c[i];
	return best;
}

/* The members of the geometry before a reshape, p: those both geometries
 * have are shared with a (a owns their sources), those leaving in a
 * shrinking reshape are taken from the candidates (p owns them).  0 or
 * -ENOMEM. */
static int prev_members(struct array *p, const struct array *a, const struct member_meta *fresh,
			struct candidate *c, int nc, bool force)
{
	int old_n = p->geom.raid_disks;

	for (int r = 0; r < old_n; r++) {
		struct array_member *m = &p->members[r];

		if (r >= a->geom.raid_disks) {
			/* leaving the array (shrinking): prev owns its source */
			struct candidate *l = leaving_member(c, nc, fresh, r);
			bool stale = l && l->meta.events + 1 < fresh->events && !force;

			m->role = r;
			if (!l || stale) {
				m->state = l ? MEMBER_STALE : MEMBER_MISSING;
				snprintf(m->note, sizeof(m->note), "%s", l ? "stale: left out" : "no image for this role");
				continue;
			}
			m->path = strdup(l->path);
			if (!m->path)
				return -ENOMEM;
			m->src = l->src;
			l->src = NULL;
			l->used = true;
			m->state = MEMBER_OK;
			m->note[0] = '\0';
			m->has_meta = true;
			m->meta = l->meta;
			m->image_bytes = m->src->size;
			m->data_offset = l->meta.data_offset * 512;
			m->readable_bytes = UINT64_MAX;
			continue;
		}
		const struct array_member *n = &a->members[r];

		*m = (struct array_member){ .role = r, .state = n->state, .src = n->src, .path = n->path,
					    .image_bytes = n->image_bytes, .has_meta = n->has_meta,
					    .meta = n->meta };
		memcpy(m->note, n->note, sizeof(m->note));
		if (!n->has_meta)
			continue;
		/* the old layout starts at the data offset itself */
		m->data_offset = n->meta.data_offset * 512;
		m->readable_bytes = meta_readable_bytes(&n->meta);
	}
	return 0;
}

/* Where the reshape is (pos, sectors) and what follows from it: the array
 * served, members added by it.  0 or -EINVAL with the message. */
static int reshape_position(struct array *a, const struct array *p, const struct member_meta *fresh,
			    uint64_t pos, const struct assemble_opts *o, const char *who, char *err, size_t errlen)
{
	int old_n = p->geom.raid_disks;
	uint32_t big_chunk = fresh->chunk_bytes > fresh->new_chunk_bytes ? fresh->chunk_bytes
									 : fresh->new_chunk_bytes;
	uint64_t stripe_sectors;

	/* md refuses a position off a stripe of the larger chunk */
	stripe_sectors = (uint64_t)big_chunk / 512 * (uint64_t)a->k;
	if (pos != 0 && (stripe_sectors == 0 || pos % stripe_sectors)) {
		fmt_err(err, errlen, "%s%s: reshape position %" PRIu64 " sectors is not on a stripe boundary of "
			"the new geometry (%" PRIu64 " sectors)", o->g.have_reshape_bytes ? "--reshape-position, " : "",
			who, pos, stripe_sectors);
		return -EINVAL;
	}
	if (pos > UINT64_MAX / 512) {
		fmt_err(err, errlen, "%s: reshape position %" PRIu64 " sectors is impossibly large", who, pos);
		return -EINVAL;
	}
	a->reshape_bytes = pos * 512;
	/* like the kernel (super_1_validate): backwards when shrinking, or with
	 * the flag when the member count stays */
	a->reshape_backwards = fresh->delta_disks < 0 || (fresh->delta_disks == 0 && (fresh->feature_map & 32));
	/* 0.90 metadata cannot say how far a member added for a growing
	 * reshape is in sync: md (raid5_run) takes it as in sync up to the
	 * reshape position, i.e. over the part read in the new geometry */
	for (int r = 0; !a->reshape_backwards && r < a->geom.raid_disks; r++) {
		struct array_member *m = &a->members[r];

		if (m->state == MEMBER_REBUILDING && m->has_meta && m->meta.fmt &&
		    (m->meta.fmt->flags & FORMAT_NO_RECOVERY_OFFSET) &&
		    m->readable_bytes < a->reshape_bytes / (uint64_t)a->k) {
			m->readable_bytes = a->reshape_bytes / (uint64_t)a->k;
			snprintf(m->note, sizeof(m->note), "added by the reshape: in sync up to its position "
				 "(%" PRIu64 " bytes)", m->readable_bytes);
		}
	}
	if (p->array_bytes < a->array_bytes)
		a->array_bytes = p->array_bytes;
	if (a->reshape_bytes > a->array_bytes)
		a->reshape_bytes = a->array_bytes;
	if (o->g.have_reshape_bytes)
		warn_add(a, "reshape position %" PRIu64 " bytes given with --reshape-position, not the "
			 "superblocks' %" PRIu64, a->reshape_bytes, fresh->reshape_position * 512);
	warn_add(a, "the array is in the middle of a reshape (%d -> %d members, %" PRIu64 " of %" PRIu64
		 " bytes done%s): each part is read in its own geometry", old_n, a->geom.raid_disks,
		 a->reshape_backwards ? a->array_bytes - a->reshape_bytes : a->reshape_bytes, a->array_bytes,
		 a->reshape_backwards ? ", backwards" : "");
	return 0;
}

static int assemble_reshape_prev(struct array *a, const struct member_meta *fresh, struct candidate *c, int nc,
				 const struct assemble_opts *o, const char *who, char *err, size_t errlen)
{
	int old_n = fresh->raid_disks - fresh->delta_disks;
	bool force = o->g.force;
	uint64_t pos = o->g.have_reshape_bytes ? o->g.reshape_bytes / 512 : fresh->reshape_position;
	struct array *p;
	int ret;

	if (old_n < 1 || old_n > LAYOUT_MAX_DISKS) {
		fmt_err(err, errlen, "%s: reshape from %d members (delta %d) is impossible", who, old_n,
			fresh->delta_disks);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	a->prev = p;            /* array_free(a) frees it from here on */
	p->stats_of = a;
	p->has_meta = true;
	memcpy(p->meta_format, a->meta_format, sizeof(p->meta_format));
	memcpy(p->uuid, a->uuid, 16);
	memcpy(p->name, a->name, sizeof(p->name));
	p->events = a->events;
	p->resync_offset = a->resync_offset;
	p->geom.level = fresh->level;
	p->geom.layout = fresh->layout;
	p->geom.raid_disks = old_n;
	p->geom.chunk_bytes = fresh->chunk_bytes;
	p->member_bytes = fresh->component_sectors * 512;
	ret = alloc_members(p, old_n);
	if (ret)
		return ret;
	ret = prev_members(p, a, fresh, c, nc, force);
	if (ret)
		return ret;
	ret = finish_geometry(p, force, who, err, errlen);
	if (ret)
		return ret;
	/* what the old geometry found that the new one did not say */
	for (char *line = p->warnings, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			break;
		*nl = '\0';
		if (!strstr(a->warnings, line))
			warn_add(a, "%s", line);
		*nl = '\n';
	}
	return reshape_position(a, p, fresh, pos, o, who, err, errlen);
}

/* "disk0.img" or "disk0.img partition 3", for messages. */
static const char *cand_name(const struct candidate *c, char *buf, size_t len)
{
	if (!c->partition)
		return c->path;
	snprintf(buf, len, "%s partition %d", c->path, c->partition);
	return buf;
}

/* The freshest of the candidates (highest events), all of one array.  Its
 * index in *ifresh; 0 or -EINVAL with the message. */
static int find_freshest(const struct candidate *c, int nc, int *ifresh, char *err, size_t errlen)
{
	const struct member_meta *fresh = NULL;

	for (int i = 0; i < nc; i++) {
		if (!c[i].has_meta) {
			fmt_err(err, errlen, "%s: no RAID metadata found (for images without metadata give the "
				"geometry: --level, --chunk, --layout, --order)", c[i].path);
			return -EINVAL;
		}
		if (!fresh || meta_fresher(&c[i].meta, fresh)) {
			fresh = &c[i].meta;
			*ifresh = i;
		}
	}
	if (!fresh) {
		fmt_err(err, errlen, "no member images given");
		return -EINVAL;
	}
	return 0;
}

/* The array as the freshest superblock describes it (who: its image):
 * identity, geometry (after a reshape), sizes, the member slots.  0 or
 * -errno with the message. */
static int adopt_geometry(struct array *a, const struct member_meta *fresh, const char *who, char *err,
			  size_t errlen)
{
	int ret;

	if (fresh->unsupported[0]) {
		fmt_err(err, errlen, "%s: %s volume '%s' cannot be read: %s", who, fresh->format, fresh->set_name,
			fresh->unsupported);
		return -ENOTSUP;
	}
	if (fresh->reshape_active && fresh->new_level != fresh->level) {
		fmt_err(err, errlen, "%s: the array is in the middle of a reshape from RAID%d to RAID%d; "
			"reading a reshape that changes the level is not supported", who,
			fresh->level, fresh->new_level);
		return -ENOTSUP;
	}
	if (fresh->level != 4 && fresh->level != 5 && fresh->level != 6) {
		fmt_err(err, errlen, "%s: RAID level %d is not supported (raidimg reads RAID4, RAID5 and RAID6)",
			who, fresh->level);
		return -ENOTSUP;
	}
	a->has_meta = true;
	memcpy(a->meta_format, fresh->format, sizeof(a->meta_format));
	memcpy(a->uuid, fresh->set_uuid, 16);
	memcpy(a->name, fresh->set_name, sizeof(a->name));
	a->events = fresh->events;
	a->in_container = fresh->in_container;
	memcpy(a->container_uuid, fresh->container_uuid, 16);
	a->volume_index = fresh->volume_index;
	a->container_volumes = fresh->container_volumes;
	/* during a reshape this is the geometry after it; prev (below) the one before */
	a->geom.level = fresh->level;
	a->geom.layout = fresh->new_layout;
	a->geom.raid_disks = fresh->raid_disks;
	a->geom.chunk_bytes = fresh->new_chunk_bytes;
	if (fresh->raid_disks < 1 || fresh->raid_disks > LAYOUT_MAX_DISKS) {
		fmt_err(err, errlen, "%s: superblock says %d members", who, fresh->raid_disks);
		return -EINVAL;
	}
	ret = alloc_members(a, fresh->raid_disks);
	if (ret)
		return ret;
	if (fresh->component_sectors > (uint64_t)INT64_MAX / 512) {
		fmt_err(err, errlen, "%s: superblock says each member holds %" PRIu64 " sectors: impossibly large",
			who, fresh->component_sectors);
		return -EINVAL;
	}
	a->member_bytes = fresh->component_sectors * 512;
	a->resync_offset = fresh->resync_offset == UINT64_MAX ? UINT64_MAX : fresh->resync_offset * 512;
	return 0;
}

/* Is the member (placed in mm->role) stale?  Events (a container's
 * generation) more than one behind the freshest, as md and mdadm's
 * assembly have it.  A container's freshest copy of the metadata also
 * describes every member: one it does not list in this role (nor as
 * faulty) is not a member there any more (*why says so). */
static bool member_stale(const struct member_meta *mm, const struct member_meta *fresh, int fresh_view,
			 const char **why)
{
	*why = "stale";
	if (mm->events + 1 < fresh->events)
		return true;
	if (!(mm->fmt && (mm->fmt->flags & FORMAT_CONTAINER)) || fresh_view == mm->role ||
	    fresh_view == META_ROLE_FAULTY)
		return false;
	*why = "not in this role in the freshest metadata";
	return true;
}

/* Put candidate c in its role (or among the extras), as mdadm would:
 * stale or faulty-marked members are kept for reporting but not used
 * unless forced, two images of one role: the fresher wins.  0 or -errno
 * with the message. */
static int place_member(struct array *a, struct candidate *ci, const struct member_meta *fresh, const char *who,
			const struct assemble_opts *o, char *err, size_t errlen)
{
	struct member_meta *mm = &ci->meta;
	struct array_member *m;
	int role = mm->role;
	int fresh_view = META_ROLE_MISSING;
	const char *why;
	bool stale;
	char rb[32], cn[PATH_MAX + 32];

	if (mm->dev_number >= 0 && mm->dev_number < fresh->max_dev && mm->dev_number < META_MAX_DEVS)
		fresh_view = fresh->dev_roles[mm->dev_number];
	if (role < 0) {
		add_extra(a, ci, "%s (not an active member)", role_desc(role, rb, sizeof(rb)));
		return 0;
	}
	if (role >= fresh->raid_disks && fresh->reshape_active && fresh->delta_disks < 0 &&
	    role < fresh->raid_disks - fresh->delta_disks && same_geometry(mm, fresh))
		return 0;       /* leaving in a shrinking reshape: only the old geometry has it */
	if (role >= fresh->raid_disks) {
		add_extra(a, ci, "claims role %d but the array has %d members", role, fresh->raid_disks);
		return 0;
	}
	stale = member_stale(mm, fresh, fresh_view, &why);
	if (!same_geometry(mm, fresh) && !stale) {
		fmt_err(err, errlen, "%s and %s disagree on the geometry (level/layout/chunk/members/size) "
			"at the same event count", cand_name(ci, cn, sizeof(cn)), who);
		return -EINVAL;
	}
	m = &a->members[role];
	if (m->state != MEMBER_MISSING && m->src) {
		/* Two images claim one role: the fresher wins, a tie is an error. */
		if (m->meta.events == mm->events) {
			fmt_err(err, errlen, "%s%s%s and %s both claim role %d (events %" PRIu64 ")", m->path,
				m->partition ? " " : "", m->where, cand_name(ci, cn, sizeof(cn)), role, mm->events);
			return -EINVAL;
		}
		if (m->meta.events > mm->events) {
			add_extra(a, ci, "older copy of role %d (events %" PRIu64 " < %" PRIu64 "); not used", role,
				  mm->events, m->meta.events);
			return 0;
		}
		struct candidate old = { .path = m->path, .partition = m->partition };

		snprintf(old.where, sizeof(old.where), "%s", m->where);
		add_extra(a, &old, "older copy of role %d (events %" PRIu64 " < %" PRIu64 "); not used", role,
			  m->meta.events, mm->events);
		source_close(m->src);
		m->src = NULL;
		free(m->path);
		m->path = NULL;
	}
	m->has_meta = true;
	m->meta = *mm;
	m->path = strdup(ci->path);
	if (!m->path)
		return -ENOMEM;
	member_from(m, ci);
	m->image_bytes = ci->src->size;
	if ((int64_t)mm->data_offset + mm->new_offset < 0) {
		fmt_err(err, errlen, "%s: the reshape's new data offset (%" PRIu64 " %+" PRId64
			" sectors) is before the start of the image", cand_name(ci, cn, sizeof(cn)), mm->data_offset,
			mm->new_offset);
		return -EINVAL;
	}
	/* new_offset is 0 unless a reshape moves the data */
	m->data_offset = (uint64_t)((int64_t)mm->data_offset + mm->new_offset) * 512;
	m->readable_bytes = meta_readable_bytes(mm);
	m->note[0] = '\0';

	/* The freshest member's view only condemns a member it records as
	 * faulty: a member that claims a role with a current event count
	 * while the others list its slot as spare is a replacement (such
	 * as one written by raidimg rebuild), as in the kernel, whose
	 * role comes from each member's own superblock. */
	if (stale || fresh_view == META_ROLE_FAULTY) {
		if (!stale)
			why = "marked faulty by the freshest member";
		if (!o->g.force) {
			m->state = stale ? MEMBER_STALE : MEMBER_FAULTY;
			snprintf(m->note, sizeof(m->note), "%s: events %" PRIu64 " vs %" PRIu64
				 " (%.100s); left out, --force to use it", why, mm->events, fresh->events,
				 who);
			/* keep the source open: examine shows it; reads never use it */
			m->src = ci->src;
			ci->src = NULL;
			ci->used = true;
			return 0;
		}
		warn_add(a, "%s: FORCED into the array although %s (events %" PRIu64 ", freshest %" PRIu64
			 "): its data may be out of date", cand_name(ci, cn, sizeof(cn)), why, mm->events,
			 fresh->events);
	}
	m->state = m->readable_bytes < a->member_bytes ? MEMBER_REBUILDING : MEMBER_OK;
	if (m->state == MEMBER_REBUILDING)
		snprintf(m->note, sizeof(m->note), "being rebuilt: valid below %" PRIu64 " bytes",
			 m->readable_bytes);
	m->src = ci->src;
	ci->src = NULL;
	ci->used = true;
	/* md never reads the sectors in its bad-block log again: neither do we */
	{
		size_t added = 0;
		int ret = probe_bblog(m->src, mm, &added, err, errlen);

		if (ret)
			return ret;
		if (added)
			note_add(a, "%s: role %d: %zu range(s) from md's bad-block log are untrusted: rebuilt from "
				 "parity", ci->path, role, added);
	}
	return 0;
}

static int assemble_md(struct array *a, struct candidate *c, int nc,
		       const struct assemble_opts *o, char *err, size_t errlen)
{
	const struct member_meta *fresh;
	int ifresh = -1, ret;
	char whobuf[PATH_MAX + 32];
	const char *who;

	ret = find_freshest(c, nc, &ifresh, err, errlen);
	if (ret)
		return ret;
	fresh = &c[ifresh].meta;
	who = cand_name(&c[ifresh], whobuf, sizeof(whobuf));
	ret = adopt_geometry(a, fresh, who, err, errlen);
	if (ret)
		return ret;
	if (fresh->array_sectors)
		a->array_cap_bytes = fresh->array_sectors * 512;
	for (int i = 0; i < nc; i++) {
		ret = place_member(a, &c[i], fresh, who, o, err, errlen);
		if (ret)
			return ret;
	}
	/* Stale/faulty members stay in members[] for reporting but are not readable. */
	for (int r = 0; r < a->geom.raid_disks; r++) {
		struct array_member *m = &a->members[r];
		if ((m->state == MEMBER_STALE || m->state == MEMBER_FAULTY) && m->src) {
			source_close(m->src);
			m->src = NULL;
		}
	}
	if (a->resync_offset != UINT64_MAX)
		warn_add(a, "the array was not clean (resync at %" PRIu64 " bytes into each member): parity "
			 "beyond there may be stale, so chunks rebuilt from it may be wrong", a->resync_offset);
	ret = finish_geometry(a, o->g.force, who, err, errlen);
	if (!ret && fresh->reshape_active)
		ret = assemble_reshape_prev(a, fresh, c, nc, o, who, err, errlen);
	else if (!ret && o->g.have_reshape_bytes) {
		fmt_err(err, errlen, "--reshape-position: %s: the array is not in the middle of a reshape", who);
		ret = -EINVAL;
	}
	return ret;
}

/* Images given that hold no member of the array read: said in extras. */
static void note_other_images(struct array *a, const struct cand_set *cs, int g)
{
	for (int img = 0; img < cs->nimages; img++) {
		char desc[200] = "";
		int first = -1;

		for (int i = 0; i < cs->n; i++) {
			if (cs->c[i].image != img)
				continue;
			if (cs->c[i].group == g) {
				first = -2;
				break;
			}
			if (first == -1)
				first = i;
		}
		if (first < 0)
			continue;
		cand_group_desc(cs, cs->c[first].group, desc, sizeof(desc));
		add_extra(a, &(struct candidate){ .path = cs->c[first].path }, "holds no member of this array "
			  "(it is in %s)", desc);
	}
}

/* Assemble the chosen group g of cs into a. */
static int assemble_group(struct array *a, struct cand_set *cs, int g, const struct assemble_opts *o, char *err,
			  size_t errlen)
{
	struct candidate *gc = calloc((size_t)cs->groups[g].n, sizeof(*gc));
	int n = 0, ret;

	if (!gc)
		return -ENOMEM;
	for (int i = 0; i < cs->n; i++) {
		if (cs->c[i].group != g)
			continue;
		gc[n] = cs->c[i];
		cs->c[i].src = NULL;    /* moved */
		n++;
	}
	ret = assemble_md(a, gc, n, o, err, errlen);
	for (int i = 0; i < n; i++)
		source_close(gc[i].src);
	free(gc);
	if (!ret)
		note_other_images(a, cs, g);
	return ret;
}

int array_assemble_sources(struct source **srcs, const char *const *names, int n, const struct assemble_opts *o,
			   struct array **out, char *err, size_t errlen)
{
	struct cand_set cs;
	struct array *a = calloc(1, sizeof(*a));
	char note[600], placed[600];
	int ret, g = -1;

	ret = cand_collect(srcs, names, n, o, false, &cs, err, errlen);
	if (!ret && !a)
		ret = -ENOMEM;
	if (ret)
		goto out;
	if (o->g.manual) {
		ret = assemble_manual(a, cs.c, cs.n, o, err, errlen);
	} else {
		ret = cand_choose(&cs, o, &g, note, sizeof(note), err, errlen);
		if (!ret)
			ret = cand_place(&cs, g, o, true, placed, sizeof(placed), err, errlen);
		if (!ret)
			ret = assemble_group(a, &cs, g, o, err, errlen);
		if (!ret && note[0])
			warn_add(a, "%s", note);
		if (!ret && placed[0])
			warn_add(a, "%s", placed);
	}
	if (!ret)
		array_volume_init(a);
out:
	cand_set_free(&cs);
	if (ret) {
		if (ret == -ENOMEM && err && !*err)
			fmt_err(err, errlen, "out of memory");
		array_free(a);
		return ret;
	}
	*out = a;
	return 0;
}

/* An image given that is a segment or piece of another one given (disk.000
 * and disk.001 both named: is it one split image, or two members?). */
static int check_pieces(struct source **srcs, const char *const *paths, int n, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++) {
		int nf;
		char *const *files = source_files(srcs[i], &nf);

		for (int f = 1; nf > 1 && f < nf; f++)
			for (int j = 0; j < n; j++)
				if (j != i && same_file(files[f], paths[j]))
					return fmt_fail(err, errlen, -EINVAL, "%s is a %s of the %s image %s, given too: "
							"give only %s (or, if they are separate members, rename them)",
							paths[j], strcmp(srcs[i]->ops->kind, "ewf") ? "piece" : "segment",
							srcs[i]->ops->kind, paths[i], paths[i]);
	}
	return 0;
}

static int note_cat(char **notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int note_cat(char **notes, const char *fmt, ...)
{
	size_t have = *notes ? strlen(*notes) : 0;
	char line[PATH_MAX * 2 + 256], *n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = realloc(*notes, have + strlen(line) + 2);
	if (!n)
		return -ENOMEM;
	sprintf(n + have, "%s\n", line);
	*notes = n;
	return 0;
}

/* The ddrescue mapfiles: those named with --map, else (unless --no-maps)
 * IMAGE.map or STEM.map beside each image, each said in *notes (ending
 * with what becomes of the blocks not rescued: fate). */
static int attach_maps(struct source **srcs, const struct geom_args *g, const char *fate, char **notes, char *err,
		       size_t errlen)
{
	bool used[LAYOUT_MAX_DISKS] = { false };

	for (int i = 0; i < g->npaths; i++) {
		const char *map = NULL, *path = g->paths[i];
		char *found = NULL, sz[32];
		bool given = false;
		int ret;

		for (int k = 0; k < g->nmaps; k++) {
			if (!same_file(g->maps[k].image, path))
				continue;
			if (map)
				return fmt_fail(err, errlen, -EINVAL, "--map: two mapfiles for %s (%s and %s)", path,
						map, g->maps[k].map);
			map = g->maps[k].map;
			used[k] = true;
			given = true;
		}
		if (!map && !g->no_maps) {
			ret = source_find_ddrescue_map(path, &found, err, errlen);
			if (ret && ret != -ENOENT)
				return ret;
			map = found;
		}
		if (!map)
			continue;
		ret = source_attach_ddrescue_map(srcs[i], map, err, errlen);
		if (!ret) {
			const struct untrusted_origin *u = &srcs[i]->untrusted->origins[srcs[i]->untrusted->norigins - 1];

			ret = note_cat(notes, "%s: ddrescue mapfile %s%s: %zu range(s), %s not rescued: %s%s", path, map,
				       given ? " (--map)" : "", u->r.n, fmt_size(u->r.bytes, sz, sizeof(sz)), fate,
				       given ? "" : " (--no-maps to ignore it)");
			if (ret)
				fmt_err(err, errlen, "out of memory");
		} else if (!given) {
			size_t l = strlen(err);

			snprintf(err + l, errlen > l ? errlen - l : 0, " (taken as the mapfile of %s because of its name; "
				 "--no-maps to read the image without it)", path);
		}
		free(found);
		if (ret)
			return ret;
	}
	for (int k = 0; k < g->nmaps; k++)
		if (!used[k])
			return fmt_fail(err, errlen, -EINVAL, "--map %s=%s: %s is not one of the images given",
					g->maps[k].image, g->maps[k].map, g->maps[k].image);
	return 0;
}

int array_open_images(const struct geom_args *g, int open_flags, const char *fate, struct source ***srcs,
		      char **notes, char *err, size_t errlen)
{
	const char *const *paths = g->paths;
	int npaths = g->npaths, ret = 0, opened = 0;

	*srcs = NULL;
	*notes = NULL;
	if (npaths > LAYOUT_MAX_DISKS * 2)
		return fmt_fail(err, errlen, -E2BIG, "too many images (%d)", npaths);
	for (int i = 0; i < npaths; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(paths[i], paths[j]))
				return fmt_fail(err, errlen, -EINVAL, "%s: given twice", paths[i]);
	*srcs = calloc((size_t)(npaths > 0 ? npaths : 1), sizeof(**srcs));
	if (!*srcs)
		return fmt_fail(err, errlen, -ENOMEM, "out of memory");
	for (; opened < npaths && !ret; opened++)
		ret = source_open(paths[opened], open_flags, &(*srcs)[opened], err, errlen);
	if (ret) {
		opened--;   /* the one that failed */
		goto fail;
	}
	ret = check_pieces(*srcs, paths, npaths, err, errlen);
	if (!ret)
		ret = attach_maps(*srcs, g, fate, notes, err, errlen);
	if (!ret)
		return 0;
fail:
	for (int i = 0; i < opened; i++)
		source_close((*srcs)[i]);
	free(*srcs);
	*srcs = NULL;
	free(*notes);
	*notes = NULL;
	return ret;
}

int array_assemble(const struct assemble_opts *o, struct array **out, char *err, size_t errlen)
{
	const char *const *paths = o->g.paths;
	int npaths = o->g.npaths;
	struct source **srcs = NULL;
	char *notes = NULL;
	int ret;

	if (npaths <= 0 && !(o->g.manual && o->g.norder))
		return fmt_fail(err, errlen, -EINVAL, "no member images given");
	ret = array_open_images(&o->g, o->open_flags, "rebuilt from parity", &srcs, &notes, err, errlen);
	if (ret)
		return ret;
	ret = array_assemble_sources(srcs, paths, npaths, o, out, err, errlen);
	if (!ret && notes) {
		size_t have = strlen((*out)->notes);

		snprintf((*out)->notes + have, sizeof((*out)->notes) - have, "%s", notes);
	}
	free(notes);
	free(srcs);
	return ret;
}

/* ---- what the images hold (examine) ---- */

void found_set_free(struct found_set *fs)
{
	for (int i = 0; fs->images && i < fs->nimages; i++) {
		free(fs->images[i].err);
		free(fs->images[i].note);
	}
	free(fs->images);
	free(fs->members);
	free(fs->arrays);
	memset(fs, 0, sizeof(*fs));
}

void found_array_desc(const struct member_meta *m, char *buf, size_t len)
{
	char uuid[40];

	meta_uuid_format(m->set_uuid, uuid);
	snprintf(buf, len, "raid%d, %s%s, uuid %s%s%s%s", m->level, m->fmt && m->fmt->family[0] == 'm' ? "md " : "",
		 m->format, uuid, m->set_name[0] ? ", '" : "", m->set_name, m->set_name[0] ? "'" : "");
}

int array_discover(const struct assemble_opts *o, struct found_set *fs)
{
	struct source **srcs = NULL;
	struct cand_set cs;
	char note[600];
	int ret;

	char **open_err;
	int n = o->g.npaths;

	memset(fs, 0, sizeof(*fs));
	memset(&cs, 0, sizeof(cs));
	fs->chosen = -1;
	srcs = calloc((size_t)(n > 0 ? n : 1), sizeof(*srcs));
	open_err = calloc((size_t)(n > 0 ? n : 1), sizeof(*open_err));
	if (!srcs || !open_err) {
		free(srcs);
		free(open_err);
		return -ENOMEM;
	}
	/* every image on its own: one that cannot be opened is said, not fatal */
	for (int i = 0; i < n; i++) {
		char e[ARRAY_ERR_MAX];

		if (source_open(o->g.paths[i], o->open_flags, &srcs[i], e, sizeof(e)))
			open_err[i] = strdup(e);
	}
	ret = cand_collect(srcs, o->g.paths, n, o, true, &cs, fs->choice_err, sizeof(fs->choice_err));
	free(srcs);
	for (int i = 0; i < n; i++) {
		if (!ret && open_err[i] && !cs.images[i].err) {
			cs.images[i].err = open_err[i];
			open_err[i] = NULL;
		}
		free(open_err[i]);
	}
	free(open_err);
	if (ret)
		goto out;
	/* the lists move over to fs */
	fs->nimages = cs.nimages;
	fs->images = cs.images;
	cs.images = NULL;
	cs.nimages = 0;
	fs->members = calloc((size_t)(cs.n > 0 ? cs.n : 1), sizeof(*fs->members));
	fs->arrays = calloc((size_t)(cs.ngroups > 0 ? cs.ngroups : 1), sizeof(*fs->arrays));
	if (!fs->members || !fs->arrays) {
		ret = -ENOMEM;
		goto out;
	}
	for (int g = 0; g < cs.ngroups; g++) {
		cand_place(&cs, g, o, false, NULL, 0, NULL, 0);
		fs->arrays[g].meta = cs.c[cs.groups[g].fresh].meta;
		fs->arrays[g].members = cs.groups[g].n;
		fs->arrays[g].supported = cs.groups[g].supported;
		snprintf(fs->arrays[g].why, sizeof(fs->arrays[g].why), "%s", cs.groups[g].why);
	}
	fs->narrays = cs.ngroups;
	for (int i = 0; i < cs.n; i++) {
		struct found_member *m;

		if (!cs.c[i].has_meta)
			continue;
		m = &fs->members[fs->nmembers++];
		m->image = cs.c[i].image;
		m->partition = cs.c[i].partition;
		snprintf(m->where, sizeof(m->where), "%s", cs.c[i].where);
		m->group = cs.c[i].group;
		m->meta = cs.c[i].meta;
		snprintf(m->ident, sizeof(m->ident), "%s", cs.c[i].ident);
	}
	if (o->g.manual)
		snprintf(fs->choice_err, sizeof(fs->choice_err), "a manual geometry");
	else if (cs.ngroups && !cand_choose(&cs, o, &fs->chosen, note, sizeof(note), fs->choice_err,
				       sizeof(fs->choice_err)))
		snprintf(fs->choice_err, sizeof(fs->choice_err), "%s", note);
	else if (!cs.ngroups)
		snprintf(fs->choice_err, sizeof(fs->choice_err), "no RAID metadata found in the images");
out:
	cand_set_free(&cs);
	return ret == -ENOMEM ? ret : 0;
}

void array_free(struct array *a)
{
	if (!a)
		return;
	array_free(a->prev);
	/* the geometry before a reshape shares the members both have (and owns
	 * only those that leave in a shrinking reshape) */
	for (int r = a->stats_of ? a->stats_of->geom.raid_disks : 0; a->members && r < a->geom.raid_disks; r++) {
		source_close(a->members[r].src);
		free(a->members[r].path);
	}
	free(a->members);
	for (int i = 0; i < a->nextra; i++)
		free(a->extra[i].path);
	free(a->extra);
	free(a);
}

char *array_member_path(const struct array_member *m)
{
	if (m->src && source_image(m->src)->path)
		return strdup(source_image(m->src)->path);
	return m->path ? abs_path(m->path) : NULL;
}

const char *member_state_name(enum member_state s)
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

const char *array_verdict(const struct array *a)
{
	return a->nmissing ? "degraded" : "complete";
}

