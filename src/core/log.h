/* SPDX-License-Identifier: MIT */
/*
 * Error reporting in the manner of git's usage.c: pxfer_error() prints
 * "error: ..." and returns -1, pxfer_warning() prints "warning: ...",
 * pxfer_die() prints "fatal: ..." and exits (the prefix keeps them apart
 * from glibc's error(3) and from a program's own). Messages are
 * lowercase, name the object in quotes and say what to do. All output is one write(2) per line so lines
 * from threads do not interleave.
 *
 * Where a line goes is the calling thread's: each pxfer_send and
 * pxfer_recv makes a struct pxfer_log (its sink, its verbosity, the time
 * -vv counts from, its progress line) and attaches it to its thread and
 * to every thread it starts (pxfer_thread_create), so that calls running
 * at once in one process each report to their own caller. A thread with
 * none attached (the pxfer command's own, the shared RDMA progress
 * thread) reports to the process's default log: stderr.
 */
#ifndef PXFER_LOG_H
#define PXFER_LOG_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>

#include "pxfer/pxfer.h"

/* what takes a progress line off the terminal (engine/progress.c) */
struct pxfer_log_clear {
	void (*fn)(struct pxfer_log_clear *c);
};

struct pxfer_log {
	/* the caller's sink, or NULL: stderr */
	void (*sink)(void *arg, enum pxfer_log_level level, const char *line);
	void *arg;
	pthread_mutex_t lock;		/* one line at a time into sink */
	int verbose;			/* -v count; set before any thread
					 * of the call starts */
	struct timespec t0;		/* what -vv counts from */
	/* the progress line shown on stderr, if any: any thread that
	 * prints there takes it off first */
	struct pxfer_log_clear *_Atomic clear;
};

__attribute__((format(printf, 1, 2))) int pxfer_error(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void pxfer_warning(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void pxfer_info(const char *fmt, ...);
__attribute__((format(printf, 1, 2), noreturn)) void pxfer_die(const char *fmt, ...);
/* printed only with -v; with -vv, after the seconds since the log's start */
__attribute__((format(printf, 1, 2))) void pxfer_verbose(const char *fmt, ...);

/* pxfer_human - "1.5 GiB" into @buf, returned */
const char *pxfer_human(char *buf, size_t len, double bytes);

/*
 * pxfer_log_init - a call's log: lines to @sink(@arg, ...), or to stderr
 * when @sink is NULL; @verbose is its -v count, and -vv counts from now.
 * 0 or -errno. pxfer_log_release when no thread uses it any more.
 */
int pxfer_log_init(struct pxfer_log *log,
		   void (*sink)(void *arg, enum pxfer_log_level level,
				const char *line),
		   void *arg, int verbose);
void pxfer_log_release(struct pxfer_log *log);

/*
 * pxfer_log_attach - the calling thread reports to @log from now on (NULL:
 * to the process's default); returns the one it reported to before, for
 * the caller to attach again when it is done.
 */
struct pxfer_log *pxfer_log_attach(struct pxfer_log *log);

/* pxfer_log_current - the log the calling thread reports to */
struct pxfer_log *pxfer_log_current(void);

/* pxfer_log_verbose - the -v count of the calling thread's log */
int pxfer_log_verbose(void);

/*
 * The process's default log (stderr): the pxfer command notes its start
 * (what -vv counts from) and its -v count, before it starts any thread.
 */
void pxfer_log_start(void);
void pxfer_log_set_default_verbose(int verbose);

/*
 * pxfer_log_set_progress_clear - @clear takes @log's progress line off the
 * terminal before a line is printed there. It runs in whichever of the
 * call's threads prints, so it must be safe in any; the progress line
 * (engine/progress.c) sets it while it is shown and unsets it (NULL) when
 * it ends, before any other thread of the call can print. The only call
 * from core up into the engine.
 */
void pxfer_log_set_progress_clear(struct pxfer_log *log,
				  struct pxfer_log_clear *clear);

/*
 * pxfer_thread_create - pthread_create, for a thread of the calling
 * thread's call: it reports to the same log. 0 or a positive errno, as
 * pthread_create.
 */
int pxfer_thread_create(pthread_t *t, const pthread_attr_t *attr,
			void *(*fn)(void *), void *arg);

#endif
