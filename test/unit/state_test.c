// SPDX-License-Identifier: MIT
/*
 * state_test: the sessions' state machines (src/engine/state.c), against
 * tables written out here from docs/protocol.md ("Sender states",
 * "Receiver states"), not taken from the code's:
 *  - for every state of either side and every message type (0 and one
 *    past the last too), whether the state takes it;
 *  - driven through pxfer_session_expect, the one place that decides:
 *    a message that belongs goes on, one that does not fails the session
 *    as an integrity error naming the message and the state, and fails it
 *    once;
 *  - the transitions: pxfer_state_enter moves along exactly the edges
 *    listed here and refuses every other pair (the session stays where it
 *    was; pxfer_session_enter fails it), and reached is the furthest state
 *    before a failure;
 *  - the states docs/protocol.md draws are exactly the enum's names
 *    (when PXFER_TOP says where the tree is).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/proto.h"
#include "engine/session.h"
#include "engine/state.h"
#include "pxfer/pxfer.h"
#include "test.h"

struct expect {
	unsigned int state;
	const char *name;
	const char *msgs;	/* the message types it takes, by name */
	const char *to;		/* the states it may enter, by name */
};

static const struct expect send_expect[] = {
	{ PXFER_SEND_CONNECTING, "CONNECTING", "CHALLENGE",
	  "AUTHENTICATING FAILED" },
	{ PXFER_SEND_AUTHENTICATING, "AUTHENTICATING", "WELCOME REFUSE",
	  "OPENING_DATA CONNECTING FAILED" },
	{ PXFER_SEND_OPENING_DATA, "OPENING_DATA", "ABORT",
	  "STREAMING FAILED" },
	{ PXFER_SEND_STREAMING, "STREAMING",
	  "FILE_OK FILE_ERR FILE_DONE CREDIT PING DATA_LOST ABORT",
	  "FINISHING FAILED" },
	{ PXFER_SEND_FINISHING, "FINISHING",
	  "CREDIT PING DATA_LOST ACK CHAIN_REPORT ABORT", "DONE FAILED" },
	{ PXFER_SEND_DONE, "DONE", "", "" },
	{ PXFER_SEND_FAILED, "FAILED", "", "" },
};

static const struct expect recv_expect[] = {
	{ PXFER_RECV_LISTENING, "LISTENING", "HELLO DATA_HELLO",
	  "AUTHENTICATING" },
	{ PXFER_RECV_AUTHENTICATING, "AUTHENTICATING", "",
	  "ACCEPTING_DATA CLEANUP" },
	{ PXFER_RECV_ACCEPTING_DATA, "ACCEPTING_DATA", "DATA_HELLO",
	  "RECEIVING CLEANUP" },
	{ PXFER_RECV_RECEIVING, "RECEIVING",
	  "FILE FILE_SUM FILE_END FIN PING DATA_LOST DATA_SENT CHAIN ABORT",
	  "FINISHING CLEANUP" },
	{ PXFER_RECV_FINISHING, "FINISHING", "", "LISTENING CLEANUP" },
	{ PXFER_RECV_CLEANUP, "CLEANUP", "", "LISTENING" },
};

/* the last line logged, and how many */
static char last_line[1024];
static unsigned int lines;

static void on_line(void *arg, enum pxfer_log_level level, const char *line)
{
	snprintf(last_line, sizeof(last_line), "%s", line);
	lines++;
}

/* whether @word is one of the space-separated words of @list */
static int listed(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

/* what every state of @m takes: the expected table, and the session's
 * one place of decision, message by message */
static void check_accepts(const struct pxfer_machine *m,
			  const struct expect *e, unsigned int n)
{
	T_EXPECT(m->n == n, "%s: %u states, %u expected", m->side, m->n, n);
	for (unsigned int i = 0; i < n && i < m->n; i++) {
		unsigned int st = e[i].state;

		T_EXPECT(!strcmp(pxfer_machine_name(m, st), e[i].name),
			 "%s state %u is %s, not %s", m->side, st,
			 pxfer_machine_name(m, st), e[i].name);
		T_EXPECT(!pxfer_machine_accepts(m, st, 0) &&
			 !pxfer_machine_accepts(m, st, PXFER_MSG_TYPE_MAX + 1) &&
			 !pxfer_machine_accepts(m, st, 31) &&
			 !pxfer_machine_accepts(m, st, 1000),
			 "%s %s takes no unknown type", m->side, e[i].name);
		for (unsigned int t = 1; t <= PXFER_MSG_TYPE_MAX; t++) {
			const char *name = pxfer_msg_name(t);
			int want = listed(e[i].msgs, name);
			struct pxfer_session s;
			int ret;

			T_EXPECT(pxfer_machine_accepts(m, st, t) == want,
				 "%s in %s: %s %s", m->side, e[i].name, name,
				 want ? "taken" : "refused");
			memset(&s, 0, sizeof(s));
			if (pxfer_session_init(&s, m == &pxfer_send_machine ?
					       "receiver" : "sender", NULL))
				exit(1);
			pxfer_state_init(&s.state, m, st);
			ret = pxfer_session_expect(&s, t);
			T_EXPECT(ret == (want ? 0 : -1) &&
				 !!pxfer_failed(&s.fail) == !want,
				 "%s in %s: pxfer_session_expect(%s) %d", m->side,
				 e[i].name, name, ret);
			if (!want) {
				T_EXPECT(pxfer_fail_code(&s.fail) == PXFER_EXIT_INTEGRITY,
					 "%s in %s: %s, exit %d", m->side, e[i].name,
					 name, pxfer_fail_code(&s.fail));
				T_EXPECT(strstr(s.fail.msg, "integrity error") &&
					 strstr(s.fail.msg, name) &&
					 strstr(s.fail.msg, e[i].name),
					 "the failure names %s and %s: %s", name,
					 e[i].name, s.fail.msg);
			}
			/* it stays where it was */
			T_EXPECT(s.state.now == st, "%s in %s: moved on %s",
				 m->side, e[i].name, name);
			pxfer_session_release(&s);
		}
	}
}

/* every pair of states: an edge exactly where the table lists one */
static void check_edges(const struct pxfer_machine *m,
			const struct expect *e, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		for (unsigned int j = 0; j < n; j++) {
			int want = listed(e[i].to, e[j].name);
			struct pxfer_state st;
			struct pxfer_session s;
			int ret;

			T_EXPECT(pxfer_machine_edge(m, e[i].state, e[j].state) == want,
				 "%s: %s -> %s %s", m->side, e[i].name, e[j].name,
				 want ? "an edge" : "no edge");
			pxfer_state_init(&st, m, e[i].state);
			ret = pxfer_state_enter(&st, e[j].state);
			T_EXPECT(ret == (want ? 0 : -EINVAL) &&
				 st.now == (want ? e[j].state : e[i].state),
				 "%s: enter %s from %s: %d, now %s", m->side,
				 e[j].name, e[i].name, ret,
				 pxfer_state_name(&st));
			/* the session's own: an edge that is not there fails it */
			memset(&s, 0, sizeof(s));
			if (pxfer_session_init(&s, "peer", NULL))
				exit(1);
			pxfer_state_init(&s.state, m, e[i].state);
			last_line[0] = 0;
			ret = pxfer_session_enter(&s, e[j].state);
			if (want) {
				char said[128];

				/* said at verbose level */
				snprintf(said, sizeof(said), ": %s -> %s",
					 e[i].name, e[j].name);
				T_EXPECT(strstr(last_line, said),
					 "the move said: %s", last_line);
			}
			T_EXPECT(ret == (want ? 0 : -1) &&
				 !!pxfer_failed(&s.fail) == !want &&
				 (want || pxfer_fail_code(&s.fail) == PXFER_EXIT_LOCAL),
				 "%s: pxfer_session_enter %s from %s: %d", m->side,
				 e[j].name, e[i].name, ret);
			pxfer_session_release(&s);
		}
		T_EXPECT(!pxfer_machine_edge(m, e[i].state, m->n) &&
			 !pxfer_machine_edge(m, m->n, e[i].state),
			 "%s: no edge to or from a state past the last", m->side);
	}
}

/* walk @path (state indexes) from its first: each step an edge; then
 * where it is and how far it got */
static void walk(const struct pxfer_machine *m, const unsigned int *path,
		 unsigned int n, unsigned int now, unsigned int reached)
{
	struct pxfer_state st;

	pxfer_state_init(&st, m, path[0]);
	for (unsigned int i = 1; i < n; i++)
		T_EXPECT(!pxfer_state_enter(&st, path[i]), "%s: step %u to %s",
			 m->side, i, pxfer_machine_name(m, path[i]));
	T_EXPECT(st.now == now && st.reached == reached,
		 "%s: now %s, reached %s", m->side, pxfer_state_name(&st),
		 pxfer_machine_name(m, st.reached));
}

static void check_paths(void)
{
	const unsigned int done[] = {
		PXFER_SEND_CONNECTING, PXFER_SEND_AUTHENTICATING,
		PXFER_SEND_CONNECTING, PXFER_SEND_AUTHENTICATING,
		PXFER_SEND_OPENING_DATA, PXFER_SEND_STREAMING,
		PXFER_SEND_FINISHING, PXFER_SEND_DONE,
	};
	const unsigned int busy[] = {
		PXFER_SEND_CONNECTING, PXFER_SEND_AUTHENTICATING,
		PXFER_SEND_CONNECTING, PXFER_SEND_FAILED,
	};
	const unsigned int failed[] = {
		PXFER_SEND_CONNECTING, PXFER_SEND_AUTHENTICATING,
		PXFER_SEND_OPENING_DATA, PXFER_SEND_FAILED,
	};
	const unsigned int received[] = {
		PXFER_RECV_LISTENING, PXFER_RECV_AUTHENTICATING,
		PXFER_RECV_ACCEPTING_DATA, PXFER_RECV_RECEIVING,
		PXFER_RECV_FINISHING, PXFER_RECV_LISTENING,
	};
	const unsigned int cleaned[] = {
		PXFER_RECV_LISTENING, PXFER_RECV_AUTHENTICATING,
		PXFER_RECV_ACCEPTING_DATA, PXFER_RECV_CLEANUP,
		PXFER_RECV_LISTENING,
	};

	walk(&pxfer_send_machine, done, 8, PXFER_SEND_DONE, PXFER_SEND_DONE);
	/* a busy receiver, then given up: it got to AUTHENTICATING */
	walk(&pxfer_send_machine, busy, 4, PXFER_SEND_FAILED,
	     PXFER_SEND_AUTHENTICATING);
	walk(&pxfer_send_machine, failed, 4, PXFER_SEND_FAILED,
	     PXFER_SEND_OPENING_DATA);
	walk(&pxfer_recv_machine, received, 6, PXFER_RECV_LISTENING,
	     PXFER_RECV_FINISHING);
	walk(&pxfer_recv_machine, cleaned, 5, PXFER_RECV_LISTENING,
	     PXFER_RECV_ACCEPTING_DATA);
}

/*
 * The diagram under @heading in docs/protocol.md (the indented lines
 * after it): every word of capitals in it is a state of @m, and every
 * state of @m is in it.
 */
static void check_doc(const char *doc, const char *heading,
		      const struct pxfer_machine *m)
{
	const char *p = strstr(doc, heading);
	unsigned int seen = 0;

	T_EXPECT(p, "docs/protocol.md has %s", heading);
	if (!p)
		return;
	p = strchr(p, '\n');
	while (p && (p[1] == '\n' || p[1] == ' ')) {
		const char *end = strchr(p + 1, '\n');

		for (const char *q = p + 1; end && q < end; q++) {
			char w[32];
			size_t n = 0;
			unsigned int s;

			if (!isupper((unsigned char)*q) ||
			    (q > p + 1 && (isalnum((unsigned char)q[-1]) || q[-1] == '_')))
				continue;
			while (q + n < end && n < sizeof(w) - 1 &&
			       (isupper((unsigned char)q[n]) || q[n] == '_'))
				n++;
			memcpy(w, q, n);
			w[n] = 0;
			for (s = 0; s < m->n && strcmp(m->names[s], w); s++)
				;
			T_EXPECT(s < m->n, "%s: %s is no %s state", heading, w,
				 m->side);
			if (s < m->n)
				seen |= 1u << s;
			q += n;
		}
		p = end;
	}
	T_EXPECT(seen == (1u << m->n) - 1, "%s draws every %s state (%#x)",
		 heading, m->side, seen);
}

static void check_docs(void)
{
	const char *top = getenv("PXFER_TOP");
	char path[4096], *doc;
	FILE *f;
	long n;

	if (!top)
		return;
	snprintf(path, sizeof(path), "%s/docs/protocol.md", top);
	f = fopen(path, "r");
	T_EXPECT(f, "%s can be read", path);
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	doc = calloc(1, n + 1);
	if (!doc || fread(doc, 1, n, f) != (size_t)n)
		exit(1);
	fclose(f);
	check_doc(doc, "### Sender states", &pxfer_send_machine);
	check_doc(doc, "### Receiver states", &pxfer_recv_machine);
	free(doc);
}

int main(void)
{
	struct pxfer_log log;

	if (pxfer_log_init(&log, on_line, NULL, 1))
		return 1;
	pxfer_log_attach(&log);
	check_accepts(&pxfer_send_machine, send_expect,
		      sizeof(send_expect) / sizeof(send_expect[0]));
	check_accepts(&pxfer_recv_machine, recv_expect,
		      sizeof(recv_expect) / sizeof(recv_expect[0]));
	check_edges(&pxfer_send_machine, send_expect,
		    sizeof(send_expect) / sizeof(send_expect[0]));
	check_edges(&pxfer_recv_machine, recv_expect,
		    sizeof(recv_expect) / sizeof(recv_expect[0]));
	check_paths();
	check_docs();
	T_EXPECT(lines > 0, "lines logged");
	pxfer_log_attach(NULL);
	pxfer_log_release(&log);
	return t_result();
}
