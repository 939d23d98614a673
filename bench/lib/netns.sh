# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# What the benchmarks on nodes of one machine share (bench/scaleout.sh,
# bench/broadcast.sh): their command line, what they skip, and their
# work directory; the nodes, network namespaces joined by a bridge, each
# node's link shaped with tc tbf; pxfer receivers in them under GNU time;
# the repetitions of the runs, the figures of each, and the report.
# The caller sets BENCH, its name (bench/$BENCH.sh, the word its notes
# and errors begin with), and sources this at its start:
#
#	BENCH=broadcast
#	# shellcheck source=lib/netns.sh
#	. "$(dirname "$0")/lib/netns.sh"
#
# It sets top (the source tree), PXFER_BUILD (default build/release),
# PXFER, WARM (bench/warm_mem), TIME (GNU time) and TFMT (its format:
# wall, user and system seconds, peak RSS in KiB), RUN_TIMEOUT (seconds a
# command of a run may take), net (10.x.y, from the caller's pid: the
# nodes are in net.0/24), PORT (the receivers') and PIDS (what the EXIT
# trap kills: the caller adds what it starts in the background).
#
# The caller defines one ID (a run: its line appended to RESULTS), report
# (the table, from RESULTS, that sets RATE_OF, an associative array it
# declares, to each run's MiB/s) and judge (the lines below the table).
# For each run it sets RUN (the run's logs begin with it), RC (the run's
# exit status), and T0 and T1 (EPOCHREALTIME at its start and end).
#
#   bench_args ARGS...      the command line, as the caller's usage (the
#                           lines of its header from "#   bench/$BENCH.sh
#                           [" to "##") gives it: quick, out, reps, rate,
#                           only and keep; exits 2 on a bad one, 0 after
#                           --help
#   bench_check             exits 2 on a bad --reps (once the caller gave
#                           it its default) or --rate, an --out FILE that
#                           cannot be written (made absolute), or no
#                           PXFER or TIME; sets LINK_MIBS, the payload
#                           MiB/s a link carries at most
#   bench_skip TOOL...      exits 0 with a note when not root, a TOOL is
#                           missing or there are no network namespaces
#   bench_env               no launcher's variables (Slurm, PMIx, Open
#                           MPI) from the caller's environment; a
#                           PXFER_SECRET of the run's own
#   work_dir MIB            WORK, a new directory on tmpfs, and RESULTS,
#                           an empty file in it; exits 2 when /dev/shm
#                           has not more than MIB free
#   nodes_start PREFIX [ADDR]
#                           pfx (PREFIX and the caller's pid), that the
#                           nodes' names begin with; the bridge ${pfx}b
#                           (MTU 9000), ADDR/24 on it when given; the
#                           EXIT trap removes it and every node (their
#                           processes killed, and PIDS), and WORK unless
#                           --keep; exits 0 with a note where no bridge
#                           can be made
#   node NAME ADDR          a namespace NAME with a veth (NAMEn inside,
#                           NAMEh on the bridge, MTU 9000) at ADDR/24,
#                           shaped to rate; 1 when it cannot be made
#   shape NAME MBIT         node NAME's link at MBIT each way (0:
#                           unshaped); tbf shapes every packet, multicast
#                           too
#   wait_listen NS PROTO PORT PID
#                           until something listens on PORT in NS (t: TCP,
#                           u: UDP); 1 when PID ends first, or after 10 s
#   recv_start I DIR        a pxfer recv in ${pfx}rI writing into DIR, its
#                           GNU time file RUN.recvI.time, its output
#                           RUN.recvI.log; its pid in PIDS and RPIDS once
#                           it listens, else 1 and a line in RUN.err
#   stop_recvs              end the receivers in RPIDS, and empty it
#   stop_timed PID          end the command GNU time (PID) runs, and wait
#                           for both
#   wait_all PID...         wait for each PID; RC 0, or the last non-zero
#                           exit status
#   recv_list N             the first N receivers' addresses, with commas
#                           (--each, --to)
#   tree_sum DIR            "FILES BYTES" of the files below DIR
#   warm_mem_on             whether to fault memory in with WARM before
#                           each run: the balloon reports free pages to
#                           the host (as in bench/bench.sh)
#   picked ID               whether --only lets run ID run
#   run_reps ID...          START, then each repetition (REP) of one ID
#                           for every ID
#   cpu_busy                the machine's busy time so far, in ticks (HZ
#                           a second)
#   run_ok ID WHAT CHECK... whether run ID worked: its exit status (RC)
#                           0, then CHECK... (the copies' check); else 1,
#                           a line "ID: exit status RC" or "ID: WHAT" and
#                           the end of RUN.err on stderr, and FAILED set
#   figures SENDER B0 B1    "WALL SND SRSS RCV RRSS OTHER" of the run:
#                           seconds from T0 to T1, CPU seconds and peak
#                           RSS (MiB) of the senders (GNU time files
#                           RUN.SENDER.*) and of the receivers, and the
#                           CPUs busy beyond them (B0, B1: cpu_busy
#                           before and after)
#   cpu_of FILE...          "CPU MAXRSS COUNT" of GNU time files: user +
#                           system seconds, the largest RSS in MiB
#   stats ID COL            "MEDIAN MIN MAX COUNT" of RESULTS' column COL
#                           (1-based) in the good runs of ID (column 1
#                           the id, 3 whether it worked)
#   report_head             the report's lines on when, which commit, and
#                           the links
#   headroom                the line on a lone send's rate, when the
#                           report set RATE_OF[lone]
#   verdict OK TEXT         "MET     TEXT" when OK is 1, else "MISSED  TEXT"
#   bench_end               report, then judge in a code block, on stdout
#                           and in --out's FILE; exits with FAILED: 1 when
#                           a run failed or a copy was wrong
#   note MSG...             MSG, after the benchmark's name
#   calc EXPR [FMT]         EXPR by awk, printed with FMT (default .3f)

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PXFER_BUILD=${PXFER_BUILD:-$top/build/release}
PXFER=$PXFER_BUILD/pxfer
WARM=$PXFER_BUILD/bench/warm_mem
TIME=/usr/bin/time
TFMT='%e %U %S %M'
# shellcheck disable=SC2034  # the caller's
RUN_TIMEOUT=900
PORT=7471
net=10.$(($$ % 20 + 230)).$(($$ / 20 % 250))
NETS=() PIDS=() RPIDS=()
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
FAILED=0

# shellcheck disable=SC2034  # the caller's too
quick=0 out='' reps='' rate=400 only='' keep=0
usage() { sed -n '/^#   bench\/'"$BENCH"'.sh \[/,/^##$/{/^##$/d;s/^# \{0,1\}//;p;}' "$0"; }
note() { echo "$BENCH: $*"; }
calc() { awk "BEGIN { printf \"%${2:-.3f}\", ($1) }"; }

# shellcheck disable=SC2034  # the caller's
bench_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--quick) quick=1;;
		--out) [ $# -ge 2 ] || { usage >&2; exit 2; }; out=$2; shift;;
		--out=*) out=${1#--out=};;
		--reps) [ $# -ge 2 ] || { usage >&2; exit 2; }; reps=$2; shift;;
		--reps=*) reps=${1#--reps=};;
		--rate) [ $# -ge 2 ] || { usage >&2; exit 2; }; rate=$2; shift;;
		--rate=*) rate=${1#--rate=};;
		--only) [ $# -ge 2 ] || { usage >&2; exit 2; }; only=$2; shift;;
		--only=*) only=${1#--only=};;
		--keep) keep=1;;
		-h|--help) usage; exit 0;;
		*) echo "$BENCH: unknown argument '$1'" >&2; usage >&2; exit 2;;
		esac
		shift
	done
}

# shellcheck disable=SC2034  # the caller's
bench_check() {
	case $reps in ''|*[!0-9]*|0) echo "$BENCH: --reps takes a positive number" >&2; exit 2;; esac
	case $rate in ''|*[!0-9]*|0) echo "$BENCH: --rate takes Mbit/s" >&2; exit 2;; esac
	if [ -n "$out" ]; then
		case $out in /*) ;; *) out=$PWD/$out;; esac
		: >"$out" 2>/dev/null || { echo "$BENCH: cannot write '$out'" >&2; exit 2; }
	fi
	[ -x "$PXFER" ] || { echo "$BENCH: no pxfer binary at $PXFER (run 'make' first)" >&2; exit 2; }
	[ -x "$TIME" ] || { echo "$BENCH: no $TIME (Debian package: time)" >&2; exit 2; }
	LINK_MIBS=$(calc "$rate * 1000000 / 8 / 1048576" .2f)
}

bench_skip() {
	local t

	[ "$(id -u)" -eq 0 ] || { note "skipped: needs root for network namespaces"; exit 0; }
	for t in "$@"; do
		command -v "$t" >/dev/null || { note "skipped: $t is missing"; exit 0; }
	done
	ip netns list >/dev/null 2>&1 || { note "skipped: no network namespaces here"; exit 0; }
}

bench_env() {
	local v

	while IFS= read -r v; do
		case $v in SLURM_*|PMIX_*|OMPI_*) unset "$v";; esac
	done < <(compgen -e)
	PXFER_SECRET=$BENCH-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	export PXFER_SECRET
}

work_dir() {
	local free

	free=$(df -Pm /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
	[ "${free:-0}" -gt "$1" ] ||
		{ echo "$BENCH: /dev/shm has ${free:-0} MiB free, $1 needed" >&2; exit 2; }
	WORK=$(mktemp -d "/dev/shm/pxfer-$BENCH.XXXXXX") || exit 2
	RESULTS=$WORK/results.tsv
	: >"$RESULTS"
}

# shellcheck disable=SC2317  # run by the trap
cleanup() {
	local rc=$? p n

	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	for n in "${NETS[@]}"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
	ip link del "${pfx}b" 2>/dev/null
	if [ "$keep" -eq 1 ]; then
		note "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}

nodes_start() {
	pfx=$1$(($$ % 100000))
	shift
	trap cleanup EXIT
	trap 'exit 130' INT TERM HUP
	if ! ip link add "${pfx}b" type bridge 2>/dev/null; then
		note "skipped: cannot make a bridge here (no CAP_NET_ADMIN, or no bridge module)"
		exit 0
	fi
	[ $# -eq 0 ] || ip addr add "$1/24" dev "${pfx}b"
	ip link set "${pfx}b" mtu 9000 up
}

shape() {
	local n=$1

	if [ "$2" -eq 0 ]; then
		ip netns exec "$n" tc qdisc del dev "${n}n" root 2>/dev/null
		tc qdisc del dev "${n}h" root 2>/dev/null
		return 0
	fi
	ip netns exec "$n" tc qdisc replace dev "${n}n" root tbf rate "${2}mbit" \
		burst 1mb latency 50ms &&
		tc qdisc replace dev "${n}h" root tbf rate "${2}mbit" burst 1mb latency 50ms
}

node() {
	local n=$1

	ip netns add "$n" || return 1
	NETS+=("$n")
	ip link add "${n}h" mtu 9000 type veth peer name "${n}n" mtu 9000 &&
		ip link set "${n}n" netns "$n" &&
		ip link set "${n}h" master "${pfx}b" up &&
		ip -n "$n" addr add "$2/24" dev "${n}n" &&
		ip -n "$n" link set "${n}n" up &&
		ip -n "$n" link set lo up &&
		shape "$n" "$rate"
}

listening() {
	[ -n "$(ip netns exec "$1" ss -Hl"$2"n "sport = :$3" 2>/dev/null)" ]
}

wait_listen() {
	local i
	for ((i = 0; i < 200; i++)); do
		listening "$1" "$2" "$3" && return 0
		kill -0 "$4" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

recv_start() {
	local p
	ip netns exec "${pfx}r$1" "$TIME" -f "$TFMT" -o "$RUN.recv$1.time" \
		"$PXFER" recv --port $PORT --dir "$2" >"$RUN.recv$1.log" 2>&1 &
	p=$!
	PIDS+=("$p") RPIDS+=("$p")
	wait_listen "${pfx}r$1" t $PORT "$p" ||
		{ echo "receiver $1 did not listen" >>"$RUN.err"; return 1; }
}

stop_recvs() {
	local p
	for p in "${RPIDS[@]}"; do
		stop_timed "$p"
	done
	RPIDS=()
}

stop_timed() {
	local c
	c=$(pgrep -P "$1" | head -n 1)
	[ -n "$c" ] && kill -TERM "$c" 2>/dev/null
	wait "$1" 2>/dev/null
}

wait_all() {
	local p rc
	RC=0
	for p in "$@"; do
		wait "$p"
		rc=$?
		[ $rc -eq 0 ] || RC=$rc
	done
}

recv_list() {
	local i l=''
	for ((i = 0; i < $1; i++)); do
		l=$l${l:+,}$net.$((21 + i))
	done
	echo "$l"
}

tree_sum() { find "$1" -type f -printf '%s\n' | awk '{ n++; b += $1 } END { printf "%d %d\n", n, b }'; }

warm_mem_on() {
	local f
	for f in /sys/bus/virtio/drivers/virtio_balloon/*/features; do
		[ -r "$f" ] && [ "$(cut -c 6 "$f")" = 1 ] && [ -x "$WARM" ] && return 0
	done
	return 1
}

picked() {
	local p pats

	[ -n "$only" ] || return 0
	IFS=, read -ra pats <<<"$only"
	for p in "${pats[@]}"; do
		# shellcheck disable=SC2254
		case $1 in $p) return 0;; esac
	done
	return 1
}

run_reps() {
	local id

	START=$(date -u '+%Y-%m-%d %H:%M UTC')
	for ((REP = 1; REP <= reps; REP++)); do
		note "repetition $REP of $reps"
		for id in "$@"; do
			one "$id"
		done
	done
}

cpu_busy() {
	local _c u n s _i _w q sq st
	read -r _c u n s _i _w q sq st _ </proc/stat
	echo $((u + n + s + q + sq + st))
}

run_ok() {
	local id=$1 what=$2

	shift 2
	if [ "$RC" -ne 0 ]; then
		echo "    $id: exit status $RC" >&2
	elif ! "$@"; then
		echo "    $id: $what" >&2
	else
		return 0
	fi
	tail -n 5 "$RUN.err" | sed 's/^/      /' >&2
	FAILED=1
	return 1
}

figures() {
	local wall snd srss rcv rrss

	wall=$(calc "$T1 - $T0" .3f)
	read -r snd srss _ < <(cpu_of "$RUN.$1".*)
	read -r rcv rrss _ < <(cpu_of "$RUN".recv*.time)
	echo "$wall $snd $srss $rcv $rrss $(calc "(($3 - $2) / $HZ - $snd - $rcv) / $wall" .2f)"
}

cpu_of() {
	cat "$@" 2>/dev/null | awk '/^[0-9.]+ [0-9.]+ [0-9.]+ [0-9]+$/ { c += $2 + $3; if ($4 > m) m = $4; n++ }
		END { printf "%.2f %.1f %d\n", c, m / 1024, n }'
}

stats() {
	awk -F'\t' -v id="$1" -v col="$2" '$1 == id && $3 == 1 { print $col }' "$RESULTS" |
		sort -g | awk '{ v[++n] = $1 }
		END {
			if (!n) { print "- - - 0"; exit }
			m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
			print m, v[1], v[n], n
		}'
}

report_head() {
	echo "Run of $START, commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?'),"
	echo "each link $rate Mbit/s each way ($LINK_MIBS MiB/s of payload at most),"
}

headroom() {
	if [ -n "${RATE_OF[lone]:-}" ]; then
		echo "headroom: a lone send with its links unshaped moves ${RATE_OF[lone]} MiB/s, $(calc "${RATE_OF[lone]} / $LINK_MIBS" .1f)x the link rate"
	fi
}

verdict() {
	if [ "$1" = 1 ]; then printf 'MET     %s\n' "$2"; else printf 'MISSED  %s\n' "$2"; fi
}

bench_end() {
	note "results"
	{
		report
		echo
		echo '```'
		judge
		echo '```'
	} | tee "${out:-/dev/null}"
	[ -z "$out" ] || note "written to $out"
	exit "$FAILED"
}
