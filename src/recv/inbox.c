// SPDX-License-Identifier: MIT
/*
 * A session's inbox of data connections (inbox.h). While the session
 * sets up its workers they are taken by accept_workers (session.c); once
 * it runs, by its coordinator (rejoin.c), which the inbox wakes for each.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/sys.h"
#include "recv/inbox.h"

int pxfer_inbox_init(struct pxfer_inbox *in)
{
	int ret;

	memset(in, 0, sizeof(*in));
	in->wake_fd = -1;
	in->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (in->fd < 0)
		return -errno;
	ret = -pthread_mutex_init(&in->lock, NULL);
	if (ret)
		return ret;
	in->lock_init = 1;
	return 0;
}

int pxfer_inbox_push(struct pxfer_inbox *in, const struct recv_newconn *nc)
{
	int ret = -EBUSY;

	pthread_mutex_lock(&in->lock);
	if (!in->closed && in->n < PXFER_WORKERS_MAX) {
		in->q[in->n++] = *nc;
		ret = 0;
		/* the fd lives until the inbox closes */
		if (in->wake_fd >= 0)
			pxfer_wake(in->wake_fd);
	}
	pthread_mutex_unlock(&in->lock);
	if (!ret)
		pxfer_wake(in->fd);
	return ret;
}

int pxfer_inbox_pop(struct pxfer_inbox *in, struct recv_newconn *nc)
{
	int ret = 0;

	pthread_mutex_lock(&in->lock);
	if (in->n) {
		*nc = in->q[0];
		memmove(in->q, in->q + 1, --in->n * sizeof(in->q[0]));
		ret = 1;
	}
	pthread_mutex_unlock(&in->lock);
	return ret;
}

void pxfer_inbox_wake_also(struct pxfer_inbox *in, int fd)
{
	pthread_mutex_lock(&in->lock);
	in->wake_fd = fd;
	pthread_mutex_unlock(&in->lock);
}

void pxfer_inbox_close(struct pxfer_inbox *in)
{
	struct recv_newconn nc;

	if (!in->lock_init)
		return;
	pthread_mutex_lock(&in->lock);
	in->closed = 1;
	in->wake_fd = -1;
	pthread_mutex_unlock(&in->lock);
	while (pxfer_inbox_pop(in, &nc))
		nc.c->ops->close(nc.c);
}

void pxfer_inbox_release(struct pxfer_inbox *in)
{
	pxfer_inbox_close(in);
	if (in->lock_init)
		pthread_mutex_destroy(&in->lock);
	in->lock_init = 0;
	if (in->fd >= 0)
		close(in->fd);
	in->fd = -1;
}
