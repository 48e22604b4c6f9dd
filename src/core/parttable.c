/* parttable.c - MBR (with EBR chains) and GPT partition tables, Linux numbering.
 *
 * Facts used (sources: docs/partition-facts.md): MBR signature 0x55AA at 510, four
 * 16-byte entries at 0x1BE (boot indicator, ..., system id at +4, start LBA
 * le32 at +8, sector count le32 at +12); extended ids 0x05, 0x0F, 0x85; in an
 * EBR, data entries are relative to that EBR, the link entry is relative to
 * the start of the outermost extended partition.  GPT header at LBA 1,
 * "EFI PART", CRC-32 of HeaderSize bytes with the CRC field zeroed, entry
 * array CRC-32, backup header at the last LBA.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "le.h"
#include "parttable.h"
#include "util.h"

#define MBR_SIG_OFF 510
#define MBR_PT_OFF 0x1be
#define MBR_DISKID_OFF 0x1b8
#define GPT_HDR_MIN 92
#define GPT_SECTOR_MAX 4096

struct pctx {
	const struct dev_reader *dev;
	unsigned ss;            /* sector size */
	uint64_t nsect;         /* whole sectors in the image */
	int flags;
	struct pt_table *t;
	unsigned cap;           /* allocated entries of t->parts */
	char *err;
	size_t errlen;
};

static void warn(struct pt_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct pt_table *t, const char *fmt, ...)
{
	size_t used = strlen(t->warnings);
	va_list ap;

	if (used + 4 >= sizeof(t->warnings))
		return;
	if (used) {
		memcpy(t->warnings + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(t->warnings + used, sizeof(t->warnings) - used, fmt, ap);
	va_end(ap);
}

/* Bounds-checked read through the reader. */
static int rd(const struct dev_reader *dev, void *buf, size_t len, uint64_t off)
{
	if (off > dev->size || len > dev->size - off)
		return -EIO;
	return dev->read(dev->ctx, buf, len, off);
}

void pt_guid_to_str(const uint8_t g[16], char *out, size_t outlen)
{
	snprintf(out, outlen,
		 "%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X",
		 get_le32(g), get_le16(g + 4), get_le16(g + 6), g[8], g[9],
		 g[10], g[11], g[12], g[13], g[14], g[15]);
}

const char *pt_kind_name(enum pt_kind k)
{
	switch (k) {
	case PT_MBR: return "dos";
	case PT_GPT: return "gpt";
	default: return "none";
	}
}

static const struct {
	uint8_t id;
	const char *name;
} mbr_types[] = {
	{ 0x01, "FAT12" }, { 0x04, "FAT16 <32M" }, { 0x05, "Extended" },
	{ 0x06, "FAT16" }, { 0x07, "HPFS/NTFS/exFAT" }, { 0x0b, "W95 FAT32" },
	{ 0x0c, "W95 FAT32 (LBA)" }, { 0x0e, "W95 FAT16 (LBA)" },
	{ 0x0f, "W95 Ext'd (LBA)" }, { 0x82, "Linux swap / Solaris" },
	{ 0x83, "Linux" }, { 0x85, "Linux extended" }, { 0x8e, "Linux LVM" },
	{ 0xa5, "FreeBSD" }, { 0xda, "Non-FS data" }, { 0xee, "GPT" },
	{ 0xef, "EFI (FAT-12/16/32)" }, { 0xfd, "Linux raid autodetect" },
};

/* GPT type GUIDs as text (the on-disk bytes are compared through the text). */
static const struct {
	const char *guid;
	const char *name;
} gpt_types[] = {
	{ "A19D880F-05FC-4D3B-A006-743F0F84911E", "Linux RAID" },
	{ "0FC63DAF-8483-4772-8E79-3D69D8477DE4", "Linux filesystem" },
	{ "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F", "Linux swap" },
	{ "E6D6D379-F507-44C2-A23C-238F2A3DF928", "Linux LVM" },
	{ "933AC7E1-2EB4-4F13-B844-0E14E2AEF915", "Linux home" },
	{ "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709", "Linux root (x86-64)" },
	{ "44479540-F297-41B2-9AF7-D131D5F0458A", "Linux root (x86)" },
	{ "CA7D7CCB-63ED-4C53-861C-1742536059CC", "Linux LUKS" },
	{ "C12A7328-F81F-11D2-BA4B-00A0C93EC93B", "EFI System" },
	{ "21686148-6449-6E6F-744E-656564454649", "BIOS boot" },
	{ "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7", "Microsoft basic data" },
	{ "E3C9E316-0B5C-4DB8-817D-F92DF00215AE", "Microsoft reserved" },
	{ "DE94BBA4-06D1-4D40-A16A-BFD50179D6AC", "Windows recovery environment" },
	{ "5808C8AA-7E8F-42E0-85D2-E1E90434CFB3", "Windows LDM metadata" },
	{ "AF9B60A0-1431-4F62-BC68-3311714A69AD", "Windows LDM data" },
	{ "48465300-0000-11AA-AA11-00306543ECAC", "Apple HFS/HFS+" },
	{ "7C3457EF-0000-11AA-AA11-00306543ECAC", "Apple APFS" },
	{ "6A898CC3-1DD2-11B2-99A6-080020736631", "Solaris /usr & Apple ZFS" },
	{ "516E7CB6-6ECF-11D6-8FF8-00022D09712B", "FreeBSD UFS" },
};

static const char *mbr_type_name(uint8_t id)
{
	for (size_t i = 0; i < sizeof(mbr_types) / sizeof(mbr_types[0]); i++)
		if (mbr_types[i].id == id)
			return mbr_types[i].name;
	return "";
}

static const char *gpt_type_name(const char *guid)
{
	for (size_t i = 0; i < sizeof(gpt_types) / sizeof(gpt_types[0]); i++)
		if (!strcmp(gpt_types[i].guid, guid))
			return gpt_types[i].name;
	return "";
}

static bool mbr_is_extended(uint8_t id)
{
	return id == 0x05 || id == 0x0f || id == 0x85;
}

/* Append p to the table (copied).  -ENOMEM, or -EINVAL past PT_MAX_PARTS. */
static int add_part(struct pctx *c, const struct pt_part *p)
{
	struct pt_table *t = c->t;

	if (t->nparts >= PT_MAX_PARTS) {
		fmt_err(c->err, c->errlen, "more than %d partitions: refusing the table", PT_MAX_PARTS);
		return -EINVAL;
	}
	if (t->nparts == c->cap) {
		unsigned ncap = c->cap ? c->cap * 2 : 16;
		struct pt_part *np = realloc(t->parts, ncap * sizeof(*np));

		if (!np) {
			fmt_err(c->err, c->errlen, "out of memory");
			return -ENOMEM;
		}
		t->parts = np;
		c->cap = ncap;
	}
	t->parts[t->nparts++] = *p;
	return 0;
}

/* Fill the byte range of p from first/count sectors and check it lies in the
 * image.  what names the partition for messages. */
static int set_range(struct pctx *c, struct pt_part *p, uint64_t first, uint64_t count, const char *what)
{
	uint64_t last = first + count - 1;   /* count >= 1, first < 2^64 - 2^33 here */

	p->first_lba = first;
	p->last_lba = last;
	p->start = first * c->ss;
	p->length = count * c->ss;
	if (last >= c->nsect) {
		if (c->flags & PT_ALLOW_TRUNCATED) {
			p->truncated = 1;
			warn(c->t, "%s (LBA %llu-%llu) reaches past the end of the image (%llu sectors): truncated image",
			     what, (unsigned long long)first, (unsigned long long)last,
			     (unsigned long long)c->nsect);
			return 0;
		}
		fmt_err(c->err, c->errlen,
		       "%s (LBA %llu-%llu) reaches past the end of the image (%llu sectors of %u bytes)",
		       what, (unsigned long long)first, (unsigned long long)last,
		       (unsigned long long)c->nsect, c->ss);
		return -EINVAL;
	}
	return 0;
}

static int cmp_start(const void *a, const void *b)
{
	const struct pt_part *x = *(const struct pt_part *const *)a;
	const struct pt_part *y = *(const struct pt_part *const *)b;

	if (x->first_lba != y->first_lba)
		return x->first_lba < y->first_lba ? -1 : 1;
	return x->number < y->number ? -1 : (x->number > y->number);
}

static int cmp_number(const void *a, const void *b)
{
	const struct pt_part *x = a, *y = b;

	return x->number < y->number ? -1 : (x->number > y->number);
}

/* Refuse overlapping partitions.  which: 0 = every partition but extended
 * containers; 1 = primaries only (extended containers included). */
static int check_overlaps(struct pctx *c, int which)
{
	struct pt_table *t = c->t;
	const struct pt_part **v;
	unsigned n = 0;
	int ret = 0;

	if (t->nparts < 2)
		return 0;
	v = malloc(t->nparts * sizeof(*v));
	if (!v) {
		fmt_err(c->err, c->errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < t->nparts; i++) {
		const struct pt_part *p = &t->parts[i];

		if (which == 0 && p->is_extended)
			continue;
		if (which == 1 && p->is_logical)
			continue;
		v[n++] = p;
	}
	qsort(v, n, sizeof(*v), cmp_start);
	for (unsigned i = 1; i < n; i++) {
		/* v sorted by start: compare with the one ending last so far is
		 * enough to find an overlap; the previous one is reported. */
		if (v[i]->first_lba <= v[i - 1]->last_lba) {
			fmt_err(c->err, c->errlen,
			       "partitions %u (LBA %llu-%llu) and %u (LBA %llu-%llu) overlap",
			       v[i - 1]->number, (unsigned long long)v[i - 1]->first_lba,
			       (unsigned long long)v[i - 1]->last_lba, v[i]->number,
			       (unsigned long long)v[i]->first_lba, (unsigned long long)v[i]->last_lba);
			ret = -EINVAL;
			break;
		}
	}
	free(v);
	return ret;
}

/* ---------------------------------------------------------------- MBR */

struct mbr_entry {
	uint8_t boot, type;
	uint32_t start, count;
};

static void mbr_entry_get(const uint8_t *sec, int i, struct mbr_entry *e)
{
	const uint8_t *p = sec + MBR_PT_OFF + 16 * i;

	e->boot = p[0];
	e->type = p[4];
	e->start = get_le32(p + 8);
	e->count = get_le32(p + 12);
}

static void mbr_fill_type(struct pt_part *p, uint8_t type)
{
	p->mbr_type = type;
	snprintf(p->type, sizeof(p->type), "0x%02x", type);
	p->type_name = mbr_type_name(type);
	p->is_linux_raid = (type == 0xfd);
}

/* Follow the EBR chain of the extended partition at ext_first, ext_count
 * sectors (numbered ext_no), adding logical partitions from *next_no. */
static int mbr_parse_extended(struct pctx *c, unsigned ext_no, uint64_t ext_first,
			      uint64_t ext_count, unsigned *next_no)
{
	uint64_t visited[PT_MAX_EBRS];
	uint64_t ebr = ext_first, ebr_count = ext_count;
	uint64_t ext_end = ext_first + ext_count;   /* exclusive */
	uint8_t sec[512];
	unsigned links;
	int ret;

	for (links = 0;; links++) {
		struct mbr_entry e;
		int i;

		if (links >= PT_MAX_EBRS) {
			fmt_err(c->err, c->errlen,
			       "extended partition %u: EBR chain longer than %d links: refusing it",
			       ext_no, PT_MAX_EBRS);
			return -EINVAL;
		}
		for (unsigned k = 0; k < links; k++) {
			if (visited[k] == ebr) {
				fmt_err(c->err, c->errlen,
				       "extended partition %u: EBR chain loops: link %u goes back to the EBR at LBA %llu (link %u)",
				       ext_no, links, (unsigned long long)ebr, k);
				return -EINVAL;
			}
		}
		visited[links] = ebr;
		if (ebr >= c->nsect) {
			if (c->flags & PT_ALLOW_TRUNCATED) {
				warn(c->t, "extended partition %u: EBR at LBA %llu is past the end of the image: chain cut",
				     ext_no, (unsigned long long)ebr);
				return 0;
			}
			fmt_err(c->err, c->errlen,
			       "extended partition %u: EBR at LBA %llu is past the end of the image (%llu sectors)",
			       ext_no, (unsigned long long)ebr, (unsigned long long)c->nsect);
			return -EINVAL;
		}
		ret = rd(c->dev, sec, sizeof(sec), ebr * c->ss);
		if (ret) {
			fmt_err(c->err, c->errlen, "extended partition %u: reading the EBR at LBA %llu: %s",
			       ext_no, (unsigned long long)ebr, strerror(-ret));
			return ret;
		}
		if (sec[MBR_SIG_OFF] != 0x55 || sec[MBR_SIG_OFF + 1] != 0xaa) {
			/* Linux stops the chain here without complaint. */
			warn(c->t, "extended partition %u: EBR at LBA %llu has no 0x55AA signature: chain ends there",
			     ext_no, (unsigned long long)ebr);
			return 0;
		}
		/* Data partitions: any non-extended entry with sectors (Linux
		 * also takes entries 3 and 4, but only if they fit). */
		for (i = 0; i < 4; i++) {
			struct pt_part p;
			uint64_t first;
			char what[96];

			mbr_entry_get(sec, i, &e);
			if (!e.count || mbr_is_extended(e.type))
				continue;
			first = ebr + e.start;
			if (i >= 2 && ((uint64_t)e.start + e.count > ebr_count ||
				       first + e.count > ext_end)) {
				warn(c->t, "EBR at LBA %llu: entry %d (LBA %llu, %u sectors) lies outside its extended partition: ignored, as Linux does",
				     (unsigned long long)ebr, i + 1, (unsigned long long)first, e.count);
				continue;
			}
			memset(&p, 0, sizeof(p));
			p.number = (*next_no)++;
			p.is_logical = 1;
			p.bootable = (e.boot == 0x80);
			mbr_fill_type(&p, e.type);
			snprintf(what, sizeof(what), "logical partition %u (EBR at LBA %llu, entry %d)",
				 p.number, (unsigned long long)ebr, i + 1);
			if (e.start == 0) {
				fmt_err(c->err, c->errlen, "%s starts on its own EBR (relative start 0)", what);
				return -EINVAL;
			}
			if (first + e.count > ext_end) {
				fmt_err(c->err, c->errlen,
				       "%s (LBA %llu-%llu) reaches past the end of extended partition %u (LBA %llu-%llu)",
				       what, (unsigned long long)first,
				       (unsigned long long)(first + e.count - 1), ext_no,
				       (unsigned long long)ext_first, (unsigned long long)(ext_end - 1));
				return -EINVAL;
			}
			ret = set_range(c, &p, first, e.count, what);
			if (ret)
				return ret;
			ret = add_part(c, &p);
			if (ret)
				return ret;
		}
		/* The link: the first extended entry, relative to ext_first. */
		for (i = 0; i < 4; i++) {
			mbr_entry_get(sec, i, &e);
			if (e.count && mbr_is_extended(e.type))
				break;
		}
		if (i == 4)
			return 0;
		if (e.start == 0 || ext_first + e.start >= ext_end ||
		    ext_first + e.start + e.count > ext_end) {
			fmt_err(c->err, c->errlen,
			       "extended partition %u: EBR at LBA %llu links to LBA %llu (%u sectors), outside the extended partition (LBA %llu-%llu)",
			       ext_no, (unsigned long long)ebr,
			       (unsigned long long)(ext_first + e.start), e.count,
			       (unsigned long long)ext_first, (unsigned long long)(ext_end - 1));
			return -EINVAL;
		}
		ebr = ext_first + e.start;
		ebr_count = e.count;
	}
}

static int mbr_parse(struct pctx *c, const uint8_t *sec)
{
	struct pt_table *t = c->t;
	unsigned next_no = 5;
	int ret;

	t->kind = PT_MBR;
	for (int slot = 0; slot < 4; slot++) {
		struct mbr_entry e;
		struct pt_part p;
		char what[48];

		mbr_entry_get(sec, slot, &e);
		if (!e.count)
			continue;
		memset(&p, 0, sizeof(p));
		p.number = (unsigned)slot + 1;
		p.bootable = (e.boot == 0x80);
		p.is_extended = mbr_is_extended(e.type);
		mbr_fill_type(&p, e.type);
		snprintf(what, sizeof(what), "%s partition %u",
			 p.is_extended ? "extended" : "primary", p.number);
		if (e.start == 0) {
			fmt_err(c->err, c->errlen, "%s starts at LBA 0, on the MBR itself", what);
			return -EINVAL;
		}
		ret = set_range(c, &p, e.start, e.count, what);
		if (ret)
			return ret;
		ret = add_part(c, &p);
		if (ret)
			return ret;
		if (p.is_extended) {
			ret = mbr_parse_extended(c, p.number, e.start, e.count, &next_no);
			if (ret)
				return ret;
		}
	}
	ret = check_overlaps(c, 1);
	if (!ret)
		ret = check_overlaps(c, 0);
	return ret;
}

/* ---------------------------------------------------------------- GPT */

struct gpt_hdr {
	uint64_t lba;                 /* where it was read */
	uint32_t hdr_size, hdr_crc, revision;
	uint64_t my_lba, alt_lba, first_usable, last_usable;
	uint8_t disk_guid[16];
	uint64_t entries_lba;
	uint32_t nentries, entry_size, entries_crc;
	uint8_t *entries;             /* nentries * entry_size bytes, owned */
};

/* Read and check the GPT header at lba and its entry array.  0 with h
 * filled (h->entries to free), -EINVAL with why (a sentence) or a read
 * error.  *sig_seen is set when the "EFI PART" signature is there. */
static int gpt_read_header(struct pctx *c, uint64_t lba, bool primary, struct gpt_hdr *h,
			   bool *sig_seen, char *why, size_t whylen)
{
	uint8_t sec[GPT_SECTOR_MAX];
	uint64_t last_lba = c->nsect - 1, arr_bytes, arr_sectors, arr_end;
	uint32_t crc;
	int ret;

	memset(h, 0, sizeof(*h));
	h->lba = lba;
	*sig_seen = false;
	if (lba >= c->nsect) {
		fmt_err(why, whylen, "LBA %llu is past the end of the image", (unsigned long long)lba);
		return -EINVAL;
	}
	ret = rd(c->dev, sec, c->ss, lba * c->ss);
	if (ret) {
		fmt_err(why, whylen, "reading LBA %llu: %s", (unsigned long long)lba, strerror(-ret));
		return ret;
	}
	if (memcmp(sec, "EFI PART", 8)) {
		fmt_err(why, whylen, "no \"EFI PART\" signature at LBA %llu", (unsigned long long)lba);
		return -EINVAL;
	}
	*sig_seen = true;
	h->revision = get_le32(sec + 8);
	h->hdr_size = get_le32(sec + 12);
	h->hdr_crc = get_le32(sec + 16);
	h->my_lba = get_le64(sec + 24);
	h->alt_lba = get_le64(sec + 32);
	h->first_usable = get_le64(sec + 40);
	h->last_usable = get_le64(sec + 48);
	memcpy(h->disk_guid, sec + 56, 16);
	h->entries_lba = get_le64(sec + 72);
	h->nentries = get_le32(sec + 80);
	h->entry_size = get_le32(sec + 84);
	h->entries_crc = get_le32(sec + 88);

	if (h->hdr_size < GPT_HDR_MIN || h->hdr_size > c->ss) {
		fmt_err(why, whylen, "HeaderSize %u is not within %d..%u", h->hdr_size, GPT_HDR_MIN, c->ss);
		return -EINVAL;
	}
	memset(sec + 16, 0, 4);
	crc = crc32_update(0, sec, h->hdr_size);
	if (crc != h->hdr_crc) {
		fmt_err(why, whylen, "HeaderCRC32 0x%08x, computed 0x%08x: damaged header", h->hdr_crc, crc);
		return -EINVAL;
	}
	if (h->my_lba != lba) {
		fmt_err(why, whylen, "MyLBA %llu, but the header is at LBA %llu",
		       (unsigned long long)h->my_lba, (unsigned long long)lba);
		return -EINVAL;
	}
	if (h->first_usable > h->last_usable) {
		fmt_err(why, whylen, "FirstUsableLBA %llu > LastUsableLBA %llu",
		       (unsigned long long)h->first_usable, (unsigned long long)h->last_usable);
		return -EINVAL;
	}
	if (h->last_usable > last_lba && !(c->flags & PT_ALLOW_TRUNCATED)) {
		fmt_err(why, whylen, "LastUsableLBA %llu is past the last LBA of the image (%llu)",
		       (unsigned long long)h->last_usable, (unsigned long long)last_lba);
		return -EINVAL;
	}
	if (h->entry_size < 128 || h->entry_size > GPT_SECTOR_MAX ||
	    (h->entry_size & (h->entry_size - 1))) {
		fmt_err(why, whylen, "SizeOfPartitionEntry %u is not 128 x 2^n (<= %d)",
		       h->entry_size, GPT_SECTOR_MAX);
		return -EINVAL;
	}
	if (h->nentries > PT_MAX_GPT_ENTRIES) {
		fmt_err(why, whylen, "NumberOfPartitionEntries %u is more than %d",
		       h->nentries, PT_MAX_GPT_ENTRIES);
		return -EINVAL;
	}
	arr_bytes = (uint64_t)h->nentries * h->entry_size;
	if (arr_bytes > PT_MAX_GPT_ARRAY) {
		fmt_err(why, whylen, "partition entry array of %llu bytes (%u x %u) is larger than %u",
		       (unsigned long long)arr_bytes, h->nentries, h->entry_size, PT_MAX_GPT_ARRAY);
		return -EINVAL;
	}
	arr_sectors = (arr_bytes + c->ss - 1) / c->ss;
	if (h->entries_lba < 1 || h->entries_lba > last_lba || arr_sectors > c->nsect - h->entries_lba) {
		fmt_err(why, whylen, "PartitionEntryLBA %llu (%llu sectors) is not within the image (LBA 1-%llu)",
		       (unsigned long long)h->entries_lba, (unsigned long long)arr_sectors,
		       (unsigned long long)last_lba);
		return -EINVAL;
	}
	arr_end = h->entries_lba + arr_sectors;   /* exclusive */
	if (arr_sectors && lba >= h->entries_lba && lba < arr_end) {
		fmt_err(why, whylen, "the partition entry array (LBA %llu-%llu) covers the header",
		       (unsigned long long)h->entries_lba, (unsigned long long)(arr_end - 1));
		return -EINVAL;
	}
	if (arr_sectors && h->entries_lba <= h->last_usable && arr_end > h->first_usable) {
		fmt_err(why, whylen, "the partition entry array (LBA %llu-%llu) overlaps the usable LBAs %llu-%llu",
		       (unsigned long long)h->entries_lba, (unsigned long long)(arr_end - 1),
		       (unsigned long long)h->first_usable, (unsigned long long)h->last_usable);
		return -EINVAL;
	}
	if (primary && (h->first_usable <= lba)) {
		fmt_err(why, whylen, "FirstUsableLBA %llu is not after the header", (unsigned long long)h->first_usable);
		return -EINVAL;
	}
	if (!primary && h->last_usable >= lba) {
		fmt_err(why, whylen, "LastUsableLBA %llu is not before the backup header", (unsigned long long)h->last_usable);
		return -EINVAL;
	}
	if (arr_bytes) {
		h->entries = malloc(arr_bytes);
		if (!h->entries) {
			fmt_err(why, whylen, "out of memory");
			return -ENOMEM;
		}
		ret = rd(c->dev, h->entries, arr_bytes, h->entries_lba * c->ss);
		if (ret) {
			fmt_err(why, whylen, "reading the partition entry array at LBA %llu: %s",
			       (unsigned long long)h->entries_lba, strerror(-ret));
			goto fail;
		}
	}
	crc = crc32_update(0, h->entries, arr_bytes);
	if (crc != h->entries_crc) {
		fmt_err(why, whylen, "PartitionEntryArrayCRC32 0x%08x, computed 0x%08x: damaged entry array at LBA %llu",
		       h->entries_crc, crc, (unsigned long long)h->entries_lba);
		ret = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	free(h->entries);
	h->entries = NULL;
	return ret;
}

/* UTF-16LE name (n units, stops at NUL) to UTF-8; bad surrogates -> U+FFFD. */
static void utf16le_to_utf8(const uint8_t *in, unsigned n, char *out, size_t outlen)
{
	size_t o = 0;

	for (unsigned i = 0; i < n; i++) {
		uint32_t cp = get_le16(in + 2 * i);
		char tmp[4];
		size_t k;

		if (!cp)
			break;
		if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < n) {
			uint32_t lo = get_le16(in + 2 * (i + 1));

			if (lo >= 0xdc00 && lo <= 0xdfff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				i++;
			} else {
				cp = 0xfffd;
			}
		} else if (cp >= 0xd800 && cp <= 0xdfff) {
			cp = 0xfffd;
		}
		if (cp < 0x20 || cp == 0x7f)
			cp = 0xfffd;     /* no control characters in names we print */
		if (cp < 0x80) {
			tmp[0] = (char)cp;
			k = 1;
		} else if (cp < 0x800) {
			tmp[0] = (char)(0xc0 | (cp >> 6));
			tmp[1] = (char)(0x80 | (cp & 0x3f));
			k = 2;
		} else if (cp < 0x10000) {
			tmp[0] = (char)(0xe0 | (cp >> 12));
			tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
			tmp[2] = (char)(0x80 | (cp & 0x3f));
			k = 3;
		} else {
			tmp[0] = (char)(0xf0 | (cp >> 18));
			tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
			tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
			tmp[3] = (char)(0x80 | (cp & 0x3f));
			k = 4;
		}
		if (o + k + 1 > outlen)
			break;
		memcpy(out + o, tmp, k);
		o += k;
	}
	if (outlen)
		out[o] = 0;
}

static int gpt_entries_to_parts(struct pctx *c, const struct gpt_hdr *h)
{
	static const uint8_t zero[16];
	int ret;

	for (uint32_t i = 0; i < h->nentries; i++) {
		const uint8_t *e = h->entries + (size_t)i * h->entry_size;
		struct pt_part p;
		uint64_t first, last;
		char what[48];

		if (!memcmp(e, zero, 16))
			continue;
		memset(&p, 0, sizeof(p));
		p.number = i + 1;
		memcpy(p.type_guid, e, 16);
		memcpy(p.part_guid, e + 16, 16);
		first = get_le64(e + 32);
		last = get_le64(e + 40);
		p.gpt_attributes = get_le64(e + 48);
		pt_guid_to_str(p.type_guid, p.type, sizeof(p.type));
		p.type_name = gpt_type_name(p.type);
		p.is_linux_raid = !strcmp(p.type, "A19D880F-05FC-4D3B-A006-743F0F84911E");
		utf16le_to_utf8(e + 56, 36, p.name, sizeof(p.name));
		snprintf(what, sizeof(what), "GPT partition %u", p.number);
		if (last < first) {
			fmt_err(c->err, c->errlen, "%s: EndingLBA %llu < StartingLBA %llu", what,
			       (unsigned long long)last, (unsigned long long)first);
			return -EINVAL;
		}
		if (first > UINT64_MAX / 4 / c->ss || last > UINT64_MAX / 4 / c->ss) {
			/* keeps byte offsets from overflowing; set_range checks the rest */
			fmt_err(c->err, c->errlen,
			       "%s (LBA %llu-%llu) reaches past the end of the image (%llu sectors of %u bytes)",
			       what, (unsigned long long)first, (unsigned long long)last,
			       (unsigned long long)c->nsect, c->ss);
			return -EINVAL;
		}
		ret = set_range(c, &p, first, last - first + 1, what);
		if (ret)
			return ret;
		if (first < h->first_usable || last > h->last_usable) {
			fmt_err(c->err, c->errlen, "%s (LBA %llu-%llu) is outside the usable LBAs %llu-%llu",
			       what, (unsigned long long)first, (unsigned long long)last,
			       (unsigned long long)h->first_usable, (unsigned long long)h->last_usable);
			return -EINVAL;
		}
		ret = add_part(c, &p);
		if (ret)
			return ret;
	}
	return check_overlaps(c, 0);
}

/* Try GPT with sector size c->ss.  Returns 0 (found and parsed), -ENOENT (no
 * GPT signature at either place: try another sector size) or -errno with
 * c->err set. */
static int gpt_parse(struct pctx *c)
{
	struct pt_table *t = c->t;
	struct gpt_hdr pri, bak;
	const struct gpt_hdr *use;
	char why_p[256] = "", why_b[256] = "";
	bool sig_p = false, sig_b = false;
	int rp, rb = -EINVAL, ret;
	uint64_t bak_lba;

	memset(&bak, 0, sizeof(bak));
	if (c->nsect < 3)
		return -ENOENT;
	rp = gpt_read_header(c, 1, true, &pri, &sig_p, why_p, sizeof(why_p));
	if (rp == -ENOMEM) {
		fmt_err(c->err, c->errlen, "out of memory");
		return rp;
	}
	bak_lba = c->nsect - 1;
	if (!rp && pri.alt_lba != bak_lba)
		warn(t, "GPT: primary header's AlternateLBA %llu is not the last LBA %llu",
		     (unsigned long long)pri.alt_lba, (unsigned long long)bak_lba);
	rb = gpt_read_header(c, bak_lba, false, &bak, &sig_b, why_b, sizeof(why_b));
	if (rb == -ENOMEM) {
		free(pri.entries);
		fmt_err(c->err, c->errlen, "out of memory");
		return rb;
	}
	if (rp && rb) {
		if (!sig_p && !sig_b)
			return -ENOENT;
		fmt_err(c->err, c->errlen, "GPT: no usable header: primary (LBA 1): %s; backup (LBA %llu): %s",
		       why_p, (unsigned long long)bak_lba, why_b);
		return rp == -EINVAL ? rb : rp;
	}
	if (!rp) {
		use = &pri;
		t->gpt_header_used = PT_GPT_PRIMARY;
		if (rb)
			warn(t, "GPT: backup header (LBA %llu): %s; primary header used",
			     (unsigned long long)bak_lba, why_b);
		else if (bak.entries_crc != pri.entries_crc || bak.nentries != pri.nentries ||
			 memcmp(bak.disk_guid, pri.disk_guid, 16))
			warn(t, "GPT: primary and backup headers differ (entries CRC 0x%08x vs 0x%08x); primary used",
			     pri.entries_crc, bak.entries_crc);
	} else {
		use = &bak;
		t->gpt_header_used = PT_GPT_BACKUP;
		warn(t, "GPT: primary header (LBA 1): %s; backup header at LBA %llu used",
		     why_p, (unsigned long long)bak_lba);
	}
	t->kind = PT_GPT;
	t->gpt_header_lba = use->lba;
	memcpy(t->disk_guid, use->disk_guid, 16);
	pt_guid_to_str(t->disk_guid, t->disk_guid_str, sizeof(t->disk_guid_str));
	t->first_usable_lba = use->first_usable;
	t->last_usable_lba = use->last_usable;
	if (use->revision != 0x00010000)
		warn(t, "GPT: Revision 0x%08x (expected 0x00010000)", use->revision);
	ret = gpt_entries_to_parts(c, use);
	free(pri.entries);
	free(bak.entries);
	return ret;
}

/* ---------------------------------------------------------------- main */

void pt_table_free(struct pt_table *t)
{
	if (!t)
		return;
	free(t->parts);
	memset(t, 0, sizeof(*t));
}

static int has_gpt_sig(const struct dev_reader *dev, unsigned ss)
{
	uint8_t sig[8];

	if (dev->size < 2ull * ss || rd(dev, sig, 8, ss))
		return 0;
	return !memcmp(sig, "EFI PART", 8);
}

int pt_parse(const struct dev_reader *dev, unsigned sector_size, int flags,
	     struct pt_table *out, char *err, size_t errlen)
{
	static const unsigned auto_ss[] = { 512, 4096 };
	uint8_t mbr[512];
	struct pctx c;
	bool mbr_sig, mbr_boot_ok = true, pmbr = false;
	int ret, ee_slot = -1, others = 0;

	memset(out, 0, sizeof(*out));
	if (sector_size && sector_size != 512 && sector_size != 4096) {
		fmt_err(err, errlen, "sector size %u: only 512 and 4096 are supported", sector_size);
		return -EINVAL;
	}
	memset(&c, 0, sizeof(c));
	c.dev = dev;
	c.flags = flags;
	c.t = out;
	c.err = err;
	c.errlen = errlen;
	if (dev->size < 512) {
		out->sector_size = sector_size ? sector_size : 512;
		return 0;   /* too small for any table */
	}
	ret = rd(dev, mbr, sizeof(mbr), 0);
	if (ret) {
		fmt_err(err, errlen, "reading sector 0: %s", strerror(-ret));
		return ret;
	}
	mbr_sig = mbr[MBR_SIG_OFF] == 0x55 && mbr[MBR_SIG_OFF + 1] == 0xaa;
	if (mbr_sig) {
		for (int i = 0; i < 4; i++) {
			struct mbr_entry e;

			mbr_entry_get(mbr, i, &e);
			if (e.boot != 0 && e.boot != 0x80)
				mbr_boot_ok = false;
			if (e.type == 0xee) {
				if (ee_slot < 0)
					ee_slot = i;
			} else if (e.type) {
				others++;
			}
		}
		pmbr = mbr_boot_ok && ee_slot >= 0;
	}

	/* GPT: with a protective MBR, or a bare "EFI PART" header without one. */
	if (pmbr || !mbr_sig || !mbr_boot_ok) {
		for (size_t i = 0; i < 2; i++) {
			unsigned ss = sector_size ? sector_size : auto_ss[i];

			if (sector_size && i)
				break;
			if (!pmbr && !has_gpt_sig(dev, ss))
				continue;
			c.ss = ss;
			c.nsect = dev->size / ss;
			out->sector_size = ss;
			ret = gpt_parse(&c);
			if (ret == -ENOENT)
				continue;
			if (ret) {
				pt_table_free(out);
				return ret;
			}
			out->protective_mbr = pmbr;
			if (pmbr) {
				struct mbr_entry e;

				mbr_entry_get(mbr, ee_slot, &e);
				out->hybrid_mbr = others > 0;
				if (others)
					warn(out, "hybrid MBR: %d MBR entries besides the 0xEE one are ignored, GPT used", others);
				if (e.start != 1)
					warn(out, "protective MBR entry starts at LBA %u, not 1", e.start);
			} else {
				warn(out, "GPT header found but no protective MBR (type 0xEE) in sector 0");
			}
			if (out->nparts)
				qsort(out->parts, out->nparts, sizeof(*out->parts), cmp_number);
			return 0;
		}
		if (pmbr) {
			pt_table_free(out);
			fmt_err(err, errlen,
			       "protective MBR (type 0xEE in entry %d) but no GPT header at LBA 1 nor at the last LBA",
			       ee_slot + 1);
			return -EINVAL;
		}
		memset(out, 0, sizeof(*out));
		out->sector_size = sector_size ? sector_size : 512;
		if (mbr_sig && !mbr_boot_ok)
			warn(out, "sector 0 ends in 0x55AA but its boot indicators are not 0x00/0x80: not a partition table (a boot sector?)");
		return 0;
	}

	/* MBR */
	c.ss = sector_size ? sector_size : 512;
	c.nsect = dev->size / c.ss;
	out->sector_size = c.ss;
	out->mbr_disk_id = get_le32(mbr + MBR_DISKID_OFF);
	if (has_gpt_sig(dev, c.ss))
		warn(out, "a GPT signature at LBA 1 is ignored: the MBR has no protective 0xEE entry (stale GPT?)");
	ret = mbr_parse(&c, mbr);
	if (ret) {
		pt_table_free(out);
		return ret;
	}
	if (out->nparts)        /* qsort wants a buffer even for none */
		qsort(out->parts, out->nparts, sizeof(*out->parts), cmp_number);
	return 0;
}
