/* SPDX-License-Identifier: MIT */
/*
 * The sender's tree walk: streams one entry at a time, so sending starts
 * before the walk ends and memory does not grow with the number of files
 * (it holds one open directory per level of depth).
 */
#ifndef PXFER_WALK_H
#define PXFER_WALK_H

#include <stddef.h>
#include <sys/stat.h>
#include "core/proto.h"

struct pxfer_walk_level;

struct pxfer_walk {
	char *const *roots;		/* the PATH arguments */
	int nroots;
	int next_root;
	struct pxfer_walk_level *levels;	/* stack of open directories */
	int depth;
	int cap;
	char *src;			/* buffer for the local path */
	char *rel;			/* buffer for the wire path */
	size_t src_len;			/* their lengths for the last entry */
	size_t rel_len;
	int open_files;			/* set by the caller: see fd below */
	int roots_lstat;		/* pxfer_walk_init_own's */
};

enum pxfer_walk_kind {
	PXFER_WALK_FILE = 1,	/* a regular file: send it */
	PXFER_WALK_DIR,		/* a directory, before its contents */
	PXFER_WALK_SYMLINK,	/* a symbolic link: target holds its text */
	PXFER_WALK_SKIP,	/* a fifo, socket or device: not sent */
	PXFER_WALK_ERROR,	/* could not be read: err says why */
};

struct pxfer_relay_ent;

struct pxfer_walk_entry {
	enum pxfer_walk_kind kind;
	const char *src;	/* local path (for open, and for messages) */
	const char *rel;	/* wire path, relative, '/'-separated */
	struct stat st;		/* lstat() of the entry (stat() for a root) */
	/*
	 * FILE below a root, with w->open_files set: the file opened for
	 * reading (O_NOFOLLOW, relative to its directory) and st its fstat();
	 * the caller owns and closes it. Otherwise -1.
	 */
	int fd;
	char target[PXFER_PATH_MAX + 1];	/* SYMLINK only */
	int err;		/* ERROR only: a negative errno */
	/* set by a session's source (send/source.h), 0 from the walk: */
	uint64_t tag;		/* names the entry to the source */
	uint64_t range_off;	/* FILE: send only these bytes of it, */
	uint64_t range_len;	/* ... unless 0: all of it */
	/* fd's bytes (of the range) do not change while they are sent,
	 * though the file's size and times may (a partial being filled in
	 * elsewhere): not checked for change at its end */
	int stable;
	/* a range whose chunks come through this relay entry as another
	 * session receives them (engine/relay.h; fd -1): the session's to
	 * drop (pxfer_relay_ent_drop) */
	struct pxfer_relay_ent *relay;
};

/*
 * pxfer_walk_init - prepare to walk @roots. Each root is named on the
 * receiver by its last component: "dir", "dir/" and "/x/dir" all arrive as
 * "dir"; a root whose last component is "." or ".." (or "/") sends its
 * contents directly. A root that is a symlink is followed (like cp -H);
 * links below a root are sent as links. Two roots with the same name are
 * refused here (-EEXIST) before anything is sent, and so is a root that
 * is not a regular file or a directory (-EINVAL: a fifo, a socket, a
 * device). Returns 0 or -errno; on -EEXIST, -EINVAL or a missing root,
 * *bad is set to the offending root.
 */
int pxfer_walk_init(struct pxfer_walk *w, char *const *roots, int nroots,
		    const char **bad);
/*
 * pxfer_walk_init_own - the same for roots that are this host's own copy
 * of what it received (a broadcast chain forwarding it): no root is
 * checked or followed first; a root that is a link is sent as a link,
 * one that is missing or of another kind is an entry of the walk.
 */
int pxfer_walk_init_own(struct pxfer_walk *w, char *const *roots, int nroots,
			const char **bad);

/*
 * pxfer_walk_next - produce the next entry in pre-order (a directory comes
 * before what it holds). Returns 1 with @e filled (its pointers valid until
 * the next call), 0 at the end, or a negative errno on a failure that stops
 * the walk (-ENOMEM). An unreadable directory or file yields a
 * PXFER_WALK_ERROR entry and the walk goes on. Paths longer than
 * PXFER_PATH_MAX yield PXFER_WALK_ERROR with -ENAMETOOLONG.
 */
int pxfer_walk_next(struct pxfer_walk *w, struct pxfer_walk_entry *e);

/* pxfer_walk_release - close what is open and free memory. */
void pxfer_walk_release(struct pxfer_walk *w);

#endif
