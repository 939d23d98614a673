// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "io/io.h"
#include "core/log.h"

/*
 * A probe result, per process: io_uring missing is missing for every
 * call, and said once (on the log of the call that found it); atomic,
 * since calls run at once.
 */
static atomic_int fallback_warned;

static int io_try(const struct pxfer_io_ops *ops,
		  const struct pxfer_ring *ring, unsigned int depth,
		  struct pxfer_io **out)
{
	struct pxfer_io *io = ops->alloc();
	int ret;

	if (!io)
		return -ENOMEM;
	io->ops = ops;
	io->event_fd = -1;
	ret = ops->init(io, ring, depth);
	if (ret) {
		ops->free(io);
		return ret;
	}
	*out = io;
	return 0;
}

int pxfer_io_create(const char *kind, const struct pxfer_ring *ring,
		    unsigned int depth, struct pxfer_io **out)
{
	int ret;

	if (!kind)
		kind = "auto";
	if (!strcmp(kind, "sync"))
		return io_try(&pxfer_io_sync_ops, ring, depth, out);
	if (strcmp(kind, "auto") && strcmp(kind, "uring"))
		return -EINVAL;
	ret = io_try(&pxfer_io_uring_ops, ring, depth, out);
	if (!ret || ret == -ENOMEM)
		return ret;
	if (!strcmp(kind, "uring"))
		return -ENOSYS;
	if (!atomic_exchange(&fallback_warned, 1))
		pxfer_warning("io_uring is unavailable (%s); using pread/pwrite",
			strerror(-ret));
	return io_try(&pxfer_io_sync_ops, ring, depth, out);
}

void pxfer_io_destroy(struct pxfer_io *io)
{
	if (!io)
		return;
	io->ops->exit(io);
	io->ops->free(io);
}
