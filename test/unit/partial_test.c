/* SPDX-License-Identifier: MIT */
/*
 * partial_test: the receiver's durable state for partial files
 * (src/recv/partial.c, journal.c) and the range digests it is checked
 * with (src/core/digest.c).
 *
 *  - digests: a range's is XXH3-128 seeded with its offset; a set's is
 *    the sum, in any order; pxfer_digest_runs recomputes it from a file,
 *    records longer than its buffer included, and says -ENODATA for a run
 *    past the end; pxfer_digest_file gives the same with and without
 *    direct reads (a disk file and a tmpfs one, sizes on and off the
 *    alignment) and -ENODATA for a short file;
 *  - a new partial's data is a hole of the file's size; records added
 *    from two threads at once, past PXFER_PARTIAL_FLUSH so that add
 *    flushes, are all held after close(keep) and a reopen with resume:
 *    runs, held and digest exact, the digest as pxfer_digest_runs finds
 *    it in the data file;
 *  - another mtime: STALE, the data emptied; without resume: NEW, the
 *    data emptied, and nothing held after that either;
 *  - a flipped byte in one record: that record ignored, the rest held,
 *    and the journal rewritten (new nonce, nothing ignored next time); a
 *    torn journal: the tail ignored; a flipped header byte, a header for
 *    another path, overlapping records, or a data file of another size:
 *    CORRUPT, all discarded;
 *  - the rules that cut runs (a shorter record ends a run, a longer one
 *    starts another; gaps; records out of the file ignored), parsed from
 *    bytes made with the encoders; at most PXFER_PARTIAL_RUNS_MAX runs,
 *    and the journal then keeps exactly their records;
 *  - one-byte records: in order they merge into records of
 *    PXFER_PARTIAL_SMALL bytes, a byte between two pending ones joins
 *    them, and out of order (no byte next to the one before) the journal
 *    takes PXFER_PARTIAL_SMALL_MAX of them and no more; pending records
 *    stay within PXFER_PARTIAL_PEND_MAX all along, and what the journal
 *    holds parses into runs whose digest the data file has (also with
 *    two threads adding at once); partials of
 *    one store share PXFER_PARTIAL_PEND_ROOM, given back at close;
 *  - commit gives the data its final name over an existing file and
 *    leaves no state; to another file system it says -EXDEV and removes
 *    nothing;
 *  - a second open of a held partial is -EBUSY, another path is not;
 *    close is safe on a zeroed or failed partial;
 *  - the sweep removes old unlocked state and old data without a journal,
 *    and leftover temporary journals; keeps fresh state, locked state and
 *    names not its own;
 *  - the store is made 0700, and a symbolic link in its place refused;
 *    its secret (DIR/.pxfer/key) is made once, 0600, and read again by
 *    the next open; the names are keyed with it (not the unkeyed
 *    BLAKE2b of the path, nor another secret's);
 *  - a store that is not the receiver's alone is refused, with the entry
 *    and the problem said: .pxfer or .pxfer/partial writable by group
 *    or others, .pxfer a file, the key of another size or mode, with a
 *    second link, a symbolic link; owned by another uid (as root only:
 *    it needs chown);
 *  - nothing is adopted that the receiver did not make: a data file that
 *    others may read, with a second link, or without its journal; a
 *    journal that others may read, with a second link, or a FIFO; data
 *    or journal of another owner (as root only). Each is replaced by a
 *    new file (the planted one untouched), its held bytes never offered.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>
#include <xxhash.h>

#include "core/bytes.h"
#include "core/digest.h"
#include "recv/partial.h"
#include "test.h"

#define MiB	(1u << 20)
#define KiB	1024u

static char tmp[] = "/tmp/pxfer-partial-XXXXXX";
static int rootfd = -1;
static struct pxfer_partials ps = { .dirfd = -1 };

/* ---- helpers ------------------------------------------------------------ */

/* the bytes of the source at @off: a pattern that differs everywhere */
static void fill(uint8_t *buf, size_t len, uint64_t off, uint32_t salt)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t x = (off + i) * 0x9e3779b97f4a7c15ull + salt;

		buf[i] = (uint8_t)(x >> 56);
	}
}

static struct pxfer_partial_id make_id(const char *path, uint64_t size)
{
	return (struct pxfer_partial_id){
		.path = path, .path_len = strlen(path), .size = size,
		.mtime_sec = 1700000000, .mtime_nsec = 123456789,
	};
}

static int open_p(const struct pxfer_partial_id *id, int resume,
		  struct pxfer_partial *p)
{
	int ret = pxfer_partial_open(&ps, id, resume, p);

	T_EXPECT(!ret || ret == -EBUSY, "open %.*s: %s", (int)id->path_len,
		 id->path, strerror(-ret));
	return ret;
}

/* write @len bytes at @off into the partial's data and record them */
static void put(struct pxfer_partial *p, uint64_t off, uint32_t len,
		struct pxfer_digest *sum)
{
	uint8_t *buf = malloc(len);
	struct pxfer_digest h;
	int ret;

	if (!buf)
		exit(1);
	fill(buf, len, off, 0);
	T_EXPECT(pwrite(p->fd, buf, len, (off_t)off) == (ssize_t)len,
		 "pwrite at %llu", (unsigned long long)off);
	pxfer_digest_range(&h, buf, len, off);
	ret = pxfer_partial_add(p, off, len, &h);
	T_EXPECT(!ret, "add %llu+%u: %s", (unsigned long long)off, len,
		 strerror(-ret));
	if (sum)
		pxfer_digest_add(sum, &h);
	free(buf);
}

/* the name @key@suffix in the store */
static const char *sname(const char *path, const char *suffix)
{
	static char buf[128];
	char key[PXFER_PARTIAL_KEY_LEN + 1];

	pxfer_partial_key(ps.secret, path, strlen(path), key);
	snprintf(buf, sizeof(buf), "%s%s", key, suffix);
	return buf;
}

static int exists(const char *path, const char *suffix)
{
	struct stat st;

	return !fstatat(ps.dirfd, sname(path, suffix), &st, AT_SYMLINK_NOFOLLOW);
}

static off_t jsize(const char *path)
{
	struct stat st;

	return fstatat(ps.dirfd, sname(path, ".jnl"), &st, 0) ? -1 : st.st_size;
}

/* the partial's digest is what its data file holds in its runs */
static void check_digest(struct pxfer_partial *p, const char *what)
{
	struct pxfer_digest d = { 1, 1 };
	int ret = pxfer_digest_runs(p->fd, p->runs, p->nruns, &d);

	T_EXPECT(!ret && pxfer_digest_eq(&d, &p->digest),
		 "%s: the digest of the runs in the data file (%s)", what,
		 strerror(-ret));
}

/* whether @len bytes at @off of @fd are zeros */
static int zeros(int fd, uint64_t off, size_t len)
{
	uint8_t buf[4096];
	size_t n = len < sizeof(buf) ? len : sizeof(buf);

	if (pread(fd, buf, n, (off_t)off) != (ssize_t)n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (buf[i])
			return 0;
	return 1;
}

/* flip bit @bit of byte @off of @path's journal */
static void flip(const char *path, off_t off, int bit)
{
	int fd = openat(ps.dirfd, sname(path, ".jnl"), O_RDWR);
	uint8_t b = 0;

	if (fd < 0 || pread(fd, &b, 1, off) != 1) {
		T_EXPECT(0, "cannot read the journal of %s", path);
		if (fd >= 0)
			close(fd);
		return;
	}
	b ^= 1u << bit;
	T_EXPECT(pwrite(fd, &b, 1, off) == 1, "flip");
	close(fd);
}

static uint64_t jnonce(const char *path)
{
	int fd = openat(ps.dirfd, sname(path, ".jnl"), O_RDONLY);
	uint8_t b[8] = { 0 };

	if (fd >= 0) {
		T_EXPECT(pread(fd, b, 8, 32) == 8, "the nonce");
		close(fd);
	}
	return pxfer_get_be(b, 8);
}

/* a held partial of @n records of 64 KiB from 0, closed (kept) */
static void make_held(const struct pxfer_partial_id *id, unsigned int n)
{
	struct pxfer_partial p;

	if (open_p(id, 0, &p))
		return;
	for (unsigned int i = 0; i < n; i++)
		put(&p, (uint64_t)i * 64 * KiB, 64 * KiB, NULL);
	pxfer_partial_close(&p, 1);
}

/* ---- digests ------------------------------------------------------------ */

static int file_of(const char *dir, const uint8_t *buf, size_t len)
{
	int fd = t_tmpfile(dir);

	if (pwrite(fd, buf, len, 0) != (ssize_t)len) {
		perror("pwrite");
		exit(1);
	}
	return fd;
}

static void test_digest_file(const char *dir, const uint8_t *buf, size_t len)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, MiB, MiB + 4097 };
	int fd = file_of(dir, buf, len);
	struct pxfer_digest a, b;
	int flags = fcntl(fd, F_GETFL);

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		XXH128_hash_t want = XXH3_128bits(buf, sizes[i]);
		int ra = pxfer_digest_file(fd, sizes[i], 0, &a);
		int rb = pxfer_digest_file(fd, sizes[i], 1, &b);

		T_EXPECT(!ra && !rb && pxfer_digest_eq(&a, &b) &&
			 a.lo == want.low64 && a.hi == want.high64,
			 "%s: %zu bytes, direct and not: %d %d", dir, sizes[i],
			 ra, rb);
	}
	T_EXPECT(pxfer_digest_file(fd, len, 1, &a) == 0, "%s: all", dir);
	T_EXPECT(pxfer_digest_file(fd, len + 1, 1, &a) == -ENODATA,
		 "%s: a byte past the end, direct", dir);
	T_EXPECT(pxfer_digest_file(fd, len + 5 * MiB, 0, &a) == -ENODATA,
		 "%s: past the end", dir);
	T_EXPECT(fcntl(fd, F_GETFL) == flags, "%s: the flags restored", dir);
	close(fd);
}

static void test_digest(void)
{
	const size_t len = 3 * MiB + 12345;
	uint8_t *buf = malloc(len);
	struct pxfer_digest a, b, sum = { 0, 0 }, sum2 = { 0, 0 }, got;
	struct pxfer_held_run runs[2];
	XXH128_hash_t x;
	int fd;

	if (!buf)
		exit(1);
	fill(buf, len, 0, 7);
	x = XXH3_128bits_withSeed(buf + 100, 5000, 100);
	pxfer_digest_range(&a, buf + 100, 5000, 100);
	T_EXPECT(a.lo == x.low64 && a.hi == x.high64, "a range is XXH3-128");
	pxfer_digest_range(&b, buf + 100, 5000, 101);
	T_EXPECT(!pxfer_digest_eq(&a, &b), "the offset seeds the hash");

	/* a run of 3 records of 4000 bytes and a last of 100; a run of one
	 * record longer than digest_runs' buffer */
	fd = file_of("/tmp", buf, len);
	runs[0] = (struct pxfer_held_run){ .off = 10, .len = 12100, .unit = 4000 };
	runs[1] = (struct pxfer_held_run){ .off = MiB, .len = 1536 * KiB,
				      .unit = 1536 * KiB };
	for (int i = 3; i >= 0; i--) {
		uint64_t off = 10 + (uint64_t)i * 4000;

		pxfer_digest_range(&a, buf + off, i == 3 ? 100 : 4000, off);
		pxfer_digest_add(&sum, &a);
	}
	pxfer_digest_range(&a, buf + MiB, 1536 * KiB, MiB);
	pxfer_digest_add(&sum, &a);
	/* the other order, the same sum */
	pxfer_digest_add(&sum2, &a);
	for (int i = 0; i < 4; i++) {
		uint64_t off = 10 + (uint64_t)i * 4000;

		pxfer_digest_range(&b, buf + off, i == 3 ? 100 : 4000, off);
		pxfer_digest_add(&sum2, &b);
	}
	T_EXPECT(pxfer_digest_eq(&sum, &sum2), "a sum in any order");
	T_EXPECT(!pxfer_digest_runs(fd, runs, 2, &got) &&
		 pxfer_digest_eq(&got, &sum), "digest_runs");
	runs[1].off = len - 10;
	T_EXPECT(pxfer_digest_runs(fd, runs, 2, &got) == -ENODATA,
		 "a run past the end");
	runs[1].unit = 0;
	T_EXPECT(pxfer_digest_runs(fd, runs, 2, &got) == -EINVAL, "unit 0");
	close(fd);

	test_digest_file("/tmp", buf, len);
	if (!access("/dev/shm", W_OK))
		test_digest_file("/dev/shm", buf, len);
	free(buf);
}

/* ---- resuming ----------------------------------------------------------- */

#define BIG_SIZE	(40ull * MiB + 12345)
#define BIG_RECS	41		/* of 1 MiB, the last shorter */
#define BIG_GAP(i)	((i) % 10 == 7)	/* records never sent */

struct adder {
	struct pxfer_partial *p;
	int which;
	struct pxfer_digest sum;
};

static void *adder(void *arg)
{
	struct adder *a = arg;

	for (unsigned int i = a->which; i < BIG_RECS; i += 2) {
		uint64_t off = (uint64_t)i * MiB;

		if (!BIG_GAP(i))
			put(a->p, off, BIG_SIZE - off < MiB ? BIG_SIZE - off : MiB,
			    &a->sum);
	}
	return NULL;
}

static void test_resume(void)
{
	struct pxfer_partial_id id = make_id("runs/42/big.bin", BIG_SIZE);
	struct adder a[2] = { { .which = 0 }, { .which = 1 } };
	struct pxfer_digest sum = { 0, 0 };
	struct pxfer_partial p;
	pthread_t t[2];
	struct stat st;
	unsigned int k = 0;

	if (open_p(&id, 1, &p))
		return;
	T_EXPECT(p.state == PXFER_PARTIAL_NEW && !p.nruns && !p.held,
		 "a new partial: state %d", p.state);
	T_EXPECT(!fstat(p.fd, &st) && (uint64_t)st.st_size == BIG_SIZE,
		 "the data is sized");
	for (int i = 0; i < 2; i++) {
		a[i].p = &p;
		pthread_create(&t[i], NULL, adder, &a[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		pxfer_digest_add(&sum, &a[i].sum);
	}
	/* 37 MiB added: add flushed at least once on its own */
	T_EXPECT(jsize(id.path) >= (off_t)(PXFER_JOURNAL_HDR_LEN(id.path_len) +
					   16 * PXFER_JOURNAL_REC_LEN),
		 "add flushed: a journal of %lld bytes", (long long)jsize(id.path));
	pxfer_partial_close(&p, 1);
	T_EXPECT(jsize(id.path) == (off_t)(PXFER_JOURNAL_HDR_LEN(id.path_len) +
					   37 * PXFER_JOURNAL_REC_LEN),
		 "close flushed the rest");

	if (open_p(&id, 1, &p))
		return;
	T_EXPECT(p.state == PXFER_PARTIAL_HELD && !p.ignored, "held: %d",
		 p.state);
	/* runs between the gaps, the last one ending in a shorter record */
	for (unsigned int i = 0; i < BIG_RECS; i++) {
		unsigned int j = i;

		if (BIG_GAP(i))
			continue;
		while (j + 1 < BIG_RECS && !BIG_GAP(j + 1))
			j++;
		T_EXPECT(k < p.nruns && p.runs[k].off == (uint64_t)i * MiB &&
			 p.runs[k].unit == MiB &&
			 p.runs[k].off + p.runs[k].len ==
			 (j + 1 == BIG_RECS ? BIG_SIZE : (uint64_t)(j + 1) * MiB),
			 "run %u: records %u..%u", k, i, j);
		k++;
		i = j;
	}
	T_EXPECT(p.nruns == k && k == 5, "%u runs, want %u", p.nruns, k);
	T_EXPECT(p.held == BIG_SIZE - 4 * MiB, "held %llu",
		 (unsigned long long)p.held);
	T_EXPECT(pxfer_digest_eq(&p.digest, &sum), "the digest of what was added");
	check_digest(&p, "resumed");
	pxfer_partial_close(&p, 1);

	/* another mtime: stale, and the data emptied */
	id.mtime_nsec++;
	if (open_p(&id, 1, &p))
		return;
	T_EXPECT(p.state == PXFER_PARTIAL_STALE && !p.nruns && !p.held,
		 "another mtime: state %d", p.state);
	T_EXPECT(!fstat(p.fd, &st) && (uint64_t)st.st_size == BIG_SIZE &&
		 zeros(p.fd, 0, 4096) && zeros(p.fd, 30 * MiB, 4096),
		 "stale data emptied");
	pxfer_partial_close(&p, 0);
	T_EXPECT(!exists(id.path, ".jnl") && !exists(id.path, ".part"),
		 "close without keep removes the state");
}

static void test_no_resume(void)
{
	struct pxfer_partial_id id = make_id("fresh.bin", MiB);
	struct pxfer_partial p;

	make_held(&id, 4);
	if (open_p(&id, 0, &p))
		return;
	T_EXPECT(p.state == PXFER_PARTIAL_NEW && !p.nruns,
		 "without resume: state %d", p.state);
	T_EXPECT(zeros(p.fd, 0, 4096) && zeros(p.fd, 64 * KiB, 4096),
		 "discarded");
	pxfer_partial_close(&p, 1);
	if (open_p(&id, 1, &p))
		return;
	T_EXPECT(p.state == PXFER_PARTIAL_NEW && !p.nruns,
		 "nothing held after a discard: state %d", p.state);
	pxfer_partial_close(&p, 0);
}

/* ---- damage ------------------------------------------------------------- */

static void test_damage(void)
{
	struct pxfer_partial_id id = make_id("dmg/file", MiB);
	const size_t hlen = PXFER_JOURNAL_HDR_LEN(id.path_len);
	struct pxfer_partial_id other = make_id("dmg/fil2", MiB);
	struct pxfer_partial_rec r;
	uint8_t buf[PXFER_JOURNAL_HDR_LEN(64)];
	struct pxfer_partial p;
	uint64_t nonce;
	int fd;

	/* a flipped byte in record 3 of 8: it alone is ignored */
	make_held(&id, 8);
	flip(id.path, hlen + 3 * PXFER_JOURNAL_REC_LEN + 13, 2);
	nonce = jnonce(id.path);
	if (open_p(&id, 1, &p))
		return;
	T_EXPECT(p.state == PXFER_PARTIAL_HELD && p.ignored == 1 &&
		 p.nruns == 2 && p.held == 7 * 64 * KiB &&
		 p.runs[0].off == 0 && p.runs[0].len == 3 * 64 * KiB &&
		 p.runs[1].off == 4 * 64 * KiB && p.runs[1].len == 4 * 64 * KiB,
		 "a corrupt record: state %d, %u ignored, %u runs", p.state,
		 p.ignored, p.nruns);
	check_digest(&p, "a corrupt record");
	pxfer_partial_close(&p, 1);
	T_EXPECT(jnonce(id.path) != nonce, "the journal rewritten, a new nonce");
	if (!open_p(&id, 1, &p)) {
		T_EXPECT(p.state == PXFER_PARTIAL_HELD && !p.ignored &&
			 p.nruns == 2 && p.held == 7 * 64 * KiB,
			 "after the rewrite: %u ignored, %u runs", p.ignored,
			 p.nruns);
		pxfer_partial_close(&p, 0);
	}

	/* torn: 5 records and 17 bytes of the 6th */
	make_held(&id, 8);
	fd = openat(ps.dirfd, sname(id.path, ".jnl"), O_RDWR);
	T_EXPECT(fd >= 0 && !ftruncate(fd, hlen + 5 * PXFER_JOURNAL_REC_LEN + 17),
		 "truncate the journal");
	if (fd >= 0)
		close(fd);
	if (!open_p(&id, 1, &p)) {
		T_EXPECT(p.state == PXFER_PARTIAL_HELD && p.ignored == 1 &&
			 p.nruns == 1 && p.held == 5 * 64 * KiB,
			 "torn: state %d, %u ignored, %llu held", p.state,
			 p.ignored, (unsigned long long)p.held);
		check_digest(&p, "torn");
		pxfer_partial_close(&p, 0);
	}

	/* a flipped header byte: corrupt, all discarded */
	make_held(&id, 8);
	flip(id.path, 12, 0);
	if (!open_p(&id, 1, &p)) {
		T_EXPECT(p.state == PXFER_PARTIAL_CORRUPT && !p.nruns && !p.held,
			 "a flipped header byte: state %d", p.state);
		T_EXPECT(zeros(p.fd, 0, 4096), "corrupt: the data emptied");
		pxfer_partial_close(&p, 0);
	}

	/* a valid header naming another path */
	make_held(&id, 8);
	fd = openat(ps.dirfd, sname(id.path, ".jnl"), O_RDWR);
	T_EXPECT(fd >= 0 && pwrite(fd, buf, pxfer_partial_header_encode(buf, &other, 1),
				   0) == (ssize_t)hlen, "another path's header");
	if (fd >= 0)
		close(fd);
	if (!open_p(&id, 1, &p)) {
		T_EXPECT(p.state == PXFER_PARTIAL_CORRUPT && !p.nruns,
			 "another path: state %d", p.state);
		pxfer_partial_close(&p, 0);
	}

	/* a valid record over bytes another one holds */
	make_held(&id, 8);
	r = (struct pxfer_partial_rec){ .off = 2 * 64 * KiB + 100, .len = 10 };
	pxfer_partial_record_encode(buf, &r, jnonce(id.path));
	fd = openat(ps.dirfd, sname(id.path, ".jnl"), O_WRONLY | O_APPEND);
	T_EXPECT(fd >= 0 && write(fd, buf, PXFER_JOURNAL_REC_LEN) ==
		 PXFER_JOURNAL_REC_LEN, "append an overlapping record");
	if (fd >= 0)
		close(fd);
	if (!open_p(&id, 1, &p)) {
		T_EXPECT(p.state == PXFER_PARTIAL_CORRUPT && !p.nruns,
			 "overlapping records: state %d", p.state);
		pxfer_partial_close(&p, 0);
	}

	/* a data file of another size than the journal's */
	make_held(&id, 8);
	fd = openat(ps.dirfd, sname(id.path, ".part"), O_RDWR);
	T_EXPECT(fd >= 0 && !ftruncate(fd, MiB - 1), "shorten the data");
	if (fd >= 0)
		close(fd);
	if (!open_p(&id, 1, &p)) {
		T_EXPECT(p.state == PXFER_PARTIAL_CORRUPT && !p.nruns,
			 "short data: state %d", p.state);
		pxfer_partial_close(&p, 0);
	}
}

/* ---- runs --------------------------------------------------------------- */

static void test_parse(void)
{
	struct pxfer_partial_id id = make_id("p", 100000);
	static const struct pxfer_partial_rec recs[] = {
		{ .off = 0, .len = 4096 }, { .off = 4096, .len = 2048 },
		/* starts anew after the shorter one */
		{ .off = 6144, .len = 4096 }, { .off = 10240, .len = 4096 },
		/* longer than the unit: another run */
		{ .off = 14336, .len = 8192 },
		/* a gap before */
		{ .off = 30000, .len = 100 },
		/* ignored: empty, past the size, wrapping */
		{ .off = 50000, .len = 0 }, { .off = 99999, .len = 2 },
		{ .off = UINT64_MAX - 10, .len = 100 },
	};
	static const struct pxfer_held_run want[] = {
		{ 0, 6144, 4096 }, { 6144, 8192, 4096 }, { 14336, 8192, 8192 },
		{ 30000, 100, 100 },
	};
	uint8_t buf[PXFER_JOURNAL_HDR_LEN(1) + 10 * PXFER_JOURNAL_REC_LEN] = { 0 };
	const unsigned int n = sizeof(recs) / sizeof(recs[0]);
	struct pxfer_partial_load l;
	size_t len;
	int ok;

	T_EXPECT(!pxfer_partial_parse(buf, 0, &id, &l) &&
		 l.state == PXFER_PARTIAL_NEW, "empty: NEW");
	len = pxfer_partial_header_encode(buf, &id, 42);
	T_EXPECT(!pxfer_partial_parse(buf, len - 1, &id, &l) &&
		 l.state == PXFER_PARTIAL_CORRUPT, "a short header: CORRUPT");
	T_EXPECT(!pxfer_partial_parse(buf, len, &id, &l) &&
		 l.state == PXFER_PARTIAL_NEW, "a header alone: NEW");
	/* backwards: the parser sorts */
	for (unsigned int i = 0; i < n; i++)
		pxfer_partial_record_encode(buf + len + i * PXFER_JOURNAL_REC_LEN,
					    &recs[n - 1 - i], 42);
	len += n * PXFER_JOURNAL_REC_LEN;
	ok = !pxfer_partial_parse(buf, len, &id, &l) &&
	     l.state == PXFER_PARTIAL_HELD && l.ignored == 3 && l.nruns == 4 &&
	     l.nrecs == 6 && l.held == 6144 + 8192 + 8192 + 100;
	for (unsigned int i = 0; ok && i < 4; i++)
		ok = l.runs[i].off == want[i].off && l.runs[i].len == want[i].len &&
		     l.runs[i].unit == want[i].unit;
	T_EXPECT(ok, "the runs: state %d, %u ignored, %u runs", l.state,
		 l.ignored, l.nruns);
	pxfer_partial_load_free(&l);
	id.size++;
	T_EXPECT(!pxfer_partial_parse(buf, len, &id, &l) &&
		 l.state == PXFER_PARTIAL_STALE && !l.nruns, "another size: STALE");
}

static void test_runs_max(void)
{
	const unsigned int n = PXFER_PARTIAL_RUNS_MAX + 44;
	struct pxfer_partial_id id = make_id("many/runs", (uint64_t)n * 8192);
	struct pxfer_digest sum = { 0, 0 };
	struct pxfer_partial p;
	uint8_t buf[4096];

	if (open_p(&id, 1, &p))
		return;
	for (unsigned int i = 0; i < n; i++) {
		struct pxfer_digest h;

		/* the runs past the cap would be dropped: count only ours */
		fill(buf, 4096, (uint64_t)i * 8192, 0);
		put(&p, (uint64_t)i * 8192, 4096, NULL);
		pxfer_digest_range(&h, buf, 4096, (uint64_t)i * 8192);
		if (i < PXFER_PARTIAL_RUNS_MAX)
			pxfer_digest_add(&sum, &h);
	}
	pxfer_partial_close(&p, 1);
	for (int round = 0; round < 2; round++) {
		if (open_p(&id, 1, &p))
			return;
		T_EXPECT(p.state == PXFER_PARTIAL_HELD &&
			 p.nruns == PXFER_PARTIAL_RUNS_MAX &&
			 p.held == PXFER_PARTIAL_RUNS_MAX * 4096ull &&
			 p.runs[p.nruns - 1].off == (PXFER_PARTIAL_RUNS_MAX - 1) * 8192ull,
			 "round %d: %u runs, %llu held", round, p.nruns,
			 (unsigned long long)p.held);
		T_EXPECT(pxfer_digest_eq(&p.digest, &sum), "the kept runs' digest");
		check_digest(&p, "runs max");
		T_EXPECT(jsize(id.path) == (off_t)(PXFER_JOURNAL_HDR_LEN(id.path_len) +
			 PXFER_PARTIAL_RUNS_MAX * PXFER_JOURNAL_REC_LEN),
			 "the journal holds exactly the kept records");
		pxfer_partial_close(&p, 1);
	}
	if (!open_p(&id, 0, &p))
		pxfer_partial_close(&p, 0);
}

/* ---- tiny records ------------------------------------------------------- */

#define TINY_SIZE	(4 * MiB)

/* the source's bytes, written into @p's data at once; then @n adds of one
 * byte each at @order(i), the pending records bounded after each */
static void add_bytes(struct pxfer_partial *p, unsigned int n,
		      uint64_t (*order)(unsigned int i), const char *what)
{
	static uint8_t buf[TINY_SIZE];
	unsigned int most = 0;

	fill(buf, TINY_SIZE, 0, 0);
	T_EXPECT(pwrite(p->fd, buf, TINY_SIZE, 0) == TINY_SIZE, "pwrite");
	for (unsigned int i = 0; i < n; i++) {
		uint64_t off = order(i);
		struct pxfer_digest h;
		int ret;

		pxfer_digest_range(&h, buf + off, 1, off);
		ret = pxfer_partial_add(p, off, 1, &h);
		if (ret)
			T_EXPECT(!ret, "%s: add %u: %s", what, i, strerror(-ret));
		if (p->npend > most)
			most = p->npend;
	}
	T_EXPECT(most <= PXFER_PARTIAL_PEND_MAX &&
		 p->pend_cap <= PXFER_PARTIAL_PEND_MAX &&
		 p->batch_cap <= PXFER_PARTIAL_PEND_MAX,
		 "%s: at most %u records pending, not %u", what,
		 PXFER_PARTIAL_PEND_MAX, most);
}

/* closed (kept) and opened again: its journal holds @recs records, which
 * make runs of @held bytes whose digest the data file has */
static void check_kept(struct pxfer_partial *p, const struct pxfer_partial_id *id,
		       unsigned int recs, uint64_t held, const char *what)
{
	off_t want = (off_t)(PXFER_JOURNAL_HDR_LEN(id->path_len) +
			     (size_t)recs * PXFER_JOURNAL_REC_LEN);

	pxfer_partial_close(p, 1);
	T_EXPECT(jsize(id->path) == want, "%s: a journal of %lld bytes, not %lld",
		 what, (long long)jsize(id->path), (long long)want);
	if (open_p(id, 1, p))
		return;
	T_EXPECT(p->state == PXFER_PARTIAL_HELD && !p->ignored &&
		 p->held == held, "%s: state %d, %llu bytes held, not %llu",
		 what, p->state, (unsigned long long)p->held,
		 (unsigned long long)held);
	check_digest(p, what);
	pxfer_partial_close(p, 0);
}

static uint64_t in_order(unsigned int i)
{
	return i;
}

/* in blocks of 128 bytes, the odd ones, then the even ones: no byte comes
 * next to one among the 64 before it */
static uint64_t interleaved(unsigned int i)
{
	return (uint64_t)i / 128 * 128 + (i % 128 < 64 ? i % 64 * 2 + 1 : i % 64 * 2);
}

static void test_tiny(void)
{
	struct pxfer_partial_id id = make_id("tiny/in-order", TINY_SIZE);
	struct pxfer_partial p;
	const unsigned int n = 200000;
	uint8_t b[3] = { 0 };
	struct pxfer_digest h;

	/* in order: merged into records of PXFER_PARTIAL_SMALL bytes */
	if (open_p(&id, 0, &p))
		return;
	add_bytes(&p, n, in_order, "in order");
	T_EXPECT(p.npend == 4, "in order: %u records pending", p.npend);
	check_kept(&p, &id, (n + PXFER_PARTIAL_SMALL - 1) / PXFER_PARTIAL_SMALL,
		   n, "in order");
	T_EXPECT(p.nruns == 0, "closed");

	/* a byte between two pending ones joins them */
	id = make_id("tiny/join", TINY_SIZE);
	if (open_p(&id, 0, &p))
		return;
	fill(b, 3, 10, 0);
	T_EXPECT(pwrite(p.fd, b, 3, 10) == 3, "pwrite");
	for (int i = 0; i < 3; i++) {
		uint64_t off = 10 + (uint64_t)(i == 0 ? 0 : i == 1 ? 2 : 1);

		pxfer_digest_range(&h, b + off - 10, 1, off);
		pxfer_partial_add(&p, off, 1, &h);
	}
	T_EXPECT(p.npend == 1 && p.pend[0].off == 10 && p.pend[0].len == 3,
		 "joined: %u pending", p.npend);
	check_kept(&p, &id, 1, 3, "joined");

	/*
	 * Out of order, no byte next to the one before: the first
	 * PXFER_PARTIAL_SMALL_MAX are recorded (bytes 0..4095, whole blocks),
	 * the rest not, and pending records stay bounded meanwhile.
	 */
	id = make_id("tiny/interleaved", TINY_SIZE);
	if (open_p(&id, 0, &p))
		return;
	add_bytes(&p, 5 * PXFER_PARTIAL_SMALL_MAX, interleaved, "interleaved");
	T_EXPECT(p.npend == 0, "interleaved: %u pending past the journal's cap",
		 p.npend);
	check_kept(&p, &id, PXFER_PARTIAL_SMALL_MAX, PXFER_PARTIAL_SMALL_MAX,
		   "interleaved");
}

struct tiny_adder {
	struct pxfer_partial *p;
	const uint8_t *buf;
	unsigned int from, n;
};

/* one-byte records, interleaved, from byte @from */
static void *tiny_adder(void *arg)
{
	struct tiny_adder *a = arg;

	for (unsigned int i = 0; i < a->n; i++) {
		uint64_t off = a->from + interleaved(i);
		struct pxfer_digest h;

		pxfer_digest_range(&h, a->buf + off, 1, off);
		pxfer_partial_add(a->p, off, 1, &h);
	}
	return NULL;
}

/* two threads at once, past the pending records' cap and the journal's */
static void test_tiny_threads(void)
{
	struct pxfer_partial_id id = make_id("tiny/threads", TINY_SIZE);
	static uint8_t buf[TINY_SIZE];
	struct tiny_adder a[2];
	struct pxfer_partial p;
	pthread_t t[2];

	if (open_p(&id, 0, &p))
		return;
	fill(buf, TINY_SIZE, 0, 0);
	T_EXPECT(pwrite(p.fd, buf, TINY_SIZE, 0) == TINY_SIZE, "pwrite");
	for (int i = 0; i < 2; i++) {
		a[i] = (struct tiny_adder){ .p = &p, .buf = buf,
					    .from = i * TINY_SIZE / 2,
					    .n = 3 * PXFER_PARTIAL_PEND_MAX };
		pthread_create(&t[i], NULL, tiny_adder, &a[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pxfer_partial_close(&p, 1);
	T_EXPECT(jsize(id.path) == (off_t)(PXFER_JOURNAL_HDR_LEN(id.path_len) +
			PXFER_PARTIAL_SMALL_MAX * PXFER_JOURNAL_REC_LEN),
		 "threads: a journal of %lld bytes", (long long)jsize(id.path));
	if (open_p(&id, 1, &p))
		return;
	T_EXPECT(p.state == PXFER_PARTIAL_HELD && !p.ignored, "threads: state %d",
		 p.state);
	check_digest(&p, "threads");
	pxfer_partial_close(&p, 0);
}

/* the partials of one store share room for their pending records */
static void test_room(void)
{
	enum { N = 20, EACH = 4000 };
	struct pxfer_partial p[N];
	struct pxfer_digest h = { 1, 2 };
	unsigned int most = 0, taken;
	char path[32];
	int ok = 1;

	for (int k = 0; k < N; k++) {
		struct pxfer_partial_id id;

		snprintf(path, sizeof(path), "room/%d", k);
		id = make_id(path, MiB);
		if (open_p(&id, 0, &p[k])) {
			while (k--)
				pxfer_partial_close(&p[k], 0);
			return;
		}
	}
	/* every other byte: nothing merges (the hash does not matter here) */
	for (unsigned int i = 0; i < EACH; i++) {
		for (int k = 0; k < N; k++)
			pxfer_partial_add(&p[k], 2 * (uint64_t)i, 1, &h);
		taken = atomic_load(&ps.pend_room);
		if (taken > most)
			most = taken;
	}
	for (int k = 0; k < N; k++)
		ok &= p[k].pend_cap + p[k].batch_cap <=
		      2 * PXFER_PARTIAL_PEND_MAX;
	T_EXPECT(ok && most <= PXFER_PARTIAL_PEND_ROOM && most > PXFER_PARTIAL_PEND_ROOM / 2,
		 "the store's room: at most %u taken, of %u", most,
		 PXFER_PARTIAL_PEND_ROOM);
	for (int k = 0; k < N; k++)
		pxfer_partial_close(&p[k], 0);
	T_EXPECT(atomic_load(&ps.pend_room) == 0, "room given back: %u",
		 atomic_load(&ps.pend_room));
}

/* ---- commit, locking ---------------------------------------------------- */

static int count_store(void)
{
	int fd = openat(ps.dirfd, ".", O_RDONLY | O_DIRECTORY);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void test_commit(void)
{
	struct pxfer_partial_id id = make_id("out/final.bin", 300 * KiB + 5);
	struct pxfer_partial p;
	uint8_t want[4096], got[4096];
	int fd, shm, ret;

	fd = openat(rootfd, "final.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_EXPECT(fd >= 0 && write(fd, "old", 3) == 3, "an old file");
	if (fd >= 0)
		close(fd);
	if (open_p(&id, 1, &p))
		return;
	for (uint64_t off = 0; off < id.size; off += 100 * KiB)
		put(&p, off, id.size - off < 100 * KiB ? id.size - off : 100 * KiB,
		    NULL);
	T_EXPECT(pxfer_partial_same_fs(&ps, rootfd) == 1, "the same fs");
	shm = open("/dev/shm", O_RDONLY | O_DIRECTORY);
	if (shm >= 0 && pxfer_partial_same_fs(&ps, shm) == 0) {
		ret = pxfer_partial_commit(&p, shm, "pxfer-partial-test");
		T_EXPECT(ret == -EXDEV, "commit across file systems: %d", ret);
		T_EXPECT(p.fd >= 0 && exists(id.path, ".part") &&
			 exists(id.path, ".jnl"), "a failed commit keeps all");
	}
	if (shm >= 0)
		close(shm);
	ret = pxfer_partial_commit(&p, rootfd, "final.bin");
	T_EXPECT(!ret && p.fd == -1, "commit: %s", strerror(-ret));
	T_EXPECT(count_store() == 0, "no state left: %d names", count_store());
	fd = openat(rootfd, "final.bin", O_RDONLY);
	fill(want, sizeof(want), 200 * KiB, 0);
	T_EXPECT(fd >= 0 && pread(fd, got, sizeof(got), 200 * KiB) == sizeof(got) &&
		 !memcmp(got, want, sizeof(got)), "the final name holds the data");
	if (fd >= 0)
		close(fd);
	pxfer_partial_close(&p, 0);	/* closed already: nothing */
}

static void test_busy(void)
{
	struct pxfer_partial_id id = make_id("busy.bin", MiB);
	struct pxfer_partial_id other = make_id("busy2.bin", MiB);
	struct pxfer_partial a, b, z;
	int ret;

	memset(&z, 0, sizeof(z));
	pxfer_partial_close(&z, 1);	/* zeroed: safe */
	if (open_p(&id, 1, &a))
		return;
	ret = pxfer_partial_open(&ps, &id, 1, &b);
	T_EXPECT(ret == -EBUSY, "a second open: %d", ret);
	pxfer_partial_close(&b, 0);	/* failed: safe, removes nothing */
	T_EXPECT(exists(id.path, ".jnl") && exists(id.path, ".part"),
		 "a failed open removed the holder's state");
	if (!open_p(&other, 1, &b))
		pxfer_partial_close(&b, 0);
	pxfer_partial_close(&a, 1);
	if (!open_p(&id, 1, &b))
		pxfer_partial_close(&b, 0);
}

/* ---- the sweep, the store ----------------------------------------------- */

static void age(const char *path, const char *suffix, time_t secs)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
				  { .tv_sec = time(NULL) - secs } };

	T_EXPECT(!utimensat(ps.dirfd, sname(path, suffix), ts, 0),
		 "age %s%s", path, suffix);
}

static void touch(const char *name)
{
	int fd = openat(ps.dirfd, name, O_WRONLY | O_CREAT, 0600);

	T_EXPECT(fd >= 0, "create %s", name);
	if (fd >= 0)
		close(fd);
}

static void test_sweep(void)
{
	struct pxfer_partial_id old = make_id("old", MiB);
	struct pxfer_partial_id fresh = make_id("fresh", MiB);
	struct pxfer_partial_id held = make_id("held", MiB);
	struct pxfer_partial p;
	char tmpname[128];
	int ret;

	make_held(&old, 2);
	age(old.path, ".jnl", 7200);
	make_held(&fresh, 2);
	snprintf(tmpname, sizeof(tmpname), "%s", sname(fresh.path, ".jnl.tmp"));
	touch(tmpname);
	if (open_p(&held, 1, &p))
		return;
	age(held.path, ".jnl", 7200);
	touch(sname("orphan-old", ".part"));
	age("orphan-old", ".part", 7200);
	touch(sname("orphan-new", ".part"));
	touch("README");

	ret = pxfer_partials_sweep(&ps, 3600, time(NULL));
	T_EXPECT(ret == 2, "sweep: %d removed, want 2", ret);
	T_EXPECT(!exists(old.path, ".jnl") && !exists(old.path, ".part"),
		 "old state removed");
	T_EXPECT(exists(fresh.path, ".jnl") && exists(fresh.path, ".part") &&
		 !exists(fresh.path, ".jnl.tmp"), "fresh state kept, its leftover not");
	T_EXPECT(exists(held.path, ".jnl") && exists(held.path, ".part"),
		 "held state kept");
	T_EXPECT(!exists("orphan-old", ".part") && !exists("orphan-old", ".jnl"),
		 "old data without a journal removed");
	T_EXPECT(exists("orphan-new", ".part") && !exists("orphan-new", ".jnl"),
		 "new data without a journal kept");
	T_EXPECT(!faccessat(ps.dirfd, "README", F_OK, 0), "a name not ours kept");
	pxfer_partial_close(&p, 0);
	if (!open_p(&fresh, 1, &p)) {
		T_EXPECT(p.state == PXFER_PARTIAL_HELD && p.nruns == 1,
			 "fresh state resumes after a sweep");
		pxfer_partial_close(&p, 0);
	}
	T_EXPECT(pxfer_partials_sweep(&ps, 0, time(NULL) + 10) == 1,
		 "ttl 0: the last orphan goes");
	unlinkat(ps.dirfd, "README", 0);
}

static void test_store(void)
{
	struct pxfer_partials bad;
	struct stat st;
	int fd;

	T_EXPECT(!fstat(ps.dirfd, &st) && (st.st_mode & 0777) == 0700,
		 "the store is 0700: %o", st.st_mode & 0777);
	T_EXPECT(!mkdirat(rootfd, "link-root", 0700) &&
		 !symlinkat(tmp, rootfd, "link-root/" PXFER_STATE_DIR),
		 "a root whose state directory is a link");
	fd = openat(rootfd, "link-root", O_RDONLY | O_DIRECTORY);
	T_EXPECT(fd >= 0 && pxfer_partials_open(&bad, fd) < 0 && bad.dirfd == -1,
		 "a link is not followed");
	if (fd >= 0)
		close(fd);
}

/* ---- what the receiver did not make ------------------------------------- */

/* @path's @suffix in the store replaced by a copy of it, another inode of
 * mode @mode: a descriptor of it (open, so that its inode number is not
 * given to another file meanwhile) */
static int plant(const char *path, const char *suffix, mode_t mode)
{
	static uint8_t buf[MiB + 64 * KiB];
	const char *name = sname(path, suffix);
	int fd = openat(ps.dirfd, name, O_RDONLY);
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf), 0) : -1;

	T_EXPECT(n >= 0, "read %s%s", path, suffix);
	if (fd >= 0)
		close(fd);
	unlinkat(ps.dirfd, name, 0);
	fd = openat(ps.dirfd, name, O_RDWR | O_CREAT | O_EXCL, 0600);
	T_EXPECT(fd >= 0 && (n <= 0 || write(fd, buf, (size_t)n) == n) &&
		 !fchmod(fd, mode), "plant %s%s", path, suffix);
	return fd;
}

/* open @id to resume: not adopted, so @want (NEW or CORRUPT), nothing
 * held, and a data file of its own (not the file of @fd, if >= 0), 0600 */
static void expect_fresh(const struct pxfer_partial_id *id, int fd,
			 enum pxfer_partial_state want, const char *what)
{
	struct pxfer_partial p;
	struct stat st, old = { 0 };

	if (fd >= 0)
		T_EXPECT(!fstat(fd, &old), "%s: fstat", what);
	if (open_p(id, 1, &p))
		return;
	T_EXPECT(p.state == want && !p.nruns && !p.held,
		 "%s: state %d, %u runs, want %d and none", what, p.state,
		 p.nruns, want);
	T_EXPECT(!fstat(p.fd, &st) && st.st_ino != old.st_ino &&
		 (st.st_mode & 07777) == 0600 && st.st_nlink == 1 &&
		 zeros(p.fd, 0, 4096), "%s: a new data file", what);
	T_EXPECT(!fstatat(ps.dirfd, sname(id->path, ".jnl"), &st,
			  AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
		 (st.st_mode & 07777) == 0600 && st.st_nlink == 1,
		 "%s: the journal is the receiver's", what);
	pxfer_partial_close(&p, 0);
	if (fd >= 0)
		T_EXPECT(!zeros(fd, 0, 4096), "%s: the file found untouched", what);
}

static void test_not_ours(void)
{
	struct pxfer_partial_id id = make_id("planted/big", MiB);
	int fd;

	/* data that others may read, with the held bytes */
	make_held(&id, 4);
	fd = plant(id.path, ".part", 0644);
	expect_fresh(&id, fd, PXFER_PARTIAL_CORRUPT, "data of mode 0644");
	close(fd);

	/* data with a second link: the other name's bytes are kept */
	make_held(&id, 4);
	T_EXPECT(!linkat(ps.dirfd, sname(id.path, ".part"), rootfd, "second",
			 0), "a second link to the data");
	fd = openat(rootfd, "second", O_RDONLY);
	expect_fresh(&id, fd, PXFER_PARTIAL_CORRUPT, "data with two links");
	close(fd);
	unlinkat(rootfd, "second", 0);

	/* data without its journal, however right it looks */
	make_held(&id, 4);
	fd = openat(ps.dirfd, sname(id.path, ".part"), O_RDONLY);
	T_EXPECT(!unlinkat(ps.dirfd, sname(id.path, ".jnl"), 0),
		 "remove the journal");
	expect_fresh(&id, fd, PXFER_PARTIAL_NEW, "data without a journal");
	close(fd);

	/* a journal that others may read */
	make_held(&id, 4);
	fd = plant(id.path, ".jnl", 0644);
	expect_fresh(&id, -1, PXFER_PARTIAL_NEW, "a journal of mode 0644");
	close(fd);

	/* a journal with a second link */
	make_held(&id, 4);
	T_EXPECT(!linkat(ps.dirfd, sname(id.path, ".jnl"), rootfd, "jlink", 0),
		 "a second link to the journal");
	expect_fresh(&id, -1, PXFER_PARTIAL_NEW, "a journal with two links");
	unlinkat(rootfd, "jlink", 0);

	/* a FIFO as the journal */
	make_held(&id, 4);
	unlinkat(ps.dirfd, sname(id.path, ".jnl"), 0);
	T_EXPECT(!mkfifoat(ps.dirfd, sname(id.path, ".jnl"), 0600), "a FIFO");
	expect_fresh(&id, -1, PXFER_PARTIAL_NEW, "a FIFO as the journal");

	if (geteuid()) {
		fprintf(stderr, "note: files of another owner not tried (chown needs root)\n");
		return;
	}
	make_held(&id, 4);
	T_EXPECT(!fchownat(ps.dirfd, sname(id.path, ".part"), 65534, 65534, 0),
		 "chown the data");
	fd = openat(ps.dirfd, sname(id.path, ".part"), O_RDONLY);
	expect_fresh(&id, fd, PXFER_PARTIAL_CORRUPT, "data of uid 65534");
	close(fd);
	make_held(&id, 4);
	T_EXPECT(!fchownat(ps.dirfd, sname(id.path, ".jnl"), 65534, 65534, 0),
		 "chown the journal");
	expect_fresh(&id, -1, PXFER_PARTIAL_NEW, "a journal of uid 65534");
}

/* truncate @name in @dfd to @len bytes */
static int truncate_at(int dfd, const char *name, off_t len)
{
	int fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW);
	int ret = fd < 0 || ftruncate(fd, len) ? -1 : 0;

	if (fd >= 0)
		close(fd);
	return ret;
}

/* a new top directory @name in the test's: its fd */
static int new_root(const char *name)
{
	int fd;

	T_EXPECT(!mkdirat(rootfd, name, 0755), "mkdir %s", name);
	fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY);
	T_EXPECT(fd >= 0, "open %s", name);
	return fd;
}

/* the store below @fd is refused, @bad named, @what in the problem */
static void refused(int fd, const char *bad, const char *what, const char *why)
{
	struct pxfer_partials s;
	int ret = pxfer_partials_open(&s, fd);

	T_EXPECT(ret == -EPERM && s.dirfd == -1 && s.bad && !strcmp(s.bad, bad) &&
		 strstr(s.problem, what), "%s: %d, '%s' %s", why, ret,
		 s.bad ? s.bad : "", s.problem);
	if (!ret)
		pxfer_partials_close(&s);
}

/* the store below @fd is used */
static void accepted(int fd, const char *why)
{
	struct pxfer_partials s;
	int ret = pxfer_partials_open(&s, fd);

	T_EXPECT(!ret && s.dirfd >= 0 && !s.bad, "%s: %s %s", why,
		 strerror(-ret), s.problem);
	if (!ret)
		pxfer_partials_close(&s);
}

static void test_names(void)
{
	char a[PXFER_PARTIAL_KEY_LEN + 1], b[PXFER_PARTIAL_KEY_LEN + 1];
	char plain[PXFER_PARTIAL_KEY_LEN + 1];
	uint8_t other[PXFER_PARTIAL_SECRET_LEN] = { 1 }, h[16];
	struct pxfer_partials again;
	struct stat st;

	pxfer_partial_key(ps.secret, "dir/file", 8, a);
	pxfer_partial_key(other, "dir/file", 8, b);
	crypto_generichash(h, sizeof(h), (const uint8_t *)"dir/file", 8, NULL, 0);
	sodium_bin2hex(plain, sizeof(plain), h, sizeof(h));
	T_EXPECT(strlen(a) == PXFER_PARTIAL_KEY_LEN && strcmp(a, b) &&
		 strcmp(a, plain), "keyed names: %s %s %s", a, b, plain);
	T_EXPECT(!fstatat(rootfd, PXFER_STATE_DIR "/key", &st, AT_SYMLINK_NOFOLLOW) &&
		 S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600 &&
		 st.st_nlink == 1 && st.st_size == PXFER_PARTIAL_SECRET_LEN,
		 "the key file: mode %o, %lld bytes", st.st_mode,
		 (long long)st.st_size);
	T_EXPECT(!pxfer_partials_open(&again, rootfd) &&
		 !memcmp(again.secret, ps.secret, sizeof(ps.secret)),
		 "a second open reads the same secret");
	pxfer_partials_close(&again);
}

static void test_strict(void)
{
	const char *key = PXFER_STATE_DIR "/key";
	int fd, fd2;

	fd = new_root("wide");
	T_EXPECT(!mkdirat(fd, PXFER_STATE_DIR, 0700) &&
		 !fchmodat(fd, PXFER_STATE_DIR, 0777, 0), "a .pxfer of mode 0777");
	refused(fd, PXFER_STATE_DIR, "writable by its group or others (mode 0777)", "a .pxfer of mode 0777");
	T_EXPECT(!fchmodat(fd, PXFER_STATE_DIR, 0755, 0), "chmod go-w");
	accepted(fd, "a .pxfer of mode 0755");
	T_EXPECT(!fchmodat(fd, PXFER_STATE_DIR "/partial", 0730, 0), "chmod");
	refused(fd, PXFER_STATE_DIR "/partial", "group or others (mode 0730)", "a partial/ of mode 0730");
	close(fd);

	fd = new_root("file");
	T_EXPECT((fd2 = openat(fd, PXFER_STATE_DIR, O_WRONLY | O_CREAT, 0600)) >= 0,
		 "a file as .pxfer");
	close(fd2);
	refused(fd, PXFER_STATE_DIR, "not a directory", "a file as .pxfer");
	close(fd);

	fd = new_root("keys");
	accepted(fd, "a new store");
	T_EXPECT(!truncate_at(fd, key, 5), "a short key");
	refused(fd, key, "5 bytes", "a key of 5 bytes");
	T_EXPECT(!unlinkat(fd, key, 0), "rm");
	accepted(fd, "a key made again");
	T_EXPECT(!fchmodat(fd, key, 0640, 0), "chmod");
	refused(fd, key, "mode 0640", "a key of mode 0640");
	T_EXPECT(!fchmodat(fd, key, 0600, 0), "chmod");
	T_EXPECT(!linkat(fd, key, fd, "keylink", 0), "link");
	refused(fd, key, "2 links", "a key with two links");
	T_EXPECT(!unlinkat(fd, "keylink", 0), "rm");
	accepted(fd, "the key alone again");
	T_EXPECT(!unlinkat(fd, key, 0) && !symlinkat("../keylink", fd, key),
		 "a symbolic link as the key");
	refused(fd, key, "symbolic link", "a symbolic link as the key");
	close(fd);

	if (geteuid()) {
		fprintf(stderr, "note: a store of another owner not tried (chown needs root)\n");
		return;
	}
	fd = new_root("owned");
	T_EXPECT(!mkdirat(fd, PXFER_STATE_DIR, 0700) &&
		 !fchownat(fd, PXFER_STATE_DIR, 65534, 65534, 0), "chown .pxfer");
	refused(fd, PXFER_STATE_DIR, "owned by uid 65534, not this receiver (uid 0)",
		"a .pxfer of uid 65534");
	T_EXPECT(!fchownat(fd, PXFER_STATE_DIR, 0, 0, 0), "chown back");
	accepted(fd, "a .pxfer of uid 0");
	T_EXPECT(!fchownat(fd, PXFER_STATE_DIR "/partial", 65534, 65534, 0), "chown");
	refused(fd, PXFER_STATE_DIR "/partial", "owned by uid 65534",
		"a partial/ of uid 65534");
	T_EXPECT(!fchownat(fd, PXFER_STATE_DIR "/partial", 0, 0, 0) &&
		 !fchownat(fd, key, 65534, 65534, 0), "chown the key");
	refused(fd, key, "owned by uid 65534", "a key of uid 65534");
	close(fd);
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
	test_digest();
	test_parse();
	test_resume();
	test_no_resume();
	test_damage();
	test_runs_max();
	test_tiny();
	test_tiny_threads();
	test_room();
	test_commit();
	test_busy();
	test_sweep();
	test_store();
	test_names();
	test_not_ours();
	test_strict();
	pxfer_partials_close(&ps);
	close(rootfd);
	t_rm_rf_at(AT_FDCWD, tmp);
	return t_result();
}
