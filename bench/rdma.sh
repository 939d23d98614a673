#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# RDMA benchmark: pxfer --transport rdma against ib_write_bw (perftest) on
# the Soft-RoCE test bed, in one boot of the QEMU VM (test/vm/run).
#
#   bench/rdma.sh [--quick] [--reps N] [--jobs LIST] [--size MIB]
#                       [--budget SEC] [--diag [LIST]] [--timeout SEC]
#
#   --quick        32 MiB, 1 repetition, no calibration (sanity run, ~1.5 min)
#   --reps N       repetitions of every measurement (default 3), median shown
#   --jobs LIST    pxfer -j values = ib_write_bw -q values (default 1,2,4)
#   --size MIB     bytes per transfer; default: a short calibration in the
#                  VM picks the largest size (at most 256 MiB) with which
#                  the measurements take about --budget seconds
#   --budget SEC   seconds for the measurements (default 420, so that the
#                  whole run, boot and calibration included, stays under
#                  about 10 minutes)
#   --diag [LIST]  run diagnostic variants instead: LIST of t, ib4m, c2m, c4m,
#                  r128, c4m-r128, spin0, spin2e5, sync, 4k, profile
#                  (default all but profile; see bench/rdma-guest.sh):
#                  chunk size, ring memory, PXFER_RDMA_SPIN, --io sync, the
#                  fixed cost of a transfer, a perf profile of the guest
#   --smp N        guest CPUs (default: the test bed's, host CPUs up to 4)
#   --timeout SEC  kill the VM after SEC seconds (default 1500)
#   --rails        instead: one rail against two (--device rxe1,rxe3 to
#                  rxe0,rxe2) against two ib_write_bw at once, one per
#                  rail (bench/rdma-rails-guest.sh; --reps, --size, and
#                  --jobs with one even value go to it)
#
# Environment: PXFER_BUILD (directory of the pxfer binary, default
# build/release); PXFER_* variables (PXFER_RDMA_SPIN, say) reach the VM.
#
# What is measured (details in bench/rdma-guest.sh): for each -j, a
# file on the guest's tmpfs /tmp goes through pxfer --transport rdma to a
# receiver --dir on the same tmpfs, between the VM's two rxe devices over
# their veth pair (the sender's --json bytes / seconds; every copy checked
# with cmp), and ib_write_bw moves the same bytes as 1 MiB RDMA WRITEs on
# as many RC QPs (its own "BW average", MB = 2^20). Both run under the
# same TCG emulation, which slows everything: the ratio pxfer / ib_write_bw
# is the figure; the target is 0.9 or better.
#
# Exit status: 0 when every run worked and every copy was correct, target
# met or not; 1 when a run failed, a copy was wrong or the VM failed; 2 on a
# bad command line or a missing binary. The logs of every run (both sides'
# output, GNU time, veth samples) and results.tsv are left in
# build/bench-rdma/.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
PXFER_BUILD=${PXFER_BUILD:-$top/build/release}
PXFER=$PXFER_BUILD/pxfer
GUEST=$top/bench/rdma-guest.sh
LOGDIR=$top/build/bench-rdma

usage() { sed -n '7,29s/^# \{0,1\}//p' "$0"; }
args=() timeout=1500 max_size=256 smp=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) args+=("$1") ;;
	--rails) GUEST=$top/bench/rdma-rails-guest.sh ;;
	--diag)
		args+=("$1")
		if [ $# -ge 2 ] && [[ $2 != -* ]]; then args+=("$2"); shift; fi ;;
	--reps|--jobs|--size|--budget)
		[ $# -ge 2 ] || { usage >&2; exit 2; }
		args+=("$1" "$2")
		[ "$1" = --size ] && max_size=$2
		shift ;;
	--timeout) [ $# -ge 2 ] || { usage >&2; exit 2; }; timeout=$2; shift ;;
	--smp) [ $# -ge 2 ] || { usage >&2; exit 2; }; smp=(--smp "$2"); shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "bench-rdma: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
[[ $max_size =~ ^[0-9]+$ ]] || { echo "bench-rdma: --size takes MiB" >&2; exit 2; }
[ -x "$PXFER" ] || { echo "bench-rdma: no pxfer binary at $PXFER (run 'make' first)" >&2; exit 2; }
command -v ib_write_bw >/dev/null ||
	{ echo "bench-rdma: ib_write_bw missing (Debian package: perftest)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-rdma: /usr/bin/time missing (Debian package: time)" >&2; exit 2; }
case $PXFER in
"$top"/*) ;;
*) echo "bench-rdma: $PXFER must be under $top, the directory the VM shares" >&2; exit 2 ;;
esac

# machine-wide busy CPU time, in clock ticks: sets CPU_BUSY
cpu_sample() {
	local _c u n s q sq st
	read -r _c u n s _ _ q sq st _ </proc/stat
	CPU_BUSY=$((u + n + s + q + sq + st))
}

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
rev=$(git -C "$top" rev-parse --short HEAD 2>/dev/null) &&
	{ git -C "$top" diff --quiet HEAD -- src include Makefile 2>/dev/null ||
	  rev="$rev + uncommitted changes"; }
echo "bench-rdma: pxfer over Soft-RoCE (rxe) vs ib_write_bw, in the QEMU test VM"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, ${cpu:-unknown CPU}, $(awk '/MemTotal/ { printf "%.1f GiB RAM", $2 / 2^20 }' /proc/meminfo), $(uname -sr)"
echo "pxfer:   $("$PXFER" --version 2>/dev/null | head -n 1)${rev:+, commit $rev}, $PXFER" \
	"(built $(date -u -r "$PXFER" '+%Y-%m-%d %H:%M UTC'), sha256 $(sha256sum "$PXFER" | cut -c1-12))"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"

# The QEMU process among the descendants of PID
find_qemu() {
	local p
	for p in $(pgrep -P "$1"); do
		if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = qemu-system-x86 ]; then
			echo "$p"
			return 0
		fi
		find_qemu "$p" && return 0
	done
	return 1
}

# Host load while the VM runs, for the guest to read through the project
# share: every 0.25 s, host-cpu.log gets "host-time busy-ticks qemu-ticks"
# (busy: all CPUs; qemu: the VM's process), and host-now the host's time,
# from which the guest learns the offset between the two clocks. The guest
# then tells, for each run, how much CPU QEMU got and how much other
# processes used.
monitor() {             # $1: pid whose descendant QEMU is
	local q='' t qt f u n s iq sq st
	echo "# host-time busy-ticks qemu-ticks HZ=$HZ NCPU=$(nproc)"
	while kill -0 "$1" 2>/dev/null; do
		[ -n "$q" ] || q=$(find_qemu "$1")
		read -r _ u n s _ _ iq sq st _ </proc/stat
		qt=0
		if [ -n "$q" ] && read -r -a f <"/proc/$q/stat" 2>/dev/null; then
			qt=$((f[13] + f[14]))
		fi
		t=$EPOCHREALTIME
		echo "$t $((u + n + s + iq + sq + st)) $qt"
		echo "$t" >"$LOGDIR/host-now"
		sleep 0.25
	done
}

# guest memory: the file and its copy live on the guest's /tmp, a tmpfs
# that may fill half of it
mem=$((1024 + 4 * max_size))
rm -rf "$LOGDIR"
mkdir -p "$LOGDIR" || exit 1
HZ=$(getconf CLK_TCK)
cpu_sample; b0=$CPU_BUSY
start=$SECONDS
tfile=$(mktemp) || exit 1
/usr/bin/time -f '%e %U %S' -o "$tfile" \
	"$top/test/vm/run" --timeout "$timeout" --mem "$mem" "${smp[@]}" -- \
	bash "$GUEST" --pxfer "$PXFER" --logdir "$LOGDIR" "${args[@]}" &
vm=$!
monitor $vm >"$LOGDIR/host-cpu.log" &
mon=$!
# Without job control, background jobs ignore SIGINT: pass ^C on to the
# run script (the child of GNU time), which then stops QEMU.
stop_vm() {
	local p
	for p in $(pgrep -P $vm); do kill -TERM "$p" 2>/dev/null; done
	kill $mon 2>/dev/null
}
trap 'stop_vm; exit 130' INT
trap 'stop_vm; exit 143' TERM
wait $vm
rc=$?
kill $mon 2>/dev/null
wait $mon 2>/dev/null
trap - INT TERM
rm -f "$LOGDIR/host-now"
cpu_sample
wall=$((SECONDS - start))
# QEMU's CPU (the run script's children) against the whole machine's
read -r _ qu qs < <(tail -n 1 "$tfile" 2>/dev/null) || true
rm -f "$tfile"
echo
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
if [ -n "${qu:-}" ] && [ "$wall" -gt 0 ]; then
	awk -v b=$((CPU_BUSY - b0)) -v hz="$HZ" -v u="$qu" -v s="$qs" -v w="$wall" -v n="$(nproc)" 'BEGIN {
		o = b / hz - u - s; if (o < 0) o = 0
		printf "host CPU during the %d s run: QEMU %.2f CPUs, other processes %.2f CPUs (of %d)\n",
			w, (u + s) / w, o / w, n }'
fi
case $rc in
0) ;;
124) echo "bench-rdma: FAILED: the VM ran into --timeout $timeout" >&2 ;;
125) echo "bench-rdma: FAILED: the VM did not boot or set up (see above)" >&2 ;;
*) echo "bench-rdma: FAILED: some runs failed (logs in $LOGDIR)" >&2 ;;
esac
[ $rc -eq 0 ]
