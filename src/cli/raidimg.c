/* raidimg.c - the program: the subcommand table and raidimg_main() (main.c
 * calls it; so does the test build tests/helpers/raidimg_faulty.c).  The
 * shared array options are in array_args.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "examine", cmd_examine, "show what each member image holds and what array they form" },
	{ "cat", cmd_cat, "write the assembled array's bytes to stdout or a file" },
	{ "create", cmd_create, "write the member images of a new array (from a file or zeros)" },
	{ "scrub", cmd_scrub, "check (or --repair) parity in every stripe, report every mismatch" },
	{ "scrub-merge", cmd_scrub_merge, "merge the --json reports of a scrub split in shards (--shard K/N)" },
	{ "rebuild", cmd_rebuild, "write a complete replacement image for one member (role)" },
	{ "mount", cmd_mount, "show the array as a file through FUSE (read-only)" },
	{ "detect", cmd_detect, "find the geometry of an array whose metadata is gone: level, layout, chunk, order" },
	{ "map", cmd_map, "say (or draw, --svg) where every array byte comes from: direct, rebuilt, untrusted, lost" },
	{ "export", cmd_export, "write the array to a sparse raw image or a zstd seekable image" },
	{ "compress", cmd_compress, "convert an image to the zstd seekable format raidimg reads" },
	{ "replay", cmd_replay, "repeat a recorded assembly (--record) and check the same bytes come out" },
	{ "overlay", cmd_overlay, "show (info) or empty (discard) a copy-on-write overlay of mount --overlay" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg COMMAND [OPTIONS] MEMBER...\n\n"
		   "Assemble Linux md RAID4/5/6 arrays from member image files, without root.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < ARRAY_LEN(commands); i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nraidimg COMMAND --help shows a command's options.  raidimg --version.\n"
		   "Member images are opened read-only by every command except create and scrub --repair.\n");
}

/* Standard descriptors closed by the caller (`>&-`) would be taken by the
 * next files opened - member images - and whatever is printed would land in
 * them.  Before anything else is opened, each closed one gets /dev/null:
 * stdin and stderr to read and write, stdout read-only so that output is
 * not silently lost (writes fail with EBADF).  Returns whether stdout was
 * closed; exits if /dev/null cannot be had. */
static bool guard_std_fds(void)
{
	bool out_closed = false;

	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		if (fd == STDOUT_FILENO)
			out_closed = true;
		if (open("/dev/null", fd == STDERR_FILENO ? O_WRONLY : O_RDONLY) != fd)
			_exit(EXIT_ERR);    /* nowhere safe to say so */
	}
	return out_closed;
}

/* Output that did not reach stdout (a full disk, a closed pipe, >&-) is an
 * error, not a success: EXIT_ERR with the reason. */
static int check_stdout(int ret)
{
	int e = 0;

	errno = 0;
	if (fflush(stdout) == EOF || ferror(stdout))
		e = errno ? errno : EIO;
	else if (close(STDOUT_FILENO) && errno != EINTR)
		e = errno;
	if (e) {
		msg("standard output: %s: the output is incomplete", strerror(e));
		return EXIT_ERR;
	}
	return ret;
}

static int run(int argc, char **argv)
{
	if (argc < 2) {
		cli_usage_error("give a command");
		return EXIT_ERR;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("raidimg %s\n", PACKAGE_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < ARRAY_LEN(commands); i++)
		if (!strcmp(argv[1], commands[i].name)) {
			cli_command = commands[i].name;
			return commands[i].fn(argc - 1, argv + 1);
		}
	if (argv[1][0] == '-')
		msg("unrecognized option '%s' before the command (raidimg --help lists the commands)", argv[1]);
	else
		msg("unknown command '%s' (raidimg --help lists them)", argv[1]);
	return EXIT_ERR;
}

int raidimg_main(int argc, char **argv)
{
	if (guard_std_fds() && argc >= 2) {
		msg("standard output is closed: raidimg writes its results there (give >/dev/null to discard "
		    "them)");
		return EXIT_ERR;
	}
	return check_stdout(run(argc, argv));
}
