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

/* Set the derived sizes and check every used member against them. */
static int finish_geometry(struct array *a, char *err, size_t errlen)
{
	const char *why = NULL;

	if (layout_check(&a->geom, &why)) {
		fmt_err(err, errlen, "unsupported geometry: %s", why ? why : "invalid");
		return -EINVAL;
	}
	a->k = layout_data_disks(&a->geom);
	a->redundancy = a->geom.level == 6 ? 2 : 1;
	a->member_bytes -= a->member_bytes % a->geom.chunk_bytes;
	if (a->member_bytes == 0) {
		fmt_err(err, errlen, "the members hold less than one chunk (%u bytes) of data",
			a->geom.chunk_bytes);
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
	return finish_geometry(a, err, errlen);
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
	if (fresh->reshape_active) {
		fmt_err(err, errlen, "%s: the array is in the middle of a reshape (position %" PRIu64
			" sectors, %d -> %d members); reading a reshaping array is not supported",
			c[ifresh].path, fresh->reshape_position, fresh->raid_disks - fresh->delta_disks,
			fresh->raid_disks);
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
	a->geom.level = fresh->level;
	a->geom.layout = fresh->layout;
	a->geom.raid_disks = fresh->raid_disks;
	a->geom.chunk_bytes = fresh->chunk_bytes;
	if (fresh->raid_disks < 1 || fresh->raid_disks > LAYOUT_MAX_DISKS) {
		fmt_err(err, errlen, "%s: superblock says %d members", c[ifresh].path, fresh->raid_disks);
		return -EINVAL;
	}
	ret = alloc_members(a, fresh->raid_disks);
	if (ret)
		return ret;
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
		m->data_offset = mm->data_offset * 512;
		m->readable_bytes = UINT64_MAX;
		m->note[0] = '\0';
		if ((mm->feature_map & 2) && mm->recovery_offset != UINT64_MAX)
			m->readable_bytes = mm->recovery_offset * 512;

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
	return finish_geometry(a, err, errlen);
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
	for (int r = 0; a->members && r < a->geom.raid_disks; r++) {
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

/* Can member `disk` serve the chunk of stripe `s`?  `lost` marks members
 * that failed during this request. */
static bool chunk_readable(const struct array *a, int disk, uint64_t s, const bool *lost)
{
	const struct array_member *m = &a->members[disk];

	if (lost[disk] || !m->src)
		return false;
	if (m->state != MEMBER_OK && m->state != MEMBER_REBUILDING)
		return false;
	return (s + 1) * a->geom.chunk_bytes <= m->readable_bytes;
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
 * this sink when chunks are small, so that the member sees one large
 * request instead of many small ones (the kernel writes it, nobody reads). */
#define SINK_BYTES (1u << 20)
#define SINK_MAX_CHUNK (256u << 10)
static uint8_t parity_sink[SINK_BYTES] __attribute__((aligned(64)));

static int member_io_flush(struct array *a, int disk, struct member_io *io)
{
	struct array_member *m = &a->members[disk];
	int ret;

	if (!io->niov)
		return 0;
	ret = source_preadv(m->src, io->iov, io->niov, io->off);
	atomic_fetch_add(&m->reads, 1);
	atomic_fetch_add(&a->member_requests, 1);
	atomic_fetch_add(&a->member_request_bytes, io->len);
	if (ret == 0)
		atomic_fetch_add(&m->read_bytes, io->len);
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

			if (mi->niov && mi->off + mi->len < moff && cb <= SINK_MAX_CHUNK &&
			    moff - (mi->off + mi->len) <= 2 * cb && mi->niov + 1 < (int)ARRAY_LEN(mi->iov)) {
				/* bridge the P/Q chunk(s) in between */
				mi->iov[mi->niov].iov_base = parity_sink;
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

/* Bytes of one member read in one go on the rebuild path. */
#define REBUILD_WINDOW (4u << 20)

/* Rebuild path for stripes [s0, s1].  lost[] holds members known to fail
 * in this request and is updated when another one fails. */
static int read_rebuild(struct array *a, uint8_t *buf, uint64_t off, uint64_t end,
			uint64_t s0, uint64_t s1, bool *lost, uint64_t *bad_off)
{
	int n = a->geom.raid_disks;
	uint64_t cb = a->geom.chunk_bytes;
	uint32_t lo = 0, hi = (uint32_t)cb, w;
	struct stripe_map map;
	struct stripe_span sp;
	uint8_t *mem, *win[LAYOUT_MAX_DISKS], *pscratch;
	uint8_t *slots[LAYOUT_MAX_DISKS];
	bool have[LAYOUT_MAX_DISKS];
	uint64_t ns = s1 - s0 + 1;
	int ret;

	/* One stripe: only the window of the chunk that is asked for. */
	if (ns == 1) {
		stripe_span(a, s0, off, end, &sp);
		if (sp.d0 == sp.d1) {
			lo = sp.lo;
			hi = sp.hi;
		} else if (sp.d1 == sp.d0 + 1 && sp.hi <= sp.lo) {
			lo = 0;
			hi = (uint32_t)cb;
		}
		/* sector-align so parity works on aligned, 512-multiple blocks */
		lo &= ~511u;
		hi = (uint32_t)(((uint64_t)hi + 511) & ~511ull);
		if (hi > cb)
			hi = (uint32_t)cb;
	}
	w = hi - lo;
	mem = scratch_get((size_t)w * ns * (size_t)n + 2 * (size_t)w + 64);
	if (!mem)
		return -ENOMEM;
	for (int d = 0; d < n; d++)
		win[d] = mem + (size_t)d * w * ns;
	pscratch = mem + (size_t)n * w * ns;

again:
	/* Read every member that is readable over the whole run. */
	for (int disk = 0; disk < n; disk++) {
		struct array_member *m = &a->members[disk];
		uint64_t moff;

		size_t rlen;
		uint64_t rows;

		have[disk] = chunk_readable(a, disk, s0, lost);
		if (!have[disk])
			continue;
		/* a truncated or rebuilding member: read the rows it has */
		for (rows = 1; rows < ns && chunk_readable(a, disk, s0 + rows, lost); rows++)
			;
		rlen = ns == 1 ? w : (size_t)(rows * cb);
		moff = m->data_offset + s0 * cb + lo;
		ret = source_pread(m->src, win[disk], rlen, moff);
		atomic_fetch_add(&m->reads, 1);
		atomic_fetch_add(&a->member_requests, 1);
		atomic_fetch_add(&a->member_request_bytes, rlen);
		if (ret) {
			atomic_fetch_add(&m->read_errors, 1);
			lost[disk] = true;
			goto again;
		}
		atomic_fetch_add(&m->read_bytes, rlen);
	}

	for (uint64_t s = s0; s <= s1; s++) {
		size_t row = (size_t)(s - s0) * w;
		int lost_ids[2], nlost = 0;
		bool need = false;

		layout_map_stripe(&a->geom, s, &map);
		stripe_span(a, s, off, end, &sp);
		for (int disk = 0; disk < n; disk++) {
			bool ok = have[disk] && chunk_readable(a, disk, s, lost);
			int id;

			if (ok)
				continue;
			if (disk == map.p_disk)
				id = PARITY_P;
			else if (disk == map.q_disk)
				id = PARITY_Q;
			else {
				id = a->geom.level == 6 ? map.disk_slot[disk] : map.disk_data[disk];
				if (map.disk_data[disk] >= sp.d0 && map.disk_data[disk] <= sp.d1)
					need = true;
			}
			if (nlost < 2)
				lost_ids[nlost] = id;
			nlost++;
		}
		if (need) {
			if (nlost > a->redundancy) {
				/* the first requested byte that cannot be served */
				for (int d = sp.d0; d <= sp.d1; d++) {
					int disk = map.data_disk[d];
					if (!(have[disk] && chunk_readable(a, disk, s, lost))) {
						uint64_t c0 = (s * (uint64_t)a->k + (uint64_t)d) * cb;
						*bad_off = c0 + (d == sp.d0 ? sp.lo : 0);
						break;
					}
				}
				atomic_fetch_add(&a->read_errors_fatal, 1);
				return -EIO;
			}
			if (a->geom.level == 6) {
				for (int i = 0; i < map.q_slots; i++)
					slots[i] = NULL;
				for (int disk = 0; disk < n; disk++)
					if (map.disk_slot[disk] >= 0)
						slots[map.disk_slot[disk]] = win[disk] + row;
				ret = parity_recover(map.q_slots, w, slots, win[map.p_disk] + row,
						     win[map.q_disk] + row, lost_ids[0],
						     nlost > 1 ? lost_ids[1] : PARITY_NONE, pscratch);
			} else {
				for (int d = 0; d < map.k; d++)
					slots[d] = win[map.data_disk[d]] + row;
				ret = parity_recover(map.k, w, slots, win[map.p_disk] + row, NULL,
						     lost_ids[0], PARITY_NONE, pscratch);
			}
			if (ret)
				return ret;
			atomic_fetch_add(&a->stripes_rebuilt, 1);
		}
		for (int d = sp.d0; d <= sp.d1; d++) {
			uint32_t clo = d == sp.d0 ? sp.lo : 0;
			uint32_t chi = d == sp.d1 ? sp.hi : (uint32_t)cb;
			uint64_t aoff = (s * (uint64_t)a->k + (uint64_t)d) * cb + clo;

			memcpy(buf + (aoff - off), win[map.data_disk[d]] + row + (clo - lo), chi - clo);
		}
	}
	return 0;
}

int array_read(struct array *a, void *vbuf, size_t len, uint64_t off, uint64_t *bad_off)
{
	uint8_t *buf = vbuf;
	uint64_t end = off + len;
	uint64_t cb = a->geom.chunk_bytes;
	uint64_t sbytes = cb * (uint64_t)a->k;
	uint64_t window = REBUILD_WINDOW;
	uint64_t rows_per_window;
	bool lost[LAYOUT_MAX_DISKS] = { false };
	uint64_t bad = 0;
	uint64_t s, s_last;
	int ret = 0;

	/* keep the per-thread scratch (window x members) near 32 MiB at most */
	if (window * (uint64_t)a->geom.raid_disks > (32u << 20))
		window = (32u << 20) / (uint64_t)a->geom.raid_disks;
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

		/* the longest run of stripes of one kind (direct or rebuild) */
		layout_map_stripe(&a->geom, s, &map);
		stripe_span(a, s, off, end, &sp);
		rebuild = stripe_needs_rebuild(a, s, &map, &sp, lost);
		while (t < s_last) {
			struct stripe_span sp2;
			layout_map_stripe(&a->geom, t + 1, &map);
			stripe_span(a, t + 1, off, end, &sp2);
			if (stripe_needs_rebuild(a, t + 1, &map, &sp2, lost) != rebuild)
				break;
			if (rebuild && t + 1 - s >= rows_per_window)
				break;
			t++;
		}
		{
			uint64_t roff = s * sbytes > off ? s * sbytes : off;
			uint64_t rend = (t + 1) * sbytes < end ? (t + 1) * sbytes : end;

			if (!rebuild) {
				int failed = -1;
				ret = read_direct(a, buf + (roff - off), roff, rend, s, t, &failed);
				if (ret && failed >= 0) {
					/* a member failed: redo these stripes without it */
					atomic_fetch_add(&a->members[failed].read_errors, 1);
					lost[failed] = true;
					continue;
				}
			} else {
				ret = read_rebuild(a, buf + (roff - off), roff, rend, s, t, lost, &bad);
			}
			if (ret)
				break;
		}
		s = t + 1;
	}
	if (ret == 0) {
		uint64_t nlost = 0;

		for (int i = 0; i < a->geom.raid_disks; i++)
			nlost += lost[i];
		/* every member that failed here was covered by redundancy */
		if (nlost)
			atomic_fetch_add(&a->read_errors_recovered, nlost);
		atomic_fetch_add(&a->bytes_served, len);
	} else if (bad_off) {
		*bad_off = ret == -EIO ? bad : off;
	}
	return ret;
}
