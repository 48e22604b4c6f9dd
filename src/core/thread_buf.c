/* thread_buf.c - see thread_buf.h */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "thread_buf.h"

#define HUGE_PAGE (2u << 20)

struct tb_mem {
	size_t cap;
	void *mem;
	bool mapped;           /* mem is an mmap of cap bytes (huge), else malloc'd */
};

static void mem_release(struct tb_mem *m)
{
	if (m->mapped)
		munmap(m->mem, m->cap);
	else
		free(m->mem);
	m->mem = NULL;
	m->cap = 0;
	m->mapped = false;
}

static void tb_free(void *p)
{
	struct tb_mem *m = p;

	if (m) {
		mem_release(m);
		free(m);
	}
}

/* cap bytes (a multiple of HUGE_PAGE) aligned to HUGE_PAGE, mapped
 * directly: an aligned allocation from malloc would keep the alignment's
 * slack mapped too (twice the address space, which counts under ulimit
 * -v).  The slack around the aligned part is unmapped.  NULL: no memory. */
static void *map_huge(size_t cap)
{
	size_t len = cap + HUGE_PAGE;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + cap < p + len)
		munmap(a + cap, (size_t)(p + len - (a + cap)));
	/* one huge page when the kernel gives one: one TLB entry, and for a
	 * FUSE reply one page pinned instead of 512 */
	madvise(a, cap, MADV_HUGEPAGE);
	return a;
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

		mem_release(m);
		if (tb->huge)
			p = map_huge(cap);
		else if (posix_memalign(&p, tb->align, cap))
			p = NULL;
		m->mem = p;
		m->cap = p ? cap : 0;
		m->mapped = p && tb->huge;
	}
	return m->mem;
}
