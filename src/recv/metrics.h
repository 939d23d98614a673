/* SPDX-License-Identifier: MIT */
/*
 * What a receiver counts for its operator (docs/operations.md, "Metrics"):
 * sessions by how they ended, bytes and files received, the front door's
 * refusals, the partial store, rails and ring memory. The object is the
 * caller's (pxfer_recv_metered, src/api/api.h): the receiver's threads update it with
 * relaxed atomics, at a session's admission and end and at the door, never
 * per chunk, and any thread may render it at any time, also after the
 * call returned (pxfer_recv_metrics_format). No label value comes from a
 * peer: each is one of the fixed names below.
 *
 * Not in the public API (include/pxfer/pxfer.h): libpxfer.so.3's structs
 * stay as 0.3.0 shipped them; the pxfer command links the library
 * statically and calls this directly.
 */
#ifndef PXFER_RECV_METRICS_H
#define PXFER_RECV_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "pxfer/pxfer.h"
#include "recv/partial.h"

/* how a sender's HELLO ended: the outcome label */
enum recv_outcome {
	RECV_OUT_COMPLETE,	/* every file arrived */
	RECV_OUT_FAILED,	/* some files failed, or the session did */
	RECV_OUT_REFUSED,	/* turned away: wrong secret, unencrypted
				 * under --require-encrypt, an unusable
				 * destination, the receiver stopping */
	RECV_OUT_BUSY,		/* told to wait: --max-sessions running */
	RECV_OUT_IDLE,		/* ended by --idle-timeout */
	RECV_OUT_INTEGRITY,	/* a message or chunk failed its check */
	RECV_OUT_STOPPED,	/* stopped by the receiver's own stop */
	RECV_OUT_N
};

/* connections the front door dropped before any session: the reason label */
enum recv_door_reason {
	RECV_DOOR_TIMEOUT,	/* no whole first message in time */
	RECV_DOOR_PROTOCOL,	/* it was no HELLO or DATA_HELLO */
	RECV_DOOR_THROTTLED,	/* its source failed to authenticate: held
				 * until its time ran out */
	RECV_DOOR_CROWDED,	/* its place given to a newcomer, or none */
	RECV_DOOR_NO_SESSION,	/* a data connection for no session here */
	RECV_DOOR_N
};

/* the transport label */
enum recv_transport { RECV_TP_TCP, RECV_TP_RDMA, RECV_TP_N };

typedef atomic_uint_fast64_t recv_counter;

struct pxfer_recv_metrics {
	recv_counter sessions[RECV_OUT_N];
	recv_counter bytes[RECV_TP_N];		/* of the files that arrived whole */
	recv_counter files[RECV_TP_N];
	recv_counter files_failed[RECV_TP_N];
	recv_counter auth_failures;		/* HELLOs with a wrong secret */
	recv_counter door[RECV_DOOR_N];
	recv_counter rails_lost;		/* data connections lost */
	/* gauges */
	recv_counter running;			/* sessions */
	recv_counter max_sessions;
	recv_counter rails_up, rails_down;	/* running sessions' data
						 * connections */
	recv_counter ring_used, ring_budget;	/* bytes */
	recv_counter start_time;		/* seconds since the epoch */
	recv_counter partial_max_files, partial_max_bytes;	/* 0: no cap */
	/* the partial store, as the receiver keeps it (its count and
	 * bytes: the receiver's own accounting, not a copy; its caps are
	 * the receiver's, the two above what it shows) */
	struct pxfer_partials_use use;
};

/* pxfer_recv_metrics_init - all zeroes */
void pxfer_recv_metrics_init(struct pxfer_recv_metrics *m);

/*
 * pxfer_recv_metrics_format - @m in Prometheus' text format (0.0.4) into
 * @buf: the length, or -ENOSPC if @size is too small (4 KiB is enough).
 * Any thread, at any time.
 */
int pxfer_recv_metrics_format(struct pxfer_recv_metrics *m, char *buf,
			      size_t size);

/* the receiver's updates: relaxed, on any of its threads */
static inline void recv_count(recv_counter *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static inline void recv_uncount(recv_counter *c, uint64_t n)
{
	atomic_fetch_sub_explicit(c, n, memory_order_relaxed);
}

/* the transport named @name, as a label */
enum recv_transport recv_transport_of(const char *name);

#endif
