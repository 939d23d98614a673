#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A/B comparison of pxfer builds on the small-file workload (B of
# bench/bench.sh): 10,000 files of 4 KiB in 10 directories, over loopback,
# each build and tar | nc run in turn, round after round, so that all of
# them see the same machine; prints the median, lowest and highest
# wall-clock milliseconds of each.
#
#   bench/ab.sh [--runs N] [-j N] [--dir DIR | --ext4-loop] PXFER...
#
#   PXFER        pxfer binaries to compare (e.g. build/release/pxfer and a
#                build of an older commit: git worktree add, make BUILD=...)
#   --runs N     rounds (default 9)
#   -j N         pxfer -j (default 1)
#   --dir DIR    work directory (default /dev/shm/pxfer-bench-ab): the tree
#                is made there once and kept; each run writes into a new
#                directory, removed after it
#   --ext4-loop  instead: a new ext4 without a journal (like the benchmark's
#                /tmp) on a loop device backed by /dev/shm, made for this
#                run and removed after it; nothing is deleted in it between
#                runs (deleting many files slows the next creations on such
#                a file system). Needs root, mkfs.ext4 and losetup.
#
# The wall time runs from the sender's start until both sides have ended.
# Each copy is compared with the source (diff -r) once per build and for
# tar | nc. Exit status 0, or 1 if a run failed or a copy differed, 2 on a
# bad command line.
set -uo pipefail

runs=9 jobs=1 dir=/dev/shm/pxfer-bench-ab loop=0 bins=()
usage() { sed -n '4,28s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=${2:-}; shift ;;
	-j) jobs=${2:-}; shift ;;
	--dir) dir=${2:-}; shift ;;
	--ext4-loop) loop=1 ;;
	-h|--help) usage; exit 0 ;;
	-*) echo "bench-ab: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	*) bins+=("$(realpath "$1")") ;;
	esac
	shift
done
[[ $runs =~ ^[1-9][0-9]*$ && $jobs =~ ^[1-9][0-9]*$ ]] ||
	{ echo "bench-ab: --runs and -j take a positive number" >&2; exit 2; }
[ ${#bins[@]} -gt 0 ] || { usage >&2; exit 2; }
for b in "${bins[@]}"; do
	[ -x "$b" ] || { echo "bench-ab: '$b' is not an executable" >&2; exit 2; }
done
for t in nc tar diff; do
	command -v $t >/dev/null || { echo "bench-ab: $t is missing" >&2; exit 2; }
done

export PXFER_SECRET
PXFER_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=${PXFER_BENCH_PORT:-17480}
img='' mnt=''

# (run by the EXIT trap: shellcheck 0.9 takes the script's last exit for
# the end of every path, trap handlers included)
# shellcheck disable=SC2317
cleanup() {
	if [ -n "$mnt" ]; then
		umount "$mnt" 2>/dev/null
		rmdir "$mnt" 2>/dev/null
	fi
	[ -n "$img" ] && rm -f "$img"
}
trap cleanup EXIT

if [ $loop = 1 ]; then
	[ "$(id -u)" = 0 ] || { echo "bench-ab: --ext4-loop needs root" >&2; exit 2; }
	img=$(mktemp /dev/shm/pxfer-bench-ab.XXXXXX.img)
	mnt=$(mktemp -d /tmp/pxfer-bench-ab.XXXXXX)
	{ truncate -s $(( (runs * (${#bins[@]} + 1) + 2) * 60 + 200 ))M "$img" &&
		mkfs.ext4 -q -F -O ^has_journal -N $(( (runs * (${#bins[@]} + 1) + 2) * 10100 + 1000 )) "$img" &&
		mount -o loop "$img" "$mnt"; } ||
		{ echo "bench-ab: cannot make the loop file system" >&2; exit 1; }
	dir=$mnt
fi
mkdir -p "$dir" || exit 1
src=$dir/src
if [ ! -d "$src/tree" ]; then
	echo "making 10,000 files of 4 KiB in $src/tree"
	mkdir -p "$src/tree"
	for d in 0 1 2 3 4 5 6 7 8 9; do
		mkdir "$src/tree/d$d"
		head -c $((1000 * 4096)) /dev/urandom |
			split -b 4096 -a 3 -d - "$src/tree/d$d/f"
	done
fi
tar -c -C "$src" tree | cat >/dev/null	# in the page cache

ms() { echo $(( ($2 - $1) / 1000000 )); }

wait_port() {
	for _ in $(seq 50); do
		ss -ltn 2>/dev/null | grep -q ":$port " && return
		sleep 0.05
	done
}

# timed RECV_PID OUT CHECK CMD... - run the sending side CMD once the
# receiver (RECV_PID, writing into OUT) listens, wait for both; with CHECK
# 1 compare the copy. Prints the milliseconds.
timed() {
	local rp=$1 out=$2 check=$3 t0 t1 rc=0
	shift 3
	wait_port
	t0=$(date +%s%N)
	"$@" || rc=1
	wait "$rp" || rc=1
	t1=$(date +%s%N)
	[ "$check" = 1 ] && { diff -r "$src/tree" "$out/tree" >/dev/null || rc=1; }
	[ $loop = 1 ] || rm -rf "$out"
	[ $rc = 0 ] || return 1
	ms "$t0" "$t1"
}

# run_px BIN CHECK - one pxfer transfer
run_px() {
	local out
	out=$(mktemp -d "$dir/run.XXXXXX")
	"$1" recv --dir "$out" --once --bind 127.0.0.1 --port "$port" --transport tcp -q &
	timed $! "$out" "$2" "$1" send -j "$jobs" --transport tcp "$src/tree" "127.0.0.1:$port" -q
}

# (run by timed, as its CMD)
# shellcheck disable=SC2317
send_tar() { tar -c -C "$src" tree | nc -N 127.0.0.1 "$port"; }

# run_tar CHECK - one tar | nc transfer
run_tar() {
	local out
	out=$(mktemp -d "$dir/run.XXXXXX")
	nc -l 127.0.0.1 "$port" | tar -x -C "$out" &
	timed $! "$out" "$1" send_tar
}

declare -A res
fail=0
for ((r = 1; r <= runs; r++)); do
	for b in "${bins[@]}"; do
		t=$(run_px "$b" $((r == 1))) || { echo "bench-ab: $b failed in round $r" >&2; fail=1; continue; }
		res[$b]+="$t "
	done
	t=$(run_tar $((r == 1))) || { echo "bench-ab: tar | nc failed in round $r" >&2; fail=1; continue; }
	res[tar]+="$t "
done

echo "10,000 x 4 KiB over loopback, -j$jobs, $runs rounds, in $( [ $loop = 1 ] && echo 'a new no-journal ext4' || echo "$dir"): wall ms"
for k in "${bins[@]}" tar; do
	[ -n "${res[$k]:-}" ] || continue
	printf '%-50s %s\n' "$( [ "$k" = tar ] && echo 'tar | nc' || echo "$k")" \
		"$(tr ' ' '\n' <<<"${res[$k]}" | sed '/^$/d' | sort -n |
		   awk '{a[NR] = $1} END {printf "median %d  lowest %d  highest %d", a[int((NR + 1) / 2)], a[1], a[NR]}')"
done
exit $fail
