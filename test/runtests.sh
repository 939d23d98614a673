#!/usr/bin/env bash
# Runs the test suite, each test under a timeout: the checks of the tree
# itself (test/lint/), the unit test programs (test/unit/*.c, built into
# $PXFER_BUILD/test/unit/), the loopback end-to-end tests (test/e2e/*.sh)
# and the RDMA tests in the Soft-RoCE VM (test/rdma/smoke.sh,
# test/rdma/suite.sh). Exit status of a test: 0 pass,
# 77 skip, anything else fail. Prints one line per test and a summary.
#
# Usage: test/runtests.sh [PATTERN...]   (run the tests whose name matches)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PXFER_BUILD=${PXFER_BUILD:-$top/build/san}
export PXFER_TOP=$top
# shellcheck source=lib/sanitizer.sh
. "$top/test/lib/sanitizer.sh"
timeout_s=${PXFER_TEST_TIMEOUT:-600}
logdir=$top/build/test-logs
mkdir -p "$logdir"

tests=()
for t in "$top"/test/lint/*; do
	[ -x "$t" ] && [ -f "$t" ] && tests+=("$t")
done
for t in "$PXFER_BUILD"/test/unit/*; do
	[ -x "$t" ] && [ -f "$t" ] && tests+=("$t")
done
tests+=("$top"/test/fuzz/corpus.sh)	# the fuzz targets over their seeds
for t in "$top"/test/e2e/*.sh "$top"/test/rdma/smoke.sh "$top"/test/rdma/suite.sh; do
	tests+=("$t")
done
# a test's name: its folder and file, "unit/proto_test", "e2e/tree.sh"
name_of()
{
	local d
	d=$(basename "$(dirname "$1")")
	echo "$d/$(basename "$1")"
}
if [ $# -gt 0 ]; then
	sel=()
	for t in "${tests[@]}"; do
		for p in "$@"; do
			case "$(name_of "$t")" in *$p*) sel+=("$t"); break;; esac
		done
	done
	tests=("${sel[@]}")
fi

pass=0 fail=0 skip=0 failed=()
for t in "${tests[@]}"; do
	name=$(name_of "$t")
	log=$logdir/${name//\//_}.log
	start=$(date +%s)
	# the RDMA suite boots a VM and runs every case in it: its own
	# limit (RDMA_E2E_TIMEOUT, 900 s) is what bounds it
	limit=$timeout_s
	[ "$name" = rdma/suite.sh ] && [ "$limit" -lt 1200 ] && limit=1200
	timeout -k 10 "$limit" "$t" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	why="exit $rc"
	# a sanitizer report fails a test, whatever its exit status says
	if { [ $rc -eq 0 ] || [ $rc -eq 77 ]; } && sanitizer_reports "$log" >/dev/null; then
		why="exit $rc, but a sanitizer report"
		rc=1
	fi
	case $rc in
	0) pass=$((pass + 1)); printf 'PASS %-28s %4ss\n' "$name" "$secs";;
	77) skip=$((skip + 1)); printf 'SKIP %-28s %4ss  %s\n' "$name" "$secs" "$(tail -n 1 "$log")";;
	*) fail=$((fail + 1)); failed+=("$name")
	   printf 'FAIL %-28s %4ss  (%s)\n' "$name" "$secs" "$why"
	   # the first report (80 lines), else the end of the log
	   { grep -m 1 -A 79 -E -- "$SANITIZER_REPORT" "$log" || tail -n 40 "$log"; } |
		sed 's/^/    | /';;
	esac
done
echo
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
