/* SPDX-License-Identifier: MIT */
/*
 * fileend_test: the sender's ended files (src/send/fileend.c), between a
 * real scheduler and a control channel over a socketpair.
 *
 *  - every file the scheduler ended gets one FILE_END, in the order they
 *    ended, with its id and the bytes sent, and is closed;
 *  - a file that changed after it was announced ends with
 *    PXFER_CODE_CHANGED; one given up after an error ends with that error
 *    and is not read again;
 *  - with --verify, FILE_END carries the digest of the whole file (of
 *    nothing for an empty file closed early); without, no digest;
 *  - a flush with nothing ended queues nothing.
 */
#include <stdint.h>
#include <sys/socket.h>

#include "core/digest.h"
#include "engine/ctrl.h"
#include "engine/fail.h"
#include "send/fileend.h"
#include "test.h"
#include "sockconn.h"

#define KiB	1024u

static const char *tmpdir;

struct pair {
	struct sock_conn ca, cb;
	struct pxfer_ctrl a, b;
};

static void pair_open(struct pair *p)
{
	int sv[2];

	memset(p, 0, sizeof(*p));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		perror("socketpair");
		exit(1);
	}
	p->ca.conn.ops = &sock_ops;
	p->ca.fd = sv[0];
	p->cb.conn.ops = &sock_ops;
	p->cb.fd = sv[1];
	if (pxfer_ctrl_init(&p->a, &p->ca.conn) ||
	    pxfer_ctrl_init(&p->b, &p->cb.conn)) {
		fprintf(stderr, "pxfer_ctrl_init failed\n");
		exit(1);
	}
}

static void pair_close(struct pair *p)
{
	pxfer_ctrl_release(&p->a);
	pxfer_ctrl_release(&p->b);
	close(p->ca.fd);
	close(p->cb.fd);
}

/* the next message that arrived on b: 1, or 0 when none */
static int next_msg(struct pair *p, struct pxfer_msg *m)
{
	if (pxfer_ctrl_flush(&p->a) || pxfer_ctrl_pending(&p->a))
		return 0;
	pxfer_ctrl_fill(&p->b);
	return pxfer_ctrl_next(&p->b, m) == 1;
}

/* a file of @size bytes of a pattern, announced as it is now (id @id) */
static void file_make(struct pxfer_sfile *f, uint64_t id, uint32_t size)
{
	uint8_t buf[4 * KiB];

	memset(f, 0, sizeof(*f));
	f->id = id;
	f->fd = t_tmpfile(tmpdir);
	f->size = size;
	f->src = "test";
	for (uint32_t off = 0; off < size; off += sizeof(buf)) {
		uint32_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		for (uint32_t i = 0; i < n; i++)
			buf[i] = (uint8_t)(id * 31 + off + i);
		if (pwrite(f->fd, buf, n, off) != (ssize_t)n) {
			perror("pwrite");
			exit(1);
		}
	}
	if (fstat(f->fd, &f->st)) {
		perror("fstat");
		exit(1);
	}
}

/* plan and send everything; segments of file @bad given up with EIO */
static void send_all(struct pxfer_sched *s, struct pxfer_sfile *bad)
{
	struct pxfer_plan p;

	while (pxfer_sched_next(s, &p))
		for (unsigned int i = 0; i < p.nseg; i++)
			pxfer_sched_done(s, p.seg[i].f, p.seg[i].len,
					 p.seg[i].f == bad ? EIO : 0);
}

static void digest_of(int fd, uint64_t size, uint8_t *out)
{
	struct pxfer_digest d;

	if (pxfer_digest_file(fd, size, 0, &d)) {
		fprintf(stderr, "cannot hash a test file\n");
		exit(1);
	}
	pxfer_digest_wire(out, &d);
}

static void test_ends(int verify)
{
	static const uint8_t zero[PXFER_DIGEST_LEN];
	uint8_t want0[PXFER_DIGEST_LEN], empty[PXFER_DIGEST_LEN];
	struct pxfer_sfile f[4];
	struct pxfer_fileend fe;
	struct pxfer_sched s;
	struct pxfer_fail fail;
	struct pxfer_msg m;
	struct pair p;
	int fd0;

	pair_open(&p);
	pxfer_fail_init(&fail, -1);
	T_EXPECT(pxfer_sched_init(&s, 64 * KiB, 4) == 0, "sched init");
	pxfer_fileend_init(&fe, &s, &p.a, &fail, verify);

	file_make(&f[0], 10, 100 * KiB);	/* unchanged */
	file_make(&f[1], 11, 10 * KiB);		/* grows once sent */
	file_make(&f[2], 12, 5 * KiB);		/* a read fails */
	file_make(&f[3], 13, 0);		/* empty: closed early */
	fd0 = dup(f[0].fd);
	digest_of(fd0, 100 * KiB, want0);
	digest_of(-1, 0, empty);
	close(f[3].fd);
	f[3].fd = -1;

	/* nothing ended yet: nothing queued */
	pxfer_fileend_flush(&fe);
	T_EXPECT(pxfer_ctrl_pending(&p.a) == 0, "queued with nothing ended");

	/* the empty file ends at once (the coordinator does that) */
	f[3].ended = 1;
	pxfer_fileend_one(&fe, &f[3]);
	T_EXPECT(next_msg(&p, &m) && m.type == PXFER_MSG_FILE_END &&
		 m.u.end.id == 13 && !m.u.end.code && !m.u.end.bytes,
		 "FILE_END of the empty file");
	T_EXPECT(!memcmp(m.u.end.digest, verify ? empty : zero,
			 PXFER_DIGEST_LEN), "the empty file's digest");

	for (int i = 0; i < 3; i++)
		pxfer_sched_add(&s, &f[i]);
	send_all(&s, &f[2]);
	/* file 1 grows after it was sent, before it ends */
	T_EXPECT(pwrite(f[1].fd, "x", 1, 10 * KiB) == 1, "grow file 1");
	pxfer_fileend_flush(&fe);
	for (int i = 0; i < 3; i++)
		T_EXPECT(f[i].fd == -1, "file %d left open", i);

	for (int n = 0; n < 3; n++) {
		if (!next_msg(&p, &m) || m.type != PXFER_MSG_FILE_END) {
			T_EXPECT(0, "FILE_END %d of 3 missing", n + 1);
			break;
		}
		switch (m.u.end.id) {
		case 10:
			T_EXPECT(!m.u.end.code && m.u.end.bytes == 100 * KiB,
				 "file 10: code %u, %llu bytes", m.u.end.code,
				 (unsigned long long)m.u.end.bytes);
			T_EXPECT(!memcmp(m.u.end.digest, verify ? want0 : zero,
					 PXFER_DIGEST_LEN), "file 10's digest");
			break;
		case 11:
			T_EXPECT(m.u.end.code == PXFER_CODE_CHANGED &&
				 m.u.end.bytes == 10 * KiB,
				 "file 11 (changed): code %u, %llu bytes",
				 m.u.end.code, (unsigned long long)m.u.end.bytes);
			break;
		case 12:
			T_EXPECT(m.u.end.code == EIO && !m.u.end.bytes &&
				 !memcmp(m.u.end.digest, zero, PXFER_DIGEST_LEN),
				 "file 12 (failed): code %u, %llu bytes",
				 m.u.end.code, (unsigned long long)m.u.end.bytes);
			break;
		default:
			T_EXPECT(0, "FILE_END for unknown id %llu",
				 (unsigned long long)m.u.end.id);
		}
	}
	T_EXPECT(!next_msg(&p, &m), "a FILE_END too many");
	pxfer_fileend_flush(&fe);
	T_EXPECT(pxfer_ctrl_pending(&p.a) == 0, "queued twice");
	T_EXPECT(!pxfer_failed(&fail), "the session failed");

	close(fd0);
	pxfer_sched_release(&s);
	pxfer_fail_release(&fail);
	pair_close(&p);
}

int main(void)
{
	tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	test_ends(0);
	test_ends(1);
	return t_result();
}
