// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/limits.h"

unsigned long pxfer_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

int pxfer_fd_table_reserve(unsigned long n)
{
	unsigned long limit = pxfer_raise_nofile();
	int fd, top, ret = 0;

	if (n > limit)
		n = limit;
	if (n < 2 || n > INT_MAX)
		return -EINVAL;
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the table grows to hold the highest descriptor, and stays so */
	top = fcntl(fd, F_DUPFD_CLOEXEC, (int)n - 1);
	if (top < 0)
		ret = -errno;
	else
		close(top);
	close(fd);
	return ret;
}

int pxfer_memlock_capable(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	unsigned long long caps = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return !!(caps & (1ull << 14));	/* CAP_IPC_LOCK */
}

int pxfer_memlock_check(uint64_t need, uint64_t *limit)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    need <= rl.rlim_cur || pxfer_memlock_capable())
		return 0;
	*limit = rl.rlim_cur;
	return -ENOMEM;
}

uint64_t pxfer_memlock_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	return rl.rlim_cur;
}
