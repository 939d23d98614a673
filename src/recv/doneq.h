/* SPDX-License-Identifier: MIT */
/*
 * The receiver's queue of complete files to report: the workers (which
 * finish the files FILE_END handed them) and the coordinator push a
 * file's id once it is complete, or failed; the coordinator pops them
 * and sends FILE_DONE. A file is in it at most once, so it is sized for
 * every id of the file table and a push never fails in a session.
 *
 * Thread-safe: any thread pushes, one pops. First in, first out.
 */
#ifndef PXFER_RECV_DONEQ_H
#define PXFER_RECV_DONEQ_H

#include <pthread.h>
#include <stdint.h>
#include "core/idq.h"

struct pxfer_doneq {
	pthread_mutex_t lock;
	struct pxfer_idq q;
	int init;
};

/* pxfer_doneq_init - room for @cap ids: 0 or -errno */
int pxfer_doneq_init(struct pxfer_doneq *q, unsigned int cap);
/* pxfer_doneq_release - once nobody pushes; a zeroed or released queue
 * may be released */
void pxfer_doneq_release(struct pxfer_doneq *q);

/*
 * pxfer_doneq_push - queue @id: 1 if the queue was empty (the coordinator
 * may be asleep: wake it), 0 if not, -ENOSPC when full
 */
int pxfer_doneq_push(struct pxfer_doneq *q, uint32_t id);

/* pxfer_doneq_pop - the oldest id into *@id: 1, or 0 when empty */
int pxfer_doneq_pop(struct pxfer_doneq *q, uint32_t *id);

#endif
