// SPDX-License-Identifier: MIT
/*
 * The rdma transport's data path: chunks written into the receiver's ring.
 *
 * Data connection: RC QP on its device's shared receive queue. A chunk is
 * an RDMA WRITE of the payload into the granted slot's payload area
 * followed by a WRITE_WITH_IMM of the chunk descriptor into the slot's
 * header room; the immediate value is the slot number. RC ordering means
 * the receiver's completion for the second write implies the payload is
 * in place. The engine's credits bound the chunks in flight by the ring
 * size, and every chunk consumes one shared receive, which the progress
 * thread reposts at once: the SRQ always holds RDMA_SRQ_BASE + the slots
 * of every ring registered on the device, more than can ever be
 * outstanding.
 *
 * No memory region is remotely accessible through its own key: every
 * queue pair of a side on one device shares that device's protection
 * domain, those of peers that have proven nothing yet included. The
 * receiver registers a ring (with the PD of its connection's device) for
 * local access and for binding windows, and, once the data connection has
 * proven the session key (the engine calls ring_register only then),
 * binds a type 2 memory window over it to that connection's QP: a write
 * through the window's key from any other QP fails with a remote access
 * error and lands nothing. The window goes before its QP does
 * (rt_conn_free). A device without type 2 windows gets the old
 * registration, with a warning.
 *
 * The receiver describes its ring to the sender in DATA_WELCOME's blob
 * (ring_desc.c), whose MAC the sender checks. The progress thread queues
 * slots on the connection's slot queue for its worker to take: on the
 * receiver each slot a chunk arrived in, on the sender each slot whose
 * chunk has been sent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/sys.h"
#include "transport/rdma/priv.h"
#include "transport/rdma/ring_desc.h"

static int bind_done(struct rdma_conn *c)
{
	return atomic_load(&c->mw_bound) || atomic_load(&c->wc_error) ||
	       atomic_load(&c->port_down);
}

/*
 * A type 2 window over all of @c's ring, bound to @c's QP: its key is the
 * one the peer gets. 0 or -errno.
 */
static int ring_window(struct rdma_conn *c, const struct pxfer_ring *r,
		       uint32_t *rkey)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	int ret;

	c->ring_mw = ibv_alloc_mw(c->dev->pd, IBV_MW_TYPE_2);
	if (!c->ring_mw)
		return errno ? -errno : -ENOMEM;
	/* its completion, like any signaled work request's, needs room */
	ret = rt_cq_reserve(c->dev, 1);
	if (ret)
		return ret;
	c->cq_share++;
	wr.wr_id = WR_ID(WR_BIND, 0);
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = c->ring_mw;
	wr.bind_mw.rkey = ibv_inc_rkey(c->ring_mw->rkey);
	wr.bind_mw.bind_info.mr = c->ring_mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)r->base;
	wr.bind_mw.bind_info.length = r->bytes;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	note_posted(c, 1);
	if (ibv_post_send(c->id->qp, &wr, &bad)) {
		ret = errno ? -errno : -EIO;
		atomic_fetch_sub(&c->wr_out, 1);
		return ret;
	}
	/* the key is given out only once the window is in force */
	ret = rt_conn_wait(c, bind_done, 5000);
	if (!ret)
		ret = rt_conn_error(c);
	if (ret)
		return ret;
	*rkey = wr.bind_mw.rkey;
	return 0;
}

int rt_ring_register(struct pxfer_conn *pc, struct pxfer_ring *r,
		     uint8_t *blob, uint16_t *blob_len)
{
	struct rdma_conn *c = to_rconn(pc);
	struct rdma_dev *d = c->dev;
	struct pxfer_ring_desc desc;
	int access = IBV_ACCESS_LOCAL_WRITE, ret;
	static atomic_int warned;

	if (blob && d->mw2)
		access |= IBV_ACCESS_MW_BIND;
	else if (blob)
		access |= IBV_ACCESS_REMOTE_WRITE;
	c->slotq = calloc(r->nslots, sizeof(*c->slotq));
	if (!c->slotq)
		return -ENOMEM;
	c->sq_cap = r->nslots;
	c->ring = r;
	/* with the PD of the connection's own device */
	c->ring_mr = ibv_reg_mr(d->pd, r->base, r->bytes, access);
	if (!c->ring_mr)
		return rt_reg_failed(r->bytes, "ring memory");
	if (!blob) {
		/* the sender: a chunk is two work requests, both of which
		 * complete if the QP is flushed */
		ret = rt_cq_reserve(d, 2 * (int)r->nslots);
		if (!ret)
			c->cq_share += 2 * (int)r->nslots;
		return ret;
	}
	/* every slot that can be granted has a receive waiting for it; the
	 * share goes back with the connection, even if posting fails */
	ret = rt_srq_want_add(d, r->nslots);
	if (ret)
		return ret;
	c->srq_share = r->nslots;
	ret = rt_srq_refill(d, -1);
	if (ret)
		return ret;
	desc.rkey = c->ring_mr->rkey;
	if (d->mw2) {
		ret = ring_window(c, r, &desc.rkey);
		if (ret) {
			pxfer_error("rdma: cannot bind a memory window over the ring of the data connection from %s: %s",
			      c->conn.peer, strerror(-ret));
			return ret;
		}
	} else if (!atomic_exchange(&warned, 1)) {
		pxfer_warning("rdma: %s has no type 2 memory windows: a ring is writable by every queue pair on the device's protection domain, also before it authenticates (docs/security.md)",
			rt_dev_name(d));
	}
	desc.addr = (uintptr_t)r->base;
	desc.stride = r->stride;
	desc.hdr = r->hdr_size;
	desc.slots = r->nslots;
	pxfer_verbose("rdma: data connection from %s: ring at 0x%llx, %zu bytes, key 0x%x (%s)",
		c->conn.peer, (unsigned long long)desc.addr, r->bytes, desc.rkey,
		d->mw2 ? "a window bound to its queue pair" : "the memory region's");
	pxfer_ring_desc_encode(&desc, blob);
	*blob_len = PXFER_RING_DESC_LEN;
	return 0;
}

int rt_ring_remote(struct pxfer_conn *pc, const uint8_t *blob,
		   uint16_t blob_len)
{
	struct rdma_conn *c = to_rconn(pc);
	struct pxfer_ring_desc d;
	/* the send queue was sized by the slots the WELCOME announced */
	int ret = pxfer_ring_desc_decode(blob, blob_len, c->rslots_max, &d);

	if (ret)
		return ret;
	c->raddr = d.addr;
	c->rkey = d.rkey;
	c->rstride = d.stride;
	c->rhdr = d.hdr;
	c->rslots = d.slots;
	return 0;
}

/*
 * Ring @r of another connection (a receiving one, on this device or
 * another) is registered on this connection's protection domain for
 * local reads, once: a chunk that arrived there is sent on from there.
 * A ring mapped where an older one was (serial: a new ring) replaces it;
 * the older one's sends were all done before it went away.
 */
int rt_ring_local(struct pxfer_conn *pc, const struct pxfer_ring *r)
{
	struct rdma_conn *c = to_rconn(pc);
	uintptr_t base = (uintptr_t)r->base;
	struct rdma_ext_ring *x = NULL;

	if (r == c->ring)
		return 0;
	for (unsigned int i = 0; i < RDMA_EXT_MAX; i++) {
		struct rdma_ext_ring *e = &c->ext[i];

		if (e->mr && e->serial == r->serial)
			return 0;
		if (e->mr && e->base < base + r->bytes && base < e->base + e->len) {
			ibv_dereg_mr(e->mr);
			e->mr = NULL;
		}
		if (!e->mr && !x)
			x = e;
	}
	if (!x)
		return -ENOSPC;
	x->mr = ibv_reg_mr(c->dev->pd, r->base, r->bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!x->mr)
		return errno ? -errno : -ENOMEM;
	x->serial = r->serial;
	x->base = base;
	x->len = r->bytes;
	return 0;
}

/* the key of the memory @len bytes at @p lie in: 0, or -EFAULT when
 * none holds them */
static int payload_lkey(struct rdma_conn *c, const void *p, size_t len,
			uint32_t *lkey)
{
	uintptr_t a = (uintptr_t)p, base = (uintptr_t)c->ring->base;

	if (a >= base && a + len <= base + c->ring->bytes) {
		*lkey = c->ring_mr->lkey;
		return 0;
	}
	for (unsigned int i = 0; i < RDMA_EXT_MAX; i++) {
		if (c->ext[i].mr && a >= c->ext[i].base &&
		    a + len <= c->ext[i].base + c->ext[i].len) {
			*lkey = c->ext[i].mr->lkey;
			return 0;
		}
	}
	return -EFAULT;
}

int rt_send_chunk(struct pxfer_conn *pc, const struct pxfer_chunk *ch,
		  const void *payload)
{
	struct rdma_conn *c = to_rconn(pc);
	const struct pxfer_ring *r = c->ring;
	uint8_t *hdr = pxfer_ring_hdr(r, ch->slot);
	uint64_t rslot = c->raddr + (uint64_t)ch->slot * c->rstride;
	struct ibv_sge sge[2];
	struct ibv_send_wr wr[2], *bad;
	ssize_t dlen;
	uint32_t lkey;
	int ret = rt_conn_error(c);

	if (ret)
		return ret;
	if (atomic_load(&c->peer_closed))
		return -ECONNRESET;
	if (ch->slot >= c->rslots || ch->len > c->rstride - c->rhdr)
		return -EINVAL;
	dlen = pxfer_chunk_encode(hdr, r->hdr_size, ch);
	if (dlen < 0)
		return dlen;
	ret = payload_lkey(c, payload, ch->len, &lkey);
	if (ret)
		return ret;
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)payload,
				   .length = ch->len,
				   .lkey = lkey };
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)hdr, .length = dlen,
				   .lkey = c->ring_mr->lkey };
	memset(wr, 0, sizeof(wr));
	/* the payload first, unsignaled: the second write's completion
	 * retires both send queue entries */
	wr[0].sg_list = &sge[0];
	wr[0].num_sge = 1;
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	wr[0].wr.rdma.remote_addr = rslot + c->rhdr;
	wr[0].wr.rdma.rkey = c->rkey;
	wr[0].next = &wr[1];
	wr[1].wr_id = WR_ID(WR_DATA, ch->slot);
	wr[1].sg_list = &sge[1];
	wr[1].num_sge = 1;
	wr[1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[1].send_flags = IBV_SEND_SIGNALED;
	wr[1].imm_data = htonl(ch->slot);
	wr[1].wr.rdma.remote_addr = rslot;
	wr[1].wr.rdma.rkey = c->rkey;
	atomic_fetch_add(&c->dev->inflight, 1);
	note_posted(c, 2);
	if (ibv_post_send(c->id->qp, wr, &bad)) {
		ret = -errno;
		atomic_fetch_sub(&c->dev->inflight, 1);
		atomic_fetch_sub(&c->wr_out, 2);
		return ret;
	}
	c->chunks++;
	return 0;
}

void rt_slotq_push(struct rdma_conn *c, uint16_t slot)
{
	if (c->sq_count < c->sq_cap) {
		c->slotq[(c->sq_head + c->sq_count) % c->sq_cap] = slot;
		c->sq_count++;
	} else {
		/* more than the ring holds: the peer broke the credit rules */
		atomic_store(&c->wc_error, IBV_WC_REM_OP_ERR);
	}
}

static int pop_slots(struct rdma_conn *c, uint16_t *slots, unsigned int max)
{
	unsigned int n = 0;

	pthread_mutex_lock(&c->lock);
	while (n < max && c->sq_count) {
		slots[n++] = c->slotq[c->sq_head];
		c->sq_head = (c->sq_head + 1) % c->sq_cap;
		c->sq_count--;
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

int rt_reap_sent(struct pxfer_conn *pc, uint16_t *slots,
		 unsigned int max)
{
	struct rdma_conn *c = to_rconn(pc);
	int n = pop_slots(c, slots, max);

	if (n)
		return n;
	pxfer_drain(c->efd);
	n = pop_slots(c, slots, max);
	if (n)
		return n;
	n = rt_conn_error(c);
	if (n)
		return n;
	return atomic_load(&c->peer_closed) && !atomic_load(&c->closing) ?
	       -ECONNRESET : 0;
}

int rt_recv_chunk(struct pxfer_conn *pc, const struct pxfer_ring *r,
		  struct pxfer_chunk *ch)
{
	struct rdma_conn *c = to_rconn(pc);
	uint16_t slot;
	ssize_t n;
	int ret;

	if (!pop_slots(c, &slot, 1)) {
		ret = rt_conn_error(c);
		if (ret)
			return ret;
		if (atomic_load(&c->peer_closed))
			return -EPIPE;
		pxfer_drain(c->efd);
		if (!pop_slots(c, &slot, 1))
			return 0;
	}
	if (slot >= r->nslots)
		return -EPROTO;
	n = pxfer_chunk_decode(pxfer_ring_hdr(r, slot), r->hdr_size, ch);
	if (n < 0)
		return -EPROTO;
	/* the payload is in the slot already: the peer wrote it there */
	if (ch->slot != slot || ch->len > r->slot_size)
		return -EPROTO;
	return 1;
}
