// SPDX-License-Identifier: MIT
/*
 * The directories a receiving session makes: each remembered once, to be
 * given its mode and times at the end, and whether this session made it
 * (src/recv/rfile.h).
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
#include "recv/rfile.h"

/* keyed, so that a sender cannot choose paths that collide */
static uint32_t dir_hash(const struct pxfer_rfiles *r, const char *path)
{
	uint8_t h[crypto_shorthash_BYTES];
	uint32_t v;

	crypto_shorthash(h, (const uint8_t *)path, strlen(path), r->tmp_key);
	memcpy(&v, h, sizeof(v));
	return v;
}

/* the record of directory @path (hash @h), or NULL and where it goes */
static struct pxfer_rdir *dir_find(const struct pxfer_rfiles *r,
				   const char *path, uint32_t h, size_t *slot)
{
	size_t mask = r->dir_index_cap - 1;

	for (size_t i = h & mask; r->dir_index_cap; i = (i + 1) & mask) {
		uint64_t e = r->dir_index[i];

		if (!e) {
			*slot = i;
			return NULL;
		}
		if ((uint32_t)(e >> 32) == h &&
		    !strcmp(r->dirs[(uint32_t)e - 1].path, path))
			return &r->dirs[(uint32_t)e - 1];
	}
	return NULL;
}

/* room in the index for one more directory: at most half full */
static int dir_index_grow(struct pxfer_rfiles *r)
{
	size_t cap = r->dir_index_cap ? 2 * r->dir_index_cap : 256;
	uint64_t *old = r->dir_index;
	size_t old_cap = r->dir_index_cap, slot;

	if (2 * (r->ndirs + 1) <= r->dir_index_cap)
		return 0;
	r->dir_index = calloc(cap, sizeof(*r->dir_index));
	if (!r->dir_index) {
		r->dir_index = old;
		return -ENOMEM;
	}
	r->dir_index_cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		if (!old[i])
			continue;
		dir_find(r, r->dirs[(uint32_t)old[i] - 1].path, old[i] >> 32,
			 &slot);
		r->dir_index[slot] = old[i];
	}
	free(old);
	return 0;
}

int pxfer_rdirs_fresh(const struct pxfer_rfiles *r, const char *path)
{
	const struct pxfer_rdir *d;
	size_t slot;

	if (!*path)
		return 0;
	d = dir_find(r, path, dir_hash(r, path), &slot);
	return d && d->fresh;
}

/* a new record for directory @m (hash @h), known to fit */
static int remember_dir(struct pxfer_rfiles *r, const struct pxfer_file *m,
			uint32_t h)
{
	struct pxfer_rdir *d;
	size_t slot;

	if (dir_index_grow(r))
		return -ENOMEM;
	if (r->ndirs == r->dirs_cap) {
		size_t cap = r->dirs_cap ? 2 * r->dirs_cap : 64;

		d = realloc(r->dirs, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		r->dirs = d;
		r->dirs_cap = cap;
	}
	d = &r->dirs[r->ndirs];
	d->path = strdup(m->path);
	if (!d->path)
		return -ENOMEM;
	d->mode = m->mode & r->mode_mask;
	pxfer_rfile_times(d->times, m);
	dir_find(r, m->path, h, &slot);
	r->dir_index[slot] = (uint64_t)h << 32 | (uint32_t)(r->ndirs + 1);
	r->dirs_bytes += m->path_len + 1;
	r->ndirs++;
	return 0;
}

int pxfer_rfile_mkdir(struct pxfer_rfiles *r, const struct pxfer_file *m,
		      const char **what)
{
	uint32_t h = dir_hash(r, m->path);
	struct pxfer_rdir *d;
	size_t slot;
	int ret, made;

	if (!*r->dest && pxfer_rfile_reserved(m->path, m->path_len)) {
		*what = "the name is the receiver's own (its partial files)";
		return -EPERM;
	}
	/* a record that repeats one updates it: a sender cannot make the
	 * list grow but by new directories, and those are limited */
	d = dir_find(r, m->path, h, &slot);
	if (!d && (r->ndirs >= r->dirs_max ||
		   r->dirs_bytes + m->path_len + 1 > r->dirs_bytes_max)) {
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
		d = &r->dirs[r->ndirs - 1];
		/* made here and now: no name in it is older than this session */
		d->fresh = made;
		return 0;
	}
	d->mode = m->mode & r->mode_mask;
	pxfer_rfile_times(d->times, m);
	return 0;
}

void pxfer_rdirs_release(struct pxfer_rfiles *r)
{
	for (size_t i = 0; i < r->ndirs; i++)
		free(r->dirs[i].path);
	free(r->dirs);
	r->dirs = NULL;
	r->ndirs = r->dirs_cap = r->dirs_bytes = 0;
	free(r->dir_index);
	r->dir_index = NULL;
	r->dir_index_cap = 0;
}

void pxfer_rfiles_apply_dirs(struct pxfer_rfiles *r)
{
	/* deepest first: setting a mode may forbid entering what is below */
	for (size_t i = r->ndirs; i-- > 0;) {
		struct pxfer_rdir *d = &r->dirs[i];
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
