// SPDX-License-Identifier: MIT
/* The per-chunk checksum (core/hash.h). */

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
