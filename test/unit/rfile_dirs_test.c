/* SPDX-License-Identifier: MIT */
/*
 * rfile_dirs_test: the directories a receiving session remembers, to give
 * them their mode and times at the end (src/recv/rfile.c).
 *
 *  - a directory record that repeats (thousands of times) is kept once:
 *    the last record's mode and time win (never its set-id bits), and the
 *    list does not grow;
 *  - new directories are refused (-ENOBUFS, a reason for the sender, and
 *    nothing made on disk) beyond the count or the bytes of paths the
 *    session keeps, while one already kept is still accepted;
 *  - thousands of distinct directories are each found again;
 *  - at the end each gets its mode and time, deepest first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "recv/rfile.h"
#include "test.h"

static char tmp[] = "/tmp/pxfer-rdirs-XXXXXX";
static int rootfd = -1;

static struct pxfer_file *dir_msg(const char *path, uint32_t mode,
				  int64_t mtime)
{
	static struct pxfer_file f;

	memset(&f, 0, sizeof(f));
	f.type = PXFER_FT_DIR;
	f.mode = mode;
	f.mtime_sec = mtime;
	f.path_len = strlen(path);
	memcpy(f.path, path, f.path_len + 1);
	return &f;
}

static int mkdir_msg(struct pxfer_rfiles *r, const char *path, uint32_t mode,
		     int64_t mtime)
{
	struct pxfer_err what = { 0 };
	int ret = pxfer_rfile_mkdir(r, dir_msg(path, mode, mtime), &what);

	T_EXPECT(!ret || what.msg[0], "'%s': %d with no reason", path, ret);
	return ret;
}

static int exists(const char *path)
{
	struct stat st;

	return !fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISDIR(st.st_mode);
}

static void session(struct pxfer_rfiles *r, const char *dest)
{
	int ret = pxfer_rfiles_init(r, rootfd, dest, strlen(dest), 4, 0, 07777);

	if (ret) {
		fprintf(stderr, "pxfer_rfiles_init: %s\n", strerror(-ret));
		exit(1);
	}
}

static void test_repeats(void)
{
	struct pxfer_rfiles r;
	struct stat st;
	int ret = 0;

	session(&r, "rep");
	for (int i = 0; i < 5000 && !ret; i++)
		ret = mkdir_msg(&r, "a", 0700 + i % 8, 1000 + i);
	T_EXPECT(!ret, "a repeated directory: %d", ret);
	T_EXPECT(!mkdir_msg(&r, "a", 0750, 123456789), "the last record");
	T_EXPECT(!mkdir_msg(&r, "a/b", 0705, 42), "a/b");
	T_EXPECT(!mkdir_msg(&r, "a/b/c", 0500, 43), "a/b/c");
	/* a repeated record goes through the same mask as the first */
	T_EXPECT(!mkdir_msg(&r, "a/b", 06755, 44), "a/b again, set-id");
	T_EXPECT(r.dirs.n == 3, "%zu directories kept, want 3", r.dirs.n);
	T_EXPECT(r.dirs.bytes == 2 + 4 + 6, "%zu bytes of paths, want 12",
		 r.dirs.bytes);
	/* deepest first: a read-only a/b/c does not stop a/b, nor a */
	pxfer_rfiles_apply_dirs(&r);
	T_EXPECT(!fstatat(rootfd, "rep/a", &st, 0) &&
		 (st.st_mode & 07777) == 0750 && st.st_mtime == 123456789,
		 "rep/a: mode %o mtime %ld", st.st_mode & 07777,
		 (long)st.st_mtime);
	T_EXPECT(!fstatat(rootfd, "rep/a/b", &st, 0) &&
		 (st.st_mode & 07777) == 0755 && st.st_mtime == 44,
		 "rep/a/b: mode %o mtime %ld", st.st_mode & 07777,
		 (long)st.st_mtime);
	T_EXPECT(!fstatat(rootfd, "rep/a/b/c", &st, 0) &&
		 (st.st_mode & 07777) == 0500 && st.st_mtime == 43,
		 "rep/a/b/c: mode %o mtime %ld", st.st_mode & 07777,
		 (long)st.st_mtime);
	pxfer_rfiles_release(&r);
}

static void test_limits(void)
{
	struct pxfer_rfiles r;
	char path[64];
	int ret;

	/* by count */
	session(&r, "count");
	r.dirs.max = 10;
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "d%d", i);
		T_EXPECT(!mkdir_msg(&r, path, 0755, 1), "%s", path);
	}
	ret = mkdir_msg(&r, "one-too-many", 0755, 1);
	T_EXPECT(ret == -ENOBUFS, "an 11th directory of 10: %d", ret);
	T_EXPECT(!exists("count/one-too-many"), "a refused directory was made");
	T_EXPECT(!mkdir_msg(&r, "d3", 0700, 2), "a directory kept, again");
	T_EXPECT(r.dirs.n == 10, "%zu directories kept, want 10", r.dirs.n);
	pxfer_rfiles_release(&r);

	/* by bytes of paths: 30-byte paths, 100 bytes */
	session(&r, "bytes");
	r.dirs.bytes_max = 100;
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%029d", i);
		T_EXPECT(!mkdir_msg(&r, path, 0755, 1), "%s", path);
	}
	snprintf(path, sizeof(path), "%029d", 3);
	ret = mkdir_msg(&r, path, 0755, 1);
	T_EXPECT(ret == -ENOBUFS, "a 4th path of 30 bytes in 100: %d", ret);
	T_EXPECT(!mkdir_msg(&r, "short", 0755, 1), "a path that still fits");
	T_EXPECT(r.dirs.bytes <= 100, "%zu bytes of paths", r.dirs.bytes);
	pxfer_rfiles_release(&r);
}

#define MANY	3000

static void test_many(void)
{
	struct pxfer_rfiles r;
	char path[64];
	int fails = 0;

	session(&r, "many");
	for (int i = 0; i < MANY; i++) {
		snprintf(path, sizeof(path), "m%d", i);
		if (mkdir_msg(&r, path, 0755, 1) && fails++ < 5)
			T_EXPECT(0, "%s", path);
	}
	/* again, backwards: each one is found, none added */
	for (int i = MANY - 1; i >= 0; i--) {
		snprintf(path, sizeof(path), "m%d", i);
		if (mkdir_msg(&r, path, 0700, 2) && fails++ < 5)
			T_EXPECT(0, "%s again", path);
	}
	T_EXPECT(r.dirs.n == MANY, "%zu directories kept, want %d", r.dirs.n,
		 MANY);
	T_EXPECT(r.dirs.index_cap >= 2 * r.dirs.n, "index of %zu for %zu",
		 r.dirs.index_cap, r.dirs.n);
	printf("many: %zu directories, an index of %zu\n", r.dirs.n,
	       r.dirs.index_cap);
	pxfer_rfiles_release(&r);
}

int main(void)
{
	if (sodium_init() < 0) {
		fprintf(stderr, "cannot initialise libsodium\n");
		return 1;
	}
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	rootfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		perror(tmp);
		return 1;
	}
	test_repeats();
	test_limits();
	test_many();
	close(rootfd);
	t_rm_rf_at(AT_FDCWD, tmp);
	return t_result();
}
