#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_retry: pxfer send comes back after a lost connection (--retries,
# --retry-wait) and sends only what the receiver does not hold. A tree of
# a 512 MiB file and 100 small ones (in tmpfs when there is room), -j 4
# in 1 MiB chunks:
#   - through a relay (test/helper/relay reset) that resets every open
#     connection, both sides, at the 160th chunk: the sender says it tries
#     again, completes in the same run (exit 0) in 2 sessions, with bytes
#     resumed from the receiver's partial, and sends at most the tree
#     plus a chunk per worker and 5% (what was in flight when the
#     connections died); the tree is intact and no partial is left
#   - the same with --retries 0: exit 4 at once, one session, no retry
#   - the receiver SIGKILLed mid-transfer and started again on the same
#     port and DIR at once: the sender completes in the same run, in 2
#     sessions or more, resuming what the killed receiver had recorded
#   - nothing listening: exit 4 within 5 s, no retry (a receiver that was
#     never reached may be a wrong address)
#   - the receiver's --idle-timeout ends the session of a sender stopped
#     (SIGSTOP) mid-transfer; continued, the sender says why and exits 4
#     without retrying (the receiver ended the session itself)
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

[ -x "$HELPERS/relay" ] || skip "$HELPERS/relay is not built"

MiB=$((1 << 20))
JOBS=4
CHUNK=$MiB

# the data in tmpfs when it has room (3 copies at most), else below $T
big=$T
shm=
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
   [ "$(($(stat -f -c '%a * %S' /dev/shm)))" -gt $((2048 * MiB)) ]; then
	shm=$(mktemp -d /dev/shm/pxfer-e2e-retry.XXXXXX) || fail "mktemp"
	big=$shm
	# the processes that write there end first
	trap 'rc=$?; for p in "${_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	      rm -rf "$shm"; (exit $rc); _cleanup' EXIT
fi
src=$big/src
dst=$big/dst

note "making the tree (a 512 MiB file and 100 small ones) in $big"
timer_start
mkdir -p "$src/small" || fail "mkdir"
head -c $((512 * MiB)) /dev/urandom >"$src/big" || fail "cannot write the test file"
for i in $(seq 1 100); do
	head -c $((i * 1009)) /dev/urandom >"$src/small/f$i" || fail "cannot write"
	touch -d "@$((1500000000 + i * 7919)).$i" "$src/small/f$i"
done
TOTAL=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
# what may be sent twice: the chunks in flight when a session dies (at
# most the receiver's 32 MiB of ring slots) and what it wrote but had not
# yet recorded in the partial's journal (PXFER_PARTIAL_FLUSH, 16 MiB),
# with 5% of the tree besides
SLACK=$(((32 + 16) * MiB + TOTAL / 20))
ok "made in $(timer_secs) s: $TOTAL bytes"

# partial_bytes - bytes written so far into the receiver's partial files
# (sized in advance: count their blocks)
partial_bytes()
{
	local b

	b=$(find "$dst/.pxfer/partial" -name '*.part' -printf '%b\n' 2>/dev/null |
		awk '{ s += $1 } END { print s + 0 }')
	echo $((b * 512))
}

# partial_at_least BYTES - for wait_for
# shellcheck disable=SC2317
partial_at_least()
{
	[ "$(partial_bytes)" -ge "$1" ]
}

# the sender's options in every run but one
SEND=(--json -j "$JOBS" --chunk-size "$CHUNK")

# restart_recv - a serving receiver again on RECV_PORT and DIR $dst (10 s
# at most until it listens); RECV_PID, RECV_LOG
restart_recv()
{
	_nrecv=$((_nrecv + 1))
	RECV_LOG=$T/recv.$_nrecv.log
	"$PXFER" recv --port "$RECV_PORT" --dir "$dst" >"$RECV_LOG" 2>&1 &
	RECV_PID=$!
	track "$RECV_PID"
	wait_for 10 port_listening "$RECV_PORT" ||
		fail "the receiver did not listen again on port $RECV_PORT: $(cat "$RECV_LOG")"
}

# show_send - the sender's stderr, indented
show_send()
{
	sed 's/^/    send: /' "$SEND_ERR"
}

note "a relay resets every connection once: the sender goes on in the same run"
rm -rf "$dst" && mkdir -p "$dst"
start_server "$dst"
start_relay reset -n 160
timer_start
bg_send "${SEND[@]}" "$src" "127.0.0.1:$RELAY_PORT"
wait_pid "$SEND_PID" 120
secs=$(timer_secs)
show_send
sed 's/^/    /' "$RELAY_LOG"
expect_rc 0 "$WAIT_RC" "the sender whose connections were reset"
expect_grep "^relay: reset $((JOBS + 1)) connection" "$RELAY_LOG" "the relay"
expect_grep "^pxfer: trying again in 2 s \(retry 1 of 5\); what arrived is kept" \
	"$SEND_ERR" "the sender"
send_stats
resumed=${J[bytes_resumed]} sent=${J[bytes_sent]}
check_num "reset: sessions" "${J[sessions]}" -eq 2
# bytes_sent counts both sessions: the first one's bytes that were kept,
# then the rest; only what was in flight at the reset may go twice. The
# bound can fail: a second session that sent everything again would pass
# it by what the first one kept
[ "$resumed" -gt "$SLACK" ] ||
	fail_later "reset: only $resumed bytes resumed: the reset came too early to tell"
[ "$sent" -le $((TOTAL + SLACK)) ] ||
	fail_later "reset: $sent bytes sent for $TOTAL, more than $SLACK beyond ($resumed resumed)"
ok "exit 0 after $secs s: ${J[sessions]} sessions, $sent bytes sent for $TOTAL ($((sent - TOTAL)) twice, at most $SLACK), $resumed resumed"
tree_equal "$src" "$dst/src"
check_num "partial files left" "$(partials "$dst")" -eq 0
check_grep "received [0-9]+ files .*: complete" "$RECV_LOG" "the receiver"
stop_relay
recv_alive || fail "the receiver stopped serving"
stop_recv

note "the same with --retries 0: the sender fails at once"
rm -rf "$dst" && mkdir -p "$dst"
start_server "$dst"
start_relay reset -n 160
timer_start
bg_send "${SEND[@]}" --retries 0 "$src" "127.0.0.1:$RELAY_PORT"
wait_pid "$SEND_PID" 60
secs=$(timer_secs)
show_send
expect_rc 4 "$WAIT_RC" "the sender with --retries 0 whose connections were reset"
expect_grep "^relay: reset" "$RELAY_LOG" "the relay"
expect_grep "error: .*(reset|lost|closed)" "$SEND_ERR" "the sender with --retries 0"
! grep -q "trying again" "$SEND_ERR" || fail_later "--retries 0: the sender tried again"
send_stats
check_num "--retries 0: sessions" "${J[sessions]}" -eq 1
[ ! -e "$dst/src/big" ] || fail_later "--retries 0: 'big' has its final name"
ok "exit 4 after $secs s: $(grep -m 1 error "$SEND_ERR")"
stop_relay
stop_recv

note "the receiver is killed and started again on the same port and DIR"
rm -rf "$dst" && mkdir -p "$dst"
start_server "$dst"
bg_send "${SEND[@]}" "$src" "127.0.0.1:$RECV_PORT"
# the sender in steps, so that the kill comes mid-transfer however fast
# the machine
step_until 60 "$SEND_PID" partial_at_least $((160 * MiB)) ||
	fail "160 MiB of 'big' did not arrive within 60 s: $(cat "$SEND_ERR")"
kill -KILL "$RECV_PID"
held=$(partial_bytes)
wait_pid "$RECV_PID" 10
timer_start
restart_recv
ok "killed after $held bytes of 'big' were written; listening again after $(timer_secs) s"
kill -CONT "$SEND_PID"
wait_pid "$SEND_PID" 120
show_send
expect_rc 0 "$WAIT_RC" "the sender whose receiver was killed and started again"
expect_grep "^pxfer: trying again in 2 s \(retry 1 of 5\)" "$SEND_ERR" "the sender"
send_stats
resumed=${J[bytes_resumed]} sent=${J[bytes_sent]}
check_num "receiver killed: sessions" "${J[sessions]}" -ge 2
check_num "receiver killed: bytes resumed from the killed receiver's partial" "$resumed" -gt 0
ok "exit 0: ${J[sessions]} sessions, $sent bytes sent for $TOTAL ($((sent - TOTAL)) twice), $resumed of the $held written resumed"
tree_equal "$src" "$dst/src"
check_num "partial files left" "$(partials "$dst")" -eq 0
stop_recv

note "nothing listening: the sender fails at once, without retrying"
timer_start
SEND_WRAP=(timeout -k 5 30)
psend --json "$src/small" "127.0.0.1:$(free_port)"
SEND_WRAP=()
secs=$(timer_secs)
show_send
expect_rc 4 "$SEND_RC" "the sender with nothing listening"
[ "${secs%.*}" -lt 5 ] || fail_later "nothing listening: the sender took $secs s, not under 5"
! grep -q "trying again" "$SEND_ERR" || fail_later "nothing listening: the sender tried again"
send_stats
check_num "nothing listening: sessions" "${J[sessions]}" -eq 1
ok "exit 4 after $secs s: $(grep -m 1 error "$SEND_ERR")"

note "the receiver ends the session of a stopped sender (--idle-timeout): no retry"
rm -rf "$dst" && mkdir -p "$dst"
start_server "$dst" --idle-timeout 2
bg_send "${SEND[@]}" "$src" "127.0.0.1:$RECV_PORT"
# stopped once 32 MiB of 'big' arrived
step_until 60 "$SEND_PID" partial_at_least $((32 * MiB)) ||
	fail "32 MiB of 'big' did not arrive within 60 s: $(cat "$SEND_ERR")"
timer_start
wait_for 30 grep -q "idle for 2 s" "$RECV_LOG" ||
	fail "the receiver did not end the stopped sender's session within 30 s: $(cat "$RECV_LOG")"
secs=$(timer_secs)
kill -CONT "$SEND_PID"
wait_pid "$SEND_PID" 30
show_send
expect_rc 4 "$WAIT_RC" "the sender whose session the receiver ended as idle"
expect_grep "the receiver .* ended the session: idle for 2 s" "$SEND_ERR" "the sender's message"
! grep -q "trying again" "$SEND_ERR" || fail_later "idle: the sender tried again"
send_stats
check_num "idle: sessions" "${J[sessions]}" -eq 1
ok "ended $secs s after the stop; the sender exited 4: $(grep -m 1 error "$SEND_ERR")"
recv_alive || fail "the receiver stopped serving"
stop_recv

finish
