/* picture.c - the provenance of an array's bytes as an SVG (picture.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "picture.h"
#include "util.h"

#define MAX_BANDS 640           /* pixel rows of a member column */
#define COL_W 64
#define COL_GAP 16
#define LEFT 96
#define TOP 96
#define LEGEND_H 150

struct picture {
	const struct array *a;
	int n;                      /* members */
	uint32_t nbands;
	uint64_t band_bytes;
	pthread_mutex_t lock;
	uint64_t *bytes;            /* [n][nbands][PIC_NCLASSES] */
	uint64_t totals[PIC_NCLASSES];
};

static const char *const class_name[PIC_NCLASSES] = { "direct", "rebuilt", "untrusted", "lost" };
static const char *const class_colour[PIC_NCLASSES] = { "#43a047", "#1e88e5", "#fb8c00", "#e53935" };
static const char *const class_text[PIC_NCLASSES] = {
	"direct: read straight from the member",
	"rebuilt from parity (member missing or failed to read)",
	"untrusted by a map (ddrescue map, EWF acquisition errors, md bad-block log): rebuilt from parity",
	"lost: could not be served",
};
#define NONE_COLOUR "#e0e0e0"

const char *picture_class_name(enum picture_class c)
{
	return c < PIC_NCLASSES ? class_name[c] : "?";
}

int picture_new(struct picture **out, const struct array *a)
{
	struct picture *p = calloc(1, sizeof(*p));
	uint64_t mb = a->member_bytes ? a->member_bytes : 1;

	if (!p)
		return -ENOMEM;
	p->a = a;
	p->n = a->geom.raid_disks;
	p->nbands = mb / 4096 < MAX_BANDS ? (uint32_t)(mb / 4096) : MAX_BANDS;
	if (!p->nbands)
		p->nbands = 1;
	p->band_bytes = (mb + p->nbands - 1) / p->nbands;
	p->band_bytes = (p->band_bytes + 511) / 512 * 512;
	p->bytes = calloc((size_t)p->n * p->nbands * PIC_NCLASSES, sizeof(*p->bytes));
	if (!p->bytes) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;
}

static enum picture_class class_of(enum volume_src how)
{
	switch (how) {
	case VOLUME_SRC_MEMBER: return PIC_DIRECT;
	case VOLUME_SRC_REBUILT: return PIC_REBUILT;
	case VOLUME_SRC_UNTRUSTED: return PIC_UNTRUSTED;
	case VOLUME_SRC_UNREADABLE: break;
	}
	return PIC_LOST;
}

void picture_add(struct picture *p, uint64_t off, uint64_t len, enum volume_src how, int role)
{
	enum picture_class c = class_of(how);
	uint64_t moff;
	int r;

	if (!len)
		return;
	array_locate(p->a, off, &r, &moff, NULL);
	pthread_mutex_lock(&p->lock);
	p->totals[c] += len;
	if (role >= 0 && role < p->n) {
		/* a chunk piece: contiguous in the member from moff */
		while (len) {
			uint64_t b = moff / p->band_bytes, n = p->band_bytes - moff % p->band_bytes;

			if (b >= p->nbands)
				break;
			if (n > len)
				n = len;
			p->bytes[((size_t)role * p->nbands + b) * PIC_NCLASSES + c] += n;
			moff += n;
			len -= n;
		}
	}
	pthread_mutex_unlock(&p->lock);
}

void picture_totals(struct picture *p, uint64_t totals[PIC_NCLASSES])
{
	pthread_mutex_lock(&p->lock);
	memcpy(totals, p->totals, sizeof(p->totals));
	pthread_mutex_unlock(&p->lock);
}

/* The class a band is drawn in (the worst present), -1 for none. */
static int band_class(const struct picture *p, int role, uint32_t b)
{
	const uint64_t *v = p->bytes + ((size_t)role * p->nbands + b) * PIC_NCLASSES;

	for (int c = PIC_NCLASSES - 1; c >= 0; c--)
		if (v[c])
			return c;
	return -1;
}

/* Text with &, <, >, " escaped. */
static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
			break;
		}
	}
}

static void draw_column(const struct picture *p, FILE *f, int role, double ppb)
{
	int x = LEFT + role * (COL_W + COL_GAP);

	for (uint32_t b = 0; b < p->nbands;) {
		int c = band_class(p, role, b);
		uint32_t e = b + 1;
		char s0[32], s1[32];

		while (e < p->nbands && band_class(p, role, e) == c)
			e++;
		fprintf(f, "<rect x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%.2f\" fill=\"%s\"", x, TOP + b * ppb, COL_W,
			(e - b) * ppb, c < 0 ? NONE_COLOUR : class_colour[c]);
		if (c > PIC_DIRECT) {
			fprintf(f, " class=\"%s\"><title>role %d, member bytes %s to %s: %s</title></rect>\n",
				class_name[c], role, fmt_size((uint64_t)b * p->band_bytes, s0, sizeof(s0)),
				fmt_size((uint64_t)e * p->band_bytes, s1, sizeof(s1)), class_text[c]);
		} else {
			fprintf(f, " class=\"%s\"/>\n", c < 0 ? "none" : class_name[c]);
		}
		b = e;
	}
}

int picture_write_svg(struct picture *p, FILE *f)
{
	const struct array *a = p->a;
	int width = LEFT + p->n * (COL_W + COL_GAP) + 40, h = MAX_BANDS;
	uint64_t tot[PIC_NCLASSES], all = 0;
	double ppb = (double)h / p->nbands;
	char uuid[40], sz[32];

	if (width < 760)
		width = 760;
	picture_totals(p, tot);
	for (int c = 0; c < PIC_NCLASSES; c++)
		all += tot[c];
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n", width, TOP + h + LEGEND_H, width, TOP + h + LEGEND_H);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, TOP + h + LEGEND_H);
	fprintf(f, "<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">raidimg map: RAID%d %s, %d members, "
		"chunk %s", a->geom.level, layout_name(a->geom.level, a->geom.layout), a->geom.raid_disks,
		fmt_size(a->geom.chunk_bytes, sz, sizeof(sz)));
	if (a->has_meta) {
		meta_uuid_format(a->uuid, uuid);
		fprintf(f, ", uuid %s", uuid);
	}
	fprintf(f, "</text>\n<text x=\"10\" y=\"40\">members across, offsets in each member's data area down "
		"(%s per member); each band coloured by where the array bytes it holds came from</text>\n",
		fmt_size(a->member_bytes, sz, sizeof(sz)));
	/* offsets down the left */
	for (int t = 0; t <= 4; t++) {
		uint64_t off = (uint64_t)p->nbands * p->band_bytes / 4 * (uint64_t)t;
		double y = TOP + (double)h * t / 4;

		fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#888\"/>"
			"<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n", LEFT - 6, y, LEFT - 2, y, LEFT - 8,
			y + 4, fmt_size(off, sz, sizeof(sz)));
	}
	for (int r = 0; r < p->n; r++) {
		const struct array_member *m = &a->members[r];
		const char *path = m->path ? m->path : "(no image)";
		const char *base = strrchr(path, '/');
		int x = LEFT + r * (COL_W + COL_GAP);
		char label[24];

		base = base ? base + 1 : path;
		snprintf(label, sizeof(label), "%.11s%s", base, strlen(base) > 11 ? "..." : "");
		fprintf(f, "<g class=\"member\" data-role=\"%d\"><text x=\"%d\" y=\"%d\" font-weight=\"bold\">role %d"
			"</text><text x=\"%d\" y=\"%d\">", r, x, TOP - 36, r, x, TOP - 22);
		xml_text(f, label);
		fprintf(f, "<title>");
		xml_text(f, path);
		fprintf(f, "</title></text><text x=\"%d\" y=\"%d\">%s%s</text>\n", x, TOP - 8,
			m->src ? m->src->ops->kind : member_state_name(m->state),
			m->untrusted_bytes ? ", map" : "");
		draw_column(p, f, r, ppb);
		fputs("</g>\n", f);
	}
	/* legend with the totals */
	fprintf(f, "<g id=\"totals\" data-total-bytes=\"%" PRIu64 "\"", all);
	for (int c = 0; c < PIC_NCLASSES; c++)
		fprintf(f, " data-%s-bytes=\"%" PRIu64 "\"", class_name[c], tot[c]);
	fputs(">\n", f);
	for (int c = 0; c <= PIC_NCLASSES; c++) {
		int y = TOP + h + 24 + c * 22;

		if (c == PIC_NCLASSES) {
			fprintf(f, "<rect x=\"10\" y=\"%d\" width=\"16\" height=\"14\" fill=\"%s\" stroke=\"#555\"/>"
				"<text x=\"34\" y=\"%d\">parity, or not read</text>\n", y, NONE_COLOUR, y + 12);
			continue;
		}
		fprintf(f, "<rect x=\"10\" y=\"%d\" width=\"16\" height=\"14\" fill=\"%s\" stroke=\"#555\"/>"
			"<text x=\"34\" y=\"%d\" class=\"total\" data-class=\"%s\" data-bytes=\"%" PRIu64 "\">", y,
			class_colour[c], y + 12, class_name[c], tot[c]);
		xml_text(f, class_text[c]);
		fprintf(f, ": %" PRIu64 " bytes (%s, %.2f%%)</text>\n", tot[c], fmt_size(tot[c], sz, sizeof(sz)),
			all ? 100.0 * (double)tot[c] / (double)all : 0.0);
	}
	fputs("</g>\n</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}

void picture_free(struct picture *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->lock);
	free(p->bytes);
	free(p);
}
