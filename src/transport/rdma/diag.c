// SPDX-License-Identifier: MIT
/*
 * The rdma transport's diagnostics table (transport/diag.h): the
 * inventory and the routes that doctor.c gathers, and the survey of what
 * --device, --gid-index and --bind select and where a connection to a
 * peer would go, asked the way send asks (pxfer_rdma_source, then
 * rdma_cm from the address it binds).
 */
#include <stdio.h>
#include <string.h>

#include "transport/rdma/doctor.h"
#include "transport/rdma/rdma.h"

static void rt_survey(const struct pxfer_rdma_inventory *inv,
		      const struct pxfer_rdma_ask *ask,
		      struct pxfer_rdma_survey *out)
{
	const struct pxfer_rdma_port *p;

	memset(out, 0, sizeof(*out));
	out->sel_dev = -1;
	out->route.dev = -1;
	out->bind = ask->bind;
	if (ask->device || ask->gid_index >= 0) {
		/* of several devices, the first carries the control
		 * connection and says what is bound, as for send */
		if (ask->device)
			snprintf(out->device, sizeof(out->device), "%.*s",
				 (int)strcspn(ask->device, ","), ask->device);
		out->sel_dev = ask->device ? pxfer_rdma_dev_find(inv, out->device) :
			       inv->ndevs ? 0 : -1;
		if (!pxfer_rdma_source(ask->device ? out->device : NULL,
				       ask->gid_index, out->bind_buf,
				       sizeof(out->bind_buf), &out->source_err) &&
		    !ask->bind)
			out->bind = out->bind_buf;
	}
	if (!ask->peer)
		return;
	pxfer_rdma_route_find(inv, ask->peer, out->bind, &out->route,
			      &out->route_err);
	p = pxfer_rdma_port_get(inv, out->route.dev, out->route.port);
	out->usable = !out->route_err.code && p && p->active;
}

const struct pxfer_transport_diag pxfer_rdma_diag = {
	.inventory_init = pxfer_rdma_inventory_init,
	.inventory_release = pxfer_rdma_inventory_release,
	.survey = rt_survey,
};
