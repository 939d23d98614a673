/* SPDX-License-Identifier: MIT */
/*
 * What the sender and the receiver sessions share: the first-error-wins
 * failure record that stops every thread, signal delivery to the
 * coordinator's poll loop, and small helpers.
 */
#ifndef PXFER_SESSION_H
#define PXFER_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#define PXFER_HANDSHAKE_MS 15000

struct pxfer_fail {
	pthread_mutex_t lock;
	atomic_int failed;
	int exit_code;
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

static inline int pxfer_failed(struct pxfer_fail *f)
{
	return atomic_load_explicit(&f->failed, memory_order_acquire);
}

/*
 * pxfer_signals_install - route SIGINT and SIGTERM to a pipe; returns its
 * read end (pollable) or -errno. SIGPIPE is ignored.
 */
int pxfer_signals_install(void);
/* pxfer_signal_pending - the signal number received, or 0 */
int pxfer_signal_pending(void);

/* pxfer_raise_nofile - raise the soft open-file limit; returns the limit */
unsigned long pxfer_raise_nofile(void);

/*
 * pxfer_fd_table_reserve - raise the open-file limit and make room for @n
 * descriptors (at most the limit) in the process's table now. Growing the
 * table is cheap while one thread runs; once there are threads, each time
 * it doubles the kernel waits for an RCU grace period (expand_files), about
 * 10 ms, five times over before 1,024 files are open at once. Call before
 * any thread is made. 0 or -errno.
 */
int pxfer_fd_table_reserve(unsigned long n);

/*
 * pxfer_thread_name - name a thread "pxfer-ROLE" or "pxfer-ROLE-N" (for
 * top -H, ps -L and perf); best effort.
 */
void pxfer_thread_name(pthread_t t, const char *role, int n);

/* descriptors a side may hold at once: each file in flight holds one on
 * the sender, up to two (the file, its directory) on the receiver */
#define PXFER_FD_RESERVE (2 * 1024 + 256)

/*
 * pxfer_memlock_check - whether @need bytes may be pinned (RDMA memory
 * registration). 0 if so (or if the process has CAP_IPC_LOCK), else
 * -ENOMEM with the soft limit in *limit.
 */
int pxfer_memlock_check(uint64_t need, uint64_t *limit);

/* pxfer_memlock_message - the error text for a failed check */
void pxfer_memlock_message(char *buf, size_t len, uint64_t need,
			   uint64_t limit);

/*
 * pxfer_pick_source - apply --device / --gid-index: the address to bind so
 * that rdma_cm uses that device and GID. Returns 0 with *bind unchanged
 * when neither is given, 0 with *bind = @buf, or -1 after printing why.
 */
int pxfer_pick_source(const char *device, int gid_index, const char **bind,
		      char *buf, size_t len);

/* pxfer_setup_error - why a worker could not be set up, for a message */
const char *pxfer_setup_error(int err);

double pxfer_now(void);

/* pxfer_env_flag - 1 if the environment variable @name is set, not "0" */
int pxfer_env_flag(const char *name);

/* pxfer_human - "1.5 GiB" into @buf */
const char *pxfer_human(char *buf, size_t len, double bytes);

/* pxfer_wake - bump an eventfd */
void pxfer_wake(int fd);
void pxfer_drain(int fd);

#endif
