/* SPDX-License-Identifier: MIT */
/*
 * A broadcast chain (docs/broadcast.md): the sessions one node runs down
 * the chain, to the first hop that works, with what follows it told in
 * CHAIN messages, and what it sends. The source runs one for its PATHs
 * (pxfer_chain_send); every receiver given a chain runs one for what its
 * session brings (src/api/chainfwd.c), fed as files complete there.
 */
#ifndef PXFER_API_CHAIN_H
#define PXFER_API_CHAIN_H

#include <pthread.h>
#include <stdint.h>
#include "pxfer/pxfer.h"
#include "core/proto.h"
#include "engine/relay.h"
#include "send/source.h"
#include "send/walk.h"

/* a file larger than twice this is sent as ranges of it, so that the
 * next hop can pass each on as it completes (larger ones for a file of
 * more than PXFER_CHAIN_RANGES ranges) */
#define PXFER_CHAIN_RANGE	(4ull << 20)
#define PXFER_CHAIN_RANGES	1024
/* files told by the receiver and not yet taken, at most; more go in the
 * pass at the end */
#define PXFER_CHAIN_LIVE_MAX	4096
/* top-level names a forwarding node keeps for that pass, at most */
#define PXFER_CHAIN_ROOTS_MAX	16384

/* one file (or range) complete on this node, to forward */
struct chain_live {
	struct chain_live *next;
	char *path;
	uint64_t size, range_off, range_len;
	uint32_t mode;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	int fd;				/* a range: its partial; else -1 */
	/* a range that begins here (fd -1): its chunks come through the
	 * relay as they arrive (engine/relay.h) */
	struct pxfer_relay_ent *relay;
};

/*
 * What a node's chain sessions send: live entries (a forwarding node's,
 * as they complete), then a walk: of the PATHs (the source), or of this
 * node's own copy once its session is over (a forwarding node: what it
 * could not pass on live, and the directories). Large files of the walk
 * go as ranges. Each session begins the walk anew: the hop skips what it
 * has.
 */
struct chain_src {
	struct send_source b;
	pthread_mutex_t lock;
	/* live entries: the forwarding node's coordinator adds them */
	int live;			/* a forwarding node's */
	struct chain_live *head, *tail;
	unsigned int nlive;
	uint64_t dropped;		/* not queued: left to the walk */
	int over;			/* no more will come */
	int wake_fd;			/* the session's, or -1 */
	/* the walk: roots (the PATHs, or this node's top-level names) */
	char **roots;
	int nroots, roots_cap;
	int own;			/* roots are this node's copy */
	int basefd;			/* ... below this (own), or -1 */
	struct pxfer_walk walk;
	int walking, walk_done;
	/* a file of the walk being cut into ranges: its first range goes
	 * alone (the hop opens the partial for it), the others once it
	 * ended (cut_gate: its tag, until then) */
	int cut_fd;
	uint64_t cut_gate, seq;
	struct stat cut_st;
	char *cut_src, *cut_rel;
	uint64_t cut_next, cut_len, range;
	/* what the last ->next handed out, until the next call */
	struct chain_live *given;
	char *given_src;
	/* entries that ended failed in the running session, those that
	 * want another (busy on the hop), and those handed out and not
	 * ended yet */
	uint64_t failed, again;
	uint64_t inflight;
	/* the regular files the walk of the running session met (a file
	 * in ranges once), and their bytes */
	uint64_t tree_files, tree_bytes;
};

int chain_src_init(struct chain_src *c, const uint8_t id[PXFER_JOB_LEN],
		   int live);
void chain_src_release(struct chain_src *c);
/* the PATHs (the source's): 0 or -errno */
int chain_src_paths(struct chain_src *c, char *const *paths, int n);
/* a forwarding node: a file or range complete here (@l is taken) */
void chain_src_add(struct chain_src *c, struct chain_live *l);
/* a forwarding node: a FILE of its session, whose first component is a
 * root of the pass at the end */
void chain_src_name(struct chain_src *c, const char *path);
/* a forwarding node: its session is over (its own copy below @basefd,
 * dup'd here, is walked at the end) */
void chain_src_over(struct chain_src *c, int basefd);

/* a node's run down the chain */
struct chain_run {
	struct pxfer_send_opts o;	/* its sessions' (host, port, dest per hop) */
	struct pxfer_stop stop;		/* ends them */
	struct pxfer_chain_hop hops[PXFER_CHAIN_MAX];	/* pos increasing */
	unsigned int nhops;
	char ports[PXFER_CHAIN_MAX][8];
	int stall_secs;
	struct pxfer_relay *relay;	/* a forwarding node's, or NULL */
	struct chain_src src;
	/* how each hop ended, by hops[] index, once the run is over */
	struct pxfer_chain_report rep[PXFER_CHAIN_MAX];
	struct pxfer_stats st;		/* its sessions' */
	int code;			/* the run's PXFER_EXIT_* status */
};

/*
 * chain_run_go - sessions to hops[0], else the next, each told the hops
 * after it, until one completes (its CHAIN_REPORTs say how the hops after
 * it ended) or none is left; a hop that cannot be reached, or dies or
 * stalls during its session, is cut out and the next gets everything
 * from this node. Fills rep[] and code (0: every hop has it all;
 * PXFER_EXIT_FAIL: some did not; PXFER_EXIT_INTR: stopped).
 */
void chain_run_go(struct chain_run *r);

/*
 * pxfer_chain_send - broadcast @o->paths to @n hops (at most
 * PXFER_CHAIN_MAX - 1... see docs), @stall_secs the bound after which a
 * hop that takes nothing is cut out. A PXFER_EXIT_* status; @rep[i]
 * says how hop i ended, @st what the source's sessions did, @files and
 * @bytes the regular files of the tree and their bytes.
 */
struct pxfer_target;
int pxfer_chain_send(const struct pxfer_send_opts *o,
		     const struct pxfer_target *to, unsigned int n,
		     int stall_secs, struct pxfer_chain_report *rep,
		     struct pxfer_stats *st, uint64_t *files, uint64_t *bytes);

#endif
