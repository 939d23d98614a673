/* SPDX-License-Identifier: MIT */
/*
 * seal_test: what authenticates a session after its handshake.
 *
 *  - keys: HKDF-SHA256 as RFC 5869 defines it (checked against an
 *    independent HMAC-SHA256 computation from libsodium), one key per
 *    label, all different; other nonces or another secret give other
 *    keys; the labels are the documented ones;
 *  - the AEADs (AES-256-GCM, ChaCha20-Poly1305): a sealed buffer opens;
 *    additional data fed in two pieces equals one piece; a changed bit of
 *    the tag, the additional data or the ciphertext, or another nonce,
 *    fails to open with -EBADMSG;
 *  - the control channel over a socketpair, sealed: messages arrive in
 *    order; a frame replayed, two frames swapped, a frame dropped, a bit
 *    flipped, or a frame sealed with the other direction's key each give
 *    -EBADMSG, and nothing of it is decoded;
 *  - the chunk tagger, in each mode: a chunk sealed by one side opens on
 *    the other; with a keyed tag or encryption, a changed payload byte, a
 *    changed segment offset or file, another sequence number or another
 *    worker fails (-EBADMSG); the plain checksum catches the payload
 *    change but, being unkeyed, not a rewrite that fixes the checksum up
 *    (what it gives up, docs/security.md); encryption leaves no plaintext
 *    in the sealed payload.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <poll.h>
#include <sodium.h>
#include <xxhash.h>

#include "core/auth.h"
#include "core/bytes.h"
#include "core/seal.h"
#include "engine/ctrl.h"
#include "engine/tagger.h"
#include "test.h"
#include "sockconn.h"

/* ---- keys ---------------------------------------------------------------- */

static void hkdf_ref(const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
		     size_t ikm_len, const char *info, uint8_t *out)
{
	uint8_t prk[32], one = 1;
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, salt, salt_len);
	crypto_auth_hmacsha256_update(&st, ikm, ikm_len);
	crypto_auth_hmacsha256_final(&st, prk);
	crypto_auth_hmacsha256_init(&st, prk, sizeof(prk));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)info, strlen(info));
	crypto_auth_hmacsha256_update(&st, &one, 1);
	crypto_auth_hmacsha256_final(&st, out);
}

static void test_keys(void)
{
	static const char *const want[4] = {
		"pxfer2 ctrl s2r", "pxfer2 ctrl r2s", "pxfer2 data s2r",
		"pxfer2 data auth",
	};
	struct pxfer_secret sec = { .len = 40 };
	uint8_t nr[PXFER_NONCE_LEN], ns[PXFER_NONCE_LEN], salt[64], ref[32];
	struct pxfer_keys k, k2;
	const uint8_t *kk[4] = { k.ctrl_s2r, k.ctrl_r2s, k.data, k.auth };

	memset(sec.key, 'k', sec.len);
	memset(nr, 1, sizeof(nr));
	memset(ns, 2, sizeof(ns));
	memcpy(salt, nr, 32);
	memcpy(salt + 32, ns, 32);
	T_EXPECT(pxfer_auth_keys(&sec, nr, ns, &k) == 0, "derive");
	for (int i = 0; i < 4; i++) {
		T_EXPECT(!strcmp(pxfer_key_labels[i], want[i]), "label %d is '%s'",
			 i, pxfer_key_labels[i]);
		hkdf_ref(salt, sizeof(salt), sec.key, sec.len, want[i], ref);
		T_EXPECT(!memcmp(ref, kk[i], 32), "key %d is HKDF-SHA256 of its label", i);
		for (int j = 0; j < i; j++)
			T_EXPECT(memcmp(kk[i], kk[j], 32), "keys %d and %d differ", i, j);
	}
	T_EXPECT(pxfer_auth_keys(&sec, nr, ns, &k2) == 0 && !memcmp(&k, &k2, sizeof(k)),
		 "the same inputs give the same keys");
	ns[31] ^= 1;
	T_EXPECT(pxfer_auth_keys(&sec, nr, ns, &k2) == 0 &&
		 memcmp(k.data, k2.data, 32), "another sender nonce, other keys");
	ns[31] ^= 1;
	nr[0] ^= 1;
	T_EXPECT(pxfer_auth_keys(&sec, nr, ns, &k2) == 0 &&
		 memcmp(k.ctrl_s2r, k2.ctrl_s2r, 32), "another receiver nonce, other keys");
	nr[0] ^= 1;
	sec.key[0] = 'j';
	T_EXPECT(pxfer_auth_keys(&sec, nr, ns, &k2) == 0 &&
		 memcmp(k.auth, k2.auth, 32), "another secret, other keys");
}

/* ---- the AEADs ---------------------------------------------------------- */

static void test_aead(int cipher)
{
	const char *name = pxfer_cipher_name(cipher);
	uint8_t key[32], nonce[12], ad[300], buf[5000], orig[5000], tag[16],
		tag2[16];
	struct pxfer_aead s, o;

	memset(key, 7, sizeof(key));
	for (size_t i = 0; i < sizeof(ad); i++)
		ad[i] = i * 13;
	for (size_t i = 0; i < sizeof(buf); i++)
		orig[i] = i * 31 + 1;
	pxfer_nonce_make(nonce, 5 << 16, 99);
	T_EXPECT(pxfer_aead_init(&s, cipher, key, 1) == 0 &&
		 pxfer_aead_init(&o, cipher, key, 0) == 0, "%s: init", name);

	/* encrypt: the buffer changes, and opens back */
	memcpy(buf, orig, sizeof(buf));
	T_EXPECT(pxfer_aead_seal(&s, nonce, ad, 100, ad + 100, 200, buf,
				 sizeof(buf), tag) == 0, "%s: seal", name);
	T_EXPECT(memcmp(buf, orig, 64), "%s: sealed bytes are not the plaintext", name);
	T_EXPECT(pxfer_aead_open(&o, nonce, ad, 300, NULL, 0, buf, sizeof(buf),
				 tag) == 0, "%s: additional data in one piece opens what two sealed",
		 name);
	T_EXPECT(!memcmp(buf, orig, sizeof(buf)), "%s: opened to the plaintext", name);

	/* a bare MAC over the additional data */
	T_EXPECT(pxfer_aead_seal(&s, nonce, ad, 32, orig, sizeof(orig), NULL, 0,
				 tag2) == 0, "%s: mac", name);
	T_EXPECT(pxfer_aead_open(&o, nonce, ad, 32, orig, sizeof(orig), NULL, 0,
				 tag2) == 0, "%s: mac checks", name);
	memcpy(buf, orig, sizeof(buf));
	buf[4000] ^= 0x10;
	T_EXPECT(pxfer_aead_open(&o, nonce, ad, 32, buf, sizeof(buf), NULL, 0,
				 tag2) == -EBADMSG, "%s: a flipped data bit fails", name);
	tag2[15] ^= 1;
	T_EXPECT(pxfer_aead_open(&o, nonce, ad, 32, orig, sizeof(orig), NULL, 0,
				 tag2) == -EBADMSG, "%s: a flipped tag bit fails", name);
	tag2[15] ^= 1;
	ad[3] ^= 0x80;
	T_EXPECT(pxfer_aead_open(&o, nonce, ad, 32, orig, sizeof(orig), NULL, 0,
				 tag2) == -EBADMSG, "%s: a flipped additional data bit fails",
		 name);
	ad[3] ^= 0x80;
	pxfer_nonce_make(nonce, 5 << 16, 100);
	T_EXPECT(pxfer_aead_open(&o, nonce, ad, 32, orig, sizeof(orig), NULL, 0,
				 tag2) == -EBADMSG, "%s: another nonce fails", name);

	/* an encrypted buffer with a bit flipped */
	memcpy(buf, orig, sizeof(buf));
	pxfer_aead_seal(&s, nonce, ad, 10, NULL, 0, buf, sizeof(buf), tag);
	buf[17] ^= 4;
	T_EXPECT(pxfer_aead_open(&o, nonce, ad, 10, NULL, 0, buf, sizeof(buf),
				 tag) == -EBADMSG, "%s: a flipped ciphertext bit fails", name);
	T_EXPECT(pxfer_aead_open(&s, nonce, ad, 10, NULL, 0, buf, sizeof(buf),
				 tag) != 0, "%s: a sealer does not open", name);
	pxfer_aead_release(&s);
	pxfer_aead_release(&o);
	pxfer_aead_release(&o);		/* idempotent */
}

/*
 * Short AES-256-GCM messages go through libsodium where it has it: the same
 * bytes and tag as libcrypto's, in both directions, at every length
 * around the switch, and a flipped bit in the message, the tag or the
 * additional data fails. @fast NULL in one of a pair makes it libcrypto's.
 */
static void test_short(int cipher)
{
	const char *name = pxfer_cipher_name(cipher);
	uint8_t key[32], nonce[12], ad[12], a[600], b[600], orig[600], ta[16],
		tb[16];
	struct pxfer_aead fs, es, fo, eo;
	void *keep_s, *keep_o;
	int fails = 0;

	memset(key, 9, sizeof(key));
	memset(ad, 3, sizeof(ad));
	for (size_t i = 0; i < sizeof(orig); i++)
		orig[i] = i * 7 + 3;
	T_EXPECT(!pxfer_aead_init(&fs, cipher, key, 1) &&
		 !pxfer_aead_init(&es, cipher, key, 1) &&
		 !pxfer_aead_init(&fo, cipher, key, 0) &&
		 !pxfer_aead_init(&eo, cipher, key, 0), "%s: init", name);
	if (!fs.fast) {
		printf("%s: libcrypto alone (no short path for it here)\n", name);
		goto out;
	}
	keep_s = es.fast;
	keep_o = eo.fast;
	es.fast = eo.fast = NULL;
	for (size_t len = 0; len <= sizeof(orig); len += len < 300 ? 1 : 50) {
		pxfer_nonce_make(nonce, 0, len * 3 + 1);
		memcpy(a, orig, len);
		memcpy(b, orig, len);
		if (pxfer_aead_seal(&fs, nonce, ad, sizeof(ad), NULL, 0, a, len, ta) ||
		    pxfer_aead_seal(&es, nonce, ad, sizeof(ad), NULL, 0, b, len, tb) ||
		    memcmp(a, b, len) || memcmp(ta, tb, 16)) {
			if (fails++ < 3)
				T_EXPECT(0, "%s: %zu bytes sealed differently", name, len);
			continue;
		}
		/* each opens what the other sealed */
		if (pxfer_aead_open(&eo, nonce, ad, sizeof(ad), NULL, 0, a, len, ta) ||
		    memcmp(a, orig, len) ||
		    pxfer_aead_open(&fo, nonce, ad, sizeof(ad), NULL, 0, b, len, tb) ||
		    memcmp(b, orig, len)) {
			if (fails++ < 3)
				T_EXPECT(0, "%s: %zu bytes do not open across", name, len);
			continue;
		}
		pxfer_aead_seal(&fs, nonce, ad, sizeof(ad), NULL, 0, a, len, ta);
		memcpy(b, a, len);
		if (len)
			b[len / 2] ^= 1;
		else
			ta[0] ^= 1;
		if (pxfer_aead_open(&fo, nonce, ad, sizeof(ad), NULL, 0, b, len, ta) !=
		    -EBADMSG && fails++ < 3)
			T_EXPECT(0, "%s: %zu bytes: a flipped bit opened", name, len);
		if (!len)
			ta[0] ^= 1;
		ta[len % 16] ^= 0x40;
		memcpy(b, a, len);
		if (pxfer_aead_open(&fo, nonce, ad, sizeof(ad), NULL, 0, b, len, ta) !=
		    -EBADMSG && fails++ < 3)
			T_EXPECT(0, "%s: %zu bytes: a flipped tag opened", name, len);
		ta[len % 16] ^= 0x40;
		ad[len % sizeof(ad)] ^= 2;
		memcpy(b, a, len);
		if (pxfer_aead_open(&fo, nonce, ad, sizeof(ad), NULL, 0, b, len, ta) !=
		    -EBADMSG && fails++ < 3)
			T_EXPECT(0, "%s: %zu bytes: flipped additional data opened",
				 name, len);
		ad[len % sizeof(ad)] ^= 2;
	}
	T_EXPECT(!fails, "%s: %d lengths failed", name, fails);
	es.fast = keep_s;
	eo.fast = keep_o;
out:
	pxfer_aead_release(&fs);
	pxfer_aead_release(&es);
	pxfer_aead_release(&fo);
	pxfer_aead_release(&eo);
}

/* ---- the sealed control channel ---------------------------------------- */

static const uint8_t key_ab[32] = { 1 }, key_ba[32] = { 2 };

/* the frames side a sends for @n FILE_END messages, raw, into @out */
static size_t sealed_frames(unsigned int n, uint8_t *out, size_t *flen)
{
	struct sock_conn ca = { .conn.ops = &sock_ops }, cb = { .conn.ops = &sock_ops };
	struct pxfer_ctrl a;
	struct pxfer_msg m = { .type = PXFER_MSG_FILE_END };
	int sv[2];
	ssize_t got;
	size_t len = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		exit(1);
	ca.fd = sv[0];
	cb.fd = sv[1];
	if (pxfer_ctrl_init(&a, &ca.conn) ||
	    pxfer_ctrl_seal(&a, PXFER_CIPHER_AES_GCM, key_ab, key_ba))
		exit(1);
	for (unsigned int i = 0; i < n; i++) {
		m.u.end.id = i;
		m.u.end.bytes = 1000 + i;
		pxfer_ctrl_queue(&a, &m);
	}
	pxfer_ctrl_flush(&a);
	while ((got = recv(cb.fd, out + len, 65536, MSG_DONTWAIT)) > 0)
		len += got;
	*flen = len / n;
	pxfer_ctrl_release(&a);
	close(sv[0]);
	close(sv[1]);
	return len;
}

/* feed @len raw bytes to a sealed reader; the ids it decodes into @ids,
 * and what pxfer_ctrl_next said last */
static int read_frames(const uint8_t *raw, size_t len, uint64_t *ids,
		       unsigned int *n)
{
	struct sock_conn cb = { .conn.ops = &sock_ops };
	struct pxfer_ctrl b;
	struct pxfer_msg m;
	int sv[2], r;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		exit(1);
	cb.fd = sv[1];
	if (pxfer_ctrl_init(&b, &cb.conn) ||
	    pxfer_ctrl_seal(&b, PXFER_CIPHER_AES_GCM, key_ba, key_ab))
		exit(1);
	if (write(sv[0], raw, len) != (ssize_t)len)
		exit(1);
	pxfer_ctrl_fill(&b);
	*n = 0;
	while ((r = pxfer_ctrl_next(&b, &m)) > 0)
		ids[(*n)++] = m.u.end.id;
	pxfer_ctrl_release(&b);
	close(sv[0]);
	close(sv[1]);
	return r;
}

static void test_ctrl(void)
{
	static uint8_t raw[4096], bad[4096];
	uint64_t ids[16];
	unsigned int n;
	size_t f, len = sealed_frames(4, raw, &f);
	int r;

	T_EXPECT(f == PXFER_HDR_LEN + 36 + PXFER_TAG_LEN && len == 4 * f,
		 "a sealed FILE_END is its frame and a tag (%zu)", f);
	T_EXPECT(memmem(raw, len, "\0\0\0\0\0\0\x03\xe9", 8) == NULL,
		 "the body does not cross in clear");
	r = read_frames(raw, len, ids, &n);
	T_EXPECT(r == 0 && n == 4 && ids[0] == 0 && ids[3] == 3,
		 "all four arrive in order (r %d, n %u)", r, n);

	/* replayed: frame 1 twice */
	memcpy(bad, raw, 2 * f);
	memcpy(bad + 2 * f, raw + f, 2 * f);
	r = read_frames(bad, 4 * f, ids, &n);
	T_EXPECT(r == -EBADMSG && n == 2, "a replayed frame fails (r %d, n %u)", r, n);
	/* swapped: 0, 2, 1, 3 */
	memcpy(bad, raw, f);
	memcpy(bad + f, raw + 2 * f, f);
	memcpy(bad + 2 * f, raw + f, f);
	memcpy(bad + 3 * f, raw + 3 * f, f);
	r = read_frames(bad, 4 * f, ids, &n);
	T_EXPECT(r == -EBADMSG && n == 1, "swapped frames fail (r %d, n %u)", r, n);
	/* dropped: 0, 2, 3 */
	memcpy(bad, raw, f);
	memcpy(bad + f, raw + 2 * f, 2 * f);
	r = read_frames(bad, 3 * f, ids, &n);
	T_EXPECT(r == -EBADMSG && n == 1, "a dropped frame fails the next (r %d, n %u)",
		 r, n);
	/* a flipped bit in the body, then in the header (additional data) */
	memcpy(bad, raw, len);
	bad[f + PXFER_HDR_LEN + 3] ^= 1;
	r = read_frames(bad, len, ids, &n);
	T_EXPECT(r == -EBADMSG && n == 1, "a flipped body bit fails (r %d, n %u)", r, n);
	memcpy(bad, raw, len);
	bad[0] = 0;
	bad[1] = PXFER_MSG_FILE_DONE;	/* a body of FILE_END's length fits it */
	r = read_frames(bad, len, ids, &n);
	T_EXPECT(r == -EBADMSG && n == 0, "a retyped frame fails (r %d, n %u)", r, n);
	/* a frame of the other direction (its key) does not open here */
	{
		struct sock_conn c = { .conn.ops = &sock_ops };
		struct pxfer_ctrl b;
		struct pxfer_msg m = { .type = PXFER_MSG_PING };
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			exit(1);
		c.fd = sv[0];
		pxfer_ctrl_init(&b, &c.conn);
		pxfer_ctrl_seal(&b, PXFER_CIPHER_AES_GCM, key_ba, key_ab);
		pxfer_ctrl_queue(&b, &m);
		pxfer_ctrl_flush(&b);
		len = recv(sv[1], bad, sizeof(bad), 0);
		pxfer_ctrl_release(&b);
		close(sv[0]);
		close(sv[1]);
		r = read_frames(bad, len, ids, &n);
		T_EXPECT(r == -EBADMSG, "a reflected frame fails (r %d)", r);
	}
	/* an unsealed frame where sealed ones are expected */
	{
		struct pxfer_msg m = { .type = PXFER_MSG_PING };
		ssize_t k = pxfer_msg_encode(bad, sizeof(bad), &m);

		r = read_frames(bad, k, ids, &n);
		T_EXPECT(r == -EPROTO, "a frame without a tag is malformed (r %d)", r);
	}
}

/* ---- the chunk tagger --------------------------------------------------- */

static void session_for(struct pxfer_session *s, uint32_t flags)
{
	memset(s, 0, sizeof(*s));
	s->wel.flags = flags;
	memset(s->keys.data, 9, sizeof(s->keys.data));
}

static void test_tagger(uint32_t flags, const char *name)
{
	static uint8_t payload[70000], orig[70000];
	struct pxfer_session s;
	struct pxfer_tagger tx, rx, other;
	struct pxfer_chunk ch = { .slot = 1, .nseg = 2, .len = sizeof(payload),
				  .seq = 42 }, c2;
	int checksum = flags & PXFER_HELLO_CHECKSUM, enc = flags & PXFER_HELLO_ENCRYPT;

	ch.seg[0] = (struct pxfer_seg){ .file = 3, .offset = 0, .len = 1000 };
	ch.seg[1] = (struct pxfer_seg){ .file = 4, .offset = 8192,
					.len = sizeof(payload) - 1000 };
	for (size_t i = 0; i < sizeof(orig); i++)
		orig[i] = "the quick brown fox "[i % 20];
	session_for(&s, flags);
	T_EXPECT(!pxfer_tagger_init(&tx, &s, 2, 1) && !pxfer_tagger_init(&rx, &s, 2, 0) &&
		 !pxfer_tagger_init(&other, &s, 3, 0), "%s: init", name);

	memcpy(payload, orig, sizeof(payload));
	T_EXPECT(!pxfer_tagger_seal(&tx, &ch, payload), "%s: seal", name);
	T_EXPECT(enc ? memmem(payload, sizeof(payload), "quick brown", 11) == NULL
		     : !memcmp(payload, orig, sizeof(payload)),
		 "%s: the payload is %s", name, enc ? "not in clear" : "unchanged");
	memcpy(orig, payload, sizeof(orig));	/* what crossed the wire */
	T_EXPECT(!pxfer_tagger_open(&rx, &ch, payload), "%s: opens", name);
	T_EXPECT(memmem(payload, sizeof(payload), "quick brown", 11) != NULL,
		 "%s: to the plaintext", name);

	memcpy(payload, orig, sizeof(payload));
	payload[50000] ^= 1;
	T_EXPECT(pxfer_tagger_open(&rx, &ch, payload) == -EBADMSG,
		 "%s: a changed payload byte fails", name);
	memcpy(payload, orig, sizeof(payload));
	T_EXPECT(pxfer_tagger_open(&other, &ch, payload) == (checksum ? 0 : -EBADMSG),
		 "%s: on another data connection", name);

	c2 = ch;
	c2.seg[1].offset += 4096;
	memcpy(payload, orig, sizeof(payload));
	T_EXPECT(pxfer_tagger_open(&rx, &c2, payload) == (checksum ? 0 : -EBADMSG),
		 "%s: a moved segment %s", name, checksum ? "passes (unkeyed)" : "fails");
	c2 = ch;
	c2.seg[0].file = 5;
	memcpy(payload, orig, sizeof(payload));
	T_EXPECT(pxfer_tagger_open(&rx, &c2, payload) == (checksum ? 0 : -EBADMSG),
		 "%s: another file", name);
	c2 = ch;
	c2.seq = 43;
	memcpy(payload, orig, sizeof(payload));
	T_EXPECT(pxfer_tagger_open(&rx, &c2, payload) == (checksum ? 0 : -EBADMSG),
		 "%s: another sequence number", name);
	if (checksum) {
		/* an attacker rewrites the payload and fixes the checksum */
		memcpy(payload, orig, sizeof(payload));
		memset(payload, 'X', 100);
		c2 = ch;
		pxfer_put_be(c2.tag, XXH3_64bits(payload, sizeof(payload)), 8);
		T_EXPECT(pxfer_tagger_open(&rx, &c2, payload) == 0,
			 "%s: a fixed-up checksum passes: what it gives up", name);
		c2.tag[12] = 1;
		T_EXPECT(pxfer_tagger_open(&rx, &c2, payload) == -EBADMSG,
			 "%s: the checksum's padding must be zero", name);
	}
	pxfer_tagger_release(&tx);
	pxfer_tagger_release(&rx);
	pxfer_tagger_release(&other);
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	test_keys();
	test_aead(PXFER_CIPHER_AES_GCM);
	test_aead(PXFER_CIPHER_CHACHA);
	test_short(PXFER_CIPHER_AES_GCM);
	test_short(PXFER_CIPHER_CHACHA);
	test_ctrl();
	test_tagger(0, "gmac");
	test_tagger(PXFER_HELLO_CHACHA, "poly1305");
	test_tagger(PXFER_HELLO_ENCRYPT, "aes-256-gcm");
	test_tagger(PXFER_HELLO_ENCRYPT | PXFER_HELLO_CHACHA, "chacha20-poly1305");
	test_tagger(PXFER_HELLO_CHECKSUM, "checksum");
	if (!t_failures)
		printf("seal_test: all passed\n");
	return t_result();
}
