// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "core/bytes.h"
#include "core/seal.h"

/*
 * AES-256-GCM messages up to this many bytes go through libsodium, where
 * EVP's setup costs more than the work (`bench/mac_speed --short`: 64
 * bytes 0.18 us against 0.21, 256 bytes 0.20 against 0.25); from about
 * 512 bytes libcrypto is as fast or faster. ChaCha20-Poly1305 stays with
 * libcrypto: libsodium's, tried the same way, was no faster at any size.
 */
#define FAST_MAX	256

#define FAST_ALIGN	64

/* the bytes of libsodium's expanded key, rounded up to FAST_ALIGN */
static size_t fast_size(void)
{
	return (sizeof(crypto_aead_aes256gcm_state) + FAST_ALIGN - 1) /
	       FAST_ALIGN * FAST_ALIGN;
}

const char *pxfer_cipher_name(int cipher)
{
	return cipher == PXFER_CIPHER_CHACHA ? "chacha20-poly1305" : "aes-256-gcm";
}

int pxfer_aead_init(struct pxfer_aead *a, int cipher, const uint8_t *key,
		    int seal)
{
	const EVP_CIPHER *c = cipher == PXFER_CIPHER_CHACHA ?
			      EVP_chacha20_poly1305() : EVP_aes_256_gcm();
	EVP_CIPHER_CTX *ctx;

	a->ctx = NULL;
	a->fast = NULL;
	if (!c)
		return -ENOTSUP;
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	if (EVP_CipherInit_ex(ctx, c, NULL, key, NULL, seal) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN,
				PXFER_AEAD_NONCE_LEN, NULL) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		return -ENOTSUP;
	}
	a->ctx = ctx;
	a->cipher = cipher;
	a->seal = seal;
	if (sodium_init() < 0)
		return 0;
	if (cipher == PXFER_CIPHER_AES_GCM && crypto_aead_aes256gcm_is_available()) {
		/* the expanded key wants 16-byte alignment */
		a->fast = aligned_alloc(FAST_ALIGN, fast_size());
		if (a->fast)
			crypto_aead_aes256gcm_beforenm(a->fast, key);
	}
	return 0;
}

void pxfer_aead_release(struct pxfer_aead *a)
{
	/* EVP_CIPHER_CTX_free wipes its key schedule; libsodium's is wiped here */
	EVP_CIPHER_CTX_free(a->ctx);
	a->ctx = NULL;
	if (a->fast)
		sodium_memzero(a->fast, fast_size());
	free(a->fast);
	a->fast = NULL;
}

/* libsodium takes one piece of additional data, and lengths it can hold */
static int fast_ok(const struct pxfer_aead *a, size_t ad2len, size_t len)
{
	return a->fast && !ad2len && len <= FAST_MAX;
}

void pxfer_nonce_make(uint8_t *nonce, uint32_t hi, uint64_t seq)
{
	pxfer_put_be(nonce, hi, 4);
	pxfer_put_be(nonce + 4, seq, 8);
}

/* feed @len bytes, as additional data (@out NULL) or through the cipher */
static int update(EVP_CIPHER_CTX *ctx, uint8_t *out, const uint8_t *in,
		  size_t len)
{
	int n;

	while (len) {
		int step = len > (INT_MAX & ~15) ? (INT_MAX & ~15) : (int)len;

		if (EVP_CipherUpdate(ctx, out, &n, in, step) != 1)
			return -EIO;
		in += step;
		if (out)
			out += step;
		len -= step;
	}
	return 0;
}

static int start(struct pxfer_aead *a, const uint8_t *nonce, const void *ad,
		 size_t adlen, const void *ad2, size_t ad2len, void *buf,
		 size_t len)
{
	EVP_CIPHER_CTX *ctx = a->ctx;

	if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, nonce, -1) != 1 ||
	    update(ctx, NULL, ad, adlen) || update(ctx, NULL, ad2, ad2len) ||
	    update(ctx, buf, buf, len))
		return -EIO;
	return 0;
}

int pxfer_aead_seal(struct pxfer_aead *a, const uint8_t *nonce,
		    const void *ad, size_t adlen, const void *ad2,
		    size_t ad2len, void *buf, size_t len, uint8_t *tag)
{
	uint8_t end[16];
	int n;

	if (a->seal && fast_ok(a, ad2len, len)) {
		crypto_aead_aes256gcm_encrypt_detached_afternm(buf, tag, NULL, buf,
							      len, ad, adlen, NULL,
							      nonce, a->fast);
		return 0;
	}
	if (!a->seal || start(a, nonce, ad, adlen, ad2, ad2len, buf, len) ||
	    EVP_CipherFinal_ex(a->ctx, end, &n) != 1 ||
	    EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_GET_TAG, PXFER_TAG_LEN,
				tag) != 1)
		return -EIO;
	return 0;
}

int pxfer_aead_open(struct pxfer_aead *a, const uint8_t *nonce,
		    const void *ad, size_t adlen, const void *ad2,
		    size_t ad2len, void *buf, size_t len, const uint8_t *tag)
{
	uint8_t end[16];
	int n;

	if (!a->seal && fast_ok(a, ad2len, len))
		return crypto_aead_aes256gcm_decrypt_detached_afternm(buf, NULL, buf,
				len, tag, ad, adlen, nonce, a->fast) ? -EBADMSG : 0;
	if (a->seal || start(a, nonce, ad, adlen, ad2, ad2len, buf, len) ||
	    EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_SET_TAG, PXFER_TAG_LEN,
				(void *)tag) != 1)
		return -EIO;
	/* the tag is checked here, in constant time */
	return EVP_CipherFinal_ex(a->ctx, end, &n) == 1 ? 0 : -EBADMSG;
}
