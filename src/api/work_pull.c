// SPDX-License-Identifier: MIT
/*
 * A rank's side of the work service: one blocking TCP connection to rank
 * 0, authenticated both ways, each call a request and its answer under
 * the client's lock (a rank's threads, one per receiver, share it). Once
 * a message fails, the connection is no longer in step: every later call
 * fails too.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sodium.h>

#include "api/work_wire.h"
#include "core/log.h"

struct pxfer_work_client {
	int fd;
	pthread_mutex_t lock;
	int broken;			/* a negative errno once out of step */
	uint8_t key_out[PXFER_WORK_KEY_LEN], key_in[PXFER_WORK_KEY_LEN];
	uint64_t seq_out, seq_in;
	int ready;			/* the handshake is done: MACs */
};

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_msg(struct pxfer_work_client *c, const struct pxfer_work_msg *m)
{
	uint8_t buf[PXFER_WORK_HDR_LEN + PXFER_WORK_REQ_MAX + PXFER_WORK_MAC_LEN];
	ssize_t n = pxfer_work_msg_encode(buf, PXFER_WORK_HDR_LEN +
					  PXFER_WORK_REQ_MAX, m);

	if (n < 0)
		return (int)n;
	if (c->ready) {
		pxfer_work_frame_mac(c->key_out, 'C', c->seq_out++, buf,
				     (size_t)n, buf + n);
		n += PXFER_WORK_MAC_LEN;
	}
	return write_all(c->fd, buf, (size_t)n);
}

/* the next message from the service, checked and decoded into @m */
static int recv_msg(struct pxfer_work_client *c, struct pxfer_work_msg *m)
{
	uint8_t hdr[PXFER_WORK_HDR_LEN], mac[PXFER_WORK_MAC_LEN], *f;
	size_t tail = c->ready ? PXFER_WORK_MAC_LEN : 0;
	uint16_t type;
	uint32_t len;
	int ret;

	ret = read_all(c->fd, hdr, sizeof(hdr));
	if (ret)
		return ret;
	if (pxfer_work_hdr_decode(hdr, c->ready ? PXFER_WORK_MSG_MAX : 128,
				  &type, &len))
		return -EPROTO;
	f = malloc(PXFER_WORK_HDR_LEN + len + tail);
	if (!f)
		return -ENOMEM;
	memcpy(f, hdr, sizeof(hdr));
	ret = read_all(c->fd, f + PXFER_WORK_HDR_LEN, len + tail);
	if (!ret && c->ready) {
		pxfer_work_frame_mac(c->key_in, 'S', c->seq_in++, f,
				     PXFER_WORK_HDR_LEN + len, mac);
		if (sodium_memcmp(mac, f + PXFER_WORK_HDR_LEN + len,
				  sizeof(mac)))
			ret = -EBADMSG;
	}
	if (!ret)
		ret = pxfer_work_msg_decode(type, f + PXFER_WORK_HDR_LEN, len, m);
	free(f);
	return ret;
}

static int refused(uint32_t code)
{
	switch (code) {
	case EACCES:
	case ERANGE:
	case EEXIST:
		return -(int)code;
	default:
		return -EPROTO;
	}
}

static int handshake(struct pxfer_work_client *c, uint32_t rank,
		     const uint8_t *secret, size_t secret_len,
		     const uint8_t job[16])
{
	struct pxfer_work_msg m, h = { .type = PXFER_WORK_HELLO };
	uint8_t nonce_s[PXFER_WORK_NONCE_LEN], mac[PXFER_WORK_MAC_LEN];
	int ret;

	ret = recv_msg(c, &m);
	if (ret)
		return ret;
	if (m.type != PXFER_WORK_CHALLENGE ||
	    m.u.challenge.magic != PXFER_WORK_MAGIC ||
	    m.u.challenge.version != PXFER_WORK_VERSION)
		return -EPROTO;
	if (memcmp(m.u.challenge.job, job, 16))
		return -EACCES;		/* another job's service */
	memcpy(nonce_s, m.u.challenge.nonce, sizeof(nonce_s));
	h.u.hello.version = PXFER_WORK_VERSION;
	h.u.hello.rank = rank;
	randombytes_buf(h.u.hello.nonce, sizeof(h.u.hello.nonce));
	pxfer_work_hello_mac(secret, secret_len, nonce_s, h.u.hello.nonce, job,
			     rank, h.u.hello.mac);
	ret = send_msg(c, &h);
	if (!ret)
		ret = recv_msg(c, &m);
	if (ret)
		return ret;
	if (m.type == PXFER_WORK_REFUSE)
		return refused(m.u.refuse);
	if (m.type != PXFER_WORK_WELCOME)
		return -EPROTO;
	pxfer_work_welcome_mac(secret, secret_len, nonce_s, h.u.hello.nonce,
			       job, rank, h.u.hello.mac, mac);
	if (sodium_memcmp(mac, m.u.welcome.mac, sizeof(mac)))
		return -EACCES;		/* the service does not know the secret */
	pxfer_work_keys(secret, secret_len, nonce_s, h.u.hello.nonce,
			c->key_out, c->key_in);
	c->ready = 1;
	return 0;
}

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
	}, *res, *a;
	int fd = -1, ret;

	ret = getaddrinfo(host, port, &hints, &res);
	if (ret) {
		pxfer_error("cannot find the work service at '%s' port '%s': %s",
			    host, port, gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	ret = -ECONNREFUSED;
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		pxfer_work_keepalive(fd);
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		ret = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : ret;
}

int pxfer_work_connect(struct pxfer_work_client **cp, const char *host,
		       const char *port, uint32_t rank, const uint8_t *secret,
		       size_t secret_len, const uint8_t job[16])
{
	struct pxfer_work_client *c;
	int ret;

	*cp = NULL;
	if (sodium_init() < 0)
		return -EIO;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->fd = dial(host, port);
	if (c->fd < 0) {
		ret = c->fd;
		goto out_free;
	}
	ret = handshake(c, rank, secret, secret_len, job);
	if (ret)
		goto out_free;
	*cp = c;
	return 0;

out_free:
	pxfer_work_close(c);
	return ret;
}

/* @q out, its answer into @a; 0 or -errno (the client is then broken) */
static int call(struct pxfer_work_client *c, const struct pxfer_work_msg *q,
		struct pxfer_work_msg *a)
{
	int ret = c->broken;

	if (!ret)
		ret = send_msg(c, q);
	if (!ret)
		ret = recv_msg(c, a);
	if (ret && !c->broken)
		c->broken = ret;
	return ret;
}

/* a call whose answer is ACK */
static int call_ack(struct pxfer_work_client *c, const struct pxfer_work_msg *q)
{
	struct pxfer_work_msg a;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = call(c, q, &a);
	if (!ret && a.type != PXFER_WORK_ACK) {
		pxfer_work_msg_release(&a);
		ret = c->broken = -EPROTO;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int pxfer_work_pull(struct pxfer_work_client *c, uint32_t recv,
		    struct pxfer_unit *u)
{
	struct pxfer_work_msg q = { .type = PXFER_WORK_PULL, .u.recv = recv };
	struct pxfer_work_msg a;
	int ret;

	if (recv >= PXFER_WORK_RECV_MAX)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	ret = call(c, &q, &a);
	if (ret)
		goto out_unlock;
	switch (a.type) {
	case PXFER_WORK_UNIT:
		if (a.u.unit.recv != recv)
			break;
		*u = a.u.unit;
		ret = 1;
		goto out_unlock;
	case PXFER_WORK_WAIT:
		ret = 0;
		goto out_unlock;
	case PXFER_WORK_NODATA:
		ret = -ENODATA;
		goto out_unlock;
	default:
		break;
	}
	pxfer_work_msg_release(&a);
	ret = c->broken = -EPROTO;
out_unlock:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int pxfer_work_report(struct pxfer_work_client *c,
		      const struct pxfer_unit_result *r)
{
	struct pxfer_work_msg q = { .type = PXFER_WORK_REPORT, .u.report = *r };

	if (r->status < 0 || r->status > 255 || (uint32_t)r->again > 1 ||
	    (uint32_t)r->lost > 1)
		return -EINVAL;
	return call_ack(c, &q);
}

int pxfer_work_lost(struct pxfer_work_client *c, uint32_t recv)
{
	struct pxfer_work_msg q = { .type = PXFER_WORK_LOST, .u.recv = recv };

	if (recv >= PXFER_WORK_RECV_MAX)
		return -EINVAL;
	return call_ack(c, &q);
}

int pxfer_work_end(struct pxfer_work_client *c, struct pxfer_job_outcome *out)
{
	struct pxfer_work_msg q = { .type = PXFER_WORK_END };
	struct pxfer_work_msg a;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = call(c, &q, &a);
	if (!ret && a.type == PXFER_WORK_OUTCOME) {
		*out = a.u.outcome;
	} else if (!ret) {
		pxfer_work_msg_release(&a);
		ret = c->broken = -EPROTO;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void pxfer_work_close(struct pxfer_work_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_destroy(&c->lock);
	sodium_memzero(c, sizeof(*c));
	free(c);
}
