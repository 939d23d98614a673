// SPDX-License-Identifier: MIT
/*
 * ring_test: rings and the pools they can be carved from (src/ring.c).
 *  - a ring lays out its slots page-aligned, header room before each
 *    payload, and refuses sizes that are not page multiples
 *  - a pool is faulted in: once pxfer_pool_wait returns, its pages are
 *    resident (mincore) without anyone having touched them
 *  - pxfer_pool_take hands out consecutive pieces while they fit and NULL
 *    after; pxfer_pool_reset makes all of it free again
 *  - a ring in pool memory is not unmapped when it is released: the pool
 *    memory stays usable, and the pool still unmaps it at the end
 *  - slices of a pool take from their own part of it, independently, and
 *    releasing a slice leaves the pool's memory alone
 *  - a pool released while it is still being faulted in stops and is freed
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/ring.h"
#include "test.h"

static size_t page;

/* how many pages of [p, p + len) are resident */
static size_t resident(void *p, size_t len)
{
	size_t n = (len + page - 1) / page, got = 0;
	unsigned char vec[1024];

	if (n > sizeof(vec) || mincore(p, len, vec))
		return (size_t)-1;
	for (size_t i = 0; i < n; i++)
		got += vec[i] & 1;
	return got;
}

static void test_layout(void)
{
	struct pxfer_ring r;

	T_EXPECT(pxfer_ring_init(&r, 4, 2 * page, page) == 0, "init");
	T_EXPECT(r.stride == 3 * page && r.bytes == 12 * page,
		 "stride %zu bytes %zu", r.stride, r.bytes);
	T_EXPECT(pxfer_ring_hdr(&r, 2) == r.base + 6 * page, "header of slot 2");
	T_EXPECT(pxfer_ring_slot(&r, 2) == r.base + 7 * page, "payload of slot 2");
	T_EXPECT(((uintptr_t)pxfer_ring_slot(&r, 3) % page) == 0, "aligned");
	T_EXPECT(!r.borrowed, "own memory");
	pxfer_ring_release(&r);
	T_EXPECT(r.base == NULL, "released");
	T_EXPECT(pxfer_ring_init(&r, 4, page + 1, 0) == -EINVAL, "odd slot size");
	T_EXPECT(pxfer_ring_init(&r, 0, page, 0) == -EINVAL, "no slots");
	T_EXPECT(pxfer_ring_init(&r, 4, page, 100) == -EINVAL, "odd header room");
}

static void test_slices(struct pxfer_pool *p)
{
	struct pxfer_pool s0, s1, bad;

	pxfer_pool_slice(&s0, p, 0, 32 * page);
	pxfer_pool_slice(&s1, p, 32 * page, 32 * page);
	pxfer_pool_slice(&bad, p, 48 * page, 32 * page);
	T_EXPECT(bad.base == NULL && pxfer_pool_take(&bad, page) == NULL,
		 "a slice past the pool's end is empty");
	pxfer_pool_wait(&s1);		/* ready when the pool is */
	T_EXPECT(pxfer_pool_take(&s1, 16 * page) == p->base + 32 * page,
		 "second slice starts at its offset");
	T_EXPECT(pxfer_pool_take(&s0, 32 * page) == p->base, "first slice whole");
	T_EXPECT(pxfer_pool_take(&s0, page) == NULL, "first slice full");
	T_EXPECT(pxfer_pool_take(&s1, 16 * page) == p->base + 48 * page,
		 "second slice: the rest of it");
	T_EXPECT(pxfer_pool_take(&s1, page) == NULL, "second slice full");
	pxfer_pool_release(&s1);
	T_EXPECT(p->base && resident(p->base, p->bytes) == 64,
		 "releasing a slice keeps the pool");
}

static void test_pool(void)
{
	struct pxfer_pool p;
	struct pxfer_ring a, b;
	size_t bytes = 64 * page;
	uint8_t *x, *y;

	T_EXPECT(pxfer_pool_init(&p, bytes - 10) == 0, "pool init");
	T_EXPECT(p.bytes == bytes, "rounded up to pages: %zu", p.bytes);
	pxfer_pool_wait(&p);
	T_EXPECT(resident(p.base, p.bytes) == 64,
		 "faulted in: %zu of 64 pages", resident(p.base, p.bytes));

	x = pxfer_pool_take(&p, 24 * page);
	y = pxfer_pool_take(&p, 24 * page);
	T_EXPECT(x == p.base && y == p.base + 24 * page, "consecutive pieces");
	T_EXPECT(pxfer_pool_take(&p, 24 * page) == NULL, "no room left");
	T_EXPECT(pxfer_pool_take(&p, 16 * page) != NULL, "what is left fits");
	T_EXPECT(pxfer_pool_take(&p, page) == NULL, "empty");
	T_EXPECT(pxfer_pool_take(NULL, page) == NULL, "no pool");

	T_EXPECT(pxfer_ring_init_at(&a, x, 3, 4 * page, 4 * page) == 0, "ring a");
	T_EXPECT(a.base == x && a.borrowed && a.bytes == 24 * page, "ring a in x");
	T_EXPECT(pxfer_ring_init_at(&b, y, 0, page, 0) == -EINVAL, "bad ring b");
	memset(pxfer_ring_slot(&a, 2), 0xa5, a.slot_size);
	pxfer_ring_release(&a);
	/* still mapped: a released ring leaves pool memory to the pool */
	T_EXPECT(resident(x, 24 * page) == 24, "pool memory kept");
	T_EXPECT(x[24 * page - 1] == 0xa5, "contents kept");

	pxfer_pool_reset(&p);
	T_EXPECT(pxfer_pool_take(&p, bytes) == p.base, "all free after reset");
	pxfer_pool_reset(&p);
	test_slices(&p);
	pxfer_pool_release(&p);
	T_EXPECT(p.base == NULL, "pool released");
	T_EXPECT(mincore(x, page, (unsigned char[1]){ 0 }) == -1 && errno == ENOMEM,
		 "pool unmapped");
	pxfer_pool_release(&p);		/* twice is harmless */
	pxfer_pool_wait(NULL);

	/* released at once: the faulting-in thread stops and is joined */
	T_EXPECT(pxfer_pool_init(&p, 256u << 20) == 0, "large pool");
	pxfer_pool_release(&p);
	T_EXPECT(p.base == NULL, "large pool released");
}

int main(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	test_layout();
	test_pool();
	return t_result();
}
