/* source.c - open a member image as the right kind of source. */
#include <errno.h>

#include "source.h"

int source_open(const char *path, int flags, struct source **out, char *err, size_t errlen)
{
	return source_open_raw(path, flags, out, err, errlen);
}

void source_close(struct source *s)
{
	if (s)
		s->ops->close(s);
}
