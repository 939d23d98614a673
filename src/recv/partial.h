/* SPDX-License-Identifier: MIT */
/*
 * The receiver's durable state for partial files, to resume interrupted
 * transfers: below DIR/.pxfer/partial, for each large file in flight, its
 * data (<key>.part) and a journal (<key>.jnl) of the byte ranges that are
 * verified and on disk, key = 32 hex digits of a BLAKE2b-128 of the
 * file's path keyed with the store's secret (DIR/.pxfer/key). A range is
 * recorded only after its data is durable; a torn or corrupt record is
 * detected and ignored; a journal is replaced by rename.
 * docs/architecture.md, "Partial files", has the format; recv/journal.c
 * encodes and parses it, recv/store.c makes and checks the store,
 * recv/partial.c keeps the files, recv/record.c the records until they
 * reach the journal.
 *
 * The store is the receiver's alone: its directories and key are used
 * only when owned by the effective uid and not writable by group or
 * others, and a journal or data file only when it is a regular file of
 * the effective uid with one link and no group or other bits (anything
 * else under a partial's name is removed, never adopted), so that a
 * local user who can write DIR cannot plant or swap the receiver's
 * files.
 *
 * Threads: pxfer_partial_add (and _flush) from any thread at once; every
 * other call on one partial from one thread, with no add under way;
 * pxfer_partials_flush_old from any thread, at the same time as any of
 * them. A partial holds a lock and may not be copied once open; the store
 * (struct pxfer_partials) outlives its partials. Other processes (other
 * receivers on DIR) are kept out by flock on the journal.
 */
#ifndef PXFER_RECV_PARTIAL_H
#define PXFER_RECV_PARTIAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/stat.h>
#include "core/digest.h"

#define PXFER_STATE_DIR ".pxfer"            /* top-level name in DIR reserved for the receiver */
#define PXFER_PARTIAL_FLUSH (16u << 20)     /* pending bytes that trigger a flush */
/* seconds a pending record waits, about, before a flush makes it durable */
#define PXFER_PARTIAL_AGE 1.0
#define PXFER_PARTIAL_RUNS_MAX PXFER_RUNS_MAX	/* runs a partial offers: what a FILE_OK holds */
/* records a journal is read for, and written with, at most */
#define PXFER_PARTIAL_RECORDS_MAX (1u << 20)
/* a record shorter is small: merged with the pending small ones it
 * touches, up to this length, and hashed again at the flush */
#define PXFER_PARTIAL_SMALL (64u << 10)
#define PXFER_PARTIAL_SMALL_MAX 4096u	/* small records a journal takes */
#define PXFER_PARTIAL_PEND_MAX 4096u	/* pending records that trigger a flush */
/* pending records the partials of a store (a session) have room for at
 * once, beyond PXFER_PARTIAL_PEND_MIN in each of their two arrays */
#define PXFER_PARTIAL_PEND_ROOM 65536u
#define PXFER_PARTIAL_PEND_MIN 32u

/* the journal's format (big-endian): a header, then records */
#define PXFER_JOURNAL_MAGIC	0x50584a31u	/* "PXJ1" */
#define PXFER_JOURNAL_VERSION	1
/* magic, version, path_len, size, mtime_sec, mtime_nsec, reserved, nonce;
 * the path; the check */
#define PXFER_JOURNAL_HDR_LEN(path_len)	(40 + (size_t)(path_len) + 8)
/* off u64, len u32, hash lo u64, hash hi u64, check u32 */
#define PXFER_JOURNAL_REC_LEN	32
/* the file names' key: hex digits */
#define PXFER_PARTIAL_KEY_LEN	32
/* the secret that keys them (crypto_generichash_KEYBYTES) */
#define PXFER_PARTIAL_SECRET_LEN	32

/*
 * What a receiver's partials add up to, shared by its sessions (threads
 * of one process) and its sweep, and their cap (--partial-max, and
 * --partial-max-size): how many
 * partials (data files) there are and their apparent size (the files'
 * sizes, holes included). Seeded from a scan of the store when the
 * receiver starts (pxfer_partials_scan), then kept as partials are made,
 * resized, committed and removed; other processes' partials are not
 * seen until the next start.
 */
struct pxfer_partials_use {
	atomic_uint_fast64_t count, bytes;
	uint64_t max_count, max_bytes;	/* 0: no cap */
};

struct pxfer_partials {
	int dirfd;	/* DIR/.pxfer/partial, or -1 */
	/* counted in, and capped by, this (NULL: neither); set after open */
	struct pxfer_partials_use *use;
	uint8_t secret[PXFER_PARTIAL_SECRET_LEN];	/* keys the names */
	/* when the store failed its checks: which entry (below DIR), and
	 * what is wrong with it and what to do; else NULL and "" */
	const char *bad;
	char problem[128];
	/* seconds a pending record waits at most before it is flushed
	 * (PXFER_PARTIAL_AGE; tests lower it), for partials opened after */
	double age;
	/* private: the pending records' room its partials took, of
	 * PXFER_PARTIAL_PEND_ROOM */
	atomic_uint pend_room;
	/* private: the open partials, for pxfer_partials_flush_old; a
	 * partial is taken off the list, under the lock, before it goes */
	pthread_mutex_t lock;
	struct pxfer_partial *open;
};

/*
 * pxfer_partials_open - make (0700, no symlinks followed: mkdirat, then
 * openat O_DIRECTORY|O_NOFOLLOW) and open DIR/.pxfer/partial below
 * @rootfd, and read (or make, on first use) the secret DIR/.pxfer/key.
 * Each is checked once open (fstat): .pxfer and .pxfer/partial
 * directories of the effective uid that group and others cannot write;
 * the key a regular file of the effective uid, mode 0600, one link,
 * PXFER_PARTIAL_SECRET_LEN bytes. 0 or -errno (ps->dirfd is -1 then);
 * -EPERM with ps->bad and ps->problem set when a check failed (the store
 * is not to be used: pxfer_partials_warn says so).
 */
int pxfer_partials_open(struct pxfer_partials *ps, int rootfd);
void pxfer_partials_close(struct pxfer_partials *ps);

/*
 * pxfer_partials_flush_old - flush each open partial of @ps whose oldest
 * pending record is ps->age seconds old or more, and no flush is under
 * way (a failed flush is the partial's, as for pxfer_partial_add), so
 * that what arrived of a file that gets no more data meanwhile reaches
 * its journal too. Holds the store's lock while it flushes: a partial's
 * open and end wait meanwhile (adds do not). Returns the seconds until
 * it is due again: when the oldest record still pending is ps->age old,
 * and at most ps->age from now (a record added later is not due before).
 * Nothing and ps->age for a store that is not open.
 */
double pxfer_partials_flush_old(struct pxfer_partials *ps);

/*
 * pxfer_partials_warn - after a failed pxfer_partials_open: a warning
 * that names DIR (@dir, the receiver's --dir) and the entry, and says what
 * is wrong and what to do, once until the store is usable again:
 * *@warned, shared by the receiver's sessions (NULL: always), is set
 * here and cleared by pxfer_partials_ok. Nothing for other failures.
 */
void pxfer_partials_warn(const struct pxfer_partials *ps, const char *dir,
			 atomic_int *warned);

/* pxfer_partials_ok - the store opened: a failure is reported again */
static inline void pxfer_partials_ok(atomic_int *warned)
{
	if (warned)
		atomic_store(warned, 0);
}

/*
 * pxfer_partial_file_ours - whether @st, a journal or data file just
 * opened (O_NOFOLLOW), may be used: a regular file of the effective uid
 * with one link and no group or other bits. 0 or -EPERM (for
 * recv/partial.c)
 */
int pxfer_partial_file_ours(const struct stat *st);

/*
 * pxfer_partials_sweep - remove the state of partials whose journal was
 * last written more than @ttl seconds before @now and that no session
 * holds (flock LOCK_EX|LOCK_NB succeeds), data files without a journal
 * last written more than @ttl seconds before @now, and leftover
 * temporary journals. Anything of a key is touched only with that key's
 * journal locked, so never what a session holds. Returns how many
 * partials (journals with their data, and data files alone) were
 * removed, or -errno.
 */
int pxfer_partials_sweep(struct pxfer_partials *ps, double ttl, time_t now);

/*
 * pxfer_partials_scan - the partials @ps holds (regular data files under
 * a partial's name, lstat) and their apparent size, in *@count and
 * *@bytes: what a receiver's ps->use starts from. 0 or -errno
 */
int pxfer_partials_scan(struct pxfer_partials *ps, uint64_t *count,
			uint64_t *bytes);

/*
 * pxfer_partials_cap_warn - a partial was refused (-EDQUOT): the warning
 * that says so for the store of DIR @dir, what the cap is and what to do
 */
void pxfer_partials_cap_warn(const struct pxfer_partials *ps, const char *dir);

struct pxfer_partial_id {
	const char *path;	/* relative to DIR (the session's destination joined with the file's path) */
	size_t path_len;	/* 1..65535 */
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};

enum pxfer_partial_state {
	PXFER_PARTIAL_NEW,	/* nothing held: the file starts empty */
	PXFER_PARTIAL_HELD,	/* a journal for the same size and mtime: runs[] are held */
	PXFER_PARTIAL_STALE,	/* a journal for another size or mtime was discarded */
	PXFER_PARTIAL_CORRUPT,	/* a journal that could not be trusted was discarded */
};

/* a record: @len bytes at @off, on disk, that hash to @h */
struct pxfer_partial_rec {
	uint64_t off;
	uint32_t len;
	uint32_t merged;	/* pending only: small records merged, @h not known yet */
	struct pxfer_digest h;
};

struct pxfer_partial {
	int fd;			/* the data, O_RDWR, sized to id.size (ftruncate) */
	int jfd;		/* the journal, flock'ed LOCK_EX for the partial's life */
	enum pxfer_partial_state state;
	struct pxfer_held_run *runs;	/* held when opened, sorted, at most PXFER_PARTIAL_RUNS_MAX */
	unsigned int nruns;
	uint64_t held;		/* bytes in runs */
	struct pxfer_digest digest;	/* sum of the held records' hashes */
	unsigned int ignored;	/* records dropped as torn or corrupt when loading */
	/* the records runs[] are made of, sorted: what the data is checked
	 * against before it is offered; freed once it was (rcheck.c) */
	struct pxfer_partial_rec *recs;
	unsigned int nrecs;

	/* private */
	int is_open;		/* 0: nothing to close (zeroed, or a failed open) */
	int dirfd;		/* the store's directory, not owned */
	char key[PXFER_PARTIAL_KEY_LEN + 1];
	uint64_t nonce;		/* the journal's: seeds each record's check */
	uint64_t jend;		/* the journal's length: where records go next */
	unsigned int jrecs;	/* records in the journal, */
	unsigned int jsmall;	/* of them small */
	int err;		/* a failed fdatasync: nothing is recorded after it */
	struct pxfer_partials_use *use;	/* the store's */
	uint64_t size;		/* the data file's, as counted there */
	atomic_uint *room;	/* the store's pend_room */
	struct pxfer_partials *store;
	struct pxfer_partial *next, *prev;	/* in store->open: its lock */
	double age;		/* the store's */
	pthread_mutex_t lock;	/* what follows */
	pthread_cond_t flushed;	/* a flush ended */
	struct pxfer_partial_rec *pend;	/* records remembered, not yet flushed */
	unsigned int npend, pend_cap;
	uint64_t pend_bytes;
	double pend_since;	/* when the oldest pending one was added */
	struct pxfer_partial_rec *batch;	/* the other array: the flush's */
	unsigned int batch_cap;
	int flushing;		/* a flush is under way */
	int small_full;		/* the journal takes no more small records */
	int full;		/* the journal takes no more records */
};

/* pxfer_partial_open's flags */
#define PXFER_PARTIAL_RESUME	1	/* keep what a valid journal holds */
#define PXFER_PARTIAL_ANEW	2	/* its partial was there a moment ago:
					 * not capped */

/*
 * pxfer_partial_open - open (or make) the partial of @id in @ps. @flags:
 * with PXFER_PARTIAL_RESUME (1), what a valid journal for the same path,
 * size and mtime holds is kept (state HELD, runs/held/digest/recs
 * filled; or NEW when it held nothing), and the journal is rewritten
 * with exactly the records kept, under a new nonce. Without it the
 * journal is not read (state NEW); without it, and for a journal that
 * is stale or corrupt (CORRUPT as well for a data file that is missing
 * or not a regular file of id.size bytes), everything is discarded and
 * the data starts empty (a hole of id.size bytes). -EBUSY when another
 * open partial (another session) holds it; -EDQUOT when it would be a
 * new partial (no data file under its name yet) and ps->use has no room
 * for one more or for its size, unless @flags has PXFER_PARTIAL_ANEW;
 * other -errno. On error @p is left closed, and a partial this call
 * made is removed.
 */
int pxfer_partial_open(struct pxfer_partials *ps,
		       const struct pxfer_partial_id *id, int flags,
		       struct pxfer_partial *p);

/* pxfer_partial_ok - what partial @p (just opened) holds, as FILE_OK
 * says it: PART with its runs, STALE, BAD, or nothing (@ok as it was) */
struct pxfer_file_ok;
void pxfer_partial_ok(const struct pxfer_partial *p, struct pxfer_file_ok *ok);

/*
 * pxfer_partial_add - @len bytes at @off were written to p->fd (the write
 * completed) and hash to @h (pxfer_digest_range of those bytes at @off).
 * The record reaches the journal only after the data is durable: when
 * PXFER_PARTIAL_FLUSH bytes or PXFER_PARTIAL_PEND_MAX records are pending,
 * the oldest pending one was added ps->age seconds ago or more, or the
 * store has no more room for them, this call flushes (fdatasync of the
 * data, then the records appended to the journal), blocking the calling
 * thread; otherwise it only remembers (and pxfer_partials_flush_old
 * flushes what waits longer). A small record (shorter
 * than PXFER_PARTIAL_SMALL) is merged with a pending small one that it
 * touches (among the last few added), and the merged bytes are read back
 * and hashed at the flush. A journal holds at most PXFER_PARTIAL_SMALL_MAX
 * small records and PXFER_PARTIAL_RECORDS_MAX in all: beyond them, what
 * is added is not recorded (its data is sent again after an
 * interruption). Thread-safe; one flush at a time (a call that finds a
 * flush under way does not wait for it, unless nothing more can be
 * pending). 0 or -errno: a failed flush, whose records are dropped (their
 * data is sent again in a later session); after a failed fdatasync
 * nothing more is recorded, since what it failed to write is unknown.
 */
int pxfer_partial_add(struct pxfer_partial *p, uint64_t off, uint32_t len,
		      const struct pxfer_digest *h);

/* pxfer_partial_flush - flush what is pending now (after waiting for a
 * flush under way). 0 or -errno */
int pxfer_partial_flush(struct pxfer_partial *p);

/*
 * pxfer_partial_commit - the file is complete: give the data its final
 * name @base in @dirfd (renameat from the state directory; replaces an
 * existing file as rename does), then remove the journal and close both.
 * On error nothing is removed or closed (the caller then calls
 * pxfer_partial_close). 0 or -errno (-EXDEV when @dirfd is on another
 * file system).
 */
int pxfer_partial_commit(struct pxfer_partial *p, int dirfd, const char *base);

/*
 * pxfer_partial_close - @keep: flush, then close (kept for a later
 * session, for the TTL); !@keep: remove the data and the journal, then
 * close. Safe on a zeroed struct and after a failed open.
 */
void pxfer_partial_close(struct pxfer_partial *p, int keep);

/*
 * pxfer_partial_same_fs - whether the partials' data files are on the
 * same file system as directory @dirfd (st_dev, and the mount where
 * statx tells it), so that commit can rename there: 1, 0, or -errno
 */
int pxfer_partial_same_fs(const struct pxfer_partials *ps, int dirfd);

/*
 * The parser, pure (for the loader and the fuzz target): check journal
 * bytes @buf[0..@len) against @id and fill @out as pxfer_partial_open
 * would: state, and for HELD the runs, held, digest, and the records the
 * runs are made of (recs, sorted); ignored counts the records dropped as
 * torn or corrupt (a torn tail counts as one). Empty bytes are a journal
 * whose header never landed: NEW. 0, or -ENOMEM. Free with
 * pxfer_partial_load_free (also after an error).
 */
struct pxfer_partial_load {
	enum pxfer_partial_state state;
	struct pxfer_held_run *runs;
	unsigned int nruns;
	uint64_t held;
	struct pxfer_digest digest;
	unsigned int ignored;
	struct pxfer_partial_rec *recs;	/* the records of runs[] */
	unsigned int nrecs;
};

int pxfer_partial_parse(const uint8_t *buf, size_t len,
			const struct pxfer_partial_id *id,
			struct pxfer_partial_load *out);
void pxfer_partial_load_free(struct pxfer_partial_load *l);

/* the encoders the journal is written with (tests and seeds use them) */

/* pxfer_partial_key - the file names' key of @path: 32 hex digits, NUL;
 * a BLAKE2b-128 keyed with @secret */
void pxfer_partial_key(const uint8_t secret[PXFER_PARTIAL_SECRET_LEN],
		       const char *path, size_t path_len,
		       char key[PXFER_PARTIAL_KEY_LEN + 1]);

/* pxfer_partial_header_encode - @id's header with @nonce into @buf, which
 * holds PXFER_JOURNAL_HDR_LEN(id->path_len) bytes: that length */
size_t pxfer_partial_header_encode(uint8_t *buf,
				   const struct pxfer_partial_id *id,
				   uint64_t nonce);

/* pxfer_partial_record_encode - @r as PXFER_JOURNAL_REC_LEN bytes at
 * @buf, checked with @nonce */
void pxfer_partial_record_encode(uint8_t *buf, const struct pxfer_partial_rec *r,
				 uint64_t nonce);

/*
 * Between recv/partial.c and recv/record.c: the pending records' arrays
 * and lock, made with a partial's open (0 or -ENOMEM) and freed with it,
 * their room given back to the store; records @r[0..@n) written at @off
 * of journal @fd, checked with @nonce (0 or -errno).
 */
int pxfer_partial_pend_init(struct pxfer_partial *p);
void pxfer_partial_pend_free(struct pxfer_partial *p);
int pxfer_partial_write_records(int fd, uint64_t off,
				const struct pxfer_partial_rec *r, unsigned int n,
				uint64_t nonce);

#endif
