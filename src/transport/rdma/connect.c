// SPDX-License-Identifier: MIT
/*
 * The rdma transport's active side: resolving a peer's address and route
 * with rdma_cm and connecting to it, the control connection and then each
 * data connection; the private data of each says which of the two it is.
 */
#include <errno.h>
#include <netdb.h>
#include <string.h>

#include "core/log.h"
#include "core/netaddr.h"
#include "core/sys.h"
#include "transport/rdma/priv.h"

static int addr_resolved(struct rdma_conn *c)
{
	return atomic_load(&c->cm_event) == RDMA_CM_EVENT_ADDR_RESOLVED;
}

static int route_resolved(struct rdma_conn *c)
{
	return atomic_load(&c->cm_event) == RDMA_CM_EVENT_ROUTE_RESOLVED;
}

/*
 * Resolve in short attempts until @timeout_ms: the first resolution of a
 * neighbour can stall in the kernel even after ARP has succeeded (seen on
 * rxe with 6.1), and a fresh attempt then finds it at once.
 */
static int resolve_addr(struct rdma_conn *c, struct sockaddr *src,
			struct sockaddr *dst, int timeout_ms)
{
	int64_t end = pxfer_now_ms() + timeout_ms;
	int ret;

	do {
		int left = (int)(end - pxfer_now_ms());
		int attempt = left < 1000 ? (left > 0 ? left : 1) : 1000;

		atomic_store(&c->cm_event, -1);
		if (rdma_resolve_addr(c->id, src, dst, attempt))
			return -errno;
		ret = rt_conn_wait(c, addr_resolved, attempt + 1000);
		if (ret != -EHOSTUNREACH && ret != -ETIMEDOUT)
			return ret;
		if (ret == -ETIMEDOUT)
			return ret;	/* no event at all: the id is busy */
	} while (pxfer_now_ms() < end);
	return ret;
}

/*
 * @slots: 0 for the control connection, else the slots of the receiver's
 * ring. A data QP's send queue holds two work requests per slot and the
 * handshake's sends (sizing it for the largest ring instead costs ~4 ms
 * per QP under emulation, and memory).
 */
static int rt_connect_to(const char *host, const char *port,
			   const char *bind_addr, int timeout_ms,
			   unsigned int slots, struct rdma_conn **out)
{
	enum conn_kind kind = slots ? KIND_DATA : KIND_CTRL;
	struct addrinfo *dst = NULL, *src = NULL;
	struct rdma_conn_param param;
	struct rdma_ctx *ctx;
	struct rdma_conn *c;
	uint8_t priv[8];
	int ret;

	ret = rt_ctx_get(&ctx, rt_progress_main);
	if (ret)
		return ret;
	c = rt_conn_alloc(ctx);
	if (!c) {
		rt_ctx_put(ctx);
		return -ENOMEM;
	}
	c->kind = kind;
	c->rslots_max = slots;
	ret = pxfer_addr_resolve(host, port, AF_UNSPEC, 0, &dst);
	if (!ret && bind_addr)
		ret = pxfer_addr_resolve(bind_addr, NULL, AF_UNSPEC, 1, &src);
	if (ret)
		goto out_free;
	if (rdma_create_id(ctx->ech, &c->id, c, RDMA_PS_TCP)) {
		ret = -errno;
		goto out_free;
	}
	ret = resolve_addr(c, src ? src->ai_addr : NULL, dst->ai_addr,
			   timeout_ms);
	pxfer_verbose("rdma: resolving the address of %s: %s", host,
		ret ? strerror(-ret) : "done");
	if (ret)
		goto out_free;
	if (rdma_resolve_route(c->id, timeout_ms)) {
		ret = -errno;
		goto out_free;
	}
	/* the address names the device: get its context (made the first
	 * time) while the route resolves */
	ret = rt_dev_get(ctx, c->id->verbs, 0, &c->dev);
	{
		int r = rt_conn_wait(c, route_resolved, timeout_ms);

		pxfer_verbose("rdma: resolving the route to %s: %s", host,
			r ? strerror(-r) : "done");
		if (r)
			ret = r;
	}
	if (!ret)
		ret = rt_conn_qp(c, slots ? 2 * slots + RDMA_DATA_SENDS
					  : RDMA_CTRL_BUFS + 2);
	if (ret)
		goto out_free;
	rt_set_ack_timeout(c->id);
	rt_conn_param_init(&param, priv, kind);
	if (rdma_connect(c->id, &param)) {
		ret = -errno;
		goto out_free;
	}
	ret = rt_conn_wait(c, rt_conn_established, timeout_ms);
	pxfer_verbose("rdma: connecting to %s: %s", host, ret ? strerror(-ret) : "done");
	if (ret)
		goto out_free;
	pxfer_addr_format(rdma_get_peer_addr(c->id), c->conn.peer, sizeof(c->conn.peer));
	pxfer_addr_source(rdma_get_peer_addr(c->id), c->conn.source,
			  sizeof(c->conn.source));
	if (kind == KIND_CTRL)
		rt_describe_route(c->id, c->conn.peer);
	freeaddrinfo(dst);
	if (src)
		freeaddrinfo(src);
	*out = c;
	return 0;

out_free:
	if (dst)
		freeaddrinfo(dst);
	if (src)
		freeaddrinfo(src);
	rt_conn_free(c);
	return ret;
}

/* each rdma_cm connection says in its private data whether it is data */
int rt_connect_op(const char *host, const char *port,
		  const char *bind_addr, int timeout_ms,
		  unsigned int slots, struct pxfer_conn **out)
{
	struct rdma_conn *c = NULL;
	int ret;

	if (slots > PXFER_SLOTS_MAX)
		return -EINVAL;
	ret = rt_connect_to(host, port, bind_addr, timeout_ms, slots, &c);
	if (ret)
		return ret;
	*out = &c->conn;
	return 0;
}
