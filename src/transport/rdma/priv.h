/* SPDX-License-Identifier: MIT */
/*
 * Private to the rdma transport: its objects (the process's context, a
 * connection, the listener), the constants that size them, the encoding
 * of work request ids, and the functions its files share. rdma.h is what
 * the rest of pxfer sees.
 */
#ifndef PXFER_TRANSPORT_RDMA_PRIV_H
#define PXFER_TRANSPORT_RDMA_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core/container_of.h"
#include "transport/rdma/rdma.h"

#define RDMA_CTRL_BUFS		16	/* control receives (and sends) */
#define RDMA_CTRL_BUF		8192
#define RDMA_SMALL_BUF		256	/* handshake messages on data QPs */
#define RDMA_DATA_SENDS		4
#define RDMA_SRQ_BASE		128
#define RDMA_SRQ_MAX		1024
#define RDMA_CQ_MIN		4096	/* first size; grown as work can need */
#define RDMA_MSG_HDR		4	/* u16 credits returned, u16 reserved */
#define RDMA_RX_Q		(RDMA_CTRL_BUFS + 8)
#define RDMA_HDR_ROOM		4096	/* a page before each payload */
#define RDMA_PRIV_MAGIC		0x70786672u	/* "pxfr" in connect data */
#define RDMA_ACK_TIMEOUT	16	/* 4.096 us * 2^16 = 268 ms, x7 retries */

/* what a work request id says: kind in the top byte, index below */
#define WR_CTRL_RECV	1ull
#define WR_SRQ_RECV	2ull
#define WR_SEND		3ull
#define WR_DATA		4ull
#define WR_ID(k, i)	(((k) << 56) | (uint64_t)(i))
#define WR_KIND(id)	((id) >> 56)
#define WR_INDEX(id)	((id) & 0xffffffffull)

enum conn_kind { KIND_CTRL = 0, KIND_DATA = 1 };

struct rdma_conn;
struct rdma_listener;

/* one per process: what the connections of a side share (ctx.c) */
struct rdma_ctx {
	struct rdma_event_channel *ech;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	int cq_max;			/* the device's limit */
	int cq_need;			/* completions that can be pending */
	struct ibv_srq *srq;
	uint32_t srq_max;
	struct ibv_mr *small_mr;
	uint8_t *small;			/* srq_max receive buffers */
	pthread_mutex_t srq_lock;	/* the fields below */
	uint32_t *srq_free;		/* buffer indexes not posted */
	uint32_t srq_nfree;
	uint32_t srq_want;		/* receives the SRQ should hold */
	uint32_t srq_posted;
	atomic_int ready;		/* device resources exist */
	pthread_mutex_t lock;		/* conns, listener and its pending */
	struct rdma_conn *conns;	/* list of connections with a QP */
	struct rdma_listener *listener;	/* takes connect requests, or NULL */
	pthread_t thread;
	int thread_started;
	int stop_fd;			/* eventfd: wakes the progress thread */
	atomic_int stop;
	atomic_int inflight;		/* signaled sends not yet completed */
	int spin;
	int cq_first;			/* entries the CQ is created with */
	int refs;			/* under ctx_lock */
};

/* a received message, read by the engine from @off on */
struct rx_entry {
	uint8_t *buf;
	uint32_t len, off;
	uint64_t wr_id;
};

/* a control or a data connection: the engine's pxfer_conn */
struct rdma_conn {
	struct pxfer_conn conn;
	struct rdma_ctx *ctx;
	struct rdma_cm_id *id;
	struct rdma_conn *next;		/* ctx->conns */
	enum conn_kind kind;
	int efd;			/* conn_fd */
	pthread_mutex_t lock;		/* queues below, credits */
	/* connection state, set by the progress thread */
	atomic_int cm_event;		/* last rdma_cm event seen */
	atomic_int cm_status;
	atomic_int established;
	atomic_int peer_closed;
	atomic_int closing;
	atomic_int wc_error;		/* an ibv_wc_status, 0 if none */
	atomic_uint wr_out;		/* send WRs posted, not yet retired */
	atomic_uint wr_max;		/* the most ever outstanding */
	unsigned int sq_depth;		/* max_send_wr of the QP */
	uint64_t chunks;
	/* received messages (control, and handshakes on data QPs) */
	struct rx_entry rx[RDMA_RX_Q];
	unsigned int rx_head, rx_count;
	/* chunk arrivals (receiver) and send completions (sender): slots */
	uint16_t *slotq;
	unsigned int sq_head, sq_count, sq_cap;
	/* message send buffers */
	struct ibv_mr *buf_mr;
	uint8_t *bufs;			/* ctrl: recv then send buffers */
	size_t buf_bytes;
	unsigned int nsend, send_size;
	uint64_t send_free;		/* bitmap of free send buffers */
	int peer_credits;		/* peer receives we may consume */
	int to_return;			/* our reposted receives to announce */
	/* rings */
	struct ibv_mr *ring_mr;
	const struct pxfer_ring *ring;
	unsigned int srq_share;		/* SRQ receives added for our ring */
	int cq_share;			/* CQ entries reserved for this QP */
	uint64_t raddr;
	uint32_t rkey, rstride, rhdr;
	uint16_t rslots;
	uint16_t rslots_max;		/* the WELCOME's: sizes the send queue */
};

/* the engine's pxfer_listener, and the connect requests it holds */
struct rdma_listener {
	struct pxfer_listener l;
	struct rdma_ctx *ctx;
	struct rdma_cm_id *id;
	int efd;			/* listener_fd: a connect request waits */
	struct rdma_cm_id *pending[64];
	uint8_t pending_kind[64];
	unsigned int npending;
};

/* from the engine's base object to ours: the base need not come first */
static inline struct rdma_conn *to_rconn(struct pxfer_conn *c)
{
	return container_of(c, struct rdma_conn, conn);
}

static inline struct rdma_listener *to_rlis(struct pxfer_listener *l)
{
	return container_of(l, struct rdma_listener, l);
}

/* probe.c: devices, ports and GIDs */

/* rt_describe_route - with -v, say which device, port and GID @id uses */
void rt_describe_route(struct rdma_cm_id *id, const char *peer);

#endif
