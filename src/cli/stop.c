// SPDX-License-Identifier: MIT
/*
 * The command's signals. The library handles none: SIGINT and SIGTERM
 * raise the stop that the command gives its call (a sender ends, exit
 * 130; a receiver drains, and stops at a second signal), and SIGPIPE is
 * ignored, as a command that writes to sockets and pipes does.
 */
#include <signal.h>
#include <string.h>

#include "pxfer/pxfer.h"
#include "cli.h"
#include "core/log.h"

/* the stop the handlers raise, for the rest of the process's life (a
 * signal may come while it exits): a handler reaches nothing else */
static struct pxfer_stop signal_stop;

static void on_signal(int sig)
{
	(void)sig;
	pxfer_stop_raise(&signal_stop);
}

struct pxfer_stop *cli_stop_on_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	int ret = pxfer_stop_init(&signal_stop);

	if (ret) {
		pxfer_error("cannot set up the signal handlers: %s", strerror(-ret));
		return NULL;
	}
	/* no SA_RESTART: a blocking call returns EINTR and the stop is
	 * seen at once */
	sigemptyset(&sa.sa_mask);
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return &signal_stop;
}
