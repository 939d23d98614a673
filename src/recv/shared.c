// SPDX-License-Identifier: MIT
/*
 * The registry of partials that several sessions of one job write into
 * at once (recv/shared.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/digest.h"
#include "core/sys.h"
#include "recv/shared.h"

int recv_shared_init(struct recv_shared *sh)
{
	memset(sh, 0, sizeof(*sh));
	sh->store.dirfd = -1;
	atomic_store(&sh->store_open, 0);
	return -pthread_mutex_init(&sh->lock, NULL);
}

void recv_shared_release(struct recv_shared *sh)
{
	if (atomic_load(&sh->store_open) > 0)
		pxfer_partials_close(&sh->store);
	pthread_mutex_destroy(&sh->lock);
}

static struct recv_shared_ent *find(struct recv_shared *sh, const char *key)
{
	struct recv_shared_ent *e;

	for (e = sh->head; e; e = e->next)
		if (!strcmp(e->key, key))
			return e;
	return NULL;
}

static int overlaps(const struct recv_shared_ent *e, uint64_t off, uint64_t len)
{
	for (unsigned int i = 0; i < e->nclaims; i++)
		if (off < e->claims[i].off + e->claims[i].len &&
		    e->claims[i].off < off + len)
			return 1;
	return 0;
}

/* room for one more in a span array */
static int grow(struct recv_shared_span **a, unsigned int *cap, unsigned int n)
{
	unsigned int c = *cap ? *cap * 2 : 4;
	struct recv_shared_span *p;

	if (n < *cap)
		return 0;
	p = realloc(*a, c * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = c;
	return 0;
}

static int claim(struct recv_shared_ent *e, uint64_t off, uint64_t len)
{
	if (grow(&e->claims, &e->claims_cap, e->nclaims))
		return -ENOMEM;
	e->claims[e->nclaims++] = (struct recv_shared_span){ off, len };
	return 0;
}

static void unclaim(struct recv_shared_ent *e, uint64_t off, uint64_t len)
{
	for (unsigned int i = 0; i < e->nclaims; i++) {
		if (e->claims[i].off != off || e->claims[i].len != len)
			continue;
		e->claims[i] = e->claims[--e->nclaims];
		return;
	}
}

/* [@off, @off + @len) is on disk: merged into e->disk, kept sorted */
static int on_disk(struct recv_shared_ent *e, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	unsigned int i = 0, j;

	while (i < e->ndisk && e->disk[i].off + e->disk[i].len < off)
		i++;
	/* runs i..j-1 touch or overlap it: they become one */
	for (j = i; j < e->ndisk && e->disk[j].off <= end; j++) {
		uint64_t jend = e->disk[j].off + e->disk[j].len;

		if (e->disk[j].off < off)
			off = e->disk[j].off;
		if (jend > end)
			end = jend;
	}
	if (j == i) {
		if (grow(&e->disk, &e->disk_cap, e->ndisk))
			return -ENOMEM;
		memmove(e->disk + i + 1, e->disk + i,
			(e->ndisk - i) * sizeof(*e->disk));
		e->ndisk++;
		j = i + 1;
	}
	e->disk[i] = (struct recv_shared_span){ off, end - off };
	memmove(e->disk + i + 1, e->disk + j, (e->ndisk - j) * sizeof(*e->disk));
	e->ndisk -= j - i - 1;
	return 0;
}

static int whole(const struct recv_shared_ent *e)
{
	return e->ndisk == 1 && !e->disk[0].off && e->disk[0].len == e->size;
}

static void unlink_ent(struct recv_shared *sh, struct recv_shared_ent *e)
{
	struct recv_shared_ent **pp;

	for (pp = &sh->head; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			sh->n--;
			return;
		}
	}
}

void recv_shared_free(struct recv_shared_ent *e)
{
	if (!e)
		return;
	pthread_mutex_destroy(&e->lock);
	free(e->claims);
	free(e->disk);
	free(e->key);
	free(e);
}

static struct recv_shared_ent *make(const char *key,
				    const uint8_t job[PXFER_JOB_LEN],
				    uint64_t size, int64_t sec, uint32_t nsec)
{
	struct recv_shared_ent *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->key = strdup(key);
	if (!e->key || pthread_mutex_init(&e->lock, NULL)) {
		free(e->key);
		free(e);
		return NULL;
	}
	memcpy(e->job, job, PXFER_JOB_LEN);
	e->size = size;
	e->mtime_sec = sec;
	e->mtime_nsec = nsec;
	return e;
}

int recv_shared_take(struct recv_shared *sh, const char *key,
		     const uint8_t job[PXFER_JOB_LEN], uint64_t size,
		     int64_t sec, uint32_t nsec, uint64_t off, uint64_t len,
		     struct recv_shared_ent **out)
{
	struct recv_shared_ent *e;
	int ret = -EBUSY;

	pthread_mutex_lock(&sh->lock);
	e = find(sh, key);
	if (!e) {
		e = make(key, job, size, sec, nsec);
		if (!e || claim(e, off, len)) {
			recv_shared_free(e);
			ret = -ENOMEM;
			goto out;
		}
		e->refs = 1;
		e->next = sh->head;
		sh->head = e;
		sh->n++;
		*out = e;
		ret = RECV_SHARED_MADE;
		goto out;
	}
	if (!e->ready || memcmp(e->job, job, PXFER_JOB_LEN) ||
	    e->size != size || e->mtime_sec != sec || e->mtime_nsec != nsec ||
	    overlaps(e, off, len) || e->ndisk >= RECV_SHARED_RUNS_MAX)
		goto out;
	if (claim(e, off, len)) {
		ret = -ENOMEM;
		goto out;
	}
	if (e->parked) {
		e->parked = 0;
		sh->nparked--;
	}
	e->refs++;
	*out = e;
	ret = RECV_SHARED_JOINED;
out:
	pthread_mutex_unlock(&sh->lock);
	return ret;
}

int recv_shared_ready(struct recv_shared *sh, struct recv_shared_ent *e,
		      struct pxfer_partial *part,
		      const struct pxfer_held_run *r, unsigned int n)
{
	int ret = 0;

	pthread_mutex_lock(&sh->lock);
	for (unsigned int i = 0; !ret && i < n; i++)
		ret = on_disk(e, r[i].off, r[i].len);
	if (ret) {
		e->ndisk = 0;
	} else {
		e->part = part;
		e->ready = 1;
	}
	pthread_mutex_unlock(&sh->lock);
	return ret;
}

int recv_shared_put(struct recv_shared *sh, struct recv_shared_ent *e,
		    uint64_t off, uint64_t len, int durable)
{
	int ret = RECV_SHARED_HELD;

	pthread_mutex_lock(&sh->lock);
	/* out of memory, the range is not counted: the file is not named
	 * here, and its next opening finds the range in the journal */
	if (durable && e->ready)
		on_disk(e, off, len);
	unclaim(e, off, len);
	if (!--e->refs) {
		/* parked if a range could join it, and the last one came
		 * whole (one cut short is read back when opened again) */
		if (durable && e->ready && !whole(e) && e->part &&
		    e->ndisk < RECV_SHARED_RUNS_MAX &&
		    sh->nparked < RECV_SHARED_PARKED_MAX) {
			e->parked = 1;
			e->parked_at = pxfer_now();
			sh->nparked++;
		} else {
			unlink_ent(sh, e);
			ret = e->ready && whole(e) ? RECV_SHARED_NAME
						   : RECV_SHARED_CLOSE;
		}
	}
	pthread_mutex_unlock(&sh->lock);
	return ret;
}

struct recv_shared_ent *recv_shared_unpark(struct recv_shared *sh, int all,
					   unsigned int *left)
{
	struct recv_shared_ent *gone = NULL, **pp, *e;
	double now = pxfer_now();

	pthread_mutex_lock(&sh->lock);
	for (pp = &sh->head; (e = *pp);) {
		if (!e->parked || (!all && now - e->parked_at < RECV_SHARED_PARK_SECS)) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		sh->n--;
		sh->nparked--;
		e->next = gone;
		gone = e;
	}
	*left = sh->nparked;
	pthread_mutex_unlock(&sh->lock);
	return gone;
}

uint64_t recv_shared_covered(struct recv_shared *sh, struct recv_shared_ent *e)
{
	uint64_t n = 0;

	pthread_mutex_lock(&sh->lock);
	for (unsigned int i = 0; i < e->ndisk; i++)
		n += e->disk[i].len;
	pthread_mutex_unlock(&sh->lock);
	return n;
}

unsigned int recv_shared_count(struct recv_shared *sh)
{
	unsigned int n;

	pthread_mutex_lock(&sh->lock);
	n = sh->n;
	pthread_mutex_unlock(&sh->lock);
	return n;
}

/* the first record at or after @off */
static unsigned int rec_at(const struct pxfer_partial_rec *recs,
			   unsigned int nrecs, uint64_t off)
{
	unsigned int lo = 0, hi = nrecs;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (recs[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void recv_shared_clip(const struct pxfer_held_run *r, unsigned int n,
		      const struct pxfer_partial_rec *recs, unsigned int nrecs,
		      uint64_t off, uint64_t len, struct pxfer_file_ok *ok)
{
	struct pxfer_digest sum = { 0, 0 };
	uint64_t end = off + len, held = 0;
	unsigned int k = 0;

	for (unsigned int i = 0; i < n && k < PXFER_RUNS_MAX; i++) {
		uint64_t ro = r[i].off, rend = r[i].off + r[i].len, u = r[i].unit;
		uint64_t a = ro, b = rend, at;
		struct pxfer_digest h = { 0, 0 };
		unsigned int j;

		if (rend <= off || ro >= end || !u)
			continue;
		/* records start at ro + k * u; the last ends at rend */
		if (a < off)
			a = ro + (off - ro + u - 1) / u * u;
		if (b > end)
			b = ro + (end - ro) / u * u;
		if (a >= b)
			continue;
		/* the records of [a, b) must all be there, exactly */
		at = a;
		for (j = rec_at(recs, nrecs, a); j < nrecs && at < b; j++) {
			if (recs[j].off != at)
				break;
			pxfer_digest_add(&h, &recs[j].h);
			at += recs[j].len;
		}
		if (at != b)
			continue;
		ok->run[k++] = (struct pxfer_held_run){
			.off = a, .len = b - a, .unit = r[i].unit,
		};
		held += b - a;
		pxfer_digest_add(&sum, &h);
	}
	ok->nrun = (uint16_t)k;
	ok->held = held;
	memset(ok->digest, 0, PXFER_DIGEST_LEN);
	if (k) {
		ok->state = PXFER_HAVE_PART;
		pxfer_digest_wire(ok->digest, &sum);
	} else if (ok->state == PXFER_HAVE_PART) {
		ok->state = PXFER_HAVE_NONE;
	}
}

struct pxfer_partials *recv_shared_store(struct recv_shared *sh, int rootfd,
					 struct pxfer_partials_use *use,
					 int *err)
{
	struct pxfer_partials *ps = &sh->store;
	int ret = 0;

	/* tried again until it opens: a store that failed its checks may
	 * be mended while the receiver runs */
	pthread_mutex_lock(&sh->lock);
	if (atomic_load(&sh->store_open) <= 0) {
		ret = pxfer_partials_open(ps, rootfd);
		ps->use = use;
		atomic_store(&sh->store_open, ret ? 0 : 1);
	}
	pthread_mutex_unlock(&sh->lock);
	if (!ret)
		return ps;
	*err = ret;
	return NULL;
}

double recv_shared_flush_old(struct recv_shared *sh)
{
	if (atomic_load(&sh->store_open) <= 0)
		return PXFER_PARTIAL_AGE;
	return pxfer_partials_flush_old(&sh->store);
}
