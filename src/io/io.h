/* SPDX-License-Identifier: MIT */
/*
 * File I/O back-ends behind an ops table: io_uring (slots registered as
 * fixed buffers, READ_FIXED / WRITE_FIXED, several chunks in flight) and a
 * synchronous pread/pwrite fallback for kernels or sandboxes without
 * io_uring. io_uring is touched only in io_uring.c.
 *
 * A back-end queues operations with prep, starts them with submit and
 * reports them through reap. Each completion carries the caller's tag and
 * the result (bytes, or a negative errno); short transfers are the
 * caller's to resubmit.
 */
#ifndef PXFER_IO_H
#define PXFER_IO_H

#include <stdint.h>
#include "core/ring.h"

enum pxfer_io_op {
	PXFER_IO_READ,
	PXFER_IO_WRITE,
};

struct pxfer_io_cqe {
	uint64_t tag;
	int res;
};

struct pxfer_io;

struct pxfer_io_ops {
	const char *name;
	/* the back-end's object, zeroed, returned as its base; and its end */
	struct pxfer_io *(*alloc)(void);
	void (*free)(struct pxfer_io *io);
	int (*init)(struct pxfer_io *io, const struct pxfer_ring *ring,
		    unsigned int depth);
	void (*exit)(struct pxfer_io *io);
	/* @buf lies inside slot @slot of the ring given to init */
	int (*prep)(struct pxfer_io *io, enum pxfer_io_op op, int fd,
		    unsigned int slot, void *buf, uint32_t len, uint64_t off,
		    uint64_t tag);
	int (*submit)(struct pxfer_io *io);
	/* up to @max completions; waits for one if @wait and none is ready */
	int (*reap)(struct pxfer_io *io, struct pxfer_io_cqe *cqe,
		    unsigned int max, int wait);
};

struct pxfer_io {
	const struct pxfer_io_ops *ops;
	int event_fd;		/* readable when completions wait; -1: none */
	unsigned int inflight;	/* prepped and not yet reaped */
};

/*
 * pxfer_io_create - make a back-end for @ring. @kind is "auto" (io_uring,
 * else the fallback with one warning per process), "uring" or "sync".
 * Returns 0 or -errno (-ENOSYS: io_uring asked for and unavailable).
 */
int pxfer_io_create(const char *kind, const struct pxfer_ring *ring,
		    unsigned int depth, struct pxfer_io **out);
void pxfer_io_destroy(struct pxfer_io *io);

/*
 * pxfer_io_uring_probe - whether an io_uring can be set up here: a ring
 * of a few entries is made and taken down at once. 0, or the negative
 * errno io_uring_setup gave (-ENOSYS: no io_uring in the kernel, or a
 * seccomp filter; -EPERM: sysctl kernel.io_uring_disabled, or a filter).
 */
int pxfer_io_uring_probe(void);

extern const struct pxfer_io_ops pxfer_io_uring_ops;
extern const struct pxfer_io_ops pxfer_io_sync_ops;

#endif
