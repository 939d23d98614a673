// SPDX-License-Identifier: MIT
/*
 * rdma_floor: the least an RDMA file copy from one page cache into another
 * costs, for the RDMA benchmark (pxfer against ib_write_bw). Not part of
 * pxfer and not a transfer tool: no authentication, no checksum, no
 * temporary name, no error recovery, no manifest.
 *
 *   rdma_floor recv [-s MIB] [-t SLOTS] ADDR PORT FILE JOBS
 *   rdma_floor send [-s MIB] [-t SLOTS] [-b SRC] [-e] ADDR PORT FILE JOBS
 *
 * JOBS connections (one RC QP each, one thread each); the file is cut in
 * chunks of -s MiB (default 4), dealt round-robin to the connections.
 * Each side registers a ring of -t slots (default 8) per connection. The
 * sender reads a chunk into its ring (pread), RDMA-WRITEs it with
 * immediate data (the length) into the receiver's slot of the same index,
 * and the receiver writes the slot into FILE at the chunk's offset
 * (pwrite), then returns the slot with a zero-length SEND. That is what
 * any RDMA copy of a file into a file must do at least: a copy into
 * registered memory, the wire, a copy out of it, and flow control so that
 * a slot is not overwritten before it is on its way to the file. pxfer
 * adds its protocol, a checksum per chunk on both sides and io_uring;
 * ib_write_bw does neither copy.
 *
 * The sender busy-polls its completion queue, as ib_write_bw's client does
 * (-e: sleep on the completion channel instead, as pxfer does when it has
 * nothing in flight); the receiver sleeps on it. -b binds the source
 * address (with two devices on one host the route must be chosen).
 *
 * The sender prints "bytes N seconds S data_seconds D": S from its start
 * to the end, D from the first write to the last slot returned (what
 * ib_write_bw's own figure covers). Exit status 0, or 1 with a message.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define JOBS_MAX 16
#define POLL_BATCH 16

struct ring_msg {		/* the receiver's accept private data */
	uint64_t addr;
	uint32_t rkey;
} __attribute__((packed));

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *ring;
	uint64_t raddr;
	uint32_t rkey;
	int k;
	pthread_t th;
};

static int fd, jobs, slots = 8, events;
static uint32_t chunk = 4u << 20;
static off_t size;
static struct conn conns[JOBS_MAX];

static void pxfer_die(const char *what, int err)
{
	fprintf(stderr, "rdma_floor: %s: %s\n", what, strerror(err));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ech,
				    enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ech, &ev))
		pxfer_die("rdma_get_cm_event", errno);
	if (ev->event != type) {
		fprintf(stderr, "rdma_floor: %s instead of %s (status %d)\n",
			rdma_event_str(ev->event), rdma_event_str(type),
			ev->status);
		exit(1);
	}
	return ev;
}

static void post_recv(struct conn *c)
{
	struct ibv_recv_wr wr = { 0 }, *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad))
		pxfer_die("ibv_post_recv", errno);
}

/* PD, CQ, QP and ring for @c->id, with every receive posted */
static void conn_setup(struct conn *c, int access)
{
	struct ibv_qp_init_attr qa = { 0 };
	size_t len = (size_t)slots * chunk;

	c->pd = ibv_alloc_pd(c->id->verbs);
	c->ch = c->pd ? ibv_create_comp_channel(c->id->verbs) : NULL;
	c->cq = c->ch ? ibv_create_cq(c->id->verbs, 2 * slots + 4, NULL, c->ch, 0) : NULL;
	if (!c->cq)
		pxfer_die("cannot create the PD, channel or CQ", errno);
	qa.send_cq = qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = slots + 2;
	qa.cap.max_recv_wr = slots + 2;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, c->pd, &qa))
		pxfer_die("rdma_create_qp", errno);
	if (posix_memalign((void **)&c->ring, 4096, len))
		pxfer_die("posix_memalign", ENOMEM);
	memset(c->ring, 0, len);
	c->mr = ibv_reg_mr(c->pd, c->ring, len, access);
	if (!c->mr)
		pxfer_die("ibv_reg_mr (is 'ulimit -l' large enough?)", errno);
	for (int i = 0; i < slots; i++)
		post_recv(c);
}

static void conn_free(struct conn *c)
{
	rdma_disconnect(c->id);
	rdma_destroy_qp(c->id);
	ibv_dereg_mr(c->mr);
	free(c->ring);
	ibv_destroy_cq(c->cq);
	ibv_destroy_comp_channel(c->ch);
	ibv_dealloc_pd(c->pd);
	rdma_destroy_id(c->id);
}

static void check(const struct ibv_wc *wc)
{
	if (wc->status == IBV_WC_SUCCESS)
		return;
	fprintf(stderr, "rdma_floor: %s (opcode %d)\n",
		ibv_wc_status_str(wc->status), wc->opcode);
	exit(1);
}

/* completions of @c: busy-polled, or after sleeping on its channel */
static int poll_some(struct conn *c, struct ibv_wc *wc, int sleep, int *armed)
{
	for (;;) {
		int n = ibv_poll_cq(c->cq, POLL_BATCH, wc);
		struct ibv_cq *cq;
		void *ctx;

		if (n < 0)
			pxfer_die("ibv_poll_cq", EIO);
		if (n || !sleep)
			return n;
		if (!*armed) {		/* arm, then look once more */
			if (ibv_req_notify_cq(c->cq, 0))
				pxfer_die("ibv_req_notify_cq", errno);
			*armed = 1;
			continue;
		}
		if (ibv_get_cq_event(c->ch, &cq, &ctx))
			pxfer_die("ibv_get_cq_event", errno);
		ibv_ack_cq_events(cq, 1);
		*armed = 0;
	}
}

static void *receiver(void *arg)
{
	struct conn *c = arg;
	struct ibv_wc wc[POLL_BATCH];
	uint64_t n = 0;
	int armed = 0;

	for (;;) {
		int got = poll_some(c, wc, 1, &armed);

		for (int i = 0; i < got; i++) {
			struct ibv_send_wr wr = { .opcode = IBV_WR_SEND,
						  .send_flags = IBV_SEND_SIGNALED };
			struct ibv_send_wr *bad;
			uint32_t len, done = 0;
			uint8_t *slot;
			off_t off;

			check(&wc[i]);
			if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM)
				continue;	/* a returned slot's SEND */
			len = ntohl(wc[i].imm_data);
			if (!len)
				return NULL;	/* the end */
			if (len > chunk) {
				fprintf(stderr, "rdma_floor: chunk of %u bytes\n", len);
				exit(1);
			}
			slot = c->ring + (size_t)(n % slots) * chunk;
			off = (off_t)(n * jobs + c->k) * chunk;
			while (done < len) {
				ssize_t w = pwrite(fd, slot + done, len - done, off + done);

				if (w <= 0)
					pxfer_die("pwrite", w ? errno : EIO);
				done += w;
			}
			n++;
			post_recv(c);
			if (ibv_post_send(c->id->qp, &wr, &bad))
				pxfer_die("ibv_post_send", errno);
		}
	}
}

static void post_write(struct conn *c, unsigned int slot, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->ring + (size_t)slot * chunk),
			       .length = len, .lkey = c->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = len ? 1 : 0,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(len) };
	struct ibv_send_wr *bad;

	wr.wr.rdma.remote_addr = c->raddr + (uint64_t)slot * chunk;
	wr.wr.rdma.rkey = c->rkey;
	if (ibv_post_send(c->id->qp, &wr, &bad))
		pxfer_die("ibv_post_send", errno);
}

static void *sender(void *arg)
{
	struct conn *c = arg;
	struct ibv_wc wc[POLL_BATCH];
	uint64_t posted = 0, completed = 0, returned = 0, i = c->k;
	int armed = 0;

	for (;;) {
		int more = (off_t)(i * chunk) < size;

		/* a chunk goes when its local slot's last write completed and
		 * the receiver returned its remote slot */
		if (more && posted - completed < (uint64_t)slots &&
		    posted - returned < (uint64_t)slots) {
			unsigned int slot = posted % slots;
			off_t off = (off_t)i * chunk;
			uint32_t len = size - off < chunk ? size - off : chunk, done = 0;

			while (done < len) {
				ssize_t r = pread(fd, c->ring + (size_t)slot * chunk + done,
						  len - done, off + done);

				if (r <= 0)
					pxfer_die("pread", r ? errno : EIO);
				done += r;
			}
			post_write(c, slot, len);
			posted++;
			i += jobs;
			continue;
		}
		if (!more && completed == posted && returned == posted)
			break;
		for (int n = poll_some(c, wc, events, &armed), k = 0; k < n; k++) {
			check(&wc[k]);
			if (wc[k].opcode == IBV_WC_RECV) {
				returned++;
				post_recv(c);
			} else {
				completed++;
			}
		}
	}
	post_write(c, 0, 0);	/* the end: every slot is back */
	for (;;) {
		int n = poll_some(c, wc, events, &armed);

		for (int k = 0; k < n; k++) {
			check(&wc[k]);
			if (wc[k].opcode == IBV_WC_RDMA_WRITE)
				return NULL;
		}
	}
}

static void resolve(const char *host, const char *port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	int ret = getaddrinfo(host, port, &hints, &res);

	if (ret) {
		fprintf(stderr, "rdma_floor: %s: %s\n", host, gai_strerror(ret));
		exit(1);
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
}

static void serve(struct rdma_event_channel *ech, struct sockaddr_storage *addr)
{
	struct rdma_cm_id *lid;
	struct rdma_cm_event *ev;

	if (rdma_create_id(ech, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)addr) || rdma_listen(lid, jobs))
		pxfer_die("cannot listen", errno);
	for (int k = 0; k < jobs; k++) {
		struct conn *c = &conns[k];
		struct ring_msg m;
		struct rdma_conn_param p = { .private_data = &m,
					     .private_data_len = sizeof(m),
					     .retry_count = 7, .rnr_retry_count = 7 };

		ev = expect(ech, RDMA_CM_EVENT_CONNECT_REQUEST);
		c->id = ev->id;
		c->k = k;
		rdma_ack_cm_event(ev);
		conn_setup(c, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		m.addr = htobe64((uintptr_t)c->ring);
		m.rkey = htonl(c->mr->rkey);
		if (rdma_accept(c->id, &p))
			pxfer_die("rdma_accept", errno);
		rdma_ack_cm_event(expect(ech, RDMA_CM_EVENT_ESTABLISHED));
		if (pthread_create(&c->th, NULL, receiver, c))
			pxfer_die("pthread_create", EAGAIN);
	}
	for (int k = 0; k < jobs; k++)
		pthread_join(conns[k].th, NULL);
	for (int k = 0; k < jobs; k++)
		conn_free(&conns[k]);
	rdma_destroy_id(lid);
}

static void connect_all(struct rdma_event_channel *ech, struct sockaddr_storage *dst,
			struct sockaddr_storage *src)
{
	for (int k = 0; k < jobs; k++) {
		struct conn *c = &conns[k];
		struct rdma_conn_param p = { .retry_count = 7, .rnr_retry_count = 7 };
		struct rdma_cm_event *ev;
		struct ring_msg m;

		c->k = k;
		if (rdma_create_id(ech, &c->id, NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(c->id, src->ss_family ? (struct sockaddr *)src : NULL,
				      (struct sockaddr *)dst, 2000))
			pxfer_die("rdma_resolve_addr", errno);
		rdma_ack_cm_event(expect(ech, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(c->id, 2000))
			pxfer_die("rdma_resolve_route", errno);
		rdma_ack_cm_event(expect(ech, RDMA_CM_EVENT_ROUTE_RESOLVED));
		conn_setup(c, IBV_ACCESS_LOCAL_WRITE);
		if (rdma_connect(c->id, &p))
			pxfer_die("rdma_connect", errno);
		ev = expect(ech, RDMA_CM_EVENT_ESTABLISHED);
		if (ev->param.conn.private_data_len < sizeof(m)) {
			fprintf(stderr, "rdma_floor: no ring from the receiver\n");
			exit(1);
		}
		memcpy(&m, ev->param.conn.private_data, sizeof(m));
		rdma_ack_cm_event(ev);
		c->raddr = be64toh(m.addr);
		c->rkey = ntohl(m.rkey);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_storage dst = { 0 }, src = { 0 };
	struct rdma_event_channel *ech;
	double t0 = now(), t1;
	int send_side, opt;

	if (argc < 2 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send")))
		goto usage;
	send_side = !strcmp(argv[1], "send");
	optind = 2;
	while ((opt = getopt(argc, argv, "s:t:b:e")) != -1) {
		switch (opt) {
		case 's': chunk = (uint32_t)atoi(optarg) << 20; break;
		case 't': slots = atoi(optarg); break;
		case 'b': resolve(optarg, NULL, &src); break;
		case 'e': events = 1; break;
		default: goto usage;
		}
	}
	if (argc - optind != 4)
		goto usage;
	jobs = atoi(argv[optind + 3]);
	if (jobs < 1 || jobs > JOBS_MAX || slots < 1 || slots > 1024 ||
	    !chunk || chunk > (64u << 20)) {
		fprintf(stderr, "rdma_floor: JOBS 1-%d, SLOTS 1-1024, MIB 1-64\n", JOBS_MAX);
		return 1;
	}
	resolve(argv[optind], argv[optind + 1], &dst);
	if (send_side) {
		struct stat st;

		fd = open(argv[optind + 2], O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st))
			pxfer_die(argv[optind + 2], errno);
		size = st.st_size;
	} else {
		fd = open(argv[optind + 2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			pxfer_die(argv[optind + 2], errno);
	}
	ech = rdma_create_event_channel();
	if (!ech)
		pxfer_die("rdma_create_event_channel", errno);
	if (!send_side) {
		serve(ech, &dst);
	} else {
		connect_all(ech, &dst, &src);
		t1 = now();
		for (int k = 0; k < jobs; k++)
			if (pthread_create(&conns[k].th, NULL, sender, &conns[k]))
				pxfer_die("pthread_create", EAGAIN);
		for (int k = 0; k < jobs; k++)
			pthread_join(conns[k].th, NULL);
		printf("bytes %lld seconds %.3f data_seconds %.3f\n",
		       (long long)size, now() - t0, now() - t1);
		for (int k = 0; k < jobs; k++)
			conn_free(&conns[k]);
	}
	rdma_destroy_event_channel(ech);
	if (close(fd))
		pxfer_die("close", errno);
	return 0;
usage:
	fprintf(stderr, "usage: rdma_floor recv|send [-s MIB] [-t SLOTS] [-b SRC] [-e] ADDR PORT FILE JOBS\n");
	return 1;
}
