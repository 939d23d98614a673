// SPDX-License-Identifier: MIT
/*
 * The tcp transport's data path. A chunk travels as a CHUNK frame
 * (header, descriptor, payload); the receiver reads the descriptor, lets
 * the engine check it, then reads the payload straight into the granted
 * ring slot.
 */
#include <errno.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "transport/tcp/priv.h"

int tcp_ring_register(struct pxfer_conn *c, struct pxfer_ring *r,
		      uint8_t *blob, uint16_t *blob_len)
{
	if (blob_len)
		*blob_len = 0;
	return 0;
}

int tcp_ring_remote(struct pxfer_conn *c, const uint8_t *blob,
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

int tcp_send_chunk(struct pxfer_conn *c, const struct pxfer_chunk *ch,
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

int tcp_reap_sent(struct pxfer_conn *c, uint16_t *slots,
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

int tcp_recv_chunk(struct pxfer_conn *c, const struct pxfer_ring *r,
		   struct pxfer_chunk *ch)
{
	struct tcp_conn *t = to_tcp(c);
	uint8_t buf[PXFER_HDR_LEN + PXFER_CHUNK_DESC_MAX];
	struct pxfer_hdr h;
	size_t have, need;
	ssize_t n;
	int ret;

	n = recv(t->fd, buf, PXFER_HDR_LEN + PXFER_CHUNK_DESC_FIXED, MSG_DONTWAIT);
	if (n < 0)
		return errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	have = n;
	if (have < PXFER_HDR_LEN + PXFER_CHUNK_DESC_FIXED) {
		ret = read_full(t->fd, buf + have, PXFER_HDR_LEN + PXFER_CHUNK_DESC_FIXED - have);
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
	ret = read_full(t->fd, buf + PXFER_HDR_LEN + PXFER_CHUNK_DESC_FIXED, need - PXFER_CHUNK_DESC_FIXED);
	if (ret)
		return ret;
	n = pxfer_chunk_decode(buf + PXFER_HDR_LEN, need, ch);
	if (n < 0)
		return n == -EAGAIN ? -EPROTO : n;
	if (h.len != need + ch->len || ch->slot >= r->nslots ||
	    ch->len > r->slot_size)
		return -EPROTO;
	return 1;
}

int tcp_recv_payload(struct pxfer_conn *c, const struct pxfer_ring *r,
		     const struct pxfer_chunk *ch)
{
	return read_full(to_tcp(c)->fd, pxfer_ring_slot(r, ch->slot), ch->len);
}
