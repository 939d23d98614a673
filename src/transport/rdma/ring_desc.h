/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport's description of a receiver's ring, carried in
 * DATA_WELCOME's blob (22 bytes, big-endian): u64 address, u32 rkey,
 * u32 stride, u32 header room, u16 slots. Pure codec, no verbs: the
 * sender decodes what a peer sent here, so this is fuzzed on its own.
 */
#ifndef PXFER_TRANSPORT_RDMA_RING_DESC_H
#define PXFER_TRANSPORT_RDMA_RING_DESC_H

#include <stdint.h>

#define PXFER_RING_DESC_LEN 22

struct pxfer_ring_desc {
	uint64_t addr;		/* the ring's first slot, in the peer's space */
	uint32_t rkey;
	uint32_t stride;	/* bytes from one slot to the next */
	uint32_t hdr;		/* header room before each slot's payload */
	uint16_t slots;
};

/* pxfer_ring_desc_encode - @d into @blob (PXFER_RING_DESC_LEN bytes) */
void pxfer_ring_desc_encode(const struct pxfer_ring_desc *d, uint8_t *blob);

/*
 * pxfer_ring_desc_decode - a peer's description of @len bytes into @d.
 * 0, or -EPROTO: a wrong length, no slots or more than @slots_max (what
 * the WELCOME announced, which sized our send queue), header room too
 * small for a chunk descriptor, or a stride with no payload room.
 */
int pxfer_ring_desc_decode(const uint8_t *blob, uint16_t len,
			   unsigned int slots_max, struct pxfer_ring_desc *d);

#endif
