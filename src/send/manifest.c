// SPDX-License-Identifier: MIT
/*
 * The sender's manifest: the tree walk turned into FILE messages, a batch
 * per turn of the coordinator, sent as they are made (the receiver creates
 * files while the walk goes on), and the files in flight until the
 * receiver says each is done. At most max_files are in flight; their ids
 * are reused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/escape.h"
#include "core/limits.h"
#include "core/log.h"
#include "send/send.h"

#define CTRL_BACKLOG (1u << 20)	/* stop walking while this much is unsent */
#define FEED_BATCH 256		/* manifest entries per turn of the coordinator */
#define FEED_FLUSH 32		/* ... sent this many at a time */

int send_manifest_init(struct manifest *m, unsigned int max_files)
{
	unsigned int n = max_files;
	unsigned long nofile = pxfer_raise_nofile();

	/* each file in flight holds a descriptor; keep room for the rest */
	if (nofile > 64 && n > nofile - 64)
		n = nofile - 64;
	m->again_tail = &m->again;
	return pxfer_fileids_init(&m->ids, max_files, n);
}

static void again_free(struct again_file *r)
{
	free(r->src);
	free(r->rel);
	free(r);
}

static void entry_free(struct sentry *e)
{
	if (e->f.fd >= 0)
		close(e->f.fd);
	free(e->f.src);
	free(e->rel);
	free(e->held);
	if (e->check) {
		free(e->check->pieces);
		free(e->check);
	}
	/* its relay entry is done with: all of it went, or what did not
	 * goes from disk */
	pxfer_relay_ent_drop(e->relay, e->f.relay && e->f.ended && !e->f.err &&
				       e->f.sent == e->f.range_len);
	free(e->relay_ok);
	free(e);
}

void send_manifest_release(struct manifest *m, struct send_source *src)
{
	for (unsigned int i = 0; i < m->ids.max; i++) {
		struct sentry *e = send_manifest_get(m, i);

		/* still in flight: the source gives it to another session */
		if (e && e->tagged)
			src->ops->ended(src, e->tag, &(struct send_ended){
				.again = 1, .bytes = e->f.sent });
		send_manifest_done(m, i);
	}
	pxfer_fileids_release(&m->ids);
	while (m->again) {
		struct again_file *r = m->again;

		m->again = r->next;
		again_free(r);
	}
	m->again_tail = &m->again;
}

struct sentry *send_manifest_get(struct manifest *m, uint64_t id)
{
	return pxfer_fileids_get(&m->ids, id);
}

void send_manifest_done(struct manifest *m, uint64_t id)
{
	struct sentry *e = pxfer_fileids_done(&m->ids, id);

	if (e)
		entry_free(e);
}

int send_manifest_resend(struct manifest *m, uint64_t id)
{
	struct sentry *e = send_manifest_get(m, id);
	struct again_file *r = calloc(1, sizeof(*r));

	if (!r || !e || !e->rel || !(r->src = strdup(e->f.src)) ||
	    !(r->rel = strdup(e->rel))) {
		if (r)
			again_free(r);
		return -ENOMEM;
	}
	*m->again_tail = r;
	m->again_tail = &r->next;
	return 0;
}

int send_manifest_done_all(struct manifest *m)
{
	return m->walk_done && !m->again;
}

static int fill_file_msg(struct pxfer_file *fm, const struct pxfer_walk_entry *e,
			 const struct stat *st, uint8_t type)
{
	size_t len = strlen(e->rel);

	if (len > PXFER_PATH_MAX)
		return -ENAMETOOLONG;
	fm->type = type;
	fm->mode = st->st_mode & 07777;
	fm->size = type == PXFER_FT_REG ? (uint64_t)st->st_size : 0;
	fm->mtime_sec = st->st_mtim.tv_sec;
	fm->mtime_nsec = st->st_mtim.tv_nsec;
	fm->path_len = len;
	memcpy(fm->path, e->rel, len + 1);
	fm->target_len = 0;
	fm->target[0] = 0;
	if (type == PXFER_FT_SYMLINK) {
		fm->target_len = strlen(e->target);
		memcpy(fm->target, e->target, fm->target_len + 1);
	}
	return 0;
}

/*
 * Open a regular file for sending; the size comes from the open file. A
 * PATH given on the command line may be a link (it is followed, like
 * cp -H); below it the walk saw a regular file, so whatever is opened must
 * be that same file, or it changed under us.
 */
static int open_source(const struct pxfer_walk_entry *e, int *fdp,
		       struct stat *st)
{
	int fd = e->fd;

	if (fd >= 0)
		goto opened;	/* the walk opened it, and st is its fstat */
	fd = open(e->src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	if (st->st_dev != e->st.st_dev || st->st_ino != e->st.st_ino) {
		close(fd);
		return -ESTALE;
	}
opened:
	/* larger read-ahead; a small file is read in one go anyway */
	if (st->st_size > (off_t)PXFER_AUTO_CHUNK_MIN)
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	*fdp = fd;
	return 0;
}

/* what to send for walk entry @e: 1 with *type (and *fd, *st for a file),
 * 0 when it is not sent (said why, and counted) */
static int entry_kind(struct send_session *s, const struct pxfer_walk_entry *e,
		      uint8_t *type, int *fd, struct stat *st)
{
	char q[PXFER_QUOTE_MAX];
	int ret;

	switch (e->kind) {
	case PXFER_WALK_ERROR:
		pxfer_error("cannot read %s: %s", pxfer_quote_str(q, sizeof(q), e->src),
		      strerror(-e->err));
		s->st->files_failed++;
		return 0;
	case PXFER_WALK_SKIP:
		pxfer_warning("skipping %s: not a regular file, directory or symlink",
			pxfer_quote_str(q, sizeof(q), e->src));
		s->st->files_skipped++;
		return 0;
	case PXFER_WALK_FILE:
		if (e->relay) {
			/* its bytes come from the relay: nothing to open */
			*type = PXFER_FT_REG;
			return 1;
		}
		ret = open_source(e, fd, st);
		if (ret) {
			pxfer_error("cannot read %s: %s",
			      pxfer_quote_str(q, sizeof(q), e->src),
			      ret == -ESTALE ? "it changed while being read"
					     : strerror(-ret));
			s->st->files_failed++;
			return 0;
		}
		if (!S_ISREG(st->st_mode)) {
			close(*fd);
			*fd = -1;
			pxfer_warning("skipping %s: it changed while being read",
				pxfer_quote_str(q, sizeof(q), e->src));
			s->st->files_skipped++;
			return 0;
		}
		*type = PXFER_FT_REG;
		return 1;
	case PXFER_WALK_DIR:
		*type = PXFER_FT_DIR;
		return 1;
	case PXFER_WALK_SYMLINK:
		*type = PXFER_FT_SYMLINK;
		return 1;
	default:
		return 0;
	}
}

/*
 * What the receiver may keep of regular file @se (FILE @fm): a partial,
 * and a file that is the same by size and modification time, or with
 * --checksum by content (hashed on the check threads once the FILE is
 * out, its digest in the FILE_SUM that follows: se->sum_due); nothing
 * with --overwrite.
 */
static void file_flags(struct send_session *s, struct sentry *se,
		       struct pxfer_file *fm)
{
	struct pxfer_digest d;

	if (s->o->overwrite)
		return;
	fm->flags = PXFER_FILE_RESUME;
	/* the receiver's disk is taken at its journal's word too */
	if (s->o->resume_trust)
		fm->flags |= PXFER_FILE_TRUST;
	if (!s->o->checksum) {
		fm->flags |= PXFER_FILE_SKIP;
		return;
	}
	fm->flags |= PXFER_FILE_CHECKSUM;
	if (se->f.size) {
		fm->flags |= PXFER_FILE_SUM_FOLLOWS;
		se->sum_due = 1;
		return;
	}
	/* nothing to read: the digest of nothing */
	if (!pxfer_digest_file(-1, 0, 0, &d))
		pxfer_digest_wire(fm->digest, &d);
}

/*
 * Hash file @e (its FILE sent with PXFER_FILE_SUM_FOLLOWS) on the check
 * threads; the coordinator sends its FILE_SUM when that is done. 0, or -1
 * after failing the session.
 */
static int sum_start(struct send_session *s, struct sentry *e)
{
	struct pxfer_check_job *j = calloc(1, sizeof(*j));
	int ret;

	if (!j || !(j->pieces = calloc(1, sizeof(*j->pieces)))) {
		free(j);
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	}
	j->pieces[0].len = e->f.size;
	j->n = 1;
	j->whole = 1;
	j->fd = e->f.fd;
	j->id = e->f.id;
	e->check = j;
	ret = pxfer_check_submit(&s->check, j);
	if (ret)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
				  "cannot start the threads that check files: %s",
				  strerror(-ret));
	return 0;
}

/*
 * A source's range of regular file @se (FILE @fm): announced as a range
 * of the job, resumed (and skipped when the file there is the same by
 * size and time), never compared by content. -ESTALE when the range is
 * not inside the file.
 */
static int range_flags(struct send_session *s, struct sentry *se,
		       const struct pxfer_walk_entry *e, struct pxfer_file *fm)
{
	_Static_assert(PXFER_JOB_ID_LEN == PXFER_JOB_LEN, "job id lengths differ");

	if (!s->source || e->range_off > se->f.size ||
	    e->range_len > se->f.size - e->range_off)
		return -ESTALE;
	fm->flags = PXFER_FILE_RESUME | PXFER_FILE_RANGE;
	if (!s->o->overwrite)
		fm->flags |= PXFER_FILE_SKIP;
	if (s->o->resume_trust)
		fm->flags |= PXFER_FILE_TRUST;
	fm->range_off = e->range_off;
	fm->range_len = e->range_len;
	memcpy(fm->job, s->source->job, PXFER_JOB_LEN);
	se->f.range_off = e->range_off;
	se->f.range_len = e->range_len;
	return 0;
}

static int feed_entry(struct send_session *s, const struct pxfer_walk_entry *e)
{
	struct manifest *man = &s->man;
	struct pxfer_msg *m = &s->b.msg;
	struct stat st = e->st;
	char q[PXFER_QUOTE_MAX];
	struct sentry *se;
	uint32_t id;
	uint8_t type;
	int fd = -1, ret;

	/* a range forwarded from the ring: announced by this session, or
	 * not the relay's any more (it goes from disk once complete) */
	if (e->relay && (!s->relay ||
			 pxfer_relay_ent_bind(e->relay, s, s->b.ctrl.wake_fd))) {
		pxfer_relay_ent_drop(e->relay, 0);
		s->source->ops->ended(s->source, e->tag, &(struct send_ended){ 0 });
		return 0;
	}
	if (!entry_kind(s, e, &type, &fd, &st)) {
		if (s->source)	/* a skipped entry is done with */
			s->source->ops->ended(s->source, e->tag,
				&(struct send_ended){
					.code = e->kind == PXFER_WALK_SKIP ? 0 : EIO });
		return 0;
	}
	se = calloc(1, sizeof(*se));
	if (!se || !(se->f.src = strdup(e->src))) {
		free(se);
		if (fd >= 0)
			close(fd);
		pxfer_relay_ent_drop(e->relay, 0);
		return -ENOMEM;
	}
	/* dropped with the entry from now on */
	se->relay = e->relay;
	se->f.relay = !!e->relay;
	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_FILE;
	ret = fill_file_msg(&m->u.file, e, &st, type);
	if (ret) {
		pxfer_error("cannot send %s: %s", pxfer_quote_str(q, sizeof(q), e->src),
		      strerror(-ret));
		s->st->files_failed++;
		if (s->source)
			s->source->ops->ended(s->source, e->tag,
					      &(struct send_ended){ .code = -ret });
		if (fd >= 0)
			close(fd);
		pxfer_relay_ent_drop(se->relay, 0);
		free(se->f.src);
		free(se);
		return 0;
	}
	se->type = type;
	se->tag = e->tag;
	se->tagged = !!s->source;
	se->resent = man->resending;
	se->f.fd = fd;
	se->f.size = m->u.file.size;
	se->f.st = st;
	se->f.stable = e->stable;
	if (type == PXFER_FT_REG && e->range_len)
		ret = range_flags(s, se, e, &m->u.file);
	else if (type == PXFER_FT_REG)
		file_flags(s, se, &m->u.file);
	if (ret) {
		/* the source's range is not of the file there now */
		pxfer_error("cannot send bytes %llu to %llu of %s: it has %llu",
			    (unsigned long long)e->range_off,
			    (unsigned long long)(e->range_off + e->range_len),
			    pxfer_quote_str(q, sizeof(q), e->src),
			    (unsigned long long)se->f.size);
		s->st->files_failed++;
		s->source->ops->ended(s->source, e->tag, &(struct send_ended){
			.code = PXFER_CODE_CHANGED });
		close(fd);
		pxfer_relay_ent_drop(se->relay, 0);
		free(se->f.src);
		free(se);
		return 0;
	}
	if (type == PXFER_FT_REG && !(se->rel = strdup(e->rel))) {
		close(fd);
		pxfer_relay_ent_drop(se->relay, 0);
		free(se->f.src);
		free(se);
		return -ENOMEM;
	}
	/*
	 * A file whose blocks cover its size has no holes: the scheduler
	 * needs no SEEK_DATA / SEEK_HOLE for it (two system calls a file,
	 * made under its lock). Blocks allocated beyond the end could hide
	 * a hole; it is then sent as zeros, which costs space, not data.
	 */
	if (type == PXFER_FT_REG && (uint64_t)st.st_blocks * 512 >= se->f.size)
		se->f.noholes = 1;
	/*
	 * An empty file has nothing to read: it is sent as it was when it
	 * was opened, and closed now, saving the check at its end (a system
	 * call a file, which counts in a tree of many empty ones).
	 */
	if (type == PXFER_FT_REG && !se->f.size) {
		close(fd);
		se->f.fd = -1;
	}
	/* send_manifest_can_feed saw a free id */
	pxfer_fileids_alloc(&man->ids, se, &id);
	se->f.id = id;
	m->u.file.id = id;
	if (type == PXFER_FT_REG) {
		man->bytes_walked += se->f.size;
		man->files_walked++;
	}
	ret = pxfer_ctrl_queue(&s->b.ctrl, m);
	if (!ret && se->sum_due && sum_start(s, se))
		return -ECANCELED;	/* the session failed */
	return ret;
}

int send_manifest_can_feed(struct send_session *s)
{
	return !send_manifest_done_all(&s->man) && !s->man.held &&
	       pxfer_fileids_free(&s->man.ids) &&
	       pxfer_ctrl_pending(&s->b.ctrl) < CTRL_BACKLOG;
}

/*
 * The next file to send again, as a walk entry @e of the file as it is
 * now (lstat: it may have been replaced). 1, or 0 when none is left.
 */
static int again_next(struct manifest *m, struct pxfer_walk_entry *e,
		       struct again_file **rp)
{
	struct again_file *r = m->again;

	if (!r)
		return 0;
	m->again = r->next;
	if (!m->again)
		m->again_tail = &m->again;
	memset(e, 0, sizeof(*e));
	e->src = r->src;
	e->rel = r->rel;
	e->fd = -1;
	if (stat(r->src, &e->st)) {
		e->kind = PXFER_WALK_ERROR;
		e->err = -errno;
	} else {
		e->kind = S_ISREG(e->st.st_mode) ? PXFER_WALK_FILE : PXFER_WALK_SKIP;
	}
	*rp = r;
	return 1;
}

/*
 * Walk on and queue manifest entries, a batch per turn of the coordinator,
 * sent as they are made: the receiver creates files while the walk goes
 * on, and FILE_OK replies (which let data flow) are read between batches.
 */
int send_manifest_feed(struct send_session *s)
{
	struct pxfer_walk_entry e;
	char q[PXFER_QUOTE_MAX];
	unsigned int n = 0;
	int ret;

	while (send_manifest_can_feed(s) && n < FEED_BATCH) {
		struct again_file *r = NULL;

		if (s->man.walk_done) {
			again_next(&s->man, &e, &r);
			ret = 1;
		} else if (s->source) {
			ret = s->source->ops->next(s->source, &e);
			if (ret == -EAGAIN) {
				s->man.held = 1;	/* until an entry ends */
				break;
			}
		} else {
			ret = pxfer_walk_next(&s->walk, &e);
		}
		if (ret < 0)
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
					  s->source ? "cannot get the job's next unit: %s"
						    : "cannot walk the source tree: %s",
					  strerror(-ret));
		if (ret == 0) {
			s->man.walk_done = 1;
			continue;	/* then what is to be sent again */
		}
		s->man.resending = !!r;
		ret = feed_entry(s, &e);
		s->man.resending = 0;
		if (ret)
			pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "cannot queue %s: %s",
				   pxfer_quote_str(q, sizeof(q), e.src),
				   strerror(-ret));
		if (r)
			again_free(r);	/* e's paths were its */
		if (ret)
			return -1;
		if (++n % FEED_FLUSH == 0)
			pxfer_ctrl_flush(&s->b.ctrl);	/* errors show in the wait */
	}
	return 0;
}
