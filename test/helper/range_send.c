// SPDX-License-Identifier: MIT
/*
 * range_send - one send session whose source hands out one entry: a
 * range of a file, for a job, as a rank of a scale-out job would.
 *
 *	range_send [-v] [-V] [-T] [-j WORKERS] [-c CHUNK] HOST PORT FILE OFF LEN JOB
 *
 * Sends bytes [OFF, OFF + LEN) of FILE (named on the receiver by its
 * last component) in a FILE with PXFER_FILE_RANGE for job JOB (up to 32
 * hex digits), the secret from $PXFER_SECRET. -v: the session's verbose
 * lines; -V: --verify; -T: --resume trust; -j, -c: workers, chunk size
 * in bytes. Prints "range: code C again A bytes B": how the entry ended
 * (the source's ended call), and exits 0 when it is done, 3 when it
 * wants another session (the receiver was busy with it), 1 when it
 * failed or never ended, 2 on bad usage.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pxfer/pxfer.h"
#include "core/auth.h"
#include "core/log.h"
#include "send/sender.h"
#include "send/source.h"

struct one_range {
	struct send_source b;
	struct pxfer_walk_entry e;
	int given, ended, code, again;
	uint64_t bytes;
};

static int next(struct send_source *src, struct pxfer_walk_entry *e)
{
	struct one_range *r = (struct one_range *)src;

	if (r->given)
		return 0;
	r->given = 1;
	*e = r->e;
	return 1;
}

static void ended(struct send_source *src, uint64_t tag,
		  const struct send_ended *how)
{
	struct one_range *r = (struct one_range *)src;

	r->ended++;
	r->code = how->code;
	r->again = how->again;
	r->bytes = how->bytes;
}

static const struct send_source_ops ops = { .next = next, .ended = ended };

static int usage(void)
{
	fprintf(stderr, "usage: range_send [-v] [-V] [-T] [-j WORKERS] [-c CHUNK] HOST PORT FILE OFF LEN JOB\n");
	return 2;
}

static int parse_job(const char *s, uint8_t job[PXFER_JOB_ID_LEN])
{
	size_t n = strlen(s);

	if (!n || n > 2 * PXFER_JOB_ID_LEN || n % 2)
		return -1;
	memset(job, 0, PXFER_JOB_ID_LEN);
	for (size_t i = 0; i < n; i += 2) {
		unsigned int b;

		if (sscanf(s + i, "%2x", &b) != 1)
			return -1;
		job[i / 2] = (uint8_t)b;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct pxfer_send_opts o;
	struct pxfer_stats st = { 0 };
	struct send_pass p = { 0 };
	struct one_range r = { .b.ops = &ops };
	struct pxfer_log log;
	char *path, *copy;
	int i = 1, code;

	pxfer_send_opts_init(&o);
	o.verbose = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v"))
			o.verbose = 2;
		else if (!strcmp(argv[i], "-V"))
			o.verify = 1;
		else if (!strcmp(argv[i], "-T"))
			o.resume_trust = 1;
		else if (!strcmp(argv[i], "-j") && i + 1 < argc)
			o.workers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			o.chunk_size = (uint32_t)strtoul(argv[++i], NULL, 0);
		else
			return usage();
	}
	if (argc - i != 6)
		return usage();
	o.host = argv[i];
	o.port = argv[i + 1];
	path = argv[i + 2];
	r.e.range_off = strtoull(argv[i + 3], NULL, 0);
	r.e.range_len = strtoull(argv[i + 4], NULL, 0);
	if (parse_job(argv[i + 5], r.b.job) || !r.e.range_len)
		return usage();
	if (pxfer_secret_load(&o.secret, NULL)) {
		fprintf(stderr, "range_send: no secret ($PXFER_SECRET)\n");
		return 2;
	}
	copy = strdup(path);
	if (!copy || stat(path, &r.e.st)) {
		perror(path);
		return 1;
	}
	r.e.kind = PXFER_WALK_FILE;
	r.e.src = path;
	r.e.rel = basename(copy);
	r.e.fd = -1;
	r.e.tag = 1;
	p.source = &r.b;
	if (pxfer_auth_init() || pxfer_log_init(&log, NULL, NULL, o.verbose))
		return 1;
	pxfer_log_attach(&log);
	code = send_session_run(&o, &st, &p);
	pxfer_log_attach(NULL);
	pxfer_log_release(&log);
	printf("range: code %d again %d bytes %llu session %d\n", r.code,
	       r.again, (unsigned long long)r.bytes, code);
	free(copy);
	if (r.ended != 1)
		return 1;
	if (r.again)
		return 3;
	return r.code ? 1 : 0;
}
