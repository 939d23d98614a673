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
for tool in mpirun srun sinfo scontrol squeue scancel slurmctld slurmd munged munge; do
	command -v $tool >/dev/null || skip "$tool is missing (tools/install-deps.sh)"
done

# the probe's environment is the launcher's alone
while IFS= read -r v; do
	case $v in SLURM_*|PMIX_*|OMPI_*) unset "$v";; esac
done < <(compgen -e)
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# the strings libpmix keeps past PMIx_Finalize are suppressed by the
# frames of PMIx_Init (test/lib/lsan.supp): libpmix has no frame pointers
export ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0
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
node=$(hostname -s 2>/dev/null || hostname)
[ -n "$node" ] || skip "this host has no name for slurmctld"
# munged checks that every folder above its socket lets others through
chmod 711 "$T"
mkdir -p "$T/munge" "$T/munge-run" "$T/slurm/state" "$T/slurm/spool"
chmod 700 "$T/munge"
chmod 755 "$T/munge-run"
head -c 1024 /dev/urandom >"$T/munge/key"
chmod 400 "$T/munge/key"
MUNGE_SOCK=$T/munge-run/socket
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
[ "$CTLD_PORT" != "$SLURMD_PORT" ] || SLURMD_PORT=$(free_port)
export SLURM_CONF=$T/slurm/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=pxfertest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
CredType=cred/munge
StateSaveLocation=$T/slurm/state
SlurmdSpoolDir=$T/slurm/spool
SlurmctldPidFile=$T/slurm/slurmctld.pid
SlurmdPidFile=$T/slurm/slurmd.pid
SlurmctldLogFile=$T/slurm/slurmctld.log
SlurmdLogFile=$T/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
# the node claims 16 CPUs whatever it has, and each may run 4 tasks
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=16 RealMemory=512 State=UNKNOWN
PartitionName=pxfer Nodes=$node Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
EOF

MUNGED_PID='' CTLD_PID='' SLURMD_PID=''
# stop_slurm - end the jobs, then the daemons, and check that no process
# is left holding a file of the test's Slurm (slurmstepd, a task)
stop_slurm()
{
	local p left=() d f

	if [ -n "$CTLD_PID" ] && kill -0 "$CTLD_PID" 2>/dev/null; then
		scancel --quiet --full --partition=pxfer 2>/dev/null
	fi
	for p in "$SLURMD_PID" "$CTLD_PID" "$MUNGED_PID"; do
		[ -n "$p" ] || continue
		kill -TERM "$p" 2>/dev/null
		_wait_gone "$p" 300 || kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	SLURMD_PID='' CTLD_PID='' MUNGED_PID=''
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = $$ ] && continue
		for f in "$d/cwd" "$d"/fd/*; do
			case $(readlink "$f" 2>/dev/null) in
			"$T"/*) left+=("$p"); break;;
			esac
		done
	done
	[ ${#left[@]} -eq 0 ] && return 0
	echo "left running: ${left[*]}" >&2
	kill -KILL "${left[@]}" 2>/dev/null
	return 1
}

# shellcheck disable=SC2317  # run by the trap
_launch_cleanup()
{
	local rc=$?

	stop_slurm || rc=1
	(exit "$rc")
	_cleanup
}
trap _launch_cleanup EXIT

# why_not DAEMON LOG - skip, with the end of a daemon's log
why_not()
{
	echo "--- $2:" >&2
	tail -n 15 "$2" >&2 2>/dev/null
	skip "$1 cannot start here (its log above)"
}

note "munged, slurmctld, slurmd on $node (ports $CTLD_PORT, $SLURMD_PORT)"
munged --foreground --key-file="$T/munge/key" --socket="$MUNGE_SOCK" \
	--pid-file="$T/munge-run/pid" --log-file="$T/munge/log" \
	--seed-file="$T/munge/seed" >"$T/munged.out" 2>&1 &
MUNGED_PID=$!
for ((i = 0; i < 300; i++)); do
	munge -n -S "$MUNGE_SOCK" >/dev/null 2>&1 && break
	kill -0 "$MUNGED_PID" 2>/dev/null || why_not munged "$T/munge/log"
	sleep 0.1
done
[ $i -lt 300 ] || why_not munged "$T/munge/log"

slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 &
CTLD_PID=$!
for ((i = 0; i < 300; i++)); do
	scontrol ping 2>/dev/null | grep -q 'is UP' && break
	kill -0 "$CTLD_PID" 2>/dev/null || why_not slurmctld "$T/slurmctld.out"
	sleep 0.2
done
[ $i -lt 300 ] || why_not slurmctld "$T/slurmctld.out"

slurmd -D -N "$node" -f "$SLURM_CONF" >"$T/slurmd.out" 2>&1 &
SLURMD_PID=$!
for ((i = 0; i < 300; i++)); do
	case $(sinfo -h -n "$node" -o %t 2>/dev/null) in idle*|mix*|alloc*) break;; esac
	kill -0 "$SLURMD_PID" 2>/dev/null || why_not slurmd "$T/slurmd.out"
	sleep 0.2
done
[ $i -lt 300 ] || why_not slurmd "$T/slurm/slurmd.log"
ok "node $node: $(sinfo -h -n "$node" -o '%t, %c CPUs')"

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
