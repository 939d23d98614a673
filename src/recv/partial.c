// SPDX-License-Identifier: MIT
/*
 * Partial files: a partial's life (open, add, flush, commit, close), and
 * the sweep; the store is recv/store.c's, the journal's format
 * recv/journal.c's. Why the state survives a crash is in
 * docs/architecture.md, "Partial files".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "core/sys.h"
#include "recv/partial.h"

#define SUFFIX_DATA	".part"
#define SUFFIX_JNL	".jnl"
#define SUFFIX_TMP	".jnl.tmp"
#define NAME_BUF	(PXFER_PARTIAL_KEY_LEN + sizeof(SUFFIX_TMP))

/* the most of a journal that is read: a header, then the records read */
#define JOURNAL_READ_MAX (PXFER_JOURNAL_HDR_LEN(UINT16_MAX) + \
			  (size_t)PXFER_PARTIAL_RECORDS_MAX * PXFER_JOURNAL_REC_LEN)

static void name_of(char *buf, const char *key, const char *suffix)
{
	snprintf(buf, NAME_BUF, "%s%s", key, suffix);
}

/* ---- what the partials add up to (struct pxfer_partials_use) ------------ */

/* @v less @d, never below 0 (a count seeded short must not wrap) */
static void sub_sat(atomic_uint_fast64_t *v, uint64_t d)
{
	uint_fast64_t cur = atomic_load(v);

	while (!atomic_compare_exchange_weak(v, &cur, cur > d ? cur - d : 0))
		;
}

/* @n partials of @bytes between them went */
static void use_give(struct pxfer_partials_use *u, uint64_t n, uint64_t bytes)
{
	if (!u)
		return;
	sub_sat(&u->count, n);
	sub_sat(&u->bytes, bytes);
}

/*
 * One more partial of @size bytes, within the cap when @capped: taken
 * first and given back when past it, so that sessions that take at
 * once never pass it together. 0 or -EDQUOT
 */
static int use_take(struct pxfer_partials_use *u, uint64_t size, int capped)
{
	uint64_t n, b;

	if (!u)
		return 0;
	if (capped && u->max_bytes && size > u->max_bytes)
		return -EDQUOT;
	n = atomic_fetch_add(&u->count, 1) + 1;
	b = atomic_fetch_add(&u->bytes, size) + size;
	if (capped && ((u->max_count && n > u->max_count) ||
		       (u->max_bytes && b > u->max_bytes))) {
		use_give(u, 1, size);
		return -EDQUOT;
	}
	return 0;
}

/* a partial counted with @from bytes now has @to */
static void use_resize(struct pxfer_partials_use *u, uint64_t from, uint64_t to)
{
	if (!u || from == to)
		return;
	if (to > from)
		atomic_fetch_add(&u->bytes, to - from);
	else
		sub_sat(&u->bytes, from - to);
}

/* whether @name in @dfd is a data file as the scan counts it (a regular
 * file, not followed), its size in *@size */
static int data_counted(int dfd, const char *name, uint64_t *size)
{
	struct stat st;

	*size = 0;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
		return 0;
	*size = (uint64_t)st.st_size;
	return 1;
}

/* ---- the store ---------------------------------------------------------- */

int pxfer_partial_same_fs(const struct pxfer_partials *ps, int dirfd)
{
	struct statx a, b;

	if (statx(ps->dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &a) ||
	    statx(dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &b))
		return -errno;
	if (a.stx_dev_major != b.stx_dev_major ||
	    a.stx_dev_minor != b.stx_dev_minor)
		return 0;
	/* a bind mount of the same file system: rename fails across it */
	if (a.stx_mask & b.stx_mask & STATX_MNT_ID)
		return a.stx_mnt_id == b.stx_mnt_id;
	return 1;
}

/* ---- locking a journal -------------------------------------------------- */

/*
 * flock @fd. @wait: a few tries, a millisecond apart, since the sweep
 * holds the lock of a journal it looks at for a moment; a session holds
 * it for good, and that is -EBUSY.
 */
static int lock_fd(int fd, int wait)
{
	for (int i = 0;; i++) {
		if (!flock(fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return -errno;
		if (!wait || i == 3)
			return -EBUSY;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
}

/* 1 when name @name in @dfd still holds what @fd is, 0 when not */
static int still_named(int dfd, const char *name, int fd)
{
	struct stat a, b;

	if (fstat(fd, &a) || fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW))
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* whether open @fd, not made by this receiver, may be used: 0 or -errno */
static int check_found(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -errno : pxfer_partial_file_ours(&st);
}

/*
 * Open and lock journal @name in @dfd, made first when @make (*@created
 * says whether this call made it). The lock is on what the name held
 * when it was opened, which another holder may since have replaced
 * (rename) or removed before it let go: so the name must still hold it
 * once locked, or it is opened again. A journal found is used only when
 * it is the receiver's (pxfer_partial_file_ours); anything else under the
 * name (a link, another's file, a FIFO) is removed, and with @make one is
 * made anew. O_RDWR, which never waits on a FIFO. fd, -EBUSY, -ENOENT
 * (not @make), or -errno.
 */
static int journal_lock(int dfd, const char *name, int make, int wait,
			int *created)
{
	const int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC;

	for (int i = 0; i < 8; i++) {
		int fd = -1, ret;

		*created = 0;
		if (make) {
			fd = openat(dfd, name, flags | O_CREAT | O_EXCL, 0600);
			*created = fd >= 0;
		}
		if (fd < 0 && (!make || errno == EEXIST))
			fd = openat(dfd, name, flags);
		if (fd < 0 && errno == ENOENT && make)
			continue;	/* removed between the two opens */
		/* a link, or a file this receiver cannot open: no session's
		 * journal, so no lock to take first */
		if (fd < 0 && (errno == ELOOP || errno == EACCES)) {
			if (unlinkat(dfd, name, 0) && errno != ENOENT)
				return -errno;
			if (!make)
				return -ENOENT;
			continue;
		}
		if (fd < 0)
			return -errno;
		ret = lock_fd(fd, wait);
		if (!ret)
			ret = still_named(dfd, name, fd);
		/* not one of ours: removed with its lock held, as the sweep
		 * and a discard remove a journal */
		if (ret > 0 && !*created && check_found(fd)) {
			ret = unlinkat(dfd, name, 0) ? -errno : 0;
			if (!ret && !make)
				ret = -ENOENT;
		}
		if (ret > 0)
			return fd;
		close(fd);
		if (ret < 0)
			return ret;
		if (!make && faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW))
			return -ENOENT;
	}
	return -EAGAIN;
}

/* ---- a partial's journal and data --------------------------------------- */

/*
 * Replace the journal with a new one: @id's header under a new nonce and
 * records @r[0..@n). Written as <key>.jnl.tmp, made durable, renamed over
 * <key>.jnl and the directory synced, so that a crash leaves the old
 * journal or the new one, whole, and records added later go to the new
 * one only. The new file is locked before the rename: the name never
 * holds a journal of ours unlocked.
 */
static int journal_replace(struct pxfer_partial *p,
			   const struct pxfer_partial_id *id,
			   const struct pxfer_partial_rec *r, unsigned int n)
{
	char tmp[NAME_BUF], jnl[NAME_BUF];
	uint8_t *hdr = malloc(PXFER_JOURNAL_HDR_LEN(id->path_len));
	uint64_t nonce;
	size_t hlen;
	int tfd, ret = 0;

	if (!hdr)
		return -ENOMEM;
	name_of(tmp, p->key, SUFFIX_TMP);
	name_of(jnl, p->key, SUFFIX_JNL);
	randombytes_buf(&nonce, sizeof(nonce));
	hlen = pxfer_partial_header_encode(hdr, id, nonce);
	/* a leftover of a crash: ours, since the journal's lock is */
	unlinkat(p->dirfd, tmp, 0);
	tfd = openat(p->dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
		     O_CLOEXEC, 0600);
	if (tfd < 0) {
		free(hdr);
		return -errno;
	}
	if (flock(tfd, LOCK_EX | LOCK_NB))
		ret = -errno;
	if (!ret)
		ret = pxfer_pwrite_full(tfd, hdr, hlen, 0);
	if (!ret)
		ret = pxfer_partial_write_records(tfd, hlen, r, n, nonce);
	if (!ret && fdatasync(tfd))
		ret = -errno;
	if (!ret && renameat(p->dirfd, tmp, p->dirfd, jnl))
		ret = -errno;
	free(hdr);
	if (ret) {
		close(tfd);
		unlinkat(p->dirfd, tmp, 0);
		return ret;
	}
	close(p->jfd);
	p->jfd = tfd;
	p->nonce = nonce;
	p->jend = hlen + (uint64_t)n * PXFER_JOURNAL_REC_LEN;
	p->jrecs = n;
	p->jsmall = 0;
	for (unsigned int i = 0; i < n; i++)
		p->jsmall += r[i].len < PXFER_PARTIAL_SMALL;
	p->full = p->jrecs >= PXFER_PARTIAL_RECORDS_MAX;
	p->small_full = p->jsmall >= PXFER_PARTIAL_SMALL_MAX;
	return fsync(p->dirfd) ? -errno : 0;
}

/* the journal's bytes (at most JOURNAL_READ_MAX), parsed into @l */
static int journal_load(int jfd, const struct pxfer_partial_id *id,
			struct pxfer_partial_load *l)
{
	struct stat st;
	size_t len, got = 0;
	uint8_t *buf;
	int ret;

	if (fstat(jfd, &st))
		return -errno;
	len = (uint64_t)st.st_size < JOURNAL_READ_MAX ? (size_t)st.st_size :
							 JOURNAL_READ_MAX;
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	while (got < len) {
		ssize_t n = pread(jfd, buf + got, len - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	ret = pxfer_partial_parse(buf, got, id, l);
	free(buf);
	return ret;
}

/*
 * Open the data file: the one found when @adopt (the journal was found,
 * not made) and it is the receiver's (pxfer_partial_file_ours), with
 * *@fits when it has @size bytes; else a new one (O_EXCL), and anything
 * under its name (a link, a FIFO, another's file, data without its
 * journal) removed first: never adopted.
 */
static int data_open(struct pxfer_partial *p, uint64_t size, int adopt,
		     int *fits)
{
	const int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC;
	char name[NAME_BUF];
	struct stat st;
	int fd;

	name_of(name, p->key, SUFFIX_DATA);
	*fits = 0;
	/* only a regular file is opened: never a device in its place */
	if (adopt && !fstatat(p->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISREG(st.st_mode)) {
		fd = openat(p->dirfd, name, flags);
		if (fd >= 0 && !fstat(fd, &st) && !pxfer_partial_file_ours(&st)) {
			*fits = (uint64_t)st.st_size == size;
			return fd;
		}
		if (fd >= 0)
			close(fd);
	}
	for (int i = 0; i < 2; i++) {
		if (unlinkat(p->dirfd, name, 0) && errno != ENOENT)
			return -errno;
		fd = openat(p->dirfd, name, flags | O_CREAT | O_EXCL, 0600);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

int pxfer_partial_open(struct pxfer_partials *ps,
		       const struct pxfer_partial_id *id, int flags,
		       struct pxfer_partial *p)
{
	int resume = flags & PXFER_PARTIAL_RESUME;
	struct pxfer_partial_load l;
	char jnl[NAME_BUF], data[NAME_BUF];
	int fits = 0, created, counted, ret;
	uint64_t was;

	memset(p, 0, sizeof(*p));
	memset(&l, 0, sizeof(l));
	p->fd = p->jfd = -1;
	if (ps->dirfd < 0)
		return -EBADF;
	if (!id->path_len)
		return -EINVAL;
	if (id->path_len > UINT16_MAX)
		return -ENAMETOOLONG;
	if (id->size > INT64_MAX)
		return -EFBIG;
	p->dirfd = ps->dirfd;
	p->room = &ps->pend_room;
	p->store = ps;
	p->age = ps->age;
	pxfer_partial_key(ps->secret, id->path, id->path_len, p->key);
	name_of(jnl, p->key, SUFFIX_JNL);
	ret = journal_lock(p->dirfd, jnl, 1, 1, &created);
	if (ret < 0)
		return ret;
	p->jfd = ret;
	/* a data file there is counted already (the scan, or its maker) */
	name_of(data, p->key, SUFFIX_DATA);
	counted = data_counted(p->dirfd, data, &was);
	if (!counted) {
		ret = use_take(ps->use, id->size, !(flags & PXFER_PARTIAL_ANEW));
		if (ret)
			goto out_made;
	}
	ret = data_open(p, id->size, !created, &fits);
	if (ret < 0)
		goto out_taken;
	p->fd = ret;
	ret = resume ? journal_load(p->jfd, id, &l) : 0;
	if (ret)
		goto out_load;
	if (l.state == PXFER_PARTIAL_HELD && !fits) {
		pxfer_partial_load_free(&l);
		memset(&l, 0, sizeof(l));
		l.state = PXFER_PARTIAL_CORRUPT;
	}
	/*
	 * The journal is replaced before the data is emptied: a crash in
	 * between leaves a journal that holds nothing, never old records
	 * over emptied data.
	 */
	if (l.state == PXFER_PARTIAL_HELD) {
		ret = journal_replace(p, id, l.recs, l.nrecs);
	} else {
		ret = journal_replace(p, id, NULL, 0);
		if (!ret && (ftruncate(p->fd, 0) || ftruncate(p->fd, (off_t)id->size)))
			ret = -errno;
	}
	if (!ret)
		ret = pxfer_partial_pend_init(p);
	if (ret)
		goto out_load;
	p->state = l.state;
	p->runs = l.runs;
	p->nruns = l.nruns;
	p->held = l.held;
	p->digest = l.digest;
	p->ignored = l.ignored;
	p->recs = l.recs;
	p->nrecs = l.nrecs;
	l.runs = NULL;
	l.recs = NULL;
	pxfer_partial_load_free(&l);
	p->use = ps->use;
	p->size = id->size;
	if (counted)
		use_resize(p->use, was, id->size);
	p->is_open = 1;
	return 0;

out_load:
	pxfer_partial_load_free(&l);
	close(p->fd);
	p->fd = -1;
out_taken:
	/* one this call made holds nothing: it goes, as it was counted */
	if (!counted) {
		unlinkat(p->dirfd, data, 0);
		use_give(ps->use, 1, id->size);
	}
out_made:
	if (!counted || created)
		unlinkat(p->dirfd, jnl, 0);
	close(p->jfd);
	p->jfd = -1;
	return ret;
}

/* ---- the end of a partial ----------------------------------------------- */

static void release(struct pxfer_partial *p)
{
	close(p->fd);
	close(p->jfd);
	free(p->runs);
	free(p->recs);
	pxfer_partial_pend_free(p);
	memset(p, 0, sizeof(*p));
	p->fd = p->jfd = -1;
}

int pxfer_partial_commit(struct pxfer_partial *p, int dirfd, const char *base)
{
	char name[NAME_BUF];

	if (!p->is_open)
		return -EBADF;
	name_of(name, p->key, SUFFIX_DATA);
	if (renameat(p->dirfd, name, dirfd, base))
		return -errno;
	use_give(p->use, 1, p->size);
	/* a journal left by a crash here has no data: the next open
	 * discards it, or the sweep */
	name_of(name, p->key, SUFFIX_JNL);
	unlinkat(p->dirfd, name, 0);
	release(p);
	return 0;
}

void pxfer_partial_close(struct pxfer_partial *p, int keep)
{
	char name[NAME_BUF];

	if (!p->is_open)
		return;
	if (keep) {
		pxfer_partial_flush(p);
	} else {
		/* still locked: whoever opened the names meanwhile finds
		 * them gone once it has the lock, and starts anew */
		name_of(name, p->key, SUFFIX_DATA);
		if (!unlinkat(p->dirfd, name, 0))
			use_give(p->use, 1, p->size);
		name_of(name, p->key, SUFFIX_JNL);
		unlinkat(p->dirfd, name, 0);
	}
	release(p);
}

/* ---- the sweep ---------------------------------------------------------- */

enum name_kind { NAME_NONE, NAME_DATA, NAME_JNL, NAME_TMP };

/* what @name is in the store, its key copied to @key */
static enum name_kind name_kind(const char *name, char *key)
{
	static const struct { const char *suffix; enum name_kind kind; } k[] = {
		{ SUFFIX_DATA, NAME_DATA }, { SUFFIX_JNL, NAME_JNL },
		{ SUFFIX_TMP, NAME_TMP },
	};

	for (unsigned int i = 0; i < PXFER_PARTIAL_KEY_LEN; i++)
		if (!strchr("0123456789abcdef", name[i]) || !name[i])
			return NAME_NONE;
	for (unsigned int i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		if (!strcmp(name + PXFER_PARTIAL_KEY_LEN, k[i].suffix)) {
			memcpy(key, name, PXFER_PARTIAL_KEY_LEN);
			key[PXFER_PARTIAL_KEY_LEN] = 0;
			return k[i].kind;
		}
	}
	return NAME_NONE;
}

static int older(const struct stat *st, double ttl, double now)
{
	return now - (st->st_mtim.tv_sec + st->st_mtim.tv_nsec / 1e9) > ttl;
}

/* @dfd's data file @data, counted in @u, removed: 1 when it went */
static int data_remove(int dfd, const char *data, struct pxfer_partials_use *u)
{
	uint64_t size;
	int counted = data_counted(dfd, data, &size);

	if (unlinkat(dfd, data, 0))
		return 0;
	if (counted)
		use_give(u, 1, size);
	return 1;
}

/*
 * Look at @key, found as a name of @kind, with its journal locked (made
 * for the purpose when missing), so that no session holds the key
 * meanwhile and no session's journal is taken for an old one. 1 when a
 * partial was removed (and given back to @u).
 */
static int sweep_key(int dfd, const char *key, enum name_kind kind,
		     double ttl, double now, struct pxfer_partials_use *u)
{
	char jnl[NAME_BUF], data[NAME_BUF], tmp[NAME_BUF];
	int jfd, created, removed = 0;
	struct stat st;

	name_of(jnl, key, SUFFIX_JNL);
	name_of(data, key, SUFFIX_DATA);
	name_of(tmp, key, SUFFIX_TMP);
	/* first without the lock, so that fresh state is not even locked */
	if (kind == NAME_JNL && (fstatat(dfd, jnl, &st, AT_SYMLINK_NOFOLLOW) ||
				 !older(&st, ttl, now)))
		return 0;
	if (kind == NAME_DATA && (!faccessat(dfd, jnl, F_OK, AT_SYMLINK_NOFOLLOW) ||
				  fstatat(dfd, data, &st, AT_SYMLINK_NOFOLLOW) ||
				  !older(&st, ttl, now)))
		return 0;	/* a journal: looked at under its own name */
	jfd = journal_lock(dfd, jnl, kind != NAME_JNL, 0, &created);
	if (jfd < 0)
		return 0;
	if (!created && !fstat(jfd, &st) && older(&st, ttl, now)) {
		data_remove(dfd, data, u);
		removed = 1;
	} else if (created && !fstatat(dfd, data, &st, AT_SYMLINK_NOFOLLOW) &&
		   older(&st, ttl, now)) {
		removed = data_remove(dfd, data, u);
	}
	/* no session writes a temporary journal without the lock */
	unlinkat(dfd, tmp, 0);
	if (removed || created)
		unlinkat(dfd, jnl, 0);
	close(jfd);
	return removed;
}

/* the store's entries, read with a description of its own (readdir's
 * position is not shared): NULL with errno set */
static DIR *store_list(struct pxfer_partials *ps)
{
	int fd;
	DIR *d;

	if (ps->dirfd < 0) {
		errno = EBADF;
		return NULL;
	}
	fd = openat(ps->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

int pxfer_partials_sweep(struct pxfer_partials *ps, double ttl, time_t now)
{
	char key[PXFER_PARTIAL_KEY_LEN + 1];
	DIR *d = store_list(ps);
	struct dirent *e;
	int removed = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		enum name_kind kind = name_kind(e->d_name, key);

		if (kind != NAME_NONE)
			removed += sweep_key(ps->dirfd, key, kind, ttl, (double)now,
					     ps->use);
	}
	closedir(d);
	return removed;
}

int pxfer_partials_scan(struct pxfer_partials *ps, uint64_t *count,
			uint64_t *bytes)
{
	char key[PXFER_PARTIAL_KEY_LEN + 1];
	DIR *d = store_list(ps);
	struct dirent *e;
	uint64_t size;

	*count = *bytes = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (name_kind(e->d_name, key) == NAME_DATA &&
		    data_counted(ps->dirfd, e->d_name, &size)) {
			++*count;
			*bytes += size;
		}
	}
	closedir(d);
	return 0;
}

void pxfer_partial_ok(const struct pxfer_partial *p, struct pxfer_file_ok *ok)
{
	switch (p->state) {
	case PXFER_PARTIAL_HELD:
		if (!p->nruns)
			break;
		ok->state = PXFER_HAVE_PART;
		ok->held = p->held;
		pxfer_digest_wire(ok->digest, &p->digest);
		ok->nrun = p->nruns;
		memcpy(ok->run, p->runs, p->nruns * sizeof(*ok->run));
		break;
	case PXFER_PARTIAL_STALE:
		ok->state = PXFER_HAVE_STALE;
		break;
	case PXFER_PARTIAL_CORRUPT:
		ok->state = PXFER_HAVE_BAD;
		break;
	default:
		break;
	}
}
