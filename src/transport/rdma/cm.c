// SPDX-License-Identifier: MIT
/*
 * An rdma connection through its life, for connect.c and listen.c alike:
 * the object and its eventfd, its QP on its device's shared CQ (receives
 * posted before the peer may send), the rdma_cm parameters both sides
 * use, waiting for the progress thread to record an rdma_cm event, the
 * state the engine polls, and the end: disconnecting, and freeing the QP
 * with the connection's shares of its device's queues.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/log.h"
#include "core/sys.h"
#include "transport/rdma/priv.h"
#include "transport/rdma/rdma.h"

struct rdma_conn *rt_conn_alloc(struct rdma_ctx *ctx)
{
	struct rdma_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->conn.ops = &pxfer_rdma_ops;
	c->ctx = ctx;
	/* 0 is RDMA_CM_EVENT_ADDR_RESOLVED: start from no event at all */
	atomic_store(&c->cm_event, -1);
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->efd < 0) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

int rt_conn_cm_error(struct rdma_conn *c)
{
	if (atomic_load(&c->port_down))
		return -ENETDOWN;
	switch (atomic_load(&c->cm_event)) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_REJECTED:
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return -ECONNABORTED;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ECONNRESET;
	default:
		return 0;
	}
}

/* wait until @done(c) or an error; returns 0, -ETIMEDOUT or -errno */
int rt_conn_wait(struct rdma_conn *c, int (*done)(struct rdma_conn *),
		 int timeout_ms)
{
	int64_t end = pxfer_now_ms() + timeout_ms;

	while (!done(c)) {
		struct pollfd p = { .fd = c->efd, .events = POLLIN };
		int64_t left = end - pxfer_now_ms();
		int ret = rt_conn_cm_error(c);

		if (ret)
			return ret;
		if (left <= 0)
			return -ETIMEDOUT;
		poll(&p, 1, left > 200 ? 200 : (int)left);
		pxfer_drain(c->efd);
	}
	return 0;
}

int rt_conn_established(struct rdma_conn *c)
{
	return atomic_load(&c->established);
}

/* create the QP on its device's CQ and post receives before any peer send */
int rt_conn_qp(struct rdma_conn *c, unsigned int send_wr)
{
	struct rdma_ctx *ctx = c->ctx;
	struct rdma_dev *d = c->dev;
	struct ibv_qp_init_attr qa = {
		.send_cq = d->cq,
		.recv_cq = d->cq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = send_wr,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_recv_wr = c->kind == KIND_CTRL ? RDMA_CTRL_BUFS : 0,
		},
		.srq = c->kind == KIND_DATA ? d->srq : NULL,
	};
	unsigned int b;
	int ret;

	ret = rt_conn_buffers(c);
	if (ret)
		return ret;
	/* the receives and sends this QP can have pending (handshake sends
	 * on a data QP; a sender's ring adds its writes when registered) */
	ret = rt_cq_reserve(d, c->nsend + qa.cap.max_recv_wr);
	if (ret)
		return ret;
	c->cq_share = c->nsend + qa.cap.max_recv_wr;
	if (rdma_create_qp(c->id, d->pd, &qa))
		return -errno;
	c->sq_depth = qa.cap.max_send_wr;
	if (c->kind == KIND_CTRL)
		for (unsigned int i = 0; i < RDMA_CTRL_BUFS; i++) {
			ret = rt_ctrl_recv_post(c, i);
			if (ret)
				return ret;
		}
	c->qpn = c->id->qp->qp_num;
	b = rt_qpn_bucket(d, c->qpn);
	pthread_mutex_lock(&ctx->lock);
	c->next = ctx->conns;
	ctx->conns = c;
	c->qpn_next = ctx->by_qpn[b];
	ctx->by_qpn[b] = c;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/*
 * Both ends use a short ACK timeout, so a SEND or WRITE to a peer that is
 * gone fails within about two seconds (268 ms x 7 retries) on either side.
 */
void rt_set_ack_timeout(struct rdma_cm_id *id)
{
	uint8_t t = RDMA_ACK_TIMEOUT;

	rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t,
			sizeof(t));
}

void rt_conn_param_init(struct rdma_conn_param *p, uint8_t *priv,
			enum conn_kind kind)
{
	memset(p, 0, sizeof(*p));
	priv[0] = RDMA_PRIV_MAGIC >> 24;
	priv[1] = (RDMA_PRIV_MAGIC >> 16) & 0xff;
	priv[2] = (RDMA_PRIV_MAGIC >> 8) & 0xff;
	priv[3] = RDMA_PRIV_MAGIC & 0xff;
	priv[4] = kind;
	p->private_data = priv;
	p->private_data_len = 5;
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	/* receives are always posted before a peer may send: never RNR */
	p->rnr_retry_count = 0;
}

static void conn_unlink(struct rdma_conn *c)
{
	struct rdma_ctx *ctx = c->ctx;

	pthread_mutex_lock(&ctx->lock);
	for (struct rdma_conn **pp = &ctx->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	/* linked only once its QP was made (c->dev is set then) */
	for (struct rdma_conn **pp = c->dev ? &ctx->by_qpn[rt_qpn_bucket(c->dev, c->qpn)] : NULL;
	     pp && *pp; pp = &(*pp)->qpn_next) {
		if (*pp == c) {
			*pp = c->qpn_next;
			break;
		}
	}
	if (c->id)
		c->id->context = NULL;
	pthread_mutex_unlock(&ctx->lock);
}

void rt_conn_free(struct rdma_conn *c)
{
	struct rdma_ctx *ctx = c->ctx;
	struct rdma_dev *d = c->dev;

	conn_unlink(c);
	/* the window first: it holds on to the QP and the ring's region */
	if (c->ring_mw)
		ibv_dealloc_mw(c->ring_mw);
	if (c->id) {
		if (c->id->qp)
			rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
	}
	/* messages never read: their buffers go back to the shared queue */
	for (; c->rx_count; c->rx_count--, c->rx_head = (c->rx_head + 1) % RDMA_RX_Q)
		if (WR_KIND(c->rx[c->rx_head].wr_id) == WR_SRQ_RECV)
			rt_srq_refill(d, WR_INDEX(c->rx[c->rx_head].wr_id));
	if (c->srq_share)
		rt_srq_want_add(d, -(int)c->srq_share);
	if (c->cq_share)
		rt_cq_reserve(d, -c->cq_share);
	if (c->ring_mr)
		ibv_dereg_mr(c->ring_mr);
	for (unsigned int i = 0; i < RDMA_EXT_MAX; i++)
		if (c->ext[i].mr)
			ibv_dereg_mr(c->ext[i].mr);
	if (c->buf_mr)
		ibv_dereg_mr(c->buf_mr);
	if (c->bufs)
		munmap(c->bufs, c->buf_bytes);
	free(c->slotq);
	close(c->efd);
	pthread_mutex_destroy(&c->lock);
	free(c);
	/* its memory regions are gone: the device's PD may go */
	if (d)
		rt_dev_put(d);
	rt_ctx_put(ctx);
}

static int sends_done(struct rdma_conn *c)
{
	int done;

	pthread_mutex_lock(&c->lock);
	done = c->send_free == (1ull << c->nsend) - 1 ||
	       atomic_load(&c->wc_error) || atomic_load(&c->peer_closed) ||
	       atomic_load(&c->port_down);
	pthread_mutex_unlock(&c->lock);
	return done;
}

static const char *qp_state_name(struct ibv_qp *qp)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
		[IBV_QPS_RTR] = "RTR", [IBV_QPS_RTS] = "RTS",
		[IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init) ||
	    (unsigned int)a.qp_state >= sizeof(names) / sizeof(names[0]) ||
	    !names[a.qp_state])
		return "unknown";
	return names[a.qp_state];
}

/* a last message (ACK, ABORT) leaves before the QP goes away, or after
 * RDMA_CLOSE_WAIT_MS the connection is closed anyway, and that is said */
#define RDMA_CLOSE_WAIT_MS	2000

static void close_wait_sends(struct rdma_conn *c)
{
	unsigned int left;

	if (!rt_conn_wait(c, sends_done, RDMA_CLOSE_WAIT_MS))
		return;
	pthread_mutex_lock(&c->lock);
	left = c->nsend - (unsigned int)__builtin_popcountll(c->send_free);
	pthread_mutex_unlock(&c->lock);
	pxfer_warning("rdma: closing the %s connection to %s with %u message%s not acknowledged after %d s (QP state %s, last rdma_cm event %s)",
		c->kind == KIND_CTRL ? "control" : "data", c->conn.peer, left,
		left == 1 ? "" : "s", RDMA_CLOSE_WAIT_MS / 1000,
		qp_state_name(c->id->qp),
		rdma_event_str(atomic_load(&c->cm_event)));
}

void rt_close(struct pxfer_conn *pc)
{
	struct rdma_conn *c = to_rconn(pc);

	if (c->chunks)
		pxfer_verbose("rdma: data connection to %s: %llu chunks, at most %u work requests outstanding (credit bound %u, send queue depth %u)",
			c->conn.peer, (unsigned long long)c->chunks,
			atomic_load(&c->wr_max), 2 * c->ring->nslots, c->sq_depth);
	if (c->id && c->id->qp && atomic_load(&c->established))
		close_wait_sends(c);
	atomic_store(&c->closing, 1);
	if (c->id && atomic_load(&c->established))
		rdma_disconnect(c->id);
	rt_conn_free(c);
}

void rt_shutdown(struct pxfer_conn *pc)
{
	struct rdma_conn *c = to_rconn(pc);

	atomic_store(&c->closing, 1);
	if (c->id && atomic_load(&c->established))
		rdma_disconnect(c->id);
	pxfer_wake(c->efd);
}

int rt_conn_fd(struct pxfer_conn *pc)
{
	return to_rconn(pc)->efd;
}

short rt_poll_events(struct pxfer_conn *c, int want_send)
{
	/* completions and credits are announced on the eventfd */
	return POLLIN;
}
