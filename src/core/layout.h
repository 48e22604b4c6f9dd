/* layout.h - pure md RAID5/6 block-mapping math (no I/O).
 *
 * Vocabulary (md's): the array is cut into chunks of chunk_bytes; k = data
 * members per stripe (n-1 for RAID5, n-2 for RAID6); stripe s holds array
 * chunks s*k .. s*k+k-1; every member stores stripe s at member offset
 * s*chunk_bytes past its data_offset.  Which member ("disk", numbered by role)
 * holds P, Q and each data chunk of a stripe depends on the layout number.
 */
#ifndef RAIDIMG_LAYOUT_H
#define RAIDIMG_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	LAYOUT_MAX_DISKS = 256,     /* largest raid_disks accepted anywhere */
};

/* md's ALGORITHM_* numbers */
enum md_layout {
	LAYOUT_LEFT_ASYMMETRIC = 0,
	LAYOUT_RIGHT_ASYMMETRIC = 1,
	LAYOUT_LEFT_SYMMETRIC = 2,
	LAYOUT_RIGHT_SYMMETRIC = 3,
	LAYOUT_PARITY_0 = 4,        /* parity-first */
	LAYOUT_PARITY_N = 5,        /* parity-last (also RAID4) */
	LAYOUT_ROTATING_ZERO_RESTART = 8,   /* RAID6 ddf */
	LAYOUT_ROTATING_N_RESTART = 9,      /* RAID6 ddf */
	LAYOUT_ROTATING_N_CONTINUE = 10,    /* RAID6 ddf */
	LAYOUT_LEFT_ASYMMETRIC_6 = 16,
	LAYOUT_RIGHT_ASYMMETRIC_6 = 17,
	LAYOUT_LEFT_SYMMETRIC_6 = 18,
	LAYOUT_RIGHT_SYMMETRIC_6 = 19,
	LAYOUT_PARITY_0_6 = 20,
};

struct layout_geom {
	int level;             /* 4, 5 or 6 (4 is handled as RAID5 parity-last) */
	int layout;            /* enum md_layout */
	int raid_disks;        /* n */
	uint32_t chunk_bytes;  /* power of two, >= 512 (RAID6 >= 4096 not required) */
};

/* Where everything of one stripe lives.  Disks are numbered by role 0..n-1. */
struct stripe_map {
	int n;                 /* raid_disks */
	int k;                 /* data chunks per stripe */
	int p_disk;            /* disk holding P */
	int q_disk;            /* disk holding Q, -1 for RAID5 */
	int data_disk[LAYOUT_MAX_DISKS];   /* data index d (0..k-1) -> disk */
	int disk_data[LAYOUT_MAX_DISKS];   /* disk -> data index, -1 for P/Q */
	/* RAID6 only: Q = sum over slots j of 2^j * block(slot j).
	 * q_slots = k for md layouts, n for ddf layouts (8-10, whose P and Q
	 * slots hold zero blocks).  disk_slot[disk] = slot of that disk's
	 * data block, -1 for P and Q disks. */
	int q_slots;
	int disk_slot[LAYOUT_MAX_DISKS];
};

/* 0 if (level, layout, raid_disks, chunk_bytes) is a geometry md supports,
 * else -EINVAL.  If why is not NULL it receives a static description. */
int layout_check(const struct layout_geom *g, const char **why);

/* Data chunks per stripe (k).  g must be valid. */
int layout_data_disks(const struct layout_geom *g);

/* Fill *m for stripe number `stripe`.  g must be valid. */
void layout_map_stripe(const struct layout_geom *g, uint64_t stripe, struct stripe_map *m);

/* Position of an array byte offset. */
struct layout_pos {
	uint64_t stripe;       /* stripe (row) number */
	int data_index;        /* d, 0..k-1 */
	int disk;              /* member role holding it */
	uint32_t chunk_off;    /* byte offset inside the chunk */
	uint64_t member_off;   /* byte offset in the member's data area
	                          (add data_offset for the image offset) */
};
void layout_locate(const struct layout_geom *g, uint64_t array_off, struct layout_pos *pos);

/* Name <-> number.  Names are mdadm's ("left-symmetric", "ls", "la",
 * "parity-first", "ddf-zero-restart", "left-symmetric-6", ...).
 * layout_from_name also accepts a decimal number.  Returns 0 / -EINVAL. */
int layout_from_name(int level, const char *name, int *layout);
const char *layout_name(int level, int layout);   /* never NULL ("unknown") */

#endif
