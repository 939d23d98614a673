// SPDX-License-Identifier: MIT
/*
 * A node's run down a broadcast chain (docs/broadcast.md): what it sends
 * (struct chain_src, a session source) and the sessions it runs, to the
 * next hop or, when that one is lost, to the one after it.
 */
#include <errno.h>
#include <sodium.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/chain.h"
#include "core/container_of.h"
#include "api/jobsend.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/sys.h"
#include "engine/fail.h"
#include "recv/path.h"
#include "send/sender.h"

/* sessions to one hop that could not start before it is cut out */
#define UNREACHED_MAX	3
/* sessions to one hop for what it held busy (another session of its
 * own writing the same file: the hop before it, lost), at most */
#define PASSES_MAX	8
/* sessions to one hop that it ended itself (idle, stopping), at most */
#define IDLED_MAX	100

/* ---- the source of a node's sessions ------------------------------------ */

static void live_free(struct chain_live *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	pxfer_relay_ent_drop(l->relay, 0);
	free(l->path);
	free(l);
}

static void cut_end(struct chain_src *c)
{
	if (c->cut_fd >= 0)
		close(c->cut_fd);
	c->cut_fd = -1;
	c->cut_gate = 0;
	free(c->cut_src);
	free(c->cut_rel);
	c->cut_src = c->cut_rel = NULL;
}

/* drop what the last ->next handed out (its descriptor went with it) */
static void given_end(struct chain_src *c)
{
	if (c->given) {
		c->given->fd = -1;
		live_free(c->given);
		c->given = NULL;
	}
	free(c->given_src);
	c->given_src = NULL;
}

/* the next range of the file being cut: 1 with @e, 0 when it is done */
static int cut_next(struct chain_src *c, struct pxfer_walk_entry *e)
{
	uint64_t size = (uint64_t)c->cut_st.st_size;
	int fd;

	if (c->cut_fd < 0 || c->cut_next >= size) {
		cut_end(c);
		return 0;
	}
	fd = fcntl(c->cut_fd, F_DUPFD_CLOEXEC, 0);
	memset(e, 0, sizeof(*e));
	e->src = c->cut_src;
	e->rel = c->cut_rel;
	e->st = c->cut_st;
	if (fd < 0) {
		e->kind = PXFER_WALK_ERROR;
		e->err = -errno;
		e->fd = -1;
		cut_end(c);
		return 1;
	}
	e->kind = PXFER_WALK_FILE;
	e->fd = fd;
	e->range_off = c->cut_next;
	e->range_len = size - c->cut_next < 2 * c->cut_len ? size - c->cut_next
							   : c->cut_len;
	c->cut_next += e->range_len;
	return 1;
}

/* a live entry as the session's: 1 with @e, 0 when it cannot be sent
 * live (the walk at the end sends it) */
static int live_entry(struct chain_src *c, struct chain_live *l,
		      struct pxfer_walk_entry *e)
{
	const char *base;
	int dfd, fd;

	memset(e, 0, sizeof(*e));
	e->kind = PXFER_WALK_FILE;
	e->src = l->path;
	e->rel = l->path;
	if (l->range_len) {
		/* the bytes of the range are this node's, checked, on disk;
		 * the partial's size and times change as others arrive */
		e->st.st_mode = S_IFREG | (l->mode & 07777);
		e->st.st_size = (off_t)l->size;
		e->st.st_blocks = (blkcnt_t)((l->size + 511) / 512);
		e->st.st_mtim.tv_sec = l->mtime_sec;
		e->st.st_mtim.tv_nsec = l->mtime_nsec;
		e->fd = l->fd;
		l->fd = -1;
		e->range_off = l->range_off;
		e->range_len = l->range_len;
		e->stable = 1;
		/* or its chunks as they come here, from the ring */
		e->relay = l->relay;
		l->relay = NULL;
		return 1;
	}
	/* a whole file, named here: opened beneath the destination, and
	 * sent only if it is still what arrived */
	dfd = pxfer_path_open_parent(c->basefd, l->path, 0, &base);
	if (dfd < 0)
		return 0;
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return 0;
	if (fstat(fd, &e->st) || !S_ISREG(e->st.st_mode) ||
	    (uint64_t)e->st.st_size != l->size ||
	    e->st.st_mtim.tv_sec != l->mtime_sec ||
	    (uint32_t)e->st.st_mtim.tv_nsec != l->mtime_nsec) {
		close(fd);
		return 0;
	}
	e->fd = fd;
	return 1;
}

static int walk_start(struct chain_src *c)
{
	const char *bad = NULL;
	int ret;

	ret = c->own ? pxfer_walk_init_own(&c->walk, c->roots, c->nroots, &bad)
		     : pxfer_walk_init(&c->walk, c->roots, c->nroots, &bad);
	if (ret)
		return ret;
	c->walk.open_files = 1;
	c->walking = 1;
	return 0;
}

static uint64_t src_count(struct chain_src *c)
{
	uint64_t tag;

	pthread_mutex_lock(&c->lock);
	c->inflight++;
	tag = ++c->seq;
	pthread_mutex_unlock(&c->lock);
	return tag;
}

static int src_next(struct send_source *b, struct pxfer_walk_entry *e)
{
	struct chain_src *c = container_of(b, struct chain_src, b);
	int ret;

	pthread_mutex_lock(&c->lock);
	given_end(c);
	if (c->cut_fd >= 0 && !c->cut_gate && cut_next(c, e)) {
		c->inflight++;
		e->tag = ++c->seq;
		pthread_mutex_unlock(&c->lock);
		return 1;
	}
	while (c->head) {
		struct chain_live *l = c->head;

		c->head = l->next;
		if (!c->head)
			c->tail = NULL;
		c->nlive--;
		if (live_entry(c, l, e)) {
			c->given = l;
			c->inflight++;
			e->tag = ++c->seq;
			pthread_mutex_unlock(&c->lock);
			return 1;
		}
		c->dropped++;
		live_free(l);
	}
	/* the rest of a file in ranges, once its first ended */
	if (c->cut_fd >= 0) {
		pthread_mutex_unlock(&c->lock);
		return -EAGAIN;
	}
	/* the pass at the end once what went live has ended: it would
	 * find its ranges busy in the hop */
	if (c->live && (!c->over || (!c->walking && c->inflight))) {
		pthread_mutex_unlock(&c->lock);
		return -EAGAIN;
	}
	pthread_mutex_unlock(&c->lock);
	if (c->walk_done || !c->nroots)
		return 0;
	if (!c->walking && (ret = walk_start(c)))
		return ret;
	for (;;) {
		ret = pxfer_walk_next(&c->walk, e);
		if (ret <= 0) {
			if (!ret)
				c->walk_done = 1;
			return ret;
		}
		if (e->kind == PXFER_WALK_FILE) {
			c->tree_files++;
			c->tree_bytes += (uint64_t)e->st.st_size;
		}
		/* this node's own copy goes whole: the hop has it already
		 * (one FILE to skip it, not one a range) or resumes it */
		if (e->kind != PXFER_WALK_FILE || c->own ||
		    (uint64_t)e->st.st_size <= 2 * c->range) {
			e->tag = src_count(c);
			return 1;
		}
		/* a large file: its ranges, from a descriptor of its own (a
		 * PATH that is a link is followed, as the walk did: the file
		 * opened must be the one it saw) */
		c->cut_st = e->st;
		c->cut_fd = e->fd >= 0 ? e->fd : open(e->src, O_RDONLY | O_CLOEXEC);
		ret = c->cut_fd < 0 ? -errno : 0;
		if (!ret && e->fd < 0 &&
		    (fstat(c->cut_fd, &c->cut_st) ||
		     c->cut_st.st_dev != e->st.st_dev ||
		     c->cut_st.st_ino != e->st.st_ino)) {
			close(c->cut_fd);
			c->cut_fd = -1;
			ret = -ESTALE;
		}
		if (ret) {
			e->kind = PXFER_WALK_ERROR;
			e->err = ret;
			e->tag = src_count(c);
			return 1;
		}
		c->cut_src = strdup(e->src);
		c->cut_rel = strdup(e->rel);
		c->cut_next = 0;
		/* PXFER_CHAIN_RANGES at most, whole MiB */
		c->cut_len = ((uint64_t)c->cut_st.st_size / PXFER_CHAIN_RANGES +
			      (1 << 20) - 1) >> 20 << 20;
		if (c->cut_len < c->range)
			c->cut_len = c->range;
		if (!c->cut_src || !c->cut_rel) {
			cut_end(c);
			return -ENOMEM;
		}
		if (cut_next(c, e)) {
			e->tag = src_count(c);
			pthread_mutex_lock(&c->lock);
			c->cut_gate = e->tag;
			pthread_mutex_unlock(&c->lock);
			return 1;
		}
	}
}

static void src_ended(struct send_source *b, uint64_t tag,
		      const struct send_ended *how)
{
	struct chain_src *c = container_of(b, struct chain_src, b);

	pthread_mutex_lock(&c->lock);
	if (tag == c->cut_gate)
		c->cut_gate = 0;
	if (how->code && !how->again)
		c->failed++;
	if (how->again)
		c->again++;
	if (c->inflight)
		c->inflight--;
	pthread_mutex_unlock(&c->lock);
}

static void src_attach(struct send_source *b, int wake_fd)
{
	struct chain_src *c = container_of(b, struct chain_src, b);

	pthread_mutex_lock(&c->lock);
	c->wake_fd = wake_fd;
	pthread_mutex_unlock(&c->lock);
}

static const struct send_source_ops src_ops = {
	.next = src_next,
	.ended = src_ended,
};

static const struct send_source_ops live_ops = {
	.next = src_next,
	.ended = src_ended,
	.attach = src_attach,
};

int chain_src_init(struct chain_src *c, const uint8_t id[PXFER_JOB_LEN],
		   int live)
{
	memset(c, 0, sizeof(*c));
	if (pthread_mutex_init(&c->lock, NULL))
		return -ENOMEM;
	c->b.ops = live ? &live_ops : &src_ops;
	memcpy(c->b.job, id, PXFER_JOB_LEN);
	c->live = live;
	c->wake_fd = -1;
	c->basefd = -1;
	c->cut_fd = -1;
	c->range = PXFER_CHAIN_RANGE;
	return 0;
}

/* a new session: the walk begins anew (the hop skips what it has) */
static void src_rewind(struct chain_src *c)
{
	given_end(c);
	cut_end(c);
	if (c->walking)
		pxfer_walk_release(&c->walk);
	c->walking = 0;
	c->walk_done = 0;
	c->failed = 0;
	c->again = 0;
	c->inflight = 0;
	c->tree_files = c->tree_bytes = 0;
}

void chain_src_release(struct chain_src *c)
{
	src_rewind(c);
	while (c->head) {
		struct chain_live *l = c->head;

		c->head = l->next;
		live_free(l);
	}
	if (c->own)
		for (int i = 0; i < c->nroots; i++)
			free(c->roots[i]);
	if (c->own)
		free(c->roots);
	if (c->basefd >= 0)
		close(c->basefd);
	pthread_mutex_destroy(&c->lock);
}

int chain_src_paths(struct chain_src *c, char *const *paths, int n)
{
	c->roots = (char **)paths;
	c->nroots = n;
	return 0;
}

void chain_src_add(struct chain_src *c, struct chain_live *l)
{
	int wake = -1;

	pthread_mutex_lock(&c->lock);
	if (c->over || c->nlive >= PXFER_CHAIN_LIVE_MAX) {
		c->dropped++;
		pthread_mutex_unlock(&c->lock);
		live_free(l);
		return;
	}
	l->next = NULL;
	if (c->tail)
		c->tail->next = l;
	else
		c->head = l;
	c->tail = l;
	c->nlive++;
	wake = c->wake_fd;
	if (wake >= 0)
		pxfer_wake(wake);
	pthread_mutex_unlock(&c->lock);
}

void chain_src_name(struct chain_src *c, const char *path)
{
	const char *slash = strchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : strlen(path);
	char *root;

	/* the coordinator's alone until the session is over */
	for (int i = c->nroots - 1; i >= 0; i--)
		if (!strncmp(c->roots[i], path, len) && !c->roots[i][len])
			return;
	if (c->nroots >= PXFER_CHAIN_ROOTS_MAX) {
		c->dropped++;
		return;
	}
	if (c->nroots == c->roots_cap) {
		int cap = c->roots_cap ? 2 * c->roots_cap : 16;
		char **v = realloc(c->roots, cap * sizeof(*v));

		if (!v)
			return;
		c->roots = v;
		c->roots_cap = cap;
	}
	root = strndup(path, len);
	if (root)
		c->roots[c->nroots++] = root;
	c->own = 1;
}

void chain_src_over(struct chain_src *c, int basefd)
{
	char buf[64];

	pthread_mutex_lock(&c->lock);
	c->over = 1;
	/* the roots become paths of this node's copy */
	snprintf(buf, sizeof(buf), "/proc/self/fd/%d/", c->basefd);
	for (int i = 0; i < c->nroots; i++) {
		size_t n = strlen(buf) + strlen(c->roots[i]) + 1;
		char *p = malloc(n);

		if (!p)
			continue;
		snprintf(p, n, "%s%s", buf, c->roots[i]);
		free(c->roots[i]);
		c->roots[i] = p;
	}
	if (c->wake_fd >= 0)
		pxfer_wake(c->wake_fd);
	pthread_mutex_unlock(&c->lock);
	(void)basefd;
}

/* whether a session has something to send now, or will end at once */
static int src_has_work(struct chain_src *c)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = !c->live || c->over || c->head;
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* ---- the sessions down the chain ---------------------------------------- */

/* wait @secs unless stopped: 0, or -1 when stopped */
static int nap(const struct pxfer_stop *stop, double secs)
{
	struct pollfd p = { .fd = pxfer_stop_fd(stop), .events = POLLIN };

	if (pxfer_stop_raised(stop))
		return -1;
	poll(&p, 1, (int)(secs * 1000));
	return pxfer_stop_raised(stop) ? -1 : 0;
}

static void hop_set(struct chain_run *r, unsigned int i, int state, int code)
{
	r->rep[i].pos = r->hops[i].pos;
	r->rep[i].state = (uint8_t)state;
	r->rep[i].code = (uint8_t)(state == PXFER_HOP_OK ? 0 : code ? code : PXFER_EXIT_FAIL);
}

/* the reports hop @i's session brought of the hops after it */
static void reports_take(struct chain_run *r, unsigned int i,
			 const struct pxfer_chain_report *got, unsigned int n)
{
	for (unsigned int k = 0; k < n; k++)
		for (unsigned int j = i + 1; j < r->nhops; j++)
			if (r->hops[j].pos == got[k].pos)
				r->rep[j] = got[k];
}

/* one hop: its sessions until it has everything or is cut out. 1 when
 * it completed (well or not: its reports came), 0 when cut out, -1 when
 * stopped */
static int hop_run(struct chain_run *r, unsigned int i)
{
	struct pxfer_chain_report got[PXFER_CHAIN_MAX];
	char q[PXFER_QUOTE_MAX];
	int unreached = 0, passes = 0, idled = 0;
	double wait = 0.5;

	for (unsigned int j = i + 1; j < r->nhops; j++) {
		r->hops[j].index = (uint16_t)(j - i - 1);
		r->hops[j].count = (uint16_t)(r->nhops - i - 1);
	}
	r->o.host = r->hops[i].host;
	r->o.port = r->ports[i];
	r->o.dest = r->hops[i].dest_len ? r->hops[i].dest : NULL;
	for (;;) {
		struct send_pass p = {
			.source = &r->src.b,
			.chain = i + 1 < r->nhops ? &r->hops[i + 1] : NULL,
			.nchain = r->nhops - i - 1,
			.reports = got,
			.stall_secs = r->stall_secs,
			.relay = r->relay,
			.pass = passes > 0,
		};
		uint64_t files = r->st.files, bytes = r->st.bytes;
		int code;

		/* a hop's session is made when there is something for it: an
		 * idle one is ended by the hop (its --idle-timeout) */
		while (!src_has_work(&r->src))
			if (nap(r->o.stop, 0.05))
				return -1;
		src_rewind(&r->src);
		code = send_session_run(&r->o, &r->st, &p);
		r->st.sessions++;
		if (pxfer_stop_raised(r->o.stop))
			return -1;
		if (p.welcomed && !p.stalled &&
		    (code == PXFER_EXIT_OK || code == PXFER_EXIT_FAIL)) {
			/* what another session of the hop held: once more */
			p.again += (unsigned int)r->src.again;
			if (p.again && ++passes < PASSES_MAX) {
				if (nap(r->o.stop, wait))
					return -1;
				wait = wait * 2 < 8 ? wait * 2 : 8;
				continue;
			}
			hop_set(r, i, code || p.again ? PXFER_HOP_FAILED : PXFER_HOP_OK,
				code ? code : PXFER_EXIT_FAIL);
			r->rep[i].files = r->st.files - files;
			r->rep[i].bytes = r->st.bytes - bytes;
			reports_take(r, i, got, p.nreports);
			return 1;
		}
		/* the hop ended it itself, as idle (its files came slowly
		 * from here) or stopping: another session, as for a hop that
		 * could not be reached */
		if (p.welcomed && p.peer_ended && code == PXFER_EXIT_NET &&
		    !p.stalled && ++idled < IDLED_MAX)
			continue;
		if (p.welcomed) {
			/* it died, stalled, or refused what it got */
			hop_set(r, i, code == PXFER_EXIT_NET ? PXFER_HOP_LOST
							      : PXFER_HOP_FAILED, code);
			pxfer_warning("hop %u of the chain, %s:%s, is cut out (%s); the next gets the files from here",
				      (unsigned int)r->hops[i].pos,
				      pxfer_escape(q, sizeof(q), r->hops[i].host, r->hops[i].host_len),
				      r->ports[i], p.stalled ? "stalled" :
				      code == PXFER_EXIT_NET ? "lost" : "failed");
			return 0;
		}
		if (++unreached >= UNREACHED_MAX || code == PXFER_EXIT_AUTH ||
		    code == PXFER_EXIT_USAGE) {
			hop_set(r, i, PXFER_HOP_UNREACHED, code);
			pxfer_warning("hop %u of the chain, %s:%s, cannot be reached; the next gets the files from here",
				      (unsigned int)r->hops[i].pos,
				      pxfer_escape(q, sizeof(q), r->hops[i].host, r->hops[i].host_len),
				      r->ports[i]);
			return 0;
		}
		if (nap(r->o.stop, code == PXFER_EXIT_BUSY ? 2.0 : 0.5 * unreached))
			return -1;
	}
}

void chain_run_go(struct chain_run *r)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < r->nhops; i++)
		hop_set(r, i, PXFER_HOP_UNREACHED, PXFER_EXIT_NET);
	for (i = 0; i < r->nhops; i++) {
		ret = hop_run(r, i);
		if (ret)
			break;
	}
	if (ret < 0) {
		r->code = PXFER_EXIT_INTR;
		return;
	}
	r->code = PXFER_EXIT_OK;
	for (i = 0; i < r->nhops; i++)
		if (r->rep[i].state != PXFER_HOP_OK)
			r->code = PXFER_EXIT_FAIL;
}

/* ---- the source ----------------------------------------------------------- */

int pxfer_chain_send(const struct pxfer_send_opts *o,
		     const struct pxfer_target *to, unsigned int n,
		     int stall_secs, struct pxfer_chain_report *rep,
		     struct pxfer_stats *st, uint64_t *files, uint64_t *bytes)
{
	struct chain_run *r;
	uint8_t id[PXFER_JOB_LEN];
	int code;

	if (!n || n > PXFER_CHAIN_MAX)
		return PXFER_EXIT_USAGE;
	r = calloc(1, sizeof(*r));
	if (!r)
		return PXFER_EXIT_LOCAL;
	do
		randombytes_buf(id, sizeof(id));
	while (!memcmp(id, (uint8_t[PXFER_JOB_LEN]){ 0 }, PXFER_JOB_LEN));
	r->o = *o;
	r->stall_secs = stall_secs;
	r->nhops = n;
	for (unsigned int i = 0; i < n; i++) {
		struct pxfer_chain_hop *h = &r->hops[i];
		const char *port = to[i].port ? to[i].port : o->port;
		long v = strtol(port, NULL, 10);

		memcpy(h->chain, id, PXFER_JOB_LEN);
		h->pos = (uint16_t)(i + 1);
		h->index = 0;	/* set per session, by pxfer_chain_hops */
		h->port = (uint16_t)(v > 0 && v < 65536 ? v : 0);
		snprintf(r->ports[i], sizeof(r->ports[i]), "%s", port);
		h->host_len = (uint16_t)snprintf(h->host, sizeof(h->host), "%s", to[i].host);
		if (to[i].dest)
			h->dest_len = (uint16_t)snprintf(h->dest, sizeof(h->dest), "%s",
							 to[i].dest);
	}
	if (chain_src_init(&r->src, id, 0)) {
		free(r);
		return PXFER_EXIT_LOCAL;
	}
	chain_src_paths(&r->src, o->paths, o->npaths);
	chain_run_go(r);
	code = r->code;
	memcpy(rep, r->rep, n * sizeof(*rep));
	*st = r->st;
	*files = r->src.tree_files;
	*bytes = r->src.tree_bytes;
	chain_src_release(&r->src);
	free(r);
	return code;
}
