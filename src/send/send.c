// SPDX-License-Identifier: MIT
/*
 * One session of pxfer_send (src/api/send.c runs them), from start to
 * end. It chooses the transport, starts the tree walk, authenticates on
 * the control connection (engine/handshake.c), makes one data connection
 * and ring per worker, then leaves the transfer to the coordinator
 * (coord.c) and the workers (worker.c), and tears everything down
 * whichever way it ended.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "core/escape.h"
#include "core/log.h"
#include "core/sys.h"
#include "send/send.h"
#include "send/sender.h"

#define BUSY_FIRST 0.25	/* s before the first try again */
#define BUSY_MAX 8.0

static int pick_transport(struct send_session *s)
{
	int code;

	pxfer_transport_choice_init(&s->tc, s->transport ? s->transport :
				    s->o->transport, s->o->device,
				    s->o->gid_index, s->o->bind);
	code = pxfer_transport_resolve(&s->tc);
	if (code)
		return pxfer_fail_quiet(&s->b.fail, code);
	s->b.t = pxfer_transport_for_host(&s->tc, s->o->host);
	return 0;
}

/*
 * The receiver said it is busy (all its sessions taken): close the
 * connection and wait before the next try, longer each time (0.25 s
 * doubling to 8 s, less a random part of up to a quarter, so that the
 * senders that wait do not all come back at once), within --wait. 0 to
 * try again, or -1 after failing the session.
 */
static int busy_wait(struct send_session *s, double end, double *delay)
{
	const struct pxfer_error *e = &s->b.msg.u.error;
	double now = pxfer_now(), d = *delay * (1 - randombytes_uniform(250) / 1000.0);
	struct pollfd p = { .fd = pxfer_stop_fd(s->o->stop), .events = POLLIN };
	/* a REFUSE comes before any proof of the secret: anybody's text */
	char why[PXFER_ESCAPE_LEN(PXFER_TEXT_MAX)];

	pxfer_escape_reason(why, sizeof(why), e->text, e->text_len, e->code);
	if (now + d > end)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_BUSY,
				  "the receiver %s is still busy after %d s (%s); try again later, or wait longer with --wait",
				  s->b.cconn->peer, s->o->wait_secs, why);
	if (*delay == BUSY_FIRST)
		pxfer_info("pxfer: the receiver %s is busy (%s); trying again for up to %d s",
		     s->b.cconn->peer, why, s->o->wait_secs);
	s->b.t->close(s->b.cconn);
	s->b.cconn = NULL;
	poll(&p, 1, (int)(d * 1000));
	if (pxfer_session_stopped(&s->b))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_INTR,
				  "interrupted while waiting for a busy receiver");
	*delay = *delay * 2 > BUSY_MAX ? BUSY_MAX : *delay * 2;
	return 0;
}

static int handshake(struct send_session *s)
{
	const struct pxfer_send_opts *o = s->o;
	double end = pxfer_now() + o->wait_secs, delay = BUSY_FIRST;
	struct pxfer_challenge ch;
	struct pxfer_hello h = { 0 };
	int r;

	h.workers = s->workers;
	h.chunk_size = o->chunk_size;
	h.flags = (o->fsync ? PXFER_HELLO_FSYNC : 0) |
		  (o->chunk_auto ? PXFER_HELLO_CHUNK_AUTO : 0) |
		  (o->encrypt ? PXFER_HELLO_ENCRYPT :
		   o->integrity && !strcmp(o->integrity, "checksum") ?
		   PXFER_HELLO_CHECKSUM : 0) |
		  (o->cipher && !strcmp(o->cipher, "chacha20-poly1305") ?
		   PXFER_HELLO_CHACHA : 0) |
		  (o->verify ? PXFER_HELLO_VERIFY : 0);
	if (o->dest) {
		h.dest_len = strlen(o->dest);
		memcpy(h.dest, o->dest, h.dest_len + 1);
	}
	do {
		if (pxfer_hs_connect(&s->b, &s->to, 0, &s->b.cconn, &ch) ||
		    pxfer_session_enter(&s->b, PXFER_SEND_AUTHENTICATING))
			return -1;
		r = pxfer_hs_hello(&s->b, &o->secret, &ch, &h, o->timeout_ms);
	} while (r > 0 && !pxfer_session_enter(&s->b, PXFER_SEND_CONNECTING) &&
		 !busy_wait(s, end, &delay));
	if (r)
		return -1;
	pxfer_verbose("connected to %s over %s: %u workers, %u KiB chunks, %u slots each, data %s",
		s->b.cconn->peer, s->b.t->name, s->b.wel.workers,
		s->b.wel.chunk_size >> 10, s->b.wel.slots,
		pxfer_session_prot_name(&s->b));
	return 0;
}

/* start making the worker's ring while the data connections are made */
static int worker_prepare(struct send_session *s, struct sworker *w)
{
	int ret;

	w->s = s;
	w->slots = calloc(s->b.wel.slots, sizeof(*w->slots));
	if (!w->slots)
		return -ENOMEM;
	ret = pxfer_tagger_init(&w->tag, &s->b, w->b.idx, 1);
	if (ret)
		return ret;
	/* a test's switch: data connection 0 given up after N chunks, as if
	 * it broke (the tests of re-admission, where a link cannot be
	 * taken down and brought back: rxe) */
	if (!w->b.idx && pxfer_env_uint("PXFER_TEST_LOSE_AFTER", 1, UINT_MAX,
					&w->lose_after) < 0)
		pxfer_warning("PXFER_TEST_LOSE_AFTER is not a number of chunks: ignored");
	return pxfer_worker_prepare(&w->b, s->b.t, s->o->io, s->b.wel.slots,
				    s->b.wel.chunk_size, 0, &s->pool);
}

/*
 * The rails: the local ones paired with the addresses the receiver
 * offered. Without a pair the data connections go where the control
 * connection went, and the user hears why.
 */
static void rails_pair(struct send_session *s)
{
	unsigned int skipped, per;

	if (!s->nlocal)
		return;
	if (!s->b.wel.nrails) {
		pxfer_warning("the receiver %s offers no addresses for data (start it with --rails or a --device list): the data goes over one rail",
			s->b.cconn->peer);
		return;
	}
	pxfer_rails_pair(s->local, (unsigned int)s->nlocal, &s->b.wel, &s->rails,
			 &skipped);
	if (!s->rails.n) {
		pxfer_warning("none of the %d local rails is on a subnet of an address the receiver %s offers: the data goes over one rail",
			s->nlocal, s->b.cconn->peer);
		return;
	}
	if (skipped)
		pxfer_warning("%u of the %d local rails are on no subnet the receiver %s offers; they carry nothing",
			skipped, s->nlocal, s->b.cconn->peer);
	if (s->b.wel.workers < s->rails.n)
		pxfer_warning("%u data connections for %u rails: only %u of them carry data (-j counts them all)",
			s->b.wel.workers, s->rails.n, s->b.wel.workers);
	per = s->b.wel.workers / s->rails.n;
	for (unsigned int i = 0; i < s->rails.n; i++)
		pxfer_verbose("rail %u: %s, %u data connection(s)%s", i,
			s->rails.r[i].name,
			per + (i < s->b.wel.workers % s->rails.n),
			s->rails.r[i].local.numa_node >= 0 ? ", NUMA node set" : "");
}

static int worker_connect(struct send_session *s, struct sworker *w)
{
	struct pxfer_hs_target to = s->to;
	struct pxfer_challenge ch;
	int ret;

	if (s->rails.n) {
		const struct pxfer_rail *r = &s->rails.r[w->b.rail];

		to.host = r->remote;
		to.bind = r->local.addr;
	}
	if (pxfer_hs_connect(&s->b, &to, s->b.wel.slots, &w->b.conn, &ch) ||
	    pxfer_hs_data_hello(&s->b, &w->b, &ch, s->o->timeout_ms))
		return -1;
	ret = pxfer_worker_attach(&w->b, s->b.t, NULL, NULL);
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot set up worker %u: %s", w->b.idx,
				  pxfer_worker_setup_error(ret));
	return 0;
}

static int workers_start(struct send_session *s)
{
	unsigned int n = s->b.wel.workers;
	struct pxfer_err err;
	int ret;

	if (pxfer_transport_memlock(s->b.t, n, s->b.wel.slots,
				    s->b.wel.chunk_size, &err))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "%s",
				  pxfer_err_msg(&err));
	s->w = calloc(n, sizeof(*s->w));
	/* every slot of every worker could wait to go again */
	if (!s->w || pxfer_resendq_init(&s->resendq, n * s->b.wel.slots) ||
	    pxfer_workers_init(&s->b.workers, n))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	rails_pair(s);
	for (unsigned int i = 0; i < n; i++) {
		pxfer_workers_add(&s->b.workers, &s->w[i].b);
		s->w[i].b.rail = s->rails.n ? i % s->rails.n : 0;
		s->w[i].b.numa_node = s->rails.n ?
			s->rails.r[s->w[i].b.rail].local.numa_node : -1;
	}
	for (unsigned int i = 0; i < n; i++) {
		ret = worker_prepare(s, &s->w[i]);
		if (ret)
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "cannot set up worker %u: %s", i,
					  pxfer_worker_setup_error(ret));
	}
	for (unsigned int i = 0; i < n; i++)
		if (worker_connect(s, &s->w[i]))
			return -1;
	return pxfer_session_start_workers(&s->b, send_worker_main, "send");
}

static void workers_stop(struct send_session *s)
{
	/* after the workers: they take from the queue of chunks to send
	 * again */
	if (!s->w) {
		send_relay_end(s);
		pxfer_resendq_release(&s->resendq);
		return;
	}
	send_rejoin_stop(s);
	pxfer_workers_stop(&s->b.workers, s->b.t, pxfer_failed(&s->b.fail));
	for (unsigned int i = 0; i < s->b.workers.n; i++) {
		pxfer_worker_release(&s->w[i].b, s->b.t);
		pxfer_tagger_release(&s->w[i].tag);
	}
	/* with the connections closed, nothing sends from another's ring */
	send_relay_end(s);
	for (unsigned int i = 0; i < s->b.workers.n; i++)
		free(s->w[i].slots);
	pxfer_workers_release(&s->b.workers);
	free(s->w);
	s->w = NULL;
	pxfer_resendq_release(&s->resendq);
}

/*
 * What the states the session reached made (engine/state.h): the
 * scheduler, made whole as AUTHENTICATING ends (session_parts). The workers, the manifest, the checks, the walk
 * and the pool release what they hold in any state (all zero until
 * made); the control channel says itself whether it was made
 * (ctrl_init: on each side at another point inside a state).
 */
static void session_release(struct send_session *s)
{
	unsigned int reached = s->b.state.reached;

	if (pxfer_failed(&s->b.fail) && s->b.state.now != PXFER_SEND_DONE)
		pxfer_session_enter(&s->b, PXFER_SEND_FAILED);
	workers_stop(s);
	/* no check reads a file once it is closed */
	pxfer_check_release(&s->check);
	send_manifest_release(&s->man, s->source);
	pxfer_session_release(&s->b);
	if (reached >= PXFER_SEND_OPENING_DATA)
		pxfer_sched_release(&s->sched);
	pxfer_walk_release(&s->walk);
	pxfer_pool_release(&s->pool);
}

/*
 * The parameters are agreed: the scheduler, the manifest and the checks, made whole or (unwound) not at all; the
 * session then opens its data connections. 0, or -1 after failing it.
 */
static int session_parts(struct send_session *s)
{
	if (pxfer_sched_init(&s->sched, s->b.wel.chunk_size, PXFER_SEG_MAX))
		goto out;
	pxfer_fileend_init(&s->ends, &s->sched, &s->b.ctrl, &s->b.fail,
			   s->o->verify);
	/* the manifest and the checks: released in any state */
	if (send_manifest_init(&s->man, s->b.wel.max_files) ||
	    pxfer_check_init(&s->check, 0, s->b.ctrl.wake_fd))
		goto out_sched;
	return pxfer_session_enter(&s->b, PXFER_SEND_OPENING_DATA);
out_sched:
	pxfer_sched_release(&s->sched);
out:
	return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
}

/* the hops the receiver forwards to (CHAIN), before any FILE; 0 or -1 */
static int send_chain(struct send_session *s)
{
	struct pxfer_msg m = { .type = PXFER_MSG_CHAIN };

	for (unsigned int i = 0; i < s->p->nchain; i++) {
		m.u.hop = s->p->chain[i];
		if (pxfer_ctrl_queue(&s->b.ctrl, &m))
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "cannot queue the chain's hop %u: out of memory",
					  i);
	}
	return 0;
}

/* everything up to the transfer itself; 0, or -1 when the session failed */
static int session_start(struct send_session *s)
{
	const struct pxfer_send_opts *o = s->o;
	char q[PXFER_QUOTE_MAX];
	const char *bad = NULL;
	int ret;

	pxfer_state_init(&s->b.state, &pxfer_send_machine, PXFER_SEND_CONNECTING);
	if (pick_transport(s))
		return -1;
	s->st->transport = s->b.t->name;
	s->nlocal = pxfer_transport_rails(&s->tc, s->b.t, o->rails, s->local);
	if (s->nlocal < 0)
		return pxfer_fail_quiet(&s->b.fail, -s->nlocal);
	if ((o->rails || s->tc.devices) && !s->nlocal)
		pxfer_warning("--rails %s: no address of this host is up for %s; the data goes over one rail",
			o->rails ? o->rails : s->tc.devices, s->b.t->name);
	/* -j counts every data connection; unless it was given, each rail
	 * gets as many */
	s->workers = (unsigned int)o->workers;
	if (o->workers_auto && s->nlocal > 1) {
		s->workers = (s->workers + s->nlocal - 1) / s->nlocal * s->nlocal;
		if (s->workers > PXFER_WORKERS_MAX)
			s->workers = PXFER_WORKERS_MAX / s->nlocal * s->nlocal;
	}
	s->to.host = o->host;
	s->to.port = o->port;
	s->to.bind = s->tc.bind;
	s->to.timeout_ms = o->timeout_ms;
	/*
	 * A transport that pins the rings touches every page of them before
	 * the first byte moves: fault in what a receiver with the default
	 * --ring-mem asks for while the connections are made (rings that
	 * do not fit are mapped as before).
	 */
	if (s->b.t->pins_memory &&
	    pxfer_pool_init(&s->pool, pxfer_pool_size(PXFER_DEFAULT_RING_MEM,
						      s->b.t->ring_hdr)))
		pxfer_verbose("ring memory made when the session starts");
	ret = s->source ? 0 : pxfer_walk_init(&s->walk, o->paths, o->npaths, &bad);
	if (ret == -EINVAL)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_USAGE,
				  "cannot send %s: it is not a regular file or a directory (fifos, sockets and devices are not sent)",
				  pxfer_quote_str(q, sizeof(q), bad));
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_USAGE,
				  ret == -EEXIST ? "two sources are named %s; they would overwrite each other"
						 : "cannot read %s: %s",
				  pxfer_quote_str(q, sizeof(q), bad ? bad : "?"),
				  strerror(-ret));
	s->walk.open_files = 1;
	if (handshake(s) || pxfer_session_ctrl_start(&s->b) ||
	    pxfer_session_seal(&s->b, 1) || send_chain(s) ||
	    session_parts(s) || workers_start(s))
		return -1;
	return pxfer_session_enter(&s->b, PXFER_SEND_STREAMING);
}

/* one session: everything it used is released when it returns */
int send_session_run(const struct pxfer_send_opts *o, struct pxfer_stats *st,
		     struct send_pass *p)
{
	struct send_session *s;
	int code;

	p->again = 0;
	p->welcomed = 0;
	p->peer_ended = 0;
	s = calloc(1, sizeof(*s));
	if (!s || pxfer_session_init(&s->b, "receiver", o->stop)) {
		pxfer_error("out of memory");
		free(s);
		return PXFER_EXIT_LOCAL;
	}
	s->o = o;
	s->st = st;
	s->pass = p->pass;
	s->transport = p->transport;
	s->source = p->source;
	s->relay = p->relay;
	s->p = p;
	p->nreports = 0;
	p->stalled = 0;
	pxfer_progress_init(&s->prog, o->progress);
	if (!session_start(s))
		send_coordinate(s);
	if (pxfer_failed(&s->b.fail) &&
	    pxfer_fail_code(&s->b.fail) == PXFER_EXIT_INTEGRITY)
		pxfer_session_abort(&s->b, EBADMSG, s->b.fail.msg, 1000);
	else if (pxfer_failed(&s->b.fail))
		pxfer_session_abort(&s->b, ECANCELED,
				    pxfer_session_stopped(&s->b) ? "the sender was interrupted"
								 : "the sender failed", 0);
	send_draw_progress(s, 1);
	pxfer_progress_end(&s->prog);
	st->chunks += atomic_load(&s->chunks);
	st->bytes_sent += atomic_load(&s->bytes_sent);
	p->again = s->again;
	p->done_size += s->done_size;
	p->welcomed = s->b.wel.workers != 0;
	p->peer_ended = s->b.peer_ended;
	if (pxfer_failed(&s->b.fail))
		code = pxfer_fail_code(&s->b.fail);
	else if (s->nospace)
		code = PXFER_EXIT_LOCAL;	/* the receiver's disk is full */
	else
		code = st->files_failed ? PXFER_EXIT_FAIL : PXFER_EXIT_OK;
	session_release(s);
	free(s);
	return code;
}
