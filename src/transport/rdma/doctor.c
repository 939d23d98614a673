// SPDX-License-Identifier: MIT
/*
 * What pxfer doctor reports of the RDMA side, asked of the devices and
 * the kernel directly: every device and port (state, physical state,
 * link layer, active MTU, the netdev under a RoCE port, NUMA node), every
 * GID table entry with its type and netdev as sysfs gives them (the
 * files show_gids reads), and where rdma_cm goes to reach a peer. This
 * file gathers (diag.c hands it to the command through the ops table's
 * diagnostics); src/cli/doctor_rdma.c judges. Names and text from a
 * device or sysfs are escaped where they come in.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>

#include "core/escape.h"
#include "core/netaddr.h"
#include "core/sys.h"
#include "transport/rdma/doctor.h"
#include "transport/rdma/priv.h"

#define SYS_IB	"/sys/class/infiniband"
#define SYS_NET	"/sys/class/net"
#define CFS_CM	"/sys/kernel/config/rdma_cm"

/* text and its length without the trailing white space (a newline) */
static size_t trimmed(const char *text)
{
	size_t n = strlen(text);

	while (n && (text[n - 1] == '\n' || text[n - 1] == ' ' ||
		     text[n - 1] == '\t'))
		n--;
	return n;
}

enum pxfer_gid_type pxfer_gid_type_parse(const char *text, int ethernet)
{
	size_t n = trimmed(text);

	if (n == strlen("RoCE v2") && !memcmp(text, "RoCE v2", n))
		return PXFER_GID_ROCE_V2;
	/* the kernel's name of type 0: IB on InfiniBand, RoCE v1 on Ethernet */
	if (n == strlen("IB/RoCE v1") && !memcmp(text, "IB/RoCE v1", n))
		return ethernet ? PXFER_GID_ROCE_V1 : PXFER_GID_IB;
	return PXFER_GID_UNKNOWN;
}

/*
 * the first line of a small file whose path is @fmt..., without its
 * newline, into @buf: 0 or -errno (sysfs says EINVAL for an empty entry)
 */
__attribute__((format(printf, 3, 4)))
static int read_line(char *buf, size_t len, const char *fmt, ...)
{
	char path[512];
	va_list ap;
	ssize_t n;
	int fd, ret;

	va_start(ap, fmt);
	ret = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (ret < 0 || (size_t)ret >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* a number from a small file, or @dflt */
__attribute__((format(printf, 2, 3)))
static long read_num(long dflt, const char *fmt, ...)
{
	char path[512], buf[32], *end;
	va_list ap;
	long v;
	int ret;

	va_start(ap, fmt);
	ret = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (ret < 0 || (size_t)ret >= sizeof(path) ||
	    read_line(buf, sizeof(buf), "%s", path))
		return dflt;
	v = strtol(buf, &end, 0);
	return end == buf ? dflt : v;
}

static void escape_into(char *dst, size_t len, const char *raw)
{
	pxfer_escape(dst, len, raw, strlen(raw));
}

static const char *state_name(enum ibv_port_state s)
{
	static const char *const names[] = {
		[IBV_PORT_NOP] = "NOP", [IBV_PORT_DOWN] = "DOWN",
		[IBV_PORT_INIT] = "INIT", [IBV_PORT_ARMED] = "ARMED",
		[IBV_PORT_ACTIVE] = "ACTIVE",
		[IBV_PORT_ACTIVE_DEFER] = "ACTIVE_DEFER",
	};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) && names[s] ?
	       names[s] : "unknown";
}

static const char *phys_name(uint8_t p)
{
	static const char *const names[] = {
		"", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
		"LinkUp", "LinkErrorRecovery", "PhyTest",
	};

	return p < sizeof(names) / sizeof(names[0]) ? names[p] : "unknown";
}

/* the netdev @raw under a RoCE port: its name, MTU and link state */
static void port_netdev(struct pxfer_rdma_port *p, const char *raw)
{
	long flags = read_num(0, SYS_NET "/%s/flags", raw);

	escape_into(p->ndev, sizeof(p->ndev), raw);
	p->ndev_mtu = read_num(-1, SYS_NET "/%s/mtu", raw);
	p->ndev_up = !!(flags & IFF_UP);
	/* carrier cannot be read while the netdev is down */
	p->ndev_carrier = p->ndev_up && read_num(0, SYS_NET "/%s/carrier", raw) == 1;
}

/*
 * one GID table entry of port @p of device @dev (its raw name); the first
 * entry with a netdev names the port's
 */
static void gid_fill(struct pxfer_rdma_gid *g, struct pxfer_rdma_port *p,
		     const char *dev, const struct ibv_gid_entry *e)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *raw = e->gid.raw;
	char text[128];

	g->index = e->gid_index;
	inet_ntop(AF_INET6, raw, g->gid, sizeof(g->gid));
	if (!read_line(text, sizeof(text), SYS_IB "/%s/ports/%u/gid_attrs/types/%u",
		       dev, p->num, g->index))
		g->type = pxfer_gid_type_parse(text, p->ethernet);
	else	/* no sysfs: what verbs said */
		g->type = e->gid_type == IBV_GID_TYPE_ROCE_V2 ? PXFER_GID_ROCE_V2 :
			  !p->ethernet ? PXFER_GID_IB : PXFER_GID_ROCE_V1;
	if (!p->ethernet)
		return;
	if (!read_line(text, sizeof(text), SYS_IB "/%s/ports/%u/gid_attrs/ndevs/%u",
		       dev, p->num, g->index) && text[0]) {
		escape_into(g->ndev, sizeof(g->ndev), text);
		if (!p->ndev[0])
			port_netdev(p, text);
	}
	g->ipv4 = !memcmp(raw, v4mapped, sizeof(v4mapped));
	g->link_local = raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
	if (g->ipv4)
		inet_ntop(AF_INET, raw + 12, g->addr, sizeof(g->addr));
	else
		snprintf(g->addr, sizeof(g->addr), "%s", g->gid);
}

/* the entries of @table (@n of them, every port's) that belong to @p */
static int port_gids(struct pxfer_rdma_port *p, const char *dev,
		     const struct ibv_gid_entry *table, ssize_t n)
{
	static const union ibv_gid zero;
	unsigned int k = 0;

	p->gids = calloc(n > 0 ? n : 1, sizeof(*p->gids));
	if (!p->gids)
		return -ENOMEM;
	for (ssize_t i = 0; i < n; i++) {
		if (table[i].port_num != p->num ||
		    !memcmp(&table[i].gid, &zero, sizeof(zero)))
			continue;
		gid_fill(&p->gids[k++], p, dev, &table[i]);
	}
	p->ngids = k;
	return 0;
}

static void port_fill(struct pxfer_rdma_port *p, const char *dev,
		      const struct ibv_port_attr *pa)
{
	char text[16];

	p->active = pa->state == IBV_PORT_ACTIVE;
	snprintf(p->state, sizeof(p->state), "%s", state_name(pa->state));
	snprintf(p->phys, sizeof(p->phys), "%s", phys_name(pa->phys_state));
	p->ethernet = pa->link_layer == IBV_LINK_LAYER_ETHERNET;
	p->mtu = pa->active_mtu >= IBV_MTU_256 && pa->active_mtu <= IBV_MTU_4096 ?
		 128u << pa->active_mtu : 0;
	p->ndev_mtu = -1;
	if (!read_line(text, sizeof(text), CFS_CM "/%s/ports/%u/default_roce_mode",
		       dev, p->num))
		escape_into(p->roce_mode, sizeof(p->roce_mode), text);
	p->roce_mode_type = pxfer_gid_type_parse(p->roce_mode, 1);
}

/* device @d, opened as @ctx: its ports and their GID tables */
static int dev_fill(struct pxfer_rdma_dev *d, struct ibv_context *ctx,
		    const char *dev)
{
	struct ibv_device_attr da;
	struct ibv_port_attr *pa = NULL;
	struct ibv_gid_entry *table = NULL;
	size_t slots = 0;
	ssize_t n;
	int ret;

	/* both return the errno value itself */
	ret = ibv_query_device(ctx, &da);
	if (ret)
		return ret > 0 ? -ret : -EIO;
	d->ports = calloc(da.phys_port_cnt ? da.phys_port_cnt : 1, sizeof(*d->ports));
	pa = calloc(da.phys_port_cnt ? da.phys_port_cnt : 1, sizeof(*pa));
	ret = -ENOMEM;
	if (!d->ports || !pa)
		goto out;
	for (unsigned int i = 0; i < da.phys_port_cnt; i++) {
		ret = ibv_query_port(ctx, i + 1, &pa[i]);
		if (ret) {
			ret = ret > 0 ? -ret : -EIO;
			goto out;
		}
		slots += pa[i].gid_tbl_len;
	}
	table = calloc(slots ? slots : 1, sizeof(*table));
	ret = -ENOMEM;
	if (!table)
		goto out;
	n = ibv_query_gid_table(ctx, table, slots, 0);
	if (n < 0)
		n = 0;		/* the ports still say their state */
	for (unsigned int i = 0; i < da.phys_port_cnt; i++) {
		struct pxfer_rdma_port *p = &d->ports[i];

		p->num = i + 1;
		d->nports = i + 1;
		port_fill(p, dev, &pa[i]);
		ret = port_gids(p, dev, table, n);
		if (ret)
			goto out;
	}
	ret = 0;
out:
	free(table);
	free(pa);
	return ret;
}

int pxfer_rdma_inventory_init(struct pxfer_rdma_inventory *inv)
{
	struct ibv_device **list;
	int n = 0, ret = 0;

	memset(inv, 0, sizeof(*inv));
	list = ibv_get_device_list(&n);
	if (!list || n <= 0)
		goto out;
	inv->devs = calloc(n, sizeof(*inv->devs));
	if (!inv->devs) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		struct pxfer_rdma_dev *d = &inv->devs[i];
		const char *dev = ibv_get_device_name(list[i]);
		struct ibv_context *ctx;
		char path[128];

		inv->ndevs = i + 1;
		escape_into(d->name, sizeof(d->name), dev);
		snprintf(path, sizeof(path), SYS_IB "/%s/device/numa_node", dev);
		d->numa_node = pxfer_sysfs_numa(path);
		ctx = ibv_open_device(list[i]);
		if (!ctx) {
			d->error = errno ? -errno : -ENODEV;
			continue;
		}
		d->error = dev_fill(d, ctx, dev);
		ibv_close_device(ctx);
		if (d->error == -ENOMEM) {
			ret = -ENOMEM;
			break;
		}
	}
out:
	if (list)
		ibv_free_device_list(list);
	return ret;
}

void pxfer_rdma_inventory_release(struct pxfer_rdma_inventory *inv)
{
	for (unsigned int i = 0; i < inv->ndevs; i++) {
		for (unsigned int j = 0; j < inv->devs[i].nports; j++)
			free(inv->devs[i].ports[j].gids);
		free(inv->devs[i].ports);
	}
	free(inv->devs);
	memset(inv, 0, sizeof(*inv));
}

/* wait for the event that ends a resolution: 0 if it is @want, else -errno */
static int cm_wait(struct rdma_event_channel *ech,
		   enum rdma_cm_event_type want, struct pxfer_err *err)
{
	struct rdma_cm_event *ev;
	int ret;

	if (rdma_get_cm_event(ech, &ev))
		return pxfer_err_set(err, errno, "no rdma_cm event: %s",
				     strerror(errno));
	ret = ev->event == want ? 0 : ev->status < 0 ? ev->status : -EHOSTUNREACH;
	if (ret)
		pxfer_err_set(err, -ret, "%s: %s", rdma_event_str(ev->event),
			      strerror(-ret));
	rdma_ack_cm_event(ev);
	return ret;
}

/* where @id's address resolution went, into @r */
static void route_note(const struct pxfer_rdma_inventory *inv,
		       struct rdma_cm_id *id, struct pxfer_rdma_route *r)
{
	char name[PXFER_RDMA_TEXT];

	if (!id->verbs)
		return;
	escape_into(name, sizeof(name), ibv_get_device_name(id->verbs->device));
	for (unsigned int i = 0; i < inv->ndevs; i++)
		if (!strcmp(inv->devs[i].name, name))
			r->dev = i;
	r->port = id->port_num;
	pxfer_addr_source(rdma_get_local_addr(id), r->src, sizeof(r->src));
	inet_ntop(AF_INET6, id->route.addr.addr.ibaddr.sgid.raw, r->sgid,
		  sizeof(r->sgid));
}

int pxfer_rdma_route_find(const struct pxfer_rdma_inventory *inv,
			  const char *host, const char *bind,
			  struct pxfer_rdma_route *r, struct pxfer_err *err)
{
	struct addrinfo *dst = NULL, *src = NULL;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	char q[PXFER_QUOTE_MAX];
	const char *bad = host;
	int ret;

	memset(r, 0, sizeof(*r));
	r->dev = -1;
	ret = pxfer_addr_resolve(host, "0", AF_UNSPEC, 0, &dst);
	if (!ret && bind) {
		bad = bind;
		ret = pxfer_addr_resolve(bind, NULL, AF_UNSPEC, 1, &src);
	}
	if (ret) {
		pxfer_err_set(err, -ret, "cannot resolve %s",
			      pxfer_quote_str(q, sizeof(q), bad));
		goto out;
	}
	ech = rdma_create_event_channel();
	if (!ech) {
		ret = pxfer_err_set(err, errno, "rdma_cm is unavailable: %s",
				    strerror(errno));
		goto out;
	}
	if (rdma_create_id(ech, &id, NULL, RDMA_PS_TCP)) {
		ret = pxfer_err_set(err, errno, "rdma_cm is unavailable: %s",
				    strerror(errno));
		goto out_channel;
	}
	ret = rdma_resolve_addr(id, src ? src->ai_addr : NULL, dst->ai_addr, 2000) ?
	      -errno : 0;
	if (ret)
		pxfer_err_set(err, -ret, "address resolution failed: %s",
			      strerror(-ret));
	else
		ret = cm_wait(ech, RDMA_CM_EVENT_ADDR_RESOLVED, err);
	if (ret)
		goto out_id;
	route_note(inv, id, r);
	ret = rdma_resolve_route(id, 2000) ? -errno : 0;
	if (ret)
		pxfer_err_set(err, -ret, "route resolution failed: %s",
			      strerror(-ret));
	else
		ret = cm_wait(ech, RDMA_CM_EVENT_ROUTE_RESOLVED, err);
out_id:
	rdma_destroy_id(id);
out_channel:
	rdma_destroy_event_channel(ech);
out:
	if (dst)
		freeaddrinfo(dst);
	if (src)
		freeaddrinfo(src);
	return ret;
}
