// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/sys.h"
#include "engine/relay.h"

struct pxfer_relay_ent {
	struct pxfer_relay_ent *next, **pprev;	/* all of the relay's */
	struct pxfer_relay *r;
	int state;			/* enum pxfer_relay_state */
	unsigned int refs;
	unsigned int items;		/* pushed, not yet put back */
	unsigned int unbound;		/* ... of them waiting unbound */
	int end;			/* enum ent_end: no more will come */
	int told;			/* ... and its consumer was told */
	struct pxfer_relay_item *head, *tail;	/* waiting for the answer */
	void *sess, *sfile;		/* the consumer's */
	int wake_fd;
	int fd;				/* the partial, complete here */
};

/* how the producer ended with an entry */
enum ent_end {
	END_NOT,
	END_COMPLETE,		/* the range is complete here */
	END_FAILED,		/* the range was given up here */
};

struct pxfer_relay {
	pthread_mutex_t lock;
	int closed;
	int end_news;		/* an entry of a consumer may have ended */
	struct pxfer_relay_ent *ents;
	/* items of LIVE entries, for their consumer */
	struct pxfer_relay_item *head, *tail;
	unsigned int unbound;		/* items of unbound entries */
	atomic_uint held;		/* items pushed, not yet put back */
	atomic_uint_fast64_t ring_bytes, copied_bytes;
};

int pxfer_relay_new(struct pxfer_relay **out)
{
	struct pxfer_relay *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	if (pthread_mutex_init(&r->lock, NULL)) {
		free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

/* with the lock held: @it is put back once the lock is dropped */
static void item_drop(struct pxfer_relay_item *it, struct pxfer_relay_item **back)
{
	it->ent->items--;
	it->next = *back;
	*back = it;
}

/* without the lock: @back's entries may be gone, not @r */
static void put_back(struct pxfer_relay *r, struct pxfer_relay_item *back)
{
	struct pxfer_relay_item *next;

	for (; back; back = next) {
		next = back->next;
		atomic_fetch_sub(&r->held, 1);
		back->put(back);
	}
}

unsigned int pxfer_relay_held(struct pxfer_relay *r)
{
	return atomic_load(&r->held);
}

static void ent_free_maybe(struct pxfer_relay_ent *e)
{
	if (e->refs || e->items)
		return;
	*e->pprev = e->next;
	if (e->next)
		e->next->pprev = e->pprev;
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

/* with the lock held: what @e has waiting goes back */
static void ent_flush(struct pxfer_relay_ent *e, struct pxfer_relay_item **back)
{
	struct pxfer_relay_item *it, *next;

	for (it = e->head; it; it = next) {
		next = it->next;
		if (!e->sess) {
			e->unbound--;
			e->r->unbound--;
		}
		item_drop(it, back);
	}
	e->head = e->tail = NULL;
}

/* with the lock held: the ready items of @e's consumer (or all: NULL) go
 * back, but those of pieces already handed out */
static void ready_flush(struct pxfer_relay *r, struct pxfer_relay_ent *e,
			struct pxfer_relay_item **back)
{
	struct pxfer_relay_item **pp = &r->head, *it;

	r->tail = NULL;
	while ((it = *pp)) {
		if (!e || it->ent == e) {
			*pp = it->next;
			/* the rest of it is not sent: its pieces out are */
			it->taken = it->len;
			if (!it->out)
				item_drop(it, back);
			continue;
		}
		r->tail = it;
		pp = &it->next;
	}
}

static void ent_kill(struct pxfer_relay_ent *e, struct pxfer_relay_item **back)
{
	if (e->state == PXFER_RELAY_LIVE)
		ready_flush(e->r, e, back);
	ent_flush(e, back);
	e->state = PXFER_RELAY_DEAD;
	e->sess = e->sfile = NULL;
	e->wake_fd = -1;
}

void pxfer_relay_close(struct pxfer_relay *r)
{
	struct pxfer_relay_item *back = NULL;

	pthread_mutex_lock(&r->lock);
	r->closed = 1;
	for (struct pxfer_relay_ent *e = r->ents; e; e = e->next)
		ent_kill(e, &back);
	pthread_mutex_unlock(&r->lock);
	put_back(r, back);
}

void pxfer_relay_free(struct pxfer_relay *r)
{
	struct pxfer_relay_ent *e, *next;

	if (!r)
		return;
	/* entries whose references were never dropped (a session that
	 * failed midway): nothing refers to them any more */
	for (e = r->ents; e; e = next) {
		next = e->next;
		if (e->fd >= 0)
			close(e->fd);
		free(e);
	}
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void pxfer_relay_count(struct pxfer_relay *r, uint64_t ring, uint64_t copied)
{
	if (ring)
		atomic_fetch_add(&r->ring_bytes, ring);
	if (copied)
		atomic_fetch_add(&r->copied_bytes, copied);
}

void pxfer_relay_counts(struct pxfer_relay *r, uint64_t *ring, uint64_t *copied)
{
	*ring = atomic_load(&r->ring_bytes);
	*copied = atomic_load(&r->copied_bytes);
}

struct pxfer_relay_ent *pxfer_relay_ent_new(struct pxfer_relay *r)
{
	struct pxfer_relay_ent *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->r = r;
	e->refs = 2;
	e->fd = -1;
	e->wake_fd = -1;
	pthread_mutex_lock(&r->lock);
	if (r->closed)
		e->state = PXFER_RELAY_DEAD;
	e->next = r->ents;
	if (r->ents)
		r->ents->pprev = &e->next;
	e->pprev = &r->ents;
	r->ents = e;
	pthread_mutex_unlock(&r->lock);
	return e;
}

/* with the lock held: a consumer's descriptor is good until it
 * detaches, which takes the lock */
static void wake(int fd)
{
	if (fd >= 0)
		pxfer_wake(fd);
}

/* with the lock held: the producer is done with @e (@how); a LIVE
 * entry's consumer learns it once every piece of what came is done
 * (pxfer_relay_ended), an OFF one's from pxfer_relay_ent_fd */
static void ent_ended(struct pxfer_relay_ent *e, int how)
{
	int tell = e->state == PXFER_RELAY_LIVE && !e->items;

	e->end = how;
	/* (an OFF entry is not scanned for: its consumer polls it) */
	if (tell)
		e->r->end_news = 1;
	if (tell || e->state == PXFER_RELAY_OFF)
		wake(e->wake_fd);
}

static void ent_put(struct pxfer_relay_ent *e, int consumer, int sent)
{
	struct pxfer_relay *r;
	struct pxfer_relay_item *back = NULL;

	if (!e)
		return;
	r = e->r;
	pthread_mutex_lock(&r->lock);
	/* the consumer's going leaves nobody to take what waits */
	if (consumer) {
		int was = e->state;

		ent_kill(e, &back);
		/* the next hop has it all (or had it): nothing more to send */
		if (sent && was != PXFER_RELAY_DEAD)
			e->state = PXFER_RELAY_DONE;
	} else if (e->end == END_NOT) {
		/* the producer let it go before it was complete here */
		ent_ended(e, END_FAILED);
	}
	e->refs--;
	ent_free_maybe(e);
	pthread_mutex_unlock(&r->lock);
	put_back(r, back);
}

void pxfer_relay_ent_put(struct pxfer_relay_ent *e)
{
	ent_put(e, 0, 0);
}

void pxfer_relay_ent_drop(struct pxfer_relay_ent *e, int sent)
{
	ent_put(e, 1, sent);
}

int pxfer_relay_push(struct pxfer_relay_item *it)
{
	struct pxfer_relay_ent *e = it->ent;
	struct pxfer_relay *r = e->r;
	int held = 1;

	it->next = NULL;
	it->taken = 0;
	it->out = 0;
	pthread_mutex_lock(&r->lock);
	if (e->state == PXFER_RELAY_LIVE) {
		if (r->tail)
			r->tail->next = it;
		else
			r->head = it;
		r->tail = it;
		wake(e->wake_fd);
	} else if (e->state == PXFER_RELAY_PENDING &&
		   (e->sess || r->unbound < PXFER_RELAY_UNBOUND_MAX)) {
		if (e->tail)
			e->tail->next = it;
		else
			e->head = it;
		e->tail = it;
		if (!e->sess) {
			e->unbound++;
			r->unbound++;
		}
	} else {
		held = 0;
		/* a chunk of it not passed on: the whole range goes from disk */
		if (e->state == PXFER_RELAY_PENDING)
			ent_kill(e, &it->next);	/* nothing bound: no wake */
	}
	if (held) {
		e->items++;
		atomic_fetch_add(&r->held, 1);
	}
	pthread_mutex_unlock(&r->lock);
	if (!held) {
		put_back(r, it->next);
		it->next = NULL;
	}
	return held;
}

int pxfer_relay_ent_complete(struct pxfer_relay_ent *e, int fd)
{
	struct pxfer_relay *r = e->r;
	int ret = 1;

	pthread_mutex_lock(&r->lock);
	switch (e->state) {
	case PXFER_RELAY_LIVE:
	case PXFER_RELAY_DONE:
		close(fd);	/* every chunk went, or goes, from the ring */
		break;
	case PXFER_RELAY_PENDING:
	case PXFER_RELAY_OFF:
		e->fd = fd;
		break;
	default:
		ret = 0;
	}
	if (ret)
		ent_ended(e, END_COMPLETE);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int pxfer_relay_ent_bind(struct pxfer_relay_ent *e, void *sess, int wake_fd)
{
	struct pxfer_relay *r = e->r;
	int ret = 0;

	pthread_mutex_lock(&r->lock);
	if (e->state != PXFER_RELAY_PENDING || e->sess || r->closed) {
		ret = -ESTALE;
	} else {
		e->sess = sess;
		e->wake_fd = wake_fd;
		r->unbound -= e->unbound;
		e->unbound = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

void pxfer_relay_ent_answer(struct pxfer_relay_ent *e, void *sfile, int fresh)
{
	struct pxfer_relay *r = e->r;
	struct pxfer_relay_item *back = NULL;

	pthread_mutex_lock(&r->lock);
	if (e->state == PXFER_RELAY_PENDING && fresh) {
		e->state = PXFER_RELAY_LIVE;
		e->sfile = sfile;
		if (e->head) {
			if (r->tail)
				r->tail->next = e->head;
			else
				r->head = e->head;
			r->tail = e->tail;
			e->head = e->tail = NULL;
			wake(e->wake_fd);
		}
		if (e->end)
			r->end_news = 1;
	} else if (e->state == PXFER_RELAY_PENDING) {
		e->state = PXFER_RELAY_OFF;
		ent_flush(e, &back);
	}
	pthread_mutex_unlock(&r->lock);
	put_back(r, back);
}

int pxfer_relay_ent_fd(struct pxfer_relay_ent *e)
{
	struct pxfer_relay *r = e->r;
	int fd = -EAGAIN;

	pthread_mutex_lock(&r->lock);
	if (e->state == PXFER_RELAY_OFF && e->fd >= 0) {
		fd = e->fd;
		e->fd = -1;
	} else if (e->state == PXFER_RELAY_OFF && e->end == END_FAILED) {
		fd = -EIO;
	}
	pthread_mutex_unlock(&r->lock);
	return fd;
}

int pxfer_relay_ent_state(struct pxfer_relay_ent *e)
{
	int state;

	pthread_mutex_lock(&e->r->lock);
	state = e->state;
	pthread_mutex_unlock(&e->r->lock);
	return state;
}

int pxfer_relay_ready(struct pxfer_relay *r)
{
	int ready;

	pthread_mutex_lock(&r->lock);
	ready = r->head != NULL;
	pthread_mutex_unlock(&r->lock);
	return ready;
}

int pxfer_relay_take(struct pxfer_relay *r, void *sess, uint32_t max,
		     struct pxfer_relay_piece *p)
{
	struct pxfer_relay_item *it;
	int ret = 0;

	pthread_mutex_lock(&r->lock);
	it = r->head;
	if (it && it->ent->sess == sess && !r->closed) {
		p->it = it;
		p->off = it->off + it->taken;
		p->buf = it->buf + it->taken;
		p->len = it->len - it->taken < max ? it->len - it->taken : max;
		p->sfile = it->ent->sfile;
		it->taken += p->len;
		it->out++;
		if (it->taken == it->len) {
			r->head = it->next;
			if (!r->head)
				r->tail = NULL;
		}
		ret = 1;
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int pxfer_relay_ended(struct pxfer_relay *r, void *sess, void **sfile,
		      int *failed)
{
	int ret = 0;

	pthread_mutex_lock(&r->lock);
	if (r->end_news) {
		int others = 0;

		for (struct pxfer_relay_ent *e = r->ents; e; e = e->next) {
			if (e->state != PXFER_RELAY_LIVE || !e->end ||
			    e->told || e->items)
				continue;
			if (e->sess != sess) {
				others = 1;
				continue;
			}
			e->told = 1;
			*sfile = e->sfile;
			*failed = e->end == END_FAILED;
			ret = 1;
			break;
		}
		/* nothing to tell anyone any more */
		if (!ret && !others)
			r->end_news = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

void pxfer_relay_done(struct pxfer_relay_item *it)
{
	struct pxfer_relay *r = it->ent->r;
	struct pxfer_relay_ent *e = it->ent;
	int back;

	pthread_mutex_lock(&r->lock);
	it->out--;
	back = it->taken == it->len && !it->out;
	if (back) {
		e->items--;
		/* the last piece of a range that ended here */
		if (!e->items && e->end && e->state == PXFER_RELAY_LIVE) {
			r->end_news = 1;
			wake(e->wake_fd);
		}
		ent_free_maybe(e);
	}
	pthread_mutex_unlock(&r->lock);
	if (back) {
		atomic_fetch_sub(&r->held, 1);
		it->put(it);
	}
}

void pxfer_relay_detach(struct pxfer_relay *r, void *sess)
{
	struct pxfer_relay_item *back = NULL;

	pthread_mutex_lock(&r->lock);
	for (struct pxfer_relay_ent *e = r->ents; e; e = e->next)
		if (e->sess == sess && e->state != PXFER_RELAY_DEAD)
			ent_kill(e, &back);
	pthread_mutex_unlock(&r->lock);
	put_back(r, back);
}
