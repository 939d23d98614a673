// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

int pxfer_verbose;
static void (*_Atomic progress_clear)(void);	/* any thread calls it */
static struct timespec log_t0;

void pxfer_log_start(void)
{
	clock_gettime(CLOCK_MONOTONIC, &log_t0);
}

void pxfer_log_init(int verbose)
{
	pxfer_verbose = verbose;
	if (!log_t0.tv_sec && !log_t0.tv_nsec)
		pxfer_log_start();
}

void pxfer_log_set_progress_clear(void (*clear)(void))
{
	atomic_store(&progress_clear, clear);
}

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
	void (*clear)(void) = atomic_load(&progress_clear);
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
	buf[n++] = '\n';
	if (clear)
		clear();
	if (write(STDERR_FILENO, buf, n) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
}

void verbose(const char *fmt, ...)
{
	char prefix[40] = "pxfer: ";
	va_list ap;

	if (!pxfer_verbose)
		return;
	if (pxfer_verbose > 1) {
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		snprintf(prefix, sizeof(prefix), "pxfer: [%.3f] ",
			 (double)(t.tv_sec - log_t0.tv_sec) +
				 (t.tv_nsec - log_t0.tv_nsec) / 1e9);
	}
	va_start(ap, fmt);
	vreport(prefix, fmt, ap);
	va_end(ap);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("fatal: ", fmt, ap);
	va_end(ap);
	exit(2);
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
