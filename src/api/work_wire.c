// SPDX-License-Identifier: MIT
/*
 * The work service's messages: one encoder, one pure decoder (every length
 * and count checked, the body used exactly), and the handshake's MACs and
 * keys (libsodium's HMAC-SHA256, HKDF made of it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sodium.h>

#include "api/work_wire.h"
#include "core/sys.h"
#include "core/bytes.h"
#include "pxfer/pxfer.h"
#include "send/walk.h"

#define OUTCOME_FIXED	100
#define RANK_LEN	32
#define RECV_LEN	25
#define REPORT_LEN	84

void pxfer_unit_release(struct pxfer_unit *u)
{
	for (unsigned int i = 0; u->e && i < u->n; i++) {
		free(u->e[i].src);
		free(u->e[i].rel);
		free(u->e[i].target);
	}
	free(u->e);
	u->e = NULL;
	u->n = 0;
}

void pxfer_job_outcome_release(struct pxfer_job_outcome *o)
{
	free(o->rank);
	free(o->recv);
	o->rank = NULL;
	o->recv = NULL;
}

void pxfer_work_msg_release(struct pxfer_work_msg *m)
{
	if (m->type == PXFER_WORK_UNIT)
		pxfer_unit_release(&m->u.unit);
	else if (m->type == PXFER_WORK_OUTCOME)
		pxfer_job_outcome_release(&m->u.outcome);
}

size_t pxfer_work_entry_size(const struct pxfer_unit_entry *e)
{
	return PXFER_WORK_ENTRY_FIXED + strlen(e->src) + strlen(e->rel) +
	       strlen(e->target);
}

size_t pxfer_work_msg_size(const struct pxfer_work_msg *m)
{
	size_t n = 0;

	switch (m->type) {
	case PXFER_WORK_CHALLENGE:
		return 6 + PXFER_WORK_NONCE_LEN + 16;
	case PXFER_WORK_HELLO:
		return 6 + PXFER_WORK_NONCE_LEN + PXFER_WORK_MAC_LEN;
	case PXFER_WORK_WELCOME:
		return PXFER_WORK_MAC_LEN;
	case PXFER_WORK_REFUSE:
	case PXFER_WORK_PULL:
	case PXFER_WORK_LOST:
		return 4;
	case PXFER_WORK_UNIT:
		n = PXFER_WORK_UNIT_FIXED;
		for (unsigned int i = 0; i < m->u.unit.n; i++)
			n += pxfer_work_entry_size(&m->u.unit.e[i]);
		return n;
	case PXFER_WORK_REPORT:
		return REPORT_LEN;
	case PXFER_WORK_OUTCOME:
		return OUTCOME_FIXED + (size_t)m->u.outcome.nranks * RANK_LEN +
		       (size_t)m->u.outcome.nrecv * RECV_LEN;
	default:
		return 0;
	}
}

/* a cursor over a buffer: put and get never pass its end */
struct cur {
	uint8_t *w;
	const uint8_t *r;
	size_t left;
	int bad;
};

static void put(struct cur *c, uint64_t v, unsigned int n)
{
	pxfer_put_be(c->w, v, n);
	c->w += n;
}

static void put_bytes(struct cur *c, const void *p, size_t n)
{
	memcpy(c->w, p, n);
	c->w += n;
}

static uint64_t get(struct cur *c, unsigned int n)
{
	uint64_t v;

	if (c->left < n) {
		c->bad = 1;
		c->left = 0;
		return 0;
	}
	v = pxfer_get_be(c->r, n);
	c->r += n;
	c->left -= n;
	return v;
}

static void get_bytes(struct cur *c, void *p, size_t n)
{
	if (c->left < n) {
		c->bad = 1;
		c->left = 0;
		memset(p, 0, n);
		return;
	}
	memcpy(p, c->r, n);
	c->r += n;
	c->left -= n;
}

static void put_unit(struct cur *c, const struct pxfer_unit *u)
{
	put(c, u->id, 8);
	put(c, u->recv, 4);
	put(c, u->kind, 1);
	put(c, u->n, 4);
	put(c, u->bytes, 8);
	for (unsigned int i = 0; i < u->n; i++) {
		const struct pxfer_unit_entry *e = &u->e[i];
		size_t ls = strlen(e->src), lr = strlen(e->rel);
		size_t lt = strlen(e->target);

		put(c, e->kind, 1);
		put(c, e->mode, 4);
		put(c, e->size, 8);
		put(c, (uint64_t)e->mtime_sec, 8);
		put(c, e->mtime_nsec, 4);
		put(c, e->off, 8);
		put(c, e->len, 8);
		put(c, ls, 2);
		put(c, lr, 2);
		put(c, lt, 2);
		put(c, 0, 4);		/* reserved */
		put_bytes(c, e->src, ls);
		put_bytes(c, e->rel, lr);
		put_bytes(c, e->target, lt);
	}
}

static void put_outcome(struct cur *c, const struct pxfer_job_outcome *o)
{
	put(c, (uint32_t)o->status, 4);
	put(c, o->files, 8);
	put(c, o->files_failed, 8);
	put(c, o->files_same, 8);
	put(c, o->files_skipped, 8);
	put(c, o->dirs, 8);
	put(c, o->links, 8);
	put(c, o->bytes, 8);
	put(c, o->bytes_sent, 8);
	put(c, o->bytes_same, 8);
	put(c, o->units, 8);
	put(c, o->units_again, 8);
	put(c, o->nranks, 4);
	put(c, o->nrecv, 4);
	for (uint32_t i = 0; i < o->nranks; i++) {
		put(c, o->rank[i].units, 8);
		put(c, o->rank[i].ranges, 8);
		put(c, o->rank[i].files, 8);
		put(c, o->rank[i].bytes_sent, 8);
	}
	for (uint32_t i = 0; i < o->nrecv; i++) {
		put(c, o->recv[i].files, 8);
		put(c, o->recv[i].bytes, 8);
		put(c, o->recv[i].bytes_sent, 8);
		put(c, o->recv[i].lost ? 1 : 0, 1);
	}
}

ssize_t pxfer_work_msg_encode(uint8_t *buf, size_t cap,
			      const struct pxfer_work_msg *m)
{
	size_t len = pxfer_work_msg_size(m);
	const struct pxfer_unit_result *r = &m->u.report;
	struct cur c = { .w = buf };

	if (len > PXFER_WORK_MSG_MAX || cap < PXFER_WORK_HDR_LEN + len)
		return -EMSGSIZE;
	put(&c, m->type, 2);
	put(&c, 0, 2);
	put(&c, len, 4);
	switch (m->type) {
	case PXFER_WORK_CHALLENGE:
		put(&c, m->u.challenge.magic, 4);
		put(&c, m->u.challenge.version, 2);
		put_bytes(&c, m->u.challenge.nonce, PXFER_WORK_NONCE_LEN);
		put_bytes(&c, m->u.challenge.job, 16);
		break;
	case PXFER_WORK_HELLO:
		put(&c, m->u.hello.version, 2);
		put(&c, m->u.hello.rank, 4);
		put_bytes(&c, m->u.hello.nonce, PXFER_WORK_NONCE_LEN);
		put_bytes(&c, m->u.hello.mac, PXFER_WORK_MAC_LEN);
		break;
	case PXFER_WORK_WELCOME:
		put_bytes(&c, m->u.welcome.mac, PXFER_WORK_MAC_LEN);
		break;
	case PXFER_WORK_REFUSE:
		put(&c, m->u.refuse, 4);
		break;
	case PXFER_WORK_PULL:
	case PXFER_WORK_LOST:
		put(&c, m->u.recv, 4);
		break;
	case PXFER_WORK_UNIT:
		put_unit(&c, &m->u.unit);
		break;
	case PXFER_WORK_REPORT:
		put(&c, r->id, 8);
		put(&c, (uint32_t)r->status, 4);
		put(&c, (uint32_t)r->again, 4);
		put(&c, (uint32_t)r->lost, 4);
		put(&c, r->files, 8);
		put(&c, r->files_failed, 8);
		put(&c, r->files_same, 8);
		put(&c, r->dirs, 8);
		put(&c, r->links, 8);
		put(&c, r->bytes, 8);
		put(&c, r->bytes_sent, 8);
		put(&c, r->bytes_same, 8);
		break;
	case PXFER_WORK_OUTCOME:
		put_outcome(&c, &m->u.outcome);
		break;
	case PXFER_WORK_WAIT:
	case PXFER_WORK_NODATA:
	case PXFER_WORK_ACK:
	case PXFER_WORK_END:
		break;
	default:
		return -EINVAL;
	}
	return (ssize_t)(PXFER_WORK_HDR_LEN + len);
}

int pxfer_work_hdr_decode(const uint8_t *p, size_t max, uint16_t *type,
			  uint32_t *len)
{
	*type = (uint16_t)pxfer_get_be(p, 2);
	*len = (uint32_t)pxfer_get_be(p + 4, 4);
	if (pxfer_get_be(p + 2, 2) || *type < 1 ||
	    *type > PXFER_WORK_TYPE_MAX || *len > max)
		return -EPROTO;
	return 0;
}

/* a string of @n bytes, no NUL inside, copied with its NUL; NULL: bad */
static char *get_str(struct cur *c, size_t n, int *nomem)
{
	char *s;

	if (c->left < n || memchr(c->r, 0, n)) {
		c->bad = 1;
		return NULL;
	}
	s = malloc(n + 1);
	if (!s) {
		*nomem = 1;
		return NULL;
	}
	memcpy(s, c->r, n);
	s[n] = '\0';
	c->r += n;
	c->left -= n;
	return s;
}

/* one entry, checked against the unit's kind; 0, -EPROTO or -ENOMEM */
static int get_entry(struct cur *c, uint8_t ukind, struct pxfer_unit_entry *e)
{
	size_t ls, lr, lt;
	int nomem = 0;

	e->kind = (uint8_t)get(c, 1);
	e->mode = (uint32_t)get(c, 4);
	e->size = get(c, 8);
	e->mtime_sec = (int64_t)get(c, 8);
	e->mtime_nsec = (uint32_t)get(c, 4);
	e->off = get(c, 8);
	e->len = get(c, 8);
	ls = get(c, 2);
	lr = get(c, 2);
	lt = get(c, 2);
	if (get(c, 4) || c->bad)
		return -EPROTO;
	if (e->mode > 07777 || e->mtime_nsec >= 1000000000u ||
	    ls == 0 || lr == 0 || ls > PXFER_PATH_MAX || lr > PXFER_PATH_MAX ||
	    lt > PXFER_PATH_MAX || (lt != 0) != (e->kind == PXFER_WALK_SYMLINK))
		return -EPROTO;
	switch (ukind) {
	case PXFER_UNIT_FILES:
		if ((e->kind != PXFER_WALK_FILE && e->kind != PXFER_WALK_SYMLINK) ||
		    e->off || e->len || (e->kind != PXFER_WALK_FILE && e->size))
			return -EPROTO;
		break;
	case PXFER_UNIT_RANGE:
		if (e->kind != PXFER_WALK_FILE || !e->len ||
		    e->off > e->size || e->len > e->size - e->off)
			return -EPROTO;
		break;
	default:
		if (e->kind != PXFER_WALK_DIR || e->size || e->off || e->len)
			return -EPROTO;
	}
	e->src = get_str(c, ls, &nomem);
	e->rel = e->src ? get_str(c, lr, &nomem) : NULL;
	e->target = e->rel ? get_str(c, lt, &nomem) : NULL;
	if (e->target)
		return 0;
	return nomem ? -ENOMEM : -EPROTO;
}

static int get_unit(struct cur *c, struct pxfer_unit *u)
{
	uint64_t sum = 0;
	uint32_t n;
	int ret;

	u->id = get(c, 8);
	u->recv = (uint32_t)get(c, 4);
	u->kind = (uint8_t)get(c, 1);
	n = (uint32_t)get(c, 4);
	u->bytes = get(c, 8);
	u->n = 0;
	u->e = NULL;
	if (c->bad || u->recv >= PXFER_WORK_RECV_MAX || !n ||
	    n > PXFER_WORK_UNIT_FILES_MAX ||
	    u->kind < PXFER_UNIT_FILES || u->kind > PXFER_UNIT_DIRS ||
	    (u->kind == PXFER_UNIT_RANGE && n != 1) ||
	    c->left / PXFER_WORK_ENTRY_FIXED < n)
		return -EPROTO;
	u->e = calloc(n, sizeof(*u->e));
	if (!u->e)
		return -ENOMEM;
	for (; u->n < n; u->n++) {
		struct pxfer_unit_entry *e = &u->e[u->n];
		uint64_t b;

		ret = get_entry(c, u->kind, e);
		if (ret) {
			/* what get_entry made of it: free it with the rest */
			u->n++;
			goto out_release;
		}
		b = u->kind == PXFER_UNIT_RANGE ? e->len :
		    e->kind == PXFER_WALK_FILE ? e->size : 0;
		if (sum + b < sum) {
			u->n++;
			ret = -EPROTO;
			goto out_release;
		}
		sum += b;
	}
	if (sum == u->bytes)
		return 0;
	ret = -EPROTO;
out_release:
	pxfer_unit_release(u);
	return ret;
}

static int get_outcome(struct cur *c, struct pxfer_job_outcome *o)
{
	o->status = (int32_t)get(c, 4);
	o->files = get(c, 8);
	o->files_failed = get(c, 8);
	o->files_same = get(c, 8);
	o->files_skipped = get(c, 8);
	o->dirs = get(c, 8);
	o->links = get(c, 8);
	o->bytes = get(c, 8);
	o->bytes_sent = get(c, 8);
	o->bytes_same = get(c, 8);
	o->units = get(c, 8);
	o->units_again = get(c, 8);
	o->nranks = (uint32_t)get(c, 4);
	o->nrecv = (uint32_t)get(c, 4);
	o->rank = NULL;
	o->recv = NULL;
	if (c->bad || !o->nranks || o->nranks > PXFER_WORK_RANKS_MAX ||
	    !o->nrecv || o->nrecv > PXFER_WORK_RECV_MAX ||
	    o->status < 0 || o->status > 255 ||
	    c->left != (size_t)o->nranks * RANK_LEN +
		       (size_t)o->nrecv * RECV_LEN)
		return -EPROTO;
	o->rank = calloc(o->nranks, sizeof(*o->rank));
	o->recv = calloc(o->nrecv, sizeof(*o->recv));
	if (!o->rank || !o->recv) {
		pxfer_job_outcome_release(o);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < o->nranks; i++) {
		o->rank[i].units = get(c, 8);
		o->rank[i].ranges = get(c, 8);
		o->rank[i].files = get(c, 8);
		o->rank[i].bytes_sent = get(c, 8);
	}
	for (uint32_t i = 0; i < o->nrecv; i++) {
		uint64_t lost;

		o->recv[i].files = get(c, 8);
		o->recv[i].bytes = get(c, 8);
		o->recv[i].bytes_sent = get(c, 8);
		lost = get(c, 1);
		if (lost > 1) {
			pxfer_job_outcome_release(o);
			return -EPROTO;
		}
		o->recv[i].lost = (int)lost;
	}
	return 0;
}

static int get_report(struct cur *c, struct pxfer_unit_result *r)
{
	r->id = get(c, 8);
	r->status = (int32_t)get(c, 4);
	r->again = (int32_t)get(c, 4);
	r->lost = (int32_t)get(c, 4);
	r->files = get(c, 8);
	r->files_failed = get(c, 8);
	r->files_same = get(c, 8);
	r->dirs = get(c, 8);
	r->links = get(c, 8);
	r->bytes = get(c, 8);
	r->bytes_sent = get(c, 8);
	r->bytes_same = get(c, 8);
	if (r->status < 0 || r->status > 255 || (uint32_t)r->again > 1 ||
	    (uint32_t)r->lost > 1)
		return -EPROTO;
	return 0;
}

int pxfer_work_msg_decode(uint16_t type, const uint8_t *b, size_t len,
			  struct pxfer_work_msg *m)
{
	struct cur c = { .r = b, .left = len };
	int ret = 0;

	memset(m, 0, sizeof(*m));
	m->type = type;
	switch (type) {
	case PXFER_WORK_CHALLENGE:
		m->u.challenge.magic = (uint32_t)get(&c, 4);
		m->u.challenge.version = (uint16_t)get(&c, 2);
		get_bytes(&c, m->u.challenge.nonce, PXFER_WORK_NONCE_LEN);
		get_bytes(&c, m->u.challenge.job, 16);
		break;
	case PXFER_WORK_HELLO:
		m->u.hello.version = (uint16_t)get(&c, 2);
		m->u.hello.rank = (uint32_t)get(&c, 4);
		get_bytes(&c, m->u.hello.nonce, PXFER_WORK_NONCE_LEN);
		get_bytes(&c, m->u.hello.mac, PXFER_WORK_MAC_LEN);
		break;
	case PXFER_WORK_WELCOME:
		get_bytes(&c, m->u.welcome.mac, PXFER_WORK_MAC_LEN);
		break;
	case PXFER_WORK_REFUSE:
		m->u.refuse = (uint32_t)get(&c, 4);
		if (!m->u.refuse || m->u.refuse > 4095)
			ret = -EPROTO;
		break;
	case PXFER_WORK_PULL:
	case PXFER_WORK_LOST:
		m->u.recv = (uint32_t)get(&c, 4);
		if (m->u.recv >= PXFER_WORK_RECV_MAX)
			ret = -EPROTO;
		break;
	case PXFER_WORK_UNIT:
		ret = get_unit(&c, &m->u.unit);
		break;
	case PXFER_WORK_REPORT:
		ret = get_report(&c, &m->u.report);
		break;
	case PXFER_WORK_OUTCOME:
		ret = get_outcome(&c, &m->u.outcome);
		break;
	case PXFER_WORK_WAIT:
	case PXFER_WORK_NODATA:
	case PXFER_WORK_ACK:
	case PXFER_WORK_END:
		break;
	default:
		return -EPROTO;
	}
	if (!ret && (c.bad || c.left)) {
		pxfer_work_msg_release(m);
		ret = -EPROTO;
	}
	if (ret) {
		memset(m, 0, sizeof(*m));
		m->type = type;
	}
	return ret;
}

/* ---- the handshake ---------------------------------------------------- */

static void mac_begin(crypto_auth_hmacsha256_state *st, const uint8_t *key,
		      size_t keylen, const char *label)
{
	crypto_auth_hmacsha256_init(st, key, keylen);
	crypto_auth_hmacsha256_update(st, (const uint8_t *)label,
				      strlen(label) + 1);
}

void pxfer_work_hello_mac(const uint8_t *secret, size_t secret_len,
			  const uint8_t *nonce_s, const uint8_t *nonce_c,
			  const uint8_t *job, uint32_t rank, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;
	uint8_t r[4];

	mac_begin(&st, secret, secret_len, "pxfer work hello");
	crypto_auth_hmacsha256_update(&st, nonce_s, PXFER_WORK_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_c, PXFER_WORK_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, job, 16);
	pxfer_put_be(r, rank, 4);
	crypto_auth_hmacsha256_update(&st, r, 4);
	crypto_auth_hmacsha256_final(&st, mac);
}

void pxfer_work_welcome_mac(const uint8_t *secret, size_t secret_len,
			    const uint8_t *nonce_s, const uint8_t *nonce_c,
			    const uint8_t *job, uint32_t rank,
			    const uint8_t *mac_c, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;
	uint8_t r[4];

	mac_begin(&st, secret, secret_len, "pxfer work welcome");
	crypto_auth_hmacsha256_update(&st, nonce_c, PXFER_WORK_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_s, PXFER_WORK_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, job, 16);
	pxfer_put_be(r, rank, 4);
	crypto_auth_hmacsha256_update(&st, r, 4);
	crypto_auth_hmacsha256_update(&st, mac_c, PXFER_WORK_MAC_LEN);
	crypto_auth_hmacsha256_final(&st, mac);
}

/* HKDF-SHA256 (RFC 5869) of one block: extract, then expand @info */
void pxfer_work_keys(const uint8_t *secret, size_t secret_len,
		     const uint8_t *nonce_s, const uint8_t *nonce_c,
		     uint8_t *c2s, uint8_t *s2c)
{
	static const char *const info[2] = { "pxfer work c2s", "pxfer work s2c" };
	uint8_t *out[2] = { c2s, s2c };
	uint8_t salt[2 * PXFER_WORK_NONCE_LEN], prk[PXFER_WORK_KEY_LEN];
	crypto_auth_hmacsha256_state st;
	const uint8_t one = 1;

	memcpy(salt, nonce_s, PXFER_WORK_NONCE_LEN);
	memcpy(salt + PXFER_WORK_NONCE_LEN, nonce_c, PXFER_WORK_NONCE_LEN);
	crypto_auth_hmacsha256_init(&st, salt, sizeof(salt));
	crypto_auth_hmacsha256_update(&st, secret, secret_len);
	crypto_auth_hmacsha256_final(&st, prk);
	for (int i = 0; i < 2; i++) {
		crypto_auth_hmacsha256_init(&st, prk, sizeof(prk));
		crypto_auth_hmacsha256_update(&st, (const uint8_t *)info[i],
					      strlen(info[i]));
		crypto_auth_hmacsha256_update(&st, &one, 1);
		crypto_auth_hmacsha256_final(&st, out[i]);
	}
	sodium_memzero(prk, sizeof(prk));
	sodium_memzero(&st, sizeof(st));
}

void pxfer_work_frame_mac(const uint8_t *key, char dir, uint64_t seq,
			  const uint8_t *f, size_t len, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;
	uint8_t head[9];

	head[0] = (uint8_t)dir;
	pxfer_put_be(head + 1, seq, 8);
	mac_begin(&st, key, PXFER_WORK_KEY_LEN, "pxfer work message");
	crypto_auth_hmacsha256_update(&st, head, sizeof(head));
	crypto_auth_hmacsha256_update(&st, f, len);
	crypto_auth_hmacsha256_final(&st, mac);
}

void pxfer_work_keepalive(int fd)
{
	pxfer_sock_keepalive(fd, 10, 5, 4, 30000);
}
