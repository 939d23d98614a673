/* SPDX-License-Identifier: MIT */
/*
 * The progress line on a terminal: bytes, rate, ETA, files done/total.
 * It is the call's: while it is shown, the lines the call's threads print
 * take it off first (core/log.h).
 */
#ifndef PXFER_PROGRESS_H
#define PXFER_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/log.h"

struct pxfer_progress {
	int enabled;
	struct pxfer_log *log;		/* the call's, which clears the line */
	struct pxfer_log_clear clear;
	atomic_int drawn;	/* a line is on the terminal (any thread clears it) */
	double start, last;
	double rate;		/* smoothed bytes per second */
	uint64_t last_bytes;
	/* held data being read back (engine/check.h): shown while
	 * check_total is not 0; the caller sets them */
	uint64_t check_done, check_total;
};

void pxfer_progress_init(struct pxfer_progress *p, int enabled);
/*
 * @bytes of @total sent, @files of @files_total done; @there of the total
 * was on the receiver already (skipped or held by a partial): not to be
 * sent. @more: the total is still growing (the walk goes on).
 */
void pxfer_progress_draw(struct pxfer_progress *p, uint64_t bytes,
			 uint64_t total, uint64_t there, uint64_t files,
			 uint64_t files_total, int more, int final);
void pxfer_progress_end(struct pxfer_progress *p);

#endif
