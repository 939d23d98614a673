/* SPDX-License-Identifier: MIT */
/*
 * Private to the sender (src/send/); what it offers src/api/ is
 * send/sender.h. send.c sets a session up and tears it down; the
 * coordinator (coord.c) runs the control connection; the manifest
 * (manifest.c) turns the tree walk into FILE messages and keeps the files
 * in flight (their ids: fileids.c); each worker (worker.c) owns a data
 * connection and a ring and moves the chunks the scheduler plans, and
 * ends the files it is done with (fileend.c); the chunks of a lost
 * connection wait in resendq.c for the others.
 */
#ifndef PXFER_SEND_SEND_H
#define PXFER_SEND_SEND_H

#include <stdatomic.h>
#include <stdint.h>
#include "pxfer/pxfer.h"
#include "core/container_of.h"
#include "core/digest.h"
#include "core/ring.h"
#include "engine/check.h"
#include "engine/handshake.h"
#include "engine/progress.h"
#include "engine/rails.h"
#include "engine/relay.h"
#include "engine/session.h"
#include "engine/tagger.h"
#include "engine/worker.h"
#include "send/fileend.h"
#include "send/fileids.h"
#include "send/resendq.h"
#include "send/source.h"
#include "send/scheduler.h"
#include "send/walk.h"
#include "transport/choose.h"

/* what a slot holds: its chunk stays there until the receiver took it */
enum sslot_state {
	SS_IDLE,	/* nothing that matters */
	SS_READING,	/* a chunk planned, its reads in flight */
	SS_FILLED,	/* read, not sent (its connection broke first) */
	SS_SENT,	/* sent as number seq; taken, or lost with the connection */
};

/* a slot's chunk while its reads are in flight, and once it is sent */
struct sslot {
	struct pxfer_plan plan;
	uint32_t boff[PXFER_SEG_MAX];	/* where each segment sits in the slot */
	uint32_t done[PXFER_SEG_MAX];	/* bytes read so far */
	int err[PXFER_SEG_MAX];		/* positive errno */
	unsigned int pending;		/* reads in flight */
	uint8_t state;			/* enum sslot_state */
	uint8_t counted;		/* the scheduler counted its segments sent */
	uint8_t sealed;			/* sealed in place (--encrypt: ciphertext) */
	uint64_t seq;
	/* a piece forwarded from a receiving session's ring: its bytes
	 * there (ext_buf, or NULL once copied here), until sent */
	struct pxfer_relay_item *ext;
	const uint8_t *ext_buf;
};

struct send_session;
struct srejoin;

struct sworker {
	struct pxfer_worker b;
	struct send_session *s;
	int no_read_now;		/* RWF_NOWAIT reads are not supported */
	struct sslot *slots;
	struct pxfer_chunk desc;
	uint64_t seq;
	struct pxfer_tagger tag;
	atomic_uint_fast64_t sent;	/* chunks sent on it: seq, for the coordinator */
	/* the coordinator's: what DATA_SENT said, and since when sent stayed */
	uint64_t sent_seen, sent_told;
	double sent_since;
	/* its chunks in the queue to go again: its ring is not used anew
	 * before the others copied them out */
	struct pxfer_resend_src rs;
	struct srejoin *rj;		/* a new connection being made (rejoin.c) */
	unsigned int lose_after;	/* PXFER_TEST_LOSE_AFTER, worker 0 */
};

static inline struct sworker *to_sworker(struct pxfer_worker *w)
{
	return container_of(w, struct sworker, b);
}

/* one manifest entry in flight, indexed by its file id */
struct sentry {
	uint8_t type;
	int ok;				/* FILE_OK seen */
	int resent;			/* announced again after it changed */
	int partial_bad;		/* the receiver's partial did not match */
	struct pxfer_sfile f;
	struct pxfer_held_run *held;	/* what the receiver holds, f.held */
	char *rel;			/* its wire path (regular files: to resend) */
	/* the source read back where the receiver holds data, before the
	 * file goes to the workers, or (sum_due) hashed whole for
	 * --checksum once its FILE is out (coord.c) */
	struct pxfer_check_job *check;
	int sum_due;			/* its FILE_SUM is not sent yet */
	uint8_t want[PXFER_DIGEST_LEN];	/* the FILE_OK's digest */
	uint64_t held_bytes;		/* the FILE_OK's held */
	uint64_t tag;			/* from the session's source, */
	int tagged;			/* ... which hears how it ended */
	/* a range forwarded from the ring (engine/relay.h); answered with
	 * what the hop holds (relay_ok), it waits for its partial here */
	struct pxfer_relay_ent *relay;
	struct pxfer_file_ok *relay_ok;
};

/* a file that changed while it was sent, to announce again at the end of
 * the walk, in the same session */
struct again_file {
	struct again_file *next;
	char *src, *rel;
};

/*
 * The files in flight: ids are reused once the receiver says a file is
 * done, so at most max_files entries exist at once. The coordinator owns
 * it; workers reach entries only through the scheduler.
 */
struct manifest {
	struct pxfer_fileids ids;	/* each id's struct sentry */
	int walk_done;
	uint64_t bytes_walked, files_walked;
	struct again_file *again, **again_tail;	/* fed after the walk */
	int resending;			/* feeding one of them */
	int held;			/* the source has nothing now */
};

struct send_session {
	struct pxfer_session b;
	const struct pxfer_send_opts *o;
	struct pxfer_transport_choice tc;	/* bind: --bind, or what --device implies */
	struct pxfer_hs_target to;
	struct pxfer_pool pool;		/* ring memory faulted in early */
	struct pxfer_sched sched;
	struct pxfer_fileend ends;	/* the files the scheduler is done with */
	struct pxfer_walk walk;
	struct send_source *source;	/* instead of the walk, or NULL */
	struct manifest man;
	struct sworker *w;
	/* chunks of lost connections, for the others to send again */
	struct pxfer_resendq resendq;
	struct pxfer_rails rails;	/* where the data connections go */
	struct pxfer_rail_addr local[PXFER_RAILS_MAX];	/* --rails, --device A,B */
	int nlocal;
	unsigned int workers;		/* asked for in the HELLO */
	double all_lost_at;		/* when no data connection was left */
	unsigned int pass;		/* 0, or 1: changed files sent again */
	const char *transport;		/* instead of o->transport, or NULL */
	unsigned int again;		/* files to send in another session */
	unsigned int nospace;		/* files the receiver had no room for */
	uint64_t there;			/* bytes the receiver had: not sent */
	uint64_t done_size;		/* sizes of the files completed */
	atomic_uint_fast64_t bytes_sent;
	atomic_uint_fast64_t chunks;
	struct pxfer_stats *st;
	struct pxfer_progress prog;
	struct pxfer_check check;	/* the source's runs, read back */
	struct send_pass *p;		/* what it was asked: chain, stall */
	uint64_t held_pings;		/* a forwarding hop's, waiting on its hop, */
	double held_at;			/* ... the last that said so */
	uint64_t stall_seen;		/* progress the stall check saw, */
	double stall_since;		/* ... and since when */
	struct pxfer_relay *relay;	/* p->relay */
	unsigned int relay_waiting;	/* entries with relay_ok */
};

/* manifest.c */
/* the files in flight: at most @max_files, the receiver's */
int send_manifest_init(struct manifest *m, unsigned int max_files);
/* ... and the entries still in flight are given back to @src (may be
 * NULL when there is none) to go again */
void send_manifest_release(struct manifest *m, struct send_source *src);
/* walk on and queue FILE messages for one turn; 0 or -1 (failed) */
int send_manifest_feed(struct send_session *s);
/* whether the coordinator should feed without waiting */
int send_manifest_can_feed(struct send_session *s);
/* the entry of file @id (any number the receiver sent), or NULL */
struct sentry *send_manifest_get(struct manifest *m, uint64_t id);
/* the receiver is done with file @id: its entry is freed, its id can be
 * reused */
void send_manifest_done(struct manifest *m, uint64_t id);
/*
 * send_manifest_resend - file @id (a regular file in flight) is announced
 * again once the walk is over, in this session, as found then: 0 or
 * -ENOMEM
 */
int send_manifest_resend(struct manifest *m, uint64_t id);
/* send_manifest_done_all - nothing more to announce: the walk is over and
 * no file waits to be sent again */
int send_manifest_done_all(struct manifest *m);
/* send_manifest_over - that, and no file is in flight: FIN may go */
static inline int send_manifest_over(struct manifest *m)
{
	return send_manifest_done_all(m) && !pxfer_fileids_in_flight(&m->ids);
}

/* coord.c */
int send_coordinate(struct send_session *s);
void send_draw_progress(struct send_session *s, int final);

/*
 * rejoin.c: a lost connection's worker gets a new connection, on its own
 * rail, in the running session. send_rejoin, each turn of the
 * coordinator: 0, or -1 after failing the session.
 * send_rejoin_stop: before the workers are released.
 */

/*
 * relayed.c: the ranges whose chunks a receiving session of this node
 * forwards from its ring (engine/relay.h). send_relay_answer takes the
 * hop's FILE_OK of such a range: 1 when that is all for now (its chunks
 * come from the relay, or it waits for its partial), 0 to go on as for
 * any file, -1 after failing the session; send_relay_poll, each turn
 * while some wait, has @go (the coordinator's) take up those whose
 * partial is complete, or fail those given up here (1: the workers have
 * work, 0, or -1); send_relay_ends, each turn, ends the ranges going
 * from the ring that will bring no more (a sparse file's holes are never
 * sent); send_relay_fill, a worker's, plans the
 * next piece from the relay into @slot (1), or finds none (0);
 * send_relay_local gets a piece's bytes to where the connection can
 * send them from, copying them into the slot if need be; send_relay_sent
 * is told a slot's piece is done with; send_relay_end, as the session
 * ends, gives back every piece it holds.
 */
int send_relay_answer(struct send_session *s, struct sentry *e,
		      const struct pxfer_file_ok *k, int *work);
typedef int (*send_file_go_fn)(struct send_session *s, struct sentry *e,
			       const struct pxfer_file_ok *k, int *work);
int send_relay_poll(struct send_session *s, send_file_go_fn go);
void send_relay_ends(struct send_session *s);
int send_relay_fill(struct sworker *w, unsigned int slot);
const uint8_t *send_relay_local(struct sworker *w, unsigned int slot);
void send_relay_sent(struct sslot *ss);
void send_relay_end(struct send_session *s);

int send_rejoin(struct send_session *s);
void send_rejoin_stop(struct send_session *s);
const char *send_rail_name(struct send_session *s, struct sworker *w);

/* worker.c */
void *send_worker_main(void *arg);
/*
 * The coordinator, once worker @w is parked and the receiver said how
 * many of its chunks it took: queue the rest for the other workers.
 * How many were queued, or -1 after failing the session.
 */
int send_worker_requeue(struct send_session *s, struct sworker *w);

#endif
