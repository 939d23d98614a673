#!/bin/bash
# SPDX-License-Identifier: MIT
# wire_gaps.sh - in the test VM: does the link ever stand still during a
# transfer? Samples the client veth's tx_bytes every 2 ms while ib_write_bw,
# then pxfer, move DIAG_SIZE MiB (default 128) at -j1 and -j2, DIAG_REPS
# times (default 3). Needs build/diag-tools/wire_sampler (README.md).
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
P=${DIAG_PXFER:-$top/build/release/pxfer}
S=$top/build/diag-tools/wire_sampler
SIZE=${DIAG_SIZE:-128} REPS=${DIAG_REPS:-3}
[ -n "${PXFER_RXE_VM:-}" ] || { echo "wire_gaps.sh: runs inside the test VM" >&2; exit 2; }
[ -x "$P" ] && [ -x "$S" ] || { echo "wire_gaps.sh: build pxfer and $S first" >&2; exit 2; }
export PXFER_SECRET=00112233445566778899aabbccddeeff
W=/tmp/diag-gaps
rm -rf $W; mkdir -p $W/d
head -c ${SIZE}M /dev/urandom >$W/f
tx=/sys/class/net/$PXFER_RXE_CLIENT_IF/statistics/tx_bytes
port=8800
for r in $(seq "$REPS"); do for j in 1 2; do for v in ib pxfer; do
	port=$((port + 1))
	rm -rf "${W:?}"/d/*
	"$S" "$tx" 2000 >$W/gaps &
	sp=$!
	if [ $v = ib ]; then
		s=$((4194304 / j)); n=$((SIZE * 1048576 / s / j))
		[ $n -ge 5 ] || n=5     # ib_write_bw's least
		ib_write_bw -d "$PXFER_RXE_SERVER_DEV" -x "$PXFER_RXE_SERVER_GID" -F -s $s -n $n \
			-q $j -p $port >$W/ib.srv 2>&1 &
		sleep 1.5
		ib_write_bw -d "$PXFER_RXE_CLIENT_DEV" -x "$PXFER_RXE_CLIENT_GID" -F -s $s -n $n \
			-q $j -p $port "$PXFER_RXE_SERVER_ADDR" >$W/ib.cli 2>&1
		wait %2
		res=$(awk -v s=$s '$1 == s && NF >= 5 { print $4 }' $W/ib.cli)
		res="${res:-FAILED: $(tail -n 1 $W/ib.cli)} MiB/s"
	else
		"$P" recv --transport rdma --bind "$PXFER_RXE_SERVER_ADDR" --port $port \
			--dir $W/d --once >$W/recv.log 2>&1 &
		rp=$!
		sleep 1
		"$P" send --json -j $j --transport rdma --bind "$PXFER_RXE_CLIENT_ADDR" \
			--port $port $W/f "$PXFER_RXE_SERVER_ADDR" >$W/json 2>$W/send.log
		wait $rp
		res="$(grep -o '"seconds":[0-9.]*' $W/json | cut -d: -f2) s"
	fi
	kill $sp
	wait $sp
	echo "rep $r -j$j $v $res: $(cat $W/gaps)"
done; done; done
