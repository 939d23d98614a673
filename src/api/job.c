// SPDX-License-Identifier: MIT
/*
 * A job's wire-up through the launcher's PMIx server (docs/scaleout.md).
 *
 * The environment says first whether there is a launcher at all: a PMIx
 * server hands each process it starts PMIX_NAMESPACE, PMIX_RANK and the
 * URI of its socket (PMIX_SERVER_URI2 .. URI41, by the versions it
 * speaks), Slurm's pmix plugin and Open MPI's mpirun alike. Without them
 * the process is alone, as pxfer always was; with them it connects
 * (PMIx_Init), and what the server says is checked against the
 * launcher's own variables (SLURM_STEP_NUM_TASKS, OMPI_COMM_WORLD_SIZE),
 * so that a job the launcher and the environment disagree on stops at
 * once rather than splitting a transfer wrongly.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "api/job.h"
#include "core/log.h"

_Static_assert(sizeof(((struct pxfer_job *)0)->nspace) > PMIX_MAX_NSLEN,
	       "a PMIx namespace fits in struct pxfer_job");

/* the variables a PMIx server sets for each process it starts */
static const char *const server_uris[] = {
	"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
	"PMIX_SERVER_URI21", "PMIX_SERVER_URI2",
};

const char *pxfer_job_launcher_name(enum pxfer_job_launcher l)
{
	switch (l) {
	case PXFER_JOB_ALONE:
		return "none";
	case PXFER_JOB_SLURM:
		return "srun";
	case PXFER_JOB_OMPI:
		return "mpirun";
	case PXFER_JOB_PMIX:
		return "the launcher";
	}
	return "?";
}

/* @s as a whole decimal number that fits in 32 bits */
static int parse_u32(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

static const char *any_uri(pxfer_job_getenv_fn *get, void *arg)
{
	size_t i;

	for (i = 0; i < sizeof(server_uris) / sizeof(server_uris[0]); i++)
		if (get(arg, server_uris[i]))
			return server_uris[i];
	return NULL;
}

/* no PMIx server: alone, unless a launcher started several of us */
static int detect_no_pmix(struct pxfer_job *j, pxfer_job_getenv_fn *get,
			  void *arg)
{
	const char *ompi = get(arg, "OMPI_COMM_WORLD_SIZE");
	const char *tasks = get(arg, "SLURM_STEP_NUM_TASKS");
	const char *pmi = get(arg, "PMI_SIZE");
	uint32_t n;

	if (ompi)
		return pxfer_error("OMPI_COMM_WORLD_SIZE is %s but no PMIx server is"
			     " named (no PMIX_NAMESPACE): run pxfer under an"
			     " mpirun with PMIx (Open MPI 2.0 or later), or"
			     " unset OMPI_COMM_WORLD_SIZE to run it alone",
			     parse_u32(ompi, &n) ? "set" : ompi), -EINVAL;
	if (tasks && get(arg, "SLURM_STEP_ID") &&
	    !(parse_u32(tasks, &n) == 0 && n <= 1))
		return pxfer_error("srun started this step's %s task(s) without PMIx"
			     " (SLURM_STEP_NUM_TASKS is set, PMIX_NAMESPACE is"
			     " not), so they cannot find each other: run"
			     " 'srun --mpi=pmix', or set MpiDefault=pmix in"
			     " slurm.conf", parse_u32(tasks, &n) ? "" : tasks),
		       -EINVAL;
	if (pmi && !(parse_u32(pmi, &n) == 0 && n <= 1))
		return pxfer_error("a PMI-1 or PMI-2 launcher started %s processes"
			     " (PMI_SIZE is set, PMIX_NAMESPACE is not): pxfer"
			     " speaks PMIx only; start it with 'srun --mpi=pmix'"
			     " or Open MPI's mpirun",
			     parse_u32(pmi, &n) ? "several" : pmi), -EINVAL;
	j->launcher = PXFER_JOB_ALONE;
	j->rank = 0;
	j->size = 1;
	return 0;
}

int pxfer_job_detect(struct pxfer_job *j, pxfer_job_getenv_fn *get, void *arg)
{
	const char *ns = get(arg, "PMIX_NAMESPACE");
	const char *rank = get(arg, "PMIX_RANK");
	const char *uri = any_uri(get, arg);
	const char *mpi = get(arg, "SLURM_MPI_TYPE");
	bool slurm = mpi && strncmp(mpi, "pmix", 4) == 0;
	uint32_t r;

	memset(j, 0, sizeof(*j));
	if (!ns && !rank && !uri)
		return detect_no_pmix(j, get, arg);
	if (!ns || !rank || !uri)
		return pxfer_error("the environment names a PMIx server only in part"
			     " (%s%s%s missing): a launcher sets them all;"
			     " start pxfer directly under 'srun --mpi=pmix' or"
			     " 'mpirun', or unset the PMIX_ variables to run it"
			     " alone", ns ? "" : "PMIX_NAMESPACE ",
			     rank ? "" : "PMIX_RANK ",
			     uri ? "" : "PMIX_SERVER_URI*"), -EINVAL;
	if (parse_u32(rank, &r))
		return pxfer_error("PMIX_RANK is not a rank (a number): start pxfer"
			     " directly under its launcher"), -EINVAL;
	if (get(arg, "OMPI_COMM_WORLD_SIZE") && slurm)
		return pxfer_error("mpirun inside an 'srun --mpi=pmix' step: each of"
			     " srun's tasks would start a job of its own; use"
			     " one launcher, srun or mpirun"), -EINVAL;
	if (get(arg, "OMPI_COMM_WORLD_SIZE"))
		j->launcher = PXFER_JOB_OMPI;
	else if (slurm)
		j->launcher = PXFER_JOB_SLURM;
	else
		j->launcher = PXFER_JOB_PMIX;
	return 0;
}

/* the launcher's own variable @name, if set, says @want too */
static int agree(const struct pxfer_job *j, pxfer_job_getenv_fn *get,
		 void *arg, const char *name, const char *what, uint32_t want)
{
	const char *who = pxfer_job_launcher_name(j->launcher);
	const char *s = get(arg, name);
	uint32_t v;

	if (!s)
		return 0;
	if (parse_u32(s, &v))
		s = "not a number";
	else if (v == want)
		return 0;
	return pxfer_error("%s's PMIx server says %s %" PRIu32 ", but %s is %s:"
		     " the environment is not the one the launcher made (was %s"
		     " set by hand?); start pxfer directly under %s", who, what,
		     want, name, s, name, who), -EINVAL;
}

/*
 * pxfer_job_check - the rank and size the server gave (@j) are those the
 * environment names. 0 or -EINVAL with a message.
 */
int pxfer_job_check(const struct pxfer_job *j, pxfer_job_getenv_fn *get,
		    void *arg)
{
	static const char size[] = "the job's size is";
	static const char rank[] = "this process's rank is";
	int ret;

	if (j->size == 0 || j->rank >= j->size)
		return pxfer_error("%s's PMIx server gives this process rank %" PRIu32
			     " of %" PRIu32 ": not a job pxfer can run in",
			     pxfer_job_launcher_name(j->launcher), j->rank,
			     j->size), -EINVAL;
	ret = agree(j, get, arg, "PMIX_RANK", rank, j->rank);
	if (!ret && j->launcher == PXFER_JOB_OMPI) {
		ret = agree(j, get, arg, "OMPI_COMM_WORLD_SIZE", size, j->size);
		if (!ret)
			ret = agree(j, get, arg, "OMPI_COMM_WORLD_RANK", rank,
				    j->rank);
	}
	if (!ret && j->launcher == PXFER_JOB_SLURM) {
		ret = agree(j, get, arg, "SLURM_STEP_NUM_TASKS", size, j->size);
		if (!ret)
			ret = agree(j, get, arg, "SLURM_PROCID", rank, j->rank);
	}
	return ret;
}

/* a PMIx status as -errno */
static int pmix_errno(pmix_status_t rc)
{
	switch (rc) {
	case PMIX_SUCCESS:
		return 0;
	case PMIX_ERR_NOT_FOUND:
		return -ENOENT;
	case PMIX_ERR_TIMEOUT:
		return -ETIMEDOUT;
	case PMIX_ERR_NOMEM:
		return -ENOMEM;
	case PMIX_ERR_BAD_PARAM:
		return -EINVAL;
	case PMIX_ERR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case PMIX_ERR_UNREACH:
	case PMIX_ERR_LOST_CONNECTION:
		return -ECONNRESET;
	default:
		return -EIO;
	}
}

static const char *env_get(void *arg, const char *name)
{
	return getenv(name);
}

/* the job's size: the server's PMIX_JOB_SIZE for the whole namespace */
static int job_size(struct pxfer_job *j, const pmix_proc_t *me)
{
	pmix_proc_t all;
	pmix_value_t *val = NULL;
	pmix_status_t rc;
	int ret = 0;

	PMIX_PROC_LOAD(&all, me->nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Get(&all, PMIX_JOB_SIZE, NULL, 0, &val);
	if (rc != PMIX_SUCCESS)
		return pxfer_error("%s's PMIx server does not tell the job's size"
			     " (%s): check the launcher's PMIx support",
			     pxfer_job_launcher_name(j->launcher),
			     PMIx_Error_string(rc)), pmix_errno(rc);
	if (val->type == PMIX_UINT32)
		j->size = val->data.uint32;
	else
		ret = (pxfer_error("%s's PMIx server gives the job's size as type"
			     " %d, not a number: check the launcher's PMIx"
			     " support", pxfer_job_launcher_name(j->launcher),
			     val->type), -EPROTO);
	PMIX_VALUE_RELEASE(val);
	return ret;
}

int pxfer_job_init(struct pxfer_job *j)
{
	pmix_proc_t me;
	pmix_status_t rc;
	int ret;

	ret = pxfer_job_detect(j, env_get, NULL);
	if (ret < 0 || j->launcher == PXFER_JOB_ALONE)
		return ret;
	rc = PMIx_Init(&me, NULL, 0);
	if (rc != PMIX_SUCCESS)
		return pxfer_error("cannot reach %s's PMIx server: %s (is the"
			     " launcher still running, and its PMIx plugin the"
			     " version of this libpmix?)",
			     pxfer_job_launcher_name(j->launcher),
			     PMIx_Error_string(rc)), pmix_errno(rc);
	snprintf(j->nspace, sizeof(j->nspace), "%s", me.nspace);
	j->rank = me.rank;
	ret = job_size(j, &me);
	if (ret == 0)
		ret = pxfer_job_check(j, env_get, NULL);
	if (ret < 0)
		goto out_finalize;
	return 0;

out_finalize:
	PMIx_Finalize(NULL, 0);
	return ret;
}

int pxfer_job_publish(struct pxfer_job *j, const char *key, const char *value)
{
	pmix_value_t val;
	pmix_status_t rc;

	if (strlen(key) >= PXFER_JOB_KEY_MAX ||
	    strlen(value) >= PXFER_JOB_VALUE_MAX)
		return -E2BIG;
	if (j->launcher == PXFER_JOB_ALONE) {
		snprintf(j->key, sizeof(j->key), "%s", key);
		snprintf(j->value, sizeof(j->value), "%s", value);
		return 0;
	}
	PMIX_VALUE_CONSTRUCT(&val);
	val.type = PMIX_STRING;
	val.data.string = (char *)value;	/* PMIx_Put copies it */
	rc = PMIx_Put(PMIX_GLOBAL, key, &val);
	if (rc == PMIX_SUCCESS)
		rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS)
		return pxfer_error("cannot publish '%s' to %s's PMIx server: %s", key,
			     pxfer_job_launcher_name(j->launcher),
			     PMIx_Error_string(rc)), pmix_errno(rc);
	return 0;
}

int pxfer_job_fence(struct pxfer_job *j)
{
	pmix_info_t info[2];
	size_t n = 0;
	pmix_status_t rc;
	bool collect = true;
	int secs = j->fence_timeout_s;

	if (j->launcher == PXFER_JOB_ALONE)
		return 0;
	/* every rank's values come back with the fence: a Get after it
	 * asks no other node */
	PMIX_INFO_LOAD(&info[n], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	n++;
	if (secs > 0) {
		PMIX_INFO_LOAD(&info[n], PMIX_TIMEOUT, &secs, PMIX_INT);
		n++;
	}
	/* NULL: all the processes of our namespace */
	rc = PMIx_Fence(NULL, 0, info, n);
	/* (the macro uses its argument more than once) */
	for (size_t i = 0; i < n; i++)
		PMIX_INFO_DESTRUCT(&info[i]);
	if (rc != PMIX_SUCCESS)
		return pxfer_error("rank %" PRIu32 " of %" PRIu32 ": the job's fence"
			     " failed: %s (did a rank end early? see %s's"
			     " messages)", j->rank, j->size,
			     PMIx_Error_string(rc),
			     pxfer_job_launcher_name(j->launcher)),
		       pmix_errno(rc);
	return 0;
}

int pxfer_job_lookup(struct pxfer_job *j, uint32_t rank, const char *key,
		     char *buf, size_t len)
{
	pmix_proc_t who;
	pmix_value_t *val = NULL;
	pmix_status_t rc;
	int ret = 0;

	if (rank >= j->size)
		return -EINVAL;
	if (j->launcher == PXFER_JOB_ALONE) {
		if (strcmp(j->key, key) != 0 || !j->key[0])
			return -ENOENT;
		if ((size_t)snprintf(buf, len, "%s", j->value) >= len)
			return -E2BIG;
		return 0;
	}
	PMIX_PROC_LOAD(&who, j->nspace, rank);
	rc = PMIx_Get(&who, key, NULL, 0, &val);
	if (rc != PMIX_SUCCESS)
		return pmix_errno(rc);
	if (val->type != PMIX_STRING || !val->data.string)
		ret = -EPROTO;
	else if ((size_t)snprintf(buf, len, "%s", val->data.string) >= len)
		ret = -E2BIG;
	PMIX_VALUE_RELEASE(val);
	return ret;
}

void pxfer_job_finalize(struct pxfer_job *j)
{
	if (j->launcher != PXFER_JOB_ALONE)
		PMIx_Finalize(NULL, 0);
	j->launcher = PXFER_JOB_ALONE;
}
