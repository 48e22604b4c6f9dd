/* hash.c - sha256 of files and of the members of an array (hash.h). */
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

#include <openssl/evp.h>

#include "hash.h"
#include "pagecache.h"
#include "sysio.h"
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

int custody_hash_file(const char *path, char hex[SHA256_HEX], uint64_t *bytes, char *err, size_t errlen)
{
	struct sha256 *h = NULL;
	struct pc_trail *t = NULL;
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
	/* what the hash brings into the page cache goes behind it (pagecache.h) */
	if (!pc_trail_open(fd, &t) && !pc_trail_active(t)) {
		pc_trail_close(t);
		t = NULL;
	}
	for (;;) {
		ssize_t n;

		pc_trail_ahead(t, total, HASH_READ, false);
		n = read(fd, buf, HASH_READ);

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
		pc_trail_behind(t, total);
	}
	sha256_final(h, hex);
	if (bytes)
		*bytes = total;
	ret = 0;
out:
	pc_trail_close(t);
	if (fd >= 0)
		close(fd);
	sha256_free(h);
	free(buf);
	return ret;
}

int custody_hash_media(struct source *src, char md5[33], char sha1[41], char *err, size_t errlen)
{
	EVP_MD_CTX *c5 = EVP_MD_CTX_new(), *c1 = EVP_MD_CTX_new();
	uint8_t *buf = malloc(HASH_READ);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	int ret = -ENOMEM;

	if (!c5 || !c1 || !buf || !EVP_DigestInit_ex(c5, EVP_md5(), NULL) || !EVP_DigestInit_ex(c1, EVP_sha1(), NULL)) {
		fmt_err(err, errlen, "%s: out of memory", src->path);
		goto out;
	}
	for (uint64_t off = 0; off < src->size;) {
		size_t len = src->size - off < HASH_READ ? (size_t)(src->size - off) : HASH_READ;

		ret = source_pread(src, buf, len, off);
		if (ret) {
			fmt_err(err, errlen, "%s: media bytes %" PRIu64 "-%" PRIu64 " cannot be read (%s): the stored "
				"hashes cannot be checked", src->path, off, off + len - 1, strerror(-ret));
			goto out;
		}
		EVP_DigestUpdate(c5, buf, len);
		EVP_DigestUpdate(c1, buf, len);
		off += len;
	}
	EVP_DigestFinal_ex(c5, md, &n);
	hex_encode(md, n < 16 ? n : 16, md5);
	EVP_DigestFinal_ex(c1, md, &n);
	hex_encode(md, n < 20 ? n : 20, sha1);
	ret = 0;
out:
	EVP_MD_CTX_free(c5);
	EVP_MD_CTX_free(c1);
	free(buf);
	return ret;
}

/* ------------------------------------------------------------------ */
/* member hashes                                                        */
/* ------------------------------------------------------------------ */

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

/* Files of member m beyond its image: segments, pieces, mapfiles. */
static int member_extra_files(const struct array_member *m)
{
	int nf = 0, n = 0;

	if (!m->src)
		return 0;
	source_files(m->src, &nf);
	if (m->src->untrusted)
		n = m->src->untrusted->norigins;
	return nf + n;
}

static int hash_add(struct member_hashes *mh, int *n, int role, const char *path, const char *kind, const char *what)
{
	char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (int i = 0; i < *n; i++)
		if (!strcmp(mh->h[i].path, p)) {         /* one file, hashed once */
			free(p);
			return 0;
		}
	mh->h[*n].role = role;
	mh->h[*n].path = p;
	mh->h[*n].kind = kind;
	mh->h[*n].what = what;
	(*n)++;
	return 0;
}

static int hashes_list(const struct array *a, struct member_hashes *mh)
{
	int n = 0, cap = a->nextra;

	for (int r = 0; r < a->geom.raid_disks; r++)
		cap += 1 + member_extra_files(&a->members[r]);
	mh->h = calloc((size_t)(cap ? cap : 1), sizeof(*mh->h));
	if (!mh->h)
		return -ENOMEM;
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		const char *kind = m->src ? m->src->ops->kind : NULL;
		char *p = array_member_path(m);
		char *const *files;
		int nf = 0;

		if (!p)
			continue;
		mh->h[n].role = r;
		mh->h[n].path = p;
		mh->h[n].kind = kind;
		mh->h[n].what = "image";
		n++;
		if (!m->src)
			continue;
		files = source_files(m->src, &nf);
		for (int i = 0; i < nf; i++)
			if (hash_add(mh, &n, r, files[i], kind, strcmp(kind, "ewf") ? "piece" : "segment"))
				return -ENOMEM;
		for (int i = 0; m->src->untrusted && i < m->src->untrusted->norigins; i++)
			if (!strcmp(m->src->untrusted->origins[i].kind, UNTRUSTED_DDRESCUE_MAP) &&
			    hash_add(mh, &n, r, m->src->untrusted->origins[i].path, kind, "mapfile"))
				return -ENOMEM;
	}
	for (int i = 0; i < a->nextra; i++) {
		char *p = abs_path(a->extra[i].path);

		if (!p)
			continue;
		mh->h[n].role = -1;
		mh->h[n].path = p;
		mh->h[n].what = "image";
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
		if (h->role >= 0 && h->what && strcmp(h->what, "image"))
			fprintf(f, "role %d %s  %s\n", h->role, h->what, h->path);
		else if (h->role >= 0)
			fprintf(f, "role %d  %s\n", h->role, h->path);
		else
			fprintf(f, "not in the array  %s\n", h->path);
	}
	if (array_hex)
		fprintf(f, "sha256 %s  array  bytes %" PRIu64 "-%" PRIu64 "\n", array_hex, offset,
			length ? offset + length - 1 : offset);
}

