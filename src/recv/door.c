// SPDX-License-Identifier: MIT
/*
 * The front door's gate (gate.h) applied to HELLOs: after a source failed
 * to authenticate, its connections wait, unread, for a delay that grows
 * with each failure, and the log gets its first failure at once and then
 * one line per source and minute, not one per guess.
 */
#include <errno.h>
#include <stdio.h>

#include "core/log.h"
#include "core/sys.h"
#include "recv/pending.h"
#include "recv/recv.h"

int recv_door_wait(struct recv_server *srv, struct recv_pendings *pend,
		   unsigned int i)
{
	double now = pxfer_now();
	double wait = recv_gate_wait(&srv->gate, pend->p[i].c->source, now);

	if (wait <= 0)
		return 0;
	recv_pending_hold(pend, i, now + wait);
	return 1;
}

int recv_door_hello(struct recv_server *srv, struct pxfer_conn *c,
		    const uint8_t *nonce, const struct pxfer_msg *m,
		    struct pxfer_hello *h)
{
	int r = pxfer_hs_hello_check(&srv->o->secret, nonce, m, h);

	if (r == -EACCES) {
		recv_count(&srv->m->auth_failures, 1);
		recv_count(&srv->m->sessions[RECV_OUT_REFUSED], 1);
		if (recv_gate_failed(&srv->gate, c->source, pxfer_now()) &&
		    !srv->o->quiet)
			pxfer_warning("refused a sender from %s: authentication failed (wrong secret)",
				c->peer);
		pxfer_hs_refuse(c, EACCES, "authentication failed");
	} else if (!r) {
		recv_gate_passed(&srv->gate, c->source);
	}
	return r;
}

double recv_door_report(struct recv_server *srv, double now, int all)
{
	struct recv_gate_report r;
	double next;

	while (recv_gate_report(&srv->gate, now, all, &r)) {
		if (srv->o->quiet)
			continue;
		if (r.source)
			pxfer_warning("refused %lu sender(s) from %s in the last %.0f s: authentication failed (wrong secret)",
				r.failed, r.source, r.secs);
		else
			pxfer_warning("refused %lu sender(s) from %lu other address(es) in the last %.0f s: authentication failed (wrong secret)",
				r.failed, r.sources, r.secs);
	}
	next = recv_gate_next_report(&srv->gate);
	return next < now + RECV_GATE_REPORT_SECS ? next : now + RECV_GATE_REPORT_SECS;
}
