/* SPDX-License-Identifier: MIT */
/*
 * Error reporting in the manner of git's usage.c: error() prints
 * "error: ..." and returns -1, warning() prints "warning: ...", die()
 * prints "fatal: ..." and exits. Messages are lowercase, name the object in
 * quotes and say what to do. All output is one write(2) per line so lines
 * from threads do not interleave.
 */
#ifndef PXFER_LOG_H
#define PXFER_LOG_H

#include <stdarg.h>
#include <stddef.h>

extern int pxfer_verbose;	/* -v count */

__attribute__((format(printf, 1, 2))) int error(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void warning(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void info(const char *fmt, ...);
__attribute__((format(printf, 1, 2), noreturn)) void die(const char *fmt, ...);
/* printed only with -v; with -vv, after the seconds since pxfer_log_start() */
__attribute__((format(printf, 1, 2))) void verbose(const char *fmt, ...);

/* pxfer_human - "1.5 GiB" into @buf, returned */
const char *pxfer_human(char *buf, size_t len, double bytes);

/* Note the time -vv measures from (the start of the process). */
void pxfer_log_start(void);

/*
 * pxfer_log_init - the verbosity an entry point of the library was asked
 * for (its options' verbose), and the time -vv measures from, unless
 * pxfer_log_start noted one already.
 */
void pxfer_log_init(int verbose);

/*
 * pxfer_log_set_progress_clear - @clear takes the progress line off the
 * terminal before a message is printed. It runs in whichever thread
 * prints, so it must be safe in any; the progress line (engine/progress.c)
 * sets it while it is shown and unsets it (NULL) when it ends, before any
 * other thread can print. The only call from core up into the engine.
 */
void pxfer_log_set_progress_clear(void (*clear)(void));

#endif
