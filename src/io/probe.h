/* probe.h - the metadata on a member source: format.h's formats read the
 * source through a dev_reader (and write a superblock into one). */
#ifndef RAIDIMG_PROBE_H
#define RAIDIMG_PROBE_H

#include "format.h"
#include "source.h"

/* A dev_reader over src (which must outlive it). */
void source_dev_reader(struct source *src, struct dev_reader *dev);
/* format_probe over src: every volume found. */
int probe_source(struct source *src, struct format_found *out, char *err, size_t errlen);
/* The first volume only (md's own formats have one).  -ENOENT with "no md
 * superblock" when there is none; another -errno with a message when there
 * is one but it is broken. */
int metadata_probe(struct source *src, struct member_meta *out, char *err, size_t errlen);

/* md's bad-block log of the member src whose metadata is m (format.h):
 * its entries as untrusted ranges of src (UNTRUSTED_MD_BBLOG), *added the
 * number of ranges.  0 (also when there is no log), or -errno with a
 * message naming src in err (a log md itself would refuse, unreadable). */
int probe_bblog(struct source *src, const struct member_meta *m, size_t *added, char *err, size_t errlen);

/* Write m's superblock (m->fmt builds it) into dst, an image of
 * dev_sectors, and sync it.  0, or -errno with a message naming dst in err
 * (-EOPNOTSUPP: the format cannot be written). */
int write_superblock(struct source *dst, const struct member_meta *m, uint64_t dev_sectors, char *err,
		     size_t errlen);

#endif
