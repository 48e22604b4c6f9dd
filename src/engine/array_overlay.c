/* array_overlay.c - an array and its copy-on-write overlays (overlay.h):
 * the identity an overlay records, and opening one over the array. */
#include <stdio.h>
#include <string.h>

#include "array.h"
#include "overlay.h"

void array_overlay_identity(const struct array *a, struct overlay_identity *id)
{
	memset(id, 0, sizeof(*id));
	id->kind = a->has_meta ? OVERLAY_ID_MD : OVERLAY_ID_MANUAL;
	if (a->has_meta) {
		memcpy(id->uuid, a->uuid, sizeof(id->uuid));
		snprintf(id->name, sizeof(id->name), "%s", a->name);
		snprintf(id->meta_format, sizeof(id->meta_format), "%s", a->meta_format);
	} else {
		/* a manual geometry gives every member the same data offset */
		for (int r = 0; r < a->geom.raid_disks; r++) {
			if (a->members[r].state == MEMBER_OK) {
				id->data_offset = a->members[r].data_offset;
				break;
			}
		}
	}
	id->level = a->geom.level;
	id->layout = a->geom.layout;
	id->raid_disks = a->geom.raid_disks;
	id->chunk_bytes = a->geom.chunk_bytes;
	id->member_bytes = a->member_bytes;
	id->array_bytes = a->array_bytes;
}

int array_overlay_open(const char *path, struct array *a, const struct overlay_open_opts *base_opts,
		       struct overlay **out, bool *created, char *err, size_t errlen)
{
	struct overlay_identity id;
	struct overlay_open_opts oo = base_opts ? *base_opts : (struct overlay_open_opts){ 0 };

	array_overlay_identity(a, &id);
	oo.id = &id;
	oo.base = array_volume(a);
	return overlay_open(path, &oo, out, created, err, errlen);
}
