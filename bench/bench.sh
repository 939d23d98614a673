#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# pxfer benchmark harness: pxfer against iperf3, nc and rsync on loopback,
# and, in the integrity group (bench/integrity.sh), pxfer with each chunk
# protection against scp and rsync -e ssh, and in the resume group
# (bench/resume.sh), a transfer started again against the whole one and
# against rsync's second run, measured the same way in the same run.
#
#   bench/bench.sh [--quick] [--out FILE] [--reps N] [--only LIST] [--keep]
#                  [--baseline PXFER]
#
#   --quick      256 MiB file, 1,000 small files, 10,000 empty files in 10
#                directories, 1 repetition (sanity run)
#   --out FILE   also write the results as Markdown to FILE
#   --reps N     repetitions of every measurement (default 3; 1 with --quick)
#   --only LIST  run only the sections whose id matches one of the
#                comma-separated shell patterns, e.g. 'A/*' or 'B/pxfer*'
#   --keep       keep the work directory (data and logs)
#   --baseline PXFER  also run this other pxfer binary (an earlier build:
#                `make bench BASELINE=<rev>` builds one) at every -j, next
#                to the current one (first in odd repetitions, second in
#                even ones), and compare
##
# Environment:
#   PXFER_BUILD       directory holding the pxfer binary (default build/release)
#   PXFER_BENCH_DIR   parent of the work directory (default /tmp); when set,
#                     the generated data is kept there and reused next time
#   PXFER_BENCH_PORT  first TCP port to use (default 17400)
#   PXFER_BENCH_QUIET seconds to wait, before each run, for the machine to be
#                     idle (other processes using < 0.1 CPU); default 30, at
#                     most 8 times that in all; 0: no waiting. The CPU other
#                     processes used during each run is reported either way
#                     ("other CPU" column).
#   PXFER_BASELINE    the same as --baseline
#   PXFER_BENCH_WARM  MiB of memory to fault in and free just before each run
#                     (bench/warm_mem), so that the pages the run writes into
#                     are backed by the host; default: the run's bytes + 512
#                     MiB on a guest whose balloon reports free pages to the
#                     host (there, writing into memory freed seconds earlier
#                     costs several times as much system time), else 0
#   PXFER_BENCH_RETRIES  how many times a run that other processes disturbed
#                     (> 0.1 CPU) is repeated; default 2. The last attempt is
#                     kept, but the medians leave disturbed runs out when the
#                     section has undisturbed ones.
#
# Workloads (read from the page cache, written to the page cache):
#   A  one file of random data (2 GiB)
#   B  a tree of small files (10,000 x 4 KiB in 10 subdirectories)
#   C  a tree of empty files (100,000 in 100 subdirectories): the cost of
#      a file alone; C has no bytes, so its rate is files/s (its table
#      rows show '-' for MiB/s and CPU per GiB)
# and A and B split among N senders at once to one receiver (many-N, N =
# 1, 2, 4, 8): A as 8 pieces of an eighth, B as 8 directories of an eighth
# of the files, 8/N pieces to each sender; wall time until all are done.
#
# pxfer runs on each workload at -j 1, 2, 4 and 8 (W/pxfer-jN; the default
# -j too if it is none of these), and once with no -j at all
# (W/pxfer-default, "pxfer default (-jN)": the default as a user gets it,
# with N as `pxfer send --help` gives it), which the targets on the
# default use.
#
# Every run: the receiving side (server) is started under GNU time, then the
# sending side (client) under GNU time; wall time runs from the client's start
# until both sides have finished (for the rsync daemon, which keeps running,
# until the client has finished: rsync's client returns only after the
# receiver has written everything). CPU is user+sys of both sides including
# their children and threads; peak RSS is GNU time's %M per side (for a
# shell pipeline such as 'tar c | nc', the largest process of the pipeline).
# Each copy is checked (cmp; diff -r and the file count; for C, the sorted
# names, types and sizes of both trees and the count of empty files) and a
# run that fails or copies wrongly is not counted. Each measurement is
# repeated and the median shown. Every run writes into a new empty
# directory; before it, dirty data is synced and the harness waits for the
# machine to be idle (see PXFER_BENCH_QUIET). Copies of the trees are
# deleted only at the end, except C's on tmpfs (see the note in the run
# loop); on ext4 without a journal, let six minutes pass before the next
# run.
#
# Exit status: 0 when every run succeeded and every copy was correct, whether
# or not the targets were met; 1 when a run failed or a copy was wrong;
# 2 on a bad command line or a missing tool.
#
# Adding a section (e.g. RDMA): write a function peer_<tool>_<workload>
# following the ones below (it calls measure and a verify_* helper), add a line
# to SECTIONS, and if it needs comparing, a line to the ratio list in report.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
PXFER_BUILD=${PXFER_BUILD:-$top/build/release}
PXFER=$PXFER_BUILD/pxfer
FLOOR=$PXFER_BUILD/bench/tcp_floor
WARM=$PXFER_BUILD/bench/warm_mem
TIME=/usr/bin/time
TFMT='%e %U %S %M'
RUN_TIMEOUT=600         # seconds; a run that takes longer has failed

quick=0 out='' reps='' only='' keep=0 BASE=${PXFER_BASELINE:-}
usage() { sed -n '/^#   bench\/bench.sh \[/,/^##$/{/^##$/d;s/^# \{0,1\}//;p;}' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1;;
	--out) [ $# -ge 2 ] || { usage >&2; exit 2; }; out=$2; shift;;
	--out=*) out=${1#--out=};;
	--reps) [ $# -ge 2 ] || { usage >&2; exit 2; }; reps=$2; shift;;
	--reps=*) reps=${1#--reps=};;
	--only) [ $# -ge 2 ] || { usage >&2; exit 2; }; only=$2; shift;;
	--only=*) only=${1#--only=};;
	--keep) keep=1;;
	--baseline) [ $# -ge 2 ] || { usage >&2; exit 2; }; BASE=$2; shift;;
	--baseline=*) BASE=${1#--baseline=};;
	-h|--help) usage; exit 0;;
	*) echo "bench: unknown argument '$1'" >&2; usage >&2; exit 2;;
	esac
	shift
done

if [ $quick -eq 1 ]; then
	A_BYTES=$((256 << 20)) B_FILES=1000 C_FILES=10000 C_DIRS=10 reps=${reps:-1}
else
	A_BYTES=$((2 << 30)) B_FILES=10000 C_FILES=100000 C_DIRS=100 reps=${reps:-3}
fi
B_FILE_SIZE=4096
B_DIRS=10
B_BYTES=$((B_FILES * B_FILE_SIZE))
case $reps in ''|*[!0-9]*|0) echo "bench: --reps takes a positive number" >&2; exit 2;; esac
if [ -n "$out" ]; then
	case $out in /*) ;; *) out=$PWD/$out;; esac
	: >"$out" 2>/dev/null || { echo "bench: cannot write '$out'" >&2; exit 2; }
fi

# ---------------------------------------------------------------- tools
missing=()
[ -x "$PXFER" ] || { echo "bench: no pxfer binary at $PXFER (run 'make' first)" >&2; exit 2; }
[ -x "$FLOOR" ] || { echo "bench: no $FLOOR (run 'make' first)" >&2; exit 2; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "bench: no baseline binary at $BASE" >&2; exit 2; }
[ -x "$TIME" ] || missing+=("$TIME (Debian package: time)")
for t in iperf3:iperf3 nc:netcat-openbsd rsync:rsync ss:iproute2 timeout:coreutils \
	 cmp:diffutils diff:diffutils tar:tar split:coreutils awk:gawk/mawk pgrep:procps; do
	command -v "${t%%:*}" >/dev/null || missing+=("${t%%:*} (Debian package: ${t#*:})")
done
if [ ${#missing[@]} -gt 0 ]; then
	printf 'bench: missing: %s\n' "${missing[@]}" >&2
	exit 2
fi
if ! nc -h 2>&1 | grep -q OpenBSD; then
	echo "bench: nc is not OpenBSD netcat (Debian package: netcat-openbsd)" >&2
	exit 2
fi

# the default worker count, from the binary itself: the first number after
# "(default" in the text of --jobs, which may go on over the lines below it
# ("(default 4, 1-64)", "(default 2 here: one per CPU, 1 to 8)")
default_jobs() {
	"$PXFER" send --help 2>/dev/null | awk '
		/^[[:space:]]*(-j, )?--jobs N/ { t = $0; s = 1; next }
		s && /^[[:space:]]+[^-[:space:]]/ { t = t " " $0; next }
		s { exit }
		END {
			if (match(t, /\(default[[:space:]]+[0-9]+/)) {
				t = substr(t, RSTART, RLENGTH)
				sub(/^\(default[[:space:]]+/, "", t)
				print t + 0
			}
		}'
}
PX_DEFAULT_J=$(default_jobs)
if [ -z "$PX_DEFAULT_J" ] || [ "$PX_DEFAULT_J" -lt 1 ]; then
	echo "bench: no default -j in '$PXFER send --help'; the default sections say -j?" >&2
	PX_DEFAULT_J='?'
fi
# the sweep, and the default if it is not one of its -j
PX_JOBS=(1 2 4 8)
case " ${PX_JOBS[*]} " in
*" $PX_DEFAULT_J "*) ;;
*) [ "$PX_DEFAULT_J" = '?' ] ||
	mapfile -t PX_JOBS < <(printf '%s\n' "${PX_JOBS[@]}" "$PX_DEFAULT_J" | sort -n);;
esac

# ---------------------------------------------------------------- work dir
if [ -n "${PXFER_BENCH_DIR:-}" ]; then
	mkdir -p "$PXFER_BENCH_DIR" || exit 2
	WORK=$(cd "$PXFER_BENCH_DIR" && pwd)/pxfer-bench
	mkdir -p "$WORK" || exit 2
	keep_data=1
else
	WORK=$(mktemp -d /tmp/pxfer-bench.XXXXXX) || exit 2
	keep_data=0
fi
DATA=$WORK/data-$A_BYTES-$B_FILES
COPIES=$WORK/dst        # every run writes into a new empty directory below
DST=''                  # the current run's directory
LOGS=$WORK/logs         # per run: server/client output and GNU time files
RESULTS=$WORK/results.tsv
rm -rf "$LOGS" "$COPIES"
mkdir -p "$LOGS" "$COPIES"
: >"$RESULTS"

# free page reporting: virtio-balloon feature bit 5 (VIRTIO_BALLOON_F_REPORTING)
balloon_reports() {
	local f
	for f in /sys/bus/virtio/drivers/virtio_balloon/*/features; do
		[ -r "$f" ] && [ "$(cut -c 6 "$f")" = 1 ] && return 0
	done
	return 1
}
if [ -z "${PXFER_BENCH_WARM:-}" ]; then
	balloon_reports && PXFER_BENCH_WARM=auto || PXFER_BENCH_WARM=0
fi
case $PXFER_BENCH_WARM in
auto|0) ;;
*[!0-9]*|'') echo "bench: PXFER_BENCH_WARM takes MiB or 0" >&2; exit 2;;
esac
[ "$PXFER_BENCH_WARM" = 0 ] || [ -x "$WARM" ] ||
	{ echo "bench: no $WARM (run 'make' first)" >&2; exit 2; }

SRV_PID='' DAEMON_PIDFILE=''
cleanup() {
	if [ -n "$SRV_PID" ] && kill -0 "$SRV_PID" 2>/dev/null; then
		[ -n "$DAEMON_PIDFILE" ] && [ -s "$DAEMON_PIDFILE" ] &&
			kill "$(cat "$DAEMON_PIDFILE")" 2>/dev/null
		kill "$SRV_PID" 2>/dev/null
		wait "$SRV_PID" 2>/dev/null
	fi
	rm -rf "$COPIES"
	if [ $keep -eq 1 ]; then
		echo "bench: work directory kept: $WORK"
	elif [ $keep_data -eq 1 ]; then
		rm -rf "$LOGS" "$RESULTS" "$WORK/rsyncd.conf" "$WORK/rsyncd.pid" \
			"$WORK/rsyncd.log" "$WORK/ssh" "$WORK/sshd.pid"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- helpers
calc() { awk "BEGIN { printf \"%${2:-.3f}\", ($1) }"; }
human_bytes() {
	awk -v b="$1" 'BEGIN {
		if (b >= 2^30 && b % 2^30 == 0) printf "%d GiB", b / 2^30
		else if (b >= 2^20 && b % 2^20 == 0) printf "%d MiB", b / 2^20
		else printf "%d bytes", b }'
}

PORT=${PXFER_BENCH_PORT:-17400}
next_port() {           # a fresh port per run, so no run meets another's TIME_WAIT
	PORT=$((PORT + 1))
	while [ -n "$(ss -Htan "sport = :$PORT" 2>/dev/null)" ]; do PORT=$((PORT + 1)); done
}

wait_listen() {         # $1 port, $2 pid that must stay alive
	local i
	for ((i = 0; i < 1000; i++)); do
		[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# machine-wide CPU, in clock ticks: sets CPU_BUSY and CPU_ALL (no fork)
cpu_sample() {
	local _c u n s i w q sq st
	read -r _c u n s i w q sq st _ </proc/stat
	CPU_BUSY=$((u + n + s + q + sq + st)) CPU_ALL=$((u + n + s + i + w + q + sq + st))
}
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
NCPU=$(nproc)
QUIET_MAX=${PXFER_BENCH_QUIET:-30}     # per run
QUIET_BUDGET=$((QUIET_MAX * 8))         # in all; then only a short look
RETRIES=${PXFER_BENCH_RETRIES:-2}
QUIET_LIMIT=0.1         # CPUs' worth of load from other processes
QUIET_WAITED=0
wait_quiet() {          # until the last half second was idle, or QUIET_MAX
	local b0 a0 load start=$SECONDS max=$QUIET_MAX
	[ "$QUIET_MAX" -gt 0 ] || return 0
	[ "$QUIET_WAITED" -lt "$QUIET_BUDGET" ] || max=1
	while :; do
		cpu_sample; b0=$CPU_BUSY a0=$CPU_ALL
		sleep 0.5
		cpu_sample
		load=$(calc "($CPU_BUSY - $b0) * $NCPU / ($CPU_ALL - $a0 + 0.001)" .2f)
		[ "$(calc "$load < $QUIET_LIMIT" d)" = 1 ] && break
		if [ $((SECONDS - start)) -ge "$max" ]; then
			echo "    (the machine is busy: other processes use $load CPUs; measuring anyway)"
			break
		fi
	done
	QUIET_WAITED=$((QUIET_WAITED + SECONDS - start))
}

time_line() { tail -n 1 "$1" 2>/dev/null; }   # GNU time may prefix a status line

# measure SERVER_CMD CLIENT_CMD [DAEMON_PIDFILE]
# Runs the server in the background and the client in the foreground, both
# under GNU time (sh -c, so commands may be pipelines). Sets M_WALL, M_SRV and
# M_CLI ("elapsed user sys maxrss_kib"); returns nonzero when either side
# failed. With DAEMON_PIDFILE the server is a daemon that does not exit by
# itself: once the client is done and the daemon has reaped its connection
# processes (so their CPU is counted), it is sent SIGTERM.
measure() {
	local srv=$1 cli=$2 pidf=${3:-} t0 t1 crc src=0 dpid i b0
	M_WALL='' M_SRV='' M_CLI='' M_BUSY=''
	rm -f "$RUN.srv.time" "$RUN.cli.time"
	timeout -k 5 $RUN_TIMEOUT "$TIME" -f "$TFMT" -o "$RUN.srv.time" sh -c "$srv" \
		</dev/null >"$RUN.srv.log" 2>&1 &
	SRV_PID=$! DAEMON_PIDFILE=$pidf
	if ! wait_listen "$PORT" "$SRV_PID"; then
		echo "server did not start listening on port $PORT" >>"$RUN.srv.log"
		kill "$SRV_PID" 2>/dev/null; wait "$SRV_PID" 2>/dev/null; SRV_PID=
		return 1
	fi
	cpu_sample; b0=$CPU_BUSY
	t0=$EPOCHREALTIME
	timeout -k 5 $RUN_TIMEOUT "$TIME" -f "$TFMT" -o "$RUN.cli.time" sh -c "$cli" \
		</dev/null >"$RUN.cli.log" 2>&1
	crc=$?
	if [ -n "$pidf" ]; then
		t1=$EPOCHREALTIME
		cpu_sample
		dpid=$(cat "$pidf" 2>/dev/null)
		for ((i = 0; i < 1000; i++)); do
			[ -z "$dpid" ] || [ -z "$(pgrep -P "$dpid")" ] && break
			sleep 0.01
		done
		[ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null
		wait "$SRV_PID" 2>/dev/null
	else
		if [ $crc -ne 0 ]; then
			kill "$SRV_PID" 2>/dev/null
		fi
		wait "$SRV_PID"
		src=$?
		t1=$EPOCHREALTIME
		cpu_sample
	fi
	SRV_PID='' DAEMON_PIDFILE=''
	[ $crc -eq 0 ] || { echo "client exit status $crc" >>"$RUN.cli.log"; return 1; }
	[ $src -eq 0 ] || { echo "server exit status $src" >>"$RUN.srv.log"; return 1; }
	M_WALL=$(calc "$t1 - $t0" .4f)
	M_BUSY=$(calc "($CPU_BUSY - $b0) / $HZ" .2f)     # all CPU used on the machine
	M_SRV=$(time_line "$RUN.srv.time")
	M_CLI=$(time_line "$RUN.cli.time")
	[ -n "$M_SRV" ] && [ -n "$M_CLI" ]
}

verify_file() {         # $1 source file, $2 copy
	cmp -s "$1" "$2" || { echo "copy differs: $2" >>"$RUN.cli.log"; return 1; }
}
verify_tree() {         # $1 source tree, $2 copy
	local n
	diff -r "$1" "$2" >>"$RUN.cli.log" 2>&1 ||
		{ echo "copy differs: $2" >>"$RUN.cli.log"; return 1; }
	n=$(find "$2" -type f | wc -l)
	[ "$n" -eq "$B_FILES" ] ||
		{ echo "copy has $n files, not $B_FILES" >>"$RUN.cli.log"; return 1; }
}
# C's tree of empty files: the same names and types on both sides, and
# C_FILES files, all empty (diff -r reads every pair: slow at 100,000)
empty_list() {          # $1 tree: one sorted line per entry below it
	find "$1" -mindepth 1 \( -type f -printf 'f %s %P\n' \) -o -printf '%y - %P\n' |
		LC_ALL=C sort
}
verify_empty() {        # $1 source tree, $2 copy
	local n
	{ empty_list "$1" >"$RUN.src.list" && empty_list "$2" >"$RUN.dst.list"; } 2>>"$RUN.cli.log" ||
		{ echo "cannot list $1 or $2" >>"$RUN.cli.log"; return 1; }
	if ! cmp -s "$RUN.src.list" "$RUN.dst.list"; then
		diff "$RUN.src.list" "$RUN.dst.list" | head -n 20 >>"$RUN.cli.log"
		echo "copy differs: $2" >>"$RUN.cli.log"
		return 1
	fi
	n=$(grep -c '^f 0 ' "$RUN.dst.list")
	[ "$n" -eq "$C_FILES" ] ||
		{ echo "copy has $n empty files, not $C_FILES" >>"$RUN.cli.log"; return 1; }
	rm -f "$RUN.src.list" "$RUN.dst.list"
}

# ---------------------------------------------------------------- peers
# one secret for both pxfer sides (the receiver would otherwise make one up)
PXFER_SECRET=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
export PXFER_SECRET
# Each peer function moves one workload from $DATA to $DST through $PORT on
# 127.0.0.1 with measure, then checks the copy. BYTES is the payload it moved.

peer_iperf3_A() {       # memory to memory: the ceiling of this link
	measure "exec iperf3 -s -1 -B 127.0.0.1 -p $PORT" \
		"exec iperf3 -c 127.0.0.1 -p $PORT -n $A_BYTES -J" || return 1
	# the client's JSON: what the server received, and iperf3's own rate
	local got
	# (its receiver count can fall short of what was sent: it stops counting
	# when the test ends, not when the socket is drained)
	got=$(awk '/"sum_sent"/ { s = 1 } s && /"bytes"/ { gsub(/[^0-9]/, ""); print; exit }' \
		"$RUN.cli.log")
	[ "$got" = "$A_BYTES" ] || { echo "iperf3 sent '$got' bytes" >>"$RUN.cli.log"; return 1; }
	awk '/"sum_received"/ { s = 1 }
	     s && /"bits_per_second"/ { sub(/.*:[[:space:]]*/, ""); sub(/,.*/, ""); print; exit }' \
		"$RUN.cli.log" >"$RUN.iperf3_bps"
}

# $1 jobs (default: no -j, the default as a user gets it), $2 path to
# send, $3 the binary (default $PXFER); the workers the sender used go to
# $RUN.workers (from its --json summary)
pxfer_pair() {
	local px=${3:-$PXFER} jobs="-j $1 "
	[ "$1" != default ] || jobs=''
	measure "exec '$px' recv --dir '$DST' --once --bind 127.0.0.1 --port $PORT --transport tcp -q" \
		"exec '$px' send $jobs--transport tcp -q --json '$2' 127.0.0.1:$PORT" || return 1
	sed -n 's/.*"workers":\([0-9]*\).*/\1/p' "$RUN.cli.log" >"$RUN.workers"
}
peer_pxfer_A() { pxfer_pair "$1" "$DATA/a.bin" && verify_file "$DATA/a.bin" "$DST/a.bin"; }

# N senders at once (default -j each) to one serving receiver, each with
# 8/N of the workload's pieces; the receiver is stopped once all are done
many_pair() {           # $1 senders, $2 directory of the 8 pieces
	local n=$1 k i paths cli='' pidf=$WORK/many.pid
	for ((k = 0; k < n; k++)); do
		paths=''
		for ((i = k; i < MANY_PIECES; i += n)); do paths+=" '$2/p$i'"; done
		cli+="'$PXFER' send --transport tcp -q$paths 127.0.0.1:$PORT & pids=\"\$pids \$!\"; "
	done
	# shellcheck disable=SC2016 # expanded by the client's shell
	cli+='rc=0; for p in $pids; do wait $p || rc=1; done; exit $rc'
	rm -f "$pidf"
	measure "echo \$\$ >'$pidf'; exec '$PXFER' recv --dir '$DST' --bind 127.0.0.1 --port $PORT --transport tcp -q --grace 0" \
		"$cli" "$pidf"
}
peer_many_A() { many_pair "$1" "$DATA/many-a" && verify_pieces "$DATA/many-a"; }
peer_many_B() { many_pair "$1" "$DATA/many-b" && verify_pieces "$DATA/many-b"; }
verify_pieces() {       # $1 directory of the pieces, each copied to $DST
	diff -r "$1" "$DST" >>"$RUN.cli.log" 2>&1 ||
		{ echo "copy differs: $DST" >>"$RUN.cli.log"; return 1; }
}
peer_pxfer_B() { pxfer_pair "$1" "$DATA/tree" && verify_tree "$DATA/tree" "$DST/tree"; }
peer_pxfer_C() { pxfer_pair "$1" "$DATA/tree-c" && verify_empty "$DATA/tree-c" "$DST/tree-c"; }
# the baseline (--baseline): the same runs with the earlier build
peer_base_A() { pxfer_pair "$1" "$DATA/a.bin" "$BASE" && verify_file "$DATA/a.bin" "$DST/a.bin"; }
peer_base_B() { pxfer_pair "$1" "$DATA/tree" "$BASE" && verify_tree "$DATA/tree" "$DST/tree"; }
peer_base_C() { pxfer_pair "$1" "$DATA/tree-c" "$BASE" && verify_empty "$DATA/tree-c" "$DST/tree-c"; }

peer_nc_A() {
	measure "exec nc -l 127.0.0.1 $PORT >'$DST/a.bin'" \
		"exec nc -N 127.0.0.1 $PORT <'$DATA/a.bin'" &&
		verify_file "$DATA/a.bin" "$DST/a.bin"
}
peer_nc_B() {
	measure "nc -l 127.0.0.1 $PORT | tar -x -C '$DST'" \
		"tar -c -C '$DATA' tree | nc -N 127.0.0.1 $PORT" &&
		verify_tree "$DATA/tree" "$DST/tree"
}
peer_nc_C() {
	measure "nc -l 127.0.0.1 $PORT | tar -x -C '$DST'" \
		"tar -c -C '$DATA' tree-c | nc -N 127.0.0.1 $PORT" &&
		verify_empty "$DATA/tree-c" "$DST/tree-c"
}

# A reference, not a competitor: the same copy on one machine, with no
# network, by cp (its read and write of every byte are what a receiver's
# write and a sender's read cost at least). measure needs a server, so a
# listening nc stands in and the client ends by connecting to it.
# the least any TCP copy into a file costs: sendfile -> recv + pwrite over
# two connections, no checksum and no protocol (bench/tcp_floor.c)
peer_floor_A() {		# $1 'mac': tag each chunk as pxfer does by default
	measure "exec '$FLOOR' recv 127.0.0.1 $PORT '$DST/a.bin' 2 ${1:-}" \
		"exec '$FLOOR' send 127.0.0.1 $PORT '$DATA/a.bin' 2 ${1:-}" &&
		verify_file "$DATA/a.bin" "$DST/a.bin"
}
peer_cp_A() {
	measure "exec nc -l 127.0.0.1 $PORT >/dev/null" \
		"cp '$DATA/a.bin' '$DST/a.bin' && exec nc -N 127.0.0.1 $PORT </dev/null" &&
		verify_file "$DATA/a.bin" "$DST/a.bin"
}
peer_cp_B() {
	measure "exec nc -l 127.0.0.1 $PORT >/dev/null" \
		"cp -a '$DATA/tree' '$DST/tree' && exec nc -N 127.0.0.1 $PORT </dev/null" &&
		verify_tree "$DATA/tree" "$DST/tree"
}

rsync_pair() {          # $1 path to push into the daemon's module
	local conf=$WORK/rsyncd.conf pidf=$WORK/rsyncd.pid
	cat >"$conf" <<-EOF
	pid file = $pidf
	log file = $WORK/rsyncd.log
	use chroot = no
	max connections = 0
	[bench]
	    path = $DST
	    read only = no
	    uid = $(id -u)
	    gid = $(id -g)
	EOF
	rm -f "$pidf"
	measure "exec rsync --daemon --no-detach --config='$conf' --address=127.0.0.1 --port=$PORT" \
		"exec rsync -a '$1' rsync://127.0.0.1:$PORT/bench/" "$pidf"
}
peer_rsync_A() { rsync_pair "$DATA/a.bin" && verify_file "$DATA/a.bin" "$DST/a.bin"; }
peer_rsync_B() { rsync_pair "$DATA/tree" && verify_tree "$DATA/tree" "$DST/tree"; }
peer_rsync_C() { rsync_pair "$DATA/tree-c" && verify_empty "$DATA/tree-c" "$DST/tree-c"; }

# the integrity group: pxfer's chunk protections, scp and rsync -e ssh
# shellcheck source=integrity.sh
. "$top/bench/integrity.sh"
# the resume group: a transfer started again, against the whole one
# shellcheck source=resume.sh
. "$top/bench/resume.sh"

# ---------------------------------------------------------------- sections
# id;workload;label;function [args]
# pxfer at every -j of the sweep, then without -j (W/pxfer-default: the
# default as a user gets it; the -j of its label is what --help says)
px_sections() {         # $1 workload
	local j
	for j in "${PX_JOBS[@]}"; do
		SECTIONS+=("$1/pxfer-j$j;$1;pxfer -j$j;peer_pxfer_$1 $j")
		[ -z "$BASE" ] || SECTIONS+=("$1/base-j$j;$1;baseline -j$j;peer_base_$1 $j")
	done
	SECTIONS+=("$1/pxfer-default;$1;pxfer default (-j$PX_DEFAULT_J);peer_pxfer_$1 default")
}
SECTIONS=("A/iperf3;A;iperf3 (mem-to-mem);peer_iperf3_A")
px_sections A
SECTIONS+=("A/nc;A;nc;peer_nc_A" "A/rsync;A;rsync daemon;peer_rsync_A")
SECTIONS+=("A/floor;A;sendfile -> recv+pwrite, 2 conns (ref.);peer_floor_A")
SECTIONS+=("A/floor-mac;A;the same, each chunk tagged (GMAC) (ref.);peer_floor_A mac")
SECTIONS+=("A/cp;A;cp (local, ref.);peer_cp_A")
px_sections B
SECTIONS+=("B/nc;B;tar | nc;peer_nc_B" "B/rsync;B;rsync daemon;peer_rsync_B")
SECTIONS+=("B/cp;B;cp -a (local, ref.);peer_cp_B")
px_sections C
SECTIONS+=("C/nc;C;tar | nc;peer_nc_C" "C/rsync;C;rsync daemon;peer_rsync_C")
MANY_PIECES=8
MANY=(1 2 4 8)
for w in A B; do
	for n in "${MANY[@]}"; do
		SECTIONS+=("$w/many-$n;$w;$n sender$([ "$n" = 1 ] || echo s) at once;peer_many_$w $n")
	done
done
int_sections
res_sections

some_selected() {       # $1 pattern: does the run have such a section?
	local s
	for s in "${SECTIONS[@]}"; do
		# shellcheck disable=SC2053
		[[ ${s%%;*} == $1 ]] && return 0
	done
	return 1
}

if [ -n "$only" ]; then
	sel=()
	IFS=, read -r -a pats <<<"$only"
	for s in "${SECTIONS[@]}"; do
		for p in "${pats[@]}"; do
			# shellcheck disable=SC2053
			[[ ${s%%;*} == $p ]] && { sel+=("$s"); break; }
		done
	done
	SECTIONS=("${sel[@]}")
	[ ${#SECTIONS[@]} -gt 0 ] || { echo "bench: --only '$only' selects nothing" >&2; exit 2; }
fi
int_tools || exit 2
res_tools || exit 2

# ---------------------------------------------------------------- data
make_data() {
	if [ -f "$DATA/.complete" ] && [ -d "$DATA/many-b" ]; then
		echo "data: reusing $DATA"
		return 0
	fi
	rm -rf "$DATA"
	mkdir -p "$DATA/tree" || return 1
	echo "data: writing $(human_bytes $A_BYTES) of random data and $B_FILES files of $B_FILE_SIZE bytes"
	head -c "$A_BYTES" /dev/urandom >"$DATA/a.bin" || return 1
	local d n
	for ((d = 0; d < B_DIRS; d++)); do
		n=$((B_FILES / B_DIRS + (d < B_FILES % B_DIRS ? 1 : 0)))
		[ $n -gt 0 ] || continue
		mkdir -p "$DATA/tree/d$d" || return 1
		head -c $((n * B_FILE_SIZE)) /dev/urandom |
			split -b $B_FILE_SIZE -a 5 -d - "$DATA/tree/d$d/f" || return 1
	done
	# the same, in pieces for the senders at once: hard links to the file's
	# eighths would not do (one file), so the pieces are copies
	mkdir -p "$DATA/many-a" "$DATA/many-b" || return 1
	split -n $MANY_PIECES -a 1 -d "$DATA/a.bin" "$DATA/many-a/p" || return 1
	for ((d = 0; d < MANY_PIECES; d++)); do
		n=$((B_FILES / MANY_PIECES + (d < B_FILES % MANY_PIECES ? 1 : 0)))
		mkdir -p "$DATA/many-b/p$d" || return 1
		head -c $((n * B_FILE_SIZE)) /dev/urandom |
			split -b $B_FILE_SIZE -a 5 -d - "$DATA/many-b/p$d/f" || return 1
	done
	touch "$DATA/.complete"
}

# C: empty files, made by one process (a touch per file would take
# minutes): python3 where it runs, else bash's own redirections
make_data_c() {
	some_selected 'C/*' || return 0
	[ -f "$DATA/.complete-c" ] && return 0
	rm -rf "$DATA/tree-c"
	echo "data: writing $C_FILES empty files in $C_DIRS directories"
	if python3 -c '' 2>/dev/null; then
		python3 - "$DATA/tree-c" "$C_FILES" "$C_DIRS" <<-'EOF' || return 1
		import os, sys
		top, files, dirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
		os.mkdir(top)
		for d in range(dirs):
		    sub = os.path.join(top, "d%d" % d)
		    os.mkdir(sub)
		    for i in range(files // dirs + (d < files % dirs)):
		        os.close(os.open(os.path.join(sub, "f%05d" % i),
		                         os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
		EOF
	else
		local d i n f
		mkdir "$DATA/tree-c" || return 1
		for ((d = 0; d < C_DIRS; d++)); do
			n=$((C_FILES / C_DIRS + (d < C_FILES % C_DIRS ? 1 : 0)))
			mkdir "$DATA/tree-c/d$d" || return 1
			for ((i = 0; i < n; i++)); do
				printf -v f '%s/tree-c/d%d/f%05d' "$DATA" "$d" "$i"
				: >"$f" || return 1
			done
		done
	fi
	touch "$DATA/.complete-c"
}

machine_info() {
	local cpu
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "machine: $(nproc) CPUs, ${cpu:-unknown CPU}, $(awk '/MemTotal/ { printf "%.1f GiB RAM", $2 / 2^20 }' /proc/meminfo)"
	echo "kernel:  $(uname -sr)"
	local rev
	[[ $PXFER == "$top"/* ]] && rev=$(git -C "$top" rev-parse --short HEAD 2>/dev/null) &&
		{ git -C "$top" diff --quiet HEAD -- src include Makefile 2>/dev/null ||
		  rev="$rev + uncommitted changes"; }
	echo "pxfer:   $("$PXFER" --version 2>/dev/null | head -n 1), ${rev:+commit $rev, }$PXFER"
	[ -z "$BASE" ] || echo "baseline: $("$BASE" --version 2>/dev/null | head -n 1), $BASE"
	echo "peers:   $(iperf3 --version 2>/dev/null | head -n 1 | awk '{print $1, $2}'),"\
	     "$(rsync --version | head -n 1 | awk '{print $1, $3}'),"\
	     "OpenBSD nc $(dpkg-query -W -f='${Version}' netcat-openbsd 2>/dev/null)"
	case $PXFER_BENCH_WARM in
	0) ;;
	auto) echo "memory:  the balloon reports free pages to the host: a run's bytes + 512 MiB faulted in before each run";;
	*) echo "memory:  $PXFER_BENCH_WARM MiB faulted in before each run";;
	esac
	echo "sizes:   A = $(human_bytes $A_BYTES) file; B = $B_FILES files x $B_FILE_SIZE bytes" \
	     "in $B_DIRS directories; C = $C_FILES empty files in $C_DIRS directories;" \
	     "$reps repetition(s), median shown"
}

# ---------------------------------------------------------------- run
MACHINE=$(machine_info)
echo "$MACHINE"
avail=$(awk '/MemAvailable/ { print $2 * 1024 }' /proc/meminfo)
if [ "$(calc "$avail < 2.5 * ($A_BYTES + $B_BYTES)" d)" = 1 ]; then
	echo "warning: only $((avail >> 20)) MiB available; the data and its copy may not stay in the page cache"
fi
if ! make_data || ! make_data_c; then
	echo "bench: cannot write the data into $DATA" >&2
	exit 1
fi
int_prepare || exit 1
# read everything once so that every run reads from the page cache
dd if="$DATA/a.bin" of=/dev/null bs=1M status=none
trees=(tree many-a many-b)
[ ! -d "$DATA/tree-c" ] || trees+=(tree-c)
tar -c -C "$DATA" "${trees[@]}" | cat >/dev/null
if command -v fincore >/dev/null; then
	echo "cache:   $(fincore -n -o RES,SIZE "$DATA/a.bin" | awk '{print $1 " of " $2}') of the file in the page cache"
fi
echo

# one measurement of one section; appends to RESULTS; returns 1 on failure
# and 2 when it succeeded but other processes disturbed it
run_one() {             # $1 id, $2 workload, $3 label, $4 function [args], $5 rep, $6 attempt
	local id=$1 wl=$2 label=$3 fn=$4 rep=$5 try=$6 cu cs cm su ss sm ours other note='' dist=0
	DST=$COPIES/${id//\//_}.$rep.$try
	RUN=$LOGS/${id//\//_}.$rep.$try
	mkdir -p "$DST"
	sync                # no dirty data from an earlier run is written back during this one
	wait_quiet
	next_port
	case $wl in A) BYTES=$A_BYTES;; B) BYTES=$B_BYTES;; *) BYTES=0;; esac
	if [ "$PXFER_BENCH_WARM" = auto ]; then
		"$WARM" $(((BYTES >> 20) + 512)) >/dev/null || return 1
	elif [ "$PXFER_BENCH_WARM" != 0 ]; then
		"$WARM" "$PXFER_BENCH_WARM" >/dev/null || return 1
	fi
	# shellcheck disable=SC2086
	if ! $fn; then
		printf '%-3s %-20s rep %d/%d  FAILED (logs: %s.*)\n' "$wl" "$label" \
			"$rep" "$reps" "$RUN"
		tail -n 5 "$RUN.cli.log" "$RUN.srv.log" 2>/dev/null | sed 's/^/    | /'
		keep=1
		return 1
	fi
	read -r _ cu cs cm <<<"$M_CLI"
	read -r _ su ss sm <<<"$M_SRV"
	ours=$(calc "$cu + $cs + $su + $ss" .2f)
	# CPUs' worth of work other processes did during the run: the machine's
	# busy time minus both sides' (clock-tick granularity, hence the slack)
	other=$(calc "$M_BUSY > $ours ? ($M_BUSY - $ours) / $M_WALL : 0" .2f)
	if [ "$(calc "$M_BUSY - $ours > $QUIET_LIMIT * $M_WALL + 2 / $HZ" d)" = 1 ]; then
		note="  (disturbed)" dist=1
	fi
	if [ -n "$note" ] && [ "$try" -le "$RETRIES" ]; then
		printf '%-3s %-20s rep %d/%d  %8.3f s  other processes used %s CPUs: repeating\n' \
			"$wl" "$label" "$rep" "$reps" "$M_WALL" "$other"
		return 2
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$rep" \
		"$M_WALL" "$cu" "$cs" "$cm" "$su" "$ss" "$sm" "$BYTES" \
		"$(cat "$RUN.iperf3_bps" 2>/dev/null)" "$other" "$dist" >>"$RESULTS"
	local speed
	if [ "$BYTES" -gt 0 ]; then
		speed=$(printf '%9.1f MiB/s' "$(calc "$BYTES / 2^20 / $M_WALL" .1f)")
	else
		speed=$(printf '%7.0f files/s' "$(calc "$C_FILES / $M_WALL" .0f)")
	fi
	printf '%-3s %-20s rep %d/%d  %8.3f s  %s  CPU %5.2f s  other CPU %4.2f  ok%s\n' \
		"$wl" "$label" "$rep" "$reps" "$M_WALL" "$speed" "$ours" "$other" "$note"
}

# With a baseline, the two builds take turns going first at each -j: a
# run's place in the round matters (at -j1 the first large transfer after
# the small files' runs has been seen to take twice as long, whichever
# build it was), and it must not decide the comparison.
round_order() {		# $1 repetition: the sections in the order to run
	local i n=${#SECTIONS[@]}
	ROUND=("${SECTIONS[@]}")
	[ -n "$BASE" ] && [ $(($1 % 2)) -eq 0 ] || return 0
	for ((i = 0; i + 1 < n; i++)); do
		if [[ ${ROUND[i]} == ?/pxfer-j* && ${ROUND[i + 1]} == ?/base-j* ]]; then
			local t=${ROUND[i]}
			ROUND[i]=${ROUND[i + 1]}
			ROUND[i + 1]=$t
			i=$((i + 1))
		fi
	done
}

# the inodes the copies of C that stay until the end need (every attempt)
COPIES_FS=$(stat -f -c %T "$COPIES" 2>/dev/null)
if [ "$COPIES_FS" != tmpfs ]; then
	nc_sec=0
	for s in "${SECTIONS[@]}"; do [[ $s == C/* ]] && nc_sec=$((nc_sec + 1)); done
	need=$((nc_sec * reps * (RETRIES + 1) * (C_FILES + C_DIRS + 1)))
	free_inodes=$(df -P -i "$COPIES" 2>/dev/null | awk 'NR == 2 && $2 > 0 { print $4 }')
	if [ "$need" -gt 0 ] && [ -n "$free_inodes" ] && [ "$free_inodes" -lt "$need" ]; then
		echo "warning: the copies of C may need up to $need inodes, and $COPIES has $free_inodes free"
	fi
fi

failed=0
for ((rep = 1; rep <= reps; rep++)); do
	round_order "$rep"
	for s in "${ROUND[@]}"; do
		IFS=';' read -r id wl label fn <<<"$s"
		for ((try = 1; ; try++)); do
			run_one "$id" "$wl" "$label" "$fn" "$rep" "$try"
			rc=$?
			# Copies of the big file go at once; copies of the trees stay
			# until the end: on ext4 without a journal, creating files soon
			# after deleting thousands of others makes the inode allocator
			# skip every "recently deleted" inode one by one (for a minute,
			# six while their inode table block is dirty), which would make
			# the next tree run's receiver several times slower. On tmpfs,
			# which has no such allocator, C's copies go at once too: kept,
			# 100,000 inodes each would run it out of inodes.
			[ "$wl" = A ] && rm -rf "$DST"
			[ "$wl" = C ] && [ "$COPIES_FS" = tmpfs ] && rm -rf "$DST"
			[ $rc -eq 2 ] || break
		done
		[ "$rc" -eq 0 ] || failed=$((failed + 1))
	done
done
echo "(waited $QUIET_WAITED s in all for the machine to be idle)"

# ---------------------------------------------------------------- report
# per section, fields 1-12: medians of wall, cpu, cpu_cli, cpu_srv, rss_cli,
# rss_srv (KiB); runs used, bytes, median iperf3_bps, largest rss_cli and
# rss_srv (of all runs), median CPUs used by other processes; 13: how many of
# the runs used other processes disturbed; 14: runs that succeeded. Each
# median is taken on its own, over the runs that nothing disturbed if there
# are any, else over all that succeeded.
declare -A MED
while IFS=$'\t' read -r id rest; do
	MED[$id]=$rest
done < <(awk -F'\t' '
	function med(list,   a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		if (n == 0) return ""
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	# first pass: does the section have runs that nothing disturbed?
	NR == FNR { if ($13 == 0) clean[$1]++; next }
	{
		id = $1
		if (!(id in n)) order[++k] = id
		all[id]++
		if ($6 > mcr[id]) mcr[id] = $6
		if ($9 > msr[id]) msr[id] = $9
		# the medians use the undisturbed runs when there are any
		if ($13 != 0 && clean[id]) next
		n[id]++
		wall[id] = wall[id] " " $3
		cpu[id] = cpu[id] " " ($4 + $5 + $7 + $8)
		cc[id] = cc[id] " " ($4 + $5); sc[id] = sc[id] " " ($7 + $8)
		cr[id] = cr[id] " " $6; sr[id] = sr[id] " " $9
		bytes[id] = $10
		if ($11 != "") bps[id] = bps[id] " " $11
		oth[id] = oth[id] " " $12
		dis[id] += $13
	}
	END {
		for (i = 1; i <= k; i++) {
			id = order[i]
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", id, med(wall[id]),
				med(cpu[id]), med(cc[id]), med(sc[id]), med(cr[id]), med(sr[id]),
				n[id], bytes[id], med(bps[id]), mcr[id], msr[id], med(oth[id]), dis[id],
				all[id]
		}
	}' "$RESULTS" "$RESULTS")

field() {               # $1 section id, $2 field number (1 = wall ... see above)
	local v=${MED[$1]:-}
	[ -n "$v" ] || return 1
	cut -f "$2" <<<"$v"
}
mibps() { local w b; w=$(field "$1" 1) && b=$(field "$1" 8) && calc "$b / 2^20 / $w" .1f; }
# what compares: MiB/s, or files/s for C, whose files are empty
rate() {                # $1 section id
	local w
	case $1 in
	C/*) w=$(field "$1" 1) && calc "$C_FILES / $w" .0f;;
	*) mibps "$1";;
	esac
}
rate_unit() { case $1 in C/*) echo files/s;; *) echo MiB/s;; esac; }
cpu_per_gib() {         # $1 section: CPU s/GiB of both sides
	local c b
	c=$(field "$1" 2) && b=$(field "$1" 8) && [ "$b" -gt 0 ] && calc "$c / ($b / 2^30)" .2f
}

TABLE_TXT='' TABLE_MD='' DISTURBED='' DISCARDED=''
table() {
	local s id wl label fn w b c cc sc rc rs n o d a gs mb cg
	TABLE_TXT=$(printf '%-3s %-20s %9s %10s %9s %8s %13s %12s %12s %5s %6s' \
		wl peer "wall s" "MiB/s" "CPU s" "CPU/GiB" "snd/rcv /GiB" "RSS snd MiB" "RSS rcv MiB" runs other)
	TABLE_MD='| workload | peer | wall s | MiB/s | CPU s (snd+rcv) | CPU s/GiB | CPU s snd / rcv | CPU s/GiB snd / rcv | peak RSS snd MiB | peak RSS rcv MiB | runs used | other CPU |
|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|'
	for s in "${SECTIONS[@]}"; do
		IFS=';' read -r id wl label fn <<<"$s"
		if ! w=$(field "$id" 1); then
			TABLE_TXT+=$'\n'$(printf '%-3s %-20s %9s' "$wl" "$label" FAILED)
			TABLE_MD+=$'\n'"| $wl | ${label//|/\\|} | failed | | | | | | | | 0/$reps | |"
			continue
		fi
		c=$(field "$id" 2) cc=$(field "$id" 3) sc=$(field "$id" 4)
		rc=$(field "$id" 5) rs=$(field "$id" 6) n=$(field "$id" 7) b=$(field "$id" 8)
		o=$(field "$id" 12)
		d=$(field "$id" 13) a=$(field "$id" 14)
		if [ "$d" -ne 0 ]; then
			DISTURBED+=" $id"
		elif [ "$a" -ne "$n" ]; then
			DISCARDED+=" $id ($((a - n)))"
		fi
		if [ "$b" -gt 0 ]; then
			mb=$(mibps "$id") cg=$(calc "$c / ($b / 2^30)" .2f)
			gs=$(calc "$cc / ($b / 2^30)" .2f)/$(calc "$sc / ($b / 2^30)" .2f)
		else    # C: no bytes, no rate per byte (its files/s are in the ratios)
			mb=- cg=- gs=-
		fi
		TABLE_TXT+=$'\n'$(printf '%-3s %-20s %9.3f %10s %9.2f %8s %13s %12.1f %12.1f %5s %6.2f' \
			"$wl" "$label" "$w" "$mb" "$c" "$cg" "$gs" \
			"$(calc "$rc / 1024" .1f)" "$(calc "$rs / 1024" .1f)" "$n/$reps" "$o")
		TABLE_MD+=$'\n'"| $wl | ${label//|/\\|} | $(calc "$w" .3f) | $mb | $(calc "$c" .2f) | $cg | $(calc "$cc" .2f) / $(calc "$sc" .2f) | ${gs/\// / } | $(calc "$rc / 1024" .1f) | $(calc "$rs / 1024" .1f) | $n/$reps | $(calc "$o" .2f) |"
	done
}

best_pxfer() {          # $1 workload, [$2 pxfer or base]: the -j with the highest throughput
	local best='' bw=0 j w
	for j in "${PX_JOBS[@]}"; do
		w=$(rate "$1/${2:-pxfer}-j$j") || continue
		if [ "$(calc "$w > $bw" d)" = 1 ]; then best=$j bw=$w; fi
	done
	echo "$best"
}
worst_pxfer() {         # $1 workload: the -j from 1 to 8 with the lowest; '' if one is missing
	local worst='' ww='' j w
	for j in "${PX_JOBS[@]}"; do
		[ "$j" -le 8 ] || continue
		w=$(rate "$1/pxfer-j$j") || return 0
		if [ -z "$ww" ] || [ "$(calc "$w < $ww" d)" = 1 ]; then worst=$j ww=$w; fi
	done
	echo "$worst"
}

RATIOS_TXT='' TARGETS_TXT='' met=0 missed=0 unknown=0
selected() {            # $1 section id: is it part of this run?
	local s
	for s in "${SECTIONS[@]}"; do [ "${s%%;*}" = "$1" ] && return 0; done
	return 1
}
ratio_line() {          # $1 text, $2 section a, $3 section b: throughput a / b
	local a b
	selected "$2" && selected "$3" || return 0
	if a=$(rate "$2") && b=$(rate "$3"); then
		RATIOS_TXT+=$(printf '%-44s %6.2fx   (%s / %s %s)' "$1" "$(calc "$a / $b" .4f)" \
			"$a" "$b" "$(rate_unit "$2")")$'\n'
	else
		RATIOS_TXT+=$(printf '%-44s %6s' "$1" "n/a")$'\n'
	fi
}
target() {              # $1 text, $2 1 met / 0 missed / '' not measured, $3 detail
	case $2 in
	1) TARGETS_TXT+="MET     $1 ($3)"$'\n'; met=$((met + 1));;
	0) TARGETS_TXT+="MISSED  $1 ($3)"$'\n'; missed=$((missed + 1));;
	*) TARGETS_TXT+="n/a     $1 (not measured)"$'\n'; unknown=$((unknown + 1));;
	esac
}
ge() { local a b; a=$(rate "$1") && b=$(rate "$2") && calc "$a >= $3 * $b" d; }
gt() { local a b; a=$(rate "$1") && b=$(rate "$2") && calc "$a > $b" d; }
vs() {                  # $1 label a, $2 section a, $3 label b, $4 section b: "a X vs b Y unit"
	echo "$1 $(rate "$2" 2>/dev/null) vs $3 $(rate "$4" 2>/dev/null) $(rate_unit "$2")"
}

report() {
	local bA bB bC d=$PX_DEFAULT_J r t w v b k dl
	bA=$(best_pxfer A) bB=$(best_pxfer B) bC=$(best_pxfer C)
	dl="default (-j$d)"
	table
	ratio_line "A: pxfer -j$bA (best) / iperf3" "A/pxfer-j$bA" A/iperf3
	w=$(field A/iperf3 9 2>/dev/null)
	if [ -n "$w" ] && r=$(mibps "A/pxfer-j$bA"); then
		v=$(calc "$w / 8 / 2^20" .1f)
		RATIOS_TXT+=$(printf '%-44s %6.2fx   (%s / %s MiB/s)' \
			"A: pxfer -j$bA / iperf3's own receiver rate" "$(calc "$r / $v" .4f)" "$r" "$v")$'\n'
	fi
	ratio_line "A: pxfer -j$bA (best) / nc" "A/pxfer-j$bA" A/nc
	ratio_line "A: pxfer -j$bA (best) / rsync" "A/pxfer-j$bA" A/rsync
	ratio_line "A: pxfer -j$bA (best) / cp (reference)" "A/pxfer-j$bA" A/cp
	ratio_line "A: iperf3 / cp (reference)" A/iperf3 A/cp
	ratio_line "A: pxfer -j$bA (best) / sendfile -> recv+pwrite (reference)" "A/pxfer-j$bA" A/floor
	if r=$(cpu_per_gib "A/pxfer-j$bA" 2>/dev/null) && v=$(cpu_per_gib A/floor 2>/dev/null); then
		RATIOS_TXT+=$(printf '%-44s %6.2fx   (%s / %s CPU s/GiB)' \
			"A: CPU per GiB, pxfer -j$bA (best) / floor" "$(calc "$r / $v" .4f)" "$r" "$v")$'\n'
	fi
	ratio_line "A: sendfile -> recv+pwrite (reference) / iperf3" A/floor A/iperf3
	ratio_line "A: pxfer -j$bA (best) / floor with GMAC (reference)" "A/pxfer-j$bA" A/floor-mac
	if r=$(cpu_per_gib "A/pxfer-j$bA" 2>/dev/null) && v=$(cpu_per_gib A/floor-mac 2>/dev/null); then
		RATIOS_TXT+=$(printf '%-44s %6.2fx   (%s / %s CPU s/GiB)' \
			"A: CPU per GiB, pxfer -j$bA (best) / floor with GMAC" "$(calc "$r / $v" .4f)" "$r" "$v")$'\n'
	fi
	ratio_line "B: pxfer -j$bB (best) / tar | nc" "B/pxfer-j$bB" B/nc
	ratio_line "B: pxfer -j$bB (best) / rsync" "B/pxfer-j$bB" B/rsync
	ratio_line "B: pxfer -j$bB (best) / cp -a (reference)" "B/pxfer-j$bB" B/cp
	ratio_line "B: tar | nc / cp -a (reference)" B/nc B/cp
	ratio_line "C: pxfer -j$bC (best) / tar | nc" "C/pxfer-j$bC" C/nc
	ratio_line "C: pxfer -j$bC (best) / rsync" "C/pxfer-j$bC" C/rsync
	ratio_line "C: tar | nc / rsync" C/nc C/rsync
	# the sweep: the default, and the worst -j, against the best -j
	for w in A B C; do
		case $w in A) b=$bA;; B) b=$bB;; *) b=$bC;; esac
		ratio_line "$w: pxfer $dl / -j$b (best)" "$w/pxfer-default" "$w/pxfer-j$b"
		k=$(worst_pxfer $w)
		[ -z "$k" ] || [ "$k" = "$b" ] ||
			ratio_line "$w: pxfer -j$k (worst) / -j$b (best)" "$w/pxfer-j$k" "$w/pxfer-j$b"
	done
	# the default as a user gets it, against the other tools
	ratio_line "A: pxfer $dl / iperf3" A/pxfer-default A/iperf3
	ratio_line "A: pxfer $dl / nc" A/pxfer-default A/nc
	ratio_line "A: pxfer $dl / rsync" A/pxfer-default A/rsync
	ratio_line "A: pxfer $dl / sendfile -> recv+pwrite (ref.)" A/pxfer-default A/floor
	for w in B C; do
		ratio_line "$w: pxfer $dl / tar | nc" "$w/pxfer-default" "$w/nc"
		ratio_line "$w: pxfer $dl / rsync" "$w/pxfer-default" "$w/rsync"
	done
	# what the default sections ran with, when --help said otherwise
	v=$(cat "$LOGS"/?_pxfer-default.*.workers 2>/dev/null | sort -un | tr '\n' ' ')
	v=${v% }
	[ -z "$v" ] || [ "$v" = "$d" ] ||
		RATIOS_TXT+="note: pxfer default ran with $v worker(s) (its --json), not the -j$d of its --help"$'\n'
	# senders at once: the aggregate against the best single sender of
	# the run (any -j, or the one sender of the many-1 section)
	local n one oid best_one
	for w in A B; do
		[ $w = A ] && r=$bA || r=$bB
		one='' oid=''
		for oid in "$w/pxfer-j$r" "$w/many-1"; do
			v=$(mibps "$oid" 2>/dev/null) || continue
			if [ -z "$one" ] || [ "$(calc "$v > $one" d)" = 1 ]; then one=$v best_one=$oid; fi
		done
		for n in "${MANY[@]}"; do
			[ -n "$one" ] || continue
			ratio_line "$w: $n at once / best single sender" "$w/many-$n" "$best_one"
			[ "$n" -ge 4 ] || continue
			t=$(ge "$w/many-$n" "$best_one" 0.9)
			target "$w: $n senders at once >= 0.9x the best single sender" "$t" \
				"$(mibps "$w/many-$n" 2>/dev/null) vs $(mibps "$best_one" 2>/dev/null) MiB/s ($best_one)"
		done
		# the receiver's budget: 32 MiB of rings a session, 8 sessions by
		# default, and 8 MiB a session besides, over a base of 16 MiB
		if v=$(field "$w/many-8" 11 2>/dev/null); then
			target "$w: receiver peak RSS within its budget with 8 senders (<= 336 MiB)" \
				"$(calc "$v <= 336 * 1024" d)" "$(calc "$v / 1024" .1f) MiB, largest of all runs"
		else
			target "$w: receiver peak RSS within its budget with 8 senders" ""
		fi
	done

	if [ -n "$BASE" ]; then
		local bb
		for w in A B C; do
			for j in "${PX_JOBS[@]}"; do
				ratio_line "$w: pxfer -j$j / baseline -j$j" "$w/pxfer-j$j" "$w/base-j$j"
			done
			bb=$(best_pxfer $w base)
			case $w in A) r=$bA;; B) r=$bB;; *) r=$bC;; esac
			t=$(ge "$w/pxfer-j$r" "$w/base-j$bb" 0.95)
			target "$w: no loss against the baseline (best -j of each, >= 0.95x)" "$t" \
				"$(vs "pxfer -j$r" "$w/pxfer-j$r" "baseline -j$bb" "$w/base-j$bb")"
		done
	fi
	int_report
	res_report
	# the sweep: the default within 5% of the best -j, and no -j from 1 to
	# 8 far behind it
	for w in A B; do
		[ $w = A ] && b=$bA || b=$bB
		t=$(ge "$w/pxfer-default" "$w/pxfer-j$b" 0.95)
		target "$w: default within 5% of the best -j (>= 0.95x)" "$t" \
			"$(vs "$dl" "$w/pxfer-default" "-j$b" "$w/pxfer-j$b")"
		k=$(worst_pxfer $w) t=''
		[ -z "$k" ] || t=$(ge "$w/pxfer-j$k" "$w/pxfer-j$b" 0.8)
		target "$w: every -j from 1 to 8 >= 0.8x the best" "$t" \
			"$(vs "worst -j$k" "$w/pxfer-j$k" "best -j$b" "$w/pxfer-j$b")"
	done
	# against the floor that tags each chunk as pxfer's default does, so
	# that the ratio measures pxfer's own overhead and not the tag's
	t=$(ge "A/pxfer-j$bA" A/floor-mac 0.85)
	target "A: best -j >= 0.85x the floor with GMAC" "$t" \
		"$(vs "pxfer -j$bA" "A/pxfer-j$bA" floor A/floor-mac)"
	t='' r='' v=''
	if r=$(cpu_per_gib "A/pxfer-j$bA" 2>/dev/null) && v=$(cpu_per_gib A/floor-mac 2>/dev/null); then
		t=$(calc "$r <= 1.3 * $v" d)
	fi
	target "A: best -j CPU s/GiB <= 1.3x the floor's with GMAC" "$t" "pxfer -j$bA $r vs floor $v CPU s/GiB"
	t=$(ge "B/pxfer-j$bB" B/nc 2)
	target "B: best -j >= 2x tar | nc" "$t" "$(vs "pxfer -j$bB" "B/pxfer-j$bB" "tar | nc" B/nc)"
	t=$(ge "C/pxfer-j$bC" C/nc 1.5)
	target "C: best -j >= 1.5x tar | nc (files/s)" "$t" \
		"$(vs "pxfer -j$bC" "C/pxfer-j$bC" "tar | nc" C/nc)"
	t=$(ge "A/pxfer-j$bA" A/iperf3 0.9); target "A: pxfer >= 0.9x iperf3" "$t" \
		"$(vs "pxfer -j$bA" "A/pxfer-j$bA" iperf3 A/iperf3)"
	t=$(gt "A/pxfer-j$bA" A/nc); target "A: pxfer faster than nc" "$t" \
		"$(vs "pxfer -j$bA" "A/pxfer-j$bA" nc A/nc)"
	for w in A B; do
		[ $w = A ] && b=$bA || b=$bB
		t=$(gt "$w/pxfer-j$b" "$w/rsync"); target "$w: pxfer faster than rsync" "$t" \
			"$(vs "pxfer -j$b" "$w/pxfer-j$b" rsync "$w/rsync")"
	done
	# peak RSS as a user gets it: the largest seen in any run of the
	# default sections, any workload
	local side col worst wl_w
	for side in sender receiver; do
		[ $side = sender ] && col=10 || col=11
		worst='' wl_w=''
		for w in A B C; do
			v=$(field "$w/pxfer-default" $col 2>/dev/null) || continue
			if [ -z "$worst" ] || [ "$v" -gt "$worst" ]; then worst=$v wl_w=$w; fi
		done
		if [ -n "$worst" ]; then
			target "peak RSS <= 64 MiB, pxfer $side at $dl" \
				"$(calc "$worst <= 64 * 1024" d)" \
				"$(calc "$worst / 1024" .1f) MiB, largest of all runs, workload $wl_w"
		else
			target "peak RSS <= 64 MiB, pxfer $side at $dl" ""
		fi
	done
}

report
RSS_TXT=
for w in A B C; do
	id=$w/pxfer-default
	if field "$id" 1 >/dev/null; then
		RSS_TXT+="$w: pxfer default (-j$PX_DEFAULT_J) peak RSS: sender $(calc "$(field "$id" 5) / 1024" .1f) MiB, receiver $(calc "$(field "$id" 6) / 1024" .1f) MiB (median); largest $(calc "$(field "$id" 10) / 1024" .1f) / $(calc "$(field "$id" 11) / 1024" .1f) MiB"$'\n'
	fi
done

echo
echo "Results (median of $reps; MiB = 2^20 bytes; CPU = user+sys of sender + receiver;"
echo "other = CPUs' worth of load from other processes on the machine during the runs):"
echo "$TABLE_TXT"
[ -z "$INT_TXT" ] || printf '%s' "$INT_TXT"
NOISE_TXT=''
if [ -n "$DISCARDED" ]; then
	NOISE_TXT="runs = runs in the medians. Left out because other processes used more than $QUIET_LIMIT CPUs during them (other runs of the section were undisturbed):$DISCARDED"
fi
if [ -n "$DISTURBED" ]; then
	NOISE_TXT+="${NOISE_TXT:+$'\n'}warning: every run of these sections was disturbed by other processes (more than $QUIET_LIMIT CPUs), so their figures are not reliable:$DISTURBED"
fi
[ -z "$NOISE_TXT" ] || echo "$NOISE_TXT"
echo
echo "Ratios (throughput):"
printf '%s' "$RATIOS_TXT"
echo
printf '%s' "$RSS_TXT"
echo
echo "Targets: $met met, $missed missed$([ $unknown -eq 0 ] || echo ", $unknown not measured")"
printf '%s' "$TARGETS_TXT"
[ $failed -eq 0 ] || echo "$failed run(s) FAILED; they are not counted above"
[ -z "$MAC_TXT" ] || printf '\n%s\n' "$MAC_TXT"

if [ -n "$out" ]; then
	{
		echo "# pxfer benchmark results"
		echo
		echo '```'
		echo "$MACHINE"
		echo '```'
		echo
		echo "Median of $reps run(s); MiB = 2^20 bytes; CPU = user+sys of sender + receiver;"
		echo "snd = sending side (client), rcv = receiving side (server); other CPU = CPUs'"
		echo "worth of load from other processes on the machine during the runs."
		echo
		echo "$TABLE_MD"
		[ -z "$NOISE_TXT" ] || printf '\n%s\n' "$NOISE_TXT"
		[ -z "$INT_TXT" ] || printf '\n%s' "$INT_TXT"
		echo
		echo "## Ratios (throughput)"
		echo
		echo '```'
		printf '%s' "$RATIOS_TXT"
		echo
		printf '%s' "$RSS_TXT"
		echo '```'
		echo
		echo "## Targets: $met met, $missed missed"
		echo
		echo '```'
		printf '%s' "$TARGETS_TXT"
		echo '```'
		[ $failed -eq 0 ] || printf '\n%d run(s) failed and are not counted.\n' "$failed"
		[ -z "$MAC_TXT" ] || printf '\n## Chunk tags on this CPU (bench/mac_speed)\n\n%s\n' "$MAC_TXT"
	} >"$out"
	echo "written: $out"
fi

[ $failed -eq 0 ]
