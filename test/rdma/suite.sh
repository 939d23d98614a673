#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rdma suite: pxfer end to end over RDMA (Soft-RoCE), with faults.
#
# Boots the rxe test VM once (test/vm/run) and runs
# test/rdma/cases.sh inside it against $PXFER_BUILD (default
# build/san): transfers over --transport rdma with -j 1/2/4, transport
# auto, a receiver killed, runs killed in turn and resumed, a sender
# that comes back after the link was cut, the link taken down, netem
# loss and corruption, memlock limits for an unprivileged receiver and
# sender, a throttled receiver (no RNR, credit-bounded work requests)
# and a wrong secret. See docs/testing.md, "RDMA tests".
#
# Usage: test/rdma/suite.sh [-v] [CASE...]
#   -v      also print the logs of passed checks
#   CASE    run only these cases of the suite, by name (tree, auto,
#           receiver-killed, ...; test/rdma/cases.sh --help lists them)
#
# Exit status: 0 all checks passed; 1 a check failed, the VM failed to
# boot or set up (125 from test/vm/run) or timed out (124); 77 only
# when the VM cannot be provided on this machine at all (no qemu, the
# kernel package cannot be obtained), and never with PXFER_REQUIRE_RXE=1
# or CI set. PXFER_SKIP_VM=1 ("make check") skips the test (77).
#
# Known kernel defects can hang the guest (rxe on 6.1, when links go
# down): the IB CM waits without end for a MAD completion that rxe lost,
# or a task such as ip blocks in the kernel. test/vm/run then stops the
# VM and says what was stuck (126); the cases that did not finish run
# again on a fresh boot, once, and the checks of the first boot stand.
#
# The logs of the last run are left in build/test-logs/rdma-suite/, the
# output of the cases in cases.out there.
# RDMA_E2E_TIMEOUT (default 900, or PXFER_TEST_TIMEOUT - 30 if that is
# smaller) bounds the VM run, in seconds. A run takes 5 to 9 minutes.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export PXFER_BUILD=${PXFER_BUILD:-$ROOT/build/san}
# the VM's own timeout must fire before the test runner's (which prints
# nothing about the guest); test/runtests.sh allows PXFER_TEST_TIMEOUT
timeout_s=${RDMA_E2E_TIMEOUT:-900}
if [ -z "${RDMA_E2E_TIMEOUT:-}" ] && [ -n "${PXFER_TEST_TIMEOUT:-}" ] &&
   [ "$PXFER_TEST_TIMEOUT" -gt 60 ] && [ "$PXFER_TEST_TIMEOUT" -le "$timeout_s" ]; then
	timeout_s=$((PXFER_TEST_TIMEOUT - 30))
fi
logs=$ROOT/build/test-logs/rdma-suite

skip()
{
	if [ "${PXFER_REQUIRE_RXE:-0}" = 1 ] || [ -n "${CI:-}" ]; then
		echo "rdma suite: FAIL: $* (the RDMA tests must run here: PXFER_REQUIRE_RXE=1 or CI is set)" >&2
		exit 1
	fi
	echo "rdma suite: SKIP: $*"
	exit 77
}

if [ "${PXFER_SKIP_VM:-0}" = 1 ]; then
	echo "rdma suite: SKIP: PXFER_SKIP_VM=1 (the RDMA tests need the rxe VM)"
	exit 77
fi

args=()
for a in "$@"; do
	case $a in
	-v|[a-z]*) args+=("$a") ;;
	-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "rdma suite: unknown argument '$a' (see $0 --help)" >&2; exit 2 ;;
	esac
done

if [ ! -x "$PXFER_BUILD/pxfer" ]; then
	echo "rdma suite: FAIL: $PXFER_BUILD/pxfer is not built (make SAN=1)" >&2
	exit 1
fi

# The test bed: host packages and the VM image. Failing here means the VM
# cannot exist on this machine: a skip, unless it is required.
if ! "$ROOT/test/vm/install-deps.sh"; then
	skip "cannot install the VM packages (test/vm/install-deps.sh failed)"
fi
command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "qemu-system-x86_64 unavailable"
if ! "$ROOT/test/vm/build.sh"; then
	skip "cannot build the VM image (test/vm/build.sh failed: no kernel package?)"
fi

# The guest sees the host root read-only but has its own /tmp: share a
# build directory that is outside the project.
share=()
case $(cd "$PXFER_BUILD" && pwd) in
"$ROOT"/*) ;;
*) share=(--share "$(cd "$PXFER_BUILD" && pwd)") ;;
esac

rm -rf "$logs"
mkdir -p "$logs"
start=$SECONDS
out=$logs/cases.out
# vm_cases TIMEOUT CASE... - one boot of the VM running these cases; its
# output goes to stdout and to $out
vm_cases()
{
	local t=$1

	shift
	"$ROOT/test/vm/run" --timeout "$t" --mem 2048 "${share[@]}" \
		--env PXFER_RDMA_LOGS="$logs" -- \
		bash "$HERE/cases.sh" "$@" 2>&1 | tee -a "$out"
	return "${PIPESTATUS[0]}"
}
# the case that was running when the VM was stopped
running_case()
{
	sed -n 's/^# ---- case \([a-z-]*\).*/\1/p' "$out" | tail -n 1
}

: >"$out"
vm_cases "$timeout_s" "${args[@]}"
rc=$?
if [ $rc -eq 126 ]; then
	# The guest kernel hung destroying a connection (test/vm/run said
	# why): run the cases that did not finish again, on a fresh boot,
	# once. The checks already reported stand.
	names=() verbose=()
	for a in "${args[@]}"; do
		case $a in -v) verbose=(-v) ;; *) names+=("$a") ;; esac
	done
	if [ ${#names[@]} -eq 0 ]; then
		read -ra names <<<"$(sed -n 's/^ALL_CASES="\(.*\)"$/\1/p' "$HERE/cases.sh")"
	fi
	left=()
	for c in "${names[@]}"; do
		grep -q "^# case $c took " "$out" || left+=("$c")
	done
	first_failed=$(grep -c '^not ok' "$out")
	t=$((timeout_s + 270 - (SECONDS - start)))
	if [ ${#left[@]} -gt 0 ] && [ "$t" -ge 180 ]; then
		echo "rdma suite: the guest kernel hung in case $(running_case) (a kernel defect, above): running ${left[*]} again on a fresh boot"
		vm_cases "$t" "${verbose[@]}" "${left[@]}"
		rc=$?
		[ $rc -eq 0 ] && [ "$first_failed" -gt 0 ] && rc=-1
	fi
fi
echo "rdma suite: VM run took $((SECONDS - start)) s; logs in $logs"
case $rc in
0) exit 0 ;;
124) echo "rdma suite: FAIL: the VM run timed out after $timeout_s s, in case $(running_case)" >&2 ;;
125) echo "rdma suite: FAIL: the VM did not boot or set up, or crashed (see above)" >&2 ;;
126) echo "rdma suite: FAIL: the guest kernel hung, in case $(running_case) (see above)" >&2 ;;
-1) echo "rdma suite: FAIL: $first_failed check(s) failed before the kernel hung (above)" >&2 ;;
*) echo "rdma suite: FAIL: the suite exited $rc" >&2 ;;
esac
exit 1
