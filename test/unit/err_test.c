// SPDX-License-Identifier: MIT
/*
 * err_test: struct pxfer_err (src/core/err.c), the reason a call failed
 * in words. pxfer_err_set records the code and the formatted message and
 * returns -code; NULL records nothing and still returns it; a note on
 * success (code 0) keeps its words; a message too long is cut, never
 * overflows; pxfer_err_msg is never NULL: the message, else strerror of
 * the code, else ""; pxfer_err_clear forgets both.
 */
#include <errno.h>
#include <string.h>

#include "core/err.h"
#include "test.h"

static void test_set(void)
{
	struct pxfer_err e;

	pxfer_err_clear(&e);
	T_EXPECT(e.code == 0 && !strcmp(pxfer_err_msg(&e), ""),
		 "cleared: code %d, msg '%s'", e.code, pxfer_err_msg(&e));
	T_EXPECT(pxfer_err_set(&e, ENODEV, "no RDMA device named '%s'", "rxe9") == -ENODEV,
		 "set returns -code");
	T_EXPECT(e.code == ENODEV, "code %d", e.code);
	T_EXPECT(!strcmp(pxfer_err_msg(&e), "no RDMA device named 'rxe9'"),
		 "msg '%s'", pxfer_err_msg(&e));
	/* the last set is what is recorded */
	pxfer_err_set(&e, EINVAL, "port %u", 3u);
	T_EXPECT(e.code == EINVAL && !strcmp(e.msg, "port 3"), "reset: %d '%s'",
		 e.code, e.msg);
	pxfer_err_clear(&e);
	T_EXPECT(e.code == 0 && !e.msg[0], "cleared again");
}

static void test_null_and_note(void)
{
	struct pxfer_err e;

	T_EXPECT(pxfer_err_set(NULL, EPROTO, "%s", "nobody reads this") == -EPROTO,
		 "NULL still returns -code");
	T_EXPECT(!strcmp(pxfer_err_msg(NULL), ""), "msg of NULL");
	T_EXPECT(pxfer_err_set(&e, 0, "device %s GID index %d", "rxe0", 1) == 0,
		 "a note returns 0");
	T_EXPECT(e.code == 0 && !strcmp(pxfer_err_msg(&e), "device rxe0 GID index 1"),
		 "note '%s'", pxfer_err_msg(&e));
}

static void test_strerror(void)
{
	struct pxfer_err e = { .code = ENOMEM };

	T_EXPECT(!strcmp(pxfer_err_msg(&e), strerror(ENOMEM)),
		 "no message: strerror, got '%s'", pxfer_err_msg(&e));
}

static void test_cut(void)
{
	struct pxfer_err e;
	char big[2 * PXFER_ERR_MSG];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	T_EXPECT(pxfer_err_set(&e, E2BIG, "%s", big) == -E2BIG, "long: -code");
	T_EXPECT(strlen(e.msg) == PXFER_ERR_MSG - 1, "cut to %zu, got %zu",
		 (size_t)PXFER_ERR_MSG - 1, strlen(e.msg));
	/* room for today's longest message, the memlock limit's */
	T_EXPECT(PXFER_ERR_MSG >= 400, "room %d", PXFER_ERR_MSG);
}

int main(void)
{
	test_set();
	test_null_and_note();
	test_strerror();
	test_cut();
	return t_result();
}
