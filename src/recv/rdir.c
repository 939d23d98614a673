// SPDX-License-Identifier: MIT
/*
 * The directories a receiving session makes: each remembered once, to be
 * given its mode and times at the end, and whether this session made it
 * (src/recv/rdir.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "core/escape.h"
#include "core/log.h"
#include "recv/path.h"
#include "recv/rdir.h"

void pxfer_rdirs_init(struct pxfer_rdirs *r, int basefd, uint32_t mode_mask)
{
	memset(r, 0, sizeof(*r));
	r->basefd = basefd;
	r->mode_mask = mode_mask;
	r->max = PXFER_RDIRS_MAX;
	r->bytes_max = (size_t)PXFER_RDIRS_MIB << 20;
	crypto_shorthash_keygen(r->key);
}

/* keyed, so that a sender cannot choose paths that collide */
static uint32_t dir_hash(const struct pxfer_rdirs *r, const char *path)
{
	uint8_t h[crypto_shorthash_BYTES];
	uint32_t v;

	crypto_shorthash(h, (const uint8_t *)path, strlen(path), r->key);
	memcpy(&v, h, sizeof(v));
	return v;
}

/* the record of directory @path (hash @h), or NULL and where it goes */
static struct pxfer_rdir *dir_find(const struct pxfer_rdirs *r,
				   const char *path, uint32_t h, size_t *slot)
{
	size_t mask = r->index_cap - 1;

	for (size_t i = h & mask; r->index_cap; i = (i + 1) & mask) {
		uint64_t e = r->index[i];

		if (!e) {
			*slot = i;
			return NULL;
		}
		if ((uint32_t)(e >> 32) == h &&
		    !strcmp(r->d[(uint32_t)e - 1].path, path))
			return &r->d[(uint32_t)e - 1];
	}
	return NULL;
}

/* room in the index for one more directory: at most half full */
static int dir_index_grow(struct pxfer_rdirs *r)
{
	size_t cap = r->index_cap ? 2 * r->index_cap : 256;
	uint64_t *old = r->index;
	size_t old_cap = r->index_cap, slot;

	if (2 * (r->n + 1) <= r->index_cap)
		return 0;
	r->index = calloc(cap, sizeof(*r->index));
	if (!r->index) {
		r->index = old;
		return -ENOMEM;
	}
	r->index_cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		if (!old[i])
			continue;
		dir_find(r, r->d[(uint32_t)old[i] - 1].path, old[i] >> 32,
			 &slot);
		r->index[slot] = old[i];
	}
	free(old);
	return 0;
}

int pxfer_rdirs_fresh(const struct pxfer_rdirs *r, const char *path)
{
	const struct pxfer_rdir *d;
	size_t slot;

	if (!*path)
		return 0;
	d = dir_find(r, path, dir_hash(r, path), &slot);
	return d && d->fresh;
}

/* a new record for directory @m (hash @h), known to fit */
static int remember_dir(struct pxfer_rdirs *r, const struct pxfer_file *m,
			uint32_t h)
{
	struct pxfer_rdir *d;
	size_t slot;

	if (dir_index_grow(r))
		return -ENOMEM;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;

		d = realloc(r->d, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		r->d = d;
		r->cap = cap;
	}
	d = &r->d[r->n];
	d->path = strdup(m->path);
	if (!d->path)
		return -ENOMEM;
	d->mode = m->mode & r->mode_mask;
	pxfer_rfile_times(d->times, m);
	dir_find(r, m->path, h, &slot);
	r->index[slot] = (uint64_t)h << 32 | (uint32_t)(r->n + 1);
	r->bytes += m->path_len + 1;
	r->n++;
	return 0;
}

static int dir_make(struct pxfer_rdirs *r, const struct pxfer_file *m,
		    const char **what)
{
	uint32_t h = dir_hash(r, m->path);
	struct pxfer_rdir *d;
	size_t slot;
	int ret, made;

	/* a record that repeats one updates it: a sender cannot make the
	 * list grow but by new directories, and those are limited */
	d = dir_find(r, m->path, h, &slot);
	if (!d && (r->n >= r->max ||
		   r->bytes + m->path_len + 1 > r->bytes_max)) {
		*what = "more directories than one session keeps (131072, or 16 MiB of their paths); send the rest in another session";
		return -ENOBUFS;
	}
	/* owner-writable until the end, when the real mode is applied */
	made = pxfer_path_mkdir(r->basefd, m->path, 0700);
	*what = "cannot create the directory";
	if (made < 0)
		return made;
	if (!d) {
		ret = remember_dir(r, m, h);
		if (ret)
			return ret;
		d = &r->d[r->n - 1];
		/* made here and now: no name in it is older than this session */
		d->fresh = made;
		return 0;
	}
	d->mode = m->mode & r->mode_mask;
	pxfer_rfile_times(d->times, m);
	return 0;
}

int pxfer_rdirs_make(struct pxfer_rdirs *r, const struct pxfer_file *m,
		     struct pxfer_err *err)
{
	const char *what = "unsafe or unusable path";
	int ret = dir_make(r, m, &what);

	return ret < 0 ? pxfer_err_set(err, -ret, "%s", what) : ret;
}

void pxfer_rdirs_release(struct pxfer_rdirs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->d[i].path);
	free(r->d);
	r->d = NULL;
	r->n = r->cap = r->bytes = 0;
	free(r->index);
	r->index = NULL;
	r->index_cap = 0;
}

void pxfer_rdirs_apply(struct pxfer_rdirs *r)
{
	/* deepest first: setting a mode may forbid entering what is below */
	for (size_t i = r->n; i-- > 0;) {
		struct pxfer_rdir *d = &r->d[i];
		int fd = pxfer_path_open_dir(r->basefd, d->path);
		char q[PXFER_QUOTE_MAX];

		if (fd < 0)
			continue;
		if (fchmod(fd, d->mode) || futimens(fd, d->times))
			pxfer_warning("cannot set the mode or time of %s: %s",
				pxfer_quote_str(q, sizeof(q), d->path),
				strerror(errno));
		close(fd);
	}
}
