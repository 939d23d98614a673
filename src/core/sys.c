// SPDX-License-Identifier: MIT
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sched.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "core/sys.h"

double pxfer_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int64_t pxfer_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

int pxfer_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ? -errno : 0;
}

int pxfer_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -ENODATA;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int pxfer_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
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

int pxfer_env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

int pxfer_env_uint(const char *name, unsigned int min, unsigned int max,
		   unsigned int *val)
{
	const char *v = getenv(name);
	unsigned long n;
	char *end;

	if (!v || !*v)
		return 0;
	if (*v < '0' || *v > '9')
		return -EINVAL;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n < min || n > max)
		return -EINVAL;
	*val = (unsigned int)n;
	return 1;
}

mode_t pxfer_umask_get(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	unsigned int mask;
	char line[256];
	mode_t old;

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "Umask: %o", &mask) == 1) {
				fclose(f);
				return mask & 0777;
			}
		}
		fclose(f);
	}
	old = umask(0077);
	umask(old);
	return old;
}

/* the CPUs a cgroup (v2) quota allows, rounded up; 0 if it sets none */
static int cgroup_cpus(void)
{
	long long quota, period;
	char buf[64];
	int fd = open("/sys/fs/cgroup/cpu.max", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%lld %lld", &quota, &period) != 2 || quota <= 0 ||
	    period <= 0)
		return 0;	/* "max": no quota */
	return (int)((quota + period - 1) / period);
}

int pxfer_workers_auto(void)
{
	cpu_set_t set;
	int n = 0, q = cgroup_cpus();

	if (!sched_getaffinity(0, sizeof(set), &set))
		n = CPU_COUNT(&set);
	if (n < 1) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		n = c > 0 ? (int)c : 1;
	}
	if (q > 0 && q < n)
		n = q;
	return n > PXFER_AUTO_WORKERS_MAX ? PXFER_AUTO_WORKERS_MAX : n;
}

int pxfer_numa_cpus(int node, cpu_set_t *set)
{
	char path[80], buf[1024], *p, *end;
	cpu_set_t allowed;
	FILE *f;
	size_t n;

	if (node < 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	CPU_ZERO(set);
	/* "0-3,8-11" */
	for (p = buf; *p && *p != '\n';) {
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			break;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (; a <= b && a < CPU_SETSIZE; a++)
			CPU_SET(a, set);
		p = *end == ',' ? end + 1 : end;
	}
	if (!sched_getaffinity(0, sizeof(allowed), &allowed))
		CPU_AND(set, set, &allowed);
	return CPU_COUNT(set) ? 0 : -ENOENT;
}

int pxfer_sysfs_numa(const char *path)
{
	FILE *f = fopen(path, "re");
	int node = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &node) != 1 || node < 0)
		node = -1;
	fclose(f);
	return node;
}

void pxfer_sock_keepalive(int fd, int idle, int intvl, int cnt,
			  unsigned int user_ms)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
}
