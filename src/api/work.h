/* SPDX-License-Identifier: MIT */
/*
 * The work service of a job (docs/scaleout.md, "Work units"): rank 0 walks
 * the sources once and cuts them into units; every rank (rank 0 too)
 * pulls units for a receiver, sends them with ordinary sessions and
 * reports each one's result. Rank 0 serves (pxfer_work_serve), every rank
 * is a client (pxfer_work_connect) over one authenticated TCP connection.
 *
 *	rank 0:	pxfer_work_serve(&s, &conf); publish the port; ...
 *	every rank:
 *		pxfer_work_connect(&c, host, port, rank, secret, len, job);
 *		while ((ret = pxfer_work_pull(c, recv, &u)) >= 0) {
 *			if (ret == 0) { sleep a little; continue; }
 *			... send u ...;
 *			pxfer_work_report(c, &result);
 *			pxfer_unit_release(&u);
 *		}
 *		pxfer_work_end(c, &outcome);
 *		pxfer_work_close(c);
 *	rank 0:	pxfer_work_server_wait(s, &outcome); pxfer_work_server_free(s);
 *
 * A client may be used by several threads at once (one per receiver):
 * each call is one request and its answer, under the client's lock.
 */
#ifndef PXFER_WORK_H
#define PXFER_WORK_H

#include <stddef.h>
#include <stdint.h>

enum pxfer_unit_kind {
	PXFER_UNIT_FILES = 1,	/* regular files and symlinks, whole */
	PXFER_UNIT_RANGE = 2,	/* a range of one large file */
	PXFER_UNIT_DIRS = 3,	/* directories, once everything else is done */
};

struct pxfer_unit_entry {
	uint8_t kind;		/* PXFER_WALK_FILE, _DIR or _SYMLINK (walk.h) */
	char *src;		/* the path to read on the rank (the walk's src) */
	char *rel;		/* the wire path (the walk's rel) */
	char *target;		/* SYMLINK: the link's text; else "" */
	uint64_t size;		/* regular file: st_size as rank 0's walk saw it */
	int64_t mtime_sec;	/* as the walk saw them */
	uint32_t mtime_nsec;
	uint32_t mode;		/* st_mode & 07777 */
	uint64_t off, len;	/* RANGE: these bytes of the file; else 0, 0 */
};

struct pxfer_unit {
	uint64_t id;		/* unique in the job, never reused */
	uint32_t recv;		/* which receiver (index into the --to list) */
	uint8_t kind;		/* enum pxfer_unit_kind */
	unsigned int n;		/* entries; RANGE: exactly 1 */
	struct pxfer_unit_entry *e;
	uint64_t bytes;		/* regular-file bytes it carries (RANGE: len) */
};

void pxfer_unit_release(struct pxfer_unit *u);

/*
 * What a rank did with a unit it pulled. For a RANGE unit, files,
 * files_failed and files_same say what became of its range (1 or 0); the
 * service counts the file once, when all of its ranges are done.
 */
struct pxfer_unit_result {
	uint64_t id;
	int32_t status;		/* PXFER_EXIT_* for this unit: 0 every entry done */
	int32_t again;		/* 1: not done, hand it out again (receiver
				 * busy, session broke); the counts below are
				 * then not added, except bytes_sent */
	int32_t lost;		/* 1: the receiver cannot be reached (as
				 * pxfer_work_lost; implies again) */
	uint64_t files, files_failed, files_same, dirs, links;
	uint64_t bytes, bytes_sent, bytes_same;
};

struct pxfer_work_conf {
	char *const *roots;	/* the PATH operands, as pxfer_walk_init takes */
	int nroots;
	uint32_t nrecv;		/* receivers, 1 .. PXFER_WORK_RECV_MAX */
	uint32_t nranks;	/* ranks that will connect, 1 .. PXFER_WORK_RANKS_MAX */
	const uint8_t *secret;	/* the shared secret's bytes */
	size_t secret_len;
	uint8_t job[16];	/* the job's identity, random, chosen by rank 0 */
	const char *bind;	/* address to listen on, NULL: all */
	uint64_t unit_bytes;	/* a FILES unit closes at this many bytes (64 MiB) */
	uint32_t unit_files;	/* ... or entries (1024, at most
				 * PXFER_WORK_UNIT_FILES_MAX) */
	uint64_t range_bytes;	/* files over 2 * range_bytes are cut into
				 * ranges of range_bytes (64 MiB; larger for
				 * a file of more than PXFER_WORK_RANGES_MAX) */
	uint32_t end_grace_ms;	/* once the job is over, how long wait still
				 * waits for ranks that never connected (5000) */
	uint32_t handshake_ms;	/* a connection not authenticated by then is
				 * closed (10000) */
};

#define PXFER_WORK_RANKS_MAX		16384
#define PXFER_WORK_RECV_MAX		1024
#define PXFER_WORK_UNIT_FILES_MAX	65536
/* the ranges a file is cut into, at most: a larger file gets ranges
 * larger than range_bytes, whole multiples of PXFER_WORK_RANGE_ALIGN */
#define PXFER_WORK_RANGES_MAX		1024
#define PXFER_WORK_RANGE_ALIGN		(64ull << 20)

struct pxfer_job_outcome {	/* the job's result, the same on every rank */
	int status;		/* PXFER_EXIT_* of the job: 0 when every unit
				 * ended with 0, nothing failed in the walk
				 * and no receiver was lost */
	uint64_t files, files_failed, files_same, files_skipped;
	uint64_t dirs, links, bytes, bytes_sent, bytes_same;
	uint64_t units;		/* units done */
	uint64_t units_again;	/* units handed out again (a rank died,
				 * again=1, a lost receiver's ranges) */
	uint32_t nranks, nrecv;
	struct { uint64_t units, ranges, files, bytes_sent; } *rank;	/* [nranks] */
	struct { uint64_t files, bytes, bytes_sent; int lost; } *recv;	/* [nrecv] */
};

void pxfer_job_outcome_release(struct pxfer_job_outcome *o);

struct pxfer_work_server;
struct pxfer_work_client;

/*
 * pxfer_work_serve - rank 0: check the roots (-EINVAL with a message, as
 * pxfer send refuses them), listen (TCP) and start the service thread.
 * The walk starts at the first pull. 0 or -errno.
 */
int pxfer_work_serve(struct pxfer_work_server **sp,
		     const struct pxfer_work_conf *c);
/* pxfer_work_server_port - the port it listens on */
int pxfer_work_server_port(const struct pxfer_work_server *s);

/* how far the job got, for rank 0's progress line */
struct pxfer_work_progress {
	uint64_t bytes_done;	/* of the units done: sent, or found there */
	uint64_t bytes_there;	/* ... of them found there (not sent) */
	uint64_t bytes_total;	/* of every unit cut so far */
	uint64_t files_done, files_total;
	int walking;		/* the walk goes on: the totals grow */
};

/*
 * pxfer_work_server_progress - a snapshot of @s's progress, from any
 * thread while the service runs (each figure is read on its own: they
 * may be a unit apart)
 */
void pxfer_work_server_progress(const struct pxfer_work_server *s,
				struct pxfer_work_progress *p);
/*
 * pxfer_work_server_wait - block until the job is over (every unit done,
 * directories last) and every rank that connected was told (or left);
 * fill @out (pxfer_job_outcome_release it). 0 or -errno.
 */
int pxfer_work_server_wait(struct pxfer_work_server *s,
			   struct pxfer_job_outcome *out);
/* pxfer_work_server_free - stop the thread, close and free everything */
void pxfer_work_server_free(struct pxfer_work_server *s);

/*
 * pxfer_work_connect - connect to rank 0's service at @host:@port and
 * authenticate as @rank of job @job. 0 or -errno: -EACCES refused (wrong
 * secret or job), -EEXIST the rank is already connected, -ERANGE the rank
 * is outside the job, -EPROTO a peer that is not the service.
 */
int pxfer_work_connect(struct pxfer_work_client **cp, const char *host,
		       const char *port, uint32_t rank, const uint8_t *secret,
		       size_t secret_len, const uint8_t job[16]);
/*
 * pxfer_work_pull - the next unit for receiver @recv: 1 with @u filled
 * (pxfer_unit_release it); 0 nothing now, ask again later; -ENODATA
 * nothing more will come for @recv (the job is over, or @recv is lost);
 * another -errno: the service is gone.
 */
int pxfer_work_pull(struct pxfer_work_client *c, uint32_t recv,
		    struct pxfer_unit *u);
/* pxfer_work_report - what became of a unit this rank pulled. 0 or -errno */
int pxfer_work_report(struct pxfer_work_client *c,
		      const struct pxfer_unit_result *r);
/*
 * pxfer_work_lost - receiver @recv cannot be reached: its unfinished
 * files go to the others. 0 or -errno
 */
int pxfer_work_lost(struct pxfer_work_client *c, uint32_t recv);
/*
 * pxfer_work_end - after the rank's last pull: wait for the job's outcome
 * (blocks until the job is over). 0 or -errno
 */
int pxfer_work_end(struct pxfer_work_client *c, struct pxfer_job_outcome *out);
void pxfer_work_close(struct pxfer_work_client *c);

#endif
