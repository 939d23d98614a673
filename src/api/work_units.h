/* SPDX-License-Identifier: MIT */
/*
 * Cutting the walk into units (docs/scaleout.md, "Work units"): the walk
 * goes on only as far as the next unit needs, or the next large file
 * while PXFER_WORK_HELD_MAX units of small ones wait. Regular files and links go
 * into FILES units, closed at unit_bytes, unit_files or what one message
 * holds; a file over 2 * range_bytes becomes RANGE units of range_bytes
 * (the last takes the rest); directories are kept, in walk order, for the
 * DIRS units made once everything else is done.
 */
#ifndef PXFER_WORK_UNITS_H
#define PXFER_WORK_UNITS_H

#include <stdint.h>

#include "api/work.h"
#include "send/walk.h"

/*
 * what a unit cut is handed to: it takes @u's entries (the cutter keeps
 * nothing of it); @nrange is the number of ranges of the file a RANGE
 * unit is one of (given in order, from offset 0), else 0. 0 or -errno.
 */
typedef int pxfer_work_emit_fn(void *arg, struct pxfer_unit *u,
			       uint64_t nrange);

/* FILES units held back while the walk looks for large files */
#define PXFER_WORK_HELD_MAX	32

struct pxfer_work_cut {
	struct pxfer_walk walk;
	int walk_over;		/* the walk has no more entries */
	int walked;		/* and every unit is out (or the walk failed) */
	int failed;		/* it failed: the walk stopped */
	uint64_t unit_bytes, range_bytes;
	uint32_t unit_files;
	uint64_t next_id;
	struct pxfer_unit open;		/* the FILES unit being filled */
	unsigned int open_cap;
	size_t open_size;		/* its bytes on the wire */
	struct pxfer_unit held[PXFER_WORK_HELD_MAX];	/* a ring */
	unsigned int held_first, nheld;
	struct pxfer_unit_entry *dirs;	/* every directory, in walk order */
	size_t ndirs, dirs_cap;
	uint64_t files_failed, files_skipped;
};

/*
 * pxfer_work_cut_init - check @roots (-EINVAL, -EEXIST, -ENOENT ... with
 * a message, as pxfer send refuses them) and set up the walk. 0 or -errno
 */
int pxfer_work_cut_init(struct pxfer_work_cut *c, char *const *roots,
			int nroots, uint64_t unit_bytes, uint32_t unit_files,
			uint64_t range_bytes);
/*
 * pxfer_work_cut_more - walk on until a unit closes (or a file's ranges
 * are cut), and hand it to @emit for receiver @recv: 1 when something was
 * emitted, 0 when the walk is over and nothing is left, -errno when the
 * walk fails (reported; c->failed is set and the walk is over).
 */
int pxfer_work_cut_more(struct pxfer_work_cut *c, uint32_t recv,
			pxfer_work_emit_fn *emit, void *arg);
/*
 * pxfer_work_cut_dirs - every directory, in DIRS units for receiver
 * @recv, to @emit. 0 or -errno
 */
int pxfer_work_cut_dirs(struct pxfer_work_cut *c, uint32_t recv,
			pxfer_work_emit_fn *emit, void *arg);
void pxfer_work_cut_release(struct pxfer_work_cut *c);

#endif
