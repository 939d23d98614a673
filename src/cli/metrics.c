// SPDX-License-Identifier: MIT
/*
 * pxfer recv --metrics and --metrics-file: the receiver's metrics
 * (recv/metrics.h) served over HTTP, or written for node_exporter's
 * textfile collector, by one thread of the command's own. It never waits
 * on the receiver: it renders a snapshot of atomics. Nor can a client
 * make it wait for long: one connection at a time, whose request (at most
 * METRICS_REQ_MAX bytes) must arrive and whose answer must leave within
 * METRICS_DEADLINE_S; only GET /metrics is answered, and every
 * connection is closed after its answer. Nothing a peer sends is kept or
 * echoed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "core/log.h"
#include "core/netaddr.h"
#include "core/sys.h"
#include "recv/metrics.h"

#define METRICS_REQ_MAX		4096	/* bytes of a request, headers included */
#define METRICS_DEADLINE_S	2.0	/* to read a request, and to answer it */
#define METRICS_FILE_SECS	5.0	/* between writes of --metrics-file */
#define METRICS_BODY_MAX	16384

struct cli_metrics {
	struct pxfer_recv_metrics *m;
	int lfd;			/* listening, or -1 */
	int stop_fd;			/* readable: the thread ends */
	const char *file;		/* or NULL */
	int file_failed;		/* its last write failed: said */
	pthread_t thread;
	/* what a request is read into and an answer rendered into: the
	 * thread's alone */
	char req[METRICS_REQ_MAX];
	char body[METRICS_BODY_MAX];
	char head[256];
};

static int is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

/*
 * "PORT", "HOST:PORT" or "[V6]:PORT" into @host (NULL: 127.0.0.1) and
 * @port, in @buf. 0, or -EINVAL.
 */
static int split_addr(const char *arg, char *buf, size_t len,
		      const char **host, const char **port)
{
	char *colon;

	if (strlen(arg) >= len)
		return -EINVAL;
	strcpy(buf, arg);
	*host = NULL;
	*port = buf;
	if (buf[0] == '[') {
		char *end = strchr(buf, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		*end = 0;
		*host = buf + 1;
		*port = end + 2;
	} else if ((colon = strrchr(buf, ':'))) {
		if (strchr(buf, ':') != colon)
			return -EINVAL;	/* a bare IPv6 address: [V6]:PORT */
		*colon = 0;
		*host = buf[0] ? buf : NULL;
		*port = colon + 1;
	}
	return pxfer_port_check(*port);
}

/* listen on @arg; the exit status of a failure */
static int metrics_listen(struct cli_metrics *cm, const char *arg, int public,
			  int quiet)
{
	char buf[256], where[128];
	const char *host, *port;
	struct addrinfo *ai;
	int one = 1, fd, ret;

	if (split_addr(arg, buf, sizeof(buf), &host, &port))
		return pxfer_error("--metrics takes PORT, ADDR:PORT or [ADDR]:PORT, not '%s'",
			     arg), PXFER_EXIT_USAGE;
	ret = pxfer_addr_resolve(host ? host : "127.0.0.1", port, AF_UNSPEC, 1, &ai);
	if (ret)
		return pxfer_error("--metrics: cannot resolve '%s': %s", arg,
			     ret == -EHOSTUNREACH ? "no such host" : strerror(-ret)),
		       PXFER_EXIT_USAGE;
	pxfer_addr_format(ai->ai_addr, where, sizeof(where));
	if (!is_loopback(ai->ai_addr) && !public) {
		freeaddrinfo(ai);
		return pxfer_error("--metrics %s is not a loopback address: whoever reaches it reads the receiver's metrics; serve them there with --metrics-public, or put a proxy in front",
			     where), PXFER_EXIT_USAGE;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16)) {
		ret = errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		pxfer_error("--metrics: cannot listen on %s: %s%s", where, strerror(ret),
		      ret == EADDRINUSE ? " (choose another port)" : "");
		return ret == EADDRINUSE ? PXFER_EXIT_NET : PXFER_EXIT_USAGE;
	}
	freeaddrinfo(ai);
	cm->lfd = fd;
	if (!quiet)
		pxfer_info("pxfer: metrics on http://%s/metrics", where);
	return 0;
}

/* send all of @buf by @deadline: 0, or -1 */
static int send_all(int fd, const char *buf, size_t len, double deadline)
{
	while (len) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		double left = deadline - pxfer_now();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			return -1;
		n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (n > 0) {
			buf += n;
			len -= n;
		}
	}
	return 0;
}

static void answer(struct cli_metrics *cm, int fd, int status,
		   const char *reason, const char *body, size_t len,
		   double deadline)
{
	int n = snprintf(cm->head, sizeof(cm->head),
			 "HTTP/1.1 %d %s\r\n"
			 "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
			 "Content-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n",
			 status, reason, len, status == 405 ? "Allow: GET\r\n" : "");

	if (!send_all(fd, cm->head, n, deadline))
		send_all(fd, body, len, deadline);
}

/*
 * Read a request on @fd: 200 with its target checked, or the status of
 * what is wrong with it; 0 when it did not come whole in time (no
 * answer).
 */
static int read_request(struct cli_metrics *cm, int fd, double deadline)
{
	size_t n = 0;
	char *eol, *sp1, *sp2;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left = deadline - pxfer_now();
		ssize_t r;

		cm->req[n] = 0;
		if (memmem(cm->req, n, "\r\n\r\n", 4) || memmem(cm->req, n, "\n\n", 2))
			break;
		if (n == sizeof(cm->req) - 1)
			return 431;
		if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			return 0;
		r = recv(fd, cm->req + n, sizeof(cm->req) - 1 - n, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return 0;
		if (r > 0)
			n += r;
	}
	/* METHOD SP TARGET SP HTTP/1.x, and nothing else on the line */
	eol = cm->req + strcspn(cm->req, "\r\n");
	if (memchr(cm->req, 0, eol - cm->req))
		return 400;
	*eol = 0;
	sp1 = strchr(cm->req, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2 || sp1 == cm->req || sp2 == sp1 + 1 ||
	    strchr(sp2 + 1, ' ') || strncmp(sp2 + 1, "HTTP/1.", 7) ||
	    strlen(sp2 + 1) != 8)
		return 400;
	*sp1 = *sp2 = 0;
	if (strcmp(cm->req, "GET"))
		return 405;
	if (strcmp(sp1 + 1, "/metrics") && strncmp(sp1 + 1, "/metrics?", 9))
		return 404;
	return 200;
}

static void serve_one(struct cli_metrics *cm, int fd)
{
	double deadline = pxfer_now() + METRICS_DEADLINE_S;
	int status = read_request(cm, fd, deadline), len;
	static const struct { int status; const char *reason, *body; } errs[] = {
		{ 400, "Bad Request", "bad request\n" },
		{ 404, "Not Found", "not found: the metrics are at /metrics\n" },
		{ 405, "Method Not Allowed", "only GET\n" },
		{ 431, "Request Header Fields Too Large", "request too large\n" },
	};

	if (!status)
		return;
	deadline = pxfer_now() + METRICS_DEADLINE_S;
	if (status == 200) {
		len = pxfer_recv_metrics_format(cm->m, cm->body, sizeof(cm->body));
		if (len >= 0) {
			answer(cm, fd, 200, "OK", cm->body, len, deadline);
			return;
		}
		status = 500;
	}
	for (unsigned int i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (errs[i].status == status) {
			answer(cm, fd, status, errs[i].reason, errs[i].body,
			       strlen(errs[i].body), deadline);
			return;
		}
	answer(cm, fd, 500, "Internal Server Error", "", 0, deadline);
}

static int write_full(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		buf += n;
		len -= n;
	}
	return 0;
}

/* --metrics-file: a whole new file each time, renamed over the old */
static int write_file(struct cli_metrics *cm)
{
	char tmp[4096];
	int len, fd, ret = 0;

	len = pxfer_recv_metrics_format(cm->m, cm->body, sizeof(cm->body));
	if (len < 0)
		return len;
	/* the textfile collector reads only *.prom: the temporary file is
	 * never read half written */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", cm->file) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = write_full(fd, cm->body, len);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, cm->file))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

static void file_update(struct cli_metrics *cm)
{
	int ret = write_file(cm);

	if (ret && !cm->file_failed)
		pxfer_warning("cannot write the metrics to '%s': %s (tried again every %.0f s)",
			cm->file, strerror(-ret), METRICS_FILE_SECS);
	cm->file_failed = ret != 0;
}

static void *metrics_main(void *arg)
{
	struct cli_metrics *cm = arg;
	double next = pxfer_now() + METRICS_FILE_SECS;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = cm->stop_fd, .events = POLLIN },
			{ .fd = cm->lfd, .events = POLLIN },
		};
		double now = pxfer_now();
		int fd;

		if (cm->file && now >= next) {
			file_update(cm);
			next = now + METRICS_FILE_SECS;
		}
		if (poll(p, 2, cm->file ? (int)((next - now) * 1000) + 1 : -1) < 0 &&
		    errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (!(p[1].revents & POLLIN))
			continue;
		fd = accept4(cm->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(cm, fd);
		close(fd);
	}
	return NULL;
}

int cli_metrics_start(struct cli_metrics **out, struct pxfer_recv_metrics *m,
		      const char *addr, int public, const char *file, int quiet)
{
	struct cli_metrics *cm;
	int code = PXFER_EXIT_LOCAL, ret;

	*out = NULL;
	if (!addr && !file)
		return 0;
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return pxfer_error("cannot set up the metrics: %s", strerror(ENOMEM)), code;
	cm->m = m;
	cm->lfd = -1;
	cm->file = file;
	cm->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cm->stop_fd < 0) {
		pxfer_error("cannot set up the metrics: %s", strerror(errno));
		goto out;
	}
	if (addr) {
		code = metrics_listen(cm, addr, public, quiet);
		if (code)
			goto out;
	}
	/* a file that cannot be written is said before anything starts */
	if (file) {
		ret = write_file(cm);
		if (ret) {
			code = PXFER_EXIT_USAGE;
			pxfer_error("cannot write the metrics to '%s': %s", file,
			      strerror(-ret));
			goto out;
		}
	}
	ret = pxfer_thread_create(&cm->thread, NULL, metrics_main, cm);
	if (ret) {
		code = PXFER_EXIT_LOCAL;
		pxfer_error("cannot start the metrics' thread: %s", strerror(ret));
		goto out;
	}
	pxfer_thread_name(cm->thread, "metrics", -1);
	*out = cm;
	return 0;
out:
	if (cm->lfd >= 0)
		close(cm->lfd);
	if (cm->stop_fd >= 0)
		close(cm->stop_fd);
	free(cm);
	return code;
}

void cli_metrics_stop(struct cli_metrics *cm)
{
	if (!cm)
		return;
	pxfer_wake(cm->stop_fd);
	pthread_join(cm->thread, NULL);
	/* what the receiver ended with */
	if (cm->file)
		file_update(cm);
	if (cm->lfd >= 0)
		close(cm->lfd);
	close(cm->stop_fd);
	free(cm);
}
