/* SPDX-License-Identifier: MIT */
/*
 * rfile_compare_test: --checksum on the receiver (src/recv/rcheck.c,
 * src/recv/rfile.c): a file that is there is compared off the
 * coordinator, and nothing is created before the comparison says so.
 *
 *  - a FILE with PXFER_FILE_CHECKSUM for a file of its size that is
 *    there: create answers 2 with a whole-file job, and creates nothing
 *    (no temporary name, no partial, the file untouched); the job, run
 *    on a check pool, and pxfer_rfile_compared: the same digest, SAME,
 *    with the sender's mode, nothing created; another digest, the FILE
 *    back without CHECKSUM, and create then makes the file (NONE);
 *  - an empty file is compared at once (no job); a file of another size
 *    is not compared;
 *  - a FILE whose digest follows (PXFER_FILE_SUM_FOLLOWS) is held,
 *    nothing looked at; unhold gives it back with its digest, and drop
 *    of a held one (a session that ends first) releases it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "recv/rfile.h"
#include "test.h"

static char tmp[] = "/tmp/pxfer-rcompare-XXXXXX";
static int rootfd = -1;

#define SIZE	(3u << 20)	/* in the partial store when created */
#define MTIME	1500000000

static uint8_t data[SIZE];

static void file_msg(struct pxfer_file *f, uint64_t id, const char *path,
		     uint64_t size, uint8_t flags, const uint8_t *bytes)
{
	struct pxfer_digest d;
	int fd;

	memset(f, 0, sizeof(*f));
	f->id = id;
	f->type = PXFER_FT_REG;
	f->mode = 0640;
	f->size = size;
	f->flags = flags;
	f->mtime_sec = MTIME;
	f->path_len = strlen(path);
	memcpy(f->path, path, f->path_len + 1);
	if (!(flags & PXFER_FILE_CHECKSUM) || (flags & PXFER_FILE_SUM_FOLLOWS))
		return;
	/* the digest of @bytes, as the sender would find it */
	fd = t_tmpfile("/tmp");
	if (size && pwrite(fd, bytes, size, 0) != (ssize_t)size) {
		fprintf(stderr, "pwrite: %m\n");
		exit(1);
	}
	T_EXPECT(!pxfer_digest_file(fd, size, 0, &d), "digest of the source");
	pxfer_digest_wire(f->digest, &d);
	close(fd);
}

static void put_file(const char *path, const uint8_t *bytes, size_t len)
{
	int fd = openat(rootfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (len && write(fd, bytes, len) != (ssize_t)len)) {
		fprintf(stderr, "cannot write %s: %m\n", path);
		exit(1);
	}
	close(fd);
}

/* entries in the top directory and the store, but for "old", "e0" and
 * the store's own */
static int others(void)
{
	char cmd[256];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd),
		 "find %s -mindepth 1 ! -name old ! -name e0 ! -path '*/.pxfer' ! -path '*/.pxfer/partial' ! -name '*.lock' ! -path '*/.pxfer/key'",
		 tmp);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(cmd, sizeof(cmd), p))
		n++, fprintf(stderr, "    found %s", cmd);
	pclose(p);
	return n;
}

/* run @j on a pool of its own, and wait for it */
static void run_job(struct pxfer_check_job *j)
{
	struct pxfer_check c;
	struct pxfer_check_job *got = NULL;

	T_EXPECT(!pxfer_check_init(&c, 1, -1), "init");
	T_EXPECT(!pxfer_check_submit(&c, j), "submit");
	for (int i = 0; i < 5000 && !got; i++) {
		got = pxfer_check_reap(&c);
		if (!got)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	T_EXPECT(got == j, "the job is done");
	pxfer_check_release(&c);
}

static void test_compare(void)
{
	static struct pxfer_file f, back;
	struct pxfer_file_ok ok;
	struct pxfer_rfiles r;
	struct pxfer_rfile *rf;
	struct pxfer_err what = { 0 };
	struct stat st;
	int ret;

	for (size_t i = 0; i < SIZE; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 11);
	put_file("old", data, SIZE);
	put_file("e0", NULL, 0);
	T_EXPECT(!pxfer_rfiles_init(&r, rootfd, "", 0, 16, 0, 07777), "init");
	pxfer_rfiles_probe(&r);

	/* the same content */
	file_msg(&f, 1, "old", SIZE, PXFER_FILE_RESUME | PXFER_FILE_CHECKSUM, data);
	ret = pxfer_rfile_create(&r, &f, &what, &ok);
	rf = pxfer_rfile_get(&r, 1);
	T_EXPECT(ret == 2 && rf->check && rf->check->whole &&
		 rf->wait == PXFER_WAIT_SAME, "compared first: %d", ret);
	T_EXPECT(others() == 0, "nothing created while it is compared");
	run_job(rf->check);
	T_EXPECT(pxfer_rfile_compared(&r, 1, &back, &ok) == 1 &&
		 ok.state == PXFER_HAVE_SAME && ok.id == 1, "the same: state %d",
		 ok.state);
	T_EXPECT(back.size == SIZE && !strcmp(back.path, "old") &&
		 back.mtime_sec == MTIME, "its FILE back");
	T_EXPECT(!rf->path && !rf->wait && !rf->check, "forgotten");
	T_EXPECT(!fstatat(rootfd, "old", &st, 0) && (st.st_mode & 07777) == 0640 &&
		 st.st_mtim.tv_sec != MTIME, "the sender's mode, its time kept: %o",
		 st.st_mode & 07777);
	T_EXPECT(others() == 0, "nothing created");

	/* another content of the same size */
	data[SIZE / 2] ^= 1;
	file_msg(&f, 2, "old", SIZE, PXFER_FILE_RESUME | PXFER_FILE_CHECKSUM, data);
	data[SIZE / 2] ^= 1;
	ret = pxfer_rfile_create(&r, &f, &what, &ok);
	rf = pxfer_rfile_get(&r, 2);
	T_EXPECT(ret == 2 && others() == 0, "compared first, nothing created");
	run_job(rf->check);
	T_EXPECT(rf->check->bad == 1, "the job found it different");
	T_EXPECT(pxfer_rfile_compared(&r, 2, &back, &ok) == 0, "different");
	T_EXPECT(!(back.flags & PXFER_FILE_CHECKSUM) &&
		 (back.flags & PXFER_FILE_RESUME), "its FILE back, to create");
	T_EXPECT(others() == 0, "nothing created before create");
	ret = pxfer_rfile_create(&r, &back, &what, &ok);
	T_EXPECT(ret == 0 && ok.state == PXFER_HAVE_NONE, "created: %d, state %d",
		 ret, ok.state);
	T_EXPECT(others() > 0, "now it is");
	pxfer_rfile_drop(&r, 2, PXFER_DROP_DISCARD);

	/* another size: not compared; an empty file: compared at once */
	file_msg(&f, 3, "old", SIZE - 1, PXFER_FILE_CHECKSUM, data);
	T_EXPECT(pxfer_rfile_create(&r, &f, &what, &ok) == 0 &&
		 ok.state == PXFER_HAVE_NONE, "another size: created");
	pxfer_rfile_drop(&r, 3, PXFER_DROP_DISCARD);
	file_msg(&f, 4, "e0", 0, PXFER_FILE_CHECKSUM, data);
	T_EXPECT(pxfer_rfile_create(&r, &f, &what, &ok) == 0 &&
		 ok.state == PXFER_HAVE_SAME && !pxfer_rfile_get(&r, 4)->check,
		 "an empty file: the same at once");

	/* a FILE whose digest follows */
	file_msg(&f, 5, "old", SIZE, PXFER_FILE_CHECKSUM | PXFER_FILE_SUM_FOLLOWS, data);
	T_EXPECT(!pxfer_rfile_hold(&r, &f), "held");
	rf = pxfer_rfile_get(&r, 5);
	T_EXPECT(rf->wait == PXFER_WAIT_SUM && rf->fd < 0 && !rf->check, "waits");
	file_msg(&f, 5, "old", SIZE, PXFER_FILE_CHECKSUM, data);
	pxfer_rfile_unhold(&r, 5, f.digest, &back);
	T_EXPECT(!rf->path && !rf->wait, "forgotten");
	T_EXPECT(back.flags == PXFER_FILE_CHECKSUM && back.size == SIZE &&
		 back.mode == 0640 && !memcmp(back.digest, f.digest, PXFER_DIGEST_LEN) &&
		 !strcmp(back.path, "old"), "its FILE back, with its digest");
	ret = pxfer_rfile_create(&r, &back, &what, &ok);
	T_EXPECT(ret == 2, "then compared: %d", ret);
	pxfer_rfile_drop(&r, 5, PXFER_DROP_KEEP);	/* its job never ran */
	file_msg(&f, 6, "x", 10, PXFER_FILE_CHECKSUM | PXFER_FILE_SUM_FOLLOWS, data);
	T_EXPECT(!pxfer_rfile_hold(&r, &f), "held");
	pxfer_rfiles_release(&r);	/* drops it, and what is left */
	T_EXPECT(others() == 0, "nothing left");
}

int main(void)
{
	if (sodium_init() < 0) {
		fprintf(stderr, "cannot initialise libsodium\n");
		return 1;
	}
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	rootfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		perror(tmp);
		return 1;
	}
	test_compare();
	close(rootfd);
	t_rm_rf_at(AT_FDCWD, tmp);
	return t_result();
}
