/* SPDX-License-Identifier: MIT */
/*
 * The directories a receiving session makes (rdir.c): each remembered
 * once, to be given its mode and times at the end (after what is in
 * them), and whether this session made it, so that a file in it cannot
 * be one that was there before. The receiving files (rfile.h) own one
 * set; nothing here knows of them.
 */
#ifndef PXFER_RECV_RDIR_H
#define PXFER_RECV_RDIR_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/stat.h>
#include "core/err.h"
#include "core/proto.h"

struct pxfer_rdir {
	char *path;
	int fresh;		/* this session made it: no name in it but ours */
	uint32_t mode;
	struct timespec times[2];
};

/*
 * Directories a session remembers to give them their mode and times at
 * the end: each once (a record that repeats one updates it), and at most
 * PXFER_RDIRS_MAX of them, or PXFER_RDIRS_MIB MiB of their paths; a
 * directory beyond either is refused, and not made. About 26 MiB at most.
 */
#define PXFER_RDIRS_MAX		131072
#define PXFER_RDIRS_MIB		16

struct pxfer_rdirs {
	int basefd;			/* the destination: paths are below it */
	uint32_t mode_mask;		/* the bits of a wire mode that apply */
	uint8_t key[16];		/* keys the index: no chosen collisions */
	struct pxfer_rdir *d;		/* made, to be given mode and times */
	size_t n, cap;
	size_t bytes;			/* of their paths, with their NULs */
	size_t max, bytes_max;		/* PXFER_RDIRS_*; tests lower them */
	uint64_t *index;	/* by path: hash << 32 | (1 + index in d) */
	size_t index_cap;	/* a power of two, at least 2 x n */
};

/* the times to give what @m describes: its mtime, the atime left alone */
static inline void pxfer_rfile_times(struct timespec *ts,
				     const struct pxfer_file *m)
{
	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_sec = m->mtime_sec;
	ts[1].tv_nsec = m->mtime_nsec;
}

/* pxfer_rdirs_init - none yet, below @basefd, keyed with a fresh key */
void pxfer_rdirs_init(struct pxfer_rdirs *d, int basefd, uint32_t mode_mask);

/*
 * pxfer_rdirs_make - directory @m (its path checked), made if missing
 * and remembered: 0, or -errno with what failed in @err (-ENOBUFS: one
 * directory too many for the session)
 */
int pxfer_rdirs_make(struct pxfer_rdirs *d, const struct pxfer_file *m,
		     struct pxfer_err *err);

/*
 * pxfer_rdirs_fresh - did this session make directory @path (mkdirat
 * succeeded)? Then nothing in it is older than the session. A hint: a
 * name that appears there anyway is found when the file is named.
 */
int pxfer_rdirs_fresh(const struct pxfer_rdirs *d, const char *path);

/* pxfer_rdirs_apply - give every directory its mode and times, deepest
 * first (at the end of the session) */
void pxfer_rdirs_apply(struct pxfer_rdirs *d);

/* pxfer_rdirs_release - forget them */
void pxfer_rdirs_release(struct pxfer_rdirs *d);

#endif
