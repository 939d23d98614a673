// SPDX-License-Identifier: MIT
/*
 * flooder - an unauthenticated host leaning on a receiver's front door.
 *
 *	flooder flood [-b SRC] [-r RATE] [-t SECS] [-m OPEN] [-d PERCENT] HOST PORT
 *	flooder guess [-b SRC] [-n COUNT] [-t SECS] [-c CONNS] HOST PORT
 *
 * flood opens RATE connections a second (default 300) from address SRC
 * for SECS seconds (default 30), keeps at most OPEN of them (default 800;
 * then it closes its oldest) and closes each one the receiver closes.
 * Most say nothing; PERCENT of them (default 20) send a HELLO one byte a
 * second, which takes longer than the receiver waits. Prints "opened N,
 * closed by the receiver C, failed F" at the end, or when terminated.
 *
 * guess makes COUNT guesses (default 1000), for SECS seconds at most
 * (default 10), on CONNS connections at once (default 1), each a new
 * connection whose HELLO is made with a wrong secret, and waits for the
 * answer as long as the run lasts. Prints "guesses N: checked C, other
 * O": REFUSE with EACCES (the receiver checked the guess), anything else
 * (no answer before the end, the connection closed).
 *
 * Exit status: 0 when it ran, 1 when it could not (no such address to
 * send from: the last line says so), 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pxfer/pxfer.h"
#include "core/auth.h"
#include "core/proto.h"
#include "transport/tcp/tcp.h"

#define OPEN_MAX	4000
#define TIMEOUT_MS	5000

struct flood_conn {
	int fd;
	int dribble;		/* sends its HELLO a byte at a time */
	size_t sent;		/* of it */
	double born, next;	/* next byte due */
};

static volatile sig_atomic_t stop;	/* SIGTERM: print, then exit */

static void on_term(int sig)
{
	stop = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: flooder flood [-b SRC] [-r RATE] [-t SECS] [-m OPEN] [-d PERCENT] HOST PORT\n"
		"       flooder guess [-b SRC] [-n COUNT] [-t SECS] [-c CONNS] HOST PORT\n");
	exit(2);
}

/* a HELLO made with a secret nobody uses */
static void wrong_hello(const uint8_t *nonce_r, struct pxfer_msg *m)
{
	struct pxfer_secret wrong = { .len = 24 };

	memset(wrong.key, 'w', wrong.len);
	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_HELLO;
	m->u.hello.magic = PXFER_MAGIC;
	m->u.hello.version = PXFER_PROTO_VERSION;
	m->u.hello.workers = 1;
	m->u.hello.chunk_size = 1 << 20;
	pxfer_auth_nonce(m->u.hello.nonce);
	pxfer_auth_hello_mac(&wrong, nonce_r, &m->u.hello, m->u.hello.mac);
}

/* ---- flood ------------------------------------------------------------ */

struct flood {
	struct sockaddr_in to, from;
	struct flood_conn c[OPEN_MAX];
	unsigned int n, max;
	uint8_t hello[PXFER_HDR_LEN + PXFER_MSG_MAX];
	size_t hello_len;
	unsigned long opened, closed, failed;
};

static void flood_remove(struct flood *f, unsigned int i)
{
	close(f->c[i].fd);
	f->c[i] = f->c[--f->n];
}

static void flood_open(struct flood *f, int dribble, double t)
{
	int one = 1, fd;
	unsigned int oldest = 0;

	if (f->n == f->max) {
		for (unsigned int i = 1; i < f->n; i++)
			if (f->c[i].born < f->c[oldest].born)
				oldest = i;
		flood_remove(f, oldest);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		f->failed++;
		return;
	}
	/* the port is picked at connect, so ports in TIME_WAIT are reused */
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&f->from, sizeof(f->from)) ||
	    (connect(fd, (struct sockaddr *)&f->to, sizeof(f->to)) &&
	     errno != EINPROGRESS)) {
		close(fd);
		f->failed++;
		return;
	}
	f->c[f->n++] = (struct flood_conn){ .fd = fd, .dribble = dribble,
					    .born = t, .next = t + 1 };
	f->opened++;
}

/* read what came; 1 if the receiver closed the connection */
static int flood_read(struct flood_conn *c)
{
	char buf[4096];
	ssize_t n = read(c->fd, buf, sizeof(buf));

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

static void flood_dribble(struct flood *f, struct flood_conn *c, double t)
{
	if (!c->dribble || t < c->next || c->sent == f->hello_len)
		return;
	if (send(c->fd, f->hello + c->sent, 1, MSG_NOSIGNAL) == 1)
		c->sent++;
	c->next = t + 1;
}

static int run_flood(struct flood *f, double rate, double secs,
		     unsigned int percent)
{
	static struct pollfd p[OPEN_MAX];
	uint8_t nonce[PXFER_NONCE_LEN] = { 0 };
	struct pxfer_msg m;
	double t0 = now(), t;
	ssize_t len;

	wrong_hello(nonce, &m);
	len = pxfer_msg_encode(f->hello, sizeof(f->hello), &m);
	if (len < 0)
		return 1;
	f->hello_len = len;
	while ((t = now()) < t0 + secs && !stop) {
		while (f->opened + f->failed < rate * (t - t0))
			flood_open(f, (f->opened + f->failed) % 100 < percent, t);
		for (unsigned int i = 0; i < f->n; i++) {
			p[i].fd = f->c[i].fd;
			p[i].events = POLLIN;
		}
		if (poll(p, f->n, 2) < 0 && errno != EINTR)
			return 1;
		/* backwards: a removal moves the last one into i */
		for (unsigned int i = f->n; i-- > 0;) {
			if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    flood_read(&f->c[i])) {
				f->closed++;
				flood_remove(f, i);
				continue;
			}
			flood_dribble(f, &f->c[i], t);
		}
	}
	printf("opened %lu, closed by the receiver %lu, failed %lu\n", f->opened,
	       f->closed, f->failed);
	return 0;
}

/* ---- guess ------------------------------------------------------------ */

struct guess {
	const char *host, *port, *src;
	unsigned long count;
	double end;
	pthread_mutex_t lock;
	unsigned long n, checked, other;
};

/* ms left before @end, at most TIMEOUT_MS; 0 when it is over */
static int left_ms(double end)
{
	double ms = (end - now()) * 1000;

	return ms <= 0 ? 0 : ms > TIMEOUT_MS ? TIMEOUT_MS : (int)ms + 1;
}

/* one wrong guess: 1 if the receiver checked it (REFUSE with EACCES) */
static int guess_once(struct guess *g)
{
	struct pxfer_conn *c;
	struct pxfer_msg m;
	int checked = 0;

	if (pxfer_tcp_ops.connect(g->host, g->port, g->src, TIMEOUT_MS, 0, &c))
		return 0;
	if (!pxfer_conn_recv_msg(c, &m, left_ms(g->end)) &&
	    m.type == PXFER_MSG_CHALLENGE) {
		wrong_hello(m.u.challenge.nonce, &m);
		/* the answer comes when the receiver gets round to it */
		checked = !pxfer_conn_send_msg(c, &m, TIMEOUT_MS) &&
			  !pxfer_conn_recv_msg(c, &m, left_ms(g->end)) &&
			  m.type == PXFER_MSG_REFUSE && m.u.error.code == EACCES;
	}
	pxfer_tcp_ops.close(c);
	return checked;
}

static void *guess_main(void *arg)
{
	struct guess *g = arg;

	for (;;) {
		int checked;

		pthread_mutex_lock(&g->lock);
		if (g->n == g->count || stop || !left_ms(g->end)) {
			pthread_mutex_unlock(&g->lock);
			return NULL;
		}
		g->n++;
		pthread_mutex_unlock(&g->lock);
		checked = guess_once(g);
		pthread_mutex_lock(&g->lock);
		if (checked)
			g->checked++;
		else
			g->other++;
		pthread_mutex_unlock(&g->lock);
	}
}

static int run_guess(struct guess *g, unsigned int conc, double secs)
{
	pthread_t t[64];
	double t0 = now();
	unsigned int i;

	g->end = t0 + secs;
	pthread_mutex_init(&g->lock, NULL);
	for (i = 0; i < conc; i++)
		if (pthread_create(&t[i], NULL, guess_main, g))
			break;
	while (i-- > 0)
		pthread_join(t[i], NULL);
	printf("guesses %lu: checked %lu, other %lu in %.1f s\n", g->n,
	       g->checked, g->other, now() - t0);
	return 0;
}

int main(int argc, char **argv)
{
	static struct flood f;
	static struct guess g;
	const char *src = "127.0.0.1", *mode;
	double rate = 300, secs = -1;
	unsigned long count = 1000, percent = 20, max = 800, conc = 1;
	struct rlimit rl;
	int opt;

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "b:r:t:m:d:n:c:")) != -1) {
		switch (opt) {
		case 'b': src = optarg; break;
		case 'r': rate = atof(optarg); break;
		case 't': secs = atof(optarg); break;
		case 'm': max = strtoul(optarg, NULL, 10); break;
		case 'd': percent = strtoul(optarg, NULL, 10); break;
		case 'n': count = strtoul(optarg, NULL, 10); break;
		case 'c': conc = strtoul(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (argc - optind != 2 || max < 1 || max > OPEN_MAX || percent > 100 ||
	    conc < 1 || conc > 64)
		usage();
	if (pxfer_auth_init())
		return 1;
	signal(SIGTERM, on_term);
	f.from.sin_family = f.to.sin_family = AF_INET;
	f.to.sin_port = htons(atoi(argv[optind + 1]));
	if (inet_pton(AF_INET, src, &f.from.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[optind], &f.to.sin_addr) != 1)
		usage();
	/* the address must be this host's */
	opt = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (opt < 0 || bind(opt, (struct sockaddr *)&f.from, sizeof(f.from))) {
		printf("flooder: cannot send from %s: %s\n", src, strerror(errno));
		return 1;
	}
	close(opt);
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!strcmp(mode, "flood")) {
		f.max = max;
		return run_flood(&f, rate, secs < 0 ? 30 : secs, percent);
	}
	if (!strcmp(mode, "guess")) {
		g = (struct guess){ .host = argv[optind], .port = argv[optind + 1],
				    .src = src, .count = count };
		return run_guess(&g, conc, secs < 0 ? 10 : secs);
	}
	usage();
	return 2;
}
