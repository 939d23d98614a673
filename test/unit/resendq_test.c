/* SPDX-License-Identifier: MIT */
/*
 * resendq_test: the sender's queue of chunks to send again
 * (src/send/resendq.c).
 *
 *  - a push beyond the capacity fails and changes nothing; a pop from
 *    an empty queue finds nothing;
 *  - the chunk queued last is taken first, with its source and slot;
 *  - each source counts its chunks queued and not yet copied out: popping
 *    does not release one, pxfer_resendq_copied does (a lost worker's
 *    ring is reused only at 0);
 *  - pxfer_resendq_waiting follows the count;
 *  - four threads pushing and four popping at once: every chunk is taken
 *    exactly once, and every source ends at 0 (run it under TSan too).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "send/resendq.h"
#include "test.h"

static void test_bounds(void)
{
	struct pxfer_resendq q;
	struct pxfer_resend_src a = { 0 }, b = { 0 };
	struct pxfer_resend r;

	T_EXPECT(pxfer_resendq_init(&q, 3) == 0, "init");
	T_EXPECT(pxfer_resendq_pop(&q, &r) == 0, "pop from an empty queue");
	T_EXPECT(!pxfer_resendq_waiting(&q), "waiting when empty");
	T_EXPECT(pxfer_resendq_push(&q, &a, 7) == 0, "push 1");
	T_EXPECT(pxfer_resendq_push(&q, &b, 8) == 0, "push 2");
	T_EXPECT(pxfer_resendq_push(&q, &a, 9) == 0, "push 3");
	T_EXPECT(pxfer_resendq_push(&q, &b, 10) == -ENOSPC, "push beyond cap");
	T_EXPECT(pxfer_resendq_waiting(&q) == 3, "%u waiting",
		 pxfer_resendq_waiting(&q));
	T_EXPECT(pxfer_resendq_held(&a) == 2 && pxfer_resendq_held(&b) == 1,
		 "held %u %u (a full queue counted the refused one?)",
		 pxfer_resendq_held(&a), pxfer_resendq_held(&b));

	/* last in, first out; held until copied */
	T_EXPECT(pxfer_resendq_pop(&q, &r) == 1 && r.from == &a && r.slot == 9,
		 "pop 1: slot %u", r.slot);
	T_EXPECT(pxfer_resendq_held(&a) == 2, "popping released a's chunk");
	pxfer_resendq_copied(&r);
	T_EXPECT(pxfer_resendq_held(&a) == 1, "a holds %u after a copy",
		 pxfer_resendq_held(&a));
	T_EXPECT(pxfer_resendq_pop(&q, &r) == 1 && r.from == &b && r.slot == 8,
		 "pop 2: slot %u", r.slot);
	pxfer_resendq_copied(&r);
	T_EXPECT(pxfer_resendq_held(&b) == 0, "b holds %u",
		 pxfer_resendq_held(&b));
	/* room again after a pop */
	T_EXPECT(pxfer_resendq_push(&q, &b, 11) == 0, "push after pop");
	T_EXPECT(pxfer_resendq_pop(&q, &r) == 1 && r.slot == 11, "pop 3");
	pxfer_resendq_copied(&r);
	T_EXPECT(pxfer_resendq_pop(&q, &r) == 1 && r.from == &a && r.slot == 7,
		 "pop 4: slot %u", r.slot);
	pxfer_resendq_copied(&r);
	T_EXPECT(pxfer_resendq_pop(&q, &r) == 0, "pop from an emptied queue");
	T_EXPECT(!pxfer_resendq_waiting(&q), "waiting when emptied");
	T_EXPECT(!pxfer_resendq_held(&a) && !pxfer_resendq_held(&b),
		 "held %u %u at the end", pxfer_resendq_held(&a),
		 pxfer_resendq_held(&b));
	pxfer_resendq_release(&q);
	pxfer_resendq_release(&q);	/* twice is harmless */
}

/* ---- threads ----------------------------------------------------------- */

#define NSRC	4
#define PER_SRC	20000
#define CAP	64

struct shared {
	struct pxfer_resendq q;
	struct pxfer_resend_src src[NSRC];
	atomic_uint taken[NSRC][PER_SRC];
	atomic_uint popped;
	atomic_int bad;
};

struct pusher {
	struct shared *sh;
	unsigned int i;
};

static void *push_main(void *arg)
{
	struct pusher *p = arg;

	for (unsigned int k = 0; k < PER_SRC; k++)
		while (pxfer_resendq_push(&p->sh->q, &p->sh->src[p->i], k))
			sched_yield();	/* full: the poppers make room */
	return NULL;
}

static void *pop_main(void *arg)
{
	struct shared *sh = arg;
	struct pxfer_resend r;

	while (atomic_load(&sh->popped) < NSRC * PER_SRC) {
		unsigned int i;

		if (!pxfer_resendq_waiting(&sh->q) ||
		    !pxfer_resendq_pop(&sh->q, &r)) {
			sched_yield();
			continue;
		}
		i = (unsigned int)(r.from - sh->src);
		if (i >= NSRC || r.slot >= PER_SRC ||
		    !pxfer_resendq_held(r.from) ||
		    atomic_fetch_add(&sh->taken[i][r.slot], 1))
			atomic_store(&sh->bad, 1);
		pxfer_resendq_copied(&r);
		atomic_fetch_add(&sh->popped, 1);
	}
	return NULL;
}

static void test_threads(void)
{
	static struct shared sh;
	struct pusher p[NSRC];
	pthread_t tp[NSRC], tc[NSRC];
	unsigned int missing = 0;

	T_EXPECT(pxfer_resendq_init(&sh.q, CAP) == 0, "init");
	for (unsigned int i = 0; i < NSRC; i++) {
		p[i] = (struct pusher){ .sh = &sh, .i = i };
		pthread_create(&tp[i], NULL, push_main, &p[i]);
		pthread_create(&tc[i], NULL, pop_main, &sh);
	}
	for (unsigned int i = 0; i < NSRC; i++) {
		pthread_join(tp[i], NULL);
		pthread_join(tc[i], NULL);
	}
	T_EXPECT(!atomic_load(&sh.bad), "a chunk popped twice, or unheld");
	for (unsigned int i = 0; i < NSRC; i++) {
		T_EXPECT(pxfer_resendq_held(&sh.src[i]) == 0,
			 "source %u holds %u", i, pxfer_resendq_held(&sh.src[i]));
		for (unsigned int k = 0; k < PER_SRC; k++)
			missing += atomic_load(&sh.taken[i][k]) != 1;
	}
	T_EXPECT(!missing, "%u chunks not taken exactly once", missing);
	T_EXPECT(pxfer_resendq_pop(&sh.q, &(struct pxfer_resend){ 0 }) == 0,
		 "left in the queue");
	pxfer_resendq_release(&sh.q);
}

int main(void)
{
	test_bounds();
	test_threads();
	return t_result();
}
