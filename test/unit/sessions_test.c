/* SPDX-License-Identifier: MIT */
/*
 * sessions_test: calls of the library at once in one process, over TCP
 * loopback, none affecting another (include/pxfer/pxfer.h, "Calls"):
 *
 *  - two receivers and four senders, each on its own thread, each with
 *    its own verbosity and log sink: every file arrives intact; each sink
 *    gets its own call's lines only (no line names another call's port
 *    or directory), verbose lines only where verbose was asked (with the
 *    seconds only at 2), and nothing goes to stderr;
 *  - a receiver stopped through its stop object while a session runs:
 *    its sender fails, and a sender of the other receiver, running at the
 *    same time, completes.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pxfer/pxfer.h"
#include "test.h"

#define NRECV 2
#define NSEND 4
#define LINES_MAX 512

/* what a call's sink got */
struct sink {
	char *line[LINES_MAX];
	enum pxfer_log_level level[LINES_MAX];
	unsigned int n;
	atomic_int listening;		/* a receiver's "receiving into" */
	const char *raise_on;		/* a line that raises raise_stop */
	struct pxfer_stop *raise_stop;
};

struct call {
	int sender;
	struct pxfer_send_opts so;
	struct pxfer_recv_opts ro;
	struct pxfer_stats st;
	struct pxfer_stop stop;
	struct sink sink;
	char dir[256];			/* a receiver's DIR; a sender's source */
	char port[16];
	char *paths[2];
	int code;
};

static void on_line(void *arg, enum pxfer_log_level level, const char *line)
{
	struct sink *k = arg;

	if (k->n < LINES_MAX) {
		k->level[k->n] = level;
		k->line[k->n++] = strdup(line);
	}
	if (level == PXFER_LOG_INFO && strstr(line, "receiving into"))
		atomic_store(&k->listening, 1);
	if (k->raise_on && strstr(line, k->raise_on)) {
		k->raise_on = NULL;
		pxfer_stop_raise(k->raise_stop);
	}
}

static void sink_free(struct sink *k)
{
	for (unsigned int i = 0; i < k->n; i++)
		free(k->line[i]);
	k->n = 0;
}

/* a test that cannot be set up: stderr back, and out */
static int saved_err = -1;

static void fatal(const char *what)
{
	int err = errno;

	if (saved_err >= 0)
		dup2(saved_err, STDERR_FILENO);
	fprintf(stderr, "sessions_test: cannot set up the test: %s: %s\n",
		what, strerror(err));
	exit(1);
}

static void *run(void *arg)
{
	struct call *c = arg;

	c->code = c->sender ? pxfer_send(&c->so, &c->st) : pxfer_recv(&c->ro);
	return NULL;
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

static void secret(struct pxfer_secret *s)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->key, "sessions-test-secret-0123456789", 31);
	s->len = 31;
}

static void receiver(struct call *c, const char *top, int n, int verbose,
		    int grace)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->dir, sizeof(c->dir), "%s/dst%d", top, n);
	snprintf(c->port, sizeof(c->port), "%u", free_port());
	if (mkdir(c->dir, 0700))
		fatal(c->dir);
	if (pxfer_stop_init(&c->stop))
		fatal("pxfer_stop_init");
	pxfer_recv_opts_init(&c->ro);
	secret(&c->ro.secret);
	c->ro.dir = c->dir;
	c->ro.port = c->port;
	c->ro.bind = "127.0.0.1";
	c->ro.transport = "tcp";
	c->ro.verbose = verbose;
	c->ro.max_sessions = 2;
	c->ro.ring_mem = 8u << 20;
	c->ro.grace_secs = grace;
	c->ro.log = on_line;
	c->ro.log_arg = &c->sink;
	c->ro.stop = &c->stop;
}

static void sender(struct call *c, const char *src, const struct call *to,
		   int verbose)
{
	memset(c, 0, sizeof(*c));
	c->sender = 1;
	snprintf(c->dir, sizeof(c->dir), "%s", src);
	snprintf(c->port, sizeof(c->port), "%s", to->port);
	c->paths[0] = c->dir;
	pxfer_send_opts_init(&c->so);
	secret(&c->so.secret);
	c->so.paths = c->paths;
	c->so.npaths = 1;
	c->so.host = "127.0.0.1";
	c->so.port = c->port;
	c->so.transport = "tcp";
	c->so.workers = 2;
	c->so.verbose = verbose;
	c->so.retries = 0;
	c->so.log = on_line;
	c->so.log_arg = &c->sink;
}

/* @len bytes of a pattern seeded by @seed, or a hole of them (@seed 0) */
static int make_file(const char *path, size_t len, uint32_t seed)
{
	FILE *f = fopen(path, "w");
	uint32_t x = seed;

	if (!f)
		return -1;
	if (!seed) {
		int ret = ftruncate(fileno(f), (off_t)len);

		fclose(f);
		return ret;
	}
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		fputc(x & 0xff, f);
	}
	return fclose(f);
}

static int same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
	int ca, cb, same = fa && fb;

	while (same) {
		ca = fgetc(fa);
		cb = fgetc(fb);
		if (ca != cb)
			same = 0;
		if (ca == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* @line names 127.0.0.1:@port (not a longer port that starts with it) */
static int names_port(const char *line, const char *port)
{
	char tok[64];
	const char *p = line;
	size_t l;

	snprintf(tok, sizeof(tok), "127.0.0.1:%s", port);
	l = strlen(tok);
	while ((p = strstr(p, tok))) {
		if (p[l] < '0' || p[l] > '9')
			return 1;
		p += l;
	}
	return 0;
}

/*
 * What of another call @line names, or NULL: the directories of the
 * calls (a receiver's DIR, a sender's source) are all different, and a
 * call names no port but its own receiver's.
 */
static const char *names_other(const struct call *c, const struct call *calls,
			       int ncalls, const char *line)
{
	for (int i = 0; i < ncalls; i++) {
		const struct call *o = &calls[i];

		if (o == c)
			continue;
		if (strcmp(o->port, c->port) && names_port(line, o->port))
			return o->port;
		if (strstr(line, o->dir))
			return o->dir;
	}
	return NULL;
}

static void wait_listening(struct call *c)
{
	for (int i = 0; i < 3000 && !atomic_load(&c->sink.listening); i++)
		usleep(10 * 1000);
	if (!atomic_load(&c->sink.listening)) {
		errno = ETIMEDOUT;
		fatal("a receiver to listen");
	}
}

static const char *level_name(enum pxfer_log_level l)
{
	static const char *names[] = { "error", "warning", "info", "verbose" };

	return l <= PXFER_LOG_VERBOSE ? names[l] : "?";
}

static void dump(const char *who, const struct call *c)
{
	for (unsigned int i = 0; i < c->sink.n; i++)
		fprintf(stderr, "  %s %s: %s\n", who,
			level_name(c->sink.level[i]), c->sink.line[i]);
}

/* the verbose lines of @c's sink: none unless asked, "[s.sss] " at 2 */
static void check_lines(const char *who, const struct call *c, int verbose,
			const struct call *all, int nall)
{
	unsigned int nverbose = 0;

	for (unsigned int i = 0; i < c->sink.n; i++) {
		const char *line = c->sink.line[i], *other;

		other = names_other(c, all, nall, line);
		T_EXPECT(!other, "%s's line does not name another call's '%s': %s",
			 who, other, line);
		T_EXPECT(c->sink.level[i] != PXFER_LOG_ERROR,
			 "no error in %s's sink: %s", who, line);
		if (c->sink.level[i] != PXFER_LOG_VERBOSE)
			continue;
		nverbose++;
		T_EXPECT((verbose > 1) == (line[0] == '['),
			 "%s (verbose %d): a verbose line %s the seconds: %s",
			 who, verbose, verbose > 1 ? "with" : "without", line);
	}
	T_EXPECT(verbose ? nverbose > 0 : nverbose == 0,
		 "%s (verbose %d) got %u verbose lines", who, verbose, nverbose);
}

static int has_line(const struct call *c, enum pxfer_log_level level,
		    const char *a, const char *b)
{
	for (unsigned int i = 0; i < c->sink.n; i++)
		if (c->sink.level[i] == level && strstr(c->sink.line[i], a) &&
		    (!b || strstr(c->sink.line[i], b)))
			return 1;
	return 0;
}

static void test_many(const char *top)
{
	static const int rverbose[NRECV] = { 1, 0 };
	static const int sverbose[NSEND] = { 2, 0, 1, 0 };
	static const char *const names[] = { "a", "b", "c" };
	static const size_t sizes[] = { 1u << 20, 300000, 10 };
	struct call *calls = calloc(NRECV + NSEND, sizeof(*calls));
	struct call *r = calls, *s = calls + NRECV;
	pthread_t th[NRECV + NSEND];
	char path[512], path2[1024], errpath[512];
	struct stat sb;
	int i, errfd;

	if (!calls)
		fatal("memory");
	/* the calls' lines go to their sinks: nothing to stderr; beside
	 * @top, which is removed, so that a sanitizer's report (which ends
	 * the process) stays there */
	snprintf(errpath, sizeof(errpath), "%s.stderr", top);
	fprintf(stderr, "sessions_test: what the calls print on stderr goes to %s\n",
		errpath);
	errfd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	saved_err = dup(STDERR_FILENO);
	if (errfd < 0 || saved_err < 0 || dup2(errfd, STDERR_FILENO) < 0)
		fatal("stderr into a file");
	for (i = 0; i < NRECV; i++) {
		receiver(&r[i], top, i, rverbose[i], PXFER_DEFAULT_GRACE_SECS);
		pthread_create(&th[i], NULL, run, &r[i]);
	}
	for (i = 0; i < NRECV; i++)
		wait_listening(&r[i]);
	for (i = 0; i < NSEND; i++) {
		snprintf(path, sizeof(path), "%s/src%d", top, i);
		if (mkdir(path, 0700))
			fatal(path);
		for (int f = 0; f < 3; f++) {
			snprintf(path2, sizeof(path2), "%s/%s", path, names[f]);
			if (make_file(path2, sizes[f] + i * 4097, 1 + i * 3 + f))
				fatal(path2);
		}
		sender(&s[i], path, &r[i / 2], sverbose[i]);
		pthread_create(&th[NRECV + i], NULL, run, &s[i]);
	}
	for (i = 0; i < NSEND; i++)
		pthread_join(th[NRECV + i], NULL);
	for (i = 0; i < NRECV; i++) {
		pxfer_stop_raise(&r[i].stop);
		pthread_join(th[i], NULL);
	}
	dup2(saved_err, STDERR_FILENO);
	close(saved_err);
	saved_err = -1;
	close(errfd);
	T_EXPECT(!stat(errpath, &sb) && sb.st_size == 0,
		 "nothing on stderr, but %lld bytes (below)", (long long)sb.st_size);
	if (sb.st_size) {
		FILE *f = fopen(errpath, "r");
		int ch;

		while (f && (ch = fgetc(f)) != EOF)
			fputc(ch, stderr);
		if (f)
			fclose(f);
	} else {
		unlink(errpath);
	}
	for (i = 0; i < NSEND; i++) {
		char who[32];

		snprintf(who, sizeof(who), "sender %d", i);
		T_EXPECT(s[i].code == PXFER_EXIT_OK && s[i].st.files == 3,
			 "%s exits 0 with 3 files, not %d with %llu", who,
			 s[i].code, (unsigned long long)s[i].st.files);
		for (int f = 0; f < 3; f++) {
			snprintf(path, sizeof(path), "%s/%s", s[i].dir, names[f]);
			snprintf(path2, sizeof(path2), "%s/src%d/%s",
				 r[i / 2].dir, i, names[f]);
			T_EXPECT(same_file(path, path2), "%s arrived intact as %s",
				 path, path2);
		}
		check_lines(who, &s[i], sverbose[i], calls, NRECV + NSEND);
		snprintf(path, sizeof(path), "connected to 127.0.0.1:%s ",
			 r[i / 2].port);
		if (sverbose[i])
			T_EXPECT(has_line(&s[i], PXFER_LOG_VERBOSE, path, NULL),
				 "%s says it %s", who, path);
		if (t_failures)
			dump(who, &s[i]);
	}
	for (i = 0; i < NRECV; i++) {
		char who[32];

		snprintf(who, sizeof(who), "receiver %d", i);
		T_EXPECT(r[i].code == PXFER_EXIT_INTR, "%s stopped: exit %d, not %d",
			 who, PXFER_EXIT_INTR, r[i].code);
		T_EXPECT(has_line(&r[i], PXFER_LOG_INFO, "receiving into", r[i].dir),
			 "%s says where it receives", who);
		check_lines(who, &r[i], rverbose[i], calls, NRECV + NSEND);
		if (t_failures)
			dump(who, &r[i]);
	}
	for (i = 0; i < NRECV + NSEND; i++) {
		if (!calls[i].sender)
			pxfer_stop_release(&calls[i].stop);
		sink_free(&calls[i].sink);
	}
	free(calls);
}

/*
 * Receiver 0 (no grace) is stopped as its sender's data connections are
 * up; receiver 1's sender, at the same time, completes.
 */
static void test_stop_one(const char *top)
{
	struct call *calls = calloc(4, sizeof(*calls));
	struct call *r = calls, *s = calls + 2;
	char src[256], path[512], path2[512];
	pthread_t th[4];
	int i;

	if (!calls)
		fatal("memory");
	for (i = 0; i < 2; i++) {
		receiver(&r[i], top, 10 + i, 0, i ? PXFER_DEFAULT_GRACE_SECS : 0);
		pthread_create(&th[i], NULL, run, &r[i]);
	}
	for (i = 0; i < 2; i++)
		wait_listening(&r[i]);
	for (i = 0; i < 2; i++) {
		snprintf(src, sizeof(src), "%s/big%d", top, i);
		if (mkdir(src, 0700))
			fatal(src);
		snprintf(path, sizeof(path), "%s/data", src);
		/* a hole the stop comes well before the end of; 8 MiB */
		if (make_file(path, i ? 8u << 20 : 256u << 20, i ? 77 : 0))
			fatal(path);
		sender(&s[i], src, &r[i], 1);
	}
	s[0].sink.raise_on = "data connections ready";
	s[0].sink.raise_stop = &r[0].stop;
	for (i = 0; i < 2; i++)
		pthread_create(&th[2 + i], NULL, run, &s[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[2 + i], NULL);
	pthread_join(th[0], NULL);
	pxfer_stop_raise(&r[1].stop);
	pthread_join(th[1], NULL);

	T_EXPECT(s[0].code != PXFER_EXIT_OK && s[0].code != PXFER_EXIT_USAGE,
		 "the stopped receiver's sender fails: exit %d", s[0].code);
	T_EXPECT(has_line(&s[0], PXFER_LOG_ERROR, r[0].port, NULL) ||
		 has_line(&s[0], PXFER_LOG_ERROR, "receiver", NULL),
		 "the stopped receiver's sender says why");
	T_EXPECT(r[0].code == PXFER_EXIT_INTR, "the stopped receiver exits %d, not %d",
		 PXFER_EXIT_INTR, r[0].code);
	T_EXPECT(has_line(&r[0], PXFER_LOG_INFO, "stopping 1 running session", NULL),
		 "the stopped receiver stopped its session");
	T_EXPECT(s[1].code == PXFER_EXIT_OK && s[1].st.files == 1,
		 "the other sender completes: exit %d, %llu files", s[1].code,
		 (unsigned long long)s[1].st.files);
	snprintf(path, sizeof(path), "%s/data", s[1].dir);
	snprintf(path2, sizeof(path2), "%s/big1/data", r[1].dir);
	T_EXPECT(same_file(path, path2), "%s arrived intact", path2);
	T_EXPECT(r[1].code == PXFER_EXIT_INTR, "the other receiver exits %d, not %d",
		 PXFER_EXIT_INTR, r[1].code);
	for (i = 0; i < 4; i++) {
		for (unsigned int l = 0; l < calls[i].sink.n; l++) {
			const char *other = names_other(&calls[i], calls, 4,
							calls[i].sink.line[l]);

			T_EXPECT(!other, "call %d's line does not name '%s': %s",
				 i, other, calls[i].sink.line[l]);
		}
	}
	if (t_failures) {
		dump("stopped receiver", &r[0]);
		dump("its sender", &s[0]);
		dump("other receiver", &r[1]);
		dump("its sender", &s[1]);
	}
	for (i = 0; i < 4; i++) {
		if (!calls[i].sender)
			pxfer_stop_release(&calls[i].stop);
		sink_free(&calls[i].sink);
	}
	free(calls);
}

int main(void)
{
	char top[] = "/tmp/pxfer-sessions-test.XXXXXX";

	if (!mkdtemp(top)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_many(top);
	if (!t_failures)
		test_stop_one(top);
	t_rm_rf_at(AT_FDCWD, top);
	return t_result();
}
