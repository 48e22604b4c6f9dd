/* array.h - an assembled md RAID4/5/6 array over member sources.
 *
 * Assembly (array_assemble) turns a list of member images (or a manual
 * geometry) into a struct array: members ordered by role, missing/stale/
 * faulty ones known.  array_read() serves any byte range of the array,
 * rebuilding from parity when members are missing or fail to read.
 * array_read is thread-safe: many threads may read at once.
 */
#ifndef RAIDIMG_ARRAY_H
#define RAIDIMG_ARRAY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "geom_args.h"
#include "layout.h"
#include "source.h"
#include "util.h"
#include "volume.h"

/* Requests and bytes asked of members, counted by whoever asks (the read
 * path into the array's, the scrub into its own). */
struct io_tally {
	_Atomic uint64_t requests, bytes;
};

enum member_state {
	MEMBER_OK = 0,         /* in use */
	MEMBER_MISSING,        /* no image for this role (absent or "missing") */
	MEMBER_FAULTY,         /* metadata of the freshest member says faulty/removed */
	MEMBER_STALE,          /* events too old; left out (used only with --force) */
	MEMBER_REBUILDING,     /* recovery_offset < size: valid only below it */
};

struct array_member {
	int role;
	enum member_state state;
	struct source *src;          /* NULL unless the array reads it; owned */
	char *path;                  /* image path given by the user, owned, may be NULL */
	uint64_t data_offset;        /* bytes */
	uint64_t image_bytes;        /* size of the image */
	/* Bytes of the data area that can be read: less than member_bytes when
	 * the image is truncated or the member was being rebuilt
	 * (recovery_offset).  Chunks beyond it are rebuilt from parity. */
	uint64_t readable_bytes;
	bool has_meta;
	struct member_meta meta;     /* valid if has_meta */
	int partition;               /* 0: the whole image; else the partition of it */
	char where[200];             /* "" or "partition 3, GPT 'Linux RAID', sectors 2048-22527" */
	char ident[200];              /* how it was placed when its metadata does not say
	                                (IMSM): "serial member0 (file name)", else "" */
	char note[160];              /* why it is not used, for the user */
	/* Untrusted ranges of its image inside the data area the array uses
	 * (source.h), counted at assembly. */
	uint64_t untrusted_bytes, untrusted_ranges;
	/* counters (atomic: updated by readers); untrusted_reads: member
	 * reads that met an untrusted range (not read errors) */
	_Atomic uint64_t reads, read_bytes, read_errors, untrusted_reads;
};

/* Images that were given but are not part of the array (spares, other arrays
 * refused with --force, ...): reported by examine. */
struct array_extra {
	char *path;
	int partition;               /* 0: the whole image, else that partition of it */
	char note[240];
};

struct array {
	struct volume vol;           /* the array as a volume (array_volume()) */
	struct layout_geom geom;
	int k;                       /* data chunks per stripe */
	uint64_t member_bytes;       /* data bytes per member used by the array */
	uint64_t array_bytes;        /* k * member_bytes */
	uint64_t stripes;            /* member_bytes / chunk_bytes */
	int nmissing;                /* roles not readable (any state but OK) */
	int redundancy;              /* 1 (RAID4/5) or 2 (RAID6) */
	bool has_meta;
	char meta_format[8];
	uint8_t uuid[16];
	char name[33];
	/* a volume of a container (IMSM, DDF): the container, the volume's
	 * index in it and how many it holds */
	bool in_container;
	uint8_t container_uuid[16];
	int volume_index, container_volumes;
	/* md's array_size when the metadata sets one smaller than the
	 * members hold (IMSM: the volume's size), else 0 */
	uint64_t array_cap_bytes;
	uint64_t events;             /* the freshest member's */
	uint64_t resync_offset;      /* bytes of member data area; UINT64_MAX clean */
	struct array_member *members;   /* [raid_disks], indexed by role; owned */
	int nextra;
	struct array_extra *extra;   /* owned */
	char warnings[2048];         /* things the user must be told (forced stale members...) */
	char notes[2048];            /* things said for the record (mapfiles taken...) */
	/* counters */
	_Atomic uint64_t bytes_served, stripes_rebuilt, read_errors_recovered, read_errors_fatal;
	/* array bytes served by rebuilding untrusted member bytes from parity */
	_Atomic uint64_t untrusted_bytes_rebuilt;
	struct io_tally io;          /* member requests of the read path */
	/* An array caught in the middle of a reshape (md's "Reshape pos'n"):
	 * this struct describes the geometry after it (the superblock's
	 * raid_disks, new layout and chunk, data_offset + new_offset), prev the
	 * geometry before it.  Array bytes below reshape_bytes are laid out the
	 * new way, the rest the old way (the other way round when
	 * reshape_backwards).  array_bytes is the smaller of the two sizes, as
	 * md serves until the reshape ends.  prev shares the member sources and
	 * paths of the roles both have (it owns only those of members leaving
	 * in a shrinking reshape, roles >= this raid_disks) and counts reads
	 * into this array's counters (stats_of).  NULL when no reshape is in
	 * progress. */
	struct array *prev;
	uint64_t reshape_bytes;
	bool reshape_backwards;
	struct array *stats_of;      /* prev only: the array it belongs to */
};

struct assemble_opts {
	/* the images and how to place them: md metadata, or a manual geometry
	 * (g.manual); --force, --reshape-position, --array, --serial */
	struct geom_args g;
	int open_flags;              /* SOURCE_READ normally */
};

/* Room for assembly's messages (a list of the arrays found, say). */
#define ARRAY_ERR_MAX ERR_MAX

/* Assemble the images o->g.paths[0..o->g.npaths).  Each image is looked
 * at whole and, when it holds a partition table, partition by partition;
 * what is found there is grouped into arrays by their uuid.  With several
 * arrays, o->g.array picks one (its uuid or name); without it the only
 * RAID4/5/6 one is taken (and said in warnings), else it is an error
 * listing them.  On failure returns -errno and a message in err naming the
 * file and the problem.  On success *out is owned by the caller:
 * array_free(). */
int array_assemble(const struct assemble_opts *o, struct array **out, char *err, size_t errlen);

/* Open the images g->paths[0..g->npaths) as every command opens members
 * (open_flags: source.h's SOURCE_*): an image named twice, or a piece or
 * segment of another image named too, is refused; each image gets its
 * ddrescue mapfile (--map, else IMAGE.map or STEM.map beside it unless
 * --no-maps), said in a line of *notes that ends with fate (what becomes of
 * the blocks not rescued).  0 with *srcs (g->npaths sources) and *notes
 * (NULL when there is nothing to say), both the caller's to free (each
 * source with source_close); or -errno with the message in err. */
int array_open_images(const struct geom_args *g, int open_flags, const char *fate, struct source ***srcs,
		      char **notes, char *err, size_t errlen);

/* ---- what the images hold (examine) ---- */

/* One place where metadata was found: an image or a partition of it, and
 * one volume there (a container's disk is found once per volume). */
struct found_member {
	int image;                   /* index into the images given */
	int partition;               /* 0: the whole image */
	char where[200];             /* as probe_hit.where */
	int group;                   /* index into found_set.arrays */
	struct member_meta meta;     /* role: as placed (IMSM: by serial; META_ROLE_UNPLACED if not) */
	char ident[200];              /* how it was placed, "" when its metadata says */
};

struct found_array {
	struct member_meta meta;     /* the freshest member's view */
	int members;                 /* found_members in it */
	bool supported;              /* RAID4/5/6 in a state raidimg reads */
	char why[240];               /* why not */
};

/* One image given, as found. */
struct found_image {
	uint64_t bytes;              /* its size (0 if it could not be opened) */
	char table[8];               /* its partition table: "gpt", "dos", "" */
	int nparts;                  /* partitions in it */
	char *err;                   /* why nothing was found in it, or NULL; owned */
	int err_code;                /* with err: -ENOENT nothing there, -EBADMSG a
	                                checksum that does not match, else -errno */
	char *note;                  /* why its partition table was not used or what is
	                                wrong with it, or NULL; owned */
};

struct found_set {
	int nimages;
	struct found_image *images;  /* [nimages], owned */
	int nmembers;
	struct found_member *members;   /* owned */
	int narrays;
	struct found_array *arrays;     /* owned */
	int chosen;                  /* the array the commands read (as array_assemble
	                                would pick it), -1 when none can be picked */
	char choice_err[ARRAY_ERR_MAX];  /* why not; or, chosen, a note on the choice */
};

/* Look at the images of o (as array_assemble does) and list what they
 * hold.  0 (images that hold nothing or broken metadata are said in
 * image_err), or -ENOMEM.  found_set_free() in every case. */
int array_discover(const struct assemble_opts *o, struct found_set *fs);
void found_set_free(struct found_set *fs);
/* The drive serial of the image at path as assembly takes it when the
 * image records none: --serial PATH=SERIAL (1), else its file name
 * without its directory and image extensions (0). */
int array_serial_for(const struct assemble_opts *o, const char *path, char *out, size_t len);

/* "raid5 imsm 7ab6cff9:... 'Volume0'" for messages. */
void found_array_desc(const struct member_meta *m, char *buf, size_t len);
/* The same over sources already open (tests; o->g.paths are ignored):
 * srcs[i] named names[i].  The sources are taken over in every case (the
 * array keeps those it uses and closes the others). */
int array_assemble_sources(struct source **srcs, const char *const *names, int n, const struct assemble_opts *o,
			   struct array **out, char *err, size_t errlen);
void array_free(struct array *a);    /* NULL is fine */

/* The array as a volume (volume.h): reads are array_read_observed.
 * array_volume_init() sets it up (assembly does, once the size is known). */
static inline struct volume *array_volume(struct array *a)
{
	return &a->vol;
}
void array_volume_init(struct array *a);

/* Read len bytes at array offset off into buf (any alignment).  Reads past
 * array_bytes are clamped by the caller: off+len must be <= array_bytes.
 * Returns 0, or -EIO when redundancy cannot cover the failed/missing members
 * (*bad_off, if not NULL, then gets the first array offset not served). */
int array_read(struct array *a, void *buf, size_t len, uint64_t off, uint64_t *bad_off);

/* array_read telling obs (may be NULL) where each byte came from: per
 * chunk, VOLUME_SRC_MEMBER with the member read, VOLUME_SRC_REBUILT with
 * the members used, VOLUME_SRC_UNREADABLE (volume.h). */
/* Bytes one thread that calls array_read may come to hold in its
 * per-thread buffers (parity sink, rebuild scratch; freed when the thread
 * ends): for sizing a pool of readers to a memory limit.  The rebuild
 * scratch is counted only when the array has something to rebuild
 * (missing members, untrusted ranges); a healthy array's reader needs it
 * only after a read error, and then gets ENOMEM if it cannot be had. */
size_t array_read_thread_bytes(const struct array *a);

int array_read_observed(struct array *a, void *buf, size_t len, uint64_t off, uint64_t *bad_off,
			const struct volume_observer *obs);

/* Where array byte off lives: the member (role) whose chunk holds it and
 * the offset in that member's data area (the geometry of its side of a
 * reshape).  The array the role belongs to is a itself, or a->prev for
 * the part read in the geometry before a reshape (*geom_of). */
void array_locate(const struct array *a, uint64_t off, int *role, uint64_t *moff, const struct array **geom_of);

/* ---- overlays of an array (array_overlay.c, overlay.h) ---- */
struct overlay;
struct overlay_identity;
struct overlay_open_opts;
/* The identity an overlay of a records (md uuid and geometry, or a manual
 * geometry's data offset). */
void array_overlay_identity(const struct array *a, struct overlay_identity *id);
/* Open (writable and create in opts, else read-only: NULL opts) the
 * overlay at path over a: it must be a's.  overlay_open's contract. */
int array_overlay_open(const char *path, struct array *a, const struct overlay_open_opts *opts,
		       struct overlay **out, bool *created, char *err, size_t errlen);

/* The member's image file (for a partition: the whole image's) as an
 * absolute path (malloc'ed), NULL if it has none. */
char *array_member_path(const struct array_member *m);
/* "active", "missing", "faulty", "stale", "rebuilding" */
const char *member_state_name(enum member_state s);

/* Human-readable verdict: "complete", "degraded", "not assemblable" */
const char *array_verdict(const struct array *a);

#endif
