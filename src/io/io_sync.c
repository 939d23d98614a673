// SPDX-License-Identifier: MIT
/*
 * The fallback back-end: pread/pwrite done at submit time, completions
 * handed back by reap. Same contract as io_uring, so the engine has one
 * code path.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/container_of.h"
#include "io/io.h"

struct sync_op {
	enum pxfer_io_op op;
	int fd;
	void *buf;
	uint32_t len;
	uint64_t off;
	struct pxfer_io_cqe cqe;
};

struct sync_io {
	struct pxfer_io io;
	struct sync_op *ops;
	unsigned int cap, queued, done, head;
};

static inline struct sync_io *to_sync(struct pxfer_io *io)
{
	return container_of(io, struct sync_io, io);
}

static struct pxfer_io *sync_alloc(void)
{
	struct sync_io *s = calloc(1, sizeof(*s));

	return s ? &s->io : NULL;
}

static void sync_free(struct pxfer_io *io)
{
	free(to_sync(io));
}

static int sync_init(struct pxfer_io *io, const struct pxfer_ring *ring,
		     unsigned int depth)
{
	struct sync_io *s = to_sync(io);

	s->cap = depth < 8 ? 8 : depth;
	s->ops = calloc(s->cap, sizeof(*s->ops));
	return s->ops ? 0 : -ENOMEM;
}

static void sync_exit(struct pxfer_io *io)
{
	free(to_sync(io)->ops);
}

static int sync_grow(struct sync_io *s)
{
	struct sync_op *n = realloc(s->ops, 2 * s->cap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	s->ops = n;
	s->cap *= 2;
	return 0;
}

static int sync_prep(struct pxfer_io *io, enum pxfer_io_op op, int fd,
		     unsigned int slot, void *buf, uint32_t len, uint64_t off,
		     uint64_t tag)
{
	struct sync_io *s = to_sync(io);
	struct sync_op *o;

	/* completions are reaped in order; compact when the head is empty */
	if (s->head == s->queued) {
		s->head = s->queued = s->done = 0;
	}
	if (s->queued == s->cap && sync_grow(s))
		return -ENOMEM;
	o = &s->ops[s->queued++];
	o->op = op;
	o->fd = fd;
	o->buf = buf;
	o->len = len;
	o->off = off;
	o->cqe.tag = tag;
	io->inflight++;
	return 0;
}

static int sync_submit(struct pxfer_io *io)
{
	struct sync_io *s = to_sync(io);

	for (; s->done < s->queued; s->done++) {
		struct sync_op *o = &s->ops[s->done];
		ssize_t r;

		do {
			if (o->op == PXFER_IO_READ)
				r = pread(o->fd, o->buf, o->len, o->off);
			else
				r = pwrite(o->fd, o->buf, o->len, o->off);
		} while (r < 0 && errno == EINTR);
		o->cqe.res = r < 0 ? -errno : (int)r;
	}
	return 0;
}

static int sync_reap(struct pxfer_io *io, struct pxfer_io_cqe *cqe,
		     unsigned int max, int wait)
{
	struct sync_io *s = to_sync(io);
	unsigned int n = 0;

	while (n < max && s->head < s->done) {
		cqe[n++] = s->ops[s->head++].cqe;
		io->inflight--;
	}
	return n;
}

const struct pxfer_io_ops pxfer_io_sync_ops = {
	.name = "pread/pwrite",
	.alloc = sync_alloc,
	.free = sync_free,
	.init = sync_init,
	.exit = sync_exit,
	.prep = sync_prep,
	.submit = sync_submit,
	.reap = sync_reap,
};
