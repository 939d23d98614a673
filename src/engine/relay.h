/* SPDX-License-Identifier: MIT */
/*
 * A broadcast chain's forwarding from the ring (docs/broadcast.md): a
 * receiving session passes each chunk of a range it checked, from the
 * slot it arrived in, to the session that sends to the next hop, which
 * puts it on the wire from that slot. The slot goes back to its worker
 * once both its write and every forward of it are done, so the next
 * hop's credits bound what a node holds.
 *
 * One relay per chained receiving session (the producer); the sessions
 * to the next hop (consumers, one at a time) take from it. An entry is
 * one range: the producer makes it when the range's FILE arrives fresh,
 * the consumer binds it when it announces the range to the next hop, and
 * the next hop's answer decides: created empty, the chunks go from the
 * ring (LIVE); holding part of it or the same, they do not (OFF), and
 * once the range is complete here the consumer sends it from this
 * node's partial, whose descriptor the relay keeps for it. An entry of a
 * consumer that ended, or one whose chunks came before anyone bound it
 * and beyond a small budget, goes DEAD: what it brings is forwarded from
 * disk as it completes, and the chain's pass at the end sends the rest.
 *
 * It calls nothing of either side but an item's put(), the producer's,
 * from whichever thread finished with it, and a consumer's wake_fd.
 * Thread-safe; no allocation after an entry is made.
 */
#ifndef PXFER_ENGINE_RELAY_H
#define PXFER_ENGINE_RELAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "core/ring.h"

struct pxfer_relay;
struct pxfer_relay_ent;

/* one segment of a received chunk, in the producer's slot */
struct pxfer_relay_item {
	struct pxfer_relay_item *next;
	struct pxfer_relay_ent *ent;
	const uint8_t *buf;		/* its bytes, in ring */
	const struct pxfer_ring *ring;
	uint64_t off;			/* in the file */
	uint32_t len;
	uint32_t taken;			/* handed out to the consumer, */
	unsigned int out;		/* ... in pieces not yet done */
	/* the producer's, once the consumer is done with it */
	void (*put)(struct pxfer_relay_item *it);
	void *arg;
	uint32_t slot;
};

/* a piece of an item, handed to a consumer's worker */
struct pxfer_relay_piece {
	struct pxfer_relay_item *it;
	const uint8_t *buf;
	uint64_t off;
	uint32_t len;
	void *sfile;			/* the consumer's file of its range */
};

enum pxfer_relay_state {
	PXFER_RELAY_PENDING,	/* not answered by the next hop yet */
	PXFER_RELAY_LIVE,	/* chunks go from the ring */
	PXFER_RELAY_OFF,	/* sent from disk once complete here */
	PXFER_RELAY_DONE,	/* the next hop has it all */
	PXFER_RELAY_DEAD,	/* not the relay's any more */
};

/* chunks of ranges nobody bound yet, held at most (of all entries) */
#define PXFER_RELAY_UNBOUND_MAX 16

int pxfer_relay_new(struct pxfer_relay **out);
/* no more is taken or handed out; what waits is put back, every entry
 * is DEAD. Any thread. */
void pxfer_relay_close(struct pxfer_relay *r);
/* once closed and every item put back (the producer's threads joined) */
void pxfer_relay_free(struct pxfer_relay *r);

/* chunks the producer waits for the consumer to be done with */
unsigned int pxfer_relay_held(struct pxfer_relay *r);

/* bytes sent from the ring, and copied first (no registration) */
void pxfer_relay_count(struct pxfer_relay *r, uint64_t ring, uint64_t copied);
void pxfer_relay_counts(struct pxfer_relay *r, uint64_t *ring,
			uint64_t *copied);

/* ---- the producer --------------------------------------------------------- */

/* an entry for a range, with two references: the producer's (dropped
 * with pxfer_relay_ent_put) and the consumer's (pxfer_relay_ent_drop,
 * once done with it, or never to use it). NULL: none. */
struct pxfer_relay_ent *pxfer_relay_ent_new(struct pxfer_relay *r);
void pxfer_relay_ent_put(struct pxfer_relay_ent *e);
/* @sent: the next hop took every byte of a LIVE entry */
void pxfer_relay_ent_drop(struct pxfer_relay_ent *e, int sent);
/*
 * pxfer_relay_push - item @it of entry it->ent, checked: 1 when it is
 * the relay's until it->put(it) is called (from any thread), 0 when it
 * is not forwarded from the ring (the entry is OFF or DEAD, or over the
 * budget of unbound chunks)
 */
int pxfer_relay_push(struct pxfer_relay_item *it);
/*
 * pxfer_relay_ent_complete - the range is complete here, its partial
 * open on @fd: 1 when the relay saw to it (@fd is its), 0 when the
 * caller forwards it from disk (DEAD: @fd stays the caller's)
 */
int pxfer_relay_ent_complete(struct pxfer_relay_ent *e, int fd);

/* ---- a consumer ----------------------------------------------------------- */

/* session @sess announces @e's range to the next hop: 0, or -ESTALE when
 * it is not the relay's (DEAD) */
int pxfer_relay_ent_bind(struct pxfer_relay_ent *e, void *sess, int wake_fd);
/* the next hop's answer: @fresh (created empty) makes it LIVE with
 * @sfile, else OFF */
void pxfer_relay_ent_answer(struct pxfer_relay_ent *e, void *sfile, int fresh);
/* an OFF entry's partial, once complete here (the caller's); -EAGAIN
 * until then, -EIO when it was given up here (it will not be) */
int pxfer_relay_ent_fd(struct pxfer_relay_ent *e);
int pxfer_relay_ent_state(struct pxfer_relay_ent *e);
/* whether pieces wait to be taken (their consumer's wake_fd was woken) */
int pxfer_relay_ready(struct pxfer_relay *r);
/*
 * pxfer_relay_take - the next piece of session @sess, at most @max bytes:
 * 1 with @p, 0 when none waits
 */
int pxfer_relay_take(struct pxfer_relay *r, void *sess, uint32_t max,
		     struct pxfer_relay_piece *p);
/*
 * pxfer_relay_ended - a LIVE range of session @sess whose producer is done
 * with it (complete here, or @failed: given up), and every piece of what
 * came of it done: 1 with its @sfile, once each; 0 when none. A range
 * may bring fewer bytes than its length (the holes of a sparse file), or
 * none: only this says it is over.
 */
int pxfer_relay_ended(struct pxfer_relay *r, void *sess, void **sfile,
		      int *failed);
/* a piece taken is done with (sent, or its session ended) */
void pxfer_relay_done(struct pxfer_relay_item *it);
/* session @sess ended: its entries are DEAD, what waits is put back */
void pxfer_relay_detach(struct pxfer_relay *r, void *sess);

#endif
