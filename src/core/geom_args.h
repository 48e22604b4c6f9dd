/* geom_args.h - the options that say which array to read, parsed and
 * checked without any I/O: the member images (and 'missing' placeholders),
 * a manual geometry for images without metadata (--level, --layout,
 * --chunk, --order, --data-offset, --member-size), --force and
 * --reshape-position; which array (--array) when the images hold several,
 * and the drive serials that place IMSM members (--serial).  The command line (cli/array_args.c) hands these to
 * assembly; the fuzz target tests/fuzz/fuzz_geometry.c drives them
 * directly. */
#ifndef RAIDIMG_GEOM_ARGS_H
#define RAIDIMG_GEOM_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

/* getopt codes of the options (cli.h puts them in the option tables) */
enum {
	GEOM_OPT_LEVEL = 0x1001, GEOM_OPT_LAYOUT, GEOM_OPT_CHUNK, GEOM_OPT_ORDER, GEOM_OPT_DATA_OFFSET,
	GEOM_OPT_MEMBER_SIZE, GEOM_OPT_FORCE, GEOM_OPT_RESHAPE_POS, GEOM_OPT_MAP, GEOM_OPT_NO_MAPS,
	GEOM_OPT_RAID_DEVICES, GEOM_OPT_ARRAY, GEOM_OPT_SERIAL,
};

/* --map IMAGE=MAPFILE: a GNU ddrescue mapfile for one image (argv's strings). */
struct geom_map {
	const char *image;          /* as given (matched against the images by file) */
	char *map;                  /* owned (the part after the last '=') */
};

/* --serial IMAGE=SERIAL: the drive serial of an image (argv's strings) */
struct geom_serial {
	const char *image;           /* as given, owned */
	char serial[64];
};

struct geom_args {
	/* as given */
	bool have_level, have_layout, have_chunk;
	const char *layout_name;     /* --layout (argv's string) */
	const char *order_arg;       /* --order as given (argv's string) */
	/* the result */
	bool manual;                 /* a manual geometry: --level was given */
	struct layout_geom geom;     /* manual: level, layout, chunk; raid_disks = norder */
	uint64_t data_offset;        /* bytes, every member (manual) */
	uint64_t member_bytes;       /* 0: the smallest image less data_offset (manual) */
	int order[LAYOUT_MAX_DISKS]; /* manual: role -> index into paths, -1 missing */
	int norder;
	int raid_devices;            /* --raid-devices (mdadm's name): the member count
	                                the images and --order must make; 0: not given */
	bool force;                  /* use stale / faulty-marked members, loudly */
	bool have_reshape_bytes;     /* read as if md had recorded this reshape position */
	uint64_t reshape_bytes;
	const char **paths;          /* the images, without 'missing'; the array is owned,
	                                the strings are argv's */
	int npaths;
	/* ddrescue mapfiles: those named with --map; --no-maps: no others
	 * (IMAGE.map / STEM.map beside an image are taken otherwise) */
	struct geom_map maps[LAYOUT_MAX_DISKS];
	int nmaps;
	bool no_maps;
	const char *array;           /* --array UUID|NAME (argv's), NULL: not given */
	struct geom_serial *serials; /* --serial, [nserials], owned */
	int nserials;
};

/* The values as mdadm spells them too (create shares them):
 * --level: 4, 5, 6 or raid4, raid5, raid6 (any case); 0 or -1 with the
 * problem in err.
 * --chunk: a size with a suffix (64K, 1M, 128s), or a plain number of KiB
 * as mdadm's --chunk takes it (64 = 64 KiB); a power of two from 4 KiB to
 * 1 GiB.  0 or -1 with the problem in err. */
int geom_parse_level(const char *arg, int *level, char *err, size_t errlen);
int geom_parse_chunk(const char *arg, uint32_t *bytes, char *err, size_t errlen);

/* Defaults: left-symmetric, 512 KiB chunks, no images. */
void geom_args_init(struct geom_args *ga);
/* Take one option (opt: GEOM_OPT_*).  1 taken, 0 not one of these, -1 bad
 * value (the problem in err). */
int geom_args_opt(struct geom_args *ga, int opt, const char *arg, char *err, size_t errlen);
/* Take the remaining arguments as images ('missing' for an absent member
 * with a manual geometry) and check the whole: --order must name every
 * image exactly once, and --raid-devices (if given) must be the number of
 * members the images and 'missing' (or --order) make.  0, or -1 with the
 * problem in err. */
int geom_args_prepare(struct geom_args *ga, int argc, char **argv, char *err, size_t errlen);
void geom_args_free(struct geom_args *ga);

#endif
