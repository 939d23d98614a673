// SPDX-License-Identifier: MIT
/* The transports' diagnostics: what needs no transport (diag.h). */
#include <string.h>

#include "core/escape.h"
#include "transport/diag.h"

const char *pxfer_gid_type_name(enum pxfer_gid_type type)
{
	switch (type) {
	case PXFER_GID_IB:
		return "IB";
	case PXFER_GID_ROCE_V1:
		return "RoCE v1";
	case PXFER_GID_ROCE_V2:
		return "RoCE v2";
	default:
		return "unknown type";
	}
}

int pxfer_rdma_dev_find(const struct pxfer_rdma_inventory *inv,
			const char *raw)
{
	char name[PXFER_RDMA_TEXT];

	pxfer_escape(name, sizeof(name), raw, strlen(raw));
	for (unsigned int i = 0; i < inv->ndevs; i++)
		if (!strcmp(inv->devs[i].name, name))
			return i;
	return -1;
}

const struct pxfer_rdma_port *
pxfer_rdma_port_get(const struct pxfer_rdma_inventory *inv, int dev,
		    unsigned int num)
{
	if (dev < 0 || (unsigned int)dev >= inv->ndevs ||
	    num < 1 || num > inv->devs[dev].nports)
		return NULL;
	return &inv->devs[dev].ports[num - 1];
}
