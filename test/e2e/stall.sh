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
# And --checksum, where both sides hash whole files before the receiver
# answers: a file the receiver has the same (skipped) and one of the
# same size that differs (sent), 20 MiB each, 20 s or more to hash:
#   - the receiver's comparison slowed, its --idle-timeout 8: its
#     coordinator goes on meanwhile, so a small file named after the two
#     arrives while they are compared (a receiver that compares on its
#     coordinator reads nothing more until it is done: 40 s);
#   - the sender's hashing slowed, against a receiver with --idle-timeout
#     8: the FILEs go out at once, their digests follow (FILE_SUM), and
#     the PINGs' figure of what was hashed is progress (a sender that
#     hashes on its coordinator before the FILE sends nothing for 20 s
#     and is ended as idle).
# Each case checks that the check took longer than the idle timeout.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

IDLE=8

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

csize=$((20 << 20))
csrc=$T/csrc
mkdir "$csrc" || fail "mkdir"
head -c "$csize" /dev/urandom >"$csrc/same" || fail "cannot write"
head -c "$csize" /dev/urandom >"$csrc/diff" || fail "cannot write"
head -c 100000 /dev/urandom >"$csrc/other" || fail "cannot write"

# csum_dst DIR - DIR with a copy of same (another mtime: only its content
# says it is the same) and a diff of the same size that differs
csum_dst()
{
	mkdir "$1" || fail "mkdir"
	cp "$csrc/same" "$1/same" || fail "cp"
	touch -d '2001-02-03 04:05:06' "$1/same" || fail "touch"
	head -c "$csize" /dev/urandom >"$1/diff" || fail "cannot write"
}

# csum_ok WHAT SECS - the last send exited 0 in one session, same was
# skipped and the rest sent, every file is equal, and it took more than
# the idle timeout
csum_ok()
{
	if [ "$SEND_RC" -ne 0 ]; then
		sed 's/^/    send: /' "$SEND_ERR" >&2
		sed 's/^/    recv: /' "$RECV_LOG" >&2
		fail "$1: pxfer send exited $SEND_RC"
	fi
	send_stats
	cmp -s "$csrc/same" "$dst/same" || fail "$1: same differs"
	file_equal "$csrc/diff" "$dst/diff"
	file_equal "$csrc/other" "$dst/other"
	check_num "$1: sessions" "${J[sessions]}" -eq 1
	check_num "$1: files found the same" "${J[files_same]}" -eq 1
	check_num "$1: bytes skipped" "${J[bytes_skipped]}" -eq "$csize"
	check_num "$1: bytes sent" "${J[bytes_sent]}" -eq $((csize + 100000))
	check_num "$1: seconds the run took" "$2" -gt "$IDLE"
	if grep -q "idle for\|no word" "$RECV_LOG" "$SEND_ERR"; then
		fail_later "$1: $(grep -h -m 1 'idle for\|no word' "$RECV_LOG" "$SEND_ERR")"
	fi
}

# arrived_other - whether other is there under its name (for wait_for)
# shellcheck disable=SC2317
arrived_other()
{
	[ -f "$dst/other" ]
}

note "--checksum: the receiver's comparison takes longer than its --idle-timeout $IDLE"
dst=$T/dst3
csum_dst "$dst"
RECV_WRAP=(env PXFER_CHECK_DELAY_MS=1000)
start_server "$dst" --json --idle-timeout "$IDLE"
RECV_WRAP=()
timer_start
bg_send --json -j 2 --checksum "$csrc/same" "$csrc/diff" "$csrc/other" "$(target)"
if ! wait_for 10 arrived_other; then
	fail_later "other did not arrive within 10 s, while same and diff were compared"
elif ! kill -0 "$SEND_PID" 2>/dev/null; then
	fail_later "the comparison was over before other arrived: it did not take long"
fi
wait_pid "$SEND_PID" 120
SEND_RC=$WAIT_RC
secs=$(timer_secs)
csum_ok "a slow receiver's comparison" "${secs%.*}"
stop_recv

note "--checksum: the sender's hashing takes longer than the receiver's --idle-timeout $IDLE"
dst=$T/dst4
csum_dst "$dst"
start_server "$dst" --json --idle-timeout "$IDLE"
timer_start
SEND_WRAP=(env PXFER_CHECK_DELAY_MS=1000)
psend --json -j 2 --checksum "$csrc/same" "$csrc/diff" "$csrc/other" "$(target)"
SEND_WRAP=()
secs=$(timer_secs)
csum_ok "a slow sender's hashing" "${secs%.*}"
stop_recv
finish
