// SPDX-License-Identifier: MIT
/*
 * A forwarding node's sessions to the next hop of a broadcast chain send
 * the chunks of a range from the ring they arrived in on this node
 * (engine/relay.h, docs/broadcast.md): the range is announced as its
 * first chunks come; the hop's FILE_OK says whether it starts empty
 * (then every chunk goes from the ring as it is checked here), and if
 * it holds part of it, or the same, the range is sent as any other,
 * from this node's partial once it is complete here.
 *
 * A piece is put on the wire from the receiving slot itself: tcp writes
 * from any memory, rdma from memory registered on the connection's
 * protection domain (transport ops ->ring_local); where that cannot be
 * had, the piece is copied into the slot first, and counted so.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "send/send.h"

int send_relay_answer(struct send_session *s, struct sentry *e,
		      const struct pxfer_file_ok *k, int *work)
{
	struct pxfer_relay_ent *rent = e->relay;

	if (k->state == PXFER_HAVE_SAME) {
		/* nothing to send: neither from the ring nor later */
		e->relay = NULL;
		pxfer_relay_ent_drop(rent, 1);
		return 0;
	}
	/* none of it there (a partial may hold other ranges) */
	if (!k->nrun) {
		pxfer_relay_ent_answer(rent, &e->f, 1);
		*work = 1;
		return 1;
	}
	/* what the hop holds is read back from the partial here, or the
	 * range goes whole from it: once it is complete */
	pxfer_relay_ent_answer(rent, NULL, 0);
	e->f.relay = 0;
	e->relay_ok = malloc(sizeof(*k));
	if (!e->relay_ok)
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	memcpy(e->relay_ok, k, sizeof(*k));
	s->relay_waiting++;
	return 1;
}

int send_relay_poll(struct send_session *s, send_file_go_fn go)
{
	int work = 0;

	for (unsigned int i = 0; i < s->man.ids.max && s->relay_waiting; i++) {
		struct sentry *e = send_manifest_get(&s->man, i);
		struct pxfer_file_ok *k;
		int fd, ret;

		if (!e || !e->relay_ok)
			continue;
		fd = pxfer_relay_ent_fd(e->relay);
		if (fd == -EAGAIN)
			continue;
		k = e->relay_ok;
		e->relay_ok = NULL;
		s->relay_waiting--;
		if (fd < 0) {
			/* given up here (the link before broke, or the
			 * range failed): it fails at the next hop too */
			e->f.err = ENOLINK;
			k->state = PXFER_HAVE_NONE;
		} else {
			e->f.fd = fd;
		}
		ret = go(s, e, k, &work);
		free(k);
		if (ret)
			return -1;
	}
	return work;
}

void send_relay_ends(struct send_session *s)
{
	void *sfile;
	int failed, any = 0;

	while (pxfer_relay_ended(s->relay, s, &sfile, &failed)) {
		pxfer_sched_relay_end(&s->sched, sfile, failed ? ENOLINK : 0);
		any = 1;
	}
	/* those with nothing in flight ended now */
	if (any)
		pxfer_fileend_flush(&s->ends);
}

int send_relay_fill(struct sworker *w, unsigned int slot)
{
	struct send_session *s = w->s;
	struct sslot *ss = &w->slots[slot];
	struct pxfer_relay_piece p;
	struct pxfer_sfile *f;

	if (!pxfer_relay_take(s->relay, s, s->sched.chunk, &p))
		return 0;
	f = p.sfile;
	pxfer_sched_relay(&s->sched, f, p.len);
	ss->plan.nseg = 1;
	ss->plan.len = p.len;
	ss->plan.seg[0].f = f;
	ss->plan.seg[0].off = p.off;
	ss->plan.seg[0].len = p.len;
	ss->boff[0] = 0;
	ss->done[0] = p.len;
	memset(ss->err, 0, sizeof(ss->err));
	ss->pending = 0;
	ss->ext = p.it;
	ss->ext_buf = p.buf;
	return 1;
}

const uint8_t *send_relay_local(struct sworker *w, unsigned int slot)
{
	struct send_session *s = w->s;
	struct sslot *ss = &w->slots[slot];
	const struct pxfer_transport_ops *t = s->b.t;
	uint8_t *own = pxfer_ring_slot(&w->b.ring, slot);

	if (!ss->ext_buf)
		return own;
	if (!t->ring_local || !t->ring_local(w->b.conn, ss->ext->ring)) {
		pxfer_relay_count(s->relay, ss->plan.len, 0);
		return ss->ext_buf;
	}
	/* not registered here (too many rings): copied, and let go */
	memcpy(own, ss->ext_buf, ss->plan.len);
	pxfer_relay_count(s->relay, 0, ss->plan.len);
	send_relay_sent(ss);
	return own;
}

void send_relay_sent(struct sslot *ss)
{
	if (!ss->ext)
		return;
	pxfer_relay_done(ss->ext);
	ss->ext = NULL;
	ss->ext_buf = NULL;
}

void send_relay_end(struct send_session *s)
{
	if (!s->relay)
		return;
	for (unsigned int i = 0; s->w && i < s->b.workers.n; i++)
		for (unsigned int j = 0; s->w[i].slots && j < s->b.wel.slots; j++)
			send_relay_sent(&s->w[i].slots[j]);
	pxfer_relay_detach(s->relay, s);
}
