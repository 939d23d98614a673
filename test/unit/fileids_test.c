/* SPDX-License-Identifier: MIT */
/*
 * fileids_test: the sender's window of file ids (src/send/fileids.c).
 *
 *  - ids are handed out lowest first, at most @usable at once, then
 *    -ENOSPC; an id that came back is handed out next;
 *  - get finds each id's entry, and NULL for an id not out or beyond the
 *    window (a number from the peer);
 *  - done gives the entry back once, and NULL for an id not out, changing
 *    nothing;
 *  - in_flight and free count what is out and what is left;
 *  - a random run against a model: no id is out twice.
 */
#include <stdint.h>

#include "send/fileids.h"
#include "test.h"

static void test_basic(void)
{
	struct pxfer_fileids ids = { 0 };
	int e[8];
	uint32_t id;

	pxfer_fileids_release(&ids);	/* zeroed: harmless */
	T_EXPECT(pxfer_fileids_init(&ids, 4, 5) == -EINVAL, "usable > max");
	T_EXPECT(pxfer_fileids_init(&ids, 8, 3) == 0, "init");
	T_EXPECT(pxfer_fileids_free(&ids) == 3 &&
		 pxfer_fileids_in_flight(&ids) == 0, "fresh counts");
	for (uint32_t i = 0; i < 3; i++) {
		T_EXPECT(pxfer_fileids_alloc(&ids, &e[i], &id) == 0 && id == i,
			 "alloc %u gave %u", i, id);
	}
	T_EXPECT(pxfer_fileids_alloc(&ids, &e[3], &id) == -ENOSPC,
		 "alloc beyond usable");
	T_EXPECT(pxfer_fileids_in_flight(&ids) == 3 && !pxfer_fileids_free(&ids),
		 "counts when full");
	for (uint32_t i = 0; i < 3; i++)
		T_EXPECT(pxfer_fileids_get(&ids, i) == &e[i], "get %u", i);
	T_EXPECT(pxfer_fileids_get(&ids, 3) == NULL, "get of an unused id");
	T_EXPECT(pxfer_fileids_get(&ids, 8) == NULL, "get beyond max");
	T_EXPECT(pxfer_fileids_get(&ids, UINT64_MAX) == NULL, "get of 2^64-1");

	T_EXPECT(pxfer_fileids_done(&ids, 1) == &e[1], "done 1");
	T_EXPECT(pxfer_fileids_done(&ids, 1) == NULL, "done 1 twice");
	T_EXPECT(pxfer_fileids_done(&ids, 5) == NULL, "done of an unused id");
	T_EXPECT(pxfer_fileids_done(&ids, 99) == NULL, "done beyond max");
	T_EXPECT(pxfer_fileids_in_flight(&ids) == 2 &&
		 pxfer_fileids_free(&ids) == 1, "counts after done: %u, %u",
		 pxfer_fileids_in_flight(&ids), pxfer_fileids_free(&ids));
	T_EXPECT(pxfer_fileids_get(&ids, 1) == NULL, "get of a done id");
	/* the id that came back goes next */
	T_EXPECT(pxfer_fileids_alloc(&ids, &e[4], &id) == 0 && id == 1,
		 "alloc after done gave %u", id);
	T_EXPECT(pxfer_fileids_get(&ids, 1) == &e[4], "the new entry");
	pxfer_fileids_release(&ids);
	pxfer_fileids_release(&ids);	/* twice: harmless */
}

#define MAX	64
#define USABLE	48

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void test_model(void)
{
	struct pxfer_fileids ids;
	int ent[MAX];
	void *given[MAX];
	int out[MAX] = { 0 };
	unsigned int nout = 0, bad = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint32_t id;

	T_EXPECT(pxfer_fileids_init(&ids, MAX, USABLE) == 0, "init");
	for (int step = 0; step < 100000; step++) {
		uint64_t r = rnd(&seed);

		if (r & 1) {
			void *e = &ent[step % MAX];
			int ret = pxfer_fileids_alloc(&ids, e, &id);

			if (nout == USABLE) {
				bad += ret != -ENOSPC;
				continue;
			}
			if (ret || id >= USABLE || out[id]) {
				bad++;
				continue;
			}
			out[id] = 1;
			nout++;
			given[id] = e;
		} else {
			uint64_t k = (r >> 8) % (MAX + 4);
			void *e = pxfer_fileids_done(&ids, k);

			if (k < MAX && out[k]) {
				bad += e != given[k];
				out[k] = 0;
				nout--;
			} else {
				bad += e != NULL;
			}
		}
		bad += pxfer_fileids_in_flight(&ids) != nout ||
		       pxfer_fileids_free(&ids) != USABLE - nout;
	}
	T_EXPECT(!bad, "%u steps went wrong", bad);
	pxfer_fileids_release(&ids);
}

int main(void)
{
	test_basic();
	test_model();
	return t_result();
}
