// SPDX-License-Identifier: MIT
/*
 * The tcp transport: one TCP connection per control channel and per data
 * worker. This file makes and ends the connections and carries the
 * control byte stream; chunk.c moves the chunks.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/netaddr.h"
#include "transport/diag.h"
#include "core/sys.h"
#include "transport/tcp/priv.h"
#include "transport/tcp/tcp.h"

static void tune_socket(int fd)
{
	/* control messages are small and latency bound; a vanished peer is
	 * found in about 25 s even when we only wait; data unacknowledged
	 * for 10 s fails the connection: a rail whose address went away
	 * stalls, it does not close */
	pxfer_sock_keepalive(fd, 10, 5, 3, 10000);
}

static int conn_new(int fd, struct pxfer_conn **out)
{
	struct tcp_conn *t = calloc(1, sizeof(*t));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (!t)
		return -ENOMEM;
	t->conn.ops = &pxfer_tcp_ops;
	t->fd = fd;
	if (!getpeername(fd, (struct sockaddr *)&ss, &sl))
		pxfer_addr_format((struct sockaddr *)&ss, t->conn.peer,
			    sizeof(t->conn.peer));
	else
		ss.ss_family = AF_UNSPEC;	/* source "?" */
	pxfer_addr_source((struct sockaddr *)&ss, t->conn.source,
			  sizeof(t->conn.source));
	tune_socket(fd);
	*out = &t->conn;
	return 0;
}

static int tcp_listen(const char *bind_addr, const char *port,
		      struct pxfer_listener **out)
{
	struct addrinfo *res, *ai;
	struct tcp_listener *l;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, one = 1, ret;

	/* with no --bind, listen on IPv6 any (which takes IPv4 too) */
	ret = pxfer_addr_resolve(bind_addr ? bind_addr : "::", port, AF_UNSPEC,
				 1, &res);
	if (ret && !bind_addr)
		ret = pxfer_addr_resolve("0.0.0.0", port, AF_UNSPEC, 1, &res);
	if (ret)
		return ret;
	ret = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 64))
			break;
		ret = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return ret;
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	l->l.ops = &pxfer_tcp_ops;
	l->fd = fd;
	if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
		pxfer_addr_format((struct sockaddr *)&ss, l->l.addr, sizeof(l->l.addr));
	*out = &l->l;
	return 0;
}

static int tcp_listener_fd(struct pxfer_listener *l)
{
	return to_tcpl(l)->fd;
}

static int tcp_accept(struct pxfer_listener *l, struct pxfer_conn **out)
{
	int fd = accept4(to_tcpl(l)->fd, NULL, NULL, SOCK_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = conn_new(fd, out);
	if (ret)
		close(fd);
	return ret;
}

static void tcp_listener_close(struct pxfer_listener *l)
{
	struct tcp_listener *tl = to_tcpl(l);

	close(tl->fd);
	free(tl);
}

static int bind_source(int fd, int family, const char *bind_addr)
{
	struct addrinfo *res;
	int ret = pxfer_addr_resolve(bind_addr, NULL, family, 1, &res);

	if (ret)
		return ret;
	ret = bind(fd, res->ai_addr, res->ai_addrlen) ? -errno : 0;
	freeaddrinfo(res);
	return ret;
}

static int connect_one(const struct addrinfo *ai, const char *bind_addr,
		       int timeout_ms)
{
	struct pollfd p;
	socklen_t sl = sizeof(int);
	int fd, err = 0, ret;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind_addr) {
		ret = bind_source(fd, ai->ai_family, bind_addr);
		if (ret)
			goto out_close;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		ret = -errno;
		goto out_close;
	}
	p.fd = fd;
	p.events = POLLOUT;
	ret = poll(&p, 1, timeout_ms);
	if (ret <= 0) {
		ret = ret ? -errno : -ETIMEDOUT;
		goto out_close;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl);
	if (err) {
		ret = -err;
		goto out_close;
	}
	/* data connections block; the control path passes MSG_DONTWAIT */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;

out_close:
	close(fd);
	return ret;
}

static int tcp_connect(const char *host, const char *port,
		       const char *bind_addr, int timeout_ms, unsigned int slots,
		       struct pxfer_conn **out)
{
	struct addrinfo *res, *ai;
	int fd = -ECONNREFUSED, ret;

	ret = pxfer_addr_resolve(host, port, AF_UNSPEC, 0, &res);
	if (ret)
		return ret;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = connect_one(ai, bind_addr, timeout_ms);
		if (fd >= 0)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return fd;
	ret = conn_new(fd, out);
	if (ret)
		close(fd);
	return ret;
}

static int tcp_conn_fd(struct pxfer_conn *c)
{
	return to_tcp(c)->fd;
}

static short tcp_poll_events(struct pxfer_conn *c, int want_send)
{
	return POLLIN | (want_send ? POLLOUT : 0);
}

static ssize_t tcp_send(struct pxfer_conn *c, const void *buf, size_t len)
{
	ssize_t n;

	do {
		n = send(to_tcp(c)->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static ssize_t tcp_recv(struct pxfer_conn *c, void *buf, size_t cap)
{
	ssize_t n;

	do {
		n = recv(to_tcp(c)->fd, buf, cap, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static void tcp_shutdown(struct pxfer_conn *c)
{
	shutdown(to_tcp(c)->fd, SHUT_RDWR);
}

static void tcp_close(struct pxfer_conn *c)
{
	struct tcp_conn *t = to_tcp(c);

	close(t->fd);
	free(t);
}

static const struct pxfer_transport_diag tcp_diag = {
	.addr_query = tcp_rail_query,
};

const struct pxfer_transport_ops pxfer_tcp_ops = {
	.name = "tcp",
	.wire_id = 0,
	.listen = tcp_listen,
	.listener_fd = tcp_listener_fd,
	.accept = tcp_accept,
	.listener_close = tcp_listener_close,
	.connect = tcp_connect,
	.ring_hdr = 0,
	.pins_memory = 0,
	.conn_fd = tcp_conn_fd,
	.poll_events = tcp_poll_events,
	.send = tcp_send,
	.recv = tcp_recv,
	.ring_register = tcp_ring_register,
	.ring_remote = tcp_ring_remote,
	.send_chunk = tcp_send_chunk,
	.reap_sent = tcp_reap_sent,
	.recv_chunk = tcp_recv_chunk,
	.recv_payload = tcp_recv_payload,
	.rails_local = tcp_rails_local,
	.rail_query = tcp_rail_query,
	.shutdown = tcp_shutdown,
	.close = tcp_close,
	.diag = &tcp_diag,
};
