// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pxfer/pxfer.h"
#include "core/limits.h"
#include "core/log.h"
#include "transport/choose.h"
#include "transport/rdma/rdma.h"
#include "transport/tcp/tcp.h"

/* what a connection registers besides its ring: message buffers */
#define CONN_PINNED (2u << 20)

static const char no_rdma[] =
	"no RDMA device on this host (load rdma_rxe or siw for Soft-RoCE, or use --transport tcp)";

/* --device / --gid-index: the address to bind so that rdma_cm uses them */
static int pick_source(struct pxfer_transport_choice *c)
{
	struct pxfer_err err = { 0 };

	if (pxfer_rdma_source(c->device, c->gid_index, c->bind_buf,
			      sizeof(c->bind_buf), &err))
		return pxfer_error("cannot use %s: %s",
			     c->device ? c->device : "that GID",
			     pxfer_err_msg(&err));
	if (c->bind && strcmp(c->bind, c->bind_buf))
		return pxfer_error("--bind %s does not match %s; give one or the other",
			     c->bind, pxfer_err_msg(&err));
	pxfer_verbose("rdma: %s, so binding %s", pxfer_err_msg(&err), c->bind_buf);
	c->bind = c->bind_buf;
	return 0;
}

int pxfer_transport_resolve(struct pxfer_transport_choice *c)
{
	if (!c->name)
		c->name = "auto";
	/* several devices: the first says where the control connection
	 * goes, and each is a rail */
	if (c->device && strchr(c->device, ',')) {
		size_t n = strcspn(c->device, ",");

		if (!n || n >= sizeof(c->first)) {
			pxfer_error("--device takes device names separated by commas, not '%s'",
			      c->device);
			return PXFER_EXIT_USAGE;
		}
		memcpy(c->first, c->device, n);
		c->first[n] = 0;
		c->devices = c->device;
		c->device = c->first;
	}
	if (c->device || c->gid_index >= 0) {
		if (!strcmp(c->name, "tcp")) {
			pxfer_error("--device and --gid-index apply to the rdma transport, not tcp");
			return PXFER_EXIT_USAGE;
		}
		if (pick_source(c))
			return PXFER_EXIT_USAGE;
		c->name = "rdma";
	}
	if (!strcmp(c->name, "auto"))
		return 0;
	if (!pxfer_transport_find(c->name)) {
		pxfer_error("transport '%s' is not available in this build (use 'tcp' or 'auto')",
		      c->name);
		return PXFER_EXIT_USAGE;
	}
	if (!strcmp(c->name, "rdma") && !pxfer_rdma_available()) {
		pxfer_error("%s", no_rdma);
		return PXFER_EXIT_NET;
	}
	return 0;
}

const struct pxfer_transport_ops *
pxfer_transport_for_host(const struct pxfer_transport_choice *c,
			 const char *host)
{
	const struct pxfer_transport_ops *t;
	struct pxfer_err err = { 0 };

	if (strcmp(c->name, "auto"))
		return pxfer_transport_find(c->name);
	t = pxfer_rdma_probe(host, c->bind, &err) ? &pxfer_tcp_ops
						  : &pxfer_rdma_ops;
	pxfer_verbose("transport auto: %s, so %s", pxfer_err_msg(&err), t->name);
	return t;
}

unsigned int pxfer_transport_for_listen(const struct pxfer_transport_choice *c,
					const struct pxfer_transport_ops **out,
					int *optional)
{
	*optional = 0;
	if (strcmp(c->name, "auto")) {
		out[0] = pxfer_transport_find(c->name);
		return 1;
	}
	out[0] = &pxfer_tcp_ops;
	if (!pxfer_rdma_available())
		return 1;
	out[1] = &pxfer_rdma_ops;
	*optional = 1;
	return 2;
}

int pxfer_transport_memlock(const struct pxfer_transport_ops *t,
			    unsigned int workers, unsigned int slots,
			    uint32_t chunk, struct pxfer_err *err)
{
	uint64_t need, limit;
	char n[32], l[32];

	if (!t->pins_memory)
		return 0;
	need = (uint64_t)workers * slots * (chunk + t->ring_hdr) + CONN_PINNED;
	if (!pxfer_memlock_check(need, &limit))
		return 0;
	return pxfer_err_set(err, ENOMEM,
			     "cannot register %s of ring memory with the RDMA device: the memlock limit is %s "
			     "(raise it with 'ulimit -l %llu' or more, or in /etc/security/limits.conf; "
			     "or use fewer workers (-j) or a smaller --ring-mem on the receiver)",
			     pxfer_human(n, sizeof(n), need),
			     pxfer_human(l, sizeof(l), limit),
			     (unsigned long long)(need + 1023) / 1024);
}

/* the next name of comma-separated @*p into @buf: 1, or 0 at the end */
static int next_item(const char **p, char *buf, size_t len)
{
	size_t n = strcspn(*p, ",");

	if (!**p)
		return 0;
	snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), *p);
	*p += n + ((*p)[n] == ',');
	return 1;
}

int pxfer_transport_rails(const struct pxfer_transport_choice *c,
			  const struct pxfer_transport_ops *t, const char *spec,
			  struct pxfer_rail_addr *out)
{
	const char *p = c->devices ? c->devices : spec;
	struct pxfer_err err;
	char item[64];
	int n = 0, ret;

	if (!p)
		return 0;
	if (!c->devices && !strcmp(spec, "auto")) {
		ret = t->rails_local ? t->rails_local(out, PXFER_RAILS_MAX) : 0;
		if (ret < 0) {
			pxfer_error("cannot list this host's addresses for --rails auto: %s",
			      strerror(-ret));
			return -PXFER_EXIT_LOCAL;
		}
		return ret;
	}
	while (n < PXFER_RAILS_MAX && next_item(&p, item, sizeof(item))) {
		struct pxfer_rail_addr *ra = &out[n];

		memset(ra, 0, sizeof(*ra));
		ra->numa_node = -1;
		ra->up = 1;
		if (c->devices) {
			if (pxfer_rdma_source(item, c->gid_index, ra->addr,
					      sizeof(ra->addr), &err)) {
				pxfer_error("cannot use %s: %s", item,
				      pxfer_err_msg(&err));
				return -PXFER_EXIT_USAGE;
			}
			snprintf(ra->dev, sizeof(ra->dev), "%.31s", item);
		} else {
			snprintf(ra->addr, sizeof(ra->addr), "%s", item);
		}
		ret = t->rail_query ? t->rail_query(ra) : 0;
		if (ret == -ENOENT) {
			pxfer_error("--rails: no %s of this host has the address %s",
			      t->pins_memory ? "RDMA device" : "interface", ra->addr);
			return -PXFER_EXIT_USAGE;
		}
		n++;
	}
	return n;
}
