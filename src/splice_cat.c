/* splice_cat.c - see splice_cat.h.
 *
 * Why: copying page-cache bytes into a large user buffer and then writing
 * them out costs two copies and, with buffers bigger than the CPU caches,
 * memory bandwidth; sendfile(2) moves them in the kernel (page references
 * into a pipe, nothing at all into /dev/null, one copy into a file).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "splice_cat.h"
#include "util.h"

#define BOUNCE_BYTES (4u << 20)

struct splice_run {
	struct array *a;
	int out_fd;
	bool buffered;          /* sendfile refused by out_fd: write() from here on */
	uint8_t *bounce;        /* BOUNCE_BYTES, for rebuilt ranges; owned */
	uint64_t *written;
	uint64_t *bad_off;
};

static int write_full(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The slow way: array_read (rebuilding as needed) into the bounce buffer. */
static int copy_via_read(struct splice_run *r, uint64_t off, uint64_t len)
{
	while (len) {
		size_t n = len < BOUNCE_BYTES ? (size_t)len : BOUNCE_BYTES;
		uint64_t bad = off;
		int ret = array_read(r->a, r->bounce, n, off, &bad);

		if (ret == -EIO && bad >= off && bad - off < n) {
			/* write what could be read, then report the hole */
			int wr = write_full(r->out_fd, r->bounce, (size_t)(bad - off));
			if (wr)
				return wr;
			*r->written += bad - off;
			*r->bad_off = bad;
			return -EIO;
		}
		if (ret) {
			*r->bad_off = off;
			return ret;
		}
		ret = write_full(r->out_fd, r->bounce, n);
		if (ret)
			return ret;
		*r->written += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* One chunk piece: len bytes at image offset moff of member `disk`, which
 * are array bytes [aoff, aoff+len). */
static int copy_piece(struct splice_run *r, int disk, uint64_t moff, uint64_t aoff, uint64_t len)
{
	struct array_member *m = &r->a->members[disk];
	int in_fd = m->src->ops->raw_fd(m->src);

	while (len && !r->buffered) {
		off_t o = (off_t)moff;
		ssize_t n = sendfile(r->out_fd, in_fd, &o, len > (1u << 30) ? (1u << 30) : (size_t)len);

		if (n > 0) {
			atomic_fetch_add(&m->reads, 1);
			atomic_fetch_add(&m->read_bytes, (uint64_t)n);
			atomic_fetch_add(&r->a->member_requests, 1);
			atomic_fetch_add(&r->a->member_request_bytes, (uint64_t)n);
			*r->written += (uint64_t)n;
			moff += (uint64_t)n;
			aoff += (uint64_t)n;
			len -= (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
			r->buffered = true;     /* out_fd does not take sendfile */
			break;
		}
		/* EIO, a short image (n == 0), ...: let array_read rebuild it */
		atomic_fetch_add(&m->read_errors, 1);
		return copy_via_read(r, aoff, len);
	}
	return len ? copy_via_read(r, aoff, len) : 0;
}

static bool all_members_plain(const struct array *a)
{
	for (int i = 0; i < a->geom.raid_disks; i++) {
		const struct array_member *m = &a->members[i];
		if (!m->src || (m->state != MEMBER_OK && m->state != MEMBER_REBUILDING))
			continue;
		if (!m->src->ops->raw_fd || m->src->ops->raw_fd(m->src) < 0)
			return false;
	}
	return true;
}

int splice_cat(struct array *a, int out_fd, uint64_t off, uint64_t len, uint64_t *written,
	       uint64_t *bad_off)
{
	uint64_t cb = a->geom.chunk_bytes, sbytes = cb * (uint64_t)a->k, end = off + len;
	struct splice_run r = { .a = a, .out_fd = out_fd, .written = written, .bad_off = bad_off };
	struct stripe_map map;
	int ret = 0;

	*written = 0;
	if (!all_members_plain(a))
		return -EOPNOTSUPP;
	r.bounce = xaligned_alloc(BOUNCE_BYTES);
	if (!r.bounce)
		return -ENOMEM;
	for (uint64_t s = off / sbytes; len && s <= (end - 1) / sbytes && !ret; s++) {
		uint64_t sbeg = s * sbytes;
		uint64_t a0 = off > sbeg ? off : sbeg, a1 = end < sbeg + sbytes ? end : sbeg + sbytes;
		bool direct = !r.buffered;

		layout_map_stripe(&a->geom, s, &map);
		for (uint64_t x = a0; direct && x < a1; x = (x / cb + 1) * cb)
			direct = array_chunk_direct(a, s, map.data_disk[(x - sbeg) / cb]);
		if (!direct) {
			ret = copy_via_read(&r, a0, a1 - a0);
			continue;
		}
		for (uint64_t x = a0; x < a1 && !ret;) {
			uint64_t d = (x - sbeg) / cb, in = (x - sbeg) % cb;
			uint64_t n = cb - in < a1 - x ? cb - in : a1 - x;
			int disk = map.data_disk[d];

			ret = copy_piece(&r, disk, a->members[disk].data_offset + s * cb + in, x, n);
			x += n;
		}
	}
	if (!ret)
		atomic_fetch_add(&a->bytes_served, *written);
	free(r.bounce);
	return ret;
}
