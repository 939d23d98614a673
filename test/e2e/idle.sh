#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_idle: a session that makes no progress ends (pxfer recv
# --idle-timeout), and one that is only slow does not. Against a receiver
# with --idle-timeout 2:
#   - a sender that proves the secret and then only sends PINGs
#     (hostile_sender ping-only) gets an ABORT saying "idle for 2 s" within
#     a few seconds, and the receiver logs why and keeps serving
#   - a sender that sends a directory, a file, its chunks, FILE_END and
#     FIN 0.8 s apart (hostile_sender trickle) completes
#   - one that sends half a chunk and then only PINGs (half-chunk) is
#     ended too, though a worker waits for the rest of the chunk
#   - pxfer send, stopped (SIGSTOP) in the middle of a file, is let go:
#     when it goes on it prints the receiver's reason and exits 4; nothing
#     half-written keeps a name. Its worker waits in the middle of a chunk
#     meanwhile, with writes it cannot reap: they must not count as the
#     receiver's own work in hand, or the session is held for ever
#   - then a normal transfer to the same receiver succeeds
# and the option's values are checked: 0 to 86400.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

HS=$HELPERS/hostile_sender
[ -x "$HS" ] || skip "$HS is not built"

note "--idle-timeout takes seconds from 0 to 86400"
for bad in -1 86401 2x ""; do
	"$PXFER" recv --idle-timeout "$bad" --port 1 >"$T/bad.out" 2>&1
	expect_rc 2 $? "pxfer recv --idle-timeout '$bad'"
	expect_grep "--idle-timeout takes seconds" "$T/bad.out" "--idle-timeout '$bad'"
done
"$PXFER" recv --help | grep -q -- "--idle-timeout SEC" ||
	fail "pxfer recv --help does not list --idle-timeout"
ok "bad values refused; --help lists it"

dir=$T/dir
mkdir -p "$dir" || fail "mkdir"
start_server "$dir" --idle-timeout 2 --ring-mem 16M

# idle_ended N - whether the receiver has logged more than N idle sessions
# (run by wait_for)
# shellcheck disable=SC2317
idle_ended()
{
	[ "$(grep -c "idle for 2 s" "$RECV_LOG")" -gt "$1" ]
}

# hostile SCENARIO - play it; its output in $T/idle.SCENARIO.out, its
# outcome in OUTCOME
hostile()
{
	local out=$T/idle.$1.out

	timeout -k 5 90 "$HS" 127.0.0.1 "$RECV_PORT" "$1" >"$out" 2>&1
	rc=$?
	sed 's/^/    | /' "$out"
	[ $rc -eq 0 ] || fail "$1: hostile_sender exited $rc"
	OUTCOME=$(sed -n 's/^outcome: //p' "$out")
}

note "a sender that only sends PINGs"
log_lines=$(wc -l <"$RECV_LOG")
hostile ping-only
[ "$OUTCOME" = aborted ] || fail "ping-only: the session was not ended ($OUTCOME)"
expect_grep "^<- ABORT code=110 .*'idle for 2 s" "$T/idle.ping-only.out" \
	"ping-only: the receiver's ABORT"
secs=$(sed -n 's/^ended after \([0-9]*\)\..*/\1/p' "$T/idle.ping-only.out")
if [ "${secs:-99}" -lt 2 ] || [ "$secs" -gt 6 ]; then
	fail "ping-only: the session ended after ${secs:-?} s, not 2 to 6"
fi
tail -n +$((log_lines + 1)) "$RECV_LOG" >"$T/newlog"
expect_grep "ended the session with the sender .*: idle for 2 s" "$T/newlog" \
	"ping-only: the receiver's log"
recv_alive || fail "the receiver is not serving after the idle session"
ok "ended after $secs s, with the reason on both sides"

note "a slow sender that never idles for 2 s"
hostile trickle
[ "$OUTCOME" = completed ] ||
	fail "trickle: a sender with a step every 0.8 s did not complete ($OUTCOME)"
grep -qx "done slow/file" "$T/idle.trickle.out" || fail "trickle: the file did not arrive"
[ "$(stat -c %s "$dir/slow/file")" -eq 500 ] || fail "trickle: 'slow/file' is not 500 bytes"
ok "completed"
rm -rf "${dir:?}"/*

note "half a chunk, then only PINGs"
hostile half-chunk
[ "$OUTCOME" = aborted ] || fail "half-chunk: the session was not ended ($OUTCOME)"
expect_grep "^<- ABORT code=110 .*'idle for 2 s" "$T/idle.half-chunk.out" \
	"half-chunk: the receiver's ABORT"
wait_for 10 have_no_tmp "$dir" || fail "half-chunk: temporary files are still there 10 s later"
ok "ended; a worker waiting for the rest of a chunk did not hold the session"

note "pxfer send stopped in the middle of a file"
src=$T/src
mkdir -p "$src"
head -c 512M /dev/zero >"$src/big" || fail "cannot write the test file"
"$PXFER" send -q -j 2 "$src/big" "$(target)" >/dev/null 2>"$T/send.err" &
send_pid=$!
track "$send_pid"
wait_for 30 have_part "$dir" || fail "no temporary file appeared on the receiver within 30 s"
ended_before=$(grep -c "idle for 2 s" "$RECV_LOG")
kill -STOP "$send_pid"
timer_start
# what it had sent is still taken and written first: small rings (2 MiB)
# keep that short, even on a slow disk
wait_for 30 idle_ended "$ended_before" ||
	fail "the receiver did not end the stopped sender's session within 30 s"
secs=$(timer_secs)
kill -CONT "$send_pid"
wait_pid "$send_pid" 30
sed 's/^/    send: /' "$T/send.err"
expect_rc 4 "$WAIT_RC" "the sender whose session was ended as idle"
expect_grep "the receiver .* ended the session: idle for 2 s" "$T/send.err" \
	"the sender's message"
wait_for 10 have_no_tmp "$dir" || fail "temporary files are still there 10 s later"
[ ! -e "$dir/big" ] || fail "'big' has its final name"
# what arrived of it is kept for the next session, which sends the rest
[ "$(partials "$dir")" -eq 1 ] || fail "the partial of 'big' was not kept"
ok "ended $secs s after the stop; the sender exited 4 and said why; 'big' kept as a partial"
"$PXFER" send -q --json -j 2 "$src/big" "$(target)" >"$T/again.json" 2>"$T/again.err" ||
	fail "the same command again: $(cat "$T/again.err")"
cmp -s "$src/big" "$dir/big" || fail "'big' differs after the second run"
grep -q '"bytes_resumed":[1-9]' "$T/again.json" ||
	fail "the second run resumed nothing: $(cat "$T/again.json")"
ok "the same command again completed it: $(grep -o '"bytes_resumed":[0-9]*' "$T/again.json")"

note "a normal transfer to the same receiver"
send_check_tree "$dir"

stop_recv
expect_rc 130 "$WAIT_RC" "receiver after SIGTERM"
finish
