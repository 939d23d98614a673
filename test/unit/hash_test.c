/* SPDX-License-Identifier: MIT */
/*
 * hash_test: the chunk checksum (src/hash.c).
 *
 *  - pxfer_hash agrees with libxxhash's XXH3_64bits (the value on the
 *    wire; older peers and the hostile sender use the library directly)
 *    for lengths around every code path of XXH3 (0..260, 4 KiB, 1 MiB + 7);
 *  - pxfer_hash_file gives the same value as hashing the bytes read, for
 *    ranges starting on and off a page boundary, and a file range of 0
 *    bytes;
 *  - a range that ends past the end of the file gives -ENODATA, whether
 *    the file is already short (seen by fstat) or the mapped pages are cut
 *    away before they are read (a test hook truncates the file: the SIGBUS
 *    becomes -ENODATA, and the thread hashes normally afterwards);
 *  - a file shrunk and regrown by another process while it is hashed
 *    gives 0 or -ENODATA, never a crash;
 *  - a SIGBUS that is not the hash's still kills the process (or goes to
 *    the handler that was there before, as a sanitizer's).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/hash.h"
#include "test.h"

#define BIG ((1u << 20) + 7)

static uint8_t *data;

static int tmpfile_with(size_t len)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int fd = t_tmpfile(dir);
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n <= 0) {
			perror("write");
			exit(1);
		}
		off += n;
	}
	return fd;
}

static void test_memory(void)
{
	static const size_t lens[] = { 4096, BIG };

	for (size_t len = 0; len <= 260; len++)
		T_EXPECT(pxfer_hash(data + 3, len) == XXH3_64bits(data + 3, len),
			 "length %zu", len);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		T_EXPECT(pxfer_hash(data, lens[i]) == XXH3_64bits(data, lens[i]),
			 "length %zu", lens[i]);
}

static void test_file(void)
{
	static const struct { uint64_t off; size_t len; } r[] = {
		{ 0, 1 }, { 0, 4096 }, { 0, BIG }, { 4096, 8192 },
		{ 1, 4095 }, { 4095, 2 }, { 12345, 777777 }, { BIG - 1, 1 },
	};
	int fd = tmpfile_with(BIG);
	uint64_t h;

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		h = 0;
		T_EXPECT(pxfer_hash_file(fd, r[i].off, r[i].len, &h) == 0 &&
			 h == XXH3_64bits(data + r[i].off, r[i].len),
			 "file range %llu+%zu", (unsigned long long)r[i].off,
			 r[i].len);
	}
	T_EXPECT(pxfer_hash_file(fd, BIG, 0, &h) == 0 &&
		 h == XXH3_64bits(NULL, 0), "empty range");
	T_EXPECT(pxfer_hash_file(fd, BIG - 1, 2, &h) == -ENODATA,
		 "range past the end");
	T_EXPECT(pxfer_hash_file(fd, 0, BIG + 4096, &h) == -ENODATA,
		 "range past the end, longer");
	close(fd);
}

/*
 * A file truncated while it is hashed: a child shrinks and regrows it in a
 * loop while the parent hashes the whole length. Each result must be 0 or
 * -ENODATA (from fstat, or from a SIGBUS in the mapped pages), never a
 * crash.
 */
static void test_shrinking(void)
{
	int fd = tmpfile_with(BIG);
	unsigned int ok = 0, gone = 0, bad = 0;
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		for (;;) {
			if (ftruncate(fd, 4096) || ftruncate(fd, BIG))
				_exit(1);
		}
	}
	for (int i = 0; i < 3000; i++) {
		uint64_t h;
		int ret = pxfer_hash_file(fd, 0, BIG, &h);

		if (ret == -ENODATA)
			gone++;
		else if (ret == 0)
			ok++;	/* the bytes may be zeros by now: no check */
		else
			bad++;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	T_EXPECT(!bad && ok + gone == 3000,
		 "shrinking file: %u hashed, %u gone, %u other", ok, gone, bad);
	printf("shrinking file: %u hashed, %u -ENODATA, %lu of them by SIGBUS\n",
	       ok, gone, pxfer_hash_faults());
	close(fd);
}

static void cut_to_a_page(int fd)
{
	if (ftruncate(fd, 4096))
		perror("ftruncate");
}

/* truncated after it was mapped, before it is read: always a SIGBUS */
static void test_truncated_under_map(void)
{
	int fd = tmpfile_with(BIG);
	unsigned long before = pxfer_hash_faults();
	uint64_t h;

	pxfer_hash_file_hook = cut_to_a_page;
	T_EXPECT(pxfer_hash_file(fd, 0, BIG, &h) == -ENODATA,
		 "truncated under the mapping");
	pxfer_hash_file_hook = NULL;
	T_EXPECT(pxfer_hash_faults() == before + 1, "one SIGBUS caught, not %lu",
		 pxfer_hash_faults() - before);
	/* the guard is gone again, and the thread hashes normally */
	T_EXPECT(pxfer_hash_file(fd, 0, 4096, &h) == 0 &&
		 h == XXH3_64bits(data, 4096), "hash after a caught SIGBUS");
	close(fd);
}

/* a SIGBUS outside pxfer_hash_file is not swallowed */
static void test_foreign_sigbus(void)
{
	int fd = tmpfile_with(4096), status = 0;
	uint64_t h;
	pid_t pid;

	/* installs the handler */
	T_EXPECT(pxfer_hash_file(fd, 0, 4096, &h) == 0, "first hash");
	pid = fork();
	if (pid == 0) {
		volatile uint8_t *p = mmap(NULL, 8192, PROT_READ, MAP_SHARED,
					   fd, 0);
		int nul;

		if (p == MAP_FAILED)
			_exit(2);
		/*
		 * a sanitizer's handler reports the fault as an error: this
		 * one is wanted, and must not read as a bug in the log
		 */
		nul = open("/dev/null", O_WRONLY);
		if (nul < 0 || dup2(nul, STDERR_FILENO) < 0)
			_exit(4);
		(void)p[4096];	/* past the end of the file: SIGBUS */
		_exit(3);
	}
	waitpid(pid, &status, 0);
	/*
	 * killed by SIGBUS, or by a sanitizer's handler that came before:
	 * ASan and UBSan exit 1, TSan 66 (their exitcode option)
	 */
	T_EXPECT((WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) ||
		 (WIFEXITED(status) &&
		  (WEXITSTATUS(status) == 1 || WEXITSTATUS(status) == 66)),
		 "a foreign SIGBUS still kills (status %#x)", status);
	close(fd);
}

int main(void)
{
	data = malloc(BIG + 4096);
	if (!data)
		return 1;
	srandom(42);
	for (size_t i = 0; i < BIG + 4096; i++)
		data[i] = random();
	test_memory();
	test_file();
	test_truncated_under_map();
	test_shrinking();
	test_foreign_sigbus();
	free(data);
	return t_result();
}
