// SPDX-License-Identifier: MIT
/*
 * pxfer_send: the call, across its sessions. It checks the options, then
 * runs sessions (src/send/, one each) until everything is there: another
 * after a lost connection (--retries), a second pass for files another
 * session of the receiver held; and it keeps the call's statistics whole
 * across them.
 */
#include <poll.h>
#include <string.h>

#include "core/auth.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/sys.h"
#include "engine/fail.h"
#include "send/sender.h"

/* wait @secs unless stopped: 0, or -1 when @stop was raised */
static int retry_sleep(const struct pxfer_stop *stop, double secs)
{
	struct pollfd p = { .fd = pxfer_stop_fd(stop), .events = POLLIN };
	double end = pxfer_now() + secs;

	while (!pxfer_stop_raised(stop)) {
		double left = end - pxfer_now();

		if (left <= 0)
			return 0;
		poll(&p, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1);
	}
	return -1;
}

/* the counts of a call's statistics a session may count again */
struct send_before {
	uint64_t failed, same, bsame, dirs, links, files, bytes;
};

/*
 * After a session: what it counted that an earlier one of the call had
 * counted already comes off. A later session finds what an earlier one
 * sent there already, which is not what was there before the call;
 * each session makes every directory and link again; and what failed is
 * tried again by the next session, if any (*@failed_now: what failed in
 * this one).
 */
static void stats_merge(struct pxfer_stats *st, const struct send_before *b,
			uint64_t *credited, uint64_t *credited_bytes,
			uint64_t *failed_now)
{
	uint64_t same = st->files_same - b->same;
	uint64_t bsame = st->bytes_same - b->bsame;

	same = same < b->files - *credited ? same : b->files - *credited;
	bsame = bsame < b->bytes - *credited_bytes ? bsame : b->bytes - *credited_bytes;
	st->files_same -= same;
	st->bytes_same -= bsame;
	*credited += same;
	*credited_bytes += bsame;
	if (st->dirs - b->dirs < b->dirs)
		st->dirs = b->dirs;
	else
		st->dirs -= b->dirs;
	if (st->links - b->links < b->links)
		st->links = b->links;
	else
		st->links -= b->links;
	*failed_now = st->files_failed;
	st->files_failed = b->failed;
}

/*
 * Sessions until everything is there. A session that lost its connection
 * (once one reached the receiver) is followed by another after a wait
 * (--retries, --retry-wait, doubling up to PXFER_RETRY_WAIT_CAP): the
 * receiver kept what arrived, so the next one sends only the rest. Files
 * that another session of the receiver held get one more session, at
 * once (files that changed while they were sent are sent again in the
 * same one).
 */
static int send_run(const struct pxfer_send_opts *o, struct pxfer_stats *st)
{
	double t0 = pxfer_now(), wait;
	struct send_pass p = { 0 };
	uint64_t credited = 0, credited_bytes = 0, failed_now = 0;
	int code, retries = 0, ever_welcomed = 0;
	char why[400];

	if (pxfer_send_opts_check(o, why, sizeof(why)))
		return pxfer_error("%s", why), PXFER_EXIT_USAGE;
	if (pxfer_auth_init()) {
		pxfer_error("cannot initialise the crypto library");
		return PXFER_EXIT_LOCAL;
	}
	/* before the call's threads start (best effort: it only saves time) */
	pxfer_fd_table_reserve(PXFER_FD_RESERVE);
	wait = o->retry_wait;
	for (;;) {
		struct send_before b = {
			.failed = st->files_failed, .same = st->files_same,
			.bsame = st->bytes_same, .dirs = st->dirs,
			.links = st->links, .files = st->files,
			.bytes = p.done_size,
		};

		st->sessions++;
		code = send_session_run(o, st, &p);
		stats_merge(st, &b, &credited, &credited_bytes, &failed_now);
		ever_welcomed |= p.welcomed;
		/* a receiver that was never reached is not retried (the
		 * address or port may be wrong, and the user should know),
		 * nor one that ended the session itself (it said why) */
		if (code == PXFER_EXIT_NET && ever_welcomed && !p.peer_ended &&
		    retries < o->retries && !pxfer_stop_raised(o->stop)) {
			retries++;
			/* --transport auto: an rdma session that could not
			 * even start goes on over tcp */
			if (!p.welcomed && !p.transport && st->transport &&
			    !strcmp(st->transport, "rdma") &&
			    (!o->transport || !strcmp(o->transport, "auto"))) {
				p.transport = "tcp";
				pxfer_info("pxfer: rdma to %s failed; going on over tcp (--transport auto)",
				     o->host);
			}
			pxfer_info("pxfer: trying again in %.0f s (retry %d of %d); what arrived is kept",
			     wait, retries, o->retries);
			if (retry_sleep(o->stop, wait)) {
				code = PXFER_EXIT_INTR;
				break;
			}
			wait = wait * 2 > PXFER_RETRY_WAIT_CAP ? PXFER_RETRY_WAIT_CAP
							      : wait * 2;
			continue;
		}
		if ((code == PXFER_EXIT_OK || code == PXFER_EXIT_FAIL) && p.again) {
			/* files busy on the receiver: a second pass at
			 * once, only once; then the next retry */
			if (!p.pass) {
				p.pass = 1;
				continue;
			}
			if (retries < o->retries && !retry_sleep(o->stop, wait)) {
				retries++;
				continue;
			}
			code = PXFER_EXIT_FAIL;
		}
		break;
	}
	st->files_failed = failed_now;
	st->seconds = pxfer_now() - t0;
	return code;
}

/* the call's log, on this thread and on every thread it starts */
int pxfer_send(const struct pxfer_send_opts *o, struct pxfer_stats *st)
{
	struct pxfer_log log, *old;
	int code;

	memset(st, 0, sizeof(*st));
	if (pxfer_log_init(&log, o->log, o->log_arg, o->verbose))
		return PXFER_EXIT_LOCAL;
	old = pxfer_log_attach(&log);
	code = send_run(o, st);
	pxfer_log_attach(old);
	pxfer_log_release(&log);
	return code;
}
