/* SPDX-License-Identifier: MIT */
/*
 * Credit accounting: the one place that decides which ring slot may be
 * filled. The receiver grants slots; the sender fills only granted slots;
 * a slot returns to the receiver's pool when its data is on disk. With
 * receives posted before a grant and no write without a grant, the sender
 * can never overrun the receiver (on rdma: no RNR by design).
 *
 * Each side keeps one struct per worker ring. Not thread-safe: the owner
 * serialises calls (the worker's lock).
 *
 * Receiver: every slot starts IDLE and ready to grant.
 *	collect:  IDLE (ready)  -> GRANTED   (slots to put in a CREDIT message)
 *	accept:   GRANTED       -> BUSY      (a chunk arrived in the slot)
 *	put:      BUSY          -> IDLE      (its data is written; ready again)
 * Sender: every slot starts IDLE, not usable.
 *	grant:    IDLE          -> GRANTED   (a CREDIT named it)
 *	take:     GRANTED       -> BUSY      (reading a chunk into it)
 *	put:      BUSY          -> IDLE      (sent: the grant is used up)
 *	unuse:    BUSY          -> GRANTED   (not sent after all)
 * A grant for a slot the sender still has BUSY (its send completion not yet
 * seen) is remembered and applied by put.
 */
#ifndef PXFER_CREDIT_H
#define PXFER_CREDIT_H

#include <stdint.h>

enum pxfer_slot_state {
	PXFER_SLOT_IDLE,
	PXFER_SLOT_GRANTED,
	PXFER_SLOT_BUSY,
};

struct pxfer_credits {
	uint8_t *state;
	uint8_t *regrant;	/* sender: grant arrived while BUSY */
	uint16_t *fifo;		/* slots ready: to grant, or to use */
	unsigned int head, count;
	unsigned int n;
	unsigned int granted;	/* GRANTED slots */
	unsigned int busy;	/* BUSY slots */
	int receiver;
};

int pxfer_credits_init(struct pxfer_credits *c, unsigned int n, int receiver);
void pxfer_credits_release(struct pxfer_credits *c);

/* receiver */
unsigned int pxfer_credits_collect(struct pxfer_credits *c, uint16_t *out,
				   unsigned int max);
int pxfer_credits_accept(struct pxfer_credits *c, unsigned int slot);

/* sender */
int pxfer_credits_grant(struct pxfer_credits *c, unsigned int slot);
int pxfer_credits_take(struct pxfer_credits *c);
int pxfer_credits_unuse(struct pxfer_credits *c, unsigned int slot);

/* both: the slot is free again */
int pxfer_credits_put(struct pxfer_credits *c, unsigned int slot);

/*
 * pxfer_credits_reset - the ring's connection was replaced by a new one,
 * and the grants made for the old are void. Receiver: every slot not
 * BUSY (still being written: put brings it back) is ready to grant
 * again. Sender: no slot is usable until granted anew (none may be in
 * use).
 */
void pxfer_credits_reset(struct pxfer_credits *c);

/* slots ready: to grant (receiver) or to fill (sender) */
static inline unsigned int pxfer_credits_ready(const struct pxfer_credits *c)
{
	return c->count;
}

#endif
