#!/bin/bash
# SPDX-License-Identifier: MIT
# cpu_trace.sh - in the test VM: one second of ftrace (scheduler switches
# and wakeups, softirqs, timers) from the data phase of ib_write_bw -q1 and
# of pxfer -j1, DIAG_REPS times (default 2). The traces go to
# build/diag-trace/{ib,pxfer}N.txt; read them with cpu_trace.py on the host.
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
P=${DIAG_PXFER:-$top/build/release/pxfer}
SIZE=${DIAG_SIZE:-128} REPS=${DIAG_REPS:-2}
O=$top/build/diag-trace
T=/sys/kernel/tracing
[ -n "${PXFER_RXE_VM:-}" ] || { echo "cpu_trace.sh: runs inside the test VM" >&2; exit 2; }
[ -x "$P" ] || { echo "cpu_trace.sh: no pxfer at $P" >&2; exit 2; }
export PXFER_SECRET=00112233445566778899aabbccddeeff
W=/tmp/diag-trace
rm -rf $W; mkdir -p $W/d "$O"
head -c ${SIZE}M /dev/urandom >$W/f
mountpoint -q $T || mount -t tracefs nodev $T
echo 0 >$T/tracing_on
echo 8192 >$T/buffer_size_kb
echo >$T/set_event
for e in sched:sched_switch sched:sched_wakeup irq:softirq_entry irq:softirq_exit \
	 irq:softirq_raise timer:hrtimer_expire_entry timer:timer_expire_entry; do
	echo $e >>$T/set_event
done
grab() {                # one second, starting 1.5 s after the client starts
	echo >$T/trace
	sleep 1.5
	echo 1 >$T/tracing_on
	sleep 1
	echo 0 >$T/tracing_on
	cat $T/trace >"$O/$1.txt"
}
port=8300
for r in $(seq "$REPS"); do
	port=$((port + 1))
	ib_write_bw -d "$PXFER_RXE_SERVER_DEV" -x "$PXFER_RXE_SERVER_GID" -F -s 4194304 \
		-n $((SIZE / 4)) -q 1 -p $port >$W/ib.srv 2>&1 &
	sleep 1.5
	ib_write_bw -d "$PXFER_RXE_CLIENT_DEV" -x "$PXFER_RXE_CLIENT_GID" -F -s 4194304 \
		-n $((SIZE / 4)) -q 1 -p $port "$PXFER_RXE_SERVER_ADDR" >$W/ib.cli 2>&1 &
	grab ib$r
	wait
	echo "rep $r ib_write_bw: $(awk '$1 == 4194304 && NF >= 5 { print $4 }' $W/ib.cli) MiB/s"
	port=$((port + 1))
	rm -rf "${W:?}"/d/*
	"$P" recv --transport rdma --bind "$PXFER_RXE_SERVER_ADDR" --port $port --dir $W/d \
		--once >$W/recv.log 2>&1 &
	sleep 1
	"$P" send --json -j 1 --transport rdma --bind "$PXFER_RXE_CLIENT_ADDR" --port $port \
		$W/f "$PXFER_RXE_SERVER_ADDR" >$W/json 2>$W/send.log &
	grab pxfer$r
	wait
	echo "rep $r pxfer: $(grep -o '"seconds":[0-9.]*' $W/json) for $SIZE MiB"
done
echo >$T/set_event
