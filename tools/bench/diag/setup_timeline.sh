#!/bin/bash
# SPDX-License-Identifier: MIT
# setup_timeline.sh - in the test VM: where the set-up of a one-file (4 KiB)
# rdma transfer goes, with the ring pool and without it (and with its
# faulting thread at SCHED_IDLE or nice 19). Needs a build with
# probes.patch (README.md). DIAG_JOBS (default 1), DIAG_REPS (default 6),
# DIAG_VARIANTS (default "pool nopool idle nice").
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
P=${DIAG_PXFER:-$top/build/diag/build/release/pxfer}
J=${DIAG_JOBS:-1} REPS=${DIAG_REPS:-6} VARS=${DIAG_VARIANTS:-"pool nopool idle nice"}
[ -n "${PXFER_RXE_VM:-}" ] || { echo "setup_timeline.sh: runs inside the test VM" >&2; exit 2; }
[ -x "$P" ] || { echo "setup_timeline.sh: no pxfer at $P (see README.md)" >&2; exit 2; }
export PXFER_SECRET=00112233445566778899aabbccddeeff
W=/tmp/diag-setup
rm -rf $W; mkdir -p $W/d
head -c 4096 /dev/urandom >$W/small
at() {                  # the -vv timestamp of the first line matching $1
	grep -m 1 -- "$1" $W/send.log | sed -n 's/^pxfer: \[\([0-9.]*\)\].*/\1/p'
}
port=7800
for r in $(seq "$REPS"); do for v in $VARS; do
	port=$((port + 1))
	rm -rf "${W:?}"/d/*
	case $v in
	pool) env=() ;;
	nopool) env=(PXFER_DIAG_NOPOOL=1) ;;
	idle) env=(PXFER_DIAG_POOL_IDLE=1) ;;
	nice) env=(PXFER_DIAG_POOL_NICE=1) ;;
	*) echo "setup_timeline.sh: unknown variant $v" >&2; exit 2 ;;
	esac
	"$P" recv --transport rdma --bind "$PXFER_RXE_SERVER_ADDR" --port $port \
		--dir $W/d --once >$W/recv.log 2>&1 &
	sleep 1.5
	env "${env[@]}" "$P" send -vv --json -j "$J" --transport rdma \
		--bind "$PXFER_RXE_CLIENT_ADDR" --port $port $W/small "$PXFER_RXE_SERVER_ADDR" \
		>$W/json 2>$W/send.log
	wait
	echo "$v: seconds $(grep -o '"seconds":[0-9.]*' $W/json | cut -d: -f2)," \
		"devices found $(at 'looked for RDMA'), address resolved $(at 'resolving the address of .*: done')," \
		"control connected $(at 'connected to'), data connections ready $(at 'data connection')"
done; done
