/* SPDX-License-Identifier: MIT */
/*
 * A main() for the fuzz targets without libFuzzer: calls
 * LLVMFuzzerTestOneInput once on each file named, and on each file in each
 * directory named, as libFuzzer does when it only runs a corpus. The suite
 * links every target with this (gcc, ASan, UBSan) to replay the committed
 * seeds; it also replays a crash file that `make fuzz` left:
 *
 *	build/san/test/fuzz/msg build/fuzz/artifacts/msg/crash-...
 *
 * Each input sits in a heap buffer of exactly its size, so AddressSanitizer
 * sees a read one byte past its end. Exits 0 when every input ran, 1 when
 * an input could not be read or none was found; an oracle that fails
 * aborts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	uint8_t *buf = NULL;
	struct stat st;
	size_t size, got = 0;
	ssize_t n;
	int fd, ret = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		goto out_error;
	size = (size_t)st.st_size;
	/* malloc(0) still gives a pointer ASan watches: no byte is readable */
	buf = malloc(size);
	if (!buf && size)
		goto out_error;
	while (got < size) {
		n = read(fd, buf + got, size - got);
		if (n <= 0) {
			if (n == 0)
				errno = EIO;	/* the file shrank under us */
			goto out_error;
		}
		got += (size_t)n;
	}
	fprintf(stderr, "Running: %s\n", path);
	LLVMFuzzerTestOneInput(buf, size);
	ret = 0;
	goto out_close;

out_error:
	fprintf(stderr, "error: cannot read '%s': %s\n", path, strerror(errno));
out_close:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* Run @name in @dir if it is a regular file: 1 ran, 0 skipped, -1 error. */
static int run_entry(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (name[0] == '.')
		return 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "error: '%s/%s': name too long\n", dir, name);
		return -1;
	}
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return run_file(path) < 0 ? -1 : 1;
}

/* Run every regular file in @dir, in name order; returns how many, or -1. */
static int run_dir(const char *dir)
{
	struct dirent **ents;
	int i, n, ret, count = 0;

	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "error: cannot list '%s': %s\n", dir,
			strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		ret = run_entry(dir, ents[i]->d_name);
		if (ret < 0 || count < 0)
			count = -1;
		else
			count += ret;
		free(ents[i]);
	}
	free(ents);
	return count;
}

int main(int argc, char **argv)
{
	struct stat st;
	int i, n, total = 0, ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 1;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			n = run_dir(argv[i]);
		else
			n = run_file(argv[i]) < 0 ? -1 : 1;
		if (n < 0)
			ret = 1;
		else
			total += n;
	}
	fprintf(stderr, "%s: %d inputs ran\n", argv[0], total);
	if (!total) {
		fprintf(stderr, "error: no inputs\n");
		ret = 1;
	}
	return ret;
}
