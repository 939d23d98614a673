/* SPDX-License-Identifier: MIT */
/*
 * work_test: the work service over 127.0.0.1. A tree (nested directories,
 * a few hundred small files, a link, two large sparse files cut into
 * ranges) is pulled by ranks of two threads each (one per receiver): every
 * entry is handed out and done exactly once (files whole, or ranges that
 * cover the file, all on one receiver), directories only in DIRS units,
 * only once everything else was reported, and each receiver gets every
 * one; a rank that leaves holding units, and a result with again=1, have
 * them handed out again; a lost receiver's files go to the other (a file
 * with a range done there is sent whole again); a wrong secret, another
 * job, a rank outside the job and a second connection of a rank are
 * refused; the outcome is right and the same on every rank.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "api/work.h"
#include "send/walk.h"
#include "pxfer/pxfer.h"
#include "test.h"

#define NDIRS		6
#define NFILES		300
#define RANGE_BYTES	(1024 * 1024)
#define BIG1		(10 * RANGE_BYTES + 12345)
#define BIG2		(7 * RANGE_BYTES)
/* more than PXFER_WORK_RANGES_MAX ranges of RANGE_BYTES: larger ones */
#define BIG3		(1025 * PXFER_WORK_RANGE_ALIGN + 5)
#define NRANKS		4	/* 3 that work, 1 that leaves */

static const uint8_t secret[] = "a secret of the work test, long enough";
static const uint8_t job[16] = "job of work_test";
static char tmp[] = "/tmp/pxfer-work-XXXXXX";

/* what was handed out and done */
struct rec {
	uint8_t ukind, ekind;
	char *rel;
	uint64_t off, len, size;
	uint32_t recv;
};

struct ledger {
	pthread_mutex_t lock;
	struct rec *v;
	size_t n, cap;
	long held_nondir;	/* non-DIRS units pulled, not yet reported */
	uint64_t again_id;	/* the unit reported again=1 */
	int again_done;		/* ... and later done */
	uint64_t left_ids[2];	/* the units the leaving rank held */
	int left_done[2];
};

struct rank_arg {
	struct ledger *L;
	struct pxfer_work_client *c;
	uint32_t rank, recv;
	int port;
	int give_again;		/* report the job's first unit again=1 */
};

static void rec_add(struct ledger *L, const struct pxfer_unit *u)
{
	for (unsigned int i = 0; i < u->n; i++) {
		struct rec *r;

		if (L->n == L->cap) {
			L->cap = L->cap ? 2 * L->cap : 256;
			L->v = realloc(L->v, L->cap * sizeof(*L->v));
			if (!L->v)
				abort();
		}
		r = &L->v[L->n++];
		r->ukind = u->kind;
		r->ekind = u->e[i].kind;
		r->rel = strdup(u->e[i].rel);
		r->off = u->e[i].off;
		r->len = u->e[i].len;
		r->size = u->e[i].size;
		r->recv = u->recv;
	}
}

/* a result that says every entry of @u was sent */
static void result_of(const struct pxfer_unit *u, struct pxfer_unit_result *r)
{
	memset(r, 0, sizeof(*r));
	r->id = u->id;
	for (unsigned int i = 0; i < u->n; i++) {
		if (u->e[i].kind == PXFER_WALK_DIR)
			r->dirs++;
		else if (u->e[i].kind == PXFER_WALK_SYMLINK)
			r->links++;
		else
			r->files++;
	}
	r->bytes = u->bytes;
	r->bytes_sent = u->bytes;
}

/* one unit pulled: check and note it, then report it done */
static int take_unit(struct rank_arg *a, struct pxfer_unit *u)
{
	struct ledger *L = a->L;
	struct pxfer_unit_result r;
	int again = 0;

	result_of(u, &r);
	pthread_mutex_lock(&L->lock);
	T_EXPECT(u->recv == a->recv, "unit %llu for receiver %u, pulled for %u",
		 (unsigned long long)u->id, u->recv, a->recv);
	if (u->kind == PXFER_UNIT_DIRS)
		T_EXPECT(L->held_nondir == 0,
			 "a DIRS unit while %ld others are not reported",
			 L->held_nondir);
	else
		L->held_nondir++;
	/* the first unit pulled (not a DIRS one) is given back once */
	if (a->give_again && !L->again_id && u->kind != PXFER_UNIT_DIRS) {
		L->again_id = u->id;
		again = 1;
	} else {
		if (u->id == L->again_id)
			L->again_done = 1;
		for (int i = 0; i < 2; i++)
			if (u->id == L->left_ids[i])
				L->left_done[i] = 1;
		rec_add(L, u);
	}
	/* reported from here on: the service may then hand out DIRS */
	if (u->kind != PXFER_UNIT_DIRS)
		L->held_nondir--;
	pthread_mutex_unlock(&L->lock);
	r.again = again;
	if (again)
		r.files = r.links = r.bytes = 0;
	T_EXPECT(pxfer_work_report(a->c, &r) == 0, "report of unit %llu",
		 (unsigned long long)u->id);
	return 0;
}

static void *recv_thread(void *arg)
{
	struct rank_arg *a = arg;
	struct pxfer_unit u;
	int ret;

	for (;;) {
		ret = pxfer_work_pull(a->c, a->recv, &u);
		if (ret == 0) {
			usleep(500);
			continue;
		}
		if (ret < 0)
			break;
		take_unit(a, &u);
		pxfer_unit_release(&u);
	}
	T_EXPECT(ret == -ENODATA, "rank %u receiver %u: pull ended with %d",
		 a->rank, a->recv, ret);
	return NULL;
}

/* ---- the tree -------------------------------------------------------------- */

static void write_file(const char *path, size_t size, off_t sparse)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	char buf[4096];

	if (fd < 0) {
		perror(path);
		exit(1);
	}
	memset(buf, 'x', sizeof(buf));
	if ((sparse && ftruncate(fd, sparse) < 0) ||
	    (!sparse && write(fd, buf, size) != (ssize_t)size)) {
		perror(path);
		exit(1);
	}
	close(fd);
}

static void make_tree(void)
{
	char p[512];

	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(p, sizeof(p), "%s/src", tmp);
	mkdir(p, 0755);
	for (int d = 0; d < NDIRS; d++) {
		snprintf(p, sizeof(p), "%s/src/d%d", tmp, d);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/src/d%d/sub", tmp, d);
		mkdir(p, 0750);
	}
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "%s/src/d%d/%sf%03d", tmp, i % NDIRS,
			 i % 2 ? "sub/" : "", i);
		write_file(p, (size_t)(i * 37) % 4000, 0);
	}
	snprintf(p, sizeof(p), "%s/src/d0/big1", tmp);
	write_file(p, 0, BIG1);
	snprintf(p, sizeof(p), "%s/src/d3/sub/big2", tmp);
	write_file(p, 0, BIG2);
	snprintf(p, sizeof(p), "%s/src/d1/big3", tmp);
	write_file(p, 0, BIG3);
	snprintf(p, sizeof(p), "%s/src/link", tmp);
	if (symlink("d0/f000", p) < 0) {
		perror(p);
		exit(1);
	}
}

/* ---- checks ---------------------------------------------------------------- */

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c = strcmp(x->rel, y->rel);

	if (c)
		return c;
	if (x->recv != y->recv)
		return x->recv < y->recv ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Every entry of the tree in the ledger as it should be: files and links
 * once (whole, or ranges covering them on one receiver, on a receiver
 * @only if it is >= 0), directories once per live receiver in DIRS units.
 * Returns the number of regular files.
 */
static void check_ledger(struct ledger *L, const int *live, int nrecv,
			 int only, uint64_t *nfiles, uint64_t *ndirs,
			 uint64_t *nbytes)
{
	char root[512], *roots[1] = { root };
	struct pxfer_walk w;
	struct pxfer_walk_entry e;
	const char *bad;

	*nfiles = *ndirs = *nbytes = 0;
	qsort(L->v, L->n, sizeof(*L->v), rec_cmp);
	snprintf(root, sizeof(root), "%s/src", tmp);
	T_EXPECT(pxfer_walk_init(&w, roots, 1, &bad) == 0, "walk");
	while (pxfer_walk_next(&w, &e) > 0) {
		struct rec key = { .rel = (char *)e.rel }, *r;
		size_t lo = 0, hi = L->n, i, n;

		while (lo < hi) {	/* the first record of e.rel */
			size_t mid = (lo + hi) / 2;

			if (strcmp(L->v[mid].rel, key.rel) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (n = 0; lo + n < L->n && !strcmp(L->v[lo + n].rel, e.rel); n++)
			;
		r = &L->v[lo];
		if (e.kind == PXFER_WALK_DIR) {
			int want = 0;

			for (int k = 0; k < nrecv; k++)
				want += live[k];
			(*ndirs)++;
			T_EXPECT((int)n == want, "dir '%s' handed out %zu times, not %d",
				 e.rel, n, want);
			for (i = 0; i < n; i++)
				T_EXPECT(r[i].ukind == PXFER_UNIT_DIRS &&
					 live[r[i].recv] &&
					 (i == 0 || r[i].recv != r[i - 1].recv),
					 "dir '%s' in a unit of kind %u for %u",
					 e.rel, r[i].ukind, r[i].recv);
			continue;
		}
		if (e.kind == PXFER_WALK_FILE) {
			(*nfiles)++;
			*nbytes += (uint64_t)e.st.st_size;
		}
		T_EXPECT(n >= 1, "'%s' never handed out", e.rel);
		if (n == 0)
			continue;
		if (r[0].ukind == PXFER_UNIT_FILES) {
			T_EXPECT(n == 1, "'%s' handed out %zu times", e.rel, n);
			continue;
		}
		/* ranges: on one receiver, covering the file once, of
		 * RANGE_BYTES (the last up to twice that), or larger ones
		 * for a file of more than PXFER_WORK_RANGES_MAX */
		uint64_t at = 0, want = RANGE_BYTES;

		if ((uint64_t)e.st.st_size / want > PXFER_WORK_RANGES_MAX) {
			want = ((uint64_t)e.st.st_size + PXFER_WORK_RANGES_MAX - 1) /
			       PXFER_WORK_RANGES_MAX;
			want = (want + PXFER_WORK_RANGE_ALIGN - 1) /
			       PXFER_WORK_RANGE_ALIGN * PXFER_WORK_RANGE_ALIGN;
		}
		T_EXPECT(n <= PXFER_WORK_RANGES_MAX, "'%s': %zu ranges", e.rel, n);

		if (only >= 0) {	/* those sent to @only (sorted by recv) */
			while (n && (int)r->recv < only) {
				r++;
				n--;
			}
			for (i = 0; i < n && (int)r[i].recv == only; i++)
				;
			n = i;
		}
		for (i = 0; i < n; i++) {
			T_EXPECT(r[i].ukind == PXFER_UNIT_RANGE &&
				 r[i].recv == r[0].recv && r[i].off == at &&
				 r[i].len <= 2 * want &&
				 (i + 1 == n || r[i].len == want),
				 "'%s': range %zu at %llu+%llu on %u", e.rel, i,
				 (unsigned long long)r[i].off,
				 (unsigned long long)r[i].len, r[i].recv);
			at = r[i].off + r[i].len;
		}
		T_EXPECT(at == (uint64_t)e.st.st_size,
			 "'%s': ranges cover %llu of %llu bytes", e.rel,
			 (unsigned long long)at,
			 (unsigned long long)e.st.st_size);
	}
	pxfer_walk_release(&w);
}

static int same_outcome(const struct pxfer_job_outcome *a,
			const struct pxfer_job_outcome *b)
{
	return a->status == b->status && a->files == b->files &&
	       a->files_failed == b->files_failed &&
	       a->files_same == b->files_same &&
	       a->files_skipped == b->files_skipped && a->dirs == b->dirs &&
	       a->links == b->links && a->bytes == b->bytes &&
	       a->bytes_sent == b->bytes_sent && a->units == b->units &&
	       a->units_again == b->units_again && a->nranks == b->nranks &&
	       a->nrecv == b->nrecv &&
	       !memcmp(a->rank, b->rank, a->nranks * sizeof(*a->rank)) &&
	       !memcmp(a->recv, b->recv, a->nrecv * sizeof(*a->recv));
}

static void conf_init(struct pxfer_work_conf *c, char **roots,
		      uint32_t nranks, uint32_t nrecv)
{
	memset(c, 0, sizeof(*c));
	c->roots = roots;
	c->nroots = 1;
	c->nranks = nranks;
	c->nrecv = nrecv;
	c->secret = secret;
	c->secret_len = sizeof(secret) - 1;
	memcpy(c->job, job, 16);
	c->bind = "127.0.0.1";
	c->unit_bytes = 64 * 1024;
	c->unit_files = 16;
	c->range_bytes = RANGE_BYTES;
	c->end_grace_ms = 200;
}

static int dial(int port, uint32_t rank, const uint8_t *sec, size_t len,
		const uint8_t *jb, struct pxfer_work_client **c)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", port);
	return pxfer_work_connect(c, "127.0.0.1", p, rank, sec, len, jb);
}

/* ---- the scenarios ---------------------------------------------------------- */

static void test_job(char **roots)
{
	struct pxfer_work_conf conf;
	struct pxfer_work_server *s;
	struct pxfer_work_client *c[NRANKS], *leaver;
	struct rank_arg a[NRANKS][2];
	pthread_t t[NRANKS][2];
	struct pxfer_job_outcome o[NRANKS], so;
	struct ledger L = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct pxfer_unit u;
	int live[2] = { 1, 1 }, port, ret;
	uint64_t nfiles, ndirs, nbytes;

	conf_init(&conf, roots, NRANKS, 2);
	T_EXPECT(pxfer_work_serve(&s, &conf) == 0, "serve");
	port = pxfer_work_server_port(s);

	/* a rank that pulls a unit for each receiver and leaves */
	T_EXPECT(dial(port, NRANKS - 1, secret, sizeof(secret) - 1, job,
		      &leaver) == 0, "connect the leaving rank");
	for (uint32_t r = 0; r < 2; r++) {
		ret = pxfer_work_pull(leaver, r, &u);
		T_EXPECT(ret == 1, "the leaving rank pulls for %u: %d", r, ret);
		if (ret == 1) {
			L.left_ids[r] = u.id;
			pxfer_unit_release(&u);
		}
	}
	pxfer_work_close(leaver);

	for (uint32_t k = 0; k < NRANKS - 1; k++) {
		T_EXPECT(dial(port, k, secret, sizeof(secret) - 1, job,
			      &c[k]) == 0, "connect rank %u", k);
		for (uint32_t r = 0; r < 2; r++) {
			a[k][r] = (struct rank_arg){
				.L = &L, .c = c[k], .rank = k, .recv = r,
				.give_again = 1,
			};
			pthread_create(&t[k][r], NULL, recv_thread, &a[k][r]);
		}
	}
	for (uint32_t k = 0; k < NRANKS - 1; k++) {
		for (uint32_t r = 0; r < 2; r++)
			pthread_join(t[k][r], NULL);
		T_EXPECT(pxfer_work_end(c[k], &o[k]) == 0, "end of rank %u", k);
	}
	T_EXPECT(pxfer_work_server_wait(s, &so) == 0, "wait");
	check_ledger(&L, live, 2, -1, &nfiles, &ndirs, &nbytes);
	T_EXPECT(L.again_id && L.again_done, "the unit given back (%llu) was done again",
		 (unsigned long long)L.again_id);
	T_EXPECT(L.left_done[0] && L.left_done[1],
		 "the units of the rank that left were done by another");
	T_EXPECT(so.status == 0 && so.files == nfiles && so.links == 1 &&
		 so.dirs == ndirs && so.files_failed == 0 &&
		 so.bytes == nbytes && so.bytes_sent >= nbytes &&
		 so.units_again >= 3,
		 "outcome: status %d files %llu/%llu links %llu dirs %llu/%llu again %llu",
		 so.status, (unsigned long long)so.files,
		 (unsigned long long)nfiles, (unsigned long long)so.links,
		 (unsigned long long)so.dirs, (unsigned long long)ndirs,
		 (unsigned long long)so.units_again);
	T_EXPECT(so.recv[0].files + so.recv[1].files == nfiles &&
		 so.rank[NRANKS - 1].units == 0,
		 "per receiver and per rank figures");
	for (uint32_t k = 0; k < NRANKS - 1; k++) {
		T_EXPECT(same_outcome(&o[k], &so), "rank %u's outcome", k);
		pxfer_job_outcome_release(&o[k]);
		pxfer_work_close(c[k]);
	}
	pxfer_job_outcome_release(&so);
	pxfer_work_server_free(s);
	for (size_t i = 0; i < L.n; i++)
		free(L.v[i].rel);
	free(L.v);
}

/* receiver 1 is lost once a range was done there: all goes to 0 */
static void test_lost(char **roots)
{
	struct pxfer_work_conf conf;
	struct pxfer_work_server *s;
	struct pxfer_work_client *c = NULL;
	struct pxfer_job_outcome o, so;
	struct ledger L = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct rank_arg a = { .L = &L, .rank = 0, .recv = 1 };
	struct pxfer_unit u;
	int live[2] = { 1, 0 }, ranged = 0, ret;
	uint64_t nfiles, ndirs, nbytes;

	conf_init(&conf, roots, 1, 2);
	T_EXPECT(pxfer_work_serve(&s, &conf) == 0, "serve");
	T_EXPECT(dial(pxfer_work_server_port(s), 0, secret, sizeof(secret) - 1,
		      job, &c) == 0, "connect");
	a.c = c;
	while (!ranged && (ret = pxfer_work_pull(c, 1, &u)) == 1) {
		ranged = u.kind == PXFER_UNIT_RANGE;
		take_unit(&a, &u);
		pxfer_unit_release(&u);
	}
	T_EXPECT(ranged, "a range for receiver 1");
	T_EXPECT(pxfer_work_lost(c, 1) == 0, "lost");
	T_EXPECT(pxfer_work_pull(c, 1, &u) == -ENODATA, "a lost receiver's pull");
	a.recv = 0;
	recv_thread(&a);
	T_EXPECT(pxfer_work_end(c, &o) == 0, "end");
	T_EXPECT(pxfer_work_server_wait(s, &so) == 0, "wait");
	check_ledger(&L, live, 2, 0, &nfiles, &ndirs, &nbytes);
	T_EXPECT(so.status == 0 && so.recv[1].lost &&
		 !so.recv[0].lost && so.files == nfiles && so.bytes == nbytes &&
		 so.dirs == ndirs,
		 "outcome: status %d lost %d files %llu/%llu bytes %llu/%llu",
		 so.status, so.recv[1].lost, (unsigned long long)so.files,
		 (unsigned long long)nfiles, (unsigned long long)so.bytes,
		 (unsigned long long)nbytes);
	T_EXPECT(same_outcome(&o, &so), "the rank's outcome");
	pxfer_job_outcome_release(&o);
	pxfer_job_outcome_release(&so);
	pxfer_work_close(c);
	pxfer_work_server_free(s);
	for (size_t i = 0; i < L.n; i++)
		free(L.v[i].rel);
	free(L.v);
}

/* what must be refused, and the service goes on after it */
static void test_refused(char **roots)
{
	static const uint8_t other[16] = "another job 1234";
	struct pxfer_work_conf conf;
	struct pxfer_work_server *s;
	struct pxfer_work_client *c = NULL, *d = NULL;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char *bad[1] = { "/nonexistent/pxfer-work-test" };
	int port, fd;

	conf_init(&conf, bad, 1, 1);
	T_EXPECT(pxfer_work_serve(&s, &conf) < 0 && !s, "a missing root");
	conf_init(&conf, roots, 2, 1);
	T_EXPECT(pxfer_work_serve(&s, &conf) == 0, "serve");
	port = pxfer_work_server_port(s);
	T_EXPECT(dial(port, 0, (const uint8_t *)"the wrong secret, wrong", 23,
		      job, &c) == -EACCES && !c, "a wrong secret");
	T_EXPECT(dial(port, 0, secret, sizeof(secret) - 1, other, &c) == -EACCES,
		 "another job");
	T_EXPECT(dial(port, 2, secret, sizeof(secret) - 1, job, &c) == -ERANGE,
		 "a rank outside the job");
	/* junk, then a peer that sends nothing: closed, nothing else */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
		T_EXPECT(write(fd, "\xff\xff\0\0\xff\xff\xff\xff", 8) == 8,
			 "junk");
	T_EXPECT(dial(port, 0, secret, sizeof(secret) - 1, job, &c) == 0,
		 "rank 0");
	T_EXPECT(dial(port, 0, secret, sizeof(secret) - 1, job, &d) == -EEXIST,
		 "rank 0 twice");
	if (fd >= 0)
		close(fd);
	pxfer_work_close(c);
	/* once rank 0 left, it may come back */
	T_EXPECT(dial(port, 0, secret, sizeof(secret) - 1, job, &c) == 0 ||
		 (usleep(100000), dial(port, 0, secret, sizeof(secret) - 1, job,
				       &c) == 0), "rank 0 again");
	pxfer_work_close(c);
	pxfer_work_server_free(s);
}

int main(void)
{
	char root[512], *roots[1] = { root };

	make_tree();
	snprintf(root, sizeof(root), "%s/src", tmp);
	test_refused(roots);
	test_job(roots);
	test_lost(roots);
	t_rm_rf_at(AT_FDCWD, tmp);
	return t_result();
}
