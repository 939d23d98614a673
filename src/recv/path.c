/* SPDX-License-Identifier: MIT */
/*
 * Path confinement on the receiver. A wire path is first checked lexically
 * (pxfer_path_check: no "..", no ".", no empty component, no leading '/'),
 * then resolved beneath the top directory without ever following a link:
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | ...) where the kernel
 * has it, otherwise one component at a time with O_NOFOLLOW | O_DIRECTORY.
 * Since no component can be "..", both ways stay beneath the top directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "recv/path.h"
#include "core/proto.h"

#define DIR_FLAGS	(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define RESOLVE_FLAGS	(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | \
			 RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
#define MKDIR_MODE	0755

/*
 * Set once openat2 is known to be missing (or forced off by a test): a
 * probe result, per process, since the kernel is the same for every
 * call; read and written atomically, since calls run at once.
 */
static int use_fallback;

void pxfer_path_force_fallback(int on)
{
	__atomic_store_n(&use_fallback, !!on, __ATOMIC_RELAXED);
}

static int check_component(const char *c, size_t n)
{
	if (n == 0 || n > PXFER_NAME_MAX)
		return -EINVAL;
	if (c[0] == '.' && (n == 1 || (n == 2 && c[1] == '.')))
		return -EINVAL;
	return 0;
}

int pxfer_path_check(const char *path, size_t len)
{
	const char *p, *end, *slash;
	int ret;

	if (!path || len == 0 || strlen(path) != len)
		return -EINVAL;
	if (len > PXFER_PATH_MAX)
		return -ENAMETOOLONG;
	if (path[0] == '/')
		return -EINVAL;
	end = path + len;
	for (p = path; p <= end; p = slash + 1) {
		slash = memchr(p, '/', end - p);
		if (!slash)
			slash = end;
		ret = check_component(p, slash - p);
		if (ret)
			return ret;
	}
	return 0;
}

static int sys_openat2(int dirfd, const char *path)
{
	struct open_how how = {
		.flags = DIR_FLAGS,
		.resolve = RESOLVE_FLAGS,
	};
	int tries = 3;
	long fd;

	do {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	} while (fd < 0 && errno == EAGAIN && --tries);
	return fd < 0 ? -errno : (int)fd;
}

/*
 * Copy the first component of *@p (a checked path) into @name and step *@p
 * past it; returns 1 if another component follows.
 */
static int take_component(const char **p, char *name)
{
	const char *slash = strchr(*p, '/');
	size_t n = slash ? (size_t)(slash - *p) : strlen(*p);

	memcpy(name, *p, n);
	name[n] = '\0';
	*p += n + (slash != NULL);
	return slash != NULL;
}

/* What identifies the mount a descriptor lives on. */
struct mnt_key {
	dev_t dev;
	unsigned long long mnt;	/* 0 where the kernel has no mount ids */
};

static int mount_key(int fd, struct mnt_key *k, mode_t *type)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_MNT_ID, &stx) < 0)
		return -errno;
	k->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	k->mnt = stx.stx_mask & STATX_MNT_ID ? stx.stx_mnt_id : 0;
	*type = stx.stx_mode & S_IFMT;
	return 0;
}

/* Open one component (no '/', not "." or "..") of directory @dirfd. */
static int open_component(int dirfd, const char *name,
			  const struct mnt_key *root)
{
	struct mnt_key k;
	mode_t type;
	int fd, ret;

	fd = openat(dirfd, name, DIR_FLAGS);
	if (fd < 0)
		return -errno;
	ret = mount_key(fd, &k, &type);
	if (!ret && (k.dev != root->dev || k.mnt != root->mnt))
		ret = -EXDEV;
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * Walk @path (checked, relative) one component at a time, refusing to
 * cross into another mount as RESOLVE_NO_XDEV would.
 */
static int walk_fallback(int rootfd, const char *path)
{
	char name[PXFER_NAME_MAX + 1];
	int fd = rootfd, next, more;
	struct mnt_key root;
	mode_t type;

	next = mount_key(rootfd, &root, &type);
	if (next)
		return next;
	if (type != S_IFDIR)
		return -ENOTDIR;
	for (;;) {
		more = take_component(&path, name);
		next = open_component(fd, name, &root);
		if (fd != rootfd)
			close(fd);
		if (next < 0 || !more)
			return next;
		fd = next;
	}
}

/* Open directory @path (checked, relative, non-empty) beneath @dirfd. */
static int open_beneath(int dirfd, const char *path)
{
	int fd;

	if (!__atomic_load_n(&use_fallback, __ATOMIC_RELAXED)) {
		fd = sys_openat2(dirfd, path);
		if (fd != -ENOSYS)
			return fd;
		pxfer_path_force_fallback(1);
	}
	return walk_fallback(dirfd, path);
}

static int open_top(int rootfd)
{
	int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Open or create one component @name of @dirfd as a real directory. */
static int mkdir_component(int dirfd, const char *name, mode_t mode)
{
	int fd = open_beneath(dirfd, name);

	if (fd != -ENOENT)
		return fd;
	if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
		return -errno;
	return open_beneath(dirfd, name);
}

/* Like mkdir -p for @path (checked, relative); returns an open fd of it. */
static int mkdir_walk(int rootfd, const char *path)
{
	char name[PXFER_NAME_MAX + 1];
	int fd = rootfd, next, more;

	for (;;) {
		more = take_component(&path, name);
		next = mkdir_component(fd, name, MKDIR_MODE);
		if (fd != rootfd)
			close(fd);
		if (next < 0 || !more)
			return next;
		fd = next;
	}
}

/* Open directory @path, creating what is missing if @create. */
static int open_dir_path(int rootfd, const char *path, int create)
{
	int fd = open_beneath(rootfd, path);

	if (fd == -ENOENT && create)
		fd = mkdir_walk(rootfd, path);
	return fd;
}

int pxfer_path_open_parent(int rootfd, const char *path, int create,
			   const char **base)
{
	char dir[PXFER_PATH_MAX + 1];
	const char *slash;
	int ret;

	ret = pxfer_path_check(path, path ? strlen(path) : 0);
	if (ret)
		return ret;
	slash = strrchr(path, '/');
	if (!slash) {
		*base = path;
		return open_top(rootfd);
	}
	memcpy(dir, path, slash - path);
	dir[slash - path] = '\0';
	ret = open_dir_path(rootfd, dir, create);
	if (ret >= 0)
		*base = slash + 1;
	return ret;
}

/* After EEXIST: accept @name only if it is a real directory. */
static int existing_dir(int dirfd, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return 0;
	return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
}

int pxfer_path_mkdir(int rootfd, const char *path, mode_t mode)
{
	const char *base;
	int dfd, ret = 0;

	dfd = pxfer_path_open_parent(rootfd, path, 1, &base);
	if (dfd < 0)
		return dfd;
	if (mkdirat(dfd, base, mode) < 0) {
		ret = -errno;
		if (ret == -EEXIST)
			ret = existing_dir(dfd, base);
	} else {
		ret = 1;
	}
	close(dfd);
	return ret;
}

int pxfer_path_open_dir(int rootfd, const char *path)
{
	int ret;

	if (path && path[0] == '\0')
		return open_top(rootfd);
	ret = pxfer_path_check(path, path ? strlen(path) : 0);
	if (ret)
		return ret;
	return open_beneath(rootfd, path);
}
