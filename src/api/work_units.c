// SPDX-License-Identifier: MIT
/*
 * Cutting the shared walk into units, lazily: the service asks for more
 * only when a receiver's queue is empty.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/work_units.h"
#include "api/work_wire.h"
#include "core/escape.h"
#include "core/log.h"

#define MiB	(1024 * 1024ull)
/* a unit's entries must fit one message, with room to spare */
#define UNIT_WIRE_MAX	(PXFER_WORK_MSG_MAX - 1024)

int pxfer_work_cut_init(struct pxfer_work_cut *c, char *const *roots,
			int nroots, uint64_t unit_bytes, uint32_t unit_files,
			uint64_t range_bytes)
{
	char q[PXFER_QUOTE_MAX];
	const char *bad = NULL;
	int ret;

	memset(c, 0, sizeof(*c));
	c->unit_bytes = unit_bytes ? unit_bytes : 64 * MiB;
	c->unit_files = unit_files ? unit_files : 1024;
	if (c->unit_files > PXFER_WORK_UNIT_FILES_MAX)
		c->unit_files = PXFER_WORK_UNIT_FILES_MAX;
	c->range_bytes = range_bytes ? range_bytes : 64 * MiB;
	c->next_id = 1;
	ret = pxfer_walk_init(&c->walk, roots, nroots, &bad);
	if (ret == -EINVAL && bad)
		pxfer_error("cannot send %s: it is not a regular file or a directory (fifos, sockets and devices are not sent)",
			    pxfer_quote_str(q, sizeof(q), bad));
	else if (ret == -EEXIST)
		pxfer_error("two sources are named %s; they would overwrite each other",
			    pxfer_quote_str(q, sizeof(q), bad ? bad : "?"));
	else if (ret)
		pxfer_error("cannot read %s: %s",
			    pxfer_quote_str(q, sizeof(q), bad ? bad : "?"),
			    strerror(-ret));
	return ret;
}

static void entry_free(struct pxfer_unit_entry *e)
{
	free(e->src);
	free(e->rel);
	free(e->target);
}

void pxfer_work_cut_release(struct pxfer_work_cut *c)
{
	pxfer_walk_release(&c->walk);
	pxfer_unit_release(&c->open);
	while (c->nheld) {
		pxfer_unit_release(&c->held[c->held_first]);
		c->held_first = (c->held_first + 1) % PXFER_WORK_HELD_MAX;
		c->nheld--;
	}
	for (size_t i = 0; i < c->ndirs; i++)
		entry_free(&c->dirs[i]);
	free(c->dirs);
	c->dirs = NULL;
	c->ndirs = 0;
}

/* @x as the walk saw it; 0 or -ENOMEM */
static int entry_fill(struct pxfer_unit_entry *x,
		      const struct pxfer_walk_entry *e)
{
	memset(x, 0, sizeof(*x));
	x->kind = (uint8_t)e->kind;
	x->mode = e->st.st_mode & 07777;
	x->size = e->kind == PXFER_WALK_FILE ? (uint64_t)e->st.st_size : 0;
	x->mtime_sec = e->st.st_mtim.tv_sec;
	x->mtime_nsec = (uint32_t)e->st.st_mtim.tv_nsec;
	x->src = strdup(e->src);
	x->rel = strdup(e->rel);
	x->target = strdup(e->kind == PXFER_WALK_SYMLINK ? e->target : "");
	if (x->src && x->rel && x->target)
		return 0;
	entry_free(x);
	return -ENOMEM;
}

/* close the open unit: it waits among the held ones */
static void open_close(struct pxfer_work_cut *c)
{
	struct pxfer_unit *u = &c->held[(c->held_first + c->nheld) %
					PXFER_WORK_HELD_MAX];

	*u = c->open;
	u->kind = PXFER_UNIT_FILES;
	c->nheld++;
	memset(&c->open, 0, sizeof(c->open));
	c->open_cap = 0;
	c->open_size = 0;
}

/* the oldest held unit, handed over for @recv */
static int held_emit(struct pxfer_work_cut *c, uint32_t recv,
		     pxfer_work_emit_fn *emit, void *arg)
{
	struct pxfer_unit u = c->held[c->held_first];

	memset(&c->held[c->held_first], 0, sizeof(u));
	c->held_first = (c->held_first + 1) % PXFER_WORK_HELD_MAX;
	c->nheld--;
	u.id = c->next_id++;
	u.recv = recv;
	return emit(arg, &u, 0);
}

static int open_add(struct pxfer_work_cut *c, const struct pxfer_walk_entry *e)
{
	struct pxfer_unit *u = &c->open;
	int ret;

	if (u->n == c->open_cap) {
		unsigned int cap = c->open_cap ? 2 * c->open_cap : 16;
		struct pxfer_unit_entry *v;

		if (cap > c->unit_files)
			cap = c->unit_files;
		v = realloc(u->e, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		u->e = v;
		c->open_cap = cap;
	}
	ret = entry_fill(&u->e[u->n], e);
	if (ret)
		return ret;
	u->bytes += u->e[u->n].size;
	c->open_size += pxfer_work_entry_size(&u->e[u->n]);
	u->n++;
	return 0;
}

/* would @e overflow the open unit? */
static int open_full_with(const struct pxfer_work_cut *c,
			  const struct pxfer_walk_entry *e)
{
	size_t sz = PXFER_WORK_ENTRY_FIXED + strlen(e->src) + strlen(e->rel) +
		    (e->kind == PXFER_WALK_SYMLINK ? strlen(e->target) : 0);

	return c->open.n && c->open_size + sz > UNIT_WIRE_MAX;
}

static int open_full(const struct pxfer_work_cut *c)
{
	return c->open.n >= c->unit_files || c->open.bytes >= c->unit_bytes;
}

/* a large file, cut into ranges for @recv */
static int cut_ranges(struct pxfer_work_cut *c, uint32_t recv,
		      const struct pxfer_walk_entry *e,
		      pxfer_work_emit_fn *emit, void *arg)
{
	uint64_t size = (uint64_t)e->st.st_size, len = c->range_bytes;
	uint64_t nrange;
	int ret;

	/* a file so large it would be cut into more than
	 * PXFER_WORK_RANGES_MAX ranges gets larger ones (whole multiples of
	 * PXFER_WORK_RANGE_ALIGN), which the receiver's records of it and
	 * the service's memory stay bounded by */
	if (size / len > PXFER_WORK_RANGES_MAX) {
		len = (size + PXFER_WORK_RANGES_MAX - 1) / PXFER_WORK_RANGES_MAX;
		len = (len + PXFER_WORK_RANGE_ALIGN - 1) / PXFER_WORK_RANGE_ALIGN *
		      PXFER_WORK_RANGE_ALIGN;
	}
	nrange = size / len;
	for (uint64_t i = 0; i < nrange; i++) {
		struct pxfer_unit u = {
			.id = c->next_id++, .recv = recv,
			.kind = PXFER_UNIT_RANGE, .n = 1,
		};

		u.e = malloc(sizeof(*u.e));
		if (!u.e)
			return -ENOMEM;
		ret = entry_fill(u.e, e);
		if (ret) {
			free(u.e);
			return ret;
		}
		u.e->off = i * len;
		u.e->len = i + 1 < nrange ? len : size - u.e->off;
		u.bytes = u.e->len;
		ret = emit(arg, &u, nrange);
		if (ret)
			return ret;
	}
	return 0;
}

static int dir_add(struct pxfer_work_cut *c, const struct pxfer_walk_entry *e)
{
	if (c->ndirs == c->dirs_cap) {
		size_t cap = c->dirs_cap ? 2 * c->dirs_cap : 64;
		struct pxfer_unit_entry *v = realloc(c->dirs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->dirs = v;
		c->dirs_cap = cap;
	}
	if (entry_fill(&c->dirs[c->ndirs], e))
		return -ENOMEM;
	c->ndirs++;
	return 0;
}

/* one entry of the walk: 1 when a large file's ranges were emitted, 0
 * or -errno (a FILES unit it closes is held) */
static int take(struct pxfer_work_cut *c, uint32_t recv,
		const struct pxfer_walk_entry *e, pxfer_work_emit_fn *emit,
		void *arg)
{
	char q[PXFER_QUOTE_MAX];
	int ret;

	switch (e->kind) {
	case PXFER_WALK_DIR:
		return dir_add(c, e);
	case PXFER_WALK_SKIP:
		pxfer_warning("skipping %s: not a regular file, directory or link",
			      pxfer_quote_str(q, sizeof(q), e->src));
		c->files_skipped++;
		return 0;
	case PXFER_WALK_ERROR:
		pxfer_error("cannot read %s: %s",
			    pxfer_quote_str(q, sizeof(q), e->src),
			    strerror(-e->err));
		c->files_failed++;
		return 0;
	case PXFER_WALK_FILE:
		if ((uint64_t)e->st.st_size > 2 * c->range_bytes) {
			ret = cut_ranges(c, recv, e, emit, arg);
			return ret ? ret : 1;
		}
		break;
	default:
		break;
	}
	if (open_full_with(c, e))
		open_close(c);
	ret = open_add(c, e);
	if (ret)
		return ret;
	if (open_full(c))
		open_close(c);
	return 0;
}

/*
 * The units of small files are held (PXFER_WORK_HELD_MAX of them at
 * most) while the walk looks on for large files, which are handed out
 * first: the files that take longest start early, and the small ones
 * fill the end, where they even out what each receiver has left.
 */
int pxfer_work_cut_more(struct pxfer_work_cut *c, uint32_t recv,
			pxfer_work_emit_fn *emit, void *arg)
{
	struct pxfer_walk_entry e;
	int ret;

	while (!c->walk_over && c->nheld < PXFER_WORK_HELD_MAX) {
		ret = pxfer_walk_next(&c->walk, &e);
		if (ret == 0) {
			c->walk_over = 1;
			break;
		}
		if (ret > 0)
			ret = take(c, recv, &e, emit, arg);
		if (ret > 0)
			return 1;
		if (ret < 0) {
			pxfer_error("cannot walk the sources: %s; the job stops cutting work",
				    strerror(-ret));
			c->walk_over = c->walked = 1;
			c->failed = 1;
			return ret;
		}
	}
	if (c->walk_over && c->open.n)
		open_close(c);
	if (c->nheld) {
		ret = held_emit(c, recv, emit, arg);
		if (!ret && c->walk_over && !c->nheld)
			c->walked = 1;
		return ret ? ret : 1;
	}
	c->walked = 1;
	return 0;
}

int pxfer_work_cut_dirs(struct pxfer_work_cut *c, uint32_t recv,
			pxfer_work_emit_fn *emit, void *arg)
{
	size_t i = 0;
	int ret;

	while (i < c->ndirs) {
		struct pxfer_unit u = {
			.id = c->next_id++, .recv = recv, .kind = PXFER_UNIT_DIRS,
		};
		size_t n = 0, size = 0;

		while (i + n < c->ndirs && n < c->unit_files) {
			size_t sz = pxfer_work_entry_size(&c->dirs[i + n]);

			if (n && size + sz > UNIT_WIRE_MAX)
				break;
			size += sz;
			n++;
		}
		u.e = calloc(n, sizeof(*u.e));
		if (!u.e)
			return -ENOMEM;
		for (; u.n < n; u.n++) {
			const struct pxfer_unit_entry *d = &c->dirs[i + u.n];
			struct pxfer_unit_entry *x = &u.e[u.n];

			*x = *d;
			x->src = strdup(d->src);
			x->rel = strdup(d->rel);
			x->target = strdup(d->target);
			if (!x->src || !x->rel || !x->target) {
				u.n++;
				pxfer_unit_release(&u);
				return -ENOMEM;
			}
		}
		ret = emit(arg, &u, 0);
		if (ret)
			return ret;
		i += n;
	}
	return 0;
}
