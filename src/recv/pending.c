// SPDX-License-Identifier: MIT
#include <string.h>

#include "core/sys.h"
#include "engine/handshake.h"
#include "recv/pending.h"

void recv_pending_drop(struct recv_pendings *ps, unsigned int i)
{
	struct recv_pending *e = &ps->p[i];

	pxfer_ctrl_release(&e->ctrl);
	e->c->ops->close(e->c);
	ps->p[i] = ps->p[--ps->n];
}

void recv_pending_clear(struct recv_pendings *ps)
{
	while (ps->n)
		recv_pending_drop(ps, 0);
}

void recv_pending_add(struct recv_pendings *ps, struct pxfer_conn *c)
{
	struct recv_pending *e;

	if (ps->n == RECV_PENDING_MAX)
		recv_pending_drop(ps, 0);	/* the oldest makes room */
	e = &ps->p[ps->n];
	e->c = c;
	e->deadline = pxfer_now() + RECV_PENDING_SECS;
	if (pxfer_hs_challenge(c, e->nonce) || pxfer_ctrl_init(&e->ctrl, c)) {
		c->ops->close(c);
		return;
	}
	ps->n++;
}

int recv_pending_next(struct recv_pendings *ps, unsigned int i,
		      struct pxfer_msg *m)
{
	struct recv_pending *e = &ps->p[i];
	int ret = pxfer_ctrl_fill(&e->ctrl), r = pxfer_ctrl_next(&e->ctrl, m);

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
	ps->p[i] = ps->p[--ps->n];
	return c;
}

unsigned int recv_pending_poll(struct recv_pendings *ps, struct pollfd *p)
{
	for (unsigned int i = 0; i < ps->n; i++) {
		struct pxfer_conn *c = ps->p[i].c;

		p[i].fd = c->ops->conn_fd(c);
		p[i].events = c->ops->poll_events(c, 0);
	}
	return ps->n;
}
