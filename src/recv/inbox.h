/* SPDX-License-Identifier: MIT */
/*
 * A session's inbox (inbox.c): the data connections that named it,
 * handed over by the server thread (which read their DATA_HELLO and
 * checked nothing else) to the session's own thread, which proves them.
 * At most PXFER_WORKERS_MAX wait; each push makes the inbox's eventfd
 * readable, and, once the session runs, the coordinator's wake-up too.
 * Closed when the session ends: what is in it then is closed, and
 * nothing more is taken.
 */
#ifndef PXFER_RECV_INBOX_H
#define PXFER_RECV_INBOX_H

#include <pthread.h>
#include <stdint.h>
#include "pxfer/pxfer.h"
#include "core/proto.h"
#include "transport/transport.h"

/* a data connection that named its session, for that session to check */
struct recv_newconn {
	struct pxfer_conn *c;
	uint8_t nonce[PXFER_NONCE_LEN];	/* of its CHALLENGE */
	struct pxfer_data_hello dh;
};

struct pxfer_inbox {
	pthread_mutex_t lock;
	int lock_init;
	struct recv_newconn q[PXFER_WORKERS_MAX];
	unsigned int n;
	int closed;		/* no more wanted */
	int fd;			/* eventfd: readable when one came; -1 */
	int wake_fd;		/* also woken by a push, or -1 */
};

/* pxfer_inbox_init - empty and open. 0 or -errno; release it either way */
int pxfer_inbox_init(struct pxfer_inbox *in);

/*
 * pxfer_inbox_push - queue @nc (its connection is the inbox's then): 0,
 * or -EBUSY (closed, or full) with @nc still the caller's. Any thread.
 */
int pxfer_inbox_push(struct pxfer_inbox *in, const struct recv_newconn *nc);

/* pxfer_inbox_pop - the oldest into *@nc: 1, or 0 when empty */
int pxfer_inbox_pop(struct pxfer_inbox *in, struct recv_newconn *nc);

/* pxfer_inbox_wake_also - from now on a push wakes @fd too (the
 * coordinator's), until the inbox closes: @fd must live that long */
void pxfer_inbox_wake_also(struct pxfer_inbox *in, int fd);

/* pxfer_inbox_close - take no more, and close what waits */
void pxfer_inbox_close(struct pxfer_inbox *in);

/* pxfer_inbox_release - close it, and free it */
void pxfer_inbox_release(struct pxfer_inbox *in);

#endif
