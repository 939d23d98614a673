// SPDX-License-Identifier: MIT
/*
 * pxfer doctor's RDMA sections: every device, port and GID (what the
 * rdma transport's diagnostics gathered, transport/diag.h), what --device and --gid-index
 * select, and the way to HOST: the port rdma_cm takes, whether it is
 * active, the GID it connects from, and the rails (the local RoCE v2
 * addresses, and whether HOST is on their subnet).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/doctor.h"

/* a RoCE v2 packet's headers within the netdev's MTU: IPv6 (40, IPv4's
 * 20 fits too), UDP (8), BTH (12), RETH (16) and ICRC (4) */
#define ROCE_HDRS	80
/* the RDMA MTU below which a RoCE port is not worth using */
#define ROCE_MTU_MIN	1024

/* ---- the RDMA devices ----------------------------------------------------------- */

/* the largest RDMA MTU a RoCE packet over a netdev of MTU @mtu can carry */
static unsigned int roce_mtu_fits(int mtu)
{
	unsigned int m = 4096;

	while (m >= 256 && (int)(m + ROCE_HDRS) > mtu)
		m /= 2;
	return m >= 256 ? m : 0;
}

static void print_gid(const struct pxfer_rdma_port *p,
		      const struct pxfer_rdma_gid *g)
{
	printf("    GID %u: %s, %s", g->index, pxfer_gid_type_name(g->type),
	       p->ethernet ? g->addr : g->gid);
	if (g->ndev[0])
		printf(" on %s", g->ndev);
	if (g->link_local)
		printf(" (link-local: usable only on its own link)");
	putchar('\n');
}

/* what to do about port @p that is not active */
static void fix_port(const struct pxfer_rdma_dev *dv,
		     const struct pxfer_rdma_port *p)
{
	if (p->ethernet && p->ndev[0] && !p->ndev_up)
		doctor_fix("bring its netdev up: ip link set %s up", p->ndev);
	else if (p->ethernet && p->ndev[0] && !p->ndev_carrier)
		doctor_fix("%s is up but has no carrier: check its cable, the switch port or its peer ('ip link show %s')",
			   p->ndev, p->ndev);
	else if (p->ethernet)
		doctor_fix("check the port's link: 'rdma link show %s/%u', 'ip link'",
			   dv->name, p->num);
	else if (!strcmp(p->state, "INIT") || !strcmp(p->state, "ARMED"))
		doctor_fix("no subnet manager has brought the port up: run one on the fabric (opensm, or the switch's)");
	else
		doctor_fix("check the cable and the switch port ('ibstat %s %u')",
			   dv->name, p->num);
}

/* whether port @num of device @dev is the one that counts for a transfer */
static int port_matters(const struct doctor *d, int dev, unsigned int num)
{
	if (d->host && d->sv.route.dev >= 0)
		return dev == d->sv.route.dev && num == d->sv.route.port;
	if (d->sv.sel_dev >= 0)
		return dev == d->sv.sel_dev;
	return !d->host;
}

static void check_port(struct doctor *d, int dev, const struct pxfer_rdma_port *p)
{
	const struct pxfer_rdma_dev *dv = &d->inv.devs[dev];
	int serious = d->rdma && port_matters(d, dev, p->num);
	unsigned int fits;

	/*
	 * A port down is a problem here only for what --device names: with
	 * HOST, the way to it says whether it is the port that counts
	 * (and what to do); without, another port may do.
	 */
	if (!p->active) {
		doctor_finding(d, d->want_rdma && !d->host && d->sv.sel_dev == dev,
			       "%s port %u is %s%s%s", dv->name, p->num, p->state,
			       p->phys[0] ? ", physical state " : "", p->phys);
		if (!d->host)
			fix_port(dv, p);
		return;
	}
	if (!p->ethernet || p->ndev_mtu < 0)
		return;
	fits = roce_mtu_fits(p->ndev_mtu);
	if (fits < ROCE_MTU_MIN) {
		doctor_finding(d, serious,
			       "%s's MTU is %d: RoCE through %s port %u needs at least %d (a %d-byte payload and %d bytes of headers)",
			       p->ndev, p->ndev_mtu, dv->name, p->num,
			       ROCE_MTU_MIN + ROCE_HDRS, ROCE_MTU_MIN, ROCE_HDRS);
		doctor_fix("ip link set %s mtu 1500 (and the same MTU on the peer and the switches between)",
			   p->ndev);
	} else if (p->mtu && p->mtu < fits) {
		doctor_finding(d, 0,
			       "%s port %u sends %u-byte RDMA packets where %s (MTU %d) would carry %u: more packets for the same data",
			       dv->name, p->num, p->mtu, p->ndev, p->ndev_mtu, fits);
	}
}

void doctor_devices(struct doctor *d)
{
	unsigned int ports = 0, active = 0;

	doctor_section("RDMA devices");
	if (!d->inv.ndevs) {
		doctor_finding(d, d->want_rdma,
			       "no RDMA device on this host%s", d->want_rdma ? "" :
			       ": transfers go over tcp");
		doctor_fix("for Soft-RoCE on an Ethernet interface IF: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IF; or use --transport tcp");
		return;
	}
	for (unsigned int i = 0; i < d->inv.ndevs; i++) {
		const struct pxfer_rdma_dev *dv = &d->inv.devs[i];

		if (dv->numa_node >= 0)
			printf("%s: NUMA node %d\n", dv->name, dv->numa_node);
		else
			printf("%s: NUMA node unknown\n", dv->name);
		if (dv->error) {
			doctor_finding(d, d->want_rdma && (int)i == d->sv.sel_dev,
				       "cannot open or query %s: %s", dv->name,
				       strerror(-dv->error));
			doctor_fix("check the driver ('dmesg', 'rdma link show %s') and the permissions of /dev/infiniband",
				   dv->name);
			continue;
		}
		for (unsigned int j = 0; j < dv->nports; j++) {
			const struct pxfer_rdma_port *p = &dv->ports[j];

			printf("  port %u: %s%s%s, %s, active MTU %u", p->num,
			       p->state, p->phys[0] ? ", physical state " : "",
			       p->phys, p->ethernet ? "Ethernet (RoCE)" : "InfiniBand",
			       p->mtu);
			if (p->ndev[0] && p->ndev_mtu >= 0)
				printf(", netdev %s (%s, MTU %d)", p->ndev,
				       !p->ndev_up ? "down" :
				       p->ndev_carrier ? "up" : "no carrier",
				       p->ndev_mtu);
			putchar('\n');
			for (unsigned int k = 0; k < p->ngids; k++)
				print_gid(p, &p->gids[k]);
			if (p->roce_mode[0])
				printf("    rdma_cm's default RoCE mode (configfs): %s\n",
				       p->roce_mode);
			ports++;
			active += p->active;
		}
	}
	for (unsigned int i = 0; i < d->inv.ndevs; i++)
		for (unsigned int j = 0; j < d->inv.devs[i].nports; j++)
			check_port(d, i, &d->inv.devs[i].ports[j]);
	if (active)
		doctor_ok(d, "%u RDMA device(s), %u of %u port(s) active",
			  d->inv.ndevs, active, ports);
	else
		doctor_finding(d, d->want_rdma && !d->host, "no RDMA port is active%s",
			       d->want_rdma ? "" : ": transfers go over tcp");
}

/* ---- the way to HOST ------------------------------------------------------------- */

/* the entry of port @p with GID @gid and type @type, or NULL */
static const struct pxfer_rdma_gid *gid_find(const struct pxfer_rdma_port *p,
					     const char *gid,
					     enum pxfer_gid_type type)
{
	for (unsigned int i = 0; i < p->ngids; i++)
		if (!strcmp(p->gids[i].gid, gid) && p->gids[i].type == type)
			return &p->gids[i];
	return NULL;
}

/*
 * the interface of this host that holds the numeric address @addr (a
 * scope, "%eth0", aside), into @ra with its subnet's prefix: what tcp's
 * rails know of an address. 0, or -ENOENT when none holds it.
 */
static int local_addr(const struct doctor *d, const char *addr,
		      struct pxfer_rail_addr *ra)
{
	memset(ra, 0, sizeof(*ra));
	snprintf(ra->addr, sizeof(ra->addr), "%.*s", (int)strcspn(addr, "%"),
		 addr);
	return d->ip->addr_query(ra);
}

/*
 * whether @addr, a local address, is on HOST's subnet: 1 or 0, with the
 * prefix length of its own in *@prefix; -1 when no interface holds it
 */
static int on_peer_subnet(const struct doctor *d, const char *addr,
			  unsigned int *prefix)
{
	char peer[PXFER_SOURCE_LEN];
	struct pxfer_rail_addr ra;
	uint8_t fa, fb, a[16], b[16];

	*prefix = 0;
	if (local_addr(d, addr, &ra))
		return -1;
	*prefix = ra.prefix;
	snprintf(peer, sizeof(peer), "%.*s", (int)strcspn(d->peer, "%"), d->peer);
	return d->peer[0] && !pxfer_addr_parse(addr, &fa, a) &&
	       !pxfer_addr_parse(peer, &fb, b) && fa == fb &&
	       pxfer_addr_same_subnet(fa, a, b, ra.prefix);
}

/*
 * the GID of port @p to name instead of a bad one: RoCE v2 with an IPv4
 * address, on the peer's subnet if one is; NULL when there is none
 */
static const struct pxfer_rdma_gid *gid_better(const struct doctor *d,
					       const struct pxfer_rdma_port *p)
{
	const struct pxfer_rdma_gid *first = NULL;
	unsigned int prefix;

	for (unsigned int i = 0; i < p->ngids; i++) {
		const struct pxfer_rdma_gid *g = &p->gids[i];

		if (g->type != PXFER_GID_ROCE_V2 || !g->ipv4)
			continue;
		if (on_peer_subnet(d, g->addr, &prefix) == 1)
			return g;
		if (!first)
			first = g;
	}
	return first;
}

static void fix_gid(const struct doctor *d, const struct pxfer_rdma_dev *dv,
		    const struct pxfer_rdma_port *p)
{
	const struct pxfer_rdma_gid *g = gid_better(d, p);
	unsigned int prefix;

	if (g)
		doctor_fix("use --gid-index %u (RoCE v2, %s%s)", g->index, g->addr,
			   on_peer_subnet(d, g->addr, &prefix) == 1 ?
			   ", on HOST's subnet" : "");
	else
		doctor_fix("%s port %u has no RoCE v2 GID with an IPv4 address: give %s one (ip addr add ADDR/PREFIX dev %s)",
			   dv->name, p->num, p->ndev[0] ? p->ndev : "its netdev",
			   p->ndev[0] ? p->ndev : "IF");
}

/* every name of --device A,B,...: does such a device exist? 0, or -1
 * after saying which does not */
static int check_names(struct doctor *d)
{
	const char *p = d->a->device;
	char name[64], q[PXFER_QUOTE_MAX];
	int ret = 0;

	while (p && *p) {
		size_t n = strcspn(p, ",");

		/* DEVICE or DEVICE:PORT */
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, ",:"), p);
		p += n + (p[n] == ',');
		if (pxfer_rdma_dev_find(&d->inv, name) >= 0)
			continue;
		doctor_finding(d, 1, "no RDMA device named %s",
			       pxfer_quote_str(q, sizeof(q), name));
		doctor_fix("name one of the devices above (see also 'rdma link')");
		ret = -1;
	}
	return ret;
}

/* what pxfer_rdma_source, which send uses, made of --device and
 * --gid-index, where the checks above did not already say */
static void check_source(struct doctor *d)
{
	char q[PXFER_QUOTE_MAX];

	if (d->sv.source_err.code) {
		d->bind_problem = 1;
		doctor_finding(d, 1, "pxfer send would refuse them: %s",
			       pxfer_err_msg(&d->sv.source_err));
		doctor_fix("name a device and GID listed above with a RoCE v2 IPv4 address");
	} else if (d->a->bind && strcmp(d->a->bind, d->sv.bind_buf)) {
		d->bind_problem = 1;
		doctor_finding(d, 1, "--bind %s does not match %s, which they bind",
			       pxfer_quote_str(q, sizeof(q), d->a->bind), d->sv.bind_buf);
		doctor_fix("give --bind or --device/--gid-index, not both");
	} else {
		doctor_ok(d, "pxfer send would bind %s: %s", d->sv.bind_buf,
			  pxfer_err_msg(&d->sv.source_err));
	}
}

/*
 * --device and --gid-index: which device, and whether the GID is one
 * pxfer can use: send binds the IPv4 address the GID holds, and rdma_cm
 * then connects from that address's RoCE v2 GID, whatever type the
 * named one has (a RoCE v1 GID with a v2 twin is a note: the twin is
 * used; without one, a RoCE v2 peer cannot reach it)
 */
void doctor_selection(struct doctor *d)
{
	const struct doctor_args *a = d->a;
	const struct pxfer_rdma_dev *dv;
	const struct pxfer_rdma_port *p;
	const struct pxfer_rdma_gid *g = NULL;

	doctor_section("--device and --gid-index");
	if (!d->inv.ndevs) {
		d->bind_problem = 1;
		printf("no RDMA device (see above)\n");
		return;
	}
	if (check_names(d)) {
		d->bind_problem = 1;
		return;
	}
	if (d->sv.sel_dev < 0) {	/* send's own words, as for "rxe0:1,..." */
		check_source(d);
		return;
	}
	dv = &d->inv.devs[d->sv.sel_dev];
	p = pxfer_rdma_port_get(&d->inv, d->sv.sel_dev, 1);
	if (a->gid_index < 0 || !p) {
		check_source(d);
		return;
	}
	for (unsigned int i = 0; i < p->ngids; i++)
		if ((int)p->gids[i].index == a->gid_index)
			g = &p->gids[i];
	if (!g) {
		d->bind_problem = 1;
		doctor_finding(d, 1, "--gid-index %d: %s port 1 has no such GID",
			       a->gid_index, dv->name);
		fix_gid(d, dv, p);
	} else if (!p->ethernet) {
		d->bind_problem = 1;
		doctor_finding(d, 1, "--gid-index %d: %s is InfiniBand, where --gid-index does not apply",
			       a->gid_index, dv->name);
		doctor_fix("use --bind with the address of its IPoIB interface");
	} else if (!g->ipv4) {
		d->bind_problem = 1;
		doctor_finding(d, 1,
			       "a GID the peer cannot use: --gid-index %d of %s is %s, %s, an IPv6 address%s; pxfer connects from the IPv4 address of a RoCE v2 GID",
			       a->gid_index, dv->name, pxfer_gid_type_name(g->type),
			       g->addr, g->link_local ?
			       " usable only on its own link" : "");
		fix_gid(d, dv, p);
	} else if (g->type != PXFER_GID_ROCE_V2) {
		const struct pxfer_rdma_gid *v2 = gid_find(p, g->gid,
							    PXFER_GID_ROCE_V2);

		/* with a RoCE v2 GID for the same address, that one is used */
		if (v2) {
			doctor_finding(d, 0,
				       "--gid-index %d of %s is the %s GID of %s: rdma_cm connects over RoCE v2, so a transfer would go through GID index %u, not %d",
				       a->gid_index, dv->name,
				       pxfer_gid_type_name(g->type), g->addr,
				       v2->index, a->gid_index);
			doctor_fix("use --gid-index %u, the RoCE v2 GID of %s",
				   v2->index, v2->addr);
		} else {
			doctor_finding(d, 1,
				       "a GID the peer cannot use: --gid-index %d of %s is %s (%s), and no RoCE v2 GID holds that address: a RoCE v2 peer cannot reach it",
				       a->gid_index, dv->name,
				       pxfer_gid_type_name(g->type), g->addr);
			fix_gid(d, dv, p);
		}
	} else {
		doctor_ok(d, "--gid-index %d of %s is RoCE v2, %s", a->gid_index,
			  dv->name, g->addr);
	}
	if (!d->bind_problem)
		check_source(d);
}

/* the GID rdma_cm takes for the routed port: the type its configfs
 * default_roce_mode names, RoCE v2 when it names none */
static void check_route_gid(struct doctor *d, const struct pxfer_rdma_dev *dv,
			    const struct pxfer_rdma_port *p)
{
	enum pxfer_gid_type mode = PXFER_GID_ROCE_V2;
	const struct pxfer_rdma_gid *g, *v1;

	if (!p->ethernet)
		return;		/* InfiniBand: the port GID, no choice */
	if (p->roce_mode[0])
		mode = p->roce_mode_type;
	g = gid_find(p, d->sv.route.sgid, mode);
	if (mode == PXFER_GID_ROCE_V2 && g) {
		doctor_ok(d, "rdma_cm would use GID index %u (RoCE v2, %s)", g->index,
			  g->addr);
		return;
	}
	v1 = gid_find(p, d->sv.route.sgid, PXFER_GID_ROCE_V1);
	if (mode != PXFER_GID_ROCE_V2) {
		doctor_finding(d, d->rdma,
			       "a GID the peer cannot use: rdma_cm on %s port %u is set to %s (configfs default_roce_mode), so it would connect from GID index %d, which a RoCE v2 peer cannot reach",
			       dv->name, p->num, p->roce_mode, g ? (int)g->index : -1);
		doctor_fix("echo 'RoCE v2' > /sys/kernel/config/rdma_cm/%s/ports/%u/default_roce_mode",
			   dv->name, p->num);
	} else {
		doctor_finding(d, d->rdma,
			       "a GID the peer cannot use: %s has %s on %s port %u, no RoCE v2 GID: a RoCE v2 peer cannot reach it",
			       d->sv.route.src, v1 ? "only a RoCE v1 GID" : "no GID",
			       dv->name, p->num);
		doctor_fix("enable RoCE v2 on %s (the NIC's RoCE mode), or use --transport tcp",
			   dv->name);
	}
}

/* the rails: every RoCE v2 address of a port, and whether HOST is on its
 * subnet */
static unsigned int print_rails(struct doctor *d)
{
	unsigned int on = 0, prefix;

	for (unsigned int i = 0; i < d->inv.ndevs; i++) {
		const struct pxfer_rdma_dev *dv = &d->inv.devs[i];

		for (unsigned int j = 0; j < dv->nports; j++) {
			const struct pxfer_rdma_port *p = &dv->ports[j];

			for (unsigned int k = 0; k < p->ngids; k++) {
				const struct pxfer_rdma_gid *g = &p->gids[k];
				int same;

				if (g->type != PXFER_GID_ROCE_V2 || g->link_local)
					continue;
				same = on_peer_subnet(d, g->addr, &prefix);
				printf("rail: %s:%u %s", dv->name, p->num, g->addr);
				if (same < 0)
					printf(": no interface holds it");
				else if (same)
					printf("/%u -> %s", prefix, d->hostp);
				else
					printf("/%u not on %s's subnet", prefix,
					       d->hostp);
				if (!p->active)
					printf(" (port %s)", p->state);
				putchar('\n');
				on += same == 1 && p->active;
			}
		}
	}
	return on;
}

/* whether port @p would carry the way to HOST: it holds the source
 * address, or (without one) an address on HOST's subnet */
static int on_the_way(const struct doctor *d, const struct pxfer_rdma_port *p)
{
	unsigned int prefix;

	for (unsigned int k = 0; p->ethernet && k < p->ngids; k++) {
		const struct pxfer_rdma_gid *g = &p->gids[k];

		if (g->link_local)
			continue;
		if (d->sv.bind ? !strcmp(g->addr, d->sv.bind) :
		    on_peer_subnet(d, g->addr, &prefix) == 1)
			return 1;
	}
	return 0;
}

/* no route: the ports that would have carried it, and why they did not */
static void explain_no_route(struct doctor *d)
{
	unsigned int ways = 0, down = 0;

	for (unsigned int i = 0; i < d->inv.ndevs; i++)
		for (unsigned int j = 0; j < d->inv.devs[i].nports; j++) {
			const struct pxfer_rdma_port *p = &d->inv.devs[i].ports[j];

			ways += on_the_way(d, p);
			down += on_the_way(d, p) && !p->active;
		}
	if (!down) {
		doctor_finding(d, d->want_rdma, "no RDMA device routes to %s: %s",
			       d->peer, pxfer_err_msg(&d->sv.route_err));
		if (!ways)
			doctor_fix("no RDMA port has %s: give the RoCE interface an address on %s's subnet, or route %s through it ('ip route get %s' names the interface the kernel picks)",
				   d->sv.bind ? "the source address" :
				   "an address on HOST's subnet",
				   d->hostp, d->peer, d->peer);
		else
			doctor_fix("the port is active: check that %s answers on that link ('ip neigh', 'ping %s') and that 'ip route get %s' goes out of its RoCE interface",
				   d->peer, d->peer, d->peer);
		return;
	}
	printf("rdma_cm finds no way to %s: %s\n", d->peer,
	       pxfer_err_msg(&d->sv.route_err));
	for (unsigned int i = 0; i < d->inv.ndevs; i++)
		for (unsigned int j = 0; j < d->inv.devs[i].nports; j++) {
			const struct pxfer_rdma_port *p = &d->inv.devs[i].ports[j];

			if (!on_the_way(d, p) || p->active)
				continue;
			doctor_finding(d, d->want_rdma, "%s port %u, which %s, is %s",
				       d->inv.devs[i].name, p->num, d->sv.bind ?
				       "holds the source address" :
				       "has an address on HOST's subnet", p->state);
			fix_port(&d->inv.devs[i], p);
		}
}

void doctor_route(struct doctor *d)
{
	const struct pxfer_rdma_port *p;
	char ifp[PXFER_ESCAPE_LEN(PXFER_RAIL_DEV)];
	struct pxfer_rail_addr ra;
	unsigned int rails;

	printf("\nthe way to %s\n", d->hostp);
	if (!d->peer[0]) {
		doctor_finding(d, 1, "cannot resolve %s", d->hostp);
		doctor_fix("check the name ('getent hosts %s') or give an address",
			   d->hostp);
		return;
	}
	printf("%s is %s", d->hostp, d->peer);
	if (!local_addr(d, d->peer, &ra))
		printf(", an address of this host (%s)",
		       pxfer_escape(ifp, sizeof(ifp), ra.dev, strlen(ra.dev)));
	putchar('\n');
	if (d->tcp) {
		doctor_ok(d, "--transport tcp: a transfer to %s does not use RDMA",
			  d->peer);
		return;
	}
	if (!d->inv.ndevs) {
		printf("no RDMA device: no RDMA route to %s\n", d->peer);
		return;
	}
	if (d->peer_loopback) {
		doctor_finding(d, d->want_rdma, d->want_rdma ?
			       "%s is a loopback address: rdma cannot connect through it" :
			       "%s is a loopback address: pxfer reaches this host over tcp",
			       d->peer);
		if (d->want_rdma)
			doctor_fix("give an address of this host's RDMA interface, or use --transport tcp");
		return;
	}
	if (d->bind_problem) {
		printf("no route checked: --device and --gid-index cannot be used as given\n");
		return;
	}
	if (d->sv.bind)
		printf("from %s%s\n", d->sv.bind, d->a->bind ? "" :
		       " (the address --device or --gid-index binds)");
	p = pxfer_rdma_port_get(&d->inv, d->sv.route.dev, d->sv.route.port);
	if (d->sv.route_err.code || !p) {
		if (!d->sv.route_err.code)	/* a device that came after the listing */
			pxfer_err_set(&d->sv.route_err, ENODEV,
				      "it went through a device not listed above");
		explain_no_route(d);
	} else if (!p->active) {
		doctor_finding(d, d->want_rdma,
			       "%s port %u, the port that routes to %s, is %s",
			       d->inv.devs[d->sv.route.dev].name, p->num, d->peer, p->state);
		fix_port(&d->inv.devs[d->sv.route.dev], p);
	} else {
		doctor_ok(d, "rdma_cm reaches %s through %s port %u, from %s",
			  d->peer, d->inv.devs[d->sv.route.dev].name, p->num,
			  d->sv.route.src);
		check_route_gid(d, &d->inv.devs[d->sv.route.dev], p);
	}
	rails = print_rails(d);
	if (!rails && d->usable)
		doctor_finding(d, 0, "no active RDMA port has an address on %s's subnet: RoCE v2 crosses routers, by the route the kernel has",
			       d->hostp);
	if (d->usable)
		doctor_ok(d, "a transfer to %s would use rdma", d->hostp);
	else if (!d->want_rdma)
		doctor_finding(d, 0, "a transfer to %s would go over tcp (--transport auto)",
			       d->hostp);
}

/* what the options select, and where a transfer would go */
void doctor_survey(struct doctor *d)
{
	const struct doctor_args *a = d->a;
	const struct pxfer_rdma_ask ask = {
		.device = a->device,
		.gid_index = a->gid_index,
		.bind = a->bind,
		/* the way to HOST, where rdma could take it */
		.peer = d->host && d->peer[0] && !d->peer_loopback && !d->tcp &&
			d->inv.ndevs ? d->peer : NULL,
	};

	d->rd->survey(&d->inv, &ask, &d->sv);
	if (ask.peer) {
		d->usable = d->sv.usable;
		d->rdma = d->usable;
	} else if (!d->host && !d->tcp) {
		for (unsigned int i = 0; i < d->inv.ndevs; i++)
			for (unsigned int j = 0; j < d->inv.devs[i].nports; j++)
				d->rdma |= d->inv.devs[i].ports[j].active;
	}
	if (d->want_rdma)
		d->rdma = 1;
}
