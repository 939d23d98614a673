/* SPDX-License-Identifier: MIT */
/*
 * Private to the rdma transport: its objects (the process's context, a
 * device's context, a connection, the listener), the constants that size
 * them, the encoding of work request ids, and the functions its files
 * share. rdma.h is what the rest of pxfer sees.
 */
#ifndef PXFER_TRANSPORT_RDMA_PRIV_H
#define PXFER_TRANSPORT_RDMA_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core/container_of.h"
#include "transport/transport.h"

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
#define RDMA_PENDING_MAX	64	/* connect requests waiting for accept */
#define RDMA_ACCEPTING_MAX	64	/* accepted, waiting to be established */
#define RDMA_ACCEPT_SECS	15	/* ... for at most this long */
#define RDMA_DEVS_MAX		16	/* device contexts a process holds at once */

/* what a work request id says: kind in the top byte, index below */
#define WR_CTRL_RECV	1ull
#define WR_SRQ_RECV	2ull
#define WR_SEND		3ull
#define WR_DATA		4ull
#define WR_BIND		5ull	/* a ring's memory window bound to its QP */
#define WR_ID(k, i)	(((k) << 56) | (uint64_t)(i))
#define WR_KIND(id)	((id) >> 56)
#define WR_INDEX(id)	((id) & 0xffffffffull)

enum conn_kind { KIND_CTRL = 0, KIND_DATA = 1 };

struct rdma_conn;
struct rdma_listener;

/*
 * One per process (ctx.c): the rdma_cm event channel and the progress
 * thread that serves it and every device context's channels.
 */
/* buckets of the connections by QP number: a completion finds its own in
 * one short chain, not by a walk over every connection */
#define RDMA_QPN_BUCKETS	256

/* the bucket of QP number @qpn on device @d (QP numbers are per device) */
static inline unsigned int rt_qpn_bucket(const void *d, uint32_t qpn)
{
	return (unsigned int)(qpn ^ ((uintptr_t)d >> 6)) % RDMA_QPN_BUCKETS;
}

struct rdma_ctx {
	struct rdma_event_channel *ech;
	pthread_mutex_t lock;		/* conns, by_qpn, devs, listener and its pending */
	struct rdma_conn *conns;	/* connections with a QP, on any device */
	struct rdma_conn *by_qpn[RDMA_QPN_BUCKETS];	/* the same, by (device, QP number) */
	struct rdma_dev *devs;		/* the device contexts */
	unsigned int ndevs;
	unsigned int devs_gen;		/* changes whenever devs does */
	struct rdma_listener *listener;	/* takes connect requests, or NULL */
	pthread_mutex_t dev_lock;	/* making and freeing device contexts */
	pthread_t thread;
	int stop_fd;			/* eventfd: wakes the progress thread */
	atomic_int stop;
	int spin;
	int cq_first;			/* entries a CQ is created with */
	int refs;			/* under ctx_lock */
	/* what the progress thread is doing (a static string), said when
	 * it does not stop in time */
	_Atomic(const char *) doing;
};

/* how long teardown waits for the progress thread before it goes on */
#define RDMA_STOP_WAIT_MS	10000

/*
 * One per device in use (dev.c): what the connections on that device
 * share. Made for the first connection on the device and freed with its
 * last user, each of which holds a reference.
 */
struct rdma_dev {
	struct rdma_ctx *ctx;		/* of which it holds a reference */
	struct rdma_dev *next;		/* ctx->devs, under ctx->lock */
	struct ibv_context *verbs;	/* rdma_cm's, open for the process */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	pthread_mutex_t cq_lock;	/* cq_need and resizing the CQ */
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
	uint64_t srq_used, srq_back;	/* receives consumed, put back */
	atomic_int inflight;		/* signaled sends not yet completed */
	int mw2;			/* the device binds type 2 windows */
	unsigned int nports;
	atomic_int *port_state;		/* [1..nports]: as the port events left it */
	int refs;			/* under ctx->dev_lock */
	int arm_failed;			/* arming its CQ failed once (told once) */
};

/* a received message, read by the engine from @off on */
struct rx_entry {
	uint8_t *buf;
	uint32_t len, off;
	uint64_t wr_id;
};

/* a control or a data connection: the engine's pxfer_conn */
/* rings of other connections a sender sends payloads from, at most */
#define RDMA_EXT_MAX 16

struct rdma_conn {
	struct pxfer_conn conn;
	struct rdma_ctx *ctx;
	struct rdma_dev *dev;		/* its device's context, once known */
	struct rdma_cm_id *id;
	struct rdma_conn *next;		/* ctx->conns */
	struct rdma_conn *qpn_next;	/* its bucket of ctx->by_qpn */
	/* the listener that accepted it, until it is established: its
	 * events wake the listener too (under ctx->lock) */
	struct rdma_listener *acceptor;
	uint32_t qpn;			/* its QP's number, once linked */
	enum conn_kind kind;
	int efd;			/* conn_fd */
	pthread_mutex_t lock;		/* queues below, credits */
	/* connection state, set by the progress thread */
	atomic_int cm_event;		/* last rdma_cm event seen */
	atomic_int established;
	atomic_int peer_closed;
	atomic_int closing;
	atomic_int wc_error;		/* an ibv_wc_status, 0 if none */
	atomic_int port_down;		/* its port went down under it */
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
	/* sender: other rings a payload is sent from (a broadcast chain
	 * forwards from the ring a chunk arrived in), registered on this
	 * connection's protection domain by rt_ring_local */
	struct rdma_ext_ring {
		uint64_t serial;
		uintptr_t base;
		size_t len;
		struct ibv_mr *mr;
	} ext[RDMA_EXT_MAX];
	struct ibv_mw *ring_mw;		/* receiver: the window peers write */
	atomic_int mw_bound;		/* its bind completed */
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
	/* the device contexts it accepted on, kept warm for the next
	 * session (the accepting thread's alone) */
	struct rdma_dev *devs[RDMA_DEVS_MAX];
	unsigned int ndevs;
	struct rdma_cm_id *pending[RDMA_PENDING_MAX];
	uint8_t pending_kind[RDMA_PENDING_MAX];
	unsigned int npending;
	/* accepted, not yet established (the accepting thread's alone) */
	struct rdma_conn *accepting[RDMA_ACCEPTING_MAX];
	double accepted_at[RDMA_ACCEPTING_MAX];
	unsigned int naccepting;
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

/* count posted send WRs; the high-water mark shows the queue was bounded */
static inline void note_posted(struct rdma_conn *c, unsigned int n)
{
	unsigned int out = atomic_fetch_add(&c->wr_out, n) + n;
	unsigned int max = atomic_load(&c->wr_max);

	while (out > max && !atomic_compare_exchange_weak(&c->wr_max, &max, out))
		;
}

/* ctx.c: the process's context */

/*
 * rt_ctx_get - the context (event channel, progress thread), referenced.
 * @serve is the progress thread's loop (progress.c's rt_progress_main),
 * started with a new context: given by the connection's ends, so that
 * the context, which the connections and devices hold, never calls up
 * into what serves them.
 */
int rt_ctx_get(struct rdma_ctx **out, void *(*serve)(void *));
/* rt_ctx_hold - another reference to @ctx, of which the caller holds one */
void rt_ctx_hold(struct rdma_ctx *ctx);
/* rt_ctx_put - the last reference stops the thread and frees it */
void rt_ctx_put(struct rdma_ctx *ctx);
/*
 * rt_port_state - the state (enum ibv_port_state) the port events left
 * port @port of the device named @dev in, in this process; -ENOENT if the
 * process has no context on that device
 */
int rt_port_state(const char *dev, unsigned int port);

/* dev.c: a device's context, and the queues its connections share */

/*
 * rt_dev_get - the context of device @verbs (PD, CQ, SRQ), referenced:
 * made for its first user. @quiet: the caller retries and reports.
 */
int rt_dev_get(struct rdma_ctx *ctx, struct ibv_context *verbs, int quiet,
	       struct rdma_dev **out);
/* rt_dev_hold - another reference to @d, of which the caller holds one */
void rt_dev_hold(struct rdma_dev *d);
/* rt_dev_put - the last reference frees the device's resources */
void rt_dev_put(struct rdma_dev *d);
/* rt_dev_name - the device's name, for messages */
static inline const char *rt_dev_name(const struct rdma_dev *d)
{
	return ibv_get_device_name(d->verbs->device);
}
/* rt_cq_reserve - @n more CQ entries (negative: given back), grown first */
int rt_cq_reserve(struct rdma_dev *d, int n);
/* rt_srq_refill - SRQ buffer @returned_idx (-1: none) is free; top up */
int rt_srq_refill(struct rdma_dev *d, int64_t returned_idx);
/* rt_srq_want_add - @delta more receives for the SRQ to hold (posting
 * them is rt_srq_refill's), or -ENOSPC and nothing changed */
int rt_srq_want_add(struct rdma_dev *d, int delta);
/* rt_reg_failed - -errno for a failed ibv_reg_mr, naming memlock if due */
int rt_reg_failed(size_t bytes, const char *what);

/* progress.c: the thread that serves the context's channels and those
 * of its devices */

void *rt_progress_main(void *ctx);

/* cm.c: a connection's life, from its object to its QP to its end */

/* rt_conn_alloc - a connection that owns the caller's reference to @ctx */
struct rdma_conn *rt_conn_alloc(struct rdma_ctx *ctx);
/* rt_conn_qp - its QP on the shared CQ, receives posted, @send_wr deep */
int rt_conn_qp(struct rdma_conn *c, unsigned int send_wr);
/* rt_conn_cm_error - what the rdma_cm events say went wrong: -errno, or 0 */
int rt_conn_cm_error(struct rdma_conn *c);
/* rt_conn_wait - until @done(c) or an error; 0, -ETIMEDOUT or -errno */
int rt_conn_wait(struct rdma_conn *c, int (*done)(struct rdma_conn *),
		 int timeout_ms);
int rt_conn_established(struct rdma_conn *c);
void rt_set_ack_timeout(struct rdma_cm_id *id);
/* rt_conn_param_init - connect or accept parameters, @kind in @priv */
void rt_conn_param_init(struct rdma_conn_param *p, uint8_t *priv,
			enum conn_kind kind);
/* rt_conn_free - the QP, buffers and shares of @c, and its ctx reference */
void rt_conn_free(struct rdma_conn *c);
/*
 * rt_conn_error - the failed completion @c saw as -errno, 0 if none: what
 * the progress thread recorded, read by the connection's every layer (a
 * port lost says more than the local error it caused)
 */
static inline int rt_conn_error(struct rdma_conn *c)
{
	int st = atomic_load(&c->wc_error);

	if (atomic_load(&c->port_down))
		return -ENETDOWN;
	switch (st) {
	case 0:
		return 0;
	case IBV_WC_RETRY_EXC_ERR:
		return -ETIMEDOUT;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return -ENOBUFS;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_LOC_PROT_ERR:
		return -EACCES;
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
		return -EPROTO;
	case IBV_WC_LOC_LEN_ERR:
		return -EMSGSIZE;
	default:
		return -EIO;
	}
}
int rt_conn_fd(struct pxfer_conn *pc);
short rt_poll_events(struct pxfer_conn *c, int want_send);
void rt_shutdown(struct pxfer_conn *pc);
void rt_close(struct pxfer_conn *pc);

/* connect.c: the active side */

int rt_connect_op(const char *host, const char *port, const char *bind_addr,
		  int timeout_ms, unsigned int slots, struct pxfer_conn **out);

/* listen.c: the passive side */

int rt_listen(const char *bind_addr, const char *port,
	      struct pxfer_listener **out);
int rt_listener_fd(struct pxfer_listener *pl);
int rt_accept_op(struct pxfer_listener *pl, struct pxfer_conn **out);
void rt_listener_close(struct pxfer_listener *pl);

/* msg.c: messages over SEND/RECV, and their receive credits */

/* rt_conn_buffers - @c's message buffers, registered */
int rt_conn_buffers(struct rdma_conn *c);
/* rt_ctrl_recv_post - (re)post control receive buffer @i */
int rt_ctrl_recv_post(struct rdma_conn *c, unsigned int i);
/* rt_on_recv - a message arrived in @buf: queue it (under c->lock) */
void rt_on_recv(struct rdma_conn *c, const struct ibv_wc *wc, uint8_t *buf);
ssize_t rt_send(struct pxfer_conn *pc, const void *buf, size_t len);
ssize_t rt_recv(struct pxfer_conn *pc, void *buf, size_t cap);

/* ring.c: the data path, chunks written into the peer's ring */

/* rt_slotq_push - a chunk arrived in, or left from, @slot (under c->lock) */
void rt_slotq_push(struct rdma_conn *c, uint16_t slot);
int rt_ring_register(struct pxfer_conn *pc, struct pxfer_ring *r,
		     uint8_t *blob, uint16_t *blob_len);
int rt_ring_remote(struct pxfer_conn *pc, const uint8_t *blob,
		   uint16_t blob_len);
int rt_ring_local(struct pxfer_conn *pc, const struct pxfer_ring *r);
int rt_send_chunk(struct pxfer_conn *pc, const struct pxfer_chunk *ch,
		  const void *payload);
int rt_reap_sent(struct pxfer_conn *pc, uint16_t *slots, unsigned int max);
int rt_recv_chunk(struct pxfer_conn *pc, const struct pxfer_ring *r,
		  struct pxfer_chunk *ch);

/* probe.c: devices, ports and GIDs */

/* rt_describe_route - with -v, say which device, port and GID @id uses */
void rt_describe_route(struct rdma_cm_id *id, const char *peer);
/* rt_gid_ipv4 - an IPv4-mapped GID as "a.b.c.d", or -EAFNOSUPPORT */
int rt_gid_ipv4(const union ibv_gid *g, char *buf, size_t len);
/*
 * rt_gid_table - every valid GID entry of every port of @verbs, in an
 * array the caller frees; how many, or -errno
 */
ssize_t rt_gid_table(struct ibv_context *verbs, struct ibv_gid_entry **out);

/* rails.c: the local rails, one per active port */

int rt_rails_local(struct pxfer_rail_addr *out, unsigned int max);
int rt_rail_query(struct pxfer_rail_addr *ra);

#endif
