/* SPDX-License-Identifier: MIT */
/*
 * Rails: the pairs of a local address and one of the receiver's that a
 * session's data connections go over. The receiver offers its addresses
 * in the WELCOME; the sender pairs each of its own rails with one of
 * them on the same subnet, and spreads its workers over the pairs, one
 * after the other. Nothing here opens or connects anything.
 */
#ifndef PXFER_ENGINE_RAILS_H
#define PXFER_ENGINE_RAILS_H

#include "core/proto.h"
#include "transport/transport.h"

struct pxfer_rail {
	struct pxfer_rail_addr local;	/* local.addr: the address to bind */
	char remote[64];		/* the receiver's address */
	char name[PXFER_RAIL_DEV + 140];	/* "rxe0:1 10.77.0.2 -> 10.77.0.1" */
};

struct pxfer_rails {
	unsigned int n;
	struct pxfer_rail r[PXFER_RAILS_MAX];
};

/*
 * pxfer_rails_to_wire - what the receiver offers: the local rails
 * @l[0..@n) into @w's rails (the first PXFER_WIRE_RAILS_MAX that are
 * numeric addresses).
 */
void pxfer_rails_to_wire(const struct pxfer_rail_addr *l, unsigned int n,
			 struct pxfer_welcome *w);

/*
 * pxfer_rails_pair - pair each local rail @l[0..@n) with an address @w
 * offers on its subnet (the local rail's prefix, or the offered one's
 * when the local one is unknown): the first one no rail took yet, else
 * the first at all. Local rails with no offer on their subnet are left
 * out (@skipped counts them). How many pairs are in @out.
 */
unsigned int pxfer_rails_pair(const struct pxfer_rail_addr *l, unsigned int n,
			      const struct pxfer_welcome *w,
			      struct pxfer_rails *out, unsigned int *skipped);

/* pxfer_rail_name - @r's name for messages, into r->name */
void pxfer_rail_name(struct pxfer_rail *r);

#endif
