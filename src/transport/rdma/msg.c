// SPDX-License-Identifier: MIT
/*
 * The rdma transport's messages over SEND/RECV: the control connection's
 * byte stream, and the handshake messages on data connections.
 *
 * Control connection: RC QP with its own receive queue of RDMA_CTRL_BUFS
 * buffers; SEND/RECV carry the engine's byte stream, each message led by a
 * 4-byte header that returns receive credits to the peer, so a SEND never
 * finds its peer without a posted receive (rnr_retry is 0: an RNR would be
 * an error, never a silent retry). On a data connection the messages land
 * in the spare receives of the shared receive queue.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "core/sys.h"
#include "transport/rdma/priv.h"

int rt_conn_buffers(struct rdma_conn *c)
{

	if (c->kind == KIND_CTRL) {
		c->nsend = RDMA_CTRL_BUFS;
		c->send_size = RDMA_CTRL_BUF;
		c->buf_bytes = (size_t)2 * RDMA_CTRL_BUFS * RDMA_CTRL_BUF;
		c->peer_credits = RDMA_CTRL_BUFS;
	} else {
		c->nsend = RDMA_DATA_SENDS;
		c->send_size = RDMA_SMALL_BUF;
		c->buf_bytes = (size_t)RDMA_DATA_SENDS * RDMA_SMALL_BUF;
		/* handshakes land in the SRQ's spare receives */
		c->peer_credits = RDMA_DATA_SENDS;
	}
	c->send_free = (1ull << c->nsend) - 1;
	c->bufs = mmap(NULL, c->buf_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->bufs == MAP_FAILED) {
		c->bufs = NULL;
		return -ENOMEM;
	}
	c->buf_mr = ibv_reg_mr(c->dev->pd, c->bufs, c->buf_bytes,
			       IBV_ACCESS_LOCAL_WRITE);
	return c->buf_mr ? 0 : rt_reg_failed(c->buf_bytes, "message buffers");
}

static uint8_t *send_buf(struct rdma_conn *c, unsigned int i)
{
	size_t base = c->kind == KIND_CTRL ? (size_t)RDMA_CTRL_BUFS * RDMA_CTRL_BUF : 0;

	return c->bufs + base + (size_t)i * c->send_size;
}

int rt_ctrl_recv_post(struct rdma_conn *c, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->bufs + (size_t)i * RDMA_CTRL_BUF),
		.length = RDMA_CTRL_BUF,
		.lkey = c->buf_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WR_ID(WR_CTRL_RECV, i),
				  .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad) ? -errno : 0;
}

void rt_on_recv(struct rdma_conn *c, const struct ibv_wc *wc, uint8_t *buf)
{
	struct rx_entry *e;
	uint16_t credits;

	if (wc->byte_len < RDMA_MSG_HDR || c->rx_count == RDMA_RX_Q) {
		atomic_store(&c->wc_error, IBV_WC_LOC_LEN_ERR);
		/* the shared queue outlives the connection: keep its count */
		if (WR_KIND(wc->wr_id) == WR_SRQ_RECV)
			rt_srq_refill(c->dev, WR_INDEX(wc->wr_id));
		return;
	}
	credits = ((uint16_t)buf[0] << 8) | buf[1];
	c->peer_credits += credits;
	e = &c->rx[(c->rx_head + c->rx_count) % RDMA_RX_Q];
	e->buf = buf;
	e->len = wc->byte_len;
	e->off = RDMA_MSG_HDR;
	e->wr_id = wc->wr_id;
	c->rx_count++;
}

/* post one message from send buffer @i: the caller holds c->lock */
static int post_msg(struct rdma_conn *c, unsigned int i, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)send_buf(c, i),
		.length = len,
		.lkey = c->buf_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(WR_SEND, i),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	c->send_free &= ~(1ull << i);
	c->peer_credits--;
	note_posted(c, 1);
	atomic_fetch_add(&c->dev->inflight, 1);
	if (ibv_post_send(c->id->qp, &wr, &bad)) {
		atomic_fetch_sub(&c->dev->inflight, 1);
		atomic_fetch_sub(&c->wr_out, 1);
		c->send_free |= 1ull << i;
		c->peer_credits++;
		return -errno;
	}
	return 0;
}

static ssize_t send_locked(struct rdma_conn *c, const void *buf, size_t len,
			   int reserve)
{
	unsigned int i;
	uint8_t *p;
	size_t n;
	int ret;

	if (!c->send_free || c->peer_credits <= reserve)
		return -EAGAIN;
	i = __builtin_ctzll(c->send_free);
	p = send_buf(c, i);
	n = len < c->send_size - RDMA_MSG_HDR ? len : c->send_size - RDMA_MSG_HDR;
	p[0] = (c->to_return >> 8) & 0xff;
	p[1] = c->to_return & 0xff;
	p[2] = p[3] = 0;
	if (n)
		memcpy(p + RDMA_MSG_HDR, buf, n);
	ret = post_msg(c, i, n + RDMA_MSG_HDR);
	if (ret)
		return ret;
	c->to_return = 0;
	return n;
}

ssize_t rt_send(struct pxfer_conn *pc, const void *buf, size_t len)
{
	struct rdma_conn *c = to_rconn(pc);
	ssize_t n;
	int err = rt_conn_error(c);

	if (err)
		return err;
	if (atomic_load(&c->peer_closed))
		return -EPIPE;
	pthread_mutex_lock(&c->lock);
	/* the last credit is kept for a credit-only message */
	n = send_locked(c, buf, len, c->kind == KIND_CTRL ? 1 : 0);
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* give receives back to the peer once half of them are free again */
static void return_credits(struct rdma_conn *c)
{
	if (c->kind == KIND_CTRL && c->to_return >= RDMA_CTRL_BUFS / 2)
		send_locked(c, NULL, 0, 0);
}

ssize_t rt_recv(struct pxfer_conn *pc, void *buf, size_t cap)
{
	struct rdma_conn *c = to_rconn(pc);
	size_t got = 0;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	while (c->rx_count && got < cap) {
		struct rx_entry *e = &c->rx[c->rx_head];
		size_t n = e->len - e->off;

		if (n > cap - got)
			n = cap - got;
		memcpy((uint8_t *)buf + got, e->buf + e->off, n);
		got += n;
		e->off += n;
		if (e->off < e->len)
			break;
		/* consumed: the buffer goes back to its queue */
		c->rx_head = (c->rx_head + 1) % RDMA_RX_Q;
		c->rx_count--;
		if (WR_KIND(e->wr_id) == WR_CTRL_RECV) {
			ret = rt_ctrl_recv_post(c, WR_INDEX(e->wr_id));
			/* only a receive that is posted again is the peer's */
			if (!ret)
				c->to_return++;
		} else {
			ret = rt_srq_refill(c->dev, WR_INDEX(e->wr_id));
		}
		if (ret) {
			/* the connection cannot keep its receives posted: it
			 * fails now, and this call or the next says so */
			int none = 0;

			atomic_compare_exchange_strong(&c->wc_error, &none,
						       IBV_WC_GENERAL_ERR);
			break;
		}
	}
	return_credits(c);
	pthread_mutex_unlock(&c->lock);
	if (got)
		return got;
	if (ret)
		return ret;
	ret = rt_conn_error(c);
	if (ret)
		return ret;
	if (atomic_load(&c->peer_closed))
		return 0;
	pxfer_drain(c->efd);
	/* a completion may have landed between the check and the drain */
	pthread_mutex_lock(&c->lock);
	if (c->rx_count)
		pxfer_wake(c->efd);
	pthread_mutex_unlock(&c->lock);
	return -EAGAIN;
}
