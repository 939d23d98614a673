// SPDX-License-Identifier: MIT
/*
 * A receiver's session, from the sender's authentic HELLO to its end, on
 * a thread of its own: the destination and the parameters it gets
 * (WELCOME), one data connection and ring per worker (the server routes
 * the connections here), then the coordinator (coord.c) and the workers
 * (worker.c) until ACK or a failure, and the teardown: whatever did not
 * complete is removed. The server then joins the thread and frees the
 * session's slot.
 */
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "core/escape.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/sys.h"
#include "engine/params.h"
#include "recv/pending.h"
#include "recv/recv.h"

_Static_assert(PXFER_FD_RESERVE >= 2 * RECV_MAX_FILES + 256,
	       "the descriptor table reserved holds every file in flight");

/* the session's parameters, for the sender's HELLO @h, into s->b.wel
 * (src/engine/params.c decides them) */
static void pick_params(struct recv_session *s, const struct pxfer_hello *h)
{
	const struct pxfer_params_in in = {
		.chunk = h->chunk_size,
		.workers = h->workers,
		.chunk_auto = !!(h->flags & PXFER_HELLO_CHUNK_AUTO),
		.ring_mem = s->ring_mem,
		.max_chunk = s->o->max_chunk,
		.max_sessions = s->srv->max_sessions,
		.nofile = pxfer_raise_nofile(),
		.max_files = RECV_MAX_FILES,
		.ring_slots_max = s->b.t->ring_slots_max,
		.ring_hdr = s->b.t->ring_hdr,
		.page = sysconf(_SC_PAGESIZE),
	};
	struct pxfer_welcome *wel = &s->b.wel;
	struct pxfer_params p;

	pxfer_params_pick(&in, &p);
	wel->chunk_size = p.chunk;
	wel->workers = p.workers;
	wel->slots = p.slots;
	wel->max_files = p.max_files;
	/* wel->session: the server chose it, to route data connections */
	/* the addresses this transport's sessions offer for data */
	for (unsigned int k = 0; k < s->srv->nls; k++)
		if (s->srv->ls[k]->ops == s->b.t)
			pxfer_rails_to_wire(s->srv->rails[k],
					    (unsigned int)s->srv->nrails[k], wel);
}

/* start making the worker's ring while the sender connects */
static int worker_prepare(struct recv_session *s, struct rworker *w)
{
	w->s = s;
	w->slots = calloc(s->b.wel.slots, sizeof(*w->slots));
	if (!w->slots || pxfer_idq_init(&w->finq, s->b.wel.max_files))
		return -ENOMEM;
	return pxfer_worker_prepare(&w->b, s->b.t, s->o->io, s->b.wel.slots,
				    s->b.wel.chunk_size, 1, &s->pool);
}

/* the file table and the report queue: released from ACCEPTING_DATA on,
 * and by the AUTHENTICATING that made them and failed after */
static void tables_release(struct recv_session *s)
{
	pxfer_doneq_release(&s->done);
	pxfer_filetab_release(&s->tab);
}

/*
 * The file table, the report queue (made whole or not at all) and the
 * workers (released in any state: s->w), for s->b.wel
 */
static int session_prepare(struct recv_session *s)
{
	unsigned int n = s->b.wel.workers;
	int ret;

	ret = pxfer_filetab_init(&s->tab, s->b.wel.max_files);
	if (ret)
		return ret;
	ret = pxfer_doneq_init(&s->done, s->b.wel.max_files);
	if (ret)
		goto out_tab;
	ret = -ENOMEM;
	s->w = calloc(n, sizeof(*s->w));
	if (!s->w || pxfer_workers_init(&s->b.workers, n))
		goto out_tables;
	for (unsigned int i = 0; i < n; i++)
		pxfer_workers_add(&s->b.workers, &s->w[i].b);
	/* the rings are made while the sender connects its workers */
	for (unsigned int i = 0; i < n; i++) {
		ret = worker_prepare(s, &s->w[i]);
		if (ret)
			goto out_tables;
	}
	return 0;
out_tables:
	tables_release(s);
	return ret;
out_tab:
	pxfer_filetab_release(&s->tab);
	return ret;
}

/* The HELLO is authentic: agree on parameters and send the WELCOME. */
static int welcome(struct recv_session *s, const struct pxfer_hello *h,
		   const uint8_t *nonce_r)
{
	struct pxfer_err err;
	int ret;

	pick_params(s, h);
	if (pxfer_transport_memlock(s->b.t, s->b.wel.workers, s->b.wel.slots,
				    s->b.wel.chunk_size, &err)) {
		pxfer_hs_refuse(s->b.cconn, ENOMEM, "the receiver cannot pin its ring memory (memlock limit); see its log");
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "%s",
				  pxfer_err_msg(&err));
	}
	ret = session_prepare(s);
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
				  "handshake with %s failed: %s", s->b.cconn->peer,
				  strerror(-ret));
	ret = pxfer_hs_welcome(&s->b, &s->o->secret, nonce_r, h);
	if (ret) {
		pxfer_fail(&s->b.fail, PXFER_EXIT_NET, "handshake with %s failed: %s",
			   s->b.cconn->peer, strerror(-ret));
		goto out_tables;
	}
	if (pxfer_session_seal(&s->b, 0))
		goto out_tables;
	return pxfer_session_enter(&s->b, PXFER_RECV_ACCEPTING_DATA);
out_tables:
	tables_release(s);
	return -1;
}

/*
 * One data connection, whose first message (to the CHALLENGE with @nonce)
 * is @m: prove it belongs to this session, set up its worker. 0, or
 * -errno for a connection refused (the caller closes it); -1 with the
 * session failed, and then the worker holds @c.
 */
static int accept_data(struct recv_session *s, struct pxfer_conn *c,
		       const uint8_t *nonce, struct pxfer_msg *m)
{
	uint8_t blob[PXFER_BLOB_MAX];
	uint16_t blob_len = 0, idx, gen;
	struct rworker *w;
	int ret;

	ret = pxfer_hs_data_check(&s->b, c, nonce, m, &idx, &gen);
	if (ret)
		return ret;
	if (idx >= s->b.workers.n || s->w[idx].b.conn || gen)
		return -EPROTO;
	w = &s->w[idx];
	w->b.conn = c;
	ret = pxfer_tagger_init(&w->tag, &s->b, idx, 0);
	w->tag_init = 1;
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot set up %s for worker %u: %s",
				  pxfer_cipher_name(pxfer_session_cipher(&s->b)),
				  idx, strerror(-ret));
	ret = pxfer_worker_attach(&w->b, s->b.t, blob, &blob_len);
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot set up worker %u: %s", w->b.idx,
				  pxfer_worker_setup_error(ret));
	pxfer_verbose("data connection %u from %s", idx, c->peer);
	ret = pxfer_hs_data_welcome(&s->b, c, nonce, w->b.idx, blob, blob_len);
	/* the worker owns the connection now (its ring is registered with
	 * it): losing it fails the session, like losing it later would */
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
				  "lost data connection %u from %s while setting it up: %s",
				  w->b.idx, c->peer, strerror(-ret));
	return 0;
}

int recv_session_route(struct recv_server *srv, struct recv_newconn *nc)
{
	for (unsigned int i = 0; i < srv->max_sessions; i++)
		if (srv->sess[i] && srv->sess[i]->b.wel.session == nc->dh.session)
			return pxfer_inbox_push(&srv->sess[i]->inbox, nc);
	return -ENOENT;
}

/* data connection @nc, routed here: 1 when it became a worker's */
static int take_data(struct recv_session *s, struct recv_newconn *nc)
{
	int r;

	if (pxfer_failed(&s->b.fail)) {
		nc->c->ops->close(nc->c);
		return 0;
	}
	memset(&s->b.msg, 0, sizeof(s->b.msg));
	s->b.msg.type = PXFER_MSG_DATA_HELLO;
	s->b.msg.u.data_hello = nc->dh;
	r = accept_data(s, nc->c, nc->nonce, &s->b.msg);
	if (pxfer_failed(&s->b.fail))
		return 0;	/* its worker holds the connection */
	if (r) {
		pxfer_verbose("refused a connection from %s: %s", nc->c->peer,
			strerror(-r));
		nc->c->ops->close(nc->c);
		return 0;
	}
	return 1;
}

/*
 * The sender's data connections, each proving itself with a DATA_HELLO.
 * The server reads them as their bytes come (one that says nothing holds
 * up no other) and routes those that name this session here. Meanwhile
 * the control connection is read too (what the sender says early is kept
 * for the coordinator): a sender that went away frees the session at
 * once, not after the handshake's time.
 */
static int accept_workers(struct recv_session *s)
{
	const struct pxfer_transport_ops *t = s->b.cconn->ops;
	double end = pxfer_now() + PXFER_HANDSHAKE_MS / 1000.0;
	struct pollfd p[3] = { { .fd = s->inbox.fd, .events = POLLIN },
			       { .fd = s->stop.fd, .events = POLLIN },
			       { .fd = t->conn_fd(s->b.cconn),
				 .events = t->poll_events(s->b.cconn, 0) } };
	unsigned int have = 0, want = s->b.workers.n;
	struct recv_newconn nc;

	while (have < want && !pxfer_failed(&s->b.fail)) {
		double now = pxfer_now();
		int ret;

		if (now >= end) {
			pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
				   "the sender %s opened %u of %u data connections in time",
				   s->b.cconn->peer, have, want);
			break;
		}
		if (poll(p, 3, (int)((end - now) * 1000) + 1) < 0 && errno != EINTR) {
			pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "poll: %s", strerror(errno));
			break;
		}
		if (pxfer_stop_raised(&s->stop)) {
			pxfer_fail(&s->b.fail, PXFER_EXIT_INTR,
				   "the receiver is stopping; the sender %s had opened %u of %u data connections",
				   s->b.cconn->peer, have, want);
			break;
		}
		/* a full buffer waits for the coordinator: no spin on it */
		if (p[2].revents && (ret = pxfer_ctrl_fill(&s->b.ctrl)) < 0) {
			pxfer_session_read_end(&s->b, ret);
			break;
		}
		if (s->b.ctrl.in_len == s->b.ctrl.in_cap)
			p[2].fd = -1;
		pxfer_drain(s->inbox.fd);
		while (have < want && pxfer_inbox_pop(&s->inbox, &nc))
			have += take_data(s, &nc);
	}
	if (pxfer_failed(&s->b.fail)) {
		pxfer_inbox_close(&s->inbox);
		return -1;
	}
	/* from now on a data connection may only replace a lost one, and
	 * the coordinator takes it */
	pxfer_inbox_wake_also(&s->inbox, s->b.ctrl.wake_fd);
	if (pxfer_session_start_workers(&s->b, recv_worker_main, "recv"))
		return -1;
	return pxfer_session_enter(&s->b, PXFER_RECV_RECEIVING);
}

/* the session's line in the log, and its report to the library's caller */
static void report(struct recv_session *s, double secs)
{
	const struct pxfer_recv_opts *o = s->o;
	int failed = pxfer_failed(&s->b.fail);
	struct pxfer_session_report r = {
		.peer = s->b.cconn ? s->b.cconn->peer : "?",
		.transport = s->b.t->name,
		.files = s->files_ok,
		.files_failed = s->failed,
		.bytes = s->bytes,
		.seconds = secs,
		.exit_code = s->code,
		.error = failed ? s->b.fail.msg : NULL,
		/* the WELCOME went out: the keys were agreed */
		.protection = s->b.state.reached >= PXFER_RECV_ACCEPTING_DATA ?
			      pxfer_session_prot_name(&s->b) : NULL,
		.files_same = s->files_same,
		.bytes_same = s->bytes_same,
		.bytes_resumed = s->bytes_resumed,
	};
	char b[32], rate[32], chain[512];

	recv_chain_log(s, chain, sizeof(chain));
	if (!o->quiet)
		pxfer_info("pxfer: %s %llu files (%s) from %s over %s in %.1f s (%s/s): %s%s",
		     failed ? "failed after" : "received",
		     (unsigned long long)r.files, pxfer_human(b, sizeof(b), r.bytes),
		     r.peer, r.transport, secs,
		     pxfer_human(rate, sizeof(rate), secs > 0 ? r.bytes / secs : 0),
		     failed ? "failed" : s->failed ? "some files failed" : "complete",
		     chain);
	if (o->on_session)
		o->on_session(&r, o->on_session_arg);
}

/* the code of the ABORT that tells the sender why the session failed */
static int abort_code(struct pxfer_fail *f)
{
	if (pxfer_fail_code(f) == PXFER_EXIT_INTEGRITY)
		return EBADMSG;
	/* a full disk: the sender's exit status says a resource ran out */
	return pxfer_fail_errno(f) ?: ECANCELED;
}

/*
 * Run the session on its authenticated control connection: AUTHENTICATING
 * (the destination, first: released in any state from there on),
 * ACCEPTING_DATA, RECEIVING and FINISHING, or a failure on the way.
 */
static void run(struct recv_session *s)
{
	const struct pxfer_hello *h = &s->hello;
	int ret;

	if (pxfer_session_enter(&s->b, PXFER_RECV_AUTHENTICATING))
		return;
	/* first, and left releasable when it fails: released from
	 * AUTHENTICATING on */
	ret = pxfer_rfiles_init(&s->files, s->srv->rootfd, h->dest, h->dest_len,
				RECV_MAX_FILES, s->o->fsync ||
				(h->flags & PXFER_HELLO_FSYNC),
				s->srv->mode_mask);
	s->files.verify = !!(h->flags & PXFER_HELLO_VERIFY);
	s->files.keep = s->o->partial_ttl > 0;
	s->files.dir = s->o->dir;
	s->files.store_warned = &s->srv->store_warned;
	s->files.use = s->srv->use;
	s->files.shared = &s->srv->shared;
	s->files.peer = s->b.cconn->peer;
	if (ret) {
		char text[PXFER_TEXT_MAX + 1], q[PXFER_QUOTE_MAX];

		snprintf(text, sizeof(text), "cannot use the destination '%.200s': %s",
			 h->dest, strerror(-ret));
		pxfer_hs_refuse(s->b.cconn, -ret, text);
		pxfer_fail(&s->b.fail, PXFER_EXIT_FAIL,
			   "refused a sender from %s: cannot use destination %s: %s",
			   s->b.cconn->peer,
			   pxfer_quote(q, sizeof(q), h->dest, h->dest_len),
			   strerror(-ret));
		return;
	}
	if (pxfer_session_ctrl_start(&s->b))
		return;
	/* its threads are started by the first check */
	ret = pxfer_check_init(&s->check, 0, s->b.ctrl.wake_fd);
	if (ret) {
		pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "cannot set up the checks of partial files: %s",
			   strerror(-ret));
		return;
	}
	if (s->o->require_encrypt && !(h->flags & PXFER_HELLO_ENCRYPT)) {
		pxfer_hs_refuse(s->b.cconn, EPERM,
				"this receiver takes only encrypted sessions: send with --encrypt");
		pxfer_fail(&s->b.fail, PXFER_EXIT_AUTH,
			   "refused a sender from %s: it does not encrypt, and this receiver runs with --require-encrypt",
			   s->b.cconn->peer);
		return;
	}
	if (welcome(s, h, s->nonce))
		return;
	pxfer_rfiles_probe(&s->files);
	pxfer_verbose("session with %s: %u workers, %u KiB chunks, %u slots each, data %s",
		s->b.cconn->peer, s->b.workers.n, s->b.wel.chunk_size >> 10,
		s->b.wel.slots, pxfer_session_prot_name(&s->b));
	if (!accept_workers(s))
		recv_coordinate(s);
	if (pxfer_failed(&s->b.fail) && pxfer_fail_code(&s->b.fail) != PXFER_EXIT_NET)
		pxfer_session_abort(&s->b, abort_code(&s->b.fail), s->b.fail.msg,
				    1000);
}

/*
 * Everything but the session's own struct and its wake-up descriptors:
 * what the states it reached made (engine/state.h). The workers (s->w),
 * each with its tagger (tag_init: made as its connection came), and the
 * checks release what they hold in any state.
 */
static void session_release(struct recv_session *s)
{
	unsigned int reached = s->b.state.reached;

	if (s->w) {
		pxfer_workers_stop(&s->b.workers, s->b.t, pxfer_failed(&s->b.fail));
		for (unsigned int i = 0; i < s->b.workers.n; i++) {
			/* how the data spread over the connections (rails) */
			if (s->w[i].b.conn)
				pxfer_verbose("data connection %u from %s: %llu chunks%s",
					i, s->w[i].b.conn->peer,
					(unsigned long long)s->w[i].seq,
					pxfer_worker_alive(&s->w[i].b) ? "" : ", then lost");
			pxfer_worker_release(&s->w[i].b, s->b.t);
			if (s->w[i].tag_init)
				pxfer_tagger_release(&s->w[i].tag);
			free(s->w[i].slots);
			pxfer_idq_release(&s->w[i].finq);
			free(s->w[i].relay_items);
			free(s->w[i].relay_back);
			pxfer_idq_release(&s->w[i].relq);
		}
		pxfer_workers_release(&s->b.workers);
		free(s->w);
		s->w = NULL;
	}
	/* no check reads a file once it is dropped */
	pxfer_check_release(&s->check);
	/* what did not complete never shows under its real name */
	if (reached >= PXFER_RECV_AUTHENTICATING)
		pxfer_rfiles_release(&s->files);
	if (reached >= PXFER_RECV_ACCEPTING_DATA)
		tables_release(s);
	/* closed as its chain ended; the files dropped their entries */
	if (s->relay)
		pxfer_relay_counts(s->relay, &s->relay_ring, &s->relay_copied);
	pxfer_relay_free(s->relay);
	s->relay = NULL;
	pxfer_inbox_close(&s->inbox);
}

static void *session_main(void *arg)
{
	struct recv_session *s = arg;
	struct recv_server *srv = s->srv;
	double t0 = pxfer_now();

	run(s);
	s->code = pxfer_failed(&s->b.fail) ? pxfer_fail_code(&s->b.fail)
		  : s->failed ? PXFER_EXIT_FAIL : PXFER_EXIT_OK;
	recv_chain_end(s);
	if (pxfer_failed(&s->b.fail))
		pxfer_session_enter(&s->b, PXFER_RECV_CLEANUP);
	session_release(s);
	/* the receiver goes on listening */
	pxfer_session_enter(&s->b, PXFER_RECV_LISTENING);
	report(s, pxfer_now() - t0);
	pxfer_session_release(&s->b);
	atomic_store(&s->ended, 1);
	pxfer_wake(srv->ended_fd);
	return NULL;
}

static void session_free(struct recv_session *s)
{
	free(s->hops);
	pxfer_inbox_release(&s->inbox);
	pxfer_stop_release(&s->stop);
	free(s);
}

/* a session number no running session has: data connections name it */
static uint64_t new_session_number(struct recv_server *srv)
{
	uint64_t n;
	int taken;

	do {
		randombytes_buf(&n, sizeof(n));
		taken = 0;
		for (unsigned int i = 0; i < srv->max_sessions; i++)
			taken |= srv->sess[i] && srv->sess[i]->b.wel.session == n;
	} while (taken);
	return n;
}

int recv_session_start(struct recv_server *srv, unsigned int slot,
		       struct pxfer_conn *c, const struct pxfer_hello *h,
		       const uint8_t *nonce)
{
	struct recv_session *s = calloc(1, sizeof(*s));
	int ret = -ENOMEM;

	if (!s)
		goto out_conn;
	s->stop.fd = -1;	/* calloc's 0 is stdin */
	ret = pxfer_inbox_init(&s->inbox);
	if (!ret)
		ret = pxfer_stop_init(&s->stop);
	if (ret)
		goto out_fds;
	ret = pxfer_session_init(&s->b, "sender", &s->stop);
	if (ret)
		goto out_fds;
	/* the HELLO proved the secret: run() moves on to AUTHENTICATING */
	pxfer_state_init(&s->b.state, &pxfer_recv_machine, PXFER_RECV_LISTENING);
	s->srv = srv;
	s->o = srv->o;
	s->slot = slot;
	s->ring_mem = srv->share;
	if (slot < srv->pool_slots)
		pxfer_pool_slice(&s->pool, &srv->pool, slot * srv->pool_part,
				 srv->pool_part);
	s->hello = *h;
	memcpy(s->nonce, nonce, PXFER_NONCE_LEN);
	memcpy(s->source, c->source, sizeof(s->source));
	s->b.t = c->ops;
	s->b.cconn = c;
	s->b.wel.session = new_session_number(srv);
	srv->sess[slot] = s;
	ret = -pxfer_thread_create(&s->thread, NULL, session_main, s);
	if (!ret) {
		pxfer_thread_name(s->thread, "session", slot);
		return 0;
	}
	srv->sess[slot] = NULL;
	pxfer_session_release(&s->b);	/* closes @c */
	c = NULL;
out_fds:
	pxfer_inbox_release(&s->inbox);
	pxfer_stop_release(&s->stop);
	free(s);
out_conn:
	if (c)
		c->ops->close(c);
	return ret;
}

void recv_session_stop(struct recv_session *s)
{
	pxfer_stop_raise(&s->stop);
}

/* how session @s ended, as the metrics name it */
static enum recv_outcome outcome(const struct recv_session *s)
{
	switch (s->code) {
	case PXFER_EXIT_OK:
		return RECV_OUT_COMPLETE;
	case PXFER_EXIT_INTR:
		return RECV_OUT_STOPPED;
	case PXFER_EXIT_INTEGRITY:
		return RECV_OUT_INTEGRITY;
	case PXFER_EXIT_AUTH:
	case PXFER_EXIT_FAIL:
		/* refused before the WELCOME: unencrypted, or the
		 * destination cannot be used */
		if (s->b.state.reached < PXFER_RECV_ACCEPTING_DATA)
			return RECV_OUT_REFUSED;
		break;
	case PXFER_EXIT_NET:
		if (s->idled)
			return RECV_OUT_IDLE;
		break;
	}
	return RECV_OUT_FAILED;
}

/* what session @s did, counted once its thread is done */
static void count_end(struct recv_server *srv, const struct recv_session *s)
{
	struct pxfer_recv_metrics *m = srv->m;
	enum recv_transport t = recv_transport_of(s->b.t->name);

	recv_count(&m->sessions[outcome(s)], 1);
	recv_count(&m->bytes[t], s->bytes);
	recv_count(&m->files[t], s->files_ok);
	recv_count(&m->files_failed[t], s->failed);
	recv_uncount(&m->running, 1);
	recv_uncount(&m->ring_used, srv->share);
}

unsigned int recv_session_reap(struct recv_server *srv, int *code)
{
	unsigned int n = 0;

	pxfer_drain(srv->ended_fd);
	for (unsigned int i = 0; i < srv->max_sessions; i++) {
		struct recv_session *s = srv->sess[i];

		if (!s || !atomic_load(&s->ended))
			continue;
		pthread_join(s->thread, NULL);
		count_end(srv, s);
		*code = s->code;
		if (s->vouched)
			recv_quota_unvouch(&srv->pend->q, s->source);
		srv->sess[i] = NULL;
		srv->nsess--;
		session_free(s);
		n++;
	}
	/*
	 * The last session ended: the memory its threads' malloc arenas
	 * still hold free goes back to the system. A service otherwise keeps
	 * each arena at its peak, which grows by steps as sessions come and
	 * go on new threads (bench/soak: +11% RSS from 1,000 to 10,000).
	 */
	if (n && !srv->nsess)
		malloc_trim(0);
	return n;
}
