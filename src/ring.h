/* SPDX-License-Identifier: MIT */
/*
 * A worker's ring of fixed-size slots, allocated once, page-aligned: the
 * same memory is the io_uring fixed buffer and (with the rdma transport)
 * the registered memory region. A chunk goes disk -> slot -> wire -> slot
 * -> disk without a copy.
 */
#ifndef PXFER_RING_H
#define PXFER_RING_H

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
};

/*
 * pxfer_ring_init - map @nslots slots of @slot_size payload bytes, each
 * preceded by @hdr_size bytes of header room (a page multiple, possibly 0,
 * so every payload stays page-aligned). Returns 0 or -errno.
 */
int pxfer_ring_init(struct pxfer_ring *r, unsigned int nslots, size_t slot_size,
		    size_t hdr_size);
void pxfer_ring_release(struct pxfer_ring *r);

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
