/* probe.c - find the metadata a member source carries (format.h's formats
 * reading the source through a dev_reader). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parttable.h"
#include "probe.h"
#include "util.h"

static int source_read_cb(void *ctx, void *buf, size_t len, uint64_t off)
{
	return source_pread(ctx, buf, len, off);
}

void source_dev_reader(struct source *src, struct dev_reader *dev)
{
	dev->size = src->size;
	dev->read = source_read_cb;
	dev->ctx = src;
	dev->hints = src->parent ? 0 : DEV_HINT_WHOLE;
}

int probe_source(struct source *src, struct format_found *out, char *err, size_t errlen)
{
	struct dev_reader dev;

	source_dev_reader(src, &dev);
	return format_probe(&dev, out, err, errlen);
}

int metadata_probe(struct source *src, struct member_meta *out, char *err, size_t errlen)
{
	struct format_found f;
	struct dev_reader dev;
	int rc;

	source_dev_reader(src, &dev);
	dev.hints &= ~(unsigned)DEV_HINT_WHOLE;     /* no searching: see probe.h */
	rc = format_probe(&dev, &f, err, errlen);
	memset(out, 0, sizeof(*out));
	if (!rc)
		*out = f.vol[0];
	return rc;
}

int probe_bblog(struct source *src, const struct member_meta *m, size_t *added, char *err, size_t errlen)
{
	struct range_list r = { 0 };
	uint8_t buf[8 * 512];
	char perr[256];
	uint64_t off;
	size_t len;
	int ret;

	*added = 0;
	if (strcmp(m->format, "1.0") && strcmp(m->format, "1.1") && strcmp(m->format, "1.2"))
		return 0;
	ret = md1_bblog_locate(m, src->size, &off, &len, perr, sizeof(perr));
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return fmt_fail(err, errlen, ret, "%s: %s", src->path, perr);
	if (len > sizeof(buf))
		return fmt_fail(err, errlen, -EINVAL, "%s: bad-block log of %zu bytes", src->path, len);
	ret = source_pread(src, buf, len, off);
	if (ret)
		return fmt_fail(err, errlen, ret, "%s: cannot read md's bad-block log at byte %" PRIu64 ": %s",
				src->path, off, strerror(-ret));
	ret = md1_bblog_parse(buf, len, m->bblog_shift, &r, perr, sizeof(perr));
	if (!ret && r.n)
		ret = source_untrusted_add(src, &r, UNTRUSTED_MD_BBLOG, src->path);
	*added = r.n;
	range_list_free(&r);
	if (ret)
		return fmt_fail(err, errlen, ret, "%s: md bad-block log: %s", src->path,
				ret == -ENOMEM ? "out of memory" : perr);
	return 0;
}

void probe_result_free(struct probe_result *r)
{
	for (int i = 0; r->hits && i < r->nhits; i++)
		source_close(r->hits[i].src);
	free(r->hits);
	memset(r, 0, sizeof(*r));
}

static int add_hit(struct probe_result *r, struct source *src, int partition, const char *where,
		   const struct format_found *f)
{
	struct probe_hit *h = realloc(r->hits, (size_t)(r->nhits + 1) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	r->hits = h;
	h = &r->hits[r->nhits++];
	h->src = source_ref(src);
	h->partition = partition;
	snprintf(h->where, sizeof(h->where), "%s", where);
	h->found = *f;
	return 0;
}

/* "partition 3, GPT 'Linux RAID', sectors 2048-22527" */
static void describe_part(const struct pt_table *t, const struct pt_part *p, char *buf, size_t len)
{
	char label[128] = "";

	if (p->name[0])
		snprintf(label, sizeof(label), " \"%s\"", p->name);
	if (t->kind == PT_GPT)
		snprintf(buf, len, "partition %u%s, GPT '%s', sectors %" PRIu64 "-%" PRIu64, p->number, label,
			 p->type_name[0] ? p->type_name : p->type, p->first_lba, p->last_lba);
	else
		snprintf(buf, len, "partition %u, MBR type 0x%02x%s%s%s, sectors %" PRIu64 "-%" PRIu64, p->number,
			 p->mbr_type, p->type_name[0] ? " '" : "", p->type_name, p->type_name[0] ? "'" : "",
			 p->first_lba, p->last_lba);
}

/* The byte where a volume's metadata sits in the image. */
static uint64_t super_byte(const struct probe_hit *h, int v)
{
	return h->src->base + h->found.vol[v].super_offset * 512;
}

/* A whole-image hit whose metadata is also a partition's: dropped. */
static void drop_duplicate_whole(struct probe_result *r)
{
	if (r->nhits < 2 || r->hits[0].partition != 0)
		return;
	for (int i = 1; i < r->nhits; i++) {
		if (super_byte(&r->hits[i], 0) == super_byte(&r->hits[0], 0) &&
		    !memcmp(r->hits[i].found.vol[0].set_uuid, r->hits[0].found.vol[0].set_uuid, 16)) {
			source_close(r->hits[0].src);
			memmove(&r->hits[0], &r->hits[1], (size_t)(r->nhits - 1) * sizeof(r->hits[0]));
			r->nhits--;
			return;
		}
	}
}

/* Probe each partition of t (img's) into r.  0 or -errno with the message. */
static int probe_partitions(struct source *img, const char *name, const struct pt_table *t, struct probe_result *r,
			    char *err, size_t errlen)
{
	struct format_found *f = malloc(sizeof(*f));
	int ret = 0;

	if (!f)
		return fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", name);
	for (unsigned i = 0; i < t->nparts && !ret; i++) {
		const struct pt_part *p = &t->parts[i];
		struct source *slice = NULL;
		char sname[512], where[200], perr[512];

		if (p->is_extended || !p->length)
			continue;
		snprintf(sname, sizeof(sname), "%s partition %u", name, p->number);
		ret = source_slice(img, p->start, p->length, sname, &slice, err, errlen);
		if (ret)
			break;
		ret = probe_source(slice, f, perr, sizeof(perr));
		if (ret == -ENOENT) {
			ret = 0;
		} else if (ret) {
			describe_part(t, p, where, sizeof(where));
			fmt_err(err, errlen, "%s %s: %s", name, where, perr);
		} else {
			describe_part(t, p, where, sizeof(where));
			ret = add_hit(r, slice, (int)p->number, where, f);
			if (ret)
				fmt_err(err, errlen, "%s: out of memory", name);
		}
		source_close(slice);
	}
	free(f);
	return ret;
}

int probe_image(struct source *img, const char *name, struct probe_result *out, char *err, size_t errlen)
{
	struct format_found *f = malloc(sizeof(*f));
	struct pt_table t;
	struct dev_reader dev;
	char werr[512] = "", terr[512] = "";
	int wret, tret, ret;

	memset(out, 0, sizeof(*out));
	memset(&t, 0, sizeof(t));
	if (!f)
		return fmt_fail(err, errlen, -ENOMEM, "%s: out of memory", name);
	wret = probe_source(img, f, werr, sizeof(werr));
	if (wret && wret != -ENOENT) {
		ret = fmt_fail(err, errlen, wret, "%s: %s", name, werr);
		goto out;
	}
	if (!wret && (ret = add_hit(out, img, 0, "", f))) {
		fmt_err(err, errlen, "%s: out of memory", name);
		goto out;
	}
	source_dev_reader(img, &dev);
	tret = pt_parse(&dev, 0, 0, &t, terr, sizeof(terr));
	if (tret) {
		if (wret) {
			ret = fmt_fail(err, errlen, tret, "%s: its partition table is broken: %s (and the image itself "
				       "holds no RAID metadata)", name, terr);
			goto out;
		}
		snprintf(out->note, sizeof(out->note), "not used (the image itself holds RAID metadata): %s", terr);
		ret = 0;
		goto out;
	}
	if (t.warnings[0])
		snprintf(out->note, sizeof(out->note), "%s", t.warnings);
	out->nparts = (int)t.nparts;
	snprintf(out->table, sizeof(out->table), "%s", t.kind == PT_NONE ? "" : pt_kind_name(t.kind));
	ret = probe_partitions(img, name, &t, out, err, errlen);
	if (ret)
		goto out;
	drop_duplicate_whole(out);
	if (!out->nhits)
		fmt_err(err, errlen, "%s%s", werr, t.nparts ? ", nor in any of its partitions" : "");
out:
	if (ret)
		probe_result_free(out);
	pt_table_free(&t);
	free(f);
	return ret;
}

int write_superblock(struct source *dst, const struct member_meta *m, uint64_t dev_sectors, char *err,
		     size_t errlen)
{
	uint8_t sb[8192];
	uint64_t off;
	size_t len;
	int r;

	if (!m->fmt || !m->fmt->build)
		return fmt_fail(err, errlen, -EOPNOTSUPP, "%s: md %s metadata cannot be written", dst->path,
				m->format);
	memset(sb, 0, sizeof(sb));
	r = m->fmt->build(m, sb, sizeof(sb), dev_sectors, &off, &len);
	if (r)
		return fmt_fail(err, errlen, r, "%s: cannot build the md %s superblock: %s", dst->path, m->format,
				strerror(-r));
	r = source_pwrite(dst, sb, len, off);
	if (!r)
		r = dst->ops->sync(dst);
	if (r)
		return fmt_fail(err, errlen, r, "%s: write error: %s", dst->path, strerror(-r));
	return 0;
}

static int put_source(void *ctx, const void *buf, size_t len, uint64_t off)
{
	return source_pwrite(ctx, buf, len, off);
}

int write_replacement_metadata(struct source *dst, struct source *tmpl, const struct member_meta *m, const char *id,
			       uint64_t dev_sectors, char *err, size_t errlen)
{
	struct dev_reader dev;
	char e[512] = "";
	int r;

	if (!m->fmt || !m->fmt->replace)
		return fmt_fail(err, errlen, -EOPNOTSUPP, "%s: %s metadata cannot be written", dst->path, m->format);
	source_dev_reader(tmpl, &dev);
	r = m->fmt->replace(&dev, m, id, dev_sectors, put_source, dst, e, sizeof(e));
	if (r)
		return fmt_fail(err, errlen, r, "%s: the %s metadata (from %s): %s", dst->path, m->format, tmpl->path, e);
	r = dst->ops->sync(dst);
	if (r)
		return fmt_fail(err, errlen, r, "%s: write error: %s", dst->path, strerror(-r));
	return 0;
}
