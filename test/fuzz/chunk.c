/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: pxfer_chunk_decode, the descriptor in front of every chunk
 * (read from a tcp stream or from an rdma slot's header room). Oracle: an
 * accepted descriptor has 1..PXFER_SEG_MAX non-empty segments that neither
 * wrap a 64-bit offset nor disagree with len; a prefix one byte or one
 * segment short of it asks for more bytes; it encodes back to exactly the
 * bytes decoded, into a buffer of exactly that size and no smaller; and
 * those bytes decode to the same descriptor.
 */
#include <errno.h>
#include <string.h>

#include "core/proto.h"
#include "fuzz.h"

static void check_fields(const struct pxfer_chunk *c)
{
	uint64_t sum = 0;
	unsigned int i;

	FUZZ_CHECK(c->nseg >= 1 && c->nseg <= PXFER_SEG_MAX);
	FUZZ_CHECK(c->len >= 1 && c->len <= PXFER_CHUNK_MAX);
	for (i = 0; i < c->nseg; i++) {
		FUZZ_CHECK(c->seg[i].len > 0);
		FUZZ_CHECK(c->seg[i].offset + c->seg[i].len > c->seg[i].offset);
		sum += c->seg[i].len;
	}
	FUZZ_CHECK(sum == c->len);
}

static int same_chunk(const struct pxfer_chunk *a, const struct pxfer_chunk *b)
{
	unsigned int i;

	if (a->slot != b->slot || a->nseg != b->nseg || a->len != b->len ||
	    memcmp(a->tag, b->tag, PXFER_TAG_LEN) || a->seq != b->seq)
		return 0;
	for (i = 0; i < a->nseg; i++)
		if (a->seg[i].file != b->seg[i].file ||
		    a->seg[i].offset != b->seg[i].offset ||
		    a->seg[i].len != b->seg[i].len)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pxfer_chunk c, again;
	uint8_t *buf;
	ssize_t n;

	n = pxfer_chunk_decode(data, size, &c);
	FUZZ_CHECK(size >= pxfer_chunk_desc_len(0) || n == -EAGAIN);
	if (n < 0) {
		FUZZ_CHECK(n == -EAGAIN || n == -EPROTO);
		return 0;
	}
	FUZZ_CHECK((size_t)n <= size);
	FUZZ_CHECK((size_t)n == pxfer_chunk_desc_len(c.nseg));
	check_fields(&c);
	/* a stream reader that has not got it all yet must wait, not fail */
	FUZZ_CHECK(pxfer_chunk_decode(data, n - 1, &again) == -EAGAIN);
	FUZZ_CHECK(pxfer_chunk_decode(data, pxfer_chunk_desc_len(c.nseg - 1),
				      &again) == -EAGAIN);

	buf = malloc(n);
	FUZZ_CHECK(buf);
	FUZZ_CHECK(pxfer_chunk_encode(buf, n - 1, &c) == -EMSGSIZE);
	FUZZ_CHECK(pxfer_chunk_encode(buf, n, &c) == n);
	FUZZ_CHECK(!memcmp(buf, data, n));
	/* stale bytes in the struct must not show through a decode */
	memset(&again, 0xa5, sizeof(again));
	FUZZ_CHECK(pxfer_chunk_decode(buf, n, &again) == n);
	FUZZ_CHECK(same_chunk(&c, &again));
	free(buf);
	return 0;
}
