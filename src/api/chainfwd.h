/* SPDX-License-Identifier: MIT */
/*
 * The forwarding of a receiver's sessions that are links of a broadcast
 * chain (docs/broadcast.md): what pxfer_recv gives its server.
 */
#ifndef PXFER_API_CHAINFWD_H
#define PXFER_API_CHAINFWD_H

#include "pxfer/pxfer.h"
#include "recv/forward.h"

/* pxfer_chain_forward - @fw forwards with @o's secret and transport */
void pxfer_chain_forward(struct recv_forward *fw,
			 const struct pxfer_recv_opts *o);

#endif
