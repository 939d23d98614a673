/* SPDX-License-Identifier: MIT */
/*
 * A rank's source of entries for the sessions to one receiver: the units
 * it pulled from rank 0 (src/api/jobsrc.c). Used by one thread (the
 * receiver's, and the sessions it runs, one at a time).
 */
#ifndef PXFER_API_JOBSRC_H
#define PXFER_API_JOBSRC_H

#include <limits.h>
#include <stdint.h>
#include "api/work.h"
#include "core/container_of.h"
#include "core/proto.h"
#include "send/source.h"

/* a tag: the unit's number in the rank above, the entry's index below */
#define JSRC_TAG_BITS 24
/*
 * Units a rank holds for one receiver at once: it pulls the next while
 * it sends one (so the session never runs dry), no more, so that the
 * ranges of a large file are spread over the ranks, not all pulled by
 * the first.
 */
#define JSRC_AHEAD 2

struct jsrc_unit {
	struct pxfer_unit u;
	uint64_t seq;			/* the rank's number for it, in tags */
	unsigned int handed;		/* entries given to the session */
	unsigned int ended;		/* entries the session is over with */
	struct pxfer_unit_result r;	/* counted as they end */
	struct jsrc_unit *next;
};

struct jsrc {
	struct send_source b;
	struct pxfer_work_client *c;
	uint32_t recv;			/* the receiver's index */
	struct jsrc_unit *units;	/* pulled, not yet reported */
	struct jsrc_unit *cur;		/* being handed out */
	uint64_t seq;
	int nomore;			/* rank 0 has nothing more for it */
	int err;			/* the service failed: -errno */
	uint64_t bytes_sent;		/* by its sessions */
	char *const *roots;		/* the rank's PATHs */
	int nroots;
	char target[PXFER_PATH_MAX + 1];
};

/* pxfer_jsrc_init - the source of receiver @recv's sessions, pulling
 * through @c for job @job; it reads only below @roots, the rank's PATHs */
void pxfer_jsrc_init(struct jsrc *js, struct pxfer_work_client *c,
		     uint32_t recv, const uint8_t job[PXFER_JOB_ID_LEN],
		     char *const *roots, int nroots);

/*
 * pxfer_jsrc_allowed - is @src below one of @roots, the rank's own PATHs
 * (as the walk on rank 0 makes it: the PATH as given, then names)? Rank 0
 * proved the secret, but a rank reads only what its own command line
 * names: never a path that leaves its PATHs ("..", another prefix). 1 or 0
 */
int pxfer_jsrc_allowed(char *const *roots, int nroots, const char *src);

/* pxfer_jsrc_add - unit @pu (pulled) is to be handed out: the source owns
 * it from now on. 0 or -ENOMEM (then it is still the caller's) */
int pxfer_jsrc_add(struct jsrc *js, struct pxfer_unit *pu);

/*
 * pxfer_jsrc_session_end - a session ended with status @code: the units
 * it did not finish are reported, to go again after the network or a
 * busy receiver ended it (or it was stopped), else as failed with @code
 * (integrity, authentication, a resource of this rank's). 0, or -1 when
 * rank 0 could not be told (js->err).
 */
int pxfer_jsrc_session_end(struct jsrc *js, int code);

#endif
