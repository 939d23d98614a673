/* SPDX-License-Identifier: MIT */
/* The tcp transport, as the rest of pxfer sees it: its ops table. */
#ifndef PXFER_TRANSPORT_TCP_H
#define PXFER_TRANSPORT_TCP_H

#include "transport/transport.h"

extern const struct pxfer_transport_ops pxfer_tcp_ops;

#endif
