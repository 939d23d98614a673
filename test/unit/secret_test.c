/* SPDX-License-Identifier: MIT */
/*
 * secret_test: the shared secret (src/core/auth.c).
 *
 * Loading it (pxfer_secret_load). From a file: trailing white space
 * dropped, a file its group or others may read or write refused (-EPERM)
 * whatever it holds, also through an ACL, but not one that only lets this
 * process's user read it (how systemd hands a service its credentials);
 * too short or too long refused. From the environment: the same limits,
 * and -ENOENT when the variable is not set.
 *
 * Its strength (pxfer_secret_bits, the rule of PXFER_SECRET_BITS): the
 * estimate of known secrets to the bit; words, runs, sequences and
 * repeated patterns refused; random base64 tokens of 22 characters and
 * generated tokens accepted, every one of many thousands; the secrets of
 * the test suite and the documentation accepted; pxfer_send and
 * pxfer_recv refuse a weak secret.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

#include "pxfer/pxfer.h"
#include "core/auth.h"
#include "test.h"

static char dir[] = "/tmp/pxfer-secret-test.XXXXXX";

/* a file of @mode holding @text; its path, in a static buffer */
static const char *put(const char *name, const char *text, mode_t mode)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		fprintf(stderr, "cannot write %s: %m\n", path);
		exit(1);
	}
	chmod(path, mode);
	return path;
}

static void test_file(void)
{
	static const char good[] = "Kq7-vR2x_Lm9/Tz4pW8+bN";
	static const mode_t open_to_others[] = { 0640, 0604, 0620, 0602, 0660,
						 0644, 0666, 0770, 0460 };
	struct pxfer_secret s;
	const char *p;
	int ret;

	p = put("ok", "Kq7-vR2x_Lm9/Tz4pW8+bN \n\n", 0600);
	ret = pxfer_secret_load(&s, p);
	T_EXPECT(ret == 0 && s.len == sizeof(good) - 1 &&
		 !memcmp(s.key, good, s.len),
		 "a 0600 file, trailing white space dropped: %d, %zu bytes",
		 ret, s.len);
	p = put("ro", good, 0400);
	T_EXPECT(pxfer_secret_load(&s, p) == 0, "a 0400 file");
	for (size_t i = 0; i < sizeof(open_to_others) / sizeof(open_to_others[0]); i++) {
		p = put("open", good, open_to_others[i]);
		ret = pxfer_secret_load(&s, p);
		T_EXPECT(ret == -EPERM, "a file of mode %04o: %d, not -EPERM",
			 (unsigned int)open_to_others[i], ret);
	}
	p = put("short", "fifteen-chars-x", 0600);
	T_EXPECT(pxfer_secret_load(&s, p) == -EINVAL, "15 characters");
	T_EXPECT(pxfer_secret_load(&s, "/nonexistent/key") == -ENOENT,
		 "a missing file");
}

/*
 * Give file @path the access ACL user::r, user:@uid:r (or group:@gid:r
 * when @uid is -1), group::@gperm, mask::r, other::-. 0, or -1 if this
 * file system has no ACLs.
 */
static int set_acl(const char *path, int uid, int gid, int gperm)
{
	struct {
		struct posix_acl_xattr_header h;
		struct posix_acl_xattr_entry e[5];
	} acl = { .h.a_version = htole32(POSIX_ACL_XATTR_VERSION) };
	const struct { int tag, perm, id; } e[5] = {
		{ ACL_USER_OBJ, ACL_READ, ACL_UNDEFINED_ID },
		{ uid >= 0 ? ACL_USER : ACL_GROUP, ACL_READ, uid >= 0 ? uid : gid },
		{ ACL_GROUP_OBJ, gperm, ACL_UNDEFINED_ID },
		{ ACL_MASK, ACL_READ, ACL_UNDEFINED_ID },
		{ ACL_OTHER, 0, ACL_UNDEFINED_ID },
	};

	for (int i = 0; i < 5; i++) {
		acl.e[i].e_tag = htole16(e[i].tag);
		acl.e[i].e_perm = htole16(e[i].perm);
		acl.e[i].e_id = htole32(e[i].id);
	}
	return setxattr(path, "system.posix_acl_access", &acl, sizeof(acl), 0);
}

/* ACLs: the user who runs this may read it, nobody else */
static void test_acl(void)
{
	struct pxfer_secret s;
	const char *p;
	struct stat st;
	int ret;

	p = put("acl", "Kq7-vR2x_Lm9/Tz4pW8+bN", 0400);
	if (set_acl(p, geteuid(), -1, 0)) {
		printf("SKIP (subcase): no ACLs in %s: %m\n", dir);
		return;
	}
	stat(p, &st);
	ret = pxfer_secret_load(&s, p);
	T_EXPECT(ret == 0, "an ACL for this user only (mode %04o): %d",
		 (unsigned int)st.st_mode & 07777, ret);
	set_acl(p, geteuid() + 1, -1, 0);
	ret = pxfer_secret_load(&s, p);
	T_EXPECT(ret == -EPERM, "an ACL for another user: %d", ret);
	set_acl(p, -1, getegid(), 0);
	ret = pxfer_secret_load(&s, p);
	T_EXPECT(ret == -EPERM, "an ACL for a group: %d", ret);
	set_acl(p, geteuid(), -1, ACL_READ);
	ret = pxfer_secret_load(&s, p);
	T_EXPECT(ret == -EPERM, "an ACL for this user and the file's group: %d",
		 ret);
}

static void test_env(void)
{
	static char big[PXFER_SECRET_MAX + 2];
	struct pxfer_secret s;

	unsetenv(PXFER_SECRET_ENV);
	T_EXPECT(pxfer_secret_load(&s, NULL) == -ENOENT, "no variable");
	setenv(PXFER_SECRET_ENV, "Kq7-vR2x_Lm9/Tz4pW8+bN", 1);
	T_EXPECT(pxfer_secret_load(&s, NULL) == 0 && s.len == 22,
		 "from the environment");
	setenv(PXFER_SECRET_ENV, "short-secret", 1);
	T_EXPECT(pxfer_secret_load(&s, NULL) == -EINVAL, "12 characters");
	memset(big, 'x', sizeof(big) - 1);
	setenv(PXFER_SECRET_ENV, big, 1);
	T_EXPECT(pxfer_secret_load(&s, NULL) == -E2BIG, "1025 characters");
}

static unsigned int bits(const char *text)
{
	struct pxfer_secret s = { .len = strlen(text) };

	memcpy(s.key, text, s.len);
	return pxfer_secret_bits(&s);
}

static void test_estimate(void)
{
	static const struct {
		const char *text;
		unsigned int bits;
	} known[] = {
		/* 16 x log2(26): a 16-letter word */
		{ "internationalism", 75 },
		/* the shortest period, "password": 7 letters and a run */
		{ "passwordpassword", 33 },
		/* "aaa...": 28 runs of 1 bit; 'a' and '1' log2(36) each */
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaa1", 37 },
		/* "0123456789abcdef", 16 of which 12 continue a sequence */
		{ "0123456789abcdef0123", 32 },
		/* period 11 of 95 characters */
		{ "Tr0ub4dor&3Tr0ub4dor&3", 72 },
		{ "Password1234!!!!", 71 },
		{ "qwertyuiopasdfghjkl", 81 },
		/* 22 characters of 95 */
		{ "Kq7-vR2x_Lm9/Tz4pW8+bN", 144 },
		/* bytes outside printable ASCII: a pool of 128, 7 bits for
		 * the first two, 1 for each that continues the sequence */
		{ "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c", 24 },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		unsigned int b = bits(known[i].text);

		T_EXPECT(b == known[i].bits, "'%s': %u bits, not %u",
			 known[i].text, b, known[i].bits);
	}
}

static void test_rule(void)
{
	static const char *const weak[] = {
		"internationalism", "passwordpassword", "Password1234!!!!",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaa1", "Tr0ub4dor&3Tr0ub4dor&3",
		"abcdefghijklmnopqrstuvwxyz", "Summer2024!Summer",
		"0123456789012345678901234567890123456789",
	};
	/* the suite's, the benchmarks' and the documentation's secrets */
	static const char *const strong[] = {
		"e2e-shared-secret-0123456789",
		"rdma-suite-shared-secret-0123456789",
		"rdma-by-hand-secret-0123456789",
		"api-test-secret-0123456789",
		"not-the-right-secret-at-all",
		"another-wrong-secret-0000",
		"not-the-right-secret-42-42-42",
		"Kq7-vR2x_Lm9/Tz4pW8+bN",
	};

	for (size_t i = 0; i < sizeof(weak) / sizeof(weak[0]); i++)
		T_EXPECT(bits(weak[i]) < PXFER_SECRET_BITS,
			 "'%s' is weak, not %u bits", weak[i], bits(weak[i]));
	for (size_t i = 0; i < sizeof(strong) / sizeof(strong[0]); i++)
		T_EXPECT(bits(strong[i]) >= PXFER_SECRET_BITS,
			 "'%s' is strong, not %u bits", strong[i], bits(strong[i]));
}

/* random tokens as a user would make them, and pxfer's own */
static void test_random(void)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned int least = ~0u, b;
	struct pxfer_secret s;
	uint8_t r[PXFER_NONCE_LEN];

	T_EXPECT(pxfer_auth_init() == 0, "libsodium");
	for (int n = 0; n < 20000; n++) {
		char tok[23];

		pxfer_auth_nonce(r);
		for (int i = 0; i < 22; i++)
			tok[i] = b64[r[i] & 63];
		tok[22] = 0;
		b = bits(tok);
		T_EXPECT(b >= PXFER_SECRET_BITS, "random base64 '%s': %u bits",
			 tok, b);
		if (b < least)
			least = b;
	}
	printf("22 random base64 characters: at least %u bits\n", least);
	for (int n = 0; n < 2000; n++) {
		T_EXPECT(pxfer_secret_generate(&s) == 0, "generate");
		b = pxfer_secret_bits(&s);
		T_EXPECT(b >= PXFER_SECRET_BITS, "generated '%.*s': %u bits",
			 (int)s.len, (char *)s.key, b);
	}
}

/* the library refuses a weak secret before it starts */
static void test_library(void)
{
	char *paths[] = { "/nonexistent", NULL };
	struct pxfer_send_opts so;
	struct pxfer_recv_opts ro;
	struct pxfer_stats st;

	pxfer_send_opts_init(&so);
	so.paths = paths;
	so.npaths = 1;
	so.host = "127.0.0.1";
	so.secret.len = strlen("internationalism");
	memcpy(so.secret.key, "internationalism", so.secret.len);
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "pxfer_send, weak");
	pxfer_recv_opts_init(&ro);
	ro.secret = so.secret;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "pxfer_recv, weak");
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_file();
	test_acl();
	test_env();
	test_estimate();
	test_rule();
	test_random();
	test_library();
	t_rm_rf_at(AT_FDCWD, dir);
	return t_result();
}
