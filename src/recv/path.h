/* SPDX-License-Identifier: MIT */
/*
 * Path confinement on the receiver: every path that arrives from the wire
 * is checked here and resolved beneath the receiver's top directory, never
 * following a symbolic link (a link inside DIR is recreated as a link and
 * never traversed). This is the only file that turns a wire path into an
 * open file descriptor.
 */
#ifndef PXFER_PATH_H
#define PXFER_PATH_H

#include <stddef.h>
#include <sys/types.h>

/*
 * pxfer_path_check - validate a relative path received from a peer.
 * @path must be NUL-terminated and exactly @len bytes long. Accepted: one or
 * more '/'-separated components, each 1..PXFER_NAME_MAX bytes, total
 * 1..PXFER_PATH_MAX bytes. Refused with -EINVAL: empty path, a leading '/',
 * an empty component ("a//b", trailing '/'), "." or ".." as a component, an
 * embedded NUL (strlen != len), a component over PXFER_NAME_MAX; with
 * -ENAMETOOLONG a path over PXFER_PATH_MAX.
 */
int pxfer_path_check(const char *path, size_t len);

/*
 * pxfer_path_open_parent - open the directory that will hold @path.
 * @rootfd: an O_PATH or O_DIRECTORY descriptor of the top directory.
 * @path: a path that passed pxfer_path_check.
 * @create: if non-zero, create missing intermediate directories (mode 0755
 *	before umask) as mkdir -p would.
 * @base: set to point at the last component inside @path.
 * Resolves the parent with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) where the kernel has it, else
 * component by component with O_NOFOLLOW | O_DIRECTORY. A symbolic link or
 * a non-directory anywhere on the way is refused (-ELOOP, -ENOTDIR, -EXDEV).
 * Returns an O_DIRECTORY descriptor (caller closes) or a negative errno.
 */
int pxfer_path_open_parent(int rootfd, const char *path, int create,
			   const char **base);

/*
 * pxfer_path_mkdir - create directory @path beneath @rootfd (and any
 * missing parents), or accept it if it exists as a real directory (not a
 * link to one). Returns 0 when it existed, 1 when this call made it (so
 * that it is empty but for what its maker puts there), or a negative
 * errno.
 */
int pxfer_path_mkdir(int rootfd, const char *path, mode_t mode);

/*
 * pxfer_path_open_dir - open directory @path beneath @rootfd with the same
 * rules (no symlinks, no escape). Returns an O_DIRECTORY fd or -errno.
 * An empty @path ("") opens the top directory itself.
 */
int pxfer_path_open_dir(int rootfd, const char *path);

/*
 * For tests: pxfer_path_force_fallback(1) resolves component by component
 * as if the kernel had no openat2; (0) tries openat2 again.
 */
void pxfer_path_force_fallback(int on);

#endif
