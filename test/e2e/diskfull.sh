#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_diskfull: the receiver's disk fills up, then has room again. DIR is
# a tmpfs of 40 MiB (mount needs CAP_SYS_ADMIN: skipped where it is not
# permitted, as in most containers; unmounted at exit however the test
# ends).
#   - a tree of 56 MiB (three files of 16 MiB, an 8 MiB one, small ones)
#     does not fit: the sender fails (non-zero) and both sides say "No
#     space left"; what has its name is whole, and the receiver serves on
#   - the tmpfs grown to 128 MiB (remount), the same command completes
#     and sends only what was missing: what arrived whole is skipped,
#     what a partial holds is resumed (bytes_resumed > 0),
#     bytes_sent + bytes_resumed + bytes_skipped is the tree's size, and
#     no more is sent than the disk lacked (give or take a chunk a worker
#     and 5%); the tree is equal
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

mnt=$T/mnt
mkdir "$mnt" || fail "mkdir"
if ! out=$(mount -t tmpfs -o size=40m,mode=0755 pxfer-e2e "$mnt" 2>&1); then
	skip "cannot mount a tmpfs here (needs CAP_SYS_ADMIN): ${out:-mount failed}"
fi

# unmount before common.sh's cleanup removes $T; lazily, since the
# receiver may still have files open there until the cleanup kills it
# shellcheck disable=SC2317
on_exit()
{
	local rc=$?

	mountpoint -q "$mnt" && umount -l "$mnt"
	return "$rc"
}
trap 'on_exit; _cleanup' EXIT

src=$T/src
mkdir -p "$src/sub" || fail "mkdir"
for f in a b sub/c; do
	head -c $((16 << 20)) /dev/urandom >"$src/$f" || fail "cannot write"
done
head -c $((8 << 20)) /dev/urandom >"$src/sub/d" || fail "cannot write"
for i in $(seq 1 30); do
	head -c $((i * 3001)) /dev/urandom >"$src/sub/s$i" || fail "cannot write"
done
total=$(find "$src" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')
dst=$mnt/dst
mkdir "$dst" || fail "mkdir"

note "$total bytes into a 40 MiB tmpfs"
start_server "$dst" --json
psend --json -j 2 "$src" "$(target)"
sed 's/^/    send: /' "$SEND_ERR"
send_stats
# 5: a resource ran out (the receiver's disk), not 1 (some files failed)
[ "$SEND_RC" -eq 5 ] ||
	fail "the sender exited $SEND_RC with more to send than the disk holds, not 5"
ok "the sender exited $SEND_RC"
check_grep "No space left" "$SEND_ERR" "a sender whose receiver's disk is full" &&
	ok "the sender says: $(grep -m 1 'No space left' "$SEND_ERR")"
check_grep "No space left" "$RECV_LOG" "a receiver whose disk is full" &&
	ok "the receiver says: $(grep -m 1 'No space left' "$RECV_LOG")"
# what has its name is whole, and not everything has
n=0
while IFS= read -r -d '' f; do
	cmp -s "$src/$f" "$dst/src/$f" || fail "'$f' has its name but differs from its source"
	n=$((n + 1))
done < <(cd "$dst/src" 2>/dev/null && find . -type f ! -name '.pxfer-*.part' -printf '%P\0')
nfiles=$(find "$src" -type f | wc -l)
[ "$n" -lt "$nfiles" ] || fail "all $n files arrived on a disk too small for them"
ok "$n of $nfiles files have their names, all of them whole; $(partials "$dst") partial files kept"
# what the disk holds (allocated, not the partials' apparent sizes)
held=$(du -s -B1 "$dst" | cut -f 1)
df -h "$mnt" | sed 's/^/    /'

note "room again: the same command sends only what is missing"
mount -o remount,size=128m "$mnt" || fail "cannot remount the tmpfs with 128 MiB"
psend --json -j 2 "$src" "$(target)"
sed 's/^/    send: /' "$SEND_ERR"
send_stats
if [ "$SEND_RC" -ne 0 ]; then
	sed 's/^/    recv: /' "$RECV_LOG" >&2
	fail "the sender exited $SEND_RC once the disk had room"
fi
check_num "sessions" "${J[sessions]}" -eq 1
check_num "bytes resumed" "${J[bytes_resumed]}" -gt 0
check_num "bytes sent + resumed + skipped" \
	$((J[bytes_sent] + J[bytes_resumed] + J[bytes_skipped])) -eq "$total"
# at most what the disk lacked, give or take a chunk a worker (2 MiB at
# -j 2) that was written but not recorded, and 5%
check_num "bytes sent (the disk held $held)" \
	"${J[bytes_sent]}" -le $((total - held + (4 << 20) + total / 20))
tree_equal "$src" "$dst/src"
check_num "partial files left" "$(partials "$dst")" -eq 0
stop_recv
umount "$mnt" || fail "cannot unmount the tmpfs"

finish
