/* SPDX-License-Identifier: MIT */
/*
 * The receiver's front door, as policy alone: who may hold a place among
 * the connections that have not authenticated yet (struct recv_quota),
 * and how fast one source may guess the secret (struct recv_gate).
 * Nothing here does I/O, logs or reads the clock: times are parameters,
 * in seconds as pxfer_now gives them, so a unit test can drive it all.
 * pending.c applies the quota, door.c the gate.
 *
 * A source is a peer's address without its port (pxfer_conn.source):
 * 127.0.0.1 and 127.0.0.2 are two sources, two connections from one host
 * are one. Neither object is locked: the thread that owns the pending
 * connections (the server's) owns them too.
 */
#ifndef PXFER_RECV_GATE_H
#define PXFER_RECV_GATE_H

#include <stdint.h>
#include "core/netaddr.h"

/* ---- places among the pending connections ---------------------------- */

/*
 * A table of pending connections has RECV_QUOTA_TOTAL places, at most
 * RECV_QUOTA_SOURCE of them held by one source. A newcomer from a source
 * that holds its share takes the place of that source's oldest
 * connection. When the table is full, the source that holds the most
 * places gives up its oldest (of several that hold as many, the one with
 * the oldest connection), except that a source vouched for (one with an
 * authenticated session, whose data connections are on their way) never
 * gives up a place to another source; a newcomer that finds every place
 * held by vouched sources is turned away.
 *
 * So a flood from one address, however fast, only ever replaces its own
 * connections, and a flood from many addresses replaces the oldest
 * connections of whoever holds the most, never a session's. A sender
 * opens its data connections one after the other: it has at most two
 * connections pending at once, which are also the youngest (each waits
 * one round trip for its answer). 32 places per source leave room for 16
 * senders behind one address (a NAT); 256 in all hold 8 sources at their
 * full share before any source has to yield to another.
 */
#define RECV_QUOTA_TOTAL 256
#define RECV_QUOTA_SOURCE 32
#define RECV_QUOTA_VOUCHED 32	/* sources vouched for at once, at most */

struct recv_quota_src {
	char key[PXFER_SOURCE_LEN];
	unsigned int n;		/* places it holds */
	unsigned int vouched;	/* its sessions */
};

/*
 * Place i of the quota is place i of the caller's table: the caller adds
 * a place at the end (recv_quota_add) and removes place i by moving its
 * last one into i, and tells the quota each time (recv_quota_remove).
 * All zeroes is an empty quota.
 */
struct recv_quota {
	struct {
		uint16_t src;	/* index into src[] */
		uint64_t seq;	/* order of arrival */
	} e[RECV_QUOTA_TOTAL];
	unsigned int n;
	/* the sources with places or sessions, in no order */
	struct recv_quota_src src[RECV_QUOTA_TOTAL + RECV_QUOTA_VOUCHED];
	unsigned int nsrc;
	uint64_t seq;
};

/*
 * recv_quota_victim - before a newcomer from @source takes a place: 0 if
 * there is room; 1 with *@victim the place to give up first (the caller
 * removes it, then adds the newcomer); -ENOSPC if the newcomer is to be
 * turned away.
 */
int recv_quota_victim(const struct recv_quota *q, const char *source,
		      unsigned int *victim);

/* recv_quota_add - a newcomer from @source takes place q->n: 0, or
 * -ENOSPC if there is none (recv_quota_victim said so) */
int recv_quota_add(struct recv_quota *q, const char *source);

/* recv_quota_remove - place @i is given up; the last place moves into @i */
void recv_quota_remove(struct recv_quota *q, unsigned int i);

/*
 * recv_quota_vouch - @source has an authenticated session: until
 * recv_quota_unvouch, no newcomer from another source takes one of its
 * places. Counted: two sessions need two unvouches. 0, or -ENOSPC when
 * RECV_QUOTA_VOUCHED sources are vouched for already (then it is not).
 */
int recv_quota_vouch(struct recv_quota *q, const char *source);
void recv_quota_unvouch(struct recv_quota *q, const char *source);

/* recv_quota_held - the places @source holds */
unsigned int recv_quota_held(const struct recv_quota *q, const char *source);

/* ---- failed authentications ----------------------------------------- */

/*
 * After a HELLO from a source fails authentication, the connections from
 * that source wait, unread, until a delay has passed: RECV_GATE_DELAY_MIN
 * after the first failure, doubling with each consecutive one up to
 * RECV_GATE_DELAY_MAX. A success, or RECV_GATE_QUIET seconds without a
 * failure, starts the source over. So however many connections it opens,
 * one address gets its guesses checked at 0, 0.05, 0.15, 0.35, 0.75,
 * 1.55, 3.15 and 6.35 s (8 in its first 10 s) and then one every 5 s:
 * 1,000 wrong guesses from one address take at least 4,966 s, 83
 * minutes. A sender is slowed, never refused: a mistyped secret costs the
 * next try 50 ms, and one behind the same address as a guesser waits its
 * turn.
 *
 * RECV_GATE_SOURCES sources are remembered; a new one takes the place of
 * the one whose last failure is oldest (an attacker with more addresses
 * than that gets a fast first guess from each).
 *
 * For the log, the first failure of a source is reported at once, the
 * rest as one line per source per RECV_GATE_REPORT_SECS. At most
 * RECV_GATE_LINES lines in an interval name a source; beyond them, the
 * counts go into one line about the other addresses.
 */
#define RECV_GATE_DELAY_MIN 0.05
#define RECV_GATE_DELAY_MAX 5.0
#define RECV_GATE_QUIET 60.0
#define RECV_GATE_SOURCES 256
#define RECV_GATE_REPORT_SECS 60.0
#define RECV_GATE_LINES 16

struct recv_gate_src {
	char key[PXFER_SOURCE_LEN];
	unsigned int fails;	/* consecutive failures */
	double last;		/* the last one */
	double until;		/* its connections wait until then */
	unsigned long failed;	/* failures not reported yet */
	double since;		/* the first of them */
	double due;		/* its next line may be written from then on */
};

/* what one line of the log says */
struct recv_gate_report {
	const char *source;	/* NULL: the other addresses, @sources of them */
	unsigned long sources;
	unsigned long failed;	/* HELLOs that failed authentication */
	double secs;		/* in the last @secs seconds */
};

/* all zeroes is an empty gate */
struct recv_gate {
	struct recv_gate_src s[RECV_GATE_SOURCES];
	unsigned int n;
	double until;		/* nobody waits beyond it */
	/* the line about the other addresses, not reported yet */
	unsigned long other_sources, other_failed;
	double other_since, other_due;
	/* lines written in the interval that ends at window_end */
	double window_end;
	unsigned int lines;
};

/*
 * recv_gate_wait - how long connections from @source still wait at
 * @now before one is read: 0 if it may be read now
 */
double recv_gate_wait(const struct recv_gate *g, const char *source,
		      double now);

/*
 * recv_gate_failed - the HELLO from @source failed authentication at @now:
 * its delay grows. 1 if the caller logs this failure now, 0 if it is
 * counted for the source's next line.
 */
int recv_gate_failed(struct recv_gate *g, const char *source, double now);

/* recv_gate_passed - @source authenticated: it starts over */
void recv_gate_passed(struct recv_gate *g, const char *source);

/*
 * recv_gate_report - the next line due at @now (with @all: every line
 * not yet written, as when the receiver stops): 1 with @r filled (its
 * source string lasts until the next call), 0 when none is due.
 */
int recv_gate_report(struct recv_gate *g, double now, int all,
		     struct recv_gate_report *r);

/* recv_gate_next_report - when the next line will be due (HUGE_VAL: none) */
double recv_gate_next_report(const struct recv_gate *g);

#endif
