#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_kill: one side dies or is interrupted in the middle of a transfer.
#   - the receiver is stopped (SIGSTOP) once its temporary file exists, then
#     killed (SIGKILL): the sender (--retries 0) exits 4 within a bounded
#     time and says the receiver went away; no file appears under its
#     final name
#   - the sender gets SIGINT: it exits 130; the receiver logs the abort,
#     keeps what arrived as a partial file (no temporary name is left) and
#     keeps serving (a --once receiver exits non-zero); nothing
#     half-written has a final name
#   - the sender is killed (SIGKILL): the receiver keeps the partial, says
#     the sender went away and keeps serving
#   - the receiver is interrupted (SIGINT) with --grace 0: it exits 130
#     and keeps the partial; the sender fails and passes on the receiver's
#     reason
#   - a tree where some files completed before the receiver was killed:
#     the completed ones are intact
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

src=$T/src
mkdir -p "$src" || fail "mkdir"

note "making a 2 GiB file"
timer_start
head -c 2G /dev/zero >"$src/big" || fail "cannot write the test file"
[ "$(stat -c %s "$src/big")" -eq $((2 << 30)) ] || fail "the test file is not 2 GiB"
ok "made in $(timer_secs) s"

note "the receiver is killed in the middle of a 2 GiB file"
dst=$T/dst.kill
mkdir "$dst"
start_recv "$dst"
bg_send -q -j 2 --retries 0 "$src/big" "$(target)"
wait_for 30 have_part "$dst" || fail "no temporary file appeared on the receiver within 30 s"
kill -STOP "$RECV_PID"
[ -e "$dst/big" ] && fail "'big' has its final name while it is still arriving"
ok "temporary file present, no final name; receiver stopped"
sleep 0.5
timer_start
kill -KILL "$RECV_PID"
wait_pid "$SEND_PID" 30
secs=$(timer_secs)
sed 's/^/    send: /' "$SEND_ERR"
[ "$WAIT_RC" -ne 124 ] || fail "the sender did not exit within 30 s of the receiver's death"
expect_rc 4 "$WAIT_RC" "sender whose receiver was killed"
expect_grep "receiver.*(closed|lost|went away|failed)|connection" "$SEND_ERR" "sender whose receiver was killed"
ok "the sender exited 4 after $secs s: $(grep -m 1 error "$SEND_ERR")"
[ -z "$(finals "$dst")" ] || fail "final names exist after the kill: $(finals "$dst")"
ok "no final name; left: $(find "$dst" -mindepth 1 -maxdepth 1 -printf '%P ')"

note "the sender is interrupted (SIGINT); the receiver keeps serving"
dst=$T/dst.int
mkdir "$dst"
start_server "$dst"
bg_send -q -j 4 "$src/big" "$(target)"
wait_for 30 have_part "$dst" || fail "no temporary file appeared on the receiver within 30 s"
kill -INT "$SEND_PID"
wait_pid "$SEND_PID" 30
sed 's/^/    send: /' "$SEND_ERR"
expect_rc 130 "$WAIT_RC" "interrupted sender"
ok "the sender exited 130"
wait_for 10 have_no_tmp "$dst" || fail "temporary files are still there 10 s after the interruption"
[ -z "$(finals "$dst")" ] || fail "final names exist after the interruption: $(finals "$dst")"
ok "temporary files removed, no final name"
# the sender sends ABORT, then closes its data connections; the receiver
# may notice either first
wait_for 10 grep -qiE "interrupted|ended the session|closed data connection" "$RECV_LOG" ||
	fail "the receiver did not log the abort: $(cat "$RECV_LOG")"
grep -qiE "interrupted|ended the session" "$RECV_LOG" ||
	echo "note: the receiver reported the closed data connection, not the sender's ABORT"
ok "the receiver says: $(grep -iE -m 1 'interrupted|ended the session|closed data connection' "$RECV_LOG")"
recv_alive || fail "the receiver stopped serving after the sender was interrupted"
printf 'after the interruption\n' >"$src/small"
send_ok -q "$src/small" "$(target)"
file_equal "$src/small" "$dst/small"
ok "the receiver still serves: a following transfer succeeded"
stop_recv
expect_rc 130 "$WAIT_RC" "serving receiver after SIGTERM"

note "the sender is interrupted; a --once receiver exits non-zero"
dst=$T/dst.int1
mkdir "$dst"
start_recv "$dst"
bg_send -q -j 2 "$src/big" "$(target)"
wait_for 30 have_part "$dst" || fail "no temporary file appeared on the receiver within 30 s"
kill -INT "$SEND_PID"
wait_pid "$SEND_PID" 30
expect_rc 130 "$WAIT_RC" "interrupted sender"
wait_recv 30
{ [ "$WAIT_RC" -ne 0 ] && [ "$WAIT_RC" -ne 124 ]; } ||
	fail "the --once receiver exited $WAIT_RC after its sender was interrupted"
ok "the --once receiver exited $WAIT_RC"
no_part_files "$dst"
[ -z "$(finals "$dst")" ] || fail "final names exist: $(finals "$dst")"
[ "$(partials "$dst")" -eq 1 ] || fail "what arrived of 'big' was not kept as a partial"

note "the sender is killed (SIGKILL); the receiver keeps the partial and serves on"
dst=$T/dst.skill
mkdir "$dst"
start_server "$dst"
bg_send -q -j 2 "$src/big" "$(target)"
wait_for 30 have_part "$dst" || fail "no temporary file appeared on the receiver within 30 s"
kill -KILL "$SEND_PID"
wait_pid "$SEND_PID" 10
wait_for 20 have_no_tmp "$dst" || fail "temporary files are still there 20 s after the sender died"
[ -z "$(finals "$dst")" ] || fail "final names exist after the sender died: $(finals "$dst")"
[ "$(partials "$dst")" -eq 1 ] || fail "what arrived of 'big' was not kept as a partial"
wait_for 10 grep -qiE "closed|went away|lost" "$RECV_LOG" ||
	fail "the receiver did not say that the sender went away: $(cat "$RECV_LOG")"
ok "the receiver says: $(grep -iE -m 1 'closed|went away|lost' "$RECV_LOG")"
recv_alive || fail "the receiver stopped serving after its sender was killed"
send_ok -q "$src/small" "$(target)"
file_equal "$src/small" "$dst/small"
ok "no temporary file, the partial kept, no final name, and a following transfer succeeded"
stop_recv
expect_rc 130 "$WAIT_RC" "serving receiver after SIGTERM"

note "the receiver is interrupted (SIGINT) with no grace for its session"
dst=$T/dst.rint
mkdir "$dst"
start_server "$dst" --once --grace 0
bg_send -q -j 2 "$src/big" "$(target)"
wait_for 30 have_part "$dst" || fail "no temporary file appeared on the receiver within 30 s"
kill -INT "$RECV_PID"
wait_recv 30
expect_rc 130 "$WAIT_RC" "interrupted receiver"
wait_pid "$SEND_PID" 30
sed 's/^/    send: /' "$SEND_ERR"
{ [ "$WAIT_RC" -ne 0 ] && [ "$WAIT_RC" -ne 124 ]; } ||
	fail "the sender exited $WAIT_RC after its receiver was interrupted"
expect_grep "interrupted|ended the session" "$SEND_ERR" "sender whose receiver was interrupted"
no_part_files "$dst"
[ -z "$(finals "$dst")" ] || fail "final names exist: $(finals "$dst")"
[ "$(partials "$dst")" -eq 1 ] || fail "what arrived of 'big' was not kept as a partial"
ok "receiver 130, sender $WAIT_RC with the reason, no temporary file, no final name, the partial kept"

note "a tree: the files completed before the receiver was killed are intact"
tree=$T/many
mkdir -p "$tree/a" "$tree/b"
for i in $(seq 1 200); do
	head -c $((i * 311)) /dev/urandom >"$tree/$([ $((i % 2)) -eq 0 ] && echo a || echo b)/f$i"
done
dst=$T/dst.tree
mkdir "$dst"
start_recv "$dst"
# the small files first, then the big one
bg_send -q -j 2 --retries 0 "$tree" "$src/big" "$(target)"
some_done()
{
	[ "$(partials "$dst")" -ge 1 ] &&
		[ "$(find "$dst/many" -type f ! -name '.pxfer-*' 2>/dev/null | wc -l)" -ge 20 ]
}
wait_for 30 some_done || fail "the small files did not arrive within 30 s"
kill -STOP "$RECV_PID"
kill -KILL "$RECV_PID"
wait_pid "$SEND_PID" 30
expect_rc 4 "$WAIT_RC" "sender whose receiver was killed (tree)"
[ -e "$dst/big" ] && fail "'big' has its final name although the receiver was killed"
n=0
while IFS= read -r -d '' f; do
	cmp -s "$tree/$f" "$dst/many/$f" || fail "'many/$f' has its final name but differs from the source"
	n=$((n + 1))
done < <(cd "$dst/many" && find . -type f ! -name '.pxfer-*.part' -printf '%P\0')
[ "$n" -gt 0 ] || fail "no file of the tree was complete"
ok "$n of 200 files had completed before the kill; all of them are intact"
