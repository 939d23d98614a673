/* SPDX-License-Identifier: MIT */
/*
 * credit_test: the credit state machines of src/credit.c.
 *
 * First each transition of the receiver and of the sender on its own,
 * with the counters checked against a scan of the slot states after every
 * call; then a randomized simulation of one receiver and one sender that
 * exchange CREDIT messages, chunks, send completions and write completions
 * in random interleavings (fixed seed), checking at every step that each
 * slot's single grant is in exactly one place, that no chunk lands in a
 * slot that was not granted, and at the end that every slot came back.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/credit.h"
#include "core/proto.h"
#include "test.h"

/* ---- helpers --------------------------------------------------------- */

/* The counters and the fifo length agree with the slot states. */
static int consistent(const struct pxfer_credits *c, const char *what)
{
	unsigned int g = 0, b = 0, idle = 0, ready_expect;
	int ok = 1;

	for (unsigned int i = 0; i < c->n; i++) {
		switch (c->state[i]) {
		case PXFER_SLOT_IDLE:
			idle++;
			break;
		case PXFER_SLOT_GRANTED:
			g++;
			break;
		case PXFER_SLOT_BUSY:
			b++;
			break;
		default:
			T_EXPECT(0, "%s: slot %u in state %u", what, i,
				 c->state[i]);
			ok = 0;
		}
		if (c->receiver && c->regrant[i]) {
			T_EXPECT(0, "%s: receiver slot %u has a regrant", what, i);
			ok = 0;
		}
		if (!c->receiver && c->regrant[i] &&
		    c->state[i] != PXFER_SLOT_BUSY) {
			T_EXPECT(0, "%s: regrant on slot %u that is not busy",
				 what, i);
			ok = 0;
		}
	}
	/* receiver: the idle slots are ready to grant; sender: the granted */
	ready_expect = c->receiver ? idle : g;
	if (g != c->granted || b != c->busy || ready_expect != c->count) {
		T_EXPECT(0, "%s: counters granted %u busy %u ready %u, states say %u %u %u",
			 what, c->granted, c->busy, c->count, g, b, ready_expect);
		ok = 0;
	}
	return ok;
}

/* ---- receiver -------------------------------------------------------- */

static void test_receiver(void)
{
	enum { N = 8 };
	struct pxfer_credits c;
	uint16_t out[2 * N];
	unsigned int k, seen = 0;

	T_EXPECT(pxfer_credits_init(&c, N, 1) == 0, "init receiver");
	consistent(&c, "receiver init");
	T_EXPECT(pxfer_credits_ready(&c) == N, "all %u slots ready, got %u", N,
		 pxfer_credits_ready(&c));
	T_EXPECT(c.granted == 0 && c.busy == 0, "nothing granted at start");

	/* nothing granted yet: accept must refuse every slot */
	for (unsigned int i = 0; i < N; i++)
		T_EXPECT(pxfer_credits_accept(&c, i) == -EPROTO,
			 "accept of idle slot %u refused", i);
	T_EXPECT(pxfer_credits_accept(&c, N) == -EPROTO, "accept slot n");
	T_EXPECT(pxfer_credits_accept(&c, 70000) == -EPROTO, "accept 70000");
	T_EXPECT(pxfer_credits_accept(&c, (unsigned int)-1) == -EPROTO,
		 "accept -1");
	consistent(&c, "receiver after refused accepts");

	/* collect honours max; a zero max collects nothing */
	T_EXPECT(pxfer_credits_collect(&c, out, 0) == 0, "collect 0");
	k = pxfer_credits_collect(&c, out, 3);
	T_EXPECT(k == 3, "collect 3 gave %u", k);
	consistent(&c, "receiver after collect 3");
	T_EXPECT(c.granted == 3 && pxfer_credits_ready(&c) == N - 3,
		 "granted %u ready %u", c.granted, pxfer_credits_ready(&c));
	k += pxfer_credits_collect(&c, out + k, 2 * N);
	T_EXPECT(k == N, "all slots granted, got %u", k);
	T_EXPECT(pxfer_credits_collect(&c, out + k, N) == 0,
		 "no more to grant");
	for (unsigned int i = 0; i < k; i++) {
		T_EXPECT(out[i] < N, "granted slot %u in range", out[i]);
		if (out[i] < N) {
			T_EXPECT(!(seen & (1u << out[i])), "slot %u granted twice",
				 out[i]);
			seen |= 1u << out[i];
		}
	}
	T_EXPECT(seen == (1u << N) - 1, "every slot granted once (%#x)", seen);
	consistent(&c, "receiver all granted");
	T_EXPECT(c.granted == N, "granted %u", c.granted);

	/* put of a granted (not busy) slot is refused */
	T_EXPECT(pxfer_credits_put(&c, 0) == -EINVAL, "put of granted slot");
	T_EXPECT(pxfer_credits_put(&c, N) == -EINVAL, "put of slot n");
	T_EXPECT(pxfer_credits_put(&c, 1u << 20) == -EINVAL, "put far out");

	/* accept once, not twice */
	T_EXPECT(pxfer_credits_accept(&c, 5) == 0, "accept 5");
	T_EXPECT(pxfer_credits_accept(&c, 5) == -EPROTO, "accept 5 twice");
	T_EXPECT(c.busy == 1 && c.granted == N - 1, "busy %u granted %u",
		 c.busy, c.granted);
	consistent(&c, "receiver after accept");

	/* the receiver never unuses */
	T_EXPECT(pxfer_credits_unuse(&c, 5) == -EINVAL, "receiver unuse");
	consistent(&c, "receiver after unuse");

	/* put returns the slot to the pool, and it can be granted again */
	T_EXPECT(pxfer_credits_put(&c, 5) == 0, "put 5");
	T_EXPECT(pxfer_credits_put(&c, 5) == -EINVAL, "put 5 twice");
	T_EXPECT(pxfer_credits_accept(&c, 5) == -EPROTO,
		 "accept after put, before regrant");
	consistent(&c, "receiver after put");
	T_EXPECT(pxfer_credits_ready(&c) == 1, "one slot ready, got %u",
		 pxfer_credits_ready(&c));
	k = pxfer_credits_collect(&c, out, N);
	T_EXPECT(k == 1 && out[0] == 5, "regrant of slot 5 (%u, %u)", k,
		 out[0]);
	T_EXPECT(pxfer_credits_accept(&c, 5) == 0, "accept 5 after regrant");

	/* all busy, then all back in the order they were put */
	for (unsigned int i = 0; i < N; i++)
		if (i != 5)
			T_EXPECT(pxfer_credits_accept(&c, i) == 0, "accept %u", i);
	T_EXPECT(c.busy == N && c.granted == 0, "all busy");
	consistent(&c, "receiver all busy");
	for (unsigned int i = N; i-- > 0;)
		T_EXPECT(pxfer_credits_put(&c, i) == 0, "put %u", i);
	consistent(&c, "receiver all put");
	k = pxfer_credits_collect(&c, out, N);
	T_EXPECT(k == N, "all ready again: %u", k);
	for (unsigned int i = 0; i < k; i++)
		T_EXPECT(out[i] == N - 1 - i, "fifo order: %u at %u", out[i], i);
	pxfer_credits_release(&c);
	pxfer_credits_release(&c);	/* harmless twice */
}

/* ---- sender ---------------------------------------------------------- */

static void test_sender(void)
{
	enum { N = 6 };
	struct pxfer_credits c;
	int s, s2;

	T_EXPECT(pxfer_credits_init(&c, N, 0) == 0, "init sender");
	consistent(&c, "sender init");
	T_EXPECT(pxfer_credits_ready(&c) == 0, "sender starts with no credit");
	T_EXPECT(pxfer_credits_take(&c) == -EAGAIN, "take without a grant");

	/* out of range */
	T_EXPECT(pxfer_credits_grant(&c, N) == -EPROTO, "grant slot n");
	T_EXPECT(pxfer_credits_grant(&c, 65535) == -EPROTO, "grant 65535");
	T_EXPECT(pxfer_credits_grant(&c, (unsigned int)-1) == -EPROTO,
		 "grant -1");
	T_EXPECT(pxfer_credits_put(&c, N) == -EINVAL, "put slot n");
	T_EXPECT(pxfer_credits_unuse(&c, N) == -EINVAL, "unuse slot n");
	/* idle slots are neither put nor unused */
	T_EXPECT(pxfer_credits_put(&c, 0) == -EINVAL, "put of idle slot");
	T_EXPECT(pxfer_credits_unuse(&c, 0) == -EINVAL, "unuse of idle slot");
	consistent(&c, "sender after refusals");

	/* grant, double grant refused */
	T_EXPECT(pxfer_credits_grant(&c, 2) == 0, "grant 2");
	T_EXPECT(pxfer_credits_grant(&c, 2) == -EPROTO, "grant 2 twice");
	T_EXPECT(c.granted == 1 && pxfer_credits_ready(&c) == 1,
		 "one granted (%u, ready %u)", c.granted,
		 pxfer_credits_ready(&c));
	consistent(&c, "sender after grant");
	T_EXPECT(pxfer_credits_put(&c, 2) == -EINVAL, "put of granted slot");
	T_EXPECT(pxfer_credits_unuse(&c, 2) == -EINVAL,
		 "unuse of granted slot");

	/* take, then put: the grant is used up */
	s = pxfer_credits_take(&c);
	T_EXPECT(s == 2, "take gave %d", s);
	T_EXPECT(c.busy == 1 && c.granted == 0, "busy after take");
	T_EXPECT(pxfer_credits_take(&c) == -EAGAIN, "only one credit");
	consistent(&c, "sender after take");
	T_EXPECT(pxfer_credits_put(&c, 2) == 0, "put 2");
	T_EXPECT(c.busy == 0 && c.granted == 0 && !pxfer_credits_ready(&c),
		 "grant used up");
	T_EXPECT(pxfer_credits_take(&c) == -EAGAIN, "no credit after put");
	T_EXPECT(pxfer_credits_put(&c, 2) == -EINVAL, "put 2 twice");
	consistent(&c, "sender after put");

	/* unuse keeps the grant */
	T_EXPECT(pxfer_credits_grant(&c, 4) == 0, "grant 4");
	s = pxfer_credits_take(&c);
	T_EXPECT(s == 4, "take 4 gave %d", s);
	T_EXPECT(pxfer_credits_unuse(&c, 4) == 0, "unuse 4");
	T_EXPECT(pxfer_credits_unuse(&c, 4) == -EINVAL, "unuse 4 twice");
	T_EXPECT(c.granted == 1 && c.busy == 0 && pxfer_credits_ready(&c) == 1,
		 "grant kept after unuse");
	T_EXPECT(pxfer_credits_grant(&c, 4) == -EPROTO,
		 "grant of a slot still granted after unuse");
	consistent(&c, "sender after unuse");
	s = pxfer_credits_take(&c);
	T_EXPECT(s == 4, "retake 4 gave %d", s);
	T_EXPECT(pxfer_credits_put(&c, 4) == 0, "put 4");
	consistent(&c, "sender after retake");

	/* a grant for a BUSY slot is remembered and applied at put */
	T_EXPECT(pxfer_credits_grant(&c, 1) == 0, "grant 1");
	s = pxfer_credits_take(&c);
	T_EXPECT(s == 1, "take 1 gave %d", s);
	T_EXPECT(pxfer_credits_grant(&c, 1) == 0, "regrant of busy slot 1");
	T_EXPECT(c.regrant[1], "regrant remembered");
	T_EXPECT(pxfer_credits_grant(&c, 1) == -EPROTO,
		 "second regrant of busy slot refused");
	T_EXPECT(c.granted == 0 && c.busy == 1 && !pxfer_credits_ready(&c),
		 "regrant not usable while busy");
	T_EXPECT(pxfer_credits_take(&c) == -EAGAIN, "no credit while busy");
	consistent(&c, "sender with regrant");
	/* sent-not-after-all cannot coexist with a regrant */
	T_EXPECT(pxfer_credits_unuse(&c, 1) == -EPROTO,
		 "unuse of a regranted slot");
	consistent(&c, "sender after refused unuse");
	T_EXPECT(pxfer_credits_put(&c, 1) == 0, "put 1 with regrant");
	T_EXPECT(!c.regrant[1], "regrant consumed");
	T_EXPECT(c.granted == 1 && c.busy == 0 && pxfer_credits_ready(&c) == 1,
		 "regrant applied at put");
	consistent(&c, "sender after put with regrant");
	s = pxfer_credits_take(&c);
	T_EXPECT(s == 1, "take regranted 1 gave %d", s);
	T_EXPECT(pxfer_credits_put(&c, 1) == 0, "put 1");
	T_EXPECT(!pxfer_credits_ready(&c) && c.state[1] == PXFER_SLOT_IDLE,
		 "slot 1 idle after second put");

	/* fifo order, several grants, all slots */
	for (unsigned int i = N; i-- > 0;)
		T_EXPECT(pxfer_credits_grant(&c, i) == 0, "grant %u", i);
	consistent(&c, "sender all granted");
	T_EXPECT(c.granted == N, "all granted: %u", c.granted);
	for (unsigned int i = 0; i < N; i++) {
		s = pxfer_credits_take(&c);
		T_EXPECT(s == (int)(N - 1 - i), "take in grant order: %d at %u",
			 s, i);
	}
	T_EXPECT(pxfer_credits_take(&c) == -EAGAIN, "all taken");
	T_EXPECT(c.busy == N, "all busy");
	consistent(&c, "sender all busy");
	/* unuse one, put the rest */
	s2 = 3;
	T_EXPECT(pxfer_credits_unuse(&c, s2) == 0, "unuse 3");
	for (unsigned int i = 0; i < N; i++)
		if (i != (unsigned int)s2)
			T_EXPECT(pxfer_credits_put(&c, i) == 0, "put %u", i);
	consistent(&c, "sender mixed");
	T_EXPECT(c.granted == 1 && c.busy == 0, "only the unused slot left");
	T_EXPECT(pxfer_credits_take(&c) == s2, "the unused slot comes back");
	pxfer_credits_release(&c);
}

static void test_init_limits(void)
{
	struct pxfer_credits c;

	T_EXPECT(pxfer_credits_init(&c, 0, 1) == -EINVAL, "n = 0");
	pxfer_credits_release(&c);
	T_EXPECT(pxfer_credits_init(&c, 65536, 0) == -EINVAL, "n = 65536");
	pxfer_credits_release(&c);
	T_EXPECT(pxfer_credits_init(&c, 65535, 1) == 0, "n = 65535");
	T_EXPECT(pxfer_credits_ready(&c) == 65535, "65535 ready");
	{
		static uint16_t out[65535];
		unsigned int k = pxfer_credits_collect(&c, out, 65535);

		T_EXPECT(k == 65535 && out[0] == 0 && out[65534] == 65534,
			 "collect all of the largest ring (%u)", k);
		T_EXPECT(pxfer_credits_accept(&c, 65534) == 0, "accept last");
		T_EXPECT(pxfer_credits_accept(&c, 65535) == -EPROTO,
			 "accept 65535");
	}
	pxfer_credits_release(&c);
	T_EXPECT(pxfer_credits_init(&c, 1, 0) == 0, "n = 1");
	T_EXPECT(pxfer_credits_grant(&c, 0) == 0, "grant 0 of 1");
	T_EXPECT(pxfer_credits_grant(&c, 1) == -EPROTO, "grant 1 of 1");
	pxfer_credits_release(&c);
}

/* ---- randomized simulation ------------------------------------------ */

#define SIM_SLOTS	24
#define SIM_STEPS	100000
#define SIM_MSGS	4096

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32) % n;
}

/* a bounded FIFO of u16 */
struct q {
	uint16_t v[SIM_MSGS];
	unsigned int head, len;
};

static void q_push(struct q *q, uint16_t x)
{
	if (q->len == SIM_MSGS)
		abort();
	q->v[(q->head + q->len++) % SIM_MSGS] = x;
}

static uint16_t q_pop(struct q *q)
{
	uint16_t x = q->v[q->head];

	q->head = (q->head + 1) % SIM_MSGS;
	q->len--;
	return x;
}

/* an unordered set of slots (completions may come in any order) */
struct set {
	uint16_t v[SIM_SLOTS];
	unsigned int n;
};

static void set_add(struct set *s, uint16_t x)
{
	if (s->n == SIM_SLOTS)
		abort();
	s->v[s->n++] = x;
}

static uint16_t set_take(struct set *s, unsigned int i)
{
	uint16_t x = s->v[i];

	s->v[i] = s->v[--s->n];
	return x;
}

static int set_has(const struct set *s, uint16_t x)
{
	for (unsigned int i = 0; i < s->n; i++)
		if (s->v[i] == x)
			return 1;
	return 0;
}

struct sim {
	struct pxfer_credits r, s;
	/* CREDIT messages in flight: each a count followed by slots */
	struct q ctrl;
	struct q data;		/* chunks in flight, by slot */
	struct set reading;	/* sender: taken, being read from disk */
	struct set sending;	/* sender: sent, completion not reaped */
	struct set writing;	/* receiver: accepted, being written */
	unsigned long cycles[SIM_SLOTS];	/* times each slot was put back */
	unsigned long accepted, refused;
};

/* Where is each slot's grant? Exactly once while the receiver has it
 * GRANTED, nowhere otherwise. */
static int sim_check(struct sim *m, unsigned long step)
{
	unsigned int in_ctrl[SIM_SLOTS] = { 0 }, in_data[SIM_SLOTS] = { 0 };
	unsigned int i, j;
	int ok = 1;

	ok &= consistent(&m->r, "sim receiver");
	ok &= consistent(&m->s, "sim sender");
	for (i = 0; i < m->ctrl.len;) {
		unsigned int cnt = m->ctrl.v[(m->ctrl.head + i) % SIM_MSGS];

		for (j = 1; j <= cnt; j++)
			in_ctrl[m->ctrl.v[(m->ctrl.head + i + j) % SIM_MSGS]]++;
		i += cnt + 1;
	}
	for (i = 0; i < m->data.len; i++)
		in_data[m->data.v[(m->data.head + i) % SIM_MSGS]]++;

	for (i = 0; i < SIM_SLOTS; i++) {
		unsigned int where = in_ctrl[i] + in_data[i] +
				     (m->s.state[i] == PXFER_SLOT_GRANTED) +
				     set_has(&m->reading, i) + m->s.regrant[i];
		int rg = m->r.state[i] == PXFER_SLOT_GRANTED;

		if (where != (unsigned int)rg) {
			T_EXPECT(0, "step %lu: slot %u receiver state %u but its grant is in %u places (ctrl %u data %u sender %u reading %d regrant %u)",
				 step, i, m->r.state[i], where, in_ctrl[i],
				 in_data[i], m->s.state[i],
				 set_has(&m->reading, i), m->s.regrant[i]);
			ok = 0;
		}
		if ((m->r.state[i] == PXFER_SLOT_BUSY) !=
		    set_has(&m->writing, i)) {
			T_EXPECT(0, "step %lu: slot %u receiver busy %d writing %d",
				 step, i, m->r.state[i] == PXFER_SLOT_BUSY,
				 set_has(&m->writing, i));
			ok = 0;
		}
		if ((m->s.state[i] == PXFER_SLOT_BUSY) !=
		    (set_has(&m->reading, i) + set_has(&m->sending, i) == 1)) {
			T_EXPECT(0, "step %lu: sender slot %u busy %d but reading %d sending %d",
				 step, i, m->s.state[i] == PXFER_SLOT_BUSY,
				 set_has(&m->reading, i),
				 set_has(&m->sending, i));
			ok = 0;
		}
	}
	/* never more chunks in flight than granted */
	if (m->data.len + m->reading.n > m->r.granted) {
		T_EXPECT(0, "step %lu: %u chunks in flight, %u being read, %u granted",
			 step, m->data.len, m->reading.n, m->r.granted);
		ok = 0;
	}
	if (m->s.busy != m->reading.n + m->sending.n) {
		T_EXPECT(0, "step %lu: sender busy %u, model %u", step,
			 m->s.busy, m->reading.n + m->sending.n);
		ok = 0;
	}
	return ok;
}

/* one random action; returns 1 if something happened */
static int sim_step(struct sim *m, unsigned int action, int drain)
{
	uint16_t slots[SIM_SLOTS];
	unsigned int k, i;
	int s;

	switch (action) {
	case 0:		/* receiver sends a CREDIT with what is ready */
		if (drain)
			return 0;
		k = pxfer_credits_collect(&m->r, slots, 1 + rnd(SIM_SLOTS));
		if (!k)
			return 0;
		q_push(&m->ctrl, k);
		for (i = 0; i < k; i++)
			q_push(&m->ctrl, slots[i]);
		return 1;
	case 1:		/* sender gets a CREDIT */
		if (!m->ctrl.len)
			return 0;
		k = q_pop(&m->ctrl);
		for (i = 0; i < k; i++) {
			uint16_t slot = q_pop(&m->ctrl);

			T_EXPECT(pxfer_credits_grant(&m->s, slot) == 0,
				 "grant of slot %u", slot);
		}
		return 1;
	case 2:		/* sender takes a credit and starts a read */
		s = pxfer_credits_take(&m->s);
		if (s == -EAGAIN)
			return 0;
		T_EXPECT(s >= 0 && s < SIM_SLOTS, "take gave %d", s);
		if (s < 0 || s >= SIM_SLOTS)
			return 0;
		set_add(&m->reading, s);
		return 1;
	case 3:		/* a read finishes: send, or nothing to send after all */
		if (!m->reading.n)
			return 0;
		s = set_take(&m->reading, rnd(m->reading.n));
		if (!drain && rnd(8) == 0) {
			T_EXPECT(pxfer_credits_unuse(&m->s, s) == 0, "unuse %d", s);
		} else {
			q_push(&m->data, s);
			set_add(&m->sending, s);
		}
		return 1;
	case 4:		/* a send completion */
		if (!m->sending.n)
			return 0;
		s = set_take(&m->sending, rnd(m->sending.n));
		T_EXPECT(pxfer_credits_put(&m->s, s) == 0, "sender put %d", s);
		return 1;
	case 5:		/* the receiver gets the next chunk */
		if (!m->data.len)
			return 0;
		s = q_pop(&m->data);
		if (pxfer_credits_accept(&m->r, s)) {
			T_EXPECT(0, "chunk into slot %d that was not granted", s);
			m->refused++;
			return 1;
		}
		m->accepted++;
		set_add(&m->writing, s);
		return 1;
	case 6:		/* a write completes */
		if (!m->writing.n)
			return 0;
		s = set_take(&m->writing, rnd(m->writing.n));
		T_EXPECT(pxfer_credits_put(&m->r, s) == 0, "receiver put %d", s);
		m->cycles[s]++;
		return 1;
	}
	return 0;
}

static void test_simulation(void)
{
	struct sim *m = calloc(1, sizeof(*m));
	unsigned long step, tries = 0, drain_steps = 0;
	unsigned long min_cycles = ~0ul;
	int ok = 1, moved;

	if (!m)
		abort();
	T_EXPECT(pxfer_credits_init(&m->r, SIM_SLOTS, 1) == 0, "sim receiver");
	T_EXPECT(pxfer_credits_init(&m->s, SIM_SLOTS, 0) == 0, "sim sender");
	/* a step is one action that happened; idle draws are not counted */
	for (step = 0; step < SIM_STEPS && ok && tries < 20 * SIM_STEPS;
	     tries++) {
		/* bias: sometimes let one side run ahead of the other */
		unsigned int phase = (step / 1000) % 4, a = rnd(7);

		if (phase == 1 && a == 6 && rnd(4))
			a = 0;		/* slow disk on the receiver */
		if (phase == 2 && a == 4 && rnd(4))
			a = 5;		/* slow send completions */
		if (!sim_step(m, a, 0))
			continue;
		ok = sim_check(m, step);
		step++;
	}
	T_EXPECT(ok && step == SIM_STEPS,
		 "simulation stopped at step %lu (%lu draws)", step, tries);

	/* drain: no new credits, everything granted is used and comes back */
	do {
		moved = 0;
		for (unsigned int a = 1; a <= 6; a++)
			while (sim_step(m, a, 1)) {
				moved = 1;
				if (!sim_check(m, SIM_STEPS + drain_steps))
					goto out;
				if (++drain_steps > 10 * SIM_STEPS)
					goto out;
			}
	} while (moved);
out:
	T_EXPECT(!m->ctrl.len && !m->data.len && !m->reading.n &&
		 !m->sending.n && !m->writing.n, "drained");
	T_EXPECT(pxfer_credits_ready(&m->r) == SIM_SLOTS,
		 "every slot back at the receiver: %u of %u",
		 pxfer_credits_ready(&m->r), SIM_SLOTS);
	T_EXPECT(m->r.granted == 0 && m->r.busy == 0, "receiver empty");
	T_EXPECT(m->s.granted == 0 && m->s.busy == 0 &&
		 !pxfer_credits_ready(&m->s), "sender holds nothing");
	for (unsigned int i = 0; i < SIM_SLOTS; i++) {
		T_EXPECT(m->s.state[i] == PXFER_SLOT_IDLE && !m->s.regrant[i],
			 "sender slot %u idle", i);
		if (m->cycles[i] < min_cycles)
			min_cycles = m->cycles[i];
	}
	T_EXPECT(min_cycles > 100, "every slot went round, least %lu times",
		 min_cycles);
	T_EXPECT(m->accepted > SIM_STEPS / 20 && !m->refused,
		 "%lu chunks accepted, %lu refused", m->accepted, m->refused);
	printf("simulation: %lu chunks, slots reused at least %lu times\n",
	       m->accepted, min_cycles);
	pxfer_credits_release(&m->r);
	pxfer_credits_release(&m->s);
	free(m);
}

/*
 * A connection replaced (re-admission): the receiver's grants are void
 * and those slots ready again, a slot still being written stays busy
 * until put; the sender has nothing usable until granted anew.
 */
static void test_reset(void)
{
	struct pxfer_credits r, s;
	uint16_t out[8];
	unsigned int n;

	T_EXPECT(!pxfer_credits_init(&r, 8, 1) && !pxfer_credits_init(&s, 8, 0),
		 "reset: init");
	n = pxfer_credits_collect(&r, out, 8);
	T_EXPECT(n == 8, "reset: 8 granted, not %u", n);
	T_EXPECT(!pxfer_credits_accept(&r, out[0]) && !pxfer_credits_accept(&r, out[1]),
		 "reset: two arrive");
	for (unsigned int i = 0; i < n; i++)
		T_EXPECT(!pxfer_credits_grant(&s, out[i]), "reset: sender granted %u", out[i]);
	T_EXPECT(pxfer_credits_take(&s) >= 0, "reset: sender takes one");
	pxfer_credits_reset(&r);
	pxfer_credits_reset(&s);
	consistent(&r, "receiver after reset");
	consistent(&s, "sender after reset");
	T_EXPECT(r.busy == 2 && r.granted == 0 && pxfer_credits_ready(&r) == 6,
		 "reset: receiver busy %u granted %u ready %u, not 2 0 6",
		 r.busy, r.granted, pxfer_credits_ready(&r));
	T_EXPECT(s.busy == 0 && s.granted == 0 && pxfer_credits_take(&s) == -EAGAIN,
		 "reset: the sender still has a usable slot");
	/* an old grant is not a grant: the slot cannot arrive */
	T_EXPECT(pxfer_credits_accept(&r, out[2]) == -EPROTO,
		 "reset: a chunk arrived in a slot granted to the old connection");
	/* the written slots come back, and all 8 are granted anew */
	T_EXPECT(!pxfer_credits_put(&r, out[0]) && !pxfer_credits_put(&r, out[1]),
		 "reset: the busy slots are put");
	n = pxfer_credits_collect(&r, out, 8);
	T_EXPECT(n == 8, "reset: %u granted anew, not 8", n);
	for (unsigned int i = 0; i < n; i++)
		T_EXPECT(!pxfer_credits_grant(&s, out[i]), "reset: sender granted %u anew", out[i]);
	consistent(&r, "receiver granted anew");
	consistent(&s, "sender granted anew");
	pxfer_credits_release(&r);
	pxfer_credits_release(&s);
}

int main(void)
{
	test_init_limits();
	test_reset();
	test_receiver();
	test_sender();
	test_simulation();
	return t_result();
}
