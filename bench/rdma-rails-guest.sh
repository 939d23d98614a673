#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of bench/rdma.sh --rails: runs inside the Soft-RoCE test VM
# (test/vm/run), which has two rails (veth0/rxe0 - veth1/rxe1 and
# veth2/rxe2 - veth3/rxe3), and measures in one boot:
#   one rail     pxfer -j J --device rxe1 to a receiver --device rxe0
#   two rails    pxfer -j J --device rxe1,rxe3 to a receiver --device
#                rxe0,rxe2: J data connections, half on each rail
#   ceiling      two ib_write_bw at once, one per rail, each moving half
#                the bytes as writes of pxfer's chunk size on J/2 QPs;
#                the sum of their "BW average" (MB = 2^20)
# Each repetition runs the three back to back, their order rotating.
# pxfer's figure is the sender's --json bytes / seconds (the whole
# transfer); every copy is checked with cmp, and each rail's client veth
# must have sent at least a third of the bytes in the two-rail runs.
#
#   rdma-rails-guest.sh [--reps N] [--size MIB] [--jobs J] [--logdir DIR]
#                       [--pxfer PATH]
#
# The target: two rails at 0.9x the ceiling or better. Exit status: 0
# when every run worked and every copy was correct, target met or not; 1
# when a run failed; 2 on a bad command line or outside the VM.
set -uo pipefail

PXFER='' reps=3 size=128 jobs=2 logdir=''
usage() { sed -n '18,19s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--reps) reps=${2:-}; shift ;;
	--size) size=${2:-}; shift ;;
	--jobs) jobs=${2:-}; shift ;;
	--logdir) logdir=${2:-}; shift ;;
	--pxfer) PXFER=${2:-}; shift ;;
	--quick) reps=1 size=32 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "rdma-rails-guest: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
for v in "$reps" "$size" "$jobs"; do
	if ! [[ $v =~ ^[0-9]+$ ]] || [ "$v" -eq 0 ]; then
		echo "rdma-rails-guest: '$v' is not a positive number" >&2
		exit 2
	fi
done
[ $((jobs % 2)) -eq 0 ] || { echo "rdma-rails-guest: --jobs takes an even number (half on each rail)" >&2; exit 2; }
if [ -z "${PXFER_RXE_VM:-}" ] || [ -z "${PXFER_RXE_SERVER_DEV2:-}" ]; then
	echo "rdma-rails-guest: runs inside the test VM with two rails only; use bench/rdma.sh --rails" >&2
	exit 2
fi
top=$(cd "$(dirname "$0")/.." && pwd)
PXFER=${PXFER:-$top/build/release/pxfer}
[ -x "$PXFER" ] || { echo "rdma-rails-guest: no pxfer at $PXFER" >&2; exit 2; }
for t in ib_write_bw cmp timeout awk; do
	command -v "$t" >/dev/null || { echo "rdma-rails-guest: missing $t" >&2; exit 2; }
done

# shellcheck disable=SC2153  # the test VM exports these
SDEV=$PXFER_RXE_SERVER_DEV CDEV=$PXFER_RXE_CLIENT_DEV
SDEV2=$PXFER_RXE_SERVER_DEV2 CDEV2=$PXFER_RXE_CLIENT_DEV2
SGID=$PXFER_RXE_SERVER_GID SGID2=$PXFER_RXE_SERVER_GID2
CGID=$PXFER_RXE_CLIENT_GID CGID2=$PXFER_RXE_CLIENT_GID2
SADDR=$PXFER_RXE_SERVER_ADDR SADDR2=$PXFER_RXE_SERVER_ADDR2
CIF=$PXFER_RXE_CLIENT_IF CIF2=$PXFER_RXE_CLIENT_IF2
export PXFER_SECRET=rails-bench-secret-0123456789abcdefghij

W=$(mktemp -d /tmp/rails-bench.XXXXXX) || exit 1
mkdir -p "$W/logs"
trap 'rm -rf "$W/dst"* "$W/file"' EXIT
calc() { awk "BEGIN { printf \"%${2:-.2f}\", ($1) }"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
tx() { cat "/sys/class/net/$1/statistics/tx_bytes"; }

wait_line() {
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
wait_tcp() {
	local hex i
	hex=$(printf '%04X' "$1")
	for ((i = 0; i < 300; i++)); do
		grep -q "^ *[0-9]*: [0-9A-F]*:$hex [0-9A-F]*:0000 0A" /proc/net/tcp 2>/dev/null &&
			return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

head -c $((size << 20)) /dev/urandom >"$W/file" || exit 1
cat "$W/file" >/dev/null
RUNS=0 PORT=20000 FAILED=0 CHUNK=''

# px NAME RECV-DEVICES SEND-DEVICES: one transfer; sets R (MiB/s), and
# T1, T2 (bytes each client veth sent)
px() {
	local name=$1 rdev=$2 sdev=$3 log dst rpid crc rrc bytes secs a1 a2
	RUNS=$((RUNS + 1)) PORT=$((PORT + 1))
	log=$W/logs/$RUNS.$name dst=$W/dst.$RUNS
	mkdir -p "$dst"
	timeout -k 5 300 "$PXFER" recv -v --transport rdma --device "$rdev" \
		--port $PORT --dir "$dst" --once >"$log.recv" 2>&1 &
	rpid=$!
	wait_line "$log.recv" 'receiving into' $rpid ||
		{ echo "  failed: $name: the receiver did not start"; tail -n 3 "$log.recv"; return 1; }
	a1=$(tx "$CIF") a2=$(tx "$CIF2")
	timeout -k 5 300 "$PXFER" send -v --json -j "$jobs" --transport rdma \
		--device "$sdev" --port $PORT "$W/file" "$SADDR" >"$log.json" 2>"$log.send"
	crc=$?
	T1=$(($(tx "$CIF") - a1)) T2=$(($(tx "$CIF2") - a2))
	wait $rpid
	rrc=$?
	bytes=$(sed -n 's/.*"bytes":\([0-9]*\),.*/\1/p' "$log.json")
	secs=$(sed -n 's/.*"seconds":\([0-9.]*\),.*/\1/p' "$log.json")
	if [ $crc -ne 0 ] || [ $rrc -ne 0 ] || [ "$bytes" != $((size << 20)) ] ||
	   ! cmp -s "$W/file" "$dst/file"; then
		echo "  failed: $name: sender $crc, receiver $rrc, $bytes bytes"
		grep -h -E 'error|warning' "$log.send" "$log.recv" | head -n 4 | sed 's/^/    /'
		rm -rf "$dst"
		return 1
	fi
	rm -rf "$dst"
	CHUNK=$(sed -n 's/.* \([0-9]*\) KiB chunks.*/\1/p' "$log.send" | head -n 1)
	R=$(calc "$bytes / 1048576 / $secs")
	return 0
}

# ib2: two ib_write_bw at once, one per rail; sets R (the sum, MiB/s)
ib2() {
	local log q=$((jobs / 2)) s=$((CHUNK << 10)) n p1 p2 c1 c2 r1 r2 rc=0
	RUNS=$((RUNS + 1)) PORT=$((PORT + 2))
	log=$W/logs/$RUNS.ib
	n=$(((size << 20) / 2 / q / s))
	[ "$n" -ge 1 ] || n=1
	ib_write_bw -d "$SDEV" -x "$SGID" -F -s $s -n $n -q $q -p $PORT >"$log.srv1" 2>&1 &
	p1=$!
	ib_write_bw -d "$SDEV2" -x "$SGID2" -F -s $s -n $n -q $q -p $((PORT + 1)) >"$log.srv2" 2>&1 &
	p2=$!
	if ! wait_tcp $PORT $p1 || ! wait_tcp $((PORT + 1)) $p2; then
		echo "  failed: ib_write_bw servers did not listen"
		kill $p1 $p2 2>/dev/null
		return 1
	fi
	timeout -k 5 300 ib_write_bw -d "$CDEV" -x "$CGID" -F -s $s -n $n -q $q -p $PORT "$SADDR" >"$log.cli1" 2>&1 &
	c1=$!
	timeout -k 5 300 ib_write_bw -d "$CDEV2" -x "$CGID2" -F -s $s -n $n -q $q -p $((PORT + 1)) "$SADDR2" >"$log.cli2" 2>&1 &
	c2=$!
	wait $c1 || rc=1
	wait $c2 || rc=1
	wait $p1 || rc=1
	wait $p2 || rc=1
	r1=$(awk -v s=$s '$1 == s && NF >= 5 && $2 ~ /^[0-9]+$/ { v = $4 } END { print v }' "$log.cli1")
	r2=$(awk -v s=$s '$1 == s && NF >= 5 && $2 ~ /^[0-9]+$/ { v = $4 } END { print v }' "$log.cli2")
	if [ $rc -ne 0 ] || [ -z "$r1" ] || [ -z "$r2" ]; then
		echo "  failed: ib_write_bw, one per rail"
		tail -n 2 "$log.cli1" "$log.cli2" | sed 's/^/    /'
		return 1
	fi
	R=$(calc "$r1 + $r2")
	return 0
}

echo "rails: $size MiB, pxfer -j $jobs, $reps repetitions; rail 1 $CDEV -> $SDEV ($CIF), rail 2 $CDEV2 -> $SDEV2 ($CIF2)"
one=() two=() ceil=() share=()
for ((r = 1; r <= reps; r++)); do
	for k in 0 1 2; do
		case $(((k + r) % 3)) in
		0)
			px one "$SDEV" "$CDEV" && one+=("$R") && echo "  rep $r one rail:  $R MiB/s" || FAILED=1 ;;
		1)
			if px two "$SDEV,$SDEV2" "$CDEV,$CDEV2"; then
				two+=("$R")
				share+=("$(calc "100 * $T2 / ($T1 + $T2 + 1)" .0f)")
				echo "  rep $r two rails: $R MiB/s ($CIF sent $((T1 >> 20)) MiB, $CIF2 $((T2 >> 20)) MiB)"
				if [ $((T1 * 3)) -lt $((size << 20)) ] || [ $((T2 * 3)) -lt $((size << 20)) ]; then
					echo "  failed: a rail carried less than a third of the bytes"
					FAILED=1
				fi
			else
				FAILED=1
			fi ;;
		2)
			[ -n "$CHUNK" ] || px one "$SDEV" "$CDEV" >/dev/null
			ib2 && ceil+=("$R") && echo "  rep $r ceiling:   $R MiB/s (2 x ib_write_bw, ${CHUNK} KiB writes)" || FAILED=1 ;;
		esac
	done
done
m1=$(printf '%s\n' "${one[@]}" | median)
m2=$(printf '%s\n' "${two[@]}" | median)
mc=$(printf '%s\n' "${ceil[@]}" | median)
echo
echo "| run | MiB/s (median of $reps) |"
echo "| --- | ---: |"
echo "| pxfer, one rail, -j $jobs | ${m1:--} |"
echo "| pxfer, two rails, -j $jobs | ${m2:--} |"
echo "| 2 x ib_write_bw, one per rail | ${mc:--} |"
if [ -n "$m1" ] && [ -n "$m2" ] && [ -n "$mc" ]; then
	echo
	echo "two rails / one rail: $(calc "$m2 / $m1")x"
	echo "two rails / ceiling:  $(calc "$m2 / $mc")x (target 0.9x: $(awk -v a="$m2" -v b="$mc" 'BEGIN { print (a >= 0.9 * b) ? "MET" : "MISSED" }'))"
	echo "second rail's share of the bytes: $(printf '%s\n' "${share[@]}" | median)%"
fi
echo "guest CPUs: $(nproc)"
[ -n "$logdir" ] && cp -r "$W/logs" "$logdir/rails-logs" 2>/dev/null
exit $FAILED
