/* SPDX-License-Identifier: MIT */
/*
 * Authentication: a shared secret proven by HMAC-SHA256 challenge-response
 * (libsodium). The secret never crosses the wire. Every connection starts
 * with a CHALLENGE carrying a fresh receiver nonce, so a recorded HELLO or
 * DATA_HELLO cannot be replayed.
 *
 *   hello_mac   = HMAC(secret, "pxfer1 hello" | nonce_r | nonce_s | params)
 *   welcome_mac = HMAC(secret, "pxfer1 welcome" | nonce_s | nonce_r | session)
 *   session_key = HMAC(secret, "pxfer1 session" | nonce_r | nonce_s)
 *   data_mac    = HMAC(session_key, "pxfer1 data" | nonce_d | session | worker)
 */
#ifndef PXFER_AUTH_H
#define PXFER_AUTH_H

#include <stdint.h>
#include "pxfer/pxfer.h"
#include "core/proto.h"

#define PXFER_KEY_LEN 32

/* pxfer_auth_init - initialise the crypto library; 0 or -EIO. */
int pxfer_auth_init(void);

/* pxfer_auth_nonce - fill @nonce with PXFER_NONCE_LEN random bytes. */
void pxfer_auth_nonce(uint8_t *nonce);

void pxfer_auth_hello_mac(const struct pxfer_secret *s,
			  const uint8_t *nonce_r, const struct pxfer_hello *h,
			  uint8_t *mac);
void pxfer_auth_welcome_mac(const struct pxfer_secret *s,
			    const uint8_t *nonce_r, const uint8_t *nonce_s,
			    uint64_t session, uint8_t *mac);
void pxfer_auth_session_key(const struct pxfer_secret *s,
			    const uint8_t *nonce_r, const uint8_t *nonce_s,
			    uint8_t *key);
void pxfer_auth_data_mac(const uint8_t *session_key, const uint8_t *nonce_d,
			 uint64_t session, uint16_t worker, uint8_t *mac);

/* pxfer_auth_equal - constant-time comparison of two MACs; 1 if equal. */
int pxfer_auth_equal(const uint8_t *a, const uint8_t *b);

/*
 * pxfer_secret_bits - the strength of @s against an offline guess, in
 * bits, rounded down, by the estimate pxfer.h gives for
 * PXFER_SECRET_BITS.
 */
unsigned int pxfer_secret_bits(const struct pxfer_secret *s);

#endif
