#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_nouring: pxfer without io_uring (test/helper/no_io_uring makes its system
# calls fail with ENOSYS, as on a kernel without it).
#   - both sides under no_io_uring, --io auto: each warns once that
#     "io_uring is unavailable" (however many workers) and the data arrive
#     identical
#   - --io sync, with and without io_uring: no warning, identical data
#   - --io uring under no_io_uring fails, on either side, and says why
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

NOURING=$HELPERS/no_io_uring
[ -x "$NOURING" ] || skip "$NOURING is not built"
"$NOURING" true 2>"$T/nouring.err" ||
	skip "cannot install a seccomp filter here: $(cat "$T/nouring.err")"

src=$T/src
mkdir -p "$src/d1/d2" || fail "mkdir"
head -c 20M /dev/urandom >"$src/big"
for i in $(seq 1 50); do
	head -c $((i * 1000)) /dev/urandom >"$src/d1/f$i"
done
truncate -s 8M "$src/d1/d2/sparse"
printf 'tail\n' >>"$src/d1/d2/sparse"
ln -s ../big "$src/d1/link"
chmod 0751 "$src/d1"

# warnings FILE - how many times FILE says io_uring is unavailable
warnings()
{
	grep -c "io_uring is unavailable" "$1"
}

note "with io_uring (no wrapper): no fallback warning"
dst=$T/dst.plain
mkdir "$dst"
start_recv "$dst"
send_ok -q -j 4 "$src" "$(target)"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver"
tree_equal "$src" "$dst/src"
have_uring=1
if [ "$(warnings "$SEND_ERR")" -ne 0 ] || [ "$(warnings "$RECV_LOG")" -ne 0 ]; then
	have_uring=0
	echo "note: io_uring is unavailable here even without no_io_uring"
fi

note "both sides under no_io_uring, -j 8: one warning each, identical data"
dst=$T/dst.nouring
mkdir "$dst"
RECV_WRAP=("$NOURING")
start_recv "$dst"
RECV_WRAP=()
SEND_WRAP=("$NOURING")
send_ok -q -j 8 "$src" "$(target)"
SEND_WRAP=()
wait_recv
expect_rc 0 "$WAIT_RC" "receiver under no_io_uring"
sed 's/^/    send: /' "$SEND_ERR"
sed 's/^/    recv: /' "$RECV_LOG"
[ "$(warnings "$SEND_ERR")" -eq 1 ] ||
	fail "the sender warned $(warnings "$SEND_ERR") times that io_uring is unavailable, not once"
[ "$(warnings "$RECV_LOG")" -eq 1 ] ||
	fail "the receiver warned $(warnings "$RECV_LOG") times that io_uring is unavailable, not once"
ok "one warning each: $(grep -m 1 'io_uring is unavailable' "$SEND_ERR")"
tree_equal "$src" "$dst/src"

note "--io sync on both sides: no warning, identical data"
for wrap in none no_io_uring; do
	dst=$T/dst.sync.$wrap
	mkdir "$dst"
	if [ $wrap = none ]; then
		RECV_WRAP=() SEND_WRAP=()
	else
		RECV_WRAP=("$NOURING") SEND_WRAP=("$NOURING")
	fi
	start_recv "$dst" --io sync
	send_ok -q -j 3 --io sync "$src" "$(target)"
	wait_recv
	RECV_WRAP=() SEND_WRAP=()
	expect_rc 0 "$WAIT_RC" "receiver with --io sync ($wrap)"
	[ "$(warnings "$SEND_ERR")" -eq 0 ] || fail "--io sync ($wrap): the sender warned: $(cat "$SEND_ERR")"
	[ "$(warnings "$RECV_LOG")" -eq 0 ] || fail "--io sync ($wrap): the receiver warned: $(cat "$RECV_LOG")"
	tree_equal "$src" "$dst/src"
	ok "--io sync ($wrap wrapper): no warning"
done

note "sender --io uring under no_io_uring"
dst=$T/dst.senduring
mkdir "$dst"
start_server "$dst" --once --grace 0
SEND_WRAP=("$NOURING")
timer_start
psend -j 2 --io uring "$src" "$(target)"
SEND_WRAP=()
sed 's/^/    send: /' "$SEND_ERR"
[ "$SEND_RC" -ne 0 ] || fail "pxfer send --io uring succeeded without io_uring"
expect_rc 5 "$SEND_RC" "pxfer send --io uring without io_uring (a local resource)"
check_grep "io_uring" "$SEND_ERR" "pxfer send --io uring without io_uring" &&
	ok "the sender fails and says why: $(grep -m 1 error "$SEND_ERR")"
no_part_files "$dst"
[ -z "$(ls -A "$dst")" ] || fail "something arrived: $(ls -A "$dst")"
stop_recv
[ "$WAIT_RC" -ne 124 ] ||
	fail_later "the --once receiver did not end within 10 s of SIGTERM while it waited for the failed sender's data connections"

note "receiver --io uring under no_io_uring"
dst=$T/dst.recvuring
mkdir "$dst"
RECV_WRAP=("$NOURING")
start_server "$dst" --once --io uring
RECV_WRAP=()
psend -j 2 "$src" "$(target)"
wait_recv 30
sed 's/^/    send: /' "$SEND_ERR"
sed 's/^/    recv: /' "$RECV_LOG"
expect_rc 5 "$WAIT_RC" "pxfer recv --io uring without io_uring (a local resource)"
check_grep "io_uring" "$RECV_LOG" "pxfer recv --io uring without io_uring" &&
	ok "the receiver fails and says why: $(grep -m 1 error "$RECV_LOG")"
[ "$SEND_RC" -ne 0 ] || fail "the sender succeeded although the receiver could not write"
check_grep "io_uring|the receiver .*(ended|refused|could not|cannot)" "$SEND_ERR" \
	"the sender to a receiver without io_uring" &&
	ok "the sender exits $SEND_RC and says why: $(grep -m 1 error "$SEND_ERR")"
no_part_files "$dst"
[ "$have_uring" = 1 ] || echo "note: io_uring was unavailable throughout; the wrapper changed nothing"
finish
