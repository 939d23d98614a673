// SPDX-License-Identifier: MIT
/*
 * The rdma transport's process context.
 *
 * One context per process holds what every connection shares whatever
 * its device: the rdma_cm event channel, the list of connections, the
 * device contexts (dev.c) and the listener, and the progress thread
 * (progress.c's loop, which the first caller gives), which serves the
 * event channel and each device context's completion channel and
 * asynchronous events. Connections, device
 * contexts and the listener each hold a reference; the last one stops the
 * thread and frees the context.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/sys.h"
#include "transport/rdma/priv.h"

/*
 * The process's context while anything holds a reference to it. ctx_lock
 * guards the_ctx and its refs.
 */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdma_ctx *the_ctx;

/* Get the process's context (event channel and progress thread). */
int rt_ctx_get(struct rdma_ctx **out, void *(*serve)(void *))
{
	struct rdma_ctx *ctx;
	unsigned int spin = 2000, cq_first = RDMA_CQ_MIN;
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
	atomic_init(&ctx->doing, "starting");
	if (pxfer_env_uint("PXFER_RDMA_SPIN", 0, 1u << 30, &spin) < 0)
		pxfer_warning("PXFER_RDMA_SPIN is not a number of polls from 0 to 2^30: %u is used",
			spin);
	ctx->spin = (int)spin;
	/* a smaller first CQ makes the tests grow it (cases.sh, deep-rings) */
	if (pxfer_env_uint("PXFER_RDMA_CQ_MIN", 1, 1u << 22, &cq_first) < 0)
		pxfer_warning("PXFER_RDMA_CQ_MIN is not a number of entries from 1 to 2^22: %u is used",
			cq_first);
	ctx->cq_first = (int)cq_first;
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
	pthread_mutex_init(&ctx->dev_lock, NULL);
	/* shared by the calls of the process and outliving the one that
	 * made it: it reports to the process's default log, not to a call's
	 * (so pthread_create, not pxfer_thread_create) */
	ret = -pthread_create(&ctx->thread, NULL, serve, ctx);
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
	pthread_mutex_destroy(&ctx->dev_lock);
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

/*
 * Wait for the progress thread to end, RDMA_STOP_WAIT_MS at most: a
 * thread stuck in the verbs library must not hold the process for ever.
 * 0, or -ETIMEDOUT (said, with what it was doing; it is left running,
 * and the context with it).
 */
static int join_bounded(struct rdma_ctx *ctx)
{
	struct timespec end;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += RDMA_STOP_WAIT_MS / 1000;
	if (!pthread_timedjoin_np(ctx->thread, NULL, &end))
		return 0;
	pxfer_warning("rdma: the progress thread did not stop within %d s (it was %s); going on without it",
		RDMA_STOP_WAIT_MS / 1000, atomic_load(&ctx->doing));
	pthread_detach(ctx->thread);
	return -ETIMEDOUT;
}

/*
 * The last reference: every connection, device context and the listener
 * are gone (each held one), so only the thread and the channel remain.
 */
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
	if (join_bounded(ctx))
		return;
	rdma_destroy_event_channel(ctx->ech);
	close(ctx->stop_fd);
	pthread_mutex_destroy(&ctx->dev_lock);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

int rt_port_state(const char *dev, unsigned int port)
{
	int state = -ENOENT;

	pthread_mutex_lock(&ctx_lock);
	if (the_ctx) {
		pthread_mutex_lock(&the_ctx->lock);
		for (struct rdma_dev *d = the_ctx->devs; d; d = d->next)
			if (!strcmp(rt_dev_name(d), dev) && port >= 1 &&
			    port <= d->nports)
				state = atomic_load(&d->port_state[port]);
		pthread_mutex_unlock(&the_ctx->lock);
	}
	pthread_mutex_unlock(&ctx_lock);
	return state;
}
