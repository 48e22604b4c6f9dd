/* array_args.c - the options every command that reads an array shares
 * (member images, manual geometry, --force) and opening the array they
 * describe.  The parsing itself is core/geom_args.c (pure, fuzzed by
 * tests/fuzz/fuzz_geometry.c). */
#include <errno.h>
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

int array_args_open(struct array_args *aa, int argc, char **argv, struct array **out)
{
	char err[ERR_MAX] = "";
	int ret;

	if (array_args_prepare(aa, argc, argv))
		return -1;
	ret = array_assemble(&aa->ao, out, err, sizeof(err));
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
