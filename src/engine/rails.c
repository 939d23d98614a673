// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "core/netaddr.h"
#include "engine/rails.h"

void pxfer_rails_to_wire(const struct pxfer_rail_addr *l, unsigned int n,
			 struct pxfer_welcome *w)
{
	w->nrails = 0;
	for (unsigned int i = 0; i < n && w->nrails < PXFER_WIRE_RAILS_MAX; i++) {
		struct pxfer_wire_rail *r = &w->rail[w->nrails];

		if (pxfer_addr_parse(l[i].addr, &r->family, r->addr))
			continue;
		r->prefix = l[i].prefix;
		if (r->prefix > (r->family == 4 ? 32 : 128))
			r->prefix = 0;
		w->nrails++;
	}
}

void pxfer_rail_name(struct pxfer_rail *r)
{
	if (r->local.dev[0] && r->local.port)
		snprintf(r->name, sizeof(r->name), "%s:%u %s -> %s",
			 r->local.dev, r->local.port, r->local.addr, r->remote);
	else if (r->local.dev[0])
		snprintf(r->name, sizeof(r->name), "%s %s -> %s",
			 r->local.dev, r->local.addr, r->remote);
	else
		snprintf(r->name, sizeof(r->name), "%s -> %s", r->local.addr,
			 r->remote);
}

/* whether local rail @l and offered address @o are on one subnet */
static int same_subnet(const struct pxfer_rail_addr *l,
		       const struct pxfer_wire_rail *o)
{
	uint8_t family, addr[16];

	if (pxfer_addr_parse(l->addr, &family, addr) || family != o->family)
		return 0;
	return pxfer_addr_same_subnet(family, addr, o->addr,
				      l->prefix ? l->prefix : o->prefix);
}

unsigned int pxfer_rails_pair(const struct pxfer_rail_addr *l, unsigned int n,
			      const struct pxfer_welcome *w,
			      struct pxfer_rails *out, unsigned int *skipped)
{
	unsigned int taken[PXFER_WIRE_RAILS_MAX] = { 0 };

	out->n = 0;
	*skipped = 0;
	for (unsigned int i = 0; i < n && out->n < PXFER_RAILS_MAX; i++) {
		int pick = -1;

		for (unsigned int k = 0; k < w->nrails; k++) {
			if (!same_subnet(&l[i], &w->rail[k]))
				continue;
			if (pick < 0 || (taken[pick] && !taken[k]))
				pick = (int)k;
		}
		if (pick < 0) {
			(*skipped)++;
			continue;
		}
		taken[pick]++;
		out->r[out->n].local = l[i];
		pxfer_addr_print(w->rail[pick].family, w->rail[pick].addr,
				 out->r[out->n].remote,
				 sizeof(out->r[out->n].remote));
		pxfer_rail_name(&out->r[out->n]);
		out->n++;
	}
	return out->n;
}
