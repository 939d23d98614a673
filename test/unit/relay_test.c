/* SPDX-License-Identifier: MIT */
/*
 * relay_test: a broadcast chain's forwarding from the ring
 * (src/engine/relay.c).
 *
 *  - chunks of a range nobody bound wait, up to PXFER_RELAY_UNBOUND_MAX
 *    of all of them; one more, and its entry is DEAD: all it held goes
 *    back, and what comes later is not taken;
 *  - bound and answered fresh, an entry is LIVE: what waited is handed
 *    out, in order, in pieces no larger than asked, to its consumer only;
 *    an item goes back once its last piece is done, not before;
 *  - answered not fresh (OFF): what waited goes back, and the partial's
 *    descriptor, given as the range completes, is the consumer's;
 *  - completing a LIVE or DONE entry takes the descriptor (closed); a
 *    DEAD one leaves it to the caller;
 *  - a LIVE range ends only when its producer says so (a sparse file's
 *    range brings fewer bytes than its length, or none): its consumer is
 *    woken and told once, after the last piece of what came is done;
 *    one the producer let go before it was complete is told failed, and
 *    an OFF one's descriptor is then -EIO;
 *  - a consumer that ends (detach) has its entries DEAD and what waited
 *    put back, but a piece out goes back only when done;
 *  - close nput back everything waiting; held counts what is out;
 *  - threads: one pushing, two taking and finishing: every item put back
 *    exactly once (run it under TSan too).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/relay.h"
#include "test.h"

#define NIT 64

static atomic_uint nput[NIT];
static struct pxfer_relay_item items[NIT];
static uint8_t mem[NIT * 100];

static void put(struct pxfer_relay_item *it)
{
	atomic_fetch_add(&nput[it->slot], 1);
}

static struct pxfer_relay_item *item(unsigned int i, struct pxfer_relay_ent *e,
				     uint64_t off, uint32_t len)
{
	struct pxfer_relay_item *it = &items[i];

	*it = (struct pxfer_relay_item){ .ent = e, .buf = mem + i * 100,
					 .off = off, .len = len, .put = put,
					 .slot = i };
	atomic_store(&nput[i], 0);
	return it;
}

static int fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_unbound(void)
{
	struct pxfer_relay *r;
	struct pxfer_relay_ent *a, *b;
	unsigned int i;

	T_EXPECT(pxfer_relay_new(&r) == 0, "new");
	a = pxfer_relay_ent_new(r);
	b = pxfer_relay_ent_new(r);
	for (i = 0; i < PXFER_RELAY_UNBOUND_MAX; i++)
		T_EXPECT(pxfer_relay_push(item(i, i % 2 ? b : a, i * 10, 10)) == 1,
			 "unbound push %u not held", i);
	T_EXPECT(pxfer_relay_held(r) == PXFER_RELAY_UNBOUND_MAX, "held %u",
		 pxfer_relay_held(r));
	/* one more: its entry (a) is given up, and all a held goes back */
	T_EXPECT(pxfer_relay_push(item(i, a, 500, 10)) == 0, "over the budget held");
	T_EXPECT(pxfer_relay_ent_state(a) == PXFER_RELAY_DEAD, "a not DEAD");
	for (unsigned int k = 0; k <= i; k++)
		T_EXPECT(atomic_load(&nput[k]) == (k % 2 || k == i ? 0u : 1u),
			 "item %u put %u times", k, atomic_load(&nput[k]));
	T_EXPECT(pxfer_relay_push(item(i, a, 600, 10)) == 0, "DEAD took a chunk");
	T_EXPECT(pxfer_relay_ent_bind(a, r, -1) == -ESTALE, "bound a DEAD one");
	/* b binds: its chunks no longer count against the budget */
	T_EXPECT(pxfer_relay_ent_bind(b, r, -1) == 0, "bind b");
	T_EXPECT(pxfer_relay_ent_bind(b, r, -1) == -ESTALE, "bound twice");
	pxfer_relay_close(r);
	for (unsigned int k = 1; k < PXFER_RELAY_UNBOUND_MAX; k += 2)
		T_EXPECT(atomic_load(&nput[k]) == 1, "b's item %u put %u times",
			 k, atomic_load(&nput[k]));
	T_EXPECT(pxfer_relay_held(r) == 0, "held %u after close",
		 pxfer_relay_held(r));
	pxfer_relay_ent_put(a);
	pxfer_relay_ent_drop(a, 0);
	pxfer_relay_ent_put(b);
	pxfer_relay_ent_drop(b, 0);
	pxfer_relay_free(r);
}

static void test_live(void)
{
	struct pxfer_relay *r;
	struct pxfer_relay_ent *e;
	struct pxfer_relay_piece p;
	int sess, other, sfile, fds[2];

	T_EXPECT(pxfer_relay_new(&r) == 0, "new");
	e = pxfer_relay_ent_new(r);
	T_EXPECT(pxfer_relay_ent_bind(e, &sess, -1) == 0, "bind");
	T_EXPECT(pxfer_relay_push(item(0, e, 0, 100)) == 1, "push 0");
	T_EXPECT(!pxfer_relay_take(r, &sess, 64, &p), "handed out before LIVE");
	pxfer_relay_ent_answer(e, &sfile, 1);
	T_EXPECT(pxfer_relay_ent_state(e) == PXFER_RELAY_LIVE, "not LIVE");
	T_EXPECT(pxfer_relay_push(item(1, e, 100, 100)) == 1, "push 1");
	T_EXPECT(!pxfer_relay_take(r, &other, 64, &p), "another consumer took it");
	/* pieces of at most 64 bytes, in order, of the consumer's file */
	T_EXPECT(pxfer_relay_take(r, &sess, 64, &p) && p.it == &items[0] &&
		 p.off == 0 && p.len == 64 && p.buf == items[0].buf &&
		 p.sfile == &sfile, "piece 1: off %llu len %u",
		 (unsigned long long)p.off, p.len);
	pxfer_relay_done(p.it);
	T_EXPECT(!atomic_load(&nput[0]), "put back with a piece left");
	T_EXPECT(pxfer_relay_take(r, &sess, 64, &p) && p.it == &items[0] &&
		 p.off == 64 && p.len == 36 && p.buf == items[0].buf + 64,
		 "piece 2: off %llu len %u", (unsigned long long)p.off, p.len);
	pxfer_relay_done(p.it);
	T_EXPECT(atomic_load(&nput[0]) == 1, "item 0 put %u times",
		 atomic_load(&nput[0]));
	T_EXPECT(pxfer_relay_take(r, &sess, 1000, &p) && p.it == &items[1] &&
		 p.len == 100, "piece 3");
	/* the consumer ends with a piece out: back only once it is done */
	T_EXPECT(pxfer_relay_push(item(2, e, 200, 100)) == 1, "push 2");
	pxfer_relay_detach(r, &sess);
	T_EXPECT(pxfer_relay_ent_state(e) == PXFER_RELAY_DEAD, "detached, not DEAD");
	T_EXPECT(atomic_load(&nput[2]) == 1, "waiting item not put back");
	T_EXPECT(!atomic_load(&nput[1]), "a piece out was put back");
	pxfer_relay_done(p.it);
	T_EXPECT(atomic_load(&nput[1]) == 1, "item 1 put %u times",
		 atomic_load(&nput[1]));
	/* DEAD: completing it leaves the descriptor to the caller */
	T_EXPECT(pipe(fds) == 0, "pipe");
	T_EXPECT(pxfer_relay_ent_complete(e, fds[0]) == 0, "DEAD took the fd");
	T_EXPECT(fd_open(fds[0]), "DEAD closed the fd");
	close(fds[0]);
	close(fds[1]);
	pxfer_relay_ent_put(e);
	pxfer_relay_ent_drop(e, 0);
	T_EXPECT(pxfer_relay_held(r) == 0, "held %u", pxfer_relay_held(r));
	pxfer_relay_close(r);
	pxfer_relay_free(r);
}

static void test_off_done(void)
{
	struct pxfer_relay *r;
	struct pxfer_relay_ent *off, *done;
	int sess, sfile, fds[2], gds[2];

	T_EXPECT(pxfer_relay_new(&r) == 0, "new");
	off = pxfer_relay_ent_new(r);
	done = pxfer_relay_ent_new(r);
	T_EXPECT(pxfer_relay_ent_bind(off, &sess, -1) == 0, "bind");
	T_EXPECT(pxfer_relay_push(item(0, off, 0, 100)) == 1, "push");
	pxfer_relay_ent_answer(off, NULL, 0);
	T_EXPECT(pxfer_relay_ent_state(off) == PXFER_RELAY_OFF, "not OFF");
	T_EXPECT(atomic_load(&nput[0]) == 1, "OFF kept what waited");
	T_EXPECT(pxfer_relay_push(item(1, off, 0, 100)) == 0, "OFF took a chunk");
	T_EXPECT(pxfer_relay_ent_fd(off) == -EAGAIN, "a descriptor before complete");
	T_EXPECT(pipe(fds) == 0 && pipe(gds) == 0, "pipes");
	T_EXPECT(pxfer_relay_ent_complete(off, fds[0]) == 1, "OFF left the fd");
	T_EXPECT(pxfer_relay_ent_fd(off) == fds[0], "not the partial's fd");
	T_EXPECT(pxfer_relay_ent_fd(off) == -EAGAIN, "the fd twice");
	close(fds[0]);
	close(fds[1]);
	/* the next hop had it all: DONE, and complete closes the fd */
	T_EXPECT(pxfer_relay_ent_bind(done, &sess, -1) == 0, "bind");
	pxfer_relay_ent_answer(done, &sfile, 1);
	pxfer_relay_ent_drop(done, 1);
	T_EXPECT(pxfer_relay_ent_state(done) == PXFER_RELAY_DONE, "not DONE");
	T_EXPECT(pxfer_relay_ent_complete(done, gds[0]) == 1, "DONE left the fd");
	T_EXPECT(!fd_open(gds[0]), "DONE kept the fd open");
	close(gds[1]);
	pxfer_relay_ent_put(done);
	pxfer_relay_ent_put(off);
	pxfer_relay_ent_drop(off, 0);
	pxfer_relay_close(r);
	pxfer_relay_free(r);
}

/* whether @efd was woken (and no longer is) */
static int woken(int efd)
{
	uint64_t v;

	return read(efd, &v, sizeof(v)) == (ssize_t)sizeof(v);
}

static void test_ended(void)
{
	struct pxfer_relay *r;
	struct pxfer_relay_ent *a, *b, *c, *off;
	struct pxfer_relay_piece p;
	int sess, other, fa, fb, fc, failed, efd, fds[2], gds[2];
	void *sfile = NULL;

	T_EXPECT(pxfer_relay_new(&r) == 0, "new");
	efd = eventfd(0, EFD_NONBLOCK);
	T_EXPECT(efd >= 0 && pipe(fds) == 0 && pipe(gds) == 0, "descriptors");
	a = pxfer_relay_ent_new(r);
	T_EXPECT(pxfer_relay_ent_bind(a, &sess, efd) == 0, "bind a");
	pxfer_relay_ent_answer(a, &fa, 1);
	T_EXPECT(!pxfer_relay_ended(r, &sess, &sfile, &failed), "ended at once");
	T_EXPECT(pxfer_relay_push(item(0, a, 0, 100)) == 1, "push");
	(void)woken(efd);
	/* complete here with a chunk not handed out yet: not over */
	T_EXPECT(pxfer_relay_ent_complete(a, fds[0]) == 1, "complete a");
	T_EXPECT(!pxfer_relay_ended(r, &sess, &sfile, &failed),
		 "ended with a chunk waiting");
	T_EXPECT(pxfer_relay_take(r, &sess, 1000, &p) && p.it == &items[0],
		 "take");
	/* the piece out may not have been counted by its sender yet */
	T_EXPECT(!pxfer_relay_ended(r, &sess, &sfile, &failed),
		 "ended with a piece out");
	(void)woken(efd);
	pxfer_relay_done(p.it);
	T_EXPECT(woken(efd), "the last piece done woke nobody");
	T_EXPECT(!pxfer_relay_ended(r, &other, &sfile, &failed),
		 "told another consumer");
	T_EXPECT(pxfer_relay_ended(r, &sess, &sfile, &failed) &&
		 sfile == &fa && !failed, "a not told, or failed");
	T_EXPECT(!pxfer_relay_ended(r, &sess, &sfile, &failed), "told twice");
	/* all hole: nothing came; complete, it is over at once */
	b = pxfer_relay_ent_new(r);
	T_EXPECT(pxfer_relay_ent_bind(b, &sess, efd) == 0, "bind b");
	pxfer_relay_ent_answer(b, &fb, 1);
	T_EXPECT(pxfer_relay_ent_complete(b, gds[0]) == 1, "complete b");
	T_EXPECT(woken(efd), "complete woke nobody");
	T_EXPECT(pxfer_relay_ended(r, &sess, &sfile, &failed) &&
		 sfile == &fb && !failed, "b not told, or failed");
	/* let go before it was complete here: told failed */
	c = pxfer_relay_ent_new(r);
	T_EXPECT(pxfer_relay_ent_bind(c, &sess, efd) == 0, "bind c");
	pxfer_relay_ent_answer(c, &fc, 1);
	pxfer_relay_ent_put(c);
	T_EXPECT(woken(efd), "giving c up woke nobody");
	T_EXPECT(pxfer_relay_ended(r, &sess, &sfile, &failed) &&
		 sfile == &fc && failed, "c not told failed");
	/* OFF, let go: no descriptor will come */
	off = pxfer_relay_ent_new(r);
	T_EXPECT(pxfer_relay_ent_bind(off, &sess, efd) == 0, "bind off");
	pxfer_relay_ent_answer(off, NULL, 0);
	T_EXPECT(pxfer_relay_ent_fd(off) == -EAGAIN, "OFF: not -EAGAIN");
	pxfer_relay_ent_put(off);
	T_EXPECT(pxfer_relay_ent_fd(off) == -EIO, "OFF let go: not -EIO");
	T_EXPECT(!pxfer_relay_ended(r, &sess, &sfile, &failed), "OFF told");
	pxfer_relay_ent_put(a);
	pxfer_relay_ent_put(b);
	pxfer_relay_ent_drop(a, 1);
	pxfer_relay_ent_drop(b, 1);
	pxfer_relay_ent_drop(c, 0);
	pxfer_relay_ent_drop(off, 0);
	T_EXPECT(pxfer_relay_held(r) == 0, "held %u", pxfer_relay_held(r));
	close(fds[1]);
	close(gds[1]);
	close(efd);
	pxfer_relay_close(r);
	pxfer_relay_free(r);
}

/* the last reference dropped with chunks waiting: they go back, and the
 * entry with them (under ASan: nothing reads it after) */
static void test_last_drop(void)
{
	struct pxfer_relay *r;
	struct pxfer_relay_ent *e;
	int sess;

	T_EXPECT(pxfer_relay_new(&r) == 0, "new");
	e = pxfer_relay_ent_new(r);
	pxfer_relay_ent_put(e);		/* the producer's range is complete */
	T_EXPECT(pxfer_relay_ent_bind(e, &sess, -1) == 0, "bind");
	T_EXPECT(pxfer_relay_push(item(0, e, 0, 100)) == 1, "push 0");
	T_EXPECT(pxfer_relay_push(item(1, e, 100, 100)) == 1, "push 1");
	pxfer_relay_ent_drop(e, 0);
	T_EXPECT(atomic_load(&nput[0]) == 1 && atomic_load(&nput[1]) == 1,
		 "put %u and %u times", atomic_load(&nput[0]),
		 atomic_load(&nput[1]));
	T_EXPECT(pxfer_relay_held(r) == 0, "held %u", pxfer_relay_held(r));
	pxfer_relay_close(r);
	pxfer_relay_free(r);
}

/* ---- threads ------------------------------------------------------------- */

struct shared {
	struct pxfer_relay *r;
	struct pxfer_relay_ent *e;
	atomic_int stop;
	int sess;
};

static void *taker_main(void *arg)
{
	struct shared *sh = arg;
	struct pxfer_relay_piece p;

	while (!atomic_load(&sh->stop) || pxfer_relay_held(sh->r)) {
		if (pxfer_relay_take(sh->r, &sh->sess, 7, &p))
			pxfer_relay_done(p.it);
	}
	return NULL;
}

static void test_threads(void)
{
	static struct shared sh;
	pthread_t t[2];
	unsigned int bad = 0;

	T_EXPECT(pxfer_relay_new(&sh.r) == 0, "new");
	sh.e = pxfer_relay_ent_new(sh.r);
	T_EXPECT(pxfer_relay_ent_bind(sh.e, &sh.sess, -1) == 0, "bind");
	pxfer_relay_ent_answer(sh.e, &sh, 1);
	for (unsigned int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, taker_main, &sh);
	for (unsigned int i = 0; i < NIT; i++)
		T_EXPECT(pxfer_relay_push(item(i, sh.e, i * 50, 50)) == 1, "push %u", i);
	atomic_store(&sh.stop, 1);
	for (unsigned int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (unsigned int i = 0; i < NIT; i++)
		bad += atomic_load(&nput[i]) != 1;
	T_EXPECT(!bad, "%u items not put back exactly once", bad);
	pxfer_relay_ent_put(sh.e);
	pxfer_relay_ent_drop(sh.e, 1);
	pxfer_relay_close(sh.r);
	pxfer_relay_free(sh.r);
}

int main(void)
{
	test_unbound();
	test_live();
	test_off_done();
	test_ended();
	test_last_drop();
	test_threads();
	return t_result();
}
