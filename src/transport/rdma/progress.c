// SPDX-License-Identifier: MIT
/*
 * The rdma transport's progress thread, one per process context. It
 * serves the context's rdma_cm event channel and, for each device
 * context, its completion channel and the device's asynchronous events:
 * it turns rdma_cm events into connection state (and hands connect
 * requests to the listener), dispatches completions to the connection
 * they belong to (by device and QP number), fails the connections on a
 * port that went down, and wakes whoever waits on each connection's
 * eventfd. It busy-polls the completion queues while sends are in flight
 * (PXFER_RDMA_SPIN polls) and sleeps on the channels when idle.
 *
 * It uses a device context only under ctx->lock and only while the
 * context is on ctx->devs, which is how rt_dev_put knows it may free one.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <string.h>

#include "core/log.h"
#include "core/sys.h"
#include "transport/rdma/priv.h"

/* what the thread does now, for teardown to say if it does not end
 * (relaxed: it is read only then, and this runs on every turn) */
static inline void doing(struct rdma_ctx *ctx, const char *what)
{
	atomic_store_explicit(&ctx->doing, what, memory_order_relaxed);
}

/* QP numbers are per device: two devices may both have QP 17 */
static struct rdma_conn *conn_by_qpn(struct rdma_ctx *ctx,
				     const struct rdma_dev *d, uint32_t qpn)
{
	for (struct rdma_conn *c = ctx->by_qpn[rt_qpn_bucket(d, qpn)]; c;
	     c = c->qpn_next)
		if (c->dev == d && c->qpn == qpn)
			return c;
	return NULL;
}

/* what a failed work completion most likely means, said to the user */
static const char *wc_hint(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_RETRY_EXC_ERR:
		return "; the peer stopped acknowledging: it is gone or unreachable, or the two sides' GIDs do not route to each other (-v shows the GID used)";
	case IBV_WC_LOC_QP_OP_ERR:
		return "; the local device could not send the request (with Soft-RoCE: the network interface is down or has no route to the peer)";
	case IBV_WC_REM_ACCESS_ERR:
		return "; the peer refused access to its memory";
	default:
		return "";
	}
}

static void on_wc_error(struct rdma_conn *c, const struct ibv_wc *wc)
{
	/* flushes follow a disconnect, a port lost or an earlier error:
	 * not news */
	if (wc->status == IBV_WC_WR_FLUSH_ERR &&
	    (atomic_load(&c->closing) || atomic_load(&c->peer_closed) ||
	     atomic_load(&c->wc_error) || atomic_load(&c->port_down)))
		return;
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		atomic_store(&c->peer_closed, 1);
		return;
	}
	if (atomic_load(&c->wc_error))
		return;
	atomic_store(&c->wc_error, wc->status);
	/* a data connection's loss need not end the session: the others
	 * take its chunks (failover), and the engine says so */
	if (c->kind == KIND_CTRL)
		pxfer_error("rdma: control connection to %s failed: %s (work completion status %d)%s",
		      c->conn.peer, ibv_wc_status_str(wc->status), wc->status,
		      wc_hint(wc->status));
	else
		pxfer_warning("rdma: data connection to %s failed: %s (work completion status %d)%s",
			c->conn.peer, ibv_wc_status_str(wc->status), wc->status,
			wc_hint(wc->status));
}

static void handle_wc(struct rdma_ctx *ctx, struct rdma_dev *d,
		      const struct ibv_wc *wc)
{
	uint64_t kind = WR_KIND(wc->wr_id), idx = WR_INDEX(wc->wr_id);
	struct rdma_conn *c;
	int is_srq = kind == WR_SRQ_RECV;

	if (kind == WR_SEND || kind == WR_DATA)
		atomic_fetch_sub(&d->inflight, 1);
	if (is_srq)
		d->srq_used++;	/* the progress thread's alone */
	c = conn_by_qpn(ctx, d, wc->qp_num);
	if (is_srq && (!c || wc->status != IBV_WC_SUCCESS ||
		       wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)) {
		/* the receive is used up: put it back at once */
		rt_srq_refill(d, idx);
	}
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	if (wc->status != IBV_WC_SUCCESS) {
		on_wc_error(c, wc);
		if (kind == WR_SEND)
			c->send_free |= 1ull << idx;
	} else if (kind == WR_SEND) {
		c->send_free |= 1ull << idx;
		atomic_fetch_sub(&c->wr_out, 1);
	} else if (kind == WR_BIND) {
		atomic_store(&c->mw_bound, 1);
		atomic_fetch_sub(&c->wr_out, 1);
	} else if (kind == WR_DATA) {
		rt_slotq_push(c, idx);
		atomic_fetch_sub(&c->wr_out, 2);
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		/* only a receiver's ring is written to; anywhere else the
		 * queue holds our own finished sends */
		if (c->srq_share)
			rt_slotq_push(c, ntohl(wc->imm_data) & 0xffff);
		else
			atomic_store(&c->wc_error, IBV_WC_REM_OP_ERR);
	} else if (kind == WR_CTRL_RECV) {
		rt_on_recv(c, wc, c->bufs + idx * RDMA_CTRL_BUF);
	} else if (is_srq) {
		rt_on_recv(c, wc, d->small + idx * RDMA_SMALL_BUF);
	}
	pthread_mutex_unlock(&c->lock);
	pxfer_wake(c->efd);
}

/* every device's CQ, under ctx->lock; completions taken, and whether any
 * device has signaled sends in flight */
static int poll_cqs(struct rdma_ctx *ctx, int *inflight)
{
	struct ibv_wc wc[32];
	int n, total = 0;

	*inflight = 0;
	doing(ctx, "polling the completion queues");
	pthread_mutex_lock(&ctx->lock);
	for (struct rdma_dev *d = ctx->devs; d; d = d->next) {
		while ((n = ibv_poll_cq(d->cq, 32, wc)) > 0) {
			for (int i = 0; i < n; i++)
				handle_wc(ctx, d, &wc[i]);
			total += n;
		}
		if (atomic_load(&d->inflight))
			*inflight = 1;
	}
	pthread_mutex_unlock(&ctx->lock);
	return total;
}

/*
 * A port went down: every connection on it fails now, as if its QP had
 * gone to error, rather than when its peer's silence times it out (or
 * never: a QP with nothing to send does not notice). The flushes that
 * follow stay silent.
 */
static int on_port(const struct rdma_conn *c, const struct rdma_dev *d,
		   unsigned int port)
{
	return c->dev == d && c->id && c->id->port_num == port;
}

static void port_lost(struct rdma_ctx *ctx, struct rdma_dev *d,
		      unsigned int port)
{
	unsigned int n = 0;

	for (struct rdma_conn *c = ctx->conns; c; c = c->next)
		n += on_port(c, d, port);
	/* said before the failures it explains are */
	pxfer_verbose("rdma: %s port %u went down (its network interface is down or has no carrier): %u connection%s on it fail",
		rt_dev_name(d), port, n, n == 1 ? "" : "s");
	for (struct rdma_conn *c = ctx->conns; c; c = c->next) {
		if (!on_port(c, d, port))
			continue;
		atomic_store(&c->port_down, 1);
		pxfer_wake(c->efd);
	}
}

/* a device's asynchronous events, each acknowledged: QPs and CQs cannot
 * be destroyed while one of theirs that was read is not */
static void drain_async(struct rdma_ctx *ctx, struct rdma_dev *d)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(d->verbs, &ev)) {
		unsigned int port = ev.element.port_num;

		switch (ev.event_type) {
		case IBV_EVENT_PORT_ERR:
			if (port >= 1 && port <= d->nports)
				atomic_store(&d->port_state[port], IBV_PORT_DOWN);
			port_lost(ctx, d, port);
			break;
		case IBV_EVENT_PORT_ACTIVE:
			if (port >= 1 && port <= d->nports)
				atomic_store(&d->port_state[port], IBV_PORT_ACTIVE);
			pxfer_verbose("rdma: %s port %u is active", rt_dev_name(d), port);
			break;
		case IBV_EVENT_DEVICE_FATAL:
			pxfer_error("rdma: device %s failed (a fatal device error): its connections end",
			      rt_dev_name(d));
			for (port = 1; port <= d->nports; port++)
				port_lost(ctx, d, port);
			break;
		default:
			break;
		}
		ibv_ack_async_event(&ev);
	}
}

/* returns an id to destroy once its event is acknowledged, or NULL */
static struct rdma_cm_id *handle_cm_event(struct rdma_ctx *ctx,
					  struct rdma_cm_event *ev)
{
	struct rdma_listener *l = ctx->listener;
	struct rdma_conn *c;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		const uint8_t *pd = ev->param.conn.private_data;
		uint32_t magic = 0;
		uint8_t kind = 0;

		if (pd && ev->param.conn.private_data_len >= 5) {
			magic = ((uint32_t)pd[0] << 24) | (pd[1] << 16) |
				(pd[2] << 8) | pd[3];
			kind = pd[4];
		}
		ev->id->context = NULL;
		if (!l || magic != RDMA_PRIV_MAGIC || kind > KIND_DATA ||
		    l->npending == RDMA_PENDING_MAX) {
			rdma_reject(ev->id, NULL, 0);
			return ev->id;
		}
		l->pending[l->npending] = ev->id;
		l->pending_kind[l->npending] = kind;
		l->npending++;
		pxfer_wake(l->efd);
		return NULL;
	}
	c = ev->id->context;
	if (!c)
		return NULL;
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		atomic_store(&c->established, 1);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		atomic_store(&c->peer_closed, 1);
		break;
	default:
		break;
	}
	atomic_store(&c->cm_event, ev->event);
	pxfer_wake(c->efd);
	if (c->acceptor)
		pxfer_wake(c->acceptor->efd);
	return NULL;
}

static void drain_cm(struct rdma_ctx *ctx)
{
	struct rdma_cm_event *ev;
	int inflight;

	while (!rdma_get_cm_event(ctx->ech, &ev)) {
		struct rdma_cm_id *doomed;

		/*
		 * What the peer sent before it disconnected completed before
		 * its disconnect arrived: take it in first, or a last message
		 * (the ACK) would be found after the connection is closed.
		 */
		poll_cqs(ctx, &inflight);
		doing(ctx, "handling an rdma_cm event");
		pthread_mutex_lock(&ctx->lock);
		doomed = handle_cm_event(ctx, ev);
		pthread_mutex_unlock(&ctx->lock);
		/* destroying an id waits for its events to be acknowledged */
		doing(ctx, "acknowledging an rdma_cm event");
		rdma_ack_cm_event(ev);
		if (doomed) {
			doing(ctx, "destroying a refused connection's id");
			rdma_destroy_id(doomed);
		}
	}
}

/* the descriptors to sleep on: the event channel, the stop eventfd and,
 * for each device, its completion channel and its asynchronous events */
#define POLL_MAX	(2 + 2 * RDMA_DEVS_MAX)

struct sleep_set {
	struct pollfd p[POLL_MAX];
	struct rdma_dev *dev[RDMA_DEVS_MAX];
	unsigned int ndev;
	unsigned int gen;		/* ctx->devs_gen they were taken at */
	unsigned int unarmed;		/* CQs whose arming failed */
};

/* how long to sleep: not at all long when a CQ could not be armed, since
 * its completions would then wake nothing */
#define SLEEP_MS	200
#define SLEEP_UNARMED_MS 1

/* arm every CQ, and list what to sleep on */
static void sleep_prepare(struct rdma_ctx *ctx, struct sleep_set *s)
{
	s->p[0] = (struct pollfd){ .fd = ctx->ech->fd, .events = POLLIN };
	s->p[1] = (struct pollfd){ .fd = ctx->stop_fd, .events = POLLIN };
	s->ndev = s->unarmed = 0;
	pthread_mutex_lock(&ctx->lock);
	s->gen = ctx->devs_gen;
	for (struct rdma_dev *d = ctx->devs; d; d = d->next) {
		struct pollfd *p = &s->p[2 + 2 * s->ndev];
		int ret = ibv_req_notify_cq(d->cq, 0);

		if (ret) {
			s->unarmed++;
			if (!d->arm_failed)
				pxfer_warning("cannot arm the completion queue of %s: %s; it is polled every millisecond instead",
					ibv_get_device_name(d->verbs->device),
					strerror(ret));
			d->arm_failed = 1;
		}
		p[0] = (struct pollfd){ .fd = d->cch->fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = d->verbs->async_fd,
					.events = POLLIN };
		s->dev[s->ndev++] = d;
	}
	pthread_mutex_unlock(&ctx->lock);
}

/* after the sleep: each device's CQ event acknowledged, its async events
 * taken; nothing if the devices changed meanwhile (their descriptors
 * stay readable for the next round) */
static void sleep_done(struct rdma_ctx *ctx, struct sleep_set *s)
{
	doing(ctx, "taking completion and device events");
	pthread_mutex_lock(&ctx->lock);
	for (unsigned int i = 0; i < s->ndev && s->gen == ctx->devs_gen; i++) {
		struct rdma_dev *d = s->dev[i];
		const struct pollfd *p = &s->p[2 + 2 * i];

		if (p[0].revents & POLLIN) {
			struct ibv_cq *cq;
			void *cq_ctx;

			if (!ibv_get_cq_event(d->cch, &cq, &cq_ctx))
				ibv_ack_cq_events(cq, 1);
		}
		if (p[1].revents & POLLIN)
			drain_async(ctx, d);
	}
	pthread_mutex_unlock(&ctx->lock);
}

void *rt_progress_main(void *arg)
{
	struct rdma_ctx *ctx = arg;
	struct sleep_set s;
	int idle = 0, inflight;

	while (!atomic_load(&ctx->stop)) {
		if (poll_cqs(ctx, &inflight) > 0) {
			idle = 0;
			continue;
		}
		/* busy-poll while sends are in flight, briefly otherwise */
		if (++idle < (inflight ? ctx->spin : 64))
			continue;
		idle = 0;
		sleep_prepare(ctx, &s);
		if (poll_cqs(ctx, &inflight) > 0)
			continue;	/* arrived before the arm */
		doing(ctx, "waiting for completions and events");
		poll(s.p, 2 + 2 * s.ndev, s.unarmed ? SLEEP_UNARMED_MS : SLEEP_MS);
		if (s.p[0].revents)
			drain_cm(ctx);
		if (s.p[1].revents)
			pxfer_drain(ctx->stop_fd);
		sleep_done(ctx, &s);
	}
	return NULL;
}
