// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <sodium.h>
#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

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

	mac_begin(&st, s->key, s->len, "pxfer2 hello");
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
			    const uint8_t *nonce_r, const struct pxfer_hello *h,
			    const struct pxfer_welcome *w, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;
	uint8_t p[24];

	mac_begin(&st, s->key, s->len, "pxfer2 welcome");
	crypto_auth_hmacsha256_update(&st, h->nonce, PXFER_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_r, PXFER_NONCE_LEN);
	/* the HELLO it answers, and so all that the HELLO asked */
	crypto_auth_hmacsha256_update(&st, h->mac, PXFER_MAC_LEN);
	pxfer_put_be(p, w->session, 8);
	pxfer_put_be(p + 8, w->chunk_size, 4);
	pxfer_put_be(p + 12, w->workers, 2);
	pxfer_put_be(p + 14, w->slots, 2);
	pxfer_put_be(p + 16, w->max_files, 4);
	pxfer_put_be(p + 20, w->flags, 4);
	crypto_auth_hmacsha256_update(&st, p, sizeof(p));
	/* the addresses it offers for data: nobody else may add one */
	p[0] = w->nrails;
	crypto_auth_hmacsha256_update(&st, p, 1);
	for (unsigned int i = 0; i < w->nrails && i < PXFER_WIRE_RAILS_MAX; i++) {
		p[0] = w->rail[i].family;
		p[1] = w->rail[i].prefix;
		crypto_auth_hmacsha256_update(&st, p, 2);
		crypto_auth_hmacsha256_update(&st, w->rail[i].addr, 16);
	}
	crypto_auth_hmacsha256_final(&st, mac);
}

void pxfer_auth_data_mac(const uint8_t *auth_key, const uint8_t *nonce_d,
			 uint64_t session, uint16_t worker, uint16_t gen,
			 uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;
	uint8_t tail[12];

	mac_begin(&st, auth_key, PXFER_KEY_LEN, "pxfer2 data");
	crypto_auth_hmacsha256_update(&st, nonce_d, PXFER_NONCE_LEN);
	pxfer_put_be(tail, session, 8);
	pxfer_put_be(tail + 8, worker, 2);
	pxfer_put_be(tail + 10, gen, 2);
	crypto_auth_hmacsha256_update(&st, tail, sizeof(tail));
	crypto_auth_hmacsha256_final(&st, mac);
}

void pxfer_auth_dwel_mac(const uint8_t *auth_key, const uint8_t *nonce_d,
			 uint64_t session, const struct pxfer_data_welcome *dw,
			 uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;
	uint8_t tail[12];

	mac_begin(&st, auth_key, PXFER_KEY_LEN, "pxfer2 data welcome");
	crypto_auth_hmacsha256_update(&st, nonce_d, PXFER_NONCE_LEN);
	pxfer_put_be(tail, session, 8);
	pxfer_put_be(tail + 8, dw->worker, 2);
	pxfer_put_be(tail + 10, dw->blob_len, 2);
	crypto_auth_hmacsha256_update(&st, tail, sizeof(tail));
	crypto_auth_hmacsha256_update(&st, dw->blob, dw->blob_len);
	crypto_auth_hmacsha256_final(&st, mac);
}

const char *const pxfer_key_labels[4] = {
	"pxfer2 ctrl s2r", "pxfer2 ctrl r2s", "pxfer2 data s2r", "pxfer2 data auth",
};

static int hkdf(EVP_KDF_CTX *kctx, const struct pxfer_secret *s,
		const uint8_t *salt, const char *label, uint8_t *out)
{
	OSSL_PARAM p[5], *q = p;

	*q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
						"SHA256", 0);
	*q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
						 (void *)s->key, s->len);
	*q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
						 (void *)salt,
						 2 * PXFER_NONCE_LEN);
	*q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
						 (void *)label, strlen(label));
	*q = OSSL_PARAM_construct_end();
	return EVP_KDF_derive(kctx, out, PXFER_KEY_LEN, p) == 1 ? 0 : -EIO;
}

int pxfer_auth_keys(const struct pxfer_secret *s, const uint8_t *nonce_r,
		    const uint8_t *nonce_s, struct pxfer_keys *k)
{
	uint8_t *out[4] = { k->ctrl_s2r, k->ctrl_r2s, k->data, k->auth };
	uint8_t salt[2 * PXFER_NONCE_LEN];
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	int ret = kctx ? 0 : -EIO;

	memcpy(salt, nonce_r, PXFER_NONCE_LEN);
	memcpy(salt + PXFER_NONCE_LEN, nonce_s, PXFER_NONCE_LEN);
	for (int i = 0; !ret && i < 4; i++)
		ret = hkdf(kctx, s, salt, pxfer_key_labels[i], out[i]);
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	if (ret)
		pxfer_auth_wipe(k, sizeof(*k));
	return ret;
}

void pxfer_auth_wipe(void *p, size_t len)
{
	sodium_memzero(p, len);
}

int pxfer_auth_equal(const uint8_t *a, const uint8_t *b)
{
	return sodium_memcmp(a, b, PXFER_MAC_LEN) == 0;
}

/* log2(@n) in 1/1024 bits, for @n >= 1 */
static unsigned int log2_1024(unsigned int n)
{
	unsigned int k = 31 - __builtin_clz(n), r = 0;
	uint64_t x = ((uint64_t)n << 16) >> k;	/* n / 2^k in 16.16: [1, 2) */

	/* each squaring doubles the logarithm: its next binary digit */
	for (int i = 9; i >= 0; i--) {
		x = x * x >> 16;
		if (x >= 2u << 16) {
			x >>= 1;
			r |= 1u << i;
		}
	}
	return k * 1024 + r;
}

/* how many characters the classes of the characters of @k make */
static unsigned int secret_pool(const uint8_t *k, size_t len)
{
	unsigned int lower = 0, upper = 0, digit = 0, punct = 0, other = 0;

	for (size_t i = 0; i < len; i++) {
		if (k[i] >= 'a' && k[i] <= 'z')
			lower = 26;
		else if (k[i] >= 'A' && k[i] <= 'Z')
			upper = 26;
		else if (k[i] >= '0' && k[i] <= '9')
			digit = 10;
		else if (k[i] >= 0x20 && k[i] < 0x7f)
			punct = 33;
		else
			other = 128;
	}
	return lower + upper + digit + punct + other;
}

/* the shortest prefix of @k whose repetition makes all of it */
static size_t secret_period(const uint8_t *k, size_t len)
{
	size_t p, i;

	for (p = 1; p < len; p++) {
		for (i = p; i < len && k[i] == k[i - p]; i++)
			;
		if (i == len)
			break;
	}
	return p;
}

unsigned int pxfer_secret_bits(const struct pxfer_secret *s)
{
	const uint8_t *k = s->key;
	size_t len = s->len < PXFER_SECRET_MAX ? s->len : PXFER_SECRET_MAX;
	size_t p = secret_period(k, len);
	unsigned int each, total = 0;
	int step, last = 2;		/* no step yet */

	if (!len)
		return 0;
	each = log2_1024(secret_pool(k, len));
	for (size_t i = 0; i < p; i++) {
		step = i ? k[i] - k[i - 1] : 2;
		/* "aa", or the third of "abc" or "321": nearly free to guess */
		if (step == 0 || ((step == 1 || step == -1) && step == last))
			total += 1024;
		else
			total += each;
		last = step;
	}
	return total / 1024;
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

#define RW	(ACL_READ | ACL_WRITE)

/*
 * Whether the access ACL of @fd lets a user other than its owner and this
 * process's, or any group, read or write it: 1 if so (or if there is no
 * ACL, when the group bits of the mode are the group's own), 0 if not, or
 * -errno. It is how systemd hands a service its credentials: 0400 and
 * root's, with an entry that lets the service's user read it, whose mask
 * shows in the mode's group bits.
 */
static int acl_open(int fd)
{
	struct {
		struct posix_acl_xattr_header h;
		struct posix_acl_xattr_entry e[32];
	} acl;
	unsigned int mask = RW, named = 0, other = 0;
	ssize_t len;

	len = fgetxattr(fd, "system.posix_acl_access", &acl, sizeof(acl));
	if (len < 0 && errno != ENODATA && errno != EOPNOTSUPP &&
	    errno != ERANGE)
		return -errno;
	/* none, too long, or not understood: the mode says it all */
	if (len < (ssize_t)sizeof(acl.h) ||
	    le32toh(acl.h.a_version) != POSIX_ACL_XATTR_VERSION)
		return 1;
	len = (len - sizeof(acl.h)) / sizeof(acl.e[0]);
	for (ssize_t i = 0; i < len; i++) {
		unsigned int perm = le16toh(acl.e[i].e_perm) & RW;

		switch (le16toh(acl.e[i].e_tag)) {
		case ACL_USER:
			if (le32toh(acl.e[i].e_id) != geteuid())
				named |= perm;
			break;
		case ACL_GROUP_OBJ:
		case ACL_GROUP:
			named |= perm;
			break;
		case ACL_MASK:
			mask = perm;
			break;
		case ACL_OTHER:
			other = perm;
			break;
		}
	}
	return (named & mask) || other;
}

/*
 * A secret in a file that others may read is known to them; one they may
 * write, they may choose (as ssh treats a private key, and the rsync
 * daemon its secrets file). Only a regular file has modes that say so: a
 * pipe or a terminal the caller handed over is the caller's business.
 */
static int check_private(int fd)
{
	struct stat st;
	int ret;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || !(st.st_mode & 066))
		return 0;
	if (st.st_mode & 006)
		return -EPERM;
	ret = acl_open(fd);
	return ret > 0 ? -EPERM : ret;
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
		ret = check_private(fd);
		if (ret) {
			close(fd);
			return ret;
		}
	}
	ret = read_all(fd, buf, sizeof(buf), &len);
	if (fd != STDIN_FILENO)
		close(fd);
	if (!ret)
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
