// SPDX-License-Identifier: MIT
/*
 * A session's inbox: the data connections that named it, handed over by
 * the server thread (which read their DATA_HELLO and checked nothing
 * else) to the session's own thread, which proves them. While the
 * session sets up its workers they are taken by accept_workers
 * (session.c); once it runs, by its coordinator (rejoin.c), woken for
 * each. At most PXFER_WORKERS_MAX wait; the inbox closes when the
 * session ends, and what is left in it is closed.
 */
#include <errno.h>
#include <string.h>

#include "core/sys.h"
#include "recv/recv.h"

int recv_inbox_pop(struct recv_session *s, struct recv_newconn *nc)
{
	int ret = 0;

	pthread_mutex_lock(&s->in_lock);
	if (s->nin) {
		*nc = s->in[0];
		memmove(s->in, s->in + 1, --s->nin * sizeof(s->in[0]));
		ret = 1;
	}
	pthread_mutex_unlock(&s->in_lock);
	return ret;
}

void recv_inbox_close(struct recv_session *s)
{
	struct recv_newconn nc;

	pthread_mutex_lock(&s->in_lock);
	s->in_closed = 1;
	pthread_mutex_unlock(&s->in_lock);
	while (recv_inbox_pop(s, &nc))
		nc.c->ops->close(nc.c);
}

int recv_inbox_route(struct recv_server *srv, struct recv_newconn *nc)
{
	struct recv_session *s = NULL;
	int ret = -EBUSY;

	for (unsigned int i = 0; i < srv->max_sessions && !s; i++)
		if (srv->sess[i] && srv->sess[i]->b.wel.session == nc->dh.session)
			s = srv->sess[i];
	if (!s)
		return -ENOENT;
	pthread_mutex_lock(&s->in_lock);
	if (!s->in_closed && s->nin < PXFER_WORKERS_MAX) {
		s->in[s->nin++] = *nc;
		ret = 0;
		/* once the session runs, its coordinator takes them
		 * (rejoin.c); its wake-up lives until the inbox closes */
		if (atomic_load(&s->running))
			pxfer_wake(s->b.ctrl.wake_fd);
	}
	pthread_mutex_unlock(&s->in_lock);
	if (!ret)
		pxfer_wake(s->in_fd);
	return ret;
}
