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
