/* array.c - assemble an md RAID4/5/6 array from member images and read it.
 *
 * Assembly follows mdadm's rules (Assemble.c) and the kernel's
 * (super_1_validate): members are placed by the role in their own
 * superblock, the freshest member (highest events) is trusted for the
 * geometry and for who is faulty, and a member more than one event behind
 * it is stale.
 *
 * Reading: a request is cut into runs of stripes.  A run whose requested
 * data chunks are all readable is served straight into the caller's buffer
 * with one preadv per member for each contiguous stretch of data chunks
 * (no copy).  Other runs go through the rebuild path: every readable member
 * is read over the run into per-thread scratch, lost chunks are rebuilt from
 * P (and Q) once per stripe, and the requested bytes copied out.  A member
 * that fails to read (EIO, short image) is treated as lost for that run.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "array.h"
#include "parity.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* assembly                                                             */
/* ------------------------------------------------------------------ */

static void warn_add(struct array *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_add(struct array *a, const char *fmt, ...)
{
	size_t used = strlen(a->warnings);
	va_list ap;

	if (used + 2 >= sizeof(a->warnings))
		return;
	va_start(ap, fmt);
	vsnprintf(a->warnings + used, sizeof(a->warnings) - used - 1, fmt, ap);
	va_end(ap);
	used = strlen(a->warnings);
	a->warnings[used] = '\n';
	a->warnings[used + 1] = '\0';
}

/* One image given on the command line, while assembling. */
struct candidate {
	const char *path;
	struct source *src;
	bool has_meta;
	struct member_meta meta;
	bool used;
};

static int add_extra(struct array *a, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int add_extra(struct array *a, const char *path, const char *fmt, ...)
{
	struct array_extra *x;
	va_list ap;

	x = realloc(a->extra, (size_t)(a->nextra + 1) * sizeof(*x));
	if (!x)
		return -ENOMEM;
	a->extra = x;
	x = &a->extra[a->nextra++];
	x->path = strdup(path);
	va_start(ap, fmt);
	vsnprintf(x->note, sizeof(x->note), fmt, ap);
	va_end(ap);
	return x->path ? 0 : -ENOMEM;
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
	int n = o->geom.raid_disks;
	uint64_t smallest = UINT64_MAX;
	int ret;

	a->geom = o->geom;
	if (o->norder && o->norder != n) {
		fmt_err(err, errlen, "--order names %d members but the geometry has %d", o->norder, n);
		return -EINVAL;
	}
	if (!o->norder && nc != n) {
		fmt_err(err, errlen, "%d images given for %d members (use --order with 'missing' for absent ones)",
			nc, n);
		return -EINVAL;
	}
	ret = alloc_members(a, n);
	if (ret)
		return ret;
	for (int r = 0; r < n; r++) {
		int idx = o->norder ? o->order[r] : r;
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
		c[idx].used = true;
		m->state = MEMBER_OK;
		m->note[0] = '\0';
		m->src = c[idx].src;
		c[idx].src = NULL;
		m->path = strdup(c[idx].path);
		m->image_bytes = m->src->size;
		m->data_offset = o->data_offset;
		m->readable_bytes = UINT64_MAX;
		m->has_meta = c[idx].has_meta;
		if (m->has_meta)
			m->meta = c[idx].meta;
		if (!m->path)
			return -ENOMEM;
		if (m->image_bytes <= o->data_offset) {
			fmt_err(err, errlen, "%s: image (%" PRIu64 " bytes) ends before the data offset %" PRIu64,
				m->path, m->image_bytes, o->data_offset);
			return -EINVAL;
		}
		if (m->image_bytes - o->data_offset < smallest)
			smallest = m->image_bytes - o->data_offset;
	}
	for (int i = 0; i < nc; i++)
		if (!c[i].used)
			add_extra(a, c[i].path, "not named in --order; not used");
	if (o->member_bytes)
		a->member_bytes = o->member_bytes;
	else if (smallest != UINT64_MAX)
		a->member_bytes = smallest;
	else {
		fmt_err(err, errlen, "no member images given");
		return -EINVAL;
	}
	return finish_geometry(a, o->force, NULL, err, errlen);
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

static int assemble_reshape_prev(struct array *a, const struct member_meta *fresh, struct candidate *c, int nc,
				 const struct assemble_opts *o, const char *who, char *err, size_t errlen)
{
	int old_n = fresh->raid_disks - fresh->delta_disks;
	bool force = o->force;
	uint64_t pos = o->have_reshape_bytes ? o->reshape_bytes / 512 : fresh->reshape_position, stripe_sectors;
	uint32_t big_chunk = fresh->chunk_bytes > fresh->new_chunk_bytes ? fresh->chunk_bytes
									 : fresh->new_chunk_bytes;
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
	/* md refuses a position off a stripe of the larger chunk */
	stripe_sectors = (uint64_t)big_chunk / 512 * (uint64_t)a->k;
	if (pos != 0 && (stripe_sectors == 0 || pos % stripe_sectors)) {
		fmt_err(err, errlen, "%s%s: reshape position %" PRIu64 " sectors is not on a stripe boundary of "
			"the new geometry (%" PRIu64 " sectors)", o->have_reshape_bytes ? "--reshape-position, " : "",
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

		if (m->state == MEMBER_REBUILDING && m->has_meta && !strcmp(m->meta.format, "0.90") &&
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
	if (o->have_reshape_bytes)
		warn_add(a, "reshape position %" PRIu64 " bytes given with --reshape-position, not the "
			 "superblocks' %" PRIu64, a->reshape_bytes, fresh->reshape_position * 512);
	warn_add(a, "the array is in the middle of a reshape (%d -> %d members, %" PRIu64 " of %" PRIu64
		 " bytes done%s): each part is read in its own geometry", old_n, a->geom.raid_disks,
		 a->reshape_backwards ? a->array_bytes - a->reshape_bytes : a->reshape_bytes, a->array_bytes,
		 a->reshape_backwards ? ", backwards" : "");
	return 0;
}

static int assemble_md(struct array *a, struct candidate *c, int nc,
		       const struct assemble_opts *o, char *err, size_t errlen)
{
	const struct member_meta *fresh = NULL;
	int ifresh = -1;
	char rb[32];
	int ret;

	/* Every image must carry md metadata of one and the same array. */
	for (int i = 0; i < nc; i++) {
		if (!c[i].has_meta) {
			fmt_err(err, errlen, "%s: no md superblock found (for images without metadata give the "
				"geometry: --level, --chunk, --layout, --order)", c[i].path);
			return -EINVAL;
		}
		if (i && memcmp(c[i].meta.set_uuid, c[0].meta.set_uuid, 16)) {
			char u0[40], u1[40];
			meta_uuid_format(c[0].meta.set_uuid, u0);
			meta_uuid_format(c[i].meta.set_uuid, u1);
			fmt_err(err, errlen, "%s and %s belong to different arrays (uuid %s vs %s)",
				c[0].path, c[i].path, u0, u1);
			return -EINVAL;
		}
		if (!fresh || c[i].meta.events > fresh->events) {
			fresh = &c[i].meta;
			ifresh = i;
		}
	}
	if (!fresh) {
		fmt_err(err, errlen, "no member images given");
		return -EINVAL;
	}
	if (fresh->reshape_active && fresh->new_level != fresh->level) {
		fmt_err(err, errlen, "%s: the array is in the middle of a reshape from RAID%d to RAID%d; "
			"reading a reshape that changes the level is not supported", c[ifresh].path,
			fresh->level, fresh->new_level);
		return -ENOTSUP;
	}
	if (fresh->level != 4 && fresh->level != 5 && fresh->level != 6) {
		fmt_err(err, errlen, "%s: RAID level %d is not supported (raidimg reads RAID4, RAID5 and RAID6)",
			c[ifresh].path, fresh->level);
		return -ENOTSUP;
	}
	a->has_meta = true;
	memcpy(a->meta_format, fresh->format, sizeof(a->meta_format));
	memcpy(a->uuid, fresh->set_uuid, 16);
	memcpy(a->name, fresh->set_name, sizeof(a->name));
	a->events = fresh->events;
	/* during a reshape this is the geometry after it; prev (below) the one before */
	a->geom.level = fresh->level;
	a->geom.layout = fresh->new_layout;
	a->geom.raid_disks = fresh->raid_disks;
	a->geom.chunk_bytes = fresh->new_chunk_bytes;
	if (fresh->raid_disks < 1 || fresh->raid_disks > LAYOUT_MAX_DISKS) {
		fmt_err(err, errlen, "%s: superblock says %d members", c[ifresh].path, fresh->raid_disks);
		return -EINVAL;
	}
	ret = alloc_members(a, fresh->raid_disks);
	if (ret)
		return ret;
	if (fresh->component_sectors > (uint64_t)INT64_MAX / 512) {
		fmt_err(err, errlen, "%s: superblock says each member holds %" PRIu64 " sectors: impossibly large",
			c[ifresh].path, fresh->component_sectors);
		return -EINVAL;
	}
	a->member_bytes = fresh->component_sectors * 512;
	a->resync_offset = fresh->resync_offset == UINT64_MAX ? UINT64_MAX : fresh->resync_offset * 512;

	for (int i = 0; i < nc; i++) {
		struct member_meta *mm = &c[i].meta;
		struct array_member *m;
		int role = mm->role;
		bool stale = mm->events + 1 < fresh->events;
		int fresh_view = META_ROLE_MISSING;

		if (mm->dev_number >= 0 && mm->dev_number < fresh->max_dev && mm->dev_number < META_MAX_DEVS)
			fresh_view = fresh->dev_roles[mm->dev_number];
		if (role < 0) {
			add_extra(a, c[i].path, "%s (not an active member)", role_desc(role, rb, sizeof(rb)));
			continue;
		}
		if (role >= fresh->raid_disks && fresh->reshape_active && fresh->delta_disks < 0 &&
		    role < fresh->raid_disks - fresh->delta_disks && same_geometry(mm, fresh))
			continue;       /* leaving in a shrinking reshape: only the old geometry has it */
		if (role >= fresh->raid_disks) {
			add_extra(a, c[i].path, "claims role %d but the array has %d members", role,
				  fresh->raid_disks);
			continue;
		}
		if (!same_geometry(mm, fresh) && !stale) {
			fmt_err(err, errlen, "%s and %s disagree on the geometry (level/layout/chunk/members/size) "
				"at the same event count", c[i].path, c[ifresh].path);
			return -EINVAL;
		}
		m = &a->members[role];
		if (m->state != MEMBER_MISSING && m->src) {
			/* Two images claim one role: the fresher wins, a tie is an error. */
			if (m->meta.events == mm->events) {
				fmt_err(err, errlen, "%s and %s both claim role %d (events %" PRIu64 ")",
					m->path, c[i].path, role, mm->events);
				return -EINVAL;
			}
			if (m->meta.events > mm->events) {
				add_extra(a, c[i].path, "older copy of role %d (events %" PRIu64 " < %" PRIu64
					  "); not used", role, mm->events, m->meta.events);
				continue;
			}
			add_extra(a, m->path, "older copy of role %d (events %" PRIu64 " < %" PRIu64 "); not used",
				  role, m->meta.events, mm->events);
			source_close(m->src);
			m->src = NULL;
			free(m->path);
			m->path = NULL;
		}
		m->has_meta = true;
		m->meta = *mm;
		m->path = strdup(c[i].path);
		if (!m->path)
			return -ENOMEM;
		m->image_bytes = c[i].src->size;
		if ((int64_t)mm->data_offset + mm->new_offset < 0) {
			fmt_err(err, errlen, "%s: the reshape's new data offset (%" PRIu64 " %+" PRId64
				" sectors) is before the start of the image", c[i].path, mm->data_offset,
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
			const char *why = stale ? "stale" : "marked faulty by the freshest member";
			if (!o->force) {
				m->state = stale ? MEMBER_STALE : MEMBER_FAULTY;
				snprintf(m->note, sizeof(m->note), "%s: events %" PRIu64 " vs %" PRIu64
					 " (%s); left out, --force to use it", why, mm->events, fresh->events,
					 c[ifresh].path);
				/* keep the source open: examine shows it; reads never use it */
				m->src = c[i].src;
				c[i].src = NULL;
				c[i].used = true;
				continue;
			}
			warn_add(a, "%s: FORCED into the array although %s (events %" PRIu64 ", freshest %" PRIu64
				 "): its data may be out of date", c[i].path, why, mm->events, fresh->events);
		}
		m->state = m->readable_bytes < a->member_bytes ? MEMBER_REBUILDING : MEMBER_OK;
		if (m->state == MEMBER_REBUILDING)
			snprintf(m->note, sizeof(m->note), "being rebuilt: valid below %" PRIu64 " bytes",
				 m->readable_bytes);
		m->src = c[i].src;
		c[i].src = NULL;
		c[i].used = true;
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
	ret = finish_geometry(a, o->force, c[ifresh].path, err, errlen);
	if (!ret && fresh->reshape_active)
		ret = assemble_reshape_prev(a, fresh, c, nc, o, c[ifresh].path, err, errlen);
	else if (!ret && o->have_reshape_bytes) {
		fmt_err(err, errlen, "--reshape-position: %s: the array is not in the middle of a reshape",
			c[ifresh].path);
		ret = -EINVAL;
	}
	return ret;
}

int array_assemble(const char *const *paths, int npaths, const struct assemble_opts *o,
		   struct array **out, char *err, size_t errlen)
{
	struct candidate *c = NULL;
	struct array *a = NULL;
	int ret = 0;

	if (npaths <= 0 && !(o->manual && o->norder)) {
		fmt_err(err, errlen, "no member images given");
		return -EINVAL;
	}
	if (npaths > LAYOUT_MAX_DISKS * 2) {
		fmt_err(err, errlen, "too many images (%d)", npaths);
		return -E2BIG;
	}
	c = calloc((size_t)(npaths ? npaths : 1), sizeof(*c));
	a = calloc(1, sizeof(*a));
	if (!c || !a) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < npaths; i++) {
		char perr[256];
		c[i].path = paths[i];
		for (int j = 0; j < i; j++) {
			if (!strcmp(paths[i], paths[j])) {
				fmt_err(err, errlen, "%s: given twice", paths[i]);
				ret = -EINVAL;
				goto out;
			}
		}
		ret = source_open(paths[i], o->open_flags, &c[i].src, err, errlen);
		if (ret)
			goto out;
		ret = metadata_probe(c[i].src, &c[i].meta, perr, sizeof(perr));
		if (ret == 0) {
			c[i].has_meta = true;
		} else if (ret == -ENOENT) {
			c[i].has_meta = false;
		} else if (!o->manual) {
			fmt_err(err, errlen, "%s: %s", paths[i], perr);
			goto out;
		}
		ret = 0;
	}
	if (o->manual)
		ret = assemble_manual(a, c, npaths, o, err, errlen);
	else
		ret = assemble_md(a, c, npaths, o, err, errlen);
out:
	for (int i = 0; c && i < npaths; i++)
		source_close(c[i].src);
	free(c);
	if (ret) {
		if (ret == -ENOMEM && err && !*err)
			fmt_err(err, errlen, "out of memory");
		array_free(a);
		return ret;
	}
	*out = a;
	return 0;
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

const char *array_verdict(const struct array *a)
{
	return a->nmissing ? "degraded" : "complete";
}

/* ------------------------------------------------------------------ */
/* reading                                                              */
/* ------------------------------------------------------------------ */

/* Can member `disk` serve the chunk of stripe `s`?  `lost` (may be NULL)
 * marks members that failed during this request. */
static bool chunk_readable(const struct array *a, int disk, uint64_t s, const bool *lost)
{
	const struct array_member *m = &a->members[disk];

	if ((lost && lost[disk]) || !m->src)
		return false;
	if (m->state != MEMBER_OK && m->state != MEMBER_REBUILDING)
		return false;
	return (s + 1) * a->geom.chunk_bytes <= m->readable_bytes;
}

bool array_chunk_direct(const struct array *a, uint64_t stripe, int disk)
{
	return disk >= 0 && disk < a->geom.raid_disks && stripe < a->stripes &&
	       chunk_readable(a, disk, stripe, NULL);
}

/* The part of stripe s covered by [off, end): data indices d0..d1 and the
 * byte range [lo, hi) inside the first and last chunk. */
struct stripe_span {
	int d0, d1;
	uint32_t lo, hi;        /* lo: offset in chunk d0; hi: end in chunk d1 */
};

static void stripe_span(const struct array *a, uint64_t s, uint64_t off, uint64_t end,
			struct stripe_span *sp)
{
	uint64_t cb = a->geom.chunk_bytes;
	uint64_t sbeg = s * cb * (uint64_t)a->k;
	uint64_t a0 = off > sbeg ? off - sbeg : 0;
	uint64_t a1 = end - sbeg < cb * (uint64_t)a->k ? end - sbeg : cb * (uint64_t)a->k;

	sp->d0 = (int)(a0 / cb);
	sp->lo = (uint32_t)(a0 % cb);
	sp->d1 = (int)((a1 - 1) / cb);
	sp->hi = (uint32_t)((a1 - 1) % cb + 1);
}

static bool stripe_needs_rebuild(const struct array *a, uint64_t s, const struct stripe_map *map,
				 const struct stripe_span *sp, const bool *lost)
{
	for (int d = sp->d0; d <= sp->d1; d++)
		if (!chunk_readable(a, map->data_disk[d], s, lost))
			return true;
	return false;
}

/* Per-member gather list for the direct path. */
struct member_io {
	uint64_t off;           /* image offset of the first byte */
	uint64_t len;
	int niov;
	struct iovec iov[256];
};

/* Parity chunks that sit between data chunks of one member are read into
 * a sink when chunks are small, so that the member sees one large request
 * instead of many small ones (nobody reads the sink).  One per thread:
 * sources that copy (zstd) must not write one buffer from several threads. */
#define SINK_BYTES (1u << 20)
#define SINK_MAX_CHUNK (256u << 10)
static pthread_key_t sink_key;
static pthread_once_t sink_once = PTHREAD_ONCE_INIT;

static void sink_key_init(void)
{
	pthread_key_create(&sink_key, free);
}

/* This thread's sink (SINK_BYTES, owned by the thread), or NULL if it
 * cannot be had: then parity chunks are simply not bridged. */
static uint8_t *sink_get(void)
{
	uint8_t *p;

	pthread_once(&sink_once, sink_key_init);
	p = pthread_getspecific(sink_key);
	if (!p) {
		p = xaligned_alloc(SINK_BYTES);
		if (p && pthread_setspecific(sink_key, p)) {
			free(p);
			p = NULL;
		}
	}
	return p;
}

/* Where reads are counted: the array's own counters, or for the geometry
 * before a reshape (stats_of) those of the array it belongs to. */
static struct array *count_array(struct array *a)
{
	return a->stats_of ? a->stats_of : a;
}

static struct array_member *count_member(struct array *a, int disk)
{
	struct array *t = a->stats_of;

	return t && disk < t->geom.raid_disks ? &t->members[disk] : &a->members[disk];
}

static int member_io_flush(struct array *a, int disk, struct member_io *io)
{
	struct array_member *m = &a->members[disk], *cm = count_member(a, disk);
	int ret;

	if (!io->niov)
		return 0;
	ret = source_preadv(m->src, io->iov, io->niov, io->off);
	atomic_fetch_add(&cm->reads, 1);
	atomic_fetch_add(&count_array(a)->member_requests, 1);
	atomic_fetch_add(&count_array(a)->member_request_bytes, io->len);
	if (ret == 0)
		atomic_fetch_add(&cm->read_bytes, io->len);
	io->niov = 0;
	io->len = 0;
	return ret;
}

/* Direct path for stripes [s0, s1]: every requested data chunk is readable.
 * Returns 0, or -errno with *failed_disk set to the member that failed. */
static int read_direct(struct array *a, uint8_t *buf, uint64_t off, uint64_t end,
		       uint64_t s0, uint64_t s1, int *failed_disk)
{
	int n = a->geom.raid_disks;
	uint64_t cb = a->geom.chunk_bytes;
	struct member_io *io;
	struct stripe_map map;
	uint8_t *sink = cb <= SINK_MAX_CHUNK ? sink_get() : NULL;
	int ret = 0;

	io = calloc((size_t)n, sizeof(*io));
	if (!io)
		return -ENOMEM;
	for (uint64_t s = s0; s <= s1; s++) {
		struct stripe_span sp;

		layout_map_stripe(&a->geom, s, &map);
		stripe_span(a, s, off, end, &sp);
		for (int d = sp.d0; d <= sp.d1; d++) {
			int disk = map.data_disk[d];
			struct member_io *mi = &io[disk];
			uint32_t clo = d == sp.d0 ? sp.lo : 0;
			uint32_t chi = d == sp.d1 ? sp.hi : (uint32_t)cb;
			uint64_t moff = a->members[disk].data_offset + s * cb + clo;
			uint64_t aoff = (s * (uint64_t)a->k + (uint64_t)d) * cb + clo;

			if (sink && mi->niov && mi->off + mi->len < moff &&
			    moff - (mi->off + mi->len) <= 2 * cb && mi->niov + 1 < (int)ARRAY_LEN(mi->iov)) {
				/* bridge the P/Q chunk(s) in between */
				mi->iov[mi->niov].iov_base = sink;
				mi->iov[mi->niov].iov_len = moff - (mi->off + mi->len);
				mi->len += mi->iov[mi->niov].iov_len;
				mi->niov++;
			}
			if (mi->niov && (mi->off + mi->len != moff || mi->niov == (int)ARRAY_LEN(mi->iov))) {
				ret = member_io_flush(a, disk, mi);
				if (ret) {
					*failed_disk = disk;
					goto out;
				}
			}
			if (!mi->niov)
				mi->off = moff;
			mi->iov[mi->niov].iov_base = buf + (aoff - off);
			mi->iov[mi->niov].iov_len = chi - clo;
			mi->niov++;
			mi->len += chi - clo;
		}
	}
	for (int disk = 0; disk < n; disk++) {
		ret = member_io_flush(a, disk, &io[disk]);
		if (ret) {
			*failed_disk = disk;
			goto out;
		}
	}
out:
	free(io);
	return ret;
}

/* Per-thread scratch for the rebuild path: n member windows + parity scratch. */
struct scratch {
	size_t size;
	uint8_t *mem;
};
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
	struct scratch *sc = p;

	if (sc) {
		free(sc->mem);
		free(sc);
	}
}

static void scratch_key_init(void)
{
	pthread_key_create(&scratch_key, scratch_free);
}

static uint8_t *scratch_get(size_t size)
{
	struct scratch *sc;

	pthread_once(&scratch_once, scratch_key_init);
	sc = pthread_getspecific(scratch_key);
	if (!sc) {
		sc = calloc(1, sizeof(*sc));
		if (!sc)
			return NULL;
		pthread_setspecific(scratch_key, sc);
	}
	if (sc->size < size) {
		free(sc->mem);
		sc->mem = xaligned_alloc(size);
		sc->size = sc->mem ? size : 0;
	}
	return sc->mem;
}

/* Bytes of one member read in one go on the rebuild path ... */
#define REBUILD_WINDOW (4u << 20)
/* ... unless members x window would exceed this (the per-thread scratch). */
#define REBUILD_SCRATCH (32u << 20)
/* A member read that fails is retried in pieces of this size to find which
 * bytes are really lost (md's STRIPE_SIZE): two members failing in
 * different blocks of one stripe are still covered by RAID5's parity. */
#define FAIL_BLOCK 4096u

/* One piece of rebuild work: stripes s0..s1 (rows), and of every member's
 * chunk in them the columns [c0, c1) (512-byte aligned). */
struct piece {
	uint64_t s0, s1;
	uint32_t c0, c1;
	const struct array_observer *obs;    /* NULL: nobody asked */
};

/* Scratch of one piece, carved from the per-thread buffer. */
struct piece_mem {
	uint32_t w;                          /* c1 - c0 */
	uint64_t ns;                         /* rows */
	uint32_t nb;                         /* FAIL_BLOCKs per row */
	uint8_t *win[LAYOUT_MAX_DISKS];      /* ns rows of w bytes per disk */
	uint64_t rows[LAYOUT_MAX_DISKS];     /* rows read from the disk (a prefix) */
	uint8_t *bad;                        /* [disk][row][block]: read failed */
	uint8_t *pscratch;                   /* 2 * w, for parity_recover */
};

static uint8_t *bad_at(const struct piece_mem *pm, int disk, uint64_t row)
{
	return pm->bad + ((size_t)disk * pm->ns + row) * pm->nb;
}

/* Is block blk of disk's chunk in this row served? */
static bool block_ok(const struct piece_mem *pm, int disk, uint64_t row, uint32_t blk)
{
	return row < pm->rows[disk] && !bad_at(pm, disk, row)[blk];
}

static bool row_has_bad(const struct piece_mem *pm, int disk, uint64_t row)
{
	const uint8_t *b = bad_at(pm, disk, row);

	if (row >= pm->rows[disk])
		return false;
	for (uint32_t i = 0; i < pm->nb; i++)
		if (b[i])
			return true;
	return false;
}

/* One read from a member for the rebuild path, with the counters. */
static int member_pread(struct array *a, int disk, uint8_t *buf, size_t len, uint64_t moff)
{
	struct array_member *m = &a->members[disk], *cm = count_member(a, disk);
	int ret = source_pread(m->src, buf, len, m->data_offset + moff);

	atomic_fetch_add(&cm->reads, 1);
	atomic_fetch_add(&count_array(a)->member_requests, 1);
	atomic_fetch_add(&count_array(a)->member_request_bytes, len);
	if (ret)
		atomic_fetch_add(&cm->read_errors, 1);
	else
		atomic_fetch_add(&cm->read_bytes, len);
	return ret;
}

/* A read of one row failed: find the FAIL_BLOCKs that really fail. */
static void narrow_row(struct array *a, int disk, const struct piece *pc, struct piece_mem *pm,
		       uint64_t row)
{
	uint64_t cb = a->geom.chunk_bytes;
	uint8_t *dst = pm->win[disk] + row * pm->w;
	uint64_t moff = (pc->s0 + row) * cb + pc->c0;
	uint8_t *bad = bad_at(pm, disk, row);

	for (uint32_t b = 0; b < pm->nb; b++) {
		uint32_t x = b * FAIL_BLOCK;
		uint32_t l = pm->w - x < FAIL_BLOCK ? pm->w - x : FAIL_BLOCK;

		bad[b] = member_pread(a, disk, dst + x, l, moff + x) != 0;
	}
}

/* Read the piece's columns of every row disk has into pm->win[disk]; on a
 * failure narrow it down row by row, then block by block. */
static void piece_read_member(struct array *a, int disk, const struct piece *pc, struct piece_mem *pm)
{
	uint64_t cb = a->geom.chunk_bytes;
	uint64_t nrows = pm->rows[disk];
	bool whole = pm->w == cb;

	/* full chunks of consecutive stripes are contiguous in the member */
	if (whole && member_pread(a, disk, pm->win[disk], (size_t)(nrows * cb), pc->s0 * cb) == 0)
		return;
	for (uint64_t r = 0; r < nrows; r++) {
		uint64_t moff = (pc->s0 + r) * cb + pc->c0;

		if ((whole && nrows == 1) ||
		    member_pread(a, disk, pm->win[disk] + r * pm->w, pm->w, moff))
			narrow_row(a, disk, pc, pm, r);
	}
}

/* Requested columns [*lo, *hi) of data index d in a stripe, clipped to
 * [x0, x1); false if they do not meet. */
static bool data_cols(const struct array *a, const struct stripe_span *sp, int d,
		      uint32_t x0, uint32_t x1, uint32_t *lo, uint32_t *hi)
{
	uint32_t clo = d == sp->d0 ? sp->lo : 0;
	uint32_t chi = d == sp->d1 ? sp->hi : a->geom.chunk_bytes;

	if (d < sp->d0 || d > sp->d1)
		return false;
	*lo = clo > x0 ? clo : x0;
	*hi = chi < x1 ? chi : x1;
	return *lo < *hi;
}

/* Erasure id of a disk in stripe map (parity_recover's numbering). */
static int erasure_id(const struct array *a, const struct stripe_map *map, int disk)
{
	if (disk == map->p_disk)
		return PARITY_P;
	if (disk == map->q_disk)
		return PARITY_Q;
	return a->geom.level == 6 ? map->disk_slot[disk] : map->disk_data[disk];
}

/* Tell the observer where len bytes at array offset aoff, of disk's chunk
 * in this row, came from (served: copied out; else unreadable). */
static void observe_chunk(const struct array *a, const struct piece *pc, const struct piece_mem *pm,
			  uint64_t row, uint32_t blk, int disk, uint64_t aoff, uint32_t len, bool served)
{
	bool used[LAYOUT_MAX_DISKS];
	enum array_source how = ARRAY_SRC_UNREADABLE;

	/* all entries: the geometry before a reshape has fewer members than
	 * the array the observer knows (the new ones are not used there) */
	for (int i = 0; i < LAYOUT_MAX_DISKS; i++)
		used[i] = i < a->geom.raid_disks && block_ok(pm, i, row, blk);
	if (served)
		how = used[disk] ? ARRAY_SRC_MEMBER : ARRAY_SRC_REBUILT;
	pc->obs->served(pc->obs->ctx, aoff, len, how, disk, used);
}

/* Where parity_recover is to put (or find) member disk's columns [x0, x1)
 * of this row: its window, or - when the disk is lost and the caller asked
 * for exactly those columns of it - their place in buf, which saves copying
 * them over afterwards (in_buf[disk] is then set).  buf must be aligned as
 * the parity code wants it, or the window is used. */
static uint8_t *rebuild_target(const struct array *a, uint64_t s, uint64_t off, uint8_t *buf,
			       const struct stripe_map *map, const struct stripe_span *sp,
			       const struct piece_mem *pm, uint64_t row, uint32_t blk, int disk,
			       uint32_t x0, uint32_t x1, size_t at, bool *in_buf)
{
	int d = map->disk_data[disk];
	uint32_t lo, hi;
	uint8_t *dst;

	if (d < 0 || block_ok(pm, disk, row, blk) || !data_cols(a, sp, d, x0, x1, &lo, &hi) || lo != x0 ||
	    hi != x1)
		return pm->win[disk] + at;
	dst = buf + ((s * (uint64_t)a->k + (uint64_t)d) * a->geom.chunk_bytes + lo - off);
	if ((uintptr_t)dst % PARITY_ALIGN)
		return pm->win[disk] + at;
	in_buf[disk] = true;
	return dst;
}

/* Serve columns [x0, x1) of one row (blocks blk0.. all lost alike):
 * rebuild the lost data chunks if needed and possible, copy the requested
 * bytes out.  Returns 0, or -EIO with *bad set to the first requested
 * array offset of this segment that cannot be served (the rest is copied). */
static int serve_segment(struct array *a, uint8_t *buf, uint64_t off, uint64_t s,
			 const struct stripe_map *map, const struct stripe_span *sp,
			 struct piece_mem *pm, const struct piece *pc, uint64_t row,
			 uint32_t x0, uint32_t x1, bool *rebuilt, uint64_t *bad)
{
	uint64_t cb = a->geom.chunk_bytes;
	uint32_t blk = (x0 - pc->c0) / FAIL_BLOCK;
	size_t at = (size_t)row * pm->w + (x0 - pc->c0);
	uint8_t *slots[LAYOUT_MAX_DISKS];
	bool in_buf[LAYOUT_MAX_DISKS] = { false };     /* by disk: rebuilt straight into buf */
	int ids[2] = { PARITY_NONE, PARITY_NONE }, nlost = 0;
	bool need = false;
	int n = a->geom.raid_disks, ret = 0;

	for (int disk = 0; disk < n; disk++) {
		uint32_t lo, hi;

		if (block_ok(pm, disk, row, blk))
			continue;
		if (nlost < 2)
			ids[nlost] = erasure_id(a, map, disk);
		nlost++;
		if (map->disk_data[disk] >= 0 && data_cols(a, sp, map->disk_data[disk], x0, x1, &lo, &hi))
			need = true;
	}
	if (need && nlost > a->redundancy) {
		ret = -EIO;
	} else if (need && a->geom.level == 6) {
		for (int i = 0; i < map->q_slots; i++)
			slots[i] = NULL;
		for (int disk = 0; disk < n; disk++)
			if (map->disk_slot[disk] >= 0)
				slots[map->disk_slot[disk]] = rebuild_target(a, s, off, buf, map, sp, pm, row, blk, disk,
									     x0, x1, at, in_buf);
		if (parity_recover(map->q_slots, x1 - x0, slots, pm->win[map->p_disk] + at,
				   pm->win[map->q_disk] + at, ids[0], ids[1], pm->pscratch))
			return -EINVAL;
		*rebuilt = true;
	} else if (need) {
		for (int d = 0; d < map->k; d++)
			slots[d] = rebuild_target(a, s, off, buf, map, sp, pm, row, blk, map->data_disk[d], x0, x1,
						  at, in_buf);
		if (parity_recover(map->k, x1 - x0, slots, pm->win[map->p_disk] + at, NULL, ids[0],
				   PARITY_NONE, pm->pscratch))
			return -EINVAL;
		*rebuilt = true;
	}
	for (int d = sp->d0; d <= sp->d1; d++) {
		int disk = map->data_disk[d];
		uint32_t lo, hi;
		uint64_t aoff;

		if (!data_cols(a, sp, d, x0, x1, &lo, &hi))
			continue;
		aoff = (s * (uint64_t)a->k + (uint64_t)d) * cb + lo;
		if (pc->obs)
			observe_chunk(a, pc, pm, row, blk, disk, aoff, hi - lo, !(ret && !block_ok(pm, disk, row, blk)));
		if (ret && !block_ok(pm, disk, row, blk)) {
			if (aoff < *bad)
				*bad = aoff;
			continue;
		}
		if (!in_buf[disk])
			memcpy(buf + (aoff - off), pm->win[disk] + at + (lo - x0), hi - lo);
	}
	return ret;
}

/* Serve one row of a piece, in segments over which the same members are
 * lost (the whole row at once unless a read failed in it). */
static int serve_row(struct array *a, uint8_t *buf, uint64_t off, uint64_t end,
		     const struct piece *pc, struct piece_mem *pm, uint64_t row, uint64_t *bad)
{
	uint64_t s = pc->s0 + row;
	struct stripe_map map;
	struct stripe_span sp;
	bool rebuilt = false, failed = false;
	int nbad = 0, ret = 0;

	layout_map_stripe(&a->geom, s, &map);
	stripe_span(a, s, off, end, &sp);
	for (int disk = 0; disk < a->geom.raid_disks; disk++)
		nbad += row_has_bad(pm, disk, row);
	for (uint32_t x0 = pc->c0; x0 < pc->c1;) {
		uint32_t x1 = nbad ? x0 - (x0 - pc->c0) % FAIL_BLOCK + FAIL_BLOCK : pc->c1;

		if (x1 > pc->c1)
			x1 = pc->c1;
		ret = serve_segment(a, buf, off, s, &map, &sp, pm, pc, row, x0, x1, &rebuilt, bad);
		if (ret == -EIO)
			failed = true;
		else if (ret)
			return ret;
		x0 = x1;
	}
	if (rebuilt)
		atomic_fetch_add(&count_array(a)->stripes_rebuilt, 1);
	if (failed)
		return -EIO;
	/* failed reads whose bytes were rebuilt (or not needed) */
	if (nbad)
		atomic_fetch_add(&count_array(a)->read_errors_recovered, (uint64_t)nbad);
	return 0;
}

/* Rebuild path for one piece.  Every row is served even when one fails, so
 * that everything before the first unserved offset (*bad) is right. */
static int read_piece(struct array *a, uint8_t *buf, uint64_t off, uint64_t end,
		      const struct piece *pc, uint64_t *bad)
{
	int n = a->geom.raid_disks;
	struct piece_mem *pm;
	uint8_t *mem;
	size_t wins;
	int ret = 0;

	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	pm->w = pc->c1 - pc->c0;
	pm->ns = pc->s1 - pc->s0 + 1;
	pm->nb = (pm->w + FAIL_BLOCK - 1) / FAIL_BLOCK;
	wins = (size_t)pm->w * pm->ns * (size_t)n;
	mem = scratch_get(wins + 2 * (size_t)pm->w + (size_t)n * pm->ns * pm->nb);
	if (!mem) {
		free(pm);
		return -ENOMEM;
	}
	pm->pscratch = mem + wins;
	pm->bad = pm->pscratch + 2 * (size_t)pm->w;
	memset(pm->bad, 0, (size_t)n * pm->ns * pm->nb);
	for (int disk = 0; disk < n; disk++) {
		pm->win[disk] = mem + (size_t)disk * pm->w * pm->ns;
		/* a truncated or rebuilding member has a prefix of the rows */
		while (pm->rows[disk] < pm->ns && chunk_readable(a, disk, pc->s0 + pm->rows[disk], NULL))
			pm->rows[disk]++;
		if (pm->rows[disk])
			piece_read_member(a, disk, pc, pm);
	}
	for (uint64_t row = 0; row < pm->ns; row++) {
		int r = serve_row(a, buf, off, end, pc, pm, row, bad);

		if (r && r != -EIO) {
			ret = r;
			break;
		}
		if (r)
			ret = r;
	}
	free(pm);
	return ret;
}

/* Add [lo, hi) of the chunk, sector-aligned, to the column list. */
static void cols_add(uint32_t cols[2][2], int *ncols, uint32_t lo, uint32_t hi, uint32_t cb)
{
	lo &= ~511u;
	hi = (uint32_t)(((uint64_t)hi + 511) & ~511ull);
	if (hi > cb)
		hi = cb;
	if (*ncols && lo <= cols[*ncols - 1][1]) {     /* overlaps the previous one */
		if (hi > cols[*ncols - 1][1])
			cols[*ncols - 1][1] = hi;
		return;
	}
	cols[*ncols][0] = lo;
	cols[*ncols][1] = hi;
	(*ncols)++;
}

/* Rebuild path for stripes [s0, s1] (at most a window of rows): cut into
 * pieces of at most colmax columns.  Several rows are read as whole chunks;
 * a single stripe only over the columns asked for.  Returns 0, or -EIO with
 * *bad the first array offset not served (all bytes before it are). */
static int read_rebuild(struct array *a, uint8_t *buf, uint64_t off, uint64_t end,
			uint64_t s0, uint64_t s1, uint32_t colmax, uint64_t *bad,
			const struct array_observer *obs)
{
	uint32_t cb = a->geom.chunk_bytes;
	uint32_t cols[2][2];
	int ncols = 0, ret = 0;

	if (s0 < s1) {
		cols_add(cols, &ncols, 0, cb, cb);
	} else {
		struct stripe_span sp;

		stripe_span(a, s0, off, end, &sp);
		if (sp.d0 == sp.d1) {
			cols_add(cols, &ncols, sp.lo, sp.hi, cb);
		} else if (sp.d1 == sp.d0 + 1 && sp.hi <= sp.lo) {
			cols_add(cols, &ncols, 0, sp.hi, cb);
			cols_add(cols, &ncols, sp.lo, cb, cb);
		} else {
			cols_add(cols, &ncols, 0, cb, cb);
		}
	}
	*bad = UINT64_MAX;
	for (int i = 0; i < ncols; i++) {
		for (uint32_t c0 = cols[i][0]; c0 < cols[i][1];) {
			struct piece pc = { s0, s1, c0, cols[i][1] - c0 > colmax ? c0 + colmax : cols[i][1], obs };
			int r = read_piece(a, buf, off, end, &pc, bad);

			if (r && r != -EIO)
				return r;
			if (r)
				ret = r;
			c0 = pc.c1;
		}
	}
	return ret;
}

int array_read(struct array *a, void *vbuf, size_t len, uint64_t off, uint64_t *bad_off)
{
	return array_read_observed(a, vbuf, len, off, bad_off, NULL);
}

static int read_geometry(struct array *a, void *vbuf, size_t len, uint64_t off, uint64_t *bad_off,
			 const struct array_observer *obs);

/* A run read straight from the members.  The observer locates such runs
 * in the array's geometry; in the one before a reshape it cannot, so there
 * each chunk is told with the member it came from. */
static void observe_direct(const struct array *a, const struct array_observer *obs, uint64_t off, uint64_t len)
{
	uint64_t cb = a->geom.chunk_bytes;

	if (!a->stats_of) {
		obs->served(obs->ctx, off, len, ARRAY_SRC_MEMBERS, -1, NULL);
		return;
	}
	for (uint64_t end = off + len; off < end;) {
		struct layout_pos pos;
		uint64_t n = cb - off % cb;

		if (n > end - off)
			n = end - off;
		layout_locate(&a->geom, off, &pos);
		obs->served(obs->ctx, off, n, ARRAY_SRC_MEMBER, pos.disk, NULL);
		off += n;
	}
}

/* An array in the middle of a reshape: each side of the reshape position
 * in its own geometry, in array order. */
static int read_reshaping(struct array *a, uint8_t *buf, size_t len, uint64_t off, uint64_t *bad_off,
			  const struct array_observer *obs)
{
	uint64_t end = off + len, split = a->reshape_bytes;
	struct array *below = a->reshape_backwards ? a->prev : a;
	struct array *above = a->reshape_backwards ? a : a->prev;
	int ret = 0;

	if (off < split)
		ret = read_geometry(below, buf, (size_t)((end < split ? end : split) - off), off, bad_off, obs);
	if (!ret && end > split) {
		uint64_t from = off > split ? off : split;
		ret = read_geometry(above, buf + (from - off), (size_t)(end - from), from, bad_off, obs);
	}
	return ret;
}

int array_read_observed(struct array *a, void *vbuf, size_t len, uint64_t off, uint64_t *bad_off,
			const struct array_observer *obs)
{
	if (len && a->prev) {
		if (off > a->array_bytes || len > a->array_bytes - off)
			return -EINVAL;
		return read_reshaping(a, vbuf, len, off, bad_off, obs);
	}
	return read_geometry(a, vbuf, len, off, bad_off, obs);
}

/* array_read over one geometry (the only one unless a reshape is caught). */
static int read_geometry(struct array *a, void *vbuf, size_t len, uint64_t off, uint64_t *bad_off,
			 const struct array_observer *obs)
{
	uint8_t *buf = vbuf;
	uint64_t end = off + len;
	uint64_t cb = a->geom.chunk_bytes;
	uint64_t sbytes = cb * (uint64_t)a->k;
	uint64_t window = REBUILD_WINDOW;
	uint64_t rows_per_window;
	uint64_t retry_end = 0;      /* stripes below this go the rebuild way */
	uint64_t bad = 0;
	uint64_t s, s_last;
	int ret = 0;

	/* keep the per-thread scratch (window x members) bounded, whatever
	 * the chunk size: big chunks are rebuilt in column pieces */
	if (window * (uint64_t)a->geom.raid_disks > REBUILD_SCRATCH)
		window = REBUILD_SCRATCH / (uint64_t)a->geom.raid_disks / FAIL_BLOCK * FAIL_BLOCK;
	rows_per_window = window / cb ? window / cb : 1;
	if (len == 0)
		return 0;
	if (off > a->array_bytes || len > a->array_bytes - off)
		return -EINVAL;
	s = off / sbytes;
	s_last = (end - 1) / sbytes;
	while (s <= s_last) {
		struct stripe_map map;
		struct stripe_span sp;
		bool rebuild;
		uint64_t t = s;
		uint64_t roff, rend;

		/* the longest run of stripes of one kind (direct or rebuild) */
		layout_map_stripe(&a->geom, s, &map);
		stripe_span(a, s, off, end, &sp);
		rebuild = s < retry_end || stripe_needs_rebuild(a, s, &map, &sp, NULL);
		while (t < s_last) {
			struct stripe_span sp2;
			bool r2;

			layout_map_stripe(&a->geom, t + 1, &map);
			stripe_span(a, t + 1, off, end, &sp2);
			r2 = t + 1 < retry_end || stripe_needs_rebuild(a, t + 1, &map, &sp2, NULL);
			/* a rebuild run takes in the stripes after it that could
			 * go direct: it reads them anyway, and the members then see
			 * window-sized requests instead of a few chunks at a time */
			if (!rebuild && r2)
				break;
			if (rebuild && t + 1 - s >= rows_per_window)
				break;
			t++;
		}
		roff = s * sbytes > off ? s * sbytes : off;
		rend = (t + 1) * sbytes < end ? (t + 1) * sbytes : end;
		if (!rebuild) {
			int failed = -1;

			ret = read_direct(a, buf + (roff - off), roff, rend, s, t, &failed);
			if (ret && failed >= 0) {
				/* a member failed: redo these stripes the rebuild
				 * way, which finds what exactly is lost */
				atomic_fetch_add(&count_member(a, failed)->read_errors, 1);
				retry_end = t + 1;
				continue;
			}
			if (!ret && obs)
				observe_direct(a, obs, roff, rend - roff);
		} else {
			ret = read_rebuild(a, buf + (roff - off), roff, rend, s, t, (uint32_t)window, &bad, obs);
		}
		if (ret)
			break;
		s = t + 1;
	}
	if (ret == 0) {
		atomic_fetch_add(&count_array(a)->bytes_served, len);
	} else {
		if (ret == -EIO)
			atomic_fetch_add(&count_array(a)->read_errors_fatal, 1);
		if (bad_off)
			*bad_off = ret == -EIO ? bad : off;
	}
	return ret;
}
