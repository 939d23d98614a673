/* SPDX-License-Identifier: MIT */
/*
 * Transports plug in under this ops table, in the manner of rdma-core's
 * providers: each embeds struct pxfer_conn / pxfer_listener in its own
 * object (reached back with container_of) and fills a const ops table. The engine (session,
 * scheduler, credits, protocol, file I/O) knows nothing else about them.
 *
 * Every connection carries framed messages (proto.h). The control
 * connection moves bytes with send/recv (non-blocking, the engine frames
 * them); a data connection moves chunks with send_chunk/recv_chunk into
 * and out of ring slots.
 */
#ifndef PXFER_TRANSPORT_H
#define PXFER_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "core/netaddr.h"
#include "core/proto.h"
#include "core/ring.h"

struct pxfer_transport_ops;
struct pxfer_transport_diag;

struct pxfer_conn {
	const struct pxfer_transport_ops *ops;
	char peer[80];		/* printable address of the other side */
	/* its host part, without the port (pxfer_addr_source): what the
	 * receiver counts connections and failed guesses by */
	char source[PXFER_SOURCE_LEN];
};

struct pxfer_listener {
	const struct pxfer_transport_ops *ops;
	char addr[80];		/* printable bound address */
};

/*
 * A rail: one local address that data can leave by, and what it sits on.
 * A transfer over several rails pairs each local rail with an address of
 * the receiver's in the same subnet, and spreads its data connections
 * over the pairs.
 */
#define PXFER_RAILS_MAX 8
#define PXFER_RAIL_DEV 32

struct pxfer_rail_addr {
	char addr[64];			/* numeric address */
	uint8_t prefix;			/* its subnet's prefix length */
	uint8_t port;			/* rdma: the port number; tcp: 0 */
	char dev[PXFER_RAIL_DEV];	/* rdma: device (rxe0); tcp: interface */
	int numa_node;			/* of the device; -1 when unknown */
	int up;				/* port active / link up with the address */
};

struct pxfer_transport_ops {
	const char *name;
	uint16_t wire_id;	/* CHALLENGE.transport */
	size_t ring_hdr;	/* header room each ring slot needs (page multiple) */
	int pins_memory;	/* rings are pinned: RLIMIT_MEMLOCK applies */
	unsigned int ring_slots_max;	/* slots of all of a session's rings, 0: any */

	int (*listen)(const char *bind, const char *port,
		      struct pxfer_listener **out);
	int (*listener_fd)(struct pxfer_listener *l);
	int (*accept)(struct pxfer_listener *l, struct pxfer_conn **out);
	void (*listener_close)(struct pxfer_listener *l);

	/* @slots: 0 for the control connection; for a data connection, the
	 * slots of the receiver's ring (WELCOME), the most chunks it can
	 * grant at once, which bounds the work the connection has in flight */
	int (*connect)(const char *host, const char *port, const char *bind,
		       int timeout_ms, unsigned int slots,
		       struct pxfer_conn **out);

	/* pollable descriptor: readable when recv, recv_chunk or reap_sent
	 * has work, or when the connection changed state */
	int (*conn_fd)(struct pxfer_conn *c);
	/* poll events to wait for on conn_fd; @want_send: data is queued */
	short (*poll_events)(struct pxfer_conn *c, int want_send);
	/* non-blocking: bytes taken, or -EAGAIN */
	ssize_t (*send)(struct pxfer_conn *c, const void *buf, size_t len);
	/* non-blocking: bytes read, 0 when the peer closed, or -EAGAIN */
	ssize_t (*recv)(struct pxfer_conn *c, void *buf, size_t cap);

	/* make @r reachable by the peer; the receiver describes it in @blob */
	int (*ring_register)(struct pxfer_conn *c, struct pxfer_ring *r,
			     uint8_t *blob, uint16_t *blob_len);
	/* sender: the receiver's ring, as described in DATA_WELCOME */
	int (*ring_remote)(struct pxfer_conn *c, const uint8_t *blob,
			   uint16_t blob_len);

	/*
	 * sender, optional: let send_chunk take a payload from ring @r, not
	 * this connection's (a broadcast chain forwards from the ring a
	 * chunk arrived in): 0, or -errno, then the caller copies it into
	 * its own ring first. NULL: a payload may be anywhere.
	 */
	int (*ring_local)(struct pxfer_conn *c, const struct pxfer_ring *r);

	/* sender: put the chunk in flight into remote slot ch->slot */
	int (*send_chunk)(struct pxfer_conn *c, const struct pxfer_chunk *ch,
			  const void *payload);
	/* sender: slots whose sends completed, so they may be reused;
	 * a negative errno if the connection failed */
	int (*reap_sent)(struct pxfer_conn *c, uint16_t *slots,
			 unsigned int max);
	/*
	 * receiver: 1 with the next chunk's descriptor in @ch, 0 if none is
	 * ready, -EPIPE if the peer closed between chunks, or -errno. Its
	 * payload is in the slot of @r only once recv_payload returned: the
	 * caller checks the descriptor (credits, files) before any payload
	 * byte lands
	 */
	int (*recv_chunk)(struct pxfer_conn *c, const struct pxfer_ring *r,
			  struct pxfer_chunk *ch);
	/* receiver, optional: bring the payload of the chunk recv_chunk
	 * returned into its slot; NULL where the peer placed it there
	 * itself (rdma). 0 or -errno */
	int (*recv_payload)(struct pxfer_conn *c, const struct pxfer_ring *r,
			    const struct pxfer_chunk *ch);

	/*
	 * optional: the local rails this transport can move data over, at
	 * most @max into @out; rdma: the addresses of the RoCE v2 GIDs of
	 * every active port (one per port), tcp: every address of an
	 * interface that is up, but loopback. How many, or -errno.
	 */
	int (*rails_local)(struct pxfer_rail_addr *out, unsigned int max);
	/*
	 * optional: fill in @ra (prefix, dev, port, numa_node, up) for the
	 * local address ra->addr. 0, or -ENOENT when no device or interface
	 * of this host holds it (any more).
	 */
	int (*rail_query)(struct pxfer_rail_addr *ra);

	/* wake anything blocked on the connection; close is still owed */
	void (*shutdown)(struct pxfer_conn *c);
	void (*close)(struct pxfer_conn *c);

	/* optional: what pxfer doctor asks of the transport
	 * (transport/diag.h); no transfer uses it */
	const struct pxfer_transport_diag *diag;
};

/*
 * pxfer_conn_send_all / pxfer_conn_recv_exact - blocking helpers over the
 * non-blocking send/recv, for handshakes: wait at most @timeout_ms in all.
 * Return 0, -ETIMEDOUT, -EPIPE (peer closed) or -errno.
 */
int pxfer_conn_send_all(struct pxfer_conn *c, const void *buf, size_t len,
			int timeout_ms);
int pxfer_conn_recv_exact(struct pxfer_conn *c, void *buf, size_t len,
			  int timeout_ms);

/* pxfer_conn_send_msg / pxfer_conn_recv_msg - one whole message, blocking */
int pxfer_conn_send_msg(struct pxfer_conn *c, const struct pxfer_msg *m,
			int timeout_ms);
int pxfer_conn_recv_msg(struct pxfer_conn *c, struct pxfer_msg *m,
			int timeout_ms);

#endif
