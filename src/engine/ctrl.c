// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/sys.h"
#include "engine/ctrl.h"

#define CTRL_FRAME_MAX (PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN)
#define CTRL_IN_CAP (4 * CTRL_FRAME_MAX)
#define CTRL_OUT_MIN 65536
/*
 * While reading is paused, a transport that announces room to send and
 * bytes to read with one event (rdma) would wake the coordinator at once
 * and again: it tries to send this often instead.
 */
#define CTRL_PAUSE_RETRY_MS 10

int pxfer_ctrl_init(struct pxfer_ctrl *c, struct pxfer_conn *conn)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->conn = conn;
	c->in_cap = CTRL_IN_CAP;
	c->in = malloc(c->in_cap);
	c->out_cap = CTRL_OUT_MIN;
	c->out = malloc(c->out_cap);
	if (!c->in || !c->out) {
		ret = -ENOMEM;
		goto out_free;
	}
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wake_fd < 0) {
		ret = -errno;
		goto out_free;
	}
	ret = pthread_mutex_init(&c->lock, NULL);
	if (ret) {
		ret = -ret;
		goto out_close;
	}
	c->owner = pthread_self();
	c->last_tx = c->last_rx = pxfer_now();
	return 0;

out_close:
	close(c->wake_fd);
out_free:
	free(c->in);
	free(c->out);
	return ret;
}

int pxfer_ctrl_seal(struct pxfer_ctrl *c, int cipher, const uint8_t *tx_key,
		    const uint8_t *rx_key)
{
	int ret = pxfer_aead_init(&c->tx, cipher, tx_key, 1);

	if (!ret)
		ret = pxfer_aead_init(&c->rx, cipher, rx_key, 0);
	if (ret) {
		pxfer_aead_release(&c->tx);
		return ret;
	}
	c->tx_seq = c->rx_seq = 0;
	c->sealed = 1;
	return 0;
}

void pxfer_ctrl_release(struct pxfer_ctrl *c)
{
	if (!c->in)
		return;
	pxfer_aead_release(&c->tx);
	pxfer_aead_release(&c->rx);
	c->sealed = 0;
	pthread_mutex_destroy(&c->lock);
	close(c->wake_fd);
	free(c->in);
	free(c->out);
	c->in = c->out = NULL;
}

static int out_reserve(struct pxfer_ctrl *c, size_t need)
{
	size_t cap = c->out_cap;
	uint8_t *p;

	if (c->out_len + need <= cap)
		return 0;
	/* what was sent is dead space: reclaim it before growing */
	if (c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
		if (c->out_len + need <= cap)
			return 0;
	}
	while (c->out_len + need > cap)
		cap *= 2;
	p = realloc(c->out, cap);
	if (!p)
		return -ENOMEM;
	c->out = p;
	c->out_cap = cap;
	return 0;
}

int pxfer_ctrl_queue(struct pxfer_ctrl *c, const struct pxfer_msg *m)
{
	uint64_t one = 1;
	ssize_t n;
	int ret, was_empty;

	pthread_mutex_lock(&c->lock);
	ret = out_reserve(c, CTRL_FRAME_MAX);
	if (ret)
		goto out_unlock;
	n = pxfer_msg_encode(c->out + c->out_len, c->out_cap - c->out_len, m);
	if (n < 0) {
		ret = n;
		goto out_unlock;
	}
	if (c->sealed) {
		uint8_t *f = c->out + c->out_len, nonce[PXFER_AEAD_NONCE_LEN];

		pxfer_hdr_encode(f, m->type, n - PXFER_HDR_LEN + PXFER_TAG_LEN);
		pxfer_nonce_make(nonce, 0, c->tx_seq);
		ret = pxfer_aead_seal(&c->tx, nonce, f, PXFER_HDR_LEN, NULL, 0,
				      f + PXFER_HDR_LEN, n - PXFER_HDR_LEN,
				      f + n);
		if (ret)
			goto out_unlock;
		c->tx_seq++;
		n += PXFER_TAG_LEN;
	}
	was_empty = c->out_len == c->out_off;
	c->out_len += n;
	if (was_empty && !pthread_equal(c->owner, pthread_self()) &&
	    write(c->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is already non-zero: the wake-up is pending */
	}
out_unlock:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int pxfer_ctrl_flush(struct pxfer_ctrl *c)
{
	ssize_t n = 0;

	pthread_mutex_lock(&c->lock);
	while (c->out_off < c->out_len) {
		n = c->conn->ops->send(c->conn, c->out + c->out_off,
				       c->out_len - c->out_off);
		if (n <= 0)
			break;
		c->out_off += n;
		c->last_tx = pxfer_now();
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	pthread_mutex_unlock(&c->lock);
	return n < 0 && n != -EAGAIN ? (int)n : 0;
}

size_t pxfer_ctrl_pending(struct pxfer_ctrl *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->out_len - c->out_off;
	pthread_mutex_unlock(&c->lock);
	return n;
}

int pxfer_ctrl_paused(struct pxfer_ctrl *c)
{
	return c->read_pause && pxfer_ctrl_pending(c) > c->read_pause;
}

void pxfer_ctrl_discard(struct pxfer_ctrl *c)
{
	c->in_off = c->in_len = 0;
}

int pxfer_ctrl_fill(struct pxfer_ctrl *c)
{
	ssize_t n;

	if (pxfer_ctrl_paused(c))
		return 0;
	if (c->in_off) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	while (c->in_len < c->in_cap) {
		n = c->conn->ops->recv(c->conn, c->in + c->in_len,
				       c->in_cap - c->in_len);
		if (n == -EAGAIN)
			return 0;
		if (n < 0)
			return n;
		if (n == 0) {
			c->eof = 1;
			return -EPIPE;
		}
		c->in_len += n;
		c->last_rx = pxfer_now();
	}
	return 0;
}

int pxfer_ctrl_keepalive(struct pxfer_ctrl *c)
{
	struct pxfer_msg ping = { .type = PXFER_MSG_PING };
	double now = pxfer_now();

	ping.u.ping.checked = c->ping_checked;

	if (pxfer_ctrl_paused(c)) {
		/* not reading is our choice, not the peer's silence; a peer
		 * that takes nothing of what waits for it is stuck */
		c->last_rx = now;
		return now - c->last_tx > PXFER_IDLE_SECS ? -ENOBUFS : 0;
	}
	if (now - c->last_rx > PXFER_IDLE_SECS)
		return -ETIMEDOUT;
	if (now - c->last_tx > PXFER_PING_SECS && !pxfer_ctrl_pending(c)) {
		c->last_tx = now;	/* one PING per quiet period */
		return pxfer_ctrl_queue(c, &ping);
	}
	return 0;
}

int pxfer_ctrl_next(struct pxfer_ctrl *c, struct pxfer_msg *m)
{
	const uint8_t *p = c->in + c->in_off;
	size_t avail = c->in_len - c->in_off;
	struct pxfer_hdr h;
	int ret;

	uint8_t *body = c->in + c->in_off + PXFER_HDR_LEN;
	uint8_t nonce[PXFER_AEAD_NONCE_LEN];
	uint32_t blen;

	if (pxfer_ctrl_paused(c))
		return 0;
	ret = c->sealed ? pxfer_hdr_decode_sealed(p, avail, &h) :
			  pxfer_hdr_decode(p, avail, &h);
	if (ret == -EAGAIN)
		return 0;
	if (ret)
		return ret;
	blen = c->sealed ? h.len - PXFER_TAG_LEN : h.len;
	if (h.type == PXFER_MSG_CHUNK || blen > PXFER_MSG_MAX)
		return -EPROTO;
	if (avail < PXFER_HDR_LEN + h.len)
		return 0;
	if (c->sealed) {
		/* opened in place: nothing of it is read before the tag is
		 * checked, and it is consumed either way */
		pxfer_nonce_make(nonce, 0, c->rx_seq);
		if (pxfer_aead_open(&c->rx, nonce, p, PXFER_HDR_LEN, NULL, 0,
				    body, blen, body + blen))
			return -EBADMSG;
		c->rx_seq++;
	}
	ret = pxfer_msg_decode(h.type, body, blen, m);
	c->in_off += PXFER_HDR_LEN + h.len;
	return ret ? ret : 1;
}

void pxfer_ctrl_drain_wake(struct pxfer_ctrl *c)
{
	uint64_t v;

	if (read(c->wake_fd, &v, sizeof(v)) < 0) {
		/* nothing pending */
	}
}

/* whether pxfer_ctrl_next has something to say without reading more */
static int msg_buffered(const struct pxfer_ctrl *c)
{
	size_t avail = c->in_len - c->in_off;
	struct pxfer_hdr h;
	int ret = c->sealed ? pxfer_hdr_decode_sealed(c->in + c->in_off, avail, &h) :
			      pxfer_hdr_decode(c->in + c->in_off, avail, &h);

	if (ret == -EAGAIN)
		return 0;
	return ret || avail >= PXFER_HDR_LEN + h.len;
}

int pxfer_ctrl_wait(struct pxfer_ctrl *c, int stop_fd, int timeout_ms)
{
	const struct pxfer_transport_ops *t = c->conn->ops;
	struct pollfd p[3];
	int ret = pxfer_ctrl_flush(c);
	size_t pending;

	if (ret)
		return ret;
	pending = pxfer_ctrl_pending(c);
	p[0].fd = t->conn_fd(c->conn);
	p[0].events = t->poll_events(c->conn, pending > 0);
	if (c->read_pause && pending > c->read_pause) {
		p[0].events &= ~POLLIN;
		if (!p[0].events && timeout_ms > CTRL_PAUSE_RETRY_MS)
			timeout_ms = CTRL_PAUSE_RETRY_MS;
	} else if (msg_buffered(c)) {
		/* left by a pause that has ended: no need to wait for more */
		timeout_ms = 0;
	}
	p[1].fd = c->wake_fd;
	p[1].events = POLLIN;
	p[2].fd = stop_fd;
	p[2].events = POLLIN;
	/* EINTR: a signal to the process, for its handler to deal with */
	if (poll(p, 3, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	pxfer_ctrl_drain_wake(c);
	return 0;
}
