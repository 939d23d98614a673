#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_sessions: one receiver, many senders at once.
#   - 8 senders at once, each with a tree and a large file: all intact;
#     the receiver's peak RSS stays within its ring budget plus a bound
#     per session; one session line and one JSON line per sender
#   - a sender that finds every session taken is told so, waits and gets
#     in when the session ends; with a short --wait it fails with exit 6
#     and says the receiver was busy
#   - an authenticated sender that holds the only session and only sends
#     PINGs is ended after --idle-timeout, and a sender waiting meanwhile
#     gets in
#   - two senders writing the same path at once: the file under its name
#     is one of the two, whole; no temporary file is left
#   - SIGTERM: a newcomer is told the receiver is stopping, the running
#     session finishes within --grace; a session still running when the
#     grace ends is stopped and leaves no final-named partial
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

N=8
src=$T/src
mkdir -p "$src" || fail "mkdir"
note "making $N trees of 40 small files and a 24 MiB file each"
for ((i = 0; i < N; i++)); do
	mkdir -p "$src/t$i/sub" || fail "mkdir"
	head -c $((24 << 20)) /dev/urandom >"$src/t$i/big" || fail "cannot write"
	for ((j = 0; j < 40; j++)); do
		echo "tree $i file $j" >"$src/t$i/sub/f$j"
	done
done
head -c $((256 << 20)) /dev/zero >"$src/huge" || fail "cannot write"
ok "made"

# hwm PID - the peak resident set of PID, in KiB
hwm()
{
	awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

note "$N senders at once, 64 MiB of rings in all"
dst=$T/dst.many
mkdir "$dst"
start_server "$dst" --ring-mem 64M --max-sessions $N --json
base=$(hwm "$RECV_PID")
pids=()
errs=()
for ((i = 0; i < N; i++)); do
	bg_send -q -j 4 "$src/t$i" "$(target)"
	pids+=("$SEND_PID")
	errs+=("$SEND_ERR")
done
for ((i = 0; i < N; i++)); do
	wait_pid "${pids[i]}" 120
	[ "$WAIT_RC" -eq 0 ] || {
		cat "${errs[i]}" >&2
		fail "sender $i exited $WAIT_RC"
	}
done
for ((i = 0; i < N; i++)); do
	tree_equal "$src/t$i" "$dst/t$i"
done
peak=$(hwm "$RECV_PID")
# the rings (64 MiB) and at most 8 MiB a session for everything else
# (file table, control buffers, threads' stacks in use); AddressSanitizer's
# own memory is in the base measured before the first sender, but
# ThreadSanitizer shadows every byte the threads touch several times over
limit=$((base + (64 << 10) + N * (8 << 10)))
if ldd "$PXFER" 2>/dev/null | grep -q libtsan; then
	ok "peak RSS $((peak >> 10)) MiB under ThreadSanitizer: not held to the bound of $((limit >> 10)) MiB"
else
	[ "$peak" -le "$limit" ] ||
		fail "the receiver's peak RSS is $((peak >> 10)) MiB, more than $((limit >> 10)) MiB (rings 64 MiB, base $((base >> 10)) MiB)"
	ok "peak RSS $((peak >> 10)) MiB (base $((base >> 10)) MiB, bound $((limit >> 10)) MiB)"
fi
lines=$(grep -c '^pxfer: received 41 files' "$RECV_LOG")
[ "$lines" -eq "$N" ] || fail "$lines session lines in the receiver's log, expected $N"
python3 - "$RECV_LOG" "$N" <<'EOF' || fail "the JSON session lines are wrong"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(rows) == int(sys.argv[2]), rows
for r in rows:
    assert r["event"] == "session" and r["status"] == "ok", r
    assert r["files"] == 41 and r["files_failed"] == 0, r
    assert r["bytes"] == (24 << 20) + sum(len("tree 0 file %d\n" % j) for j in range(40)), r
    assert r["exit_code"] == 0 and r["error"] is None and r["transport"] == "tcp", r
EOF
ok "$N session lines and $N JSON lines"
stop_recv

note "a sender that finds the receiver full waits, then gets in"
dst=$T/dst.busy
mkdir "$dst"
start_server "$dst" --max-sessions 1
bg_send -q -j 1 "$src/huge" "$(target)"
first=$SEND_PID
wait_for 30 have_part "$dst" || fail "the first session did not start within 30 s"
kill -STOP "$first"
psend --wait 1 "$src/t1" "$(target)"
expect_rc 6 "$SEND_RC" "a sender that waited 1 s for a busy receiver"
expect_grep "busy" "$SEND_ERR" "a sender that waited 1 s"
ok "with --wait 1: exit 6, $(grep -m 1 error "$SEND_ERR")"
( sleep 2; kill -CONT "$first" ) &
send_ok "$src/t1" "$(target)"
expect_grep "is busy" "$SEND_ERR" "a sender that waited"
tree_equal "$src/t1" "$dst/t1"
wait_pid "$first" 60
expect_rc 0 "$WAIT_RC" "the first sender"
cmp -s "$src/huge" "$dst/huge" || fail "the first sender's file differs"
ok "the waiting sender got in after the first session ended"
stop_recv

note "an idle session is ended and a waiting sender gets in"
HS=$HELPERS/hostile_sender
if [ -x "$HS" ]; then
	dst=$T/dst.idle
	mkdir "$dst"
	start_server "$dst" --max-sessions 1 --idle-timeout 2
	timeout -k 5 60 "$HS" 127.0.0.1 "$RECV_PORT" ping-only >"$T/idle.out" 2>&1 &
	idle_pid=$!
	track "$idle_pid"
	wait_for 10 grep -q "ping-only" "$T/idle.out" || fail "the idle sender did not start"
	sleep 0.5
	timer_start
	send_ok --wait 30 "$src/t2" "$(target)"
	secs=$(timer_secs)
	expect_grep "is busy" "$SEND_ERR" "a sender behind an idle session"
	tree_equal "$src/t2" "$dst/t2"
	expect_grep "idle for 2 s" "$RECV_LOG" "the receiver"
	wait_pid "$idle_pid" 30
	ok "the idle session was ended; the waiting sender got in and finished in $secs s"
	stop_recv
else
	note "skipped: $HS is not built"
fi

note "two senders write the same path at once"
mkdir -p "$T/a" "$T/b"
head -c $((64 << 20)) /dev/urandom >"$T/a/same" || fail "cannot write"
head -c $((64 << 20)) /dev/urandom >"$T/b/same" || fail "cannot write"
dst=$T/dst.same
mkdir "$dst"
start_server "$dst"
for round in 1 2 3; do
	bg_send -q -j 2 "$T/a/same" "$(target)"
	pa=$SEND_PID
	bg_send -q -j 2 "$T/b/same" "$(target)"
	wait_pid "$pa" 60
	expect_rc 0 "$WAIT_RC" "sender a, round $round"
	wait_pid "$SEND_PID" 60
	expect_rc 0 "$WAIT_RC" "sender b, round $round"
	if cmp -s "$T/a/same" "$dst/same"; then
		ok "round $round: the file is a's, whole"
	elif cmp -s "$T/b/same" "$dst/same"; then
		ok "round $round: the file is b's, whole"
	else
		fail "round $round: the file is neither a's nor b's"
	fi
done
[ "$(finals "$dst")" = same ] || fail "left in the directory: $(ls -A "$dst")"
no_part_files "$dst"
stop_recv

note "SIGTERM: no newcomers, the running session finishes within --grace"
dst=$T/dst.grace
mkdir "$dst"
start_server "$dst" --grace 60
bg_send -q -j 1 "$src/huge" "$(target)"
first=$SEND_PID
wait_for 30 have_part "$dst" || fail "the session did not start within 30 s"
kill -STOP "$first"
kill -TERM "$RECV_PID"
wait_for 10 grep -q "no new sessions" "$RECV_LOG" ||
	fail "the receiver did not say it stops taking sessions"
psend "$src/t2" "$(target)"
[ "$SEND_RC" -ne 0 ] || fail "a sender got in after SIGTERM"
expect_grep "shutting down" "$SEND_ERR" "a sender after SIGTERM"
ok "a newcomer is told: $(grep -m 1 error "$SEND_ERR")"
kill -CONT "$first"
wait_pid "$first" 60
expect_rc 0 "$WAIT_RC" "the running sender"
cmp -s "$src/huge" "$dst/huge" || fail "the running sender's file differs"
wait_recv 30
expect_rc 130 "$WAIT_RC" "the receiver after SIGTERM"
ok "the running session completed; the receiver exited 130"

note "SIGTERM: a session still running at the end of the grace is stopped"
dst=$T/dst.nograce
mkdir "$dst"
start_server "$dst" --grace 1
bg_send -q -j 1 "$src/huge" "$(target)"
first=$SEND_PID
wait_for 30 have_part "$dst" || fail "the session did not start within 30 s"
kill -STOP "$first"
kill -TERM "$RECV_PID"
wait_recv 20
expect_rc 130 "$WAIT_RC" "the receiver after its grace"
expect_grep "grace period is over" "$RECV_LOG" "the receiver after its grace"
[ -z "$(finals "$dst")" ] || fail "final names after the session was stopped: $(finals "$dst")"
no_part_files "$dst"
kill -CONT "$first"
wait_pid "$first" 30
[ "$WAIT_RC" -ne 0 ] || fail "the stopped sender exited 0"
ok "stopped after 1 s; nothing under a final name; the sender exited $WAIT_RC"

finish
