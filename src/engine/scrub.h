/* scrub.h - the scrub/resync engine: check, repair or rebuild an array's
 * redundancy, stripe by stripe.
 *
 * The engine walks a range of stripes in batches of whole chunk rows.  Each
 * batch is one large read per member (request_bytes: adjacent rows are
 * coalesced), issued to all members in parallel by a small pool of reader
 * threads into one of two batch buffers, so reading batch b+1 overlaps the
 * check of batch b.  Checking asks isa-l whether the stored P (and Q) agree
 * with the data (xor_check/pq_check, or generate + compare where isa-l's
 * generators are faster: AVX-512 with more than 2 data chunks or chunks
 * under 64 KiB, parity.h); where they do not, the stripe is
 * regenerated and examined per 4 KiB unit (md's STRIPE_SIZE) to find the
 * exact byte range and, for RAID6, the member at fault
 * (parity_locate_culprit).  Repair rewrites exactly the differing bytes.
 * Rebuild recomputes one role's chunks (data, P or Q) from the others and
 * writes them to a new image.
 *
 * A scrub object makes one run.  Threads: scrub_run() works in the calling
 * thread; scrub_start() runs it in a thread of its own (the mount's worker).
 * scrub_stop(), scrub_pause(), scrub_set_limits(), scrub_get_progress() and
 * scrub_wait() may be called from any thread at any time.  The callbacks in scrub_opts are called from the scrub thread,
 * one at a time.
 *
 * Speed (md's semantics, per member, in bytes of each member's data area per
 * second): never faster than speed_max (0 = unlimited); above speed_min,
 * yield to the foreground readers (scrub_opts.fg, the mount's gauge): when
 * the gauge has a latency target, at the rate its controller sets (readers'
 * p99 against their idle p99, fg_gauge.h), else by md's rule (back off
 * while they are active).  While the controller sees readers
 * (fg_ctl_one_cpu) the scrub's threads also take turns - one reads or
 * checks at a time (cpu_lock) - leaving the other CPUs to the readers.
 */
#ifndef RAIDIMG_SCRUB_H
#define RAIDIMG_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array.h"
#include "fg_gauge.h"
#include "util.h"

enum scrub_mode {
	SCRUB_CHECK = 0,     /* report mismatches, write nothing */
	SCRUB_REPAIR,        /* rewrite what is wrong (members opened SOURCE_WRITE) */
	SCRUB_REBUILD,       /* recompute rebuild_role's chunks into rebuild_out */
};

/* What a mismatch says is wrong. */
enum scrub_kind {
	SCRUB_KIND_P,        /* P disagrees (RAID5: md's assumption; RAID6: Q agrees) */
	SCRUB_KIND_Q,        /* Q disagrees, P agrees */
	SCRUB_KIND_DATA,     /* RAID6: P and Q both name one data block */
	SCRUB_KIND_PQ,       /* RAID6: P and Q differ and name no single block */
	SCRUB_KIND_DEGRADED, /* checked with a member missing: cannot tell which */
};

/* Defaults (see scrub_opts). */
#define SCRUB_DEFAULT_REQUEST (1u << 20)
#define SCRUB_DEFAULT_SPEED_MIN (1000u * 1024)     /* md: 1000 KiB/s */
#define SCRUB_DEFAULT_FG_IDLE_NS (5u * 1000 * 1000)
#define SCRUB_UNIT 4096u                            /* md's STRIPE_SIZE */

/* One mismatch: a run of adjacent 4 KiB units of one stripe with the same
 * verdict.  Pointers are valid during the callback only. */
struct scrub_mismatch {
	uint64_t stripe;
	enum scrub_kind kind;
	int role;                /* member at fault, -1 when unknown */
	const char *path;        /* its image (NULL when unknown or no path) */
	uint32_t chunk_off;      /* first differing byte inside the chunk */
	uint32_t len;            /* bytes from the first to the last differing one */
	uint64_t member_off;     /* stripe * chunk + chunk_off: into the data area */
	uint64_t image_off;      /* member_off + the member's data_offset; valid if role >= 0 */
	uint64_t array_off;      /* DATA: array offset of the first byte, else UINT64_MAX */
	int p_role, q_role;      /* where this stripe's P and Q live (q_role -1: RAID5) */
	bool p_differs, q_differs;
	uint32_t units;          /* 4 KiB units involved (md counts 8 sectors per unit) */
	bool repaired;           /* SCRUB_REPAIR: the writes below were made */
};

/* One write made by repair or rebuild. */
struct scrub_write {
	uint64_t stripe;
	int role;
	const char *path;
	uint64_t image_off;
	uint64_t len;
};

struct scrub_opts {
	enum scrub_mode mode;
	/* stripes [stripe_begin, stripe_end); stripe_end 0 = to the end */
	uint64_t stripe_begin, stripe_end;
	uint64_t request_bytes;  /* bytes per member request; 0 = SCRUB_DEFAULT_REQUEST */
	int readers;             /* reader threads; 0 = one per member, at most 4 */
	uint64_t speed_min;      /* bytes/s per member; 0 = no floor */
	uint64_t speed_max;      /* bytes/s per member; 0 = unlimited */
	uint64_t fg_idle_ns;     /* foreground quiet time needed; 0 = default */
	struct fg_gauge *fg;     /* the foreground readers to yield to (not owned); NULL: none */
	int nice;                /* > 0: background work - the scrub's threads (the caller's too)
				  * take this niceness and the lowest best-effort I/O priority */
	/* SCRUB_REBUILD: the role to recompute (never read, even if present),
	 * the image to write its data area to (not owned), where its data
	 * starts, and whether rebuild_out is fresh (holes read as zeros, so
	 * all-zero batches are not written). */
	int rebuild_role;
	struct source *rebuild_out;
	uint64_t rebuild_data_offset;
	bool rebuild_sparse;
	/* Checkpoint (NULL: none): resumed from if it exists and `resume` is
	 * set, written (temp file + rename) every checkpoint_ns or
	 * checkpoint_bytes of member data, and when stopped; removed when the
	 * range is finished. */
	const char *checkpoint_path;
	bool resume;
	uint64_t checkpoint_ns;      /* 0 = 10 s */
	uint64_t checkpoint_bytes;   /* per member; 0 = 256 MiB */
	/* Callbacks (may be NULL), from the scrub thread. */
	void (*on_mismatch)(void *arg, const struct scrub_mismatch *m);
	void (*on_write)(void *arg, const struct scrub_write *w);
	void (*on_batch)(void *arg, uint64_t s0, uint64_t s1);   /* stripes [s0, s1) finished */
	void (*on_checkpoint)(void *arg, uint64_t next_stripe);  /* checkpoint committed */
	void *arg;
};

enum scrub_state {
	SCRUB_IDLE = 0,          /* created, not started */
	SCRUB_RUNNING,
	SCRUB_PAUSED,
	SCRUB_DONE,              /* the whole range was covered */
	SCRUB_STOPPED,           /* scrub_stop() before the end */
	SCRUB_FAILED,            /* an error ended it (see error / message) */
};

/* A consistent-enough snapshot (each field read atomically). */
struct scrub_progress {
	enum scrub_state state;
	enum scrub_mode mode;
	uint64_t stripe_begin, stripe_end;
	uint64_t next_stripe;        /* every stripe below it is finished */
	uint64_t resumed_at;         /* where this run started (resume) */
	uint64_t chunk_bytes;
	uint64_t done_bytes;         /* per member: finished stripes * chunk, this run */
	uint64_t total_bytes;        /* per member, the range */
	double seconds;              /* since the run started (to its end, once ended) */
	double speed;                /* recent bytes/s per member */
	uint64_t speed_min, speed_max;
	/* counters (including those carried over from a checkpoint) */
	uint64_t mismatches, mismatch_units, writes, bytes_written;
	uint64_t stripes_unchecked, read_errors;
	/* this run */
	uint64_t member_requests, member_request_bytes;
	uint64_t throttle_ns, fg_backoffs;
	uint64_t one_cpu_batches;    /* batches worked one thread at a time (readers about) */
	int error;                   /* -errno when FAILED */
	char message[ERR_MAX];           /* what went wrong, when FAILED */
};

struct scrub;

/* Prepare a scrub of a (not owned; it must outlive the scrub).  Loads the
 * checkpoint when asked (and refuses one of another array or range: -EINVAL
 * with the reason in err).  *out is owned by the caller: scrub_free(). */
int scrub_create(struct array *a, const struct scrub_opts *o, struct scrub **out, char *err,
		 size_t errlen);
/* Run to the end of the range, a stop or an error, in the calling thread.
 * 0 when the range was covered, -EINTR when stopped, else -errno (message
 * in the progress). */
int scrub_run(struct scrub *s);
/* scrub_run in a new thread; scrub_join waits and returns its result. */
int scrub_start(struct scrub *s);
int scrub_join(struct scrub *s);
/* Wait up to timeout_ns for a started scrub to end; true if it has. */
bool scrub_wait(struct scrub *s, uint64_t timeout_ns);
void scrub_stop(struct scrub *s);            /* async-signal-safe */
void scrub_pause(struct scrub *s, bool pause);
void scrub_set_limits(struct scrub *s, uint64_t speed_min, uint64_t speed_max);
void scrub_get_progress(struct scrub *s, struct scrub_progress *p);
void scrub_free(struct scrub *s);            /* NULL is fine; joins a started thread */

/* A checkpoint file's text (len bytes, modified in place), checked on its
 * own: the magic line, the checksum line that ends it (XXH64 of the rest:
 * an edited checkpoint is refused), every field present, no negative
 * number, the position inside the range.  path names it in messages.
 * Whether it belongs to an array is the scrub's to check.  0 or -EINVAL
 * with the message. */
struct scrub_checkpoint {
	char array_id[512];          /* the array's uuid and geometry as written */
	char mode[16];               /* "check", "repair", "rebuild" */
	uint64_t begin, end, next;   /* stripes */
	uint64_t counts[6];          /* mismatches, units, writes, bytes_written, unchecked, read_errors */
};
int scrub_checkpoint_parse(char *text, size_t len, const char *path, struct scrub_checkpoint *cp, char *err,
			   size_t errlen);

const char *scrub_kind_name(enum scrub_kind k);     /* "P", "Q", "data", "P+Q", "degraded" */
const char *scrub_mode_name(enum scrub_mode m);     /* "check", "repair", "rebuild" */
const char *scrub_state_name(enum scrub_state st);

#endif
