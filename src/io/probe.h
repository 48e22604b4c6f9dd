/* probe.h - the metadata on a member source: format.h's formats read the
 * source through a dev_reader (and write a superblock into one). */
#ifndef RAIDIMG_PROBE_H
#define RAIDIMG_PROBE_H

#include "format.h"
#include "source.h"

/* A dev_reader over src (which must outlive it).  hints: DEV_HINT_WHOLE
 * for an image of its own, not a slice (set here). */
void source_dev_reader(struct source *src, struct dev_reader *dev);
/* format_probe over src: every volume found. */
int probe_source(struct source *src, struct format_found *out, char *err, size_t errlen);
/* The first volume only (md's own formats have one), for noting what an
 * image carries (a manual geometry's members, a mountpoint file): the
 * metadata where it belongs only - no search for a displaced DDF anchor,
 * which reads the last 32 MiB of an image without metadata.  -ENOENT with
 * "no md superblock" when there is none; another -errno with a message when
 * there is one but it is broken. */
int metadata_probe(struct source *src, struct member_meta *out, char *err, size_t errlen);

/* md's bad-block log of the member src whose metadata is m (format.h):
 * its entries as untrusted ranges of src (UNTRUSTED_MD_BBLOG), *added the
 * number of ranges.  0 (also when there is no log), or -errno with a
 * message naming src in err (a log md itself would refuse, unreadable). */
int probe_bblog(struct source *src, const struct member_meta *m, size_t *added, char *err, size_t errlen);
/* Where metadata was found on an image: the image itself (partition 0) or
 * one of the partitions of its partition table, and what is there. */
struct probe_hit {
	struct source *src;          /* the image or a slice of it: a reference of ours */
	int partition;               /* 0: the whole image; else Linux's partition number */
	char where[200];             /* "" for the whole image, else e.g. "partition 3, GPT
	                                'Linux RAID', sectors 2048-22527" */
	struct format_found found;
};

struct probe_result {
	int nhits;
	struct probe_hit *hits;      /* owned: probe_result_free() */
	int nparts;                  /* partitions in its table (0: none) */
	char table[8];               /* the partition table: "gpt", "dos", "" */
	char note[1100];             /* why the partition table was not used, or what
	                                was wrong with it ("GPT: primary header ...:
	                                backup header used"), "" */
};

/* Every place of img (named name in messages) holding RAID metadata: the
 * whole image and, when it holds an MBR or GPT partition table, each
 * partition (0.90/1.0 superblocks at a partition's end, 1.1/1.2 at its
 * start, containers at its end).  A superblock seen both through the whole
 * image and through a partition (a 0.90 or 1.0 member in the last
 * partition, ending at the image's end) is the partition's.  0 with
 * out->nhits >= 0 (none: err says what was looked for), or -errno with a
 * message naming name and the problem: metadata that is there but broken
 * (in the image or in a partition), or a broken partition table (a
 * partition past the end of the image, overlapping partitions...) when the
 * image itself holds no metadata (a member with data from byte 0 may hold
 * a partition table of the array's: then it is only noted). */
int probe_image(struct source *img, const char *name, struct probe_result *out, char *err, size_t errlen);
void probe_result_free(struct probe_result *r);

/* Write m's superblock (m->fmt builds it) into dst, an image of
 * dev_sectors, and sync it.  0, or -errno with a message naming dst in err
 * (-EOPNOTSUPP: the format cannot be written). */
int write_superblock(struct source *dst, const struct member_meta *m, uint64_t dev_sectors, char *err,
		     size_t errlen);

/* Container formats: write into dst (an image of dev_sectors) the
 * metadata of a replacement for role m->role made from tmpl's (a current
 * member's image: m->fmt->replace).  id: the new device's identity (IMSM:
 * its drive serial).  Synced.  0, or -errno with a message naming dst or
 * tmpl in err. */
int write_replacement_metadata(struct source *dst, struct source *tmpl, const struct member_meta *m, const char *id,
			       uint64_t dev_sectors, char *err, size_t errlen);

#endif
