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
 *    pxfer_partials_flush_old on a store that is not open does nothing;
 *  - the cap (struct pxfer_partials_use, --partial-max): partials made
 *    are counted with their sizes; one more than the count, or past the
 *    size, is -EDQUOT and leaves nothing in the store; a close that
 *    removes, a commit and the sweep give back; a partial there already
 *    is opened again whatever the cap (resumed, or anew at another
 *    size, which resizes it), and so is one opened with
 *    PXFER_PARTIAL_ANEW; the scan finds what the counts say; counts
 *    never go below 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
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

/* ---- the cap ------------------------------------------------------------ */

static struct pxfer_partials_use use;

/* @use holds @n partials of @bytes */
static void expect_use(uint64_t n, uint64_t bytes, const char *what)
{
	T_EXPECT(atomic_load(&use.count) == n && atomic_load(&use.bytes) == bytes,
		 "%s: %llu partials of %llu bytes, not %llu of %llu", what,
		 (unsigned long long)atomic_load(&use.count),
		 (unsigned long long)atomic_load(&use.bytes),
		 (unsigned long long)n, (unsigned long long)bytes);
}

/* how many names of the store are @path's */
static int names_of(const char *path)
{
	static const char *const sfx[] = { ".part", ".jnl", ".jnl.tmp" };
	char key[PXFER_PARTIAL_KEY_LEN + 1], name[64];
	struct stat st;
	int n = 0;

	pxfer_partial_key(ps.secret, path, strlen(path), key);
	for (unsigned int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "%s%s", key, sfx[i]);
		n += !fstatat(ps.dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
	}
	return n;
}

static int open_id(const char *path, uint64_t size, int flags,
		   struct pxfer_partial *p)
{
	struct pxfer_partial_id id = make_id(path, size);

	return pxfer_partial_open(&ps, &id, flags, p);
}

static void scan_is(const char *what)
{
	uint64_t n, bytes;

	T_EXPECT(!pxfer_partials_scan(&ps, &n, &bytes) &&
		 n == atomic_load(&use.count) && bytes == atomic_load(&use.bytes),
		 "%s: the scan finds %llu of %llu bytes", what,
		 (unsigned long long)n, (unsigned long long)bytes);
}

static void test_cap(void)
{
	struct pxfer_partial a, b, c;
	int fd, ret;

	use.max_count = 2;
	use.max_bytes = 10 * MiB;
	ps.use = &use;
	T_EXPECT(!open_id("cap/a", 4 * MiB, 0, &a), "open a");
	T_EXPECT(!open_id("cap/b", 4 * MiB, 0, &b), "open b");
	expect_use(2, 8 * MiB, "two made");
	scan_is("two made");
	ret = open_id("cap/c", 1 * MiB, 0, &c);
	T_EXPECT(ret == -EDQUOT, "a third past the count: %s", strerror(-ret));
	T_EXPECT(names_of("cap/c") == 0, "nothing of a refused one is left");
	expect_use(2, 8 * MiB, "after a refusal");

	pxfer_partial_close(&b, 0);
	expect_use(1, 4 * MiB, "a close that removes gives back");
	ret = open_id("cap/c", 8 * MiB, 0, &c);
	T_EXPECT(ret == -EDQUOT, "past the size: %s", strerror(-ret));
	ret = open_id("cap/c", 6 * MiB, 0, &c);
	T_EXPECT(!ret, "up to the size: %s", strerror(-ret));
	expect_use(2, 10 * MiB, "at the cap");

	fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY);
	T_EXPECT(!pxfer_partial_commit(&a, fd, "a-done"), "commit a");
	close(fd);
	expect_use(1, 6 * MiB, "a commit gives back");
	pxfer_partial_close(&c, 1);
	expect_use(1, 6 * MiB, "a close that keeps keeps");
	scan_is("one kept");

	/* one there already, whatever the cap */
	use.max_count = 1;
	ret = open_id("cap/d", 1 * MiB, 0, &b);
	T_EXPECT(ret == -EDQUOT, "a new one past the cap: %s", strerror(-ret));
	ret = open_id("cap/c", 6 * MiB, PXFER_PARTIAL_RESUME, &c);
	T_EXPECT(!ret, "the one kept, resumed at the cap: %s", strerror(-ret));
	pxfer_partial_close(&c, 1);
	ret = open_id("cap/c", 2 * MiB, PXFER_PARTIAL_RESUME, &c);
	T_EXPECT(!ret && c.state == PXFER_PARTIAL_STALE,
		 "the one kept, at another size: %s", strerror(-ret));
	expect_use(1, 2 * MiB, "resized");
	pxfer_partial_close(&c, 0);
	ret = open_id("cap/c", 2 * MiB, PXFER_PARTIAL_ANEW, &c);
	T_EXPECT(!ret, "opened anew: %s", strerror(-ret));
	ret = open_id("cap/e", 2 * MiB, PXFER_PARTIAL_ANEW, &b);
	T_EXPECT(!ret, "PXFER_PARTIAL_ANEW past the cap: %s", strerror(-ret));
	expect_use(2, 4 * MiB, "two, one past the cap");
	pxfer_partial_close(&b, 1);
	pxfer_partial_close(&c, 1);

	/* the sweep gives back what it removes */
	T_EXPECT(pxfer_partials_sweep(&ps, 0, time(NULL) + 10) == 2,
		 "the sweep removes both");
	expect_use(0, 0, "after the sweep");
	scan_is("empty");

	/* never below 0 */
	ret = open_id("cap/f", 1 * MiB, 0, &c);
	T_EXPECT(!ret, "open f: %s", strerror(-ret));
	atomic_store(&use.count, 0);
	atomic_store(&use.bytes, 0);
	pxfer_partial_close(&c, 0);
	expect_use(0, 0, "a count seeded short stays at 0");
	unlinkat(rootfd, "a-done", 0);
	ps.use = NULL;
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
	test_cap();
	pxfer_partials_close(&ps);
	close(rootfd);
	t_rm_rf_at(AT_FDCWD, tmp);
	return t_result();
}
