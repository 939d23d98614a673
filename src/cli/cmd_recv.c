// SPDX-License-Identifier: MIT
/* pxfer recv: parse the command line and serve. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "pxfer/pxfer.h"
#include "cli.h"
#include "core/log.h"

static void recv_usage(FILE *f)
{
	fprintf(f,
		"usage: pxfer recv [options]\n"
		"\n"
		"Receive files from 'pxfer send' into DIR, one session at a time, until\n"
		"interrupted (or after one session with --once). Nothing is ever written\n"
		"outside DIR: absolute paths, '..' and paths through symbolic links are\n"
		"refused. A file appears under its name only once all of it has arrived.\n"
		"\n"
		"Senders must prove a shared secret: it comes from --secret-file or\n"
		"$%s; with neither, a random token is generated and printed.\n"
		"\n"
		"options:\n"
		"  -d, --dir DIR          directory to receive into (default: the current one)\n"
		"  -p, --port PORT        port to listen on (default %s)\n"
		"      --bind ADDR        address to listen on (default: all)\n"
		"      --once             exit after one session\n"
		"      --secret-file FILE read the shared secret from FILE ('-': stdin)\n"
		"      --transport T      auto, rdma or tcp (default auto)\n"
		"      --device NAME      rdma: use this RDMA device (see 'rdma link')\n"
		"      --gid-index N      rdma: use this GID of the device (default: its\n"
		"                         first RoCE v2 IPv4 GID); both work by binding\n"
		"                         the address the GID holds\n"
		"      --fsync            fsync every file before naming it\n"
		"      --ring-mem SIZE    memory for all data rings (default 32M)\n"
		"      --max-chunk SIZE   largest chunk accepted (default 16M)\n"
		"      --io KIND          file I/O: auto, uring or sync (default auto)\n"
		"  -q, --quiet            print only errors\n"
		"  -v, --verbose          say more; -vv: with the seconds since the start\n"
		"  -h, --help             this text\n"
		"\n"
		"exit status (with --once, of that session):\n"
		"  0  everything arrived        3  authentication refused\n"
		"  1  some files failed         4  port in use, or the peer went away\n"
		"  2  bad command line or DIR   5  local resource (memory, disk, limits)\n"
		"  130 interrupted\n",
		PXFER_SECRET_ENV, PXFER_DEFAULT_PORT);
}

int cmd_recv(int argc, char **argv)
{
	enum { O_BIND = 256, O_ONCE, O_SECRET, O_TRANSPORT, O_FSYNC, O_RING,
	       O_MAXCHUNK, O_IO, O_DEVICE, O_GID };
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, O_BIND },
		{ "once", no_argument, NULL, O_ONCE },
		{ "secret-file", required_argument, NULL, O_SECRET },
		{ "transport", required_argument, NULL, O_TRANSPORT },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "gid-index", required_argument, NULL, O_GID },
		{ "fsync", no_argument, NULL, O_FSYNC },
		{ "ring-mem", required_argument, NULL, O_RING },
		{ "max-chunk", required_argument, NULL, O_MAXCHUNK },
		{ "io", required_argument, NULL, O_IO },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pxfer_recv_opts o;
	const char *secret_file = NULL;
	uint64_t size;
	int c;

	pxfer_recv_opts_init(&o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:p:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.dir = optarg;
			break;
		case 'p':
			o.port = optarg;
			break;
		case O_BIND:
			o.bind = optarg;
			break;
		case O_DEVICE:
			o.device = optarg;
			break;
		case O_GID:
			if (cli_parse_gid(optarg, &o.gid_index))
				return PXFER_EXIT_USAGE;
			break;
		case O_ONCE:
			o.once = 1;
			break;
		case O_SECRET:
			secret_file = optarg;
			break;
		case O_TRANSPORT:
			if (cli_choice("--transport", optarg, cli_transports))
				return PXFER_EXIT_USAGE;
			o.transport = optarg;
			break;
		case O_FSYNC:
			o.fsync = 1;
			break;
		case O_RING:
			if (cli_parse_size(optarg, &size) || size < (64u << 10) ||
			    size > (4ull << 30))
				return error("--ring-mem takes a size from 64K to 4G, not '%s'", optarg),
				       PXFER_EXIT_USAGE;
			o.ring_mem = size;
			break;
		case O_MAXCHUNK:
			if (cli_parse_size(optarg, &size) || size < 4096 ||
			    size > (64u << 20))
				return error("--max-chunk takes a size from 4K to 64M, not '%s'", optarg),
				       PXFER_EXIT_USAGE;
			o.max_chunk = size;
			break;
		case O_IO:
			if (cli_choice("--io", optarg, cli_io_kinds))
				return PXFER_EXIT_USAGE;
			o.io = optarg;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'v':
			pxfer_verbose++;
			break;
		case 'h':
			recv_usage(stdout);
			return 0;
		default:
			recv_usage(stderr);
			return PXFER_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		error("unexpected argument '%s' (the directory goes after --dir)",
		      argv[optind]);
		return PXFER_EXIT_USAGE;
	}
	if (cli_load_secret(&o.secret, secret_file, 1))
		return PXFER_EXIT_USAGE;
	o.verbose = pxfer_verbose;
	return pxfer_recv(&o);
}
