/* SPDX-License-Identifier: MIT */
/*
 * The work service's insides, shared by its two files: work_serve.c (the
 * thread, the connections, the handshake) and work_jobs.c (the units:
 * queues per receiver, leases per connection, lost receivers, the
 * outcome). Everything here is the service thread's alone, except done
 * and outcome, which wait reads under lock once done is set.
 */
#ifndef PXFER_WORK_SERVE_H
#define PXFER_WORK_SERVE_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "api/work.h"
#include "api/work_units.h"
#include "api/work_wire.h"

struct work_conn;
struct work_group;

enum work_node_state { N_QUEUED, N_LEASED, N_DONE, N_DROPPED };

/* a unit the service holds */
struct work_node {
	struct pxfer_unit u;
	enum work_node_state state;
	struct work_node *prev, *next;	/* in its queue, or its lease list */
	struct work_group *g;		/* RANGE: its file (which owns it) */
	struct pxfer_unit_result applied;	/* RANGE, done: what it added */
	/* handed back as not done (again): not handed out before this
	 * (pxfer_now), each time later, so that a file busy on its
	 * receiver (another job's, a partial being checked) is not asked
	 * for again and again at once */
	double not_before;
	unsigned int agains;
};

/* a large file's ranges: all go to one receiver */
struct work_group {
	struct work_group *next;
	uint32_t recv;
	uint64_t nrange, ncut, ndone;
	struct work_node **v;		/* [nrange], as they are cut */
	int failed, counted;
	uint32_t rank;			/* counted: the rank that ended it */
	uint64_t same;			/* ranges done that were the same */
};

struct work_queue {
	struct work_node *head, *tail;
	uint64_t bytes;			/* the bytes of what it holds */
	uint32_t leased;		/* its units out with the ranks */
	int lost;
};

struct pxfer_work_server {
	/* the connections */
	int lfd, wake, port;
	pthread_t thread;
	int running;
	struct work_conn **conns;	/* [maxconns] */
	int maxconns, nconns;
	struct pollfd *pfd;		/* [maxconns + 2] */
	int *pfd_conn;
	int *rank_conn;			/* [nranks]: its connection, or -1 */
	uint8_t *rank_seen;		/* [nranks]: it connected once */
	uint32_t nseen;
	uint8_t *secret;
	size_t secret_len;
	uint8_t job[16];
	uint32_t nranks, nrecv;
	uint32_t handshake_ms, end_grace_ms;
	/* units a receiver has out with the ranks at once, at most: about
	 * two a rank, so that what is left waits in the queue for the link
	 * that frees first rather than being placed blind at the start */
	uint32_t recv_ahead;
	/* units a rank (its connection) has out at once, at most: its
	 * share of what all receivers may have out */
	uint32_t rank_ahead;

	/* what pxfer_work_server_progress reads, from another thread */
	atomic_uint_fast64_t p_done, p_there, p_total, p_files_done,
			     p_files_total;
	atomic_int p_walking;

	/* the units */
	char **roots;			/* a copy of the conf's */
	int nroots;
	struct pxfer_work_cut cut;
	int cut_ok;			/* cut was set up */
	struct work_queue *q;		/* [nrecv] */
	struct work_group *groups;
	uint64_t outstanding;		/* units queued or leased */
	int dirs_phase;			/* the DIRS units are cut */
	int over;			/* the job is over */
	uint64_t over_ms;
	int status;			/* the first unit status that was not 0 */
	struct pxfer_job_outcome outcome;

	/* wait's */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;			/* over, and every rank told */
};

int pxfer_work_jobs_init(struct pxfer_work_server *s,
			 const struct pxfer_work_conf *c);
void pxfer_work_jobs_release(struct pxfer_work_server *s);
/*
 * pxfer_work_jobs_pull - @rank's PULL for @recv: @a is the answer (a
 * UNIT, leased on @leases, WAIT or NODATA). 0 or -ENOMEM
 */
int pxfer_work_jobs_pull(struct pxfer_work_server *s, uint32_t rank,
			 uint32_t recv, struct work_node **leases,
			 struct pxfer_work_msg *a);
/* pxfer_work_jobs_report - @rank's result for a unit it holds */
void pxfer_work_jobs_report(struct pxfer_work_server *s, uint32_t rank,
			    struct work_node **leases,
			    const struct pxfer_unit_result *r);
/* pxfer_work_jobs_lost - @recv cannot be reached (@rank says) */
void pxfer_work_jobs_lost(struct pxfer_work_server *s, uint32_t recv,
			  uint32_t rank);
/* pxfer_work_jobs_leases_back - a connection ended: its units go back */
void pxfer_work_jobs_leases_back(struct pxfer_work_server *s,
				 struct work_node **leases);

#endif
