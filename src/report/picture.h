/* picture.h - where an array's bytes came from, drawn: a self-contained SVG
 * written by raidimg (`raidimg map --svg`, `--provenance FILE.svg`).
 *
 * Members across, offsets in each member's data area down; every band of a
 * member is coloured by where the array bytes it holds came from: read
 * straight from it (direct), rebuilt from parity because the member was
 * missing or failed to read (rebuilt), rebuilt because its bytes there are
 * untrusted (a ddrescue map, EWF acquisition errors, md's bad-block log),
 * or not served at all (lost).  A band holding several kinds takes the
 * worst (lost, untrusted, rebuilt, direct), so that a single bad sector
 * stays visible at any scale; bands holding no array bytes read (parity,
 * or not read) are grey.  A legend gives the totals, which are those of the
 * JSON provenance map of the same read (the sum of each source's lengths).
 */
#ifndef RAIDIMG_PICTURE_H
#define RAIDIMG_PICTURE_H

#include <stdint.h>
#include <stdio.h>

#include "array.h"
#include "volume.h"

enum picture_class { PIC_DIRECT, PIC_REBUILT, PIC_UNTRUSTED, PIC_LOST, PIC_NCLASSES };

struct picture;

/* A picture of a (which must outlive it).  0 or -ENOMEM. */
int picture_new(struct picture **out, const struct array *a);
/* Array bytes [off, off + len), all in one chunk of member role, came
 * from `how` (volume.h).  Thread-safe. */
void picture_add(struct picture *p, uint64_t off, uint64_t len, enum volume_src how, int role);
/* Bytes of each class so far. */
void picture_totals(struct picture *p, uint64_t totals[PIC_NCLASSES]);
/* The name of a class as the picture, the provenance map and `map --json`
 * say it: "direct", "rebuilt", "untrusted", "lost". */
const char *picture_class_name(enum picture_class c);
/* Write the SVG to f.  0, or -EIO if f failed. */
int picture_write_svg(struct picture *p, FILE *f);
void picture_free(struct picture *p);   /* NULL is fine */

#endif
