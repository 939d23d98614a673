# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The sanitizers' run-time options and how their reports are found, for
# test/runtests.sh and the helpers of the end-to-end and RDMA tests (which
# source this file). A variable already set in the environment is kept.

# ASan and LSan: a leak makes the process exit 23, which the exit status
# checks then catch
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
# leaks of the libraries pxfer links, not its own (lsan.supp says which)
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# TSan (make tsan): the first report ends the process with status 66, so
# that a race cannot go on to pass for an ordinary failure
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1}

# the first line of a report: ASan, LSan and TSan errors, TSan warnings
# (data races, lock inversions, signal-unsafe calls), UBSan's errors
SANITIZER_REPORT='ERROR: [A-Za-z]*Sanitizer|(WARNING|FATAL): ThreadSanitizer|runtime error:'

# sanitizer_reports FILE... - print the names of the files that hold a
# sanitizer report; 0 if there is one
sanitizer_reports()
{
	grep -lE -- "$SANITIZER_REPORT" "$@" 2>/dev/null
}
