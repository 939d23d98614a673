/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: pxfer_work_msg_decode, the work service's one decoder, for
 * every message type (the first input byte is the type, the rest is the
 * body), and pxfer_work_hdr_decode on the first bytes. Oracle: what
 * decodes keeps the decoder's promises (a unit's kind, entries and bytes
 * agree; strings end at their NUL; an outcome's arrays are there), and
 * encodes back to exactly the body decoded, behind a header that
 * pxfer_work_hdr_decode accepts.
 */
#include <errno.h>
#include <string.h>

#include "api/work_wire.h"
#include "fuzz.h"
#include "send/walk.h"

static void check_unit(const struct pxfer_unit *u)
{
	uint64_t sum = 0;

	FUZZ_CHECK(u->n >= 1 && u->n <= PXFER_WORK_UNIT_FILES_MAX && u->e);
	FUZZ_CHECK(u->kind >= PXFER_UNIT_FILES && u->kind <= PXFER_UNIT_DIRS);
	FUZZ_CHECK(u->kind != PXFER_UNIT_RANGE || u->n == 1);
	for (unsigned int i = 0; i < u->n; i++) {
		const struct pxfer_unit_entry *e = &u->e[i];

		FUZZ_CHECK(e->src && e->rel && e->target);
		FUZZ_CHECK(e->src[0] && e->rel[0]);
		FUZZ_CHECK((e->target[0] != 0) == (e->kind == PXFER_WALK_SYMLINK));
		FUZZ_CHECK(e->mode <= 07777 && e->mtime_nsec < 1000000000u);
		if (u->kind == PXFER_UNIT_DIRS)
			FUZZ_CHECK(e->kind == PXFER_WALK_DIR);
		if (u->kind == PXFER_UNIT_RANGE)
			FUZZ_CHECK(e->len && e->off + e->len >= e->off &&
				   e->off + e->len <= e->size);
		sum += u->kind == PXFER_UNIT_RANGE ? e->len :
		       e->kind == PXFER_WALK_FILE ? e->size : 0;
	}
	FUZZ_CHECK(sum == u->bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pxfer_work_msg m;
	uint8_t *frame;
	uint16_t type;
	uint32_t len;
	ssize_t n;
	int ret;

	if (size >= PXFER_WORK_HDR_LEN &&
	    pxfer_work_hdr_decode(data, PXFER_WORK_MSG_MAX, &type, &len) == 0)
		FUZZ_CHECK(type >= 1 && type <= PXFER_WORK_TYPE_MAX &&
			   len <= PXFER_WORK_MSG_MAX);
	if (size < 1)
		return 0;
	ret = pxfer_work_msg_decode(data[0], data + 1, size - 1, &m);
	FUZZ_CHECK(ret == 0 || ret == -EPROTO || ret == -ENOMEM);
	if (ret)
		return 0;
	FUZZ_CHECK(m.type == data[0] && m.type >= 1 &&
		   m.type <= PXFER_WORK_TYPE_MAX);
	if (m.type == PXFER_WORK_UNIT)
		check_unit(&m.u.unit);
	if (m.type == PXFER_WORK_OUTCOME)
		FUZZ_CHECK(m.u.outcome.rank && m.u.outcome.recv &&
			   m.u.outcome.nranks && m.u.outcome.nrecv);
	FUZZ_CHECK(pxfer_work_msg_size(&m) == size - 1);
	frame = malloc(PXFER_WORK_HDR_LEN + size - 1);
	FUZZ_CHECK(frame);
	FUZZ_CHECK(pxfer_work_msg_encode(frame, PXFER_WORK_HDR_LEN + size - 2,
					 &m) == -EMSGSIZE);
	n = pxfer_work_msg_encode(frame, PXFER_WORK_HDR_LEN + size - 1, &m);
	FUZZ_CHECK(n == (ssize_t)(PXFER_WORK_HDR_LEN + size - 1));
	FUZZ_CHECK(!memcmp(frame + PXFER_WORK_HDR_LEN, data + 1, size - 1));
	FUZZ_CHECK(pxfer_work_hdr_decode(frame, PXFER_WORK_MSG_MAX, &type,
					 &len) == 0 &&
		   type == m.type && len == size - 1);
	free(frame);
	pxfer_work_msg_release(&m);
	return 0;
}
