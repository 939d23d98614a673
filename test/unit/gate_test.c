// SPDX-License-Identifier: MIT
/*
 * gate_test: the receiver's front door (src/recv/gate.c).
 * Places among the pending connections:
 *  - when the table is full, the oldest connection makes room, also after
 *    places were given up in the middle (the last one moved into the
 *    hole, and an older receiver then dropped whatever sat in place 0)
 *  - a flood from one source only ever replaces its own oldest, never
 *    another source's places, and never holds more than its share
 *  - when the table is full, the source holding the most gives way; a
 *    source vouched for never gives way to another, and when every place
 *    is a session's, a stranger is turned away
 *  - totals: the places per source add up, and sources that hold
 *    nothing are forgotten; vouching is counted and bounded
 * Failed authentications:
 *  - the wait after a failure starts at 50 ms and doubles up to 5 s, so
 *    a guesser who tries every millisecond gets 8 guesses checked in 10 s
 *    and needs at least 4,966 s for 1,000; other sources do not wait
 *  - a success, or a minute without failures, starts a source over
 *  - the table of sources is bounded: a new one replaces the one whose
 *    last failure is oldest, whose counts are still reported, as "other
 *    addresses"
 *  - the log: the first failure at once, then one line per source per
 *    interval with what it counted, at most 16 lines naming a source in
 *    an interval, and everything at the end
 */
#include <errno.h>
#include <math.h>	/* HUGE_VAL */
#include <stdio.h>
#include <string.h>

#include "recv/gate.h"
#include "test.h"

/* ---- places ---------------------------------------------------------- */

/* a table of pending connections as pending.c keeps one: ids of arrival */
struct table {
	struct recv_quota q;
	unsigned int id[RECV_QUOTA_TOTAL];
	char source[RECV_QUOTA_TOTAL][PXFER_SOURCE_LEN];
	unsigned int next_id;
};

static struct table tab;

static void t_remove(struct table *t, unsigned int i)
{
	unsigned int last = t->q.n - 1;

	t->id[i] = t->id[last];
	memcpy(t->source[i], t->source[last], PXFER_SOURCE_LEN);
	recv_quota_remove(&t->q, i);
}

/* a newcomer from @source: the id of the connection it replaced, -1 if
 * none, -2 if it was turned away */
static int t_add(struct table *t, const char *source)
{
	unsigned int victim = 0, n = t->q.n;
	int r = recv_quota_victim(&t->q, source, &victim), gone = -1;

	if (r < 0)
		return -2;
	if (r > 0) {
		T_EXPECT(victim < n, "victim %u of %u places", victim, n);
		gone = t->id[victim];
		t_remove(t, victim);
	}
	T_EXPECT(recv_quota_add(&t->q, source) == 0, "no room after %d", r);
	t->id[t->q.n - 1] = t->next_id++;
	snprintf(t->source[t->q.n - 1], PXFER_SOURCE_LEN, "%s", source);
	return gone;
}

static void t_reset(struct table *t)
{
	memset(t, 0, sizeof(*t));
}

static const char *addr(unsigned int i)
{
	static char buf[8][32];
	static unsigned int k;
	char *b = buf[k++ % 8];

	snprintf(b, 32, "10.%u.%u.%u", (i >> 16) & 255, (i >> 8) & 255, i & 255);
	return b;
}

/* the places held add up, as the table's own sources say */
static void t_check_counts(const struct table *t)
{
	unsigned int sum = 0;

	for (unsigned int s = 0; s < t->q.nsrc; s++) {
		unsigned int n = 0;

		for (unsigned int i = 0; i < t->q.n; i++)
			n += !strcmp(t->source[i], t->q.src[s].key);
		T_EXPECT(n == t->q.src[s].n, "'%s' holds %u, counted %u",
			 t->q.src[s].key, n, t->q.src[s].n);
		T_EXPECT(n || t->q.src[s].vouched, "'%s' is kept for nothing",
			 t->q.src[s].key);
		sum += n;
	}
	T_EXPECT(sum == t->q.n, "%u places, %u counted", t->q.n, sum);
}

/* the id of the oldest connection in @t */
static unsigned int t_oldest(const struct table *t)
{
	unsigned int min = t->id[0];

	for (unsigned int i = 1; i < t->q.n; i++)
		if (t->id[i] < min)
			min = t->id[i];
	return min;
}

static void test_oldest_makes_room(void)
{
	struct table *t = &tab;
	unsigned int want;
	int gone;

	t_reset(t);
	for (unsigned int i = 0; i < RECV_QUOTA_TOTAL; i++)
		T_EXPECT(t_add(t, addr(i)) == -1, "a place was given up early");
	/* connection 0 answers; the last one moves into its place */
	t_remove(t, 0);
	T_EXPECT(t_add(t, addr(1000)) == -1, "a place given up with room left");
	/* full: the oldest is connection 1, not the newest sitting in place 0 */
	gone = t_add(t, addr(1001));
	T_EXPECT(gone == 1, "connection %d made room, not 1", gone);
	/* and so on, in order of arrival, whatever holes were filled */
	for (unsigned int i = 0; i < 1000; i++) {
		if (i % 7 == 0) {
			t_remove(t, (i * 31) % t->q.n);
			t_add(t, addr(2000 + i));
			continue;
		}
		want = t_oldest(t);
		gone = t_add(t, addr(3000 + i));
		T_EXPECT(gone == (int)want, "connection %d made room, not %u",
			 gone, want);
	}
	t_check_counts(t);
}

static void test_flood_one_source(void)
{
	struct table *t = &tab;
	static unsigned int flood[5000];
	unsigned int legit_ids[3];

	t_reset(t);
	t_add(t, "127.0.0.1");
	legit_ids[0] = t->next_id - 1;
	for (unsigned int i = 0; i < 10; i++)
		t_add(t, addr(i));
	t_add(t, "127.0.0.1");
	legit_ids[1] = t->next_id - 1;
	for (unsigned int i = 0; i < 5000; i++) {
		int gone = t_add(t, "127.0.0.2");

		flood[i] = t->next_id - 1;
		if (i < RECV_QUOTA_SOURCE) {
			T_EXPECT(gone == -1, "newcomer %u replaced %d", i, gone);
		} else {
			/* its own oldest: RECV_QUOTA_SOURCE arrivals ago */
			T_EXPECT(gone == (int)flood[i - RECV_QUOTA_SOURCE],
				 "newcomer %u replaced %d, not %u", i, gone,
				 flood[i - RECV_QUOTA_SOURCE]);
		}
		T_EXPECT(recv_quota_held(&t->q, "127.0.0.2") <= RECV_QUOTA_SOURCE,
			 "the flood holds %u places",
			 recv_quota_held(&t->q, "127.0.0.2"));
		if (i == 100) {	/* a legitimate connection amid the flood */
			t_add(t, "127.0.0.1");
			legit_ids[2] = t->next_id - 1;
		}
	}
	T_EXPECT(recv_quota_held(&t->q, "127.0.0.1") == 3,
		 "the sender holds %u of its 3 places",
		 recv_quota_held(&t->q, "127.0.0.1"));
	for (unsigned int k = 0; k < 3; k++) {
		int found = 0;

		for (unsigned int i = 0; i < t->q.n; i++)
			found |= t->id[i] == legit_ids[k];
		T_EXPECT(found, "the sender's connection %u was dropped",
			 legit_ids[k]);
	}
	T_EXPECT(t->q.n == 10 + 3 + RECV_QUOTA_SOURCE, "%u places", t->q.n);
	t_check_counts(t);
}

static void test_flood_many_sources(void)
{
	struct table *t = &tab;
	unsigned int i;
	int gone;

	/* the source holding the most gives way, its oldest first */
	t_reset(t);
	for (i = 0; i < 10; i++)
		t_add(t, "192.0.2.1");
	for (i = 0; i < 5; i++)
		t_add(t, "192.0.2.2");
	for (i = 0; t->q.n < RECV_QUOTA_TOTAL; i++)
		t_add(t, addr(i));
	gone = t_add(t, "192.0.2.3");
	T_EXPECT(gone == 0, "connection %d made room, not 0 (the oldest of the most)",
		 gone);
	for (i = 1; i < 5; i++)
		T_EXPECT(t_add(t, addr(10000 + i)) == (int)i,
			 "the largest holder did not give way");
	T_EXPECT(recv_quota_held(&t->q, "192.0.2.1") == 5, "%u",
		 recv_quota_held(&t->q, "192.0.2.1"));
	/* 192.0.2.1 and .2 hold 5 each now: the older one gives way */
	gone = t_add(t, addr(20000));
	T_EXPECT(gone == 5, "connection %d made room, not 5", gone);
	gone = t_add(t, addr(20001));
	T_EXPECT(gone == 10, "connection %d made room, not 10 (of 192.0.2.2)",
		 gone);
	t_check_counts(t);

	/* a session's source never gives way to a flood from everywhere */
	t_reset(t);
	T_EXPECT(recv_quota_vouch(&t->q, "127.0.0.1") == 0, "vouch");
	t_add(t, "127.0.0.1");
	t_add(t, "127.0.0.1");
	for (i = 0; i < 20000; i++) {
		gone = t_add(t, addr(i));
		T_EXPECT(gone != 0 && gone != 1, "a session's connection %d gave way to %s",
			 gone, addr(i));
		if (gone == 0 || gone == 1)
			break;
	}
	T_EXPECT(recv_quota_held(&t->q, "127.0.0.1") == 2, "%u",
		 recv_quota_held(&t->q, "127.0.0.1"));
	T_EXPECT(t->q.n == RECV_QUOTA_TOTAL, "%u places", t->q.n);
	t_check_counts(t);

	/* and without a session, a young connection outlives the old ones */
	recv_quota_unvouch(&t->q, "127.0.0.1");
	t_add(t, "127.0.0.3");
	for (i = 0; i < RECV_QUOTA_TOTAL - 10; i++)
		t_add(t, addr(50000 + i));
	T_EXPECT(recv_quota_held(&t->q, "127.0.0.3") == 1,
		 "a connection gave way before older ones");
	t_check_counts(t);

	/* a session's source holding as many as the largest other, and older
	 * ones: the other gives way */
	t_reset(t);
	T_EXPECT(recv_quota_vouch(&t->q, "127.0.0.1") == 0, "vouch");
	for (i = 0; i < 5; i++)
		t_add(t, "127.0.0.1");
	for (i = 0; i < 5; i++)
		t_add(t, "192.0.2.1");
	for (i = 0; t->q.n < RECV_QUOTA_TOTAL; i++)
		t_add(t, addr(i));
	gone = t_add(t, "192.0.2.3");
	T_EXPECT(gone == 5, "connection %d made room, not 5", gone);
	t_check_counts(t);
}

static void test_vouched(void)
{
	struct table *t = &tab;
	char key[32];
	unsigned int i;
	int gone;

	/* every place a session's: strangers are turned away */
	t_reset(t);
	for (i = 0; i < RECV_QUOTA_TOTAL / RECV_QUOTA_SOURCE; i++) {
		snprintf(key, sizeof(key), "198.51.100.%u", i);
		T_EXPECT(recv_quota_vouch(&t->q, key) == 0, "vouch %s", key);
		for (unsigned int k = 0; k < RECV_QUOTA_SOURCE; k++)
			t_add(t, key);
	}
	T_EXPECT(t->q.n == RECV_QUOTA_TOTAL, "%u places", t->q.n);
	T_EXPECT(t_add(t, "203.0.113.1") == -2, "a stranger took a session's place");
	/* a session's newcomer makes room among its own */
	gone = t_add(t, "198.51.100.3");
	T_EXPECT(gone == 3 * RECV_QUOTA_SOURCE, "connection %d made room", gone);
	t_check_counts(t);

	/* vouching is counted, bounded, and undone */
	t_reset(t);
	T_EXPECT(recv_quota_vouch(&t->q, "127.0.0.1") == 0, "vouch");
	T_EXPECT(recv_quota_vouch(&t->q, "127.0.0.1") == 0, "vouch again");
	for (i = 1; i < RECV_QUOTA_VOUCHED; i++)
		T_EXPECT(recv_quota_vouch(&t->q, addr(i)) == 0, "vouch %u", i);
	T_EXPECT(recv_quota_vouch(&t->q, addr(RECV_QUOTA_VOUCHED)) == -ENOSPC,
		 "vouched for more than %d sources", RECV_QUOTA_VOUCHED);
	T_EXPECT(recv_quota_vouch(&t->q, "127.0.0.1") == 0,
		 "a source vouched for could not be again");
	recv_quota_unvouch(&t->q, addr(1));
	T_EXPECT(recv_quota_vouch(&t->q, addr(RECV_QUOTA_VOUCHED)) == 0,
		 "no room after an unvouch");
	for (i = 0; i < 3; i++)
		recv_quota_unvouch(&t->q, "127.0.0.1");
	for (i = 2; i <= RECV_QUOTA_VOUCHED; i++)
		recv_quota_unvouch(&t->q, addr(i));
	recv_quota_unvouch(&t->q, "never.vouched");
	T_EXPECT(t->q.nsrc == 0, "%u sources kept for nothing", t->q.nsrc);

	/* all given up: nothing is remembered */
	t_add(t, "127.0.0.1");
	t_add(t, "127.0.0.2");
	t_add(t, "127.0.0.1");
	while (t->q.n)
		t_remove(t, t->q.n / 2);
	T_EXPECT(t->q.nsrc == 0, "%u sources kept", t->q.nsrc);
}

/* ---- failed authentications ----------------------------------------- */

static struct recv_gate gate;

/* (no libm for fabs) */
static int near(double a, double b)
{
	return a - b < 1e-9 && b - a < 1e-9;
}

#define T0 1000.0

/* a guesser trying every millisecond from @source for @secs, every guess
 * checked being wrong: how many were checked */
static unsigned int guess(struct recv_gate *g, const char *source, double t0,
			  double secs)
{
	unsigned int checked = 0;

	for (long ms = 0; ms < secs * 1000; ms++) {
		double now = t0 + ms / 1000.0;

		if (recv_gate_wait(g, source, now) > 0)
			continue;
		recv_gate_failed(g, source, now);
		checked++;
	}
	return checked;
}

static void test_delays(void)
{
	struct recv_gate *g = &gate;
	double t, sum;
	unsigned int n;

	memset(g, 0, sizeof(*g));
	T_EXPECT(recv_gate_wait(g, "192.0.2.9", T0) == 0,
		 "a source that never failed waits");
	T_EXPECT(recv_gate_failed(g, "192.0.2.9", T0) == 1,
		 "the first failure is not logged at once");
	T_EXPECT(near(recv_gate_wait(g, "192.0.2.9", T0 + 0.04), 0.01),
		 "waits %f s 40 ms after a failure, not 0.01",
		 recv_gate_wait(g, "192.0.2.9", T0 + 0.04));
	T_EXPECT(recv_gate_wait(g, "192.0.2.10", T0 + 0.04) == 0,
		 "another source waits");
	T_EXPECT(recv_gate_wait(g, "192.0.2.9", T0 + 0.05) == 0,
		 "waits after 50 ms");

	/* the delays double: 0.05 0.1 0.2 0.4 0.8 1.6 3.2 5 5 ... */
	memset(g, 0, sizeof(*g));
	t = T0;
	sum = 0;
	for (n = 0; n < 12; n++) {
		double want = n < 7 ? 0.05 * (1 << n) : 5;

		recv_gate_failed(g, "192.0.2.9", t);
		T_EXPECT(recv_gate_wait(g, "192.0.2.9", t + want - 1e-6) > 0,
			 "failure %u: no wait of %f s", n + 1, want);
		T_EXPECT(recv_gate_wait(g, "192.0.2.9", t + want) == 0,
			 "failure %u: a wait longer than %f s", n + 1, want);
		t += want;
		sum += want;
	}
	T_EXPECT(near(sum, 6.35 + 5 * 5), "%f s for 12", sum);

	/* a guesser as fast as it likes: 8 checked in 10 s; 1,000 take 4,966 s */
	memset(g, 0, sizeof(*g));
	n = guess(g, "192.0.2.9", T0, 10);
	T_EXPECT(n == 8, "%u guesses checked in 10 s, not 8", n);
	memset(g, 0, sizeof(*g));
	n = guess(g, "192.0.2.9", T0, 4966.0);
	T_EXPECT(n == 999, "%u guesses checked in 4,966 s, not 999", n);
	n = guess(g, "192.0.2.9", T0 + 4966.0, 0.5);
	T_EXPECT(n == 1, "the 1,000th guess was not checked at 4,966.35 s");

	/* a success starts the source over */
	memset(g, 0, sizeof(*g));
	guess(g, "192.0.2.9", T0, 5);
	recv_gate_passed(g, "192.0.2.9");
	T_EXPECT(recv_gate_wait(g, "192.0.2.9", T0 + 5) == 0,
		 "waits after a success");
	recv_gate_failed(g, "192.0.2.9", T0 + 5);
	T_EXPECT(recv_gate_wait(g, "192.0.2.9", T0 + 5.05) == 0,
		 "not back to 50 ms after a success");

	/* and so does a quiet minute */
	memset(g, 0, sizeof(*g));
	guess(g, "192.0.2.9", T0, 10);
	recv_gate_failed(g, "192.0.2.9", T0 + 100);
	T_EXPECT(recv_gate_wait(g, "192.0.2.9", T0 + 100.05) == 0,
		 "not back to 50 ms after a quiet minute");
	recv_gate_failed(g, "192.0.2.9", T0 + 100.05);
	T_EXPECT(recv_gate_wait(g, "192.0.2.9", T0 + 100.1) > 0,
		 "the delay did not grow again");
}

static void test_sources_bounded(void)
{
	struct recv_gate *g = &gate;
	struct recv_gate_report r;
	unsigned int i, lines = 0;

	memset(g, 0, sizeof(*g));
	for (i = 0; i < RECV_GATE_SOURCES; i++)
		recv_gate_failed(g, addr(i), T0 + i * 1e-5);
	/* source 0 fails again: 1 is now the least recent */
	recv_gate_failed(g, addr(0), T0 + 0.06);
	recv_gate_failed(g, "203.0.113.7", T0 + 0.061);
	T_EXPECT(g->n == RECV_GATE_SOURCES, "%u sources remembered", g->n);
	T_EXPECT(recv_gate_wait(g, addr(0), T0 + 0.062) > 0,
		 "the recent source 0 was forgotten");
	T_EXPECT(recv_gate_wait(g, addr(1), T0 + 0.062) == 0,
		 "the least recent source 1 is still remembered");
	T_EXPECT(recv_gate_wait(g, addr(2), T0 + 0.062) == 0,
		 "source 2's delay did not end");
	T_EXPECT(recv_gate_wait(g, "203.0.113.7", T0 + 0.062) > 0,
		 "the new source does not wait");
	/* what source 0 counted is reported; all, at the end, in few lines */
	while (recv_gate_report(g, T0 + 1, 1, &r)) {
		lines++;
		T_EXPECT(r.failed > 0, "an empty line");
	}
	T_EXPECT(lines >= 1 && lines <= RECV_GATE_LINES + 1, "%u lines", lines);
}

static void test_report(void)
{
	struct recv_gate *g = &gate;
	struct recv_gate_report r;
	unsigned long failed = 0, sources = 0;
	unsigned int i, now_lines = 0, lines = 0;
	double t;
	int named = 0;

	/* one source: the first failure at once, the rest in one line */
	memset(g, 0, sizeof(*g));
	T_EXPECT(recv_gate_failed(g, "192.0.2.9", T0) == 1, "first not at once");
	T_EXPECT(recv_gate_next_report(g) == HUGE_VAL, "a line due for nothing");
	T_EXPECT(recv_gate_report(g, T0 + 1, 0, &r) == 0, "a line for nothing");
	for (t = T0 + 1; t < T0 + 10; t += 0.001) {
		if (recv_gate_wait(g, "192.0.2.9", t) > 0)
			continue;
		T_EXPECT(recv_gate_failed(g, "192.0.2.9", t) == 0,
			 "a later failure logged at once");
		failed++;
	}
	T_EXPECT(failed == 7, "%lu failures", failed);
	T_EXPECT(near(recv_gate_next_report(g), T0 + RECV_GATE_REPORT_SECS),
		 "next line due at %f", recv_gate_next_report(g) - T0);
	T_EXPECT(recv_gate_report(g, T0 + 59, 0, &r) == 0, "a line too early");
	T_EXPECT(recv_gate_report(g, T0 + 60, 0, &r) == 1, "no line after a minute");
	T_EXPECT(r.source && !strcmp(r.source, "192.0.2.9"), "the line names '%s'",
		 r.source ? r.source : "(others)");
	T_EXPECT(r.failed == failed, "%lu failed; counted %lu", r.failed, failed);
	T_EXPECT(r.secs > 58.9 && r.secs < 59.1, "over %f s", r.secs);
	T_EXPECT(recv_gate_report(g, T0 + 60, 0, &r) == 0, "a second line");
	/* a failure soon after the line waits for the next */
	T_EXPECT(recv_gate_failed(g, "192.0.2.9", T0 + 70) == 0,
		 "a failure 10 s after a line logged at once");
	T_EXPECT(recv_gate_report(g, T0 + 70, 0, &r) == 0, "a line too early");
	T_EXPECT(recv_gate_report(g, T0 + 71, 1, &r) == 1 && r.failed == 1,
		 "the end did not report everything");
	/* a failure long after starts a new story, told at once */
	T_EXPECT(recv_gate_failed(g, "192.0.2.9", T0 + 500) == 1,
		 "a failure after a quiet while not logged at once");

	/* many sources: at most RECV_GATE_LINES name one in an interval */
	memset(g, 0, sizeof(*g));
	for (i = 0; i < 100; i++) {
		now_lines += recv_gate_failed(g, addr(i), T0 + i * 0.01);
		recv_gate_failed(g, addr(i), T0 + 1 + i * 0.01);
	}
	T_EXPECT(now_lines == RECV_GATE_LINES, "%u lines at once", now_lines);
	failed = 0;
	for (t = T0 + 2; t < T0 + 200; t += 1) {
		while (recv_gate_report(g, t, 0, &r)) {
			lines++;
			named += r.source != NULL;
			sources += r.sources;
			failed += r.failed;
		}
		if (t < T0 + 60) {
			T_EXPECT(lines <= 1, "%u lines in the first minute", lines);
		}
	}
	T_EXPECT(sources == 100, "%lu sources reported", sources);
	T_EXPECT(failed == 200 - RECV_GATE_LINES, "%lu failures reported", failed);
	T_EXPECT(named <= 2 * RECV_GATE_LINES, "%d lines named a source", named);
	T_EXPECT(lines <= 2 * (RECV_GATE_LINES + 1), "%u lines in all", lines);
}

int main(void)
{
	test_oldest_makes_room();
	test_flood_one_source();
	test_flood_many_sources();
	test_vouched();
	test_delays();
	test_sources_bounded();
	test_report();
	return t_result();
}
