/* SPDX-License-Identifier: MIT */
/*
 * scheduler_test: the sender's chunk scheduler (src/scheduler.c) over real
 * temporary files.
 *
 *  - a large file is cut into chunk-sized pieces at aligned offsets that
 *    cover it exactly once;
 *  - small files are packed whole, several to a chunk, up to the chunk
 *    size and to max_seg segments (checked against a greedy model);
 *  - a large file after small ones is not split to fill the tail;
 *  - a sparse file yields only its data regions (when the filesystem
 *    reports holes; otherwise that part is skipped and says so);
 *  - all-hole and empty files yield nothing and still end;
 *  - an error from sched_done stops planning the file, and its end reports
 *    it once;
 *  - a file ends (is taken from the scheduler's ended list) exactly once,
 *    after all its segments are done;
 *  - four threads planning at once cover every data byte exactly once.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "send/scheduler.h"
#include "test.h"

#define KiB	1024u
#define MiB	(1024u * 1024u)

static const char *tmpdir;
static int have_holes;

/* ---- random numbers (fixed seeds) ------------------------------------ */

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint32_t rnd(uint64_t *s, uint32_t n)
{
	return (uint32_t)(rnd_next(s) >> 32) % n;
}

/* ---- temporary files ------------------------------------------------- */

/* write @len bytes of a pattern at @off */
static void put_data(int fd, uint64_t off, uint64_t len)
{
	static uint8_t buf[256 * KiB];

	if (!buf[1])
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)(i * 7 + 1);
	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);
		ssize_t w = pwrite(fd, buf, n, off);

		if (w <= 0) {
			perror("pwrite");
			exit(1);
		}
		off += w;
		len -= w;
	}
}

/* a file of @size bytes, all data */
static int data_file(uint64_t size)
{
	int fd = t_tmpfile(tmpdir);

	put_data(fd, 0, size);
	return fd;
}

/* Does the filesystem under tmpdir report holes? */
static int probe_holes(void)
{
	int fd = t_tmpfile(tmpdir), ok;
	off_t h, d;

	if (ftruncate(fd, 4 * MiB)) {
		close(fd);
		return 0;
	}
	put_data(fd, 2 * MiB, 64 * KiB);
	h = lseek(fd, 0, SEEK_HOLE);
	d = lseek(fd, 0, SEEK_DATA);
	ok = h == 0 && d > 0 && d <= 2 * MiB &&
	     lseek(fd, 3 * MiB, SEEK_DATA) < 0 && errno == ENXIO;
	close(fd);
	return ok;
}

/* The file's data regions as the filesystem reports them. */
struct region {
	uint64_t off, end;
};

static int regions_of(int fd, uint64_t size, struct region *r, int max)
{
	uint64_t off = 0;
	int n = 0;

	while (off < size && n < max) {
		off_t d = lseek(fd, off, SEEK_DATA), h;

		if (d < 0 || (uint64_t)d >= size)
			break;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0 || (uint64_t)h > size)
			h = size;
		r[n].off = d;
		r[n].end = h;
		n++;
		off = h;
	}
	return n;
}

/* ---- bookkeeping ------------------------------------------------------ */

#define MAXF	512

struct tfile {
	struct pxfer_sfile f;
	uint64_t expect;		/* data bytes */
	atomic_uint_fast64_t done;	/* bytes of segments done */
	atomic_int ends;		/* on_end calls */
	int end_err;			/* f->err seen by on_end */
	uint64_t end_sent;		/* f->sent seen by on_end */
	uint8_t *bits;			/* bytes planned (bitmap) */
	struct region reg[16];		/* data regions */
	int nreg;
};

struct ctx {
	struct tfile *t;
	unsigned int n;
	atomic_uint ended;
	atomic_int bad_end;
};

static void on_end(void *arg, struct pxfer_sfile *f)
{
	struct ctx *c = arg;
	struct tfile *t;

	if (f->id >= c->n) {
		T_EXPECT(0, "on_end for unknown file id %llu",
			 (unsigned long long)f->id);
		atomic_fetch_add(&c->bad_end, 1);
		return;
	}
	t = &c->t[f->id];
	T_EXPECT(&t->f == f, "on_end for file %llu with a foreign struct",
		 (unsigned long long)f->id);
	T_EXPECT(f->inflight == 0, "file %llu ended with %u segment(s) in flight",
		 (unsigned long long)f->id, f->inflight);
	T_EXPECT(f->all_planned, "file %llu ended before all was planned",
		 (unsigned long long)f->id);
	if (!f->err)
		T_EXPECT(atomic_load(&t->done) == t->expect,
			 "file %llu ended with %llu of %llu bytes done",
			 (unsigned long long)f->id,
			 (unsigned long long)atomic_load(&t->done),
			 (unsigned long long)t->expect);
	t->end_err = f->err;
	t->end_sent = f->sent;
	if (atomic_fetch_add(&t->ends, 1))
		atomic_fetch_add(&c->bad_end, 1);
	atomic_fetch_add(&c->ended, 1);
}

/*
 * The test's view of the scheduler: each call is followed by taking the
 * files it ended and checking them (on_end), as the sender's workers do.
 * One scheduler runs at a time; sched_ctx is its files.
 */
static struct ctx *sched_ctx;

static void take_ended(struct pxfer_sched *s)
{
	struct pxfer_sfile *f = pxfer_sched_take_ended(s), *next;

	for (; f; f = next) {
		next = f->next;
		on_end(sched_ctx, f);
	}
}

static int sched_init(struct pxfer_sched *s, uint32_t chunk,
		      unsigned int max_seg, struct ctx *c)
{
	sched_ctx = c;
	return pxfer_sched_init(s, chunk, max_seg);
}

static int sched_next(struct pxfer_sched *s, struct pxfer_plan *p)
{
	int ret = pxfer_sched_next(s, p);

	take_ended(s);
	return ret;
}

static int sched_done(struct pxfer_sched *s, struct pxfer_sfile *f,
		      uint32_t len, int err)
{
	int ret = pxfer_sched_done(s, f, len, err);

	take_ended(s);
	return ret;
}

static struct ctx *ctx_new(unsigned int n)
{
	struct ctx *c = calloc(1, sizeof(*c));

	if (!c || !(c->t = calloc(n, sizeof(*c->t))))
		abort();
	c->n = n;
	return c;
}

static void ctx_free(struct ctx *c)
{
	for (unsigned int i = 0; i < c->n; i++) {
		if (c->t[i].f.fd > 0)
			close(c->t[i].f.fd);
		free(c->t[i].bits);
	}
	free(c->t);
	free(c);
}

/* file @i of @c: @fd holding @size bytes, @expect of them data */
static struct tfile *tf_set(struct ctx *c, unsigned int i, int fd,
			    uint64_t size, uint64_t expect)
{
	struct tfile *t = &c->t[i];

	memset(&t->f, 0, sizeof(t->f));
	t->f.id = i;
	t->f.fd = fd;
	t->f.size = size;
	t->expect = expect;
	return t;
}

static void seg_done(struct pxfer_sched *s, const struct pxfer_plan_seg *g,
		     int err)
{
	struct tfile *t = (struct tfile *)g->f;	/* f is the first member */

	if (!err)
		atomic_fetch_add(&t->done, g->len);
	sched_done(s, g->f, g->len, err);
}

static void plan_done(struct pxfer_sched *s, const struct pxfer_plan *p)
{
	for (unsigned int i = 0; i < p->nseg; i++)
		seg_done(s, &p->seg[i], 0);
}

/* a plan is well formed: lengths add up, within limits */
static void check_plan(const struct pxfer_sched *s, const struct pxfer_plan *p,
		       const char *what)
{
	uint64_t sum = 0;

	T_EXPECT(p->nseg >= 1 && p->nseg <= s->max_seg,
		 "%s: %u segments (max %u)", what, p->nseg, s->max_seg);
	for (unsigned int i = 0; i < p->nseg && i < PXFER_SEG_MAX; i++) {
		const struct pxfer_plan_seg *g = &p->seg[i];

		T_EXPECT(g->len > 0, "%s: empty segment %u", what, i);
		T_EXPECT(g->off + g->len <= g->f->size,
			 "%s: segment %u [%llu, +%u) beyond size %llu", what, i,
			 (unsigned long long)g->off, g->len,
			 (unsigned long long)g->f->size);
		sum += g->len;
	}
	T_EXPECT(sum == p->len, "%s: segments sum to %llu, plan says %u", what,
		 (unsigned long long)sum, p->len);
	T_EXPECT(p->len <= s->chunk, "%s: plan of %u bytes, chunk %u", what,
		 p->len, s->chunk);
}

/* mark [off, off+len) of @t planned; 0 if some byte was planned before */
static int mark(struct tfile *t, uint64_t off, uint32_t len)
{
	int ok = 1;

	if (!t->bits) {
		t->bits = calloc(t->f.size / 8 + 1, 1);
		if (!t->bits)
			abort();
	}
	for (uint64_t b = off; b < off + len; b++) {
		uint8_t m = 1u << (b & 7);

		if (t->bits[b >> 3] & m)
			ok = 0;
		t->bits[b >> 3] |= m;
	}
	return ok;
}

static int is_data(const struct tfile *t, uint64_t b)
{
	if (!t->nreg)
		return b < t->expect;	/* a plain file: all data */
	for (int i = 0; i < t->nreg; i++)
		if (b >= t->reg[i].off && b < t->reg[i].end)
			return 1;
	return 0;
}

/* every data byte of @t planned exactly once (mark checked "once") and
 * nothing else */
static void check_cover(struct tfile *t, const char *what)
{
	uint64_t missing = 0, extra = 0, first = UINT64_MAX;

	for (uint64_t b = 0; b < t->f.size; b++) {
		int got = t->bits && (t->bits[b >> 3] >> (b & 7)) & 1;
		int want = is_data(t, b);

		if (got == want)
			continue;
		if (first == UINT64_MAX)
			first = b;
		if (want)
			missing++;
		else
			extra++;
	}
	T_EXPECT(!missing && !extra,
		 "%s: file %llu: %llu data bytes not planned, %llu hole bytes planned (first at %llu)",
		 what, (unsigned long long)t->f.id,
		 (unsigned long long)missing, (unsigned long long)extra,
		 (unsigned long long)first);
}

/* ---- a large file ----------------------------------------------------- */

static void test_large(void)
{
	const uint32_t chunk = 64 * KiB;
	const uint64_t size = 10ull * chunk + 1234;
	struct ctx *c = ctx_new(1);
	struct pxfer_sched s;
	struct pxfer_plan *p = calloc(16, sizeof(*p));
	struct tfile *t;
	unsigned int np = 0;
	uint64_t next_off = 0;

	T_EXPECT(sched_init(&s, chunk, PXFER_SEG_MAX, c) == 0,
		 "init");
	T_EXPECT(sched_next(&s, &p[0]) == 0 && p[0].nseg == 0,
		 "nothing to plan in an empty scheduler");
	t = tf_set(c, 0, data_file(size), size, size);
	pxfer_sched_add(&s, &t->f);
	while (np < 16 && sched_next(&s, &p[np])) {
		check_plan(&s, &p[np], "large");
		T_EXPECT(p[np].nseg == 1, "one file, one segment: %u",
			 p[np].nseg);
		T_EXPECT(p[np].seg[0].f == &t->f, "segment of the file");
		T_EXPECT(p[np].seg[0].off % chunk == 0,
			 "aligned offset %llu",
			 (unsigned long long)p[np].seg[0].off);
		T_EXPECT(p[np].seg[0].off == next_off,
			 "pieces in order: %llu, want %llu",
			 (unsigned long long)p[np].seg[0].off,
			 (unsigned long long)next_off);
		T_EXPECT(p[np].seg[0].len ==
			 (size - next_off < chunk ? size - next_off : chunk),
			 "piece at %llu of %u bytes",
			 (unsigned long long)next_off, p[np].seg[0].len);
		T_EXPECT(mark(t, p[np].seg[0].off, p[np].seg[0].len),
			 "piece at %llu planned twice",
			 (unsigned long long)p[np].seg[0].off);
		next_off = p[np].seg[0].off + p[np].seg[0].len;
		np++;
	}
	T_EXPECT(np == 11, "11 pieces, got %u", np);
	check_cover(t, "large");
	T_EXPECT(t->f.inflight == np, "inflight %u", t->f.inflight);
	T_EXPECT(sched_next(&s, &p[0]) == 0, "nothing more");
	/* done out of order: on_end only after the last */
	for (unsigned int i = 0; i < np; i++) {
		unsigned int k = (i * 7) % np;	/* 7 is prime to 11 */

		T_EXPECT(!atomic_load(&t->ends) && !pxfer_sched_ended(&s, &t->f),
			 "ended with %u of %u pieces done", i, np);
		seg_done(&s, &p[k].seg[0], 0);
	}
	T_EXPECT(atomic_load(&t->ends) == 1, "on_end once, got %d",
		 atomic_load(&t->ends));
	T_EXPECT(pxfer_sched_ended(&s, &t->f), "sched_ended");
	T_EXPECT(t->end_err == 0 && t->end_sent == size,
		 "ended with err %d, sent %llu", t->end_err,
		 (unsigned long long)t->end_sent);
	T_EXPECT(sched_next(&s, &p[0]) == 0, "nothing after the end");
	T_EXPECT(atomic_load(&t->ends) == 1, "on_end still once");
	pxfer_sched_release(&s);
	free(p);
	ctx_free(c);
}

/* ---- small files packed ----------------------------------------------- */

/*
 * Plan @n whole files of the given sizes (each <= chunk) and compare with
 * the greedy packing: a file joins the chunk if a segment and its bytes
 * still fit, else it starts the next chunk.
 */
static void pack_case(uint32_t chunk, unsigned int max_seg,
		      const uint32_t *sizes, unsigned int n, const char *what)
{
	struct ctx *c = ctx_new(n);
	struct pxfer_sched s;
	struct pxfer_plan p;
	unsigned int *idx = calloc(n, sizeof(*idx));
	unsigned int m = 0, at = 0, chunks = 0;

	if (!idx)
		abort();
	/* the files with data, in order */
	for (unsigned int i = 0; i < n; i++)
		if (sizes[i])
			idx[m++] = i;
	T_EXPECT(sched_init(&s, chunk, max_seg, c) == 0,
		 "%s: init", what);
	for (unsigned int i = 0; i < n; i++)
		pxfer_sched_add(&s, &tf_set(c, i, data_file(sizes[i]), sizes[i],
					    sizes[i])->f);
	while (sched_next(&s, &p)) {
		unsigned int want = 0;
		uint32_t len = 0;

		/* the model's next chunk */
		while (at + want < m && want < max_seg &&
		       len + sizes[idx[at + want]] <= chunk)
			len += sizes[idx[at + want++]];
		check_plan(&s, &p, what);
		T_EXPECT(p.nseg == want && p.len == len,
			 "%s: chunk %u holds %u files, %u bytes; want %u, %u",
			 what, chunks, p.nseg, p.len, want, len);
		for (unsigned int i = 0; i < p.nseg && i < want; i++) {
			unsigned int k = idx[at + i];

			T_EXPECT(p.seg[i].f == &c->t[k].f &&
				 p.seg[i].off == 0 && p.seg[i].len == sizes[k],
				 "%s: chunk %u segment %u is file %llu [%llu,+%u), want file %u whole",
				 what, chunks, i,
				 (unsigned long long)p.seg[i].f->id,
				 (unsigned long long)p.seg[i].off,
				 p.seg[i].len, k);
		}
		at += want;
		chunks++;
		plan_done(&s, &p);
	}
	T_EXPECT(at == m, "%s: planned %u of %u files", what, at, m);
	for (unsigned int i = 0; i < n; i++)
		T_EXPECT(atomic_load(&c->t[i].ends) == 1,
			 "%s: file %u ended %d times", what, i,
			 atomic_load(&c->t[i].ends));
	printf("%s: %u files in %u chunks\n", what, n, chunks);
	pxfer_sched_release(&s);
	ctx_free(c);
	free(idx);
}

static void test_small(void)
{
	static uint32_t sizes[300];
	uint64_t seed = 42;

	/* 1000-byte files: 64 of them fit in 64 KiB, then the segment limit */
	for (unsigned int i = 0; i < 200; i++)
		sizes[i] = 1000;
	pack_case(64 * KiB, PXFER_SEG_MAX, sizes, 200, "1000 B files");
	/* a smaller segment limit */
	pack_case(64 * KiB, 5, sizes, 23, "max_seg 5");
	/* 10000-byte files: six fill a 64 KiB chunk, the seventh waits */
	for (unsigned int i = 0; i < 50; i++)
		sizes[i] = 10000;
	pack_case(64 * KiB, PXFER_SEG_MAX, sizes, 50, "10000 B files");
	/* files of exactly the chunk size, and of one byte */
	for (unsigned int i = 0; i < 20; i++)
		sizes[i] = i % 3 ? 1 : 64 * KiB;
	pack_case(64 * KiB, PXFER_SEG_MAX, sizes, 20, "chunk-sized files");
	/* random sizes up to the chunk, some files empty */
	for (unsigned int i = 0; i < 300; i++)
		sizes[i] = i % 37 == 5 ? 0 :
			   1 + rnd(&seed, rnd(&seed, 4) ? 3000 : 16 * KiB);
	pack_case(16 * KiB, PXFER_SEG_MAX, sizes, 300, "random small files");
}

/* ---- a large file after small ones ---------------------------------- */

static void test_large_after_small(void)
{
	const uint32_t chunk = 64 * KiB;
	struct ctx *c = ctx_new(5);
	struct pxfer_sched s;
	struct pxfer_plan p;
	struct {
		unsigned int nseg;
		struct {
			unsigned int file;
			uint64_t off;
			uint32_t len;
		} seg[3];
	} want[] = {
		{ 2, { { 0, 0, 1000 }, { 1, 0, 3000 } } },
		{ 1, { { 2, 0, chunk } } },
		{ 1, { { 2, chunk, chunk } } },
		{ 1, { { 2, 2 * chunk, chunk } } },
		/* the tail of the large file, then what follows */
		{ 2, { { 2, 3 * chunk, 500 }, { 3, 0, 100 } } },
		/* a file just over the room left is not split either */
		{ 1, { { 4, 0, chunk - 50 } } },
	};
	unsigned int k = 0;

	T_EXPECT(sched_init(&s, chunk, PXFER_SEG_MAX, c) == 0,
		 "init");
	pxfer_sched_add(&s, &tf_set(c, 0, data_file(1000), 1000, 1000)->f);
	pxfer_sched_add(&s, &tf_set(c, 1, data_file(3000), 3000, 3000)->f);
	pxfer_sched_add(&s, &tf_set(c, 2, data_file(3 * chunk + 500),
				    3 * chunk + 500, 3 * chunk + 500)->f);
	pxfer_sched_add(&s, &tf_set(c, 3, data_file(100), 100, 100)->f);
	pxfer_sched_add(&s, &tf_set(c, 4, data_file(chunk - 50), chunk - 50,
				    chunk - 50)->f);
	while (sched_next(&s, &p)) {
		check_plan(&s, &p, "large after small");
		if (k >= sizeof(want) / sizeof(want[0])) {
			T_EXPECT(0, "an extra chunk of %u segments", p.nseg);
			plan_done(&s, &p);
			continue;
		}
		T_EXPECT(p.nseg == want[k].nseg, "chunk %u: %u segments, want %u",
			 k, p.nseg, want[k].nseg);
		for (unsigned int i = 0; i < p.nseg && i < want[k].nseg; i++)
			T_EXPECT(p.seg[i].f == &c->t[want[k].seg[i].file].f &&
				 p.seg[i].off == want[k].seg[i].off &&
				 p.seg[i].len == want[k].seg[i].len,
				 "chunk %u segment %u: file %llu [%llu,+%u), want file %u [%llu,+%u)",
				 k, i, (unsigned long long)p.seg[i].f->id,
				 (unsigned long long)p.seg[i].off, p.seg[i].len,
				 want[k].seg[i].file,
				 (unsigned long long)want[k].seg[i].off,
				 want[k].seg[i].len);
		plan_done(&s, &p);
		k++;
	}
	T_EXPECT(k == sizeof(want) / sizeof(want[0]), "%u chunks", k);
	for (unsigned int i = 0; i < 5; i++)
		T_EXPECT(atomic_load(&c->t[i].ends) == 1, "file %u ended %d times",
			 i, atomic_load(&c->t[i].ends));
	pxfer_sched_release(&s);
	ctx_free(c);
}

/* ---- sparse, all-hole and empty files -------------------------------- */

/* a sparse file: @size bytes, data at the given ranges */
static int sparse_file(uint64_t size, const struct region *w, int nw)
{
	int fd = t_tmpfile(tmpdir);

	if (ftruncate(fd, size)) {
		perror("ftruncate");
		exit(1);
	}
	for (int i = 0; i < nw; i++)
		put_data(fd, w[i].off, w[i].end - w[i].off);
	return fd;
}

static void test_sparse(void)
{
	const uint32_t chunk = 64 * KiB;
	const uint64_t size = 16 * MiB;
	/* page-aligned writes, so block-granular filesystems report them as
	 * they are; one region longer than a chunk and unaligned to it */
	const struct region w[] = {
		{ 0, 4 * KiB },
		{ 1 * MiB + 12 * KiB, 1 * MiB + 12 * KiB + 200 * KiB },
		{ 9 * MiB, 9 * MiB + 12 * KiB },
		{ 9 * MiB + 64 * KiB, 9 * MiB + 68 * KiB },
		{ size - 4 * KiB, size },
	};
	const int nw = sizeof(w) / sizeof(w[0]);
	struct ctx *c;
	struct pxfer_sched s;
	struct pxfer_plan p;
	struct tfile *t;
	uint64_t data = 0, planned = 0;

	if (!have_holes) {
		printf("sparse files: SKIPPED, %s does not report holes\n",
		       tmpdir);
		return;
	}
	c = ctx_new(1);
	t = tf_set(c, 0, sparse_file(size, w, nw), size, 0);
	t->nreg = regions_of(t->f.fd, size, t->reg, 16);
	for (int i = 0; i < t->nreg; i++)
		data += t->reg[i].end - t->reg[i].off;
	t->expect = data;
	/* what the filesystem reports holds what was written, and is sparse */
	for (int i = 0; i < nw; i++) {
		int in = 0;

		for (int j = 0; j < t->nreg; j++)
			in |= w[i].off >= t->reg[j].off && w[i].end <= t->reg[j].end;
		T_EXPECT(in, "written range %d not reported as data", i);
	}
	T_EXPECT(t->nreg >= 2 && data < size / 4,
		 "%d regions, %llu data bytes in %llu", t->nreg,
		 (unsigned long long)data, (unsigned long long)size);

	T_EXPECT(sched_init(&s, chunk, PXFER_SEG_MAX, c) == 0,
		 "init");
	pxfer_sched_add(&s, &t->f);
	while (sched_next(&s, &p)) {
		check_plan(&s, &p, "sparse");
		for (unsigned int i = 0; i < p.nseg; i++) {
			const struct pxfer_plan_seg *g = &p.seg[i];
			int in = 0;

			for (int j = 0; j < t->nreg; j++)
				in |= g->off >= t->reg[j].off &&
				      g->off + g->len <= t->reg[j].end;
			T_EXPECT(in, "segment [%llu,+%u) crosses a hole",
				 (unsigned long long)g->off, g->len);
			T_EXPECT(mark(t, g->off, g->len),
				 "segment [%llu,+%u) planned twice",
				 (unsigned long long)g->off, g->len);
			planned += g->len;
		}
		plan_done(&s, &p);
	}
	check_cover(t, "sparse");
	T_EXPECT(planned == data, "planned %llu of %llu data bytes",
		 (unsigned long long)planned, (unsigned long long)data);
	T_EXPECT(atomic_load(&t->ends) == 1 && t->end_sent == data,
		 "ended %d times, sent %llu", atomic_load(&t->ends),
		 (unsigned long long)t->end_sent);
	pxfer_sched_release(&s);
	ctx_free(c);
}

static void test_nothing_to_send(void)
{
	struct ctx *c = ctx_new(5);
	struct pxfer_sched s;
	struct pxfer_plan p;
	unsigned int n = 0;
	int r;

	T_EXPECT(sched_init(&s, 64 * KiB, PXFER_SEG_MAX, c) == 0,
		 "init");
	/* an empty file alone: nothing planned, and it ends */
	pxfer_sched_add(&s, &tf_set(c, 0, t_tmpfile(tmpdir), 0, 0)->f);
	r = sched_next(&s, &p);
	T_EXPECT(r == 0 && p.nseg == 0, "empty file planned (%d, %u)", r,
		 p.nseg);
	T_EXPECT(atomic_load(&c->t[0].ends) == 1 && c->t[0].end_sent == 0 &&
		 !c->t[0].end_err, "empty file ended %d times",
		 atomic_load(&c->t[0].ends));

	/* empty, all-hole, data, empty: only the data comes out */
	pxfer_sched_add(&s, &tf_set(c, 1, t_tmpfile(tmpdir), 0, 0)->f);
	if (have_holes) {
		int fd = t_tmpfile(tmpdir);

		if (ftruncate(fd, 3 * MiB))
			perror("ftruncate");
		pxfer_sched_add(&s, &tf_set(c, 2, fd, 3 * MiB, 0)->f);
	} else {
		printf("all-hole file: SKIPPED, %s does not report holes\n",
		       tmpdir);
		c->t[2].f.fd = -1;
	}
	pxfer_sched_add(&s, &tf_set(c, 3, data_file(777), 777, 777)->f);
	pxfer_sched_add(&s, &tf_set(c, 4, t_tmpfile(tmpdir), 0, 0)->f);
	while (sched_next(&s, &p)) {
		check_plan(&s, &p, "nothing to send");
		for (unsigned int i = 0; i < p.nseg; i++)
			T_EXPECT(p.seg[i].f == &c->t[3].f,
				 "segment of file %llu",
				 (unsigned long long)p.seg[i].f->id);
		n += p.nseg;
		plan_done(&s, &p);
	}
	T_EXPECT(n == 1, "one segment, got %u", n);
	for (unsigned int i = 0; i < 5; i++) {
		if (i == 2 && !have_holes)
			continue;
		T_EXPECT(atomic_load(&c->t[i].ends) == 1,
			 "file %u ended %d times", i, atomic_load(&c->t[i].ends));
		T_EXPECT(c->t[i].end_sent == (i == 3 ? 777 : 0) &&
			 !c->t[i].end_err, "file %u sent %llu err %d", i,
			 (unsigned long long)c->t[i].end_sent, c->t[i].end_err);
	}
	pxfer_sched_release(&s);
	ctx_free(c);
}

/* ---- errors ------------------------------------------------------------ */

static void test_errors(void)
{
	const uint32_t chunk = 16 * KiB;
	struct ctx *c = ctx_new(4);
	struct pxfer_sched s;
	struct pxfer_plan p0, p1, p;
	struct tfile *a, *b, *d, *e;

	T_EXPECT(sched_init(&s, chunk, PXFER_SEG_MAX, c) == 0,
		 "init");
	a = tf_set(c, 0, data_file(10 * chunk), 10 * chunk, 10 * chunk);
	b = tf_set(c, 1, data_file(10 * chunk), 10 * chunk, 10 * chunk);
	d = tf_set(c, 2, data_file(100), 100, 100);
	e = tf_set(c, 3, data_file(3 * chunk), 3 * chunk, 3 * chunk);
	pxfer_sched_add(&s, &a->f);
	pxfer_sched_add(&s, &b->f);
	pxfer_sched_add(&s, &d->f);
	pxfer_sched_add(&s, &e->f);

	/* a: two pieces in flight, the first fails */
	T_EXPECT(sched_next(&s, &p0) && p0.seg[0].f == &a->f, "a piece 0");
	T_EXPECT(sched_next(&s, &p1) && p1.seg[0].f == &a->f, "a piece 1");
	seg_done(&s, &p0.seg[0], EIO);
	T_EXPECT(!atomic_load(&a->ends), "a ended with a piece in flight");
	/* no more of a is planned: the next chunk is b's */
	T_EXPECT(sched_next(&s, &p) && p.nseg == 1 &&
		 p.seg[0].f == &b->f && p.seg[0].off == 0,
		 "after the error, b comes next (file %llu off %llu)",
		 (unsigned long long)p.seg[0].f->id,
		 (unsigned long long)p.seg[0].off);
	T_EXPECT(!atomic_load(&a->ends), "a ended with a piece in flight");
	seg_done(&s, &p1.seg[0], 0);
	T_EXPECT(atomic_load(&a->ends) == 1, "a ended %d times",
		 atomic_load(&a->ends));
	T_EXPECT(a->end_err == EIO && a->end_sent == chunk,
		 "a ended with err %d sent %llu", a->end_err,
		 (unsigned long long)a->end_sent);
	T_EXPECT(pxfer_sched_ended(&s, &a->f), "a sched_ended");

	/* b: its only piece in flight fails, then b is never planned again;
	 * on_end comes by the time the scheduler moves on */
	seg_done(&s, &p.seg[0], EACCES);
	T_EXPECT(sched_next(&s, &p) && p.nseg >= 1 &&
		 p.seg[0].f == &d->f,
		 "after b's error, d comes next (file %llu)",
		 (unsigned long long)p.seg[0].f->id);
	T_EXPECT(atomic_load(&b->ends) == 1 && b->end_err == EACCES &&
		 b->end_sent == 0, "b ended %d times, err %d, sent %llu",
		 atomic_load(&b->ends), b->end_err,
		 (unsigned long long)b->end_sent);
	for (unsigned int i = 0; i < p.nseg; i++)
		T_EXPECT(p.seg[i].f != &b->f, "b planned after its error");

	/* d is alone in its chunk (e does not fit the tail); fail d after
	 * it was all planned: on_end at once, with the error */
	T_EXPECT(p.nseg == 1, "d alone in its chunk: %u segments", p.nseg);
	seg_done(&s, &p.seg[0], EIO);
	T_EXPECT(atomic_load(&d->ends) == 1 && d->end_err == EIO,
		 "d ended %d times, err %d", atomic_load(&d->ends), d->end_err);

	/* e: two errors; the first is kept, on_end once */
	T_EXPECT(sched_next(&s, &p0) && p0.seg[0].f == &e->f, "e piece 0");
	T_EXPECT(sched_next(&s, &p1) && p1.seg[0].f == &e->f, "e piece 1");
	seg_done(&s, &p1.seg[0], ENOSPC);
	seg_done(&s, &p0.seg[0], EIO);
	T_EXPECT(sched_next(&s, &p) == 0, "nothing left");
	T_EXPECT(atomic_load(&e->ends) == 1 && e->end_err == ENOSPC,
		 "e ended %d times, err %d", atomic_load(&e->ends), e->end_err);
	T_EXPECT(sched_next(&s, &p) == 0, "still nothing");
	for (unsigned int i = 0; i < 4; i++)
		T_EXPECT(atomic_load(&c->t[i].ends) == 1, "file %u ended %d times",
			 i, atomic_load(&c->t[i].ends));
	T_EXPECT(!atomic_load(&c->bad_end), "on_end misuse");
	pxfer_sched_release(&s);
	ctx_free(c);
}

static void test_init_limits(void)
{
	struct pxfer_sched s;

	T_EXPECT(sched_init(&s, 0, 1, NULL) == -EINVAL, "chunk 0");
	T_EXPECT(sched_init(&s, 4096, 0, NULL) == -EINVAL,
		 "max_seg 0");
	T_EXPECT(sched_init(&s, 4096, PXFER_SEG_MAX + 1, NULL) ==
		 -EINVAL, "max_seg over PXFER_SEG_MAX");
}

/* ---- four threads ------------------------------------------------------ */

#define CONC_THREADS	4
#define CONC_SMALL	300
#define CONC_LARGE	6
#define CONC_SPARSE	2
#define CONC_EMPTY	4
#define CONC_FILES	(CONC_SMALL + CONC_LARGE + CONC_SPARSE + CONC_EMPTY)
#define CONC_HOLD	4	/* plans a thread keeps in flight */

struct rec {
	uint64_t id, off;
	uint32_t len;
};

struct worker {
	pthread_t th;
	struct pxfer_sched *s;
	struct ctx *c;
	atomic_int *adding;
	atomic_int *stop;
	uint64_t seed;
	struct rec *rec;
	size_t nrec, caprec;
	unsigned long chunks;
};

static void *conc_main(void *arg)
{
	struct worker *w = arg;
	struct pxfer_plan *held = calloc(CONC_HOLD, sizeof(*held));
	unsigned int nheld = 0;

	if (!held)
		abort();
	for (;;) {
		int got = 0;

		if (nheld < CONC_HOLD && sched_next(w->s, &held[nheld])) {
			struct pxfer_plan *p = &held[nheld++];

			got = 1;
			w->chunks++;
			check_plan(w->s, p, "threads");
			for (unsigned int i = 0; i < p->nseg; i++) {
				struct tfile *t = (struct tfile *)p->seg[i].f;

				T_EXPECT(!atomic_load(&t->ends),
					 "file %llu planned after its end",
					 (unsigned long long)t->f.id);
				if (w->nrec == w->caprec) {
					w->caprec = w->caprec ? 2 * w->caprec : 256;
					w->rec = realloc(w->rec, w->caprec *
							 sizeof(*w->rec));
					if (!w->rec)
						abort();
				}
				w->rec[w->nrec++] = (struct rec){
					t->f.id, p->seg[i].off, p->seg[i].len };
			}
		}
		/* finish a random held plan now and then, or when stuck */
		if (nheld && (!got || nheld == CONC_HOLD || !rnd(&w->seed, 3))) {
			unsigned int k = rnd(&w->seed, nheld);

			plan_done(w->s, &held[k]);
			held[k] = held[--nheld];
			continue;
		}
		if (!got && !nheld) {
			if (atomic_load(w->stop) || (!atomic_load(w->adding) &&
			    atomic_load(&w->c->ended) == w->c->n))
				break;
			sched_yield();
		}
	}
	free(held);
	return NULL;
}

static void test_threads(void)
{
	const uint32_t chunk = 16 * KiB;
	struct ctx *c = ctx_new(CONC_FILES);
	struct worker w[CONC_THREADS];
	struct pxfer_sched s;
	atomic_int adding = 1, stop = 0;
	struct timespec t0, now;
	uint64_t seed = 7, total = 0;
	unsigned long chunks = 0;
	unsigned int order[CONC_FILES];

	T_EXPECT(sched_init(&s, chunk, PXFER_SEG_MAX, c) == 0,
		 "init");
	/* make the files first (fixed sizes), add them while threads run */
	for (unsigned int i = 0; i < CONC_FILES; i++) {
		uint64_t size;
		struct tfile *t;

		if (i < CONC_SMALL) {
			size = 1 + rnd(&seed, rnd(&seed, 8) ? 4000 : 40000);
			t = tf_set(c, i, data_file(size), size, size);
		} else if (i < CONC_SMALL + CONC_LARGE) {
			size = 512 * KiB + rnd(&seed, 2 * MiB);
			t = tf_set(c, i, data_file(size), size, size);
		} else if (i < CONC_SMALL + CONC_LARGE + CONC_SPARSE) {
			const struct region wr[] = {
				{ 64 * KiB, 192 * KiB },
				{ 1 * MiB, 1 * MiB + 4 * KiB },
				{ 2 * MiB + 8 * KiB, 2 * MiB + 300 * KiB },
			};

			size = 3 * MiB + 4 * KiB * (i & 1);
			t = tf_set(c, i, sparse_file(size, wr, 3), size, 0);
			if (have_holes) {
				t->nreg = regions_of(t->f.fd, size, t->reg, 16);
				for (int j = 0; j < t->nreg; j++)
					t->expect += t->reg[j].end - t->reg[j].off;
			} else {
				t->expect = size;	/* all of it is data */
			}
		} else {
			t = tf_set(c, i, t_tmpfile(tmpdir), 0, 0);
		}
		total += t->expect;
		order[i] = i;
	}
	/* shuffle the order of arrival */
	for (unsigned int i = CONC_FILES - 1; i > 0; i--) {
		unsigned int j = rnd(&seed, i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	for (unsigned int i = 0; i < CONC_THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].s = &s;
		w[i].c = c;
		w[i].adding = &adding;
		w[i].stop = &stop;
		w[i].seed = 1000 + i;
		if (pthread_create(&w[i].th, NULL, conc_main, &w[i])) {
			perror("pthread_create");
			exit(1);
		}
	}
	for (unsigned int i = 0; i < CONC_FILES; i++) {
		pxfer_sched_add(&s, &c->t[order[i]].f);
		if (i % 16 == 15)
			usleep(200);
	}
	atomic_store(&adding, 0);
	/* a file that never ends must fail the test, not hang it */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		usleep(1000);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (atomic_load(&c->ended) < c->n && now.tv_sec - t0.tv_sec < 20);
	T_EXPECT(atomic_load(&c->ended) == c->n,
		 "only %u of %u files ended after 20 s", atomic_load(&c->ended),
		 c->n);
	atomic_store(&stop, 1);
	for (unsigned int i = 0; i < CONC_THREADS; i++)
		pthread_join(w[i].th, NULL);

	/* every data byte once: mark each planned segment */
	for (unsigned int i = 0; i < CONC_THREADS; i++) {
		for (size_t k = 0; k < w[i].nrec; k++) {
			struct rec *r = &w[i].rec[k];

			T_EXPECT(mark(&c->t[r->id], r->off, r->len),
				 "file %llu [%llu,+%u) planned twice",
				 (unsigned long long)r->id,
				 (unsigned long long)r->off, r->len);
		}
		chunks += w[i].chunks;
		free(w[i].rec);
	}
	for (unsigned int i = 0; i < CONC_FILES; i++) {
		struct tfile *t = &c->t[i];

		check_cover(t, "threads");
		T_EXPECT(atomic_load(&t->ends) == 1, "file %u ended %d times", i,
			 atomic_load(&t->ends));
		T_EXPECT(t->end_sent == t->expect && !t->end_err,
			 "file %u: sent %llu of %llu, err %d", i,
			 (unsigned long long)t->end_sent,
			 (unsigned long long)t->expect, t->end_err);
	}
	T_EXPECT(!atomic_load(&c->bad_end), "on_end called twice for a file");
	printf("threads: %u files, %llu bytes in %lu chunks\n", CONC_FILES,
	       (unsigned long long)total, chunks);
	pxfer_sched_release(&s);
	ctx_free(c);
}

int main(void)
{
	tmpdir = getenv("TMPDIR");
	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	have_holes = probe_holes();
	printf("holes on %s: %s\n", tmpdir, have_holes ? "yes" : "no");

	test_init_limits();
	test_large();
	test_small();
	test_large_after_small();
	test_sparse();
	test_nothing_to_send();
	test_errors();
	test_threads();
	return t_result();
}
