// SPDX-License-Identifier: MIT
/*
 * relay - a man in the middle on TCP that does not know the secret: it
 * forwards every connection a sender opens to the real receiver, reads
 * the frame headers (which cross in clear) and tampers with one message
 * or chunk, as an attacker on the path could, to check that neither side
 * accepts what it did.
 *
 *	relay [-c CAPTURE] [-n N] [-t TYPE] LISTEN HOST PORT MODE
 *	relay --find-runs CAPTURE FILE...
 *
 * The relay listens on 127.0.0.1 port LISTEN (0: one the kernel picks)
 * and prints the port on the first line of its standard output. Each
 * connection it accepts, it connects to HOST PORT and forwards both ways,
 * a whole frame at a time. The sender makes its data connections to the
 * address it made the control connection to (a DATA_WELCOME carries no
 * address on tcp), so the relay sees them all. MODE says what it does,
 * once, to the N-th (default 1) message or chunk of the kind it names
 * (TYPE: a message type by its name in docs/protocol.md, "FILE_END"):
 *
 *	pass		nothing: forwards every byte unchanged
 *	rewrite		replaces the payload of the N-th chunk with its own
 *			bytes ("FORGED-BY-RELAY" over and over) and fixes up
 *			what no key protects: with --integrity checksum (the
 *			HELLO's flags say so) it writes the XXH3-64 of the new
 *			payload into the chunk's tag
 *	flip		flips one bit in the payload of the N-th chunk
 *	flip-ctl	flips one bit in the N-th sealed control message
 *			from the sender (FILE, FILE_END, FIN, PING)
 *	replay		records the N-th FILE_DONE, or the N-th message of
 *			TYPE (CHUNK, ...), and sends it again after the next
 *			message on its connection in its direction
 *	swap		holds the N-th sealed control message from the
 *			sender and sends it after the one that follows it
 *	drop		drops the N-th CREDIT, or the N-th message of TYPE
 *			(FILE_END, FILE_DONE, ...)
 *	cut		closes both sides of the data connection that carries
 *			the N-th chunk, instead of forwarding the chunk
 *	cut-ctl		closes both sides of the control connection instead
 *			of forwarding the N-th sealed message from the sender
 *	reset		resets every connection open when the N-th chunk
 *			comes (that chunk is not forwarded): both sides of
 *			each get an RST (SO_LINGER {1, 0}, then close), as
 *			from a proxy or a NAT that lost its state; the
 *			connections accepted afterwards are forwarded
 *			untouched, so a sender that reconnects gets through
 *	downgrade	asks, in the sender's HELLO, for the plain checksum
 *			instead of what the sender asked for
 *
 * It says on standard error what it did ("relay: rewrote chunk 1 ...")
 * and runs until it is killed. With -c, every byte it reads from either
 * side, of every connection, is appended to CAPTURE as it arrives: what
 * an eavesdropper on the path sees.
 *
 * --find-runs looks for the plaintext of the FILEs in CAPTURE: it prints
 * each run of 32 or more bytes of a FILE that CAPTURE holds (the first
 * few) and how many it found. Exit status 0 when there is none, 1 when
 * there is one or more, 2 when a file cannot be read.
 *
 * Exit status: 2 on bad usage, 1 when the relay cannot start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/bytes.h"
#include "core/hash.h"
#include "core/proto.h"

#define FRAME_MAX	(PXFER_HDR_LEN + PXFER_CHUNK_DESC_MAX + PXFER_CHUNK_MAX)
#define FORGED		"FORGED-BY-RELAY\n"
#define RUN_MIN		32	/* a run of plaintext worth reporting */
#define RUN_BLOCK	(RUN_MIN / 2)
#define RUNS_SHOWN	5

enum mode {
	M_PASS,
	M_REWRITE,
	M_FLIP,
	M_FLIP_CTL,
	M_REPLAY,
	M_SWAP,
	M_DROP,
	M_CUT,
	M_CUT_CTL,
	M_DOWNGRADE,
	M_RESET,
};

static const char *const mode_name[] = {
	[M_PASS] = "pass",
	[M_REWRITE] = "rewrite",
	[M_FLIP] = "flip",
	[M_FLIP_CTL] = "flip-ctl",
	[M_REPLAY] = "replay",
	[M_SWAP] = "swap",
	[M_DROP] = "drop",
	[M_CUT] = "cut",
	[M_CUT_CTL] = "cut-ctl",
	[M_DOWNGRADE] = "downgrade",
	[M_RESET] = "reset",
};

/* what happens to a frame once it is read */
enum verdict {
	V_FORWARD,
	V_DROP,		/* not forwarded (swap: held for later) */
	V_CUT,		/* the connection is closed, both sides */
	V_RESET,	/* every open connection is reset */
};

/* the whole relay: one mode, one count, shared by every connection */
static struct {
	pthread_mutex_t lock;
	enum mode mode;
	unsigned long n;
	uint16_t type;		/* what drop drops, replay replays; 0: default */
	const char *host, *port;
	int capture;		/* -1: no capture */
	int checksum;		/* the HELLO asked for the plain checksum */
	int acted;		/* the mode has done its one thing */
	unsigned long chunks, ctl_s2r, typed;
	unsigned int conns;
	struct pair *live;	/* the connections open now */
} R = { .lock = PTHREAD_MUTEX_INITIALIZER, .n = 1, .capture = -1 };

/*
 * A connection: the two sockets, nonblocking, so that a direction blocked
 * in a read or a write also waits for @wake, which a reset signals (a
 * socket closed under a thread blocked on it would not be released, so
 * no RST would go out until that thread returned).
 */
struct pair {
	unsigned int id;
	int cfd;		/* the sender's side */
	int sfd;		/* the receiver's side */
	int wake;		/* eventfd: readable once the pair is reset */
	int refs;		/* directions still running */
	int reset;		/* reset: close both sides with an RST */
	struct pair *next;	/* in R.live */
};

/* one direction of a pair */
struct dir {
	struct pair *p;
	int s2r;		/* sender to receiver */
	int from, to;
	uint8_t *buf;
	size_t cap;
	/* a frame to send after the next one (swap, replay) */
	uint8_t *held;
	size_t held_len;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: relay [-c CAPTURE] [-n N] [-t TYPE] LISTEN HOST PORT MODE\n"
		"       relay --find-runs CAPTURE FILE...\n"
		"modes: pass rewrite flip flip-ctl replay swap drop cut cut-ctl downgrade\n"
		"       reset\n");
	exit(2);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("relay: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- bytes in and out --------------------------------------------------- */

/*
 * Wait until @fd, nonblocking, is ready for @events, or @wake (an eventfd,
 * -1: none) is signalled: 0, or -ECONNRESET for the latter
 */
static int await(int fd, short events, int wake)
{
	struct pollfd p[2] = { { .fd = fd, .events = events },
			       { .fd = wake, .events = POLLIN } };

	for (;;) {
		int n = poll(p, wake >= 0 ? 2 : 1, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (p[1].revents)
			return -ECONNRESET;
		return 0;
	}
}

/* 0, 1 at the end of the stream before the first byte, or -errno; @wake
 * as for await() */
static int read_full(int fd, int wake, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			n = await(fd, POLLIN, wake);
			if (n)
				return n;
			continue;
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return got ? -EPIPE : 1;
		got += n;
	}
	return 0;
}

static int write_full(int fd, int wake, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);	/* SIGPIPE is ignored */

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			n = await(fd, POLLOUT, wake);
			if (n)
				return n;
			continue;
		}
		if (n < 0)
			return -errno;
		buf += n;
		len -= n;
	}
	return 0;
}

static void capture(const uint8_t *buf, size_t len)
{
	if (R.capture < 0 || !len)
		return;
	pthread_mutex_lock(&R.lock);
	if (write_full(R.capture, -1, buf, len))
		say("cannot write the capture: %s", strerror(errno));
	pthread_mutex_unlock(&R.lock);
}

/* ---- what the mode does ------------------------------------------------- */

static int is_reset(struct pair *p)
{
	return __atomic_load_n(&p->reset, __ATOMIC_ACQUIRE);
}

/*
 * Reset every open connection: an RST goes out on each side when its
 * last direction closes it. R.live holds a pair until that close, under
 * R.lock, so no socket here is closed yet.
 */
static void reset_all(struct dir *d, uint64_t seq)
{
	struct linger lin = { .l_onoff = 1, .l_linger = 0 };
	uint64_t one = 1;
	unsigned int n = 0;
	struct pair *p;
	char ids[256] = "";
	size_t len = 0;

	pthread_mutex_lock(&R.lock);
	for (p = R.live; p; p = p->next) {
		if (setsockopt(p->cfd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)) ||
		    setsockopt(p->sfd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)))
			say("connection %u: SO_LINGER: %s", p->id, strerror(errno));
		__atomic_store_n(&p->reset, 1, __ATOMIC_RELEASE);
		if (write(p->wake, &one, sizeof(one)) != sizeof(one))
			say("connection %u: cannot wake it: %s", p->id, strerror(errno));
		if (len < sizeof(ids))
			len += snprintf(ids + len, sizeof(ids) - len, "%s%u",
					n ? " " : "", p->id);
		n++;
	}
	pthread_mutex_unlock(&R.lock);
	say("reset %u connection(s) (%s) at chunk %lu (connection %u, seq %llu)",
	    n, ids, R.n, d->p->id, (unsigned long long)seq);
}

/* whether @count, just counted, is the N-th and the mode has not acted */
static int is_nth(unsigned long *count)
{
	int hit;

	pthread_mutex_lock(&R.lock);
	hit = ++*count == R.n && !R.acted;
	if (hit)
		R.acted = 1;
	pthread_mutex_unlock(&R.lock);
	return hit;
}

/* a sealed control message from the sender */
static int ctl_from_sender(uint16_t type)
{
	return type >= PXFER_MSG_FILE && type != PXFER_MSG_CHUNK;
}

/* the payload of a CHUNK frame: its offset in the frame, or 0 */
static size_t chunk_payload(const uint8_t *f, uint32_t blen, uint32_t *plen,
			    uint64_t *seq)
{
	const uint8_t *d = f + PXFER_HDR_LEN;
	size_t dlen;

	if (blen < PXFER_CHUNK_DESC_FIXED)
		return 0;
	dlen = pxfer_chunk_desc_len(pxfer_get_be(d + 2, 2));
	*plen = pxfer_get_be(d + 4, 4);
	*seq = pxfer_get_be(d + 8, 8);
	if (dlen + *plen != blen || !*plen)
		return 0;
	return PXFER_HDR_LEN + dlen;
}

static enum verdict on_chunk(struct dir *d, uint8_t *f, uint32_t blen)
{
	size_t off;
	uint32_t plen, i;
	uint64_t seq;
	uint8_t *tag = f + PXFER_HDR_LEN + PXFER_CHUNK_DESC_FIXED - PXFER_TAG_LEN;

	if (R.mode != M_REWRITE && R.mode != M_FLIP && R.mode != M_CUT &&
	    R.mode != M_RESET)
		return V_FORWARD;
	off = chunk_payload(f, blen, &plen, &seq);
	if (!off || !is_nth(&R.chunks))
		return V_FORWARD;
	switch (R.mode) {
	case M_REWRITE:
		for (i = 0; i < plen; i++)
			f[off + i] = FORGED[i % (sizeof(FORGED) - 1)];
		if (R.checksum) {
			pxfer_put_be(tag, pxfer_hash(f + off, plen), 8);
			memset(tag + 8, 0, PXFER_TAG_LEN - 8);
		}
		say("rewrote chunk %lu (connection %u, seq %llu, %u bytes)%s",
		    R.n, d->p->id, (unsigned long long)seq, plen,
		    R.checksum ? ", its checksum recomputed" :
				 ", its tag left as it was");
		return V_FORWARD;
	case M_FLIP:
		f[off + plen / 2] ^= 0x10;
		say("flipped a bit of chunk %lu (connection %u, seq %llu)",
		    R.n, d->p->id, (unsigned long long)seq);
		return V_FORWARD;
	case M_RESET:
		reset_all(d, seq);
		return V_RESET;
	default:
		say("cut data connection %u at chunk %lu (seq %llu)",
		    d->p->id, R.n, (unsigned long long)seq);
		return V_CUT;
	}
}

static void hold(struct dir *d, const uint8_t *f, size_t len)
{
	d->held = malloc(len);
	if (!d->held) {
		say("out of memory");
		exit(1);
	}
	memcpy(d->held, f, len);
	d->held_len = len;
}

static enum verdict on_ctl_s2r(struct dir *d, uint8_t *f, uint32_t blen)
{
	uint16_t type = pxfer_get_be(f, 2);

	if (R.mode != M_FLIP_CTL && R.mode != M_SWAP && R.mode != M_CUT_CTL)
		return V_FORWARD;
	if (!is_nth(&R.ctl_s2r))
		return V_FORWARD;
	switch (R.mode) {
	case M_FLIP_CTL:
		f[PXFER_HDR_LEN + blen / 2] ^= 0x01;
		say("flipped a bit of %s, the sender's sealed message %lu",
		    pxfer_msg_name(type), R.n);
		return V_FORWARD;
	case M_SWAP:
		hold(d, f, PXFER_HDR_LEN + blen);
		say("holding %s, the sender's sealed message %lu, until the next one",
		    pxfer_msg_name(type), R.n);
		return V_DROP;
	default:
		say("cut the control connection at %s, the sender's sealed message %lu",
		    pxfer_msg_name(type), R.n);
		return V_CUT;
	}
}

/* @flags: the HELLO's, in the frame */
static void on_hello(uint8_t *flags)
{
	uint32_t v = pxfer_get_be(flags, 4);

	if (R.mode == M_DOWNGRADE && is_nth(&R.ctl_s2r)) {
		v = (v & ~PXFER_HELLO_PROT) | PXFER_HELLO_CHECKSUM;
		pxfer_put_be(flags, v, 4);
		say("asked for the plain checksum in the HELLO (flags 0x%x)", v);
	}
	pthread_mutex_lock(&R.lock);
	R.checksum = !!(v & PXFER_HELLO_CHECKSUM);
	pthread_mutex_unlock(&R.lock);
}

static enum verdict judge(struct dir *d, uint8_t *f, uint32_t blen)
{
	uint16_t type = pxfer_get_be(f, 2);

	if (d->s2r && type == PXFER_MSG_HELLO && blen >= 16)
		on_hello(f + PXFER_HDR_LEN + 12);
	if (R.mode == M_DROP && type == R.type && is_nth(&R.typed)) {
		say("dropped %s %lu", pxfer_msg_name(type), R.n);
		return V_DROP;
	}
	if (R.mode == M_REPLAY && type == R.type && is_nth(&R.typed)) {
		hold(d, f, PXFER_HDR_LEN + blen);
		say("recorded %s %lu, to send again after the next message",
		    pxfer_msg_name(type), R.n);
		return V_FORWARD;
	}
	if (d->s2r && type == PXFER_MSG_CHUNK)
		return on_chunk(d, f, blen);
	if (d->s2r && ctl_from_sender(type))
		return on_ctl_s2r(d, f, blen);
	return V_FORWARD;
}

/* ---- one direction of one connection ------------------------------------ */

static int grow(struct dir *d, size_t need)
{
	uint8_t *p;

	if (need <= d->cap)
		return 0;
	p = realloc(d->buf, need);
	if (!p)
		return -ENOMEM;
	d->buf = p;
	d->cap = need;
	return 0;
}

/* the rest of a stream that does not parse as frames, as it comes */
static int copy_raw(struct dir *d)
{
	for (;;) {
		ssize_t n = read(d->from, d->buf, d->cap);
		int ret;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			ret = await(d->from, POLLIN, d->p->wake);
			if (ret)
				return ret;
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : 0;
		capture(d->buf, n);
		ret = write_full(d->to, d->p->wake, d->buf, n);
		if (ret)
			return ret;
	}
}

static void cut(struct pair *p)
{
	shutdown(p->cfd, SHUT_RDWR);
	shutdown(p->sfd, SHUT_RDWR);
}

/* forward frames until the stream ends: 0 at its end, or -errno */
static int pump(struct dir *d)
{
	for (;;) {
		uint8_t *f;
		uint32_t blen;
		uint16_t type;
		int ret, held = d->held_len > 0;

		ret = grow(d, 65536);
		if (ret)
			return ret;
		ret = read_full(d->from, d->p->wake, d->buf, PXFER_HDR_LEN);
		if (ret)
			return ret > 0 ? 0 : ret;
		capture(d->buf, PXFER_HDR_LEN);
		type = pxfer_get_be(d->buf, 2);
		blen = pxfer_get_be(d->buf + 4, 4);
		if (!type || type > PXFER_MSG_TYPE_MAX ||
		    PXFER_HDR_LEN + (size_t)blen > FRAME_MAX) {
			say("connection %u: not a frame (type %u, %u bytes): copied as it is",
			    d->p->id, type, blen);
			ret = write_full(d->to, d->p->wake, d->buf, PXFER_HDR_LEN);
			return ret ? ret : copy_raw(d);
		}
		ret = grow(d, PXFER_HDR_LEN + (size_t)blen);
		if (ret)
			return ret;
		f = d->buf;
		ret = read_full(d->from, d->p->wake, f + PXFER_HDR_LEN, blen);
		if (ret)
			return ret > 0 ? -EPIPE : ret;
		capture(f + PXFER_HDR_LEN, blen);
		/* read before the reset, or found waiting: not forwarded */
		if (is_reset(d->p))
			return -ECONNRESET;
		switch (judge(d, f, blen)) {
		case V_CUT:
			cut(d->p);
			return 0;
		case V_RESET:
			return -ECONNRESET;
		case V_DROP:
			continue;
		case V_FORWARD:
			break;
		}
		ret = write_full(d->to, d->p->wake, f, PXFER_HDR_LEN + blen);
		if (!ret && held) {
			say("sent the held %s", pxfer_msg_name(pxfer_get_be(d->held, 2)));
			ret = write_full(d->to, d->p->wake, d->held, d->held_len);
			free(d->held);
			d->held = NULL;
			d->held_len = 0;
		}
		if (ret)
			return ret;
	}
}

static void *dir_main(void *arg)
{
	struct dir *d = arg;
	struct pair *p = d->p, **pp;
	int ret = pump(d), last;

	if (is_reset(p))
		;	/* no FIN: the close below sends the RST */
	else if (ret)
		/* a reset, or a side that went away: the other side sees
		 * the connection end */
		cut(p);
	else
		shutdown(d->to, SHUT_WR);
	free(d->buf);
	free(d->held);
	free(d);
	pthread_mutex_lock(&R.lock);
	last = --p->refs == 0;
	if (last) {
		for (pp = &R.live; *pp != p; pp = &(*pp)->next)
			;
		*pp = p->next;
	}
	pthread_mutex_unlock(&R.lock);
	if (last) {
		close(p->cfd);
		close(p->sfd);
		close(p->wake);
		free(p);
	}
	return NULL;
}

static int start_dir(struct pair *p, int s2r)
{
	struct dir *d = calloc(1, sizeof(*d));
	pthread_t t;
	int ret;

	if (!d)
		return -ENOMEM;
	d->p = p;
	d->s2r = s2r;
	d->from = s2r ? p->cfd : p->sfd;
	d->to = s2r ? p->sfd : p->cfd;
	ret = -pthread_create(&t, NULL, dir_main, d);
	if (ret) {
		free(d);
		return ret;
	}
	pthread_detach(t);
	return 0;
}

/* ---- connections ---------------------------------------------------------- */

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int connect_receiver(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int fd = -1, ret;

	ret = getaddrinfo(R.host, R.port, &hints, &res);
	if (ret) {
		say("cannot resolve '%s' port '%s': %s", R.host, R.port,
		    gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		ret = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return ret ? ret : -ECONNREFUSED;
	nodelay(fd);
	return fd;
}

static void serve(int cfd)
{
	struct pair *p;
	int sfd = connect_receiver();

	if (sfd < 0) {
		say("cannot connect to %s:%s: %s", R.host, R.port, strerror(-sfd));
		close(cfd);
		return;
	}
	nodelay(cfd);
	p = calloc(1, sizeof(*p));
	if (!p) {
		say("out of memory");
		exit(1);
	}
	p->cfd = cfd;
	p->sfd = sfd;
	p->refs = 2;
	p->wake = eventfd(0, EFD_CLOEXEC);
	if (p->wake < 0 || fcntl(cfd, F_SETFL, O_NONBLOCK) ||
	    fcntl(sfd, F_SETFL, O_NONBLOCK)) {
		say("cannot set up a connection: %s", strerror(errno));
		exit(1);
	}
	pthread_mutex_lock(&R.lock);
	p->id = ++R.conns;
	p->next = R.live;
	R.live = p;
	pthread_mutex_unlock(&R.lock);
	if (start_dir(p, 1) || start_dir(p, 0)) {
		say("cannot start a thread");
		exit(1);
	}
}

static int listen_on(const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd, one = 1;
	char *end;
	long p = strtol(port, &end, 10);

	if (*end || p < 0 || p > 65535)
		usage();
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(p);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen)) {
		say("cannot listen on 127.0.0.1 port %s: %s", port, strerror(errno));
		exit(1);
	}
	printf("%u\n", ntohs(a.sin_port));
	fflush(stdout);
	return fd;
}

static int relay_main(int argc, char **argv)
{
	const char *cap = NULL;
	char *end;
	int opt, lfd;
	unsigned int m;

	while ((opt = getopt(argc, argv, "c:n:t:")) != -1) {
		switch (opt) {
		case 'c':
			cap = optarg;
			break;
		case 'n':
			R.n = strtoul(optarg, &end, 10);
			if (*end || !R.n)
				usage();
			break;
		case 't':
			for (R.type = 1; R.type <= PXFER_MSG_TYPE_MAX; R.type++)
				if (!strcmp(optarg, pxfer_msg_name(R.type)))
					break;
			if (R.type > PXFER_MSG_TYPE_MAX)
				usage();
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 4)
		usage();
	R.host = argv[optind + 1];
	R.port = argv[optind + 2];
	for (m = 0; m < sizeof(mode_name) / sizeof(mode_name[0]); m++)
		if (!strcmp(argv[optind + 3], mode_name[m]))
			break;
	if (m == sizeof(mode_name) / sizeof(mode_name[0]))
		usage();
	R.mode = m;
	if (!R.type)
		R.type = m == M_REPLAY ? PXFER_MSG_FILE_DONE : PXFER_MSG_CREDIT;
	if (cap) {
		R.capture = open(cap, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (R.capture < 0) {
			say("cannot open '%s': %s", cap, strerror(errno));
			return 1;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_on(argv[optind]);
	for (;;) {
		int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (cfd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (cfd < 0) {
			say("accept: %s", strerror(errno));
			return 1;
		}
		serve(cfd);
	}
}

/* ---- --find-runs ---------------------------------------------------------- */

struct blob {
	const char *name;
	uint8_t *p;
	size_t len;
};

/* a block of plaintext: where it is, under the hash of its bytes */
struct block {
	uint64_t h;		/* 0: an empty entry */
	uint32_t file;
	uint64_t off;
};

static int load(const char *name, struct blob *b)
{
	int fd = open(name, O_RDONLY | O_CLOEXEC), ret = 0;
	struct stat st;

	b->name = name;
	b->p = NULL;
	b->len = 0;
	if (fd < 0 || fstat(fd, &st))
		goto out_errno;
	b->len = st.st_size;
	b->p = malloc(b->len ? b->len : 1);
	if (!b->p) {
		ret = -ENOMEM;
		goto out_close;
	}
	ret = read_full(fd, -1, b->p, b->len);
	if (ret > 0)
		ret = -EIO;
	goto out_close;
out_errno:
	ret = -errno;
out_close:
	if (fd >= 0)
		close(fd);
	if (ret)
		fprintf(stderr, "relay: cannot read '%s': %s\n", name, strerror(-ret));
	return ret;
}

static uint64_t block_hash(const uint8_t *p)
{
	uint64_t a, b, h;

	memcpy(&a, p, 8);
	memcpy(&b, p + 8, 8);
	h = (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full);
	h ^= h >> 29;
	return h | 1;		/* never 0, the empty entry */
}

/* how many bytes before @a and @b (at most @amax, @bmax) are equal */
static size_t match_back(const uint8_t *a, size_t amax, const uint8_t *b,
			 size_t bmax)
{
	size_t n = 0;

	while (n < amax && n < bmax && a[-1 - (long)n] == b[-1 - (long)n])
		n++;
	return n;
}

static size_t match_fwd(const uint8_t *a, size_t amax, const uint8_t *b,
			size_t bmax)
{
	size_t n = 0;

	while (n < amax && n < bmax && a[n] == b[n])
		n++;
	return n;
}

/*
 * Every run of RUN_MIN bytes of a file holds a block of RUN_BLOCK bytes
 * that starts at a multiple of RUN_BLOCK in the file: so the files'
 * aligned blocks go into a table, and each position of the capture is
 * looked up in it, then the match is measured both ways.
 */
static int find_runs(int argc, char **argv)
{
	struct blob cap, *files;
	struct block *tab;
	size_t nblocks = 0, mask = 1, pos, runs = 0;
	int nfiles = argc - 2, i;

	if (nfiles < 1)
		usage();
	files = calloc(nfiles, sizeof(*files));
	if (!files || load(argv[1], &cap))
		return 2;
	for (i = 0; i < nfiles; i++) {
		if (load(argv[i + 2], &files[i]))
			return 2;
		nblocks += files[i].len / RUN_BLOCK;
	}
	while (mask < 2 * nblocks)
		mask <<= 1;
	tab = calloc(mask, sizeof(*tab));
	if (!tab)
		return 2;
	mask--;
	for (i = 0; i < nfiles; i++) {
		uint64_t off;

		for (off = 0; off + RUN_BLOCK <= files[i].len; off += RUN_BLOCK) {
			uint64_t h = block_hash(files[i].p + off);
			size_t k = h & mask;

			while (tab[k].h)
				k = (k + 1) & mask;
			tab[k] = (struct block){ h, i, off };
		}
	}
	for (pos = 0; pos + RUN_BLOCK <= cap.len; pos++) {
		uint64_t h = block_hash(cap.p + pos);
		size_t k = h & mask, best = 0, end = 0;

		for (; tab[k].h; k = (k + 1) & mask) {
			const struct blob *f = &files[tab[k].file];
			const uint8_t *fp = f->p + tab[k].off, *cp = cap.p + pos;
			size_t back, fwd;

			if (tab[k].h != h)
				continue;
			back = match_back(cp, pos, fp, tab[k].off);
			fwd = match_fwd(cp, cap.len - pos, fp, f->len - tab[k].off);
			/* a block whose hash only collides is no match */
			if (fwd < RUN_BLOCK || back + fwd < RUN_MIN || back + fwd <= best)
				continue;
			best = back + fwd;
			end = pos + fwd;
			if (runs < RUNS_SHOWN)
				printf("'%s' bytes %llu..%llu at byte %zu of the capture\n",
				       f->name, (unsigned long long)(tab[k].off - back),
				       (unsigned long long)(tab[k].off + fwd - 1),
				       pos - back);
		}
		if (best) {
			runs++;
			/* the rest of this run holds no new one */
			pos = end - RUN_BLOCK;
		}
	}
	printf("%zu run(s) of %d or more bytes of plaintext in '%s' (%zu bytes)\n",
	       runs, RUN_MIN, cap.name, cap.len);
	for (i = 0; i < nfiles; i++)
		free(files[i].p);
	free(files);
	free(tab);
	free(cap.p);
	return runs ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--find-runs"))
		return find_runs(argc - 1, argv + 1);
	return relay_main(argc, argv);
}
