// SPDX-License-Identifier: MIT
/* pxfer recv: parse the command line and serve. */
#include <stdio.h>

#include "pxfer/pxfer.h"
#include "cli.h"
#include "core/log.h"

/* the command line of pxfer recv, as it is parsed */
struct recv_args {
	struct pxfer_recv_opts o;
	const char *secret_file;
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

	if (cli_parse_size(arg, &size) || size < (64u << 10) ||
	    size > (4ull << 30))
		return error("--ring-mem takes a size from 64K to 4G, not '%s'", arg);
	a->o.ring_mem = size;
	return 0;
}

static int set_max_chunk(void *ctx, const char *arg)
{
	struct recv_args *a = ctx;
	uint64_t size;

	if (cli_parse_size(arg, &size) || size < 4096 || size > (64u << 20))
		return error("--max-chunk takes a size from 4K to 64M, not '%s'", arg);
	a->o.max_chunk = size;
	return 0;
}

static const struct cli_opt recv_opts[] = {
	{ "dir", 'd', "DIR", set_dir,
	  "directory to receive into (default: the current one)" },
	{ "once", 0, NULL, set_once, "exit after one session" },
	{ "ring-mem", 0, "SIZE", set_ring_mem,
	  "memory for all data rings (default 32M)" },
	{ "max-chunk", 0, "SIZE", set_max_chunk,
	  "largest chunk accepted (default 16M)" },
	{ 0 },
};

static const struct cli_cmd recv_cmd = {
	.side = CLI_RECV,
	.usage =
	"usage: pxfer recv [options]\n"
	"\n"
	"Receive files from 'pxfer send' into DIR, one session at a time, until\n"
	"interrupted (or after one session with --once). Nothing is ever written\n"
	"outside DIR: absolute paths, '..' and paths through symbolic links are\n"
	"refused. A file appears under its name only once all of it has arrived.\n"
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

int cmd_recv(int argc, char **argv)
{
	struct recv_args a = { 0 };
	struct pxfer_recv_opts *o = &a.o;
	const struct cli_common common = {
		.port = &o->port, .bind = &o->bind,
		.secret_file = &a.secret_file, .transport = &o->transport,
		.device = &o->device, .gid_index = &o->gid_index, .io = &o->io,
		.fsync = &o->fsync, .quiet = &o->quiet, .verbose = &o->verbose,
	};
	int first, code;

	pxfer_recv_opts_init(o);
	first = cli_parse(&recv_cmd, argc, argv, &a, &common, &code);
	if (first < 0)
		return code;
	if (first < argc) {
		error("unexpected argument '%s' (the directory goes after --dir)",
		      argv[first]);
		return PXFER_EXIT_USAGE;
	}
	if (cli_load_secret(&o->secret, a.secret_file, 1))
		return PXFER_EXIT_USAGE;
	return pxfer_recv(o);
}
