// SPDX-License-Identifier: MIT
/*
 * A range of a file (FILE with PXFER_FILE_RANGE): written into a partial
 * that the sessions of one job share (recv/shared.h), in the store the
 * receiver's sessions share. The session that makes the entry opens the
 * partial and checks what it holds, as for any resumed file; the others
 * join it once that is done. A session's file is its range: complete
 * when the range is in, which is then flushed to the journal and counted
 * on disk; the session that lets go of the partial last names the file
 * when every byte is on disk, or closes the partial, kept, for a later
 * session.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/escape.h"
#include "core/log.h"
#include "recv/rfile.h"
#include "recv/shared.h"

static const char *peer(const struct pxfer_rfiles *r)
{
	return r->peer ? r->peer : "a sender";
}

/* a new entry's partial: opened (and taken up) in the shared store */
static int make_partial(struct pxfer_rfiles *r, struct pxfer_partials *ps,
			struct recv_shared_ent *e,
			const struct pxfer_partial_id *id,
			struct pxfer_partial **out)
{
	struct pxfer_partial *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&e->lock);
	ret = pxfer_partial_open(ps, id, PXFER_PARTIAL_RESUME, p);
	/* a record longer than any chunk was not written by a session */
	for (unsigned int i = 0; !ret && p->state == PXFER_PARTIAL_HELD &&
	     i < p->nruns; i++) {
		if (p->runs[i].unit <= PXFER_CHUNK_MAX)
			continue;
		pxfer_partial_close(p, 0);
		ret = pxfer_partial_open(ps, id, PXFER_PARTIAL_ANEW, p);
		if (!ret)
			p->state = PXFER_PARTIAL_CORRUPT;
		break;
	}
	pthread_mutex_unlock(&e->lock);
	if (ret == -EDQUOT && !r->cap_warned++)
		pxfer_partials_cap_warn(ps, r->dir);
	if (ret) {
		free(p);
		return ret;
	}
	*out = p;
	return 0;
}

int pxfer_rrange_open(struct pxfer_rfiles *r, const struct pxfer_file *m,
		      int dfd, const char *top, struct pxfer_rfile *rf,
		      struct pxfer_file_ok *ok, const char **what)
{
	struct pxfer_partial_id id = {
		.size = m->size, .mtime_sec = m->mtime_sec,
		.mtime_nsec = m->mtime_nsec,
	};
	struct pxfer_partials *ps;
	struct recv_shared_ent *e;
	struct pxfer_partial *p;
	char q[PXFER_QUOTE_MAX];
	int ret = 0;

	*what = "a range needs the receiver's partial files, which it cannot use here";
	if (!r->shared)
		return -EOPNOTSUPP;
	ps = recv_shared_store(r->shared, r->rootfd, r->use, &ret);
	if (!ps) {
		if (r->shared->store.bad)	/* not ours: never used */
			pxfer_partials_warn(&r->shared->store, r->dir,
					    r->store_warned);
		return ret;
	}
	pxfer_partials_ok(r->store_warned);
	if (pxfer_partial_same_fs(ps, dfd) != 1)
		return -EXDEV;
	*what = "cannot take up its partial file";
	if (!top)
		return -ENOMEM;
	id.path = top;
	id.path_len = strlen(top);
	ret = recv_shared_take(r->shared, top, m->job, m->size, m->mtime_sec,
			       m->mtime_nsec, m->range_off, m->range_len, &e);
	if (ret == -EBUSY)
		*what = "another job, or another session of this job, is writing this range of the file; try again later";
	if (ret < 0)
		return ret;
	rf->range_off = m->range_off;
	rf->range_len = m->range_len;
	if (ret == RECV_SHARED_JOINED) {
		/* checked by its maker: FILE_OK says what it holds of the
		 * range (pxfer_rrange_ok) */
		rf->part = e->part;
		rf->shared = e;
		pxfer_verbose("%s: range [%llu, %llu) taken by %s, into the partial file other sessions of its job write",
			      pxfer_quote(q, sizeof(q), m->path, m->path_len),
			      (unsigned long long)m->range_off,
			      (unsigned long long)(m->range_off + m->range_len),
			      peer(r));
		return 0;
	}
	ret = make_partial(r, ps, e, &id, &p);
	if (ret) {
		if (ret == -EBUSY)
			*what = "another session is writing this file; try again when it ends";
		/* never ready: closed at once */
		recv_shared_put(r->shared, e, m->range_off, m->range_len, 0);
		recv_shared_free(e);
		return ret;
	}
	rf->part = p;
	rf->shared = e;
	rf->range_maker = 1;
	pxfer_partial_ok(p, ok);
	pxfer_verbose("%s: range [%llu, %llu) taken by %s; its partial file opened, holding %llu bytes",
		      pxfer_quote(q, sizeof(q), m->path, m->path_len),
		      (unsigned long long)m->range_off,
		      (unsigned long long)(m->range_off + m->range_len), peer(r),
		      (unsigned long long)(ok->state == PXFER_HAVE_PART ? ok->held : 0));
	return 0;
}

int pxfer_rrange_ok(struct pxfer_rfiles *r, uint64_t id,
		    struct pxfer_file_ok *ok)
{
	struct pxfer_rfile *rf = &r->f[id];
	struct pxfer_partial *p = rf->part;
	int ret;

	/* its maker's check is done: what it holds is on disk, and the
	 * other sessions of the job may join */
	if (rf->range_maker && !rf->shared->ready) {
		ret = recv_shared_ready(r->shared, rf->shared, p, p->runs,
					p->nruns);
		if (ret)
			return ret;
	}
	recv_shared_clip(p->runs, p->nruns, p->recs, p->nrecs, rf->range_off,
			 rf->range_len, ok);
	return 0;
}

/* the last reference: the partial closed, kept for a later session */
static void close_shared(struct pxfer_rfiles *r, struct recv_shared_ent *e,
			 struct pxfer_partial *p)
{
	if (p) {
		pthread_mutex_lock(&e->lock);
		pxfer_partial_close(p, r->keep);
		pthread_mutex_unlock(&e->lock);
		free(p);
	}
	recv_shared_free(e);
}

unsigned int pxfer_rrange_sweep(struct recv_shared *sh, int all)
{
	struct recv_shared_ent *e, *next;
	unsigned int left;

	/* kept for a later session, as any partial left */
	for (e = recv_shared_unpark(sh, all, &left); e; e = next) {
		next = e->next;
		pthread_mutex_lock(&e->lock);
		pxfer_partial_close(e->part, 1);
		pthread_mutex_unlock(&e->lock);
		free(e->part);
		recv_shared_free(e);
	}
	return left;
}

/*
 * The last reference, every byte on disk: the file finished as any other
 * (size from its store, fsync, mode, times) and given its name, by the
 * session @rf is of. 0 or -errno (the partial is then closed, kept).
 */
static int name_shared(struct pxfer_rfiles *r, struct pxfer_rfile *rf,
		       struct recv_shared_ent *e, struct pxfer_partial *p)
{
	char q[PXFER_QUOTE_MAX];
	int ret = 0;

	pthread_mutex_lock(&e->lock);
	if (r->fsync && fsync(p->fd))
		ret = -errno;
	if (!ret && (fchmod(p->fd, rf->mode) || futimens(p->fd, rf->times)))
		ret = -errno;
	if (!ret)
		ret = pxfer_partial_commit(p, rf->dirfd, rf->base);
	if (ret)
		pxfer_partial_close(p, r->keep);
	pthread_mutex_unlock(&e->lock);
	free(p);
	recv_shared_free(e);
	if (!ret && r->fsync && fsync(rf->dirfd))
		ret = -errno;
	if (!ret)
		pxfer_verbose("%s: every range is in; named by the session of %s",
			      pxfer_quote_str(q, sizeof(q), rf->path), peer(r));
	return ret;
}

/* @rf lets go of its range (@durable: it is on disk) and its reference */
static int put_shared(struct pxfer_rfiles *r, struct pxfer_rfile *rf,
		      int durable)
{
	struct recv_shared_ent *e = rf->shared;
	struct pxfer_partial *p = rf->part;
	int ret = 0;

	rf->shared = NULL;
	rf->part = NULL;
	rf->fd = -1;
	switch (recv_shared_put(r->shared, e, rf->range_off, rf->range_len,
				durable)) {
	case RECV_SHARED_NAME:
		/* not even made here: named by a later session */
		if (!rf->base) {
			close_shared(r, e, p);
			break;
		}
		ret = name_shared(r, rf, e, p);
		rf->range_named = !ret;
		break;
	case RECV_SHARED_CLOSE:
		close_shared(r, e, p);
		break;
	default:
		break;
	}
	return ret;
}

/* --verify: the range read back from the storage, against FILE_END's
 * digest (XXH3-128 of the range seeded with its offset) */
static int verify_range(struct pxfer_rfile *rf)
{
	uint8_t wire[PXFER_DIGEST_LEN];
	struct pxfer_digest d;
	void *buf = malloc(PXFER_DIGEST_BUF);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = pxfer_digest_read(rf->part->fd, buf, rf->range_off,
				rf->range_len, &d);
	free(buf);
	if (ret)
		return ret;
	pxfer_digest_wire(wire, &d);
	if (memcmp(wire, rf->digest, PXFER_DIGEST_LEN)) {
		rf->verify_bad = 1;
		return -EIO;
	}
	return 0;
}

void pxfer_rrange_finish(struct pxfer_rfiles *r, uint64_t id)
{
	struct pxfer_rfile *rf = &r->f[id];
	int ret = r->verify ? verify_range(rf) : 0;

	/* durable before it is counted on disk */
	if (!ret)
		ret = pxfer_partial_flush(rf->part);
	/* forwarded from this partial, which its last session may close
	 * or name before the forwarding reads it */
	if (!ret && r->forward && !rf->fwd_have) {
		rf->fwd_fd = fcntl(rf->part->fd, F_DUPFD_CLOEXEC, 0);
		rf->fwd_have = rf->fwd_fd >= 0;
	}
	if (ret)
		put_shared(r, rf, 0);
	else
		ret = put_shared(r, rf, 1);
	rf->finish_err = -ret;
	rf->finished = 1;
}

void pxfer_rrange_drop(struct pxfer_rfiles *r, uint64_t id)
{
	struct pxfer_rfile *rf = &r->f[id];
	char q[PXFER_QUOTE_MAX];
	int ret = put_shared(r, rf, 0);

	if (ret && rf->path)
		pxfer_verbose("%s: every range is in, but it cannot be named: %s; its partial file is kept",
			      pxfer_quote_str(q, sizeof(q), rf->path),
			      strerror(-ret));
}
