// SPDX-License-Identifier: MIT
/*
 * A partial's data read back before it is offered: each record its
 * journal holds is hashed again from the disk (engine/check.h, on the
 * session's check threads) and compared with the record's hash. A
 * journal vouches for what was written, not for what the disk holds now:
 * a data file truncated, zeroed or rewritten since would otherwise be
 * offered, and the file named with the wrong bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recv/rfile.h"

int pxfer_rfile_check_job(struct pxfer_rfiles *r, uint64_t id)
{
	struct pxfer_rfile *rf = &r->f[id];
	struct pxfer_partial *p = rf->part;
	struct pxfer_check_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->pieces = malloc((p->nrecs ? p->nrecs : 1) * sizeof(*j->pieces));
	if (!j->pieces) {
		free(j);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < p->nrecs; i++)
		j->pieces[i] = (struct pxfer_check_piece){
			.off = p->recs[i].off, .len = p->recs[i].len,
			.want = p->recs[i].h,
		};
	j->n = p->nrecs;
	j->fd = p->fd;
	j->compare = 1;
	j->id = id;
	rf->check = j;
	return 0;
}

int pxfer_rfile_restart(struct pxfer_rfiles *r, uint64_t id)
{
	struct pxfer_rfile *rf = &r->f[id];
	struct pxfer_partial_id pid = {
		.size = rf->size, .mtime_sec = rf->times[1].tv_sec,
		.mtime_nsec = (uint32_t)rf->times[1].tv_nsec,
	};
	char *top = pxfer_rfile_top_path(r, rf->path);
	int ret;

	pxfer_partial_close(rf->part, 0);
	rf->fd = -1;
	if (!top) {
		free(rf->part);
		rf->part = NULL;
		return -ENOMEM;
	}
	pid.path = top;
	pid.path_len = strlen(top);
	ret = pxfer_partial_open(&r->parts, &pid, PXFER_PARTIAL_ANEW, rf->part);
	free(top);
	if (ret) {
		free(rf->part);
		rf->part = NULL;
		return ret;
	}
	rf->part->state = PXFER_PARTIAL_CORRUPT;
	rf->fd = rf->part->fd;
	return 0;
}

int pxfer_rfile_checked(struct pxfer_rfiles *r, uint64_t id,
			struct pxfer_file_ok *ok, char *why, size_t len)
{
	struct pxfer_rfile *rf = &r->f[id];
	struct pxfer_check_job *j = rf->check;
	struct pxfer_partial *p = rf->part;
	int ret;

	memset(ok, 0, offsetof(struct pxfer_file_ok, run));
	ok->id = id;
	rf->check = NULL;
	/* the records served the check: the runs are what is kept */
	free(p->recs);
	p->recs = NULL;
	p->nrecs = 0;
	if (!j->err && !j->bad) {
		free(j->pieces);
		free(j);
		ok->state = PXFER_HAVE_PART;
		ok->held = p->held;
		pxfer_digest_wire(ok->digest, &p->digest);
		ok->nrun = p->nruns;
		memcpy(ok->run, p->runs, p->nruns * sizeof(*ok->run));
		return 0;
	}
	if (j->err)
		snprintf(why, len, "its data cannot be read back: %s",
			 strerror(-j->err));
	else
		snprintf(why, len,
			 "its data read back differs from what its journal recorded (%u of %u ranges, the first at byte %llu)",
			 j->bad, j->n, (unsigned long long)j->bad_off);
	free(j->pieces);
	free(j);
	ok->state = PXFER_HAVE_BAD;
	ret = pxfer_rfile_restart(r, id);
	return ret;
}
