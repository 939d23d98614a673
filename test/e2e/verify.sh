#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_verify: send --verify has the receiver read each file back from its
# storage and compare it with the source's digest before naming it
# (docs/pxfer.1, RESUMING AND SKIPPING).
#   - a tree (a 64 MiB file, a 3 MiB one, small and empty files, a
#     symlink) arrives equal with --verify, and the receiver logs no
#     error; it did read the files back: its read count (/proc/PID/io)
#     grew by the tree's size, and without --verify it does not
#   - the storage corrupts a file after the receiver wrote it: once the
#     receiver's journal records the first range of a 128 MiB file as on
#     disk, 4 KiB of it are overwritten in the partial (as a disk or a
#     file system losing a write would). With --verify the file fails
#     alone (exit 1), both sides name it and say it differs, it gets no
#     name and no partial is kept; the next run sends it whole and it
#     arrives equal. Without --verify the same damage is named with the
#     file (the control: the damage is real, and only --verify finds it)
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

src=$T/src
mkdir -p "$src/sub/deep" || fail "mkdir"
head -c $((64 << 20)) /dev/urandom >"$src/big" || fail "cannot write"
head -c $((3 << 20)) /dev/urandom >"$src/sub/mid" || fail "cannot write"
for i in $(seq 1 30); do
	head -c $((i * 2003)) /dev/urandom >"$src/sub/deep/f$i" || fail "cannot write"
done
: >"$src/sub/empty"
ln -s ../big "$src/sub/link"
total=$(find "$src" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')

# reads PID - the bytes PID has read: the larger of what its reads
# returned (rchar) and what it read from storage (read_bytes), or nothing
# when /proc/PID/io cannot be read
reads()
{
	awk '/^(rchar|read_bytes):/ { if ($2 > n) n = $2 } END { if (NR) print n }' \
		"/proc/$1/io" 2>/dev/null
}

note "a tree with --verify"
dst=$T/dst
mkdir "$dst"
start_server "$dst" --json
r0=$(reads "$RECV_PID")
send_ok --json -j 2 --verify "$src" "$(target)"
r1=$(reads "$RECV_PID")
send_stats
tree_equal "$src" "$dst/src"
check_num "files failed" "${J[files_failed]}" -eq 0
if grep -v '^{' "$RECV_LOG" | grep -iE "error|differs" >&2; then
	fail_later "the receiver logged an error"
else
	ok "the receiver logged no error"
fi
send_ok --json -j 2 --overwrite "$src" "$(target)"
r2=$(reads "$RECV_PID")
tree_equal "$src" "$dst/src"
if [ -n "$r0" ] && [ -n "$r1" ] && [ -n "$r2" ]; then
	check_num "bytes the receiver read with --verify" $((r1 - r0)) -ge "$total"
	check_num "bytes the receiver read without --verify" $((r2 - r1)) -lt "$total"
else
	echo "note: /proc/$RECV_PID/io cannot be read; not checked that the files were read back"
fi
stop_recv

note "making a 128 MiB file"
mkdir -p "$T/one" || fail "mkdir"
one=$T/one/big
head -c $((128 << 20)) /dev/urandom >"$one" || fail "cannot write"

# damage DIR - overwrite 4 KiB of the partial in DIR inside the first
# range its journal records as on disk: the receiver wrote those bytes
# and will not write them again
damage()
{
	local j part off

	j=$(journal "$1")
	part=${j%.jnl}.part
	off=$(journal_off "$j" 0)
	if [ ! -f "$part" ] || [ -z "$off" ]; then
		fail "no partial to damage in '$1'"
	fi
	head -c 4096 /dev/urandom |
		dd of="$part" bs=4096 seek=$((off / 4096)) conv=notrunc status=none ||
		fail "cannot write into $part"
	[ ! -e "$1/big" ] || fail "the file was named before it could be damaged"
	ok "4 KiB at offset $off of the partial overwritten"
}

# damaged_run DIR ARGS... - send the 128 MiB file with ARGS into DIR,
# damaging it on the receiver's disk while it arrives
damaged_run()
{
	local dir=$1

	shift
	mkdir "$dir"
	start_server "$dir" --json
	bg_send --json -j 2 "$@" "$one" "$(target)"
	# the sender runs in steps until the receiver records a range, and
	# is stopped while the damage is done: the file cannot be complete
	step_until 60 "$SEND_PID" has_records "$dir" 1 ||
		fail "the receiver's journal recorded nothing within 60 s"
	damage "$dir"
	kill -CONT "$SEND_PID"
	wait_pid "$SEND_PID" 120
	sed 's/^/    send: /' "$SEND_ERR"
	send_stats
}

note "the file damaged on the receiver's disk, with --verify"
damaged_run "$T/dst.bad" --verify
dst=$T/dst.bad
expect_rc 1 "$WAIT_RC" "a sender whose file was damaged on the receiver's disk"
check_num "files failed" "${J[files_failed]}" -eq 1
check_grep "'[^']*/big' failed on the receiver: .*differs" "$SEND_ERR" \
	"a sender whose file was damaged" && ok "the sender names it"
check_grep "'big'.*differs from what was sent" "$RECV_LOG" "the receiver" &&
	ok "the receiver says: $(grep -m 1 'differs' "$RECV_LOG")"
if [ -e "$dst/big" ]; then
	fail_later "the damaged file was named"
else
	ok "the damaged file has no name"
fi
check_num "partial files left" "$(partials "$dst")" -eq 0
send_ok --json -j 2 --verify "$one" "$(target)"
send_stats
file_equal "$one" "$dst/big"
check_num "bytes resumed after a failed --verify" "${J[bytes_resumed]}" -eq 0
stop_recv

note "the same damage without --verify: named with the file"
damaged_run "$T/dst.ctl"
dst=$T/dst.ctl
expect_rc 0 "$WAIT_RC" "a sender whose file was damaged, without --verify"
if cmp -s "$one" "$dst/big"; then
	fail "the damage did not reach the file: the check above proves nothing"
fi
ok "the file was named with the damage, which only --verify finds"
stop_recv

finish
