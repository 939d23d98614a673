#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_launch: a job's wire-up (src/api/job.c) under the launchers that
# start it, through test/helper/pmix_probe:
#   - alone, the probe is rank 0 of 1 and reads back its own value;
#   - under Open MPI's 'mpirun --oversubscribe -np 4', four ranks 0..3 of
#     a job of 4 each read the value rank 0 published;
#   - under a real one-node Slurm that the test starts itself (munge,
#     slurmctld, slurmd, a configuration generated in $T that lets the
#     node claim more CPUs than it has, an oversubscribed partition),
#     'srun -n 4 --mpi=pmix' does the same;
#   - an environment that is not one launcher's whole is a usage error
#     (exit 2) naming what is wrong: srun without PMIx, a size the
#     launcher's variables and its PMIx server disagree on;
#   - every daemon the test started is stopped, and no process of its
#     Slurm is left.
# Skips when srun, slurmctld, slurmd, munged or mpirun are missing, or
# when the daemons cannot start here.
. "$(dirname "$0")/../lib/common.sh"

PROBE=$HELPERS/pmix_probe
[ -x "$PROBE" ] || skip "$PROBE is not built (make SAN=1 all)"
for tool in mpirun srun; do
	command -v $tool >/dev/null || skip "$tool is missing (tools/install-deps.sh)"
done

# the probe's environment is the launcher's alone
launcher_env
# a loaded machine: every launch is bounded, generously
limit=120

# check_job LOG N LAUNCHER - LOG holds the lines of N ranks 0..N-1 of a
# job of N, started by LAUNCHER, each with the value rank 0 published
check_job()
{
	local why

	why=$(awk -v n="$2" -v l="$3" '
		$1 == "rank" && $3 == "size" && $5 == "value" && $7 == "launcher" {
			lines++
			if ($4 != n) bad = "rank " $2 " says size " $4
			if ($8 != l) bad = "rank " $2 " says launcher " $8
			if ($2 !~ /^[0-9]+$/ || $2 + 0 >= n) bad = "rank " $2 " is out of range"
			if (seen[$2]++) bad = "rank " $2 " twice"
			if ($6 !~ /^rank0-[0-9]+$/) bad = "rank " $2 " read " $6
			if (v == "") v = $6
			else if ($6 != v) bad = "ranks read " v " and " $6
		}
		END {
			if (lines != n) bad = lines + 0 " rank(s) said who they are, not " n
			if (bad != "") { print bad; exit 1 }
		}' "$1") || { cat "$1" >&2; fail "$3: $why"; }
	ok "$3: ranks 0..$(($2 - 1)) of $2, each read rank 0's $(awk '$1 == "rank" { print $6; exit }' "$1")"
}

# expect_usage WHAT LOG RC PATTERN - a launch that must end as a usage
# error whose message matches PATTERN
expect_usage()
{
	[ "$3" -ne 0 ] || { cat "$2" >&2; fail "$1: the job ran"; }
	grep -q -- "$4" "$2" || { cat "$2" >&2; fail "$1: no message naming '$4'"; }
	ok "$1: refused, naming $4"
}

note "alone: rank 0 of 1"
"$PROBE" >"$T/alone.log" 2>&1 || { cat "$T/alone.log" >&2; fail "pmix_probe alone: exit $?"; }
check_job "$T/alone.log" 1 none

note "mpirun --oversubscribe -np 4"
timeout -k 5 $limit mpirun --oversubscribe -np 4 "$PROBE" >"$T/mpirun.log" 2>&1 ||
	{ cat "$T/mpirun.log" >&2; fail "mpirun -np 4 pmix_probe: exit $?"; }
check_job "$T/mpirun.log" 4 mpirun

note "mpirun, with a size its variables disagree on"
timeout -k 5 $limit mpirun --oversubscribe -np 2 env OMPI_COMM_WORLD_SIZE=5 "$PROBE" \
	>"$T/mpirun-bad.log" 2>&1
expect_usage "mpirun, OMPI_COMM_WORLD_SIZE=5 of 2" "$T/mpirun-bad.log" $? \
	"job's size is 2, but OMPI_COMM_WORLD_SIZE is 5"

# --- a one-node Slurm of the test's own ---
# shellcheck source=../lib/slurm.sh
. "$(dirname "$0")/../lib/slurm.sh"
start_slurm

note "srun -n 4 --mpi=pmix"
timeout -k 5 $limit srun -n 4 --mpi=pmix -t 2 "$PROBE" >"$T/srun.log" 2>"$T/srun.err" ||
	{ cat "$T/srun.log" "$T/srun.err" >&2; fail "srun -n 4 --mpi=pmix pmix_probe: exit $?"; }
check_job "$T/srun.log" 4 srun

note "srun without PMIx"
timeout -k 5 $limit srun -n 2 --mpi=none -t 2 "$PROBE" >"$T/srun-none.log" 2>&1
expect_usage "srun -n 2 --mpi=none" "$T/srun-none.log" $? "run 'srun --mpi=pmix'"

note "srun, with a size its variables disagree on"
timeout -k 5 $limit srun -n 2 --mpi=pmix -t 2 env SLURM_STEP_NUM_TASKS=3 "$PROBE" \
	>"$T/srun-bad.log" 2>&1
expect_usage "srun, SLURM_STEP_NUM_TASKS=3 of 2" "$T/srun-bad.log" $? \
	"job's size is 2, but SLURM_STEP_NUM_TASKS is 3"

note "the daemons stop, and leave nothing running"
stop_slurm || fail "processes of the test's Slurm were left running"
ok "munged, slurmctld and slurmd stopped; nothing of theirs left"
finish
