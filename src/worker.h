/* SPDX-License-Identifier: MIT */
/*
 * What every worker owns, on either side: its data connection, its ring of
 * slots and the file I/O back-end over it, and its credits with the lock
 * that guards them and the eventfd that wakes it. send.c and recv.c embed
 * this and add what is theirs.
 */
#ifndef PXFER_WORKER_H
#define PXFER_WORKER_H

#include <pthread.h>
#include <stdint.h>
#include "credit.h"
#include "io.h"
#include "ring.h"
#include "transport.h"

struct pxfer_worker {
	unsigned int idx;
	pthread_t thread;
	int started;
	struct pxfer_conn *conn;
	struct pxfer_ring ring;
	struct pxfer_io *io;
	pthread_mutex_t lock;		/* guards cred */
	int lock_init;
	struct pxfer_credits cred;
	int wake_fd;
};

/*
 * pxfer_worker_init - set up @w around its connection (w->conn): credits
 * for @slots slots (@receiver: the granting side), the ring, the I/O
 * back-end @io, and the ring's registration with the transport (the
 * receiver gets the ring's description in @blob). 0 or -errno; on error
 * pxfer_worker_release undoes what was done.
 */
int pxfer_worker_init(struct pxfer_worker *w, const struct pxfer_transport_ops *t,
		      const char *io, unsigned int slots, uint32_t chunk,
		      int receiver, uint8_t *blob, uint16_t *blob_len);

/*
 * pxfer_worker_kick - make a worker notice its session's stop flag: wake
 * it and, after a failure, shut its connection down so that a send or
 * receive blocked on a peer that is gone returns.
 */
void pxfer_worker_kick(struct pxfer_worker *w,
		       const struct pxfer_transport_ops *t, int failed);

/* pxfer_worker_join - wait for the worker's thread, if it was started */
void pxfer_worker_join(struct pxfer_worker *w);

/* pxfer_worker_release - free all of it, and close the connection */
void pxfer_worker_release(struct pxfer_worker *w,
			  const struct pxfer_transport_ops *t);

#endif
