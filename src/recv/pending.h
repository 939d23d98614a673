/* SPDX-License-Identifier: MIT */
/*
 * Connections that were sent a CHALLENGE and have not answered yet:
 * control connections before their HELLO and data connections before
 * their DATA_HELLO, in one table the server owns (server.c), which hands
 * each data connection to its session. They are read together as their
 * bytes come, each with a deadline, so that one that says nothing, which
 * anybody can open, holds up no other.
 */
#ifndef PXFER_RECV_PENDING_H
#define PXFER_RECV_PENDING_H

#include <poll.h>
#include <stdint.h>
#include "core/proto.h"
#include "engine/ctrl.h"
#include "recv/gate.h"

/* places, shared out by source (gate.h) */
#define RECV_PENDING_MAX RECV_QUOTA_TOTAL
/* to answer: a connection that has sent nothing yet gets the first */
#define RECV_PENDING_SILENT_SECS 5
#define RECV_PENDING_SECS 15

struct recv_pending {
	struct pxfer_conn *c;
	struct pxfer_ctrl ctrl;		/* frames what it sends */
	uint8_t nonce[PXFER_NONCE_LEN];	/* of its CHALLENGE */
	double deadline;
	int heard;			/* it has sent something */
	double hold;			/* not read before then (0: none) */
};

struct recv_pendings {
	struct recv_pending p[RECV_PENDING_MAX];
	unsigned int n;
	struct recv_quota q;		/* who holds p[i]: its source, its age */
};

/*
 * recv_pending_add - challenge @c and wait for its answer (the set owns
 * @c from now on). Places are shared out by source (gate.h): it may take
 * the place of an older connection, closed then; or, when every place
 * is held by sources with a session, be closed at once itself. How
 * many connections that closed for want of a place: 0 or 1.
 */
int recv_pending_add(struct recv_pendings *ps, struct pxfer_conn *c);

/*
 * recv_pending_hold - leave pending connection @i unread until @until (its
 * source waits after failed authentications, door.c): recv_pending_poll
 * leaves it out, and it has the whole RECV_PENDING_SECS, since what it
 * may have sent is not read. The next recv_pending_next ends the hold,
 * and fails if the connection closed meanwhile.
 */
void recv_pending_hold(struct recv_pendings *ps, unsigned int i, double until);

/* recv_pending_drop - close pending connection @i */
void recv_pending_drop(struct recv_pendings *ps, unsigned int i);

/* recv_pending_clear - close them all */
void recv_pending_clear(struct recv_pendings *ps);

/*
 * recv_pending_next - the first message pending connection @i sent: 1
 * with @m filled, 0 while it is incomplete, -1 when the connection
 * failed or sent something malformed.
 */
int recv_pending_next(struct recv_pendings *ps, unsigned int i,
		      struct pxfer_msg *m);

/*
 * recv_pending_take - pending connection @i leaves the set: returned, its
 * CHALLENGE's nonce into @nonce; the caller owns it now.
 */
struct pxfer_conn *recv_pending_take(struct recv_pendings *ps, unsigned int i,
				     uint8_t *nonce);

/* recv_pending_poll - fill @p (room for RECV_PENDING_MAX) to wait for
 * them (a held one with fd -1); how many */
unsigned int recv_pending_poll(struct recv_pendings *ps, struct pollfd *p);

#endif
