#!/bin/bash
# SPDX-License-Identifier: MIT
# builds_ab.sh A B - in the test VM: two pxfer binaries, alternated in one
# boot (A then B, DIAG_REPS times, default 6), one large file at each -j of
# DIAG_JOBS (default "1 2"), DIAG_SIZE MiB (default 128). One line per run:
# MiB/s of the whole transfer, whether the copy is intact, and the send
# queue depth the sender's -v report names.
#
#   git worktree add build/prev HEAD~1 && make -C build/prev
#   test/vm/run 'bash tools/bench/diag/builds_ab.sh build/prev/build/release/pxfer build/release/pxfer'
set -u
[ $# -eq 2 ] || { echo "usage: builds_ab.sh PXFER_A PXFER_B" >&2; exit 2; }
[ -n "${PXFER_RXE_VM:-}" ] || { echo "builds_ab.sh: runs inside the test VM" >&2; exit 2; }
A=$(realpath "$1") B=$(realpath "$2")
[ -x "$A" ] && [ -x "$B" ] || { echo "builds_ab.sh: $1 or $2 is not built" >&2; exit 2; }
SIZE=${DIAG_SIZE:-128} REPS=${DIAG_REPS:-6} JOBS=${DIAG_JOBS:-"1 2"}
export PXFER_SECRET=00112233445566778899aabbccddeeff
W=/tmp/diag-builds
rm -rf $W; mkdir -p $W/d
head -c ${SIZE}M /dev/urandom >$W/f
port=9100
for r in $(seq "$REPS"); do for v in A B; do for j in $JOBS; do
	port=$((port + 1))
	rm -rf "${W:?}"/d/*
	P=${!v}
	"$P" recv --transport rdma --bind "$PXFER_RXE_SERVER_ADDR" --port $port --dir $W/d \
		--once >$W/recv.log 2>&1 &
	sleep 1
	"$P" send -v --json -j "$j" --transport rdma --bind "$PXFER_RXE_CLIENT_ADDR" \
		--port $port $W/f "$PXFER_RXE_SERVER_ADDR" >$W/json 2>$W/send.log
	rc=$?
	wait
	ok=copy-ok
	cmp -s $W/f $W/d/f || ok=COPY-DIFFERS
	t=$(grep -o '"seconds":[0-9.]*' $W/json | cut -d: -f2)
	echo "rep $r -j$j $v $(awk -v s="$SIZE" -v t="${t:-0}" 'BEGIN { if (t > 0) printf "%.2f", s / t; else printf "-" }') MiB/s (exit $rc, $ok; $(grep -o 'send queue depth [0-9]*' $W/send.log | head -n 1))"
done; done; done
