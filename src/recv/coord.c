// SPDX-License-Identifier: MIT
/*
 * The receiver's coordinator: the session's thread, which owns the
 * control connection. It creates each file the sender announces (FILE;
 * recv/rfile.c) and answers FILE_OK or FILE_ERR, records FILE_END, hands
 * files that FILE_END completed to the workers to finish, reports each
 * complete file with FILE_DONE, grants freed slots back as CREDIT, and
 * answers FIN with ACK once every file is in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "core/log.h"
#include "core/sys.h"
#include "recv/path.h"
#include "recv/recv.h"
#include "recv/shared.h"

#define REPLY_FLUSH 32		/* control messages handled between sends */
#define REFUSALS_LOGGED 20	/* refused files a session names in the log */

/*
 * Replies waiting to be sent above which the sender's messages are left
 * unread (pxfer_ctrl's read_pause), so that a sender that does not read
 * its replies cannot make them grow: the queue stays under twice this.
 * It is above anything an honest sender can be owed -- two replies per
 * file in flight (RECV_MAX_FILES x 300 bytes) and one CREDIT per ring
 * slot (65536 x 14 bytes), 1.2 MB in all -- so that such a sender never
 * meets it: over rdma the receiver's sends need the receive credits its
 * own reads give back, and a pause there must never wait on the sender.
 */
#define REPLY_PAUSE (2u << 20)

/* ---- complete files ------------------------------------------------------ */

void recv_file_finish(struct recv_session *s, uint32_t id)
{
	uint64_t total;
	int by_sender;

	/* a file that failed is reported as is and removed */
	if (pxfer_filetab_outcome(&s->tab, id, &total, &by_sender))
		return;
	/* its fsync may take long: the sender is not idle meanwhile */
	atomic_fetch_add(&s->busy, 1);
	pxfer_rfile_finish(&s->files, id, total);
	atomic_fetch_sub(&s->busy, 1);
	recv_progress(s);
}

/* files handed on to one worker before the next one's turn */
#define FINISH_RUN	16

/*
 * FILE_END completed file @id here, as it usually does with small files
 * (their data is written before the FILE_END arrives): the workers take
 * turns finishing them, so that the coordinator only creates files.
 */
static void hand_on(struct recv_session *s, uint32_t id)
{
	uint64_t total;
	struct rworker *w;
	int by_sender, wake;

	if (pxfer_filetab_outcome(&s->tab, id, &total, &by_sender)) {
		pxfer_doneq_push(&s->done, id);	/* room for every id */
		return;
	}
	/* runs of files to one worker: woken once, it finishes the run in
	 * one turn (a worker a file woke a worker for nearly every file) */
	w = &s->w[s->finish_next++ / FINISH_RUN % s->b.workers.n];
	pthread_mutex_lock(&w->b.lock);
	wake = pxfer_idq_push(&w->finq, id) > 0;	/* room for every id */
	pthread_mutex_unlock(&w->b.lock);
	if (wake)
		pxfer_wake(w->b.wake_fd);
}

static void reply_status(struct recv_session *s, uint16_t type, uint64_t id,
			 int code, const char *text)
{
	struct pxfer_msg m = { .type = type };

	m.u.status.id = id;
	m.u.status.code = code;
	if (text) {
		size_t n = strlen(text);

		if (n > PXFER_TEXT_MAX)
			n = PXFER_TEXT_MAX;
		memcpy(m.u.status.text, text, n);
		m.u.status.text[n] = 0;
		m.u.status.text_len = n;
	}
	if (pxfer_ctrl_queue(&s->b.ctrl, &m))
		pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
}

/* report complete file @id with FILE_DONE, and forget it */
static void finalize(struct recv_session *s, uint32_t id)
{
	struct pxfer_rfile *rf = pxfer_rfile_get(&s->files, id);
	char text[PXFER_TEXT_MAX + 1], q[PXFER_QUOTE_MAX];
	uint64_t total;
	int by_sender, err;

	err = pxfer_filetab_outcome(&s->tab, id, &total, &by_sender);
	if (!err && !rf->finished)
		pxfer_rfile_finish(&s->files, id, total);
	if (!err)
		err = rf->finish_err;
	pxfer_filetab_close(&s->tab, id);
	recv_progress(s);
	if (!err) {
		s->files_ok++;
		s->bytes += total;
		reply_status(s, PXFER_MSG_FILE_DONE, id, 0, NULL);
		if (s->fwd)
			recv_chain_file(s, id);
		pxfer_rfile_drop(&s->files, id, PXFER_DROP_DONE);
		return;
	}
	if (by_sender && err == PXFER_CODE_CHANGED) {
		/* not the network's fault, nor the disk's */
		snprintf(text, sizeof(text),
			 "the sender's copy changed while it was sent; what arrived was not kept");
	} else if (by_sender) {
		snprintf(text, sizeof(text), "the sender could not read it: %s",
			 strerror(err));
	} else if (rf->verify_bad) {
		snprintf(text, sizeof(text),
			 "read back from the receiver's storage, it differs from what was sent (--verify); it was not named");
		if (!s->o->quiet)
			pxfer_error("%s: %s", pxfer_quote_str(q, sizeof(q), rf->path), text);
	} else {
		snprintf(text, sizeof(text), "cannot write it: %s", strerror(err));
		if (!s->o->quiet)
			pxfer_error("cannot write %s: %s",
			      pxfer_quote_str(q, sizeof(q), rf->path),
			      strerror(err));
	}
	/* a source that changed is the sender's to send again, or to count
	 * as failed: nothing failed here */
	if (!(by_sender && err == PXFER_CODE_CHANGED))
		s->failed++;
	reply_status(s, PXFER_MSG_FILE_DONE, id, err, text);
	/* what a write error left is worth keeping (the disk may have been
	 * full); what the sender gave up on or what read back wrong is not */
	pxfer_rfile_drop(&s->files, id, by_sender || rf->verify_bad ?
			 PXFER_DROP_DISCARD : PXFER_DROP_KEEP);
}

/* ---- the sender's messages ----------------------------------------------- */

static void refuse_file(struct recv_session *s, const struct pxfer_file *f,
			int err, const char *what)
{
	char text[PXFER_TEXT_MAX + 1], q[PXFER_QUOTE_MAX];

	snprintf(text, sizeof(text), "%s: %s", what, strerror(err));
	/* a path that was refused may hold anything but '/' and "..": a
	 * newline that forges a line of the log too. And a sender can have
	 * thousands refused a second: the log names the first ones, the
	 * sender hears of each */
	s->refused++;
	if (!s->o->quiet && s->refused <= REFUSALS_LOGGED)
		pxfer_warning("refused %s from %s: %s",
			pxfer_quote(q, sizeof(q), f->path, f->path_len),
			s->b.cconn->peer, text);
	if (!s->o->quiet && s->refused == REFUSALS_LOGGED + 1)
		pxfer_warning("more files refused from %s are not named here; the sender is told of each",
			s->b.cconn->peer);
	s->failed++;
	reply_status(s, PXFER_MSG_FILE_ERR, f->id, err, text);
}

/* what lies outside range file @id's range is not this session's */
static int hold_outside(struct recv_session *s, uint64_t id,
			const struct pxfer_rfile *rf, uint64_t size)
{
	uint64_t end = rf->range_off + rf->range_len;
	int ret = 0;

	if (rf->range_off)
		ret = pxfer_filetab_hold(&s->tab, id, 0, rf->range_off);
	if (!ret && end < size)
		ret = pxfer_filetab_hold(&s->tab, id, end, size - end);
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot take up a range of a file: %s",
				  strerror(-ret));
	return 0;
}

/* file @id of @size bytes was created, or is there already: FILE_OK
 * says which */
static int file_ok(struct recv_session *s, uint64_t id, uint64_t size)
{
	struct pxfer_file_ok *ok = &s->ok.u.ok;
	struct pxfer_rfile *rf = pxfer_rfile_get(&s->files, id);
	int ret;

	s->ok.type = PXFER_MSG_FILE_OK;
	/* a range: what the shared partial holds of it */
	if (ok->state != PXFER_HAVE_SAME && rf->shared &&
	    pxfer_rrange_ok(&s->files, id, ok))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	if (ok->state == PXFER_HAVE_SAME) {
		/* nothing was opened: the sender is done with it at once */
		s->files_same++;
		s->bytes_same += size;
	} else {
		if (pxfer_filetab_open(&s->tab, id, size))
			return -EPROTO;	/* checked by on_file */
		for (unsigned int i = 0; i < ok->nrun; i++) {
			ret = pxfer_filetab_hold(&s->tab, id, ok->run[i].off,
						 ok->run[i].len);
			if (ret)
				return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
						  "cannot take up a partial file: %s",
						  strerror(-ret));
		}
		/* a range's file is complete when the range is in */
		if (rf->shared && hold_outside(s, id, rf, size))
			return -1;
		s->bytes_resumed += ok->held;
		if (rf->shared && !ok->nrun && s->fwd)	/* all of it comes */
			recv_chain_begin(s, id);
	}
	if (pxfer_ctrl_queue(&s->b.ctrl, &s->ok))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	return 0;
}

/* the data file @id's partial holds is read back first, or the file that
 * is there compared (--checksum): its FILE_OK waits */
static int check_file(struct recv_session *s, uint64_t id)
{
	int ret = pxfer_check_submit(&s->check, pxfer_rfile_get(&s->files, id)->check);

	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot start the threads that check files: %s",
				  strerror(-ret));
	return 0;
}

/* regular file @f: created (FILE_OK), refused, or checked first */
static int create_file(struct recv_session *s, const struct pxfer_file *f)
{
	struct pxfer_err err = { 0 };
	int ret = pxfer_rfile_create(&s->files, f, &err, &s->ok.u.ok);

	if (ret == 1 || ret == 2)
		return check_file(s, f->id);
	if (!ret)
		return file_ok(s, f->id, f->size);
	refuse_file(s, f, -ret, err.msg);
	return 0;
}

/* the file that is there was compared (--checksum): the same, FILE_OK
 * says so; otherwise it is created as if it were not there */
static int compared(struct recv_session *s, uint64_t id)
{
	struct pxfer_file *m = malloc(sizeof(*m));
	int ret;

	if (!m)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	if (pxfer_rfile_compared(&s->files, id, m, &s->ok.u.ok))
		ret = file_ok(s, id, m->size);
	else
		ret = create_file(s, m);
	free(m);
	return ret;
}

/* a partial was read back: FILE_OK says what it holds, or that it was
 * discarded */
static int checked(struct recv_session *s, uint64_t id)
{
	struct pxfer_rfile *rf = pxfer_rfile_get(&s->files, id);
	char key[PXFER_PARTIAL_KEY_LEN + 1], why[PXFER_TEXT_MAX + 1];
	char q[PXFER_QUOTE_MAX], qp[PXFER_QUOTE_MAX];
	struct pxfer_err err = { 0 };
	int ret;

	if (rf->wait == PXFER_WAIT_SAME)
		return compared(s, id);
	memcpy(key, rf->part->key, sizeof(key));
	ret = pxfer_rfile_checked(&s->files, id, &s->ok.u.ok, &err);
	if (s->ok.u.ok.state == PXFER_HAVE_BAD && !s->o->quiet) {
		char part[sizeof(PXFER_STATE_DIR "/partial/.part") + PXFER_PARTIAL_KEY_LEN];

		snprintf(part, sizeof(part), "%s/partial/%s.part", PXFER_STATE_DIR, key);
		pxfer_warning("discarded the partial file %s of %s (from %s): %s; the file is sent whole",
			pxfer_quote_str(qp, sizeof(qp), part),
			pxfer_quote_str(q, sizeof(q), rf->path), s->b.cconn->peer, err.msg);
	}
	if (ret) {
		snprintf(why, sizeof(why), "cannot start its partial file anew: %s",
			 strerror(-ret));
		if (!s->o->quiet)
			pxfer_error("%s: %s", pxfer_quote_str(q, sizeof(q), rf->path), why);
		s->failed++;
		reply_status(s, PXFER_MSG_FILE_ERR, id, -ret, why);
		pxfer_rfile_drop(&s->files, id, PXFER_DROP_DISCARD);
		return 0;
	}
	return file_ok(s, id, rf->size);
}

/* the checks that are done, answered */
static int reap_checks(struct recv_session *s)
{
	struct pxfer_check_job *j;

	while (!pxfer_failed(&s->b.fail) && (j = pxfer_check_reap(&s->check)))
		if (checked(s, j->id))
			return -1;
	return pxfer_failed(&s->b.fail) ? -1 : 0;
}

/* FILE @f, with its digest if it was to follow: made, or refused */
static int answer_file(struct recv_session *s, const struct pxfer_file *f)
{
	struct pxfer_err err = { 0 };
	int ret = pxfer_path_check(f->path, f->path_len);

	if (!ret) {
		switch (f->type) {
		case PXFER_FT_DIR:
			ret = pxfer_rfile_mkdir(&s->files, f, &err);
			if (ret == -ENOMEM)
				return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
						  "out of memory");
			break;
		case PXFER_FT_SYMLINK:
			ret = pxfer_rfile_symlink(&s->files, f, &err);
			break;
		default:
			return create_file(s, f);
		}
	}
	if (ret)
		refuse_file(s, f, -ret, err.msg[0] ? err.msg : "unsafe path");
	else
		reply_status(s, PXFER_MSG_FILE_DONE, f->id, 0, NULL);
	return 0;
}

static int on_file(struct recv_session *s, const struct pxfer_file *f)
{
	struct pxfer_rfile *rf;

	if (f->id >= s->b.wel.max_files || pxfer_filetab_in_use(&s->tab, f->id))
		return -EPROTO;
	/* a chain is told whole, before any file */
	if (s->nhops < s->hops_count)
		return -EPROTO;
	s->any_file = 1;
	if (s->fwd)
		s->srv->fwd->ops->name(s->fwd, f->path);
	rf = pxfer_rfile_get(&s->files, f->id);
	if (rf->check || rf->wait)
		return -EPROTO;
	if (!(f->flags & PXFER_FILE_SUM_FOLLOWS))
		return answer_file(s, f);
	/* nothing is answered, or looked at, before its digest comes */
	if (pxfer_rfile_hold(&s->files, f))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	s->sums_due++;
	s->sum_bytes = f->size > UINT64_MAX - s->sum_bytes ? UINT64_MAX :
			s->sum_bytes + f->size;
	return 0;
}

/* the digest of a FILE that waited for it: the FILE is answered now */
static int on_file_sum(struct recv_session *s, const struct pxfer_file_sum *fs)
{
	struct pxfer_file *m;
	int ret = 0;

	if (fs->id >= s->b.wel.max_files ||
	    pxfer_rfile_get(&s->files, fs->id)->wait != PXFER_WAIT_SUM)
		return -EPROTO;
	m = malloc(sizeof(*m));
	if (!m)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	pxfer_rfile_unhold(&s->files, fs->id, fs->digest, m);
	s->sums_due--;
	if (fs->code) {
		/* the sender said why (and counts it failed) */
		s->failed++;
		reply_status(s, PXFER_MSG_FILE_ERR, fs->id, (int)fs->code,
			     "the sender could not read it");
	} else {
		ret = answer_file(s, m);
	}
	free(m);
	return ret;
}

static int on_file_end(struct recv_session *s, const struct pxfer_file_end *e)
{
	int ret;

	/* before the file can complete: whoever finishes it reads this */
	if (pxfer_filetab_in_use(&s->tab, e->id))
		memcpy(pxfer_rfile_get(&s->files, e->id)->digest, e->digest,
		       PXFER_DIGEST_LEN);
	ret = pxfer_filetab_end(&s->tab, e->id, e->bytes, e->code);

	/* an empty file was named when it came: nothing for a worker */
	if (ret > 0 && pxfer_rfile_get(&s->files, e->id)->named)
		finalize(s, e->id);
	else if (ret > 0)
		hand_on(s, e->id);
	return ret < 0 ? ret : 0;
}

static int on_fin(struct recv_session *s, const struct pxfer_fin *fin)
{
	struct pxfer_msg m = { .type = PXFER_MSG_ACK };

	if (pxfer_filetab_count(&s->tab) || pxfer_check_pending(&s->check) ||
	    s->sums_due)
		return -EPROTO;
	pxfer_rfiles_apply_dirs(&s->files);
	atomic_store(&s->fin_seen, 1);
	/* the ACK waits for the forwarding down the chain */
	if (recv_chain_fin(s))
		return 0;
	m.u.fin.files = s->files_ok;
	m.u.fin.bytes = s->bytes;
	m.u.fin.code = 0;
	if (pxfer_ctrl_queue(&s->b.ctrl, &m))
		return -ENOMEM;
	pxfer_verbose("FIN from %s: all files in; ACK", s->b.cconn->peer);
	return pxfer_session_enter(&s->b, PXFER_RECV_FINISHING);
}

/* the sender gave up data connection @l->worker */
static int on_data_lost(struct recv_session *s, const struct pxfer_data_lost *l)
{
	struct rworker *w;

	if (l->worker >= s->b.workers.n || l->seq)
		return -EPROTO;
	w = &s->w[l->worker];
	/* of a connection replaced since (both sides saw it go at once) */
	if (l->gen < w->b.gen)
		return 0;
	if (l->gen > w->b.gen || w->b.lost_heard)
		return -EPROTO;
	w->b.lost_heard = 1;
	pxfer_worker_lose(&w->b, s->b.t, -(int)l->code);
	return 0;
}

/*
 * While the sender reads its source back to check what a partial holds,
 * or hashes a file whose digest is to follow (FILE_SUM), its PINGs say
 * how far it got: a figure that grew, up to what this side offered and
 * the sizes of those files, is progress (--idle-timeout). A sender cannot
 * stretch the session further than that data.
 */
static int on_ping(struct recv_session *s, const struct pxfer_ping *p)
{
	uint64_t most = s->bytes_resumed > UINT64_MAX - s->sum_bytes ? UINT64_MAX :
			s->bytes_resumed + s->sum_bytes;

	if (p->checked > s->ping_checked && p->checked <= most) {
		s->ping_checked = p->checked;
		recv_progress(s);
	}
	return 0;
}

/* the sender sent @d->chunks chunks on data connection @d->worker: they
 * must arrive (check_sent) */
static int on_data_sent(struct recv_session *s, const struct pxfer_data_sent *d)
{
	struct rworker *w;

	if (d->worker >= s->b.workers.n)
		return -EPROTO;
	w = &s->w[d->worker];
	/* of a connection replaced since: what it sent is settled */
	if (d->gen < w->b.gen)
		return 0;
	if (d->gen > w->b.gen)
		return -EPROTO;
	/*
	 * It cannot have sent fewer than it said before. Fewer than have
	 * arrived is old news, not a lie: the data connection does not wait
	 * for the control connection, so chunks sent after the DATA_SENT
	 * may have come first.
	 */
	if (d->chunks < w->claimed)
		return -EPROTO;
	w->claimed = d->chunks;
	w->claimed_at = pxfer_now();
	return 0;
}

/*
 * Chunks the sender said it sent (DATA_SENT) that have not arrived, with
 * nothing arriving on their connection for PXFER_DATA_SENT_GRACE seconds,
 * were dropped on the way: the last chunk of a connection has no chunk
 * after it whose sequence number would show the gap.
 */
static int check_sent(struct recv_session *s)
{
	double now = pxfer_now();

	for (unsigned int i = 0; i < s->b.workers.n; i++) {
		struct rworker *w = &s->w[i];
		uint64_t t = atomic_load_explicit(&w->taken, memory_order_relaxed);
		char what[32], detail[200];

		if (t != w->taken_seen) {
			w->taken_seen = t;
			w->moved_at = now;
		}
		if (t >= w->claimed || !pxfer_worker_alive(&w->b) ||
		    now - w->claimed_at < PXFER_DATA_SENT_GRACE ||
		    now - w->moved_at < PXFER_DATA_SENT_GRACE)
			continue;
		snprintf(what, sizeof(what), "data connection %u", i);
		snprintf(detail, sizeof(detail),
			 "the sender sent %llu chunks on it, %llu arrived, and nothing more for %d s: the last were dropped on the way",
			 (unsigned long long)w->claimed, (unsigned long long)t,
			 PXFER_DATA_SENT_GRACE);
		return pxfer_session_integrity(&s->b, what, detail);
	}
	return 0;
}

/*
 * The sender's message @m, in RECEIVING: one that does not belong there
 * fails the session (engine/state.c says which do); the others are
 * handled.
 */
static int dispatch(struct recv_session *s, const struct pxfer_msg *m)
{
	if (pxfer_session_expect(&s->b, m->type))
		return -1;
	/* after the FIN, while the chain forwards: the sender waits */
	if (s->fwd_wait && m->type != PXFER_MSG_PING &&
	    m->type != PXFER_MSG_ABORT && m->type != PXFER_MSG_DATA_LOST &&
	    m->type != PXFER_MSG_DATA_SENT)
		return -EPROTO;
	if (m->type == PXFER_MSG_FILE || m->type == PXFER_MSG_FILE_END ||
	    m->type == PXFER_MSG_FIN || m->type == PXFER_MSG_FILE_SUM)
		recv_progress(s);
	switch (m->type) {
	case PXFER_MSG_FILE:
		return on_file(s, &m->u.file);
	case PXFER_MSG_FILE_SUM:
		return on_file_sum(s, &m->u.sum);
	case PXFER_MSG_FILE_END:
		return on_file_end(s, &m->u.end);
	case PXFER_MSG_FIN:
		return on_fin(s, &m->u.fin);
	case PXFER_MSG_PING:
		return on_ping(s, &m->u.ping);
	case PXFER_MSG_DATA_LOST:
		return on_data_lost(s, &m->u.lost);
	case PXFER_MSG_DATA_SENT:
		return on_data_sent(s, &m->u.sent);
	case PXFER_MSG_CHAIN:
		return recv_chain_hop(s, &m->u.hop);
	case PXFER_MSG_ABORT:
		return pxfer_session_peer_abort(&s->b, &m->u.error);
	default:
		return -EPROTO;
	}
}

static int read_control(struct recv_session *s)
{
	unsigned int n = 0;
	int ret, r;

	ret = pxfer_ctrl_fill(&s->b.ctrl);
	/* after the FIN nothing more is read */
	while (!pxfer_failed(&s->b.fail) && s->b.state.now != PXFER_RECV_FINISHING) {
		const char *what = "a malformed message";

		r = pxfer_ctrl_next(&s->b.ctrl, &s->b.msg);
		if (r == 0)
			break;
		if (r > 0) {
			what = pxfer_msg_name(s->b.msg.type);
			r = dispatch(s, &s->b.msg);
			/* replies go out as they are made, not after the batch:
			 * FILE_OK is what lets the sender's data flow */
			if (++n % REPLY_FLUSH == 0)
				pxfer_ctrl_flush(&s->b.ctrl);
		}
		if (r == -EBADMSG)
			return pxfer_session_integrity(&s->b, "the control connection",
						       "a message failed authentication: forged, replayed, reordered, or one before it dropped");
		if (r < 0)
			return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
					  "protocol error from the sender %s (%s): %s",
					  s->b.cconn->peer, what, strerror(-r));
	}
	if (s->b.state.now == PXFER_RECV_FINISHING)
		return 0;
	return pxfer_session_read_end(&s->b, ret);
}

/* ---- credits ------------------------------------------------------------- */

static int grant_credits(struct recv_session *s)
{
	struct pxfer_msg m = { .type = PXFER_MSG_CREDIT };
	struct pxfer_credit *c = &m.u.credit;

	for (unsigned int i = 0; i < s->b.workers.n; i++) {
		struct rworker *w = &s->w[i];

		/* nothing more goes on a lost connection */
		if (!pxfer_worker_alive(&w->b))
			continue;
		c->worker = i;
		pthread_mutex_lock(&w->b.lock);
		c->count = pxfer_credits_collect(&w->b.cred, c->slots,
						 PXFER_CREDIT_MAX);
		pthread_mutex_unlock(&w->b.lock);
		if (c->count && pxfer_ctrl_queue(&s->b.ctrl, &m))
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "out of memory");
	}
	return 0;
}

/* ---- the loop ------------------------------------------------------------ */

/*
 * --idle-timeout: a sender that got nothing done for so long (no chunk
 * arrived or was written, no FILE, FILE_END or FIN; PINGs are no
 * progress, but for the figure of a sender's check that grew) while the
 * receiver finished and checked no file of its own is told so
 * (ABORT) and let go, so that it cannot hold the receiver for ever.
 */
static int idle_check(struct recv_session *s)
{
	uint64_t progress = atomic_load(&s->progress);
	char text[PXFER_TEXT_MAX + 1];
	int secs = s->o->idle_timeout;
	double now = pxfer_now();

	/* a partial being read back is the receiver's own work, and so
	 * are chunks that wait to go on to the next hop of its chain */
	if (progress != s->progress_seen || atomic_load(&s->busy) ||
	    pxfer_check_pending(&s->check) || recv_chain_held(s)) {
		s->progress_seen = progress;
		s->idle_since = now;
		return 0;
	}
	/* after the FIN the chain's forwarding is this side's own work */
	if (!secs || s->b.state.now == PXFER_RECV_FINISHING || s->fwd_wait ||
	    now - s->idle_since < secs)
		return 0;
	snprintf(text, sizeof(text),
		 "idle for %d s: no file data, FILE, FILE_END or FIN arrived (the receiver's --idle-timeout)",
		 secs);
	pxfer_session_abort(&s->b, ETIMEDOUT, text, 1000);
	s->idled = !pxfer_failed(&s->b.fail);
	return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
			  "ended the session with the sender %s: %s",
			  s->b.cconn->peer, text);
}

/* seconds a sender told that its last data connection is gone has to
 * end the session itself (naming each, as only it can) */
#define ALL_LOST_WAIT	3.0

/*
 * Failover: a data connection that broke (or that the sender gave up,
 * DATA_LOST) carries nothing more; once its worker stopped taking chunks
 * off it, the sender hears how many it took (DATA_LOST) and sends the
 * rest over the others. One that broke on this side first waits a
 * second before that, in which a sender that ended the session (ABORT)
 * or went away (the control connection) says so. When no data
 * connection is left the sender hears of the last one too, and the
 * session fails ALL_LOST_WAIT seconds later if the sender did not end
 * it first.
 */
static int failover(struct recv_session *s)
{
	unsigned int alive = pxfer_workers_alive(&s->b.workers), told = 0;
	double now = pxfer_now();

	if (s->b.state.now == PXFER_RECV_FINISHING)
		return 0;
	for (unsigned int i = 0; i < s->b.workers.n; i++) {
		struct rworker *w = &s->w[i];
		int err = atomic_load(&w->b.lost);

		told += w->b.lost_told;
		if (!err || w->b.lost_told || !atomic_load(&w->b.parked))
			continue;
		if (!w->b.lost_at)
			w->b.lost_at = now;
		if (!w->b.lost_heard && now - w->b.lost_at < 1.0)
			continue;
		if (pxfer_session_send_lost(&s->b, i, w->b.gen, err, w->b.lost_seq))
			return -1;
		w->b.lost_told = 1;
		told++;
		if (!s->o->quiet && alive)
			pxfer_warning("data connection %u from %s failed (%s) after %llu chunks; the sender goes on over the %u left",
				i, w->b.conn->peer, strerror(-err),
				(unsigned long long)w->b.lost_seq, alive);
		else if (!s->o->quiet)
			pxfer_warning("data connection %u from %s failed (%s) after %llu chunks; no data connection is left",
				i, w->b.conn->peer, strerror(-err),
				(unsigned long long)w->b.lost_seq);
	}
	if (alive || told < s->b.workers.n)
		return 0;
	if (!s->all_lost_at)
		s->all_lost_at = now;
	if (now - s->all_lost_at < ALL_LOST_WAIT)
		return 0;
	return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
			  "the sender %s lost every data connection before the transfer completed",
			  s->b.cconn->peer);
}

/*
 * What arrived of a file reaches its partial's journal within about
 * PXFER_PARTIAL_AGE even when no more of it comes (a worker that adds a
 * record flushes what waited that long), so that a crash loses about
 * that much of it: looked at when due. How long the loop may wait (ms).
 */
static int partials_flush_old(struct recv_session *s)
{
	double now = pxfer_now();

	if (now >= s->partials_due) {
		s->partials_due = now + pxfer_partials_flush_old(&s->files.parts);
		/* the partials the sessions share: any of them may flush */
		if (s->files.shared) {
			double due = now + recv_shared_flush_old(s->files.shared);

			/* parked partials are looked at again soon */
			if (pxfer_rrange_sweep(s->files.shared, 0) && due > now + 1.0)
				due = now + 1.0;
			if (due < s->partials_due)
				s->partials_due = due;
		}
	}
	return s->partials_due - now < 1.0 ? (int)((s->partials_due - now) * 1000) + 1 : 1000;
}

/* RECEIVING until the FIN (FINISHING: ACK), or a failure */
int recv_coordinate(struct recv_session *s)
{
	int wait = 1000;
	uint32_t id;

	s->b.ctrl.read_pause = REPLY_PAUSE;
	s->idle_since = pxfer_now();
	if (grant_credits(s))
		return -1;
	while (!pxfer_failed(&s->b.fail) &&
	       s->b.state.now != PXFER_RECV_FINISHING) {
		if (pxfer_session_wait(&s->b, pxfer_session_data_lost_any(&s->b) ? 200 : wait,
				       "interrupted; what arrived of incomplete files is kept for a later session") ||
		    read_control(s))
			break;
		while (pxfer_doneq_pop(&s->done, &id))
			finalize(s, id);
		if (reap_checks(s))
			break;
		wait = partials_flush_old(s);
		if (failover(s))
			break;
		recv_rejoin(s);
		if (check_sent(s) || pxfer_session_keepalive(&s->b) ||
		    idle_check(s) || grant_credits(s))
			break;
		if (s->fwd_wait && recv_chain_wait(s) < 0)
			break;
	}
	if (s->b.state.now == PXFER_RECV_FINISHING &&
	    pxfer_session_flush(&s->b, PXFER_HANDSHAKE_MS))
		pxfer_warning("could not confirm completion to the sender %s",
			s->b.cconn->peer);
	return pxfer_failed(&s->b.fail) ? -1 : 0;
}
