// SPDX-License-Identifier: MIT
/*
 * The rdma transport's device contexts: one per device a process uses,
 * holding what the connections on that device share. A transfer over
 * several rails uses several devices at once (rxe0 and rxe2, say), each
 * with its own context.
 *
 * A device context holds the protection domain, one completion queue
 * (with its channel) and one shared receive queue for the data queue
 * pairs on the device, and what the port events last said of each port.
 * It is made for the first connection on the device, once rdma_cm knows
 * the device (after address resolution on the active side, with the
 * connect request on the passive side), and freed when its last user
 * goes: every connection on it holds a reference, and so does the
 * listener for each device it accepted on, so that a serving receiver
 * keeps its devices ready between sessions. The progress thread
 * (progress.c) serves its channels while it is on the process context's
 * list.
 *
 * The SRQ always holds RDMA_SRQ_BASE receives for the handshakes on data
 * QPs plus one for each slot of every registered ring (ring.c), reposted
 * as they are consumed.
 *
 * The completion queue is sized by what can be pending on it, never
 * guessed: every receive the SRQ can hold, the control QP's receives and
 * sends, a data QP's handshake sends and, on the sender, two work requests
 * per slot of its ring (flushed work requests complete even when
 * unsignaled). It starts at RDMA_CQ_MIN entries, which the default rings
 * never outgrow, and is resized before a QP or a ring could need more.
 * (Creating it at its worst case cost 15 ms per side on the emulated test
 * bed, on the critical path of every transfer.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "core/log.h"
#include "core/sys.h"
#include "transport/rdma/priv.h"

/*
 * Memory registration fails with ENOMEM (or EPERM, EFAULT) when the pinned
 * memory would pass RLIMIT_MEMLOCK: say so, with the limit, once.
 */
int rt_reg_failed(size_t bytes, const char *what)
{
	int err = errno;
	uint64_t limit = pxfer_memlock_limit();

	if ((err == ENOMEM || err == EPERM || err == EFAULT) && limit) {
		pxfer_error("cannot register %zu KiB of %s with the RDMA device: the memlock limit is %llu KiB "
		      "(raise it with 'ulimit -l', or in /etc/security/limits.conf)",
		      bytes >> 10, what, (unsigned long long)limit >> 10);
		return -ENOMEM;
	}
	return err ? -err : -ENOMEM;
}

static int srq_post(struct rdma_dev *d, uint32_t idx)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(d->small + (size_t)idx * RDMA_SMALL_BUF),
		.length = RDMA_SMALL_BUF,
		.lkey = d->small_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WR_ID(WR_SRQ_RECV, idx),
				  .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(d->srq, &wr, &bad) ? -errno : 0;
}

/*
 * A shared receive came back (used, or done with by its reader): its buffer
 * index is free; top the SRQ up to what the registered rings need.
 */
int rt_srq_refill(struct rdma_dev *d, int64_t returned_idx)
{
	int ret = 0;

	pthread_mutex_lock(&d->srq_lock);
	if (returned_idx >= 0) {
		d->srq_free[d->srq_nfree++] = returned_idx;
		d->srq_posted--;
		d->srq_back++;
	}
	while (d->srq_posted < d->srq_want && d->srq_nfree) {
		uint32_t idx = d->srq_free[--d->srq_nfree];

		ret = srq_post(d, idx);
		if (ret) {
			d->srq_free[d->srq_nfree++] = idx;
			break;
		}
		d->srq_posted++;
	}
	pthread_mutex_unlock(&d->srq_lock);
	return ret;
}

int rt_srq_want_add(struct rdma_dev *d, int delta)
{
	int ret = 0;

	pthread_mutex_lock(&d->srq_lock);
	if (delta > 0 && d->srq_want + delta > d->srq_max)
		ret = -ENOSPC;
	else
		d->srq_want += delta;
	pthread_mutex_unlock(&d->srq_lock);
	return ret;
}

/*
 * Reserve @n more entries of the completion queue (negative to give them
 * back), growing it first when what could be pending would not fit: a full
 * CQ loses completions and breaks every QP on it.
 */
int rt_cq_reserve(struct rdma_dev *d, int n)
{
	int need, ret = 0;

	pthread_mutex_lock(&d->cq_lock);
	need = d->cq_need + n;
	if (n > 0 && need > d->cq->cqe) {
		int size = d->cq->cqe * 2 > need ? d->cq->cqe * 2 : need;

		if (size > d->cq_max)
			size = d->cq_max;
		if (need > size)
			ret = -ENOSPC;
		else if (ibv_resize_cq(d->cq, size))
			ret = errno ? -errno : -EIO;
		if (ret)
			pxfer_error("rdma: %s: cannot grow the completion queue to %d entries (device limit %d): %s",
			      rt_dev_name(d), need, d->cq_max, strerror(-ret));
		else
			pxfer_verbose("rdma: %s: completion queue grown to %d entries",
				rt_dev_name(d), d->cq->cqe);
	}
	if (!ret)
		d->cq_need = need;
	pthread_mutex_unlock(&d->cq_lock);
	return ret;
}

/* undo dev_create, in reverse order of creation; safe on a partial one */
static void dev_free(struct rdma_dev *d)
{
	/* every receive a peer used up, for whatever reason, came back */
	if (d->srq && d->srq_used != d->srq_back)
		pxfer_warning("rdma: %s: %llu of %llu shared receives used were not put back",
			rt_dev_name(d),
			(unsigned long long)(d->srq_used - d->srq_back),
			(unsigned long long)d->srq_used);
	else if (d->srq)
		pxfer_verbose("rdma: %s: shared receive queue: %llu receives used, all put back",
			rt_dev_name(d), (unsigned long long)d->srq_used);
	if (d->srq)
		ibv_destroy_srq(d->srq);
	if (d->small_mr)
		ibv_dereg_mr(d->small_mr);
	free(d->small);
	free(d->srq_free);
	if (d->cq)
		ibv_destroy_cq(d->cq);
	if (d->cch)
		ibv_destroy_comp_channel(d->cch);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	free(d->port_state);
	pthread_mutex_destroy(&d->srq_lock);
	pthread_mutex_destroy(&d->cq_lock);
	rt_ctx_put(d->ctx);
	free(d);
}

/*
 * Asynchronous events queue up on the device while no context of ours
 * reads them (an old flap's PORT_ERR, say): drop them, acknowledged, and
 * take each port's state as it is now.
 */
static int dev_ports(struct rdma_dev *d, unsigned int nports)
{
	struct ibv_async_event ev;
	int ret = pxfer_set_nonblock(d->verbs->async_fd);

	if (ret)
		return ret;
	while (!ibv_get_async_event(d->verbs, &ev))
		ibv_ack_async_event(&ev);
	d->nports = nports;
	d->port_state = calloc(nports + 1, sizeof(*d->port_state));
	if (!d->port_state)
		return -ENOMEM;
	for (unsigned int p = 1; p <= nports; p++) {
		struct ibv_port_attr pa;

		atomic_store(&d->port_state[p], ibv_query_port(d->verbs, p, &pa) ?
			     IBV_PORT_NOP : pa.state);
	}
	return 0;
}

/* the PD, CQ (with its channel) and SRQ (with its buffers) of a device */
static int dev_create(struct rdma_ctx *ctx, struct ibv_context *verbs,
		      int quiet, struct rdma_dev **out)
{
	struct ibv_device_attr attr;
	struct ibv_srq_init_attr sattr = { 0 };
	struct rdma_dev *d;
	int ret;

	if (ibv_query_device(verbs, &attr))
		return errno ? -errno : -EIO;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ctx = ctx;
	rt_ctx_hold(ctx);
	d->verbs = verbs;
	pthread_mutex_init(&d->cq_lock, NULL);
	pthread_mutex_init(&d->srq_lock, NULL);
	ret = dev_ports(d, attr.phys_port_cnt);
	if (ret)
		goto out_free;
	d->srq_max = attr.max_srq_wr < RDMA_SRQ_MAX ? attr.max_srq_wr : RDMA_SRQ_MAX;
	d->mw2 = !!(attr.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
					     IBV_DEVICE_MEM_WINDOW_TYPE_2B));
	ret = -ENOMEM;
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd)
		goto out_free;
	d->cch = ibv_create_comp_channel(verbs);
	if (!d->cch)
		goto out_free;
	ret = pxfer_set_nonblock(d->cch->fd);
	if (ret)
		goto out_free;
	d->cq_max = attr.max_cqe;
	d->cq = ibv_create_cq(verbs, attr.max_cqe < ctx->cq_first ? attr.max_cqe
			: ctx->cq_first > (int)d->srq_max ? ctx->cq_first
							   : (int)d->srq_max,
			      d, d->cch, 0);
	if (!d->cq) {
		ret = errno ? -errno : -ENOMEM;
		goto out_free;
	}
	/* every receive the SRQ can hold may complete at once */
	d->cq_need = d->srq_max;
	if (d->cq_need > d->cq->cqe) {
		ret = -ENOSPC;
		goto out_free;
	}
	ret = -ENOMEM;
	d->small = calloc(d->srq_max, RDMA_SMALL_BUF);
	d->srq_free = calloc(d->srq_max, sizeof(*d->srq_free));
	if (!d->small || !d->srq_free)
		goto out_free;
	d->small_mr = ibv_reg_mr(d->pd, d->small,
				 (size_t)d->srq_max * RDMA_SMALL_BUF,
				 IBV_ACCESS_LOCAL_WRITE);
	if (!d->small_mr) {
		ret = quiet ? (errno ? -errno : -ENOMEM)
			    : rt_reg_failed((size_t)d->srq_max * RDMA_SMALL_BUF,
					    "receive buffers");
		goto out_free;
	}
	sattr.attr.max_wr = d->srq_max;
	sattr.attr.max_sge = 1;
	d->srq = ibv_create_srq(d->pd, &sattr);
	if (!d->srq) {
		ret = errno ? -errno : -ENOMEM;
		goto out_free;
	}
	for (uint32_t i = 0; i < d->srq_max; i++)
		d->srq_free[d->srq_nfree++] = d->srq_max - 1 - i;
	d->srq_want = RDMA_SRQ_BASE;
	ret = rt_srq_refill(d, -1);
	if (ret)
		goto out_free;
	d->refs = 1;
	*out = d;
	return 0;

out_free:
	dev_free(d);
	return ret;
}

/*
 * The context of device @verbs, made for its first user: by the first
 * connection on the device, or by a listener bound to an address of it
 * (@quiet: a failure there is retried, and reported, with the first
 * connection).
 */
int rt_dev_get(struct rdma_ctx *ctx, struct ibv_context *verbs, int quiet,
	       struct rdma_dev **out)
{
	struct rdma_dev *d;
	int ret = 0;

	pthread_mutex_lock(&ctx->dev_lock);
	for (d = ctx->devs; d; d = d->next)
		if (d->verbs == verbs)
			break;
	if (d) {
		d->refs++;
		goto out;
	}
	if (ctx->ndevs == RDMA_DEVS_MAX) {
		if (!quiet)
			pxfer_error("rdma: cannot use %s: this process already uses %d RDMA devices, the most it can",
			      ibv_get_device_name(verbs->device), RDMA_DEVS_MAX);
		ret = -ENOSPC;
		goto out;
	}
	ret = dev_create(ctx, verbs, quiet, &d);
	if (ret)
		goto out;
	pthread_mutex_lock(&ctx->lock);
	d->next = ctx->devs;
	ctx->devs = d;
	ctx->ndevs++;
	ctx->devs_gen++;
	pthread_mutex_unlock(&ctx->lock);
	/* the progress thread picks up its channels */
	pxfer_wake(ctx->stop_fd);
	pxfer_verbose("rdma: %s: device context ready (%d completion queue entries, %u shared receives)",
		rt_dev_name(d), d->cq->cqe, d->srq_max);
out:
	pthread_mutex_unlock(&ctx->dev_lock);
	if (!ret)
		*out = d;
	return ret;
}

void rt_dev_hold(struct rdma_dev *d)
{
	pthread_mutex_lock(&d->ctx->dev_lock);
	d->refs++;
	pthread_mutex_unlock(&d->ctx->dev_lock);
}

/*
 * The last user went (its QPs and memory regions are gone): off the list
 * first, so that the progress thread no longer touches the device's
 * queues (it uses them only under ctx->lock, from that list), then free.
 */
void rt_dev_put(struct rdma_dev *d)
{
	struct rdma_ctx *ctx = d->ctx;

	pthread_mutex_lock(&ctx->dev_lock);
	if (--d->refs) {
		pthread_mutex_unlock(&ctx->dev_lock);
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	for (struct rdma_dev **pp = &ctx->devs; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	}
	ctx->ndevs--;
	ctx->devs_gen++;
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_unlock(&ctx->dev_lock);
	dev_free(d);
}
