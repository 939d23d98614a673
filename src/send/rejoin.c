// SPDX-License-Identifier: MIT
/*
 * Re-admission: a data connection that was lost (docs/architecture.md,
 * "Rails and failover") is made again on its own rail while the session
 * runs, so a rail that comes back carries data again at once, not in the
 * next session.
 *
 * Once the failover is done with a worker (both sides said DATA_LOST,
 * its chunks are queued for the others, its thread ended) and the others
 * have copied its chunks out of its ring, the coordinator voids its
 * credits and starts a thread that connects to the worker's rail as
 * generation gen + 1 (DATA_HELLO gen: the receiver takes it only for a
 * lost worker, and the chunks' nonces start anew with it), registers the
 * ring with the new connection and takes the receiver's description of
 * its ring. The coordinator then gives the worker the connection, resets
 * what counted chunks on the old one and starts its thread again; the
 * receiver's CREDITs for the new connection may come before that, and
 * are kept. A try that fails waits 1 s, doubling to 8 s, for the next.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/sys.h"
#include "send/send.h"

/* what a worker's new connection is made with */
struct srejoin {
	pthread_t thread;
	int started;
	atomic_int done;	/* the thread's work is over */
	int ret;
	uint16_t gen;
	unsigned int tries;
	double next_at;		/* when to try again */
	struct pxfer_hs_target to;
	struct pxfer_conn *conn;
	struct send_session *s;
	struct sworker *w;
	struct pxfer_err err;	/* why the last try failed */
	struct pxfer_msg msg;	/* its own: the coordinator has s->b.msg */
};

/* a try may take this long: connecting, and each message after */
#define REJOIN_TIMEOUT_MS	5000
#define REJOIN_WAIT_MAX		8.0

const char *send_rail_name(struct send_session *s, struct sworker *w)
{
	return s->rails.n ? s->rails.r[w->b.rail].name : s->b.cconn->peer;
}

static void *rejoin_main(void *arg)
{
	struct srejoin *rj = arg;

	rj->ret = pxfer_hs_rejoin(&rj->s->b, &rj->to, &rj->w->b, rj->gen,
				  &rj->msg, &rj->conn, &rj->err);
	atomic_store(&rj->done, 1);
	pxfer_wake(rj->s->b.ctrl.wake_fd);
	return NULL;
}

/* the worker is done with its old connection, and can take a new one */
static int ready(struct sworker *w)
{
	return !pxfer_worker_alive(&w->b) && w->b.retired &&
	       !pxfer_resendq_held(&w->rs);
}

static void start(struct send_session *s, struct sworker *w)
{
	struct srejoin *rj = w->rj;
	int ret;

	if (!rj) {
		rj = calloc(1, sizeof(*rj));
		if (!rj)
			return;	/* no memory for it now: later */
		rj->s = s;
		rj->w = w;
		rj->to = s->to;
		if (s->rails.n) {
			rj->to.host = s->rails.r[w->b.rail].remote;
			rj->to.bind = s->rails.r[w->b.rail].local.addr;
		}
		if (rj->to.timeout_ms <= 0 || rj->to.timeout_ms > REJOIN_TIMEOUT_MS)
			rj->to.timeout_ms = REJOIN_TIMEOUT_MS;
		w->rj = rj;
		/* its thread ended with the old connection (parked); nothing
		 * of its ring is in use, and the old grants are void */
		pxfer_worker_join(&w->b);
		for (unsigned int i = 0; i < s->b.wel.slots; i++)
			w->slots[i].state = SS_IDLE;
		pthread_mutex_lock(&w->b.lock);
		pxfer_credits_reset(&w->b.cred);
		pthread_mutex_unlock(&w->b.lock);
	}
	if (pxfer_now() < rj->next_at)
		return;
	if (w->b.gen == UINT16_MAX)
		return;
	rj->gen = w->b.gen + 1;
	rj->conn = NULL;
	pxfer_err_clear(&rj->err);
	atomic_store(&rj->done, 0);
	ret = pxfer_thread_create(&rj->thread, NULL, rejoin_main, rj);
	if (ret) {
		rj->next_at = pxfer_now() + REJOIN_WAIT_MAX;
		return;
	}
	rj->started = 1;
	pxfer_thread_name(rj->thread, "rejoin", w->b.idx);
}

/* the worker takes the new connection, with none of the old one's counts */
static int take(struct send_session *s, struct sworker *w)
{
	struct srejoin *rj = w->rj;
	int ret;

	s->b.t->close(w->b.conn);
	w->b.conn = rj->conn;
	rj->conn = NULL;
	w->b.gen = rj->gen;
	pxfer_tagger_rejoin(&w->tag, w->b.gen);
	w->seq = 0;
	atomic_store(&w->sent, 0);
	w->sent_seen = w->sent_told = 0;
	w->sent_since = pxfer_now();
	w->b.lost_at = 0;
	w->b.lost_seq = 0;
	w->b.lost_told = w->b.lost_heard = 0;
	w->b.retired = 0;
	atomic_store(&w->b.parked, 0);
	atomic_store(&w->b.lost, 0);
	ret = pxfer_worker_start(&w->b, send_worker_main, "send");
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot start worker %u again: %s", w->b.idx,
				  strerror(-ret));
	pxfer_info("data connection %u (%s) is back: it carries data again",
	     w->b.idx, send_rail_name(s, w));
	free(rj);
	w->rj = NULL;
	return 0;
}

/* the try is over: take the connection, or wait and try again */
static int finish(struct send_session *s, struct sworker *w)
{
	struct srejoin *rj = w->rj;
	double wait;

	pthread_join(rj->thread, NULL);
	rj->started = 0;
	if (!rj->ret)
		return take(s, w);
	if (rj->conn)
		s->b.t->close(rj->conn);
	rj->conn = NULL;
	if (rj->ret == -EBADMSG)
		return pxfer_session_integrity(&s->b, "a data connection's welcome",
					       "it does not prove the session key");
	wait = rj->tries < 3 ? (double)(1u << rj->tries) : REJOIN_WAIT_MAX;
	rj->tries++;
	rj->next_at = pxfer_now() + wait;
	pxfer_verbose("data connection %u (%s) cannot be made again yet: %s; next try in %.0f s",
		w->b.idx, send_rail_name(s, w), pxfer_err_msg(&rj->err),
		wait);
	return 0;
}

int send_rejoin(struct send_session *s)
{
	/* after FIN nothing is left to carry; with none alive the session
	 * is over */
	if (s->b.state.now != PXFER_SEND_STREAMING ||
	    !pxfer_workers_alive(&s->b.workers))
		return 0;
	for (unsigned int i = 0; i < s->b.workers.n; i++) {
		struct sworker *w = &s->w[i];
		int ret = 0;

		if (w->rj && w->rj->started) {
			if (atomic_load(&w->rj->done))
				ret = finish(s, w);
		} else if (ready(w)) {
			start(s, w);
		}
		if (ret)
			return -1;
	}
	return 0;
}

void send_rejoin_stop(struct send_session *s)
{
	for (unsigned int i = 0; s->w && i < s->b.workers.n; i++) {
		struct srejoin *rj = s->w[i].rj;

		if (!rj)
			continue;
		if (rj->started)
			pthread_join(rj->thread, NULL);
		if (rj->conn)
			s->b.t->close(rj->conn);
		free(rj);
		s->w[i].rj = NULL;
	}
}
