/* SPDX-License-Identifier: MIT */
/*
 * The receiver's table of files in flight, indexed by file id (ids are
 * slots < max_files, reused after FILE_DONE/FILE_ERR). The coordinator
 * opens and finalizes files; workers reserve byte ranges when a chunk
 * arrives and account for them when the write completes. Whoever completes
 * a file runs the finish callback (the receiver's rename) before queueing
 * it for the coordinator. A file is
 * complete when the sender has said how many bytes it sent (FILE_END) and
 * exactly that many are written, with none still in flight; only then may
 * its descriptor be closed and its temporary name replaced by the real one.
 */
#ifndef PXFER_FILETAB_H
#define PXFER_FILETAB_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include "core/proto.h"

struct pxfer_rfile {
	int used;
	int fd;			/* the temporary file */
	int dirfd;		/* its directory */
	char *path;		/* relative path, for messages */
	const char *base;	/* final name, inside path */
	char *tmp;		/* temporary name in dirfd, NULL if unnamed */
	uint64_t size;
	uint64_t submitted;	/* bytes whose writes were started */
	uint64_t written;	/* bytes whose writes completed */
	uint64_t total;		/* from FILE_END */
	int end_known;
	int end_code;
	int err;		/* first write error, positive errno */
	int finished;		/* the finish callback completed it */
	int finish_err;		/* ... with this positive errno, or 0 */
	uint32_t mode;
	int mode_set;		/* already applied (an unnamed file) */
	struct timespec times[2];
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
	struct pxfer_rfile *f;
	unsigned int n;
	unsigned int used;
	uint32_t *doneq;	/* ids ready to finalize */
	unsigned int dhead, dcount;
	int wake_fd;		/* the coordinator's */
	/*
	 * Called, if set, in the thread whose call completed a file (a worker
	 * whose write was the last, or the coordinator on FILE_END), without
	 * the lock, before the file is queued as done: the file is no longer
	 * touched by anyone else, so its last system calls can run there.
	 * It returns 0 when the file may be queued now, or 1 when it handed
	 * the file on, and whoever took it calls pxfer_filetab_push_done.
	 */
	int (*finish)(void *arg, struct pxfer_rfile *f);
	void *finish_arg;
	unsigned int nranges;	/* pxfer_rfile.nrng of all files */
};

int pxfer_filetab_init(struct pxfer_filetab *t, unsigned int n, int wake_fd);
void pxfer_filetab_release(struct pxfer_filetab *t);

/*
 * pxfer_filetab_reserve - check every segment of @ch against its file
 * (open, not ended beyond, inside its size, overlapping no byte reserved
 * before) and reserve them all, or none. Fills @fds with each segment's
 * descriptor. 0 or -EPROTO; -ENOMEM, or -EPROTO for a table holding
 * PXFER_RANGES_MAX ranges already, may leave the chunk's first segments
 * reserved (the session cannot go on after either).
 */
int pxfer_filetab_reserve(struct pxfer_filetab *t, const struct pxfer_chunk *ch,
			  int *fds);

/* pxfer_filetab_forget - free @f's ranges; call with the lock held */
void pxfer_filetab_forget(struct pxfer_filetab *t, struct pxfer_rfile *f);

/* pxfer_filetab_written - @len bytes of @id written (or failed with @err) */
void pxfer_filetab_written(struct pxfer_filetab *t, uint64_t id, uint32_t len,
			   int err);

/* pxfer_filetab_end - FILE_END arrived; 0 or -EPROTO */
int pxfer_filetab_end(struct pxfer_filetab *t, uint64_t id, uint64_t total,
		      int code);

/* pxfer_filetab_push_done - queue @id as done, for a deferred finish */
void pxfer_filetab_push_done(struct pxfer_filetab *t, uint64_t id);

/*
 * pxfer_filetab_batch_begin / _end - between the two, files this thread
 * queues as done do not wake the coordinator one by one: _end returns 1
 * if any did need it, and the caller then wakes it (t->wake_fd) once. A
 * worker brackets each turn of its loop so.
 */
void pxfer_filetab_batch_begin(struct pxfer_filetab *t);
int pxfer_filetab_batch_end(struct pxfer_filetab *t);

/* pxfer_filetab_pop_done - next id ready to finalize; 1, or 0 if none */
int pxfer_filetab_pop_done(struct pxfer_filetab *t, uint64_t *id);

#endif
