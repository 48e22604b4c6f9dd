/* cmd_create.c - raidimg create: write member images of a new md array.
 *
 * The images carry md superblocks (0.90, 1.0, 1.1 or 1.2) that Linux md
 * accepts, and data with consistent P (and Q): the array's contents are a
 * given file's bytes (--from) followed by zeros, or all zeros.  Zero stripes
 * are not written, so the images stay sparse.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "parity.h"
#include "util.h"

struct create_args {
	struct layout_geom geom;
	const char *metadata;        /* "1.2" ... "0.90" */
	uint64_t image_bytes;        /* 0 = fit --from */
	uint64_t data_offset;        /* bytes; UINT64_MAX = the format's default */
	const char *from;
	const char *outdir;
	const char *name;
	const char *prefix;          /* member file name prefix */
	bool force;
};

/* Sectors of each image the array can use, for an image of dev_sectors. */
static uint64_t usable_sectors(const char *fmt, uint64_t dev_sectors, uint64_t data_offset_sectors)
{
	if (!strcmp(fmt, "0.90")) {
		uint64_t sb = md0_super_offset(dev_sectors);
		return sb;
	}
	if (!strcmp(fmt, "1.0")) {
		uint64_t sb = md1_super_offset(0, dev_sectors);
		/* mdadm keeps 8 sectors below the superblock for the bad block log */
		return sb > 16 ? sb - 16 : 0;
	}
	return dev_sectors > data_offset_sectors ? dev_sectors - data_offset_sectors : 0;
}

static int fmt_minor(const char *fmt)
{
	if (!strcmp(fmt, "1.0")) return 0;
	if (!strcmp(fmt, "1.1")) return 1;
	if (!strcmp(fmt, "1.2")) return 2;
	return -1;
}

static int random_bytes(uint8_t *p, size_t n)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = read(fd, p, n);
	close(fd);
	return r == (ssize_t)n ? 0 : -EIO;
}

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

/* Read up to len bytes (less only at end of input). */
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

/* Fill the members' data areas from `in` (or leave zeros), stripe batch by
 * stripe batch.  Returns 0 or -errno (message printed). */
static int write_data(const struct create_args *ca, struct source **mem, uint64_t data_offset,
		      uint64_t stripes, int in_fd, uint64_t *in_bytes)
{
	const struct layout_geom *g = &ca->geom;
	int n = g->raid_disks, k = layout_data_disks(g);
	uint64_t cb = g->chunk_bytes;
	uint64_t rows = (4u << 20) / cb ? (4u << 20) / cb : 1;
	uint8_t *in = NULL, *mbuf[LAYOUT_MAX_DISKS] = { NULL };
	uint8_t *slots[LAYOUT_MAX_DISKS];
	struct stripe_map map;
	bool eof = in_fd < 0;
	int ret = 0;

	*in_bytes = 0;
	if (eof)
		return 0;
	in = xaligned_alloc((size_t)(rows * cb * (uint64_t)k));
	for (int d = 0; d < n; d++)
		mbuf[d] = xaligned_alloc((size_t)(rows * cb));
	for (int d = 0; d < n; d++)
		if (!mbuf[d])
			in = NULL;
	if (!in) {
		msg("out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (uint64_t s0 = 0; s0 < stripes && !eof; s0 += rows) {
		uint64_t nr = stripes - s0 < rows ? stripes - s0 : rows;
		size_t want = (size_t)(nr * cb * (uint64_t)k);
		ssize_t got = read_full(in_fd, in, want);

		if (got < 0) {
			msg("%s: read error: %s", ca->from, strerror((int)-got));
			ret = (int)got;
			goto out;
		}
		*in_bytes += (uint64_t)got;
		if ((size_t)got < want) {
			memset(in + got, 0, want - (size_t)got);
			eof = true;
		}
		if (all_zero(in, want))
			continue;       /* zeros and their parity are already there (sparse) */
		for (uint64_t r = 0; r < nr; r++) {
			size_t ro = (size_t)(r * cb);

			layout_map_stripe(g, s0 + r, &map);
			for (int d = 0; d < k; d++)
				memcpy(mbuf[map.data_disk[d]] + ro, in + (r * (uint64_t)k + (uint64_t)d) * cb, cb);
			if (g->level == 6) {
				for (int i = 0; i < map.q_slots; i++)
					slots[i] = NULL;
				for (int disk = 0; disk < n; disk++)
					if (map.disk_slot[disk] >= 0)
						slots[map.disk_slot[disk]] = mbuf[disk] + ro;
				parity_gen_pq(map.q_slots, cb, slots, mbuf[map.p_disk] + ro, mbuf[map.q_disk] + ro);
			} else {
				for (int d = 0; d < k; d++)
					slots[d] = mbuf[map.data_disk[d]] + ro;
				parity_gen_p(k, cb, slots, mbuf[map.p_disk] + ro);
			}
		}
		for (int disk = 0; disk < n; disk++) {
			ret = source_pwrite(mem[disk], mbuf[disk], (size_t)(nr * cb), data_offset + s0 * cb);
			if (ret) {
				msg("%s: write error: %s", mem[disk]->path, strerror(-ret));
				goto out;
			}
		}
	}
	if (!eof) {
		uint8_t extra;
		if (read(in_fd, &extra, 1) == 1) {
			msg("%s: larger than the array (%" PRIu64 " bytes); give a larger --size",
			    ca->from, stripes * cb * (uint64_t)k);
			ret = -EFBIG;
		}
	}
out:
	free(in);
	for (int d = 0; d < n; d++)
		free(mbuf[d]);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: raidimg create --level 4|5|6 --devices N -o DIR [OPTIONS]\n\n"
		   "Write the member images of a new md array (DIR/member0.img ...), with md\n"
		   "metadata that Linux md accepts and consistent parity.  The array holds the\n"
		   "bytes of --from FILE followed by zeros (all zeros without --from); zero\n"
		   "stripes are left sparse.\n\n"
		   "  --level L           4, 5 or 6\n"
		   "  --devices N         number of members (RAID5 >= 2, RAID6 >= 4)\n"
		   "  --chunk SIZE        chunk size (default 512K)\n"
		   "  --layout NAME|NUM   md layout (default left-symmetric)\n"
		   "  --metadata V        0.90, 1.0, 1.1 or 1.2 (default 1.2)\n"
		   "  --size SIZE         size of each member image (default: just enough for --from)\n"
		   "  --data-offset SIZE  where data starts in each image (1.1/1.2; default 1M)\n"
		   "  --from FILE         the array's contents ('-' for stdin)\n"
		   "  --name NAME         array name stored in 1.x metadata (default raidimg)\n"
		   "  --prefix P          member file names P0.img, P1.img... (default member)\n"
		   "  -o, --output DIR    where to write (created if needed)\n"
		   "  --force             overwrite existing member files\n"
		   "  -h, --help          this text\n");
}

static int parse_create_args(int argc, char **argv, struct create_args *ca)
{
	enum { O_LEVEL = 0x3001, O_DEVICES, O_CHUNK, O_LAYOUT, O_META, O_SIZE, O_DOFF, O_FROM, O_NAME,
	       O_PREFIX, O_FORCE };
	static const struct option longopts[] = {
		{ "level", required_argument, NULL, O_LEVEL },
		{ "devices", required_argument, NULL, O_DEVICES },
		{ "raid-devices", required_argument, NULL, O_DEVICES },
		{ "chunk", required_argument, NULL, O_CHUNK },
		{ "layout", required_argument, NULL, O_LAYOUT },
		{ "metadata", required_argument, NULL, O_META },
		{ "size", required_argument, NULL, O_SIZE },
		{ "data-offset", required_argument, NULL, O_DOFF },
		{ "from", required_argument, NULL, O_FROM },
		{ "name", required_argument, NULL, O_NAME },
		{ "prefix", required_argument, NULL, O_PREFIX },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, O_FORCE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *layout = NULL;
	long long v;
	uint64_t sz;
	int opt;
	const char *why = NULL;

	memset(ca, 0, sizeof(*ca));
	ca->geom.chunk_bytes = 512 * 1024;
	ca->metadata = "1.2";
	ca->data_offset = UINT64_MAX;
	ca->name = "raidimg";
	ca->prefix = "member";
	while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_LEVEL:
			if (parse_int(optarg, 4, 6, &v)) {
				msg("--level %s: give 4, 5 or 6", optarg);
				return -1;
			}
			ca->geom.level = (int)v;
			break;
		case O_DEVICES:
			if (parse_int(optarg, 2, LAYOUT_MAX_DISKS, &v)) {
				msg("--devices %s: give a number from 2 to %d", optarg, LAYOUT_MAX_DISKS);
				return -1;
			}
			ca->geom.raid_disks = (int)v;
			break;
		case O_CHUNK:
			if (parse_size(optarg, &sz) || sz < 4096 || sz > (1u << 30) || (sz & (sz - 1))) {
				msg("--chunk %s: the chunk size must be a power of two between 4K and 1G", optarg);
				return -1;
			}
			ca->geom.chunk_bytes = (uint32_t)sz;
			break;
		case O_LAYOUT: layout = optarg; break;
		case O_META:
			if (!strcmp(optarg, "0.90") || !strcmp(optarg, "0.9") || !strcmp(optarg, "0"))
				ca->metadata = "0.90";
			else if (!strcmp(optarg, "1.0") || !strcmp(optarg, "1.1") || !strcmp(optarg, "1.2"))
				ca->metadata = optarg;
			else if (!strcmp(optarg, "1"))
				ca->metadata = "1.2";
			else {
				msg("--metadata %s: give 0.90, 1.0, 1.1 or 1.2", optarg);
				return -1;
			}
			break;
		case O_SIZE:
			if (parse_size(optarg, &sz) || sz == 0) {
				msg("--size %s: not a size", optarg);
				return -1;
			}
			ca->image_bytes = sz;
			break;
		case O_DOFF:
			if (parse_size(optarg, &sz) || sz % 4096) {
				msg("--data-offset %s: give a multiple of 4K", optarg);
				return -1;
			}
			ca->data_offset = sz;
			break;
		case O_FROM: ca->from = optarg; break;
		case O_NAME:
			if (strlen(optarg) > 32) {
				msg("--name %s: at most 32 characters", optarg);
				return -1;
			}
			ca->name = optarg;
			break;
		case O_PREFIX: ca->prefix = optarg; break;
		case 'o': ca->outdir = optarg; break;
		case O_FORCE: ca->force = true; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		msg("create: unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!ca->geom.level || !ca->geom.raid_disks || !ca->outdir) {
		msg("create needs --level, --devices and -o DIR (raidimg create --help)");
		return -1;
	}
	if (!ca->image_bytes && !ca->from) {
		msg("create needs --size (or --from FILE to size the members to fit it)");
		return -1;
	}
	ca->geom.layout = LAYOUT_LEFT_SYMMETRIC;
	if (ca->geom.level == 4)
		ca->geom.layout = LAYOUT_PARITY_N;
	if (layout && layout_from_name(ca->geom.level, layout, &ca->geom.layout)) {
		msg("--layout %s: not a RAID%d layout", layout, ca->geom.level);
		return -1;
	}
	if (layout_check(&ca->geom, &why)) {
		msg("create: %s", why ? why : "invalid geometry");
		return -1;
	}
	if (!strcmp(ca->metadata, "0.90") && ca->geom.raid_disks > 27) {
		msg("create: md 0.90 metadata holds at most 27 members");
		return -1;
	}
	if (ca->data_offset != UINT64_MAX && (!strcmp(ca->metadata, "0.90") || !strcmp(ca->metadata, "1.0"))) {
		msg("--data-offset: md %s keeps data at the start of the image; it only applies to 1.1 and 1.2",
		    ca->metadata);
		return -1;
	}
	if (ca->data_offset == UINT64_MAX)
		ca->data_offset = fmt_minor(ca->metadata) >= 1 ? 1u << 20 : 0;
	return 0;
}

int cmd_create(int argc, char **argv)
{
	struct create_args ca;
	struct source *mem[LAYOUT_MAX_DISKS] = { NULL };
	struct member_meta mm;
	uint8_t sb[8192];
	uint64_t dev_sectors, component, stripes, in_bytes = 0, cb;
	int k, in_fd = -1, ret = EXIT_ERR, r, n;
	char path[4096], err[512], sz1[32];
	struct stat st;

	r = parse_create_args(argc, argv, &ca);
	if (r)
		return r > 0 ? EXIT_OK : EXIT_ERR;
	n = ca.geom.raid_disks;
	k = layout_data_disks(&ca.geom);
	cb = ca.geom.chunk_bytes;
	if (ca.from) {
		if (!strcmp(ca.from, "-")) {
			in_fd = STDIN_FILENO;
		} else {
			in_fd = open(ca.from, O_RDONLY | O_CLOEXEC);
			if (in_fd < 0) {
				msg("%s: cannot open: %s", ca.from, strerror(errno));
				return EXIT_ERR;
			}
		}
		if (!ca.image_bytes) {
			uint64_t need;
			if (fstat(in_fd, &st) || !S_ISREG(st.st_mode)) {
				msg("%s: not a regular file: give --size", ca.from);
				goto out;
			}
			/* component: enough whole chunks; image: component + metadata room */
			need = ((uint64_t)st.st_size + cb * (uint64_t)k - 1) / (cb * (uint64_t)k) * cb;
			if (need == 0)
				need = cb;
			ca.image_bytes = need + ca.data_offset + (128u << 10);
			ca.image_bytes = (ca.image_bytes + 65535) & ~65535ull;
		}
	}
	dev_sectors = ca.image_bytes / 512;
	component = usable_sectors(ca.metadata, dev_sectors, ca.data_offset / 512);
	component -= component % (cb / 512);
	if (component == 0) {
		msg("create: --size %s leaves no room for a chunk of data", fmt_size(ca.image_bytes, sz1, sizeof(sz1)));
		goto out;
	}
	stripes = component * 512 / cb;

	if (mkdir(ca.outdir, 0755) && errno != EEXIST) {
		msg("%s: cannot create directory: %s", ca.outdir, strerror(errno));
		goto out;
	}
	memset(&mm, 0, sizeof(mm));
	snprintf(mm.format, sizeof(mm.format), "%s", ca.metadata);
	if (random_bytes(mm.set_uuid, 16)) {
		msg("cannot read /dev/urandom");
		goto out;
	}
	snprintf(mm.set_name, sizeof(mm.set_name), "%s", ca.name);
	mm.level = ca.geom.level;
	mm.layout = ca.geom.level == 4 ? 0 : ca.geom.layout;
	mm.chunk_bytes = ca.geom.chunk_bytes;
	mm.raid_disks = n;
	mm.component_sectors = component;
	mm.data_offset = ca.data_offset / 512;
	mm.data_size = usable_sectors(ca.metadata, dev_sectors, ca.data_offset / 512);
	mm.events = 1;
	mm.ctime = mm.utime = (uint64_t)time(NULL);
	mm.resync_offset = UINT64_MAX;
	mm.recovery_offset = UINT64_MAX;
	mm.max_dev = n;
	for (int i = 0; i < META_MAX_DEVS; i++)
		mm.dev_roles[i] = (int16_t)(i < n ? i : META_ROLE_SPARE);

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s%d.img", ca.outdir, ca.prefix, i);
		if (!ca.force && !access(path, F_OK)) {
			msg("%s: exists; refusing to overwrite it (--force to replace)", path);
			goto out;
		}
		if (source_open_raw(path, SOURCE_WRITE | SOURCE_CREATE, &mem[i], err, sizeof(err))) {
			msg("%s", err);
			goto out;
		}
		r = mem[i]->ops->truncate(mem[i], ca.image_bytes);
		if (r) {
			msg("%s: cannot set size: %s", path, strerror(-r));
			goto out;
		}
	}
	if (write_data(&ca, mem, ca.data_offset, stripes, in_fd, &in_bytes))
		goto out;
	for (int i = 0; i < n; i++) {
		uint64_t sb_off;
		size_t sb_len;

		mm.dev_number = i;
		mm.role = i;
		if (random_bytes(mm.device_uuid, 16)) {
			msg("cannot read /dev/urandom");
			goto out;
		}
		memset(sb, 0, sizeof(sb));
		if (!strcmp(ca.metadata, "0.90"))
			r = md0_build(&mm, sb, sizeof(sb), dev_sectors, &sb_off, &sb_len);
		else {
			mm.super_offset = md1_super_offset(fmt_minor(ca.metadata), dev_sectors);
			r = md1_build(&mm, sb, sizeof(sb), dev_sectors, &sb_off, &sb_len);
		}
		if (r) {
			msg("create: cannot build the md %s superblock: %s", ca.metadata, strerror(-r));
			goto out;
		}
		r = source_pwrite(mem[i], sb, sb_len, sb_off);
		if (!r)
			r = mem[i]->ops->sync(mem[i]);
		if (r) {
			msg("%s: write error: %s", mem[i]->path, strerror(-r));
			goto out;
		}
	}
	{
		char uuid[40], asz[32];
		meta_uuid_format(mm.set_uuid, uuid);
		printf("created RAID%d, %d members, %s, chunk %s, md %s metadata, uuid %s\n", ca.geom.level, n,
		       layout_name(ca.geom.level, ca.geom.layout), fmt_size(cb, sz1, sizeof(sz1)), ca.metadata, uuid);
		printf("array size %" PRIu64 " bytes (%s)", component * 512 * (uint64_t)k,
		       fmt_size(component * 512 * (uint64_t)k, asz, sizeof(asz)));
		if (ca.from)
			printf(", first %" PRIu64 " bytes from %s", in_bytes, ca.from);
		printf("\nmembers: %s/%s0.img .. %s%d.img (%s each)\n", ca.outdir, ca.prefix, ca.prefix, n - 1,
		       fmt_size(ca.image_bytes, asz, sizeof(asz)));
	}
	ret = EXIT_OK;
out:
	for (int i = 0; i < n; i++)
		source_close(mem[i]);
	if (in_fd > STDIN_FILENO)
		close(in_fd);
	return ret;
}
