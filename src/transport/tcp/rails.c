// SPDX-License-Identifier: MIT
/*
 * The tcp transport's rails: the addresses of this host's interfaces
 * that are up (getifaddrs), each with its subnet's prefix, its interface
 * and that interface's NUMA node.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "core/netaddr.h"
#include "core/sys.h"
#include "transport/tcp/priv.h"

/* the prefix length of netmask @sa */
static uint8_t mask_bits(const struct sockaddr *sa)
{
	const uint8_t *p;
	size_t n;
	uint8_t bits = 0;

	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET) {
		p = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
		n = 4;
	} else if (sa->sa_family == AF_INET6) {
		p = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
		n = 16;
	} else {
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		bits += (uint8_t)__builtin_popcount(p[i]);
	return bits;
}

/* the NUMA node of interface @ifname, or -1 */
static int if_numa(const char *ifname)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/class/net/%s/device/numa_node", ifname);
	return pxfer_sysfs_numa(path);
}

/* @ifa as a rail into @ra: 0, or -EINVAL for what is no rail */
static int ifa_rail(const struct ifaddrs *ifa, struct pxfer_rail_addr *ra)
{
	const struct sockaddr *sa = ifa->ifa_addr;

	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return -EINVAL;
	memset(ra, 0, sizeof(*ra));
	if (!inet_ntop(sa->sa_family, sa->sa_family == AF_INET ?
		       (const void *)&((const struct sockaddr_in *)sa)->sin_addr :
		       (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr,
		       ra->addr, sizeof(ra->addr)))
		return -EINVAL;
	ra->prefix = mask_bits(ifa->ifa_netmask);
	snprintf(ra->dev, sizeof(ra->dev), "%s", ifa->ifa_name);
	ra->numa_node = if_numa(ifa->ifa_name);
	ra->up = (ifa->ifa_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING);
	return 0;
}

static int link_local6(const struct sockaddr *sa)
{
	const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

	return sa->sa_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(a);
}

int tcp_rails_local(struct pxfer_rail_addr *out, unsigned int max)
{
	struct ifaddrs *all, *ifa;
	unsigned int n = 0;

	if (getifaddrs(&all))
		return -errno;
	for (ifa = all; ifa && n < max; ifa = ifa->ifa_next) {
		if (ifa->ifa_flags & IFF_LOOPBACK || !ifa->ifa_addr ||
		    link_local6(ifa->ifa_addr))
			continue;
		if (!ifa_rail(ifa, &out[n]) && out[n].up)
			n++;
	}
	freeifaddrs(all);
	return (int)n;
}

int tcp_rail_query(struct pxfer_rail_addr *ra)
{
	struct ifaddrs *all, *ifa;
	struct pxfer_rail_addr r;
	uint8_t fa, fb, a[16], b[16];
	int ret = -ENOENT;

	if (pxfer_addr_parse(ra->addr, &fa, a))
		return -EINVAL;
	if (getifaddrs(&all))
		return -errno;
	for (ifa = all; ifa; ifa = ifa->ifa_next) {
		if (ifa_rail(ifa, &r) || pxfer_addr_parse(r.addr, &fb, b) ||
		    fa != fb || memcmp(a, b, 16))
			continue;
		r.port = 0;
		memcpy(r.addr, ra->addr, sizeof(r.addr));
		*ra = r;
		ret = 0;
		break;
	}
	freeifaddrs(all);
	return ret;
}
