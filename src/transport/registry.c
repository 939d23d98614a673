// SPDX-License-Identifier: MIT
#include <string.h>

#include "transport/rdma/rdma.h"
#include "transport/registry.h"
#include "transport/tcp/tcp.h"

static const struct pxfer_transport_ops *const transports[] = {
	&pxfer_tcp_ops,
	&pxfer_rdma_ops,
};

const struct pxfer_transport_ops *pxfer_transport_find(const char *name)
{
	for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
		if (!strcmp(transports[i]->name, name))
			return transports[i];
	return NULL;
}
