/* SPDX-License-Identifier: MIT */
/*
 * The pxfer wire codec. Every byte that crosses the network is produced and
 * parsed here, so this file is where a hostile peer meets our memory: every
 * read goes through a bounded cursor, every length is checked against its
 * limit before it is used to copy anything, and the encoder applies the
 * same checks as the decoder (core/proto_check.c) so that a valid struct
 * always round-trips and an invalid one is never sent.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/bytes.h"
#include "core/proto.h"
#include "core/wire.h"

/* Encoded sizes of the bodies; STR(max) is a string of at most max bytes. */
#define STR(max)		(2 + (max))
#define CHALLENGE_LEN		(4 + 2 + 2 + PXFER_NONCE_LEN)
#define HELLO_MAX		(4 + 2 + 2 + 4 + 4 + PXFER_NONCE_LEN + \
				 PXFER_MAC_LEN + STR(PXFER_PATH_MAX))
#define RAIL_LEN		(1 + 1 + 16)
#define WELCOME_MAX		(PXFER_MAC_LEN + 8 + 4 + 2 + 2 + 4 + 4 + 1 + \
				 PXFER_WIRE_RAILS_MAX * RAIL_LEN)
#define DATA_LOST_LEN		(2 + 2 + 4 + 8)
#define DATA_SENT_LEN		(2 + 2 + 8)
#define FILE_SUM_LEN		(8 + 4 + PXFER_DIGEST_LEN)
#define CHAIN_MAX		(PXFER_JOB_LEN + 2 + 2 + 2 + 2 + \
				 STR(PXFER_HOST_MAX) + STR(PXFER_PATH_MAX))
#define CHAIN_REPORT_LEN	(2 + 1 + 1 + 8 + 8)
#define DATA_HELLO_LEN		(8 + 2 + 2 + PXFER_MAC_LEN)
#define DATA_WELCOME_MAX	(2 + PXFER_MAC_LEN + 2 + PXFER_BLOB_MAX)
#define ERROR_MAX		(4 + STR(PXFER_TEXT_MAX))
#define FILE_MAX		(8 + 1 + 1 + 4 + 8 + 8 + 4 + PXFER_DIGEST_LEN + \
				 2 * STR(PXFER_PATH_MAX))
#define FILE_OK_MAX		(8 + 1 + 8 + PXFER_DIGEST_LEN + 2 + \
				 PXFER_RUNS_MAX * RUN_LEN)
#define RUN_LEN			(8 + 8 + 4)
#define STATUS_MAX		(8 + 4 + STR(PXFER_TEXT_MAX))
#define FILE_END_LEN		(8 + 8 + 4 + PXFER_DIGEST_LEN)
#define CREDIT_LEN_MAX		(2 + 2 + 2 * PXFER_CREDIT_MAX)
#define FIN_LEN			(8 + 8 + 4)
#define PING_LEN		8
#define CHUNK_FRAME_MAX		(PXFER_CHUNK_DESC_MAX + PXFER_CHUNK_MAX)

/* Readers size control buffers by PXFER_MSG_MAX: every body must fit. */
_Static_assert(HELLO_MAX <= PXFER_MSG_MAX, "HELLO exceeds PXFER_MSG_MAX");
_Static_assert(FILE_MAX <= PXFER_MSG_MAX, "FILE exceeds PXFER_MSG_MAX");
_Static_assert(FILE_OK_MAX <= PXFER_MSG_MAX, "FILE_OK exceeds PXFER_MSG_MAX");
_Static_assert(CHAIN_MAX <= PXFER_MSG_MAX, "CHAIN exceeds PXFER_MSG_MAX");
_Static_assert(CREDIT_LEN_MAX <= PXFER_MSG_MAX, "CREDIT exceeds PXFER_MSG_MAX");
_Static_assert(CHUNK_FRAME_MAX <= UINT32_MAX, "CHUNK frame exceeds u32");
_Static_assert(PXFER_CHUNK_DESC_FIXED == 2 + 2 + 4 + 8 + PXFER_TAG_LEN,
	       "PXFER_CHUNK_DESC_FIXED out of step with the layout");
_Static_assert(PXFER_CHUNK_DESC_MAX == PXFER_CHUNK_DESC_FIXED + PXFER_SEG_MAX * 20,
	       "PXFER_CHUNK_DESC_MAX out of step with the layout");

/*
 * The largest body each type can have. The header decoder uses it so that a
 * reader never allocates or waits for more than a valid message can need.
 */
static const uint32_t body_max[PXFER_MSG_TYPE_MAX + 1] = {
	[PXFER_MSG_CHALLENGE]		= CHALLENGE_LEN,
	[PXFER_MSG_HELLO]		= HELLO_MAX,
	[PXFER_MSG_WELCOME]		= WELCOME_MAX,
	[PXFER_MSG_DATA_HELLO]		= DATA_HELLO_LEN,
	[PXFER_MSG_DATA_WELCOME]	= DATA_WELCOME_MAX,
	[PXFER_MSG_REFUSE]		= ERROR_MAX,
	[PXFER_MSG_FILE]		= FILE_MAX,
	[PXFER_MSG_FILE_OK]		= FILE_OK_MAX,
	[PXFER_MSG_FILE_ERR]		= STATUS_MAX,
	[PXFER_MSG_FILE_END]		= FILE_END_LEN,
	[PXFER_MSG_FILE_DONE]		= STATUS_MAX,
	[PXFER_MSG_CREDIT]		= CREDIT_LEN_MAX,
	[PXFER_MSG_FIN]			= FIN_LEN,
	[PXFER_MSG_ACK]			= FIN_LEN,
	[PXFER_MSG_PING]		= PING_LEN,
	[PXFER_MSG_DATA_LOST]		= DATA_LOST_LEN,
	[PXFER_MSG_DATA_SENT]		= DATA_SENT_LEN,
	[PXFER_MSG_FILE_SUM]		= FILE_SUM_LEN,
	[PXFER_MSG_CHAIN]		= CHAIN_MAX,
	[PXFER_MSG_CHAIN_REPORT]	= CHAIN_REPORT_LEN,
	[PXFER_MSG_ABORT]		= ERROR_MAX,
	[PXFER_MSG_CHUNK]		= CHUNK_FRAME_MAX,
};

static const char *const msg_names[PXFER_MSG_TYPE_MAX + 1] = {
	[PXFER_MSG_CHALLENGE]		= "CHALLENGE",
	[PXFER_MSG_HELLO]		= "HELLO",
	[PXFER_MSG_WELCOME]		= "WELCOME",
	[PXFER_MSG_DATA_HELLO]		= "DATA_HELLO",
	[PXFER_MSG_DATA_WELCOME]	= "DATA_WELCOME",
	[PXFER_MSG_REFUSE]		= "REFUSE",
	[PXFER_MSG_FILE]		= "FILE",
	[PXFER_MSG_FILE_OK]		= "FILE_OK",
	[PXFER_MSG_FILE_ERR]		= "FILE_ERR",
	[PXFER_MSG_FILE_END]		= "FILE_END",
	[PXFER_MSG_FILE_DONE]		= "FILE_DONE",
	[PXFER_MSG_CREDIT]		= "CREDIT",
	[PXFER_MSG_FIN]			= "FIN",
	[PXFER_MSG_ACK]			= "ACK",
	[PXFER_MSG_PING]		= "PING",
	[PXFER_MSG_DATA_LOST]		= "DATA_LOST",
	[PXFER_MSG_DATA_SENT]		= "DATA_SENT",
	[PXFER_MSG_FILE_SUM]		= "FILE_SUM",
	[PXFER_MSG_CHAIN]		= "CHAIN",
	[PXFER_MSG_CHAIN_REPORT]	= "CHAIN_REPORT",
	[PXFER_MSG_ABORT]		= "ABORT",
	[PXFER_MSG_CHUNK]		= "CHUNK",
};

/* ------------------------------------------------------------------------ */
/* Bodies, in the field order documented in proto.h */

static void put_body(struct wcur *w, const struct pxfer_msg *m)
{
	const struct pxfer_challenge *c = &m->u.challenge;
	const struct pxfer_hello *h = &m->u.hello;
	const struct pxfer_welcome *wl = &m->u.welcome;
	const struct pxfer_data_hello *dh = &m->u.data_hello;
	const struct pxfer_data_welcome *dw = &m->u.data_welcome;
	const struct pxfer_error *e = &m->u.error;
	const struct pxfer_file *f = &m->u.file;
	const struct pxfer_file_status *s = &m->u.status;
	const struct pxfer_file_ok *k = &m->u.ok;
	const struct pxfer_file_end *fe = &m->u.end;
	const struct pxfer_credit *cr = &m->u.credit;
	const struct pxfer_fin *fin = &m->u.fin;
	const struct pxfer_chain_hop *hop = &m->u.hop;
	unsigned int i;

	switch (m->type) {
	case PXFER_MSG_CHALLENGE:
		put_u32(w, c->magic);
		put_u16(w, c->version);
		put_u16(w, c->transport);
		put_bytes(w, c->nonce, PXFER_NONCE_LEN);
		break;
	case PXFER_MSG_HELLO:
		put_u32(w, h->magic);
		put_u16(w, h->version);
		put_u16(w, h->workers);
		put_u32(w, h->chunk_size);
		put_u32(w, h->flags);
		put_bytes(w, h->nonce, PXFER_NONCE_LEN);
		put_bytes(w, h->mac, PXFER_MAC_LEN);
		put_str(w, h->dest, h->dest_len);
		break;
	case PXFER_MSG_WELCOME:
		put_bytes(w, wl->mac, PXFER_MAC_LEN);
		put_u64(w, wl->session);
		put_u32(w, wl->chunk_size);
		put_u16(w, wl->workers);
		put_u16(w, wl->slots);
		put_u32(w, wl->max_files);
		put_u32(w, wl->flags);
		put_u8(w, wl->nrails);
		for (i = 0; i < wl->nrails && i < PXFER_WIRE_RAILS_MAX; i++) {
			put_u8(w, wl->rail[i].family);
			put_u8(w, wl->rail[i].prefix);
			put_bytes(w, wl->rail[i].addr, 16);
		}
		break;
	case PXFER_MSG_DATA_HELLO:
		put_u64(w, dh->session);
		put_u16(w, dh->worker);
		put_u16(w, dh->gen);
		put_bytes(w, dh->mac, PXFER_MAC_LEN);
		break;
	case PXFER_MSG_DATA_WELCOME:
		put_u16(w, dw->worker);
		put_bytes(w, dw->mac, PXFER_MAC_LEN);
		put_u16(w, dw->blob_len);
		put_bytes(w, dw->blob, dw->blob_len);
		break;
	case PXFER_MSG_REFUSE:
	case PXFER_MSG_ABORT:
		put_u32(w, e->code);
		put_str(w, e->text, e->text_len);
		break;
	case PXFER_MSG_FILE:
		put_u64(w, f->id);
		put_u8(w, f->type);
		put_u8(w, f->flags);
		put_u32(w, f->mode);
		put_u64(w, f->size);
		put_s64(w, f->mtime_sec);
		put_u32(w, f->mtime_nsec);
		put_bytes(w, f->digest, PXFER_DIGEST_LEN);
		put_str(w, f->path, f->path_len);
		put_str(w, f->target, f->target_len);
		if (f->flags & PXFER_FILE_RANGE) {
			put_u64(w, f->range_off);
			put_u64(w, f->range_len);
			put_bytes(w, f->job, PXFER_JOB_LEN);
		}
		break;
	case PXFER_MSG_FILE_OK:
		put_u64(w, k->id);
		put_u8(w, k->state);
		put_u64(w, k->held);
		put_bytes(w, k->digest, PXFER_DIGEST_LEN);
		put_u16(w, k->nrun);
		for (i = 0; i < k->nrun; i++) {
			put_u64(w, k->run[i].off);
			put_u64(w, k->run[i].len);
			put_u32(w, k->run[i].unit);
		}
		break;
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		put_u64(w, s->id);
		put_u32(w, s->code);
		put_str(w, s->text, s->text_len);
		break;
	case PXFER_MSG_FILE_END:
		put_u64(w, fe->id);
		put_u64(w, fe->bytes);
		put_u32(w, fe->code);
		put_bytes(w, fe->digest, PXFER_DIGEST_LEN);
		break;
	case PXFER_MSG_CREDIT:
		put_u16(w, cr->worker);
		put_u16(w, cr->count);
		for (i = 0; i < cr->count; i++)
			put_u16(w, cr->slots[i]);
		break;
	case PXFER_MSG_FIN:
	case PXFER_MSG_ACK:
		put_u64(w, fin->files);
		put_u64(w, fin->bytes);
		put_u32(w, fin->code);
		break;
	case PXFER_MSG_PING:
		put_u64(w, m->u.ping.checked);
		break;
	case PXFER_MSG_DATA_LOST:
		put_u16(w, m->u.lost.worker);
		put_u16(w, m->u.lost.gen);
		put_u32(w, m->u.lost.code);
		put_u64(w, m->u.lost.seq);
		break;
	case PXFER_MSG_DATA_SENT:
		put_u16(w, m->u.sent.worker);
		put_u16(w, m->u.sent.gen);
		put_u64(w, m->u.sent.chunks);
		break;
	case PXFER_MSG_FILE_SUM:
		put_u64(w, m->u.sum.id);
		put_u32(w, m->u.sum.code);
		put_bytes(w, m->u.sum.digest, PXFER_DIGEST_LEN);
		break;
	case PXFER_MSG_CHAIN:
		put_bytes(w, hop->chain, PXFER_JOB_LEN);
		put_u16(w, hop->pos);
		put_u16(w, hop->index);
		put_u16(w, hop->count);
		put_u16(w, hop->port);
		put_str(w, hop->host, hop->host_len);
		put_str(w, hop->dest, hop->dest_len);
		break;
	case PXFER_MSG_CHAIN_REPORT:
		put_u16(w, m->u.report.pos);
		put_u8(w, m->u.report.state);
		put_u8(w, m->u.report.code);
		put_u64(w, m->u.report.files);
		put_u64(w, m->u.report.bytes);
		break;
	default:
		break;
	}
}

/*
 * Counts are checked against the array they index before the loop that
 * fills it; everything else is checked afterwards by pxfer_msg_ok().
 */
static void get_body(struct rcur *r, struct pxfer_msg *m)
{
	struct pxfer_challenge *c = &m->u.challenge;
	struct pxfer_hello *h = &m->u.hello;
	struct pxfer_welcome *wl = &m->u.welcome;
	struct pxfer_data_hello *dh = &m->u.data_hello;
	struct pxfer_data_welcome *dw = &m->u.data_welcome;
	struct pxfer_error *e = &m->u.error;
	struct pxfer_file *f = &m->u.file;
	struct pxfer_file_status *s = &m->u.status;
	struct pxfer_file_ok *k = &m->u.ok;
	struct pxfer_file_end *fe = &m->u.end;
	struct pxfer_credit *cr = &m->u.credit;
	struct pxfer_fin *fin = &m->u.fin;
	struct pxfer_chain_hop *hop = &m->u.hop;
	unsigned int i;

	switch (m->type) {
	case PXFER_MSG_CHALLENGE:
		c->magic = get_u32(r);
		c->version = get_u16(r);
		c->transport = get_u16(r);
		get_bytes(r, c->nonce, PXFER_NONCE_LEN);
		break;
	case PXFER_MSG_HELLO:
		h->magic = get_u32(r);
		h->version = get_u16(r);
		h->workers = get_u16(r);
		h->chunk_size = get_u32(r);
		h->flags = get_u32(r);
		get_bytes(r, h->nonce, PXFER_NONCE_LEN);
		get_bytes(r, h->mac, PXFER_MAC_LEN);
		get_str(r, h->dest, &h->dest_len, PXFER_PATH_MAX);
		break;
	case PXFER_MSG_WELCOME:
		get_bytes(r, wl->mac, PXFER_MAC_LEN);
		wl->session = get_u64(r);
		wl->chunk_size = get_u32(r);
		wl->workers = get_u16(r);
		wl->slots = get_u16(r);
		wl->max_files = get_u32(r);
		wl->flags = get_u32(r);
		wl->nrails = get_u8(r);
		if (wl->nrails > PXFER_WIRE_RAILS_MAX) {
			r->err = 1;
			break;
		}
		memset(wl->rail, 0, sizeof(wl->rail));
		for (i = 0; i < wl->nrails; i++) {
			wl->rail[i].family = get_u8(r);
			wl->rail[i].prefix = get_u8(r);
			get_bytes(r, wl->rail[i].addr, 16);
		}
		break;
	case PXFER_MSG_DATA_HELLO:
		dh->session = get_u64(r);
		dh->worker = get_u16(r);
		dh->gen = get_u16(r);
		get_bytes(r, dh->mac, PXFER_MAC_LEN);
		break;
	case PXFER_MSG_DATA_WELCOME:
		dw->worker = get_u16(r);
		get_bytes(r, dw->mac, PXFER_MAC_LEN);
		dw->blob_len = get_u16(r);
		if (dw->blob_len > PXFER_BLOB_MAX) {
			r->err = 1;
			break;
		}
		/* zero the unused tail: no stale bytes in a decoded struct */
		memset(dw->blob, 0, sizeof(dw->blob));
		get_bytes(r, dw->blob, dw->blob_len);
		break;
	case PXFER_MSG_REFUSE:
	case PXFER_MSG_ABORT:
		e->code = get_u32(r);
		get_str(r, e->text, &e->text_len, PXFER_TEXT_MAX);
		break;
	case PXFER_MSG_FILE:
		f->id = get_u64(r);
		f->type = get_u8(r);
		f->flags = get_u8(r);
		f->mode = get_u32(r);
		f->size = get_u64(r);
		f->mtime_sec = get_s64(r);
		f->mtime_nsec = get_u32(r);
		get_bytes(r, f->digest, PXFER_DIGEST_LEN);
		get_str(r, f->path, &f->path_len, PXFER_PATH_MAX);
		get_str(r, f->target, &f->target_len, PXFER_PATH_MAX);
		memset(f->job, 0, PXFER_JOB_LEN);
		f->range_off = f->flags & PXFER_FILE_RANGE ? get_u64(r) : 0;
		f->range_len = f->flags & PXFER_FILE_RANGE ? get_u64(r) : 0;
		if (f->flags & PXFER_FILE_RANGE)
			get_bytes(r, f->job, PXFER_JOB_LEN);
		break;
	case PXFER_MSG_FILE_OK:
		k->id = get_u64(r);
		k->state = get_u8(r);
		k->held = get_u64(r);
		get_bytes(r, k->digest, PXFER_DIGEST_LEN);
		k->nrun = get_u16(r);
		if (k->nrun > PXFER_RUNS_MAX) {
			r->err = 1;
			break;
		}
		for (i = 0; i < k->nrun; i++) {
			k->run[i].off = get_u64(r);
			k->run[i].len = get_u64(r);
			k->run[i].unit = get_u32(r);
		}
		break;
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		s->id = get_u64(r);
		s->code = get_u32(r);
		get_str(r, s->text, &s->text_len, PXFER_TEXT_MAX);
		break;
	case PXFER_MSG_FILE_END:
		fe->id = get_u64(r);
		fe->bytes = get_u64(r);
		fe->code = get_u32(r);
		get_bytes(r, fe->digest, PXFER_DIGEST_LEN);
		break;
	case PXFER_MSG_CREDIT:
		cr->worker = get_u16(r);
		cr->count = get_u16(r);
		if (cr->count > PXFER_CREDIT_MAX) {
			r->err = 1;
			break;
		}
		for (i = 0; i < cr->count; i++)
			cr->slots[i] = get_u16(r);
		break;
	case PXFER_MSG_FIN:
	case PXFER_MSG_ACK:
		fin->files = get_u64(r);
		fin->bytes = get_u64(r);
		fin->code = get_u32(r);
		break;
	case PXFER_MSG_PING:
		m->u.ping.checked = get_u64(r);
		break;
	case PXFER_MSG_DATA_LOST:
		m->u.lost.worker = get_u16(r);
		m->u.lost.gen = get_u16(r);
		m->u.lost.code = get_u32(r);
		m->u.lost.seq = get_u64(r);
		break;
	case PXFER_MSG_DATA_SENT:
		m->u.sent.worker = get_u16(r);
		m->u.sent.gen = get_u16(r);
		m->u.sent.chunks = get_u64(r);
		break;
	case PXFER_MSG_FILE_SUM:
		m->u.sum.id = get_u64(r);
		m->u.sum.code = get_u32(r);
		get_bytes(r, m->u.sum.digest, PXFER_DIGEST_LEN);
		break;
	case PXFER_MSG_CHAIN:
		get_bytes(r, hop->chain, PXFER_JOB_LEN);
		hop->pos = get_u16(r);
		hop->index = get_u16(r);
		hop->count = get_u16(r);
		hop->port = get_u16(r);
		get_str(r, hop->host, &hop->host_len, PXFER_HOST_MAX);
		get_str(r, hop->dest, &hop->dest_len, PXFER_PATH_MAX);
		break;
	case PXFER_MSG_CHAIN_REPORT:
		m->u.report.pos = get_u16(r);
		m->u.report.state = get_u8(r);
		m->u.report.code = get_u8(r);
		m->u.report.files = get_u64(r);
		m->u.report.bytes = get_u64(r);
		break;
	default:
		r->err = 1;
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* Public entry points */

/* the header's fields; -EAGAIN if it is not all here, -EPROTO if a type
 * or flag is one we do not speak */
static int hdr_get(const void *buf, size_t len, struct pxfer_hdr *h)
{
	struct rcur r = { .p = buf, .left = len };

	if (len < PXFER_HDR_LEN)
		return -EAGAIN;
	h->type = get_u16(&r);
	h->flags = get_u16(&r);
	h->len = get_u32(&r);
	/* version 2 defines no flags; a set bit means a peer we do not speak */
	if (h->type < 1 || h->type > PXFER_MSG_TYPE_MAX || h->flags)
		return -EPROTO;
	return 0;
}

int pxfer_hdr_decode(const void *buf, size_t len, struct pxfer_hdr *h)
{
	int ret = hdr_get(buf, len, h);

	if (ret)
		return ret;
	return h->len > body_max[h->type] ? -EPROTO : 0;
}

int pxfer_hdr_decode_sealed(const void *buf, size_t len, struct pxfer_hdr *h)
{
	int ret = hdr_get(buf, len, h);

	if (ret)
		return ret;
	if (h->type == PXFER_MSG_CHUNK || h->len < PXFER_TAG_LEN ||
	    h->len - PXFER_TAG_LEN > body_max[h->type])
		return -EPROTO;
	return 0;
}

void pxfer_hdr_encode(void *buf, uint16_t type, uint32_t len)
{
	uint8_t *p = buf;

	/* fixed layout, written directly: type, flags (0), body length */
	p[0] = type >> 8;
	p[1] = type & 0xff;
	p[2] = 0;
	p[3] = 0;
	p[4] = len >> 24;
	p[5] = (len >> 16) & 0xff;
	p[6] = (len >> 8) & 0xff;
	p[7] = len & 0xff;
}

ssize_t pxfer_msg_encode(void *buf, size_t cap, const struct pxfer_msg *m)
{
	struct wcur w;
	size_t len;

	/* refuse to put on the wire what the peer's decoder would refuse */
	if (!pxfer_msg_ok(m))
		return -EINVAL;
	if (cap < PXFER_HDR_LEN)
		return -EMSGSIZE;
	w = (struct wcur){
		.p = (uint8_t *)buf + PXFER_HDR_LEN,
		.left = cap - PXFER_HDR_LEN,
	};
	put_body(&w, m);
	if (w.err)
		return -EMSGSIZE;
	len = cap - PXFER_HDR_LEN - w.left;
	pxfer_hdr_encode(buf, m->type, (uint32_t)len);
	return (ssize_t)(PXFER_HDR_LEN + len);
}

int pxfer_msg_decode(uint16_t type, const void *body, size_t len,
		     struct pxfer_msg *m)
{
	struct rcur r = { .p = body, .left = len };

	m->type = type;
	get_body(&r, m);
	/* short, trailing bytes, or a field out of range: all the same to us */
	if (r.err || r.left || !pxfer_msg_ok(m))
		return -EPROTO;
	return 0;
}

ssize_t pxfer_chunk_encode(void *buf, size_t cap, const struct pxfer_chunk *c)
{
	struct wcur w = { .p = buf, .left = cap };
	unsigned int i;

	if (!pxfer_chunk_ok(c))
		return -EINVAL;
	if (cap < pxfer_chunk_desc_len(c->nseg))
		return -EMSGSIZE;
	put_u16(&w, c->slot);
	put_u16(&w, c->nseg);
	put_u32(&w, c->len);
	put_u64(&w, c->seq);
	put_bytes(&w, c->tag, PXFER_TAG_LEN);
	for (i = 0; i < c->nseg; i++) {
		put_u64(&w, c->seg[i].file);
		put_u64(&w, c->seg[i].offset);
		put_u32(&w, c->seg[i].len);
	}
	return (ssize_t)pxfer_chunk_desc_len(c->nseg);
}

ssize_t pxfer_chunk_decode(const void *buf, size_t len, struct pxfer_chunk *c)
{
	struct rcur r = { .p = buf, .left = len };
	size_t need;
	unsigned int i;

	if (len < pxfer_chunk_desc_len(0))
		return -EAGAIN;
	c->slot = get_u16(&r);
	c->nseg = get_u16(&r);
	c->len = get_u32(&r);
	c->seq = get_u64(&r);
	get_bytes(&r, c->tag, PXFER_TAG_LEN);
	/*
	 * Judge the fixed part before asking for more bytes: a bad nseg must
	 * not make a stream reader wait for segments that are not coming, and
	 * it bounds the loop below to c->seg[].
	 */
	if (c->nseg < 1 || c->nseg > PXFER_SEG_MAX ||
	    c->len < 1 || c->len > PXFER_CHUNK_MAX)
		return -EPROTO;
	need = pxfer_chunk_desc_len(c->nseg);
	if (len < need)
		return -EAGAIN;
	for (i = 0; i < c->nseg; i++) {
		c->seg[i].file = get_u64(&r);
		c->seg[i].offset = get_u64(&r);
		c->seg[i].len = get_u32(&r);
	}
	if (r.err || !pxfer_chunk_ok(c))
		return -EPROTO;
	return (ssize_t)need;
}

const char *pxfer_msg_name(uint16_t type)
{
	if (type < 1 || type > PXFER_MSG_TYPE_MAX)
		return "UNKNOWN";
	return msg_names[type];
}
