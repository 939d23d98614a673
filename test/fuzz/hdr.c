/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: pxfer_hdr_decode, the first code a peer's bytes meet on
 * every connection. Oracle: fewer than eight bytes ask for more; an
 * accepted header is a known type, no flags, a body length within that
 * type's limit, and encodes back to the same eight bytes.
 */
#include <errno.h>
#include <string.h>

#include "core/proto.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t limit = PXFER_MSG_MAX;
	uint8_t buf[PXFER_HDR_LEN];
	struct pxfer_hdr h, again;
	int ret;

	ret = pxfer_hdr_decode(data, size, &h);
	FUZZ_CHECK(size >= PXFER_HDR_LEN || ret == -EAGAIN);
	if (ret) {
		FUZZ_CHECK(ret == -EAGAIN || ret == -EPROTO);
		return 0;
	}
	if (h.type == PXFER_MSG_CHUNK)
		limit = PXFER_CHUNK_DESC_MAX + PXFER_CHUNK_MAX;
	FUZZ_CHECK(h.type >= 1 && h.type <= PXFER_MSG_TYPE_MAX);
	FUZZ_CHECK(h.flags == 0 && h.len <= limit);

	pxfer_hdr_encode(buf, h.type, h.len);
	FUZZ_CHECK(!memcmp(buf, data, PXFER_HDR_LEN));
	FUZZ_CHECK(pxfer_hdr_decode(buf, sizeof(buf), &again) == 0);
	FUZZ_CHECK(again.type == h.type && again.flags == h.flags &&
		   again.len == h.len);
	return 0;
}
