/* SPDX-License-Identifier: MIT */
/*
 * Big-endian integers of 1 to 8 bytes in unaligned buffers: byte shifts,
 * not casts, since the buffer has no alignment and the host any order.
 */
#ifndef PXFER_CORE_BYTES_H
#define PXFER_CORE_BYTES_H

#include <stdint.h>

static inline void pxfer_put_be(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static inline uint64_t pxfer_get_be(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

#endif
