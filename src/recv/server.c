// SPDX-License-Identifier: MIT
/*
 * The receiver as a server, for pxfer_recv (src/api/recv.c). It checks
 * the receiving directory, listens on the transports --transport names and challenges
 * every new connection (pending.c). A HELLO that proves the secret starts
 * a session (session.c) on a thread of its own, up to --max-sessions at
 * once, each with its share of --ring-mem; a sender that finds them all
 * taken is told the receiver is busy, at once. A DATA_HELLO goes to the
 * session it names. It serves until its stop is raised (the pxfer
 * command does on a signal), and then lets running sessions finish for
 * --grace seconds before it stops them; or for one session with --once.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/limits.h"
#include "core/log.h"
#include "core/sys.h"
#include "recv/pending.h"
#include "recv/recv.h"
#include "recv/server.h"

/* seconds between looks at the stop for a second raise, while draining */
#define STOP_RECHECK_S 0.1

static int check_dir(const struct pxfer_recv_opts *o, int *fdp)
{
	int fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return pxfer_error("cannot use '%s' as the receiving directory: %s%s",
			     o->dir, strerror(errno),
			     errno == ENOENT ? " (create it first)" : "");
	if (faccessat(fd, ".", W_OK, AT_EACCESS)) {
		close(fd);
		return pxfer_error("cannot write into '%s': %s", o->dir,
			     strerror(errno));
	}
	*fdp = fd;
	return 0;
}

static int listen_one(struct recv_server *srv,
		      const struct pxfer_transport_ops *t, int quiet_fail)
{
	const struct pxfer_recv_opts *o = srv->o;
	const char *where = srv->tc.bind ? srv->tc.bind : "any address";
	struct pxfer_listener *l;
	int ret = t->listen(srv->tc.bind, o->port, &l);

	if (!ret) {
		srv->ls[srv->nls++] = l;
		return 0;
	}
	if (quiet_fail) {
		pxfer_verbose("not listening for %s: %s", t->name, strerror(-ret));
		return 0;
	}
	if (ret == -EADDRINUSE)
		return pxfer_error("port %s is in use (another 'pxfer recv'? choose another with --port)",
			     o->port);
	if (ret == -EADDRNOTAVAIL || ret == -ENODEV)
		return pxfer_error("cannot listen for %s on %s port %s: %s (is an RDMA device up with that address? see 'rdma link')",
			     t->name, where, o->port, strerror(-ret));
	return pxfer_error("cannot listen for %s on %s port %s: %s", t->name, where,
		     o->port, strerror(-ret));
}

/*
 * The transports --transport names (auto: tcp, and rdma too when this
 * host has a device). 0, or the exit status: a --device or --gid-index
 * that cannot be used is a bad command line, as for the sender.
 */
static int listen_all(struct recv_server *srv)
{
	const struct pxfer_transport_ops *t[2];
	unsigned int n;
	int code, optional;

	pxfer_transport_choice_init(&srv->tc, srv->o->transport, srv->o->device,
				    srv->o->gid_index, srv->o->bind);
	code = pxfer_transport_resolve(&srv->tc);
	if (code)
		return code;
	/* several devices: listen on them all (the wildcard), unless --bind
	 * says otherwise */
	if (srv->tc.devices && !srv->o->bind)
		srv->tc.bind = NULL;
	n = pxfer_transport_for_listen(&srv->tc, t, &optional);
	for (unsigned int i = 0; i < n; i++)
		if (listen_one(srv, t[i], i > 0 && optional))
			return PXFER_EXIT_NET;
	/* the addresses its sessions offer for data, per transport */
	for (unsigned int i = 0; i < srv->nls; i++) {
		int r = pxfer_transport_rails(&srv->tc, srv->ls[i]->ops,
					      srv->o->rails, srv->rails[i]);

		if (r < 0)
			return -r;
		srv->nrails[i] = r;
		for (int k = 0; k < r; k++)
			pxfer_verbose("%s: offering %s%s%s for data", srv->ls[i]->ops->name,
				srv->rails[i][k].addr, srv->rails[i][k].dev[0] ? " on " : "",
				srv->rails[i][k].dev);
		if ((srv->o->rails || srv->tc.devices) && !r)
			pxfer_warning("%s: no address of this host is up to offer for data; senders send over one rail",
				srv->ls[i]->ops->name);
	}
	return 0;
}

/*
 * A transport that pins its rings (rdma) touches every page of them before
 * the first byte moves: have the first session slot's share faulted in
 * while no sender is there yet, and keep it for every session that gets
 * that slot. Other sessions' rings are mapped when they start.
 */
static void pool_init(struct recv_server *srv)
{
	const struct pxfer_transport_ops *t = NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t limit;
	char l[32];
	int ret;

	for (unsigned int i = 0; i < srv->nls; i++)
		if (srv->ls[i]->ops->pins_memory)
			t = srv->ls[i]->ops;
	if (!t)
		return;
	/* each session pins its share: say now if they cannot all run */
	if (pxfer_memlock_check((uint64_t)srv->max_sessions *
				(srv->share + (2u << 20)), &limit) && !srv->o->quiet) {
		uint64_t fit = limit / (srv->share + (2u << 20));

		pxfer_warning("the memlock limit (%s) holds the rings of %llu of the %u sessions at once; the others will be refused (raise it with 'ulimit -l', or lower --max-sessions or --ring-mem)",
			pxfer_human(l, sizeof(l), limit), (unsigned long long)fit,
			srv->max_sessions);
	}
	srv->pool_part = (pxfer_pool_size(srv->share, t->ring_hdr) + page - 1) /
			 page * page;
	srv->pool_slots = 1;
	ret = pxfer_pool_init(&srv->pool, srv->pool_part * srv->pool_slots);
	if (ret) {
		pxfer_verbose("ring memory made per session: %s", strerror(-ret));
		srv->pool_slots = 0;
	}
}

static void announce(struct recv_server *srv)
{
	char where[256] = "";
	size_t n = 0;

	for (unsigned int i = 0; i < srv->nls; i++)
		n += snprintf(where + n, sizeof(where) - n, "%s%s (%s)",
			      i ? " and " : "", srv->ls[i]->addr,
			      srv->ls[i]->ops->name);
	pxfer_info("pxfer: receiving into '%s' on %s (up to %u sessions)",
	     srv->o->dir, where, srv->max_sessions);
}

/* the authentic HELLO @h on @c: start a session, or say why not */
static void admit(struct recv_server *srv, struct pxfer_conn *c,
		  const struct pxfer_hello *h, const uint8_t *nonce)
{
	char text[PXFER_TEXT_MAX + 1];
	unsigned int slot;
	int ret;

	if (srv->draining) {
		recv_count(&srv->m->sessions[RECV_OUT_REFUSED], 1);
		pxfer_hs_refuse(c, ESHUTDOWN, "the receiver is shutting down");
		c->ops->close(c);
		return;
	}
	if (srv->nsess == srv->max_sessions || (srv->o->once && srv->admitted)) {
		snprintf(text, sizeof(text),
			 "%u of %u sessions running",
			 srv->nsess, srv->max_sessions);
		pxfer_verbose("told a sender from %s to wait: %u sessions are running",
			c->peer, srv->nsess);
		recv_count(&srv->m->sessions[RECV_OUT_BUSY], 1);
		pxfer_hs_refuse(c, EBUSY, text);
		c->ops->close(c);
		return;
	}
	for (slot = 0; srv->sess[slot]; slot++)
		;
	ret = recv_session_start(srv, slot, c, h, nonce);
	if (ret) {
		recv_count(&srv->m->sessions[RECV_OUT_FAILED], 1);
		pxfer_error("cannot start a session for a sender: %s", strerror(-ret));
		return;
	}
	recv_count(&srv->m->running, 1);
	recv_count(&srv->m->ring_used, srv->share);
	/* newcomers from elsewhere may not take the places of the
	 * connections this sender is about to open */
	srv->sess[slot]->vouched = !recv_quota_vouch(&srv->pend->q,
						     srv->sess[slot]->source);
	srv->nsess++;
	srv->admitted++;
}

/*
 * What pending connection @i sent, once it is all there: a HELLO that
 * proves the secret is admitted, a DATA_HELLO goes to its session, and
 * the rest is turned away. 1 while it is still pending.
 */
static int pending_step(struct recv_server *srv, struct recv_pendings *pend,
			unsigned int i, struct pxfer_msg *m)
{
	struct recv_pending *e = &pend->p[i];
	uint8_t nonce[PXFER_NONCE_LEN];
	struct recv_newconn nc;
	struct pxfer_conn *c;
	struct pxfer_hello h;
	int r;

	/* its source failed to authenticate moments ago: it waits, unread */
	if (recv_door_wait(srv, pend, i)) {
		if (pxfer_now() < e->deadline)
			return 1;
		recv_count(&srv->m->door[RECV_DOOR_THROTTLED], 1);
		recv_pending_drop(pend, i);
		return 0;
	}
	r = recv_pending_next(pend, i, m);
	if (r == 0 && pxfer_now() < e->deadline)
		return 1;
	if (r < 0) {
		pxfer_verbose("dropped a connection from %s: it did not open with a HELLO",
			e->c->peer);
		pxfer_hs_refuse(e->c, EPROTO, "expected a HELLO");
	}
	if (r <= 0) {
		recv_count(&srv->m->door[r ? RECV_DOOR_PROTOCOL : RECV_DOOR_TIMEOUT], 1);
		recv_pending_drop(pend, i);
		return 0;
	}
	if (m->type == PXFER_MSG_DATA_HELLO) {
		nc.dh = m->u.data_hello;
		nc.c = recv_pending_take(pend, i, nc.nonce);
		r = recv_session_route(srv, &nc);
		if (r) {
			recv_count(&srv->m->door[RECV_DOOR_NO_SESSION], 1);
			pxfer_verbose("dropped a data connection from %s: %s", nc.c->peer,
				r == -ENOENT ? "no such session" : "not wanted");
			pxfer_hs_refuse(nc.c, EACCES, "not part of a session here");
			nc.c->ops->close(nc.c);
		}
		return 0;
	}
	/* a wrong secret is refused, and logged or counted (door.c) */
	r = recv_door_hello(srv, e->c, e->nonce, m, &h);
	if (r && r != -EACCES) {
		recv_count(&srv->m->door[RECV_DOOR_PROTOCOL], 1);
		pxfer_verbose("dropped a connection from %s: it did not open with a HELLO",
			e->c->peer);
		pxfer_hs_refuse(e->c, EPROTO, "expected a HELLO");
	}
	if (r) {
		recv_pending_drop(pend, i);
		return 0;
	}
	c = recv_pending_take(pend, i, nonce);
	admit(srv, c, &h, nonce);
	return 0;
}

static void accept_new(struct recv_server *srv, struct recv_pendings *pend,
		       const struct pollfd *p)
{
	for (unsigned int i = 0; i < srv->nls; i++) {
		struct pxfer_listener *l = srv->ls[i];
		struct pxfer_conn *c;
		int ret;

		if (!(p[i].revents & POLLIN))
			continue;
		ret = l->ops->accept(l, &c);
		if (!ret) {
			if (recv_pending_add(pend, c))
				recv_count(&srv->m->door[RECV_DOOR_CROWDED], 1);
		} else if (ret != -EAGAIN && !srv->o->quiet) {
			pxfer_warning("could not accept a %s connection: %s",
				l->ops->name, pxfer_worker_setup_error(ret));
		}
	}
}

static void stop_all(struct recv_server *srv)
{
	for (unsigned int i = 0; i < srv->max_sessions; i++)
		if (srv->sess[i])
			recv_session_stop(srv->sess[i]);
}

/*
 * The stop (the pxfer command raises it on a signal): the first raise
 * stops new sessions and gives the running ones --grace seconds to
 * finish; a second one, or the end of the grace, stops them (their
 * incomplete files are removed).
 */
static void on_stop(struct recv_server *srv)
{
	int raised = pxfer_stop_raised(srv->o->stop);
	int n = raised - srv->stops_seen;

	if (n <= 0)
		return;
	srv->stops_seen = raised;
	if (srv->draining || !srv->nsess || srv->o->grace_secs <= 0 || n > 1) {
		if (srv->nsess && !srv->o->quiet)
			pxfer_info("pxfer: stopping %u running session%s", srv->nsess,
			     srv->nsess == 1 ? "" : "s");
		srv->draining = 1;
		srv->drain_end = pxfer_now();
		stop_all(srv);
		return;
	}
	srv->draining = 1;
	srv->drain_end = pxfer_now() + srv->o->grace_secs;
	if (!srv->o->quiet)
		pxfer_info("pxfer: no new sessions; waiting up to %d s for %u running session%s (a second signal stops them now)",
		     srv->o->grace_secs, srv->nsess, srv->nsess == 1 ? "" : "s");
	/* the pending connections stay: among them may be the data
	 * connections of a session that has just started */
}

/*
 * What the partials add up to, for --partial-max(-size): counted in the store
 * when the receiver starts, after the first sweep and before any session
 * (which keep it up to date from then on). The cap on their size is the
 * file system's unless said otherwise: more than it holds could never
 * all be completed.
 */
static void use_init(struct recv_server *srv)
{
	const struct pxfer_recv_opts *o = srv->o;

	srv->use = &srv->m->use;
	srv->use->max_count = o->partial_max;
	srv->use->max_bytes = o->partial_max_bytes;
	atomic_store(&srv->m->partial_max_files, o->partial_max);
	atomic_store(&srv->m->partial_max_bytes, o->partial_max_bytes);
}

static void use_seed(struct recv_server *srv, struct pxfer_partials *ps)
{
	uint64_t n, bytes;
	char h[32];

	srv->use_seeded = 1;
	if (pxfer_partials_scan(ps, &n, &bytes))
		return;
	atomic_store(&srv->use->count, n);
	atomic_store(&srv->use->bytes, bytes);
	if (n)
		pxfer_verbose("%llu partial file%s of %s kept for a later session",
			(unsigned long long)n, n == 1 ? "" : "s",
			pxfer_human(h, sizeof(h), (double)bytes));
}

/*
 * Partial files left by interrupted sessions are kept for --partial-ttl,
 * then removed: looked at when the receiver starts and then every so
 * often (those in use by a session are left alone).
 */
static void sweep(struct recv_server *srv, double now)
{
	double ttl = srv->o->partial_ttl;
	struct pxfer_partials parts;
	int n;

	if (now < srv->sweep_next)
		return;
	srv->sweep_next = now + (ttl > 60 && ttl < 3600 ? ttl : ttl < 60 ? 60 : 3600);
	/* nothing to sweep, and nothing to make, without the store; one
	 * that is not the receiver's is said at once */
	if (faccessat(srv->rootfd, PXFER_STATE_DIR, F_OK, AT_SYMLINK_NOFOLLOW)) {
		srv->use_seeded = 1;
		return;
	}
	if (pxfer_partials_open(&parts, srv->rootfd)) {
		pxfer_partials_warn(&parts, srv->o->dir, &srv->store_warned);
		srv->use_seeded = 1;
		return;
	}
	pxfer_partials_ok(&srv->store_warned);
	parts.use = srv->use;
	n = pxfer_partials_sweep(&parts, ttl, time(NULL));
	if (n > 0)
		pxfer_verbose("removed %d partial file%s older than %.0f s (--partial-ttl)",
			n, n == 1 ? "" : "s", ttl);
	if (!srv->use_seeded)
		use_seed(srv, &parts);
	pxfer_partials_close(&parts);
}

/*
 * The listening loop: accept and challenge newcomers, admit senders,
 * route data connections, reap the sessions that ended.
 */
static int serve(struct recv_server *srv)
{
	struct recv_pendings *pend = srv->pend;
	struct pollfd p[2 + RECV_PENDING_MAX + 2];
	struct pxfer_msg *m = malloc(sizeof(*m));
	int code = PXFER_EXIT_OK, stopped = 0, parked = 0;

	if (!m)
		return PXFER_EXIT_LOCAL;
	for (;;) {
		double now = pxfer_now(), next = recv_door_report(srv, now, 0);
		unsigned int n = 0, i;

		for (i = 0; i < srv->nls; i++, n++) {
			p[n].fd = srv->ls[i]->ops->listener_fd(srv->ls[i]);
			p[n].events = POLLIN;
		}
		n += recv_pending_poll(pend, p + n);
		for (i = 0; i < pend->n; i++) {
			if (pend->p[i].deadline < next)
				next = pend->p[i].deadline;
			if (pend->p[i].hold && pend->p[i].hold < next)
				next = pend->p[i].hold;
		}
		if (srv->draining && srv->nsess && srv->drain_end < next)
			next = srv->drain_end;
		/* a raised stop stays readable: once draining, a second
		 * raise is looked for every STOP_RECHECK_S instead */
		if (srv->draining && now + STOP_RECHECK_S < next)
			next = now + STOP_RECHECK_S;
		/* the sweep is due at start, then every so often */
		if (srv->sweep_next < next)
			next = srv->sweep_next;
		if (parked && now + 1.0 < next)
			next = now + 1.0;
		p[n].fd = srv->draining ? -1 : pxfer_stop_fd(srv->o->stop);
		p[n++].events = POLLIN;
		p[n].fd = srv->ended_fd;
		p[n++].events = POLLIN;
		if (next < now)
			next = now;
		if (poll(p, n, (int)((next - now) * 1000) + 1) < 0 &&
		    errno != EINTR)
			break;
		on_stop(srv);
		if (srv->draining && srv->nsess && pxfer_now() >= srv->drain_end) {
			if (!stopped && !srv->o->quiet)
				pxfer_info("pxfer: the grace period is over; stopping %u session%s",
				     srv->nsess, srv->nsess == 1 ? "" : "s");
			if (!stopped)
				stop_all(srv);
			stopped = 1;
		}
		recv_session_reap(srv, &code);
		sweep(srv, now);
		/* a parked partial waits for more of its job's ranges, for
		 * a while */
		parked = pxfer_rrange_sweep(&srv->shared, 0) > 0;
		if (srv->draining && !srv->nsess) {
			code = PXFER_EXIT_INTR;
			break;
		}
		if (srv->o->once && srv->admitted && !srv->nsess)
			break;
		/* while draining, newcomers are told the receiver is stopping */
		accept_new(srv, pend, p);
		for (i = 0; i < pend->n;)
			i += pending_step(srv, pend, i, m);
	}
	recv_pending_clear(pend);
	stop_all(srv);
	while (srv->nsess) {
		struct pollfd e = { .fd = srv->ended_fd, .events = POLLIN };

		poll(&e, 1, 1000);
		recv_session_reap(srv, &code);
	}
	recv_door_report(srv, pxfer_now(), 1);
	free(m);
	return code;
}

/* serve: the receiver of one pxfer_recv call, its options checked */
int recv_server_run(const struct pxfer_recv_opts *o,
		    struct pxfer_recv_metrics *m,
		    const struct recv_forward *fwd)
{
	struct recv_server *srv;
	int code;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return PXFER_EXIT_LOCAL;
	srv->o = o;
	srv->fwd = fwd;
	srv->m = m ? m : &srv->own;
	srv->rootfd = -1;
	srv->ended_fd = -1;
	srv->max_sessions = o->once ? 1 : o->max_sessions;
	srv->share = o->ring_mem ? o->ring_mem / o->max_sessions : RECV_SHARE_DEFAULT;
	atomic_store(&srv->m->start_time, (uint64_t)time(NULL));
	atomic_store(&srv->m->max_sessions, srv->max_sessions);
	atomic_store(&srv->m->ring_budget, srv->share * srv->max_sessions);
	srv->sess = calloc(srv->max_sessions, sizeof(*srv->sess));
	srv->pend = calloc(1, sizeof(*srv->pend));
	srv->ended_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!srv->sess || !srv->pend || srv->ended_fd < 0 ||
	    recv_shared_init(&srv->shared)) {
		pxfer_error("cannot set up the receiver: %s", strerror(errno ? errno : ENOMEM));
		code = PXFER_EXIT_LOCAL;
		goto out_srv;
	}
	/*
	 * Modes from the wire lose what the umask takes away, as with cp or
	 * scp, unless --perms; read once, before the sessions' threads start
	 * (umask is process wide, and other calls may run: it is read from
	 * /proc, not set to read it). The sticky bit only restricts, so it
	 * stays.
	 */
	srv->mode_mask = o->perms ? 01777 : 01777 & ~pxfer_umask_get();
	if (check_dir(o, &srv->rootfd)) {
		code = PXFER_EXIT_USAGE;
		goto out_srv;
	}
	use_init(srv);
	code = listen_all(srv);
	if (code)
		goto out;
	pool_init(srv);
	if (!o->quiet)
		announce(srv);
	code = serve(srv);
out:
	pxfer_pool_release(&srv->pool);
	for (unsigned int i = 0; i < srv->nls; i++)
		srv->ls[i]->ops->listener_close(srv->ls[i]);
	close(srv->rootfd);
out_srv:
	/* every session has ended: no entry is left */
	pxfer_rrange_sweep(&srv->shared, 1);
	recv_shared_release(&srv->shared);
	if (srv->ended_fd >= 0)
		close(srv->ended_fd);
	free(srv->sess);
	free(srv->pend);
	free(srv);
	return code;
}
