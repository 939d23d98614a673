// SPDX-License-Identifier: MIT
/*
 * The rdma transport: verbs and rdma_cm under the transport ops table.
 *
 * One context per process holds the rdma_cm event channel and the
 * connections; one context per device in use holds what the connections
 * on that device share: the protection domain, one completion queue (with
 * its channel) and one shared receive queue for the data queue pairs. A
 * progress thread serves the event channel and each device's channels:
 * it turns rdma_cm events, completions and port events into the state of
 * the connections.
 *
 * Control connection: RC QP with its own receive queue; SEND/RECV carry
 * the engine's byte stream, with receive credits.
 *
 * Data connection: RC QP on its device's shared receive queue. A chunk is
 * an RDMA WRITE of the payload into the granted slot followed by a
 * WRITE_WITH_IMM of its descriptor into the slot's header room.
 *
 * The files, by concern:
 *   ctx.c       the process context: event channel, thread, connections
 *   dev.c       a device's context; PD, CQ (and its sizing), SRQ
 *   progress.c  the progress thread: completions, rdma_cm and port events
 *   cm.c        a connection's life: object, QP, state, disconnect, free
 *   connect.c   the active side: resolve and connect
 *   listen.c    the passive side: listen and accept
 *   msg.c       messages over SEND/RECV, and their receive credits
 *   ring.c      the data path: rings and chunks
 *   ring_desc.c the ring's description on the wire (a codec, no verbs)
 *   probe.c     device probing, GIDs, and the route a connection took
 *   rails.c     the rails: each active port's address, and the state of one
 *   doctor.c    what pxfer doctor reports: devices, ports, GIDs, routes
 *   diag.c      ... handed to it through the diag table: and what the
 *               options select, and the way to a peer
 *   priv.h      the objects, and what the files share
 * This file holds the ops table: with the probing functions (rdma.h),
 * all that the rest of pxfer sees of the transport.
 */
#include "transport/rdma/doctor.h"
#include "transport/rdma/priv.h"
#include "transport/rdma/rdma.h"

const struct pxfer_transport_ops pxfer_rdma_ops = {
	.name = "rdma",
	.wire_id = 1,
	.ring_hdr = RDMA_HDR_ROOM,
	.pins_memory = 1,
	/* each slot holds a receive of the shared queue */
	.ring_slots_max = RDMA_SRQ_MAX - RDMA_SRQ_BASE,
	.listen = rt_listen,
	.listener_fd = rt_listener_fd,
	.accept = rt_accept_op,
	.listener_close = rt_listener_close,
	.connect = rt_connect_op,
	.conn_fd = rt_conn_fd,
	.poll_events = rt_poll_events,
	.send = rt_send,
	.recv = rt_recv,
	.ring_register = rt_ring_register,
	.ring_remote = rt_ring_remote,
	.ring_local = rt_ring_local,
	.send_chunk = rt_send_chunk,
	.reap_sent = rt_reap_sent,
	.recv_chunk = rt_recv_chunk,
	.rails_local = rt_rails_local,
	.rail_query = rt_rail_query,
	.shutdown = rt_shutdown,
	.close = rt_close,
	.diag = &pxfer_rdma_diag,
};
