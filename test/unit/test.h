/* SPDX-License-Identifier: MIT */
/*
 * Tiny helpers for the unit test programs: each test is one program that
 * exits 0 (pass), 1 (fail) or 77 (skipped).
 */
#ifndef PXFER_TEST_H
#define PXFER_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#define T_SKIP 77

static int t_failures;

/* Record a failed expectation; the test goes on so all failures show. */
#define T_EXPECT(cond, ...) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: expected %s: ", __FILE__,	\
			__LINE__, #cond);				\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		t_failures++;						\
	}								\
} while (0)

static inline int t_result(void)
{
	if (t_failures)
		fprintf(stderr, "%d expectation(s) failed\n", t_failures);
	return t_failures ? 1 : 0;
}

/*
 * An anonymous file in dir for a test's data: O_TMPFILE where the file
 * system has it, else a named file unlinked at once. Exits 1 on failure.
 */
static inline int t_tmpfile(const char *dir)
{
	char path[4096];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s/pxfer-test-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "temporary file in %s: %m\n", dir);
		exit(1);
	}
	unlink(path);
	return fd;
}

/*
 * Remove name under dfd and everything below it, making unreadable
 * directories readable first; never follows a link. Best effort: a test's
 * scratch tree, not data.
 */
static inline void t_rm_rf_at(int dfd, const char *name)
{
	struct dirent *d;
	DIR *dp;
	int fd;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return;
	fchmodat(dfd, name, 0700, 0);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return;
	dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return;
	}
	while ((d = readdir(dp)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
			t_rm_rf_at(dirfd(dp), d->d_name);
	closedir(dp);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

#endif
