// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>	/* the XXH3 entry points become dispatchers */
#else
#include <xxhash.h>
#endif

#include "core/digest.h"
#include "core/hash.h"

/* what one pread brings in, and the alignment O_DIRECT wants of it */
#define DIGEST_BUF	(1u << 20)
#define DIGEST_ALIGN	4096u

static void from_xxh(struct pxfer_digest *out, XXH128_hash_t h)
{
	out->lo = h.low64;
	out->hi = h.high64;
}

void pxfer_digest_range(struct pxfer_digest *out, const void *buf, size_t len,
			uint64_t off)
{
	from_xxh(out, XXH3_128bits_withSeed(buf, len, off));
}

/* @len bytes of @fd at @off into @buf: 0, -ENODATA at the file's end */
static int read_full(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		buf += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* the hash of the record of @len bytes at @off, read from @fd */
static int digest_record(int fd, uint8_t *buf, XXH3_state_t *st, uint64_t off,
			 uint64_t len, struct pxfer_digest *h)
{
	uint64_t done = 0;
	int ret;

	if (len <= DIGEST_BUF) {
		ret = read_full(fd, buf, len, off);
		if (!ret)
			pxfer_digest_range(h, buf, len, off);
		return ret;
	}
	if (XXH3_128bits_reset_withSeed(st, off) != XXH_OK)
		return -EINVAL;
	while (done < len) {
		size_t piece = len - done < DIGEST_BUF ? len - done : DIGEST_BUF;

		ret = read_full(fd, buf, piece, off + done);
		if (ret)
			return ret;
		XXH3_128bits_update(st, buf, piece);
		done += piece;
	}
	from_xxh(h, XXH3_128bits_digest(st));
	return 0;
}

struct mapped {
	struct pxfer_digest *h;
	uint64_t off;
};

static int hash_mapped(void *arg, const void *p, size_t len)
{
	struct mapped *m = arg;

	pxfer_digest_range(m->h, p, len, m->off);
	return 0;
}

/*
 * The same, hashed where the page cache holds it (a read-only mapping,
 * no copy); read into @buf where the file cannot be mapped.
 */
static int digest_record_any(int fd, uint8_t *buf, XXH3_state_t *st,
			     uint64_t off, uint64_t len, struct pxfer_digest *h)
{
	struct mapped m = { h, off };
	int ret = -EINVAL;

	if (len <= SIZE_MAX)
		ret = pxfer_file_apply(fd, off, len, hash_mapped, &m);
	if (ret == 0 || ret == -ENODATA)
		return ret;
	return digest_record(fd, buf, st, off, len, h);
}

/*
 * The records of runs @r[0..@n), dealt out to @nt workers: worker @k
 * takes every @nt-th one, from the @k-th. The digest is a sum, so the
 * order does not matter.
 */
struct runs_job {
	int fd;
	const struct pxfer_run *r;
	unsigned int n, nt, k;
	struct pxfer_digest sum;
	int ret;
};

static void *runs_work(void *arg)
{
	struct runs_job *j = arg;
	struct pxfer_digest h;
	XXH3_state_t *st = XXH3_createState();
	uint8_t *buf = malloc(DIGEST_BUF);
	uint64_t idx = 0;

	j->ret = st && buf ? 0 : -ENOMEM;
	for (unsigned int i = 0; i < j->n && !j->ret; i++) {
		uint64_t end = j->r[i].off + j->r[i].len;

		if (!j->r[i].len)
			continue;
		if (!j->r[i].unit || end < j->r[i].off) {
			j->ret = -EINVAL;
			break;
		}
		for (uint64_t off = j->r[i].off; off < end && !j->ret; off += j->r[i].unit) {
			uint64_t len = end - off < j->r[i].unit ? end - off : j->r[i].unit;

			if (idx++ % j->nt == j->k) {
				j->ret = digest_record_any(j->fd, buf, st, off, len, &h);
				if (!j->ret)
					pxfer_digest_add(&j->sum, &h);
			}
			if (end - off <= j->r[i].unit)
				break;	/* the last record: off would wrap */
		}
	}
	free(buf);
	XXH3_freeState(st);
	return NULL;
}

/* more than this many bytes are hashed by more than one thread */
#define DIGEST_SPLIT	(64ull << 20)
#define DIGEST_THREADS	4

int pxfer_digest_runs(int fd, const struct pxfer_run *r, unsigned int n,
		      struct pxfer_digest *out)
{
	struct runs_job job[DIGEST_THREADS];
	pthread_t tid[DIGEST_THREADS];
	struct pxfer_digest sum = { 0, 0 };
	unsigned int nt = 1, started = 1;
	uint64_t bytes = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int ret = 0;

	for (unsigned int i = 0; i < n; i++)
		bytes += r[i].len;
	/* a held file is read back as fast as the machine can: as many
	 * threads as there are CPUs, up to DIGEST_THREADS */
	if (bytes > DIGEST_SPLIT && cpus > 1)
		nt = cpus < DIGEST_THREADS ? cpus : DIGEST_THREADS;
	for (unsigned int k = 0; k < nt; k++)
		job[k] = (struct runs_job){ .fd = fd, .r = r, .n = n, .nt = nt, .k = k };
	for (; started < nt; started++)
		if (pthread_create(&tid[started], NULL, runs_work, &job[started]))
			break;
	/* the workers that did not start are done here */
	for (unsigned int k = started; k < nt; k++) {
		job[k].nt = nt;
		runs_work(&job[k]);
	}
	runs_work(&job[0]);
	for (unsigned int k = 1; k < started; k++)
		pthread_join(tid[k], NULL);
	for (unsigned int k = 0; k < nt; k++) {
		if (job[k].ret && !ret)
			ret = job[k].ret;
		pxfer_digest_add(&sum, &job[k].sum);
	}
	if (!ret)
		*out = sum;
	return ret;
}

/*
 * O_DIRECT on @fd: its flags before, to restore, or -1 when the file
 * system refuses it and the pages it caches are dropped instead.
 */
static int direct_on(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags >= 0 && !fcntl(fd, F_SETFL, flags | O_DIRECT))
		return flags;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	return -1;
}

static void direct_off(int fd, int *flags, int drop)
{
	if (*flags < 0)
		return;
	fcntl(fd, F_SETFL, *flags);
	*flags = -1;
	if (drop)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

int pxfer_digest_file(int fd, uint64_t size, int direct,
		      struct pxfer_digest *out)
{
	XXH3_state_t *st = XXH3_createState();
	int flags = -1, ret = 0;
	uint64_t off = 0;
	void *buf = NULL;

	if (!st || posix_memalign(&buf, DIGEST_ALIGN, DIGEST_BUF)) {
		ret = -ENOMEM;
		goto out;
	}
	XXH3_128bits_reset(st);
	if (direct)
		flags = direct_on(fd);
	while (off < size) {
		ssize_t n = pread(fd, buf, DIGEST_BUF, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		/* some file systems take the flag and refuse the read */
		if (n < 0 && errno == EINVAL && flags >= 0) {
			direct_off(fd, &flags, 1);
			continue;
		}
		if (n <= 0) {
			ret = n ? -errno : -ENODATA;
			break;
		}
		if ((uint64_t)n > size - off)
			n = (ssize_t)(size - off);
		XXH3_128bits_update(st, buf, (size_t)n);
		off += (uint64_t)n;
		/* a short read off the alignment: O_DIRECT cannot go on */
		if (off % DIGEST_ALIGN)
			direct_off(fd, &flags, 0);
	}
	direct_off(fd, &flags, 0);
	if (!ret)
		from_xxh(out, XXH3_128bits_digest(st));
out:
	free(buf);
	XXH3_freeState(st);
	return ret;
}
