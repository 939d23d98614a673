// SPDX-License-Identifier: MIT
/*
 * warm_mem - fault in MiB mebibytes of anonymous memory, one write per
 * page, and give them back.
 *
 *	warm_mem MIB
 *
 * In a virtual machine whose balloon device reports free pages to the
 * host (virtio-balloon free page reporting), memory the guest freed is
 * given back to the host a few seconds later, and the next write to it
 * faults in the host as well: a copy into the page cache or tmpfs that
 * lands on such memory runs several times slower, all of it in system
 * time (dd of 2 GiB into tmpfs: 0.63 s, then 5.8 s after the previous
 * copy was deleted). The benchmark runs this just before each run, so
 * that the pages the run writes into are backed, whichever peer it is.
 * Prints how long the faulting took.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes;
	struct timespec t0, t1;
	unsigned long mib;
	char *end, *m;

	if (argc != 2) {
		fprintf(stderr, "usage: warm_mem MIB\n");
		return 2;
	}
	errno = 0;
	mib = strtoul(argv[1], &end, 10);
	if (errno || *end || !mib || mib > (1ul << 20)) {
		fprintf(stderr, "warm_mem: '%s' is not a size in MiB (1 to 1048576)\n",
			argv[1]);
		return 2;
	}
	bytes = (size_t)mib << 20;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		fprintf(stderr, "warm_mem: cannot map %lu MiB: %s\n", mib,
			strerror(errno));
		return 1;
	}
	for (size_t off = 0; off < bytes; off += page)
		m[off] = 1;
	munmap(m, bytes);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.3f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
