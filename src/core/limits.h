/* SPDX-License-Identifier: MIT */
/*
 * Process limits a transfer runs into: open files (every file in flight
 * holds descriptors) and locked memory (RDMA registration pins the rings).
 */
#ifndef PXFER_CORE_LIMITS_H
#define PXFER_CORE_LIMITS_H

#include <stdint.h>

/* descriptors a side may hold at once: each file in flight holds one on
 * the sender, up to two (the file, its directory) on the receiver */
#define PXFER_FD_RESERVE (2 * 1024 + 256)

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
 * pxfer_memlock_check - whether @need bytes may be pinned (RDMA memory
 * registration). 0 if so (or if the process has CAP_IPC_LOCK), else
 * -ENOMEM with the soft limit in *limit.
 */
int pxfer_memlock_check(uint64_t need, uint64_t *limit);

/*
 * pxfer_memlock_limit - the soft RLIMIT_MEMLOCK in bytes; 0 when it is
 * unlimited or cannot be read.
 */
uint64_t pxfer_memlock_limit(void);

/*
 * pxfer_memlock_capable - 1 if this process has CAP_IPC_LOCK, with which
 * RDMA registration pins any amount whatever RLIMIT_MEMLOCK says
 */
int pxfer_memlock_capable(void);

#endif
