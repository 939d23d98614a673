// SPDX-License-Identifier: MIT
/*
 * The receiver side.
 *
 * pxfer_recv listens and serves one session at a time. For each session
 * the coordinator (the calling thread) authenticates the sender, accepts
 * one data connection per worker, creates each file under a temporary name
 * beneath the top directory (path.c decides what is allowed), grants
 * credits, and renames a file to its real name only once every byte of it
 * is written. Workers take chunks off their data connection straight into
 * the granted slot, verify the checksum and write the data at its offset
 * (io_uring WRITE_FIXED); a slot is granted again once its data is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "pxfer/pxfer.h"
#include "core/auth.h"
#include "core/credit.h"
#include "engine/ctrl.h"
#include "recv/filetab.h"
#include "core/hash.h"
#include "io/io.h"
#include "core/log.h"
#include "recv/path.h"
#include "core/ring.h"
#include "core/limits.h"
#include "core/sys.h"
#include "engine/fail.h"
#include "transport/choose.h"
#include "transport/transport.h"
#include "engine/worker.h"

#define REAP_BATCH 64
#define MAX_FILES 1024
_Static_assert(PXFER_FD_RESERVE >= 2 * MAX_FILES + 256,
	       "the descriptor table reserved holds every file in flight");
#define PRESIZE_MIN (1u << 20)	/* files above this are sized when created */
#define UNNAMED_MAX PRESIZE_MIN	/* files up to this are made unnamed */
#define REPLY_FLUSH 32		/* control messages handled between sends */
#define WRITE_NOW_MAX (64u << 10)	/* segments written by the worker itself */
#define RING_DEPTH 8		/* slots per worker an automatic chunk leaves */
#define RECV_CHUNK_MAX (16u << 20)

/* how an unnamed (O_TMPFILE) file gets its name: see probe_link() */
enum link_how { LINK_NONE, LINK_EMPTY_PATH, LINK_PROC };

struct recv_session;

struct rslot {
	struct pxfer_seg seg[PXFER_SEG_MAX];
	int fd[PXFER_SEG_MAX];
	uint32_t boff[PXFER_SEG_MAX];
	uint32_t done[PXFER_SEG_MAX];
	unsigned int nseg;
	unsigned int pending;
};

struct rworker {
	struct pxfer_worker b;
	struct recv_session *s;
	struct rslot *slots;
	struct pxfer_chunk desc;
	uint64_t seq;
	/* files the coordinator completed, for this worker to finish;
	 * guarded by b.lock */
	uint32_t *finq;
	unsigned int finq_head, finq_count;
	int slots_freed;	/* the coordinator has credits to grant */
};

struct rdir {
	char *path;
	uint32_t mode;
	struct timespec times[2];
};

/*
 * Parent directories of files in flight, kept open and shared: files of
 * one directory usually arrive together, and opening the parent (a
 * confined walk from --dir) would otherwise cost two system calls a file.
 */
#define DCACHE_N 8

struct dcache {
	char *path;		/* relative to the destination; "" for itself */
	int fd;			/* -1: unused */
	unsigned int refs;	/* files in flight that use fd */
	uint64_t used;		/* for eviction of the least recently used */
};

struct recv_session {
	const struct pxfer_recv_opts *o;
	const struct pxfer_transport_ops *t;	/* of the current session */
	struct pxfer_listener *l;		/* that accepted it */
	struct pxfer_listener *ls[2];		/* tcp and/or rdma */
	unsigned int nls;
	struct pxfer_pool pool;		/* ring memory kept between sessions */
	struct pxfer_transport_choice tc;	/* bind: --bind, or what --device implies */
	int rootfd;			/* the top directory (--dir) */
	int basefd;			/* the destination below it */
	struct pxfer_fail fail;
	struct pxfer_conn *cconn;
	struct pxfer_ctrl ctrl;
	int ctrl_init;
	struct pxfer_filetab tab;
	int tab_init;
	struct pxfer_welcome wel;
	uint8_t session_key[PXFER_KEY_LEN];
	int fsync;
	struct rworker *w;
	unsigned int nworkers;
	struct rdir *dirs;
	size_t ndirs, dirs_cap;
	struct dcache dcache[DCACHE_N];	/* open parent directories */
	uint64_t dcache_tick;
	uint8_t tmp_key[crypto_shorthash_KEYBYTES];
	atomic_uint_fast64_t tmp_seq;	/* workers name files too */
	enum link_how link_how;
	unsigned int finish_next;	/* worker for the next handed-on finish */
	atomic_int stop;
	atomic_int fin_seen;
	atomic_int data_eof;		/* 1 + a data connection that closed */
	double data_eof_at;
	int acked;
	int sigfd;
	uint64_t files, bytes, failed;
	struct pxfer_msg msg;
	char dest[PXFER_PATH_MAX + 1];
};

/* ---- workers ---------------------------------------------------------- */

static int fatal_write_error(int err)
{
	return err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS ||
	       err == EFBIG;
}

static int rw_prep_write(struct rworker *w, unsigned int slot, unsigned int i)
{
	struct rslot *rs = &w->slots[slot];
	uint8_t *buf = pxfer_ring_slot(&w->b.ring, slot) + rs->boff[i];
	uint32_t done = rs->done[i];

	rs->pending++;
	return w->b.io->ops->prep(w->b.io, PXFER_IO_WRITE, rs->fd[i], slot,
				buf + done, rs->seg[i].len - done,
				rs->seg[i].offset + done, ((uint64_t)slot << 8) | i);
}

static int rw_write_done(struct rworker *w, uint64_t tag, int res);

/*
 * A small segment is written here and now. io_uring would hand it to one
 * of its own threads anyway (buffered writes to ext4 or tmpfs cannot be
 * tried without blocking), and with thousands of small files that thread
 * and this one took turns for every file (two context switches a file).
 */
static int rw_write_now(struct rworker *w, unsigned int slot, unsigned int i)
{
	struct rslot *rs = &w->slots[slot];
	uint8_t *buf = pxfer_ring_slot(&w->b.ring, slot) + rs->boff[i];
	ssize_t n;

	rs->pending++;
	do {
		n = pwrite(rs->fd[i], buf, rs->seg[i].len, rs->seg[i].offset);
	} while (n < 0 && errno == EINTR);
	return rw_write_done(w, ((uint64_t)slot << 8) | i, n < 0 ? -errno : (int)n);
}

/* the coordinator is told once per turn of the worker (rw_main) */
static void rw_slot_free(struct rworker *w, unsigned int slot)
{
	pthread_mutex_lock(&w->b.lock);
	pxfer_credits_put(&w->b.cred, slot);
	pthread_mutex_unlock(&w->b.lock);
	w->slots_freed = 1;
}

static int rw_write_done(struct rworker *w, uint64_t tag, int res)
{
	struct recv_session *s = w->s;
	unsigned int slot = tag >> 8, i = tag & 0xff;
	struct rslot *rs = &w->slots[slot];
	struct pxfer_seg *seg = &rs->seg[i];
	int err = 0;

	rs->pending--;
	if (res > 0) {
		rs->done[i] += res;
		if (rs->done[i] < seg->len)
			return rw_prep_write(w, slot, i);	/* short write */
	} else {
		err = res < 0 ? -res : EIO;
	}
	if (err && fatal_write_error(err))
		pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
			   "cannot write into '%s': %s", s->o->dir, strerror(err));
	pxfer_filetab_written(&s->tab, seg->file, seg->len, err);
	if (!rs->pending)
		rw_slot_free(w, slot);
	return 0;
}

/* the chunk's descriptor is known and its payload not yet read */
static int rw_check(struct rworker *w, const struct pxfer_chunk *ch)
{
	int ret;

	if (ch->seq != w->seq)
		return -EPROTO;
	pthread_mutex_lock(&w->b.lock);
	ret = pxfer_credits_accept(&w->b.cred, ch->slot);
	pthread_mutex_unlock(&w->b.lock);
	if (ret)
		return ret;
	return pxfer_filetab_reserve(&w->s->tab, ch, w->slots[ch->slot].fd);
}

static int rw_chunk(struct rworker *w)
{
	struct recv_session *s = w->s;
	struct pxfer_chunk *d = &w->desc;
	struct rslot *rs = &w->slots[d->slot];
	uint8_t *buf = pxfer_ring_slot(&w->b.ring, d->slot);
	uint32_t off = 0;
	int ret;

	w->seq++;
	if (pxfer_hash(buf, d->len) != d->xxh3)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "checksum mismatch in chunk %llu from %s (data connection %u): data was corrupted in transit",
				  (unsigned long long)d->seq, w->b.conn->peer, w->b.idx);
	rs->nseg = d->nseg;
	rs->pending = 1;	/* the slot stays taken until all are under way */
	for (unsigned int i = 0; i < d->nseg; i++) {
		rs->seg[i] = d->seg[i];
		rs->boff[i] = off;
		rs->done[i] = 0;
		off += d->seg[i].len;
	}
	for (unsigned int i = 0; i < d->nseg; i++) {
		ret = d->seg[i].len <= WRITE_NOW_MAX ? rw_write_now(w, d->slot, i)
						      : rw_prep_write(w, d->slot, i);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
					  "cannot queue a write: %s", strerror(-ret));
	}
	if (!--rs->pending)
		rw_slot_free(w, d->slot);
	return 0;
}

static int rw_receive(struct rworker *w)
{
	struct recv_session *s = w->s;
	int ret, n = 0;

	/* bounded, so completions and the ring's slots keep moving */
	while (n < 16) {
		ret = s->t->recv_chunk(w->b.conn, &w->b.ring, &w->desc);
		if (ret == 0)
			break;
		if (ret > 0)
			ret = rw_check(w, &w->desc);
		if (!ret && s->t->recv_payload)
			ret = s->t->recv_payload(w->b.conn, &w->b.ring, &w->desc);
		if (ret == -EPIPE && atomic_load(&s->fin_seen))
			return 1;
		if (ret == -EPIPE || ret == -ECONNRESET) {
			/* the coordinator decides, after a moment in which the
			 * sender's ABORT, if any, can arrive and say why */
			atomic_store(&s->data_eof, w->b.idx + 1);
			pxfer_wake(s->ctrl.wake_fd);
			return 1;
		}
		if (ret == -EPROTO)
			return pxfer_fail(&s->fail, PXFER_EXIT_NET,
					  "protocol error on data connection %u from %s: a chunk that was not granted, does not fit its file or repeats bytes already sent",
					  w->b.idx, w->b.conn->peer);
		if (ret < 0)
			return pxfer_fail(&s->fail, PXFER_EXIT_NET,
					  "data connection %u from %s failed: %s",
					  w->b.idx, w->b.conn->peer, strerror(-ret));
		if (rw_chunk(w))
			return -1;
		n++;
	}
	return 0;
}

static void rw_finish_queued(struct rworker *w);
static __thread struct rworker *this_worker;

static void *rw_main(void *arg)
{
	struct rworker *w = arg;
	struct recv_session *s = w->s;
	struct pxfer_io_cqe cqe[REAP_BATCH];
	struct pollfd p[3];
	int n, ret, closed = 0;

	this_worker = w;
	while (!atomic_load(&s->stop) && !pxfer_failed(&s->fail)) {
		p[0].fd = w->b.wake_fd;
		p[0].events = POLLIN;
		p[1].fd = s->t->conn_fd(w->b.conn);
		p[1].events = closed ? 0 : POLLIN;
		p[2].fd = w->b.io->event_fd;
		p[2].events = POLLIN;
		poll(p, w->b.io->event_fd >= 0 ? 3 : 2,
		     !w->b.io->inflight ? 1000 : w->b.io->event_fd >= 0 ? 100 : 0);
		pxfer_drain(w->b.wake_fd);
		/* the coordinator is told at the end of the turn, once */
		pxfer_filetab_batch_begin(&s->tab);
		if (!closed && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			ret = rw_receive(w);
			if (ret < 0)
				break;
			closed = ret > 0;
		}
		ret = w->b.io->ops->submit(w->b.io);
		if (ret) {
			pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				   "cannot submit writes: %s", strerror(-ret));
			break;
		}
		/*
		 * Take every completion that is ready: reaping drains the
		 * eventfd, so what is left behind would wake nobody and the
		 * slots would sit until the poll timeout.
		 */
		do {
			n = w->b.io->ops->reap(w->b.io, cqe, REAP_BATCH, 0);
			for (int i = 0; i < n; i++)
				rw_write_done(w, cqe[i].tag, cqe[i].res);
			w->b.io->ops->submit(w->b.io);
		} while (n == REAP_BATCH);
		rw_finish_queued(w);
		if (pxfer_filetab_batch_end(&s->tab) || w->slots_freed) {
			w->slots_freed = 0;
			pxfer_wake(s->ctrl.wake_fd);
		}
	}
	if (pxfer_filetab_batch_end(&s->tab))	/* left by a break */
		pxfer_wake(s->ctrl.wake_fd);
	/* every write into the ring finishes before the ring goes away */
	while (w->b.io->inflight) {
		if (w->b.io->ops->submit(w->b.io))
			break;
		n = w->b.io->ops->reap(w->b.io, cqe, REAP_BATCH, 1);
		if (n < 0)
			break;
	}
	return NULL;
}

/* ---- files ------------------------------------------------------------ */

/*
 * A temporary name no one can guess without the session's key (a keyed
 * hash of a counter, so it costs no system call).
 */
static int make_tmp_name(struct recv_session *s, char *buf, size_t len,
			 const char *base)
{
	uint64_t seq = atomic_fetch_add(&s->tmp_seq, 1);
	uint8_t h[crypto_shorthash_BYTES];
	uint32_t r;
	int n;

	crypto_shorthash(h, (const uint8_t *)&seq, sizeof(seq), s->tmp_key);
	memcpy(&r, h, sizeof(r));
	n = snprintf(buf, len, ".pxfer-%.200s.%08x.part", base, r);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* the open parent directory of @path, shared; *base is its last part */
static int dcache_get(struct recv_session *s, const char *path,
		      const char **base)
{
	const char *slash = strrchr(path, '/');
	size_t plen = slash ? (size_t)(slash - path) : 0;
	struct dcache *d, *victim = NULL;
	char *copy;
	int fd;

	for (unsigned int i = 0; i < DCACHE_N; i++) {
		d = &s->dcache[i];
		if (d->fd < 0) {
			if (!victim || victim->fd >= 0)
				victim = d;
			continue;
		}
		if (strlen(d->path) == plen && !memcmp(d->path, path, plen)) {
			d->refs++;
			d->used = ++s->dcache_tick;
			*base = slash ? slash + 1 : path;
			return d->fd;
		}
		if (!d->refs && (!victim || (victim->fd >= 0 &&
					     d->used < victim->used)))
			victim = d;
	}
	fd = pxfer_path_open_parent(s->basefd, path, 1, base);
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
	victim->used = ++s->dcache_tick;
	return fd;
}

/* a file is done with its directory @fd from dcache_get */
static void dcache_put(struct recv_session *s, int fd)
{
	for (unsigned int i = 0; i < DCACHE_N; i++) {
		if (s->dcache[i].fd == fd) {
			s->dcache[i].refs--;
			return;
		}
	}
	close(fd);
}

static void dcache_release(struct recv_session *s)
{
	for (unsigned int i = 0; i < DCACHE_N; i++) {
		struct dcache *d = &s->dcache[i];

		if (d->fd >= 0)
			close(d->fd);
		free(d->path);
		d->path = NULL;
		d->fd = -1;
		d->refs = 0;
	}
}

static void reply_status(struct recv_session *s, uint16_t type, uint64_t id,
			 int code, const char *text)
{
	struct pxfer_msg m = { .type = type };

	m.u.status.id = id;
	m.u.status.code = code;
	if (text) {
		size_t n = strlen(text);

		if (n > PXFER_TEXT_MAX)
			n = PXFER_TEXT_MAX;
		memcpy(m.u.status.text, text, n);
		m.u.status.text[n] = 0;
		m.u.status.text_len = n;
	}
	if (pxfer_ctrl_queue(&s->ctrl, &m))
		pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
}

static void refuse_file(struct recv_session *s, const struct pxfer_file *f,
			int err, const char *what)
{
	char text[PXFER_TEXT_MAX + 1];

	snprintf(text, sizeof(text), "%s: %s", what, strerror(err));
	if (!s->o->quiet)
		warning("refused '%s' from %s: %s", f->path, s->cconn->peer, text);
	s->failed++;
	reply_status(s, PXFER_MSG_FILE_ERR, f->id, err, text);
}

static void set_times(struct timespec *ts, const struct pxfer_file *f)
{
	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_sec = f->mtime_sec;
	ts[1].tv_nsec = f->mtime_nsec;
}

static int remember_dir(struct recv_session *s, const struct pxfer_file *f)
{
	struct rdir *d;

	if (s->ndirs == s->dirs_cap) {
		size_t cap = s->dirs_cap ? 2 * s->dirs_cap : 64;

		d = realloc(s->dirs, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		s->dirs = d;
		s->dirs_cap = cap;
	}
	d = &s->dirs[s->ndirs];
	d->path = strdup(f->path);
	if (!d->path)
		return -ENOMEM;
	d->mode = f->mode;
	set_times(d->times, f);
	s->ndirs++;
	return 0;
}

static void on_dir(struct recv_session *s, const struct pxfer_file *f)
{
	/* owner-writable until the end, when the real mode is applied */
	int ret = pxfer_path_mkdir(s->basefd, f->path, 0700);

	if (ret)
		return refuse_file(s, f, -ret, "cannot create the directory");
	if (remember_dir(s, f)) {
		pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
		return;
	}
	reply_status(s, PXFER_MSG_FILE_DONE, f->id, 0, NULL);
}

static void on_symlink(struct recv_session *s, const struct pxfer_file *f)
{
	char tmp[PXFER_NAME_MAX + 1];
	struct timespec ts[2];
	const char *base;
	int dfd, ret;

	dfd = pxfer_path_open_parent(s->basefd, f->path, 1, &base);
	if (dfd < 0)
		return refuse_file(s, f, -dfd, "unsafe or unusable path");
	ret = make_tmp_name(s, tmp, sizeof(tmp), base);
	/* the link is created, never followed: its target is only text */
	if (!ret && symlinkat(f->target, dfd, tmp))
		ret = -errno;
	if (!ret && renameat(dfd, tmp, dfd, base)) {
		ret = -errno;
		unlinkat(dfd, tmp, 0);
	}
	if (ret) {
		close(dfd);
		return refuse_file(s, f, -ret, "cannot create the link");
	}
	set_times(ts, f);
	utimensat(dfd, base, ts, AT_SYMLINK_NOFOLLOW);
	close(dfd);
	reply_status(s, PXFER_MSG_FILE_DONE, f->id, 0, NULL);
}

static void on_regular(struct recv_session *s, const struct pxfer_file *f)
{
	struct pxfer_rfile *rf = &s->tab.f[f->id];
	char tmp[PXFER_NAME_MAX + 1];
	const char *base;
	char *path = NULL, *tname = NULL;
	int dfd, fd = -1, ret, mode_set;

	dfd = dcache_get(s, f->path, &base);
	if (dfd < 0)
		return refuse_file(s, f, -dfd, "unsafe or unusable path");
	/*
	 * A small file is made unnamed and linked when complete: cheaper for
	 * the directory than a temporary name and a rename, and nothing is
	 * left behind if the receiver dies. A large one keeps a visible
	 * temporary name, which shows how far it got.
	 */
	ret = 0;
	tmp[0] = 0;
	if (s->link_how != LINK_NONE && f->size <= UNNAMED_MAX)
		fd = openat(dfd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);
	if (fd < 0)
		ret = make_tmp_name(s, tmp, sizeof(tmp), base);
	if (fd < 0 && !ret) {
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
				      O_NOFOLLOW, 0600);
		if (fd < 0)
			ret = -errno;
	}
	/*
	 * A large file is sized up front: holes stay holes, and writes need
	 * not extend it. A small one only at the end, if it has holes.
	 */
	if (!ret && f->size > PRESIZE_MIN && ftruncate(fd, f->size))
		ret = -errno;
	/* no one can open an unnamed file: it can have its mode now, here
	 * rather than in the worker that completes it */
	mode_set = !ret && !tmp[0] && !fchmod(fd, f->mode & 01777);
	if (!ret) {
		path = strdup(f->path);
		tname = tmp[0] ? strdup(tmp) : NULL;
		if (!path || (tmp[0] && !tname))
			ret = -ENOMEM;
	}
	if (ret) {
		if (fd >= 0) {
			close(fd);
			if (tmp[0])
				unlinkat(dfd, tmp, 0);
		}
		dcache_put(s, dfd);
		free(path);
		free(tname);
		return refuse_file(s, f, -ret, "cannot create the file");
	}
	pthread_mutex_lock(&s->tab.lock);
	memset(rf, 0, sizeof(*rf));
	rf->fd = fd;
	rf->dirfd = dfd;
	rf->path = path;
	rf->base = path + (base - f->path);
	rf->tmp = tname;
	rf->size = f->size;
	rf->mode = f->mode & 01777;	/* never set-id bits from a peer */
	rf->mode_set = mode_set;
	set_times(rf->times, f);
	rf->used = 1;
	s->tab.used++;
	pthread_mutex_unlock(&s->tab.lock);
	reply_status(s, PXFER_MSG_FILE_OK, f->id, 0, NULL);
}

static int on_file(struct recv_session *s, const struct pxfer_file *f)
{
	int ret;

	if (f->id >= s->wel.max_files || s->tab.f[f->id].used)
		return -EPROTO;
	ret = pxfer_path_check(f->path, f->path_len);
	if (ret) {
		refuse_file(s, f, -ret, "unsafe path");
		return 0;
	}
	switch (f->type) {
	case PXFER_FT_DIR:
		on_dir(s, f);
		break;
	case PXFER_FT_SYMLINK:
		on_symlink(s, f);
		break;
	default:
		on_regular(s, f);
		break;
	}
	return 0;
}

static void rfile_drop(struct recv_session *s, uint64_t id, int unlink_tmp)
{
	struct pxfer_rfile *rf = &s->tab.f[id];

	if (unlink_tmp && rf->tmp)
		unlinkat(rf->dirfd, rf->tmp, 0);
	if (rf->fd >= 0)
		close(rf->fd);
	dcache_put(s, rf->dirfd);
	free(rf->path);
	free(rf->tmp);
	pthread_mutex_lock(&s->tab.lock);
	pxfer_filetab_forget(&s->tab, rf);
	memset(rf, 0, sizeof(*rf));
	s->tab.used--;
	pthread_mutex_unlock(&s->tab.lock);
}

/* link @fd (O_TMPFILE) as @name in @dfd, the way probe_link() found */
static int link_fd(enum link_how how, int fd, int dfd, const char *name)
{
	char proc[40];

	if (how == LINK_EMPTY_PATH)
		return linkat(fd, "", dfd, name, AT_EMPTY_PATH) ? -errno : 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

/*
 * Give a complete unnamed file its name. A name that exists is replaced
 * at once, as rename does: linked under a temporary name, renamed over it.
 */
static int link_unnamed(struct recv_session *s, struct pxfer_rfile *rf)
{
	char tmp[PXFER_NAME_MAX + 1];
	int ret = link_fd(s->link_how, rf->fd, rf->dirfd, rf->base);

	if (ret != -EEXIST)
		return ret;
	ret = make_tmp_name(s, tmp, sizeof(tmp), rf->base);
	if (!ret)
		ret = link_fd(s->link_how, rf->fd, rf->dirfd, tmp);
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
static void probe_link(struct recv_session *s)
{
	static const enum link_how ways[] = { LINK_EMPTY_PATH, LINK_PROC };
	/* PXFER_RECV_LINK=proc or =rename: what some systems are left
	 * with, to test those ways here */
	const char *force = getenv("PXFER_RECV_LINK");
	unsigned int first = force && !strcmp(force, "proc");
	char name[PXFER_NAME_MAX + 1];
	int fd = -1;

	s->link_how = LINK_NONE;
	if (!force || strcmp(force, "rename"))
		fd = openat(s->basefd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);
	if (fd >= 0 && !make_tmp_name(s, name, sizeof(name), "probe")) {
		for (unsigned int i = first; i < 2; i++) {
			if (!link_fd(ways[i], fd, s->basefd, name)) {
				s->link_how = ways[i];
				unlinkat(s->basefd, name, 0);
				break;
			}
		}
	}
	if (fd >= 0)
		close(fd);
	if (s->link_how == LINK_NONE)
		verbose("files arrive under temporary names, renamed when complete");
	else
		verbose("files up to %u KiB arrive unnamed, linked when complete (%s)",
			UNNAMED_MAX >> 10, s->link_how == LINK_EMPTY_PATH ?
			"linkat AT_EMPTY_PATH" : "linkat of /proc/self/fd");
}

static int finish_file(struct recv_session *s, struct pxfer_rfile *rf)
{
	int ret;

	if (rf->size <= PRESIZE_MIN && rf->total < rf->size &&
	    ftruncate(rf->fd, rf->size))
		return -errno;		/* it ends in a hole */
	if (s->fsync && fsync(rf->fd))
		return -errno;
	if ((!rf->mode_set && fchmod(rf->fd, rf->mode)) ||
	    futimens(rf->fd, rf->times))
		return -errno;
	if (rf->tmp)
		ret = renameat(rf->dirfd, rf->tmp, rf->dirfd, rf->base) ? -errno : 0;
	else
		ret = link_unnamed(s, rf);
	if (ret)
		return ret;
	if (s->fsync && fsync(rf->dirfd))
		return -errno;
	return 0;
}

/*
 * The filetab's finish callback: a complete file gets its size, mode and
 * times and its real name in the thread that completed it, so that with
 * many small files the workers share this work with the coordinator.
 */
static void rfile_finish_now(struct recv_session *s, struct pxfer_rfile *rf)
{
	if (rf->end_code || rf->err)
		return;		/* finalize reports it and removes it */
	rf->finish_err = -finish_file(s, rf);
	if (!rf->finish_err) {
		close(rf->fd);
		rf->fd = -1;
	}
	rf->finished = 1;
}

/*
 * In a worker, the file is finished at once. On the coordinator (FILE_END
 * came after the last write, as it usually does with small files) it is
 * handed to the workers in turn, so the coordinator only creates files.
 */
static int rfile_finish(void *arg, struct pxfer_rfile *rf)
{
	struct recv_session *s = arg;
	struct rworker *w;
	int wake;

	if (this_worker || rf->end_code || rf->err || !s->nworkers) {
		rfile_finish_now(s, rf);
		return 0;
	}
	w = &s->w[s->finish_next++ % s->nworkers];
	pthread_mutex_lock(&w->b.lock);
	w->finq[(w->finq_head + w->finq_count) % s->tab.n] = rf - s->tab.f;
	/* the worker empties its queue each time it wakes */
	wake = w->finq_count++ == 0;
	pthread_mutex_unlock(&w->b.lock);
	if (wake)
		pxfer_wake(w->b.wake_fd);
	return 1;
}

/* finish what the coordinator handed to this worker */
static void rw_finish_queued(struct rworker *w)
{
	struct recv_session *s = w->s;
	uint32_t id;

	for (;;) {
		pthread_mutex_lock(&w->b.lock);
		if (!w->finq_count) {
			pthread_mutex_unlock(&w->b.lock);
			return;
		}
		id = w->finq[w->finq_head];
		w->finq_head = (w->finq_head + 1) % s->tab.n;
		w->finq_count--;
		pthread_mutex_unlock(&w->b.lock);
		rfile_finish_now(s, &s->tab.f[id]);
		pxfer_filetab_push_done(&s->tab, id);
	}
}

static void finalize(struct recv_session *s, uint64_t id)
{
	struct pxfer_rfile *rf = &s->tab.f[id];
	char text[PXFER_TEXT_MAX + 1];
	int err = rf->end_code ? rf->end_code : rf->err;

	if (!err)
		err = rf->finished ? rf->finish_err : -finish_file(s, rf);
	if (!err) {
		s->files++;
		s->bytes += rf->total;
		reply_status(s, PXFER_MSG_FILE_DONE, id, 0, NULL);
		rfile_drop(s, id, 0);
		return;
	}
	if (rf->end_code) {
		snprintf(text, sizeof(text), "the sender could not read it: %s",
			 strerror(err));
	} else {
		snprintf(text, sizeof(text), "cannot write it: %s", strerror(err));
		if (!s->o->quiet)
			error("cannot write '%s': %s", rf->path, strerror(err));
	}
	s->failed++;
	reply_status(s, PXFER_MSG_FILE_DONE, id, err, text);
	rfile_drop(s, id, 1);
}

static void apply_dirs(struct recv_session *s)
{
	/* deepest first: setting a mode may forbid entering what is below */
	for (size_t i = s->ndirs; i-- > 0;) {
		struct rdir *d = &s->dirs[i];
		int fd = pxfer_path_open_dir(s->basefd, d->path);

		if (fd < 0)
			continue;
		if (fchmod(fd, d->mode & 01777) || futimens(fd, d->times))
			warning("cannot set the mode or time of '%s': %s",
				d->path, strerror(errno));
		close(fd);
	}
}

static void free_dirs(struct recv_session *s)
{
	for (size_t i = 0; i < s->ndirs; i++)
		free(s->dirs[i].path);
	free(s->dirs);
	s->dirs = NULL;
	s->ndirs = s->dirs_cap = 0;
}

/* ---- control ---------------------------------------------------------- */

static int on_fin(struct recv_session *s, const struct pxfer_fin *fin)
{
	struct pxfer_msg m = { .type = PXFER_MSG_ACK };

	if (s->tab.used)
		return -EPROTO;
	apply_dirs(s);
	atomic_store(&s->fin_seen, 1);
	m.u.fin.files = s->files;
	m.u.fin.bytes = s->bytes;
	m.u.fin.code = 0;
	if (pxfer_ctrl_queue(&s->ctrl, &m))
		return -ENOMEM;
	s->acked = 1;
	verbose("FIN from %s: all files in; ACK", s->cconn->peer);
	return 0;
}

static int dispatch(struct recv_session *s, const struct pxfer_msg *m)
{
	switch (m->type) {
	case PXFER_MSG_FILE:
		return on_file(s, &m->u.file);
	case PXFER_MSG_FILE_END:
		return pxfer_filetab_end(&s->tab, m->u.end.id, m->u.end.bytes,
					 m->u.end.code);
	case PXFER_MSG_FIN:
		return on_fin(s, &m->u.fin);
	case PXFER_MSG_PING:
		return 0;
	case PXFER_MSG_ABORT:
		pxfer_fail(&s->fail, PXFER_EXIT_FAIL,
			   "the sender %s ended the session: %s", s->cconn->peer,
			   m->u.error.text_len ? m->u.error.text
					       : strerror(m->u.error.code));
		return 0;
	default:
		return -EPROTO;
	}
}

static int grant_credits(struct recv_session *s)
{
	struct pxfer_msg m = { .type = PXFER_MSG_CREDIT };
	struct pxfer_credit *c = &m.u.credit;
	int ret;

	for (unsigned int i = 0; i < s->nworkers; i++) {
		struct rworker *w = &s->w[i];

		c->worker = i;
		pthread_mutex_lock(&w->b.lock);
		c->count = pxfer_credits_collect(&w->b.cred, c->slots,
						 PXFER_CREDIT_MAX);
		pthread_mutex_unlock(&w->b.lock);
		if (!c->count)
			continue;
		ret = pxfer_ctrl_queue(&s->ctrl, &m);
		if (ret)
			return ret;
	}
	return 0;
}

static int read_control(struct recv_session *s)
{
	unsigned int n = 0;
	int ret, r;

	ret = pxfer_ctrl_fill(&s->ctrl);
	while (!pxfer_failed(&s->fail) && !s->acked) {
		const char *what = "a malformed message";

		r = pxfer_ctrl_next(&s->ctrl, &s->msg);
		if (r == 0)
			break;
		if (r > 0) {
			what = pxfer_msg_name(s->msg.type);
			r = dispatch(s, &s->msg);
			/* replies go out as they are made, not after the batch:
			 * FILE_OK is what lets the sender's data flow */
			if (++n % REPLY_FLUSH == 0)
				pxfer_ctrl_flush(&s->ctrl);
		}
		if (r < 0)
			return pxfer_fail(&s->fail, PXFER_EXIT_NET,
					  "protocol error from the sender %s (%s): %s",
					  s->cconn->peer, what, strerror(-r));
	}
	if (s->acked)
		return 0;
	if (ret == -EPIPE)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "the sender %s went away before the transfer completed",
				  s->cconn->peer);
	if (ret < 0)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "lost the connection to the sender %s: %s",
				  s->cconn->peer, strerror(-ret));
	return 0;
}

static int flush_all(struct recv_session *s, int timeout_ms)
{
	struct pollfd p = { .fd = s->t->conn_fd(s->cconn),
			    .events = s->t->poll_events(s->cconn, 1) };
	double end = pxfer_now() + timeout_ms / 1000.0;
	int ret;

	while (pxfer_ctrl_pending(&s->ctrl)) {
		ret = pxfer_ctrl_flush(&s->ctrl);
		if (ret)
			return ret;
		if (!pxfer_ctrl_pending(&s->ctrl))
			break;
		if (pxfer_now() > end)
			return -ETIMEDOUT;
		poll(&p, 1, 100);
	}
	return 0;
}

/* a data connection closed before FIN and no ABORT explained it in time */
static int data_closed_early(struct recv_session *s)
{
	int eof = atomic_load(&s->data_eof);

	if (!eof || pxfer_failed(&s->fail) || s->acked)
		return 0;
	if (!s->data_eof_at)
		s->data_eof_at = pxfer_now();
	if (pxfer_now() - s->data_eof_at < 1.0)
		return 0;
	return pxfer_fail(&s->fail, PXFER_EXIT_NET,
			  "the sender %s closed data connection %d before the transfer completed",
			  s->cconn->peer, eof - 1);
}

static int coordinate(struct recv_session *s)
{
	uint64_t id;
	int ret;

	if (grant_credits(s))
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
	while (!pxfer_failed(&s->fail) && !s->acked) {
		ret = pxfer_ctrl_wait(&s->ctrl, s->sigfd,
				      atomic_load(&s->data_eof) ? 200 : 1000);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_NET,
					  "lost the connection to the sender %s: %s",
					  s->cconn->peer, strerror(-ret));
		if (pxfer_signal_pending())
			return pxfer_fail(&s->fail, PXFER_EXIT_INTR,
					  "interrupted; incomplete files were removed");
		if (read_control(s))
			break;
		while (pxfer_filetab_pop_done(&s->tab, &id))
			finalize(s, id);
		if (data_closed_early(s))
			break;
		ret = pxfer_ctrl_keepalive(&s->ctrl);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_NET,
					  ret == -ETIMEDOUT ? "no word from the sender %s for %d s: it is gone or unreachable"
							    : "cannot queue a message to %s (%d)",
					  s->cconn->peer, PXFER_IDLE_SECS);
		if (grant_credits(s))
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
	}
	if (s->acked && flush_all(s, PXFER_HANDSHAKE_MS))
		warning("could not confirm completion to the sender %s",
			s->cconn->peer);
	return pxfer_failed(&s->fail) ? -1 : 0;
}

/* ---- session set-up --------------------------------------------------- */

static int send_challenge(struct recv_session *s, struct pxfer_conn *c,
			  uint8_t *nonce)
{
	struct pxfer_msg m = { .type = PXFER_MSG_CHALLENGE };

	m.u.challenge.magic = PXFER_MAGIC;
	m.u.challenge.version = PXFER_PROTO_VERSION;
	m.u.challenge.transport = c->ops->wire_id;
	pxfer_auth_nonce(m.u.challenge.nonce);
	memcpy(nonce, m.u.challenge.nonce, PXFER_NONCE_LEN);
	return pxfer_conn_send_msg(c, &m, PXFER_HANDSHAKE_MS);
}

static void send_refuse(struct pxfer_conn *c, int code, const char *text)
{
	struct pxfer_msg m = { .type = PXFER_MSG_REFUSE };

	m.u.error.code = code;
	m.u.error.text_len = strlen(text);
	memcpy(m.u.error.text, text, m.u.error.text_len + 1);
	pxfer_conn_send_msg(c, &m, 1000);
}

/* start making the worker's ring while the sender connects */
static int worker_prepare(struct recv_session *s, struct rworker *w)
{
	w->s = s;
	w->slots = calloc(s->wel.slots, sizeof(*w->slots));
	w->finq = calloc(s->tab.n, sizeof(*w->finq));
	if (!w->slots || !w->finq)
		return -ENOMEM;
	return pxfer_worker_prepare(&w->b, s->t, s->o->io, s->wel.slots,
				    s->wel.chunk_size, 1, &s->pool);
}

static void worker_release(struct recv_session *s, struct rworker *w)
{
	pxfer_worker_release(&w->b, s->t);
	free(w->slots);
	free(w->finq);
}

#define PENDING_MAX 16
#define PENDING_SECS 15

struct pending {
	struct pxfer_conn *c;
	struct pxfer_ctrl ctrl;
	uint8_t nonce[PXFER_NONCE_LEN];
	double deadline;
};

static void pending_drop(struct pending *p, unsigned int *n, unsigned int i)
{
	pxfer_ctrl_release(&p[i].ctrl);
	p[i].c->ops->close(p[i].c);
	p[i] = p[--*n];
}

static int send_challenge(struct recv_session *s, struct pxfer_conn *c,
			  uint8_t *nonce);

static void pending_add(struct recv_session *s, struct pending *p,
			unsigned int *n, struct pxfer_conn *c)
{
	struct pending *e;

	if (*n == PENDING_MAX)
		pending_drop(p, n, 0);	/* the oldest makes room */
	e = &p[*n];
	e->c = c;
	e->deadline = pxfer_now() + PENDING_SECS;
	if (send_challenge(s, c, e->nonce) || pxfer_ctrl_init(&e->ctrl, c)) {
		c->ops->close(c);
		return;
	}
	(*n)++;
}

/* the next message of pending connection @e: 1, 0 while incomplete, -1 */
static int pending_next(struct pending *e, struct pxfer_msg *m)
{
	int ret = pxfer_ctrl_fill(&e->ctrl), r = pxfer_ctrl_next(&e->ctrl, m);

	if (r == 0)
		return ret < 0 ? -1 : 0;
	return r < 0 ? -1 : 1;
}

/*
 * One data connection, whose first message (to the CHALLENGE with @nonce)
 * is @m: prove it belongs to this session, set up its worker.
 */
static int accept_data(struct recv_session *s, struct pxfer_conn *c,
		       const uint8_t *nonce, struct pxfer_msg *m)
{
	uint8_t mac[PXFER_MAC_LEN];
	struct rworker *w;
	uint16_t blob_len = 0;
	uint8_t blob[PXFER_BLOB_MAX];
	int ret;

	if (m->type == PXFER_MSG_HELLO) {
		send_refuse(c, EBUSY, "the receiver is busy with another session; try again later");
		return -EBUSY;
	}
	if (m->type != PXFER_MSG_DATA_HELLO)
		return -EPROTO;
	pxfer_auth_data_mac(s->session_key, nonce, m->u.data_hello.session,
			    m->u.data_hello.worker, mac);
	if (m->u.data_hello.session != s->wel.session ||
	    !pxfer_auth_equal(mac, m->u.data_hello.mac)) {
		send_refuse(c, EACCES, "not part of this session");
		return -EACCES;
	}
	if (m->u.data_hello.worker >= s->nworkers ||
	    s->w[m->u.data_hello.worker].b.conn)
		return -EPROTO;
	w = &s->w[m->u.data_hello.worker];
	w->b.conn = c;
	ret = pxfer_worker_attach(&w->b, s->t, blob, &blob_len);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
				  "cannot set up worker %u: %s", w->b.idx,
				  pxfer_worker_setup_error(ret));
	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_DATA_WELCOME;
	m->u.data_welcome.worker = w->b.idx;
	m->u.data_welcome.blob_len = blob_len;
	memcpy(m->u.data_welcome.blob, blob, blob_len);
	ret = pxfer_conn_send_msg(c, m, PXFER_HANDSHAKE_MS);
	/* the worker owns the connection now (its ring is registered with
	 * it): losing it fails the session, like losing it later would */
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "lost data connection %u from %s while setting it up: %s",
				  w->b.idx, c->peer, strerror(-ret));
	return 0;
}

/*
 * The sender's data connections, each proving itself with a DATA_HELLO.
 * Connections are read as their bytes come (not one after the other), so
 * that one which says nothing, which anybody can open, holds up no other.
 */
static int accept_workers(struct recv_session *s)
{
	double end = pxfer_now() + PXFER_HANDSHAKE_MS / 1000.0;
	struct pending pend[PENDING_MAX];
	struct pollfd p[PENDING_MAX + 2];
	unsigned int have = 0, npend = 0, i;
	int ret;

	while (have < s->nworkers && !pxfer_failed(&s->fail)) {
		double now = pxfer_now();
		unsigned int n = 1;

		if (now >= end) {
			pxfer_fail(&s->fail, PXFER_EXIT_NET,
				   "the sender %s opened %u of %u data connections in time",
				   s->cconn->peer, have, s->nworkers);
			break;
		}
		p[0].fd = s->t->listener_fd(s->l);
		p[0].events = POLLIN;
		for (i = 0; i < npend; i++, n++) {
			p[n].fd = pend[i].c->ops->conn_fd(pend[i].c);
			p[n].events = pend[i].c->ops->poll_events(pend[i].c, 0);
		}
		p[n].fd = s->sigfd;
		p[n].events = POLLIN;
		if (poll(p, n + 1, (int)((end - now) * 1000) + 1) < 0 && errno != EINTR) {
			pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "poll: %s", strerror(errno));
			break;
		}
		if (pxfer_signal_pending()) {
			pxfer_fail(&s->fail, PXFER_EXIT_INTR,
				   "interrupted while the sender %s opened its data connections",
				   s->cconn->peer);
			break;
		}
		if (p[0].revents & POLLIN) {
			struct pxfer_conn *c;

			if (!s->t->accept(s->l, &c))
				pending_add(s, pend, &npend, c);
		}
		for (i = 0; i < npend && have < s->nworkers;) {
			struct pxfer_conn *c = pend[i].c;
			uint8_t nonce[PXFER_NONCE_LEN];
			int r = pending_next(&pend[i], &s->msg);

			if (r <= 0) {
				if (r < 0)
					pending_drop(pend, &npend, i);
				else
					i++;
				continue;
			}
			memcpy(nonce, pend[i].nonce, sizeof(nonce));
			pxfer_ctrl_release(&pend[i].ctrl);
			pend[i] = pend[--npend];
			ret = accept_data(s, c, nonce, &s->msg);
			if (pxfer_failed(&s->fail))
				break;	/* its worker holds @c */
			if (ret) {
				verbose("refused a connection from %s: %s", c->peer,
					strerror(-ret));
				s->t->close(c);
				continue;
			}
			have++;
		}
	}
	while (npend)
		pending_drop(pend, &npend, 0);
	if (pxfer_failed(&s->fail))
		return -1;
	for (i = 0; i < s->nworkers; i++) {
		ret = pthread_create(&s->w[i].b.thread, NULL, rw_main, &s->w[i]);
		if (ret)
			return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL,
					  "cannot start a worker thread: %s",
					  strerror(ret));
		s->w[i].b.started = 1;
		pxfer_thread_name(s->w[i].b.thread, "recv", i);
	}
	verbose("%u data connection%s ready", s->nworkers,
		s->nworkers == 1 ? "" : "s");
	return 0;
}

static unsigned int pick_slots(const struct recv_session *s,
			       unsigned int workers, uint32_t chunk)
{
	uint64_t n = s->o->ring_mem / ((uint64_t)workers * chunk);
	unsigned int max = s->t->ring_slots_max;

	/* small chunks in a large --ring-mem: no more than the transport
	 * can take (rdma: what its shared receive queue holds) */
	if (max && n > max / workers)
		n = max / workers;
	if (n < 2)
		n = 2;
	if (n > PXFER_SLOTS_MAX)
		n = PXFER_SLOTS_MAX;
	return n;
}

static int open_dest(struct recv_session *s, const struct pxfer_hello *h)
{
	int ret;

	if (!h->dest_len) {
		s->basefd = dup(s->rootfd);
		return s->basefd < 0 ? -errno : 0;
	}
	ret = pxfer_path_check(h->dest, h->dest_len);
	if (!ret)
		ret = pxfer_path_mkdir(s->rootfd, h->dest, 0755);
	if (!ret) {
		s->basefd = pxfer_path_open_dir(s->rootfd, h->dest);
		if (s->basefd < 0)
			ret = s->basefd;
	}
	return ret;
}

/* The HELLO is authentic: agree on parameters and send the WELCOME. */
static int welcome(struct recv_session *s, const struct pxfer_hello *h,
		   const uint8_t *nonce_r)
{
	const struct pxfer_recv_opts *o = s->o;
	unsigned long nofile = pxfer_raise_nofile();
	struct pxfer_msg m = { .type = PXFER_MSG_WELCOME };
	struct pxfer_welcome *wel = &m.u.welcome;
	uint32_t chunk = h->chunk_size, page = sysconf(_SC_PAGESIZE);
	int ret;

	if (chunk > o->max_chunk)
		chunk = o->max_chunk;
	/*
	 * A sender that left the size to us gets the largest chunk (up to
	 * what it asked) that still leaves RING_DEPTH slots per worker in
	 * --ring-mem: fewer, larger chunks cost less per byte, but a worker
	 * needs several in flight.
	 */
	if (h->flags & PXFER_HELLO_CHUNK_AUTO)
		while (chunk / 2 >= PXFER_AUTO_CHUNK_MIN &&
		       o->ring_mem / ((uint64_t)h->workers * chunk) < RING_DEPTH)
			chunk /= 2;
	chunk -= chunk % page;
	if (chunk < PXFER_CHUNK_MIN)
		chunk = PXFER_CHUNK_MIN;
	wel->chunk_size = chunk;
	wel->workers = h->workers;
	wel->slots = pick_slots(s, h->workers, chunk);
	/* every file in flight holds two descriptors: the file, its directory */
	wel->max_files = MAX_FILES;
	if (nofile < 2 * MAX_FILES + 256)
		wel->max_files = nofile > 320 ? (nofile - 256) / 2 : 32;
	{
		char msg[400];

		if (pxfer_transport_memlock(s->t, wel->workers, wel->slots,
					    chunk, msg, sizeof(msg))) {
			send_refuse(s->cconn, ENOMEM, "the receiver cannot pin its ring memory (memlock limit); see its log");
			pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "%s", msg);
			return -ENOMEM;
		}
	}
	randombytes_buf(&wel->session, sizeof(wel->session));
	crypto_shorthash_keygen(s->tmp_key);
	atomic_store(&s->tmp_seq, 0);
	pxfer_auth_welcome_mac(&o->secret, nonce_r, h->nonce, wel->session,
			       wel->mac);
	s->wel = *wel;
	s->fsync = o->fsync || (h->flags & PXFER_HELLO_FSYNC);
	s->nworkers = wel->workers;
	ret = pxfer_filetab_init(&s->tab, wel->max_files, s->ctrl.wake_fd);
	if (ret)
		return ret;
	s->tab.finish = rfile_finish;
	s->tab.finish_arg = s;
	s->tab_init = 1;
	s->w = calloc(s->nworkers, sizeof(*s->w));
	if (!s->w)
		return -ENOMEM;
	for (unsigned int i = 0; i < s->nworkers; i++) {
		s->w[i].b.idx = i;
		s->w[i].b.wake_fd = -1;
	}
	/* the rings are made while the sender connects its workers */
	for (unsigned int i = 0; i < s->nworkers; i++) {
		ret = worker_prepare(s, &s->w[i]);
		if (ret)
			return ret;
	}
	return pxfer_conn_send_msg(s->cconn, &m, PXFER_HANDSHAKE_MS);
}

static void session_release(struct recv_session *s)
{
	if (s->w) {
		atomic_store(&s->stop, 1);
		for (unsigned int i = 0; i < s->nworkers; i++)
			pxfer_worker_kick(&s->w[i].b, s->t, pxfer_failed(&s->fail));
		for (unsigned int i = 0; i < s->nworkers; i++)
			pxfer_worker_join(&s->w[i].b);
		for (unsigned int i = 0; i < s->nworkers; i++)
			worker_release(s, &s->w[i]);
		free(s->w);
		s->w = NULL;
	}
	if (s->tab_init) {
		/* what did not complete never shows under its real name */
		for (unsigned int i = 0; i < s->tab.n; i++)
			if (s->tab.f[i].used)
				rfile_drop(s, i, 1);
		pxfer_filetab_release(&s->tab);
		s->tab_init = 0;
	}
	free_dirs(s);
	dcache_release(s);
	if (s->ctrl_init)
		pxfer_ctrl_release(&s->ctrl);
	s->ctrl_init = 0;
	if (s->cconn)
		s->t->close(s->cconn);
	s->cconn = NULL;
	if (s->basefd >= 0)
		close(s->basefd);
	s->basefd = -1;
	pxfer_fail_release(&s->fail);
}

static void send_abort(struct recv_session *s)
{
	struct pxfer_msg m = { .type = PXFER_MSG_ABORT };

	m.u.error.code = ECANCELED;
	snprintf(m.u.error.text, sizeof(m.u.error.text), "%.*s",
		 PXFER_TEXT_MAX, s->fail.msg);
	m.u.error.text_len = strlen(m.u.error.text);
	if (!pxfer_ctrl_queue(&s->ctrl, &m))
		flush_all(s, 1000);
}

static void report(struct recv_session *s, double secs)
{
	char b[32], r[32];

	if (s->o->quiet)
		return;
	info("pxfer: %s %llu files (%s) from %s in %.1f s (%s/s)%s",
	     pxfer_failed(&s->fail) ? "failed after" : "received",
	     (unsigned long long)s->files, pxfer_human(b, sizeof(b), s->bytes),
	     s->cconn->peer, secs, pxfer_human(r, sizeof(r), secs > 0 ? s->bytes / secs : 0),
	     s->failed ? "; some files failed" : "");
}

/* Run one session on an authenticated control connection. */
static int run_session(struct recv_session *s, const struct pxfer_hello *h,
		       const uint8_t *nonce_r)
{
	double t0 = pxfer_now();
	int ret;

	ret = pxfer_ctrl_init(&s->ctrl, s->cconn);
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_LOCAL, "out of memory");
	s->ctrl_init = 1;
	s->fail.wake_fd = s->ctrl.wake_fd;
	ret = open_dest(s, h);
	if (ret) {
		char text[PXFER_TEXT_MAX + 1];

		snprintf(text, sizeof(text), "cannot use the destination '%.200s': %s",
			 h->dest, strerror(-ret));
		send_refuse(s->cconn, -ret, text);
		return pxfer_fail(&s->fail, PXFER_EXIT_FAIL,
				  "refused a sender from %s: cannot use destination '%s': %s",
				  s->cconn->peer, h->dest, strerror(-ret));
	}
	ret = welcome(s, h, nonce_r);
	if (ret && pxfer_failed(&s->fail))
		return -1;
	if (ret)
		return pxfer_fail(&s->fail, PXFER_EXIT_NET,
				  "handshake with %s failed: %s", s->cconn->peer,
				  strerror(-ret));
	probe_link(s);
	pxfer_auth_session_key(&s->o->secret, nonce_r, h->nonce, s->session_key);
	verbose("session with %s: %u workers, %u KiB chunks, %u slots each",
		s->cconn->peer, s->nworkers, s->wel.chunk_size >> 10, s->wel.slots);
	if (!accept_workers(s))
		coordinate(s);
	if (pxfer_failed(&s->fail) && pxfer_fail_code(&s->fail) != PXFER_EXIT_NET)
		send_abort(s);
	report(s, pxfer_now() - t0);
	return pxfer_failed(&s->fail) ? -1 : 0;
}

/*
 * Connections that were sent a CHALLENGE and have not yet answered. They
 * are served together, each with a deadline, so that a connection that
 * stays silent cannot hold up a real sender.
 */
/*
 * Read what pending connection @e sent. Returns 1 with @h filled when it is
 * an authentic HELLO, 0 while it is incomplete, -1 when the connection is
 * to be dropped (it was told why where that helps).
 */
static int pending_read(struct recv_session *s, struct pending *e,
			struct pxfer_hello *h)
{
	struct pxfer_msg *m = &s->msg;
	uint8_t mac[PXFER_MAC_LEN];
	int r = pending_next(e, m);

	if (r == 0)
		return 0;
	if (r < 0 || m->type != PXFER_MSG_HELLO) {
		verbose("dropped a connection from %s: it did not open with a HELLO",
			e->c->peer);
		send_refuse(e->c, EPROTO, "expected a HELLO");
		return -1;
	}
	*h = m->u.hello;
	pxfer_auth_hello_mac(&s->o->secret, e->nonce, h, mac);
	if (!pxfer_auth_equal(mac, h->mac)) {
		if (!s->o->quiet)
			warning("refused a sender from %s: authentication failed (wrong secret)",
				e->c->peer);
		send_refuse(e->c, EACCES, "authentication failed");
		return -1;
	}
	return 1;
}

/* Run a session for an authenticated HELLO; returns its exit status. */
static int serve_session(struct recv_session *s, struct pxfer_conn *c,
			 const struct pxfer_hello *h, const uint8_t *nonce)
{
	int code;

	memset(&s->fail, 0, sizeof(s->fail));
	pxfer_fail_init(&s->fail, -1);
	s->acked = 0;
	atomic_store(&s->stop, 0);
	atomic_store(&s->fin_seen, 0);
	atomic_store(&s->data_eof, 0);
	s->data_eof_at = 0;
	s->files = s->bytes = s->failed = 0;
	s->t = c->ops;
	for (unsigned int i = 0; i < s->nls; i++)
		if (s->ls[i]->ops == c->ops)
			s->l = s->ls[i];
	s->cconn = c;
	/* the rings of the session before were released with it */
	pxfer_pool_reset(&s->pool);
	run_session(s, h, nonce);
	code = pxfer_failed(&s->fail) ? pxfer_fail_code(&s->fail)
	       : s->failed ? PXFER_EXIT_FAIL : PXFER_EXIT_OK;
	session_release(s);
	return code;
}

static int check_dir(const struct pxfer_recv_opts *o, int *fdp)
{
	int fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return error("cannot use '%s' as the receiving directory: %s%s",
			     o->dir, strerror(errno),
			     errno == ENOENT ? " (create it first)" : "");
	if (faccessat(fd, ".", W_OK, AT_EACCESS)) {
		close(fd);
		return error("cannot write into '%s': %s", o->dir,
			     strerror(errno));
	}
	*fdp = fd;
	return 0;
}

static int listen_one(struct recv_session *s, const struct pxfer_transport_ops *t,
		      int quiet_fail)
{
	const struct pxfer_recv_opts *o = s->o;
	struct pxfer_listener *l;
	int ret = t->listen(s->tc.bind, o->port, &l);

	if (!ret) {
		s->ls[s->nls++] = l;
		return 0;
	}
	if (quiet_fail) {
		verbose("not listening for %s: %s", t->name, strerror(-ret));
		return 0;
	}
	if (ret == -EADDRINUSE)
		return error("port %s is in use (another 'pxfer recv'? choose another with --port)",
			     o->port);
	if (ret == -EADDRNOTAVAIL || ret == -ENODEV)
		return error("cannot listen for %s on %s port %s: %s (is an RDMA device up with that address? see 'rdma link')",
			     t->name, s->tc.bind ? s->tc.bind : "any address", o->port,
			     strerror(-ret));
	return error("cannot listen for %s on %s port %s: %s", t->name,
		     s->tc.bind ? s->tc.bind : "any address", o->port, strerror(-ret));
}

/*
 * The transports --transport names (auto: tcp, and rdma too when this
 * host has a device). 0, or the exit status: a --device or --gid-index
 * that cannot be used is a bad command line, as for the sender.
 */
static int listen_all(struct recv_session *s)
{
	const struct pxfer_transport_ops *t[2];
	unsigned int n;
	int code, optional;

	s->tc.name = s->o->transport;
	s->tc.device = s->o->device;
	s->tc.gid_index = s->o->gid_index;
	s->tc.bind = s->o->bind;
	code = pxfer_transport_resolve(&s->tc);
	if (code)
		return code;
	n = pxfer_transport_for_listen(&s->tc, t, &optional);
	for (unsigned int i = 0; i < n; i++)
		if (listen_one(s, t[i], i > 0 && optional))
			return PXFER_EXIT_NET;
	return 0;
}

/*
 * The listening loop: accept, challenge, and start a session for the first
 * authentic HELLO; the others still pending are told the receiver is busy.
 */
static int serve(struct recv_session *s)
{
	struct pending pend[PENDING_MAX];
	struct pollfd p[2 + PENDING_MAX + 1];
	unsigned int npend = 0, i;
	int code = PXFER_EXIT_OK, ret;

	for (;;) {
		double now = pxfer_now(), next = now + 60;
		struct pxfer_hello h;
		unsigned int n = 0;

		for (i = 0; i < s->nls; i++, n++) {
			p[n].fd = s->ls[i]->ops->listener_fd(s->ls[i]);
			p[n].events = POLLIN;
		}
		for (i = 0; i < npend; i++, n++) {
			p[n].fd = pend[i].c->ops->conn_fd(pend[i].c);
			p[n].events = pend[i].c->ops->poll_events(pend[i].c, 0);
			if (pend[i].deadline < next)
				next = pend[i].deadline;
		}
		p[n].fd = s->sigfd;
		p[n].events = POLLIN;
		if (poll(p, n + 1, (int)((next - now) * 1000) + 1) < 0 &&
		    errno != EINTR)
			break;
		if (pxfer_signal_pending()) {
			code = PXFER_EXIT_INTR;
			break;
		}
		for (i = 0; i < s->nls; i++) {
			struct pxfer_conn *c;

			if (!(p[i].revents & POLLIN))
				continue;
			ret = s->ls[i]->ops->accept(s->ls[i], &c);
			if (!ret)
				pending_add(s, pend, &npend, c);
			else if (ret != -EAGAIN && !s->o->quiet)
				warning("could not accept a %s connection: %s",
					s->ls[i]->ops->name, pxfer_worker_setup_error(ret));
		}
		for (i = 0; i < npend;) {
			struct pending *e = &pend[i];
			int r = pending_read(s, e, &h);

			if (r == 0 && pxfer_now() < e->deadline) {
				i++;
				continue;
			}
			if (r <= 0) {
				pending_drop(pend, &npend, i);
				continue;
			}
			{
				struct pxfer_conn *c = e->c;
				uint8_t nonce[PXFER_NONCE_LEN];

				memcpy(nonce, e->nonce, sizeof(nonce));
				pxfer_ctrl_release(&e->ctrl);
				pend[i] = pend[--npend];
				/* one session at a time: the rest must retry */
				while (npend) {
					send_refuse(pend[0].c, EBUSY,
						    "the receiver is busy with another session; try again later");
					pending_drop(pend, &npend, 0);
				}
				code = serve_session(s, c, &h, nonce);
			}
			if (s->o->once || code == PXFER_EXIT_INTR)
				goto out;
		}
	}
out:
	while (npend)
		pending_drop(pend, &npend, 0);
	return code;
}

static void announce(struct recv_session *s)
{
	char where[256] = "";
	size_t n = 0;

	for (unsigned int i = 0; i < s->nls; i++)
		n += snprintf(where + n, sizeof(where) - n, "%s%s (%s)",
			      i ? " and " : "", s->ls[i]->addr,
			      s->ls[i]->ops->name);
	info("pxfer: receiving into '%s' on %s", s->o->dir, where);
}

/*
 * A transport that pins its rings (rdma) touches every page of them before
 * the first byte moves: have --ring-mem faulted in while no sender is
 * there yet, and keep it for every session. Without it, rings are mapped
 * per session as before.
 */
static void pool_init(struct recv_session *s)
{
	const struct pxfer_transport_ops *t = NULL;
	int ret;

	for (unsigned int i = 0; i < s->nls; i++)
		if (s->ls[i]->ops->pins_memory)
			t = s->ls[i]->ops;
	if (!t)
		return;
	ret = pxfer_pool_init(&s->pool, pxfer_pool_size(s->o->ring_mem,
							t->ring_hdr));
	if (ret)
		verbose("ring memory made per session: %s", strerror(-ret));
}

int pxfer_recv(const struct pxfer_recv_opts *o)
{
	struct recv_session *s;
	int code = PXFER_EXIT_OK;

	if (pxfer_auth_init())
		return error("cannot initialise the crypto library"), PXFER_EXIT_LOCAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return PXFER_EXIT_LOCAL;
	s->o = o;
	s->basefd = -1;
	s->rootfd = -1;
	for (unsigned int i = 0; i < DCACHE_N; i++)
		s->dcache[i].fd = -1;
	s->sigfd = pxfer_signals_install();
	/* while this is the only thread (best effort: it only saves time) */
	pxfer_fd_table_reserve(PXFER_FD_RESERVE);
	if (check_dir(o, &s->rootfd)) {
		free(s);
		return PXFER_EXIT_USAGE;
	}
	code = listen_all(s);
	if (code)
		goto out;
	pool_init(s);
	if (!o->quiet)
		announce(s);
	code = serve(s);
out:
	pxfer_pool_release(&s->pool);
	for (unsigned int i = 0; i < s->nls; i++)
		s->ls[i]->ops->listener_close(s->ls[i]);
	close(s->rootfd);
	free(s);
	return code;
}
