// SPDX-License-Identifier: MIT
/*
 * Checks of held data on threads of their own (engine/check.h). A thread
 * takes the next piece of the first job in the queue, reads and hashes it
 * without the lock, then adds its hash to the job's sum; the thread that
 * hashes a job's last piece moves it to the ready list and wakes the
 * coordinator. The read is bounded by the data, never by a timer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/sys.h"
#include "engine/check.h"

static void job_done(struct pxfer_check *c, struct pxfer_check_job *j)
{
	j->link = c->ready;
	c->ready = j;
	if (c->wake_fd >= 0)
		pxfer_wake(c->wake_fd);
}

/* the next piece to hash, its job in *@jp; lock held. NULL: none */
static struct pxfer_check_piece *take_piece(struct pxfer_check *c,
					    struct pxfer_check_job **jp)
{
	struct pxfer_check_job *j = c->queue;
	struct pxfer_check_piece *p;

	if (!j)
		return NULL;
	p = &j->pieces[j->next++];
	if (j->next == j->n) {
		/* every piece handed out: the job leaves the queue */
		c->queue = j->link;
		if (!c->queue)
			c->queue_tail = &c->queue;
		j->link = NULL;
	}
	*jp = j;
	return p;
}

static void *check_main(void *arg)
{
	struct pxfer_check *c = arg;
	void *buf = malloc(PXFER_DIGEST_BUF);

	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct pxfer_check_job *j = NULL;
		struct pxfer_check_piece *p = NULL;
		struct pxfer_digest h = { 0, 0 };
		int err;

		while (!c->stop && !(p = take_piece(c, &j)))
			pthread_cond_wait(&c->work, &c->lock);
		if (c->stop)
			break;
		/* after a failed read the job's outcome is known: the
		 * rest of its pieces are not read */
		err = j->err;
		pthread_mutex_unlock(&c->lock);
		if (!err)
			err = buf ? pxfer_digest_read(j->fd, buf, p->off, p->len, &h) :
				    -ENOMEM;
		atomic_fetch_add_explicit(&c->checked, p->len, memory_order_relaxed);
		pthread_mutex_lock(&c->lock);
		if (err && !j->err)
			j->err = err;
		if (!err) {
			pxfer_digest_add(&j->sum, &h);
			if (j->compare && !pxfer_digest_eq(&h, &p->want) &&
			    (!j->bad++ || p->off < j->bad_off))
				j->bad_off = p->off;
		}
		if (++j->done == j->n)
			job_done(c, j);
	}
	pthread_mutex_unlock(&c->lock);
	free(buf);
	return NULL;
}

int pxfer_check_init(struct pxfer_check *c, unsigned int nthreads, int wake_fd)
{
	memset(c, 0, sizeof(*c));
	if (!nthreads)
		nthreads = (unsigned int)pxfer_workers_auto();
	if (nthreads > PXFER_CHECK_THREADS_MAX)
		nthreads = PXFER_CHECK_THREADS_MAX;
	c->nthreads = nthreads ? nthreads : 1;
	c->wake_fd = wake_fd;
	c->queue_tail = &c->queue;
	atomic_init(&c->checked, 0);
	if (pthread_mutex_init(&c->lock, NULL))
		return -ENOMEM;
	if (pthread_cond_init(&c->work, NULL)) {
		pthread_mutex_destroy(&c->lock);
		return -ENOMEM;
	}
	c->is_init = 1;
	return 0;
}

void pxfer_check_release(struct pxfer_check *c)
{
	if (!c->is_init)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_broadcast(&c->work);
	pthread_mutex_unlock(&c->lock);
	for (unsigned int i = 0; i < c->started; i++)
		pthread_join(c->thread[i], NULL);
	pthread_cond_destroy(&c->work);
	pthread_mutex_destroy(&c->lock);
	c->is_init = 0;
	c->started = 0;
}

/* the threads, at the first job: 0, or -errno when none could start */
static int start_threads(struct pxfer_check *c)
{
	while (c->started < c->nthreads) {
		int ret = pthread_create(&c->thread[c->started], NULL, check_main, c);

		if (ret)
			return c->started ? 0 : -ret;
		pxfer_thread_name(c->thread[c->started], "check", (int)c->started);
		c->started++;
	}
	return 0;
}

int pxfer_check_submit(struct pxfer_check *c, struct pxfer_check_job *j)
{
	int ret = start_threads(c);

	if (ret)
		return ret;
	j->sum = (struct pxfer_digest){ 0, 0 };
	j->bad = 0;
	j->bad_off = 0;
	j->err = 0;
	j->next = j->done = 0;
	j->link = NULL;
	for (unsigned int i = 0; i < j->n; i++)
		c->queued += j->pieces[i].len;
	c->jobs++;
	pthread_mutex_lock(&c->lock);
	if (!j->n) {
		job_done(c, j);
	} else {
		*c->queue_tail = j;
		c->queue_tail = &j->link;
		pthread_cond_broadcast(&c->work);
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

struct pxfer_check_job *pxfer_check_reap(struct pxfer_check *c)
{
	struct pxfer_check_job *j;

	if (!c->jobs)
		return NULL;
	pthread_mutex_lock(&c->lock);
	j = c->ready;
	if (j)
		c->ready = j->link;
	pthread_mutex_unlock(&c->lock);
	if (j) {
		j->link = NULL;
		c->jobs--;
	}
	return j;
}

int pxfer_check_runs(const struct pxfer_held_run *r, unsigned int n,
		     struct pxfer_check_piece **out, unsigned int *nout)
{
	struct pxfer_check_piece *p;
	uint64_t count = 0;
	unsigned int k = 0;

	*out = NULL;
	*nout = 0;
	for (unsigned int i = 0; i < n; i++) {
		if (!r[i].len)
			continue;
		if (!r[i].unit || r[i].off + r[i].len < r[i].off)
			return -EINVAL;
		count += (r[i].len + r[i].unit - 1) / r[i].unit;
	}
	if (count > UINT32_MAX / 2)
		return -EINVAL;
	p = malloc((count ? count : 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++) {
		uint64_t end = r[i].off + r[i].len;

		for (uint64_t off = r[i].off; r[i].len && off < end;) {
			uint64_t len = end - off < r[i].unit ? end - off : r[i].unit;

			p[k++] = (struct pxfer_check_piece){ .off = off, .len = len };
			off += len;
		}
	}
	*out = p;
	*nout = k;
	return 0;
}
