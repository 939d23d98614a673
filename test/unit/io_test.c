/* SPDX-License-Identifier: MIT */
/*
 * io_test: the file I/O back-ends (src/io_uring.c, src/io_sync.c) through
 * their ops table, each run the same way:
 *
 *  - data written from ring slots at various offsets, some past 4 GiB in
 *    a sparse temporary file, reads back the same through other slots,
 *    including from the middle of a slot;
 *  - reads that meet the end of the file come back short, with the bytes
 *    there are, and 0 past the end; a write across RLIMIT_FSIZE comes back
 *    short, and one beyond it with -EFBIG;
 *  - every completion carries its tag (all 64 bits), each exactly once;
 *  - errors come back as negative errno: a read from a write-only fd and a
 *    write to a read-only fd give -EBADF, a closed fd -EBADF, a directory
 *    -EISDIR;
 *  - more operations than the queue depth still all complete;
 *  - the inflight counter returns to 0, and reap then returns nothing
 *    without blocking;
 *  - with io_uring_setup refused (a seccomp filter, as container runtimes
 *    install), "uring" gives -ENOSYS as io.h says and "auto" falls back to
 *    pread/pwrite.
 *
 * io_uring may be unavailable (old kernel, seccomp, io_uring_disabled): that
 * half is then skipped, and says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "io/io.h"
#include "core/ring.h"
#include "test.h"

#define KiB		1024ull
#define MiB		(1024ull * KiB)
#define GiB		(1024ull * MiB)
#define NSLOTS		8
#define SLOT		(64 * KiB)
#define TAG_BASE	0xa5c3000000000000ull

static const char *tmpdir;
static char what[64];		/* back-end and ring layout, for messages */

/* the same file, opened again with @flags */
static int reopen(int fd, int flags)
{
	char p[64];
	int nfd;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	nfd = open(p, flags | O_CLOEXEC);
	if (nfd < 0) {
		perror("reopen");
		exit(1);
	}
	return nfd;
}

static uint8_t pat(uint64_t o)
{
	uint64_t x = o ^ (o >> 7) ^ (o >> 19) ^ (o >> 32) ^ (o >> 41);

	return (uint8_t)(x * 131 + 7);
}

/* ---- submit and collect ----------------------------------------------- */

struct op {
	enum pxfer_io_op op;
	int fd;
	unsigned int slot;
	uint32_t boff;		/* offset inside the slot */
	uint32_t len;
	uint64_t off;
	int want;		/* expected result */
	int res;
	int seen;
};

/*
 * Prep all of @ops (tags TAG_BASE + index), submit, reap until all came
 * back or something went wrong. Returns 0 if every op completed once.
 */
static int run(struct pxfer_io *io, const struct pxfer_ring *r, struct op *ops,
	       unsigned int n, const char *step)
{
	struct pxfer_io_cqe cqe[16];
	unsigned int got = 0, rounds = 0;
	int ret, ok = 1;

	for (unsigned int i = 0; i < n; i++) {
		ops[i].seen = 0;
		ret = io->ops->prep(io, ops[i].op, ops[i].fd, ops[i].slot,
				    pxfer_ring_slot(r, ops[i].slot) + ops[i].boff,
				    ops[i].len, ops[i].off, TAG_BASE + i);
		if (ret) {
			T_EXPECT(0, "%s: %s: prep %u: %d", what, step, i, ret);
			return -1;
		}
	}
	T_EXPECT(io->inflight == n, "%s: %s: inflight %u after %u preps", what,
		 step, io->inflight, n);
	ret = io->ops->submit(io);
	T_EXPECT(ret == 0, "%s: %s: submit: %d", what, step, ret);
	if (ret)
		return -1;
	while (got < n && rounds++ < 100000) {
		int k = io->ops->reap(io, cqe, 16, 1);

		if (k < 0) {
			T_EXPECT(0, "%s: %s: reap: %d", what, step, k);
			return -1;
		}
		for (int j = 0; j < k; j++) {
			uint64_t i = cqe[j].tag - TAG_BASE;

			if (cqe[j].tag < TAG_BASE || i >= n) {
				T_EXPECT(0, "%s: %s: unknown tag %#llx", what, step,
					 (unsigned long long)cqe[j].tag);
				ok = 0;
				continue;
			}
			if (ops[i].seen++) {
				T_EXPECT(0, "%s: %s: tag %llu completed twice", what,
					 step, (unsigned long long)i);
				ok = 0;
			}
			ops[i].res = cqe[j].res;
			got++;
		}
	}
	T_EXPECT(got == n, "%s: %s: %u of %u completions", what, step, got, n);
	T_EXPECT(io->inflight == 0, "%s: %s: inflight %u at the end", what,
		 step, io->inflight);
	/* nothing more, and no waiting for it */
	T_EXPECT(io->ops->reap(io, cqe, 16, 0) == 0, "%s: %s: extra completion",
		 what, step);
	T_EXPECT(io->ops->reap(io, cqe, 16, 1) == 0,
		 "%s: %s: extra completion (wait)", what, step);
	for (unsigned int i = 0; i < n; i++)
		if (ops[i].seen && ops[i].res != ops[i].want) {
			T_EXPECT(0, "%s: %s: op %u (%s %u bytes at %llu): %d, want %d",
				 what, step, i,
				 ops[i].op == PXFER_IO_READ ? "read" : "write",
				 ops[i].len, (unsigned long long)ops[i].off,
				 ops[i].res, ops[i].want);
			ok = 0;
		}
	return ok && got == n ? 0 : -1;
}

/* ---- the cases ---------------------------------------------------------- */

static const struct {
	uint64_t off;
	uint32_t len;
	uint32_t boff;
} places[] = {
	{ 0, 4096, 0 },
	{ 12 * KiB + 17, 5000, 0 },
	{ 1 * MiB - 100, 200, 100 },			/* mid-slot buffer */
	{ 3 * GiB, SLOT, 0 },
	{ 4 * GiB - 1000, 8192, 0 },			/* across 4 GiB */
	{ 5 * GiB + 12345, 40000, 24000 },
	{ 17 * GiB + 4096, SLOT - 1, 1 },
	{ 17 * GiB + 200 * KiB, 1, SLOT - 1 },		/* the end: 1 byte */
};
#define NPLACES (sizeof(places) / sizeof(places[0]))
#define FILE_END (17 * GiB + 200 * KiB + 1)

static void case_roundtrip(struct pxfer_io *io, const struct pxfer_ring *r,
			   int fd)
{
	struct op ops[NPLACES];

	/* write from slot i (the pattern of the file offset) */
	for (unsigned int i = 0; i < NPLACES; i++) {
		uint8_t *b = pxfer_ring_slot(r, i % NSLOTS) + places[i].boff;

		for (uint32_t k = 0; k < places[i].len; k++)
			b[k] = pat(places[i].off + k);
		ops[i] = (struct op){ .op = PXFER_IO_WRITE, .fd = fd,
				      .slot = i % NSLOTS, .boff = places[i].boff,
				      .len = places[i].len,
				      .off = places[i].off,
				      .want = places[i].len };
	}
	/* NPLACES == NSLOTS: each write has its own slot */
	run(io, r, ops, NPLACES, "write");
	T_EXPECT(lseek(fd, 0, SEEK_END) == (off_t)FILE_END,
		 "%s: file size %lld", what, (long long)lseek(fd, 0, SEEK_END));

	/* read back into other slots, cleared first */
	memset(r->base, 0, r->bytes);
	for (unsigned int i = 0; i < NPLACES; i++) {
		ops[i].op = PXFER_IO_READ;
		ops[i].slot = (i + 3) % NSLOTS;
	}
	if (!run(io, r, ops, NPLACES, "read back")) {
		for (unsigned int i = 0; i < NPLACES; i++) {
			const uint8_t *b = pxfer_ring_slot(r, ops[i].slot) +
					   places[i].boff;
			uint32_t bad = 0;

			for (uint32_t k = 0; k < places[i].len; k++)
				bad += b[k] != pat(places[i].off + k);
			T_EXPECT(!bad, "%s: %u bytes differ at %llu", what, bad,
				 (unsigned long long)places[i].off);
			/* the rest of the slot untouched */
			if (places[i].boff)
				T_EXPECT(b[-1] == 0, "%s: read before its buffer",
					 what);
			if (places[i].boff + places[i].len < SLOT)
				T_EXPECT(b[places[i].len] == 0,
					 "%s: read past its length", what);
		}
	}
}

static void case_short(struct pxfer_io *io, const struct pxfer_ring *r, int fd)
{
	struct op ops[3] = {
		/* 100 bytes left before the end */
		{ .op = PXFER_IO_READ, .fd = fd, .slot = 0, .len = 8192,
		  .off = FILE_END - 100, .want = 100 },
		/* at the end */
		{ .op = PXFER_IO_READ, .fd = fd, .slot = 1, .len = 4096,
		  .off = FILE_END, .want = 0 },
		/* far past it */
		{ .op = PXFER_IO_READ, .fd = fd, .slot = 2, .len = 4096,
		  .off = 100 * GiB, .want = 0 },
	};
	uint8_t *b = pxfer_ring_slot(r, 0);
	uint32_t bad = 0;

	memset(r->base, 0, r->bytes);
	if (run(io, r, ops, 3, "short reads"))
		return;
	/* the last 100 bytes: 99 holes (zeros) then the byte written */
	for (int k = 0; k < 99; k++)
		bad += b[k] != 0;
	T_EXPECT(!bad && b[99] == pat(FILE_END - 1),
		 "%s: short read content (%u bad, last %#x)", what, bad, b[99]);
}

static void case_fsize(struct pxfer_io *io, const struct pxfer_ring *r)
{
	const uint64_t lim = 6 * GiB + 1000;
	struct rlimit old, nl;
	struct op ops[2];
	int fd = t_tmpfile(tmpdir);

	if (getrlimit(RLIMIT_FSIZE, &old) || (old.rlim_max != RLIM_INFINITY &&
					      old.rlim_max < lim)) {
		printf("%s: short write: SKIPPED, cannot set RLIMIT_FSIZE\n",
		       what);
		close(fd);
		return;
	}
	nl.rlim_cur = lim;
	nl.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &nl)) {
		printf("%s: short write: SKIPPED, setrlimit: %s\n", what,
		       strerror(errno));
		close(fd);
		return;
	}
	ops[0] = (struct op){ .op = PXFER_IO_WRITE, .fd = fd, .slot = 4,
			      .len = 4096, .off = lim - 1000, .want = 1000 };
	ops[1] = (struct op){ .op = PXFER_IO_WRITE, .fd = fd, .slot = 5,
			      .len = 4096, .off = lim + 4096, .want = -EFBIG };
	run(io, r, ops, 2, "writes at RLIMIT_FSIZE");
	setrlimit(RLIMIT_FSIZE, &old);
	close(fd);
}

static void case_errors(struct pxfer_io *io, const struct pxfer_ring *r,
			int fd)
{
	int wfd = reopen(fd, O_WRONLY), rfd = reopen(fd, O_RDONLY);
	int dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int closed = reopen(fd, O_RDONLY);
	struct op ops[6];

	close(closed);		/* a descriptor number that is not open */
	ops[0] = (struct op){ .op = PXFER_IO_READ, .fd = wfd, .slot = 0,
			      .len = 4096, .off = 0, .want = -EBADF };
	ops[1] = (struct op){ .op = PXFER_IO_WRITE, .fd = rfd, .slot = 1,
			      .len = 4096, .off = 0, .want = -EBADF };
	ops[2] = (struct op){ .op = PXFER_IO_READ, .fd = closed, .slot = 2,
			      .len = 4096, .off = 0, .want = -EBADF };
	ops[3] = (struct op){ .op = PXFER_IO_READ, .fd = dfd, .slot = 3,
			      .len = 4096, .off = 0, .want = -EISDIR };
	/* the good ones next to them still work */
	ops[4] = (struct op){ .op = PXFER_IO_READ, .fd = rfd, .slot = 4,
			      .len = 4096, .off = 0, .want = 4096 };
	ops[5] = (struct op){ .op = PXFER_IO_WRITE, .fd = wfd, .slot = 5,
			      .len = 4096, .off = 8 * GiB, .want = 4096 };
	memset(pxfer_ring_slot(r, 5), 0x5a, 4096);
	run(io, r, ops, 6, "errors");
	close(wfd);
	close(rfd);
	if (dfd >= 0)
		close(dfd);
}

/* more operations than the queue depth, all prepped before one submit */
static void case_many(struct pxfer_io *io, const struct pxfer_ring *r, int fd)
{
	enum { N = 100 };
	struct op *ops = calloc(N, sizeof(*ops));

	if (!ops)
		abort();
	/* 4 KiB pieces: slot i/16, piece i%16 */
	for (unsigned int i = 0; i < N; i++) {
		uint8_t *b;

		ops[i] = (struct op){ .op = PXFER_IO_WRITE, .fd = fd,
				      .slot = (i / 16) % NSLOTS,
				      .boff = (i % 16) * 4096, .len = 4096,
				      .off = 9 * GiB + (uint64_t)i * 4096,
				      .want = 4096 };
		b = pxfer_ring_slot(r, ops[i].slot) + ops[i].boff;
		for (uint32_t k = 0; k < 4096; k++)
			b[k] = pat(ops[i].off + k);
	}
	if (run(io, r, ops, N, "100 writes"))
		goto out;
	memset(r->base, 0, r->bytes);
	for (unsigned int i = 0; i < N; i++)
		ops[i].op = PXFER_IO_READ;
	if (run(io, r, ops, N, "100 reads"))
		goto out;
	for (unsigned int i = 0; i < N; i++) {
		const uint8_t *b = pxfer_ring_slot(r, ops[i].slot) + ops[i].boff;
		uint32_t bad = 0;

		for (uint32_t k = 0; k < 4096; k++)
			bad += b[k] != pat(ops[i].off + k);
		T_EXPECT(!bad, "%s: piece %u: %u bytes differ", what, i, bad);
	}
out:
	free(ops);
}

/* a completion makes event_fd readable (when there is one) */
static void case_event(struct pxfer_io *io, const struct pxfer_ring *r, int fd)
{
	struct pollfd p = { .fd = io->event_fd, .events = POLLIN };
	struct pxfer_io_cqe cqe;
	int ret, n = 0;

	if (io->event_fd < 0)
		return;
	ret = io->ops->prep(io, PXFER_IO_READ, fd, 0, pxfer_ring_slot(r, 0),
			    4096, 0, 77);
	T_EXPECT(ret == 0, "%s: prep: %d", what, ret);
	T_EXPECT(io->ops->submit(io) == 0, "%s: submit", what);
	T_EXPECT(poll(&p, 1, 5000) == 1, "%s: event_fd not readable after a completion",
		 what);
	for (int i = 0; i < 1000 && !n; i++)
		n = io->ops->reap(io, &cqe, 1, 1);
	T_EXPECT(n == 1 && cqe.tag == 77 && cqe.res == 4096,
		 "%s: event completion: %d, tag %llu, res %d", what, n,
		 (unsigned long long)cqe.tag, cqe.res);
	T_EXPECT(io->inflight == 0, "%s: inflight %u", what, io->inflight);
}

/* ---- driver --------------------------------------------------------------- */

static int one_backend(const char *kind, size_t hdr)
{
	const struct pxfer_io_ops *want = !strcmp(kind, "sync") ?
		&pxfer_io_sync_ops : &pxfer_io_uring_ops;
	struct pxfer_ring r;
	struct pxfer_io *io = NULL;
	int fd, ret;

	snprintf(what, sizeof(what), "%s (slot header %zu)", kind, hdr);
	ret = pxfer_ring_init(&r, NSLOTS, SLOT, hdr);
	T_EXPECT(ret == 0, "%s: ring: %d", what, ret);
	if (ret)
		return 0;
	ret = pxfer_io_create(kind, &r, 8, &io);
	if (ret && !strcmp(kind, "uring")) {
		printf("%s: SKIPPED, io_uring unavailable: %s\n", what,
		       strerror(-ret));
		pxfer_ring_release(&r);
		return 0;
	}
	T_EXPECT(ret == 0, "%s: create: %d", what, ret);
	if (ret) {
		pxfer_ring_release(&r);
		return 0;
	}
	T_EXPECT(io->ops == want, "%s: back-end %s", what, io->ops->name);
	T_EXPECT(io->inflight == 0, "%s: inflight at start", what);
	if (want == &pxfer_io_sync_ops)
		T_EXPECT(io->event_fd == -1, "%s: event_fd %d", what,
			 io->event_fd);

	fd = t_tmpfile(tmpdir);
	case_roundtrip(io, &r, fd);
	case_short(io, &r, fd);
	case_errors(io, &r, fd);
	case_many(io, &r, fd);
	case_event(io, &r, fd);
	case_fsize(io, &r);
	close(fd);
	pxfer_io_destroy(io);
	pxfer_ring_release(&r);
	printf("%s: done\n", what);
	return 1;
}

/* ---- io_uring refused ------------------------------------------------------ */

#ifdef __NR_io_uring_setup
/* in a child: refuse io_uring_setup with EPERM, then create back-ends */
static void refused_child(int wfd)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };
	struct pxfer_ring r;
	struct pxfer_io *io = NULL;
	int res[3] = { 1, 1, 0 };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		_exit(T_SKIP);
	if (pxfer_ring_init(&r, 2, 4096, 0))
		_exit(2);
	res[0] = pxfer_io_create("uring", &r, 8, &io);
	if (!res[0])
		pxfer_io_destroy(io);
	io = NULL;
	res[1] = pxfer_io_create("auto", &r, 8, &io);
	if (!res[1]) {
		res[2] = io->ops == &pxfer_io_sync_ops;
		pxfer_io_destroy(io);
	}
	pxfer_ring_release(&r);
	if (write(wfd, res, sizeof(res)) != sizeof(res))
		_exit(2);
	_exit(0);
}
#endif

static void test_refused(void)
{
#ifdef __NR_io_uring_setup
	int p[2], st, res[3];
	ssize_t n;
	pid_t pid;

	if (pipe(p)) {
		perror("pipe");
		exit(1);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (!pid) {
		close(p[0]);
		refused_child(p[1]);
	}
	close(p[1]);
	n = read(p[0], res, sizeof(res));
	close(p[0]);
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == T_SKIP) {
		printf("io_uring refused: SKIPPED, no seccomp filters here\n");
		return;
	}
	T_EXPECT(WIFEXITED(st) && !WEXITSTATUS(st) && n == sizeof(res),
		 "io_uring refused: the child failed (status %#x)", st);
	if (n != sizeof(res))
		return;
	T_EXPECT(res[0] == -ENOSYS,
		 "io_uring refused: create(\"uring\") gave %d (%s), io.h says -ENOSYS",
		 res[0], strerror(-res[0]));
	T_EXPECT(res[1] == 0 && res[2],
		 "io_uring refused: create(\"auto\") gave %d, sync back-end %d",
		 res[1], res[2]);
#else
	printf("io_uring refused: SKIPPED, no io_uring_setup here\n");
#endif
}

static void on_alarm(int sig)
{
	static const char msg[] = "an I/O did not complete: gave up\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(1);
}

int main(void)
{
	struct pxfer_ring r;
	struct pxfer_io *io = NULL;
	int ran = 0;

	tmpdir = getenv("TMPDIR");
	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	signal(SIGALRM, on_alarm);
	alarm(30);

	/* kinds */
	if (!pxfer_ring_init(&r, 1, 4096, 0)) {
		T_EXPECT(pxfer_io_create("bogus", &r, 8, &io) == -EINVAL,
			 "unknown kind");
		T_EXPECT(pxfer_io_create("auto", &r, 8, &io) == 0 && io,
			 "auto");
		pxfer_io_destroy(io);
		pxfer_io_destroy(NULL);
		pxfer_ring_release(&r);
	}

	ran += one_backend("uring", 0);
	ran += one_backend("uring", 4096);
	ran += one_backend("sync", 0);
	ran += one_backend("sync", 4096);
	test_refused();
	alarm(0);
	if (!ran && !t_failures)
		return T_SKIP;
	return t_result();
}
