// SPDX-License-Identifier: MIT
/*
 * The work service on rank 0 (docs/scaleout.md, "Work units"): one thread,
 * non-blocking sockets and poll. Each connection is a lockstep of request
 * and answer: the next request is read only once the last answer is out,
 * so a client that does not read holds one answer and no more. The units'
 * bookkeeping (queues, leases, lost receivers) is in work_jobs.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sodium.h>

#include "api/work_serve.h"
#include "core/bytes.h"
#include "core/log.h"

#define CONN_EXTRA	4	/* connections beyond nranks (refusals) */
#define IN_MAX		(PXFER_WORK_HDR_LEN + PXFER_WORK_REQ_MAX + PXFER_WORK_MAC_LEN)

enum conn_state { C_HELLO, C_READY, C_CLOSING };

struct work_conn {
	int fd;
	enum conn_state state;
	uint32_t rank;
	char peer[64];
	uint64_t deadline_ms;		/* C_HELLO: closed when not done by then */
	uint8_t nonce_s[PXFER_WORK_NONCE_LEN];
	uint8_t key_in[PXFER_WORK_KEY_LEN], key_out[PXFER_WORK_KEY_LEN];
	uint64_t seq_in, seq_out;
	uint8_t in[IN_MAX];
	size_t in_len;
	uint8_t *out;			/* the answer being written */
	size_t out_len, out_off;
	int end_wait;			/* END asked, not answered yet */
	int told;			/* its OUTCOME is out */
	int outcome_out;		/* the answer being written is it */
	struct work_node *leases;	/* units it holds */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- answers ------------------------------------------------------------ */

/* queue @m as @c's answer (MACed once the handshake is done); 0 or -errno */
static int conn_answer(struct work_conn *c, const struct pxfer_work_msg *m)
{
	size_t len = PXFER_WORK_HDR_LEN + pxfer_work_msg_size(m);
	ssize_t n;

	c->out = malloc(len + PXFER_WORK_MAC_LEN);
	if (!c->out)
		return -ENOMEM;
	n = pxfer_work_msg_encode(c->out, len, m);
	if (n < 0) {
		free(c->out);
		c->out = NULL;
		return (int)n;
	}
	if (c->state == C_READY) {
		pxfer_work_frame_mac(c->key_out, 'S', c->seq_out++, c->out, len,
				     c->out + len);
		len += PXFER_WORK_MAC_LEN;
	}
	c->out_len = len;
	c->out_off = 0;
	c->outcome_out = m->type == PXFER_WORK_OUTCOME;
	return 0;
}

static int conn_answer_type(struct work_conn *c, uint16_t type)
{
	struct pxfer_work_msg m = { .type = type };

	return conn_answer(c, &m);
}

static void conn_refuse(struct work_conn *c, uint32_t code, const char *why)
{
	struct pxfer_work_msg m = { .type = PXFER_WORK_REFUSE, .u.refuse = code };

	pxfer_warning("work service: refused the connection from %s: %s",
		      c->peer, why);
	if (conn_answer(c, &m) == 0)
		c->state = C_CLOSING;
	else
		c->state = C_CLOSING, c->out_len = 0;
}

/* ---- connections ------------------------------------------------------- */

static void conn_free(struct pxfer_work_server *s, int i)
{
	struct work_conn *c = s->conns[i];

	if (c->state == C_READY && s->rank_conn[c->rank] == i)
		s->rank_conn[c->rank] = -1;
	pxfer_work_jobs_leases_back(s, &c->leases);
	close(c->fd);
	free(c->out);
	sodium_memzero(c, sizeof(*c));
	free(c);
	s->conns[i] = NULL;
	s->nconns--;
}

static void conn_accept(struct pxfer_work_server *s)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct pxfer_work_msg m = { .type = PXFER_WORK_CHALLENGE };
	struct work_conn *c;
	int fd, i;

	fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl,
		     SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	for (i = 0; i < s->maxconns && s->conns[i]; i++)
		;
	c = i < s->maxconns ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		pxfer_verbose("work service: a connection over the %d allowed closed",
			      s->maxconns);
		close(fd);
		return;
	}
	c->fd = fd;
	c->state = C_HELLO;
	c->deadline_ms = now_ms() + s->handshake_ms;
	if (getnameinfo((struct sockaddr *)&ss, sl, c->peer, sizeof(c->peer),
			NULL, 0, NI_NUMERICHOST))
		strcpy(c->peer, "?");
	pxfer_work_keepalive(fd);
	randombytes_buf(c->nonce_s, sizeof(c->nonce_s));
	m.u.challenge.magic = PXFER_WORK_MAGIC;
	m.u.challenge.version = PXFER_WORK_VERSION;
	memcpy(m.u.challenge.nonce, c->nonce_s, sizeof(c->nonce_s));
	memcpy(m.u.challenge.job, s->job, 16);
	s->conns[i] = c;
	s->nconns++;
	if (conn_answer(c, &m))
		conn_free(s, i);
}

static int conn_hello(struct pxfer_work_server *s, int i,
		      const struct pxfer_work_msg *m)
{
	struct work_conn *c = s->conns[i];
	struct pxfer_work_msg w = { .type = PXFER_WORK_WELCOME };
	uint8_t mac[PXFER_WORK_MAC_LEN];
	uint32_t rank = m->u.hello.rank;
	char why[96];

	if (m->type != PXFER_WORK_HELLO ||
	    m->u.hello.version != PXFER_WORK_VERSION) {
		conn_refuse(c, EPROTO, "not a pxfer work client of this version");
		return 0;
	}
	pxfer_work_hello_mac(s->secret, s->secret_len, c->nonce_s,
			     m->u.hello.nonce, s->job, rank, mac);
	if (sodium_memcmp(mac, m->u.hello.mac, sizeof(mac))) {
		conn_refuse(c, EACCES, "wrong secret or job");
		return 0;
	}
	if (rank >= s->nranks) {
		snprintf(why, sizeof(why), "rank %u, the job has %u",
			 (unsigned int)rank, (unsigned int)s->nranks);
		conn_refuse(c, ERANGE, why);
		return 0;
	}
	if (s->rank_conn[rank] >= 0) {
		snprintf(why, sizeof(why), "rank %u is already connected",
			 (unsigned int)rank);
		conn_refuse(c, EEXIST, why);
		return 0;
	}
	pxfer_work_welcome_mac(s->secret, s->secret_len, c->nonce_s,
			       m->u.hello.nonce, s->job, rank, m->u.hello.mac,
			       w.u.welcome.mac);
	if (conn_answer(c, &w))
		return -ENOMEM;
	pxfer_work_keys(s->secret, s->secret_len, c->nonce_s, m->u.hello.nonce,
			c->key_in, c->key_out);
	c->state = C_READY;
	c->rank = rank;
	s->rank_conn[rank] = i;
	if (!s->rank_seen[rank]) {
		s->rank_seen[rank] = 1;
		s->nseen++;
	}
	pxfer_verbose("work service: rank %u connected from %s",
		      (unsigned int)rank, c->peer);
	return 0;
}

/* an authenticated request: answer it, or -EPROTO to close */
static int conn_request(struct pxfer_work_server *s, int i,
			const struct pxfer_work_msg *m)
{
	struct work_conn *c = s->conns[i];
	struct pxfer_work_msg a = { 0 };
	int ret;

	switch (m->type) {
	case PXFER_WORK_PULL:
		if (m->u.recv >= s->nrecv)
			return -EPROTO;
		ret = pxfer_work_jobs_pull(s, c->rank, m->u.recv, &c->leases,
					   &a);
		if (ret)
			return ret;
		return conn_answer(c, &a);
	case PXFER_WORK_REPORT:
		pxfer_work_jobs_report(s, c->rank, &c->leases, &m->u.report);
		return conn_answer_type(c, PXFER_WORK_ACK);
	case PXFER_WORK_LOST:
		if (m->u.recv >= s->nrecv)
			return -EPROTO;
		pxfer_work_jobs_lost(s, m->u.recv, c->rank);
		return conn_answer_type(c, PXFER_WORK_ACK);
	case PXFER_WORK_END:
		c->end_wait = 1;
		return 0;
	default:
		return -EPROTO;
	}
}

/* one whole frame in c->in: handle it; 0, or -errno to close */
static int conn_frame(struct pxfer_work_server *s, int i, size_t flen,
		      size_t blen)
{
	struct work_conn *c = s->conns[i];
	struct pxfer_work_msg m;
	uint8_t mac[PXFER_WORK_MAC_LEN];
	int ret;

	if (c->state == C_READY) {
		pxfer_work_frame_mac(c->key_in, 'C', c->seq_in++, c->in,
				     flen - PXFER_WORK_MAC_LEN, mac);
		if (sodium_memcmp(mac, c->in + flen - PXFER_WORK_MAC_LEN,
				  sizeof(mac)))
			return -EBADMSG;
	}
	ret = pxfer_work_msg_decode((uint16_t)pxfer_get_be(c->in, 2),
				    c->in + PXFER_WORK_HDR_LEN, blen, &m);
	if (!ret)
		ret = c->state == C_HELLO ? conn_hello(s, i, &m) :
					    conn_request(s, i, &m);
	pxfer_work_msg_release(&m);
	memmove(c->in, c->in + flen, c->in_len - flen);
	c->in_len -= flen;
	return ret;
}

/* handle the frame in c->in if it is whole; 0, or -errno to close */
static int conn_parse(struct pxfer_work_server *s, int i)
{
	struct work_conn *c = s->conns[i];
	uint16_t type;
	uint32_t blen;
	size_t flen;

	if (c->in_len < PXFER_WORK_HDR_LEN || c->out || c->end_wait)
		return 0;
	if (pxfer_work_hdr_decode(c->in, PXFER_WORK_REQ_MAX, &type, &blen))
		return -EPROTO;
	flen = PXFER_WORK_HDR_LEN + blen +
	       (c->state == C_READY ? PXFER_WORK_MAC_LEN : 0);
	if (c->in_len < flen)
		return 0;
	return conn_frame(s, i, flen, blen);
}

/* read what there is and handle one frame; 0, or -errno to close */
static int conn_read(struct pxfer_work_server *s, int i)
{
	struct work_conn *c = s->conns[i];
	ssize_t n;

	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	c->in_len += (size_t)n;
	return conn_parse(s, i);
}

static int conn_write(struct pxfer_work_server *s, int i)
{
	struct work_conn *c = s->conns[i];
	ssize_t n;

	n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		 MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	c->out_off += (size_t)n;
	if (c->out_off < c->out_len)
		return 0;
	if (c->outcome_out)
		c->told = 1;
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	if (c->state == C_CLOSING)
		return -ECONNRESET;
	/* a request that came with the last one */
	return conn_parse(s, i);
}

/* once the job is over: answer the ENDs, and say whether wait may return */
static void serve_over(struct pxfer_work_server *s, uint64_t now)
{
	int all = 1;

	for (int i = 0; i < s->maxconns; i++) {
		struct work_conn *c = s->conns[i];
		struct pxfer_work_msg m = { .type = PXFER_WORK_OUTCOME };

		if (!c || c->state != C_READY)
			continue;
		if (c->end_wait && !c->out) {
			m.u.outcome = s->outcome;
			if (conn_answer(c, &m) == 0)
				c->end_wait = 0;
		}
		if (!c->told)
			all = 0;
	}
	if (!s->done && all &&
	    (s->nseen == s->nranks || now >= s->over_ms + s->end_grace_ms)) {
		pthread_mutex_lock(&s->lock);
		s->done = 1;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
}

static void *serve_thread(void *arg)
{
	struct pxfer_work_server *s = arg;
	struct pollfd *p = s->pfd;
	int *who = s->pfd_conn;

	for (;;) {
		uint64_t now = now_ms();
		int n = 2, timeout = 1000;

		if (s->over)
			serve_over(s, now);
		p[0] = (struct pollfd){ .fd = s->wake, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		for (int i = 0; i < s->maxconns; i++) {
			struct work_conn *c = s->conns[i];

			if (!c)
				continue;
			if (c->state == C_HELLO && now >= c->deadline_ms) {
				pxfer_warning("work service: closed the connection from %s: no handshake in %u ms",
					      c->peer, (unsigned int)s->handshake_ms);
				conn_free(s, i);
				continue;
			}
			p[n].fd = c->fd;
			p[n].events = c->out ? POLLOUT :
				      c->end_wait ? 0 : POLLIN;
			p[n].revents = 0;
			who[n++] = i;
		}
		if (poll(p, n, timeout) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		for (int k = 2; k < n; k++) {
			int i = who[k], ret = 0;
			struct work_conn *c = s->conns[i];

			if (!p[k].revents)
				continue;
			if (c->out)
				ret = conn_write(s, i);
			else if (p[k].revents & (POLLIN | POLLHUP | POLLERR))
				ret = conn_read(s, i);
			if (ret && ret != -ECONNRESET && c->state == C_READY)
				pxfer_warning("work service: closed rank %u's connection: %s",
					      (unsigned int)c->rank,
					      ret == -EPROTO ? "a malformed message" :
					      ret == -EBADMSG ? "a message that fails its MAC" :
					      strerror(-ret));
			if (ret)
				conn_free(s, i);
		}
		if (p[1].revents & POLLIN)
			conn_accept(s);
	}
	return NULL;
}

/* ---- setup -------------------------------------------------------------- */

static int serve_listen(struct pxfer_work_server *s, const char *bind_to)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE,
	}, *res, *a;
	int ret, one = 1;

	ret = getaddrinfo(bind_to, "0", &hints, &res);
	if (ret) {
		pxfer_error("work service: cannot listen on '%s': %s",
			    bind_to ? bind_to : "*", gai_strerror(ret));
		return -EINVAL;
	}
	ret = -EADDRNOTAVAIL;
	for (a = res; a; a = a->ai_next) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK |
				SOCK_CLOEXEC, 0);

		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 ||
		    listen(fd, 128) < 0 ||
		    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
			ret = -errno;
			close(fd);
			continue;
		}
		s->lfd = fd;
		s->port = ntohs(ss.ss_family == AF_INET6 ?
				((struct sockaddr_in6 *)&ss)->sin6_port :
				((struct sockaddr_in *)&ss)->sin_port);
		ret = 0;
		break;
	}
	freeaddrinfo(res);
	if (ret)
		pxfer_error("work service: cannot listen on '%s': %s",
			    bind_to ? bind_to : "*", strerror(-ret));
	return ret;
}

static int serve_alloc(struct pxfer_work_server *s,
		       const struct pxfer_work_conf *c)
{
	s->nranks = c->nranks;
	s->nrecv = c->nrecv;
	s->maxconns = (int)c->nranks + CONN_EXTRA;
	s->conns = calloc((size_t)s->maxconns, sizeof(*s->conns));
	s->pfd = calloc((size_t)s->maxconns + 2, sizeof(*s->pfd));
	s->pfd_conn = calloc((size_t)s->maxconns + 2, sizeof(*s->pfd_conn));
	s->rank_conn = malloc(c->nranks * sizeof(*s->rank_conn));
	s->rank_seen = calloc(c->nranks, 1);
	s->secret = malloc(c->secret_len);
	if (!s->conns || !s->pfd || !s->pfd_conn || !s->rank_conn ||
	    !s->rank_seen || !s->secret)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->nranks; i++)
		s->rank_conn[i] = -1;
	memcpy(s->secret, c->secret, c->secret_len);
	s->secret_len = c->secret_len;
	memcpy(s->job, c->job, 16);
	s->handshake_ms = c->handshake_ms ? c->handshake_ms : 10000;
	s->end_grace_ms = c->end_grace_ms ? c->end_grace_ms : 5000;
	return pxfer_work_jobs_init(s, c);
}

int pxfer_work_serve(struct pxfer_work_server **sp,
		     const struct pxfer_work_conf *c)
{
	struct pxfer_work_server *s;
	int ret;

	*sp = NULL;
	if (!c->nrecv || c->nrecv > PXFER_WORK_RECV_MAX || !c->nranks ||
	    c->nranks > PXFER_WORK_RANKS_MAX || !c->secret || !c->secret_len ||
	    c->nroots < 1) {
		pxfer_error("work service: %u receivers and %u ranks: it takes 1 to %u receivers and 1 to %u ranks, a secret and a path",
			    (unsigned int)c->nrecv, (unsigned int)c->nranks,
			    PXFER_WORK_RECV_MAX, PXFER_WORK_RANKS_MAX);
		return -EINVAL;
	}
	if (sodium_init() < 0)
		return -EIO;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->lfd = -1;
	s->wake = -1;
	pthread_mutex_init(&s->lock, NULL);
	atomic_store(&s->p_walking, 1);
	pthread_cond_init(&s->cond, NULL);
	ret = serve_alloc(s, c);
	if (ret)
		goto out_free;
	ret = serve_listen(s, c->bind);
	if (ret)
		goto out_free;
	s->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake < 0) {
		ret = -errno;
		goto out_free;
	}
	ret = -pxfer_thread_create(&s->thread, NULL, serve_thread, s);
	if (ret)
		goto out_free;
	s->running = 1;
	*sp = s;
	return 0;

out_free:
	pxfer_work_server_free(s);
	return ret;
}

int pxfer_work_server_port(const struct pxfer_work_server *s)
{
	return s->port;
}

int pxfer_work_server_wait(struct pxfer_work_server *s,
			   struct pxfer_job_outcome *out)
{
	struct pxfer_job_outcome *o = &s->outcome;

	pthread_mutex_lock(&s->lock);
	while (!s->done)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	/* the outcome does not change once the job is over */
	*out = *o;
	out->rank = malloc(o->nranks * sizeof(*o->rank));
	out->recv = malloc(o->nrecv * sizeof(*o->recv));
	if (!out->rank || !out->recv) {
		pxfer_job_outcome_release(out);
		return -ENOMEM;
	}
	memcpy(out->rank, o->rank, o->nranks * sizeof(*o->rank));
	memcpy(out->recv, o->recv, o->nrecv * sizeof(*o->recv));
	return 0;
}

void pxfer_work_server_free(struct pxfer_work_server *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	if (s->running) {
		if (write(s->wake, &one, sizeof(one)) < 0)
			pxfer_verbose("work service: cannot wake its thread: %s",
				      strerror(errno));
		pthread_join(s->thread, NULL);
	}
	for (int i = 0; s->conns && i < s->maxconns; i++)
		if (s->conns[i])
			conn_free(s, i);
	pxfer_work_jobs_release(s);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake >= 0)
		close(s->wake);
	if (s->secret)
		sodium_memzero(s->secret, s->secret_len);
	free(s->secret);
	free(s->conns);
	free(s->pfd);
	free(s->pfd_conn);
	free(s->rank_conn);
	free(s->rank_seen);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}
