/* SPDX-License-Identifier: MIT */
/*
 * The per-chunk checksum: XXH3_64bits from libxxhash, through the
 * library's x86 dispatcher where it has one (AVX2/AVX-512 when the CPU has
 * them; the plain entry point is built for SSE2 only).
 */
#ifndef PXFER_HASH_H
#define PXFER_HASH_H

#include <stddef.h>
#include <stdint.h>

/* pxfer_hash - XXH3_64bits of @len bytes at @buf */
uint64_t pxfer_hash(const void *buf, size_t len);

#endif
