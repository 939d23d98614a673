// SPDX-License-Identifier: MIT
/* pxfer send: parse the command line, run pxfer_send, print the summary. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pxfer/pxfer.h"
#include "cli.h"
#include "core/log.h"

static void send_usage(FILE *f)
{
	fprintf(f,
		"usage: pxfer send [options] PATH... HOST[:PORT][/DEST]\n"
		"\n"
		"Send files and directories to 'pxfer recv' on HOST. Each PATH arrives\n"
		"under its own name (\"dir\" and \"dir/\" both arrive as \"dir\"; \"dir/.\"\n"
		"sends the contents of dir) below the receiver's --dir, or below DEST\n"
		"inside it. Symbolic links are sent as links; a PATH that is a link is\n"
		"followed. IPv6 hosts go in brackets: [fe80::1%%eth0]:7471/dest.\n"
		"\n"
		"The shared secret comes from $%s (the token 'pxfer recv' prints)\n"
		"or --secret-file.\n"
		"\n"
		"options:\n"
		"  -j, --jobs N           worker threads and data connections (default %d, 1-%d)\n"
		"  -p, --port PORT        receiver port (default %s; or HOST:PORT)\n"
		"      --secret-file FILE read the shared secret from FILE ('-': stdin)\n"
		"      --chunk-size SIZE  bytes per chunk (4K-64M; the receiver may lower it;\n"
		"                         default: up to 4M, as large as leaves the receiver\n"
		"                         8 slots per worker, at least 1M)\n"
		"      --transport T      auto, rdma or tcp (default auto)\n"
		"      --device NAME      rdma: use this RDMA device (see 'rdma link')\n"
		"      --gid-index N      rdma: use this GID of the device (default: its\n"
		"                         first RoCE v2 IPv4 GID); both work by binding\n"
		"                         the address the GID holds\n"
		"      --bind ADDR        source address for the connections\n"
		"      --fsync            have the receiver fsync each file before naming it\n"
		"      --io KIND          file I/O: auto, uring or sync (default auto)\n"
		"      --timeout SEC      connect and handshake timeout (default 15)\n"
		"      --json             print a JSON summary on stdout\n"
		"  -q, --quiet            no progress line and no summary\n"
		"  -v, --verbose          say what was chosen (transport, chunk size, ...);\n"
		"                         -vv: with the seconds since the start\n"
		"  -h, --help             this text\n"
		"\n"
		"exit status:\n"
		"  0  everything arrived        3  authentication refused\n"
		"  1  some files failed         4  cannot connect, or the peer went away\n"
		"  2  bad command line or input 5  local resource (memory, disk, limits)\n"
		"  130 interrupted\n"
		"Files that completed before a failure stay complete on the receiver;\n"
		"a file never appears there under its name until all of it has arrived.\n",
		PXFER_SECRET_ENV, PXFER_DEFAULT_WORKERS, 64, PXFER_DEFAULT_PORT);
}

/* HOST[:PORT][/DEST], with [v6] in brackets */
static int parse_target(char *arg, struct pxfer_send_opts *o)
{
	char *host = arg, *rest, *slash, *colon;

	if (*arg == '[') {
		rest = strchr(arg, ']');
		if (!rest)
			return -EINVAL;
		host = arg + 1;
		*rest++ = 0;
	} else {
		rest = arg + strcspn(arg, ":/");
	}
	slash = strchr(rest, '/');
	if (slash) {
		*slash = 0;
		o->dest = slash + 1;
		while (*o->dest == '/')
			o->dest++;
		/* "host/a/b/" means a/b; a trailing slash is not a name */
		for (size_t n = strlen(o->dest); n && o->dest[n - 1] == '/'; n--)
			((char *)o->dest)[n - 1] = 0;
		if (!*o->dest)
			o->dest = NULL;
	}
	colon = strchr(rest, ':');
	if (colon) {
		*colon = 0;
		if (!colon[1])
			return -EINVAL;	/* "host:" or "host:/dest": no port */
		o->port = colon + 1;
	} else if (*rest) {
		return -EINVAL;
	}
	o->host = host;
	return *host ? 0 : -EINVAL;
}

static void print_json(const struct pxfer_send_opts *o,
		       const struct pxfer_stats *st, int code)
{
	printf("{\"status\":\"%s\",\"exit_code\":%d,\"transport\":\"%s\","
	       "\"workers\":%d,\"files\":%llu,\"dirs\":%llu,\"links\":%llu,"
	       "\"bytes\":%llu,\"files_failed\":%llu,\"files_skipped\":%llu,"
	       "\"chunks\":%llu,\"seconds\":%.3f,\"bytes_per_second\":%.0f}\n",
	       code ? "failed" : "ok", code,
	       st->transport ? st->transport : "none", o->workers,
	       (unsigned long long)st->files, (unsigned long long)st->dirs,
	       (unsigned long long)st->links, (unsigned long long)st->bytes,
	       (unsigned long long)st->files_failed,
	       (unsigned long long)st->files_skipped,
	       (unsigned long long)st->chunks, st->seconds,
	       st->seconds > 0 ? st->bytes / st->seconds : 0.0);
	fflush(stdout);
}

static void print_summary(const struct pxfer_send_opts *o,
			  const struct pxfer_stats *st, int code)
{
	char b[32], r[32];

	info("pxfer: %s %llu files (%s) to %s in %.1f s (%s/s) over %s with %d workers%s",
	     code ? "failed after sending" : "sent",
	     (unsigned long long)st->files, pxfer_human(b, sizeof(b), st->bytes),
	     o->host, st->seconds,
	     pxfer_human(r, sizeof(r), st->seconds > 0 ? st->bytes / st->seconds : 0),
	     st->transport ? st->transport : "-", o->workers,
	     st->files_failed ? "; some files failed" : "");
}

int cmd_send(int argc, char **argv)
{
	enum { O_SECRET = 256, O_CHUNK, O_TRANSPORT, O_BIND, O_FSYNC, O_IO,
	       O_TIMEOUT, O_JSON, O_DEVICE, O_GID };
	static const struct option longopts[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "port", required_argument, NULL, 'p' },
		{ "secret-file", required_argument, NULL, O_SECRET },
		{ "chunk-size", required_argument, NULL, O_CHUNK },
		{ "transport", required_argument, NULL, O_TRANSPORT },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "gid-index", required_argument, NULL, O_GID },
		{ "bind", required_argument, NULL, O_BIND },
		{ "fsync", no_argument, NULL, O_FSYNC },
		{ "io", required_argument, NULL, O_IO },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "json", no_argument, NULL, O_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pxfer_send_opts o;
	const char *secret_file = NULL, *port_opt = NULL;
	struct pxfer_stats st;
	unsigned long v;
	uint64_t size;
	int c, quiet = 0, json = 0, code;

	pxfer_send_opts_init(&o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "j:p:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			if (cli_parse_uint(optarg, 1, 64, &v))
				return error("-j takes a number of workers from 1 to 64, not '%s'", optarg),
				       PXFER_EXIT_USAGE;
			o.workers = v;
			break;
		case 'p':
			port_opt = optarg;
			break;
		case O_SECRET:
			secret_file = optarg;
			break;
		case O_CHUNK:
			if (cli_parse_size(optarg, &size) || size < 4096 ||
			    size > (64u << 20) || size % 4096)
				return error("--chunk-size takes a multiple of 4K from 4K to 64M, not '%s'", optarg),
				       PXFER_EXIT_USAGE;
			o.chunk_size = size;
			o.chunk_auto = 0;
			break;
		case O_TRANSPORT:
			if (cli_choice("--transport", optarg, cli_transports))
				return PXFER_EXIT_USAGE;
			o.transport = optarg;
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
		case O_FSYNC:
			o.fsync = 1;
			break;
		case O_IO:
			if (cli_choice("--io", optarg, cli_io_kinds))
				return PXFER_EXIT_USAGE;
			o.io = optarg;
			break;
		case O_TIMEOUT:
			if (cli_parse_uint(optarg, 1, 3600, &v))
				return error("--timeout takes seconds from 1 to 3600, not '%s'", optarg),
				       PXFER_EXIT_USAGE;
			o.timeout_ms = v * 1000;
			break;
		case O_JSON:
			json = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'v':
			pxfer_verbose++;
			break;
		case 'h':
			send_usage(stdout);
			return 0;
		default:
			send_usage(stderr);
			return PXFER_EXIT_USAGE;
		}
	}
	if (argc - optind < 2) {
		error("pxfer send needs at least one PATH and a HOST");
		send_usage(stderr);
		return PXFER_EXIT_USAGE;
	}
	if (parse_target(argv[argc - 1], &o))
		return error("'%s' is not HOST[:PORT][/DEST]", argv[argc - 1]),
		       PXFER_EXIT_USAGE;
	if (port_opt)
		o.port = port_opt;
	if (cli_load_secret(&o.secret, secret_file, 0))
		return PXFER_EXIT_USAGE;
	o.paths = argv + optind;
	o.npaths = argc - optind - 1;
	o.verbose = pxfer_verbose;
	o.progress = !quiet && !json && isatty(STDERR_FILENO);
	code = pxfer_send(&o, &st);
	if (json)
		print_json(&o, &st, code);
	else if (!quiet && code != PXFER_EXIT_USAGE)
		print_summary(&o, &st, code);
	return code;
}
