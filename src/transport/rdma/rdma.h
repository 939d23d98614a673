/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport, as the rest of pxfer sees it: its ops table and
 * the device probing that transport choice needs. What pxfer doctor
 * reports of the devices it reaches through the ops table's diagnostics
 * (transport/diag.h). Everything else about it is private to
 * transport/rdma/ (priv.h, doctor.h).
 */
#ifndef PXFER_TRANSPORT_RDMA_H
#define PXFER_TRANSPORT_RDMA_H

#include <stddef.h>
#include "core/err.h"
#include "transport/transport.h"

extern const struct pxfer_transport_ops pxfer_rdma_ops;

/* pxfer_rdma_available - 1 if this host has an RDMA device at all */
int pxfer_rdma_available(void);

/*
 * pxfer_rdma_probe - 0 if an active RDMA device routes to @host (so
 * --transport auto picks rdma; @err notes which), else -errno with why
 * not in @err: -ENODEV (no device, no rdma_cm), -ENETUNREACH (@host is a
 * loopback address), -EHOSTUNREACH (it does not resolve, or no active
 * device routes to it).
 */
int pxfer_rdma_probe(const char *host, const char *bind, struct pxfer_err *err);

/*
 * pxfer_rdma_source - the IPv4 address (into @buf) that makes rdma_cm use
 * @device (NULL: any) and its GID @gid_index (-1: the first RoCE v2
 * IPv4-mapped GID): binding to it is how --device and --gid-index take
 * effect. 0 with a note of the GID in @err, or -errno with the reason in
 * @err.
 */
int pxfer_rdma_source(const char *device, int gid_index, char *buf,
		      size_t len, struct pxfer_err *err);

/*
 * pxfer_rdma_sources - one rail for each entry of @devices, a comma-
 * separated list of "DEVICE" or "DEVICE:PORT" ("rxe0,rxe2:1"): the
 * address rdma_cm must bind to use that device and port (its first RoCE
 * v2 GID holding an IPv4 address, else a global IPv6 one; without a port,
 * the device's first active port that has one), with its prefix, NUMA
 * node and whether the port is up, at most @max (and PXFER_RAILS_MAX)
 * into @out, in the order listed. How many, or -errno with the reason in @err: -EINVAL (an entry
 * that does not parse, or is listed twice), -ENODEV (no such device or
 * port), -ENOENT (no such GID), -E2BIG (more than @max). On success @err's
 * note names each device's address.
 */
int pxfer_rdma_sources(const char *devices, struct pxfer_rail_addr *out,
		       unsigned int max, struct pxfer_err *err);

#endif
