// SPDX-License-Identifier: MIT
#include <errno.h>

#include "core/bytes.h"
#include "core/proto.h"
#include "transport/rdma/ring_desc.h"

void pxfer_ring_desc_encode(const struct pxfer_ring_desc *d, uint8_t *blob)
{
	pxfer_put_be(blob, d->addr, 8);
	pxfer_put_be(blob + 8, d->rkey, 4);
	pxfer_put_be(blob + 12, d->stride, 4);
	pxfer_put_be(blob + 16, d->hdr, 4);
	pxfer_put_be(blob + 20, d->slots, 2);
}

int pxfer_ring_desc_decode(const uint8_t *blob, uint16_t len,
			   unsigned int slots_max, struct pxfer_ring_desc *d)
{
	if (len != PXFER_RING_DESC_LEN)
		return -EPROTO;
	d->addr = pxfer_get_be(blob, 8);
	d->rkey = pxfer_get_be(blob + 8, 4);
	d->stride = pxfer_get_be(blob + 12, 4);
	d->hdr = pxfer_get_be(blob + 16, 4);
	d->slots = pxfer_get_be(blob + 20, 2);
	if (!d->slots || d->slots > slots_max ||
	    d->hdr < PXFER_CHUNK_DESC_MAX || d->stride <= d->hdr)
		return -EPROTO;
	return 0;
}
