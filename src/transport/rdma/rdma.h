/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport, as the rest of pxfer sees it: its ops table, the
 * device probing that transport choice needs, and what pxfer doctor
 * reports of the devices. Everything else about it is private to
 * transport/rdma/ (priv.h).
 */
#ifndef PXFER_TRANSPORT_RDMA_H
#define PXFER_TRANSPORT_RDMA_H

#include <stddef.h>
#include "transport/transport.h"

extern const struct pxfer_transport_ops pxfer_rdma_ops;

/* pxfer_rdma_available - 1 if this host has an RDMA device at all */
int pxfer_rdma_available(void);

/*
 * pxfer_rdma_probe - 1 if an active RDMA device routes to @host (so
 * --transport auto picks rdma), 0 if not; describes the choice in @why.
 */
int pxfer_rdma_probe(const char *host, const char *bind, char *why, size_t len);

/*
 * pxfer_rdma_source - the IPv4 address (into @buf) that makes rdma_cm use
 * @device (NULL: any) and its GID @gid_index (-1: the first RoCE v2
 * IPv4-mapped GID): binding to it is how --device and --gid-index take
 * effect. 0, or -errno with the reason in @why.
 */
int pxfer_rdma_source(const char *device, int gid_index, char *buf,
		      size_t len, char *why, size_t wlen);

/*
 * pxfer_rdma_sources - one rail for each entry of @devices, a comma-
 * separated list of "DEVICE" or "DEVICE:PORT" ("rxe0,rxe2:1"): the
 * address rdma_cm must bind to use that device and port (its first RoCE
 * v2 GID holding an IPv4 address, else a global IPv6 one; without a port,
 * the device's first active port that has one), with its prefix, NUMA
 * node and whether the port is up, at most @max (and PXFER_RAILS_MAX)
 * into @out, in the order listed. How many, or -errno with the reason in @why: -EINVAL (an entry
 * that does not parse, or is listed twice), -ENODEV (no such device or
 * port), -ENOENT (no such GID), -E2BIG (more than @max). On success @why
 * names each device's address.
 */
int pxfer_rdma_sources(const char *devices, struct pxfer_rail_addr *out,
		       unsigned int max, char *why, size_t len);

/*
 * What pxfer doctor reports of the RDMA side (doctor.c): every device,
 * port and GID table entry, and the route rdma_cm takes to a peer. It
 * only gathers; the command judges. Names and text read from a device
 * or sysfs are escaped (core/escape.h) as they are read, ready to print.
 */
enum pxfer_gid_type {
	PXFER_GID_UNKNOWN,
	PXFER_GID_IB,
	PXFER_GID_ROCE_V1,
	PXFER_GID_ROCE_V2,
};

/*
 * pxfer_gid_type_parse - a GID's type from what sysfs says of it
 * (ports/N/gid_attrs/types/IDX: "IB/RoCE v1" or "RoCE v2", a newline
 * after it or not) on a port whose link layer is Ethernet (@ethernet:
 * "IB/RoCE v1" means RoCE v1) or InfiniBand (it means IB). Anything else
 * is PXFER_GID_UNKNOWN.
 */
enum pxfer_gid_type pxfer_gid_type_parse(const char *text, int ethernet);

/* pxfer_gid_type_name - "IB", "RoCE v1", "RoCE v2" or "unknown type" */
const char *pxfer_gid_type_name(enum pxfer_gid_type type);

#define PXFER_RDMA_TEXT	64	/* a name or state, escaped and cut to fit */
#define PXFER_RDMA_ADDR	64	/* an address as text (PXFER_SOURCE_LEN) */

/* a GID table entry that is not all zeros */
struct pxfer_rdma_gid {
	unsigned int index;
	enum pxfer_gid_type type;
	char gid[PXFER_RDMA_ADDR];	/* as an IPv6 address */
	char addr[PXFER_RDMA_ADDR];	/* RoCE: its IP address, IPv4 if mapped */
	int ipv4;			/* RoCE: an IPv4-mapped GID */
	int link_local;			/* RoCE: fe80::/10, usable on one link */
	char ndev[PXFER_RDMA_TEXT];	/* RoCE: its netdev ("" if unknown) */
};

struct pxfer_rdma_port {
	unsigned int num;
	int active;			/* its state is ACTIVE */
	char state[16];			/* DOWN, INIT, ARMED, ACTIVE, ... */
	char phys[32];			/* LinkUp, Disabled, Polling, ... or "" */
	int ethernet;			/* link layer Ethernet (RoCE), else IB */
	unsigned int mtu;		/* the active MTU, bytes */
	char ndev[PXFER_RDMA_TEXT];	/* RoCE: its netdev ("" if unknown) */
	int ndev_mtu;			/* the netdev's MTU; -1 unknown */
	int ndev_up;			/* the netdev is administratively up */
	int ndev_carrier;		/* ... and has a carrier */
	char roce_mode[16];		/* rdma_cm's default_roce_mode set in
					 * configfs, "" where it is not */
	unsigned int ngids;
	struct pxfer_rdma_gid *gids;
};

struct pxfer_rdma_dev {
	char name[PXFER_RDMA_TEXT];
	int error;			/* -errno: cannot be opened or queried */
	int numa_node;			/* -1: unknown, or no NUMA */
	unsigned int nports;
	struct pxfer_rdma_port *ports;
};

struct pxfer_rdma_inventory {
	unsigned int ndevs;
	struct pxfer_rdma_dev *devs;	/* in ibv_get_device_list's order */
};

/*
 * pxfer_rdma_inventory_init - every RDMA device of this host (none is not
 * an error), each port, each GID. A device that cannot be opened or
 * queried is listed with its error. 0, or -ENOMEM; released with
 * pxfer_rdma_inventory_release either way.
 */
int pxfer_rdma_inventory_init(struct pxfer_rdma_inventory *inv);
void pxfer_rdma_inventory_release(struct pxfer_rdma_inventory *inv);

/* where rdma_cm goes to reach a peer */
struct pxfer_rdma_route {
	int dev;			/* index in the inventory; -1: none */
	unsigned int port;
	char src[PXFER_RDMA_ADDR];	/* the source address */
	char sgid[PXFER_RDMA_ADDR];	/* the source GID, as an IPv6 address */
};

/*
 * pxfer_rdma_route_find - resolve the address, then the route, to the
 * numeric address @host from @bind (NULL: the kernel's choice), as a
 * connection does, and say where it went in @r (a device of @inv). 0 when
 * both resolved; -errno when the address or the route did not, with why
 * in @why (@r says what was found before it failed).
 */
int pxfer_rdma_route_find(const struct pxfer_rdma_inventory *inv,
			  const char *host, const char *bind,
			  struct pxfer_rdma_route *r, char *why, size_t len);

#endif
