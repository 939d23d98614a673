// SPDX-License-Identifier: MIT
/*
 * params_test: the shape a receiver gives a session (src/engine/params.c)
 * from the sender's HELLO and its own options.
 *  - the automatic chunk: with the default 32 MiB share, 4 MiB at -j 1,
 *    2 MiB at -j 2, 1 MiB from -j 4 up, 8 slots a worker while they fit
 *    (docs/architecture.md); never below 1 MiB for the 8 slots, smaller
 *    only to keep 2
 *  - a chunk asked for outright is kept when 2 slots a worker fit, cut
 *    to --max-chunk, halved until 2 fit
 *  - a tiny --ring-mem: fewer workers (two of the smallest chunks each),
 *    at least one, and the smallest chunk, whatever the share
 *  - many workers: small chunks, 2 slots; the transport's slots split
 *    among the sessions and workers; never more than PXFER_SLOTS_MAX
 *  - the chunk is a multiple of the page
 *  - files in flight from each session's part of the open-file limit
 *  - over a grid of inputs: workers 1..asked, slots 2..PXFER_SLOTS_MAX,
 *    the rings within the share, ring_mem as the product
 */
#include <stdint.h>

#include "core/proto.h"
#include "engine/params.h"
#include "pxfer/pxfer.h"
#include "test.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* a default receiver, and a default sender with @workers */
static struct pxfer_params_in dflt(unsigned int workers)
{
	return (struct pxfer_params_in){
		.chunk = PXFER_AUTO_CHUNK_MAX,
		.workers = workers,
		.chunk_auto = 1,
		.ring_mem = PXFER_DEFAULT_RING_MEM,
		.max_chunk = PXFER_DEFAULT_MAX_CHUNK,
		.max_sessions = PXFER_DEFAULT_MAX_SESSIONS,
		.nofile = 1 << 20,
		.max_files = 1024,
		.ring_slots_max = 0,
		.ring_hdr = 0,
		.page = 4096,
	};
}

static void expect(const char *what, const struct pxfer_params_in *in,
		   uint32_t chunk, unsigned int workers, unsigned int slots)
{
	struct pxfer_params p;

	pxfer_params_pick(in, &p);
	T_EXPECT(p.chunk == chunk && p.workers == workers && p.slots == slots,
		 "%s: %u worker(s) x %u slots of %u KiB, not %u x %u of %u KiB",
		 what, p.workers, p.slots, p.chunk >> 10, workers, slots,
		 chunk >> 10);
}

static void auto_chunk(void)
{
	struct pxfer_params_in in;

	in = dflt(1);
	expect("auto -j 1", &in, 4 * MiB, 1, 8);
	in = dflt(2);
	expect("auto -j 2", &in, 2 * MiB, 2, 8);
	in = dflt(4);
	expect("auto -j 4", &in, 1 * MiB, 4, 8);
	/* 8 slots do not fit at 1 MiB: not smaller for them, 4 slots */
	in = dflt(8);
	expect("auto -j 8", &in, 1 * MiB, 8, 4);
	/* a large share keeps the largest chunk asked */
	in = dflt(4);
	in.ring_mem = 1 * GiB;
	expect("auto -j 4, 1 GiB", &in, 4 * MiB, 4, 64);
	/* the sender's own size: not halved for 8 slots */
	in = dflt(2);
	in.chunk_auto = 0;
	expect("4 MiB -j 2", &in, 4 * MiB, 2, 4);
	/* auto, but asked for less than the auto floor: kept */
	in = dflt(1);
	in.chunk = 256 * KiB;
	expect("auto 256 KiB", &in, 256 * KiB, 1, 128);
}

static void huge_chunk(void)
{
	struct pxfer_params_in in = dflt(1);

	/* more than --max-chunk: cut to it */
	in.chunk = PXFER_CHUNK_MAX;
	in.chunk_auto = 0;
	in.ring_mem = 1 * GiB;
	expect("64 MiB asked, --max-chunk 16 MiB", &in, 16 * MiB, 1, 64);
	in.max_chunk = PXFER_CHUNK_MAX;
	expect("64 MiB asked and allowed", &in, 64 * MiB, 1, 16);
	/* allowed, but two do not fit a worker's share: halved until they do */
	in.ring_mem = PXFER_DEFAULT_RING_MEM;
	expect("64 MiB in 32 MiB", &in, 16 * MiB, 1, 2);
	in.workers = 4;
	expect("64 MiB in 32 MiB, -j 4", &in, 4 * MiB, 4, 2);
	/* auto: still halved to 8 slots */
	in.chunk_auto = 1;
	in.workers = 1;
	expect("64 MiB auto in 32 MiB", &in, 4 * MiB, 1, 8);
}

static void tiny_ring(void)
{
	struct pxfer_params_in in = dflt(8);

	/* the smallest share the server takes: 64 KiB */
	in.ring_mem = 64 * KiB;
	expect("64 KiB share, -j 8", &in, PXFER_CHUNK_MIN, 8, 2);
	in.workers = PXFER_WORKERS_MAX;
	expect("64 KiB share, -j 64", &in, PXFER_CHUNK_MIN, 8, 2);
	/* less than two of the smallest chunks: one worker, the smallest
	 * chunk, two slots, and no division by zero */
	in.ring_mem = 4 * KiB;
	expect("4 KiB share", &in, PXFER_CHUNK_MIN, 1, 2);
	in.ring_mem = 0;
	expect("no share", &in, PXFER_CHUNK_MIN, 1, 2);
	/* a share between: workers cut, the chunk as small as needed */
	in.ring_mem = 100 * KiB;
	in.workers = 16;
	expect("100 KiB share, -j 16", &in, 4 * KiB, 12, 2);
	in.workers = 4;
	expect("100 KiB share, -j 4", &in, 8 * KiB, 4, 3);
}

static void many_workers(void)
{
	struct pxfer_params_in in = dflt(PXFER_WORKERS_MAX);

	expect("auto -j 64", &in, 256 * KiB, 64, 2);
	/* the transport's slots, split among 8 sessions and 64 workers */
	in.ring_mem = 4 * GiB;
	in.ring_slots_max = 4096;
	expect("-j 64, 4 GiB, 4096 transport slots", &in, 4 * MiB, 64, 8);
	/* ... but never fewer than 2 */
	in.ring_slots_max = 512;
	expect("-j 64, 512 transport slots", &in, 4 * MiB, 64, 2);
	/* small chunks in a large share: at most PXFER_SLOTS_MAX */
	in = dflt(1);
	in.chunk = PXFER_CHUNK_MIN;
	in.chunk_auto = 0;
	in.ring_mem = 4 * GiB;
	expect("4 KiB chunks in 4 GiB", &in, PXFER_CHUNK_MIN, 1, PXFER_SLOTS_MAX);
	/* max_sessions 0 is taken as 1, not divided by */
	in.max_sessions = 0;
	in.ring_slots_max = 100;
	expect("no sessions given", &in, PXFER_CHUNK_MIN, 1, 100);
}

static void pages(void)
{
	struct pxfer_params_in in = dflt(1);

	in.chunk = 20 * KiB;
	in.chunk_auto = 0;
	in.page = 16 * KiB;
	expect("20 KiB on 16 KiB pages", &in, 16 * KiB, 1, 2048 > PXFER_SLOTS_MAX ?
	       PXFER_SLOTS_MAX : 2048);
	in.page = 64 * KiB;
	in.chunk = 12 * KiB;
	expect("12 KiB on 64 KiB pages", &in, PXFER_CHUNK_MIN, 1, PXFER_SLOTS_MAX);
	in = dflt(2);
	in.page = 64 * KiB;
	expect("auto -j 2 on 64 KiB pages", &in, 2 * MiB, 2, 8);
}

static void files(void)
{
	static const struct {
		unsigned long nofile;
		unsigned int sessions, want;
	} cases[] = {
		{ 1 << 20, 8, 1024 },
		{ 8 * (2 * 1024 + 256), 8, 1024 },
		{ 8 * (2 * 1024 + 255), 8, 1023 },
		{ 8 * 1000, 8, 372 },
		{ 8 * 321, 8, 32 },
		{ 8 * 320, 8, 32 },
		{ 2304, 1, 1024 },
		{ 0, 8, 32 },
		{ 5000, 0, 1024 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pxfer_params_in in = dflt(1);
		struct pxfer_params p;

		in.nofile = cases[i].nofile;
		in.max_sessions = cases[i].sessions;
		pxfer_params_pick(&in, &p);
		T_EXPECT(p.max_files == cases[i].want,
			 "%lu files, %u sessions: %u in flight, not %u",
			 cases[i].nofile, cases[i].sessions, p.max_files,
			 cases[i].want);
	}
}

/* what holds whatever the inputs */
static void grid(void)
{
	static const uint64_t mems[] = { 64 * KiB, 100 * KiB, 1 * MiB,
					 32 * MiB, 512 * MiB, 4 * GiB };
	static const uint32_t chunks[] = { PXFER_CHUNK_MIN, 12 * KiB, 1 * MiB,
					   4 * MiB, PXFER_CHUNK_MAX };
	static const unsigned int workers[] = { 1, 2, 3, 8, 63, 64 };
	static const unsigned int smax[] = { 0, 600, 4096 };

	for (size_t a = 0; a < sizeof(mems) / sizeof(mems[0]); a++)
	for (size_t b = 0; b < sizeof(chunks) / sizeof(chunks[0]); b++)
	for (size_t c = 0; c < sizeof(workers) / sizeof(workers[0]); c++)
	for (size_t d = 0; d < sizeof(smax) / sizeof(smax[0]); d++)
	for (int au = 0; au < 2; au++) {
		struct pxfer_params_in in = dflt(workers[c]);
		struct pxfer_params p;

		in.ring_mem = mems[a];
		in.chunk = chunks[b];
		in.chunk_auto = au;
		in.ring_slots_max = smax[d];
		in.ring_hdr = 4096;
		pxfer_params_pick(&in, &p);
		T_EXPECT(p.workers >= 1 && p.workers <= in.workers,
			 "%u workers of %u asked", p.workers, in.workers);
		T_EXPECT(p.chunk >= PXFER_CHUNK_MIN && p.chunk <= in.max_chunk &&
			 (p.chunk <= in.chunk || in.chunk < PXFER_CHUNK_MIN) &&
			 p.chunk % in.page == 0,
			 "a chunk of %u for %u asked", p.chunk, in.chunk);
		T_EXPECT(p.slots >= 2 && p.slots <= PXFER_SLOTS_MAX,
			 "%u slots", p.slots);
		T_EXPECT((uint64_t)p.workers * p.slots * p.chunk <= in.ring_mem,
			 "%u x %u x %u bytes in a %llu-byte share", p.workers,
			 p.slots, p.chunk, (unsigned long long)in.ring_mem);
		T_EXPECT(p.ring_mem == (uint64_t)p.workers * p.slots *
			 (p.chunk + in.ring_hdr), "ring_mem %llu",
			 (unsigned long long)p.ring_mem);
		if (au && p.chunk > PXFER_AUTO_CHUNK_MIN && !in.ring_slots_max)
			T_EXPECT(p.slots >= PXFER_PARAMS_RING_DEPTH,
				 "auto %u KiB with %u slots", p.chunk >> 10,
				 p.slots);
	}
}

int main(void)
{
	auto_chunk();
	huge_chunk();
	tiny_ring();
	many_workers();
	pages();
	files();
	grid();
	return t_result();
}
