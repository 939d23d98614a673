/* SPDX-License-Identifier: MIT */
/*
 * A queue of ids of fixed capacity, first in first out: what one thread
 * hands another (files to finish, files to report). Not thread-safe: the
 * owner says which lock guards it.
 */
#ifndef PXFER_CORE_IDQ_H
#define PXFER_CORE_IDQ_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

struct pxfer_idq {
	uint32_t *id;
	unsigned int cap, head, count;
};

static inline int pxfer_idq_init(struct pxfer_idq *q, unsigned int cap)
{
	q->id = calloc(cap, sizeof(*q->id));
	q->cap = cap;
	q->head = q->count = 0;
	return q->id ? 0 : -ENOMEM;
}

static inline void pxfer_idq_release(struct pxfer_idq *q)
{
	free(q->id);
	q->id = NULL;
	q->cap = q->count = 0;
}

/* pxfer_idq_push - add @id: 1 if the queue was empty (its reader may be
 * asleep), 0 if not, -ENOSPC when full */
static inline int pxfer_idq_push(struct pxfer_idq *q, uint32_t id)
{
	if (q->count == q->cap)
		return -ENOSPC;
	q->id[(q->head + q->count) % q->cap] = id;
	return q->count++ == 0;
}

/* pxfer_idq_pop - take the oldest id: 1, or 0 when the queue is empty */
static inline int pxfer_idq_pop(struct pxfer_idq *q, uint32_t *id)
{
	if (!q->count)
		return 0;
	*id = q->id[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
	return 1;
}

#endif
