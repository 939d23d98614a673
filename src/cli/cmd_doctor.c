// SPDX-License-Identifier: MIT
/*
 * pxfer doctor: a check of this host, and of the way to a peer, for the
 * set-up problems that most often keep a transfer from starting over
 * RDMA: no device, a port down, a GID the peer cannot use, no address on
 * the peer's subnet, a memlock limit below what the rings pin, and, as
 * notes, io_uring and the open-file limit. It reads; it changes nothing.
 * This file has the command and the host's limits; doctor_rdma.c the
 * RDMA sections, from what the rdma transport's diagnostics gather
 * (transport/diag.h); doctor_report.c the report's lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pxfer/pxfer.h"
#include "cli.h"
#include "cli/doctor.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/proto.h"
#include "core/sys.h"
#include "engine/params.h"
#include "io/io.h"
#include "transport/choose.h"

/* ---- memlock, io_uring, open files ---------------------------------------------------- */

/*
 * The rings of a default transfer: the sender's default workers and
 * chunk, shaped by a receiver with the default --ring-mem, --max-chunk
 * and --max-sessions, as its session would (src/engine/params.c)
 */
static void default_shape(const struct pxfer_transport_ops *t,
			  struct pxfer_params *p)
{
	const struct pxfer_params_in in = {
		.chunk = PXFER_AUTO_CHUNK_MAX,
		.workers = pxfer_workers_auto(),
		.chunk_auto = 1,
		.ring_mem = PXFER_DEFAULT_RING_MEM,
		.max_chunk = PXFER_DEFAULT_MAX_CHUNK,
		.max_sessions = PXFER_DEFAULT_MAX_SESSIONS,
		/* .nofile, .max_files: files in flight, not reported here */
		.ring_slots_max = t->ring_slots_max,
		.ring_hdr = t->ring_hdr,
		.page = sysconf(_SC_PAGESIZE),
	};

	pxfer_params_pick(&in, p);
}

static void check_memlock(struct doctor *d)
{
	const struct pxfer_transport_ops *t = d->rdma_t;
	uint64_t limit = pxfer_memlock_limit(), rings;
	struct pxfer_err err;
	char l[32], r[32], c[32];
	struct pxfer_params p;
	int short_of;

	doctor_section("memlock");
	default_shape(t, &p);
	rings = p.ring_mem;
	short_of = pxfer_transport_memlock(t, p.workers, p.slots, p.chunk, &err);
	printf("a default rdma transfer pins %s of rings (%u worker(s) x %u slots of %s) and its connections' buffers\n",
	       pxfer_human(r, sizeof(r), rings), p.workers, p.slots,
	       pxfer_human(c, sizeof(c), p.chunk));
	if (short_of) {
		doctor_finding(d, d->rdma, "%s%s", d->rdma ? "" :
			       "a transfer over rdma would stop here: ",
			       pxfer_err_msg(&err));
		doctor_fix("for a login: '* soft memlock unlimited' and '* hard memlock unlimited' in /etc/security/limits.conf, then log in again; for a service: LimitMEMLOCK=infinity; or 'pxfer send -j N' with fewer workers");
	} else if (!limit) {
		doctor_ok(d, "the memlock limit is unlimited");
	} else if (limit < rings) {
		doctor_ok(d, "the memlock limit is %s, but this process may pin beyond it (CAP_IPC_LOCK)",
			  pxfer_human(l, sizeof(l), limit));
	} else {
		doctor_ok(d, "the memlock limit is %s", pxfer_human(l, sizeof(l), limit));
	}
}

/* the number in the first line of @path, or -1 */
static long proc_num(const char *path, const char *key)
{
	char line[256];
	size_t klen = key ? strlen(key) : 0;
	long v = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!key || !strncmp(line, key, klen)) {
			v = strtol(line + klen, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static void check_uring(struct doctor *d)
{
	long sysctl = proc_num("/proc/sys/kernel/io_uring_disabled", NULL);
	long seccomp = proc_num("/proc/self/status", "Seccomp:");
	int ret = pxfer_io_uring_probe();

	doctor_section("io_uring");
	if (!ret) {
		doctor_ok(d, "io_uring works: files are read and written through it");
		return;
	}
	doctor_finding(d, 0, "io_uring is unavailable here (%s): pxfer reads and writes files with pread/pwrite instead, which works, with fewer reads in flight",
		       strerror(-ret));
	if (sysctl == 2)
		doctor_fix("it is disabled by sysctl kernel.io_uring_disabled=2: 'sysctl -w kernel.io_uring_disabled=0' as root (and in /etc/sysctl.d/ to keep it)");
	else if (sysctl == 1)
		doctor_fix("sysctl kernel.io_uring_disabled=1 allows it only to the group kernel.io_uring_group: add the user to that group, or 'sysctl -w kernel.io_uring_disabled=0'");
	else if (seccomp == 2)
		doctor_fix("a seccomp filter (a container's or a sandbox's) refuses it: allow io_uring_setup, io_uring_enter and io_uring_register in its profile, or keep pread/pwrite");
	else if (ret == -ENOSYS)
		doctor_fix("this kernel has no io_uring (CONFIG_IO_URING): a kernel from 5.1 on has it; or keep pread/pwrite");
	else if (ret == -ENOMEM)
		doctor_fix("the kernel counts io_uring's rings against the memlock limit here (before 5.12): raise it ('ulimit -l')");
	else
		doctor_fix("if the kernel.io_uring_disabled sysctl or a security module refuses it, allow it; or keep pread/pwrite");
}

static void check_nofile(struct doctor *d)
{
	unsigned long have = pxfer_raise_nofile();
	unsigned long recv = (unsigned long)PXFER_FD_RESERVE * PXFER_DEFAULT_MAX_SESSIONS;

	doctor_section("open files");
	if (have >= recv) {
		doctor_ok(d, "pxfer may open %lu files (a sender wants %d, a receiver with %d sessions %lu)",
			  have, PXFER_FD_RESERVE, PXFER_DEFAULT_MAX_SESSIONS, recv);
		return;
	}
	doctor_finding(d, 0, "pxfer may open %lu files, less than %s wants (%lu): fewer files are in flight at once, which slows trees of small files",
		       have, have < PXFER_FD_RESERVE ? "a sender" :
		       "a receiver with its 8 sessions", have < PXFER_FD_RESERVE ?
		       (unsigned long)PXFER_FD_RESERVE : recv);
	doctor_fix("raise the hard limit: 'ulimit -Hn 65536' as root, a 'nofile' line in /etc/security/limits.conf, or LimitNOFILE= for a service");
}

/* ---- the command ---------------------------------------------------------------------- */

static const struct cli_opt doctor_opts[] = {
	{ 0 },
};

static const struct cli_cmd doctor_cmd = {
	.side = CLI_DOCTOR,
	.usage =
	"usage: pxfer doctor [options] [HOST]\n"
	"\n"
	"Check this host for what keeps pxfer from working over RDMA, and say\n"
	"what to do about each thing found: every RDMA device, port and GID;\n"
	"with HOST, the way to it (the device and port rdma_cm takes, whether\n"
	"that port is active, the GID it connects from, and which local RDMA\n"
	"addresses are on HOST's subnet); the memlock limit against what a\n"
	"default transfer pins; io_uring; the open-file limit. It changes\n"
	"nothing. Each finding is a line: 'ok:', 'note:' (a transfer works,\n"
	"perhaps slower or over tcp) or 'problem:' (a transfer would stop),\n"
	"followed by '  fix:' lines.\n"
	"\n"
	"A transfer would use rdma with --transport rdma (or --device or\n"
	"--gid-index), and with auto when an active RDMA port routes to HOST\n"
	"(without HOST: when any port is active).\n",
	.opts = doctor_opts,
	.operands = CLI_HOST,
	.epilog =
	"exit status:\n"
	"  0  no problem: nothing found would stop a transfer with these options\n"
	"  1  a problem: with rdma used or asked for, no device, no active port,\n"
	"     no route to HOST, a port down on the way, a GID the peer cannot\n"
	"     use, a netdev MTU under 1104, or a memlock limit below what a\n"
	"     default transfer pins; or HOST does not resolve\n"
	"  2  bad command line\n",
};

/* HOST, or [HOST] for an IPv6 address */
static int parse_host(struct doctor *d, char *arg)
{
	struct addrinfo *ai;
	size_t n = strlen(arg);

	if (arg[0] == '[' && n > 2 && arg[n - 1] == ']') {
		arg[n - 1] = 0;
		arg++;
	}
	if (!*arg)
		return -EINVAL;
	d->host = arg;
	pxfer_escape(d->hostp, sizeof(d->hostp), arg, strlen(arg));
	if (pxfer_addr_resolve(arg, "0", AF_UNSPEC, 0, &ai))
		return 0;
	pxfer_addr_source(ai->ai_addr, d->peer, sizeof(d->peer));
	freeaddrinfo(ai);
	d->peer_loopback = !strncmp(d->peer, "127.", 4) || !strcmp(d->peer, "::1");
	return 0;
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor_args a = { .gid_index = -1 };
	const struct cli_common common = {
		.bind = &a.bind, .transport = &a.transport,
		.device = &a.device, .gid_index = &a.gid_index,
	};
	struct doctor d = { .a = &a };
	int first, code, ret;

	first = cli_parse(&doctor_cmd, argc, argv, &a, &common, &code);
	if (first < 0)
		return code;
	if (argc - first > 1) {
		pxfer_error("pxfer doctor takes one HOST, not '%s' and '%s'",
		      argv[first], argv[first + 1]);
		return PXFER_EXIT_USAGE;
	}
	if (!a.transport)
		a.transport = "auto";
	d.tcp = !strcmp(a.transport, "tcp");
	if (d.tcp && (a.device || a.gid_index >= 0)) {
		pxfer_error("--device and --gid-index apply to the rdma transport, not tcp");
		return PXFER_EXIT_USAGE;
	}
	d.want_rdma = !strcmp(a.transport, "rdma") || a.device || a.gid_index >= 0;
	if (first < argc && parse_host(&d, argv[first])) {
		pxfer_error("'%s' is not a HOST", argv[first]);
		return PXFER_EXIT_USAGE;
	}
	d.rdma_t = pxfer_transport_find("rdma");
	d.rd = d.rdma_t->diag;
	d.ip = pxfer_transport_find("tcp")->diag;
	ret = d.rd->inventory_init(&d.inv);
	if (ret) {
		d.rd->inventory_release(&d.inv);
		pxfer_error("cannot list the RDMA devices: %s", strerror(-ret));
		return PXFER_EXIT_FAIL;
	}
	doctor_survey(&d);
	printf("pxfer doctor %s: this host%s%s (--transport %s%s)\n", PXFER_VERSION,
	       d.host ? " and the way to " : "", d.host ? d.hostp : "",
	       a.transport, a.device || a.gid_index >= 0 ? ", rdma implied" : "");
	doctor_devices(&d);
	if (a.device || a.gid_index >= 0)
		doctor_selection(&d);
	if (d.host)
		doctor_route(&d);
	check_memlock(&d);
	check_uring(&d);
	check_nofile(&d);
	printf("\n%u problem(s), %u note(s): %s\n", d.problems, d.notes,
	       d.problems ? "a transfer would stop; see 'fix:' above" :
	       "nothing found would stop a transfer");
	d.rd->inventory_release(&d.inv);
	return d.problems ? PXFER_EXIT_FAIL : PXFER_EXIT_OK;
}
