/* SPDX-License-Identifier: MIT */
/*
 * A transport over one end of a socketpair, for unit tests of what runs
 * on a connection (the control channel, sealed or not): non-blocking
 * send and recv, -EAGAIN when the socket would block.
 */
#ifndef PXFER_TEST_SOCKCONN_H
#define PXFER_TEST_SOCKCONN_H

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "transport/transport.h"

struct sock_conn {
	struct pxfer_conn conn;
	int fd;
};

static inline int sock_fd(struct pxfer_conn *c)
{
	return ((struct sock_conn *)c)->fd;
}

static inline short sock_poll_events(struct pxfer_conn *c, int want_send)
{
	return POLLIN | (want_send ? POLLOUT : 0);
}

static inline ssize_t sock_send(struct pxfer_conn *c, const void *buf,
				size_t len)
{
	ssize_t n = send(sock_fd(c), buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

	return n < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : n;
}

static inline ssize_t sock_recv(struct pxfer_conn *c, void *buf, size_t cap)
{
	ssize_t n = recv(sock_fd(c), buf, cap, MSG_DONTWAIT);

	return n < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : n;
}

static const struct pxfer_transport_ops sock_ops __attribute__((unused)) = {
	.name = "socketpair",
	.conn_fd = sock_fd,
	.poll_events = sock_poll_events,
	.send = sock_send,
	.recv = sock_recv,
};

#endif
