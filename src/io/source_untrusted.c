/* source_untrusted.c - untrusted ranges of a source (source.h) and the GNU
 * ddrescue mapfiles that give most of them (core/ddrescue_map.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ddrescue_map.h"
#include "outfile.h"
#include "source.h"
#include "sysio.h"
#include "util.h"

int source_untrusted_add(struct source *s, const struct range_list *r, const char *kind, const char *path)
{
	struct source_untrusted *u = s->untrusted;
	struct untrusted_origin *o;

	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		s->untrusted = u;
	}
	o = realloc(u->origins, (size_t)(u->norigins + 1) * sizeof(*o));
	if (!o)
		return -ENOMEM;
	u->origins = o;
	o = &u->origins[u->norigins];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->path = strdup(path);
	if (!o->path)
		return -ENOMEM;
	u->norigins++;
	for (size_t i = 0; i < r->n; i++)
		if (range_list_add(&o->r, r->v[i].off, r->v[i].len) || range_list_add(&u->r, r->v[i].off, r->v[i].len))
			return -ENOMEM;
	return 0;
}

void source_untrusted_free(struct source *s)
{
	struct source_untrusted *u = s->untrusted;

	if (!u)
		return;
	for (int i = 0; i < u->norigins; i++) {
		free(u->origins[i].path);
		range_list_free(&u->origins[i].r);
	}
	free(u->origins);
	range_list_free(&u->r);
	free(u);
	s->untrusted = NULL;
}

int source_untrusted_window(struct source *dst, const struct source *parent, uint64_t off, uint64_t len)
{
	const struct source_untrusted *u = parent->untrusted;

	for (int i = 0; u && i < u->norigins; i++) {
		struct range_list w = { 0 };
		int ret = range_list_add_window(&w, &u->origins[i].r, off, len);

		if (!ret && w.n)
			ret = source_untrusted_add(dst, &w, u->origins[i].kind, u->origins[i].path);
		range_list_free(&w);
		if (ret)
			return ret;
	}
	return 0;
}

#define MAPFILE_MAX DDR_MAX_MAPFILE

int source_attach_ddrescue_map(struct source *s, const char *mapfile, char *err, size_t errlen)
{
	struct range_list r = { 0 };
	struct ddr_map m;
	char perr[512];
	char *text, *abs;
	size_t len;
	int ret;

	ret = side_file_read(mapfile, "ddrescue mapfile", MAPFILE_MAX, true, &text, &len, err, errlen);
	if (ret)
		return ret;
	ret = ddr_map_parse(text, len, s->size, &m, perr, sizeof(perr));
	free(text);
	if (ret)
		return fmt_fail(err, errlen, ret == -ENOMEM ? -ENOMEM : -EINVAL, "%s (ddrescue mapfile of %s): %s",
				mapfile, s->path, perr);
	for (unsigned i = 0; !ret && i < m.nbad; i++)
		ret = range_list_add(&r, m.bad[i].pos, m.bad[i].size);
	abs = abs_path(mapfile);
	if (!ret)
		ret = source_untrusted_add(s, &r, UNTRUSTED_DDRESCUE_MAP, abs ? abs : mapfile);
	free(abs);
	range_list_free(&r);
	ddr_map_free(&m);
	if (ret)
		return fmt_fail(err, errlen, ret, "%s: out of memory", mapfile);
	return 0;
}

static bool regular_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

int source_find_ddrescue_map(const char *image, char **mapfile, char *err, size_t errlen)
{
	size_t n = strlen(image);
	const char *base = strrchr(image, '/'), *dot;
	char *full = malloc(n + 5), *stem = NULL;
	bool has_full, has_stem = false;

	*mapfile = NULL;
	if (!full)
		return fmt_fail(err, errlen, -ENOMEM, "out of memory");
	memcpy(full, image, n);
	memcpy(full + n, ".map", 5);
	has_full = regular_file(full);
	base = base ? base + 1 : image;
	dot = strrchr(base, '.');
	if (dot && dot > base && strcmp(dot, ".map")) {
		size_t sl = (size_t)(dot - image);

		stem = malloc(sl + 5);
		if (!stem) {
			free(full);
			return fmt_fail(err, errlen, -ENOMEM, "out of memory");
		}
		memcpy(stem, image, sl);
		memcpy(stem + sl, ".map", 5);
		has_stem = regular_file(stem);
	}
	if (has_full && has_stem) {
		fmt_err(err, errlen, "%s: both %s and %s are there: say which is its ddrescue mapfile with --map "
			"%s=MAPFILE (or --no-maps)", image, full, stem, image);
		free(full);
		free(stem);
		return -EEXIST;
	}
	if (has_full) {
		*mapfile = full;
		free(stem);
		return 0;
	}
	free(full);
	if (has_stem) {
		*mapfile = stem;
		return 0;
	}
	free(stem);
	return -ENOENT;
}
