#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_bounds: what a sender that proves the secret can make the receiver
# hold (docs/protocol.md, "What a session may hold on the receiver"). A
# crafted sender (test/helper/hostile_sender, the scenarios of -b) tries
# each way it knows to make the receiver's memory grow:
#   - dir-repeat: one directory record, a 4 KB path, 300000 times (it took
#     1.2 GB when every record was kept): kept once, the session completes
#   - dirs-many: new directories with 4 KB paths: refused with a reason
#     once the session keeps 16 MiB of their paths
#   - many-files: every file id in flight with 4 KB paths, rounds of
#     them, then one id more: the receiver ends the session
#   - replies-unread: refused FILE messages, no answer read (2 million took
#     the reply queue to 99 MB): the receiver stops taking them, then
#     answers every one once the sender reads, and the session completes;
#     the log names 20 refusals, not all of them
#   - tinysegs: a 256 MiB file as 20000 chunks of 64 one-byte segments,
#     no byte next to the one before (1.28 million records of a partial
#     file: the receiver grew by 100 MiB holding them, and wrote a 40 MB
#     journal): pending records stay within their room, and the journal
#     the interrupted file leaves holds at most 4096 small records
# Each scenario has a receiver of its own, so that memory one freed does
# not hide what the next one takes. Its peak resident memory over the
# scenario (VmHWM, reset through /proc/PID/clear_refs once it listens) may
# grow by no more than the limits documented for what the scenario fills,
# and never by more than a session's documented total; the receiver keeps
# serving, and a normal transfer to the last one succeeds at the end.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

HS=$HELPERS/hostile_sender
[ -x "$HS" ] || skip "$HS is not built"
[ -w /proc/self/clear_refs ] || skip "/proc/PID/clear_refs cannot reset the peak memory here"

# The sanitizers keep freed memory aside and add their own: the figures
# hold for the build as it is, with ASan's quarantine kept small and
# an allowance for its shadow and redzones; under TSan (whose shadow is
# several times the program's memory) only the behaviour is checked.
if grep -qa __tsan_init "$PXFER"; then
	rss_checks=0
	note "a ThreadSanitizer build: the memory figures are not checked"
else
	rss_checks=1
fi
export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=4:thread_local_quarantine_size_kb=256"
SLACK=12	# MiB: allocator and sanitizer overhead, stacks, page tables
TOTAL=109	# MiB: docs/protocol.md, a session beyond its rings

dir=$T/dir
mkdir -p "$dir" || fail "mkdir"

kib()
{
	awk -v k="$1" '$1 == k ":" { print $2 }' "/proc/$RECV_PID/status"
}

# scenario NAME LIMIT_MIB WANT_OUTCOME - play NAME; its peak memory may
# grow by LIMIT_MIB plus SLACK
scenario()
{
	local sc=$1 limit=$2 want=$3 out=$T/bounds.$1.out base peak grew secs

	find "$dir" -mindepth 1 -delete
	note "$sc: $("$HS" -b | awk -v s="$sc" '$1 == s { $1 = ""; print substr($0, 2) }')"
	[ -z "$RECV_PID" ] || stop_recv
	start_server "$dir" --ring-mem 1M --idle-timeout 30
	echo 5 >"/proc/$RECV_PID/clear_refs" || fail "cannot reset the receiver's peak memory"
	base=$(kib VmRSS)
	timer_start
	timeout -k 5 120 "$HS" 127.0.0.1 "$RECV_PORT" "$sc" >"$out" 2>&1
	rc=$?
	secs=$(timer_secs)
	grep -vE '^(->|<-) (FILE|CREDIT|DATA_|HELLO|WELCOME)' "$out" | sed 's/^/    | /'
	[ $rc -eq 0 ] || fail "$sc: hostile_sender exited $rc"
	outcome=$(sed -n 's/^outcome: //p' "$out")
	[ "$outcome" = "$want" ] || fail "$sc: the outcome is '$outcome', not '$want'"
	wait_for 20 session_over || fail "$sc: the receiver still holds the session 20 s later"
	recv_alive || fail "$sc: the receiver is not alive and listening any more"
	peak=$(kib VmHWM)
	grew=$(((peak - base + 1023) / 1024))
	ok "$sc: $outcome in $secs s; peak memory $((peak / 1024)) MiB, $grew MiB over the $((base / 1024)) MiB before"
	if [ "$rss_checks" = 1 ]; then
		[ "$grew" -le $((limit + SLACK)) ] ||
			fail_later "$sc: the receiver's peak memory grew by $grew MiB, more than its limits ($limit MiB, and $SLACK for the allocator)"
		[ "$grew" -le "$TOTAL" ] ||
			fail_later "$sc: the receiver's peak memory grew by $grew MiB, more than a session's $TOTAL MiB"
	fi
}

# the receiver has no connection left from the last session
# shellcheck disable=SC2317
session_over()
{
	[ -z "$(ss -Htn state established state close-wait state syn-recv \
		"( sport = :$RECV_PORT )" 2>/dev/null)" ]
}

# one directory record, kept once; its answers fit in the reply queue
scenario dir-repeat 4 completed
grep -q '^<- 0 FILE_OK, 300000 FILE_DONE, 0 FILE_ERR' "$T/bounds.dir-repeat.out" ||
	fail_later "dir-repeat: not every record was answered FILE_DONE"

# 26 MiB of directory records at most
scenario dirs-many 26 refused
check_grep "FILE_ERR \(last: 'more directories than one session keeps" \
	"$T/bounds.dirs-many.out" "dirs-many: the reason for the refusal"
n=$(sed -n 's/^<- 0 FILE_OK, \([0-9]*\) FILE_DONE.*/\1/p' "$T/bounds.dirs-many.out")
if [ "${n:-0}" -lt 4000 ] || [ "$n" -gt 4400 ]; then
	fail_later "dirs-many: ${n:-no} directories of 4 KB paths kept, where 16 MiB holds about 4300"
fi

# 1024 files in flight with their paths
scenario many-files 5 aborted
check_grep "protocol error from the sender.*FILE" "$RECV_LOG" \
	"many-files: the receiver's reason for ending the session"

# 4 MiB of replies at most, and the refusals named in the log are few
scenario replies-unread 4 completed
check_grep "the receiver stopped taking them" "$T/bounds.replies-unread.out" \
	"replies-unread: the receiver's backpressure"
named=$(grep -c "refused 'a//b'" "$RECV_LOG")
[ "$named" -le 20 ] ||
	fail_later "replies-unread: the log names $named refused files, not 20 at most"
check_grep "more files refused from .* are not named here" "$RECV_LOG" \
	"replies-unread: the log says it stops naming refusals"

# 4 MiB of pending records at most; a journal of 4096 records of 32 bytes
# after its header
scenario tinysegs 4 completed
jnl=$(find "$dir/.pxfer/partial" -name '*.jnl' 2>/dev/null)
[ -n "$jnl" ] || fail "tinysegs: the interrupted file left no journal"
jsize=$(stat -c %s "$jnl")
if [ "$jsize" -gt $((4096 * 32 + 4096)) ]; then
	fail_later "tinysegs: a journal of $jsize bytes, more than 4096 records"
else
	ok "tinysegs: a journal of $jsize bytes"
fi

note "a normal transfer to the same receiver"
find "$dir" -mindepth 1 -delete
send_check_tree "$dir"

stop_recv
expect_rc 130 "$WAIT_RC" "receiver after SIGTERM"
finish
