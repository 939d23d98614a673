// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/credit.h"

static void fifo_push(struct pxfer_credits *c, unsigned int slot)
{
	c->fifo[(c->head + c->count) % c->n] = slot;
	c->count++;
}

static unsigned int fifo_pop(struct pxfer_credits *c)
{
	unsigned int slot = c->fifo[c->head];

	c->head = (c->head + 1) % c->n;
	c->count--;
	return slot;
}

int pxfer_credits_init(struct pxfer_credits *c, unsigned int n, int receiver)
{
	memset(c, 0, sizeof(*c));
	if (!n || n > UINT16_MAX)
		return -EINVAL;
	c->state = calloc(n, 1);
	c->regrant = calloc(n, 1);
	c->fifo = calloc(n, sizeof(*c->fifo));
	if (!c->state || !c->regrant || !c->fifo) {
		pxfer_credits_release(c);
		return -ENOMEM;
	}
	c->n = n;
	c->receiver = receiver;
	if (receiver)
		for (unsigned int i = 0; i < n; i++)
			fifo_push(c, i);
	return 0;
}

void pxfer_credits_release(struct pxfer_credits *c)
{
	free(c->state);
	free(c->regrant);
	free(c->fifo);
	memset(c, 0, sizeof(*c));
}

unsigned int pxfer_credits_collect(struct pxfer_credits *c, uint16_t *out,
				   unsigned int max)
{
	unsigned int k = 0;

	while (k < max && c->count) {
		unsigned int slot = fifo_pop(c);

		c->state[slot] = PXFER_SLOT_GRANTED;
		c->granted++;
		out[k++] = slot;
	}
	return k;
}

int pxfer_credits_accept(struct pxfer_credits *c, unsigned int slot)
{
	if (slot >= c->n || c->state[slot] != PXFER_SLOT_GRANTED)
		return -EPROTO;
	c->state[slot] = PXFER_SLOT_BUSY;
	c->granted--;
	c->busy++;
	return 0;
}

int pxfer_credits_grant(struct pxfer_credits *c, unsigned int slot)
{
	if (slot >= c->n)
		return -EPROTO;
	switch (c->state[slot]) {
	case PXFER_SLOT_IDLE:
		c->state[slot] = PXFER_SLOT_GRANTED;
		c->granted++;
		fifo_push(c, slot);
		return 0;
	case PXFER_SLOT_BUSY:
		if (c->regrant[slot])
			return -EPROTO;
		c->regrant[slot] = 1;
		return 0;
	default:
		return -EPROTO;		/* granted twice */
	}
}

int pxfer_credits_take(struct pxfer_credits *c)
{
	unsigned int slot;

	if (!c->count)
		return -EAGAIN;
	slot = fifo_pop(c);
	c->state[slot] = PXFER_SLOT_BUSY;
	c->granted--;
	c->busy++;
	return slot;
}

int pxfer_credits_unuse(struct pxfer_credits *c, unsigned int slot)
{
	if (slot >= c->n || c->state[slot] != PXFER_SLOT_BUSY || c->receiver)
		return -EINVAL;
	if (c->regrant[slot])
		return -EPROTO;	/* the receiver cannot regrant an unused slot */
	c->state[slot] = PXFER_SLOT_GRANTED;
	c->busy--;
	c->granted++;
	fifo_push(c, slot);
	return 0;
}

void pxfer_credits_reset(struct pxfer_credits *c)
{
	c->head = c->count = 0;
	c->granted = 0;
	memset(c->regrant, 0, c->n);
	if (!c->receiver) {
		memset(c->state, PXFER_SLOT_IDLE, c->n);
		c->busy = 0;
		return;
	}
	for (unsigned int i = 0; i < c->n; i++) {
		if (c->state[i] == PXFER_SLOT_BUSY)
			continue;
		c->state[i] = PXFER_SLOT_IDLE;
		fifo_push(c, i);
	}
}

int pxfer_credits_put(struct pxfer_credits *c, unsigned int slot)
{
	if (slot >= c->n || c->state[slot] != PXFER_SLOT_BUSY)
		return -EINVAL;
	c->busy--;
	if (c->receiver || c->regrant[slot]) {
		/* receiver: ready to grant; sender: granted again meanwhile */
		c->regrant[slot] = 0;
		if (c->receiver) {
			c->state[slot] = PXFER_SLOT_IDLE;
		} else {
			c->state[slot] = PXFER_SLOT_GRANTED;
			c->granted++;
		}
		fifo_push(c, slot);
		return 0;
	}
	c->state[slot] = PXFER_SLOT_IDLE;
	return 0;
}
