/* SPDX-License-Identifier: MIT */
/*
 * check_test: checks of held data off the control thread
 * (src/engine/check.c).
 *
 *  - a job of runs: its pieces are the runs' records, cut as they are
 *    handed out (each run in pieces of its unit, the last one shorter),
 *    and sum to what pxfer_digest_runs finds; runs of 1-byte units over
 *    1 MiB (1 Mi pieces) make no array; a run of unit 0, one that wraps,
 *    or more than 2^31 records is -EINVAL;
 *  - a job of many pieces, hashed by four threads, sums to what
 *    pxfer_digest_runs finds in one pass; compared, every piece matches;
 *    one piece's data changed: one bad piece, at its offset, the rest
 *    good; a piece past the file's end: -ENODATA;
 *  - several jobs at once are all reaped, each with its own outcome; the
 *    wake-up fd is bumped; the bytes checked add up to those submitted;
 *    an empty job is done at once;
 *  - the caller's thread is not held while a check runs: with reads made
 *    slow (PXFER_CHECK_DELAY_MS), the submitting thread goes on at once
 *    and sees the figure of bytes checked grow before the job is done,
 *    as a coordinator that sends PINGs meanwhile would;
 *  - release with jobs still queued stops the threads and leaves them;
 *  - a whole-file job (--checksum) hashes to pxfer_digest_file's value,
 *    not a sum of seeded pieces, and compares with its want; a byte
 *    changed: bad; a file shorter than the piece: -ENODATA; its progress
 *    shows while it reads, and adds up to its length; one that is not a
 *    single piece at 0 is refused; released in the middle of a slow one,
 *    the pool does not wait for the rest of the file.
 */
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>

#include "test.h"
#include "core/digest.h"
#include "core/sys.h"
#include "engine/check.h"

#define FSIZE	(8u << 20)
#define UNIT	(256u << 10)

static uint8_t data[FSIZE];

static int make_file(void)
{
	int fd = t_tmpfile("/tmp");

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	if (pwrite(fd, data, sizeof(data), 0) != (ssize_t)sizeof(data)) {
		fprintf(stderr, "cannot write the test file: %m\n");
		exit(1);
	}
	return fd;
}

/* the pieces runs @r[0..@n) are made of, into a new array (for jobs that
 * compare each piece with a want) */
static unsigned int pieces_of(const struct pxfer_held_run *r, unsigned int n,
			      struct pxfer_check_piece **out)
{
	unsigned int k = 0, cap = 0;

	for (unsigned int i = 0; i < n; i++)
		cap += (unsigned int)((r[i].len + r[i].unit - 1) / r[i].unit);
	*out = malloc((cap ? cap : 1) * sizeof(**out));
	if (!*out)
		exit(1);
	for (unsigned int i = 0; i < n; i++)
		for (uint64_t off = r[i].off; off < r[i].off + r[i].len;) {
			uint64_t len = r[i].off + r[i].len - off;

			len = len < r[i].unit ? len : r[i].unit;
			(*out)[k++] = (struct pxfer_check_piece){ .off = off, .len = len };
			off += len;
		}
	return k;
}

/* the job's pieces with their wants, from the data as written */
static void fill_wants(struct pxfer_check_piece *p, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		pxfer_digest_range(&p[i].want, data + p[i].off, p[i].len, p[i].off);
}

/* wait (5 s at most) for a job to be done, and reap it */
static struct pxfer_check_job *wait_reap(struct pxfer_check *c)
{
	for (int i = 0; i < 5000; i++) {
		struct pxfer_check_job *j = pxfer_check_reap(c);

		if (j)
			return j;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	return NULL;
}

static void test_runs(int fd)
{
	struct pxfer_held_run r[] = {
		{ .off = 0, .len = 10, .unit = 4 },
		{ .off = 100, .len = 8, .unit = 8 },
		{ .off = 200, .len = 0, .unit = 8 },
		{ .off = 300, .len = 1u << 20, .unit = 1 },
	};
	struct pxfer_held_run bad[] = { { .off = UINT64_MAX - 1, .len = 4, .unit = 4 } };
	struct pxfer_held_run zero[] = { { .off = 0, .len = 4, .unit = 0 } };
	struct pxfer_held_run many[] = { { .off = 0, .len = 1ull << 40, .unit = 1 } };
	struct pxfer_check_job j = { .fd = fd }, *got;
	struct pxfer_digest want;
	struct pxfer_check c;

	T_EXPECT(!pxfer_check_job_runs(&j, r, 2), "runs");
	T_EXPECT(j.n == 4 && !j.pieces, "4 pieces, none made, not %u", j.n);
	T_EXPECT(!pxfer_check_job_runs(&j, r, 4), "runs of 1-byte units");
	T_EXPECT(j.n == 4 + (1u << 20), "%u pieces", j.n);
	T_EXPECT(!pxfer_check_init(&c, 2, -1), "init");
	T_EXPECT(!pxfer_digest_runs(fd, r, 4, &want), "digest_runs");
	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	got = NULL;
	for (int i = 0; i < 60000 && !got; i++) {
		got = pxfer_check_reap(&c);
		if (!got)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	T_EXPECT(got == &j && !j.err, "the job is done, err %d", j.err);
	T_EXPECT(pxfer_digest_eq(&j.sum, &want), "the sum is digest_runs'");
	pxfer_check_release(&c);
	T_EXPECT(pxfer_check_job_runs(&j, bad, 1) == -EINVAL, "a run that wraps");
	T_EXPECT(pxfer_check_job_runs(&j, zero, 1) == -EINVAL, "a run of unit 0");
	T_EXPECT(pxfer_check_job_runs(&j, many, 1) == -EINVAL, "2^40 records");
}

static void test_sum_and_compare(int fd)
{
	struct pxfer_held_run r[] = {
		{ .off = 0, .len = 3 * UNIT + 1000, .unit = UNIT },
		{ .off = 4 * UNIT, .len = FSIZE - 4 * UNIT, .unit = UNIT },
	};
	struct pxfer_check c;
	struct pxfer_check_job j = { .fd = fd, .compare = 1 }, *got;
	struct pxfer_digest want;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t v = 0, total = 0;

	T_EXPECT(!pxfer_check_init(&c, 4, efd), "init");
	T_EXPECT((j.n = pieces_of(r, 2, &j.pieces)) > 0, "pieces");
	fill_wants(j.pieces, j.n);
	for (unsigned int i = 0; i < j.n; i++)
		total += j.pieces[i].len;
	T_EXPECT(!pxfer_digest_runs(fd, r, 2, &want), "digest_runs");

	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	got = wait_reap(&c);
	T_EXPECT(got == &j, "the job is reaped");
	T_EXPECT(!j.err && !j.bad, "err %d, %u bad", j.err, j.bad);
	T_EXPECT(pxfer_digest_eq(&j.sum, &want), "the sum is digest_runs'");
	T_EXPECT(read(efd, &v, sizeof(v)) == sizeof(v) && v >= 1, "woken");
	T_EXPECT(pxfer_check_done(&c) == total, "%llu bytes checked of %llu",
		 (unsigned long long)pxfer_check_done(&c), (unsigned long long)total);
	T_EXPECT(c.queued == total, "queued");
	T_EXPECT(!pxfer_check_pending(&c), "nothing pending");

	/* a byte of piece 5 changed on disk */
	{
		uint8_t b = data[j.pieces[5].off + 17] ^ 0xff;

		T_EXPECT(pwrite(fd, &b, 1, (off_t)(j.pieces[5].off + 17)) == 1, "pwrite");
		T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
		got = wait_reap(&c);
		T_EXPECT(got == &j && !j.err, "reaped");
		T_EXPECT(j.bad == 1, "%u bad pieces, not 1", j.bad);
		T_EXPECT(j.bad_off == j.pieces[5].off, "at %llu",
			 (unsigned long long)j.bad_off);
		b ^= 0xff;
		T_EXPECT(pwrite(fd, &b, 1, (off_t)(j.pieces[5].off + 17)) == 1, "pwrite");
	}

	/* a piece past the end */
	j.pieces[j.n - 1].len += 4096;
	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	got = wait_reap(&c);
	T_EXPECT(got == &j && j.err == -ENODATA, "past the end: %d", j.err);
	j.pieces[j.n - 1].len -= 4096;

	pxfer_check_release(&c);
	pxfer_check_release(&c);	/* twice is fine */
	free(j.pieces);
	close(efd);
}

static void test_many_jobs(int fd)
{
	struct pxfer_check c;
	struct pxfer_check_job j[6];
	struct pxfer_check_job empty = { .fd = fd };
	int seen[6] = { 0 }, empty_seen = 0;

	T_EXPECT(!pxfer_check_init(&c, 3, -1), "init");
	for (unsigned int k = 0; k < 6; k++) {
		struct pxfer_held_run r = { .off = k * UNIT, .len = 5 * UNIT, .unit = UNIT / 2 };

		memset(&j[k], 0, sizeof(j[k]));
		j[k].fd = fd;
		j[k].compare = 1;
		j[k].id = k;
		T_EXPECT((j[k].n = pieces_of(&r, 1, &j[k].pieces)) > 0, "pieces");
		fill_wants(j[k].pieces, j[k].n);
		if (k == 3)
			j[k].pieces[2].want.lo ^= 1;	/* a journal that lies */
		T_EXPECT(!pxfer_check_submit(&c, &j[k]), "submit");
	}
	T_EXPECT(!pxfer_check_submit(&c, &empty), "submit an empty job");
	for (unsigned int k = 0; k < 7; k++) {
		struct pxfer_check_job *got = wait_reap(&c);

		T_EXPECT(got, "job %u reaped", k);
		if (!got)
			break;
		if (got == &empty) {
			empty_seen++;
			continue;
		}
		seen[got->id]++;
		T_EXPECT(!got->err, "job %llu: %d", (unsigned long long)got->id, got->err);
		T_EXPECT(got->bad == (got->id == 3), "job %llu: %u bad",
			 (unsigned long long)got->id, got->bad);
	}
	for (unsigned int k = 0; k < 6; k++)
		T_EXPECT(seen[k] == 1, "job %u seen %d times", k, seen[k]);
	T_EXPECT(empty_seen == 1, "the empty job");
	T_EXPECT(!pxfer_check_reap(&c), "nothing more");
	pxfer_check_release(&c);
	for (unsigned int k = 0; k < 6; k++)
		free(j[k].pieces);
}

/* the caller goes on while a slow check runs, and sees it progress */
static void test_not_held(int fd)
{
	struct pxfer_held_run r = { .off = 0, .len = 24 * UNIT, .unit = UNIT };
	struct pxfer_check c;
	struct pxfer_check_job j = { .fd = fd }, *got = NULL;
	uint64_t last = 0;
	unsigned int turns = 0, grew = 0;
	double t0;

	setenv("PXFER_CHECK_DELAY_MS", "20", 1);
	T_EXPECT(!pxfer_check_init(&c, 2, -1), "init");
	T_EXPECT((j.n = pieces_of(&r, 1, &j.pieces)) > 0, "pieces");
	t0 = pxfer_now();
	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	T_EXPECT(pxfer_now() - t0 < 0.1, "submit returned after %.3f s",
		 pxfer_now() - t0);
	/* a coordinator's turns: 10 ms each, until the job is done */
	while (!got && pxfer_now() - t0 < 10) {
		uint64_t now = pxfer_check_done(&c);

		turns++;
		grew += now > last;
		last = now;
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
		got = pxfer_check_reap(&c);
	}
	T_EXPECT(got == &j, "the slow job is done");
	/* 24 pieces, 12 per thread, >= 20 ms each: >= 240 ms */
	T_EXPECT(turns >= 10, "only %u turns while it ran", turns);
	T_EXPECT(grew >= 3, "the figure grew in only %u turns", grew);
	T_EXPECT(last <= 24 * UNIT, "more checked than submitted");
	pxfer_check_release(&c);
	free(j.pieces);

	/* released with jobs queued: the threads stop, the jobs stay */
	T_EXPECT(!pxfer_check_init(&c, 1, -1), "init");
	T_EXPECT((j.n = pieces_of(&r, 1, &j.pieces)) > 0, "pieces");
	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	t0 = pxfer_now();
	pxfer_check_release(&c);
	T_EXPECT(pxfer_now() - t0 < 1, "release took %.3f s", pxfer_now() - t0);
	T_EXPECT(j.done < j.n, "the queued job was not finished");
	free(j.pieces);
	unsetenv("PXFER_CHECK_DELAY_MS");
}

static void test_whole(int fd)
{
	struct pxfer_check_piece piece = { .off = 0, .len = FSIZE };
	struct pxfer_check_piece two[2] = { { 0, 1, { 0, 0 } }, { 1, 1, { 0, 0 } } };
	struct pxfer_check_job j = { .fd = fd, .pieces = &piece, .n = 1,
				     .compare = 1, .whole = 1 }, *got = NULL;
	struct pxfer_check_job bad = { .fd = fd, .pieces = two, .n = 2, .whole = 1 };
	struct pxfer_digest seeded = { 0, 0 }, h;
	struct pxfer_check c;
	uint64_t last = 0;
	unsigned int grew = 0;
	uint8_t b;
	double t0;

	T_EXPECT(!pxfer_digest_file(fd, FSIZE, 0, &piece.want), "digest_file");
	/* what a job of two pieces would sum to */
	pxfer_digest_range(&h, data, FSIZE / 2, 0);
	pxfer_digest_add(&seeded, &h);
	pxfer_digest_range(&h, data + FSIZE / 2, FSIZE / 2, FSIZE / 2);
	pxfer_digest_add(&seeded, &h);
	T_EXPECT(!pxfer_digest_eq(&seeded, &piece.want),
		 "the sum of seeded pieces differs from the whole-file digest");
	T_EXPECT(!pxfer_check_init(&c, 3, -1), "init");
	T_EXPECT(pxfer_check_submit(&c, &bad) == -EINVAL, "two pieces refused");
	bad.n = 1;
	bad.pieces = &two[1];
	T_EXPECT(pxfer_check_submit(&c, &bad) == -EINVAL, "a piece not at 0 refused");
	T_EXPECT(!pxfer_check_pending(&c), "nothing pending");

	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	got = wait_reap(&c);
	T_EXPECT(got == &j && !j.err && !j.bad, "reaped: err %d, %u bad", j.err, j.bad);
	T_EXPECT(pxfer_digest_eq(&j.sum, &piece.want), "the sum is digest_file's");
	T_EXPECT(pxfer_check_done(&c) == FSIZE, "%llu bytes checked",
		 (unsigned long long)pxfer_check_done(&c));

	b = data[FSIZE - 3] ^ 0x5a;
	T_EXPECT(pwrite(fd, &b, 1, FSIZE - 3) == 1, "pwrite");
	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	got = wait_reap(&c);
	T_EXPECT(got == &j && !j.err && j.bad == 1, "a byte changed: %d, %u bad",
		 j.err, j.bad);
	b ^= 0x5a;
	T_EXPECT(pwrite(fd, &b, 1, FSIZE - 3) == 1, "pwrite");

	piece.len = FSIZE + 4096;
	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	got = wait_reap(&c);
	T_EXPECT(got == &j && j.err == -ENODATA, "past the end: %d", j.err);
	T_EXPECT(pxfer_check_done(&c) == 3ull * FSIZE + 4096,
		 "a failed job counts its whole length: %llu",
		 (unsigned long long)pxfer_check_done(&c));
	piece.len = FSIZE;
	pxfer_check_release(&c);

	/* slow: the figure grows while the one thread reads */
	setenv("PXFER_CHECK_DELAY_MS", "40", 1);
	T_EXPECT(!pxfer_check_init(&c, 2, -1), "init");
	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	got = NULL;
	t0 = pxfer_now();
	while (!got && pxfer_now() - t0 < 10) {
		uint64_t now = pxfer_check_done(&c);

		grew += now > last;
		last = now;
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
		got = pxfer_check_reap(&c);
	}
	T_EXPECT(got == &j && !j.err && !j.bad, "the slow job is done");
	T_EXPECT(grew >= 3, "the figure grew in only %u turns", grew);
	pxfer_check_release(&c);

	/* 8 reads of 2 s: release does not wait for them all */
	setenv("PXFER_CHECK_DELAY_MS", "2000", 1);
	T_EXPECT(!pxfer_check_init(&c, 1, -1), "init");
	T_EXPECT(!pxfer_check_submit(&c, &j), "submit");
	nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	t0 = pxfer_now();
	pxfer_check_release(&c);
	T_EXPECT(pxfer_now() - t0 < 4, "release took %.3f s", pxfer_now() - t0);
	unsetenv("PXFER_CHECK_DELAY_MS");
}

int main(void)
{
	int fd = make_file();

	test_runs(fd);
	test_sum_and_compare(fd);
	test_many_jobs(fd);
	test_not_held(fd);
	test_whole(fd);
	close(fd);
	return t_result();
}
