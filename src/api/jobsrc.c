// SPDX-License-Identifier: MIT
/*
 * A rank's source of entries for one receiver's sessions (send/source.h):
 * the units it pulled from rank 0, handed to the session one entry at a
 * time, and each unit's result reported once every entry of it ended.
 * A unit the session could not finish (it broke, the receiver was busy
 * with a file, a file changed) goes back to rank 0 to be given out again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "api/jobsrc.h"
#include "core/escape.h"
#include "core/log.h"

static struct jsrc_unit *unit_find(struct jsrc *js, uint64_t seq)
{
	for (struct jsrc_unit *u = js->units; u; u = u->next)
		if (u->seq == seq)
			return u;
	return NULL;
}

static unsigned int units_held(const struct jsrc *js)
{
	unsigned int n = 0;

	for (const struct jsrc_unit *u = js->units; u; u = u->next)
		n++;
	return n;
}

static void unit_unlink(struct jsrc *js, struct jsrc_unit *u)
{
	struct jsrc_unit **pp = &js->units;

	while (*pp && *pp != u)
		pp = &(*pp)->next;
	if (*pp)
		*pp = u->next;
	if (js->cur == u)
		js->cur = NULL;
	pxfer_unit_release(&u->u);
	free(u);
}

/* unit @u is over for this rank: rank 0 hears how */
static int unit_report(struct jsrc *js, struct jsrc_unit *u)
{
	int ret;

	u->r.id = u->u.id;
	if (u->r.again)	/* only what was sent counts, the rest again */
		u->r.status = 0;
	js->bytes_sent += u->r.bytes_sent;
	ret = pxfer_work_report(js->c, &u->r);
	if (ret && !js->err)
		js->err = ret;
	unit_unlink(js, u);
	return ret;
}

int pxfer_jsrc_add(struct jsrc *js, struct pxfer_unit *pu)
{
	struct jsrc_unit *u = calloc(1, sizeof(*u));
	struct jsrc_unit **pp = &js->units;

	if (!u)
		return -ENOMEM;
	u->u = *pu;
	u->seq = ++js->seq;
	while (*pp)
		pp = &(*pp)->next;
	*pp = u;
	if (!u->u.n) {	/* nothing in it: over already */
		unit_report(js, u);
		return 0;
	}
	if (!js->cur)
		js->cur = u;
	return 0;
}

int pxfer_jsrc_allowed(char *const *roots, int nroots, const char *src)
{
	for (int i = 0; i < nroots; i++) {
		const char *root = roots[i], *rest;
		size_t n = strlen(root);

		if (strncmp(src, root, n))
			continue;
		rest = src + n;
		if (*rest && *rest != '/' && (!n || root[n - 1] != '/'))
			continue;
		/* no ".." component below the PATH */
		for (const char *p = rest; *p; ) {
			size_t k;

			p += strspn(p, "/");
			k = strcspn(p, "/");
			if (k == 2 && p[0] == '.' && p[1] == '.')
				return 0;
			p += k;
		}
		return 1;
	}
	return 0;
}

/*
 * Entry @ue of a unit as a walk entry @e: looked at again here (the
 * source is shared; rank 0 saw it a moment ago), as the walk would see
 * it. 0, or a positive errno: it cannot be sent (EPERM: it is not below
 * the rank's PATHs; ESTALE: a range whose file is no longer the one cut).
 */
static int entry_fill(struct jsrc *js, const struct pxfer_unit_entry *ue,
		      struct pxfer_walk_entry *e)
{
	ssize_t n;

	memset(e, 0, sizeof(*e));
	e->src = ue->src;
	e->rel = ue->rel;
	e->fd = -1;
	e->kind = ue->kind;
	if (!pxfer_jsrc_allowed(js->roots, js->nroots, ue->src))
		return EPERM;
	if (lstat(ue->src, &e->st) ||
	    /* a PATH given as a link is followed, like the walk's roots */
	    (S_ISLNK(e->st.st_mode) && ue->kind != PXFER_WALK_SYMLINK &&
	     stat(ue->src, &e->st))) {
		e->kind = PXFER_WALK_ERROR;
		e->err = -errno;
		return 0;
	}
	switch (ue->kind) {
	case PXFER_WALK_FILE:
		if (!S_ISREG(e->st.st_mode))
			e->kind = PXFER_WALK_SKIP;
		if (!ue->len)
			break;
		if ((uint64_t)e->st.st_size != ue->size ||
		    e->st.st_mtim.tv_sec != ue->mtime_sec ||
		    (uint32_t)e->st.st_mtim.tv_nsec != ue->mtime_nsec)
			return ESTALE;
		e->range_off = ue->off;
		e->range_len = ue->len;
		break;
	case PXFER_WALK_DIR:
		if (!S_ISDIR(e->st.st_mode))
			e->kind = PXFER_WALK_SKIP;
		break;
	case PXFER_WALK_SYMLINK:
		n = S_ISLNK(e->st.st_mode) ?
		    readlink(ue->src, js->target, sizeof(js->target) - 1) : -1;
		if (n <= 0) {
			e->kind = PXFER_WALK_ERROR;
			e->err = n < 0 ? -errno : -EINVAL;
			return 0;
		}
		memcpy(e->target, js->target, n);
		e->target[n] = 0;
		break;
	default:
		e->kind = PXFER_WALK_SKIP;
	}
	return 0;
}

static void count_end(struct jsrc_unit *u, const struct pxfer_unit_entry *ue,
		      const struct send_ended *how);

static int jsrc_next(struct send_source *src, struct pxfer_walk_entry *e)
{
	struct jsrc *js = container_of(src, struct jsrc, b);
	char q[PXFER_QUOTE_MAX];
	int ret;

	for (;;) {
		struct jsrc_unit *u = js->cur;

		if (u && u->handed < u->u.n) {
			const struct pxfer_unit_entry *ue = &u->u.e[u->handed];
			uint64_t tag = u->seq << JSRC_TAG_BITS | u->handed;
			int bad = entry_fill(js, ue, e);

			u->handed++;
			if (!bad) {
				e->tag = tag;
				return 1;
			}
			if (bad == EPERM)
				pxfer_error("rank 0 handed out %s, which is not below this rank's PATHs; not sent (was every rank given the same command?)",
					    pxfer_quote_str(q, sizeof(q), ue->src));
			else
				pxfer_error("cannot send %s: it changed since the job cut it into ranges; run the same command again",
					    pxfer_quote_str(q, sizeof(q), ue->src));
			count_end(u, ue, &(struct send_ended){ .code = bad });
			if (u->ended == u->u.n)
				unit_report(js, u);
			continue;
		}
		/* the next unit already pulled, or a new one */
		js->cur = NULL;
		for (struct jsrc_unit *v = js->units; v; v = v->next)
			if (v->handed < v->u.n) {
				js->cur = v;
				break;
			}
		if (js->cur)
			continue;
		if (js->nomore)
			return 0;
		if (units_held(js) >= JSRC_AHEAD)
			return -EAGAIN;	/* until one of them is over */
		{
			struct pxfer_unit pu;

			ret = pxfer_work_pull(js->c, js->recv, &pu);
			if (ret == -ENODATA) {
				js->nomore = 1;
				return 0;
			}
			/* none now: the session waits while it sends what it
			 * has (more may come once one of them is done), and
			 * ends when it has nothing */
			if (ret == 0)
				return js->units ? -EAGAIN : 0;
			if (ret < 0) {
				js->err = ret;
				return ret;
			}
			ret = pxfer_jsrc_add(js, &pu);
			if (ret) {
				pxfer_unit_release(&pu);
				return ret;
			}
		}
	}
}

static void count_end(struct jsrc_unit *u, const struct pxfer_unit_entry *ue,
		      const struct send_ended *how)
{
	struct pxfer_unit_result *r = &u->r;

	u->ended++;
	r->bytes_sent += how->bytes;
	if (how->again) {
		r->again = 1;
		return;
	}
	if (how->code) {
		r->files_failed++;
		if (!r->status)
			r->status = how->code == ENOSPC || how->code == EDQUOT ?
				    PXFER_EXIT_LOCAL : PXFER_EXIT_FAIL;
		return;
	}
	switch (ue->kind) {
	case PXFER_WALK_FILE:
		/* a range counts as its file (rank 0 counts the file once,
		 * the same when all its ranges were) */
		if (how->same) {
			r->files_same++;
			r->bytes_same += ue->len ? ue->len : ue->size;
		} else {
			r->files++;
			r->bytes += ue->len ? ue->len : ue->size;
		}
		break;
	case PXFER_WALK_DIR:
		r->dirs++;
		break;
	case PXFER_WALK_SYMLINK:
		r->links++;
		break;
	default:
		break;
	}
}

static void jsrc_ended(struct send_source *src, uint64_t tag,
		       const struct send_ended *how)
{
	struct jsrc *js = container_of(src, struct jsrc, b);
	struct jsrc_unit *u = unit_find(js, tag >> JSRC_TAG_BITS);
	uint64_t i = tag & ((1ull << JSRC_TAG_BITS) - 1);

	if (!u || i >= u->u.n)
		return;	/* not one of ours: cannot happen */
	count_end(u, &u->u.e[i], how);
	if (u->ended == u->u.n)
		unit_report(js, u);
}

static const struct send_source_ops jsrc_ops = {
	.next = jsrc_next,
	.ended = jsrc_ended,
};

void pxfer_jsrc_init(struct jsrc *js, struct pxfer_work_client *c,
		     uint32_t recv, const uint8_t job[PXFER_JOB_ID_LEN],
		     char *const *roots, int nroots)
{
	memset(js, 0, sizeof(*js));
	js->roots = roots;
	js->nroots = nroots;
	js->b.ops = &jsrc_ops;
	memcpy(js->b.job, job, PXFER_JOB_ID_LEN);
	js->c = c;
	js->recv = recv;
}

int pxfer_jsrc_session_end(struct jsrc *js, int code)
{
	int ret = 0;

	while (js->units) {
		struct jsrc_unit *u = js->units;

		/* what the session did not hand out or finish goes again
		 * when the network or a busy receiver ended it; otherwise it
		 * failed with it (integrity, authentication, a resource of
		 * this rank's), and the job says so rather than waiting */
		if (code != PXFER_EXIT_OK && code != PXFER_EXIT_NET &&
		    code != PXFER_EXIT_BUSY && code != PXFER_EXIT_INTR) {
			u->r.status = code;
			u->r.files_failed += u->u.n - u->ended;
		} else {
			u->r.again = 1;
		}
		u->ended = u->u.n;
		if (unit_report(js, u))
			ret = -1;
	}
	js->cur = NULL;
	return ret;
}
