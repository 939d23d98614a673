// SPDX-License-Identifier: MIT
/*
 * recv/shared: the registry of partials that sessions of one job share.
 * Sessions of a job join, another job's are busy, overlapping claims are
 * busy, the last range in makes the whole file on disk (NAME), a session
 * that leaves with its range incomplete keeps the partial (CLOSE), and
 * FILE_OK's runs clipped to a range.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/digest.h"
#include "recv/shared.h"
#include "test.h"

#define MiB (1ull << 20)
#define SIZE (100 * MiB)

static uint8_t job_a[PXFER_JOB_LEN] = { 1, 2, 3 };
static uint8_t job_b[PXFER_JOB_LEN] = { 9 };
static struct pxfer_partial fake;	/* never opened: only its address */

static int take(struct recv_shared *sh, const uint8_t *job, uint64_t off,
		uint64_t len, struct recv_shared_ent **e)
{
	return recv_shared_take(sh, "dir/big", job, SIZE, 1700000000, 5,
				off, len, e);
}

static void test_join_and_name(void)
{
	struct recv_shared sh;
	struct recv_shared_ent *e1, *e2, *e3, *e4, *x;
	struct pxfer_held_run held = { .off = 0, .len = 10 * MiB, .unit = MiB };
	int ret;

	T_EXPECT(!recv_shared_init(&sh), "init");
	ret = take(&sh, job_a, 0, 25 * MiB, &e1);
	T_EXPECT(ret == RECV_SHARED_MADE, "first range makes the entry: %d", ret);
	/* not ready: its opener still checks the partial */
	ret = take(&sh, job_a, 25 * MiB, 25 * MiB, &x);
	T_EXPECT(ret == -EBUSY, "joining before the check is done: %d", ret);
	T_EXPECT(!recv_shared_ready(&sh, e1, &fake, &held, 1), "ready");
	T_EXPECT(recv_shared_covered(&sh, e1) == 10 * MiB, "held runs on disk");

	ret = take(&sh, job_a, 25 * MiB, 25 * MiB, &e2);
	T_EXPECT(ret == RECV_SHARED_JOINED && e2 == e1 && e2->part == &fake,
		 "second range of the job joins: %d", ret);
	ret = take(&sh, job_b, 50 * MiB, 25 * MiB, &x);
	T_EXPECT(ret == -EBUSY, "another job's range: %d", ret);
	ret = take(&sh, job_a, 40 * MiB, 20 * MiB, &x);
	T_EXPECT(ret == -EBUSY, "overlapping a claim: %d", ret);
	ret = recv_shared_take(&sh, "dir/big", job_a, SIZE + 1, 1700000000, 5,
			       50 * MiB, 25 * MiB, &x);
	T_EXPECT(ret == -EBUSY, "another size: %d", ret);
	ret = recv_shared_take(&sh, "dir/big", job_a, SIZE, 1700000001, 5,
			       50 * MiB, 25 * MiB, &x);
	T_EXPECT(ret == -EBUSY, "another mtime: %d", ret);
	ret = recv_shared_take(&sh, "dir/other", job_b, SIZE, 1, 0, 0, 1, &x);
	T_EXPECT(ret == RECV_SHARED_MADE && x != e1, "another file: %d", ret);
	T_EXPECT(recv_shared_count(&sh) == 2, "two entries");
	T_EXPECT(recv_shared_put(&sh, x, 0, 1, 0) == RECV_SHARED_CLOSE,
		 "never ready, last reference: closed");
	recv_shared_free(x);

	ret = take(&sh, job_a, 50 * MiB, 25 * MiB, &e3);
	T_EXPECT(ret == RECV_SHARED_JOINED, "third range: %d", ret);
	ret = take(&sh, job_a, 75 * MiB, 25 * MiB, &e4);
	T_EXPECT(ret == RECV_SHARED_JOINED, "fourth range: %d", ret);

	/* ranges complete in any order; the last reference names it */
	T_EXPECT(recv_shared_put(&sh, e2, 25 * MiB, 25 * MiB, 1) ==
		 RECV_SHARED_HELD, "second range done, others hold it");
	T_EXPECT(recv_shared_put(&sh, e4, 75 * MiB, 25 * MiB, 1) ==
		 RECV_SHARED_HELD, "fourth range done");
	/* the second range's claim is gone: it may be taken again */
	ret = take(&sh, job_a, 25 * MiB, 25 * MiB, &x);
	T_EXPECT(ret == RECV_SHARED_JOINED, "a range done is free: %d", ret);
	T_EXPECT(recv_shared_put(&sh, x, 25 * MiB, 25 * MiB, 1) ==
		 RECV_SHARED_HELD, "sent again");
	T_EXPECT(recv_shared_put(&sh, e1, 0, 25 * MiB, 1) == RECV_SHARED_HELD,
		 "first range done");
	T_EXPECT(recv_shared_covered(&sh, e1) == 75 * MiB, "75 MiB on disk: %llu",
		 (unsigned long long)recv_shared_covered(&sh, e1));
	T_EXPECT(recv_shared_put(&sh, e3, 50 * MiB, 25 * MiB, 1) ==
		 RECV_SHARED_NAME, "the last range in names the file");
	T_EXPECT(recv_shared_count(&sh) == 0, "off the registry");
	recv_shared_free(e3);
	recv_shared_release(&sh);
}

static void test_drop_keeps(void)
{
	struct recv_shared sh;
	struct recv_shared_ent *e1, *e2, *x;
	int ret;

	T_EXPECT(!recv_shared_init(&sh), "init");
	T_EXPECT(take(&sh, job_a, 0, SIZE / 2, &e1) == RECV_SHARED_MADE, "made");
	T_EXPECT(!recv_shared_ready(&sh, e1, &fake, NULL, 0), "ready, empty");
	T_EXPECT(take(&sh, job_a, SIZE / 2, SIZE / 2, &e2) == RECV_SHARED_JOINED,
		 "joined");
	T_EXPECT(recv_shared_put(&sh, e1, 0, SIZE / 2, 1) == RECV_SHARED_HELD,
		 "first half done");
	/* the second session dies with its range incomplete */
	T_EXPECT(recv_shared_put(&sh, e2, SIZE / 2, SIZE / 2, 0) ==
		 RECV_SHARED_CLOSE, "last reference, half on disk: close, kept");
	T_EXPECT(recv_shared_count(&sh) == 0, "off the registry");
	recv_shared_free(e2);
	/* one whose last range came whole is parked, open, for the job's
	 * next range */
	T_EXPECT(take(&sh, job_a, 0, SIZE / 2, &e1) == RECV_SHARED_MADE, "made");
	T_EXPECT(!recv_shared_ready(&sh, e1, &fake, NULL, 0), "ready, empty");
	T_EXPECT(recv_shared_put(&sh, e1, 0, SIZE / 2, 1) == RECV_SHARED_HELD,
		 "last reference, half on disk: parked");
	T_EXPECT(recv_shared_count(&sh) == 1, "still on the registry");
	T_EXPECT(take(&sh, job_b, SIZE / 2, SIZE / 2, &x) == -EBUSY,
		 "another job's range: busy while it is parked");
	ret = take(&sh, job_a, SIZE / 2, SIZE / 4, &x);
	T_EXPECT(ret == RECV_SHARED_JOINED, "the job's next range joins it: %d", ret);
	T_EXPECT(recv_shared_put(&sh, x, SIZE / 2, SIZE / 4, 1) ==
		 RECV_SHARED_HELD, "parked again");
	{
		unsigned int left = 9;
		struct recv_shared_ent *g = recv_shared_unpark(&sh, 0, &left);

		T_EXPECT(!g && left == 1, "not swept before its time");
		g = recv_shared_unpark(&sh, 1, &left);
		T_EXPECT(g == e1 && !g->next && !left, "swept: off the registry");
		recv_shared_free(g);
	}
	T_EXPECT(recv_shared_count(&sh) == 0, "off the registry");
	/* a later session opens it again */
	ret = take(&sh, job_b, SIZE / 2, SIZE / 2, &x);
	T_EXPECT(ret == RECV_SHARED_MADE, "a later job opens it anew: %d", ret);
	T_EXPECT(recv_shared_put(&sh, x, SIZE / 2, SIZE / 2, 0) ==
		 RECV_SHARED_CLOSE, "closed");
	recv_shared_free(x);

	/* a whole file on disk, but a reference with its range in flight:
	 * the file is named by the last one out, whatever it brought */
	T_EXPECT(take(&sh, job_a, 0, SIZE / 2, &e1) == RECV_SHARED_MADE, "made");
	T_EXPECT(!recv_shared_ready(&sh, e1, &fake, NULL, 0), "ready");
	T_EXPECT(take(&sh, job_a, SIZE / 2, SIZE / 2, &e2) == RECV_SHARED_JOINED,
		 "joined");
	T_EXPECT(recv_shared_put(&sh, e2, SIZE / 2, SIZE / 2, 1) ==
		 RECV_SHARED_HELD, "second half in");
	/* a rank given the second half again (it did not hear it ended) */
	T_EXPECT(take(&sh, job_a, SIZE / 2, SIZE / 2, &e2) == RECV_SHARED_JOINED,
		 "the same range again");
	T_EXPECT(recv_shared_put(&sh, e1, 0, SIZE / 2, 1) == RECV_SHARED_HELD,
		 "all in, one still holds it");
	T_EXPECT(recv_shared_put(&sh, e2, SIZE / 2, SIZE / 2, 0) ==
		 RECV_SHARED_NAME, "the last one out names it");
	recv_shared_free(e2);
	recv_shared_release(&sh);
}

/* claims are bounded by the runs on disk an entry keeps */
static void test_bounded(void)
{
	struct recv_shared sh;
	struct recv_shared_ent *e, *x;
	unsigned int i;
	int ret = 0;

	T_EXPECT(!recv_shared_init(&sh), "init");
	T_EXPECT(take(&sh, job_a, 0, 1, &e) == RECV_SHARED_MADE, "made");
	T_EXPECT(!recv_shared_ready(&sh, e, &fake, NULL, 0), "ready");
	/* ranges with gaps between them, each one run more */
	for (i = 1; i <= RECV_SHARED_RUNS_MAX + 1; i++) {
		ret = take(&sh, job_a, 2 * i, 1, &x);
		if (ret != RECV_SHARED_JOINED)
			break;
		recv_shared_put(&sh, x, 2 * i, 1, 1);
	}
	T_EXPECT(ret == -EBUSY && i == RECV_SHARED_RUNS_MAX + 1,
		 "refused at %u runs: %d after %u", RECV_SHARED_RUNS_MAX, ret, i);
	T_EXPECT(recv_shared_put(&sh, e, 0, 1, 0) == RECV_SHARED_CLOSE, "closed");
	recv_shared_free(e);
	recv_shared_release(&sh);
}

static void rec(struct pxfer_partial_rec *r, uint64_t off, uint32_t len)
{
	memset(r, 0, sizeof(*r));
	r->off = off;
	r->len = len;
	r->h.lo = off * 3 + 1;
	r->h.hi = off ^ 0x5555;
}

static void test_clip(void)
{
	/* one run of 10 records of 1 MiB, the last 0.5 MiB: [0, 9.5 MiB) */
	struct pxfer_held_run run = { .off = 0, .len = 9 * MiB + MiB / 2, .unit = MiB };
	struct pxfer_partial_rec recs[10];
	struct pxfer_file_ok ok;
	struct pxfer_digest want = { 0, 0 }, got;
	unsigned int i;

	for (i = 0; i < 10; i++)
		rec(&recs[i], i * MiB, i < 9 ? MiB : MiB / 2);

	/* [2.5 MiB, 7.5 MiB): records 3..6 only */
	memset(&ok, 0, sizeof(ok));
	ok.state = PXFER_HAVE_PART;
	recv_shared_clip(&run, 1, recs, 10, 2 * MiB + MiB / 2, 5 * MiB, &ok);
	for (i = 3; i < 7; i++)
		pxfer_digest_add(&want, &recs[i].h);
	pxfer_digest_unwire(&got, ok.digest);
	T_EXPECT(ok.state == PXFER_HAVE_PART && ok.nrun == 1 &&
		 ok.run[0].off == 3 * MiB && ok.run[0].len == 4 * MiB &&
		 ok.run[0].unit == MiB && ok.held == 4 * MiB &&
		 pxfer_digest_eq(&got, &want),
		 "clipped at the records' edges: %u runs, [%llu, +%llu)",
		 ok.nrun, (unsigned long long)ok.run[0].off,
		 (unsigned long long)ok.run[0].len);

	/* a range to the end: the short last record is kept */
	memset(&ok, 0, sizeof(ok));
	ok.state = PXFER_HAVE_PART;
	recv_shared_clip(&run, 1, recs, 10, 8 * MiB, 2 * MiB, &ok);
	T_EXPECT(ok.nrun == 1 && ok.run[0].off == 8 * MiB &&
		 ok.run[0].len == MiB + MiB / 2, "to the run's end");

	/* inside one record: nothing left, the state says so */
	memset(&ok, 0, sizeof(ok));
	ok.state = PXFER_HAVE_PART;
	recv_shared_clip(&run, 1, recs, 10, MiB + 1, MiB - 2, &ok);
	T_EXPECT(ok.state == PXFER_HAVE_NONE && !ok.nrun && !ok.held,
		 "nothing whole inside the range");

	/* a record missing (the records were freed): the run is left out */
	memset(&ok, 0, sizeof(ok));
	ok.state = PXFER_HAVE_PART;
	recv_shared_clip(&run, 1, NULL, 0, 0, SIZE, &ok);
	T_EXPECT(ok.state == PXFER_HAVE_NONE && !ok.nrun,
		 "no records, no runs");
	/* a discarded partial keeps its state */
	memset(&ok, 0, sizeof(ok));
	ok.state = PXFER_HAVE_BAD;
	recv_shared_clip(NULL, 0, NULL, 0, 0, SIZE, &ok);
	T_EXPECT(ok.state == PXFER_HAVE_BAD, "BAD stays BAD");
}

int main(void)
{
	test_join_and_name();
	test_drop_keeps();
	test_bounded();
	test_clip();
	return t_result();
}
