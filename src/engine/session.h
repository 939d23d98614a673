/* SPDX-License-Identifier: MIT */
/*
 * What a session is on either side, and what both coordinators do the
 * same way: the control channel and its keepalive, the first-error
 * failure record, the workers, the parameters and key agreed in the
 * handshake, one turn of the coordinator's wait, ending with ABORT, and
 * the moment of grace a peer's ABORT gets to explain a data connection
 * that broke.
 *
 * Each side's session embeds struct pxfer_session and adds its own.
 * Threads: the coordinator (the thread that runs the session) owns all of
 * it, except fail (any thread may fail the session) and the lost data
 * connection, which a worker records and the coordinator reads.
 */
#ifndef PXFER_ENGINE_SESSION_H
#define PXFER_ENGINE_SESSION_H

#include <stdatomic.h>
#include <stdint.h>
#include "core/auth.h"
#include "core/proto.h"
#include "core/seal.h"
#include "engine/ctrl.h"
#include "engine/fail.h"
#include "engine/state.h"
#include "engine/worker.h"
#include "transport/transport.h"

struct pxfer_session {
	const struct pxfer_transport_ops *t;
	const char *peer_role;		/* the other side, for messages */
	int peer_ended;			/* the peer ended it with an ABORT */
	struct pxfer_fail fail;
	/* where it is (engine/state.h): the side sets its machine up */
	struct pxfer_state state;
	struct pxfer_conn *cconn;	/* the control connection */
	struct pxfer_ctrl ctrl;
	/* made inside a state, at another point on each side: flagged */
	int ctrl_init;
	struct pxfer_welcome wel;	/* the parameters both sides agreed */
	struct pxfer_keys keys;		/* derived in the handshake */
	struct pxfer_workers workers;
	/* what ends it from outside: the caller's (a sender's), the
	 * server's (a receiver's session), or NULL: nothing */
	const struct pxfer_stop *stop;
	/* the data connection lost first: (1 + its index) << 32 | -errno */
	_Atomic uint64_t lost;
	struct pxfer_msg msg;		/* the coordinator's scratch message */
};

/*
 * pxfer_session_init - a session with the @peer_role ("sender" or
 * "receiver") on the other end: the failure record, and what interrupts
 * it: @stop raised (NULL: nothing). 0 or -errno.
 */
int pxfer_session_init(struct pxfer_session *s, const char *peer_role,
		       const struct pxfer_stop *stop);

/*
 * pxfer_session_enter - the session goes to state @to (engine/state.h),
 * said at verbose level. 0, or -1 after failing the session when no edge
 * of its machine leads there (a bug).
 */
int pxfer_session_enter(struct pxfer_session *s, unsigned int to);

/*
 * pxfer_session_expect - whether a message of type @type belongs in the
 * session's state: 0, or -1 after failing the session with a protocol
 * error that names the message and the state. The one place that
 * decides it; a coordinator asks before it handles any message.
 */
int pxfer_session_expect(struct pxfer_session *s, uint16_t type);

/* pxfer_session_stopped - whether the session was interrupted */
int pxfer_session_stopped(const struct pxfer_session *s);

/*
 * pxfer_session_ctrl_start - s->cconn is authenticated: start its control
 * channel (owned by the calling thread from now on) and have a failure
 * wake that thread. 0, or -1 after failing the session.
 */
int pxfer_session_ctrl_start(struct pxfer_session *s);

/*
 * pxfer_session_seal - the keys are agreed (WELCOME): seal every control
 * message from now on, each way with its key (@sender: which way is
 * ours). 0, or -1 after failing the session.
 */
int pxfer_session_seal(struct pxfer_session *s, int sender);

/* pxfer_session_cipher - the AEAD the session agreed (enum pxfer_cipher) */
static inline int pxfer_session_cipher(const struct pxfer_session *s)
{
	return s->wel.flags & PXFER_HELLO_CHACHA ? PXFER_CIPHER_CHACHA :
						   PXFER_CIPHER_AES_GCM;
}

/* how the session's chunks are protected */
enum pxfer_prot { PXFER_PROT_MAC, PXFER_PROT_CHECKSUM, PXFER_PROT_ENCRYPT };

static inline enum pxfer_prot pxfer_session_prot(const struct pxfer_session *s)
{
	return s->wel.flags & PXFER_HELLO_ENCRYPT ? PXFER_PROT_ENCRYPT :
	       s->wel.flags & PXFER_HELLO_CHECKSUM ? PXFER_PROT_CHECKSUM :
						     PXFER_PROT_MAC;
}

/* pxfer_session_prot_name - "encrypt (aes-256-gcm)", "mac (...)", "checksum" */
const char *pxfer_session_prot_name(const struct pxfer_session *s);

/*
 * pxfer_session_integrity - fail the session for a message or chunk that
 * failed authentication on @what ("the control connection", "data
 * connection 2"): PXFER_EXIT_INTEGRITY, with what it means. Returns -1.
 */
int pxfer_session_integrity(struct pxfer_session *s, const char *what,
			    const char *detail);

/*
 * pxfer_session_release - the control channel and connection, and the
 * failure record. The side stops and releases its workers first.
 */
void pxfer_session_release(struct pxfer_session *s);

/*
 * pxfer_session_wait - one turn of the coordinator: send what the control
 * connection takes, wait up to @timeout_ms for the peer, a worker or a
 * signal. Returns 0, or -1 after failing the session: the connection
 * broke, or a signal came (@intr says what that leaves behind).
 */
int pxfer_session_wait(struct pxfer_session *s, int timeout_ms,
		       const char *intr);

/*
 * pxfer_session_keepalive - send a PING after a quiet spell; fail the
 * session (-1) when the peer said nothing for PXFER_IDLE_SECS, or, while
 * reading is paused (ctrl.read_pause), took nothing of what waits for it
 * for as long.
 */
int pxfer_session_keepalive(struct pxfer_session *s);

/*
 * pxfer_session_read_end - what the control connection's reader makes of
 * @ret, from pxfer_ctrl_fill: -EPIPE is the peer closing before the
 * session completed, another error a lost connection; both fail the
 * session (-1). 0 otherwise.
 */
int pxfer_session_read_end(struct pxfer_session *s, int ret);

/*
 * pxfer_session_data_lost - a worker's data connection @idx broke with
 * @err (a negative errno) or was closed by the peer: wake the
 * coordinator, which moves its work to the other connections (or, when
 * the peer ended the session, hears why on the control connection).
 * Any thread.
 */
void pxfer_session_data_lost(struct pxfer_session *s, unsigned int idx,
			     int err);

/*
 * pxfer_session_send_lost - queue DATA_LOST for data connection @idx of
 * generation @gen: @err (a negative errno) why, @seq the chunks taken
 * (receiver; 0 from the sender). 0, or -1 after failing the session.
 */
int pxfer_session_send_lost(struct pxfer_session *s, unsigned int idx,
			    uint16_t gen, int err, uint64_t seq);

/* pxfer_session_data_lost_any - whether a data connection broke */
static inline int pxfer_session_data_lost_any(struct pxfer_session *s)
{
	return atomic_load(&s->lost) != 0;
}

/*
 * pxfer_session_start_workers - the data connections are ready: run
 * @fn on a thread of each worker ("pxfer-@role-N"). 0, or -1 after
 * failing the session.
 */
int pxfer_session_start_workers(struct pxfer_session *s, void *(*fn)(void *),
				const char *role);

/*
 * pxfer_session_peer_abort - the peer ended the session with ABORT @e:
 * fail it with the peer's reason (a refused secret: PXFER_EXIT_AUTH; an
 * idle session, ETIMEDOUT: PXFER_EXIT_NET).
 * Returns 0: the message itself was well formed.
 */
int pxfer_session_peer_abort(struct pxfer_session *s,
			     const struct pxfer_error *e);

/*
 * pxfer_session_flush - send what is queued on the control connection,
 * waiting for it up to @timeout_ms. 0 or -errno.
 */
int pxfer_session_flush(struct pxfer_session *s, int timeout_ms);

/*
 * pxfer_session_abort - tell the peer the session is over and why (an
 * ABORT with @code and @text), waiting up to @flush_ms for it to leave.
 */
void pxfer_session_abort(struct pxfer_session *s, int code, const char *text,
			 int flush_ms);

#endif
