// SPDX-License-Identifier: MIT
/*
 * hostile_sender - a sender that proves the shared secret exactly as
 * 'pxfer send' does and then breaks the rules, one way per scenario, to
 * check that a receiver never writes outside its directory, never shows a
 * file under its name that did not fully arrive, and survives.
 *
 *	hostile_sender [-o OUTSIDE] HOST PORT SCENARIO
 *	hostile_sender -l			list the scenarios
 *	hostile_sender -b			list those about bounds: memory
 *						and idle time
 *
 * The secret comes from $PXFER_SECRET; $PXFER_HS_RECV_PID, when set, is
 * the receiver's pid, which data-reset stops while it resets a connection
 * (so that the reset arrives first); $PXFER_HS_CHUNKS, when set, is how
 * many chunks tinysegs sends (TINY_CHUNKS). OUTSIDE is an absolute directory
 * the scenarios aim at (default /tmp/pxfer-outside); it is never touched
 * here. Every message the receiver sends is printed ("<- ..."), then:
 *
 *	done PATH		the receiver completed PATH (FILE_DONE, code 0)
 *	outcome: refused	it refused the connection, the session or the file
 *	outcome: aborted	it ended the session (ABORT, or closed it)
 *	outcome: accepted	it went along with what it should have refused
 *	outcome: completed	a scenario that is allowed to succeed did
 *
 * Exit status: 0 if the scenario was played, whatever the outcome; 1 if
 * this program failed on its own (cannot connect, no session where one
 * was needed); 2 on bad usage.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "pxfer/pxfer.h"
#include "core/auth.h"
#include "core/seal.h"
#include "engine/tagger.h"
#include "core/escape.h"
#include "core/proto.h"
#include "core/sys.h"
#include "transport/tcp/tcp.h"

#define TIMEOUT_MS	5000
#define CHUNK_REQ	65536u	/* chunk size asked for */
#define MAX_IDS		16	/* file ids whose paths are remembered */
#define TINY_CHUNKS	20000	/* chunks of one-byte segments tinysegs sends */

enum outcome {
	O_FAILED = 1,	/* this program failed (0 is never an outcome) */
	O_REFUSED,
	O_ABORTED,
	O_ACCEPTED,
	O_COMPLETED,
};

static const char *const outcome_name[] = {
	[O_FAILED] = "failed",
	[O_REFUSED] = "refused",
	[O_ABORTED] = "aborted",
	[O_ACCEPTED] = "accepted",
	[O_COMPLETED] = "completed",
};

struct hs {
	const char *host;
	const char *port;
	const char *outside;
	struct pxfer_secret secret;
	struct pxfer_conn *ctl;		/* control connection */
	struct pxfer_conn *data;	/* data connection of worker 0 */
	uint8_t nonce_r[PXFER_NONCE_LEN];
	uint8_t nonce_s[PXFER_NONCE_LEN];
	struct pxfer_session sess;	/* its keys and wel, for the tagger */
	struct pxfer_welcome wel;
	/* the control connection after WELCOME: sealed, numbered */
	int sealed;
	struct pxfer_aead tx, rx;
	uint64_t tx_seq, rx_seq;
	struct pxfer_tagger tag;
	uint32_t chunk_req;		/* chunk size to ask for; 0: CHUNK_REQ */
	uint64_t seq;			/* next chunk on the data connection */
	uint16_t slots[PXFER_SLOTS_MAX];	/* granted and not yet used */
	unsigned int nslots;
	char path[MAX_IDS][PXFER_PATH_MAX + 1];
	int ended;			/* the receiver ended the session */
	int quiet;			/* chunks and CREDITs are not printed */
	struct pxfer_hello sent_hello;
	struct pxfer_msg m;
};

/* the session being played, for send_msg: its control connection seals */
static struct hs *cur;

/* what next_msg saw when it did not return a message */
#define GONE	0		/* ABORT, or the connection closed */

/* ---- printing --------------------------------------------------------- */

static void show(const char *dir, const struct pxfer_msg *m)
{
	const char *name = pxfer_msg_name(m->type);
	/* texts and paths printed escaped, as pxfer prints them */
	char q[PXFER_ESCAPE_LEN(PXFER_PATH_MAX)], t[PXFER_ESCAPE_LEN(PXFER_PATH_MAX)];

	switch (m->type) {
	case PXFER_MSG_REFUSE:
	case PXFER_MSG_ABORT:
		printf("%s %s code=%u (%s) %s\n", dir, name, m->u.error.code,
		       strerror(m->u.error.code),
		       pxfer_quote(q, sizeof(q), m->u.error.text,
				   m->u.error.text_len));
		break;
	case PXFER_MSG_FILE:
		pxfer_quote(q, sizeof(q), m->u.file.path, m->u.file.path_len);
		pxfer_quote(t, sizeof(t), m->u.file.target, m->u.file.target_len);
		printf("%s %s id=%llu type=%u mode=%04o size=%llu path=%s%s%s\n",
		       dir, name, (unsigned long long)m->u.file.id,
		       m->u.file.type, m->u.file.mode,
		       (unsigned long long)m->u.file.size, q,
		       m->u.file.target_len ? " target=" : "",
		       m->u.file.target_len ? t : "");
		break;
	case PXFER_MSG_FILE_OK:
		printf("%s %s id=%llu state=%u held=%llu runs=%u\n", dir, name,
		       (unsigned long long)m->u.ok.id, m->u.ok.state,
		       (unsigned long long)m->u.ok.held, m->u.ok.nrun);
		break;
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		printf("%s %s id=%llu code=%u%s%s\n", dir, name,
		       (unsigned long long)m->u.status.id, m->u.status.code,
		       m->u.status.text_len ? " " : "",
		       m->u.status.text_len ?
		       pxfer_quote(q, sizeof(q), m->u.status.text,
				   m->u.status.text_len) : "");
		break;
	case PXFER_MSG_FILE_END:
		printf("%s %s id=%llu bytes=%llu code=%u\n", dir, name,
		       (unsigned long long)m->u.end.id,
		       (unsigned long long)m->u.end.bytes, m->u.end.code);
		break;
	case PXFER_MSG_CREDIT:
		printf("%s %s worker=%u slots=%u\n", dir, name,
		       m->u.credit.worker, m->u.credit.count);
		break;
	case PXFER_MSG_FIN:
	case PXFER_MSG_ACK:
		printf("%s %s files=%llu bytes=%llu code=%u\n", dir, name,
		       (unsigned long long)m->u.fin.files,
		       (unsigned long long)m->u.fin.bytes, m->u.fin.code);
		break;
	case PXFER_MSG_CHAIN:
		pxfer_quote(q, sizeof(q), m->u.hop.host, m->u.hop.host_len);
		pxfer_quote(t, sizeof(t), m->u.hop.dest, m->u.hop.dest_len);
		printf("%s %s pos=%u hop=%u/%u host=%s port=%u dest=%s\n", dir,
		       name, m->u.hop.pos, m->u.hop.index, m->u.hop.count, q,
		       m->u.hop.port, t);
		break;
	case PXFER_MSG_CHAIN_REPORT:
		printf("%s %s pos=%u state=%u code=%u files=%llu bytes=%llu\n",
		       dir, name, m->u.report.pos, m->u.report.state,
		       m->u.report.code, (unsigned long long)m->u.report.files,
		       (unsigned long long)m->u.report.bytes);
		break;
	case PXFER_MSG_WELCOME:
		printf("%s %s chunk=%u workers=%u slots=%u max_files=%u\n", dir,
		       name, m->u.welcome.chunk_size, m->u.welcome.workers,
		       m->u.welcome.slots, m->u.welcome.max_files);
		break;
	default:
		printf("%s %s\n", dir, name);
		break;
	}
	fflush(stdout);
}

static void say(const char *what)
{
	printf("-> %s\n", what);
	fflush(stdout);
}

/* ---- connections ------------------------------------------------------ */

/*
 * Connect (@data: as a data connection) and read the CHALLENGE; its nonce
 * goes to @nonce.
 */
static int conn_open(struct hs *h, struct pxfer_conn **c, int data,
		     uint8_t *nonce)
{
	int ret;

	ret = pxfer_tcp_ops.connect(h->host, h->port, NULL, TIMEOUT_MS, data, c);
	if (ret) {
		fprintf(stderr, "hostile_sender: cannot connect to %s port %s: %s\n",
			h->host, h->port, strerror(-ret));
		return -1;
	}
	ret = pxfer_conn_recv_msg(*c, &h->m, TIMEOUT_MS);
	if (ret || h->m.type != PXFER_MSG_CHALLENGE) {
		fprintf(stderr, "hostile_sender: no CHALLENGE from the receiver: %s\n",
			ret ? strerror(-ret) : pxfer_msg_name(h->m.type));
		pxfer_tcp_ops.close(*c);
		*c = NULL;
		return -1;
	}
	memcpy(nonce, h->m.u.challenge.nonce, PXFER_NONCE_LEN);
	return 0;
}

static void conn_close(struct pxfer_conn **c)
{
	if (*c)
		pxfer_tcp_ops.close(*c);
	*c = NULL;
}

/* send raw bytes; 1 if the receiver has gone (it closed on us) */
static int send_raw(struct pxfer_conn *c, const void *buf, size_t len)
{
	int ret = pxfer_conn_send_all(c, buf, len, TIMEOUT_MS);

	if (ret == -EPIPE || ret == -ECONNRESET)
		return 1;
	if (ret) {
		fprintf(stderr, "hostile_sender: send: %s\n", strerror(-ret));
		return -1;
	}
	return 0;
}

static int send_msg(struct pxfer_conn *c, const struct pxfer_msg *m)
{
	uint8_t buf[PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN];
	uint8_t nonce[PXFER_AEAD_NONCE_LEN];
	ssize_t n = pxfer_msg_encode(buf, sizeof(buf), m);

	if (n < 0) {
		fprintf(stderr, "hostile_sender: cannot encode %s: %s\n",
			pxfer_msg_name(m->type), strerror(-n));
		return -1;
	}
	if (cur && c == cur->ctl && cur->sealed) {
		pxfer_hdr_encode(buf, m->type, n - PXFER_HDR_LEN + PXFER_TAG_LEN);
		pxfer_nonce_make(nonce, 0, cur->tx_seq++);
		if (pxfer_aead_seal(&cur->tx, nonce, buf, PXFER_HDR_LEN, NULL, 0,
				    buf + PXFER_HDR_LEN, n - PXFER_HDR_LEN,
				    buf + n))
			return -1;
		n += PXFER_TAG_LEN;
	}
	show("->", m);
	return send_raw(c, buf, n);
}

/*
 * Seal the encoded frame of @n bytes at @f in place (room for the tag
 * after it) as the next message on the control connection, when it is
 * sealed: the frame's new length.
 */
static ssize_t seal_frame(struct hs *h, uint8_t *f, ssize_t n)
{
	uint8_t nonce[PXFER_AEAD_NONCE_LEN];
	uint16_t type = (uint16_t)(f[0] << 8 | f[1]);

	if (n < PXFER_HDR_LEN || !h->sealed)
		return n;
	pxfer_hdr_encode(f, type, n - PXFER_HDR_LEN + PXFER_TAG_LEN);
	pxfer_nonce_make(nonce, 0, h->tx_seq++);
	if (pxfer_aead_seal(&h->tx, nonce, f, PXFER_HDR_LEN, NULL, 0,
			    f + PXFER_HDR_LEN, n - PXFER_HDR_LEN, f + n))
		return -1;
	return n + PXFER_TAG_LEN;
}

/*
 * One message on the control connection, opened once it is sealed: 0, or
 * what pxfer_conn_recv_msg returns (-EPROTO also for one that fails to
 * open).
 */
static int ctl_recv(struct hs *h, int timeout_ms)
{
	uint8_t buf[PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN];
	uint8_t nonce[PXFER_AEAD_NONCE_LEN];
	struct pxfer_hdr hd;
	int ret;

	if (!h->sealed)
		return pxfer_conn_recv_msg(h->ctl, &h->m, timeout_ms);
	ret = pxfer_conn_recv_exact(h->ctl, buf, PXFER_HDR_LEN, timeout_ms);
	if (!ret)
		ret = pxfer_hdr_decode_sealed(buf, PXFER_HDR_LEN, &hd);
	if (!ret)
		ret = pxfer_conn_recv_exact(h->ctl, buf + PXFER_HDR_LEN, hd.len,
					    timeout_ms);
	if (ret)
		return ret;
	pxfer_nonce_make(nonce, 0, h->rx_seq++);
	if (pxfer_aead_open(&h->rx, nonce, buf, PXFER_HDR_LEN, NULL, 0,
			    buf + PXFER_HDR_LEN, hd.len - PXFER_TAG_LEN,
			    buf + PXFER_HDR_LEN + hd.len - PXFER_TAG_LEN))
		return -EPROTO;
	return pxfer_msg_decode(hd.type, buf + PXFER_HDR_LEN,
				hd.len - PXFER_TAG_LEN, &h->m);
}

/*
 * The next message on the control connection, printed. CREDITs are kept
 * for take_slot; FILE_DONE with code 0 prints "done PATH". Returns 1 with
 * h->m filled, GONE if the receiver aborted or closed, -1 on timeout or
 * another failure.
 */
/*
 * The next message on the control connection into h->m, not printed: 1,
 * GONE if the receiver closed it, -1 on timeout or another failure.
 */
static int recv_msg(struct hs *h)
{
	int ret = ctl_recv(h, TIMEOUT_MS);

	if (ret == -EPIPE || ret == -ECONNRESET) {
		printf("<- (the receiver closed the connection)\n");
		h->ended = 1;
		return GONE;
	}
	if (ret) {
		printf("<- (nothing: %s)\n", strerror(-ret));
		return -1;
	}
	return 1;
}

static int next_msg(struct hs *h)
{
	struct pxfer_msg *m = &h->m;
	int ret;

	if (h->ended)
		return GONE;
	ret = recv_msg(h);
	if (ret != 1)
		return ret;
	if (!h->quiet || m->type != PXFER_MSG_CREDIT)
		show("<-", m);
	if (m->type == PXFER_MSG_ABORT) {
		h->ended = 1;
		return GONE;
	}
	if (m->type == PXFER_MSG_CREDIT && m->u.credit.worker == 0) {
		for (unsigned int i = 0; i < m->u.credit.count; i++)
			if (h->nslots < PXFER_SLOTS_MAX)
				h->slots[h->nslots++] = m->u.credit.slots[i];
	}
	if (m->type == PXFER_MSG_FILE_DONE && !m->u.status.code &&
	    m->u.status.id < MAX_IDS)
		printf("done %s\n", h->path[m->u.status.id]);
	return 1;
}

/* wait for @type (or for FILE_OK/ERR/DONE about @id); GONE, -1 or 1 */
static int wait_for(struct hs *h, uint16_t type, uint64_t id)
{
	int ret;

	for (;;) {
		ret = next_msg(h);
		if (ret != 1)
			return ret;
		if (h->m.type == type)
			return 1;
		if (type == PXFER_MSG_FILE && h->m.type == PXFER_MSG_FILE_OK &&
		    h->m.u.ok.id == id)
			return 1;
		if ((h->m.type == PXFER_MSG_FILE_ERR ||
		     h->m.type == PXFER_MSG_FILE_DONE) &&
		    type == PXFER_MSG_FILE && h->m.u.status.id == id)
			return 1;
	}
}

/* the reply to FILE @id: its type, GONE or -1 */
static int file_reply(struct hs *h, uint64_t id)
{
	int ret = wait_for(h, PXFER_MSG_FILE, id);

	return ret == 1 ? h->m.type : ret;
}

/* wait until the receiver closes the connection (or says something) */
static enum outcome await_close(struct hs *h, struct pxfer_conn *c)
{
	int ret = pxfer_conn_recv_msg(c, &h->m, TIMEOUT_MS);

	if (ret == -EPIPE || ret == -ECONNRESET || ret == -EPROTO) {
		printf("<- (the receiver closed the connection)\n");
		return O_ABORTED;
	}
	if (ret) {
		printf("<- (nothing: %s; the connection is still open)\n",
		       strerror(-ret));
		return O_ACCEPTED;
	}
	show("<-", &h->m);
	return h->m.type == PXFER_MSG_REFUSE ? O_REFUSED : O_ACCEPTED;
}

/* ---- the handshake, done right or wrong ------------------------------- */

/* HELLO: 0 on WELCOME, 1 on REFUSE, -1 on failure */
static int hello(struct hs *h, const char *dest, int bad_mac)
{
	struct pxfer_hello *hl = &h->m.u.hello, *hl_sent;
	uint8_t mac[PXFER_MAC_LEN];
	int ret;

	if (conn_open(h, &h->ctl, 0, h->nonce_r))
		return -1;
	h->sealed = 0;
	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_HELLO;
	hl->magic = PXFER_MAGIC;
	hl->version = PXFER_PROTO_VERSION;
	hl->workers = 1;
	hl->chunk_size = h->chunk_req ? h->chunk_req : CHUNK_REQ;
	pxfer_auth_nonce(hl->nonce);
	memcpy(h->nonce_s, hl->nonce, PXFER_NONCE_LEN);
	if (dest) {
		hl->dest_len = strlen(dest);
		memcpy(hl->dest, dest, hl->dest_len + 1);
	}
	pxfer_auth_hello_mac(&h->secret, h->nonce_r, hl, hl->mac);
	if (bad_mac)
		hl->mac[0] ^= 0x55;
	hl_sent = &h->sent_hello;
	*hl_sent = *hl;
	ret = send_msg(h->ctl, &h->m);
	if (ret)
		return ret > 0 ? 1 : -1;
	ret = pxfer_conn_recv_msg(h->ctl, &h->m, TIMEOUT_MS);
	if (ret) {
		printf("<- (no answer to HELLO: %s)\n", strerror(-ret));
		return ret == -EPIPE || ret == -ECONNRESET ? 1 : -1;
	}
	show("<-", &h->m);
	if (h->m.type == PXFER_MSG_REFUSE)
		return 1;
	if (h->m.type != PXFER_MSG_WELCOME)
		return -1;
	h->wel = h->m.u.welcome;
	pxfer_auth_welcome_mac(&h->secret, h->nonce_r, hl_sent, &h->wel, mac);
	if (!pxfer_auth_equal(mac, h->wel.mac)) {
		fprintf(stderr, "hostile_sender: the WELCOME does not prove the secret\n");
		return -1;
	}
	h->sess.wel = h->wel;
	pxfer_aead_release(&h->tx);
	pxfer_aead_release(&h->rx);
	pxfer_tagger_release(&h->tag);
	if (pxfer_auth_keys(&h->secret, h->nonce_r, h->nonce_s, &h->sess.keys) ||
	    pxfer_aead_init(&h->tx, PXFER_CIPHER_AES_GCM, h->sess.keys.ctrl_s2r, 1) ||
	    pxfer_aead_init(&h->rx, PXFER_CIPHER_AES_GCM, h->sess.keys.ctrl_r2s, 0) ||
	    pxfer_tagger_init(&h->tag, &h->sess, 0, 1)) {
		fprintf(stderr, "hostile_sender: cannot set up the session keys\n");
		return -1;
	}
	h->tx_seq = h->rx_seq = 0;
	h->sealed = 1;
	return 0;
}

enum data_how {
	DATA_GOOD,
	DATA_BAD_MAC,
	DATA_BAD_WORKER,
	DATA_RESET,		/* reset the connection after DATA_HELLO */
	DATA_GEN1,		/* worker 0 as generation 1 (re-admission) */
	DATA_GEN2,		/* ... as generation 2 */
};

/*
 * Stop or resume the receiver, when the test gave its pid: a reset that
 * must arrive before the receiver answers is sent while it is stopped.
 */
static void hold_receiver(int sig)
{
	const char *pid = getenv("PXFER_HS_RECV_PID");

	if (pid && *pid)
		kill((pid_t)atoi(pid), sig);
}

/* a data connection: 0 on DATA_WELCOME, 1 if refused or closed, -1 */
static int data_open(struct hs *h, struct pxfer_conn **c, enum data_how how)
{
	struct pxfer_data_hello *dh = &h->m.u.data_hello;
	uint8_t nonce[PXFER_NONCE_LEN];
	int ret;

	if (conn_open(h, c, 1, nonce))
		return -1;
	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_DATA_HELLO;
	dh->session = h->wel.session;
	dh->worker = how == DATA_BAD_WORKER ? h->wel.workers + 4 : 0;
	dh->gen = how == DATA_GEN1 ? 1 : how == DATA_GEN2 ? 2 : 0;
	pxfer_auth_data_mac(h->sess.keys.auth, nonce, dh->session, dh->worker, dh->gen,
			    dh->mac);
	if (how == DATA_BAD_MAC)
		dh->mac[31] ^= 0x80;
	if (how == DATA_RESET) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		hold_receiver(SIGSTOP);
		ret = send_msg(*c, &h->m);
		setsockopt(pxfer_tcp_ops.conn_fd(*c), SOL_SOCKET, SO_LINGER,
			   &lg, sizeof(lg));
		conn_close(c);		/* RST */
		usleep(200000);
		hold_receiver(SIGCONT);
		return ret < 0 ? -1 : 1;
	}
	ret = send_msg(*c, &h->m);
	if (ret)
		return ret > 0 ? 1 : -1;
	ret = pxfer_conn_recv_msg(*c, &h->m, TIMEOUT_MS);
	if (ret == -EPIPE || ret == -ECONNRESET) {
		printf("<- (the receiver closed the data connection)\n");
		return 1;
	}
	if (ret) {
		printf("<- (no answer to DATA_HELLO: %s)\n", strerror(-ret));
		return -1;
	}
	show("<-", &h->m);
	if (h->m.type == PXFER_MSG_DATA_WELCOME)
		return 0;
	return h->m.type == PXFER_MSG_REFUSE ? 1 : -1;
}

/* a proper session: control and one data connection; 0 or -1 */
static int session(struct hs *h, const char *dest)
{
	if (hello(h, dest, 0)) {
		fprintf(stderr, "hostile_sender: the receiver did not accept a proper HELLO\n");
		return -1;
	}
	if (data_open(h, &h->data, DATA_GOOD)) {
		fprintf(stderr, "hostile_sender: the receiver did not accept a proper data connection\n");
		return -1;
	}
	h->seq = 0;
	h->nslots = 0;
	h->ended = 0;
	return 0;
}

static void session_close(struct hs *h)
{
	conn_close(&h->data);
	conn_close(&h->ctl);
	h->sealed = 0;
	pxfer_aead_release(&h->tx);
	pxfer_aead_release(&h->rx);
	pxfer_tagger_release(&h->tag);
}

/* ---- messages of a session -------------------------------------------- */

static int send_file(struct hs *h, uint64_t id, uint8_t type, uint32_t mode,
		     uint64_t size, const char *path, const char *target)
{
	struct pxfer_file *f = &h->m.u.file;

	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_FILE;
	f->id = id;
	f->type = type;
	f->mode = mode;
	f->size = size;
	f->mtime_sec = 1600000000;
	f->path_len = strlen(path);
	memcpy(f->path, path, f->path_len + 1);
	if (target) {
		f->target_len = strlen(target);
		memcpy(f->target, target, f->target_len + 1);
	}
	if (id < MAX_IDS)
		snprintf(h->path[id], sizeof(h->path[id]), "%s", path);
	return send_msg(h->ctl, &h->m);
}

static int send_end(struct hs *h, uint64_t id, uint64_t bytes)
{
	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_FILE_END;
	h->m.u.end.id = id;
	h->m.u.end.bytes = bytes;
	return send_msg(h->ctl, &h->m);
}

/* a granted slot (reading CREDITs if none is in hand), or -1 */
static int take_slot(struct hs *h)
{
	while (!h->nslots) {
		if (wait_for(h, PXFER_MSG_CREDIT, 0) != 1)
			return -1;
	}
	return h->slots[--h->nslots];
}

/* how a chunk is spoiled */
enum chunk_flaw {
	FLAW_NONE,
	FLAW_CHECKSUM,		/* the tag does not match the payload */
	FLAW_SEQ,		/* out of sequence */
};

/* a chunk frame: header, descriptor, payload; 0, 1 (receiver gone), -1 */
static int send_chunk(struct hs *h, int slot, const struct pxfer_seg *seg,
		      unsigned int nseg, enum chunk_flaw flaw)
{
	struct pxfer_chunk ch = { .slot = slot, .nseg = nseg };
	size_t desc_max = PXFER_HDR_LEN + PXFER_CHUNK_DESC_MAX;
	uint8_t *buf;
	ssize_t dlen;
	int ret;

	for (unsigned int i = 0; i < nseg; i++) {
		ch.seg[i] = seg[i];
		ch.len += seg[i].len;
	}
	buf = malloc(desc_max + ch.len);
	if (!buf)
		return -1;
	/* the payload goes after the largest descriptor, then moves up */
	for (uint32_t i = 0; i < ch.len; i++)
		buf[desc_max + i] = 'a' + i % 26;
	ch.seq = h->seq++;
	if (flaw == FLAW_SEQ)
		ch.seq += 7;
	if (pxfer_tagger_seal(&h->tag, &ch, buf + desc_max)) {
		free(buf);
		return -1;
	}
	if (flaw == FLAW_CHECKSUM)
		ch.tag[0] ^= 1;
	dlen = pxfer_chunk_encode(buf + PXFER_HDR_LEN, PXFER_CHUNK_DESC_MAX, &ch);
	if (dlen < 0) {
		fprintf(stderr, "hostile_sender: cannot encode the chunk: %s\n",
			strerror(-dlen));
		free(buf);
		return -1;
	}
	memmove(buf + PXFER_HDR_LEN + dlen, buf + desc_max, ch.len);
	pxfer_hdr_encode(buf, PXFER_MSG_CHUNK, dlen + ch.len);
	if (h->quiet)
		goto send;
	printf("-> CHUNK slot=%d seq=%llu len=%u", slot,
	       (unsigned long long)ch.seq, ch.len);
	for (unsigned int i = 0; i < nseg; i++)
		printf(" [file=%llu off=%llu len=%u]",
		       (unsigned long long)seg[i].file,
		       (unsigned long long)seg[i].offset, seg[i].len);
	printf("%s\n", flaw == FLAW_CHECKSUM ? " (bad checksum)" :
		       flaw == FLAW_SEQ ? " (bad sequence)" : "");
	fflush(stdout);
send:
	ret = send_raw(h->data, buf, PXFER_HDR_LEN + dlen + ch.len);
	free(buf);
	return ret;
}

/* one segment into a granted slot */
static int send_piece(struct hs *h, uint64_t id, uint64_t off, uint32_t len,
		      enum chunk_flaw flaw)
{
	struct pxfer_seg seg = { .file = id, .offset = off, .len = len };
	int slot = take_slot(h);

	if (slot < 0)
		return 1;
	return send_chunk(h, slot, &seg, 1, flaw);
}

/* all of file @id, @size bytes, in chunks; 0, 1 (receiver gone), -1 */
static int send_data(struct hs *h, uint64_t id, uint64_t size)
{
	uint64_t off = 0;
	int ret;

	while (off < size) {
		uint32_t len = size - off < h->wel.chunk_size ?
			       size - off : h->wel.chunk_size;

		ret = send_piece(h, id, off, len, FLAW_NONE);
		if (ret)
			return ret;
		off += len;
	}
	return 0;
}

/* FIN, then what the receiver says: ACK, ABORT or nothing */
static enum outcome finish(struct hs *h, enum outcome if_acked)
{
	int ret;

	if (!h->ended) {
		memset(&h->m, 0, sizeof(h->m));
		h->m.type = PXFER_MSG_FIN;
		ret = send_msg(h->ctl, &h->m);
		if (ret < 0)
			return O_FAILED;
		if (ret > 0)
			h->ended = 1;
	}
	ret = wait_for(h, PXFER_MSG_ACK, 0);
	if (ret == 1)
		return if_acked;
	if (ret == GONE)
		return O_ABORTED;
	/* no answer at all: the receiver is stuck, which is a failure too */
	return O_ACCEPTED;
}

/* after a protocol violation: the receiver must end the session */
static enum outcome expect_end(struct hs *h)
{
	return finish(h, O_ACCEPTED);
}

/* ---- scenarios: before the session ------------------------------------ */

static enum outcome sc_garbage(struct hs *h)
{
	static const char junk[] = "GET / HTTP/1.0\r\nHost: pxfer\r\n\r\n";
	struct pxfer_conn *c;
	uint8_t nonce[PXFER_NONCE_LEN];
	enum outcome o;

	if (conn_open(h, &c, 0, nonce))
		return O_FAILED;
	say("bytes that are not a frame instead of HELLO");
	if (send_raw(c, junk, sizeof(junk) - 1) < 0) {
		conn_close(&c);
		return O_FAILED;
	}
	o = await_close(h, c);
	conn_close(&c);
	return o;
}

static enum outcome sc_oversize_hello(struct hs *h)
{
	struct pxfer_conn *c;
	uint8_t nonce[PXFER_NONCE_LEN], hdr[PXFER_HDR_LEN];
	enum outcome o;

	if (conn_open(h, &c, 0, nonce))
		return O_FAILED;
	say("HELLO header announcing a 2 GiB body, and no body");
	pxfer_hdr_encode(hdr, PXFER_MSG_HELLO, 0x7fffffffu);
	if (send_raw(c, hdr, sizeof(hdr)) < 0) {
		conn_close(&c);
		return O_FAILED;
	}
	o = await_close(h, c);
	conn_close(&c);
	return o;
}

static enum outcome sc_bad_hello_mac(struct hs *h)
{
	int ret = hello(h, NULL, 1);

	conn_close(&h->ctl);
	if (ret < 0)
		return O_FAILED;
	return ret ? O_REFUSED : O_ACCEPTED;
}

static enum outcome sc_data_hello_first(struct hs *h)
{
	struct pxfer_conn *c = NULL;
	int ret;

	memset(&h->wel, 0, sizeof(h->wel));
	say("DATA_HELLO as the first message of a connection");
	ret = data_open(h, &c, DATA_GOOD);
	conn_close(&c);
	if (ret < 0)
		return O_FAILED;
	return ret ? O_REFUSED : O_ACCEPTED;
}

static enum outcome dest_scenario(struct hs *h, const char *dest)
{
	int ret = hello(h, dest, 0);
	enum outcome o = O_ACCEPTED;

	if (ret < 0) {
		conn_close(&h->ctl);
		return O_FAILED;
	}
	if (ret) {
		conn_close(&h->ctl);
		return O_REFUSED;
	}
	/* accepted: end the session properly so the receiver is free */
	if (!data_open(h, &h->data, DATA_GOOD))
		finish(h, O_ACCEPTED);
	session_close(h);
	return o;
}

static enum outcome sc_dest_dotdot(struct hs *h)
{
	return dest_scenario(h, "../outside");
}

static enum outcome sc_dest_abs(struct hs *h)
{
	return dest_scenario(h, h->outside);
}

static enum outcome sc_dest_symlink(struct hs *h)
{
	enum outcome o;

	/* first a link inside DIR, which is allowed... */
	if (session(h, NULL))
		return O_FAILED;
	if (send_file(h, 0, PXFER_FT_SYMLINK, 0777, 0, "lnk", h->outside) ||
	    file_reply(h, 0) != PXFER_MSG_FILE_DONE) {
		session_close(h);
		return O_FAILED;
	}
	o = finish(h, O_COMPLETED);
	session_close(h);
	if (o != O_COMPLETED)
		return O_FAILED;
	/* ...then a session whose destination goes through it */
	return dest_scenario(h, "lnk/sub");
}

static enum outcome data_scenario(struct hs *h, enum data_how how)
{
	struct pxfer_conn *c = NULL;
	enum outcome o;
	int ret;

	if (hello(h, NULL, 0)) {
		conn_close(&h->ctl);
		return O_FAILED;
	}
	ret = data_open(h, &c, how);
	conn_close(&c);
	if (ret < 0) {
		conn_close(&h->ctl);
		return O_FAILED;
	}
	o = ret ? O_REFUSED : O_ACCEPTED;
	/* the session goes on with a proper data connection */
	say("a proper data connection after that");
	if (data_open(h, &h->data, DATA_GOOD)) {
		session_close(h);
		return o == O_REFUSED ? O_ABORTED : o;
	}
	finish(h, O_COMPLETED);
	session_close(h);
	return o;
}

static enum outcome sc_data_hello_bad_mac(struct hs *h)
{
	return data_scenario(h, DATA_BAD_MAC);
}

static enum outcome sc_data_hello_bad_worker(struct hs *h)
{
	return data_scenario(h, DATA_BAD_WORKER);
}

/*
 * Between the HELLO and the data connection, a connection that says
 * nothing (anybody can open one): the receiver must still take the proper
 * data connection at once (it once read its connections one at a time,
 * waiting 15 s on the silent one, and the session failed).
 */
static enum outcome sc_silent_before_data(struct hs *h)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	enum outcome o;
	int fd = -1;

	if (hello(h, NULL, 0)) {
		conn_close(&h->ctl);
		return O_FAILED;
	}
	if (!getaddrinfo(h->host, h->port, &hints, &ai)) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			close(fd);
			fd = -1;
		}
		freeaddrinfo(ai);
	}
	if (fd < 0) {
		fprintf(stderr, "hostile_sender: cannot open the silent connection\n");
		conn_close(&h->ctl);
		return O_FAILED;
	}
	say("a silent connection is open; now the data connection");
	if (data_open(h, &h->data, DATA_GOOD)) {
		close(fd);
		session_close(h);
		return O_REFUSED;
	}
	o = finish(h, O_COMPLETED);
	close(fd);
	session_close(h);
	return o;
}

/*
 * A proper DATA_HELLO, then a reset before the DATA_WELCOME can go out:
 * the worker had taken the connection, so the session ends (the receiver
 * once freed it twice and crashed).
 */
static enum outcome sc_data_reset(struct hs *h)
{
	struct pxfer_conn *c = NULL;
	int ret;

	if (hello(h, NULL, 0)) {
		conn_close(&h->ctl);
		return O_FAILED;
	}
	ret = data_open(h, &c, DATA_RESET);
	say("the data connection was reset after its DATA_HELLO");
	if (ret < 0) {
		conn_close(&h->ctl);
		return O_FAILED;
	}
	ret = ctl_recv(h, 3 * TIMEOUT_MS);
	if (ret == -EPIPE || ret == -ECONNRESET)
		printf("<- (the receiver closed the control connection)\n");
	else if (!ret)
		show("<-", &h->m);
	conn_close(&h->ctl);
	if (ret == -EPIPE || ret == -ECONNRESET || (!ret && h->m.type == PXFER_MSG_ABORT))
		return O_ABORTED;
	return ret ? O_FAILED : O_ACCEPTED;
}

/*
 * Data connections for worker 0 while its connection works, as its first
 * generation again and as the next: both refused, and the session goes
 * on to its end (FIN, ACK). refused only then.
 */
static enum outcome sc_rejoin_live(struct hs *h)
{
	struct pxfer_conn *c = NULL;
	enum outcome o;
	int r0, r1;

	if (hello(h, NULL, 0)) {
		conn_close(&h->ctl);
		return O_FAILED;
	}
	if (data_open(h, &h->data, DATA_GOOD)) {
		session_close(h);
		return O_FAILED;
	}
	say("worker 0's connection again, as generation 0, then 1, while it works");
	r0 = data_open(h, &c, DATA_GOOD);
	conn_close(&c);
	r1 = data_open(h, &c, DATA_GEN1);
	conn_close(&c);
	o = finish(h, O_COMPLETED);
	session_close(h);
	if (r0 < 0 || r1 < 0)
		return O_FAILED;
	if (!r0 || !r1)
		return O_ACCEPTED;
	return o == O_COMPLETED ? O_REFUSED : o;
}

/*
 * Worker 0's connection given up (DATA_LOST), the receiver's answer
 * awaited, then a new one: as generation 2 (refused), then as 1 (taken),
 * and the session ends well over it. refused only then.
 */
static enum outcome sc_rejoin_lost(struct hs *h)
{
	struct pxfer_conn *c = NULL;
	enum outcome o;
	int r1, r2, ret;

	if (hello(h, NULL, 0)) {
		conn_close(&h->ctl);
		return O_FAILED;
	}
	if (data_open(h, &h->data, DATA_GOOD)) {
		session_close(h);
		return O_FAILED;
	}
	say("worker 0's connection given up (DATA_LOST)");
	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_DATA_LOST;
	h->m.u.lost.code = ECONNRESET;
	if (send_msg(h->ctl, &h->m) || (ret = wait_for(h, PXFER_MSG_DATA_LOST, 0)) != 1) {
		session_close(h);
		return O_FAILED;
	}
	conn_close(&h->data);
	say("a new connection for it as generation 2, then as 1");
	r2 = data_open(h, &c, DATA_GEN2);
	conn_close(&c);
	r1 = data_open(h, &h->data, DATA_GEN1);
	o = finish(h, O_COMPLETED);
	session_close(h);
	if (r1 < 0 || r2 < 0)
		return O_FAILED;
	if (!r2)
		return O_ACCEPTED;	/* the wrong generation was taken */
	if (r1)
		return O_ABORTED;	/* the right one was refused */
	return o == O_COMPLETED ? O_REFUSED : o;
}

/* ---- scenarios: paths ------------------------------------------------- */

/*
 * Offer one entry the receiver must refuse. Refused (FILE_ERR): end the
 * session cleanly. Accepted: play along (send the data) and say so.
 */
static enum outcome offer(struct hs *h, uint8_t type, const char *path,
			  const char *target, uint64_t id)
{
	uint64_t size = type == PXFER_FT_REG ? 1000 : 0;
	int ret;

	ret = send_file(h, id, type, 0644, size, path, target);
	if (ret)
		return ret > 0 ? O_ABORTED : O_FAILED;
	ret = file_reply(h, id);
	if (ret == GONE)
		return O_ABORTED;
	if (ret < 0)
		return O_FAILED;
	if (ret == PXFER_MSG_FILE_ERR)
		return O_REFUSED;
	if (ret == PXFER_MSG_FILE_OK) {
		if (!send_data(h, id, size) && !send_end(h, id, size))
			file_reply(h, id);
	}
	return O_ACCEPTED;
}

static enum outcome path_scenario(struct hs *h, uint8_t type, const char *path)
{
	enum outcome o, end;

	if (session(h, NULL))
		return O_FAILED;
	o = offer(h, type, path, NULL, 0);
	end = finish(h, O_COMPLETED);
	session_close(h);
	if (o == O_REFUSED && end != O_COMPLETED)
		printf("note: the session did not end cleanly after the refusal\n");
	return o;
}

static enum outcome sc_abs_path(struct hs *h)
{
	char path[PXFER_PATH_MAX];

	snprintf(path, sizeof(path), "%s/abs-payload", h->outside);
	return path_scenario(h, PXFER_FT_REG, path);
}

static enum outcome sc_dotdot(struct hs *h)
{
	return path_scenario(h, PXFER_FT_DIR, "..");
}

static enum outcome sc_dotdot_file(struct hs *h)
{
	return path_scenario(h, PXFER_FT_REG, "../outside/dotdot-payload");
}

static enum outcome sc_inner_dotdot(struct hs *h)
{
	return path_scenario(h, PXFER_FT_REG, "a/../../outside/inner-payload");
}

static enum outcome sc_empty_component(struct hs *h)
{
	return path_scenario(h, PXFER_FT_REG, "a//b");
}

static enum outcome sc_dot_component(struct hs *h)
{
	return path_scenario(h, PXFER_FT_REG, "a/./b");
}

static enum outcome sc_trailing_slash(struct hs *h)
{
	return path_scenario(h, PXFER_FT_REG, "a/");
}

static enum outcome sc_long_name(struct hs *h)
{
	char path[PXFER_NAME_MAX + 2];

	memset(path, 'n', PXFER_NAME_MAX + 1);
	path[PXFER_NAME_MAX + 1] = 0;
	return path_scenario(h, PXFER_FT_REG, path);
}

/* a FILE whose path holds a NUL: the codec must refuse the frame */
static enum outcome sc_nul_in_path(struct hs *h)
{
	uint8_t buf[PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN];
	struct pxfer_file *f = &h->m.u.file;
	ssize_t n;
	int ret;

	if (session(h, NULL))
		return O_FAILED;
	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_FILE;
	f->type = PXFER_FT_REG;
	f->mode = 0644;
	f->path_len = 7;
	memcpy(f->path, "nulXbad", 8);
	n = pxfer_msg_encode(buf, sizeof(buf), &h->m);
	if (n < 0) {
		session_close(h);
		return O_FAILED;
	}
	/* the path starts 52 bytes into the body, after its u16 length */
	buf[PXFER_HDR_LEN + 52 + 3] = 0;
	say("FILE path 'nul\\0bad' (an embedded NUL)");
	n = seal_frame(h, buf, n);
	ret = n < 0 ? -1 : send_raw(h->ctl, buf, n);
	if (ret < 0) {
		session_close(h);
		return O_FAILED;
	}
	h->ended = ret > 0;
	ret = expect_end(h);
	session_close(h);
	return ret;
}

/* a link pointing out of DIR (allowed), then an entry through it */
static enum outcome link_scenario(struct hs *h, const char *target,
				  uint8_t type)
{
	enum outcome o, end;
	int ret;

	if (session(h, NULL))
		return O_FAILED;
	ret = send_file(h, 0, PXFER_FT_SYMLINK, 0777, 0, "evil", target);
	if (!ret)
		ret = file_reply(h, 0);
	if (ret != PXFER_MSG_FILE_DONE && ret != PXFER_MSG_FILE_ERR) {
		session_close(h);
		return ret == GONE ? O_ABORTED : O_FAILED;
	}
	o = offer(h, type, type == PXFER_FT_DIR ? "evil/sub" : "evil/payload",
		  NULL, 1);
	end = finish(h, O_COMPLETED);
	session_close(h);
	if (o == O_REFUSED && end != O_COMPLETED)
		printf("note: the session did not end cleanly after the refusal\n");
	return o;
}

static enum outcome sc_symlink_abs(struct hs *h)
{
	return link_scenario(h, h->outside, PXFER_FT_REG);
}

static enum outcome sc_symlink_rel(struct hs *h)
{
	return link_scenario(h, "../outside", PXFER_FT_REG);
}

static enum outcome sc_symlink_up(struct hs *h)
{
	return link_scenario(h, "../..", PXFER_FT_REG);
}

static enum outcome sc_symlink_dir(struct hs *h)
{
	return link_scenario(h, h->outside, PXFER_FT_DIR);
}

/*
 * A link 'evil' pointing out of DIR, then a regular file of the same name:
 * the file must replace the link, never be written through it.
 */
static enum outcome sc_file_over_link(struct hs *h)
{
	char target[PXFER_PATH_MAX];
	enum outcome o = O_FAILED;

	snprintf(target, sizeof(target), "%s/planted", h->outside);
	if (session(h, NULL))
		return O_FAILED;
	if (!send_file(h, 0, PXFER_FT_SYMLINK, 0777, 0, "evil", target) &&
	    file_reply(h, 0) == PXFER_MSG_FILE_DONE &&
	    !send_file(h, 1, PXFER_FT_REG, 0644, 100, "evil", NULL) &&
	    file_reply(h, 1) == PXFER_MSG_FILE_OK &&
	    !send_data(h, 1, 100) && !send_end(h, 1, 100) &&
	    file_reply(h, 1) == PXFER_MSG_FILE_DONE)
		o = finish(h, O_COMPLETED);
	session_close(h);
	return o;
}

/*
 * A link 'evil' to OUTSIDE, then a directory 'evil' with its own mode and
 * time: refused, and OUTSIDE keeps its mode and time.
 */
static enum outcome sc_dir_over_link(struct hs *h)
{
	enum outcome o, end;
	int ret;

	if (session(h, NULL))
		return O_FAILED;
	ret = send_file(h, 0, PXFER_FT_SYMLINK, 0777, 0, "evil", h->outside);
	if (!ret)
		ret = file_reply(h, 0);
	if (ret != PXFER_MSG_FILE_DONE && ret != PXFER_MSG_FILE_ERR) {
		session_close(h);
		return ret == GONE ? O_ABORTED : O_FAILED;
	}
	ret = send_file(h, 1, PXFER_FT_DIR, 0700, 0, "evil", NULL);
	if (ret) {
		session_close(h);
		return ret > 0 ? O_ABORTED : O_FAILED;
	}
	ret = file_reply(h, 1);
	o = ret == PXFER_MSG_FILE_ERR ? O_REFUSED :
	    ret == GONE ? O_ABORTED : ret < 0 ? O_FAILED : O_ACCEPTED;
	/* the modes and times of directories are applied at FIN */
	end = finish(h, O_COMPLETED);
	session_close(h);
	if (o == O_REFUSED && end != O_COMPLETED)
		printf("note: the session did not end cleanly after the refusal\n");
	return o;
}

/* set-uid and set-gid bits from a peer: the file may arrive, the bits not */
static enum outcome sc_setid_mode(struct hs *h)
{
	enum outcome o = O_FAILED;

	if (session(h, NULL))
		return O_FAILED;
	if (!send_file(h, 0, PXFER_FT_DIR, 06775, 0, "setid-dir", NULL) &&
	    file_reply(h, 0) == PXFER_MSG_FILE_DONE &&
	    !send_file(h, 1, PXFER_FT_REG, 06755, 100, "setid-dir/setid", NULL) &&
	    file_reply(h, 1) == PXFER_MSG_FILE_OK &&
	    !send_data(h, 1, 100) && !send_end(h, 1, 100) &&
	    file_reply(h, 1) == PXFER_MSG_FILE_DONE)
		o = finish(h, O_COMPLETED);
	session_close(h);
	return o;
}

/* ---- scenarios: data -------------------------------------------------- */

/* a session with "victim" (@size bytes) open: 0 after its FILE_OK, or -1 */
static int open_victim(struct hs *h, uint64_t size)
{
	int ret;

	if (session(h, NULL))
		return -1;
	ret = send_file(h, 0, PXFER_FT_REG, 0644, size, "victim", NULL);
	if (!ret)
		ret = file_reply(h, 0);
	if (ret == PXFER_MSG_FILE_OK)
		return 0;
	fprintf(stderr, "hostile_sender: the receiver did not open a proper file\n");
	session_close(h);
	return -1;
}

/* the violation is sent: @ret 1 means the receiver already hung up */
static enum outcome after_violation(struct hs *h, int ret)
{
	enum outcome o;

	if (ret < 0) {
		session_close(h);
		return O_FAILED;
	}
	if (ret > 0)
		h->ended = 1;
	o = expect_end(h);
	session_close(h);
	return o;
}

static enum outcome sc_beyond_size(struct hs *h)
{
	if (open_victim(h, 100))
		return O_FAILED;
	say("a chunk for bytes 50..150 of a 100-byte file");
	return after_violation(h, send_piece(h, 0, 50, 100, FLAW_NONE) ?:
			       send_end(h, 0, 100));
}

static enum outcome sc_segments_overflow(struct hs *h)
{
	struct pxfer_seg seg[2] = {
		{ .file = 0, .offset = 0, .len = 60 },
		{ .file = 0, .offset = 60, .len = 60 },
	};
	int slot;

	if (open_victim(h, 100))
		return O_FAILED;
	say("one chunk, two segments of 60 bytes for a 100-byte file");
	slot = take_slot(h);
	if (slot < 0)
		return after_violation(h, 1);
	return after_violation(h, send_chunk(h, slot, seg, 2, FLAW_NONE) ?:
			       send_end(h, 0, 120));
}

static enum outcome sc_overlap(struct hs *h)
{
	int ret;

	if (open_victim(h, 100))
		return O_FAILED;
	say("bytes 0..60 twice, for a 100-byte file");
	ret = send_piece(h, 0, 0, 60, FLAW_NONE);
	if (!ret)
		ret = send_piece(h, 0, 0, 60, FLAW_NONE);
	return after_violation(h, ret ?: send_end(h, 0, 120));
}

/* the same, but the count fits: 50 of the 100 bytes would never be sent */
static enum outcome sc_overlap_fit(struct hs *h)
{
	int ret;

	if (open_victim(h, 100))
		return O_FAILED;
	say("bytes 0..50 twice, then FILE_END 100, for a 100-byte file");
	ret = send_piece(h, 0, 0, 50, FLAW_NONE);
	if (!ret)
		ret = send_piece(h, 0, 0, 50, FLAW_NONE);
	return after_violation(h, ret ?: send_end(h, 0, 100));
}

static enum outcome sc_slot_ungranted(struct hs *h)
{
	struct pxfer_seg seg = { .file = 0, .offset = 0, .len = 100 };

	if (open_victim(h, 100))
		return O_FAILED;
	if (h->wel.slots >= PXFER_SLOTS_MAX) {
		printf("note: the ring has every slot; using slot %u anyway\n",
		       PXFER_SLOTS_MAX - 1);
	}
	say("a chunk into a slot past the end of the ring, never granted");
	return after_violation(h, send_chunk(h, h->wel.slots < PXFER_SLOTS_MAX ?
					     h->wel.slots : PXFER_SLOTS_MAX - 1,
					     &seg, 1, FLAW_NONE) ?:
			       send_end(h, 0, 100));
}

static enum outcome sc_slot_reuse(struct hs *h)
{
	struct pxfer_seg seg[2] = {
		{ .file = 0, .offset = 0, .len = 50 },
		{ .file = 0, .offset = 50, .len = 50 },
	};
	int slot, ret, fd, one = 1, zero = 0;

	if (open_victim(h, 100))
		return O_FAILED;
	slot = take_slot(h);
	if (slot < 0)
		return after_violation(h, 1);
	say("two chunks into one granted slot, back to back, with one grant");
	/* corked, they leave together and the receiver takes them in one
	 * batch, while the slot is still busy with the first (a second
	 * chunk that came after the slot was granted again could not be
	 * told from an honest one) */
	fd = h->data->ops->conn_fd(h->data);
	setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
	ret = send_chunk(h, slot, &seg[0], 1, FLAW_NONE);
	if (!ret)
		ret = send_chunk(h, slot, &seg[1], 1, FLAW_NONE);
	setsockopt(fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero));
	return after_violation(h, ret ?: send_end(h, 0, 100));
}

static enum outcome sc_bad_checksum(struct hs *h)
{
	int ret;

	if (open_victim(h, 100))
		return O_FAILED;
	ret = send_piece(h, 0, 0, 100, FLAW_CHECKSUM) ?: send_end(h, 0, 100);
	if (ret)
		return after_violation(h, ret);
	/* no FIN before the receiver says what it made of the file: a FIN
	 * while it is in flight would be a violation of its own, and the
	 * receiver could end the session for that one first */
	ret = wait_for(h, PXFER_MSG_FILE, 0);
	if (ret == GONE) {
		session_close(h);
		return O_ABORTED;
	}
	return after_violation(h, ret < 0 ? ret : 0);
}

static enum outcome sc_bad_seq(struct hs *h)
{
	if (open_victim(h, 100))
		return O_FAILED;
	return after_violation(h, send_piece(h, 0, 0, 100, FLAW_SEQ) ?:
			       send_end(h, 0, 100));
}

static enum outcome sc_unknown_file(struct hs *h)
{
	if (open_victim(h, 100))
		return O_FAILED;
	say("a chunk for file id 7, never announced");
	return after_violation(h, send_piece(h, 7, 0, 100, FLAW_NONE));
}

static enum outcome sc_chunk_after_done(struct hs *h)
{
	int ret;

	if (open_victim(h, 100))
		return O_FAILED;
	ret = send_data(h, 0, 100) ?: send_end(h, 0, 100);
	if (!ret && file_reply(h, 0) != PXFER_MSG_FILE_DONE) {
		session_close(h);
		return O_FAILED;
	}
	say("one more chunk for the file, after its FILE_DONE");
	return after_violation(h, ret ?: send_piece(h, 0, 0, 100, FLAW_NONE));
}

static enum outcome sc_end_short(struct hs *h)
{
	if (open_victim(h, 100))
		return O_FAILED;
	say("100 bytes sent, FILE_END says 50");
	return after_violation(h, send_data(h, 0, 100) ?: send_end(h, 0, 50));
}

static enum outcome sc_end_long(struct hs *h)
{
	if (open_victim(h, 100))
		return O_FAILED;
	say("50 bytes sent, FILE_END says 100, then FIN");
	return after_violation(h, send_data(h, 0, 50) ?: send_end(h, 0, 100));
}

static enum outcome sc_end_oversize(struct hs *h)
{
	if (open_victim(h, 100))
		return O_FAILED;
	say("FILE_END says 200 bytes for a 100-byte file");
	return after_violation(h, send_data(h, 0, 100) ?: send_end(h, 0, 200));
}

static enum outcome sc_end_twice(struct hs *h)
{
	if (open_victim(h, 100))
		return O_FAILED;
	say("50 bytes sent, FILE_END 100 twice");
	return after_violation(h, send_data(h, 0, 50) ?: send_end(h, 0, 100) ?:
			       send_end(h, 0, 100));
}

static enum outcome sc_end_unknown(struct hs *h)
{
	if (session(h, NULL))
		return O_FAILED;
	return after_violation(h, send_end(h, 9, 0));
}

static enum outcome sc_fin_early(struct hs *h)
{
	if (open_victim(h, 100))
		return O_FAILED;
	say("FIN while the file is still open");
	return after_violation(h, 0);
}

/* FILE @id (100 bytes at @path) whose digest is to follow (--checksum) */
static int send_file_sum_due(struct hs *h, uint64_t id, const char *path)
{
	struct pxfer_file *f = &h->m.u.file;

	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_FILE;
	f->id = id;
	f->type = PXFER_FT_REG;
	f->flags = PXFER_FILE_CHECKSUM | PXFER_FILE_SUM_FOLLOWS;
	f->mode = 0644;
	f->size = 100;
	f->mtime_sec = 1600000000;
	f->path_len = strlen(path);
	memcpy(f->path, path, f->path_len + 1);
	if (id < MAX_IDS)
		snprintf(h->path[id], sizeof(h->path[id]), "%s", path);
	return send_msg(h->ctl, &h->m);
}

static int send_sum(struct hs *h, uint64_t id)
{
	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_FILE_SUM;
	h->m.u.sum.id = id;
	memset(h->m.u.sum.digest, 0x11, PXFER_DIGEST_LEN);
	return send_msg(h->ctl, &h->m);
}

static enum outcome sc_sum_unknown(struct hs *h)
{
	if (session(h, NULL))
		return O_FAILED;
	say("a FILE_SUM for a file never announced");
	return after_violation(h, send_sum(h, 5));
}

static enum outcome sc_sum_twice(struct hs *h)
{
	if (session(h, NULL))
		return O_FAILED;
	say("a FILE whose digest follows, and two FILE_SUMs for it");
	return after_violation(h, send_file_sum_due(h, 0, "twice") ?:
			       send_sum(h, 0) ?: send_sum(h, 0));
}

static enum outcome sc_fin_sum_due(struct hs *h)
{
	if (session(h, NULL))
		return O_FAILED;
	say("a FILE whose digest follows, then FIN without it");
	return after_violation(h, send_file_sum_due(h, 0, "due"));
}

static enum outcome sc_id_out_of_range(struct hs *h)
{
	if (session(h, NULL))
		return O_FAILED;
	say("a FILE with an id far past max_files");
	return after_violation(h, send_file(h, 1ull << 40, PXFER_FT_REG, 0644,
					    100, "far-id", NULL));
}

static enum outcome sc_id_duplicate(struct hs *h)
{
	int ret;

	if (open_victim(h, 100))
		return O_FAILED;
	say("a second FILE with the id of the open one");
	ret = send_file(h, 0, PXFER_FT_REG, 0644, 100, "dup", NULL);
	return after_violation(h, ret);
}

static enum outcome sc_oversize_ctrl(struct hs *h)
{
	uint8_t hdr[PXFER_HDR_LEN];

	if (session(h, NULL))
		return O_FAILED;
	say("FILE header announcing a 1 GiB body on the control connection");
	pxfer_hdr_encode(hdr, PXFER_MSG_FILE, 1u << 30);
	return after_violation(h, send_raw(h->ctl, hdr, sizeof(hdr)));
}

static enum outcome sc_oversize_chunk(struct hs *h)
{
	uint8_t hdr[PXFER_HDR_LEN];

	if (open_victim(h, 100))
		return O_FAILED;
	say("CHUNK header announcing a 4 GiB body on the data connection");
	pxfer_hdr_encode(hdr, PXFER_MSG_CHUNK, 0xffffffffu);
	return after_violation(h, send_raw(h->data, hdr, sizeof(hdr)));
}

static enum outcome sc_chunk_on_control(struct hs *h)
{
	struct pxfer_seg seg = { .file = 0, .offset = 0, .len = 100 };
	struct pxfer_conn *data;
	int slot, ret;

	if (open_victim(h, 100))
		return O_FAILED;
	slot = take_slot(h);
	if (slot < 0)
		return after_violation(h, 1);
	say("a CHUNK frame on the control connection");
	/* send_chunk writes to h->data: point it at the control connection */
	data = h->data;
	h->data = h->ctl;
	ret = send_chunk(h, slot, &seg, 1, FLAW_NONE);
	h->data = data;
	return after_violation(h, ret);
}

static enum outcome sc_wrong_direction(struct hs *h)
{
	if (session(h, NULL))
		return O_FAILED;
	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_CREDIT;
	h->m.u.credit.count = 1;
	say("a CREDIT from the sender (only receivers grant)");
	return after_violation(h, send_msg(h->ctl, &h->m));
}

/* half a file, then both connections closed: nothing may keep its name */
static enum outcome sc_early_close(struct hs *h)
{
	int ret;

	if (session(h, NULL))
		return O_FAILED;
	ret = send_file(h, 0, PXFER_FT_REG, 0644, 1 << 20, "deep/partial", NULL);
	if (ret || file_reply(h, 0) != PXFER_MSG_FILE_OK) {
		session_close(h);
		return O_FAILED;
	}
	ret = send_data(h, 0, 1 << 19);
	say("half of 'deep/partial' sent; closing both connections");
	session_close(h);
	return ret < 0 ? O_FAILED : O_ABORTED;
}

/* ---- scenarios: what the receiver prints ------------------------------ */

/* what would set the title, clear the screen and forge a line of the log */
#define ATTACK	"\x1b]0;owned\x07\x1b[2J\rpxfer: received 1000 files" \
		"\nerror: forged line from the hostile sender"

static enum outcome sc_ctrl_path(struct hs *h)
{
	/* refused, so the receiver names it in its log */
	return path_scenario(h, PXFER_FT_REG, "../" ATTACK);
}

static enum outcome sc_ctrl_dest(struct hs *h)
{
	return dest_scenario(h, "../" ATTACK);
}

static enum outcome sc_ctrl_abort(struct hs *h)
{
	if (session(h, NULL))
		return O_FAILED;
	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_ABORT;
	h->m.u.error.code = ECANCELED;
	h->m.u.error.text_len = strlen(ATTACK);
	memcpy(h->m.u.error.text, ATTACK, sizeof(ATTACK));
	return after_violation(h, send_msg(h->ctl, &h->m));
}

/* ---- scenarios: bounds (listed by -b, played by test/e2e/bounds.sh) ---- */

#define REPEATS		300000	/* dir-repeat: records of one directory */
#define UNREAD_MAX	2000000	/* replies-unread: FILE messages at most */
#define BATCH		1000	/* messages sent before their answers are read */

/* a path of nearly PXFER_PATH_MAX bytes: 250-byte components, then @leaf */
static void long_path(char *buf, const char *leaf)
{
	size_t n = 0, leaf_len = strlen(leaf);

	while (n + 251 + 1 + leaf_len <= PXFER_PATH_MAX) {
		memset(buf + n, 'p', 250);
		buf[n + 250] = '/';
		n += 251;
	}
	memcpy(buf + n, leaf, leaf_len + 1);
}

/* FILE @id of @type at @path, encoded into @buf; its length, or -1 */
static ssize_t file_frame(struct hs *h, uint8_t *buf, uint64_t id,
			  uint8_t type, const char *path)
{
	struct pxfer_file *f = &h->m.u.file;

	memset(&h->m, 0, sizeof(h->m));
	h->m.type = PXFER_MSG_FILE;
	f->id = id;
	f->type = type;
	f->mode = type == PXFER_FT_DIR ? 0755 : 0644;
	f->mtime_sec = 1600000000;
	f->path_len = strlen(path);
	memcpy(f->path, path, f->path_len + 1);
	return pxfer_msg_encode(buf, PXFER_HDR_LEN + PXFER_MSG_MAX, &h->m);
}

/* the answers to so many FILE messages, unprinted */
struct tally {
	unsigned long ok, err, done;
	char err_text[PXFER_TEXT_MAX + 1];	/* of the last FILE_ERR */
};

/*
 * Read @n answers (FILE_OK, FILE_ERR, FILE_DONE; CREDIT and PING do not
 * count) without printing them: 1, GONE (printed) or -1.
 */
static int read_answers(struct hs *h, struct tally *t, unsigned long n)
{
	struct pxfer_msg *m = &h->m;
	int ret;

	while (n) {
		ret = recv_msg(h);
		if (ret != 1)
			return ret;
		switch (m->type) {
		case PXFER_MSG_FILE_OK:
			t->ok++;
			break;
		case PXFER_MSG_FILE_ERR:
			t->err++;
			memcpy(t->err_text, m->u.status.text,
			       m->u.status.text_len + 1);
			break;
		case PXFER_MSG_FILE_DONE:
			t->done++;
			break;
		case PXFER_MSG_CREDIT:
		case PXFER_MSG_PING:
			continue;
		default:
			show("<-", m);
			if (m->type == PXFER_MSG_ABORT)
				h->ended = 1;
			return m->type == PXFER_MSG_ABORT ? GONE : -1;
		}
		n--;
	}
	return 1;
}

static void say_tally(const struct tally *t)
{
	printf("<- %lu FILE_OK, %lu FILE_DONE, %lu FILE_ERR%s%s%s\n", t->ok,
	       t->done, t->err, t->err ? " (last: '" : "", t->err_text,
	       t->err ? "')" : "");
	fflush(stdout);
}

/* send @count copies of the @len-byte frame in @frame, BATCH at a time,
 * reading the answers of each batch: 1, GONE or -1 */
static int send_batches(struct hs *h, const uint8_t *frame, size_t len,
			unsigned long count, struct tally *t)
{
	size_t slen = len + (h->sealed ? PXFER_TAG_LEN : 0);
	uint8_t *buf = malloc(slen * BATCH);
	int ret = 1;

	if (!buf)
		return -1;
	while (count && ret == 1) {
		unsigned long k = count < BATCH ? count : BATCH;

		/* each copy is a message of its own: sealed with its number */
		for (unsigned int i = 0; i < k; i++) {
			memcpy(buf + i * slen, frame, len);
			if (seal_frame(h, buf + i * slen, len) < 0) {
				free(buf);
				return -1;
			}
		}
		ret = send_raw(h->ctl, buf, k * slen);
		if (ret > 0)
			h->ended = 1;
		ret = ret ? (ret > 0 ? GONE : -1) : read_answers(h, t, k);
		count -= k;
	}
	free(buf);
	return ret;
}

/* one directory record, the longest path, REPEATS times */
static enum outcome sc_dir_repeat(struct hs *h)
{
	static uint8_t frame[PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN];
	char path[PXFER_PATH_MAX + 1];
	struct tally t = { 0 };
	ssize_t n;
	int ret;

	long_path(path, "repeated");
	if (session(h, NULL))
		return O_FAILED;
	n = file_frame(h, frame, 0, PXFER_FT_DIR, path);
	if (n < 0)
		return O_FAILED;
	printf("-> FILE directory '.../repeated' (%zu bytes of path) %u times\n",
	       strlen(path), REPEATS);
	ret = send_batches(h, frame, n, REPEATS, &t);
	say_tally(&t);
	if (ret < 0)
		return O_FAILED;
	return finish(h, O_COMPLETED);
}

/* distinct directories, the longest paths, until the receiver refuses */
static enum outcome sc_dirs_many(struct hs *h)
{
	static uint8_t frame[PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN];
	char path[PXFER_PATH_MAX + 1], leaf[32];
	struct tally t = { 0 };
	unsigned long i;
	ssize_t n;
	int ret = 1;

	if (session(h, NULL))
		return O_FAILED;
	say("FILE directories '.../d<N>' (4 KB paths), 64 at a time, until refused, 8192 at most");
	for (i = 0; i < 8192 && ret == 1 && !t.err; i++) {
		snprintf(leaf, sizeof(leaf), "d%lu", i);
		long_path(path, leaf);
		n = file_frame(h, frame, 0, PXFER_FT_DIR, path);
		n = n < 0 ? n : seal_frame(h, frame, n);
		ret = n < 0 ? -1 : send_raw(h->ctl, frame, n);
		ret = ret ? (ret > 0 ? GONE : -1) : 1;
		if (ret == 1 && i % 64 == 63)
			ret = read_answers(h, &t, 64);
	}
	say_tally(&t);
	if (ret < 0)
		return O_FAILED;
	if (finish(h, O_COMPLETED) != O_COMPLETED)
		return O_ABORTED;
	return t.err ? O_REFUSED : O_COMPLETED;
}

/* FILE_END, 0 bytes, for every id below @n, sent unprinted: 1, GONE, -1 */
static int end_all(struct hs *h, uint32_t n)
{
	uint8_t frame[PXFER_HDR_LEN + 64 + PXFER_TAG_LEN];	/* a FILE_END and its tag */
	ssize_t len;
	int ret;

	for (uint32_t id = 0; id < n; id++) {
		memset(&h->m, 0, sizeof(h->m));
		h->m.type = PXFER_MSG_FILE_END;
		h->m.u.end.id = id;
		len = pxfer_msg_encode(frame, sizeof(frame), &h->m);
		len = len < 0 ? len : seal_frame(h, frame, len);
		if (len < 0)
			return -1;
		ret = send_raw(h->ctl, frame, len);
		if (ret)
			return ret > 0 ? GONE : -1;
	}
	return 1;
}

/*
 * Every file id the receiver allows in flight, with the longest paths, a
 * few rounds (each completed), then all of them open at once and one
 * more: the receiver must end the session.
 */
static enum outcome sc_many_files(struct hs *h)
{
	static uint8_t frame[PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN];
	char path[PXFER_PATH_MAX + 1], leaf[32];
	struct tally t = { 0 };
	unsigned int rounds = 8;
	ssize_t n;
	int ret = 1;

	if (session(h, NULL))
		return O_FAILED;
	printf("-> FILE x %u (every id, 4 KB paths), %u rounds, then one id more\n",
	       h->wel.max_files, rounds);
	for (unsigned int r = 0; r < rounds && ret == 1; r++) {
		for (uint32_t id = 0; id < h->wel.max_files && ret == 1; id++) {
			snprintf(leaf, sizeof(leaf), "f%u-%u", r, id);
			long_path(path, leaf);
			n = file_frame(h, frame, id, PXFER_FT_REG, path);
			n = n < 0 ? n : seal_frame(h, frame, n);
			ret = n < 0 ? -1 : send_raw(h->ctl, frame, n);
			ret = ret ? (ret > 0 ? GONE : -1) : 1;
		}
		if (ret == 1)
			ret = read_answers(h, &t, h->wel.max_files);
		if (ret == 1 && r + 1 < rounds)
			ret = end_all(h, h->wel.max_files);
		if (ret == 1 && r + 1 < rounds)
			ret = read_answers(h, &t, h->wel.max_files);
	}
	say_tally(&t);
	if (ret != 1)
		return ret == GONE ? O_ABORTED : O_FAILED;
	say("one FILE more than max_files allows in flight");
	return after_violation(h, send_file(h, h->wel.max_files, PXFER_FT_REG,
					    0644, 0, "one-too-many", NULL));
}

/*
 * FILE messages the receiver refuses (an unsafe path), as fast as it
 * takes them, never reading an answer, until it stops taking them (2 s)
 * or UNREAD_MAX went; then every answer is read, and the session must
 * end normally: a receiver that stopped reading must start again.
 */
static enum outcome sc_replies_unread(struct hs *h)
{
	static uint8_t frame[PXFER_HDR_LEN + PXFER_MSG_MAX + PXFER_TAG_LEN];
	struct pollfd p = { .events = POLLOUT };
	unsigned long sent = 0, bytes = 0, cap;
	struct tally t = { 0 };
	int stalled = 0, ret = 1;
	uint8_t *buf;
	ssize_t n, k, raw;
	uint64_t seq0;

	if (session(h, NULL))
		return O_FAILED;
	n = file_frame(h, frame, 0, PXFER_FT_REG, "a//b");
	raw = n;
	n += h->sealed ? PXFER_TAG_LEN : 0;
	buf = raw < 0 ? NULL : malloc(n * BATCH);
	if (!buf)
		return O_FAILED;
	cap = (unsigned long)n * BATCH;
	seq0 = h->tx_seq;
	printf("-> FILE 'a//b' (refused) up to %u times, no answer read\n",
	       UNREAD_MAX);
	p.fd = pxfer_tcp_ops.conn_fd(h->ctl);
	while (bytes < (unsigned long)n * UNREAD_MAX) {
		/* each pass over the buffer sends new messages, numbered on */
		if (bytes % cap == 0)
			for (unsigned int i = 0; i < BATCH; i++) {
				memcpy(buf + i * n, frame, raw);
				seal_frame(h, buf + i * n, raw);
			}
		k = send(p.fd, buf + bytes % cap, cap - bytes % cap,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k > 0) {
			bytes += k;
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EINTR) {
			ret = GONE;
			break;
		}
		if (k < 0 && errno == EAGAIN && !poll(&p, 1, 2000)) {
			stalled = 1;
			break;
		}
	}
	sent = bytes / n;
	/* frames sealed ahead but never sent took no number */
	h->tx_seq = seq0 + sent + (bytes % n != 0);
	printf("-> %lu FILE messages sent%s\n", sent + (bytes % n != 0),
	       stalled ? "; the receiver stopped taking them" : "");
	/*
	 * The answers to the whole frames first: a receiver that stopped
	 * reading until its answers are taken may not take the rest of the
	 * last frame before that. Then the last frame whole, and its answer.
	 */
	if (ret == 1)
		ret = read_answers(h, &t, sent);
	if (ret == 1 && bytes % n) {
		ret = send_raw(h->ctl, buf + bytes % cap, n - bytes % n) ? GONE : 1;
		if (ret == 1)
			ret = read_answers(h, &t, 1);
		sent++;
	}
	free(buf);
	say_tally(&t);
	if (ret < 0)
		return O_FAILED;
	if (ret == GONE) {
		h->ended = 1;
		return O_ABORTED;
	}
	return finish(h, O_COMPLETED);
}

/* ---- scenarios: idle (listed by -b, played by test/e2e/idle.sh) ------- */

/* PINGs, every half second, until the receiver ends the session or a
 * minute went: O_ABORTED or O_ACCEPTED */
static enum outcome ping_until_ended(struct hs *h)
{
	struct pollfd p = { .events = POLLIN };
	double t0 = pxfer_now();

	p.fd = pxfer_tcp_ops.conn_fd(h->ctl);
	while (!h->ended && pxfer_now() - t0 < 60) {
		memset(&h->m, 0, sizeof(h->m));
		h->m.type = PXFER_MSG_PING;
		if (send_msg(h->ctl, &h->m))
			break;
		if (poll(&p, 1, 500) == 1 && next_msg(h) != 1)
			break;
	}
	printf("ended after %.1f s\n", pxfer_now() - t0);
	return h->ended ? O_ABORTED : O_ACCEPTED;
}

/* only PINGs */
static enum outcome sc_ping_only(struct hs *h)
{
	if (session(h, NULL))
		return O_FAILED;
	say("PING every 0.5 s, nothing else, for 60 s at most");
	return ping_until_ended(h);
}

/*
 * A whole chunk, then half of the next one, then only PINGs. The worker
 * that reads them waits for the rest of the second, and has not even
 * started writing the first (chunks of 256 KiB go through io_uring, which
 * it submits after the chunks it reads): the session must still end.
 */
static enum outcome sc_half_chunk(struct hs *h)
{
	uint32_t len = 256 << 10;
	struct pxfer_chunk ch = { .nseg = 1, .len = len };
	uint8_t *buf;
	ssize_t dlen;
	int slot, ret;

	h->chunk_req = len;
	if (open_victim(h, 2 * len))
		return O_FAILED;
	if (h->wel.chunk_size < len) {
		fprintf(stderr, "hostile_sender: the receiver gave chunks of %u bytes, not %u\n",
			h->wel.chunk_size, len);
		return O_FAILED;
	}
	ret = send_piece(h, 0, 0, len, FLAW_NONE);
	slot = ret ? -1 : take_slot(h);
	buf = malloc(PXFER_HDR_LEN + PXFER_CHUNK_DESC_MAX + len);
	if (slot < 0 || !buf) {
		free(buf);
		return ret > 0 ? O_ABORTED : O_FAILED;
	}
	ch.slot = slot;
	ch.seg[0] = (struct pxfer_seg){ .file = 0, .offset = len, .len = len };
	ch.seq = h->seq++;
	dlen = pxfer_chunk_encode(buf + PXFER_HDR_LEN, PXFER_CHUNK_DESC_MAX, &ch);
	if (dlen < 0) {
		free(buf);
		return O_FAILED;
	}
	memset(buf + PXFER_HDR_LEN + dlen, 'h', len);
	pxfer_hdr_encode(buf, PXFER_MSG_CHUNK, dlen + len);
	say("the next CHUNK cut after half its payload; then PINGs");
	ret = send_raw(h->data, buf, PXFER_HDR_LEN + dlen + len / 2);
	free(buf);
	if (ret)
		return ret > 0 ? O_ABORTED : O_FAILED;
	return ping_until_ended(h);
}

/*
 * One large file (a partial on the receiver) sent as chunks of 64
 * one-byte segments, in blocks of 128 bytes, the odd ones first, then
 * the even ones, so that no byte touches one of the 64 before it: each
 * is a record of its own. Once the receiver has written them all (every
 * slot granted back), the sender disappears ("completed") and the
 * partial is kept.
 * Without a bound on the records it remembers, the receiver held 32
 * bytes for each, and wrote as many to the journal.
 */
static enum outcome sc_tinysegs(struct hs *h)
{
	const char *env = getenv("PXFER_HS_CHUNKS");
	unsigned long chunks = env ? strtoul(env, NULL, 10) : TINY_CHUNKS;
	struct pxfer_seg seg[PXFER_SEG_MAX];
	uint64_t i = 0;
	int slot, ret = 0;

	if (session(h, NULL))
		return O_FAILED;
	ret = send_file(h, 0, PXFER_FT_REG, 0644, 256 << 20, "tiny", NULL);
	if (ret || file_reply(h, 0) != PXFER_MSG_FILE_OK) {
		session_close(h);
		return ret < 0 ? O_FAILED : O_REFUSED;
	}
	printf("-> CHUNK x %lu, each 64 segments of one byte, out of order\n",
	       chunks);
	h->quiet = 1;
	for (unsigned long c = 0; c < chunks && !ret; c++) {
		for (unsigned int k = 0; k < PXFER_SEG_MAX; k++, i++)
			seg[k] = (struct pxfer_seg){ .file = 0, .len = 1,
				.offset = i / 128 * 128 + i % 64 * 2 + (i % 128 < 64) };
		slot = take_slot(h);
		ret = slot < 0 ? 1 : send_chunk(h, slot, seg, PXFER_SEG_MAX,
						 FLAW_NONE);
	}
	/* every slot back: every chunk written and recorded */
	while (!ret && h->nslots < h->wel.slots)
		ret = wait_for(h, PXFER_MSG_CREDIT, 0) == 1 ? 0 : 1;
	h->quiet = 0;
	say(ret ? "the receiver stopped taking chunks" :
		  "every chunk written; closing both connections");
	session_close(h);
	return ret < 0 ? O_FAILED : ret ? O_ABORTED : O_COMPLETED;
}

/* pause between steps of sc_trickle */
static void step(void)
{
	usleep(800000);
}

/*
 * A sender that is slow but never idle: a directory, a file, its five
 * chunks, its FILE_END and the FIN, 0.8 s apart, against a receiver that
 * ends idle sessions after 2 s. It must complete.
 */
static enum outcome sc_trickle(struct hs *h)
{
	int ret;

	if (session(h, NULL))
		return O_FAILED;
	say("one step every 0.8 s: a directory, a file, 5 chunks, FILE_END, FIN");
	ret = send_file(h, 0, PXFER_FT_DIR, 0755, 0, "slow", NULL);
	if (!ret && file_reply(h, 0) != PXFER_MSG_FILE_DONE)
		ret = -1;
	step();
	if (!ret)
		ret = send_file(h, 1, PXFER_FT_REG, 0644, 500, "slow/file", NULL);
	if (!ret && file_reply(h, 1) != PXFER_MSG_FILE_OK)
		ret = -1;
	for (unsigned int i = 0; i < 5 && !ret; i++) {
		step();
		ret = send_piece(h, 1, 100 * i, 100, FLAW_NONE);
	}
	step();
	if (!ret)
		ret = send_end(h, 1, 500);
	if (!ret && file_reply(h, 1) != PXFER_MSG_FILE_DONE)
		ret = -1;
	step();
	if (ret)
		return h->ended ? O_ABORTED : O_FAILED;
	return finish(h, O_COMPLETED);
}

/* ---- main ------------------------------------------------------------- */

struct scenario {
	const char *name;
	enum outcome (*fn)(struct hs *h);
	const char *what;
};

static const struct scenario scenarios[] = {
	{ "garbage", sc_garbage, "bytes that are not a frame instead of HELLO" },
	{ "oversize-hello", sc_oversize_hello, "HELLO with a 2 GiB length field" },
	{ "bad-hello-mac", sc_bad_hello_mac, "HELLO with a MAC from another secret" },
	{ "data-hello-first", sc_data_hello_first, "DATA_HELLO instead of HELLO" },
	{ "data-hello-bad-mac", sc_data_hello_bad_mac, "DATA_HELLO with a bad MAC" },
	{ "data-hello-bad-worker", sc_data_hello_bad_worker, "DATA_HELLO for a worker the session does not have" },
	{ "silent-before-data", sc_silent_before_data, "a silent connection between the HELLO and the data connection" },
	{ "data-reset", sc_data_reset, "a data connection reset after its DATA_HELLO, before the DATA_WELCOME" },
	{ "rejoin-live", sc_rejoin_live, "a second data connection for a worker whose connection works" },
	{ "rejoin-lost", sc_rejoin_lost, "a lost data connection replaced with the wrong generation, then the right one" },
	{ "dest-dotdot", sc_dest_dotdot, "destination '../outside'" },
	{ "dest-abs", sc_dest_abs, "absolute destination OUTSIDE" },
	{ "dest-symlink", sc_dest_symlink, "destination through a link made in an earlier session" },
	{ "abs-path", sc_abs_path, "FILE 'OUTSIDE/abs-payload'" },
	{ "dotdot", sc_dotdot, "directory '..'" },
	{ "dotdot-file", sc_dotdot_file, "FILE '../outside/dotdot-payload'" },
	{ "inner-dotdot", sc_inner_dotdot, "FILE 'a/../../outside/inner-payload'" },
	{ "empty-component", sc_empty_component, "FILE 'a//b'" },
	{ "dot-component", sc_dot_component, "FILE 'a/./b'" },
	{ "trailing-slash", sc_trailing_slash, "FILE 'a/'" },
	{ "long-name", sc_long_name, "a 256-byte name" },
	{ "nul-in-path", sc_nul_in_path, "a path with a NUL byte" },
	{ "symlink-abs", sc_symlink_abs, "link 'evil' -> OUTSIDE, then FILE 'evil/payload'" },
	{ "symlink-rel", sc_symlink_rel, "link 'evil' -> '../outside', then FILE 'evil/payload'" },
	{ "symlink-up", sc_symlink_up, "link 'evil' -> '../..', then FILE 'evil/payload'" },
	{ "symlink-dir", sc_symlink_dir, "link 'evil' -> OUTSIDE, then directory 'evil/sub'" },
	{ "file-over-link", sc_file_over_link, "link 'evil' -> OUTSIDE/planted, then FILE 'evil' (replaces the link)" },
	{ "dir-over-link", sc_dir_over_link, "link 'evil' -> OUTSIDE, then directory 'evil' mode 0700" },
	{ "ctrl-path", sc_ctrl_path, "FILE '../' and ESC sequences, CR, a newline and a forged line" },
	{ "ctrl-dest", sc_ctrl_dest, "destination '../' and the same" },
	{ "ctrl-abort", sc_ctrl_abort, "an ABORT whose text is the same" },
	{ "setid-mode", sc_setid_mode, "a directory and a file with set-id modes (may arrive, without the bits)" },
	{ "beyond-size", sc_beyond_size, "a chunk past the end of its file" },
	{ "segments-overflow", sc_segments_overflow, "two segments of one chunk that together pass the end" },
	{ "overlap", sc_overlap, "the same bytes twice" },
	{ "overlap-fit", sc_overlap_fit, "bytes 0..50 twice and FILE_END 100 for a 100-byte file: a count that fits" },
	{ "slot-ungranted", sc_slot_ungranted, "a chunk into a slot never granted" },
	{ "slot-reuse", sc_slot_reuse, "two chunks into one slot on one grant" },
	{ "bad-checksum", sc_bad_checksum, "a chunk whose checksum does not match" },
	{ "bad-seq", sc_bad_seq, "a chunk out of sequence" },
	{ "unknown-file", sc_unknown_file, "a chunk for a file never announced" },
	{ "chunk-after-done", sc_chunk_after_done, "a chunk for a file already complete" },
	{ "end-short", sc_end_short, "FILE_END with fewer bytes than were sent" },
	{ "end-long", sc_end_long, "FILE_END with more bytes than were sent" },
	{ "end-oversize", sc_end_oversize, "FILE_END with more bytes than the file has" },
	{ "end-twice", sc_end_twice, "FILE_END twice" },
	{ "end-unknown", sc_end_unknown, "FILE_END for a file never announced" },
	{ "fin-early", sc_fin_early, "FIN with a file still open" },
	{ "sum-unknown", sc_sum_unknown, "a FILE_SUM for a file never announced" },
	{ "sum-twice", sc_sum_twice, "two FILE_SUMs for one FILE" },
	{ "fin-sum-due", sc_fin_sum_due, "FIN while a FILE's digest is due" },
	{ "id-out-of-range", sc_id_out_of_range, "a FILE id past max_files" },
	{ "id-duplicate", sc_id_duplicate, "a FILE id that is in use" },
	{ "oversize-ctrl", sc_oversize_ctrl, "a control message with a 1 GiB length field" },
	{ "oversize-chunk", sc_oversize_chunk, "a CHUNK with a 4 GiB length field" },
	{ "chunk-on-control", sc_chunk_on_control, "a CHUNK on the control connection" },
	{ "wrong-direction", sc_wrong_direction, "a CREDIT sent by the sender" },
	{ "early-close", sc_early_close, "half a file, then the sender disappears" },
};

/* what a peer that proved the secret can make the receiver hold, and for
 * how long: played by test/e2e/bounds.sh and idle.sh, listed by -b */
static const struct scenario bounds_scenarios[] = {
	{ "dir-repeat", sc_dir_repeat, "one directory record, a 4 KB path, 300000 times" },
	{ "dirs-many", sc_dirs_many, "distinct directories with 4 KB paths until refused" },
	{ "many-files", sc_many_files, "every file id in flight, 4 KB paths, rounds of them, then one more" },
	{ "replies-unread", sc_replies_unread, "refused FILE messages until the receiver stops taking them, no answer read; then all read" },
	{ "ping-only", sc_ping_only, "nothing but PINGs after the handshake" },
	{ "half-chunk", sc_half_chunk, "a chunk and half the next one, then nothing but PINGs" },
	{ "trickle", sc_trickle, "slow but never idle: a step every 0.8 s" },
	{ "tinysegs", sc_tinysegs, "a large file as chunks of 64 one-byte segments, no byte next to the one before; then gone" },
};

#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))
#define NBOUNDS (sizeof(bounds_scenarios) / sizeof(bounds_scenarios[0]))

static void list(const struct scenario *sc, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%-22s %s\n", sc[i].name, sc[i].what);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: hostile_sender [-o OUTSIDE] HOST PORT SCENARIO\n"
		   "       hostile_sender -l | -b\n"
		   "The shared secret comes from $%s.\n", PXFER_SECRET_ENV);
}

int main(int argc, char **argv)
{
	static struct hs h;
	const struct scenario *sc = NULL;
	enum outcome o;
	int c;

	h.outside = "/tmp/pxfer-outside";
	while ((c = getopt(argc, argv, "blo:h")) != -1) {
		switch (c) {
		case 'b':
			list(bounds_scenarios, NBOUNDS);
			return 0;
		case 'l':
			list(scenarios, NSCENARIOS);
			return 0;
		case 'o':
			h.outside = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 3) {
		usage(stderr);
		return 2;
	}
	h.host = argv[optind];
	h.port = argv[optind + 1];
	for (size_t i = 0; i < NSCENARIOS; i++)
		if (!strcmp(scenarios[i].name, argv[optind + 2]))
			sc = &scenarios[i];
	for (size_t i = 0; i < NBOUNDS; i++)
		if (!strcmp(bounds_scenarios[i].name, argv[optind + 2]))
			sc = &bounds_scenarios[i];
	if (!sc) {
		fprintf(stderr, "hostile_sender: no scenario '%s' (see -l and -b)\n",
			argv[optind + 2]);
		return 2;
	}
	if (h.outside[0] != '/') {
		fprintf(stderr, "hostile_sender: OUTSIDE must be absolute\n");
		return 2;
	}
	if (pxfer_secret_load(&h.secret, NULL)) {
		fprintf(stderr, "hostile_sender: set %s to the receiver's secret\n",
			PXFER_SECRET_ENV);
		return 2;
	}
	if (pxfer_auth_init()) {
		fprintf(stderr, "hostile_sender: cannot initialise libsodium\n");
		return 1;
	}
	printf("scenario %s: %s\n", sc->name, sc->what);
	cur = &h;
	o = sc->fn(&h);
	session_close(&h);
	printf("outcome: %s\n", outcome_name[o]);
	return o == O_FAILED ? 1 : 0;
}
