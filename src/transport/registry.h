/* SPDX-License-Identifier: MIT */
/*
 * The transports this build has, by name. The registry is the one place
 * above the interface that knows every transport; the transports know
 * only the interface (transport.h).
 */
#ifndef PXFER_TRANSPORT_REGISTRY_H
#define PXFER_TRANSPORT_REGISTRY_H

#include "transport/transport.h"

/* pxfer_transport_find - the ops for "tcp" or "rdma", or NULL */
const struct pxfer_transport_ops *pxfer_transport_find(const char *name);

#endif
