/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the sealed control channel's reader, pxfer_ctrl_next on a
 * control channel sealed with a fixed key (FUZZ_KEY), as it reads what
 * the peer sent after the handshake. The first input byte says how the
 * rest is used:
 *
 *   even   the bytes as they arrive, raw. Oracle: what the reader accepts
 *          sealed again with the same key and number (its place in the
 *          stream) is exactly the bytes it consumed: nothing is accepted
 *          that the key's holder did not seal, as it was sealed.
 *   odd    records (u8 type, u16 length, body) that this target seals in
 *          turn, numbered from 0, and the second byte names one of them
 *          to tamper with (a flipped bit of its tag; 0xff: none). Oracle:
 *          the reader answers each record as pxfer_msg_decode does its
 *          plaintext (a header over the type's limits: -EPROTO), except
 *          the tampered one, which is -EBADMSG; and stops at the first
 *          that is not accepted.
 */
#include <errno.h>
#include <string.h>

#include "core/bytes.h"
#include "core/proto.h"
#include "core/seal.h"
#include "engine/ctrl.h"
#include "fuzz.h"

static const uint8_t key[32] = FUZZ_KEY;

static const struct pxfer_transport_ops none = { .name = "none" };

/* a sealed reader with @len bytes of @data arrived (what fits) */
static int reader(struct pxfer_ctrl *c, struct pxfer_conn *conn,
		  const uint8_t *data, size_t len)
{
	if (pxfer_ctrl_init(c, conn))
		return -1;
	if (pxfer_ctrl_seal(c, PXFER_CIPHER_AES_GCM, key, key)) {
		pxfer_ctrl_release(c);
		return -1;
	}
	c->in_len = len < c->in_cap ? len : c->in_cap;
	memcpy(c->in, data, c->in_len);
	return 0;
}

/* seal @blen bytes of @body as message @seq of @type into @f: its length */
static size_t seal_one(struct pxfer_aead *a, uint64_t seq, uint16_t type,
		       const uint8_t *body, size_t blen, uint8_t *f)
{
	uint8_t nonce[PXFER_AEAD_NONCE_LEN];

	pxfer_hdr_encode(f, type, blen + PXFER_TAG_LEN);
	memcpy(f + PXFER_HDR_LEN, body, blen);
	pxfer_nonce_make(nonce, 0, seq);
	FUZZ_CHECK(!pxfer_aead_seal(a, nonce, f, PXFER_HDR_LEN, NULL, 0,
				    f + PXFER_HDR_LEN, blen, f + PXFER_HDR_LEN + blen));
	return PXFER_HDR_LEN + blen + PXFER_TAG_LEN;
}

static void raw(const uint8_t *data, size_t size)
{
	static uint8_t again[PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN];
	static uint8_t body[PXFER_HDR_LEN + PXFER_MSG_MAX];
	struct pxfer_conn conn = { .ops = &none };
	struct pxfer_ctrl c;
	struct pxfer_aead a;
	struct pxfer_msg m;
	uint64_t seq = 0;
	int r;

	if (reader(&c, &conn, data, size))
		return;
	FUZZ_CHECK(!pxfer_aead_init(&a, PXFER_CIPHER_AES_GCM, key, 1));
	for (;;) {
		size_t off = c.in_off;
		ssize_t n;

		r = pxfer_ctrl_next(&c, &m);
		if (r <= 0)
			break;
		/* canonical, and sealed as it was: it seals back to itself */
		n = pxfer_msg_encode(body, sizeof(body), &m);
		FUZZ_CHECK(n >= PXFER_HDR_LEN);
		n = seal_one(&a, seq++, m.type, body + PXFER_HDR_LEN,
			     n - PXFER_HDR_LEN, again);
		FUZZ_CHECK((size_t)n == c.in_off - off);
		/* (the reader opened it in place: compare with what came) */
		FUZZ_CHECK(!memcmp(again, data + off, n));
	}
	FUZZ_CHECK(r == 0 || r == -EPROTO || r == -EBADMSG);
	pxfer_aead_release(&a);
	pxfer_ctrl_release(&c);
}

static void records(const uint8_t *data, size_t size)
{
	static uint8_t stream[4 * (PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN)];
	static struct pxfer_msg m, want;
	struct pxfer_conn conn = { .ops = &none };
	unsigned int tamper, n = 0;
	size_t len = 0, ends[64];
	struct pxfer_ctrl c;
	struct pxfer_aead a;
	struct pxfer_hdr h;
	struct {
		uint16_t type;
		const uint8_t *body;
		size_t blen;
	} rec[64];
	int r;

	if (size < 1)
		return;
	tamper = data[0];
	data++;
	size--;
	FUZZ_CHECK(!pxfer_aead_init(&a, PXFER_CIPHER_AES_GCM, key, 1));
	while (size >= 3 && n < 64) {
		size_t blen = pxfer_get_be(data + 1, 2);

		if (blen > size - 3 ||
		    len + PXFER_HDR_LEN + blen + PXFER_TAG_LEN > sizeof(stream))
			break;
		rec[n].type = data[0];
		rec[n].body = data + 3;
		rec[n].blen = blen;
		len += seal_one(&a, n, data[0], data + 3, blen, stream + len);
		if (n == tamper)
			stream[len - 1] ^= 1;	/* the last byte of its tag */
		ends[n++] = len;
		data += 3 + blen;
		size -= 3 + blen;
	}
	pxfer_aead_release(&a);
	if (reader(&c, &conn, stream, len))
		return;
	for (unsigned int i = 0; i < n && ends[i] <= c.in_cap; i++) {
		int want_r;
		uint8_t hdr[PXFER_HDR_LEN];

		pxfer_hdr_encode(hdr, rec[i].type, rec[i].blen + PXFER_TAG_LEN);
		if (pxfer_hdr_decode_sealed(hdr, sizeof(hdr), &h))
			want_r = -EPROTO;
		else if (i == tamper)
			want_r = -EBADMSG;
		else
			want_r = pxfer_msg_decode(rec[i].type, rec[i].body,
						  rec[i].blen, &want) ? -EPROTO : 1;
		r = pxfer_ctrl_next(&c, &m);
		FUZZ_CHECK(r == want_r);
		if (r != 1)
			break;
		FUZZ_CHECK(m.type == rec[i].type && c.in_off == ends[i]);
	}
	pxfer_ctrl_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		records(data + 1, size - 1);
	else
		raw(data + 1, size - 1);
	return 0;
}
