/* SPDX-License-Identifier: MIT */
#ifndef PXFER_CLI_H
#define PXFER_CLI_H

#include <stdint.h>
#include <stdio.h>

/* the value of macro @x as a string literal, for help texts */
#define STR_(x)	#x
#define STR(x)	STR_(x)

int cmd_send(int argc, char **argv);
int cmd_recv(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* pxfer send's receivers (send_job.c): --to's list, or its @FILE's */
struct pxfer_target;
struct pxfer_job;
struct pxfer_send_opts;
struct cli_targets {
	struct pxfer_target *to;
	unsigned int n;
	char *text;		/* what the targets point into */
};

/* cli_parse_target - HOST[:PORT][/DEST] in @arg, cut up in place: 0 or
 * -EINVAL */
int cli_parse_target(char *arg, const char **host, const char **port,
		     const char **dest);
/* cli_targets_parse - option @opt's @arg (--to, --each):
 * HOST[:PORT][/DEST],... or @FILE, one a
 * line. 0, or -1 after saying what is wrong (release either way) */
int cli_targets_parse(struct cli_targets *t, const char *opt,
		      const char *arg);
void cli_targets_release(struct cli_targets *t);
/* cli_send_job - the transfer as rank j->rank of job @j (joined), to
 * @t's receivers, files over twice @range_size (0: the default) cut in
 * ranges; rank 0 prints the job's summary (or @json). The job's
 * PXFER_EXIT_* status */
int cli_send_job(const struct pxfer_send_opts *o, const struct cli_targets *t,
		 struct pxfer_job *j, uint64_t range_size, int json, int quiet);
/* cli_send_each - --each: the PATHs broadcast to @t's receivers down a
 * chain (@sort: in the natural order of their names), a receiver that
 * takes nothing for @stall_secs cut out; the summary (or @json). A
 * PXFER_EXIT_* status: 1 when some receiver did not get everything */
int cli_send_each(const struct pxfer_send_opts *o, struct cli_targets *t,
		  int sort, int stall_secs, int json, int quiet);

/*
 * Options. A command has a table of its own options; the options the
 * commands share (--port, --bind, --secret-file, --transport, --device,
 * --rails, --gid-index, --fsync, --io, --quiet, --verbose, --help) have
 * one table in opts.c, from which cli_parse parses them and cli_usage
 * prints them, after the command's own. send and recv take them all;
 * doctor takes those that say where a transfer would go.
 */

/* the command being parsed: the shared options' help may differ by
 * command, and a command without a help for one does not take it */
enum cli_side { CLI_SEND, CLI_RECV, CLI_DOCTOR, CLI_SIDES };

/* what an option's set function returns to have the help printed */
#define CLI_HELP 1

/*
 * What a shell completes an argument to, in an option's values (below)
 * or a command's operands: words starting with '@' name a kind of word
 * the completion scripts (completion/) find themselves.
 */
#define CLI_FILE	"@file"		/* a path */
#define CLI_DIR		"@dir"		/* a directory */
#define CLI_HOST	"@host"		/* a host name */
#define CLI_ADDR	"@address"	/* an address of this host */
#define CLI_DEVICE	"@rdma-device"	/* RDMA devices, separated by commas */

/*
 * One option of a command: --name (and -c), the name of its argument in
 * the help (NULL if it takes none), its help (lines separated by '\n'),
 * set(), which takes the argument into @ctx, the command's own struct: it
 * returns 0, or -1 after saying what is wrong; and the values the argument
 * completes to, separated by spaces (NULL: none to offer). An option that
 * takes one of a few words checks it against the same string (cli_choice).
 */
struct cli_opt {
	const char *name;
	int short_name;
	const char *arg;
	int (*set)(void *ctx, const char *arg);
	const char *help;
	const char *values;
};

/*
 * Where the shared options land: fields of the command's option struct,
 * which already hold their defaults (pxfer_*_opts_init), or its locals;
 * NULL for an option the command does not take.
 */
struct cli_common {
	const char **port;
	const char **bind;
	const char **secret_file;
	const char **transport;
	const char **device;
	const char **rails;
	int *gid_index;
	const char **io;
	int *fsync;
	int *quiet;
	int *verbose;
};

struct cli_cmd {
	enum cli_side side;
	const char *usage;		/* the help before the options */
	const struct cli_opt *opts;	/* its own, up to one with no name */
	const char *epilog;		/* the help after them */
	const char *operands;		/* what they complete to, as values */
};

/*
 * cli_parse - parse the options in @argv (argv[0] being the command's
 * name) into @ctx and @common. Returns the index of the first operand, or
 * -1 if the command is to return *@status now: 0 after printing the help
 * on stdout, PXFER_EXIT_USAGE after saying what is wrong with an option.
 * Its one argument being --complete-words, it prints cli_complete_words
 * and returns -1 with status 0.
 */
int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, void *ctx,
	      const struct cli_common *common, int *status);

/* cli_usage - the command's help: usage, its options, the shared ones */
void cli_usage(FILE *f, const struct cli_cmd *cmd);

/*
 * cli_complete_words - what the shell completions read ('pxfer CMD
 * --complete-words', not in the help): a line for each option the command
 * takes, as --help lists them, "--name|-c|ARG|values|first line of its
 * help" (a field empty where the option has none), then "||||" and what
 * its operands complete to (values as in struct cli_opt).
 */
void cli_complete_words(FILE *f, const struct cli_cmd *cmd);

/*
 * cli_choice - 0 if @arg is one of the words of @values (separated by
 * spaces); otherwise say what option @opt takes, and return -1
 */
int cli_choice(const char *opt, const char *arg, const char *values);

/* parse "64M", "1G", "4096" into bytes; 0 or -EINVAL */
int cli_parse_size(const char *s, uint64_t *out);
/* parse a positive integer within [min, max]; 0 or -EINVAL */
int cli_parse_uint(const char *s, unsigned long min, unsigned long max,
		   unsigned long *out);
/*
 * cli_stop_on_signals - the command's stop, which SIGINT and SIGTERM
 * raise from now on (SIGPIPE is ignored), for its call's options; NULL
 * after saying why there is none. It lasts as long as the process.
 */
struct pxfer_stop;
struct pxfer_stop *cli_stop_on_signals(void);

/*
 * cli_metrics_start - serve @m over HTTP on @addr (PORT, ADDR:PORT or
 * [ADDR]:PORT; a loopback address unless @public) and/or write it to
 * @file every few seconds, on a thread of its own (*@out, NULL when
 * neither is asked). 0, or the exit status of a failure (said).
 * cli_metrics_stop ends it, and writes @file a last time.
 */
struct cli_metrics;
struct pxfer_recv_metrics;
int cli_metrics_start(struct cli_metrics **out, struct pxfer_recv_metrics *m,
		      const char *addr, int public, const char *file, int quiet);
void cli_metrics_stop(struct cli_metrics *cm);

/*
 * load the secret from --secret-file or $PXFER_SECRET, with clear errors;
 * with neither and @generated not NULL, make one and set *@generated, and
 * cli_secret_announce says it once the options are found good
 */
struct pxfer_secret;
int cli_load_secret(struct pxfer_secret *s, const char *file, int *generated);
void cli_secret_announce(const struct pxfer_secret *s);

#endif
