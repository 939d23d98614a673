// SPDX-License-Identifier: MIT
/*
 * A receiver's session, from the sender's authentic HELLO to its end: the
 * destination and the parameters it gets (WELCOME), one data connection
 * and ring per worker, then the coordinator (coord.c) and the workers
 * (worker.c) until ACK or a failure, and the teardown: whatever did not
 * complete is removed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "core/limits.h"
#include "core/log.h"
#include "core/sys.h"
#include "recv/pending.h"
#include "recv/recv.h"

#define RING_DEPTH 8		/* slots per worker an automatic chunk leaves */

_Static_assert(PXFER_FD_RESERVE >= 2 * RECV_MAX_FILES + 256,
	       "the descriptor table reserved holds every file in flight");

static unsigned int pick_slots(const struct recv_session *s,
			       unsigned int workers, uint32_t chunk)
{
	uint64_t n = s->o->ring_mem / ((uint64_t)workers * chunk);
	unsigned int max = s->b.t->ring_slots_max;

	/* small chunks in a large --ring-mem: no more than the transport
	 * can take (rdma: what its shared receive queue holds) */
	if (max && n > max / workers)
		n = max / workers;
	if (n < 2)
		n = 2;
	if (n > PXFER_SLOTS_MAX)
		n = PXFER_SLOTS_MAX;
	return n;
}

/* the session's parameters, for the sender's HELLO @h, into s->b.wel */
static void pick_params(struct recv_session *s, const struct pxfer_hello *h)
{
	const struct pxfer_recv_opts *o = s->o;
	struct pxfer_welcome *wel = &s->b.wel;
	unsigned long nofile = pxfer_raise_nofile();
	uint32_t chunk = h->chunk_size, page = sysconf(_SC_PAGESIZE);

	if (chunk > o->max_chunk)
		chunk = o->max_chunk;
	/*
	 * A sender that left the size to us gets the largest chunk (up to
	 * what it asked) that still leaves RING_DEPTH slots per worker in
	 * --ring-mem: fewer, larger chunks cost less per byte, but a worker
	 * needs several in flight.
	 */
	if (h->flags & PXFER_HELLO_CHUNK_AUTO)
		while (chunk / 2 >= PXFER_AUTO_CHUNK_MIN &&
		       o->ring_mem / ((uint64_t)h->workers * chunk) < RING_DEPTH)
			chunk /= 2;
	chunk -= chunk % page;
	if (chunk < PXFER_CHUNK_MIN)
		chunk = PXFER_CHUNK_MIN;
	wel->chunk_size = chunk;
	wel->workers = h->workers;
	wel->slots = pick_slots(s, h->workers, chunk);
	/* every file in flight holds two descriptors: the file, its directory */
	wel->max_files = RECV_MAX_FILES;
	if (nofile < 2 * RECV_MAX_FILES + 256)
		wel->max_files = nofile > 320 ? (nofile - 256) / 2 : 32;
	randombytes_buf(&wel->session, sizeof(wel->session));
}

/* start making the worker's ring while the sender connects */
static int worker_prepare(struct recv_session *s, struct rworker *w)
{
	w->s = s;
	w->slots = calloc(s->b.wel.slots, sizeof(*w->slots));
	if (!w->slots || pxfer_idq_init(&w->finq, s->b.wel.max_files))
		return -ENOMEM;
	return pxfer_worker_prepare(&w->b, s->b.t, s->o->io, s->b.wel.slots,
				    s->b.wel.chunk_size, 1, &s->srv->pool);
}

/* the file table, the report queue and the workers, for s->b.wel */
static int session_prepare(struct recv_session *s)
{
	unsigned int n = s->b.wel.workers;
	int ret;

	ret = pxfer_filetab_init(&s->tab, s->b.wel.max_files);
	if (ret)
		return ret;
	s->tab_init = 1;
	ret = pxfer_idq_init(&s->done, s->b.wel.max_files);
	if (ret)
		return ret;
	pthread_mutex_init(&s->done_lock, NULL);
	s->done_init = 1;
	s->w = calloc(n, sizeof(*s->w));
	if (!s->w || pxfer_workers_init(&s->b.workers, n))
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++)
		pxfer_workers_add(&s->b.workers, &s->w[i].b);
	/* the rings are made while the sender connects its workers */
	for (unsigned int i = 0; i < n; i++) {
		ret = worker_prepare(s, &s->w[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* The HELLO is authentic: agree on parameters and send the WELCOME. */
static int welcome(struct recv_session *s, const struct pxfer_hello *h,
		   const uint8_t *nonce_r)
{
	char msg[400];
	int ret;

	pick_params(s, h);
	if (pxfer_transport_memlock(s->b.t, s->b.wel.workers, s->b.wel.slots,
				    s->b.wel.chunk_size, msg, sizeof(msg))) {
		pxfer_hs_refuse(s->b.cconn, ENOMEM, "the receiver cannot pin its ring memory (memlock limit); see its log");
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "%s", msg);
	}
	ret = session_prepare(s);
	if (!ret)
		ret = pxfer_hs_welcome(&s->b, &s->o->secret, nonce_r, h);
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
				  "handshake with %s failed: %s", s->b.cconn->peer,
				  strerror(-ret));
	return 0;
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
	uint16_t blob_len = 0, idx;
	struct rworker *w;
	int ret;

	ret = pxfer_hs_data_check(&s->b, c, nonce, m, &idx);
	if (ret)
		return ret;
	if (idx >= s->b.workers.n || s->w[idx].b.conn)
		return -EPROTO;
	w = &s->w[idx];
	w->b.conn = c;
	ret = pxfer_worker_attach(&w->b, s->b.t, blob, &blob_len);
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot set up worker %u: %s", w->b.idx,
				  pxfer_worker_setup_error(ret));
	ret = pxfer_hs_data_welcome(c, w->b.idx, blob, blob_len);
	/* the worker owns the connection now (its ring is registered with
	 * it): losing it fails the session, like losing it later would */
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
				  "lost data connection %u from %s while setting it up: %s",
				  w->b.idx, c->peer, strerror(-ret));
	return 0;
}

/* what came on pending connection @i: 1 while it is still pending */
static int pending_step(struct recv_session *s, struct recv_pendings *pend,
			unsigned int i, unsigned int *have)
{
	uint8_t nonce[PXFER_NONCE_LEN];
	struct pxfer_conn *c;
	int r = recv_pending_next(pend, i, &s->b.msg);

	if (r <= 0) {
		if (r < 0)
			recv_pending_drop(pend, i);
		return r == 0;
	}
	c = recv_pending_take(pend, i, nonce);
	r = accept_data(s, c, nonce, &s->b.msg);
	if (pxfer_failed(&s->b.fail))
		return 0;	/* its worker holds @c */
	if (r) {
		verbose("refused a connection from %s: %s", c->peer, strerror(-r));
		s->b.t->close(c);
		return 0;
	}
	(*have)++;
	return 0;
}

/*
 * The sender's data connections, each proving itself with a DATA_HELLO.
 * Connections are read as their bytes come (not one after the other), so
 * that one which says nothing, which anybody can open, holds up no other.
 */
static int accept_workers(struct recv_session *s)
{
	double end = pxfer_now() + PXFER_HANDSHAKE_MS / 1000.0;
	struct recv_pendings pend = { .n = 0 };
	struct pollfd p[RECV_PENDING_MAX + 2];
	unsigned int have = 0, want = s->b.workers.n, n, i;

	while (have < want && !pxfer_failed(&s->b.fail)) {
		double now = pxfer_now();

		if (now >= end) {
			pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
				   "the sender %s opened %u of %u data connections in time",
				   s->b.cconn->peer, have, want);
			break;
		}
		p[0].fd = s->b.t->listener_fd(s->l);
		p[0].events = POLLIN;
		n = 1 + recv_pending_poll(&pend, p + 1);
		p[n].fd = s->b.sigfd;
		p[n].events = POLLIN;
		if (poll(p, n + 1, (int)((end - now) * 1000) + 1) < 0 && errno != EINTR) {
			pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "poll: %s", strerror(errno));
			break;
		}
		if (pxfer_signal_pending()) {
			pxfer_fail(&s->b.fail, PXFER_EXIT_INTR,
				   "interrupted while the sender %s opened its data connections",
				   s->b.cconn->peer);
			break;
		}
		if (p[0].revents & POLLIN) {
			struct pxfer_conn *c;

			if (!s->b.t->accept(s->l, &c))
				recv_pending_add(&pend, c);
		}
		for (i = 0; i < pend.n && have < want && !pxfer_failed(&s->b.fail);)
			i += pending_step(s, &pend, i, &have);
	}
	recv_pending_clear(&pend);
	if (pxfer_failed(&s->b.fail))
		return -1;
	return pxfer_session_start_workers(&s->b, recv_worker_main, "recv");
}

static void report(struct recv_session *s, double secs)
{
	char b[32], r[32];

	if (s->o->quiet)
		return;
	info("pxfer: %s %llu files (%s) from %s in %.1f s (%s/s)%s",
	     pxfer_failed(&s->b.fail) ? "failed after" : "received",
	     (unsigned long long)s->files_ok, pxfer_human(b, sizeof(b), s->bytes),
	     s->b.cconn->peer, secs,
	     pxfer_human(r, sizeof(r), secs > 0 ? s->bytes / secs : 0),
	     s->failed ? "; some files failed" : "");
}

/* run the session on its authenticated control connection */
static void run(struct recv_session *s, const struct pxfer_hello *h,
		const uint8_t *nonce_r)
{
	double t0 = pxfer_now();
	int ret;

	if (pxfer_session_ctrl_start(&s->b))
		return;
	ret = pxfer_rfiles_init(&s->files, s->srv->rootfd, h->dest, h->dest_len,
				RECV_MAX_FILES, s->o->fsync ||
				(h->flags & PXFER_HELLO_FSYNC));
	s->files_init = 1;
	if (ret) {
		char text[PXFER_TEXT_MAX + 1];

		snprintf(text, sizeof(text), "cannot use the destination '%.200s': %s",
			 h->dest, strerror(-ret));
		pxfer_hs_refuse(s->b.cconn, -ret, text);
		pxfer_fail(&s->b.fail, PXFER_EXIT_FAIL,
			   "refused a sender from %s: cannot use destination '%s': %s",
			   s->b.cconn->peer, h->dest, strerror(-ret));
		return;
	}
	if (welcome(s, h, nonce_r))
		return;
	pxfer_rfiles_probe(&s->files);
	verbose("session with %s: %u workers, %u KiB chunks, %u slots each",
		s->b.cconn->peer, s->b.workers.n, s->b.wel.chunk_size >> 10,
		s->b.wel.slots);
	if (!accept_workers(s))
		recv_coordinate(s);
	if (pxfer_failed(&s->b.fail) && pxfer_fail_code(&s->b.fail) != PXFER_EXIT_NET)
		pxfer_session_abort(&s->b, ECANCELED, s->b.fail.msg, 1000);
	report(s, pxfer_now() - t0);
}

static void session_release(struct recv_session *s)
{
	if (s->w) {
		pxfer_workers_stop(&s->b.workers, s->b.t, pxfer_failed(&s->b.fail));
		for (unsigned int i = 0; i < s->b.workers.n; i++) {
			pxfer_worker_release(&s->w[i].b, s->b.t);
			free(s->w[i].slots);
			pxfer_idq_release(&s->w[i].finq);
		}
		pxfer_workers_release(&s->b.workers);
		free(s->w);
	}
	/* what did not complete never shows under its real name */
	if (s->files_init)
		pxfer_rfiles_release(&s->files);
	if (s->tab_init)
		pxfer_filetab_release(&s->tab);
	if (s->done_init) {
		pxfer_idq_release(&s->done);
		pthread_mutex_destroy(&s->done_lock);
	}
	pxfer_session_release(&s->b);
}

int recv_session_run(struct recv_server *srv, struct pxfer_listener *l,
		     struct pxfer_conn *c, const struct pxfer_hello *h,
		     const uint8_t *nonce)
{
	struct recv_session *s = calloc(1, sizeof(*s));
	int code;

	if (!s || pxfer_session_init(&s->b, "sender", NULL, -1)) {
		error("out of memory");
		free(s);
		c->ops->close(c);
		return PXFER_EXIT_LOCAL;
	}
	s->srv = srv;
	s->o = srv->o;
	s->l = l;
	s->b.t = c->ops;
	s->b.cconn = c;
	s->b.sigfd = srv->sigfd;
	/* the rings of the session before were released with it */
	pxfer_pool_reset(&srv->pool);
	run(s, h, nonce);
	code = pxfer_failed(&s->b.fail) ? pxfer_fail_code(&s->b.fail)
	       : s->failed ? PXFER_EXIT_FAIL : PXFER_EXIT_OK;
	session_release(s);
	free(s);
	return code;
}
