// SPDX-License-Identifier: MIT
/*
 * The io_uring back-end. The ring's slots are registered as fixed buffers
 * (one per slot) so the kernel pins them once instead of on every read and
 * write. A slot is registered when it is first used (a sparse table, then
 * one update per slot): registering pins, and so faults in, every page of
 * it, and a transfer that never uses a slot for io_uring (small files, read
 * and written at once; large chunks sent with sendfile) should not pay to
 * clear and pin 32 MiB. Kernels without sparse tables (before 5.19), and
 * rings that rdma pins whole anyway, get every slot registered at the
 * start. Registration counts against
 * RLIMIT_MEMLOCK for unprivileged users; if it fails we keep io_uring with
 * ordinary READ/WRITE rather than give up asynchronous I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>
#include <liburing.h>

#include "core/container_of.h"
#include "io/io.h"
#include "core/log.h"
#include "core/tsan.h"

enum { SLOT_UNSET, SLOT_FIXED, SLOT_PLAIN };

struct uring_io {
	struct pxfer_io io;
	struct io_uring ring;
	const struct pxfer_ring *slots;
	uint8_t *state;		/* per slot: SLOT_*, registered on first use */
	unsigned int queued;	/* prepped, not submitted */
};

static inline struct uring_io *to_uring(struct pxfer_io *io)
{
	return container_of(io, struct uring_io, io);
}

static struct pxfer_io *uring_alloc(void)
{
	struct uring_io *u = calloc(1, sizeof(*u));

	return u ? &u->io : NULL;
}

static void uring_free(struct pxfer_io *io)
{
	free(to_uring(io));
}

/* all slots at once, where the kernel has no sparse tables */
static int register_all(struct uring_io *u, const struct pxfer_ring *ring)
{
	struct iovec *iov = calloc(ring->nslots, sizeof(*iov));
	int ret;

	if (!iov)
		return -ENOMEM;
	for (unsigned int i = 0; i < ring->nslots; i++) {
		iov[i].iov_base = pxfer_ring_slot(ring, i);
		iov[i].iov_len = ring->slot_size;
	}
	ret = io_uring_register_buffers(&u->ring, iov, ring->nslots);
	free(iov);
	return ret;
}

static int register_slots(struct uring_io *u, const struct pxfer_ring *ring)
{
	uint8_t first = SLOT_UNSET;
	int ret = -1;

	/* a ring pinned whole anyway gains nothing from waiting */
	if (!ring->pinned)
		ret = io_uring_register_buffers_sparse(&u->ring, ring->nslots);
	if (ret) {
		ret = register_all(u, ring);
		first = ret ? SLOT_PLAIN : SLOT_FIXED;
	}
	memset(u->state, first, ring->nslots);
	return ret;
}

/* register @slot on its first use; whether it can be used as fixed */
static int slot_fixed(struct uring_io *u, unsigned int slot)
{
	struct iovec iov;
	int ret;

	if (slot >= u->slots->nslots)
		return 0;
	if (u->state[slot] != SLOT_UNSET)
		return u->state[slot] == SLOT_FIXED;
	iov.iov_base = pxfer_ring_slot(u->slots, slot);
	iov.iov_len = u->slots->slot_size;
	ret = io_uring_register_buffers_update_tag(&u->ring, slot, &iov, NULL, 1);
	if (ret < 0)
		pxfer_verbose("io_uring fixed buffer for slot %u unavailable (%s); using plain reads and writes for it",
			slot, strerror(-ret));
	u->state[slot] = ret == 1 ? SLOT_FIXED : SLOT_PLAIN;
	return u->state[slot] == SLOT_FIXED;
}

/*
 * liburing maps a ring's queues with its own system calls, which TSan
 * does not intercept: when one ring is unmapped and the next mapped at
 * the same address (calls and sessions come and go in one process), the
 * accesses to the old one look like races with the new one. Each ring's
 * teardown releases on this address and each one's setup acquires it, so
 * all that was done with the old rings comes before the new one.
 */
static const char ring_handoff;

static int uring_init(struct pxfer_io *io, const struct pxfer_ring *ring,
		      unsigned int depth)
{
	struct uring_io *u = to_uring(io);
	int ret, efd;

	if (depth < 8)
		depth = 8;
	if (depth > 4096)
		depth = 4096;
	ret = io_uring_queue_init(depth, &u->ring, 0);
	if (ret)
		return ret;
	pxfer_tsan_acquire(&ring_handoff);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0) {
		ret = -errno;
		goto out_exit;
	}
	ret = io_uring_register_eventfd(&u->ring, efd);
	if (ret)
		goto out_close;
	u->slots = ring;
	u->state = malloc(ring->nslots);
	if (!u->state) {
		ret = -ENOMEM;
		goto out_close;
	}
	ret = register_slots(u, ring);
	if (ret)
		pxfer_verbose("io_uring fixed buffers unavailable (%s); using plain reads and writes",
			strerror(-ret));
	io->event_fd = efd;
	return 0;

out_close:
	close(efd);
out_exit:
	pxfer_tsan_release(&ring_handoff);
	io_uring_queue_exit(&u->ring);
	return ret;
}

static void uring_exit(struct pxfer_io *io)
{
	struct uring_io *u = to_uring(io);

	pxfer_tsan_release(&ring_handoff);
	io_uring_queue_exit(&u->ring);
	if (io->event_fd >= 0)
		close(io->event_fd);
	free(u->state);
}

static int uring_submit(struct pxfer_io *io)
{
	struct uring_io *u = to_uring(io);
	int ret;

	while (u->queued) {
		ret = io_uring_submit(&u->ring);
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			return ret;
		u->queued -= ret < (int)u->queued ? ret : (int)u->queued;
		if (!ret)
			return -EBUSY;
	}
	return 0;
}

static int uring_prep(struct pxfer_io *io, enum pxfer_io_op op, int fd,
		      unsigned int slot, void *buf, uint32_t len, uint64_t off,
		      uint64_t tag)
{
	struct uring_io *u = to_uring(io);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	int ret, fixed;

	if (!sqe) {
		/* the submission queue is full: start what is queued */
		ret = uring_submit(io);
		if (ret)
			return ret;
		sqe = io_uring_get_sqe(&u->ring);
		if (!sqe)
			return -EBUSY;
	}
	fixed = slot_fixed(u, slot);
	if (fixed && op == PXFER_IO_READ)
		io_uring_prep_read_fixed(sqe, fd, buf, len, off, slot);
	else if (fixed)
		io_uring_prep_write_fixed(sqe, fd, buf, len, off, slot);
	else if (op == PXFER_IO_READ)
		io_uring_prep_read(sqe, fd, buf, len, off);
	else
		io_uring_prep_write(sqe, fd, buf, len, off);
	io_uring_sqe_set_data64(sqe, tag);
	u->queued++;
	io->inflight++;
	return 0;
}

static void drain_eventfd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: already drained */
	}
}

static int uring_reap(struct pxfer_io *io, struct pxfer_io_cqe *cqe,
		      unsigned int max, int wait)
{
	struct uring_io *u = to_uring(io);
	struct io_uring_cqe *c;
	unsigned int n = 0;
	int ret;

	drain_eventfd(io->event_fd);
	while (n < max) {
		if (wait && !n && io->inflight)
			ret = io_uring_wait_cqe(&u->ring, &c);
		else
			ret = io_uring_peek_cqe(&u->ring, &c);
		if (ret == -EINTR)
			continue;
		if (ret == -EAGAIN)
			break;
		if (ret < 0)
			return ret;
		cqe[n].tag = io_uring_cqe_get_data64(c);
		cqe[n].res = c->res;
		io_uring_cqe_seen(&u->ring, c);
		io->inflight--;
		n++;
	}
	return n;
}

const struct pxfer_io_ops pxfer_io_uring_ops = {
	.name = "io_uring",
	.alloc = uring_alloc,
	.free = uring_free,
	.init = uring_init,
	.exit = uring_exit,
	.prep = uring_prep,
	.submit = uring_submit,
	.reap = uring_reap,
};

int pxfer_io_uring_probe(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(4, &ring, 0);

	if (ret)
		return ret;
	pxfer_tsan_acquire(&ring_handoff);
	pxfer_tsan_release(&ring_handoff);
	io_uring_queue_exit(&ring);
	return 0;
}
