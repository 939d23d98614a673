/* SPDX-License-Identifier: MIT */
/*
 * A job: the processes a launcher (srun --mpi=pmix, Open MPI's mpirun, any
 * PMIx launcher) started together to make one transfer (docs/scaleout.md).
 * Each learns its rank and the job's size from the launcher's PMIx server,
 * rank 0 publishes a value (where the others reach it) and every rank
 * reads it after a fence. Run without a launcher, a process is rank 0 of
 * a job of 1, and nothing here talks to anyone.
 *
 *	struct pxfer_job j;
 *	char where[64];
 *
 *	if (pxfer_job_init(&j) < 0)
 *		...;
 *	if (j.rank == 0)
 *		pxfer_job_publish(&j, "pxfer.work", "10.0.0.1:7000");
 *	pxfer_job_fence(&j);
 *	pxfer_job_lookup(&j, 0, "pxfer.work", where, sizeof(where));
 *	...
 *	pxfer_job_finalize(&j);
 *
 * A job is one per process (PMIx's client is), used from one thread.
 */
#ifndef PXFER_JOB_H
#define PXFER_JOB_H

#include <stddef.h>
#include <stdint.h>

/* who started the process, as the environment and the server tell */
enum pxfer_job_launcher {
	PXFER_JOB_ALONE,	/* no launcher: rank 0 of 1 */
	PXFER_JOB_SLURM,	/* srun --mpi=pmix (Slurm's pmix plugin) */
	PXFER_JOB_OMPI,		/* Open MPI's mpirun */
	PXFER_JOB_PMIX,		/* another PMIx launcher (prterun, ...) */
};

/* the longest key and value pxfer_job_publish takes (with its NUL) */
#define PXFER_JOB_KEY_MAX	64
#define PXFER_JOB_VALUE_MAX	256

struct pxfer_job {
	enum pxfer_job_launcher launcher;
	uint32_t rank;			/* 0 .. size - 1 */
	uint32_t size;			/* processes in the job, >= 1 */
	int fence_timeout_s;		/* 0: a fence waits as long as the
					 * launcher lets it */
	char nspace[256];		/* the job's PMIx namespace */
	/* alone: what pxfer_job_publish stored, for pxfer_job_lookup */
	char key[PXFER_JOB_KEY_MAX];
	char value[PXFER_JOB_VALUE_MAX];
};

/*
 * pxfer_job_getenv_fn - how the environment looks a variable up (getenv, or a
 * test's table)
 */
typedef const char *pxfer_job_getenv_fn(void *arg, const char *name);

/*
 * pxfer_job_detect - which launcher the environment names, before any
 * PMIx call: j->launcher, and for PXFER_JOB_ALONE rank 0 of 1. -EINVAL,
 * with a message that says what to do, when the environment is not one
 * launcher's whole: a Slurm step of several tasks without PMIx (srun
 * without --mpi=pmix), part of a PMIx server's variables, mpirun inside an
 * srun --mpi=pmix step, several processes of a PMI-1 or PMI-2 launcher.
 */
int pxfer_job_detect(struct pxfer_job *j, pxfer_job_getenv_fn *get, void *arg);

/*
 * pxfer_job_init - join the job the process was started in: detect, and
 * under a launcher connect to its PMIx server, learn rank and size, and
 * check them against what the launcher's own variables say (a rank count
 * they disagree on is -EINVAL). 0 or -errno, with a message; on error
 * nothing is left to finalize.
 */
int pxfer_job_init(struct pxfer_job *j);

/*
 * pxfer_job_check - the rank and size in @j (the server's) are those the
 * launcher's own variables name, where it set them: PMIX_RANK, and
 * OMPI_COMM_WORLD_SIZE and _RANK under mpirun, SLURM_STEP_NUM_TASKS and
 * SLURM_PROCID under srun. 0 or -EINVAL with a message naming both.
 */
int pxfer_job_check(const struct pxfer_job *j, pxfer_job_getenv_fn *get,
		    void *arg);

/*
 * pxfer_job_publish - make @value visible to every rank under @key, from
 * the next fence on (PMIx_Put and PMIx_Commit). 0 or -errno (-E2BIG: the
 * key or value is too long).
 */
int pxfer_job_publish(struct pxfer_job *j, const char *key, const char *value);

/*
 * pxfer_job_fence - wait until every rank of the job has come here (the
 * values published before it are then readable). 0 or -errno
 * (-ETIMEDOUT after j->fence_timeout_s, where the server honours it).
 */
int pxfer_job_fence(struct pxfer_job *j);

/*
 * pxfer_job_lookup - the value @rank published under @key, into @buf of
 * @len bytes. 0 or -errno: -ENOENT none, -E2BIG it does not fit, -EPROTO
 * it is not a string.
 */
int pxfer_job_lookup(struct pxfer_job *j, uint32_t rank, const char *key,
		     char *buf, size_t len);

/* pxfer_job_finalize - leave the job (disconnect from the server) */
void pxfer_job_finalize(struct pxfer_job *j);

/* pxfer_job_launcher_name - "srun", "mpirun", ... for messages */
const char *pxfer_job_launcher_name(enum pxfer_job_launcher l);

#endif
