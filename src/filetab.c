// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "filetab.h"
#include "session.h"

int pxfer_filetab_init(struct pxfer_filetab *t, unsigned int n, int wake_fd)
{
	memset(t, 0, sizeof(*t));
	t->f = calloc(n, sizeof(*t->f));
	t->doneq = calloc(n, sizeof(*t->doneq));
	if (!t->f || !t->doneq) {
		free(t->f);
		free(t->doneq);
		return -ENOMEM;
	}
	t->n = n;
	t->wake_fd = wake_fd;
	return -pthread_mutex_init(&t->lock, NULL);
}

void pxfer_filetab_release(struct pxfer_filetab *t)
{
	if (!t->f)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->f);
	free(t->doneq);
	t->f = NULL;
}

/* call with the lock held: 1 if @id just became complete */
static int check_done(struct pxfer_filetab *t, uint64_t id)
{
	struct pxfer_rfile *f = &t->f[id];

	if (f->end_known == 1 && f->written == f->total &&
	    f->submitted == f->written) {
		/* no further bytes can arrive: it completes only once */
		f->end_known = 2;
		return 1;
	}
	return 0;
}

/* this thread's batch (pxfer_filetab_batch_begin), if any */
static __thread struct pxfer_filetab *batch_tab;
static __thread int batch_wake;

void pxfer_filetab_batch_begin(struct pxfer_filetab *t)
{
	batch_tab = t;
	batch_wake = 0;
}

int pxfer_filetab_batch_end(struct pxfer_filetab *t)
{
	int wake = batch_tab == t && batch_wake;

	batch_tab = NULL;
	batch_wake = 0;
	return wake;
}

void pxfer_filetab_push_done(struct pxfer_filetab *t, uint64_t id)
{
	pthread_mutex_lock(&t->lock);
	t->doneq[(t->dhead + t->dcount) % t->n] = id;
	/* the coordinator empties the queue each time it wakes */
	if (t->dcount++ == 0) {
		if (batch_tab == t)
			batch_wake = 1;
		else
			pxfer_wake(t->wake_fd);
	}
	pthread_mutex_unlock(&t->lock);
}

/* call without the lock, for a file check_done found complete */
static void complete(struct pxfer_filetab *t, uint64_t id)
{
	if (t->finish && t->finish(t->finish_arg, &t->f[id]))
		return;		/* handed on: pushed when finished */
	pxfer_filetab_push_done(t, id);
}

static int seg_ok(struct pxfer_filetab *t, const struct pxfer_seg *s,
		  uint64_t extra)
{
	struct pxfer_rfile *f;

	if (s->file >= t->n)
		return 0;
	f = &t->f[s->file];
	if (!f->used || f->end_known == 2)
		return 0;
	if (s->offset > f->size || s->len > f->size - s->offset)
		return 0;
	/* extra: bytes of earlier segments of this chunk for the same file */
	if (f->submitted + extra + s->len > f->size)
		return 0;
	if (f->end_known && f->submitted + extra + s->len > f->total)
		return 0;
	return 1;
}

int pxfer_filetab_reserve(struct pxfer_filetab *t, const struct pxfer_chunk *ch,
			  int *fds)
{
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned int i = 0; i < ch->nseg && !ret; i++) {
		uint64_t extra = 0;

		for (unsigned int j = 0; j < i; j++)
			if (ch->seg[j].file == ch->seg[i].file)
				extra += ch->seg[j].len;
		if (!seg_ok(t, &ch->seg[i], extra))
			ret = -EPROTO;
	}
	for (unsigned int i = 0; i < ch->nseg && !ret; i++) {
		struct pxfer_rfile *f = &t->f[ch->seg[i].file];

		f->submitted += ch->seg[i].len;
		fds[i] = f->fd;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void pxfer_filetab_written(struct pxfer_filetab *t, uint64_t id, uint32_t len,
			   int err)
{
	struct pxfer_rfile *f = &t->f[id];

	int done;

	pthread_mutex_lock(&t->lock);
	f->written += len;
	if (err && !f->err)
		f->err = err;
	done = check_done(t, id);
	pthread_mutex_unlock(&t->lock);
	if (done)
		complete(t, id);
}

int pxfer_filetab_end(struct pxfer_filetab *t, uint64_t id, uint64_t total,
		      int code)
{
	struct pxfer_rfile *f;
	int ret = 0, done = 0;

	if (id >= t->n)
		return -EPROTO;
	f = &t->f[id];
	pthread_mutex_lock(&t->lock);
	if (!f->used || f->end_known || total > f->size ||
	    total < f->submitted) {
		ret = -EPROTO;
	} else {
		f->end_known = 1;
		f->total = total;
		f->end_code = code;
		done = check_done(t, id);
	}
	pthread_mutex_unlock(&t->lock);
	if (done)
		complete(t, id);
	return ret;
}

int pxfer_filetab_pop_done(struct pxfer_filetab *t, uint64_t *id)
{
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	if (t->dcount) {
		*id = t->doneq[t->dhead];
		t->dhead = (t->dhead + 1) % t->n;
		t->dcount--;
		ret = 1;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}
