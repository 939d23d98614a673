// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "core/bytes.h"
#include "core/hash.h"
#include "engine/tagger.h"

int pxfer_tagger_init(struct pxfer_tagger *g, const struct pxfer_session *s,
		      unsigned int worker, int seal)
{
	memset(g, 0, sizeof(*g));
	g->prot = pxfer_session_prot(s);
	g->worker = worker;
	if (g->prot == PXFER_PROT_CHECKSUM)
		return 0;
	return pxfer_aead_init(&g->aead, pxfer_session_cipher(s), s->keys.data,
			       seal);
}

void pxfer_tagger_release(struct pxfer_tagger *g)
{
	pxfer_aead_release(&g->aead);
}

/* the descriptor as additional data: encoded with its tag zeroed */
static int desc_ad(struct pxfer_tagger *g, const struct pxfer_chunk *ch)
{
	ssize_t n = pxfer_chunk_encode(g->desc, sizeof(g->desc), ch);

	if (n < 0)
		return n;
	memset(g->desc + PXFER_CHUNK_DESC_FIXED - PXFER_TAG_LEN, 0,
	       PXFER_TAG_LEN);
	g->desc_len = n;
	return 0;
}

static void nonce_of(const struct pxfer_tagger *g, const struct pxfer_chunk *ch,
		     uint8_t *nonce)
{
	pxfer_nonce_make(nonce, (uint32_t)g->worker << 16 | g->gen, ch->seq);
}

static void checksum_tag(uint8_t *tag, uint64_t h)
{
	pxfer_put_be(tag, h, 8);
	memset(tag + 8, 0, PXFER_TAG_LEN - 8);
}

int pxfer_tagger_seal(struct pxfer_tagger *g, struct pxfer_chunk *ch,
		      void *buf)
{
	uint8_t nonce[PXFER_AEAD_NONCE_LEN];
	int enc = g->prot == PXFER_PROT_ENCRYPT, ret;

	if (g->prot == PXFER_PROT_CHECKSUM) {
		checksum_tag(ch->tag, pxfer_hash(buf, ch->len));
		return 0;
	}
	ret = desc_ad(g, ch);
	if (ret)
		return ret;
	nonce_of(g, ch, nonce);
	return pxfer_aead_seal(&g->aead, nonce, g->desc, g->desc_len,
			       enc ? NULL : buf, enc ? 0 : ch->len,
			       enc ? buf : NULL, enc ? ch->len : 0, ch->tag);
}

int pxfer_tagger_open(struct pxfer_tagger *g, const struct pxfer_chunk *ch,
		      void *buf)
{
	uint8_t nonce[PXFER_AEAD_NONCE_LEN], want[PXFER_TAG_LEN];
	int enc = g->prot == PXFER_PROT_ENCRYPT;

	if (g->prot == PXFER_PROT_CHECKSUM) {
		checksum_tag(want, pxfer_hash(buf, ch->len));
		/* not a secret: a plain comparison will do */
		return memcmp(want, ch->tag, PXFER_TAG_LEN) ? -EBADMSG : 0;
	}
	if (desc_ad(g, ch))
		return -EBADMSG;
	nonce_of(g, ch, nonce);
	return pxfer_aead_open(&g->aead, nonce, g->desc, g->desc_len,
			       enc ? NULL : buf, enc ? 0 : ch->len,
			       enc ? buf : NULL, enc ? ch->len : 0, ch->tag) ?
	       -EBADMSG : 0;
}
