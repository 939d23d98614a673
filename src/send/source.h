/* SPDX-License-Identifier: MIT */
/*
 * Where a session's entries come from when they are not its own walk of
 * the PATHs: a job's work (src/api/jobsend.c) hands a session the
 * entries of the units its rank pulled, and hears how each ended. The
 * session calls ->next where it would walk on, and ->ended once for
 * every entry ->next gave it: when the receiver is done with it (named,
 * found the same, or for a range its bytes on the receiver's disk), when
 * it failed, or when the session ends with it still in flight.
 *
 * The calls are the session coordinator's, one at a time.
 */
#ifndef PXFER_SEND_SOURCE_H
#define PXFER_SEND_SOURCE_H

#include <stdint.h>
#include "send/walk.h"

/* the length of a job's identity, bound into the ranges it sends */
#define PXFER_JOB_ID_LEN 16

struct send_source;

/* how an entry ended in a session */
struct send_ended {
	int code;	/* 0 done, or the positive errno it failed with */
	/* it did not fail but wants another session (the receiver was busy
	 * with it, it changed while it was sent, the session broke): it is
	 * not counted in the session's statistics */
	int again;
	int same;	/* done: the receiver had it (FILE_OK SAME) */
	uint64_t bytes;	/* what was sent of it in this session */
};

struct send_source_ops {
	/*
	 * next - the next entry to send: 1 with @e filled (its pointers
	 * valid until the next call; e->tag names it to ->ended, and
	 * e->range_len, when not 0, asks for only those bytes of the file),
	 * 0 when there is nothing more for this session, -EAGAIN when
	 * there is nothing now (ask again once an entry ended), or another
	 * negative errno that fails the session.
	 */
	int (*next)(struct send_source *src, struct pxfer_walk_entry *e);
	/* ended - entry @tag is over in this session, as @how says */
	void (*ended)(struct send_source *src, uint64_t tag,
		      const struct send_ended *how);
	/*
	 * attach - optional: entries may come while the session waits (a
	 * live source): the session's @wake_fd, to pxfer_wake when one
	 * does, from any thread; -1 as the session ends, after which it is
	 * not written to. The session asks ->next again each turn.
	 */
	void (*attach)(struct send_source *src, int wake_fd);
};

struct send_source {
	const struct send_source_ops *ops;
	/* the job whose ranges this session sends (a range FILE carries it) */
	uint8_t job[PXFER_JOB_ID_LEN];
};

#endif
