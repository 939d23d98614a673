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
#include "engine/check.h"
#include "engine/handshake.h"
#include "engine/rails.h"
#include "engine/relay.h"
#include "engine/session.h"
#include "engine/tagger.h"
#include "engine/worker.h"
#include "recv/doneq.h"
#include "recv/filetab.h"
#include "recv/forward.h"
#include "recv/gate.h"
#include "recv/inbox.h"
#include "recv/metrics.h"
#include "recv/rfile.h"
#include "recv/shared.h"
#include "transport/choose.h"

/* files in flight at most: each holds two descriptors, file and directory */
#define RECV_MAX_FILES 1024

/* ring memory per session, unless --ring-mem says otherwise */
#define RECV_SHARE_DEFAULT PXFER_DEFAULT_RING_MEM

/*
 * The server: its thread listens, admits senders and hands each session's
 * data connections to it; each session runs on a thread of its own.
 */
struct recv_server {
	const struct pxfer_recv_opts *o;
	const struct recv_forward *fwd;	/* a chain's forwarding, or NULL */
	struct pxfer_transport_choice tc;	/* bind: --bind, or what --device implies */
	struct pxfer_listener *ls[2];	/* tcp and/or rdma */
	unsigned int nls;
	/* what each listener's sessions offer for data (--rails) */
	struct pxfer_rail_addr rails[2][PXFER_RAILS_MAX];
	int nrails[2];
	struct pxfer_pool pool;		/* ring memory faulted in ahead */
	size_t pool_part;		/* of it per session slot (0: none) */
	unsigned int pool_slots;	/* slots the pool covers */
	uint64_t share;			/* ring memory per session */
	unsigned int max_sessions;
	struct recv_session **sess;	/* max_sessions slots: NULL when free */
	struct recv_pendings *pend;	/* connections before their first message */
	struct recv_gate gate;		/* failed authentications per source */
	unsigned int nsess;
	uint64_t admitted;
	int rootfd;			/* the top directory (--dir) */
	double sweep_next;		/* when to look for expired ones */
	atomic_int store_warned;	/* the store was refused: said once */
	struct pxfer_recv_metrics *m;	/* what it counts: the caller's, or own */
	struct pxfer_recv_metrics own;
	struct pxfer_partials_use *use;	/* its partials, capped; sessions share
					 * it (the metrics show it: m->use) */
	int use_seeded;			/* ... counted from the store */
	struct recv_shared shared;	/* partials sessions of a job share */
	uint32_t mode_mask;		/* the bits of a wire mode that apply */
	int stops_seen;			/* times o->stop was raised, as seen */
	int ended_fd;			/* a session's thread is done */
	int draining;			/* o->stop raised: no new sessions */
	double drain_end;		/* ... and running ones are stopped then */
};

/* a slot's chunk while its writes are in flight */
struct rslot {
	struct pxfer_seg seg[PXFER_SEG_MAX];
	int fd[PXFER_SEG_MAX];
	/* a segment of a file with a partial is recorded there when written */
	struct pxfer_partial *part[PXFER_SEG_MAX];
	struct pxfer_digest hash[PXFER_SEG_MAX];
	uint32_t boff[PXFER_SEG_MAX];
	uint32_t done[PXFER_SEG_MAX];
	/* a segment of a range forwarded from the ring (engine/relay.h) */
	struct pxfer_relay_ent *rent[PXFER_SEG_MAX];
	unsigned int nseg;
	unsigned int pending;		/* writes, and forwards, in flight */
};

struct recv_session;
struct recv_pendings;

struct rworker {
	struct pxfer_worker b;
	struct recv_session *s;
	struct rslot *slots;
	struct pxfer_chunk desc;
	uint64_t seq;
	atomic_uint_fast64_t taken;	/* seq, for the coordinator */
	/* the coordinator's: the chunks DATA_SENT named and when, and when
	 * taken last moved */
	uint64_t claimed, taken_seen;
	double claimed_at, moved_at;
	struct pxfer_tagger tag;	/* made once the keys are agreed */
	/* made as its connection comes, inside ACCEPTING_DATA: flagged */
	int tag_init;
	struct pxfer_idq finq;	/* files to finish here; guarded by b.lock */
	int slots_freed;	/* the coordinator has credits to grant */
	atomic_int rejoined;	/* the coordinator gave it a new connection */
	int rail_down;		/* its connection was lost (metrics) */
	int done_wake;		/* the coordinator has files to report */
	/*
	 * Forwarding from the ring (recv/chain.c): an item per segment of
	 * each slot, made when first needed; the forwards done, per slot
	 * (relay_back, from any thread), and the slots that have some
	 * (relq, guarded by b.lock)
	 */
	struct pxfer_relay_item *relay_items;
	atomic_uint *relay_back;
	struct pxfer_idq relq;
};

static inline struct rworker *to_rworker(struct pxfer_worker *w)
{
	return container_of(w, struct rworker, b);
}


struct recv_session {
	struct pxfer_session b;
	struct recv_server *srv;
	const struct pxfer_recv_opts *o;
	unsigned int slot;		/* in srv->sess; its pool slice */
	struct pxfer_pool pool;		/* that slice (empty: rings are mapped) */
	uint64_t ring_mem;		/* its share of --ring-mem */
	struct pxfer_hello hello;	/* what the sender asked */
	int idled;			/* ended by --idle-timeout */
	uint8_t nonce[PXFER_NONCE_LEN];	/* of the control connection's CHALLENGE */
	pthread_t thread;
	struct pxfer_stop stop;		/* raised by the server: end now */
	atomic_int ended;		/* the thread is done with everything */
	int code;			/* how it ended: an exit status */
	char source[PXFER_SOURCE_LEN];	/* the sender's address, without port */
	int vouched;			/* for its data connections (pending.c) */
	/* data connections the server routed here, until all are in */
	/* the data connections that named it: taken while it sets up,
	 * then by the coordinator (a lost one replaced, rejoin.c) */
	struct pxfer_inbox inbox;
	struct rworker *w;
	struct pxfer_filetab tab;
	struct pxfer_rfiles files;
	/* complete files, to report: filled by the workers and the
	 * coordinator, emptied by the coordinator */
	struct pxfer_doneq done;
	unsigned int finish_next;	/* worker for the next handed-on finish */
	atomic_int fin_seen;
	/*
	 * For --idle-timeout: what the sender got done (chunks arrived and
	 * written, FILE, FILE_END, FIN, complete files), counted by the
	 * workers and the coordinator, and files being finished, the
	 * receiver's own work that may take long (fsync), which is no
	 * idleness of the sender's. The coordinator watches both. Writes in
	 * flight are not "busy": a worker blocked on a chunk its sender left
	 * half sent cannot reap those that completed, and would hold the
	 * clock for ever; each counts as progress when reaped instead.
	 */
	atomic_uint_fast64_t progress;
	atomic_int busy;
	uint64_t progress_seen;
	double idle_since;
	uint64_t refused;	/* files refused, for the log (coord.c) */
	double all_lost_at;		/* the sender was told its last data
					 * connection is gone (coord.c) */
	uint64_t files_ok, bytes, failed;
	uint64_t files_same, bytes_same;	/* there already: skipped */
	uint64_t bytes_resumed;		/* held by partials, not sent again */
	struct pxfer_msg ok;		/* a FILE_OK being made (coord.c) */
	/* partials read back before they are offered; their FILE_OK waits */
	struct pxfer_check check;
	uint64_t ping_checked;		/* the highest figure of the sender's PINGs */
	double partials_due;		/* when to flush partials' old records */
	/* FILEs whose digest follows (FILE_SUM): how many wait for it, and
	 * the bytes announced so, which the sender hashes (on_ping) */
	unsigned int sums_due;
	uint64_t sum_bytes;
	/*
	 * A broadcast chain (docs/broadcast.md, recv/chain.c): the hops
	 * its CHAIN messages named, as they come (nhops of hops_count),
	 * the forwarding once they all came, whether a FILE came first
	 * (then CHAIN is refused), and after the FIN, the wait for the
	 * forwarding to end (fwd_wait), whose reports go before the ACK.
	 */
	struct pxfer_chain_hop *hops;
	unsigned int nhops, hops_count;
	int any_file;
	struct recv_fwd *fwd;
	struct pxfer_relay *relay;	/* its chunks forwarded from the ring */
	uint64_t relay_ring, relay_copied;	/* ... bytes, as it went */
	uint64_t held_pings;		/* PINGs saying chunks wait for it */
	double held_ping_at;
	int fwd_wait;
	struct pxfer_chain_report fwd_rep[PXFER_CHAIN_MAX];
	unsigned int fwd_nrep;
};

/* session.c */
/*
 * recv_session_start - run a session on a thread of its own for the
 * sender on @c, whose authentic HELLO @h answered the CHALLENGE with
 * @nonce, in free slot @slot of srv->sess. The session owns @c even when
 * this fails (-errno).
 */
int recv_session_start(struct recv_server *srv, unsigned int slot,
		       struct pxfer_conn *c, const struct pxfer_hello *h,
		       const uint8_t *nonce);
/*
 * recv_session_route - hand data connection @nc to the session it named:
 * 0, or -errno with @nc still the caller's (-ENOENT: no such session;
 * -EBUSY: it wants no more). Server thread.
 */
int recv_session_route(struct recv_server *srv, struct recv_newconn *nc);

/*
 * rejoin.c: recv_rejoin, each turn of the coordinator - a data connection
 * routed here while the session runs may replace a lost one (DATA_HELLO
 * gen); any other is refused, and the session goes on either way.
 */
void recv_rejoin(struct recv_session *s);
/* recv_session_stop - have session @s end now (its thread fails it) */
void recv_session_stop(struct recv_session *s);
/*
 * recv_session_reap - join the sessions whose thread is done and free
 * their slots; the exit status of the last one reaped in *code. How many.
 */
unsigned int recv_session_reap(struct recv_server *srv, int *code);

/* coord.c */
int recv_coordinate(struct recv_session *s);
/* finish complete file @id here, unless it failed (reported as is) */
void recv_file_finish(struct recv_session *s, uint32_t id);

/* the sender got something done (--idle-timeout); any thread */
static inline void recv_progress(struct recv_session *s)
{
	atomic_fetch_add_explicit(&s->progress, 1, memory_order_relaxed);
}

/* worker.c */
void *recv_worker_main(void *arg);

/*
 * chain.c: a session's part in a broadcast chain. recv_chain_hop takes
 * one CHAIN message (0, or -EPROTO / -EPERM / -ENOMEM with the session
 * failed or to fail); recv_chain_begin, of range @id answered with
 * nothing held, whose chunks then go on from the ring (worker.c);
 * recv_chain_file tells the forwarding of complete file @id (a range:
 * its partial's descriptor, dup'd as it finished); recv_chain_held,
 * each turn, says whether chunks wait for the next hop (1: the session
 * is not idle), and tells the sender so once a second;
 * recv_chain_fin, at the FIN, starts the wait for the forwarding (1) or
 * says there is none (0); recv_chain_wait, each turn while it waits,
 * queues the CHAIN_REPORTs and the ACK once it is over (1), else 0, or
 * -1 after failing the session; recv_chain_end, as the session ends,
 * stops and frees what is left; recv_chain_log, what the session log
 * line says of it (empty without a chain).
 */
int recv_chain_hop(struct recv_session *s, const struct pxfer_chain_hop *h);
void recv_chain_begin(struct recv_session *s, uint32_t id);
void recv_chain_file(struct recv_session *s, uint32_t id);
int recv_chain_held(struct recv_session *s);
int recv_chain_fin(struct recv_session *s);
int recv_chain_wait(struct recv_session *s);
void recv_chain_end(struct recv_session *s);
void recv_chain_log(const struct recv_session *s, char *buf, size_t len);

/*
 * door.c: the gate (gate.h) applied by the server's thread.
 * recv_door_wait: 1 if pending connection @i of @pend is to wait, unread
 * (held: recv_pending_hold), because its source failed to authenticate
 * moments ago; 0 if it may be read.
 * recv_door_hello checks the HELLO @m of connection @c, whose CHALLENGE
 * had @nonce: 0 with @h filled if it proves the secret; -EACCES if it
 * does not (REFUSE sent; logged, or counted for the summary); -EPROTO if
 * @m is no HELLO.
 * recv_door_report logs the summary lines due at @now (@all: every one
 * not written yet, as the receiver stops) and says when to call again.
 */
struct recv_pendings;
int recv_door_wait(struct recv_server *srv, struct recv_pendings *pend,
		   unsigned int i);
int recv_door_hello(struct recv_server *srv, struct pxfer_conn *c,
		    const uint8_t *nonce, const struct pxfer_msg *m,
		    struct pxfer_hello *h);
double recv_door_report(struct recv_server *srv, double now, int all);

#endif
