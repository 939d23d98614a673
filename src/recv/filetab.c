// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recv/filetab.h"

int pxfer_filetab_init(struct pxfer_filetab *t, unsigned int n)
{
	memset(t, 0, sizeof(*t));
	t->f = calloc(n, sizeof(*t->f));
	if (!t->f)
		return -ENOMEM;
	t->n = n;
	return -pthread_mutex_init(&t->lock, NULL);
}

/* call with the lock held */
static void forget_ranges(struct pxfer_filetab *t, struct pxfer_fstate *f)
{
	t->nranges -= f->nrng;
	if (f->rng != f->rng_in)
		free(f->rng);
	f->rng = NULL;
	f->nrng = f->rng_cap = 0;
}

void pxfer_filetab_release(struct pxfer_filetab *t)
{
	if (!t->f)
		return;
	for (unsigned int i = 0; i < t->n; i++)
		forget_ranges(t, &t->f[i]);
	pthread_mutex_destroy(&t->lock);
	free(t->f);
	t->f = NULL;
}

int pxfer_filetab_open(struct pxfer_filetab *t, uint64_t id, uint64_t size)
{
	struct pxfer_fstate *f;
	int ret = -EPROTO;

	if (id >= t->n)
		return ret;
	f = &t->f[id];
	pthread_mutex_lock(&t->lock);
	if (!f->used) {
		memset(f, 0, sizeof(*f));
		f->used = 1;
		f->size = size;
		t->used++;
		ret = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void pxfer_filetab_close(struct pxfer_filetab *t, uint64_t id)
{
	struct pxfer_fstate *f = &t->f[id];

	pthread_mutex_lock(&t->lock);
	if (f->used) {
		forget_ranges(t, f);
		memset(f, 0, sizeof(*f));
		t->used--;
	}
	pthread_mutex_unlock(&t->lock);
}

int pxfer_filetab_in_use(struct pxfer_filetab *t, uint64_t id)
{
	int used;

	if (id >= t->n)
		return 0;
	pthread_mutex_lock(&t->lock);
	used = t->f[id].used;
	pthread_mutex_unlock(&t->lock);
	return used;
}

unsigned int pxfer_filetab_count(struct pxfer_filetab *t)
{
	unsigned int n;

	pthread_mutex_lock(&t->lock);
	n = t->used;
	pthread_mutex_unlock(&t->lock);
	return n;
}

/* call with the lock held: 1 if @f just became complete */
static int check_done(struct pxfer_fstate *f)
{
	if (f->end_known == 1 && f->written == f->total &&
	    f->submitted == f->written) {
		/* no further bytes can arrive: it completes only once */
		f->end_known = 2;
		return 1;
	}
	return 0;
}

/* the first range of @f that ends after @lo */
static unsigned int range_find(const struct pxfer_fstate *f, uint64_t lo)
{
	unsigned int a = 0, b = f->nrng;

	while (a < b) {
		unsigned int m = a + (b - a) / 2;

		if (f->rng[m].hi <= lo)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* 1 if [lo, hi) meets a range of @f */
static int range_overlaps(const struct pxfer_fstate *f, uint64_t lo, uint64_t hi)
{
	unsigned int i = range_find(f, lo);

	return i < f->nrng && f->rng[i].lo < hi;
}

/* add [lo, hi), which overlaps nothing, merging with its neighbours */
static int range_add(struct pxfer_filetab *t, struct pxfer_fstate *f,
		     uint64_t lo, uint64_t hi)
{
	unsigned int i = range_find(f, lo);
	int prev = i > 0 && f->rng[i - 1].hi == lo;
	int next = i < f->nrng && f->rng[i].lo == hi;

	if (prev && next) {
		f->rng[i - 1].hi = f->rng[i].hi;
		memmove(&f->rng[i], &f->rng[i + 1],
			(f->nrng - i - 1) * sizeof(*f->rng));
		f->nrng--;
		t->nranges--;
	} else if (prev) {
		f->rng[i - 1].hi = hi;
	} else if (next) {
		f->rng[i].lo = lo;
	} else {
		if (t->nranges >= PXFER_RANGES_MAX)
			return -EPROTO;		/* scattered beyond reason */
		if (!f->rng_cap) {
			/* most files: one range, or two meeting up */
			f->rng = f->rng_in;
			f->rng_cap = 2;
		} else if (f->nrng == f->rng_cap) {
			/* doubling: the arrays of all files hold at most
			 * twice PXFER_RANGES_MAX ranges (32 MiB) */
			unsigned int cap = 2 * f->rng_cap;
			struct pxfer_range *r = malloc(cap * sizeof(*r));

			if (!r)
				return -ENOMEM;
			memcpy(r, f->rng, f->nrng * sizeof(*r));
			if (f->rng != f->rng_in)
				free(f->rng);
			f->rng = r;
			f->rng_cap = cap;
		}
		memmove(&f->rng[i + 1], &f->rng[i],
			(f->nrng - i) * sizeof(*f->rng));
		f->rng[i] = (struct pxfer_range){ lo, hi };
		f->nrng++;
		t->nranges++;
	}
	return 0;
}

int pxfer_filetab_hold(struct pxfer_filetab *t, uint64_t id, uint64_t off,
		       uint64_t len)
{
	struct pxfer_fstate *f;
	int ret = -EPROTO;

	if (id >= t->n)
		return ret;
	f = &t->f[id];
	pthread_mutex_lock(&t->lock);
	if (f->used && !f->submitted && len && off <= f->size &&
	    len <= f->size - off && len <= f->size - f->held &&
	    !range_overlaps(f, off, off + len)) {
		ret = range_add(t, f, off, off + len);
		if (!ret)
			f->held += len;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

static int seg_ok(struct pxfer_filetab *t, const struct pxfer_seg *s,
		  uint64_t extra)
{
	struct pxfer_fstate *f;

	if (s->file >= t->n)
		return 0;
	f = &t->f[s->file];
	if (!f->used || f->end_known == 2)
		return 0;
	if (s->offset > f->size || s->len > f->size - s->offset)
		return 0;
	/* extra: bytes of earlier segments of this chunk for the same file */
	if (f->submitted + extra + s->len > f->size - f->held)
		return 0;
	if (f->end_known && f->submitted + extra + s->len > f->total)
		return 0;
	/* bytes sent twice would leave others unsent under the same count */
	return !range_overlaps(f, s->offset, s->offset + s->len);
}

int pxfer_filetab_reserve(struct pxfer_filetab *t, const struct pxfer_chunk *ch)
{
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned int i = 0; i < ch->nseg && !ret; i++) {
		const struct pxfer_seg *si = &ch->seg[i];
		uint64_t extra = 0;

		for (unsigned int j = 0; j < i; j++) {
			const struct pxfer_seg *sj = &ch->seg[j];

			if (sj->file != si->file)
				continue;
			extra += sj->len;
			if (si->offset < sj->offset + sj->len &&
			    sj->offset < si->offset + si->len)
				ret = -EPROTO;	/* twice in one chunk */
		}
		if (!seg_ok(t, si, extra))
			ret = -EPROTO;
	}
	for (unsigned int i = 0; i < ch->nseg && !ret; i++) {
		struct pxfer_fstate *f = &t->f[ch->seg[i].file];

		if (ch->seg[i].len)
			ret = range_add(t, f, ch->seg[i].offset,
					ch->seg[i].offset + ch->seg[i].len);
		if (ret)
			break;
		f->submitted += ch->seg[i].len;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* take [lo, hi), which a range of @f holds, out of it */
static int range_remove(struct pxfer_filetab *t, struct pxfer_fstate *f,
			uint64_t lo, uint64_t hi)
{
	unsigned int i = range_find(f, lo);
	struct pxfer_range *r = &f->rng[i];
	uint64_t end;

	if (i >= f->nrng || r->lo > lo || r->hi < hi)
		return -EINVAL;
	if (r->lo == lo && r->hi == hi) {
		memmove(r, r + 1, (f->nrng - i - 1) * sizeof(*r));
		f->nrng--;
		t->nranges--;
	} else if (r->lo == lo) {
		r->lo = hi;
	} else if (r->hi == hi) {
		r->hi = lo;
	} else {
		/* a hole in the middle: the tail becomes a range of its own */
		end = r->hi;
		r->hi = lo;
		return range_add(t, f, hi, end);
	}
	return 0;
}

int pxfer_filetab_unreserve(struct pxfer_filetab *t, const struct pxfer_chunk *ch)
{
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned int i = 0; i < ch->nseg && !ret; i++) {
		struct pxfer_fstate *f = &t->f[ch->seg[i].file];

		ret = range_remove(t, f, ch->seg[i].offset,
				   ch->seg[i].offset + ch->seg[i].len);
		if (!ret)
			f->submitted -= ch->seg[i].len;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int pxfer_filetab_written(struct pxfer_filetab *t, uint64_t id, uint32_t len,
			  int err)
{
	struct pxfer_fstate *f = &t->f[id];
	int done;

	pthread_mutex_lock(&t->lock);
	f->written += len;
	if (err && !f->err)
		f->err = err;
	done = check_done(f);
	pthread_mutex_unlock(&t->lock);
	return done;
}

int pxfer_filetab_end(struct pxfer_filetab *t, uint64_t id, uint64_t total,
		      int code)
{
	struct pxfer_fstate *f;
	int ret = 0, done = 0;

	if (id >= t->n)
		return -EPROTO;
	f = &t->f[id];
	pthread_mutex_lock(&t->lock);
	if (!f->used || f->end_known || total > f->size - f->held ||
	    total < f->submitted) {
		ret = -EPROTO;
	} else {
		f->end_known = 1;
		f->total = total;
		f->end_code = code;
		done = check_done(f);
	}
	pthread_mutex_unlock(&t->lock);
	return ret ? ret : done;
}

int pxfer_filetab_outcome(struct pxfer_filetab *t, uint64_t id,
			  uint64_t *total, int *by_sender)
{
	struct pxfer_fstate *f = &t->f[id];
	int err;

	pthread_mutex_lock(&t->lock);
	*total = f->total;
	*by_sender = f->end_code != 0;
	err = f->end_code ? f->end_code : f->err;
	pthread_mutex_unlock(&t->lock);
	return err;
}
