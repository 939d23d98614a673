/* SPDX-License-Identifier: MIT */
/*
 * filetab_test: the receiver's per-file byte accounting (src/recv/filetab.c)
 * and the queue of ids (src/core/idq.h) on which complete files are handed
 * from the workers to the coordinator.
 *
 *  - reserve refuses unknown ids, closed slots, segments beyond the size or
 *    beyond the total announced by FILE_END, and two segments of one file
 *    in one chunk that together exceed its size; a refused chunk reserves
 *    nothing, not even its good segments;
 *  - reserve refuses bytes already reserved (in an earlier chunk or the
 *    same one), which would let a count that fits leave part of the file
 *    unsent; the ranges merge, scattered ones included, and are freed
 *    with their file or the table;
 *  - written counts bytes and keeps the first error;
 *  - a file is complete exactly once, when FILE_END is known and all its
 *    bytes are written, whichever comes last: the call that completes it
 *    returns 1, every other call 0;
 *  - FILE_END with a total below what was submitted, above the size, twice,
 *    or for an unknown id is refused; open refuses an id in use;
 *  - the outcome says how a complete file ended: its total, the sender's
 *    code, or the first write error;
 *  - ids reused many times through the queue of ids: it wraps around;
 *  - worker threads and a coordinator racing still complete each file
 *    once, after its last byte.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/idq.h"
#include "recv/filetab.h"
#include "test.h"

/* the files the calls below completed, since the last pops() */
static unsigned int completed[64], ncompleted;

static void mark(uint64_t id)
{
	if (id < 64)
		completed[id]++;
	ncompleted++;
}

static void open_file(struct pxfer_filetab *t, uint64_t id, uint64_t size)
{
	T_EXPECT(pxfer_filetab_open(t, id, size) == 0, "open %llu",
		 (unsigned long long)id);
}

static void drop_file(struct pxfer_filetab *t, uint64_t id)
{
	pxfer_filetab_close(t, id);
}

static void written(struct pxfer_filetab *t, uint64_t id, uint32_t len,
		    int err)
{
	if (pxfer_filetab_written(t, id, len, err) == 1)
		mark(id);
}

/* FILE_END: 0 or -EPROTO, as the coordinator sees it */
static int end(struct pxfer_filetab *t, uint64_t id, uint64_t total, int code)
{
	int ret = pxfer_filetab_end(t, id, total, code);

	if (ret == 1)
		mark(id);
	return ret < 0 ? ret : 0;
}

/* how many times @id completed (and, in *others, the rest); forgets them */
static unsigned int pops(struct pxfer_filetab *t, uint64_t id,
			 unsigned int *others)
{
	unsigned int n = id < 64 ? completed[id] : 0;

	(void)t;
	if (others)
		*others = ncompleted - n;
	memset(completed, 0, sizeof(completed));
	ncompleted = 0;
	return n;
}

static uint64_t field(struct pxfer_filetab *t, uint64_t id, int which)
{
	uint64_t v;

	pthread_mutex_lock(&t->lock);
	v = which == 0 ? t->f[id].submitted :
	    which == 1 ? t->f[id].written : (uint64_t)t->f[id].err;
	pthread_mutex_unlock(&t->lock);
	return v;
}

#define SUBMITTED(t, id)	field(t, id, 0)
#define WRITTEN(t, id)		field(t, id, 1)
#define ERR(t, id)		field(t, id, 2)

/* scratch chunk for one() and two() */
static struct pxfer_chunk chbuf;

static void chunk_set(struct pxfer_chunk *c, unsigned int i, uint64_t file,
		      uint64_t off, uint32_t len)
{
	c->seg[i].file = file;
	c->seg[i].offset = off;
	c->seg[i].len = len;
	if (i + 1 > c->nseg)
		c->nseg = i + 1;
	c->len = 0;
	for (unsigned int k = 0; k < c->nseg; k++)
		c->len += c->seg[k].len;
}

static struct pxfer_chunk *one(uint64_t file, uint64_t off, uint32_t len)
{
	memset(&chbuf, 0, sizeof(chbuf));
	chunk_set(&chbuf, 0, file, off, len);
	return &chbuf;
}

static struct pxfer_chunk *two(uint64_t f0, uint64_t o0, uint32_t l0,
			       uint64_t f1, uint64_t o1, uint32_t l1)
{
	memset(&chbuf, 0, sizeof(chbuf));
	chunk_set(&chbuf, 0, f0, o0, l0);
	chunk_set(&chbuf, 1, f1, o1, l1);
	return &chbuf;
}

/* ---- reserve ----------------------------------------------------------- */

static void test_reserve(void)
{
	struct pxfer_filetab t;

	T_EXPECT(pxfer_filetab_init(&t, 8) == 0, "init");
	open_file(&t, 1, 1000);
	open_file(&t, 2, 500);
	open_file(&t, 3, 0);

	/* unknown or closed ids */
	T_EXPECT(pxfer_filetab_reserve(&t, one(8, 0, 1)) == -EPROTO,
		 "id == n");
	T_EXPECT(pxfer_filetab_reserve(&t, one(UINT64_MAX, 0, 1)) ==
		 -EPROTO, "id UINT64_MAX");
	T_EXPECT(pxfer_filetab_reserve(&t, one(0, 0, 1)) == -EPROTO,
		 "closed slot 0");
	T_EXPECT(pxfer_filetab_reserve(&t, one(7, 0, 1)) == -EPROTO,
		 "closed slot 7");

	/* beyond the size */
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 900, 101)) == -EPROTO,
		 "one byte beyond");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 1000, 1)) == -EPROTO,
		 "at the end");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 1001, 1)) == -EPROTO,
		 "offset beyond");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, UINT64_MAX - 10, 100)) ==
		 -EPROTO, "offset + len wrapping");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 0, 1001)) == -EPROTO,
		 "longer than the file");
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 0, 1)) == -EPROTO,
		 "a byte of an empty file");
	T_EXPECT(SUBMITTED(&t, 1) == 0, "nothing reserved: %llu",
		 (unsigned long long)SUBMITTED(&t, 1));

	/* inside */
	T_EXPECT(pxfer_filetab_reserve(&t, two(1, 0, 400, 2, 100, 400)) ==
		 0, "two files");
	T_EXPECT(SUBMITTED(&t, 1) == 400 && SUBMITTED(&t, 2) == 400,
		 "submitted %llu %llu", (unsigned long long)SUBMITTED(&t, 1),
		 (unsigned long long)SUBMITTED(&t, 2));
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 999, 1)) == 0,
		 "the last byte");

	/* more bytes than the file holds, in separate chunks */
	T_EXPECT(pxfer_filetab_reserve(&t, one(2, 0, 101)) == -EPROTO,
		 "file 2 over its size in total");
	T_EXPECT(pxfer_filetab_reserve(&t, one(2, 0, 100)) == 0,
		 "file 2 up to its size");
	T_EXPECT(SUBMITTED(&t, 2) == 500, "file 2 full");

	/* two segments of one file, each inside, together beyond: nothing */
	open_file(&t, 4, 100);
	open_file(&t, 5, 100);
	memset(&chbuf, 0, sizeof(chbuf));
	chunk_set(&chbuf, 0, 5, 0, 10);		/* fine on its own */
	chunk_set(&chbuf, 1, 4, 0, 60);
	chunk_set(&chbuf, 2, 4, 40, 60);	/* 120 bytes of a 100-byte file */
	T_EXPECT(pxfer_filetab_reserve(&t, &chbuf) == -EPROTO,
		 "two segments of one file beyond its size");
	T_EXPECT(SUBMITTED(&t, 4) == 0 && SUBMITTED(&t, 5) == 0,
		 "all or nothing: %llu %llu",
		 (unsigned long long)SUBMITTED(&t, 4),
		 (unsigned long long)SUBMITTED(&t, 5));
	/* the bad segment last, after good ones of other files */
	memset(&chbuf, 0, sizeof(chbuf));
	chunk_set(&chbuf, 0, 5, 0, 10);
	chunk_set(&chbuf, 1, 4, 0, 50);
	chunk_set(&chbuf, 2, 0, 0, 10);		/* closed */
	T_EXPECT(pxfer_filetab_reserve(&t, &chbuf) == -EPROTO,
		 "a closed file last");
	T_EXPECT(SUBMITTED(&t, 4) == 0 && SUBMITTED(&t, 5) == 0,
		 "all or nothing again: %llu %llu",
		 (unsigned long long)SUBMITTED(&t, 4),
		 (unsigned long long)SUBMITTED(&t, 5));
	/* exactly the size in two segments is fine */
	T_EXPECT(pxfer_filetab_reserve(&t, two(4, 0, 50, 4, 50, 50)) == 0,
		 "two halves");
	T_EXPECT(SUBMITTED(&t, 4) == 100, "two halves reserved: %llu",
		 (unsigned long long)SUBMITTED(&t, 4));

	/* beyond the total announced by FILE_END */
	open_file(&t, 6, 1000);
	T_EXPECT(pxfer_filetab_reserve(&t, one(6, 0, 100)) == 0, "f6 a");
	T_EXPECT(end(&t, 6, 300, 0) == 0, "f6 end 300");
	T_EXPECT(pxfer_filetab_reserve(&t, one(6, 500, 201)) == -EPROTO,
		 "beyond the announced total");
	T_EXPECT(pxfer_filetab_reserve(&t, two(6, 500, 150, 6, 700, 51)) ==
		 -EPROTO, "two segments beyond the announced total");
	T_EXPECT(SUBMITTED(&t, 6) == 100, "f6 submitted %llu",
		 (unsigned long long)SUBMITTED(&t, 6));
	T_EXPECT(pxfer_filetab_reserve(&t, one(6, 500, 200)) == 0,
		 "up to the announced total");
	T_EXPECT(pxfer_filetab_reserve(&t, one(6, 800, 1)) == -EPROTO,
		 "one past the announced total");
	T_EXPECT(!pops(&t, 6, NULL), "f6 not done before its writes");
	T_EXPECT(pxfer_filetab_open(&t, 6, 10) == -EPROTO, "open an id in use");
	T_EXPECT(pxfer_filetab_open(&t, 8, 10) == -EPROTO, "open id n");
	T_EXPECT(pxfer_filetab_in_use(&t, 6) && !pxfer_filetab_in_use(&t, 7) &&
		 !pxfer_filetab_in_use(&t, UINT64_MAX), "in use");
	T_EXPECT(pxfer_filetab_count(&t) == 6, "6 open: %u",
		 pxfer_filetab_count(&t));
	pxfer_filetab_release(&t);
	pxfer_filetab_release(&t);	/* harmless twice */
}

/* ---- overlapping bytes --------------------------------------------------- */

static unsigned int nranges(struct pxfer_filetab *t, uint64_t id)
{
	unsigned int n;

	pthread_mutex_lock(&t->lock);
	n = t->f[id].nrng;
	pthread_mutex_unlock(&t->lock);
	return n;
}

static void test_overlap(void)
{
	struct pxfer_filetab t;

	T_EXPECT(pxfer_filetab_init(&t, 8) == 0, "init");
	open_file(&t, 1, 100);

	/* the same bytes twice: the count would fit, the file would not */
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 0, 50)) == 0, "0..50");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 0, 50)) == -EPROTO,
		 "0..50 again");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 49, 2)) == -EPROTO,
		 "49..51 (one byte again)");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 25, 50)) == -EPROTO,
		 "25..75");
	T_EXPECT(SUBMITTED(&t, 1) == 50, "submitted %llu",
		 (unsigned long long)SUBMITTED(&t, 1));
	T_EXPECT(end(&t, 1, 100, 0) == 0, "FILE_END 100");
	written(&t, 1, 50, 0);
	T_EXPECT(!pops(&t, 1, NULL), "50 of 100 bytes: not complete");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 50, 50)) == 0, "50..100");
	T_EXPECT(nranges(&t, 1) == 1, "merged into one range: %u",
		 nranges(&t, 1));
	written(&t, 1, 50, 0);
	T_EXPECT(pops(&t, 1, NULL) == 1, "complete once all of it arrived");

	/* twice in one chunk, and all or nothing */
	open_file(&t, 2, 100);
	T_EXPECT(pxfer_filetab_reserve(&t, two(2, 0, 10, 2, 5, 10)) ==
		 -EPROTO, "5..15 after 0..10 in one chunk");
	T_EXPECT(SUBMITTED(&t, 2) == 0 && nranges(&t, 2) == 0,
		 "nothing reserved: %llu, %u ranges",
		 (unsigned long long)SUBMITTED(&t, 2), nranges(&t, 2));
	T_EXPECT(pxfer_filetab_reserve(&t, two(2, 10, 10, 2, 0, 10)) == 0,
		 "10..20 then 0..10 in one chunk");
	T_EXPECT(nranges(&t, 2) == 1, "adjacent, merged: %u", nranges(&t, 2));

	/* out of order and scattered: every other piece, then the gaps */
	open_file(&t, 3, 1000);
	for (unsigned int i = 0; i < 50; i += 2)
		T_EXPECT(pxfer_filetab_reserve(&t, one(3, 20 * i, 20)) == 0,
			 "piece %u", i);
	T_EXPECT(nranges(&t, 3) == 25, "25 ranges: %u", nranges(&t, 3));
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 30, 20)) == -EPROTO,
		 "across a piece and a gap");
	for (unsigned int i = 49; i < 50; i -= 2)
		T_EXPECT(pxfer_filetab_reserve(&t, one(3, 20 * i, 20)) == 0,
			 "gap %u", i);
	T_EXPECT(nranges(&t, 3) == 1 && SUBMITTED(&t, 3) == 1000,
		 "one range of 1000 bytes: %u, %llu", nranges(&t, 3),
		 (unsigned long long)SUBMITTED(&t, 3));
	T_EXPECT(t.nranges == 3, "three files, a range each: %u", t.nranges);
	drop_file(&t, 3);
	T_EXPECT(t.nranges == 2, "dropped with its range: %u", t.nranges);
	/* a file that keeps its ranges is freed with the table (ASan) */
	open_file(&t, 4, 1000);
	for (unsigned int i = 0; i < 20; i += 2)
		pxfer_filetab_reserve(&t, one(4, 20 * i, 20));
	pxfer_filetab_release(&t);
}

/* ---- written and done --------------------------------------------------- */

static void test_done(void)
{
	struct pxfer_filetab t;
	unsigned int others;
	uint64_t total;
	int by_sender;

	T_EXPECT(pxfer_filetab_init(&t, 4) == 0, "init");

	/* FILE_END after the last write */
	open_file(&t, 0, 300);
	T_EXPECT(pxfer_filetab_reserve(&t, one(0, 0, 100)) == 0, "a");
	T_EXPECT(pxfer_filetab_reserve(&t, one(0, 100, 200)) == 0, "b");
	written(&t, 0, 200, 0);
	T_EXPECT(WRITTEN(&t, 0) == 200, "written %llu",
		 (unsigned long long)WRITTEN(&t, 0));
	written(&t, 0, 100, 0);
	T_EXPECT(WRITTEN(&t, 0) == 300, "written %llu",
		 (unsigned long long)WRITTEN(&t, 0));
	T_EXPECT(!pops(&t, 0, NULL), "complete before FILE_END");
	T_EXPECT(end(&t, 0, 299, 0) == -EPROTO, "total below what was submitted");
	T_EXPECT(end(&t, 0, 301, 0) == -EPROTO, "total above the size");
	T_EXPECT(!pops(&t, 0, NULL), "complete after a refused FILE_END");
	T_EXPECT(pxfer_filetab_end(&t, 0, 300, 0) == 1,
		 "FILE_END completing the file returns 1");
	T_EXPECT(end(&t, 0, 300, 0) == -EPROTO, "end twice");
	T_EXPECT(pxfer_filetab_reserve(&t, one(0, 0, 1)) == -EPROTO,
		 "reserve after complete");
	T_EXPECT(pxfer_filetab_outcome(&t, 0, &total, &by_sender) == 0 &&
		 total == 300 && !by_sender, "outcome: 300 bytes, no error");
	T_EXPECT(!pops(&t, 0, &others) && !others, "nothing else completed");
	drop_file(&t, 0);
	T_EXPECT(end(&t, 0, 0, 0) == -EPROTO, "end after drop");

	/* FILE_END before the last write, and before the last chunk */
	open_file(&t, 1, 1000);
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 0, 400)) == 0, "c");
	T_EXPECT(end(&t, 1, 600, 0) == 0, "end 600 early");
	T_EXPECT(!pops(&t, 1, NULL), "complete with bytes to come");
	written(&t, 1, 400, 0);
	T_EXPECT(!pops(&t, 1, NULL), "complete with a chunk still to arrive");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 600, 200)) == 0, "d");
	T_EXPECT(pxfer_filetab_written(&t, 1, 200, 0) == 1,
		 "the last write completing the file returns 1");

	/* FILE_END while writes are in flight: complete at the last write */
	open_file(&t, 2, 100);
	T_EXPECT(pxfer_filetab_reserve(&t, two(2, 0, 50, 2, 50, 50)) == 0, "e");
	T_EXPECT(end(&t, 2, 100, 0) == 0, "end 100");
	written(&t, 2, 50, 0);
	T_EXPECT(!pops(&t, 2, NULL), "complete with a write in flight");
	written(&t, 2, 50, 0);
	T_EXPECT(pops(&t, 2, &others) == 1 && !others, "complete at the last write");

	/* a write error is kept (the first), and the file still completes */
	open_file(&t, 3, 30);
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 0, 10)) == 0, "f");
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 10, 10)) == 0, "g");
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 20, 10)) == 0, "h");
	written(&t, 3, 10, 0);
	written(&t, 3, 10, ENOSPC);
	written(&t, 3, 10, EIO);
	T_EXPECT(ERR(&t, 3) == ENOSPC, "first error kept: %llu",
		 (unsigned long long)ERR(&t, 3));
	T_EXPECT(end(&t, 3, 30, 0) == 0, "end 30");
	T_EXPECT(pops(&t, 3, NULL) == 1, "complete with an error");
	T_EXPECT(pxfer_filetab_outcome(&t, 3, &total, &by_sender) == ENOSPC &&
		 !by_sender, "outcome: the write error");

	/* an empty file, and a file the sender gave up on */
	drop_file(&t, 1);
	drop_file(&t, 2);
	drop_file(&t, 3);
	open_file(&t, 1, 0);
	T_EXPECT(end(&t, 1, 0, 0) == 0, "empty end");
	T_EXPECT(pops(&t, 1, NULL) == 1, "empty file complete at FILE_END");
	open_file(&t, 2, 100);
	T_EXPECT(pxfer_filetab_reserve(&t, one(2, 0, 40)) == 0, "i");
	written(&t, 2, 40, 0);
	T_EXPECT(end(&t, 2, 40, EIO) == 0, "end with a code");
	T_EXPECT(pops(&t, 2, NULL) == 1, "given-up file complete");
	T_EXPECT(pxfer_filetab_outcome(&t, 2, &total, &by_sender) == EIO &&
		 by_sender && total == 40, "outcome: the sender's code, 40 bytes");
	T_EXPECT(pxfer_filetab_count(&t) == 2, "two open: %u",
		 pxfer_filetab_count(&t));

	/* unknown and closed ids */
	T_EXPECT(end(&t, 4, 0, 0) == -EPROTO, "end id n");
	T_EXPECT(end(&t, UINT64_MAX, 0, 0) == -EPROTO, "end id UINT64_MAX");
	T_EXPECT(end(&t, 0, 0, 0) == -EPROTO, "end closed id");
	pxfer_filetab_release(&t);
}

/* ids reused many times, handed on through a queue of ids that wraps */
static void test_reuse(void)
{
	enum { N = 3, ROUNDS = 200 };
	struct pxfer_filetab t;
	struct pxfer_idq q;
	unsigned int seen[N] = { 0 };
	uint32_t id = 0;

	T_EXPECT(pxfer_filetab_init(&t, N) == 0, "init");
	T_EXPECT(pxfer_idq_init(&q, N) == 0, "queue");
	for (unsigned int r = 0; r < ROUNDS; r++) {
		/* open all, complete them in a rotating order */
		for (unsigned int i = 0; i < N; i++)
			open_file(&t, i, 10 + i);
		for (unsigned int k = 0; k < N; k++) {
			unsigned int i = (k + r) % N;
			int done;

			if (r % 2) {
				T_EXPECT(pxfer_filetab_end(&t, i, 10 + i, 0) == 0,
					 "end");
				T_EXPECT(pxfer_filetab_reserve(&t,
					 one(i, 0, 10 + i)) == 0, "reserve");
				done = pxfer_filetab_written(&t, i, 10 + i, 0);
			} else {
				T_EXPECT(pxfer_filetab_reserve(&t,
					 one(i, 0, 10 + i)) == 0, "reserve");
				T_EXPECT(pxfer_filetab_written(&t, i, 10 + i, 0) == 0,
					 "written");
				done = pxfer_filetab_end(&t, i, 10 + i, 0);
			}
			T_EXPECT(done == 1, "round %u: %u complete", r, i);
			T_EXPECT(pxfer_idq_push(&q, i) == (k == 0),
				 "push says whether the queue was empty");
		}
		T_EXPECT(pxfer_idq_push(&q, 0) == -ENOSPC, "a full queue");
		for (unsigned int k = 0; k < N; k++) {
			T_EXPECT(pxfer_idq_pop(&q, &id), "pop %u/%u", r, k);
			if (id == (k + r) % N)
				seen[id]++;
			else
				T_EXPECT(0, "round %u: popped %u, want %u", r, id,
					 (k + r) % N);
		}
		T_EXPECT(!pxfer_idq_pop(&q, &id), "round %u: extra pop", r);
		for (unsigned int i = 0; i < N; i++)
			drop_file(&t, i);
	}
	for (unsigned int i = 0; i < N; i++)
		T_EXPECT(seen[i] == ROUNDS, "id %u done %u times", i, seen[i]);
	T_EXPECT(pxfer_filetab_count(&t) == 0, "open %u",
		 pxfer_filetab_count(&t));
	pxfer_idq_release(&q);
	pxfer_filetab_release(&t);
}

/* ---- workers racing the coordinator ------------------------------------ */

#define RACE_FILES	64
#define RACE_THREADS	4
#define RACE_SEG	100

/*
 * As the receiver runs it: workers reserve and write pieces, the
 * coordinator sends FILE_END at some point; whichever call completes a
 * file "finishes" it (counted) and queues it; the coordinator pops the
 * queue. Each file must complete once, after its last byte.
 */
struct race {
	struct pxfer_filetab *t;
	atomic_uint next_piece;		/* next piece to hand out */
	unsigned int npieces;
	uint64_t size[RACE_FILES];
	atomic_uint_fast64_t wrote[RACE_FILES];
	atomic_int refused;
	atomic_uint finished[RACE_FILES];	/* completions */
	atomic_int finish_early;		/* completed with bytes missing */
	pthread_mutex_t lock;			/* guards q */
	struct pxfer_idq q;
};

static void race_complete(struct race *r, uint64_t id)
{
	if (id >= RACE_FILES)
		abort();
	if (atomic_load(&r->wrote[id]) != r->size[id])
		atomic_fetch_add(&r->finish_early, 1);
	atomic_fetch_add(&r->finished[id], 1);
	pthread_mutex_lock(&r->lock);
	pxfer_idq_push(&r->q, id);
	pthread_mutex_unlock(&r->lock);
}

/* piece k: file k % RACE_FILES, offset (k / RACE_FILES) * RACE_SEG */
static void *race_worker(void *arg)
{
	struct race *r = arg;
	struct pxfer_chunk ch;
	unsigned int k;

	while ((k = atomic_fetch_add(&r->next_piece, 1)) < r->npieces) {
		uint64_t file = k % RACE_FILES;
		uint64_t off = (uint64_t)(k / RACE_FILES) * RACE_SEG;
		uint32_t len;

		if (off >= r->size[file])
			continue;
		len = r->size[file] - off < RACE_SEG ? r->size[file] - off :
						       RACE_SEG;
		memset(&ch, 0, sizeof(ch));
		chunk_set(&ch, 0, file, off, len);
		if (pxfer_filetab_reserve(r->t, &ch)) {
			atomic_fetch_add(&r->refused, 1);
			continue;
		}
		if (k % 3 == 0)
			sched_yield();
		atomic_fetch_add(&r->wrote[file], len);
		if (pxfer_filetab_written(r->t, file, len, 0) == 1)
			race_complete(r, file);
	}
	return NULL;
}

static int race_pop(struct race *r, uint32_t *id)
{
	int got;

	pthread_mutex_lock(&r->lock);
	got = pxfer_idq_pop(&r->q, id);
	pthread_mutex_unlock(&r->lock);
	return got;
}

static void test_race(void)
{
	struct pxfer_filetab t;
	struct race *r = calloc(1, sizeof(*r));
	pthread_t th[RACE_THREADS];
	unsigned int done[RACE_FILES] = { 0 }, ended = 0, maxp = 0;
	int endsent[RACE_FILES] = { 0 };
	uint64_t seed = 99;
	uint32_t id;

	if (!r || pxfer_idq_init(&r->q, RACE_FILES))
		abort();
	pthread_mutex_init(&r->lock, NULL);
	T_EXPECT(pxfer_filetab_init(&t, RACE_FILES) == 0, "init");
	r->t = &t;
	for (unsigned int i = 0; i < RACE_FILES; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		r->size[i] = (seed >> 33) % (40 * RACE_SEG);
		if (r->size[i] / RACE_SEG + 1 > maxp)
			maxp = r->size[i] / RACE_SEG + 1;
		open_file(&t, i, r->size[i]);
	}
	r->npieces = maxp * RACE_FILES;
	for (unsigned int i = 0; i < RACE_THREADS; i++)
		pthread_create(&th[i], NULL, race_worker, r);
	/* the coordinator: FILE_END for each file at some point (the sender
	 * sends it once all is sent, which may be before it is received) */
	while (ended < RACE_FILES) {
		unsigned int i;
		int ret;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		i = (seed >> 33) % RACE_FILES;
		if (!endsent[i]) {
			ret = pxfer_filetab_end(&t, i, r->size[i], 0);
			T_EXPECT(ret >= 0, "end of %u", i);
			if (ret == 1)
				race_complete(r, i);
			endsent[i] = 1;
			ended++;
		}
		sched_yield();
		while (race_pop(r, &id)) {
			T_EXPECT(atomic_load(&r->wrote[id]) == r->size[id],
				 "file %u complete with %llu of %llu bytes written",
				 id, (unsigned long long)atomic_load(&r->wrote[id]),
				 (unsigned long long)r->size[id]);
			done[id]++;
		}
	}
	for (unsigned int i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	while (race_pop(r, &id))
		done[id]++;
	T_EXPECT(!atomic_load(&r->refused), "%d pieces refused",
		 atomic_load(&r->refused));
	T_EXPECT(!atomic_load(&r->finish_early),
		 "%d files complete before the last byte",
		 atomic_load(&r->finish_early));
	for (unsigned int i = 0; i < RACE_FILES; i++) {
		T_EXPECT(done[i] == 1, "file %u done %u times", i, done[i]);
		T_EXPECT(atomic_load(&r->finished[i]) == 1,
			 "file %u complete %u times", i,
			 atomic_load(&r->finished[i]));
		T_EXPECT(atomic_load(&r->wrote[i]) == r->size[i] &&
			 WRITTEN(&t, i) == r->size[i],
			 "file %u: wrote %llu, table %llu, size %llu", i,
			 (unsigned long long)atomic_load(&r->wrote[i]),
			 (unsigned long long)WRITTEN(&t, i),
			 (unsigned long long)r->size[i]);
	}
	pxfer_filetab_release(&t);
	pxfer_idq_release(&r->q);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* what a partial held from before: never sent again, and not owed */
static void test_hold(void)
{
	struct pxfer_filetab t;

	T_EXPECT(pxfer_filetab_init(&t, 4) == 0, "init");
	open_file(&t, 1, 1000);
	T_EXPECT(pxfer_filetab_hold(&t, 1, 0, 300) == 0, "hold [0, 300)");
	T_EXPECT(pxfer_filetab_hold(&t, 1, 600, 400) == 0, "hold [600, 1000)");
	T_EXPECT(pxfer_filetab_hold(&t, 1, 200, 200) == -EPROTO, "a hold over a hold");
	T_EXPECT(pxfer_filetab_hold(&t, 1, 900, 200) == -EPROTO, "a hold beyond the end");
	T_EXPECT(pxfer_filetab_hold(&t, 1, UINT64_MAX - 10, 100) == -EPROTO,
		 "a hold that wraps");
	T_EXPECT(pxfer_filetab_hold(&t, 2, 0, 1) == -EPROTO, "a hold of a closed id");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 250, 100)) == -EPROTO,
		 "a chunk over held bytes");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 300, 300)) == 0,
		 "a chunk of the missing bytes");
	T_EXPECT(pxfer_filetab_hold(&t, 1, 300, 1) == -EPROTO,
		 "no hold once chunks came");
	T_EXPECT(pxfer_filetab_end(&t, 1, 301, 0) == -EPROTO,
		 "a FILE_END of more than was missing");
	T_EXPECT(pxfer_filetab_end(&t, 1, 300, 0) == 0, "FILE_END of what was missing");
	T_EXPECT(pxfer_filetab_written(&t, 1, 300, 0) == 1,
		 "complete once the missing bytes are written");
	pxfer_filetab_release(&t);
}

/*
 * A chunk whose payload did not all arrive (its connection broke) is
 * given back: its bytes may come again over another connection, in one
 * piece or a range split around them, and the file completes with them.
 */
static void test_unreserve(void)
{
	struct pxfer_filetab t;
	struct pxfer_chunk c;

	T_EXPECT(pxfer_filetab_init(&t, 4) == 0, "init");
	open_file(&t, 1, 1000);
	open_file(&t, 2, 100);
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 0, 300)) == 0, "[0, 300)");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 300, 300)) == 0, "[300, 600)");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 600, 300)) == 0, "[600, 900)");
	/* the middle one is lost: a hole in one merged range */
	T_EXPECT(pxfer_filetab_unreserve(&t, one(1, 300, 300)) == 0,
		 "give back [300, 600)");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 250, 100)) == -EPROTO,
		 "what stays reserved still refuses a repeat");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 550, 100)) == -EPROTO,
		 "... on either side of the hole");
	T_EXPECT(pxfer_filetab_unreserve(&t, one(1, 300, 300)) == -EINVAL,
		 "bytes not reserved cannot be given back");
	T_EXPECT(pxfer_filetab_end(&t, 1, 1000, 0) == 0, "FILE_END of all of it");
	T_EXPECT(pxfer_filetab_written(&t, 1, 300, 0) == 0, "[0, 300) written");
	T_EXPECT(pxfer_filetab_written(&t, 1, 300, 0) == 0, "[600, 900) written");
	/* a chunk of two files: both given back */
	c = *two(1, 900, 100, 2, 0, 100);
	T_EXPECT(pxfer_filetab_reserve(&t, &c) == 0, "[900, 1000) and file 2");
	T_EXPECT(pxfer_filetab_unreserve(&t, &c) == 0, "both given back");
	T_EXPECT(pxfer_filetab_reserve(&t, &c) == 0, "and taken again");
	T_EXPECT(pxfer_filetab_written(&t, 1, 100, 0) == 0, "[900, 1000) written");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 300, 300)) == 0,
		 "the lost bytes come again");
	T_EXPECT(pxfer_filetab_written(&t, 1, 300, 0) == 1,
		 "complete with them, and only then");
	pxfer_filetab_release(&t);
}

int main(void)
{
	test_unreserve();
	test_reserve();
	test_overlap();
	test_done();
	test_reuse();
	test_race();
	test_hold();
	return t_result();
}
