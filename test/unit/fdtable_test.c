/* SPDX-License-Identifier: MIT */
/*
 * fdtable_test: pxfer_fd_table_reserve (src/session.c) leaves the process's
 * descriptor table large enough for the descriptors asked for (FDSize in
 * /proc/self/status), is cut to the open-file limit when asked for more,
 * and leaves no descriptor open behind it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "core/limits.h"
#include "test.h"

/* the table's size, or -1 */
static long fd_table_size(void)
{
	char line[256];
	long n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "FDSize: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory stream's own */
}

int main(void)
{
	struct rlimit rl;
	long before = fd_table_size();
	int fds = open_fds(), ret;

	if (before < 0 || fds < 0) {
		fprintf(stderr, "no /proc/self: skipped\n");
		return T_SKIP;
	}
	T_EXPECT(pxfer_fd_table_reserve(PXFER_FD_RESERVE) == 0, "reserve");
	T_EXPECT(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
	if (rl.rlim_cur >= PXFER_FD_RESERVE)
		T_EXPECT(fd_table_size() >= PXFER_FD_RESERVE,
			 "FDSize %ld after reserving %d (was %ld)",
			 fd_table_size(), PXFER_FD_RESERVE, before);
	T_EXPECT(open_fds() == fds, "%d descriptors open, %d before",
		 open_fds(), fds);

	/* never beyond the limit: more than it allows is cut to it */
	rl.rlim_cur = rl.rlim_max = 600;
	T_EXPECT(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit");
	ret = pxfer_fd_table_reserve(100000);
	T_EXPECT(ret == 0, "reserve beyond the limit: %d", ret);
	T_EXPECT(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur == 600,
		 "the limit is %lu", (unsigned long)rl.rlim_cur);
	T_EXPECT(open_fds() == fds, "%d descriptors open, %d before",
		 open_fds(), fds);
	T_EXPECT(pxfer_fd_table_reserve(1) == -EINVAL, "reserve 1");
	return t_result();
}
