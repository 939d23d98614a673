/* SPDX-License-Identifier: MIT */
/*
 * Tests of the wire codec (src/proto.c).
 *
 * The byte layout is checked against a small reference encoder written here
 * from the comments in proto.h alone, so a field swapped or resized in
 * proto.c shows up as a difference rather than as a symmetric round trip of
 * the wrong format. The same reference encoder produces the malformed bodies
 * (it does not validate), which the decoder must refuse.
 *
 * Every decode of untrusted bytes reads from a heap buffer of exactly the
 * body's length, so AddressSanitizer catches a read one byte past the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bytes.h"
#include "core/proto.h"
#include "test.h"

#define FUZZ_ITERATIONS	200000
#define FRAME_MAX	(PXFER_HDR_LEN + PXFER_MSG_MAX)

/* ------------------------------------------------------------------------ */
/* Reference encoder: proto.h's layout, no checks */

struct raw {
	uint8_t b[1 << 21];	/* room for a count of 0xffff */
	size_t n;
};

static void raw_be(struct raw *r, uint64_t v, unsigned int n)
{
	unsigned int i;

	if (r->n + n > sizeof(r->b))
		abort();
	for (i = 0; i < n; i++)
		r->b[r->n + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	r->n += n;
}

/* Copy @n bytes from @src, which has room for @avail: zero past the end. */
static void raw_bytes(struct raw *r, const void *src, size_t n, size_t avail)
{
	if (r->n + n > sizeof(r->b))
		abort();
	memset(r->b + r->n, 0, n);
	memcpy(r->b + r->n, src, n < avail ? n : avail);
	r->n += n;
}

static void raw_str(struct raw *r, const char *s, uint16_t len, size_t avail)
{
	raw_be(r, len, 2);
	raw_bytes(r, s, len, avail);
}

static void raw_body(struct raw *r, const struct pxfer_msg *m)
{
	const struct pxfer_challenge *c = &m->u.challenge;
	const struct pxfer_hello *h = &m->u.hello;
	const struct pxfer_welcome *w = &m->u.welcome;
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
	const struct pxfer_chain_report *rep = &m->u.report;
	unsigned int i;

	r->n = 0;
	switch (m->type) {
	case PXFER_MSG_CHALLENGE:
		raw_be(r, c->magic, 4);
		raw_be(r, c->version, 2);
		raw_be(r, c->transport, 2);
		raw_bytes(r, c->nonce, PXFER_NONCE_LEN, PXFER_NONCE_LEN);
		break;
	case PXFER_MSG_HELLO:
		raw_be(r, h->magic, 4);
		raw_be(r, h->version, 2);
		raw_be(r, h->workers, 2);
		raw_be(r, h->chunk_size, 4);
		raw_be(r, h->flags, 4);
		raw_bytes(r, h->nonce, PXFER_NONCE_LEN, PXFER_NONCE_LEN);
		raw_bytes(r, h->mac, PXFER_MAC_LEN, PXFER_MAC_LEN);
		raw_str(r, h->dest, h->dest_len, sizeof(h->dest));
		break;
	case PXFER_MSG_WELCOME:
		raw_bytes(r, w->mac, PXFER_MAC_LEN, PXFER_MAC_LEN);
		raw_be(r, w->session, 8);
		raw_be(r, w->chunk_size, 4);
		raw_be(r, w->workers, 2);
		raw_be(r, w->slots, 2);
		raw_be(r, w->max_files, 4);
		raw_be(r, w->flags, 4);
		raw_be(r, w->nrails, 1);
		for (i = 0; i < w->nrails; i++) {
			const struct pxfer_wire_rail *rl =
				&w->rail[i < PXFER_WIRE_RAILS_MAX ? i : 0];

			raw_be(r, rl->family, 1);
			raw_be(r, rl->prefix, 1);
			raw_bytes(r, rl->addr, 16, 16);
		}
		break;
	case PXFER_MSG_DATA_HELLO:
		raw_be(r, dh->session, 8);
		raw_be(r, dh->worker, 2);
		raw_be(r, dh->gen, 2);
		raw_bytes(r, dh->mac, PXFER_MAC_LEN, PXFER_MAC_LEN);
		break;
	case PXFER_MSG_DATA_WELCOME:
		raw_be(r, dw->worker, 2);
		raw_bytes(r, dw->mac, PXFER_MAC_LEN, PXFER_MAC_LEN);
		raw_be(r, dw->blob_len, 2);
		raw_bytes(r, dw->blob, dw->blob_len, sizeof(dw->blob));
		break;
	case PXFER_MSG_REFUSE:
	case PXFER_MSG_ABORT:
		raw_be(r, e->code, 4);
		raw_str(r, e->text, e->text_len, sizeof(e->text));
		break;
	case PXFER_MSG_FILE:
		raw_be(r, f->id, 8);
		raw_be(r, f->type, 1);
		raw_be(r, f->flags, 1);
		raw_be(r, f->mode, 4);
		raw_be(r, f->size, 8);
		raw_be(r, (uint64_t)f->mtime_sec, 8);
		raw_be(r, f->mtime_nsec, 4);
		raw_bytes(r, f->digest, PXFER_DIGEST_LEN, PXFER_DIGEST_LEN);
		raw_str(r, f->path, f->path_len, sizeof(f->path));
		raw_str(r, f->target, f->target_len, sizeof(f->target));
		if (f->flags & PXFER_FILE_RANGE) {
			raw_be(r, f->range_off, 8);
			raw_be(r, f->range_len, 8);
			raw_bytes(r, f->job, PXFER_JOB_LEN, PXFER_JOB_LEN);
		}
		break;
	case PXFER_MSG_FILE_OK:
		raw_be(r, k->id, 8);
		raw_be(r, k->state, 1);
		raw_be(r, k->held, 8);
		raw_bytes(r, k->digest, PXFER_DIGEST_LEN, PXFER_DIGEST_LEN);
		raw_be(r, k->nrun, 2);
		for (i = 0; i < k->nrun; i++) {
			const struct pxfer_held_run *run =
				&k->run[i < PXFER_RUNS_MAX ? i : 0];

			raw_be(r, run->off, 8);
			raw_be(r, run->len, 8);
			raw_be(r, run->unit, 4);
		}
		break;
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		raw_be(r, s->id, 8);
		raw_be(r, s->code, 4);
		raw_str(r, s->text, s->text_len, sizeof(s->text));
		break;
	case PXFER_MSG_FILE_END:
		raw_be(r, fe->id, 8);
		raw_be(r, fe->bytes, 8);
		raw_be(r, fe->code, 4);
		raw_bytes(r, fe->digest, PXFER_DIGEST_LEN, PXFER_DIGEST_LEN);
		break;
	case PXFER_MSG_CREDIT:
		raw_be(r, cr->worker, 2);
		raw_be(r, cr->count, 2);
		for (i = 0; i < cr->count; i++)
			raw_be(r, i < PXFER_CREDIT_MAX ? cr->slots[i] : 0, 2);
		break;
	case PXFER_MSG_FIN:
	case PXFER_MSG_ACK:
		raw_be(r, fin->files, 8);
		raw_be(r, fin->bytes, 8);
		raw_be(r, fin->code, 4);
		break;
	case PXFER_MSG_DATA_LOST:
		raw_be(r, m->u.lost.worker, 2);
		raw_be(r, m->u.lost.gen, 2);
		raw_be(r, m->u.lost.code, 4);
		raw_be(r, m->u.lost.seq, 8);
		break;
	case PXFER_MSG_PING:
		raw_be(r, m->u.ping.checked, 8);
		break;
	case PXFER_MSG_DATA_SENT:
		raw_be(r, m->u.sent.worker, 2);
		raw_be(r, m->u.sent.gen, 2);
		raw_be(r, m->u.sent.chunks, 8);
		break;
	case PXFER_MSG_FILE_SUM:
		raw_be(r, m->u.sum.id, 8);
		raw_be(r, m->u.sum.code, 4);
		raw_bytes(r, m->u.sum.digest, PXFER_DIGEST_LEN, PXFER_DIGEST_LEN);
		break;
	case PXFER_MSG_CHAIN:
		raw_bytes(r, hop->chain, PXFER_JOB_LEN, PXFER_JOB_LEN);
		raw_be(r, hop->pos, 2);
		raw_be(r, hop->index, 2);
		raw_be(r, hop->count, 2);
		raw_be(r, hop->port, 2);
		raw_str(r, hop->host, hop->host_len, sizeof(hop->host));
		raw_str(r, hop->dest, hop->dest_len, sizeof(hop->dest));
		break;
	case PXFER_MSG_CHAIN_REPORT:
		raw_be(r, rep->pos, 2);
		raw_be(r, rep->state, 1);
		raw_be(r, rep->code, 1);
		raw_be(r, rep->files, 8);
		raw_be(r, rep->bytes, 8);
		break;
	default:
		abort();
	}
}

static void raw_chunk(struct raw *r, const struct pxfer_chunk *c)
{
	unsigned int i;

	r->n = 0;
	raw_be(r, c->slot, 2);
	raw_be(r, c->nseg, 2);
	raw_be(r, c->len, 4);
	raw_be(r, c->seq, 8);
	for (i = 0; i < PXFER_TAG_LEN; i++)
		raw_be(r, c->tag[i], 1);
	for (i = 0; i < c->nseg; i++) {
		const struct pxfer_seg *s = &c->seg[i < PXFER_SEG_MAX ? i : 0];

		raw_be(r, s->file, 8);
		raw_be(r, s->offset, 8);
		raw_be(r, s->len, 4);
	}
}

/* ------------------------------------------------------------------------ */
/* Decoding from exactly-sized heap copies */

static int decode_exact(uint16_t type, const void *body, size_t len,
			struct pxfer_msg *m)
{
	uint8_t *p = malloc(len);
	int rc;

	if (!p && len)
		abort();
	if (len)
		memcpy(p, body, len);
	rc = pxfer_msg_decode(type, p, len, m);
	free(p);
	return rc;
}

static ssize_t chunk_decode_exact(const void *buf, size_t len,
				  struct pxfer_chunk *c)
{
	uint8_t *p = malloc(len);
	ssize_t rc;

	if (!p && len)
		abort();
	if (len)
		memcpy(p, buf, len);
	rc = pxfer_chunk_decode(p, len, c);
	free(p);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Valid sample messages: representative and boundary values */

static struct pxfer_msg samples[96];
static int nsamples;

static struct pxfer_chunk chunks[4];
static int nchunks;

static struct pxfer_msg *new_sample(uint16_t type)
{
	struct pxfer_msg *m;

	if (nsamples == (int)(sizeof(samples) / sizeof(samples[0])))
		abort();
	m = &samples[nsamples++];
	memset(m, 0, sizeof(*m));
	m->type = type;
	return m;
}

static void fill_bytes(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 37);
}

/* A path-like string of @len bytes with components of at most 63 bytes. */
static void fill_str(char *dst, uint16_t *lenp, size_t len, char seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		dst[i] = i % 64 == 63 ? '/' : (char)('a' + (seed + i * 7) % 26);
	if (len)
		dst[len - 1] = 'z';
	dst[len] = '\0';
	*lenp = (uint16_t)len;
}

static void set_str(char *dst, uint16_t *lenp, const char *s)
{
	size_t len = strlen(s);

	memcpy(dst, s, len + 1);
	*lenp = (uint16_t)len;
}

static void add_handshake_samples(void)
{
	struct pxfer_msg *m;

	/* the first sample of each type is the base of the malformed cases */
	m = new_sample(PXFER_MSG_CHALLENGE);
	m->u.challenge = (struct pxfer_challenge){
		.magic = PXFER_MAGIC, .version = PXFER_PROTO_VERSION,
		.transport = 0 };
	fill_bytes(m->u.challenge.nonce, PXFER_NONCE_LEN, 1);
	m = new_sample(PXFER_MSG_CHALLENGE);
	m->u.challenge = (struct pxfer_challenge){
		.magic = PXFER_MAGIC, .version = PXFER_PROTO_VERSION,
		.transport = 1 };
	memset(m->u.challenge.nonce, 0xff, PXFER_NONCE_LEN);

	m = new_sample(PXFER_MSG_HELLO);
	m->u.hello.magic = PXFER_MAGIC;
	m->u.hello.version = PXFER_PROTO_VERSION;
	m->u.hello.workers = 4;
	m->u.hello.chunk_size = 1u << 20;
	fill_bytes(m->u.hello.nonce, PXFER_NONCE_LEN, 2);
	fill_bytes(m->u.hello.mac, PXFER_MAC_LEN, 3);
	set_str(m->u.hello.dest, &m->u.hello.dest_len, "backup/today");
	m = new_sample(PXFER_MSG_HELLO);
	m->u.hello = samples[nsamples - 2].u.hello;
	m->u.hello.workers = PXFER_WORKERS_MAX;
	m->u.hello.chunk_size = PXFER_CHUNK_MAX;
	m->u.hello.flags = PXFER_HELLO_FLAGS & ~PXFER_HELLO_CHECKSUM;
	fill_str(m->u.hello.dest, &m->u.hello.dest_len, PXFER_PATH_MAX, 5);
	m = new_sample(PXFER_MSG_HELLO);
	m->u.hello = samples[nsamples - 2].u.hello;
	m->u.hello.workers = 1;
	m->u.hello.chunk_size = PXFER_CHUNK_MIN;
	m->u.hello.flags = PXFER_HELLO_FSYNC;
	set_str(m->u.hello.dest, &m->u.hello.dest_len, "");
	/* --verify, with the plain checksum on the chunks */
	m = new_sample(PXFER_MSG_HELLO);
	m->u.hello = samples[nsamples - 2].u.hello;
	m->u.hello.flags = PXFER_HELLO_VERIFY | PXFER_HELLO_CHECKSUM;

	m = new_sample(PXFER_MSG_WELCOME);
	fill_bytes(m->u.welcome.mac, PXFER_MAC_LEN, 4);
	m->u.welcome.session = 0x0123456789abcdefull;
	m->u.welcome.chunk_size = 4u << 20;
	m->u.welcome.workers = 8;
	m->u.welcome.slots = 16;
	m->u.welcome.max_files = 1024;
	m = new_sample(PXFER_MSG_WELCOME);
	m->u.welcome = samples[nsamples - 2].u.welcome;
	m->u.welcome.session = UINT64_MAX;
	m->u.welcome.chunk_size = PXFER_CHUNK_MAX;
	m->u.welcome.workers = PXFER_WORKERS_MAX;
	m->u.welcome.slots = PXFER_SLOTS_MAX;
	m->u.welcome.max_files = 65536;
	m->u.welcome.flags = PXFER_HELLO_PROT & ~PXFER_HELLO_ENCRYPT;
	m = new_sample(PXFER_MSG_WELCOME);
	m->u.welcome.session = 0;
	m->u.welcome.chunk_size = PXFER_CHUNK_MIN;
	m->u.welcome.workers = 1;
	m->u.welcome.slots = 1;
	m->u.welcome.max_files = 1;
	/* rails: one IPv4 with its prefix, then all of them, IPv6 too */
	m = new_sample(PXFER_MSG_WELCOME);
	m->u.welcome = samples[nsamples - 2].u.welcome;
	m->u.welcome.nrails = 1;
	m->u.welcome.rail[0] = (struct pxfer_wire_rail){
		.family = 4, .prefix = 24, .addr = { 10, 77, 0, 1 },
	};
	m = new_sample(PXFER_MSG_WELCOME);
	m->u.welcome = samples[nsamples - 2].u.welcome;
	m->u.welcome.nrails = PXFER_WIRE_RAILS_MAX;
	for (unsigned int k = 0; k < PXFER_WIRE_RAILS_MAX; k++) {
		m->u.welcome.rail[k].family = k % 2 ? 6 : 4;
		m->u.welcome.rail[k].prefix = k % 2 ? 128 : 32;
		fill_bytes(m->u.welcome.rail[k].addr, k % 2 ? 16 : 4, 20 + k);
	}

	m = new_sample(PXFER_MSG_DATA_LOST);
	m->u.lost = (struct pxfer_data_lost){ .worker = 0, .code = ECONNRESET };
	m = new_sample(PXFER_MSG_DATA_LOST);
	m->u.lost = (struct pxfer_data_lost){
		.worker = PXFER_WORKERS_MAX - 1, .gen = UINT16_MAX, .code = 4095,
		.seq = UINT64_MAX,
	};

	m = new_sample(PXFER_MSG_DATA_SENT);
	m->u.sent = (struct pxfer_data_sent){ .worker = 0, .chunks = 0 };
	m = new_sample(PXFER_MSG_DATA_SENT);
	m->u.sent = (struct pxfer_data_sent){
		.worker = PXFER_WORKERS_MAX - 1, .gen = 7, .chunks = UINT64_MAX,
	};

	m = new_sample(PXFER_MSG_FILE_SUM);
	m->u.sum = (struct pxfer_file_sum){ .id = 0, .code = 0 };
	fill_bytes(m->u.sum.digest, PXFER_DIGEST_LEN, 21);
	m = new_sample(PXFER_MSG_FILE_SUM);
	m->u.sum = (struct pxfer_file_sum){ .id = UINT64_MAX, .code = EIO };

	m = new_sample(PXFER_MSG_DATA_HELLO);
	m->u.data_hello.session = 0x0123456789abcdefull;
	m->u.data_hello.worker = 0;
	fill_bytes(m->u.data_hello.mac, PXFER_MAC_LEN, 6);
	m = new_sample(PXFER_MSG_DATA_HELLO);
	m->u.data_hello.session = UINT64_MAX;
	m->u.data_hello.worker = PXFER_WORKERS_MAX - 1;
	m->u.data_hello.gen = UINT16_MAX;

	m = new_sample(PXFER_MSG_DATA_WELCOME);
	m->u.data_welcome.worker = 3;
	fill_bytes(m->u.data_welcome.mac, PXFER_MAC_LEN, 6);
	m->u.data_welcome.blob_len = 0;		/* tcp */
	m = new_sample(PXFER_MSG_DATA_WELCOME);
	m->u.data_welcome.worker = PXFER_WORKERS_MAX - 1;
	m->u.data_welcome.blob_len = PXFER_BLOB_MAX;
	fill_bytes(m->u.data_welcome.blob, PXFER_BLOB_MAX, 7);

	m = new_sample(PXFER_MSG_REFUSE);
	m->u.error.code = EACCES;
	set_str(m->u.error.text, &m->u.error.text_len, "bad credentials");
	m = new_sample(PXFER_MSG_REFUSE);
	m->u.error.code = UINT32_MAX;
	fill_str(m->u.error.text, &m->u.error.text_len, PXFER_TEXT_MAX, 8);
	m = new_sample(PXFER_MSG_ABORT);
	m->u.error.code = EIO;
	set_str(m->u.error.text, &m->u.error.text_len, "read error");
	m = new_sample(PXFER_MSG_ABORT);
	m->u.error.code = 0;
	set_str(m->u.error.text, &m->u.error.text_len, "");
}

/* Regular files with each FILE flag, and a digest only with CHECKSUM. */
static void add_file_flag_samples(void)
{
	struct pxfer_msg *m;

	m = new_sample(PXFER_MSG_FILE);
	m->u.file = (struct pxfer_file){
		.id = 100, .type = PXFER_FT_REG, .flags = PXFER_FILE_RESUME,
		.mode = 0600, .size = 10ull << 30, .mtime_sec = 1700000000,
	};
	set_str(m->u.file.path, &m->u.file.path_len, "big.iso");
	m = new_sample(PXFER_MSG_FILE);
	m->u.file = samples[nsamples - 2].u.file;
	m->u.file.id = 101;
	m->u.file.flags = PXFER_FILE_SKIP | PXFER_FILE_RESUME;
	m = new_sample(PXFER_MSG_FILE);
	m->u.file = samples[nsamples - 2].u.file;
	m->u.file.id = 103;
	m->u.file.flags = PXFER_FILE_RESUME | PXFER_FILE_TRUST;
	m = new_sample(PXFER_MSG_FILE);
	m->u.file = samples[nsamples - 3].u.file;
	m->u.file.id = 102;
	m->u.file.flags = PXFER_FILE_CHECKSUM;
	fill_bytes(m->u.file.digest, PXFER_DIGEST_LEN, 13);
	/* every flag but SUM_FOLLOWS and RANGE, an empty file, a digest of
	 * all ones, the longest path */
	m = new_sample(PXFER_MSG_FILE);
	m->u.file.id = UINT64_MAX - 1;
	m->u.file.type = PXFER_FT_REG;
	m->u.file.flags = PXFER_FILE_FLAGS &
			  ~(PXFER_FILE_SUM_FOLLOWS | PXFER_FILE_RANGE);
	m->u.file.mode = 0644;
	memset(m->u.file.digest, 0xff, PXFER_DIGEST_LEN);
	fill_str(m->u.file.path, &m->u.file.path_len, PXFER_PATH_MAX, 14);
	/* every flag but RANGE: the digest follows, none here */
	m = new_sample(PXFER_MSG_FILE);
	m->u.file = samples[nsamples - 2].u.file;
	m->u.file.id = 7;
	m->u.file.size = UINT64_MAX;
	m->u.file.flags = PXFER_FILE_FLAGS & ~PXFER_FILE_RANGE;
	memset(m->u.file.digest, 0, PXFER_DIGEST_LEN);
	/* a range: the middle of a file, of one job */
	m = new_sample(PXFER_MSG_FILE);
	m->u.file = samples[nsamples - 7].u.file;
	m->u.file.id = 104;
	m->u.file.flags = PXFER_FILE_RESUME | PXFER_FILE_RANGE;
	m->u.file.range_off = 1ull << 30;
	m->u.file.range_len = 1ull << 30;
	fill_bytes(m->u.file.job, PXFER_JOB_LEN, 15);
	/* every flag a range may have; the whole of the largest file, the
	 * longest path, a job of one bit */
	m = new_sample(PXFER_MSG_FILE);
	m->u.file = samples[nsamples - 3].u.file;
	m->u.file.id = 8;
	m->u.file.flags = PXFER_FILE_RESUME | PXFER_FILE_SKIP |
			  PXFER_FILE_TRUST | PXFER_FILE_RANGE;
	m->u.file.range_off = 0;
	m->u.file.range_len = UINT64_MAX;
	memset(m->u.file.job, 0, PXFER_JOB_LEN);
	m->u.file.job[PXFER_JOB_LEN - 1] = 1;
	/* the last byte of it */
	m = new_sample(PXFER_MSG_FILE);
	m->u.file = samples[nsamples - 2].u.file;
	m->u.file.id = 9;
	m->u.file.range_off = UINT64_MAX - 1;
	m->u.file.range_len = 1;
}

/*
 * @n runs, sorted, every other one touching the one before it, units from
 * one byte to PXFER_CHUNK_MAX, the last ending at 2^64 - 1; held their sum.
 */
static void fill_runs(struct pxfer_file_ok *k, unsigned int n)
{
	static const uint32_t units[] = { 1, 4096, 1u << 20, PXFER_CHUNK_MAX };
	uint64_t end = 0;
	unsigned int i;

	k->nrun = (uint16_t)n;
	k->held = 0;
	for (i = 0; i < n; i++) {
		struct pxfer_held_run *r = &k->run[i];

		r->off = i % 2 ? end : end + (1ull << 32);
		r->len = 1 + (uint64_t)i * 12345;
		r->unit = units[i % 4];
		if (i == n - 1)
			r->off = UINT64_MAX - r->len;
		end = r->off + r->len;
		k->held += r->len;
	}
}

static void add_file_ok_samples(void)
{
	static const uint8_t states[] = {
		PXFER_HAVE_NONE, PXFER_HAVE_SAME, PXFER_HAVE_STALE,
		PXFER_HAVE_BAD,
	};
	struct pxfer_file_ok *k;
	struct pxfer_msg *m;
	unsigned int i;

	/* the base of the malformed cases: a partial of three runs, the
	 * last record of the second one short */
	m = new_sample(PXFER_MSG_FILE_OK);
	k = &m->u.ok;
	k->id = 42;
	k->state = PXFER_HAVE_PART;
	k->nrun = 3;
	k->run[0] = (struct pxfer_held_run){
		.off = 0, .len = 1u << 20, .unit = 1u << 20 };
	k->run[1] = (struct pxfer_held_run){
		.off = 4u << 20, .len = (3u << 20) + 5, .unit = 1u << 20 };
	k->run[2] = (struct pxfer_held_run){
		.off = 10ull << 30, .len = 4096, .unit = 4096 };
	k->held = (1u << 20) + (3u << 20) + 5 + 4096;
	fill_bytes(k->digest, PXFER_DIGEST_LEN, 15);

	/* every other state: nothing held, no digest, no runs */
	for (i = 0; i < sizeof(states); i++) {
		m = new_sample(PXFER_MSG_FILE_OK);
		m->u.ok.id = i ? UINT64_MAX - i : 0;
		m->u.ok.state = states[i];
	}

	/* the smallest partial: one byte, at the last offset there is */
	m = new_sample(PXFER_MSG_FILE_OK);
	k = &m->u.ok;
	k->id = 1;
	k->state = PXFER_HAVE_PART;
	k->nrun = 1;
	k->run[0] = (struct pxfer_held_run){
		.off = UINT64_MAX - 1, .len = 1, .unit = 1 };
	k->held = 1;

	/* the largest FILE_OK: PXFER_RUNS_MAX runs */
	m = new_sample(PXFER_MSG_FILE_OK);
	k = &m->u.ok;
	k->id = UINT64_MAX;
	k->state = PXFER_HAVE_PART;
	memset(k->digest, 0xff, PXFER_DIGEST_LEN);
	fill_runs(k, PXFER_RUNS_MAX);
}

static void add_transfer_samples(void)
{
	struct pxfer_msg *m;
	unsigned int i;

	m = new_sample(PXFER_MSG_FILE);
	m->u.file.id = 42;
	m->u.file.type = PXFER_FT_REG;
	m->u.file.mode = 0644;
	m->u.file.size = 123456789;
	m->u.file.mtime_sec = 1700000000;
	m->u.file.mtime_nsec = 500;
	set_str(m->u.file.path, &m->u.file.path_len, "dir/file.txt");
	/* the largest REG: max path, max size, the oldest possible time */
	m = new_sample(PXFER_MSG_FILE);
	m->u.file.id = UINT64_MAX;
	m->u.file.type = PXFER_FT_REG;
	m->u.file.mode = 07777;
	m->u.file.size = UINT64_MAX;
	m->u.file.mtime_sec = INT64_MIN;
	m->u.file.mtime_nsec = 999999999;
	fill_str(m->u.file.path, &m->u.file.path_len, PXFER_PATH_MAX, 9);
	m = new_sample(PXFER_MSG_FILE);
	m->u.file.id = 0;
	m->u.file.type = PXFER_FT_DIR;
	m->u.file.mode = 0755;
	m->u.file.mtime_sec = -1;
	set_str(m->u.file.path, &m->u.file.path_len, "d");
	/* the largest control message there is */
	m = new_sample(PXFER_MSG_FILE);
	m->u.file.id = 1ull << 32;
	m->u.file.type = PXFER_FT_SYMLINK;
	m->u.file.mode = 0777;
	m->u.file.mtime_sec = INT64_MAX;
	fill_str(m->u.file.path, &m->u.file.path_len, PXFER_PATH_MAX, 10);
	fill_str(m->u.file.target, &m->u.file.target_len, PXFER_PATH_MAX, 11);
	m = new_sample(PXFER_MSG_FILE);
	m->u.file.id = 7;
	m->u.file.type = PXFER_FT_SYMLINK;
	m->u.file.mtime_sec = -86400;
	m->u.file.mtime_nsec = 1;
	set_str(m->u.file.path, &m->u.file.path_len, "a/link");
	set_str(m->u.file.target, &m->u.file.target_len, "../b");
	add_file_flag_samples();
	add_file_ok_samples();

	m = new_sample(PXFER_MSG_FILE_ERR);
	m->u.status.id = 43;
	m->u.status.code = EEXIST;
	set_str(m->u.status.text, &m->u.status.text_len, "exists");
	m = new_sample(PXFER_MSG_FILE_ERR);
	m->u.status.id = UINT64_MAX;
	m->u.status.code = UINT32_MAX;
	fill_str(m->u.status.text, &m->u.status.text_len, PXFER_TEXT_MAX, 12);
	m = new_sample(PXFER_MSG_FILE_DONE);
	m->u.status.id = 42;
	m = new_sample(PXFER_MSG_FILE_DONE);
	m->u.status.id = 44;
	m->u.status.code = ENOSPC;
	set_str(m->u.status.text, &m->u.status.text_len, "disk full");

	m = new_sample(PXFER_MSG_FILE_END);
	m->u.end = (struct pxfer_file_end){ .id = 42, .bytes = 123456789 };
	m = new_sample(PXFER_MSG_FILE_END);
	m->u.end = (struct pxfer_file_end){
		.id = UINT64_MAX, .bytes = 5ull << 32, .code = EIO };
	/* --verify: the whole file's digest; bytes are this session's only */
	m = new_sample(PXFER_MSG_FILE_END);
	m->u.end = (struct pxfer_file_end){ .id = 42, .bytes = 4096 };
	fill_bytes(m->u.end.digest, PXFER_DIGEST_LEN, 20);
	m = new_sample(PXFER_MSG_FILE_END);
	m->u.end = (struct pxfer_file_end){
		.id = 7, .bytes = UINT64_MAX, .code = PXFER_CODE_CHANGED };
	memset(m->u.end.digest, 0xff, PXFER_DIGEST_LEN);

	m = new_sample(PXFER_MSG_CREDIT);
	m->u.credit.worker = 0;
	m->u.credit.count = 1;
	m->u.credit.slots[0] = 0;
	m = new_sample(PXFER_MSG_CREDIT);
	m->u.credit.worker = PXFER_WORKERS_MAX - 1;
	m->u.credit.count = PXFER_CREDIT_MAX;
	for (i = 0; i < PXFER_CREDIT_MAX; i++)
		m->u.credit.slots[i] = (uint16_t)(PXFER_SLOTS_MAX - 1 - i * 3);

	m = new_sample(PXFER_MSG_FIN);
	m->u.fin = (struct pxfer_fin){ .files = 1000, .bytes = 5ull << 32 };
	m = new_sample(PXFER_MSG_ACK);
	m->u.fin = (struct pxfer_fin){ .files = 1000, .bytes = 5ull << 32 };
	m = new_sample(PXFER_MSG_ACK);
	m->u.fin = (struct pxfer_fin){
		.files = UINT64_MAX, .bytes = UINT64_MAX, .code = ENOSPC };
	m = new_sample(PXFER_MSG_PING);
	m = new_sample(PXFER_MSG_PING);
	m->u.ping.checked = UINT64_MAX;
}

/* every character a host may have, @len bytes of them */
static void fill_host(char *dst, uint16_t *lenp, size_t len)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyz"
				 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[]%";
	size_t i;

	for (i = 0; i < len; i++)
		dst[i] = ok[i % (sizeof(ok) - 1)];
	dst[len] = '\0';
	*lenp = (uint16_t)len;
}

static void add_chain_samples(void)
{
	static const uint8_t codes[] = { 0, 1, 255, 3 };
	struct pxfer_msg *m;
	unsigned int s;

	/* the first hop of one: the base of the malformed cases */
	m = new_sample(PXFER_MSG_CHAIN);
	fill_bytes(m->u.hop.chain, PXFER_JOB_LEN, 31);
	m->u.hop.pos = 2;
	m->u.hop.count = 1;
	m->u.hop.port = 7000;
	set_str(m->u.hop.host, &m->u.hop.host_len, "node2");
	set_str(m->u.hop.dest, &m->u.hop.dest_len, "backup/today");

	/* every field at its largest */
	m = new_sample(PXFER_MSG_CHAIN);
	memset(m->u.hop.chain, 0xff, PXFER_JOB_LEN);
	m->u.hop.pos = PXFER_CHAIN_MAX;
	m->u.hop.index = PXFER_CHAIN_MAX - 2;
	m->u.hop.count = PXFER_CHAIN_MAX - 1;
	m->u.hop.port = UINT16_MAX;
	fill_host(m->u.hop.host, &m->u.hop.host_len, PXFER_HOST_MAX);
	fill_str(m->u.hop.dest, &m->u.hop.dest_len, PXFER_PATH_MAX, 9);

	/* an IPv6 address with its zone, to the top directory; a 1-byte host */
	m = new_sample(PXFER_MSG_CHAIN);
	m->u.hop.chain[PXFER_JOB_LEN - 1] = 1;
	m->u.hop.pos = 7;
	m->u.hop.index = 5;
	m->u.hop.count = 6;
	m->u.hop.port = 1;
	set_str(m->u.hop.host, &m->u.hop.host_len, "[fe80::1%eth0]");
	m = new_sample(PXFER_MSG_CHAIN);
	m->u.hop.chain[0] = 1;
	m->u.hop.pos = 3;
	m->u.hop.count = 2;
	m->u.hop.index = 1;
	m->u.hop.port = 22;
	set_str(m->u.hop.host, &m->u.hop.host_len, "h");

	/* each state, with a code exactly when it did not end well */
	for (s = 0; s <= PXFER_HOP_STATE_MAX; s++) {
		m = new_sample(PXFER_MSG_CHAIN_REPORT);
		m->u.report.pos = (uint16_t)(2 + s * 20);
		m->u.report.state = (uint8_t)s;
		m->u.report.code = codes[s];
		m->u.report.files = s ? s * 1000 : UINT64_MAX;
		m->u.report.bytes = s ? (uint64_t)s << 40 : UINT64_MAX;
	}
	m = new_sample(PXFER_MSG_CHAIN_REPORT);
	m->u.report = (struct pxfer_chain_report){
		.pos = PXFER_CHAIN_MAX, .state = PXFER_HOP_UNREACHED, .code = 1 };
}

static void add_chunk_samples(void)
{
	struct pxfer_chunk *c;
	unsigned int i;

	/* a typical chunk: the tail of one file and the head of the next */
	c = &chunks[nchunks++];
	c->slot = 5;
	c->nseg = 2;
	c->len = 1u << 20;
	memcpy(c->tag, "0123456789abcdef", PXFER_TAG_LEN);
	c->seq = 17;
	c->seg[0] = (struct pxfer_seg){ .file = 1, .offset = 0, .len = 1000 };
	c->seg[1] = (struct pxfer_seg){
		.file = 2, .offset = 0, .len = (1u << 20) - 1000 };

	/* every limit at once: 64 segments, 64 MiB, offsets beyond 4 GiB */
	c = &chunks[nchunks++];
	c->slot = PXFER_SLOTS_MAX - 1;
	c->nseg = PXFER_SEG_MAX;
	c->len = PXFER_CHUNK_MAX;
	memset(c->tag, 0xff, PXFER_TAG_LEN);
	c->seq = UINT64_MAX;
	for (i = 0; i < PXFER_SEG_MAX; i++) {
		c->seg[i].file = UINT64_MAX - i;
		c->seg[i].offset = (5ull << 32) + (uint64_t)i * 12345;
		c->seg[i].len = PXFER_CHUNK_MAX / PXFER_SEG_MAX;
	}
	/* a segment that ends exactly at 2^64 - 1 does not overflow */
	c->seg[PXFER_SEG_MAX - 1].offset = UINT64_MAX - c->seg[0].len;

	/* the smallest chunk */
	c = &chunks[nchunks++];
	c->nseg = 1;
	c->len = 1;
	c->seg[0] = (struct pxfer_seg){
		.file = 9, .offset = UINT64_MAX - 1, .len = 1 };
}

/* The first sample of @type: a valid message to break one field of. */
static void base(struct pxfer_msg *m, uint16_t type)
{
	int i;

	for (i = 0; i < nsamples; i++) {
		if (samples[i].type == type) {
			*m = samples[i];
			return;
		}
	}
	abort();
}

/* ------------------------------------------------------------------------ */
/* Round trips */

static int str_terminated(const char *s, uint16_t len)
{
	return s[len] == '\0' && strlen(s) == len;
}

static int strings_terminated(const struct pxfer_msg *d)
{
	switch (d->type) {
	case PXFER_MSG_HELLO:
		return str_terminated(d->u.hello.dest, d->u.hello.dest_len);
	case PXFER_MSG_REFUSE:
	case PXFER_MSG_ABORT:
		return str_terminated(d->u.error.text, d->u.error.text_len);
	case PXFER_MSG_FILE:
		return str_terminated(d->u.file.path, d->u.file.path_len) &&
		       str_terminated(d->u.file.target, d->u.file.target_len);
	case PXFER_MSG_FILE_ERR:
	case PXFER_MSG_FILE_DONE:
		return str_terminated(d->u.status.text, d->u.status.text_len);
	case PXFER_MSG_CHAIN:
		return str_terminated(d->u.hop.host, d->u.hop.host_len) &&
		       str_terminated(d->u.hop.dest, d->u.hop.dest_len);
	default:
		return 1;
	}
}

/* Every buffer shorter than the frame is refused, and never overrun. */
static void check_msgsize(const struct pxfer_msg *m, size_t flen, int idx)
{
	size_t cap;

	for (cap = 0; cap < flen; cap++) {
		uint8_t *p = malloc(cap);
		ssize_t n = pxfer_msg_encode(p, cap, m);

		T_EXPECT(n == -EMSGSIZE, "%s sample %d: cap %zu gave %zd",
			 pxfer_msg_name(m->type), idx, cap, n);
		free(p);
	}
}

static void roundtrip_one(const struct pxfer_msg *m, int idx)
{
	static struct pxfer_msg d;
	static struct raw want, got;
	const char *name = pxfer_msg_name(m->type);
	struct pxfer_hdr h;
	uint8_t *buf;
	size_t flen;
	ssize_t n;
	int rc;

	raw_body(&want, m);
	flen = PXFER_HDR_LEN + want.n;
	buf = malloc(flen);
	n = pxfer_msg_encode(buf, flen, m);
	T_EXPECT(n == (ssize_t)flen, "%s sample %d: encode gave %zd, want %zu",
		 name, idx, n, flen);
	if (n != (ssize_t)flen) {
		free(buf);
		return;
	}
	T_EXPECT(buf[0] == m->type >> 8 && buf[1] == (m->type & 0xff) &&
		 buf[2] == 0 && buf[3] == 0 &&
		 buf[4] == (uint8_t)(want.n >> 24) &&
		 buf[5] == (uint8_t)(want.n >> 16) &&
		 buf[6] == (uint8_t)(want.n >> 8) &&
		 buf[7] == (uint8_t)want.n,
		 "%s sample %d: header bytes", name, idx);
	T_EXPECT(!memcmp(buf + PXFER_HDR_LEN, want.b, want.n),
		 "%s sample %d: body differs from the layout in proto.h",
		 name, idx);

	rc = pxfer_hdr_decode(buf, flen, &h);
	T_EXPECT(rc == 0 && h.type == m->type && h.flags == 0 &&
		 h.len == want.n, "%s sample %d: header decode %d",
		 name, idx, rc);

	memset(&d, 0x5a, sizeof(d));
	rc = decode_exact(m->type, buf + PXFER_HDR_LEN, want.n, &d);
	T_EXPECT(rc == 0, "%s sample %d: decode gave %d", name, idx, rc);
	if (!rc) {
		T_EXPECT(d.type == m->type, "%s sample %d: type %u", name,
			 idx, d.type);
		raw_body(&got, &d);
		T_EXPECT(got.n == want.n && !memcmp(got.b, want.b, want.n),
			 "%s sample %d: decoded fields differ", name, idx);
		T_EXPECT(strings_terminated(&d),
			 "%s sample %d: decoded string not NUL-terminated",
			 name, idx);
	}
	free(buf);

	/* a generous buffer gives the same length */
	n = pxfer_msg_encode(got.b, sizeof(got.b), m);
	T_EXPECT(n == (ssize_t)flen, "%s sample %d: large cap gave %zd",
		 name, idx, n);
	check_msgsize(m, flen, idx);
}

/* PING carries the bytes checked: it round-trips, and any other length
 * of body is refused */
static void test_ping(void)
{
	struct pxfer_msg m = { .type = PXFER_MSG_PING }, d;
	uint8_t buf[PXFER_HDR_LEN + 9] = { 0 };
	struct pxfer_hdr h;
	ssize_t n;

	m.u.ping.checked = 0x0102030405060708ull;
	n = pxfer_msg_encode(buf, sizeof(buf), &m);
	T_EXPECT(n == PXFER_HDR_LEN + 8, "PING encodes to 16 bytes, got %zd", n);
	T_EXPECT(!pxfer_hdr_decode(buf, PXFER_HDR_LEN, &h) &&
		 h.type == PXFER_MSG_PING && h.len == 8, "PING header");
	T_EXPECT(buf[PXFER_HDR_LEN] == 1 && buf[PXFER_HDR_LEN + 7] == 8,
		 "PING's figure is big-endian");
	T_EXPECT(!pxfer_msg_decode(PXFER_MSG_PING, buf + PXFER_HDR_LEN, 8, &d) &&
		 d.type == PXFER_MSG_PING && d.u.ping.checked == m.u.ping.checked,
		 "PING decodes with its figure");
	T_EXPECT(pxfer_msg_decode(PXFER_MSG_PING, buf + PXFER_HDR_LEN, 0, &d) == -EPROTO,
		 "PING without a body (version 4's) is refused");
	T_EXPECT(pxfer_msg_decode(PXFER_MSG_PING, buf + PXFER_HDR_LEN, 7, &d) == -EPROTO,
		 "PING with 7 bytes is refused");
	T_EXPECT(pxfer_msg_decode(PXFER_MSG_PING, buf + PXFER_HDR_LEN, 9, &d) == -EPROTO,
		 "PING with a byte more is refused");
	pxfer_hdr_encode(buf, PXFER_MSG_PING, 9);
	T_EXPECT(pxfer_hdr_decode(buf, PXFER_HDR_LEN, &h) == -EPROTO,
		 "PING header announcing 9 bytes is refused");
}

static void test_roundtrip(void)
{
	static int seen[PXFER_MSG_TYPE_MAX + 1];
	int i, t;

	for (i = 0; i < nsamples; i++) {
		roundtrip_one(&samples[i], i);
		seen[samples[i].type] = 1;
	}
	for (t = PXFER_MSG_CHALLENGE; t < PXFER_MSG_CHUNK; t++)
		T_EXPECT(seen[t], "no sample of %s", pxfer_msg_name(t));
}

/* @f made a valid range FILE: its second quarter, of job 1..16 */
static void range(struct pxfer_file *f)
{
	unsigned int i;

	f->type = PXFER_FT_REG;
	f->flags = PXFER_FILE_RESUME | PXFER_FILE_RANGE;
	f->size = 1000;
	f->range_off = 250;
	f->range_len = 250;
	for (i = 0; i < PXFER_JOB_LEN; i++)
		f->job[i] = (uint8_t)(i + 1);
}

/* Values whose round trip is easy to get subtly wrong, checked by name. */
static void test_values(void)
{
	static uint8_t buf[FRAME_MAX];
	static struct pxfer_msg m, d;
	static const int64_t times[] = { -1, INT64_MIN, INT64_MAX, -86400 };
	unsigned int i;
	ssize_t n;
	int rc;

	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		base(&m, PXFER_MSG_FILE);
		m.u.file.mtime_sec = times[i];
		n = pxfer_msg_encode(buf, sizeof(buf), &m);
		rc = n > 0 ? pxfer_msg_decode(m.type, buf + PXFER_HDR_LEN,
					      n - PXFER_HDR_LEN, &d) : -1;
		T_EXPECT(rc == 0 && d.u.file.mtime_sec == times[i],
			 "mtime %" PRId64 " round trip", times[i]);
	}
	/* negative one is all ones on the wire */
	base(&m, PXFER_MSG_FILE);
	m.u.file.mtime_sec = -1;
	n = pxfer_msg_encode(buf, sizeof(buf), &m);
	T_EXPECT(n > 0 && !memcmp(buf + PXFER_HDR_LEN + 22,
				  "\xff\xff\xff\xff\xff\xff\xff\xff", 8),
		 "mtime -1 encodes as two's complement");

	base(&m, PXFER_MSG_FILE);
	m.u.file.size = 5ull << 32;
	n = pxfer_msg_encode(buf, sizeof(buf), &m);
	rc = n > 0 ? pxfer_msg_decode(m.type, buf + PXFER_HDR_LEN,
				      n - PXFER_HDR_LEN, &d) : -1;
	T_EXPECT(rc == 0 && d.u.file.size == 5ull << 32, "size > 4 GiB");

	/* where the fields version 3 added sit */
	base(&m, PXFER_MSG_FILE);
	m.u.file.flags = PXFER_FILE_CHECKSUM;
	fill_bytes(m.u.file.digest, PXFER_DIGEST_LEN, 1);
	n = pxfer_msg_encode(buf, sizeof(buf), &m);
	T_EXPECT(n > 0 && buf[PXFER_HDR_LEN + 9] == PXFER_FILE_CHECKSUM &&
		 !memcmp(buf + PXFER_HDR_LEN + 34, m.u.file.digest,
			 PXFER_DIGEST_LEN),
		 "FILE flags at 9, digest at 34");
	base(&m, PXFER_MSG_FILE_END);
	fill_bytes(m.u.end.digest, PXFER_DIGEST_LEN, 2);
	n = pxfer_msg_encode(buf, sizeof(buf), &m);
	T_EXPECT(n == PXFER_HDR_LEN + 36 &&
		 !memcmp(buf + PXFER_HDR_LEN + 20, m.u.end.digest,
			 PXFER_DIGEST_LEN), "FILE_END digest at 20, 36 bytes");

	/* a range's fields follow the target; without the flag, nothing */
	base(&m, PXFER_MSG_FILE);
	range(&m.u.file);
	n = pxfer_msg_encode(buf, sizeof(buf), &m);
	i = PXFER_HDR_LEN + 50 + 2 + m.u.file.path_len + 2;
	T_EXPECT(n == (ssize_t)i + 32 &&
		 pxfer_get_be(buf + i, 8) == 250 &&
		 pxfer_get_be(buf + i + 8, 8) == 250 &&
		 !memcmp(buf + i + 16, m.u.file.job, PXFER_JOB_LEN),
		 "FILE range_off, range_len, job after the target");
	rc = n > 0 ? pxfer_msg_decode(m.type, buf + PXFER_HDR_LEN,
				      n - PXFER_HDR_LEN, &d) : -1;
	T_EXPECT(rc == 0 && d.u.file.range_off == 250 &&
		 d.u.file.range_len == 250 &&
		 !memcmp(d.u.file.job, m.u.file.job, PXFER_JOB_LEN),
		 "FILE range round trip");
	m.u.file.flags = PXFER_FILE_RESUME;
	m.u.file.range_off = m.u.file.range_len = 0;
	memset(m.u.file.job, 0, PXFER_JOB_LEN);
	n = pxfer_msg_encode(buf, sizeof(buf), &m);
	T_EXPECT(n == (ssize_t)i, "FILE without RANGE ends at its target");
}

/* The largest FILE_OK: its size, and its extremes decode to their values. */
static void test_file_ok_max(void)
{
	static uint8_t buf[FRAME_MAX];
	static struct pxfer_msg m, d;
	const struct pxfer_held_run *last = &d.u.ok.run[PXFER_RUNS_MAX - 1];
	ssize_t n;
	int i, rc = -1;

	for (i = 0; i < nsamples; i++)
		if (samples[i].type == PXFER_MSG_FILE_OK &&
		    samples[i].u.ok.nrun == PXFER_RUNS_MAX)
			m = samples[i];
	n = pxfer_msg_encode(buf, sizeof(buf), &m);
	T_EXPECT(n == PXFER_HDR_LEN + 35 + 20 * PXFER_RUNS_MAX,
		 "FILE_OK of %d runs encodes to %zd", PXFER_RUNS_MAX, n);
	T_EXPECT(n - PXFER_HDR_LEN <= PXFER_MSG_MAX,
		 "the largest FILE_OK, %zd bytes, is over PXFER_MSG_MAX", n);
	if (n > 0)
		rc = pxfer_msg_decode(m.type, buf + PXFER_HDR_LEN,
				      n - PXFER_HDR_LEN, &d);
	T_EXPECT(rc == 0 && d.u.ok.nrun == PXFER_RUNS_MAX &&
		 d.u.ok.held == m.u.ok.held &&
		 last->off + last->len == UINT64_MAX &&
		 d.u.ok.run[3].unit == PXFER_CHUNK_MAX &&
		 d.u.ok.run[1].off == d.u.ok.run[0].off + d.u.ok.run[0].len,
		 "FILE_OK limits decode to their values");
}

/* ------------------------------------------------------------------------ */
/* Truncation and trailing bytes */

static void test_truncation(void)
{
	static struct raw r;
	static struct pxfer_msg d;
	size_t cut;
	int i, rc;

	for (i = 0; i < nsamples; i++) {
		const struct pxfer_msg *m = &samples[i];
		const char *name = pxfer_msg_name(m->type);

		raw_body(&r, m);
		for (cut = 0; cut < r.n; cut++) {
			rc = decode_exact(m->type, r.b, cut, &d);
			T_EXPECT(rc == -EPROTO,
				 "%s sample %d truncated to %zu of %zu: %d",
				 name, i, cut, r.n, rc);
		}
		r.b[r.n] = 0;
		rc = decode_exact(m->type, r.b, r.n + 1, &d);
		T_EXPECT(rc == -EPROTO, "%s sample %d trailing 0 byte: %d",
			 name, i, rc);
		r.b[r.n] = 'x';
		rc = decode_exact(m->type, r.b, r.n + 1, &d);
		T_EXPECT(rc == -EPROTO, "%s sample %d trailing 'x' byte: %d",
			 name, i, rc);
	}
}

/* ------------------------------------------------------------------------ */
/* Malformed fields: the encoder refuses them and so does the decoder */

static void bad(const char *what, const struct pxfer_msg *m)
{
	static uint8_t buf[3 * PXFER_MSG_MAX];
	static struct raw r;
	static struct pxfer_msg d;
	ssize_t n;
	int rc;

	n = pxfer_msg_encode(buf, sizeof(buf), m);
	T_EXPECT(n == -EINVAL, "%s: encode gave %zd, want -EINVAL", what, n);
	raw_body(&r, m);
	rc = decode_exact(m->type, r.b, r.n, &d);
	T_EXPECT(rc == -EPROTO, "%s: decode gave %d, want -EPROTO", what, rc);
}

#define BAD(what, type, stmt) do {		\
	base(&m, (type));			\
	stmt;					\
	bad((what), &m);			\
} while (0)

static void test_bad_handshake(void)
{
	static struct pxfer_msg m;

	BAD("CHALLENGE bad magic", PXFER_MSG_CHALLENGE,
	    m.u.challenge.magic = 0x52465850);
	BAD("CHALLENGE version 0", PXFER_MSG_CHALLENGE,
	    m.u.challenge.version = 0);
	BAD("CHALLENGE the version before", PXFER_MSG_CHALLENGE,
	    m.u.challenge.version = PXFER_PROTO_VERSION - 1);
	BAD("CHALLENGE the version after", PXFER_MSG_CHALLENGE,
	    m.u.challenge.version = PXFER_PROTO_VERSION + 1);
	BAD("CHALLENGE transport 2", PXFER_MSG_CHALLENGE,
	    m.u.challenge.transport = 2);

	BAD("HELLO bad magic", PXFER_MSG_HELLO, m.u.hello.magic = 0);
	BAD("HELLO the version before", PXFER_MSG_HELLO,
	    m.u.hello.version = PXFER_PROTO_VERSION - 1);
	BAD("HELLO the version after", PXFER_MSG_HELLO,
	    m.u.hello.version = PXFER_PROTO_VERSION + 1);
	BAD("HELLO workers 0", PXFER_MSG_HELLO, m.u.hello.workers = 0);
	BAD("HELLO workers 65", PXFER_MSG_HELLO,
	    m.u.hello.workers = PXFER_WORKERS_MAX + 1);
	BAD("HELLO chunk_size 4095", PXFER_MSG_HELLO,
	    m.u.hello.chunk_size = PXFER_CHUNK_MIN - 1);
	BAD("HELLO chunk_size 64 MiB + 1", PXFER_MSG_HELLO,
	    m.u.hello.chunk_size = PXFER_CHUNK_MAX + 1);
	BAD("HELLO unknown flag", PXFER_MSG_HELLO,
	    m.u.hello.flags = PXFER_HELLO_VERIFY << 1);
	BAD("HELLO every flag and the next", PXFER_MSG_HELLO,
	    m.u.hello.flags = (PXFER_HELLO_FLAGS & ~PXFER_HELLO_CHECKSUM) |
			      PXFER_HELLO_VERIFY << 1);
	BAD("HELLO checksum and encrypt", PXFER_MSG_HELLO,
	    m.u.hello.flags = PXFER_HELLO_CHECKSUM | PXFER_HELLO_ENCRYPT);
	BAD("WELCOME a flag that is not about protection", PXFER_MSG_WELCOME,
	    m.u.welcome.flags = PXFER_HELLO_FSYNC);
	BAD("WELCOME echoing VERIFY", PXFER_MSG_WELCOME,
	    m.u.welcome.flags = PXFER_HELLO_VERIFY);
	BAD("WELCOME checksum and encrypt", PXFER_MSG_WELCOME,
	    m.u.welcome.flags = PXFER_HELLO_CHECKSUM | PXFER_HELLO_ENCRYPT);
	BAD("HELLO high flag", PXFER_MSG_HELLO, m.u.hello.flags = 0x80000001);
	BAD("HELLO dest over PXFER_PATH_MAX", PXFER_MSG_HELLO,
	    fill_str(m.u.hello.dest, &m.u.hello.dest_len,
		     PXFER_PATH_MAX + 1, 1));
	BAD("HELLO dest with NUL", PXFER_MSG_HELLO, m.u.hello.dest[3] = '\0');

	BAD("WELCOME chunk_size 4095", PXFER_MSG_WELCOME,
	    m.u.welcome.chunk_size = PXFER_CHUNK_MIN - 1);
	BAD("WELCOME chunk_size 64 MiB + 1", PXFER_MSG_WELCOME,
	    m.u.welcome.chunk_size = PXFER_CHUNK_MAX + 1);
	BAD("WELCOME workers 0", PXFER_MSG_WELCOME, m.u.welcome.workers = 0);
	BAD("WELCOME workers 65", PXFER_MSG_WELCOME,
	    m.u.welcome.workers = PXFER_WORKERS_MAX + 1);
	BAD("WELCOME slots 0", PXFER_MSG_WELCOME, m.u.welcome.slots = 0);
	BAD("WELCOME slots 1025", PXFER_MSG_WELCOME,
	    m.u.welcome.slots = PXFER_SLOTS_MAX + 1);
	BAD("WELCOME max_files 0", PXFER_MSG_WELCOME,
	    m.u.welcome.max_files = 0);
	BAD("WELCOME max_files 65537", PXFER_MSG_WELCOME,
	    m.u.welcome.max_files = 65537);
	BAD("WELCOME 9 rails", PXFER_MSG_WELCOME,
	    m.u.welcome.nrails = PXFER_WIRE_RAILS_MAX + 1);
	BAD("WELCOME a rail of family 5", PXFER_MSG_WELCOME,
	    (m.u.welcome.nrails = 1, m.u.welcome.rail[0].family = 5));
	BAD("WELCOME an IPv4 rail with prefix 33", PXFER_MSG_WELCOME,
	    (m.u.welcome.nrails = 1, m.u.welcome.rail[0].family = 4,
	     m.u.welcome.rail[0].prefix = 33));
	BAD("WELCOME an IPv6 rail with prefix 129", PXFER_MSG_WELCOME,
	    (m.u.welcome.nrails = 1, m.u.welcome.rail[0].family = 6,
	     m.u.welcome.rail[0].prefix = 129));
	BAD("WELCOME an IPv4 rail with bytes past its address", PXFER_MSG_WELCOME,
	    (m.u.welcome.nrails = 1, m.u.welcome.rail[0].family = 4,
	     m.u.welcome.rail[0].addr[15] = 1));
	BAD("DATA_LOST worker 64", PXFER_MSG_DATA_LOST,
	    (m.u.lost.worker = PXFER_WORKERS_MAX, m.u.lost.code = EIO));
	BAD("DATA_LOST code 0", PXFER_MSG_DATA_LOST, m.u.lost.code = 0);
	BAD("DATA_LOST code 4096", PXFER_MSG_DATA_LOST, m.u.lost.code = 4096);
	BAD("DATA_SENT worker 64", PXFER_MSG_DATA_SENT,
	    m.u.sent.worker = PXFER_WORKERS_MAX);
	BAD("FILE_SUM with a code and a digest", PXFER_MSG_FILE_SUM,
	    (m.u.sum.code = EIO, m.u.sum.digest[3] = 1));

	BAD("DATA_HELLO worker 64", PXFER_MSG_DATA_HELLO,
	    m.u.data_hello.worker = PXFER_WORKERS_MAX);
	BAD("DATA_HELLO worker 0xffff", PXFER_MSG_DATA_HELLO,
	    m.u.data_hello.worker = 0xffff);
	BAD("DATA_WELCOME worker 64", PXFER_MSG_DATA_WELCOME,
	    m.u.data_welcome.worker = PXFER_WORKERS_MAX);
	BAD("DATA_WELCOME blob_len 65", PXFER_MSG_DATA_WELCOME,
	    m.u.data_welcome.blob_len = PXFER_BLOB_MAX + 1);
	BAD("DATA_WELCOME blob_len 0xffff", PXFER_MSG_DATA_WELCOME,
	    m.u.data_welcome.blob_len = 0xffff);

	BAD("REFUSE text over PXFER_TEXT_MAX", PXFER_MSG_REFUSE,
	    fill_str(m.u.error.text, &m.u.error.text_len,
		     PXFER_TEXT_MAX + 1, 2));
	BAD("REFUSE text with NUL", PXFER_MSG_REFUSE, m.u.error.text[0] = 0);
	BAD("ABORT text over PXFER_TEXT_MAX", PXFER_MSG_ABORT,
	    fill_str(m.u.error.text, &m.u.error.text_len,
		     PXFER_TEXT_MAX + 1, 3));
	BAD("ABORT text with NUL", PXFER_MSG_ABORT,
	    m.u.error.text[m.u.error.text_len - 1] = 0);
}

static void test_bad_chain(void)
{
	static struct pxfer_msg m;
	static struct raw r;
	static struct pxfer_msg d;
	int rc;

	BAD("CHAIN all-zero chain", PXFER_MSG_CHAIN,
	    memset(m.u.hop.chain, 0, PXFER_JOB_LEN));
	BAD("CHAIN pos 0", PXFER_MSG_CHAIN, m.u.hop.pos = 0);
	BAD("CHAIN pos 1", PXFER_MSG_CHAIN, m.u.hop.pos = 1);
	BAD("CHAIN pos 65", PXFER_MSG_CHAIN, m.u.hop.pos = PXFER_CHAIN_MAX + 1);
	BAD("CHAIN pos 0xffff", PXFER_MSG_CHAIN, m.u.hop.pos = 0xffff);
	BAD("CHAIN count 0", PXFER_MSG_CHAIN,
	    (m.u.hop.count = 0, m.u.hop.index = 0));
	BAD("CHAIN count 64", PXFER_MSG_CHAIN,
	    (m.u.hop.count = PXFER_CHAIN_MAX, m.u.hop.index = 0));
	BAD("CHAIN index == count", PXFER_MSG_CHAIN,
	    (m.u.hop.count = 3, m.u.hop.index = 3));
	BAD("CHAIN index past count", PXFER_MSG_CHAIN,
	    (m.u.hop.count = 3, m.u.hop.index = 0xffff));
	BAD("CHAIN port 0", PXFER_MSG_CHAIN, m.u.hop.port = 0);
	BAD("CHAIN empty host", PXFER_MSG_CHAIN,
	    set_str(m.u.hop.host, &m.u.hop.host_len, ""));
	BAD("CHAIN host with a space", PXFER_MSG_CHAIN,
	    set_str(m.u.hop.host, &m.u.hop.host_len, "node 2"));
	BAD("CHAIN host with a '/'", PXFER_MSG_CHAIN,
	    set_str(m.u.hop.host, &m.u.hop.host_len, "node/2"));
	BAD("CHAIN host with a newline", PXFER_MSG_CHAIN,
	    set_str(m.u.hop.host, &m.u.hop.host_len, "node2\n"));
	BAD("CHAIN host with a byte over 0x7f", PXFER_MSG_CHAIN,
	    set_str(m.u.hop.host, &m.u.hop.host_len, "n\xc3\xa9ud"));
	BAD("CHAIN host with NUL", PXFER_MSG_CHAIN, m.u.hop.host[2] = '\0');
	BAD("CHAIN host of 256 bytes", PXFER_MSG_CHAIN,
	    (memset(m.u.hop.host, 'a', sizeof(m.u.hop.host)),
	     m.u.hop.host_len = PXFER_HOST_MAX + 1));
	BAD("CHAIN dest over PXFER_PATH_MAX", PXFER_MSG_CHAIN,
	    fill_str(m.u.hop.dest, &m.u.hop.dest_len, PXFER_PATH_MAX + 1, 4));
	BAD("CHAIN dest with NUL", PXFER_MSG_CHAIN, m.u.hop.dest[3] = '\0');

	BAD("CHAIN_REPORT pos 0", PXFER_MSG_CHAIN_REPORT, m.u.report.pos = 0);
	BAD("CHAIN_REPORT pos 1", PXFER_MSG_CHAIN_REPORT, m.u.report.pos = 1);
	BAD("CHAIN_REPORT pos 65", PXFER_MSG_CHAIN_REPORT,
	    m.u.report.pos = PXFER_CHAIN_MAX + 1);
	BAD("CHAIN_REPORT code 0, state FAILED", PXFER_MSG_CHAIN_REPORT,
	    (m.u.report.state = PXFER_HOP_FAILED, m.u.report.code = 0));
	BAD("CHAIN_REPORT code 0, state LOST", PXFER_MSG_CHAIN_REPORT,
	    (m.u.report.state = PXFER_HOP_LOST, m.u.report.code = 0));
	BAD("CHAIN_REPORT code 3, state OK", PXFER_MSG_CHAIN_REPORT,
	    (m.u.report.state = PXFER_HOP_OK, m.u.report.code = 3));
	BAD("CHAIN_REPORT state 4", PXFER_MSG_CHAIN_REPORT,
	    (m.u.report.state = PXFER_HOP_STATE_MAX + 1, m.u.report.code = 1));
	BAD("CHAIN_REPORT state 0xff", PXFER_MSG_CHAIN_REPORT,
	    (m.u.report.state = 0xff, m.u.report.code = 1));

	/* exact lengths: a byte more or less is refused */
	base(&m, PXFER_MSG_CHAIN);
	raw_body(&r, &m);
	r.b[r.n] = 0;
	rc = decode_exact(m.type, r.b, r.n + 1, &d);
	T_EXPECT(rc == -EPROTO, "CHAIN with a trailing byte: %d", rc);
	rc = decode_exact(m.type, r.b, r.n - 1, &d);
	T_EXPECT(rc == -EPROTO, "CHAIN a byte short: %d", rc);
	/* a host announced longer than the body holds */
	rc = decode_exact(m.type, r.b, PXFER_JOB_LEN + 8 + 2 + 3, &d);
	T_EXPECT(rc == -EPROTO, "CHAIN cut in its host: %d", rc);
	base(&m, PXFER_MSG_CHAIN_REPORT);
	raw_body(&r, &m);
	T_EXPECT(r.n == 20, "CHAIN_REPORT body of %zu bytes, not 20", r.n);
	r.b[r.n] = 0;
	rc = decode_exact(m.type, r.b, 21, &d);
	T_EXPECT(rc == -EPROTO, "CHAIN_REPORT with a trailing byte: %d", rc);
	rc = decode_exact(m.type, r.b, 19, &d);
	T_EXPECT(rc == -EPROTO, "CHAIN_REPORT a byte short: %d", rc);
	rc = decode_exact(m.type, r.b, 0, &d);
	T_EXPECT(rc == -EPROTO, "CHAIN_REPORT without a body: %d", rc);
}

/*
 * A CHAIN's dest is judged as a HELLO's: the same verdict for each, and
 * what the codec lets through (a "..") is the receiver's to refuse, as
 * it refuses it in a HELLO, when it opens the destination.
 */
static void test_chain_dest(void)
{
	static const char *const dests[] = {
		"", "a", "backup/today", "..", "a/../b", "/abs", "a//b", "./x",
	};
	static uint8_t buf[FRAME_MAX];
	static struct pxfer_msg c, h, d;
	unsigned int i;
	ssize_t nc, nh;
	int rc;

	for (i = 0; i < sizeof(dests) / sizeof(dests[0]); i++) {
		base(&c, PXFER_MSG_CHAIN);
		base(&h, PXFER_MSG_HELLO);
		set_str(c.u.hop.dest, &c.u.hop.dest_len, dests[i]);
		set_str(h.u.hello.dest, &h.u.hello.dest_len, dests[i]);
		nh = pxfer_msg_encode(buf, sizeof(buf), &h);
		nc = pxfer_msg_encode(buf, sizeof(buf), &c);
		T_EXPECT((nc > 0) == (nh > 0),
			 "dest '%s': CHAIN encode %zd, HELLO encode %zd",
			 dests[i], nc, nh);
		rc = nc > 0 ? pxfer_msg_decode(c.type, buf + PXFER_HDR_LEN,
					       nc - PXFER_HDR_LEN, &d) : -1;
		T_EXPECT(rc == 0 && !strcmp(d.u.hop.dest, dests[i]),
			 "dest '%s': CHAIN decode %d", dests[i], rc);
	}
	/* and the same limit on its length */
	base(&c, PXFER_MSG_CHAIN);
	base(&h, PXFER_MSG_HELLO);
	fill_str(c.u.hop.dest, &c.u.hop.dest_len, PXFER_PATH_MAX + 1, 4);
	fill_str(h.u.hello.dest, &h.u.hello.dest_len, PXFER_PATH_MAX + 1, 4);
	T_EXPECT(pxfer_msg_encode(buf, sizeof(buf), &c) == -EINVAL &&
		 pxfer_msg_encode(buf, sizeof(buf), &h) == -EINVAL,
		 "a dest over PXFER_PATH_MAX, in a CHAIN as in a HELLO");
}

static void test_bad_file(void)
{
	static struct pxfer_msg m;
	static uint8_t buf[FRAME_MAX];

	BAD("FILE type 0", PXFER_MSG_FILE, m.u.file.type = 0);
	BAD("FILE type 4", PXFER_MSG_FILE, m.u.file.type = 4);
	BAD("FILE type 0xff", PXFER_MSG_FILE, m.u.file.type = 0xff);
	BAD("FILE mode 010000", PXFER_MSG_FILE, m.u.file.mode = 010000);
	BAD("FILE mode S_IFREG|0644", PXFER_MSG_FILE, m.u.file.mode = 0100644);
	BAD("FILE size on a DIR", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_DIR; m.u.file.size = 1);
	BAD("FILE size on a SYMLINK", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_SYMLINK;
	    set_str(m.u.file.target, &m.u.file.target_len, "t");
	    m.u.file.size = 4);
	BAD("FILE mtime_nsec 1e9", PXFER_MSG_FILE,
	    m.u.file.mtime_nsec = 1000000000);
	BAD("FILE mtime_nsec 0xffffffff", PXFER_MSG_FILE,
	    m.u.file.mtime_nsec = UINT32_MAX);
	BAD("FILE empty path", PXFER_MSG_FILE,
	    set_str(m.u.file.path, &m.u.file.path_len, ""));
	BAD("FILE path over PXFER_PATH_MAX", PXFER_MSG_FILE,
	    fill_str(m.u.file.path, &m.u.file.path_len,
		     PXFER_PATH_MAX + 1, 4));
	BAD("FILE path with NUL", PXFER_MSG_FILE, m.u.file.path[3] = '\0');
	BAD("FILE SYMLINK without target", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_SYMLINK; m.u.file.size = 0);
	BAD("FILE REG with target", PXFER_MSG_FILE,
	    set_str(m.u.file.target, &m.u.file.target_len, "x"));
	BAD("FILE DIR with target", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_DIR; m.u.file.size = 0;
	    set_str(m.u.file.target, &m.u.file.target_len, "x"));
	BAD("FILE target over PXFER_PATH_MAX", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_SYMLINK; m.u.file.size = 0;
	    fill_str(m.u.file.target, &m.u.file.target_len,
		     PXFER_PATH_MAX + 1, 5));
	BAD("FILE target with NUL", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_SYMLINK; m.u.file.size = 0;
	    set_str(m.u.file.target, &m.u.file.target_len, "abc");
	    m.u.file.target[1] = '\0');

	/* flags are for regular files; a digest only to be compared */
	BAD("FILE flags on a DIR", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_DIR; m.u.file.size = 0;
	    m.u.file.flags = PXFER_FILE_RESUME);
	BAD("FILE CHECKSUM and digest on a DIR", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_DIR; m.u.file.size = 0;
	    m.u.file.flags = PXFER_FILE_CHECKSUM;
	    fill_bytes(m.u.file.digest, PXFER_DIGEST_LEN, 1));
	BAD("FILE flags on a SYMLINK", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_SYMLINK; m.u.file.size = 0;
	    set_str(m.u.file.target, &m.u.file.target_len, "t");
	    m.u.file.flags = PXFER_FILE_SKIP);
	BAD("FILE TRUST without RESUME", PXFER_MSG_FILE,
	    m.u.file.flags = PXFER_FILE_TRUST);
	BAD("FILE TRUST and SKIP without RESUME", PXFER_MSG_FILE,
	    m.u.file.flags = PXFER_FILE_TRUST | PXFER_FILE_SKIP);
	BAD("FILE SUM_FOLLOWS without CHECKSUM", PXFER_MSG_FILE,
	    m.u.file.flags = PXFER_FILE_SUM_FOLLOWS);
	BAD("FILE SUM_FOLLOWS with a digest", PXFER_MSG_FILE,
	    m.u.file.flags = PXFER_FILE_CHECKSUM | PXFER_FILE_SUM_FOLLOWS;
	    m.u.file.digest[0] = 1);
	BAD("FILE flag 0x40", PXFER_MSG_FILE, m.u.file.flags = 0x40);

	/* a range is resumed, never compared; it has bounds and a job */
	BAD("FILE RANGE without RESUME", PXFER_MSG_FILE,
	    range(&m.u.file); m.u.file.flags = PXFER_FILE_RANGE);
	BAD("FILE RANGE with SKIP, without RESUME", PXFER_MSG_FILE,
	    range(&m.u.file);
	    m.u.file.flags = PXFER_FILE_RANGE | PXFER_FILE_SKIP);
	BAD("FILE RANGE with CHECKSUM", PXFER_MSG_FILE,
	    range(&m.u.file); m.u.file.flags |= PXFER_FILE_CHECKSUM;
	    m.u.file.digest[0] = 1);
	BAD("FILE RANGE with CHECKSUM and SUM_FOLLOWS", PXFER_MSG_FILE,
	    range(&m.u.file);
	    m.u.file.flags |= PXFER_FILE_CHECKSUM | PXFER_FILE_SUM_FOLLOWS);
	BAD("FILE RANGE on a DIR", PXFER_MSG_FILE,
	    range(&m.u.file); m.u.file.type = PXFER_FT_DIR;
	    m.u.file.size = 0; m.u.file.range_off = 0);
	BAD("FILE RANGE of length 0", PXFER_MSG_FILE,
	    range(&m.u.file); m.u.file.range_len = 0);
	BAD("FILE RANGE past the size", PXFER_MSG_FILE,
	    range(&m.u.file);
	    m.u.file.range_len = m.u.file.size - m.u.file.range_off + 1);
	BAD("FILE RANGE starting past the size", PXFER_MSG_FILE,
	    range(&m.u.file); m.u.file.range_off = m.u.file.size + 1;
	    m.u.file.range_len = 1);
	BAD("FILE RANGE that wraps", PXFER_MSG_FILE,
	    range(&m.u.file); m.u.file.size = UINT64_MAX;
	    m.u.file.range_off = 2; m.u.file.range_len = UINT64_MAX);
	BAD("FILE RANGE of an empty file", PXFER_MSG_FILE,
	    range(&m.u.file); m.u.file.size = 0;
	    m.u.file.range_off = 0; m.u.file.range_len = 1);
	BAD("FILE RANGE with no job", PXFER_MSG_FILE,
	    range(&m.u.file); memset(m.u.file.job, 0, PXFER_JOB_LEN));
	/* not on the wire without the flag: only the encoder can refuse */
	base(&m, PXFER_MSG_FILE);
	m.u.file.range_len = 1;
	T_EXPECT(pxfer_msg_encode(buf, sizeof(buf), &m) == -EINVAL,
		 "FILE range fields without RANGE encoded");
	base(&m, PXFER_MSG_FILE);
	m.u.file.job[3] = 1;
	T_EXPECT(pxfer_msg_encode(buf, sizeof(buf), &m) == -EINVAL,
		 "FILE job without RANGE encoded");
	BAD("FILE flag 0x80 with the others", PXFER_MSG_FILE,
	    m.u.file.flags = PXFER_FILE_FLAGS | 0x80);
	BAD("FILE flags 0xff", PXFER_MSG_FILE, m.u.file.flags = 0xff);
	BAD("FILE digest without a flag", PXFER_MSG_FILE,
	    m.u.file.digest[0] = 1);
	BAD("FILE digest with RESUME and SKIP, not CHECKSUM", PXFER_MSG_FILE,
	    m.u.file.flags = PXFER_FILE_RESUME | PXFER_FILE_SKIP;
	    m.u.file.digest[PXFER_DIGEST_LEN - 1] = 0x80);
	BAD("FILE digest on a DIR", PXFER_MSG_FILE,
	    m.u.file.type = PXFER_FT_DIR; m.u.file.size = 0;
	    memset(m.u.file.digest, 0xff, PXFER_DIGEST_LEN));

	BAD("FILE_ERR code 0", PXFER_MSG_FILE_ERR, m.u.status.code = 0);
	BAD("FILE_ERR text over PXFER_TEXT_MAX", PXFER_MSG_FILE_ERR,
	    fill_str(m.u.status.text, &m.u.status.text_len,
		     PXFER_TEXT_MAX + 1, 6));
	BAD("FILE_ERR text with NUL", PXFER_MSG_FILE_ERR,
	    m.u.status.text[2] = '\0');
	BAD("FILE_DONE text with NUL", PXFER_MSG_FILE_DONE,
	    set_str(m.u.status.text, &m.u.status.text_len, "ab");
	    m.u.status.text[1] = '\0');

	BAD("CREDIT count 0", PXFER_MSG_CREDIT, m.u.credit.count = 0);
	BAD("CREDIT count 257", PXFER_MSG_CREDIT,
	    m.u.credit.count = PXFER_CREDIT_MAX + 1);
	BAD("CREDIT count 0xffff", PXFER_MSG_CREDIT,
	    m.u.credit.count = 0xffff);
	BAD("CREDIT slot 1024", PXFER_MSG_CREDIT,
	    m.u.credit.slots[0] = PXFER_SLOTS_MAX);
	BAD("CREDIT worker 64", PXFER_MSG_CREDIT,
	    m.u.credit.worker = PXFER_WORKERS_MAX);

	BAD("FIN code != 0", PXFER_MSG_FIN, m.u.fin.code = EIO);
}

/* Nothing held, no digest, no runs: a FILE_OK that is only its state. */
static void file_ok_bare(struct pxfer_file_ok *k, uint8_t state)
{
	k->state = state;
	k->held = 0;
	k->nrun = 0;
	memset(k->digest, 0, PXFER_DIGEST_LEN);
}

static void swap_runs(struct pxfer_file_ok *k, unsigned int a, unsigned int b)
{
	struct pxfer_held_run t = k->run[a];

	k->run[a] = k->run[b];
	k->run[b] = t;
}

static void test_bad_file_ok(void)
{
	static const uint8_t states[] = {
		PXFER_HAVE_NONE, PXFER_HAVE_SAME, PXFER_HAVE_STALE,
		PXFER_HAVE_BAD,
	};
	static struct pxfer_msg m;
	struct pxfer_file_ok *k = &m.u.ok;
	char what[80];
	unsigned int i;

	/* runs, held and a digest belong to a partial, and only to it */
	for (i = 0; i < sizeof(states); i++) {
		snprintf(what, sizeof(what), "FILE_OK state %u with runs",
			 states[i]);
		BAD(what, PXFER_MSG_FILE_OK,
		    file_ok_bare(k, states[i]); k->nrun = 3);
		snprintf(what, sizeof(what), "FILE_OK state %u with held",
			 states[i]);
		BAD(what, PXFER_MSG_FILE_OK,
		    file_ok_bare(k, states[i]); k->held = 1);
		snprintf(what, sizeof(what), "FILE_OK state %u with a digest",
			 states[i]);
		BAD(what, PXFER_MSG_FILE_OK,
		    file_ok_bare(k, states[i]);
		    k->digest[PXFER_DIGEST_LEN - 1] = 1);
		snprintf(what, sizeof(what),
			 "FILE_OK state %u with a partial's fields", states[i]);
		BAD(what, PXFER_MSG_FILE_OK, k->state = states[i]);
	}
	BAD("FILE_OK PART without runs", PXFER_MSG_FILE_OK,
	    file_ok_bare(k, PXFER_HAVE_PART));
	BAD("FILE_OK PART without runs, with held and digest",
	    PXFER_MSG_FILE_OK, k->nrun = 0);
	BAD("FILE_OK state 5", PXFER_MSG_FILE_OK,
	    file_ok_bare(k, PXFER_HAVE_MAX + 1));
	BAD("FILE_OK state 0xff", PXFER_MSG_FILE_OK, file_ok_bare(k, 0xff));
	BAD("FILE_OK state 5 with runs", PXFER_MSG_FILE_OK,
	    k->state = PXFER_HAVE_MAX + 1);

	/* sorted and disjoint */
	BAD("FILE_OK runs unsorted", PXFER_MSG_FILE_OK, swap_runs(k, 0, 2));
	BAD("FILE_OK runs overlapping by a byte", PXFER_MSG_FILE_OK,
	    k->run[1].off = k->run[0].off + k->run[0].len - 1);
	BAD("FILE_OK the same run twice", PXFER_MSG_FILE_OK,
	    k->held += k->run[0].len - k->run[1].len;
	    k->run[1] = k->run[0]);
	BAD("FILE_OK a run inside the one before", PXFER_MSG_FILE_OK,
	    k->held -= k->run[1].len - 1; k->run[1].len = 1;
	    k->run[1].off = k->run[0].off + 1);

	/* each run's own fields */
	BAD("FILE_OK len 0", PXFER_MSG_FILE_OK,
	    k->held -= k->run[1].len; k->run[1].len = 0);
	BAD("FILE_OK unit 0", PXFER_MSG_FILE_OK, k->run[2].unit = 0);
	BAD("FILE_OK unit PXFER_CHUNK_MAX + 1", PXFER_MSG_FILE_OK,
	    k->run[2].unit = PXFER_CHUNK_MAX + 1);
	BAD("FILE_OK unit 0xffffffff", PXFER_MSG_FILE_OK,
	    k->run[0].unit = UINT32_MAX);
	BAD("FILE_OK offset + len overflows u64", PXFER_MSG_FILE_OK,
	    k->run[2].off = UINT64_MAX - k->run[2].len + 1);
	BAD("FILE_OK offset 2^64 - 1", PXFER_MSG_FILE_OK,
	    k->run[2].off = UINT64_MAX);
	BAD("FILE_OK len 2^64 - 1 from offset 1", PXFER_MSG_FILE_OK,
	    k->nrun = 1; k->run[0].len = UINT64_MAX; k->held = UINT64_MAX;
	    k->run[0].off = 1);

	/* held is the sum of the lengths */
	BAD("FILE_OK held one more", PXFER_MSG_FILE_OK, k->held++);
	BAD("FILE_OK held one less", PXFER_MSG_FILE_OK, k->held--);
	BAD("FILE_OK held 0", PXFER_MSG_FILE_OK, k->held = 0);
	BAD("FILE_OK held 2^64 - 1", PXFER_MSG_FILE_OK, k->held = UINT64_MAX);

	/* the count: refused, in whatever order the checks come */
	BAD("FILE_OK nrun 257", PXFER_MSG_FILE_OK,
	    k->nrun = PXFER_RUNS_MAX + 1);
	BAD("FILE_OK nrun 0xffff", PXFER_MSG_FILE_OK, k->nrun = 0xffff);
}

/*
 * A body of @n good runs (sorted, a byte each, a byte apart), held their
 * sum: good but for the count when @n is over PXFER_RUNS_MAX.
 */
static void raw_file_ok_runs(struct raw *r, unsigned int n)
{
	unsigned int i;

	r->n = 0;
	raw_be(r, 9, 8);
	raw_be(r, PXFER_HAVE_PART, 1);
	raw_be(r, n, 8);
	for (i = 0; i < PXFER_DIGEST_LEN; i++)
		raw_be(r, 0, 1);
	raw_be(r, n, 2);
	for (i = 0; i < n; i++) {
		raw_be(r, 2ull * i, 8);
		raw_be(r, 1, 8);
		raw_be(r, 1, 4);
	}
}

/*
 * More runs than a FILE_OK holds are refused from the count, before any
 * run is read: no byte past run[] of the decoded struct is written (and
 * the sanitizer build would see run[PXFER_RUNS_MAX] indexed), however
 * many good runs follow.
 */
static void test_file_ok_count(void)
{
	static const unsigned int counts[] = {
		PXFER_RUNS_MAX, PXFER_RUNS_MAX + 1, 0xffff };
	static struct raw r;
	struct pxfer_msg *d = malloc(sizeof(*d));
	const uint8_t *past, *end = (const uint8_t *)(d + 1);
	unsigned int i;
	int rc;

	if (!d)
		abort();
	past = (const uint8_t *)(d->u.ok.run + PXFER_RUNS_MAX);
	T_EXPECT(past < end, "no room past run[] to watch");
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		int over = counts[i] > PXFER_RUNS_MAX;
		const uint8_t *p;

		raw_file_ok_runs(&r, counts[i]);
		memset(d, 0x5a, sizeof(*d));
		rc = decode_exact(PXFER_MSG_FILE_OK, r.b, r.n, d);
		T_EXPECT(rc == (over ? -EPROTO : 0),
			 "FILE_OK of %u good runs: decode gave %d",
			 counts[i], rc);
		for (p = past; p < end && *p == 0x5a; p++)
			;
		T_EXPECT(p == end,
			 "FILE_OK of %u runs: byte %td past run[] written",
			 counts[i], p - past);
		/* cut after the count: refused, whatever the count */
		rc = decode_exact(PXFER_MSG_FILE_OK, r.b, 35, d);
		T_EXPECT(rc == -EPROTO,
			 "FILE_OK of %u runs, fixed part only: %d",
			 counts[i], rc);
	}
	free(d);
}

/* Types that have no control codec: CHUNK, 0 and past the end. */
static void test_bad_type(void)
{
	static uint8_t buf[FRAME_MAX];
	static const uint16_t types[] = {
		0, PXFER_MSG_CHUNK, PXFER_MSG_TYPE_MAX + 1, 0xffff };
	static struct pxfer_msg m, d;
	unsigned int i;
	ssize_t n;
	int rc;

	base(&m, PXFER_MSG_FIN);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		m.type = types[i];
		n = pxfer_msg_encode(buf, sizeof(buf), &m);
		T_EXPECT(n == -EINVAL, "encode of type %u gave %zd",
			 types[i], n);
		rc = decode_exact(types[i], buf, 20, &d);
		T_EXPECT(rc == -EPROTO, "decode of type %u gave %d",
			 types[i], rc);
	}
}

/* ------------------------------------------------------------------------ */
/* Frame header */

static void expect_hdr(const char *what, uint16_t type, uint16_t flags,
		       uint32_t len, int want)
{
	uint8_t *p = malloc(PXFER_HDR_LEN);
	struct pxfer_hdr h;
	int rc;

	p[0] = type >> 8;
	p[1] = (uint8_t)type;
	p[2] = flags >> 8;
	p[3] = (uint8_t)flags;
	p[4] = (uint8_t)(len >> 24);
	p[5] = (uint8_t)(len >> 16);
	p[6] = (uint8_t)(len >> 8);
	p[7] = (uint8_t)len;
	rc = pxfer_hdr_decode(p, PXFER_HDR_LEN, &h);
	T_EXPECT(rc == want, "header %s: gave %d, want %d", what, rc, want);
	if (!rc && !want)
		T_EXPECT(h.type == type && h.flags == 0 && h.len == len,
			 "header %s: fields", what);
	free(p);
}

static void test_header(void)
{
	static const uint8_t want[PXFER_HDR_LEN] = {
		0x00, 0x0c, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04 };
	uint8_t buf[PXFER_HDR_LEN + 1];
	struct pxfer_hdr h;
	size_t len;
	int t, rc;

	memset(buf, 0xee, sizeof(buf));
	pxfer_hdr_encode(buf, PXFER_MSG_CREDIT, 0x01020304);
	T_EXPECT(!memcmp(buf, want, PXFER_HDR_LEN) && buf[8] == 0xee,
		 "header encode bytes");

	for (t = PXFER_MSG_CHALLENGE; t <= PXFER_MSG_TYPE_MAX; t++)
		expect_hdr(pxfer_msg_name(t), (uint16_t)t, 0, 0, 0);
	expect_hdr("type 0", 0, 0, 0, -EPROTO);
	expect_hdr("type PXFER_MSG_TYPE_MAX + 1", PXFER_MSG_TYPE_MAX + 1, 0, 0,
		   -EPROTO);
	expect_hdr("type 0xffff", 0xffff, 0, 0, -EPROTO);
	expect_hdr("flags 1", PXFER_MSG_FIN, 1, 20, -EPROTO);
	expect_hdr("flags 0x8000", PXFER_MSG_FIN, 0x8000, 20, -EPROTO);

	/* a control type is bounded by its own largest body */
	expect_hdr("FILE len PXFER_MSG_MAX + 1", PXFER_MSG_FILE, 0,
		   PXFER_MSG_MAX + 1, -EPROTO);
	expect_hdr("FILE len 0xffffffff", PXFER_MSG_FILE, 0, UINT32_MAX,
		   -EPROTO);
	expect_hdr("FILE largest body", PXFER_MSG_FILE, 0,
		   54 + 2 * PXFER_PATH_MAX, 0);
	expect_hdr("FILE largest body + 1", PXFER_MSG_FILE, 0,
		   54 + 2 * PXFER_PATH_MAX + 1, -EPROTO);
	expect_hdr("FILE_OK largest body", PXFER_MSG_FILE_OK, 0,
		   35 + 20 * PXFER_RUNS_MAX, 0);
	expect_hdr("FILE_OK largest body + 1", PXFER_MSG_FILE_OK, 0,
		   35 + 20 * PXFER_RUNS_MAX + 1, -EPROTO);
	expect_hdr("FILE_END len 36", PXFER_MSG_FILE_END, 0, 36, 0);
	expect_hdr("FILE_END len 37", PXFER_MSG_FILE_END, 0, 37, -EPROTO);
	expect_hdr("FILE_ERR largest body", PXFER_MSG_FILE_ERR, 0,
		   14 + PXFER_TEXT_MAX, 0);
	expect_hdr("FILE_ERR largest body + 1", PXFER_MSG_FILE_ERR, 0,
		   14 + PXFER_TEXT_MAX + 1, -EPROTO);
	expect_hdr("CHALLENGE len 41", PXFER_MSG_CHALLENGE, 0, 41, -EPROTO);
	expect_hdr("FIN len 21", PXFER_MSG_FIN, 0, 21, -EPROTO);
	expect_hdr("CREDIT largest body", PXFER_MSG_CREDIT, 0,
		   4 + 2 * PXFER_CREDIT_MAX, 0);
	expect_hdr("CREDIT largest body + 1", PXFER_MSG_CREDIT, 0,
		   4 + 2 * PXFER_CREDIT_MAX + 1, -EPROTO);

	expect_hdr("CHUNK largest frame", PXFER_MSG_CHUNK, 0,
		   PXFER_CHUNK_DESC_MAX + PXFER_CHUNK_MAX, 0);
	expect_hdr("CHUNK len over the largest frame", PXFER_MSG_CHUNK, 0,
		   PXFER_CHUNK_DESC_MAX + PXFER_CHUNK_MAX + 1, -EPROTO);
	expect_hdr("CHUNK len 0xffffffff", PXFER_MSG_CHUNK, 0, UINT32_MAX,
		   -EPROTO);

	/* a partial header asks for more, from a buffer holding only that */
	for (len = 0; len < PXFER_HDR_LEN; len++) {
		uint8_t *p = malloc(len);

		if (len)
			memcpy(p, want, len);
		rc = pxfer_hdr_decode(p, len, &h);
		T_EXPECT(rc == -EAGAIN, "header of %zu bytes gave %d",
			 len, rc);
		free(p);
	}
}

/* ------------------------------------------------------------------------ */
/* Chunk descriptors */

static void chunk_roundtrip(const struct pxfer_chunk *c, int idx)
{
	static struct raw want, got;
	static struct pxfer_chunk d;
	size_t dlen = pxfer_chunk_desc_len(c->nseg);
	uint8_t *buf;
	size_t cap, cut;
	ssize_t n;

	raw_chunk(&want, c);
	T_EXPECT(want.n == dlen, "chunk %d: reference length", idx);
	buf = malloc(dlen);
	n = pxfer_chunk_encode(buf, dlen, c);
	T_EXPECT(n == (ssize_t)dlen, "chunk %d: encode gave %zd", idx, n);
	T_EXPECT(n != (ssize_t)dlen || !memcmp(buf, want.b, dlen),
		 "chunk %d: bytes differ from the layout in proto.h", idx);
	free(buf);

	for (cap = 0; cap < dlen; cap++) {
		buf = malloc(cap);
		n = pxfer_chunk_encode(buf, cap, c);
		T_EXPECT(n == -EMSGSIZE, "chunk %d: cap %zu gave %zd",
			 idx, cap, n);
		free(buf);
	}

	memset(&d, 0x5a, sizeof(d));
	n = chunk_decode_exact(want.b, dlen, &d);
	T_EXPECT(n == (ssize_t)dlen, "chunk %d: decode gave %zd", idx, n);
	if (n == (ssize_t)dlen) {
		raw_chunk(&got, &d);
		T_EXPECT(got.n == dlen && !memcmp(got.b, want.b, dlen),
			 "chunk %d: decoded fields differ", idx);
	}

	/* the payload that follows on tcp is not the descriptor's business */
	memset(want.b + dlen, 0xab, 100);
	n = chunk_decode_exact(want.b, dlen + 100, &d);
	T_EXPECT(n == (ssize_t)dlen, "chunk %d with payload: decode gave %zd",
		 idx, n);

	for (cut = 0; cut < dlen; cut++) {
		n = chunk_decode_exact(want.b, cut, &d);
		T_EXPECT(n == -EAGAIN, "chunk %d truncated to %zu: %zd",
			 idx, cut, n);
	}
}

static void bad_chunk(const char *what, const struct pxfer_chunk *c)
{
	static uint8_t buf[2 * PXFER_CHUNK_DESC_MAX];
	static struct raw r;
	static struct pxfer_chunk d;
	ssize_t n;

	n = pxfer_chunk_encode(buf, sizeof(buf), c);
	T_EXPECT(n == -EINVAL, "%s: encode gave %zd, want -EINVAL", what, n);
	raw_chunk(&r, c);
	n = chunk_decode_exact(r.b, r.n, &d);
	T_EXPECT(n == -EPROTO, "%s: decode gave %zd, want -EPROTO", what, n);
}

#define BAD_CHUNK(what, stmt) do {		\
	c = chunks[0];				\
	stmt;					\
	bad_chunk((what), &c);			\
} while (0)

static void test_chunk(void)
{
	static struct pxfer_chunk c, d;
	static struct raw r;
	int i;
	ssize_t n;

	for (i = 0; i < nchunks; i++)
		chunk_roundtrip(&chunks[i], i);

	/* named values: offsets past 4 GiB and the limits survive */
	raw_chunk(&r, &chunks[1]);
	n = pxfer_chunk_decode(r.b, r.n, &d);
	T_EXPECT(n > 0 && d.nseg == PXFER_SEG_MAX && d.len == PXFER_CHUNK_MAX &&
		 d.seg[1].offset == (5ull << 32) + 12345 &&
		 d.seg[PXFER_SEG_MAX - 1].offset ==
		 UINT64_MAX - PXFER_CHUNK_MAX / PXFER_SEG_MAX &&
		 d.seq == UINT64_MAX && d.slot == PXFER_SLOTS_MAX - 1,
		 "chunk limits decode to their values");

	BAD_CHUNK("chunk nseg 0", c.nseg = 0);
	BAD_CHUNK("chunk nseg 65", c.nseg = PXFER_SEG_MAX + 1);
	BAD_CHUNK("chunk nseg 0xffff", c.nseg = 0xffff);
	BAD_CHUNK("chunk zero-length segment",
		  c.seg[0].len = 0; c.seg[1].len = c.len);
	BAD_CHUNK("chunk offset + len overflows u64",
		  c.seg[1].offset = UINT64_MAX - c.seg[1].len + 1);
	BAD_CHUNK("chunk offset 2^64 - 1",
		  c.seg[0].offset = UINT64_MAX);
	BAD_CHUNK("chunk segments sum below len", c.len += 1);
	BAD_CHUNK("chunk segments sum above len", c.len -= 1);
	BAD_CHUNK("chunk len 0",
		  c.len = 0; c.seg[0].len = 0; c.seg[1].len = 0);
	BAD_CHUNK("chunk len 64 MiB + 1",
		  c.len = PXFER_CHUNK_MAX + 1;
		  c.seg[0].len = PXFER_CHUNK_MAX / 2;
		  c.seg[1].len = PXFER_CHUNK_MAX / 2 + 1);
	BAD_CHUNK("chunk len 0xffffffff",
		  c.len = UINT32_MAX;
		  c.seg[0].len = UINT32_MAX - 1; c.seg[1].len = 1);

	/* a bad fixed part is refused before the segments have arrived */
	c = chunks[0];
	c.nseg = PXFER_SEG_MAX + 1;
	raw_chunk(&r, &c);
	n = chunk_decode_exact(r.b, pxfer_chunk_desc_len(0), &d);
	T_EXPECT(n == -EPROTO, "chunk nseg 65, fixed part only: %zd", n);
	c = chunks[0];
	c.len = PXFER_CHUNK_MAX + 1;
	raw_chunk(&r, &c);
	n = chunk_decode_exact(r.b, pxfer_chunk_desc_len(0), &d);
	T_EXPECT(n == -EPROTO, "chunk len too big, fixed part only: %zd", n);
}

/* ------------------------------------------------------------------------ */
/* Names */

static void test_names(void)
{
	static const char *const want[] = {
		"CHALLENGE", "HELLO", "WELCOME", "DATA_HELLO", "DATA_WELCOME",
		"REFUSE", "FILE", "FILE_OK", "FILE_ERR", "FILE_END",
		"FILE_DONE", "CREDIT", "FIN", "ACK", "ABORT", "CHUNK", "PING",
		"DATA_LOST", "DATA_SENT", "FILE_SUM", "CHAIN", "CHAIN_REPORT",
	};
	int t;

	T_EXPECT(sizeof(want) / sizeof(want[0]) == PXFER_MSG_TYPE_MAX,
		 "%d names for %d types", (int)(sizeof(want) / sizeof(want[0])),
		 PXFER_MSG_TYPE_MAX);
	for (t = PXFER_MSG_CHALLENGE; t <= PXFER_MSG_TYPE_MAX &&
	     t <= (int)(sizeof(want) / sizeof(want[0])); t++) {
		const char *name = pxfer_msg_name((uint16_t)t);

		T_EXPECT(name && !strcmp(name, want[t - 1]),
			 "name of type %d is %s", t, name ? name : "(null)");
	}
	T_EXPECT(pxfer_msg_name(0) != NULL, "name of type 0");
	T_EXPECT(pxfer_msg_name(PXFER_MSG_TYPE_MAX + 1) != NULL,
		 "name of type PXFER_MSG_TYPE_MAX + 1");
	T_EXPECT(pxfer_msg_name(0xffff) != NULL, "name of type 0xffff");
}

/* ------------------------------------------------------------------------ */
/* Fuzz: random mutations of valid encodings, fixed seed */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t rnd_below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

struct corpus {
	uint16_t type;		/* PXFER_MSG_CHUNK for a descriptor */
	size_t len;
	uint8_t *b;
};

static void mutate(uint8_t *b, size_t *lenp, size_t cap)
{
	static const uint8_t i8[] = { 0, 1, 0x7f, 0x80, 0xff };
	static const uint16_t i16[] = {
		0, 1, 2, 0x3f, 0x40, 0x41, 0xff, 0x100, 0x101, 0x3ff, 0x400,
		0x401, 0x1000, 0x1001, 0x7fff, 0x8000, 0xfffe, 0xffff,
	};
	size_t len = *lenp, pos, extra;

	switch (rnd_below(6)) {
	case 0:
		if (len)
			b[rnd_below(len)] ^= (uint8_t)(1u << rnd_below(8));
		break;
	case 1:
		if (len)
			b[rnd_below(len)] = (uint8_t)rnd();
		break;
	case 2:
		if (len)
			b[rnd_below(len)] = i8[rnd_below(sizeof(i8))];
		break;
	case 3:
		/* most length and count fields are u16 */
		if (len >= 2) {
			uint16_t v = i16[rnd_below(sizeof(i16) / 2)];

			pos = rnd_below(len - 1);
			b[pos] = v >> 8;
			b[pos + 1] = (uint8_t)v;
		}
		break;
	case 4:
		len = rnd_below(len + 1);
		break;
	case 5:
		extra = 1 + rnd_below(8);
		if (len + extra <= cap) {
			for (pos = 0; pos < extra; pos++)
				b[len + pos] = (uint8_t)rnd();
			len += extra;
		}
		break;
	}
	*lenp = len;
}

/*
 * An accepted body must be canonical: encoding what was decoded gives back
 * the very same bytes. This catches a decoder that accepts something its
 * encoder would never produce.
 */
static int fuzz_one(uint16_t type, const uint8_t *b, size_t len, long it)
{
	static uint8_t out[FRAME_MAX];
	static struct pxfer_msg d;
	static struct pxfer_chunk c;
	uint8_t *p = malloc(len);
	ssize_t n;
	int rc, ok = 0;

	if (len)
		memcpy(p, b, len);
	if (type == PXFER_MSG_CHUNK) {
		n = pxfer_chunk_decode(p, len, &c);
		T_EXPECT(n == -EAGAIN || n == -EPROTO ||
			 (n > 0 && (size_t)n <= len),
			 "fuzz %ld: chunk decode gave %zd", it, n);
		if (n > 0) {
			ssize_t e = pxfer_chunk_encode(out, sizeof(out), &c);

			T_EXPECT(e == n && !memcmp(out, p, (size_t)n),
				 "fuzz %ld: accepted chunk is not canonical",
				 it);
			ok = 1;
		}
	} else {
		rc = pxfer_msg_decode(type, p, len, &d);
		T_EXPECT(rc == 0 || rc == -EPROTO,
			 "fuzz %ld: decode gave %d", it, rc);
		if (rc == 0) {
			n = pxfer_msg_encode(out, sizeof(out), &d);
			T_EXPECT(n == (ssize_t)(PXFER_HDR_LEN + len) &&
				 !memcmp(out + PXFER_HDR_LEN, p, len),
				 "fuzz %ld: accepted %s is not canonical",
				 it, pxfer_msg_name(type));
			ok = 1;
		}
	}
	free(p);
	return ok;
}

static void test_fuzz(void)
{
	static struct corpus corpus[sizeof(samples) / sizeof(samples[0]) +
				    sizeof(chunks) / sizeof(chunks[0])];
	static uint8_t scratch[FRAME_MAX + 64];
	static struct raw r;
	struct pxfer_hdr h;
	int ncorpus = 0, i, failed = t_failures;
	long it, accepted = 0, unchanged = 0;

	for (i = 0; i < nsamples; i++) {
		raw_body(&r, &samples[i]);
		corpus[ncorpus].type = samples[i].type;
		corpus[ncorpus].len = r.n;
		corpus[ncorpus].b = malloc(r.n);
		memcpy(corpus[ncorpus++].b, r.b, r.n);
	}
	for (i = 0; i < nchunks; i++) {
		raw_chunk(&r, &chunks[i]);
		corpus[ncorpus].type = PXFER_MSG_CHUNK;
		corpus[ncorpus].len = r.n;
		corpus[ncorpus].b = malloc(r.n);
		memcpy(corpus[ncorpus++].b, r.b, r.n);
	}

	for (it = 0; it < FUZZ_ITERATIONS; it++) {
		const struct corpus *s = &corpus[rnd_below(ncorpus)];
		uint16_t type = s->type;
		size_t len = s->len;
		int k, nmut = 1 + (int)rnd_below(4);

		memcpy(scratch, s->b, len);
		for (k = 0; k < nmut; k++)
			mutate(scratch, &len, sizeof(scratch));
		/* now and then, the right bytes under the wrong type */
		if (!rnd_below(16))
			type = (uint16_t)rnd_below(PXFER_MSG_TYPE_MAX + 2);
		accepted += fuzz_one(type, scratch, len, it);
		if (type == s->type && len == s->len &&
		    !memcmp(scratch, s->b, len))
			unchanged++;

		/* random headers: accepted ones must be within range */
		if (pxfer_hdr_decode(scratch, len, &h) == 0)
			T_EXPECT(h.type >= 1 && h.type <= PXFER_MSG_TYPE_MAX &&
				 !h.flags, "fuzz %ld: header accepted", it);
		if (t_failures - failed > 20) {
			fprintf(stderr, "fuzz: too many failures, stopping\n");
			break;
		}
	}
	for (i = 0; i < ncorpus; i++)
		free(corpus[i].b);
	printf("fuzz: %ld iterations, %ld accepted, %ld unchanged inputs\n",
	       it, accepted, unchanged);
}

int main(void)
{
	add_handshake_samples();
	add_transfer_samples();
	add_chain_samples();
	add_chunk_samples();

	test_header();
	test_names();
	test_roundtrip();
	test_ping();
	test_values();
	test_file_ok_max();
	test_truncation();
	test_bad_handshake();
	test_bad_chain();
	test_chain_dest();
	test_bad_file();
	test_bad_file_ok();
	test_file_ok_count();
	test_bad_type();
	test_chunk();
	test_fuzz();

	if (!t_failures)
		printf("proto_test: all passed\n");
	return t_result();
}
