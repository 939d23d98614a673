// SPDX-License-Identifier: MIT
/*
 * The rdma transport's rails: the local addresses data can leave by, one
 * per port. A port's rail is the address of its first RoCE v2 GID that
 * holds an IPv4 address, else of its first that holds a global IPv6 one:
 * binding a connection to that address is what makes rdma_cm use that
 * device and port (as --device does for one device, probe.c). The prefix
 * is the one the GID's network device has the address with; the NUMA
 * node is the device's, from sysfs.
 *
 * Whether a rail is up is what the port says now (ibv_query_port) and,
 * where this process has a context on the device, what the port events
 * last said (progress.c): a port that went down is down until both say
 * it is active again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sys.h"
#include "transport/rdma/priv.h"
#include "transport/rdma/rdma.h"

/* the device list, empty where the kernel has no RDMA at all */
static struct ibv_device **device_list(int *n, int *err)
{
	struct ibv_device **list = ibv_get_device_list(n);

	*err = 0;
	if (!list) {
		*n = 0;
		if (errno != ENOSYS && errno != ENODEV)
			*err = errno ? -errno : -ENODEV;
	}
	return list;
}

/* a device opened for a look at its ports and GIDs */
struct rdev {
	struct ibv_device *dev;
	struct ibv_context *verbs;
	const char *name;
	unsigned int nports;
	struct ibv_gid_entry *gids;	/* every valid entry, of every port */
	ssize_t ngids;
};

static int rdev_open(struct rdev *r, struct ibv_device *dev)
{
	struct ibv_device_attr attr;
	int ret;

	memset(r, 0, sizeof(*r));
	r->dev = dev;
	r->name = ibv_get_device_name(dev);
	r->verbs = ibv_open_device(dev);
	if (!r->verbs)
		return errno ? -errno : -ENODEV;
	ret = ibv_query_device(r->verbs, &attr) ? (errno ? -errno : -EIO) : 0;
	if (!ret) {
		r->nports = attr.phys_port_cnt;
		r->ngids = rt_gid_table(r->verbs, &r->gids);
		ret = r->ngids < 0 ? (int)r->ngids : 0;
	}
	if (ret) {
		ibv_close_device(r->verbs);
		r->gids = NULL;
	}
	return ret;
}

static void rdev_close(struct rdev *r)
{
	free(r->gids);
	ibv_close_device(r->verbs);
}

/* the device's NUMA node, -1 when sysfs does not say */
static int rdev_numa(const struct rdev *r)
{
	char path[sizeof(r->dev->ibdev_path) + 32];

	snprintf(path, sizeof(path), "%s/device/numa_node", r->dev->ibdev_path);
	return pxfer_sysfs_numa(path);
}

/* whether the port is active now, and was left so by its events */
static int port_up(const struct rdev *r, unsigned int port)
{
	struct ibv_port_attr pa;
	int seen;

	if (ibv_query_port(r->verbs, port, &pa) || pa.state != IBV_PORT_ACTIVE)
		return 0;
	seen = rt_port_state(r->name, port);
	return seen < 0 || seen == IBV_PORT_ACTIVE;
}

static int gid_v4(const union ibv_gid *g)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(g->raw, mapped, sizeof(mapped));
}

/* not unspecified, not link-local (fe80::/10), not IPv4-mapped */
static int gid_v6_global(const union ibv_gid *g)
{
	static const uint8_t zero[16];

	return memcmp(g->raw, zero, sizeof(zero)) && !gid_v4(g) &&
	       !(g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80);
}

/* the GID a rail on @port leaves by, or NULL */
static const struct ibv_gid_entry *rail_gid(const struct rdev *r,
					    unsigned int port)
{
	const struct ibv_gid_entry *v6 = NULL;

	for (ssize_t i = 0; i < r->ngids; i++) {
		const struct ibv_gid_entry *e = &r->gids[i];

		if (e->port_num != port || e->gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (gid_v4(&e->gid))
			return e;
		if (!v6 && gid_v6_global(&e->gid))
			v6 = e;
	}
	return v6;
}

static int mask_bits(const uint8_t *m, size_t len)
{
	int n = 0;

	for (size_t i = 0; i < len; i++)
		n += __builtin_popcount(m[i]);
	return n;
}

/*
 * The prefix of the GID's address on its network device (on any
 * interface if that one does not list it); the whole address if none does.
 */
static uint8_t gid_prefix(const struct ibv_gid_entry *e,
			  const struct ifaddrs *ifs)
{
	char ndev[IF_NAMESIZE] = "";
	int v4 = gid_v4(&e->gid), best = v4 ? 32 : 128, found = 0;

	if (e->ndev_ifindex)
		if_indextoname(e->ndev_ifindex, ndev);
	for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr, *m = i->ifa_netmask;
		int bits;

		if (!a || !m || a->sa_family != (v4 ? AF_INET : AF_INET6))
			continue;
		if (v4 && memcmp(&((const struct sockaddr_in *)a)->sin_addr,
				 e->gid.raw + 12, 4))
			continue;
		if (!v4 && memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
				  e->gid.raw, 16))
			continue;
		bits = v4 ? mask_bits((const uint8_t *)&((const struct sockaddr_in *)m)->sin_addr, 4)
			  : mask_bits((const uint8_t *)&((const struct sockaddr_in6 *)m)->sin6_addr, 16);
		if (!strcmp(i->ifa_name, ndev))
			return bits;
		if (!found)
			best = bits;
		found = 1;
	}
	return best;
}

/* what a rail on @e's port of @r is, all but its address */
static void rail_fill(struct pxfer_rail_addr *ra, const struct rdev *r,
		      const struct ibv_gid_entry *e, const struct ifaddrs *ifs)
{
	ra->prefix = gid_prefix(e, ifs);
	ra->port = e->port_num;
	snprintf(ra->dev, sizeof(ra->dev), "%s", r->name);
	ra->numa_node = rdev_numa(r);
	ra->up = port_up(r, e->port_num);
}

/* the address a GID holds, printable */
static int gid_text(const union ibv_gid *g, char *buf, size_t len)
{
	if (gid_v4(g))
		return rt_gid_ipv4(g, buf, len);
	return inet_ntop(AF_INET6, g->raw, buf, len) ? 0 : -EINVAL;
}

/* names that do not fit a rail are not offered as one */
static int name_fits(const char *name)
{
	return strlen(name) < PXFER_RAIL_DEV;
}

int rt_rails_local(struct pxfer_rail_addr *out, unsigned int max)
{
	struct ibv_device **list;
	struct ifaddrs *ifs = NULL;
	int n = 0, count = 0;

	list = device_list(&n, &count);
	if (!list)
		return count;
	if (getifaddrs(&ifs)) {
		count = -errno;
		goto out;
	}
	for (int i = 0; i < n && (unsigned int)count < max; i++) {
		struct rdev r;

		if (!name_fits(ibv_get_device_name(list[i])) || rdev_open(&r, list[i]))
			continue;
		for (unsigned int p = 1; p <= r.nports && (unsigned int)count < max; p++) {
			struct pxfer_rail_addr *ra = &out[count];
			const struct ibv_gid_entry *e = rail_gid(&r, p);
			struct ibv_port_attr pa;

			if (!e || ibv_query_port(r.verbs, p, &pa) ||
			    pa.state != IBV_PORT_ACTIVE)
				continue;
			memset(ra, 0, sizeof(*ra));
			if (gid_text(&e->gid, ra->addr, sizeof(ra->addr)))
				continue;
			rail_fill(ra, &r, e, ifs);
			ra->up = 1;
			count++;
		}
		rdev_close(&r);
	}
	freeifaddrs(ifs);
out:
	ibv_free_device_list(list);
	return count;
}

/* @addr as the GID that holds it: IPv4 mapped, or IPv6 as it is */
static int addr_gid(const char *addr, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (inet_pton(AF_INET, addr, g->raw + 12) == 1) {
		g->raw[10] = g->raw[11] = 0xff;
		return 0;
	}
	return inet_pton(AF_INET6, addr, g->raw) == 1 ? 0 : -EINVAL;
}

int rt_rail_query(struct pxfer_rail_addr *ra)
{
	struct ibv_device **list;
	struct ifaddrs *ifs = NULL;
	union ibv_gid want;
	int n = 0, ret;

	ret = addr_gid(ra->addr, &want);
	if (ret)
		return ret;
	list = device_list(&n, &ret);
	if (!list)
		return ret ? ret : -ENOENT;
	if (getifaddrs(&ifs)) {
		ret = -errno;
		goto out;
	}
	ret = -ENOENT;
	for (int i = 0; i < n && ret == -ENOENT; i++) {
		struct rdev r;

		if (!name_fits(ibv_get_device_name(list[i])) || rdev_open(&r, list[i]))
			continue;
		for (ssize_t k = 0; k < r.ngids; k++) {
			const struct ibv_gid_entry *e = &r.gids[k];

			if (e->gid_type != IBV_GID_TYPE_ROCE_V2 ||
			    memcmp(e->gid.raw, want.raw, sizeof(want.raw)))
				continue;
			rail_fill(ra, &r, e, ifs);
			ret = 0;
			break;
		}
		rdev_close(&r);
	}
	freeifaddrs(ifs);
out:
	ibv_free_device_list(list);
	return ret;
}

/* one entry of a device list: "dev" or "dev:port" */
static int parse_entry(const char *s, size_t len, char *name,
		       unsigned int *port, struct pxfer_err *err)
{
	const char *colon = memchr(s, ':', len);
	size_t nlen = colon ? (size_t)(colon - s) : len;
	char *end;
	unsigned long p = 0;

	if (!len)
		return pxfer_err_set(err, EINVAL, "an empty entry in the device list (two commas, or one at an end)");
	if (colon) {
		p = strtoul(colon + 1, &end, 10);
		if (end != s + len || colon + 1 == end || p < 1 || p > 255)
			return pxfer_err_set(err, EINVAL, "'%.*s' is not DEVICE or DEVICE:PORT (a port from 1 to 255)",
					     (int)len, s);
	}
	if (!nlen || nlen >= PXFER_RAIL_DEV)
		return pxfer_err_set(err, EINVAL, "'%.*s' is not DEVICE or DEVICE:PORT (a device name of 1 to %d characters)",
				     (int)len, s, PXFER_RAIL_DEV - 1);
	memcpy(name, s, nlen);
	name[nlen] = '\0';
	*port = p;
	return 0;
}

/*
 * The rail of one device: its port @port, or with 0 its first active
 * port that has a rail's GID (its first that has one if none is active).
 */
static int source_of(const struct rdev *r, unsigned int port,
		     const struct ifaddrs *ifs, struct pxfer_rail_addr *ra,
		     struct pxfer_err *err)
{
	const struct ibv_gid_entry *e = NULL;

	if (port > r->nports)
		return pxfer_err_set(err, ENODEV, "%s has no port %u (it has %u)",
				     r->name, port, r->nports);
	if (port) {
		e = rail_gid(r, port);
	} else {
		for (unsigned int p = 1; p <= r->nports; p++) {
			const struct ibv_gid_entry *g = rail_gid(r, p);
			struct ibv_port_attr pa;

			if (g && !e)
				e = g;
			if (g && !ibv_query_port(r->verbs, p, &pa) &&
			    pa.state == IBV_PORT_ACTIVE) {
				e = g;
				break;
			}
		}
	}
	if (!e && port)
		return pxfer_err_set(err, ENOENT, "port %u of %s has no RoCE v2 GID with an IPv4 or a global IPv6 address (is its netdev configured?)",
				     port, r->name);
	if (!e)
		return pxfer_err_set(err, ENOENT, "%s has no RoCE v2 GID with an IPv4 or a global IPv6 address (is its netdev configured?)",
				     r->name);
	memset(ra, 0, sizeof(*ra));
	if (gid_text(&e->gid, ra->addr, sizeof(ra->addr)))
		return pxfer_err_set(err, EINVAL, "cannot print the address of a GID of %s",
				     r->name);
	rail_fill(ra, r, e, ifs);
	return 0;
}

/* the device called @name in @list, opened into @r */
static int open_named(struct ibv_device **list, int n, const char *name,
		      struct rdev *r, struct pxfer_err *err)
{
	int ret;

	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		ret = rdev_open(r, list[i]);
		if (ret)
			return pxfer_err_set(err, -ret, "cannot open RDMA device %s: %s",
					     name, strerror(-ret));
		return 0;
	}
	return pxfer_err_set(err, ENODEV, "no RDMA device named '%s' (see 'rdma link')", name);
}

int pxfer_rdma_sources(const char *devices, struct pxfer_rail_addr *out,
		       unsigned int max, struct pxfer_err *err)
{
	char names[PXFER_RAILS_MAX][PXFER_RAIL_DEV];
	char note[PXFER_ERR_MSG];
	unsigned int ports[PXFER_RAILS_MAX];
	struct ibv_device **list;
	struct ifaddrs *ifs = NULL;
	const char *s = devices;
	unsigned int count = 0;
	int n = 0, ret = 0;

	if (max > PXFER_RAILS_MAX)
		max = PXFER_RAILS_MAX;
	/* every entry parses before any device is looked at */
	for (;;) {
		size_t elen = strcspn(s, ",");

		if (count == max)
			return pxfer_err_set(err, E2BIG, "more than %u devices in '%s'",
					     max, devices);
		ret = parse_entry(s, elen, names[count], &ports[count], err);
		if (ret)
			return ret;
		count++;
		if (!s[elen])
			break;
		s += elen + 1;
	}
	list = device_list(&n, &ret);
	if (ret)
		return pxfer_err_set(err, -ret, "cannot list the RDMA devices: %s",
				     strerror(-ret));
	if (getifaddrs(&ifs)) {
		ret = pxfer_err_set(err, errno, "cannot list the network interfaces: %s",
				    strerror(errno));
		goto out;
	}
	for (unsigned int k = 0; k < count && !ret; k++) {
		struct rdev r;

		ret = open_named(list, n, names[k], &r, err);
		if (ret)
			break;
		ret = source_of(&r, ports[k], ifs, &out[k], err);
		rdev_close(&r);
		for (unsigned int i = 0; !ret && i < k; i++) {
			if (strcmp(out[i].dev, out[k].dev) || out[i].port != out[k].port)
				continue;
			ret = pxfer_err_set(err, EINVAL, "%s port %u is listed twice in '%s'",
					    out[i].dev, out[i].port, devices);
		}
	}
	freeifaddrs(ifs);
	/* done: the note says which address each device is used by */
	note[0] = '\0';
	for (unsigned int i = 0, w = 0; !ret && i < count && w < sizeof(note); i++)
		w += snprintf(note + w, sizeof(note) - w, "%s%s port %u: %s",
			      i ? ", " : "", out[i].dev, out[i].port, out[i].addr);
	if (!ret)
		pxfer_err_set(err, 0, "%s", note);
out:
	if (list)
		ibv_free_device_list(list);
	return ret ? ret : (int)count;
}
