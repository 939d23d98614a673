// SPDX-License-Identifier: MIT
/*
 * The queue of chunks to send again (resendq.h): a stack under a lock,
 * sized once for every slot of every worker, so a push never allocates.
 */
#include <errno.h>
#include <stdlib.h>

#include "send/resendq.h"

int pxfer_resendq_init(struct pxfer_resendq *q, unsigned int cap)
{
	int ret;

	q->n = 0;
	q->cap = cap;
	atomic_init(&q->waiting, 0);
	q->init = 0;
	q->q = calloc(cap ? cap : 1, sizeof(*q->q));
	if (!q->q)
		return -ENOMEM;
	ret = pthread_mutex_init(&q->lock, NULL);
	if (ret) {
		free(q->q);
		q->q = NULL;
		return -ret;
	}
	q->init = 1;
	return 0;
}

void pxfer_resendq_release(struct pxfer_resendq *q)
{
	if (q->init)
		pthread_mutex_destroy(&q->lock);
	q->init = 0;
	free(q->q);
	q->q = NULL;
	q->n = q->cap = 0;
}

int pxfer_resendq_push(struct pxfer_resendq *q, struct pxfer_resend_src *from,
		       unsigned int slot)
{
	int ret = -ENOSPC;

	pthread_mutex_lock(&q->lock);
	if (q->n < q->cap) {
		/* counted before any worker can pop it */
		atomic_fetch_add(&from->held, 1);
		q->q[q->n++] = (struct pxfer_resend){ .from = from, .slot = slot };
		atomic_store(&q->waiting, q->n);
		ret = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return ret;
}

int pxfer_resendq_pop(struct pxfer_resendq *q, struct pxfer_resend *r)
{
	int got = 0;

	pthread_mutex_lock(&q->lock);
	if (q->n) {
		*r = q->q[--q->n];
		atomic_store(&q->waiting, q->n);
		got = 1;
	}
	pthread_mutex_unlock(&q->lock);
	return got;
}
