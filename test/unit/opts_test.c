/* SPDX-License-Identifier: MIT */
/*
 * opts_test: pxfer_send_opts_check and pxfer_recv_opts_check, the one
 * check of the options that the pxfer command and the library share
 * (src/api/opts.c):
 *
 *  - the defaults (pxfer_*_opts_init, with what has none) are accepted,
 *    and so are the limits' own values (PXFER_WORKERS_MAX...);
 *  - each bad field is refused with -EINVAL and a message that names the
 *    field, in parentheses, and the option as the command spells it;
 *  - the message fits the caller's buffer, or is not written (len 0).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pxfer/pxfer.h"
#include "test.h"

static char *const paths[] = { "a", "b" };
static char long_dest[PXFER_PATH_MAX + 2];	/* one byte too many */

static void secret(struct pxfer_secret *s, const char *key)
{
	memset(s, 0, sizeof(*s));
	s->len = strlen(key);
	memcpy(s->key, key, s->len);
}

static struct pxfer_send_opts good_send(void)
{
	struct pxfer_send_opts o;

	pxfer_send_opts_init(&o);
	o.paths = paths;
	o.npaths = 2;
	o.host = "127.0.0.1";
	secret(&o.secret, "opts-test-secret-0123456789");
	return o;
}

static struct pxfer_recv_opts good_recv(void)
{
	struct pxfer_recv_opts o;

	pxfer_recv_opts_init(&o);
	secret(&o.secret, "opts-test-secret-0123456789");
	return o;
}

/* refused, with a message that names @field and says @words */
static void refused(int ret, const char *why, const char *field,
		    const char *words, const char *what)
{
	char name[64];

	snprintf(name, sizeof(name), "(%s", field);
	T_EXPECT(ret == -EINVAL, "%s: refused with -EINVAL, not %d", what, ret);
	T_EXPECT(strstr(why, name) != NULL, "%s: the message names %s: '%s'",
		 what, field, why);
	T_EXPECT(strstr(why, words) != NULL, "%s: the message says '%s': '%s'",
		 what, words, why);
}

#define SEND_BAD(field, words, change) do {				\
	struct pxfer_send_opts o = good_send();				\
	char why[400] = "";						\
									\
	change;								\
	refused(pxfer_send_opts_check(&o, why, sizeof(why)), why,	\
		field, words, "send: " #change);			\
} while (0)

#define RECV_BAD(field, words, change) do {				\
	struct pxfer_recv_opts o = good_recv();				\
	char why[400] = "";						\
									\
	change;								\
	refused(pxfer_recv_opts_check(&o, why, sizeof(why)), why,	\
		field, words, "recv: " #change);			\
} while (0)

#define SEND_GOOD(change) do {						\
	struct pxfer_send_opts o = good_send();				\
	char why[400] = "";						\
	int ret;							\
									\
	change;								\
	ret = pxfer_send_opts_check(&o, why, sizeof(why));		\
	T_EXPECT(ret == 0, "send: %s accepted, not %d: %s", #change,	\
		 ret, why);						\
} while (0)

#define RECV_GOOD(change) do {						\
	struct pxfer_recv_opts o = good_recv();				\
	char why[400] = "";						\
	int ret;							\
									\
	change;								\
	ret = pxfer_recv_opts_check(&o, why, sizeof(why));		\
	T_EXPECT(ret == 0, "recv: %s accepted, not %d: %s", #change,	\
		 ret, why);						\
} while (0)

static void test_send(void)
{
	static char *const empty[] = { "a", "" };

	SEND_GOOD((void)0);
	SEND_GOOD(o.workers = PXFER_WORKERS_MAX);
	SEND_GOOD(o.chunk_size = PXFER_CHUNK_MIN);
	SEND_GOOD(o.chunk_size = PXFER_CHUNK_MAX);
	SEND_GOOD(o.integrity = NULL; o.cipher = NULL);
	SEND_GOOD(o.encrypt = 1; o.cipher = "chacha20-poly1305");
	SEND_GOOD(o.dest = long_dest + 1);	/* PXFER_PATH_MAX bytes */
	SEND_GOOD(o.retries = PXFER_RETRIES_MAX;
		  o.retry_wait = PXFER_RETRY_WAIT_MAX);
	SEND_GOOD(o.timeout_ms = PXFER_TIMEOUT_MS_MAX;
		  o.wait_secs = PXFER_WAIT_SECS_MAX);

	SEND_BAD("paths", "PATH", o.paths = NULL);
	SEND_BAD("paths", "PATH", o.npaths = 0);
	SEND_BAD("paths[1]", "PATH 2 is empty", o.paths = empty);
	SEND_BAD("host", "HOST", o.host = NULL);
	SEND_BAD("host", "HOST", o.host = "");
	SEND_BAD("port", "port", o.port = NULL);
	SEND_BAD("port", "--port takes a port number", o.port = "0");
	SEND_BAD("port", "not '86537'", o.port = "86537");
	SEND_BAD("port", "not 'http'", o.port = "http");
	SEND_BAD("dest", "DEST takes at most", o.dest = long_dest);
	SEND_BAD("workers", "-j takes", o.workers = 0);
	SEND_BAD("workers", "not 65", o.workers = PXFER_WORKERS_MAX + 1);
	SEND_BAD("chunk_size", "--chunk-size", o.chunk_size = PXFER_CHUNK_MIN - 1);
	SEND_BAD("chunk_size", "--chunk-size", o.chunk_size = PXFER_CHUNK_MIN + 1);
	SEND_BAD("chunk_size", "--chunk-size", o.chunk_size = 2 * PXFER_CHUNK_MAX);
	SEND_BAD("timeout_ms", "--timeout", o.timeout_ms = 0);
	SEND_BAD("timeout_ms", "--timeout", o.timeout_ms = PXFER_TIMEOUT_MS_MAX + 1);
	SEND_BAD("wait_secs", "--wait", o.wait_secs = -1);
	SEND_BAD("wait_secs", "--wait", o.wait_secs = PXFER_WAIT_SECS_MAX + 1);
	SEND_BAD("secret", "no shared secret", o.secret.len = 0);
	SEND_BAD("secret.len", "the secret takes", o.secret.len = PXFER_SECRET_MIN - 1);
	SEND_BAD("secret.len", "the secret takes", o.secret.len = PXFER_SECRET_MAX + 1);
	SEND_BAD("secret", "too weak", secret(&o.secret, "aaaaaaaaaaaaaaaaaaaa"));
	SEND_BAD("integrity", "--integrity", o.integrity = "sha1");
	SEND_BAD("encrypt, integrity", "--encrypt",
		 o.encrypt = 1; o.integrity = "checksum");
	SEND_BAD("cipher", "--cipher", o.cipher = "aes-128-cbc");
	SEND_BAD("checksum, overwrite", "not both", o.checksum = 1; o.overwrite = 1);
	SEND_BAD("retries", "--retries", o.retries = -1);
	SEND_BAD("retries", "--retries", o.retries = PXFER_RETRIES_MAX + 1);
	SEND_BAD("retry_wait", "--retry-wait", o.retry_wait = -1);
	SEND_BAD("retry_wait", "--retry-wait", o.retry_wait = PXFER_RETRY_WAIT_MAX + 1);
	SEND_BAD("retry_wait", "--retry-wait", o.retry_wait = NAN);
}

static void test_recv(void)
{
	RECV_GOOD((void)0);
	RECV_GOOD(o.max_sessions = PXFER_SESSIONS_MAX);
	RECV_GOOD(o.ring_mem = PXFER_RING_MEM_MAX);
	RECV_GOOD(o.ring_mem = PXFER_RING_MEM_MIN; o.max_sessions = 1);
	RECV_GOOD(o.max_chunk = PXFER_CHUNK_MIN);
	RECV_GOOD(o.max_chunk = PXFER_CHUNK_MAX);
	RECV_GOOD(o.grace_secs = 0; o.idle_timeout = 0; o.partial_ttl = 0;
		  o.partial_max = 0);
	RECV_GOOD(o.grace_secs = PXFER_GRACE_SECS_MAX;
		  o.idle_timeout = PXFER_IDLE_TIMEOUT_MAX;
		  o.partial_ttl = PXFER_PARTIAL_TTL_MAX;
		  o.partial_max = PXFER_PARTIAL_MAX_MAX);

	RECV_BAD("dir", "directory", o.dir = NULL);
	RECV_BAD("dir", "directory", o.dir = "");
	RECV_BAD("port", "port", o.port = NULL);
	RECV_BAD("port", "--port takes a port number", o.port = "0");
	RECV_BAD("max_sessions", "--max-sessions", o.max_sessions = 0);
	RECV_BAD("max_sessions", "--max-sessions",
		 o.max_sessions = PXFER_SESSIONS_MAX + 1);
	RECV_BAD("ring_mem", "--ring-mem", o.ring_mem = PXFER_RING_MEM_MIN - 1);
	RECV_BAD("ring_mem", "--ring-mem", o.ring_mem = PXFER_RING_MEM_MAX + 1);
	RECV_BAD("ring_mem, max_sessions", "a session",
		 o.ring_mem = 4 * PXFER_RING_MEM_MIN; o.max_sessions = 8);
	RECV_BAD("max_chunk", "--max-chunk", o.max_chunk = PXFER_CHUNK_MIN - 1);
	RECV_BAD("max_chunk", "--max-chunk", o.max_chunk = PXFER_CHUNK_MAX + 1);
	RECV_BAD("grace_secs", "--grace", o.grace_secs = -1);
	RECV_BAD("grace_secs", "--grace", o.grace_secs = PXFER_GRACE_SECS_MAX + 1);
	RECV_BAD("idle_timeout", "--idle-timeout takes seconds", o.idle_timeout = -1);
	RECV_BAD("idle_timeout", "--idle-timeout takes seconds",
		 o.idle_timeout = PXFER_IDLE_TIMEOUT_MAX + 1);
	RECV_BAD("partial_ttl", "--partial-ttl", o.partial_ttl = -1);
	RECV_BAD("partial_ttl", "--partial-ttl",
		 o.partial_ttl = PXFER_PARTIAL_TTL_MAX + 1.0);
	RECV_BAD("partial_ttl", "--partial-ttl", o.partial_ttl = NAN);
	RECV_BAD("partial_max", "--partial-max", o.partial_max = PXFER_PARTIAL_MAX_MAX + 1);
	RECV_BAD("secret", "no shared secret", o.secret.len = 0);
	RECV_BAD("secret.len", "the secret takes", o.secret.len = 3);
	RECV_BAD("secret", "too weak", secret(&o.secret, "abcdefghijklmnopqrst"));
}

/* the message is cut to the buffer, and not written with len 0 */
static void test_buffer(void)
{
	struct pxfer_send_opts o = good_send();
	char why[8];

	o.workers = 0;
	memset(why, 'x', sizeof(why));
	T_EXPECT(pxfer_send_opts_check(&o, why, sizeof(why)) == -EINVAL,
		 "a short buffer: still -EINVAL");
	T_EXPECT(memchr(why, 0, sizeof(why)) != NULL,
		 "a short buffer: the message is cut and terminated");
	T_EXPECT(pxfer_send_opts_check(&o, NULL, 0) == -EINVAL,
		 "no buffer: still -EINVAL");
	o.workers = 1;
	T_EXPECT(pxfer_send_opts_check(&o, NULL, 0) == 0, "no buffer: accepted");
}

int main(void)
{
	memset(long_dest, 'd', sizeof(long_dest) - 1);
	test_send();
	test_recv();
	test_buffer();
	return t_result();
}
