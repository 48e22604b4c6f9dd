/* array_args.c - the options every command that reads an array shares
 * (member images, manual geometry, --force) and opening the array they
 * describe.  The parsing itself is core/geom_args.c (pure, fuzzed by
 * tests/fuzz/fuzz_geometry.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

void array_args_init(struct array_args *aa)
{
	memset(aa, 0, sizeof(*aa));
	geom_args_init(&aa->ao.g);
	aa->ao.open_flags = SOURCE_READ;
}

int array_args_opt(struct array_args *aa, int opt, const char *arg)
{
	char err[ERR_MAX];
	int r = geom_args_opt(&aa->ao.g, opt, arg, err, sizeof(err));

	if (r < 0)
		msg("%s", err);
	return r;
}

int array_args_prepare(struct array_args *aa, int argc, char **argv)
{
	char err[ERR_MAX];

	if (geom_args_prepare(&aa->ao.g, argc, argv, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	return 0;
}

/* One difference between what the superblock found on a member says and
 * what the manual geometry makes of it, appended to buf ("; " between). */
static void differ(char *buf, size_t len, const char *what, const char *there, const char *here)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s %s there, %s here", used ? "; " : "", what, there, here);
}

const char *meta_role_name(int role, char *buf, size_t len)
{
	switch (role) {
	case META_ROLE_SPARE: return "spare";
	case META_ROLE_FAULTY: return "faulty";
	case META_ROLE_JOURNAL: return "journal";
	case META_ROLE_MISSING: return "removed";
	}
	snprintf(buf, len, "%d", role);
	return buf;
}

/* What the md superblock on member r says that a manual geometry
 * contradicts, into buf (empty when they agree). */
static void manual_vs_meta(const struct array *a, const struct assemble_opts *ao, int r, char *buf, size_t len)
{
	const struct array_member *m = &a->members[r];
	const struct member_meta *mm = &m->meta;
	char t1[40], t2[40];

	buf[0] = '\0';
	if (mm->role != r)
		differ(buf, len, "role", meta_role_name(mm->role, t1, sizeof(t1)), (snprintf(t2, sizeof(t2), "%d", r), t2));
	if (mm->level != a->geom.level) {
		snprintf(t1, sizeof(t1), "raid%d", mm->level);
		snprintf(t2, sizeof(t2), "raid%d", a->geom.level);
		differ(buf, len, "level", t1, t2);
	} else if (mm->layout != a->geom.layout) {
		differ(buf, len, "layout", layout_name(mm->level, mm->layout), layout_name(a->geom.level, a->geom.layout));
	}
	if (mm->raid_disks != a->geom.raid_disks) {
		snprintf(t1, sizeof(t1), "%d", mm->raid_disks);
		snprintf(t2, sizeof(t2), "%d", a->geom.raid_disks);
		differ(buf, len, "members", t1, t2);
	}
	if (mm->chunk_bytes != a->geom.chunk_bytes)
		differ(buf, len, "chunk", fmt_size(mm->chunk_bytes, t1, sizeof(t1)),
		       fmt_size(a->geom.chunk_bytes, t2, sizeof(t2)));
	if (mm->data_offset * 512 != ao->g.data_offset) {
		snprintf(t1, sizeof(t1), "%" PRIu64 " bytes", mm->data_offset * 512);
		snprintf(t2, sizeof(t2), "%" PRIu64 " bytes", ao->g.data_offset);
		differ(buf, len, "data offset", t1, t2);
	}
}

/* A manual geometry over images that carry md superblocks: where they
 * disagree, refuse (-EINVAL, the differences in err), or with --force go
 * on and say so in the array's warnings. */
static int check_manual_vs_meta(struct array *a, const struct assemble_opts *ao, char *err, size_t errlen)
{
	char line[600], all[1800] = "";
	int n = 0;

	if (!ao->g.manual)
		return 0;
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		size_t used = strlen(all);

		if (!m->has_meta)
			continue;
		manual_vs_meta(a, ao, r, line, sizeof(line));
		if (!line[0])
			continue;
		n++;
		snprintf(all + used, sizeof(all) - used, "\n  %s: md %s superblock: %s", m->path ? m->path : "?",
			 m->meta.format, line);
	}
	if (!n)
		return 0;
	if (!ao->g.force)
		return fmt_fail(err, errlen, -EINVAL, "the manual geometry disagrees with the md superblocks on %d "
				"image%s (without --level the superblocks place the members; --force reads with the "
				"manual geometry anyway):%s", n, n == 1 ? "" : "s", all);
	{
		size_t used = strlen(a->warnings);

		snprintf(a->warnings + used, sizeof(a->warnings) - used, "the manual geometry disagrees with the md "
			 "superblocks on %d image%s; read with the manual geometry as --force asks:%s\n", n,
			 n == 1 ? "" : "s", all);
	}
	return 0;
}

int array_args_assemble(struct array_args *aa, struct array **out, char *err, size_t errlen)
{
	int ret = array_assemble(&aa->ao, out, err, errlen);

	if (ret)
		return ret;
	ret = check_manual_vs_meta(*out, &aa->ao, err, errlen);
	if (ret) {
		array_free(*out);
		*out = NULL;
	}
	return ret;
}

int array_args_open(struct array_args *aa, int argc, char **argv, struct array **out)
{
	char err[ERR_MAX] = "";
	int ret;

	if (array_args_prepare(aa, argc, argv))
		return -1;
	ret = array_args_assemble(aa, out, err, sizeof(err));
	if (ret) {
		msg("%s", err);
		return -1;
	}
	print_array_warnings(*out);
	return 0;
}

void array_args_free(struct array_args *aa)
{
	geom_args_free(&aa->ao.g);
}

void print_array_warnings(const struct array *a)
{
	const char *p = a->notes;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		fprintf(stderr, "%s: %.*s\n", prog_name, len, p);
		p += len + (nl ? 1 : 0);
	}
	p = a->warnings;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		fprintf(stderr, "%s: warning: %.*s\n", prog_name, len, p);
		p += len + (nl ? 1 : 0);
	}
	for (int r = 0; r < a->geom.raid_disks; r++) {
		const struct array_member *m = &a->members[r];
		if (m->state == MEMBER_STALE || m->state == MEMBER_FAULTY)
			fprintf(stderr, "%s: warning: role %d: %s: %s\n", prog_name, r,
				m->path ? m->path : "?", m->note);
	}
}
