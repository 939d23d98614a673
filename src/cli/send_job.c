// SPDX-License-Identifier: MIT
/*
 * pxfer send as one rank of a job (docs/scaleout.md), or to several
 * receivers: the --to list, the launcher's wire-up, and the job's one
 * summary, printed by rank 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jobsend.h"
#include "cli.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/netaddr.h"

/* the longest host file read */
#define TO_FILE_MAX (1u << 20)

/* HOST[:PORT][/DEST] in @arg (cut up in place), with [v6] in brackets */
int cli_parse_target(char *arg, const char **host, const char **port,
		     const char **dest)
{
	char *rest, *slash, *colon;

	*host = arg;
	*port = NULL;
	*dest = NULL;
	if (*arg == '[') {
		rest = strchr(arg, ']');
		if (!rest)
			return -EINVAL;
		*host = arg + 1;
		*rest++ = 0;
	} else {
		rest = arg + strcspn(arg, ":/");
	}
	slash = strchr(rest, '/');
	if (slash) {
		char *d = slash + 1;

		*slash = 0;
		while (*d == '/')
			d++;
		/* "host/a/b/" means a/b; a trailing slash is not a name */
		for (size_t n = strlen(d); n && d[n - 1] == '/'; n--)
			d[n - 1] = 0;
		*dest = *d ? d : NULL;
	}
	colon = strchr(rest, ':');
	if (colon) {
		*colon = 0;
		if (!colon[1])
			return -EINVAL;	/* "host:" or "host:/dest": no port */
		*port = colon + 1;
	} else if (*rest) {
		return -EINVAL;
	}
	return **host ? 0 : -EINVAL;
}

/* the text of host file @path, NUL-terminated (caller frees), or NULL
 * after saying why */
static char *read_to_file(const char *path)
{
	char q[PXFER_QUOTE_MAX];
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	if (!f) {
		pxfer_error("cannot read the receivers' file %s: %s",
			    pxfer_quote_str(q, sizeof(q), path), strerror(errno));
		return NULL;
	}
	buf = malloc(TO_FILE_MAX + 1);
	n = buf ? fread(buf, 1, TO_FILE_MAX + 1, f) : 0;
	if (!buf || ferror(f) || n > TO_FILE_MAX) {
		pxfer_error("cannot read the receivers' file %s: %s",
			    pxfer_quote_str(q, sizeof(q), path),
			    !buf ? "out of memory" : n > TO_FILE_MAX ?
			    "it is larger than 1 MiB" : strerror(errno));
		free(buf);
		buf = NULL;
	} else {
		buf[n] = 0;
	}
	fclose(f);
	return buf;
}

/* one receiver of the list, @w (a word cut in place); 0 or -1 said */
static int add_target(struct cli_targets *t, char *w, const char *where)
{
	struct pxfer_target *x;
	char copy[512];

	if (t->n == PXFER_TARGETS_MAX)
		return pxfer_error("%s names more than %d receivers", where,
				   PXFER_TARGETS_MAX);
	snprintf(copy, sizeof(copy), "%s", w);
	x = &t->to[t->n];
	if (cli_parse_target(w, &x->host, &x->port, &x->dest))
		return pxfer_error("%s: '%s' is not HOST[:PORT][/DEST]", where, copy);
	if (x->port && pxfer_port_check(x->port))
		return pxfer_error("%s: the PORT of '%s' is a number from 1 to 65535",
				   where, copy);
	t->n++;
	return 0;
}

int cli_targets_parse(struct cli_targets *t, const char *opt,
		      const char *arg)
{
	char q[PXFER_QUOTE_MAX], where[PXFER_QUOTE_MAX + 32];
	char *save = NULL, *w;
	int file = arg[0] == '@';

	memset(t, 0, sizeof(*t));
	t->to = calloc(PXFER_TARGETS_MAX, sizeof(*t->to));
	if (!t->to)
		return pxfer_error("out of memory");
	if (file) {
		snprintf(where, sizeof(where), "the receivers' file %s",
			 pxfer_quote_str(q, sizeof(q), arg + 1));
		t->text = read_to_file(arg + 1);
	} else {
		snprintf(where, sizeof(where), "%s", opt);
		t->text = strdup(arg);
	}
	if (!t->text)
		return file ? -1 : pxfer_error("out of memory");
	/* a file: a receiver a line, # comments; a list: commas */
	for (char *line = strtok_r(t->text, file ? "\n" : ",", &save); line;
	     line = strtok_r(NULL, file ? "\n" : ",", &save)) {
		char *hash = file ? strchr(line, '#') : NULL;

		if (hash)
			*hash = 0;
		line += strspn(line, " \t\r");
		w = line + strcspn(line, " \t\r");
		if (*w) {
			char *more = w + strspn(w, " \t\r");

			if (*more)
				return pxfer_error("%s: '%s' is more than one HOST[:PORT][/DEST]",
						   where, line);
			*w = 0;
		}
		if (!*line) {
			if (file)
				continue;
			return pxfer_error("%s has an empty receiver: '%s'", opt, arg);
		}
		if (add_target(t, line, where))
			return -1;
	}
	if (!t->n)
		return pxfer_error("%s names no receiver", where);
	return 0;
}

void cli_targets_release(struct cli_targets *t)
{
	free(t->to);
	free(t->text);
	memset(t, 0, sizeof(*t));
}

static void print_job_json(const struct pxfer_send_opts *o,
			   const struct cli_targets *t,
			   const struct pxfer_job_report *rep, int code)
{
	const struct pxfer_job_outcome *out = &rep->out;
	char q[PXFER_JSON_ESCAPE_LEN(256)];

	printf("{\"status\":\"%s\",\"exit_code\":%d,\"ranks\":%u,\"receivers\":%u,"
	       "\"transport\":\"%s\",\"files\":%llu,\"dirs\":%llu,\"links\":%llu,"
	       "\"bytes\":%llu,\"files_failed\":%llu,\"files_skipped\":%llu,"
	       "\"files_same\":%llu,\"bytes_skipped\":%llu,\"bytes_sent\":%llu,"
	       "\"units\":%llu,\"units_again\":%llu,\"seconds\":%.3f,"
	       "\"bytes_per_second\":%.0f,\"per_rank\":[",
	       code ? "failed" : "ok", code, out->nranks, out->nrecv,
	       rep->mine.transport ? rep->mine.transport : "none",
	       (unsigned long long)out->files, (unsigned long long)out->dirs,
	       (unsigned long long)out->links, (unsigned long long)out->bytes,
	       (unsigned long long)out->files_failed,
	       (unsigned long long)out->files_skipped,
	       (unsigned long long)out->files_same,
	       (unsigned long long)out->bytes_same,
	       (unsigned long long)out->bytes_sent,
	       (unsigned long long)out->units,
	       (unsigned long long)out->units_again, rep->seconds,
	       rep->seconds > 0 ? out->bytes_sent / rep->seconds : 0.0);
	for (uint32_t i = 0; out->rank && i < out->nranks; i++)
		printf("%s{\"rank\":%u,\"units\":%llu,\"ranges\":%llu,"
		       "\"files\":%llu,\"bytes_sent\":%llu}", i ? "," : "", i,
		       (unsigned long long)out->rank[i].units,
		       (unsigned long long)out->rank[i].ranges,
		       (unsigned long long)out->rank[i].files,
		       (unsigned long long)out->rank[i].bytes_sent);
	printf("],\"per_receiver\":[");
	for (uint32_t i = 0; out->recv && i < out->nrecv && i < t->n; i++)
		printf("%s{\"host\":\"%s\",\"files\":%llu,\"bytes\":%llu,"
		       "\"bytes_sent\":%llu,\"lost\":%s}", i ? "," : "",
		       pxfer_json_escape(q, sizeof(q), t->to[i].host,
					 strlen(t->to[i].host)),
		       (unsigned long long)out->recv[i].files,
		       (unsigned long long)out->recv[i].bytes,
		       (unsigned long long)out->recv[i].bytes_sent,
		       out->recv[i].lost ? "true" : "false");
	printf("]}\n");
	fflush(stdout);
	(void)o;
}

static void print_job_summary(const struct pxfer_send_opts *o,
			      const struct cli_targets *t,
			      const struct pxfer_job_report *rep, int code)
{
	const struct pxfer_job_outcome *out = &rep->out;
	char b[32], r[32], k[32], extra[160] = "";
	int n = 0;

	if (out->files_same)
		n += snprintf(extra + n, sizeof(extra) - n, "; %llu up to date (%s) skipped",
			      (unsigned long long)out->files_same,
			      pxfer_human(k, sizeof(k), out->bytes_same));
	if (out->units_again && n < (int)sizeof(extra))
		snprintf(extra + n, sizeof(extra) - n, "; %llu unit(s) handed out again",
			 (unsigned long long)out->units_again);
	pxfer_info("pxfer: %s %llu files (%s) to %u receiver(s) from %u rank(s) in %.1f s (%s/s sent) over %s%s%s",
		   code ? "failed after sending" : "sent",
		   (unsigned long long)out->files,
		   pxfer_human(b, sizeof(b), out->bytes_sent), out->nrecv,
		   out->nranks, rep->seconds,
		   pxfer_human(r, sizeof(r), rep->seconds > 0 ?
			       out->bytes_sent / rep->seconds : 0),
		   rep->mine.transport ? rep->mine.transport : "-", extra,
		   out->files_failed ? "; some files failed" : "");
	if (!o->verbose)
		return;
	for (uint32_t i = 0; out->rank && i < out->nranks; i++)
		pxfer_info("pxfer:   rank %u: %llu units (%llu ranges), %llu files, %s sent",
			   i, (unsigned long long)out->rank[i].units,
			   (unsigned long long)out->rank[i].ranges,
			   (unsigned long long)out->rank[i].files,
			   pxfer_human(b, sizeof(b), out->rank[i].bytes_sent));
	for (uint32_t i = 0; out->recv && i < out->nrecv && i < t->n; i++) {
		char q[PXFER_QUOTE_MAX];

		pxfer_info("pxfer:   receiver %s: %llu files, %s sent%s",
			   pxfer_quote_str(q, sizeof(q), t->to[i].host),
			   (unsigned long long)out->recv[i].files,
			   pxfer_human(b, sizeof(b), out->recv[i].bytes_sent),
			   out->recv[i].lost ? " (lost)" : "");
	}
}

int cli_send_job(const struct pxfer_send_opts *o, const struct cli_targets *t,
		 struct pxfer_job *j, uint64_t range_size, int json, int quiet)
{
	struct pxfer_job_report rep;
	int code;

	code = pxfer_job_send(o, t->to, t->n, range_size, j, &rep);
	if (j->rank == 0 && code != PXFER_EXIT_USAGE) {
		if (json)
			print_job_json(o, t, &rep, code);
		else if (!quiet)
			print_job_summary(o, t, &rep, code);
	}
	pxfer_job_report_release(&rep);
	return code;
}
