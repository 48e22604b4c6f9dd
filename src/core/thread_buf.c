/* thread_buf.c - see thread_buf.h */
#include <stdlib.h>
#include <sys/mman.h>

#include "thread_buf.h"

#define HUGE_PAGE (2u << 20)

struct tb_mem {
	size_t cap;
	void *mem;
};

static void tb_free(void *p)
{
	struct tb_mem *m = p;

	if (m) {
		free(m->mem);
		free(m);
	}
}

/* The key of tb, made by the first thread that needs it. */
static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;

static int tb_key(struct thread_buf *tb)
{
	int ret = 0;

	if (atomic_load_explicit(&tb->made, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&key_lock);
	if (!atomic_load_explicit(&tb->made, memory_order_relaxed)) {
		ret = pthread_key_create(&tb->key, tb_free);
		if (!ret)
			atomic_store_explicit(&tb->made, true, memory_order_release);
	}
	pthread_mutex_unlock(&key_lock);
	return ret;
}

void *thread_buf_get(struct thread_buf *tb, size_t size)
{
	struct tb_mem *m;

	if (tb_key(tb))
		return NULL;
	m = pthread_getspecific(tb->key);
	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		if (pthread_setspecific(tb->key, m)) {
			free(m);
			return NULL;
		}
	}
	if (m->cap < size) {
		size_t cap = tb->huge ? (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE : size;
		void *p = NULL;

		free(m->mem);
		m->mem = posix_memalign(&p, tb->huge ? HUGE_PAGE : tb->align, cap) ? NULL : p;
		m->cap = m->mem ? cap : 0;
		/* one huge page when the kernel gives one: one TLB entry, and
		 * for a FUSE reply one page pinned instead of 512 */
		if (m->mem && tb->huge)
			madvise(m->mem, cap, MADV_HUGEPAGE);
	}
	return m->mem;
}
