/* SPDX-License-Identifier: MIT */
/*
 * What the receiver (src/recv/) offers the layer above it: a server that
 * runs its sessions. The call, pxfer_recv, is src/api/recv.c's: it checks
 * the options and sets up what the whole call needs first.
 */
#ifndef PXFER_RECV_SERVER_H
#define PXFER_RECV_SERVER_H

#include "pxfer/pxfer.h"
#include "recv/forward.h"
#include "recv/metrics.h"

/*
 * recv_server_run - listen and serve as @o says, counting into @m (or into
 * its own metrics when NULL), until stopped or after one session with
 * o->once: a PXFER_EXIT_* status. @o is checked (pxfer_recv_opts_check),
 * the crypto library initialised; the caller's log is attached. A
 * session given a chain (CHAIN) is forwarded through @fwd; with NULL,
 * such a session is refused.
 */
int recv_server_run(const struct pxfer_recv_opts *o,
		    struct pxfer_recv_metrics *m,
		    const struct recv_forward *fwd);

#endif
