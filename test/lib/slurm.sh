# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# A one-node Slurm of a test's own, under $T: munged, slurmctld and slurmd
# with a configuration that lets the node claim more CPUs than it has
# (SlurmdParameters=config_overrides) and an oversubscribed partition, so
# that 'srun -n 4 --mpi=pmix' runs here. Sourced after common.sh:
#   start_slurm - start the daemons, or skip the test when they cannot
#                 start here; from then on the EXIT trap stops them
#   stop_slurm  - end the jobs and the daemons; 1 when a process of
#                 theirs was left (it is then killed)

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
		# what the test started itself (receivers) is its own to stop
		# shellcheck disable=SC2154  # common.sh's
		[[ " ${_pids[*]} " == *" $p "* ]] && continue
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
_slurm_cleanup()
{
	local rc=$?

	stop_slurm || rc=1
	(exit "$rc")
	_cleanup
}

# _slurm_why_not DAEMON LOG - skip, with the end of a daemon's log
_slurm_why_not()
{
	echo "--- $2:" >&2
	tail -n 15 "$2" >&2 2>/dev/null
	skip "$1 cannot start here (its log above)"
}

# start_slurm - the daemons, up and answering
start_slurm()
{
	local node i tool

	for tool in srun sinfo scontrol squeue scancel slurmctld slurmd munged munge; do
		command -v $tool >/dev/null || skip "$tool is missing (tools/install-deps.sh)"
	done
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

	trap _slurm_cleanup EXIT
	note "munged, slurmctld, slurmd on $node (ports $CTLD_PORT, $SLURMD_PORT)"
	munged --foreground --key-file="$T/munge/key" --socket="$MUNGE_SOCK" \
		--pid-file="$T/munge-run/pid" --log-file="$T/munge/log" \
		--seed-file="$T/munge/seed" >"$T/munged.out" 2>&1 &
	MUNGED_PID=$!
	for ((i = 0; i < 300; i++)); do
		munge -n -S "$MUNGE_SOCK" >/dev/null 2>&1 && break
		kill -0 "$MUNGED_PID" 2>/dev/null || _slurm_why_not munged "$T/munge/log"
		sleep 0.1
	done
	[ $i -lt 300 ] || _slurm_why_not munged "$T/munge/log"

	slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 &
	CTLD_PID=$!
	for ((i = 0; i < 300; i++)); do
		scontrol ping 2>/dev/null | grep -q 'is UP' && break
		kill -0 "$CTLD_PID" 2>/dev/null || _slurm_why_not slurmctld "$T/slurmctld.out"
		sleep 0.2
	done
	[ $i -lt 300 ] || _slurm_why_not slurmctld "$T/slurmctld.out"

	slurmd -D -N "$node" -f "$SLURM_CONF" >"$T/slurmd.out" 2>&1 &
	SLURMD_PID=$!
	for ((i = 0; i < 300; i++)); do
		case $(sinfo -h -n "$node" -o %t 2>/dev/null) in idle*|mix*|alloc*) break;; esac
		kill -0 "$SLURMD_PID" 2>/dev/null || _slurm_why_not slurmd "$T/slurmd.out"
		sleep 0.2
	done
	[ $i -lt 300 ] || _slurm_why_not slurmd "$T/slurm/slurmd.log"
	ok "node $node: $(sinfo -h -n "$node" -o '%t, %c CPUs')"
}
