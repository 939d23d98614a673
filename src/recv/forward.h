/* SPDX-License-Identifier: MIT */
/*
 * A session's files forwarded down a broadcast chain (docs/broadcast.md):
 * what the receiver tells the forwarder, which the layer above gives it
 * (src/api/chainfwd.c: a sender's sessions to the next hop). The receiver
 * never calls up into a sender; it calls these, and they only queue.
 *
 * Threads: every call is the session coordinator's.
 */
#ifndef PXFER_RECV_FORWARD_H
#define PXFER_RECV_FORWARD_H

#include <stdint.h>
#include "core/proto.h"
#include "engine/relay.h"

struct recv_fwd;

/* a file, or a range of one, complete and checked on this receiver */
struct recv_fwd_entry {
	const char *path;	/* relative to the session's destination */
	uint64_t size;		/* the whole file's */
	uint32_t mode;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	/* a range: its bytes, and @fd open on the partial that holds them
	 * (the callee's to close); else range_len 0 and fd -1 */
	uint64_t range_off, range_len;
	int fd;
	/* a range that begins (fd -1): its chunks come through the relay
	 * as they arrive; the callee's reference (pxfer_relay_ent_drop) */
	struct pxfer_relay_ent *relay;
};

struct recv_forward_ops {
	/*
	 * start - forward the session from @peer, writing below @basefd
	 * (its destination: dup'd if kept), to the first of @hops[0..@n)
	 * that works, in chain @hops[0].chain, protected as its HELLO
	 * asked (@hello_flags: encrypted, the cipher, --verify, --fsync),
	 * forwarding from the ring what @relay brings (or NULL).
	 * NULL when it cannot (said).
	 */
	struct recv_fwd *(*start)(void *arg, const struct pxfer_chain_hop *hops,
				  unsigned int n, int basefd, const char *peer,
				  uint32_t hello_flags, struct pxfer_relay *relay);
	/* a FILE of the session (any type), as it comes */
	void (*name)(struct recv_fwd *f, const char *path);
	/* file(s) complete here, or a range that begins (e->relay): @e->fd
	 * and e->relay are the callee's, even when it drops the entry (what
	 * it drops goes in its pass at the end) */
	void (*file)(struct recv_fwd *f, const struct recv_fwd_entry *e);
	/* the session is over: @code 0, every file in and its directories
	 * set, so what is here goes on; else the session failed, and the
	 * forwarding stops */
	void (*over)(struct recv_fwd *f, int code);
	/* 1 once the forwarding is done, @r[0..*@n) saying how each hop
	 * ended (room for PXFER_CHAIN_MAX); 0 while it goes on */
	int (*done)(struct recv_fwd *f, struct pxfer_chain_report *r,
		    unsigned int *n);
	/* stops what goes on, and frees */
	void (*release)(struct recv_fwd *f);
};

struct recv_forward {
	const struct recv_forward_ops *ops;
	void *arg;
};

#endif
