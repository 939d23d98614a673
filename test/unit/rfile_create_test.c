/* SPDX-License-Identifier: MIT */
/*
 * rfile_create_test: the short ways a receiving session creates files
 * (src/recv/rfile.c), and that they keep the rules of the long one.
 *
 *  - in a directory the session made, an empty file is named at once,
 *    with its mode and time; one the sender gave up on is removed again,
 *    one left by a session that ended is kept (it is complete);
 *  - a name that appeared there meanwhile is not clobbered by the short
 *    way: the file is made as any other, and replaces it when complete;
 *  - in a directory that was there before, a file of the same size and
 *    time is found the same (the check the short way leaves out);
 *  - a mode the creation mask would not keep (umask 077, --perms) is
 *    applied afterwards, for empty and small files alike;
 *  - small files made unnamed get their mode from their creation when
 *    the mask keeps it.
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

static char tmp[] = "/tmp/pxfer-rcreate-XXXXXX";
static int rootfd = -1;

#define MTIME	1500000000

static struct pxfer_file *msg(uint8_t type, const char *path, uint32_t mode,
			      uint64_t size, uint8_t flags)
{
	static struct pxfer_file f;

	memset(&f, 0, sizeof(f));
	f.type = type;
	f.mode = mode;
	f.size = size;
	f.flags = flags;
	f.mtime_sec = MTIME;
	f.mtime_nsec = 123456789;
	f.path_len = strlen(path);
	memcpy(f.path, path, f.path_len + 1);
	return &f;
}

static void session(struct pxfer_rfiles *r, const char *dest)
{
	int ret = pxfer_rfiles_init(r, rootfd, dest, strlen(dest), 16, 0, 07777);

	if (ret) {
		fprintf(stderr, "pxfer_rfiles_init: %s\n", strerror(-ret));
		exit(1);
	}
	pxfer_rfiles_probe(r);
}

static int mkdir_msg(struct pxfer_rfiles *r, const char *path)
{
	struct pxfer_err what = { 0 };

	return pxfer_rfile_mkdir(r, msg(PXFER_FT_DIR, path, 0755, 0, 0), &what);
}

/* create file @id: 0 or -errno; *state what FILE_OK would say */
static int create(struct pxfer_rfiles *r, unsigned int id, const char *path,
		  uint32_t mode, uint64_t size, int *state)
{
	struct pxfer_file_ok ok;
	struct pxfer_file *f = msg(PXFER_FT_REG, path, mode, size,
				   PXFER_FILE_SKIP | PXFER_FILE_RESUME);
	struct pxfer_err what = { 0 };
	int ret;

	f->id = id;
	ret = pxfer_rfile_create(r, f, &what, &ok);
	*state = ok.state;
	return ret;
}

/* the mode of @path below the test's top, or -1 if it is not a file */
static int file_mode(const char *path, struct stat *st)
{
	if (fstatat(rootfd, path, st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISREG(st->st_mode))
		return -1;
	return st->st_mode & 07777;
}

static void test_empty(void)
{
	struct pxfer_rfiles r;
	struct pxfer_rfile *rf;
	struct stat st;
	int state;

	umask(022);
	session(&r, "e");
	T_EXPECT(r.create_bits == 0755, "the creation mask keeps %03o",
		 r.create_bits);
	T_EXPECT(mkdir_msg(&r, "d") == 0, "mkdir d");

	/* named when it comes, before its FILE_END */
	T_EXPECT(create(&r, 0, "d/e0640", 0640, 0, &state) == 0, "create");
	rf = pxfer_rfile_get(&r, 0);
	T_EXPECT(rf->named && rf->finished && state == PXFER_HAVE_NONE,
		 "an empty file in a new directory: named %d", rf->named);
	T_EXPECT(file_mode("e/d/e0640", &st) == 0640 && st.st_size == 0,
		 "e/d/e0640: mode %o", st.st_mode & 07777);
	T_EXPECT(st.st_mtim.tv_sec == MTIME && st.st_mtim.tv_nsec == 123456789,
		 "its time: %lld.%09ld", (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	pxfer_rfile_drop(&r, 0, PXFER_DROP_DONE);
	T_EXPECT(file_mode("e/d/e0640", &st) == 0640, "kept when done");

	/* the sender gave up on it: it goes */
	T_EXPECT(create(&r, 1, "d/gone", 0644, 0, &state) == 0, "create gone");
	T_EXPECT(pxfer_rfile_get(&r, 1)->named, "gone named");
	pxfer_rfile_drop(&r, 1, PXFER_DROP_DISCARD);
	T_EXPECT(file_mode("e/d/gone", &st) < 0, "a discarded empty file stays");

	/* a session that ends keeps it: it is complete */
	T_EXPECT(create(&r, 2, "d/kept", 0600, 0, &state) == 0, "create kept");
	pxfer_rfile_drop(&r, 2, PXFER_DROP_KEEP);
	T_EXPECT(file_mode("e/d/kept", &st) == 0600, "kept: %o",
		 st.st_mode & 07777);

	/* a name that appeared meanwhile: made the long way, then replaced */
	T_EXPECT(mknodat(rootfd, "e/d/other", S_IFREG | 0600, 0) == 0,
		 "someone else's file");
	T_EXPECT(create(&r, 3, "d/other", 0644, 0, &state) == 0, "create other");
	rf = pxfer_rfile_get(&r, 3);
	T_EXPECT(!rf->named && rf->fd >= 0, "not named over another's file");
	T_EXPECT(file_mode("e/d/other", &st) == 0600, "untouched until done");
	pxfer_rfile_finish(&r, 3, 0);
	T_EXPECT(!rf->finish_err, "finish other: %s", strerror(rf->finish_err));
	T_EXPECT(file_mode("e/d/other", &st) == 0644 &&
		 st.st_mtim.tv_sec == MTIME, "replaced when complete: %o",
		 st.st_mode & 07777);
	pxfer_rfile_drop(&r, 3, PXFER_DROP_DONE);

	/* a small file: unnamed, its mode from its creation */
	T_EXPECT(create(&r, 4, "d/small", 0640, 10, &state) == 0, "create small");
	rf = pxfer_rfile_get(&r, 4);
	T_EXPECT(!rf->named && rf->mode_set && !rf->tmp, "small: unnamed, mode set");
	T_EXPECT(!fstat(rf->fd, &st) && (st.st_mode & 07777) == 0640,
		 "small: created %o", st.st_mode & 07777);
	T_EXPECT(pwrite(rf->fd, "0123456789", 10, 0) == 10, "write small");
	pxfer_rfile_finish(&r, 4, 10);
	T_EXPECT(!rf->finish_err && file_mode("e/d/small", &st) == 0640 &&
		 st.st_size == 10, "small named: %o", st.st_mode & 07777);
	pxfer_rfile_drop(&r, 4, PXFER_DROP_DONE);
	pxfer_rfiles_release(&r);

	/* a directory that was there: the same file is found the same */
	session(&r, "e");
	T_EXPECT(mkdir_msg(&r, "d") == 0, "mkdir d again");
	T_EXPECT(create(&r, 0, "d/e0640", 0640, 0, &state) == 0 &&
		 state == PXFER_HAVE_SAME, "the same empty file: state %d",
		 state);
	T_EXPECT(create(&r, 1, "d/new", 0644, 0, &state) == 0 &&
		 state == PXFER_HAVE_NONE && !pxfer_rfile_get(&r, 1)->named,
		 "an old directory: the long way (named %d)",
		 pxfer_rfile_get(&r, 1)->named);
	pxfer_rfile_finish(&r, 1, 0);
	T_EXPECT(file_mode("e/d/new", &st) == 0644, "new: %o",
		 st.st_mode & 07777);
	pxfer_rfile_drop(&r, 1, PXFER_DROP_DONE);
	pxfer_rfiles_release(&r);
}

/* umask 077 with every bit let through (recv --perms): set afterwards */
static void test_mask(void)
{
	struct pxfer_rfiles r;
	struct pxfer_rfile *rf;
	struct stat st;
	int state;

	umask(077);
	session(&r, "m");
	umask(022);
	T_EXPECT(r.create_bits == 0700, "umask 077 keeps %03o", r.create_bits);
	T_EXPECT(mkdir_msg(&r, "d") == 0, "mkdir d");
	T_EXPECT(create(&r, 0, "d/empty", 0644, 0, &state) == 0, "create empty");
	rf = pxfer_rfile_get(&r, 0);
	T_EXPECT(!rf->named, "a mode the mask would cut: not named at once");
	pxfer_rfile_finish(&r, 0, 0);
	T_EXPECT(!rf->finish_err && file_mode("m/d/empty", &st) == 0644,
		 "empty: %o", st.st_mode & 07777);
	pxfer_rfile_drop(&r, 0, PXFER_DROP_DONE);

	T_EXPECT(create(&r, 1, "d/small", 0755, 3, &state) == 0, "create small");
	rf = pxfer_rfile_get(&r, 1);
	T_EXPECT(pwrite(rf->fd, "abc", 3, 0) == 3, "write small");
	pxfer_rfile_finish(&r, 1, 3);
	T_EXPECT(!rf->finish_err && file_mode("m/d/small", &st) == 0755,
		 "small: %o", st.st_mode & 07777);
	pxfer_rfile_drop(&r, 1, PXFER_DROP_DONE);

	T_EXPECT(create(&r, 2, "d/tight", 0600, 0, &state) == 0 &&
		 pxfer_rfile_get(&r, 2)->named, "a mode the mask keeps: named");
	T_EXPECT(file_mode("m/d/tight", &st) == 0600, "tight: %o",
		 st.st_mode & 07777);
	pxfer_rfile_drop(&r, 2, PXFER_DROP_DONE);
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
	test_empty();
	test_mask();
	close(rootfd);
	t_rm_rf_at(AT_FDCWD, tmp);
	return t_result();
}
