# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Helpers for the end-to-end tests (test/e2e/*.sh). Source it first:
#
#	. "$(dirname "$0")/../lib/common.sh"
#
# It gives each test a private temporary directory ($T, removed at exit),
# picks free TCP ports, starts receivers in the background (and kills
# every process it started when the test ends, however it ends), and
# compares trees. Every wait is bounded, so no test can hang.
#
# Exit statuses, as test/runtests.sh expects: 0 pass, 1 fail, 77 skip.

set -u

top=${PXFER_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${PXFER_BUILD:-$top/build/san}
PXFER=$build/pxfer
# the test helper programs (test/helper/), for the tests that use them
# shellcheck disable=SC2034
HELPERS=$build/test/helper
export LC_ALL=C
# the receiver applies its umask to modes from the wire: the tests that
# compare modes expect the usual one
umask 022
# the secret both sides use unless a test says otherwise
export PXFER_SECRET=e2e-shared-secret-0123456789
# the sanitizers' options, as test/runtests.sh sets them, for a test run
# by hand
# shellcheck source=sanitizer.sh
. "$(dirname "${BASH_SOURCE[0]}")/sanitizer.sh"

# fail MSG... - report a failed check and end the test (exit 1)
fail()
{
	echo "FAIL: $*" >&2
	# PXFER_TEST_KEEP=DIR: its files are kept there, to look at
	[ -n "${PXFER_TEST_KEEP:-}" ] && cp -r "$T" "$PXFER_TEST_KEEP" 2>/dev/null
	exit 1
}

# fail_later MSG... - report a failed check, go on with the other checks,
# and have finish() fail the test
_failed_later=0
fail_later()
{
	echo "FAIL: $*" >&2
	_failed_later=$((_failed_later + 1))
}

# finish - end the test: 1 if fail_later was called, else 0
finish()
{
	if [ "$_failed_later" -gt 0 ]; then
		echo "$_failed_later check(s) failed" >&2
		exit 1
	fi
	exit 0
}

# skip MSG... - the test cannot run here (exit 77); the last line says why
skip()
{
	echo "SKIP: $*"
	exit 77
}

# note MSG... - say what is being checked
note()
{
	echo "--- $*"
}

# ok MSG... - a check passed
ok()
{
	echo "ok: $*"
}

[ -x "$PXFER" ] || skip "$PXFER is not built (make SAN=1)"
command -v ss >/dev/null || skip "ss (iproute2) is needed"

T=$(mktemp -d /tmp/pxfer-e2e.XXXXXX) || fail "mktemp"
_pids=()

# track PID - kill PID (and wait for it) when the test ends
track()
{
	_pids+=("$1")
}

_cleanup()
{
	local rc=$? p f

	for p in "${_pids[@]}"; do
		kill -0 "$p" 2>/dev/null || continue
		kill -CONT "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${_pids[@]}"; do
		_wait_gone "$p" 50 || kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# the tests keep the logs of every process directly in $T (the test
	# data is below it): a sanitizer report in one of them fails the
	# test, even where the exit status it checked was right
	while IFS= read -r -d '' f; do
		echo "FAIL: a sanitizer report in ${f##*/}:" >&2
		grep -m 1 -A 79 -E -- "$SANITIZER_REPORT" "$f" >&2
		rc=1
	done < <(find "$T" -maxdepth 1 -type f -size -16M \
		-exec grep -lZE -- "$SANITIZER_REPORT" {} + 2>/dev/null)
	# a test may leave read-only directories behind
	chmod -R u+rwX "$T" ${_scratch:+"$_scratch"} 2>/dev/null
	rm -rf "$T" ${_scratch:+"$_scratch"}
	exit "$rc"
}

# launcher_env - the environment of a test that starts launchers (srun,
# mpirun) itself: none of an outer launcher's variables, root allowed to
# run mpirun, and the ASan unwinding that suppresses the strings libpmix
# keeps past PMIx_Finalize (test/lib/lsan.supp: libpmix has no frame
# pointers)
launcher_env()
{
	local v

	while IFS= read -r v; do
		case $v in SLURM_*|PMIX_*|OMPI_*) unset "$v";; esac
	done < <(compgen -e)
	if [ "$(id -u)" -eq 0 ]; then
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	fi
	export ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0
}

# scratch MIB - SCRATCH: a directory for MIB MiB of bulk data, in memory
# (/dev/shm) when it has the room, so that disk speed does not time the
# test, else below $T; removed when the test ends. Not in a subshell.
_scratch=
SCRATCH=
scratch()
{
	local free

	free=$(df -Pm /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
	if [ "${free:-0}" -gt $(($1 + 1024)) ] &&
	   _scratch=$(mktemp -d /dev/shm/pxfer-e2e.XXXXXX 2>/dev/null); then
		SCRATCH=$_scratch
	else
		_scratch=
		SCRATCH=$T/scratch
		mkdir -p "$SCRATCH" || fail "mkdir $SCRATCH"
	fi
}
trap _cleanup EXIT
trap 'exit 130' INT TERM HUP

# _wait_gone PID TENTHS - wait up to TENTHS/10 s for PID to exit
_wait_gone()
{
	local i

	for ((i = 0; i < $2; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	! kill -0 "$1" 2>/dev/null
}

# port_listening PORT - whether something listens on TCP PORT
port_listening()
{
	[ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]
}

# free_port - print a TCP port nothing uses now, outside the range the
# kernel hands out to outgoing connections when there is room for it
free_port()
{
	local lo=32768 hi=60999 base=20000 span=10000 p i

	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
	if [ "$lo" -gt 12000 ]; then
		base=10000 span=$((lo - 10000))
	elif [ "$hi" -lt 63000 ]; then
		base=$((hi + 1)) span=$((65535 - hi))
	fi
	for ((i = 0; i < 200; i++)); do
		p=$((base + (RANDOM * 32768 + RANDOM) % span))
		if [ -z "$(ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null)" ]; then
			echo "$p"
			return 0
		fi
	done
	fail "no free TCP port found"
}

# Receivers. RECV_WRAP, if set (an array), is put before the command, for
# example RECV_WRAP=("$HELPERS/no_io_uring"). It must exec pxfer, so that
# RECV_PID is the receiver itself.
RECV_WRAP=()
RECV_PID=
RECV_PORT=
RECV_LOG=
_nrecv=0

# _start_recv DIR ARGS... - start "pxfer recv --port P --dir DIR
# ARGS..." in the background and wait (10 s at most) until it listens.
# Sets RECV_PID, RECV_PORT, RECV_LOG (its stdout and stderr).
_start_recv()
{
	local dir=$1 try i

	shift
	for ((try = 0; try < 5; try++)); do
		_nrecv=$((_nrecv + 1))
		RECV_PORT=$(free_port)
		RECV_LOG=$T/recv.$_nrecv.log
		"${RECV_WRAP[@]}" "$PXFER" recv --port "$RECV_PORT" --dir "$dir" \
			"$@" >"$RECV_LOG" 2>&1 &
		RECV_PID=$!
		track "$RECV_PID"
		for ((i = 0; i < 100; i++)); do
			if port_listening "$RECV_PORT"; then
				return 0
			fi
			kill -0 "$RECV_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$RECV_PID" 2>/dev/null; then
			cat "$RECV_LOG" >&2
			fail "the receiver did not listen on port $RECV_PORT within 10 s"
		fi
		wait "$RECV_PID" 2>/dev/null
		# lost a race for the port: take another one
		grep -q "in use" "$RECV_LOG" && continue
		cat "$RECV_LOG" >&2
		fail "the receiver exited before listening"
	done
	fail "no port could be listened on"
}

# start_recv DIR [ARGS...] - a quiet receiver for one session (--once -q)
start_recv()
{
	local dir=$1

	shift
	_start_recv "$dir" --once -q "$@"
}

# start_server DIR [ARGS...] - a receiver that serves until it is killed,
# saying what it does (its log is RECV_LOG)
start_server()
{
	_start_recv "$@"
}

# wait_pid PID [SECONDS] - wait for PID to exit (default 60 s), then set
# WAIT_RC to its exit status; 124 (and the process is killed) on timeout.
# (the tests read WAIT_RC; nothing here does)
# shellcheck disable=SC2034
wait_pid()
{
	local pid=$1 limit=${2:-60}

	if ! _wait_gone "$pid" $((limit * 10)); then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		WAIT_RC=124
		return 0
	fi
	wait "$pid" 2>/dev/null
	WAIT_RC=$?
	return 0
}

# wait_recv [SECONDS] - wait for the receiver to exit; sets WAIT_RC
# (SECONDS is optional: most tests call it without)
# shellcheck disable=SC2120
wait_recv()
{
	wait_pid "$RECV_PID" "${1:-60}"
}

# stop_recv - end a serving receiver (SIGTERM, then SIGKILL after 10 s)
stop_recv()
{
	kill -TERM "$RECV_PID" 2>/dev/null
	wait_pid "$RECV_PID" 10
}

# recv_alive - whether the receiver still runs and listens
recv_alive()
{
	kill -0 "$RECV_PID" 2>/dev/null && port_listening "$RECV_PORT"
}

# psend ARGS... - run "pxfer send ARGS..." (at most 300 s); sets SEND_RC,
# stdout in $SEND_OUT and stderr in $SEND_ERR. Never fails by itself.
# SEND_WRAP, if set (an array), is put before the command.
SEND_WRAP=()
SEND_OUT=
SEND_ERR=
SEND_RC=
_nsend=0
psend()
{
	_nsend=$((_nsend + 1))
	SEND_OUT=$T/send.$_nsend.out
	SEND_ERR=$T/send.$_nsend.err
	timeout -k 5 300 "${SEND_WRAP[@]}" "$PXFER" send "$@" \
		>"$SEND_OUT" 2>"$SEND_ERR"
	SEND_RC=$?
	return 0
}

# send_ok ARGS... - psend, and fail the test unless it exits 0
send_ok()
{
	psend "$@"
	if [ "$SEND_RC" -ne 0 ]; then
		cat "$SEND_ERR" >&2
		[ -n "$RECV_LOG" ] && sed 's/^/recv: /' "$RECV_LOG" >&2
		fail "pxfer send $* exited $SEND_RC"
	fi
}

# target - the receiver's address for a send ("127.0.0.1:PORT")
target()
{
	echo "127.0.0.1:$RECV_PORT"
}

# expect_rc WANT GOT WHAT - fail unless exit status GOT is WANT
expect_rc()
{
	[ "$2" -eq "$1" ] || fail "$3: exit status $2, expected $1"
}

# expect_grep REGEX FILE WHAT - fail unless FILE has a line matching REGEX
# (case-insensitive, extended regular expression)
expect_grep()
{
	if ! grep -qiE -- "$1" "$2"; then
		echo "--- $2:" >&2
		cat "$2" >&2
		fail "$3: no message matching '$1'"
	fi
}

# check_grep REGEX FILE WHAT - like expect_grep, but with fail_later
check_grep()
{
	if ! grep -qiE -- "$1" "$2"; then
		fail_later "$3: no message matching '$1' in: $(tr '\n' '|' <"$2")"
		return 1
	fi
}

# check_num WHAT GOT OP WANT - fail_later unless test's GOT OP WANT holds
# (OP: -eq, -lt, -gt...)
check_num()
{
	if test "$2" "$3" "$4"; then
		ok "$1: $2"
	else
		fail_later "$1 is $2, expected $3 $4"
	fi
}

# _listing DIR [--no-root] - one line per entry: path, type, mode, mtime,
# size (not for directories, whose size depends on the file system) and
# link target. Symlinks are described, never followed.
_listing()
{
	local min=0

	[ "${2:-}" = --no-root ] && min=1
	# the receiver's own state (partial files) is not part of the tree
	(cd "$1" && find . -mindepth "$min" -path ./.pxfer -prune -o \
		\( -type d -printf '%P\t%y\t%m\t%T@\t-\t\n' \) -o \
		-printf '%P\t%y\t%m\t%T@\t%s\t%l\n') | sort
}

# tree_equal [--no-root] SRC DST - fail unless DST is a copy of SRC: the same
# names, types, permission modes, mtimes (of symlinks too), sizes and link
# targets, and every regular file equal byte for byte. With --no-root the
# top directories themselves are not compared (only what they hold).
tree_equal()
{
	local opt='' src dst f n=0

	if [ "$1" = --no-root ]; then
		opt=--no-root
		shift
	fi
	src=$1 dst=$2
	[ -d "$dst" ] || fail "tree_equal: '$dst' is not a directory"
	_listing "$src" $opt >"$T/listing.src"
	_listing "$dst" $opt >"$T/listing.dst"
	if ! cmp -s "$T/listing.src" "$T/listing.dst"; then
		echo "--- differences (< $src, > $dst):" >&2
		diff "$T/listing.src" "$T/listing.dst" | head -n 40 >&2
		fail "'$dst' differs from '$src' in names, types, modes, mtimes or sizes"
	fi
	while IFS= read -r -d '' f; do
		cmp -s -- "$src/$f" "$dst/$f" || fail "'$dst/$f' differs from '$src/$f'"
		n=$((n + 1))
	done < <(cd "$src" && find . -type f -printf '%P\0')
	ok "'$dst' equals '$src' ($(wc -l <"$T/listing.src") entries, $n files compared)"
}

# file_equal SRC DST - content, mode and mtime of one file
file_equal()
{
	cmp -s -- "$1" "$2" || fail "'$2' differs from '$1'"
	[ "$(stat -c '%a %y' -- "$1")" = "$(stat -c '%a %y' -- "$2")" ] ||
		fail "'$2' mode or mtime differ: $(stat -c '%a %y' -- "$2") instead of $(stat -c '%a %y' -- "$1")"
}

# no_part_files DIR - fail if a temporary file of the receiver is in DIR
no_part_files()
{
	local left

	left=$(find "$1" -name '.pxfer-*.part' | head -n 5)
	[ -z "$left" ] || fail "temporary files left in '$1': $left"
}

# finals DIR - entries of DIR that are not temporary files or the
# receiver's state (partial files beneath DIR/.pxfer)
finals()
{
	(cd "$1" && find . -mindepth 1 -path ./.pxfer -prune -o \
		! -name '.pxfer-*.part' -printf '%P\n')
}

# partials DIR - how many partial files the receiver keeps beneath DIR
partials()
{
	find "$1/.pxfer/partial" -name '*.part' 2>/dev/null | wc -l
}

# The receiver's journal of a partial file (docs/architecture.md, "Partial
# files"): a header of 48 bytes and the path (40 before it, among them the
# path's length, a big-endian u16 at offset 6, and an 8-byte check after
# it), then records of 32 bytes, each starting with the offset of its
# range (a big-endian u64).

# journal DIR - a journal in DIR's partial store (the first one found)
journal()
{
	find "$1/.pxfer/partial" -name '*.jnl' 2>/dev/null | head -n 1
}

# journal_hdr FILE - the length of journal FILE's header
journal_hdr()
{
	local plen

	plen=$(od -An -tu2 --endian=big -j 6 -N 2 "$1" | tr -d ' ')
	echo $((48 + ${plen:-0}))
}

# journal_records FILE - how many whole records journal FILE holds
journal_records()
{
	local n

	n=$(($(stat -c %s "$1") - $(journal_hdr "$1")))
	echo $((n > 0 ? n / 32 : 0))
}

# journal_off FILE N - the offset of the range of record N (from 0) of
# journal FILE
journal_off()
{
	od -An -tu8 --endian=big -j $(($(journal_hdr "$1") + 32 * $2)) -N 8 "$1" |
		tr -d ' '
}

# has_records DIR N - whether a journal in DIR's partial store holds at
# least N records (for wait_for)
has_records()
{
	local j

	j=$(journal "$1")
	[ -n "$j" ] && [ -s "$j" ] && [ "$(journal_records "$j")" -ge "$2" ]
}

# bg_send ARGS... - pxfer send in the background; SEND_PID, SEND_OUT,
# SEND_ERR
bg_send()
{
	_nsend=$((_nsend + 1))
	SEND_OUT=$T/send.$_nsend.out
	SEND_ERR=$T/send.$_nsend.err
	"$PXFER" send "$@" >"$SEND_OUT" 2>"$SEND_ERR" &
	SEND_PID=$!
	track "$SEND_PID"
}

# J[KEY] - the numbers of pxfer send's --json summary, after send_stats
declare -A J

# send_stats [FILE] - read the --json summary in FILE (default $SEND_OUT)
# into J: exit_code, files, files_failed, files_same, files_changed,
# bytes_sent, bytes_resumed, bytes_skipped, sessions; and print them on a
# line. Fails the test if one is missing
# shellcheck disable=SC2120
send_stats()
{
	local f=${1:-$SEND_OUT} k v

	J=()
	for k in exit_code files files_failed files_same files_changed \
		bytes_sent bytes_resumed bytes_skipped sessions; do
		v=$(sed -n "s/.*\"$k\":\([0-9][0-9]*\).*/\1/p" "$f" 2>/dev/null)
		[ -n "$v" ] || fail "no \"$k\" in pxfer send's JSON summary: $(cat "$f" 2>/dev/null)"
		J[$k]=$v
	done
	echo "    exit ${J[exit_code]}: sent ${J[bytes_sent]}, resumed ${J[bytes_resumed]}, skipped ${J[bytes_skipped]} (${J[files_same]} files), ${J[files]} files, ${J[files_failed]} failed, ${J[files_changed]} changed, ${J[sessions]} session(s)"
}

# send_check_tree DIR - "the receiver still serves": a small tree (300,000
# bytes in a subdirectory and a short file) sent with -j 2 arrives intact
# as DIR/check
send_check_tree()
{
	local src=$T/check

	if [ ! -f "$src/hello" ]; then
		mkdir -p "$src/sub" || fail "mkdir"
		head -c 300000 /dev/urandom >"$src/sub/data" || fail "cannot write"
		echo hello >"$src/hello"
	fi
	send_ok -q -j 2 "$src" "$(target)"
	tree_equal "$src" "$1/check"
}

# wait_for SECONDS CMD... - run CMD every 0.05 s until it succeeds; 1 if it
# never does within SECONDS
wait_for()
{
	local limit=$1 i

	shift
	for ((i = 0; i < limit * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# step_until SECONDS PID CMD... - let PID run in steps of 20 ms, stopped
# (SIGSTOP) between them, until CMD succeeds; PID is then left stopped
# (SIGCONT or SIGKILL it). However fast the machine, PID gets only so far
# past the point CMD looks for. 1 if CMD never succeeds within SECONDS
# (PID runs on then) or PID is gone
step_until()
{
	local end=$((SECONDS + $1)) pid=$2

	shift 2
	while [ "$SECONDS" -lt "$end" ]; do
		kill -STOP "$pid" 2>/dev/null || return 1
		"$@" && return 0
		kill -CONT "$pid"
		sleep 0.02
	done
	return 1
}

# creep SECONDS PID CMD... - step_until in steps of 2 ms, for a sender
# that must not get far past the point CMD looks for (with a small ring
# on the receiver, --ring-mem 1M, and small chunks)
creep()
{
	local end=$((SECONDS + $1)) pid=$2

	shift 2
	kill -STOP "$pid" 2>/dev/null || return 1
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" && return 0
		kill -CONT "$pid" 2>/dev/null || return 1
		sleep 0.002
		kill -STOP "$pid" 2>/dev/null || return 1
	done
	return 1
}

# have_part DIR - whether a receiver temporary or partial file exists in DIR
have_part()
{
	[ -n "$(find "$1" \( -name '.pxfer-*.part' -o -path '*/.pxfer/partial/*.part' \) \
		-print -quit 2>/dev/null)" ]
}

# have_no_part DIR - whether no receiver temporary or partial file exists
# in DIR (for wait_for)
have_no_part()
{
	! have_part "$1"
}

# have_no_tmp DIR - whether no receiver temporary file exists in DIR (a
# partial kept for a later session may: for wait_for)
have_no_tmp()
{
	[ -z "$(find "$1" -path "$1/.pxfer" -prune -o -name '.pxfer-*.part' -print -quit 2>/dev/null)" ]
}

# The relay (test/helper/relay), a man in the middle between a sender
# and the receiver started last
RELAY_PID=
RELAY_PORT=
RELAY_LOG=
_nrelay=0

# start_relay MODE [ARGS...] - a relay to the receiver in the background,
# listening on a port it picks; RELAY_PID, RELAY_PORT, RELAY_LOG (what
# it says it did). (the tests read RELAY_PORT; nothing here does)
# shellcheck disable=SC2034
start_relay()
{
	local mode=$1 out

	shift
	_nrelay=$((_nrelay + 1))
	out=$T/relay.$_nrelay.out
	RELAY_LOG=$T/relay.$_nrelay.log
	"$HELPERS/relay" "$@" 0 127.0.0.1 "$RECV_PORT" "$mode" >"$out" 2>"$RELAY_LOG" &
	RELAY_PID=$!
	track "$RELAY_PID"
	wait_for 10 test -s "$out" || fail "the relay did not start: $(cat "$RELAY_LOG")"
	RELAY_PORT=$(head -n 1 "$out")
}

stop_relay()
{
	kill -TERM "$RELAY_PID" 2>/dev/null
	wait "$RELAY_PID" 2>/dev/null
}

# timer_start / timer_secs - how long a step took
timer_start()
{
	_t0=$(date +%s%N)
}

timer_secs()
{
	local ms=$((($(date +%s%N) - _t0) / 1000000))

	printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10))
}

# json_run ARGS... - psend --json ARGS...: its summary in J (send_stats),
# its output shown
json_run()
{
	psend --json "$@"
	send_stats
	sed 's/^/    send: /' "$SEND_ERR"
}

# json_run_ok ARGS... - json_run, and fail the test unless it exits 0
json_run_ok()
{
	json_run "$@"
	if [ "$SEND_RC" -ne 0 ]; then
		sed 's/^/recv: /' "$RECV_LOG" >&2
		fail "pxfer send $* exited $SEND_RC"
	fi
}

# recv_sessions - how many sessions the receiver (--json) logged as ended
recv_sessions()
{
	grep -c '"event":"session"' "$RECV_LOG"
}

# sessions_over N - whether the receiver has logged more than N sessions
# (for wait_for)
# shellcheck disable=SC2317
sessions_over()
{
	[ "$(recv_sessions)" -gt "$1" ]
}

# arrived DIR MIB - whether the largest data file in DIR's partial store
# has MIB MiB on disk (for step_until)
# shellcheck disable=SC2317
arrived()
{
	local b

	b=$(find "$1/.pxfer/partial" -name '*.part' -printf '%b\n' 2>/dev/null |
		sort -n | tail -n 1)
	[ -n "$b" ] && [ "$b" -ge $(($2 * 2048)) ]
}
