/* SPDX-License-Identifier: MIT */
/*
 * A session's shape, as the receiver decides it for WELCOME: the chunk
 * size, the workers, the slots of each worker's ring and the files in
 * flight, from what the sender's HELLO asks and what the receiver allows.
 * Pure: numbers in, numbers out, no session and no I/O. The receiver's
 * session (src/recv/session.c) decides with it, and pxfer doctor reports
 * with it what a default transfer pins, so the two cannot differ.
 */
#ifndef PXFER_ENGINE_PARAMS_H
#define PXFER_ENGINE_PARAMS_H

#include <stdint.h>

/* slots per worker an automatic chunk leaves */
#define PXFER_PARAMS_RING_DEPTH 8

struct pxfer_params_in {
	/* the sender's HELLO */
	uint32_t chunk;			/* the chunk size it asks for */
	unsigned int workers;		/* the workers it asks for */
	int chunk_auto;			/* it left the size to the receiver
					 * (PXFER_HELLO_CHUNK_AUTO) */
	/* the receiver */
	uint64_t ring_mem;		/* the session's share of --ring-mem */
	uint32_t max_chunk;		/* --max-chunk */
	unsigned int max_sessions;	/* --max-sessions */
	unsigned long nofile;		/* the open-file limit, all sessions' */
	unsigned int max_files;		/* files in flight a session takes at
					 * most (RECV_MAX_FILES) */
	/* the transport and the host */
	unsigned int ring_slots_max;	/* slots of all sessions' rings; 0: any */
	uint32_t ring_hdr;		/* header room of each slot */
	uint32_t page;			/* the page size */
};

struct pxfer_params {
	uint32_t chunk;			/* chunk_size, a multiple of the page */
	unsigned int workers;		/* at most what the sender asked */
	unsigned int slots;		/* of each worker's ring, 2..PXFER_SLOTS_MAX */
	unsigned int max_files;		/* files in flight */
	uint64_t ring_mem;		/* the rings: workers x slots x
					 * (chunk + ring_hdr) bytes */
};

/*
 * pxfer_params_pick - the shape for @in, into @out. The chunk is the
 * sender's, cut to --max-chunk; one it left to the receiver is halved,
 * not below PXFER_AUTO_CHUNK_MIN, until each worker gets RING_DEPTH slots
 * of the share; any chunk is halved, not below PXFER_CHUNK_MIN, until
 * each gets 2. Workers are cut to what the share holds two of the
 * smallest chunks for (at least 1); slots to what the transport takes
 * (its ring_slots_max split among the sessions and workers), then to
 * 2..PXFER_SLOTS_MAX; files in flight to what each session's part of the
 * open-file limit holds (two descriptors a file, 256 kept aside).
 */
void pxfer_params_pick(const struct pxfer_params_in *in,
		       struct pxfer_params *out);

#endif
