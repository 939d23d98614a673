/* SPDX-License-Identifier: MIT */
/*
 * Private to the tcp transport: its connection and listener objects and
 * the functions its files share. tcp.c makes and ends connections and
 * carries the control byte stream; chunk.c moves chunks.
 */
#ifndef PXFER_TRANSPORT_TCP_PRIV_H
#define PXFER_TRANSPORT_TCP_PRIV_H

#include <stdint.h>
#include "core/container_of.h"
#include "transport/transport.h"

#define TCP_SENT_MAX 64

struct tcp_conn {
	struct pxfer_conn conn;
	int fd;
	/* slots whose send_chunk returned: tcp has copied them already */
	uint16_t sent[TCP_SENT_MAX];
	unsigned int nsent;
};

struct tcp_listener {
	struct pxfer_listener l;
	int fd;
};

static inline struct tcp_conn *to_tcp(struct pxfer_conn *c)
{
	return container_of(c, struct tcp_conn, conn);
}

static inline struct tcp_listener *to_tcpl(struct pxfer_listener *l)
{
	return container_of(l, struct tcp_listener, l);
}

/* chunk.c: the data path */
int tcp_ring_register(struct pxfer_conn *c, struct pxfer_ring *r,
		      uint8_t *blob, uint16_t *blob_len);
int tcp_ring_remote(struct pxfer_conn *c, const uint8_t *blob,
		    uint16_t blob_len);
int tcp_send_chunk(struct pxfer_conn *c, const struct pxfer_chunk *ch,
		   const void *payload);
int tcp_reap_sent(struct pxfer_conn *c, uint16_t *slots, unsigned int max);
int tcp_recv_chunk(struct pxfer_conn *c, const struct pxfer_ring *r,
		   struct pxfer_chunk *ch);
int tcp_recv_payload(struct pxfer_conn *c, const struct pxfer_ring *r,
		     const struct pxfer_chunk *ch);

/* rails.c: this host's addresses */
int tcp_rails_local(struct pxfer_rail_addr *out, unsigned int max);
int tcp_rail_query(struct pxfer_rail_addr *ra);

#endif
