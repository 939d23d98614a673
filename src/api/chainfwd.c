// SPDX-License-Identifier: MIT
/*
 * The forwarding a receiver gives its sessions that are links of a
 * broadcast chain (recv/forward.h): a thread per such session runs this
 * node's sessions down the chain (api/chain.c), sending files as they
 * complete here, then, once the session is over, its own copy of what is
 * left. It sends on behalf of the authenticated sender whose session
 * named the hops, only to them, with the receiver's own secret.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/chain.h"
#include "api/chainfwd.h"
#include "core/log.h"

struct recv_fwd {
	struct chain_run r;
	pthread_t thread;
	int started;
	atomic_int finished;
	struct pxfer_log *log;
};

static void *fwd_main(void *arg)
{
	struct recv_fwd *f = arg;

	pxfer_log_attach(f->log);
	chain_run_go(&f->r);
	/* nobody takes from the ring any more: no chunk waits there */
	if (f->r.relay)
		pxfer_relay_close(f->r.relay);
	atomic_store(&f->finished, 1);
	pxfer_log_attach(NULL);
	return NULL;
}

static struct recv_fwd *fwd_start(void *arg, const struct pxfer_chain_hop *hops,
				  unsigned int n, int basefd, const char *peer,
				  uint32_t flags, struct pxfer_relay *relay)
{
	const struct pxfer_recv_opts *ro = arg;
	struct recv_fwd *f;

	if (!n || n >= PXFER_CHAIN_MAX)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		goto out;
	if (pxfer_stop_init(&f->r.stop))
		goto out_free;
	if (chain_src_init(&f->r.src, hops[0].chain, 1))
		goto out_stop;
	f->r.src.basefd = fcntl(basefd, F_DUPFD_CLOEXEC, 0);
	if (f->r.src.basefd < 0)
		goto out_src;
	pxfer_send_opts_init(&f->r.o);
	f->r.o.secret = ro->secret;
	f->r.o.transport = ro->transport;
	f->r.o.retries = 0;
	f->r.o.stop = &f->r.stop;
	/* each hop as the sender asked of this one */
	f->r.o.encrypt = !!(flags & PXFER_HELLO_ENCRYPT);
	if (flags & PXFER_HELLO_CHACHA)
		f->r.o.cipher = "chacha20-poly1305";
	if (flags & PXFER_HELLO_CHECKSUM)
		f->r.o.integrity = "checksum";
	f->r.o.verify = !!(flags & PXFER_HELLO_VERIFY);
	f->r.o.fsync = !!(flags & PXFER_HELLO_FSYNC);
	f->r.stall_secs = ro->idle_timeout ? ro->idle_timeout : 60;
	f->r.relay = relay;
	f->r.nhops = n;
	for (unsigned int i = 0; i < n; i++) {
		f->r.hops[i] = hops[i];
		snprintf(f->r.ports[i], sizeof(f->r.ports[i]), "%u",
			 (unsigned int)hops[i].port);
	}
	f->log = pxfer_log_current();
	if (pthread_create(&f->thread, NULL, fwd_main, f))
		goto out_src;
	f->started = 1;
	pxfer_verbose("forwarding the session of %s to %u hop(s)", peer, n);
	return f;

out_src:
	chain_src_release(&f->r.src);
out_stop:
	pxfer_stop_release(&f->r.stop);
out_free:
	free(f);
out:
	pxfer_error("cannot start forwarding the session of %s: out of resources",
		    peer);
	return NULL;
}

static void fwd_name(struct recv_fwd *f, const char *path)
{
	chain_src_name(&f->r.src, path);
}

static void fwd_file(struct recv_fwd *f, const struct recv_fwd_entry *e)
{
	struct chain_live *l = calloc(1, sizeof(*l));

	if (l)
		l->path = strdup(e->path);
	if (!l || !l->path) {
		free(l);
		if (e->fd >= 0)
			close(e->fd);
		pxfer_relay_ent_drop(e->relay, 0);
		return;
	}
	l->size = e->size;
	l->mode = e->mode;
	l->mtime_sec = e->mtime_sec;
	l->mtime_nsec = e->mtime_nsec;
	l->range_off = e->range_off;
	l->range_len = e->range_len;
	l->fd = e->fd;
	l->relay = e->relay;
	chain_src_add(&f->r.src, l);
}

static void fwd_over(struct recv_fwd *f, int code)
{
	if (code)
		pxfer_stop_raise(&f->r.stop);
	else
		chain_src_over(&f->r.src, -1);
}

static int fwd_done(struct recv_fwd *f, struct pxfer_chain_report *r,
		    unsigned int *n)
{
	if (!atomic_load(&f->finished))
		return 0;
	memcpy(r, f->r.rep, f->r.nhops * sizeof(*r));
	*n = f->r.nhops;
	return 1;
}

static void fwd_release(struct recv_fwd *f)
{
	if (!atomic_load(&f->finished))
		pxfer_stop_raise(&f->r.stop);
	if (f->started)
		pthread_join(f->thread, NULL);
	chain_src_release(&f->r.src);
	pxfer_stop_release(&f->r.stop);
	free(f);
}

static const struct recv_forward_ops fwd_ops = {
	.start = fwd_start,
	.name = fwd_name,
	.file = fwd_file,
	.over = fwd_over,
	.done = fwd_done,
	.release = fwd_release,
};

void pxfer_chain_forward(struct recv_forward *fw,
			 const struct pxfer_recv_opts *o)
{
	fw->ops = &fwd_ops;
	fw->arg = (void *)o;
}
