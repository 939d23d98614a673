#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_errors: what goes wrong, and how pxfer says so (the exit statuses in
# 'pxfer send --help' and 'pxfer recv --help'):
#   - a missing source: 2, naming it; two sources of the same name: 2;
#     a source that is not a regular file or directory (a device, a fifo,
#     a socket, a link to a device): 2, naming it, before connecting
#   - some files fail (unreadable, refused by the receiver): 1, and the
#     others arrive; one that shrinks while it is sent goes again at its
#     new size (0); a fifo is skipped with a warning
#   - a missing or unusable --dir, an unwritable one: 2
#   - a port in use: 4, "in use"; nothing listening: 4, with a hint
#   - bad options and a bad HOST: 2; --device naming no device, or with
#     --transport tcp, on either side: 2; a port outside 1-65535 or not a
#     number (--port, HOST:PORT), on either side: 2
#   - --help and --version: 0
#   - the receiver's disk fills up (a 16 MiB tmpfs in a private mount
#     namespace, 64 MiB sent): the sender fails and says there is no
#     space; nothing partial appears under a final name, and the small
#     files sent before the big one are intact
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

src=$T/src
dst=$T/dst
mkdir -p "$src" "$dst" || fail "mkdir"
printf 'data\n' >"$src/file"

# run_pxfer NAME ARGS... - run pxfer (at most 30 s), output in $T/NAME.log;
# sets RC
run_pxfer()
{
	local name=$1

	shift
	timeout -k 5 30 "$PXFER" "$@" >"$T/$name.log" 2>&1
	RC=$?
}

# expect_fail WANT NAME REGEX ARGS... - pxfer ARGS must exit WANT and say
# something matching REGEX
expect_fail()
{
	local want=$1 name=$2 re=$3

	shift 3
	run_pxfer "$name" "$@"
	expect_rc "$want" "$RC" "pxfer $*"
	expect_grep "$re" "$T/$name.log" "pxfer $*"
	ok "pxfer $*: $want, $(grep -iE -m 1 -- "$re" "$T/$name.log")"
}

note "a source that does not exist"
expect_fail 2 nosrc "$T/no-such-file" send "$T/no-such-file" 127.0.0.1:1
expect_fail 2 nosrc2 "$T/also-missing" send "$src/file" "$T/also-missing" 127.0.0.1:1

note "a source that is not a regular file or a directory"
mkfifo "$T/fifo-arg"
ln -s /dev/null "$T/link-to-null"
expect_fail 2 srcdevnull "cannot send '/dev/null': it is not a regular file or a directory" \
	send "$src/file" /dev/null 127.0.0.1:1
expect_fail 2 srcfifo "cannot send '$T/fifo-arg': it is not a regular file" \
	send "$T/fifo-arg" 127.0.0.1:1
expect_fail 2 srclink "cannot send '$T/link-to-null': it is not a regular file" \
	send "$T/link-to-null" 127.0.0.1:1
if python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
	"$T/socket-arg" 2>/dev/null; then
	expect_fail 2 srcsocket "cannot send '$T/socket-arg': it is not a regular file" \
		send "$T/socket-arg" 127.0.0.1:1
else
	echo "SKIP (subcase): no python3 to make a unix socket"
fi

note "the receiving directory"
expect_fail 2 nodir "$T/no-such-dir" recv --once --port "$(free_port)" --dir "$T/no-such-dir"
expect_fail 2 notadir "$src/file" recv --once --port "$(free_port)" --dir "$src/file"
expect_fail 2 dirnoarg "requires an argument|usage" recv --dir
expect_fail 2 recvextra "unexpected argument" recv --once --port "$(free_port)" "$dst"

note "a directory the receiver cannot write into"
ro=$T/ro
mkdir "$ro"
chmod 0555 "$ro"
if [ "$(id -u)" -eq 0 ]; then
	# root writes anywhere: be nobody, who must reach $ro and the binary
	chmod 0755 "$T"
	asuser=()
	if command -v setpriv >/dev/null; then
		asuser=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	elif command -v runuser >/dev/null; then
		asuser=(runuser -u nobody --)
	fi
	if [ ${#asuser[@]} -eq 0 ] || ! "${asuser[@]}" test -x "$PXFER" 2>/dev/null; then
		echo "SKIP (subcase): cannot run pxfer as an unprivileged user here"
	else
		timeout -k 5 30 "${asuser[@]}" "$PXFER" recv --once --port "$(free_port)" \
			--dir "$ro" >"$T/ro.log" 2>&1
		RC=$?
		expect_rc 2 "$RC" "pxfer recv into a read-only directory (as uid 65534)"
		expect_grep "cannot write|permission" "$T/ro.log" "pxfer recv into a read-only directory"
		ok "read-only directory: 2, $(head -n 1 "$T/ro.log")"
	fi
	chmod 0700 "$T"
else
	expect_fail 2 ro "cannot write|permission" recv --once --port "$(free_port)" --dir "$ro"
fi

note "a port in use"
start_recv "$dst"
expect_fail 4 inuse "in use" recv --once --port "$RECV_PORT" --dir "$dst"
recv_alive || fail "the first receiver died when a second one tried its port"
send_ok -q "$src/file" "$(target)"
wait_recv
expect_rc 0 "$WAIT_RC" "the first receiver"

note "nothing listening"
port=$(free_port)
expect_fail 4 refused "pxfer recv|running|refused" send "$src/file" "127.0.0.1:$port"
expect_grep "is 'pxfer recv' running" "$T/refused.log" "the hint"

note "bad options"
expect_fail 2 j0 "-j" send -j 0 "$src/file" 127.0.0.1:1
expect_fail 2 j65 "-j" send -j 65 "$src/file" 127.0.0.1:1
expect_fail 2 jx "-j" send -j many "$src/file" 127.0.0.1:1
expect_fail 2 j1x "-j" send -j 1x "$src/file" 127.0.0.1:1
expect_fail 2 chunk3 "chunk-size" send --chunk-size 3 "$src/file" 127.0.0.1:1
expect_fail 2 chunkodd "chunk-size" send --chunk-size 5000 "$src/file" 127.0.0.1:1
expect_fail 2 chunkbig "chunk-size" send --chunk-size 128M "$src/file" 127.0.0.1:1
expect_fail 2 timeout0 "timeout" send --timeout 0 "$src/file" 127.0.0.1:1
expect_fail 2 unknown "unrecognized|unknown|invalid|usage" send --no-such-option "$src/file" 127.0.0.1:1
expect_fail 2 transport "transport" send --transport carrier-pigeon "$src/file" 127.0.0.1:1
expect_fail 2 io "--io" send --io magic "$src/file" 127.0.0.1:1

note "--device and --gid-index: a device that does not exist, and with tcp (both sides)"
expect_fail 2 sendnodev "no RDMA device named 'no-such-dev0'" \
	send --device no-such-dev0 "$src/file" 127.0.0.1:1
expect_fail 2 recvnodev "no RDMA device named 'no-such-dev0'" \
	recv --once --port "$(free_port)" --dir "$dst" --device no-such-dev0
expect_fail 2 sendtcpdev "apply to the rdma transport, not tcp" \
	send --transport tcp --device rxe0 "$src/file" 127.0.0.1:1
expect_fail 2 recvtcpdev "apply to the rdma transport, not tcp" \
	recv --once --port "$(free_port)" --dir "$dst" --transport tcp --gid-index 1
expect_fail 2 nohost "PATH and a HOST|usage" send "$src/file"
expect_fail 2 recvunknown "unrecognized|unknown|invalid|usage" recv --no-such-option
expect_fail 2 ringmem "ring-mem" recv --ring-mem 1K --dir "$dst"
expect_fail 2 maxchunk "max-chunk" recv --max-chunk 1G --dir "$dst"
expect_fail 2 recvio "--io" recv --io magic --dir "$dst"
expect_fail 2 nocmd "usage" 
expect_fail 2 badcmd "not a pxfer command" frobnicate

note "ports outside 1-65535, or not numbers (getaddrinfo would wrap 86537 to 21001)"
expect_fail 2 port86537 "--port takes a port number from 1 to 65535, not '86537'" \
	send --port 86537 "$src/file" 127.0.0.1
expect_fail 2 port0 "--port takes a port number" send -p 0 "$src/file" 127.0.0.1
expect_fail 2 hostport0 "PORT of HOST.* is a number from 1 to 65535, not '0'" send "$src/file" 127.0.0.1:0
expect_fail 2 hostportabc "PORT of HOST.* not 'abc'" send "$src/file" 127.0.0.1:abc
expect_fail 2 hostportbig "PORT of HOST.* not '86537'" send "$src/file" "[::1]:86537/dest"
expect_fail 2 hostportsign "PORT of HOST.* not '\+7471'" send "$src/file" 127.0.0.1:+7471
expect_fail 2 hostportname "PORT of HOST.* not 'http'" send --port 7471 "$src/file" 127.0.0.1:http
expect_fail 2 recvport86537 "--port takes a port number from 1 to 65535, not '86537'" \
	recv --once --port 86537 --dir "$dst"
expect_fail 2 recvport0 "--port takes a port number" recv --once --port 0 --dir "$dst"
expect_fail 2 recvportabc "--port takes a port number" recv --once --port abc --dir "$dst"

note "bad HOST syntax"
expect_fail 2 emptyport "HOST\[:PORT\]" send "$src/file" "127.0.0.1:"
expect_fail 2 emptyport2 "HOST\[:PORT\]" send "$src/file" "127.0.0.1:/dest"
expect_fail 2 emptyhost "HOST\[:PORT\]" send "$src/file" ":7471"
expect_fail 2 bracket "HOST\[:PORT\]" send "$src/file" "[::1:7471"
expect_fail 2 bracket2 "HOST\[:PORT\]" send "$src/file" "[::1]x"
expect_fail 2 emptytarget "HOST\[:PORT\]" send "$src/file" ""

note "help and version"
for args in "--help" "send --help" "recv --help" "--version" "help send"; do
	# shellcheck disable=SC2086
	run_pxfer help $args
	expect_rc 0 "$RC" "pxfer $args"
	[ -s "$T/help.log" ] || fail "pxfer $args printed nothing"
	ok "pxfer $args: 0, $(head -n 1 "$T/help.log")"
done
run_pxfer version --version
want_proto=$(sed -n 's/^#define PXFER_PROTO_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$top/src/core/proto.h")
grep -qE "^pxfer [0-9]+\.[0-9]+.* \(protocol $want_proto\)\$" "$T/version.log" ||
	fail "--version printed: $(cat "$T/version.log"), not protocol $want_proto"
run_pxfer sendhelp send --help
for w in "exit status" "--jobs" "HOST\[:PORT\]\[/DEST\]" "PXFER_SECRET"; do
	expect_grep "$w" "$T/sendhelp.log" "pxfer send --help"
done
run_pxfer recvhelp recv --help
for w in "exit status" "--dir" "--once"; do
	expect_grep "$w" "$T/recvhelp.log" "pxfer recv --help"
done

note "two sources with the same name"
mkdir -p "$T/other/src"
expect_fail 2 samename "same name|named|overwrite" send "$src" "$T/other/src" 127.0.0.1:1

note "a destination that is a file on the receiver"
dst=$T/dst.destfile
mkdir "$dst"
printf 'a file\n' >"$dst/taken"
start_recv "$dst"
psend "$src/file" "$(target)/taken"
wait_recv
[ "$SEND_RC" -ne 0 ] || fail "sending into a destination that is a file succeeded"
expect_grep "destination" "$SEND_ERR" "sender, destination is a file"
ok "sender: exit $SEND_RC, $(grep -m 1 error "$SEND_ERR")"
[ "$(cat "$dst/taken")" = "a file" ] || fail "the file in the way was changed"

note "some files fail: exit 1, the others arrive"
# a small file (created unnamed) and a large one (a temporary name) whose
# names are directories on the receiver: both fail, saying why
dst=$T/dst.partial
mkdir -p "$dst/clash/x" "$dst/clash-big/x"
mkdir -p "$T/p"
printf 'ok\n' >"$T/p/fine"
printf 'x\n' >"$T/p/clash"
head -c 2097152 /dev/urandom >"$T/p/clash-big"
start_recv "$dst"
psend -j 2 "$T/p/fine" "$T/p/clash" "$T/p/clash-big" "$(target)"
wait_recv
expect_rc 1 "$SEND_RC" "sender, two files refused by the receiver"
expect_grep "'[^']*/clash' failed on the receiver: .*(is a directory|not empty)" "$SEND_ERR" \
	"sender, the small file refused by the receiver"
expect_grep "'[^']*/clash-big' failed on the receiver: .*(is a directory|not empty)" "$SEND_ERR" \
	"sender, the large file refused by the receiver"
expect_rc 1 "$WAIT_RC" "receiver (--once), two files refused"
cmp -s "$T/p/fine" "$dst/fine" || fail "the file that could be written did not arrive"
{ [ -d "$dst/clash/x" ] && [ -d "$dst/clash-big/x" ]; } || fail "a directory in the way was replaced"
no_part_files "$dst"
ok "sender 1: $(grep -m 1 error "$SEND_ERR")"

if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
   setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$PXFER" 2>/dev/null; then
	note "unreadable files and directories (the sender as uid 65534)"
	chmod 0755 "$T"
	u=$T/unreadable
	mkdir -p "$u/sub" "$u/closed"
	printf 'readable\n' >"$u/readable"
	printf 'secret\n' >"$u/sub/secret"
	printf 'inside\n' >"$u/closed/inside"
	chmod 0000 "$u/sub/secret" "$u/closed"
	dst=$T/dst.unreadable
	mkdir "$dst"
	start_recv "$dst"
	timeout -k 5 60 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PXFER" send -j 2 "$u" "$(target)" >"$T/unreadable.log" 2>&1
	RC=$?
	wait_recv
	chmod 0700 "$T"
	chmod 0755 "$u/closed"
	expect_rc 1 "$RC" "sender with unreadable files"
	expect_grep "cannot read .*secret" "$T/unreadable.log" "sender with unreadable files"
	expect_grep "cannot read .*closed" "$T/unreadable.log" "sender with an unreadable directory"
	cmp -s "$u/readable" "$dst/unreadable/readable" || fail "the readable file did not arrive"
	[ -e "$dst/unreadable/sub/secret" ] && fail "an unreadable file arrived"
	no_part_files "$dst"
	ok "sender 1, the readable file arrived: $(grep -m 1 error "$T/unreadable.log")"
else
	echo "SKIP (subcase): unreadable files need root to switch to an unprivileged user"
fi

note "a fifo in the tree is skipped with a warning"
f=$T/withfifo
mkdir -p "$f"
printf 'regular\n' >"$f/regular"
mkfifo "$f/fifo"
dst=$T/dst.fifo
mkdir "$dst"
start_recv "$dst"
send_ok "$f" "$(target)"
wait_recv
expect_grep "skipping .*fifo" "$SEND_ERR" "the fifo"
cmp -s "$f/regular" "$dst/withfifo/regular" || fail "the regular file next to the fifo did not arrive"
[ -e "$dst/withfifo/fifo" ] && fail "the fifo was created on the receiver"
ok "$(grep -m 1 skipping "$SEND_ERR")"

# A file that shrinks while it is sent. The sender finds that it changed
# (it ended early), the receiver discards what arrived, and the same
# session sends it again as it is now: exit 0, the file arrives at its
# new size, and the sender said so. Nothing partial shows under a final
# name.
note "a file that shrinks while it is sent"
sh=$T/shrink
mkdir -p "$sh"
head -c 1G /dev/zero >"$sh/shrinking"
printf 'steady\n' >"$sh/steady"
dst=$T/dst.shrink
mkdir "$dst"
start_server "$dst" -q --ring-mem 1M
timeout -k 5 120 "$PXFER" send -j 1 --chunk-size 64K \
	"$sh" "$(target)" >/dev/null 2>"$T/shrink.log" &
spid=$!
track $spid
wait_for 30 have_part "$dst" || fail "no temporary file appeared on the receiver within 30 s"
truncate -s 100K "$sh/shrinking"
wait_pid $spid 60
send_rc=$WAIT_RC
stop_recv
log=$T/shrink.log
if [ "$send_rc" -eq 0 ] && ! grep -q "changed while being sent" "$log"; then
	[ "$(stat -c %s "$dst/shrink/shrinking")" -eq $((1 << 30)) ] ||
		fail "no change was reported, yet the file arrived at $(stat -c %s "$dst/shrink/shrinking") bytes"
	echo "note: the whole file was sent before it shrank; nothing to check"
else
	[ "$send_rc" -eq 0 ] || {
		echo "--- the sender's $log, and the receiver's $RECV_LOG:" >&2
		cat "$log" "$RECV_LOG" >&2
	}
	expect_rc 0 "$send_rc" "sender of a file that shrank"
	expect_grep "changed while being sent; it will be sent again" "$log" \
		"sender of a file that shrank"
	cmp -s "$sh/shrinking" "$dst/shrink/shrinking" ||
		fail "the file that shrank did not arrive as it is now"
	cmp -s "$sh/steady" "$dst/shrink/steady" || fail "the file next to it did not arrive"
	no_part_files "$dst"
	ok "sender 0, sent again at its new size: $(grep -m 1 changed "$log")"
fi
rm -f "$sh/shrinking"

# the receiver on a 16 MiB tmpfs in its own mount namespace; where that
# cannot be set up (a chroot, a container without CAP_SYS_ADMIN) the
# subcase says it is skipped and the checks that ran decide the test
disk_full()
{
	local mnt=$T/small-disk after=$T/after port fullpid i nsmall extra

	if ! unshare -m true 2>/dev/null; then
		echo "SKIP (subcase): disk full: unshare -m is not permitted here"
		return 0
	fi
	mkdir -p "$mnt" "$after"
	for i in 1 2 3; do
		head -c 1000000 /dev/urandom >"$src/small$i"
	done
	head -c 64M /dev/urandom >"$src/big64"
	port=$(free_port)
	# once the receiver exits, what is on the tmpfs is copied out for
	# inspection. Its rings hold 4 MiB, so the small files, sent first,
	# are written before the big one can fill the disk. One connection:
	# over two, 'first' is no order at all, and while one worker is held
	# up on a busy machine the other can fill the disk with the big file
	# before a small file's chunk is written (seen under ThreadSanitizer).
	# (the script is for the inner bash, which expands its arguments)
	# shellcheck disable=SC2016
	unshare -m --propagation private bash -c '
		mount -t tmpfs -o size=16m pxfer-e2e "$1" || exit 200
		"$3" recv --once --ring-mem 4M --port "$4" --dir "$1"
		rc=$?
		cp -a "$1/." "$2/"
		exit $rc' _ "$mnt" "$after" "$PXFER" "$port" >"$T/full.log" 2>&1 &
	fullpid=$!
	track $fullpid
	if ! wait_for 10 port_listening "$port"; then
		wait_pid $fullpid 5
		if [ "$WAIT_RC" -eq 200 ]; then
			echo "SKIP (subcase): disk full: cannot mount a tmpfs here: $(head -n 1 "$T/full.log")"
			return 0
		fi
		cat "$T/full.log" >&2
		fail "the receiver on the small disk did not start"
	fi
	psend -j 1 "$src/small1" "$src/small2" "$src/small3" "$src/big64" "127.0.0.1:$port"
	wait_pid $fullpid 30
	sed 's/^/    recv: /' "$T/full.log"
	sed 's/^/    send: /' "$SEND_ERR"
	[ "$SEND_RC" -ne 0 ] || fail "disk full: the sender exited 0"
	expect_grep "no space|disk full|ENOSPC" "$SEND_ERR" "the sender, disk full"
	ok "sender: exit $SEND_RC, $(grep -iE -m 1 'no space|disk full' "$SEND_ERR")"
	expect_rc 5 "$WAIT_RC" "the receiver (--once), disk full"
	expect_grep "no space" "$T/full.log" "the receiver, disk full"
	ok "receiver: exit 5, $(grep -i -m 1 'no space' "$T/full.log")"
	no_part_files "$after"
	[ -e "$after/big64" ] && fail "disk full: 'big64' appeared under its name"
	nsmall=0
	for i in 1 2 3; do
		[ -e "$after/small$i" ] || continue
		cmp -s "$src/small$i" "$after/small$i" || fail "disk full: 'small$i' is there but differs"
		nsmall=$((nsmall + 1))
	done
	extra=$(find "$after" -mindepth 1 -maxdepth 1 ! -name 'small[123]' ! -name .pxfer -printf '%P\n')
	[ -z "$extra" ] || fail "disk full: unexpected entries: $extra"
	# what the disk took of 'big64' is kept, for when there is room
	[ "$(partials "$after")" -eq 1 ] || fail "disk full: what arrived of 'big64' was not kept"
	[ "$nsmall" -eq 3 ] || fail "disk full: only $nsmall of the 3 small files sent first were kept"
	ok "nothing partial under a final name; the 3 small files sent first are intact"
}

note "the receiver's disk fills up"
disk_full
finish
