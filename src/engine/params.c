// SPDX-License-Identifier: MIT
/* A session's shape from HELLO and the receiver's options (params.h). */
#include "core/proto.h"
#include "engine/params.h"
#include "pxfer/pxfer.h"

static unsigned int pick_slots(const struct pxfer_params_in *in,
			       unsigned int workers, uint32_t chunk)
{
	uint64_t n = in->ring_mem / ((uint64_t)workers * chunk);
	unsigned int sessions = in->max_sessions ? in->max_sessions : 1;
	unsigned int max = in->ring_slots_max / sessions;

	/* small chunks in a large --ring-mem: no more than the transport
	 * can take (rdma: what its shared receive queue holds, which every
	 * session shares) */
	if (max && n > max / workers)
		n = max / workers;
	if (n < 2)
		n = 2;
	if (n > PXFER_SLOTS_MAX)
		n = PXFER_SLOTS_MAX;
	return n;
}

static unsigned int pick_files(const struct pxfer_params_in *in)
{
	unsigned int sessions = in->max_sessions ? in->max_sessions : 1;
	/* every file in flight holds two descriptors, the file and its
	 * directory, and the sessions share the table */
	unsigned long nofile = in->nofile / sessions;

	if (nofile >= 2ul * in->max_files + 256)
		return in->max_files;
	return nofile > 320 ? (nofile - 256) / 2 : 32;
}

void pxfer_params_pick(const struct pxfer_params_in *in,
		       struct pxfer_params *out)
{
	uint32_t chunk = in->chunk, page = in->page ? in->page : 1;
	uint64_t mem = in->ring_mem;
	unsigned int workers = in->workers;

	/* never more than the session's share: two of the smallest chunks
	 * per worker at least (and one worker, whatever the share) */
	if (workers > mem / (2 * PXFER_CHUNK_MIN))
		workers = mem / (2 * PXFER_CHUNK_MIN);
	if (!workers)
		workers = 1;
	if (chunk > in->max_chunk)
		chunk = in->max_chunk;
	/*
	 * A sender that left the size to us gets the largest chunk (up to
	 * what it asked) that still leaves RING_DEPTH slots per worker in
	 * --ring-mem: fewer, larger chunks cost less per byte, but a worker
	 * needs several in flight.
	 */
	if (in->chunk_auto)
		while (chunk / 2 >= PXFER_AUTO_CHUNK_MIN &&
		       mem / ((uint64_t)workers * chunk) < PXFER_PARAMS_RING_DEPTH)
			chunk /= 2;
	/* ... and two slots per worker in the share */
	while (chunk / 2 >= PXFER_CHUNK_MIN &&
	       mem / ((uint64_t)workers * chunk) < 2)
		chunk /= 2;
	chunk -= chunk % page;
	if (chunk < PXFER_CHUNK_MIN)
		chunk = PXFER_CHUNK_MIN;
	out->chunk = chunk;
	out->workers = workers;
	out->slots = pick_slots(in, workers, chunk);
	out->max_files = pick_files(in);
	out->ring_mem = (uint64_t)workers * out->slots *
			((uint64_t)chunk + in->ring_hdr);
}
