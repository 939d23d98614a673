/* SPDX-License-Identifier: MIT */
/*
 * The handshake, in both directions. Every connection opens with the
 * receiver's CHALLENGE, which carries a fresh nonce. On the control
 * connection the sender answers with HELLO (its parameters, proving the
 * shared secret) and gets WELCOME (the parameters agreed, the receiver
 * proving the secret in turn) or REFUSE. On a data connection it answers
 * with DATA_HELLO (proving the session key derived from both nonces) and
 * gets DATA_WELCOME, which describes the receiver's ring for that worker.
 * core/auth.h computes the MACs; this file says who sends what and when,
 * and what each failure means to the user.
 */
#ifndef PXFER_ENGINE_HANDSHAKE_H
#define PXFER_ENGINE_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>
#include "pxfer/pxfer.h"
#include "core/err.h"
#include "core/proto.h"
#include "engine/session.h"

/* ---- sender ---------------------------------------------------------- */

/* where the sender connects to, and how long each step may take */
struct pxfer_hs_target {
	const char *host, *port, *bind;
	int timeout_ms;
};

/*
 * pxfer_hs_connect - connect to the receiver with s->t (@slots: 0 for the
 * control connection, else the receiver's slots per ring) and take its
 * CHALLENGE into @ch. 0, or -1 after failing the session with what the
 * user should know (no receiver there, not a pxfer receiver, another
 * transport, memlock).
 */
int pxfer_hs_connect(struct pxfer_session *s, const struct pxfer_hs_target *to,
		     unsigned int slots, struct pxfer_conn **c,
		     struct pxfer_challenge *ch);

/*
 * pxfer_hs_hello - on s->cconn, after its CHALLENGE @ch: send @h (its
 * nonce and MAC are filled here) and take the WELCOME, which must prove
 * @secret and agree to no more than @h asked. Sets s->wel and s->keys.
 * 0; 1 when the receiver is busy (its REFUSE in s->msg), to try again on
 * a new connection; or -1 after failing the session (a REFUSE says why).
 */
int pxfer_hs_hello(struct pxfer_session *s, const struct pxfer_secret *secret,
		   const struct pxfer_challenge *ch, struct pxfer_hello *h,
		   int timeout_ms);

/*
 * pxfer_hs_data_hello - on worker @w's new data connection, after its
 * CHALLENGE @ch: prove the session key and take the DATA_WELCOME, whose
 * ring description goes to the transport. When the connection fails and
 * the receiver said why on the control connection, that reason is what
 * the user sees. 0, or -1 after failing the session.
 */
int pxfer_hs_data_hello(struct pxfer_session *s, struct pxfer_worker *w,
			const struct pxfer_challenge *ch, int timeout_ms);

/*
 * pxfer_hs_rejoin - a new data connection for worker @w, whose last one
 * was lost, as generation @gen, to @to: connect, prove the session key,
 * register @w's ring with it and take the receiver's ring description.
 * Unlike the rest, it runs beside the coordinator (on a thread of its
 * own: s is only read, @m is its own message buffer) and fails nothing:
 * 0 with the connection in *@c, or -errno with why in @err (-EBADMSG: a
 * DATA_WELCOME that does not prove the session key, an integrity
 * failure for the caller to report). The caller closes *@c on error too.
 */
int pxfer_hs_rejoin(const struct pxfer_session *s, const struct pxfer_hs_target *to,
		    struct pxfer_worker *w, uint16_t gen, struct pxfer_msg *m,
		    struct pxfer_conn **c, struct pxfer_err *err);

/*
 * pxfer_hs_refused - fail the session for the receiver's REFUSE or ABORT
 * @e: a refused secret is PXFER_EXIT_AUTH, anything else PXFER_EXIT_FAIL.
 * Returns -1.
 */
int pxfer_hs_refused(struct pxfer_session *s, const struct pxfer_error *e,
		     const char *peer);

/* ---- receiver -------------------------------------------------------- */

/* pxfer_hs_challenge - send a CHALLENGE with a fresh @nonce. 0 or -errno */
int pxfer_hs_challenge(struct pxfer_conn *c, uint8_t *nonce);

/* pxfer_hs_refuse - tell the peer why it is turned away (best effort) */
void pxfer_hs_refuse(struct pxfer_conn *c, int code, const char *text);

/*
 * pxfer_hs_hello_check - whether @m, the answer to the CHALLENGE with
 * @nonce, is a HELLO that proves @secret; into @h. 0, -EPROTO (not a
 * HELLO) or -EACCES (the wrong secret).
 */
int pxfer_hs_hello_check(const struct pxfer_secret *secret,
			 const uint8_t *nonce, const struct pxfer_msg *m,
			 struct pxfer_hello *h);

/*
 * pxfer_hs_welcome - send s->wel (chosen by the receiver, with a fresh
 * session number) as the WELCOME to @h, proving @secret, and derive the
 * session key. 0 or -errno.
 */
int pxfer_hs_welcome(struct pxfer_session *s, const struct pxfer_secret *secret,
		     const uint8_t *nonce_r, const struct pxfer_hello *h);

/*
 * pxfer_hs_data_check - whether @m, the answer on a new connection to the
 * CHALLENGE with @nonce, is a DATA_HELLO of this session: the worker it
 * is for into *worker and its generation into *gen (neither checked
 * against the workers yet). 0, or -EACCES (not this session's key, told
 * so) or -EPROTO.
 */
int pxfer_hs_data_check(struct pxfer_session *s, struct pxfer_conn *c,
			const uint8_t *nonce, const struct pxfer_msg *m,
			uint16_t *worker, uint16_t *gen);

/*
 * pxfer_hs_data_welcome - send worker @worker's DATA_WELCOME on @c, whose
 * CHALLENGE carried @nonce, with the transport's description of its ring,
 * proven with the session key. 0 or -errno.
 */
int pxfer_hs_data_welcome(struct pxfer_session *s, struct pxfer_conn *c,
			  const uint8_t *nonce, uint16_t worker,
			  const uint8_t *blob, uint16_t blob_len);

#endif
