/* SPDX-License-Identifier: MIT */
/*
 * secret_test: loading the shared secret (pxfer_secret_load,
 * src/core/auth.c). From a file: trailing white space dropped, a file its
 * group or others may read or write refused (-EPERM) whatever it holds,
 * also through an ACL, but not one that only lets this process's user
 * read it (how systemd hands a service its credentials); too short or too
 * long refused. From the environment: the same limits, and -ENOENT when
 * the variable is not set.
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

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_file();
	test_acl();
	test_env();
	t_rm_rf_at(AT_FDCWD, dir);
	return t_result();
}
