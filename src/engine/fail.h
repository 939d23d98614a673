/* SPDX-License-Identifier: MIT */
/*
 * How a session ends early: the first-error-wins failure record that every
 * thread of a session checks, and the stop (raised by the caller, or by a
 * receiver's server for its sessions) that reaches a coordinator's poll
 * loop through an eventfd. The library handles no signal.
 */
#ifndef PXFER_ENGINE_FAIL_H
#define PXFER_ENGINE_FAIL_H

#include <pthread.h>
#include <stdatomic.h>

#include "pxfer/pxfer.h"

struct pxfer_fail {
	pthread_mutex_t lock;
	atomic_int failed;
	int exit_code;		/* guarded by lock; read once failed is seen */
	int err;		/* its errno, when one was given (0: none) */
	int wake_fd;		/* written on failure: the coordinator wakes */
	char msg[512];
};

int pxfer_fail_init(struct pxfer_fail *f, int wake_fd);
void pxfer_fail_release(struct pxfer_fail *f);
/*
 * pxfer_fail - record a session-ending failure and print it; only the
 * first one is printed (the rest are its consequences). Returns -1.
 */
__attribute__((format(printf, 3, 4)))
int pxfer_fail(struct pxfer_fail *f, int exit_code, const char *fmt, ...);

/*
 * pxfer_fail_err - pxfer_fail, with the errno @err that caused it, which
 * the session tells the peer in its ABORT (a full disk is ENOSPC there,
 * and the peer's exit status says so)
 */
__attribute__((format(printf, 4, 5)))
int pxfer_fail_err(struct pxfer_fail *f, int exit_code, int err,
		   const char *fmt, ...);

/*
 * pxfer_fail_quiet - record a failure whose message was printed already
 * (by the code that found it); -1.
 */
int pxfer_fail_quiet(struct pxfer_fail *f, int exit_code);

static inline int pxfer_failed(struct pxfer_fail *f)
{
	return atomic_load_explicit(&f->failed, memory_order_acquire);
}

/* pxfer_fail_code - the exit status of the failure recorded (0: none) */
int pxfer_fail_code(struct pxfer_fail *f);

/* pxfer_fail_errno - the errno given with the failure recorded (0: none) */
int pxfer_fail_errno(struct pxfer_fail *f);

/*
 * The stop of a call (struct pxfer_stop, include/pxfer/pxfer.h; its
 * calls are there): the session polls its fd, which stays readable once
 * raised, and checks pxfer_stop_raised, which takes NULL (never raised).
 */
static inline int pxfer_stop_fd(const struct pxfer_stop *stop)
{
	return stop ? stop->fd : -1;
}

#endif
