// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "core/escape.h"
#include "core/log.h"
#include "recv/path.h"
#include "recv/rfile.h"

_Static_assert(sizeof(((struct pxfer_rfiles *)0)->tmp_key) ==
	       crypto_shorthash_KEYBYTES, "the temporary names' key");

/* files above this are sized when created */
#define PRESIZE_MIN PXFER_UNNAMED_MAX

/*
 * A temporary name no one can guess without the session's key (a keyed
 * hash of a counter, so it costs no system call).
 */
static int make_tmp_name(struct pxfer_rfiles *r, char *buf, size_t len,
			 const char *base)
{
	uint64_t seq = atomic_fetch_add(&r->tmp_seq, 1);
	uint8_t h[crypto_shorthash_BYTES];
	uint32_t v;
	int n;

	crypto_shorthash(h, (const uint8_t *)&seq, sizeof(seq), r->tmp_key);
	memcpy(&v, h, sizeof(v));
	n = snprintf(buf, len, ".pxfer-%.200s.%08x.part", base, v);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- open parent directories ------------------------------------------ */

/*
 * the open parent directory of @path, shared; *base is its last part,
 * *fresh whether this session made that directory
 */
static int dcache_get(struct pxfer_rfiles *r, const char *path,
		      const char **base, int *fresh)
{
	const char *slash = strrchr(path, '/');
	size_t plen = slash ? (size_t)(slash - path) : 0;
	struct pxfer_dcache *d, *victim = NULL;
	char *copy;
	int fd;

	for (unsigned int i = 0; i < PXFER_DCACHE_N; i++) {
		d = &r->dcache[i];
		if (d->fd < 0) {
			if (!victim || victim->fd >= 0)
				victim = d;
			continue;
		}
		if (strlen(d->path) == plen && !memcmp(d->path, path, plen)) {
			d->refs++;
			d->used = ++r->dcache_tick;
			*base = slash ? slash + 1 : path;
			*fresh = d->fresh;
			return d->fd;
		}
		if (!d->refs && (!victim || (victim->fd >= 0 &&
					     d->used < victim->used)))
			victim = d;
	}
	*fresh = 0;
	fd = pxfer_path_open_parent(r->basefd, path, 1, base);
	if (fd < 0 || !victim)
		return fd;	/* every entry busy: this one is not shared */
	copy = strndup(path, plen);
	if (!copy)
		return fd;
	if (victim->fd >= 0)
		close(victim->fd);
	free(victim->path);
	victim->path = copy;
	victim->fd = fd;
	victim->refs = 1;
	victim->used = ++r->dcache_tick;
	victim->fresh = *fresh = pxfer_rdirs_fresh(&r->dirs, copy);
	return fd;
}

/* a file is done with its directory @fd from dcache_get */
static void dcache_put(struct pxfer_rfiles *r, int fd)
{
	for (unsigned int i = 0; i < PXFER_DCACHE_N; i++) {
		if (r->dcache[i].fd == fd) {
			r->dcache[i].refs--;
			return;
		}
	}
	close(fd);
}

static void dcache_release(struct pxfer_rfiles *r)
{
	for (unsigned int i = 0; i < PXFER_DCACHE_N; i++) {
		struct pxfer_dcache *d = &r->dcache[i];

		if (d->fd >= 0)
			close(d->fd);
		free(d->path);
		d->path = NULL;
		d->fd = -1;
		d->refs = 0;
	}
}

/* ---- naming unnamed files ---------------------------------------------- */

/* link @fd (O_TMPFILE) as @name in @dfd, the way pxfer_rfiles_probe() found */
static int link_fd(enum pxfer_link_how how, int fd, int dfd, const char *name)
{
	char proc[40];

	if (how == PXFER_LINK_EMPTY_PATH)
		return linkat(fd, "", dfd, name, AT_EMPTY_PATH) ? -errno : 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

/*
 * Give a complete unnamed file its name. A name that exists is replaced
 * at once, as rename does: linked under a temporary name, renamed over it.
 */
static int link_unnamed(struct pxfer_rfiles *r, struct pxfer_rfile *rf)
{
	char tmp[PXFER_NAME_MAX + 1];
	int ret = link_fd(r->link_how, rf->fd, rf->dirfd, rf->base);

	if (ret != -EEXIST)
		return ret;
	ret = make_tmp_name(r, tmp, sizeof(tmp), rf->base);
	if (!ret)
		ret = link_fd(r->link_how, rf->fd, rf->dirfd, tmp);
	if (ret)
		return ret;
	if (renameat(rf->dirfd, tmp, rf->dirfd, rf->base)) {
		ret = -errno;
		unlinkat(rf->dirfd, tmp, 0);
	}
	return ret;
}

/*
 * Can this process name an unnamed file? linkat(AT_EMPTY_PATH) needs
 * Linux 6.10 or CAP_DAC_READ_SEARCH; the /proc/self/fd link needs /proc.
 * Tried once per session on a file in the destination; with neither (or
 * no O_TMPFILE there), every file gets a temporary name.
 */
void pxfer_rfiles_probe(struct pxfer_rfiles *r)
{
	static const enum pxfer_link_how ways[] = { PXFER_LINK_EMPTY_PATH,
						    PXFER_LINK_PROC };
	/* PXFER_RECV_LINK=proc or =rename: what some systems are left
	 * with, to test those ways here */
	const char *force = getenv("PXFER_RECV_LINK");
	unsigned int first = force && !strcmp(force, "proc");
	char name[PXFER_NAME_MAX + 1];
	int fd = -1;

	struct stat st;

	r->link_how = PXFER_LINK_NONE;
	r->create_bits = 0;
	/* every bit asked: what the file gets is what the umask (or a
	 * default ACL) lets a mode at creation keep */
	if (!force || strcmp(force, "rename"))
		fd = openat(r->basefd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0777);
	if (fd >= 0 && !fstat(fd, &st))
		r->create_bits = st.st_mode & 0777;
	if (fd >= 0 && !make_tmp_name(r, name, sizeof(name), "probe")) {
		for (unsigned int i = first; i < 2; i++) {
			if (!link_fd(ways[i], fd, r->basefd, name)) {
				r->link_how = ways[i];
				unlinkat(r->basefd, name, 0);
				break;
			}
		}
	}
	if (fd >= 0)
		close(fd);
	if (r->link_how == PXFER_LINK_NONE)
		pxfer_verbose("files arrive under temporary names, renamed when complete");
	else
		pxfer_verbose("files up to %u KiB arrive unnamed, linked when complete (%s)",
			PXFER_UNNAMED_MAX >> 10, r->link_how == PXFER_LINK_EMPTY_PATH ?
			"linkat AT_EMPTY_PATH" : "linkat of /proc/self/fd");
}

/* ---- the files of a session -------------------------------------------- */

static int open_dest(int rootfd, const char *dest, size_t dest_len)
{
	int ret, fd;

	if (!dest_len) {
		fd = dup(rootfd);
		return fd < 0 ? -errno : fd;
	}
	ret = pxfer_path_check(dest, dest_len);
	if (!ret)
		ret = pxfer_path_mkdir(rootfd, dest, 0755);
	if (ret < 0)
		return ret;
	return pxfer_path_open_dir(rootfd, dest);
}

int pxfer_rfiles_init(struct pxfer_rfiles *r, int rootfd, const char *dest,
		      size_t dest_len, unsigned int n, int fsync,
		      uint32_t mode_mask)
{
	memset(r, 0, sizeof(*r));
	for (unsigned int i = 0; i < PXFER_DCACHE_N; i++)
		r->dcache[i].fd = -1;
	r->parts.dirfd = -1;
	r->fsync = fsync;
	/* never set-id bits from a peer */
	r->mode_mask = mode_mask & 01777;
	if (pxfer_rfile_reserved(dest, dest_len)) {
		r->basefd = -1;
		return -EPERM;
	}
	r->basefd = open_dest(rootfd, dest, dest_len);
	if (r->basefd < 0)
		return r->basefd;
	r->dest = strndup(dest, dest_len);
	if (!r->dest)
		return -ENOMEM;
	r->rootfd = rootfd;
	r->f = calloc(n, sizeof(*r->f));
	if (!r->f)
		return -ENOMEM;
	r->n = n;
	pxfer_rdirs_init(&r->dirs, r->basefd, r->mode_mask);
	crypto_shorthash_keygen(r->tmp_key);
	atomic_store(&r->tmp_seq, 0);
	return 0;
}

void pxfer_rfile_drop(struct pxfer_rfiles *r, uint64_t id, enum pxfer_drop how)
{
	struct pxfer_rfile *rf = &r->f[id];

	if (!rf->path)
		return;
	if (rf->shared)
		pxfer_rrange_drop(r, id);
	if (how != PXFER_DROP_DONE && rf->tmp)
		unlinkat(rf->dirfd, rf->tmp, 0);
	/* an empty file named when it came: what the sender gave up on */
	if (how == PXFER_DROP_DISCARD && rf->named)
		unlinkat(rf->dirfd, rf->base, 0);
	if (rf->part) {
		/* its descriptor is the partial's */
		pxfer_partial_close(rf->part, how == PXFER_DROP_KEEP && r->keep);
		free(rf->part);
		rf->fd = -1;
	}
	if (rf->check) {
		free(rf->check->pieces);
		free(rf->check);
	}
	if (rf->fd >= 0)
		close(rf->fd);
	if (rf->fwd_have)
		close(rf->fwd_fd);
	pxfer_relay_ent_put(rf->relay);
	if (rf->wait != PXFER_WAIT_SUM)	/* nothing opened for it */
		dcache_put(r, rf->dirfd);
	free(rf->path);
	free(rf->tmp);
	memset(rf, 0, sizeof(*rf));
}

void pxfer_rfiles_release(struct pxfer_rfiles *r)
{
	for (unsigned int i = 0; r->f && i < r->n; i++)
		pxfer_rfile_drop(r, i, PXFER_DROP_KEEP);
	free(r->f);
	r->f = NULL;
	pxfer_rdirs_release(&r->dirs);
	dcache_release(r);
	/* the store stays, empty or not: another user who can write the
	 * top directory could make it in its place once it is gone */
	if (r->parts.dirfd >= 0)
		pxfer_partials_close(&r->parts);
	free(r->dest);
	r->dest = NULL;
	if (r->basefd >= 0)
		close(r->basefd);
	r->basefd = -1;
}

/* ---- creating --------------------------------------------------------- */

static int rfile_symlink(struct pxfer_rfiles *r, const struct pxfer_file *m,
			 const char **what)
{
	char tmp[PXFER_NAME_MAX + 1];
	struct timespec ts[2];
	const char *base;
	int dfd, ret;

	if (!*r->dest && pxfer_rfile_reserved(m->path, m->path_len)) {
		*what = "the name is the receiver's own (its partial files)";
		return -EPERM;
	}
	*what = "unsafe or unusable path";
	dfd = pxfer_path_open_parent(r->basefd, m->path, 1, &base);
	if (dfd < 0)
		return dfd;
	*what = "cannot create the link";
	ret = make_tmp_name(r, tmp, sizeof(tmp), base);
	/* the link is created, never followed: its target is only text */
	if (!ret && symlinkat(m->target, dfd, tmp))
		ret = -errno;
	if (!ret && renameat(dfd, tmp, dfd, base)) {
		ret = -errno;
		unlinkat(dfd, tmp, 0);
	}
	if (!ret) {
		pxfer_rfile_times(ts, m);
		utimensat(dfd, base, ts, AT_SYMLINK_NOFOLLOW);
	}
	close(dfd);
	return ret;
}

int pxfer_rfile_mkdir(struct pxfer_rfiles *r, const struct pxfer_file *m,
		      struct pxfer_err *err)
{
	if (!*r->dest && pxfer_rfile_reserved(m->path, m->path_len))
		return pxfer_err_set(err, EPERM, "the name is the receiver's own (its partial files)");
	return pxfer_rdirs_make(&r->dirs, m, err);
}

void pxfer_rfiles_apply_dirs(struct pxfer_rfiles *r)
{
	pxfer_rdirs_apply(&r->dirs);
}

int pxfer_rfile_symlink(struct pxfer_rfiles *r, const struct pxfer_file *m,
			struct pxfer_err *err)
{
	const char *what = "unsafe or unusable path";
	int ret = rfile_symlink(r, m, &what);

	return ret < 0 ? pxfer_err_set(err, -ret, "%s", what) : ret;
}

/*
 * Is the file @base in @dfd already what @m describes? The same size and
 * modification time (PXFER_FILE_SKIP, rsync's quick check): 1, or 0.
 * With PXFER_FILE_CHECKSUM, a file of the same size: 2, open for reading
 * in *@fdp, for its content to be compared on the check threads (an
 * empty one is compared here).
 */
static int same_file(int dfd, const char *base, const struct pxfer_file *m,
		     struct stat *stp, int *fdp)
{
	struct pxfer_digest d;
	uint8_t wire[PXFER_DIGEST_LEN];
	struct stat st;
	int fd;

	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->size)
		return 0;
	*stp = st;
	if (m->flags & PXFER_FILE_SKIP)
		return st.st_mtim.tv_sec == m->mtime_sec &&
		       (uint32_t)st.st_mtim.tv_nsec == m->mtime_nsec;
	if (!(m->flags & PXFER_FILE_CHECKSUM))
		return 0;
	if (!m->size) {
		pxfer_digest_file(-1, 0, 0, &d);
		pxfer_digest_wire(wire, &d);
		return !memcmp(wire, m->digest, PXFER_DIGEST_LEN);
	}
	/* never a fifo put in its place meanwhile: no open that waits */
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->size) {
		close(fd);
		return 0;
	}
	*fdp = fd;
	return 2;
}

/* give the regular file @base in @dfd mode @mode, never following a link */
static void set_mode(int dfd, const char *base, uint32_t mode)
{
	int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		fchmod(fd, mode);
	close(fd);
}

/*
 * An empty file has no data to wait for: it is made under its name at
 * once, with its mode (the caller checked that the creation mask keeps
 * it) and then its time. Two system calls, where a file that has data
 * takes five; a receiver that dies between the two leaves the right
 * (empty) content with the wrong time, which the next run sends again.
 */
static int create_empty(int dfd, const char *base, uint32_t mode,
			const struct pxfer_file *m)
{
	struct timespec ts[2];

	if (mknodat(dfd, base, S_IFREG | mode, 0))
		return -errno;
	pxfer_rfile_times(ts, m);
	if (utimensat(dfd, base, ts, AT_SYMLINK_NOFOLLOW)) {
		int ret = -errno;

		unlinkat(dfd, base, 0);
		return ret;
	}
	return 0;
}

char *pxfer_rfile_top_path(const struct pxfer_rfiles *r, const char *path)
{
	char *p;

	if (!*r->dest)
		return strdup(path);
	if (asprintf(&p, "%s/%s", r->dest, path) < 0)
		return NULL;
	return p;
}

/*
 * A large file arrives in the partial store, so that what arrived of it
 * survives an interrupted session: open (or take up) its partial, and say
 * what it holds in *ok. 0; 1 when the file cannot have one here (no
 * store, another file system, or the store failed: it arrives as before);
 * -EBUSY when another session holds it.
 */
static int open_partial(struct pxfer_rfiles *r, const struct pxfer_file *m,
			int dfd, struct pxfer_rfile *rf, struct pxfer_file_ok *ok)
{
	struct pxfer_partial_id id = {
		.size = m->size, .mtime_sec = m->mtime_sec,
		.mtime_nsec = m->mtime_nsec,
	};
	struct pxfer_partial *p;
	char *top;
	int ret;

	if (m->size <= PXFER_UNNAMED_MAX)
		return 1;
	/* the store is made when the first large file arrives; without it
	 * files arrive as before, and cannot be resumed */
	if (r->parts.dirfd < 0 && !r->parts_failed) {
		ret = pxfer_partials_open(&r->parts, r->rootfd);
		r->parts_failed = !!ret;
		r->parts.use = r->use;
		if (!ret)
			pxfer_partials_ok(r->store_warned);
		else if (r->parts.bad)	/* not ours: never used */
			pxfer_partials_warn(&r->parts, r->dir, r->store_warned);
		else
			pxfer_verbose("no partial files (cannot use %s/partial: %s): an interrupted file starts over",
				PXFER_STATE_DIR, strerror(-ret));
	}
	if (r->parts.dirfd < 0 || !pxfer_partial_same_fs(&r->parts, dfd))
		return 1;
	top = pxfer_rfile_top_path(r, m->path);
	p = calloc(1, sizeof(*p));
	if (!top || !p) {
		free(top);
		free(p);
		return -ENOMEM;
	}
	id.path = top;
	id.path_len = strlen(top);
	ret = pxfer_partial_open(&r->parts, &id, !!(m->flags & PXFER_FILE_RESUME), p);
	if (ret) {
		free(top);
		free(p);
		if (ret == -EBUSY || ret == -ENOMEM)
			return ret;
		/* the store is full: said once a session */
		if (ret == -EDQUOT && !r->cap_warned++)
			pxfer_partials_cap_warn(&r->parts, r->dir);
		else if (ret != -EDQUOT)
			pxfer_verbose("cannot keep a partial file: %s; it arrives whole",
				strerror(-ret));
		return 1;
	}
	/* a record longer than any chunk was not written by a session: the
	 * journal is not to be trusted */
	for (unsigned int i = 0; p->state == PXFER_PARTIAL_HELD && i < p->nruns; i++) {
		if (p->runs[i].unit <= PXFER_CHUNK_MAX)
			continue;
		pxfer_partial_close(p, 0);
		ret = pxfer_partial_open(&r->parts, &id, PXFER_PARTIAL_ANEW, p);
		if (ret) {
			free(top);
			free(p);
			return 1;
		}
		p->state = PXFER_PARTIAL_CORRUPT;
		break;
	}
	free(top);
	rf->part = p;
	pxfer_partial_ok(p, ok);
	return 0;
}

static int rfile_create(struct pxfer_rfiles *r, const struct pxfer_file *m,
			const char **what, struct pxfer_file_ok *ok)
{
	struct pxfer_rfile *rf = &r->f[m->id];
	char tmp[PXFER_NAME_MAX + 1];
	const char *base;
	char *path = NULL, *tname = NULL;
	struct stat st;
	int dfd, fd = -1, ret, mode_set, fresh, as_made, unnamed = 0, same = 0;
	uint32_t mode;

	memset(ok, 0, offsetof(struct pxfer_file_ok, run));
	ok->id = m->id;
	*what = "unsafe or unusable path";
	if (!*r->dest && pxfer_rfile_reserved(m->path, m->path_len)) {
		*what = "the name is the receiver's own (its partial files)";
		return -EPERM;
	}
	dfd = dcache_get(r, m->path, &base, &fresh);
	if (dfd < 0)
		return dfd;
	/* in a directory this session made, nothing can be the same yet */
	if (!fresh && (m->flags & (PXFER_FILE_SKIP | PXFER_FILE_CHECKSUM)))
		same = same_file(dfd, base, m, &st, &fd);
	if (same == 2) {
		/* its content is compared first, off this thread */
		ret = pxfer_rfile_compare_job(r, m, dfd, base, fd);
		if (!ret)
			return 2;
		close(fd);
		dcache_put(r, dfd);
		return ret;
	}
	if (same) {
		/* the same data; its mode follows the sender's, as a copy's
		 * would (through a descriptor: never a link's target) */
		if ((st.st_mode & 07777) != (m->mode & r->mode_mask))
			set_mode(dfd, base, m->mode & r->mode_mask);
		dcache_put(r, dfd);
		ok->state = PXFER_HAVE_SAME;
		return 0;
	}
	*what = "cannot create the file";
	memset(rf, 0, sizeof(*rf));
	mode = m->mode & r->mode_mask;
	as_made = !(mode & ~r->create_bits);
	if (fresh && !m->size && as_made && !r->fsync && !r->verify) {
		ret = create_empty(dfd, base, mode, m);
		if (!ret) {
			path = strdup(m->path);
			if (!path) {
				unlinkat(dfd, base, 0);
				dcache_put(r, dfd);
				return -ENOMEM;
			}
			rf->fd = -1;
			rf->dirfd = dfd;
			rf->path = path;
			rf->base = path + (base - m->path);
			rf->mode = mode;
			rf->named = rf->finished = rf->mode_set = 1;
			return 0;
		}
	}
	if (m->flags & PXFER_FILE_RANGE) {
		char *top = pxfer_rfile_top_path(r, m->path);

		ret = pxfer_rrange_open(r, m, dfd, top, rf, ok, what);
		free(top);
	} else
		ret = open_partial(r, m, dfd, rf, ok);
	if (ret < 0) {
		if (ret == -EBUSY && !(m->flags & PXFER_FILE_RANGE))
			*what = "another session is writing this file; try again when it ends";
		dcache_put(r, dfd);
		return ret;
	}
	if (!ret)
		fd = rf->part->fd;
	/*
	 * A small file is made unnamed and linked when complete: cheaper for
	 * the directory than a temporary name and a rename, and nothing is
	 * left behind if the receiver dies. A large one keeps a visible
	 * temporary name, which shows how far it got.
	 */
	ret = 0;
	tmp[0] = 0;
	/* read and write: --verify reads it back */
	if (fd < 0 && r->link_how != PXFER_LINK_NONE && m->size <= PXFER_UNNAMED_MAX) {
		fd = openat(dfd, ".", O_RDWR | O_TMPFILE | O_CLOEXEC,
			    as_made ? mode : 0600);
		unnamed = fd >= 0;
	}
	if (fd < 0)
		ret = make_tmp_name(r, tmp, sizeof(tmp), base);
	if (fd < 0 && !ret) {
		fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC |
				      O_NOFOLLOW, 0600);
		if (fd < 0)
			ret = -errno;
	}
	/*
	 * A large file is sized up front: holes stay holes, and writes need
	 * not extend it. A small one only at the end, if it has holes. A
	 * partial is sized by its store.
	 */
	if (!ret && !rf->part && m->size > PRESIZE_MIN && ftruncate(fd, m->size))
		ret = -errno;
	/* no one can open an unnamed file: it can have its mode now, from
	 * its creation if the mask lets it, here rather than in the worker
	 * that completes it */
	mode_set = !ret && unnamed && (as_made || !fchmod(fd, mode));
	if (!ret) {
		path = strdup(m->path);
		tname = tmp[0] ? strdup(tmp) : NULL;
		if (!path || (tmp[0] && !tname))
			ret = -ENOMEM;
	}
	if (ret) {
		if (rf->shared) {
			pxfer_rrange_drop(r, m->id);
		} else if (rf->part) {
			pxfer_partial_close(rf->part, 1);
			free(rf->part);
			rf->part = NULL;
		} else if (fd >= 0) {
			close(fd);
			if (tmp[0])
				unlinkat(dfd, tmp, 0);
		}
		dcache_put(r, dfd);
		free(path);
		free(tname);
		return ret;
	}
	rf->fd = fd;
	rf->dirfd = dfd;
	rf->path = path;
	rf->base = path + (base - m->path);
	rf->tmp = tname;
	rf->size = m->size;
	rf->mode = mode;
	rf->mode_set = mode_set;
	pxfer_rfile_times(rf->times, m);
	/* what the journal says is held is read back before it is offered */
	if (ok->state != PXFER_HAVE_PART || (m->flags & PXFER_FILE_TRUST))
		return 0;
	ret = pxfer_rfile_check_job(r, m->id);
	if (ret) {
		pxfer_rfile_drop(r, m->id, PXFER_DROP_KEEP);
		return ret;
	}
	return 1;
}

int pxfer_rfile_create(struct pxfer_rfiles *r, const struct pxfer_file *m,
		       struct pxfer_err *err, struct pxfer_file_ok *ok)
{
	const char *what = "unsafe or unusable path";
	int ret = rfile_create(r, m, &what, ok);

	return ret < 0 ? pxfer_err_set(err, -ret, "%s", what) : ret;
}

/* ---- finishing -------------------------------------------------------- */

/*
 * --verify: read the file back from the storage (around the page cache
 * where the file system allows) and compare it with the sender's digest
 */
static int verify(struct pxfer_rfile *rf)
{
	uint8_t wire[PXFER_DIGEST_LEN];
	struct pxfer_digest d;
	int ret = pxfer_digest_file(rf->fd, rf->size, 1, &d);

	if (ret)
		return ret;
	pxfer_digest_wire(wire, &d);
	if (memcmp(wire, rf->digest, PXFER_DIGEST_LEN)) {
		rf->verify_bad = 1;
		return -EIO;
	}
	return 0;
}

static int finish(struct pxfer_rfiles *r, struct pxfer_rfile *rf,
		  uint64_t total)
{
	int ret;

	if (rf->size <= PRESIZE_MIN && total < rf->size && !rf->part &&
	    ftruncate(rf->fd, rf->size))
		return -errno;		/* it ends in a hole */
	if (r->fsync && fsync(rf->fd))
		return -errno;
	if (r->verify && (ret = verify(rf)))
		return ret;
	if ((!rf->mode_set && fchmod(rf->fd, rf->mode)) ||
	    futimens(rf->fd, rf->times))
		return -errno;
	if (rf->part) {
		ret = pxfer_partial_commit(rf->part, rf->dirfd, rf->base);
		if (!ret) {
			free(rf->part);
			rf->part = NULL;
			rf->fd = -1;
		}
	} else if (rf->tmp)
		ret = renameat(rf->dirfd, rf->tmp, rf->dirfd, rf->base) ? -errno : 0;
	else
		ret = link_unnamed(r, rf);
	if (ret)
		return ret;
	if (r->fsync && fsync(rf->dirfd))
		return -errno;
	return 0;
}

void pxfer_rfile_finish(struct pxfer_rfiles *r, uint64_t id, uint64_t total)
{
	struct pxfer_rfile *rf = &r->f[id];

	if (rf->shared) {
		pxfer_rrange_finish(r, id);
		return;
	}
	rf->finish_err = -finish(r, rf, total);
	if (!rf->finish_err && rf->fd >= 0) {
		close(rf->fd);
		rf->fd = -1;
	}
	rf->finished = 1;
}
