/* SPDX-License-Identifier: MIT */
/*
 * A receiving file's whole life, from its FILE message to its final name:
 * created beneath the session's destination (recv/path.c decides what is
 * allowed), unnamed (O_TMPFILE) or under a temporary name no one can
 * guess, finished (size, fsync, mode, times) and named only when every
 * byte is in, or removed. Directories are made at once and get their
 * mode and times at the end; symbolic links are made at once. The byte
 * accounting that says when a file is complete is recv/filetab.c's.
 *
 * Threads: the coordinator creates, drops and reports; a worker may
 * finish a file (pxfer_rfile_finish) once the file table said it is
 * complete, and the file is then not touched by anyone else until the
 * coordinator takes it back.
 */
#ifndef PXFER_RECV_RFILE_H
#define PXFER_RECV_RFILE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "core/digest.h"
#include "core/err.h"
#include "core/proto.h"
#include "engine/check.h"
#include "recv/partial.h"
#include "engine/relay.h"
#include "recv/rdir.h"

/* files up to this size are made unnamed, larger ones are sized at once */
#define PXFER_UNNAMED_MAX (1u << 20)

/* how an unnamed (O_TMPFILE) file gets its name: pxfer_rfiles_probe() */
enum pxfer_link_how {
	PXFER_LINK_NONE,	/* no unnamed files: temporary names */
	PXFER_LINK_EMPTY_PATH,	/* linkat(AT_EMPTY_PATH) */
	PXFER_LINK_PROC,	/* linkat of /proc/self/fd/N */
};

struct pxfer_rfile {
	int fd;			/* open for writing; -1 once named */
	int dirfd;		/* its directory (shared: see dcache) */
	char *path;		/* relative path, for messages */
	const char *base;	/* final name, inside path */
	char *tmp;		/* temporary name in dirfd, NULL if unnamed */
	uint64_t size;
	uint32_t mode;
	int mode_set;		/* already applied (an unnamed file) */
	struct timespec times[2];
	struct pxfer_partial *part;	/* resumable: its data and journal */
	uint8_t digest[PXFER_DIGEST_LEN];	/* the sender's, from FILE_END */
	int named;		/* complete under its name when created (empty) */
	int finished;		/* a worker named it */
	int finish_err;		/* ... or failed to, with this errno */
	int verify_bad;		/* ... because it read back wrong */
	/* its partial's data, to read back before it is offered, or (wait
	 * PXFER_WAIT_SAME) its content to compare: made by create, run by
	 * the coordinator's check pool (recv/rcheck.c) */
	struct pxfer_check_job *check;
	/*
	 * Its FILE held back, nothing created or named yet (recv/rcheck.c):
	 * PXFER_WAIT_SAME, the file there is compared with the sender's
	 * digest (fd: it, open for reading; check: the job); PXFER_WAIT_SUM,
	 * that digest is yet to come (FILE_SUM; nothing open, dirfd -1).
	 * path, size, mode, times and digest are the FILE's, wait_flags its
	 * flags.
	 */
	int wait;
	uint8_t wait_flags;
	/*
	 * A range (FILE with PXFER_FILE_RANGE, recv/rrange.c): the entry of
	 * the partial the sessions of its job share (part is that entry's),
	 * the bytes this session writes, whether this session made the
	 * entry (and checks the partial), and whether it named the file.
	 */
	struct recv_shared_ent *shared;
	uint64_t range_off, range_len;
	int range_maker;
	int range_named;
	/* a range finished while its session forwards (r->forward): its
	 * partial's descriptor, for the forwarding (recv/chain.c) */
	int fwd_fd;
	int fwd_have;
	/* ... or its chunks forwarded from the ring as they come */
	struct pxfer_relay_ent *relay;
};

enum { PXFER_WAIT_NONE, PXFER_WAIT_SAME, PXFER_WAIT_SUM };

/*
 * Parent directories of files in flight, kept open and shared: files of
 * one directory usually arrive together, and opening the parent (a
 * confined walk from the destination) would otherwise cost two system
 * calls a file.
 */
#define PXFER_DCACHE_N 8

struct recv_shared;
struct recv_shared_ent;

struct pxfer_dcache {
	char *path;		/* relative to the destination; "" for itself */
	int fd;			/* -1: unused */
	unsigned int refs;	/* files in flight that use fd */
	int fresh;		/* made empty by this session */
	uint64_t used;		/* for eviction of the least recently used */
};

struct pxfer_rfiles {
	int basefd;			/* the destination */
	int rootfd;			/* the top directory (not ours) */
	struct pxfer_partials parts;	/* partial files, beneath the top */
	int parts_failed;		/* ... which cannot be made */
	const char *dir;		/* the top's path, for messages (or NULL) */
	atomic_int *store_warned;	/* the receiver's: pxfer_partials_warn */
	struct pxfer_partials_use *use;	/* the receiver's: partials capped */
	int cap_warned;			/* a partial was refused: said */
	char *dest;			/* the destination's path, "" for the top */
	int fsync;			/* fsync each file and its directory */
	int verify;			/* read each file back before naming it */
	int keep;			/* keep partial files (--partial-ttl) */
	uint32_t mode_mask;		/* the bits of a wire mode that apply */
	struct pxfer_rfile *f;		/* by file id */
	unsigned int n;
	struct pxfer_dcache dcache[PXFER_DCACHE_N];
	uint64_t dcache_tick;
	uint8_t tmp_key[16];		/* keys the temporary names */
	atomic_uint_fast64_t tmp_seq;	/* workers name files too */
	enum pxfer_link_how link_how;
	mode_t create_bits;		/* what a mode at creation keeps (probe) */
	struct pxfer_rdirs dirs;	/* made, to be given mode and times */
	struct recv_shared *shared;	/* the receiver's: shared partials */
	int forward;			/* its files go down a chain */
	const char *peer;		/* the sender, for messages */
};

/*
 * pxfer_rfiles_init - the files of a session that writes into @dest
 * (@dest_len bytes, a wire path checked here; empty: @rootfd itself)
 * below @rootfd, made if missing, for ids below @n. A mode from the wire
 * keeps only the bits in @mode_mask (never set-uid or set-gid: at most
 * 01777). 0 or -errno (the destination cannot be used);
 * pxfer_rfiles_release undoes what was done either way.
 */
int pxfer_rfiles_init(struct pxfer_rfiles *r, int rootfd, const char *dest,
		      size_t dest_len, unsigned int n, int fsync,
		      uint32_t mode_mask);

/*
 * pxfer_rfiles_probe - find out how unnamed files can be named in the
 * destination, before the first file (a few system calls: done while
 * the sender makes its data connections).
 */
void pxfer_rfiles_probe(struct pxfer_rfiles *r);

/*
 * pxfer_rfiles_release - drop every file still there (what did not
 * complete never shows under its real name; partial state is kept), close
 * what is open, free.
 */
void pxfer_rfiles_release(struct pxfer_rfiles *r);

/*
 * pxfer_rfile_create - regular file @m (its path checked) as @m->id: 0,
 * or -errno with what failed in *what, for the sender. *@ok says what the
 * receiver has of it already (its id is @m's): PXFER_HAVE_SAME (nothing
 * was created: the file is there, the same by the test @m's flags ask
 * for), or what a partial copy holds (PXFER_HAVE_PART, and the runs), or
 * nothing. -EBUSY: another session is writing the same file. 1: a
 * partial holds data that is to be read back first (unless @m has
 * PXFER_FILE_TRUST): rf->check is the job, and pxfer_rfile_checked says
 * what to answer once it is done. 2: a file of @m's size is there, to
 * compare with @m's digest (PXFER_FILE_CHECKSUM) first: rf->check is the
 * job (whole-file), nothing is created, and pxfer_rfile_compared says
 * what to do once it is done.
 */
int pxfer_rfile_create(struct pxfer_rfiles *r, const struct pxfer_file *m,
		       struct pxfer_err *err, struct pxfer_file_ok *ok);

/*
 * pxfer_rfile_mkdir - directory @m, given its mode and time at the end:
 * 0, or -errno with what failed in @err (-ENOBUFS: one directory too
 * many for the session, see PXFER_RDIRS_MAX)
 */
int pxfer_rfile_mkdir(struct pxfer_rfiles *r, const struct pxfer_file *m,
		      struct pxfer_err *err);

/* pxfer_rfile_symlink - symbolic link @m, made at once (never followed):
 * 0, or -errno with what failed in @err */
int pxfer_rfile_symlink(struct pxfer_rfiles *r, const struct pxfer_file *m,
			struct pxfer_err *err);

static inline struct pxfer_rfile *pxfer_rfile_get(struct pxfer_rfiles *r,
						  uint64_t id)
{
	return &r->f[id];
}

/*
 * pxfer_rfile_finish - complete file @id, @total bytes of it written:
 * its size (if it ends in a hole), fsync, mode, times, its real name;
 * its descriptor closed. Records the result in finished / finish_err.
 * Any thread, one file at a time per thread.
 */
void pxfer_rfile_finish(struct pxfer_rfiles *r, uint64_t id, uint64_t total);

enum pxfer_drop {
	PXFER_DROP_DONE,	/* it is complete under its name */
	PXFER_DROP_KEEP,	/* incomplete: keep what a partial holds */
	PXFER_DROP_DISCARD,	/* incomplete, and what arrived is worthless */
};

/*
 * pxfer_rfile_drop - forget file @id (coordinator). An incomplete file
 * never shows under its name: its temporary name is removed, and its
 * partial state kept (for a later session to resume) or removed as @how
 * says.
 */
void pxfer_rfile_drop(struct pxfer_rfiles *r, uint64_t id, enum pxfer_drop how);

/* pxfer_rfiles_apply_dirs - give the directories made their mode and
 * times, deepest first (at the end of a session) */
void pxfer_rfiles_apply_dirs(struct pxfer_rfiles *r);

/*
 * pxfer_rfile_checked - file @id's check (rf->check, reaped) is done: the
 * job freed, and *@ok filled as pxfer_rfile_create would. Every record
 * read back as its journal says: PXFER_HAVE_PART. Otherwise the partial
 * is discarded and the file starts empty (PXFER_HAVE_BAD), and @err has
 * a note (code 0) of what was wrong, for the log. 0, or -errno when the
 * file could not start over (the caller refuses it; its partial is gone).
 * Coordinator.
 */
int pxfer_rfile_checked(struct pxfer_rfiles *r, uint64_t id,
			struct pxfer_file_ok *ok, struct pxfer_err *err);

/*
 * pxfer_rfile_compared - file @id's comparison (rf->check, reaped) is
 * done, and the file forgotten: its FILE in *@m again. 1: the file there
 * is the same (given the FILE's mode; nothing was created), *@ok says so
 * (PXFER_HAVE_SAME). 0: it differs, or could not be read: *@m no longer
 * asks for a comparison, and is for pxfer_rfile_create. Coordinator.
 */
int pxfer_rfile_compared(struct pxfer_rfiles *r, uint64_t id,
			 struct pxfer_file *m, struct pxfer_file_ok *ok);

/*
 * pxfer_rfile_hold - FILE @m (PXFER_FILE_SUM_FOLLOWS) waits for its
 * digest in its record (PXFER_WAIT_SUM); nothing is looked at or opened
 * before it comes. 0 or -ENOMEM. Coordinator.
 */
int pxfer_rfile_hold(struct pxfer_rfiles *r, const struct pxfer_file *m);

/*
 * pxfer_rfile_unhold - file @id's digest came (@digest): its FILE in
 * *@m, with it (and no longer PXFER_FILE_SUM_FOLLOWS), for
 * pxfer_rfile_create; the record forgotten. Coordinator.
 */
void pxfer_rfile_unhold(struct pxfer_rfiles *r, uint64_t id,
			const uint8_t *digest, struct pxfer_file *m);

/*
 * pxfer_rrange_open - range FILE @m (recv/rrange.c): its partial, shared
 * with the sessions of its job, made and opened, or joined, for @rf (@dfd
 * its directory). 0 with rf->part and rf->shared set and *@ok as for a
 * partial of one's own (a joiner's: nothing, not to be checked again), or
 * -errno with what failed in *@what (-EBUSY: another job's, an
 * overlapping range, the partial being checked: the sender tries again
 * later). @top: its path from the top (pxfer_rfile_top_path), or NULL
 * when out of memory. Coordinator.
 */
int pxfer_rrange_open(struct pxfer_rfiles *r, const struct pxfer_file *m,
		      int dfd, const char *top, struct pxfer_rfile *rf,
		      struct pxfer_file_ok *ok, const char **what);

/*
 * pxfer_rrange_ok - range file @id's FILE_OK: *@ok (what its partial
 * holds) cut to its range (recv_shared_clip); for the session that made
 * the entry, its check is done and others may join. 0 or -ENOMEM.
 * Coordinator.
 */
int pxfer_rrange_ok(struct pxfer_rfiles *r, uint64_t id,
		    struct pxfer_file_ok *ok);

/*
 * pxfer_rrange_finish - range file @id's bytes are all written: read
 * back (--verify), flushed to the journal, counted on disk, its claim and
 * reference given back; the file named if this was the last reference
 * and every byte is on disk (rf->range_named). finished/finish_err as
 * pxfer_rfile_finish. Any thread.
 */
void pxfer_rrange_finish(struct pxfer_rfiles *r, uint64_t id);

/* pxfer_rrange_drop - range file @id is dropped incomplete: its claim
 * and reference given back (the last one closes the partial, kept).
 * Coordinator. */
void pxfer_rrange_drop(struct pxfer_rfiles *r, uint64_t id);
/*
 * pxfer_rrange_sweep - close the partials parked in @sh (recv/shared.h)
 * longer than RECV_SHARED_PARK_SECS (@all: every one), kept for a later
 * session; how many are still parked. Any thread.
 */
unsigned int pxfer_rrange_sweep(struct recv_shared *sh, int all);

/* ---- shared by rfile.c, rcheck.c, rjob.c and rdir.c ---- */

/* the path of @path (@len bytes) from the top directory, for a
 * partial's name: NULL when out of memory */
char *pxfer_rfile_top_path(const struct pxfer_rfiles *r, const char *path);

/*
 * pxfer_rfile_restart - discard file @id's partial and open it anew,
 * empty (state CORRUPT); rf->fd follows. 0 or -errno (rf->part is then
 * NULL and rf->fd -1).
 */
int pxfer_rfile_restart(struct pxfer_rfiles *r, uint64_t id);

/* pxfer_rfile_check_job - the job that reads file @id's held records
 * back (rf->check; rjob.c, as the next): 0 or -ENOMEM */
int pxfer_rfile_check_job(struct pxfer_rfiles *r, uint64_t id);

/*
 * pxfer_rfile_compare_job - file @m (@base in directory @dfd, a
 * reference of rfile.c's, and open for reading as @fd) is to be compared
 * with @m's digest first: rf holds them, with the job (rf->check). 0, or
 * -ENOMEM with @fd and @dfd still the caller's.
 */
int pxfer_rfile_compare_job(struct pxfer_rfiles *r, const struct pxfer_file *m,
			    int dfd, const char *base, int fd);

/*
 * is @path (@len bytes) the receiver's own state directory, or in it? No
 * sender writes there. (Inline, as pxfer_rfile_times: of the message
 * alone, for rdir.c, rjob.c and rcheck.c too.)
 */
static inline int pxfer_rfile_reserved(const char *path, size_t len)
{
	size_t n = strlen(PXFER_STATE_DIR);

	return len >= n && !memcmp(path, PXFER_STATE_DIR, n) &&
	       (len == n || path[n] == '/');
}

#endif
