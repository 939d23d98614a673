// SPDX-License-Identifier: MIT
/*
 * The rdma transport's passive side: listening, and accepting a control
 * or data connection. The progress thread queues each connect request
 * that carries pxfer's private data on the listener and wakes its eventfd
 * (progress.c); accept takes the oldest, gets the context of the device
 * it arrived on (a listener on the wildcard address takes requests from
 * every device), gives it a QP with its receives posted, and accepts it.
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
	ret = l->efd < 0 ? -errno : rt_ctx_get(&l->ctx);
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

int rt_accept_op(struct pxfer_listener *pl, struct pxfer_conn **out)
{
	struct rdma_listener *l = to_rlis(pl);
	struct rdma_ctx *ctx = l->ctx;
	struct rdma_conn_param param;
	struct rdma_cm_id *id;
	struct rdma_conn *c;
	uint8_t priv[8], kind;
	int ret;

	pxfer_drain(l->efd);
	pthread_mutex_lock(&ctx->lock);
	if (!l->npending) {
		pthread_mutex_unlock(&ctx->lock);
		return -EAGAIN;
	}
	id = l->pending[0];
	kind = l->pending_kind[0];
	memmove(l->pending, l->pending + 1, --l->npending * sizeof(*l->pending));
	memmove(l->pending_kind, l->pending_kind + 1, l->npending);
	if (l->npending)
		pxfer_wake(l->efd);
	pthread_mutex_unlock(&ctx->lock);

	rt_ctx_hold(ctx);
	c = rt_conn_alloc(ctx);
	if (!c) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		rt_ctx_put(ctx);
		return -ENOMEM;
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
	pthread_mutex_unlock(&ctx->lock);
	rt_set_ack_timeout(id);
	rt_conn_param_init(&param, priv, kind);
	if (rdma_accept(id, &param)) {
		ret = -errno;
		goto out_free;
	}
	ret = rt_conn_wait(c, rt_conn_established, 15000);
	verbose("rdma: accepting a %s connection: %s",
		kind == KIND_CTRL ? "control" : "data", ret ? strerror(-ret) : "done");
	if (ret)
		goto out_free;
	pxfer_addr_format(rdma_get_peer_addr(id), c->conn.peer, sizeof(c->conn.peer));
	pxfer_addr_source(rdma_get_peer_addr(id), c->conn.source,
			  sizeof(c->conn.source));
	if (kind == KIND_CTRL)
		rt_describe_route(id, c->conn.peer);
	*out = &c->conn;
	return 0;

out_free:
	rt_conn_free(c);
	return ret;
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
	rdma_destroy_id(l->id);
	for (unsigned int i = 0; i < l->ndevs; i++)
		rt_dev_put(l->devs[i]);
	close(l->efd);
	free(l);
	rt_ctx_put(ctx);
}
