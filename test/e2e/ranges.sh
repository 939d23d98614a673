#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_ranges: the ranges of one file sent by several sessions of one job
# into one partial (docs/protocol.md, "Ranges of one file"), each session
# a test/helper/range_send (one range of a job, as a rank would send it;
# exit 3 when the receiver is busy with it, then it is sent again):
#   - a 200 MiB file cut in 4 ranges sent at once by 4 sessions: named
#     once, by one session, equal to the source, its mode and mtime too
#   - 3 ranges of another file in: not under its name, its partial kept;
#     the 4th range in flight (crept), a range of another job meanwhile
#     is busy; the 4th range's sender killed: still not under its name,
#     the partial kept; that range sent again: the file named, equal,
#     and only about what the killed session had not brought was sent
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

RS=$HELPERS/range_send
[ -x "$RS" ] || fail "'$RS' is missing (make all builds it)"
MiB=$((1 << 20))
Q=$((50 * MiB))
JOB=00112233445566778899aabbccddeeff
OTHER=ff

src=$T/src
dst=$T/dst
mkdir -p "$src" "$dst" || fail "mkdir"
for f in big big2; do
	head -c $((4 * Q)) /dev/urandom >"$src/$f" || fail "cannot write"
	chmod 0640 "$src/$f"
	touch -d '2021-03-04 05:06:07.123456789' "$src/$f"
done

# rank FILE K [JOB] - send range K of FILE until the receiver takes it
# (exit 3: busy, tried again); RANK_RC, its output in $T/rank.FILE.K
rank()
{
	local f=$1 k=$2 job=${3:-$JOB} t

	for ((t = 0; t < 100; t++)); do
		timeout -k 5 120 "$RS" -j 2 127.0.0.1 "$RECV_PORT" "$src/$f" \
			$((k * Q)) "$Q" "$job" >"$T/rank.$f.$k" 2>"$T/rank.$f.$k.err"
		RANK_RC=$?
		[ "$RANK_RC" -eq 3 ] || return 0
		sleep 0.1
	done
}

# sent FILE K - the bytes range K's last session sent
sent()
{
	sed -n 's/.*bytes \([0-9]*\).*/\1/p' "$T/rank.$1.$2"
}

note "4 ranges of a 200 MiB file, sent at once by 4 sessions"
start_server "$dst" -v
pids=()
for k in 0 1 2 3; do
	(rank big "$k"; exit "$RANK_RC") &
	pids+=("$!")
	track "$!"
done
for k in 0 1 2 3; do
	wait_pid "${pids[$k]}" 300
	[ "$WAIT_RC" -eq 0 ] || {
		cat "$T/rank.big.$k" "$T/rank.big.$k.err" >&2
		fail "range $k ended with $WAIT_RC"
	}
done
file_equal "$src/big" "$dst/big"
check_num "sessions that named it" "$(grep -c "'big': every range is in; named" "$RECV_LOG")" -eq 1
check_num "ranges taken" "$(grep -c "'big': range \[" "$RECV_LOG")" -ge 4
check_num "partials left" "$(partials "$dst")" -eq 0
stop_recv

note "3 ranges in, the 4th crept and killed, another job busy meanwhile"
start_server "$dst" -v --ring-mem 1M
for k in 0 1 2; do
	rank big2 "$k"
	expect_rc 0 "$RANK_RC" "range $k of big2"
done
[ -e "$dst/big2" ] && fail "big2 is under its name with 3 ranges of 4 in"
check_num "partials with 3 ranges in" "$(partials "$dst")" -eq 1
"$RS" -j 1 -c 65536 127.0.0.1 "$RECV_PORT" "$src/big2" \
	$((3 * Q)) "$Q" "$JOB" >"$T/crept" 2>&1 &
crept=$!
track "$crept"
# 10 MiB of it on the receiver's disk, past the 150 MiB of the others
if ! creep 120 "$crept" arrived "$dst" 160; then
	cat "$T/crept" >&2
	fail "10 MiB of the 4th range did not arrive within 120 s"
fi
# the 4th range in flight (its sender stopped): another job is busy
timeout -k 5 60 "$RS" -j 1 127.0.0.1 "$RECV_PORT" "$src/big2" 0 "$Q" "$OTHER" \
	>"$T/other" 2>&1
expect_rc 3 "$?" "another job's range while this job's is in flight"
expect_grep "another job" "$RECV_LOG" "the busy range's refusal"
kill -KILL "$crept"
wait_pid "$crept" 10
# the receiver sees the session end (its connection closed); the
# partial stays
sleep 2
[ -e "$dst/big2" ] && fail "big2 is under its name with its 4th range killed"
check_num "partials after the kill" "$(partials "$dst")" -eq 1
rank big2 3
expect_rc 0 "$RANK_RC" "the 4th range again"
file_equal "$src/big2" "$dst/big2"
check_num "bytes of the 4th range sent again" "$(sent big2 3)" -lt "$Q"
check_num "bytes of the 4th range sent again" "$(sent big2 3)" -gt 0
check_num "partials left" "$(partials "$dst")" -eq 0
stop_recv
finish
