// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

/*
 * Where a thread that no call owns reports: stderr. Its verbosity and
 * start are set by the pxfer command before it starts a thread.
 */
static struct pxfer_log log_default = { .lock = PTHREAD_MUTEX_INITIALIZER };
/* the log of the call the thread works for; NULL: log_default */
static __thread struct pxfer_log *attached;

int pxfer_log_init(struct pxfer_log *log,
		   void (*sink)(void *arg, enum pxfer_log_level level,
				const char *line),
		   void *arg, int verbose)
{
	memset(log, 0, sizeof(*log));
	log->sink = sink;
	log->arg = arg;
	log->verbose = verbose;
	clock_gettime(CLOCK_MONOTONIC, &log->t0);
	atomic_init(&log->clear, NULL);
	return -pthread_mutex_init(&log->lock, NULL);
}

void pxfer_log_release(struct pxfer_log *log)
{
	pthread_mutex_destroy(&log->lock);
}

struct pxfer_log *pxfer_log_attach(struct pxfer_log *log)
{
	struct pxfer_log *old = attached;

	attached = log;
	return old;
}

struct pxfer_log *pxfer_log_current(void)
{
	return attached ? attached : &log_default;
}

int pxfer_log_verbose(void)
{
	return pxfer_log_current()->verbose;
}

void pxfer_log_start(void)
{
	clock_gettime(CLOCK_MONOTONIC, &log_default.t0);
}

void pxfer_log_set_default_verbose(int verbose)
{
	log_default.verbose = verbose;
}

void pxfer_log_set_progress_clear(struct pxfer_log *log,
				  struct pxfer_log_clear *clear)
{
	atomic_store(&log->clear, clear);
}

/*
 * One line: "@prefix<message>". The sink gets it without its first
 * @skip characters (what @level says already) and without the newline.
 */
static void vreport(enum pxfer_log_level level, const char *prefix,
		    size_t skip, const char *fmt, va_list ap)
{
	struct pxfer_log *log = pxfer_log_current();
	struct pxfer_log_clear *clear;
	char buf[1024];
	int n, m;
	int saved = errno;

	n = snprintf(buf, sizeof(buf), "%s", prefix);
	m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	if (log->sink) {
		buf[n] = '\0';
		pthread_mutex_lock(&log->lock);
		log->sink(log->arg, level, buf + skip);
		pthread_mutex_unlock(&log->lock);
		errno = saved;
		return;
	}
	buf[n++] = '\n';
	clear = atomic_load(&log->clear);
	if (clear)
		clear->fn(clear);
	if (write(STDERR_FILENO, buf, n) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}

int pxfer_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(PXFER_LOG_ERROR, "error: ", 7, fmt, ap);
	va_end(ap);
	return -1;
}

void pxfer_warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(PXFER_LOG_WARNING, "warning: ", 9, fmt, ap);
	va_end(ap);
}

void pxfer_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(PXFER_LOG_INFO, "", 0, fmt, ap);
	va_end(ap);
}

void pxfer_verbose(const char *fmt, ...)
{
	struct pxfer_log *log = pxfer_log_current();
	char prefix[40] = "pxfer: ";
	va_list ap;

	if (!log->verbose)
		return;
	if (log->verbose > 1) {
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		snprintf(prefix, sizeof(prefix), "pxfer: [%.3f] ",
			 (double)(t.tv_sec - log->t0.tv_sec) +
				 (t.tv_nsec - log->t0.tv_nsec) / 1e9);
	}
	va_start(ap, fmt);
	vreport(PXFER_LOG_VERBOSE, prefix, 7, fmt, ap);
	va_end(ap);
}

void pxfer_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(PXFER_LOG_ERROR, "fatal: ", 7, fmt, ap);
	va_end(ap);
	exit(2);
}

struct thread_start {
	void *(*fn)(void *);
	void *arg;
	struct pxfer_log *log;
};

static void *thread_main(void *p)
{
	struct thread_start ts = *(struct thread_start *)p;

	free(p);
	pxfer_log_attach(ts.log);
	return ts.fn(ts.arg);
}

int pxfer_thread_create(pthread_t *t, const pthread_attr_t *attr,
			void *(*fn)(void *), void *arg)
{
	struct thread_start *ts = malloc(sizeof(*ts));
	int ret;

	if (!ts)
		return ENOMEM;
	ts->fn = fn;
	ts->arg = arg;
	ts->log = attached;
	ret = pthread_create(t, attr, thread_main, ts);
	if (ret)
		free(ts);
	return ret;
}

const char *pxfer_human(char *buf, size_t len, double bytes)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	while (bytes >= 1024 && u < 5) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", bytes);
	else
		snprintf(buf, len, "%.1f %s", bytes, unit[u]);
	return buf;
}
