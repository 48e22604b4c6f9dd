/* source_fault.c - a member image whose reads fail on given byte ranges.
 *
 * A test facility in the spirit of SQLite's test VFS (src/test_vfs.c): it
 * wraps another source and makes reads that touch chosen byte ranges of the
 * image fail, so the rebuild-from-parity path can be exercised on demand.
 * It exists only in the test build of raidimg (tests/helpers/raidimg-faulty,
 * where it is the open hook of member sources), is switched on there by the
 * environment variable RAIDIMG_FAULTS, and a warning naming every wrapped
 * image is printed each time it is used:
 *
 *   RAIDIMG_FAULTS="PATH:RANGE[,RANGE...][;PATH:RANGE...]"
 *   RANGE = [KIND@]OFF+LEN       (OFF, LEN: sizes as parse_size takes them)
 *   KIND  = eio     the read fails with EIO; nothing of it is delivered
 *                   (the buffer is filled with a poison pattern instead)
 *         | short   the image seems to end at the start of the range: the
 *                   bytes before it are delivered, then EIO (a short read
 *                   followed by end of file)
 *
 * OFF is a byte offset in the image file (not in its data area).  PATH is
 * compared with the image's absolute path after resolving symlinks; it is
 * split from the ranges at its last ':'.  Writes, sync and truncate pass
 * through untouched.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "source_fault.h"
#include "util.h"

#define FAULT_ENV     "RAIDIMG_FAULTS"
#define FAULT_POISON  0xe5      /* what a failed read leaves in the buffer */
#define FAULT_MAX     64        /* ranges per image */

enum fault_kind { FAULT_EIO, FAULT_SHORT };

struct fault_range {
	uint64_t off, len;
	enum fault_kind kind;
};

struct fault_priv {
	struct source *inner;           /* owned */
	int nranges;
	struct fault_range ranges[FAULT_MAX];
};

/* ---- parsing RAIDIMG_FAULTS ---- */

static int parse_range(const char *tok, struct fault_range *r, char *err, size_t errlen)
{
	char buf[128];
	const char *spec = tok;
	char *plus;

	r->kind = FAULT_EIO;
	if (!strncmp(tok, "eio@", 4)) {
		spec = tok + 4;
	} else if (!strncmp(tok, "short@", 6)) {
		r->kind = FAULT_SHORT;
		spec = tok + 6;
	} else if (strchr(tok, '@')) {
		fmt_err(err, errlen, FAULT_ENV ": '%s': the kind must be eio or short", tok);
		return -EINVAL;
	}
	if (strlen(spec) >= sizeof(buf)) {
		fmt_err(err, errlen, FAULT_ENV ": '%s': too long", tok);
		return -EINVAL;
	}
	strcpy(buf, spec);
	plus = strchr(buf, '+');
	if (!plus) {
		fmt_err(err, errlen, FAULT_ENV ": '%s': a range is OFF+LEN", tok);
		return -EINVAL;
	}
	*plus = '\0';
	if (parse_size(buf, &r->off) || parse_size(plus + 1, &r->len) || r->len == 0 ||
	    r->off + r->len < r->off) {
		fmt_err(err, errlen, FAULT_ENV ": '%s': OFF and LEN must be sizes, LEN > 0", tok);
		return -EINVAL;
	}
	return 0;
}

/* Parse the ranges after "PATH:" into fp. */
static int parse_ranges(const char *list, struct fault_priv *fp, char *err, size_t errlen)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (fp->nranges == FAULT_MAX) {
			fmt_err(err, errlen, FAULT_ENV ": more than %d ranges for one image", FAULT_MAX);
			ret = -EINVAL;
			break;
		}
		ret = parse_range(tok, &fp->ranges[fp->nranges], err, errlen);
		if (ret)
			break;
		fp->nranges++;
	}
	if (!ret && fp->nranges == 0) {
		fmt_err(err, errlen, FAULT_ENV ": '%s': no ranges", list);
		ret = -EINVAL;
	}
	free(copy);
	return ret;
}

/* Does an entry's PATH name the image at real_path? */
static bool path_matches(const char *entry_path, const char *real_path)
{
	char rp[PATH_MAX];

	if (!realpath(entry_path, rp))
		return false;
	return !strcmp(rp, real_path);
}

/* Collect the ranges given for real_path.  Every entry is checked for
 * syntax, so a typo is an error whichever image it names. */
static int fault_config(const char *env, const char *real_path, struct fault_priv *fp,
			char *err, size_t errlen)
{
	char *copy = strdup(env), *save = NULL, *ent;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (ent = strtok_r(copy, ";", &save); ent; ent = strtok_r(NULL, ";", &save)) {
		char *colon = strrchr(ent, ':');
		struct fault_priv tmp = { 0 };

		if (!colon || colon == ent) {
			fmt_err(err, errlen, FAULT_ENV ": '%s': an entry is PATH:OFF+LEN[,OFF+LEN...]", ent);
			ret = -EINVAL;
			break;
		}
		*colon = '\0';
		ret = parse_ranges(colon + 1, &tmp, err, errlen);
		if (ret)
			break;
		if (!path_matches(ent, real_path))
			continue;
		for (int i = 0; i < tmp.nranges; i++) {
			if (fp->nranges == FAULT_MAX) {
				fmt_err(err, errlen, FAULT_ENV ": more than %d ranges for %s", FAULT_MAX, ent);
				ret = -EINVAL;
				goto out;
			}
			fp->ranges[fp->nranges++] = tmp.ranges[i];
		}
	}
out:
	free(copy);
	return ret;
}

/* ---- the source ---- */

/* The first faulty byte in [off, off+len) and its kind; false if none. */
static bool first_fault(const struct fault_priv *fp, uint64_t off, uint64_t len,
			uint64_t *at, enum fault_kind *kind)
{
	bool found = false;

	for (int i = 0; i < fp->nranges; i++) {
		const struct fault_range *r = &fp->ranges[i];
		uint64_t lo = r->off > off ? r->off : off;

		if (r->off >= off + len || r->off + r->len <= off)
			continue;
		if (!found || lo < *at) {
			*at = lo;
			*kind = r->kind;
			found = true;
		}
	}
	return found;
}

static void iov_poison(const struct iovec *iov, int iovcnt, uint64_t skip)
{
	for (int i = 0; i < iovcnt; i++) {
		uint64_t l = iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		memset((uint8_t *)iov[i].iov_base + skip, FAULT_POISON, (size_t)(l - skip));
		skip = 0;
	}
}

/* Build an iovec for the first `bytes` of iov (for the part before a
 * short fault).  Returns the count, at most iovcnt. */
static int iov_prefix(const struct iovec *iov, int iovcnt, uint64_t bytes, struct iovec *out)
{
	int n = 0;

	for (int i = 0; i < iovcnt && bytes; i++) {
		out[n] = iov[i];
		if (out[n].iov_len > bytes)
			out[n].iov_len = (size_t)bytes;
		bytes -= out[n].iov_len;
		n++;
	}
	return n;
}

static int fault_preadv(struct source *s, const struct iovec *iov, int iovcnt, uint64_t off)
{
	struct fault_priv *fp = s->priv;
	uint64_t len = 0, at = 0;
	enum fault_kind kind = FAULT_EIO;
	struct iovec *pre;
	int npre, ret;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (!first_fault(fp, off, len, &at, &kind))
		return source_preadv(fp->inner, iov, iovcnt, off);
	iov_poison(iov, iovcnt, 0);
	if (kind == FAULT_EIO || at == off)
		return -EIO;
	/* short: deliver what lies before the fault, then "end of file" */
	pre = calloc((size_t)iovcnt, sizeof(*pre));
	if (!pre)
		return -ENOMEM;
	npre = iov_prefix(iov, iovcnt, at - off, pre);
	ret = source_preadv(fp->inner, pre, npre, off);
	free(pre);
	return ret ? ret : -EIO;
}

static int fault_pread(struct source *s, void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return fault_preadv(s, &iov, 1, off);
}

static int fault_pwrite(struct source *s, const void *buf, size_t len, uint64_t off)
{
	struct fault_priv *fp = s->priv;
	int ret = source_pwrite(fp->inner, buf, len, off);

	s->size = fp->inner->size;
	return ret;
}

static int fault_sync(struct source *s)
{
	struct fault_priv *fp = s->priv;

	return fp->inner->ops->sync(fp->inner);
}

static int fault_truncate(struct source *s, uint64_t size)
{
	struct fault_priv *fp = s->priv;
	int ret = fp->inner->ops->truncate(fp->inner, size);

	s->size = fp->inner->size;
	return ret;
}

static void fault_close(struct source *s)
{
	struct fault_priv *fp = s->priv;

	if (fp) {
		source_close(fp->inner);
		free(fp);
	}
	free(s->path);
	free(s);
}

static const struct source_ops fault_ops = {
	.kind = "fault",
	.pread = fault_pread,
	.preadv = fault_preadv,
	.pwrite = fault_pwrite,
	.sync = fault_sync,
	.truncate = fault_truncate,
	.close = fault_close,
};

static void fault_announce(const struct source *s, const struct fault_priv *fp)
{
	char b1[32], b2[32];

	for (int i = 0; i < fp->nranges; i++) {
		const struct fault_range *r = &fp->ranges[i];

		msg("warning: " FAULT_ENV " (a test facility) is set: reads of %s at bytes %s+%s "
		    "fail (%s)", s->path, fmt_size(r->off, b1, sizeof(b1)),
		    fmt_size(r->len, b2, sizeof(b2)), r->kind == FAULT_EIO ? "eio" : "short");
	}
}

int source_fault_wrap(struct source **sp, char *err, size_t errlen)
{
	const char *env = getenv(FAULT_ENV);
	struct source *inner = *sp, *s = NULL;
	struct fault_priv *fp = NULL;
	char real[PATH_MAX];
	int ret;

	if (!env || !*env)
		return 0;
	if (!realpath(inner->path, real)) {
		ret = -errno;
		fmt_err(err, errlen, "%s: cannot resolve the path: %s", inner->path, strerror(-ret));
		return ret;
	}
	fp = calloc(1, sizeof(*fp));
	if (!fp)
		return -ENOMEM;
	ret = fault_config(env, real, fp, err, errlen);
	if (ret || fp->nranges == 0)
		goto out;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(inner->path))) {
		ret = -ENOMEM;
		goto out;
	}
	s->ops = &fault_ops;
	s->size = inner->size;
	s->writable = inner->writable;
	fp->inner = inner;
	s->priv = fp;
	fault_announce(s, fp);
	*sp = s;
	return 0;
out:
	if (s)
		free(s->path);
	free(s);
	free(fp);
	return ret;
}
