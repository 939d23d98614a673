/* SPDX-License-Identifier: MIT */
/*
 * filetab_test: the receiver's per-file byte accounting (src/filetab.c).
 *
 * Entries are opened the way the receiver's coordinator opens them
 * (src/recv.c on_regular: fields set under t->lock, then used = 1) and
 * dropped the way it drops them (memset under the lock, used--).
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
 *  - a file is queued as done exactly once, when FILE_END is known and all
 *    its bytes are written, whichever comes last; the wake fd fires, once
 *    for a burst of files done before the coordinator empties the queue,
 *    and not at all inside a batch, whose end says if it must be woken;
 *  - FILE_END with a total below what was submitted, above the size, twice,
 *    or for an unknown id is refused;
 *  - a finish callback that hands the file on keeps it off the queue until
 *    pxfer_filetab_push_done;
 *  - worker threads and a coordinator racing still queue each file once,
 *    and the finish callback runs once per file, after its last byte and
 *    before the file can be popped.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "recv/filetab.h"
#include "test.h"

static int efd;

/* open slot @id as the coordinator does */
static void open_file(struct pxfer_filetab *t, uint64_t id, uint64_t size,
		      int fd)
{
	struct pxfer_rfile *rf = &t->f[id];

	pthread_mutex_lock(&t->lock);
	memset(rf, 0, sizeof(*rf));
	rf->fd = fd;
	rf->dirfd = -1;
	rf->size = size;
	rf->mode = 0644;
	rf->used = 1;
	t->used++;
	pthread_mutex_unlock(&t->lock);
}

/* drop slot @id as the coordinator does after finalizing it */
static void drop_file(struct pxfer_filetab *t, uint64_t id)
{
	pthread_mutex_lock(&t->lock);
	pxfer_filetab_forget(t, &t->f[id]);
	memset(&t->f[id], 0, sizeof(t->f[id]));
	t->used--;
	pthread_mutex_unlock(&t->lock);
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

/* Is the wake fd readable? Reading it clears it. */
static int woken(void)
{
	struct pollfd p = { .fd = efd, .events = POLLIN };
	uint64_t v;

	if (poll(&p, 1, 0) != 1)
		return 0;
	if (read(efd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return 1;
}

/* pop everything: how many times @id came out, and how many others */
static unsigned int pops(struct pxfer_filetab *t, uint64_t id,
			 unsigned int *others)
{
	unsigned int n = 0;
	uint64_t got;

	if (others)
		*others = 0;
	while (pxfer_filetab_pop_done(t, &got)) {
		if (got == id)
			n++;
		else if (others)
			(*others)++;
	}
	return n;
}

/* ---- reserve ----------------------------------------------------------- */

static void test_reserve(void)
{
	struct pxfer_filetab t;
	int fds[PXFER_SEG_MAX];

	T_EXPECT(pxfer_filetab_init(&t, 8, efd) == 0, "init");
	open_file(&t, 1, 1000, 101);
	open_file(&t, 2, 500, 102);
	open_file(&t, 3, 0, 103);

	/* unknown or closed ids */
	T_EXPECT(pxfer_filetab_reserve(&t, one(8, 0, 1), fds) == -EPROTO,
		 "id == n");
	T_EXPECT(pxfer_filetab_reserve(&t, one(UINT64_MAX, 0, 1), fds) ==
		 -EPROTO, "id UINT64_MAX");
	T_EXPECT(pxfer_filetab_reserve(&t, one(0, 0, 1), fds) == -EPROTO,
		 "closed slot 0");
	T_EXPECT(pxfer_filetab_reserve(&t, one(7, 0, 1), fds) == -EPROTO,
		 "closed slot 7");

	/* beyond the size */
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 900, 101), fds) == -EPROTO,
		 "one byte beyond");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 1000, 1), fds) == -EPROTO,
		 "at the end");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 1001, 1), fds) == -EPROTO,
		 "offset beyond");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, UINT64_MAX - 10, 100), fds) ==
		 -EPROTO, "offset + len wrapping");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 0, 1001), fds) == -EPROTO,
		 "longer than the file");
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 0, 1), fds) == -EPROTO,
		 "a byte of an empty file");
	T_EXPECT(SUBMITTED(&t, 1) == 0, "nothing reserved: %llu",
		 (unsigned long long)SUBMITTED(&t, 1));

	/* inside: fds filled */
	fds[0] = fds[1] = -1;
	T_EXPECT(pxfer_filetab_reserve(&t, two(1, 0, 400, 2, 100, 400), fds) ==
		 0, "two files");
	T_EXPECT(fds[0] == 101 && fds[1] == 102, "fds %d %d", fds[0], fds[1]);
	T_EXPECT(SUBMITTED(&t, 1) == 400 && SUBMITTED(&t, 2) == 400,
		 "submitted %llu %llu", (unsigned long long)SUBMITTED(&t, 1),
		 (unsigned long long)SUBMITTED(&t, 2));
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 999, 1), fds) == 0,
		 "the last byte");

	/* more bytes than the file holds, in separate chunks */
	T_EXPECT(pxfer_filetab_reserve(&t, one(2, 0, 101), fds) == -EPROTO,
		 "file 2 over its size in total");
	T_EXPECT(pxfer_filetab_reserve(&t, one(2, 0, 100), fds) == 0,
		 "file 2 up to its size");
	T_EXPECT(SUBMITTED(&t, 2) == 500, "file 2 full");

	/* two segments of one file, each inside, together beyond: nothing */
	open_file(&t, 4, 100, 104);
	open_file(&t, 5, 100, 105);
	memset(&chbuf, 0, sizeof(chbuf));
	chunk_set(&chbuf, 0, 5, 0, 10);		/* fine on its own */
	chunk_set(&chbuf, 1, 4, 0, 60);
	chunk_set(&chbuf, 2, 4, 40, 60);	/* 120 bytes of a 100-byte file */
	T_EXPECT(pxfer_filetab_reserve(&t, &chbuf, fds) == -EPROTO,
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
	T_EXPECT(pxfer_filetab_reserve(&t, &chbuf, fds) == -EPROTO,
		 "a closed file last");
	T_EXPECT(SUBMITTED(&t, 4) == 0 && SUBMITTED(&t, 5) == 0,
		 "all or nothing again: %llu %llu",
		 (unsigned long long)SUBMITTED(&t, 4),
		 (unsigned long long)SUBMITTED(&t, 5));
	/* exactly the size in two segments is fine */
	T_EXPECT(pxfer_filetab_reserve(&t, two(4, 0, 50, 4, 50, 50), fds) == 0,
		 "two halves");
	T_EXPECT(SUBMITTED(&t, 4) == 100 && fds[0] == 104 && fds[1] == 104,
		 "two halves reserved: %llu",
		 (unsigned long long)SUBMITTED(&t, 4));

	/* beyond the total announced by FILE_END */
	open_file(&t, 6, 1000, 106);
	T_EXPECT(pxfer_filetab_reserve(&t, one(6, 0, 100), fds) == 0, "f6 a");
	T_EXPECT(pxfer_filetab_end(&t, 6, 300, 0) == 0, "f6 end 300");
	T_EXPECT(pxfer_filetab_reserve(&t, one(6, 500, 201), fds) == -EPROTO,
		 "beyond the announced total");
	T_EXPECT(pxfer_filetab_reserve(&t, two(6, 500, 150, 6, 700, 51), fds) ==
		 -EPROTO, "two segments beyond the announced total");
	T_EXPECT(SUBMITTED(&t, 6) == 100, "f6 submitted %llu",
		 (unsigned long long)SUBMITTED(&t, 6));
	T_EXPECT(pxfer_filetab_reserve(&t, one(6, 500, 200), fds) == 0,
		 "up to the announced total");
	T_EXPECT(pxfer_filetab_reserve(&t, one(6, 800, 1), fds) == -EPROTO,
		 "one past the announced total");
	T_EXPECT(!pops(&t, 6, NULL), "f6 not done before its writes");
	pxfer_filetab_release(&t);
	pxfer_filetab_release(&t);	/* harmless twice */
	woken();
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
	int fds[PXFER_SEG_MAX];

	T_EXPECT(pxfer_filetab_init(&t, 8, efd) == 0, "init");
	open_file(&t, 1, 100, 101);

	/* the same bytes twice: the count would fit, the file would not */
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 0, 50), fds) == 0, "0..50");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 0, 50), fds) == -EPROTO,
		 "0..50 again");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 49, 2), fds) == -EPROTO,
		 "49..51 (one byte again)");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 25, 50), fds) == -EPROTO,
		 "25..75");
	T_EXPECT(SUBMITTED(&t, 1) == 50, "submitted %llu",
		 (unsigned long long)SUBMITTED(&t, 1));
	T_EXPECT(pxfer_filetab_end(&t, 1, 100, 0) == 0, "FILE_END 100");
	pxfer_filetab_written(&t, 1, 50, 0);
	T_EXPECT(!pops(&t, 1, NULL), "50 of 100 bytes: not complete");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 50, 50), fds) == 0, "50..100");
	T_EXPECT(nranges(&t, 1) == 1, "merged into one range: %u",
		 nranges(&t, 1));
	pxfer_filetab_written(&t, 1, 50, 0);
	T_EXPECT(pops(&t, 1, NULL) == 1, "complete once all of it arrived");
	woken();

	/* twice in one chunk, and all or nothing */
	open_file(&t, 2, 100, 102);
	T_EXPECT(pxfer_filetab_reserve(&t, two(2, 0, 10, 2, 5, 10), fds) ==
		 -EPROTO, "5..15 after 0..10 in one chunk");
	T_EXPECT(SUBMITTED(&t, 2) == 0 && nranges(&t, 2) == 0,
		 "nothing reserved: %llu, %u ranges",
		 (unsigned long long)SUBMITTED(&t, 2), nranges(&t, 2));
	T_EXPECT(pxfer_filetab_reserve(&t, two(2, 10, 10, 2, 0, 10), fds) == 0,
		 "10..20 then 0..10 in one chunk");
	T_EXPECT(nranges(&t, 2) == 1, "adjacent, merged: %u", nranges(&t, 2));

	/* out of order and scattered: every other piece, then the gaps */
	open_file(&t, 3, 1000, 103);
	for (unsigned int i = 0; i < 50; i += 2)
		T_EXPECT(pxfer_filetab_reserve(&t, one(3, 20 * i, 20), fds) == 0,
			 "piece %u", i);
	T_EXPECT(nranges(&t, 3) == 25, "25 ranges: %u", nranges(&t, 3));
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 30, 20), fds) == -EPROTO,
		 "across a piece and a gap");
	for (unsigned int i = 49; i < 50; i -= 2)
		T_EXPECT(pxfer_filetab_reserve(&t, one(3, 20 * i, 20), fds) == 0,
			 "gap %u", i);
	T_EXPECT(nranges(&t, 3) == 1 && SUBMITTED(&t, 3) == 1000,
		 "one range of 1000 bytes: %u, %llu", nranges(&t, 3),
		 (unsigned long long)SUBMITTED(&t, 3));
	T_EXPECT(t.nranges == 3, "three files, a range each: %u", t.nranges);
	drop_file(&t, 3);
	T_EXPECT(t.nranges == 2, "dropped with its range: %u", t.nranges);
	/* a file that keeps its ranges is freed with the table (ASan) */
	open_file(&t, 4, 1000, 104);
	for (unsigned int i = 0; i < 20; i += 2)
		pxfer_filetab_reserve(&t, one(4, 20 * i, 20), fds);
	pxfer_filetab_release(&t);
	woken();
}

/* ---- written and done --------------------------------------------------- */

/* a finish callback that hands every file on, counting the calls */
static int defer_calls;

static int defer_finish(void *arg, struct pxfer_rfile *f)
{
	(void)f;
	(*(int *)arg)++;
	return 1;
}

static void test_done(void)
{
	struct pxfer_filetab t;
	int fds[PXFER_SEG_MAX];
	unsigned int others;

	T_EXPECT(pxfer_filetab_init(&t, 4, efd) == 0, "init");
	woken();

	/* FILE_END after the last write */
	open_file(&t, 0, 300, 100);
	T_EXPECT(pxfer_filetab_reserve(&t, one(0, 0, 100), fds) == 0, "a");
	T_EXPECT(pxfer_filetab_reserve(&t, one(0, 100, 200), fds) == 0, "b");
	pxfer_filetab_written(&t, 0, 200, 0);
	T_EXPECT(WRITTEN(&t, 0) == 200, "written %llu",
		 (unsigned long long)WRITTEN(&t, 0));
	pxfer_filetab_written(&t, 0, 100, 0);
	T_EXPECT(WRITTEN(&t, 0) == 300, "written %llu",
		 (unsigned long long)WRITTEN(&t, 0));
	T_EXPECT(!pops(&t, 0, NULL) && !woken(), "done before FILE_END");
	T_EXPECT(pxfer_filetab_end(&t, 0, 299, 0) == -EPROTO,
		 "total below what was submitted");
	T_EXPECT(pxfer_filetab_end(&t, 0, 301, 0) == -EPROTO,
		 "total above the size");
	T_EXPECT(!pops(&t, 0, NULL), "done after a refused FILE_END");
	T_EXPECT(pxfer_filetab_end(&t, 0, 300, 0) == 0, "end 300");
	T_EXPECT(woken(), "wake fd after done");
	T_EXPECT(pxfer_filetab_end(&t, 0, 300, 0) == -EPROTO, "end twice");
	T_EXPECT(pxfer_filetab_reserve(&t, one(0, 0, 1), fds) == -EPROTO,
		 "reserve after done");
	T_EXPECT(pops(&t, 0, &others) == 1 && !others, "done once");
	T_EXPECT(!pxfer_filetab_pop_done(&t, &(uint64_t){ 0 }), "queue empty");
	drop_file(&t, 0);
	T_EXPECT(pxfer_filetab_end(&t, 0, 0, 0) == -EPROTO, "end after drop");

	/* FILE_END before the last write, and before the last chunk */
	open_file(&t, 1, 1000, 101);
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 0, 400), fds) == 0, "c");
	T_EXPECT(pxfer_filetab_end(&t, 1, 600, 0) == 0, "end 600 early");
	T_EXPECT(!pops(&t, 1, NULL) && !woken(), "done with bytes to come");
	pxfer_filetab_written(&t, 1, 400, 0);
	T_EXPECT(!pops(&t, 1, NULL) && !woken(),
		 "done with a chunk still to arrive");
	T_EXPECT(pxfer_filetab_reserve(&t, one(1, 600, 200), fds) == 0, "d");
	pxfer_filetab_written(&t, 1, 200, 0);
	T_EXPECT(pops(&t, 1, &others) == 1 && !others && woken(),
		 "done once the last write completes");

	/* FILE_END while writes are in flight: done at the last write */
	open_file(&t, 2, 100, 102);
	T_EXPECT(pxfer_filetab_reserve(&t, two(2, 0, 50, 2, 50, 50), fds) == 0,
		 "e");
	T_EXPECT(pxfer_filetab_end(&t, 2, 100, 0) == 0, "end 100");
	pxfer_filetab_written(&t, 2, 50, 0);
	T_EXPECT(!pops(&t, 2, NULL), "done with a write in flight");
	pxfer_filetab_written(&t, 2, 50, 0);
	T_EXPECT(pops(&t, 2, NULL) == 1, "done at the last write");

	/* a write error is kept (the first), and the file still completes */
	open_file(&t, 3, 30, 103);
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 0, 10), fds) == 0, "f");
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 10, 10), fds) == 0, "g");
	T_EXPECT(pxfer_filetab_reserve(&t, one(3, 20, 10), fds) == 0, "h");
	pxfer_filetab_written(&t, 3, 10, 0);
	pxfer_filetab_written(&t, 3, 10, ENOSPC);
	pxfer_filetab_written(&t, 3, 10, EIO);
	T_EXPECT(ERR(&t, 3) == ENOSPC, "first error kept: %llu",
		 (unsigned long long)ERR(&t, 3));
	T_EXPECT(pxfer_filetab_end(&t, 3, 30, 0) == 0, "end 30");
	T_EXPECT(pops(&t, 3, NULL) == 1, "done with an error");

	/* an empty file, and a file the sender gave up on */
	drop_file(&t, 1);
	drop_file(&t, 2);
	drop_file(&t, 3);
	open_file(&t, 1, 0, 101);
	T_EXPECT(pxfer_filetab_end(&t, 1, 0, 0) == 0, "empty end");
	T_EXPECT(pops(&t, 1, NULL) == 1, "empty file done at FILE_END");
	open_file(&t, 2, 100, 102);
	T_EXPECT(pxfer_filetab_reserve(&t, one(2, 0, 40), fds) == 0, "i");
	pxfer_filetab_written(&t, 2, 40, 0);
	T_EXPECT(pxfer_filetab_end(&t, 2, 40, EIO) == 0, "end with a code");
	T_EXPECT(pops(&t, 2, NULL) == 1, "given-up file done");
	pthread_mutex_lock(&t.lock);
	T_EXPECT(t.f[2].end_code == EIO && t.f[2].total == 40,
		 "end code %d total %llu", t.f[2].end_code,
		 (unsigned long long)t.f[2].total);
	pthread_mutex_unlock(&t.lock);

	/* a burst of done files wakes the coordinator once; it empties the
	 * queue, and the next done file wakes it again */
	woken();
	pops(&t, 0, NULL);
	open_file(&t, 0, 10, 100);
	open_file(&t, 3, 10, 103);
	T_EXPECT(pxfer_filetab_end(&t, 0, 0, 0) == 0, "end empty 0");
	T_EXPECT(pxfer_filetab_end(&t, 3, 0, 0) == 0, "end empty 3");
	T_EXPECT(woken() && !woken(), "one wake for two done files");
	T_EXPECT(pops(&t, 0, &others) == 1 && others == 1, "both queued");
	drop_file(&t, 0);
	open_file(&t, 0, 10, 100);
	T_EXPECT(pxfer_filetab_end(&t, 0, 0, 0) == 0, "end empty 0 again");
	T_EXPECT(woken(), "a wake once the queue was emptied");
	T_EXPECT(pops(&t, 0, NULL) == 1, "queued again");
	drop_file(&t, 0);
	drop_file(&t, 3);

	/* in a batch, files done wake no one; the batch's end says whether
	 * the coordinator must be woken (once), and a batch with nothing
	 * done says no */
	woken();
	pxfer_filetab_batch_begin(&t);
	T_EXPECT(pxfer_filetab_batch_end(&t) == 0, "an empty batch wants a wake");
	pxfer_filetab_batch_begin(&t);
	open_file(&t, 0, 10, 100);
	open_file(&t, 3, 10, 103);
	T_EXPECT(pxfer_filetab_end(&t, 0, 0, 0) == 0, "batch: end 0");
	T_EXPECT(!woken(), "a done file in a batch woke the coordinator");
	T_EXPECT(pops(&t, 0, NULL) == 1, "batch: 0 queued");
	T_EXPECT(pxfer_filetab_end(&t, 3, 0, 0) == 0, "batch: end 3");
	T_EXPECT(!woken(), "a second done file in a batch woke it");
	T_EXPECT(pxfer_filetab_batch_end(&t) == 1, "the batch's end wants no wake");
	T_EXPECT(pops(&t, 3, NULL) == 1, "batch: 3 queued");
	drop_file(&t, 0);
	drop_file(&t, 3);
	/* after the batch, files done wake at once again */
	open_file(&t, 0, 10, 100);
	T_EXPECT(pxfer_filetab_end(&t, 0, 0, 0) == 0, "after batch: end 0");
	T_EXPECT(woken(), "no wake after the batch ended");
	T_EXPECT(pops(&t, 0, NULL) == 1, "after batch: queued");
	drop_file(&t, 0);

	/* a finish callback that hands the file on: not queued until the
	 * taker pushes it, then queued once */
	woken();
	t.finish = defer_finish;
	t.finish_arg = &defer_calls;
	open_file(&t, 0, 10, 100);
	T_EXPECT(pxfer_filetab_end(&t, 0, 0, 0) == 0, "end, finish deferred");
	T_EXPECT(defer_calls == 1 && !pops(&t, 0, NULL) && !woken(),
		 "a deferred file is not done yet (%d finish calls)",
		 defer_calls);
	pxfer_filetab_push_done(&t, 0);
	T_EXPECT(woken() && pops(&t, 0, &others) == 1 && !others,
		 "done once pushed");
	t.finish = NULL;
	drop_file(&t, 0);

	/* unknown and closed ids */
	T_EXPECT(pxfer_filetab_end(&t, 4, 0, 0) == -EPROTO, "end id n");
	T_EXPECT(pxfer_filetab_end(&t, UINT64_MAX, 0, 0) == -EPROTO,
		 "end id UINT64_MAX");
	T_EXPECT(pxfer_filetab_end(&t, 0, 0, 0) == -EPROTO, "end closed id");
	pxfer_filetab_release(&t);
	woken();
}

/* ids reused many times: the done queue wraps around correctly */
static void test_reuse(void)
{
	enum { N = 3, ROUNDS = 200 };
	struct pxfer_filetab t;
	int fds[PXFER_SEG_MAX];
	unsigned int seen[N] = { 0 };
	uint64_t id;

	T_EXPECT(pxfer_filetab_init(&t, N, efd) == 0, "init");
	for (unsigned int r = 0; r < ROUNDS; r++) {
		/* open all, finish them in a rotating order */
		for (unsigned int i = 0; i < N; i++)
			open_file(&t, i, 10 + i, 100 + i);
		for (unsigned int k = 0; k < N; k++) {
			unsigned int i = (k + r) % N;

			if (r % 2) {
				T_EXPECT(pxfer_filetab_end(&t, i, 10 + i, 0) == 0,
					 "end");
				T_EXPECT(pxfer_filetab_reserve(&t,
					 one(i, 0, 10 + i), fds) == 0, "reserve");
				pxfer_filetab_written(&t, i, 10 + i, 0);
			} else {
				T_EXPECT(pxfer_filetab_reserve(&t,
					 one(i, 0, 10 + i), fds) == 0, "reserve");
				pxfer_filetab_written(&t, i, 10 + i, 0);
				T_EXPECT(pxfer_filetab_end(&t, i, 10 + i, 0) == 0,
					 "end");
			}
		}
		for (unsigned int k = 0; k < N; k++) {
			T_EXPECT(pxfer_filetab_pop_done(&t, &id), "pop %u/%u", r,
				 k);
			if (id == (k + r) % N)
				seen[id]++;
			else
				T_EXPECT(0, "round %u: popped %llu, want %u", r,
					 (unsigned long long)id, (k + r) % N);
		}
		T_EXPECT(!pxfer_filetab_pop_done(&t, &id), "round %u: extra pop",
			 r);
		for (unsigned int i = 0; i < N; i++)
			drop_file(&t, i);
	}
	for (unsigned int i = 0; i < N; i++)
		T_EXPECT(seen[i] == ROUNDS, "id %u done %u times", i, seen[i]);
	T_EXPECT(t.used == 0, "used %u", t.used);
	pxfer_filetab_release(&t);
	woken();
}

/* ---- workers racing the coordinator ------------------------------------ */

#define RACE_FILES	64
#define RACE_THREADS	4
#define RACE_SEG	100

struct race {
	struct pxfer_filetab *t;
	atomic_uint next_piece;		/* next piece to hand out */
	unsigned int npieces;
	uint64_t size[RACE_FILES];
	atomic_uint_fast64_t wrote[RACE_FILES];
	atomic_int refused;
	atomic_uint finished[RACE_FILES];	/* finish callback calls */
	atomic_int finish_early;		/* called with bytes missing */
};

/* the finish callback: once per file, after its last byte, before it pops */
static int race_finish(void *arg, struct pxfer_rfile *f)
{
	struct race *r = arg;
	uint64_t id = f - r->t->f;

	if (id >= RACE_FILES)
		abort();
	if (atomic_load(&r->wrote[id]) != r->size[id])
		atomic_fetch_add(&r->finish_early, 1);
	atomic_fetch_add(&r->finished[id], 1);
	return 0;
}

/* piece k: file k % RACE_FILES, offset (k / RACE_FILES) * RACE_SEG */
static void *race_worker(void *arg)
{
	struct race *r = arg;
	struct pxfer_chunk ch;
	int fds[PXFER_SEG_MAX];
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
		if (pxfer_filetab_reserve(r->t, &ch, fds)) {
			atomic_fetch_add(&r->refused, 1);
			continue;
		}
		if (k % 3 == 0)
			sched_yield();
		atomic_fetch_add(&r->wrote[file], len);
		pxfer_filetab_written(r->t, file, len, 0);
	}
	return NULL;
}

static void test_race(void)
{
	struct pxfer_filetab t;
	struct race *r = calloc(1, sizeof(*r));
	pthread_t th[RACE_THREADS];
	unsigned int done[RACE_FILES] = { 0 }, ended = 0, maxp = 0;
	int endsent[RACE_FILES] = { 0 };
	uint64_t seed = 99, id;

	if (!r)
		abort();
	T_EXPECT(pxfer_filetab_init(&t, RACE_FILES, efd) == 0, "init");
	r->t = &t;
	t.finish = race_finish;
	t.finish_arg = r;
	for (unsigned int i = 0; i < RACE_FILES; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		r->size[i] = (seed >> 33) % (40 * RACE_SEG);
		if (r->size[i] / RACE_SEG + 1 > maxp)
			maxp = r->size[i] / RACE_SEG + 1;
		open_file(&t, i, r->size[i], 200 + i);
	}
	r->npieces = maxp * RACE_FILES;
	for (unsigned int i = 0; i < RACE_THREADS; i++)
		pthread_create(&th[i], NULL, race_worker, r);
	/* the coordinator: FILE_END for each file at some point (the sender
	 * sends it once all is sent, which may be before it is received) */
	while (ended < RACE_FILES) {
		unsigned int i;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		i = (seed >> 33) % RACE_FILES;
		if (!endsent[i]) {
			T_EXPECT(pxfer_filetab_end(&t, i, r->size[i], 0) == 0,
				 "end of %u", i);
			endsent[i] = 1;
			ended++;
		}
		sched_yield();
		while (pxfer_filetab_pop_done(&t, &id)) {
			if (id >= RACE_FILES) {
				T_EXPECT(0, "popped id %llu",
					 (unsigned long long)id);
				continue;
			}
			T_EXPECT(atomic_load(&r->finished[id]) == 1,
				 "file %llu popped before its finish callback",
				 (unsigned long long)id);
			T_EXPECT(atomic_load(&r->wrote[id]) == r->size[id],
				 "file %llu done with %llu of %llu bytes written",
				 (unsigned long long)id,
				 (unsigned long long)atomic_load(&r->wrote[id]),
				 (unsigned long long)r->size[id]);
			done[id]++;
		}
	}
	for (unsigned int i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	while (pxfer_filetab_pop_done(&t, &id))
		if (id < RACE_FILES)
			done[id]++;
	T_EXPECT(!atomic_load(&r->refused), "%d pieces refused",
		 atomic_load(&r->refused));
	T_EXPECT(!atomic_load(&r->finish_early),
		 "%d finish callbacks before the last byte",
		 atomic_load(&r->finish_early));
	for (unsigned int i = 0; i < RACE_FILES; i++) {
		T_EXPECT(done[i] == 1, "file %u done %u times", i, done[i]);
		T_EXPECT(atomic_load(&r->finished[i]) == 1,
			 "file %u finished %u times", i,
			 atomic_load(&r->finished[i]));
		T_EXPECT(atomic_load(&r->wrote[i]) == r->size[i] &&
			 WRITTEN(&t, i) == r->size[i],
			 "file %u: wrote %llu, table %llu, size %llu", i,
			 (unsigned long long)atomic_load(&r->wrote[i]),
			 (unsigned long long)WRITTEN(&t, i),
			 (unsigned long long)r->size[i]);
	}
	pxfer_filetab_release(&t);
	free(r);
	woken();
}

int main(void)
{
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0) {
		perror("eventfd");
		return 1;
	}
	test_reserve();
	test_overlap();
	test_done();
	test_reuse();
	test_race();
	close(efd);
	return t_result();
}
