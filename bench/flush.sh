#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What the receiver's flushes of partial files cost: builds of pxfer sent
# the same 1 GiB file over loopback in turn, round after round; prints the
# median, lowest and highest wall-clock seconds of each, and the
# fdatasync calls of its receiver (one more run each, under strace -f)
# with their rate over that run's time.
#
#   bench/flush.sh [--runs N] [--dir DIR] PXFER...
#
#   PXFER        pxfer binaries to compare (e.g. a build of an older commit
#                and build/release/pxfer)
#   --runs N     rounds (default 5)
#   --dir DIR    work directory (default /dev/shm/pxfer-bench-flush): the
#                file is made there once and kept; each copy is removed
#                after its run
#
# Each copy is compared with the source (cmp). Exit status 0, or 1 if a
# run failed or a copy differed, 2 on a bad command line.
set -uo pipefail

runs=5 dir=/dev/shm/pxfer-bench-flush bins=()
usage() { sed -n '4,20s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=${2:-}; shift ;;
	--dir) dir=${2:-}; shift ;;
	-h|--help) usage; exit 0 ;;
	-*) echo "bench-flush: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	*) bins+=("$(realpath "$1")") ;;
	esac
	shift
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "bench-flush: --runs takes a positive number" >&2; exit 2; }
[ ${#bins[@]} -gt 0 ] || { usage >&2; exit 2; }
for b in "${bins[@]}"; do
	[ -x "$b" ] || { echo "bench-flush: '$b' is not an executable" >&2; exit 2; }
done

export PXFER_SECRET
PXFER_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=${PXFER_BENCH_PORT:-17490}
mkdir -p "$dir/dst" || exit 1
src=$dir/a.bin
if [ "$(stat -c %s "$src" 2>/dev/null)" != $((1 << 30)) ]; then
	head -c 1G /dev/urandom >"$src" || exit 1
fi

# one BIN [WRAP...] - one send of the file into a new copy; its wall
# seconds on stdout; 1 if it failed or the copy differs
one()
{
	local bin=$1 t0 t1 rpid rc=0

	shift
	rm -rf "$dir/dst"
	mkdir "$dir/dst" || return 1
	sync
	"$@" "$bin" recv --once -q --transport tcp --port "$port" --dir "$dir/dst" &
	rpid=$!
	for _ in $(seq 100); do
		ss -ltn "sport = :$port" | grep -q LISTEN && break
		sleep 0.05
	done
	t0=$(date +%s.%N)
	"$bin" send -q --transport tcp "$src" "127.0.0.1:$port" || rc=1
	wait "$rpid" || rc=1
	t1=$(date +%s.%N)
	cmp -s "$src" "$dir/dst/a.bin" || rc=1
	rm -rf "$dir/dst"
	echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }'
	return $rc
}

declare -A times
status=0
for ((r = 0; r < runs; r++)); do
	for b in "${bins[@]}"; do
		if ! t=$(one "$b"); then
			echo "bench-flush: $b: a run failed" >&2
			status=1
			continue
		fi
		times[$b]+="$t "
	done
done
printf '%-40s %8s %8s %8s %10s %10s\n' build median min max fdatasync per-s
for b in "${bins[@]}"; do
	read -r med lo hi < <(tr ' ' '\n' <<<"${times[$b]:-}" | grep . | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)], v[1], v[NR]; else print "- - -" }')
	n=- rate=-
	if command -v strace >/dev/null; then
		if t=$(one "$b" strace -f -qq -e trace=fdatasync -o "$dir/strace.out"); then
			n=$(grep -c '^[0-9]* *fdatasync' "$dir/strace.out")
			rate=$(awk -v n="$n" -v t="$t" 'BEGIN { printf "%.1f", n / t }')
		fi
		rm -f "$dir/strace.out"
	fi
	printf '%-40s %8s %8s %8s %10s %10s\n' "$b" "$med" "$lo" "$hi" "$n" "$rate"
done
exit $status
