/* SPDX-License-Identifier: MIT */
/*
 * Small system helpers every layer uses, each in one place: the monotonic
 * clock, eventfd wake-ups, thread names and environment switches.
 */
#ifndef PXFER_CORE_SYS_H
#define PXFER_CORE_SYS_H

#include <sched.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pxfer/pxfer.h"

/* pxfer_now - seconds on the monotonic clock */
double pxfer_now(void);
/* pxfer_now_ms - milliseconds on the monotonic clock */
int64_t pxfer_now_ms(void);

/* pxfer_wake - bump an eventfd (a saturated counter is already readable) */
void pxfer_wake(int fd);
/* pxfer_drain - clear an eventfd (nothing pending is fine) */
void pxfer_drain(int fd);

/* pxfer_set_nonblock - set O_NONBLOCK on @fd; 0 or -errno */
int pxfer_set_nonblock(int fd);

/*
 * pxfer_pread_full - @len bytes of @fd at @off into @buf, whatever the
 * short reads and interruptions: 0, -ENODATA at the file's end, -errno.
 */
int pxfer_pread_full(int fd, void *buf, size_t len, uint64_t off);
/*
 * pxfer_pwrite_full - @len bytes of @buf to @fd at @off, whatever the
 * short writes and interruptions: 0, -EIO when nothing is written, -errno.
 */
int pxfer_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/*
 * pxfer_thread_name - name a thread "pxfer-ROLE" or "pxfer-ROLE-N" (for
 * top -H, ps -L and perf); best effort.
 */
void pxfer_thread_name(pthread_t t, const char *role, int n);

/* pxfer_env_flag - 1 if the environment variable @name is set, not "0" */
int pxfer_env_flag(const char *name);

/*
 * pxfer_env_uint - the environment variable @name as a whole number from
 * @min to @max into *@val: 1 when it is set and one, 0 when it is unset or
 * empty (*@val untouched), -EINVAL for anything else (*@val untouched:
 * the caller says so, and keeps its default).
 */
int pxfer_env_uint(const char *name, unsigned int min, unsigned int max,
		   unsigned int *val);

/*
 * pxfer_umask_get - the process's umask, read from /proc/self/status
 * without changing it. Where the kernel does not show it (before 4.7, or
 * without /proc) it is read by setting it and setting it back, which
 * another thread creating a file at that moment would see: call it before
 * any thread is made.
 */
mode_t pxfer_umask_get(void);

/*
 * pxfer_workers_auto - the default number of workers: one per CPU this
 * process may run on (its affinity, and a cgroup's CPU quota where one is
 * set), from 1 to PXFER_AUTO_WORKERS_MAX. A worker is a thread on each
 * side that moves chunks; sender and receiver on one machine share its
 * CPUs, and on two machines each has its own.
 */
int pxfer_workers_auto(void);

/*
 * pxfer_numa_cpus - the CPUs of NUMA node @node that this process may
 * run on, into @set (/sys/devices/system/node/nodeN/cpulist). 0, or
 * -ENOENT when the node is unknown or none of its CPUs is allowed.
 */
int pxfer_numa_cpus(int node, cpu_set_t *set);

/*
 * pxfer_sysfs_numa - the NUMA node a sysfs file such as
 * /sys/class/net/IF/device/numa_node holds, or -1 when it is missing or
 * says none.
 */
int pxfer_sysfs_numa(const char *path);

/*
 * pxfer_sock_keepalive - TCP socket @fd finds a vanished peer: keepalive
 * probes after @idle s, every @intvl s, @cnt of them, and data
 * unacknowledged for @user_ms ms fails it (TCP_USER_TIMEOUT); and
 * TCP_NODELAY, for small messages that wait for their answer
 */
void pxfer_sock_keepalive(int fd, int idle, int intvl, int cnt,
			  unsigned int user_ms);

#endif
