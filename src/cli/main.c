// SPDX-License-Identifier: MIT
/* pxfer: the command table. Each subcommand lives in its own cmd_*.c. */
#include <stdio.h>
#include <string.h>

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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, argv[1]))
			return commands[i].fn(argc - 1, argv + 1);
	error("'%s' is not a pxfer command (see 'pxfer --help')", argv[1]);
	return PXFER_EXIT_USAGE;
}
