// SPDX-License-Identifier: MIT
/*
 * A receiver's worker: it owns one data connection and one ring. It takes
 * each chunk's descriptor off the connection, checks it (a granted slot,
 * segments inside their files and not sent before) before any payload
 * byte lands, verifies the checksum and writes each segment at its
 * offset (io_uring WRITE_FIXED, or at once when small). A slot is
 * returned for granting once its writes complete. The worker whose write
 * completes a file finishes it (recv/rfile.c), and it finishes the files
 * the coordinator hands it.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/sys.h"
#include "recv/recv.h"

#define REAP_BATCH 64
#define WRITE_NOW_MAX (64u << 10)	/* segments written by the worker itself */

static int fatal_write_error(int err)
{
	return err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS ||
	       err == EFBIG;
}

/* file @id is complete: finish it here and have it reported */
static void rw_complete(struct rworker *w, uint32_t id)
{
	recv_file_finish(w->s, id);
	/* room for every id: a file is in it at most once */
	if (pxfer_doneq_push(&w->s->done, id) > 0)
		w->done_wake = 1;	/* told once, at the end of the turn */
}

static int rw_prep_write(struct rworker *w, unsigned int slot, unsigned int i)
{
	struct rslot *rs = &w->slots[slot];
	uint8_t *buf = pxfer_ring_slot(&w->b.ring, slot) + rs->boff[i];
	uint32_t done = rs->done[i];

	rs->pending++;
	return w->b.io->ops->prep(w->b.io, PXFER_IO_WRITE, rs->fd[i], slot,
				buf + done, rs->seg[i].len - done,
				rs->seg[i].offset + done, ((uint64_t)slot << 8) | i);
}

static int rw_write_done(struct rworker *w, uint64_t tag, int res);

/* the next id of @q, a queue the worker's lock guards: 1, or 0 if none */
static int rw_pop(struct rworker *w, struct pxfer_idq *q, uint32_t *id)
{
	int got;

	pthread_mutex_lock(&w->b.lock);
	got = pxfer_idq_pop(q, id);
	pthread_mutex_unlock(&w->b.lock);
	return got;
}

/* ---- forwarding from the ring (engine/relay.h) ----------------------------- */

/* the forward of a segment in @it's slot is done with: from any thread */
static void rw_relay_put(struct pxfer_relay_item *it)
{
	struct rworker *w = it->arg;

	if (atomic_fetch_add(&w->relay_back[it->slot], 1))
		return;		/* its slot is queued already */
	pthread_mutex_lock(&w->b.lock);
	/* room for every slot: one is queued at most once */
	pxfer_idq_push(&w->relq, it->slot);
	pthread_mutex_unlock(&w->b.lock);
	pxfer_wake(w->b.wake_fd);
}

static void rw_slot_free(struct rworker *w, unsigned int slot);

/* the slots whose forwards are done: free once their writes are too */
static void rw_relay_back(struct rworker *w)
{
	uint32_t slot;

	if (!w->relay_items)
		return;
	while (rw_pop(w, &w->relq, &slot)) {
		w->slots[slot].pending -= atomic_exchange(&w->relay_back[slot], 0);
		if (!w->slots[slot].pending)
			rw_slot_free(w, slot);
	}
}

/* made the first time a chunk of this worker goes on: 0 or -ENOMEM */
static int rw_relay_init(struct rworker *w)
{
	unsigned int n = w->s->b.wel.slots;

	w->relay_items = calloc((size_t)n * PXFER_SEG_MAX, sizeof(*w->relay_items));
	w->relay_back = calloc(n, sizeof(*w->relay_back));
	if (!w->relay_items || !w->relay_back || pxfer_idq_init(&w->relq, n)) {
		free(w->relay_items);
		free(w->relay_back);
		w->relay_items = NULL;
		w->relay_back = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * Segment @i of the chunk in @slot, checked, goes on to the next hop from
 * the slot (its range is forwarded as it comes): the slot stays taken
 * until that is done too. Once its range is complete here, what could
 * not go this way goes from disk.
 */
static int rw_relay(struct rworker *w, unsigned int slot, unsigned int i)
{
	struct rslot *rs = &w->slots[slot];
	struct pxfer_relay_item *it;

	if (!w->relay_items && rw_relay_init(w))
		return pxfer_fail(&w->s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	it = &w->relay_items[(size_t)slot * PXFER_SEG_MAX + i];
	it->ent = rs->rent[i];
	it->buf = pxfer_ring_slot(&w->b.ring, slot) + rs->boff[i];
	it->ring = &w->b.ring;
	it->off = rs->seg[i].offset;
	it->len = rs->seg[i].len;
	it->put = rw_relay_put;
	it->arg = w;
	it->slot = slot;
	if (pxfer_relay_push(it))
		rs->pending++;
	return 0;
}

/*
 * A small segment is written here and now. io_uring would hand it to one
 * of its own threads anyway (buffered writes to ext4 or tmpfs cannot be
 * tried without blocking), and with thousands of small files that thread
 * and this one took turns for every file (two context switches a file).
 */
static int rw_write_now(struct rworker *w, unsigned int slot, unsigned int i)
{
	struct rslot *rs = &w->slots[slot];
	uint8_t *buf = pxfer_ring_slot(&w->b.ring, slot) + rs->boff[i];
	ssize_t n;

	rs->pending++;
	do {
		n = pwrite(rs->fd[i], buf, rs->seg[i].len, rs->seg[i].offset);
	} while (n < 0 && errno == EINTR);
	return rw_write_done(w, ((uint64_t)slot << 8) | i, n < 0 ? -errno : (int)n);
}

static void rw_slot_put(struct rworker *w, unsigned int slot)
{
	pthread_mutex_lock(&w->b.lock);
	pxfer_credits_put(&w->b.cred, slot);
	pthread_mutex_unlock(&w->b.lock);
}

/* the coordinator is told once per turn of the worker (recv_worker_main) */
static void rw_slot_free(struct rworker *w, unsigned int slot)
{
	rw_slot_put(w, slot);
	w->slots_freed = 1;
	recv_progress(w->s);	/* its data is written */
}

static int rw_write_done(struct rworker *w, uint64_t tag, int res)
{
	struct recv_session *s = w->s;
	unsigned int slot = tag >> 8, i = tag & 0xff;
	struct rslot *rs = &w->slots[slot];
	struct pxfer_seg *seg = &rs->seg[i];
	int err = 0;

	rs->pending--;
	if (res > 0) {
		rs->done[i] += res;
		if (rs->done[i] < seg->len)
			return rw_prep_write(w, slot, i);	/* short write */
	} else {
		err = res < 0 ? -res : EIO;
	}
	if (err && fatal_write_error(err))
		pxfer_fail_err(&s->b.fail, PXFER_EXIT_LOCAL, err,
			       "cannot write into '%s': %s", s->o->dir,
			       strerror(err));
	/* recorded before the file can complete (and its partial go) */
	if (!err && rs->part[i])
		pxfer_partial_add(rs->part[i], seg->offset, seg->len, &rs->hash[i]);
	if (pxfer_filetab_written(&s->tab, seg->file, seg->len, err))
		rw_complete(w, seg->file);
	if (!rs->pending)
		rw_slot_free(w, slot);
	return 0;
}

/*
 * A write that completed while the session ends: no more writes are
 * started, and no file completes now, but a segment whose bytes are all
 * written is recorded in its partial, to be kept.
 */
static void rw_write_drained(struct rworker *w, uint64_t tag, int res)
{
	unsigned int slot = tag >> 8, i = tag & 0xff;
	struct rslot *rs = &w->slots[slot];

	if (res > 0 && rs->part[i] && rs->done[i] + res == rs->seg[i].len)
		pxfer_partial_add(rs->part[i], rs->seg[i].offset, rs->seg[i].len,
				  &rs->hash[i]);
}

/*
 * The chunk's descriptor is known and its payload not yet read: it must
 * be the next on this connection, into a slot we granted, for bytes its
 * files still expect. Then its segments' files are known to be open.
 * -EBADMSG for one out of sequence: a sender numbers its chunks one by
 * one, so a chunk was replayed, reordered or dropped on the way, as
 * its tag would show (its nonce is the sequence number) if it were
 * read; -EPROTO for the rest.
 */
static int rw_check(struct rworker *w, const struct pxfer_chunk *ch)
{
	struct recv_session *s = w->s;
	struct rslot *rs = &w->slots[ch->slot];
	int ret;

	if (ch->seq != w->seq)
		return -EBADMSG;
	pthread_mutex_lock(&w->b.lock);
	ret = pxfer_credits_accept(&w->b.cred, ch->slot);
	pthread_mutex_unlock(&w->b.lock);
	if (!ret)
		ret = pxfer_filetab_reserve(&s->tab, ch);
	for (unsigned int i = 0; !ret && i < ch->nseg; i++) {
		struct pxfer_rfile *rf = pxfer_rfile_get(&s->files, ch->seg[i].file);

		rs->fd[i] = rf->fd;
		rs->part[i] = rf->part;
		rs->rent[i] = rf->relay;
	}
	return ret;
}

static int rw_chunk(struct rworker *w)
{
	struct recv_session *s = w->s;
	struct pxfer_chunk *d = &w->desc;
	struct rslot *rs = &w->slots[d->slot];
	uint8_t *buf = pxfer_ring_slot(&w->b.ring, d->slot);
	uint32_t off = 0;
	int ret;

	w->seq++;
	atomic_store_explicit(&w->taken, w->seq, memory_order_relaxed);
	if (pxfer_tagger_open(&w->tag, d, buf)) {
		char what[32], detail[160];

		snprintf(what, sizeof(what), "data connection %u", w->b.idx);
		snprintf(detail, sizeof(detail),
			 w->tag.prot == PXFER_PROT_CHECKSUM ?
			 "chunk %llu does not match its checksum: corrupted in transit" :
			 "chunk %llu failed authentication: forged, or corrupted in transit",
			 (unsigned long long)d->seq);
		return pxfer_session_integrity(&s->b, what, detail);
	}
	recv_progress(s);
	rs->nseg = d->nseg;
	rs->pending = 1;	/* the slot stays taken until all are under way */
	for (unsigned int i = 0; i < d->nseg; i++) {
		rs->seg[i] = d->seg[i];
		rs->boff[i] = off;
		rs->done[i] = 0;
		/* hashed while it is in the cache, for the partial's journal */
		if (rs->part[i])
			pxfer_digest_range(&rs->hash[i], buf + off, d->seg[i].len,
					   d->seg[i].offset);
		off += d->seg[i].len;
	}
	/* on to the next hop first: it does not wait for the write */
	for (unsigned int i = 0; i < d->nseg; i++)
		if (rs->rent[i] && rw_relay(w, d->slot, i))
			return -1;
	for (unsigned int i = 0; i < d->nseg; i++) {
		ret = d->seg[i].len <= WRITE_NOW_MAX ? rw_write_now(w, d->slot, i)
						      : rw_prep_write(w, d->slot, i);
		if (ret)
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "cannot queue a write: %s", strerror(-ret));
	}
	if (!--rs->pending)
		rw_slot_free(w, d->slot);
	return 0;
}

static int rw_out_of_sequence(struct rworker *w)
{
	char what[32], detail[160];

	snprintf(what, sizeof(what), "data connection %u", w->b.idx);
	snprintf(detail, sizeof(detail),
		 "chunk %llu arrived where chunk %llu was due: replayed, reordered, or one before it dropped",
		 (unsigned long long)w->desc.seq, (unsigned long long)w->seq);
	return pxfer_session_integrity(&w->s->b, what, detail);
}

/*
 * The connection is gone (@err), or the sender gave it up: it carries
 * nothing more. A chunk whose payload did not all arrive (@reserved:
 * its bytes were reserved) is given back, to come again over another
 * connection; the chunks before it are taken, and their writes go on.
 * The coordinator tells the sender how many that is (w->seq). 1, or -1
 * when the session failed.
 */
static int rw_lost(struct rworker *w, int err, int reserved)
{
	struct recv_session *s = w->s;

	if (reserved) {
		if (pxfer_filetab_unreserve(&s->tab, &w->desc))
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "data connection %u from %s failed (%s), and a chunk it was bringing could not be given back",
					  w->b.idx, w->b.conn->peer, strerror(-err));
		/* nothing is written from its slot */
		rw_slot_put(w, w->desc.slot);
	}
	pxfer_worker_lose(&w->b, s->b.t, err);
	if (!w->rail_down) {
		struct pxfer_recv_metrics *m = s->srv->m;

		w->rail_down = 1;
		recv_uncount(&m->rails_up, 1);
		recv_count(&m->rails_down, 1);
		recv_count(&m->rails_lost, 1);
	}
	w->b.lost_seq = w->seq;
	pxfer_session_data_lost(&s->b, w->b.idx, err);
	return 1;
}

/* 0: go on; 1: the connection ended (no more chunks); -1: failed */
static int rw_receive(struct rworker *w)
{
	struct recv_session *s = w->s;
	const struct pxfer_transport_ops *t = s->b.t;
	int ret, n = 0, reserved;

	/* bounded, so completions and the ring's slots keep moving */
	while (n < 16) {
		reserved = 0;
		ret = t->recv_chunk(w->b.conn, &w->b.ring, &w->desc);
		if (ret == 0 && !pxfer_worker_alive(&w->b))
			return rw_lost(w, atomic_load(&w->b.lost), 0);
		if (ret == 0)
			break;
		if (ret > 0) {
			ret = rw_check(w, &w->desc);
			reserved = !ret;
		}
		if (!ret && t->recv_payload)
			ret = t->recv_payload(w->b.conn, &w->b.ring, &w->desc);
		if (ret == -EPIPE && atomic_load(&s->fin_seen))
			return 1;
		if (ret == -EBADMSG)
			return rw_out_of_sequence(w);
		if (ret == -EPROTO)
			return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
					  "protocol error on data connection %u from %s: a chunk that was not granted, does not fit its file or repeats bytes already sent",
					  w->b.idx, w->b.conn->peer);
		if (ret == -ENOMEM)
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "out of memory");
		/* anything else is the connection's: the others go on */
		if (ret < 0)
			return rw_lost(w, ret, reserved);
		if (rw_chunk(w))
			return -1;
		n++;
	}
	return 0;
}

/* finish what the coordinator handed to this worker */
static void rw_finish_queued(struct rworker *w)
{
	uint32_t id;

	while (rw_pop(w, &w->finq, &id))
		rw_complete(w, id);
}

/* at the end of a turn, the coordinator hears of it all at once */
static void rw_tell(struct rworker *w)
{
	if (w->done_wake || w->slots_freed) {
		w->done_wake = w->slots_freed = 0;
		pxfer_wake(w->s->b.ctrl.wake_fd);
	}
}

void *recv_worker_main(void *arg)
{
	struct rworker *w = to_rworker(arg);
	struct recv_session *s = w->s;
	struct pxfer_io *io = w->b.io;
	struct pxfer_io_cqe cqe[REAP_BATCH];
	struct pollfd p[3];
	int n, ret, closed = 0;

	recv_count(&s->srv->m->rails_up, 1);
	while (!pxfer_workers_stopping(&s->b.workers) && !pxfer_failed(&s->b.fail)) {
		/* a new connection in place of the lost one (rejoin.c) */
		if (closed && atomic_exchange(&w->rejoined, 0)) {
			closed = 0;
			if (w->rail_down) {
				w->rail_down = 0;
				recv_uncount(&s->srv->m->rails_down, 1);
				recv_count(&s->srv->m->rails_up, 1);
			}
		}
		p[0].fd = w->b.wake_fd;
		p[0].events = POLLIN;
		/* a connection that ended is not polled: its hangup would
		 * wake the worker at once, every turn */
		p[1].fd = closed ? -1 : s->b.t->conn_fd(w->b.conn);
		p[1].events = POLLIN;
		p[2].fd = io->event_fd;
		p[2].events = POLLIN;
		poll(p, io->event_fd >= 0 ? 3 : 2,
		     !io->inflight ? 1000 : io->event_fd >= 0 ? 100 : 0);
		pxfer_drain(w->b.wake_fd);
		/* given up by the sender (DATA_LOST): the connection is shut
		 * down, and what is left on it is read to its end */
		if (!closed && (p[1].revents & (POLLIN | POLLHUP | POLLERR) ||
				!pxfer_worker_alive(&w->b))) {
			ret = rw_receive(w);
			if (ret < 0)
				break;
			closed = ret > 0;
			/* done with a lost one: the coordinator may replace it */
			if (closed && !pxfer_worker_alive(&w->b))
				atomic_store(&w->b.parked, 1);
		}
		ret = io->ops->submit(io);
		if (ret) {
			pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				   "cannot submit writes: %s", strerror(-ret));
			break;
		}
		/*
		 * Take every completion that is ready: reaping drains the
		 * eventfd, so what is left behind would wake nobody and the
		 * slots would sit until the poll timeout.
		 */
		do {
			n = io->ops->reap(io, cqe, REAP_BATCH, 0);
			for (int i = 0; i < n; i++)
				rw_write_done(w, cqe[i].tag, cqe[i].res);
			io->ops->submit(io);
		} while (n == REAP_BATCH);
		rw_finish_queued(w);
		rw_relay_back(w);
		rw_tell(w);
	}
	rw_tell(w);	/* what a break left */
	/* every write into the ring finishes before the ring goes away,
	 * and what landed is recorded for a later session */
	while (io->inflight) {
		if (io->ops->submit(io))
			break;
		n = io->ops->reap(io, cqe, REAP_BATCH, 1);
		if (n < 0)
			break;
		for (int i = 0; i < n; i++)
			rw_write_drained(w, cqe[i].tag, cqe[i].res);
	}
	recv_uncount(w->rail_down ? &s->srv->m->rails_down : &s->srv->m->rails_up, 1);
	return NULL;
}
