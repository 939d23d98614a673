// SPDX-License-Identifier: MIT
/*
 * The rdma transport's passive side: listening, and accepting a control
 * or data connection. The progress thread queues each connect request
 * that carries pxfer's private data on the listener and wakes its eventfd
 * (progress.c); accept takes them, gets the context of the device each
 * arrived on (a listener on the wildcard address takes requests from
 * every device), gives it a QP with its receives posted, and accepts it;
 * it hands out a connection once it is established, which wakes the
 * eventfd again, without waiting for it: a peer that never completes
 * the handshake holds nothing but its place, for RDMA_ACCEPT_SECS.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"
#include "core/netaddr.h"
#include "core/sys.h"
#include "transport/rdma/priv.h"
#include "transport/rdma/rdma.h"

int rt_listen(const char *bind_addr, const char *port,
	      struct pxfer_listener **out)
{
	struct rdma_listener *l;
	struct addrinfo *ai;
	int ret;

	ret = pxfer_addr_resolve(bind_addr ? bind_addr : "0.0.0.0", port, AF_UNSPEC, 1, &ai);
	if (ret)
		return ret;
	l = calloc(1, sizeof(*l));
	if (!l) {
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	l->l.ops = &pxfer_rdma_ops;
	l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ret = l->efd < 0 ? -errno : rt_ctx_get(&l->ctx, rt_progress_main);
	if (ret)
		goto out_free;
	if (rdma_create_id(l->ctx->ech, &l->id, NULL, RDMA_PS_TCP)) {
		ret = -errno;
		goto out_ctx;
	}
	if (rdma_bind_addr(l->id, ai->ai_addr) || rdma_listen(l->id, 64)) {
		ret = -errno;
		goto out_id;
	}
	pxfer_addr_format(rdma_get_local_addr(l->id), l->l.addr, sizeof(l->l.addr));
	/*
	 * Bound to an address of one device: set that device up now, so the
	 * first connection of a session does not wait for it (about 15 ms on
	 * the emulated test bed). A failure here is not final: the first
	 * accepted connection tries again and reports it.
	 */
	if (l->id->verbs && !rt_dev_get(l->ctx, l->id->verbs, 1, &l->devs[0]))
		l->ndevs = 1;
	pthread_mutex_lock(&l->ctx->lock);
	l->ctx->listener = l;
	pthread_mutex_unlock(&l->ctx->lock);
	freeaddrinfo(ai);
	*out = &l->l;
	return 0;

out_id:
	rdma_destroy_id(l->id);
out_ctx:
	rt_ctx_put(l->ctx);
out_free:
	if (l->efd >= 0)
		close(l->efd);
	free(l);
	freeaddrinfo(ai);
	return ret;
}

/*
 * Keep the context of a device the listener accepted on until it closes,
 * as one bound to that device's address does from the start: the next
 * session on it does not wait for its queues to be made again.
 */
static void listener_keep(struct rdma_listener *l, struct rdma_dev *d)
{
	for (unsigned int i = 0; i < l->ndevs; i++)
		if (l->devs[i] == d)
			return;
	if (l->ndevs == RDMA_DEVS_MAX)
		return;
	rt_dev_hold(d);
	l->devs[l->ndevs++] = d;
}

int rt_listener_fd(struct pxfer_listener *pl)
{
	return to_rlis(pl)->efd;
}

/* the oldest connect request, or NULL; *@kind its kind */
static struct rdma_cm_id *pending_take(struct rdma_listener *l, uint8_t *kind)
{
	struct rdma_ctx *ctx = l->ctx;
	struct rdma_cm_id *id = NULL;

	pthread_mutex_lock(&ctx->lock);
	if (l->npending) {
		id = l->pending[0];
		*kind = l->pending_kind[0];
		memmove(l->pending, l->pending + 1, --l->npending * sizeof(*l->pending));
		memmove(l->pending_kind, l->pending_kind + 1, l->npending);
	}
	pthread_mutex_unlock(&ctx->lock);
	return id;
}

/*
 * Give connect request @id a connection with a QP and its receives, and
 * accept it. Not waited for: a peer that never completes the handshake
 * (a half-open connect) must not hold the thread that serves the others.
 */
static void accept_start(struct rdma_listener *l, struct rdma_cm_id *id,
			 uint8_t kind)
{
	struct rdma_ctx *ctx = l->ctx;
	struct rdma_conn_param param;
	struct rdma_conn *c;
	uint8_t priv[8];
	int ret;

	if (l->naccepting == RDMA_ACCEPTING_MAX) {
		pxfer_verbose("rdma: refused a connection: %u accepted ones are not yet established",
			RDMA_ACCEPTING_MAX);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	rt_ctx_hold(ctx);
	c = rt_conn_alloc(ctx);
	if (!c) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		rt_ctx_put(ctx);
		return;
	}
	c->kind = kind;
	c->id = id;
	/* the device the request arrived on */
	ret = rt_dev_get(ctx, id->verbs, 0, &c->dev);
	if (!ret)
		listener_keep(l, c->dev);
	if (!ret)
		ret = rt_conn_qp(c, kind == KIND_CTRL ? RDMA_CTRL_BUFS + 2 : 16);
	if (ret) {
		rdma_reject(id, NULL, 0);
		goto out_free;
	}
	pthread_mutex_lock(&ctx->lock);
	id->context = c;
	c->acceptor = l;
	pthread_mutex_unlock(&ctx->lock);
	rt_set_ack_timeout(id);
	rt_conn_param_init(&param, priv, kind);
	if (rdma_accept(id, &param)) {
		ret = -errno;
		goto out_free;
	}
	l->accepting[l->naccepting] = c;
	l->accepted_at[l->naccepting++] = pxfer_now();
	return;

out_free:
	pxfer_verbose("rdma: accepting a %s connection: %s",
		kind == KIND_CTRL ? "control" : "data", strerror(-ret));
	rt_conn_free(c);
}

static void accepting_drop(struct rdma_listener *l, unsigned int i)
{
	l->naccepting--;
	memmove(l->accepting + i, l->accepting + i + 1,
		(l->naccepting - i) * sizeof(*l->accepting));
	memmove(l->accepted_at + i, l->accepted_at + i + 1,
		(l->naccepting - i) * sizeof(*l->accepted_at));
}

/* accepted connection @c is established: it is the listener's no more */
static void accept_done(struct rdma_listener *l, struct rdma_conn *c)
{
	struct rdma_cm_id *id = c->id;

	pthread_mutex_lock(&l->ctx->lock);
	c->acceptor = NULL;
	pthread_mutex_unlock(&l->ctx->lock);
	pxfer_verbose("rdma: accepted a %s connection",
		c->kind == KIND_CTRL ? "control" : "data");
	pxfer_addr_format(rdma_get_peer_addr(id), c->conn.peer, sizeof(c->conn.peer));
	pxfer_addr_source(rdma_get_peer_addr(id), c->conn.source,
			  sizeof(c->conn.source));
	if (c->kind == KIND_CTRL)
		rt_describe_route(id, c->conn.peer);
}

/*
 * The first accepted connection that is established, or -EAGAIN; those
 * that failed or were not established within RDMA_ACCEPT_SECS go.
 */
static int accepted_next(struct rdma_listener *l, struct pxfer_conn **out)
{
	double now = pxfer_now();

	for (unsigned int i = 0; i < l->naccepting;) {
		struct rdma_conn *c = l->accepting[i];
		int ret = rt_conn_cm_error(c);

		if (!ret && atomic_load(&c->established)) {
			accepting_drop(l, i);
			accept_done(l, c);
			/* the next one is taken at the next call */
			if (l->naccepting)
				pxfer_wake(l->efd);
			*out = &c->conn;
			return 0;
		}
		if (!ret && now - l->accepted_at[i] < RDMA_ACCEPT_SECS) {
			i++;
			continue;
		}
		pxfer_verbose("rdma: accepting a %s connection: %s",
			c->kind == KIND_CTRL ? "control" : "data",
			strerror(ret ? -ret : ETIMEDOUT));
		accepting_drop(l, i);
		rt_conn_free(c);
	}
	return -EAGAIN;
}

int rt_accept_op(struct pxfer_listener *pl, struct pxfer_conn **out)
{
	struct rdma_listener *l = to_rlis(pl);
	struct rdma_cm_id *id;
	uint8_t kind;

	pxfer_drain(l->efd);
	while ((id = pending_take(l, &kind)))
		accept_start(l, id, kind);
	return accepted_next(l, out);
}

void rt_listener_close(struct pxfer_listener *pl)
{
	struct rdma_listener *l = to_rlis(pl);
	struct rdma_ctx *ctx = l->ctx;

	pthread_mutex_lock(&ctx->lock);
	ctx->listener = NULL;
	pthread_mutex_unlock(&ctx->lock);
	/*
	 * Not under ctx->lock: destroying an id waits until its events are
	 * acknowledged, and the progress thread takes that lock before it
	 * acknowledges one. Without ctx->listener it adds no pending ids.
	 */
	for (unsigned int i = 0; i < l->npending; i++) {
		rdma_reject(l->pending[i], NULL, 0);
		rdma_destroy_id(l->pending[i]);
	}
	for (unsigned int i = 0; i < l->naccepting; i++)
		rt_conn_free(l->accepting[i]);
	rdma_destroy_id(l->id);
	for (unsigned int i = 0; i < l->ndevs; i++)
		rt_dev_put(l->devs[i]);
	close(l->efd);
	free(l);
	rt_ctx_put(ctx);
}
