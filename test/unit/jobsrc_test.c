/* SPDX-License-Identifier: MIT */
/*
 * jobsrc_test: what a rank of a job agrees to read (src/api/jobsrc.c).
 * Rank 0 hands out paths its walk made from the PATHs every rank was
 * given; a rank reads one only when it is one of its own PATHs or below
 * one, without "..":
 *  - a PATH itself, and names below it, with or without a trailing '/';
 *  - not another path that only starts with the same bytes ("a/bc" for
 *    "a/b"), not a path that climbs out ("a/b/../../etc"), not one of no
 *    PATH at all ("/etc/shadow");
 *  - "." and "/" as PATHs, and a name that merely starts with two dots.
 */
#include "api/jobsrc.h"
#include "test.h"

static void expect(char *const *roots, int n, const char *src, int want)
{
	T_EXPECT(pxfer_jsrc_allowed(roots, n, src) == want, "'%s' %s", src,
		 want ? "refused" : "allowed");
}

int main(void)
{
	char *const ab[] = { "a/b", "/data/run/" };
	char *const dot[] = { "." };
	char *const top[] = { "/" };

	expect(ab, 2, "a/b", 1);
	expect(ab, 2, "a/b/x", 1);
	expect(ab, 2, "a/b/x/y z", 1);
	expect(ab, 2, "/data/run/f", 1);
	expect(ab, 2, "/data/run/..x/f", 1);
	expect(ab, 2, "a/bc", 0);
	expect(ab, 2, "a/bc/x", 0);
	expect(ab, 2, "a", 0);
	expect(ab, 2, "a/b/../../etc/shadow", 0);
	expect(ab, 2, "a/b/..", 0);
	expect(ab, 2, "/data/run/../secret", 0);
	expect(ab, 2, "/data/runs/f", 0);
	expect(ab, 2, "/etc/shadow", 0);
	expect(ab, 2, "", 0);
	expect(ab, 0, "a/b", 0);
	expect(dot, 1, "./x", 1);
	expect(dot, 1, "./../x", 0);
	expect(dot, 1, "/x", 0);
	expect(top, 1, "/etc/x", 1);
	expect(top, 1, "/../x", 0);
	return t_result();
}
