/* SPDX-License-Identifier: MIT */
/*
 * Authentication: a shared secret proven by HMAC-SHA256 challenge-response
 * (libsodium). The secret never crosses the wire. Every connection starts
 * with a CHALLENGE carrying a fresh receiver nonce, so a recorded HELLO or
 * DATA_HELLO cannot be replayed.
 *
 *   hello_mac   = HMAC(secret, "pxfer2 hello" | nonce_r | nonce_s | params)
 *   welcome_mac = HMAC(secret, "pxfer2 welcome" | nonce_s | nonce_r |
 *                      hello_mac | every field of the WELCOME)
 *   keys        = HKDF-SHA256(salt = nonce_r | nonce_s, ikm = secret,
 *                             info = "pxfer2 " label), one per label:
 *                 "ctrl s2r", "ctrl r2s" (the control channel, each way),
 *                 "data s2r" (chunks), "data auth" (the two MACs below)
 *   data_mac    = HMAC(data auth, "pxfer2 data" | nonce_d | session | worker |
 *                      gen)
 *   dwel_mac    = HMAC(data auth, "pxfer2 data welcome" | nonce_d | session |
 *                      worker | blob_len | blob)
 *
 * The labels keep every key and every MAC to its one purpose.
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
			    const uint8_t *nonce_r, const struct pxfer_hello *h,
			    const struct pxfer_welcome *w, uint8_t *mac);
void pxfer_auth_data_mac(const uint8_t *auth_key, const uint8_t *nonce_d,
			 uint64_t session, uint16_t worker, uint16_t gen,
			 uint8_t *mac);
void pxfer_auth_dwel_mac(const uint8_t *auth_key, const uint8_t *nonce_d,
			 uint64_t session, const struct pxfer_data_welcome *dw,
			 uint8_t *mac);

/* A session's keys, each PXFER_KEY_LEN bytes */
struct pxfer_keys {
	uint8_t ctrl_s2r[PXFER_KEY_LEN];	/* control, sender to receiver */
	uint8_t ctrl_r2s[PXFER_KEY_LEN];	/* control, receiver to sender */
	uint8_t data[PXFER_KEY_LEN];		/* chunks */
	uint8_t auth[PXFER_KEY_LEN];		/* data connections' MACs */
};

/* the labels, for tests: "pxfer2 ctrl s2r" ... */
extern const char *const pxfer_key_labels[4];

/*
 * pxfer_auth_keys - derive the session's keys from @s and both nonces
 * (HKDF-SHA256, libcrypto). 0 or -EIO.
 */
int pxfer_auth_keys(const struct pxfer_secret *s, const uint8_t *nonce_r,
		    const uint8_t *nonce_s, struct pxfer_keys *k);

/* pxfer_auth_wipe - clear @len bytes of key material */
void pxfer_auth_wipe(void *p, size_t len);

/* pxfer_auth_equal - constant-time comparison of two MACs; 1 if equal. */
int pxfer_auth_equal(const uint8_t *a, const uint8_t *b);

/*
 * pxfer_secret_bits - the strength of @s against an offline guess, in
 * bits, rounded down, by the estimate pxfer.h gives for
 * PXFER_SECRET_BITS.
 */
unsigned int pxfer_secret_bits(const struct pxfer_secret *s);

#endif
