// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "engine/session.h"
#include "transport/transport.h"

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

int pxfer_fail(struct pxfer_fail *f, int exit_code, const char *fmt, ...)
{
	va_list ap;
	int first;

	pthread_mutex_lock(&f->lock);
	first = !atomic_load(&f->failed);
	if (first) {
		va_start(ap, fmt);
		vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
		va_end(ap);
		f->exit_code = exit_code;
		atomic_store_explicit(&f->failed, 1, memory_order_release);
	}
	pthread_mutex_unlock(&f->lock);
	if (first) {
		error("%s", f->msg);
		if (f->wake_fd >= 0)
			pxfer_wake(f->wake_fd);
	}
	return -1;
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

int pxfer_signals_install(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	signal(SIGPIPE, SIG_IGN);
	if (sig_pipe[0] >= 0)
		return sig_pipe[0];
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return sig_pipe[0];
}

int pxfer_signal_pending(void)
{
	return sig_seen;
}

void pxfer_thread_name(pthread_t t, const char *role, int n)
{
	char name[32];

	if (n < 0)
		snprintf(name, sizeof(name), "pxfer-%s", role);
	else
		snprintf(name, sizeof(name), "pxfer-%s-%d", role, n);
	name[15] = '\0';	/* the kernel keeps 15 characters */
	pthread_setname_np(t, name);
}

int pxfer_fd_table_reserve(unsigned long n)
{
	unsigned long limit = pxfer_raise_nofile();
	int fd, top, ret = 0;

	if (n > limit)
		n = limit;
	if (n < 2 || n > INT_MAX)
		return -EINVAL;
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the table grows to hold the highest descriptor, and stays so */
	top = fcntl(fd, F_DUPFD_CLOEXEC, (int)n - 1);
	if (top < 0)
		ret = -errno;
	else
		close(top);
	close(fd);
	return ret;
}

unsigned long pxfer_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

static int has_ipc_lock(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	unsigned long long caps = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return !!(caps & (1ull << 14));	/* CAP_IPC_LOCK */
}

int pxfer_memlock_check(uint64_t need, uint64_t *limit)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    need <= rl.rlim_cur || has_ipc_lock())
		return 0;
	*limit = rl.rlim_cur;
	return -ENOMEM;
}

void pxfer_memlock_message(char *buf, size_t len, uint64_t need,
			   uint64_t limit)
{
	char n[32], l[32];
	uint64_t kib = (need + 1023) / 1024;

	snprintf(buf, len,
		 "cannot register %s of ring memory with the RDMA device: the memlock limit is %s "
		 "(raise it with 'ulimit -l %llu' or more, or in /etc/security/limits.conf; "
		 "or use fewer workers (-j) or a smaller --ring-mem on the receiver)",
		 pxfer_human(n, sizeof(n), need), pxfer_human(l, sizeof(l), limit),
		 (unsigned long long)kib);
}

int pxfer_pick_source(const char *device, int gid_index, const char **bind,
		      char *buf, size_t len)
{
	char why[200];

	if (!device && gid_index < 0)
		return 0;
	if (pxfer_rdma_source(device, gid_index, buf, len, why, sizeof(why)))
		return error("cannot use %s: %s", device ? device : "that GID", why);
	if (*bind && strcmp(*bind, buf))
		return error("--bind %s does not match %s; give one or the other",
			     *bind, why);
	verbose("rdma: %s, so binding %s", why, buf);
	*bind = buf;
	return 0;
}

const char *pxfer_setup_error(int err)
{
	switch (err) {
	case -ENOSYS:
		return "io_uring is unavailable here (use --io auto or --io sync)";
	case -ENOMEM:
		return "out of memory, or the memlock limit is too low for the rings (raise 'ulimit -l' or lower --ring-mem)";
	case -ENOSPC:
		return "too many ring slots for the RDMA device's shared receive queue (lower --ring-mem or use larger chunks)";
	default:
		return strerror(-err);
	}
}

int pxfer_env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

double pxfer_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
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

void pxfer_wake(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0) {
		/* counter saturated: a wake-up is pending anyway */
	}
}

void pxfer_drain(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0) {
		/* nothing pending */
	}
}
