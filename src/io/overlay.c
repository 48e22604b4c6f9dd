/* overlay.c - see overlay.h: the copy-on-write overlay of `mount --overlay`.
 *
 * In memory: the header, the bitmap as 64-bit words (bit g of the file's
 * bitmap is bit g%64 of word g/64; the file stores the words little-endian,
 * so the bytes are the same as the bit numbering in overlay.h says), a flag
 * per 4 KiB page of bitmap that changed since the last sync, and a table of
 * granule locks (granule g uses lock g % OVERLAY_LOCKS).
 *
 * The only rule the locks keep: a granule's first write (which copies the
 * array's bytes around the written part and then sets the bit) runs under
 * its lock, and a writer that saw the bit clear takes the lock and looks
 * again.  Once the bit is set the granule is an ordinary file range:
 * writes and reads go to the file without locks, like any concurrent I/O
 * on a file.  Readers never lock: a bit they see set was set after the
 * granule's data was in the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "le.h"
#include "layout.h"
#include "outfile.h"
#include "format.h"
#include "overlay.h"
#include "sysio.h"
#include "util.h"
#include "xxh64.h"

enum {
	OVERLAY_LOCKS = 256,
	LOCK_WAIT_MS = 3000,
	BITMAP_PAGE = 4096,
	WORDS_PER_PAGE = BITMAP_PAGE / 8,
	/* header fields: byte offsets */
	H_MAGIC = 0,
	H_VERSION = 8,
	H_HEADER_BYTES = 12,
	H_GRANULE = 16,
	H_KIND = 20,
	H_UUID = 24,
	H_LEVEL = 40,
	H_LAYOUT = 44,
	H_RAID_DISKS = 48,
	H_CHUNK = 52,
	H_MEMBER_BYTES = 56,
	H_ARRAY_BYTES = 64,
	H_DATA_OFFSET = 72,
	H_ARRAY_ID = 80,
	H_GRANULES = 88,
	H_BITMAP_OFFSET = 96,
	H_BITMAP_BYTES = 104,
	H_DATA_START = 112,
	H_CREATED = 120,
	H_MODIFIED = 128,
	H_NAME = 136,            /* 40 bytes, NUL-padded */
	H_META_FORMAT = 176,     /* 8 bytes, NUL-padded */
	H_CHECKSUM = 248,        /* XXH64 of bytes [0, 248) */
	H_USED = 256,
};

static int overlay_vol_read(struct volume *v, void *buf, size_t len, uint64_t off, uint64_t *bad_off,
			    const struct volume_observer *obs);
static const struct volume_ops overlay_volume_ops = { .read = overlay_vol_read };

struct overlay {
	char *path;                      /* absolute, owned */
	int fd;
	bool writable, in_use;
	struct overlay_header h;         /* modified_ns changes under sync_lock */
	struct volume *base;             /* what the overlay lies over; not owned */
	struct volume vol;               /* the overlay as a volume (overlay_volume) */
	_Atomic uint64_t *bitmap;        /* [nwords], owned */
	size_t nwords;
	atomic_uchar *dirty;             /* [npages], owned: bitmap page changed since the last sync */
	size_t npages;
	pthread_mutex_t locks[OVERLAY_LOCKS];
	pthread_mutex_t sync_lock;
	/* writes completed / made durable (overlay_sync compares them) */
	_Atomic uint64_t gen, synced_gen;
	_Atomic uint64_t written;        /* bits set */
	_Atomic uint64_t last_write_ns;
	_Atomic uint64_t modified_ns;    /* h.modified_ns, for readers outside sync_lock */
	_Atomic uint64_t writes, write_bytes, write_errors, copied, syncs, sync_errors;
	_Atomic int last_sync_error;
};

/* ------------------------------------------------------------------ */
/* little-endian fields                                                 */
/* ------------------------------------------------------------------ */

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

/* ------------------------------------------------------------------ */
/* identity                                                             */
/* ------------------------------------------------------------------ */

uint64_t overlay_identity_hash(const struct overlay_identity *id)
{
	uint8_t b[64] = { 0 };

	put_le32(b, (uint32_t)id->kind);
	memcpy(b + 4, id->uuid, 16);
	put_le32(b + 20, (uint32_t)id->level);
	put_le32(b + 24, (uint32_t)id->layout);
	put_le32(b + 28, (uint32_t)id->raid_disks);
	put_le32(b + 32, id->chunk_bytes);
	put_le64(b + 36, id->member_bytes);
	put_le64(b + 44, id->array_bytes);
	put_le64(b + 52, id->data_offset);
	return xxh64(b, 60, 0);
}

static void describe_geometry(const struct overlay_identity *id, char *buf, size_t len)
{
	char chunk[32], member[32];

	snprintf(buf, len, "RAID%d %s, %d members, chunk %s, %s per member, %" PRIu64 " array bytes", id->level,
		 layout_name(id->level, id->layout), id->raid_disks, fmt_size(id->chunk_bytes, chunk, sizeof(chunk)),
		 fmt_size(id->member_bytes, member, sizeof(member)), id->array_bytes);
}

void overlay_identity_describe(const struct overlay_identity *id, char *buf, size_t len)
{
	char uuid[40];

	if (id->kind == OVERLAY_ID_MD) {
		meta_uuid_format(id->uuid, uuid);
		snprintf(buf, len, "md array uuid %s%s%s%s", uuid, id->name[0] ? " (" : "", id->name,
			 id->name[0] ? ")" : "");
	} else {
		snprintf(buf, len, "manual geometry, data offset %" PRIu64, id->data_offset);
	}
}

static bool same_geometry(const struct overlay_identity *x, const struct overlay_identity *y)
{
	return x->level == y->level && x->layout == y->layout && x->raid_disks == y->raid_disks &&
	       x->chunk_bytes == y->chunk_bytes && x->member_bytes == y->member_bytes &&
	       x->array_bytes == y->array_bytes && x->data_offset == y->data_offset;
}

int overlay_identity_match(const struct overlay_identity *have, const struct overlay_identity *want,
			   char *why, size_t whylen)
{
	char hd[160], wd[160], hg[200], wg[200];

	overlay_identity_describe(have, hd, sizeof(hd));
	overlay_identity_describe(want, wd, sizeof(wd));
	describe_geometry(have, hg, sizeof(hg));
	describe_geometry(want, wg, sizeof(wg));
	if (have->kind != want->kind || (have->kind == OVERLAY_ID_MD && memcmp(have->uuid, want->uuid, 16))) {
		fmt_err(why, whylen, "it belongs to another array: it was made for the %s, these members form the %s",
			hd, wd);
		return -EXDEV;
	}
	if (!same_geometry(have, want)) {
		fmt_err(why, whylen, "it was made for %s with another geometry or size (%s; these members: %s)%s", hd,
			hg, wg, have->kind == OVERLAY_ID_MD ? ": was the array reshaped or grown?" : "");
		return -EXDEV;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* header                                                               */
/* ------------------------------------------------------------------ */

/* The file layout that follows from the array size and the granule. */
static void header_layout(struct overlay_header *h)
{
	uint64_t g = h->granule_bytes;

	h->granules = (h->id.array_bytes + g - 1) / g;
	h->bitmap_offset = OVERLAY_HEADER_BYTES;
	h->bitmap_bytes = round_up((h->granules + 7) / 8, BITMAP_PAGE);
	h->data_start = round_up(h->bitmap_offset + h->bitmap_bytes, g);
}

int overlay_header_init(struct overlay_header *h, const struct overlay_identity *id, uint32_t granule_bytes,
			uint64_t now_realtime_ns)
{
	if (!granule_bytes)
		granule_bytes = OVERLAY_GRANULE_DEFAULT;
	if (!is_pow2(granule_bytes) || granule_bytes < OVERLAY_GRANULE_MIN || granule_bytes > OVERLAY_GRANULE_MAX)
		return -EINVAL;
	if (!id->array_bytes || id->array_bytes > (UINT64_C(1) << 62))
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->version = OVERLAY_VERSION;
	h->granule_bytes = granule_bytes;
	h->id = *id;
	h->array_id = overlay_identity_hash(id);
	header_layout(h);
	h->created_ns = now_realtime_ns;
	h->modified_ns = now_realtime_ns;
	return 0;
}

void overlay_header_encode(const struct overlay_header *h, uint8_t *buf)
{
	memset(buf, 0, OVERLAY_HEADER_BYTES);
	memcpy(buf + H_MAGIC, OVERLAY_MAGIC, 8);
	put_le32(buf + H_VERSION, h->version);
	put_le32(buf + H_HEADER_BYTES, OVERLAY_HEADER_BYTES);
	put_le32(buf + H_GRANULE, h->granule_bytes);
	put_le32(buf + H_KIND, (uint32_t)h->id.kind);
	memcpy(buf + H_UUID, h->id.uuid, 16);
	put_le32(buf + H_LEVEL, (uint32_t)h->id.level);
	put_le32(buf + H_LAYOUT, (uint32_t)h->id.layout);
	put_le32(buf + H_RAID_DISKS, (uint32_t)h->id.raid_disks);
	put_le32(buf + H_CHUNK, h->id.chunk_bytes);
	put_le64(buf + H_MEMBER_BYTES, h->id.member_bytes);
	put_le64(buf + H_ARRAY_BYTES, h->id.array_bytes);
	put_le64(buf + H_DATA_OFFSET, h->id.data_offset);
	put_le64(buf + H_ARRAY_ID, h->array_id);
	put_le64(buf + H_GRANULES, h->granules);
	put_le64(buf + H_BITMAP_OFFSET, h->bitmap_offset);
	put_le64(buf + H_BITMAP_BYTES, h->bitmap_bytes);
	put_le64(buf + H_DATA_START, h->data_start);
	put_le64(buf + H_CREATED, h->created_ns);
	put_le64(buf + H_MODIFIED, h->modified_ns);
	memcpy(buf + H_NAME, h->id.name, strnlen(h->id.name, sizeof(h->id.name) - 1));
	memcpy(buf + H_META_FORMAT, h->id.meta_format, strnlen(h->id.meta_format, sizeof(h->id.meta_format) - 1));
	put_le64(buf + H_CHECKSUM, xxh64(buf, H_CHECKSUM, 0));
}

static void decode_fields(const uint8_t *buf, struct overlay_header *h)
{
	memset(h, 0, sizeof(*h));
	h->version = get_le32(buf + H_VERSION);
	h->granule_bytes = get_le32(buf + H_GRANULE);
	h->id.kind = (int)get_le32(buf + H_KIND);
	memcpy(h->id.uuid, buf + H_UUID, 16);
	h->id.level = (int)get_le32(buf + H_LEVEL);
	h->id.layout = (int)get_le32(buf + H_LAYOUT);
	h->id.raid_disks = (int)get_le32(buf + H_RAID_DISKS);
	h->id.chunk_bytes = get_le32(buf + H_CHUNK);
	h->id.member_bytes = get_le64(buf + H_MEMBER_BYTES);
	h->id.array_bytes = get_le64(buf + H_ARRAY_BYTES);
	h->id.data_offset = get_le64(buf + H_DATA_OFFSET);
	h->array_id = get_le64(buf + H_ARRAY_ID);
	h->granules = get_le64(buf + H_GRANULES);
	h->bitmap_offset = get_le64(buf + H_BITMAP_OFFSET);
	h->bitmap_bytes = get_le64(buf + H_BITMAP_BYTES);
	h->data_start = get_le64(buf + H_DATA_START);
	h->created_ns = get_le64(buf + H_CREATED);
	h->modified_ns = get_le64(buf + H_MODIFIED);
	memcpy(h->id.name, buf + H_NAME, sizeof(h->id.name) - 1);
	memcpy(h->id.meta_format, buf + H_META_FORMAT, sizeof(h->id.meta_format) - 1);
}

/* The array the header describes is one md could have made. */
static int check_geometry(const struct overlay_header *h, char *err, size_t errlen)
{
	struct layout_geom g = {
		.level = h->id.level, .layout = h->id.layout, .raid_disks = h->id.raid_disks,
		.chunk_bytes = h->id.chunk_bytes,
	};
	const char *why = "";
	int k;

	if (h->id.kind != OVERLAY_ID_MD && h->id.kind != OVERLAY_ID_MANUAL) {
		fmt_err(err, errlen, "unknown array identity kind %d", h->id.kind);
		return -EINVAL;
	}
	if (layout_check(&g, &why)) {
		fmt_err(err, errlen, "impossible geometry (%s)", why);
		return -EINVAL;
	}
	k = layout_data_disks(&g);
	if (!h->id.member_bytes || h->id.member_bytes > (UINT64_C(1) << 62) / (uint64_t)k ||
	    h->id.array_bytes != h->id.member_bytes * (uint64_t)k) {
		fmt_err(err, errlen, "array size %" PRIu64 " does not match %d data members of %" PRIu64 " bytes",
			h->id.array_bytes, k, h->id.member_bytes);
		return -EINVAL;
	}
	return 0;
}

/* The bitmap and data offsets are the ones the sizes imply. */
static int check_file_layout(const struct overlay_header *h, char *err, size_t errlen)
{
	struct overlay_header want = *h;

	if (!is_pow2(h->granule_bytes) || h->granule_bytes < OVERLAY_GRANULE_MIN ||
	    h->granule_bytes > OVERLAY_GRANULE_MAX) {
		fmt_err(err, errlen, "granule of %" PRIu32 " bytes (must be a power of two from 4 KiB to 16 MiB)",
			h->granule_bytes);
		return -EINVAL;
	}
	header_layout(&want);
	if (want.granules != h->granules || want.bitmap_offset != h->bitmap_offset ||
	    want.bitmap_bytes != h->bitmap_bytes || want.data_start != h->data_start) {
		fmt_err(err, errlen, "granule count or bitmap/data offsets do not follow from the array size");
		return -EINVAL;
	}
	return 0;
}

int overlay_header_decode(const uint8_t *buf, size_t len, struct overlay_header *h, char *err, size_t errlen)
{
	char why[300];
	int ret;

	if (len < H_USED || memcmp(buf + H_MAGIC, OVERLAY_MAGIC, 8)) {
		fmt_err(err, errlen, "not a raidimg overlay (no %s magic at its start)", OVERLAY_MAGIC);
		return -EINVAL;
	}
	decode_fields(buf, h);
	if (h->version > OVERLAY_VERSION) {
		fmt_err(err, errlen, "overlay format version %" PRIu32 ", made by a newer raidimg (this one reads "
			"version %d)", h->version, OVERLAY_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (get_le64(buf + H_CHECKSUM) != xxh64(buf, H_CHECKSUM, 0)) {
		fmt_err(err, errlen, "corrupt overlay header (checksum mismatch)");
		return -EINVAL;
	}
	ret = h->version != OVERLAY_VERSION || get_le32(buf + H_HEADER_BYTES) != OVERLAY_HEADER_BYTES ? -EINVAL : 0;
	if (ret)
		snprintf(why, sizeof(why), "version %" PRIu32 ", header of %" PRIu32 " bytes", h->version,
			 get_le32(buf + H_HEADER_BYTES));
	if (!ret)
		ret = check_geometry(h, why, sizeof(why));
	if (!ret)
		ret = check_file_layout(h, why, sizeof(why));
	if (!ret && h->array_id != overlay_identity_hash(&h->id)) {
		snprintf(why, sizeof(why), "array id does not match the identity fields");
		ret = -EINVAL;
	}
	if (ret)
		fmt_err(err, errlen, "corrupt overlay header: %s", why);
	return ret;
}

/* ------------------------------------------------------------------ */
/* file I/O                                                             */
/* ------------------------------------------------------------------ */

static int write_header(struct overlay *ov)
{
	uint8_t buf[OVERLAY_HEADER_BYTES];

	overlay_header_encode(&ov->h, buf);
	return pwrite_all(ov->fd, buf, sizeof(buf), 0);
}

/* fsync the directory holding path, so a new file's name is durable. */
static void sync_parent_dir(const char *path)
{
	char *dir = strdup(path), *slash;
	int fd;

	if (!dir)
		return;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

/* ------------------------------------------------------------------ */
/* the bitmap                                                           */
/* ------------------------------------------------------------------ */

static bool bit_test(const struct overlay *ov, uint64_t g)
{
	return atomic_load_explicit(&ov->bitmap[g / 64], memory_order_acquire) >> (g % 64) & 1;
}

/* After the granule's data is in the file. */
static void bit_set(struct overlay *ov, uint64_t g)
{
	uint64_t w = g / 64, bit = UINT64_C(1) << (g % 64);

	if (!(atomic_fetch_or_explicit(&ov->bitmap[w], bit, memory_order_acq_rel) & bit))
		atomic_fetch_add(&ov->written, 1);
	atomic_store(&ov->dirty[w / WORDS_PER_PAGE], 1);
}

bool overlay_granule_written(const struct overlay *ov, uint64_t g)
{
	return g < ov->h.granules && bit_test(ov, g);
}

static void encode_page(const struct overlay *ov, size_t page, uint8_t *out)
{
	for (size_t i = 0; i < WORDS_PER_PAGE; i++)
		put_le64(out + 8 * i, atomic_load(&ov->bitmap[page * WORDS_PER_PAGE + i]));
}

/* Read the bitmap from the file; bits past the last granule must be clear. */
static int load_bitmap(struct overlay *ov, char *err, size_t errlen)
{
	const struct overlay_header *h = &ov->h;
	uint8_t *buf = malloc(BITMAP_PAGE);
	uint64_t count = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t p = 0; p < ov->npages && !ret; p++) {
		ret = pread_all(ov->fd, buf, BITMAP_PAGE, h->bitmap_offset + (uint64_t)p * BITMAP_PAGE);
		if (ret) {
			fmt_err(err, errlen, "%s: cannot read the bitmap: %s", ov->path, strerror(-ret));
			break;
		}
		for (size_t i = 0; i < WORDS_PER_PAGE; i++) {
			uint64_t w = p * WORDS_PER_PAGE + i, v = get_le64(buf + 8 * i), first = w * 64;

			if (first + 64 > h->granules && (first >= h->granules ? v : v >> (h->granules - first))) {
				fmt_err(err, errlen, "%s: corrupt overlay: its bitmap marks granules past the end of "
					"the array", ov->path);
				ret = -EINVAL;
				break;
			}
			atomic_init(&ov->bitmap[w], v);
			count += (uint64_t)__builtin_popcountll(v);
		}
	}
	atomic_init(&ov->written, count);
	free(buf);
	return ret;
}

/* ------------------------------------------------------------------ */
/* open / close                                                         */
/* ------------------------------------------------------------------ */

static struct overlay *overlay_alloc(const char *path)
{
	struct overlay *ov = calloc(1, sizeof(*ov));

	if (!ov)
		return NULL;
	ov->fd = -1;
	ov->path = abs_path(path);
	if (!ov->path) {
		free(ov);
		return NULL;
	}
	for (int i = 0; i < OVERLAY_LOCKS; i++)
		pthread_mutex_init(&ov->locks[i], NULL);
	pthread_mutex_init(&ov->sync_lock, NULL);
	return ov;
}

void overlay_close(struct overlay *ov)
{
	if (!ov)
		return;
	if (ov->fd >= 0)
		close(ov->fd);
	for (int i = 0; i < OVERLAY_LOCKS; i++)
		pthread_mutex_destroy(&ov->locks[i]);
	pthread_mutex_destroy(&ov->sync_lock);
	free(ov->bitmap);
	free(ov->dirty);
	free(ov->path);
	free(ov);
}

/* flock(2) without blocking; with wait, retry for up to LOCK_WAIT_MS: a
 * mount just unmounted may still be syncing the overlay before it exits.
 * 0 or -1 with errno. */
static int lock_file(int fd, int how, bool wait)
{
	for (int waited = 0;; waited += 50) {
		if (!flock(fd, how | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK || !wait || waited >= LOCK_WAIT_MS)
			return -1;
		nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	}
}

/* Is the file open on fd still the one named path (not unlinked or
 * replaced by another process while we waited for its lock)? */
static bool still_named(int fd, const char *path)
{
	struct stat a, b;

	return !fstat(fd, &a) && a.st_nlink > 0 && !stat(path, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Open the file: create it (O_EXCL first, so *created is exact) or open
 * the existing one; then the lock, on the file still at the path (a mount
 * that made it and failed removes it: then start again).  Never evidence
 * (outfile.h): checked before it is opened for writing and after. */
static int open_file(struct overlay *ov, const struct overlay_open_opts *o, bool *created, char *err,
		     size_t errlen)
{
	int flags = (o->writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK;
	int ret;

	for (int tries = 0;; tries++) {
		*created = false;
		if (o->writable) {
			ret = evidence_check_path(ov->path, err, errlen);
			if (ret)
				return ret;
		}
		int create_errno = 0;

		if (o->writable && o->create) {
			ov->fd = open(ov->path, flags | O_CREAT | O_EXCL, 0644);
			*created = ov->fd >= 0;
			if (ov->fd < 0 && errno != EEXIST)
				create_errno = errno;
		}
		if (ov->fd < 0)
			ov->fd = open(ov->path, flags);
		if (ov->fd < 0) {
			/* the file not being there says less than why it could not be made */
			int e = errno == ENOENT && create_errno ? create_errno : errno;

			fmt_err(err, errlen, "%s: cannot %s the overlay%s: %s", ov->path, e == create_errno ? "create" : "open",
				o->writable ? " for writing" : "", strerror(e));
			return -e;
		}
		fcntl(ov->fd, F_SETFL, fcntl(ov->fd, F_GETFL) & ~O_NONBLOCK);
		ret = o->writable ? evidence_check_fd(ov->fd, ov->path, err, errlen)
				  : evidence_protect(ov->fd, "the overlay being read");
		if (ret) {
			if (!o->writable)
				fmt_err(err, errlen, "%s: %s", ov->path, strerror(-ret));
			return ret;
		}
		if (lock_file(ov->fd, o->writable ? LOCK_EX : LOCK_SH, !o->allow_in_use)) {
			if (errno == EWOULDBLOCK && !o->writable && o->allow_in_use) {
				ov->in_use = true;
				return 0;
			}
			if (errno == EWOULDBLOCK) {
				fmt_err(err, errlen, "%s: the overlay is in use by another raidimg process (a mount? "
					"unmount it first)", ov->path);
				return -EBUSY;
			}
			fmt_err(err, errlen, "%s: cannot lock the overlay: %s", ov->path, strerror(errno));
			return -errno;
		}
		if (still_named(ov->fd, ov->path))
			return 0;
		close(ov->fd);              /* removed or replaced while we waited: again */
		ov->fd = -1;
		if (tries == 10) {
			fmt_err(err, errlen, "%s: the overlay keeps being replaced by another process", ov->path);
			return -EBUSY;
		}
	}
}

/* A new overlay in an empty file: header, then the size (bitmap and data
 * are holes, i.e. zeros), durable before use. */
static int init_file(struct overlay *ov, const struct overlay_open_opts *o, char *err, size_t errlen)
{
	int ret;

	if (!o->id) {
		fmt_err(err, errlen, "%s: empty file: not an overlay yet", ov->path);
		return -EINVAL;
	}
	ret = overlay_header_init(&ov->h, o->id, o->granule_bytes, realtime_ns());
	if (ret) {
		fmt_err(err, errlen, "%s: granule of %" PRIu32 " bytes: must be a power of two from 4 KiB to 16 MiB",
			ov->path, o->granule_bytes);
		return ret;
	}
	ret = write_header(ov);
	if (!ret && ftruncate(ov->fd, (off_t)(ov->h.data_start + ov->h.id.array_bytes)))
		ret = -errno;
	if (!ret && fsync(ov->fd))
		ret = -errno;
	if (ret)
		fmt_err(err, errlen, "%s: cannot write the new overlay: %s", ov->path, strerror(-ret));
	else
		sync_parent_dir(ov->path);
	return ret;
}

/* An existing overlay: its header, its size, its array. */
static int load_header(struct overlay *ov, const struct overlay_open_opts *o, uint64_t file_bytes, char *err,
		       size_t errlen)
{
	uint8_t buf[OVERLAY_HEADER_BYTES];
	char why[600];
	uint64_t need;
	int ret;

	if (file_bytes < OVERLAY_HEADER_BYTES) {
		fmt_err(err, errlen, "%s: not a raidimg overlay (%" PRIu64 " bytes, shorter than its header)", ov->path,
			file_bytes);
		return -EINVAL;
	}
	ret = pread_all(ov->fd, buf, sizeof(buf), 0);
	if (ret) {
		fmt_err(err, errlen, "%s: cannot read: %s", ov->path, strerror(-ret));
		return ret;
	}
	ret = overlay_header_decode(buf, sizeof(buf), &ov->h, why, sizeof(why));
	if (ret) {
		fmt_err(err, errlen, "%s: %s%s", ov->path, why,
			memcmp(buf, OVERLAY_MAGIC, 8) ? "; refusing to use or overwrite it" : "");
		return ret;
	}
	need = ov->h.data_start + ov->h.id.array_bytes;
	if (file_bytes < need) {
		fmt_err(err, errlen, "%s: truncated overlay: %" PRIu64 " bytes, its header needs %" PRIu64, ov->path,
			file_bytes, need);
		return -EINVAL;
	}
	if (o->id && overlay_identity_match(&ov->h.id, o->id, why, sizeof(why))) {
		fmt_err(err, errlen, "%s: %s", ov->path, why);
		return -EXDEV;
	}
	return 0;
}

static int alloc_bitmap(struct overlay *ov)
{
	ov->nwords = ov->h.bitmap_bytes / 8;
	ov->npages = ov->h.bitmap_bytes / BITMAP_PAGE;
	ov->bitmap = calloc(ov->nwords, sizeof(*ov->bitmap));
	ov->dirty = calloc(ov->npages, sizeof(*ov->dirty));
	return ov->bitmap && ov->dirty ? 0 : -ENOMEM;
}

int overlay_open(const char *path, const struct overlay_open_opts *o, struct overlay **out, bool *created,
		 char *err, size_t errlen)
{
	struct overlay *ov;
	struct stat st;
	bool made = false;
	int ret;

	if (created)
		*created = false;
	ov = overlay_alloc(path);
	if (!ov) {
		fmt_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ov->writable = o->writable;
	ov->base = o->base;
	ov->vol.ops = &overlay_volume_ops;
	ret = open_file(ov, o, &made, err, errlen);
	if (ret)
		goto fail;
	if (fstat(ov->fd, &st)) {
		ret = -errno;
		fmt_err(err, errlen, "%s: %s", ov->path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		fmt_err(err, errlen, "%s: the overlay must be a regular file", ov->path);
		goto fail;
	}
	if (st.st_size == 0 && o->writable && o->create)
		ret = init_file(ov, o, err, errlen);
	else
		ret = load_header(ov, o, (uint64_t)st.st_size, err, errlen);
	if (ret)
		goto fail;
	ret = alloc_bitmap(ov);
	if (ret) {
		fmt_err(err, errlen, "%s: out of memory for the bitmap (%" PRIu64 " bytes)", ov->path,
			ov->h.bitmap_bytes);
		goto fail;
	}
	ret = load_bitmap(ov, err, errlen);
	if (ret)
		goto fail;
	atomic_init(&ov->modified_ns, ov->h.modified_ns);
	ov->vol.size = ov->h.id.array_bytes;
	ov->vol.align = o->base ? o->base->align : ov->h.granule_bytes;
	if (created)
		*created = made;
	*out = ov;
	return 0;
fail:
	if (made && ov->fd >= 0 && still_named(ov->fd, ov->path))
		unlink(ov->path);        /* nothing of ours is left behind */
	overlay_close(ov);
	return ret;
}

void overlay_remove(struct overlay *ov)
{
	if (ov && ov->fd >= 0 && still_named(ov->fd, ov->path))
		unlink(ov->path);
}

const struct overlay_header *overlay_header(const struct overlay *ov)
{
	return &ov->h;
}

const char *overlay_path(const struct overlay *ov)
{
	return ov->path;
}

bool overlay_in_use(const struct overlay *ov)
{
	return ov->in_use;
}

/* ------------------------------------------------------------------ */
/* reads                                                                */
/* ------------------------------------------------------------------ */

static int base_read(struct overlay *ov, void *buf, size_t len, uint64_t off, uint64_t *bad_off)
{
	uint64_t bad = off;
	int ret;

	if (!ov->base)
		return -EINVAL;
	ret = volume_read(ov->base, buf, len, off, &bad);
	if (ret && bad_off)
		*bad_off = bad;
	return ret;
}

/* End of the run of granules that are all in the overlay (in) or all not,
 * starting at pos, within [pos, end). */
static uint64_t run_end(const struct overlay *ov, uint64_t pos, uint64_t end, bool in)
{
	uint64_t gb = ov->h.granule_bytes;
	uint64_t e = (pos / gb + 1) * gb;

	while (e < end && bit_test(ov, e / gb) == in)
		e += gb;
	return e < end ? e : end;
}

int overlay_read(struct overlay *ov, void *buf, size_t len, uint64_t off, uint64_t *bad_off)
{
	uint8_t *p = buf;
	uint64_t pos = off, end = off + len;

	if (end > ov->h.id.array_bytes || end < off)
		return -EINVAL;
	while (pos < end) {
		bool in = bit_test(ov, pos / ov->h.granule_bytes);
		uint64_t e = run_end(ov, pos, end, in);
		size_t n = (size_t)(e - pos);
		int ret;

		if (in) {
			ret = pread_all(ov->fd, p, n, ov->h.data_start + pos);
			if (ret && bad_off)
				*bad_off = pos;
		} else {
			ret = base_read(ov, p, n, pos, bad_off);
		}
		if (ret)
			return ret;
		p += n;
		pos = e;
	}
	return 0;
}

static int overlay_vol_read(struct volume *v, void *buf, size_t len, uint64_t off, uint64_t *bad_off,
			    const struct volume_observer *obs)
{
	struct overlay *ov = (struct overlay *)((char *)v - offsetof(struct overlay, vol));

	(void)obs;      /* it cannot say which member a byte came from */
	return overlay_read(ov, buf, len, off, bad_off);
}


struct volume *overlay_volume(struct overlay *ov)
{
	return &ov->vol;
}

/* ------------------------------------------------------------------ */
/* writes                                                               */
/* ------------------------------------------------------------------ */

static int put_bytes(struct overlay *ov, const void *p, size_t len, uint64_t off)
{
	return pwrite_all(ov->fd, p, len, ov->h.data_start + off);
}

/* The first write to granule g (its lock held, its bit clear): the whole
 * granule goes to the file, the array's bytes around [pos, pend) with the
 * new ones, and only then the bit is set. */
static int first_write(struct overlay *ov, uint64_t g, const uint8_t *p, uint64_t pos, uint64_t pend)
{
	uint64_t gstart = g * ov->h.granule_bytes;
	uint64_t gend = gstart + ov->h.granule_bytes;
	uint8_t *tmp;
	int ret;

	if (gend > ov->h.id.array_bytes)
		gend = ov->h.id.array_bytes;
	if (pos == gstart && pend == gend) {
		ret = put_bytes(ov, p, (size_t)(pend - pos), pos);
	} else {
		tmp = malloc((size_t)(gend - gstart));
		if (!tmp)
			return -ENOMEM;
		ret = base_read(ov, tmp, (size_t)(gend - gstart), gstart, NULL);
		if (!ret) {
			memcpy(tmp + (pos - gstart), p, (size_t)(pend - pos));
			ret = put_bytes(ov, tmp, (size_t)(gend - gstart), gstart);
		}
		free(tmp);
		if (!ret)
			atomic_fetch_add(&ov->copied, 1);
	}
	if (!ret)
		bit_set(ov, g);
	return ret;
}

/* [pos, pend) inside granule g. */
static int write_granule(struct overlay *ov, uint64_t g, const uint8_t *p, uint64_t pos, uint64_t pend)
{
	pthread_mutex_t *lock = &ov->locks[g % OVERLAY_LOCKS];
	int ret;

	if (bit_test(ov, g))
		return put_bytes(ov, p, (size_t)(pend - pos), pos);
	pthread_mutex_lock(lock);
	if (bit_test(ov, g))             /* another writer got there first */
		ret = put_bytes(ov, p, (size_t)(pend - pos), pos);
	else
		ret = first_write(ov, g, p, pos, pend);
	pthread_mutex_unlock(lock);
	return ret;
}

ssize_t overlay_write(struct overlay *ov, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;
	uint64_t gb = ov->h.granule_bytes, end, pos = off;
	int ret = 0;

	if (!ov->writable)
		return -EROFS;
	if (off >= ov->h.id.array_bytes)
		return len ? -ENOSPC : 0;
	if (len > ov->h.id.array_bytes - off)
		len = (size_t)(ov->h.id.array_bytes - off);
	end = off + len;
	atomic_fetch_add(&ov->writes, 1);
	while (pos < end && !ret) {
		uint64_t g = pos / gb;
		uint64_t pend = (g + 1) * gb < end ? (g + 1) * gb : end;

		ret = write_granule(ov, g, p + (pos - off), pos, pend);
		if (!ret)
			pos = pend;
	}
	if (pos > off) {
		atomic_store(&ov->last_write_ns, realtime_ns());
		atomic_fetch_add(&ov->write_bytes, pos - off);
		atomic_fetch_add(&ov->gen, 1);
	}
	if (ret)
		atomic_fetch_add(&ov->write_errors, 1);
	/* a failure after some granules: report what was written, as write(2) */
	return pos > off ? (ssize_t)(pos - off) : ret;
}

/* ------------------------------------------------------------------ */
/* sync                                                                 */
/* ------------------------------------------------------------------ */

struct bitmap_snap {
	size_t n;
	size_t *page;                    /* [n] page numbers, owned */
	uint8_t *bytes;                  /* [n * BITMAP_PAGE], owned */
};

/* Take the pages changed since the last sync (their flags cleared). */
static int snap_take(struct overlay *ov, struct bitmap_snap *s)
{
	size_t want = 0;

	memset(s, 0, sizeof(*s));
	for (size_t p = 0; p < ov->npages; p++)
		want += atomic_load(&ov->dirty[p]) ? 1 : 0;
	if (!want)
		return 0;
	s->page = malloc(want * sizeof(*s->page));
	s->bytes = malloc(want * BITMAP_PAGE);
	if (!s->page || !s->bytes)
		return -ENOMEM;
	/* pages dirtied after the count stay dirty for the next sync */
	for (size_t p = 0; p < ov->npages && s->n < want; p++) {
		if (!atomic_exchange(&ov->dirty[p], 0))
			continue;
		encode_page(ov, p, s->bytes + s->n * BITMAP_PAGE);
		s->page[s->n++] = p;
	}
	return 0;
}

static void snap_undo(struct overlay *ov, const struct bitmap_snap *s)
{
	for (size_t i = 0; i < s->n; i++)
		atomic_store(&ov->dirty[s->page[i]], 1);
}

static void snap_free(struct bitmap_snap *s)
{
	free(s->page);
	free(s->bytes);
}

/* Data first (every bit in the snapshot was set after its granule's
 * write returned, so this fdatasync covers them), then bitmap and header. */
static int persist(struct overlay *ov, const struct bitmap_snap *s)
{
	uint64_t lw = atomic_load(&ov->last_write_ns);
	int ret = 0;

	if (fdatasync(ov->fd))
		return -errno;
	for (size_t i = 0; i < s->n && !ret; i++)
		ret = pwrite_all(ov->fd, s->bytes + i * BITMAP_PAGE, BITMAP_PAGE,
				  ov->h.bitmap_offset + (uint64_t)s->page[i] * BITMAP_PAGE);
	if (ret)
		return ret;
	if (lw > ov->h.modified_ns) {
		ov->h.modified_ns = lw;
		atomic_store(&ov->modified_ns, lw);
		ret = write_header(ov);
		if (ret)
			return ret;
	}
	return fdatasync(ov->fd) ? -errno : 0;
}

int overlay_sync(struct overlay *ov)
{
	struct bitmap_snap s;
	uint64_t g;
	int ret;

	if (!ov->writable)
		return 0;
	pthread_mutex_lock(&ov->sync_lock);
	g = atomic_load(&ov->gen);
	if (g == atomic_load(&ov->synced_gen)) {
		pthread_mutex_unlock(&ov->sync_lock);
		return 0;
	}
	ret = snap_take(ov, &s);
	if (!ret)
		ret = persist(ov, &s);
	if (ret) {
		snap_undo(ov, &s);
		atomic_fetch_add(&ov->sync_errors, 1);
		atomic_store(&ov->last_sync_error, ret);
	} else {
		atomic_store(&ov->synced_gen, g);
		atomic_fetch_add(&ov->syncs, 1);
		atomic_store(&ov->last_sync_error, 0);
	}
	snap_free(&s);
	pthread_mutex_unlock(&ov->sync_lock);
	return ret;
}

int overlay_discard(struct overlay *ov)
{
	uint64_t size = ov->h.data_start + ov->h.id.array_bytes;
	int ret = 0;

	if (!ov->writable)
		return -EROFS;
	pthread_mutex_lock(&ov->sync_lock);
	/* cutting the file to its header and back makes bitmap and data holes */
	if (ftruncate(ov->fd, OVERLAY_HEADER_BYTES) || ftruncate(ov->fd, (off_t)size))
		ret = -errno;
	for (size_t w = 0; w < ov->nwords; w++)
		atomic_store(&ov->bitmap[w], 0);
	for (size_t p = 0; p < ov->npages; p++)
		atomic_store(&ov->dirty[p], 0);
	atomic_store(&ov->written, 0);
	ov->h.modified_ns = realtime_ns();
	atomic_store(&ov->modified_ns, ov->h.modified_ns);
	if (!ret)
		ret = write_header(ov);
	if (!ret && fsync(ov->fd))
		ret = -errno;
	atomic_store(&ov->synced_gen, atomic_load(&ov->gen));
	pthread_mutex_unlock(&ov->sync_lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* counts and JSON                                                      */
/* ------------------------------------------------------------------ */

static uint64_t bytes_covered(const struct overlay *ov, uint64_t written)
{
	uint64_t gb = ov->h.granule_bytes, last = ov->h.granules - 1;
	uint64_t bytes = written * gb;

	/* the last granule may be shorter than the others */
	if (written && bit_test(ov, last))
		bytes -= gb - (ov->h.id.array_bytes - last * gb);
	return bytes;
}

void overlay_get_stats(const struct overlay *ov, struct overlay_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->granules_written = atomic_load(&ov->written);
	st->bytes_covered = bytes_covered(ov, st->granules_written);
	st->writes = atomic_load(&ov->writes);
	st->write_bytes = atomic_load(&ov->write_bytes);
	st->write_errors = atomic_load(&ov->write_errors);
	st->granules_copied = atomic_load(&ov->copied);
	st->syncs = atomic_load(&ov->syncs);
	st->sync_errors = atomic_load(&ov->sync_errors);
	st->unsynced = atomic_load(&ov->gen) != atomic_load(&ov->synced_gen);
	st->last_sync_error = atomic_load(&ov->last_sync_error);
	st->last_write_ns = atomic_load(&ov->last_write_ns);
	st->modified_ns = atomic_load(&ov->modified_ns);
}

char *overlay_fmt_time(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	char s[24];

	if (!gmtime_r(&t, &tm) || !strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(s, sizeof(s), "?");
	snprintf(buf, len, "%s.%03uZ", s, (unsigned)(ns / 1000000u % 1000u));
	return buf;
}

