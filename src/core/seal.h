/* SPDX-License-Identifier: MIT */
/*
 * Sealing: the AEADs that authenticate (and, with --encrypt, encrypt)
 * what crosses the wire after the handshake, from OpenSSL's libcrypto:
 * AES-256-GCM or ChaCha20-Poly1305, 256-bit keys, 96-bit nonces, 128-bit
 * tags (and libsodium's AES-256-GCM for short messages). A struct
 * pxfer_aead is one direction with its key set: a sealer or an opener,
 * made once per connection, so that sealing a chunk costs no allocation.
 *
 * What gets sealed (docs/security.md, docs/protocol.md):
 *   control message: additional data = its frame header, plaintext = its
 *                    body, nonce = 0(4) | sequence number of the direction(8)
 *   chunk, mac:      additional data = descriptor (tag zeroed) | payload,
 *                    no plaintext: the tag is GMAC or Poly1305
 *   chunk, encrypt:  additional data = descriptor (tag zeroed),
 *                    plaintext = payload, encrypted in place
 *                    chunk nonce = worker(2) | 0(2) | chunk seq(8)
 */
#ifndef PXFER_SEAL_H
#define PXFER_SEAL_H

#include <stddef.h>
#include <stdint.h>

#define PXFER_TAG_LEN	16
#define PXFER_AEAD_NONCE_LEN 12

enum pxfer_cipher {
	PXFER_CIPHER_AES_GCM = 0,	/* AES-256-GCM */
	PXFER_CIPHER_CHACHA = 1,	/* ChaCha20-Poly1305 */
};

struct pxfer_aead {
	void *ctx;		/* EVP_CIPHER_CTX, the key set */
	int cipher;
	int seal;		/* 1: seals, 0: opens */
	/*
	 * AES-256-GCM from libsodium, for short messages with one piece of
	 * additional data (most control messages), where libcrypto's EVP
	 * calls cost more than the work. NULL for ChaCha20-Poly1305, and
	 * where libsodium lacks it (it needs AES-NI and PCLMUL).
	 */
	void *fast;		/* its expanded key */
};

/* pxfer_cipher_name - "aes-256-gcm" or "chacha20-poly1305" */
const char *pxfer_cipher_name(int cipher);

/*
 * pxfer_aead_init - a sealer (@seal 1) or an opener (0) for @cipher with
 * the 32-byte @key. 0, -ENOMEM, or -ENOTSUP when libcrypto lacks it.
 */
int pxfer_aead_init(struct pxfer_aead *a, int cipher, const uint8_t *key,
		    int seal);

/* pxfer_aead_release - forget the key; idempotent */
void pxfer_aead_release(struct pxfer_aead *a);

/*
 * pxfer_aead_seal - with @nonce (PXFER_AEAD_NONCE_LEN bytes): authenticate
 * @ad (@adlen bytes) then @ad2 (@ad2len, may be 0) as additional data, and
 * encrypt @len bytes at @buf in place (@len may be 0: a bare MAC); the tag
 * into @tag (PXFER_TAG_LEN bytes). 0 or -EIO.
 */
int pxfer_aead_seal(struct pxfer_aead *a, const uint8_t *nonce,
		    const void *ad, size_t adlen, const void *ad2,
		    size_t ad2len, void *buf, size_t len, uint8_t *tag);

/*
 * pxfer_aead_open - the reverse: decrypt @buf in place and check @tag.
 * 0, or -EBADMSG when the tag does not match (then @buf holds garbage:
 * nothing of it may be used).
 */
int pxfer_aead_open(struct pxfer_aead *a, const uint8_t *nonce,
		    const void *ad, size_t adlen, const void *ad2,
		    size_t ad2len, void *buf, size_t len, const uint8_t *tag);

/* pxfer_nonce_make - the 12-byte nonce @hi(4 bytes, big-endian) | @seq(8) */
void pxfer_nonce_make(uint8_t *nonce, uint32_t hi, uint64_t seq);

#endif
