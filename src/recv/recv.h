/* SPDX-License-Identifier: MIT */
/*
 * Private to the receiver (src/recv/). The server (server.c) listens,
 * challenges newcomers (pending.c) and runs a session for each sender it
 * admits; a session (session.c) agrees on parameters, accepts the data
 * connections and tears down; its coordinator (coord.c) runs the control
 * connection; each worker (worker.c) takes chunks off its data connection
 * and writes them. A receiving file's life is recv/rfile.c's, its byte
 * accounting recv/filetab.c's.
 */
#ifndef PXFER_RECV_RECV_H
#define PXFER_RECV_RECV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "pxfer/pxfer.h"
#include "core/container_of.h"
#include "core/idq.h"
#include "core/ring.h"
#include "engine/handshake.h"
#include "engine/session.h"
#include "engine/worker.h"
#include "recv/filetab.h"
#include "recv/rfile.h"
#include "transport/choose.h"

/* files in flight at most: each holds two descriptors, file and directory */
#define RECV_MAX_FILES 1024

/* what the receiver keeps from one session to the next */
struct recv_server {
	const struct pxfer_recv_opts *o;
	struct pxfer_transport_choice tc;	/* bind: --bind, or what --device implies */
	struct pxfer_listener *ls[2];	/* tcp and/or rdma */
	unsigned int nls;
	struct pxfer_pool pool;		/* ring memory kept between sessions */
	int rootfd;			/* the top directory (--dir) */
	int sigfd;
};

/* a slot's chunk while its writes are in flight */
struct rslot {
	struct pxfer_seg seg[PXFER_SEG_MAX];
	int fd[PXFER_SEG_MAX];
	uint32_t boff[PXFER_SEG_MAX];
	uint32_t done[PXFER_SEG_MAX];
	unsigned int nseg;
	unsigned int pending;
};

struct recv_session;

struct rworker {
	struct pxfer_worker b;
	struct recv_session *s;
	struct rslot *slots;
	struct pxfer_chunk desc;
	uint64_t seq;
	struct pxfer_idq finq;	/* files to finish here; guarded by b.lock */
	int slots_freed;	/* the coordinator has credits to grant */
	int done_wake;		/* the coordinator has files to report */
};

static inline struct rworker *to_rworker(struct pxfer_worker *w)
{
	return container_of(w, struct rworker, b);
}

struct recv_session {
	struct pxfer_session b;
	struct recv_server *srv;
	const struct pxfer_recv_opts *o;
	struct pxfer_listener *l;	/* that accepted it */
	struct rworker *w;
	struct pxfer_filetab tab;
	int tab_init;
	struct pxfer_rfiles files;
	int files_init;
	/* complete files, to report: filled by the workers and the
	 * coordinator, emptied by the coordinator */
	pthread_mutex_t done_lock;
	struct pxfer_idq done;
	int done_init;
	unsigned int finish_next;	/* worker for the next handed-on finish */
	atomic_int fin_seen;
	int acked;
	uint64_t files_ok, bytes, failed;
};

/* session.c */
int recv_session_run(struct recv_server *srv, struct pxfer_listener *l,
		     struct pxfer_conn *c, const struct pxfer_hello *h,
		     const uint8_t *nonce);

/* coord.c */
int recv_coordinate(struct recv_session *s);
/* file @id is complete: queue it to be reported; 1 if the coordinator
 * must be woken for it */
int recv_file_done(struct recv_session *s, uint32_t id);
/* finish complete file @id here, unless it failed (reported as is) */
void recv_file_finish(struct recv_session *s, uint32_t id);

/* worker.c */
void *recv_worker_main(void *arg);

#endif
