// SPDX-License-Identifier: MIT
/*
 * pxfer_send: the sender's session from start to end. It chooses the
 * transport, starts the tree walk, authenticates on the control
 * connection (engine/handshake.c), makes one data connection and ring per
 * worker, then leaves the transfer to the coordinator (coord.c) and the
 * workers (worker.c), and tears everything down whichever way it ended.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "core/escape.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/netaddr.h"
#include "core/sys.h"
#include "send/send.h"

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
		info("pxfer: the receiver %s is busy (%s); trying again for up to %d s",
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
		if (pxfer_hs_connect(&s->b, &s->to, 0, &s->b.cconn, &ch))
			return -1;
		r = pxfer_hs_hello(&s->b, &o->secret, &ch, &h, o->timeout_ms);
	} while (r > 0 && !busy_wait(s, end, &delay));
	if (r)
		return -1;
	verbose("connected to %s over %s: %u workers, %u KiB chunks, %u slots each, data %s",
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
		warning("PXFER_TEST_LOSE_AFTER is not a number of chunks: ignored");
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
		warning("the receiver %s offers no addresses for data (start it with --rails or a --device list): the data goes over one rail",
			s->b.cconn->peer);
		return;
	}
	pxfer_rails_pair(s->local, (unsigned int)s->nlocal, &s->b.wel, &s->rails,
			 &skipped);
	if (!s->rails.n) {
		warning("none of the %d local rails is on a subnet of an address the receiver %s offers: the data goes over one rail",
			s->nlocal, s->b.cconn->peer);
		return;
	}
	if (skipped)
		warning("%u of the %d local rails are on no subnet the receiver %s offers; they carry nothing",
			skipped, s->nlocal, s->b.cconn->peer);
	if (s->b.wel.workers < s->rails.n)
		warning("%u data connections for %u rails: only %u of them carry data (-j counts them all)",
			s->b.wel.workers, s->rails.n, s->b.wel.workers);
	per = s->b.wel.workers / s->rails.n;
	for (unsigned int i = 0; i < s->rails.n; i++)
		verbose("rail %u: %s, %u data connection(s)%s", i,
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
	char msg[400];
	int ret;

	if (pxfer_transport_memlock(s->b.t, n, s->b.wel.slots,
				    s->b.wel.chunk_size, msg, sizeof(msg)))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "%s", msg);
	s->w = calloc(n, sizeof(*s->w));
	/* every slot of every worker could wait to go again */
	s->resend_cap = n * s->b.wel.slots;
	s->resend = calloc(s->resend_cap, sizeof(*s->resend));
	if (!s->w || !s->resend || pxfer_workers_init(&s->b.workers, n))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	pthread_mutex_init(&s->resend_lock, NULL);
	s->resend_init = 1;
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

/* after the workers: they take from the queue of chunks to send again */
static void resend_release(struct send_session *s)
{
	if (s->resend_init)
		pthread_mutex_destroy(&s->resend_lock);
	s->resend_init = 0;
	free(s->resend);
	s->resend = NULL;
}

static void workers_stop(struct send_session *s)
{
	if (!s->w) {
		resend_release(s);
		return;
	}
	send_rejoin_stop(s);
	pxfer_workers_stop(&s->b.workers, s->b.t, pxfer_failed(&s->b.fail));
	for (unsigned int i = 0; i < s->b.workers.n; i++) {
		pxfer_worker_release(&s->w[i].b, s->b.t);
		pxfer_tagger_release(&s->w[i].tag);
		free(s->w[i].slots);
	}
	pxfer_workers_release(&s->b.workers);
	free(s->w);
	s->w = NULL;
	resend_release(s);
}

static void session_release(struct send_session *s)
{
	workers_stop(s);
	/* no check reads a file once it is closed */
	pxfer_check_release(&s->check);
	send_manifest_release(s);
	pxfer_session_release(&s->b);
	if (s->sched_init)
		pxfer_sched_release(&s->sched);
	if (s->walk_init)
		pxfer_walk_release(&s->walk);
	pxfer_pool_release(&s->pool);
}

/* everything up to the transfer itself; 0, or -1 when the session failed */
static int session_start(struct send_session *s)
{
	const struct pxfer_send_opts *o = s->o;
	char q[PXFER_QUOTE_MAX];
	const char *bad = NULL;
	int ret;

	if (pick_transport(s))
		return -1;
	s->st->transport = s->b.t->name;
	s->nlocal = pxfer_transport_rails(&s->tc, s->b.t, o->rails, s->local);
	if (s->nlocal < 0)
		return pxfer_fail_quiet(&s->b.fail, -s->nlocal);
	if ((o->rails || s->tc.devices) && !s->nlocal)
		warning("--rails %s: no address of this host is up for %s; the data goes over one rail",
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
		verbose("ring memory made when the session starts");
	ret = pxfer_walk_init(&s->walk, o->paths, o->npaths, &bad);
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
	s->walk_init = 1;
	if (handshake(s) || pxfer_session_ctrl_start(&s->b) ||
	    pxfer_session_seal(&s->b, 1))
		return -1;
	ret = pxfer_sched_init(&s->sched, s->b.wel.chunk_size, PXFER_SEG_MAX);
	if (ret || send_manifest_init(s) ||
	    pxfer_check_init(&s->check, 0, s->b.ctrl.wake_fd))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	s->sched_init = 1;
	return workers_start(s);
}

/* what the command line checks, for programs that call the library */
static int check_opts(const struct pxfer_send_opts *o)
{
	if (!o->paths || o->npaths < 1 || !o->host || !*o->host || !o->port)
		return error("pxfer_send needs paths, a host and a port");
	if (pxfer_port_check(o->port))
		return error("pxfer_send: port '%s': a number from 1 to 65535",
			     o->port);
	for (int i = 0; i < o->npaths; i++)
		if (!o->paths[i] || !*o->paths[i])
			return error("pxfer_send: path %d is empty", i);
	if (o->workers < 1 || o->workers > PXFER_WORKERS_MAX)
		return error("pxfer_send: %d workers: from 1 to %d",
			     o->workers, PXFER_WORKERS_MAX);
	if (o->chunk_size < PXFER_CHUNK_MIN || o->chunk_size > PXFER_CHUNK_MAX ||
	    o->chunk_size % PXFER_CHUNK_MIN)
		return error("pxfer_send: a chunk size of %u: a multiple of 4 KiB from 4 KiB to 64 MiB",
			     o->chunk_size);
	if (o->timeout_ms < 1)
		return error("pxfer_send: a timeout of %d ms", o->timeout_ms);
	if (o->wait_secs < 0)
		return error("pxfer_send: a wait of %d s", o->wait_secs);
	if (o->secret.len < PXFER_SECRET_MIN || o->secret.len > PXFER_SECRET_MAX)
		return error("pxfer_send: no secret, or one of %zu bytes: %d to %d",
			     o->secret.len, PXFER_SECRET_MIN, PXFER_SECRET_MAX);
	if (pxfer_secret_bits(&o->secret) < PXFER_SECRET_BITS)
		return error("pxfer_send: the secret is too weak: about %u bits of the %d needed",
			     pxfer_secret_bits(&o->secret), PXFER_SECRET_BITS);
	/* NULL: the default, for a caller that did not call opts_init */
	if (o->integrity && strcmp(o->integrity, "mac") &&
	    strcmp(o->integrity, "checksum"))
		return error("pxfer_send: integrity '%s': mac or checksum",
			     o->integrity);
	if (o->encrypt && o->integrity && !strcmp(o->integrity, "checksum"))
		return error("pxfer_send: encryption authenticates every chunk: it cannot go with the plain checksum");
	if (o->retries < 0 || o->retries > 100)
		return error("pxfer_send: %d retries: from 0 to 100", o->retries);
	if (!(o->retry_wait >= 0 && o->retry_wait <= 3600))
		return error("pxfer_send: a retry wait of %g s: from 0 to 3600",
			     o->retry_wait);
	if (o->checksum && o->overwrite)
		return error("pxfer_send: --checksum decides what to skip, --overwrite skips nothing: not both");
	if (o->cipher && strcmp(o->cipher, "aes-256-gcm") &&
	    strcmp(o->cipher, "chacha20-poly1305"))
		return error("pxfer_send: cipher '%s': aes-256-gcm or chacha20-poly1305",
			     o->cipher);
	return 0;
}

/*
 * One session: connect, send what the receiver does not have, and tear
 * down. *@again: files that want another session (changed while they
 * were sent, or busy on the receiver); *@welcomed: the handshake
 * completed.
 */
static int run_session(const struct pxfer_send_opts *o, struct pxfer_stats *st,
		       unsigned int pass, const char *transport,
		       unsigned int *again, int *welcomed, int *peer_ended,
		       uint64_t *done_size)
{
	struct send_session *s;
	int code;

	*again = 0;
	*welcomed = 0;
	*peer_ended = 0;
	s = calloc(1, sizeof(*s));
	if (!s || pxfer_session_init(&s->b, "receiver", o->stop)) {
		error("out of memory");
		free(s);
		return PXFER_EXIT_LOCAL;
	}
	s->o = o;
	s->st = st;
	s->pass = pass;
	s->transport = transport;
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
	*again = s->again;
	*done_size += s->done_size;
	*welcomed = s->b.wel.workers != 0;
	*peer_ended = s->b.peer_ended;
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

/*
 * pxfer_send: sessions until everything is there. A session that lost
 * its connection (once one reached the receiver) is followed by another
 * after a wait (--retries,
 * --retry-wait, doubling up to RETRY_WAIT_MAX): the receiver kept what
 * arrived, so the next one sends only the rest. Files that another
 * session of the receiver held get one more session, at once (files
 * that changed while they were sent are sent again in the same one).
 */
#define RETRY_WAIT_MAX 60.0

static int send_run(const struct pxfer_send_opts *o, struct pxfer_stats *st)
{
	double t0 = pxfer_now(), wait;
	const char *transport = NULL;
	unsigned int pass = 0, again;
	uint64_t credited = 0, credited_bytes = 0, failed_now = 0, done_size = 0;
	int code, retries = 0, welcomed = 0, ever_welcomed = 0, peer_ended = 0;

	if (check_opts(o))
		return PXFER_EXIT_USAGE;
	if (pxfer_auth_init()) {
		error("cannot initialise the crypto library");
		return PXFER_EXIT_LOCAL;
	}
	/* before the call's threads start (best effort: it only saves time) */
	pxfer_fd_table_reserve(PXFER_FD_RESERVE);
	wait = o->retry_wait;
	for (;;) {
		uint64_t failed = st->files_failed, same = st->files_same;
		uint64_t bsame = st->bytes_same, dirs = st->dirs, links = st->links;
		uint64_t files0 = st->files, bytes0 = done_size;

		st->sessions++;
		code = run_session(o, st, pass, transport, &again, &welcomed,
				   &peer_ended, &done_size);
		/*
		 * A later session finds what an earlier one sent there
		 * already: that is not what was there before the call
		 */
		same = st->files_same - same;
		bsame = st->bytes_same - bsame;
		same = same < files0 - credited ? same : files0 - credited;
		bsame = bsame < bytes0 - credited_bytes ? bsame : bytes0 - credited_bytes;
		st->files_same -= same;
		st->bytes_same -= bsame;
		credited += same;
		credited_bytes += bsame;
		/* each session makes every directory and link again */
		if (st->dirs - dirs < dirs)
			st->dirs = dirs;
		else
			st->dirs -= dirs;
		if (st->links - links < links)
			st->links = links;
		else
			st->links -= links;
		/* what failed is tried again by the next session, if any */
		failed_now = st->files_failed;
		st->files_failed = failed;
		ever_welcomed |= welcomed;
		/* a receiver that was never reached is not retried (the
		 * address or port may be wrong, and the user should know),
		 * nor one that ended the session itself (it said why) */
		if (code == PXFER_EXIT_NET && ever_welcomed && !peer_ended &&
		    retries < o->retries && !pxfer_stop_raised(o->stop)) {
			retries++;
			/* --transport auto: an rdma session that could not
			 * even start goes on over tcp */
			if (!welcomed && !transport && st->transport &&
			    !strcmp(st->transport, "rdma") &&
			    (!o->transport || !strcmp(o->transport, "auto"))) {
				transport = "tcp";
				info("pxfer: rdma to %s failed; going on over tcp (--transport auto)",
				     o->host);
			}
			info("pxfer: trying again in %.0f s (retry %d of %d); what arrived is kept",
			     wait, retries, o->retries);
			if (retry_sleep(o->stop, wait)) {
				code = PXFER_EXIT_INTR;
				break;
			}
			wait = wait * 2 > RETRY_WAIT_MAX ? RETRY_WAIT_MAX : wait * 2;
			continue;
		}
		if ((code == PXFER_EXIT_OK || code == PXFER_EXIT_FAIL) && again) {
			/* files busy on the receiver: a second pass at
			 * once, only once; then the next retry */
			if (!pass) {
				pass = 1;
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
