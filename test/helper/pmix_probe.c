// SPDX-License-Identifier: MIT
/*
 * pmix_probe - join the job a launcher started (src/api/job.c) and say
 * what this rank learnt.
 *
 *	pmix_probe [VALUE]
 *
 * Rank 0 publishes VALUE (default "rank0-<pid>") under "pxfer.probe",
 * every rank fences, reads rank 0's value and prints one line:
 *
 *	rank R size S value VALUE launcher NAME
 *
 * then fences again and leaves. Run alone it prints rank 0 size 1.
 * Used by test/e2e/launch.sh under srun --mpi=pmix and mpirun.
 *
 * Exit status: 0 done, 2 the environment is not one launcher's (a usage
 * error, as pxfer_job_init says), 1 anything else.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/job.h"

#define KEY "pxfer.probe"

int main(int argc, char **argv)
{
	struct pxfer_job j;
	char mine[64], seen[PXFER_JOB_VALUE_MAX];
	const char *value = argc > 1 ? argv[1] : mine;
	int ret;

	if (argc > 2) {
		fprintf(stderr, "usage: pmix_probe [VALUE]\n");
		return 2;
	}
	snprintf(mine, sizeof(mine), "rank0-%ld", (long)getpid());
	ret = pxfer_job_init(&j);
	if (ret < 0)
		return ret == -EINVAL ? 2 : 1;
	j.fence_timeout_s = 60;
	if (j.rank == 0) {
		ret = pxfer_job_publish(&j, KEY, value);
		if (ret < 0) {
			fprintf(stderr, "pmix_probe: publish: %s\n", strerror(-ret));
			goto out;
		}
	}
	ret = pxfer_job_fence(&j);
	if (ret < 0)
		goto out;
	ret = pxfer_job_lookup(&j, 0, KEY, seen, sizeof(seen));
	if (ret < 0) {
		fprintf(stderr, "pmix_probe: rank %" PRIu32 ": rank 0's '%s': %s\n",
			j.rank, KEY, strerror(-ret));
		goto out;
	}
	printf("rank %" PRIu32 " size %" PRIu32 " value %s launcher %s\n",
	       j.rank, j.size, seen, pxfer_job_launcher_name(j.launcher));
	fflush(stdout);
	ret = pxfer_job_fence(&j);
out:
	pxfer_job_finalize(&j);
	return ret < 0 ? 1 : 0;
}
