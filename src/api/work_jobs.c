// SPDX-License-Identifier: MIT
/*
 * The work service's units: a queue per receiver (what is cut or handed
 * back, waiting to be pulled), a lease list per connection (what it
 * pulled and has not reported), the ranges of each large file (kept until
 * the end, since a lost receiver's ranges are all sent again to another),
 * and the job's figures. Run by the service thread alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/work_serve.h"
#include "core/log.h"
#include "core/sys.h"
#include "pxfer/pxfer.h"

/* ---- lists -------------------------------------------------------------- */

static void list_unlink(struct work_node **head, struct work_node **tail,
			struct work_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		*head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else if (tail)
		*tail = n->prev;
	n->prev = n->next = NULL;
}

static void q_unlink(struct pxfer_work_server *s, struct work_node *n)
{
	struct work_queue *q = &s->q[n->u.recv];

	list_unlink(&q->head, &q->tail, n);
	q->bytes -= n->u.bytes;
}

static void q_push(struct pxfer_work_server *s, uint32_t r,
		   struct work_node *n, int front)
{
	struct work_queue *q = &s->q[r];

	n->u.recv = r;
	n->state = N_QUEUED;
	q->bytes += n->u.bytes;
	if (front) {
		n->prev = NULL;
		n->next = q->head;
		if (q->head)
			q->head->prev = n;
		else
			q->tail = n;
		q->head = n;
	} else {
		n->next = NULL;
		n->prev = q->tail;
		if (q->tail)
			q->tail->next = n;
		else
			q->head = n;
		q->tail = n;
	}
}

static void lease_push(struct work_node **leases, struct work_node *n)
{
	n->state = N_LEASED;
	n->prev = NULL;
	n->next = *leases;
	if (*leases)
		(*leases)->prev = n;
	*leases = n;
}

/* the live receiver with the fewest bytes queued, or -1: none is live */
static int fewest(const struct pxfer_work_server *s)
{
	int best = -1;

	for (uint32_t r = 0; r < s->nrecv; r++)
		if (!s->q[r].lost &&
		    (best < 0 || s->q[r].bytes < s->q[best].bytes))
			best = (int)r;
	return best;
}

static void node_free(struct work_node *n)
{
	pxfer_unit_release(&n->u);
	free(n);
}

/* @n (unlinked) is not sent: a group's stays with its group */
static void drop(struct pxfer_work_server *s, struct work_node *n)
{
	s->outstanding--;
	if (n->g)
		n->state = N_DROPPED;
	else
		node_free(n);
}

/* ---- cutting -------------------------------------------------------------- */

static int emit(void *arg, struct pxfer_unit *u, uint64_t nrange)
{
	struct pxfer_work_server *s = arg;
	struct work_node *n = calloc(1, sizeof(*n));
	struct work_group *g;

	if (!n)
		goto out_nomem;
	if (u->kind == PXFER_UNIT_RANGE) {
		if (u->e[0].off == 0) {
			g = calloc(1, sizeof(*g));
			if (g)
				g->v = calloc(nrange, sizeof(*g->v));
			if (!g || !g->v) {
				free(g);
				goto out_nomem;
			}
			g->nrange = nrange;
			g->recv = u->recv;
			g->next = s->groups;
			s->groups = g;
		}
		g = s->groups;
		g->v[g->ncut++] = n;
		n->g = g;
	}
	n->u = *u;
	q_push(s, u->recv, n, 0);
	s->outstanding++;
	atomic_fetch_add(&s->p_total, u->bytes);
	if (u->kind == PXFER_UNIT_FILES) {
		for (unsigned int i = 0; i < u->n; i++)
			if (u->e[i].kind == PXFER_WALK_FILE)
				atomic_fetch_add(&s->p_files_total, 1);
	} else if (u->kind == PXFER_UNIT_RANGE && u->e[0].off == 0)
		atomic_fetch_add(&s->p_files_total, 1);
	return 0;

out_nomem:
	free(n);
	pxfer_unit_release(u);
	return -ENOMEM;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void finish(struct pxfer_work_server *s)
{
	struct pxfer_job_outcome *o = &s->outcome;
	int lost = 0;

	s->over = 1;
	s->over_ms = now_ms();
	for (uint32_t r = 0; r < s->nrecv; r++) {
		struct work_node *n;

		lost |= s->q[r].lost;
		while ((n = s->q[r].head)) {
			q_unlink(s, n);
			drop(s, n);
		}
	}
	o->files_failed += s->cut.files_failed;
	o->files_skipped = s->cut.files_skipped;
	o->status = s->status;
	if (!o->status && (s->cut.files_failed || s->cut.failed))
		o->status = PXFER_EXIT_FAIL;
	/* a lost receiver whose files the others took fails nothing; with
	 * none left, what was not sent is lost */
	if (!o->status && lost && fewest(s) < 0)
		o->status = PXFER_EXIT_NET;
	pxfer_verbose("work service: the job is over: %llu units, %llu handed out again, status %d",
		      (unsigned long long)o->units,
		      (unsigned long long)o->units_again, o->status);
}

/* the job moves on: directories once all else is done, then the end */
static void check_phase(struct pxfer_work_server *s)
{
	atomic_store(&s->p_walking, !s->cut.walked);
	if (s->over)
		return;
	if (fewest(s) < 0) {
		finish(s);
		return;
	}
	if (!s->cut.walked || s->outstanding)
		return;
	if (!s->dirs_phase) {
		s->dirs_phase = 1;
		for (uint32_t r = 0; r < s->nrecv; r++) {
			if (s->q[r].lost)
				continue;
			if (pxfer_work_cut_dirs(&s->cut, r, emit, s)) {
				pxfer_error("work service: out of memory for the directories' units");
				s->cut.failed = 1;
			}
		}
		if (s->outstanding)
			return;
	}
	finish(s);
}

/* ---- what the connections ask ------------------------------------------- */

/* the first unit of receiver @r's queue that may be handed out now */
static struct work_node *ready(struct pxfer_work_server *s, uint32_t r)
{
	double now = 0;

	for (struct work_node *n = s->q[r].head; n; n = n->next) {
		if (!n->not_before)
			return n;
		if (!now)
			now = pxfer_now();
		if (n->not_before <= now)
			return n;
	}
	return NULL;
}

/* the units one connection holds (a few: rank_ahead at most) */
static uint32_t leases_count(const struct work_node *n)
{
	uint32_t k = 0;

	for (; n; n = n->next)
		k++;
	return k;
}

static void lease(struct pxfer_work_server *s, struct work_node *n,
		  uint32_t r, struct work_node **leases,
		  struct pxfer_work_msg *a)
{
	q_unlink(s, n);
	n->u.recv = r;
	s->q[r].leased++;
	lease_push(leases, n);
	a->type = PXFER_WORK_UNIT;
	a->u.unit = n->u;	/* the node's: the answer does not own it */
}

int pxfer_work_jobs_pull(struct pxfer_work_server *s, uint32_t rank,
			 uint32_t recv, struct work_node **leases,
			 struct pxfer_work_msg *a)
{
	int ret;

	struct work_node *n;

	memset(a, 0, sizeof(*a));
	if (!s->over && !s->q[recv].lost && !ready(s, recv) &&
	    !s->cut.walked) {
		ret = pxfer_work_cut_more(&s->cut, recv, emit, s);
		if (ret < 0) {
			/* the walk failed (said), or memory: no more units */
			s->cut.walked = 1;
			s->cut.failed = 1;
		}
	}
	if (!s->q[recv].head)
		check_phase(s);
	if (s->over || s->q[recv].lost)
		a->type = PXFER_WORK_NODATA;
	else if (s->q[recv].leased >= s->recv_ahead ||
		 leases_count(*leases) >= s->rank_ahead)
		a->type = PXFER_WORK_WAIT;
	else if ((n = ready(s, recv)))
		lease(s, n, recv, leases, a);
	else
		a->type = PXFER_WORK_WAIT;
	return 0;
}

/* the first receiver not lost, or -1 */
static int first_live(const struct pxfer_work_server *s)
{
	for (uint32_t r = 0; r < s->nrecv; r++)
		if (!s->q[r].lost)
			return (int)r;
	return -1;
}

/* a unit done, or failed, for good: its figures join the job's */
static void apply(struct pxfer_work_server *s, uint32_t rank,
		  struct work_node *n, const struct pxfer_unit_result *r)
{
	struct pxfer_job_outcome *o = &s->outcome;
	struct work_group *g = n->g;
	uint32_t t = n->u.recv;

	s->outstanding--;
	if (r->status && !s->status)
		s->status = r->status;
	o->units++;
	o->rank[rank].units++;
	o->rank[rank].ranges += n->u.kind == PXFER_UNIT_RANGE;
	atomic_fetch_add(&s->p_done, r->bytes + r->bytes_same);
	atomic_fetch_add(&s->p_there, r->bytes_same);
	if (n->u.kind == PXFER_UNIT_FILES)
		atomic_fetch_add(&s->p_files_done, r->files + r->files_same +
				 r->files_failed);
	o->bytes += r->bytes;
	o->bytes_same += r->bytes_same;
	o->recv[t].bytes += r->bytes;
	if (!g) {
		o->files += r->files;
		o->files_failed += r->files_failed;
		o->files_same += r->files_same;
		/* every receiver makes every directory: count them once */
		if (n->u.kind != PXFER_UNIT_DIRS || (int)t == first_live(s))
			o->dirs += r->dirs;
		o->links += r->links;
		o->rank[rank].files += r->files;
		o->recv[t].files += r->files;
		node_free(n);
		return;
	}
	n->state = N_DONE;
	n->applied = *r;
	g->ndone++;
	g->failed |= r->files_failed || r->status;
	g->same += r->files_same ? 1 : 0;
	if (g->ndone < g->nrange)
		return;
	g->counted = 1;
	atomic_fetch_add(&s->p_files_done, 1);
	if (g->failed) {
		o->files_failed++;
		return;
	}
	/* a file all of whose ranges the receiver had is found the same;
	 * as a whole file's, its count is one or the other */
	if (g->same == g->nrange) {
		o->files_same++;
		return;
	}
	o->files++;
	o->recv[t].files++;
	o->rank[rank].files++;
	g->rank = rank;
}

/* the figures of a range done on a receiver since lost, taken back */
static void unapply(struct pxfer_work_server *s, struct work_node *n)
{
	struct pxfer_job_outcome *o = &s->outcome;
	struct work_group *g = n->g;
	uint32_t t = n->u.recv;

	o->units--;
	atomic_fetch_sub(&s->p_done, n->applied.bytes + n->applied.bytes_same);
	atomic_fetch_sub(&s->p_there, n->applied.bytes_same);
	if (g->counted)
		atomic_fetch_sub(&s->p_files_done, 1);
	o->bytes -= n->applied.bytes;
	o->bytes_same -= n->applied.bytes_same;
	o->recv[t].bytes -= n->applied.bytes;
	if (g->counted) {
		g->counted = 0;
		if (g->failed) {
			o->files_failed--;
		} else if (g->same == g->nrange) {
			o->files_same--;
		} else {
			o->files--;
			o->recv[t].files--;
			o->rank[g->rank].files--;
		}
	}
	g->ndone--;
	memset(&n->applied, 0, sizeof(n->applied));
	s->outstanding++;
	s->outcome.units_again++;
}

/* @n (unlinked) goes back to a queue: its file's, its own, or another */
static void requeue(struct pxfer_work_server *s, struct work_node *n)
{
	int t = n->g ? (int)n->g->recv : (int)n->u.recv;

	if (s->q[t].lost) {
		t = n->u.kind == PXFER_UNIT_DIRS ? -1 : fewest(s);
		if (t < 0) {
			drop(s, n);
			return;
		}
	}
	q_push(s, (uint32_t)t, n, 1);
}

void pxfer_work_jobs_lost(struct pxfer_work_server *s, uint32_t recv,
			  uint32_t rank)
{
	struct work_node *n;
	int t;

	if (s->over || s->q[recv].lost)
		return;
	s->q[recv].lost = 1;
	s->outcome.recv[recv].lost = 1;
	pxfer_warning("work service: receiver %u of --to cannot be reached (rank %u says so); its files go to the others",
		      (unsigned int)recv + 1, (unsigned int)rank);
	if (fewest(s) < 0) {
		pxfer_error("work service: every receiver is lost; the job ends");
		check_phase(s);
		return;
	}
	for (struct work_group *g = s->groups; g; g = g->next) {
		if (g->recv != recv)
			continue;
		g->recv = (uint32_t)fewest(s);
		g->failed = 0;
		g->same = 0;
		for (uint64_t i = 0; i < g->ncut; i++) {
			n = g->v[i];
			if (n->state == N_QUEUED) {
				q_unlink(s, n);
				q_push(s, g->recv, n, 0);
			} else if (n->state == N_DONE) {
				unapply(s, n);
				q_push(s, g->recv, n, 0);
			}
		}
	}
	while ((n = s->q[recv].head)) {
		q_unlink(s, n);
		t = fewest(s);
		if (n->u.kind == PXFER_UNIT_DIRS)
			drop(s, n);
		else
			q_push(s, (uint32_t)t, n, 0);
	}
	check_phase(s);
}

void pxfer_work_jobs_report(struct pxfer_work_server *s, uint32_t rank,
			    struct work_node **leases,
			    const struct pxfer_unit_result *r)
{
	struct work_node *n;

	for (n = *leases; n && n->u.id != r->id; n = n->next)
		;
	if (!n) {
		pxfer_verbose("work service: rank %u reports unit %llu, which it does not hold",
			      (unsigned int)rank, (unsigned long long)r->id);
		return;
	}
	list_unlink(leases, NULL, n);
	s->q[n->u.recv].leased--;
	if (s->over) {
		drop(s, n);
		return;
	}
	s->outcome.bytes_sent += r->bytes_sent;
	s->outcome.rank[rank].bytes_sent += r->bytes_sent;
	s->outcome.recv[n->u.recv].bytes_sent += r->bytes_sent;
	if (r->lost)
		pxfer_work_jobs_lost(s, n->u.recv, rank);
	if (s->over) {
		drop(s, n);
		return;
	}
	/* a range sent to a receiver its file has left: the file is
	 * sent whole to the other, this range too */
	if (r->again || r->lost || (n->g && n->g->recv != n->u.recv)) {
		s->outcome.units_again++;
		if (r->again && !r->lost) {
			/* 50 ms, doubling to 3.2 s */
			n->not_before = pxfer_now() +
					0.05 * (1u << (n->agains < 6 ? n->agains : 6));
			n->agains++;
		}
		requeue(s, n);
	} else {
		apply(s, rank, n, r);
	}
	check_phase(s);
}

void pxfer_work_server_progress(const struct pxfer_work_server *s,
				struct pxfer_work_progress *p)
{
	p->bytes_done = atomic_load(&s->p_done);
	p->bytes_there = atomic_load(&s->p_there);
	p->bytes_total = atomic_load(&s->p_total);
	p->files_done = atomic_load(&s->p_files_done);
	p->files_total = atomic_load(&s->p_files_total);
	p->walking = atomic_load(&s->p_walking);
}

void pxfer_work_jobs_leases_back(struct pxfer_work_server *s,
				 struct work_node **leases)
{
	struct work_node *n;

	while ((n = *leases)) {
		list_unlink(leases, NULL, n);
		s->q[n->u.recv].leased--;
		if (s->over) {
			drop(s, n);
			continue;
		}
		s->outcome.units_again++;
		requeue(s, n);
	}
	check_phase(s);
}

/* ---- setup ---------------------------------------------------------------- */

int pxfer_work_jobs_init(struct pxfer_work_server *s,
			 const struct pxfer_work_conf *c)
{
	struct pxfer_job_outcome *o = &s->outcome;

	s->roots = calloc((size_t)c->nroots + 1, sizeof(*s->roots));
	s->q = calloc(c->nrecv, sizeof(*s->q));
	o->rank = calloc(c->nranks, sizeof(*o->rank));
	o->recv = calloc(c->nrecv, sizeof(*o->recv));
	if (!s->roots || !s->q || !o->rank || !o->recv)
		return -ENOMEM;
	o->nranks = c->nranks;
	o->nrecv = c->nrecv;
	s->recv_ahead = (2 * c->nranks + c->nrecv - 1) / c->nrecv;
	if (s->recv_ahead < 2)
		s->recv_ahead = 2;
	/* and a rank, at most its share of all the receivers' (about two
	 * units): a rank that asks quickest, for each of its receivers,
	 * does not take what ranks whose links are free would send */
	s->rank_ahead = (s->recv_ahead * c->nrecv + c->nranks - 1) / c->nranks;
	if (s->rank_ahead < 2)
		s->rank_ahead = 2;
	for (s->nroots = 0; s->nroots < c->nroots; s->nroots++) {
		s->roots[s->nroots] = strdup(c->roots[s->nroots]);
		if (!s->roots[s->nroots])
			return -ENOMEM;
	}
	if (pxfer_work_cut_init(&s->cut, s->roots, s->nroots, c->unit_bytes,
				c->unit_files, c->range_bytes))
		return -EINVAL;
	s->cut_ok = 1;
	return 0;
}

void pxfer_work_jobs_release(struct pxfer_work_server *s)
{
	struct work_group *g;

	for (uint32_t r = 0; s->q && r < s->nrecv; r++) {
		struct work_node *n;

		while ((n = s->q[r].head)) {
			q_unlink(s, n);
			if (!n->g)
				node_free(n);
		}
	}
	while ((g = s->groups)) {
		s->groups = g->next;
		for (uint64_t i = 0; i < g->ncut; i++)
			node_free(g->v[i]);
		free(g->v);
		free(g);
	}
	if (s->cut_ok)
		pxfer_work_cut_release(&s->cut);
	for (int i = 0; s->roots && i < s->nroots; i++)
		free(s->roots[i]);
	free(s->roots);
	free(s->q);
	pxfer_job_outcome_release(&s->outcome);
}
