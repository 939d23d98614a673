#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of bench/rdma.sh: runs inside the Soft-RoCE test VM
# (test/vm/run) and compares pxfer --transport rdma with ib_write_bw
# between the VM's two rxe devices. Run bench/rdma.sh, not this.
#
#   rdma-guest.sh [--quick] [--reps N] [--jobs LIST] [--size MIB]
#                 [--max-size MIB] [--budget SEC] [--diag [LIST]]
#                 [--logdir DIR]
#
#   --quick        32 MiB, 1 repetition, no calibration (sanity run)
#   --reps N       repetitions of every measurement (default 3)
#   --jobs LIST    pxfer -j values, comma-separated (default 1,2,4); the
#                  same number of QPs for ib_write_bw (-q)
#   --size MIB     file size; default: chosen from a short calibration so
#                  that the measurements fit in --budget
#   --max-size MIB largest size the calibration may choose (default 256)
#   --budget SEC   seconds the measurements may take in all (default 420)
#   --diag [LIST]  instead of the comparison, diagnostic variants, each
#                  repetition measuring the baseline pair (ib_write_bw with
#                  1 MiB writes, then pxfer with --chunk-size 1M, otherwise
#                  at the defaults) again, then the variants in LIST
#                  (comma-separated; default: all but profile):
#                    t        ib_write_bw with a send queue only as deep as
#                             pxfer's ring (-t slots per worker)
#                    ib4m     ib_write_bw with 4 MiB writes
#                    c2m      pxfer --chunk-size 2M
#                    c4m      pxfer --chunk-size 4M
#                    r128     pxfer, receiver --ring-mem 128M (one session)
#                    c4m-r128 both
#                    spin0    PXFER_RDMA_SPIN=0 (no busy-polling)
#                    spin2e5  PXFER_RDMA_SPIN=200000
#                    sync     pxfer --io sync on both sides
#                    4k       pxfer with one 4 KiB file: the fixed cost of a
#                             transfer
#                    profile  after the repetitions, one run of each tool
#                             under perf (cpu-clock, whole guest)
#   --logdir DIR   where the logs of all runs are copied at the end (a
#                  directory the host can see, under the project directory)
#
# Measured, per -j / -q value, each repetition back to back (pxfer first in
# odd repetitions, ib_write_bw first in even ones) so that both see the
# same machine load:
#   pxfer        one file from /tmp (tmpfs: always in memory, and read once
#                beforehand) to a receiver --dir in /tmp; throughput is the
#                sender's --json "bytes" / "seconds" (the whole transfer:
#                connecting, authenticating, transferring, closing); every
#                copy is checked with cmp
#   ib_write_bw  the same bytes as pxfer moves, as RDMA WRITEs of pxfer's
#                chunk size at that -j (-s: 4 MiB at -j1, 2 MiB at -j2,
#                1 MiB from -j4, what its receiver picks with the default
#                --ring-mem; checked against what pxfer -v reports) on as
#                many RC QPs as pxfer has workers (-n is per QP); throughput
#                is its own
#                "BW average[MB/sec]" (MB = 2^20 bytes), which covers only
#                the posting of the writes, not the connection setup
#   protection   pxfer again with --encrypt and with --integrity checksum
#                (the default is the keyed tag), in the same repetitions:
#                the target is --encrypt at 0.8x the default or better
# The median of the repetitions is reported, the ratio of the medians (the
# figure the target applies to) and, less sensitive to load that changes
# between repetitions, the median of the per-repetition ratios.
#
# Also recorded per run: user+sys CPU of both processes (GNU time) and how
# busy the guest's CPUs were (/proc/stat, all vCPUs, including the rxe
# driver's softirq work, which no process is charged for).
#
# Exit status: 0 when every run worked and every copy was correct, whether
# or not the target was met; 1 when a run failed or a copy was wrong;
# 2 on a bad command line or outside the VM.
set -uo pipefail

PXFER=${PXFER:-}
quick=0 reps='' jobs='1,2,4' size='' max_size=256 budget=420 diag=0 logdir=''
ALL_VARIANTS=t,ib4m,c2m,c4m,r128,c4m-r128,spin0,spin2e5,sync,4k
variants=$ALL_VARIANTS
usage() { sed -n '8,41s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--reps) reps=${2:-}; shift ;;
	--jobs) jobs=${2:-}; shift ;;
	--size) size=${2:-}; shift ;;
	--max-size) max_size=${2:-}; shift ;;
	--budget) budget=${2:-}; shift ;;
	--diag)
		diag=1
		if [ $# -ge 2 ] && [[ $2 != -* ]]; then variants=$2; shift; fi ;;
	--logdir) logdir=${2:-}; shift ;;
	--pxfer) PXFER=${2:-}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "rdma-guest: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
num() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ]; }
if [ $quick -eq 1 ]; then
	reps=${reps:-1} size=${size:-32}
fi
reps=${reps:-3}
for v in "$reps" "$max_size" "$budget" ${size:+"$size"}; do
	num "$v" || { echo "rdma-guest: '$v' is not a positive number" >&2; exit 2; }
done
IFS=, read -r -a JOBS <<<"$jobs"
for j in "${JOBS[@]}"; do
	if ! num "$j" || [ "$j" -gt 64 ]; then
		echo "rdma-guest: bad -j value '$j'" >&2
		exit 2
	fi
done
IFS=, read -r -a VARS <<<"$variants"
for v in "${VARS[@]}"; do
	case ,$ALL_VARIANTS,profile, in
	*,"$v",*) ;;
	*) echo "rdma-guest: unknown variant '$v' (known: $ALL_VARIANTS,profile)" >&2; exit 2 ;;
	esac
done
has_var() { case ,$variants, in *,"$1",*) return 0 ;; esac; return 1; }
if [ -z "${PXFER_RXE_VM:-}" ]; then
	echo "rdma-guest: runs inside the test VM only; use bench/rdma.sh" >&2
	exit 2
fi
top=$(cd "$(dirname "$0")/.." && pwd)
PXFER=${PXFER:-$top/build/release/pxfer}
[ -x "$PXFER" ] || { echo "rdma-guest: no pxfer at $PXFER" >&2; exit 2; }
for t in ib_write_bw /usr/bin/time cmp timeout awk; do
	command -v "$t" >/dev/null || { echo "rdma-guest: missing $t" >&2; exit 2; }
done

SDEV=$PXFER_RXE_SERVER_DEV CDEV=$PXFER_RXE_CLIENT_DEV
SGID=$PXFER_RXE_SERVER_GID CGID=$PXFER_RXE_CLIENT_GID
SADDR=$PXFER_RXE_SERVER_ADDR CADDR=$PXFER_RXE_CLIENT_ADDR
MSG=1048576                     # 1 MiB: --diag's baseline chunk and message

# px_chunk J - the chunk pxfer's receiver picks for J workers by default:
# the largest up to 4 MiB that leaves 8 slots per worker of 32 MiB of
# ring memory, at least 1 MiB (src/recv.c, RING_DEPTH)
px_chunk() {
	local c=$((4 << 20))
	while [ $((c / 2)) -ge $((1 << 20)) ] && [ $(((32 << 20) / ($1 * c))) -lt 8 ]; do
		c=$((c / 2))
	done
	echo $c
}
# the chunk size pxfer must report for the run (bytes), or empty
EXPECT_CHUNK=
W=/tmp/pxfer-bench-rdma
rm -rf "$W"
mkdir -p "$W/logs" || exit 1
RES=$W/results.tsv
: >"$RES"
PXFER_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export PXFER_SECRET
NCPU=$(nproc)
PORT_PX=7600 PORT_IB=18600 RUNS=0 FAILED=0

calc() { awk "BEGIN { printf \"%${2:-.2f}\", ($1) }"; }

# whole-guest CPU: sets C_BUSY and C_ALL (clock ticks, all vCPUs)
cpu_sample() {
	local _c u n s i w q sq st
	read -r _c u n s i w q sq st _ </proc/stat
	C_BUSY=$((u + n + s + q + sq + st)) C_ALL=$((u + n + s + i + w + q + sq + st))
}

# wait until FILE has a line matching RE, while PID lives; 30 s at most
wait_line() {
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# wait until a TCP socket listens on PORT, while PID lives
wait_tcp() {
	local hex i
	hex=$(printf '%04X' "$1")
	for ((i = 0; i < 300; i++)); do
		grep -q "^ *[0-9]*: [0-9A-F]*:$hex [0-9A-F]*:0000 0A" /proc/net/tcp 2>/dev/null &&
			return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# Bytes the client's veth end sends (the data direction), sampled every
# 50 ms with no process started per sample, as "time bytes" lines.
CSTAT=/sys/class/net/$PXFER_RXE_CLIENT_IF/statistics/tx_bytes
mkfifo "$W/never" || exit 1
sampler() {
	local v sfd
	exec {sfd}<>"$W/never"
	while :; do
		read -r v <"$CSTAT"
		echo "$EPOCHREALTIME $v"
		read -rt 0.05 -u $sfd _
	done
}
# with PROFILE set (--diag), perf samples the whole guest into that file
# while the client runs
PROFILE='' PERFPID=''
sampler_start() {
	sampler >"$1" &
	SAMPLER=$!
	if [ -n "$PROFILE" ]; then
		perf record -q -a -e cpu-clock -F 499 -o "$PROFILE" >/dev/null 2>&1 &
		PERFPID=$!
		sleep 1         # perf is slow to start under emulation
	fi
}
sampler_stop() {
	kill $SAMPLER 2>/dev/null
	wait $SAMPLER 2>/dev/null
	if [ -n "$PERFPID" ]; then
		kill -INT $PERFPID 2>/dev/null
		wait $PERFPID 2>/dev/null
		PERFPID=''
	fi
}

# Data phase from the samples: from the last sample before the client had
# sent 64 KiB to the first one within 64 KiB of its final count (so the
# connection setup and teardown are left out, whatever the tool); prints
# BYTES / that time in MiB/s.
data_rate() {           # $1 samples, $2 payload bytes
	awk -v p="$2" '{ t[NR] = $1; b[NR] = $2 }
		END {
			if (NR < 3) exit
			for (i = 1; i <= NR; i++) if (b[i] - b[1] > 65536) { s = i - 1; break }
			for (i = 1; i <= NR; i++) if (b[NR] - b[i] <= 65536) { e = i; break }
			if (s >= 1 && e > s && t[e] > t[s]) printf "%.2f", p / 1048576 / (t[e] - t[s])
		}' "$1"
}

# The host's load, from bench/rdma.sh's monitor (see there): the
# offset of the host's clock from ours, then per run the CPUs QEMU got and
# the CPUs other host processes used.
HOSTLOG='' HOSTOFF=''
host_clock() {
	local i h
	[ -n "$logdir" ] && [ -s "$logdir/host-cpu.log" ] || return 0
	for ((i = 0; i < 10; i++)); do
		read -r h <"$logdir/host-now" 2>/dev/null && echo "$h $EPOCHREALTIME"
		sleep 0.1
	done | awk '$1 ~ /^[0-9]+\.[0-9]+$/ { d = $1 - $2; if (n++ == 0 || d > m) m = d }
		END { if (n) printf "%.3f", m }' >"$W/hostoff"
	HOSTOFF=$(cat "$W/hostoff")
	# host-now is rewritten every 0.25 s and read late: the offset
	# is the largest host-minus-guest difference seen, at most ~0.25 s low
	[ -n "$HOSTOFF" ] && HOSTLOG=$logdir/host-cpu.log
}
host_load() {           # $1 $2: guest times; prints "QEMU-CPUs other-CPUs" or "- -"
	local try out=''
	if [ -n "$HOSTLOG" ]; then
		for try in 1 2 3; do
			out=$(awk -v a="$(calc "$1 + $HOSTOFF" .3f)" -v b="$(calc "$2 + $HOSTOFF" .3f)" '
				/^#/ { for (i = 1; i <= NF; i++) if ($i ~ /^HZ=/) hz = substr($i, 4); next }
				$1 <= a { t0 = $1; b0 = $2; q0 = $3 }
				$1 >= b && !d { t1 = $1; b1 = $2; q1 = $3; d = 1 }
				END { if (d && t0 != "" && q0 > 0 && t1 > t0 && hz > 0) {
					o = ((b1 - b0) - (q1 - q0)) / hz / (t1 - t0); if (o < 0) o = 0
					printf "%.2f %.2f", (q1 - q0) / hz / (t1 - t0), o } }' "$HOSTLOG")
			[ -n "$out" ] && break
			sleep 0.5
		done
	fi
	echo "${out:-- -}"
}

cpu_of() {              # GNU time file -> user+sys
	tail -n 1 "$1" 2>/dev/null | awk '{ printf "%.2f", $2 + $3 }'
}

# fail_run WHAT LOG...: say what went wrong, with the error lines of the
# logs (or their ends); the caller decides whether the run counts as failed
fail_run() {
	local what=$1 f
	shift
	echo "  failed: $what"
	for f in "$@"; do
		[ -s "$f" ] || continue
		{ grep -i -E 'error|fail|refused|timed out|cannot|differ' "$f" || tail -n 4 "$f"; } |
			head -n 8 | sed "s|^|    ${f##*/}: |"
	done
	return 1
}

# px ID J FILE ENV SENDOPTS RECVOPTS: one pxfer transfer of FILE; sets
# R_MIBS (MiB/s from the sender's JSON), R_SECS, R_DATA (MiB/s in the data
# phase, from the veth counters), R_CPU, R_BUSY, R_NOTE
px() {
	local id=$1 j=$2 f=$3 envs=$4 sopts=$5 ropts=$6 log dst spid src crc b0 a0
	local bytes secs status expect limit wrs
	RUNS=$((RUNS + 1))
	PORT_PX=$((PORT_PX + 1))
	log=$W/logs/$RUNS.$id
	dst=$W/dst.$RUNS
	mkdir -p "$dst"
	expect=$(stat -c %s "$f")
	limit=$((60 + expect / 262144))             # a 0.25 MiB/s floor
	# shellcheck disable=SC2086  # envs and options are word lists
	env $envs /usr/bin/time -f '%e %U %S' -o "$log.recv.time" \
		timeout -k 5 $limit "$PXFER" recv -v --transport rdma --bind "$SADDR" \
		--port $PORT_PX --dir "$dst" --once $ropts >"$log.recv" 2>&1 &
	spid=$!
	if ! wait_line "$log.recv" 'receiving into' $spid; then
		kill $spid 2>/dev/null; wait $spid 2>/dev/null
		fail_run "$id: the receiver did not start" "$log.recv"
		return 1
	fi
	sampler_start "$log.wire"
	cpu_sample; b0=$C_BUSY a0=$C_ALL R_T0=$EPOCHREALTIME
	# shellcheck disable=SC2086
	env $envs /usr/bin/time -f '%e %U %S' -o "$log.send.time" \
		timeout -k 5 $limit "$PXFER" send -v --json -j "$j" --transport rdma \
		--bind "$CADDR" --port $PORT_PX $sopts "$f" "$SADDR" \
		>"$log.json" 2>"$log.send"
	crc=$?
	sampler_stop
	[ $crc -eq 0 ] || kill $spid 2>/dev/null
	wait $spid
	src=$?
	cpu_sample
	R_T1=$EPOCHREALTIME
	R_BUSY=$(calc "100 * ($C_BUSY - $b0) / ($C_ALL - $a0 + 0.001)" .0f)
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		rm -rf "$dst"
		fail_run "$id: sender exit $crc, receiver exit $src" \
			"$log.send" "$log.json" "$log.recv"
		return 1
	fi
	status=$(sed -n 's/.*"status":"\([a-z]*\)".*/\1/p' "$log.json")
	bytes=$(sed -n 's/.*"bytes":\([0-9]*\),.*/\1/p' "$log.json")
	secs=$(sed -n 's/.*"seconds":\([0-9.]*\),.*/\1/p' "$log.json")
	if [ "$status" != ok ] || [ "$bytes" != "$expect" ] || [ -z "$secs" ]; then
		rm -rf "$dst"
		fail_run "$id: JSON says status '$status', $bytes of $expect bytes" \
			"$log.json" "$log.send" "$log.recv"
		return 1
	fi
	if ! cmp -s "$f" "$dst/${f##*/}"; then
		rm -rf "$dst"
		fail_run "$id: the copy differs from the original" "$log.send" "$log.recv"
		return 1
	fi
	R_CHUNK=$(sed -n 's/.* \([0-9]*\) KiB chunks.*/\1/p' "$log.send" | head -n 1)
	if [ -n "$EXPECT_CHUNK" ] && [ "$((${R_CHUNK:-0} * 1024))" != "$EXPECT_CHUNK" ]; then
		rm -rf "$dst"
		fail_run "$id: pxfer used ${R_CHUNK:-?} KiB chunks, not the $((EXPECT_CHUNK >> 10)) KiB ib_write_bw writes" \
			"$log.send"
		return 1
	fi
	rm -rf "$dst"
	R_SECS=$secs
	R_DATA=$(data_rate "$log.wire" "$bytes")
	R_MIBS=$(calc "$bytes / 1048576 / $secs" .2f)
	R_CPU=$(calc "$(cpu_of "$log.send.time") + $(cpu_of "$log.recv.time")" .2f)
	# the most work requests one data QP had outstanding (pxfer -v)
	wrs=$(sed -n 's/.*at most \([0-9]*\) work requests outstanding.*/\1/p' "$log.send" |
		sort -n | tail -n 1)
	R_NOTE="copy ok${wrs:+, WRs out <= $wrs}"
	return 0
}

# ib ID Q ITERS SIZE EXTRA: ib_write_bw with Q QPs, ITERS writes of SIZE
# per QP; sets R_MIBS (its BW average, MB = 2^20), R_SECS (the client's
# wall time, setup included), R_DATA, R_CPU, R_BUSY, R_NOTE; returns 3 when
# ib_write_bw's figure cannot be right (see below)
ib() {
	local id=$1 q=$2 n=$3 s=$4 extra=$5 log spid src crc b0 a0 limit line
	RUNS=$((RUNS + 1))
	PORT_IB=$((PORT_IB + 1))
	log=$W/logs/$RUNS.$id
	limit=$((60 + q * n * s / 262144))
	# shellcheck disable=SC2086
	/usr/bin/time -f '%e %U %S' -o "$log.srv.time" \
		timeout -k 5 $limit ib_write_bw -d "$SDEV" -x "$SGID" -F -s "$s" -n "$n" \
		-q "$q" -p $PORT_IB $extra >"$log.srv" 2>&1 &
	spid=$!
	if ! wait_tcp $PORT_IB $spid; then
		kill $spid 2>/dev/null; wait $spid 2>/dev/null
		fail_run "$id: ib_write_bw server did not listen" "$log.srv"
		return 1
	fi
	sampler_start "$log.wire"
	cpu_sample; b0=$C_BUSY a0=$C_ALL R_T0=$EPOCHREALTIME
	# shellcheck disable=SC2086
	/usr/bin/time -f '%e %U %S' -o "$log.cli.time" \
		timeout -k 5 $limit ib_write_bw -d "$CDEV" -x "$CGID" -F -s "$s" -n "$n" \
		-q "$q" -p $PORT_IB $extra "$SADDR" >"$log.cli" 2>&1
	crc=$?
	sampler_stop
	[ $crc -eq 0 ] || kill $spid 2>/dev/null
	wait $spid
	src=$?
	cpu_sample
	R_T1=$EPOCHREALTIME
	R_BUSY=$(calc "100 * ($C_BUSY - $b0) / ($C_ALL - $a0 + 0.001)" .0f)
	# " 1048576    128    43.50    39.16    0.000039": bytes, iterations
	# (all QPs), peak and average MB/sec, Mpps
	line=$(awk -v s="$s" '$1 == s && NF >= 5 && $2 ~ /^[0-9]+$/ { l = $0 } END { print l }' "$log.cli")
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ -z "$line" ]; then
		fail_run "$id: ib_write_bw client exit $crc, server exit $src" "$log.cli" "$log.srv"
		return 1
	fi
	read -r _ iters _ R_MIBS _ <<<"$line"
	if [ "$iters" != $((q * n)) ]; then
		fail_run "$id: ib_write_bw did $iters writes, not $((q * n))" "$log.cli"
		return 1
	fi
	R_SECS=$(tail -n 1 "$log.cli.time" | awk '{ print $1 }')
	R_CPU=$(calc "$(cpu_of "$log.cli.time") + $(cpu_of "$log.srv.time")" .2f)
	R_DATA=$(data_rate "$log.wire" $((iters * s)))
	R_NOTE="$iters x $((s >> 10)) KiB"
	# perftest turns cycles into seconds with a CPU clock rate it samples
	# at start; under emulation that sampling can fail (r^2 < 0.9: it then
	# reports 0.00 with -F) or go wrong. A rate that says the writes took
	# longer than the whole client run, or less than half the data phase
	# the veth counters saw, is such a failure: the run is repeated.
	if [ "$(calc "$R_MIBS <= 0 || $iters * $s / 1048576 / $R_MIBS > $R_SECS" d)" = 1 ] ||
	   { [ -n "$R_DATA" ] && [ "$(calc "$R_MIBS > 2 * $R_DATA" d)" = 1 ]; }; then
		fail_run "$id: ib_write_bw reported $R_MIBS MiB/s for $R_SECS s in all: its clock calibration failed"
		return 3
	fi
	return 0
}

# record ID REP LABEL: after px or ib succeeded
record() {
	local hq ho
	R_DATA=${R_DATA:-0}
	read -r hq ho <<<"$(host_load "$R_T0" "$R_T1")"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$R_MIBS" "$R_SECS" "$R_CPU" "$R_BUSY" \
		"$R_DATA" "$hq" "$ho" >>"$RES"
	printf '  rep %d/%d  %-30s %6.2f MiB/s %6.2f s  data %6.2f MiB/s  CPU %5.2f s  busy %3s%%  host: QEMU %4s, other %4s  %s\n' \
		"$2" "$reps" "$3" "$R_MIBS" "$R_SECS" "$R_DATA" "$R_CPU" "$R_BUSY" "$hq" "$ho" "$R_NOTE"
}

# one pxfer case and one ib_write_bw case, each recorded under its ID
run_px() {              # ID REP LABEL J FILE ENV SENDOPTS RECVOPTS
	if px "$1" "$4" "$5" "$6" "$7" "$8"; then record "$1" "$2" "$3"
	else
		FAILED=$((FAILED + 1))
		printf '  rep %d/%d  %-32s FAILED\n' "$2" "$reps" "$3"
	fi
}
# ib_write_bw is the reference, not what is tested: a run of it that fails
# (rxe under emulation has been seen to end one with IBV_WC_REM_INV_REQ_ERR)
# or whose clock calibration failed is repeated, twice at most, and counted
IB_REPEATS=0
run_ib() {              # ID REP LABEL Q ITERS SIZE EXTRA
	local try rc
	for ((try = 1; try <= 3; try++)); do
		ib "$1" "$4" "$5" "$6" "$7"
		rc=$?
		[ $rc -eq 0 ] && break
		[ $try -lt 3 ] && { IB_REPEATS=$((IB_REPEATS + 1)); echo "    (repeating ib_write_bw)"; }
	done
	if [ $rc -eq 0 ]; then record "$1" "$2" "$3"
	else
		FAILED=$((FAILED + 1))
		printf '  rep %d/%d  %-32s FAILED 3 times\n' "$2" "$reps" "$3"
	fi
}

# medians per ID, fields: 1 MiB/s, 2 seconds, 3 CPU s, 4 busy %, 5 runs,
# 6 lowest and 7 highest MiB/s, 8 data-phase MiB/s, 9 CPUs QEMU got and
# 10 CPUs other host processes used (empty without the host monitor)
declare -A MED
summarize() {
	local id rest
	MED=()
	while IFS=$'\t' read -r id rest; do MED[$id]=$rest; done < <(awk -F'\t' '
		function med(l,   a, n, i, j, t) {
			n = split(l, a, " ")
			for (i = 2; i <= n; i++)
				for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{
			if (!($1 in n)) { n[$1] = 0; lo[$1] = $3; hi[$1] = $3 }
			n[$1]++; m[$1] = m[$1] " " $3; s[$1] = s[$1] " " $4
			c[$1] = c[$1] " " $5; b[$1] = b[$1] " " $6; d[$1] = d[$1] " " $7
			if ($8 != "-" && $8 != "") { hq[$1] = hq[$1] " " $8; ho[$1] = ho[$1] " " $9 }
			if ($3 + 0 < lo[$1] + 0) lo[$1] = $3
			if ($3 + 0 > hi[$1] + 0) hi[$1] = $3
		}
		END { for (k in n) printf "%s\t%.2f\t%.3f\t%.2f\t%.0f\t%d\t%s\t%s\t%.2f\t%s\t%s\n", k,
			med(m[k]), med(s[k]), med(c[k]), med(b[k]), n[k], lo[k], hi[k], med(d[k]),
			hq[k] == "" ? "" : sprintf("%.2f", med(hq[k])),
			ho[k] == "" ? "" : sprintf("%.2f", med(ho[k])) }' "$RES")
}
f_() { local v=${MED[$1]:-}; [ -n "$v" ] && cut -f "$2" <<<"$v"; }

# per-repetition ratios ID_A / ID_B of TSV column COL (3: MiB/s, 7: data
# phase): "lowest-highest", or with MED=1 their median
rep_ratios() {
	awk -F'\t' -v a="$1" -v b="$2" -v c="${3:-3}" -v med="${4:-0}" '
		$1 == a { x[$2] = $c } $1 == b { y[$2] = $c }
		END { for (r in x) if ((r in y) && y[r] > 0) { v[++n] = x[r] / y[r]
			if (lo == "" || v[n] < lo) lo = v[n]; if (hi == "" || v[n] > hi) hi = v[n] }
		      if (!n) exit
		      if (!med) { printf "%.2f-%.2f", lo, hi; exit }
		      for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
		      printf "%.2f", n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }' "$RES"
}

# QUIET_OTHER: a run is quiet when other host processes used less than
# this many CPUs during it. quiet_ratio ID_A ID_B: the median of the
# per-repetition ratios over the repetitions in which both runs were
# quiet, and how many those were: "0.93 (2 of 3)", or "- (0 of 3)"
QUIET_OTHER=0.25
quiet_ratio() {
	awk -F'\t' -v a="$1" -v b="$2" -v lim=$QUIET_OTHER '
		function ok(v) { return v != "-" && v != "" && v + 0 < lim }
		$1 == a { x[$2] = $3; qa[$2] = ok($9) } $1 == b { y[$2] = $3; qb[$2] = ok($9) }
		END { for (r in x) if (r in y) { t++; if (qa[r] && qb[r] && y[r] > 0) v[++n] = x[r] / y[r] }
		      if (!n) { printf "- (0 of %d)", t; exit }
		      for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] > v[j]; j--) { s = v[j]; v[j] = v[j - 1]; v[j - 1] = s }
		      printf "%.2f (%d of %d)", n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, n, t }' "$RES"
}

# ---------------------------------------------------------------- setup
echo "guest:   kernel $(uname -r), $NCPU vCPUs, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo);" \
	"server $SDEV ($SADDR, GID $SGID), client $CDEV ($CADDR, GID $CGID), MTU ${PXFER_RXE_MTU:-?}"
echo "pxfer:   $("$PXFER" --version 2>/dev/null | head -n 1) ($PXFER)${PXFER_RDMA_SPIN:+; PXFER_RDMA_SPIN=$PXFER_RDMA_SPIN}"
echo "perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null || echo '?')"
t_start=$SECONDS
host_clock
if [ -n "$HOSTLOG" ]; then
	echo "host:    load monitor found; host clock - guest clock = $HOSTOFF s"
else
	echo "host:    no load monitor (run through bench/rdma.sh to see the host's load per run)"
fi

if [ -z "$size" ]; then
	# Calibration: 32 MiB through each tool, to pick a size that fits
	# the budget.
	head -c $((32 << 20)) /dev/urandom >"$W/cal.bin" || exit 1
	cat "$W/cal.bin" >/dev/null
	echo "calibration (32 MiB, -j1 / -q1):"
	t0=$EPOCHREALTIME
	EXPECT_CHUNK=$(px_chunk 1)
	px cal-px 1 "$W/cal.bin" "" "" "" || { echo "rdma-guest: calibration failed"; exit 1; }
	EXPECT_CHUNK=
	w_px=$(calc "$EPOCHREALTIME - $t0" .3f)
	echo "  pxfer       $R_MIBS MiB/s, $w_px s in all (with setup and cmp)"
	ok=0
	for try in 1 2 3; do
		t0=$EPOCHREALTIME
		ib cal-ib 1 $(((32 << 20) / $(px_chunk 1))) "$(px_chunk 1)" "" && { ok=1; break; }
	done
	[ $ok -eq 1 ] || { echo "rdma-guest: calibration failed"; exit 1; }
	w_ib=$(calc "$EPOCHREALTIME - $t0" .3f)
	r_ib=$R_MIBS
	echo "  ib_write_bw $r_ib MiB/s, $w_ib s in all (with setup)"
	rm -f "$W/cal.bin"
	# the two protection runs cost about one more pair
	n_pairs=$((reps * ${#JOBS[@]} * 2))
	# --diag: each variant costs about half a pair
	[ $diag -eq 1 ] && n_pairs=$((reps * ${#JOBS[@]} * (2 + ${#VARS[@]}) / 2))
	# Per pair: ib_write_bw's fixed cost plus the size at its rate, and
	# pxfer's whole calibration run (setup and cmp included) scaled with
	# the size, which has kept the runs within the budget. A calibration
	# run of pxfer that other host processes slowed down must not shrink
	# the size much: it counts as at most a run at half ib_write_bw's
	# rate plus 5 s.
	w_px=$(calc "$w_px < 32 / ($r_ib / 2) + 5 ? $w_px : 32 / ($r_ib / 2) + 5" .3f)
	o_ib=$(calc "$w_ib - 32 / $r_ib" .3f)
	size=$(calc "($budget / $n_pairs - $o_ib) / (1 / $r_ib + $w_px / 32)" .0f)
	size=$(( size / 16 * 16 ))
	[ "$size" -ge 32 ] || size=32
	[ "$size" -le "$max_size" ] || size=$max_size
	echo "  -> $size MiB per transfer ($reps repetition(s) x ${#JOBS[@]} job count(s) in about $budget s)"
fi
BYTES=$((size << 20))
DATA=$W/data.bin
head -c $BYTES /dev/urandom >"$DATA" || { echo "rdma-guest: cannot write $DATA" >&2; exit 1; }
cat "$DATA" >/dev/null          # tmpfs: in memory anyway; read once like the TCP bench
echo "data:    $DATA, $size MiB of random data on tmpfs; receiver --dir under $W"
echo "repetitions: $reps (median reported)"
echo

# ---------------------------------------------------------------- runs
if [ $diag -eq 0 ]; then
	for ((rep = 1; rep <= reps; rep++)); do
		for j in "${JOBS[@]}"; do
			msg=$(px_chunk "$j")
			n=$(((size << 20) / (j * msg)))
			[ $n -ge 5 ] || n=5
			EXPECT_CHUNK=$msg
			if [ $((rep % 2)) -eq 1 ]; then
				run_px "px-$j" $rep "pxfer -j$j" "$j" "$DATA" "" "" ""
				run_px "px-$j-enc" $rep "pxfer -j$j --encrypt" "$j" "$DATA" "" "--encrypt" ""
				run_px "px-$j-ck" $rep "pxfer -j$j --integrity checksum" "$j" "$DATA" "" "--integrity checksum" ""
				run_ib "ib-$j" $rep "ib_write_bw -q$j -s $((msg >> 20))M" "$j" $n "$msg" ""
			else
				run_ib "ib-$j" $rep "ib_write_bw -q$j -s $((msg >> 20))M" "$j" $n "$msg" ""
				run_px "px-$j-ck" $rep "pxfer -j$j --integrity checksum" "$j" "$DATA" "" "--integrity checksum" ""
				run_px "px-$j-enc" $rep "pxfer -j$j --encrypt" "$j" "$DATA" "" "--encrypt" ""
				run_px "px-$j" $rep "pxfer -j$j" "$j" "$DATA" "" "" ""
			fi
			EXPECT_CHUNK=
		done
	done
else
	head -c 4096 /dev/urandom >"$W/small.bin"
	echo "variants: $variants"
	for ((rep = 1; rep <= reps; rep++)); do
		for j in "${JOBS[@]}"; do
			slots=$(( (32 << 20) / (j * MSG) ))   # pxfer's slots per worker at the defaults
			n=$((size / j < 5 ? 5 : size / j))
			n4=$((size / 4 / j < 5 ? 5 : size / 4 / j))
			run_ib "ib-$j" $rep "ib_write_bw -q$j" "$j" $n $MSG ""
			run_px "px-$j" $rep "pxfer -j$j" "$j" "$DATA" "" "--chunk-size 1M" ""
			for v in "${VARS[@]}"; do
				case $v in
				t) run_ib "ib-$j-t" $rep "ib_write_bw -q$j -t $slots" "$j" $n $MSG "-t $slots" ;;
				ib4m) run_ib "ib-$j-ib4m" $rep "ib_write_bw -q$j -s 4M" "$j" $n4 $((4 * MSG)) "" ;;
				c2m) run_px "px-$j-c2m" $rep "pxfer -j$j --chunk-size 2M" "$j" "$DATA" "" "--chunk-size 2M" "" ;;
				c4m) run_px "px-$j-c4m" $rep "pxfer -j$j --chunk-size 4M" "$j" "$DATA" "" "--chunk-size 4M" "" ;;
				r128) run_px "px-$j-r128" $rep "pxfer -j$j --ring-mem 128M" "$j" "$DATA" "" "" "--ring-mem 128M --max-sessions 1" ;;
				c4m-r128) run_px "px-$j-c4m-r128" $rep "pxfer -j$j 4M chunks, 128M ring" "$j" "$DATA" "" "--chunk-size 4M" "--ring-mem 128M --max-sessions 1" ;;
				spin0) run_px "px-$j-spin0" $rep "pxfer -j$j PXFER_RDMA_SPIN=0" "$j" "$DATA" "PXFER_RDMA_SPIN=0" "" "" ;;
				spin2e5) run_px "px-$j-spin2e5" $rep "pxfer -j$j PXFER_RDMA_SPIN=200000" "$j" "$DATA" "PXFER_RDMA_SPIN=200000" "" "" ;;
				sync) run_px "px-$j-sync" $rep "pxfer -j$j --io sync" "$j" "$DATA" "" "--io sync" "--io sync" ;;
				4k) run_px "px-$j-4k" $rep "pxfer -j$j, one 4 KiB file" "$j" "$W/small.bin" "" "" "" ;;
				esac
			done
		done
	done
	# Where the guest's CPU time goes: one more run of each tool at the
	# first -j, sampled by perf (cpu-clock: emulated CPUs have no PMU).
	if has_var profile && command -v perf >/dev/null &&
	   echo -1 >/proc/sys/kernel/perf_event_paranoid &&
	   echo 0 >/proc/sys/kernel/kptr_restrict; then
		j=${JOBS[0]}
		for t in px ib; do
			PROFILE=$W/$t.perf
			if [ $t = px ]; then
				px prof-px "$j" "$DATA" "" "" "" && echo "profile: pxfer -j$j, $R_MIBS MiB/s (perf running)"
			else
				ib prof-ib "$j" $((((size << 20) / (j * $(px_chunk "$j"))) < 5 ? 5 :
						   (size << 20) / (j * $(px_chunk "$j")))) "$(px_chunk "$j")" "" &&
					echo "profile: ib_write_bw -q$j, $R_MIBS MiB/s (perf running)"
			fi
			PROFILE=''
			echo "  guest CPU time by thread (idle = swapper; pxfer names its"
			echo "  threads pxfer-send-N, pxfer-recv-N, pxfer-rdma, pxfer-prep-N):"
			perf report -i "$W/$t.perf" --stdio -q --sort comm 2>/dev/null |
				awk 'NF && $1 + 0 >= 0.3' | head -n 24 | sed 's/^ */    /'
			echo "  by thread and object:"
			perf report -i "$W/$t.perf" --stdio -q --sort comm,dso 2>/dev/null |
				awk 'NF && $1 + 0 >= 0.5' | head -n 14 | sed 's/^ */    /'
			echo "  by symbol:"
			perf report -i "$W/$t.perf" --stdio -q --sort dso,sym 2>/dev/null |
				awk 'NF && $1 + 0 >= 0.8' | head -n 16 | sed 's/^ */    /'
		done
	fi
fi
echo "(measurements took $((SECONDS - t_start)) s in all)"
echo

# ---------------------------------------------------------------- report
summarize
if [ -n "$logdir" ] && mkdir -p "$logdir" 2>/dev/null; then
	cp -r "$W/logs" "$RES" "$logdir/" 2>/dev/null
fi
if [ $diag -eq 0 ]; then
	echo "Results: $size MiB per transfer, median of $reps; MiB/s = 2^20 bytes/s."
	echo "pxfer: --json bytes / seconds (the whole transfer); ib_write_bw: its BW average;"
	echo "data: the same bytes over the data phase alone, timed for both tools alike from"
	echo "the veth counters; CPU: user+sys of both processes; busy: guest CPU (${NCPU} vCPUs);"
	echo "ratio: of the medians; per rep: median and range of the per-repetition ratios"
	printf '%-3s %11s %6s %6s %5s | %11s %6s %6s %5s | %6s %-6s %16s | %10s\n' \
		"-j" "pxfer MiB/s" "data" "CPU s" "busy" "ib_wr MiB/s" "data" "CPU s" "busy" \
		"ratio" "0.9x" "per rep" "data ratio"
	met=0 missed=0
	for j in "${JOBS[@]}"; do
		a=px-$j b=ib-$j
		if [ -z "${MED[$a]:-}" ] || [ -z "${MED[$b]:-}" ]; then
			printf '%-3s %s\n' "$j" "no result (failed runs)"
			continue
		fi
		r=$(calc "$(f_ "$a" 1) / $(f_ "$b" 1)" .2f)
		if [ "$(calc "$(f_ "$a" 1) >= 0.9 * $(f_ "$b" 1)" d)" = 1 ]; then t=met; met=$((met + 1))
		else t=MISSED; missed=$((missed + 1)); fi
		printf '%-3s %11s %6s %6s %4s%% | %11s %6s %6s %4s%% | %5sx %-6s %5sx %10s | %9sx\n' "$j" \
			"$(f_ "$a" 1)" "$(f_ "$a" 8)" "$(f_ "$a" 3)" "$(f_ "$a" 4)" \
			"$(f_ "$b" 1)" "$(f_ "$b" 8)" "$(f_ "$b" 3)" "$(f_ "$b" 4)" \
			"$r" "$t" "$(rep_ratios "$a" "$b" 3 1)" "$(rep_ratios "$a" "$b")" \
			"$(calc "$(f_ "$a" 8) / ($(f_ "$b" 8) + 0.0001)" .2f)"
	done
	echo
	if [ -n "$HOSTLOG" ]; then
		echo "host, median per run: QEMU CPUs / other processes' CPUs (of $(awk '/^#/ { for (i = 1; i <= NF; i++) if ($i ~ /^NCPU=/) print substr($i, 6); exit }' "$HOSTLOG"))"
		for j in "${JOBS[@]}"; do
			printf '  -j%s: pxfer %s / %s, ib_write_bw %s / %s; ratio over the repetitions where other processes used < %s CPUs in both runs: %s\n' \
				"$j" "$(f_ "px-$j" 9)" "$(f_ "px-$j" 10)" "$(f_ "ib-$j" 9)" "$(f_ "ib-$j" 10)" \
				"$QUIET_OTHER" "$(quiet_ratio "px-$j" "ib-$j")"
		done
	fi
	echo "pxfer seconds (median): $(for j in "${JOBS[@]}"; do
		[ -n "${MED[px-$j]:-}" ] && printf -- '-j%s %s  ' "$j" "$(f_ "px-$j" 2)"; done)"
	echo "pxfer MiB/s, lowest-highest: $(for j in "${JOBS[@]}"; do
		[ -n "${MED[px-$j]:-}" ] && printf -- '-j%s %s-%s  ' "$j" "$(f_ "px-$j" 6)" "$(f_ "px-$j" 7)"; done)"
	echo "ib_write_bw MiB/s, lowest-highest: $(for j in "${JOBS[@]}"; do
		[ -n "${MED[ib-$j]:-}" ] && printf -- '-q%s %s-%s  ' "$j" "$(f_ "ib-$j" 6)" "$(f_ "ib-$j" 7)"; done)"
	echo "target (pxfer >= 0.9x ib_write_bw at the same -j/-q, ratio of the medians): $met met, $missed missed"
	echo
	echo "Protection, same repetitions: the default keyed tag (gmac), --encrypt (aes-256-gcm)"
	echo "and the plain checksum; MiB/s and CPU s (both processes) medians; ratios of the medians"
	printf '%-3s %11s %6s | %11s %6s | %11s %6s | %8s %-6s %11s | %8s\n' "-j" "default" "CPU s" \
		"--encrypt" "CPU s" "checksum" "CPU s" "enc/def" "0.8x" "per rep" "def/ck"
	met=0 missed=0
	for j in "${JOBS[@]}"; do
		a=px-$j e=px-$j-enc k=px-$j-ck
		if [ -z "${MED[$a]:-}" ] || [ -z "${MED[$e]:-}" ] || [ -z "${MED[$k]:-}" ]; then
			printf '%-3s %s\n' "$j" "no result (failed runs)"
			continue
		fi
		if [ "$(calc "$(f_ "$e" 1) >= 0.8 * $(f_ "$a" 1)" d)" = 1 ]; then t=met; met=$((met + 1))
		else t=MISSED; missed=$((missed + 1)); fi
		printf '%-3s %11s %6s | %11s %6s | %11s %6s | %7sx %-6s %11s | %7sx\n' "$j" \
			"$(f_ "$a" 1)" "$(f_ "$a" 3)" "$(f_ "$e" 1)" "$(f_ "$e" 3)" \
			"$(f_ "$k" 1)" "$(f_ "$k" 3)" "$(calc "$(f_ "$e" 1) / $(f_ "$a" 1)" .2f)" "$t" \
			"$(rep_ratios "$e" "$a")" "$(calc "$(f_ "$a" 1) / $(f_ "$k" 1)" .2f)"
	done
	echo "target (--encrypt >= 0.8x the default at the same -j): $met met, $missed missed"
else
	echo "Diagnostic variants: $size MiB, median of $reps; ratio = variant / ib_write_bw -qJ"
	echo "(1 MiB writes) of the same repetitions; data = MiB/s over the data phase (veth counters)"
	printf '%-22s %9s %8s %8s %7s %5s %6s %17s %6s\n' variant "MiB/s" "s" "data" "CPU s" busy ratio "per rep" "data r"
	for j in "${JOBS[@]}"; do
		for id in ib-$j ib-$j-t ib-$j-ib4m px-$j px-$j-c2m px-$j-c4m px-$j-r128 px-$j-c4m-r128 \
			  px-$j-spin0 px-$j-spin2e5 px-$j-sync px-$j-4k; do
			if [ "$id" != "ib-$j" ] && [ "$id" != "px-$j" ]; then
				has_var "${id#*-"$j"-}" || continue
			fi
			[ -n "${MED[$id]:-}" ] || { printf '%-22s failed\n' "$id"; continue; }
			r=$(calc "$(f_ "$id" 1) / $(f_ "ib-$j" 1)" .2f)
			printf '%-22s %9s %8s %8s %7s %4s%% %5sx %5sx %11s %5sx\n' "$id" "$(f_ "$id" 1)" "$(f_ "$id" 2)" \
				"$(f_ "$id" 8)" "$(f_ "$id" 3)" "$(f_ "$id" 4)" "$r" "$(rep_ratios "$id" "ib-$j" 3 1)" \
				"$(rep_ratios "$id" "ib-$j")" \
				"$(calc "$(f_ "$id" 8) / ($(f_ "ib-$j" 8) + 0.0001)" .2f)"
		done
	done
	echo "(px-J-4k: one 4 KiB file; its seconds are the fixed cost of a transfer, its MiB/s mean nothing)"
fi
[ $IB_REPEATS -eq 0 ] ||
	echo "ib_write_bw failed $IB_REPEATS time(s) and was repeated (see the runs marked 'failed' above)"
if [ $FAILED -gt 0 ]; then
	echo "$FAILED run(s) FAILED or copied wrongly; they are not counted above"
	exit 1
fi
exit 0
