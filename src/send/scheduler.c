// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "send/scheduler.h"

int pxfer_sched_init(struct pxfer_sched *s, uint32_t chunk,
		     unsigned int max_seg)
{
	memset(s, 0, sizeof(*s));
	if (!chunk || !max_seg || max_seg > PXFER_SEG_MAX)
		return -EINVAL;
	s->chunk = chunk;
	s->max_seg = max_seg;
	s->ended_tail = &s->ended;
	return -pthread_mutex_init(&s->lock, NULL);
}

void pxfer_sched_release(struct pxfer_sched *s)
{
	pthread_mutex_destroy(&s->lock);
}

/* call with the lock held; @f is off the queue once all_planned */
static void maybe_end(struct pxfer_sched *s, struct pxfer_sfile *f)
{
	if (f->all_planned && !f->inflight && !f->ended) {
		f->ended = 1;
		f->next = NULL;
		*s->ended_tail = f;
		s->ended_tail = &f->next;
	}
}

void pxfer_sched_add(struct pxfer_sched *s, struct pxfer_sfile *f)
{
	pthread_mutex_lock(&s->lock);
	f->next = NULL;
	if (s->tail)
		s->tail->next = f;
	else
		s->head = f;
	s->tail = f;
	pthread_mutex_unlock(&s->lock);
}

static void pop_head(struct pxfer_sched *s)
{
	s->head = s->head->next;
	if (!s->head)
		s->tail = NULL;
}

/*
 * Find the data region at or after f->cursor, less what the receiver
 * holds. Returns 1 if there is one, 0 if the rest of the file is a hole
 * or held.
 */
static int find_data(struct pxfer_sfile *f)
{
	const struct pxfer_held_run *r;
	uint64_t d, h;
	off_t sd, sh;

	while (f->cursor >= f->data_end) {
		if (f->cursor >= f->size)
			return 0;
		d = f->cursor;
		h = f->size;
		if (!f->noholes) {
			sd = lseek(f->fd, f->cursor, SEEK_DATA);
			if (sd < 0 && errno == ENXIO)
				return 0;	/* a hole up to the end */
			/* else no hole support here: everything is data */
			if (sd >= 0) {
				if ((uint64_t)sd >= f->size)
					return 0;
				sh = lseek(f->fd, sd, SEEK_HOLE);
				d = sd;
				if (sh > sd && (uint64_t)sh <= f->size)
					h = sh;
			}
		}
		while (f->held_i < f->nheld &&
		       f->held[f->held_i].off + f->held[f->held_i].len <= d)
			f->held_i++;
		r = f->held_i < f->nheld ? &f->held[f->held_i] : NULL;
		if (r && r->off <= d) {
			f->cursor = r->off + r->len;	/* held: go past it */
			continue;
		}
		if (r && r->off < h)
			h = r->off;
		f->cursor = d;
		f->data_end = h;
	}
	return 1;
}

int pxfer_sched_next(struct pxfer_sched *s, struct pxfer_plan *p)
{
	p->nseg = 0;
	p->len = 0;
	pthread_mutex_lock(&s->lock);
	while (s->head && p->nseg < s->max_seg && p->len < s->chunk) {
		struct pxfer_sfile *f = s->head;
		uint64_t avail;
		uint32_t room = s->chunk - p->len, len;

		if (f->err || !find_data(f)) {
			f->all_planned = 1;
			pop_head(s);
			maybe_end(s, f);
			continue;
		}
		avail = f->data_end - f->cursor;
		/* keep a large file's chunks whole rather than fill a tail */
		if (p->nseg && avail > room)
			break;
		len = avail < room ? avail : room;
		p->seg[p->nseg].f = f;
		p->seg[p->nseg].off = f->cursor;
		p->seg[p->nseg].len = len;
		p->nseg++;
		p->len += len;
		f->inflight++;
		f->cursor += len;
		if (f->cursor >= f->data_end && !find_data(f)) {
			f->all_planned = 1;
			pop_head(s);
		}
		if (avail > len)
			break;	/* the chunk is full */
	}
	pthread_mutex_unlock(&s->lock);
	return p->nseg > 0;
}

int pxfer_sched_done(struct pxfer_sched *s, struct pxfer_sfile *f,
		     uint32_t len, int err)
{
	int first = 0;

	pthread_mutex_lock(&s->lock);
	f->inflight--;
	if (err) {
		first = !f->err;
		if (first)
			f->err = err;
		if (!f->all_planned) {
			/* leaves the queue when it next reaches the head */
			f->cursor = f->size;
			f->data_end = f->size;
		}
	} else {
		f->sent += len;
	}
	maybe_end(s, f);
	pthread_mutex_unlock(&s->lock);
	return first;
}

void pxfer_sched_relay(struct pxfer_sched *s, struct pxfer_sfile *f,
		       uint32_t len)
{
	pthread_mutex_lock(&s->lock);
	f->inflight++;
	f->relay_planned += len;
	if (f->relay_planned >= f->range_len)
		f->all_planned = 1;
	pthread_mutex_unlock(&s->lock);
}

void pxfer_sched_relay_end(struct pxfer_sched *s, struct pxfer_sfile *f,
			   int err)
{
	pthread_mutex_lock(&s->lock);
	if (err && !f->err)
		f->err = err;
	f->all_planned = 1;
	maybe_end(s, f);
	pthread_mutex_unlock(&s->lock);
}

int pxfer_sched_ended(struct pxfer_sched *s, struct pxfer_sfile *f)
{
	int ended;

	pthread_mutex_lock(&s->lock);
	ended = f->ended;
	pthread_mutex_unlock(&s->lock);
	return ended;
}

struct pxfer_sfile *pxfer_sched_take_ended(struct pxfer_sched *s)
{
	struct pxfer_sfile *list;

	pthread_mutex_lock(&s->lock);
	list = s->ended;
	s->ended = NULL;
	s->ended_tail = &s->ended;
	pthread_mutex_unlock(&s->lock);
	return list;
}
