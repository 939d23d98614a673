/* SPDX-License-Identifier: MIT */
/*
 * ctrl_test: the buffered control channel (src/ctrl.c) over a socketpair,
 * through a minimal transport written here (non-blocking send and recv on
 * the socket, nothing else).
 *
 *  - several threads queue at once while the coordinator flushes, and the
 *    other side fills and decodes: every message arrives intact, each
 *    thread's in the order it queued them; queueing from another thread
 *    wakes the coordinator, queueing from the coordinator does not;
 *  - a stream cut at every byte boundary is reassembled, and so is one fed
 *    a byte at a time;
 *  - malformed frames give -EPROTO (after the good frames before them);
 *  - EOF gives -EPIPE, and what arrived before it can still be read;
 *  - flush never blocks when the peer does not read: it returns 0 with
 *    bytes still pending, and they all go once the peer reads;
 *  - a message the encoder refuses is not queued; a flush to a closed peer
 *    reports the error;
 *  - backpressure: a side that answers every message and pauses reading
 *    above read_pause unsent bytes keeps its replies bounded however much
 *    a peer that reads nothing sends it, does not wake for that peer's
 *    bytes while paused, calls the peer stuck after PXFER_IDLE_SECS, and
 *    answers everything once the peer reads (no deadlock).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/ctrl.h"
#include "core/proto.h"
#include "test.h"
#include "sockconn.h"

#define FRAME_MAX	(PXFER_HDR_LEN + PXFER_MSG_MAX)

/* ---- a pair of control channels over a socketpair (sockconn.h) ------- */

/* a connected pair: a ctrl on each end */
struct pair {
	struct sock_conn ca, cb;
	struct pxfer_ctrl a, b;
};

static void pair_open(struct pair *p, int sndbuf)
{
	int sv[2];

	memset(p, 0, sizeof(*p));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		perror("socketpair");
		exit(1);
	}
	if (sndbuf) {
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof(sndbuf));
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
	if (p->ca.fd >= 0)
		close(p->ca.fd);
	if (p->cb.fd >= 0)
		close(p->cb.fd);
}

/* ---- messages ---------------------------------------------------------- */

/* a digest derived from (th, seq): never all zero */
static void make_digest(uint8_t *d, unsigned int th, unsigned int seq)
{
	for (unsigned int i = 0; i < PXFER_DIGEST_LEN; i++)
		d[i] = 1 + (th * 7 + seq * 13 + i) % 255;
}

/* what the receiver holds of a file: each state in turn, and for a
 * partial one run or more, often PXFER_RUNS_MAX (the largest FILE_OK) */
static void make_file_ok(unsigned int th, unsigned int seq,
			 struct pxfer_file_ok *k)
{
	unsigned int n = seq / 8;

	k->id = th;
	k->state = n % (PXFER_HAVE_MAX + 1);
	if (k->state != PXFER_HAVE_PART)
		return;
	k->nrun = n % 3 ? 1 + n % PXFER_RUNS_MAX : PXFER_RUNS_MAX;
	for (unsigned int i = 0; i < k->nrun; i++) {
		k->run[i].off = (uint64_t)i << 30 | seq;
		k->run[i].len = 1 + (seq + i) % 65536;
		k->run[i].unit = 1u << (12 + i % 15);
		k->held += k->run[i].len;
	}
	make_digest(k->digest, th, seq);
}

/* message @seq of producer @th: a mix of types and sizes, all derivable
 * again from (th, seq) */
static void make_msg(unsigned int th, unsigned int seq, struct pxfer_msg *m)
{
	memset(m, 0, sizeof(*m));
	switch (seq % 4) {
	case 0:
		m->type = PXFER_MSG_FILE_END;
		m->u.end.id = th;
		m->u.end.bytes = (uint64_t)seq << 20 | 0xabc;
		m->u.end.code = seq % 7;
		if (seq % 3)
			make_digest(m->u.end.digest, th, seq);
		break;
	case 1:
		m->type = PXFER_MSG_CREDIT;
		m->u.credit.worker = th;
		m->u.credit.count = 1 + seq % PXFER_CREDIT_MAX;
		for (unsigned int i = 0; i < m->u.credit.count; i++)
			m->u.credit.slots[i] = (seq * 31 + i) % PXFER_SLOTS_MAX;
		break;
	case 2: {
		struct pxfer_file *f = &m->u.file;

		m->type = PXFER_MSG_FILE;
		f->id = (uint64_t)th << 32 | seq;
		f->type = PXFER_FT_REG;
		/* a range has fields of its own (proto_test's) */
		f->flags = seq % (PXFER_FILE_FLAGS + 1) & ~PXFER_FILE_RANGE;
		if (f->flags & PXFER_FILE_TRUST)	/* only with RESUME */
			f->flags |= PXFER_FILE_RESUME;
		/* a digest that follows goes with CHECKSUM, in FILE_SUM */
		if (!(f->flags & PXFER_FILE_CHECKSUM))
			f->flags &= ~PXFER_FILE_SUM_FOLLOWS;
		if ((f->flags & PXFER_FILE_CHECKSUM) &&
		    !(f->flags & PXFER_FILE_SUM_FOLLOWS))
			make_digest(f->digest, th, seq);
		f->mode = 0644;
		f->size = (uint64_t)seq * 4099;
		f->mtime_sec = -(int64_t)seq;
		f->mtime_nsec = seq * 1000 % 1000000000;
		/* mostly short paths, now and then the longest */
		f->path_len = seq % 50 == 2 ? PXFER_PATH_MAX : 1 + (seq * 37) % 300;
		for (unsigned int i = 0; i < f->path_len; i++)
			f->path[i] = 'a' + (seq + i + th) % 26;
		break;
	}
	case 3:
		if (seq % 8 == 3) {
			m->type = PXFER_MSG_FILE_OK;
			make_file_ok(th, seq, &m->u.ok);
			break;
		}
		m->type = PXFER_MSG_FILE_DONE;
		m->u.status.id = th;
		m->u.status.code = seq % 5;
		m->u.status.text_len = seq % (PXFER_TEXT_MAX + 1);
		for (unsigned int i = 0; i < m->u.status.text_len; i++)
			m->u.status.text[i] = 'A' + (seq * 3 + i) % 26;
		break;
	}
}

/* which producer sent @m */
static unsigned int msg_thread(const struct pxfer_msg *m)
{
	switch (m->type) {
	case PXFER_MSG_FILE_END:
		return m->u.end.id;
	case PXFER_MSG_CREDIT:
		return m->u.credit.worker;
	case PXFER_MSG_FILE:
		return m->u.file.id >> 32;
	case PXFER_MSG_FILE_OK:
		return m->u.ok.id;
	case PXFER_MSG_FILE_DONE:
		return m->u.status.id;
	}
	return ~0u;
}

/* Same message? Compared by their encodings, which cover every field. */
static int same_msg(const struct pxfer_msg *x, const struct pxfer_msg *y)
{
	static uint8_t bx[FRAME_MAX], by[FRAME_MAX];
	ssize_t nx = pxfer_msg_encode(bx, sizeof(bx), x);
	ssize_t ny = pxfer_msg_encode(by, sizeof(by), y);

	return nx > 0 && nx == ny && !memcmp(bx, by, nx);
}

static int wake_pending(struct pxfer_ctrl *c)
{
	struct pollfd p = { .fd = c->wake_fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_alarm(int sig)
{
	static const char msg[] = "blocked or spinning: gave up after the alarm\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(1);
}

/* ---- several producers ------------------------------------------------- */

#define PRODUCERS	4
#define PER_THREAD	3000

struct producer {
	pthread_t th;
	struct pxfer_ctrl *c;
	unsigned int idx;
	int err;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct pxfer_msg *m = malloc(sizeof(*m));

	if (!m)
		abort();
	for (unsigned int seq = 0; seq < PER_THREAD && !p->err; seq++) {
		make_msg(p->idx, seq, m);
		p->err = pxfer_ctrl_queue(p->c, m);
		if (seq % 64 == 0)
			sched_yield();
	}
	free(m);
	return NULL;
}

/* one message, queued from a thread other than the coordinator */
static void *queue_one(void *arg)
{
	struct producer *p = arg;
	struct pxfer_msg m;

	make_msg(p->idx, 0, &m);
	p->err = pxfer_ctrl_queue(p->c, &m);
	return NULL;
}

static void test_producers(void)
{
	struct pair *pp = malloc(sizeof(*pp));
	struct producer prod[PRODUCERS];
	unsigned int next[PRODUCERS] = { 0 }, got = 0, bad = 0;
	struct pxfer_msg *m = malloc(sizeof(*m)), *want = malloc(sizeof(*want));
	double deadline = now_s() + 20;
	int ret, eof = 0, woke = 0;

	if (!pp || !m || !want)
		abort();
	pair_open(pp, 0);
	T_EXPECT(!wake_pending(&pp->a), "wake before anything was queued");
	for (unsigned int i = 0; i < PRODUCERS; i++) {
		prod[i].c = &pp->a;
		prod[i].idx = i;
		prod[i].err = 0;
		pthread_create(&prod[i].th, NULL, produce, &prod[i]);
	}
	/* the coordinator of side a, and side b's reader, in one loop */
	while (got < PRODUCERS * PER_THREAD && !bad && now_s() < deadline) {
		struct pollfd p[2] = {
			{ .fd = pp->a.wake_fd, .events = POLLIN },
			{ .fd = pp->cb.fd, .events = POLLIN },
		};

		poll(p, 2, 50);
		if (p[0].revents & POLLIN) {
			woke++;
			pxfer_ctrl_drain_wake(&pp->a);
		}
		ret = pxfer_ctrl_flush(&pp->a);
		T_EXPECT(ret == 0, "flush: %d", ret);
		ret = pxfer_ctrl_fill(&pp->b);
		if (ret == -EPIPE)
			eof = 1;
		T_EXPECT(ret == 0, "fill: %d", ret);
		while ((ret = pxfer_ctrl_next(&pp->b, m)) == 1) {
			unsigned int th = msg_thread(m);

			if (th >= PRODUCERS) {
				T_EXPECT(0, "message %u of unknown origin (type %u)",
					 got, m->type);
				bad = 1;
				break;
			}
			make_msg(th, next[th], want);
			if (!same_msg(m, want)) {
				T_EXPECT(0, "thread %u message %u garbled or out of order (type %u, want %u)",
					 th, next[th], m->type, want->type);
				bad = 1;
				break;
			}
			next[th]++;
			got++;
		}
		T_EXPECT(ret >= 0, "next: %d", ret);
		if (ret < 0 || eof)
			break;
	}
	for (unsigned int i = 0; i < PRODUCERS; i++) {
		pthread_join(prod[i].th, NULL);
		T_EXPECT(prod[i].err == 0, "producer %u: %d", i, prod[i].err);
		T_EXPECT(next[i] == PER_THREAD, "producer %u: %u of %u arrived",
			 i, next[i], PER_THREAD);
	}
	T_EXPECT(woke > 0, "the coordinator was never woken");
	T_EXPECT(pxfer_ctrl_pending(&pp->a) == 0, "%zu bytes left unsent",
		 pxfer_ctrl_pending(&pp->a));
	T_EXPECT(pxfer_ctrl_next(&pp->b, m) == 0, "an extra message");
	printf("producers: %u messages, %d wake-ups\n", got, woke);

	/* another thread queueing into an empty buffer wakes; drain clears */
	pxfer_ctrl_drain_wake(&pp->a);
	T_EXPECT(!wake_pending(&pp->a), "wake left after drain");
	prod[0].c = &pp->a;
	prod[0].idx = 0;
	prod[0].err = 0;
	pthread_create(&prod[0].th, NULL, queue_one, &prod[0]);
	pthread_join(prod[0].th, NULL);
	T_EXPECT(prod[0].err == 0, "queue from another thread: %d", prod[0].err);
	T_EXPECT(wake_pending(&pp->a), "queue into an empty buffer wakes");
	pxfer_ctrl_drain_wake(&pp->a);
	T_EXPECT(!wake_pending(&pp->a), "wake left after drain");
	T_EXPECT(pxfer_ctrl_flush(&pp->a) == 0, "flush");
	/* the coordinator itself flushes next turn: no wake-up to itself */
	make_msg(0, 0, want);
	T_EXPECT(pxfer_ctrl_queue(&pp->a, want) == 0, "queue");
	T_EXPECT(!wake_pending(&pp->a), "the coordinator woke itself");
	T_EXPECT(pxfer_ctrl_pending(&pp->a) > 0, "nothing queued");
	T_EXPECT(pxfer_ctrl_flush(&pp->a) == 0, "flush");

	/* the encoder's refusal: nothing queued */
	{
		size_t before = pxfer_ctrl_pending(&pp->a);

		memset(want, 0, sizeof(*want));
		want->type = PXFER_MSG_CREDIT;	/* count 0: invalid */
		ret = pxfer_ctrl_queue(&pp->a, want);
		T_EXPECT(ret == -EINVAL, "queue of an invalid message: %d", ret);
		want->type = PXFER_MSG_CHUNK;
		ret = pxfer_ctrl_queue(&pp->a, want);
		T_EXPECT(ret < 0, "queue of a CHUNK: %d", ret);
		T_EXPECT(pxfer_ctrl_pending(&pp->a) == before,
			 "refused messages left %zu bytes",
			 pxfer_ctrl_pending(&pp->a) - before);
	}
	pair_close(pp);
	free(pp);
	free(m);
	free(want);
}

/* ---- split frames ------------------------------------------------------- */

/* three frames of different sizes; @ends: where each frame ends */
static size_t stream_of(uint8_t *buf, size_t cap, struct pxfer_msg *ms,
			size_t *ends)
{
	size_t n = 0;

	make_msg(1, 2, &ms[0]);			/* FILE, longest path */
	make_msg(2, 5, &ms[1]);			/* CREDIT */
	make_msg(3, 0, &ms[2]);			/* FILE_END */
	for (int i = 0; i < 3; i++) {
		ssize_t k = pxfer_msg_encode(buf + n, cap - n, &ms[i]);

		if (k < 0)
			abort();
		n += k;
		ends[i] = n;
	}
	return n;
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k <= 0) {
			perror("write");
			exit(1);
		}
		p += k;
		n -= k;
	}
}

/* fill and take all whole messages into @got (at most 3 in all) */
static int take(struct pair *pp, struct pxfer_msg *got, int *ngot)
{
	int ret = pxfer_ctrl_fill(&pp->b);

	if (ret)
		return ret;
	while (*ngot < 3 && (ret = pxfer_ctrl_next(&pp->b, &got[*ngot])) == 1)
		(*ngot)++;
	return ret < 0 ? ret : 0;
}

static void test_split(void)
{
	static uint8_t buf[3 * FRAME_MAX];
	struct pxfer_msg *ms = calloc(3, sizeof(*ms));
	struct pxfer_msg *got = calloc(3, sizeof(*got));
	struct pair *pp = malloc(sizeof(*pp));
	size_t len, ends[3];
	unsigned int fails = 0;
	int ngot;

	if (!ms || !got || !pp)
		abort();
	len = stream_of(buf, sizeof(buf), ms, ends);
	pair_open(pp, 0);
	/* one pair for all cuts: the buffer carries over from cut to cut */
	for (size_t k = 1; k < len && fails < 5; k++) {
		ngot = 0;
		write_all(pp->ca.fd, buf, k);
		if (take(pp, got, &ngot)) {
			T_EXPECT(0, "cut at %zu: first half refused", k);
			fails++;
			continue;
		}
		write_all(pp->ca.fd, buf + k, len - k);
		if (take(pp, got, &ngot)) {
			T_EXPECT(0, "cut at %zu: second half refused", k);
			fails++;
			continue;
		}
		if (ngot != 3 || !same_msg(&got[0], &ms[0]) ||
		    !same_msg(&got[1], &ms[1]) || !same_msg(&got[2], &ms[2])) {
			T_EXPECT(0, "cut at %zu: %d messages, not the ones sent", k,
				 ngot);
			fails++;
		}
	}
	/* a byte at a time: each message comes out with its last byte */
	ngot = 0;
	for (size_t k = 0; k < len; k++) {
		int want = (k + 1 >= ends[0]) + (k + 1 >= ends[1]) +
			   (k + 1 >= ends[2]);

		write_all(pp->ca.fd, buf + k, 1);
		T_EXPECT(take(pp, got, &ngot) == 0, "byte %zu refused", k);
		if (ngot != want && fails++ < 5)
			T_EXPECT(0, "after %zu bytes: %d messages, want %d",
				 k + 1, ngot, want);
	}
	T_EXPECT(ngot == 3 && same_msg(&got[0], &ms[0]) &&
		 same_msg(&got[1], &ms[1]) && same_msg(&got[2], &ms[2]),
		 "byte at a time: %d messages", ngot);
	printf("split: %zu cuts of a %zu-byte stream\n", len - 1, len);
	pair_close(pp);
	free(pp);
	free(ms);
	free(got);
}

/* ---- malformed frames and EOF ------------------------------------------ */

static void put_hdr(uint8_t *b, uint16_t type, uint16_t flags, uint32_t len)
{
	b[0] = type >> 8;
	b[1] = type;
	b[2] = flags >> 8;
	b[3] = flags;
	b[4] = len >> 24;
	b[5] = len >> 16;
	b[6] = len >> 8;
	b[7] = len;
}

static void test_malformed(void)
{
	static const struct {
		const char *what;
		uint16_t type, flags;
		uint32_t len;
		unsigned int body;	/* bytes of body to send */
	} bad[] = {
		{ "type 0", 0, 0, 20, 20 },
		{ "unknown type", PXFER_MSG_TYPE_MAX + 1, 0, 20, 20 },
		{ "type 0xffff", 0xffff, 0, 0, 0 },
		{ "flags set", PXFER_MSG_FILE_END, 1, 20, 20 },
		{ "CHUNK on the control channel", PXFER_MSG_CHUNK, 0, 44, 44 },
		{ "body over the limit", PXFER_MSG_FILE, 0, PXFER_MSG_MAX + 1, 0 },
		{ "body length 4 GiB - 1", PXFER_MSG_FILE, 0, 0xffffffff, 0 },
		{ "FILE_END body too short", PXFER_MSG_FILE_END, 0, 35, 35 },
		{ "FILE_END body too long", PXFER_MSG_FILE_END, 0, 37, 37 },
		{ "FILE_OK body too short", PXFER_MSG_FILE_OK, 0, 34, 34 },
		{ "FILE_OK over its largest body", PXFER_MSG_FILE_OK, 0,
		  35 + 20 * PXFER_RUNS_MAX + 1, 0 },
		{ "CREDIT with count 0", PXFER_MSG_CREDIT, 0, 4, 4 },
	};
	uint8_t frame[64 + PXFER_HDR_LEN];
	struct pxfer_msg *m = malloc(sizeof(*m)), *good = malloc(sizeof(*good));
	struct pair *pp = malloc(sizeof(*pp));
	ssize_t gl;
	int ret;

	if (!m || !good || !pp)
		abort();
	make_msg(0, 4, good);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t gbuf[FRAME_MAX];

		pair_open(pp, 0);
		/* a good frame first: it is delivered, then the bad one fails */
		gl = pxfer_msg_encode(gbuf, sizeof(gbuf), good);
		write_all(pp->ca.fd, gbuf, gl);
		memset(frame, 0, sizeof(frame));
		put_hdr(frame, bad[i].type, bad[i].flags, bad[i].len);
		write_all(pp->ca.fd, frame, PXFER_HDR_LEN + bad[i].body);
		T_EXPECT(pxfer_ctrl_fill(&pp->b) == 0, "%s: fill", bad[i].what);
		ret = pxfer_ctrl_next(&pp->b, m);
		T_EXPECT(ret == 1 && same_msg(m, good),
			 "%s: the good frame before it: %d", bad[i].what, ret);
		ret = pxfer_ctrl_next(&pp->b, m);
		T_EXPECT(ret == -EPROTO, "%s: %d, want -EPROTO", bad[i].what, ret);
		pair_close(pp);
	}
	free(m);
	free(good);
	free(pp);
}

static void test_eof(void)
{
	struct pxfer_msg *m = malloc(sizeof(*m)), *w = malloc(sizeof(*w));
	struct pair *pp = malloc(sizeof(*pp));
	uint8_t buf[FRAME_MAX];
	ssize_t n;
	int ret;

	if (!m || !w || !pp)
		abort();
	/* nothing, then EOF */
	pair_open(pp, 0);
	T_EXPECT(pxfer_ctrl_fill(&pp->b) == 0, "fill with nothing to read");
	T_EXPECT(pxfer_ctrl_next(&pp->b, m) == 0, "next with nothing");
	close(pp->ca.fd);
	pp->ca.fd = -1;
	ret = pxfer_ctrl_fill(&pp->b);
	T_EXPECT(ret == -EPIPE, "fill at EOF: %d", ret);
	T_EXPECT(pxfer_ctrl_fill(&pp->b) == -EPIPE, "fill at EOF again");
	pair_close(pp);

	/* two messages, then EOF: both still readable */
	pair_open(pp, 0);
	make_msg(1, 1, w);
	T_EXPECT(pxfer_ctrl_queue(&pp->a, w) == 0, "queue");
	make_msg(1, 2, w);
	T_EXPECT(pxfer_ctrl_queue(&pp->a, w) == 0, "queue");
	T_EXPECT(pxfer_ctrl_flush(&pp->a) == 0 && !pxfer_ctrl_pending(&pp->a),
		 "flush");
	close(pp->ca.fd);
	pp->ca.fd = -1;
	ret = pxfer_ctrl_fill(&pp->b);
	T_EXPECT(ret == -EPIPE, "fill at EOF after data: %d", ret);
	make_msg(1, 1, w);
	T_EXPECT(pxfer_ctrl_next(&pp->b, m) == 1 && same_msg(m, w),
		 "first message before EOF");
	make_msg(1, 2, w);
	T_EXPECT(pxfer_ctrl_next(&pp->b, m) == 1 && same_msg(m, w),
		 "second message before EOF");
	T_EXPECT(pxfer_ctrl_next(&pp->b, m) == 0, "nothing after them");
	pair_close(pp);

	/* half a frame, then EOF */
	pair_open(pp, 0);
	make_msg(1, 2, w);
	n = pxfer_msg_encode(buf, sizeof(buf), w);
	write_all(pp->ca.fd, buf, n / 2);
	close(pp->ca.fd);
	pp->ca.fd = -1;
	T_EXPECT(pxfer_ctrl_fill(&pp->b) == -EPIPE, "EOF in a frame");
	T_EXPECT(pxfer_ctrl_next(&pp->b, m) == 0, "half a frame is no message");
	pair_close(pp);

	/* flush to a closed peer reports an error */
	pair_open(pp, 0);
	close(pp->cb.fd);
	pp->cb.fd = -1;
	make_msg(0, 0, w);
	T_EXPECT(pxfer_ctrl_queue(&pp->a, w) == 0, "queue");
	ret = pxfer_ctrl_flush(&pp->a);
	T_EXPECT(ret == -EPIPE || ret == -ECONNRESET,
		 "flush to a closed peer: %d", ret);
	pair_close(pp);
	free(m);
	free(w);
	free(pp);
}

/* ---- flush with a peer that does not read ------------------------------ */

#define STALL_MSGS	400

static void test_stall(void)
{
	struct pxfer_msg *m = malloc(sizeof(*m)), *w = malloc(sizeof(*w));
	struct pair *pp = malloc(sizeof(*pp));
	size_t pending, queued = 0;
	unsigned int got = 0, rounds = 0;
	double deadline;
	int ret;

	if (!m || !w || !pp)
		abort();
	pair_open(pp, 4096);
	/* about 1.7 MB: far more than the socket buffers hold */
	for (unsigned int i = 0; i < STALL_MSGS; i++) {
		make_msg(0, 2 + 100 * i, w);	/* FILE, longest path */
		T_EXPECT(pxfer_ctrl_queue(&pp->a, w) == 0, "queue %u", i);
		queued = pxfer_ctrl_pending(&pp->a);
	}
	ret = pxfer_ctrl_flush(&pp->a);
	pending = pxfer_ctrl_pending(&pp->a);
	T_EXPECT(ret == 0, "flush into a full socket: %d", ret);
	T_EXPECT(pending > 0 && pending < queued,
		 "flush sent some, not all: %zu of %zu pending", pending, queued);
	ret = pxfer_ctrl_flush(&pp->a);
	T_EXPECT(ret == 0 && pxfer_ctrl_pending(&pp->a) == pending,
		 "flush again: %d, %zu pending", ret, pxfer_ctrl_pending(&pp->a));
	/* now the peer reads: everything arrives, in order */
	deadline = now_s() + 20;
	while (got < STALL_MSGS && now_s() < deadline) {
		rounds++;
		ret = pxfer_ctrl_flush(&pp->a);
		if (ret) {
			T_EXPECT(0, "flush: %d", ret);
			break;
		}
		ret = pxfer_ctrl_fill(&pp->b);
		if (ret) {
			T_EXPECT(0, "fill: %d", ret);
			break;
		}
		while ((ret = pxfer_ctrl_next(&pp->b, m)) == 1) {
			make_msg(0, 2 + 100 * got, w);
			if (!same_msg(m, w)) {
				T_EXPECT(0, "message %u garbled", got);
				ret = -1;
				break;
			}
			got++;
		}
		if (ret < 0)
			break;
	}
	T_EXPECT(got == STALL_MSGS, "%u of %u messages arrived", got,
		 STALL_MSGS);
	T_EXPECT(pxfer_ctrl_pending(&pp->a) == 0, "%zu bytes still pending",
		 pxfer_ctrl_pending(&pp->a));
	printf("stall: %zu bytes queued, %zu left by the first flush, %u rounds\n",
	       queued, pending, rounds);
	pair_close(pp);
	free(m);
	free(w);
	free(pp);
}

/* ---- backpressure ------------------------------------------------------ */

#define BP_MSGS		3000
#define BP_PAUSE	4096

/* side b's answer to message @seq: a FILE_ERR with the longest text */
static void bp_reply(unsigned int seq, struct pxfer_msg *r)
{
	memset(r, 0, sizeof(*r));
	r->type = PXFER_MSG_FILE_ERR;
	r->u.status.id = seq;
	r->u.status.code = EINVAL;
	r->u.status.text_len = PXFER_TEXT_MAX;
	memset(r->u.status.text, 'r', PXFER_TEXT_MAX);
}

/* b's turn, as the receiver's coordinator: answer what it may read */
static int bp_answer(struct pair *pp, struct pxfer_msg *m, struct pxfer_msg *r,
		     unsigned int *answered, size_t *most)
{
	int ret = pxfer_ctrl_fill(&pp->b);

	while (!ret && (ret = pxfer_ctrl_next(&pp->b, m)) == 1) {
		bp_reply((*answered)++, r);
		ret = pxfer_ctrl_queue(&pp->b, r);
		if (pxfer_ctrl_pending(&pp->b) > *most)
			*most = pxfer_ctrl_pending(&pp->b);
	}
	return ret < 0 ? ret : pxfer_ctrl_flush(&pp->b);
}

static void test_backpressure(void)
{
	struct pxfer_msg *m = malloc(sizeof(*m)), *r = malloc(sizeof(*r));
	struct pair *pp = malloc(sizeof(*pp));
	unsigned int answered = 0, last = ~0u, same = 0, got = 0;
	size_t most = 0, reply_len;
	uint8_t buf[FRAME_MAX];
	double t0, deadline;
	int ret;

	if (!m || !r || !pp)
		abort();
	bp_reply(0, r);
	reply_len = pxfer_msg_encode(buf, sizeof(buf), r);
	pair_open(pp, 4096);
	pp->b.read_pause = BP_PAUSE;
	/* a sends everything and reads nothing: about 130 KB of FILE_END,
	 * about 830 KB of answers if b took them all */
	for (unsigned int i = 0; i < BP_MSGS; i++) {
		make_msg(0, 4 * i, m);
		T_EXPECT(pxfer_ctrl_queue(&pp->a, m) == 0, "queue %u", i);
	}
	deadline = now_s() + 20;
	while (same < 20 && now_s() < deadline) {
		T_EXPECT(pxfer_ctrl_flush(&pp->a) == 0, "a: flush");
		ret = bp_answer(pp, m, r, &answered, &most);
		T_EXPECT(ret == 0, "b: %d", ret);
		same = answered == last ? same + 1 : 0;
		last = answered;
	}
	T_EXPECT(pxfer_ctrl_paused(&pp->b),
		 "b does not pause (%zu bytes unsent)",
		 pxfer_ctrl_pending(&pp->b));
	T_EXPECT(answered < BP_MSGS,
		 "b answered all %u messages that nobody read", answered);
	T_EXPECT(most <= BP_PAUSE + reply_len,
		 "b's replies grew to %zu bytes, pause at %d", most, BP_PAUSE);
	T_EXPECT(pxfer_ctrl_next(&pp->b, m) == 0, "a message while paused");
	printf("backpressure: %u of %u answered before the pause, at most %zu bytes unsent\n",
	       answered, BP_MSGS, most);

	/* paused, b waits for room to send, not for a's bytes (which are
	 * there): no spinning */
	t0 = now_s();
	T_EXPECT(pxfer_ctrl_wait(&pp->b, -1, 300) == 0, "b: wait");
	T_EXPECT(now_s() - t0 > 0.2, "b woke after %.3f s while paused",
		 now_s() - t0);
	/* and a peer that takes nothing for so long is stuck, not silent */
	T_EXPECT(pxfer_ctrl_keepalive(&pp->b) == 0, "keepalive while paused");
	pp->b.last_tx -= PXFER_IDLE_SECS + 1;
	pp->b.last_rx -= PXFER_IDLE_SECS + 1;
	ret = pxfer_ctrl_keepalive(&pp->b);
	T_EXPECT(ret == -ENOBUFS, "keepalive after %d s paused: %d",
		 PXFER_IDLE_SECS + 1, ret);
	pp->b.last_tx += PXFER_IDLE_SECS + 1;

	/* now a reads: b resumes, and every message gets its answer */
	while ((answered < BP_MSGS || got < BP_MSGS) && now_s() < deadline) {
		ret = pxfer_ctrl_wait(&pp->a, -1, 10);
		T_EXPECT(ret == 0, "a: wait: %d", ret);
		ret = pxfer_ctrl_fill(&pp->a);
		while (!ret && (ret = pxfer_ctrl_next(&pp->a, m)) == 1) {
			bp_reply(got++, r);
			if (!same_msg(m, r)) {
				T_EXPECT(0, "answer %u garbled", got - 1);
				ret = -1;
			}
		}
		if (ret < 0)
			break;
		ret = pxfer_ctrl_wait(&pp->b, -1, 0);
		if (!ret)
			ret = bp_answer(pp, m, r, &answered, &most);
		T_EXPECT(ret == 0, "b: %d", ret);
		if (ret)
			break;
	}
	T_EXPECT(answered == BP_MSGS && got == BP_MSGS,
		 "%u answered, %u of them read, of %u", answered, got, BP_MSGS);
	T_EXPECT(most <= BP_PAUSE + reply_len,
		 "b's replies grew to %zu bytes, pause at %d", most, BP_PAUSE);
	pair_close(pp);
	free(m);
	free(r);
	free(pp);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	/* a flush or fill that blocks or spins fails the test, not hangs it */
	signal(SIGALRM, on_alarm);
	alarm(30);
	test_producers();
	test_split();
	test_malformed();
	test_eof();
	test_stall();
	test_backpressure();
	alarm(0);
	return t_result();
}
