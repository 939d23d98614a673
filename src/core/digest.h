/* SPDX-License-Identifier: MIT */
/*
 * Digests of file ranges, for resuming: XXH3-128 of a range seeded with
 * its offset, so that the same bytes at another place hash differently,
 * and the digest of a set of ranges as the sum of their hashes, so that
 * it does not depend on the order in which they arrived. Also XXH3-128
 * of a whole file, for comparing files end to end.
 */
#ifndef PXFER_CORE_DIGEST_H
#define PXFER_CORE_DIGEST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/bytes.h"
#include "core/proto.h"

struct pxfer_digest {
	uint64_t lo, hi;
};

/*
 * A run (struct pxfer_held_run, core/proto.h: what FILE_OK carries):
 * @len bytes from @off, recorded as consecutive records of @unit bytes
 * each, the last one possibly shorter.
 */
/*
 * pxfer_digest_range - XXH3_128bits_withSeed(@buf, @len, @off): the hash
 * of @len bytes that sit at byte @off of a file
 */
void pxfer_digest_range(struct pxfer_digest *out, const void *buf, size_t len,
			uint64_t off);

/*
 * pxfer_digest_add - *@acc += *@h, each half modulo 2^64: the digest of a
 * set of ranges is the sum of their hashes, whatever the order
 */
static inline void pxfer_digest_add(struct pxfer_digest *acc,
				    const struct pxfer_digest *h)
{
	acc->lo += h->lo;
	acc->hi += h->hi;
}

static inline int pxfer_digest_eq(const struct pxfer_digest *a,
				  const struct pxfer_digest *b)
{
	return a->lo == b->lo && a->hi == b->hi;
}

/* the buffer pxfer_digest_read reads into */
#define PXFER_DIGEST_BUF	(1u << 20)

/*
 * pxfer_digest_read - the pxfer_digest_range of the @len bytes at @off of
 * open file @fd, read with pread into @buf (PXFER_DIGEST_BUF bytes); a
 * range longer than that is hashed in pieces. Any thread; several may
 * read one @fd at once. 0, -ENODATA if the file ends before the range,
 * -EINVAL for a range that wraps, or -errno.
 */
int pxfer_digest_read(int fd, void *buf, uint64_t off, uint64_t len,
		      struct pxfer_digest *h);

/*
 * pxfer_digest_runs - the digest of runs @r[0..@n) of open file @fd,
 * recomputed from the file: for each record of each run (@unit bytes
 * from the run's offset, the last one up to the run's end) its
 * pxfer_digest_range, summed. Reads with pread into a buffer of its own;
 * a record longer than that buffer is hashed in pieces (XXH3's streaming
 * form gives the same value). 0, -ENODATA if the file is shorter than a
 * run, -EINVAL for a run of unit 0 or one that wraps, or -errno.
 */
int pxfer_digest_runs(int fd, const struct pxfer_held_run *r, unsigned int n,
		      struct pxfer_digest *out);

/*
 * pxfer_digest_file - XXH3_128bits (seed 0) of the first @size bytes of
 * @fd, read in 1 MiB pieces into an aligned buffer. @direct: read around
 * the page cache, to see what the disk holds rather than what was
 * written: O_DIRECT, set with fcntl on @fd itself and restored after (so
 * no one may do I/O through @fd, or a dup of it, meanwhile); where the
 * file system refuses O_DIRECT, posix_fadvise(POSIX_FADV_DONTNEED) and
 * plain reads, which only drops the pages already written back. 0,
 * -ENODATA if the file is shorter than @size, or -errno.
 */
int pxfer_digest_file(int fd, uint64_t size, int direct,
		      struct pxfer_digest *out);

/*
 * pxfer_digest_whole - pxfer_digest_file's value (XXH3_128bits, seed 0,
 * of the first @size bytes of @fd), read with pread into @buf
 * (PXFER_DIGEST_BUF bytes), for a thread that others watch: each read's
 * length is added to *@count (may be NULL) as it is hashed, and the rest
 * of @size when it fails, so that *@count grows by @size in all; it
 * stops between two reads once *@stop (may be NULL) is set. Any thread.
 * 0, -ENODATA if the file is shorter than @size, -ECANCELED, -ENOMEM or
 * -errno.
 */
int pxfer_digest_whole(int fd, uint64_t size, void *buf,
		       atomic_uint_fast64_t *count, const atomic_int *stop,
		       struct pxfer_digest *out);

/* pxfer_digest_wire - @d as it travels: lo, then hi, each big-endian */
static inline void pxfer_digest_wire(uint8_t out[16], const struct pxfer_digest *d)
{
	pxfer_put_be(out, d->lo, 8);
	pxfer_put_be(out + 8, d->hi, 8);
}

/* pxfer_digest_unwire - the digest that @in carries */
static inline void pxfer_digest_unwire(struct pxfer_digest *d, const uint8_t in[16])
{
	d->lo = pxfer_get_be(in, 8);
	d->hi = pxfer_get_be(in + 8, 8);
}

#endif
