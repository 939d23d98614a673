/* SPDX-License-Identifier: MIT */
/*
 * api_test: what include/pxfer/pxfer.h promises a program that calls the
 * library, beyond moving files (the end-to-end tests do that):
 *
 *  - options outside their ranges are refused with PXFER_EXIT_USAGE
 *    before anything starts (no connection is attempted); each check
 *    is opts_test's;
 *  - the library leaves the process's handlers for SIGINT, SIGTERM and
 *    SIGPIPE alone, and a signal does not stop a call;
 *  - a raised stop ends pxfer_recv with PXFER_EXIT_INTR; a call with
 *    another stop is not ended by it: a second receiver serves until its
 *    own stop is raised;
 *  - pxfer_send and pxfer_recv report a failure to connect or listen with
 *    their exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pxfer/pxfer.h"
#include "test.h"

static char long_dest[PXFER_PATH_MAX + 2];

static void on_int(int sig)
{
	(void)sig;
}

static void handlers_are_ours(const char *after)
{
	struct sigaction sa;

	sigaction(SIGINT, NULL, &sa);
	T_EXPECT(sa.sa_handler == on_int, "SIGINT is still ours after %s", after);
	sigaction(SIGTERM, NULL, &sa);
	T_EXPECT(sa.sa_handler == SIG_DFL, "SIGTERM is still the default after %s",
		 after);
	sigaction(SIGPIPE, NULL, &sa);
	T_EXPECT(sa.sa_handler == SIG_DFL, "SIGPIPE is still the default after %s",
		 after);
}

static void secret(struct pxfer_secret *s)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->key, "api-test-secret-0123456789", 26);
	s->len = 26;
}

/* a port nothing listens on: bound, then closed */
static unsigned int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	unsigned int port = 0;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &l))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void test_bad_options(void)
{
	char *paths[] = { "/nonexistent", NULL }, *here[] = { ".", NULL };
	char port[16];
	struct pxfer_send_opts so;
	struct pxfer_recv_opts ro;
	struct pxfer_stats st;

	pxfer_send_opts_init(&so);
	so.paths = paths;
	so.npaths = 1;
	so.host = "127.0.0.1";
	secret(&so.secret);
	so.workers = 0;
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "0 workers");
	so.workers = 65;
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "65 workers");
	so.workers = 1;
	so.chunk_size = 4097;
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "chunk 4097");
	so.chunk_size = PXFER_AUTO_CHUNK_MAX;
	so.host = NULL;
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "no host");
	so.host = "127.0.0.1";
	so.npaths = 0;
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "no paths");
	so.npaths = 1;
	so.port = "86537";
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "port 86537");
	so.port = "http";
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "port 'http'");
	so.port = PXFER_DEFAULT_PORT;
	so.secret.len = 3;
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "a short secret");
	secret(&so.secret);
	so.wait_secs = -1;
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "a negative wait");
	so.wait_secs = 0;
	so.integrity = "sha1";
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "integrity 'sha1'");
	so.integrity = "checksum";
	so.encrypt = 1;
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE,
		 "encryption with the plain checksum");
	so.integrity = NULL;
	so.cipher = "aes-128-cbc";
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE, "cipher 'aes-128-cbc'");
	so.cipher = NULL;
	so.encrypt = 0;
	/* a DEST too long for the HELLO (it overran the HELLO's buffer),
	 * with a source that exists and a port nothing listens on */
	memset(long_dest, 'd', sizeof(long_dest) - 1);
	snprintf(port, sizeof(port), "%u", free_port());
	so.dest = long_dest;
	so.paths = here;
	so.port = port;
	T_EXPECT(pxfer_send(&so, &st) == PXFER_EXIT_USAGE,
		 "a DEST of PXFER_PATH_MAX + 1 bytes");
	so.dest = NULL;
	so.paths = paths;
	so.port = PXFER_DEFAULT_PORT;

	pxfer_recv_opts_init(&ro);
	secret(&ro.secret);
	ro.ring_mem = 1024;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "1 KiB of rings");
	ro.ring_mem = 8ull << 30;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "8 GiB of rings");
	ro.ring_mem = 256u << 10;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE,
		 "256 KiB of rings for 8 sessions (32 KiB each)");
	ro.ring_mem = 0;
	ro.max_sessions = 0;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "0 sessions");
	ro.max_sessions = 65;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "65 sessions");
	ro.max_sessions = PXFER_DEFAULT_MAX_SESSIONS;
	ro.grace_secs = -1;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "a negative grace");
	ro.grace_secs = PXFER_DEFAULT_GRACE_SECS;
	ro.max_chunk = 1;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "a 1-byte chunk");
	ro.max_chunk = PXFER_DEFAULT_MAX_CHUNK;
	ro.port = "0";
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "port 0");
	ro.port = PXFER_DEFAULT_PORT;
	T_EXPECT(ro.idle_timeout == PXFER_DEFAULT_IDLE_TIMEOUT,
		 "an idle timeout of %d s by default", ro.idle_timeout);
	ro.idle_timeout = -1;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "an idle timeout of -1 s");
	ro.idle_timeout = 86401;
	T_EXPECT(pxfer_recv(&ro) == PXFER_EXIT_USAGE, "an idle timeout of a day and a second");
	handlers_are_ours("refused options");
}

static struct pxfer_stop *to_raise;

/* a SIGINT at 150 ms, which the receiver ignores; its stop at 300 ms */
static void *interrupter(void *arg)
{
	(void)arg;
	usleep(150 * 1000);
	kill(getpid(), SIGINT);
	usleep(150 * 1000);
	pxfer_stop_raise(to_raise);
	return NULL;
}

static void test_stop(void)
{
	char dir[] = "/tmp/pxfer-api-test.XXXXXX";
	char port[16], *paths[] = { dir, NULL };
	struct pxfer_stop stop1, stop2;
	struct pxfer_send_opts so;
	struct pxfer_recv_opts ro;
	struct pxfer_stats st;
	struct timespec t0, t1;
	pthread_t t;
	long ms;
	int code;

	if (!mkdtemp(dir)) {
		T_EXPECT(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	if (pxfer_stop_init(&stop1) || pxfer_stop_init(&stop2)) {
		T_EXPECT(0, "pxfer_stop_init: %s", strerror(errno));
		return;
	}
	T_EXPECT(!pxfer_stop_raised(&stop1), "a new stop is not raised");
	snprintf(port, sizeof(port), "%u", free_port());
	pxfer_recv_opts_init(&ro);
	secret(&ro.secret);
	ro.dir = dir;
	ro.port = port;
	ro.bind = "127.0.0.1";
	ro.transport = "tcp";
	ro.quiet = 1;
	ro.stop = &stop1;
	to_raise = &stop1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_create(&t, NULL, interrupter, NULL);
	code = pxfer_recv(&ro);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	T_EXPECT(code == PXFER_EXIT_INTR && ms >= 250,
		 "a receiver served through a SIGINT until its stop: exit %d (want %d) after %ld ms",
		 code, PXFER_EXIT_INTR, ms);
	T_EXPECT(pxfer_stop_raised(&stop1) == 1, "the stop was raised once, not %d times",
		 pxfer_stop_raised(&stop1));
	handlers_are_ours("a stopped pxfer_recv");

	/* the next receiver, with a stop of its own, serves until it is raised */
	snprintf(port, sizeof(port), "%u", free_port());
	ro.stop = &stop2;
	to_raise = &stop2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_create(&t, NULL, interrupter, NULL);
	code = pxfer_recv(&ro);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	T_EXPECT(code == PXFER_EXIT_INTR && ms >= 250,
		 "the second receiver served until its own stop: exit %d after %ld ms",
		 code, ms);

	/* the stop that ended the receivers is not this sender's */
	pxfer_send_opts_init(&so);
	so.paths = paths;
	so.npaths = 1;
	so.host = "127.0.0.1";
	so.port = port;
	so.transport = "tcp";
	so.timeout_ms = 2000;
	secret(&so.secret);
	code = pxfer_send(&so, &st);
	T_EXPECT(code == PXFER_EXIT_NET,
		 "a sender with no receiver exits %d (cannot connect), not %d",
		 PXFER_EXIT_NET, code);
	/* a sender whose stop is raised already does not retry */
	so.stop = &stop1;
	code = pxfer_send(&so, &st);
	T_EXPECT(code == PXFER_EXIT_NET || code == PXFER_EXIT_INTR,
		 "a stopped sender with no receiver exits %d or %d, not %d",
		 PXFER_EXIT_NET, PXFER_EXIT_INTR, code);
	handlers_are_ours("a failed pxfer_send");
	pxfer_stop_release(&stop1);
	pxfer_stop_release(&stop2);
	rmdir(dir);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_int };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	test_bad_options();
	test_stop();
	return t_result();
}
