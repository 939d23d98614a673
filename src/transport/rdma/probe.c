// SPDX-License-Identifier: MIT
/*
 * What the RDMA devices offer, asked of them directly: whether there is
 * one at all, whether an active one routes to a peer (--transport auto),
 * which source address makes rdma_cm use a device and GID (--device,
 * --gid-index), and, with -v, which device, port and GID a connection
 * ended up on. Every look into a port's GID table is here (rails.c asks
 * for a whole table with rt_gid_table).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/netaddr.h"
#include "transport/rdma/priv.h"
#include "transport/rdma/rdma.h"

static const char *gid_type_name(enum ibv_gid_type type)
{
	return type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" :
	       type == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1" : "IB";
}

int pxfer_rdma_available(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);

	if (list)
		ibv_free_device_list(list);
	return n > 0;
}

static int is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

int pxfer_rdma_probe(const char *host, const char *bind_addr,
		     struct pxfer_err *err)
{
	struct rdma_event_channel *ech;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct addrinfo *dst = NULL, *src = NULL;
	struct ibv_port_attr pa;
	int ok = 0, ret;

	if (!pxfer_rdma_available())
		return pxfer_err_set(err, ENODEV, "no RDMA device on this host");
	if (pxfer_addr_resolve(host, "0", AF_UNSPEC, 0, &dst) ||
	    (bind_addr && pxfer_addr_resolve(bind_addr, NULL, AF_UNSPEC, 1, &src))) {
		ret = pxfer_err_set(err, EHOSTUNREACH, "cannot resolve '%s'", host);
		goto out;
	}
	/* rdma_cm resolves loopback to some local device, but connecting
	 * through it fails: this host's own addresses go over tcp */
	if (is_loopback(dst->ai_addr)) {
		ret = pxfer_err_set(err, ENETUNREACH, "%s is a loopback address", host);
		goto out;
	}
	ech = rdma_create_event_channel();
	if (!ech || rdma_create_id(ech, &id, NULL, RDMA_PS_TCP)) {
		ret = pxfer_err_set(err, ENODEV, "rdma_cm is unavailable");
		if (ech)
			rdma_destroy_event_channel(ech);
		goto out;
	}
	if (!rdma_resolve_addr(id, src ? src->ai_addr : NULL, dst->ai_addr, 2000) &&
	    !rdma_get_cm_event(ech, &ev)) {
		ok = ev->event == RDMA_CM_EVENT_ADDR_RESOLVED && id->verbs;
		rdma_ack_cm_event(ev);
	}
	if (ok && !rdma_resolve_route(id, 2000) && !rdma_get_cm_event(ech, &ev)) {
		ok = ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED;
		rdma_ack_cm_event(ev);
	} else {
		ok = 0;
	}
	if (ok && (ibv_query_port(id->verbs, id->port_num, &pa) ||
		   pa.state != IBV_PORT_ACTIVE))
		ok = 0;
	if (ok)
		ret = pxfer_err_set(err, 0, "RDMA device %s port %u routes to %s",
				    ibv_get_device_name(id->verbs->device),
				    id->port_num, host);
	else
		ret = pxfer_err_set(err, EHOSTUNREACH,
				    "no active RDMA device routes to %s", host);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ech);
out:
	if (dst)
		freeaddrinfo(dst);
	if (src)
		freeaddrinfo(src);
	return ret;
}

/* an IPv4-mapped GID (::ffff:a.b.c.d) into "a.b.c.d" */
int rt_gid_ipv4(const union ibv_gid *g, char *buf, size_t len)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(g->raw, prefix, sizeof(prefix)))
		return -EAFNOSUPPORT;
	return inet_ntop(AF_INET, g->raw + 12, buf, len) ? 0 : -EINVAL;
}

int pxfer_rdma_source(const char *device, int gid_index, char *buf,
		      size_t len, struct pxfer_err *err)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	int n = 0, ret = -ENODEV;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (!device || !strcmp(ibv_get_device_name(list[i]), device))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		pxfer_err_set(err, ENODEV, "no RDMA device named '%s' (see 'rdma link')",
			      device ? device : "(any)");
		goto out;
	}
	ret = ibv_query_port(ctx, 1, &pa) ? -errno : 0;
	if (ret) {
		pxfer_err_set(err, -ret, "cannot query port 1 of %s", device);
		goto out_close;
	}
	ret = -ENOENT;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		if (gid_index >= 0 && i != gid_index)
			continue;
		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		/* by default the first RoCE v2 IPv4-mapped GID */
		if (gid_index < 0 && e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (!rt_gid_ipv4(&e.gid, buf, len)) {
			pxfer_err_set(err, 0, "device %s GID index %d is %s (%s)",
				      ibv_get_device_name(ctx->device), i, buf,
				      gid_type_name(e.gid_type));
			ret = 0;
			break;
		}
	}
	if (ret && gid_index >= 0)
		pxfer_err_set(err, -ret, "GID index %d of %s does not exist or holds no IPv4 address",
			      gid_index, ibv_get_device_name(ctx->device));
	else if (ret)
		pxfer_err_set(err, -ret, "%s has no RoCE v2 GID with an IPv4 address (is its netdev configured?)",
			      ibv_get_device_name(ctx->device));
out_close:
	ibv_close_device(ctx);
out:
	if (list)
		ibv_free_device_list(list);
	return ret;
}

/*
 * The valid entries of every port's GID table, in one call: far fewer
 * than the tables' length (1024 a port on rxe), most of them empty.
 */
ssize_t rt_gid_table(struct ibv_context *verbs, struct ibv_gid_entry **out)
{
	struct ibv_device_attr attr;
	struct ibv_gid_entry *e;
	size_t len = 0;
	ssize_t n;

	if (ibv_query_device(verbs, &attr))
		return errno ? -errno : -EIO;
	for (unsigned int p = 1; p <= attr.phys_port_cnt; p++) {
		struct ibv_port_attr pa;

		if (ibv_query_port(verbs, p, &pa))
			return errno ? -errno : -EIO;
		len += pa.gid_tbl_len;
	}
	e = calloc(len ? len : 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	n = ibv_query_gid_table(verbs, e, len, 0);
	if (n < 0) {
		free(e);
		return n;
	}
	*out = e;
	return n;
}

static int find_gid(struct rdma_cm_id *id, const union ibv_gid *gid,
		    const char **type)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(id->verbs, id->port_num, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(id->verbs, id->port_num, i, &e, 0) ||
		    memcmp(e.gid.raw, gid->raw, sizeof(e.gid.raw)))
			continue;
		*type = gid_type_name(e.gid_type);
		return i;
	}
	return -1;
}

/*
 * Say which device, port and GID a connection uses. The index comes from
 * the QP's address vector, not from looking the GID up in the table: a
 * RoCE port lists each address twice, as RoCE v1 and as RoCE v2, and
 * only the QP knows which of the two rdma_cm chose.
 */
void rt_describe_route(struct rdma_cm_id *id, const char *peer)
{
	const union ibv_gid *sgid = &id->route.addr.addr.ibaddr.sgid;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	struct ibv_gid_entry e;
	char gid[INET6_ADDRSTRLEN] = "?";
	const char *type = "unknown type";
	int index = -1;

	if (!pxfer_log_verbose() || !id->verbs)
		return;
	inet_ntop(AF_INET6, sgid->raw, gid, sizeof(gid));
	if (id->qp && !ibv_query_qp(id->qp, &qa, IBV_QP_AV, &init) &&
	    qa.ah_attr.is_global) {
		index = qa.ah_attr.grh.sgid_index;
		if (!ibv_query_gid_ex(id->verbs, id->port_num, index, &e, 0)) {
			type = gid_type_name(e.gid_type);
			inet_ntop(AF_INET6, e.gid.raw, gid, sizeof(gid));
		}
	} else {
		/* no GRH (InfiniBand within a subnet): the port's GID */
		index = find_gid(id, sgid, &type);
	}
	pxfer_verbose("rdma: to %s through device %s port %u, GID index %d (%s, %s)",
		peer, ibv_get_device_name(id->verbs->device), id->port_num,
		index, type, gid);
}
