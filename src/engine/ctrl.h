/* SPDX-License-Identifier: MIT */
/*
 * The control channel of a session, owned by the coordinator thread.
 * Any thread may queue a message (encoded at once into the out buffer);
 * only the coordinator flushes and reads, both without blocking, so two
 * coordinators that write at the same time can never deadlock on full
 * socket buffers. Queueing from another thread wakes the coordinator
 * through @wake_fd; the coordinator (the thread that called
 * pxfer_ctrl_init) flushes at the start of each turn anyway.
 */
#ifndef PXFER_CTRL_H
#define PXFER_CTRL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "core/seal.h"
#include "transport/transport.h"

struct pxfer_ctrl {
	struct pxfer_conn *conn;
	pthread_mutex_t lock;
	uint8_t *out;
	size_t out_off, out_len, out_cap;	/* unsent: out[out_off..out_len) */
	uint8_t *in;
	size_t in_off, in_len, in_cap;
	int wake_fd;		/* eventfd, written when out goes non-empty */
	pthread_t owner;	/* the coordinator: flushes without a wake-up */
	int eof;
	double last_tx, last_rx;	/* when bytes last left / arrived */
	uint64_t ping_checked;	/* what a PING says (the owner sets it) */
	size_t read_pause;	/* stop reading above this many unsent
				   bytes; 0: never (see above) */
	/* once sealed (pxfer_ctrl_seal), every message each way is sealed
	 * with that way's key and numbered: a message forged, replayed,
	 * reordered or dropped fails to open */
	int sealed;
	struct pxfer_aead tx, rx;
	uint64_t tx_seq, rx_seq;	/* the next message's number */
};

/* how long a handshake step may take */
#define PXFER_HANDSHAKE_MS 15000

#define PXFER_PING_SECS	5	/* say something after this much silence */
#define PXFER_IDLE_SECS	60	/* the peer is gone after this much; long
				   enough for a slow fsync of a big file */

/*
 * pxfer_ctrl_keepalive - queue a PING if nothing was sent for
 * PXFER_PING_SECS. Returns -ETIMEDOUT if nothing arrived for
 * PXFER_IDLE_SECS (the peer sends PINGs, so it is gone), -ENOBUFS if
 * reading is paused (read_pause) and the peer took nothing of what waits
 * for it for as long, else 0 or -errno.
 */
int pxfer_ctrl_keepalive(struct pxfer_ctrl *c);

int pxfer_ctrl_init(struct pxfer_ctrl *c, struct pxfer_conn *conn);
void pxfer_ctrl_release(struct pxfer_ctrl *c);

/*
 * pxfer_ctrl_seal - from now on seal what is queued with @tx_key and open
 * what arrives with @rx_key (@cipher: enum pxfer_cipher). Call it before
 * anything is queued or read after the handshake. 0 or -errno.
 */
int pxfer_ctrl_seal(struct pxfer_ctrl *c, int cipher, const uint8_t *tx_key,
		    const uint8_t *rx_key);

/* pxfer_ctrl_queue - encode @m for sending; thread-safe. 0 or -errno. */
int pxfer_ctrl_queue(struct pxfer_ctrl *c, const struct pxfer_msg *m);

/* pxfer_ctrl_flush - send what the connection takes now. 0 or -errno. */
int pxfer_ctrl_flush(struct pxfer_ctrl *c);

/* pxfer_ctrl_pending - bytes still to send */
size_t pxfer_ctrl_pending(struct pxfer_ctrl *c);

/* pxfer_ctrl_paused - whether reading is paused (read_pause): 1 or 0 */
int pxfer_ctrl_paused(struct pxfer_ctrl *c);

/*
 * pxfer_ctrl_fill - read what has arrived (nothing while paused). 0,
 * -EPIPE at EOF, or -errno.
 */
int pxfer_ctrl_fill(struct pxfer_ctrl *c);

/* pxfer_ctrl_discard - drop what was read and not taken (after an ABORT) */
void pxfer_ctrl_discard(struct pxfer_ctrl *c);

/*
 * pxfer_ctrl_next - decode the next whole message from what arrived.
 * 1 with @m filled, 0 if no whole message is buffered or reading is
 * paused, -EPROTO, or (sealed) -EBADMSG: the next message failed to open,
 * it was forged, replayed, reordered, or one before it dropped.
 */
int pxfer_ctrl_next(struct pxfer_ctrl *c, struct pxfer_msg *m);

/* pxfer_ctrl_drain_wake - clear the wake event (coordinator) */
void pxfer_ctrl_drain_wake(struct pxfer_ctrl *c);

/*
 * pxfer_ctrl_wait - one turn of a coordinator's loop: send what the
 * connection takes, then wait up to @timeout_ms for the peer, a wake-up or
 * the stop on @stop_fd (-1: none), and clear the wake event; not at all
 * when a whole message is already buffered. Returns 0, or -errno when
 * sending failed (the connection is broken).
 */
int pxfer_ctrl_wait(struct pxfer_ctrl *c, int stop_fd, int timeout_ms);

#endif
