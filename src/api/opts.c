// SPDX-License-Identifier: MIT
/*
 * The option structs: their defaults, and what they may hold. One place
 * for the command line and for programs that call the library, so that
 * both refuse the same options with the same words. A message names the
 * option as the command spells it, and the field in parentheses.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/auth.h"
#include "core/netaddr.h"
#include "core/sys.h"
#include "pxfer/pxfer.h"

void pxfer_send_opts_init(struct pxfer_send_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->port = PXFER_DEFAULT_PORT;
	o->transport = "auto";
	o->gid_index = -1;
	o->io = "auto";
	o->workers = pxfer_workers_auto();
	o->workers_auto = 1;
	/* an upper bound: the receiver picks the size (chunk_auto) */
	o->chunk_size = PXFER_AUTO_CHUNK_MAX;
	o->chunk_auto = 1;
	o->timeout_ms = PXFER_DEFAULT_TIMEOUT_MS;
	o->wait_secs = PXFER_DEFAULT_WAIT_SECS;
	o->integrity = "mac";
	o->cipher = "aes-256-gcm";
	o->retries = PXFER_DEFAULT_RETRIES;
	o->retry_wait = PXFER_DEFAULT_RETRY_WAIT;
}

void pxfer_recv_opts_init(struct pxfer_recv_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->dir = ".";
	o->port = PXFER_DEFAULT_PORT;
	o->transport = "auto";
	o->gid_index = -1;
	o->io = "auto";
	o->ring_mem = 0;	/* PXFER_DEFAULT_RING_MEM per session */
	o->max_chunk = PXFER_DEFAULT_MAX_CHUNK;
	o->max_sessions = PXFER_DEFAULT_MAX_SESSIONS;
	o->grace_secs = PXFER_DEFAULT_GRACE_SECS;
	o->idle_timeout = PXFER_DEFAULT_IDLE_TIMEOUT;
	o->partial_ttl = PXFER_DEFAULT_PARTIAL_TTL;
	o->partial_max = PXFER_DEFAULT_PARTIAL_MAX;
}

/* why an option is refused, in @why (@len bytes, may be 0): -EINVAL */
__attribute__((format(printf, 3, 4)))
static int refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int port_check(const char *port, char *why, size_t len)
{
	if (!port)
		return refuse(why, len, "no port to use (port)");
	if (pxfer_port_check(port))
		return refuse(why, len, "--port takes a port number from 1 to 65535, not '%s' (port)",
			      port);
	return 0;
}

static int secret_check(const struct pxfer_secret *s, char *why, size_t len)
{
	unsigned int bits;

	if (!s->len)
		return refuse(why, len, "no shared secret (secret)");
	if (s->len < PXFER_SECRET_MIN || s->len > PXFER_SECRET_MAX)
		return refuse(why, len, "the secret takes %d to %d bytes, not %zu (secret.len)",
			      PXFER_SECRET_MIN, PXFER_SECRET_MAX, s->len);
	bits = pxfer_secret_bits(s);
	if (bits < PXFER_SECRET_BITS)
		return refuse(why, len, "the secret is too weak to resist an offline guess: about %u bits, %d needed (secret)",
			      bits, PXFER_SECRET_BITS);
	return 0;
}

int pxfer_send_opts_check(const struct pxfer_send_opts *o, char *why,
			  size_t len)
{
	if (!o->paths || o->npaths < 1)
		return refuse(why, len, "no PATH to send (paths, npaths)");
	for (int i = 0; i < o->npaths; i++)
		if (!o->paths[i] || !*o->paths[i])
			return refuse(why, len, "PATH %d is empty (paths[%d])",
				      i + 1, i);
	if (!o->host || !*o->host)
		return refuse(why, len, "no HOST to send to (host)");
	if (port_check(o->port, why, len))
		return -EINVAL;
	if (o->dest && strlen(o->dest) > PXFER_PATH_MAX)
		return refuse(why, len, "DEST takes at most %d bytes, not %zu (dest)",
			      PXFER_PATH_MAX, strlen(o->dest));
	if (o->workers < 1 || o->workers > PXFER_WORKERS_MAX)
		return refuse(why, len, "-j takes a number of workers from 1 to %d, not %d (workers)",
			      PXFER_WORKERS_MAX, o->workers);
	if (o->chunk_size < PXFER_CHUNK_MIN || o->chunk_size > PXFER_CHUNK_MAX ||
	    o->chunk_size % PXFER_CHUNK_MIN)
		return refuse(why, len, "--chunk-size takes a multiple of %uK from %uK to %uM, not %u (chunk_size)",
			      PXFER_CHUNK_MIN >> 10, PXFER_CHUNK_MIN >> 10,
			      PXFER_CHUNK_MAX >> 20, o->chunk_size);
	if (o->timeout_ms < 1 || o->timeout_ms > PXFER_TIMEOUT_MS_MAX)
		return refuse(why, len, "--timeout takes from 1 ms to %d s, not %d ms (timeout_ms)",
			      PXFER_TIMEOUT_MS_MAX / 1000, o->timeout_ms);
	if (o->wait_secs < 0 || o->wait_secs > PXFER_WAIT_SECS_MAX)
		return refuse(why, len, "--wait takes seconds from 0 to %d, not %d (wait_secs)",
			      PXFER_WAIT_SECS_MAX, o->wait_secs);
	if (secret_check(&o->secret, why, len))
		return -EINVAL;
	/* NULL: the default, for a caller that did not call opts_init */
	if (o->integrity && strcmp(o->integrity, "mac") &&
	    strcmp(o->integrity, "checksum"))
		return refuse(why, len, "--integrity takes mac or checksum, not '%s' (integrity)",
			      o->integrity);
	if (o->encrypt && o->integrity && !strcmp(o->integrity, "checksum"))
		return refuse(why, len, "--encrypt authenticates every chunk: it cannot go with --integrity checksum (encrypt, integrity)");
	if (o->cipher && strcmp(o->cipher, "aes-256-gcm") &&
	    strcmp(o->cipher, "chacha20-poly1305"))
		return refuse(why, len, "--cipher takes aes-256-gcm or chacha20-poly1305, not '%s' (cipher)",
			      o->cipher);
	if (o->checksum && o->overwrite)
		return refuse(why, len, "--checksum decides what to skip, --overwrite skips nothing: not both (checksum, overwrite)");
	if (o->retries < 0 || o->retries > PXFER_RETRIES_MAX)
		return refuse(why, len, "--retries takes a number from 0 to %d, not %d (retries)",
			      PXFER_RETRIES_MAX, o->retries);
	if (!(o->retry_wait >= 0 && o->retry_wait <= PXFER_RETRY_WAIT_MAX))
		return refuse(why, len, "--retry-wait takes seconds from 0 to %d, not %g (retry_wait)",
			      PXFER_RETRY_WAIT_MAX, o->retry_wait);
	return 0;
}

int pxfer_recv_opts_check(const struct pxfer_recv_opts *o, char *why,
			  size_t len)
{
	if (!o->dir || !*o->dir)
		return refuse(why, len, "no directory to receive into (dir)");
	if (port_check(o->port, why, len))
		return -EINVAL;
	if (o->max_sessions < 1 || o->max_sessions > PXFER_SESSIONS_MAX)
		return refuse(why, len, "--max-sessions takes a number from 1 to %d, not %u (max_sessions)",
			      PXFER_SESSIONS_MAX, o->max_sessions);
	if (o->ring_mem && (o->ring_mem < PXFER_RING_MEM_MIN ||
			    o->ring_mem > PXFER_RING_MEM_MAX))
		return refuse(why, len, "--ring-mem takes a size from %uK to %lluG, not %llu (ring_mem)",
			      PXFER_RING_MEM_MIN >> 10, PXFER_RING_MEM_MAX >> 30,
			      (unsigned long long)o->ring_mem);
	if (o->ring_mem && o->ring_mem / o->max_sessions < PXFER_RING_MEM_MIN)
		return refuse(why, len, "--ring-mem takes at least %uK a session, not %llu for %u sessions (ring_mem, max_sessions)",
			      PXFER_RING_MEM_MIN >> 10,
			      (unsigned long long)o->ring_mem, o->max_sessions);
	if (o->max_chunk < PXFER_CHUNK_MIN || o->max_chunk > PXFER_CHUNK_MAX)
		return refuse(why, len, "--max-chunk takes a size from %uK to %uM, not %u (max_chunk)",
			      PXFER_CHUNK_MIN >> 10, PXFER_CHUNK_MAX >> 20,
			      o->max_chunk);
	if (o->grace_secs < 0 || o->grace_secs > PXFER_GRACE_SECS_MAX)
		return refuse(why, len, "--grace takes seconds from 0 to %d, not %d (grace_secs)",
			      PXFER_GRACE_SECS_MAX, o->grace_secs);
	if (o->idle_timeout < 0 || o->idle_timeout > PXFER_IDLE_TIMEOUT_MAX)
		return refuse(why, len, "--idle-timeout takes seconds from 0 (never) to %d, not %d (idle_timeout)",
			      PXFER_IDLE_TIMEOUT_MAX, o->idle_timeout);
	if (!(o->partial_ttl >= 0 && o->partial_ttl <= PXFER_PARTIAL_TTL_MAX))
		return refuse(why, len, "--partial-ttl takes from 0 (keep nothing) to %dd, not %.0f s (partial_ttl)",
			      PXFER_PARTIAL_TTL_MAX / 86400, o->partial_ttl);
	if (o->partial_max > PXFER_PARTIAL_MAX_MAX)
		return refuse(why, len, "--partial-max takes a number of partial files from 0 (no cap) to %d, not %u (partial_max)",
			      PXFER_PARTIAL_MAX_MAX, o->partial_max);
	return secret_check(&o->secret, why, len);
}
