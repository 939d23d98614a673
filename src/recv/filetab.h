/* SPDX-License-Identifier: MIT */
/*
 * The receiver's byte accounting for the files in flight, indexed by file
 * id (ids are slots below max_files, reused after FILE_DONE/FILE_ERR).
 * Workers reserve a chunk's byte ranges before its payload lands and
 * count them written when the writes complete; the coordinator records
 * FILE_END. A file is complete when the sender has said how many bytes it
 * sent (FILE_END) and exactly that many are written, with none still in
 * flight. The call that makes a file complete says so (returns 1), once:
 * its caller then finishes the file (recv/rfile.c). Nothing here opens,
 * names or writes a file, and nothing calls back.
 *
 * Thread-safe: every call takes the table's lock.
 */
#ifndef PXFER_RECV_FILETAB_H
#define PXFER_RECV_FILETAB_H

#include <pthread.h>
#include <stdint.h>
#include "core/proto.h"

struct pxfer_fstate {
	int used;
	uint64_t size;		/* from FILE: no byte beyond it */
	uint64_t submitted;	/* bytes reserved (writes started) */
	uint64_t written;	/* bytes whose writes completed */
	uint64_t held;		/* bytes a partial held from before */
	uint64_t total;		/* from FILE_END */
	int end_known;		/* 1: FILE_END seen; 2: complete */
	int end_code;		/* FILE_END's code: the sender gave up */
	int err;		/* first write error, positive errno */
	/* the byte ranges reserved so far, sorted, disjoint, not adjacent:
	 * a chunk that overlaps one is refused */
	struct pxfer_range {
		uint64_t lo, hi;	/* [lo, hi) */
	} *rng, rng_in[2];	/* rng_in until more are needed */
	unsigned int nrng, rng_cap;
};

/* ranges kept for all files of a table at once, at most */
#define PXFER_RANGES_MAX	(1u << 20)

struct pxfer_filetab {
	pthread_mutex_t lock;
	struct pxfer_fstate *f;
	unsigned int n;
	unsigned int used;	/* files open */
	unsigned int nranges;	/* pxfer_fstate.nrng of all files */
};

int pxfer_filetab_init(struct pxfer_filetab *t, unsigned int n);
void pxfer_filetab_release(struct pxfer_filetab *t);

/*
 * pxfer_filetab_open - file @id (free) is created and will take up to
 * @size bytes. 0, or -EPROTO if @id is out of range or in use.
 */
int pxfer_filetab_open(struct pxfer_filetab *t, uint64_t id, uint64_t size);

/*
 * pxfer_filetab_hold - bytes [@off, @off + @len) of @id are there from
 * before (a partial): no chunk may bring them again, and the file is
 * complete when the rest is in. Call before any chunk of @id can arrive.
 * 0, or -EPROTO (overlapping, beyond the file), -ENOMEM.
 */
int pxfer_filetab_hold(struct pxfer_filetab *t, uint64_t id, uint64_t off,
		       uint64_t len);

/* pxfer_filetab_close - forget @id: complete, failed or abandoned */
void pxfer_filetab_close(struct pxfer_filetab *t, uint64_t id);

/* pxfer_filetab_in_use - whether @id is open (0 when out of range) */
int pxfer_filetab_in_use(struct pxfer_filetab *t, uint64_t id);

/* pxfer_filetab_count - how many files are open */
unsigned int pxfer_filetab_count(struct pxfer_filetab *t);

/*
 * pxfer_filetab_reserve - check every segment of @ch against its file
 * (open, not ended beyond, inside its size, overlapping no byte reserved
 * before) and reserve them all, or none. 0 or -EPROTO; -ENOMEM, or
 * -EPROTO for a table holding PXFER_RANGES_MAX ranges already, may leave
 * the chunk's first segments reserved (the session cannot go on after
 * either).
 */
int pxfer_filetab_reserve(struct pxfer_filetab *t, const struct pxfer_chunk *ch);

/*
 * pxfer_filetab_unreserve - give back what pxfer_filetab_reserve took
 * for @ch, whose payload never arrived whole (its connection broke): the
 * sender sends those bytes again, over another connection. 0, -ENOMEM
 * (a range split in two), or -EINVAL for bytes @ch did not reserve.
 */
int pxfer_filetab_unreserve(struct pxfer_filetab *t, const struct pxfer_chunk *ch);

/*
 * pxfer_filetab_written - @len bytes of @id written (or failed with
 * @err, a positive errno). 1 when this made the file complete, else 0.
 */
int pxfer_filetab_written(struct pxfer_filetab *t, uint64_t id, uint32_t len,
			  int err);

/*
 * pxfer_filetab_end - FILE_END for @id: @total bytes sent, @code nonzero
 * when the sender gave the file up. 1 when this made the file complete,
 * 0 when bytes are still to come, -EPROTO for an id not open, a second
 * FILE_END, or a total beyond what the file lacked or below what arrived.
 */
int pxfer_filetab_end(struct pxfer_filetab *t, uint64_t id, uint64_t total,
		      int code);

/*
 * pxfer_filetab_outcome - how complete file @id ended: 0 with its byte
 * count in *total, or a positive errno: the sender's code (*by_sender
 * set) or the first write error.
 */
int pxfer_filetab_outcome(struct pxfer_filetab *t, uint64_t id,
			  uint64_t *total, int *by_sender);

#endif
