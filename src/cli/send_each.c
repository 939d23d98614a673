// SPDX-License-Identifier: MIT
/*
 * pxfer send --each: the PATHs broadcast to every receiver listed, down a
 * chain (docs/broadcast.md), and the summary of how each receiver ended.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/chain.h"
#include "api/jobsend.h"
#include "cli/cli.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/sys.h"

static const char *const state_names[] = {
	[PXFER_HOP_OK] = "complete",
	[PXFER_HOP_FAILED] = "failed",
	[PXFER_HOP_LOST] = "lost",
	[PXFER_HOP_UNREACHED] = "unreached",
};

static int by_name(const void *a, const void *b)
{
	const struct pxfer_target *x = a, *y = b;

	return strverscmp(x->host, y->host);
}

static void print_json(const struct pxfer_target *to, unsigned int n,
		       const struct pxfer_chain_report *rep,
		       const struct pxfer_stats *st, uint64_t files,
		       uint64_t bytes, double secs, int code)
{
	char q[PXFER_JSON_ESCAPE_LEN(256)];

	printf("{\"status\":\"%s\",\"exit_code\":%d,\"mode\":\"each\",\"receivers\":%u,"
	       "\"transport\":\"%s\",\"files\":%llu,\"bytes\":%llu,"
	       "\"bytes_sent\":%llu,\"seconds\":%.3f,\"per_receiver\":[",
	       code ? "failed" : "ok", code, n, st->transport ? st->transport : "none",
	       (unsigned long long)files, (unsigned long long)bytes,
	       (unsigned long long)st->bytes_sent, secs);
	for (unsigned int i = 0; i < n; i++)
		printf("%s{\"host\":\"%s\",\"pos\":%u,\"state\":\"%s\",\"code\":%u,"
		       "\"lost\":%s,\"bytes\":%llu}", i ? "," : "",
		       pxfer_json_escape(q, sizeof(q), to[i].host, strlen(to[i].host)),
		       i + 1, state_names[rep[i].state], rep[i].code,
		       rep[i].state == PXFER_HOP_LOST ? "true" : "false",
		       (unsigned long long)rep[i].bytes);
	printf("]}\n");
	fflush(stdout);
}

int cli_send_each(const struct pxfer_send_opts *o, struct cli_targets *t,
		  int sort, int stall_secs, int json, int quiet)
{
	struct pxfer_chain_report rep[PXFER_CHAIN_MAX];
	struct pxfer_stats st = { 0 };
	uint64_t files = 0, bytes = 0;
	char q[PXFER_QUOTE_MAX], b[32];
	unsigned int ok = 0;
	double t0 = pxfer_now(), secs;
	int code;

	if (t->n > PXFER_CHAIN_MAX) {
		pxfer_error("--each names %u receivers; a chain takes at most %d",
			    t->n, PXFER_CHAIN_MAX);
		return PXFER_EXIT_USAGE;
	}
	if (sort)
		qsort(t->to, t->n, sizeof(*t->to), by_name);
	code = pxfer_chain_send(o, t->to, t->n, stall_secs, rep, &st, &files,
				&bytes);
	secs = pxfer_now() - t0;
	if (code == PXFER_EXIT_USAGE || code == PXFER_EXIT_LOCAL)
		return code;
	for (unsigned int i = 0; i < t->n; i++)
		ok += rep[i].state == PXFER_HOP_OK;
	if (json)
		print_json(t->to, t->n, rep, &st, files, bytes, secs, code);
	if (quiet && !code)
		return code;
	if (!json || code)
		pxfer_info("pxfer: %s %llu files (%s) to %u of %u receivers in %.1f s over %s",
			   ok == t->n ? "broadcast" : "broadcast incomplete:",
			   (unsigned long long)files, pxfer_human(b, sizeof(b), bytes),
			   ok, t->n, secs, st.transport ? st.transport : "-");
	for (unsigned int i = 0; i < t->n; i++) {
		if (rep[i].state == PXFER_HOP_OK && !o->verbose)
			continue;
		pxfer_info("pxfer:   %u. %s: %s%s", i + 1,
			   pxfer_escape(q, sizeof(q), t->to[i].host, strlen(t->to[i].host)),
			   state_names[rep[i].state],
			   rep[i].state == PXFER_HOP_OK ? "" :
			   rep[i].state == PXFER_HOP_LOST ? " (died or stalled; cut out of the chain)" :
			   rep[i].state == PXFER_HOP_UNREACHED ? " (could not be reached)" :
			   " (some files failed or were refused)");
	}
	return code;
}
