/* source.h - a member image: where its bytes come from.
 *
 * A vtable so that every kind of image (raw, zstd seekable, EWF/E01
 * evidence files, split raw pieces, a slice of another image; a fault
 * injector in tests) sits behind the same calls.  Sources are opened
 * read-only unless SOURCE_WRITE is asked for explicitly.
 *
 * Untrusted ranges: bytes a source holds but that are not the original's
 * (a GNU ddrescue mapfile's unrescued blocks, the sectors an EWF imager
 * recorded as acquisition errors, md's bad-block log).  They are a sorted
 * range list on the source (in its own byte coordinates) with the files
 * that said so; reads of them succeed (the source returns what it stores,
 * usually zeros) and the array's member reads (engine/member_io.h) treat
 * them as lost, so they are rebuilt from parity like a missing member.
 * They are added while the array is assembled, before any read; a slice
 * takes its parent's ranges in its window when it is made.
 */
#ifndef RAIDIMG_SOURCE_H
#define RAIDIMG_SOURCE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ranges.h"

struct source;

struct source_ops {
	const char *kind;                 /* "raw", "zstd", ... */
	/* Read exactly len bytes at off (looping over short reads).
	 * Reading past the end of the image is -EIO (a truncated image).
	 * Returns 0 or -errno. */
	int (*pread)(struct source *s, void *buf, size_t len, uint64_t off);
	/* Vectored form: fill iov[0..iovcnt) from consecutive bytes at off. */
	int (*preadv)(struct source *s, const struct iovec *iov, int iovcnt, uint64_t off);
	/* Write exactly len bytes at off.  -EROFS unless opened SOURCE_WRITE. */
	int (*pwrite)(struct source *s, const void *buf, size_t len, uint64_t off);
	int (*sync)(struct source *s);
	/* Set the image size (sparse).  -EROFS unless writable. */
	int (*truncate)(struct source *s, uint64_t size);
	void (*close)(struct source *s);  /* frees s and everything it owns */
	/* The file descriptor holding the image's bytes as they are (for
	 * zero-copy transfers), or -1; *base gets the offset in it of the
	 * source's byte 0 (a slice of an image starts past 0).  NULL op = -1. */
	int (*raw_fd)(struct source *s, uint64_t *base);
	/* The serial number of the drive the image was taken from, as the
	 * image's own container recorded it (an E01 header's), into buf
	 * (NUL-terminated): 0, or -ENOENT when the image records none.  NULL
	 * op: none (raw and zstd images record nothing; the drive serial that
	 * places IMSM members then comes from --serial or the file name). */
	int (*serial)(struct source *s, char *buf, size_t len);
};

/* Who says some of a source's bytes cannot be trusted. */
struct untrusted_origin {
	const char *kind;       /* UNTRUSTED_* (static) */
	char *path;             /* the file that says so (a mapfile, the first EWF segment,
				   the image holding md's log); owned */
	struct range_list r;    /* what it marked, in the source's coordinates; owned */
};

#define UNTRUSTED_DDRESCUE_MAP "ddrescue-map"
#define UNTRUSTED_EWF_ACQUIRY "ewf-acquiry-errors"
#define UNTRUSTED_MD_BBLOG "md-bad-block-log"

struct source_untrusted {
	struct range_list r;    /* every origin's ranges, merged */
	int norigins;
	struct untrusted_origin *origins;   /* [norigins], owned */
};

struct source {
	const struct source_ops *ops;
	char *path;         /* absolute path, owned (a slice: its name) */
	uint64_t size;      /* bytes */
	int writable;
	void *priv;         /* the implementation's */
	_Atomic int refs;   /* references beyond the first (source_ref) */
	/* The files holding the bytes, in order (EWF segments, split pieces);
	 * NULL: just path.  Owned by the implementation (source_files()). */
	char *const *files;
	int nfiles;
	struct source_untrusted *untrusted;   /* NULL: every byte trusted; owned */
	/* A slice (source_slice) of parent, from byte base of it: a partition
	 * of a whole-disk image.  NULL for an image of its own.  The slice
	 * holds a reference on parent. */
	struct source *parent;
	uint64_t base;
};

enum {
	SOURCE_READ = 0,
	SOURCE_WRITE = 1,      /* open O_RDWR: only for repair */
};

/* Open path as the right kind of source: a zstd seekable image
 * (source_zstd.c) when it is one, else a raw one (plain file, block
 * device).  On error returns -errno and, if err is not NULL, a message
 * naming the file. */
int source_open(const char *path, int flags, struct source **out, char *err, size_t errlen);
/* What source_open would open path as: "ewf", "split", "zstd" or "raw"
 * (by its first bytes and, for split pieces, its name and siblings). */
const char *source_kind_of(const char *path);
int source_open_raw(const char *path, int flags, struct source **out, char *err, size_t errlen);
/* A writable raw source over a duplicate of fd, a new image being written
 * (create, rebuild: the fd of an outfile, which names and commits it).
 * Not registered as evidence. */
int source_wrap_fd(int fd, const char *path, struct source **out, char *err, size_t errlen);
/* A zstd seekable-format image (source_zstd.c), read-only; its size is the
 * decompressed size.  source_open picks it for files starting with the zstd
 * magic (see source.c). */
int source_open_zstd(const char *path, int flags, struct source **out, char *err, size_t errlen);
/* An EWF (EnCase E01) image through libewf (source_ewf.c), read-only:
 * path is its first segment (NAME.E01), the others are found beside it and
 * checked (a missing, truncated or foreign segment is an error naming it).
 * Chunks whose checksum fails are read errors (-EIO) of this member, said
 * once on stderr; the sectors the imager recorded as acquisition errors
 * are untrusted ranges. */
int source_open_ewf(const char *path, int flags, struct source **out, char *err, size_t errlen);
/* What an EWF file says about itself (source_ewf.c), or NULL when s is not
 * an EWF source. */
struct ewf_info;
const struct ewf_info *source_ewf_info(const struct source *s);
/* A raw image split into numbered pieces (source_split.c), read-only: path
 * is its first piece (NAME.001 or NAME.000, three digits or more); the
 * numbered siblings follow in order.  A gap, a piece of another size or an
 * empty one is an error naming the piece. */
int source_open_split(const char *path, int flags, struct source **out, char *err, size_t errlen);

/* A hook called by source_open on every source it opened, which may
 * replace *s by a source of its own that wraps it (then owning the old
 * one): 0, or -errno with a message (source_open then fails).  The test
 * build of raidimg installs tests/helpers/source_fault.c's, which makes
 * chosen reads fail; raidimg itself installs none.  Set it before any
 * source is opened (not thread-safe). */
typedef int (*source_open_hook_fn)(struct source **s, char *err, size_t errlen);
void source_set_open_hook(source_open_hook_fn hook);

static inline int source_pread(struct source *s, void *buf, size_t len, uint64_t off)
{
	return s->ops->pread(s, buf, len, off);
}
static inline int source_preadv(struct source *s, const struct iovec *iov, int iovcnt, uint64_t off)
{
	return s->ops->preadv(s, iov, iovcnt, off);
}
static inline int source_pwrite(struct source *s, const void *buf, size_t len, uint64_t off)
{
	return s->ops->pwrite(s, buf, len, off);
}
/* Take one more reference: each is given back with source_close, the
 * last frees the source.  Returns s. */
struct source *source_ref(struct source *s);
void source_close(struct source *s);  /* NULL is fine */

/* The files holding s's bytes (*n of them): its segments or pieces, the
 * parent's files for a slice, else its path. */
char *const *source_files(const struct source *s, int *n);

/* ---- untrusted ranges (source_untrusted.c) ---- */

/* Add the ranges r (in s's coordinates) said by the file path (kind:
 * UNTRUSTED_*).  0 or -ENOMEM. */
int source_untrusted_add(struct source *s, const struct range_list *r, const char *kind, const char *path);
/* Give dst the untrusted ranges of parent seen through the window
 * [off, off + len) of it (a slice), origin by origin.  0 or -ENOMEM. */
int source_untrusted_window(struct source *dst, const struct source *parent, uint64_t off, uint64_t len);
void source_untrusted_free(struct source *s);
/* The first untrusted range of s meeting [off, off + len), or NULL. */
static inline const struct byte_range *source_untrusted_first(const struct source *s, uint64_t off,
							      uint64_t len)
{
	return s->untrusted ? range_list_first(&s->untrusted->r, off, len) : NULL;
}
/* Read the GNU ddrescue mapfile at mapfile (a side file, registered as
 * evidence) and add its unrescued blocks to s.  The map must describe s:
 * an image shorter than the map's rescued part, or longer than the map, is
 * refused.  0 or -errno with a message naming the mapfile in err. */
int source_attach_ddrescue_map(struct source *s, const char *mapfile, char *err, size_t errlen);
/* The mapfile ddrescue users keep beside image: IMAGE.map, or STEM.map
 * (the name less its last extension).  0 with *mapfile (malloc'ed) when
 * one exists, -ENOENT when none, -EEXIST with a message when both do. */
int source_find_ddrescue_map(const char *image, char **mapfile, char *err, size_t errlen);
/* The drive serial the image records (see source_ops.serial; a slice
 * asks its parent): 0 or -ENOENT. */
int source_serial(struct source *s, char *buf, size_t len);
/* The image file a source reads: s itself, or for a slice the image it is
 * a slice of. */
struct source *source_image(struct source *s);

/* A source of bytes [off, off + len) of parent (a partition of a
 * whole-disk image), named name (copied; e.g. "disk0.img partition 3").
 * It takes a reference on parent; reads past its end are -EIO as for any
 * image; writes go to the parent when it is writable.  0 or -errno with a
 * message. */
int source_slice(struct source *parent, uint64_t off, uint64_t len, const char *name, struct source **out,
		 char *err, size_t errlen);

#endif
