/* SPDX-License-Identifier: MIT */
/*
 * doneq_test: the receiver's queue of complete files to report
 * (src/recv/doneq.c).
 *
 *  - ids come out in the order they went in, across the wrap of the ring;
 *  - a push says 1 when the queue was empty (wake the coordinator), else
 *    0, and -ENOSPC when full, changing nothing;
 *  - a pop from an empty queue finds nothing;
 *  - four threads pushing while one pops: every id comes out exactly
 *    once, each thread's in its order (run it under TSan too).
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "recv/doneq.h"
#include "test.h"

static void test_order(void)
{
	struct pxfer_doneq q = { 0 };
	uint32_t id;

	pxfer_doneq_release(&q);	/* zeroed: harmless */
	T_EXPECT(pxfer_doneq_init(&q, 3) == 0, "init");
	T_EXPECT(pxfer_doneq_pop(&q, &id) == 0, "pop from an empty queue");
	T_EXPECT(pxfer_doneq_push(&q, 5) == 1, "first push: wake");
	T_EXPECT(pxfer_doneq_push(&q, 6) == 0, "second push: no wake");
	T_EXPECT(pxfer_doneq_push(&q, 7) == 0, "third push");
	T_EXPECT(pxfer_doneq_push(&q, 8) == -ENOSPC, "push beyond cap");
	T_EXPECT(pxfer_doneq_pop(&q, &id) == 1 && id == 5, "pop 5: %u", id);
	T_EXPECT(pxfer_doneq_push(&q, 9) == 0, "push after a pop (wraps)");
	T_EXPECT(pxfer_doneq_pop(&q, &id) == 1 && id == 6, "pop 6: %u", id);
	T_EXPECT(pxfer_doneq_pop(&q, &id) == 1 && id == 7, "pop 7: %u", id);
	T_EXPECT(pxfer_doneq_pop(&q, &id) == 1 && id == 9, "pop 9: %u", id);
	T_EXPECT(pxfer_doneq_pop(&q, &id) == 0, "pop from an emptied queue");
	T_EXPECT(pxfer_doneq_push(&q, 10) == 1, "push to an emptied queue: wake");
	pxfer_doneq_release(&q);
	pxfer_doneq_release(&q);	/* twice: harmless */
}

#define NTH	4
#define PER_TH	20000

struct pusher {
	struct pxfer_doneq *q;
	unsigned int th;
};

static void *push_main(void *arg)
{
	struct pusher *p = arg;

	for (uint32_t k = 0; k < PER_TH; k++)
		while (pxfer_doneq_push(p->q, p->th * PER_TH + k) < 0)
			sched_yield();	/* full: the popper makes room */
	return NULL;
}

static void test_threads(void)
{
	struct pxfer_doneq q;
	struct pusher p[NTH];
	pthread_t t[NTH];
	uint32_t next[NTH] = { 0 }, id;
	unsigned int got = 0, bad = 0;

	T_EXPECT(pxfer_doneq_init(&q, 64) == 0, "init");
	for (unsigned int i = 0; i < NTH; i++) {
		p[i] = (struct pusher){ .q = &q, .th = i };
		pthread_create(&t[i], NULL, push_main, &p[i]);
	}
	while (got < NTH * PER_TH) {
		unsigned int th;

		if (!pxfer_doneq_pop(&q, &id)) {
			sched_yield();
			continue;
		}
		got++;
		th = id / PER_TH;
		/* each thread's ids in its order, none twice */
		if (th >= NTH || id % PER_TH != next[th]++)
			bad++;
	}
	for (unsigned int i = 0; i < NTH; i++)
		pthread_join(t[i], NULL);
	T_EXPECT(!bad, "%u ids out of order, twice or unknown", bad);
	T_EXPECT(pxfer_doneq_pop(&q, &id) == 0, "left in the queue");
	pxfer_doneq_release(&q);
}

int main(void)
{
	test_order();
	test_threads();
	return t_result();
}
