// SPDX-License-Identifier: MIT
/*
 * A rank's part of a job's transfer (docs/scaleout.md). Rank 0 picks the
 * job's identity, starts the work service and publishes where it is
 * (PMIx); after a fence every rank reads it, connects, and runs one
 * thread per receiver: pull a unit, run a session whose source hands out
 * the units it pulls (api/jobsrc.c), report them, until rank 0 has
 * nothing more for that receiver. Then the job's outcome, the same on
 * every rank.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "api/jobsend.h"
#include "api/jobsrc.h"
#include "core/auth.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/sys.h"
#include "engine/fail.h"
#include "engine/progress.h"
#include "send/sender.h"

#define WORK_KEY "pxfer.work"
/* sessions to a receiver that could not even start, in a row, before it
 * is given up as lost */
#define UNREACHED_MAX 3
/* seconds a thread waits before it asks again when rank 0 has nothing
 * now (units of other ranks may come back), doubling to the cap */
#define PULL_WAIT 0.05
#define PULL_WAIT_CAP 1.0

struct jrecv {
	pthread_t tid;
	int started;
	struct jsend *job;
	uint32_t idx;
	struct pxfer_send_opts o;	/* the job's, to this receiver */
	struct jsrc src;
	struct pxfer_stats st;
	uint32_t sessions;
	int code;			/* the worst session status, for -v */
};

struct jsend {
	const struct pxfer_send_opts *o;
	struct pxfer_log *log;
	struct pxfer_work_client *c;
	uint8_t id[PXFER_JOB_ID_LEN];
	struct jrecv *r;
	unsigned int nr;
	uint64_t range_bytes;
	atomic_uint running;		/* receivers' threads not yet done */
};

/* wait @secs unless stopped: 0, or -1 when stopped */
static int nap(const struct pxfer_stop *stop, double secs)
{
	struct pollfd p = { .fd = pxfer_stop_fd(stop), .events = POLLIN };

	if (pxfer_stop_raised(stop))
		return -1;
	poll(&p, 1, (int)(secs * 1000) + 1);
	return pxfer_stop_raised(stop) ? -1 : 0;
}

static void stats_add(struct pxfer_stats *a, const struct pxfer_stats *b)
{
	a->files += b->files;
	a->dirs += b->dirs;
	a->links += b->links;
	a->bytes += b->bytes;
	a->files_failed += b->files_failed;
	a->files_skipped += b->files_skipped;
	a->files_same += b->files_same;
	a->bytes_same += b->bytes_same;
	a->bytes_resumed += b->bytes_resumed;
	a->bytes_sent += b->bytes_sent;
	a->files_changed += b->files_changed;
	a->chunks += b->chunks;
	if (!a->transport)
		a->transport = b->transport;
}

/*
 * One receiver's thread: a session whenever rank 0 has units for it,
 * until it has no more. A receiver that cannot be reached UNREACHED_MAX
 * times in a row is reported lost: rank 0 gives its files to the others.
 */
static void *recv_thread(void *arg)
{
	struct jrecv *jr = arg;
	const struct pxfer_stop *stop = jr->o.stop;
	double wait = PULL_WAIT;
	int unreached = 0;

	pxfer_log_attach(jr->job->log);
	while (!jr->src.nomore && !jr->src.err) {
		struct send_pass p = { .source = &jr->src.b };
		struct pxfer_unit pu;
		int ret, code;

		ret = pxfer_work_pull(jr->job->c, jr->idx, &pu);
		if (ret == -ENODATA)
			break;
		if (ret < 0) {
			jr->src.err = ret;
			break;
		}
		if (ret == 0) {
			if (nap(stop, wait))
				break;
			wait = wait * 2 < PULL_WAIT_CAP ? wait * 2 : PULL_WAIT_CAP;
			continue;
		}
		wait = PULL_WAIT;
		if (pxfer_jsrc_add(&jr->src, &pu)) {
			pxfer_unit_release(&pu);
			jr->src.err = -ENOMEM;
			break;
		}
		jr->sessions++;
		code = send_session_run(&jr->o, &jr->st, &p);
		if (code > jr->code && code != PXFER_EXIT_INTR)
			jr->code = code;
		if (pxfer_jsrc_session_end(&jr->src, code))
			break;
		if (pxfer_stop_raised(stop))
			break;
		/* a full receiver (its --max-sessions) is not a lost one */
		if (!p.welcomed && code == PXFER_EXIT_BUSY) {
			if (nap(stop, PULL_WAIT_CAP))
				break;
			continue;
		}
		if (!p.welcomed &&
		    (code == PXFER_EXIT_NET || code == PXFER_EXIT_AUTH)) {
			if (++unreached >= UNREACHED_MAX ||
			    code == PXFER_EXIT_AUTH) {
				pxfer_error("receiver %s is lost to the job (%d session(s) could not start); its files go to the others",
					    jr->o.host, unreached);
				pxfer_work_lost(jr->job->c, jr->idx);
				break;
			}
			if (nap(stop, 0.5 * unreached))
				break;
			continue;
		}
		unreached = 0;
	}
	atomic_fetch_sub(&jr->job->running, 1);
	pxfer_log_attach(NULL);
	return NULL;
}

/* the address the others reach rank 0 at: the one this host would use
 * to reach the first receiver (or @bind) */
static int local_addr(const struct pxfer_send_opts *o, char *buf, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, ret;

	if (o->bind) {
		snprintf(buf, len, "%s", o->bind);
		return 0;
	}
	ret = getaddrinfo(o->host, o->port, &hints, &ai);
	if (ret)
		return -EHOSTUNREACH;
	fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ret = fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) ||
	      getsockname(fd, (struct sockaddr *)&ss, &sl) ? -errno : 0;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	if (ret)
		return ret;
	if (getnameinfo((struct sockaddr *)&ss, sl, buf, len, NULL, 0,
			NI_NUMERICHOST))
		return -EINVAL;
	return 0;
}

/* what every rank must have been given the same: the paths and the
 * receivers, as a hash in hex */
static void inputs_hash(const struct pxfer_send_opts *o,
			const struct pxfer_target *to, unsigned int nto,
			char hex[33])
{
	crypto_generichash_state h;
	uint8_t d[16];

	crypto_generichash_init(&h, NULL, 0, sizeof(d));
	for (int i = 0; i < o->npaths; i++)
		crypto_generichash_update(&h, (const uint8_t *)o->paths[i],
					  strlen(o->paths[i]) + 1);
	for (unsigned int i = 0; i < nto; i++) {
		const char *f[3] = { to[i].host, to[i].port ? to[i].port : o->port,
				     to[i].dest ? to[i].dest : "" };

		for (int k = 0; k < 3; k++)
			crypto_generichash_update(&h, (const uint8_t *)f[k],
						  strlen(f[k]) + 1);
	}
	crypto_generichash_final(&h, d, sizeof(d));
	sodium_bin2hex(hex, 33, d, sizeof(d));
}

/*
 * Rank 0 serves (*@srv) and publishes "ADDR PORT JOB INPUTS"; every rank
 * reads it after the fence and connects. 0, or a PXFER_EXIT_* status
 * after saying why.
 */
static int wire_up(struct jsend *js, struct pxfer_job *j,
		   const struct pxfer_target *to, unsigned int nto,
		   struct pxfer_work_server **srv)
{
	const struct pxfer_send_opts *o = js->o;
	char addr[NI_MAXHOST], val[PXFER_JOB_VALUE_MAX], mine[33];
	char a[NI_MAXHOST], port[8], jobhex[2 * PXFER_JOB_ID_LEN + 1], ins[33];
	int ret;

	inputs_hash(o, to, nto, mine);
	if (j->rank == 0) {
		struct pxfer_work_conf c = {
			.roots = o->paths, .nroots = o->npaths,
			.nrecv = nto, .nranks = j->size,
			.secret = o->secret.key, .secret_len = o->secret.len,
			.range_bytes = js->range_bytes,
		};

		randombytes_buf(js->id, sizeof(js->id));
		memcpy(c.job, js->id, sizeof(c.job));
		ret = local_addr(o, addr, sizeof(addr));
		if (ret) {
			pxfer_error("cannot find this host's address towards %s: %s",
				    o->host, strerror(-ret));
			return PXFER_EXIT_NET;
		}
		c.bind = j->size > 1 ? addr : "127.0.0.1";
		ret = pxfer_work_serve(srv, &c);
		if (ret)
			return ret == -EINVAL ? PXFER_EXIT_USAGE : PXFER_EXIT_LOCAL;
		sodium_bin2hex(jobhex, sizeof(jobhex), js->id, sizeof(js->id));
		snprintf(val, sizeof(val), "%s %d %s %s", c.bind,
			 pxfer_work_server_port(*srv), jobhex, mine);
		if (pxfer_job_publish(j, WORK_KEY, val))
			return PXFER_EXIT_LOCAL;
	}
	if (pxfer_job_fence(j) ||
	    pxfer_job_lookup(j, 0, WORK_KEY, val, sizeof(val)))
		return PXFER_EXIT_NET;
	if (sscanf(val, "%1024s %7s %32s %32s", a, port, jobhex, ins) != 4 ||
	    sodium_hex2bin(js->id, sizeof(js->id), jobhex, strlen(jobhex),
			   NULL, NULL, NULL)) {
		pxfer_error("rank 0 published '%s', not where its work is", val);
		return PXFER_EXIT_USAGE;
	}
	if (strcmp(ins, mine)) {
		pxfer_error("rank %u was given other paths or receivers than rank 0; every rank must run the same command",
			    j->rank);
		return PXFER_EXIT_USAGE;
	}
	ret = pxfer_work_connect(&js->c, a, port, j->rank, o->secret.key,
				 o->secret.len, js->id);
	if (ret) {
		pxfer_error("rank %u cannot reach rank 0's work service at %s port %s: %s",
			    j->rank, a, port, strerror(-ret));
		return ret == -EACCES ? PXFER_EXIT_AUTH : PXFER_EXIT_NET;
	}
	return 0;
}

/*
 * Rank 0, while its threads send: the job's progress line (on a
 * terminal, as pxfer send draws one), from what the work service knows.
 */
static void job_progress(struct jsend *js, struct pxfer_work_server *srv)
{
	struct pxfer_progress prog;
	struct pxfer_work_progress p;

	pxfer_progress_init(&prog, js->o->progress);
	if (!prog.enabled)
		return;
	while (atomic_load(&js->running) && !pxfer_stop_raised(js->o->stop)) {
		pxfer_work_server_progress(srv, &p);
		pxfer_progress_draw(&prog, p.bytes_done - p.bytes_there,
				    p.bytes_total, p.bytes_there, p.files_done,
				    p.files_total, p.walking, 0);
		nap(js->o->stop, 0.2);
	}
	pxfer_work_server_progress(srv, &p);
	pxfer_progress_draw(&prog, p.bytes_done - p.bytes_there, p.bytes_total,
			    p.bytes_there, p.files_done, p.files_total, 0, 1);
	pxfer_progress_end(&prog);
}

static int job_run(struct jsend *js, struct pxfer_job *j,
		   const struct pxfer_target *to, unsigned int nto,
		   struct pxfer_job_report *rep)
{
	struct pxfer_work_server *srv = NULL;
	double t0 = pxfer_now();
	int code, ret;

	code = wire_up(js, j, to, nto, &srv);
	if (code)
		goto out;
	js->r = calloc(nto, sizeof(*js->r));
	if (!js->r) {
		code = PXFER_EXIT_LOCAL;
		goto out;
	}
	js->nr = nto;
	for (unsigned int i = 0; i < nto; i++) {
		struct jrecv *jr = &js->r[i];

		jr->job = js;
		jr->idx = i;
		jr->o = *js->o;
		jr->o.host = to[i].host;
		if (to[i].port)
			jr->o.port = to[i].port;
		jr->o.dest = to[i].dest;
		jr->o.progress = 0;	/* rank 0 speaks for the job */
		pxfer_jsrc_init(&jr->src, js->c, i, js->id, js->o->paths,
				js->o->npaths);
		atomic_fetch_add(&js->running, 1);
		ret = pthread_create(&jr->tid, NULL, recv_thread, jr);
		if (ret) {
			atomic_fetch_sub(&js->running, 1);
			pxfer_error("cannot start a thread: %s", strerror(ret));
			code = PXFER_EXIT_LOCAL;
			break;
		}
		jr->started = 1;
	}
	if (srv)
		job_progress(js, srv);
	for (unsigned int i = 0; i < nto; i++) {
		struct jrecv *jr = &js->r[i];

		if (!jr->started)
			continue;
		pthread_join(jr->tid, NULL);
		stats_add(&rep->mine, &jr->st);
		rep->sessions += jr->sessions;
		if (jr->src.err && !code) {
			pxfer_error("rank %u lost rank 0's work service: %s",
				    j->rank, strerror(-jr->src.err));
			code = PXFER_EXIT_NET;
		}
		pxfer_jsrc_session_end(&jr->src, PXFER_EXIT_OK);
	}
	if (pxfer_stop_raised(js->o->stop))
		code = PXFER_EXIT_INTR;
	if (!code) {
		ret = pxfer_work_end(js->c, &rep->out);
		code = ret ? PXFER_EXIT_NET : rep->out.status;
	}
	if (srv) {
		/* rank 0's service ends once every rank heard the outcome */
		struct pxfer_job_outcome all = { 0 };

		if (!code || code == rep->out.status)
			pxfer_work_server_wait(srv, &all);
		pxfer_job_outcome_release(&all);
		pxfer_work_server_free(srv);
	}
out:
	if (js->c)
		pxfer_work_close(js->c);
	free(js->r);
	rep->seconds = pxfer_now() - t0;
	return code;
}

int pxfer_job_send(const struct pxfer_send_opts *o,
		   const struct pxfer_target *to, unsigned int nto,
		   uint64_t range_bytes, struct pxfer_job *j,
		   struct pxfer_job_report *rep)
{
	struct pxfer_log log, *old;
	struct jsend js = {
		.o = o, .log = &log,
		.range_bytes = range_bytes ? range_bytes : PXFER_RANGE_DEFAULT,
	};
	char why[400];
	int code;

	memset(rep, 0, sizeof(*rep));
	if (pxfer_log_init(&log, o->log, o->log_arg, o->verbose))
		return PXFER_EXIT_LOCAL;
	old = pxfer_log_attach(&log);
	if (!nto || nto > PXFER_TARGETS_MAX) {
		pxfer_error("a job sends to 1 to %d receivers, not %u",
			    PXFER_TARGETS_MAX, nto);
		code = PXFER_EXIT_USAGE;
	} else if (pxfer_send_opts_check(o, why, sizeof(why))) {
		pxfer_error("%s", why);
		code = PXFER_EXIT_USAGE;
	} else if (pxfer_auth_init()) {
		pxfer_error("cannot initialise the crypto library");
		code = PXFER_EXIT_LOCAL;
	} else {
		pxfer_fd_table_reserve(PXFER_FD_RESERVE);
		code = job_run(&js, j, to, nto, rep);
	}
	pxfer_log_attach(old);
	pxfer_log_release(&log);
	return code;
}

void pxfer_job_report_release(struct pxfer_job_report *rep)
{
	pxfer_job_outcome_release(&rep->out);
}
