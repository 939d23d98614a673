// SPDX-License-Identifier: MIT
/*
 * A partial's records before they reach its journal: what
 * pxfer_partial_add remembers, merged and bounded, and the flush that
 * makes it durable, and the writing of records to a journal
 * (recv/partial.h). The rest of a partial's life is recv/partial.c's,
 * which calls down here (a partial's open, a new journal's records),
 * never the other way.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/sys.h"
#include "recv/partial.h"

/* the pending records a small one is looked for among, to merge with */
#define MERGE_LOOK	16
/* records encoded for one write */
#define WRITE_RECS	128

/* the room beyond PXFER_PARTIAL_PEND_MIN that @p's two arrays take */
static unsigned int pend_taken(const struct pxfer_partial *p)
{
	return p->pend_cap + p->batch_cap - 2 * PXFER_PARTIAL_PEND_MIN;
}

/*
 * Seconds on a monotonic clock: the coarse one, read without a system
 * call, since each add reads it; its tick (a few ms) is nothing against
 * the age a record may reach.
 */
static double now_coarse(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* @p into its store's list of open partials, or out of it */
static void store_link(struct pxfer_partial *p)
{
	struct pxfer_partials *ps = p->store;

	pthread_mutex_lock(&ps->lock);
	p->prev = NULL;
	p->next = ps->open;
	if (ps->open)
		ps->open->prev = p;
	ps->open = p;
	pthread_mutex_unlock(&ps->lock);
}

static void store_unlink(struct pxfer_partial *p)
{
	struct pxfer_partials *ps = p->store;

	/* waits for a pxfer_partials_flush_old that may be flushing @p */
	pthread_mutex_lock(&ps->lock);
	if (p->prev)
		p->prev->next = p->next;
	else
		ps->open = p->next;
	if (p->next)
		p->next->prev = p->prev;
	pthread_mutex_unlock(&ps->lock);
}

int pxfer_partial_pend_init(struct pxfer_partial *p)
{
	p->pend = malloc(PXFER_PARTIAL_PEND_MIN * sizeof(*p->pend));
	p->batch = malloc(PXFER_PARTIAL_PEND_MIN * sizeof(*p->batch));
	if (!p->pend || !p->batch)
		goto out_free;
	p->pend_cap = p->batch_cap = PXFER_PARTIAL_PEND_MIN;
	if (pthread_mutex_init(&p->lock, NULL))
		goto out_free;
	if (pthread_cond_init(&p->flushed, NULL))
		goto out_mutex;
	store_link(p);
	return 0;

out_mutex:
	pthread_mutex_destroy(&p->lock);
out_free:
	free(p->pend);
	free(p->batch);
	p->pend = p->batch = NULL;
	return -ENOMEM;
}

void pxfer_partial_pend_free(struct pxfer_partial *p)
{
	store_unlink(p);
	atomic_fetch_sub(p->room, pend_taken(p));
	free(p->pend);
	free(p->batch);
	p->pend = p->batch = NULL;
	pthread_cond_destroy(&p->flushed);
	pthread_mutex_destroy(&p->lock);
}

/* ---- recording ---------------------------------------------------------- */

/*
 * What a partial holds pending is bounded whatever the segments: small
 * records that touch merge (up to PXFER_PARTIAL_SMALL bytes), a partial
 * flushes once PXFER_PARTIAL_PEND_MAX records are pending or its store
 * has no more room for them, and a journal takes at most
 * PXFER_PARTIAL_SMALL_MAX small records, so that one sending bytes one by
 * one, out of order, makes neither grow with what it sends.
 */

/* room for one more pending record, if the partial and its store have
 * it: 0, -ENOSPC or -ENOMEM; lock held */
static int pend_grow(struct pxfer_partial *p)
{
	unsigned int more = p->pend_cap;
	struct pxfer_partial_rec *r;

	if (p->pend_cap >= PXFER_PARTIAL_PEND_MAX)
		return -ENOSPC;
	if (atomic_fetch_add(p->room, more) + more > PXFER_PARTIAL_PEND_ROOM) {
		atomic_fetch_sub(p->room, more);
		return -ENOSPC;
	}
	r = realloc(p->pend, 2 * (size_t)p->pend_cap * sizeof(*r));
	if (!r) {
		atomic_fetch_sub(p->room, more);
		return -ENOMEM;
	}
	p->pend = r;
	p->pend_cap *= 2;
	return 0;
}

/*
 * Small record [@off, @off + @len) merged into a pending small one that
 * it touches, among the last MERGE_LOOK added (the bytes of a chunk come
 * in order, and the chunks of a file close together): 1, or 0 when none
 * fits. When it joins two, they become one. Lock held.
 */
static int pend_merge(struct pxfer_partial *p, uint64_t off, uint32_t len)
{
	unsigned int from = p->npend > MERGE_LOOK ? p->npend - MERGE_LOOK : 0;
	unsigned int l = UINT_MAX, r = UINT_MAX;
	struct pxfer_partial_rec *x;

	for (unsigned int i = from; i < p->npend; i++) {
		x = &p->pend[i];
		if (x->len >= PXFER_PARTIAL_SMALL)
			continue;
		if (x->off + x->len == off)
			l = i;
		else if (x->off == off + len)
			r = i;
	}
	if (l != UINT_MAX && r != UINT_MAX &&
	    p->pend[l].len + len + p->pend[r].len <= PXFER_PARTIAL_SMALL) {
		p->pend[l].len += len + p->pend[r].len;
		p->pend[l].merged = 1;
		p->pend[r] = p->pend[--p->npend];
		return 1;
	}
	if (l != UINT_MAX && p->pend[l].len + len <= PXFER_PARTIAL_SMALL) {
		p->pend[l].len += len;
		p->pend[l].merged = 1;
		return 1;
	}
	if (r != UINT_MAX && len + p->pend[r].len <= PXFER_PARTIAL_SMALL) {
		x = &p->pend[r];
		x->off = off;
		x->len += len;
		x->merged = 1;
		return 1;
	}
	return 0;
}

/* the pending records become the flush's batch: how many; lock held */
static unsigned int take_batch(struct pxfer_partial *p)
{
	struct pxfer_partial_rec *t = p->batch;
	unsigned int cap = p->batch_cap, n = p->npend;

	p->batch = p->pend;
	p->batch_cap = p->pend_cap;
	p->pend = t;
	p->pend_cap = cap;
	p->npend = 0;
	p->pend_bytes = 0;
	p->flushing = 1;
	return n;
}

/* the hash of merged record @r, from the data file @fd */
static int rehash(int fd, struct pxfer_partial_rec *r)
{
	uint8_t buf[PXFER_PARTIAL_SMALL];
	int ret = pxfer_pread_full(fd, buf, r->len, r->off);

	if (!ret) {
		pxfer_digest_range(&r->h, buf, r->len, r->off);
		r->merged = 0;
	}
	return ret;
}

/*
 * The batch's @n records, its data durable: those the journal has room
 * for, at the front, merged ones hashed from the data file (where the
 * page cache still has them), with the journal's counts. How many.
 */
static unsigned int batch_keep(struct pxfer_partial *p, unsigned int n)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct pxfer_partial_rec *r = &p->batch[i];
		int small = r->len < PXFER_PARTIAL_SMALL;

		if (p->jrecs >= PXFER_PARTIAL_RECORDS_MAX)
			break;
		if (small && p->jsmall >= PXFER_PARTIAL_SMALL_MAX)
			continue;
		/* unreadable: not recorded, and sent again */
		if (r->merged && rehash(p->fd, r))
			continue;
		p->batch[k++] = *r;
		p->jrecs++;
		p->jsmall += small;
	}
	return k;
}

/* the batch's array back to its first size, and its room to the store */
static void batch_shrink(struct pxfer_partial *p)
{
	unsigned int more = p->batch_cap - PXFER_PARTIAL_PEND_MIN;
	struct pxfer_partial_rec *r;

	if (!more)
		return;
	r = realloc(p->batch, PXFER_PARTIAL_PEND_MIN * sizeof(*r));
	if (!r)
		return;
	p->batch = r;
	p->batch_cap = PXFER_PARTIAL_PEND_MIN;
	atomic_fetch_sub(p->room, more);
}

/* records to a journal, @WRITE_RECS at a time: a flush, a new journal */
int pxfer_partial_write_records(int fd, uint64_t off,
				const struct pxfer_partial_rec *r, unsigned int n,
				uint64_t nonce)
{
	uint8_t buf[WRITE_RECS * PXFER_JOURNAL_REC_LEN];
	int ret = 0;

	for (unsigned int i = 0; i < n && !ret;) {
		unsigned int k = 0;

		for (; k < WRITE_RECS && i < n; k++, i++)
			pxfer_partial_record_encode(buf + k * PXFER_JOURNAL_REC_LEN,
						    &r[i], nonce);
		ret = pxfer_pwrite_full(fd, buf, (size_t)k * PXFER_JOURNAL_REC_LEN, off);
		off += (uint64_t)k * PXFER_JOURNAL_REC_LEN;
	}
	return ret;
}

/*
 * Make the batch's @n records durable: the data first, then the records
 * appended. Every record of the batch was added after its write
 * completed, and before this fdatasync started, so the fdatasync covers
 * its bytes. Without the lock: only the one flushing touches the batch,
 * the journal's end and counts, and the error.
 */
static int flush_batch(struct pxfer_partial *p, unsigned int n)
{
	unsigned int recs = p->jrecs, small = p->jsmall;
	int ret = 0;

	if (n && p->err)
		ret = p->err;
	/* after a failed fdatasync the kernel may have dropped dirty pages
	 * and the next one succeeds: nothing can be trusted as durable */
	else if (n && fdatasync(p->fd))
		ret = p->err = -errno;
	/*
	 * A failed append leaves the journal's end where it was: the next
	 * batch overwrites what landed, and a whole record that stays
	 * describes durable data anyway, a torn one is ignored.
	 */
	if (!ret && n) {
		n = batch_keep(p, n);
		ret = pxfer_partial_write_records(p->jfd, p->jend, p->batch, n,
						  p->nonce);
		if (!ret) {
			p->jend += (uint64_t)n * PXFER_JOURNAL_REC_LEN;
		} else {
			p->jrecs = recs;
			p->jsmall = small;
		}
	}
	batch_shrink(p);
	pthread_mutex_lock(&p->lock);
	p->flushing = 0;
	p->full = p->jrecs >= PXFER_PARTIAL_RECORDS_MAX;
	p->small_full = p->jsmall >= PXFER_PARTIAL_SMALL_MAX;
	pthread_cond_broadcast(&p->flushed);
	pthread_mutex_unlock(&p->lock);
	return ret;
}

int pxfer_partial_add(struct pxfer_partial *p, uint64_t off, uint32_t len,
		      const struct pxfer_digest *h)
{
	int small = len < PXFER_PARTIAL_SMALL, ret = 0;
	double now;
	unsigned int n;

	if (!len)
		return 0;
	now = now_coarse();
	pthread_mutex_lock(&p->lock);
	if (small && pend_merge(p, off, len))
		goto added;
	for (;;) {
		/* past what a journal takes: not recorded, sent again */
		if (p->full || (small && p->small_full)) {
			pthread_mutex_unlock(&p->lock);
			return ret;
		}
		if (p->npend < p->pend_cap || !pend_grow(p))
			break;
		/* no room: what is pending is flushed first */
		if (p->flushing) {
			pthread_cond_wait(&p->flushed, &p->lock);
			continue;
		}
		n = take_batch(p);
		pthread_mutex_unlock(&p->lock);
		ret = flush_batch(p, n);
		pthread_mutex_lock(&p->lock);
	}
	if (!p->npend)
		p->pend_since = now;
	p->pend[p->npend++] = (struct pxfer_partial_rec){ .off = off, .len = len,
							   .h = *h };
added:
	p->pend_bytes += len;
	/* by bytes, or by time: what a crash loses is bounded by both */
	if (p->flushing || (p->pend_bytes < PXFER_PARTIAL_FLUSH &&
			    now - p->pend_since < p->age)) {
		pthread_mutex_unlock(&p->lock);
		return ret;
	}
	n = take_batch(p);
	pthread_mutex_unlock(&p->lock);
	return flush_batch(p, n) ?: ret;
}

int pxfer_partial_flush(struct pxfer_partial *p)
{
	unsigned int n;

	pthread_mutex_lock(&p->lock);
	while (p->flushing)
		pthread_cond_wait(&p->flushed, &p->lock);
	n = take_batch(p);
	pthread_mutex_unlock(&p->lock);
	return flush_batch(p, n);
}

/*
 * @p's pending records, if the oldest is @age seconds old at @now and no
 * flush is under way: flushed. The seconds until they are due otherwise
 * (@age when nothing is pending).
 */
static double flush_if_old(struct pxfer_partial *p, double now)
{
	double wait = p->age;
	unsigned int n;

	pthread_mutex_lock(&p->lock);
	if (p->npend && !p->flushing) {
		wait = p->pend_since + p->age - now;
		if (wait <= 0) {
			n = take_batch(p);
			pthread_mutex_unlock(&p->lock);
			flush_batch(p, n);
			return p->age;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return wait;
}

double pxfer_partials_flush_old(struct pxfer_partials *ps)
{
	double next = ps->age;

	if (ps->dirfd < 0)
		return next;
	pthread_mutex_lock(&ps->lock);
	for (struct pxfer_partial *p = ps->open; p; p = p->next) {
		/* read again: a flush before may have taken long */
		double wait = flush_if_old(p, now_coarse());

		if (wait < next)
			next = wait;
	}
	pthread_mutex_unlock(&ps->lock);
	return next;
}
