// SPDX-License-Identifier: MIT
/*
 * The sender side of a session.
 *
 * The coordinator (the calling thread) owns the control connection: it
 * authenticates, streams the manifest from the tree walk (at most
 * max_files entries in flight), hands created files to the scheduler,
 * passes credits to the workers and ends with FIN/ACK.
 *
 * Each worker owns one data connection and one ring. With a credit in hand
 * it asks the scheduler for a chunk, reads it from disk into the granted
 * slot (io_uring READ_FIXED), checksums it and puts it on the wire; when the
 * transport reports the send complete the slot is free again.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "pxfer/pxfer.h"
#include "core/auth.h"
#include "core/credit.h"
#include "engine/ctrl.h"
#include "core/hash.h"
#include "io/io.h"
#include "core/log.h"
#include "engine/progress.h"
#include "core/ring.h"
#include "send/scheduler.h"
#include "core/limits.h"
#include "core/sys.h"
#include "engine/fail.h"
#include "transport/choose.h"
#include "transport/transport.h"
#include "send/walk.h"
#include "engine/worker.h"

#define REAP_BATCH 64
#define CTRL_BACKLOG (1u << 20)	/* stop walking while this much is unsent */
#define FEED_BATCH 256		/* manifest entries per turn of the coordinator */
#define FEED_FLUSH 32		/* ... sent this many at a time */
#define DIRECT_MIN (64u << 10)	/* smaller chunks always go through the ring */
#define READ_NOW_MAX (64u << 10)	/* segments read by the worker itself */

struct send_session;

struct sslot {
	struct pxfer_plan plan;
	uint32_t boff[PXFER_SEG_MAX];	/* where each segment sits in the slot */
	uint32_t done[PXFER_SEG_MAX];	/* bytes read so far */
	int err[PXFER_SEG_MAX];		/* positive errno */
	unsigned int pending;		/* reads in flight */
};

struct sworker {
	struct pxfer_worker b;
	struct send_session *s;
	int dead;			/* its connection broke */
	int no_read_now;		/* RWF_NOWAIT reads are not supported */
	struct sslot *slots;
	struct pxfer_chunk desc;
	uint64_t seq;
};

/* one manifest entry in flight, indexed by its file id */
struct sentry {
	uint8_t type;
	int ok;				/* FILE_OK seen */
	struct pxfer_sfile f;
};

struct send_session {
	const struct pxfer_send_opts *o;
	const struct pxfer_transport_ops *t;
	struct pxfer_pool pool;		/* ring memory faulted in early */
	struct pxfer_fail fail;
	struct pxfer_conn *cconn;
	struct pxfer_ctrl ctrl;
	int ctrl_init;
	struct pxfer_sched sched;
	int sched_init;
	struct pxfer_walk walk;
	int walk_init;
	struct pxfer_welcome wel;
	uint8_t session_key[PXFER_KEY_LEN];
	struct sworker *w;
	unsigned int nworkers;
	struct sentry **win;		/* by file id */
	uint32_t *free_ids;
	unsigned int nfree;
	unsigned int in_flight;
	int walk_done, fin_sent, acked;
	atomic_int stop;
	atomic_int data_err;		/* a data connection broke: -errno */
	atomic_int direct;		/* large chunks bypass the ring (send_chunk_fd) */
	unsigned int data_err_idx;
	double data_err_at;
	atomic_uint_fast64_t bytes_sent;
	atomic_uint_fast64_t chunks;
	uint64_t bytes_walked;
	uint64_t files_walked;
	struct pxfer_stats *st;
	struct pxfer_progress prog;
	int sigfd;
	struct pxfer_msg msg;		/* scratch for the coordinator */
	struct pxfer_transport_choice tc;	/* bind: --bind, or what --device implies */
};

/* ---- workers ---------------------------------------------------------- */

static void sw_wait(struct sworker *w)
{
	struct send_session *s = w->s;
	struct pollfd p[3] = {
		{ .fd = w->b.wake_fd, .events = POLLIN },
		{ .fd = s->t->conn_fd(w->b.conn), .events = POLLIN },
		{ .fd = w->b.io->event_fd, .events = POLLIN },
	};

	poll(p, w->b.io->event_fd >= 0 ? 3 : 2, 1000);
	pxfer_drain(w->b.wake_fd);
}

/*
 * The worker's data connection broke. When the receiver ended the session
 * it said why on the control connection, so the coordinator waits a moment
 * for that before reporting the broken connection itself.
 */
static int sw_conn_failed(struct sworker *w, int err)
{
	struct send_session *s = w->s;
	int none = 0;

	if (atomic_compare_exchange_strong(&s->data_err, &none, err)) {
		s->data_err_idx = w->b.idx;
		pxfer_wake(s->ctrl.wake_fd);
	}
	w->dead = 1;
	return -1;
}

static int sw_reap_sent(struct sworker *w)
{
	struct send_session *s = w->s;
	uint16_t done[REAP_BATCH];
	int n;

	while ((n = s->t->reap_sent(w->b.conn, done, REAP_BATCH)) != 0) {
		if (n < 0)
			return sw_conn_failed(w, n);
		for (int k = 0; k < n; k++) {
			struct sslot *ss = &w->slots[done[k]];

			for (unsigned int i = 0; i < ss->plan.nseg; i++)
				pxfer_sched_done(&s->sched, ss->plan.seg[i].f,
						 ss->plan.seg[i].len, 0);
			pthread_mutex_lock(&w->b.lock);
			pxfer_credits_put(&w->b.cred, done[k]);
			pthread_mutex_unlock(&w->b.lock);
		}
	}
	return 0;
}

/*
 * Drop the segments whose read failed: report them, tell the scheduler,
 * and close up the slot so the rest can still go. Rare, so it may copy.
 */
static void sw_drop_failed(struct sworker *w, struct sslot *ss, uint8_t *buf)
{
	struct send_session *s = w->s;
	unsigned int k = 0;
	uint32_t off = 0;

	for (unsigned int i = 0; i < ss->plan.nseg; i++) {
		struct pxfer_plan_seg *seg = &ss->plan.seg[i];

		if (ss->err[i]) {
			/* one message per file, not one per segment */
			if (pxfer_sched_done(&s->sched, seg->f, seg->len, ss->err[i]))
				error("cannot read '%s': %s", seg->f->src,
				      ss->err[i] == ENODATA ? "the file shrank while being sent"
							    : strerror(ss->err[i]));
			continue;
		}
		memmove(buf + off, buf + ss->boff[i], seg->len);
		ss->plan.seg[k++] = *seg;
		off += seg->len;
	}
	ss->plan.nseg = k;
	ss->plan.len = off;
}

static int sw_send_slot(struct sworker *w, unsigned int slot)
{
	struct send_session *s = w->s;
	struct sslot *ss = &w->slots[slot];
	uint8_t *buf = pxfer_ring_slot(&w->b.ring, slot);
	struct pxfer_chunk *d = &w->desc;
	int ret;

	for (unsigned int i = 0; i < ss->plan.nseg; i++) {
		if (ss->err[i]) {
			sw_drop_failed(w, ss, buf);
			break;
		}
	}
	if (!ss->plan.nseg) {
		pthread_mutex_lock(&w->b.lock);
		pxfer_credits_unuse(&w->b.cred, slot);
		pthread_mutex_unlock(&w->b.lock);
		return 0;
	}
	d->slot = slot;
	d->nseg = ss->plan.nseg;
	d->len = ss->plan.len;
	d->xxh3 = pxfer_hash(buf, d->len);
	d->seq = w->seq++;
	for (unsigned int i = 0; i < d->nseg; i++) {
		d->seg[i].file = ss->plan.seg[i].f->id;
		d->seg[i].offset = ss->plan.seg[i].off;
		d->seg[i].len = ss->plan.seg[i].len;
	}
	ret = s->t->send_chunk(w->b.conn, d, buf);
	if (ret)
		return sw_conn_failed(w, ret);
	atomic_fetch_add(&s->bytes_sent, d->len);
	atomic_fetch_add(&s->chunks, 1);
	return sw_reap_sent(w);
}

static int sw_prep_read(struct sworker *w, unsigned int slot, unsigned int i)
{
	struct sslot *ss = &w->slots[slot];
	struct pxfer_plan_seg *seg = &ss->plan.seg[i];
	uint8_t *buf = pxfer_ring_slot(&w->b.ring, slot) + ss->boff[i];
	uint32_t done = ss->done[i];

	ss->pending++;
	return w->b.io->ops->prep(w->b.io, PXFER_IO_READ, seg->f->fd, slot,
				buf + done, seg->len - done, seg->off + done,
				((uint64_t)slot << 8) | i);
}

static int sw_read_done(struct sworker *w, uint64_t tag, int res);

/*
 * A small segment whose bytes are in the page cache is read here and now
 * (preadv2 with RWF_NOWAIT, which never waits for the disk): through
 * io_uring it costs a submission and a completion, and its slot would be
 * registered, pinned whole, for a few KiB. Anything else (not cached, not
 * all of it, a file system without RWF_NOWAIT such as tmpfs) goes through
 * io_uring, where reads from a disk run in parallel.
 */
static int sw_read_now(struct sworker *w, unsigned int slot, unsigned int i)
{
	struct sslot *ss = &w->slots[slot];
	struct pxfer_plan_seg *seg = &ss->plan.seg[i];
	struct iovec iov = {
		.iov_base = pxfer_ring_slot(&w->b.ring, slot) + ss->boff[i],
		.iov_len = seg->len,
	};
	ssize_t n;

	if (w->no_read_now)
		return sw_prep_read(w, slot, i);
	n = preadv2(seg->f->fd, &iov, 1, seg->off, RWF_NOWAIT);
	if (n < 0 && errno == EOPNOTSUPP)
		w->no_read_now = 1;
	if (n < 0 && (errno == EAGAIN || errno == EOPNOTSUPP || errno == EINTR))
		return sw_prep_read(w, slot, i);
	ss->pending++;
	return sw_read_done(w, ((uint64_t)slot << 8) | i, n < 0 ? -errno : (int)n);
}

static int sw_read_done(struct sworker *w, uint64_t tag, int res)
{
	unsigned int slot = tag >> 8, i = tag & 0xff;
	struct sslot *ss = &w->slots[slot];

	ss->pending--;
	if (res < 0) {
		ss->err[i] = -res;
	} else if (res == 0) {
		ss->err[i] = ENODATA;
	} else {
		ss->done[i] += res;
		if (ss->done[i] < ss->plan.seg[i].len)
			return sw_prep_read(w, slot, i);	/* short read */
	}
	if (ss->pending)
		return 0;
	return sw_send_slot(w, slot);
}

/*
 * A chunk of one large segment, where the transport can take the payload
 * from the file itself (tcp: sendfile): checksum it in the page cache and
 * hand it over without reading it into the ring. 1 when it is sent (or
 * dropped because the file shrank), 0 to read it through the ring after
 * all (the file cannot be mapped), -1 when the session failed.
 */
static int sw_send_direct(struct sworker *w, unsigned int slot)
{
	struct send_session *s = w->s;
	struct sslot *ss = &w->slots[slot];
	struct pxfer_plan_seg *seg = &ss->plan.seg[0];
	struct pxfer_chunk *d = &w->desc;
	int ret;

	ret = pxfer_hash_file(seg->f->fd, seg->off, seg->len, &d->xxh3);
	if (ret == -ENODATA) {
		ss->pending = 0;
		ss->err[0] = ENODATA;
		return sw_send_slot(w, slot) ? -1 : 1;
	}
	if (ret) {
		atomic_store(&s->direct, 0);
		return 0;
	}
	d->slot = slot;
	d->nseg = 1;
	d->len = seg->len;
	d->seq = w->seq++;
	d->seg[0].file = seg->f->id;
	d->seg[0].offset = seg->off;
	d->seg[0].len = seg->len;
	ret = s->t->send_chunk_fd(w->b.conn, d, seg->f->fd,
				  pxfer_ring_slot(&w->b.ring, slot));
	if (ret == -ENODATA)
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				  "'%s' shrank while being sent, after the checksum of a chunk went out; the session cannot go on",
				  seg->f->src);
	if (ret)
		return sw_conn_failed(w, ret);
	atomic_fetch_add(&s->bytes_sent, d->len);
	atomic_fetch_add(&s->chunks, 1);
	return sw_reap_sent(w) ? -1 : 1;
}

/* take a credit, plan a chunk into its slot and start the reads */
static int sw_fill_one(struct sworker *w)
{
	struct send_session *s = w->s;
	struct sslot *ss;
	uint32_t off = 0;
	int slot, ret;

	pthread_mutex_lock(&w->b.lock);
	slot = pxfer_credits_take(&w->b.cred);
	pthread_mutex_unlock(&w->b.lock);
	if (slot < 0)
		return 0;
	ss = &w->slots[slot];
	if (!pxfer_sched_next(&s->sched, &ss->plan)) {
		pthread_mutex_lock(&w->b.lock);
		pxfer_credits_unuse(&w->b.cred, slot);
		pthread_mutex_unlock(&w->b.lock);
		return 0;
	}
	if (ss->plan.nseg == 1 && ss->plan.len >= DIRECT_MIN &&
	    atomic_load(&s->direct)) {
		ret = sw_send_direct(w, slot);
		if (ret)
			return ret;
	}
	ss->pending = 1;	/* not sent before every read is under way */
	for (unsigned int i = 0; i < ss->plan.nseg; i++) {
		ss->boff[i] = off;
		ss->done[i] = 0;
		ss->err[i] = 0;
		off += ss->plan.seg[i].len;
	}
	for (unsigned int i = 0; i < ss->plan.nseg; i++) {
		ret = ss->plan.seg[i].len <= READ_NOW_MAX ? sw_read_now(w, slot, i)
							  : sw_prep_read(w, slot, i);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
					  "cannot queue a read: %s", strerror(-ret));
	}
	if (!--ss->pending && sw_send_slot(w, slot))
		return -1;
	return 1;
}

static void files_ended(struct send_session *s);

static void *sw_main(void *arg)
{
	struct sworker *w = arg;
	struct send_session *s = w->s;
	struct pxfer_io_cqe cqe[REAP_BATCH];
	int n, busy, ret;

	while (!atomic_load(&s->stop) && !pxfer_failed(&s->fail) && !w->dead) {
		busy = 0;
		n = w->b.io->ops->reap(w->b.io, cqe, REAP_BATCH, 0);
		for (int i = 0; i < n; i++)
			if (sw_read_done(w, cqe[i].tag, cqe[i].res))
				break;
		busy |= n > 0;
		if (sw_reap_sent(w))
			break;
		while (!pxfer_failed(&s->fail) && sw_fill_one(w) > 0)
			busy = 1;
		/* the files this turn finished, or gave up on */
		files_ended(s);
		ret = w->b.io->ops->submit(w->b.io);
		if (ret) {
			pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				   "cannot submit reads: %s", strerror(-ret));
			break;
		}
		if (!busy)
			sw_wait(w);
	}
	files_ended(s);
	/* the ring stays mapped until every read into it has finished */
	while (w->b.io->inflight) {
		if (w->b.io->ops->submit(w->b.io) ||
		    w->b.io->ops->reap(w->b.io, cqe, REAP_BATCH, 1) < 0)
			break;
	}
	return NULL;
}

/* ---- manifest --------------------------------------------------------- */

/*
 * The scheduler is done with these files: close them and say how many
 * bytes each sent. A file is not touched after its FILE_END is queued:
 * the coordinator frees it when FILE_DONE comes back.
 */
static void files_ended(struct send_session *s)
{
	struct pxfer_sfile *f = pxfer_sched_take_ended(&s->sched), *next;
	struct pxfer_msg m = { .type = PXFER_MSG_FILE_END };

	for (; f; f = next) {
		next = f->next;
		if (f->fd >= 0) {
			close(f->fd);
			f->fd = -1;
		}
		m.u.end.id = f->id;
		m.u.end.bytes = f->sent;
		m.u.end.code = f->err;
		if (pxfer_ctrl_queue(&s->ctrl, &m))
			pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
	}
}

static void entry_free(struct send_session *s, uint64_t id)
{
	struct sentry *e = s->win[id];

	if (!e)
		return;
	if (e->f.fd >= 0)
		close(e->f.fd);
	free(e->f.src);
	free(e);
	s->win[id] = NULL;
	s->free_ids[s->nfree++] = id;
	s->in_flight--;
}

static int fill_file_msg(struct pxfer_file *fm, const struct pxfer_walk_entry *e,
			 const struct stat *st, uint8_t type)
{
	size_t len = strlen(e->rel);

	if (len > PXFER_PATH_MAX)
		return -ENAMETOOLONG;
	fm->type = type;
	fm->mode = st->st_mode & 07777;
	fm->size = type == PXFER_FT_REG ? (uint64_t)st->st_size : 0;
	fm->mtime_sec = st->st_mtim.tv_sec;
	fm->mtime_nsec = st->st_mtim.tv_nsec;
	fm->path_len = len;
	memcpy(fm->path, e->rel, len + 1);
	fm->target_len = 0;
	fm->target[0] = 0;
	if (type == PXFER_FT_SYMLINK) {
		fm->target_len = strlen(e->target);
		memcpy(fm->target, e->target, fm->target_len + 1);
	}
	return 0;
}

/*
 * Open a regular file for sending; the size comes from the open file. A
 * PATH given on the command line may be a link (it is followed, like
 * cp -H); below it the walk saw a regular file, so whatever is opened must
 * be that same file, or it changed under us.
 */
static int open_source(const struct pxfer_walk_entry *e, int *fdp,
		       struct stat *st)
{
	int fd = e->fd;

	if (fd >= 0)
		goto opened;	/* the walk opened it, and st is its fstat */
	fd = open(e->src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	if (st->st_dev != e->st.st_dev || st->st_ino != e->st.st_ino) {
		close(fd);
		return -ESTALE;
	}
opened:
	/* larger read-ahead; a small file is read in one go anyway */
	if (st->st_size > (off_t)PXFER_AUTO_CHUNK_MIN)
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	*fdp = fd;
	return 0;
}

static int feed_entry(struct send_session *s, const struct pxfer_walk_entry *e)
{
	struct pxfer_msg *m = &s->msg;
	struct stat st = e->st;
	struct sentry *se;
	uint8_t type;
	int fd = -1, ret;

	switch (e->kind) {
	case PXFER_WALK_ERROR:
		error("cannot read '%s': %s", e->src, strerror(-e->err));
		s->st->files_failed++;
		return 0;
	case PXFER_WALK_SKIP:
		warning("skipping '%s': not a regular file, directory or symlink",
			e->src);
		s->st->files_skipped++;
		return 0;
	case PXFER_WALK_FILE:
		ret = open_source(e, &fd, &st);
		if (ret) {
			error("cannot read '%s': %s", e->src,
			      ret == -ESTALE ? "it changed while being read"
					     : strerror(-ret));
			s->st->files_failed++;
			return 0;
		}
		if (!S_ISREG(st.st_mode)) {
			close(fd);
			warning("skipping '%s': it changed while being read", e->src);
			s->st->files_skipped++;
			return 0;
		}
		type = PXFER_FT_REG;
		break;
	case PXFER_WALK_DIR:
		type = PXFER_FT_DIR;
		break;
	case PXFER_WALK_SYMLINK:
		type = PXFER_FT_SYMLINK;
		break;
	default:
		return 0;
	}
	se = calloc(1, sizeof(*se));
	if (!se || !(se->f.src = strdup(e->src))) {
		free(se);
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_FILE;
	ret = fill_file_msg(&m->u.file, e, &st, type);
	if (ret) {
		error("cannot send '%s': %s", e->src, strerror(-ret));
		s->st->files_failed++;
		if (fd >= 0)
			close(fd);
		free(se->f.src);
		free(se);
		return 0;
	}
	se->type = type;
	se->f.fd = fd;
	se->f.size = m->u.file.size;
	/*
	 * A file whose blocks cover its size has no holes: the scheduler
	 * needs no SEEK_DATA / SEEK_HOLE for it (two system calls a file,
	 * made under its lock). Blocks allocated beyond the end could hide
	 * a hole; it is then sent as zeros, which costs space, not data.
	 */
	if (type == PXFER_FT_REG && (uint64_t)st.st_blocks * 512 >= se->f.size)
		se->f.data_end = se->f.size;
	se->f.id = s->free_ids[--s->nfree];
	m->u.file.id = se->f.id;
	s->win[se->f.id] = se;
	s->in_flight++;
	if (type == PXFER_FT_REG) {
		s->bytes_walked += se->f.size;
		s->files_walked++;
	}
	return pxfer_ctrl_queue(&s->ctrl, m);
}

static int can_feed(struct send_session *s)
{
	return !s->walk_done && s->nfree &&
	       pxfer_ctrl_pending(&s->ctrl) < CTRL_BACKLOG;
}

/*
 * Walk on and queue manifest entries, a batch per turn of the coordinator,
 * sent as they are made: the receiver creates files while the walk goes
 * on, and FILE_OK replies (which let data flow) are read between batches.
 */
static int feed_manifest(struct send_session *s)
{
	struct pxfer_walk_entry e;
	unsigned int n = 0;
	int ret;

	while (can_feed(s) && n < FEED_BATCH) {
		ret = pxfer_walk_next(&s->walk, &e);
		if (ret < 0)
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
					  "cannot walk the source tree: %s",
					  strerror(-ret));
		if (ret == 0) {
			s->walk_done = 1;
			break;
		}
		ret = feed_entry(s, &e);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
					  "cannot queue '%s': %s", e.src,
					  strerror(-ret));
		if (++n % FEED_FLUSH == 0)
			pxfer_ctrl_flush(&s->ctrl);	/* errors show in the wait */
	}
	return 0;
}

/* ---- control messages ------------------------------------------------- */

static struct sentry *entry_get(struct send_session *s, uint64_t id)
{
	return id < s->wel.max_files ? s->win[id] : NULL;
}

static int on_file_ok(struct send_session *s, const struct pxfer_file_status *fs,
		      int *work)
{
	struct sentry *e = entry_get(s, fs->id);

	if (!e || e->type != PXFER_FT_REG || e->ok)
		return -EPROTO;
	e->ok = 1;
	pxfer_sched_add(&s->sched, &e->f);
	*work = 1;
	return 0;
}

static int on_file_status(struct send_session *s, uint16_t type,
			  const struct pxfer_file_status *fs)
{
	struct sentry *e = entry_get(s, fs->id);

	if (!e)
		return -EPROTO;
	if (type == PXFER_MSG_FILE_DONE && e->type == PXFER_FT_REG &&
	    (!e->ok || !pxfer_sched_ended(&s->sched, &e->f)))
		return -EPROTO;
	if (type == PXFER_MSG_FILE_ERR && e->ok)
		return -EPROTO;
	if (fs->code) {
		/* a read error was reported when it happened */
		if (!(e->type == PXFER_FT_REG && e->f.err))
			error("'%s' failed on the receiver: %s", e->f.src,
			      fs->text_len ? fs->text : strerror(fs->code));
		s->st->files_failed++;
	} else if (e->type == PXFER_FT_REG) {
		s->st->files++;
		s->st->bytes += e->f.sent;
	} else if (e->type == PXFER_FT_DIR) {
		s->st->dirs++;
	} else {
		s->st->links++;
	}
	entry_free(s, fs->id);
	return 0;
}

static int on_credit(struct send_session *s, const struct pxfer_credit *c)
{
	struct sworker *w;
	int ret = 0;

	if (c->worker >= s->nworkers)
		return -EPROTO;
	w = &s->w[c->worker];
	pthread_mutex_lock(&w->b.lock);
	for (unsigned int i = 0; i < c->count && !ret; i++)
		ret = pxfer_credits_grant(&w->b.cred, c->slots[i]);
	pthread_mutex_unlock(&w->b.lock);
	pxfer_wake(w->b.wake_fd);
	return ret;
}

static int dispatch(struct send_session *s, const struct pxfer_msg *m,
		    int *work)
{
	switch (m->type) {
	case PXFER_MSG_FILE_OK:
		return on_file_ok(s, &m->u.status, work);
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		return on_file_status(s, m->type, &m->u.status);
	case PXFER_MSG_CREDIT:
		return on_credit(s, &m->u.credit);
	case PXFER_MSG_PING:
		return 0;
	case PXFER_MSG_ACK:
		if (!s->fin_sent)
			return -EPROTO;
		s->acked = 1;
		verbose("ACK from the receiver");
		return 0;
	case PXFER_MSG_ABORT:
		pxfer_fail(&s->fail, m->u.error.code == EACCES ? PXFER_EXIT_AUTH
							       : PXFER_EXIT_FAIL,
			   "the receiver ended the session: %s",
			   m->u.error.text_len ? m->u.error.text
					       : strerror(m->u.error.code));
		return 0;
	default:
		return -EPROTO;
	}
}

static void wake_workers(struct send_session *s)
{
	for (unsigned int i = 0; i < s->nworkers; i++)
		pxfer_wake(s->w[i].b.wake_fd);
}

static int read_control(struct send_session *s)
{
	int ret, work = 0;

	ret = pxfer_ctrl_fill(&s->ctrl);
	while (!pxfer_failed(&s->fail)) {
		int r = pxfer_ctrl_next(&s->ctrl, &s->msg);

		if (r == 0)
			break;
		if (r > 0)
			r = dispatch(s, &s->msg, &work);
		if (r < 0) {
			pxfer_fail(&s->fail, PXFER_EXIT_NET,
				   "protocol error from the receiver %s: %s",
				   s->cconn->peer, strerror(-r));
			break;
		}
	}
	if (work)
		wake_workers(s);
	if (ret == -EPIPE && !s->acked)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "the receiver %s closed the connection before the transfer completed",
				  s->cconn->peer);
	if (ret < 0 && ret != -EPIPE)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "lost the connection to the receiver %s: %s",
				  s->cconn->peer, strerror(-ret));
	return 0;
}

static void draw_progress(struct send_session *s, int final)
{
	uint64_t done = s->st->files + s->st->files_failed;

	pxfer_progress_draw(&s->prog, atomic_load(&s->bytes_sent),
			    s->bytes_walked, done, s->files_walked,
			    !s->walk_done, final);
}

/* a data connection broke and no ABORT explained it within a second */
static int data_conn_failed(struct send_session *s)
{
	int err = atomic_load(&s->data_err);

	if (!err || pxfer_failed(&s->fail))
		return 0;
	if (!s->data_err_at)
		s->data_err_at = pxfer_now();
	if (pxfer_now() - s->data_err_at < 1.0)
		return 0;
	return pxfer_fail(&s->fail, PXFER_EXIT_NET,
			  "lost the connection to the receiver %s (data connection %u): %s",
			  s->cconn->peer, s->data_err_idx, strerror(-err));
}

static int coordinate(struct send_session *s)
{
	struct pxfer_msg fin = { .type = PXFER_MSG_FIN };
	int ret;

	while (!pxfer_failed(&s->fail) && !s->acked) {
		if (feed_manifest(s))
			break;
		if (s->walk_done && !s->in_flight && !s->fin_sent) {
			fin.u.fin.files = s->st->files;
			fin.u.fin.bytes = s->st->bytes;
			if (pxfer_ctrl_queue(&s->ctrl, &fin))
				return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
			s->fin_sent = 1;
			verbose("all data sent; waiting for the receiver's ACK");
		}
		ret = pxfer_ctrl_wait(&s->ctrl, s->sigfd,
				      can_feed(s) ? 0 :
				      s->prog.enabled || atomic_load(&s->data_err) ? 200 : 1000);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_NET,
					  "lost the connection to the receiver %s: %s",
					  s->cconn->peer, strerror(-ret));
		if (pxfer_signal_pending())
			return pxfer_fail(&s->fail, PXFER_EXIT_INTR,
					  "interrupted; files not yet complete were not kept by the receiver");
		if (read_control(s))
			break;
		if (data_conn_failed(s))
			break;
		ret = pxfer_ctrl_keepalive(&s->ctrl);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_NET,
					  ret == -ETIMEDOUT ? "no word from the receiver %s for %d s: it is gone or unreachable"
							    : "cannot queue a message to %s (%d)",
					  s->cconn->peer, PXFER_IDLE_SECS);
		draw_progress(s, 0);
	}
	return pxfer_failed(&s->fail) ? -1 : 0;
}

/* ---- set-up and teardown ---------------------------------------------- */

static int expect_challenge(struct send_session *s, struct pxfer_conn *c,
			    struct pxfer_challenge *ch)
{
	struct pxfer_msg *m = &s->msg;
	int ret = pxfer_conn_recv_msg(c, m, s->o->timeout_ms);

	if (ret == -EPROTO)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "'%s' is not a pxfer receiver, or speaks another protocol version",
				  c->peer);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "no greeting from the receiver %s: %s", c->peer,
				  strerror(-ret));
	if (m->type != PXFER_MSG_CHALLENGE)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "unexpected %s from the receiver %s",
				  pxfer_msg_name(m->type), c->peer);
	if (m->u.challenge.transport != s->t->wire_id)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "the receiver %s uses another transport", c->peer);
	*ch = m->u.challenge;
	return 0;
}

static int refused(struct send_session *s, const struct pxfer_msg *m,
		   const char *peer)
{
	const struct pxfer_error *e = &m->u.error;

	if (e->code == EACCES)
		return pxfer_fail(&s->fail, PXFER_EXIT_AUTH,
				  "the receiver %s refused the sender: %s (check that both sides use the same secret)",
				  peer, e->text);
	return pxfer_fail(&s->fail, PXFER_EXIT_FAIL,
			  "the receiver %s refused the session: %s", peer,
			  e->text_len ? e->text : strerror(e->code));
}

/* @slots: 0 for the control connection, else the receiver's ring slots */
static int connect_conn(struct send_session *s, struct pxfer_conn **c,
			unsigned int slots)
{
	const struct pxfer_send_opts *o = s->o;
	int ret = s->t->connect(o->host, o->port, s->tc.bind, o->timeout_ms,
				slots, c);

	if (ret == -ENOMEM)
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				  "cannot set up the connection to '%s': out of memory or over the memlock limit (see above)",
				  o->host);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "cannot connect to '%s' port %s: %s%s", o->host,
				  o->port, strerror(-ret),
				  ret == -ECONNREFUSED ? " (is 'pxfer recv' running there?)" : "");
	return 0;
}

static int handshake(struct send_session *s)
{
	const struct pxfer_send_opts *o = s->o;
	struct pxfer_challenge ch;
	struct pxfer_msg *m = &s->msg;
	struct pxfer_hello h = { 0 };
	uint8_t mac[PXFER_MAC_LEN];
	int ret;

	if (connect_conn(s, &s->cconn, 0) || expect_challenge(s, s->cconn, &ch))
		return -1;
	h.magic = PXFER_MAGIC;
	h.version = PXFER_PROTO_VERSION;
	h.workers = o->workers;
	h.chunk_size = o->chunk_size;
	h.flags = (o->fsync ? PXFER_HELLO_FSYNC : 0) |
		  (o->chunk_auto ? PXFER_HELLO_CHUNK_AUTO : 0);
	pxfer_auth_nonce(h.nonce);
	if (o->dest) {
		h.dest_len = strlen(o->dest);
		memcpy(h.dest, o->dest, h.dest_len + 1);
	}
	pxfer_auth_hello_mac(&o->secret, ch.nonce, &h, h.mac);
	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_HELLO;
	m->u.hello = h;
	ret = pxfer_conn_send_msg(s->cconn, m, o->timeout_ms);
	if (!ret)
		ret = pxfer_conn_recv_msg(s->cconn, m, o->timeout_ms);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "handshake with the receiver %s failed: %s",
				  s->cconn->peer, strerror(-ret));
	if (m->type == PXFER_MSG_REFUSE)
		return refused(s, m, s->cconn->peer);
	if (m->type != PXFER_MSG_WELCOME)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "unexpected %s from the receiver %s",
				  pxfer_msg_name(m->type), s->cconn->peer);
	s->wel = m->u.welcome;
	pxfer_auth_welcome_mac(&o->secret, ch.nonce, h.nonce, s->wel.session, mac);
	if (!pxfer_auth_equal(mac, s->wel.mac))
		return pxfer_fail(&s->fail, PXFER_EXIT_AUTH,
				  "the receiver %s could not prove the shared secret; not sending",
				  s->cconn->peer);
	if (s->wel.workers > o->workers || s->wel.chunk_size > o->chunk_size)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "the receiver %s sent impossible session parameters",
				  s->cconn->peer);
	pxfer_auth_session_key(&o->secret, ch.nonce, h.nonce, s->session_key);
	verbose("connected to %s over %s: %u workers, %u KiB chunks, %u slots each",
		s->cconn->peer, s->t->name, s->wel.workers,
		s->wel.chunk_size >> 10, s->wel.slots);
	return 0;
}

/*
 * A data connection failed during set-up: when the receiver gave up, it
 * said why on the control connection; that reason beats "broken pipe".
 */
static int receiver_aborted(struct send_session *s)
{
	struct pollfd p = { .fd = s->t->conn_fd(s->cconn),
			    .events = s->t->poll_events(s->cconn, 0) };
	double end = pxfer_now() + 1.0;

	while (pxfer_now() < end && !pxfer_failed(&s->fail)) {
		int r, ret = pxfer_ctrl_fill(&s->ctrl);

		while ((r = pxfer_ctrl_next(&s->ctrl, &s->msg)) > 0) {
			if (s->msg.type == PXFER_MSG_ABORT ||
			    s->msg.type == PXFER_MSG_REFUSE)
				return refused(s, &s->msg, s->cconn->peer);
		}
		if (r < 0 || ret < 0)
			break;
		poll(&p, 1, 100);
	}
	return 0;
}

static int worker_connect(struct send_session *s, struct sworker *w)
{
	struct pxfer_msg *m = &s->msg;
	struct pxfer_challenge ch;
	int ret;

	if (connect_conn(s, &w->b.conn, s->wel.slots) ||
	    expect_challenge(s, w->b.conn, &ch))
		return -1;
	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_DATA_HELLO;
	m->u.data_hello.session = s->wel.session;
	m->u.data_hello.worker = w->b.idx;
	pxfer_auth_data_mac(s->session_key, ch.nonce, s->wel.session, w->b.idx,
			    m->u.data_hello.mac);
	ret = pxfer_conn_send_msg(w->b.conn, m, s->o->timeout_ms);
	if (!ret)
		ret = pxfer_conn_recv_msg(w->b.conn, m, s->o->timeout_ms);
	if (ret && receiver_aborted(s))
		return -1;
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "data connection %u to %s failed: %s", w->b.idx,
				  w->b.conn->peer, strerror(-ret));
	if (m->type == PXFER_MSG_REFUSE)
		return refused(s, m, w->b.conn->peer);
	if (m->type != PXFER_MSG_DATA_WELCOME || m->u.data_welcome.worker != w->b.idx)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "unexpected %s on data connection %u",
				  pxfer_msg_name(m->type), w->b.idx);
	ret = s->t->ring_remote(w->b.conn, m->u.data_welcome.blob,
				m->u.data_welcome.blob_len);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "bad ring description on data connection %u: %s",
				  w->b.idx, strerror(-ret));
	return 0;
}

/* start making the worker's ring while the data connections are made */
static int worker_prepare(struct send_session *s, struct sworker *w)
{
	w->s = s;
	w->slots = calloc(s->wel.slots, sizeof(*w->slots));
	if (!w->slots)
		return -ENOMEM;
	return pxfer_worker_prepare(&w->b, s->t, s->o->io, s->wel.slots,
				    s->wel.chunk_size, 0, &s->pool);
}

static void worker_release(struct send_session *s, struct sworker *w)
{
	pxfer_worker_release(&w->b, s->t);
	free(w->slots);
}

static int workers_start(struct send_session *s)
{
	int ret;

	s->nworkers = s->wel.workers;
	{
		char msg[400];

		if (pxfer_transport_memlock(s->t, s->nworkers, s->wel.slots,
					    s->wel.chunk_size, msg, sizeof(msg)))
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "%s", msg);
	}
	s->w = calloc(s->nworkers, sizeof(*s->w));
	if (!s->w)
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
	for (unsigned int i = 0; i < s->nworkers; i++) {
		s->w[i].b.idx = i;
		s->w[i].b.wake_fd = -1;
	}
	for (unsigned int i = 0; i < s->nworkers; i++) {
		ret = worker_prepare(s, &s->w[i]);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
					  "cannot set up worker %u: %s", i,
					  pxfer_worker_setup_error(ret));
	}
	for (unsigned int i = 0; i < s->nworkers; i++) {
		struct sworker *w = &s->w[i];

		if (worker_connect(s, w))
			return -1;
		ret = pxfer_worker_attach(&w->b, s->t, NULL, NULL);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
					  "cannot set up worker %u: %s", i,
					  pxfer_worker_setup_error(ret));
	}
	for (unsigned int i = 0; i < s->nworkers; i++) {
		ret = pthread_create(&s->w[i].b.thread, NULL, sw_main, &s->w[i]);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
					  "cannot start a worker thread: %s",
					  strerror(ret));
		s->w[i].b.started = 1;
		pxfer_thread_name(s->w[i].b.thread, "send", i);
	}
	verbose("%u data connection%s ready", s->nworkers,
		s->nworkers == 1 ? "" : "s");
	return 0;
}

static void workers_stop(struct send_session *s)
{
	if (!s->w)
		return;
	atomic_store(&s->stop, 1);
	for (unsigned int i = 0; i < s->nworkers; i++)
		pxfer_worker_kick(&s->w[i].b, s->t, pxfer_failed(&s->fail));
	for (unsigned int i = 0; i < s->nworkers; i++)
		pxfer_worker_join(&s->w[i].b);
	for (unsigned int i = 0; i < s->nworkers; i++)
		worker_release(s, &s->w[i]);
	free(s->w);
	s->w = NULL;
}

static void send_abort(struct send_session *s)
{
	struct pxfer_msg m = { .type = PXFER_MSG_ABORT };
	const char *why = pxfer_signal_pending() ? "the sender was interrupted"
						 : "the sender failed";

	if (!s->cconn || !s->ctrl_init)
		return;
	m.u.error.code = ECANCELED;
	m.u.error.text_len = strlen(why);
	memcpy(m.u.error.text, why, m.u.error.text_len + 1);
	if (!pxfer_ctrl_queue(&s->ctrl, &m))
		pxfer_ctrl_flush(&s->ctrl);
}

static int window_init(struct send_session *s)
{
	unsigned int n = s->wel.max_files;
	unsigned long nofile = pxfer_raise_nofile();

	/* each file in flight holds a descriptor; keep room for the rest */
	if (nofile > 64 && n > nofile - 64)
		n = nofile - 64;
	s->win = calloc(s->wel.max_files, sizeof(*s->win));
	s->free_ids = calloc(n, sizeof(*s->free_ids));
	if (!s->win || !s->free_ids)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++)
		s->free_ids[s->nfree++] = n - 1 - i;
	return 0;
}

static void session_release(struct send_session *s)
{
	workers_stop(s);
	if (s->win)
		for (unsigned int i = 0; i < s->wel.max_files; i++)
			if (s->win[i])
				entry_free(s, i);
	free(s->win);
	free(s->free_ids);
	if (s->ctrl_init)
		pxfer_ctrl_release(&s->ctrl);
	if (s->cconn)
		s->t->close(s->cconn);
	if (s->sched_init)
		pxfer_sched_release(&s->sched);
	if (s->walk_init)
		pxfer_walk_release(&s->walk);
	pxfer_pool_release(&s->pool);
	pxfer_fail_release(&s->fail);
}

static int pick_transport(struct send_session *s)
{
	int code;

	s->tc.name = s->o->transport;
	s->tc.device = s->o->device;
	s->tc.gid_index = s->o->gid_index;
	s->tc.bind = s->o->bind;
	code = pxfer_transport_resolve(&s->tc);
	if (code)
		return pxfer_fail_quiet(&s->fail, code);
	s->t = pxfer_transport_for_host(&s->tc, s->o->host);
	return 0;
}

int pxfer_send(const struct pxfer_send_opts *o, struct pxfer_stats *st)
{
	struct send_session *s;
	const char *bad = NULL;
	double t0 = pxfer_now();
	int ret, code;

	memset(st, 0, sizeof(*st));
	s = calloc(1, sizeof(*s));
	if (!s) {
		error("out of memory");
		return PXFER_EXIT_LOCAL;
	}
	s->o = o;
	s->st = st;
	if (pxfer_fail_init(&s->fail, -1) || pxfer_auth_init()) {
		error("cannot initialise the crypto library");
		free(s);
		return PXFER_EXIT_LOCAL;
	}
	s->sigfd = pxfer_signals_install();
	/* while this is the only thread (best effort: it only saves time) */
	pxfer_fd_table_reserve(PXFER_FD_RESERVE);
	pxfer_progress_init(&s->prog, o->progress);
	if (pick_transport(s))
		goto out;
	st->transport = s->t->name;
	/*
	 * A transport that pins the rings touches every page of them before
	 * the first byte moves: fault in what a receiver with the default
	 * --ring-mem asks for while the connections are made (rings that
	 * do not fit are mapped as before).
	 */
	if (s->t->pins_memory &&
	    pxfer_pool_init(&s->pool, pxfer_pool_size(PXFER_DEFAULT_RING_MEM,
						      s->t->ring_hdr)))
		verbose("ring memory made when the session starts");
	/* PXFER_NO_SENDFILE=1: every chunk through the ring (for comparison) */
	atomic_store(&s->direct, s->t->send_chunk_fd &&
		     !pxfer_env_flag("PXFER_NO_SENDFILE"));
	ret = pxfer_walk_init(&s->walk, o->paths, o->npaths, &bad);
	if (ret) {
		pxfer_fail(&s->fail, PXFER_EXIT_USAGE,
			   ret == -EEXIST ? "two sources are named '%s'; they would overwrite each other"
					  : "cannot read '%s': %s",
			   bad ? bad : "?", strerror(-ret));
		goto out;
	}
	s->walk.open_files = 1;
	s->walk_init = 1;
	if (handshake(s))
		goto out;
	ret = pxfer_ctrl_init(&s->ctrl, s->cconn);
	if (ret) {
		pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
		goto out;
	}
	s->ctrl_init = 1;
	s->fail.wake_fd = s->ctrl.wake_fd;
	ret = pxfer_sched_init(&s->sched, s->wel.chunk_size, PXFER_SEG_MAX);
	if (ret || window_init(s)) {
		pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
		goto out;
	}
	s->sched_init = 1;
	if (workers_start(s))
		goto out;
	coordinate(s);
out:
	if (pxfer_failed(&s->fail))
		send_abort(s);
	draw_progress(s, 1);
	pxfer_progress_end(&s->prog);
	st->chunks = atomic_load(&s->chunks);
	st->seconds = pxfer_now() - t0;
	if (pxfer_failed(&s->fail))
		code = pxfer_fail_code(&s->fail);
	else
		code = st->files_failed ? PXFER_EXIT_FAIL : PXFER_EXIT_OK;
	session_release(s);
	free(s);
	return code;
}
