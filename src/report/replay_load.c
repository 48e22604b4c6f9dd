/* replay_load.c - read a record back for `raidimg replay` (record.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "outfile.h"
#include "record.h"
#include "util.h"

#define RECORD_MAX_BYTES (64u << 20)    /* a record of 384 members is ~0.3 MB */

/* ------------------------------------------------------------------ */
/* replay                                                               */
/* ------------------------------------------------------------------ */

/* Field getters: false (and a message) when absent or of the wrong type. */
struct jctx {
	const char *file;
	char *err;
	size_t errlen;
	bool bad;
};

static json_object *jget(struct jctx *c, json_object *o, const char *key, json_type t, bool required)
{
	json_object *v;

	if (c->bad)
		return NULL;
	if (!o || !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
		if (required) {
			fmt_err(c->err, c->errlen, "%s: not a raidimg record: no \"%s\"", c->file, key);
			c->bad = true;
		}
		return NULL;
	}
	if (!json_object_is_type(v, t) && !(t == json_type_double && json_object_is_type(v, json_type_int))) {
		fmt_err(c->err, c->errlen, "%s: \"%s\" has the wrong type", c->file, key);
		c->bad = true;
		return NULL;
	}
	return v;
}

/* An integer field in [min, max] (json-c saturates what does not fit in
 * 64 bits: that is out of range too). */
static int64_t jint(struct jctx *c, json_object *o, const char *key, bool required, int64_t min, int64_t max)
{
	json_object *v = jget(c, o, key, json_type_int, required);
	int64_t x;

	if (!v)
		return 0;
	x = json_object_get_int64(v);
	if (x < min || x > max || x == INT64_MAX || x == INT64_MIN) {
		fmt_err(c->err, c->errlen, "%s: \"%s\" is %s, out of range (%" PRId64 "..%" PRId64 ")", c->file, key,
			json_object_get_string(v), min, max);
		c->bad = true;
		return 0;
	}
	return x;
}

#define U63 (INT64_MAX - 1)     /* sizes and offsets: what an off_t holds */

/* A path as recorded: the exact bytes of KEY_hex (o's, or entry i of
 * the array hexs) when the record has them (paths that are not UTF-8),
 * else the string str.  malloc'ed, NULL (with c->bad set) when broken. */
static char *recorded_path(struct jctx *c, const char *str, json_object *hex)
{
	size_t n = hex && json_object_is_type(hex, json_type_string) ? strlen(json_object_get_string(hex)) : 0;
	char *out;

	if (!n)
		return strdup(str);
	out = malloc(n / 2 + 1);
	if (out && hex_decode(json_object_get_string(hex), out, n / 2 + 1)) {
		fmt_err(c->err, c->errlen, "%s: a \"_hex\" path is not hex", c->file);
		c->bad = true;
		free(out);
		return NULL;
	}
	return out;
}

/* Is path among the first n of list? */
static bool listed(char *const *list, int n, const char *path)
{
	for (int i = 0; i < n; i++)
		if (list[i] && !strcmp(list[i], path))
			return true;
	return false;
}

static void jcopy(struct jctx *c, json_object *o, const char *key, char *dst, size_t len)
{
	json_object *v = jget(c, o, key, json_type_string, false);

	if (v)
		snprintf(dst, len, "%s", json_object_get_string(v));
}

static void load_assembly(struct jctx *c, json_object *as, struct replay_spec *rs)
{
	json_object *ps = jget(c, as, "paths", json_type_array, true);
	json_object *f = jget(c, as, "force", json_type_boolean, false);
	json_object *m = jget(c, as, "manual", json_type_boolean, false);
	json_object *arr = jget(c, as, "array", json_type_string, false);
	json_object *ser = jget(c, as, "serials", json_type_array, false);

	rs->ao.open_flags = SOURCE_READ;
	rs->ao.g.force = f && json_object_get_boolean(f);
	rs->ao.g.manual = m && json_object_get_boolean(m);
	if (ps && json_object_array_length(ps) > 2 * LAYOUT_MAX_DISKS) {
		fmt_err(c->err, c->errlen, "%s: \"paths\" lists %zu images (at most %d)", c->file,
			json_object_array_length(ps), 2 * LAYOUT_MAX_DISKS);
		c->bad = true;
		return;
	}
	if (arr && !rs->ao.g.manual)
		rs->array = strdup(json_object_get_string(arr));
	for (size_t i = 0; ser && i < json_object_array_length(ser) && i < LAYOUT_MAX_DISKS; i++) {
		json_object *s = json_object_array_get_idx(ser, i);
		json_object *img = jget(c, s, "image", json_type_string, true);
		json_object *sn = jget(c, s, "serial", json_type_string, true);
		struct geom_serial *gs;

		if (!img || !sn)
			return;
		gs = realloc(rs->ao.g.serials, (i + 1) * sizeof(*gs));
		if (!gs)
			return;
		rs->ao.g.serials = gs;
		gs[i].image = strdup(json_object_get_string(img));
		snprintf(gs[i].serial, sizeof(gs[i].serial), "%s", json_object_get_string(sn));
		rs->ao.g.nserials = (int)i + 1;
		if (!gs[i].image)
			return;
	}
	rs->ao.g.array = rs->array;
	if (ps) {
		json_object *hs = jget(c, as, "paths_hex", json_type_array, false);

		rs->npaths = (int)json_object_array_length(ps);
		rs->paths = calloc((size_t)rs->npaths + 1, sizeof(*rs->paths));
		for (int i = 0; rs->paths && i < rs->npaths; i++) {
			json_object *p = json_object_array_get_idx(ps, (size_t)i);
			const char *str = json_object_is_type(p, json_type_string) ? json_object_get_string(p) : "";
			char *path = recorded_path(c, str, hs ? json_object_array_get_idx(hs, (size_t)i) : NULL);

			if (!path)
				return;
			if (listed(rs->paths, i, path)) {
				fmt_err(c->err, c->errlen, "%s: \"paths\" names %s twice", c->file, str);
				c->bad = true;
				free(path);
				return;
			}
			rs->paths[i] = path;
		}
	}
	if (rs->ao.g.manual) {
		json_object *ord = jget(c, as, "order", json_type_array, true);

		rs->ao.g.geom.level = (int)jint(c, as, "level", true, 4, 6);
		rs->ao.g.geom.layout = (int)jint(c, as, "layout", true, 0, 255);
		rs->ao.g.geom.chunk_bytes = (uint32_t)jint(c, as, "chunk_bytes", true, 512, 1 << 30);
		/* (records before 0.1.0's vocabulary said "data_offset") */
		rs->ao.g.data_offset = (uint64_t)jint(c, as, as && json_object_object_get_ex(as, "data_offset", NULL) ?
						       "data_offset" : "data_offset_bytes", false, 0, U63);
		rs->ao.g.member_bytes = (uint64_t)jint(c, as, "member_bytes", false, 0, U63);
		for (size_t i = 0; ord && i < json_object_array_length(ord) && i < LAYOUT_MAX_DISKS; i++) {
			int64_t v = json_object_get_int64(json_object_array_get_idx(ord, i));

			if (v < -1 || v >= rs->npaths) {
				fmt_err(c->err, c->errlen, "%s: \"order\" names image %" PRId64 " of %d", c->file, v,
					rs->npaths);
				c->bad = true;
				return;
			}
			rs->ao.g.order[rs->ao.g.norder++] = (int)v;
		}
		rs->ao.g.geom.raid_disks = rs->ao.g.norder;
	}
}

/* The files of a member beyond its image (its "files" and "maps"): each
 * must keep its sha256 too; a mapfile is applied again as recorded. */
static void load_member_files(struct jctx *c, json_object *o, const char *key, const char *image,
			      struct replay_spec *rs)
{
	json_object *list = jget(c, o, key, json_type_array, false);

	for (size_t i = 0; list && i < json_object_array_length(list) && !c->bad; i++) {
		json_object *e = json_object_array_get_idx(list, i);
		json_object *path = jget(c, e, "path", json_type_string, true);
		json_object *hex = jget(c, e, "path_hex", json_type_string, false);
		struct replay_member *m = &rs->members[rs->nmembers];

		if (!path)
			return;
		jcopy(c, e, "sha256", m->sha256, sizeof(m->sha256));
		m->role = -2;           /* no role of its own */
		m->path = recorded_path(c, json_object_get_string(path), hex);
		if (!m->path)
			return;
		rs->nmembers++;
		if (!strcmp(key, "maps") && rs->ao.g.nmaps < LAYOUT_MAX_DISKS) {
			struct geom_map *gm = &rs->ao.g.maps[rs->ao.g.nmaps++];

			gm->image = strdup(image);
			gm->map = strdup(json_object_get_string(path));
		}
	}
}

/* Entries the members list will take: members, their files and maps. */
static size_t member_entries(json_object *ms)
{
	size_t n = ms ? json_object_array_length(ms) : 0, total = n;

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(ms, i), *l;

		if (json_object_object_get_ex(o, "files", &l) && json_object_is_type(l, json_type_array))
			total += json_object_array_length(l);
		if (json_object_object_get_ex(o, "maps", &l) && json_object_is_type(l, json_type_array))
			total += json_object_array_length(l);
	}
	return total;
}

static int path_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* No file named twice among the images, segments, pieces and mapfiles
 * (a record listing one image 10000 times would hash it 10000 times). */
static void refuse_twice(struct jctx *c, struct replay_spec *rs)
{
	char **all = calloc((size_t)rs->nmembers + 1, sizeof(*all));

	if (!all)
		return;
	for (int i = 0; i < rs->nmembers; i++)
		all[i] = rs->members[i].path;
	qsort(all, (size_t)rs->nmembers, sizeof(*all), path_cmp);
	for (int i = 1; i < rs->nmembers && !c->bad; i++) {
		if (!strcmp(all[i], all[i - 1])) {
			fmt_err(c->err, c->errlen, "%s: \"members\" names %s twice", c->file, all[i]);
			c->bad = true;
		}
	}
	free(all);
}

static void load_members(struct jctx *c, json_object *ms, struct replay_spec *rs)
{
	size_t n = ms ? json_object_array_length(ms) : 0;

	if (n > 2 * LAYOUT_MAX_DISKS) {
		fmt_err(c->err, c->errlen, "%s: \"members\" lists %zu images (at most %d)", c->file, n,
			2 * LAYOUT_MAX_DISKS);
		c->bad = true;
		return;
	}
	if (member_entries(ms) > (1u << 16)) {
		fmt_err(c->err, c->errlen, "%s: \"members\" lists %zu files (at most 65536)", c->file,
			member_entries(ms));
		c->bad = true;
		return;
	}
	rs->members = calloc(member_entries(ms) + 1, sizeof(*rs->members));
	if (!rs->members)
		return;
	/* the mapfiles are those recorded, and no others */
	rs->ao.g.no_maps = true;
	for (size_t i = 0; i < n && !c->bad; i++) {
		json_object *o = json_object_array_get_idx(ms, i);
		json_object *role = jget(c, o, "role", json_type_int, false);
		json_object *path = jget(c, o, "path", json_type_string, false);
		json_object *hex = jget(c, o, "path_hex", json_type_string, false);
		json_object *part = jget(c, o, "partition", json_type_int, false);
		struct replay_member *m = &rs->members[rs->nmembers];
		char *p;

		if (!path)
			continue;           /* a missing member: no image */
		p = recorded_path(c, json_object_get_string(path), hex);
		if (!p)
			return;
		m->partition = part ? (int)jint(c, o, "partition", false, 0, 1 << 20) : 0;
		for (int j = 0; j < rs->nmembers; j++) {
			if (!strcmp(rs->members[j].path, p) && rs->members[j].partition == m->partition) {
				free(p);
				fmt_err(c->err, c->errlen, "%s: \"members\" names %s%s twice", c->file,
					json_object_get_string(path), m->partition ? " (one partition)" : "");
				c->bad = true;
				return;
			}
		}
		jcopy(c, o, "sha256", m->sha256, sizeof(m->sha256));
		m->role = role ? (int)jint(c, o, "role", false, -1, LAYOUT_MAX_DISKS - 1) : -1;
		m->path = p;
		rs->nmembers++;
		load_member_files(c, o, "files", p, rs);
		load_member_files(c, o, "maps", p, rs);
	}
	if (!c->bad)
		refuse_twice(c, rs);
}

int replay_load(const char *path, struct replay_spec *rs, char *err, size_t errlen)
{
	struct jctx c = { .file = path, .err = err, .errlen = errlen };
	json_object *root, *arr, *range, *out, *opts, *cmd;

	enum json_tokener_error jerr;
	char *text;
	size_t len;
	bool nul;
	int ret;

	memset(rs, 0, sizeof(*rs));
	ret = side_file_read(path, "record", RECORD_MAX_BYTES, true, &text, &len, err, errlen);
	if (ret)
		return ret;
	jerr = json_tokener_success;
	nul = strlen(text) != len;
	root = nul ? NULL : json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (!root) {
		fmt_err(err, errlen, "%s: not a raidimg record: %s", path,
			nul ? "it holds NUL bytes" : json_tokener_error_desc(jerr));
		return -EINVAL;
	}
	if (!json_object_is_type(root, json_type_object) ||
	    !jget(&c, root, "raidimg_record", json_type_int, true)) {
		if (!c.bad)
			fmt_err(err, errlen, "%s: not a raidimg record", path);
		json_object_put(root);
		return -EINVAL;
	}
	cmd = jget(&c, root, "command", json_type_string, true);
	rs->command = strdup(cmd ? json_object_get_string(cmd) : "");
	if (cmd && !jget(&c, root, "assembly", json_type_object, false) && !c.bad) {
		fmt_err(err, errlen, "%s: a record of `raidimg %s`, which assembles no array: only cat, export "
			"and examine runs can be replayed", path, json_object_get_string(cmd));
		c.bad = true;
	}
	load_assembly(&c, jget(&c, root, "assembly", json_type_object, true), rs);
	arr = jget(&c, root, "array", json_type_object, true);
	rs->level = (int)jint(&c, arr, "level", true, 4, 6);
	rs->layout = (int)jint(&c, arr, "layout", true, 0, 255);
	rs->raid_disks = (int)jint(&c, arr, "raid_disks", true, 1, LAYOUT_MAX_DISKS);
	rs->chunk_bytes = (uint32_t)jint(&c, arr, "chunk_bytes", true, 512, 1 << 30);
	rs->array_bytes = (uint64_t)jint(&c, arr, "array_bytes", true, 0, U63);
	load_members(&c, jget(&c, root, "members", json_type_array, true), rs);
	range = jget(&c, root, "range", json_type_object, false);
	rs->offset = range ? (uint64_t)jint(&c, range, "offset", true, 0, U63) : 0;
	rs->length = range ? (uint64_t)jint(&c, range, "length", true, 0, U63) : rs->array_bytes;
	jcopy(&c, root, "array_sha256", rs->array_sha256, sizeof(rs->array_sha256));
	out = jget(&c, root, "output", json_type_object, false);
	jcopy(&c, out, "format", rs->output_format, sizeof(rs->output_format));
	opts = jget(&c, root, "options", json_type_object, false);
	rs->zstd_level = (int)jint(&c, opts, "zstd_level", false, -131072, 22);
	rs->zstd_frame_bytes = (uint32_t)jint(&c, opts, "frame_bytes", false, 0, 1 << 30);
	json_object_put(root);
	if (!c.bad && (!rs->paths || !rs->members || !rs->command)) {
		fmt_err(err, errlen, "%s: out of memory", path);
		replay_spec_free(rs);
		return -ENOMEM;
	}
	if (c.bad) {
		replay_spec_free(rs);
		return -EINVAL;
	}
	return 0;
}

void replay_spec_free(struct replay_spec *rs)
{
	for (int i = 0; rs->paths && i < rs->npaths; i++)
		free(rs->paths[i]);
	for (int i = 0; rs->members && i < rs->nmembers; i++)
		free(rs->members[i].path);
	free(rs->paths);
	free(rs->members);
	free(rs->command);
	free(rs->array);
	rs->ao.g.paths = NULL;          /* rs->paths, freed above (cmd_replay points there) */
	geom_args_free(&rs->ao.g);
	memset(rs, 0, sizeof(*rs));
}

