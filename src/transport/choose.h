/* SPDX-License-Identifier: MIT */
/*
 * Which transport a side uses, the same way for both: --transport (auto,
 * tcp, rdma), --device and --gid-index (rdma only: they work by binding
 * the address the chosen GID holds), and the memlock preflight a
 * transport that pins its rings needs before a session starts. Every
 * message a user sees about that choice is here, once.
 */
#ifndef PXFER_TRANSPORT_CHOOSE_H
#define PXFER_TRANSPORT_CHOOSE_H

#include <stddef.h>
#include <stdint.h>
#include "core/err.h"
#include "transport/registry.h"

struct pxfer_transport_choice {
	const char *name;	/* "auto", "tcp" or "rdma"; NULL: auto */
	const char *device;	/* --device, or NULL */
	int gid_index;		/* --gid-index, or -1 */
	const char *bind;	/* --bind; after resolve, what --device implies */
	char bind_buf[64];
	const char *devices;	/* --device with several: the list (rails) */
	char first[64];		/* its first device, which device names */
};

/* pxfer_transport_choice_init - the command line's choice, into @c */
static inline void pxfer_transport_choice_init(struct pxfer_transport_choice *c,
					       const char *name,
					       const char *device,
					       int gid_index, const char *bind)
{
	c->name = name;
	c->device = device;
	c->gid_index = gid_index;
	c->bind = bind;
	c->devices = NULL;
}

/*
 * pxfer_transport_resolve - apply --device and --gid-index (rdma; the
 * address to bind goes to c->bind and c->name becomes "rdma") and check
 * that a transport named explicitly can be used here. Returns 0, or a
 * PXFER_EXIT_* status after printing why (USAGE for options that do not
 * fit together, NET when the host has no RDMA device).
 */
int pxfer_transport_resolve(struct pxfer_transport_choice *c);

/*
 * pxfer_transport_for_host - the sender's transport after resolve: for
 * "auto", rdma when an active RDMA device routes to @host (-v says why),
 * else tcp.
 */
const struct pxfer_transport_ops *
pxfer_transport_for_host(const struct pxfer_transport_choice *c,
			 const char *host);

/*
 * pxfer_transport_for_listen - the receiver's transports after resolve,
 * into @out (room for 2): for "auto", tcp and, when this host has an RDMA
 * device, rdma, which is then optional (*optional = 1: failing to listen
 * for it is not an error). Returns how many.
 */
unsigned int pxfer_transport_for_listen(const struct pxfer_transport_choice *c,
					const struct pxfer_transport_ops **out,
					int *optional);

/*
 * pxfer_transport_rails - the local rails for @spec (--rails: "auto",
 * "A,B,...", or NULL) or the device list of --device, on transport @t,
 * into @out (room for PXFER_RAILS_MAX). How many (0: none asked for or
 * found), or a PXFER_EXIT_* status, negated, after printing why.
 */
int pxfer_transport_rails(const struct pxfer_transport_choice *c,
			  const struct pxfer_transport_ops *t, const char *spec,
			  struct pxfer_rail_addr *out);

/*
 * pxfer_transport_memlock - for a transport that pins its rings: whether
 * @workers rings of @slots slots of @chunk bytes (and the connections'
 * own buffers) can be registered under RLIMIT_MEMLOCK. 0, or -ENOMEM with
 * the message for the user, limit and remedy, in @err.
 */
int pxfer_transport_memlock(const struct pxfer_transport_ops *t,
			    unsigned int workers, unsigned int slots,
			    uint32_t chunk, struct pxfer_err *err);

#endif
