// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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
		error("%s", msg);
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

static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t sig_seen;

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	sig_seen = sig;
	if (write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: a signal is already pending */
	}
	errno = saved;
}

/* the dispositions the process had before the first install, and how
 * many installs are in force; only the coordinator's thread installs */
static struct sigaction old_int, old_term, old_pipe;
static unsigned int installs;

int pxfer_signals_install(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	char c;

	if (installs++)
		return sig_pipe[0];
	if (sig_pipe[0] < 0 && pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK)) {
		installs--;
		return -errno;
	}
	/* a signal of an earlier call is not this one's */
	sig_seen = 0;
	while (read(sig_pipe[0], &c, 1) == 1)
		;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old_pipe);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	return sig_pipe[0];
}

void pxfer_signals_restore(void)
{
	if (!installs || --installs)
		return;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
}

int pxfer_signal_pending(void)
{
	return sig_seen;
}
