// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>

#include "core/sys.h"
#include "transport/transport.h"

static int wait_fd(struct pxfer_conn *c, short ev, int64_t deadline)
{
	struct pollfd p = { .fd = c->ops->conn_fd(c),
			    .events = c->ops->poll_events(c, ev == POLLOUT) };
	int64_t left = deadline - pxfer_now_ms();
	int ret;

	if (left <= 0)
		return -ETIMEDOUT;
	ret = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
	if (ret < 0)
		return errno == EINTR ? 0 : -errno;
	return ret ? 0 : -ETIMEDOUT;
}

int pxfer_conn_send_all(struct pxfer_conn *c, const void *buf, size_t len,
			int timeout_ms)
{
	int64_t deadline = pxfer_now_ms() + timeout_ms;
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = c->ops->send(c, p, len);

		if (n == -EAGAIN) {
			int ret = wait_fd(c, POLLOUT, deadline);

			if (ret)
				return ret;
			continue;
		}
		if (n < 0)
			return n;
		p += n;
		len -= n;
	}
	return 0;
}

int pxfer_conn_recv_exact(struct pxfer_conn *c, void *buf, size_t len,
			  int timeout_ms)
{
	int64_t deadline = pxfer_now_ms() + timeout_ms;
	uint8_t *p = buf;

	while (len) {
		ssize_t n = c->ops->recv(c, p, len);

		if (n == -EAGAIN) {
			int ret = wait_fd(c, POLLIN, deadline);

			if (ret)
				return ret;
			continue;
		}
		if (n < 0)
			return n;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

int pxfer_conn_send_msg(struct pxfer_conn *c, const struct pxfer_msg *m,
			int timeout_ms)
{
	uint8_t buf[PXFER_HDR_LEN + 512];
	uint8_t *big = NULL, *p = buf;
	ssize_t n;
	int ret;

	n = pxfer_msg_encode(buf, sizeof(buf), m);
	if (n == -EMSGSIZE) {
		big = malloc(PXFER_HDR_LEN + PXFER_MSG_MAX);
		if (!big)
			return -ENOMEM;
		p = big;
		n = pxfer_msg_encode(big, PXFER_HDR_LEN + PXFER_MSG_MAX, m);
	}
	ret = n < 0 ? (int)n : pxfer_conn_send_all(c, p, n, timeout_ms);
	free(big);
	return ret;
}

int pxfer_conn_recv_msg(struct pxfer_conn *c, struct pxfer_msg *m,
			int timeout_ms)
{
	uint8_t hdr[PXFER_HDR_LEN];
	struct pxfer_hdr h;
	uint8_t *body;
	int ret;

	ret = pxfer_conn_recv_exact(c, hdr, sizeof(hdr), timeout_ms);
	if (ret)
		return ret;
	ret = pxfer_hdr_decode(hdr, sizeof(hdr), &h);
	if (ret)
		return ret;
	if (h.type == PXFER_MSG_CHUNK || h.len > PXFER_MSG_MAX)
		return -EPROTO;
	body = malloc(h.len ? h.len : 1);
	if (!body)
		return -ENOMEM;
	ret = pxfer_conn_recv_exact(c, body, h.len, timeout_ms);
	if (!ret)
		ret = pxfer_msg_decode(h.type, body, h.len, m);
	free(body);
	return ret;
}
