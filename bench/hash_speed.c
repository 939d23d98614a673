// SPDX-License-Identifier: MIT
/*
 * hash_speed - how fast the chunk checksum runs on this CPU.
 *
 *	hash_speed [KIB]
 *
 * Hashes a buffer of KIB KiB (default 256, so that it stays in cache)
 * over and over for about half a second with libxxhash's XXH3_64bits as
 * the library exports it, then with pxfer_hash (src/hash.c: the library's
 * x86 dispatcher where there is one), and prints GB/s (10^9 bytes) for
 * each. Used for the figures in docs/benchmarks.md, on the host and in the
 * RDMA test bed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "core/hash.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* GB/s of @fn over @len bytes at @buf, for about 0.5 s */
static double speed(uint64_t (*fn)(const void *, size_t), const uint8_t *buf,
		    size_t len, uint64_t *sink)
{
	double t0 = now(), t;
	uint64_t bytes = 0;

	do {
		for (int i = 0; i < 16; i++) {
			/* a different start each time: nothing to hoist */
			*sink += fn(buf + (i & 3) * 64, len);
			bytes += len;
		}
		t = now() - t0;
	} while (t < 0.5);
	return bytes / t / 1e9;
}

static uint64_t lib_hash(const void *p, size_t n)
{
	return XXH3_64bits(p, n);
}

int main(int argc, char **argv)
{
	size_t kib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	size_t len = kib << 10;
	uint64_t sink = 0;
	uint8_t *buf;

	if (!kib || argc > 2) {
		fprintf(stderr, "usage: hash_speed [KIB]\n");
		return 2;
	}
	buf = malloc(len + 256);
	if (!buf)
		return 1;
	for (size_t i = 0; i < len + 256; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	printf("XXH3_64bits (libxxhash as exported): %6.2f GB/s\n",
	       speed(lib_hash, buf, len, &sink));
	printf("pxfer_hash (dispatched):             %6.2f GB/s\n",
	       speed(pxfer_hash, buf, len, &sink));
	printf("(%zu KiB buffer; checksum of the sums %016llx)\n", kib,
	       (unsigned long long)sink);
	free(buf);
	return 0;
}
