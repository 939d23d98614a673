/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpus of every fuzz target: valid inputs made with the
 * encoders (every message type, the smallest and largest of each field
 * and string) and edge cases next to them (a byte short, a byte over, a
 * length one past its limit, each field the decoder checks set just out
 * of its range). Run by `make fuzz-corpus`, which writes into
 * test/fuzz/corpus/; test/fuzz/corpus.sh checks that the committed seeds
 * are what this program makes today.
 *
 * Usage: make_corpus DIR   (writes DIR/<target>/<seed>)
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/work_wire.h"
#include "core/bytes.h"
#include "core/proto.h"
#include "core/seal.h"
#include "fuzz.h"
#include "recv/partial.h"
#include "send/walk.h"
#include "transport/rdma/ring_desc.h"

#define FRAME_MAX	(PXFER_HDR_LEN + PXFER_MSG_MAX)
/* room for a seed over a limit */
#define BODY_MAX	(PXFER_MSG_MAX + 16)

static const char *outdir;
static int failed;

static void seed(const char *target, const char *name, const void *buf,
		 size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		goto out_error;
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
	f = fopen(path, "wb");
	if (!f)
		goto out_error;
	if (len && fwrite(buf, len, 1, f) != 1) {
		fclose(f);
		goto out_error;
	}
	if (fclose(f) == 0)
		return;
out_error:
	fprintf(stderr, "error: cannot write '%s': %s\n", path,
		strerror(errno));
	failed = 1;
}

/*
 * A path of @len bytes made of names of @name_len bytes ("aaa/bbb/c"),
 * the first name one byte shorter where the path would end in '/'.
 */
static void make_path(char *dst, size_t len, size_t name_len)
{
	size_t i, j, skip = len % (name_len + 1) == 0;

	for (i = 0; i < len; i++) {
		j = i + skip;
		dst[i] = (j + 1) % (name_len + 1) ?
			 (char)('a' + j / (name_len + 1) % 26) : '/';
	}
	dst[len] = '\0';
}

/* ------------------------------------------------------------------------ */
/* msg: the type byte, then the body; hdr: the header in front of it */

struct body {
	uint8_t b[1 + BODY_MAX];	/* the type byte, then the body */
	size_t n;
};

static void msg_write(const char *name, const struct body *body)
{
	seed("msg", name, body->b, body->n);
}

/*
 * Grow the string (or blob, or slot list) whose u16 count is at @off in
 * the body by one element of @elem bytes: a seed one past the limit when
 * the string was at it.
 */
static void body_grow(struct body *body, size_t off, size_t elem)
{
	uint8_t *cnt = body->b + 1 + off;
	uint16_t n = pxfer_get_be(cnt, 2);
	size_t end = 1 + off + 2 + (size_t)n * elem;

	memmove(body->b + end + elem, body->b + end, body->n - end);
	memset(body->b + end, 'x', elem);
	pxfer_put_be(cnt, n + 1, 2);
	body->n += elem;
}

/* Encode @m into @body: its type byte, then its body. */
static int msg_body(const char *name, const struct pxfer_msg *m,
		    struct body *body, uint8_t *frame, struct pxfer_hdr *h)
{
	ssize_t n = pxfer_msg_encode(frame, FRAME_MAX, m);

	if (n < 0 || pxfer_hdr_decode(frame, n, h)) {
		fprintf(stderr, "error: seed '%s' does not encode\n", name);
		failed = 1;
		return -1;
	}
	body->b[0] = (uint8_t)m->type;
	memcpy(body->b + 1, frame + PXFER_HDR_LEN, h->len);
	body->n = 1 + h->len;
	return 0;
}

/*
 * Take the last element of @elem bytes off the string (or slot list) whose
 * u16 count is at @off in the body: an empty one, where it had one.
 */
static void body_shrink(struct body *body, size_t off, size_t elem)
{
	uint8_t *cnt = body->b + 1 + off;
	uint16_t n = pxfer_get_be(cnt, 2);
	size_t end = 1 + off + 2 + (size_t)n * elem;

	memmove(body->b + end - elem, body->b + end, body->n - end);
	pxfer_put_be(cnt, n - 1, 2);
	body->n -= elem;
}

/*
 * Encode @m and write it as msg/@name, with the variants a byte short and
 * a byte over, and its header as hdr/@name. @at_max: the body is as long
 * as its type allows, so a header announcing one byte more is refused.
 * Leaves the seed in @body.
 */
static void msg_seed(const char *name, const struct pxfer_msg *m, bool at_max,
		     struct body *body)
{
	static uint8_t frame[FRAME_MAX];
	struct pxfer_hdr h;
	char var[128];

	if (msg_body(name, m, body, frame, &h))
		return;
	seed("hdr", name, frame, PXFER_HDR_LEN);
	if (at_max) {
		snprintf(var, sizeof(var), "%s-over", name);
		pxfer_hdr_encode(frame, h.type, h.len + 1);
		seed("hdr", var, frame, PXFER_HDR_LEN);
	}
	msg_write(name, body);
	if (h.len) {
		snprintf(var, sizeof(var), "%s-short", name);
		seed("msg", var, body->b, body->n - 1);
	}
	snprintf(var, sizeof(var), "%s-long", name);
	body->b[body->n] = 0;
	seed("msg", var, body->b, body->n + 1);
}

/*
 * Write @m as msg/@name with the @n-byte field at offset @off of its body
 * set to @v: one value out of its range, which the decoder must refuse.
 */
static void msg_bad(const char *name, const struct pxfer_msg *m, size_t off,
		    uint64_t v, unsigned int n)
{
	static uint8_t frame[FRAME_MAX];
	static struct body body;
	struct pxfer_hdr h;

	if (msg_body(name, m, &body, frame, &h))
		return;
	if (off + n > h.len) {
		fprintf(stderr, "error: seed '%s' has no field at %zu\n", name,
			off);
		failed = 1;
		return;
	}
	pxfer_put_be(body.b + 1 + off, v, n);
	msg_write(name, &body);
}

static void msgs_handshake(struct pxfer_msg *m, struct body *body)
{
	struct pxfer_ring_desc rd = {
		.addr = 0x7f0000001000ull, .rkey = 0x1234,
		.stride = (4u << 20) + 4096, .hdr = 4096, .slots = 8,
	};

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_CHALLENGE;
	m->u.challenge = (struct pxfer_challenge){
		.magic = PXFER_MAGIC, .version = PXFER_PROTO_VERSION,
	};
	memset(m->u.challenge.nonce, 0x11, PXFER_NONCE_LEN);
	msg_seed("challenge-tcp", m, true, body);
	m->u.challenge.transport = 1;
	msg_seed("challenge-rdma", m, true, body);
	msg_bad("challenge-magic", m, 0, PXFER_MAGIC + 1, 4);
	msg_bad("challenge-version", m, 4, PXFER_PROTO_VERSION + 1, 2);
	msg_bad("challenge-transport", m, 6, 2, 2);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_HELLO;
	m->u.hello = (struct pxfer_hello){
		.magic = PXFER_MAGIC, .version = PXFER_PROTO_VERSION,
		.workers = 1, .chunk_size = PXFER_CHUNK_MIN,
	};
	msg_seed("hello", m, false, body);
	msg_bad("hello-magic", m, 0, 0, 4);
	msg_bad("hello-version", m, 4, 0, 2);
	msg_bad("hello-workers-0", m, 6, 0, 2);
	msg_bad("hello-workers-over", m, 6, PXFER_WORKERS_MAX + 1, 2);
	msg_bad("hello-chunk-small", m, 8, PXFER_CHUNK_MIN - 1, 4);
	msg_bad("hello-chunk-over", m, 8, PXFER_CHUNK_MAX + 1, 4);
	msg_bad("hello-flags", m, 12, PXFER_HELLO_FLAGS + 1, 4);
	m->u.hello.flags = PXFER_HELLO_VERIFY;
	msg_seed("hello-verify", m, false, body);
	m->u.hello.workers = PXFER_WORKERS_MAX;
	m->u.hello.chunk_size = PXFER_CHUNK_MAX;
	m->u.hello.flags = PXFER_HELLO_FLAGS & ~PXFER_HELLO_CHECKSUM;
	memset(m->u.hello.nonce, 0x22, PXFER_NONCE_LEN);
	memset(m->u.hello.mac, 0x33, PXFER_MAC_LEN);
	m->u.hello.dest_len = PXFER_PATH_MAX;
	make_path(m->u.hello.dest, PXFER_PATH_MAX, PXFER_NAME_MAX);
	msg_seed("hello-max", m, true, body);
	body_grow(body, 80, 1);
	msg_write("hello-dest-over", body);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_WELCOME;
	m->u.welcome = (struct pxfer_welcome){
		.session = 1, .chunk_size = PXFER_CHUNK_MIN, .workers = 1,
		.slots = 1, .max_files = 1,
	};
	msg_seed("welcome-min", m, true, body);
	msg_bad("welcome-chunk-small", m, 40, PXFER_CHUNK_MIN - 1, 4);
	msg_bad("welcome-workers-0", m, 44, 0, 2);
	msg_bad("welcome-slots-0", m, 46, 0, 2);
	msg_bad("welcome-max_files-0", m, 48, 0, 4);
	m->u.welcome = (struct pxfer_welcome){
		.session = UINT64_MAX, .chunk_size = PXFER_CHUNK_MAX,
		.workers = PXFER_WORKERS_MAX, .slots = PXFER_SLOTS_MAX,
		.max_files = 65536,
		.flags = PXFER_HELLO_ENCRYPT | PXFER_HELLO_CHACHA,
	};
	msg_seed("welcome-max", m, true, body);
	msg_bad("welcome-flags-both", m, 52,
		PXFER_HELLO_ENCRYPT | PXFER_HELLO_CHECKSUM, 4);
	msg_bad("welcome-flags-unknown", m, 52, PXFER_HELLO_VERIFY << 1, 4);
	msg_bad("welcome-flags-verify", m, 52, PXFER_HELLO_VERIFY, 4);
	msg_bad("welcome-chunk-over", m, 40, PXFER_CHUNK_MAX + 1, 4);
	msg_bad("welcome-workers-over", m, 44, PXFER_WORKERS_MAX + 1, 2);
	msg_bad("welcome-slots-over", m, 46, PXFER_SLOTS_MAX + 1, 2);
	msg_bad("welcome-max_files-over", m, 48, 65537, 4);
	/* rails: an IPv4 and an IPv6 one; then bad ones (offset 56: nrails) */
	m->u.welcome.nrails = 2;
	m->u.welcome.rail[0] = (struct pxfer_wire_rail){
		.family = 4, .prefix = 24, .addr = { 10, 77, 0, 1 },
	};
	m->u.welcome.rail[1] = (struct pxfer_wire_rail){
		.family = 6, .prefix = 64, .addr = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 },
	};
	msg_seed("welcome-rails", m, true, body);
	msg_bad("welcome-rails-over", m, 56, PXFER_WIRE_RAILS_MAX + 1, 1);
	msg_bad("welcome-rail-family", m, 57, 5, 1);
	msg_bad("welcome-rail-prefix", m, 58, 33, 1);
	msg_bad("welcome-rail-v4-tail", m, 59 + 15, 1, 1);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_DATA_HELLO;
	m->u.data_hello.session = 42;
	msg_seed("data_hello", m, true, body);
	m->u.data_hello.worker = PXFER_WORKERS_MAX - 1;
	msg_seed("data_hello-last", m, true, body);
	msg_bad("data_hello-worker-over", m, 8, PXFER_WORKERS_MAX, 2);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_DATA_WELCOME;
	msg_seed("data_welcome-tcp", m, false, body);
	m->u.data_welcome.blob_len = PXFER_RING_DESC_LEN;
	pxfer_ring_desc_encode(&rd, m->u.data_welcome.blob);
	msg_seed("data_welcome-rdma", m, false, body);
	m->u.data_welcome.worker = PXFER_WORKERS_MAX - 1;
	m->u.data_welcome.blob_len = PXFER_BLOB_MAX;
	memset(m->u.data_welcome.blob, 0xbb, PXFER_BLOB_MAX);
	msg_seed("data_welcome-max", m, true, body);
	msg_bad("data_welcome-worker-over", m, 0, PXFER_WORKERS_MAX, 2);
	body_grow(body, 2 + PXFER_MAC_LEN, 1);
	msg_write("data_welcome-blob-over", body);
}

static void msg_error(struct pxfer_msg *m, struct body *body, uint16_t type,
		      const char *name)
{
	char var[64];

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->u.error.code = EACCES;
	msg_seed(name, m, false, body);
	m->u.error.text_len = PXFER_TEXT_MAX;
	memset(m->u.error.text, 't', PXFER_TEXT_MAX);
	snprintf(var, sizeof(var), "%s-max", name);
	msg_seed(var, m, true, body);
	body_grow(body, 4, 1);
	snprintf(var, sizeof(var), "%s-text-over", name);
	msg_write(var, body);
}

/* FILE body offsets */
#define FILE_FLAGS	9
#define FILE_MODE	10
#define FILE_NSEC	30
#define FILE_DIGEST	34
#define FILE_PATH	50
/* range_off in the seeds with the path "dir/a.bin" and no target */
#define FILE_RANGE	(FILE_PATH + 2 + 9 + 2)

static void msgs_file(struct pxfer_msg *m, struct body *body)
{
	static uint8_t frame[FRAME_MAX];
	struct pxfer_file *f = &m->u.file;
	struct pxfer_hdr h;

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_FILE;
	*f = (struct pxfer_file){
		.id = 1, .type = PXFER_FT_REG, .mode = 0644, .size = 1ull << 40,
		.mtime_sec = 1700000000, .mtime_nsec = 123456789,
		.path_len = 9, .path = "dir/a.bin",
	};
	msg_seed("file-reg", m, false, body);
	msg_bad("file-type-0", m, 8, 0, 1);
	msg_bad("file-type-over", m, 8, PXFER_FT_SYMLINK + 1, 1);
	msg_bad("file-dir-with-size", m, 8, PXFER_FT_DIR, 1);
	msg_bad("file-symlink-without-target", m, 8, PXFER_FT_SYMLINK, 1);
	msg_bad("file-mode-over", m, FILE_MODE, 010000, 4);
	msg_bad("file-nsec-over", m, FILE_NSEC, 1000000000, 4);
	msg_bad("file-path-nul", m, FILE_PATH + 2 + 3, 0, 1);
	msg_bad("file-flags-unknown", m, FILE_FLAGS, PXFER_FILE_FLAGS + 1, 1);
	msg_bad("file-digest-without-checksum", m, FILE_DIGEST, 1, 1);
	f->flags = PXFER_FILE_RESUME | PXFER_FILE_SKIP;
	msg_seed("file-reg-resume", m, false, body);
	msg_bad("file-trust-without-resume", m, FILE_FLAGS,
		PXFER_FILE_TRUST | PXFER_FILE_SKIP, 1);
	f->flags = PXFER_FILE_RESUME | PXFER_FILE_TRUST;
	msg_seed("file-reg-trust", m, false, body);
	f->flags = PXFER_FILE_RESUME | PXFER_FILE_SKIP;
	msg_bad("file-digest-with-resume", m,
		FILE_DIGEST + PXFER_DIGEST_LEN - 1, 0x80, 1);
	f->flags = PXFER_FILE_FLAGS & ~(PXFER_FILE_SUM_FOLLOWS | PXFER_FILE_RANGE);
	memset(f->digest, 0xdd, PXFER_DIGEST_LEN);
	msg_seed("file-reg-checksum", m, false, body);
	msg_bad("file-digest-without-flags", m, FILE_FLAGS, 0, 1);
	msg_bad("file-sum-follows-with-digest", m, FILE_FLAGS,
		PXFER_FILE_FLAGS & ~PXFER_FILE_RANGE, 1);
	f->flags = PXFER_FILE_FLAGS & ~PXFER_FILE_RANGE;
	memset(f->digest, 0, PXFER_DIGEST_LEN);
	msg_seed("file-reg-sum-follows", m, false, body);
	msg_bad("file-sum-follows-without-checksum", m, FILE_FLAGS,
		PXFER_FILE_SUM_FOLLOWS, 1);
	/* a range: its fields after the (empty) target */
	f->flags = PXFER_FILE_RESUME | PXFER_FILE_RANGE;
	f->range_off = 1ull << 39;
	f->range_len = 1ull << 39;
	memset(f->job, 0x5a, PXFER_JOB_LEN);
	msg_seed("file-reg-range", m, false, body);
	msg_bad("file-range-without-resume", m, FILE_FLAGS, PXFER_FILE_RANGE, 1);
	msg_bad("file-range-with-checksum", m, FILE_FLAGS,
		PXFER_FILE_RANGE | PXFER_FILE_RESUME | PXFER_FILE_CHECKSUM, 1);
	msg_bad("file-range-len-0", m, FILE_RANGE + 8, 0, 8);
	msg_bad("file-range-past-size", m, FILE_RANGE, 1ull << 40, 8);
	msg_bad("file-range-wraps", m, FILE_RANGE, UINT64_MAX, 8);
	f->flags = PXFER_FILE_RESUME | PXFER_FILE_SKIP | PXFER_FILE_TRUST |
		   PXFER_FILE_RANGE;
	f->range_off = 0;
	f->range_len = f->size;
	msg_seed("file-reg-range-whole", m, false, body);
	body->n -= PXFER_JOB_LEN;
	msg_write("file-range-no-job", body);
	f->range_len = 0;
	memset(f->job, 0, PXFER_JOB_LEN);
	*f = (struct pxfer_file){
		.id = UINT64_MAX, .type = PXFER_FT_REG, .mode = 07777,
		.size = UINT64_MAX, .mtime_sec = INT64_MIN,
		.mtime_nsec = 999999999, .path_len = 1, .path = "a",
	};
	msg_seed("file-reg-extremes", m, false, body);
	body_shrink(body, FILE_PATH, 1);
	msg_write("file-path-empty", body);
	*f = (struct pxfer_file){
		.id = 2, .type = PXFER_FT_DIR, .mode = 0755, .mtime_sec = -1,
		.path_len = 3, .path = "dir",
	};
	msg_seed("file-dir", m, false, body);
	msg_bad("file-flags-dir", m, FILE_FLAGS, PXFER_FILE_RESUME, 1);
	*f = (struct pxfer_file){
		.id = 3, .type = PXFER_FT_SYMLINK, .mode = 0777,
		.path_len = 8, .path = "dir/link", .target_len = 5,
		.target = "a.bin",
	};
	msg_seed("file-symlink", m, false, body);
	msg_bad("file-reg-with-target", m, 8, PXFER_FT_REG, 1);
	msg_bad("file-flags-symlink", m, FILE_FLAGS, PXFER_FILE_SKIP, 1);

	f->path_len = PXFER_PATH_MAX;
	make_path(f->path, PXFER_PATH_MAX, PXFER_NAME_MAX);
	f->target_len = PXFER_PATH_MAX;
	make_path(f->target, PXFER_PATH_MAX, 2);
	msg_seed("file-max", m, true, body);
	body_grow(body, FILE_PATH + 2 + PXFER_PATH_MAX, 1);
	msg_write("file-target-over", body);
	if (msg_body("file-max", m, body, frame, &h))
		return;
	body_grow(body, FILE_PATH, 1);
	msg_write("file-path-over", body);
}

static void msg_status(struct pxfer_msg *m, struct body *body, uint16_t type,
		       uint32_t code, const char *name)
{
	char var[64];

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->u.status.id = 7;
	m->u.status.code = code;
	msg_seed(name, m, false, body);
	/* FILE_ERR must have an error code */
	if (type == PXFER_MSG_FILE_ERR) {
		snprintf(var, sizeof(var), "%s-code", name);
		msg_bad(var, m, 8, !code, 4);
	}
	m->u.status.text_len = PXFER_TEXT_MAX;
	memset(m->u.status.text, 's', PXFER_TEXT_MAX);
	snprintf(var, sizeof(var), "%s-max", name);
	msg_seed(var, m, true, body);
	body_grow(body, 12, 1);
	snprintf(var, sizeof(var), "%s-text-over", name);
	msg_write(var, body);
}

/* FILE_OK body offsets, and a run's */
#define OK_STATE	8
#define OK_HELD		9
#define OK_DIGEST	17
#define OK_NRUN		33
#define OK_RUN(i)	(35 + 20 * (i))
#define RUN_OFF		0
#define RUN_LEN		8
#define RUN_UNIT	16

static void msgs_file_ok(struct pxfer_msg *m, struct body *body)
{
	static const char *const states[] = {
		[PXFER_HAVE_NONE] = "file_ok-none",
		[PXFER_HAVE_PART] = NULL,
		[PXFER_HAVE_SAME] = "file_ok-same",
		[PXFER_HAVE_STALE] = "file_ok-stale",
		[PXFER_HAVE_BAD] = "file_ok-bad",
	};
	struct pxfer_file_ok *k = &m->u.ok;
	unsigned int i;

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_FILE_OK;
	k->id = 7;
	for (i = 0; i <= PXFER_HAVE_MAX; i++) {
		if (!states[i])
			continue;
		k->state = i;
		msg_seed(states[i], m, false, body);
	}
	k->state = PXFER_HAVE_NONE;
	msg_bad("file_ok-state-over", m, OK_STATE, PXFER_HAVE_MAX + 1, 1);
	msg_bad("file_ok-none-held", m, OK_HELD, 1, 8);
	msg_bad("file_ok-none-digest", m, OK_DIGEST, 1, 1);
	msg_bad("file_ok-part-no-runs", m, OK_STATE, PXFER_HAVE_PART, 1);

	/* a partial of three runs, the second's last record short */
	k->state = PXFER_HAVE_PART;
	k->nrun = 3;
	k->run[0] = (struct pxfer_held_run){
		.off = 0, .len = 1u << 20, .unit = 1u << 20 };
	k->run[1] = (struct pxfer_held_run){
		.off = 4u << 20, .len = (2u << 20) + 1, .unit = 1u << 20 };
	k->run[2] = (struct pxfer_held_run){
		.off = 8u << 20, .len = 4096, .unit = 4096 };
	k->held = (3u << 20) + 1 + 4096;
	memset(k->digest, 0x5d, PXFER_DIGEST_LEN);
	msg_seed("file_ok-part", m, false, body);
	msg_bad("file_ok-stale-with-runs", m, OK_STATE, PXFER_HAVE_STALE, 1);
	msg_bad("file_ok-held-over", m, OK_HELD, k->held + 1, 8);
	msg_bad("file_ok-runs-unsorted", m, OK_RUN(2) + RUN_OFF, 0, 8);
	msg_bad("file_ok-runs-overlap", m, OK_RUN(2) + RUN_OFF, 6u << 20, 8);
	msg_bad("file_ok-len-0", m, OK_RUN(0) + RUN_LEN, 0, 8);
	msg_bad("file_ok-unit-0", m, OK_RUN(1) + RUN_UNIT, 0, 4);
	msg_bad("file_ok-unit-over", m, OK_RUN(1) + RUN_UNIT,
		PXFER_CHUNK_MAX + 1, 4);
	msg_bad("file_ok-offset-wraps", m, OK_RUN(2) + RUN_OFF,
		UINT64_MAX - 4095, 8);

	/* the largest: PXFER_RUNS_MAX runs, the last ending at 2^64 - 1 */
	k->id = UINT64_MAX;
	k->nrun = PXFER_RUNS_MAX;
	k->held = 0;
	for (i = 0; i < PXFER_RUNS_MAX; i++) {
		k->run[i] = (struct pxfer_held_run){
			.off = (uint64_t)i << 32, .len = 1 + i,
			.unit = i % 2 ? PXFER_CHUNK_MAX : 1,
		};
		k->held += 1 + i;
	}
	k->run[PXFER_RUNS_MAX - 1].off = UINT64_MAX - PXFER_RUNS_MAX;
	msg_seed("file_ok-part-max", m, true, body);
	body_grow(body, OK_NRUN, 20);
	msg_write("file_ok-nrun-over", body);
	/* a count the decoder must refuse before it reads a run */
	msg_bad("file_ok-nrun-0xffff", m, OK_NRUN, 0xffff, 2);
}

static void msgs_session(struct pxfer_msg *m, struct body *body)
{
	unsigned int i;

	msgs_file_ok(m, body);
	msg_status(m, body, PXFER_MSG_FILE_ERR, ENOSPC, "file_err");
	msg_status(m, body, PXFER_MSG_FILE_DONE, 0, "file_done");
	msg_status(m, body, PXFER_MSG_FILE_DONE, EIO, "file_done-err");

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_FILE_END;
	m->u.end = (struct pxfer_file_end){ .id = 7, .bytes = 1ull << 33 };
	msg_seed("file_end", m, true, body);
	m->u.end.code = EIO;
	msg_seed("file_end-err", m, true, body);
	/* --verify: the whole file's digest; a source that changed */
	memset(m->u.end.digest, 0xd1, PXFER_DIGEST_LEN);
	m->u.end.code = 0;
	msg_seed("file_end-digest", m, true, body);
	m->u.end.code = PXFER_CODE_CHANGED;
	msg_seed("file_end-changed", m, true, body);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_CREDIT;
	m->u.credit.count = 1;
	msg_seed("credit", m, false, body);
	body_shrink(body, 2, 2);
	msg_write("credit-count-0", body);
	msg_bad("credit-worker-over", m, 0, PXFER_WORKERS_MAX, 2);
	msg_bad("credit-slot-over", m, 4, PXFER_SLOTS_MAX, 2);
	m->u.credit.worker = PXFER_WORKERS_MAX - 1;
	m->u.credit.count = PXFER_CREDIT_MAX;
	for (i = 0; i < PXFER_CREDIT_MAX; i++)
		m->u.credit.slots[i] = PXFER_SLOTS_MAX - 1 - i;
	msg_seed("credit-max", m, true, body);
	body_grow(body, 2, 2);
	msg_write("credit-count-over", body);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_FIN;
	m->u.fin = (struct pxfer_fin){ .files = 1000, .bytes = 1ull << 40 };
	msg_seed("fin", m, true, body);
	msg_bad("fin-code", m, 16, EIO, 4);
	m->type = PXFER_MSG_ACK;
	msg_seed("ack", m, true, body);
	m->u.fin.code = EIO;
	msg_seed("ack-err", m, true, body);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_PING;
	msg_seed("ping", m, true, body);
	m->u.ping.checked = 44ull << 30;
	msg_seed("ping-checked", m, true, body);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_DATA_LOST;
	m->u.lost = (struct pxfer_data_lost){ .worker = 3, .code = ECONNRESET, .seq = 17 };
	msg_seed("data_lost", m, true, body);
	msg_bad("data_lost-worker-over", m, 0, PXFER_WORKERS_MAX, 2);
	msg_bad("data_lost-code-0", m, 2, 0, 4);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_DATA_SENT;
	m->u.sent = (struct pxfer_data_sent){ .worker = 3, .chunks = 12345 };
	msg_seed("data_sent", m, true, body);
	msg_bad("data_sent-worker-over", m, 0, PXFER_WORKERS_MAX, 2);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_FILE_SUM;
	m->u.sum.id = 9;
	memset(m->u.sum.digest, 0x5a, PXFER_DIGEST_LEN);
	msg_seed("file_sum", m, true, body);
	msg_bad("file_sum-code-and-digest", m, 8, EIO, 4);
}

/* CHAIN body offsets */
#define CHAIN_POS	16
#define CHAIN_INDEX	18
#define CHAIN_COUNT	20
#define CHAIN_PORT	22
#define CHAIN_HOST	24	/* the host's length, then its bytes */

static void msgs_chain(struct pxfer_msg *m, struct body *body)
{
	struct pxfer_chain_hop *hop = &m->u.hop;
	size_t i;

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_CHAIN;
	for (i = 0; i < PXFER_JOB_LEN; i++)
		hop->chain[i] = (uint8_t)(0xc0 + i);
	hop->pos = 3;
	hop->index = 1;
	hop->count = 4;
	hop->port = 7000;
	hop->host_len = (uint16_t)strlen("node-2.example");
	memcpy(hop->host, "node-2.example", hop->host_len + 1);
	hop->dest_len = (uint16_t)strlen("backup/today");
	memcpy(hop->dest, "backup/today", hop->dest_len + 1);
	msg_seed("chain", m, false, body);
	msg_bad("chain-pos-1", m, CHAIN_POS, 1, 2);
	msg_bad("chain-pos-over", m, CHAIN_POS, PXFER_CHAIN_MAX + 1, 2);
	msg_bad("chain-index-count", m, CHAIN_INDEX, hop->count, 2);
	msg_bad("chain-count-0", m, CHAIN_COUNT, 0, 2);
	msg_bad("chain-count-over", m, CHAIN_COUNT, PXFER_CHAIN_MAX, 2);
	msg_bad("chain-port-0", m, CHAIN_PORT, 0, 2);
	msg_bad("chain-host-space", m, CHAIN_HOST + 2 + 4, ' ', 1);
	msg_bad("chain-host-slash", m, CHAIN_HOST + 2 + 4, '/', 1);
	msg_bad("chain-host-nul", m, CHAIN_HOST + 2 + 4, 0, 1);
	/* the chain's identity all zero: its first half is already */
	memset(hop->chain + 8, 0, PXFER_JOB_LEN - 8);
	msg_bad("chain-zero", m, 0, 0, 8);

	/* an IPv6 address with its zone, to the receiver's top directory */
	memset(hop->chain, 0xff, PXFER_JOB_LEN);
	hop->pos = 2;
	hop->index = 0;
	hop->count = 1;
	hop->port = 1;
	hop->host_len = (uint16_t)strlen("[fe80::1%eth0]");
	memcpy(hop->host, "[fe80::1%eth0]", hop->host_len + 1);
	hop->dest_len = 0;
	hop->dest[0] = '\0';
	msg_seed("chain-ipv6-top", m, false, body);

	/* a host of one character, and of none */
	hop->host_len = 1;
	memcpy(hop->host, "h", 2);
	msg_seed("chain-host-1", m, false, body);
	body_shrink(body, CHAIN_HOST, 1);
	msg_write("chain-host-empty", body);

	/* every field at its largest, and each string one byte over */
	for (i = 0; i < PXFER_JOB_LEN; i++)
		hop->chain[i] = (uint8_t)(i + 1);
	hop->pos = PXFER_CHAIN_MAX;
	hop->index = PXFER_CHAIN_MAX - 2;
	hop->count = PXFER_CHAIN_MAX - 1;
	hop->port = UINT16_MAX;
	for (i = 0; i < PXFER_HOST_MAX; i++)
		hop->host[i] = "ab.-_:[]%09"[i % 11];
	hop->host[PXFER_HOST_MAX] = '\0';
	hop->host_len = PXFER_HOST_MAX;
	make_path(hop->dest, PXFER_PATH_MAX, 200);
	hop->dest_len = PXFER_PATH_MAX;
	msg_seed("chain-max", m, true, body);
	body_grow(body, CHAIN_HOST, 1);
	msg_write("chain-host-over", body);
	body_shrink(body, CHAIN_HOST, 1);
	body_grow(body, CHAIN_HOST + 2 + PXFER_HOST_MAX, 1);
	msg_write("chain-dest-over", body);

	memset(m, 0, sizeof(*m));
	m->type = PXFER_MSG_CHAIN_REPORT;
	m->u.report = (struct pxfer_chain_report){
		.pos = 5, .state = PXFER_HOP_FAILED, .code = 1,
		.files = 1234, .bytes = 5ull << 32,
	};
	msg_seed("chain_report-failed", m, true, body);
	msg_bad("chain_report-failed-code-0", m, 3, 0, 1);
	msg_bad("chain_report-pos-1", m, 0, 1, 2);
	msg_bad("chain_report-pos-over", m, 0, PXFER_CHAIN_MAX + 1, 2);
	msg_bad("chain_report-state-over", m, 2, PXFER_HOP_STATE_MAX + 1, 1);
	m->u.report = (struct pxfer_chain_report){
		.pos = PXFER_CHAIN_MAX, .state = PXFER_HOP_OK, .code = 0,
		.files = UINT64_MAX, .bytes = UINT64_MAX,
	};
	msg_seed("chain_report-ok", m, true, body);
	msg_bad("chain_report-ok-code-3", m, 3, 3, 1);
	m->u.report = (struct pxfer_chain_report){
		.pos = 2, .state = PXFER_HOP_UNREACHED, .code = 255,
		.files = 1, .bytes = 1,
	};
	msg_seed("chain_report-unreached", m, true, body);
}

/* Types the control decoders must refuse whatever the body. */
static void msgs_refused(struct body *body)
{
	struct pxfer_chunk c = {
		.nseg = 1, .len = 4096, .seg = { { .file = 1, .len = 4096 } },
	};
	char name[64];
	unsigned int t;
	ssize_t n;

	/* no body at all: the first field is already missing */
	for (t = 1; t <= PXFER_MSG_TYPE_MAX; t++) {
		snprintf(name, sizeof(name), "empty-%s", pxfer_msg_name(t));
		body->b[0] = t;
		seed("msg", name, body->b, 1);
	}
	body->b[0] = 0;
	seed("msg", "type-0", body->b, 1);
	body->b[0] = PXFER_MSG_TYPE_MAX + 1;
	seed("msg", "type-past-max", body->b, 1);
	body->b[0] = PXFER_MSG_CHUNK;
	n = pxfer_chunk_encode(body->b + 1, BODY_MAX, &c);
	if (n > 0)
		seed("msg", "chunk", body->b, 1 + n);
}

static void make_msg_hdr(void)
{
	struct pxfer_msg *m = calloc(1, sizeof(*m));
	struct body *body = calloc(1, sizeof(*body));
	uint8_t h[PXFER_HDR_LEN];

	if (!m || !body) {
		fprintf(stderr, "error: out of memory\n");
		exit(1);
	}
	msgs_handshake(m, body);
	msg_error(m, body, PXFER_MSG_REFUSE, "refuse");
	msg_error(m, body, PXFER_MSG_ABORT, "abort");
	msgs_file(m, body);
	msgs_session(m, body);
	msgs_chain(m, body);
	msgs_refused(body);
	free(body);
	free(m);

	pxfer_hdr_encode(h, PXFER_MSG_CHUNK, PXFER_CHUNK_DESC_MAX +
			 PXFER_CHUNK_MAX);
	seed("hdr", "chunk-max", h, sizeof(h));
	pxfer_hdr_encode(h, PXFER_MSG_CHUNK, PXFER_CHUNK_DESC_MAX +
			 PXFER_CHUNK_MAX + 1);
	seed("hdr", "chunk-max-over", h, sizeof(h));
	pxfer_hdr_encode(h, PXFER_MSG_FIN, 20);
	seed("hdr", "short", h, sizeof(h) - 1);
	h[3] = 1;
	seed("hdr", "flags", h, sizeof(h));
	pxfer_hdr_encode(h, 0, 0);
	seed("hdr", "type-0", h, sizeof(h));
	pxfer_hdr_encode(h, PXFER_MSG_TYPE_MAX + 1, 0);
	seed("hdr", "type-past-max", h, sizeof(h));
}

/* ------------------------------------------------------------------------ */
/* chunk: a descriptor, sometimes with payload after it */

static void chunk_seed(const char *name, const struct pxfer_chunk *c)
{
	uint8_t buf[PXFER_CHUNK_DESC_MAX + 16];
	ssize_t n = pxfer_chunk_encode(buf, sizeof(buf), c);

	if (n < 0) {
		fprintf(stderr, "error: seed '%s' does not encode\n", name);
		failed = 1;
		return;
	}
	seed("chunk", name, buf, n);
}

/* A valid descriptor with one field overwritten at @off (@n bytes). */
static void chunk_bad(const char *name, const struct pxfer_chunk *c,
		      size_t off, uint64_t v, unsigned int n)
{
	uint8_t buf[PXFER_CHUNK_DESC_MAX];
	ssize_t len = pxfer_chunk_encode(buf, sizeof(buf), c);

	if (len < 0 || off + n > (size_t)len) {
		fprintf(stderr, "error: seed '%s' does not encode\n", name);
		failed = 1;
		return;
	}
	pxfer_put_be(buf + off, v, n);
	seed("chunk", name, buf, len);
}

static void make_chunk(void)
{
	struct pxfer_chunk c = {
		.slot = 3, .nseg = 1, .len = 4096,
		.tag = "0123456789abcde", .seq = 9,
		.seg = { { .file = 1, .offset = 0, .len = 4096 } },
	};
	uint8_t buf[PXFER_CHUNK_DESC_MAX + 16];
	unsigned int i;
	ssize_t n;

	chunk_seed("one", &c);
	n = pxfer_chunk_encode(buf, sizeof(buf), &c);
	if (n > 0) {
		memset(buf + n, 'p', 16);
		seed("chunk", "one-with-payload", buf, n + 16);
		seed("chunk", "one-short", buf, n - 1);
		seed("chunk", "fixed-short", buf, pxfer_chunk_desc_len(0) - 1);
	}
	chunk_bad("nseg-0", &c, 2, 0, 2);
	chunk_bad("nseg-over", &c, 2, PXFER_SEG_MAX + 1, 2);
	chunk_bad("len-0", &c, 4, 0, 4);
	chunk_bad("len-mismatch", &c, 4, 4097, 4);
	chunk_bad("seg-len-0", &c, PXFER_CHUNK_DESC_FIXED + 16, 0, 4);
	chunk_bad("offset-wraps", &c, PXFER_CHUNK_DESC_FIXED + 8,
		  UINT64_MAX - 4095, 8);

	c.seg[0].offset = UINT64_MAX - 4096;
	chunk_seed("offset-last", &c);

	c.slot = PXFER_SLOTS_MAX - 1;
	c.len = PXFER_CHUNK_MAX;
	c.seg[0] = (struct pxfer_seg){ .file = 2, .len = PXFER_CHUNK_MAX };
	chunk_seed("len-max", &c);
	chunk_bad("len-over", &c, 4, PXFER_CHUNK_MAX + 1, 4);

	/* the most segments, some of a byte, summing to the largest len */
	c.nseg = PXFER_SEG_MAX;
	for (i = 0; i < PXFER_SEG_MAX; i++)
		c.seg[i] = (struct pxfer_seg){
			.file = 100 + i, .offset = (uint64_t)i << 32, .len = 1,
		};
	c.seg[0].len = PXFER_CHUNK_MAX - (PXFER_SEG_MAX - 1);
	chunk_seed("segs-max", &c);
}

/* ------------------------------------------------------------------------ */
/* path: the bytes of a wire path */

static void path_seed(const char *name, const char *p)
{
	seed("path", name, p, strlen(p));
}

static void make_path_seeds(void)
{
	static char buf[PXFER_PATH_MAX + 2];

	path_seed("one", "a");
	path_seed("nested", "dir/sub/file.txt");
	path_seed("names-of-two", "ab/cd");
	path_seed("dots", "...");
	path_seed("dot-prefix", ".a/..b/c..");
	path_seed("dot", ".");
	path_seed("dotdot", "..");
	path_seed("dot-inside", "a/./b");
	path_seed("dotdot-inside", "a/../b");
	path_seed("dotdot-last", "a/..");
	path_seed("absolute", "/etc/passwd");
	path_seed("empty-component", "a//b");
	path_seed("trailing-slash", "a/");
	path_seed("slash", "/");
	seed("path", "empty", "", 0);
	seed("path", "nul", "a\0b", 3);
	seed("path", "nul-last", "ab\0", 3);

	make_path(buf, PXFER_NAME_MAX, PXFER_NAME_MAX);
	path_seed("name-max", buf);
	make_path(buf, PXFER_NAME_MAX + 1, PXFER_NAME_MAX + 1);
	path_seed("name-over", buf);
	make_path(buf, PXFER_PATH_MAX, PXFER_NAME_MAX);
	path_seed("path-max", buf);
	make_path(buf, PXFER_PATH_MAX + 1, PXFER_NAME_MAX);
	path_seed("path-over", buf);
	/* too long and a NUL inside: the NUL is what the check sees first */
	buf[1] = '\0';
	seed("path", "path-over-nul", buf, PXFER_PATH_MAX + 1);
}

/* ------------------------------------------------------------------------ */
/* escape: flags (1 quote, 2 room enough), u16 buffer size, then the text */

static void escape_seed(const char *name, uint8_t flags, uint16_t len,
			const char *text, size_t n)
{
	uint8_t buf[3 + 64];

	buf[0] = flags;
	pxfer_put_be(buf + 1, len - 1, 2);
	memcpy(buf + 3, text, n);
	seed("escape", name, buf, 3 + n);
}

#define ESC(name, flags, len, text) \
	escape_seed(name, flags, len, text, sizeof(text) - 1)

static void make_escape(void)
{
	ESC("plain", 2, 1, "dir/file.txt");
	ESC("quoted", 3, 1, "it's a name");
	ESC("terminal", 3, 1, "\x1b]0;title\x07\x1b[2J\rforged\nline\t\\");
	ESC("nul-del", 2, 1, "a\0b\x7f");
	ESC("utf8", 2, 1, "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80");
	ESC("utf8-bad", 2, 1, "\xc3 \xa9 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xff");
	ESC("utf8-truncated", 2, 1, "ab\xe2\x9c");
	ESC("layout", 2, 1, "\xc2\x9b \xe2\x80\xa8 \xe2\x80\xae \xe2\x81\xa6 \xd8\x9c");
	ESC("cut", 1, 10, "abcdefghijklmnop");
	ESC("cut-escape", 0, 8, "ab\x1b" "cdef");
	ESC("cut-utf8", 0, 9, "abc\xe2\x9c\x93xyz");
	ESC("cut-tiny", 1, 5, "abcdef");
	ESC("cut-dots", 0, 4, "abcdef");
	ESC("len-1", 0, 1, "a");
	ESC("empty", 1, 2, "");
}

/* ------------------------------------------------------------------------ */
/* ring_desc: u16 slots the WELCOME announced, then the blob */

static void ring_seed(const char *name, uint16_t slots_max,
		      const struct pxfer_ring_desc *d, size_t len)
{
	uint8_t buf[2 + PXFER_RING_DESC_LEN + 1] = { 0 };

	pxfer_put_be(buf, slots_max, 2);
	pxfer_ring_desc_encode(d, buf + 2);
	seed("ring_desc", name, buf, 2 + len);
}

static void make_ring_desc(void)
{
	struct pxfer_ring_desc d = {
		.addr = 0x7f0000001000ull, .rkey = 0xabcd,
		.stride = (4u << 20) + 4096, .hdr = 4096, .slots = 8,
	};

	ring_seed("typical", 8, &d, PXFER_RING_DESC_LEN);
	ring_seed("no-blob", 8, &d, 0);
	seed("ring_desc", "half-count", "\x08", 1);
	ring_seed("short", 8, &d, PXFER_RING_DESC_LEN - 1);
	ring_seed("long", 8, &d, PXFER_RING_DESC_LEN + 1);
	ring_seed("slots-over", 7, &d, PXFER_RING_DESC_LEN);
	d.hdr = PXFER_CHUNK_DESC_MAX;
	d.stride = d.hdr + 1;
	ring_seed("tightest", 8, &d, PXFER_RING_DESC_LEN);
	d.stride = d.hdr;
	ring_seed("no-payload-room", 8, &d, PXFER_RING_DESC_LEN);
	d.hdr = PXFER_CHUNK_DESC_MAX - 1;
	d.stride = UINT32_MAX;
	ring_seed("hdr-short", 8, &d, PXFER_RING_DESC_LEN);
	d = (struct pxfer_ring_desc){
		.addr = UINT64_MAX, .rkey = UINT32_MAX, .stride = UINT32_MAX,
		.hdr = UINT32_MAX - 1, .slots = UINT16_MAX,
	};
	ring_seed("extremes", UINT16_MAX, &d, PXFER_RING_DESC_LEN);
	d.slots = 0;
	ring_seed("slots-0", UINT16_MAX, &d, PXFER_RING_DESC_LEN);
}

/*
 * The sealed control channel: genuine messages sealed with FUZZ_KEY as a
 * raw stream (whole, cut short, a bit flipped, two swapped), and as
 * records for the target to seal (one tampered with, or none).
 */
static void make_sealed(void)
{
	static const uint8_t key[32] = FUZZ_KEY;
	static uint8_t raw[1 + 4 * (FRAME_MAX + PXFER_TAG_LEN)], rec[2 + 4 * FRAME_MAX];
	static struct pxfer_msg m[4];
	uint8_t frame[FRAME_MAX], nonce[PXFER_AEAD_NONCE_LEN];
	size_t rlen = 1, clen = 2, ends[4];
	struct pxfer_aead a;

	m[0].type = PXFER_MSG_FILE;
	m[0].u.file = (struct pxfer_file){ .id = 1, .type = PXFER_FT_REG,
					   .flags = PXFER_FILE_FLAGS &
						    ~(PXFER_FILE_SUM_FOLLOWS |
						      PXFER_FILE_RANGE),
					   .mode = 0644, .size = 10,
					   .digest = { 0xd0, 0x01 },
					   .path_len = 5, .path = "a/b.c" };
	m[1].type = PXFER_MSG_CREDIT;
	m[1].u.credit = (struct pxfer_credit){ .worker = 0, .count = 2,
					       .slots = { 3, 4 } };
	m[2].type = PXFER_MSG_PING;
	m[2].u.ping.checked = 1ull << 20;
	m[3].type = PXFER_MSG_FIN;
	m[3].u.fin = (struct pxfer_fin){ .files = 1, .bytes = 10 };
	if (pxfer_aead_init(&a, PXFER_CIPHER_AES_GCM, key, 1)) {
		failed = 1;
		return;
	}
	raw[0] = 0;
	rec[0] = 1;
	rec[1] = 0xff;
	for (int i = 0; i < 4; i++) {
		ssize_t n = pxfer_msg_encode(frame, sizeof(frame), &m[i]);
		size_t blen = n - PXFER_HDR_LEN;

		rec[clen] = m[i].type;
		pxfer_put_be(rec + clen + 1, blen, 2);
		memcpy(rec + clen + 3, frame + PXFER_HDR_LEN, blen);
		clen += 3 + blen;
		pxfer_hdr_encode(frame, m[i].type, blen + PXFER_TAG_LEN);
		pxfer_nonce_make(nonce, 0, i);
		pxfer_aead_seal(&a, nonce, frame, PXFER_HDR_LEN, NULL, 0,
				frame + PXFER_HDR_LEN, blen, frame + n);
		memcpy(raw + rlen, frame, n + PXFER_TAG_LEN);
		rlen += n + PXFER_TAG_LEN;
		ends[i] = rlen;
	}
	pxfer_aead_release(&a);
	seed("sealed", "raw-four", raw, rlen);
	seed("sealed", "raw-cut", raw, rlen - 5);
	seed("sealed", "rec-four", rec, clen);
	rec[1] = 2;
	seed("sealed", "rec-tamper-2", rec, clen);
	raw[ends[0] + 9] ^= 0x40;
	seed("sealed", "raw-flipped", raw, rlen);
	raw[ends[0] + 9] ^= 0x40;
	/* frames 1 and 2 swapped */
	memcpy(frame, raw + ends[0], ends[1] - ends[0]);
	memmove(raw + ends[0], raw + ends[1], ends[2] - ends[1]);
	memcpy(raw + ends[0] + ends[2] - ends[1], frame, ends[1] - ends[0]);
	seed("sealed", "raw-swapped", raw, rlen);
}

/* ------------------------------------------------------------------------ */
/*
 * journal: a mode byte (1: fix the header's check, 2: the records', 4: the
 * header names the file), the record left alone, then a journal made with
 * the encoders for the target's fixed file (dir/big.bin, 1 MiB)
 */

#define JNL_RECS_MAX	300

struct jnl {
	uint8_t b[2 + PXFER_JOURNAL_HDR_LEN(32) + JNL_RECS_MAX * PXFER_JOURNAL_REC_LEN];
	size_t n;
};

static const struct pxfer_partial_id jnl_file = {
	.path = "dir/big.bin", .path_len = 11, .size = 1u << 20,
	.mtime_sec = 1700000000, .mtime_nsec = 123456789,
};

#define JNL_NONCE	0x0123456789abcdefull

static void jnl_begin(struct jnl *j, uint8_t mode, uint8_t tamper,
		      const struct pxfer_partial_id *id)
{
	j->b[0] = mode;
	j->b[1] = tamper;
	j->n = 2 + pxfer_partial_header_encode(j->b + 2, id, JNL_NONCE);
}

static void jnl_rec(struct jnl *j, uint64_t off, uint32_t len)
{
	struct pxfer_partial_rec r = {
		.off = off, .len = len, .h = { .lo = off * 3 + 1, .hi = ~off },
	};

	pxfer_partial_record_encode(j->b + j->n, &r, JNL_NONCE);
	j->n += PXFER_JOURNAL_REC_LEN;
}

/* runs of 64 KiB records with a gap, one ended by a shorter record */
static void jnl_runs(struct jnl *j)
{
	for (unsigned int i = 0; i < 4; i++)
		jnl_rec(j, i * 65536ull, 65536);
	jnl_rec(j, 4 * 65536ull, 1000);
	jnl_rec(j, 8 * 65536ull, 65536);
	jnl_rec(j, 9 * 65536ull, 131072);
}

static void make_journal(void)
{
	static struct jnl j, fix;
	struct pxfer_partial_id id = jnl_file;
	size_t hlen = PXFER_JOURNAL_HDR_LEN(jnl_file.path_len);

	seed("journal", "empty", "\0\xff", 2);
	jnl_begin(&j, 0, 0xff, &id);
	seed("journal", "header", j.b, j.n);
	seed("journal", "header-short", j.b, j.n - 1);
	jnl_runs(&j);
	seed("journal", "runs", j.b, j.n);
	seed("journal", "torn", j.b, j.n - 5);
	/* every check wrong, and made to fit by the target but record 2's */
	memcpy(fix.b, j.b, j.n);
	fix.b[0] = 3;
	fix.b[1] = 2;
	memset(fix.b + 2 + hlen - 8, 0, 8);
	for (size_t off = 2 + hlen; off < j.n; off += PXFER_JOURNAL_REC_LEN)
		memset(fix.b + off + 28, 0, 4);
	seed("journal", "runs-fixed-tamper", fix.b, j.n);
	j.b[2 + hlen + 2 * PXFER_JOURNAL_REC_LEN + 9] ^= 0x10;
	seed("journal", "record-flipped", j.b, j.n);
	j.b[2 + hlen + 2 * PXFER_JOURNAL_REC_LEN + 9] ^= 0x10;
	j.b[2 + 12] ^= 1;
	seed("journal", "header-flipped", j.b, j.n);
	j.b[0] = 1;
	seed("journal", "header-fixed-stale", j.b, j.n);
	j.b[2 + 12] ^= 1;
	j.b[2 + 5] = 2;
	seed("journal", "header-fixed-version", j.b, j.n);
	j.b[2 + 5] = 1;
	j.b[2 + 31] = 1;
	seed("journal", "header-fixed-reserved", j.b, j.n);

	jnl_begin(&j, 0, 0xff, &id);
	jnl_runs(&j);
	jnl_rec(&j, 2 * 65536ull + 100, 10);
	seed("journal", "overlap", j.b, j.n);

	/* ignored: empty, past the end, wrapping; then one good */
	jnl_begin(&j, 0, 0xff, &id);
	jnl_rec(&j, 4096, 0);
	jnl_rec(&j, jnl_file.size - 1, 2);
	jnl_rec(&j, UINT64_MAX - 10, 100);
	jnl_rec(&j, 0, 4096);
	seed("journal", "ignored", j.b, j.n);

	/* more runs than a partial offers */
	jnl_begin(&j, 0, 0xff, &id);
	for (unsigned int i = 0; i < JNL_RECS_MAX; i++)
		jnl_rec(&j, i * 2048ull, 1024);
	seed("journal", "runs-max", j.b, j.n);

	id.mtime_nsec++;
	jnl_begin(&j, 0, 0xff, &id);
	jnl_runs(&j);
	seed("journal", "stale", j.b, j.n);
	id = jnl_file;
	id.path = "dir/big.bim";
	jnl_begin(&j, 0, 0xff, &id);
	jnl_runs(&j);
	seed("journal", "other-path", j.b, j.n);
	id.path = "a/path/of/thirty-two/bytes.data";
	id.path_len = 31;
	id.size = UINT64_MAX;
	jnl_begin(&j, 4, 0xff, &id);
	jnl_rec(&j, UINT64_MAX - 4096, 4096);
	jnl_rec(&j, 0, UINT32_MAX);
	seed("journal", "own-file-extremes", j.b, j.n);
}

/* ------------------------------------------------------------------------ */
/* work: the type byte, then the body of a work service message */

#define WORK_BUF	(PXFER_WORK_HDR_LEN + 64 * 1024)

/* @m encoded, as the type byte and its body, at @buf; its length */
static size_t work_body(uint8_t *buf, const struct pxfer_work_msg *m)
{
	ssize_t n = pxfer_work_msg_encode(buf, WORK_BUF, m);

	if (n < PXFER_WORK_HDR_LEN) {
		fprintf(stderr, "error: cannot encode work message %u\n",
			m->type);
		failed = 1;
		return 0;
	}
	/* the type's low byte just before the body */
	buf[PXFER_WORK_HDR_LEN - 1] = (uint8_t)m->type;
	return (size_t)n - PXFER_WORK_HDR_LEN + 1;
}

static void work_seed(const char *name, const struct pxfer_work_msg *m)
{
	uint8_t *buf = malloc(WORK_BUF);
	size_t n;

	if (!buf)
		abort();
	n = work_body(buf, m);
	seed("work", name, buf + PXFER_WORK_HDR_LEN - 1, n);
	free(buf);
}

/*
 * @m with the byte at @off of its body (after the type byte) set to @v,
 * or cut to @off bytes when @v < 0
 */
static void work_bad(const char *name, const struct pxfer_work_msg *m,
		     size_t off, int v)
{
	uint8_t *buf = malloc(WORK_BUF), *b;
	size_t n;

	if (!buf)
		abort();
	n = work_body(buf, m);
	b = buf + PXFER_WORK_HDR_LEN - 1;
	if (v < 0)
		n = off + 1;
	else if (off + 1 < n)
		b[off + 1] = (uint8_t)v;
	seed("work", name, b, n);
	free(buf);
}

static void work_unit_seeds(void)
{
	struct pxfer_unit_entry e[3] = {
		{ .kind = PXFER_WALK_FILE, .src = "/data/src/a", .rel = "src/a",
		  .target = "", .size = 1000, .mtime_sec = 1700000000,
		  .mtime_nsec = 999999999, .mode = 0644 },
		{ .kind = PXFER_WALK_SYMLINK, .src = "/data/src/l",
		  .rel = "src/l", .target = "a", .mode = 0777 },
		{ .kind = PXFER_WALK_FILE, .src = "/data/src/b", .rel = "src/b",
		  .target = "", .size = 0, .mtime_sec = -1, .mode = 07777 },
	};
	struct pxfer_unit_entry r = {
		.kind = PXFER_WALK_FILE, .src = "/data/big", .rel = "big",
		.target = "", .size = 3ull << 30, .off = 1ull << 30,
		.len = 2ull << 30, .mode = 0600,
	};
	struct pxfer_unit_entry d = {
		.kind = PXFER_WALK_DIR, .src = "/data/src", .rel = "src",
		.target = "", .mode = 0755,
	};
	struct pxfer_work_msg m = { .type = PXFER_WORK_UNIT };
	struct pxfer_unit *u = &m.u.unit;
	/* the body's offsets: the unit's n, its bytes, the first entry */
	const size_t n_off = 13, bytes_off = 17, e0 = PXFER_WORK_UNIT_FIXED;

	*u = (struct pxfer_unit){ .id = 1, .recv = 1, .kind = PXFER_UNIT_FILES,
				  .n = 3, .e = e, .bytes = 1000 };
	work_seed("unit-files", &m);
	work_bad("unit-files-no-entries", &m, n_off + 3, 0);
	work_bad("unit-files-bytes-wrong", &m, bytes_off + 7, 0xe9);
	work_bad("unit-files-short", &m, 100, -1);
	work_bad("unit-files-kind-dir", &m, e0, PXFER_WALK_DIR);
	work_bad("unit-files-mode-over", &m, e0 + 1 + 2, 0x10);
	work_bad("unit-files-nul-in-src", &m, e0 + PXFER_WORK_ENTRY_FIXED + 2, 0);
	work_bad("unit-files-reserved", &m, e0 + PXFER_WORK_ENTRY_FIXED - 1, 1);
	*u = (struct pxfer_unit){ .id = UINT64_MAX, .recv = 0,
				  .kind = PXFER_UNIT_RANGE, .n = 1, .e = &r,
				  .bytes = 2ull << 30 };
	work_seed("unit-range", &m);
	work_bad("unit-range-past-end", &m, e0 + 1 + 4 + 8 + 8 + 4, 0x80);
	work_bad("unit-range-two", &m, n_off + 3, 2);
	work_bad("unit-kind-unknown", &m, 12, 4);
	*u = (struct pxfer_unit){ .id = 7, .recv = PXFER_WORK_RECV_MAX - 1,
				  .kind = PXFER_UNIT_DIRS, .n = 1, .e = &d };
	work_seed("unit-dirs", &m);
	work_bad("unit-dirs-recv-over", &m, 9, 0xff);
}

static void make_work(void)
{
	struct pxfer_work_msg m = { .type = PXFER_WORK_CHALLENGE };
	uint64_t ranks[3][3] = { { 5, 100, 1 << 20 }, { 0 }, { 1, 1, 1 } };
	uint64_t recv[2][4] = { { 50, 1000, 2000, 0 }, { 51, 0, 0, 1 } };

	m.u.challenge.magic = PXFER_WORK_MAGIC;
	m.u.challenge.version = PXFER_WORK_VERSION;
	memset(m.u.challenge.nonce, 0xab, PXFER_WORK_NONCE_LEN);
	memcpy(m.u.challenge.job, "job identity 16b", 16);
	work_seed("challenge", &m);
	work_bad("challenge-short", &m, 20, -1);
	m.type = PXFER_WORK_HELLO;
	m.u.hello.version = PXFER_WORK_VERSION;
	m.u.hello.rank = PXFER_WORK_RANKS_MAX - 1;
	memset(m.u.hello.nonce, 0x11, PXFER_WORK_NONCE_LEN);
	memset(m.u.hello.mac, 0x22, PXFER_WORK_MAC_LEN);
	work_seed("hello", &m);
	m.type = PXFER_WORK_WELCOME;
	work_seed("welcome", &m);
	m.type = PXFER_WORK_REFUSE;
	m.u.refuse = EACCES;
	work_seed("refuse", &m);
	work_bad("refuse-zero", &m, 3, 0);
	m.type = PXFER_WORK_PULL;
	m.u.recv = PXFER_WORK_RECV_MAX - 1;
	work_seed("pull", &m);
	work_bad("pull-recv-over", &m, 2, 0xff);
	m.type = PXFER_WORK_LOST;
	m.u.recv = 0;
	work_seed("lost", &m);
	for (uint16_t t = PXFER_WORK_WAIT; t <= PXFER_WORK_END; t++) {
		char name[32];

		if (t != PXFER_WORK_WAIT && t != PXFER_WORK_NODATA &&
		    t != PXFER_WORK_ACK && t != PXFER_WORK_END)
			continue;
		m.type = t;
		snprintf(name, sizeof(name), "empty-%u", t);
		work_seed(name, &m);
	}
	m.type = PXFER_WORK_REPORT;
	m.u.report = (struct pxfer_unit_result){
		.id = 42, .status = PXFER_EXIT_FAIL, .again = 1, .lost = 1,
		.files = 3, .files_failed = 1, .files_same = 1, .dirs = 0,
		.links = 1, .bytes = 4096, .bytes_sent = 8192, .bytes_same = 1,
	};
	work_seed("report", &m);
	work_bad("report-again-2", &m, 15, 2);
	work_bad("report-status-negative", &m, 8, 0xff);
	work_bad("report-short", &m, 83, -1);
	m.type = PXFER_WORK_OUTCOME;
	m.u.outcome = (struct pxfer_job_outcome){
		.status = PXFER_EXIT_NET, .files = 100, .files_failed = 1,
		.files_same = 2, .files_skipped = 3, .dirs = 4, .links = 5,
		.bytes = 6, .bytes_sent = 7, .bytes_same = 8, .units = 9,
		.units_again = 10, .nranks = 3, .nrecv = 2,
	};
	{
		/* the struct's own layout for the arrays */
		__typeof__(*m.u.outcome.rank) rk[3];
		__typeof__(*m.u.outcome.recv) rv[2];

		for (int i = 0; i < 3; i++) {
			rk[i].units = ranks[i][0];
			rk[i].ranges = ranks[i][0] / 2;
			rk[i].files = ranks[i][1];
			rk[i].bytes_sent = ranks[i][2];
		}
		m.u.outcome.rank = rk;

		for (int i = 0; i < 2; i++) {
			rv[i].files = recv[i][0];
			rv[i].bytes = recv[i][1];
			rv[i].bytes_sent = recv[i][2];
			rv[i].lost = (int)recv[i][3];
		}
		m.u.outcome.recv = rv;
		work_seed("outcome", &m);
		work_bad("outcome-no-ranks", &m, 95, 0);
		work_bad("outcome-lost-2", &m, 100 + 3 * 24 + 24, 2);
		work_bad("outcome-short", &m, 100 + 3 * 24 + 2 * 25 - 2, -1);
	}
	work_unit_seeds();
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 1;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "error: cannot create '%s': %s\n", outdir,
			strerror(errno));
		return 1;
	}
	make_msg_hdr();
	make_chunk();
	make_path_seeds();
	make_escape();
	make_ring_desc();
	make_sealed();
	make_journal();
	make_work();
	return failed;
}
