/* SPDX-License-Identifier: MIT */
/*
 * Bounded cursors for the codec (core/proto.c): private to it. Every
 * field goes through them, big-endian and fixed-width, so that no length
 * from a peer can take a read or a write outside its buffer.
 */
#ifndef PXFER_CORE_WIRE_H
#define PXFER_CORE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/bytes.h"

/*
 * A cursor over a buffer. The first access that does not fit sets err and
 * every later access becomes a no-op, so a codec function can run straight
 * through its fields and test err once at the end.
 */
struct wcur {
	uint8_t *p;
	size_t left;
	int err;
};

struct rcur {
	const uint8_t *p;
	size_t left;
	int err;
};

static inline uint8_t *wtake(struct wcur *w, size_t n)
{
	uint8_t *p = w->p;

	if (w->err || w->left < n) {
		w->err = 1;
		return NULL;
	}
	/* n may be 0 with p == NULL (an empty buffer): no arithmetic on it */
	if (n) {
		w->p += n;
		w->left -= n;
	}
	return p;
}

static inline const uint8_t *rtake(struct rcur *r, size_t n)
{
	const uint8_t *p = r->p;

	if (r->err || r->left < n) {
		r->err = 1;
		return NULL;
	}
	if (n) {
		r->p += n;
		r->left -= n;
	}
	return p;
}

static inline void put_be(struct wcur *w, uint64_t v, unsigned int n)
{
	uint8_t *p = wtake(w, n);

	if (p)
		pxfer_put_be(p, v, n);
}

static inline uint64_t get_be(struct rcur *r, unsigned int n)
{
	const uint8_t *p = rtake(r, n);

	return p ? pxfer_get_be(p, n) : 0;
}

static inline void put_u8(struct wcur *w, uint8_t v)
{
	put_be(w, v, 1);
}

static inline void put_u16(struct wcur *w, uint16_t v)
{
	put_be(w, v, 2);
}

static inline void put_u32(struct wcur *w, uint32_t v)
{
	put_be(w, v, 4);
}

static inline void put_u64(struct wcur *w, uint64_t v)
{
	put_be(w, v, 8);
}

static inline uint8_t get_u8(struct rcur *r)
{
	return (uint8_t)get_be(r, 1);
}

static inline uint16_t get_u16(struct rcur *r)
{
	return (uint16_t)get_be(r, 2);
}

static inline uint32_t get_u32(struct rcur *r)
{
	return (uint32_t)get_be(r, 4);
}

static inline uint64_t get_u64(struct rcur *r)
{
	return get_be(r, 8);
}

/*
 * Two's complement on the wire. The decode avoids converting an out-of-range
 * u64 to s64, which C leaves to the implementation.
 */
static inline void put_s64(struct wcur *w, int64_t v)
{
	put_u64(w, (uint64_t)v);
}

static inline int64_t get_s64(struct rcur *r)
{
	uint64_t v = get_u64(r);

	if (v <= INT64_MAX)
		return (int64_t)v;
	return -(int64_t)~v - 1;
}

static inline void put_bytes(struct wcur *w, const void *src, size_t n)
{
	uint8_t *p = wtake(w, n);

	if (p && n)
		memcpy(p, src, n);
}

static inline void get_bytes(struct rcur *r, void *dst, size_t n)
{
	const uint8_t *p = rtake(r, n);

	if (p && n)
		memcpy(dst, p, n);
}

static inline void put_str(struct wcur *w, const char *s, uint16_t len)
{
	put_u16(w, len);
	put_bytes(w, s, len);
}

/*
 * Read a string into @dst, which holds @max + 1 bytes. The length is checked
 * before the copy: that check is what keeps a peer inside our struct.
 */
static inline void get_str(struct rcur *r, char *dst, uint16_t *lenp, size_t max)
{
	uint16_t len = get_u16(r);

	if (len > max)
		r->err = 1;
	get_bytes(r, dst, r->err ? 0 : len);
	if (r->err)
		len = 0;
	dst[len] = '\0';
	*lenp = len;
}

#endif
