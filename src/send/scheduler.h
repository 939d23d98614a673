/* SPDX-License-Identifier: MIT */
/*
 * The sender's chunk scheduler: the one place that decides which bytes go
 * in which chunk. Files enter when the receiver has created them
 * (FILE_OK); workers ask for the next chunk when they hold a credit.
 * A large file is cut into chunk-sized pieces taken by whichever worker
 * asks next, so one file spreads over all workers; small files are packed,
 * several to a chunk, so per-file cost does not dominate. Only data
 * regions are planned (SEEK_DATA / SEEK_HOLE): holes stay holes, and so
 * are the runs the receiver holds already (a partial file).
 *
 * A file ends when all its data is planned and no segment is in flight
 * (sent, or given up after an error): the scheduler puts it on a list of
 * ended files that its callers take with pxfer_sched_take_ended, to send
 * FILE_END outside the scheduler's lock. It calls nothing of theirs.
 */
#ifndef PXFER_SCHEDULER_H
#define PXFER_SCHEDULER_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include "core/proto.h"

struct pxfer_sfile {
	uint64_t id;
	int fd;
	uint64_t size;
	uint64_t cursor;	/* next byte not yet planned */
	uint64_t data_end;	/* end of the data region holding cursor */
	int noholes;		/* the file is known to have no holes */
	/* what the receiver holds already (a partial): not planned */
	const struct pxfer_held_run *held;
	unsigned int nheld, held_i;
	/* a range (range_len not 0): only these bytes are sent, the rest
	 * is in held; FILE_END's digest is the range's */
	uint64_t range_off, range_len;
	uint64_t sent;		/* bytes of segments sent */
	unsigned int inflight;	/* segments planned, not yet done */
	int all_planned;
	int ended;		/* put on the list of ended files */
	int err;		/* first error (positive errno) */
	char *src;		/* local path, for messages */
	struct stat st;		/* as it was when announced: changed since? */
	int stable;		/* not checked for that (walk.h) */
	/* its bytes come from a relay, not from fd: planned so far */
	int relay;
	uint64_t relay_planned;
	struct pxfer_sfile *next;	/* in the queue, then the ended list */
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
	struct pxfer_sfile *ended, **ended_tail;	/* not yet taken */
};

int pxfer_sched_init(struct pxfer_sched *s, uint32_t chunk,
		     unsigned int max_seg);
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

/*
 * pxfer_sched_relay - @len bytes of relay file @f (not queued: its
 * chunks come from a relay) are planned; it is all planned at range_len
 */
void pxfer_sched_relay(struct pxfer_sched *s, struct pxfer_sfile *f,
		       uint32_t len);

/*
 * pxfer_sched_relay_end - relay file @f gets no more bytes than those
 * planned (@err: it failed, with that code); it ends once they are done
 */
void pxfer_sched_relay_end(struct pxfer_sched *s, struct pxfer_sfile *f,
			   int err);

/* pxfer_sched_ended - whether @f has ended (taken or not) */
int pxfer_sched_ended(struct pxfer_sched *s, struct pxfer_sfile *f);

/*
 * pxfer_sched_take_ended - the files that ended since the last call, in
 * the order they ended, linked by their next field (NULL: none). The
 * scheduler is done with them; any thread may take them, and whoever
 * takes a file sends its FILE_END.
 */
struct pxfer_sfile *pxfer_sched_take_ended(struct pxfer_sched *s);

#endif
