// SPDX-License-Identifier: MIT
/*
 * A partial's data read back before it is offered: each record its
 * journal holds is hashed again from the disk (engine/check.h, on the
 * session's check threads) and compared with the record's hash. A
 * journal vouches for what was written, not for what the disk holds now:
 * a data file truncated, zeroed or rewritten since would otherwise be
 * offered, and the file named with the wrong bytes.
 *
 * And a file that is there already, of the size a FILE with
 * PXFER_FILE_CHECKSUM names, compared with its digest (a whole-file job
 * on the same threads) before anything is created: the same, it is
 * skipped; otherwise the file is created as if nothing were there. A
 * FILE whose digest follows (FILE_SUM) waits for it first, as a record.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recv/rfile.h"
#include "recv/shared.h"

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
	/* a range's partial lives in the store the sessions share */
	ret = pxfer_partial_open(rf->shared ? &r->shared->store : &r->parts,
				 &pid, PXFER_PARTIAL_ANEW, rf->part);
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
			struct pxfer_file_ok *ok, struct pxfer_err *err)
{
	struct pxfer_rfile *rf = &r->f[id];
	struct pxfer_check_job *j = rf->check;
	struct pxfer_partial *p = rf->part;
	int ret;

	memset(ok, 0, offsetof(struct pxfer_file_ok, run));
	ok->id = id;
	rf->check = NULL;
	/* the records served the check: the runs are what is kept (a
	 * range's tell the other ranges' sessions what their runs hold) */
	if (!rf->shared) {
		free(p->recs);
		p->recs = NULL;
		p->nrecs = 0;
	}
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
		pxfer_err_set(err, 0, "its data cannot be read back: %s",
			      strerror(-j->err));
	else
		pxfer_err_set(err, 0,
			 "its data read back differs from what its journal recorded (%u of %u ranges, the first at byte %llu)",
			 j->bad, j->n, (unsigned long long)j->bad_off);
	free(j->pieces);
	free(j);
	ok->state = PXFER_HAVE_BAD;
	ret = pxfer_rfile_restart(r, id);
	return ret;
}

/* the FILE that file @id's record holds back, in *@m */
static void held_file(const struct pxfer_rfile *rf, uint64_t id,
		      struct pxfer_file *m)
{
	memset(m, 0, offsetof(struct pxfer_file, path));
	m->id = id;
	m->type = PXFER_FT_REG;
	m->flags = rf->wait_flags;
	m->mode = rf->mode;
	m->size = rf->size;
	m->mtime_sec = rf->times[1].tv_sec;
	m->mtime_nsec = (uint32_t)rf->times[1].tv_nsec;
	memcpy(m->digest, rf->digest, PXFER_DIGEST_LEN);
	m->path_len = (uint16_t)strlen(rf->path);
	memcpy(m->path, rf->path, m->path_len + 1u);
	m->target_len = 0;
	m->target[0] = 0;
}

int pxfer_rfile_compared(struct pxfer_rfiles *r, uint64_t id,
			 struct pxfer_file *m, struct pxfer_file_ok *ok)
{
	struct pxfer_rfile *rf = &r->f[id];
	struct pxfer_check_job *j = rf->check;
	int same = !j->err && !j->bad;
	struct stat st;

	rf->check = NULL;
	free(j->pieces);
	free(j);
	held_file(rf, id, m);
	/* still that file: its mode follows the sender's, as a copy's would
	 * (through the descriptor it was read by: never a link's target) */
	if (same && (fstat(rf->fd, &st) || !S_ISREG(st.st_mode) ||
		     (uint64_t)st.st_size != rf->size))
		same = 0;
	if (same && (st.st_mode & 07777) != rf->mode)
		fchmod(rf->fd, rf->mode);
	memset(ok, 0, offsetof(struct pxfer_file_ok, run));
	ok->id = id;
	if (same) {
		ok->state = PXFER_HAVE_SAME;
	} else {
		m->flags &= (uint8_t)~PXFER_FILE_CHECKSUM;
		memset(m->digest, 0, PXFER_DIGEST_LEN);
	}
	pxfer_rfile_drop(r, id, PXFER_DROP_KEEP);
	return same;
}

int pxfer_rfile_hold(struct pxfer_rfiles *r, const struct pxfer_file *m)
{
	struct pxfer_rfile *rf = &r->f[m->id];
	char *path = strdup(m->path);

	if (!path)
		return -ENOMEM;
	memset(rf, 0, sizeof(*rf));
	rf->fd = -1;
	rf->dirfd = -1;
	rf->path = path;
	rf->base = path;
	rf->size = m->size;
	rf->mode = m->mode & r->mode_mask;
	pxfer_rfile_times(rf->times, m);
	rf->wait = PXFER_WAIT_SUM;
	rf->wait_flags = m->flags;
	return 0;
}

void pxfer_rfile_unhold(struct pxfer_rfiles *r, uint64_t id,
			const uint8_t *digest, struct pxfer_file *m)
{
	struct pxfer_rfile *rf = &r->f[id];

	held_file(rf, id, m);
	m->flags &= (uint8_t)~PXFER_FILE_SUM_FOLLOWS;
	memcpy(m->digest, digest, PXFER_DIGEST_LEN);
	pxfer_rfile_drop(r, id, PXFER_DROP_KEEP);
}
