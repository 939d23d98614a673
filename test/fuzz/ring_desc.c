/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: pxfer_ring_desc_decode, an rdma receiver's description of
 * its ring as the sender gets it in DATA_WELCOME's blob. The first two
 * input bytes are the slot count the WELCOME announced (big-endian), the
 * rest is the blob. Oracle: an accepted blob is PXFER_RING_DESC_LEN bytes
 * and describes 1..announced slots, each with room for the largest chunk
 * descriptor and at least one payload byte; it encodes back to the same
 * bytes, which decode to the same description.
 */
#include <errno.h>
#include <string.h>

#include "core/bytes.h"
#include "core/proto.h"
#include "transport/rdma/ring_desc.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pxfer_ring_desc d, again;
	uint8_t blob[PXFER_RING_DESC_LEN];
	unsigned int slots_max;
	int ret;

	/* the blob's length is a u16 on the wire */
	if (size < 2 || size - 2 > UINT16_MAX)
		return 0;
	slots_max = pxfer_get_be(data, 2);
	ret = pxfer_ring_desc_decode(data + 2, size - 2, slots_max, &d);
	FUZZ_CHECK(ret == 0 || ret == -EPROTO);
	if (ret)
		return 0;
	FUZZ_CHECK(size - 2 == PXFER_RING_DESC_LEN);
	FUZZ_CHECK(d.slots >= 1 && d.slots <= slots_max);
	FUZZ_CHECK(d.hdr >= PXFER_CHUNK_DESC_MAX && d.stride > d.hdr);

	pxfer_ring_desc_encode(&d, blob);
	FUZZ_CHECK(!memcmp(blob, data + 2, PXFER_RING_DESC_LEN));
	memset(&again, 0xa5, sizeof(again));
	FUZZ_CHECK(pxfer_ring_desc_decode(blob, sizeof(blob), slots_max,
					  &again) == 0);
	FUZZ_CHECK(again.addr == d.addr && again.rkey == d.rkey &&
		   again.stride == d.stride && again.hdr == d.hdr &&
		   again.slots == d.slots);
	return 0;
}
