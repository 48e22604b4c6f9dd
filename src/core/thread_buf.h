/* thread_buf.h - a growable buffer per thread, freed when the thread ends:
 * the read path's scratch, the FUSE reply buffer.  One static struct
 * thread_buf (THREAD_BUF_INIT) per use; every thread gets its own buffer
 * from it.
 *
 *     static struct thread_buf scratch = THREAD_BUF_INIT(64, false);
 *     uint8_t *p = thread_buf_get(&scratch, len);    // NULL: no memory
 */
#ifndef RAIDIMG_THREAD_BUF_H
#define RAIDIMG_THREAD_BUF_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct thread_buf {
	atomic_bool made;      /* key is made */
	pthread_key_t key;
	size_t align;          /* of the buffer, a power of two >= sizeof(void *) */
	bool huge;             /* round to 2 MiB and ask for a transparent huge page */
};

#define THREAD_BUF_INIT(align_, huge_) { false, 0, (align_), (huge_) }

/* The calling thread's buffer of at least size bytes (its contents are
 * not kept when it grows).  Owned by the thread: freed when it exits.
 * NULL when the memory cannot be had. */
void *thread_buf_get(struct thread_buf *tb, size_t size);

#endif
