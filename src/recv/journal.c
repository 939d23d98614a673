// SPDX-License-Identifier: MIT
/*
 * The journal of a partial file, pure: its file names' key, the encoders
 * of its header and records, and the parser that decides what a journal
 * holds (fuzzed: test/fuzz/journal.c). Declared in recv/partial.h; the
 * files themselves are recv/partial.c's. The format is in
 * docs/architecture.md, "Partial files".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>	/* the XXH3 entry points become dispatchers */
#else
#include <xxhash.h>
#endif

#include "core/bytes.h"
#include "recv/partial.h"

void pxfer_partial_key(const uint8_t secret[PXFER_PARTIAL_SECRET_LEN],
		       const char *path, size_t path_len,
		       char key[PXFER_PARTIAL_KEY_LEN + 1])
{
	uint8_t h[PXFER_PARTIAL_KEY_LEN / 2];

	/* keyed: whoever does not hold the secret cannot tell which name
	 * a path's partial will have */
	crypto_generichash(h, sizeof(h), (const uint8_t *)path, path_len,
			   secret, PXFER_PARTIAL_SECRET_LEN);
	sodium_bin2hex(key, PXFER_PARTIAL_KEY_LEN + 1, h, sizeof(h));
}

size_t pxfer_partial_header_encode(uint8_t *buf,
				   const struct pxfer_partial_id *id,
				   uint64_t nonce)
{
	size_t n = PXFER_JOURNAL_HDR_LEN(id->path_len) - 8;

	pxfer_put_be(buf, PXFER_JOURNAL_MAGIC, 4);
	pxfer_put_be(buf + 4, PXFER_JOURNAL_VERSION, 2);
	pxfer_put_be(buf + 6, id->path_len, 2);
	pxfer_put_be(buf + 8, id->size, 8);
	pxfer_put_be(buf + 16, (uint64_t)id->mtime_sec, 8);
	pxfer_put_be(buf + 24, id->mtime_nsec, 4);
	pxfer_put_be(buf + 28, 0, 4);
	pxfer_put_be(buf + 32, nonce, 8);
	memcpy(buf + 40, id->path, id->path_len);
	pxfer_put_be(buf + n, XXH3_64bits(buf, n), 8);
	return n + 8;
}

static uint32_t record_check(const uint8_t *buf, uint64_t nonce)
{
	return (uint32_t)XXH3_64bits_withSeed(buf, PXFER_JOURNAL_REC_LEN - 4,
					      nonce);
}

void pxfer_partial_record_encode(uint8_t *buf, const struct pxfer_partial_rec *r,
				 uint64_t nonce)
{
	pxfer_put_be(buf, r->off, 8);
	pxfer_put_be(buf + 8, r->len, 4);
	pxfer_put_be(buf + 12, r->h.lo, 8);
	pxfer_put_be(buf + 20, r->h.hi, 8);
	pxfer_put_be(buf + 28, record_check(buf, nonce), 4);
}

static int rec_cmp(const void *a, const void *b)
{
	const struct pxfer_partial_rec *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * The runs of sorted, disjoint records @r[0..@n), the first
 * PXFER_PARTIAL_RUNS_MAX of them, into @runs: how many records they take.
 * A run grows over the next record while that starts at the run's end
 * and is no longer than its unit, and ends with a shorter one: so each
 * record of a run is found again from the run alone.
 */
static unsigned int make_runs(const struct pxfer_partial_rec *r, unsigned int n,
			      struct pxfer_held_run *runs, unsigned int *nruns)
{
	unsigned int i, k = 0;
	int grows = 0;

	for (i = 0; i < n; i++) {
		struct pxfer_held_run *cur = &runs[k ? k - 1 : 0];

		if (grows && r[i].off == cur->off + cur->len &&
		    r[i].len <= cur->unit) {
			cur->len += r[i].len;
			grows = r[i].len == cur->unit;
			continue;
		}
		if (k == PXFER_PARTIAL_RUNS_MAX)
			break;
		runs[k++] = (struct pxfer_held_run){ .off = r[i].off, .len = r[i].len,
						.unit = r[i].len };
		grows = 1;
	}
	*nruns = k;
	return i;
}

/* the header at @buf[0..@len): its length, or 0 and out->state set */
static size_t parse_header(const uint8_t *buf, size_t len,
			   const struct pxfer_partial_id *id,
			   struct pxfer_partial_load *out, uint64_t *nonce)
{
	size_t plen, hlen;

	out->state = PXFER_PARTIAL_CORRUPT;
	if (len < PXFER_JOURNAL_HDR_LEN(0))
		return 0;
	plen = pxfer_get_be(buf + 6, 2);
	hlen = PXFER_JOURNAL_HDR_LEN(plen);
	if (len < hlen || pxfer_get_be(buf, 4) != PXFER_JOURNAL_MAGIC ||
	    pxfer_get_be(buf + 4, 2) != PXFER_JOURNAL_VERSION ||
	    pxfer_get_be(buf + 28, 4) != 0 ||
	    pxfer_get_be(buf + hlen - 8, 8) != XXH3_64bits(buf, hlen - 8))
		return 0;
	if (plen != id->path_len || (plen && memcmp(buf + 40, id->path, plen)))
		return 0;
	if (pxfer_get_be(buf + 8, 8) != id->size ||
	    (int64_t)pxfer_get_be(buf + 16, 8) != id->mtime_sec ||
	    pxfer_get_be(buf + 24, 4) != id->mtime_nsec) {
		out->state = PXFER_PARTIAL_STALE;
		return 0;
	}
	*nonce = pxfer_get_be(buf + 32, 8);
	out->state = PXFER_PARTIAL_NEW;
	return hlen;
}

int pxfer_partial_parse(const uint8_t *buf, size_t len,
			const struct pxfer_partial_id *id,
			struct pxfer_partial_load *out)
{
	size_t hlen, nrec;
	struct pxfer_partial_rec *r;
	unsigned int n = 0;
	uint64_t nonce = 0;

	memset(out, 0, sizeof(*out));
	out->state = PXFER_PARTIAL_NEW;
	if (!len)
		return 0;
	hlen = parse_header(buf, len, id, out, &nonce);
	if (!hlen)
		return 0;
	buf += hlen;
	len -= hlen;
	nrec = len / PXFER_JOURNAL_REC_LEN;
	if (nrec > PXFER_PARTIAL_RECORDS_MAX)
		nrec = PXFER_PARTIAL_RECORDS_MAX;
	else if (len % PXFER_JOURNAL_REC_LEN)
		out->ignored++;		/* a torn tail */
	if (!nrec)
		return 0;
	r = malloc(nrec * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < nrec; i++, buf += PXFER_JOURNAL_REC_LEN) {
		struct pxfer_partial_rec *x = &r[n];

		x->off = pxfer_get_be(buf, 8);
		x->len = pxfer_get_be(buf + 8, 4);
		x->h.lo = pxfer_get_be(buf + 12, 8);
		x->h.hi = pxfer_get_be(buf + 20, 8);
		if (pxfer_get_be(buf + 28, 4) != record_check(buf, nonce) ||
		    !x->len || x->off > id->size || x->len > id->size - x->off)
			out->ignored++;
		else
			n++;
	}
	if (!n) {
		free(r);
		return 0;
	}
	qsort(r, n, sizeof(*r), rec_cmp);
	/* each range is recorded once: two records of the same bytes mean
	 * the journal is not what it claims, whichever is right */
	for (unsigned int i = 1; i < n; i++) {
		if (r[i].off < r[i - 1].off + r[i - 1].len) {
			free(r);
			out->state = PXFER_PARTIAL_CORRUPT;
			out->ignored = 0;
			return 0;
		}
	}
	out->recs = r;
	out->runs = malloc((n < PXFER_PARTIAL_RUNS_MAX ? n : PXFER_PARTIAL_RUNS_MAX) *
			   sizeof(*out->runs));
	if (!out->runs)
		return -ENOMEM;
	out->nrecs = make_runs(r, n, out->runs, &out->nruns);
	for (unsigned int i = 0; i < out->nruns; i++)
		out->held += out->runs[i].len;
	for (unsigned int i = 0; i < out->nrecs; i++)
		pxfer_digest_add(&out->digest, &r[i].h);
	if (out->nruns)
		out->state = PXFER_PARTIAL_HELD;
	return 0;
}

void pxfer_partial_load_free(struct pxfer_partial_load *l)
{
	free(l->runs);
	free(l->recs);
	l->runs = NULL;
	l->recs = NULL;
	l->nruns = l->nrecs = 0;
}
