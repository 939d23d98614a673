/* SPDX-License-Identifier: MIT */
/*
 * A worker's chunk protection, on either side (docs/security.md): the
 * tag in each chunk's descriptor, made by the sender and checked by the
 * receiver before any byte of the chunk counts.
 *
 *   mac       an AEAD tag over the descriptor (tag zeroed) and the
 *             payload, with the session's data key (GMAC or Poly1305)
 *   encrypt   the payload sealed in place, the descriptor as additional
 *             data
 *   checksum  XXH3_64 of the payload, unkeyed: catches corruption, not
 *             an attacker
 *
 * The nonce is the worker's index, its connection's generation (0, or
 * one more for each connection that replaced a lost one) and the chunk's
 * sequence number on that connection, so a chunk replayed, reordered or
 * moved to another data connection, or to the one that replaced it,
 * fails too. Each worker owns its tagger: no locks.
 */
#ifndef PXFER_ENGINE_TAGGER_H
#define PXFER_ENGINE_TAGGER_H

#include <stdint.h>
#include "core/proto.h"
#include "core/seal.h"
#include "engine/session.h"

struct pxfer_tagger {
	enum pxfer_prot prot;
	uint16_t worker;
	uint16_t gen;			/* its connection's generation */
	struct pxfer_aead aead;		/* not for checksum */
	uint8_t desc[PXFER_CHUNK_DESC_MAX];	/* the additional data */
	size_t desc_len;
};

/*
 * pxfer_tagger_init - for worker @worker of session @s, whose keys and
 * parameters are agreed; @seal: the sender's. 0 or -errno; release it
 * either way.
 */
int pxfer_tagger_init(struct pxfer_tagger *g, const struct pxfer_session *s,
		      unsigned int worker, int seal);
void pxfer_tagger_release(struct pxfer_tagger *g);

/*
 * pxfer_tagger_rejoin - the worker's connection was replaced by the one
 * of generation @gen (DATA_HELLO gen), whose sequence numbers start at 0
 * again: the nonces differ from every earlier one all the same
 */
static inline void pxfer_tagger_rejoin(struct pxfer_tagger *g, uint16_t gen)
{
	g->gen = gen;
}

/* pxfer_tagger_payload_plain - whether the payload goes out as it is in
 * the file (not when it is encrypted) */
static inline int pxfer_tagger_payload_plain(const struct pxfer_tagger *g)
{
	return g->prot != PXFER_PROT_ENCRYPT;
}

/*
 * pxfer_tagger_seal - sender: fill ch->tag for the payload @buf (and
 * encrypt it in place when encrypting). ch's other fields are final.
 * 0 or -errno.
 */
int pxfer_tagger_seal(struct pxfer_tagger *g, struct pxfer_chunk *ch,
		      void *buf);

/*
 * pxfer_tagger_open - receiver: check @ch's tag over the payload @buf
 * (and decrypt it in place). 0, or -EBADMSG: the chunk is not what the
 * sender sent, and nothing of @buf may be used.
 */
int pxfer_tagger_open(struct pxfer_tagger *g, const struct pxfer_chunk *ch,
		      void *buf);

#endif
