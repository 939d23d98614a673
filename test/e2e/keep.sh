#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_keep: what the receiver keeps between runs, and what the sender then
# skips or resumes (docs/pxfer.1, RESUMING AND SKIPPING; the journal's
# format is in docs/architecture.md, "Partial files").
#   - a second run over an unchanged tree (large and small files,
#     subdirectories, a symlink) sends no file data: every regular file
#     is the same (files_same, bytes_skipped, on both sides), and the
#     receiver's files are untouched (inode, mtime, ctime)
#   - a copy changed with its size and mtime kept: the default run skips
#     it (it stays different), --checksum sends it and only it
#   - --overwrite sends everything again
#   - a 128 MiB file whose sender is killed once 16 MiB of it are on the
#     receiver's disk (it runs in steps until then), then the same
#     command: bytes_resumed > 0, the rest sent, the file equal, no
#     partial left but the store itself kept (removing it would let
#     another user make it); while the partial was kept, the store's
#     directories were 0700 and its files 0600
#   - the journal damaged: a record flipped (its bytes are sent again:
#     fewer resumed), cut in the middle of a record (the same), the
#     header flipped ("failed its checks", nothing resumed); each time
#     the file arrives equal
#   - a partial of a source that changed: its mtime ("another version",
#     nothing resumed); its bytes in a held range, size and mtime put back
#     ("does not match the source", sent whole by a second session); the
#     same with --resume trust, which does not read the source: the stale
#     bytes are taken, as documented (trust does not catch this, and the
#     test holds it to that)
#   - a directory named .pxfer sent to the top of DIR: its file is
#     refused with a message, and nothing of it reaches the receiver's
#     store (neither when it exists nor when it does not)
#   - --partial-ttl: a partial whose journal is older than the TTL is
#     removed when the receiver starts (and kept by one with the default
#     TTL); with 0 an interrupted session leaves none (the store stays)
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# recv_json KEY - KEY of the receiver's last JSON session line
recv_json()
{
	grep '"event":"session"' "$RECV_LOG" | tail -n 1 |
		sed -n "s/.*\"$1\":\([0-9][0-9]*\).*/\1/p"
}

# flip FILE OFFSET - invert the byte of FILE at OFFSET
flip()
{
	local b

	b=$(od -An -tu1 -j "$2" -N 1 "$1" | tr -d ' ')
	[ -n "$b" ] || fail "flip: no byte $2 in $1"
	# shellcheck disable=SC2059
	printf "\\x$(printf '%02x' $((b ^ 0xff)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none || fail "flip: cannot write $1"
}

# store DIR - the receiver's store in DIR, as a listing: names, types,
# modes, mtimes, sizes, link targets
store()
{
	[ -e "$1/.pxfer" ] || return 0
	(cd "$1" && find .pxfer -printf '%p %y %m %T@ %s %l\n') | sort
}

# no_partials DIR - whether DIR's store holds no partial (for wait_for)
# shellcheck disable=SC2317
no_partials()
{
	[ "$(partials "$1")" -eq 0 ]
}

# interrupt DIR ARGS... - pxfer send ARGS... to the serving receiver (of
# DIR), run in steps until 16 MiB of its file are on the receiver's disk,
# then killed (SIGKILL); returns once the receiver has ended the session
# (and the file has no name)
interrupt()
{
	local dir=$1 n

	shift
	n=$(recv_sessions)
	bg_send -q "$@" "$(target)"
	if ! step_until 60 "$SEND_PID" arrived "$dir" 16; then
		sed 's/^/    send: /' "$SEND_ERR"
		fail "16 MiB of the file did not arrive in '$dir' within 60 s"
	fi
	kill -KILL "$SEND_PID"
	wait_pid "$SEND_PID" 10
	wait_for 30 sessions_over "$n" ||
		fail "the receiver did not end the killed sender's session within 30 s"
	[ -z "$(finals "$dir")" ] ||
		fail "the file was complete before its sender was killed: $(finals "$dir")"
}

# ---- a tree, sent twice ---------------------------------------------------

src=$T/tree
mkdir -p "$src/sub/deep" "$src/many" || fail "mkdir"
head -c 3000000 /dev/urandom >"$src/big1" || fail "cannot write"
head -c 5242881 /dev/urandom >"$src/sub/big2" || fail "cannot write"
head -c 1048577 /dev/urandom >"$src/sub/deep/big3" || fail "cannot write"
for i in $(seq 1 80); do
	head -c $((i * 97)) /dev/urandom >"$src/many/f$i" || fail "cannot write"
done
: >"$src/sub/empty"
ln -s ../big1 "$src/sub/link"
nfiles=$(find "$src" -type f | wc -l)
total=$(find "$src" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')

# listing DIR - what a run that skips everything must leave alone: every
# entry's type, mode, mtime and link target, and a regular file's size,
# inode and change time (it was neither replaced nor written)
listing()
{
	(cd "$1" && find . \( -type f -printf '%P f %m %T@ %s %i %C@\n' \) -o \
		-printf '%P %y %m %T@ %l\n') | sort
}

note "a tree of $nfiles files ($total bytes), then the same run again"
dst=$T/dst.tree
mkdir "$dst"
start_server "$dst" --json
json_run_ok -j 2 "$src" "$(target)"
tree_equal "$src" "$dst/tree"
check_num "bytes sent by the first run" "${J[bytes_sent]}" -eq "$total"
listing "$dst/tree" >"$T/tree.before"
json_run_ok -j 2 "$src" "$(target)"
check_num "bytes sent by the second run" "${J[bytes_sent]}" -eq 0
check_num "files found the same" "${J[files_same]}" -eq "$nfiles"
check_num "bytes skipped" "${J[bytes_skipped]}" -eq "$total"
check_num "bytes resumed" "${J[bytes_resumed]}" -eq 0
check_num "files the receiver found the same" "$(recv_json files_same)" -eq "$nfiles"
check_num "bytes the receiver skipped" "$(recv_json bytes_skipped)" -eq "$total"
listing "$dst/tree" >"$T/tree.after"
if cmp -s "$T/tree.before" "$T/tree.after"; then
	ok "the receiver's tree is untouched (inodes, mtimes, ctimes)"
else
	diff "$T/tree.before" "$T/tree.after" | head -n 20 >&2
	fail_later "the second run changed the receiver's tree"
fi
tree_equal "$src" "$dst/tree"

note "a copy changed with its size and mtime kept: skipped, unless --checksum"
for f in sub/big2 many/f40; do
	printf 'not the source' |
		dd of="$dst/tree/$f" bs=1 seek=1000 conv=notrunc status=none || fail "cannot write"
	touch -r "$src/$f" "$dst/tree/$f"
	cmp -s "$src/$f" "$dst/tree/$f" && fail "'$f' was not changed"
done
changed=$(($(stat -c %s "$src/sub/big2") + $(stat -c %s "$src/many/f40")))
json_run_ok -j 2 "$src" "$(target)"
check_num "bytes sent without --checksum" "${J[bytes_sent]}" -eq 0
check_num "files found the same without --checksum" "${J[files_same]}" -eq "$nfiles"
for f in sub/big2 many/f40; do
	if cmp -s "$src/$f" "$dst/tree/$f"; then
		fail_later "'$f' was sent although its size and mtime were those of the source"
	else
		ok "'$f' was skipped: it still differs"
	fi
done
json_run_ok -j 2 --checksum "$src" "$(target)"
check_num "bytes sent with --checksum" "${J[bytes_sent]}" -eq "$changed"
check_num "files found the same with --checksum" "${J[files_same]}" -eq $((nfiles - 2))
check_num "bytes skipped with --checksum" "${J[bytes_skipped]}" -eq $((total - changed))
tree_equal "$src" "$dst/tree"

note "--overwrite sends everything again"
json_run_ok -j 2 --overwrite "$src" "$(target)"
check_num "bytes sent with --overwrite" "${J[bytes_sent]}" -eq "$total"
check_num "files found the same with --overwrite" "${J[files_same]}" -eq 0
tree_equal "$src" "$dst/tree"
stop_recv

# ---- a large file, interrupted --------------------------------------------

note "making a 128 MiB file"
size=$((128 << 20))
mkdir -p "$T/v0" || fail "mkdir"
big=$T/v0/big
head -c "$size" /dev/urandom >"$big" || fail "cannot write"
[ "$(stat -c %s "$big")" -eq "$size" ] || fail "the test file is not 128 MiB"
snap=$T/snap

dst=$T/dst.big
mkdir "$dst"
start_server "$dst" --json

note "interrupted, then the same command resumes it"
interrupt "$dst" -j 2 "$big"
[ "$(partials "$dst")" -eq 1 ] ||
	fail "$(partials "$dst") partial files after the interruption, expected 1"
has_records "$dst" 4 ||
	fail "the receiver's journal holds fewer than 4 records: $(store "$dst" | tr '\n' '|')"
# the store is the receiver's alone (docs/architecture.md): its
# directories 0700, its files 0600
modes=$(cd "$dst" && find .pxfer \( -type d ! -perm 0700 -o -type f ! -perm 0600 \) \
	-printf '%p %m\n')
if [ -z "$modes" ]; then
	ok "the store's directories are 0700, its files 0600"
else
	fail_later "modes in the store that others may use: $(echo "$modes" | tr '\n' ' ')"
fi
j=$(journal "$dst")
hdr=$(journal_hdr "$j")
nrec=$(journal_records "$j")
ok "the sender was killed; the journal holds $nrec records"
cp -a "$dst/.pxfer" "$snap" || fail "cannot copy the partial store"
json_run_ok -j 2 "$big" "$(target)"
file_equal "$big" "$dst/big"
resumed=${J[bytes_resumed]}
check_num "bytes resumed" "$resumed" -gt 0
check_num "bytes sent and resumed" $((J[bytes_sent] + resumed)) -eq "$size"
check_num "sessions" "${J[sessions]}" -eq 1
check_num "bytes the receiver resumed" "$(recv_json bytes_resumed)" -eq "$resumed"
check_num "partial files left" "$(partials "$dst")" -eq 0
if [ -d "$dst/.pxfer/partial" ] && [ -f "$dst/.pxfer/key" ]; then
	ok "the store stays, with no partial in it"
else
	fail_later "the partial store was removed: $(store "$dst" | tr '\n' '|')"
fi

# put_back - the receiver's state as the interrupted run left it
put_back()
{
	rm -rf "$dst/.pxfer" "$dst/big" || fail "cannot remove"
	cp -a "$snap" "$dst/.pxfer" || fail "cannot copy the partial store"
	j=$(journal "$dst")
}

note "a record of the journal flipped: its bytes are sent again"
put_back
flip "$j" $((hdr + 32 * (nrec / 2) + 14))
json_run_ok -j 2 "$big" "$(target)"
file_equal "$big" "$dst/big"
check_num "bytes resumed after a record was flipped" "${J[bytes_resumed]}" -lt "$resumed"
check_num "bytes resumed after a record was flipped (the others')" "${J[bytes_resumed]}" -gt 0
check_num "bytes sent and resumed" $((J[bytes_sent] + J[bytes_resumed])) -eq "$size"

note "the journal cut in the middle of its last record"
put_back
truncate -s $(($(stat -c %s "$j") - 13)) "$j" || fail "truncate"
json_run_ok -j 2 "$big" "$(target)"
file_equal "$big" "$dst/big"
check_num "bytes resumed after the journal was cut" "${J[bytes_resumed]}" -lt "$resumed"
check_num "bytes resumed after the journal was cut (the whole records')" "${J[bytes_resumed]}" -gt 0

note "the journal's header flipped: the partial is discarded"
put_back
flip "$j" 32
json_run_ok -j 2 "$big" "$(target)"
file_equal "$big" "$dst/big"
check_grep "failed its checks" "$SEND_ERR" "a sender whose partial's header was flipped" &&
	ok "the sender says: $(grep -m 1 'failed its checks' "$SEND_ERR")"
check_num "bytes resumed after the header was flipped" "${J[bytes_resumed]}" -eq 0
check_num "bytes sent after the header was flipped" "${J[bytes_sent]}" -eq "$size"

note "the source's mtime changed: the partial is of another version"
mkdir -p "$T/va" || fail "mkdir"
cp -p "$big" "$T/va/big" || fail "cp"
touch -d '2 hours ago' "$T/va/big"
put_back
json_run_ok -j 2 "$T/va/big" "$(target)"
file_equal "$T/va/big" "$dst/big"
check_grep "another version" "$SEND_ERR" "a sender whose source's mtime changed" &&
	ok "the sender says: $(grep -m 1 'another version' "$SEND_ERR")"
check_num "bytes resumed of another version" "${J[bytes_resumed]}" -eq 0

note "the source's bytes changed in a held range, size and mtime put back"
# the first record's range is held: change 4 KiB inside it
off=$(journal_off "$snap/partial/$(basename "$j")" 0)
mkdir -p "$T/vb" || fail "mkdir"
cp -p "$big" "$T/vb/big" || fail "cp"
head -c 4096 /dev/urandom |
	dd of="$T/vb/big" bs=4096 seek=$((off / 4096 + 1)) conv=notrunc status=none || fail "dd"
touch -r "$big" "$T/vb/big"
cmp -s "$big" "$T/vb/big" && fail "the source was not changed"
put_back
json_run_ok -j 2 "$T/vb/big" "$(target)"
file_equal "$T/vb/big" "$dst/big"
check_grep "does not match the source" "$SEND_ERR" "a sender whose source changed in a held range" &&
	ok "the sender says: $(grep -m 1 'does not match' "$SEND_ERR")"
# sent whole in the same session; it did not change while it was sent
check_num "sessions" "${J[sessions]}" -eq 1
check_num "files changed" "${J[files_changed]}" -eq 0
if grep -q "changed while being sent" "$SEND_ERR"; then
	fail_later "the sender said the file changed while it was sent: it changed before"
fi
check_num "bytes resumed" "${J[bytes_resumed]}" -eq 0

note "the same with --resume trust: the stale bytes are taken"
# --resume trust takes a partial of the same size and mtime without
# reading the source (docs/pxfer.1): it cannot see this change, and the
# receiver ends up with the old bytes in the held range. What trust gives
# up, held to it: if this changes, the documentation must too
put_back
json_run_ok -j 2 --resume trust "$T/vb/big" "$(target)"
if grep -q "does not match" "$SEND_ERR"; then
	fail_later "--resume trust read the source: $(grep -m 1 'does not match' "$SEND_ERR")"
else
	ok "no message: the source was not read"
fi
check_num "sessions with --resume trust" "${J[sessions]}" -eq 1
check_num "bytes resumed with --resume trust" "${J[bytes_resumed]}" -eq "$resumed"
if cmp -s "$big" "$dst/big" && ! cmp -s "$T/vb/big" "$dst/big"; then
	ok "the receiver has the old bytes of the held range, the new ones elsewhere"
else
	fail_later "with --resume trust the file is not the old version"
fi

note "a directory named .pxfer sent to the top: refused, the store untouched"
mkdir -p "$T/evil/.pxfer/partial" || fail "mkdir"
echo "not the receiver's" >"$T/evil/.pxfer/x"
ln -s /etc/passwd "$T/evil/.pxfer/partial/link"
echo fine >"$T/evil/fine"
chmod 0777 "$T/evil/.pxfer" "$T/evil/.pxfer/partial"
# the store exists (a partial is in it)
put_back
store "$dst" >"$T/store.before"
json_run -j 2 "$T/evil/." "$(target)"
expect_rc 1 "$SEND_RC" "a sender of .pxfer/x"
check_grep "'[^']*\.pxfer/x'.*receiver's own" "$SEND_ERR" "a sender of .pxfer/x" &&
	ok "the sender says: $(grep -m 1 "receiver's own" "$SEND_ERR")"
check_grep "refused '\.pxfer/x'" "$RECV_LOG" "the receiver, sent .pxfer/x" &&
	ok "the receiver says: $(grep -m 1 "refused '.pxfer/x'" "$RECV_LOG")"
file_equal "$T/evil/fine" "$dst/fine"
store "$dst" >"$T/store.after"
if cmp -s "$T/store.before" "$T/store.after"; then
	ok "the store is as it was"
else
	echo "--- the receiver's store (< before, > after):" >&2
	diff "$T/store.before" "$T/store.after" >&2
	fail_later "a sender changed the receiver's store"
fi
# the partial in the store is still taken up
json_run_ok -j 2 "$big" "$(target)"
file_equal "$big" "$dst/big"
check_num "bytes resumed after .pxfer was sent" "${J[bytes_resumed]}" -eq "$resumed"
# no store: none is made by it
rm -rf "$dst/.pxfer" "$dst/big" "$dst/fine"
json_run -j 2 "$T/evil/." "$(target)"
expect_rc 1 "$SEND_RC" "a sender of .pxfer/x"
if [ -e "$dst/.pxfer" ]; then
	fail_later "a sender made the receiver's store: $(store "$dst" | tr '\n' '|')"
else
	ok "no store was made"
fi
stop_recv

# ---- how long a partial is kept -------------------------------------------

note "--partial-ttl 1: a partial 10 s old is removed when the receiver starts"
dst=$T/dst.ttl
mkdir "$dst"
cp -a "$snap" "$dst/.pxfer" || fail "cp"
touch -d '10 seconds ago' "$(journal "$dst")"
start_server "$dst" --json --partial-ttl 1
if wait_for 10 no_partials "$dst"; then
	ok "removed"
else
	fail_later "a partial older than --partial-ttl is still there 10 s after the receiver started"
fi
stop_recv

note "the default --partial-ttl keeps it"
dst=$T/dst.keep
mkdir "$dst"
cp -a "$snap" "$dst/.pxfer" || fail "cp"
touch -d '10 seconds ago' "$(journal "$dst")"
start_server "$dst" --json
json_run_ok -j 2 "$big" "$(target)"
file_equal "$big" "$dst/big"
check_num "bytes resumed of a partial 10 s old" "${J[bytes_resumed]}" -eq "$resumed"
stop_recv

note "--partial-ttl 0: an interrupted session leaves no partial"
dst=$T/dst.ttl0
mkdir "$dst"
start_server "$dst" --json --partial-ttl 0
interrupt "$dst" -j 2 "$big"
check_num "partial files left with --partial-ttl 0" "$(partials "$dst")" -eq 0
stop_recv

finish
