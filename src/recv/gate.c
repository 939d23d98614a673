// SPDX-License-Identifier: MIT
/*
 * The front door's policy (gate.h): places among the pending connections
 * per source, and the delays after failed authentications. Tables are
 * searched from end to end; they hold a few hundred entries and are used
 * once per connection, never per chunk.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "recv/gate.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(RECV_QUOTA_TOTAL + RECV_QUOTA_VOUCHED <= UINT16_MAX,
	       "a place names its source in 16 bits");

/* ---- places ---------------------------------------------------------- */

static int quota_find(const struct recv_quota *q, const char *source)
{
	for (unsigned int i = 0; i < q->nsrc; i++)
		if (!strcmp(q->src[i].key, source))
			return i;
	return -1;
}

/*
 * The entry of @source, made if need be. There is always room: sources
 * with places are at most RECV_QUOTA_TOTAL, those with only sessions at
 * most RECV_QUOTA_VOUCHED.
 */
static unsigned int quota_get(struct recv_quota *q, const char *source)
{
	int s = quota_find(q, source);

	if (s >= 0)
		return s;
	s = q->nsrc++;
	memset(&q->src[s], 0, sizeof(q->src[s]));
	snprintf(q->src[s].key, sizeof(q->src[s].key), "%s", source);
	return s;
}

/* forget source @s if it holds nothing: the last entry moves into it */
static void quota_put(struct recv_quota *q, unsigned int s)
{
	unsigned int last = q->nsrc - 1;

	if (q->src[s].n || q->src[s].vouched)
		return;
	if (s != last) {
		q->src[s] = q->src[last];
		for (unsigned int i = 0; i < q->n; i++)
			if (q->e[i].src == last)
				q->e[i].src = s;
	}
	q->nsrc--;
}

/* the oldest place of a source that @pick accepts */
static unsigned int quota_oldest(const struct recv_quota *q,
				 int (*pick)(const struct recv_quota *q,
					     unsigned int s, unsigned int arg),
				 unsigned int arg)
{
	unsigned int best = 0;
	int found = 0;

	for (unsigned int i = 0; i < q->n; i++)
		if (pick(q, q->e[i].src, arg) &&
		    (!found || q->e[i].seq < q->e[best].seq)) {
			best = i;
			found = 1;
		}
	return best;
}

static int pick_source(const struct recv_quota *q, unsigned int s,
		       unsigned int which)
{
	return s == which;
}

/* unvouched sources holding @most places */
static int pick_crowd(const struct recv_quota *q, unsigned int s,
		      unsigned int most)
{
	return !q->src[s].vouched && q->src[s].n == most;
}

int recv_quota_victim(const struct recv_quota *q, const char *source,
		      unsigned int *victim)
{
	int s = quota_find(q, source);
	unsigned int most = 0;

	if (s >= 0 && q->src[s].n >= RECV_QUOTA_SOURCE) {
		*victim = quota_oldest(q, pick_source, s);
		return 1;
	}
	if (q->n < RECV_QUOTA_TOTAL)
		return 0;
	for (unsigned int i = 0; i < q->nsrc; i++)
		if (!q->src[i].vouched && q->src[i].n > most)
			most = q->src[i].n;
	if (most) {
		*victim = quota_oldest(q, pick_crowd, most);
		return 1;
	}
	/* every place is a session's: one may make room among its own */
	if (s >= 0 && q->src[s].n) {
		*victim = quota_oldest(q, pick_source, s);
		return 1;
	}
	return -ENOSPC;
}

int recv_quota_add(struct recv_quota *q, const char *source)
{
	unsigned int s;

	if (q->n == RECV_QUOTA_TOTAL)
		return -ENOSPC;
	s = quota_get(q, source);
	q->src[s].n++;
	q->e[q->n].src = s;
	q->e[q->n].seq = q->seq++;
	q->n++;
	return 0;
}

void recv_quota_remove(struct recv_quota *q, unsigned int i)
{
	unsigned int s = q->e[i].src;

	q->e[i] = q->e[--q->n];
	q->src[s].n--;
	quota_put(q, s);
}

int recv_quota_vouch(struct recv_quota *q, const char *source)
{
	int s = quota_find(q, source);
	unsigned int vouched = 0;

	if (s < 0 || !q->src[s].vouched) {
		for (unsigned int i = 0; i < q->nsrc; i++)
			vouched += !!q->src[i].vouched;
		if (vouched == RECV_QUOTA_VOUCHED)
			return -ENOSPC;
	}
	q->src[quota_get(q, source)].vouched++;
	return 0;
}

void recv_quota_unvouch(struct recv_quota *q, const char *source)
{
	int s = quota_find(q, source);

	if (s < 0 || !q->src[s].vouched)
		return;
	q->src[s].vouched--;
	quota_put(q, s);
}

unsigned int recv_quota_held(const struct recv_quota *q, const char *source)
{
	int s = quota_find(q, source);

	return s < 0 ? 0 : q->src[s].n;
}

/* ---- failed authentications ----------------------------------------- */

static int gate_find(const struct recv_gate *g, const char *source)
{
	for (unsigned int i = 0; i < g->n; i++)
		if (!strcmp(g->s[i].key, source))
			return i;
	return -1;
}

/* what @s had not reported goes into the line about the other addresses */
static void gate_fold(struct recv_gate *g, struct recv_gate_src *s)
{
	if (!s->failed)
		return;
	if (!g->other_sources || s->since < g->other_since)
		g->other_since = s->since;
	g->other_sources++;
	g->other_failed += s->failed;
	s->failed = 0;
}

/* the entry of @source, made if need be in place of the least recent */
static struct recv_gate_src *gate_get(struct recv_gate *g, const char *source)
{
	struct recv_gate_src *s;
	int i = gate_find(g, source);

	if (i >= 0)
		return &g->s[i];
	if (g->n < ARRAY_SIZE(g->s)) {
		s = &g->s[g->n++];
	} else {
		s = &g->s[0];
		for (unsigned int k = 1; k < g->n; k++)
			if (g->s[k].last < s->last)
				s = &g->s[k];
		gate_fold(g, s);
	}
	memset(s, 0, sizeof(*s));
	snprintf(s->key, sizeof(s->key), "%s", source);
	return s;
}

/* a new interval of RECV_GATE_REPORT_SECS, with its own lines, from @now */
static void gate_window(struct recv_gate *g, double now)
{
	if (now < g->window_end)
		return;
	g->window_end = now + RECV_GATE_REPORT_SECS;
	g->lines = 0;
}

double recv_gate_wait(const struct recv_gate *g, const char *source,
		      double now)
{
	int i;

	/* the common case, asked for every connection at every turn */
	if (now >= g->until)
		return 0;
	i = gate_find(g, source);
	return i >= 0 && now < g->s[i].until ? g->s[i].until - now : 0;
}

int recv_gate_failed(struct recv_gate *g, const char *source, double now)
{
	struct recv_gate_src *s = gate_get(g, source);
	double delay = RECV_GATE_DELAY_MIN;

	if (s->fails && now - s->last >= RECV_GATE_QUIET)
		s->fails = 0;
	for (unsigned int i = 0; i < s->fails && delay < RECV_GATE_DELAY_MAX; i++)
		delay *= 2;
	s->fails++;
	s->last = now;
	s->until = now + (delay < RECV_GATE_DELAY_MAX ? delay : RECV_GATE_DELAY_MAX);
	if (s->until > g->until)
		g->until = s->until;
	gate_window(g, now);
	/* the first in a while is news; the rest wait for the summary */
	if (!s->failed && now >= s->due && g->lines < RECV_GATE_LINES) {
		s->due = now + RECV_GATE_REPORT_SECS;
		g->lines++;
		return 1;
	}
	if (!s->failed)
		s->since = now;
	s->failed++;
	return 0;
}

void recv_gate_passed(struct recv_gate *g, const char *source)
{
	int i = gate_find(g, source);

	if (i >= 0) {
		g->s[i].fails = 0;
		g->s[i].until = 0;
	}
}

int recv_gate_report(struct recv_gate *g, double now, int all,
		     struct recv_gate_report *r)
{
	gate_window(g, now);
	for (unsigned int i = 0; i < g->n; i++) {
		struct recv_gate_src *s = &g->s[i];

		if (!s->failed || (!all && now < s->due))
			continue;
		s->due = now + RECV_GATE_REPORT_SECS;
		if (g->lines >= RECV_GATE_LINES) {
			gate_fold(g, s);
			continue;
		}
		g->lines++;
		*r = (struct recv_gate_report){ .source = s->key, .sources = 1,
						.failed = s->failed,
						.secs = now - s->since };
		s->failed = 0;
		return 1;
	}
	if (!g->other_sources || (!all && now < g->other_due))
		return 0;
	*r = (struct recv_gate_report){ .sources = g->other_sources,
					.failed = g->other_failed,
					.secs = now - g->other_since };
	g->other_sources = g->other_failed = 0;
	g->other_due = now + RECV_GATE_REPORT_SECS;
	return 1;
}

double recv_gate_next_report(const struct recv_gate *g)
{
	double next = g->other_sources ? g->other_due : HUGE_VAL;

	for (unsigned int i = 0; i < g->n; i++)
		if (g->s[i].failed && g->s[i].due < next)
			next = g->s[i].due;
	return next;
}
