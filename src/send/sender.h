/* SPDX-License-Identifier: MIT */
/*
 * What the sender (src/send/) offers the layer above it: one session. The
 * call, pxfer_send, is src/api/send.c's: it checks the options, and runs
 * sessions until everything is there (retries, a second pass).
 */
#ifndef PXFER_SEND_SENDER_H
#define PXFER_SEND_SENDER_H

#include <stdint.h>
#include "pxfer/pxfer.h"

struct send_source;
struct pxfer_chain_hop;
struct pxfer_chain_report;

/* what a session is asked to do, and what it did besides @st */
struct send_pass {
	unsigned int pass;	/* 0, or 1: files busy on the receiver again */
	const char *transport;	/* instead of o->transport, or NULL */
	unsigned int again;	/* files that want another session (changed
				 * while they were sent, or busy) */
	int welcomed;		/* the handshake completed */
	int peer_ended;		/* the receiver ended the session itself */
	uint64_t done_size;	/* sizes of the files completed: added to */
	/* where the entries come from instead of a walk of o->paths
	 * (send/source.h), or NULL */
	struct send_source *source;
	/* a broadcast chain (docs/broadcast.md): the hops the receiver is
	 * to forward to, sent as CHAIN right after the WELCOME (nchain 0:
	 * none), and what its CHAIN_REPORTs said, in reports[] (room for
	 * PXFER_CHAIN_MAX; nreports set) */
	const struct pxfer_chain_hop *chain;
	unsigned int nchain;
	struct pxfer_chain_report *reports;
	unsigned int nreports;
	/* seconds the receiver may take nothing while files are in flight
	 * before the session fails as stalled (PXFER_EXIT_NET); 0: never */
	int stall_secs;
	int stalled;		/* it did */
	/* a forwarding node's: the chunks of the ranges its source gives
	 * with a relay entry come from there (engine/relay.h), or NULL */
	struct pxfer_relay *relay;
};

/*
 * send_session_run - one session of @o's transfer: connect, send what the
 * receiver does not have, tear down. Adds to @st what it did (chunks,
 * bytes_sent, files...) and fills @p. A PXFER_EXIT_* status. @o is
 * checked (pxfer_send_opts_check), the crypto library initialised.
 */
int send_session_run(const struct pxfer_send_opts *o, struct pxfer_stats *st,
		     struct send_pass *p);

#endif
