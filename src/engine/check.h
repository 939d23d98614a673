/* SPDX-License-Identifier: MIT */
/*
 * Checks of held data, off the control thread: the pieces of a file that
 * one side holds (the receiver's journalled records, the sender's runs of
 * the source) are read back and hashed (core/digest.h) by a few threads
 * of their own, in parallel, while the coordinator goes on with its loop
 * (PINGs, credits, other files). A file's pieces may be split among the
 * threads: the digest of a set of pieces is the sum of their hashes,
 * whatever the order.
 *
 * The coordinator (one thread) submits jobs and reaps them; the threads
 * are started with the first job, so a session that checks nothing has
 * none. Its wake-up fd is bumped when a job is done.
 */
#ifndef PXFER_ENGINE_CHECK_H
#define PXFER_ENGINE_CHECK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/digest.h"

#define PXFER_CHECK_THREADS_MAX 4	/* threads of a pool at most */

/* @len bytes at @off, that are to hash to @want (when compared) */
struct pxfer_check_piece {
	uint64_t off;
	uint64_t len;
	struct pxfer_digest want;
};

/*
 * A file to check: the caller fills the first fields and owns the job
 * (and @pieces or @runs, and @fd) until it is reaped, or the pool
 * released. Its pieces are either @pieces[0..@n), or, when @pieces is
 * NULL, the records runs @runs[0..@nruns) are made of (a FILE_OK's: each
 * run in records of its unit, the last one shorter), cut as they are
 * handed out so that no array of them is made: a peer's runs of 1-byte
 * units over a large range cost time bounded by the data, not memory.
 */
struct pxfer_check_job {
	int fd;
	struct pxfer_check_piece *pieces;
	const struct pxfer_held_run *runs;
	unsigned int nruns;
	unsigned int n;		/* pieces: given, or set by pxfer_check_job_runs */
	int compare;		/* each piece against its want (@pieces only) */
	/* one piece, @pieces[0], at 0: its digest is XXH3_128bits of its
	 * bytes in order (pxfer_digest_whole), its progress counted as it
	 * reads */
	int whole;
	uint64_t id;		/* the caller's */

	/* the outcome, once reaped */
	struct pxfer_digest sum;	/* of the pieces' hashes */
	unsigned int bad;	/* pieces that did not hash to their want */
	uint64_t bad_off;	/* the first such piece's offset */
	int err;		/* 0, or the first read's -errno */

	/* private: the pool's lock guards them */
	unsigned int next;	/* the next piece to hand out */
	unsigned int run;	/* ... of @runs: its run, and where in it */
	uint64_t run_off;
	unsigned int done;	/* pieces hashed */
	struct pxfer_check_job *link;
};

struct pxfer_check {
	unsigned int nthreads;	/* to start */
	int wake_fd;		/* bumped when a job is done */
	pthread_t thread[PXFER_CHECK_THREADS_MAX];
	unsigned int started;
	int is_init;
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct pxfer_check_job *queue, **queue_tail;	/* pieces to hand out */
	struct pxfer_check_job *ready;	/* done, to reap */
	unsigned int jobs;	/* submitted, not reaped */
	int stop;
	atomic_int halt;	/* stop: a whole-file job stops between reads */
	uint64_t queued;	/* bytes submitted (coordinator's) */
	atomic_uint_fast64_t checked;	/* bytes read and hashed */
};

/*
 * pxfer_check_init - a pool of @nthreads threads (1..PXFER_CHECK_THREADS_MAX;
 * 0: as many as pxfer_workers_auto, at most the maximum) that bumps
 * eventfd @wake_fd (may be -1) when a job is done. 0 or -errno.
 */
int pxfer_check_init(struct pxfer_check *c, unsigned int nthreads, int wake_fd);

/*
 * pxfer_check_release - stop the threads (a piece being hashed is
 * finished first; a whole-file job stops at its next read) and free the
 * pool; jobs not reaped are left as they are, the caller's to free. Safe
 * after a failed init, and twice.
 */
void pxfer_check_release(struct pxfer_check *c);

/*
 * pxfer_check_submit - hash @j's pieces (their length in c->queued). An
 * empty job is done at once. 0 or -errno (the threads cannot start;
 * -EINVAL: a whole-file job that is not one piece at 0).
 */
int pxfer_check_submit(struct pxfer_check *c, struct pxfer_check_job *j);

/* pxfer_check_reap - a job that is done, or NULL */
struct pxfer_check_job *pxfer_check_reap(struct pxfer_check *c);

/* pxfer_check_pending - jobs submitted and not reaped */
static inline unsigned int pxfer_check_pending(const struct pxfer_check *c)
{
	return c->jobs;
}

/* pxfer_check_done - bytes read and hashed so far; any thread */
static inline uint64_t pxfer_check_done(struct pxfer_check *c)
{
	return atomic_load_explicit(&c->checked, memory_order_relaxed);
}

/*
 * pxfer_check_job_runs - make @j the check of runs @r[0..@n) (kept by
 * pointer: they must outlive the job): its pieces are their records,
 * j->n of them. 0, or -EINVAL for a run of unit 0, one that wraps, or
 * more than 2^31 records in all.
 */
int pxfer_check_job_runs(struct pxfer_check_job *j,
			 const struct pxfer_held_run *r, unsigned int n);

#endif
