/* candidates.h - the first steps of assembly (engine-internal): what each
 * image holds, grouped into arrays, the array chosen, and members whose
 * metadata does not say which device they are (IMSM) placed.
 *
 * A candidate is one place where metadata was found - an image, or a
 * partition of one - and one volume there: a disk of a container with two
 * volumes is two candidates, a NAS disk with md members in three
 * partitions is three.  With a manual geometry a candidate is one image
 * given.  Candidates group into arrays by their uuid (and format family).
 */
#ifndef RAIDIMG_CANDIDATES_H
#define RAIDIMG_CANDIDATES_H

#include <stdbool.h>
#include <stddef.h>

#include "array.h"

struct candidate {
	const char *path;            /* the image as given (the caller's string) */
	int image;                   /* its index among the images given */
	struct source *src;          /* the image or a slice of it: a reference of ours */
	int partition;               /* 0: the whole image */
	char where[200];             /* "" or "partition 3, GPT ..." */
	bool has_meta;
	struct member_meta meta;     /* role and dev_number as placed (cand_place) */
	char ident[200];              /* how it was placed when its metadata does not say */
	int group;                   /* index into cand_set.groups, -1 without metadata */
	bool used;                   /* taken into the array */
};

struct cand_group {
	int fresh;                   /* the candidate with the highest events */
	int n;                       /* candidates in the group */
	bool supported;              /* RAID4/5/6 in a state raidimg reads */
	char why[240];               /* why not */
};

struct cand_set {
	int n;
	struct candidate *c;         /* [n], owned */
	int ngroups;
	struct cand_group *groups;   /* [ngroups], owned */
	int nimages;
	struct found_image *images;  /* [nimages], owned (err: why nothing was found
	                                there, when lenient) */
};

/* Find the candidates of the images srcs[0..n) (named names[i]), taking
 * the sources over (in every case).  With a manual geometry, one per
 * image.  Else every image must hold metadata somewhere (in the image or
 * a partition); lenient (examine) notes in images[].err what is wrong with
 * an image instead of failing, and takes NULL for an image that could not
 * be opened.  Then grouped.  0 or -errno with the message
 * in err naming the image; cand_set_free() in every case. */
int cand_collect(struct source **srcs, const char *const *names, int n, const struct assemble_opts *o, bool lenient,
		 struct cand_set *cs, char *err, size_t errlen);
void cand_set_free(struct cand_set *cs);

/* The group the commands read: the one o->g.array names (uuid or name),
 * the only one, or the only RAID4/5/6 one (then *note says so).  0 with
 * *group set, or -EINVAL with a message listing the arrays in err. */
int cand_choose(const struct cand_set *cs, const struct assemble_opts *o, int *group, char *note, size_t notelen,
		char *err, size_t errlen);

/* Place the candidates of group g by their identity, as the format's
 * place() says (a no-op for formats whose members say their own slot):
 * each one's own role from its own metadata (IMSM: its drive serial from
 * --serial, the image's own record of it or its file name), its
 * dev_number in the freshest member's view.  One image left over with one
 * drive of the disk table without an image, the rest of a RAID5 complete:
 * placed there when its data completes the others' parity (note says so;
 * note may be NULL).  0, or (strict) -EINVAL with a message naming the
 * images that cannot be placed and the drive serials no image was found
 * for (and why the data does not place it). */
int cand_place(struct cand_set *cs, int g, const struct assemble_opts *o, bool strict, char *note, size_t notelen,
	       char *err, size_t errlen);

/* "raid5, imsm, uuid 7ab6cff9:..., 'Volume0'" */
void cand_group_desc(const struct cand_set *cs, int g, char *buf, size_t len);

#endif
