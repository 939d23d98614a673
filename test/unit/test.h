/* SPDX-License-Identifier: MIT */
/*
 * Tiny helpers for the unit test programs: each test is one program that
 * exits 0 (pass), 1 (fail) or 77 (skipped).
 */
#ifndef PXFER_TEST_H
#define PXFER_TEST_H

#include <stdio.h>

#define T_SKIP 77

static int t_failures;

/* Record a failed expectation; the test goes on so all failures show. */
#define T_EXPECT(cond, ...) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: expected %s: ", __FILE__,	\
			__LINE__, #cond);				\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		t_failures++;						\
	}								\
} while (0)

static inline int t_result(void)
{
	if (t_failures)
		fprintf(stderr, "%d expectation(s) failed\n", t_failures);
	return t_failures ? 1 : 0;
}

#endif
