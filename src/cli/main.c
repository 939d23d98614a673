// SPDX-License-Identifier: MIT
/* pxfer: the command table. Each subcommand lives in its own cmd_*.c. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pxfer/pxfer.h"
#include "cli.h"
#include "core/log.h"
#include "core/proto.h"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct cmd commands[] = {
	{ "send", cmd_send, "send files and directories to a receiver" },
	{ "recv", cmd_recv, "receive files into a directory" },
	{ "doctor", cmd_doctor, "check this host (and the way to a peer) for RDMA" },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pxfer <command> [options]\n"
		"       pxfer --version\n"
		"\n"
		"Parallel file transfer over RDMA and TCP.\n"
		"\n"
		"commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-7s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
		"\n"
		"example:\n"
		"  node2$ pxfer recv --dir /data            # prints a token\n"
		"  node1$ export PXFER_SECRET=<token>\n"
		"  node1$ pxfer send -j 8 bigfile dir/ node2\n"
		"\n"
		"'pxfer <command> --help' describes a command's options and exit codes.\n");
}

/*
 * For the shell completions (completion/), not in the help: 'pxfer
 * --complete-words' prints the commands and the options that go before
 * them, "word|summary" a line; with a command after it, that command's
 * options (cli_complete_words).
 */
static int complete_words(int argc, char **argv)
{
	if (argc > 2) {
		char *sub[] = { argv[2], "--complete-words", NULL };

		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(commands[i].name, argv[2]))
				return commands[i].fn(2, sub);
		pxfer_error("'%s' is not a pxfer command (see 'pxfer --help')", argv[2]);
		return PXFER_EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		printf("%s|%s\n", commands[i].name, commands[i].summary);
	printf("--help|the commands\n--version|the version of pxfer\n");
	return 0;
}

/*
 * The command is done and has said how it went: what is left is the
 * libraries' teardown at exit, which must not hold the process for ever
 * (a verbs provider waiting on a device). After EXIT_WAIT_S the process
 * ends with the command's status, and says so. Generous, since the
 * sanitizers' leak check runs at exit too.
 */
#define EXIT_WAIT_S	30

static volatile sig_atomic_t exit_status;

static void exit_overdue(int sig)
{
	static const char msg[] =
		"pxfer: warning: teardown at exit took over " STR(EXIT_WAIT_S)
		" s; exiting without it\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(exit_status);
	_exit(exit_status);
}

static int exit_bounded(int code)
{
	exit_status = code;
	signal(SIGALRM, exit_overdue);
	alarm(EXIT_WAIT_S);
	return code;
}

int main(int argc, char **argv)
{
	pxfer_log_start();
	if (argc < 2) {
		usage(stderr);
		return PXFER_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		if (argc > 2 && strcmp(argv[1], "help") == 0) {
			char *sub[] = { argv[2], "--help", NULL };

			for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
				if (!strcmp(commands[i].name, argv[2]))
					return commands[i].fn(2, sub);
		}
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("pxfer %s (protocol %d)\n", PXFER_VERSION, PXFER_PROTO_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--complete-words"))
		return complete_words(argc, argv);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, argv[1]))
			return exit_bounded(commands[i].fn(argc - 1, argv + 1));
	pxfer_error("'%s' is not a pxfer command (see 'pxfer --help')", argv[1]);
	return PXFER_EXIT_USAGE;
}
