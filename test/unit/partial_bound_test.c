/* SPDX-License-Identifier: MIT */
/*
 * partial_bound_test: what bounds the receiver's partial files
 * (src/recv/record.c, partial.c, store.c) besides the bytes pending.
 *
 *  - time: with the store's age lowered to 0.2 s, records added in a
 *    burst stay pending (the journal holds only its header); one added
 *    0.25 s after the first flushes them all with it; a partial that gets
 *    nothing more is flushed by pxfer_partials_flush_old once its oldest
 *    record is that old and not before, which says when it is due again;
 *    what was flushed is held after close(keep) and a reopen with resume;
 *    pxfer_partials_flush_old on a store that is not open does nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/digest.h"
#include "recv/partial.h"
#include "test.h"

#define MiB	(1u << 20)
#define KiB	1024u

static char tmp[] = "/tmp/pxfer-pbound-XXXXXX";
static int rootfd = -1;
static struct pxfer_partials ps = { .dirfd = -1 };

/* ---- helpers ------------------------------------------------------------ */

static struct pxfer_partial_id make_id(const char *path, uint64_t size)
{
	return (struct pxfer_partial_id){
		.path = path, .path_len = strlen(path), .size = size,
		.mtime_sec = 1700000000, .mtime_nsec = 1,
	};
}

/* write @len bytes at @off into the partial's data and record them */
static void put(struct pxfer_partial *p, uint64_t off, uint32_t len)
{
	uint8_t *buf = malloc(len);
	struct pxfer_digest h;
	int ret;

	if (!buf)
		exit(1);
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((off + i) * 131 >> 3);
	T_EXPECT(pwrite(p->fd, buf, len, (off_t)off) == (ssize_t)len,
		 "pwrite at %llu", (unsigned long long)off);
	pxfer_digest_range(&h, buf, len, off);
	ret = pxfer_partial_add(p, off, len, &h);
	T_EXPECT(!ret, "add %llu+%u: %s", (unsigned long long)off, len,
		 strerror(-ret));
	free(buf);
}

/* records in @p's journal */
static long records(const struct pxfer_partial_id *id, struct pxfer_partial *p)
{
	struct stat st;

	if (fstat(p->jfd, &st))
		return -1;
	return ((long)st.st_size - (long)PXFER_JOURNAL_HDR_LEN(id->path_len)) /
	       PXFER_JOURNAL_REC_LEN;
}

static void pause_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* ---- time --------------------------------------------------------------- */

static void test_age(void)
{
	struct pxfer_partial_id id = make_id("aged", 4 * MiB);
	struct pxfer_partials closed = { .dirfd = -1, .age = 0.5 };
	struct pxfer_partial p;
	double due;
	int ret;

	ps.age = 0.2;
	ret = pxfer_partial_open(&ps, &id, 0, &p);
	T_EXPECT(!ret, "open: %s", strerror(-ret));
	if (ret)
		return;
	put(&p, 0, 64 * KiB);
	put(&p, 64 * KiB, 64 * KiB);
	T_EXPECT(records(&id, &p) == 0, "a burst stays pending: %ld records",
		 records(&id, &p));
	pause_s(0.25);
	put(&p, 128 * KiB, 64 * KiB);
	T_EXPECT(records(&id, &p) == 3,
		 "an add after the age flushes everything: %ld records",
		 records(&id, &p));

	/* nothing more comes: the store's flush takes it */
	put(&p, 1 * MiB, 64 * KiB);
	due = pxfer_partials_flush_old(&ps);
	T_EXPECT(records(&id, &p) == 3, "not flushed before the age: %ld",
		 records(&id, &p));
	T_EXPECT(due > 0 && due <= 0.2, "due in %.3f s, within the age", due);
	pause_s(0.25);
	due = pxfer_partials_flush_old(&ps);
	T_EXPECT(records(&id, &p) == 4, "flushed once old: %ld records",
		 records(&id, &p));
	T_EXPECT(due == 0.2, "nothing pending: due after the age, not %.3f", due);

	pxfer_partial_close(&p, 1);
	ret = pxfer_partial_open(&ps, &id, 1, &p);
	T_EXPECT(!ret && p.state == PXFER_PARTIAL_HELD && p.held == 256 * KiB,
		 "held after a reopen: %s, %llu bytes", strerror(-ret),
		 (unsigned long long)p.held);
	pxfer_partial_close(&p, 0);
	T_EXPECT(pxfer_partials_flush_old(&closed) == 0.5,
		 "a store not open: nothing, due after its age");
	ps.age = PXFER_PARTIAL_AGE;
}

int main(void)
{
	int ret;

	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	rootfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ret = rootfd < 0 ? -errno : pxfer_partials_open(&ps, rootfd);
	if (ret) {
		fprintf(stderr, "the store in %s: %s\n", tmp, strerror(-ret));
		return 1;
	}
	test_age();
	pxfer_partials_close(&ps);
	close(rootfd);
	t_rm_rf_at(AT_FDCWD, tmp);
	return t_result();
}
