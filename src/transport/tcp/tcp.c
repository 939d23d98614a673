// SPDX-License-Identifier: MIT
/*
 * The tcp transport: one TCP connection per control channel and per data
 * worker. A chunk travels as a CHUNK frame (header, descriptor, payload);
 * the receiver reads the payload straight into the granted ring slot.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/netaddr.h"
#include "transport/tcp/tcp.h"

#define TCP_SENT_MAX 64

struct tcp_conn {
	struct pxfer_conn conn;
	int fd;
	/* slots whose send_chunk returned: tcp has copied them already */
	uint16_t sent[TCP_SENT_MAX];
	unsigned int nsent;
};

struct tcp_listener {
	struct pxfer_listener l;
	int fd;
};

#define to_tcp(c) ((struct tcp_conn *)(c))
#define to_tcpl(x) ((struct tcp_listener *)(x))

static void tune_socket(int fd)
{
	int one = 1, idle = 10, intvl = 5, cnt = 3;

	/* control messages are small and latency bound */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* find a vanished peer in about 25 s even when we only wait */
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
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
	close(to_tcpl(l)->fd);
	free(l);
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

static int tcp_ring_register(struct pxfer_conn *c, struct pxfer_ring *r,
			     uint8_t *blob, uint16_t *blob_len)
{
	if (blob_len)
		*blob_len = 0;
	return 0;
}

static int tcp_ring_remote(struct pxfer_conn *c, const uint8_t *blob,
			   uint16_t blob_len)
{
	return blob_len ? -EPROTO : 0;
}

/* write the whole iovec, blocking; the peer reads at its own pace */
static int writev_all(int fd, struct iovec *iov, int n)
{
	struct msghdr mh = { 0 };

	while (n) {
		ssize_t w;

		mh.msg_iov = iov;
		mh.msg_iovlen = n;
		w = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		while (n && (size_t)w >= iov->iov_len) {
			w -= iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= w;
		}
	}
	return 0;
}

/* the CHUNK frame's header and descriptor, into @head; its length or -errno */
static ssize_t chunk_head(uint8_t *head, size_t cap, const struct pxfer_chunk *ch)
{
	ssize_t dlen = pxfer_chunk_encode(head + PXFER_HDR_LEN,
					  cap - PXFER_HDR_LEN, ch);

	if (dlen < 0)
		return dlen;
	pxfer_hdr_encode(head, PXFER_MSG_CHUNK, dlen + ch->len);
	return PXFER_HDR_LEN + dlen;
}

static int tcp_send_chunk(struct pxfer_conn *c, const struct pxfer_chunk *ch,
			  const void *payload)
{
	struct tcp_conn *t = to_tcp(c);
	uint8_t head[PXFER_HDR_LEN + PXFER_CHUNK_DESC_MAX];
	struct iovec iov[2];
	ssize_t hlen;
	int ret;

	if (t->nsent == TCP_SENT_MAX)
		return -ENOBUFS;	/* reap_sent was not called */
	hlen = chunk_head(head, sizeof(head), ch);
	if (hlen < 0)
		return hlen;
	iov[0].iov_base = head;
	iov[0].iov_len = hlen;
	iov[1].iov_base = (void *)payload;
	iov[1].iov_len = ch->len;
	ret = writev_all(t->fd, iov, 2);
	if (ret)
		return ret;
	t->sent[t->nsent++] = ch->slot;
	return 0;
}

/* the rest of the payload through @scratch, where sendfile cannot go */
static int send_by_copy(int sock, int fd, off_t off, size_t left,
			uint8_t *scratch)
{
	struct iovec iov;
	ssize_t n;
	int ret;

	while (left) {
		n = pread(fd, scratch, left, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		iov.iov_base = scratch;
		iov.iov_len = n;
		ret = writev_all(sock, &iov, 1);
		if (ret)
			return ret;
		off += n;
		left -= n;
	}
	return 0;
}

/*
 * The payload goes from the file's page cache to the socket by sendfile:
 * no copy through the ring on this side (over loopback, none at all until
 * the receiver's recv).
 */
static int tcp_send_chunk_fd(struct pxfer_conn *c, const struct pxfer_chunk *ch,
			     int fd, void *scratch)
{
	struct tcp_conn *t = to_tcp(c);
	uint8_t head[PXFER_HDR_LEN + PXFER_CHUNK_DESC_MAX];
	off_t off;
	size_t left = ch->len;
	ssize_t hlen, n;
	uint8_t *p;

	if (t->nsent == TCP_SENT_MAX)
		return -ENOBUFS;
	if (ch->nseg != 1 || ch->seg[0].len != ch->len)
		return -EINVAL;
	hlen = chunk_head(head, sizeof(head), ch);
	if (hlen < 0)
		return hlen;
	for (p = head; hlen; p += n, hlen -= n) {
		n = send(t->fd, p, hlen, MSG_NOSIGNAL | MSG_MORE);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n < 0)
			return -errno;
	}
	off = ch->seg[0].offset;
	while (left) {
		n = sendfile(t->fd, fd, &off, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EINVAL || errno == ENOSYS))
			break;		/* this file system cannot splice */
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;	/* the file shrank */
		left -= n;
	}
	if (left) {
		int ret = send_by_copy(t->fd, fd, off, left, scratch);

		if (ret)
			return ret;
	}
	t->sent[t->nsent++] = ch->slot;
	return 0;
}

static int tcp_reap_sent(struct pxfer_conn *c, uint16_t *slots,
			 unsigned int max)
{
	struct tcp_conn *t = to_tcp(c);
	unsigned int n = t->nsent < max ? t->nsent : max;

	memcpy(slots, t->sent, n * sizeof(*slots));
	memmove(t->sent, t->sent + n, (t->nsent - n) * sizeof(*slots));
	t->nsent -= n;
	return n;
}

static int read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, MSG_WAITALL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;	/* closed inside a frame */
		p += n;
		len -= n;
	}
	return 0;
}

static int tcp_recv_chunk(struct pxfer_conn *c, const struct pxfer_ring *r,
			  struct pxfer_chunk *ch, pxfer_chunk_check_fn check,
			  void *arg)
{
	struct tcp_conn *t = to_tcp(c);
	uint8_t buf[PXFER_HDR_LEN + PXFER_CHUNK_DESC_MAX];
	struct pxfer_hdr h;
	size_t have, need;
	ssize_t n;
	int ret;

	n = recv(t->fd, buf, PXFER_HDR_LEN + 24, MSG_DONTWAIT);
	if (n < 0)
		return errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	have = n;
	if (have < PXFER_HDR_LEN + 24) {
		ret = read_full(t->fd, buf + have, PXFER_HDR_LEN + 24 - have);
		if (ret)
			return ret;
	}
	ret = pxfer_hdr_decode(buf, PXFER_HDR_LEN, &h);
	if (ret)
		return ret;
	if (h.type != PXFER_MSG_CHUNK)
		return -EPROTO;
	/* nseg sits at offset 2 of the descriptor */
	need = pxfer_chunk_desc_len(((unsigned)buf[PXFER_HDR_LEN + 2] << 8) |
				    buf[PXFER_HDR_LEN + 3]);
	if (need > PXFER_CHUNK_DESC_MAX || need > h.len)
		return -EPROTO;
	ret = read_full(t->fd, buf + PXFER_HDR_LEN + 24, need - 24);
	if (ret)
		return ret;
	n = pxfer_chunk_decode(buf + PXFER_HDR_LEN, need, ch);
	if (n < 0)
		return n == -EAGAIN ? -EPROTO : n;
	if (h.len != need + ch->len || ch->slot >= r->nslots ||
	    ch->len > r->slot_size)
		return -EPROTO;
	ret = check(arg, ch);
	if (ret)
		return ret;
	ret = read_full(t->fd, pxfer_ring_slot(r, ch->slot), ch->len);
	return ret ? ret : 1;
}

static void tcp_shutdown(struct pxfer_conn *c)
{
	shutdown(to_tcp(c)->fd, SHUT_RDWR);
}

static void tcp_close(struct pxfer_conn *c)
{
	close(to_tcp(c)->fd);
	free(c);
}

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
	.send_chunk_fd = tcp_send_chunk_fd,
	.reap_sent = tcp_reap_sent,
	.recv_chunk = tcp_recv_chunk,
	.shutdown = tcp_shutdown,
	.close = tcp_close,
};
