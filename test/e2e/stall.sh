#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_stall: a check of what a partial holds takes as long as its data
# takes to read (minutes for hundreds of GB), and the session goes on
# meanwhile (docs/protocol.md, FILE_OK and PING). The tests cannot read
# 200 GB: PXFER_CHECK_DELAY_MS makes each read of a check (1 MiB at
# most) take 2 s longer, so that the 16 to 44 MiB a partial holds
# here take 16 s or more to check, on either side. A 120 MiB file is
# interrupted once 16 MiB of it are on the receiver's disk, and:
#   - the sender's check slowed, against a receiver with --idle-timeout
#     8: the sender's PINGs say how much it has checked, which the
#     receiver counts as progress, so the session is not ended as idle;
#     the file is resumed and arrives equal. (A sender that checks on
#     its coordinator sends nothing for the whole check and is ended as
#     idle after 8 s; over 60 s it hears "no word" too)
#   - the receiver's check slowed, its --idle-timeout 8: its own check
#     is no idleness of the sender's, and its coordinator goes on
#     answering PINGs while it runs; resumed, equal
# Each case checks that the check took longer than the idle timeout.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

IDLE=8

# recv_sessions - how many sessions the receiver has logged as ended
recv_sessions()
{
	grep -c '"event":"session"' "$RECV_LOG"
}

# sessions_over N - whether the receiver has logged more than N sessions
# (for wait_for)
# shellcheck disable=SC2317
sessions_over()
{
	[ "$(recv_sessions)" -gt "$1" ]
}

# arrived DIR MIB - whether the data file in DIR's partial store has MIB
# MiB on disk (for step_until)
# shellcheck disable=SC2317
arrived()
{
	local b

	b=$(find "$1/.pxfer/partial" -name '*.part' -printf '%b\n' 2>/dev/null | head -n 1)
	[ -n "$b" ] && [ "$b" -ge $(($2 * 2048)) ]
}

# interrupt DIR - send $big to the serving receiver (of DIR) until 16 MiB
# of it are on its disk, then kill the sender
interrupt()
{
	local n

	n=$(recv_sessions)
	bg_send -q -j 2 "$big" "$(target)"
	step_until 60 "$SEND_PID" arrived "$1" 16 ||
		fail "16 MiB of the file did not arrive within 60 s"
	kill -KILL "$SEND_PID"
	wait_pid "$SEND_PID" 10
	wait_for 30 sessions_over "$n" ||
		fail "the receiver did not end the killed sender's session within 30 s"
	[ -z "$(finals "$1")" ] || fail "the file was complete before its sender was killed"
}

# resumed_ok WHAT SECS - the last send exited 0 in one session, resumed
# data, the file is equal, and it took more than the idle timeout
resumed_ok()
{
	if [ "$SEND_RC" -ne 0 ]; then
		sed 's/^/    send: /' "$SEND_ERR" >&2
		sed 's/^/    recv: /' "$RECV_LOG" >&2
		fail "$1: pxfer send exited $SEND_RC"
	fi
	send_stats
	file_equal "$big" "$dst/big"
	check_num "$1: sessions" "${J[sessions]}" -eq 1
	check_num "$1: bytes resumed" "${J[bytes_resumed]}" -gt 0
	check_num "$1: seconds the run took" "$2" -gt "$IDLE"
	if grep -q "idle for\|no word" "$RECV_LOG" "$SEND_ERR"; then
		fail_later "$1: $(grep -h -m 1 'idle for\|no word' "$RECV_LOG" "$SEND_ERR")"
	fi
}

size=$((120 << 20))
mkdir -p "$T/src" || fail "mkdir"
big=$T/src/big
head -c "$size" /dev/urandom >"$big" || fail "cannot write"

note "the sender's check takes longer than the receiver's --idle-timeout $IDLE"
dst=$T/dst1
mkdir "$dst" || fail "mkdir"
start_server "$dst" --json --idle-timeout "$IDLE"
interrupt "$dst"
timer_start
SEND_WRAP=(env PXFER_CHECK_DELAY_MS=2000)
psend --json -j 2 "$big" "$(target)"
SEND_WRAP=()
secs=$(timer_secs)
resumed_ok "a slow sender's check" "${secs%.*}"
stop_recv

note "the receiver's check takes longer than its --idle-timeout $IDLE"
dst=$T/dst2
mkdir "$dst" || fail "mkdir"
RECV_WRAP=(env PXFER_CHECK_DELAY_MS=2000)
start_server "$dst" --json --idle-timeout "$IDLE"
RECV_WRAP=()
interrupt "$dst"
timer_start
psend --json -j 2 "$big" "$(target)"
secs=$(timer_secs)
resumed_ok "a slow receiver's check" "${secs%.*}"
stop_recv
finish
