#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_store: the receiver's partial store in a DIR that another local
# user can write (a drop directory of mode 1777), the receiver running as
# root and the other user as uid 65534 (setpriv); docs/security.md, "A
# local user on the receiving host". Each time the file (64 MiB, mode
# 0600) arrives intact, exit 0, the receiver's own (uid 0: uid 65534 can
# neither read, write nor chmod it), and nothing of hers is taken up:
#   - she makes DIR/.pxfer and .pxfer/partial (mode 0777) before the
#     receiver does; a session is interrupted, she puts a data file of
#     hers (the same size, bytes of her own) in place of every partial's,
#     and the same command is run again with --resume trust (which takes
#     what the receiver offers): nothing is resumed, and the receiver
#     warns once, naming DIR/.pxfer, its owner and what to do
#   - she plants the data file of the file's partial (the unkeyed
#     BLAKE2b-128 of its path, what the names were) before any transfer,
#     the store hers, the receiver started after it (its sweep warns at
#     once): the file is not her inode, her file is left as it was
#   - a store of the receiver's own with a mode others can write (0777):
#     a warning (the mode), and the file arrives without it
#   - the store removed as the warning says: the next interrupted
#     session makes it 0700 (its key 0600), she cannot enter it, and the
#     same command resumes (the normal path)
#   - in that store, a data file of hers (its owner changed, as if left
#     from when the store was open to her): not adopted (nothing resumed
#     with --resume trust), the file the receiver's
# Skipped unless run as root with setpriv (util-linux).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (to act as another user with setpriv)"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is needed"
command -v python3 >/dev/null || skip "python3 is needed"

EVIL=65534

# as_evil CMD... - run CMD as the other local user
as_evil()
{
	setpriv --reuid="$EVIL" --regid="$EVIL" --clear-groups -- "$@"
}

# she reaches DIR below $T, but lists nothing on the way
chmod 0711 "$T" || fail "chmod"
as_evil test -x "$T" || skip "cannot run as uid $EVIL"

# run_ok ARGS... - json_run_ok ARGS... to the receiver
run_ok()
{
	json_run_ok "$@" "$(target)"
}

# receiving MIB - whether a file the receiver has open below DIR (a
# partial, a temporary or an unnamed file: wherever the file arrives)
# has MIB MiB on disk (for step_until)
# shellcheck disable=SC2317
receiving()
{
	local f b

	for f in /proc/"$RECV_PID"/fd/*; do
		case $(readlink "$f" 2>/dev/null) in
		"$dst"/*)
			b=$(stat -L -c %b "$f" 2>/dev/null) || continue
			[ "${b:-0}" -ge $(($1 * 2048)) ] && return 0
			;;
		esac
	done
	return 1
}

# interrupt ARGS... - pxfer send ARGS... run in 2-ms steps (the receiver
# has a 1 MiB ring) until 16 MiB of the file are on the receiver's disk,
# then killed; returns once the receiver has ended the session
interrupt()
{
	local n

	n=$(recv_sessions)
	bg_send -q "$@" "$(target)"
	if ! creep 60 "$SEND_PID" receiving 16; then
		kill -CONT "$SEND_PID" 2>/dev/null
		wait_pid "$SEND_PID" 10
		sed 's/^/    send: /' "$SEND_ERR"
		sed 's/^/    recv: /' "$RECV_LOG"
		fail "16 MiB of the file did not arrive within 60 s (the sender exited $WAIT_RC; DIR holds: $(find "$dst" -mindepth 1 -printf '%P ' 2>&1))"
	fi
	kill -KILL "$SEND_PID"
	wait_pid "$SEND_PID" 10
	wait_for 30 sessions_over "$n" ||
		fail "the receiver did not end the killed sender's session within 30 s"
	[ ! -e "$dst/big" ] || fail "the file was complete before its sender was killed"
}

# intact WHAT - the file arrived whole, and it is the receiver's alone
intact()
{
	if ! cmp -s "$src/big" "$dst/big"; then
		fail_later "$1: the file differs from its source"
	elif [ "$(stat -c '%a %Y' "$dst/big")" != "$(stat -c '%a %Y' "$src/big")" ]; then
		fail_later "$1: the file's mode or mtime differ from its source's"
	elif [ "$(stat -c %u "$dst/big")" -ne 0 ]; then
		fail_later "$1: the file is owned by uid $(stat -c %u "$dst/big"), not the receiver"
	else
		ok "$1: the file is intact and the receiver's (uid 0)"
	fi
	if as_evil cat "$dst/big" >/dev/null 2>&1; then
		fail_later "$1: uid $EVIL can read the file"
	fi
	# shellcheck disable=SC2016
	if as_evil sh -c ': >>"$1"' sh "$dst/big" 2>/dev/null ||
	   as_evil chmod 0666 "$dst/big" 2>/dev/null; then
		fail_later "$1: uid $EVIL can write or chmod the file"
	fi
}

# warned REGEX WHAT - the receiver warned once, matching REGEX
warned()
{
	local n

	n=$(grep -cE -- "warning: $1" "$RECV_LOG")
	if [ "$n" -eq 1 ]; then
		ok "$2: the receiver says: $(grep -m 1 -E -- "warning: $1" "$RECV_LOG")"
	else
		sed 's/^/    recv: /' "$RECV_LOG"
		fail_later "$2: $n warnings matching '$1', want 1"
	fi
}

# store DIR - the receiver's store in DIR, as a line: names, owners, modes,
# sizes
store()
{
	find "$1/.pxfer" -printf '%P %U %m %s|' 2>&1
}

# fresh - an empty drop directory, mode 1777
fresh()
{
	rm -rf "$dst"
	mkdir "$dst" || fail "mkdir"
	chmod 1777 "$dst" || fail "chmod"
}

src=$T/src
mkdir "$src" || fail "mkdir"
head -c $((64 << 20)) /dev/urandom >"$src/big" || fail "cannot write"
chmod 0600 "$src/big"
size=$(stat -c %s "$src/big")
dst=$T/drop

note "her store, and a partial's data swapped between sessions"
fresh
start_server "$dst" --json --ring-mem 1M
as_evil mkdir -m 0777 "$dst/.pxfer" "$dst/.pxfer/partial" || fail "mkdir as uid $EVIL"
interrupt "$src/big"
# whatever the receiver left in her directory, she can replace
while IFS= read -r -d '' f; do
	# shellcheck disable=SC2016
	as_evil sh -c 'mv "$2" "$2.old" &&
		head -c "$1" /dev/zero | tr "\0" x >"$2" && chmod 0666 "$2"' \
		sh "$size" "$f" || fail "cannot swap '$f' as uid $EVIL"
	ok "she swapped '${f#"$dst"/}' for a file of hers"
done < <(find "$dst/.pxfer/partial" -name '*.part' -print0)
run_ok --resume trust "$src/big"
check_num "bytes resumed from her store" "${J[bytes_resumed]}" -eq 0
intact "her store"
warned "'$dst/\.pxfer' is owned by uid $EVIL, not this receiver \(uid 0\): remove it; large files arrive without resume until then" \
	"her store, two sessions"
stop_recv

note "a data file planted under the name a partial would have"
fresh
as_evil mkdir -m 0777 "$dst/.pxfer" "$dst/.pxfer/partial" || fail "mkdir as uid $EVIL"
key=$(python3 -c 'import hashlib; print(hashlib.blake2b(b"big", digest_size=16).hexdigest())')
# shellcheck disable=SC2016
as_evil sh -c ': >"$1" && chmod 0666 "$1"' sh "$dst/.pxfer/partial/$key.part" ||
	fail "cannot plant as uid $EVIL"
start_server "$dst" --json
run_ok "$src/big"
check_num "bytes resumed" "${J[bytes_resumed]}" -eq 0
intact "a planted data file"
if [ -f "$dst/.pxfer/partial/$key.part" ] && [ ! -s "$dst/.pxfer/partial/$key.part" ]; then
	ok "her file is as she left it"
else
	fail_later "her file was written or removed: $(store "$dst")"
fi
warned "'$dst/\.pxfer' is owned by uid $EVIL" "a planted data file (the sweep at start)"
stop_recv

note "the receiver's store, of a mode others can write"
fresh
mkdir -m 0777 "$dst/.pxfer" || fail "mkdir"
chmod 0777 "$dst/.pxfer"
start_server "$dst" --json --ring-mem 1M
run_ok "$src/big"
intact "a store of mode 0777"
warned "'$dst/\.pxfer' is writable by its group or others \(mode 0777\): remove it, or chmod go-w it" \
	"a store of mode 0777"
if [ -e "$dst/.pxfer/partial" ]; then
	fail_later "the receiver used a store of mode 0777: $(store "$dst")"
fi

note "the store removed as the warning says: interrupted, then resumed"
rm -rf "$dst/.pxfer" "$dst/big"
interrupt "$src/big"
if [ "$(stat -c '%u %a' "$dst/.pxfer" "$dst/.pxfer/partial" "$dst/.pxfer/key" | tr '\n' ' ')" = \
     "0 700 0 700 0 600 " ]; then
	ok "the store is the receiver's: .pxfer and partial 0700, the key 0600"
else
	fail_later "the store: $(stat -c '%n %u %a' "$dst/.pxfer" "$dst/.pxfer/partial" "$dst/.pxfer/key" | tr '\n' '|')"
fi
as_evil ls "$dst/.pxfer" >/dev/null 2>&1 && fail_later "uid $EVIL can list the store"
[ "$(partials "$dst")" -eq 1 ] || fail "$(partials "$dst") partials after the interruption, expected 1"
snap=$T/snap
cp -a "$dst/.pxfer" "$snap" || fail "cp"
run_ok "$src/big"
check_num "bytes resumed by the receiver itself" "${J[bytes_resumed]}" -gt 0
intact "resumed"

note "a data file of hers in the receiver's store"
rm -rf "$dst/.pxfer" "$dst/big"
cp -a "$snap" "$dst/.pxfer" || fail "cp"
part=$(find "$dst/.pxfer/partial" -name '*.part')
chown "$EVIL:$EVIL" "$part" || fail "chown"
chmod 0666 "$part" || fail "chmod"
run_ok --resume trust "$src/big"
check_num "bytes resumed from her data file" "${J[bytes_resumed]}" -eq 0
intact "her data file in the receiver's store"
[ "$(partials "$dst")" -eq 0 ] || fail_later "partials left: $(store "$dst")"
stop_recv

finish
