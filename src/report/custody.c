/* custody.c - a command's chain-of-custody work (custody.h): hashes,
 * record and provenance map around one run. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "custody.h"
#include "outfile.h"
#include "sysio.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* a command's custody work                                             */
/* ------------------------------------------------------------------ */

int custody_opt(struct custody_opts *co, int opt, const char *arg)
{
	switch (opt) {
	case 0x1101: co->hash = true; return 1;
	case 0x1102: co->record = arg; co->hash = true; return 1;
	case 0x1103: co->provenance = arg; return 1;
	}
	return 0;
}

int custody_begin(struct custody_run *cr, const struct custody_opts *o, const char *command, int argc,
		  char **argv)
{
	cr->o = *o;
	if (o->record && record_new(&cr->rec, command, argc, argv)) {
		msg("out of memory");
		return -ENOMEM;
	}
	return 0;
}

int custody_array(struct custody_run *cr, const struct array *a, const struct assemble_opts *ao,
		  const char *const *paths, int npaths, int nslots)
{
	char err[ERR_MAX];
	int ret;

	/* the members are open: a record that would land on one is refused
	 * now, before any work (it is written at the end) */
	if (cr->o.record && evidence_check_path(cr->o.record, err, sizeof(err))) {
		msg("cannot write the record: %s", err);
		return -EPERM;
	}

	if (cr->rec)
		record_add_array(cr->rec, a, ao, paths, npaths);
	if (cr->o.hash) {
		ret = custody_hash_members(a, 4, &cr->mh);
		if (ret) {
			for (int i = 0; i < cr->mh.n; i++)
				if (cr->mh.h[i].ret)
					msg("%s", cr->mh.h[i].err);
			return ret;
		}
		if (cr->rec)
			record_add_hashes(cr->rec, &cr->mh);
		if (sha256_new(&cr->array_h)) {
			msg("out of memory");
			return -ENOMEM;
		}
	}
	if (cr->o.provenance)
		return provenance_open(&cr->prov, cr->o.provenance, a, nslots);
	return 0;
}

void custody_pipeline(struct custody_run *cr, struct pipeline *p)
{
	if (cr->prov)
		p->slot_obs = provenance_observers(cr->prov);
}

int custody_segment(struct custody_run *cr, int slot, const uint8_t *buf, size_t len, int ret)
{
	if (cr->array_h) {
		sha256_update(cr->array_h, buf, len);
		cr->hashed += len;
	}
	return cr->prov ? provenance_emit(cr->prov, slot, ret) : 0;
}

void custody_finish_hash(struct custody_run *cr)
{
	if (cr->array_h && !cr->array_hex[0])
		sha256_final(cr->array_h, cr->array_hex);
}

int custody_end(struct custody_run *cr, FILE *f, uint64_t offset, uint64_t length, bool complete,
		int exit_status)
{
	int ret = exit_status;

	custody_finish_hash(cr);
	if (cr->o.hash && f)
		custody_print_hashes(f, &cr->mh, complete && cr->array_h ? cr->array_hex : NULL, offset, length);
	if (cr->prov && provenance_close(cr->prov, true))
		ret = 2;
	cr->prov = NULL;
	if (cr->rec) {
		record_add_range(cr->rec, offset, length, complete ? cr->array_hex : NULL);
		if (!complete)
			record_add_int(cr->rec, "bytes_written", (int64_t)cr->hashed);
		if (record_finish(cr->rec, cr->o.record, ret))
			ret = 2;
	}
	return ret;
}

void custody_free(struct custody_run *cr)
{
	provenance_close(cr->prov, false);     /* not ended: nothing is left */
	record_free(cr->rec);
	sha256_free(cr->array_h);
	custody_hashes_free(&cr->mh);
	memset(cr, 0, sizeof(*cr));
}

/* pipeline consume() for custody_hash_array */
static int hash_consume(void *ctx, int slot, const uint8_t *buf, size_t len, uint64_t off, int ret,
			uint64_t bad_off)
{
	struct custody_run *cr = ctx;

	if (ret) {
		pipeline_read_error(ret, off, bad_off);
		return -EIO;
	}
	return custody_segment(cr, slot, buf, len, 0) ? -EIO : 0;
}

int custody_hash_array(struct custody_run *cr, struct array *a, int nthreads)
{
	struct pipeline pl = {
		.vol = array_volume(a), .start = 0, .length = a->array_bytes, .nthreads = nthreads,
		.consume = hash_consume, .ctx = cr, .stream_of = a,
	};

	return pipeline_run(&pl) ? -EIO : 0;
}

void custody_print_hashes_json(FILE *f, const struct custody_run *cr, uint64_t length)
{
	fputs("{\"members\":[", f);
	for (int i = 0; i < cr->mh.n; i++) {
		const struct member_hash *h = &cr->mh.h[i];

		fprintf(f, "%s{\"role\":", i ? "," : "");
		if (h->role >= 0)
			fprintf(f, "%d", h->role);
		else
			fputs("null", f);
		fputs(",\"path\":", f);
		json_path(f, h->path, "path");
		fputs(",\"sha256\":", f);
		if (h->ret)
			fputs("null", f);
		else
			json_str(f, h->sha256);
		fputc('}', f);
	}
	fprintf(f, "],\"array\":{\"offset\":0,\"length\":%" PRIu64 ",\"sha256\":", length);
	if (cr->array_hex[0])
		json_str(f, cr->array_hex);
	else
		fputs("null", f);
	fputs("}}", f);
}
