#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_escape: text that pxfer did not write reaches no terminal and no log
# as it came. Each side's output must hold only printable ASCII and the
# newlines that end its own lines: no ESC, BEL, CR, C1 or byte that is
# not UTF-8, and no line a peer forged; what the peer sent shows escaped
# (\x1b, \n, ...).
#   - a receiver that needs no secret (test/helper/hostile_receiver)
#     refuses the sender with a text that sets the terminal's title,
#     clears the screen, prints a forged summary and, after a newline, a
#     forged error line (REFUSE with EPERM, then with EACCES, which a
#     wrong secret gets, then with EBUSY, which a sender waits out)
#   - a receiver with the secret fails the sender's file and ends the
#     session with that text (FILE_ERR, ABORT)
#   - file names with the same attack in them: the sender's warning for a
#     fifo it skips, and both sides' errors for a file the receiver cannot
#     write
#   - a sender with the secret (test/helper/hostile_sender) whose refused
#     path, refused destination and ABORT text hold the attack: the
#     receiver's log
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

HR=$HELPERS/hostile_receiver
[ -x "$HR" ] || skip "$HR is not built"

# clean FILE WHAT - fail unless FILE holds only printable ASCII and
# newlines, and no line a peer forged
clean()
{
	local bad

	bad=$(LC_ALL=C tr -d '\n\040-\176' <"$1" | od -An -tx1 | head -n 2)
	if [ -n "$bad" ]; then
		echo "--- $1:" >&2
		cat -A "$1" >&2
		fail "$2: raw bytes in the output: $bad"
	fi
	if grep -q '^error: forged' "$1"; then
		cat "$1" >&2
		fail "$2: the peer forged a line"
	fi
}

src=$T/src
mkdir -p "$src" || fail "mkdir"
printf 'data\n' >"$src/file"

note "a receiver without the secret refuses the sender with a terminal attack"
port=$(free_port)
"$HR" "$port" refuse refuse-auth busy file-err >"$T/hostile.log" 2>&1 &
hr=$!
track $hr
wait_for 10 port_listening "$port" || fail "the hostile receiver did not listen: $(cat "$T/hostile.log")"

psend "$src/file" "127.0.0.1:$port"
expect_rc 1 "$SEND_RC" "sender refused by the hostile receiver"
expect_grep 'refused the session: \\x1b\]0;owned\\x07\\x1b\[2J' "$SEND_ERR" "sender refused"
expect_grep 'transfer complete\\x1b\[8m\\nerror: forged line from the hostile receiver\\xc2\\x9b31m\\xff' \
	"$SEND_ERR" "sender refused"
clean "$SEND_ERR" "sender refused"
ok "refused: $(grep -m 1 refused "$SEND_ERR" | cut -c 1-100)..."

psend "$src/file" "127.0.0.1:$port"
expect_rc 3 "$SEND_RC" "sender refused as with a wrong secret"
expect_grep 'refused the sender: \\x1b\]0;owned.*\(check that both sides' "$SEND_ERR" \
	"sender refused as with a wrong secret"
clean "$SEND_ERR" "sender refused as with a wrong secret"
ok "refused (EACCES): $(grep -m 1 refused "$SEND_ERR" | cut -c 1-100)..."

psend --wait 1 "$src/file" "127.0.0.1:$port"
expect_rc 6 "$SEND_RC" "sender refused as busy"
expect_grep 'is busy \(\\x1b\]0;owned.*\); trying again' "$SEND_ERR" "sender refused as busy"
expect_grep 'still busy after 1 s \(\\x1b\]0;owned' "$SEND_ERR" "sender refused as busy"
clean "$SEND_ERR" "sender refused as busy"
ok "busy: $(grep -m 1 'still busy' "$SEND_ERR" | cut -c 1-100)..."

note "a receiver with the secret fails the file and aborts with the attack"
psend -j 1 "$src/file" "127.0.0.1:$port"
expect_rc 1 "$SEND_RC" "sender whose file failed and session was aborted"
expect_grep "'[^']*/file' failed on the receiver: \\\\x1b\]0;owned" "$SEND_ERR" "FILE_ERR"
expect_grep 'ended the session: \\x1b\]0;owned' "$SEND_ERR" "ABORT"
clean "$SEND_ERR" "FILE_ERR and ABORT"
ok "$(grep -c owned "$SEND_ERR") lines with the attack, all escaped"
wait_pid $hr 10
expect_rc 0 "$WAIT_RC" "the hostile receiver"
cat "$T/hostile.log"

note "file names with control characters"
evil=$'evil\x1b]0;owned\x07\x1b[2J\rpxfer: forged\nerror: forged line'
mkdir -p "$src/tree"
printf 'x\n' >"$src/tree/$evil"
mkfifo "$src/tree/$evil.fifo"
dst=$T/dst
# a directory in the way: the file cannot be written on the receiver
mkdir -p "$dst/tree/$evil/in-the-way"
start_server "$dst" --once
psend -j 1 "$src/tree" "$(target)"
wait_recv
expect_rc 1 "$SEND_RC" "sender of a file the receiver cannot write"
q="evil\\\\x1b\\]0;owned\\\\x07\\\\x1b\\[2J\\\\rpxfer: forged\\\\nerror: forged line"
expect_grep "skipping '[^']*/$q\\.fifo'" "$SEND_ERR" "the sender's warning about the fifo"
expect_grep "'[^']*/$q' failed on the receiver" "$SEND_ERR" "the sender's error about the file"
clean "$SEND_ERR" "the sender, about its own file names"
ok "sender: $(grep -c 'owned' "$SEND_ERR") lines with a name, all escaped"
expect_grep "cannot write 'tree/$q'" "$RECV_LOG" "the receiver's error about the file"
clean "$RECV_LOG" "the receiver, about a file it cannot write"
ok "receiver: $(grep -c 'owned' "$RECV_LOG") line with the name, escaped"

HS=$HELPERS/hostile_sender
note "a sender whose path, destination and ABORT attack the receiver's log"
if [ -x "$HS" ]; then
	dst=$T/dst.hostile
	mkdir -p "$dst"
	start_server "$dst"
	for sc in ctrl-path ctrl-dest ctrl-abort; do
		timeout -k 5 60 "$HS" 127.0.0.1 "$RECV_PORT" "$sc" >"$T/hs.$sc.out" 2>&1 ||
			fail "$sc: hostile_sender exited $?: $(cat "$T/hs.$sc.out")"
		grep -qE '^outcome: (refused|aborted)' "$T/hs.$sc.out" ||
			fail "$sc: the receiver did not refuse: $(cat "$T/hs.$sc.out")"
		clean "$T/hs.$sc.out" "hostile_sender's own output ($sc)"
	done
	stop_recv
	expect_grep "refused '\\.\\./\\\\x1b\\]0;owned" "$RECV_LOG" "the refused path"
	expect_grep "cannot use destination '\\.\\./\\\\x1b\\]0;owned" "$RECV_LOG" "the refused destination"
	expect_grep "ended the session: \\\\x1b\\]0;owned" "$RECV_LOG" "the sender's ABORT"
	clean "$RECV_LOG" "the receiver, about what a hostile sender sent"
	ok "receiver: $(grep -c 'owned' "$RECV_LOG") lines with the attack, all escaped"
else
	echo "SKIP (subcase): $HS is not built"
fi

finish
