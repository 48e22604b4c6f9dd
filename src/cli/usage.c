/* usage.c - how the commands say that they were called wrongly: one line
 * naming the problem and one saying where the options are (GNU style), not
 * the whole --help text.  See cli.h. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "util.h"

const char *cli_command = "";

/* The hint after a usage problem. */
static void hint(void)
{
	fprintf(stderr, "Try '%s%s%s --help' for more information.\n", prog_name, cli_command[0] ? " " : "",
		cli_command);
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s%s", prog_name, cli_command, cli_command[0] ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	hint();
	return -1;
}

/* The long options s (without "--", up to '=' if any) is a prefix of. */
static int prefix_matches(const struct option *longopts, const char *s, size_t len, char *names, size_t nlen)
{
	int n = 0;

	names[0] = '\0';
	for (const struct option *o = longopts; o->name; o++) {
		if (strncmp(o->name, s, len))
			continue;
		if (strlen(o->name) == len)
			return 0;       /* an exact match is never ambiguous */
		if (n++ < 4) {
			size_t used = strlen(names);
			snprintf(names + used, nlen - used, "%s--%s", used ? ", " : "", o->name);
		}
	}
	return n;
}

/* After getopt_long said '?' or ':' (opterr off, ':' first in the short
 * options): what was wrong, from optopt and the argument just examined. */
static void bad_option(int ret, char **argv, const struct option *longopts)
{
	const char *cur = optind > 0 ? argv[optind - 1] : "";
	bool is_long = cur && !strncmp(cur, "--", 2);
	size_t len = is_long ? strcspn(cur + 2, "=") : 0;
	char names[200];

	if (ret == ':') {
		if (is_long)
			cli_usage_error("option '%.*s' needs a value", (int)(len + 2), cur);
		else
			cli_usage_error("option '-%c' needs a value", optopt);
		return;
	}
	if (is_long && !optopt) {
		if (prefix_matches(longopts, cur + 2, len, names, sizeof(names)) > 1)
			cli_usage_error("option '%.*s' is ambiguous: %s", (int)(len + 2), cur, names);
		else
			cli_usage_error("unrecognized option '%.*s'", (int)(len + 2), cur);
		return;
	}
	if (is_long && cur[2 + len] == '=') {
		cli_usage_error("option '%.*s' takes no value", (int)(len + 2), cur);
		return;
	}
	if (optopt > ' ' && optopt < 127)
		cli_usage_error("unrecognized option '-%c'", optopt);
	else
		cli_usage_error("unrecognized option '%s'", cur);
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	char so[64];
	int ret;

	snprintf(so, sizeof(so), ":%s", shortopts);
	opterr = 0;
	ret = getopt_long(argc, argv, so, longopts, NULL);
	if (ret == '?' || ret == ':') {
		bad_option(ret, argv, longopts);
		return '?';
	}
	return ret;
}
