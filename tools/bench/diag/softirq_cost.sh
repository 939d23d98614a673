#!/bin/bash
# SPDX-License-Identifier: MIT
# softirq_cost.sh - in the test VM: throughput against the CPU that rxe's
# softirq work costs per MiB moved, for ib_write_bw and pxfer variants in
# one boot. One line per run: MiB/s of the whole transfer, then softirq and
# busy CPU milliseconds per MiB and context switches per MiB, all from
# /proc/stat around the run (the whole guest, both processes).
#
#   test/vm/run 'bash tools/bench/diag/softirq_cost.sh'
#
# Environment: DIAG_SIZE (MiB, default 128), DIAG_REPS (5), DIAG_JOBS
# ("1 2"), DIAG_VARIANTS (default "ib base sync"), DIAG_PXFER (default
# build/release/pxfer). Variants:
#   ib       ib_write_bw, messages of pxfer's chunk size, -q = -j
#   ib1m     ib_write_bw with 1 MiB messages
#   floor    tools/rdma_floor (pread, RDMA WRITE with immediate, pwrite,
#            slots returned by SEND) in chunks of pxfer's size, sender
#            busy-polling; floore: its sender sleeping on the channel
#   base     pxfer as built
#   sync     pxfer --io sync on both sides
#   cNrM     sender --chunk-size N MiB, receiver --ring-mem M MiB
#   post     PXFER_RDMA_POSTER=1, nopost: =0 (a build with poster.patch)
#   none     no read, hash or write of the data (a build with probes.patch)
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
P=${DIAG_PXFER:-$top/build/release/pxfer}
SIZE=${DIAG_SIZE:-128} REPS=${DIAG_REPS:-5} JOBS=${DIAG_JOBS:-"1 2"}
VARS=${DIAG_VARIANTS:-"ib base sync"}
[ -n "${PXFER_RXE_VM:-}" ] || { echo "softirq_cost.sh: runs inside the test VM" >&2; exit 2; }
[ -x "$P" ] || { echo "softirq_cost.sh: no pxfer at $P" >&2; exit 2; }
export PXFER_SECRET=00112233445566778899aabbccddeeff
W=/tmp/diag-softirq
rm -rf $W; mkdir -p $W/d
head -c ${SIZE}M /dev/urandom >$W/f
snap() {                # the "cpu" line and the context switch count
	{ grep '^cpu ' /proc/stat; grep '^ctxt' /proc/stat; } | paste -sd ' ' >"$1"
}
cost() {
	paste "$1" "$2" | awk -v mib="$SIZE" '{
		si = $21 - $8
		busy = ($15 + $16 + $17 + $20 + $21) - ($2 + $3 + $4 + $7 + $8)
		printf "softirq %.1f busy %.1f ms/MiB, %d context switches/MiB",
		       10 * si / mib, 10 * busy / mib, ($26 - $13) / mib }'
}
port=8600
for r in $(seq "$REPS"); do for j in $JOBS; do for v in $VARS; do
	port=$((port + 1))
	rm -rf "${W:?}"/d/*
	s=$((4194304 / j))
	[ "$j" -le 4 ] || s=1048576
	[ "$v" = ib1m ] && s=1048576
	if [ "$v" = ib ] || [ "$v" = ib1m ]; then
		n=$((SIZE * 1048576 / s / j))
		[ $n -ge 5 ] || n=5     # ib_write_bw's least
		ib_write_bw -d "$PXFER_RXE_SERVER_DEV" -x "$PXFER_RXE_SERVER_GID" -F -s $s -n $n \
			-q "$j" -p $port >$W/ib.srv 2>&1 &
		sleep 1.5
		snap $W/s0
		ib_write_bw -d "$PXFER_RXE_CLIENT_DEV" -x "$PXFER_RXE_CLIENT_GID" -F -s $s -n $n \
			-q "$j" -p $port "$PXFER_RXE_SERVER_ADDR" >$W/ib.cli 2>&1
		snap $W/s1
		wait
		bw=$(awk -v s=$s '$1 == s && NF >= 5 { print $4 }' $W/ib.cli)
		echo "rep $r -j$j $v ${bw:-FAILED} MiB/s, $(cost $W/s0 $W/s1)"
		continue
	fi
	if [ "$v" = floor ] || [ "$v" = floore ]; then
		F=$(dirname "$P")/tools/rdma_floor e=()
		[ "$v" = floore ] && e=(-e)
		"$F" recv -s $((s >> 20)) "$PXFER_RXE_SERVER_ADDR" $port $W/d/f "$j" >$W/floor.srv 2>&1 &
		sleep 1
		snap $W/s0
		"$F" send -s $((s >> 20)) -b "$PXFER_RXE_CLIENT_ADDR" "${e[@]}" \
			"$PXFER_RXE_SERVER_ADDR" $port $W/f "$j" >$W/floor.out 2>&1
		rc=$?
		snap $W/s1
		wait
		ok=copy-ok
		cmp -s $W/f $W/d/f || ok=COPY-DIFFERS
		echo "rep $r -j$j $v $(awk -v mib="$SIZE" '$1 == "bytes" { printf "%.2f MiB/s (data phase %.2f)", mib / $4, mib / $6 }' $W/floor.out) (exit $rc, $ok), $(cost $W/s0 $W/s1)"
		continue
	fi
	env=() rx=() sx=()
	case $v in
	base) ;;
	sync) rx=(--io sync) sx=(--io sync) ;;
	c*r*) n=${v#c}; rx=(--ring-mem "${n#*r}M"); sx=(--chunk-size "${n%r*}M") ;;
	post) env=(PXFER_RDMA_POSTER=1) ;;
	nopost) env=(PXFER_RDMA_POSTER=0) ;;
	none) env=(PXFER_DIAG_NOHASH=1 PXFER_DIAG_NOREAD=1 PXFER_DIAG_NOWRITE=1) ;;
	*) echo "softirq_cost.sh: unknown variant $v" >&2; exit 2 ;;
	esac
	env "${env[@]}" "$P" recv --transport rdma --bind "$PXFER_RXE_SERVER_ADDR" --port $port \
		--dir $W/d --once "${rx[@]}" >$W/recv.log 2>&1 &
	sleep 1
	snap $W/s0
	env "${env[@]}" "$P" send --json -j "$j" --transport rdma --bind "$PXFER_RXE_CLIENT_ADDR" \
		--port $port "${sx[@]}" $W/f "$PXFER_RXE_SERVER_ADDR" >$W/json 2>$W/send.log
	rc=$?
	snap $W/s1
	wait
	ok=copy-ok
	if [ "$v" = none ]; then
		ok=unchecked
	elif ! cmp -s $W/f $W/d/f; then
		ok=COPY-DIFFERS
	fi
	b=$(grep -o '"bytes":[0-9]*' $W/json | cut -d: -f2)
	t=$(grep -o '"seconds":[0-9.]*' $W/json | cut -d: -f2)
	echo "rep $r -j$j $v $(awk -v b="${b:-0}" -v t="${t:-1}" 'BEGIN { printf "%.2f", b / 1048576 / t }') MiB/s (exit $rc, $ok), $(cost $W/s0 $W/s1)"
done; done; done
