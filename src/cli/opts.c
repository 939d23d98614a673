// SPDX-License-Identifier: MIT
/* pxfer: parsing the values of options, and the shared secret. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxfer/pxfer.h"
#include "cli.h"
#include "core/log.h"

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 0: break;
	default: return -EINVAL;
	}
	if (*end == 'i' && shift)
		end++;
	if ((*end == 'B' || *end == 'b') && shift)
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int cli_parse_uint(const char *s, unsigned long min, unsigned long max,
		   unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

const char *const cli_transports[] = { "auto", "rdma", "tcp", NULL };
const char *const cli_io_kinds[] = { "auto", "uring", "sync", NULL };

int cli_choice(const char *opt, const char *arg, const char *const *choices)
{
	char list[128] = "";
	size_t n = 0;

	for (int i = 0; choices[i]; i++) {
		if (!strcmp(arg, choices[i]))
			return 0;
		n += snprintf(list + n, sizeof(list) - n, "%s%s",
			      i ? (choices[i + 1] ? ", " : " or ") : "", choices[i]);
	}
	return error("%s takes %s, not '%s'", opt, list, arg);
}

int cli_parse_gid(const char *arg, int *out)
{
	unsigned long g;

	if (cli_parse_uint(arg, 0, 65535, &g))
		return error("--gid-index takes a GID table index, not '%s'", arg);
	*out = g;
	return 0;
}

int cli_load_secret(struct pxfer_secret *s, const char *file, int generate)
{
	int ret = pxfer_secret_load(s, file);

	if (ret == -ENOENT && !file && generate) {
		ret = pxfer_secret_generate(s);
		if (ret)
			return error("cannot generate a secret: %s", strerror(-ret));
		info("pxfer: no secret given; generated one for this receiver. On the sender run:\n"
		     "  export %s=%.*s", PXFER_SECRET_ENV, (int)s->len,
		     (const char *)s->key);
		return 0;
	}
	if (ret == -ENOENT && !file)
		return error("no shared secret: set %s to the receiver's token, or pass --secret-file FILE",
			     PXFER_SECRET_ENV);
	if (ret == -EINVAL)
		return error("the secret%s%s%s is too short: use at least %d characters",
			     file ? " in '" : " in $" PXFER_SECRET_ENV,
			     file ? file : "", file ? "'" : "", PXFER_SECRET_MIN);
	if (ret == -E2BIG)
		return error("the secret is longer than %d bytes", PXFER_SECRET_MAX);
	if (ret)
		return error("cannot read the secret from '%s': %s", file,
			     strerror(-ret));
	return 0;
}
