/* provenance.h - provenance maps: for every array range written, whether
 * it came straight from a member (which), was rebuilt from parity (from
 * which members), or could not be read.  Format in provenance.c. */
#ifndef RAIDIMG_PROVENANCE_H
#define RAIDIMG_PROVENANCE_H

#include <stdbool.h>
#include <stdint.h>

#include "array.h"
#include "volume.h"

/* ---- provenance maps ---- */

struct provenance;

/* Open a map written to path (JSON lines, see provenance.c) for reads of
 * a through a pipeline with nslots slots.  0 or -errno (message printed). */
int provenance_open(struct provenance **out, const char *path, const struct array *a, int nslots);
/* The observers of the pipeline's reads, one per slot (nslots of them):
 * struct pipeline's slot_obs. */
const struct volume_observer *provenance_observers(struct provenance *p);
/* In array order, once the segment in slot was consumed (written): add its
 * ranges to the map and make the slot ready for its next segment; ret as
 * the read returned.  0 or -errno. */
int provenance_emit(struct provenance *p, int slot, int ret);
/* Flush the map and give it its name (commit), or drop it (an unfinished
 * command: nothing is left).  0 or -errno (message printed; a map that
 * could not be written whole is removed); NULL is fine. */
int provenance_close(struct provenance *p, bool commit);

#endif
