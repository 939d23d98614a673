// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/log.h"
#include "core/ring.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* what tells one ring from another at the same address, later */
static atomic_uint_fast64_t ring_serial;

static int ring_layout(struct pxfer_ring *r, unsigned int nslots,
		       size_t slot_size, size_t hdr_size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t stride = slot_size + hdr_size;

	memset(r, 0, sizeof(*r));
	if (!nslots || !slot_size || slot_size % page || hdr_size % page)
		return -EINVAL;
	if (stride < slot_size || stride > SIZE_MAX / nslots)
		return -EOVERFLOW;
	r->hdr_size = hdr_size;
	r->slot_size = slot_size;
	r->stride = stride;
	r->nslots = nslots;
	r->bytes = stride * nslots;
	r->serial = atomic_fetch_add(&ring_serial, 1) + 1;
	return 0;
}

int pxfer_ring_init(struct pxfer_ring *r, unsigned int nslots, size_t slot_size,
		    size_t hdr_size)
{
	int ret = ring_layout(r, nslots, slot_size, hdr_size);
	void *p;

	if (ret)
		return ret;
	p = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		memset(r, 0, sizeof(*r));
		return ret;
	}
	r->base = p;
	return 0;
}

int pxfer_ring_init_at(struct pxfer_ring *r, void *mem, unsigned int nslots,
		       size_t slot_size, size_t hdr_size)
{
	int ret = ring_layout(r, nslots, slot_size, hdr_size);

	if (ret)
		return ret;
	r->base = mem;
	r->borrowed = 1;
	return 0;
}

void pxfer_ring_release(struct pxfer_ring *r)
{
	if (r->base && !r->borrowed)
		munmap(r->base, r->bytes);
	memset(r, 0, sizeof(*r));
}

/* ---- pools ---------------------------------------------------------------- */

/*
 * Fault the pool in, a piece at a time: MADV_POPULATE_WRITE (5.14) holds
 * the process's mmap lock while it works, and every thread that maps
 * memory meanwhile (a thread stack, a library, a verbs doorbell page)
 * would wait for the whole pool. Older kernels: a write to every page.
 */
#define POOL_STEP (1u << 20)

static void *pool_fault_in(void *arg)
{
	struct pxfer_pool *p = arg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int populate = 1;

	for (size_t off = 0; off < p->bytes && !atomic_load(&p->stop);
	     off += POOL_STEP) {
		size_t len = p->bytes - off < POOL_STEP ? p->bytes - off : POOL_STEP;

		if (populate && madvise(p->base + off, len, MADV_POPULATE_WRITE))
			populate = 0;
		if (!populate)
			for (size_t o = 0; o < len; o += page)
				((volatile uint8_t *)p->base)[off + o] = 0;
	}
	pthread_mutex_lock(&p->lock);
	p->ready = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int pxfer_pool_init(struct pxfer_pool *p, size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *m;
	int ret;

	memset(p, 0, sizeof(*p));
	bytes = (bytes + page - 1) / page * page;
	if (!bytes)
		return -EINVAL;
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	ret = -pthread_mutex_init(&p->lock, NULL);
	if (ret)
		goto out_unmap;
	ret = -pthread_cond_init(&p->cond, NULL);
	if (ret)
		goto out_mutex;
	p->base = m;
	p->bytes = bytes;
	if (pxfer_thread_create(&p->thread, NULL, pool_fault_in, p))
		pool_fault_in(p);	/* no thread: now, then */
	else
		p->started = 1;
	return 0;

out_mutex:
	pthread_mutex_destroy(&p->lock);
out_unmap:
	munmap(m, bytes);
	memset(p, 0, sizeof(*p));
	return ret;
}

void *pxfer_pool_take(struct pxfer_pool *p, size_t bytes)
{
	void *m;

	if (!p || !p->base || bytes > p->bytes - p->used)
		return NULL;
	m = p->base + p->used;
	p->used += bytes;
	return m;
}

void pxfer_pool_slice(struct pxfer_pool *slice, struct pxfer_pool *parent,
		      size_t off, size_t bytes)
{
	memset(slice, 0, sizeof(*slice));
	if (!parent->base || off + bytes > parent->bytes)
		return;
	slice->base = parent->base + off;
	slice->bytes = bytes;
	slice->parent = parent;
}

void pxfer_pool_wait(struct pxfer_pool *p)
{
	if (p && p->parent)
		p = p->parent;
	if (!p || !p->base)
		return;
	pthread_mutex_lock(&p->lock);
	while (!p->ready)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void pxfer_pool_reset(struct pxfer_pool *p)
{
	p->used = 0;
}

void pxfer_pool_release(struct pxfer_pool *p)
{
	if (!p->base || p->parent)
		return;
	/* a session that ended early need not wait for all of it */
	atomic_store(&p->stop, 1);
	if (p->started)
		pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	munmap(p->base, p->bytes);
	memset(p, 0, sizeof(*p));
}
