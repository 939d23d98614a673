/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: pxfer_partial_parse, which decides what a partial file's
 * journal left on the receiver's disk holds (what a crash, a full disk or
 * anyone with access to DIR/.pxfer may have made of it). The first input
 * byte says how the rest is used, the second names a record:
 *
 *   bit 0  the header's check is made to fit (so that the fields behind
 *          it are reached);
 *   bit 1  every record's check is made to fit, under the header's
 *          nonce, but that of the record the second byte names;
 *   bit 2  the file is the one the header names (its path, size and
 *          mtime), not a fixed one.
 *
 * The rest is the journal. Oracle, written from partial.h and the format
 * in docs/architecture.md: state, runs, held, digest and ignored are what
 * a plain reading of the rules gives (records checked one by one, overlap
 * found pairwise, runs cut record by record), the runs are sorted,
 * disjoint and inside the file, at most PXFER_PARTIAL_RUNS_MAX, and the
 * records returned are exactly theirs.
 */
#include <string.h>
#include <xxhash.h>

#include "core/bytes.h"
#include "recv/partial.h"
#include "fuzz.h"

#define REC	PXFER_JOURNAL_REC_LEN

/* the file when bit 2 is clear */
static const struct pxfer_partial_id fixed = {
	.path = "dir/big.bin", .path_len = 11, .size = 1u << 20,
	.mtime_sec = 1700000000, .mtime_nsec = 123456789,
};

struct rec {
	uint64_t off;
	uint32_t len;
	uint64_t lo, hi;
};

struct want {
	enum pxfer_partial_state state;
	unsigned int ignored, nruns, nrecs;
	uint64_t held, lo, hi;
	struct pxfer_held_run runs[PXFER_PARTIAL_RUNS_MAX];
};

static size_t hdr_len(const uint8_t *j, size_t len)
{
	return len < 48 ? 0 : 48 + (size_t)pxfer_get_be(j + 6, 2);
}

/* bits 0 and 1: make the checks fit */
static void fix(uint8_t *j, size_t len, unsigned int mode, unsigned int tamper)
{
	size_t h = hdr_len(j, len);
	uint64_t nonce;

	if (!h || h > len)
		return;
	if (mode & 1)
		pxfer_put_be(j + h - 8, XXH3_64bits(j, h - 8), 8);
	nonce = pxfer_get_be(j + 32, 8);
	for (size_t i = 0; (mode & 2) && h + (i + 1) * REC <= len; i++) {
		uint8_t *r = j + h + i * REC;

		if (i != tamper)
			pxfer_put_be(r + 28, (uint32_t)XXH3_64bits_withSeed(r, 28, nonce), 4);
	}
}

/* the state the header gives; *h its length when it is good */
static enum pxfer_partial_state header(const uint8_t *j, size_t len,
				       const struct pxfer_partial_id *id,
				       size_t *h)
{
	*h = hdr_len(j, len);
	if (!len)
		return PXFER_PARTIAL_NEW;
	if (!*h || *h > len || pxfer_get_be(j, 4) != 0x50584a31 ||
	    pxfer_get_be(j + 4, 2) != 1 || pxfer_get_be(j + 28, 4) ||
	    pxfer_get_be(j + *h - 8, 8) != XXH3_64bits(j, *h - 8) ||
	    *h - 48 != id->path_len || memcmp(j + 40, id->path, id->path_len))
		return PXFER_PARTIAL_CORRUPT;
	if (pxfer_get_be(j + 8, 8) != id->size ||
	    pxfer_get_be(j + 16, 8) != (uint64_t)id->mtime_sec ||
	    pxfer_get_be(j + 24, 4) != id->mtime_nsec)
		return PXFER_PARTIAL_STALE;
	return PXFER_PARTIAL_NEW;
}

static void expect(const uint8_t *j, size_t len,
		   const struct pxfer_partial_id *id, struct want *w)
{
	size_t h, n = 0, total, k;
	uint64_t nonce, unit = 0;
	struct rec *r;

	memset(w, 0, sizeof(*w));
	w->state = header(j, len, id, &h);
	if (w->state != PXFER_PARTIAL_NEW || !len)
		return;
	nonce = pxfer_get_be(j + 32, 8);
	total = (len - h) / REC;
	if (total > PXFER_PARTIAL_RECORDS_MAX)
		total = PXFER_PARTIAL_RECORDS_MAX;
	else if ((len - h) % REC)
		w->ignored++;
	r = malloc(total * sizeof(*r) + 1);
	FUZZ_CHECK(r);
	for (size_t i = 0; i < total; i++) {
		const uint8_t *b = j + h + i * REC;
		struct rec x = {
			.off = pxfer_get_be(b, 8), .len = pxfer_get_be(b + 8, 4),
			.lo = pxfer_get_be(b + 12, 8), .hi = pxfer_get_be(b + 20, 8),
		};
		unsigned __int128 end = (unsigned __int128)x.off + x.len;

		if (pxfer_get_be(b + 28, 4) !=
		    (uint32_t)XXH3_64bits_withSeed(b, 28, nonce) ||
		    !x.len || end > id->size) {
			w->ignored++;
			continue;
		}
		/* any two that share a byte: all is discarded */
		for (k = 0; k < n; k++) {
			if (x.off < r[k].off + r[k].len && r[k].off < end) {
				memset(w, 0, sizeof(*w));
				w->state = PXFER_PARTIAL_CORRUPT;
				free(r);
				return;
			}
		}
		/* kept in order of offset */
		for (k = n++; k > 0 && r[k - 1].off > x.off; k--)
			r[k] = r[k - 1];
		r[k] = x;
	}
	for (size_t i = 0; i < n; i++) {
		/* the record before ends here, is a whole unit, and this one
		 * is no longer than the unit: the same run */
		if (i && r[i - 1].off + r[i - 1].len == r[i].off &&
		    r[i - 1].len == unit && r[i].len <= unit) {
			w->runs[w->nruns - 1].len += r[i].len;
		} else if (w->nruns == PXFER_PARTIAL_RUNS_MAX) {
			break;
		} else {
			unit = r[i].len;
			w->runs[w->nruns++] = (struct pxfer_held_run){
				.off = r[i].off, .len = r[i].len, .unit = r[i].len,
			};
		}
		w->held += r[i].len;
		w->lo += r[i].lo;
		w->hi += r[i].hi;
		w->nrecs++;
	}
	if (w->nruns)
		w->state = PXFER_PARTIAL_HELD;
	free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct want w;
	struct pxfer_partial_load l;
	struct pxfer_partial_id own;
	const struct pxfer_partial_id *id = &fixed;
	uint64_t held = 0;
	uint8_t *j;
	size_t len, h;

	if (size < 2)
		return 0;
	len = size - 2;
	j = malloc(len ? len : 1);
	FUZZ_CHECK(j);
	memcpy(j, data + 2, len);
	fix(j, len, data[0], data[1]);
	h = hdr_len(j, len);
	if ((data[0] & 4) && h && h <= len) {
		own = (struct pxfer_partial_id){
			.path = (const char *)j + 40, .path_len = h - 48,
			.size = pxfer_get_be(j + 8, 8),
			.mtime_sec = (int64_t)pxfer_get_be(j + 16, 8),
			.mtime_nsec = pxfer_get_be(j + 24, 4),
		};
		id = &own;
	}
	expect(j, len, id, &w);
	FUZZ_CHECK(!pxfer_partial_parse(j, len, id, &l));
	FUZZ_CHECK(l.state == w.state && l.ignored == w.ignored);
	FUZZ_CHECK(l.nruns == w.nruns && l.nrecs == w.nrecs && l.held == w.held);
	FUZZ_CHECK(l.digest.lo == w.lo && l.digest.hi == w.hi);
	FUZZ_CHECK(l.state == PXFER_PARTIAL_HELD || (!l.nruns && !l.held));
	for (unsigned int i = 0; i < l.nruns; i++) {
		const struct pxfer_held_run *r = &l.runs[i];

		FUZZ_CHECK(r->off == w.runs[i].off && r->len == w.runs[i].len &&
			   r->unit == w.runs[i].unit);
		FUZZ_CHECK(r->unit && r->len >= r->unit && r->len <= id->size &&
			   r->off <= id->size - r->len);
		FUZZ_CHECK(!i || r->off >= l.runs[i - 1].off + l.runs[i - 1].len);
		held += r->len;
	}
	/* the records are those of the runs, in order */
	for (unsigned int i = 0; i < l.nrecs; i++) {
		FUZZ_CHECK(!i || l.recs[i].off >= l.recs[i - 1].off + l.recs[i - 1].len);
		held -= l.recs[i].len;
	}
	FUZZ_CHECK(held == 0);
	pxfer_partial_load_free(&l);
	free(j);
	return 0;
}
