// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "core/auth.h"
#include "core/bytes.h"

int pxfer_auth_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

void pxfer_auth_nonce(uint8_t *nonce)
{
	randombytes_buf(nonce, PXFER_NONCE_LEN);
}

static void mac_begin(crypto_auth_hmacsha256_state *st, const uint8_t *key,
		      size_t keylen, const char *label)
{
	crypto_auth_hmacsha256_init(st, key, keylen);
	/* the label and its terminating NUL separate the domains */
	crypto_auth_hmacsha256_update(st, (const uint8_t *)label,
				      strlen(label) + 1);
}

void pxfer_auth_hello_mac(const struct pxfer_secret *s,
			  const uint8_t *nonce_r, const struct pxfer_hello *h,
			  uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;
	uint8_t params[14];

	mac_begin(&st, s->key, s->len, "pxfer1 hello");
	crypto_auth_hmacsha256_update(&st, nonce_r, PXFER_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, h->nonce, PXFER_NONCE_LEN);
	pxfer_put_be(params, h->workers, 2);
	pxfer_put_be(params + 2, h->chunk_size, 4);
	pxfer_put_be(params + 6, h->flags, 4);
	pxfer_put_be(params + 10, h->dest_len, 4);
	crypto_auth_hmacsha256_update(&st, params, sizeof(params));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)h->dest,
				      h->dest_len);
	crypto_auth_hmacsha256_final(&st, mac);
}

void pxfer_auth_welcome_mac(const struct pxfer_secret *s,
			    const uint8_t *nonce_r, const uint8_t *nonce_s,
			    uint64_t session, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;
	uint8_t sess[8];

	mac_begin(&st, s->key, s->len, "pxfer1 welcome");
	crypto_auth_hmacsha256_update(&st, nonce_s, PXFER_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_r, PXFER_NONCE_LEN);
	pxfer_put_be(sess, session, 8);
	crypto_auth_hmacsha256_update(&st, sess, sizeof(sess));
	crypto_auth_hmacsha256_final(&st, mac);
}

void pxfer_auth_session_key(const struct pxfer_secret *s,
			    const uint8_t *nonce_r, const uint8_t *nonce_s,
			    uint8_t *key)
{
	crypto_auth_hmacsha256_state st;

	mac_begin(&st, s->key, s->len, "pxfer1 session");
	crypto_auth_hmacsha256_update(&st, nonce_r, PXFER_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_s, PXFER_NONCE_LEN);
	crypto_auth_hmacsha256_final(&st, key);
}

void pxfer_auth_data_mac(const uint8_t *session_key, const uint8_t *nonce_d,
			 uint64_t session, uint16_t worker, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;
	uint8_t tail[10];

	mac_begin(&st, session_key, PXFER_KEY_LEN, "pxfer1 data");
	crypto_auth_hmacsha256_update(&st, nonce_d, PXFER_NONCE_LEN);
	pxfer_put_be(tail, session, 8);
	pxfer_put_be(tail + 8, worker, 2);
	crypto_auth_hmacsha256_update(&st, tail, sizeof(tail));
	crypto_auth_hmacsha256_final(&st, mac);
}

int pxfer_auth_equal(const uint8_t *a, const uint8_t *b)
{
	return sodium_memcmp(a, b, PXFER_MAC_LEN) == 0;
}

static int secret_set(struct pxfer_secret *s, const char *buf, size_t len)
{
	/* a trailing newline from "echo > file" is not part of the secret */
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
		       buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (len < PXFER_SECRET_MIN)
		return -EINVAL;
	if (len > PXFER_SECRET_MAX)
		return -E2BIG;
	memcpy(s->key, buf, len);
	s->len = len;
	return 0;
}

static int read_all(int fd, char *buf, size_t cap, size_t *len)
{
	size_t n = 0;

	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += r;
	}
	*len = n;
	return 0;
}

int pxfer_secret_load(struct pxfer_secret *s, const char *file)
{
	char buf[PXFER_SECRET_MAX + 2];
	size_t len = 0;
	int fd, ret;

	if (!file) {
		const char *env = getenv(PXFER_SECRET_ENV);

		if (!env)
			return -ENOENT;
		return secret_set(s, env, strlen(env));
	}
	if (!strcmp(file, "-")) {
		fd = STDIN_FILENO;
	} else {
		fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	ret = read_all(fd, buf, sizeof(buf), &len);
	if (fd != STDIN_FILENO)
		close(fd);
	if (ret)
		return ret;
	ret = secret_set(s, buf, len);
	sodium_memzero(buf, sizeof(buf));
	return ret;
}

int pxfer_secret_generate(struct pxfer_secret *s)
{
	uint8_t raw[24];

	if (pxfer_auth_init())
		return -EIO;
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex((char *)s->key, sizeof(s->key), raw, sizeof(raw));
	s->len = 2 * sizeof(raw);
	sodium_memzero(raw, sizeof(raw));
	return 0;
}
