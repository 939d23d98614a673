/* SPDX-License-Identifier: MIT */
/*
 * The work service's messages (docs/scaleout.md, "Work units"): a header
 * of type (u16), flags (u16, 0) and body length (u32), the body, and
 * after the handshake a MAC of 32 bytes:
 *
 *   mac = HMAC-SHA256(key of the direction, dir | seq | header | body)
 *
 * with dir 'C' (client to server) or 'S' and seq the message's number in
 * its direction from 0, so that nothing can be injected, replayed, dropped
 * or reordered. The handshake:
 *
 *   CHALLENGE  s -> c  magic, version, nonce_s, job
 *   HELLO      c -> s  version, rank, nonce_c, mac_c
 *   WELCOME    s -> c  mac_s         (or REFUSE code, and the end)
 *
 *   mac_c = HMAC(secret, "pxfer work hello" | nonce_s | nonce_c | job | rank)
 *   mac_s = HMAC(secret, "pxfer work welcome" | nonce_c | nonce_s | job |
 *                rank | mac_c)
 *   key   = HKDF-SHA256(salt = nonce_s | nonce_c, ikm = secret,
 *                       info = "pxfer work c2s" or "pxfer work s2c")
 */
#ifndef PXFER_WORK_WIRE_H
#define PXFER_WORK_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/work.h"

#define PXFER_WORK_MAGIC	0x50585752u	/* "PXWR" */
#define PXFER_WORK_VERSION	1
#define PXFER_WORK_HDR_LEN	8
#define PXFER_WORK_MAC_LEN	32
#define PXFER_WORK_NONCE_LEN	32
#define PXFER_WORK_KEY_LEN	32
/* the longest body from the server (a UNIT, an OUTCOME) */
#define PXFER_WORK_MSG_MAX	(1u << 20)
/* the longest body from a client (a REPORT) */
#define PXFER_WORK_REQ_MAX	256
/* a UNIT's fixed part, and each entry's */
#define PXFER_WORK_UNIT_FIXED	25
#define PXFER_WORK_ENTRY_FIXED	51

enum pxfer_work_type {
	PXFER_WORK_CHALLENGE = 1,	/* s -> c */
	PXFER_WORK_HELLO,		/* c -> s */
	PXFER_WORK_WELCOME,		/* s -> c */
	PXFER_WORK_REFUSE,		/* s -> c, then the end */
	PXFER_WORK_PULL,		/* c -> s: recv */
	PXFER_WORK_UNIT,		/* s -> c: a unit */
	PXFER_WORK_WAIT,		/* s -> c: nothing now */
	PXFER_WORK_NODATA,		/* s -> c: nothing more for recv */
	PXFER_WORK_REPORT,		/* c -> s: a unit's result */
	PXFER_WORK_LOST,		/* c -> s: recv cannot be reached */
	PXFER_WORK_ACK,			/* s -> c: REPORT, LOST taken */
	PXFER_WORK_END,			/* c -> s: the outcome, when over */
	PXFER_WORK_OUTCOME,		/* s -> c */
	PXFER_WORK_TYPE_MAX = PXFER_WORK_OUTCOME,
};

struct pxfer_work_msg {
	uint16_t type;
	union {
		struct {
			uint32_t magic;
			uint16_t version;
			uint8_t nonce[PXFER_WORK_NONCE_LEN];
			uint8_t job[16];
		} challenge;
		struct {
			uint16_t version;
			uint32_t rank;
			uint8_t nonce[PXFER_WORK_NONCE_LEN];
			uint8_t mac[PXFER_WORK_MAC_LEN];
		} hello;
		struct {
			uint8_t mac[PXFER_WORK_MAC_LEN];
		} welcome;
		uint32_t refuse;	/* a positive errno */
		uint32_t recv;		/* PULL, LOST */
		struct pxfer_unit unit;
		struct pxfer_unit_result report;
		struct pxfer_job_outcome outcome;
	} u;
};

/*
 * pxfer_work_msg_decode - the body of a message of @type, @len bytes at
 * @b, into @m (which it owns: pxfer_work_msg_release). Every length and
 * count is checked and the body must be used exactly. 0 or -EPROTO (then
 * nothing to release), -ENOMEM.
 */
int pxfer_work_msg_decode(uint16_t type, const uint8_t *b, size_t len,
			  struct pxfer_work_msg *m);
void pxfer_work_msg_release(struct pxfer_work_msg *m);

/* pxfer_work_msg_size - the bytes of @m's body */
size_t pxfer_work_msg_size(const struct pxfer_work_msg *m);
/*
 * pxfer_work_msg_encode - header and body of @m into @buf of @cap bytes;
 * the frame's length, or -EMSGSIZE
 */
ssize_t pxfer_work_msg_encode(uint8_t *buf, size_t cap,
			      const struct pxfer_work_msg *m);
/*
 * pxfer_work_hdr_decode - the header at @p: the type and body length, or
 * -EPROTO (flags set, an unknown type, a body over @max)
 */
int pxfer_work_hdr_decode(const uint8_t *p, size_t max, uint16_t *type,
			  uint32_t *len);

/* pxfer_work_entry_size - the bytes of one entry of a UNIT */
size_t pxfer_work_entry_size(const struct pxfer_unit_entry *e);

/* the handshake's MACs and keys (the comment at the top) */
void pxfer_work_hello_mac(const uint8_t *secret, size_t secret_len,
			  const uint8_t *nonce_s, const uint8_t *nonce_c,
			  const uint8_t *job, uint32_t rank, uint8_t *mac);
void pxfer_work_welcome_mac(const uint8_t *secret, size_t secret_len,
			    const uint8_t *nonce_s, const uint8_t *nonce_c,
			    const uint8_t *job, uint32_t rank,
			    const uint8_t *mac_c, uint8_t *mac);
void pxfer_work_keys(const uint8_t *secret, size_t secret_len,
		     const uint8_t *nonce_s, const uint8_t *nonce_c,
		     uint8_t *c2s, uint8_t *s2c);
/* pxfer_work_frame_mac - the MAC of the frame at @f (@len bytes) */
void pxfer_work_frame_mac(const uint8_t *key, char dir, uint64_t seq,
			  const uint8_t *f, size_t len, uint8_t *mac);

/* pxfer_work_keepalive - TCP keepalive on @fd: a dead peer found in ~30 s */
void pxfer_work_keepalive(int fd);

#endif
