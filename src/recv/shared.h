/* SPDX-License-Identifier: MIT */
/*
 * Partials shared by the sessions of one receiver process: a job that cut
 * a large file into ranges (FILE with PXFER_FILE_RANGE) sends them from
 * several sessions at once, into one partial. The registry keeps, for
 * each such partial, by its key (the file's path from the top
 * directory): the job, the file's size and mtime, the open partial, the
 * sessions that hold it (references), the ranges they are sending
 * (claims, never overlapping) and the bytes known to be on disk (what
 * the journal held when the partial was opened and checked, and the
 * ranges completed since). The session that lets go of the last
 * reference closes the partial, or names the file when every byte is on
 * disk (recv/rrange.c).
 *
 * Bounded by what the sessions hold: an entry exists only while a
 * session holds a reference, a session holds at most one per file id,
 * and each reference has at most one claim; an entry's runs on disk grow
 * by at most one a completed claim and a claim is refused once it has
 * RECV_SHARED_RUNS_MAX of them.
 *
 * Threads: every call from any thread (the registry's lock). The partial
 * an entry holds is used as partial.h says: its adds and flushes from any
 * thread; its open, commit and close by the session that made the entry
 * before it is ready and by the one its last reference went from after,
 * under the entry's lock.
 */
#ifndef PXFER_RECV_SHARED_H
#define PXFER_RECV_SHARED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "core/proto.h"
#include "recv/partial.h"

/* runs of bytes on disk an entry keeps; a claim is refused beyond */
#define RECV_SHARED_RUNS_MAX	4096u
/*
 * A partial whose last reference went before every byte came stays open,
 * parked, for the next range of its job (a chain's hop sends them one
 * after another, as each arrives at it): it is not opened and read back
 * again for each. At most this many, for at most this long.
 */
#define RECV_SHARED_PARKED_MAX	16u
#define RECV_SHARED_PARK_SECS	5.0

struct recv_shared_span {
	uint64_t off, len;
};

struct recv_shared_ent {
	char *key;			/* the file's path from the top */
	uint8_t job[PXFER_JOB_LEN];
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	/* the open partial: the maker's until ready, then the entry's */
	struct pxfer_partial *part;
	unsigned int refs;
	int ready;			/* the opening check is done */
	struct recv_shared_span *claims;	/* in flight, one a reference */
	unsigned int nclaims, claims_cap;
	struct recv_shared_span *disk;	/* on disk: sorted, merged */
	unsigned int ndisk, disk_cap;
	pthread_mutex_t lock;		/* the partial's one-thread calls */
	int parked;			/* no reference: open for the next */
	double parked_at;
	struct recv_shared_ent *next;
};

struct recv_shared {
	pthread_mutex_t lock;		/* the list, and what entries hold */
	struct recv_shared_ent *head;
	unsigned int n;
	unsigned int nparked;
	/* the store the shared partials are opened in, on first use */
	struct pxfer_partials store;
	atomic_int store_open;		/* 1 once open */
};

/* what recv_shared_take and recv_shared_put say */
enum {
	RECV_SHARED_JOINED = 0,	/* a ready entry: the caller holds a claim */
	RECV_SHARED_MADE = 1,	/* a new entry: the caller opens the partial */
	RECV_SHARED_HELD = 0,	/* put: others still hold the partial */
	RECV_SHARED_CLOSE = 1,	/* put: the last reference, not all on disk */
	RECV_SHARED_NAME = 2,	/* put: the last reference, all on disk */
};

/* pxfer-style: 0 or -errno */
int recv_shared_init(struct recv_shared *sh);
/* every entry must be gone; closes the store */
void recv_shared_release(struct recv_shared *sh);

/*
 * recv_shared_take - a session asks for range [@off, @off + @len) of the
 * file of @key, @size and mtime @sec.@nsec, for job @job. MADE: no entry
 * was there; one is made, with the caller's reference and claim, not
 * ready (no one joins it) until the caller has opened and checked the
 * partial (recv_shared_ready) or given up (recv_shared_put). JOINED: an
 * entry of the same job, size and mtime, ready, whose claims do not
 * overlap the range: the caller holds a reference and a claim, and
 * (*@e)->part. -EBUSY: anything else (another job's, another version, an
 * overlapping claim, not ready, or RECV_SHARED_RUNS_MAX runs); -ENOMEM.
 */
int recv_shared_take(struct recv_shared *sh, const char *key,
		     const uint8_t job[PXFER_JOB_LEN], uint64_t size,
		     int64_t sec, uint32_t nsec, uint64_t off, uint64_t len,
		     struct recv_shared_ent **e);

/*
 * recv_shared_ready - the maker of @e opened @part and checked what it
 * holds: runs @r[0..@n) are on disk; others may join. 0 or -ENOMEM
 * (nothing changed: the caller puts its reference back).
 */
int recv_shared_ready(struct recv_shared *sh, struct recv_shared_ent *e,
		      struct pxfer_partial *part,
		      const struct pxfer_held_run *r, unsigned int n);

/*
 * recv_shared_put - the caller's range [@off, @off + @len) of @e is over:
 * @durable, its bytes are on disk (flushed to the journal) and added to
 * what the entry holds; its claim and reference are dropped. HELD: others
 * hold the entry. CLOSE or NAME: that was the last reference; the entry
 * is off the registry (a FILE for the same file opens the partial anew,
 * and finds it busy while it is still open), and the caller closes its
 * partial (CLOSE) or names the file, every byte being on disk (NAME),
 * then frees it with recv_shared_free. A ready entry that is not whole
 * is parked instead (HELD), while there is room: the registry closes it
 * when no session took it up within RECV_SHARED_PARK_SECS.
 */
int recv_shared_put(struct recv_shared *sh, struct recv_shared_ent *e,
		    uint64_t off, uint64_t len, int durable);
/*
 * recv_shared_unpark - the parked entries older than
 * RECV_SHARED_PARK_SECS (@all: every one), off the registry, as a list
 * (by next) for the caller to close (recv/rrange.c); *@left: how many
 * are still parked
 */
struct recv_shared_ent *recv_shared_unpark(struct recv_shared *sh, int all,
					   unsigned int *left);

/* recv_shared_free - an entry recv_shared_put took off, after its partial */
void recv_shared_free(struct recv_shared_ent *e);

/* recv_shared_covered - bytes of @e's file known on disk (tests, logs) */
uint64_t recv_shared_covered(struct recv_shared *sh, struct recv_shared_ent *e);

/* recv_shared_count - entries in the registry (tests, metrics) */
unsigned int recv_shared_count(struct recv_shared *sh);

/*
 * recv_shared_clip - what runs @r[0..@n), made of records @recs[0..@nrecs)
 * (sorted, the partial's), hold inside [@off, @off + @len), as FILE_OK
 * runs: each run cut at its records' edges (a record across an edge of
 * the range is left out, to be sent again), @ok's runs, held and digest
 * (the sum of the records kept) filled, and its state PXFER_HAVE_PART, or
 * PXFER_HAVE_NONE when nothing is left (a state other than PART is kept).
 * Runs whose records are not all there are left out.
 */
void recv_shared_clip(const struct pxfer_held_run *r, unsigned int n,
		      const struct pxfer_partial_rec *recs, unsigned int nrecs,
		      uint64_t off, uint64_t len, struct pxfer_file_ok *ok);

/*
 * recv_shared_store - the store shared partials live in, opened below
 * @rootfd on first use (tried again each time until it opens), counted
 * in @use. NULL when it cannot be used (*@err the -errno of
 * pxfer_partials_open; the store's bad and problem say why).
 */
struct pxfer_partials *recv_shared_store(struct recv_shared *sh, int rootfd,
					 struct pxfer_partials_use *use,
					 int *err);

/* recv_shared_flush_old - pxfer_partials_flush_old of the store, if it is
 * open: the seconds until it is due again */
double recv_shared_flush_old(struct recv_shared *sh);

#endif
