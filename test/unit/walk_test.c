/* SPDX-License-Identifier: MIT */
/*
 * walk_test: the sender's tree walk yields every entry once, directories
 * before their contents, with the wire names specified for each kind of
 * root; refuses duplicate and missing roots; reports what it cannot read
 * and goes on; and copes with wide and deep trees. All of it twice: once
 * as it is, once with open_files (as the sender walks), where every
 * regular file below a root comes open, its fstat in st.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "send/walk.h"
#include "test.h"

#define UTF8_NAME	"with space \xc3\xa9\xe2\x82\xac.txt"
#define FLAT_FILES	2000
#define DEEP_LEVELS	200
#define LONG_NAME	200

struct ent {
	enum pxfer_walk_kind kind;
	char *src;
	char *rel;
	char *target;
	int err;
	struct stat st;
};

struct res {
	struct ent *v;
	int n;
	int cap;
};

static int walk_open;	/* walk_all sets open_files */

static char tmp[] = "/tmp/pxfer-walk-XXXXXX";

/* ---- helpers --------------------------------------------------------- */

static void add(struct res *r, const struct pxfer_walk_entry *e)
{
	struct ent *x;

	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->v = realloc(r->v, sizeof(*r->v) * r->cap);
		if (!r->v)
			abort();
	}
	x = &r->v[r->n++];
	x->kind = e->kind;
	x->src = strdup(e->src);
	x->rel = strdup(e->rel);
	x->target = strdup(e->target);
	x->err = e->err;
	x->st = e->st;
	if (e->fd >= 0) {
		struct stat st;

		T_EXPECT(walk_open && e->kind == PXFER_WALK_FILE,
			 "'%s': an fd with kind %d", e->rel, e->kind);
		T_EXPECT(fstat(e->fd, &st) == 0 && st.st_ino == e->st.st_ino &&
			 st.st_dev == e->st.st_dev && S_ISREG(st.st_mode),
			 "'%s': the fd is not the entry", e->rel);
		T_EXPECT((fcntl(e->fd, F_GETFL) & O_ACCMODE) == O_RDONLY &&
			 (fcntl(e->fd, F_GETFD) & FD_CLOEXEC),
			 "'%s': fd flags", e->rel);
		close(e->fd);
	}
	if (!x->src || !x->rel || !x->target)
		abort();
}

static void res_free(struct res *r)
{
	int i;

	for (i = 0; i < r->n; i++) {
		free(r->v[i].src);
		free(r->v[i].rel);
		free(r->v[i].target);
	}
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* Walk @roots to the end into @r; returns what init or next failed with. */
static int walk_all(char **roots, int n, struct res *r, const char **bad)
{
	struct pxfer_walk_entry *e = malloc(sizeof(*e));
	struct pxfer_walk w;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = pxfer_walk_init(&w, roots, n, bad);
	w.open_files = walk_open;
	while (!ret && (ret = pxfer_walk_next(&w, e)) == 1) {
		/* a file below a root comes open, and only then */
		if (walk_open && e->kind == PXFER_WALK_FILE && w.depth)
			T_EXPECT(e->fd >= 0, "'%s': not opened", e->rel);
		else
			T_EXPECT(e->fd < 0, "'%s': opened", e->rel);
		add(r, e);
		ret = 0;
	}
	pxfer_walk_release(&w);
	free(e);
	return ret;
}

static int find(const struct res *r, const char *rel, int *count)
{
	int i, at = -1;

	*count = 0;
	for (i = 0; i < r->n; i++) {
		if (strcmp(r->v[i].rel, rel))
			continue;
		if (at < 0)
			at = i;
		(*count)++;
	}
	return at;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* No rel path twice; each parent (inside the walk) comes before its child. */
static void check_order(const struct res *r, const char *what)
{
	char **rels = malloc(sizeof(*rels) * (r->n + 1));
	char parent[8192];
	int i, at, count;
	char *slash;

	for (i = 0; i < r->n; i++)
		rels[i] = r->v[i].rel;
	qsort(rels, r->n, sizeof(*rels), cmp_str);
	for (i = 1; i < r->n; i++)
		T_EXPECT(strcmp(rels[i - 1], rels[i]), "%s: '%s' twice", what,
			 rels[i]);
	free(rels);
	for (i = 0; i < r->n; i++) {
		snprintf(parent, sizeof(parent), "%s", r->v[i].rel);
		slash = strrchr(parent, '/');
		if (!slash)
			continue;
		*slash = '\0';
		at = find(r, parent, &count);
		T_EXPECT(at >= 0 && at < i && r->v[at].kind == PXFER_WALK_DIR,
			 "%s: '%s' before its directory (%d, %d)", what,
			 r->v[i].rel, at, i);
	}
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	T_EXPECT(fd >= 0, "create %s", path);
	if (fd < 0)
		return;
	T_EXPECT(write(fd, text, strlen(text)) == (ssize_t)strlen(text),
		 "write %s", path);
	close(fd);
}

static char *at(const char *base, const char *rel)
{
	static char buf[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", base, rel);
	return buf[i];
}

/* ---- the main tree --------------------------------------------------- */

struct want {
	const char *rel;	/* below the root */
	enum pxfer_walk_kind kind;
};

static const struct want tree[] = {
	{ "sub", PXFER_WALK_DIR },
	{ "sub/deep", PXFER_WALK_DIR },
	{ "sub/deep/f3", PXFER_WALK_FILE },
	{ "sub/f2", PXFER_WALK_FILE },
	{ "empty", PXFER_WALK_DIR },
	{ "emptyfile", PXFER_WALK_FILE },
	{ UTF8_NAME, PXFER_WALK_FILE },
	{ "link", PXFER_WALK_SYMLINK },
	{ "fifo", PXFER_WALK_SKIP },
};
#define NTREE (int)(sizeof(tree) / sizeof(tree[0]))

static void make_tree(void)
{
	T_EXPECT(mkdir(at(tmp, "dir"), 0755) == 0, "mkdir dir");
	T_EXPECT(mkdir(at(tmp, "dir/sub"), 0755) == 0, "mkdir sub");
	T_EXPECT(mkdir(at(tmp, "dir/sub/deep"), 0755) == 0, "mkdir deep");
	T_EXPECT(mkdir(at(tmp, "dir/empty"), 0755) == 0, "mkdir empty");
	write_file(at(tmp, "dir/sub/deep/f3"), "hello");
	write_file(at(tmp, "dir/sub/f2"), "f2");
	write_file(at(tmp, "dir/emptyfile"), "");
	write_file(at(tmp, "dir/" UTF8_NAME), "utf-8");
	T_EXPECT(symlink("sub/deep/f3", at(tmp, "dir/link")) == 0, "link");
	T_EXPECT(mkfifo(at(tmp, "dir/fifo"), 0644) == 0, "fifo");
	write_file(at(tmp, "single"), "x");
	T_EXPECT(symlink("dir", at(tmp, "rootlink")) == 0, "rootlink");
	T_EXPECT(symlink("nowhere", at(tmp, "dangle")) == 0, "dangle");
	T_EXPECT(mkdir(at(tmp, "other"), 0755) == 0, "mkdir other");
	T_EXPECT(mkdir(at(tmp, "other/dir"), 0755) == 0, "mkdir other/dir");
}

/* The entry's src must name the same kind of thing as the entry says. */
static void check_src(const struct ent *x, int is_root, const char *what)
{
	struct stat st;
	int ret = is_root ? stat(x->src, &st) : lstat(x->src, &st);

	T_EXPECT(ret == 0, "%s: cannot stat src '%s'", what, x->src);
	if (ret)
		return;
	T_EXPECT(st.st_ino == x->st.st_ino && st.st_mode == x->st.st_mode,
		 "%s: src '%s' is not the entry", what, x->src);
	T_EXPECT(!strstr(x->src, "//"), "%s: src '%s'", what, x->src);
}

/* Walk one root holding the tree; @name is its wire name ("" contents). */
static void check_tree_root(const char *root, const char *name)
{
	char rel[PATH_MAX], *roots[] = { (char *)root };
	const char *bad = NULL;
	int i, idx, count, base = name[0] ? 1 : 0;
	struct res r;
	int ret;

	ret = walk_all(roots, 1, &r, &bad);
	T_EXPECT(ret == 0, "%s: walk: %d", root, ret);
	T_EXPECT(r.n == NTREE + base, "%s: %d entries, want %d", root, r.n,
		 NTREE + base);
	if (base) {
		idx = find(&r, name, &count);
		T_EXPECT(idx == 0 && count == 1, "%s: root entry at %d", root,
			 idx);
		if (idx == 0) {
			T_EXPECT(r.v[0].kind == PXFER_WALK_DIR, "%s: kind %d",
				 root, r.v[0].kind);
			check_src(&r.v[0], 1, root);
		}
	}
	for (i = 0; i < NTREE; i++) {
		snprintf(rel, sizeof(rel), "%s%s%s", name, base ? "/" : "",
			 tree[i].rel);
		idx = find(&r, rel, &count);
		T_EXPECT(count == 1, "%s: '%s' seen %d times", root, rel,
			 count);
		if (idx < 0)
			continue;
		T_EXPECT(r.v[idx].kind == tree[i].kind, "%s: '%s' kind %d",
			 root, rel, r.v[idx].kind);
		T_EXPECT(r.v[idx].err == 0, "%s: '%s' err %d", root, rel,
			 r.v[idx].err);
		check_src(&r.v[idx], 0, root);
		if (!strcmp(tree[i].rel, "link"))
			T_EXPECT(!strcmp(r.v[idx].target, "sub/deep/f3") &&
				 S_ISLNK(r.v[idx].st.st_mode),
				 "%s: link target '%s'", root, r.v[idx].target);
		if (!strcmp(tree[i].rel, "sub/deep/f3"))
			T_EXPECT(r.v[idx].st.st_size == 5, "%s: f3 size",
				 root);
		if (tree[i].kind != PXFER_WALK_SYMLINK)
			T_EXPECT(r.v[idx].target[0] == '\0', "%s: target",
				 root);
	}
	check_order(&r, root);
	res_free(&r);
}

static void test_roots(void)
{
	char *roots[3];
	const char *bad;
	struct res r;
	int ret, i, count, cwd;

	check_tree_root(at(tmp, "dir"), "dir");
	check_tree_root(at(tmp, "dir/"), "dir");
	check_tree_root(at(tmp, "dir//"), "dir");
	check_tree_root(at(tmp, "rootlink"), "rootlink");
	check_tree_root(at(tmp, "rootlink/"), "rootlink");
	check_tree_root(at(tmp, "dir/."), "");
	check_tree_root(at(tmp, "dir/sub/.."), "");

	/* a single file */
	roots[0] = at(tmp, "single");
	ret = walk_all(roots, 1, &r, &bad);
	T_EXPECT(ret == 0 && r.n == 1, "single: %d, %d entries", ret, r.n);
	if (r.n == 1) {
		T_EXPECT(r.v[0].kind == PXFER_WALK_FILE, "single: kind");
		T_EXPECT(!strcmp(r.v[0].rel, "single"), "single: rel '%s'",
			 r.v[0].rel);
		T_EXPECT(!strcmp(r.v[0].src, roots[0]), "single: src '%s'",
			 r.v[0].src);
		T_EXPECT(r.v[0].st.st_size == 1, "single: size");
	}
	res_free(&r);

	/* several roots, the contents of one of them directly */
	roots[0] = at(tmp, "single");
	roots[1] = at(tmp, "dir");
	roots[2] = at(tmp, "other/.");
	ret = walk_all(roots, 3, &r, &bad);
	T_EXPECT(ret == 0 && r.n == 1 + 1 + NTREE + 1,
		 "three roots: %d, %d entries", ret, r.n);
	T_EXPECT(find(&r, "dir", &count) >= 0 && count == 2,
		 "three roots: dir %d times", count);
	res_free(&r);

	/* "." below the working directory: links below it are not followed */
	cwd = open(".", O_RDONLY | O_DIRECTORY);
	T_EXPECT(cwd >= 0 && chdir(at(tmp, "dir/sub")) == 0, "chdir");
	roots[0] = ".";
	ret = walk_all(roots, 1, &r, &bad);
	T_EXPECT(ret == 0 && r.n == 3, "'.': %d, %d entries", ret, r.n);
	T_EXPECT(find(&r, "deep/f3", &count) >= 0 && count == 1,
		 "'.': deep/f3");
	res_free(&r);
	T_EXPECT(chdir(tmp) == 0, "chdir");
	roots[0] = "dir";
	roots[1] = "rootlink";
	ret = walk_all(roots, 2, &r, &bad);
	T_EXPECT(ret == 0 && r.n == 2 * (NTREE + 1), "relative roots: %d, %d",
		 ret, r.n);
	res_free(&r);
	roots[0] = ".";
	ret = walk_all(roots, 1, &r, &bad);
	T_EXPECT(ret == 0, "'.' at top: %d", ret);
	i = find(&r, "rootlink", &count);
	T_EXPECT(i >= 0 && count == 1 && r.v[i].kind == PXFER_WALK_SYMLINK &&
		 !strcmp(r.v[i].target, "dir"), "'.': rootlink not a link");
	T_EXPECT(find(&r, "rootlink/sub", &count) < 0, "'.': link followed");
	check_order(&r, ".");
	res_free(&r);
	T_EXPECT(fchdir(cwd) == 0, "fchdir");
	close(cwd);
}

/* "/" sends its contents: "/x" arrives as "x". Only the first entry. */
static void test_slash(void)
{
	struct pxfer_walk_entry *e = malloc(sizeof(*e));
	char *roots[] = { "/" };
	struct pxfer_walk w;
	const char *bad;
	int ret;

	ret = pxfer_walk_init(&w, roots, 1, &bad);
	T_EXPECT(ret == 0, "'/': init %d", ret);
	if (!ret)
		ret = pxfer_walk_next(&w, e);
	T_EXPECT(ret == 1 && e->rel[0] && !strchr(e->rel, '/') &&
		 e->src[0] == '/' && !strcmp(e->src + 1, e->rel),
		 "'/': %d, src '%s' rel '%s'", ret, e->src, e->rel);
	pxfer_walk_release(&w);
	free(e);
}

static void test_refused(void)
{
	struct pxfer_walk w;
	char *roots[3];
	const char *bad;
	int ret;

	/* duplicate names */
	roots[0] = at(tmp, "dir");
	roots[1] = at(tmp, "dir/");
	bad = NULL;
	ret = pxfer_walk_init(&w, roots, 2, &bad);
	T_EXPECT(ret == -EEXIST && bad == roots[1], "dir, dir/: %d", ret);
	pxfer_walk_release(&w);
	roots[0] = at(tmp, "single");
	roots[1] = at(tmp, "dir");
	roots[2] = at(tmp, "other/dir");
	bad = NULL;
	ret = pxfer_walk_init(&w, roots, 3, &bad);
	T_EXPECT(ret == -EEXIST && bad == roots[2], "dir, other/dir: %d", ret);
	pxfer_walk_release(&w);
	/* contents roots have no name to collide */
	roots[0] = at(tmp, "dir/.");
	roots[1] = at(tmp, "other/.");
	ret = pxfer_walk_init(&w, roots, 2, &bad);
	T_EXPECT(ret == 0, "dir/., other/.: %d", ret);
	pxfer_walk_release(&w);

	/* missing roots, also behind a link */
	roots[0] = at(tmp, "dir");
	roots[1] = at(tmp, "nope");
	bad = NULL;
	ret = pxfer_walk_init(&w, roots, 2, &bad);
	T_EXPECT(ret == -ENOENT && bad == roots[1], "nope: %d", ret);
	pxfer_walk_release(&w);
	roots[0] = at(tmp, "dangle");
	bad = NULL;
	ret = pxfer_walk_init(&w, roots, 1, &bad);
	T_EXPECT(ret == -ENOENT && bad == roots[0], "dangle: %d", ret);
	roots[0] = at(tmp, "single/");
	bad = NULL;
	ret = pxfer_walk_init(&w, roots, 1, &bad);
	T_EXPECT(ret == -ENOTDIR && bad == roots[0], "single/: %d", ret);
	pxfer_walk_release(&w);
	pxfer_walk_release(&w);
}

/* A root that disappears after init is reported, and the walk goes on. */
static void test_vanished(void)
{
	struct pxfer_walk_entry *e = malloc(sizeof(*e));
	struct pxfer_walk w;
	char *roots[2];
	const char *bad;
	int ret;

	roots[0] = at(tmp, "gone");
	roots[1] = at(tmp, "single");
	T_EXPECT(mkdir(roots[0], 0755) == 0, "mkdir gone");
	ret = pxfer_walk_init(&w, roots, 2, &bad);
	T_EXPECT(ret == 0, "gone: init %d", ret);
	T_EXPECT(rmdir(roots[0]) == 0, "rmdir gone");
	ret = pxfer_walk_next(&w, e);
	T_EXPECT(ret == 1 && e->kind == PXFER_WALK_ERROR &&
		 e->err == -ENOENT && !strcmp(e->rel, "gone"),
		 "gone: %d kind %d err %d", ret, e->kind, e->err);
	ret = pxfer_walk_next(&w, e);
	T_EXPECT(ret == 1 && e->kind == PXFER_WALK_FILE &&
		 !strcmp(e->rel, "single"), "after gone: %d", ret);
	T_EXPECT(pxfer_walk_next(&w, e) == 0, "after gone: end");
	T_EXPECT(pxfer_walk_next(&w, e) == 0, "after the end");
	pxfer_walk_release(&w);
	free(e);
}

/* ---- errors ---------------------------------------------------------- */

/* Directories nested until the rel path passes PXFER_PATH_MAX. */
static void test_too_long(void)
{
	char name[LONG_NAME + 1], *roots[] = { at(tmp, "long") };
	int fd, next, i, levels = PXFER_PATH_MAX / (LONG_NAME + 1) + 2;
	size_t want = strlen("long") + (levels - 1) * (LONG_NAME + 1);
	const char *bad;
	struct res r;
	int ret;

	memset(name, 'L', LONG_NAME);
	name[LONG_NAME] = '\0';
	T_EXPECT(mkdir(roots[0], 0755) == 0, "mkdir long");
	fd = open(roots[0], O_RDONLY | O_DIRECTORY);
	for (i = 0; i < levels && fd >= 0; i++) {
		T_EXPECT(mkdirat(fd, name, 0755) == 0, "mkdir level %d", i);
		next = openat(fd, name, O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = next;
	}
	if (fd >= 0)
		close(fd);

	ret = walk_all(roots, 1, &r, &bad);
	T_EXPECT(ret == 0, "long: %d", ret);
	T_EXPECT(r.n == levels, "long: %d entries, want %d", r.n, levels);
	for (i = 0; i < r.n - 1; i++)
		T_EXPECT(r.v[i].kind == PXFER_WALK_DIR &&
			 strlen(r.v[i].rel) <= PXFER_PATH_MAX,
			 "long: entry %d", i);
	if (r.n) {
		T_EXPECT(r.v[r.n - 1].kind == PXFER_WALK_ERROR &&
			 r.v[r.n - 1].err == -ENAMETOOLONG,
			 "long: last kind %d err %d", r.v[r.n - 1].kind,
			 r.v[r.n - 1].err);
		T_EXPECT(strlen(r.v[r.n - 1].rel) == want &&
			 want > PXFER_PATH_MAX, "long: rel length %zu",
			 strlen(r.v[r.n - 1].rel));
	}
	check_order(&r, "long");
	res_free(&r);
}

/*
 * What cannot be read is reported and the walk goes on. Runs as an
 * unprivileged user: root reads everything.
 */
static int unreadable_case(void)
{
	char u[] = "/tmp/pxfer-walk-XXXXXX", *roots[1];
	const char *bad = NULL;
	struct pxfer_walk w;
	struct res r;
	int i, ret, count;

	if (!mkdtemp(u))
		return 1;
	T_EXPECT(mkdir(at(u, "top"), 0755) == 0, "mkdir top");
	write_file(at(u, "top/ok"), "ok");
	write_file(at(u, "top/zz"), "zz");
	T_EXPECT(mkdir(at(u, "top/locked"), 0755) == 0, "mkdir locked");
	write_file(at(u, "top/locked/hidden"), "h");
	T_EXPECT(mkdir(at(u, "top/noexec"), 0755) == 0, "mkdir noexec");
	write_file(at(u, "top/noexec/f"), "f");
	T_EXPECT(chmod(at(u, "top/locked"), 0) == 0, "chmod locked");
	T_EXPECT(chmod(at(u, "top/noexec"), 0444) == 0, "chmod noexec");
	T_EXPECT(mkdir(at(u, "lockroot"), 0) == 0, "mkdir lockroot");
	write_file(at(u, "lockfile"), "x");
	T_EXPECT(chmod(at(u, "lockfile"), 0) == 0, "chmod lockfile");
	write_file(at(u, "top/noread"), "n");
	T_EXPECT(chmod(at(u, "top/noread"), 0) == 0, "chmod noread");

	roots[0] = at(u, "top");
	ret = walk_all(roots, 1, &r, &bad);
	T_EXPECT(ret == 0 && r.n == 7, "unreadable: %d, %d entries", ret,
		 r.n);
	/* a file that cannot be opened: an error when the walk opens it, a
	 * file (that the sender then fails to open) when it only stats */
	i = find(&r, "top/noread", &count);
	T_EXPECT(i >= 0 && count == 1 &&
		 r.v[i].kind == (walk_open ? PXFER_WALK_ERROR : PXFER_WALK_FILE) &&
		 r.v[i].err == (walk_open ? -EACCES : 0),
		 "top/noread: kind %d err %d", i >= 0 ? (int)r.v[i].kind : -1,
		 i >= 0 ? r.v[i].err : 0);
	i = find(&r, "top/locked", &count);
	T_EXPECT(i >= 0 && count == 1 && r.v[i].kind == PXFER_WALK_ERROR &&
		 r.v[i].err == -EACCES, "top/locked not an error");
	T_EXPECT(find(&r, "top/locked/hidden", &count) < 0, "locked read");
	i = find(&r, "top/noexec/f", &count);
	T_EXPECT(i >= 0 && r.v[i].kind == PXFER_WALK_ERROR &&
		 r.v[i].err == -EACCES, "top/noexec/f not an error");
	T_EXPECT(find(&r, "top/ok", &count) >= 0 &&
		 find(&r, "top/zz", &count) >= 0, "walk stopped");
	check_order(&r, "unreadable");
	res_free(&r);

	roots[0] = at(u, "lockroot");
	ret = pxfer_walk_init(&w, roots, 1, &bad);
	T_EXPECT(ret == -EACCES && bad == roots[0], "lockroot: %d", ret);
	pxfer_walk_release(&w);
	roots[0] = at(u, "lockfile");
	ret = pxfer_walk_init(&w, roots, 1, &bad);
	T_EXPECT(ret == -EACCES && bad == roots[0], "lockfile: %d", ret);
	pxfer_walk_release(&w);
	t_rm_rf_at(AT_FDCWD, u);
	return t_result();
}

static void test_unreadable(void)
{
	int status = 0;
	pid_t pid;

	if (geteuid() != 0) {
		unreadable_case();
		return;
	}
	pid = fork();
	if (pid == 0) {
		t_failures = 0;
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
		    setuid(65534) < 0)
			exit(T_SKIP);
		exit(unreadable_case());
	}
	T_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid &&
		 WIFEXITED(status), "unreadable child");
	if (WEXITSTATUS(status) == T_SKIP)
		fprintf(stderr, "cannot drop root: unreadable case skipped\n");
	else
		T_EXPECT(WEXITSTATUS(status) == 0, "unreadable case failed");
}

/* ---- size ------------------------------------------------------------ */

static void test_flat(void)
{
	char name[PATH_MAX], *roots[] = { at(tmp, "flat") };
	const char *bad;
	struct res r;
	int i, ret, fd;

	T_EXPECT(mkdir(roots[0], 0755) == 0, "mkdir flat");
	for (i = 0; i < FLAT_FILES; i++) {
		snprintf(name, sizeof(name), "%s/f%04d", roots[0], i);
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		T_EXPECT(fd >= 0, "create %s", name);
		if (fd >= 0)
			close(fd);
	}
	ret = walk_all(roots, 1, &r, &bad);
	T_EXPECT(ret == 0 && r.n == FLAT_FILES + 1, "flat: %d, %d entries",
		 ret, r.n);
	for (i = 1; i < r.n; i++)
		T_EXPECT(r.v[i].kind == PXFER_WALK_FILE &&
			 !strncmp(r.v[i].rel, "flat/f", 6), "flat: entry %d",
			 i);
	check_order(&r, "flat");
	res_free(&r);
}

static void test_deep(void)
{
	struct pxfer_walk_entry *e = malloc(sizeof(*e));
	char *roots[] = { at(tmp, "deep") };
	int i, fd, next, ret;
	struct pxfer_walk w;
	const char *bad;
	struct res r;
	size_t len;

	T_EXPECT(mkdir(roots[0], 0755) == 0, "mkdir deep");
	fd = open(roots[0], O_RDONLY | O_DIRECTORY);
	for (i = 0; i < DEEP_LEVELS && fd >= 0; i++) {
		T_EXPECT(mkdirat(fd, "d", 0755) == 0, "mkdir level %d", i);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = next;
	}
	if (fd >= 0) {
		next = openat(fd, "bottom", O_WRONLY | O_CREAT, 0644);
		if (next >= 0)
			close(next);
		close(fd);
	}

	ret = walk_all(roots, 1, &r, &bad);
	T_EXPECT(ret == 0 && r.n == DEEP_LEVELS + 2, "deep: %d, %d entries",
		 ret, r.n);
	for (i = 0, len = strlen("deep"); i < r.n; i++, len += 2) {
		if (i == r.n - 1)
			len += strlen("bottom") - 1;
		T_EXPECT(strlen(r.v[i].rel) == len, "deep: entry %d", i);
	}
	if (r.n)
		T_EXPECT(r.v[r.n - 1].kind == PXFER_WALK_FILE, "deep: bottom");
	check_order(&r, "deep");
	res_free(&r);

	/* abandoned midway, with most levels open */
	ret = pxfer_walk_init(&w, roots, 1, &bad);
	for (i = 0; i < DEEP_LEVELS * 3 / 4 && ret >= 0; i++)
		ret = pxfer_walk_next(&w, e);
	T_EXPECT(ret == 1 && e->kind == PXFER_WALK_DIR, "deep: midway %d",
		 ret);
	pxfer_walk_release(&w);

	/* and the main tree, abandoned after a few entries */
	roots[0] = at(tmp, "dir");
	ret = pxfer_walk_init(&w, roots, 1, &bad);
	for (i = 0; i < 4 && ret >= 0; i++)
		ret = pxfer_walk_next(&w, e);
	T_EXPECT(ret == 1, "dir: midway %d", ret);
	pxfer_walk_release(&w);
	free(e);
}

int main(void)
{
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	make_tree();
	test_roots();
	test_slash();
	test_refused();
	test_vanished();
	test_too_long();
	test_unreadable();
	test_flat();
	test_deep();
	/* again, the way the sender walks */
	walk_open = 1;
	test_roots();
	test_slash();
	test_unreadable();
	t_rm_rf_at(AT_FDCWD, tmp);
	return t_result();
}
