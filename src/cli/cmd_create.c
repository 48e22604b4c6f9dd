/* cmd_create.c - raidimg create: write member images of a new md array.
 *
 * The images carry md superblocks (0.90, 1.0, 1.1 or 1.2) that Linux md
 * accepts as a clean array (no resync), and data with consistent P (and Q):
 * the array's contents are a given file's bytes (--from) followed by zeros,
 * or all zeros.  Zero stripes are not written, so the images stay sparse.
 * Proven against the real md driver by scripts/md-verify-create.
 *
 * Order of work: check everything that can be checked (arguments, sizes, the
 * input's size, existing files) before the first file is created; then data
 * and parity; superblocks last.  A create that fails after creating files
 * removes them again, so no half-written array is left behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "geom_args.h"
#include "outfile.h"
#include "probe.h"
#include "parity.h"
#include "sysio.h"
#include "util.h"

struct create_args {
	struct layout_geom geom;
	const struct format_ops *fmt;   /* --metadata (format.h) */
	uint64_t image_bytes;        /* 0 = fit --from */
	uint64_t data_offset;        /* bytes; UINT64_MAX = the format's default */
	const char *from;
	const char *outdir;
	const char *name;
	const char *prefix;          /* member file name prefix */
	bool force;
};

/* What create derives from the arguments before it writes anything. */
struct create_plan {
	int n, k;                    /* members, data chunks per stripe */
	uint64_t dev_sectors;        /* image size in sectors */
	uint64_t data_size;          /* sectors of each image data may use */
	uint64_t component;          /* sectors of each member the array uses */
	uint64_t stripes;
	uint64_t array_bytes;
	int in_fd;                   /* --from, -1 without */
	bool in_sized;               /* in_size is known (a regular file) */
	uint64_t in_size;
};

enum { SECTOR = 512 };

static bool all_zero(const uint8_t *p, size_t n)
{
	static const uint8_t z[4096];

	while (n >= sizeof(z)) {
		if (memcmp(p, z, sizeof(z)))
			return false;
		p += sizeof(z);
		n -= sizeof(z);
	}
	return !n || !memcmp(p, z, n);
}

/* Read up to len bytes (less only at end of input).  Bytes or -errno. */
static ssize_t read_full(int fd, uint8_t *p, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* P (and Q) of one stripe, whose chunks are at offset ro in each member's
 * batch buffer mbuf[role] (a batch holds its stripes back to back). */
static void batch_parity(const struct layout_geom *g, uint64_t stripe, size_t ro, uint8_t *const *mbuf)
{
	uint8_t *slots[LAYOUT_MAX_DISKS];
	struct stripe_map map;
	int n = g->raid_disks;

	layout_map_stripe(g, stripe, &map);
	if (g->level == 6) {
		/* Q slot order is the layout's, not data order; ddf layouts
		 * have NULL (zero) slots at P and Q */
		for (int i = 0; i < map.q_slots; i++)
			slots[i] = NULL;
		for (int disk = 0; disk < n; disk++)
			if (map.disk_slot[disk] >= 0)
				slots[map.disk_slot[disk]] = mbuf[disk] + ro;
		parity_gen_pq(map.q_slots, g->chunk_bytes, slots, mbuf[map.p_disk] + ro, mbuf[map.q_disk] + ro);
	} else {
		for (int d = 0; d < map.k; d++)
			slots[d] = mbuf[map.data_disk[d]] + ro;
		parity_gen_p(map.k, g->chunk_bytes, slots, mbuf[map.p_disk] + ro);
	}
}

/* Read the data chunks of nr stripes from s0 on into their members' buffers.
 * *used: the stripes of the batch up to the last one holding a non-zero
 * byte (0: all zeros); *eof whether the input ended.  0 or -errno (message
 * printed). */
static int batch_read(const struct create_args *ca, int in_fd, uint64_t s0, uint64_t nr,
		      uint8_t *const *mbuf, uint64_t *used, bool *eof, uint64_t *in_bytes)
{
	const struct layout_geom *g = &ca->geom;
	size_t cb = g->chunk_bytes;
	struct stripe_map map;

	*used = 0;
	for (uint64_t r = 0; r < nr; r++) {
		layout_map_stripe(g, s0 + r, &map);
		for (int d = 0; d < map.k; d++) {
			uint8_t *p = mbuf[map.data_disk[d]] + r * cb;
			ssize_t got = *eof ? 0 : read_full(in_fd, p, cb);

			if (got < 0) {
				msg("%s: read error: %s", ca->from, strerror((int)-got));
				return (int)got;
			}
			*in_bytes += (uint64_t)got;
			if ((size_t)got < cb) {
				memset(p + got, 0, cb - (size_t)got);
				*eof = true;
			}
			if (*used <= r && !all_zero(p, cb))
				*used = r + 1;
		}
	}
	return 0;
}

/* The input must end within the array (stdin is only known at its end). */
static int check_input_end(const struct create_args *ca, const struct create_plan *pl, bool eof)
{
	uint8_t extra;
	ssize_t r;

	if (eof)
		return 0;
	do
		r = read(pl->in_fd, &extra, 1);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	if (r < 0) {
		msg("%s: read error: %s", ca->from, strerror(errno));
		return -errno;
	}
	msg("%s: larger than the array (%" PRIu64 " bytes); give a larger --size", ca->from, pl->array_bytes);
	return -EFBIG;
}

/* Fill the members' data areas from --from (or leave zeros), batch of
 * stripes by batch.  Memory: one batch buffer per member, about 16 MiB in
 * all (at least one chunk each).  0 or -errno (message printed). */
static int write_data(const struct create_args *ca, const struct create_plan *pl, struct source **mem,
		      uint64_t *in_bytes)
{
	const struct layout_geom *g = &ca->geom;
	uint64_t cb = g->chunk_bytes, data_off = ca->data_offset, rows;
	uint8_t *mbuf[LAYOUT_MAX_DISKS] = { NULL };
	bool eof = false;
	int ret = 0;

	*in_bytes = 0;
	if (pl->in_fd < 0)
		return 0;
	rows = (16u << 20) / (cb * (uint64_t)pl->n);
	if (rows == 0)
		rows = 1;
	for (int d = 0; d < pl->n; d++) {
		mbuf[d] = xaligned_alloc((size_t)(rows * cb));
		if (!mbuf[d]) {
			msg("out of memory (%d buffers of %" PRIu64 " bytes)", pl->n, rows * cb);
			ret = -ENOMEM;
			goto out;
		}
	}
	for (uint64_t s0 = 0; s0 < pl->stripes && !eof; s0 += rows) {
		uint64_t nr = pl->stripes - s0 < rows ? pl->stripes - s0 : rows, used;

		ret = batch_read(ca, pl->in_fd, s0, nr, mbuf, &used, &eof, in_bytes);
		if (ret)
			goto out;
		/* zero stripes after the last with data, and their zero
		 * parity, are already there (sparse): not written */
		if (!used)
			continue;
		for (uint64_t r = 0; r < used; r++)
			batch_parity(g, s0 + r, (size_t)(r * cb), mbuf);
		for (int disk = 0; disk < pl->n; disk++) {
			ret = source_pwrite(mem[disk], mbuf[disk], (size_t)(used * cb), data_off + s0 * cb);
			if (ret) {
				msg("%s: write error: %s", mem[disk]->path, strerror(-ret));
				goto out;
			}
		}
	}
	ret = check_input_end(ca, pl, eof);
out:
	for (int d = 0; d < pl->n; d++)
		free(mbuf[d]);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg create --level 4|5|6 --devices N -o DIR [OPTIONS]\n\n"
		   "Write the member images of a new md array (DIR/member0.img ...), with md\n"
		   "metadata that Linux md assembles as a clean array (no resync) and consistent\n"
		   "parity.  The array holds the bytes of --from FILE followed by zeros (all\n"
		   "zeros without --from); zero stripes are left sparse.  Member k has role k.\n\n"
		   "  --level L           4, 5 or 6 (also raid4, raid5, raid6, as mdadm)\n"
		   "  --devices N         number of members (RAID4/5 >= 2, RAID6 >= 4; at most\n"
		   "  (--raid-devices N)  256, 27 with 0.90 metadata)\n"
		   "  --chunk SIZE        chunk size, a power of two from 4K to 1G (default 512K);\n"
		   "                      a plain number is KiB, as in mdadm: --chunk 64 = 64K\n"
		   "  --layout NAME|NUM   md layout (default left-symmetric; RAID4: parity-last)\n"
		   "  --metadata V        0.90, 1.0, 1.1 or 1.2 (default 1.2)\n"
		   "  --size SIZE         size of each member image, a multiple of 512 bytes\n"
		   "                      (default: just enough for --from); the array uses\n"
		   "                      what is left after the metadata, in whole chunks\n"
		   "  --data-offset SIZE  where data starts in each image (1.1/1.2 only; a\n"
		   "                      multiple of 4K past the superblock; default 1M)\n"
		   "  --from FILE         the array's contents ('-' for stdin, then --size is\n"
		   "                      needed); it must fit in the array\n"
		   "  --name NAME         array name stored in 1.x metadata (default raidimg)\n"
		   "  --prefix P          member file names P0.img, P1.img... (default member)\n"
		   "  -o, --output DIR    where to write (created if needed)\n"
		   "  --force             overwrite existing member files\n"
		   "  -h, --help          this text\n"
		   "SIZE takes K, M, G, T suffixes (binary) or s for 512-byte sectors.\n"
		   "Exit status: 0 written, 2 bad arguments or an error (nothing left behind).\n");
}

static int parse_metadata(const char *arg, struct create_args *ca)
{
	ca->fmt = format_by_name(arg);
	if (!ca->fmt || !ca->fmt->build) {
		msg("--metadata %s: give 0.90, 1.0, 1.1 or 1.2", arg);
		return -1;
	}
	return 0;
}

/* One option; 0, 1 for --help, -1 on a bad value (message printed). */
static int create_opt(int opt, const char *arg, struct create_args *ca, const char **layout)
{
	char err[256];
	long long v;
	uint64_t sz;

	switch (opt) {
	case 0x3001:
		if (geom_parse_level(arg, &ca->geom.level, err, sizeof(err))) {
			msg("%s", err);
			return -1;
		}
		return 0;
	case 0x3002:
		if (parse_int(arg, 2, LAYOUT_MAX_DISKS, &v)) {
			msg("--devices %s: give a number from 2 to %d", arg, LAYOUT_MAX_DISKS);
			return -1;
		}
		ca->geom.raid_disks = (int)v;
		return 0;
	case 0x3003:
		if (geom_parse_chunk(arg, &ca->geom.chunk_bytes, err, sizeof(err))) {
			msg("%s", err);
			return -1;
		}
		return 0;
	case 0x3004:
		*layout = arg;
		return 0;
	case 0x3005:
		return parse_metadata(arg, ca);
	case 0x3006:
		if (parse_size(arg, &sz) || sz == 0 || sz % SECTOR) {
			msg("--size %s: give a size in whole 512-byte sectors", arg);
			return -1;
		}
		ca->image_bytes = sz;
		return 0;
	case 0x3007:
		if (parse_size(arg, &sz) || sz % 4096) {
			msg("--data-offset %s: give a multiple of 4K", arg);
			return -1;
		}
		if (sz > (UINT64_C(1) << 60)) {
			msg("--data-offset %s: past any image raidimg can write (1 EiB)", arg);
			return -1;
		}
		ca->data_offset = sz;
		return 0;
	case 0x3008:
		ca->from = arg;
		return 0;
	case 0x3009:
		if (strlen(arg) > 32) {
			msg("--name %s: at most 32 characters", arg);
			return -1;
		}
		ca->name = arg;
		return 0;
	case 0x300a:
		if (!*arg || strchr(arg, '/')) {
			msg("--prefix '%s': give a file name prefix without '/'", arg);
			return -1;
		}
		ca->prefix = arg;
		return 0;
	case 'o':
		ca->outdir = arg;
		return 0;
	case 0x300b:
		ca->force = true;
		return 0;
	case 'h':
		usage(stdout);
		return 1;
	default:
		return -1;
	}
}

/* The combination of options.  0 or -1 (message printed). */
static int check_create_args(struct create_args *ca, const char *layout)
{
	const char *why = NULL;

	if (!ca->geom.level || !ca->geom.raid_disks || !ca->outdir) {
		return cli_usage_error("give --level, --devices and -o DIR");
	}
	if (!ca->image_bytes && !ca->from) {
		return cli_usage_error("give --size (or --from FILE to size the members to fit it)");
	}
	ca->geom.layout = ca->geom.level == 4 ? LAYOUT_PARITY_N : LAYOUT_LEFT_SYMMETRIC;
	if (layout && layout_from_name(ca->geom.level, layout, &ca->geom.layout)) {
		msg("--layout %s: not a RAID%d layout", layout, ca->geom.level);
		return -1;
	}
	if (layout_check(&ca->geom, &why)) {
		msg("create: %s", why ? why : "invalid geometry");
		return -1;
	}
	if (ca->geom.raid_disks > ca->fmt->max_members) {
		msg("create: md %s metadata holds at most %d members (%d asked); use 1.x", ca->fmt->name,
		    ca->fmt->max_members, ca->geom.raid_disks);
		return -1;
	}
	if (ca->data_offset != UINT64_MAX && !(ca->fmt->flags & FORMAT_DATA_OFFSET)) {
		msg("--data-offset: md %s keeps data at the start of the image; it only applies to 1.1 and 1.2",
		    ca->fmt->name);
		return -1;
	}
	if (ca->data_offset == UINT64_MAX) {
		ca->data_offset = ca->fmt->default_data_offset;
	} else if (ca->data_offset / SECTOR < ca->fmt->min_data_offset(ca->geom.raid_disks)) {
		msg("--data-offset %" PRIu64 ": md %s data must start past its superblock (at %" PRIu64
		    " bytes or later)", ca->data_offset, ca->fmt->name,
		    (ca->fmt->min_data_offset(ca->geom.raid_disks) * SECTOR + 4095) / 4096 * 4096);
		return -1;
	}
	return 0;
}

static int parse_create_args(int argc, char **argv, struct create_args *ca)
{
	static const struct option longopts[] = {
		{ "level", required_argument, NULL, 0x3001 },
		{ "devices", required_argument, NULL, 0x3002 },
		{ "raid-devices", required_argument, NULL, 0x3002 },
		{ "chunk", required_argument, NULL, 0x3003 },
		{ "layout", required_argument, NULL, 0x3004 },
		{ "metadata", required_argument, NULL, 0x3005 },
		{ "size", required_argument, NULL, 0x3006 },
		{ "data-offset", required_argument, NULL, 0x3007 },
		{ "from", required_argument, NULL, 0x3008 },
		{ "name", required_argument, NULL, 0x3009 },
		{ "prefix", required_argument, NULL, 0x300a },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 0x300b },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *layout = NULL;
	int opt, r;

	memset(ca, 0, sizeof(*ca));
	ca->geom.chunk_bytes = 512 * 1024;
	ca->fmt = &format_md12;
	ca->data_offset = UINT64_MAX;
	ca->name = "raidimg";
	ca->prefix = "member";
	while ((opt = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
		r = create_opt(opt, optarg, ca, &layout);
		if (r)
			return r;
	}
	if (optind < argc) {
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	}
	return check_create_args(ca, layout);
}

/* Open --from and learn its size if it has one.  0 or -1 (message printed). */
static int open_input(const struct create_args *ca, struct create_plan *pl)
{
	struct stat st;

	pl->in_fd = -1;
	if (!ca->from)
		return 0;
	if (!strcmp(ca->from, "-")) {
		pl->in_fd = STDIN_FILENO;
	} else {
		pl->in_fd = open(ca->from, O_RDONLY | O_CLOEXEC);
		if (pl->in_fd < 0) {
			msg("%s: cannot open: %s", ca->from, strerror(errno));
			return -1;
		}
		/* no member image may be written over it (outfile.h) */
		if (evidence_protect(pl->in_fd, "the --from file")) {
			msg("%s: cannot stat: %s", ca->from, strerror(errno));
			return -1;
		}
	}
	if (fstat(pl->in_fd, &st)) {
		msg("%s: cannot stat: %s", ca->from, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		msg("%s: is a directory", ca->from);
		return -1;
	}
	pl->in_sized = S_ISREG(st.st_mode);
	pl->in_size = pl->in_sized ? (uint64_t)st.st_size : 0;
	return 0;
}

/* Image size to fit the input: whole stripes for it, plus the metadata. */
static uint64_t image_bytes_for(const struct create_args *ca, const struct create_plan *pl)
{
	uint64_t cb = ca->geom.chunk_bytes, row = cb * (uint64_t)pl->k;
	uint64_t need = (pl->in_size + row - 1) / row * cb;

	if (need == 0)
		need = cb;
	/* 1.x at the start: data_offset; 0.90 and 1.0 at the end: < 128K */
	return (need + ca->data_offset + (128u << 10) + 65535) & ~65535ull;
}

/* Sizes of everything, checked against the input.  0 or -1 (message printed). */
static int plan_sizes(struct create_args *ca, struct create_plan *pl)
{
	uint64_t cs = ca->geom.chunk_bytes / SECTOR;
	char a[32], b[32];

	pl->n = ca->geom.raid_disks;
	pl->k = layout_data_disks(&ca->geom);
	if (!ca->image_bytes) {
		if (!pl->in_sized) {
			msg("%s: not a regular file, its size is unknown: give --size", ca->from);
			return -1;
		}
		ca->image_bytes = image_bytes_for(ca, pl);
	}
	pl->dev_sectors = ca->image_bytes / SECTOR;
	pl->data_size = ca->fmt->usable_sectors(pl->dev_sectors, ca->data_offset / SECTOR);
	pl->component = pl->data_size - pl->data_size % cs;
	if (pl->component > ca->fmt->max_component_sectors) {
		msg("create: --size %s is beyond md %s metadata (members up to 4 TiB); use 1.x", ca->fmt->name,
		    fmt_size(ca->image_bytes, a, sizeof(a)));
		return -1;
	}
	if (pl->component == 0) {
		msg("create: --size %s leaves no room for a chunk (%s) of data after the md %s metadata",
		    fmt_size(ca->image_bytes, a, sizeof(a)), fmt_size(ca->geom.chunk_bytes, b, sizeof(b)),
		    ca->fmt->name);
		return -1;
	}
	pl->stripes = pl->component / cs;
	pl->array_bytes = pl->component * SECTOR * (uint64_t)pl->k;
	if (pl->in_sized && pl->in_size > pl->array_bytes) {
		msg("%s: larger (%" PRIu64 " bytes) than the array (%" PRIu64 " bytes); give a larger --size",
		    ca->from, pl->in_size, pl->array_bytes);
		return -1;
	}
	return 0;
}

static void member_path(const struct create_args *ca, int i, char *path, size_t len)
{
	snprintf(path, len, "%s/%s%d.img", ca->outdir, ca->prefix, i);
}

/* Before anything is created: the directory.  0 or -1 (message printed). */
static int check_outdir(const struct create_args *ca)
{
	struct stat st;

	if (mkdir(ca->outdir, 0755) && errno != EEXIST) {
		msg("%s: cannot create directory: %s", ca->outdir, strerror(errno));
		return -1;
	}
	if (stat(ca->outdir, &st) || !S_ISDIR(st.st_mode)) {
		msg("%s: not a directory", ca->outdir);
		return -1;
	}
	return 0;
}

/* Open every member image as a new output (outfile.h: refused if it exists
 * without --force or is the input; named only when all are complete), at
 * its full, sparse size.  mem[i] write to them; 0 or -1 (message printed). */
static int open_members(const struct create_args *ca, const struct create_plan *pl, struct outfile *of,
			struct source **mem)
{
	struct outfile_opts oo = { .replace = ca->force, .exists_hint = "refusing to overwrite it (--force to replace)" };
	char path[PATH_MAX], err[ERR_MAX];
	int r;

	for (int i = 0; i < pl->n; i++) {
		member_path(ca, i, path, sizeof(path));
		if (outfile_open(&of[i], path, &oo, err, sizeof(err)) ||
		    source_wrap_fd(of[i].fd, path, &mem[i], err, sizeof(err))) {
			msg("%s", err);
			return -1;
		}
		r = mem[i]->ops->truncate(mem[i], ca->image_bytes);
		if (r) {
			msg("%s: cannot set its size: %s", path, strerror(-r));
			return -1;
		}
	}
	return 0;
}

/* Give every member image its name.  0 or -1 (message printed). */
static int commit_members(const struct create_plan *pl, struct outfile *of, struct source **mem)
{
	char err[ERR_MAX];

	for (int i = 0; i < pl->n; i++) {
		source_close(mem[i]);
		mem[i] = NULL;
		if (outfile_commit(&of[i], err, sizeof(err))) {
			msg("%s", err);
			if (i)
				msg("create: members 0-%d were written before this failed; remove them", i - 1);
			return -1;
		}
	}
	return 0;
}

/* What every member's superblock shares: a clean, in-sync array with role
 * k on member k.  Fills *mm; 0 or -1 (message printed). */
static int array_meta(const struct create_args *ca, const struct create_plan *pl, struct member_meta *mm)
{
	memset(mm, 0, sizeof(*mm));
	mm->fmt = ca->fmt;
	snprintf(mm->format, sizeof(mm->format), "%s", ca->fmt->name);
	if (random_bytes(mm->set_uuid, 16)) {
		msg("cannot read /dev/urandom");
		return -1;
	}
	snprintf(mm->set_name, sizeof(mm->set_name), "%s", ca->name);
	mm->level = ca->geom.level;
	/* md (and mdadm) write 0 for RAID4, whose only layout is parity-last */
	mm->layout = ca->geom.level == 4 ? 0 : ca->geom.layout;
	mm->chunk_bytes = ca->geom.chunk_bytes;
	mm->raid_disks = pl->n;
	mm->component_sectors = pl->component;
	mm->data_offset = ca->data_offset / SECTOR;
	mm->data_size = pl->data_size;
	mm->events = 1;
	mm->ctime = mm->utime = (uint64_t)time(NULL);
	mm->resync_offset = UINT64_MAX;         /* clean: parity is consistent */
	mm->recovery_offset = UINT64_MAX;
	mm->max_dev = pl->n;
	for (int i = 0; i < META_MAX_DEVS; i++)
		mm->dev_roles[i] = (int16_t)(i < pl->n ? i : META_ROLE_SPARE);
	return 0;
}

/* Write member i's superblock (mm: the array's, updated for member i). */
static int write_member_super(const struct create_args *ca, const struct create_plan *pl,
			    struct member_meta *mm, int i, struct source *mem)
{
	char err[ERR_MAX];

	mm->dev_number = i;
	mm->role = i;
	if (random_bytes(mm->device_uuid, 16)) {
		msg("cannot read /dev/urandom");
		return -1;
	}
	mm->super_offset = ca->fmt->super_offset(pl->dev_sectors);
	if (write_superblock(mem, mm, pl->dev_sectors, err, sizeof(err))) {
		msg("%s", err);
		return -1;
	}
	return 0;
}

static void print_summary(const struct create_args *ca, const struct create_plan *pl,
			  const struct member_meta *mm, uint64_t in_bytes)
{
	char uuid[40], a[32], b[32];

	meta_uuid_format(mm->set_uuid, uuid);
	printf("created RAID%d, %d members, %s, chunk %s, md %s metadata, uuid %s\n", ca->geom.level, pl->n,
	       layout_name(ca->geom.level, ca->geom.layout), fmt_size(ca->geom.chunk_bytes, a, sizeof(a)),
	       ca->fmt->name, uuid);
	printf("array size %" PRIu64 " bytes (%s)", pl->array_bytes, fmt_size(pl->array_bytes, a, sizeof(a)));
	if (ca->from)
		printf(", first %" PRIu64 " bytes from %s", in_bytes, ca->from);
	printf("\nmembers: %s/%s0.img .. %s%d.img (%s each, data at %s)\n", ca->outdir, ca->prefix, ca->prefix,
	       pl->n - 1, fmt_size(ca->image_bytes, a, sizeof(a)), fmt_size(ca->data_offset, b, sizeof(b)));
}

int cmd_create(int argc, char **argv)
{
	struct create_args ca;
	struct create_plan pl = { .in_fd = -1 };
	struct source *mem[LAYOUT_MAX_DISKS] = { NULL };
	struct outfile of[LAYOUT_MAX_DISKS];
	struct member_meta mm;
	uint64_t in_bytes = 0;
	int ret = EXIT_ERR, r;

	for (int i = 0; i < LAYOUT_MAX_DISKS; i++)
		of[i].fd = -1;
	r = parse_create_args(argc, argv, &ca);
	if (r)
		return r > 0 ? EXIT_OK : EXIT_ERR;
	if (open_input(&ca, &pl) || plan_sizes(&ca, &pl) || array_meta(&ca, &pl, &mm) || check_outdir(&ca))
		goto out;
	if (open_members(&ca, &pl, of, mem) || write_data(&ca, &pl, mem, &in_bytes))
		goto fail;
	for (int i = 0; i < pl.n; i++)
		if (write_member_super(&ca, &pl, &mm, i, mem[i]))
			goto fail;
	if (commit_members(&pl, of, mem))
		goto fail;
	print_summary(&ca, &pl, &mm, in_bytes);
	ret = EXIT_OK;
	goto out;
fail:
	msg("create: nothing written (member files removed)");
out:
	for (int i = 0; i < pl.n; i++) {
		source_close(mem[i]);
		outfile_abort(&of[i]);
	}
	if (pl.in_fd > STDIN_FILENO)
		close(pl.in_fd);
	return ret;
}
