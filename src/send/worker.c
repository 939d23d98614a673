// SPDX-License-Identifier: MIT
/*
 * A sender's worker: it owns one data connection and one ring. With a
 * credit in hand it asks the scheduler for a chunk, reads it from disk
 * into the granted slot (io_uring READ_FIXED, or at once when the bytes
 * are cached), checksums it and puts it on the wire; when the transport
 * reports the send complete, the slot is free again.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/uio.h>

#include "core/escape.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/sys.h"
#include "send/send.h"

#define REAP_BATCH 64
#define READ_NOW_MAX (64u << 10)	/* segments read by the worker itself */

static void sw_wait(struct sworker *w)
{
	struct send_session *s = w->s;
	struct pollfd p[3] = {
		{ .fd = w->b.wake_fd, .events = POLLIN },
		{ .fd = s->b.t->conn_fd(w->b.conn), .events = POLLIN },
		{ .fd = w->b.io->event_fd, .events = POLLIN },
	};

	poll(p, w->b.io->event_fd >= 0 ? 3 : 2, 1000);
	pxfer_drain(w->b.wake_fd);
}

/*
 * The worker's data connection broke: nothing more goes on it. The
 * coordinator tells the receiver and, once the receiver said which of
 * its chunks it took, has the other workers send the rest.
 */
static int sw_conn_failed(struct sworker *w, int err)
{
	pxfer_worker_lose(&w->b, w->s->b.t, err);
	pxfer_session_data_lost(&w->s->b, w->b.idx, err);
	return -1;
}

/* the scheduler counts the segments of @ss sent (once) */
static void sw_count(struct send_session *s, struct sslot *ss)
{
	if (ss->counted)
		return;
	for (unsigned int i = 0; i < ss->plan.nseg; i++)
		pxfer_sched_done(&s->sched, ss->plan.seg[i].f,
				 ss->plan.seg[i].len, 0);
	ss->counted = 1;
}

static int sw_reap_sent(struct sworker *w)
{
	struct send_session *s = w->s;
	uint16_t done[REAP_BATCH];
	int n, reaped = 0;

	while ((n = s->b.t->reap_sent(w->b.conn, done, REAP_BATCH)) != 0) {
		if (n < 0)
			return sw_conn_failed(w, n);
		for (int k = 0; k < n; k++) {
			/* a chunk sent again was counted the first time: its
			 * files may be done with and gone by now */
			sw_count(s, &w->slots[done[k]]);
			/* a piece from another's ring: it may go back there */
			send_relay_sent(&w->slots[done[k]]);
			pthread_mutex_lock(&w->b.lock);
			pxfer_credits_put(&w->b.cred, done[k]);
			pthread_mutex_unlock(&w->b.lock);
		}
		reaped = 1;
	}
	/* FILE_END as soon as a file's last bytes are sent: the receiver
	 * finishes it, and its id comes back, that much sooner */
	if (reaped)
		pxfer_fileend_flush(&s->ends);
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
			const char *src = seg->f->src;
			char q[PXFER_QUOTE_MAX];

			/* one message per file, not one per segment; a file
			 * that shrank changed, and is said so when it ends */
			if (pxfer_sched_done(&s->sched, seg->f, seg->len, ss->err[i]) &&
			    ss->err[i] != ENODATA)
				pxfer_error("cannot read %s: %s",
				      pxfer_quote_str(q, sizeof(q), src),
				      strerror(ss->err[i]));
			continue;
		}
		memmove(buf + off, buf + ss->boff[i], seg->len);
		ss->plan.seg[k++] = *seg;
		off += seg->len;
	}
	ss->plan.nseg = k;
	ss->plan.len = off;
	memset(ss->err, 0, sizeof(ss->err));
}

/* drop what failed to read in @ss: 1 when something is left to send */
static int sw_settle(struct sworker *w, struct sslot *ss, uint8_t *buf)
{
	for (unsigned int i = 0; i < ss->plan.nseg; i++) {
		if (ss->err[i]) {
			sw_drop_failed(w, ss, buf);
			break;
		}
	}
	return ss->plan.nseg > 0;
}

static void sw_unuse(struct sworker *w, unsigned int slot)
{
	pthread_mutex_lock(&w->b.lock);
	pxfer_credits_unuse(&w->b.cred, slot);
	pthread_mutex_unlock(&w->b.lock);
}

static void sw_sent(struct sworker *w, uint32_t len)
{
	atomic_fetch_add(&w->s->bytes_sent, len);
	atomic_fetch_add(&w->s->chunks, 1);
}

static int sw_send_slot(struct sworker *w, unsigned int slot)
{
	struct send_session *s = w->s;
	struct sslot *ss = &w->slots[slot];
	/* a piece forwarded from the ring is sent from there (no copy) */
	uint8_t *buf = (uint8_t *)send_relay_local(w, slot);
	struct pxfer_chunk *d = &w->desc;
	int ret;

	if (!sw_settle(w, ss, buf)) {
		ss->state = SS_IDLE;
		sw_unuse(w, slot);
		return 0;
	}
	d->slot = slot;
	d->nseg = ss->plan.nseg;
	d->len = ss->plan.len;
	d->seq = w->seq++;
	for (unsigned int i = 0; i < d->nseg; i++) {
		d->seg[i].file = ss->plan.seg[i].f->id;
		d->seg[i].offset = ss->plan.seg[i].off;
		d->seg[i].len = ss->plan.seg[i].len;
	}
	ret = pxfer_tagger_seal(&w->tag, d, buf);
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot seal a chunk: %s", strerror(-ret));
	ss->sealed = 1;
	ss->seq = d->seq;
	/*
	 * Counted for DATA_SENT before it goes: the transport may return
	 * well after the receiver took it (rdma waits for room in the send
	 * queue after posting), and a count below what arrived is a
	 * protocol error. One that fails loses the connection, whose count
	 * is never told.
	 */
	atomic_store_explicit(&w->sent, w->seq, memory_order_relaxed);
	ret = s->b.t->send_chunk(w->b.conn, d, buf);
	if (ret) {
		ss->state = SS_FILLED;
		return sw_conn_failed(w, ret);
	}
	ss->state = SS_SENT;
	ss->seq = d->seq;
	sw_sent(w, d->len);
	if (w->lose_after && w->seq == w->lose_after && !w->b.gen)
		pxfer_worker_lose(&w->b, s->b.t, -ECONNRESET);
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
	/* its connection is gone: it goes over another one */
	if (!pxfer_worker_alive(&w->b)) {
		ss->state = SS_FILLED;
		return 0;
	}
	return sw_send_slot(w, slot);
}

/*
 * A chunk a lost connection's worker holds, into granted slot @slot of
 * this one: its bytes are in that worker's ring, which stays until the
 * session ends, and its files cannot have completed without it. 1 when
 * sent, 0 when there was none after all, -1 when the session failed.
 */
static int sw_resend(struct sworker *w, unsigned int slot)
{
	struct sslot *ss = &w->slots[slot];
	struct pxfer_resend r;
	struct sworker *from;

	if (!pxfer_resendq_pop(&w->s->resendq, &r)) {
		ss->state = SS_IDLE;
		sw_unuse(w, slot);
		return 0;
	}
	from = container_of(r.from, struct sworker, rs);
	ss->plan = from->slots[r.slot].plan;
	/* a piece from another's ring goes from there again */
	ss->ext = from->slots[r.slot].ext;
	ss->ext_buf = from->slots[r.slot].ext_buf;
	from->slots[r.slot].ext = NULL;
	from->slots[r.slot].ext_buf = NULL;
	if (!ss->ext_buf)
		memcpy(pxfer_ring_slot(&w->b.ring, slot),
		       pxfer_ring_slot(&from->b.ring, r.slot), ss->plan.len);
	/* its ring may take a new connection once none is left there */
	pxfer_resendq_copied(&r);
	memset(ss->err, 0, sizeof(ss->err));
	ss->pending = 0;
	ss->counted = 1;
	ss->sealed = 0;
	return sw_send_slot(w, slot) ? -1 : 1;
}

/*
 * A chunk sealed with --encrypt holds its ciphertext: both AEADs encrypt
 * by a keystream that depends only on the key and the nonce (worker,
 * seq), so sealing it again as it was sealed gives the plaintext back,
 * for another worker to seal under its own nonce. Nothing of this second
 * sealing leaves the sender. 0 or -1.
 */
static int sw_unseal(struct send_session *s, struct sworker *w, unsigned int slot)
{
	struct sslot *ss = &w->slots[slot];
	struct pxfer_chunk d = { .slot = slot, .nseg = ss->plan.nseg,
				 .len = ss->plan.len, .seq = ss->seq };

	if (!ss->sealed || w->tag.prot != PXFER_PROT_ENCRYPT)
		return 0;
	for (unsigned int i = 0; i < d.nseg; i++) {
		d.seg[i].file = ss->plan.seg[i].f->id;
		d.seg[i].offset = ss->plan.seg[i].off;
		d.seg[i].len = ss->plan.seg[i].len;
	}
	if (pxfer_tagger_seal(&w->tag, &d, pxfer_ring_slot(&w->b.ring, slot)))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot decrypt a chunk to send it again");
	ss->sealed = 0;
	return 0;
}

int send_worker_requeue(struct send_session *s, struct sworker *w)
{
	int n = 0;

	for (unsigned int i = 0; i < s->b.wel.slots; i++) {
		struct sslot *ss = &w->slots[i];

		if (ss->state == SS_SENT && ss->seq < w->b.lost_seq) {
			/* the receiver took it, if its completion never came */
			sw_count(s, ss);
			send_relay_sent(ss);
			continue;
		}
		if (ss->state != SS_SENT && ss->state != SS_FILLED)
			continue;
		if (ss->state == SS_FILLED &&
		    !sw_settle(w, ss, pxfer_ring_slot(&w->b.ring, i)))
			continue;
		if (sw_unseal(s, w, i))
			return -1;
		sw_count(s, ss);
		ss->state = SS_IDLE;
		/* room for every slot of every worker */
		if (pxfer_resendq_push(&s->resendq, &w->rs, i))
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "cannot queue a chunk to send again");
		n++;
	}
	/* the files whose last bytes these were can end now */
	pxfer_fileend_flush(&s->ends);
	return n;
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
	ss->state = SS_READING;
	ss->counted = 0;
	ss->sealed = 0;
	if (pxfer_resendq_waiting(&s->resendq))
		return sw_resend(w, slot);
	/* what a receiving session of this node forwards from its ring */
	if (s->relay && send_relay_fill(w, slot))
		return sw_send_slot(w, slot) ? -1 : 1;
	if (!pxfer_sched_next(&s->sched, &ss->plan)) {
		ss->state = SS_IDLE;
		sw_unuse(w, slot);
		return 0;
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
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "cannot queue a read: %s", strerror(-ret));
	}
	if (!--ss->pending && sw_send_slot(w, slot))
		return -1;
	return 1;
}

static int sw_running(struct sworker *w)
{
	struct send_session *s = w->s;

	return !pxfer_workers_stopping(&s->b.workers) &&
	       !pxfer_failed(&s->b.fail) && pxfer_worker_alive(&w->b);
}

void *send_worker_main(void *arg)
{
	struct sworker *w = to_sworker(arg);
	struct send_session *s = w->s;
	struct pxfer_io_cqe cqe[REAP_BATCH];
	int n, busy, ret;

	while (sw_running(w)) {
		busy = 0;
		n = w->b.io->ops->reap(w->b.io, cqe, REAP_BATCH, 0);
		/* every read taken off the ring is seen to: one whose send
		 * failed leaves its chunk for another connection */
		for (int i = 0; i < n; i++)
			sw_read_done(w, cqe[i].tag, cqe[i].res);
		busy |= n > 0;
		if (sw_reap_sent(w))
			break;
		while (!pxfer_failed(&s->b.fail) && sw_fill_one(w) > 0)
			busy = 1;
		/* the files planning ended (empty, a hole to the end, errors) */
		pxfer_fileend_flush(&s->ends);
		ret = w->b.io->ops->submit(w->b.io);
		if (ret) {
			pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				   "cannot submit reads: %s", strerror(-ret));
			break;
		}
		if (!busy)
			sw_wait(w);
	}
	pxfer_fileend_flush(&s->ends);
	/*
	 * The ring stays mapped until every read into it has finished. A
	 * worker whose connection is gone keeps what it reads, for the
	 * others to send.
	 */
	while (w->b.io->inflight) {
		if (w->b.io->ops->submit(w->b.io))
			break;
		n = w->b.io->ops->reap(w->b.io, cqe, REAP_BATCH, 1);
		if (n < 0)
			break;
		for (int i = 0; i < n && !pxfer_failed(&s->b.fail) &&
				!pxfer_worker_alive(&w->b); i++)
			sw_read_done(w, cqe[i].tag, cqe[i].res);
	}
	if (!pxfer_worker_alive(&w->b)) {
		atomic_store(&w->b.parked, 1);
		pxfer_wake(s->b.ctrl.wake_fd);
	}
	return NULL;
}
