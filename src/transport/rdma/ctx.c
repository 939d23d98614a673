// SPDX-License-Identifier: MIT
/*
 * The rdma transport's process context and the device resources it holds.
 *
 * One context per process holds what the connections of a side share: the
 * rdma_cm event channel, the protection domain, one completion queue (with
 * its channel) and one shared receive queue for the data queue pairs; its
 * progress thread (progress.c) owns both channels. The SRQ always holds
 * RDMA_SRQ_BASE receives for the handshakes on data QPs plus one for each
 * slot of every registered ring (ring.c), reposted as they are consumed.
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
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/limits.h"
#include "core/log.h"
#include "core/sys.h"
#include "transport/rdma/priv.h"

/*
 * The process's context while anything holds a reference to it. ctx_lock
 * guards the_ctx, its refs, the setting up of its device resources and its
 * completion queue's reservations.
 */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdma_ctx *the_ctx;

/*
 * Memory registration fails with ENOMEM (or EPERM, EFAULT) when the pinned
 * memory would pass RLIMIT_MEMLOCK: say so, with the limit, once.
 */
int rt_reg_failed(size_t bytes, const char *what)
{
	int err = errno;
	uint64_t limit = pxfer_memlock_limit();

	if ((err == ENOMEM || err == EPERM || err == EFAULT) && limit) {
		error("cannot register %zu KiB of %s with the RDMA device: the memlock limit is %llu KiB "
		      "(raise it with 'ulimit -l', or in /etc/security/limits.conf)",
		      bytes >> 10, what, (unsigned long long)limit >> 10);
		return -ENOMEM;
	}
	return err ? -err : -ENOMEM;
}

static int srq_post(struct rdma_ctx *ctx, uint32_t idx)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(ctx->small + (size_t)idx * RDMA_SMALL_BUF),
		.length = RDMA_SMALL_BUF,
		.lkey = ctx->small_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WR_ID(WR_SRQ_RECV, idx),
				  .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(ctx->srq, &wr, &bad) ? -errno : 0;
}

/*
 * A shared receive came back (used, or done with by its reader): its buffer
 * index is free; top the SRQ up to what the registered rings need.
 */
int rt_srq_refill(struct rdma_ctx *ctx, int64_t returned_idx)
{
	int ret = 0;

	pthread_mutex_lock(&ctx->srq_lock);
	if (returned_idx >= 0) {
		ctx->srq_free[ctx->srq_nfree++] = returned_idx;
		ctx->srq_posted--;
		ctx->srq_back++;
	}
	while (ctx->srq_posted < ctx->srq_want && ctx->srq_nfree) {
		uint32_t idx = ctx->srq_free[--ctx->srq_nfree];

		ret = srq_post(ctx, idx);
		if (ret) {
			ctx->srq_free[ctx->srq_nfree++] = idx;
			break;
		}
		ctx->srq_posted++;
	}
	pthread_mutex_unlock(&ctx->srq_lock);
	return ret;
}

int rt_srq_want_add(struct rdma_ctx *ctx, int delta)
{
	int ret = 0;

	pthread_mutex_lock(&ctx->srq_lock);
	if (delta > 0 && ctx->srq_want + delta > ctx->srq_max)
		ret = -ENOSPC;
	else
		ctx->srq_want += delta;
	pthread_mutex_unlock(&ctx->srq_lock);
	return ret;
}

/* Get the process's context (event channel and progress thread). */
int rt_ctx_get(struct rdma_ctx **out)
{
	struct rdma_ctx *ctx;
	const char *spin = getenv("PXFER_RDMA_SPIN");
	const char *cq_first = getenv("PXFER_RDMA_CQ_MIN");
	int ret;

	pthread_mutex_lock(&ctx_lock);
	if (the_ctx) {
		the_ctx->refs++;
		*out = the_ctx;
		pthread_mutex_unlock(&ctx_lock);
		return 0;
	}
	ret = -ENOMEM;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		goto out_unlock;
	ctx->spin = spin ? atoi(spin) : 2000;
	/* a smaller first CQ makes the tests grow it (cases.sh, deep-rings) */
	ctx->cq_first = cq_first ? atoi(cq_first) : RDMA_CQ_MIN;
	ctx->ech = rdma_create_event_channel();
	if (!ctx->ech) {
		ret = errno ? -errno : -ENODEV;
		goto out_free;
	}
	ret = pxfer_set_nonblock(ctx->ech->fd);
	if (ret)
		goto out_channel;
	ctx->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->stop_fd < 0) {
		ret = -errno;
		goto out_channel;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->srq_lock, NULL);
	ret = -pthread_create(&ctx->thread, NULL, rt_progress_main, ctx);
	if (ret)
		goto out_stopfd;
	pxfer_thread_name(ctx->thread, "rdma", -1);
	ctx->refs = 1;
	the_ctx = ctx;
	*out = ctx;
	pthread_mutex_unlock(&ctx_lock);
	return 0;

out_stopfd:
	close(ctx->stop_fd);
	pthread_mutex_destroy(&ctx->srq_lock);
	pthread_mutex_destroy(&ctx->lock);
out_channel:
	rdma_destroy_event_channel(ctx->ech);
out_free:
	free(ctx);
out_unlock:
	pthread_mutex_unlock(&ctx_lock);
	return ret;
}

/* another reference to @ctx, of which the caller holds one already */
void rt_ctx_hold(struct rdma_ctx *ctx)
{
	pthread_mutex_lock(&ctx_lock);
	ctx->refs++;
	pthread_mutex_unlock(&ctx_lock);
}

/* undo rt_ctx_device, in reverse order of creation; safe on a partial one */
static void ctx_device_free(struct rdma_ctx *ctx)
{
	/* every receive a peer used up, for whatever reason, came back */
	if (ctx->srq && ctx->srq_used != ctx->srq_back)
		warning("rdma: %llu of %llu shared receives used were not put back",
		     (unsigned long long)(ctx->srq_used - ctx->srq_back),
		     (unsigned long long)ctx->srq_used);
	else if (ctx->srq)
		verbose("rdma: shared receive queue: %llu receives used, all put back",
			(unsigned long long)ctx->srq_used);
	if (ctx->srq)
		ibv_destroy_srq(ctx->srq);
	if (ctx->small_mr)
		ibv_dereg_mr(ctx->small_mr);
	free(ctx->small);
	free(ctx->srq_free);
	if (ctx->cq)
		ibv_destroy_cq(ctx->cq);
	if (ctx->cch)
		ibv_destroy_comp_channel(ctx->cch);
	if (ctx->pd)
		ibv_dealloc_pd(ctx->pd);
	ctx->srq = NULL;
	ctx->small_mr = NULL;
	ctx->small = NULL;
	ctx->srq_free = NULL;
	ctx->cq = NULL;
	ctx->cch = NULL;
	ctx->pd = NULL;
	ctx->cq_need = 0;
	ctx->srq_nfree = 0;
	ctx->srq_posted = 0;
	ctx->srq_want = 0;
}

void rt_ctx_put(struct rdma_ctx *ctx)
{
	pthread_mutex_lock(&ctx_lock);
	if (--ctx->refs) {
		pthread_mutex_unlock(&ctx_lock);
		return;
	}
	the_ctx = NULL;
	pthread_mutex_unlock(&ctx_lock);
	atomic_store(&ctx->stop, 1);
	pxfer_wake(ctx->stop_fd);
	pthread_join(ctx->thread, NULL);
	ctx_device_free(ctx);
	rdma_destroy_event_channel(ctx->ech);
	close(ctx->stop_fd);
	pthread_mutex_destroy(&ctx->srq_lock);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

/*
 * Reserve @n more entries of the completion queue (negative to give them
 * back), growing it first when what could be pending would not fit: a full
 * CQ loses completions and breaks every QP on it.
 */
int rt_cq_reserve(struct rdma_ctx *ctx, int n)
{
	int need, ret = 0;

	pthread_mutex_lock(&ctx_lock);
	need = ctx->cq_need + n;
	if (n > 0 && need > ctx->cq->cqe) {
		int size = ctx->cq->cqe * 2 > need ? ctx->cq->cqe * 2 : need;

		if (size > ctx->cq_max)
			size = ctx->cq_max;
		if (need > size)
			ret = -ENOSPC;
		else if (ibv_resize_cq(ctx->cq, size))
			ret = errno ? -errno : -EIO;
		if (ret)
			error("rdma: cannot grow the completion queue to %d entries (device limit %d): %s",
			      need, ctx->cq_max, strerror(-ret));
		else
			verbose("rdma: completion queue grown to %d entries", ctx->cq->cqe);
	}
	if (!ret)
		ctx->cq_need = need;
	pthread_mutex_unlock(&ctx_lock);
	return ret;
}

/*
 * The device resources, created with the first connection on @verbs, or by
 * a listener bound to an address of @verbs (@quiet: a failure there is
 * retried, and reported, with the first connection); a session uses one
 * device.
 */
int rt_ctx_device(struct rdma_ctx *ctx, struct ibv_context *verbs,
		  int quiet)
{
	struct ibv_device_attr attr;
	struct ibv_srq_init_attr sattr = { 0 };
	int ret;

	pthread_mutex_lock(&ctx_lock);
	if (ctx->verbs) {
		ret = ctx->verbs == verbs ? 0 : -EXDEV;
		pthread_mutex_unlock(&ctx_lock);
		return ret;
	}
	ret = ibv_query_device(verbs, &attr) ? -errno : 0;
	if (ret)
		goto out_unlock;
	ctx->srq_max = attr.max_srq_wr < RDMA_SRQ_MAX ? attr.max_srq_wr : RDMA_SRQ_MAX;
	ctx->mw2 = !!(attr.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
					       IBV_DEVICE_MEM_WINDOW_TYPE_2B));
	ret = -ENOMEM;
	ctx->pd = ibv_alloc_pd(verbs);
	if (!ctx->pd)
		goto out_undo;
	ctx->cch = ibv_create_comp_channel(verbs);
	if (!ctx->cch)
		goto out_undo;
	ret = pxfer_set_nonblock(ctx->cch->fd);
	if (ret)
		goto out_undo;
	ctx->cq_max = attr.max_cqe;
	ctx->cq = ibv_create_cq(verbs, attr.max_cqe < ctx->cq_first ? attr.max_cqe
			: ctx->cq_first > (int)ctx->srq_max ? ctx->cq_first
							     : (int)ctx->srq_max,
				ctx, ctx->cch, 0);
	if (!ctx->cq) {
		ret = -errno;
		goto out_undo;
	}
	/* every receive the SRQ can hold may complete at once */
	ctx->cq_need = ctx->srq_max;
	if (ctx->cq_need > ctx->cq->cqe) {
		ret = -ENOSPC;
		goto out_undo;
	}
	ctx->small = calloc(ctx->srq_max, RDMA_SMALL_BUF);
	ctx->srq_free = calloc(ctx->srq_max, sizeof(*ctx->srq_free));
	if (!ctx->small || !ctx->srq_free)
		goto out_undo;
	ctx->small_mr = ibv_reg_mr(ctx->pd, ctx->small,
				   (size_t)ctx->srq_max * RDMA_SMALL_BUF,
				   IBV_ACCESS_LOCAL_WRITE);
	if (!ctx->small_mr) {
		ret = quiet ? (errno ? -errno : -ENOMEM)
			    : rt_reg_failed((size_t)ctx->srq_max * RDMA_SMALL_BUF,
					    "receive buffers");
		goto out_undo;
	}
	sattr.attr.max_wr = ctx->srq_max;
	sattr.attr.max_sge = 1;
	ctx->srq = ibv_create_srq(ctx->pd, &sattr);
	if (!ctx->srq) {
		ret = -errno;
		goto out_undo;
	}
	for (uint32_t i = 0; i < ctx->srq_max; i++)
		ctx->srq_free[ctx->srq_nfree++] = ctx->srq_max - 1 - i;
	ctx->srq_want = RDMA_SRQ_BASE;
	ret = rt_srq_refill(ctx, -1);
	if (ret)
		goto out_undo;
	ctx->verbs = verbs;
	atomic_store(&ctx->ready, 1);
	pxfer_wake(ctx->stop_fd);	/* the progress thread picks up the CQ */
	pthread_mutex_unlock(&ctx_lock);
	return 0;

out_undo:
	ctx_device_free(ctx);
out_unlock:
	pthread_mutex_unlock(&ctx_lock);
	return ret;
}
