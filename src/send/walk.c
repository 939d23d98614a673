/* SPDX-License-Identifier: MIT */
/*
 * The sender's tree walk: iterative pre-order over the roots, one open
 * directory stream per level of depth. The local path (src) and the wire
 * path (rel) are kept in two buffers sized once at init; each level
 * remembers how long they were for its directory, so going up a level is
 * just a truncation.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "send/walk.h"

/* A rel path one name past the limit still fits, to be reported. */
#define REL_CAP		(PXFER_PATH_MAX + 1 + NAME_MAX + 1)
#define DIR_FLAGS	(O_RDONLY | O_DIRECTORY | O_CLOEXEC)
#define CHILD_FLAGS	(DIR_FLAGS | O_NOFOLLOW)	/* below a root */

struct pxfer_walk_level {
	DIR *dir;
	size_t src_len;		/* length of w->src naming this directory */
	size_t rel_len;		/* length of w->rel naming it (0: a root) */
};

/* Length of @root without trailing slashes ("/" stays "/"). */
static size_t root_len(const char *root)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	return n;
}

/*
 * The name @root has on the receiver: its last component, @len bytes.
 * @len is 0 for a root whose contents are sent directly ("/", ".", "..").
 */
static const char *root_name(const char *root, size_t *len)
{
	const char *end = root + root_len(root), *p = end;

	while (p > root && p[-1] != '/')
		p--;
	*len = end - p;
	if (*len == 1 && p[0] == '.')
		*len = 0;
	if (*len == 2 && p[0] == '.' && p[1] == '.')
		*len = 0;
	return p;
}

/*
 * A root must exist, be a regular file or a directory (a link is
 * followed) and be readable before anything is sent: a fifo, a socket or
 * a device named on the command line is a mistake to say, not an entry
 * to skip as inside a tree.
 */
static int check_root(const char *root)
{
	struct stat st;
	int mode = R_OK;

	if (stat(root, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		mode |= X_OK;
	else if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (faccessat(AT_FDCWD, root, mode, AT_EACCESS) < 0)
		return -errno;
	return 0;
}

struct root_key {
	const char *name;
	size_t len;
	int idx;
};

static int cmp_key(const void *a, const void *b)
{
	const struct root_key *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);

	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->idx - y->idx;
}

static int same_name(const struct root_key *x, const struct root_key *y)
{
	return x->len == y->len && !memcmp(x->name, y->name, x->len);
}

/* Two named roots may not arrive under the same name; -EEXIST if so. */
static int check_dups(char *const *roots, int nroots, const char **bad)
{
	struct root_key *k;
	int i, n = 0, first = -1;

	k = malloc(sizeof(*k) * (nroots ? nroots : 1));
	if (!k)
		return -ENOMEM;
	for (i = 0; i < nroots; i++) {
		k[n].name = root_name(roots[i], &k[n].len);
		k[n].idx = i;
		if (k[n].len)
			n++;
	}
	qsort(k, n, sizeof(*k), cmp_key);
	for (i = 1; i < n; i++)
		if (same_name(&k[i - 1], &k[i]) &&
		    (first < 0 || k[i].idx < first))
			first = k[i].idx;
	free(k);
	if (first < 0)
		return 0;
	*bad = roots[first];
	return -EEXIST;
}

static int walk_init(struct pxfer_walk *w, char *const *roots, int nroots,
		     const char **bad, int own)
{
	size_t len, max = 0;
	int i, ret;

	memset(w, 0, sizeof(*w));
	w->roots_lstat = own;
	ret = check_dups(roots, nroots, bad);
	if (ret)
		return ret;
	for (i = 0; i < nroots; i++) {
		ret = own ? 0 : check_root(roots[i]);
		if (ret) {
			*bad = roots[i];
			return ret;
		}
		len = strlen(roots[i]);
		if (len > max)
			max = len;
	}
	w->src = malloc(max + REL_CAP + 1);
	w->rel = malloc(max + REL_CAP + 1);
	if (!w->src || !w->rel) {
		pxfer_walk_release(w);
		return -ENOMEM;
	}
	w->roots = roots;
	w->nroots = nroots;
	return 0;
}

int pxfer_walk_init(struct pxfer_walk *w, char *const *roots, int nroots,
		    const char **bad)
{
	return walk_init(w, roots, nroots, bad, 0);
}

int pxfer_walk_init_own(struct pxfer_walk *w, char *const *roots, int nroots,
			const char **bad)
{
	return walk_init(w, roots, nroots, bad, 1);
}

static int grow(struct pxfer_walk *w)
{
	struct pxfer_walk_level *l;
	int cap;

	if (w->depth < w->cap)
		return 0;
	cap = w->cap ? 2 * w->cap : 16;
	l = realloc(w->levels, sizeof(*l) * cap);
	if (!l)
		return -ENOMEM;
	w->levels = l;
	w->cap = cap;
	return 0;
}

/* Make directory @fd (consumed), named by the current paths, a new level. */
static int push_dir(struct pxfer_walk *w, int fd)
{
	struct pxfer_walk_level *l;
	DIR *dir;
	int err;

	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		err = -errno;
		close(fd);
		return err;
	}
	l = &w->levels[w->depth++];
	l->dir = dir;
	l->src_len = w->src_len;
	l->rel_len = w->rel_len;
	return 0;
}

/* Close the deepest level; the paths name its directory again. */
static void pop_dir(struct pxfer_walk *w)
{
	struct pxfer_walk_level *l = &w->levels[--w->depth];

	closedir(l->dir);
	w->src_len = l->src_len;
	w->rel_len = l->rel_len;
	w->src[w->src_len] = '\0';
	w->rel[w->rel_len] = '\0';
}

static size_t join(char *buf, size_t len, const char *name, size_t n)
{
	if (len && buf[len - 1] != '/')
		buf[len++] = '/';
	memcpy(buf + len, name, n + 1);
	return len + n;
}

static int emit(struct pxfer_walk_entry *e, enum pxfer_walk_kind kind)
{
	e->kind = kind;
	return 1;
}

static int emit_error(struct pxfer_walk_entry *e, int err)
{
	e->err = err;
	return emit(e, PXFER_WALK_ERROR);
}

/* Enter the directory just stat'ed; @fd is its descriptor or -1. */
static int emit_dir(struct pxfer_walk *w, struct pxfer_walk_entry *e, int fd)
{
	int ret;

	ret = push_dir(w, fd);
	if (ret)
		return emit_error(e, ret);
	return emit(e, PXFER_WALK_DIR);
}

static int emit_link(struct pxfer_walk_entry *e, int dfd, const char *name)
{
	ssize_t n;

	n = readlinkat(dfd, name, e->target, sizeof(e->target));
	if (n < 0)
		return emit_error(e, -errno);
	if (n >= PXFER_PATH_MAX)
		return emit_error(e, -ENAMETOOLONG);
	if (n == 0)	/* no such link on Linux, and none on the wire */
		return emit_error(e, -EINVAL);
	e->target[n] = '\0';
	return emit(e, PXFER_WALK_SYMLINK);
}

/*
 * Open regular file @name of @dfd for the caller: one relative open and
 * an fstat, instead of a stat here and an open by the full path later.
 * Returns 1 with the entry, or 0 if it is not (or no longer) a regular
 * file, to be classified by its lstat instead.
 */
static int emit_open_file(struct pxfer_walk_entry *e, int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ELOOP)
			return 0;	/* a link now: classified as one */
		emit_error(e, -errno);
		return 1;
	}
	if (fstat(fd, &e->st) < 0) {
		int err = -errno;

		close(fd);
		emit_error(e, err);
		return 1;
	}
	if (!S_ISREG(e->st.st_mode)) {
		close(fd);
		return 0;
	}
	e->fd = fd;
	emit(e, PXFER_WALK_FILE);
	return 1;
}

/* Classify entry @name (type @dtype) of directory @dfd; the paths name it. */
static int emit_child(struct pxfer_walk *w, struct pxfer_walk_entry *e,
		      int dfd, const char *name, unsigned char dtype)
{
	if (w->open_files && dtype == DT_REG &&
	    emit_open_file(e, dfd, name))
		return 1;
	if (fstatat(dfd, name, &e->st, AT_SYMLINK_NOFOLLOW) < 0)
		return emit_error(e, -errno);
	switch (e->st.st_mode & S_IFMT) {
	case S_IFREG:
		return emit(e, PXFER_WALK_FILE);
	case S_IFLNK:
		return emit_link(e, dfd, name);
	case S_IFDIR:
		if (grow(w))
			return -ENOMEM;
		return emit_dir(w, e, openat(dfd, name, CHILD_FLAGS));
	default:
		return emit(e, PXFER_WALK_SKIP);
	}
}

static int is_dot(const char *name)
{
	return name[0] == '.' &&
	       (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Next entry of the deepest directory: 1 with @e, 0 if it ended. */
static int next_in_dir(struct pxfer_walk *w, struct pxfer_walk_entry *e)
{
	struct pxfer_walk_level *l = &w->levels[w->depth - 1];
	struct dirent *d;
	size_t n;
	int err;

	do {
		errno = 0;
		d = readdir(l->dir);
	} while (d && is_dot(d->d_name));
	if (!d) {
		err = errno;
		pop_dir(w);
		return err ? emit_error(e, -err) : 0;
	}
	n = strlen(d->d_name);
	w->src_len = join(w->src, l->src_len, d->d_name, n);
	w->rel_len = join(w->rel, l->rel_len, d->d_name, n);
	if (w->rel_len > PXFER_PATH_MAX)
		return emit_error(e, -ENAMETOOLONG);
	return emit_child(w, e, dirfd(l->dir), d->d_name, d->d_type);
}

/* Start root @root: 1 with @e, or 0 if only its contents are sent. */
static int next_root(struct pxfer_walk *w, struct pxfer_walk_entry *e,
		     const char *root)
{
	const char *name;
	int ret;

	w->src_len = root_len(root);
	memcpy(w->src, root, w->src_len);
	w->src[w->src_len] = '\0';
	name = root_name(root, &w->rel_len);
	memcpy(w->rel, name, w->rel_len);
	w->rel[w->rel_len] = '\0';
	if ((w->roots_lstat ? lstat(w->src, &e->st) : stat(w->src, &e->st)) < 0)
		return emit_error(e, -errno);
	if (S_ISREG(e->st.st_mode))
		return emit(e, PXFER_WALK_FILE);
	if (S_ISLNK(e->st.st_mode)) {
		ssize_t n = readlink(w->src, e->target, sizeof(e->target));

		if (n < 0)
			return emit_error(e, -errno);
		if ((size_t)n >= sizeof(e->target))
			return emit_error(e, -ENAMETOOLONG);
		e->target[n] = '\0';
		return emit(e, PXFER_WALK_SYMLINK);
	}
	if (!S_ISDIR(e->st.st_mode) && w->rel_len)
		return emit(e, PXFER_WALK_SKIP);
	if (!S_ISDIR(e->st.st_mode))
		return emit_error(e, -ENOTDIR);
	if (grow(w))
		return -ENOMEM;
	if (w->rel_len)
		return emit_dir(w, e, open(w->src, DIR_FLAGS));
	ret = push_dir(w, open(w->src, DIR_FLAGS));
	return ret ? emit_error(e, ret) : 0;
}

int pxfer_walk_next(struct pxfer_walk *w, struct pxfer_walk_entry *e)
{
	int ret;

	e->src = w->src;
	e->rel = w->rel;
	for (;;) {
		memset(&e->st, 0, sizeof(e->st));
		e->target[0] = '\0';
		e->err = 0;
		e->fd = -1;
		e->tag = 0;
		e->range_off = 0;
		e->range_len = 0;
		e->stable = 0;
		e->relay = NULL;
		if (w->depth)
			ret = next_in_dir(w, e);
		else if (w->next_root < w->nroots)
			ret = next_root(w, e, w->roots[w->next_root++]);
		else
			return 0;
		if (ret)
			return ret;
	}
}

void pxfer_walk_release(struct pxfer_walk *w)
{
	while (w->depth)
		closedir(w->levels[--w->depth].dir);
	free(w->levels);
	free(w->src);
	free(w->rel);
	memset(w, 0, sizeof(*w));
}
