// SPDX-License-Identifier: MIT
/* pxfer recv: parse the command line and serve. */
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "pxfer/pxfer.h"
#include "cli.h"
#include "core/escape.h"
#include "core/log.h"
#include "api/api.h"

/*
 * The setters below read an option's syntax; what the value may be is
 * pxfer_recv_opts_check's, once they all are read, so that the command
 * refuses what the library does, with its words.
 */

/* the command line of pxfer recv, as it is parsed */
struct recv_args {
	struct pxfer_recv_opts o;
	const char *secret_file;
	int json;
	const char *metrics;		/* --metrics ADDR:PORT */
	const char *metrics_file;
	int metrics_public;
};

static int set_dir(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;

	a->o.dir = arg;
	return 0;
}

static int set_once(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;

	a->o.once = 1;
	return 0;
}

static int set_ring_mem(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;
	uint64_t size;

	if (cli_parse_size(arg, &size))
		return pxfer_error("--ring-mem takes a size from %uK to %lluG, not '%s'",
			     PXFER_RING_MEM_MIN >> 10, PXFER_RING_MEM_MAX >> 30,
			     arg);
	a->o.ring_mem = size;
	return 0;
}

static int set_max_sessions(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;
	unsigned long v;

	if (cli_parse_uint(arg, 0, UINT_MAX, &v))
		return pxfer_error("--max-sessions takes a number from 1 to %d, not '%s'",
			     PXFER_SESSIONS_MAX, arg);
	a->o.max_sessions = v;
	return 0;
}

static int set_grace(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;
	unsigned long v;

	if (cli_parse_uint(arg, 0, INT_MAX, &v))
		return pxfer_error("--grace takes seconds from 0 to %d, not '%s'",
			     PXFER_GRACE_SECS_MAX, arg);
	a->o.grace_secs = v;
	return 0;
}

static int set_json(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;

	a->json = 1;
	return 0;
}

static int set_max_chunk(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;
	uint64_t size;

	if (cli_parse_size(arg, &size) || size > UINT32_MAX)
		return pxfer_error("--max-chunk takes a size from %uK to %uM, not '%s'",
			     PXFER_CHUNK_MIN >> 10, PXFER_CHUNK_MAX >> 20, arg);
	a->o.max_chunk = size;
	return 0;
}

static int set_require_encrypt(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;

	a->o.require_encrypt = 1;
	return 0;
}

static int set_perms(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;

	a->o.perms = 1;
	return 0;
}

static int set_idle_timeout(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;
	unsigned long secs;

	if (cli_parse_uint(arg, 0, INT_MAX, &secs))
		return pxfer_error("--idle-timeout takes seconds from 0 (never) to %d, not '%s'",
			     PXFER_IDLE_TIMEOUT_MAX, arg);
	a->o.idle_timeout = secs;
	return 0;
}

/* SEC, or a number with s, m, h or d */
static int set_partial_ttl(void *ctx, const char *arg)
{
	static const struct { char c; double mul; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
	};
	struct recv_args *a = ctx;
	size_t n = strlen(arg);
	double mul = 1;
	char num[32];
	unsigned long v;

	for (size_t i = 0; n > 1 && i < sizeof(units) / sizeof(units[0]); i++)
		if (arg[n - 1] == units[i].c) {
			mul = units[i].mul;
			n--;
		}
	if (n >= sizeof(num))
		n = sizeof(num) - 1;
	memcpy(num, arg, n);
	num[n] = 0;
	if (cli_parse_uint(num, 0, ULONG_MAX, &v))
		return pxfer_error("--partial-ttl takes a time such as 3600, 90m, 12h or 7d (0: keep nothing; at most %dd), not '%s'",
			     PXFER_PARTIAL_TTL_MAX / 86400, arg);
	a->o.partial_ttl = v * mul;
	return 0;
}

static int set_partial_max(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;
	unsigned long v;

	if (cli_parse_uint(arg, 0, UINT_MAX, &v))
		return pxfer_error("--partial-max takes a number of partial files from 0 (no cap) to %d, not '%s'",
			     PXFER_PARTIAL_MAX_MAX, arg);
	a->o.partial_max = v;
	return 0;
}

/* 0: no cap */
static int set_partial_max_size(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;
	uint64_t size;

	if (cli_parse_size(arg, &size))
		return pxfer_error("--partial-max-size takes a size such as 500G (0: no cap), not '%s'",
			     arg);
	a->o.partial_max_bytes = size;
	return 0;
}

static int set_metrics(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;

	a->metrics = arg;
	return 0;
}

static int set_metrics_file(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;

	if (!*arg)
		return pxfer_error("--metrics-file takes a path, such as /var/lib/prometheus/node-exporter/pxfer.prom");
	a->metrics_file = arg;
	return 0;
}

static int set_metrics_public(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;

	a->metrics_public = 1;
	return 0;
}

static const struct cli_opt recv_opts[] = {
	{ "dir", 'd', "DIR", set_dir,
	  "directory to receive into (default: the current one)", CLI_DIR },
	{ "once", 0, NULL, set_once, "exit after one session", NULL },
	{ "max-sessions", 0, "N", set_max_sessions,
	  "senders served at once (default 8); others wait", NULL },
	{ "ring-mem", 0, "SIZE", set_ring_mem,
	  "memory for the rings of all sessions, each\n"
	  "getting SIZE / N (default: 32M a session)", NULL },
	{ "grace", 0, "SEC", set_grace,
	  "on SIGTERM or SIGINT, let running sessions\n"
	  "finish for up to SEC seconds (default 30)", NULL },
	{ "json", 0, NULL, set_json,
	  "print a JSON line for each session on stdout", NULL },
	{ "max-chunk", 0, "SIZE", set_max_chunk,
	  "largest chunk accepted (default 16M)", NULL },
	{ "perms", 0, NULL, set_perms,
	  "keep the modes the sender sent (but set-uid and\n"
	  "set-gid); default: less what the umask takes away", NULL },
	{ "idle-timeout", 0, "SEC", set_idle_timeout,
	  "end a session whose sender sent no file data and\n"
	  "no file for SEC seconds (default "
	  STR(PXFER_DEFAULT_IDLE_TIMEOUT) "; 0: never)", NULL },
	{ "require-encrypt", 0, NULL, set_require_encrypt,
	  "refuse senders that do not use --encrypt", NULL },
	{ "partial-ttl", 0, "TIME", set_partial_ttl,
	  "keep what arrived of an interrupted file (beneath\n"
	  "DIR/.pxfer) this long for the sender to resume it:\n"
	  "seconds, or 90m, 12h, 7d (default 7d; 0: remove it\n"
	  "when the session ends)", NULL },
	{ "partial-max", 0, "N", set_partial_max,
	  "keep at most N such partial files; a file that\n"
	  "would make one more arrives without one, and cannot\n"
	  "be resumed (default " STR(PXFER_DEFAULT_PARTIAL_MAX) "; 0: no cap)", NULL },
	{ "partial-max-size", 0, "SIZE", set_partial_max_size,
	  "the same for their size in all, their files' sizes\n"
	  "(default 0: no cap)", NULL },
	{ "metrics", 0, "ADDR:PORT", set_metrics,
	  "serve Prometheus metrics over HTTP at\n"
	  "http://ADDR:PORT/metrics (PORT alone: on 127.0.0.1)", NULL },
	{ "metrics-public", 0, NULL, set_metrics_public,
	  "let --metrics listen on an address that is not\n"
	  "loopback (anyone who reaches it reads them)", NULL },
	{ "metrics-file", 0, "PATH", set_metrics_file,
	  "write the metrics to PATH every 5 s and at exit\n"
	  "(node_exporter's textfile collector: *.prom)", CLI_FILE },
	{ 0 },
};

static const struct cli_cmd recv_cmd = {
	.side = CLI_RECV,
	.usage =
	"usage: pxfer recv [options]\n"
	"\n"
	"Receive files from 'pxfer send' into DIR, from up to --max-sessions\n"
	"senders at once, until interrupted (or after one session with --once);\n"
	"a sender that finds them all taken waits (its --wait). Each session\n"
	"gets an equal share of --ring-mem. A signal stops new sessions; running\n"
	"ones may finish for --grace seconds, then (or at a second signal) they\n"
	"are stopped: what arrived of a file over 1 MiB is kept (--partial-ttl)\n"
	"for the sender to resume, smaller incomplete files are removed.\n"
	"Nothing is ever written outside DIR: absolute paths, '..' and paths\n"
	"through symbolic links are refused. A file appears under its name only\n"
	"once all of it has arrived.\n"
	"\n"
	"Senders must prove a shared secret: it comes from --secret-file or\n"
	"$" PXFER_SECRET_ENV "; with neither, a random token is generated and printed.\n",
	.opts = recv_opts,
	.epilog =
	"exit status (with --once, of that session):\n"
	"  0  everything arrived        3  authentication refused\n"
	"  1  some files failed         4  port in use, or the peer went away\n"
	"  2  bad command line or DIR   5  local resource (memory, disk, limits)\n"
	"  130 interrupted\n",
};

/* the longest text a session report's string gives in full */
#define JSON_TEXT_MAX	1024

/* @s as a JSON string (core/escape.h: UTF-8 kept, other bytes as \xHH) */
static void json_str(FILE *f, const char *s)
{
	char esc[PXFER_JSON_ESCAPE_LEN(JSON_TEXT_MAX)];

	if (!s)
		s = "";
	pxfer_json_escape(esc, sizeof(esc), s, strlen(s));
	fprintf(f, "\"%s\"", esc);
}

/* a session ended (on its own thread): its JSON line */
static void print_session(const struct pxfer_session_report *r, void *arg)
{
	FILE *f = stdout;

	flockfile(f);
	fputs("{\"event\":\"session\",\"peer\":", f);
	json_str(f, r->peer);
	fputs(",\"transport\":", f);
	json_str(f, r->transport);
	fprintf(f, ",\"status\":\"%s\",\"exit_code\":%d,\"files\":%llu,"
		"\"files_failed\":%llu,\"bytes\":%llu,\"seconds\":%.3f,"
		"\"files_same\":%llu,\"bytes_skipped\":%llu,\"bytes_resumed\":%llu,"
		"\"bytes_per_second\":%.0f,\"error\":",
		r->exit_code == PXFER_EXIT_OK ? "ok" : "failed", r->exit_code,
		(unsigned long long)r->files, (unsigned long long)r->files_failed,
		(unsigned long long)r->bytes, r->seconds,
		(unsigned long long)r->files_same, (unsigned long long)r->bytes_same,
		(unsigned long long)r->bytes_resumed,
		r->seconds > 0 ? r->bytes / r->seconds : 0.0);
	if (r->error)
		json_str(f, r->error);
	else
		fputs("null", f);
	fputs(",\"protection\":", f);
	if (r->protection)
		json_str(f, r->protection);
	else
		fputs("null", f);
	fputs("}\n", f);
	fflush(f);
	funlockfile(f);
}

/* the signals, and serve counting into @m */
static int serve(struct recv_args *a, struct pxfer_recv_metrics *m)
{
	struct pxfer_recv_opts *o = &a->o;

	if (a->json)
		o->on_session = print_session;
	o->stop = cli_stop_on_signals();
	if (!o->stop)
		return PXFER_EXIT_LOCAL;
	return pxfer_recv_metered(o, m);
}

int cmd_recv(int argc, char **argv)
{
	struct recv_args a = { 0 };
	struct pxfer_recv_opts *o = &a.o;
	const struct cli_common common = {
		.port = &o->port, .bind = &o->bind,
		.secret_file = &a.secret_file, .transport = &o->transport,
		.device = &o->device, .rails = &o->rails,
		.gid_index = &o->gid_index, .io = &o->io,
		.fsync = &o->fsync, .quiet = &o->quiet, .verbose = &o->verbose,
	};
	struct pxfer_recv_metrics metrics;
	struct cli_metrics *cm;
	char why[400];
	int first, code, generated = 0;

	pxfer_recv_opts_init(o);
	first = cli_parse(&recv_cmd, argc, argv, &a, &common, &code);
	if (first < 0)
		return code;
	if (first < argc) {
		pxfer_error("unexpected argument '%s' (the directory goes after --dir)",
		      argv[first]);
		return PXFER_EXIT_USAGE;
	}
	/*
	 * A receiver service's threads come and go with its sessions, and
	 * glibc gives each new one an arena of its own up to 8 a core, each
	 * kept at its peak: its memory grew by steps for ever (bench/soak:
	 * +43% from 200 to 1,200 sessions, within 10% with one arena). No
	 * hot path allocates, so one arena costs no contention. The process
	 * is the command's to tune, not the library's.
	 */
	mallopt(M_ARENA_MAX, 1);
	if (a.metrics_public && !a.metrics) {
		pxfer_error("--metrics-public goes with --metrics ADDR:PORT");
		return PXFER_EXIT_USAGE;
	}
	/* a secret generated is said once nothing else is wrong */
	if (cli_load_secret(&o->secret, a.secret_file, &generated))
		return PXFER_EXIT_USAGE;
	if (pxfer_recv_opts_check(o, why, sizeof(why)))
		return pxfer_error("%s", why), PXFER_EXIT_USAGE;
	pxfer_recv_metrics_init(&metrics);
	code = cli_metrics_start(&cm, &metrics, a.metrics, a.metrics_public,
				 a.metrics_file, o->quiet);
	if (code)
		return code;
	if (generated)
		cli_secret_announce(&o->secret);
	code = serve(&a, &metrics);
	cli_metrics_stop(cm);
	return code;
}
