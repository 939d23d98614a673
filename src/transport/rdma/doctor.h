/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport's diagnostics (transport/diag.h), private to
 * transport/rdma/: doctor.c gathers the inventory and finds routes;
 * diag.c surveys what options select and fills the diag table.
 */
#ifndef PXFER_TRANSPORT_RDMA_DOCTOR_H
#define PXFER_TRANSPORT_RDMA_DOCTOR_H

#include <stddef.h>
#include "transport/diag.h"

extern const struct pxfer_transport_diag pxfer_rdma_diag;

/*
 * pxfer_gid_type_parse - a GID's type from what sysfs says of it
 * (ports/N/gid_attrs/types/IDX: "IB/RoCE v1" or "RoCE v2", a newline
 * after it or not) on a port whose link layer is Ethernet (@ethernet:
 * "IB/RoCE v1" means RoCE v1) or InfiniBand (it means IB). Anything else
 * is PXFER_GID_UNKNOWN.
 */
enum pxfer_gid_type pxfer_gid_type_parse(const char *text, int ethernet);

/* the diag table's inventory_init and inventory_release */
int pxfer_rdma_inventory_init(struct pxfer_rdma_inventory *inv);
void pxfer_rdma_inventory_release(struct pxfer_rdma_inventory *inv);

/*
 * pxfer_rdma_route_find - resolve the address, then the route, to the
 * numeric address @host from @bind (NULL: the kernel's choice), as a
 * connection does, and say where it went in @r (a device of @inv). 0 when
 * both resolved; -errno when the address or the route did not, with why
 * in @err (@r says what was found before it failed).
 */
int pxfer_rdma_route_find(const struct pxfer_rdma_inventory *inv,
			  const char *host, const char *bind,
			  struct pxfer_rdma_route *r, struct pxfer_err *err);

#endif
