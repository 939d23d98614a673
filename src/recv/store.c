// SPDX-License-Identifier: MIT
/*
 * The partial store (DIR/.pxfer): made, then checked before use, the way
 * sshd's StrictModes checks a user's files. DIR may be shared with other
 * local users (a drop directory of mode 1777): what they can make in it
 * is never taken for the receiver's. Each component is opened relative
 * to its parent without following links and checked once open (fstat),
 * so that the checked object is the one used; everything below is then
 * reached through the descriptor of DIR/.pxfer/partial, never by path.
 * The store is never removed once made: removing it is what would let
 * another user make it. docs/security.md, "A local user"; the names and
 * the checks are in docs/architecture.md, "Partial files".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "core/escape.h"
#include "core/log.h"
#include "recv/partial.h"

#define PARTIAL_DIR	"partial"
#define KEY_FILE	"key"
#define STATE_PARTIAL	PXFER_STATE_DIR "/" PARTIAL_DIR
#define STATE_KEY	PXFER_STATE_DIR "/" KEY_FILE

_Static_assert(PXFER_PARTIAL_SECRET_LEN == crypto_generichash_KEYBYTES,
	       "the names are keyed with a BLAKE2b key of its usual size");

/* the store's @name fails a check: -EPERM, and why in @ps */
__attribute__((format(printf, 3, 4)))
static int refuse(struct pxfer_partials *ps, const char *name,
		  const char *fmt, ...)
{
	va_list ap;

	ps->bad = name;
	va_start(ap, fmt);
	vsnprintf(ps->problem, sizeof(ps->problem), fmt, ap);
	va_end(ap);
	return -EPERM;
}

/* an open that failed with @err: a link or another type in the way is a
 * check that failed, anything else an error */
static int refuse_open(struct pxfer_partials *ps, const char *name, int err,
		       const char *want)
{
	if (err == ELOOP)
		return refuse(ps, name, "is a symbolic link: remove it");
	if (err == ENOTDIR)
		return refuse(ps, name, "is not %s: remove it", want);
	return -err;
}

/* @st, of the store's @name, belongs to the receiver: its owner is the
 * effective uid and neither group nor others can write it */
static int check_owner(struct pxfer_partials *ps, const char *name,
		       const struct stat *st)
{
	uid_t me = geteuid();

	if (st->st_uid != me)
		return refuse(ps, name, "is owned by uid %u, not this receiver (uid %u): remove it",
			      (unsigned int)st->st_uid, (unsigned int)me);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return refuse(ps, name, "is writable by its group or others (mode %04o): remove it, or chmod go-w it",
			      (unsigned int)(st->st_mode & 07777));
	return 0;
}

/* make directory @name in @dfd (0700) if missing, open it, check it:
 * fd or -errno (-EPERM: refused, why in @ps) */
static int open_dir(struct pxfer_partials *ps, int dfd, const char *name,
		    const char *what)
{
	struct stat st;
	int fd, ret;

	if (mkdirat(dfd, name, 0700) && errno != EEXIST)
		return -errno;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return refuse_open(ps, what, errno, "a directory");
	if (fstat(fd, &st)) {
		ret = -errno;
	} else if (!S_ISDIR(st.st_mode)) {
		ret = refuse(ps, what, "is not a directory: remove it");
	} else {
		ret = check_owner(ps, what, &st);
	}
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* a new secret as the key file in @sfd: 0, -EEXIST (another receiver
 * made it meanwhile), or -errno */
static int key_make(struct pxfer_partials *ps, int sfd)
{
	int fd, ret = 0;
	ssize_t n;

	fd = openat(sfd, KEY_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	randombytes_buf(ps->secret, sizeof(ps->secret));
	/* 0600 whatever the umask: the check wants exactly that */
	if (fchmod(fd, 0600))
		ret = -errno;
	n = ret ? 0 : write(fd, ps->secret, sizeof(ps->secret));
	if (!ret && n != (ssize_t)sizeof(ps->secret))
		ret = n < 0 ? -errno : -EIO;
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	if (ret)
		unlinkat(sfd, KEY_FILE, 0);
	return ret;
}

/* @st, the key file, is one the receiver made: 0 or -EPERM */
static int check_key(struct pxfer_partials *ps, const struct stat *st)
{
	int ret;

	if (!S_ISREG(st->st_mode))
		return refuse(ps, STATE_KEY, "is not a regular file: remove it");
	ret = check_owner(ps, STATE_KEY, st);
	if (ret)
		return ret;
	if ((st->st_mode & 07777) != 0600 || st->st_nlink != 1 ||
	    st->st_size != PXFER_PARTIAL_SECRET_LEN)
		return refuse(ps, STATE_KEY,
			      "is not a key this receiver made (mode %04o, %lu links, %lld bytes; not 0600, 1, %d): remove it",
			      (unsigned int)(st->st_mode & 07777),
			      (unsigned long)st->st_nlink, (long long)st->st_size,
			      PXFER_PARTIAL_SECRET_LEN);
	return 0;
}

/*
 * The secret from the key file in @sfd, made on first use. A key of
 * another size may be one another receiver is writing: looked at again
 * for 100 ms before it is refused.
 */
static int key_load(struct pxfer_partials *ps, int sfd)
{
	for (int i = 0;; i++) {
		struct stat st = { 0 };
		int fd, ret;

		/* O_NONBLOCK: never waits on a FIFO in its place */
		fd = openat(sfd, KEY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			    O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && i < 8) {
			ret = key_make(ps, sfd);
			if (ret != -EEXIST)
				return ret;
			continue;
		}
		if (fd < 0)
			return refuse_open(ps, STATE_KEY, errno, "a regular file");
		ret = fstat(fd, &st) ? -errno : check_key(ps, &st);
		if (!ret && pread(fd, ps->secret, sizeof(ps->secret), 0) !=
			    (ssize_t)sizeof(ps->secret))
			ret = -EIO;
		close(fd);
		if (ret != -EPERM || i >= 20 || st.st_size == PXFER_PARTIAL_SECRET_LEN)
			return ret;
		ps->bad = NULL;
		ps->problem[0] = 0;
		nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
	}
}

int pxfer_partials_open(struct pxfer_partials *ps, int rootfd)
{
	int sfd, ret;

	ps->dirfd = -1;
	ps->bad = NULL;
	ps->problem[0] = 0;
	atomic_init(&ps->pend_room, 0);
	ps->age = PXFER_PARTIAL_AGE;
	ps->open = NULL;
	ps->use = NULL;
	/* the keys (BLAKE2b) and nonces (randombytes) are libsodium's */
	if (sodium_init() < 0)
		return -EIO;
	sfd = open_dir(ps, rootfd, PXFER_STATE_DIR, PXFER_STATE_DIR);
	if (sfd < 0)
		return sfd;
	ret = key_load(ps, sfd);
	if (!ret) {
		ret = open_dir(ps, sfd, PARTIAL_DIR, STATE_PARTIAL);
		if (ret >= 0 && pthread_mutex_init(&ps->lock, NULL)) {
			close(ret);
			ret = -ENOMEM;
		}
		if (ret >= 0)
			ps->dirfd = ret;
	}
	close(sfd);
	if (ret < 0) {
		sodium_memzero(ps->secret, sizeof(ps->secret));
		return ret;
	}
	return 0;
}

void pxfer_partials_close(struct pxfer_partials *ps)
{
	if (ps->dirfd >= 0) {
		close(ps->dirfd);
		pthread_mutex_destroy(&ps->lock);
	}
	ps->dirfd = -1;
	sodium_memzero(ps->secret, sizeof(ps->secret));
}

void pxfer_partials_warn(const struct pxfer_partials *ps, const char *dir,
			 atomic_int *warned)
{
	char path[PATH_MAX], q[PXFER_QUOTE_MAX];

	if (!ps->bad || (warned && atomic_exchange(warned, 1)))
		return;
	if (dir)
		snprintf(path, sizeof(path), "%s%s%s", dir,
			 *dir && dir[strlen(dir) - 1] == '/' ? "" : "/", ps->bad);
	else
		snprintf(path, sizeof(path), "%s", ps->bad);
	pxfer_warning("%s %s; large files arrive without resume until then",
		pxfer_quote_str(q, sizeof(q), path), ps->problem);
}

void pxfer_partials_cap_warn(const struct pxfer_partials *ps, const char *dir)
{
	const struct pxfer_partials_use *u = ps->use;
	char path[PATH_MAX], q[PXFER_QUOTE_MAX], has[32], max[40];

	if (!u)
		return;
	snprintf(path, sizeof(path), "%s%s" PXFER_STATE_DIR "/partial",
		 dir ? dir : "", dir && *dir && dir[strlen(dir) - 1] != '/' ? "/" : "");
	pxfer_human(has, sizeof(has), (double)atomic_load(&u->bytes));
	if (u->max_bytes)
		pxfer_human(max, sizeof(max), (double)u->max_bytes);
	else
		snprintf(max, sizeof(max), "0");
	pxfer_warning("%s holds %llu partial files of %s, at its cap (--partial-max %llu, --partial-max-size %s): large files arrive without resume until some complete or expire (--partial-ttl); raise the cap, or remove there what is not to be resumed",
		pxfer_quote_str(q, sizeof(q), path),
		(unsigned long long)atomic_load(&u->count), has,
		(unsigned long long)u->max_count, max);
}

int pxfer_partial_file_ours(const struct stat *st)
{
	if (!S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
	    st->st_nlink != 1 || (st->st_mode & 077))
		return -EPERM;
	return 0;
}
