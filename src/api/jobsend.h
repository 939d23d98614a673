/* SPDX-License-Identifier: MIT */
/*
 * One transfer made by every rank of a job (docs/scaleout.md): rank 0
 * serves the work (src/api/work.h), every rank pulls units and sends them
 * with ordinary sessions, one thread per receiver, and the job ends with
 * one outcome that every rank gets. Run alone (a job of 1) it is the same
 * with one rank: that is how a list of receivers is served without a
 * launcher.
 */
#ifndef PXFER_API_JOBSEND_H
#define PXFER_API_JOBSEND_H

#include <stdint.h>
#include "pxfer/pxfer.h"
#include "api/job.h"
#include "api/work.h"

/* receivers a job sends to, at most */
#define PXFER_TARGETS_MAX 256
/* the ranges a large file is cut into, by default, and their bounds:
 * whole chunks of the largest size */
#define PXFER_RANGE_DEFAULT	(64ull << 20)
#define PXFER_RANGE_MIN		(64u << 20)
#define PXFER_RANGE_MAX		(64ull << 30)

/* one receiver: HOST[:PORT][/DEST] */
struct pxfer_target {
	const char *host;
	const char *port;	/* NULL: the options' */
	const char *dest;	/* NULL: the receiver's top directory */
};

/* what a rank ends with */
struct pxfer_job_report {
	struct pxfer_job_outcome out;	/* the job's, the same on every rank */
	struct pxfer_stats mine;	/* this rank's sessions' */
	double seconds;			/* from the start to the outcome */
	uint32_t sessions;		/* this rank's */
};

/*
 * pxfer_job_send - this rank's part of sending @o->paths to the @nto
 * receivers @to, in job @j (joined: pxfer_job_init), files over twice
 * @range_bytes (0: PXFER_RANGE_DEFAULT) cut in ranges. @o is checked, with
 * its host and port those of the first receiver. Rank 0 walks the paths
 * and serves the work; every rank pulls, sends and reports. Returns the
 * job's PXFER_EXIT_* status (the same on every rank once the job ended),
 * with @rep filled (release with pxfer_job_report_release); a usage
 * error (ranks given different paths or receivers) is PXFER_EXIT_USAGE
 * with a message.
 */
int pxfer_job_send(const struct pxfer_send_opts *o,
		   const struct pxfer_target *to, unsigned int nto,
		   uint64_t range_bytes, struct pxfer_job *j,
		   struct pxfer_job_report *rep);

void pxfer_job_report_release(struct pxfer_job_report *rep);

#endif
