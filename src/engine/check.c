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

#include "core/log.h"
#include "core/sys.h"
#include "engine/check.h"

static void job_done(struct pxfer_check *c, struct pxfer_check_job *j)
{
	j->link = c->ready;
	c->ready = j;
	if (c->wake_fd >= 0)
		pxfer_wake(c->wake_fd);
}

/* the next piece of @j into @p: its array's, or cut from its runs */
static void next_piece(struct pxfer_check_job *j, struct pxfer_check_piece *p)
{
	const struct pxfer_held_run *r;
	uint64_t end;

	if (j->pieces) {
		*p = j->pieces[j->next++];
		return;
	}
	while (!j->runs[j->run].len || j->run_off >= j->runs[j->run].len) {
		j->run++;
		j->run_off = 0;
	}
	r = &j->runs[j->run];
	end = r->len - j->run_off < r->unit ? r->len - j->run_off : r->unit;
	*p = (struct pxfer_check_piece){ .off = r->off + j->run_off, .len = end };
	j->run_off += end;
	j->next++;
}

/* the next piece to hash into @p, its job in *@jp; lock held. 0: none */
static int take_piece(struct pxfer_check *c, struct pxfer_check_job **jp,
		      struct pxfer_check_piece *p)
{
	struct pxfer_check_job *j = c->queue;

	if (!j)
		return 0;
	next_piece(j, p);
	if (j->next == j->n) {
		/* every piece handed out: the job leaves the queue */
		c->queue = j->link;
		if (!c->queue)
			c->queue_tail = &c->queue;
		j->link = NULL;
	}
	*jp = j;
	return 1;
}

static void *check_main(void *arg)
{
	struct pxfer_check *c = arg;
	void *buf = malloc(PXFER_DIGEST_BUF);

	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct pxfer_check_job *j = NULL;
		struct pxfer_check_piece piece, *p = &piece;
		struct pxfer_digest h = { 0, 0 };
		int err;

		while (!c->stop && !take_piece(c, &j, p))
			pthread_cond_wait(&c->work, &c->lock);
		if (c->stop)
			break;
		/* after a failed read the job's outcome is known: the
		 * rest of its pieces are not read */
		err = j->err;
		pthread_mutex_unlock(&c->lock);
		if (!err && !buf)
			err = -ENOMEM;
		if (!err && j->whole)	/* counts its progress as it reads */
			err = pxfer_digest_whole(j->fd, p->len, buf, &c->checked,
						 &c->halt, &h);
		else if (!err)
			err = pxfer_digest_read(j->fd, buf, p->off, p->len, &h);
		if (!j->whole || !buf)
			atomic_fetch_add_explicit(&c->checked, p->len,
						  memory_order_relaxed);
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
	atomic_init(&c->halt, 0);
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
	atomic_store(&c->halt, 1);
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
		int ret = pxfer_thread_create(&c->thread[c->started], NULL, check_main, c);

		if (ret)
			return c->started ? 0 : -ret;
		pxfer_thread_name(c->thread[c->started], "check", (int)c->started);
		c->started++;
	}
	return 0;
}

int pxfer_check_submit(struct pxfer_check *c, struct pxfer_check_job *j)
{
	int ret;

	if (j->whole && (!j->pieces || j->n != 1 || j->pieces[0].off))
		return -EINVAL;
	ret = start_threads(c);
	if (ret)
		return ret;
	j->sum = (struct pxfer_digest){ 0, 0 };
	j->bad = 0;
	j->bad_off = 0;
	j->err = 0;
	j->next = j->done = 0;
	j->run = 0;
	j->run_off = 0;
	j->link = NULL;
	for (unsigned int i = 0; j->pieces && i < j->n; i++)
		c->queued += j->pieces[i].len;
	for (unsigned int i = 0; !j->pieces && i < j->nruns; i++)
		c->queued += j->runs[i].len;
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

int pxfer_check_job_runs(struct pxfer_check_job *j,
			 const struct pxfer_held_run *r, unsigned int n)
{
	uint64_t count = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (!r[i].len)
			continue;
		if (!r[i].unit || r[i].off + r[i].len < r[i].off)
			return -EINVAL;
		count += (r[i].len + r[i].unit - 1) / r[i].unit;
		if (count > UINT32_MAX / 2)
			return -EINVAL;
	}
	j->pieces = NULL;
	j->runs = r;
	j->nruns = n;
	j->n = (unsigned int)count;
	j->compare = 0;
	return 0;
}
