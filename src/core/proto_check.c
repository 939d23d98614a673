/* SPDX-License-Identifier: MIT */
/*
 * The codec's field checks (core/proto.c): the rules of proto.h, which the
 * encoders apply to a struct before it goes on the wire (-EINVAL) and the
 * decoders to a struct just read from it (-EPROTO), so that a valid struct
 * always round-trips and an invalid one is never sent.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/proto.h"

#define TRANSPORT_MAX	1		/* 0 tcp, 1 rdma */
#define MAX_FILES_MAX	65536u
#define NSEC_PER_SEC	1000000000u
#define MODE_MAX	07777u

static bool zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	while (n--)
		acc |= *p++;
	return !acc;
}

/* An embedded NUL would make the C string disagree with its length. */
static bool str_ok(const char *s, size_t len, size_t max)
{
	return len <= max && !memchr(s, '\0', len);
}

static bool chunk_size_ok(uint32_t size)
{
	return size >= PXFER_CHUNK_MIN && size <= PXFER_CHUNK_MAX;
}

static bool workers_ok(uint16_t workers)
{
	return workers >= 1 && workers <= PXFER_WORKERS_MAX;
}

static bool challenge_ok(const struct pxfer_challenge *c)
{
	return c->magic == PXFER_MAGIC &&
	       c->version == PXFER_PROTO_VERSION &&
	       c->transport <= TRANSPORT_MAX;
}

/* a destination below the receiver's top directory, as a HELLO has it and
 * a CHAIN passes on to a hop's HELLO: the receiver checks it as a path */
static bool dest_ok(const char *dest, uint16_t len)
{
	return str_ok(dest, len, PXFER_PATH_MAX);
}

static bool hello_ok(const struct pxfer_hello *h)
{
	return h->magic == PXFER_MAGIC &&
	       h->version == PXFER_PROTO_VERSION &&
	       workers_ok(h->workers) &&
	       chunk_size_ok(h->chunk_size) &&
	       !(h->flags & ~PXFER_HELLO_FLAGS) &&
	       (h->flags & (PXFER_HELLO_CHECKSUM | PXFER_HELLO_ENCRYPT)) !=
	       (PXFER_HELLO_CHECKSUM | PXFER_HELLO_ENCRYPT) &&
	       dest_ok(h->dest, h->dest_len);
}

static bool rail_ok(const struct pxfer_wire_rail *r)
{
	if (r->family == 4)
		return r->prefix <= 32 && zero(r->addr + 4, 12);
	return r->family == 6 && r->prefix <= 128;
}

static bool welcome_ok(const struct pxfer_welcome *w)
{
	if (w->nrails > PXFER_WIRE_RAILS_MAX)
		return false;
	for (unsigned int i = 0; i < w->nrails; i++)
		if (!rail_ok(&w->rail[i]))
			return false;
	return chunk_size_ok(w->chunk_size) &&
	       workers_ok(w->workers) &&
	       w->slots >= 1 && w->slots <= PXFER_SLOTS_MAX &&
	       w->max_files >= 1 && w->max_files <= MAX_FILES_MAX &&
	       !(w->flags & ~PXFER_HELLO_PROT) &&
	       (w->flags & (PXFER_HELLO_CHECKSUM | PXFER_HELLO_ENCRYPT)) !=
	       (PXFER_HELLO_CHECKSUM | PXFER_HELLO_ENCRYPT);
}

/* a range is resumed into a shared partial, never compared whole */
static bool range_ok(const struct pxfer_file *f)
{
	if (!(f->flags & PXFER_FILE_RANGE))
		return !f->range_off && !f->range_len && zero(f->job, PXFER_JOB_LEN);
	if ((f->flags & (PXFER_FILE_RESUME | PXFER_FILE_CHECKSUM |
			 PXFER_FILE_SUM_FOLLOWS)) != PXFER_FILE_RESUME)
		return false;
	return f->range_len >= 1 && f->range_off <= f->size &&
	       f->range_len <= f->size - f->range_off &&
	       !zero(f->job, PXFER_JOB_LEN);
}

static bool file_ok(const struct pxfer_file *f)
{
	bool symlink = f->type == PXFER_FT_SYMLINK;

	if (f->type != PXFER_FT_REG && f->type != PXFER_FT_DIR && !symlink)
		return false;
	/* only REG has content; anything else with a size is a confused peer */
	if (f->type != PXFER_FT_REG && f->size)
		return false;
	/* a target must exist exactly when there is a link to point with it */
	if (symlink != (f->target_len > 0))
		return false;
	/* only a file with content can be kept, or compared; a digest
	 * travels exactly when it is to be compared */
	if ((f->type != PXFER_FT_REG && f->flags) || (f->flags & ~PXFER_FILE_FLAGS))
		return false;
	if (!(f->flags & PXFER_FILE_CHECKSUM) && !zero(f->digest, PXFER_DIGEST_LEN))
		return false;
	/* ... or in the FILE_SUM that follows */
	if ((f->flags & PXFER_FILE_SUM_FOLLOWS) &&
	    (!(f->flags & PXFER_FILE_CHECKSUM) || !zero(f->digest, PXFER_DIGEST_LEN)))
		return false;
	/* trust is a way of resuming */
	if ((f->flags & PXFER_FILE_TRUST) && !(f->flags & PXFER_FILE_RESUME))
		return false;
	return range_ok(f) && f->mode <= MODE_MAX &&
	       f->mtime_nsec < NSEC_PER_SEC &&
	       f->path_len >= 1 &&
	       str_ok(f->path, f->path_len, PXFER_PATH_MAX) &&
	       str_ok(f->target, f->target_len, PXFER_PATH_MAX);
}

/* runs sorted and disjoint, adding up to held; nothing else held */
static bool file_ok_ok(const struct pxfer_file_ok *k)
{
	uint64_t sum = 0, end = 0;

	if (k->state > PXFER_HAVE_MAX || k->nrun > PXFER_RUNS_MAX)
		return false;
	if (k->state != PXFER_HAVE_PART)
		return !k->nrun && !k->held && zero(k->digest, PXFER_DIGEST_LEN);
	if (!k->nrun)
		return false;
	for (unsigned int i = 0; i < k->nrun; i++) {
		const struct pxfer_held_run *r = &k->run[i];

		if (!r->len || r->off > UINT64_MAX - r->len || !r->unit ||
		    r->unit > PXFER_CHUNK_MAX || (i && r->off < end))
			return false;
		end = r->off + r->len;
		sum += r->len;	/* below end, which did not overflow */
	}
	return sum == k->held;
}

static bool status_ok(uint16_t type, const struct pxfer_file_status *s)
{
	if (type == PXFER_MSG_FILE_ERR && !s->code)
		return false;
	return str_ok(s->text, s->text_len, PXFER_TEXT_MAX);
}

static bool credit_ok(const struct pxfer_credit *c)
{
	unsigned int i;

	if (c->worker >= PXFER_WORKERS_MAX ||
	    c->count < 1 || c->count > PXFER_CREDIT_MAX)
		return false;
	for (i = 0; i < c->count; i++)
		if (c->slots[i] >= PXFER_SLOTS_MAX)
			return false;
	return true;
}

/*
 * A hop's host name or address (IPv6 in brackets, with a zone): letters,
 * digits and ".-_:[]%" only, nothing that a log line, a shell or the
 * resolver would read as something else.
 */
static bool host_ok(const char *host, uint16_t len)
{
	if (len < 1 || len > PXFER_HOST_MAX)
		return false;
	for (uint16_t i = 0; i < len; i++) {
		char c = host[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !(c >= '0' && c <= '9') && !(c && strchr(".-_:[]%", c)))
			return false;
	}
	return true;
}

/* the source is at 0 and the receiver given the hops at 1 at least */
static bool hop_pos_ok(uint16_t pos)
{
	return pos >= 2 && pos <= PXFER_CHAIN_MAX;
}

static bool chain_hop_ok(const struct pxfer_chain_hop *h)
{
	return !zero(h->chain, PXFER_JOB_LEN) && hop_pos_ok(h->pos) &&
	       h->count >= 1 && h->count <= PXFER_CHAIN_MAX - 1 &&
	       h->index < h->count && h->port &&
	       host_ok(h->host, h->host_len) &&
	       dest_ok(h->dest, h->dest_len);
}

/* a code exactly when the hop did not end well */
static bool chain_report_ok(const struct pxfer_chain_report *r)
{
	return hop_pos_ok(r->pos) && r->state <= PXFER_HOP_STATE_MAX &&
	       (r->code == 0) == (r->state == PXFER_HOP_OK);
}

bool pxfer_msg_ok(const struct pxfer_msg *m)
{
	switch (m->type) {
	case PXFER_MSG_CHALLENGE:
		return challenge_ok(&m->u.challenge);
	case PXFER_MSG_HELLO:
		return hello_ok(&m->u.hello);
	case PXFER_MSG_WELCOME:
		return welcome_ok(&m->u.welcome);
	case PXFER_MSG_DATA_HELLO:
		return m->u.data_hello.worker < PXFER_WORKERS_MAX;
	case PXFER_MSG_DATA_WELCOME:
		return m->u.data_welcome.worker < PXFER_WORKERS_MAX &&
		       m->u.data_welcome.blob_len <= PXFER_BLOB_MAX;
	case PXFER_MSG_REFUSE:
	case PXFER_MSG_ABORT:
		return str_ok(m->u.error.text, m->u.error.text_len,
			      PXFER_TEXT_MAX);
	case PXFER_MSG_FILE:
		return file_ok(&m->u.file);
	case PXFER_MSG_FILE_OK:
		return file_ok_ok(&m->u.ok);
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		return status_ok(m->type, &m->u.status);
	case PXFER_MSG_FILE_END:
		return true;
	case PXFER_MSG_CREDIT:
		return credit_ok(&m->u.credit);
	case PXFER_MSG_FIN:
		/* a sender that failed says so with ABORT, not with FIN */
		return m->u.fin.code == 0;
	case PXFER_MSG_ACK:
	case PXFER_MSG_PING:
		return true;
	case PXFER_MSG_DATA_LOST:
		return m->u.lost.worker < PXFER_WORKERS_MAX &&
		       m->u.lost.code > 0 && m->u.lost.code < 4096;
	case PXFER_MSG_DATA_SENT:
		return m->u.sent.worker < PXFER_WORKERS_MAX;
	case PXFER_MSG_FILE_SUM:
		return !m->u.sum.code || zero(m->u.sum.digest, PXFER_DIGEST_LEN);
	case PXFER_MSG_CHAIN:
		return chain_hop_ok(&m->u.hop);
	case PXFER_MSG_CHAIN_REPORT:
		return chain_report_ok(&m->u.report);
	default:
		/* unknown, or CHUNK, which has its own codec */
		return false;
	}
}

bool pxfer_chunk_ok(const struct pxfer_chunk *c)
{
	uint64_t sum = 0;	/* 64 u32 lengths cannot overflow it */
	unsigned int i;

	if (c->nseg < 1 || c->nseg > PXFER_SEG_MAX ||
	    c->len < 1 || c->len > PXFER_CHUNK_MAX)
		return false;
	for (i = 0; i < c->nseg; i++) {
		const struct pxfer_seg *s = &c->seg[i];

		/* an empty segment or one past the end of a 64-bit file */
		if (!s->len || s->offset > UINT64_MAX - s->len)
			return false;
		sum += s->len;
	}
	/* the payload is exactly the segments laid end to end */
	return sum == c->len;
}
