// SPDX-License-Identifier: MIT
/*
 * Re-admission, the receiver's half (the sender's is src/send/rejoin.c):
 * a data connection that comes while the session runs may take the place
 * of a lost one. It must prove the session key as any data connection
 * does (DATA_HELLO), and name a worker whose connection is lost, whose
 * loss both sides know of (this side told the sender how many chunks it
 * took, DATA_LOST, and its worker takes nothing more off it) and a
 * generation one above that connection's: anything else is refused and
 * closed, and the session goes on. The ring is registered with the new
 * connection (on rdma a new memory window, bound to the new queue pair),
 * the grants made for the old one are void, and the worker, which sat
 * idle since the loss, takes the new connection with every count at 0;
 * the chunks' nonces carry the generation, so none of the old connection
 * can be replayed on the new one.
 */
#include <errno.h>
#include <string.h>

#include "core/log.h"
#include "core/sys.h"
#include "recv/recv.h"

/* worker @w's old connection is done with, on both sides */
static int replaceable(struct rworker *w)
{
	return !pxfer_worker_alive(&w->b) && w->b.lost_told &&
	       atomic_load(&w->b.parked);
}

static void refuse(struct pxfer_conn *c, const char *why)
{
	pxfer_verbose("refused a data connection from %s: %s", c->peer, why);
	pxfer_hs_refuse(c, EACCES, why);
	c->ops->close(c);
}

/* @w takes @c, of generation @gen */
static void swap(struct recv_session *s, struct rworker *w,
		 struct pxfer_conn *c, uint16_t gen)
{
	struct pxfer_conn *old = w->b.conn;
	double now = pxfer_now();

	pxfer_verbose("data connection %u from %s: %llu chunks, then lost", w->b.idx,
		old->peer, (unsigned long long)w->seq);
	w->b.conn = c;
	w->b.gen = gen;
	pxfer_tagger_rejoin(&w->tag, gen);
	w->seq = 0;
	atomic_store(&w->taken, 0);
	w->claimed = w->taken_seen = 0;
	w->claimed_at = w->moved_at = now;
	pthread_mutex_lock(&w->b.lock);
	pxfer_credits_reset(&w->b.cred);
	pthread_mutex_unlock(&w->b.lock);
	w->b.lost_at = 0;
	w->b.lost_seq = 0;
	w->b.lost_told = w->b.lost_heard = 0;
	s->all_lost_at = 0;
	atomic_store(&w->b.parked, 0);
	atomic_store(&w->b.lost, 0);
	/* the worker looks at its connection again only after this */
	atomic_store(&w->rejoined, 1);
	pxfer_wake(w->b.wake_fd);
	s->b.t->close(old);
	if (!s->o->quiet)
		pxfer_info("data connection %u from %s is back: it carries data again",
		     w->b.idx, c->peer);
}

static void take(struct recv_session *s, struct recv_newconn *nc)
{
	uint8_t blob[PXFER_BLOB_MAX];
	uint16_t blob_len = 0, idx, gen;
	struct pxfer_conn *c = nc->c;
	struct rworker *w;
	int ret;

	if (pxfer_failed(&s->b.fail) || s->b.state.now == PXFER_RECV_FINISHING) {
		c->ops->close(c);
		return;
	}
	memset(&s->b.msg, 0, sizeof(s->b.msg));
	s->b.msg.type = PXFER_MSG_DATA_HELLO;
	s->b.msg.u.data_hello = nc->dh;
	ret = pxfer_hs_data_check(&s->b, c, nc->nonce, &s->b.msg, &idx, &gen);
	if (ret) {
		pxfer_verbose("refused a data connection from %s: %s", c->peer,
			strerror(-ret));
		c->ops->close(c);
		return;
	}
	if (idx >= s->b.workers.n) {
		refuse(c, "no such data connection");
		return;
	}
	w = &s->w[idx];
	if (!replaceable(w) || gen != w->b.gen + 1) {
		refuse(c, "it replaces no lost data connection");
		return;
	}
	ret = s->b.t->ring_register(c, &w->b.ring, blob, &blob_len);
	if (!ret)
		ret = pxfer_hs_data_welcome(&s->b, c, nc->nonce, idx, blob, blob_len);
	if (ret) {
		pxfer_warning("data connection %u from %s could not replace the lost one: %s",
			idx, c->peer, pxfer_worker_setup_error(ret));
		c->ops->close(c);
		return;
	}
	swap(s, w, c, gen);
}

void recv_rejoin(struct recv_session *s)
{
	struct recv_newconn nc;

	pxfer_drain(s->inbox.fd);
	while (pxfer_inbox_pop(&s->inbox, &nc))
		take(s, &nc);
}
