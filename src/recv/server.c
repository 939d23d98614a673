// SPDX-License-Identifier: MIT
/*
 * pxfer_recv: the receiver as a server. It checks the receiving
 * directory, listens on the transports --transport names, challenges
 * every new connection (pending.c) and runs a session (session.c) for the
 * first sender whose HELLO proves the secret; one session at a time, the
 * others pending are told the receiver is busy. It serves until
 * interrupted, or for one session with --once.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/limits.h"
#include "core/log.h"
#include "core/sys.h"
#include "recv/pending.h"
#include "recv/recv.h"

static int check_dir(const struct pxfer_recv_opts *o, int *fdp)
{
	int fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return error("cannot use '%s' as the receiving directory: %s%s",
			     o->dir, strerror(errno),
			     errno == ENOENT ? " (create it first)" : "");
	if (faccessat(fd, ".", W_OK, AT_EACCESS)) {
		close(fd);
		return error("cannot write into '%s': %s", o->dir,
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
		verbose("not listening for %s: %s", t->name, strerror(-ret));
		return 0;
	}
	if (ret == -EADDRINUSE)
		return error("port %s is in use (another 'pxfer recv'? choose another with --port)",
			     o->port);
	if (ret == -EADDRNOTAVAIL || ret == -ENODEV)
		return error("cannot listen for %s on %s port %s: %s (is an RDMA device up with that address? see 'rdma link')",
			     t->name, where, o->port, strerror(-ret));
	return error("cannot listen for %s on %s port %s: %s", t->name, where,
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
	n = pxfer_transport_for_listen(&srv->tc, t, &optional);
	for (unsigned int i = 0; i < n; i++)
		if (listen_one(srv, t[i], i > 0 && optional))
			return PXFER_EXIT_NET;
	return 0;
}

/*
 * A transport that pins its rings (rdma) touches every page of them before
 * the first byte moves: have --ring-mem faulted in while no sender is
 * there yet, and keep it for every session. Without it, rings are mapped
 * per session as before.
 */
static void pool_init(struct recv_server *srv)
{
	const struct pxfer_transport_ops *t = NULL;
	int ret;

	for (unsigned int i = 0; i < srv->nls; i++)
		if (srv->ls[i]->ops->pins_memory)
			t = srv->ls[i]->ops;
	if (!t)
		return;
	ret = pxfer_pool_init(&srv->pool, pxfer_pool_size(srv->o->ring_mem,
							  t->ring_hdr));
	if (ret)
		verbose("ring memory made per session: %s", strerror(-ret));
}

static void announce(struct recv_server *srv)
{
	char where[256] = "";
	size_t n = 0;

	for (unsigned int i = 0; i < srv->nls; i++)
		n += snprintf(where + n, sizeof(where) - n, "%s%s (%s)",
			      i ? " and " : "", srv->ls[i]->addr,
			      srv->ls[i]->ops->name);
	info("pxfer: receiving into '%s' on %s", srv->o->dir, where);
}

/*
 * Read what pending connection @i sent. Returns 1 with @h filled when it
 * is an authentic HELLO, 0 while it is incomplete, -1 when the connection
 * is to be dropped (it was told why where that helps).
 */
static int pending_hello(struct recv_server *srv, struct recv_pendings *pend,
			 unsigned int i, struct pxfer_msg *m,
			 struct pxfer_hello *h)
{
	struct recv_pending *e = &pend->p[i];
	int r = recv_pending_next(pend, i, m);

	if (r == 0)
		return 0;
	if (r > 0)
		r = pxfer_hs_hello_check(&srv->o->secret, e->nonce, m, h);
	if (r == -EACCES) {
		if (!srv->o->quiet)
			warning("refused a sender from %s: authentication failed (wrong secret)",
				e->c->peer);
		pxfer_hs_refuse(e->c, EACCES, "authentication failed");
		return -1;
	}
	if (r < 0) {
		verbose("dropped a connection from %s: it did not open with a HELLO",
			e->c->peer);
		pxfer_hs_refuse(e->c, EPROTO, "expected a HELLO");
		return -1;
	}
	return 1;
}

/* the listener of @c's transport */
static struct pxfer_listener *listener_of(struct recv_server *srv,
					  struct pxfer_conn *c)
{
	for (unsigned int i = 0; i < srv->nls; i++)
		if (srv->ls[i]->ops == c->ops)
			return srv->ls[i];
	return NULL;
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
		if (!ret)
			recv_pending_add(pend, c);
		else if (ret != -EAGAIN && !srv->o->quiet)
			warning("could not accept a %s connection: %s",
				l->ops->name, pxfer_worker_setup_error(ret));
	}
}

/*
 * The listening loop: accept, challenge, and start a session for the first
 * authentic HELLO; the others still pending are told the receiver is busy.
 */
static int serve(struct recv_server *srv)
{
	struct recv_pendings pend = { .n = 0 };
	struct pollfd p[2 + RECV_PENDING_MAX + 1];
	struct pxfer_msg *m = malloc(sizeof(*m));
	int code = PXFER_EXIT_OK;

	if (!m)
		return PXFER_EXIT_LOCAL;
	for (;;) {
		double now = pxfer_now(), next = now + 60;
		struct pxfer_hello h;
		unsigned int n = 0, i;

		for (i = 0; i < srv->nls; i++, n++) {
			p[n].fd = srv->ls[i]->ops->listener_fd(srv->ls[i]);
			p[n].events = POLLIN;
		}
		n += recv_pending_poll(&pend, p + n);
		for (i = 0; i < pend.n; i++)
			if (pend.p[i].deadline < next)
				next = pend.p[i].deadline;
		p[n].fd = srv->sigfd;
		p[n].events = POLLIN;
		if (poll(p, n + 1, (int)((next - now) * 1000) + 1) < 0 &&
		    errno != EINTR)
			break;
		if (pxfer_signal_pending()) {
			code = PXFER_EXIT_INTR;
			break;
		}
		accept_new(srv, &pend, p);
		for (i = 0; i < pend.n;) {
			int r = pending_hello(srv, &pend, i, m, &h);
			uint8_t nonce[PXFER_NONCE_LEN];
			struct pxfer_conn *c;

			if (r == 0 && pxfer_now() < pend.p[i].deadline) {
				i++;
				continue;
			}
			if (r <= 0) {
				recv_pending_drop(&pend, i);
				continue;
			}
			c = recv_pending_take(&pend, i, nonce);
			/* one session at a time: the rest must retry */
			while (pend.n) {
				pxfer_hs_refuse(pend.p[0].c, EBUSY,
						"the receiver is busy with another session; try again later");
				recv_pending_drop(&pend, 0);
			}
			code = recv_session_run(srv, listener_of(srv, c), c, &h,
						nonce);
			if (srv->o->once || code == PXFER_EXIT_INTR)
				goto out;
		}
	}
out:
	recv_pending_clear(&pend);
	free(m);
	return code;
}

/* what the command line checks, for programs that call the library */
static int check_opts(const struct pxfer_recv_opts *o)
{
	if (!o->dir || !o->port)
		return error("pxfer_recv needs a directory and a port");
	if (o->ring_mem < (64u << 10) || o->ring_mem > (4ull << 30))
		return error("pxfer_recv: %llu bytes of ring memory: from 64 KiB to 4 GiB",
			     (unsigned long long)o->ring_mem);
	if (o->max_chunk < PXFER_CHUNK_MIN || o->max_chunk > PXFER_CHUNK_MAX)
		return error("pxfer_recv: a largest chunk of %u: from 4 KiB to 64 MiB",
			     o->max_chunk);
	if (o->secret.len < PXFER_SECRET_MIN || o->secret.len > PXFER_SECRET_MAX)
		return error("pxfer_recv: no secret, or one of %zu bytes: %d to %d",
			     o->secret.len, PXFER_SECRET_MIN, PXFER_SECRET_MAX);
	return 0;
}

int pxfer_recv(const struct pxfer_recv_opts *o)
{
	struct recv_server *srv;
	int code;

	pxfer_log_init(o->verbose);
	if (check_opts(o))
		return PXFER_EXIT_USAGE;
	if (pxfer_auth_init())
		return error("cannot initialise the crypto library"), PXFER_EXIT_LOCAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return PXFER_EXIT_LOCAL;
	srv->o = o;
	srv->rootfd = -1;
	/* while this is the only thread (best effort: it only saves time) */
	pxfer_fd_table_reserve(PXFER_FD_RESERVE);
	if (check_dir(o, &srv->rootfd)) {
		free(srv);
		return PXFER_EXIT_USAGE;
	}
	srv->sigfd = pxfer_signals_install();
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
	pxfer_signals_restore();
	free(srv);
	return code;
}
