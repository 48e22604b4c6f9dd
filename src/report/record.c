/* record.c - JSON records of a run (record.h).
 *
 * Record format (JSON, one object; written with json-c):
 *   {"raidimg_record": 1, "tool": "raidimg", "version": "0.1.0",
 *    "command": "cat", "argv": [...], "cwd": "...",
 *    "started": "2026-11-29T22:40:01Z", "finished": "...",
 *    "assembly": {"paths": [absolute image paths, in the order given],
 *                 "force": false, "manual": false, "array": the array read
 *                 (--array: its uuid) or null, "serials": [{"image", "serial"}]
 *                 (--serial),
 *                 (manual only:) "level", "layout", "chunk_bytes",
 *                 "data_offset_bytes", "member_bytes", "order": [image index or -1]},
 *    "array": {"level", "layout", "layout_name", "raid_disks", "chunk_bytes",
 *              "member_bytes", "array_bytes", "verdict", "metadata", "array_uuid",
 *              "name", "events"},
 *    "members": [{"role": 0 (null: left out), "state", "path" (the image file),
 *                 "partition" (null: the whole image), "where", "placed_by", "kind",
 *                 "data_offset_bytes", "image_bytes", "note", "sha256", "file_bytes",
 *                 "files": [{"path","what":"segment"|"piece","sha256","file_bytes"}],
 *                 "maps": [{"path","sha256","file_bytes"}] (ddrescue mapfiles),
 *                 "untrusted_bytes", "untrusted_ranges"}],
 *    "range": {"offset", "length"}, "array_sha256": "...",
 *    "output": {"path" (null: stdout), "format", "sha256"},
 *    "options": {command specific},
 *    "result": {"exit_status": 0, "ok": true}}
 *
 */
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
#include "sysio.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* records                                                              */
/* ------------------------------------------------------------------ */

struct custody_record {
	json_object *root;      /* owned */
	json_object *members;   /* in root */
	json_object *options;   /* in root */
};

static void iso_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void jadd(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

/* A JSON string of s, valid whatever the bytes: json-c copies bytes that
 * are not UTF-8 as they are (invalid JSON), so they become U+FFFD. */
static json_object *jstr(const char *s)
{
	json_object *o;
	char *clean, *q;

	if (!s)
		return NULL;
	if (utf8_valid(s))
		return json_object_new_string(s);
	q = clean = malloc(3 * strlen(s) + 1);
	if (!clean)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_seq_len(p);

		if (n) {
			memcpy(q, p, n);
			q += n;
			p += n;
		} else {
			memcpy(q, "\xef\xbf\xbd", 3);     /* U+FFFD */
			q += 3;
			p++;
		}
	}
	*q = '\0';
	o = json_object_new_string(clean);
	free(clean);
	return o;
}

/* The hex of path's bytes, a JSON string (owned by the caller), or NULL
 * when the path is UTF-8 (its "path" says it all). */
static json_object *jhex(const char *path)
{
	json_object *o;
	char *hex;

	if (!path || utf8_valid(path))
		return NULL;
	hex = malloc(2 * strlen(path) + 1);
	if (!hex)
		return NULL;
	hex_encode(path, strlen(path), hex);
	o = json_object_new_string(hex);
	free(hex);
	return o;
}

/* key: path, and when it is not UTF-8 KEY_hex: its exact bytes. */
static void jpath(json_object *o, const char *key, const char *path)
{
	json_object *hex = jhex(path);
	char k[64];

	jadd(o, key, jstr(path));
	if (hex) {
		snprintf(k, sizeof(k), "%s_hex", key);
		jadd(o, k, hex);
	}
}

int record_new(struct custody_record **out, const char *command, int argc, char **argv)
{
	struct custody_record *r = calloc(1, sizeof(*r));
	json_object *av;
	char now[32], *cwd;

	if (!r)
		return -ENOMEM;
	r->root = json_object_new_object();
	av = json_object_new_array();
	r->options = json_object_new_object();
	r->members = json_object_new_array();
	if (!r->root || !av || !r->options || !r->members) {
		json_object_put(av);
		json_object_put(r->options);
		json_object_put(r->members);
		json_object_put(r->root);
		free(r);
		return -ENOMEM;
	}
	iso_time(now, sizeof(now));
	cwd = getcwd(NULL, 0);
	for (int i = 0; i < argc; i++)
		json_object_array_add(av, json_object_new_string(argv[i]));
	jadd(r->root, "raidimg_record", json_object_new_int(1));
	jadd(r->root, "tool", json_object_new_string("raidimg"));
	jadd(r->root, "version", json_object_new_string(PACKAGE_VERSION));
	jadd(r->root, "command", json_object_new_string(command));
	jadd(r->root, "argv", av);
	jadd(r->root, "cwd", jstr(cwd));
	jadd(r->root, "started", json_object_new_string(now));
	jadd(r->root, "options", r->options);
	free(cwd);
	*out = r;
	return 0;
}

void record_add_string(struct custody_record *r, const char *key, const char *val)
{
	jadd(r->options, key, jstr(val));
}

void record_add_int(struct custody_record *r, const char *key, int64_t val)
{
	jadd(r->options, key, json_object_new_int64(val));
}

void record_add_bool(struct custody_record *r, const char *key, bool val)
{
	jadd(r->options, key, json_object_new_boolean(val));
}

static json_object *assembly_json(const struct array *a, const struct assemble_opts *ao, const char *const *paths,
				  int npaths)
{
	json_object *o = json_object_new_object(), *ps = json_object_new_array(), *ser = json_object_new_array();
	char uuid[40];

	json_object *hs = json_object_new_array();
	bool any_hex = false;

	for (int i = 0; i < npaths; i++) {
		char *p = abs_path(paths[i]);
		json_object *h = jhex(p ? p : paths[i]);

		json_object_array_add(ps, jstr(p ? p : paths[i]));
		json_object_array_add(hs, h);
		any_hex = any_hex || h;
		free(p);
	}
	jadd(o, "paths", ps);
	/* the exact bytes of paths that are not UTF-8, where they are */
	if (any_hex)
		jadd(o, "paths_hex", hs);
	else
		json_object_put(hs);
	jadd(o, "force", json_object_new_boolean(ao->g.force));
	jadd(o, "manual", json_object_new_boolean(ao->g.manual));
	/* the array read, by its uuid: replay picks it again among others */
	meta_uuid_format(a->uuid, uuid);
	jadd(o, "array", a->has_meta ? jstr(uuid) : NULL);
	for (int i = 0; i < ao->g.nserials; i++) {
		json_object *s = json_object_new_object();
		char *p = abs_path(ao->g.serials[i].image);

		jadd(s, "image", jstr(p ? p : ao->g.serials[i].image));
		jadd(s, "serial", jstr(ao->g.serials[i].serial));
		json_object_array_add(ser, s);
		free(p);
	}
	jadd(o, "serials", ser);
	if (ao->g.manual) {
		json_object *ord = json_object_new_array();

		for (int i = 0; i < ao->g.norder; i++)
			json_object_array_add(ord, json_object_new_int(ao->g.order[i]));
		jadd(o, "level", json_object_new_int(ao->g.geom.level));
		jadd(o, "layout", json_object_new_int(ao->g.geom.layout));
		jadd(o, "chunk_bytes", json_object_new_int64(ao->g.geom.chunk_bytes));
		jadd(o, "data_offset_bytes", json_object_new_int64((int64_t)ao->g.data_offset));
		jadd(o, "member_bytes", json_object_new_int64((int64_t)ao->g.member_bytes));
		jadd(o, "order", ord);
	}
	return o;
}

static json_object *geometry_json(const struct array *a)
{
	json_object *o = json_object_new_object();
	char uuid[40];

	jadd(o, "level", json_object_new_int(a->geom.level));
	jadd(o, "layout", json_object_new_int(a->geom.layout));
	jadd(o, "layout_name", jstr(layout_name(a->geom.level, a->geom.layout)));
	jadd(o, "raid_disks", json_object_new_int(a->geom.raid_disks));
	jadd(o, "chunk_bytes", json_object_new_int64(a->geom.chunk_bytes));
	jadd(o, "member_bytes", json_object_new_int64((int64_t)a->member_bytes));
	jadd(o, "array_bytes", json_object_new_int64((int64_t)a->array_bytes));
	jadd(o, "verdict", jstr(array_verdict(a)));
	if (a->has_meta) {
		meta_uuid_format(a->uuid, uuid);
		jadd(o, "metadata", jstr(a->meta_format));
		jadd(o, "array_uuid", jstr(uuid));
		jadd(o, "name", jstr(a->name));
		jadd(o, "events", json_object_new_int64((int64_t)a->events));
	} else {
		jadd(o, "metadata", NULL);
	}
	return o;
}

void record_add_array(struct custody_record *r, const struct array *a, const struct assemble_opts *ao,
		      const char *const *paths, int npaths)
{
	jadd(r->root, "assembly", assembly_json(a, ao, paths, npaths));
	jadd(r->root, "array", geometry_json(a));
	for (int i = 0; i < a->geom.raid_disks; i++) {
		const struct array_member *m = &a->members[i];
		json_object *o = json_object_new_object();
		char *p = array_member_path(m);

		jadd(o, "role", json_object_new_int(i));
		jadd(o, "state", jstr(member_state_name(m->state)));
		jpath(o, "path", p);
		jadd(o, "partition", m->partition ? json_object_new_int(m->partition) : NULL);
		jadd(o, "where", m->where[0] ? jstr(m->where) : NULL);
		jadd(o, "placed_by", m->ident[0] ? jstr(m->ident) : NULL);
		jadd(o, "kind", jstr(m->src ? source_image(m->src)->ops->kind : NULL));
		jadd(o, "data_offset_bytes", json_object_new_int64((int64_t)m->data_offset));
		jadd(o, "image_bytes", json_object_new_int64((int64_t)m->image_bytes));
		jadd(o, "untrusted_bytes", json_object_new_int64((int64_t)m->untrusted_bytes));
		jadd(o, "untrusted_ranges", json_object_new_int64((int64_t)m->untrusted_ranges));
		if (m->note[0])
			jadd(o, "note", jstr(m->note));
		json_object_array_add(r->members, o);
		free(p);
	}
	for (int i = 0; i < a->nextra; i++) {
		json_object *o = json_object_new_object();
		char *p = abs_path(a->extra[i].path);

		jadd(o, "role", NULL);
		jadd(o, "state", jstr("not in the array"));
		jpath(o, "path", p ? p : a->extra[i].path);
		jadd(o, "partition", a->extra[i].partition ? json_object_new_int(a->extra[i].partition) : NULL);
		jadd(o, "note", jstr(a->extra[i].note));
		json_object_array_add(r->members, o);
		free(p);
	}
	jadd(r->root, "members", json_object_get(r->members));
}

/* A file's hash into o (a member entry, or an entry of its files/maps). */
static void put_hash(json_object *o, const struct member_hash *h)
{
	if (h->ret)
		jadd(o, "hash_error", jstr(h->err));
	else
		jadd(o, "sha256", jstr(h->sha256));
	jadd(o, "file_bytes", json_object_new_int64((int64_t)h->bytes));
}

void record_add_hashes(struct custody_record *r, const struct member_hashes *mh)
{
	size_t n = json_object_array_length(r->members);

	for (int i = 0; i < mh->n; i++) {
		const struct member_hash *h = &mh->h[i];
		bool image = !h->what || !strcmp(h->what, "image");

		for (size_t j = 0; j < n; j++) {
			json_object *o = json_object_array_get_idx(r->members, j), *p, *role, *list, *e, *hx;

			if (image) {
				json_object *want = jhex(h->path);
				bool same;

				/* the exact bytes when the path is not UTF-8, else the path */
				if (want)
					same = json_object_object_get_ex(o, "path_hex", &hx) &&
					       !strcmp(json_object_get_string(hx), json_object_get_string(want));
				else
					same = json_object_object_get_ex(o, "path", &p) &&
					       json_object_is_type(p, json_type_string) &&
					       !json_object_object_get_ex(o, "path_hex", &hx) &&
					       !strcmp(json_object_get_string(p), h->path);
				json_object_put(want);
				if (!same)
					continue;
				put_hash(o, h);
				continue;
			}
			/* a segment, piece or mapfile: in its member's list */
			if (!json_object_object_get_ex(o, "role", &role) || !json_object_is_type(role, json_type_int) ||
			    json_object_get_int(role) != h->role)
				continue;
			if (!json_object_object_get_ex(o, strcmp(h->what, "mapfile") ? "files" : "maps", &list)) {
				list = json_object_new_array();
				jadd(o, strcmp(h->what, "mapfile") ? "files" : "maps", list);
			}
			e = json_object_new_object();
			jpath(e, "path", h->path);
			if (strcmp(h->what, "mapfile"))
				jadd(e, "what", jstr(h->what));
			put_hash(e, h);
			json_object_array_add(list, e);
			break;
		}
	}
}

void record_add_range(struct custody_record *r, uint64_t offset, uint64_t length, const char *array_hex)
{
	json_object *o = json_object_new_object();

	jadd(o, "offset", json_object_new_int64((int64_t)offset));
	jadd(o, "length", json_object_new_int64((int64_t)length));
	jadd(r->root, "range", o);
	if (array_hex && *array_hex)
		jadd(r->root, "array_sha256", jstr(array_hex));
}

void record_add_output(struct custody_record *r, const char *path, const char *format, const char *sha256)
{
	json_object *o = json_object_new_object();
	char *p = path ? abs_path(path) : NULL;

	jpath(o, "path", p);
	jadd(o, "format", jstr(format));
	if (sha256 && *sha256)
		jadd(o, "sha256", jstr(sha256));
	jadd(r->root, "output", o);
	free(p);
}

int record_finish(struct custody_record *r, const char *path, int exit_status)
{
	json_object *res = json_object_new_object();
	struct outfile_opts oo = { .replace = true };
	struct outfile out;
	char now[32], err[ERR_MAX];
	int ret;

	iso_time(now, sizeof(now));
	jadd(r->root, "finished", json_object_new_string(now));
	jadd(res, "exit_status", json_object_new_int(exit_status));
	jadd(res, "ok", json_object_new_boolean(exit_status == 0));
	jadd(r->root, "result", res);

	ret = outfile_open(&out, path, &oo, err, sizeof(err));
	if (!ret && json_object_to_fd(out.fd, r->root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE)) {
		ret = errno ? -errno : -EIO;
		fmt_err(err, sizeof(err), "%s: %s", path, strerror(-ret));
		outfile_abort(&out);
	} else if (!ret) {
		ret = outfile_commit(&out, err, sizeof(err));
	}
	if (ret)
		msg("cannot write the record: %s", err);
	return ret;
}

void record_free(struct custody_record *r)
{
	if (!r)
		return;
	json_object_put(r->members);
	json_object_put(r->root);
	free(r);
}

