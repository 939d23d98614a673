// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"
#include "core/sys.h"
#include "engine/worker.h"

/* a thread on the CPUs of NUMA node @node (where it has any), or anywhere */
static int thread_start(pthread_t *t, int node, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int ret;

	if (pxfer_numa_cpus(node, &set))
		return pxfer_thread_create(t, NULL, fn, arg);
	if (pthread_attr_init(&attr))
		return pxfer_thread_create(t, NULL, fn, arg);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	ret = pxfer_thread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return ret;
}

static void *prep_main(void *arg)
{
	struct pxfer_worker *w = arg;

	if (w->prep_mem) {
		pxfer_pool_wait(w->prep_pool);
		w->prep_ret = pxfer_ring_init_at(&w->ring, w->prep_mem, w->cred.n,
						 w->prep_chunk, w->prep_hdr);
	} else {
		w->prep_ret = pxfer_ring_init(&w->ring, w->cred.n, w->prep_chunk,
					      w->prep_hdr);
	}
	w->ring.pinned = w->prep_pinned;
	/* several chunks in flight, each with a few segments */
	if (!w->prep_ret)
		w->prep_ret = pxfer_io_create(w->prep_io, &w->ring,
					      w->cred.n * 4, &w->io);
	return NULL;
}

int pxfer_worker_prepare(struct pxfer_worker *w,
			 const struct pxfer_transport_ops *t, const char *io,
			 unsigned int slots, uint32_t chunk, int receiver,
			 struct pxfer_pool *pool)
{
	int ret;

	w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->wake_fd < 0)
		return -errno;
	ret = -pthread_mutex_init(&w->lock, NULL);
	if (ret)
		return ret;
	w->lock_init = 1;
	ret = pxfer_credits_init(&w->cred, slots, receiver);
	if (ret)
		return ret;
	w->prep_io = io;
	w->prep_chunk = chunk;
	w->prep_hdr = t->ring_hdr;
	w->prep_pinned = t->pins_memory;
	w->prep_pool = pool;
	w->prep_mem = pxfer_pool_take(pool, pxfer_ring_bytes(slots, chunk,
							     t->ring_hdr));
	if (thread_start(&w->prep_thread, w->numa_node, prep_main, w)) {
		prep_main(w);		/* no thread: do it now */
	} else {
		w->prep_started = 1;
		pxfer_thread_name(w->prep_thread, "prep", w->idx);
	}
	return 0;
}

/* the ring and the I/O back-end are ready (or failed): their result */
static int prep_wait(struct pxfer_worker *w)
{
	if (w->prep_started)
		pthread_join(w->prep_thread, NULL);
	w->prep_started = 0;
	return w->prep_ret;
}

int pxfer_worker_attach(struct pxfer_worker *w,
			const struct pxfer_transport_ops *t, uint8_t *blob,
			uint16_t *blob_len)
{
	int ret = prep_wait(w);

	if (ret)
		return ret;
	return t->ring_register(w->conn, &w->ring, blob, blob_len);
}

void pxfer_worker_kick(struct pxfer_worker *w,
		       const struct pxfer_transport_ops *t, int failed)
{
	if (failed && w->conn)
		t->shutdown(w->conn);
	if (w->wake_fd >= 0)
		pxfer_wake(w->wake_fd);
}

int pxfer_worker_lose(struct pxfer_worker *w, const struct pxfer_transport_ops *t,
		      int err)
{
	int none = 0;

	if (err >= 0)
		err = -EIO;
	if (!atomic_compare_exchange_strong(&w->lost, &none, err))
		return 0;
	if (w->conn)
		t->shutdown(w->conn);
	if (w->wake_fd >= 0)
		pxfer_wake(w->wake_fd);
	return 1;
}

unsigned int pxfer_workers_alive(struct pxfer_workers *ws)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < ws->n; i++)
		n += pxfer_worker_alive(ws->w[i]);
	return n;
}

void pxfer_worker_join(struct pxfer_worker *w)
{
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = 0;
}

void pxfer_worker_release(struct pxfer_worker *w,
			  const struct pxfer_transport_ops *t)
{
	prep_wait(w);
	/* the I/O back-end and the connection go before the ring they use */
	if (w->io)
		pxfer_io_destroy(w->io);
	w->io = NULL;
	if (w->conn)
		t->close(w->conn);
	w->conn = NULL;
	pxfer_ring_release(&w->ring);
	pxfer_credits_release(&w->cred);
	if (w->lock_init)
		pthread_mutex_destroy(&w->lock);
	w->lock_init = 0;
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	w->wake_fd = -1;
}

const char *pxfer_worker_setup_error(int err)
{
	switch (err) {
	case -ENOSYS:
		return "io_uring is unavailable here (use --io auto or --io sync)";
	case -ENOMEM:
		return "out of memory, or the memlock limit is too low for the rings (raise 'ulimit -l' or lower --ring-mem)";
	case -ENOSPC:
		return "too many ring slots for the RDMA device's shared receive queue (lower --ring-mem or use larger chunks)";
	default:
		return strerror(-err);
	}
}

int pxfer_workers_init(struct pxfer_workers *ws, unsigned int n)
{
	ws->w = calloc(n, sizeof(*ws->w));
	if (!ws->w)
		return -ENOMEM;
	ws->n = 0;
	ws->cap = n;
	atomic_store(&ws->stop, 0);
	return 0;
}

void pxfer_workers_add(struct pxfer_workers *ws, struct pxfer_worker *w)
{
	w->numa_node = -1;
	w->idx = ws->n;
	w->wake_fd = -1;
	ws->w[ws->n++] = w;
}

int pxfer_worker_start(struct pxfer_worker *w, void *(*fn)(void *),
		       const char *role)
{
	int ret = thread_start(&w->thread, w->numa_node, fn, w);

	if (ret)
		return -ret;
	w->started = 1;
	pxfer_thread_name(w->thread, role, w->idx);
	return 0;
}

int pxfer_workers_start(struct pxfer_workers *ws, void *(*fn)(void *),
			const char *role)
{
	for (unsigned int i = 0; i < ws->n; i++) {
		int ret = pxfer_worker_start(ws->w[i], fn, role);

		if (ret)
			return ret;
	}
	return 0;
}

void pxfer_workers_stop(struct pxfer_workers *ws,
			const struct pxfer_transport_ops *t, int failed)
{
	atomic_store(&ws->stop, 1);
	for (unsigned int i = 0; i < ws->n; i++)
		pxfer_worker_kick(ws->w[i], t, failed);
	for (unsigned int i = 0; i < ws->n; i++)
		pxfer_worker_join(ws->w[i]);
}

void pxfer_workers_release(struct pxfer_workers *ws)
{
	free(ws->w);
	ws->w = NULL;
	ws->n = ws->cap = 0;
}
