// SPDX-License-Identifier: MIT
/*
 * create_files - what creating many small files costs the kernel, done
 * three ways, one after the other, on one thread.
 *
 *	create_files DIR [FILES [SIZE]]
 *
 * In a new directory below DIR for each way, writes FILES files (default
 * 10000) of SIZE bytes (default 4096) spread over 10 directories, each
 * file written, given mode 0644 and a time, and closed:
 *
 *   direct   created under its final name (what tar x does)
 *   rename   created under a temporary name, then renamed (what the
 *            pxfer receiver does, so that no file shows under its final
 *            name before it is complete)
 *   tmpfile  created unnamed (O_TMPFILE), then linked to its final name
 *
 * and prints the milliseconds each way took. The directories are left for
 * the caller to look at and remove. Used for docs/benchmarks.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum way { DIRECT, RENAME, TMPFILE };

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int one_file(int dfd, enum way way, unsigned int i, const char *buf,
		    size_t size)
{
	static const struct timespec ts[2] = { { 1000000000, 0 },
					       { 1000000000, 0 } };
	char name[64], tmp[96], proc[64];
	int fd;

	snprintf(name, sizeof(name), "f%u", i);
	switch (way) {
	case DIRECT:
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		break;
	case RENAME:
		snprintf(tmp, sizeof(tmp), ".pxfer-%s.%08x.part", name, i * 2654435761u);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		break;
	default:
		fd = openat(dfd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);
		break;
	}
	if (fd < 0)
		return -errno;
	if (write(fd, buf, size) != (ssize_t)size || fchmod(fd, 0644) ||
	    futimens(fd, ts))
		goto fail;
	if (way == RENAME && renameat(dfd, tmp, dfd, name))
		goto fail;
	if (way == TMPFILE) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW))
			goto fail;
	}
	close(fd);
	return 0;
fail:
	close(fd);
	return -errno;
}

int main(int argc, char **argv)
{
	static const char *names[] = { "direct", "rename", "tmpfile" };
	unsigned long files = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
	unsigned long size = argc > 3 ? strtoul(argv[3], NULL, 10) : 4096;
	char path[4096], *buf;
	int code = 0;

	if (argc < 2 || argc > 4 || !files || size > (64u << 20)) {
		fprintf(stderr, "usage: create_files DIR [FILES [SIZE]]\n");
		return 2;
	}
	buf = calloc(1, size + 1);
	if (!buf)
		return 1;
	memset(buf, 'x', size);
	for (int w = DIRECT; w <= TMPFILE; w++) {
		double t0;
		int ret = 0;

		snprintf(path, sizeof(path), "%s/create_files.%s.%ld", argv[1],
			 names[w], (long)getpid());
		if (mkdir(path, 0755)) {
			perror(path);
			return 1;
		}
		t0 = now();
		for (unsigned int d = 0; d < 10 && !ret; d++) {
			char sub[4200];
			int dfd;

			snprintf(sub, sizeof(sub), "%s/d%u", path, d);
			if (mkdir(sub, 0755) ||
			    (dfd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
				ret = -errno;
				break;
			}
			for (unsigned long i = d; i < files && !ret; i += 10)
				ret = one_file(dfd, w, i, buf, size);
			close(dfd);
		}
		if (ret) {
			fprintf(stderr, "%s: %s\n", names[w], strerror(-ret));
			code = 1;
			continue;
		}
		printf("%-8s %lu files of %lu bytes: %7.1f ms  (%s)\n", names[w],
		       files, size, (now() - t0) * 1e3, path);
	}
	free(buf);
	return code;
}
