// SPDX-License-Identifier: MIT
/*
 * hostile_receiver - a tcp receiver whose texts attack the sender's
 * terminal and log: they set the terminal's title, clear the screen,
 * print a forged summary, then a forged error line after a newline.
 *
 *	hostile_receiver PORT HOW...
 *
 * One sender on 127.0.0.1 PORT for each HOW, in turn:
 *
 *	refuse		greets it as 'pxfer recv' does (CHALLENGE) and answers
 *			its HELLO with REFUSE(EPERM, the text). A REFUSE
 *			comes before any proof of the secret: anybody a
 *			sender connects to can send one.
 *	refuse-auth	the same with EACCES, what a wrong secret gets
 *	busy		the same with EBUSY, what a receiver with all its
 *			sessions taken says, to this sender and to every
 *			one that comes within 2 s (a sender tries again)
 *	file-err	proves the secret ($PXFER_SECRET) and takes the
 *			session with one data connection, answers each FILE
 *			with FILE_ERR(EIO, the text) and the FIN with
 *			ABORT(ECANCELED, the text): a receiver that the
 *			sender trusts, and that lies
 *
 * Prints "listening" once it listens. Exit status 0 when every sender
 * was answered, 1 if this program failed, 2 on bad usage.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "core/auth.h"
#include "core/proto.h"
#include "engine/handshake.h"
#include "transport/tcp/tcp.h"

#define TIMEOUT_MS	10000

/* what pxfer_escape must defuse: ESC, BEL, CR, newline, C1, bad UTF-8 */
static const char attack[] =
	"\x1b]0;owned\x07"			/* the terminal's title */
	"\x1b[2J\x1b[H"				/* clear the screen, go home */
	"\rpxfer: sent 1000 files (1.0 TiB) in 1.0 s: transfer complete"
	"\x1b[8m"				/* hide what follows */
	"\nerror: forged line from the hostile receiver"
	"\xc2\x9b" "31m\xff";			/* C1 CSI, a byte not UTF-8 */

static int fail(const char *what, int err)
{
	fprintf(stderr, "hostile_receiver: %s: %s\n", what, strerror(err));
	return 1;
}

static int accept_one(struct pxfer_listener *l, struct pxfer_conn **c,
		      int timeout_ms)
{
	struct pollfd p = { .fd = pxfer_tcp_ops.listener_fd(l),
			    .events = POLLIN };
	int ret;

	for (;;) {
		if (poll(&p, 1, timeout_ms) <= 0)
			return -ETIMEDOUT;
		ret = pxfer_tcp_ops.accept(l, c);
		if (ret != -EAGAIN)
			return ret;
	}
}

/* a connection's first message, after its CHALLENGE (nonce in @nonce) */
static int greet(struct pxfer_conn *c, uint8_t *nonce, struct pxfer_msg *m)
{
	int ret = pxfer_hs_challenge(c, nonce);

	if (!ret)
		ret = pxfer_conn_recv_msg(c, m, TIMEOUT_MS);
	return ret;
}

/* the control channel after WELCOME is sealed: one message, blocking */
static int ctrl_send(struct pxfer_ctrl *c, const struct pxfer_msg *m)
{
	struct pollfd p = { .fd = pxfer_tcp_ops.conn_fd(c->conn),
			    .events = POLLOUT };
	int ret = pxfer_ctrl_queue(c, m);

	while (!ret && pxfer_ctrl_pending(c)) {
		ret = pxfer_ctrl_flush(c);
		if (!ret && pxfer_ctrl_pending(c) && poll(&p, 1, TIMEOUT_MS) <= 0)
			ret = -ETIMEDOUT;
	}
	return ret;
}

static int ctrl_recv(struct pxfer_ctrl *c, struct pxfer_msg *m)
{
	struct pollfd p = { .fd = pxfer_tcp_ops.conn_fd(c->conn),
			    .events = POLLIN };
	int r;

	for (;;) {
		r = pxfer_ctrl_next(c, m);
		if (r)
			return r < 0 ? r : 0;
		if (poll(&p, 1, TIMEOUT_MS) <= 0)
			return -ETIMEDOUT;
		r = pxfer_ctrl_fill(c);
		if (r)
			return r;
	}
}

static int send_text(struct pxfer_ctrl *c, uint16_t type, uint64_t id,
		     int code)
{
	struct pxfer_msg m = { .type = type };
	char *text = type == PXFER_MSG_ABORT ? m.u.error.text : m.u.status.text;

	if (type == PXFER_MSG_ABORT) {
		m.u.error.code = code;
		m.u.error.text_len = strlen(attack);
	} else {
		m.u.status.id = id;
		m.u.status.code = code;
		m.u.status.text_len = strlen(attack);
	}
	memcpy(text, attack, sizeof(attack));
	return ctrl_send(c, &m);
}

/* the session of an authentic sender, one data connection, lying */
static int lie(struct pxfer_listener *l, struct pxfer_session *s,
	       const struct pxfer_secret *secret, const uint8_t *nonce_r,
	       const struct pxfer_msg *hello)
{
	uint8_t nonce[PXFER_NONCE_LEN], blob[1];
	struct pxfer_conn *dc = NULL;
	struct pxfer_hello h;
	struct pxfer_msg m;
	uint16_t worker, gen;
	int ret;

	if (pxfer_hs_hello_check(secret, nonce_r, hello, &h))
		return fail("the sender's HELLO", EACCES);
	/* a nonce is 32 bytes: only 8 of them are the session's number */
	pxfer_auth_nonce(nonce);
	memcpy(&s->wel.session, nonce, sizeof(s->wel.session));
	s->wel.chunk_size = h.chunk_size;
	s->wel.workers = 1;
	s->wel.slots = 2;
	s->wel.max_files = 16;
	ret = pxfer_hs_welcome(s, secret, nonce_r, &h);
	if (!ret)
		ret = accept_one(l, &dc, TIMEOUT_MS);
	if (!ret)
		ret = greet(dc, nonce, &m);
	if (!ret)
		ret = pxfer_hs_data_check(s, dc, nonce, &m, &worker, &gen);
	if (!ret)
		ret = pxfer_hs_data_welcome(s, dc, nonce, worker, blob, 0);
	if (!ret)
		ret = pxfer_ctrl_init(&s->ctrl, s->cconn);
	if (!ret)
		ret = pxfer_ctrl_seal(&s->ctrl, PXFER_CIPHER_AES_GCM,
				      s->keys.ctrl_r2s, s->keys.ctrl_s2r);
	while (!ret) {
		ret = ctrl_recv(&s->ctrl, &m);
		if (ret)
			break;
		if (m.type == PXFER_MSG_FILE)
			ret = send_text(&s->ctrl, PXFER_MSG_FILE_ERR,
					m.u.file.id, EIO);
		if (m.type == PXFER_MSG_FIN) {
			ret = send_text(&s->ctrl, PXFER_MSG_ABORT, 0, ECANCELED);
			break;
		}
	}
	pxfer_ctrl_release(&s->ctrl);
	if (dc)
		pxfer_tcp_ops.close(dc);
	return ret ? fail("the session", -ret) : 0;
}

static int answer(struct pxfer_listener *l, struct pxfer_conn *c,
		  const char *how)
{
	struct pxfer_session s = { .cconn = c };
	uint8_t nonce[PXFER_NONCE_LEN];
	struct pxfer_secret secret;
	struct pxfer_msg m;
	int ret = greet(c, nonce, &m);

	if (ret)
		return fail("no HELLO", -ret);
	if (!strcmp(how, "file-err")) {
		ret = pxfer_secret_load(&secret, NULL);
		if (ret)
			return fail("the secret in $" PXFER_SECRET_ENV, -ret);
		ret = lie(l, &s, &secret, nonce, &m);
	} else {
		pxfer_hs_refuse(c, !strcmp(how, "refuse-auth") ? EACCES :
				   !strcmp(how, "busy") ? EBUSY : EPERM, attack);
	}
	if (!ret)
		printf("answered a sender: %s\n", how);
	fflush(stdout);
	return ret;
}

int main(int argc, char **argv)
{
	struct pxfer_listener *l;
	struct pxfer_conn *c;
	int ret, i;

	_Static_assert(sizeof(attack) - 1 <= PXFER_TEXT_MAX, "the text fits");
	if (argc < 3) {
		fprintf(stderr, "usage: hostile_receiver PORT refuse|refuse-auth|busy|file-err...\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "refuse") && strcmp(argv[i], "refuse-auth") &&
		    strcmp(argv[i], "busy") && strcmp(argv[i], "file-err")) {
			fprintf(stderr, "hostile_receiver: no such answer '%s'\n",
				argv[i]);
			return 2;
		}
	}
	if (pxfer_auth_init())
		return fail("libsodium", EIO);
	ret = pxfer_tcp_ops.listen("127.0.0.1", argv[1], &l);
	if (ret)
		return fail("cannot listen", -ret);
	printf("listening\n");
	fflush(stdout);
	for (i = 2; i < argc && !ret; i++) {
		ret = accept_one(l, &c, TIMEOUT_MS);
		if (ret) {
			ret = fail("no sender came", -ret);
			break;
		}
		ret = answer(l, c, argv[i]);
		pxfer_tcp_ops.close(c);
		/* a busy receiver is busy for the sender's next tries too */
		while (!ret && !strcmp(argv[i], "busy") &&
		       !accept_one(l, &c, 2000)) {
			ret = answer(l, c, argv[i]);
			pxfer_tcp_ops.close(c);
		}
	}
	pxfer_tcp_ops.listener_close(l);
	return ret;
}
