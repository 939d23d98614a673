/* SPDX-License-Identifier: MIT */
/*
 * The queue of chunks to send again: when a data connection is lost, the
 * chunks its worker read (and perhaps sent) that the receiver did not
 * take are queued here by the coordinator, and the other workers take
 * them, each into a slot of its own ring, copying the bytes out of the
 * lost worker's ring.
 *
 * A source (a lost worker) embeds a struct pxfer_resend_src; it counts
 * its chunks that are queued or being copied out. Its ring may be used
 * anew (re-admission, rejoin.c) only when that count is 0: a chunk
 * stays counted from pxfer_resendq_push until the worker that popped it
 * calls pxfer_resendq_copied, once its bytes are out of the ring.
 *
 * Thread-safe: any thread may push and pop. pxfer_resendq_waiting is a
 * hint read without the lock, for a worker's hot path.
 */
#ifndef PXFER_SEND_RESENDQ_H
#define PXFER_SEND_RESENDQ_H

#include <pthread.h>
#include <stdatomic.h>

/* what a source of queued chunks embeds */
struct pxfer_resend_src {
	atomic_uint held;	/* its chunks queued, or popped and not copied */
};

/* a queued chunk: slot @slot of source @from */
struct pxfer_resend {
	struct pxfer_resend_src *from;
	unsigned int slot;
};

struct pxfer_resendq {
	pthread_mutex_t lock;
	struct pxfer_resend *q;
	unsigned int n, cap;
	atomic_uint waiting;	/* n, for a look without the lock */
	int init;
};

/* pxfer_resendq_init - room for @cap chunks (every slot of every worker
 * could wait): 0 or -ENOMEM */
int pxfer_resendq_init(struct pxfer_resendq *q, unsigned int cap);
/* pxfer_resendq_release - after everybody is done with it; a queue that
 * was zeroed, or released already, may be released */
void pxfer_resendq_release(struct pxfer_resendq *q);

/* pxfer_resendq_push - queue slot @slot of @from, which holds one more:
 * 0, or -ENOSPC when full (nothing changes) */
int pxfer_resendq_push(struct pxfer_resendq *q, struct pxfer_resend_src *from,
		       unsigned int slot);

/*
 * pxfer_resendq_pop - take the chunk queued last into @r: 1, or 0 when
 * none waits. Its source still holds it until pxfer_resendq_copied.
 */
int pxfer_resendq_pop(struct pxfer_resendq *q, struct pxfer_resend *r);

/* pxfer_resendq_copied - @r's bytes are out of its source's ring */
static inline void pxfer_resendq_copied(const struct pxfer_resend *r)
{
	atomic_fetch_sub(&r->from->held, 1);
}

/* pxfer_resendq_waiting - whether a chunk waits (a hint: no lock) */
static inline unsigned int pxfer_resendq_waiting(struct pxfer_resendq *q)
{
	return atomic_load(&q->waiting);
}

/* pxfer_resendq_held - chunks of @src queued or being copied */
static inline unsigned int pxfer_resendq_held(struct pxfer_resend_src *src)
{
	return atomic_load(&src->held);
}

#endif
