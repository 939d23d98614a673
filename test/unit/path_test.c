/* SPDX-License-Identifier: MIT */
/*
 * path_test: pxfer_path_check accepts ordinary names and refuses hostile
 * ones; pxfer_path_open_parent, _mkdir and _open_dir never leave the top
 * directory and never follow a link, with openat2 and with the
 * component-by-component fallback.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>

#include "recv/path.h"
#include "core/proto.h"
#include "test.h"

static char tmp[] = "/tmp/pxfer-path-XXXXXX";
static char top[64];		/* the receiver's DIR */
static char out[64];		/* a directory outside DIR */
static int rootfd = -1;
static int nhostile;

static int count_entries(const char *dir)
{
	struct dirent *d;
	DIR *dp = opendir(dir);
	int n = 0;

	if (!dp)
		return -1;
	while ((d = readdir(dp)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
			n++;
	closedir(dp);
	return n;
}

/* Nothing may appear outside DIR: tmp holds only DIR and out, out is empty. */
static void check_outside(int line)
{
	int n_out = count_entries(out), n_tmp = count_entries(tmp);

	T_EXPECT(n_out == 0, "line %d: %d entries appeared in %s", line,
		 n_out, out);
	T_EXPECT(n_tmp == 2, "line %d: %d entries in %s", line, n_tmp, tmp);
}

/* ---- pxfer_path_check ------------------------------------------------ */

static void expect_ok(const char *p)
{
	int ret = pxfer_path_check(p, strlen(p));

	T_EXPECT(ret == 0, "'%s' refused: %d", p, ret);
}

static void expect_bad_len(const char *p, size_t len, int err)
{
	int ret = pxfer_path_check(p, len);

	T_EXPECT(ret == err, "'%.40s' (len %zu): got %d, want %d", p, len,
		 ret, err);
	nhostile++;
}

static void expect_bad(const char *p)
{
	expect_bad_len(p, strlen(p), -EINVAL);
}

static void test_check(void)
{
	static char buf[PXFER_PATH_MAX + 2];
	size_t i;

	expect_ok("a");
	expect_ok("a/b/c");
	expect_ok("hello world.txt");
	expect_ok(" leading and trailing space ");
	expect_ok("caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e.txt");
	expect_ok(".hidden");
	expect_ok("dir/.hidden/..x");
	expect_ok("...");
	expect_ok("..a/a..");
	expect_ok("back\\slash\\..\\name");
	expect_ok("c:/colon:name");
	expect_ok("-dash");
	expect_ok("new\nline");

	expect_bad("");
	expect_bad("/");
	expect_bad("/etc/passwd");
	expect_bad(".");
	expect_bad("..");
	expect_bad("../x");
	expect_bad("a/../../x");
	expect_bad("a/..");
	expect_bad("a/../b");
	expect_bad("./a");
	expect_bad("a/./b");
	expect_bad("a/.");
	expect_bad("a//b");
	expect_bad("a/");
	expect_bad("//a");
	expect_bad_len("a\0/../x", 7, -EINVAL);
	expect_bad_len("abc", 2, -EINVAL);
	T_EXPECT(pxfer_path_check(NULL, 0) == -EINVAL, "NULL accepted");

	/* One component of 255 bytes is fine, 256 is not. */
	memset(buf, 'n', PXFER_NAME_MAX);
	buf[PXFER_NAME_MAX] = '\0';
	expect_ok(buf);
	buf[PXFER_NAME_MAX] = 'n';
	buf[PXFER_NAME_MAX + 1] = '\0';
	expect_bad(buf);
	memmove(buf + 2, buf, PXFER_NAME_MAX + 2);
	memcpy(buf, "a/", 2);
	expect_bad(buf);

	/* 4096 bytes in short components are fine, 4097 are not. */
	for (i = 0; i < PXFER_PATH_MAX; i++)
		buf[i] = i % 100 == 99 ? '/' : 'p';
	buf[PXFER_PATH_MAX] = '\0';
	expect_ok(buf);
	buf[PXFER_PATH_MAX] = 'p';
	buf[PXFER_PATH_MAX + 1] = '\0';
	expect_bad_len(buf, PXFER_PATH_MAX + 1, -ENAMETOOLONG);
}

/* ---- the filesystem -------------------------------------------------- */

static void at_top(const char *rel, char *buf)
{
	snprintf(buf, PATH_MAX, "%s/%s", top, rel);
}

static int exists(const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	at_top(rel, p);
	return lstat(p, &st) == 0;
}

static void setup_tree(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	int fd;

	at_top("in", p);
	T_EXPECT(mkdir(p, 0755) == 0, "mkdir in");
	at_top("in/sub", p);
	T_EXPECT(mkdir(p, 0755) == 0, "mkdir in/sub");
	at_top("a", p);
	T_EXPECT(mkdir(p, 0755) == 0, "mkdir a");
	at_top("esc", p);
	T_EXPECT(symlink(out, p) == 0, "symlink esc");
	at_top("a/esc", p);
	T_EXPECT(symlink(out, p) == 0, "symlink a/esc");
	at_top("up", p);
	T_EXPECT(symlink("..", p) == 0, "symlink up");
	at_top("rel", p);
	snprintf(q, sizeof(q), "../%s", strrchr(out, '/') + 1);
	T_EXPECT(symlink(q, p) == 0, "symlink rel");
	at_top("dangle", p);
	snprintf(q, sizeof(q), "%s/new", out);
	T_EXPECT(symlink(q, p) == 0, "symlink dangle");
	at_top("lnk", p);
	T_EXPECT(symlink("in", p) == 0, "symlink lnk");
	at_top("loop", p);
	T_EXPECT(symlink("loop", p) == 0, "symlink loop");
	at_top("proc", p);
	T_EXPECT(symlink("/proc/self/cwd", p) == 0, "symlink proc");
	at_top("file", p);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	T_EXPECT(fd >= 0, "create file");
	if (fd >= 0)
		close(fd);
}

static int refused(int ret)
{
	return ret == -ELOOP || ret == -ENOTDIR || ret == -EXDEV;
}

/* open_parent with create must fail and create nothing outside. */
static void hostile_parent(const char *path, int line)
{
	const char *base = NULL;
	int fd;

	fd = pxfer_path_open_parent(rootfd, path, 1, &base);
	T_EXPECT(fd < 0, "line %d: open_parent(%s) gave fd %d", line, path, fd);
	T_EXPECT(refused(fd) || fd == -EINVAL, "line %d: open_parent(%s): %d",
		 line, path, fd);
	if (fd >= 0)
		close(fd);
	fd = pxfer_path_open_parent(rootfd, path, 0, &base);
	T_EXPECT(fd < 0, "line %d: open_parent(%s, 0) gave fd %d", line, path,
		 fd);
	if (fd >= 0)
		close(fd);
	check_outside(line);
	nhostile++;
}

static void hostile_mkdir(const char *path, int line)
{
	int ret = pxfer_path_mkdir(rootfd, path, 0755);

	T_EXPECT(refused(ret) || ret == -EINVAL, "line %d: mkdir(%s): %d",
		 line, path, ret);
	check_outside(line);
	nhostile++;
}

static void hostile_open_dir(const char *path, int line)
{
	int fd = pxfer_path_open_dir(rootfd, path);

	T_EXPECT(refused(fd) || fd == -EINVAL, "line %d: open_dir(%s): %d",
		 line, path, fd);
	if (fd >= 0)
		close(fd);
	check_outside(line);
	nhostile++;
}

#define HOSTILE_PARENT(p)	hostile_parent(p, __LINE__)
#define HOSTILE_MKDIR(p)	hostile_mkdir(p, __LINE__)
#define HOSTILE_OPEN_DIR(p)	hostile_open_dir(p, __LINE__)

static void test_hostile_fs(void)
{
	/* absolute symlink to a directory outside DIR */
	HOSTILE_PARENT("esc/x");
	HOSTILE_PARENT("esc/new/x");
	HOSTILE_PARENT("a/esc/x");
	HOSTILE_MKDIR("esc/sub");
	HOSTILE_MKDIR("a/esc/sub/deeper");
	HOSTILE_OPEN_DIR("esc");
	HOSTILE_OPEN_DIR("a/esc");
	/* relative symlinks leading out */
	HOSTILE_PARENT("up/x");
	HOSTILE_PARENT("up/up/x");
	HOSTILE_MKDIR("up/y");
	HOSTILE_OPEN_DIR("up");
	HOSTILE_PARENT("rel/x");
	HOSTILE_MKDIR("rel/x");
	/* a dangling link to a place outside must not be created */
	HOSTILE_PARENT("dangle/x");
	HOSTILE_MKDIR("dangle/x");
	HOSTILE_MKDIR("dangle");
	T_EXPECT(exists("dangle"), "dangle removed");
	/* a link to a directory inside DIR is never followed either */
	HOSTILE_PARENT("lnk/x");
	HOSTILE_PARENT("lnk/new/x");
	HOSTILE_PARENT("lnk/sub/x");
	HOSTILE_MKDIR("lnk/sub/y");
	HOSTILE_OPEN_DIR("lnk/sub");
	HOSTILE_MKDIR("lnk");
	HOSTILE_MKDIR("lnk/z");
	HOSTILE_OPEN_DIR("lnk");
	T_EXPECT(!exists("in/x") && !exists("in/z") && !exists("in/new") &&
		 !exists("in/sub/y"), "something created through lnk");
	/* loops and magic links */
	HOSTILE_PARENT("loop/x");
	HOSTILE_OPEN_DIR("loop");
	HOSTILE_PARENT("proc/x");
	HOSTILE_OPEN_DIR("proc");
	/* lexically hostile paths are refused before any lookup */
	HOSTILE_PARENT("../x");
	HOSTILE_PARENT("/tmp/x");
	HOSTILE_PARENT("in/../../x");
	HOSTILE_MKDIR("..");
	HOSTILE_MKDIR("in/../..");
	HOSTILE_OPEN_DIR("..");
	HOSTILE_OPEN_DIR("/");
	HOSTILE_OPEN_DIR(".");

	/* a regular file used as a directory */
	T_EXPECT(pxfer_path_open_parent(rootfd, "file/x", 1,
					&(const char *){ NULL }) == -ENOTDIR,
		 "file/x");
	T_EXPECT(pxfer_path_mkdir(rootfd, "file/y", 0755) == -ENOTDIR,
		 "mkdir file/y");
	T_EXPECT(pxfer_path_mkdir(rootfd, "file", 0755) == -ENOTDIR,
		 "mkdir file");
	T_EXPECT(pxfer_path_open_dir(rootfd, "file") == -ENOTDIR,
		 "open_dir file");
	nhostile += 4;
	check_outside(__LINE__);
}

static int same_file(int fd, const char *rel)
{
	struct stat a, b;
	char p[PATH_MAX];

	at_top(rel, p);
	return fstat(fd, &a) == 0 && stat(p, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void test_good_fs(void)
{
	const char *base = NULL;
	struct stat st;
	char p[PATH_MAX];
	int fd, f;

	/* missing parents without create */
	fd = pxfer_path_open_parent(rootfd, "no/such/f", 0, &base);
	T_EXPECT(fd == -ENOENT, "open_parent no/such/f: %d", fd);
	T_EXPECT(pxfer_path_open_dir(rootfd, "nope") == -ENOENT, "nope");

	/* nested missing parents are created, inside */
	fd = pxfer_path_open_parent(rootfd, "n1/n2/n3/f", 1, &base);
	T_EXPECT(fd >= 0, "open_parent n1/n2/n3/f: %d", fd);
	if (fd >= 0) {
		T_EXPECT(base && !strcmp(base, "f"), "base %s", base);
		T_EXPECT(same_file(fd, "n1/n2/n3"), "wrong parent");
		f = openat(fd, base, O_WRONLY | O_CREAT | O_EXCL, 0644);
		T_EXPECT(f >= 0, "create f");
		if (f >= 0)
			close(f);
		close(fd);
	}
	T_EXPECT(exists("n1/n2/n3/f"), "n1/n2/n3/f missing");
	at_top("n1/n2", p);
	T_EXPECT(stat(p, &st) == 0 && S_ISDIR(st.st_mode), "n1/n2 not a dir");

	/* an existing parent, and a top-level name */
	fd = pxfer_path_open_parent(rootfd, "n1/n2/g", 0, &base);
	T_EXPECT(fd >= 0 && same_file(fd, "n1/n2"), "open_parent n1/n2/g");
	if (fd >= 0)
		close(fd);
	fd = pxfer_path_open_parent(rootfd, "top-level", 0, &base);
	T_EXPECT(fd >= 0 && same_file(fd, "."), "open_parent top-level");
	T_EXPECT(base && !strcmp(base, "top-level"), "base %s", base);
	if (fd >= 0)
		close(fd);

	/* mkdir -p, twice */
	T_EXPECT(pxfer_path_mkdir(rootfd, "m1/m2 x/\xc3\xa9", 0700) == 1,
		 "mkdir m1/m2 x/e: made");
	T_EXPECT(pxfer_path_mkdir(rootfd, "m1/m2 x/\xc3\xa9", 0700) == 0,
		 "mkdir again: there already");
	T_EXPECT(pxfer_path_mkdir(rootfd, "m1", 0755) == 0, "mkdir m1");
	at_top("m1/m2 x/\xc3\xa9", p);
	T_EXPECT(stat(p, &st) == 0 && S_ISDIR(st.st_mode), "m1/.. not a dir");

	fd = pxfer_path_open_dir(rootfd, "m1/m2 x");
	T_EXPECT(fd >= 0 && same_file(fd, "m1/m2 x"), "open_dir m1/m2 x");
	if (fd >= 0)
		close(fd);
	fd = pxfer_path_open_dir(rootfd, "");
	T_EXPECT(fd >= 0 && same_file(fd, "."), "open_dir \"\"");
	if (fd >= 0)
		close(fd);
	check_outside(__LINE__);
}

/*
 * A mount point inside DIR is not crossed (RESOLVE_NO_XDEV). Needs a mount
 * namespace, so it runs in a child and is skipped where that is refused.
 */
static int xdev_child(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	int fd;

	t_failures = 0;
	at_top("mnt", p);
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("none", p, "tmpfs", 0, NULL) < 0)
		return T_SKIP;
	/* the old descriptor still sees the tree of the parent's namespace */
	close(rootfd);
	rootfd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	T_EXPECT(rootfd >= 0, "reopen %s", top);
	at_top("mnt/sub", p);
	T_EXPECT(mkdir(p, 0755) == 0, "mkdir mnt/sub");
	fd = pxfer_path_open_parent(rootfd, "mnt/x", 1, &(const char *){ 0 });
	T_EXPECT(fd == -EXDEV, "open_parent mnt/x: %d", fd);
	fd = pxfer_path_open_parent(rootfd, "mnt/sub/x", 0,
				    &(const char *){ 0 });
	T_EXPECT(fd == -EXDEV, "open_parent mnt/sub/x: %d", fd);
	fd = pxfer_path_mkdir(rootfd, "mnt/y/z", 0755);
	T_EXPECT(fd == -EXDEV, "mkdir mnt/y/z: %d", fd);
	fd = pxfer_path_open_dir(rootfd, "mnt");
	T_EXPECT(fd == -EXDEV, "open_dir mnt: %d", fd);
	/* a bind mount of the same filesystem is another mount too */
	at_top("in", p);
	at_top("bind", q);
	if (mkdir(q, 0755) < 0 || mount(p, q, NULL, MS_BIND, NULL) < 0)
		return T_SKIP;
	fd = pxfer_path_open_parent(rootfd, "bind/sub/x", 1,
				    &(const char *){ 0 });
	T_EXPECT(fd == -EXDEV, "open_parent bind/sub/x: %d", fd);
	fd = pxfer_path_open_dir(rootfd, "bind");
	T_EXPECT(fd == -EXDEV, "open_dir bind: %d", fd);
	return t_result();
}

static void test_xdev(const char *name)
{
	char p[PATH_MAX];
	pid_t pid;
	int status = 0;

	at_top("mnt", p);
	T_EXPECT(mkdir(p, 0755) == 0, "mkdir mnt");
	pid = fork();
	if (pid == 0)
		exit(xdev_child());
	T_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid &&
		 WIFEXITED(status), "%s: xdev child", name);
	if (WEXITSTATUS(status) == T_SKIP)
		fprintf(stderr, "%s: no mount namespace, xdev case skipped\n",
			name);
	else
		T_EXPECT(WEXITSTATUS(status) == 0, "%s: xdev case failed",
			 name);
	nhostile += 6;
}

static int have_openat2(void)
{
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY };
	long fd = syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));

	if (fd >= 0)
		close(fd);
	return fd >= 0 || errno != ENOSYS;
}

/*
 * Where openat2 fails with ENOSYS (as under a seccomp filter that does not
 * know it), the fallback is taken without being asked for.
 */
static int enosys_child(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = f };
	int fd;

	t_failures = 0;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return T_SKIP;
	pxfer_path_force_fallback(0);
	T_EXPECT(have_openat2() == 0, "openat2 still there");
	fd = pxfer_path_open_parent(rootfd, "lnk/sub/x", 1,
				    &(const char *){ 0 });
	T_EXPECT(refused(fd), "enosys: lnk/sub/x: %d", fd);
	fd = pxfer_path_mkdir(rootfd, "esc/y", 0755);
	T_EXPECT(refused(fd), "enosys: esc/y: %d", fd);
	fd = pxfer_path_mkdir(rootfd, "e1/e2", 0755);
	T_EXPECT(fd == 1 && exists("e1/e2"), "enosys: mkdir e1/e2: %d", fd);
	fd = pxfer_path_open_dir(rootfd, "e1/e2");
	T_EXPECT(fd >= 0, "enosys: open_dir e1/e2: %d", fd);
	check_outside(__LINE__);
	return t_result();
}

static void test_enosys(void)
{
	int status = 0;
	pid_t pid;

	T_EXPECT(mkdir(top, 0755) == 0, "enosys: mkdir %s", top);
	rootfd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	setup_tree();
	pid = fork();
	if (pid == 0)
		exit(enosys_child());
	T_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid &&
		 WIFEXITED(status), "enosys child");
	if (WEXITSTATUS(status) == T_SKIP)
		fprintf(stderr, "no seccomp: ENOSYS case skipped\n");
	else
		T_EXPECT(WEXITSTATUS(status) == 0, "ENOSYS case failed");
	close(rootfd);
	rootfd = -1;
	t_rm_rf_at(AT_FDCWD, top);
}

static void run_fs(const char *name)
{
	T_EXPECT(mkdir(top, 0755) == 0, "%s: mkdir %s", name, top);
	rootfd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	T_EXPECT(rootfd >= 0, "%s: open %s", name, top);
	setup_tree();
	test_hostile_fs();
	test_good_fs();
	test_xdev(name);
	close(rootfd);
	rootfd = -1;
	t_rm_rf_at(AT_FDCWD, top);
}

int main(void)
{
	int before;

	test_check();
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(top, sizeof(top), "%s/dir", tmp);
	snprintf(out, sizeof(out), "%s/outside", tmp);
	T_EXPECT(mkdir(out, 0755) == 0, "mkdir %s", out);

	before = nhostile;
	if (have_openat2()) {
		fprintf(stderr, "with openat2\n");
		run_fs("openat2");
	} else {
		fprintf(stderr, "openat2 missing: fallback only\n");
	}
	fprintf(stderr, "with the fallback\n");
	pxfer_path_force_fallback(1);
	run_fs("fallback");
	pxfer_path_force_fallback(0);
	test_enosys();
	fprintf(stderr, "%d hostile cases (%d on the filesystem)\n", nhostile,
		nhostile - before);
	T_EXPECT(nhostile >= 20, "only %d hostile cases", nhostile);

	t_rm_rf_at(AT_FDCWD, tmp);
	return t_result();
}
