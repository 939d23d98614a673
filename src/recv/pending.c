// SPDX-License-Identifier: MIT
#include <string.h>

#include "core/sys.h"
#include "engine/handshake.h"
#include "recv/pending.h"

/* place @i is free: the last one moves into it, in the quota too */
static void pending_remove(struct recv_pendings *ps, unsigned int i)
{
	ps->p[i] = ps->p[--ps->n];
	recv_quota_remove(&ps->q, i);
}

void recv_pending_drop(struct recv_pendings *ps, unsigned int i)
{
	struct recv_pending *e = &ps->p[i];

	pxfer_ctrl_release(&e->ctrl);
	e->c->ops->close(e->c);
	pending_remove(ps, i);
}

void recv_pending_clear(struct recv_pendings *ps)
{
	while (ps->n)
		recv_pending_drop(ps, 0);
}

int recv_pending_add(struct recv_pendings *ps, struct pxfer_conn *c)
{
	struct recv_pending *e;
	unsigned int victim;
	int r = recv_quota_victim(&ps->q, c->source, &victim);

	if (r < 0) {
		c->ops->close(c);
		return 1;
	}
	if (r > 0)
		recv_pending_drop(ps, victim);
	e = &ps->p[ps->n];
	e->c = c;
	e->heard = 0;
	e->hold = 0;
	e->deadline = pxfer_now() + RECV_PENDING_SILENT_SECS;
	if (pxfer_hs_challenge(c, e->nonce) || pxfer_ctrl_init(&e->ctrl, c)) {
		c->ops->close(c);
		return r > 0;
	}
	recv_quota_add(&ps->q, c->source);
	ps->n++;
	return r > 0;
}

/* a peer that speaks gets the whole time to finish */
static void pending_heard(struct recv_pending *e)
{
	if (e->heard)
		return;
	e->heard = 1;
	e->deadline += RECV_PENDING_SECS - RECV_PENDING_SILENT_SECS;
}

void recv_pending_hold(struct recv_pendings *ps, unsigned int i, double until)
{
	ps->p[i].hold = until;
	pending_heard(&ps->p[i]);
}

int recv_pending_next(struct recv_pendings *ps, unsigned int i,
		      struct pxfer_msg *m)
{
	struct recv_pending *e = &ps->p[i];
	int ret = pxfer_ctrl_fill(&e->ctrl), r = pxfer_ctrl_next(&e->ctrl, m);
	int held = e->hold != 0;

	e->hold = 0;
	if (e->ctrl.in_len)
		pending_heard(e);
	/* it left while it was held: nobody waits for an answer, and a
	 * guesser's HELLOs left behind must not delay those after them */
	if (held && ret < 0)
		return -1;
	if (r == 0)
		return ret < 0 ? -1 : 0;
	return r < 0 ? -1 : 1;
}

struct pxfer_conn *recv_pending_take(struct recv_pendings *ps, unsigned int i,
				     uint8_t *nonce)
{
	struct recv_pending *e = &ps->p[i];
	struct pxfer_conn *c = e->c;

	memcpy(nonce, e->nonce, PXFER_NONCE_LEN);
	pxfer_ctrl_release(&e->ctrl);
	pending_remove(ps, i);
	return c;
}

unsigned int recv_pending_poll(struct recv_pendings *ps, struct pollfd *p)
{
	for (unsigned int i = 0; i < ps->n; i++) {
		struct pxfer_conn *c = ps->p[i].c;

		/* poll skips a negative fd: a held one wakes nobody */
		p[i].fd = ps->p[i].hold ? -1 : c->ops->conn_fd(c);
		p[i].events = c->ops->poll_events(c, 0);
	}
	return ps->n;
}
