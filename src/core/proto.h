/* SPDX-License-Identifier: MIT */
/*
 * The pxfer wire format: the only place that knows how messages look on
 * the wire. Everything is big-endian with fixed widths; see docs/protocol.md.
 *
 * Every message is a frame: an 8-byte header followed by a body.
 *
 *	u16 type	enum pxfer_msg_type
 *	u16 flags	must be 0
 *	u32 len		length of the body in bytes (<= PXFER_MSG_MAX, except
 *			CHUNK frames on a byte-stream transport, whose body is
 *			the chunk descriptor followed by the payload)
 *
 * Strings are a u16 length followed by that many bytes, no terminator; they
 * may not contain NUL. Decoders check every length against the limits below
 * and reject trailing bytes.
 */
#ifndef PXFER_PROTO_H
#define PXFER_PROTO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "pxfer/pxfer.h"

#define PXFER_PROTO_VERSION	5
#define PXFER_MAGIC		0x50584652u	/* "PXFR" */

#define PXFER_HDR_LEN		8
#define PXFER_NONCE_LEN		32
#define PXFER_MAC_LEN		32
/*
 * The limits the options share with the wire are the public header's:
 * PXFER_PATH_MAX (bytes of a relative path, no NUL), PXFER_WORKERS_MAX,
 * PXFER_CHUNK_MIN and PXFER_CHUNK_MAX; they fit the fields that carry
 * them (u16 lengths and counts, u32 sizes)
 */
_Static_assert(PXFER_PATH_MAX <= UINT16_MAX && PXFER_WORKERS_MAX <= UINT16_MAX,
	       "a public limit does not fit its wire field");
#define PXFER_NAME_MAX		255	/* bytes of one path component */
#define PXFER_TEXT_MAX		256	/* bytes of an error text */
#define PXFER_BLOB_MAX		64	/* bytes of a transport ring descriptor */
#define PXFER_CREDIT_MAX	256	/* slots in one CREDIT message */
#define PXFER_SEG_MAX		64	/* segments (files) in one chunk */
#define PXFER_SLOTS_MAX		1024	/* slots per worker ring */
/* largest control message body: a FILE entry with path and symlink target */
#define PXFER_MSG_MAX		(2 * PXFER_PATH_MAX + 128)
/* largest encoded chunk descriptor */
#define PXFER_TAG_LEN		16	/* chunk tag, and control messages' */
#define PXFER_CHUNK_DESC_FIXED	32
#define PXFER_CHUNK_DESC_MAX	(PXFER_CHUNK_DESC_FIXED + PXFER_SEG_MAX * 20)
#define PXFER_DIGEST_LEN	16	/* a content digest (core/digest.h) */
#define PXFER_RUNS_MAX		256	/* held runs in one FILE_OK */
#define PXFER_WIRE_RAILS_MAX	8	/* receiver addresses in a WELCOME */

enum pxfer_msg_type {
	PXFER_MSG_CHALLENGE = 1,	/* r -> s, first on every connection */
	PXFER_MSG_HELLO,		/* s -> r, control connection */
	PXFER_MSG_WELCOME,		/* r -> s, control connection */
	PXFER_MSG_DATA_HELLO,		/* s -> r, data connection */
	PXFER_MSG_DATA_WELCOME,		/* r -> s, data connection */
	PXFER_MSG_REFUSE,		/* r -> s, instead of a WELCOME */
	PXFER_MSG_FILE,			/* s -> r, one manifest entry */
	PXFER_MSG_FILE_OK,		/* r -> s, file created, send data */
	PXFER_MSG_FILE_ERR,		/* r -> s, file refused */
	PXFER_MSG_FILE_END,		/* s -> r, all chunks of a file sent */
	PXFER_MSG_FILE_DONE,		/* r -> s, file complete under its name */
	PXFER_MSG_CREDIT,		/* r -> s, slots granted to a worker */
	PXFER_MSG_FIN,			/* s -> r, manifest complete */
	PXFER_MSG_ACK,			/* r -> s, session complete */
	PXFER_MSG_ABORT,		/* either way, session over */
	PXFER_MSG_CHUNK,		/* s -> r, data connection */
	PXFER_MSG_PING,			/* either way, control: still here */
	PXFER_MSG_DATA_LOST,		/* either way, control: a data
					 * connection is gone */
	PXFER_MSG_DATA_SENT,		/* s -> r, control: the chunks sent
					 * on a data connection so far */
	PXFER_MSG_FILE_SUM,		/* s -> r, control: a FILE's digest,
					 * once hashed */
	PXFER_MSG_CHAIN,		/* s -> r, control: a hop the receiver
					 * forwards to (docs/broadcast.md) */
	PXFER_MSG_CHAIN_REPORT,		/* r -> s, control: how a hop after
					 * it ended, before the ACK */
	PXFER_MSG_TYPE_MAX = PXFER_MSG_CHAIN_REPORT,
};

enum pxfer_file_type {
	PXFER_FT_REG = 1,
	PXFER_FT_DIR = 2,
	PXFER_FT_SYMLINK = 3,
};

/* HELLO flags */
#define PXFER_HELLO_FSYNC	0x1u	/* ask the receiver to fsync each file */
/* chunk_size is the largest wanted: the receiver may pick a smaller one,
 * down to 1 MiB, to keep several slots per worker in its ring */
#define PXFER_HELLO_CHUNK_AUTO	0x2u
/* how chunks are protected (docs/security.md): a keyed tag unless ... */
#define PXFER_HELLO_CHECKSUM	0x4u	/* ... the plain checksum, or */
#define PXFER_HELLO_ENCRYPT	0x8u	/* ... sealed: encrypted and tagged */
/* ChaCha20-Poly1305 instead of AES-256-GCM, for control and chunks */
#define PXFER_HELLO_CHACHA	0x10u
/* read each file back from the receiver's storage and compare it with the
 * digest in its FILE_END (--verify) */
#define PXFER_HELLO_VERIFY	0x20u
#define PXFER_HELLO_PROT	(PXFER_HELLO_CHECKSUM | PXFER_HELLO_ENCRYPT | \
				 PXFER_HELLO_CHACHA)
#define PXFER_HELLO_FLAGS	(PXFER_HELLO_FSYNC | PXFER_HELLO_CHUNK_AUTO | \
				 PXFER_HELLO_PROT | PXFER_HELLO_VERIFY)

/* FILE flags (regular files only): what the receiver may keep */
#define PXFER_FILE_RESUME	0x1u	/* offer a partial: FILE_OK says what it holds */
#define PXFER_FILE_SKIP		0x2u	/* a file of this size and mtime is the same */
#define PXFER_FILE_CHECKSUM	0x4u	/* a file of this size and digest is the same */
/* with RESUME: offer a partial as its journal says, without reading its
 * data back (--resume trust) */
#define PXFER_FILE_TRUST	0x8u
/* with CHECKSUM: the digest is not in the FILE (zero) but follows in a
 * FILE_SUM, once the sender has hashed the file; the FILE waits for it */
#define PXFER_FILE_SUM_FOLLOWS	0x10u
/* with RESUME, not with CHECKSUM: the FILE is one range of the file, sent
 * by one session of a job whose other sessions may send the other ranges
 * into the same partial (range_off, range_len, job follow the target) */
#define PXFER_FILE_RANGE	0x20u
#define PXFER_FILE_FLAGS	(PXFER_FILE_RESUME | PXFER_FILE_SKIP | \
				 PXFER_FILE_CHECKSUM | PXFER_FILE_TRUST | \
				 PXFER_FILE_SUM_FOLLOWS | PXFER_FILE_RANGE)
#define PXFER_JOB_LEN		16	/* a job's identity, in a range FILE */

/* FILE_OK states */
enum pxfer_have {
	PXFER_HAVE_NONE = 0,	/* created empty: send everything */
	PXFER_HAVE_PART = 1,	/* a partial holds the runs: send the rest */
	PXFER_HAVE_SAME = 2,	/* the file is there and the same: skipped */
	PXFER_HAVE_STALE = 3,	/* a partial of another version was discarded */
	PXFER_HAVE_BAD = 4,	/* partial state that failed its checks was discarded */
	PXFER_HAVE_MAX = PXFER_HAVE_BAD,
};

/* FILE_END code for a source that changed while it was sent */
#define PXFER_CODE_CHANGED	ESTALE

struct pxfer_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t len;
};

/*
 * CHALLENGE body: u32 magic, u16 version, u16 transport (0 tcp, 1 rdma),
 * nonce[32].
 */
struct pxfer_challenge {
	uint32_t magic;
	uint16_t version;
	uint16_t transport;
	uint8_t nonce[PXFER_NONCE_LEN];
};

/*
 * HELLO body: u32 magic, u16 version, u16 workers, u32 chunk_size,
 * u32 flags, nonce[32], mac[32], string dest.
 * mac proves the shared secret; see auth.h for what it covers.
 */
struct pxfer_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t workers;	/* 1..PXFER_WORKERS_MAX */
	uint32_t chunk_size;	/* PXFER_CHUNK_MIN..PXFER_CHUNK_MAX */
	uint32_t flags;		/* only PXFER_HELLO_FLAGS bits */
	uint8_t nonce[PXFER_NONCE_LEN];
	uint8_t mac[PXFER_MAC_LEN];
	uint16_t dest_len;	/* 0: the receiver's top directory */
	char dest[PXFER_PATH_MAX + 1];
};

/*
 * A receiver's address that data connections may go to (a rail): u8
 * family (4 or 6), u8 prefix (its subnet's prefix length, <= 32 or 128),
 * addr[16] (IPv4 in the first 4 bytes, the rest 0).
 */
struct pxfer_wire_rail {
	uint8_t family;
	uint8_t prefix;
	uint8_t addr[16];
};

/*
 * WELCOME body: mac[32], u64 session, u32 chunk_size, u16 workers,
 * u16 slots, u32 max_files, u32 flags, u8 nrails, nrails x rail.
 */
struct pxfer_welcome {
	uint8_t mac[PXFER_MAC_LEN];
	uint64_t session;
	uint32_t chunk_size;	/* PXFER_CHUNK_MIN..PXFER_CHUNK_MAX */
	uint16_t workers;	/* 1..PXFER_WORKERS_MAX */
	uint16_t slots;		/* slots per worker ring, 1..PXFER_SLOTS_MAX */
	uint32_t max_files;	/* files in flight, 1..65536 */
	uint32_t flags;		/* the HELLO's PXFER_HELLO_PROT bits, agreed */
	uint8_t nrails;		/* 0..PXFER_WIRE_RAILS_MAX: none offered */
	struct pxfer_wire_rail rail[PXFER_WIRE_RAILS_MAX];
};

/*
 * DATA_LOST body: u16 worker, u32 code (a positive errno value), u64 seq.
 * From the sender: its data connection @worker broke (or stalled), and
 * the receiver is to stop it (seq 0). From the receiver: it has stopped
 * @worker's connection and took its chunks below @seq, no more; the
 * sender sends the chunks from @seq on over the other connections.
 */
struct pxfer_data_lost {
	uint16_t worker;	/* < PXFER_WORKERS_MAX */
	uint16_t gen;		/* its connection's generation (DATA_HELLO) */
	uint32_t code;
	uint64_t seq;
};

/*
 * DATA_SENT body: u16 worker, u64 chunks. The sender has sent @chunks
 * chunks on data connection @worker (the next seq it would use), and
 * nothing more for a while: the receiver that does not see that many
 * arrive soon knows the last ones were dropped on the way.
 */
struct pxfer_data_sent {
	uint16_t worker;	/* < PXFER_WORKERS_MAX */
	uint16_t gen;		/* its connection's generation (DATA_HELLO) */
	uint64_t chunks;
};

/*
 * FILE_SUM body: u64 id, u32 code, digest[16]. The whole-file digest of
 * FILE @id, announced with PXFER_FILE_SUM_FOLLOWS; code != 0 (a positive
 * errno): the sender could not read the file, and digest is zero.
 */
struct pxfer_file_sum {
	uint64_t id;
	uint32_t code;
	uint8_t digest[PXFER_DIGEST_LEN];
};

/* hops after the source in one broadcast chain, at most */
#define PXFER_CHAIN_MAX		64
/* bytes of a hop's host name or address */
#define PXFER_HOST_MAX		255

/*
 * CHAIN body: chain[16], u16 pos, u16 index, u16 count, u16 port,
 * string host, string dest. One of @count messages (index 0..count-1,
 * in order), sent by the sender right after the WELCOME, before any
 * FILE: the hops the receiver is to forward the session's files to, in
 * the order it is to try them (the first that works; the others are
 * passed on to it). chain is the broadcast's identity (not all zero, the
 * same in every message of the session; the ranges of its files carry
 * it as their job); pos is the hop's place in the whole chain (the
 * source is 0: 2..PXFER_CHAIN_MAX, one more than the last's); count is
 * 1..PXFER_CHAIN_MAX - 1 and index < count; port is not 0; host is
 * 1..PXFER_HOST_MAX bytes of letters, digits and ".-_:[]%"; dest is a
 * destination as in a HELLO (0..PXFER_PATH_MAX bytes).
 */
struct pxfer_chain_hop {
	uint8_t chain[PXFER_JOB_LEN];
	uint16_t pos;
	uint16_t index;
	uint16_t count;
	uint16_t port;
	uint16_t host_len;
	char host[PXFER_HOST_MAX + 1];
	uint16_t dest_len;
	char dest[PXFER_PATH_MAX + 1];
};

/* CHAIN_REPORT states */
enum pxfer_hop_state {
	PXFER_HOP_OK = 0,	/* it has the whole tree */
	PXFER_HOP_FAILED = 1,	/* its session ended with code (some files) */
	PXFER_HOP_LOST = 2,	/* it died or stalled, and was cut out */
	PXFER_HOP_UNREACHED = 3,	/* nothing could be sent to it */
	PXFER_HOP_STATE_MAX = PXFER_HOP_UNREACHED,
};

/*
 * CHAIN_REPORT body: u16 pos, u8 state, u8 code, u64 files, u64 bytes.
 * How the hop at @pos (2..PXFER_CHAIN_MAX, one of those the receiver was
 * given) ended: state (enum pxfer_hop_state), code (the exit status of
 * its session: 0 for PXFER_HOP_OK, not 0 otherwise), the files and bytes
 * it took. A receiver given CHAIN sends one for each of its hops, once
 * its forwarding is over, before its ACK.
 */
struct pxfer_chain_report {
	uint16_t pos;
	uint8_t state;
	uint8_t code;
	uint64_t files;
	uint64_t bytes;
};

/* seconds a data connection sends nothing before DATA_SENT says so */
#define PXFER_DATA_SENT_QUIET	1
/* seconds after DATA_SENT (or the last chunk that arrived on that
 * connection, whichever is later) that a receiver waits for the chunks
 * it names: then they were dropped, an integrity error. Twice the 10 s
 * in which a stalled connection is found lost (tcp's TCP_USER_TIMEOUT),
 * so that a link that went down is failover, not an integrity error,
 * and room for a slow link's last chunk */
#define PXFER_DATA_SENT_GRACE	20

/*
 * DATA_HELLO body: u64 session, u16 worker, u16 gen, mac[32]. gen is 0
 * for the session's first connection of a worker, one more for each
 * that replaces a lost one (docs/protocol.md, "Re-admission").
 */
struct pxfer_data_hello {
	uint64_t session;
	uint16_t worker;	/* < PXFER_WORKERS_MAX */
	uint16_t gen;
	uint8_t mac[PXFER_MAC_LEN];
};

/*
 * DATA_WELCOME body: u16 worker, mac[32], u16 blob_len, blob: the
 * transport's description of the receiver's ring (empty for tcp), which
 * the mac covers.
 */
struct pxfer_data_welcome {
	uint16_t worker;	/* < PXFER_WORKERS_MAX, as in DATA_HELLO */
	uint8_t mac[PXFER_MAC_LEN];
	uint16_t blob_len;	/* <= PXFER_BLOB_MAX */
	uint8_t blob[PXFER_BLOB_MAX];
};

/* REFUSE and ABORT body: u32 code (a positive errno value), string text. */
struct pxfer_error {
	uint32_t code;
	uint16_t text_len;	/* <= PXFER_TEXT_MAX */
	char text[PXFER_TEXT_MAX + 1];
};

/*
 * FILE body: u64 id, u8 type, u8 flags, u32 mode, u64 size, s64 mtime_sec,
 * u32 mtime_nsec, digest[16], string path, string target.
 * mode holds permission bits only (<= 07777); target is empty unless the
 * type is PXFER_FT_SYMLINK, where it is required; size is 0 unless REG,
 * and so are flags (PXFER_FILE_FLAGS); digest is all zero unless flags
 * has PXFER_FILE_CHECKSUM, and with PXFER_FILE_SUM_FOLLOWS (only with
 * PXFER_FILE_CHECKSUM); PXFER_FILE_TRUST only with PXFER_FILE_RESUME.
 * path is relative, '/'-separated (checked again by path.h).
 * With PXFER_FILE_RANGE (only with PXFER_FILE_RESUME, not with
 * PXFER_FILE_CHECKSUM), then: u64 range_off, u64 range_len (>= 1,
 * range_off + range_len <= size), job[16] (not all zero); without it
 * nothing more, and the three are zero.
 */
struct pxfer_file {
	uint64_t id;
	uint8_t type;
	uint8_t flags;
	uint32_t mode;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;	/* < 1000000000 */
	uint8_t digest[PXFER_DIGEST_LEN];
	uint16_t path_len;	/* 1..PXFER_PATH_MAX */
	char path[PXFER_PATH_MAX + 1];
	uint16_t target_len;	/* 0..PXFER_PATH_MAX */
	char target[PXFER_PATH_MAX + 1];
	uint64_t range_off;	/* PXFER_FILE_RANGE: the bytes it is about */
	uint64_t range_len;
	uint8_t job[PXFER_JOB_LEN];	/* PXFER_FILE_RANGE: whose range */
};

/*
 * FILE_OK body: u64 id, u8 state (enum pxfer_have), u64 held,
 * digest[16], u16 nrun, nrun x (u64 off, u64 len, u32 unit).
 * Runs are what a partial holds (state PXFER_HAVE_PART, and only then):
 * sorted, disjoint, each len bytes at off, recorded in pieces of unit
 * bytes (the last one shorter); held is the sum of their lengths and
 * digest the sum of the pieces' digests (core/digest.h). Otherwise held,
 * digest and nrun are 0.
 */
struct pxfer_held_run {
	uint64_t off;
	uint64_t len;		/* >= 1 */
	uint32_t unit;		/* 1..PXFER_CHUNK_MAX */
};

struct pxfer_file_ok {
	uint64_t id;
	uint8_t state;
	uint64_t held;
	uint8_t digest[PXFER_DIGEST_LEN];
	uint16_t nrun;		/* 0..PXFER_RUNS_MAX */
	struct pxfer_held_run run[PXFER_RUNS_MAX];
};

/*
 * FILE_ERR, FILE_DONE body: u64 id, u32 code, string text.
 * code is 0 for a successful FILE_DONE, a positive errno otherwise
 * (FILE_ERR requires code != 0).
 */
struct pxfer_file_status {
	uint64_t id;
	uint32_t code;
	uint16_t text_len;
	char text[PXFER_TEXT_MAX + 1];
};

/*
 * FILE_END body: u64 id, u64 bytes, u32 code, digest[16].
 * bytes is the number of payload bytes sent for the file over all data
 * connections in this session; code != 0 means the sender gave up on the
 * file (for example a read error; PXFER_CODE_CHANGED: the source changed
 * while it was sent) and the receiver must discard it. digest is the
 * whole file's (core/digest.h) with PXFER_HELLO_VERIFY, else zero.
 */
struct pxfer_file_end {
	uint64_t id;
	uint64_t bytes;
	uint32_t code;
	uint8_t digest[PXFER_DIGEST_LEN];
};

/* CREDIT body: u16 worker, u16 count, count x u16 slot. */
struct pxfer_credit {
	uint16_t worker;	/* < PXFER_WORKERS_MAX */
	uint16_t count;		/* 1..PXFER_CREDIT_MAX */
	uint16_t slots[PXFER_CREDIT_MAX];	/* each < PXFER_SLOTS_MAX */
};

/*
 * PING body: u64 checked. Sent on the control connection by a side that
 * has sent nothing for a while, so that a peer that vanished without a
 * word (a link down, a host gone) is found by the transport's own
 * timeouts. checked: the bytes of held data (what FILE_OKs offered) the
 * sender has read back and checked so far in the session, which only
 * grows; a receiver's is 0. A receiver takes a PING whose figure grew,
 * up to what it offered, as the sender's progress (--idle-timeout).
 */
struct pxfer_ping {
	uint64_t checked;
};

/* FIN and ACK body: u64 files, u64 bytes, u32 code (0 on FIN). */
struct pxfer_fin {
	uint64_t files;
	uint64_t bytes;
	uint32_t code;
};

/*
 * A chunk descriptor: u16 slot, u16 nseg, u32 len, u64 seq, tag[16],
 * then nseg x (u64 file, u64 offset, u32 len).
 * len is the payload length (sum of the segment lengths, 1..PXFER_CHUNK_MAX);
 * tag protects descriptor and payload (core/seal.h), or is the plain
 * checksum (XXH3_64bits of the payload, big-endian, then 8 zero bytes,
 * which the codec leaves to the caller to check); segment i occupies the payload bytes
 * that follow segment i-1. On tcp the descriptor and the payload follow a
 * PXFER_MSG_CHUNK header whose len covers both.
 */
struct pxfer_seg {
	uint64_t file;
	uint64_t offset;
	uint32_t len;
};

struct pxfer_chunk {
	uint16_t slot;
	uint16_t nseg;		/* 1..PXFER_SEG_MAX */
	uint32_t len;
	uint64_t seq;		/* per data connection, starts at 0 */
	uint8_t tag[PXFER_TAG_LEN];
	struct pxfer_seg seg[PXFER_SEG_MAX];
};

/* A decoded control message. */
struct pxfer_msg {
	uint16_t type;
	union {
		struct pxfer_challenge challenge;
		struct pxfer_hello hello;
		struct pxfer_welcome welcome;
		struct pxfer_data_hello data_hello;
		struct pxfer_data_welcome data_welcome;
		struct pxfer_error error;		/* REFUSE, ABORT */
		struct pxfer_file file;
		struct pxfer_file_ok ok;
		struct pxfer_file_status status;	/* FILE_ERR/DONE */
		struct pxfer_file_end end;
		struct pxfer_credit credit;
		struct pxfer_fin fin;			/* FIN, ACK */
		struct pxfer_data_lost lost;
		struct pxfer_data_sent sent;
		struct pxfer_ping ping;
		struct pxfer_file_sum sum;
		struct pxfer_chain_hop hop;		/* CHAIN */
		struct pxfer_chain_report report;	/* CHAIN_REPORT */
	} u;
};

/*
 * pxfer_hdr_decode - parse a frame header from @buf (@len bytes available).
 * Returns 0, -EAGAIN if fewer than PXFER_HDR_LEN bytes, or -EPROTO for an
 * unknown type, non-zero flags, or a body length over the limit for that
 * type (CHUNK: PXFER_CHUNK_DESC_MAX + PXFER_CHUNK_MAX).
 */
int pxfer_hdr_decode(const void *buf, size_t len, struct pxfer_hdr *h);

/*
 * pxfer_hdr_decode_sealed - the same for a sealed control message, whose
 * len covers the body and its PXFER_TAG_LEN-byte tag: -EPROTO also for a
 * CHUNK, or for a len below the tag's or above the type's body plus it.
 */
int pxfer_hdr_decode_sealed(const void *buf, size_t len, struct pxfer_hdr *h);

/* pxfer_hdr_encode - write a header into @buf (PXFER_HDR_LEN bytes). */
void pxfer_hdr_encode(void *buf, uint16_t type, uint32_t len);

/*
 * pxfer_msg_encode - encode header and body of @m into @buf.
 * Returns the frame length, -EMSGSIZE if @cap is too small, or -EINVAL if a
 * field of @m is outside its limits (the encoder checks what the decoder
 * checks, so a bug on one side cannot produce a frame the other rejects).
 * Not for CHUNK: see pxfer_chunk_encode.
 */
ssize_t pxfer_msg_encode(void *buf, size_t cap, const struct pxfer_msg *m);

/*
 * pxfer_msg_decode - decode a body of @len bytes of message @type into @m.
 * Returns 0 or -EPROTO for any malformed field: wrong length, trailing
 * bytes, a string over its limit or holding a NUL, a count or value out of
 * range, an unknown file type, a wrong magic. Strings are NUL-terminated in
 * @m. Not for CHUNK.
 */
int pxfer_msg_decode(uint16_t type, const void *body, size_t len,
		     struct pxfer_msg *m);

/*
 * pxfer_chunk_encode - encode a chunk descriptor into @buf.
 * Returns its length, -EMSGSIZE, or -EINVAL (same checks as the decoder).
 */
ssize_t pxfer_chunk_encode(void *buf, size_t cap, const struct pxfer_chunk *c);

/*
 * pxfer_chunk_decode - decode a descriptor from the first bytes of @buf.
 * Returns the number of bytes it used, -EAGAIN if @len is too short to hold
 * the whole descriptor, or -EPROTO: nseg out of range, a zero-length
 * segment, offset + len overflowing, segment lengths not summing to len,
 * len out of range.
 */
ssize_t pxfer_chunk_decode(const void *buf, size_t len, struct pxfer_chunk *c);

/*
 * pxfer_msg_ok - whether every field of control message @m is within the
 * limits above (false for an unknown type, and for CHUNK): what
 * pxfer_msg_encode and pxfer_msg_decode check (core/proto_check.c).
 */
bool pxfer_msg_ok(const struct pxfer_msg *m);

/* pxfer_chunk_ok - the same for chunk descriptor @c, as its codec checks */
bool pxfer_chunk_ok(const struct pxfer_chunk *c);

/* pxfer_chunk_desc_len - encoded size of a descriptor with @nseg segments */
static inline size_t pxfer_chunk_desc_len(unsigned int nseg)
{
	return PXFER_CHUNK_DESC_FIXED + (size_t)nseg * 20;
}

/* pxfer_msg_name - a printable name for a message type ("FILE_OK") */
const char *pxfer_msg_name(uint16_t type);

#endif
