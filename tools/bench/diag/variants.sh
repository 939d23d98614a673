#!/bin/bash
# SPDX-License-Identifier: MIT
# variants.sh - pxfer --transport rdma in variants against ib_write_bw, in
# the test VM (see README.md in this directory). One line per run: MiB/s of
# the whole transfer, and the rxe error counters that moved.
#
#   test/vm/run 'DIAG_VARIANTS="ib base none" bash tools/bench/diag/variants.sh'
#
# Environment: DIAG_SIZE (MiB, default 128), DIAG_REPS (3), DIAG_JOBS
# ("1 2"), DIAG_VARIANTS (default "ib base nohash noread nowrite none"),
# DIAG_PXFER (default build/diag/build/release/pxfer, a build with
# probes.patch), DIAG_PACKETS=1 (also the packet and message counters, not
# only the error counters). Variants:
#   ib        ib_write_bw, messages of pxfer's chunk size, -q = -j
#   ibpin     the same with both processes on CPU 0
#   base      pxfer as it is
#   nohash    no XXH3 on either side        } the copy is not checked
#   noread    the sender does not read      } for noread, nowrite, none
#   nowrite   the receiver does not write   }
#   none      all three
#   nice      both pxfer processes at nice 10
#   pin       sender on CPU 0, receiver on CPU 1
#   pin00     both on CPU 0
#   postcpu   posts made from CPU 0, every other thread on CPU 1
#   atoN      ACK timeout N (pxfer's is 16)
#   rN        receiver --ring-mem N MiB, chunk size as by default
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
P=${DIAG_PXFER:-$top/build/diag/build/release/pxfer}
SIZE=${DIAG_SIZE:-128} REPS=${DIAG_REPS:-3} JOBS=${DIAG_JOBS:-"1 2"}
VARS=${DIAG_VARIANTS:-"ib base nohash noread nowrite none"}
[ -n "${PXFER_RXE_VM:-}" ] || { echo "variants.sh: runs inside the test VM" >&2; exit 2; }
[ -x "$P" ] || { echo "variants.sh: no pxfer at $P (see README.md)" >&2; exit 2; }
export PXFER_SECRET=00112233445566778899aabbccddeeff
W=/tmp/diag-variants
rm -rf $W; mkdir -p $W/d
head -c ${SIZE}M /dev/urandom >$W/f
cat $W/f >/dev/null
echo "tmpfs read, then write of a new file (dd, 4 MiB blocks):"
dd if=$W/f of=/dev/null bs=4M 2>&1 | tail -n 1
dd if=$W/f of=$W/g bs=4M 2>&1 | tail -n 1
rm -f $W/g
chunk() { case $1 in 1) echo 4194304 ;; 2) echo 2097152 ;; *) echo 1048576 ;; esac; }
counters() {
	local d f
	for d in /sys/class/infiniband/*; do
		for f in "$d"/ports/1/hw_counters/*; do
			echo "${d##*/}.${f##*/} $(cat "$f")"
		done
	done
}
moved() {               # the counters that moved between two samples
	join <(sort "$1") <(sort "$2") |
		awk -v all="${DIAG_PACKETS:-0}" '$3 != $2 && (all == 1 || $1 !~ /pkts|rdma_/) {
			printf " %s+%d", $1, $3 - $2 }'
}
port=7900
for r in $(seq "$REPS"); do for j in $JOBS; do for v in $VARS; do
	port=$((port + 1))
	rm -rf "${W:?}"/d/*
	counters >$W/c0
	if [ "$v" = ib ] || [ "$v" = ibpin ]; then
		pre=()
		[ "$v" = ibpin ] && pre=(taskset -c 0)
		s=$(chunk "$j") n=$((SIZE * 1048576 / $(chunk "$j") / j))
		[ $n -ge 5 ] || n=5     # ib_write_bw's least
		"${pre[@]}" ib_write_bw -d "$PXFER_RXE_SERVER_DEV" -x "$PXFER_RXE_SERVER_GID" -F \
			-s "$s" -n "$n" -q "$j" -p $port >$W/ib.srv 2>&1 &
		sleep 1.5
		"${pre[@]}" ib_write_bw -d "$PXFER_RXE_CLIENT_DEV" -x "$PXFER_RXE_CLIENT_GID" -F \
			-s "$s" -n "$n" -q "$j" -p $port "$PXFER_RXE_SERVER_ADDR" >$W/ib.cli 2>&1
		wait
		counters >$W/c1
		bw=$(awk -v s="$s" '$1 == s && NF >= 5 { print $4 }' $W/ib.cli)
		echo "rep $r -j$j $v ${bw:-FAILED: $(tail -n 1 $W/ib.cli)} MiB/s$(moved $W/c0 $W/c1)"
		continue
	fi
	env=() rpre=() spre=() rx=()
	case $v in
	base) ;;
	nohash) env=(PXFER_DIAG_NOHASH=1) ;;
	noread) env=(PXFER_DIAG_NOREAD=1) ;;
	nowrite) env=(PXFER_DIAG_NOWRITE=1) ;;
	none) env=(PXFER_DIAG_NOHASH=1 PXFER_DIAG_NOREAD=1 PXFER_DIAG_NOWRITE=1) ;;
	nice) rpre=(nice -n 10) spre=(nice -n 10) ;;
	pin) rpre=(taskset -c 1) spre=(taskset -c 0) ;;
	pin00) rpre=(taskset -c 0) spre=(taskset -c 0) ;;
	postcpu) env=(PXFER_DIAG_POST_CPU=0,1) rpre=(taskset -c 1) spre=(taskset -c 1) ;;
	ato*) env=(PXFER_DIAG_ACK_TIMEOUT=${v#ato}) ;;
	r*) rx=(--ring-mem "${v#r}M") ;;
	*) echo "variants.sh: unknown variant $v" >&2; exit 2 ;;
	esac
	env "${env[@]}" "${rpre[@]}" "$P" recv -v --transport rdma --bind "$PXFER_RXE_SERVER_ADDR" \
		--port $port --dir $W/d --once "${rx[@]}" >$W/recv.log 2>&1 &
	sleep 1
	env "${env[@]}" "${spre[@]}" "$P" send -v --json -j "$j" --transport rdma \
		--bind "$PXFER_RXE_CLIENT_ADDR" --port $port $W/f "$PXFER_RXE_SERVER_ADDR" \
		>$W/json 2>$W/send.log
	rc=$?
	wait
	counters >$W/c1
	ok=copy-ok
	case $v in
	noread|nowrite|none) ok=unchecked ;;
	*) cmp -s $W/f $W/d/f || ok=COPY-DIFFERS ;;
	esac
	b=$(grep -o '"bytes":[0-9]*' $W/json | cut -d: -f2)
	t=$(grep -o '"seconds":[0-9.]*' $W/json | cut -d: -f2)
	echo "rep $r -j$j $v $(awk -v b="${b:-0}" -v t="${t:-1}" 'BEGIN { printf "%.2f", b / 1048576 / t }') MiB/s ${t}s exit $rc $ok$(moved $W/c0 $W/c1)"
	grep -o 'diag: data connection.*' $W/send.log | sed 's/^/    /'
done; done; done
