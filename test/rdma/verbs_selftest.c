/*
 * verbs_selftest - RC SEND, RDMA WRITE and RDMA READ over rdma_cm.
 *
 * A server and a client, as two threads of one process (-r both, the
 * default) or as two processes (-r server / -r client), connect through
 * rdma_cm and run N rounds of:
 *
 *   1. SEND:  the client sends a payload, the server checks it and
 *             answers with a payload of its own, which the client checks;
 *   2. WRITE: the client RDMA-writes a pattern into the server's buffer
 *             and tells it so with a SEND; the server checks the buffer,
 *             fills it with a new pattern and answers;
 *   3. READ:  the client RDMA-reads the server's buffer and checks it.
 *
 * Each side keeps one receive posted at all times, posted before the peer
 * can send (before rdma_connect / rdma_accept, and again before every
 * reply).  Receives flushed by the disconnect (IBV_WC_WR_FLUSH_ERR) are
 * the normal end of a connection.
 *
 * Addresses default to $PXFER_RXE_SERVER_ADDR and $PXFER_RXE_CLIENT_ADDR
 * (set inside the test VM, see docs/testing.md).  Exits 0 when every
 * check passed, 1 otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define DEFAULT_PORT	20079
#define DEFAULT_SIZE	(64 * 1024)
#define DEFAULT_ITERS	8
#define DEFAULT_TIMEOUT	60	/* seconds, whole run */
#define CQ_DEPTH	16
#define RESOLVE_MS	5000
#define CONNECT_RETRY_MS 200
#define DRAIN_MS	2000
#define DISCONNECT_MS	10000

enum wr_id {
	WR_SEND,
	WR_RECV,
	WR_WRITE,
	WR_READ,
	WR_COUNT,
};

enum msg_op {
	MSG_DATA = 1,		/* payload follows */
	MSG_WRITE_DONE,		/* client wrote buffer with seed */
	MSG_READ_READY,		/* server filled buffer with seed */
	MSG_BYE,
};

struct msg {
	uint32_t op;
	uint32_t iter;
	uint32_t seed;
	uint32_t len;		/* payload bytes after the header */
};

/* Sent by the server in the accept private data, big endian. */
struct remote_buf {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

struct options {
	const char *role;
	const char *server_addr;
	const char *client_addr;
	unsigned int port;
	size_t size;
	unsigned int iters;
	unsigned int timeout;
	int ack_timeout;	/* -1: rdma_cm default */
	bool verbose;
};

struct conn {
	const char *name;		/* "server" or "client", for messages */
	const struct options *opt;
	struct timespec deadline;

	struct rdma_event_channel *ech;
	struct rdma_cm_id *listen_id;	/* server only */
	struct rdma_cm_id *id;

	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	bool qp_created;

	size_t msg_size;		/* header + payload */
	char *send_buf;
	char *recv_buf;
	char *rdma_buf;
	struct ibv_mr *send_mr;
	struct ibv_mr *recv_mr;
	struct ibv_mr *rdma_mr;

	bool done[WR_COUNT];		/* completion seen since last post */
	uint32_t recv_len;
	bool teardown;			/* flush errors are expected now */
	bool retry_connect;		/* server may not listen yet */
	unsigned int unacked_cq_events;

	struct remote_buf remote;	/* client: the server's buffer */
};

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Written by a side that gives up, so that the other thread stops waiting
 * for a peer that will never answer instead of running into the deadline.
 */
static int stop_fd = -1;

static void stop_peer(void)
{
	uint64_t one = 1;

	if (stop_fd >= 0 && write(stop_fd, &one, sizeof(one)) < 0)
		perror("verbs_selftest: write(stop eventfd)");
}

static void say(const struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const struct conn *c, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&print_lock);
	fprintf(stderr, "verbs_selftest: %s: ", c->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&print_lock);
}

#define dbg(c, ...) do {					\
		if ((c)->opt->verbose)				\
			say(c, __VA_ARGS__);			\
	} while (0)

/* ---- time ------------------------------------------------------------- */

static void deadline_set(struct timespec *d, unsigned int ms)
{
	clock_gettime(CLOCK_MONOTONIC, d);
	d->tv_sec += ms / 1000;
	d->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (d->tv_nsec >= 1000000000L) {
		d->tv_sec++;
		d->tv_nsec -= 1000000000L;
	}
}

/* Milliseconds left until @d, 0 when it has passed. */
static int deadline_ms(const struct timespec *d)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(d->tv_sec - now.tv_sec) * 1000 +
	     (d->tv_nsec - now.tv_nsec) / 1000000;
	if (ms < 0)
		return 0;
	return ms > 1000000 ? 1000000 : (int)ms;
}

static const struct timespec *earlier(const struct timespec *a,
				      const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? a : b;
	return a->tv_nsec < b->tv_nsec ? a : b;
}

/* ---- data patterns ---------------------------------------------------- */

static uint64_t pattern_next(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static void pattern_fill(void *buf, size_t len, uint32_t seed)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL ^ seed;
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t v = pattern_next(&s);
		size_t n = len - i < 8 ? len - i : 8;

		memcpy(p + i, &v, n);
	}
}

/* Returns 0 when @buf holds the pattern of @seed, -EILSEQ otherwise. */
static int pattern_check(const struct conn *c, const char *what,
			 const void *buf, size_t len, uint32_t seed)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL ^ seed;
	const unsigned char *p = buf;
	size_t i, j;

	for (i = 0; i < len; i += 8) {
		uint64_t v = pattern_next(&s);
		size_t n = len - i < 8 ? len - i : 8;

		if (memcmp(p + i, &v, n) == 0)
			continue;
		for (j = 0; j < n && p[i + j] == ((unsigned char *)&v)[j]; j++)
			;
		say(c, "%s: data mismatch at byte %zu of %zu: got 0x%02x, want 0x%02x",
		    what, i + j, len, p[i + j], ((unsigned char *)&v)[j]);
		return -EILSEQ;
	}
	return 0;
}

static uint32_t seed_of(unsigned int iter, unsigned int step)
{
	return (iter + 1) * 0x10001u + step;
}

/* ---- rdma_cm events --------------------------------------------------- */

/*
 * Wait for the next event on the connection's channel and check that it
 * is @want.  On success *@ev must be acked by the caller.  Returns
 * -ETIMEDOUT, -ECONNREFUSED (rejected or unreachable) or -EPROTO for any
 * other unexpected event.
 */
static int cm_wait(struct conn *c, enum rdma_cm_event_type want,
		   struct rdma_cm_event **ev, const struct timespec *until)
{
	struct pollfd pfd[2] = {
		{ .fd = c->ech->fd, .events = POLLIN },
		{ .fd = stop_fd, .events = POLLIN },
	};
	enum rdma_cm_event_type got;
	int status, ret;

	ret = poll(pfd, 2, deadline_ms(until));
	if (ret < 0) {
		ret = -errno;
		say(c, "poll on the rdma_cm channel: %s", strerror(-ret));
		return ret;
	}
	if (ret == 0) {
		say(c, "timed out waiting for %s", rdma_event_str(want));
		return -ETIMEDOUT;
	}
	if (!(pfd[0].revents & POLLIN)) {
		dbg(c, "peer gave up; stop waiting for %s", rdma_event_str(want));
		return -ECANCELED;
	}
	if (rdma_get_cm_event(c->ech, ev)) {
		ret = -errno;
		say(c, "rdma_get_cm_event: %s", strerror(-ret));
		return ret;
	}
	got = (*ev)->event;
	status = (*ev)->status;
	if (got == want)
		return 0;

	rdma_ack_cm_event(*ev);
	*ev = NULL;
	if (got == RDMA_CM_EVENT_REJECTED || got == RDMA_CM_EVENT_UNREACHABLE) {
		dbg(c, "%s (status %d) while waiting for %s",
		    rdma_event_str(got), status, rdma_event_str(want));
		return -ECONNREFUSED;
	}
	say(c, "got %s (status %d) while waiting for %s",
	    rdma_event_str(got), status, rdma_event_str(want));
	return -EPROTO;
}

/*
 * Wait for DISCONNECTED after all data was verified.  The DREQ/DREP
 * exchange is plain CM traffic and may be lost on an impaired link; not
 * seeing the event in time is reported but is not a data failure.
 */
static void cm_wait_disconnected(struct conn *c)
{
	struct rdma_cm_event *ev;
	struct timespec t;
	int ret;

	deadline_set(&t, DISCONNECT_MS);
	ret = cm_wait(c, RDMA_CM_EVENT_DISCONNECTED, &ev, earlier(&t, &c->deadline));
	if (!ret)
		rdma_ack_cm_event(ev);
	else
		say(c, "tearing down without it (all transfers were verified)");
}

/* ---- completions -------------------------------------------------------- */

static const char *wr_name(uint64_t id)
{
	static const char *const names[WR_COUNT] = {
		[WR_SEND] = "SEND", [WR_RECV] = "RECV",
		[WR_WRITE] = "RDMA WRITE", [WR_READ] = "RDMA READ",
	};

	return id < WR_COUNT ? names[id] : "unknown";
}

/* Consume one work completion: record it or report its error. */
static int handle_wc(struct conn *c, const struct ibv_wc *wc)
{
	if (wc->wr_id >= WR_COUNT) {
		say(c, "completion with unknown wr_id %llu",
		    (unsigned long long)wc->wr_id);
		return -EPROTO;
	}
	if (wc->status == IBV_WC_WR_FLUSH_ERR && c->teardown) {
		dbg(c, "%s flushed (normal during teardown)", wr_name(wc->wr_id));
		c->done[wc->wr_id] = true;
		return 0;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		say(c, "%s completed with error: %s (vendor error 0x%x)",
		    wr_name(wc->wr_id), ibv_wc_status_str(wc->status),
		    wc->vendor_err);
		return -EIO;
	}
	if (wc->wr_id == WR_RECV)
		c->recv_len = wc->byte_len;
	c->done[wc->wr_id] = true;
	return 0;
}

/* Block on the completion channel until the CQ may hold new entries. */
static int cq_sleep(struct conn *c, const struct timespec *until)
{
	struct pollfd pfd[2] = {
		{ .fd = c->cch->fd, .events = POLLIN },
		{ .fd = c->teardown ? -1 : stop_fd, .events = POLLIN },
	};
	struct ibv_cq *cq;
	void *ctx;
	int ret;

	ret = poll(pfd, 2, deadline_ms(until));
	if (ret < 0) {
		ret = -errno;
		say(c, "poll on the completion channel: %s", strerror(-ret));
		return ret;
	}
	if (ret == 0)
		return -ETIMEDOUT;
	if (!(pfd[0].revents & POLLIN))
		return -ECANCELED;
	if (ibv_get_cq_event(c->cch, &cq, &ctx)) {
		say(c, "ibv_get_cq_event failed");
		return -EIO;
	}
	if (++c->unacked_cq_events >= 16) {
		ibv_ack_cq_events(c->cq, c->unacked_cq_events);
		c->unacked_cq_events = 0;
	}
	ret = ibv_req_notify_cq(c->cq, 0);
	if (ret) {
		say(c, "ibv_req_notify_cq: %s", strerror(ret));
		return -ret;
	}
	return 0;
}

/* Wait until the work request @id has completed. */
static int wait_wr(struct conn *c, enum wr_id id, const struct timespec *until)
{
	struct ibv_wc wc[4];
	int i, n, ret;

	while (!c->done[id]) {
		n = ibv_poll_cq(c->cq, 4, wc);
		if (n < 0) {
			say(c, "ibv_poll_cq failed (%d)", n);
			return -EIO;
		}
		for (i = 0; i < n; i++) {
			ret = handle_wc(c, &wc[i]);
			if (ret)
				return ret;
		}
		if (n > 0)
			continue;
		ret = cq_sleep(c, until);
		if (ret == -ECANCELED) {
			dbg(c, "peer gave up; stop waiting for %s", wr_name(id));
			return ret;
		}
		if (ret == -ETIMEDOUT) {
			/* One last look: the event may race the deadline. */
			n = ibv_poll_cq(c->cq, 4, wc);
			for (i = 0; i < n; i++) {
				ret = handle_wc(c, &wc[i]);
				if (ret)
					return ret;
			}
			if (c->done[id])
				break;
			if (!c->teardown)
				say(c, "timed out waiting for the %s completion",
				    wr_name(id));
			return -ETIMEDOUT;
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- posting ------------------------------------------------------------- */

static int post_recv(struct conn *c)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->recv_buf,
		.length = (uint32_t)c->msg_size,
		.lkey = c->recv_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1,
	};
	struct ibv_recv_wr *bad;
	int ret;

	c->done[WR_RECV] = false;
	ret = ibv_post_recv(c->id->qp, &wr, &bad);
	if (ret) {
		say(c, "ibv_post_recv: %s", strerror(ret));
		return -ret;
	}
	return 0;
}

static int post_send(struct conn *c, enum wr_id id, enum ibv_wr_opcode opcode,
		     void *buf, struct ibv_mr *mr, uint32_t len,
		     uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
		.opcode = opcode, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int ret;

	if (opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	c->done[id] = false;
	ret = ibv_post_send(c->id->qp, &wr, &bad);
	if (ret) {
		say(c, "ibv_post_send(%s): %s", wr_name(id), strerror(ret));
		return -ret;
	}
	return 0;
}

/* Send a message with an optional pattern payload of @len bytes. */
static int send_msg(struct conn *c, enum msg_op op, unsigned int iter,
		    uint32_t seed, uint32_t len)
{
	struct msg *m = (struct msg *)c->send_buf;

	m->op = htobe32(op);
	m->iter = htobe32(iter);
	m->seed = htobe32(seed);
	m->len = htobe32(len);
	if (len)
		pattern_fill(m + 1, len, seed);
	return post_send(c, WR_SEND, IBV_WR_SEND, c->send_buf, c->send_mr,
			 (uint32_t)(sizeof(*m) + len), 0, 0);
}

/*
 * Wait for the next message, check its header (and payload, if any), then
 * post the next receive so that it is in place before we answer.
 */
static int recv_msg(struct conn *c, enum msg_op want, unsigned int iter,
		    struct msg *out)
{
	const struct msg *m = (const struct msg *)c->recv_buf;
	const char *what;
	int ret;

	ret = wait_wr(c, WR_RECV, &c->deadline);
	if (ret)
		return ret;
	if (c->recv_len < sizeof(*m)) {
		say(c, "short message: %u bytes", c->recv_len);
		return -EPROTO;
	}
	out->op = be32toh(m->op);
	out->iter = be32toh(m->iter);
	out->seed = be32toh(m->seed);
	out->len = be32toh(m->len);
	if (out->op != want || out->iter != iter ||
	    out->len != c->recv_len - sizeof(*m)) {
		say(c, "unexpected message: op %u iter %u len %u (%u bytes), want op %u iter %u",
		    out->op, out->iter, out->len, c->recv_len, want, iter);
		return -EPROTO;
	}
	if (out->len) {
		what = c->listen_id ? "SEND from client" : "SEND from server";
		ret = pattern_check(c, what, m + 1, out->len, out->seed);
		if (ret)
			return ret;
	}
	return post_recv(c);
}

/* ---- connection resources -------------------------------------------- */

/*
 * Local ACK timeout of the QP, 4.096 us * 2^exp: how long RC waits before
 * it retransmits a lost packet.  Must be set on the connection's id
 * before rdma_accept() / rdma_connect() move the QP to RTS.
 */
static int set_ack_timeout(struct conn *c)
{
	uint8_t exp;
	int ret;

	if (c->opt->ack_timeout < 0)
		return 0;
	exp = (uint8_t)c->opt->ack_timeout;
	if (rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &exp, sizeof(exp))) {
		ret = -errno;
		say(c, "rdma_set_option(ACK_TIMEOUT %u): %s", exp, strerror(errno));
		return ret;
	}
	return 0;
}

static void *buf_alloc(struct conn *c, size_t len)
{
	void *p;
	int ret;

	ret = posix_memalign(&p, 4096, len);
	if (ret) {
		say(c, "cannot allocate %zu bytes", len);
		return NULL;
	}
	memset(p, 0, len);
	return p;
}

static struct ibv_mr *mr_reg(struct conn *c, void *buf, size_t len, int access,
			     const char *what)
{
	struct ibv_mr *mr;

	mr = ibv_reg_mr(c->pd, buf, len, access);
	if (!mr)
		say(c, "ibv_reg_mr(%s, %zu bytes): %s%s", what, len,
		    strerror(errno),
		    errno == ENOMEM ? " (RLIMIT_MEMLOCK too small? see ulimit -l)" : "");
	return mr;
}

/*
 * Create PD, CQ, QP and the three registered buffers on c->id, and post
 * the first receive.  Undone by conn_release().
 */
static int conn_setup(struct conn *c)
{
	struct ibv_qp_init_attr qpa = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 8, .max_recv_wr = 4,
			.max_send_sge = 1, .max_recv_sge = 1,
		},
	};
	int access = IBV_ACCESS_LOCAL_WRITE;
	int ret = -ENOMEM;

	c->msg_size = sizeof(struct msg) + c->opt->size;
	c->teardown = false;
	memset(c->done, 0, sizeof(c->done));

	c->pd = ibv_alloc_pd(c->id->verbs);
	if (!c->pd) {
		ret = -errno;
		say(c, "ibv_alloc_pd: %s", strerror(errno));
		return ret;
	}
	c->cch = ibv_create_comp_channel(c->id->verbs);
	if (!c->cch) {
		ret = -errno;
		say(c, "ibv_create_comp_channel: %s", strerror(errno));
		goto err_dealloc_pd;
	}
	c->cq = ibv_create_cq(c->id->verbs, CQ_DEPTH, c, c->cch, 0);
	if (!c->cq) {
		ret = -errno;
		say(c, "ibv_create_cq: %s", strerror(errno));
		goto err_destroy_comp_channel;
	}
	c->unacked_cq_events = 0;
	ret = ibv_req_notify_cq(c->cq, 0);
	if (ret) {
		say(c, "ibv_req_notify_cq: %s", strerror(ret));
		ret = -ret;
		goto err_destroy_cq;
	}

	qpa.send_cq = c->cq;
	qpa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &qpa)) {
		ret = -errno;
		say(c, "rdma_create_qp: %s", strerror(errno));
		goto err_destroy_cq;
	}
	c->qp_created = true;

	ret = -ENOMEM;
	c->send_buf = buf_alloc(c, c->msg_size);
	if (!c->send_buf)
		goto err_destroy_qp;
	c->recv_buf = buf_alloc(c, c->msg_size);
	if (!c->recv_buf)
		goto err_free_send_buf;
	c->rdma_buf = buf_alloc(c, c->opt->size);
	if (!c->rdma_buf)
		goto err_free_recv_buf;

	c->send_mr = mr_reg(c, c->send_buf, c->msg_size, 0, "send buffer");
	if (!c->send_mr) {
		ret = -errno;
		goto err_free_rdma_buf;
	}
	c->recv_mr = mr_reg(c, c->recv_buf, c->msg_size, IBV_ACCESS_LOCAL_WRITE,
			    "receive buffer");
	if (!c->recv_mr) {
		ret = -errno;
		goto err_dereg_send_mr;
	}
	/* The server exposes its buffer; the client reads into its own. */
	if (c->listen_id)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	c->rdma_mr = mr_reg(c, c->rdma_buf, c->opt->size, access, "RDMA buffer");
	if (!c->rdma_mr) {
		ret = -errno;
		goto err_dereg_recv_mr;
	}

	ret = post_recv(c);
	if (ret)
		goto err_dereg_rdma_mr;
	return 0;

err_dereg_rdma_mr:
	ibv_dereg_mr(c->rdma_mr);
	c->rdma_mr = NULL;
err_dereg_recv_mr:
	ibv_dereg_mr(c->recv_mr);
	c->recv_mr = NULL;
err_dereg_send_mr:
	ibv_dereg_mr(c->send_mr);
	c->send_mr = NULL;
err_free_rdma_buf:
	free(c->rdma_buf);
	c->rdma_buf = NULL;
err_free_recv_buf:
	free(c->recv_buf);
	c->recv_buf = NULL;
err_free_send_buf:
	free(c->send_buf);
	c->send_buf = NULL;
err_destroy_qp:
	rdma_destroy_qp(c->id);
	c->qp_created = false;
err_destroy_cq:
	ibv_destroy_cq(c->cq);
	c->cq = NULL;
err_destroy_comp_channel:
	ibv_destroy_comp_channel(c->cch);
	c->cch = NULL;
err_dealloc_pd:
	ibv_dealloc_pd(c->pd);
	c->pd = NULL;
	return ret;
}

static int mr_dereg(struct conn *c, struct ibv_mr **mr, const char *what)
{
	int err;

	if (!*mr)
		return 0;
	err = ibv_dereg_mr(*mr);
	*mr = NULL;
	if (err) {
		say(c, "ibv_dereg_mr(%s): %s", what, strerror(err));
		return -err;
	}
	return 0;
}

/* Undo conn_setup(); reports (but survives) failures of the destroy calls. */
static int conn_release(struct conn *c)
{
	int ret = 0, err;

	err = mr_dereg(c, &c->rdma_mr, "RDMA buffer");
	if (err)
		ret = err;
	err = mr_dereg(c, &c->recv_mr, "receive buffer");
	if (err)
		ret = err;
	err = mr_dereg(c, &c->send_mr, "send buffer");
	if (err)
		ret = err;
	free(c->rdma_buf);
	free(c->recv_buf);
	free(c->send_buf);
	c->rdma_buf = c->recv_buf = c->send_buf = NULL;
	if (c->qp_created) {
		rdma_destroy_qp(c->id);
		c->qp_created = false;
	}
	if (c->cq) {
		if (c->unacked_cq_events)
			ibv_ack_cq_events(c->cq, c->unacked_cq_events);
		c->unacked_cq_events = 0;
		err = ibv_destroy_cq(c->cq);
		if (err) {
			say(c, "ibv_destroy_cq: %s", strerror(err));
			ret = -err;
		}
		c->cq = NULL;
	}
	if (c->cch) {
		err = ibv_destroy_comp_channel(c->cch);
		if (err) {
			say(c, "ibv_destroy_comp_channel: %s", strerror(err));
			ret = -err;
		}
		c->cch = NULL;
	}
	if (c->pd) {
		err = ibv_dealloc_pd(c->pd);
		if (err) {
			say(c, "ibv_dealloc_pd: %s", strerror(err));
			ret = -err;
		}
		c->pd = NULL;
	}
	return ret;
}

/*
 * After the disconnect the QP is in the error state: the receive we keep
 * posted comes back flushed.  Collect it so nothing is left on the CQ.
 */
static void conn_drain(struct conn *c)
{
	struct timespec t;

	c->teardown = true;
	if (c->done[WR_RECV])
		return;
	deadline_set(&t, DRAIN_MS);
	if (wait_wr(c, WR_RECV, earlier(&t, &c->deadline)))
		dbg(c, "no flush completion for the posted receive");
}

/* ---- address helpers --------------------------------------------------- */

static int resolve(struct conn *c, const char *host, unsigned int port,
		   struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res;
	char service[16];
	int ret;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(host, service, &hints, &res);
	if (ret) {
		say(c, "bad address '%s': %s", host, gai_strerror(ret));
		return -EINVAL;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* ---- server ------------------------------------------------------------ */

static int server_listen(struct conn *c)
{
	struct sockaddr_storage ss;
	int ret;

	ret = resolve(c, c->opt->server_addr, c->opt->port, &ss);
	if (ret)
		return ret;

	c->ech = rdma_create_event_channel();
	if (!c->ech) {
		ret = -errno;
		say(c, "rdma_create_event_channel: %s", strerror(errno));
		return ret;
	}
	if (rdma_create_id(c->ech, &c->listen_id, c, RDMA_PS_TCP)) {
		ret = -errno;
		say(c, "rdma_create_id: %s", strerror(errno));
		goto err_destroy_channel;
	}
	if (rdma_bind_addr(c->listen_id, (struct sockaddr *)&ss)) {
		ret = -errno;
		say(c, "rdma_bind_addr(%s port %u): %s (is the address on an RDMA device?)",
		    c->opt->server_addr, c->opt->port, strerror(errno));
		goto err_destroy_listen_id;
	}
	if (rdma_listen(c->listen_id, 1)) {
		ret = -errno;
		say(c, "rdma_listen: %s", strerror(errno));
		goto err_destroy_listen_id;
	}
	dbg(c, "listening on %s port %u", c->opt->server_addr, c->opt->port);
	return 0;

err_destroy_listen_id:
	rdma_destroy_id(c->listen_id);
	c->listen_id = NULL;
err_destroy_channel:
	rdma_destroy_event_channel(c->ech);
	c->ech = NULL;
	return ret;
}

static void server_unlisten(struct conn *c)
{
	rdma_destroy_id(c->listen_id);
	c->listen_id = NULL;
	rdma_destroy_event_channel(c->ech);
	c->ech = NULL;
}

/* Accept one connection and serve the client's rounds until MSG_BYE. */
static int server_run(struct conn *c)
{
	struct rdma_conn_param param = {
		.responder_resources = 1, .initiator_depth = 1,
		.rnr_retry_count = 7,
	};
	struct rdma_cm_event *ev;
	struct remote_buf rb;
	struct msg m;
	unsigned int i;
	int ret;

	ret = cm_wait(c, RDMA_CM_EVENT_CONNECT_REQUEST, &ev, &c->deadline);
	if (ret)
		return ret;
	c->id = ev->id;
	rdma_ack_cm_event(ev);

	ret = set_ack_timeout(c);
	if (ret) {
		rdma_reject(c->id, NULL, 0);
		goto err_destroy_id;
	}
	/* The receive is posted in conn_setup(), before the accept. */
	ret = conn_setup(c);
	if (ret) {
		rdma_reject(c->id, NULL, 0);
		goto err_destroy_id;
	}

	rb.addr = htobe64((uintptr_t)c->rdma_buf);
	rb.rkey = htobe32(c->rdma_mr->rkey);
	rb.len = htobe32((uint32_t)c->opt->size);
	param.private_data = &rb;
	param.private_data_len = sizeof(rb);
	if (rdma_accept(c->id, &param)) {
		ret = -errno;
		say(c, "rdma_accept: %s", strerror(errno));
		goto err_release;
	}
	ret = cm_wait(c, RDMA_CM_EVENT_ESTABLISHED, &ev, &c->deadline);
	if (ret)
		goto err_release;
	rdma_ack_cm_event(ev);
	dbg(c, "connection established");

	for (i = 0; i < c->opt->iters; i++) {
		/* 1. SEND both ways */
		ret = recv_msg(c, MSG_DATA, i, &m);
		if (ret)
			goto err_disconnect;
		ret = send_msg(c, MSG_DATA, i, seed_of(i, 1), (uint32_t)c->opt->size);
		if (ret)
			goto err_disconnect;
		ret = wait_wr(c, WR_SEND, &c->deadline);
		if (ret)
			goto err_disconnect;

		/* 2. the client's RDMA WRITE landed before its SEND */
		ret = recv_msg(c, MSG_WRITE_DONE, i, &m);
		if (ret)
			goto err_disconnect;
		ret = pattern_check(c, "RDMA WRITE from client", c->rdma_buf,
				    c->opt->size, m.seed);
		if (ret)
			goto err_disconnect;

		/* 3. fill the buffer for the client's RDMA READ */
		pattern_fill(c->rdma_buf, c->opt->size, seed_of(i, 3));
		ret = send_msg(c, MSG_READ_READY, i, seed_of(i, 3), 0);
		if (ret)
			goto err_disconnect;
		ret = wait_wr(c, WR_SEND, &c->deadline);
		if (ret)
			goto err_disconnect;
	}
	ret = recv_msg(c, MSG_BYE, i, &m);
	if (ret)
		goto err_disconnect;

	/*
	 * The client disconnects first; answering with our own disconnect
	 * moves our QP to the error state, which flushes the posted receive.
	 */
	cm_wait_disconnected(c);
	if (rdma_disconnect(c->id))
		dbg(c, "rdma_disconnect after DISCONNECTED: %s", strerror(errno));
	conn_drain(c);
	ret = conn_release(c);
	rdma_destroy_id(c->id);
	c->id = NULL;
	return ret;

err_disconnect:
	rdma_disconnect(c->id);
	conn_drain(c);
err_release:
	conn_release(c);	/* reports its own errors; ret is the cause */
err_destroy_id:
	rdma_destroy_id(c->id);
	c->id = NULL;
	return ret;
}

/* ---- client ------------------------------------------------------------- */

/*
 * Create the id, resolve address and route from the client address to
 * the server, build the QP and connect.  Returns -ECONNREFUSED when the
 * server is not listening (yet); everything is undone then.
 */
static int client_connect(struct conn *c, const struct sockaddr_storage *src,
			  const struct sockaddr_storage *dst)
{
	struct rdma_conn_param param = {
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	struct rdma_cm_event *ev;
	int ret;

	if (rdma_create_id(c->ech, &c->id, c, RDMA_PS_TCP)) {
		ret = -errno;
		say(c, "rdma_create_id: %s", strerror(errno));
		return ret;
	}
	if (rdma_resolve_addr(c->id, (struct sockaddr *)src,
			      (struct sockaddr *)dst, RESOLVE_MS)) {
		ret = -errno;
		say(c, "rdma_resolve_addr(%s -> %s): %s", c->opt->client_addr,
		    c->opt->server_addr, strerror(errno));
		goto err_destroy_id;
	}
	ret = cm_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, &c->deadline);
	if (ret)
		goto err_destroy_id;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(c->id, RESOLVE_MS)) {
		ret = -errno;
		say(c, "rdma_resolve_route: %s", strerror(errno));
		goto err_destroy_id;
	}
	ret = cm_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, &c->deadline);
	if (ret)
		goto err_destroy_id;
	rdma_ack_cm_event(ev);

	ret = set_ack_timeout(c);
	if (ret)
		goto err_destroy_id;
	/* The receive is posted in conn_setup(), before the connect. */
	ret = conn_setup(c);
	if (ret)
		goto err_destroy_id;
	if (rdma_connect(c->id, &param)) {
		ret = -errno;
		say(c, "rdma_connect: %s", strerror(errno));
		goto err_release;
	}
	ret = cm_wait(c, RDMA_CM_EVENT_ESTABLISHED, &ev, &c->deadline);
	if (ret)
		goto err_release;
	if (ev->param.conn.private_data_len < sizeof(c->remote)) {
		say(c, "server sent %u bytes of private data, want %zu",
		    ev->param.conn.private_data_len, sizeof(c->remote));
		rdma_ack_cm_event(ev);
		ret = -EPROTO;
		goto err_disconnect;
	}
	memcpy(&c->remote, ev->param.conn.private_data, sizeof(c->remote));
	rdma_ack_cm_event(ev);
	c->remote.addr = be64toh(c->remote.addr);
	c->remote.rkey = be32toh(c->remote.rkey);
	c->remote.len = be32toh(c->remote.len);
	if (c->remote.len < c->opt->size) {
		say(c, "server buffer is %u bytes, want %zu (same -s on both sides?)",
		    c->remote.len, c->opt->size);
		ret = -EPROTO;
		goto err_disconnect;
	}
	dbg(c, "connected; server buffer 0x%llx rkey 0x%x",
	    (unsigned long long)c->remote.addr, c->remote.rkey);
	return 0;

err_disconnect:
	rdma_disconnect(c->id);
	conn_drain(c);
err_release:
	conn_release(c);
err_destroy_id:
	rdma_destroy_id(c->id);
	c->id = NULL;
	return ret;
}

static int client_rounds(struct conn *c)
{
	struct msg m;
	unsigned int i;
	int ret;

	for (i = 0; i < c->opt->iters; i++) {
		/* 1. SEND, and check the server's answer */
		ret = send_msg(c, MSG_DATA, i, seed_of(i, 0), (uint32_t)c->opt->size);
		if (ret)
			return ret;
		ret = wait_wr(c, WR_SEND, &c->deadline);
		if (ret)
			return ret;
		ret = recv_msg(c, MSG_DATA, i, &m);
		if (ret)
			return ret;

		/* 2. RDMA WRITE, then tell the server */
		pattern_fill(c->rdma_buf, c->opt->size, seed_of(i, 2));
		ret = post_send(c, WR_WRITE, IBV_WR_RDMA_WRITE, c->rdma_buf,
				c->rdma_mr, (uint32_t)c->opt->size,
				c->remote.addr, c->remote.rkey);
		if (ret)
			return ret;
		ret = wait_wr(c, WR_WRITE, &c->deadline);
		if (ret)
			return ret;
		ret = send_msg(c, MSG_WRITE_DONE, i, seed_of(i, 2), 0);
		if (ret)
			return ret;
		ret = wait_wr(c, WR_SEND, &c->deadline);
		if (ret)
			return ret;

		/* 3. RDMA READ what the server put in its buffer */
		ret = recv_msg(c, MSG_READ_READY, i, &m);
		if (ret)
			return ret;
		memset(c->rdma_buf, 0, c->opt->size);
		ret = post_send(c, WR_READ, IBV_WR_RDMA_READ, c->rdma_buf,
				c->rdma_mr, (uint32_t)c->opt->size,
				c->remote.addr, c->remote.rkey);
		if (ret)
			return ret;
		ret = wait_wr(c, WR_READ, &c->deadline);
		if (ret)
			return ret;
		ret = pattern_check(c, "RDMA READ from server", c->rdma_buf,
				    c->opt->size, m.seed);
		if (ret)
			return ret;
		dbg(c, "round %u ok", i);
	}
	ret = send_msg(c, MSG_BYE, i, 0, 0);
	if (ret)
		return ret;
	return wait_wr(c, WR_SEND, &c->deadline);
}

static int client_run(struct conn *c)
{
	struct sockaddr_storage src, dst;
	int ret, err;

	ret = resolve(c, c->opt->client_addr, 0, &src);
	if (ret)
		return ret;
	ret = resolve(c, c->opt->server_addr, c->opt->port, &dst);
	if (ret)
		return ret;

	c->ech = rdma_create_event_channel();
	if (!c->ech) {
		ret = -errno;
		say(c, "rdma_create_event_channel: %s", strerror(errno));
		return ret;
	}

	/* The server may not be listening yet: retry until the deadline. */
	for (;;) {
		ret = client_connect(c, &src, &dst);
		if (ret != -ECONNREFUSED)
			break;
		if (!c->retry_connect ||
		    deadline_ms(&c->deadline) < CONNECT_RETRY_MS) {
			say(c, "connection %s -> %s port %u rejected or unreachable",
			    c->opt->client_addr, c->opt->server_addr,
			    c->opt->port);
			break;
		}
		nanosleep(&(struct timespec){ .tv_nsec = CONNECT_RETRY_MS * 1000000L },
			  NULL);
	}
	if (ret)
		goto err_destroy_channel;

	ret = client_rounds(c);

	if (rdma_disconnect(c->id)) {
		err = -errno;
		say(c, "rdma_disconnect: %s", strerror(errno));
		if (!ret)
			ret = err;
	} else if (!ret) {
		cm_wait_disconnected(c);
	}
	conn_drain(c);
	err = conn_release(c);
	if (!ret)
		ret = err;
	rdma_destroy_id(c->id);
	c->id = NULL;

err_destroy_channel:
	rdma_destroy_event_channel(c->ech);
	c->ech = NULL;
	return ret;
}

/* ---- main ----------------------------------------------------------------- */

static void *client_thread(void *arg)
{
	struct conn *c = arg;
	int ret;

	ret = client_run(c);
	if (ret)
		stop_peer();
	return (void *)(intptr_t)ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: verbs_selftest [-r both|server|client] [-a SERVER_ADDR] [-b CLIENT_ADDR]\n"
		"                      [-p PORT] [-s SIZE] [-n ROUNDS] [-t SECONDS] [-A EXP] [-v]\n"
		"  -r  run the server and the client as two threads (both, default),\n"
		"      or one side only (start the server first)\n"
		"  -a  server address (default $PXFER_RXE_SERVER_ADDR)\n"
		"  -b  client source address (default $PXFER_RXE_CLIENT_ADDR)\n"
		"  -p  rdma_cm port (default %u)\n"
		"  -s  bytes per SEND / RDMA WRITE / RDMA READ (default %u)\n"
		"  -n  rounds (default %u)\n"
		"  -t  give up after this many seconds (default %u)\n"
		"  -A  local ACK timeout 4.096us * 2^EXP, 0-31 (default: rdma_cm's);\n"
		"      lower it to retransmit sooner on a lossy link\n"
		"  -v  report each step\n",
		DEFAULT_PORT, DEFAULT_SIZE, DEFAULT_ITERS, DEFAULT_TIMEOUT);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 0);
	if (errno || end == s || *end || *out > max || *s == '-')
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct options opt = {
		.role = "both",
		.server_addr = getenv("PXFER_RXE_SERVER_ADDR"),
		.client_addr = getenv("PXFER_RXE_CLIENT_ADDR"),
		.port = DEFAULT_PORT, .size = DEFAULT_SIZE,
		.iters = DEFAULT_ITERS, .timeout = DEFAULT_TIMEOUT,
		.ack_timeout = -1,
	};
	struct conn server = { .name = "server", .opt = &opt };
	struct conn client = { .name = "client", .opt = &opt };
	bool run_server, run_client;
	unsigned long v;
	pthread_t thr;
	void *tret;
	int ch, ret = 0, cret = 0;

	while ((ch = getopt(argc, argv, "r:a:b:p:s:n:t:A:vh")) != -1) {
		switch (ch) {
		case 'r':
			opt.role = optarg;
			break;
		case 'a':
			opt.server_addr = optarg;
			break;
		case 'b':
			opt.client_addr = optarg;
			break;
		case 'p':
			if (parse_uint(optarg, 65535, &v) || !v)
				goto bad_arg;
			opt.port = (unsigned int)v;
			break;
		case 's':
			if (parse_uint(optarg, 1UL << 30, &v) || !v)
				goto bad_arg;
			opt.size = v;
			break;
		case 'n':
			if (parse_uint(optarg, 1000000, &v))
				goto bad_arg;
			opt.iters = (unsigned int)v;
			break;
		case 't':
			if (parse_uint(optarg, 86400, &v) || !v)
				goto bad_arg;
			opt.timeout = (unsigned int)v;
			break;
		case 'A':
			if (parse_uint(optarg, 31, &v))
				goto bad_arg;
			opt.ack_timeout = (int)v;
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 1;
	}

	run_server = !strcmp(opt.role, "both") || !strcmp(opt.role, "server");
	run_client = !strcmp(opt.role, "both") || !strcmp(opt.role, "client");
	if (!run_server && !run_client) {
		fprintf(stderr, "verbs_selftest: error: -r must be both, server or client\n");
		return 1;
	}
	if (!opt.server_addr || (run_client && !opt.client_addr)) {
		fprintf(stderr, "verbs_selftest: error: no %s address: pass -%c or set %s (test/vm/run sets it)\n",
			!opt.server_addr ? "server" : "client",
			!opt.server_addr ? 'a' : 'b',
			!opt.server_addr ? "PXFER_RXE_SERVER_ADDR" : "PXFER_RXE_CLIENT_ADDR");
		return 1;
	}

	/* A lone client may start before its server listens. */
	client.retry_connect = !run_server;
	deadline_set(&server.deadline, opt.timeout * 1000);
	client.deadline = server.deadline;

	if (run_server) {
		ret = server_listen(&server);
		if (ret)
			goto out;
	}
	if (run_server && run_client) {
		stop_fd = eventfd(0, EFD_CLOEXEC);
		if (stop_fd < 0) {
			ret = -errno;
			perror("verbs_selftest: error: eventfd");
			goto out_unlisten;
		}
		ret = pthread_create(&thr, NULL, client_thread, &client);
		if (ret) {
			fprintf(stderr, "verbs_selftest: error: pthread_create: %s\n",
				strerror(ret));
			ret = -ret;
			goto out_close_stop_fd;
		}
		ret = server_run(&server);
		if (ret)
			stop_peer();
		pthread_join(thr, &tret);
		cret = (int)(intptr_t)tret;
	} else if (run_server) {
		ret = server_run(&server);
	} else {
		cret = client_run(&client);
	}

out_close_stop_fd:
	if (stop_fd >= 0) {
		close(stop_fd);
		stop_fd = -1;
	}
out_unlisten:
	if (run_server)
		server_unlisten(&server);
out:
	/* A side that stopped because its peer failed is not the cause. */
	if (ret == -ECANCELED && cret)
		ret = 0;
	if (cret == -ECANCELED && ret)
		cret = 0;
	if (ret || cret) {
		fprintf(stderr, "verbs_selftest: FAIL (%s)\n",
			strerror(-(ret ? ret : cret)));
		return 1;
	}
	printf("verbs_selftest: ok: %u rounds of %zu-byte SEND, RDMA WRITE and RDMA READ (%s -> %s)\n",
	       opt.iters, opt.size, run_client ? opt.client_addr : "*",
	       opt.server_addr);
	return 0;
bad_arg:
	fprintf(stderr, "verbs_selftest: error: bad value '%s' for -%c\n",
		optarg, ch);
	usage(stderr);
	return 1;
}
