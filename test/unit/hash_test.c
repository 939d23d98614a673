/* SPDX-License-Identifier: MIT */
/*
 * hash_test: the chunk checksum (src/core/hash.c): pxfer_hash agrees
 * with libxxhash's XXH3_64bits (the value on the wire; older peers and
 * the hostile sender use the library directly) for lengths around every
 * code path of XXH3 (0..260, 4 KiB, 1 MiB + 7).
 */
#include <stdint.h>
#include <stdlib.h>
#include <xxhash.h>

#include "core/hash.h"
#include "test.h"

#define BIG ((1u << 20) + 7)

static uint8_t *data;

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

int main(void)
{
	data = malloc(BIG + 4096);
	if (!data)
		return 1;
	srandom(42);
	for (size_t i = 0; i < BIG + 4096; i++)
		data[i] = random();
	test_memory();
	free(data);
	return t_result();
}
