// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "core/auth.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/sys.h"
#include "engine/handshake.h"

/* ---- sender ---------------------------------------------------------- */

int pxfer_hs_refused(struct pxfer_session *s, const struct pxfer_error *e,
		     const char *peer)
{
	/* no secret is needed to send a REFUSE: its text is anybody's */
	char why[PXFER_ESCAPE_LEN(PXFER_TEXT_MAX)];

	pxfer_escape_reason(why, sizeof(why), e->text, e->text_len, e->code);
	if (e->code == EACCES)
		return pxfer_fail(&s->fail, PXFER_EXIT_AUTH,
				  "the receiver %s refused the sender: %s (check that both sides use the same secret)",
				  peer, why);
	return pxfer_fail(&s->fail, PXFER_EXIT_FAIL,
			  "the receiver %s refused the session: %s", peer, why);
}

static int expect_challenge(struct pxfer_session *s, struct pxfer_conn *c,
			    int timeout_ms, struct pxfer_challenge *ch)
{
	struct pxfer_msg *m = &s->msg;
	int ret = pxfer_conn_recv_msg(c, m, timeout_ms);

	if (ret == -EPROTO)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "'%s' is not a pxfer receiver, or speaks another protocol version",
				  c->peer);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "no greeting from the receiver %s: %s", c->peer,
				  strerror(-ret));
	if (m->type != PXFER_MSG_CHALLENGE)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "unexpected %s from the receiver %s",
				  pxfer_msg_name(m->type), c->peer);
	if (m->u.challenge.transport != s->t->wire_id)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "the receiver %s uses another transport", c->peer);
	*ch = m->u.challenge;
	return 0;
}

int pxfer_hs_connect(struct pxfer_session *s, const struct pxfer_hs_target *to,
		     unsigned int slots, struct pxfer_conn **c,
		     struct pxfer_challenge *ch)
{
	int ret = s->t->connect(to->host, to->port, to->bind, to->timeout_ms,
				slots, c);

	if (ret == -ENOMEM)
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				  "cannot set up the connection to '%s': out of memory or over the memlock limit (see above)",
				  to->host);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "cannot connect to '%s' port %s: %s%s", to->host,
				  to->port, strerror(-ret),
				  ret == -ECONNREFUSED ? " (is 'pxfer recv' running there?)" : "");
	return expect_challenge(s, *c, to->timeout_ms, ch);
}

int pxfer_hs_hello(struct pxfer_session *s, const struct pxfer_secret *secret,
		   const struct pxfer_challenge *ch, struct pxfer_hello *h,
		   int timeout_ms)
{
	struct pxfer_msg *m = &s->msg;
	uint8_t mac[PXFER_MAC_LEN];
	int ret;

	h->magic = PXFER_MAGIC;
	h->version = PXFER_PROTO_VERSION;
	pxfer_auth_nonce(h->nonce);
	pxfer_auth_hello_mac(secret, ch->nonce, h, h->mac);
	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_HELLO;
	m->u.hello = *h;
	ret = pxfer_conn_send_msg(s->cconn, m, timeout_ms);
	if (!ret)
		ret = pxfer_conn_recv_msg(s->cconn, m, timeout_ms);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "handshake with the receiver %s failed: %s",
				  s->cconn->peer, strerror(-ret));
	if (m->type == PXFER_MSG_REFUSE && m->u.error.code == EBUSY)
		return 1;	/* the caller may try again */
	if (m->type == PXFER_MSG_REFUSE)
		return pxfer_hs_refused(s, &m->u.error, s->cconn->peer);
	if (m->type != PXFER_MSG_WELCOME)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "unexpected %s from the receiver %s",
				  pxfer_msg_name(m->type), s->cconn->peer);
	s->wel = m->u.welcome;
	pxfer_auth_welcome_mac(secret, ch->nonce, h, &s->wel, mac);
	if (!pxfer_auth_equal(mac, s->wel.mac))
		return pxfer_fail(&s->fail, PXFER_EXIT_AUTH,
				  "the receiver %s could not prove the shared secret; not sending",
				  s->cconn->peer);
	if (s->wel.workers > h->workers || s->wel.chunk_size > h->chunk_size ||
	    s->wel.flags != (h->flags & PXFER_HELLO_PROT))
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "the receiver %s sent impossible session parameters",
				  s->cconn->peer);
	if (pxfer_auth_keys(secret, ch->nonce, h->nonce, &s->keys))
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				  "cannot derive the session keys (libcrypto's HKDF failed)");
	return 0;
}

/*
 * A data connection failed during set-up: when the receiver gave up, it
 * said why on the control connection; that reason beats "broken pipe".
 * -1 after failing the session with it, 0 if none came within a second.
 */
static int peer_aborted(struct pxfer_session *s)
{
	struct pollfd p = { .fd = s->t->conn_fd(s->cconn),
			    .events = s->t->poll_events(s->cconn, 0) };
	double end = pxfer_now() + 1.0;

	while (pxfer_now() < end && !pxfer_failed(&s->fail)) {
		int r, ret = pxfer_ctrl_fill(&s->ctrl);

		while ((r = pxfer_ctrl_next(&s->ctrl, &s->msg)) > 0) {
			if (s->msg.type == PXFER_MSG_ABORT ||
			    s->msg.type == PXFER_MSG_REFUSE)
				return pxfer_hs_refused(s, &s->msg.u.error,
							s->cconn->peer);
		}
		if (r < 0 || ret < 0)
			break;
		poll(&p, 1, 100);
	}
	return 0;
}

int pxfer_hs_data_hello(struct pxfer_session *s, struct pxfer_worker *w,
			const struct pxfer_challenge *ch, int timeout_ms)
{
	struct pxfer_msg *m = &s->msg;
	uint8_t mac[PXFER_MAC_LEN];
	int ret;

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_DATA_HELLO;
	m->u.data_hello.session = s->wel.session;
	m->u.data_hello.worker = w->idx;
	m->u.data_hello.gen = w->gen;
	pxfer_auth_data_mac(s->keys.auth, ch->nonce, s->wel.session, w->idx,
			    w->gen, m->u.data_hello.mac);
	ret = pxfer_conn_send_msg(w->conn, m, timeout_ms);
	if (!ret)
		ret = pxfer_conn_recv_msg(w->conn, m, timeout_ms);
	if (ret && peer_aborted(s))
		return -1;
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "data connection %u to %s failed: %s", w->idx,
				  w->conn->peer, strerror(-ret));
	if (m->type == PXFER_MSG_REFUSE)
		return pxfer_hs_refused(s, &m->u.error, w->conn->peer);
	if (m->type != PXFER_MSG_DATA_WELCOME || m->u.data_welcome.worker != w->idx)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "unexpected %s on data connection %u",
				  pxfer_msg_name(m->type), w->idx);
	/* the ring's description is used only once it is proven */
	pxfer_auth_dwel_mac(s->keys.auth, ch->nonce, s->wel.session,
			    &m->u.data_welcome, mac);
	if (!pxfer_auth_equal(mac, m->u.data_welcome.mac))
		return pxfer_session_integrity(s, "a data connection's welcome",
					       "it does not prove the session key");
	ret = s->t->ring_remote(w->conn, m->u.data_welcome.blob,
				m->u.data_welcome.blob_len);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "bad ring description on data connection %u: %s",
				  w->idx, strerror(-ret));
	return 0;
}

int pxfer_hs_rejoin(const struct pxfer_session *s, const struct pxfer_hs_target *to,
		    struct pxfer_worker *w, uint16_t gen, struct pxfer_msg *m,
		    struct pxfer_conn **c, struct pxfer_err *err)
{
	uint8_t mac[PXFER_MAC_LEN], nonce[PXFER_NONCE_LEN];
	const char *step = "connect";
	int ret;

	*c = NULL;
	ret = s->t->connect(to->host, to->port, to->bind, to->timeout_ms,
			    s->wel.slots, c);
	if (!ret) {
		step = "greeting";
		ret = pxfer_conn_recv_msg(*c, m, to->timeout_ms);
	}
	if (!ret && (m->type != PXFER_MSG_CHALLENGE ||
		     m->u.challenge.transport != s->t->wire_id))
		ret = -EPROTO;
	if (ret)
		goto out;
	memcpy(nonce, m->u.challenge.nonce, sizeof(nonce));
	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_DATA_HELLO;
	m->u.data_hello.session = s->wel.session;
	m->u.data_hello.worker = w->idx;
	m->u.data_hello.gen = gen;
	pxfer_auth_data_mac(s->keys.auth, nonce, s->wel.session, w->idx, gen,
			    m->u.data_hello.mac);
	step = "handshake";
	ret = pxfer_conn_send_msg(*c, m, to->timeout_ms);
	if (!ret)
		ret = pxfer_conn_recv_msg(*c, m, to->timeout_ms);
	if (ret)
		goto out;
	if (m->type == PXFER_MSG_REFUSE) {
		char text[PXFER_ESCAPE_LEN(PXFER_TEXT_MAX)];

		pxfer_escape_reason(text, sizeof(text), m->u.error.text,
				    m->u.error.text_len, m->u.error.code);
		return pxfer_err_set(err, ECONNREFUSED,
				     "the receiver refused it: %s", text);
	}
	if (m->type != PXFER_MSG_DATA_WELCOME || m->u.data_welcome.worker != w->idx) {
		ret = -EPROTO;
		goto out;
	}
	pxfer_auth_dwel_mac(s->keys.auth, nonce, s->wel.session,
			    &m->u.data_welcome, mac);
	if (!pxfer_auth_equal(mac, m->u.data_welcome.mac))
		return pxfer_err_set(err, EBADMSG,
				     "its welcome does not prove the session key");
	step = "ring";
	ret = s->t->ring_remote(*c, m->u.data_welcome.blob,
				m->u.data_welcome.blob_len);
	if (!ret)
		ret = s->t->ring_register(*c, &w->ring, NULL, NULL);
out:
	if (ret)
		pxfer_err_set(err, -ret, "%s: %s", step,
			      ret == -EPROTO ? "not what a pxfer receiver says" :
			      strerror(-ret));
	return ret;
}

/* ---- receiver -------------------------------------------------------- */

int pxfer_hs_challenge(struct pxfer_conn *c, uint8_t *nonce)
{
	struct pxfer_msg m = { .type = PXFER_MSG_CHALLENGE };

	m.u.challenge.magic = PXFER_MAGIC;
	m.u.challenge.version = PXFER_PROTO_VERSION;
	m.u.challenge.transport = c->ops->wire_id;
	pxfer_auth_nonce(m.u.challenge.nonce);
	memcpy(nonce, m.u.challenge.nonce, PXFER_NONCE_LEN);
	return pxfer_conn_send_msg(c, &m, PXFER_HANDSHAKE_MS);
}

void pxfer_hs_refuse(struct pxfer_conn *c, int code, const char *text)
{
	struct pxfer_msg m = { .type = PXFER_MSG_REFUSE };

	m.u.error.code = code;
	m.u.error.text_len = strlen(text);
	memcpy(m.u.error.text, text, m.u.error.text_len + 1);
	pxfer_conn_send_msg(c, &m, 1000);
}

int pxfer_hs_hello_check(const struct pxfer_secret *secret,
			 const uint8_t *nonce, const struct pxfer_msg *m,
			 struct pxfer_hello *h)
{
	uint8_t mac[PXFER_MAC_LEN];

	if (m->type != PXFER_MSG_HELLO)
		return -EPROTO;
	*h = m->u.hello;
	pxfer_auth_hello_mac(secret, nonce, h, mac);
	return pxfer_auth_equal(mac, h->mac) ? 0 : -EACCES;
}

int pxfer_hs_welcome(struct pxfer_session *s, const struct pxfer_secret *secret,
		     const uint8_t *nonce_r, const struct pxfer_hello *h)
{
	struct pxfer_msg m = { .type = PXFER_MSG_WELCOME };

	s->wel.flags = h->flags & PXFER_HELLO_PROT;
	pxfer_auth_welcome_mac(secret, nonce_r, h, &s->wel, s->wel.mac);
	if (pxfer_auth_keys(secret, nonce_r, h->nonce, &s->keys))
		return -EIO;
	m.u.welcome = s->wel;
	return pxfer_conn_send_msg(s->cconn, &m, PXFER_HANDSHAKE_MS);
}

int pxfer_hs_data_check(struct pxfer_session *s, struct pxfer_conn *c,
			const uint8_t *nonce, const struct pxfer_msg *m,
			uint16_t *worker, uint16_t *gen)
{
	const struct pxfer_data_hello *dh = &m->u.data_hello;
	uint8_t mac[PXFER_MAC_LEN];

	if (m->type != PXFER_MSG_DATA_HELLO)
		return -EPROTO;
	pxfer_auth_data_mac(s->keys.auth, nonce, dh->session, dh->worker,
			    dh->gen, mac);
	if (dh->session != s->wel.session || !pxfer_auth_equal(mac, dh->mac)) {
		pxfer_hs_refuse(c, EACCES, "not part of this session");
		return -EACCES;
	}
	*worker = dh->worker;
	*gen = dh->gen;
	return 0;
}

int pxfer_hs_data_welcome(struct pxfer_session *s, struct pxfer_conn *c,
			  const uint8_t *nonce, uint16_t worker,
			  const uint8_t *blob, uint16_t blob_len)
{
	struct pxfer_msg m = { .type = PXFER_MSG_DATA_WELCOME };

	m.u.data_welcome.worker = worker;
	m.u.data_welcome.blob_len = blob_len;
	memcpy(m.u.data_welcome.blob, blob, blob_len);
	pxfer_auth_dwel_mac(s->keys.auth, nonce, s->wel.session,
			    &m.u.data_welcome, m.u.data_welcome.mac);
	return pxfer_conn_send_msg(c, &m, PXFER_HANDSHAKE_MS);
}
