// SPDX-License-Identifier: MIT
/*
 * A session's part in a broadcast chain (docs/broadcast.md): its sender
 * names the hops after this receiver (CHAIN, before any FILE), and this
 * side has the files forwarded to them as they complete here, through the
 * forwarding the layer above gave the server (recv/forward.h). After the
 * FIN the ACK waits until the forwarding is over, with a CHAIN_REPORT for
 * every hop before it, so that the sender learns how the whole chain
 * ended. Only an authenticated sender gets here, and its files go only to
 * the hops it named.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "core/log.h"
#include "core/sys.h"
#include "recv/recv.h"

/*
 * Chunks go on from the ring unless encrypted (the slot holds the
 * plaintext being written, and the next hop has keys of its own) or
 * --verify (FILE_END carries the digest of the range read back from the
 * partial, once written): then each range goes from disk once complete.
 */
static void chain_start(struct recv_session *s)
{
	const struct recv_forward *fw = s->srv->fwd;
	char q[PXFER_QUOTE_MAX];

	if (!(s->hello.flags & (PXFER_HELLO_ENCRYPT | PXFER_HELLO_VERIFY)) &&
	    pxfer_relay_new(&s->relay)) {
		pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
		return;
	}
	s->fwd = fw->ops->start(fw->arg, s->hops, s->nhops, s->files.basefd,
				s->b.cconn->peer, s->hello.flags, s->relay);
	if (!s->fwd) {
		pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL,
			   "cannot forward the session of %s down its chain",
			   s->b.cconn->peer);
		return;
	}
	s->files.forward = 1;
	if (!s->o->quiet)
		pxfer_info("pxfer: the session of %s forwards to %s:%u%s",
			   s->b.cconn->peer,
			   pxfer_escape(q, sizeof(q), s->hops[0].host, s->hops[0].host_len),
			   (unsigned int)s->hops[0].port,
			   s->nhops > 1 ? " and the hops after it" : "");
}

int recv_chain_hop(struct recv_session *s, const struct pxfer_chain_hop *h)
{
	/* told whole, in order, before any file, once */
	if (s->any_file || s->fwd || h->index != s->nhops ||
	    (s->nhops && (h->count != s->hops_count ||
			  memcmp(h->chain, s->hops[0].chain, PXFER_JOB_LEN) ||
			  h->pos != s->hops[0].pos + s->nhops)))
		return -EPROTO;
	if (!s->srv->fwd) {
		pxfer_session_abort(&s->b, EPERM,
				    "this receiver does not forward down a chain", 1000);
		return pxfer_fail(&s->b.fail, PXFER_EXIT_USAGE,
				  "refused the chain of %s: this receiver does not forward",
				  s->b.cconn->peer);
	}
	if (!s->hops) {
		s->hops = calloc(h->count, sizeof(*s->hops));
		if (!s->hops)
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
		s->hops_count = h->count;
	}
	s->hops[s->nhops++] = *h;
	if (s->nhops == s->hops_count)
		chain_start(s);
	return 0;
}

/*
 * Range @id was answered with nothing held: every chunk of it comes, and
 * goes on from the ring as it is checked (recv/worker.c), once the
 * forwarding announced it to the next hop.
 */
/* what the forwarding is told of file @rf (no range, no descriptor) */
static void fwd_entry(const struct pxfer_rfile *rf, struct recv_fwd_entry *e)
{
	*e = (struct recv_fwd_entry){
		.path = rf->path,
		.size = rf->size,
		.mode = rf->mode,
		.mtime_sec = rf->times[1].tv_sec,
		.mtime_nsec = (uint32_t)rf->times[1].tv_nsec,
		.fd = -1,
	};
}

void recv_chain_begin(struct recv_session *s, uint32_t id)
{
	struct pxfer_rfile *rf = pxfer_rfile_get(&s->files, id);
	struct recv_fwd_entry fe;

	if (!s->relay || !s->fwd || rf->relay)
		return;
	rf->relay = pxfer_relay_ent_new(s->relay);
	if (!rf->relay)
		return;		/* it goes from disk */
	fwd_entry(rf, &fe);
	fe.range_off = rf->range_off;
	fe.range_len = rf->range_len;
	fe.relay = rf->relay;
	s->srv->fwd->ops->file(s->fwd, &fe);
}

void recv_chain_file(struct recv_session *s, uint32_t id)
{
	struct pxfer_rfile *rf = pxfer_rfile_get(&s->files, id);
	struct recv_fwd_entry e;

	fwd_entry(rf, &e);
	if (rf->range_len) {
		/* no descriptor: its pass at the end sends it */
		if (!rf->fwd_have)
			return;
		/* forwarded from the ring, or to be sent from this partial
		 * once the next hop said what it holds */
		if (rf->relay && pxfer_relay_ent_complete(rf->relay, rf->fwd_fd)) {
			rf->fwd_have = 0;
			return;
		}
		e.range_off = rf->range_off;
		e.range_len = rf->range_len;
		e.fd = rf->fwd_fd;
		rf->fwd_have = 0;
	}
	s->srv->fwd->ops->file(s->fwd, &e);
}

/*
 * While chunks of this session wait for the next hop, the sender cannot
 * send (no slot is free) and would take this node for stalled: a PING
 * whose figure grows says it is alive and waiting on its own hop, which
 * is for this node to cut out if it stalled (docs/protocol.md, PING).
 */
int recv_chain_held(struct recv_session *s)
{
	struct pxfer_msg m = { .type = PXFER_MSG_PING };
	double now;

	if (!s->relay || !pxfer_relay_held(s->relay))
		return 0;
	now = pxfer_now();
	if (now - s->held_ping_at < 1.0)
		return 1;
	s->held_ping_at = now;
	m.u.ping.checked = ++s->held_pings;
	if (pxfer_ctrl_queue(&s->b.ctrl, &m))
		pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	return 1;
}

int recv_chain_fin(struct recv_session *s)
{
	if (!s->fwd)
		return 0;
	s->srv->fwd->ops->over(s->fwd, 0);
	s->fwd_wait = 1;
	pxfer_verbose("FIN from %s: all files in; the ACK waits for the chain",
		      s->b.cconn->peer);
	return 1;
}

int recv_chain_wait(struct recv_session *s)
{
	struct pxfer_msg m = { .type = PXFER_MSG_CHAIN_REPORT };

	if (!s->srv->fwd->ops->done(s->fwd, s->fwd_rep, &s->fwd_nrep))
		return 0;
	s->fwd_wait = 0;
	for (unsigned int i = 0; i < s->fwd_nrep; i++) {
		m.u.report = s->fwd_rep[i];
		if (pxfer_ctrl_queue(&s->b.ctrl, &m))
			return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	}
	m.type = PXFER_MSG_ACK;
	memset(&m.u, 0, sizeof(m.u));
	m.u.fin.files = s->files_ok;
	m.u.fin.bytes = s->bytes;
	if (pxfer_ctrl_queue(&s->b.ctrl, &m))
		return pxfer_fail(&s->b.fail, PXFER_EXIT_LOCAL, "out of memory");
	if (pxfer_session_enter(&s->b, PXFER_RECV_FINISHING))
		return -1;
	return 1;
}

void recv_chain_end(struct recv_session *s)
{
	if (!s->fwd)
		return;
	/* nothing more goes from the ring; what waits there is given back */
	if (s->relay)
		pxfer_relay_close(s->relay);
	/* a session that failed stops its forwarding; one that ended
	 * well was over already */
	if (s->code || s->fwd_wait)
		s->srv->fwd->ops->over(s->fwd, s->code ? s->code : PXFER_EXIT_INTR);
	s->srv->fwd->ops->release(s->fwd);
	s->fwd = NULL;
	/* files.forward stays: the workers may still read it, and a range
	 * they finish from now on keeps a descriptor its drop closes */
}

void recv_chain_log(const struct recv_session *s, char *buf, size_t len)
{
	char q[PXFER_QUOTE_MAX];
	unsigned int ok = 0, bad = 0;
	uint64_t ring = s->relay_ring, copied = s->relay_copied;

	buf[0] = 0;
	if (!s->nhops || s->nhops < s->hops_count)
		return;
	for (unsigned int i = 0; i < s->fwd_nrep; i++) {
		if (s->fwd_rep[i].state == PXFER_HOP_OK)
			ok++;
		else
			bad++;
	}
	if (s->relay)
		pxfer_relay_counts(s->relay, &ring, &copied);
	snprintf(buf, len, "; forwarded on its behalf to %s:%u%s (%u of %u hops complete%s; %llu bytes from the ring, %llu copied first)",
		 pxfer_escape(q, sizeof(q), s->hops[0].host, s->hops[0].host_len),
		 (unsigned int)s->hops[0].port,
		 s->nhops > 1 ? " and on" : "", ok, s->nhops,
		 bad ? ", the others failed or lost" : "",
		 (unsigned long long)ring, (unsigned long long)copied);
}
