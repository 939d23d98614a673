/* SPDX-License-Identifier: MIT */
/*
 * job_test: how a job's launcher is told from the environment
 * (pxfer_job_detect, src/api/job.c) and how what its PMIx server says is
 * checked against the launcher's own variables (pxfer_job_check), on
 * environments written here: no launcher is rank 0 of 1; srun --mpi=pmix,
 * mpirun and another PMIx launcher are told apart; srun's several tasks
 * without PMIx, a PMI-1 or PMI-2 launcher's several processes, half a
 * PMIx environment, mpirun inside an srun --mpi=pmix step and a size or
 * rank the variables disagree on are usage errors.
 * What the server itself does is test/e2e/launch.sh's.
 */
#include <errno.h>
#include <string.h>

#include "api/job.h"
#include "test.h"

/* an environment: "NAME=VALUE" strings, NULL-terminated */
static const char *lookup(void *arg, const char *name)
{
	const char *const *env = arg;
	size_t n = strlen(name);

	for (; *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

#define PMIX_ENV(rank) "PMIX_NAMESPACE=ns.1", "PMIX_RANK=" rank,	\
	"PMIX_SERVER_URI4=pmix-server.1;tcp4://127.0.0.1:1"

static void detect(const char *what, const char **env, int want_ret,
		   enum pxfer_job_launcher want)
{
	struct pxfer_job j;
	int ret = pxfer_job_detect(&j, lookup, env);

	T_EXPECT(ret == want_ret, "%s: returned %d, want %d", what, ret, want_ret);
	if (ret == 0 && want_ret == 0)
		T_EXPECT(j.launcher == want, "%s: launcher %s, want %s", what,
			 pxfer_job_launcher_name(j.launcher),
			 pxfer_job_launcher_name(want));
	if (ret == 0 && want == PXFER_JOB_ALONE)
		T_EXPECT(j.rank == 0 && j.size == 1, "%s: rank %u of %u, want 0 of 1",
			 what, j.rank, j.size);
}

static void check(const char *what, const char **env, uint32_t rank,
		  uint32_t size, int want_ret)
{
	struct pxfer_job j;
	int ret = pxfer_job_detect(&j, lookup, env);

	T_EXPECT(ret == 0, "%s: detect returned %d", what, ret);
	j.rank = rank;
	j.size = size;
	ret = pxfer_job_check(&j, lookup, env);
	T_EXPECT(ret == want_ret, "%s: check returned %d, want %d", what, ret,
		 want_ret);
}

int main(void)
{
	const char *none[] = { "HOME=/root", NULL };
	const char *srun1[] = { "SLURM_STEP_ID=0", "SLURM_STEP_NUM_TASKS=1",
				"SLURM_PROCID=0", NULL };
	const char *srun4[] = { "SLURM_STEP_ID=0", "SLURM_STEP_NUM_TASKS=4",
				"SLURM_PROCID=2", "SLURM_MPI_TYPE=none", NULL };
	const char *batch[] = { "SLURM_JOB_ID=7", "SLURM_NTASKS=4", NULL };
	const char *ompi_alone[] = { "OMPI_COMM_WORLD_SIZE=4", NULL };
	const char *pmi2[] = { "PMI_RANK=1", "PMI_SIZE=4", NULL };
	const char *pmi1[] = { "PMI_RANK=0", "PMI_SIZE=1", NULL };
	const char *half1[] = { "PMIX_RANK=0", NULL };
	const char *half2[] = { "PMIX_NAMESPACE=ns.1", "PMIX_RANK=0", NULL };
	const char *badrank[] = { "PMIX_NAMESPACE=ns.1", "PMIX_RANK=x",
				  "PMIX_SERVER_URI2=u", NULL };
	const char *slurm[] = { PMIX_ENV("2"), "SLURM_MPI_TYPE=pmix",
				"SLURM_STEP_ID=0", "SLURM_STEP_NUM_TASKS=4",
				"SLURM_PROCID=2", NULL };
	const char *ompi[] = { PMIX_ENV("2"), "OMPI_COMM_WORLD_SIZE=4",
			       "OMPI_COMM_WORLD_RANK=2", NULL };
	/* mpirun inside sbatch: its daemons' srun step shows through */
	const char *ompi_sbatch[] = { PMIX_ENV("2"), "OMPI_COMM_WORLD_SIZE=4",
				      "OMPI_COMM_WORLD_RANK=2",
				      "SLURM_MPI_TYPE=none", "SLURM_STEP_ID=0",
				      "SLURM_STEP_NUM_TASKS=1", "SLURM_PROCID=0",
				      NULL };
	const char *mixed[] = { PMIX_ENV("2"), "OMPI_COMM_WORLD_SIZE=4",
				"SLURM_MPI_TYPE=pmix_v4", NULL };
	const char *prrte[] = { PMIX_ENV("2"), NULL };

	detect("no launcher", none, 0, PXFER_JOB_ALONE);
	detect("srun -n 1 without PMIx", srun1, 0, PXFER_JOB_ALONE);
	detect("a batch script", batch, 0, PXFER_JOB_ALONE);
	detect("srun -n 4 without PMIx", srun4, -EINVAL, 0);
	detect("OMPI_ without PMIx", ompi_alone, -EINVAL, 0);
	detect("a PMI-2 launcher's 4", pmi2, -EINVAL, 0);
	detect("a PMI-2 launcher's 1", pmi1, 0, PXFER_JOB_ALONE);
	detect("PMIX_RANK alone", half1, -EINVAL, 0);
	detect("no server URI", half2, -EINVAL, 0);
	detect("PMIX_RANK not a number", badrank, -EINVAL, 0);
	detect("srun --mpi=pmix", slurm, 0, PXFER_JOB_SLURM);
	detect("mpirun", ompi, 0, PXFER_JOB_OMPI);
	detect("mpirun in sbatch", ompi_sbatch, 0, PXFER_JOB_OMPI);
	detect("mpirun in srun --mpi=pmix", mixed, -EINVAL, 0);
	detect("another PMIx launcher", prrte, 0, PXFER_JOB_PMIX);

	check("srun, as said", slurm, 2, 4, 0);
	check("srun, size 3 by the server", slurm, 2, 3, -EINVAL);
	check("srun, rank 1 by the server", slurm, 1, 4, -EINVAL);
	check("mpirun, as said", ompi, 2, 4, 0);
	check("mpirun, size 5 by the server", ompi, 2, 5, -EINVAL);
	check("mpirun in sbatch, as said", ompi_sbatch, 2, 4, 0);
	check("another launcher", prrte, 2, 8, 0);
	check("rank past the size", prrte, 2, 2, -EINVAL);
	check("no size", prrte, 2, 0, -EINVAL);
	return t_result();
}
