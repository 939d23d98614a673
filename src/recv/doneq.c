// SPDX-License-Identifier: MIT
/* The receiver's queue of complete files to report (doneq.h). */
#include <errno.h>

#include "recv/doneq.h"

int pxfer_doneq_init(struct pxfer_doneq *q, unsigned int cap)
{
	int ret;

	q->init = 0;
	ret = pxfer_idq_init(&q->q, cap);
	if (ret)
		return ret;
	ret = pthread_mutex_init(&q->lock, NULL);
	if (ret) {
		pxfer_idq_release(&q->q);
		return -ret;
	}
	q->init = 1;
	return 0;
}

void pxfer_doneq_release(struct pxfer_doneq *q)
{
	if (!q->init)
		return;
	pxfer_idq_release(&q->q);
	pthread_mutex_destroy(&q->lock);
	q->init = 0;
}

int pxfer_doneq_push(struct pxfer_doneq *q, uint32_t id)
{
	int ret;

	pthread_mutex_lock(&q->lock);
	ret = pxfer_idq_push(&q->q, id);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

int pxfer_doneq_pop(struct pxfer_doneq *q, uint32_t *id)
{
	int ret;

	pthread_mutex_lock(&q->lock);
	ret = pxfer_idq_pop(&q->q, id);
	pthread_mutex_unlock(&q->lock);
	return ret;
}
