/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: pxfer_path_check, the lexical gate every wire path passes
 * before the receiver resolves it. The input becomes the path, with the
 * NUL the contract asks for right after its last byte (an input holding a
 * NUL is a path whose strlen is not its length, which must be refused).
 * Oracle, written from path.h alone: the check accepts exactly the paths
 * of 1..PXFER_PATH_MAX bytes, without NUL, made of '/'-separated
 * components of 1..PXFER_NAME_MAX bytes none of which is "." or "..";
 * a path over PXFER_PATH_MAX without NUL is -ENAMETOOLONG, any other
 * refusal -EINVAL.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "core/proto.h"
#include "recv/path.h"
#include "fuzz.h"

static bool component_ok(const uint8_t *c, size_t n)
{
	if (n < 1 || n > PXFER_NAME_MAX)
		return false;
	return !(n == 1 && c[0] == '.') &&
	       !(n == 2 && c[0] == '.' && c[1] == '.');
}

static bool path_ok(const uint8_t *p, size_t len)
{
	size_t i, start = 0;

	if (len < 1 || len > PXFER_PATH_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (p[i] == '\0')
			return false;
	/* each '/' ends a component, and so does the end of the path */
	for (i = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		if (!component_ok(p + start, i - start))
			return false;
		start = i + 1;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = malloc(size + 1);
	bool ok = path_ok(data, size);
	int ret;

	FUZZ_CHECK(path);
	memcpy(path, data, size);
	path[size] = '\0';
	ret = pxfer_path_check(path, size);
	if (ok)
		FUZZ_CHECK(ret == 0);
	else if (size > PXFER_PATH_MAX && !memchr(data, '\0', size))
		FUZZ_CHECK(ret == -ENAMETOOLONG);
	else
		FUZZ_CHECK(ret == -EINVAL);
	free(path);
	return 0;
}
