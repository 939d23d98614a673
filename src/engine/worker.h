/* SPDX-License-Identifier: MIT */
/*
 * What every worker owns, on either side: its data connection, its ring of
 * slots and the file I/O back-end over it, and its credits with the lock
 * that guards them and the eventfd that wakes it. Each side's worker
 * embeds struct pxfer_worker and adds what is its own; a session runs its
 * workers as a set (struct pxfer_workers): started together, stopped and
 * joined together.
 */
#ifndef PXFER_WORKER_H
#define PXFER_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "core/credit.h"
#include "io/io.h"
#include "core/ring.h"
#include "transport/transport.h"

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
	/* the ring and I/O back-end, made by a thread of their own */
	pthread_t prep_thread;
	int prep_started;
	int prep_ret;
	const char *prep_io;
	uint32_t prep_chunk;
	size_t prep_hdr;
	int prep_pinned;	/* the transport pins the ring (rdma) */
	void *prep_mem;		/* the ring's memory, from prep_pool */
	struct pxfer_pool *prep_pool;
	/*
	 * Failover: a connection that broke (or that the peer gave up on)
	 * carries nothing more, and its chunks the receiver did not take
	 * go over the other connections. lost is why (a negative errno; 0
	 * while it works), set once by pxfer_worker_lose from any thread;
	 * parked is set by the worker's own thread once it is done with
	 * the connection. The rest is the coordinator's.
	 */
	atomic_int lost;
	atomic_int parked;
	double lost_at;		/* when the coordinator saw it parked */
	uint64_t lost_seq;	/* chunks the receiver took on it */
	int lost_told;		/* DATA_LOST sent */
	int lost_heard;		/* DATA_LOST received */
	int retired;		/* its work went to the others */
	uint16_t gen;		/* its connection's generation: 0, then one
				 * more each time a new one replaces it */
	unsigned int rail;	/* which of the session's rails it uses */
	int numa_node;		/* its rail's device's node: its threads run
				 * there, and fault its ring in there; -1 */
};

/*
 * A session's workers. The coordinator adds, starts and stops them; the
 * workers' loops end when stop is set.
 */
struct pxfer_workers {
	struct pxfer_worker **w;
	unsigned int n, cap;
	atomic_int stop;
};

/* pxfer_workers_init - room for @n workers. 0 or -ENOMEM */
int pxfer_workers_init(struct pxfer_workers *ws, unsigned int n);

/* pxfer_workers_add - @w becomes worker number ws->n (its idx) */
void pxfer_workers_add(struct pxfer_workers *ws, struct pxfer_worker *w);

/*
 * pxfer_workers_start - run @fn(worker) on a thread of each worker, named
 * "pxfer-@role-N". 0, or -errno when a thread could not be made (those
 * started are stopped by pxfer_workers_stop).
 */
int pxfer_workers_start(struct pxfer_workers *ws, void *(*fn)(void *),
			const char *role);

/*
 * pxfer_workers_stop - set the stop flag, wake every worker (after a
 * failure, @failed, also shut its connection down, so that a send or
 * receive blocked on a peer that is gone returns) and wait for their
 * threads. The side then releases each worker.
 */
void pxfer_workers_stop(struct pxfer_workers *ws,
			const struct pxfer_transport_ops *t, int failed);

/* pxfer_workers_stopping - whether the workers' loops should end */
static inline int pxfer_workers_stopping(struct pxfer_workers *ws)
{
	return atomic_load(&ws->stop);
}

/* pxfer_workers_release - forget the set (not the workers themselves) */
void pxfer_workers_release(struct pxfer_workers *ws);

/*
 * pxfer_worker_prepare - set up @w before its connection exists: its wake
 * eventfd, lock and credits for @slots slots (@receiver: the granting
 * side) at once; its ring and the I/O back-end @io over it on a thread of
 * its own, since registering the ring as io_uring fixed buffers touches
 * every page of it (about 4 ms a MiB under emulation), and that can
 * overlap the connections being made. The ring is carved from @pool (may
 * be NULL) when it fits there, so that its pages are already faulted in.
 * 0 or -errno; on error, and in any case, pxfer_worker_release undoes
 * what was done.
 */
int pxfer_worker_prepare(struct pxfer_worker *w,
			 const struct pxfer_transport_ops *t, const char *io,
			 unsigned int slots, uint32_t chunk, int receiver,
			 struct pxfer_pool *pool);

/*
 * pxfer_worker_attach - once w->conn is set: wait for the ring, then
 * register it with the transport (the receiver gets the ring's
 * description in @blob). 0 or -errno.
 */
int pxfer_worker_attach(struct pxfer_worker *w,
			const struct pxfer_transport_ops *t, uint8_t *blob,
			uint16_t *blob_len);

/*
 * pxfer_worker_kick - make a worker notice its session's stop flag: wake
 * it and, after a failure, shut its connection down so that a send or
 * receive blocked on a peer that is gone returns.
 */
void pxfer_worker_kick(struct pxfer_worker *w,
		       const struct pxfer_transport_ops *t, int failed);

/*
 * pxfer_worker_lose - @w's connection is gone (@err, a negative errno):
 * no more chunks go on it. The first call records @err, shuts the
 * connection down and wakes the worker; later ones do nothing. Returns 1
 * for the first call. Any thread.
 */
int pxfer_worker_lose(struct pxfer_worker *w, const struct pxfer_transport_ops *t,
		      int err);

/* pxfer_worker_alive - whether @w's connection still carries chunks */
static inline int pxfer_worker_alive(struct pxfer_worker *w)
{
	return !atomic_load(&w->lost);
}

/* pxfer_workers_alive - how many of @ws's connections still carry chunks */
unsigned int pxfer_workers_alive(struct pxfer_workers *ws);

/*
 * pxfer_worker_start - run @fn(worker) on a thread of @w alone, named
 * "pxfer-@role-N" (a worker whose connection was replaced: its thread
 * ended with the old one). 0 or -errno.
 */
int pxfer_worker_start(struct pxfer_worker *w, void *(*fn)(void *),
		       const char *role);

/* pxfer_worker_join - wait for the worker's thread, if it was started */
void pxfer_worker_join(struct pxfer_worker *w);

/* pxfer_worker_setup_error - why a worker could not be set up (@err from
 * prepare or attach), for a message */
const char *pxfer_worker_setup_error(int err);

/* pxfer_worker_release - free all of it, and close the connection */
void pxfer_worker_release(struct pxfer_worker *w,
			  const struct pxfer_transport_ops *t);

#endif
