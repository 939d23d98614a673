/* SPDX-License-Identifier: MIT */
/*
 * The session's states on either side, as docs/protocol.md ("Sender
 * states", "Receiver states") names them, in one table per side: for
 * each state the messages the peer may send in it and the states it may
 * go to. A coordinator asks pxfer_state_accepts before it handles a
 * message (pxfer_session_expect, engine/session.c, fails the session for
 * one that does not belong), moves with pxfer_state_enter, and its
 * teardown releases what each state it reached made.
 *
 * The messages of a state are those of the control connection. The
 * handshakes (CHALLENGE, HELLO, WELCOME or REFUSE; on each data
 * connection CHALLENGE, DATA_HELLO, DATA_WELCOME or REFUSE) come in a
 * fixed order on their connection, which engine/handshake.c checks
 * message by message; the table lists them in the states they belong to.
 */
#ifndef PXFER_ENGINE_STATE_H
#define PXFER_ENGINE_STATE_H

#include <stdint.h>

/* the sender's states, in the order a session that completes passes them */
enum pxfer_send_state {
	PXFER_SEND_CONNECTING,		/* the control connection */
	PXFER_SEND_AUTHENTICATING,	/* CHALLENGE, HELLO, WELCOME or REFUSE */
	PXFER_SEND_OPENING_DATA,	/* the data connections and rings */
	PXFER_SEND_STREAMING,		/* FILEs and chunks */
	PXFER_SEND_FINISHING,		/* FIN sent, waiting for the ACK */
	PXFER_SEND_DONE,		/* ACK */
	PXFER_SEND_FAILED,
	PXFER_SEND_STATES
};

/* the receiver's, for one session: LISTENING is the server's, before a
 * session and after it */
enum pxfer_recv_state {
	PXFER_RECV_LISTENING,		/* a HELLO proves the secret */
	PXFER_RECV_AUTHENTICATING,	/* destination, parameters, WELCOME */
	PXFER_RECV_ACCEPTING_DATA,	/* the data connections and rings */
	PXFER_RECV_RECEIVING,		/* FILEs and chunks */
	PXFER_RECV_FINISHING,		/* FIN: directories' modes, ACK */
	PXFER_RECV_CLEANUP,		/* failed: what did not complete goes */
	PXFER_RECV_STATES
};

/* one side's machine: its states' names, what each takes, where each goes */
struct pxfer_machine {
	const char *side;		/* "sender", "receiver" */
	unsigned int n;			/* states */
	const char *const *names;
	const uint32_t *accepts;	/* by state: bit t for message type t */
	const uint32_t *edges;		/* by state: bit s for each state it may enter */
	unsigned int failed;		/* the state a failure leads to */
};

extern const struct pxfer_machine pxfer_send_machine, pxfer_recv_machine;

/* where a session is, and the furthest it got before any failure */
struct pxfer_state {
	const struct pxfer_machine *m;
	unsigned int now, reached;
};

/* pxfer_state_init - a session of machine @m, in state @first */
void pxfer_state_init(struct pxfer_state *st, const struct pxfer_machine *m,
		      unsigned int first);

/* pxfer_machine_accepts - whether message type @type may come in @state */
int pxfer_machine_accepts(const struct pxfer_machine *m, unsigned int state,
			  unsigned int type);

/* pxfer_machine_edge - whether @m goes from state @from to @to */
int pxfer_machine_edge(const struct pxfer_machine *m, unsigned int from,
		       unsigned int to);

/* pxfer_machine_name - the name docs/protocol.md gives @state */
const char *pxfer_machine_name(const struct pxfer_machine *m,
			       unsigned int state);

static inline int pxfer_state_accepts(const struct pxfer_state *st,
				      unsigned int type)
{
	return pxfer_machine_accepts(st->m, st->now, type);
}

static inline const char *pxfer_state_name(const struct pxfer_state *st)
{
	return pxfer_machine_name(st->m, st->now);
}

/*
 * pxfer_state_enter - go to state @to: 0, or -EINVAL (and stay) when no
 * edge leads there from where the session is. Every state but the
 * failure state counts towards reached.
 */
int pxfer_state_enter(struct pxfer_state *st, unsigned int to);

#endif
