// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>	/* the XXH3 entry points become dispatchers */
#else
#include <xxhash.h>
#endif

#include "core/digest.h"
#include "core/sys.h"

/* what one pread brings in, and the alignment O_DIRECT wants of it */
#define DIGEST_BUF	PXFER_DIGEST_BUF
#define DIGEST_ALIGN	4096u

/*
 * PXFER_CHECK_DELAY_MS=N: sleep N ms (at most 10 s) after each read of
 * held or compared data, so that the tests can make a check that reads
 * 40 MiB last as long as one that reads 200 GB (test/e2e/stall.sh).
 * Looked up at each read: one getenv per MiB is nothing.
 */
static long check_delay_ms(void)
{
	const char *v = getenv("PXFER_CHECK_DELAY_MS");
	long d = v ? strtol(v, NULL, 10) : 0;

	return d > 0 && d <= 10000 ? d : 0;
}

static void check_delay(void)
{
	long d = check_delay_ms();

	if (d)
		nanosleep(&(struct timespec){ .tv_sec = d / 1000,
					      .tv_nsec = d % 1000 * 1000000 }, NULL);
}

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
	int ret = pxfer_pread_full(fd, buf, len, off);

	if (!ret)
		check_delay();
	return ret;
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
	if (!st || XXH3_128bits_reset_withSeed(st, off) != XXH_OK)
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

int pxfer_digest_read(int fd, void *buf, uint64_t off, uint64_t len,
		      struct pxfer_digest *h)
{
	XXH3_state_t *st = NULL;
	int ret;

	if (off + len < off)
		return -EINVAL;
	if (len > DIGEST_BUF) {
		st = XXH3_createState();
		if (!st)
			return -ENOMEM;
	}
	ret = digest_record(fd, buf, st, off, len, h);
	XXH3_freeState(st);
	return ret;
}

int pxfer_digest_runs(int fd, const struct pxfer_held_run *r, unsigned int n,
		      struct pxfer_digest *out)
{
	struct pxfer_digest sum = { 0, 0 }, h;
	XXH3_state_t *st = XXH3_createState();
	uint8_t *buf = malloc(DIGEST_BUF);
	int ret = 0;

	if (!st || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < n && !ret; i++) {
		uint64_t end = r[i].off + r[i].len;

		if (!r[i].len)
			continue;
		if (!r[i].unit || end < r[i].off) {
			ret = -EINVAL;
			break;
		}
		for (uint64_t off = r[i].off; off < end && !ret; off += r[i].unit) {
			uint64_t len = end - off < r[i].unit ? end - off : r[i].unit;

			ret = digest_record(fd, buf, st, off, len, &h);
			if (!ret)
				pxfer_digest_add(&sum, &h);
			if (end - off <= r[i].unit)
				break;	/* the last record: off would wrap */
		}
	}
	if (!ret)
		*out = sum;
out:
	free(buf);
	XXH3_freeState(st);
	return ret;
}

int pxfer_digest_whole(int fd, uint64_t size, void *buf,
		       atomic_uint_fast64_t *count, const atomic_int *stop,
		       struct pxfer_digest *out)
{
	XXH3_state_t *st = XXH3_createState();
	uint64_t off = 0;
	int ret = 0;

	if (!st)
		ret = -ENOMEM;
	else
		XXH3_128bits_reset(st);
	while (!ret && off < size) {
		size_t n = size - off < DIGEST_BUF ? (size_t)(size - off) : DIGEST_BUF;

		if (stop && atomic_load_explicit(stop, memory_order_relaxed)) {
			ret = -ECANCELED;
			break;
		}
		ret = read_full(fd, buf, n, off);
		if (ret)
			break;
		XXH3_128bits_update(st, buf, n);
		off += n;
		if (count)
			atomic_fetch_add_explicit(count, n, memory_order_relaxed);
	}
	if (!ret)
		from_xxh(out, XXH3_128bits_digest(st));
	else if (count)
		atomic_fetch_add_explicit(count, size - off, memory_order_relaxed);
	XXH3_freeState(st);
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
		check_delay();
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
