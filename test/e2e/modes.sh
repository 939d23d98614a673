#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_modes: what becomes of the modes a sender sends. By default the
# receiver's umask takes its bits away, as with cp or scp; set-uid and
# set-gid never arrive; the sticky bit does (it only restricts who may
# delete in a directory). Files and directories of 0777, 0640, 4755,
# 2755, 1777 (a directory) and 0700, through a receiver with umask 022
# and one with umask 077:
#   umask 022: 0777 -> 0755, 1777 -> 1755, 0640 -> 0640, 4755 -> 0755
#   umask 077: 0777 -> 0700, 1777 -> 1700, 0640 -> 0600
# With 'pxfer recv --perms' (and umask 077) the modes arrive as they were
# sent, set-uid and set-gid still excepted: 0777, 1777, 4755 -> 0755.
# Small files (made unnamed), empty ones (named when they come, in a
# directory the receiver made) and a large one (a temporary name) alike,
# at the top and in a directory below it, with their times.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

src=$T/src
mkdir -p "$src/d0777" "$src/d1777" "$src/d2755" "$src/d0700" || fail "mkdir"
mkdir -p "$src/sub" || fail "mkdir"
for m in 0777 0640 4755 2755 0700; do
	printf 'mode %s\n' "$m" >"$src/f$m"
	: >"$src/e$m"
	: >"$src/sub/e$m"
	chmod "$m" "$src/f$m" "$src/e$m" "$src/sub/e$m"
	touch -d "2001-02-03 04:05:06.$m" "$src/e$m" "$src/sub/e$m"
done
head -c 3M /dev/urandom >"$src/big0777"
chmod 0777 "$src/big0777"
chmod 0777 "$src/d0777"
chmod 1777 "$src/d1777"
chmod 2755 "$src/d2755"
chmod 0700 "$src/d0700"
chmod 0755 "$src"
[ "$(stat -c %a "$src/f4755")" = 4755 ] || skip "this file system keeps no set-uid bit"

# expect DIR NAME MODE - fail_later unless DIR/NAME has octal mode MODE
expect()
{
	local got

	got=$(stat -c %a "$1/$2")
	[ "$got" = "$3" ] || fail_later "$2: mode $got, expected $3 ($4)"
	case $2 in
	e*)
		expect_empty "$1" "$2" "$3" "$4"
		expect_empty "$1" "sub/$2" "$3" "$4, in a directory below"
		;;
	esac
}

# expect_empty DIR NAME MODE WHY - an empty file: MODE, empty, its time
expect_empty()
{
	local got

	got=$(stat -c '%a %s %y' "$1/$2")
	[ "$got" = "$3 0 $(stat -c %y "$src/$2")" ] ||
		fail_later "$2: '$got', expected mode $3, empty, the source's time ($4)"
}

# receive UMASK [ARGS...] - send $src to a receiver running with UMASK;
# the copy is in $dst/src
receive()
{
	local mask=$1

	shift
	dst=$T/dst.$mask${1:+.${1#--}}
	mkdir -p "$dst"
	umask "$mask"
	start_recv "$dst" "$@"
	umask 022
	send_ok -q -j 2 "$src" "$(target)"
	wait_recv
	expect_rc 0 "$WAIT_RC" "the receiver with umask $mask"
	dst=$dst/src
}

note "a receiver with umask 022"
receive 022
why="umask 022"
expect "$dst" f0777 755 "$why"
expect "$dst" e0777 755 "$why"
expect "$dst" big0777 755 "$why, a large file"
expect "$dst" f0640 640 "$why"
expect "$dst" e0640 640 "$why"
expect "$dst" f4755 755 "$why, set-uid never arrives"
expect "$dst" e4755 755 "$why, set-uid never arrives"
expect "$dst" f2755 755 "$why, set-gid never arrives"
expect "$dst" e2755 755 "$why, set-gid never arrives"
expect "$dst" f0700 700 "$why"
expect "$dst" e0700 700 "$why"
expect "$dst" d0777 755 "$why, a directory"
expect "$dst" d1777 1755 "$why, the sticky bit stays"
expect "$dst" d2755 755 "$why, a set-gid directory"
expect "$dst" d0700 700 "$why"
[ -z "$(find "$dst" -perm /0022 -print -quit)" ] ||
	fail_later "world- or group-writable entries arrived: $(find "$dst" -perm /0022 -printf '%m %P\n')"
ok "umask 022: $(cd "$dst" && stat -c '%n %a' f0777 d1777 f4755 | tr '\n' ' ')"

note "a receiver with umask 077"
receive 077
why="umask 077"
expect "$dst" f0777 700 "$why"
expect "$dst" e0777 700 "$why"
expect "$dst" big0777 700 "$why, a large file"
expect "$dst" f0640 600 "$why"
expect "$dst" e0640 600 "$why"
expect "$dst" d0777 700 "$why, a directory"
expect "$dst" d1777 1700 "$why, a sticky directory"
ok "umask 077: $(cd "$dst" && stat -c '%n %a' f0777 f0640 d1777 | tr '\n' ' ')"

note "a receiver with --perms (and umask 077)"
receive 077 --perms
why="--perms"
expect "$dst" f0777 777 "$why"
expect "$dst" e0777 777 "$why"
expect "$dst" big0777 777 "$why, a large file"
expect "$dst" f0640 640 "$why"
expect "$dst" e0640 640 "$why"
expect "$dst" f4755 755 "$why, set-uid never arrives"
expect "$dst" e4755 755 "$why, set-uid never arrives"
expect "$dst" f2755 755 "$why, set-gid never arrives"
expect "$dst" e2755 755 "$why, set-gid never arrives"
expect "$dst" d0777 777 "$why, a directory"
expect "$dst" d1777 1777 "$why, a sticky directory"
expect "$dst" d2755 755 "$why, a set-gid directory"
expect "$dst" d0700 700 "$why"
ok "--perms: $(cd "$dst" && stat -c '%n %a' f0777 d1777 f4755 | tr '\n' ' ')"

finish
