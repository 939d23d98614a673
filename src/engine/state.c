// SPDX-License-Identifier: MIT
/*
 * The two state machines of docs/protocol.md: for each state the
 * messages the peer may send in it, and the states it goes to. Nothing
 * else decides whether a message belongs where a session is.
 */
#include <errno.h>

#include "core/proto.h"
#include "engine/state.h"

#define M(t)	(1u << PXFER_MSG_##t)
#define S(s)	(1u << (s))

_Static_assert(PXFER_MSG_TYPE_MAX < 32, "a state's messages fit a uint32_t");

/* ---- sender: what the receiver may send ---------------------------------- */

static const char *const send_names[PXFER_SEND_STATES] = {
	[PXFER_SEND_CONNECTING] = "CONNECTING",
	[PXFER_SEND_AUTHENTICATING] = "AUTHENTICATING",
	[PXFER_SEND_OPENING_DATA] = "OPENING_DATA",
	[PXFER_SEND_STREAMING] = "STREAMING",
	[PXFER_SEND_FINISHING] = "FINISHING",
	[PXFER_SEND_DONE] = "DONE",
	[PXFER_SEND_FAILED] = "FAILED",
};

static const uint32_t send_accepts[PXFER_SEND_STATES] = {
	/* connected: the receiver's CHALLENGE */
	[PXFER_SEND_CONNECTING] = M(CHALLENGE),
	[PXFER_SEND_AUTHENTICATING] = M(WELCOME) | M(REFUSE),
	/* the control connection is read only to hear why a data
	 * connection failed; the data connections' handshake is theirs */
	[PXFER_SEND_OPENING_DATA] = M(ABORT),
	[PXFER_SEND_STREAMING] = M(FILE_OK) | M(FILE_ERR) | M(FILE_DONE) |
				 M(CREDIT) | M(PING) | M(DATA_LOST) | M(ABORT),
	/* no file is in flight: slots written last, a connection lost late */
	[PXFER_SEND_FINISHING] = M(CREDIT) | M(PING) | M(DATA_LOST) |
				 M(ACK) | M(CHAIN_REPORT) | M(ABORT),
	[PXFER_SEND_DONE] = 0,
	[PXFER_SEND_FAILED] = 0,
};

#define SEND_FAIL S(PXFER_SEND_FAILED)

static const uint32_t send_edges[PXFER_SEND_STATES] = {
	[PXFER_SEND_CONNECTING] = S(PXFER_SEND_AUTHENTICATING) | SEND_FAIL,
	/* a busy receiver (REFUSE(EBUSY)): a new connection after a wait */
	[PXFER_SEND_AUTHENTICATING] = S(PXFER_SEND_OPENING_DATA) |
				      S(PXFER_SEND_CONNECTING) | SEND_FAIL,
	[PXFER_SEND_OPENING_DATA] = S(PXFER_SEND_STREAMING) | SEND_FAIL,
	[PXFER_SEND_STREAMING] = S(PXFER_SEND_FINISHING) | SEND_FAIL,
	[PXFER_SEND_FINISHING] = S(PXFER_SEND_DONE) | SEND_FAIL,
	[PXFER_SEND_DONE] = 0,
	[PXFER_SEND_FAILED] = 0,
};

const struct pxfer_machine pxfer_send_machine = {
	.side = "sender",
	.n = PXFER_SEND_STATES,
	.names = send_names,
	.accepts = send_accepts,
	.edges = send_edges,
	.failed = PXFER_SEND_FAILED,
};

/* ---- receiver: what the sender may send ---------------------------------- */

static const char *const recv_names[PXFER_RECV_STATES] = {
	[PXFER_RECV_LISTENING] = "LISTENING",
	[PXFER_RECV_AUTHENTICATING] = "AUTHENTICATING",
	[PXFER_RECV_ACCEPTING_DATA] = "ACCEPTING_DATA",
	[PXFER_RECV_RECEIVING] = "RECEIVING",
	[PXFER_RECV_FINISHING] = "FINISHING",
	[PXFER_RECV_CLEANUP] = "CLEANUP",
};

static const uint32_t recv_accepts[PXFER_RECV_STATES] = {
	/* the first message of a connection (the server's front door) */
	[PXFER_RECV_LISTENING] = M(HELLO) | M(DATA_HELLO),
	/* the HELLO is in hand; what follows it waits for RECEIVING */
	[PXFER_RECV_AUTHENTICATING] = 0,
	/* on the data connections (the control connection is read, and
	 * what it brings kept for RECEIVING) */
	[PXFER_RECV_ACCEPTING_DATA] = M(DATA_HELLO),
	[PXFER_RECV_RECEIVING] = M(FILE) | M(FILE_SUM) | M(FILE_END) |
				 M(FIN) | M(PING) | M(DATA_LOST) |
				 M(DATA_SENT) | M(CHAIN) | M(ABORT),
	/* ACK is queued: nothing more is read */
	[PXFER_RECV_FINISHING] = 0,
	[PXFER_RECV_CLEANUP] = 0,
};

#define RECV_FAIL S(PXFER_RECV_CLEANUP)

static const uint32_t recv_edges[PXFER_RECV_STATES] = {
	[PXFER_RECV_LISTENING] = S(PXFER_RECV_AUTHENTICATING),
	[PXFER_RECV_AUTHENTICATING] = S(PXFER_RECV_ACCEPTING_DATA) | RECV_FAIL,
	[PXFER_RECV_ACCEPTING_DATA] = S(PXFER_RECV_RECEIVING) | RECV_FAIL,
	[PXFER_RECV_RECEIVING] = S(PXFER_RECV_FINISHING) | RECV_FAIL,
	[PXFER_RECV_FINISHING] = S(PXFER_RECV_LISTENING) | RECV_FAIL,
	[PXFER_RECV_CLEANUP] = S(PXFER_RECV_LISTENING),
};

const struct pxfer_machine pxfer_recv_machine = {
	.side = "receiver",
	.n = PXFER_RECV_STATES,
	.names = recv_names,
	.accepts = recv_accepts,
	.edges = recv_edges,
	.failed = PXFER_RECV_CLEANUP,
};

/* ---- either ---------------------------------------------------------------- */

int pxfer_machine_accepts(const struct pxfer_machine *m, unsigned int state,
			  unsigned int type)
{
	if (state >= m->n || type < 1 || type > PXFER_MSG_TYPE_MAX)
		return 0;
	return !!(m->accepts[state] & 1u << type);
}

int pxfer_machine_edge(const struct pxfer_machine *m, unsigned int from,
		       unsigned int to)
{
	if (from >= m->n || to >= m->n)
		return 0;
	return !!(m->edges[from] & S(to));
}

const char *pxfer_machine_name(const struct pxfer_machine *m,
			       unsigned int state)
{
	return state < m->n ? m->names[state] : "UNKNOWN";
}

void pxfer_state_init(struct pxfer_state *st, const struct pxfer_machine *m,
		      unsigned int first)
{
	st->m = m;
	st->now = first;
	st->reached = first;
}

int pxfer_state_enter(struct pxfer_state *st, unsigned int to)
{
	if (!pxfer_machine_edge(st->m, st->now, to))
		return -EINVAL;
	st->now = to;
	/* how far it got, for the teardown: the states come in order */
	if (to != st->m->failed && to > st->reached)
		st->reached = to;
	return 0;
}
