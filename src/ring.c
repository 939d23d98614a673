// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring.h"

int pxfer_ring_init(struct pxfer_ring *r, unsigned int nslots, size_t slot_size,
		    size_t hdr_size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t stride = slot_size + hdr_size;
	void *p;

	memset(r, 0, sizeof(*r));
	if (!nslots || !slot_size || slot_size % page || hdr_size % page)
		return -EINVAL;
	if (stride < slot_size || stride > SIZE_MAX / nslots)
		return -EOVERFLOW;
	p = mmap(NULL, stride * nslots, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->base = p;
	r->hdr_size = hdr_size;
	r->slot_size = slot_size;
	r->stride = stride;
	r->nslots = nslots;
	r->bytes = stride * nslots;
	return 0;
}

void pxfer_ring_release(struct pxfer_ring *r)
{
	if (r->base)
		munmap(r->base, r->bytes);
	memset(r, 0, sizeof(*r));
}
