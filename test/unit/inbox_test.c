/* SPDX-License-Identifier: MIT */
/*
 * inbox_test: a receiving session's inbox of data connections
 * (src/recv/inbox.c).
 *
 *  - connections come out in the order they went in; a pop from an empty
 *    inbox finds nothing;
 *  - a push makes the inbox's eventfd readable, and once a second fd is
 *    given (the coordinator's, once the session runs) that one too;
 *  - at most PXFER_WORKERS_MAX wait: one more is refused (-EBUSY) and
 *    stays the caller's;
 *  - closed, it takes nothing more (-EBUSY), wakes nobody, and closes
 *    each connection that waited, exactly once; release closes what a
 *    push left after that, and is harmless twice;
 *  - four threads pushing while one pops: each connection comes out
 *    exactly once (run it under TSan too).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/sys.h"
#include "recv/inbox.h"
#include "test.h"

#define NCONN	(4 * 1000)

static int closed[NCONN + PXFER_WORKERS_MAX + 8];

static void fake_close(struct pxfer_conn *c)
{
	closed[atoi(c->peer)]++;
}

static const struct pxfer_transport_ops fake_ops = { .close = fake_close };
static struct pxfer_conn conns[NCONN + PXFER_WORKERS_MAX + 8];

static struct recv_newconn nc_of(int i)
{
	struct recv_newconn nc = { .c = &conns[i] };

	conns[i].ops = &fake_ops;
	snprintf(conns[i].peer, sizeof(conns[i].peer), "%d", i);
	nc.dh.worker = (uint16_t)(i % PXFER_WORKERS_MAX);
	return nc;
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void test_order_and_bounds(void)
{
	struct pxfer_inbox in;
	struct recv_newconn nc, extra;
	int other = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), got = 0;

	T_EXPECT(pxfer_inbox_init(&in) == 0 && other >= 0, "init");
	T_EXPECT(!pxfer_inbox_pop(&in, &nc), "pop from an empty inbox");
	nc = nc_of(0);
	T_EXPECT(pxfer_inbox_push(&in, &nc) == 0, "push");
	T_EXPECT(readable(in.fd), "the inbox's fd is readable after a push");
	T_EXPECT(!readable(other), "the other fd is not woken before it is given");
	pxfer_drain(in.fd);
	pxfer_inbox_wake_also(&in, other);
	for (int i = 1; i < PXFER_WORKERS_MAX; i++) {
		nc = nc_of(i);
		T_EXPECT(pxfer_inbox_push(&in, &nc) == 0, "push %d", i);
	}
	T_EXPECT(readable(in.fd) && readable(other), "both fds woken");
	extra = nc_of(PXFER_WORKERS_MAX);
	T_EXPECT(pxfer_inbox_push(&in, &extra) == -EBUSY,
		 "push %d into a full inbox", PXFER_WORKERS_MAX + 1);
	for (int i = 0; i < 3; i++) {
		T_EXPECT(pxfer_inbox_pop(&in, &nc) == 1 && nc.c == &conns[i],
			 "pop %d in order", i);
		got++;
	}
	pxfer_drain(other);
	pxfer_inbox_close(&in);
	for (int i = 0; i < PXFER_WORKERS_MAX; i++)
		T_EXPECT(closed[i] == (i >= got), "connection %d closed %d times", i,
			 closed[i]);
	T_EXPECT(!closed[PXFER_WORKERS_MAX], "the refused one is still the caller's");
	T_EXPECT(pxfer_inbox_push(&in, &extra) == -EBUSY, "push into a closed inbox");
	T_EXPECT(!readable(other), "a closed inbox wakes nobody");
	T_EXPECT(!pxfer_inbox_pop(&in, &nc), "pop from a closed inbox");
	pxfer_inbox_release(&in);
	pxfer_inbox_release(&in);
	close(other);
}

struct pusher {
	struct pxfer_inbox *in;
	int first, n;
};

static void *push_main(void *arg)
{
	struct pusher *p = arg;

	for (int i = p->first; i < p->first + p->n; i++) {
		struct recv_newconn nc = nc_of(i);

		while (pxfer_inbox_push(p->in, &nc) == -EBUSY)
			sched_yield();
	}
	return NULL;
}

static void test_threads(void)
{
	static int seen[NCONN];
	struct pxfer_inbox in;
	struct pusher p[4];
	pthread_t t[4];
	struct recv_newconn nc;
	int n = 0, dup = 0;

	T_EXPECT(pxfer_inbox_init(&in) == 0, "init");
	for (int i = 0; i < 4; i++) {
		p[i] = (struct pusher){ .in = &in, .first = i * (NCONN / 4), .n = NCONN / 4 };
		T_EXPECT(!pthread_create(&t[i], NULL, push_main, &p[i]), "thread %d", i);
	}
	while (n < NCONN) {
		if (!pxfer_inbox_pop(&in, &nc)) {
			sched_yield();
			continue;
		}
		dup += seen[nc.c - conns]++ > 0;
		n++;
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	T_EXPECT(!dup, "%d connections came out twice", dup);
	T_EXPECT(!pxfer_inbox_pop(&in, &nc), "nothing left");
	pxfer_inbox_release(&in);
	printf("threads: %d connections through the inbox\n", n);
}

int main(void)
{
	test_order_and_bounds();
	test_threads();
	return t_result();
}
