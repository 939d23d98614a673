// SPDX-License-Identifier: MIT
/*
 * The check jobs that making a receiving file (pxfer_rfile_create,
 * rfile.c) may start: a partial's records to read back, or a file that
 * is there to compare with the FILE's digest. rcheck.c takes their
 * results up; they are made here, below both, so that rfile.c, which
 * makes them, and rcheck.c, which drops a file through rfile.c, do not
 * call each other.
 */
#include <errno.h>
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

int pxfer_rfile_compare_job(struct pxfer_rfiles *r, const struct pxfer_file *m,
			    int dfd, const char *base, int fd)
{
	struct pxfer_rfile *rf = &r->f[m->id];
	struct pxfer_check_job *j = calloc(1, sizeof(*j));
	char *path = strdup(m->path);

	if (!j || !path || !(j->pieces = calloc(1, sizeof(*j->pieces)))) {
		free(j);
		free(path);
		return -ENOMEM;
	}
	j->pieces[0].len = m->size;
	pxfer_digest_unwire(&j->pieces[0].want, m->digest);
	j->n = 1;
	j->whole = 1;
	j->compare = 1;
	j->fd = fd;
	j->id = m->id;
	memset(rf, 0, sizeof(*rf));
	rf->fd = fd;
	rf->dirfd = dfd;
	rf->path = path;
	rf->base = path + (base - m->path);
	rf->size = m->size;
	rf->mode = m->mode & r->mode_mask;
	pxfer_rfile_times(rf->times, m);
	memcpy(rf->digest, m->digest, PXFER_DIGEST_LEN);
	rf->wait = PXFER_WAIT_SAME;
	rf->wait_flags = m->flags;
	rf->check = j;
	return 0;
}
