// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"
#include "core/sys.h"
#include "engine/fail.h"

int pxfer_fail_init(struct pxfer_fail *f, int wake_fd)
{
	memset(f, 0, sizeof(*f));
	f->wake_fd = wake_fd;
	return -pthread_mutex_init(&f->lock, NULL);
}

void pxfer_fail_release(struct pxfer_fail *f)
{
	pthread_mutex_destroy(&f->lock);
}

/* 1 if this call recorded the failure: the first one */
static int record(struct pxfer_fail *f, int exit_code, int err,
		  const char *msg)
{
	int first;

	pthread_mutex_lock(&f->lock);
	first = !atomic_load(&f->failed);
	if (first) {
		snprintf(f->msg, sizeof(f->msg), "%s", msg);
		f->exit_code = exit_code;
		f->err = err;
		atomic_store_explicit(&f->failed, 1, memory_order_release);
	}
	pthread_mutex_unlock(&f->lock);
	return first;
}

/* the first failure is said before the coordinator wakes to act on it */
static void wake(struct pxfer_fail *f)
{
	if (f->wake_fd >= 0)
		pxfer_wake(f->wake_fd);
}

static int vfail(struct pxfer_fail *f, int exit_code, int err,
		 const char *fmt, va_list ap)
{
	char msg[sizeof(f->msg)];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (record(f, exit_code, err, msg)) {
		pxfer_error("%s", msg);
		wake(f);
	}
	return -1;
}

int pxfer_fail(struct pxfer_fail *f, int exit_code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(f, exit_code, 0, fmt, ap);
	va_end(ap);
	return -1;
}

int pxfer_fail_err(struct pxfer_fail *f, int exit_code, int err,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(f, exit_code, err, fmt, ap);
	va_end(ap);
	return -1;
}

int pxfer_fail_quiet(struct pxfer_fail *f, int exit_code)
{
	if (record(f, exit_code, 0, ""))
		wake(f);
	return -1;
}

int pxfer_fail_errno(struct pxfer_fail *f)
{
	int err;

	if (!pxfer_failed(f))
		return 0;
	pthread_mutex_lock(&f->lock);
	err = f->err;
	pthread_mutex_unlock(&f->lock);
	return err;
}

int pxfer_fail_code(struct pxfer_fail *f)
{
	int code;

	if (!pxfer_failed(f))
		return 0;
	pthread_mutex_lock(&f->lock);
	code = f->exit_code;
	pthread_mutex_unlock(&f->lock);
	return code;
}

int pxfer_stop_init(struct pxfer_stop *stop)
{
	stop->raised = 0;
	stop->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return stop->fd < 0 ? -errno : 0;
}

void pxfer_stop_release(struct pxfer_stop *stop)
{
	if (stop->fd >= 0)
		close(stop->fd);
	stop->fd = -1;
}

/*
 * In a signal handler too: an atomic add (lock-free on int, so safe
 * there, and seen by the call's threads, where a sig_atomic_t would be a
 * data race) and a write(2). The eventfd is never read: it stays
 * readable, for every call polling it.
 */
void pxfer_stop_raise(struct pxfer_stop *stop)
{
	uint64_t one = 1;
	int saved = errno;

	__atomic_fetch_add(&stop->raised, 1, __ATOMIC_SEQ_CST);
	if (write(stop->fd, &one, sizeof(one)) < 0) {
		/* the counter is full: it is readable already */
	}
	errno = saved;
}

int pxfer_stop_raised(const struct pxfer_stop *stop)
{
	return stop ? __atomic_load_n(&stop->raised, __ATOMIC_SEQ_CST) : 0;
}
