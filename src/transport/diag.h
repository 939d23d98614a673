/* SPDX-License-Identifier: MIT */
/*
 * The transports' diagnostics: what pxfer doctor asks of them, through
 * the `diag` entry of their ops table (transport.h), so that the command
 * needs no transport's own header. A transport gathers the facts (its
 * devices, ports and GIDs, what an option selects, where a connection
 * would go); the command judges them and says what to do. Nothing here
 * is on a transfer's path.
 *
 * The facts of the rdma transport are the inventory below; tcp answers
 * which interface of this host holds an address. Names and text read
 * from a device or sysfs are escaped (core/escape.h) as they are read,
 * ready to print.
 */
#ifndef PXFER_TRANSPORT_DIAG_H
#define PXFER_TRANSPORT_DIAG_H

#include "core/err.h"
#include "transport/transport.h"

enum pxfer_gid_type {
	PXFER_GID_UNKNOWN,
	PXFER_GID_IB,
	PXFER_GID_ROCE_V1,
	PXFER_GID_ROCE_V2,
};

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
	enum pxfer_gid_type roce_mode_type;	/* ... as a GID type */
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

/* pxfer_rdma_dev_find - the device of @inv named @raw (escaped as the
 * inventory's names are), or -1 */
int pxfer_rdma_dev_find(const struct pxfer_rdma_inventory *inv,
			const char *raw);

/* pxfer_rdma_port_get - port @num of device @dev of @inv, or NULL */
const struct pxfer_rdma_port *
pxfer_rdma_port_get(const struct pxfer_rdma_inventory *inv, int dev,
		    unsigned int num);

/* where rdma_cm goes to reach a peer */
struct pxfer_rdma_route {
	int dev;			/* index in the inventory; -1: none */
	unsigned int port;
	char src[PXFER_RDMA_ADDR];	/* the source address */
	char sgid[PXFER_RDMA_ADDR];	/* the source GID, as an IPv6 address */
};

/* what a transfer is asked to do over rdma: the options, and the peer */
struct pxfer_rdma_ask {
	const char *device;		/* --device (A,B,...), or NULL */
	int gid_index;			/* --gid-index, or -1 */
	const char *bind;		/* --bind, or NULL */
	const char *peer;		/* the peer's numeric address, or NULL:
					 * no route to find */
};

/* ... and what the transport makes of it */
struct pxfer_rdma_survey {
	char device[64];		/* --device's first name, or "" */
	int sel_dev;			/* its device (--gid-index alone: the
					 * first), or -1 */
	const char *bind;		/* --bind, or what --device and
					 * --gid-index bind (bind_buf), or NULL */
	char bind_buf[64];
	struct pxfer_err source_err;	/* what send's address selection said
					 * of --device and --gid-index (code 0:
					 * a note of the GID it took) */
	struct pxfer_rdma_route route;
	struct pxfer_err route_err;	/* code 0: rdma_cm resolved address
					 * and route */
	int usable;			/* the route goes out of an active port
					 * of the inventory */
};

struct pxfer_transport_diag {
	/*
	 * rdma: every RDMA device of this host (none is not an error), each
	 * port, each GID. A device that cannot be opened or queried is
	 * listed with its error. 0, or -ENOMEM; released with
	 * inventory_release either way.
	 */
	int (*inventory_init)(struct pxfer_rdma_inventory *inv);
	void (*inventory_release)(struct pxfer_rdma_inventory *inv);
	/*
	 * rdma: what @ask selects (the device of --device, the address send
	 * would bind for --device and --gid-index) and, with ask->peer, where
	 * rdma_cm goes to reach it from that address, as a connection does,
	 * into @out (a device of @inv)
	 */
	void (*survey)(const struct pxfer_rdma_inventory *inv,
		       const struct pxfer_rdma_ask *ask,
		       struct pxfer_rdma_survey *out);
	/*
	 * tcp: the interface of this host that holds the numeric address
	 * ra->addr, with its subnet's prefix, into @ra. 0, or -ENOENT when
	 * none holds it.
	 */
	int (*addr_query)(struct pxfer_rail_addr *ra);
};

#endif
