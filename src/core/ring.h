/* SPDX-License-Identifier: MIT */
/*
 * A worker's ring of fixed-size slots, allocated once, page-aligned: the
 * same memory is the io_uring fixed buffer and (with the rdma transport)
 * the registered memory region. A chunk goes disk -> slot -> wire -> slot
 * -> disk without a copy.
 */
#ifndef PXFER_RING_H
#define PXFER_RING_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct pxfer_ring {
	uint8_t *base;
	size_t hdr_size;	/* room for a chunk descriptor before each payload */
	size_t slot_size;	/* payload bytes per slot */
	size_t stride;		/* hdr_size + slot_size */
	unsigned int nslots;
	size_t bytes;
	/* the whole ring is pinned anyway (an RDMA memory region): the I/O
	 * back-end may register every slot at once (set after init) */
	int pinned;
	int borrowed;		/* memory from a pxfer_pool: not unmapped */
	uint64_t serial;	/* unique to this ring in the process */
};

/*
 * pxfer_ring_init - map @nslots slots of @slot_size payload bytes, each
 * preceded by @hdr_size bytes of header room (a page multiple, possibly 0,
 * so every payload stays page-aligned). Returns 0 or -errno.
 */
int pxfer_ring_init(struct pxfer_ring *r, unsigned int nslots, size_t slot_size,
		    size_t hdr_size);
/* pxfer_ring_init_at - the same in @mem (page-aligned, from a pool) */
int pxfer_ring_init_at(struct pxfer_ring *r, void *mem, unsigned int nslots,
		       size_t slot_size, size_t hdr_size);
void pxfer_ring_release(struct pxfer_ring *r);
/* the bytes a ring of @nslots slots takes */
static inline size_t pxfer_ring_bytes(unsigned int nslots, size_t slot_size,
				      size_t hdr_size)
{
	return (size_t)nslots * (slot_size + hdr_size);
}

/*
 * Ring memory made ready before a session needs it. Fresh memory costs
 * its page faults and the clearing of every page when it is first
 * touched; a memory region (rdma) or io_uring fixed buffers touch every
 * page of a ring before the first byte moves. A pool is mapped at once and
 * faulted in by a thread of its own (the receiver while it waits for a
 * sender, the sender while it connects); the session's rings are carved
 * from it, and those that do not fit are mapped as before.
 */
struct pxfer_pool {
	uint8_t *base;
	size_t bytes;
	size_t used;
	pthread_mutex_t lock;	/* guards ready */
	pthread_cond_t cond;
	int ready;
	atomic_int stop;	/* released before it was faulted in */
	pthread_t thread;
	int started;
	struct pxfer_pool *parent;	/* a slice: its pages are the parent's */
};

/*
 * pxfer_pool_size - a pool for @ring_mem bytes of slots (split among the
 * workers) with room for the headers of up to 64 slots of @hdr_size
 */
static inline size_t pxfer_pool_size(uint64_t ring_mem, size_t hdr_size)
{
	return ring_mem + 64 * hdr_size;
}

/* pxfer_pool_init - map @bytes and start faulting them in. 0 or -errno */
int pxfer_pool_init(struct pxfer_pool *p, size_t bytes);
/* pxfer_pool_take - @bytes (a page multiple) of the pool, or NULL when
 * what is left is smaller; one thread at a time */
void *pxfer_pool_take(struct pxfer_pool *p, size_t bytes);
/* pxfer_pool_wait - wait until the pages are faulted in (any thread) */
void pxfer_pool_wait(struct pxfer_pool *p);
/*
 * pxfer_pool_slice - make @slice the @bytes of @parent from @off (both
 * page multiples, inside it): a pool of its own to take from, one thread
 * at a time, while other threads take from other slices; it is ready
 * when @parent is. Nothing to release.
 */
void pxfer_pool_slice(struct pxfer_pool *slice, struct pxfer_pool *parent,
		      size_t off, size_t bytes);
/* pxfer_pool_reset - every ring carved from @p is gone: all of it is free */
void pxfer_pool_reset(struct pxfer_pool *p);
void pxfer_pool_release(struct pxfer_pool *p);

/* the payload of slot @i */
static inline uint8_t *pxfer_ring_slot(const struct pxfer_ring *r,
				       unsigned int i)
{
	return r->base + (size_t)i * r->stride + r->hdr_size;
}

/* the header room of slot @i */
static inline uint8_t *pxfer_ring_hdr(const struct pxfer_ring *r,
				      unsigned int i)
{
	return r->base + (size_t)i * r->stride;
}

#endif
