#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_cap: the receiver's partial files are capped in number and in
# apparent size (--partial-max N, --partial-max-size SIZE; docs/architecture.md, "Partial
# files"), counted from its store when it starts.
#   - a store holding 3 partials of 1 GiB each (sparse, planted under
#     partial names once the receiver made the store), a receiver with
#     --partial-max 3: a tree of 4 files of 2 MiB and 20 small ones
#     arrives intact (its large files without partials), the receiver
#     warns once (not once a file) naming the store and --partial-max, and
#     the 3 partials are still there
#   - the same with --partial-max 100 --partial-max-size 2G: refused by size, the same way
#   - --partial-max 8: room for the tree's 4, no warning
#   - a file interrupted with 8 MiB of 32 on the receiver's disk (its
#     sender run in short steps until then), then a
#     receiver whose store is past its cap (--partial-max 1 with the 3
#     planted): its partial is taken up and resumed (bytes_resumed > 0),
#     no warning, the file intact
#   - pxfer recv --partial-max and --partial-max-size refuse a value that
#     is not a number, with a message that names the option
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# capped - how many times the receiver's log says the store is at its cap
capped()
{
	grep -c "at its cap (--partial-max" "$RECV_LOG"
}

# plant DIR N - N sparse data files of 1 GiB under partial names in DIR's
# store, as sessions of another run would have left them
plant()
{
	local i key

	for ((i = 0; i < $2; i++)); do
		key=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
		truncate -s 1G "$1/.pxfer/partial/$key.part" || fail "truncate"
		chmod 600 "$1/.pxfer/partial/$key.part"
	done
}

src=$T/src
mkdir -p "$src/tree/small" || fail "mkdir"
for i in 1 2 3 4; do
	head -c $((2 << 20)) /dev/urandom >"$src/tree/big$i" || fail "cannot write"
done
for i in $(seq 1 20); do
	head -c $((i * 100)) /dev/urandom >"$src/tree/small/f$i" || fail "cannot write"
done
head -c 32M /dev/urandom >"$src/huge" || fail "cannot write"

dst=$T/dst
mkdir "$dst"
note "the receiver makes its store; 3 partials of 1 GiB planted in it"
start_recv "$dst"
send_ok -q "$src/tree/big1" "$(target)"
wait_recv
rm -f "$dst/big1"
[ -d "$dst/.pxfer/partial" ] || fail "no store was made"
plant "$dst" 3
check_num "partials planted" "$(partials "$dst")" -eq 3

# tree_run ARGS... - a receiver with ARGS, the tree sent to it; the
# receiver is stopped after, the copy removed
tree_run()
{
	start_server "$dst" "$@"
	send_ok -q -j 2 "$src/tree" "$(target)"
	tree_equal "$src/tree" "$dst/tree"
	stop_recv
	rm -rf "$dst/tree"
}

note "--partial-max 3 with 3 there: the tree arrives, and one warning"
tree_run --partial-max 3
check_num "warnings of the cap" "$(capped)" -eq 1
grep "at its cap" "$RECV_LOG" | sed 's/^/    recv: /'
grep -q "'$dst/.pxfer/partial' holds 3 partial files" "$RECV_LOG" ||
	fail_later "the warning does not name the store and what it holds"
check_num "partials after" "$(partials "$dst")" -eq 3

note "--partial-max 100 --partial-max-size 2G with 3 GiB there: refused by size, one warning"
tree_run --partial-max 100 --partial-max-size 2G
check_num "warnings of the cap" "$(capped)" -eq 1
check_num "partials after" "$(partials "$dst")" -eq 3

note "--partial-max 8: room for the tree's 4 large files, no warning"
tree_run --partial-max 8
check_num "warnings of the cap" "$(capped)" -eq 0
check_num "partials after" "$(partials "$dst")" -eq 3

note "a partial of an interrupted file is resumed past the cap"
start_server "$dst" --json --ring-mem 1M
bg_send -q -j 1 --chunk-size 64K --retries 0 "$src/huge" "$(target)"
if ! creep 60 "$SEND_PID" arrived "$dst" 8; then
	sed 's/^/    send: /' "$SEND_ERR"
	fail "8 MiB of the file did not arrive within 60 s"
fi
kill -KILL "$SEND_PID"
wait_pid "$SEND_PID" 10
stop_recv
check_num "partials after the interrupted send" "$(partials "$dst")" -eq 4
start_server "$dst" --json --partial-max 1
psend --json -q -j 1 "$src/huge" "$(target)"
send_stats
expect_rc 0 "$SEND_RC" "the send past the cap"
check_num "bytes resumed past the cap" "${J[bytes_resumed]}" -gt 0
file_equal "$src/huge" "$dst/huge"
check_num "warnings of the cap" "$(capped)" -eq 0
stop_recv

note "a --partial-max that is not a number"
"$PXFER" recv --dir "$dst" --partial-max lots >"$T/usage.out" 2>&1
expect_rc 2 $? "pxfer recv --partial-max lots"
expect_grep "--partial-max takes a number" "$T/usage.out" "pxfer recv --partial-max lots"
"$PXFER" recv --dir "$dst" --partial-max-size lots >"$T/usage.out" 2>&1
expect_rc 2 $? "pxfer recv --partial-max-size lots"
expect_grep "--partial-max-size takes a size" "$T/usage.out" "pxfer recv --partial-max-size lots"
finish
