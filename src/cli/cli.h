/* cli.h - what the subcommands share: the member/geometry options and
 * opening the array they describe. */
#ifndef RAIDIMG_CLI_H
#define RAIDIMG_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "array.h"

/* Exit codes used by every command */
enum { EXIT_OK = 0, EXIT_FOUND = 1, EXIT_ERR = 2 };

/* Options that pick and shape the array (every command that reads one):
 * ao.g holds them as parsed (geom_args.h), ao.g.paths the images. */
struct array_args {
	struct assemble_opts ao;
};

/* getopt_long entries for the array options; append to a command's table. */
#define ARRAY_LONG_OPTIONS \
	{ "level", required_argument, NULL, GEOM_OPT_LEVEL }, \
	{ "layout", required_argument, NULL, GEOM_OPT_LAYOUT }, \
	{ "chunk", required_argument, NULL, GEOM_OPT_CHUNK }, \
	{ "order", required_argument, NULL, GEOM_OPT_ORDER }, \
	{ "data-offset", required_argument, NULL, GEOM_OPT_DATA_OFFSET }, \
	{ "member-size", required_argument, NULL, GEOM_OPT_MEMBER_SIZE }, \
	{ "raid-devices", required_argument, NULL, GEOM_OPT_RAID_DEVICES }, \
	{ "force", no_argument, NULL, GEOM_OPT_FORCE }, \
	{ "reshape-position", required_argument, NULL, GEOM_OPT_RESHAPE_POS }, \
	{ "map", required_argument, NULL, GEOM_OPT_MAP }, \
	{ "no-maps", no_argument, NULL, GEOM_OPT_NO_MAPS }, \
	{ "array", required_argument, NULL, GEOM_OPT_ARRAY }, \
	{ "serial", required_argument, NULL, GEOM_OPT_SERIAL }

#define ARRAY_OPTIONS_HELP \
"Array options (all commands that read an array):\n" \
"  --array UUID|NAME    the array to read when the images hold several (a NAS:\n" \
"                       arrays in partitions; a container with two volumes);\n" \
"                       without it the only RAID4/5/6 one is read\n" \
"  --serial IMAGE=SERIAL  the drive serial of an IMSM member image (IMSM places\n" \
"                       members by serial; default: the image's file name\n" \
"                       without .img/.zst...), repeatable\n" \
"  --force              use stale or faulty-marked members, or a manual geometry\n" \
"                       that disagrees with the md superblocks found (said loudly)\n" \
"  --reshape-position SIZE  an array caught mid-reshape: read it as if md had\n" \
"                       recorded this position (array bytes, or sectors with s)\n" \
"  --map IMAGE=MAPFILE  IMAGE was made by GNU ddrescue and MAPFILE is its\n" \
"                       mapfile: bytes not rescued ('+') are rebuilt from parity\n" \
"                       (IMAGE.map or STEM.map beside an image is taken by itself,\n" \
"                       and said)\n" \
"  --no-maps            take no mapfile but those given with --map\n" \
"  Manual geometry, for images without RAID metadata (--level turns it on):\n" \
"  --level 4|5|6        RAID level (also raid4, raid5, raid6, as mdadm)\n" \
"  --layout NAME|NUM    md layout (default left-symmetric), e.g. la, ra, ls, rs,\n" \
"                       parity-first, parity-last, ddf-N-restart, left-symmetric-6\n" \
"  --chunk SIZE         chunk size, a power of two (default 512K); a plain\n" \
"                       number is KiB, as in mdadm: --chunk 64 = 64K\n" \
"  --order LIST         role order as image indices (0-based, in the order given)\n" \
"                       with 'missing' for absent members, e.g. 2,0,missing,1;\n" \
"                       without it, images are taken in order and a path\n" \
"                       written as 'missing' stands for an absent member;\n" \
"                       every image must be named once\n" \
"  --raid-devices N     the member count (mdadm's option): checked against the\n" \
"                       images and 'missing' (or --order) given\n" \
"  --data-offset SIZE   where data starts in every image (default 0)\n" \
"  --member-size SIZE   data bytes used per member (default: smallest image)\n" \
"SIZE takes K, M, G, T suffixes (binary) or s for 512-byte sectors.\n"

void array_args_init(struct array_args *aa);
/* Handle one array option; returns 1 if handled, 0 if not ours, -1 on a
 * bad value (message printed). */
int array_args_opt(struct array_args *aa, int opt, const char *arg);
/* Take the remaining arguments as images and check the combination
 * (aa->ao.g.paths and the rest filled); prints the problem and returns -1
 * if bad. */
int array_args_prepare(struct array_args *aa, int argc, char **argv);
/* Assemble what aa describes (after array_args_prepare): array_assemble,
 * then a manual geometry is checked against the md superblocks found on
 * the images (refused where they disagree, unless --force: then a
 * warning).  0, or -errno with the problem in err. */
int array_args_assemble(struct array_args *aa, struct array **out, char *err, size_t errlen);
/* array_args_prepare, then array_args_assemble.
 * Prints the error and returns non-zero on failure. */
int array_args_open(struct array_args *aa, int argc, char **argv, struct array **out);
void array_args_free(struct array_args *aa);

/* A metadata role as examine says it: the number, or spare, faulty,
 * journal, removed (buf: 16 bytes at least). */
const char *meta_role_name(int role, char *buf, size_t len);

/* Print warnings collected during assembly to stderr. */
void print_array_warnings(const struct array *a);

/* Usage problems (usage.c), said in one line and a hint ("Try 'raidimg
 * CMD --help'..."), never with the whole help text.  cli_command is the
 * command being run ("examine"), set by raidimg_main.
 * cli_getopt: getopt_long whose errors (an unknown, ambiguous or valueless
 * option) are said so; returns '?' after saying one.
 * cli_usage_error: another usage problem (printf format); returns -1. */
extern const char *cli_command;
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The whole program: standard descriptors guarded, the command run, its
 * output checked.  Returns the exit status. */
int raidimg_main(int argc, char **argv);

int cmd_examine(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_scrub(int argc, char **argv);
int cmd_scrub_merge(int argc, char **argv);
int cmd_rebuild(int argc, char **argv);
int cmd_compress(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_overlay(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_map(int argc, char **argv);
int cmd_detect(int argc, char **argv);

#endif
