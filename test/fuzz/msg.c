/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: pxfer_msg_decode for every message type (the first input
 * byte is the type, the rest is the body), and pxfer_msg_name. Oracle:
 * only the control types decode; the strings of an accepted message are
 * NUL-terminated at their length with no NUL inside (a CHAIN's host of
 * the characters a host may have); the message encodes
 * back to exactly the body decoded, behind a header that pxfer_hdr_decode
 * accepts (no valid body is over its type's limit), into a buffer of
 * exactly that size and no smaller; and that body decodes to the same
 * message, whatever the struct held before.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "core/proto.h"
#include "fuzz.h"

#define HOST_CHARS	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" \
			"0123456789.-_:[]%"

static bool str_ok(const char *s, uint16_t len, size_t max)
{
	return len <= max && strlen(s) == len;
}

static bool strings_ok(const struct pxfer_msg *m)
{
	switch (m->type) {
	case PXFER_MSG_HELLO:
		return str_ok(m->u.hello.dest, m->u.hello.dest_len,
			      PXFER_PATH_MAX);
	case PXFER_MSG_REFUSE:
	case PXFER_MSG_ABORT:
		return str_ok(m->u.error.text, m->u.error.text_len,
			      PXFER_TEXT_MAX);
	case PXFER_MSG_FILE:
		return str_ok(m->u.file.path, m->u.file.path_len,
			      PXFER_PATH_MAX) &&
		       str_ok(m->u.file.target, m->u.file.target_len,
			      PXFER_PATH_MAX);
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		return str_ok(m->u.status.text, m->u.status.text_len,
			      PXFER_TEXT_MAX);
	case PXFER_MSG_CHAIN:
		/* a host of the characters proto.h allows, and some */
		return str_ok(m->u.hop.host, m->u.hop.host_len,
			      PXFER_HOST_MAX) && m->u.hop.host_len &&
		       strspn(m->u.hop.host, HOST_CHARS) == m->u.hop.host_len &&
		       str_ok(m->u.hop.dest, m->u.hop.dest_len,
			      PXFER_PATH_MAX);
	default:
		return true;
	}
}

/* Two strings of a decoded message, the terminating NUL included. */
static bool same_str(const char *a, uint16_t alen, const char *b, uint16_t blen)
{
	return alen == blen && !memcmp(a, b, alen + 1);
}

static bool same_hello(const struct pxfer_hello *a, const struct pxfer_hello *b)
{
	return a->magic == b->magic && a->version == b->version &&
	       a->workers == b->workers && a->chunk_size == b->chunk_size &&
	       a->flags == b->flags &&
	       !memcmp(a->nonce, b->nonce, PXFER_NONCE_LEN) &&
	       !memcmp(a->mac, b->mac, PXFER_MAC_LEN) &&
	       same_str(a->dest, a->dest_len, b->dest, b->dest_len);
}

static bool same_file(const struct pxfer_file *a, const struct pxfer_file *b)
{
	return a->id == b->id && a->type == b->type && a->flags == b->flags &&
	       a->mode == b->mode && a->size == b->size &&
	       a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec &&
	       !memcmp(a->digest, b->digest, PXFER_DIGEST_LEN) &&
	       same_str(a->path, a->path_len, b->path, b->path_len) &&
	       same_str(a->target, a->target_len, b->target, b->target_len);
}

static bool same_hop(const struct pxfer_chain_hop *a,
		     const struct pxfer_chain_hop *b)
{
	return !memcmp(a->chain, b->chain, PXFER_JOB_LEN) &&
	       a->pos == b->pos && a->index == b->index &&
	       a->count == b->count && a->port == b->port &&
	       same_str(a->host, a->host_len, b->host, b->host_len) &&
	       same_str(a->dest, a->dest_len, b->dest, b->dest_len);
}

static bool same_report(const struct pxfer_chain_report *a,
			const struct pxfer_chain_report *b)
{
	return a->pos == b->pos && a->state == b->state &&
	       a->code == b->code && a->files == b->files &&
	       a->bytes == b->bytes;
}

/* The runs up to nrun count; what the struct holds past them does not. */
static bool same_file_ok(const struct pxfer_file_ok *a,
			 const struct pxfer_file_ok *b)
{
	if (a->id != b->id || a->state != b->state || a->held != b->held ||
	    a->nrun != b->nrun ||
	    memcmp(a->digest, b->digest, PXFER_DIGEST_LEN))
		return false;
	for (unsigned int i = 0; i < a->nrun; i++)
		if (a->run[i].off != b->run[i].off ||
		    a->run[i].len != b->run[i].len ||
		    a->run[i].unit != b->run[i].unit)
			return false;
	return true;
}

/* Field by field: padding and the bytes past a string's NUL do not count. */
static bool same_msg(const struct pxfer_msg *a, const struct pxfer_msg *b)
{
	const struct pxfer_challenge *ca = &a->u.challenge;
	const struct pxfer_challenge *cb = &b->u.challenge;
	const struct pxfer_welcome *wa = &a->u.welcome, *wb = &b->u.welcome;
	const struct pxfer_data_hello *da = &a->u.data_hello;
	const struct pxfer_data_hello *db = &b->u.data_hello;
	const struct pxfer_data_welcome *dwa = &a->u.data_welcome;
	const struct pxfer_data_welcome *dwb = &b->u.data_welcome;
	const struct pxfer_error *ea = &a->u.error, *eb = &b->u.error;
	const struct pxfer_file_status *sa = &a->u.status, *sb = &b->u.status;
	const struct pxfer_file_end *fa = &a->u.end, *fb = &b->u.end;
	const struct pxfer_credit *cra = &a->u.credit, *crb = &b->u.credit;
	const struct pxfer_fin *na = &a->u.fin, *nb = &b->u.fin;

	if (a->type != b->type)
		return false;
	switch (a->type) {
	case PXFER_MSG_CHALLENGE:
		return ca->magic == cb->magic && ca->version == cb->version &&
		       ca->transport == cb->transport &&
		       !memcmp(ca->nonce, cb->nonce, PXFER_NONCE_LEN);
	case PXFER_MSG_HELLO:
		return same_hello(&a->u.hello, &b->u.hello);
	case PXFER_MSG_WELCOME:
		return !memcmp(wa->mac, wb->mac, PXFER_MAC_LEN) &&
		       wa->session == wb->session &&
		       wa->chunk_size == wb->chunk_size &&
		       wa->workers == wb->workers && wa->slots == wb->slots &&
		       wa->max_files == wb->max_files &&
		       wa->flags == wb->flags && wa->nrails == wb->nrails &&
		       !memcmp(wa->rail, wb->rail,
			       wa->nrails * sizeof(wa->rail[0]));
	case PXFER_MSG_DATA_HELLO:
		return da->session == db->session && da->worker == db->worker &&
		       da->gen == db->gen &&
		       !memcmp(da->mac, db->mac, PXFER_MAC_LEN);
	case PXFER_MSG_DATA_WELCOME:
		/* the decoder zeroes the blob past blob_len: it all counts */
		return dwa->worker == dwb->worker &&
		       dwa->blob_len == dwb->blob_len &&
		       !memcmp(dwa->blob, dwb->blob, PXFER_BLOB_MAX);
	case PXFER_MSG_REFUSE:
	case PXFER_MSG_ABORT:
		return ea->code == eb->code &&
		       same_str(ea->text, ea->text_len, eb->text, eb->text_len);
	case PXFER_MSG_FILE:
		return same_file(&a->u.file, &b->u.file);
	case PXFER_MSG_FILE_OK:
		return same_file_ok(&a->u.ok, &b->u.ok);
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		return sa->id == sb->id && sa->code == sb->code &&
		       same_str(sa->text, sa->text_len, sb->text, sb->text_len);
	case PXFER_MSG_FILE_END:
		return fa->id == fb->id && fa->bytes == fb->bytes &&
		       fa->code == fb->code &&
		       !memcmp(fa->digest, fb->digest, PXFER_DIGEST_LEN);
	case PXFER_MSG_CREDIT:
		return cra->worker == crb->worker && cra->count == crb->count &&
		       !memcmp(cra->slots, crb->slots,
			       cra->count * sizeof(cra->slots[0]));
	case PXFER_MSG_FIN:
	case PXFER_MSG_ACK:
		return na->files == nb->files && na->bytes == nb->bytes &&
		       na->code == nb->code;
	case PXFER_MSG_PING:
		return true;
	case PXFER_MSG_DATA_LOST:
		return a->u.lost.worker == b->u.lost.worker &&
		       a->u.lost.gen == b->u.lost.gen &&
		       a->u.lost.code == b->u.lost.code &&
		       a->u.lost.seq == b->u.lost.seq;
	case PXFER_MSG_DATA_SENT:
		return a->u.sent.worker == b->u.sent.worker &&
		       a->u.sent.gen == b->u.sent.gen &&
		       a->u.sent.chunks == b->u.sent.chunks;
	case PXFER_MSG_FILE_SUM:
		return a->u.sum.id == b->u.sum.id && a->u.sum.code == b->u.sum.code &&
		       !memcmp(a->u.sum.digest, b->u.sum.digest, PXFER_DIGEST_LEN);
	case PXFER_MSG_CHAIN:
		return same_hop(&a->u.hop, &b->u.hop);
	case PXFER_MSG_CHAIN_REPORT:
		return same_report(&a->u.report, &b->u.report);
	default:
		return false;
	}
}

static void check_name(uint16_t type)
{
	const char *name = pxfer_msg_name(type);
	bool known = type >= 1 && type <= PXFER_MSG_TYPE_MAX;

	FUZZ_CHECK(name && name[0]);
	FUZZ_CHECK(strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == strlen(name));
	FUZZ_CHECK(known == (strcmp(name, "UNKNOWN") != 0));
}

/* Encode @m, which decoded from @body (@len bytes), and check the result. */
static void check_encode(const struct pxfer_msg *m, const uint8_t *body,
			 size_t len)
{
	size_t frame_len = PXFER_HDR_LEN + len;
	uint8_t *frame = malloc(frame_len);
	struct pxfer_msg *again = malloc(sizeof(*again));
	struct pxfer_hdr h;

	FUZZ_CHECK(frame && again);
	FUZZ_CHECK(pxfer_msg_encode(frame, frame_len - 1, m) == -EMSGSIZE);
	FUZZ_CHECK(pxfer_msg_encode(frame, frame_len, m) == (ssize_t)frame_len);
	FUZZ_CHECK(!memcmp(frame + PXFER_HDR_LEN, body, len));
	FUZZ_CHECK(pxfer_hdr_decode(frame, frame_len, &h) == 0);
	FUZZ_CHECK(h.type == m->type && h.len == len);

	memset(again, 0xa5, sizeof(*again));
	FUZZ_CHECK(pxfer_msg_decode(h.type, frame + PXFER_HDR_LEN, h.len,
				    again) == 0);
	FUZZ_CHECK(same_msg(m, again));
	free(again);
	free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pxfer_msg *m;
	uint16_t type;
	int ret;

	if (size < 1)
		return 0;
	type = data[0];
	check_name(type);
	if (size >= 2)
		check_name((uint16_t)(data[0] << 8 | data[1]));

	m = calloc(1, sizeof(*m));
	FUZZ_CHECK(m);
	ret = pxfer_msg_decode(type, data + 1, size - 1, m);
	FUZZ_CHECK(ret == 0 || ret == -EPROTO);
	if (!ret) {
		FUZZ_CHECK(type >= 1 && type <= PXFER_MSG_TYPE_MAX &&
			   type != PXFER_MSG_CHUNK);
		FUZZ_CHECK(strings_ok(m));
		check_encode(m, data + 1, size - 1);
	}
	free(m);
	return 0;
}
