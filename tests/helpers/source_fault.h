/* source_fault.h - test facility: member reads that fail on chosen ranges
 * (RAIDIMG_FAULTS, see the top of source_fault.c), installed as the open
 * hook of member sources (source.h) by the test build of raidimg
 * (raidimg_faulty.c). */
#ifndef RAIDIMG_SOURCE_FAULT_H
#define RAIDIMG_SOURCE_FAULT_H

#include "source.h"

/* If RAIDIMG_FAULTS names this image, replace *s by a source whose reads
 * fail on the given ranges (it owns the old one).  0 (also when not
 * named) or -errno with a message.  A source_open_hook_fn. */
int source_fault_wrap(struct source **s, char *err, size_t errlen);

#endif
