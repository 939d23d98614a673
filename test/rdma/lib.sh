# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# (variables set here are read by the suite that sources this file)
# shellcheck disable=SC2034
#
# Helpers for the RDMA suite (test/rdma/cases.sh), which runs inside the
# Soft-RoCE test VM (test/vm/run). Source it first:
#
#	. "$(dirname "$0")/lib.sh"
#
# Unlike test/lib/common.sh (whose checks end the test at the first
# failure), every check here reports one line, "ok - ..." or
# "not ok - ...", and the suite goes on; summary() prints the totals and
# gives the exit status. Every wait is bounded; every process started here
# is tracked by its pid and killed by kill_leftovers().

set -u

top=${PXFER_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${PXFER_BUILD:-$top/build/san}
PXFER=$build/pxfer
export LC_ALL=C
export PXFER_SECRET=rdma-suite-shared-secret-0123456789
# the receiver applies its umask to modes from the wire: the cases that
# compare modes expect the usual one
umask 022
# the sanitizers' options, and sanitizer_reports for the logs
# shellcheck source=../lib/sanitizer.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/sanitizer.sh"

SRV_DEV=${PXFER_RXE_SERVER_DEV:-rxe0}
SRV_IF=${PXFER_RXE_SERVER_IF:-veth0}
SRV_ADDR=${PXFER_RXE_SERVER_ADDR:-10.77.0.1}
CLI_DEV=${PXFER_RXE_CLIENT_DEV:-rxe1}
CLI_IF=${PXFER_RXE_CLIENT_IF:-veth1}
CLI_ADDR=${PXFER_RXE_CLIENT_ADDR:-10.77.0.2}
# the second rail: another veth pair, another pair of rxe devices
SRV_DEV2=${PXFER_RXE_SERVER_DEV2:-rxe2}
SRV_IF2=${PXFER_RXE_SERVER_IF2:-veth2}
SRV_ADDR2=${PXFER_RXE_SERVER_ADDR2:-10.78.0.1}
CLI_DEV2=${PXFER_RXE_CLIENT_DEV2:-rxe3}
CLI_IF2=${PXFER_RXE_CLIENT_IF2:-veth3}
CLI_ADDR2=${PXFER_RXE_CLIENT_ADDR2:-10.78.0.2}

VERBOSE=${VERBOSE:-0}
NPASS=0
NFAIL=0
FAILED=()

# ---- time ----------------------------------------------------------------------

# now_ms - milliseconds since the epoch
now_ms()
{
	local t=${EPOCHREALTIME/./}

	echo $((t / 1000))
}

# secs_since MS - seconds (one decimal) since now_ms printed MS
secs_since()
{
	local ms=$((${EPOCHREALTIME/./} / 1000 - $1))

	printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# nap SECONDS - sleep without a fork (every exec is slow under TCG)
{ exec {_NAP_FD}<> <(:); } 2>/dev/null || _NAP_FD=
nap()
{
	if [ -n "$_NAP_FD" ]; then
		read -rt "$1" -u "$_NAP_FD" _ || :
	else
		sleep "$1"
	fi
}

# ---- reporting -----------------------------------------------------------------

# diag - print stdin as "#   " comment lines
diag()
{
	sed 's/^/#   /'
}

# pass DESC - a check passed
pass()
{
	NPASS=$((NPASS + 1))
	echo "ok - $*"
}

# fail DESC [LOG...] - a check failed; the logs' last lines say why
fail()
{
	local desc=$1 f

	shift
	NFAIL=$((NFAIL + 1))
	FAILED+=("$desc")
	echo "not ok - $desc"
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "#   --- ${f##*/} (last 25 lines)"
		tail -n 25 "$f" | tr -d '\r' | diag
	done
}

# check COND-STATUS DESC [LOG...] - pass if COND-STATUS is 0, else fail
check()
{
	local st=$1

	shift
	if [ "$st" -eq 0 ]; then
		pass "$1"
		if [ "$VERBOSE" = 1 ]; then
			shift
			local f
			for f in "$@"; do [ -s "$f" ] && tr -d '\r' <"$f" | diag; done
		fi
	else
		fail "$@"
	fi
}

# note MSG - an informative line
note()
{
	echo "# $*"
}

# summary - the totals; exit status 0 only if every check passed
summary()
{
	local f

	echo "rdma_suite: $NPASS passed, $NFAIL failed"
	for f in "${FAILED[@]}"; do
		echo "#   failed: $f"
	done
	[ "$NFAIL" -eq 0 ] && [ "$NPASS" -gt 0 ]
}

# ---- processes -----------------------------------------------------------------

_PIDS=()

# track PID - kill PID when the case ends
track()
{
	_PIDS+=("$1")
}

alive()
{
	kill -0 "$1" 2>/dev/null
}

# wait_gone PID SECONDS - wait for PID to exit; 1 if it still runs
wait_gone()
{
	local end=$((${EPOCHREALTIME/./} / 1000 + $2 * 1000))

	while alive "$1"; do
		[ $((${EPOCHREALTIME/./} / 1000)) -lt "$end" ] || return 1
		nap 0.05
	done
	return 0
}

# wait_pid PID SECONDS - wait for PID, then WAIT_RC is its exit status
# and WAIT_SECS how long the wait took; WAIT_RC=124 (and PID is killed)
# if it did not exit in time
wait_pid()
{
	local t0

	t0=$(now_ms)
	if ! wait_gone "$1" "$2"; then
		WAIT_SECS=$(secs_since "$t0")
		kill -CONT "$1" 2>/dev/null
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		WAIT_RC=124
		return 0
	fi
	WAIT_SECS=$(secs_since "$t0")
	wait "$1" 2>/dev/null
	WAIT_RC=$?
	return 0
}

# kill_leftovers - end every tracked process (TERM, then KILL after 3 s)
kill_leftovers()
{
	local p

	for p in "${_PIDS[@]}"; do
		alive "$p" || continue
		kill -CONT "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${_PIDS[@]}"; do
		wait_gone "$p" 3 || kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	_PIDS=()
}

# wait_for SECONDS CMD... - run CMD every 0.05 s until it succeeds; 1 if
# it never does within SECONDS (no fork of its own: forks are slow here)
wait_for()
{
	local end=$((${EPOCHREALTIME/./} / 1000 + $1 * 1000))

	shift
	until "$@"; do
		[ $((${EPOCHREALTIME/./} / 1000)) -lt "$end" ] || return 1
		nap 0.05
	done
	return 0
}

# ---- receivers and senders -------------------------------------------------------

_PORT=${PXFER_RDMA_SUITE_PORT:-18100}
RECV_WRAP=()

# start_server NAME DIR [ARGS...] - "pxfer recv --port P --dir DIR -v
# ARGS..." in the background (RECV_WRAP, an array, goes in front and must
# exec pxfer); waits until it says it listens (20 s at most). Sets
# RECV_PID, RECV_PORT, RECV_LOG. 1 if it did not come up.
start_server()
{
	_PORT=$((_PORT + 1))
	RECV_PORT=$_PORT
	restart_server "$@"
}

# restart_server NAME DIR [ARGS...] - start_server on RECV_PORT again, the
# port of the receiver started last (one that was killed, say)
restart_server()
{
	local name=$1 dir=$2

	shift 2
	RECV_LOG=$LOGS/$name.recv.log
	"${RECV_WRAP[@]}" "$PXFER" recv --port "$RECV_PORT" --dir "$dir" -v "$@" \
		>"$RECV_LOG" 2>&1 &
	RECV_PID=$!
	track "$RECV_PID"
	wait_for 20 _recv_up && return 0
	echo "# the receiver did not start listening within 20 s" >>"$RECV_LOG"
	return 1
}

# start_recv NAME DIR [ARGS...] - start_server for one session (--once)
start_recv()
{
	local name=$1 dir=$2

	shift 2
	start_server "$name" "$dir" --once "$@"
}

_recv_up()
{
	grep -q 'receiving into' "$RECV_LOG" && return 0
	alive "$RECV_PID" || return 0
	return 1
}

# run_send NAME LIMIT ARGS... - "pxfer send ARGS..." in the foreground,
# bounded by LIMIT seconds; stdout and stderr in SEND_LOG, exit status in
# SEND_RC (124: timed out), duration in SEND_SECS
run_send()
{
	local name=$1 limit=$2 t0

	shift 2
	SEND_LOG=$LOGS/$name.send.log
	t0=$(now_ms)
	timeout -k 5 "$limit" "${SEND_WRAP[@]}" "$PXFER" send "$@" >"$SEND_LOG" 2>&1
	SEND_RC=$?
	SEND_SECS=$(secs_since "$t0")
	echo "# exit $SEND_RC after $SEND_SECS s" >>"$SEND_LOG"
}
SEND_WRAP=()

# bg_send NAME ARGS... - "pxfer send ARGS..." in the background; SEND_PID,
# SEND_LOG
bg_send()
{
	local name=$1

	shift
	SEND_LOG=$LOGS/$name.send.log
	"${SEND_WRAP[@]}" "$PXFER" send "$@" >"$SEND_LOG" 2>&1 &
	SEND_PID=$!
	track "$SEND_PID"
}

# rdma_send NAME LIMIT ARGS... - run_send over rdma from the client address
rdma_send()
{
	local name=$1 limit=$2

	shift 2
	run_send "$name" "$limit" --transport rdma --bind "$CLI_ADDR" "$@"
}

# json_num NAME FILE - the number NAME in the --json summary in FILE
# (empty if there is none)
json_num()
{
	sed -n "s/^{.*\"$1\":\([0-9]*\)[,}].*/\1/p" "$2" | tail -n 1
}

# ---- file trees ----------------------------------------------------------------

# listing DIR - one line per entry: path, type, mode, mtime (ns), size
# (not for directories) and link target; symlinks are not followed
listing()
{
	(cd "$1" && find . \( -type d -printf '%P\t%y\t%m\t%T@\t-\t\n' \) -o \
		-printf '%P\t%y\t%m\t%T@\t%s\t%l\n') | sort
}

# same_tree SRC DST LOG - 0 if DST is a copy of SRC: names, types, modes,
# mtimes, sizes, link targets and the bytes of every regular file;
# differences go to LOG
same_tree()
{
	local src=$1 dst=$2 log=$3

	[ -d "$dst" ] || { echo "'$dst' does not exist" >>"$log"; return 1; }
	listing "$src" >"$log.src"
	listing "$dst" >"$log.dst"
	if ! cmp -s "$log.src" "$log.dst"; then
		{
			echo "listings differ (< $src, > $dst):"
			diff "$log.src" "$log.dst" | head -n 30
		} >>"$log"
		return 1
	fi
	# one process compares every file's bytes; links compared above
	if ! diff -r --no-dereference -q "$src" "$dst" >>"$log" 2>&1; then
		echo "contents differ" >>"$log"
		return 1
	fi
	return 0
}

# same_file SRC DST LOG - bytes, mode and mtime of one file
same_file()
{
	local a b

	if ! cmp -- "$1" "$2" >>"$3" 2>&1; then
		return 1
	fi
	a=$(stat -c '%a %y' -- "$1")
	b=$(stat -c '%a %y' -- "$2")
	[ "$a" = "$b" ] && return 0
	echo "mode/mtime differ: '$2' has $b, '$1' has $a" >>"$3"
	return 1
}

# have_part DIR - whether a receiver temporary file exists below DIR
have_part()
{
	[ -n "$(find "$1" -name '.pxfer-*.part' -print -quit 2>/dev/null)" ]
}

# part_bytes DIR - bytes written so far into the fullest temporary or
# partial file below DIR (the receiver sizes them in advance: count
# allocated blocks)
part_bytes()
{
	local b

	b=$(find "$1" \( -name '.pxfer-*.part' -o -path '*/.pxfer/partial/*.part' \) \
		-printf '%b\n' 2>/dev/null | sort -n | tail -n 1)
	echo $((${b:-0} * 512))
}

# finals_intact SRCROOT DST LOG - every regular file under DST that has
# its final name (not a .pxfer-*.part) equals the file of the same
# relative path under SRCROOT (what has not arrived is ignored); their
# number in FINALS. One diff, not one cmp per file: forks are slow here.
finals_intact()
{
	local src=$1 dst=$2 log=$3

	FINALS=$(find "$dst" -type f ! -name '.pxfer-*.part' | wc -l)
	diff -rq --no-dereference "$src" "$dst" 2>&1 | grep -v '^Only in ' >"$log.diff"
	[ -s "$log.diff" ] || return 0
	{
		echo "files with their final name that differ from the source:"
		head -n 20 "$log.diff"
	} >>"$log"
	return 1
}

# ---- the rxe devices -------------------------------------------------------------

# wire_mark - remember how many bytes the server interface has received
wire_mark()
{
	read -r WIRE0 <"/sys/class/net/$SRV_IF/statistics/rx_bytes" || WIRE0=0
}

# wire_at_least BYTES - whether the server interface has received BYTES
# since wire_mark (read without a fork, so it can be polled fast)
wire_at_least()
{
	local v=0

	read -r v <"/sys/class/net/$SRV_IF/statistics/rx_bytes"
	WIRE_BYTES=$((v - WIRE0))
	[ "$WIRE_BYTES" -ge "$1" ]
}

# if_bytes IF tx|rx - the bytes interface IF has sent or received
if_bytes()
{
	local v=0

	read -r v 2>/dev/null <"/sys/class/net/$1/statistics/$2_bytes" || v=0
	echo "${v:-0}"
}

# hw_counter DEV NAME - a port counter of an rxe device (0 if absent)
hw_counter()
{
	local v=0

	read -r v 2>/dev/null <"/sys/class/infiniband/$1/ports/1/hw_counters/$2" || v=0
	echo "${v:-0}"
}

# rnr_counters - "NAME=VALUE ..." of the RNR counters of both devices
RNR_COUNTERS=(rcvd_rnr_err send_rnr_err retry_rnr_exceeded_err)
rnr_counters()
{
	local d c out=

	for d in "$SRV_DEV" "$CLI_DEV"; do
		for c in "${RNR_COUNTERS[@]}"; do
			[ -e "/sys/class/infiniband/$d/ports/1/hw_counters/$c" ] || continue
			out+="$d/$c=$(hw_counter "$d" "$c") "
		done
	done
	echo "${out% }"
}

# retry_counters - retransmission-related counters of both devices
retry_counters()
{
	local d c out=

	for d in "$SRV_DEV" "$CLI_DEV"; do
		for c in completer_retry_err retry_exceeded_err rcvd_seq_err duplicate_request out_of_seq_request; do
			[ -e "/sys/class/infiniband/$d/ports/1/hw_counters/$c" ] || continue
			out+="$d/$c=$(hw_counter "$d" "$c") "
		done
	done
	echo "${out% }"
}

# retries_total - retransmissions (completer_retry_err) of both devices
retries_total()
{
	echo $(($(hw_counter "$SRV_DEV" completer_retry_err) + $(hw_counter "$CLI_DEV" completer_retry_err)))
}

# rdma_cm_works [SRV CLI] - whether an rdma_cm connection from the client address
# (CLI, default the first rail's) to the server address (SRV) works,
# without pxfer (rping, 10 s at most)
_RPING_PORT=7340
rdma_cm_works()
{
	local sp rc sa=${1:-$SRV_ADDR} ca=${2:-$CLI_ADDR}

	command -v rping >/dev/null || return 0
	_RPING_PORT=$((_RPING_PORT + 1))
	rping -s -a "$sa" -p "$_RPING_PORT" -C 1 >/dev/null 2>&1 &
	sp=$!
	nap 0.5
	timeout 10 rping -c -a "$sa" -I "$ca" -p "$_RPING_PORT" -C 1 >/dev/null 2>&1
	rc=$?
	kill "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
	return $rc
}

# rxe_recreate [SDEV SIF CDEV CIF] - delete and add both rxe devices (of
# the first rail, or those named) again, and wait until
# their ports are active and hold the IPv4 GIDs
rxe_recreate()
{
	local d i n sd=${1:-$SRV_DEV} si=${2:-$SRV_IF} cd=${3:-$CLI_DEV} ci=${4:-$CLI_IF}

	rdma link delete "$sd"
	rdma link delete "$cd"
	rdma link add "$sd" type rxe netdev "$si" || return 1
	rdma link add "$cd" type rxe netdev "$ci" || return 1
	for ((n = 0; n < 100; n++)); do
		i=0
		for d in "$sd" "$cd"; do
			grep -q ACTIVE "/sys/class/infiniband/$d/ports/1/state" 2>/dev/null || i=1
			grep -qs ':ffff:' "/sys/class/infiniband/$d/ports/1/gids/"* || i=1
		done
		[ "$i" -eq 0 ] && { rdma link show; return 0; }
		nap 0.1
	done
	echo "the recreated rxe devices did not become active with their GIDs"
	return 1
}

# netem_stats IF - the tc -s statistics of the qdisc of IF, on one line
netem_stats()
{
	tc -s qdisc show dev "$1" 2>/dev/null | tr '\n' ' ' | sed 's/  */ /g'
}
