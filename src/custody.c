/* custody.c - see custody.h.
 *
 * Record format (JSON, one object; written with json-c):
 *   {"raidimg_record": 1, "tool": "raidimg", "version": "0.1.0",
 *    "command": "cat", "argv": [...], "cwd": "...",
 *    "started": "2026-11-29T22:40:01Z", "finished": "...",
 *    "assembly": {"paths": [absolute image paths, in the order given],
 *                 "force": false, "manual": false,
 *                 (manual only:) "level", "layout", "chunk_bytes",
 *                 "data_offset", "member_bytes", "order": [image index or -1]},
 *    "array": {"level", "layout", "layout_name", "raid_disks", "chunk_bytes",
 *              "member_bytes", "array_bytes", "verdict", "metadata", "uuid",
 *              "name", "events"},
 *    "members": [{"role": 0 (null: left out), "state", "path", "kind",
 *                 "data_offset", "image_bytes", "note", "sha256", "file_bytes"}],
 *    "range": {"offset", "length"}, "array_sha256": "...",
 *    "output": {"path" (null: stdout), "format", "sha256"},
 *    "options": {command specific},
 *    "result": {"exit_status": 0, "ok": true}}
 *
 * Provenance map (JSON lines): a header line
 *   {"map":"raidimg-provenance","version":1,"array_bytes":N,"chunk_bytes":N,
 *    "members":[{"role":0,"path":"..."},...]}
 * then one line per range of the array written, in array order (offsets are
 * array offsets), adjacent ranges of the same kind merged:
 *   {"offset":N,"length":N,"source":"member","role":R}
 *   {"offset":N,"length":N,"source":"rebuilt","role":R,"from_roles":[...]}
 *   {"offset":N,"length":N,"source":"unreadable","role":R,"readable_roles":[...]}
 * role is the member whose chunk holds the range; "rebuilt" ranges were
 * computed from parity out of the members in from_roles.
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
#include <openssl/evp.h>

#include "custody.h"
#include "outfile.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* sha256                                                               */
/* ------------------------------------------------------------------ */

struct sha256 {
	EVP_MD_CTX *ctx;
};

int sha256_new(struct sha256 **out)
{
	struct sha256 *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || !EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL)) {
		sha256_free(h);
		return -ENOMEM;
	}
	*out = h;
	return 0;
}

void sha256_update(struct sha256 *h, const void *buf, size_t len)
{
	EVP_DigestUpdate(h->ctx, buf, len);
}

void sha256_final(struct sha256 *h, char hex[SHA256_HEX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_DigestFinal_ex(h->ctx, md, &n);
	for (unsigned int i = 0; i < n && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

void sha256_free(struct sha256 *h)
{
	if (h) {
		EVP_MD_CTX_free(h->ctx);
		free(h);
	}
}

#define HASH_READ (4u << 20)
#define RECORD_MAX_BYTES (64u << 20)    /* a record of 384 members is ~0.3 MB */

int custody_hash_file(const char *path, char hex[SHA256_HEX], uint64_t *bytes, char *err, size_t errlen)
{
	struct sha256 *h = NULL;
	uint8_t *buf = malloc(HASH_READ);
	uint64_t total = 0;
	int fd = -1, ret = -ENOMEM;

	if (!buf || sha256_new(&h)) {
		fmt_err(err, errlen, "%s: out of memory", path);
		goto out;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		fmt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		goto out;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	for (;;) {
		ssize_t n = read(fd, buf, HASH_READ);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			fmt_err(err, errlen, "%s: read error at offset %" PRIu64 ": %s", path, total, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		sha256_update(h, buf, (size_t)n);
		total += (uint64_t)n;
	}
	sha256_final(h, hex);
	if (bytes)
		*bytes = total;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	sha256_free(h);
	free(buf);
	return ret;
}

/* ------------------------------------------------------------------ */
/* member hashes                                                        */
/* ------------------------------------------------------------------ */

/* The absolute path of a member's image (malloc'ed), NULL if none. */
static char *member_path(const struct array_member *m)
{
	if (m->src && m->src->path)
		return strdup(m->src->path);
	return m->path ? abs_path(m->path) : NULL;
}

struct hash_job {
	struct member_hashes *mh;
	_Atomic int next;
};

static void *hash_worker(void *arg)
{
	struct hash_job *j = arg;
	int i;

	while ((i = atomic_fetch_add(&j->next, 1)) < j->mh->n) {
		struct member_hash *h = &j->mh->h[i];

		h->ret = custody_hash_file(h->path, h->sha256, &h->bytes, h->err, sizeof(h->err));
	}
	return NULL;
}

static int hashes_list(const struct array *a, struct member_hashes *mh)
{
	int n = 0;

	mh->h = calloc((size_t)(a->geom.raid_disks + a->nextra), sizeof(*mh->h));
	if (!mh->h)
		return -ENOMEM;
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		char *p = member_path(m);

		if (!p)
			continue;
		mh->h[n].role = r;
		mh->h[n].path = p;
		mh->h[n].kind = m->src ? m->src->ops->kind : NULL;
		n++;
	}
	for (int i = 0; i < a->nextra; i++) {
		char *p = abs_path(a->extra[i].path);

		if (!p)
			continue;
		mh->h[n].role = -1;
		mh->h[n].path = p;
		n++;
	}
	mh->n = n;
	return 0;
}

int custody_hash_members(const struct array *a, int nthreads, struct member_hashes *mh)
{
	struct hash_job j = { .mh = mh };
	pthread_t tids[16];
	int started = 0;

	memset(mh, 0, sizeof(*mh));
	if (hashes_list(a, mh))
		return -ENOMEM;
	if (nthreads > (int)ARRAY_LEN(tids))
		nthreads = (int)ARRAY_LEN(tids);
	if (nthreads > mh->n)
		nthreads = mh->n;
	for (; started < nthreads; started++)
		if (pthread_create(&tids[started], NULL, hash_worker, &j))
			break;
	hash_worker(&j);        /* this thread helps (and does it all if none started) */
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (int i = 0; i < mh->n; i++)
		if (mh->h[i].ret)
			return mh->h[i].ret;
	return 0;
}

void custody_hashes_free(struct member_hashes *mh)
{
	for (int i = 0; mh->h && i < mh->n; i++)
		free(mh->h[i].path);
	free(mh->h);
	mh->h = NULL;
	mh->n = 0;
}

void custody_print_hashes(FILE *f, const struct member_hashes *mh, const char *array_hex, uint64_t offset,
			  uint64_t length)
{
	for (int i = 0; i < mh->n; i++) {
		const struct member_hash *h = &mh->h[i];

		if (h->ret)
			fprintf(f, "sha256 %-64s  ", "(unreadable)");
		else
			fprintf(f, "sha256 %s  ", h->sha256);
		if (h->role >= 0)
			fprintf(f, "role %d  %s\n", h->role, h->path);
		else
			fprintf(f, "not in the array  %s\n", h->path);
	}
	if (array_hex)
		fprintf(f, "sha256 %s  array  bytes %" PRIu64 "-%" PRIu64 "\n", array_hex, offset,
			length ? offset + length - 1 : offset);
}

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

static json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
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

static const char *state_name(enum member_state s)
{
	switch (s) {
	case MEMBER_OK: return "active";
	case MEMBER_MISSING: return "missing";
	case MEMBER_FAULTY: return "faulty";
	case MEMBER_STALE: return "stale";
	case MEMBER_REBUILDING: return "rebuilding";
	}
	return "?";
}

static json_object *assembly_json(const struct assemble_opts *ao, const char *const *paths, int npaths)
{
	json_object *o = json_object_new_object(), *ps = json_object_new_array();

	for (int i = 0; i < npaths; i++) {
		char *p = abs_path(paths[i]);

		json_object_array_add(ps, jstr(p ? p : paths[i]));
		free(p);
	}
	jadd(o, "paths", ps);
	jadd(o, "force", json_object_new_boolean(ao->force));
	jadd(o, "manual", json_object_new_boolean(ao->manual));
	if (ao->manual) {
		json_object *ord = json_object_new_array();

		for (int i = 0; i < ao->norder; i++)
			json_object_array_add(ord, json_object_new_int(ao->order[i]));
		jadd(o, "level", json_object_new_int(ao->geom.level));
		jadd(o, "layout", json_object_new_int(ao->geom.layout));
		jadd(o, "chunk_bytes", json_object_new_int64(ao->geom.chunk_bytes));
		jadd(o, "data_offset", json_object_new_int64((int64_t)ao->data_offset));
		jadd(o, "member_bytes", json_object_new_int64((int64_t)ao->member_bytes));
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
		for (int i = 0; i < 16; i++)
			snprintf(uuid + 2 * i, 3, "%02x", a->uuid[i]);
		jadd(o, "metadata", jstr(a->meta_format));
		jadd(o, "uuid", jstr(uuid));
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
	jadd(r->root, "assembly", assembly_json(ao, paths, npaths));
	jadd(r->root, "array", geometry_json(a));
	for (int i = 0; i < a->geom.raid_disks; i++) {
		const struct array_member *m = &a->members[i];
		json_object *o = json_object_new_object();
		char *p = member_path(m);

		jadd(o, "role", json_object_new_int(i));
		jadd(o, "state", jstr(state_name(m->state)));
		jadd(o, "path", jstr(p));
		jadd(o, "kind", jstr(m->src ? m->src->ops->kind : NULL));
		jadd(o, "data_offset", json_object_new_int64((int64_t)m->data_offset));
		jadd(o, "image_bytes", json_object_new_int64((int64_t)m->image_bytes));
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
		jadd(o, "path", jstr(p ? p : a->extra[i].path));
		jadd(o, "note", jstr(a->extra[i].note));
		json_object_array_add(r->members, o);
		free(p);
	}
	jadd(r->root, "members", json_object_get(r->members));
}

void record_add_hashes(struct custody_record *r, const struct member_hashes *mh)
{
	size_t n = json_object_array_length(r->members);

	for (int i = 0; i < mh->n; i++) {
		for (size_t j = 0; j < n; j++) {
			json_object *o = json_object_array_get_idx(r->members, j), *p;

			if (!json_object_object_get_ex(o, "path", &p) || !json_object_is_type(p, json_type_string) ||
			    strcmp(json_object_get_string(p), mh->h[i].path))
				continue;
			if (mh->h[i].ret)
				jadd(o, "hash_error", jstr(mh->h[i].err));
			else
				jadd(o, "sha256", jstr(mh->h[i].sha256));
			jadd(o, "file_bytes", json_object_new_int64((int64_t)mh->h[i].bytes));
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

	jadd(o, "path", jstr(p));
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
	char now[32], err[PATH_MAX + 256];
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

static int64_t jint(struct jctx *c, json_object *o, const char *key, bool required)
{
	json_object *v = jget(c, o, key, json_type_int, required);

	return v ? json_object_get_int64(v) : 0;
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

	rs->ao.open_flags = SOURCE_READ;
	rs->ao.force = f && json_object_get_boolean(f);
	rs->ao.manual = m && json_object_get_boolean(m);
	if (ps) {
		rs->npaths = (int)json_object_array_length(ps);
		rs->paths = calloc((size_t)rs->npaths + 1, sizeof(*rs->paths));
		for (int i = 0; rs->paths && i < rs->npaths; i++) {
			json_object *p = json_object_array_get_idx(ps, (size_t)i);
			rs->paths[i] = strdup(json_object_is_type(p, json_type_string) ? json_object_get_string(p) : "");
		}
	}
	if (rs->ao.manual) {
		json_object *ord = jget(c, as, "order", json_type_array, true);

		rs->ao.geom.level = (int)jint(c, as, "level", true);
		rs->ao.geom.layout = (int)jint(c, as, "layout", true);
		rs->ao.geom.chunk_bytes = (uint32_t)jint(c, as, "chunk_bytes", true);
		rs->ao.data_offset = (uint64_t)jint(c, as, "data_offset", false);
		rs->ao.member_bytes = (uint64_t)jint(c, as, "member_bytes", false);
		for (size_t i = 0; ord && i < json_object_array_length(ord) && i < LAYOUT_MAX_DISKS; i++) {
			int v = json_object_get_int(json_object_array_get_idx(ord, i));

			if (v < -1 || v >= rs->npaths) {
				fmt_err(c->err, c->errlen, "%s: \"order\" names image %d of %d", c->file, v, rs->npaths);
				c->bad = true;
				return;
			}
			rs->ao.order[rs->ao.norder++] = v;
		}
		rs->ao.geom.raid_disks = rs->ao.norder;
	}
}

static void load_members(struct jctx *c, json_object *ms, struct replay_spec *rs)
{
	size_t n = ms ? json_object_array_length(ms) : 0;

	rs->members = calloc(n + 1, sizeof(*rs->members));
	if (!rs->members)
		return;
	for (size_t i = 0; i < n && !c->bad; i++) {
		json_object *o = json_object_array_get_idx(ms, i);
		json_object *role = jget(c, o, "role", json_type_int, false);
		json_object *path = jget(c, o, "path", json_type_string, false);
		struct replay_member *m = &rs->members[rs->nmembers];

		if (!path)
			continue;           /* a missing member: no image */
		jcopy(c, o, "sha256", m->sha256, sizeof(m->sha256));
		m->role = role ? json_object_get_int(role) : -1;
		m->path = strdup(json_object_get_string(path));
		rs->nmembers++;
	}
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
	rs->level = (int)jint(&c, arr, "level", true);
	rs->layout = (int)jint(&c, arr, "layout", true);
	rs->raid_disks = (int)jint(&c, arr, "raid_disks", true);
	rs->chunk_bytes = (uint32_t)jint(&c, arr, "chunk_bytes", true);
	rs->array_bytes = (uint64_t)jint(&c, arr, "array_bytes", true);
	load_members(&c, jget(&c, root, "members", json_type_array, true), rs);
	range = jget(&c, root, "range", json_type_object, false);
	rs->offset = range ? (uint64_t)jint(&c, range, "offset", true) : 0;
	rs->length = range ? (uint64_t)jint(&c, range, "length", true) : rs->array_bytes;
	jcopy(&c, root, "array_sha256", rs->array_sha256, sizeof(rs->array_sha256));
	out = jget(&c, root, "output", json_type_object, false);
	jcopy(&c, out, "format", rs->output_format, sizeof(rs->output_format));
	opts = jget(&c, root, "options", json_type_object, false);
	rs->zstd_level = (int)jint(&c, opts, "zstd_level", false);
	rs->zstd_frame_bytes = (uint32_t)jint(&c, opts, "frame_bytes", false);
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
	memset(rs, 0, sizeof(*rs));
}

/* ------------------------------------------------------------------ */
/* provenance                                                           */
/* ------------------------------------------------------------------ */

struct prov_rec {
	uint64_t off, len;
	enum array_source how;      /* MEMBER, REBUILT or UNREADABLE */
	int role;
	size_t used;                /* index of the member set in the slot's pool */
};

struct prov_slot {
	struct provenance *p;
	struct prov_rec *r;         /* owned */
	size_t n, cap;
	bool *pool;                 /* member sets, raid_disks each, owned */
	size_t npool, poolcap;
	uint64_t bad_off;
	bool oom;
};

struct provenance {
	FILE *f;                    /* over out (outfile_stdio), owned */
	struct outfile out;         /* the map, named when complete */
	char *path;                 /* owned */
	const struct array *a;
	int nslots;
	struct prov_slot *slots;    /* owned */
	struct prov_rec pend;       /* the range being merged, not yet written */
	bool *pend_used;            /* [raid_disks], owned */
	bool have_pend;
};

static const bool *slot_used(const struct prov_slot *sl, const struct prov_rec *r)
{
	return sl->pool + r->used * (size_t)sl->p->a->geom.raid_disks;
}

static void slot_add(struct prov_slot *sl, uint64_t off, uint64_t len, enum array_source how, int role,
		     const bool *used)
{
	int n = sl->p->a->geom.raid_disks;
	struct prov_rec *r;

	if (sl->n == sl->cap) {
		size_t cap = sl->cap ? sl->cap * 2 : 256;
		struct prov_rec *x = realloc(sl->r, cap * sizeof(*x));
		if (!x) {
			sl->oom = true;
			return;
		}
		sl->r = x;
		sl->cap = cap;
	}
	r = &sl->r[sl->n];
	r->off = off;
	r->len = len;
	r->how = how;
	r->role = role;
	r->used = 0;
	if (how != ARRAY_SRC_MEMBER) {
		if (sl->npool == sl->poolcap) {
			size_t cap = sl->poolcap ? sl->poolcap * 2 : 64;
			bool *x = realloc(sl->pool, cap * (size_t)n * sizeof(*x));
			if (!x) {
				sl->oom = true;
				return;
			}
			sl->pool = x;
			sl->poolcap = cap;
		}
		memcpy(sl->pool + sl->npool * (size_t)n, used, (size_t)n * sizeof(*used));
		r->used = sl->npool++;
	}
	sl->n++;
}

/* The observer: note a piece, splitting straight runs at chunk edges. */
static void prov_served(void *ctx, uint64_t off, uint64_t len, enum array_source how, int role,
			const bool *used)
{
	struct prov_slot *sl = ctx;
	const struct array *a = sl->p->a;
	uint64_t cb = a->geom.chunk_bytes;

	if (how != ARRAY_SRC_MEMBERS) {
		slot_add(sl, off, len, how, role, used);
		return;
	}
	for (uint64_t end = off + len; off < end;) {
		struct layout_pos pos;
		uint64_t n = cb - off % cb;

		if (n > end - off)
			n = end - off;
		layout_locate(&a->geom, off, &pos);
		slot_add(sl, off, n, ARRAY_SRC_MEMBER, pos.disk, NULL);
		off += n;
	}
}

int provenance_read(void *ctx, int slot, uint8_t *buf, size_t len, uint64_t off, uint64_t *bad_off)
{
	struct provenance *p = ctx;
	struct prov_slot *sl = &p->slots[slot];
	struct array_observer obs = { prov_served, sl };

	sl->n = 0;
	sl->npool = 0;
	sl->oom = false;
	return array_read_observed((struct array *)p->a, buf, len, off, bad_off, &obs);
}

static void write_roles(FILE *f, const char *key, const bool *used, int n, int except)
{
	bool first = true;

	fprintf(f, ",\"%s\":[", key);
	for (int i = 0; i < n; i++) {
		if (!used[i] || i == except)
			continue;
		fprintf(f, "%s%d", first ? "" : ",", i);
		first = false;
	}
	fputc(']', f);
}

static void pend_write(struct provenance *p)
{
	static const char *const name[] = {
		[ARRAY_SRC_MEMBER] = "member", [ARRAY_SRC_REBUILT] = "rebuilt", [ARRAY_SRC_UNREADABLE] = "unreadable",
	};
	const struct prov_rec *r = &p->pend;

	if (!p->have_pend)
		return;
	fprintf(p->f, "{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"source\":\"%s\",\"role\":%d", r->off,
		r->len, name[r->how], r->role);
	if (r->how == ARRAY_SRC_REBUILT)
		write_roles(p->f, "from_roles", p->pend_used, p->a->geom.raid_disks, r->role);
	else if (r->how == ARRAY_SRC_UNREADABLE)
		write_roles(p->f, "readable_roles", p->pend_used, p->a->geom.raid_disks, r->role);
	fputs("}\n", p->f);
	p->have_pend = false;
}

/* Merge r (of slot sl) into the pending range or start a new one. */
static void pend_add(struct provenance *p, const struct prov_slot *sl, const struct prov_rec *r)
{
	int n = p->a->geom.raid_disks;
	const bool *used = r->how == ARRAY_SRC_MEMBER ? NULL : slot_used(sl, r);

	if (p->have_pend && p->pend.off + p->pend.len == r->off && p->pend.how == r->how &&
	    p->pend.role == r->role && (!used || !memcmp(used, p->pend_used, (size_t)n * sizeof(*used)))) {
		p->pend.len += r->len;
		return;
	}
	pend_write(p);
	p->pend = *r;
	if (used)
		memcpy(p->pend_used, used, (size_t)n * sizeof(*used));
	p->have_pend = true;
}

static int rec_cmp(const void *x, const void *y)
{
	const struct prov_rec *a = x, *b = y;

	return a->off < b->off ? -1 : a->off > b->off;
}

int provenance_emit(struct provenance *p, int slot, int ret)
{
	struct prov_slot *sl = &p->slots[slot];
	uint64_t bad = UINT64_MAX;

	if (sl->oom) {
		msg("%s: out of memory for the provenance map", p->path);
		return -ENOMEM;
	}
	qsort(sl->r, sl->n, sizeof(*sl->r), rec_cmp);
	/* on a failed read only the bytes before the first unreadable one
	 * were written: the map stops there, with the unreadable ranges */
	for (size_t i = 0; ret && i < sl->n; i++)
		if (sl->r[i].how == ARRAY_SRC_UNREADABLE && sl->r[i].off < bad)
			bad = sl->r[i].off;
	for (size_t i = 0; i < sl->n; i++) {
		struct prov_rec r = sl->r[i];

		if (r.how != ARRAY_SRC_UNREADABLE) {
			if (r.off >= bad)
				continue;
			if (r.off + r.len > bad)
				r.len = bad - r.off;
		}
		pend_add(p, sl, &r);
	}
	return ferror(p->f) ? -EIO : 0;
}

int provenance_open(struct provenance **out, const char *path, const struct array *a, int nslots)
{
	struct provenance *p = calloc(1, sizeof(*p));
	struct outfile_opts oo = { .replace = true };
	char err[PATH_MAX + 256];

	if (!p)
		goto oom;
	p->out.fd = -1;
	p->a = a;
	p->nslots = nslots;
	p->path = strdup(path);
	p->slots = calloc((size_t)nslots, sizeof(*p->slots));
	p->pend_used = calloc((size_t)a->geom.raid_disks, sizeof(bool));
	if (!p->path || !p->slots || !p->pend_used)
		goto oom;
	for (int i = 0; i < nslots; i++)
		p->slots[i].p = p;
	if (outfile_open(&p->out, path, &oo, err, sizeof(err))) {
		msg("cannot create the provenance map: %s", err);
		provenance_close(p, false);
		return -EIO;
	}
	p->f = outfile_stdio(&p->out);
	if (!p->f) {
		msg("%s: cannot create the provenance map: %s", path, strerror(errno));
		provenance_close(p, false);
		return -EIO;
	}
	fprintf(p->f, "{\"map\":\"raidimg-provenance\",\"version\":1,\"array_bytes\":%" PRIu64
		",\"chunk_bytes\":%" PRIu32 ",\"members\":[", a->array_bytes, a->geom.chunk_bytes);
	for (int r = 0; r < a->geom.raid_disks; r++) {
		char *mp = member_path(&a->members[r]);

		fprintf(p->f, "%s{\"role\":%d,\"path\":", r ? "," : "", r);
		if (mp)
			json_str(p->f, mp);
		else
			fputs("null", p->f);
		fprintf(p->f, ",\"state\":\"%s\"}", state_name(a->members[r].state));
		free(mp);
	}
	fputs("]}\n", p->f);
	*out = p;
	return 0;
oom:
	msg("out of memory");
	provenance_close(p, false);
	return -ENOMEM;
}

int provenance_close(struct provenance *p, bool commit)
{
	char err[PATH_MAX + 256];
	int ret = 0;

	if (!p)
		return 0;
	if (p->f) {
		if (commit)
			pend_write(p);
		if (ferror(p->f) | fclose(p->f)) {
			ret = -EIO;
			msg("%s: cannot write the provenance map (removed)", p->path);
		}
	}
	if (commit && !ret) {
		ret = outfile_commit(&p->out, err, sizeof(err));
		if (ret)
			msg("cannot write the provenance map: %s", err);
	}
	outfile_abort(&p->out);
	for (int i = 0; p->slots && i < p->nslots; i++) {
		free(p->slots[i].r);
		free(p->slots[i].pool);
	}
	free(p->slots);
	free(p->pend_used);
	free(p->path);
	free(p);
	return ret;
}

/* ------------------------------------------------------------------ */
/* a command's custody work                                             */
/* ------------------------------------------------------------------ */

int custody_opt(struct custody_opts *co, int opt, const char *arg)
{
	switch (opt) {
	case 0x1101: co->hash = true; return 1;
	case 0x1102: co->record = arg; co->hash = true; return 1;
	case 0x1103: co->provenance = arg; return 1;
	}
	return 0;
}

int custody_begin(struct custody_run *cr, const struct custody_opts *o, const char *command, int argc,
		  char **argv)
{
	cr->o = *o;
	if (o->record && record_new(&cr->rec, command, argc, argv)) {
		msg("out of memory");
		return -ENOMEM;
	}
	return 0;
}

int custody_array(struct custody_run *cr, const struct array *a, const struct assemble_opts *ao,
		  const char *const *paths, int npaths, int nslots)
{
	char err[PATH_MAX + 256];
	int ret;

	/* the members are open: a record that would land on one is refused
	 * now, before any work (it is written at the end) */
	if (cr->o.record && evidence_check_path(cr->o.record, err, sizeof(err))) {
		msg("cannot write the record: %s", err);
		return -EPERM;
	}

	if (cr->rec)
		record_add_array(cr->rec, a, ao, paths, npaths);
	if (cr->o.hash) {
		ret = custody_hash_members(a, 4, &cr->mh);
		if (ret) {
			for (int i = 0; i < cr->mh.n; i++)
				if (cr->mh.h[i].ret)
					msg("%s", cr->mh.h[i].err);
			return ret;
		}
		if (cr->rec)
			record_add_hashes(cr->rec, &cr->mh);
		if (sha256_new(&cr->array_h)) {
			msg("out of memory");
			return -ENOMEM;
		}
	}
	if (cr->o.provenance)
		return provenance_open(&cr->prov, cr->o.provenance, a, nslots);
	return 0;
}

void custody_pipeline(struct custody_run *cr, struct pipeline *p)
{
	if (cr->prov) {
		p->read = provenance_read;
		p->read_ctx = cr->prov;
	}
}

int custody_segment(struct custody_run *cr, int slot, const uint8_t *buf, size_t len, int ret)
{
	if (cr->array_h) {
		sha256_update(cr->array_h, buf, len);
		cr->hashed += len;
	}
	return cr->prov ? provenance_emit(cr->prov, slot, ret) : 0;
}

void custody_finish_hash(struct custody_run *cr)
{
	if (cr->array_h && !cr->array_hex[0])
		sha256_final(cr->array_h, cr->array_hex);
}

int custody_end(struct custody_run *cr, FILE *f, uint64_t offset, uint64_t length, bool complete,
		int exit_status)
{
	int ret = exit_status;

	custody_finish_hash(cr);
	if (cr->o.hash && f)
		custody_print_hashes(f, &cr->mh, complete && cr->array_h ? cr->array_hex : NULL, offset, length);
	if (cr->prov && provenance_close(cr->prov, true))
		ret = 2;
	cr->prov = NULL;
	if (cr->rec) {
		record_add_range(cr->rec, offset, length, complete ? cr->array_hex : NULL);
		if (!complete)
			record_add_int(cr->rec, "bytes_written", (int64_t)cr->hashed);
		if (record_finish(cr->rec, cr->o.record, ret))
			ret = 2;
	}
	return ret;
}

void custody_free(struct custody_run *cr)
{
	provenance_close(cr->prov, false);     /* not ended: nothing is left */
	record_free(cr->rec);
	sha256_free(cr->array_h);
	custody_hashes_free(&cr->mh);
	memset(cr, 0, sizeof(*cr));
}

/* pipeline consume() for custody_hash_array */
static int hash_consume(void *ctx, int slot, const uint8_t *buf, size_t len, uint64_t off, int ret,
			uint64_t bad_off)
{
	struct custody_run *cr = ctx;

	if (ret) {
		pipeline_read_error(ret, off, bad_off);
		return -EIO;
	}
	return custody_segment(cr, slot, buf, len, 0) ? -EIO : 0;
}

int custody_hash_array(struct custody_run *cr, struct array *a, int nthreads)
{
	struct pipeline pl = {
		.a = a, .start = 0, .length = a->array_bytes, .nthreads = nthreads,
		.consume = hash_consume, .ctx = cr,
	};

	return pipeline_run(&pl) ? -EIO : 0;
}

void custody_print_hashes_json(FILE *f, const struct custody_run *cr, uint64_t length)
{
	fputs("{\"members\":[", f);
	for (int i = 0; i < cr->mh.n; i++) {
		const struct member_hash *h = &cr->mh.h[i];

		fprintf(f, "%s{\"role\":", i ? "," : "");
		if (h->role >= 0)
			fprintf(f, "%d", h->role);
		else
			fputs("null", f);
		fputs(",\"path\":", f);
		json_str(f, h->path);
		fputs(",\"sha256\":", f);
		if (h->ret)
			fputs("null", f);
		else
			json_str(f, h->sha256);
		fputc('}', f);
	}
	fprintf(f, "],\"array\":{\"offset\":0,\"length\":%" PRIu64 ",\"sha256\":", length);
	if (cr->array_hex[0])
		json_str(f, cr->array_hex);
	else
		fputs("null", f);
	fputs("}}", f);
}
