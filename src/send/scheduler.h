/* SPDX-License-Identifier: MIT */
/*
 * The sender's chunk scheduler: the one place that decides which bytes go
 * in which chunk. Files enter when the receiver has created them
 * (FILE_OK); workers ask for the next chunk when they hold a credit.
 * A large file is cut into chunk-sized pieces taken by whichever worker
 * asks next, so one file spreads over all workers; small files are packed,
 * several to a chunk, so per-file cost does not dominate. Only data
 * regions are planned (SEEK_DATA / SEEK_HOLE): holes stay holes.
 *
 * When a file has all its data planned and no segment in flight, on_end is
 * called (with the scheduler lock held) so the caller can send FILE_END.
 */
#ifndef PXFER_SCHEDULER_H
#define PXFER_SCHEDULER_H

#include <pthread.h>
#include <stdint.h>
#include "core/proto.h"

struct pxfer_sfile {
	uint64_t id;
	int fd;
	uint64_t size;
	uint64_t cursor;	/* next byte not yet planned */
	uint64_t data_end;	/* end of the data region holding cursor;
				   size if the file is known to have no holes */
	uint64_t sent;		/* bytes of segments sent */
	unsigned int inflight;	/* segments planned, not yet done */
	int all_planned;
	int ended;		/* on_end was called */
	int err;		/* first error (positive errno) */
	char *src;		/* local path, for messages */
	struct pxfer_sfile *next;
};

struct pxfer_plan_seg {
	struct pxfer_sfile *f;
	uint64_t off;
	uint32_t len;
};

struct pxfer_plan {
	unsigned int nseg;
	uint32_t len;
	struct pxfer_plan_seg seg[PXFER_SEG_MAX];
};

struct pxfer_sched {
	pthread_mutex_t lock;
	struct pxfer_sfile *head, *tail;
	uint32_t chunk;
	unsigned int max_seg;
	void (*on_end)(void *arg, struct pxfer_sfile *f);
	void *arg;
};

int pxfer_sched_init(struct pxfer_sched *s, uint32_t chunk,
		     unsigned int max_seg,
		     void (*on_end)(void *arg, struct pxfer_sfile *f),
		     void *arg);
void pxfer_sched_release(struct pxfer_sched *s);

/* pxfer_sched_add - queue a created file for planning */
void pxfer_sched_add(struct pxfer_sched *s, struct pxfer_sfile *f);

/*
 * pxfer_sched_next - plan the next chunk into @p. Returns 1 with at least
 * one segment, 0 if nothing is ready. A large file is never split to fill
 * the tail of a chunk begun by smaller ones, so its chunks stay aligned.
 */
int pxfer_sched_next(struct pxfer_sched *s, struct pxfer_plan *p);

/*
 * pxfer_sched_done - a planned segment of @f was sent (@err 0) or given up
 * (@err a positive errno; no more of the file is planned). Returns 1 if
 * @err is the file's first error (so it is reported once), else 0.
 */
int pxfer_sched_done(struct pxfer_sched *s, struct pxfer_sfile *f,
		     uint32_t len, int err);

/* pxfer_sched_ended - whether on_end has run for @f (under the lock) */
int pxfer_sched_ended(struct pxfer_sched *s, struct pxfer_sfile *f);

#endif
