// SPDX-License-Identifier: MIT
/*
 * Checksums. pxfer_hash_file maps the range it hashes; if the file is
 * truncated under the mapping, touching a page past the new end raises
 * SIGBUS. A process-wide handler turns that into -ENODATA for the thread
 * that is hashing, and leaves every other SIGBUS fatal as before.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>	/* XXH3_64bits becomes the dispatcher */
#else
#include <xxhash.h>
#endif

#include "core/hash.h"

uint64_t pxfer_hash(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

static __thread sigjmp_buf *volatile bus_guard;
static struct sigaction bus_prev;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;
static int bus_err;
void (*pxfer_hash_file_hook)(int fd);
static atomic_ulong bus_caught;

unsigned long pxfer_hash_faults(void)
{
	return atomic_load(&bus_caught);
}

static void bus_handler(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *g = bus_guard;

	if (g) {
		bus_guard = NULL;
		siglongjmp(*g, 1);
	}
	/* not ours: what would have happened without us */
	if (bus_prev.sa_flags & SA_SIGINFO) {
		bus_prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (bus_prev.sa_handler != SIG_DFL && bus_prev.sa_handler != SIG_IGN) {
		bus_prev.sa_handler(sig);
		return;
	}
	signal(SIGBUS, SIG_DFL);	/* the faulting access runs again and dies */
}

static void bus_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bus_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &bus_prev))
		bus_err = -errno;
}

int pxfer_file_apply(int fd, uint64_t off, size_t len,
		     int (*fn)(void *arg, const void *p, size_t len), void *arg)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t base = off & ~(uint64_t)(page - 1);
	size_t maplen = len + (off - base);
	volatile int ret = 0;
	sigjmp_buf env;
	struct stat st;
	uint8_t *map;

	if (!len)
		return fn(arg, NULL, 0);
	pthread_once(&bus_once, bus_install);
	if (bus_err)
		return bus_err;
	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size < off + len)
		return -ENODATA;
	map = mmap(NULL, maplen, PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
		   (off_t)base);
	if (map == MAP_FAILED)
		return -errno;
	if (sigsetjmp(env, 1)) {
		atomic_fetch_add(&bus_caught, 1);
		munmap(map, maplen);
		return -ENODATA;
	}
	bus_guard = &env;
	if (pxfer_hash_file_hook)
		pxfer_hash_file_hook(fd);
	ret = fn(arg, map + (off - base), len);
	bus_guard = NULL;
	munmap(map, maplen);
	return ret;
}

static int hash_fn(void *arg, const void *p, size_t len)
{
	*(uint64_t *)arg = pxfer_hash(p, len);
	return 0;
}

int pxfer_hash_file(int fd, uint64_t off, size_t len, uint64_t *out)
{
	uint64_t h;
	int ret = pxfer_file_apply(fd, off, len, hash_fn, &h);

	if (!ret)
		*out = h;
	return ret;
}
