# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# What the benchmarks on nodes of one machine share (bench/scaleout.sh,
# bench/broadcast.sh): their command line, what they skip, and their
# work directory. The caller sets BENCH, its name (bench/$BENCH.sh, the
# word its notes and errors begin with), and sources this at its start:
#
#	BENCH=broadcast
#	# shellcheck source=lib/netns.sh
#	. "$(dirname "$0")/lib/netns.sh"
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
#   note MSG...             MSG, after the benchmark's name
#   calc EXPR [FMT]         EXPR by awk, printed with FMT (default .3f)

# shellcheck disable=SC2034  # the caller's too
quick=0 out='' reps='' rate=400 only='' keep=0
usage() { sed -n '/^#   bench\/'"$BENCH"'.sh \[/,/^##$/{/^##$/d;s/^# \{0,1\}//;p;}' "$0"; }
note() { echo "$BENCH: $*"; }
calc() { awk "BEGIN { printf \"%${2:-.3f}\", ($1) }"; }

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
