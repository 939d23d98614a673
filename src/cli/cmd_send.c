// SPDX-License-Identifier: MIT
/* pxfer send: parse the command line, run pxfer_send, print the summary. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pxfer/pxfer.h"
#include "api/jobsend.h"
#include "cli.h"
#include "core/log.h"
#include "core/netaddr.h"

/*
 * The setters below read an option's syntax; what the value may be is
 * pxfer_send_opts_check's, once they all are read, so that the command
 * refuses what the library does, with its words.
 */

/* the command line of pxfer send, as it is parsed */
struct send_args {
	struct pxfer_send_opts o;
	const char *port;	/* -p, which wins over HOST:PORT */
	const char *secret_file;
	int quiet;
	int json;
	const char *to;		/* --to */
	uint64_t range_size;	/* --range-size, 0: the default */
	const char *each;	/* --each */
	int sort;		/* --sort */
	int idle;		/* --idle-timeout, for --each */
};

static int set_jobs(void *ctx, const char *arg)
{
	struct send_args *a = ctx;
	unsigned long v;

	if (cli_parse_uint(arg, 0, INT_MAX, &v))
		return pxfer_error("-j takes a number of workers from 1 to %d, not '%s'",
			     PXFER_WORKERS_MAX, arg);
	a->o.workers = v;
	a->o.workers_auto = 0;
	return 0;
}

static int set_chunk_size(void *ctx, const char *arg)
{
	struct send_args *a = ctx;
	uint64_t size;

	if (cli_parse_size(arg, &size) || size > UINT32_MAX)
		return pxfer_error("--chunk-size takes a multiple of %uK from %uK to %uM, not '%s'",
			     PXFER_CHUNK_MIN >> 10, PXFER_CHUNK_MIN >> 10,
			     PXFER_CHUNK_MAX >> 20, arg);
	a->o.chunk_size = size;
	a->o.chunk_auto = 0;
	return 0;
}

static int set_timeout(void *ctx, const char *arg)
{
	struct send_args *a = ctx;
	unsigned long v;

	if (cli_parse_uint(arg, 0, INT_MAX / 1000, &v))
		return pxfer_error("--timeout takes seconds from 1 to %d, not '%s'",
			     PXFER_TIMEOUT_MS_MAX / 1000, arg);
	a->o.timeout_ms = v * 1000;
	return 0;
}

static int set_wait(void *ctx, const char *arg)
{
	struct send_args *a = ctx;
	unsigned long v;

	if (cli_parse_uint(arg, 0, INT_MAX, &v))
		return pxfer_error("--wait takes seconds from 0 to %d, not '%s'",
			     PXFER_WAIT_SECS_MAX, arg);
	a->o.wait_secs = v;
	return 0;
}

static int set_to(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	a->to = arg;
	return 0;
}

static int set_range_size(void *ctx, const char *arg)
{
	struct send_args *a = ctx;
	uint64_t size;

	if (cli_parse_size(arg, &size) || size < PXFER_RANGE_MIN ||
	    size > PXFER_RANGE_MAX || size % PXFER_CHUNK_MAX)
		return pxfer_error("--range-size takes a multiple of %uM from %uM to %lluG, not '%s'",
				   PXFER_CHUNK_MAX >> 20, PXFER_RANGE_MIN >> 20,
				   (unsigned long long)(PXFER_RANGE_MAX >> 30), arg);
	a->range_size = size;
	return 0;
}

static int set_each(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	a->each = arg;
	return 0;
}

static int set_sort(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	(void)arg;
	a->sort = 1;
	return 0;
}

static int set_idle(void *ctx, const char *arg)
{
	struct send_args *a = ctx;
	unsigned long v;

	if (cli_parse_uint(arg, 1, PXFER_IDLE_TIMEOUT_MAX, &v))
		return pxfer_error("--idle-timeout takes seconds from 1 to %d, not '%s'",
				   PXFER_IDLE_TIMEOUT_MAX, arg);
	a->idle = (int)v;
	return 0;
}

static int set_json(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	a->json = 1;
	return 0;
}

/* the words --integrity, --cipher and --resume take, as they complete */
static const char integrity_modes[] = "mac checksum";
static const char ciphers[] = "aes-256-gcm chacha20-poly1305";
static const char resume_modes[] = "check trust";

static int set_integrity(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	if (cli_choice("--integrity", arg, integrity_modes))
		return -1;
	a->o.integrity = !strcmp(arg, "mac") ? "mac" : "checksum";
	return 0;
}

static int set_encrypt(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	a->o.encrypt = 1;
	return 0;
}

static int set_cipher(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	if (cli_choice("--cipher", arg, ciphers))
		return -1;
	a->o.cipher = !strcmp(arg, "aes-256-gcm") ? "aes-256-gcm" :
		      "chacha20-poly1305";
	return 0;
}

static int set_overwrite(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	a->o.overwrite = 1;
	return 0;
}

static int set_checksum(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	a->o.checksum = 1;
	return 0;
}

static int set_verify(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	a->o.verify = 1;
	return 0;
}

static int set_resume(void *ctx, const char *arg)
{
	struct send_args *a = ctx;

	if (cli_choice("--resume", arg, resume_modes))
		return -1;
	a->o.resume_trust = !strcmp(arg, "trust");
	return 0;
}

static int set_retries(void *ctx, const char *arg)
{
	struct send_args *a = ctx;
	unsigned long v;

	if (cli_parse_uint(arg, 0, INT_MAX, &v))
		return pxfer_error("--retries takes a number from 0 to %d, not '%s'",
			     PXFER_RETRIES_MAX, arg);
	a->o.retries = v;
	return 0;
}

static int set_retry_wait(void *ctx, const char *arg)
{
	struct send_args *a = ctx;
	unsigned long v;

	if (cli_parse_uint(arg, 0, INT_MAX, &v))
		return pxfer_error("--retry-wait takes seconds from 0 to %d, not '%s'",
			     PXFER_RETRY_WAIT_MAX, arg);
	a->o.retry_wait = v;
	return 0;
}

/* the help of -j says what the default comes to on this machine */
static char jobs_help[160];

static struct cli_opt send_opts[] = {
	{ "jobs", 'j', "N", set_jobs, jobs_help, NULL },
	{ "chunk-size", 0, "SIZE", set_chunk_size,
	  "bytes per chunk (4K-64M; the receiver may lower it;\n"
	  "default: up to 4M, as large as leaves the receiver\n"
	  "8 slots per worker, at least 1M)", NULL },
	{ "timeout", 0, "SEC", set_timeout,
	  "connect and handshake timeout (default 15)", NULL },
	{ "wait", 0, "SEC", set_wait,
	  "while the receiver is busy, try again for up\n"
	  "to SEC seconds (default 60; 0: fail at once)", NULL },
	{ "to", 0, "LIST", set_to,
	  "send to these receivers, HOST[:PORT][/DEST] separated\n"
	  "by commas, or @FILE with one a line; every PATH is\n"
	  "then a source. Files are spread over the receivers,\n"
	  "each file whole on one; -p is the PORT of those\n"
	  "given none (docs/scaleout.md)", CLI_HOST },
	{ "range-size", 0, "SIZE", set_range_size,
	  "with --to or a launcher: a file over twice SIZE is\n"
	  "cut into ranges of SIZE, which ranks send at once\n"
	  "(64M-64G, a multiple of 64M; default 64M, larger\n"
	  "for a file of more than 1024 of them)", NULL },
	{ "each", 0, "LIST", set_each,
	  "broadcast: every receiver of LIST (HOST[:PORT][/DEST]\n"
	  "separated by commas, or @FILE with one a line) gets\n"
	  "every PATH, down a chain in which each receiver\n"
	  "passes on what it checked (docs/broadcast.md)", CLI_HOST },
	{ "sort", 0, NULL, set_sort,
	  "with --each: chain the receivers in the natural order\n"
	  "of their names, not as listed", NULL },
	{ "idle-timeout", 0, "SEC", set_idle,
	  "with --each: a receiver that takes nothing for SEC\n"
	  "seconds while files are in flight is cut out of the\n"
	  "chain (default 60)", NULL },
	{ "json", 0, NULL, set_json, "print a JSON summary on stdout", NULL },
	{ "encrypt", 0, NULL, set_encrypt,
	  "encrypt file data too (file names and the other\n"
	  "control messages always are; docs/security.md)", NULL },
	{ "integrity", 0, "HOW", set_integrity,
	  "how chunks are checked when not encrypting: mac, a\n"
	  "keyed tag (default), or checksum, the plain XXH3,\n"
	  "which catches corruption but not an attacker", integrity_modes },
	{ "cipher", 0, "NAME", set_cipher,
	  "aes-256-gcm (default) or chacha20-poly1305, for\n"
	  "the tags and encryption", ciphers },
	{ "checksum", 0, NULL, set_checksum,
	  "skip a file the receiver has when its content is\n"
	  "the same (read on both sides), not when its size\n"
	  "and modification time are (the default)", NULL },
	{ "overwrite", 0, NULL, set_overwrite,
	  "send every file whole: skip nothing, resume nothing", NULL },
	{ "resume", 0, "HOW", set_resume,
	  "a file the receiver holds part of (an interrupted\n"
	  "transfer) is resumed when the source's size and\n"
	  "mtime match and, with check (default), the data it\n"
	  "holds, read back from the receiver's disk, hashes\n"
	  "the same as its journal and as the source's (a read\n"
	  "on each side); trust: without those reads, taking\n"
	  "both the source and the receiver's disk at their\n"
	  "word (a damaged partial is then resumed as it is)",
	  resume_modes },
	{ "verify", 0, NULL, set_verify,
	  "the receiver reads each file back from its storage\n"
	  "and compares it with the source before naming it", NULL },
	{ "retries", 0, "N", set_retries,
	  "when the connection fails, reconnect and go on up\n"
	  "to N times (default " STR(PXFER_DEFAULT_RETRIES) "; 0: fail at once)", NULL },
	{ "retry-wait", 0, "SEC", set_retry_wait,
	  "seconds before the first reconnection, doubling\n"
	  "each time up to " STR(PXFER_RETRY_WAIT_CAP) " (default "
	  STR(PXFER_DEFAULT_RETRY_WAIT) ")", NULL },
	{ 0 },
};

static const struct cli_cmd send_cmd = {
	.side = CLI_SEND,
	.usage =
	"usage: pxfer send [options] PATH... HOST[:PORT][/DEST]\n"
	"       pxfer send [options] PATH... --to HOST[:PORT][/DEST],...|@FILE\n"
	"       pxfer send [options] PATH... --each HOST[:PORT][/DEST],...|@FILE\n"
	"\n"
	"Send files and directories to 'pxfer recv' on HOST. Each PATH arrives\n"
	"under its own name (\"dir\" and \"dir/\" both arrive as \"dir\"; \"dir/.\"\n"
	"sends the contents of dir) below the receiver's --dir, or below DEST\n"
	"inside it. Symbolic links are sent as links; a PATH that is a link is\n"
	"followed. A PATH must be a regular file or a directory; inside a\n"
	"directory, fifos, sockets and devices are skipped with a warning.\n"
	"IPv6 hosts go in brackets: [fe80::1%eth0]:7471/dest.\n"
	"\n"
	"Started by a launcher (srun --mpi=pmix, Open MPI's mpirun), every\n"
	"rank of the job takes part in one transfer: rank 0 walks the PATHs\n"
	"(on a file system every rank sees), the ranks pull the work in units\n"
	"and send them, and rank 0 prints the job's summary; every rank exits\n"
	"with the job's status (docs/scaleout.md).\n"
	"\n"
	"With --each, every receiver listed gets every PATH, as if sent to it\n"
	"alone: the sender sends to the first, which passes each file on to\n"
	"the next as it completes, and so on; one that dies or stalls is cut\n"
	"out, and the exit status is 1 unless every receiver has everything\n"
	"(docs/broadcast.md).\n"
	"\n"
	"The shared secret comes from $" PXFER_SECRET_ENV " (the token 'pxfer recv' prints)\n"
	"or --secret-file.\n",
	.opts = send_opts,
	.operands = CLI_FILE " " CLI_HOST,
	.epilog =
	"exit status:\n"
	"  0  everything arrived        3  authentication refused\n"
	"  1  some files failed         4  cannot connect, or the peer went away\n"
	"  2  bad command line or input 5  a resource ran out: memory, limits,\n"
	"  6  the receiver stayed busy     disk (here, or the receiver's full)\n"
	"  130 interrupted              7  integrity: data or messages were\n"
	"                                  changed on the way\n"
	"Files that completed before a failure stay complete on the receiver;\n"
	"a file never appears there under its name until all of it has arrived.\n"
	"What arrived of the others is kept: the same command run again sends\n"
	"only what is missing, and skips files the receiver has (same size and\n"
	"modification time). A file that changes while it is sent is sent again\n"
	"once, or fails alone (exit 1).\n",
};

static void print_json(const struct pxfer_send_opts *o,
		       const struct pxfer_stats *st, int code)
{
	printf("{\"status\":\"%s\",\"exit_code\":%d,\"transport\":\"%s\","
	       "\"workers\":%d,\"files\":%llu,\"dirs\":%llu,\"links\":%llu,"
	       "\"bytes\":%llu,\"files_failed\":%llu,\"files_skipped\":%llu,"
	       "\"files_same\":%llu,\"bytes_skipped\":%llu,\"bytes_resumed\":%llu,"
	       "\"bytes_sent\":%llu,\"files_changed\":%llu,\"sessions\":%u,"
	       "\"chunks\":%llu,\"seconds\":%.3f,\"bytes_per_second\":%.0f}\n",
	       code ? "failed" : "ok", code,
	       st->transport ? st->transport : "none", o->workers,
	       (unsigned long long)st->files, (unsigned long long)st->dirs,
	       (unsigned long long)st->links, (unsigned long long)st->bytes,
	       (unsigned long long)st->files_failed,
	       (unsigned long long)st->files_skipped,
	       (unsigned long long)st->files_same,
	       (unsigned long long)st->bytes_same,
	       (unsigned long long)st->bytes_resumed,
	       (unsigned long long)st->bytes_sent,
	       (unsigned long long)st->files_changed, st->sessions,
	       (unsigned long long)st->chunks, st->seconds,
	       st->seconds > 0 ? st->bytes / st->seconds : 0.0);
	fflush(stdout);
}

static void print_summary(const struct pxfer_send_opts *o,
			  const struct pxfer_stats *st, int code)
{
	char b[32], r[32], k[32], extra[160] = "";
	int n = 0;

	if (st->files_same)
		n += snprintf(extra + n, sizeof(extra) - n, "; %llu up to date (%s) skipped",
			      (unsigned long long)st->files_same,
			      pxfer_human(k, sizeof(k), st->bytes_same));
	if (st->bytes_resumed && n < (int)sizeof(extra))
		n += snprintf(extra + n, sizeof(extra) - n, "; %s resumed",
			      pxfer_human(k, sizeof(k), st->bytes_resumed));
	if (st->sessions > 1 && n < (int)sizeof(extra))
		snprintf(extra + n, sizeof(extra) - n, "; %u sessions", st->sessions);
	pxfer_info("pxfer: %s %llu files (%s) to %s in %.1f s (%s/s sent) over %s with %d workers%s%s",
	     code ? "failed after sending" : "sent",
	     (unsigned long long)st->files, pxfer_human(b, sizeof(b), st->bytes_sent),
	     o->host, st->seconds,
	     pxfer_human(r, sizeof(r), st->seconds > 0 ? st->bytes_sent / st->seconds : 0),
	     st->transport ? st->transport : "-", o->workers, extra,
	     st->files_failed ? "; some files failed" : "");
}

/* the transfer to one receiver, as it always was */
static int send_one(const struct pxfer_send_opts *o, const struct send_args *a)
{
	struct pxfer_stats st;
	int code = pxfer_send(o, &st);

	if (a->json)
		print_json(o, &st, code);
	else if (!a->quiet && code != PXFER_EXIT_USAGE)
		print_summary(o, &st, code);
	return code;
}

int cmd_send(int argc, char **argv)
{
	struct send_args a = { 0 };
	struct pxfer_send_opts *o = &a.o;
	const struct cli_common common = {
		.port = &a.port, .bind = &o->bind,
		.secret_file = &a.secret_file, .transport = &o->transport,
		.device = &o->device, .rails = &o->rails,
		.gid_index = &o->gid_index, .io = &o->io,
		.fsync = &o->fsync, .quiet = &a.quiet, .verbose = &o->verbose,
	};
	struct cli_targets t = { 0 };
	struct pxfer_job j;
	const char *port = NULL;
	char why[400];
	int first, code;

	pxfer_send_opts_init(o);
	snprintf(jobs_help, sizeof(jobs_help),
		 "worker threads and data connections, 1-%d (default %d\n"
		 "here: one per CPU this process may use, at most %d)",
		 PXFER_WORKERS_MAX, o->workers, PXFER_AUTO_WORKERS_MAX);
	first = cli_parse(&send_cmd, argc, argv, &a, &common, &code);
	if (first < 0)
		return code;
	if (a.to && a.each) {
		pxfer_error("--to spreads the files over the receivers and --each gives each receiver every file: choose one");
		return PXFER_EXIT_USAGE;
	}
	if ((a.sort || a.idle) && !a.each) {
		pxfer_error("%s goes with --each", a.sort ? "--sort" : "--idle-timeout");
		return PXFER_EXIT_USAGE;
	}
	if (a.each)
		a.to = a.each;
	if (argc - first < (a.to ? 1 : 2)) {
		pxfer_error(a.to ? "pxfer send needs at least one PATH"
				 : "pxfer send needs at least one PATH and a HOST (or --to)");
		cli_usage(stderr, &send_cmd);
		return PXFER_EXIT_USAGE;
	}
	if (a.to) {
		if (cli_targets_parse(&t, a.each ? "--each" : "--to", a.to)) {
			cli_targets_release(&t);
			return PXFER_EXIT_USAGE;
		}
		/* -p is the port of those the list gives none */
		o->host = t.to[0].host;
		o->dest = t.to[0].dest;
		if (a.port)
			o->port = a.port;
		if (t.n == 1 && t.to[0].port)
			o->port = t.to[0].port;
	} else {
		char *target = argv[--argc];

		if (cli_parse_target(target, &o->host, &port, &o->dest))
			return pxfer_error("'%s' is not HOST[:PORT][/DEST]", target),
			       PXFER_EXIT_USAGE;
		if (port && pxfer_port_check(port))
			return pxfer_error("the PORT of HOST[:PORT][/DEST] is a number from 1 to 65535, not '%s'",
				     port),
			       PXFER_EXIT_USAGE;
		if (port)
			o->port = port;
	}
	if (a.port && !a.to)
		o->port = a.port;
	if (cli_load_secret(&o->secret, a.secret_file, NULL)) {
		code = PXFER_EXIT_USAGE;
		goto out;
	}
	o->paths = argv + first;
	o->npaths = argc - first;
	if (pxfer_send_opts_check(o, why, sizeof(why))) {
		pxfer_error("%s", why);
		code = PXFER_EXIT_USAGE;
		goto out;
	}
	/* started by a launcher: one rank of the job's transfer */
	if (pxfer_job_init(&j)) {
		code = PXFER_EXIT_USAGE;
		goto out;
	}
	if (j.size > 1 && a.each) {
		pxfer_error("--each broadcasts from one sender; run it once, not from the %u ranks of a launcher",
			    j.size);
		pxfer_job_finalize(&j);
		code = PXFER_EXIT_USAGE;
		goto out;
	}
	if (j.size > 1 && o->bind) {
		pxfer_error("--bind names one address of one host, and the %u ranks of this job may run on several; leave it out (each rank uses the address that routes to each receiver), or pick interfaces with --rails or --device",
			    j.size);
		pxfer_job_finalize(&j);
		code = PXFER_EXIT_USAGE;
		goto out;
	}
	o->progress = !a.quiet && !a.json && isatty(STDERR_FILENO);
	o->stop = cli_stop_on_signals();
	if (!o->stop) {
		code = PXFER_EXIT_LOCAL;
	} else if (a.each) {
		code = cli_send_each(o, &t, a.sort, a.idle ? a.idle : 60, a.json,
				     a.quiet);
	} else if (j.size > 1 || t.n > 1) {
		code = cli_send_job(o, t.n ? &t : &(struct cli_targets){
			.to = &(struct pxfer_target){ o->host, NULL, o->dest },
			.n = 1 }, &j, a.range_size, a.json, a.quiet);
	} else {
		code = send_one(o, &a);
	}
	pxfer_job_finalize(&j);
out:
	cli_targets_release(&t);
	return code;
}

