// SPDX-License-Identifier: MIT
/*
 * pxfer_recv: the call. It checks the options, attaches the call's log
 * and sets up what the whole call needs, then leaves the serving to the
 * receiver's server (src/recv/server.c).
 */
#include "api/api.h"
#include "api/chainfwd.h"
#include "core/auth.h"
#include "core/limits.h"
#include "core/log.h"
#include "recv/server.h"

static int recv_run(const struct pxfer_recv_opts *o,
		    struct pxfer_recv_metrics *m)
{
	struct recv_forward fw;
	char why[400];

	if (pxfer_recv_opts_check(o, why, sizeof(why)))
		return pxfer_error("%s", why), PXFER_EXIT_USAGE;
	if (pxfer_auth_init())
		return pxfer_error("cannot initialise the crypto library"), PXFER_EXIT_LOCAL;
	/* before the call's threads start (best effort: it only saves time) */
	pxfer_fd_table_reserve(PXFER_FD_RESERVE);
	pxfer_chain_forward(&fw, o);
	return recv_server_run(o, m, &fw);
}

/* the call's log, on this thread and on every thread it starts */
int pxfer_recv_metered(const struct pxfer_recv_opts *o,
		       struct pxfer_recv_metrics *m)
{
	struct pxfer_log log, *old;
	int code;

	if (pxfer_log_init(&log, o->log, o->log_arg, o->verbose))
		return PXFER_EXIT_LOCAL;
	old = pxfer_log_attach(&log);
	code = recv_run(o, m);
	pxfer_log_attach(old);
	pxfer_log_release(&log);
	return code;
}

int pxfer_recv(const struct pxfer_recv_opts *o)
{
	return pxfer_recv_metered(o, NULL);
}
