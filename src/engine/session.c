// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "pxfer/pxfer.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/sys.h"
#include "engine/session.h"

int pxfer_session_init(struct pxfer_session *s, const char *peer_role,
		       const struct pxfer_stop *stop)
{
	int ret = pxfer_fail_init(&s->fail, -1);

	if (ret)
		return ret;
	s->peer_role = peer_role;
	s->stop = stop;
	atomic_store(&s->lost, 0);
	return 0;
}

/* the peer's address, "?" before it connected */
static const char *peer_name(const struct pxfer_session *s)
{
	return s->cconn ? s->cconn->peer : "?";
}

int pxfer_session_enter(struct pxfer_session *s, unsigned int to)
{
	const char *from = pxfer_state_name(&s->state);

	if (pxfer_state_enter(&s->state, to))
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				  "internal error: a %s's session cannot go from %s to %s",
				  s->state.m->side, from,
				  pxfer_machine_name(s->state.m, to));
	pxfer_verbose("session with the %s %s: %s -> %s", s->peer_role,
		peer_name(s), from, pxfer_state_name(&s->state));
	return 0;
}

int pxfer_session_expect(struct pxfer_session *s, uint16_t type)
{
	char detail[96];

	if (pxfer_state_accepts(&s->state, type))
		return 0;
	/* it passed authentication: the peer itself broke the protocol,
	 * and nothing more it says can be taken on trust */
	snprintf(detail, sizeof(detail), "%s in state %s, where it does not belong",
		 pxfer_msg_name(type), pxfer_state_name(&s->state));
	return pxfer_session_integrity(s, "the control connection", detail);
}

int pxfer_session_ctrl_start(struct pxfer_session *s)
{
	if (pxfer_ctrl_init(&s->ctrl, s->cconn))
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
	s->ctrl_init = 1;
	s->fail.wake_fd = s->ctrl.wake_fd;
	return 0;
}

int pxfer_session_seal(struct pxfer_session *s, int sender)
{
	const struct pxfer_keys *k = &s->keys;
	int ret = pxfer_ctrl_seal(&s->ctrl, pxfer_session_cipher(s),
			      sender ? k->ctrl_s2r : k->ctrl_r2s,
			      sender ? k->ctrl_r2s : k->ctrl_s2r);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				  "cannot set up %s for the control connection: %s",
				  pxfer_cipher_name(pxfer_session_cipher(s)),
				  strerror(-ret));
	return 0;
}

const char *pxfer_session_prot_name(const struct pxfer_session *s)
{
	int chacha = pxfer_session_cipher(s) == PXFER_CIPHER_CHACHA;

	switch (pxfer_session_prot(s)) {
	case PXFER_PROT_ENCRYPT:
		return chacha ? "encrypted (chacha20-poly1305)"
			      : "encrypted (aes-256-gcm)";
	case PXFER_PROT_CHECKSUM:
		return "plain checksum (xxh3)";
	default:
		return chacha ? "authenticated (poly1305)"
			      : "authenticated (gmac)";
	}
}

int pxfer_session_integrity(struct pxfer_session *s, const char *what,
			    const char *detail)
{
	return pxfer_fail(&s->fail, PXFER_EXIT_INTEGRITY,
			  "integrity error on %s with the %s %s: %s; nothing that failed the check was written",
			  what, s->peer_role, s->cconn ? s->cconn->peer : "?",
			  detail);
}

void pxfer_session_release(struct pxfer_session *s)
{
	if (s->ctrl_init)
		pxfer_ctrl_release(&s->ctrl);
	s->ctrl_init = 0;
	pxfer_auth_wipe(&s->keys, sizeof(s->keys));
	s->fail.wake_fd = -1;
	if (s->cconn)
		s->t->close(s->cconn);
	s->cconn = NULL;
	pxfer_fail_release(&s->fail);
}

int pxfer_session_stopped(const struct pxfer_session *s)
{
	return pxfer_stop_raised(s->stop) != 0;
}

int pxfer_session_wait(struct pxfer_session *s, int timeout_ms,
		       const char *intr)
{
	int ret = pxfer_ctrl_wait(&s->ctrl, pxfer_stop_fd(s->stop), timeout_ms);

	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "lost the connection to the %s %s: %s",
				  s->peer_role, s->cconn->peer, strerror(-ret));
	if (pxfer_session_stopped(s))
		return pxfer_fail(&s->fail, PXFER_EXIT_INTR, "%s", intr);
	return 0;
}

int pxfer_session_keepalive(struct pxfer_session *s)
{
	int ret = pxfer_ctrl_keepalive(&s->ctrl);

	if (ret == -ETIMEDOUT)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "no word from the %s %s for %d s: it is gone or unreachable",
				  s->peer_role, s->cconn->peer, PXFER_IDLE_SECS);
	if (ret == -ENOBUFS)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "the %s %s took nothing of what was sent to it for %d s (%zu KiB waiting): it is stuck, or does not read what it is sent",
				  s->peer_role, s->cconn->peer, PXFER_IDLE_SECS,
				  pxfer_ctrl_pending(&s->ctrl) >> 10);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				  "cannot queue a message to %s: %s",
				  s->cconn->peer, strerror(-ret));
	return 0;
}

int pxfer_session_read_end(struct pxfer_session *s, int ret)
{
	if (ret == -EPIPE)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "the %s %s closed the connection before the transfer completed",
				  s->peer_role, s->cconn->peer);
	if (ret < 0)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "lost the connection to the %s %s: %s",
				  s->peer_role, s->cconn->peer, strerror(-ret));
	return 0;
}

void pxfer_session_data_lost(struct pxfer_session *s, unsigned int idx,
			     int err)
{
	uint64_t none = 0, lost = (uint64_t)(idx + 1) << 32 | (uint32_t)-err;

	/* the first one is the news; the others follow from it */
	if (atomic_compare_exchange_strong(&s->lost, &none, lost))
		pxfer_wake(s->ctrl.wake_fd);
}

int pxfer_session_send_lost(struct pxfer_session *s, unsigned int idx,
			    uint16_t gen, int err, uint64_t seq)
{
	struct pxfer_msg m = { .type = PXFER_MSG_DATA_LOST };

	m.u.lost.worker = idx;
	m.u.lost.gen = gen;
	m.u.lost.code = err < 0 && err > -4096 ? -err : EIO;
	m.u.lost.seq = seq;
	if (pxfer_ctrl_queue(&s->ctrl, &m))
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
	return 0;
}

int pxfer_session_flush(struct pxfer_session *s, int timeout_ms)
{
	const struct pxfer_transport_ops *t = s->cconn->ops;
	struct pollfd p = { .fd = t->conn_fd(s->cconn),
			    .events = t->poll_events(s->cconn, 1) };
	double end = pxfer_now() + timeout_ms / 1000.0;
	int ret;

	while (pxfer_ctrl_pending(&s->ctrl)) {
		ret = pxfer_ctrl_flush(&s->ctrl);
		if (ret)
			return ret;
		if (!pxfer_ctrl_pending(&s->ctrl))
			break;
		if (pxfer_now() > end)
			return -ETIMEDOUT;
		poll(&p, 1, 100);
	}
	return 0;
}

/*
 * After an ABORT: read and drop what the peer still sends until it
 * closes (it does once it reads the ABORT), for @ms at most. A socket
 * closed with bytes unread resets the connection (tcp), and a peer that
 * gets the reset may lose the ABORT still waiting in its socket unread:
 * it would report a closed connection instead of why.
 */
static void linger(struct pxfer_session *s, int ms)
{
	const struct pxfer_transport_ops *t = s->cconn->ops;
	struct pollfd p = { .fd = t->conn_fd(s->cconn),
			    .events = t->poll_events(s->cconn, 0) };
	double end = pxfer_now() + ms / 1000.0;

	while (pxfer_now() < end) {
		pxfer_ctrl_discard(&s->ctrl);
		if (pxfer_ctrl_fill(&s->ctrl) < 0)
			return;
		poll(&p, 1, 100);
	}
}

void pxfer_session_abort(struct pxfer_session *s, int code, const char *text,
			 int flush_ms)
{
	struct pxfer_msg m = { .type = PXFER_MSG_ABORT };

	if (!s->cconn || !s->ctrl_init)
		return;
	m.u.error.code = code;
	snprintf(m.u.error.text, sizeof(m.u.error.text), "%.*s",
		 PXFER_TEXT_MAX, text);
	m.u.error.text_len = strlen(m.u.error.text);
	if (!pxfer_ctrl_queue(&s->ctrl, &m) && !pxfer_session_flush(s, flush_ms))
		linger(s, flush_ms);
}

int pxfer_session_start_workers(struct pxfer_session *s, void *(*fn)(void *),
				const char *role)
{
	unsigned int n = s->workers.n;
	int ret = pxfer_workers_start(&s->workers, fn, role);

	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				  "cannot start a worker thread: %s", strerror(-ret));
	pxfer_verbose("%u data connection%s ready", n, n == 1 ? "" : "s");
	return 0;
}

int pxfer_session_peer_abort(struct pxfer_session *s,
			     const struct pxfer_error *e)
{
	char why[PXFER_ESCAPE_LEN(PXFER_TEXT_MAX)];

	pxfer_escape_reason(why, sizeof(why), e->text, e->text_len, e->code);
	s->peer_ended = 1;
	/* a receiver that ended an idle session: as if the peer went away;
	 * one whose disk is full: a resource ran out */
	pxfer_fail(&s->fail, e->code == EACCES ? PXFER_EXIT_AUTH :
		   e->code == ETIMEDOUT ? PXFER_EXIT_NET :
		   e->code == ENOSPC || e->code == EDQUOT ? PXFER_EXIT_LOCAL :
		   e->code == EBADMSG ? PXFER_EXIT_INTEGRITY : PXFER_EXIT_FAIL,
		   "the %s %s ended the session: %s", s->peer_role,
		   s->cconn->peer, why);
	return 0;
}
