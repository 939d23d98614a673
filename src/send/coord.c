// SPDX-License-Identifier: MIT
/*
 * The sender's coordinator: the calling thread, which owns the control
 * connection once the session is set up. Each turn it feeds the manifest
 * (FILE messages), reads the receiver's replies (FILE_OK hands a file to
 * the scheduler, CREDIT grants slots to a worker, FILE_DONE/FILE_ERR end
 * a file), and when the walk is over and no file is in flight it sends
 * FIN and waits for the ACK.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "core/log.h"
#include "core/sys.h"
#include "send/send.h"
#include "send/sender.h"

/* the runs a FILE_OK offers must lie inside the file */
static int runs_fit(const struct pxfer_file_ok *k, uint64_t size)
{
	const struct pxfer_held_run *r;

	if (!k->nrun)
		return 1;
	r = &k->run[k->nrun - 1];	/* sorted and disjoint: the codec checked */
	return r->off <= size && r->len <= size - r->off;
}

static void wake_workers(struct send_session *s)
{
	for (unsigned int i = 0; i < s->b.workers.n; i++)
		pxfer_wake(s->w[i].b.wake_fd);
}

/* the receiver's runs of file @e are taken up: only the rest is sent */
static void take_held(struct send_session *s, struct sentry *e)
{
	char q[PXFER_QUOTE_MAX];

	e->f.held = e->held;
	s->st->bytes_resumed += e->held_bytes;
	s->there += e->held_bytes;
	pxfer_verbose("%s: the receiver holds %llu bytes of it from before; sending the rest",
		pxfer_quote_str(q, sizeof(q), e->f.src),
		(unsigned long long)e->held_bytes);
}

/*
 * What the receiver holds of file @e, for the scheduler: FILE_OK @k's
 * runs, and for a range what lies outside it (another session's). The
 * index of @k's first run in e->held, or UINT_MAX when out of memory.
 */
static unsigned int held_runs(struct sentry *e, const struct pxfer_file_ok *k)
{
	uint64_t end = e->f.range_off + e->f.range_len;
	unsigned int n = 0, first;

	e->held = malloc((k->nrun + 2u) * sizeof(*e->held));
	if (!e->held)
		return UINT_MAX;
	if (e->f.range_len && e->f.range_off)
		e->held[n++] = (struct pxfer_held_run){ 0, e->f.range_off, 1 };
	first = n;
	memcpy(e->held + n, k->run, k->nrun * sizeof(*e->held));
	n += k->nrun;
	if (e->f.range_len && end < e->f.size)
		e->held[n++] = (struct pxfer_held_run){
			end, e->f.size - end, 1
		};
	e->f.nheld = n;
	return first;
}

/* a range's FILE_OK runs lie inside the range */
static int runs_in_range(const struct sentry *e, const struct pxfer_file_ok *k)
{
	uint64_t end = e->f.range_off + e->f.range_len;

	if (!e->f.range_len || !k->nrun)
		return 1;
	return k->run[0].off >= e->f.range_off &&
	       k->run[k->nrun - 1].off + k->run[k->nrun - 1].len <= end;
}

/*
 * The receiver holds part of file @e (a partial from an earlier session).
 * It is taken up, unless the source's data in those runs no longer hashes
 * to what the receiver recorded (checked unless --resume=trust, on the
 * check threads: the file waits for it, the session does not; see
 * checked()). 1: the check is under way.
 */
static int take_partial(struct send_session *s, struct sentry *e,
			const struct pxfer_file_ok *k)
{
	struct pxfer_check_job *j;
	unsigned int first;
	int ret;

	first = held_runs(e, k);
	if (first == UINT_MAX)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	e->held_bytes = k->held;
	if (s->o->resume_trust) {
		take_held(s, e);
		return 0;
	}
	memcpy(e->want, k->digest, PXFER_DIGEST_LEN);
	j = calloc(1, sizeof(*j));
	if (!j)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	e->check = j;
	/* the runs fit the file (runs_fit): a unit of 0 is all that is left;
	 * a range's, not what lies outside it */
	ret = pxfer_check_job_runs(j, e->held + first, k->nrun);
	if (ret)
		return -EPROTO;
	j->fd = e->f.fd;
	j->id = k->id;
	ret = pxfer_check_submit(&s->check, j);
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot start the threads that check partial files: %s",
				  strerror(-ret));
	return 1;
}

/* file @e goes to the workers, or ends here when it has nothing to send */
static void file_go(struct send_session *s, struct sentry *e, int *work)
{
	/* an empty file has no chunk for a worker to send: it ends here (no
	 * worker has seen it, so it needs no scheduler's lock) */
	if (!e->f.size && e->f.fd < 0) {
		e->f.ended = 1;
		pxfer_fileend_one(&s->ends, &e->f);
		return;
	}
	pxfer_sched_add(&s->sched, &e->f);
	*work = 1;
}

/*
 * The check of file @j->id is done: the receiver's runs are taken up, or
 * (the source no longer hashes to what the receiver recorded there) the
 * file ends at once, the receiver discards its partial, and the file is
 * sent whole again in this session.
 */
static void checked(struct send_session *s, struct pxfer_check_job *j,
		    int *work)
{
	struct sentry *e = send_manifest_get(&s->man, j->id);
	struct pxfer_digest want;
	char q[PXFER_QUOTE_MAX];

	pxfer_digest_unwire(&want, e->want);
	if (j->err || !pxfer_digest_eq(&want, &j->sum)) {
		pxfer_info("pxfer: %s: the receiver's partial copy does not match the source%s; it is sent whole",
		     pxfer_quote_str(q, sizeof(q), e->f.src),
		     j->err ? " (it could not be read)" : "");
		e->f.err = PXFER_CODE_CHANGED;
		e->partial_bad = 1;
		e->f.nheld = 0;
	} else {
		take_held(s, e);
	}
	free(j);
	e->check = NULL;
	file_go(s, e, work);
}

/*
 * File @e was hashed (--checksum): its FILE_SUM says the digest, or that
 * the file could not be read (the receiver refuses it; said here).
 */
static void summed(struct send_session *s, struct sentry *e,
		   struct pxfer_check_job *j)
{
	struct pxfer_msg m = { .type = PXFER_MSG_FILE_SUM };
	char q[PXFER_QUOTE_MAX];

	m.u.sum.id = e->f.id;
	if (j->err) {
		pxfer_error("cannot read %s: %s", pxfer_quote_str(q, sizeof(q), e->f.src),
		      j->err == -ENODATA ? "it shrank while being read" :
		      strerror(-j->err));
		e->f.err = -j->err;
		m.u.sum.code = (uint32_t)-j->err;
	} else {
		pxfer_digest_wire(m.u.sum.digest, &j->sum);
	}
	free(j->pieces);
	free(j);
	e->check = NULL;
	e->sum_due = 0;
	if (pxfer_ctrl_queue(&s->b.ctrl, &m))
		pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
}

/* the checks that are done: their files go on */
static void reap_checks(struct send_session *s)
{
	struct pxfer_check_job *j;
	int work = 0;

	while ((j = pxfer_check_reap(&s->check))) {
		struct sentry *e = send_manifest_get(&s->man, j->id);

		if (e->sum_due)
			summed(s, e, j);
		else
			checked(s, j, &work);
	}
	if (work)
		wake_workers(s);
}

/* tell the session's source that entry @e is over (once) */
static void source_ended(struct send_session *s, struct sentry *e, int code,
			 int again, int same)
{
	if (!e->tagged)
		return;
	e->tagged = 0;
	s->man.held = 0;	/* the source may have more now */
	s->source->ops->ended(s->source, e->tag, &(struct send_ended){
		.code = code, .again = again, .same = same, .bytes = e->f.sent });
}

static int file_ok_go(struct send_session *s, struct sentry *e,
		      const struct pxfer_file_ok *k, int *work);

static int on_file_ok(struct send_session *s, const struct pxfer_file_ok *k,
		      int *work)
{
	struct sentry *e = send_manifest_get(&s->man, k->id);
	int ret;

	/* a FILE whose digest follows is answered once it came */
	if (!e || e->type != PXFER_FT_REG || e->ok || e->sum_due ||
	    !runs_fit(k, e->f.size) || !runs_in_range(e, k))
		return -EPROTO;
	e->ok = 1;
	/* a range: what lies outside it is not this session's to send */
	if (e->f.range_len && k->state != PXFER_HAVE_PART &&
	    k->state != PXFER_HAVE_SAME) {
		if (held_runs(e, k) == UINT_MAX)
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "out of memory");
		e->f.held = e->held;
	}
	/* a range forwarded from the ring: it may not need its file */
	if (e->relay) {
		ret = send_relay_answer(s, e, k, work);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	return file_ok_go(s, e, k, work);
}

/* file @e was answered @k: it goes to the workers, or is done with */
static int file_ok_go(struct send_session *s, struct sentry *e,
		      const struct pxfer_file_ok *k, int *work)
{
	char q[PXFER_QUOTE_MAX];
	int ret;

	switch (k->state) {
	case PXFER_HAVE_SAME:
		/* the receiver is done with it: no FILE_END, no FILE_DONE */
		s->st->files_same++;
		s->st->bytes_same += e->f.size;
		s->there += e->f.size;
		source_ended(s, e, 0, 0, 1);
		send_manifest_done(&s->man, k->id);
		return 0;
	case PXFER_HAVE_PART:
		ret = take_partial(s, e, k);
		if (ret)
			return ret < 0 ? ret : 0;
		break;
	case PXFER_HAVE_STALE:
	case PXFER_HAVE_BAD:
		pxfer_info("pxfer: %s: the receiver's partial copy %s; it is sent whole",
		     pxfer_quote_str(q, sizeof(q), e->f.src),
		     k->state == PXFER_HAVE_STALE ? "was of another version of the file"
						  : "failed its checks and was discarded");
		break;
	default:
		break;
	}
	file_go(s, e, work);
	return 0;
}

/*
 * Does a file that failed get another go? One that changed while it was
 * sent (or whose partial did not match) is sent again in this session,
 * once the walk is over, once (a receiver run with --once serves no
 * second session); one that another session of the receiver was writing
 * gets the next retry (1). 0: it failed. -1: the session failed.
 */
static int again(struct send_session *s, struct sentry *e,
		 const struct pxfer_file_status *fs)
{
	char q[PXFER_QUOTE_MAX];

	if (e->type != PXFER_FT_REG)
		return 0;
	/* a job's rank 0 gives it out again (to a session of its choice) */
	if (s->source && (e->f.err == PXFER_CODE_CHANGED || fs->code == EBUSY))
		return 3;
	if (e->f.err == PXFER_CODE_CHANGED && !s->pass && !e->resent) {
		/* a partial that did not match was said (take_partial): the
		 * source changed before this session, not while it was sent */
		if (!e->partial_bad) {
			s->st->files_changed++;
			pxfer_warning("%s changed while being sent; it will be sent again",
				pxfer_quote_str(q, sizeof(q), e->f.src));
		}
		if (send_manifest_resend(&s->man, fs->id))
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  "out of memory");
		return 2;
	}
	if (fs->code != EBUSY || e->ok || s->o->retries <= 0)
		return 0;
	pxfer_info("pxfer: %s: another session is writing it on the receiver; it is tried again later",
	     pxfer_quote_str(q, sizeof(q), e->f.src));
	return 1;
}

static int on_file_status(struct send_session *s, uint16_t type,
			  const struct pxfer_file_status *fs)
{
	struct sentry *e = send_manifest_get(&s->man, fs->id);
	int again_ret = 0;

	/* (nor is it freed while its hashing reads it) */
	if (!e || e->sum_due)
		return -EPROTO;
	if (type == PXFER_MSG_FILE_DONE && e->type == PXFER_FT_REG &&
	    (!e->ok || !pxfer_sched_ended(&s->sched, &e->f)))
		return -EPROTO;
	if (type == PXFER_MSG_FILE_ERR && e->ok)
		return -EPROTO;
	if (fs->code && (again_ret = again(s, e, fs)) < 0) {
		return -1;
	} else if (fs->code && again_ret == 1) {
		s->again++;
	} else if (fs->code && again_ret == 2) {
		/* in flight again soon, under a new id */
	} else if (fs->code && again_ret == 3) {
		source_ended(s, e, (int)fs->code, 1, 0);
	} else if (fs->code) {
		char why[PXFER_ESCAPE_LEN(PXFER_TEXT_MAX)], q[PXFER_QUOTE_MAX];

		pxfer_escape_reason(why, sizeof(why), fs->text, fs->text_len,
				    fs->code);
		if (e->type == PXFER_FT_REG && e->f.err == PXFER_CODE_CHANGED) {
			pxfer_error("%s changed while being sent, again; it was not sent",
			      pxfer_quote_str(q, sizeof(q), e->f.src));
		} else if (!(e->type == PXFER_FT_REG && e->f.err)) {
			/* a read error was reported when it happened */
			pxfer_error("%s failed on the receiver: %s",
			      pxfer_quote_str(q, sizeof(q), e->f.src), why);
		}
		if (fs->code == ENOSPC || fs->code == EDQUOT)
			s->nospace++;
		s->st->files_failed++;
		source_ended(s, e, (int)fs->code, 0, 0);
	} else if (e->type == PXFER_FT_REG) {
		s->st->files++;
		s->st->bytes += e->f.sent;
		s->done_size += e->f.size;
	} else if (e->type == PXFER_FT_DIR) {
		s->st->dirs++;
	} else {
		s->st->links++;
	}
	if (!fs->code)
		source_ended(s, e, 0, 0, 0);
	send_manifest_done(&s->man, fs->id);
	return 0;
}

/* the receiver stopped data connection @l->worker, and took its chunks
 * below @l->seq */
static int on_data_lost(struct send_session *s, const struct pxfer_data_lost *l)
{
	struct sworker *w;

	if (l->worker >= s->b.workers.n)
		return -EPROTO;
	w = &s->w[l->worker];
	/* its seq is checked once the worker parked */
	if (w->b.lost_heard || l->gen != w->b.gen)
		return -EPROTO;
	w->b.lost_heard = 1;
	w->b.lost_seq = l->seq;
	pxfer_worker_lose(&w->b, s->b.t, -(int)l->code);
	return 0;
}

static int on_credit(struct send_session *s, const struct pxfer_credit *c)
{
	struct sworker *w;
	int ret = 0;

	if (c->worker >= s->b.workers.n)
		return -EPROTO;
	w = &s->w[c->worker];
	pthread_mutex_lock(&w->b.lock);
	for (unsigned int i = 0; i < c->count && !ret; i++)
		ret = pxfer_credits_grant(&w->b.cred, c->slots[i]);
	pthread_mutex_unlock(&w->b.lock);
	pxfer_wake(w->b.wake_fd);
	return ret;
}

/*
 * How a hop after the receiver ended: one report for each of the hops it
 * was given (CHAIN), once; -EPROTO for any other
 */
static int on_chain_report(struct send_session *s,
			   const struct pxfer_chain_report *r)
{
	struct send_pass *p = s->p;
	unsigned int i;

	for (i = 0; i < p->nchain && p->chain[i].pos != r->pos; i++)
		;
	if (i == p->nchain || !p->reports)
		return -EPROTO;
	for (unsigned int k = 0; k < p->nreports; k++)
		if (p->reports[k].pos == r->pos)
			return -EPROTO;
	p->reports[p->nreports++] = *r;
	return 0;
}

/*
 * A receiver that takes nothing (no chunk, no file done) for
 * p->stall_secs while files are in flight is stalled: in a chain it is
 * cut out (docs/broadcast.md). One that waits for nothing, or only for
 * its own forwarding after the FIN, is not judged.
 */
static int stall_check(struct send_session *s)
{
	uint64_t now_seen = atomic_load(&s->bytes_sent) + s->st->files +
			    s->st->files_failed + s->st->files_same;
	double now = pxfer_now();
	int secs = s->p->stall_secs;

	if (!s->p->stall_secs || s->b.state.now != PXFER_SEND_STREAMING ||
	    !pxfer_fileids_in_flight(&s->man.ids) || now_seen != s->stall_seen) {
		s->stall_seen = now_seen;
		s->stall_since = now;
		return 0;
	}
	/*
	 * A forwarding hop that says chunks wait for its own hop is not the
	 * one stalled: the hop after it is, which that hop cuts out within
	 * its bound. Each hop after it may take as long, at most.
	 */
	if (now - (s->held_at > s->stall_since ? s->held_at : s->stall_since) < secs &&
	    now - s->stall_since < (double)secs * (1 + s->p->nchain))
		return 0;
	s->p->stalled = 1;
	return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
			  "the receiver %s took nothing for %d s with files in flight: it is stalled",
			  s->b.cconn->peer, secs);
}

/*
 * The receiver's message @m, where the session is (STREAMING or
 * FINISHING): one that does not belong there fails the session
 * (engine/state.c says which do); the others are handled.
 */
static int dispatch(struct send_session *s, const struct pxfer_msg *m,
		    int *work)
{
	if (pxfer_session_expect(&s->b, m->type))
		return -1;
	switch (m->type) {
	case PXFER_MSG_FILE_OK:
		return on_file_ok(s, &m->u.ok, work);
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		return on_file_status(s, m->type, &m->u.status);
	case PXFER_MSG_CREDIT:
		return on_credit(s, &m->u.credit);
	case PXFER_MSG_PING:
		/* a hop whose chunks wait for the hop after it says so:
		 * waiting on its own hop, it is not the one stalled */
		if (s->p->nchain && m->u.ping.checked > s->held_pings) {
			s->held_pings = m->u.ping.checked;
			s->held_at = pxfer_now();
		}
		return 0;
	case PXFER_MSG_DATA_LOST:
		return on_data_lost(s, &m->u.lost);
	case PXFER_MSG_ACK:
		pxfer_verbose("ACK from the receiver");
		return pxfer_session_enter(&s->b, PXFER_SEND_DONE);
	case PXFER_MSG_CHAIN_REPORT:
		return on_chain_report(s, &m->u.report);
	case PXFER_MSG_ABORT:
		return pxfer_session_peer_abort(&s->b, &m->u.error);
	default:
		return -EPROTO;
	}
}

static int read_control(struct send_session *s)
{
	int ret, work = 0;

	ret = pxfer_ctrl_fill(&s->b.ctrl);
	/* after the ACK nothing more is read */
	while (!pxfer_failed(&s->b.fail) && s->b.state.now != PXFER_SEND_DONE) {
		int r = pxfer_ctrl_next(&s->b.ctrl, &s->b.msg);

		if (r == 0)
			break;
		if (r > 0)
			r = dispatch(s, &s->b.msg, &work);
		if (r == -EBADMSG) {
			pxfer_session_integrity(&s->b, "the control connection",
						"a message failed authentication: forged, replayed, reordered, or one before it dropped");
			break;
		}
		if (r < 0) {
			pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
				   "protocol error from the receiver %s: %s",
				   s->b.cconn->peer, strerror(-r));
			break;
		}
	}
	if (work)
		wake_workers(s);
	if (ret == -EPIPE && s->b.state.now == PXFER_SEND_DONE)
		return 0;
	return pxfer_session_read_end(&s->b, ret);
}

void send_draw_progress(struct send_session *s, int final)
{
	uint64_t done = s->st->files + s->st->files_failed + s->st->files_same;

	/* what the check threads read back, while they do */
	s->prog.check_done = pxfer_check_done(&s->check);
	s->prog.check_total = pxfer_check_pending(&s->check) ? s->check.queued : 0;
	pxfer_progress_draw(&s->prog, atomic_load(&s->bytes_sent),
			    s->man.bytes_walked, s->there, done, s->man.files_walked,
			    !send_manifest_done_all(&s->man), final);
}

/* the rail worker @w runs on, for messages */
/*
 * The session fails only when no data connection is left: it names each
 * with why it failed.
 */
static int all_lost(struct send_session *s)
{
	char why[600];
	size_t n = 0;

	why[0] = 0;
	for (unsigned int i = 0; i < s->b.workers.n && n < sizeof(why); i++) {
		struct sworker *w = &s->w[i];

		n += snprintf(why + n, sizeof(why) - n, "%s%u (%s): %s",
			      i ? "; " : "", i, send_rail_name(s, w),
			      strerror(-atomic_load(&w->b.lost)));
	}
	return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
			  "lost every data connection to the receiver %s: %s",
			  s->b.cconn->peer, why);
}

/*
 * Failover, each turn: a worker whose connection broke is told to the
 * receiver (DATA_LOST); once its thread is done with it and the
 * receiver said how many of its chunks it took, the rest go to the
 * queue the other workers send from first.
 */
static int failover(struct send_session *s)
{
	unsigned int alive = pxfer_workers_alive(&s->b.workers), queued = 0;

	/* after FIN every file is in: nothing is left to go anywhere */
	if (s->b.state.now != PXFER_SEND_STREAMING)
		return 0;
	for (unsigned int i = 0; i < s->b.workers.n; i++) {
		struct sworker *w = &s->w[i];
		int n;

		if (pxfer_worker_alive(&w->b) || w->b.retired)
			continue;
		/* none left: a receiver that ended the session says why in
		 * its ABORT, which gets a second to come */
		if (!alive && !s->all_lost_at)
			s->all_lost_at = pxfer_now();
		if (!alive)
			return pxfer_now() - s->all_lost_at < 1.0 ? 0 : all_lost(s);
		if (!w->b.lost_told && !w->b.lost_heard) {
			if (pxfer_session_send_lost(&s->b, i, w->b.gen,
						    atomic_load(&w->b.lost), 0))
				return -1;
			w->b.lost_told = 1;
		}
		if (!atomic_load(&w->b.parked) || !w->b.lost_heard)
			continue;
		/* the receiver cannot have taken more than was sent */
		if (w->b.lost_seq > w->seq)
			return pxfer_fail(&s->b.fail, PXFER_EXIT_NET,
					  "protocol error from the receiver %s: it took %llu chunks on data connection %u, of %llu sent",
					  s->b.cconn->peer,
					  (unsigned long long)w->b.lost_seq, i,
					  (unsigned long long)w->seq);
		n = send_worker_requeue(s, w);
		if (n < 0)
			return -1;
		w->b.retired = 1;
		queued += n;
		pxfer_warning("data connection %u (%s) failed: %s; its %d chunk(s) in flight go again over the %u left",
			i, send_rail_name(s, w), strerror(-atomic_load(&w->b.lost)), n, alive);
	}
	if (queued)
		wake_workers(s);
	return 0;
}

static int send_fin(struct send_session *s)
{
	struct pxfer_msg fin = { .type = PXFER_MSG_FIN };

	fin.u.fin.files = s->st->files;
	fin.u.fin.bytes = s->st->bytes;
	if (pxfer_ctrl_queue(&s->b.ctrl, &fin))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	pxfer_verbose("all data sent; waiting for the receiver's ACK");
	return pxfer_session_enter(&s->b, PXFER_SEND_FINISHING);
}

/*
 * A data connection that has sent nothing for PXFER_DATA_SENT_QUIET
 * seconds says how many chunks it sent (DATA_SENT), once for each count:
 * the last chunk on a connection has nothing after it to show that it
 * was dropped on the way, and a receiver that knows the count does not
 * wait for it for its idle timeout.
 */
static int tell_sent(struct send_session *s)
{
	struct pxfer_msg m = { .type = PXFER_MSG_DATA_SENT };
	double now = pxfer_now();

	for (unsigned int i = 0; i < s->b.workers.n; i++) {
		struct sworker *w = &s->w[i];
		uint64_t n = atomic_load_explicit(&w->sent, memory_order_relaxed);

		if (!pxfer_worker_alive(&w->b))
			continue;
		if (n != w->sent_seen) {
			w->sent_seen = n;
			w->sent_since = now;
			continue;
		}
		if (n == w->sent_told || now - w->sent_since < PXFER_DATA_SENT_QUIET)
			continue;
		m.u.sent.worker = i;
		m.u.sent.gen = w->b.gen;
		m.u.sent.chunks = n;
		if (pxfer_ctrl_queue(&s->b.ctrl, &m))
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
		w->sent_told = n;
	}
	return 0;
}

/*
 * STREAMING until the walk is over and no file is in flight, then
 * FINISHING (FIN) until the ACK (DONE), or a failure.
 */
int send_coordinate(struct send_session *s)
{
	int live = s->source && s->source->ops->attach;

	if (live)
		s->source->ops->attach(s->source, s->b.ctrl.wake_fd);
	s->stall_since = pxfer_now();
	while (!pxfer_failed(&s->b.fail) && s->b.state.now != PXFER_SEND_DONE) {
		/* a live source may have more now, whatever ended */
		if (live)
			s->man.held = 0;
		if (send_manifest_feed(s))
			break;
		if (s->b.state.now == PXFER_SEND_STREAMING &&
		    send_manifest_over(&s->man) && send_fin(s))
			break;
		if (pxfer_session_wait(&s->b, send_manifest_can_feed(s) ? 0 :
				       s->prog.enabled || pxfer_session_data_lost_any(&s->b) ? 200 : 1000,
				       "interrupted; the same command run again sends only what is missing"))
			break;
		if (read_control(s))
			break;
		reap_checks(s);
		/* chunks that came to go on from a ring wake the workers */
		if ((s->relay_waiting && send_relay_poll(s, file_ok_go) > 0) ||
		    (s->relay && pxfer_relay_ready(s->relay)))
			wake_workers(s);
		if (s->relay)
			send_relay_ends(s);
		/* the receiver counts a check that goes on as progress */
		s->b.ctrl.ping_checked = pxfer_check_done(&s->check);
		if (failover(s) || send_rejoin(s) || tell_sent(s) ||
		    pxfer_session_keepalive(&s->b) || stall_check(s))
			break;
		send_draw_progress(s, 0);
	}
	if (live)
		s->source->ops->attach(s->source, -1);
	return pxfer_failed(&s->b.fail) ? -1 : 0;
}
