// SPDX-License-Identifier: MIT
/*
 * The option structs' defaults: one place for the command line and for
 * programs that call the library.
 */
#include <string.h>

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
