// SPDX-License-Identifier: MIT
/*
 * mac_speed - how fast each candidate chunk tag runs on this CPU, one
 * thread, over buffers of the sizes pxfer's chunks take.
 *
 *	mac_speed [--hot] [KIB...]
 *	mac_speed --short
 *
 * For each size (default 256, 1024 and 4096 KiB: the receiver gives 1 MiB
 * chunks at the default -j4, 2 MiB at -j2, 4 MiB at -j1, and 256 KiB is a
 * small --chunk), tags consecutive buffers of a 64 MiB arena, so that
 * each buffer comes from memory as a chunk does from the page cache;
 * --hot tags one buffer over and over instead (in cache). Each figure is
 * the best of three passes of about 0.2 s, in GiB/s (2^30 bytes), printed
 * as a Markdown table:
 *
 *   AES-256-GCM as GMAC    pxfer's default tag: src/core/seal.c, payload
 *                          as additional data, no plaintext
 *   ChaCha20-Poly1305 MAC  the same with --cipher chacha20-poly1305
 *   AES-256-GCM encrypt    --encrypt: the payload sealed in place
 *   ChaCha20-Poly1305 enc  --encrypt --cipher chacha20-poly1305
 *   Poly1305               EVP_MAC "POLY1305" alone, a fresh key a buffer
 *   BLAKE2b keyed          EVP_MAC "BLAKE2BMAC", 256-bit key, 128-bit tag
 *   HMAC-SHA256            EVP_MAC "HMAC"
 *   XXH3-64 (unkeyed)      pxfer_hash: --integrity checksum
 *
 * A candidate this libcrypto lacks is shown as "n/a".
 *
 * --short: microseconds to seal one control-sized message (a header as
 * additional data, a body of 32 bytes to 4 KiB encrypted in place) with
 * pxfer_aead_seal, through libsodium and through libcrypto's EVP: where
 * src/core/seal.c switches from one to the other (AES-256-GCM only; the
 * libsodium row of ChaCha20-Poly1305 is n/a, as pxfer has none).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "core/hash.h"
#include "core/seal.h"

#define ARENA		(64u << 20)
#define PASS_SECS	0.2
#define PASSES		3
#define MAX_SIZES	8

static const uint8_t key[64] = "mac_speed: a key of no value, 64 bytes long........";

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

struct cand {
	const char *name;
	const char *what;
	/* set up; 0, or -ENOTSUP when this libcrypto lacks it */
	int (*init)(struct cand *c);
	/* tag @len bytes at @buf (may change them); 0 or -errno */
	int (*tag)(struct cand *c, uint8_t *buf, size_t len, uint64_t seq);
	void (*release)(struct cand *c);
	struct pxfer_aead aead;
	int cipher;
	EVP_MAC *mac;
	EVP_MAC_CTX *mctx;
	const char *mac_name;
	uint64_t sink;
};

/* the descriptor pxfer authenticates besides the payload: its size only */
static const uint8_t desc[64];

static int aead_init(struct cand *c)
{
	return pxfer_aead_init(&c->aead, c->cipher, key, 1);
}

static int aead_mac(struct cand *c, uint8_t *buf, size_t len, uint64_t seq)
{
	uint8_t nonce[PXFER_AEAD_NONCE_LEN], tag[PXFER_TAG_LEN];
	int r;

	pxfer_nonce_make(nonce, 0, seq);
	r = pxfer_aead_seal(&c->aead, nonce, desc, sizeof(desc), buf, len,
			    NULL, 0, tag);
	c->sink += tag[0];
	return r;
}

static int aead_encrypt(struct cand *c, uint8_t *buf, size_t len, uint64_t seq)
{
	uint8_t nonce[PXFER_AEAD_NONCE_LEN], tag[PXFER_TAG_LEN];
	int r;

	pxfer_nonce_make(nonce, 0, seq);
	r = pxfer_aead_seal(&c->aead, nonce, desc, sizeof(desc), NULL, 0,
			    buf, len, tag);
	c->sink += tag[0];
	return r;
}

static void aead_release(struct cand *c)
{
	pxfer_aead_release(&c->aead);
}

static int mac_init(struct cand *c)
{
	OSSL_PARAM p[3], *q = p;
	size_t size = 16;

	c->mac = EVP_MAC_fetch(NULL, c->mac_name, NULL);
	if (!c->mac)
		return -ENOTSUP;
	c->mctx = EVP_MAC_CTX_new(c->mac);
	if (!c->mctx)
		return -ENOMEM;
	if (!strcmp(c->mac_name, "HMAC"))
		*q++ = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
							(char *)"SHA256", 0);
	else if (!strcmp(c->mac_name, "BLAKE2BMAC"))
		*q++ = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size);
	*q = OSSL_PARAM_construct_end();
	if (EVP_MAC_CTX_set_params(c->mctx, p) != 1)
		return -ENOTSUP;
	return 0;
}

static int mac_tag(struct cand *c, uint8_t *buf, size_t len, uint64_t seq)
{
	uint8_t out[EVP_MAX_MD_SIZE];
	size_t n;

	/* Poly1305 is a one-time MAC: it needs a new key for every
	 * message, as an AEAD derives one per nonce; the others keep one */
	if (EVP_MAC_init(c->mctx, key, 32, NULL) != 1 ||
	    EVP_MAC_update(c->mctx, desc, sizeof(desc)) != 1 ||
	    EVP_MAC_update(c->mctx, buf, len) != 1 ||
	    EVP_MAC_final(c->mctx, out, &n, sizeof(out)) != 1)
		return -EIO;
	c->sink += out[0] + seq;
	return 0;
}

static void mac_release(struct cand *c)
{
	EVP_MAC_CTX_free(c->mctx);
	EVP_MAC_free(c->mac);
	c->mctx = NULL;
	c->mac = NULL;
}

static int none_init(struct cand *c)
{
	return 0;
}

static int xxh3_tag(struct cand *c, uint8_t *buf, size_t len, uint64_t seq)
{
	c->sink += pxfer_hash(buf, len);
	return 0;
}

static void none_release(struct cand *c)
{
}

static struct cand cands[] = {
	{ "AES-256-GCM as GMAC", "`--integrity mac` (default)", aead_init,
	  aead_mac, aead_release, .cipher = PXFER_CIPHER_AES_GCM },
	{ "ChaCha20-Poly1305 as MAC", "`mac --cipher chacha20-poly1305`",
	  aead_init, aead_mac, aead_release, .cipher = PXFER_CIPHER_CHACHA },
	{ "AES-256-GCM encrypt", "`--encrypt`", aead_init, aead_encrypt,
	  aead_release, .cipher = PXFER_CIPHER_AES_GCM },
	{ "ChaCha20-Poly1305 encrypt", "`--encrypt --cipher chacha20-poly1305`",
	  aead_init, aead_encrypt, aead_release, .cipher = PXFER_CIPHER_CHACHA },
	{ "Poly1305 alone", "candidate (EVP_MAC POLY1305)", mac_init, mac_tag,
	  mac_release, .mac_name = "POLY1305" },
	{ "BLAKE2b keyed", "candidate (EVP_MAC BLAKE2BMAC)", mac_init, mac_tag,
	  mac_release, .mac_name = "BLAKE2BMAC" },
	{ "HMAC-SHA256", "candidate (EVP_MAC HMAC)", mac_init, mac_tag,
	  mac_release, .mac_name = "HMAC" },
	{ "XXH3-64 (unkeyed)", "`--integrity checksum`", none_init, xxh3_tag,
	  none_release, .cipher = 0 },
};

/* GiB/s of @c over buffers of @len, best of PASSES; < 0: -errno */
static double speed(struct cand *c, uint8_t *arena, size_t span, size_t len)
{
	size_t nbuf = span / len, i = 0;
	double best = 0;
	uint64_t seq = 0;

	for (int pass = 0; pass < PASSES; pass++) {
		double t0 = now(), t;
		uint64_t bytes = 0;

		do {
			for (int k = 0; k < 4; k++) {
				int r = c->tag(c, arena + i * len, len, seq++);

				if (r)
					return r;
				bytes += len;
				i = (i + 1) % nbuf;
			}
			t = now() - t0;
		} while (t < PASS_SECS);
		if (bytes / t / (1 << 30) > best)
			best = bytes / t / (1 << 30);
	}
	return best;
}

/* --short: microseconds a message, through libsodium (@fast) or EVP */
static double short_us(int cipher, int fast, size_t len)
{
	static const uint8_t k32[32] = { 7 };
	uint8_t buf[4096] = { 0 }, hdr[8] = { 1 };
	uint8_t nonce[PXFER_AEAD_NONCE_LEN] = { 0 }, tag[PXFER_TAG_LEN];
	struct pxfer_aead a;
	double best = -1;
	void *f;

	if (pxfer_aead_init(&a, cipher, k32, 1))
		return -1;
	f = a.fast;
	if (fast && !f) {
		pxfer_aead_release(&a);
		return -1;
	}
	if (!fast)
		a.fast = NULL;	/* libcrypto alone */
	for (int p = 0; p < PASSES; p++) {
		double t0 = now(), t;
		uint64_t n = 0;

		do {
			for (int k = 0; k < 1000; k++, n++) {
				nonce[11] = (uint8_t)n;
				if (pxfer_aead_seal(&a, nonce, hdr, sizeof(hdr), NULL,
						    0, buf, len, tag))
					goto out;
			}
			t = now() - t0;
		} while (t < PASS_SECS);
		if (best < 0 || t / n * 1e6 < best)
			best = t / n * 1e6;
	}
out:
	a.fast = f;
	pxfer_aead_release(&a);
	return best;
}

static int short_messages(void)
{
	static const size_t lens[] = { 32, 64, 128, 256, 512, 1024, 4096 };
	static const struct { int cipher; const char *name; } ciphers[] = {
		{ PXFER_CIPHER_AES_GCM, "AES-256-GCM" },
		{ PXFER_CIPHER_CHACHA, "ChaCha20-Poly1305" },
	};

	printf("Sealing one short message, one thread, microseconds (best of %d passes of %.1f s):\n\n",
	       PASSES, PASS_SECS);
	printf("| AEAD | library |");
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		printf(" %zu B |", lens[i]);
	printf("\n|---|---|");
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		printf("--:|");
	printf("\n");
	for (size_t c = 0; c < 2; c++) {
		for (int fast = 1; fast >= 0; fast--) {
			printf("| %s | %s |", ciphers[c].name,
			       fast ? "libsodium" : "libcrypto EVP");
			for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
				double v = short_us(ciphers[c].cipher, fast, lens[i]);

				if (v < 0)
					printf(" n/a |");
				else
					printf(" %.3f |", v);
				fflush(stdout);
			}
			printf("\n");
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t sizes[MAX_SIZES] = { 256, 1024, 4096 }, nsizes = 3, span, maxlen = 0;
	int hot = 0, a = 1;
	uint64_t sink = 0;
	uint8_t *arena;

	if (a < argc && !strcmp(argv[a], "--short"))
		return short_messages();
	if (a < argc && !strcmp(argv[a], "--hot")) {
		hot = 1;
		a++;
	}
	if (a < argc) {
		nsizes = 0;
		for (; a < argc; a++) {
			char *end;
			unsigned long kib = strtoul(argv[a], &end, 10);

			if (*end || !kib || kib > (ARENA >> 10) || nsizes == MAX_SIZES) {
				fprintf(stderr, "usage: mac_speed [--hot] [KIB...] (up to %d sizes of 1 to %u KiB)\n",
					MAX_SIZES, ARENA >> 10);
				return 2;
			}
			sizes[nsizes++] = kib;
		}
	}
	for (size_t s = 0; s < nsizes; s++) {
		sizes[s] <<= 10;
		if (sizes[s] > maxlen)
			maxlen = sizes[s];
	}
	span = hot ? maxlen : ARENA;
	arena = aligned_alloc(4096, span);
	if (!arena)
		return 1;
	for (size_t i = 0; i < span; i++)
		arena[i] = (uint8_t)(i * 131 + 7);

	printf("Chunk tags, one thread, GiB/s (best of %d passes of %.1f s; %s):\n\n",
	       PASSES, PASS_SECS, hot ? "one buffer, in cache" :
	       "consecutive buffers of a 64 MiB arena");
	printf("| tag | in pxfer |");
	for (size_t s = 0; s < nsizes; s++)
		printf(" %zu KiB |", sizes[s] >> 10);
	printf("\n|---|---|");
	for (size_t s = 0; s < nsizes; s++)
		printf("--:|");
	printf("\n");
	for (size_t k = 0; k < sizeof(cands) / sizeof(cands[0]); k++) {
		struct cand *c = &cands[k];
		int r = c->init(c);

		printf("| %s | %s |", c->name, c->what);
		for (size_t s = 0; s < nsizes; s++) {
			double v = r ? r : speed(c, arena, span, sizes[s]);

			if (v < 0)
				printf(" n/a |");
			else
				printf(" %.2f |", v);
			fflush(stdout);
		}
		printf("\n");
		sink += c->sink;
		c->release(c);
	}
	printf("\n(checksum of the tags %016llx)\n", (unsigned long long)sink);
	free(arena);
	return 0;
}
