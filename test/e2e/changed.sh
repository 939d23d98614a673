#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_changed: a source file that changes while it is sent (docs/pxfer.1,
# RESUMING AND SKIPPING).
#   - a 128 MiB file rewritten in part once its sending has begun: the
#     sender says it changed and will be sent again, the same session
#     sends it again, and it arrives as it is now; the rest of the tree too
#   - a file that shrinks (truncated to a quarter) while it is sent, to a
#     receiver run with --once (which serves no second session): the
#     same, at its new size, exit 0 on both sides
#   - a file touched every 10 ms for the whole run: it fails alone, exit
#     1, "changed while being sent, again"; the other files arrive
#     intact, no partial or name is left of it
#   - each time the receiver's log blames neither the network nor the
#     data ("corrupt", "transit", "integrity" do not appear)
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

size=$((128 << 20))

# tree DIR - a few small files and an 8 MiB one, beside what DIR holds
tree()
{
	mkdir -p "$1/sub" || fail "mkdir"
	for i in $(seq 1 20); do
		head -c $((i * 1009)) /dev/urandom >"$1/sub/f$i" || fail "cannot write"
	done
	head -c $((8 << 20)) /dev/urandom >"$1/mid" || fail "cannot write"
}

# big_arriving DIR - whether the 128 MiB file has its partial in DIR: its
# sending has begun (for step_until)
# shellcheck disable=SC2317
big_arriving()
{
	[ -n "$(find "$1/.pxfer/partial" -name '*.part' -size "${size}c" \
		-print -quit 2>/dev/null)" ]
}

# not_blamed - the receiver's log does not blame the network or the data
not_blamed()
{
	if grep -iE "corrupt|transit|integrity" "$RECV_LOG" >&2; then
		fail_later "the receiver blamed the network or the data for a source that changed"
	else
		ok "the receiver's log blames neither the network nor the data"
	fi
}

# changed_once WHAT ONCE CMD... - send $src (its 'big' file 128 MiB) with
# a receiver into $dst, serving or (ONCE=once) for one session; once big's
# partial appears, run CMD; then the run must succeed in one session,
# with big sent again
changed_once()
{
	local what=$1 once=$2

	shift 2
	mkdir "$dst"
	if [ "$once" = once ]; then
		_start_recv "$dst" --once
	else
		start_server "$dst" --json
	fi
	bg_send --json -j 2 "$src" "$(target)"
	# the sender runs in steps until the file begins to arrive, and is
	# stopped while it changes: it cannot have sent it all by then
	step_until 60 "$SEND_PID" big_arriving "$dst" ||
		fail "the 128 MiB file did not begin to arrive within 60 s"
	"$@" || fail "cannot change the source"
	kill -CONT "$SEND_PID"
	ok "$what while it was sent"
	wait_pid "$SEND_PID" 120
	sed 's/^/    send: /' "$SEND_ERR"
	[ "$WAIT_RC" -eq 0 ] || {
		sed 's/^/    recv: /' "$RECV_LOG" >&2
		fail "the sender exited $WAIT_RC"
	}
	send_stats
	check_grep "'[^']*/big' changed while being sent; it will be sent again" "$SEND_ERR" \
		"a sender whose file $what" && ok "the sender said it changed"
	check_num "sessions" "${J[sessions]}" -eq 1
	check_num "files changed" "${J[files_changed]}" -eq 1
	check_num "files failed" "${J[files_failed]}" -eq 0
	tree_equal "$src" "$dst/src"
	check_num "partial files left" "$(partials "$dst")" -eq 0
	not_blamed
	if [ "$once" = once ]; then
		wait_recv
		expect_rc 0 "$WAIT_RC" "the --once receiver"
	else
		stop_recv
	fi
}

note "making a 128 MiB file and a tree"
src=$T/src
mkdir -p "$src" || fail "mkdir"
head -c "$size" /dev/urandom >"$src/big" || fail "cannot write"
tree "$src"
ok "made"

note "a file rewritten in part while it is sent"
dst=$T/dst.rewrite
# the first MiB: sent by then, or about to be
changed_once "rewritten" serve \
	dd if=/dev/urandom of="$src/big" bs=1M count=1 conv=notrunc status=none

note "a file that shrinks while it is sent"
head -c "$size" /dev/urandom >"$src/big" || fail "cannot write"
dst=$T/dst.shrink
changed_once "truncated to 32 MiB" once truncate -s 32M "$src/big"
[ "$(stat -c %s "$dst/src/big")" -eq $((32 << 20)) ] ||
	fail_later "the file that shrank arrived with $(stat -c %s "$dst/src/big") bytes"

note "a file that keeps changing for the whole run fails alone"
rm -f "$src/big"
head -c $((64 << 20)) /dev/urandom >"$src/hot" || fail "cannot write"
dst=$T/dst.hot
mkdir "$dst"
start_server "$dst" --json
# touch hot every 10 ms until the sender ends (or at most 120 s)
(
	end=$((SECONDS + 120))
	while [ ! -e "$T/hot.stop" ] && [ "$SECONDS" -lt "$end" ]; do
		touch "$src/hot"
		sleep 0.01
	done
) &
toucher=$!
track "$toucher"
psend --json -j 2 "$src" "$(target)"
: >"$T/hot.stop"
wait_pid "$toucher" 10
sed 's/^/    send: /' "$SEND_ERR"
send_stats
expect_rc 1 "$SEND_RC" "a sender whose file kept changing"
check_grep "'[^']*/hot' changed while being sent, again; it was not sent" "$SEND_ERR" \
	"a sender whose file kept changing" && ok "the sender said it changed again"
check_num "sessions" "${J[sessions]}" -eq 1
check_num "files failed" "${J[files_failed]}" -eq 1
check_num "files changed" "${J[files_changed]}" -eq 1
if [ -e "$dst/src/hot" ]; then
	fail_later "the file that kept changing has its name"
else
	ok "the file that kept changing has no name"
fi
check_num "partial files left" "$(partials "$dst")" -eq 0
tree_equal "$src/sub" "$dst/src/sub"
file_equal "$src/mid" "$dst/src/mid"
not_blamed
stop_recv

finish
